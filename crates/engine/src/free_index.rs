//! Every rack of a view in best-fit order, grouped by how many trays it offers: what lets a
//! decision on a cluster of thousands of racks read only the racks it offers a job, rather
//! than every rack's count (issue 33).
#![forbid(unsafe_code)]

use std::ops::Range;

use crate::topology::Topology;

use crate::tray::RackTally;

/// The racks ordered by (offered trays, with `prefer_degraded` whole racks after the others,
/// configuration order): the order of [`crate::placement`]'s best fit and tie-break, so the
/// racks with at least `k` offered trays, best fit first, are one range of it.
///
/// Built from the view's tallies in one counting sort ([`FreeIndex::build`]); stale once a
/// tally changes (see [`crate::view::ClusterView::recount_rack`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FreeIndex {
    /// `start[s]..start[s + 1]` are the positions in `racks` of slot `s` = 2 × offered
    /// trays + keep-whole (a whole rack under `prefer_degraded`).
    start: Vec<u32>,
    racks: Vec<u32>,
    /// Every rack's tally added up: when its GPUs and CPUs are alike on every offered tray
    /// (whole free trays, the usual case), a job sized by them needs the same number of
    /// trays in every rack.
    pub held: RackTally,
}

impl FreeIndex {
    /// The racks of `tallies` (one per rack of `topo`, in rack order) in best-fit order.
    pub fn build(topo: &Topology, tallies: &[RackTally]) -> FreeIndex {
        let mut index = FreeIndex::default();
        index.rebuild(topo, tallies);
        index
    }

    /// [`FreeIndex::build`] in this index's memory (the simulator indexes a view again after
    /// every change).
    pub fn rebuild(&mut self, topo: &Topology, tallies: &[RackTally]) {
        self.held = RackTally::default();
        for t in tallies {
            self.held.merge(t);
        }
        let slots = tallies.iter().enumerate();
        let slots = slots.map(|(d, t)| {
            (
                d,
                FreeIndex::slot(topo, t.offered, t.offered == topo.rack_size(d)),
            )
        });
        sort_into_slots(topo, slots, &mut self.start, &mut self.racks);
    }

    /// The slot of a rack offering `offered` trays, `whole` when every configured tray is
    /// offered: 2 × offered trays + keep-whole (a whole rack under `prefer_degraded`).
    pub fn slot(topo: &Topology, offered: usize, whole: bool) -> usize {
        let keep_whole = topo.policy.prefer_degraded && whole;
        2 * offered.min(topo.max_rack_size()) + usize::from(keep_whole)
    }

    /// Forgets the order (the tallies changed).
    pub fn clear(&mut self) {
        self.start.clear();
    }

    /// Whether the view was indexed (an empty index is no index: placement then ranks every
    /// rack itself).
    pub fn is_built(&self) -> bool {
        !self.start.is_empty()
    }

    /// The positions of the racks offering at least `k` trays, best fit first.
    pub fn at_least(&self, k: usize) -> Range<usize> {
        let slot = (2 * k).min(self.start.len() - 1);
        self.start[slot] as usize..self.racks.len()
    }

    /// The positions of the racks offering exactly `k` trays, in best-fit order.
    pub fn exactly(&self, k: usize) -> Range<usize> {
        let last = self.start.len() - 1;
        self.start[(2 * k).min(last)] as usize..self.start[(2 * k + 2).min(last)] as usize
    }

    /// The order as slots: `racks[start[s]..start[s + 1]]` are the racks of slot `s` = 2 ×
    /// offered trays + keep-whole, in configuration order.
    pub fn slots(&self) -> (&[u32], &[u32]) {
        (&self.start, &self.racks)
    }

    /// The rack at position `at` of the order.
    #[inline]
    pub fn rack(&self, at: usize) -> usize {
        self.racks[at] as usize
    }

    /// Whether every offered tray of every rack holds the same GPUs and the same CPUs.
    pub fn alike(&self) -> bool {
        let h = &self.held;
        h.offered == 0 || (h.gpus.least == h.gpus.most && h.cpus.least == h.cpus.most)
    }
}

/// A counting sort of `(rack, slot)` into slots of `topo`'s racks (see [`FreeIndex::slot`]),
/// stable in the order given: afterwards `racks[start[s]..start[s + 1]]` are the racks of
/// slot `s`.
pub fn sort_into_slots(
    topo: &Topology,
    slots: impl Iterator<Item = (usize, usize)> + Clone,
    start: &mut Vec<u32>,
    racks: &mut Vec<u32>,
) {
    start.clear();
    start.resize(2 * (topo.max_rack_size() + 1) + 1, 0);
    let mut len = 0;
    for (_, s) in slots.clone() {
        start[s + 1] += 1;
        len += 1;
    }
    for s in 1..start.len() {
        start[s] += start[s - 1];
    }
    racks.clear();
    racks.resize(len, 0);
    // Each slot's next free position: the slot's start, moved one along.
    for (d, s) in slots {
        let at = start[s] as usize;
        racks[at] = d as u32;
        start[s] += 1;
    }
    // Every start moved to the next slot's: shift back.
    for s in (1..start.len()).rev() {
        start[s] = start[s - 1];
    }
    start[0] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;
    use crate::tray::Tray;
    use crate::view::ClusterView;

    fn indexed(free: &[usize], prefer_degraded: bool) -> FreeIndex {
        let policy = Policy {
            prefer_degraded,
            ..Policy::default()
        };
        let topo = Topology::uniform(free.len(), 18, policy);
        let mut view = ClusterView::all_free(free.len() * 18);
        for (r, &f) in free.iter().enumerate() {
            for t in f..18 {
                view.trays[r * 18 + t] = Tray::default();
            }
        }
        view.count_racks(&topo);
        view.free_index
    }

    fn racks(index: &FreeIndex, at: Range<usize>) -> Vec<usize> {
        at.map(|i| index.rack(i)).collect()
    }

    #[test]
    fn racks_come_fewest_offered_first_then_in_configuration_order() {
        let index = indexed(&[18, 4, 0, 9, 4, 18, 17], true);
        assert_eq!(racks(&index, index.at_least(0)), vec![2, 1, 4, 3, 6, 0, 5]);
        assert_eq!(racks(&index, index.at_least(5)), vec![3, 6, 0, 5]);
        assert_eq!(racks(&index, index.exactly(4)), vec![1, 4]);
        assert_eq!(racks(&index, index.exactly(18)), vec![0, 5]);
        assert!(index.at_least(19).is_empty());
        assert!(index.exactly(30).is_empty());
        assert_eq!(index.held.offered, 70);
        assert!(index.alike());
    }

    /// Racks of different sizes: under `prefer_degraded` a whole rack goes after the racks of
    /// the same count that are not whole; without it, configuration order alone.
    #[test]
    fn whole_racks_go_last_among_equal_counts_only_under_prefer_degraded() {
        let mut config = crate::config::Config::default();
        for (name, size) in [("a", 18), ("b", 16), ("c", 18)] {
            config.racks.push(crate::config::RackConfig {
                name: name.into(),
                nodes: (0..size).map(|t| format!("{name}{t}")).collect(),
                clique: None,
                group: None,
            });
        }
        for prefer_degraded in [true, false] {
            config.policy.prefer_degraded = prefer_degraded;
            let names: Vec<String> = config.racks.iter().flat_map(|r| r.nodes.clone()).collect();
            let (topo, _) =
                Topology::resolve(&config, names.len(), |n| names.iter().position(|m| m == n));
            let mut view = ClusterView::all_free(names.len());
            // a: 16 of 18 offered; b: 16 of 16 (whole); c: 16 of 18.
            for t in [0, 1, 34 + 16, 34 + 17] {
                view.trays[t] = Tray::default();
            }
            view.count_racks(&topo);
            let order = racks(&view.free_index, view.free_index.exactly(16));
            let expect = if prefer_degraded {
                vec![0, 2, 1]
            } else {
                vec![0, 1, 2]
            };
            assert_eq!(order, expect, "prefer_degraded = {prefer_degraded}");
        }
    }
}
