//! topology.toml: `parse_toml` on any text. Invariants of an accepted file: at least one
//! rack, valid unique names, no rack larger than `trays_per_rack`, no node twice, counts in
//! range; `Config::to_toml` reads back to an equal `Config`; errors display without panicking.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

#[path = "../common/config_invariants.rs"]
mod invariants;
use nvl72_engine::config::{parse_toml, Config, MAX_GPUS_PER_TRAY};

fuzz_target!(|data: &[u8]| {
    let file = Path::new("topology.toml");
    if let Some(config) = invariants::accepted(data, file, parse_toml) {
        check(&config, file);
    }
});

fn check(config: &Config, file: &Path) {
    invariants::check_racks(config);
    assert!((1..=MAX_GPUS_PER_TRAY).contains(&config.gpus_per_tray));
    for rack in &config.racks {
        assert!(rack
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')));
    }
    if !invariants::round_trip_size(config) {
        return;
    }
    let rendered = config.to_toml();
    let back = parse_toml(&rendered, file)
        .unwrap_or_else(|e| panic!("to_toml output does not load: {e}\n{rendered}"));
    assert_eq!(&back, config, "to_toml round trip\n{rendered}");
}
