//! Invariants of every accepted configuration, whichever file format it came from
//! (shared by the `config` and `block_conf` targets).

use std::collections::HashSet;
use std::path::Path;

use nvl72_engine::config::{Config, ConfigError, MAX_TRAYS_PER_RACK};

/// Node count up to which an accepted file is also rendered and read back. The round trip of
/// a large file runs the same code as a small one, only longer: this keeps the fuzzer fast
/// (racks of up to 1024 nodes each are accepted).
const ROUND_TRIP_AT_MOST: usize = 64;

/// `data` read as `file` with `parse`: the configuration, when it is text the parser accepts.
/// A refusal must display, and name the file first.
pub fn accepted(
    data: &[u8],
    file: &Path,
    parse: impl Fn(&str, &Path) -> Result<Config, ConfigError>,
) -> Option<Config> {
    let text = std::str::from_utf8(data).ok()?;
    match parse(text, file) {
        Ok(config) => Some(config),
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.starts_with(&format!("{}:", file.display())), "{shown}");
            None
        }
    }
}

/// At least one rack, unique non-empty names, no rack larger than `trays_per_rack`, no node
/// twice.
pub fn check_racks(config: &Config) {
    assert!(!config.racks.is_empty());
    assert!((1..=MAX_TRAYS_PER_RACK).contains(&config.trays_per_rack));
    let mut names = HashSet::new();
    let mut nodes = HashSet::new();
    for rack in &config.racks {
        assert!(!rack.name.is_empty());
        assert!(names.insert(rack.name.as_str()), "rack {} twice", rack.name);
        assert!(!rack.nodes.is_empty());
        assert!(rack.nodes.len() <= config.trays_per_rack as usize);
        for node in &rack.nodes {
            assert!(nodes.insert(node.as_str()), "node {node} twice");
        }
    }
}

/// Small enough for the round trip through `Config::to_toml`.
pub fn round_trip_size(config: &Config) -> bool {
    config.racks.iter().map(|r| r.nodes.len()).sum::<usize>() <= ROUND_TRIP_AT_MOST
}
