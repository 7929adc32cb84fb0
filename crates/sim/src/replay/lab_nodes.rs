//! The lab's tray names, both ways, as `scripts/lab-up.sh` writes them: tray 0 is `gb001`
//! (`gb0001` above 999 trays), in rack order. The one place the replay knows them: the
//! driver names trays to fail with [`tray_name`], the timeline and `nvl72 stretch` read
//! slurmctld's node lists back with [`tray_of`]; [`TRAYS_PER_RACK`] is how many trays each
//! of its racks has.

/// Trays per rack in a replay lab: lab-up.sh's `NPR`, which the driver leaves at its
/// default. The lab side (the driver, the cloud driver's ends, `nvl72 stretch` in the job
/// script) prices nodes with it; the prediction takes `SimConfig::trays_per_rack`.
pub const TRAYS_PER_RACK: usize = 18;

/// The lab's name of tray `tray` (0-based) in a lab of `trays` trays.
pub fn tray_name(tray: usize, trays: usize) -> String {
    if trays > 999 {
        format!("gb{:04}", tray + 1)
    } else {
        format!("gb{:03}", tray + 1)
    }
}

/// `gb007` -> tray 6; `None` for a node that is not a lab tray.
pub fn tray_of(node: &str) -> Option<usize> {
    let n: usize = node.strip_prefix("gb")?.parse().ok()?;
    n.checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_trays_round_trip() {
        assert_eq!(tray_name(0, 144), "gb001");
        assert_eq!(tray_name(998, 999), "gb999");
        assert_eq!(tray_name(0, 5004), "gb0001");
        assert_eq!(tray_name(5003, 5004), "gb5004");
        assert_eq!(tray_of("gb001"), Some(0));
        assert_eq!(tray_of("gb144"), Some(143));
        assert_eq!(tray_of("cpu01"), None);
        assert_eq!(tray_of("gb000"), None);
        for trays in [144, 5004] {
            assert!((0..trays).all(|t| tray_of(&tray_name(t, trays)) == Some(t)));
        }
    }
}
