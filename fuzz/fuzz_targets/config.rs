//! topology.toml: `parse_toml` on any text. Invariants of an accepted file: at least one
//! rack, valid unique names, no rack larger than `trays_per_rack`, no node twice, counts in
//! range; `Config::to_toml` reads back to an equal `Config`; errors display without panicking.
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use topology_nvl72::config::{parse_toml, Config, MAX_GPUS_PER_TRAY, MAX_TRAYS_PER_RACK};

/// Node count up to which an accepted file is also rendered and read back.
const ROUND_TRIP_AT_MOST: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("topology.toml");
    match parse_toml(text, file) {
        Ok(config) => check(&config, file),
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.starts_with("topology.toml:"), "{shown}");
        }
    }
});

fn check(config: &Config, file: &Path) {
    assert!(!config.racks.is_empty());
    assert!((1..=MAX_TRAYS_PER_RACK).contains(&config.trays_per_rack));
    assert!((1..=MAX_GPUS_PER_TRAY).contains(&config.gpus_per_tray));
    let mut names = HashSet::new();
    let mut nodes = HashSet::new();
    for rack in &config.racks {
        assert!(!rack.name.is_empty());
        assert!(rack
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')));
        assert!(names.insert(rack.name.as_str()), "rack {} twice", rack.name);
        assert!(!rack.nodes.is_empty());
        assert!(rack.nodes.len() <= config.trays_per_rack as usize);
        for node in &rack.nodes {
            assert!(nodes.insert(node.as_str()), "node {node} twice");
        }
    }
    // The round trip of a large file runs the same code as a small one, only longer: keep
    // the fuzzer fast (racks of up to 1024 nodes each are accepted).
    if config.racks.iter().map(|r| r.nodes.len()).sum::<usize>() > ROUND_TRIP_AT_MOST {
        return;
    }
    let rendered = config.to_toml();
    let back = parse_toml(&rendered, file)
        .unwrap_or_else(|e| panic!("to_toml output does not load: {e}\n{rendered}"));
    assert_eq!(&back, config, "to_toml round trip\n{rendered}");
}
