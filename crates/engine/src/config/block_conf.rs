//! topology/block's topology.conf, accepted so a site can switch plugins with its existing
//! file and so configless slurmd (which only receives topology.conf) can find its rack.

use std::path::Path;

use super::{
    build_racks, check_count, Config, ConfigError, NodeLimit, RawRack, MAX_TRAYS_PER_RACK,
};

const TREE: &str =
    "topology.conf describes a tree (SwitchName); topology/nvl72 reads BlockName= lines or topology.toml";
const KNOWN: &str = "topology/nvl72 reads BlockName=, Nodes= and BlockSizes=";

/// Parses `BlockName=<rack> Nodes=<hostlist>` lines (plus an optional `BlockSizes=`) with the
/// same validation as topology.toml. Policy is left at its defaults.
pub fn parse_block_conf(text: &str, file: &Path) -> Result<Config, ConfigError> {
    let err = |line: usize, field: &str, msg: String| {
        ConfigError::new(file, Some(line), Some(field), msg)
    };
    let mut raw: Vec<RawRack> = Vec::new();
    // (first size, line it was set on)
    let mut block_sizes: Option<(u32, usize)> = None;

    for (line, content) in logical_lines(text) {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for token in content.split_whitespace() {
            let Some((key, value)) = token.split_once('=') else {
                return Err(ConfigError::new(
                    file,
                    Some(line),
                    None,
                    format!("expected Key=Value, found `{token}`"),
                ));
            };
            pairs.push((key, unquote(value)));
        }
        let Some(&(first_key, first_value)) = pairs.first() else {
            continue;
        };
        if let Some((key, _)) = pairs
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("SwitchName"))
        {
            return Err(err(line, key, TREE.to_string()));
        }
        let unknown = |key: &str| err(line, key, format!("unknown key `{key}`; {KNOWN}"));

        if first_key.eq_ignore_ascii_case("BlockName") {
            let mut nodes: Option<&str> = None;
            for &(key, value) in &pairs[1..] {
                if !key.eq_ignore_ascii_case("Nodes") {
                    return Err(unknown(key));
                }
                if nodes.is_some() {
                    return Err(err(line, key, "Nodes= given twice on one line".into()));
                }
                nodes = Some(value);
            }
            let Some(nodes) = nodes else {
                return Err(err(
                    line,
                    first_key,
                    format!("block {first_value} has no Nodes="),
                ));
            };
            raw.push(RawRack {
                name: first_value.to_string(),
                name_line: line,
                name_field: first_key.to_string(),
                nodes: nodes.to_string(),
                nodes_line: line,
                nodes_field: "Nodes".to_string(),
                clique: None,
                group: None,
            });
        } else if first_key.eq_ignore_ascii_case("BlockSizes") {
            if let Some(&(key, _)) = pairs.get(1) {
                return Err(unknown(key));
            }
            if let Some((_, first_line)) = block_sizes {
                return Err(err(
                    line,
                    first_key,
                    format!("BlockSizes is already set at line {first_line}"),
                ));
            }
            let first = parse_sizes(first_value).ok_or_else(|| {
                err(
                    line,
                    first_key,
                    format!(
                        "expected a comma-separated list of node counts, found `{first_value}`"
                    ),
                )
            })?;
            let first = check_count(file, first, MAX_TRAYS_PER_RACK, Some(line), first_key)?;
            block_sizes = Some((first, line));
        } else {
            return Err(unknown(first_key));
        }
    }

    if raw.is_empty() {
        return Err(ConfigError::new(
            file,
            None,
            None,
            "no BlockName= lines; topology/nvl72 needs one per rack",
        ));
    }
    let limit = match block_sizes {
        Some((first, _)) => NodeLimit {
            max: first,
            what: "the first BlockSizes value",
        },
        None => NodeLimit {
            max: MAX_TRAYS_PER_RACK,
            what: "the per-rack maximum",
        },
    };
    let racks = build_racks(file, raw, limit)?;
    let trays_per_rack = match block_sizes {
        Some((first, _)) => first,
        // build_racks capped every rack at MAX_TRAYS_PER_RACK, so this fits in u32.
        None => racks
            .iter()
            .map(|r| u32::try_from(r.nodes.len()).unwrap_or(MAX_TRAYS_PER_RACK))
            .max()
            .unwrap_or(1)
            .max(1),
    };
    Ok(Config {
        trays_per_rack,
        racks,
        source: file.to_path_buf(),
        ..Config::default()
    })
}

/// First value of `18,36,72`, or `None` unless every entry is a number.
fn parse_sizes(value: &str) -> Option<u32> {
    let mut first = None;
    for size in value.split(',') {
        let n: u32 = size.trim().parse().ok()?;
        first.get_or_insert(n);
    }
    first
}

fn unquote(value: &str) -> &str {
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value)
}

/// Lines with `#` comments removed and `\`-continued lines joined (as Slurm's parser does),
/// each with the 1-based number of the line it starts on.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or("").trim_end();
        let (body, continued) = match content.strip_suffix('\\') {
            Some(body) => (body, true),
            None => (content, false),
        };
        let entry = pending.get_or_insert_with(|| (i + 1, String::new()));
        entry.1.push(' ');
        entry.1.push_str(body);
        if !continued {
            out.extend(pending.take());
        }
    }
    out.extend(pending);
    out
}
