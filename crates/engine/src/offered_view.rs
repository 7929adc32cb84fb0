//! The view the plugin builds on every call from the trays Slurm offers one job: counted and
//! indexed as it is written, in memory kept from the call before, so that a call costs the
//! trays offered and the racks, not a fresh table of every tray (issue 33).
#![forbid(unsafe_code)]

use crate::topology::Topology;

use crate::tray::{RackTally, Tray};

use crate::view::ClusterView;

/// A [`ClusterView`] being built from the offered trays, and what the next build must undo.
#[derive(Debug, Clone, Default)]
pub struct OfferedView {
    pub view: ClusterView,
    /// The racks that offered a tray since [`OfferedView::reset`], in the order met (Slurm
    /// hands trays over in node order, so each rack once in the usual layout), and the trays
    /// written: the next reset clears these and nothing else.
    touched: Vec<u32>,
    written: Vec<u32>,
    /// The first offered tray's weight; `view.weights` is filled only once two differ.
    first_weight: Option<u64>,
}

impl OfferedView {
    /// No tray offered, on a cluster of `node_count` trays and `topo`'s racks.
    pub fn reset(&mut self, topo: &Topology, node_count: usize) {
        let view = &mut self.view;
        let fresh = view.tallies.len() != topo.racks.len();
        for &r in &self.touched {
            if let Some(t) = view.tallies.get_mut(r as usize) {
                *t = RackTally::default();
            }
        }
        for &n in &self.written {
            if let Some(t) = view.trays.get_mut(n as usize) {
                *t = Tray::default();
            }
        }
        self.touched.clear();
        self.written.clear();
        view.trays.resize(node_count, Tray::default());
        if fresh {
            view.tallies.clear();
            view.tallies.resize(topo.racks.len(), RackTally::default());
        }
        view.free_index.clear();
        view.weights.clear();
        view.busy_until.clear();
        view.now = 0;
        self.first_weight = None;
    }

    /// The offered trays, in node order as Slurm hands them over: `(n, tray, weight)` is
    /// tray `n` as the job is offered it, of scheduling weight `weight`. Each rack is counted
    /// as its trays come (they come one after the other), so no tray is read twice. A node
    /// beyond the cluster is left out.
    #[inline]
    pub fn offer(
        &mut self,
        topo: &Topology,
        offered: impl IntoIterator<Item = (usize, Tray, u64)>,
    ) {
        let view = &mut self.view;
        // The rack being counted, and its tally so far.
        let mut counting: Option<(usize, RackTally)> = None;
        for (n, tray, weight) in offered {
            let Some(slot) = view.trays.get_mut(n) else {
                continue;
            };
            *slot = tray;
            self.written.push(n as u32);
            match (topo.rack_of(n), &mut counting) {
                (Some(r), Some((at, tally))) if *at == r => tally.add(tray),
                (Some(r), counting) => {
                    if let Some((at, tally)) = counting.take() {
                        view.tallies[at].merge(&tally);
                    }
                    let mut tally = RackTally::default();
                    tally.add(tray);
                    *counting = Some((r, tally));
                    self.touched.push(r as u32);
                }
                (None, _) => {}
            }
            // Weights are kept only once two offered trays differ (the usual cluster has
            // one weight, and then no per-tray vector is built).
            match self.first_weight {
                None => self.first_weight = Some(weight),
                Some(w) if view.weights.is_empty() && weight != w => {
                    view.weights = vec![w; view.trays.len()];
                }
                Some(_) => {}
            }
            if let Some(w) = view.weights.get_mut(n) {
                *w = weight;
            }
        }
        if let Some((at, tally)) = counting {
            view.tallies[at].merge(&tally);
        }
    }

    /// Takes `trays` out of the offer and indexes the racks again: the view is then the one
    /// built from the trays left. Slurm's retry loop drops trays between the callbacks of one
    /// evaluation and changes nothing else, so a callback costs the dropped trays and the
    /// racks, not every offered tray again. False, with nothing changed, when the view keeps
    /// weights: whether the trays left still differ in weight would take reading them all.
    pub fn withdraw(&mut self, topo: &Topology, trays: &[usize]) -> bool {
        let view = &mut self.view;
        if !view.weights.is_empty() {
            return false;
        }
        let mut last_rack = None;
        for &n in trays {
            if let Some(t) = view.trays.get_mut(n) {
                *t = Tray::default();
            }
            let rack = topo.rack_of(n);
            if rack != last_rack {
                if let Some(r) = last_rack {
                    view.recount_rack(topo, r);
                }
                last_rack = rack;
            }
        }
        if let Some(r) = last_rack {
            view.recount_rack(topo, r);
        }
        view.index_racks(topo);
        true
    }

    /// Orders every rack by what it offers ([`ClusterView::free_index`]): the view is
    /// ready.
    pub fn finish(&mut self, topo: &Topology) -> &mut ClusterView {
        self.view.index_racks(topo);
        &mut self.view
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;
    use crate::tray::Capacity;

    fn offered(trays: &[(usize, u64)], topo: &Topology, ov: &mut OfferedView) -> ClusterView {
        ov.reset(topo, 54);
        let free = Tray::free(Capacity::GB200_TRAY);
        ov.offer(topo, trays.iter().map(|&(n, w)| (n, free, w)));
        ov.finish(topo).clone()
    }

    /// The same view as one built fresh and counted: a build in reused memory keeps nothing
    /// of the build before.
    #[test]
    fn a_view_built_again_is_the_view_built_fresh() {
        let topo = Topology::uniform(3, 18, Policy::default());
        let mut reused = OfferedView::default();
        let first: Vec<(usize, u64)> = (0..54).filter(|n| n % 3 != 0).map(|n| (n, 1)).collect();
        offered(&first, &topo, &mut reused);
        let second = [(5, 1), (20, 1), (21, 7), (40, 1)];
        let got = offered(&second, &topo, &mut reused);
        let mut fresh = ClusterView {
            trays: vec![Tray::default(); 54],
            ..ClusterView::default()
        };
        let mut weights = vec![1; 54];
        for &(n, w) in &second {
            fresh.trays[n] = Tray::free(Capacity::GB200_TRAY);
            weights[n] = w;
        }
        fresh.set_weights(weights);
        fresh.count_racks(&topo);
        assert_eq!(got, fresh);
        // One weight on every offered tray: no weights kept.
        let alike = offered(&[(1, 3), (30, 3)], &topo, &mut reused);
        assert!(alike.weights.is_empty());
    }

    proptest::proptest! {
        /// Slurm's retry loop drops trays between the callbacks of one evaluation: a view
        /// built once and then withdrawn from is the view built from the trays left.
        #[test]
        fn a_view_withdrawn_from_is_the_view_of_the_trays_left(
            trays in proptest::collection::btree_map(
                0usize..54, (0u16..=4, 0u16..=144, proptest::bool::ANY), 0..54),
            dropped in proptest::collection::vec(proptest::bool::ANY, 54),
        ) {
            let topo = Topology::uniform(3, 18, Policy::default());
            let tray = |&(gpus, cpus, allocated): &(u16, u16, bool)| Tray {
                offered: true,
                allocated,
                gpus,
                cpus,
                ..Tray::default()
            };
            let build = |ov: &mut OfferedView, keep: &dyn Fn(usize) -> bool| {
                ov.reset(&topo, 54);
                ov.offer(&topo, trays.iter().filter(|(&n, _)| keep(n)).map(|(&n, t)| (n, tray(t), 1)));
                ov.finish(&topo);
            };
            let mut withdrawn = OfferedView::default();
            build(&mut withdrawn, &|_| true);
            let gone: Vec<usize> = trays.keys().copied().filter(|&n| dropped[n]).collect();
            proptest::prop_assert!(withdrawn.withdraw(&topo, &gone));
            let mut left = OfferedView::default();
            build(&mut left, &|n| !dropped[n]);
            proptest::prop_assert_eq!(withdrawn.view, left.view);
        }
    }

    /// Weights kept: withdrawing is refused (the caller builds afresh).
    #[test]
    fn a_weighted_view_is_not_withdrawn_from() {
        let topo = Topology::uniform(3, 18, Policy::default());
        let mut ov = OfferedView::default();
        offered(&[(1, 1), (2, 5)], &topo, &mut ov);
        assert!(!ov.withdraw(&topo, &[2]));
        assert!(ov.view.tray(2).offered);
    }

    /// A reconfigure may reorder the racks between two calls (same rack count, other node
    /// ranges): what the last call wrote is cleared whatever the new racks are.
    #[test]
    fn a_view_built_again_after_a_rack_reorder_keeps_nothing_of_the_old_racks() {
        let before = Topology::uniform(3, 18, Policy::default());
        let mut reordered = crate::config::Config::default();
        for r in [2, 0, 1] {
            reordered.racks.push(crate::config::RackConfig {
                name: format!("rack{}", r + 1),
                nodes: (0..18).map(|t| format!("n{}", r * 18 + t)).collect(),
                clique: None,
                group: None,
            });
        }
        let (after, _) = Topology::resolve(&reordered, 54, |n| n[1..].parse().ok());
        let mut reused = OfferedView::default();
        offered(&[(0, 1), (1, 1), (2, 1)], &before, &mut reused);
        let got = offered(&[(40, 1)], &after, &mut reused);
        let fresh = offered(&[(40, 1)], &after, &mut OfferedView::default());
        assert_eq!(got, fresh);
        assert_eq!(got.trays.iter().filter(|t| t.offered).count(), 1);
    }
}
