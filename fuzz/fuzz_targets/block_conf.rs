//! topology.conf (`BlockName=` lines): `parse_block_conf` on any text. Invariants of an
//! accepted file: as for topology.toml (racks, names, sizes, no node twice), and converting it
//! with `Config::to_toml` gives a topology.toml that loads to the same racks and sizes.
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use topology_nvl72::config::{parse_block_conf, parse_toml, Config, MAX_TRAYS_PER_RACK};

/// Node count up to which an accepted file is also rendered and read back.
const ROUND_TRIP_AT_MOST: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("topology.conf");
    match parse_block_conf(text, file) {
        Ok(config) => check(&config),
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.starts_with("topology.conf:"), "{shown}");
        }
    }
});

fn check(config: &Config) {
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
    // Converting to topology.toml (`nvl72 check --convert`-style) keeps the racks.
    // The round trip of a large file runs the same code as a small one, only longer: keep
    // the fuzzer fast (racks of up to 1024 nodes each are accepted).
    if config.racks.iter().map(|r| r.nodes.len()).sum::<usize>() > ROUND_TRIP_AT_MOST {
        return;
    }
    let rendered = config.to_toml();
    let toml_file = Path::new("topology.toml");
    let back = parse_toml(&rendered, toml_file)
        .unwrap_or_else(|e| panic!("converted topology.conf does not load: {e}\n{rendered}"));
    assert_eq!(back.racks, config.racks, "{rendered}");
    assert_eq!(back.trays_per_rack, config.trays_per_rack);
    assert_eq!(back.policy, config.policy);
}
