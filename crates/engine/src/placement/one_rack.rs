//! Jobs that fit one rack: how many of a rack's trays a job needs (its GPUs, CPUs and task
//! layout, on what each tray offers it now), and every rack that can hold it, ranked by best
//! fit on that need, or with `[policy] end_time` also by when the rack would come free.

use super::room::{Ctx, Room};
use super::{JobRequest, Piece, Reject, WaitReason};
use crate::config::EndTime;
use std::ops::Range;

use crate::tray::{Holding, RackTally, Tray};

impl Ctx<'_> {
    /// The fewest offered trays of `h`'s rack that could meet the request: its node
    /// minimum, or more when its GPUs, CPUs or task layout need more, counted on what each
    /// tray offers this job now (largest first). None when the rack cannot hold it.
    fn need(&self, h: &Room, req: &JobRequest, scratch: &mut Vec<u16>) -> Option<usize> {
        let base = req.min_nodes.max(req.demand.trays);
        if base > h.free || base > req.max_nodes {
            return None;
        }
        if !req.demand.binds(req.min_nodes) {
            return Some(base);
        }
        // What the rack's trays hold: the view's count, or one look at its trays.
        let held = self.view.tally(self.topo, h.rack);
        let (held_gpus, held_cpus) = (held.gpus, held.cpus);
        let gpus = self.fewest(h.rack, req.demand.gpus, held_gpus, |t| t.gpus, scratch)?;
        // Every offered tray has a CPU, so `base` trays cover up to `base` CPUs.
        let cpus = if req.demand.cpus <= base as u64 {
            0
        } else {
            self.fewest(h.rack, req.demand.cpus, held_cpus, |t| t.cpus, scratch)?
        };
        let need = base.max(gpus).max(cpus);
        (need <= req.max_nodes).then_some(need)
    }

    /// The fewest offered trays of rack `d` whose `amount` adds up to `total`, or None.
    /// No look at the trays when they hold alike (the usual case: whole free trays); a sort
    /// of at most a rack's values only when they differ (shared trays).
    fn fewest(
        &self,
        d: usize,
        total: u64,
        held: Holding,
        amount: impl Fn(&Tray) -> u16,
        scratch: &mut Vec<u16>,
    ) -> Option<usize> {
        if total == 0 {
            return Some(0);
        }
        if held.total < total {
            return None;
        }
        if held.least == held.most {
            return usize::try_from(total.div_ceil(u64::from(held.most))).ok();
        }
        scratch.clear();
        self.view.for_each_tray(self.topo, d, |t| {
            if t.offered {
                scratch.push(amount(&t));
            }
        });
        scratch.sort_unstable_by(|a, b| b.cmp(a));
        let mut acc = 0u64;
        scratch
            .iter()
            .position(|&v| {
                acc += u64::from(v);
                acc >= total
            })
            .map(|i| i + 1)
    }

    /// The `end_time` rule and the job's end, when the policy, the job and the view all
    /// have what it needs.
    fn end_time_rule(&self, req: &JobRequest) -> Option<(EndTime, u32)> {
        let rule = self.topo.policy.end_time;
        let known = !self.view.busy_until.is_empty();
        (rule != EndTime::Off && known)
            .then_some(rule)
            .zip(req.ends_at)
    }

    /// How many minutes longer rack `d` stays from becoming whole if a job ending at
    /// `ends_at` runs there: past the latest expected end of the jobs already on it.
    fn delay_minutes(&self, d: usize, ends_at: u32) -> u64 {
        let busy = &self.view.busy_until;
        let release = match self.topo.node_range(d).and_then(|r| busy.get(r)) {
            Some(ends) => ends.iter().copied().fold(self.view.now, u32::max),
            None => self.topo.racks[d]
                .nodes
                .iter()
                .map(|&n| self.view.busy_until(n))
                .fold(self.view.now, u32::max),
        };
        (u64::from(ends_at.saturating_sub(release)) / 60).min(MAX_DELAY_MINUTES)
    }

    /// [`Room::fit_key`] in one integer, with the end-time rule's `delay` (minutes): `off`
    /// and `tie-break` rank by leftover, then delay (0 when off); `align` by leftover
    /// weighed at `end_time_hours_per_tray` hours per tray plus delay. Keep-whole and rack
    /// order break the remaining ties; weights are a stable sort after it
    /// ([`plan_one_rack`]), by the trays this job would get rather than the rack's sum.
    fn ranking_key(&self, h: &Room, leftover: usize, rule: EndTime, delay: u64) -> u64 {
        let tail = (u64::from(h.keep_whole(self.topo)) << 32) | h.rack as u64;
        // Bits 53-63: at most 2047, above any rack (MAX_TRAYS_PER_RACK).
        let leftover = (leftover as u64).min(2047);
        match rule {
            EndTime::Align => {
                let per_tray = u64::from(self.topo.policy.end_time_hours_per_tray) * 60;
                let cost = (leftover * per_tray + delay).min((1 << 30) - 1);
                (cost << 33) | tail
            }
            _ => (leftover << 53) | (delay << 33) | tail,
        }
    }
}

/// A job that fits one rack: every rack that could hold it, best fit first. A rack holds it
/// when it has every `-w` node and enough offered trays for [`Ctx::need`]; best fit is on
/// the trays left over after that need, so a `--gpus=8` job is ranked as the two trays it
/// takes, not as the one node Slurm asks for. Every fitting rack is offered (Slurm's own
/// check of cores, GPUs and memory is the last word), so the job never waits while a rack
/// could hold it, and it is never spread over racks.
pub(super) fn plan_one_rack(
    ctx: &Ctx,
    rooms: impl Iterator<Item = Room>,
    req: &JobRequest,
) -> Result<Vec<Piece>, Reject> {
    let mut scratch = Vec::new();
    let timed = ctx.end_time_rule(req);
    if timed.is_none() && !ctx.weighted && ctx.required.is_empty() {
        return by_best_fit(ctx, req, &mut scratch);
    }
    // (packed best-fit key, trays to offer, trays needed) of a rack that holds the job.
    let rank = |h: &Room, scratch: &mut Vec<u16>| {
        let need = ctx.need(h, req, scratch)?;
        let take = if req.is_flexible() { h.free } else { need };
        let (rule, delay) = match timed {
            Some((rule, ends_at)) => (rule, ctx.delay_minutes(h.rack, ends_at)),
            None => (EndTime::Off, 0),
        };
        Some((
            ctx.ranking_key(h, h.free - need, rule, delay),
            take as u32,
            need,
        ))
    };
    let offered = rooms.filter(|h| h.required == ctx.required.len());
    // (packed best-fit key, trays to offer): small items, so ranking every rack of a large
    // cluster stays cheap.
    let mut fits: Vec<(u64, u32)>;
    if ctx.weighted {
        // Lighter racks first, as Slurm uses the lowest-weight nodes first: the heaviest
        // tray the job would get there. A stable sort after best fit, so best fit decides
        // among racks of equal weight.
        let mut weights = vec![0u64; ctx.topo.racks.len()];
        fits = offered
            .filter_map(|h| {
                let (key, take, need) = rank(&h, &mut scratch)?;
                weights[h.rack] = ctx.weight_of_take(h.rack, need);
                Some((key, take))
            })
            .collect();
        fits.sort_unstable_by_key(|&(key, _)| key);
        fits.sort_by_key(|&(key, _)| weights[rack_of(key)]);
    } else {
        fits = offered
            .filter_map(|h| rank(&h, &mut scratch).map(|(key, take, _)| (key, take)))
            .collect();
        fits.sort_unstable_by_key(|&(key, _)| key);
    }
    if fits.is_empty() {
        let n = req.trays_needed(ctx.topo);
        return Err(Reject::NotNow(WaitReason::NoRackRoom {
            trays: n,
            demand: req.demand.clone(),
        }));
    }
    Ok(fits.iter().map(|&fit| piece(fit)).collect())
}

/// The racks that can hold a job that fits one, read off the view's free index
/// ([`crate::free_index::FreeIndex`]) when the job needs the same trays in every rack: a node
/// count, or GPUs and CPUs on trays that all hold alike (whole free trays). Those racks are
/// then the ones offering at least that need, one range of the index already in
/// [`by_best_fit`]'s order, and a decision reads only the racks it tries. `None` when the
/// view has no index, or the rule or the trays ask for a rack-by-rack ranking.
pub(super) fn by_free_index(ctx: &Ctx, req: &JobRequest) -> Option<Result<IndexedFits, Reject>> {
    let index = &ctx.view.free_index;
    let plain = ctx.end_time_rule(req).is_none() && !ctx.weighted && ctx.required.is_empty();
    if !index.is_built() || !plain || req.min_nodes == 0 {
        return None;
    }
    let base = req.min_nodes.max(req.demand.trays);
    let need = if req.demand.binds(req.min_nodes) {
        if !index.alike() {
            return None;
        }
        alike_need(req, base, &index.held)
    } else {
        Some(base)
    };
    let at = need
        .filter(|&n| n <= req.max_nodes)
        .map(|n| (index.at_least(n), n));
    Some(match at {
        Some((at, need)) if !at.is_empty() => Ok(IndexedFits {
            at,
            trays: (!req.is_flexible()).then_some(need),
        }),
        _ => Err(Reject::NotNow(WaitReason::NoRackRoom {
            trays: req.trays_needed(ctx.topo),
            demand: req.demand.clone(),
        })),
    })
}

/// The racks that hold a one-rack job, as positions of the view's free index, best fit
/// first.
#[derive(Debug, Clone)]
pub(super) struct IndexedFits {
    pub at: Range<usize>,
    /// What each rack is offered: `trays` trays, or (`None`, a flexible job) all its free
    /// trays.
    pub trays: Option<usize>,
}

/// [`Ctx::need`] on any rack when every offered tray holds what `held` says (its least is
/// its most): the same for every rack that has that many trays; `None` when no rack can
/// meet the demand.
fn alike_need(req: &JobRequest, base: usize, held: &RackTally) -> Option<usize> {
    let trays_for = |total: u64, each: u16| match (total, each) {
        (0, _) => Some(0),
        (_, 0) => None,
        (total, each) => usize::try_from(total.div_ceil(u64::from(each))).ok(),
    };
    let gpus = trays_for(req.demand.gpus, held.gpus.most)?;
    // Every offered tray has a CPU, so `base` trays cover up to `base` CPUs.
    let cpus = if req.demand.cpus <= base as u64 {
        0
    } else {
        trays_for(req.demand.cpus, held.cpus.most)?
    };
    Some(base.max(gpus).max(cpus))
}

/// [`plan_one_rack`] in the usual case, no `-w`, no node weights and no end-time rule: the
/// ranking is best fit, then keep-whole, then rack order, so one pass over the racks counts
/// each fitting rack into its (leftover, keep-whole) bucket and a second places the pieces
/// bucket by bucket, in rack order within each. No per-rack record and no sort: this is the
/// decision most jobs of a large cluster take, over every rack.
fn by_best_fit(ctx: &Ctx, req: &JobRequest, scratch: &mut Vec<u16>) -> Result<Vec<Piece>, Reject> {
    let (topo, view) = (ctx.topo, ctx.view);
    let base = req.min_nodes.max(req.demand.trays);
    let binds = req.demand.binds(req.min_nodes);
    let flexible = req.is_flexible();
    let keep_whole = topo.policy.prefer_degraded;
    let mut starts = vec![0u32; 2 * (topo.max_rack_size().min(2047) + 1) + 1];
    // (rack, trays to offer, bucket) of each rack that holds the job, in rack order.
    let mut fits: Vec<(u32, u32, u32)> = Vec::with_capacity(topo.racks.len());
    if base <= req.max_nodes {
        for rack in 0..topo.racks.len() {
            let free = view.offered_in(topo, rack);
            if free < base {
                continue;
            }
            let whole = free == topo.rack_size(rack);
            let need = if binds {
                let room = Room {
                    rack,
                    free,
                    whole,
                    required: 0,
                    weight: 0,
                };
                match ctx.need(&room, req, scratch) {
                    Some(need) => need,
                    None => continue,
                }
            } else {
                base
            };
            let take = if flexible { free } else { need };
            let bucket = ((free - need).min(2047) << 1) | usize::from(keep_whole && whole);
            starts[bucket + 1] += 1;
            fits.push((rack as u32, take as u32, bucket as u32));
        }
    }
    if fits.is_empty() {
        return Err(Reject::NotNow(WaitReason::NoRackRoom {
            trays: req.trays_needed(topo),
            demand: req.demand.clone(),
        }));
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let mut pieces = vec![Piece { rack: 0, trays: 0 }; fits.len()];
    for (rack, take, bucket) in fits {
        let slot = &mut starts[bucket as usize];
        pieces[*slot as usize] = Piece {
            rack: rack as usize,
            trays: take as usize,
        };
        *slot += 1;
    }
    Ok(pieces)
}

/// The piece of one ranked fit.
fn piece((key, take): (u64, u32)) -> Piece {
    Piece {
        rack: rack_of(key),
        trays: take as usize,
    }
}

/// The rack of a packed ranking key (its low 32 bits).
fn rack_of(key: u64) -> usize {
    (key & u64::from(u32::MAX)) as usize
}

/// Largest delay, in minutes, that the end-time keys tell apart (about two years).
const MAX_DELAY_MINUTES: u64 = (1 << 20) - 1;
