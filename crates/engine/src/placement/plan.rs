//! The engine's answer for one job: ranked alternatives ([`Plan`]), each a node set
//! ([`Placement`]) made of pieces, one per rack ([`Piece`]), built only when tried.

use super::balanced::plan_balanced;
use super::fewest_racks::Cuts;
use super::multi_rack::{plan_fewest_racks, plan_start_now};
use super::one_rack::{by_free_index, plan_one_rack, IndexedFits};
use super::piece::{Piece, Placement};
use super::rack_limit;
use super::rack_order::Racks;
use super::room::Ctx;
use super::segments::{best_fit_segments, oversized_segments, spread_segments};
use super::validate::{required_rack_list, validate};
use super::{JobRequest, RackLimit, Reject, WaitReason};
use crate::config::{MultiRack, SegmentPlacement};
use crate::topology::Topology;
use crate::view::ClusterView;

/// The ranked alternatives of a [`Plan`], kept small until they are tried.
#[derive(Debug, Clone)]
enum Alternatives {
    /// Each one rack's piece (all its free trays when the job is flexible): a job may be
    /// offered every rack of a large cluster.
    OneRack(Vec<Piece>),
    /// Racks read off the view's free index.
    Indexed(IndexedFits),
    /// Each a node set over several racks.
    Pieces(Vec<Vec<Piece>>),
}

/// Ranked node sets for one job, best first. Node lists are built only for the alternatives
/// that are tried ([`Plan::placement`]): a job may be offered every rack of a large
/// cluster, and usually the first one is taken.
pub struct Plan<'a> {
    ctx: Ctx<'a>,
    alternatives: Alternatives,
    /// Every node of an alternative is meant to be allocated (false: Slurm picks within it).
    exact: bool,
    /// Trays the job needs on whole free trays (see [`JobRequest::trays_needed`]).
    pub trays_needed: usize,
}

impl Plan<'_> {
    pub fn len(&self) -> usize {
        match &self.alternatives {
            Alternatives::OneRack(fits) => fits.len(),
            Alternatives::Indexed(fits) => fits.at.len(),
            Alternatives::Pieces(sets) => sets.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th best node set.
    pub fn placement(&self, i: usize) -> Placement {
        match self.piece(i) {
            Ok(piece) => Placement {
                nodes: self.ctx.take(piece.rack, piece.trays),
                exact: self.exact,
                pieces: vec![piece],
            },
            Err(set) => Placement {
                exact: self.exact,
                ..self.ctx.materialize(set.clone())
            },
        }
    }

    /// The `i`-th alternative's piece when it takes one rack, else its pieces.
    fn piece(&self, i: usize) -> Result<Piece, &Vec<Piece>> {
        let (topo, view) = (self.ctx.topo, self.ctx.view);
        match &self.alternatives {
            Alternatives::OneRack(fits) => Ok(fits[i]),
            Alternatives::Indexed(fits) => {
                let rack = view.free_index.rack(fits.at.start + i);
                let trays = fits.trays.unwrap_or_else(|| view.offered_in(topo, rack));
                Ok(Piece { rack, trays })
            }
            Alternatives::Pieces(sets) => Err(&sets[i]),
        }
    }

    /// The `i`-th alternative's one piece and its rack's offered trays, when it takes one
    /// rack, without building its nodes. In one evaluation Slurm only ever drops trays, so
    /// these identify the node set: a rack's trays left are the same trays while their
    /// count is the same.
    pub fn one_rack(&self, i: usize) -> Option<(Piece, usize)> {
        let piece = self.piece(i).ok()?;
        Some((piece, self.ctx.view.offered_in(self.ctx.topo, piece.rack)))
    }

    /// Every node set, built.
    pub fn placements(&self) -> Vec<Placement> {
        (0..self.len()).map(|i| self.placement(i)).collect()
    }
}

/// Every node set for `req`, best first, built (tests, tools). The plugin uses [`plan`],
/// which builds only the sets it tries.
pub fn placements(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
) -> Result<Vec<Placement>, Reject> {
    Ok(plan(topo, view, req)?.placements())
}

/// Ranks node sets for `req`. Never returns an empty plan on `Ok`.
pub fn plan<'a>(
    topo: &'a Topology,
    view: &'a ClusterView,
    req: &'a JobRequest,
) -> Result<Plan<'a>, Reject> {
    validate(topo, req)?;
    let largest = topo.max_rack_size();
    if req.required.iter().any(|&n| !view.tray(n).offered) {
        return Err(Reject::NotNow(WaitReason::RequiredNotOffered));
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
    let fits_one_rack = n <= largest && required_rack_list(topo, req).len() <= 1;
    let over_racks = || {
        lightest_pieces(&ctx, req, n).map(|pieces| {
            let policy = &ctx.topo.policy;
            let cuts = Cuts::of(ctx.topo);
            let shaped = policy.multi_rack == MultiRack::Balanced
                || (req.segment.is_none()
                    && ctx.required.is_empty()
                    && (cuts.multiple > 1 || cuts.cut_on_preferred(&pieces, ctx.topo)));
            (several_racks(&ctx, req, pieces, shaped), !req.is_flexible())
        })
    };
    let planned = match req.segment {
        Some(s) if req.min_nodes == s && s <= largest => {
            one_rack(&ctx, &JobRequest::nodes(s)).map(|a| (a, true))
        }
        // `one-rack-first`: the tightest rack that holds every segment, found as for any job
        // that fits a rack (off the free index); only when none does, over several racks.
        Some(_) if one_rack_first(&ctx, req) => {
            match one_rack(&ctx, &JobRequest::nodes(req.min_nodes)) {
                Err(Reject::NotNow(_)) => over_racks(),
                whole => whole.map(|a| (a, true)),
            }
        }
        None if fits_one_rack => one_rack(&ctx, req).map(|a| (a, !req.is_flexible())),
        _ => over_racks(),
    };
    let (alternatives, exact) = match (planned, req.switches) {
        // A job with a rack limit that cannot start by the rules: spill over more racks
        // when its limit lets it (`rack_limit`).
        (Err(Reject::NotNow(why)), Some(limit)) if req.segment.is_none() => {
            // Spilled pieces are balanced (pieces as large as possible), whatever multi_rack.
            let pieces = rack_limit::spill(&ctx, req, n, limit, why)?;
            (several_racks(&ctx, req, pieces, true), !req.is_flexible())
        }
        (planned, _) => planned?,
    };
    Ok(Plan {
        ctx,
        alternatives,
        exact,
        trays_needed: n,
    })
}

/// Does `req`'s segment rule keep it in one rack when one can hold it? Not with `-w` nodes
/// (the named racks decide) or node weights (light trays first comes first).
fn one_rack_first(ctx: &Ctx, req: &JobRequest) -> bool {
    req.segment_rule(ctx.topo) == SegmentPlacement::OneRackFirst
        && req.min_nodes <= ctx.topo.max_rack_size()
        && ctx.required.is_empty()
        && !ctx.weighted
}

/// Every rack that can hold a job that fits one, best first.
fn one_rack(ctx: &Ctx, req: &JobRequest) -> Result<Alternatives, Reject> {
    if let Some(fits) = by_free_index(ctx, req) {
        return Ok(Alternatives::Indexed(fits?));
    }
    let fits = if ctx.weighted {
        plan_one_rack(ctx, ctx.rooms().into_iter(), req)?
    } else {
        plan_one_rack(ctx, ctx.each_room(), req)?
    };
    Ok(Alternatives::OneRack(fits))
}

/// The pieces of a job that takes several racks (larger than a rack, or several segments),
/// from the lightest trays that can hold it: with weights, the plan is made on the trays of
/// at most weight `w` for the least `w` that works (a binary search: more trays never make a
/// plan fail), so heavier trays are used only when the lighter ones cannot hold the job.
fn lightest_pieces(ctx: &Ctx, req: &JobRequest, n: usize) -> Result<Vec<Piece>, Reject> {
    // The free index stands for every rack's room without weights or `-w` nodes: the rules
    // that take racks best fit first then read only the racks they take.
    if ctx.view.free_index.is_built() && !ctx.weighted && ctx.required.is_empty() {
        return pieces_for(ctx, Racks::Index(ctx), req, n);
    }
    let mut best = pieces_for(ctx, Racks::Rooms(&ctx.rooms()), req, n)?;
    if !ctx.weighted {
        return Ok(best);
    }
    // The heaviest tier is every offered tray, which works; find the lightest that does.
    let tiers = ctx.weight_tiers();
    let (mut lo, mut hi) = (0, tiers.len().saturating_sub(1));
    while lo < hi {
        let mid = (lo + hi) / 2;
        match pieces_for(ctx, Racks::Rooms(&ctx.rooms_up_to(tiers[mid])), req, n) {
            Ok(pieces) => {
                best = pieces;
                hi = mid;
            }
            Err(_) => lo = mid + 1,
        }
    }
    Ok(best)
}

/// The pieces of a multi-rack job or of several segments, on `racks`, within the job's rack
/// limit (`rack_limit::within`: plans over it fall back to the fewest racks, or wait).
fn pieces_for(ctx: &Ctx, racks: Racks, req: &JobRequest, n: usize) -> Result<Vec<Piece>, Reject> {
    let pieces = rule_pieces(ctx, racks, req, n)?;
    match req.switches.and_then(RackLimit::active) {
        Some(most) if pieces.len() > most => {
            rack_limit::within(ctx, &racks.rooms(), req, most, pieces)
        }
        _ => Ok(pieces),
    }
}

/// The pieces the rules give a multi-rack job or several segments, on `racks`: the one
/// place that picks the rule.
fn rule_pieces(ctx: &Ctx, racks: Racks, req: &JobRequest, n: usize) -> Result<Vec<Piece>, Reject> {
    let topo = ctx.topo;
    if let Some((count, s)) = req.segments() {
        if !ctx.required.is_empty() {
            // -w names every node (validate): each rack's share is its whole segments.
            let rooms = racks.rooms();
            return Ok(rooms
                .iter()
                .filter(|r| r.required > 0)
                .map(|r| Piece {
                    rack: r.rack,
                    trays: r.required,
                })
                .collect());
        }
        if s > topo.max_rack_size() {
            return oversized_segments(ctx, &racks.rooms(), count, s);
        }
        return match req.segment_rule(topo) {
            // Here no single rack holds it: the fewest racks.
            SegmentPlacement::OneRackFirst if one_rack_first(ctx, req) => {
                plan_start_now(ctx, &racks.rooms(), count, s)
            }
            SegmentPlacement::OneRackFirst | SegmentPlacement::BestFit => {
                best_fit_segments(ctx, &racks.order(topo), count, s)
            }
            SegmentPlacement::Consolidate => plan_start_now(ctx, &racks.rooms(), count, s),
            SegmentPlacement::Spread => spread_segments(&racks.order(topo), count, s),
        };
    }
    match topo.policy.multi_rack {
        MultiRack::FewestRacks => plan_fewest_racks(ctx, racks, n),
        MultiRack::StartNow => plan_start_now(ctx, &racks.rooms(), n, 1),
        MultiRack::Balanced => plan_balanced(ctx, &racks.rooms(), n),
    }
}

/// The alternatives of a plan over several racks. A job whose count Slurm picks (node ranges,
/// `--gpus`, `-n`) is offered every free tray of the chosen racks, so that trays with fewer
/// GPUs or CPUs left do not make the set fall short. Under `multi_rack = "balanced"` a job
/// whose count its GPUs or CPUs set (more trays than its node minimum) is first offered just
/// the balanced pieces, which its demand fills exactly on whole trays; if Slurm refuses them,
/// the racks' free trays are next, so balancing never makes a job wait. `shaped`: the
/// pieces have a shape to offer first: balanced ones (`multi_rack = "balanced"`, or a spill
/// over its rack limit), or cut between groups of `piece_multiple` trays.
fn several_racks(ctx: &Ctx, req: &JobRequest, pieces: Vec<Piece>, shaped: bool) -> Alternatives {
    if !req.is_flexible() {
        return Alternatives::Pieces(vec![pieces]);
    }
    let every_free_tray: Vec<Piece> = pieces
        .iter()
        .map(|p| Piece {
            rack: p.rack,
            trays: ctx.view.offered_in(ctx.topo, p.rack),
        })
        .collect();
    let sized_by_demand = req.trays_needed(ctx.topo) > req.min_nodes;
    if shaped && sized_by_demand && pieces != every_free_tray {
        Alternatives::Pieces(vec![pieces, every_free_tray])
    } else {
        Alternatives::Pieces(vec![every_free_tray])
    }
}
