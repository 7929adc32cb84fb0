//! topology.toml: serde with `deny_unknown_fields` so a typo is an error with a line, and
//! `Spanned` fields so the semantic checks can point at a line too.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{
    build_racks, check_count, line_of, Config, ConfigError, MultiRack, NodeLimit, Policy, RawRack,
    MAX_GPUS_PER_TRAY, MAX_TRAYS_PER_RACK,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToml {
    #[serde(default)]
    trays_per_rack: Option<Spanned<u32>>,
    #[serde(default)]
    gpus_per_tray: Option<Spanned<u32>>,
    #[serde(default)]
    policy: Policy,
    #[serde(default)]
    rack: Vec<RackToml>,
}

/// A second, lenient read of the file for the lines of `[policy]` keys checked after the
/// first read (`Policy` itself holds plain values; the first read already refused unknown
/// keys).
#[derive(Deserialize)]
struct PolicyLines {
    #[serde(default)]
    policy: Option<PolicySpans>,
}

#[derive(Deserialize)]
struct PolicySpans {
    #[serde(default)]
    flat_partitions: Vec<Spanned<String>>,
    #[serde(default)]
    piece_multiple: Option<Spanned<u32>>,
    #[serde(default)]
    prefer_piece_multiple: Option<Spanned<u32>>,
}

/// The `[policy]` key lines, when the table exists.
fn policy_spans(text: &str) -> Option<PolicySpans> {
    toml::from_str::<PolicyLines>(text).ok()?.policy
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RackToml {
    name: Spanned<String>,
    nodes: Spanned<String>,
    #[serde(default)]
    clique: Option<String>,
    #[serde(default)]
    group: Option<String>,
}

/// A TOML or serde error as a `ConfigError` with its line.
fn read_error(text: &str, file: &Path, e: toml::de::Error) -> ConfigError {
    let line = e.span().map(|s| line_of(text, s.start));
    // Syntax errors come as "what\nexpected ..."; keep both, on one line for the logs.
    let message: Vec<&str> = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    ConfigError::new(file, line, None, message.join("; "))
}

/// The `[policy]` table of a topology.toml, or of a file that holds only that table (the
/// simulator's `--policy-file`), checked as the plugin checks it and with lines in errors;
/// anything outside the table (the racks) is not read.
pub fn parse_policy(text: &str, file: &Path) -> Result<Policy, ConfigError> {
    #[derive(Deserialize)]
    struct PolicyOnly {
        #[serde(default)]
        policy: Policy,
    }
    let parsed: PolicyOnly = toml::from_str(text).map_err(|e| read_error(text, file, e))?;
    check_flat_partitions(text, file)?;
    check_piece_multiple(text, file, &parsed.policy, Config::default().trays_per_rack)?;
    Ok(parsed.policy)
}

/// Parses and validates a topology.toml; `file` is only used in errors and `Config::source`.
pub fn parse_toml(text: &str, file: &Path) -> Result<Config, ConfigError> {
    let parsed: FileToml = toml::from_str(text).map_err(|e| read_error(text, file, e))?;

    let defaults = Config::default();
    let count = |value: &Option<Spanned<u32>>, default, max, field| match value {
        Some(v) => check_count(
            file,
            *v.get_ref(),
            max,
            Some(line_of(text, v.span().start)),
            field,
        ),
        None => Ok(default),
    };
    let trays_per_rack = count(
        &parsed.trays_per_rack,
        defaults.trays_per_rack,
        MAX_TRAYS_PER_RACK,
        "trays_per_rack",
    )?;
    let gpus_per_tray = count(
        &parsed.gpus_per_tray,
        defaults.gpus_per_tray,
        MAX_GPUS_PER_TRAY,
        "gpus_per_tray",
    )?;
    check_flat_partitions(text, file)?;
    check_piece_multiple(text, file, &parsed.policy, trays_per_rack)?;
    if parsed.rack.is_empty() {
        return Err(ConfigError::new(file, None, None, "no [[rack]] defined"));
    }

    let raw = parsed
        .rack
        .into_iter()
        .enumerate()
        .map(|(i, r)| RawRack {
            name_line: line_of(text, r.name.span().start),
            name_field: format!("rack[{}].name", i + 1),
            name: r.name.into_inner(),
            nodes_line: line_of(text, r.nodes.span().start),
            nodes_field: format!("rack[{}].nodes", i + 1),
            nodes: r.nodes.into_inner(),
            clique: r.clique,
            group: r.group,
        })
        .collect();
    let racks = build_racks(
        file,
        raw,
        NodeLimit {
            max: trays_per_rack,
            what: "trays_per_rack",
        },
    )?;
    Ok(Config {
        trays_per_rack,
        gpus_per_tray,
        racks,
        policy: parsed.policy,
        source: file.to_path_buf(),
    })
}

/// `[policy] flat_partitions`: names as slurm.conf's `PartitionName=` and `sbatch -p` can spell
/// them (not empty; no blank, `,` or `=`, which would split them), each listed once.
fn check_flat_partitions(text: &str, file: &Path) -> Result<(), ConfigError> {
    const FIELD: &str = "policy.flat_partitions";
    let Some(p) = policy_spans(text) else {
        return Ok(());
    };
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for name in &p.flat_partitions {
        let line = line_of(text, name.span().start);
        let err = |msg: String| ConfigError::new(file, Some(line), Some(FIELD), msg);
        let name = name.get_ref().as_str();
        if name.is_empty() {
            return Err(err("partition name is empty".into()));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| c.is_whitespace() || matches!(c, ',' | '='))
        {
            return Err(err(format!(
                "partition name `{name}` contains `{bad}`, which Slurm partition names cannot"
            )));
        }
        if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
            return Err(err(format!(
                "partition {name} is already listed at line {first}"
            )));
        }
        seen.push((name, line));
    }
    Ok(())
}

/// `[policy] piece_multiple` and `prefer_piece_multiple`: a group no larger than a rack (a
/// larger one cannot be kept whole by any cut), only with `multi_rack = "fewest-racks"`,
/// whose pieces they shape, and a preference that keeps the rule's cuts.
fn check_piece_multiple(
    text: &str,
    file: &Path,
    policy: &Policy,
    trays_per_rack: u32,
) -> Result<(), ConfigError> {
    let Some(spans) = policy_spans(text) else {
        return Ok(());
    };
    for (key, value) in [
        ("piece_multiple", spans.piece_multiple),
        ("prefer_piece_multiple", spans.prefer_piece_multiple),
    ] {
        let Some(value) = value else { continue };
        let field = format!("policy.{key}");
        let line = Some(line_of(text, value.span().start));
        let multiple = check_count(file, *value.get_ref(), trays_per_rack, line, &field)?;
        let refuse = |why: String| Err(ConfigError::new(file, line, Some(&field), why));
        if multiple > 1 && policy.multi_rack != MultiRack::FewestRacks {
            return refuse(format!(
                "{key} = {multiple} shapes the pieces of multi_rack = \"fewest-racks\", \
                 not of multi_rack = \"{}\"",
                policy.multi_rack.as_str()
            ));
        }
        let rule = policy.piece_multiple;
        if key == "prefer_piece_multiple" && multiple > 1 && rule > 1 && multiple % rule != 0 {
            return refuse(format!(
                "prefer_piece_multiple = {multiple} would cut between the groups of \
                 piece_multiple = {rule}: use a multiple of {rule}, or 1"
            ));
        }
    }
    Ok(())
}
