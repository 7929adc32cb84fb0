//! The placement engine: which trays a job gets so that it (or each of its segments) stays
//! inside one NVLink domain while the fewest GPUs are left stranded.
//!
//! The engine only chooses *which nodes may be used*. The plugin then hands that set to Slurm's
//! own selection code, which charges cores and GRES exactly as for any other topology plugin.
//! For that reason [`plan`] returns ranked alternatives: if Slurm cannot fit the job's cores or
//! GPUs on the first set, the plugin tries the next.
#![forbid(unsafe_code)]

use std::cmp::Reverse;
use std::fmt;

use crate::config::{MultiRack, SegmentPlacement};
pub use crate::demand::Demand;
use crate::model::{ClusterView, Topology, Tray};
use one_rack::plan_one_rack;
use segments::{best_fit_segments, oversized_segments, spread_segments};

/// The topology-relevant part of a job request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRequest {
    pub min_nodes: usize,
    /// Upper bound on nodes; equal to `min_nodes` for `-N n`.
    pub max_nodes: usize,
    /// `--segment`: every group of this many nodes must share a domain.
    pub segment: Option<usize>,
    /// `-w` nodes that must be part of the allocation.
    pub required: Vec<usize>,
    /// What the job needs besides a node count (GPUs, CPUs, task layout).
    pub demand: Demand,
    /// When the job is expected to end (start now plus its time limit), on the clock of
    /// [`ClusterView::busy_until`]; None when unknown (no `end_time` rule then).
    pub ends_at: Option<u32>,
    /// The job's own segment rule (`--spread-segments`, `--consolidate-segments` on Slurm
    /// 25.11+), which overrides `[policy] segment_placement`.
    pub segment_placement: Option<SegmentPlacement>,
}

impl JobRequest {
    pub fn nodes(n: usize) -> JobRequest {
        JobRequest {
            min_nodes: n,
            max_nodes: n,
            segment: None,
            required: Vec::new(),
            demand: Demand::default(),
            ends_at: None,
            segment_placement: None,
        }
    }

    /// A job sized by GPUs alone (`--gpus=g`): Slurm leaves the node count open.
    pub fn gpus(g: u64, max_nodes: usize) -> JobRequest {
        JobRequest {
            min_nodes: 1,
            max_nodes,
            demand: Demand {
                gpus: g,
                cpus: 1,
                trays: 0,
            },
            ..JobRequest::nodes(1)
        }
    }

    /// The fewest trays this job needs on whole free trays of `topo`: its node minimum, or
    /// more when its GPUs, CPUs or task layout need more. Decides "one rack or several".
    pub fn trays_needed(&self, topo: &Topology) -> usize {
        self.min_nodes.max(self.demand.trays_at(topo.full_tray))
    }

    pub fn segmented(n: usize, segment: usize) -> JobRequest {
        JobRequest {
            segment: Some(segment),
            ..JobRequest::nodes(n)
        }
    }

    /// How this job's segments are placed: its own rule, else the policy's.
    pub fn segment_rule(&self, topo: &Topology) -> SegmentPlacement {
        self.segment_placement
            .unwrap_or(topo.policy.segment_placement)
    }

    /// A node range or an open node count: Slurm decides how many nodes within the set.
    pub fn is_flexible(&self) -> bool {
        self.max_nodes > self.min_nodes && self.segment.is_none()
    }
}

/// Why a job cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reject {
    /// No state of the cluster could ever satisfy the request (rejected at submission).
    Never(String),
    /// Not enough suitable free trays right now (the job waits).
    NotNow(String),
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reject::Never(m) => write!(f, "never runnable: {m}"),
            Reject::NotNow(m) => write!(f, "not now: {m}"),
        }
    }
}

/// A set of nodes offered to Slurm's selection for one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub nodes: Vec<usize>,
    /// True when every node is meant to be allocated; false when Slurm picks within the set.
    pub exact: bool,
    /// `(domain, nodes placed there)`, in the order the pieces were chosen.
    pub pieces: Vec<(usize, usize)>,
}

impl Placement {
    /// "rack1:4+rack2:4" for log lines.
    pub fn describe(&self, topo: &Topology) -> String {
        let parts: Vec<String> = self
            .pieces
            .iter()
            .map(|&(d, n)| format!("{}:{}", topo.racks[d].name, n))
            .collect();
        parts.join("+")
    }
}

/// The free trays of one domain, counted without materialising them: only the racks a plan
/// actually uses get a node list (see [`Ctx::take`]), which keeps a decision on 278 racks cheap.
#[derive(Clone)]
struct Hole {
    domain: usize,
    /// Trays offered to the job.
    free: usize,
    /// Some trays are busy, excluded or unavailable: not a whole healthy rack.
    broken: bool,
    /// How many `-w` nodes lie in this domain.
    required: usize,
    /// The free trays' node weights added up (0 without weights): the last tie-break
    /// before configuration order, so that lighter racks go first.
    weight: u64,
}

/// What a plan needs to look at: the racks, the trays' states and the `-w` nodes.
struct Ctx<'a> {
    topo: &'a Topology,
    view: &'a ClusterView,
    required: &'a [usize],
    /// The job is sized by GPUs or CPUs: offer the trays with the most of them first, as
    /// [`Ctx::need`] counted them (most GPUs, then most CPUs). `need` counts GPUs and CPUs
    /// separately, so a job short of both on shared trays may get trays that hold its GPUs but
    /// not its CPUs; Slurm then refuses that rack and the next one is tried.
    by_capacity: bool,
    /// The job asks for no GPUs: rank by most CPUs first, the resource `need` counted.
    by_cpus: bool,
    /// The offered trays differ in weight: lighter trays are taken first, and a plan uses
    /// only the lightest trays that can hold the job (see [`choose`]).
    weighted: bool,
}

impl Ctx<'_> {
    /// One hole per domain, in domain order (`holes[d].domain == d`).
    fn holes(&self) -> Vec<Hole> {
        if self.weighted {
            return self.holes_up_to(u64::MAX);
        }
        let holes = (0..self.topo.racks.len()).map(|d| {
            let free = self.topo.offered_in(d, self.view);
            Hole {
                domain: d,
                free,
                broken: free < self.topo.racks[d].nodes.len(),
                required: 0,
                weight: 0,
            }
        });
        self.count_required(holes.collect())
    }

    /// [`Ctx::holes`] counting only trays of at most weight `cap` as free (required
    /// nodes always count: the job gets them whatever they weigh), with their weights.
    fn holes_up_to(&self, cap: u64) -> Vec<Hole> {
        let light = |n: usize| {
            self.view.tray(n).offered && (self.view.weight(n) <= cap || self.required.contains(&n))
        };
        let holes = (0..self.topo.racks.len()).map(|d| {
            let nodes = &self.topo.racks[d].nodes;
            let (mut free, mut weight) = (0, 0);
            for &n in nodes.iter().filter(|&&n| light(n)) {
                free += 1;
                weight += self.view.weight(n);
            }
            Hole {
                domain: d,
                free,
                broken: self.topo.offered_in(d, self.view) < nodes.len(),
                required: 0,
                weight,
            }
        });
        self.count_required(holes.collect())
    }

    /// Sets each hole's count of `-w` nodes.
    fn count_required(&self, mut holes: Vec<Hole>) -> Vec<Hole> {
        for d in self.required.iter().filter_map(|&n| self.topo.rack_of(n)) {
            holes[d].required += 1;
        }
        holes
    }

    /// The distinct weights of the offered rack trays, lightest first.
    fn weight_tiers(&self) -> Vec<u64> {
        let mut tiers: Vec<u64> = self
            .topo
            .racks
            .iter()
            .flat_map(|d| d.nodes.iter().copied())
            .filter(|&n| self.view.tray(n).offered)
            .map(|n| self.view.weight(n))
            .collect();
        tiers.sort_unstable();
        tiers.dedup();
        tiers
    }

    /// The highest weight among the trays [`Ctx::take`] would give from domain `d`: what a
    /// one-rack choice costs in Slurm's node weights (0 without weights).
    fn weight_of_take(&self, d: usize, k: usize) -> u64 {
        if !self.weighted {
            return 0;
        }
        self.take(d, k)
            .into_iter()
            .map(|n| self.view.weight(n))
            .max()
            .unwrap_or(0)
    }

    /// The first `k` free trays of domain `d`: required nodes first, then (for a job sized by
    /// GPUs or CPUs) the most of them, then the lightest (when weights differ), then trays
    /// already running other jobs (packs shared jobs), then tray order.
    fn take(&self, d: usize, k: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(k);
        self.take_into(d, k, &mut out);
        out
    }

    /// [`Ctx::take`], appending to `out`.
    fn take_into(&self, d: usize, k: usize, out: &mut Vec<usize>) {
        let nodes = &self.topo.racks[d].nodes;
        if self.by_capacity || self.weighted {
            // Required nodes; for a job sized by GPUs or CPUs the most of them (what
            // `Ctx::need` counted, so the trays offered hold what it promised); then the
            // lightest (Slurm's node weight); then trays in use. The sort is stable, so tray
            // order breaks the remaining ties.
            let mut trays: Vec<usize> = nodes
                .iter()
                .copied()
                .filter(|&n| self.view.tray(n).offered)
                .collect();
            let most = |t: &Tray| match (self.by_capacity, self.by_cpus) {
                (false, _) => (0, 0),
                (true, true) => (t.cpus, t.gpus),
                (true, false) => (t.gpus, t.cpus),
            };
            if self.weighted {
                trays.sort_by_key(|&n| {
                    let t = self.view.tray(n);
                    let required = self.required.contains(&n);
                    (
                        !required,
                        Reverse(most(&t)),
                        self.view.weight(n),
                        !t.allocated,
                    )
                });
            } else if self.by_cpus {
                trays.sort_by_key(|&n| {
                    let t = self.view.tray(n);
                    (
                        !self.required.contains(&n),
                        Reverse((t.cpus, t.gpus)),
                        !t.allocated,
                    )
                });
            } else {
                trays.sort_by_key(|&n| {
                    let t = self.view.tray(n);
                    (
                        !self.required.contains(&n),
                        Reverse((t.gpus, t.cpus)),
                        !t.allocated,
                    )
                });
            }
            out.extend(trays.into_iter().take(k));
            return;
        }
        let end = out.len() + k;
        // Three passes over at most a rack's trays beat sorting them: 0 = required,
        // 1 = in use by another job, 2 = idle.
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

    /// An exact placement of `pieces` (domain, nodes), nodes grouped by piece.
    fn materialize(&self, pieces: Vec<(usize, usize)>) -> Placement {
        let mut nodes = Vec::with_capacity(pieces.iter().map(|p| p.1).sum());
        for &(d, k) in &pieces {
            self.take_into(d, k, &mut nodes);
        }
        Placement {
            nodes,
            exact: true,
            pieces,
        }
    }
}

/// Rejects requests that no state of the cluster could satisfy, before any placement work:
/// Slurm turns this into "Requested topology configuration is not available" at submission.
pub fn validate(topo: &Topology, req: &JobRequest) -> Result<(), Reject> {
    let max_rack = topo.max_rack_size();
    let never = |m: String| Err(Reject::Never(m));
    if max_rack == 0 {
        return never("no rack has any node".into());
    }
    if req.min_nodes == 0 {
        return never("the job asks for zero nodes".into());
    }
    if let Some(&n) = req.required.iter().find(|&&n| !topo.in_any_rack(n)) {
        return never(format!("required node {n} belongs to no rack"));
    }
    let named = required_rack_list(topo, req);
    let req_racks = named.len();
    let n = req.trays_needed(topo);
    match req.segment {
        Some(0) => never("segment size 0".into()),
        Some(s) if s > max_rack && !topo.block_25_11_segments => never(format!(
            "segment size {s} exceeds the largest rack ({max_rack} trays)"
        )),
        Some(s) if req.min_nodes % s != 0 => never(format!(
            "{} nodes cannot be split into segments of {s}",
            req.min_nodes
        )),
        Some(s) if req.min_nodes > s && !req.required.is_empty() => {
            required_segments_fit(topo, req, s)
        }
        Some(s) if req_racks > 1 && req.min_nodes == s => never(format!(
            "required nodes span {req_racks} racks but the segment must fit one"
        )),
        None if req_racks > 1 && n <= max_rack && req.max_nodes <= max_rack => never(format!(
            "required nodes span {req_racks} racks but {n} nodes fit in one"
        )),
        Some(s) if s > max_rack => {
            // 25.11+: each segment over the fewest racks, as a job larger than a rack.
            let total: usize = topo.racks.iter().map(|d| d.nodes.len()).sum();
            if req.min_nodes > total {
                return never(format!(
                    "{} nodes but the racks hold {total}",
                    req.min_nodes
                ));
            }
            fits_some_racks(topo, s, &[])
        }
        Some(s) if req.segment_rule(topo) == SegmentPlacement::Spread => {
            let count = req.min_nodes / s;
            let racks = topo.racks.iter().filter(|d| d.nodes.len() >= s).count();
            if count > racks {
                never(format!(
                    "{count} segments of {s}, each in its own rack, but {racks} racks hold {s} trays"
                ))
            } else {
                Ok(())
            }
        }
        Some(s) => {
            let count = req.min_nodes / s;
            let room: usize = topo.racks.iter().map(|d| d.nodes.len() / s).sum();
            if count > room {
                never(format!(
                    "{count} segments of {s} do not fit: the racks have room for {room}"
                ))
            } else {
                Ok(())
            }
        }
        None if n > max_rack => fits_some_racks(topo, n, &named),
        None => Ok(()),
    }
}

/// `-w` with several segments. Before Slurm 25.11 never (as topology/block there); from
/// 25.11 the `-w` nodes must be all of the job's nodes, and block then splits them into
/// segments inside blocks, so each rack's share of them must be whole segments.
fn required_segments_fit(topo: &Topology, req: &JobRequest, s: usize) -> Result<(), Reject> {
    let never = |m: String| Err(Reject::Never(m));
    if !topo.block_25_11_segments {
        return never("required nodes cannot be combined with more than one segment".into());
    }
    if req.required.len() < req.min_nodes {
        return never(format!(
            "{} nodes in segments but -w names only {}: with several segments -w must name every node",
            req.min_nodes,
            req.required.len()
        ));
    }
    for d in required_rack_list(topo, req) {
        let here = req
            .required
            .iter()
            .filter(|&&n| topo.rack_of(n) == Some(d))
            .count();
        if here % s != 0 {
            return never(format!(
                "-w names {here} nodes in {}, not whole segments of {s}",
                topo.racks[d].name
            ));
        }
    }
    Ok(())
}

/// How many racks hold the request's `-w` nodes.
fn required_racks(topo: &Topology, req: &JobRequest) -> usize {
    required_rack_list(topo, req).len()
}

/// The racks holding the request's `-w` nodes, sorted, each once.
fn required_rack_list(topo: &Topology, req: &JobRequest) -> Vec<usize> {
    let mut d: Vec<usize> = req
        .required
        .iter()
        .filter_map(|r| topo.rack_of(*r))
        .collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// A job larger than a rack: it must fit all racks together, and with
/// `multi_rack = "fewest-racks"` the racks it may get: the racks of its `-w` nodes (`named`)
/// plus the largest others, `max(ceil(n / largest rack), named racks)` racks in all (the
/// rule of `with_required_racks`).
fn fits_some_racks(topo: &Topology, n: usize, named: &[usize]) -> Result<(), Reject> {
    let size = |d: usize| topo.racks[d].nodes.len();
    let total: usize = (0..topo.racks.len()).map(size).sum();
    if n > total {
        return Err(Reject::Never(format!(
            "{n} nodes but the racks hold {total}"
        )));
    }
    let k = n.div_ceil(topo.max_rack_size()).max(named.len());
    let mut others: Vec<usize> = (0..topo.racks.len())
        .filter(|d| !named.contains(d))
        .map(size)
        .collect();
    others.sort_unstable_by(|a, b| b.cmp(a));
    let largest: usize = named.iter().map(|&d| size(d)).sum::<usize>()
        + others.iter().take(k - named.len()).sum::<usize>();
    if topo.policy.multi_rack == MultiRack::FewestRacks && largest < n {
        let with = if named.is_empty() {
            ""
        } else {
            " holding the -w nodes"
        };
        return Err(Reject::Never(format!(
            "{n} nodes do not fit the {k} largest racks{with} ({largest} trays; multi_rack = \"fewest-racks\")"
        )));
    }
    Ok(())
}

/// One ranked choice of a [`Plan`], kept small until it is tried.
#[derive(Debug, Clone)]
enum Choice {
    /// `take` trays of one rack (all its free trays when the job is flexible).
    Rack { domain: usize, take: usize },
    /// Pieces `(domain, nodes)` over several racks.
    Pieces(Vec<(usize, usize)>),
}

/// Ranked node sets for one job, best first. Node lists are built only for the choices that
/// are tried ([`Plan::placement`]): a job may be offered every rack of a large cluster, and
/// usually the first one is taken.
pub struct Plan<'a> {
    ctx: Ctx<'a>,
    choices: Vec<Choice>,
    /// Every node of a choice is meant to be allocated (false: Slurm picks within the set).
    exact: bool,
    /// Trays the job needs on whole free trays (see [`JobRequest::trays_needed`]).
    pub trays_needed: usize,
}

impl Plan<'_> {
    pub fn len(&self) -> usize {
        self.choices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.choices.is_empty()
    }

    /// The `i`-th best node set.
    pub fn placement(&self, i: usize) -> Placement {
        match &self.choices[i] {
            &Choice::Rack { domain, take } => Placement {
                nodes: self.ctx.take(domain, take),
                exact: self.exact,
                pieces: vec![(domain, take)],
            },
            Choice::Pieces(pieces) => Placement {
                exact: self.exact,
                ..self.ctx.materialize(pieces.clone())
            },
        }
    }

    fn new<'a>(ctx: Ctx<'a>, choices: Vec<Choice>, exact: bool, trays_needed: usize) -> Plan<'a> {
        Plan {
            ctx,
            choices,
            exact,
            trays_needed,
        }
    }
}

/// Chooses node sets for `req`, best first: every node set, built (tests, tools). The plugin
/// uses [`choose`], which builds only the sets it tries.
pub fn plan(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
) -> Result<Vec<Placement>, Reject> {
    let plan = choose(topo, view, req)?;
    Ok((0..plan.len()).map(|i| plan.placement(i)).collect())
}

/// Ranks node sets for `req`. Never returns an empty plan on `Ok`.
pub fn choose<'a>(
    topo: &'a Topology,
    view: &'a ClusterView,
    req: &'a JobRequest,
) -> Result<Plan<'a>, Reject> {
    validate(topo, req)?;
    let max_rack = topo.max_rack_size();
    if req.required.iter().any(|&n| !view.tray(n).offered) {
        return Err(Reject::NotNow("a required node is not available".into()));
    }
    let ctx = Ctx {
        topo,
        view,
        required: &req.required,
        by_capacity: req.segment.is_none() && req.demand.binds(req.min_nodes),
        by_cpus: req.demand.gpus == 0,
        weighted: view.weighted(),
    };
    let n = req.trays_needed(topo);
    let one_rack = n <= max_rack && required_racks(topo, req) <= 1;
    let (choices, exact) = match req.segment {
        Some(s) if req.min_nodes == s && s <= max_rack => {
            let holes = ctx.holes();
            (plan_one_rack(&ctx, &holes, &JobRequest::nodes(s))?, true)
        }
        None if one_rack => {
            let holes = ctx.holes();
            (plan_one_rack(&ctx, &holes, req)?, !req.is_flexible())
        }
        _ => (
            vec![Choice::Pieces(lightest_pieces(&ctx, req, n)?)],
            !req.is_flexible(),
        ),
    };
    Ok(Plan::new(ctx, choices, exact, n))
}

/// A job larger than a rack, without `--segment`, under `multi_rack = "fewest-racks"`: the
/// tightest set of `ceil(n / largest rack)` racks (inside one rack group when possible), or
/// wait. With `-w` nodes the racks holding them are part of the set and filled first; the
/// rest of the job goes to the tightest set of further racks, and the job waits when that
/// needs more racks than the fewest possible.
fn plan_fewest_racks(ctx: &Ctx, holes: &[Hole], n: usize) -> Result<Vec<(usize, usize)>, Reject> {
    let topo = ctx.topo;
    let max_rack = topo.max_rack_size();
    let fewest = n.div_ceil(max_rack);
    let wait = || {
        Reject::NotNow(format!(
            "no {fewest} racks have {n} free trays together (multi_rack = \"fewest-racks\")"
        ))
    };
    let tightest = |members: &[&Hole], n: usize| {
        fewest_racks::tightest_set(members, n, max_rack, topo.policy.prefer_degraded)
    };
    if !ctx.required.is_empty() {
        return with_required_racks(holes, n, fewest, tightest).ok_or_else(wait);
    }
    let free_of = |pieces: &Vec<(usize, usize)>| -> usize {
        pieces.iter().map(|&(d, _)| holes[d].free).sum()
    };
    let mut best = None;
    if topo.policy.prefer_same_group {
        best = holes_by_group(topo, holes)
            .iter()
            .filter_map(|members| tightest(members, n))
            .min_by_key(free_of);
    }
    if best.is_none() {
        let all: Vec<&Hole> = holes.iter().collect();
        best = tightest(&all, n);
    }
    best.ok_or_else(wait)
}

/// Fewest racks with `-w` nodes: every rack holding a required node is used and filled first
/// (required trays come first in [`Ctx::take`]); what is left goes to the tightest set of the
/// other racks. None when that takes more than `max(fewest, racks named by -w)` racks.
fn with_required_racks(
    holes: &[Hole],
    n: usize,
    fewest: usize,
    tightest: impl Fn(&[&Hole], usize) -> Option<Vec<(usize, usize)>>,
) -> Option<Vec<(usize, usize)>> {
    // Each named rack first gets its `-w` trays, then fills up with the rest of the job.
    let named: Vec<&Hole> = holes.iter().filter(|h| h.required > 0).collect();
    let mut left = n.checked_sub(named.iter().map(|h| h.required).sum())?;
    let mut pieces: Vec<(usize, usize)> = named.iter().map(|h| (h.domain, h.required)).collect();
    for (h, piece) in named.iter().zip(pieces.iter_mut()) {
        let extra = (h.free - h.required).min(left);
        piece.1 += extra;
        left -= extra;
    }
    let forced = pieces.len();
    if left > 0 {
        let rest: Vec<&Hole> = holes.iter().filter(|h| h.required == 0).collect();
        pieces.extend(tightest(&rest, left)?);
    }
    (pieces.len() <= fewest.max(forced)).then_some(pieces)
}

/// The holes of each rack group, groups in name order (`holes[d]` is domain `d`'s).
fn holes_by_group<'h>(topo: &Topology, holes: &'h [Hole]) -> Vec<Vec<&'h Hole>> {
    topo.groups
        .iter()
        .map(|(_, members)| members.iter().map(|&d| &holes[d]).collect())
        .collect()
}

/// The pieces of a job that takes several racks (larger than a rack, or several segments),
/// from the lightest trays that can hold it: with weights, the plan is made on the trays of
/// at most weight `w` for the least `w` that works (a binary search: more trays never make a
/// plan fail), so heavier trays are used only when the lighter ones cannot hold the job.
fn lightest_pieces(ctx: &Ctx, req: &JobRequest, n: usize) -> Result<Vec<(usize, usize)>, Reject> {
    let mut best = pieces_for(ctx, &ctx.holes(), req, n)?;
    if !ctx.weighted {
        return Ok(best);
    }
    // The heaviest tier is every offered tray, which works; find the lightest that does.
    let tiers = ctx.weight_tiers();
    let (mut lo, mut hi) = (0, tiers.len().saturating_sub(1));
    while lo < hi {
        let mid = (lo + hi) / 2;
        match pieces_for(ctx, &ctx.holes_up_to(tiers[mid]), req, n) {
            Ok(pieces) => {
                best = pieces;
                hi = mid;
            }
            Err(_) => lo = mid + 1,
        }
    }
    Ok(best)
}

/// The pieces of a multi-rack job or of several segments, on `holes`.
fn pieces_for(
    ctx: &Ctx,
    holes: &[Hole],
    req: &JobRequest,
    n: usize,
) -> Result<Vec<(usize, usize)>, Reject> {
    if let Some(s) = req.segment {
        if !ctx.required.is_empty() {
            // -w names every node (validate): each rack's share is its whole segments.
            let named = holes.iter().filter(|h| h.required > 0);
            return Ok(named.map(|h| (h.domain, h.required)).collect());
        }
        let count = req.min_nodes / s;
        if s > ctx.topo.max_rack_size() {
            return oversized_segments(ctx, holes, count, s);
        }
        return match req.segment_rule(ctx.topo) {
            SegmentPlacement::BestFit => best_fit_segments(ctx, holes, count, s),
            SegmentPlacement::Consolidate => plan_spread(ctx, holes, count, s),
            SegmentPlacement::Spread => spread_segments(ctx, holes, count, s),
        };
    }
    let mut pieces = match ctx.topo.policy.multi_rack {
        MultiRack::FewestRacks => plan_fewest_racks(ctx, holes, n)?,
        MultiRack::StartNow => plan_spread(ctx, holes, n, 1)?,
    };
    if req.is_flexible() {
        // Slurm picks the count (lightest trays first, as it orders them): offer every
        // free tray of the chosen racks, so that trays with fewer GPUs or CPUs left do not
        // make the set fall short.
        for (d, k) in &mut pieces {
            *k = ctx.topo.offered_in(*d, ctx.view);
        }
    }
    Ok(pieces)
}

/// Best fit, then (by policy) racks that are already broken, then lighter racks, then
/// configuration order.
fn fit_key(topo: &Topology, h: &Hole, leftover: usize) -> (usize, bool, u64, usize) {
    (leftover, h.keep_whole(topo), h.weight, h.domain)
}

impl Hole {
    /// The `prefer_degraded` tie-break: a whole healthy rack goes after broken ones.
    fn keep_whole(&self, topo: &Topology) -> bool {
        topo.policy.prefer_degraded && !self.broken
    }
}

/// Places `units` groups of `unit` nodes (each group inside one domain) in as few domains as
/// possible: fullest domains first, the remainder into the best-fitting one. With rack groups,
/// a plan inside one group wins when it needs no more racks than the global plan.
fn plan_spread(
    ctx: &Ctx,
    holes: &[Hole],
    units: usize,
    unit: usize,
) -> Result<Vec<(usize, usize)>, Reject> {
    let topo = ctx.topo;
    let all: Vec<&Hole> = holes.iter().collect();
    let global = spread_within(topo, &all, units, unit, ctx.required.len()).ok_or_else(|| {
        Reject::NotNow(format!(
            "not enough free trays for {units} x {unit} nodes in whole pieces"
        ))
    })?;
    let mut best = global;
    if topo.policy.prefer_same_group {
        let in_group = holes_by_group(topo, holes)
            .iter()
            .filter_map(|members| spread_within(topo, members, units, unit, ctx.required.len()))
            .filter(|p| p.len() <= best.len())
            .min_by_key(|p| p.len());
        if let Some(p) = in_group {
            best = p;
        }
    }
    Ok(best)
}

/// The pieces `(domain, nodes)` of a fewest-domains plan over `holes`, or None if it cannot
/// be done. `required` is how many `-w` nodes there are; all must be covered.
fn spread_within(
    topo: &Topology,
    holes: &[&Hole],
    units: usize,
    unit: usize,
    required: usize,
) -> Option<Vec<(usize, usize)>> {
    let forced: Vec<&Hole> = holes.iter().copied().filter(|h| h.required > 0).collect();
    if forced.iter().map(|h| h.required).sum::<usize>() < required {
        return None; // some `-w` rack is not among these holes
    }
    let capacity = |h: &Hole| h.free / unit;
    // Racks named by `-w` are used anyway: first give each enough units for its required
    // nodes (they come first in `Ctx::take`), then fill them before opening other racks.
    let mut rem = units;
    let mut granted: Vec<(&Hole, usize)> = Vec::new();
    for h in forced {
        let need = h.required.div_ceil(unit).max(1);
        if need > capacity(h) || need > rem {
            return None;
        }
        granted.push((h, need));
        rem -= need;
    }
    for (h, k) in granted.iter_mut() {
        let extra = (capacity(h) - *k).min(rem);
        *k += extra;
        rem -= extra;
    }
    let mut pieces: Vec<(usize, usize)> =
        granted.iter().map(|(h, k)| (h.domain, k * unit)).collect();
    let mut rest: Vec<&Hole> = holes
        .iter()
        .copied()
        .filter(|h| h.required == 0 && capacity(h) > 0)
        .collect();
    rest.sort_unstable_by_key(|h| (Reverse(capacity(h)), h.broken, h.weight, h.domain));
    let mut next = 0;
    while rem > 0 {
        let last = rest[next..]
            .iter()
            .filter(|h| capacity(h) >= rem)
            .min_by_key(|h| fit_key(topo, h, capacity(h) - rem));
        if let Some(h) = last {
            pieces.push((h.domain, rem * unit));
            rem = 0;
        } else if next < rest.len() {
            let h = rest[next];
            next += 1;
            pieces.push((h.domain, capacity(h) * unit));
            rem -= capacity(h);
        } else {
            return None;
        }
    }
    Some(pieces)
}

mod fewest_racks;
mod one_rack;
#[doc(hidden)]
pub mod reference;
mod segments;
#[cfg(test)]
mod tests;
