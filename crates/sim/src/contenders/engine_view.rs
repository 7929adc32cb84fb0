//! The engine's view of the simulated cluster, kept up to date from one free map to the next:
//! the scheduler asks about many maps that differ in a few trays, so only those trays are
//! written and only their racks recounted (the engine then reads each rack's count, not its
//! trays).

use crate::topology::Topology;

use crate::view::ClusterView;

/// Trays compared at once: equal chunks (most of them) cost one slice comparison.
const CHUNK: usize = 64;

pub struct EngineView {
    view: ClusterView,
    /// The free map the view shows, to compare the next one against.
    shown: Vec<bool>,
    /// Racks whose trays changed in the current update (scratch).
    changed: Vec<usize>,
}

impl EngineView {
    /// Every tray free.
    pub fn all_free(topo: &Topology, trays: usize) -> EngineView {
        let mut view = ClusterView::all_free(trays);
        view.count_racks(topo);
        EngineView {
            view,
            shown: vec![true; trays],
            changed: Vec::new(),
        }
    }

    /// The view of `free`: a free tray is offered, any other allocated.
    pub fn show(&mut self, topo: &Topology, free: &[bool]) -> &ClusterView {
        debug_assert_eq!(free.len(), self.shown.len());
        self.changed.clear();
        let chunks = self.shown.chunks_mut(CHUNK).zip(free.chunks(CHUNK));
        for (c, (shown, free)) in chunks.enumerate() {
            if shown == free {
                continue;
            }
            for (i, (s, &f)) in shown.iter_mut().zip(free).enumerate() {
                if *s == f {
                    continue;
                }
                *s = f;
                let t = c * CHUNK + i;
                let tray = &mut self.view.trays[t];
                tray.offered = f;
                tray.allocated = !f;
                if let Some(r) = topo.rack_of(t) {
                    if self.changed.last() != Some(&r) {
                        self.changed.push(r);
                    }
                }
            }
        }
        for &r in &self.changed {
            self.view.recount_rack(topo, r);
        }
        if !self.changed.is_empty() {
            self.view.index_racks(topo);
        }
        &self.view
    }

    /// For the clock and the expected ends, which no free map carries.
    pub fn view_mut(&mut self) -> &mut ClusterView {
        &mut self.view
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;

    #[test]
    fn the_view_of_a_map_is_the_view_built_from_it_fresh() {
        let topo = Topology::uniform(3, 18, Policy::default());
        let mut kept = EngineView::all_free(&topo, 54);
        let maps = [
            (0..54).map(|t| t % 3 != 0).collect::<Vec<bool>>(),
            (0..54).map(|t| !(20..=40).contains(&t)).collect(),
            vec![true; 54],
            (0..54).map(|t| t == 53).collect(),
        ];
        for free in &maps {
            let mut fresh = ClusterView::all_free(54);
            for (tray, &f) in fresh.trays.iter_mut().zip(free) {
                tray.offered = f;
                tray.allocated = !f;
            }
            fresh.count_racks(&topo);
            let shown = kept.show(&topo, free);
            assert_eq!(
                (&shown.trays, &shown.tallies),
                (&fresh.trays, &fresh.tallies)
            );
        }
    }
}
