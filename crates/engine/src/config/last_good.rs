//! The last good configuration slurmctld keeps in StateSaveLocation
//! (`topology_nvl72.last-good.toml`): a topology.toml with a format line, read leniently.
//!
//! slurmctld falls back to it when the admin's file is broken at a start, so it must stay
//! readable across plugin upgrades and downgrades: an older build ignores keys a newer one
//! added (and says which), where the admin's own file refuses unknown keys to catch typos.

use std::path::Path;

use super::{parse_toml, Config, ConfigError};

/// The first line. A later format keeps this prefix and stays a topology.toml.
pub const HEADER_PREFIX: &str = "# topology/nvl72 last good configuration, format ";
pub const FORMAT: u32 = 1;

/// The keys this build knows, per table; anything else in a last good copy is a newer
/// build's and is dropped before the strict parse.
const TOP_KEYS: &[&str] = &["trays_per_rack", "gpus_per_tray", "policy", "rack"];
const POLICY_KEYS: &[&str] = &[
    "segment_placement",
    "multi_rack",
    "prefer_degraded",
    "prefer_same_group",
    "log_decisions",
    "end_time",
    "end_time_hours_per_tray",
    "flat_partitions",
    "switches",
    "piece_multiple",
    "prefer_piece_multiple",
    "preemption_cost",
];
const RACK_KEYS: &[&str] = &["name", "nodes", "clique", "group"];

/// The shared last good copy in StateSaveLocation: the racks slurmctld has in force.
pub const FILE: &str = "topology_nvl72.last-good.toml";

/// The copy a controller named `host` keeps of the racks it loaded last, beside the shared
/// last good copy (`nvl72 check` compares them with a file: `check::controllers`).
pub fn loaded_by_file(host: &str) -> String {
    format!("topology_nvl72.loaded-by-{host}.toml")
}

/// The short hostname of this machine (its UTS name), as slurmctld matches it against
/// `SlurmctldHost`.
pub fn this_host() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let short = name.trim().split('.').next()?.to_string();
    (!short.is_empty()).then_some(short)
}

/// The file's text: the format line, then [`Config::to_toml`].
pub fn render(config: &Config) -> String {
    format!("{HEADER_PREFIX}{FORMAT}\n{}", config.to_toml())
}

/// A last good copy and the keys this build did not know and left out (`policy.x`,
/// `rack[2].y`). A copy without a format line (written before format 1) is read the same way.
pub fn parse(text: &str, file: &Path) -> Result<(Config, Vec<String>), ConfigError> {
    let mut value: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError {
        file: file.to_path_buf(),
        line: None,
        field: None,
        message: e.message().replace('\n', "; "),
    })?;
    let mut ignored = Vec::new();
    drop_unknown(&mut value, TOP_KEYS, "", &mut ignored);
    if let Some(toml::Value::Table(policy)) = value.get_mut("policy") {
        drop_unknown(policy, POLICY_KEYS, "policy.", &mut ignored);
    }
    if let Some(toml::Value::Array(racks)) = value.get_mut("rack") {
        for (i, rack) in racks.iter_mut().enumerate() {
            if let toml::Value::Table(rack) = rack {
                drop_unknown(rack, RACK_KEYS, &format!("rack[{}].", i + 1), &mut ignored);
            }
        }
    }
    let known = toml::to_string(&value).map_err(|e| ConfigError {
        file: file.to_path_buf(),
        line: None,
        field: None,
        message: e.to_string(),
    })?;
    Ok((parse_toml(&known, file)?, ignored))
}

fn drop_unknown(table: &mut toml::Table, known: &[&str], prefix: &str, out: &mut Vec<String>) {
    let unknown: Vec<String> = table
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in unknown {
        table.remove(&key);
        out.push(format!("{prefix}{key}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MultiRack, Policy};

    fn sample() -> Config {
        let mut config = Config {
            policy: Policy {
                multi_rack: MultiRack::Balanced,
                flat_partitions: vec!["admin".into()],
                ..Policy::default()
            },
            ..Config::default()
        };
        config.racks.push(crate::config::RackConfig {
            group: Some("row1".into()),
            ..crate::testkit::rack("rack1", 0..18)
        });
        config
    }

    #[test]
    fn a_copy_reads_back_as_the_configuration_it_saved() {
        let path = Path::new("/state/topology_nvl72.last-good.toml");
        let text = render(&sample());
        assert!(text.starts_with("# topology/nvl72 last good configuration, format 1\n"));
        let (config, ignored) = parse(&text, path).unwrap();
        assert_eq!(config.racks, sample().racks);
        assert_eq!(config.policy, sample().policy);
        assert!(ignored.is_empty());
    }

    /// Every key this build writes is one it reads back: the lists above cannot fall behind
    /// [`Config::to_toml`] unnoticed.
    #[test]
    fn every_key_this_build_writes_is_known() {
        let (_, ignored) = parse(&render(&sample()), Path::new("x")).unwrap();
        assert_eq!(ignored, Vec::<String>::new());
    }

    /// A newer build's copy (a downgrade, then a broken file at a start) still gives racks.
    #[test]
    fn keys_of_a_newer_build_are_left_out_and_named() {
        let newer = render(&sample())
            .replacen("format 1", "format 2", 1)
            .replacen("[policy]\n", "[policy]\nswitches_default = 2\n", 1)
            .replacen(
                "name = \"rack1\"",
                "name = \"rack1\"\npower_domain = \"p1\"",
                1,
            )
            + "\n[imex]\nchannels = 4\n";
        let (config, ignored) = parse(&newer, Path::new("x")).unwrap();
        assert_eq!(config.racks, sample().racks);
        assert_eq!(
            ignored,
            ["imex", "policy.switches_default", "rack[1].power_domain"]
        );
    }

    #[test]
    fn a_copy_written_before_format_one_is_read() {
        let (config, _) = parse(&sample().to_toml(), Path::new("x")).unwrap();
        assert_eq!(config.racks, sample().racks);
    }
}
