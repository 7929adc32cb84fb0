//! [`ClusterView`]: every tray's state at the moment of a decision, with each rack's tally
//! and the racks in best-fit order when whoever built it counted them.

use crate::free_index::FreeIndex;
use crate::topology::Topology;
use crate::tray::{Capacity, RackTally, Tray};

/// Per-node tray states, indexed like [`Topology`] node indices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterView {
    pub trays: Vec<Tray>,
    /// When each tray's running jobs are expected to end (their time limits), in seconds on
    /// the caller's clock; 0 for a tray without jobs. Empty when not known: placement then
    /// ignores end times (`[policy] end_time`).
    pub busy_until: Vec<u32>,
    /// The current time on the same clock.
    pub now: u32,
    /// Each tray's scheduling weight (Slurm's node `Weight`, raised for powered-down or
    /// rebooting nodes): lighter trays are used first. Empty when every offered tray weighs
    /// the same, the usual case, which placement then never looks at.
    pub weights: Vec<u64>,
    /// Each rack's [`RackTally`], in rack order, when whoever built the view counted them
    /// (the plugin does, while it reads the offered trays): a decision then looks at every
    /// rack but not at every tray. Empty: placement counts them itself. Stale once `trays`
    /// change, unless whoever changes them recounts their racks
    /// ([`ClusterView::recount_rack`], as the simulator does between decisions).
    pub tallies: Vec<RackTally>,
    /// The racks in best-fit order, built with the tallies ([`ClusterView::index_racks`]):
    /// a decision then reads only the racks it offers. Empty: placement ranks every rack.
    pub free_index: FreeIndex,
}

impl ClusterView {
    /// How many trays of rack `d` are offered in `view`.
    #[inline]
    pub fn offered_in(&self, topo: &Topology, d: usize) -> usize {
        if let Some(t) = self.tallies.get(d) {
            return t.offered;
        }
        match self.rack_trays(topo, d) {
            Some(trays) => trays.iter().filter(|t| t.offered).count(),
            None => topo.racks[d]
                .nodes
                .iter()
                .filter(|&&n| self.tray(n).offered)
                .count(),
        }
    }
    /// Rack `d`'s offered trays and what they hold: the view's count when it has one
    /// ([`ClusterView::count_racks`]), else one look at the rack's trays.
    #[inline]
    pub fn tally(&self, topo: &Topology, d: usize) -> RackTally {
        match self.tallies.get(d) {
            Some(&t) => t,
            None => self.count_tally(topo, d),
        }
    }
    /// Rack `d`'s tally counted from its trays, whatever the view has stored.
    fn count_tally(&self, topo: &Topology, d: usize) -> RackTally {
        let mut tally = RackTally::default();
        match self.rack_trays(topo, d) {
            Some(trays) => return RackTally::of_trays(trays),
            None => topo.racks[d]
                .nodes
                .iter()
                .for_each(|&n| tally.add(self.tray(n))),
        }
        tally
    }
    /// Rack `d`'s trays as one slice of `view`, when its node indices are consecutive (the
    /// usual case).
    #[inline]
    pub fn rack_trays(&self, topo: &Topology, d: usize) -> Option<&[Tray]> {
        topo.node_range(d).and_then(|r| self.trays.get(r))
    }
    /// Calls `f` with the state of each of rack `d`'s trays, in tray order (one slice scan
    /// when the rack's node indices are consecutive).
    pub fn for_each_tray(&self, topo: &Topology, d: usize, mut f: impl FnMut(Tray)) {
        match topo.node_range(d).and_then(|r| self.trays.get(r)) {
            Some(trays) => trays.iter().copied().for_each(f),
            None => topo.racks[d].nodes.iter().for_each(|&n| f(self.tray(n))),
        }
    }

    /// Every tray a free GB200 tray: an empty cluster.
    pub fn all_free(node_count: usize) -> ClusterView {
        ClusterView {
            trays: vec![Tray::free(Capacity::GB200_TRAY); node_count],
            ..ClusterView::default()
        }
    }

    /// Counts every rack's offered trays into [`ClusterView::tallies`]: call it once the
    /// trays are final.
    pub fn count_racks(&mut self, topo: &Topology) {
        self.tallies.clear();
        let tallies = (0..topo.racks.len()).map(|d| self.tally(topo, d)).collect();
        self.tallies = tallies;
        self.index_racks(topo);
    }

    /// Orders the racks by their tallies ([`ClusterView::free_index`]).
    pub fn index_racks(&mut self, topo: &Topology) {
        self.free_index.rebuild(topo, &self.tallies);
    }

    /// Recounts rack `d`'s tally after its trays changed, in a view that has tallies. The
    /// free index is dropped (a stale order would mislead a decision): index the racks again
    /// once every changed rack is recounted.
    pub fn recount_rack(&mut self, topo: &Topology, d: usize) {
        let tally = self.count_tally(topo, d);
        if let Some(t) = self.tallies.get_mut(d) {
            *t = tally;
            self.free_index.clear();
        }
    }

    pub fn tray(&self, node: usize) -> Tray {
        self.trays.get(node).copied().unwrap_or_default()
    }

    /// When `node`'s running jobs are expected to end (0: no jobs, or not known).
    pub fn busy_until(&self, node: usize) -> u32 {
        self.busy_until.get(node).copied().unwrap_or(0)
    }

    /// `node`'s scheduling weight (0 when the view has no weights).
    pub fn weight(&self, node: usize) -> u64 {
        self.weights.get(node).copied().unwrap_or(0)
    }

    /// Sets the trays' weights, kept only when they differ among the offered trays.
    pub fn set_weights(&mut self, weights: Vec<u64>) {
        let mut offered = weights
            .iter()
            .zip(&self.trays)
            .filter(|(_, t)| t.offered)
            .map(|(w, _)| *w);
        let first = offered.next();
        let alike = offered.all(|w| Some(w) == first);
        self.weights = if alike { Vec::new() } else { weights };
    }

    /// Whether the offered trays differ in weight (placement then uses lighter ones first).
    pub fn weighted(&self) -> bool {
        !self.weights.is_empty()
    }
}
