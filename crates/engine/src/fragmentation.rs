//! Stranded capacity: free trays that a full-rack job can no longer use.
#![forbid(unsafe_code)]

use crate::topology::Topology;

/// Fragmentation score used by Slurm's backfill (`bf_topopt_enable`): the number of available
/// trays that sit in racks which are not completely available. Lower is better; 0 means every
/// available tray is part of a whole, healthy rack.
pub fn score(topo: &Topology, available: impl Fn(usize) -> bool) -> u32 {
    topo.racks
        .iter()
        .map(|d| {
            let avail = d.nodes.iter().filter(|&&n| available(n)).count();
            if avail < d.nodes.len() {
                avail as u32
            } else {
                0
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;

    #[test]
    fn whole_racks_are_not_fragmented() {
        let topo = Topology::uniform(3, 18, Policy::default());
        assert_eq!(score(&topo, |_| true), 0);
        assert_eq!(score(&topo, |_| false), 0);
        // rack1 lost one tray: its 17 others are stranded for full-rack jobs
        assert_eq!(score(&topo, |n| n != 3), 17);
        // rack2 half busy as well
        assert_eq!(score(&topo, |n| n != 3 && !(18..27).contains(&n)), 17 + 9);
    }
}
