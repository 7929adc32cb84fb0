//! A rack's room for one job ([`Room`]: its offered trays, whether it is whole, its `-w`
//! nodes, its weight), the tie-break every rule ends with ([`Room::tie_break`]), and which
//! of a rack's trays a job gets ([`Ctx::take`]).

use std::cmp::Reverse;

use super::{Piece, Placement};
use crate::topology::Topology;
use crate::tray::Tray;
use crate::view::ClusterView;

/// The offered trays of one rack, counted without materialising them: only the racks a plan
/// actually uses get a node list (see [`Ctx::take`]), which keeps a decision on 278 racks cheap.
#[derive(Clone)]
pub(super) struct Room {
    pub rack: usize,
    /// Trays offered to the job.
    pub free: usize,
    /// Every configured tray is offered: a whole healthy rack.
    pub whole: bool,
    /// How many `-w` nodes lie in this rack.
    pub required: usize,
    /// The free trays' node weights added up (0 without weights), so that lighter racks go
    /// first.
    pub weight: u64,
}

/// How every rule breaks ties after its own first criterion: with `prefer_degraded`, racks
/// that are not whole first (whole racks stay free for full-rack jobs), then lighter racks,
/// then configuration order.
pub(super) type TieBreak = (bool, u64, usize);

impl Room {
    /// With `prefer_degraded`, a whole rack goes after the others.
    pub fn keep_whole(&self, topo: &Topology) -> bool {
        topo.policy.prefer_degraded && self.whole
    }

    pub fn tie_break(&self, topo: &Topology) -> TieBreak {
        (self.keep_whole(topo), self.weight, self.rack)
    }

    /// Best fit (fewest trays left over), then [`Room::tie_break`].
    pub fn fit_key(&self, topo: &Topology, leftover: usize) -> (usize, TieBreak) {
        (leftover, self.tie_break(topo))
    }
}

/// What a plan looks at: the racks, the trays' states, the `-w` nodes, and how trays are
/// ranked for this job.
pub(super) struct Ctx<'a> {
    pub topo: &'a Topology,
    pub view: &'a ClusterView,
    pub required: &'a [usize],
    /// The job is sized by GPUs or CPUs: offer the trays with the most of them first, as
    /// [`Ctx::need`] counted them (most GPUs, then most CPUs). `need` counts GPUs and CPUs
    /// separately, so a job short of both on shared trays may get trays that hold its GPUs but
    /// not its CPUs; Slurm then refuses that rack and the next one is tried.
    pub by_capacity: bool,
    /// The job asks for no GPUs: rank by most CPUs first, the resource `need` counted.
    pub by_cpus: bool,
    /// The offered trays differ in weight: lighter trays are taken first, and a plan uses
    /// only the lightest trays that can hold the job (see [`super::plan`]).
    pub weighted: bool,
}

impl Ctx<'_> {
    /// One room per rack, in rack order (`rooms[r].rack == r`).
    pub fn rooms(&self) -> Vec<Room> {
        if self.weighted {
            return self.rooms_up_to(u64::MAX);
        }
        self.each_room().collect()
    }

    /// The rooms of [`Ctx::rooms`] without weights, one at a time: a rule that looks at
    /// each rack once (one-rack jobs) builds no list of every rack. With a view that counted
    /// its racks ([`crate::view::ClusterView::count_racks`]) no tray is read.
    pub fn each_room(&self) -> impl Iterator<Item = Room> + '_ {
        let required = self.required_per_rack();
        (0..self.topo.racks.len()).map(move |r| {
            let free = self.view.offered_in(self.topo, r);
            Room {
                rack: r,
                free,
                whole: free == self.topo.rack_size(r),
                required: required.get(r).copied().unwrap_or(0),
                weight: 0,
            }
        })
    }

    /// Rack `r`'s room without `-w` nodes or weights (what the free index stands for).
    pub fn room(&self, r: usize) -> Room {
        let free = self.view.offered_in(self.topo, r);
        Room {
            rack: r,
            free,
            whole: free == self.topo.rack_size(r),
            required: 0,
            weight: 0,
        }
    }

    /// How many `-w` nodes each rack holds (empty without `-w`).
    fn required_per_rack(&self) -> Vec<usize> {
        if self.required.is_empty() {
            return Vec::new();
        }
        let mut per_rack = vec![0; self.topo.racks.len()];
        for r in self.required.iter().filter_map(|&n| self.topo.rack_of(n)) {
            per_rack[r] += 1;
        }
        per_rack
    }

    /// [`Ctx::rooms`] counting only trays of at most weight `cap` as free (required
    /// nodes always count: the job gets them whatever they weigh), with their weights.
    pub fn rooms_up_to(&self, cap: u64) -> Vec<Room> {
        let light = |n: usize| {
            self.view.tray(n).offered && (self.view.weight(n) <= cap || self.required.contains(&n))
        };
        let rooms = (0..self.topo.racks.len()).map(|r| {
            let nodes = &self.topo.racks[r].nodes;
            let (mut free, mut weight) = (0, 0);
            for &n in nodes.iter().filter(|&&n| light(n)) {
                free += 1;
                weight += self.view.weight(n);
            }
            Room {
                rack: r,
                free,
                whole: self.view.offered_in(self.topo, r) == nodes.len(),
                required: 0,
                weight,
            }
        });
        self.count_required(rooms.collect())
    }

    /// Sets each room's count of `-w` nodes.
    fn count_required(&self, mut rooms: Vec<Room>) -> Vec<Room> {
        for (room, n) in rooms.iter_mut().zip(self.required_per_rack()) {
            room.required = n;
        }
        rooms
    }

    /// The distinct weights of the offered rack trays, lightest first.
    pub fn weight_tiers(&self) -> Vec<u64> {
        let mut tiers: Vec<u64> = self
            .topo
            .racks
            .iter()
            .flat_map(|r| r.nodes.iter().copied())
            .filter(|&n| self.view.tray(n).offered)
            .map(|n| self.view.weight(n))
            .collect();
        tiers.sort_unstable();
        tiers.dedup();
        tiers
    }

    /// The highest weight among the trays [`Ctx::take`] would give from rack `r`: what a
    /// one-rack choice costs in Slurm's node weights (0 without weights).
    pub fn weight_of_take(&self, r: usize, k: usize) -> u64 {
        if !self.weighted {
            return 0;
        }
        self.take(r, k)
            .into_iter()
            .map(|n| self.view.weight(n))
            .max()
            .unwrap_or(0)
    }

    /// The first `k` free trays of rack `r`: required nodes first, then (for a job sized by
    /// GPUs or CPUs) the most of them, then the lightest (when weights differ), then trays
    /// already running other jobs (packs shared jobs), then tray order.
    pub fn take(&self, r: usize, k: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(k);
        self.take_into(r, k, &mut out);
        out
    }

    /// [`Ctx::take`], appending to `out`.
    fn take_into(&self, r: usize, k: usize, out: &mut Vec<usize>) {
        let nodes = &self.topo.racks[r].nodes;
        if self.by_capacity || self.weighted {
            let mut trays: Vec<usize> = nodes
                .iter()
                .copied()
                .filter(|&n| self.view.tray(n).offered)
                .collect();
            // A stable sort, so tray order breaks the remaining ties.
            trays.sort_by_key(|&n| self.tray_rank(n));
            out.extend(trays.into_iter().take(k));
            return;
        }
        let end = out.len() + k;
        // Three passes over at most a rack's trays beat sorting them: 0 = required,
        // 1 = allocated to another job, 2 = idle.
        let first = if self.required.is_empty() { 1 } else { 0 };
        for pass in first..3 {
            for &n in nodes {
                if out.len() == end {
                    return;
                }
                let tray = self.view.tray(n);
                let class = if !tray.offered {
                    continue;
                } else if self.required.contains(&n) {
                    0
                } else if tray.allocated {
                    1
                } else {
                    2
                };
                if class == pass {
                    out.push(n);
                }
            }
        }
    }

    /// How [`Ctx::take`] orders a rack's offered trays when it sorts them: required nodes;
    /// for a job sized by GPUs or CPUs the most of them (what `Ctx::need` counted, so the
    /// trays offered hold what it promised); the lightest (Slurm's node weight, 0 when all
    /// weigh the same); then trays allocated to other jobs.
    fn tray_rank(&self, n: usize) -> (bool, Reverse<(u16, u16)>, u64, bool) {
        let t: Tray = self.view.tray(n);
        let most = match (self.by_capacity, self.by_cpus) {
            (false, _) => (0, 0),
            (true, true) => (t.cpus, t.gpus),
            (true, false) => (t.gpus, t.cpus),
        };
        let weight = if self.weighted {
            self.view.weight(n)
        } else {
            0
        };
        (
            !self.required.contains(&n),
            Reverse(most),
            weight,
            !t.allocated,
        )
    }

    /// An exact placement of `pieces`, nodes grouped by piece.
    pub fn materialize(&self, pieces: Vec<Piece>) -> Placement {
        let mut nodes = Vec::with_capacity(pieces.iter().map(|p| p.trays).sum());
        for p in &pieces {
            self.take_into(p.rack, p.trays, &mut nodes);
        }
        Placement {
            nodes,
            exact: true,
            pieces,
        }
    }
}
