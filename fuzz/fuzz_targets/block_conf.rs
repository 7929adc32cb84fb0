//! topology.conf (`BlockName=` lines): `parse_block_conf` on any text. Invariants of an
//! accepted file: as for topology.toml (racks, names, sizes, no node twice), and converting it
//! with `Config::to_toml` gives a topology.toml that loads to the same racks and sizes.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

#[path = "../common/config_invariants.rs"]
mod invariants;
use nvl72_engine::config::{parse_block_conf, parse_toml, Config};

fuzz_target!(|data: &[u8]| {
    let file = Path::new("topology.conf");
    if let Some(config) = invariants::accepted(data, file, parse_block_conf) {
        check(&config);
    }
});

fn check(config: &Config) {
    invariants::check_racks(config);
    // Converting to topology.toml (`nvl72 check --convert`-style) keeps the racks.
    if !invariants::round_trip_size(config) {
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
