//! What a lab job pays for the nodes Slurm really gave it: the simulator's slowdown model
//! applied to a real node list, so a replay's jobs run as long as the simulator's do.
//!
//! A slurmd lab's job script is `nvl72 stretch`, which reads `SLURM_JOB_NODELIST` when it
//! starts and sleeps its base time × s; the cloud driver prices the start line's nodes; the
//! timeline of a real run prices each start the same way for usable occupancy.

use crate::hostlist;
use crate::slowdown::{CommClass, Factor, Slowdown};
use crate::workload::checkpoint::Checkpoints;

use super::lab_nodes::tray_of;

/// Trays per rack in rack order, from tray indexes (any order).
pub fn pieces(trays: &[usize], rack_size: usize) -> Vec<usize> {
    let mut racks: Vec<usize> = trays.iter().map(|t| t / rack_size.max(1)).collect();
    racks.sort_unstable();
    let mut pieces: Vec<usize> = Vec::new();
    let mut last = None;
    for r in racks {
        if last == Some(r) {
            *pieces.last_mut().expect("a piece per rack seen") += 1;
        } else {
            pieces.push(1);
            last = Some(r);
        }
    }
    pieces
}

/// The price of a run on the lab's trays named by `nodelist` (`gb[001-017,019]`).
pub fn factor_of_nodelist(
    slowdown: &Slowdown,
    nodelist: &str,
    segment: Option<usize>,
    class: CommClass,
    rack_size: usize,
) -> Result<Factor, String> {
    let names = hostlist::expand(nodelist).map_err(|e| format!("node list `{nodelist}`: {e}"))?;
    factor_of_nodes(slowdown, &names, segment, class, rack_size)
        .map_err(|e| format!("node list `{nodelist}`: {e}"))
}

/// The price of a run on the lab's trays `names` (`gb001`, ...).
pub fn factor_of_nodes(
    slowdown: &Slowdown,
    names: &[String],
    segment: Option<usize>,
    class: CommClass,
    rack_size: usize,
) -> Result<Factor, String> {
    let trays = names
        .iter()
        .map(|n| tray_of(n).ok_or_else(|| format!("`{n}` is not a lab tray (gbNNN)")))
        .collect::<Result<Vec<usize>, String>>()?;
    Ok(slowdown
        .model
        .factor(&pieces(&trays, rack_size), segment, class, rack_size))
}

/// How long a lab job sleeps: its base time × s, with the strict limit's cap left to Slurm.
pub fn sleep_ms(base_ms: u64, factor: &Factor) -> u64 {
    Slowdown::stretch(base_ms, factor.s)
}

/// Where a lab job that resumes at `saved` ms of its `base_ms` of work writes its
/// checkpoints: every multiple of the interval strictly between the two, in order.
pub fn checkpoint_marks(saved: u64, base_ms: u64, every: Checkpoints) -> Vec<u64> {
    match every {
        Checkpoints::None => Vec::new(),
        Checkpoints::Every(step) => (saved / step + 1..)
            .map(|k| k * step)
            .take_while(|&mark| mark < base_ms)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slowdown::parse_variant;

    fn default_model() -> Slowdown {
        Slowdown {
            model: parse_variant("default").unwrap().0,
            ..Slowdown::default()
        }
    }

    #[test]
    fn a_node_list_over_a_rack_boundary_pays_for_its_pieces() {
        let f = factor_of_nodelist(
            &default_model(),
            "gb[001-017,019]",
            None,
            CommClass::Dense,
            18,
        )
        .unwrap();
        assert_eq!((f.racks, f.k_min, f.cut), (2, 1, true));
        assert!((f.s - 1.633).abs() < 0.001, "{}", f.s);
        let whole =
            factor_of_nodelist(&default_model(), "gb[019-036]", None, CommClass::Moe, 18).unwrap();
        assert_eq!(whole.s, 1.0);
    }

    #[test]
    fn a_resumed_job_saves_at_the_marks_after_its_last_one() {
        let every = Checkpoints::Every(100);
        assert_eq!(checkpoint_marks(0, 350, every), vec![100, 200, 300]);
        assert_eq!(checkpoint_marks(200, 350, every), vec![300]);
        assert_eq!(
            checkpoint_marks(0, 300, every),
            vec![100, 200],
            "the end is no checkpoint"
        );
        assert!(checkpoint_marks(0, 350, Checkpoints::None).is_empty());
    }

    #[test]
    fn pieces_follow_rack_order_whatever_the_tray_order() {
        assert_eq!(pieces(&[40, 0, 1, 19, 18, 2], 18), vec![3, 2, 1]);
    }

    #[test]
    fn a_node_that_is_not_a_lab_tray_is_an_error_naming_it() {
        let e = factor_of_nodelist(&default_model(), "gb001,login1", None, CommClass::Dp, 18)
            .unwrap_err();
        assert!(e.contains("`login1` is not a lab tray"), "{e}");
    }
}
