//! A brute-force reference for the engine's rules, for property tests and the `placement`
//! fuzz target (`fuzz/`): it tries every subset of racks or trays instead of the engine's
//! shortcuts (the deficit search of `fewest_racks`, the greedy tray count of `Ctx::need`,
//! the bucketed best fit). Exponential: only for small clusters (at most
//! [`MAX_BRUTE_FORCE`] racks, and as many offered tray per rack).
//!
//! Preconditions on the request, as Slurm guarantees them before the plugin is called:
//! `max_nodes >= min_nodes`, `-w` nodes are distinct and at most `min_nodes` of them, and
//! every offered tray offers at least one CPU.

use super::{JobRequest, Piece, Placement};
use crate::config::MultiRack;
use crate::topology::Topology;
use crate::view::ClusterView;

mod limit;

/// Largest number of racks, or of offered tray in one rack, the reference enumerates.
pub const MAX_BRUTE_FORCE: usize = 16;

/// Every subset of `0..len` as a bit mask.
fn subsets(len: usize) -> std::ops::Range<u32> {
    assert!(
        len <= MAX_BRUTE_FORCE,
        "the brute-force reference handles at most {MAX_BRUTE_FORCE} items, got {len}"
    );
    0..1u32 << len
}

fn members<T: Copy>(items: &[T], mask: u32) -> impl Iterator<Item = T> + '_ {
    items
        .iter()
        .enumerate()
        .filter(move |(i, _)| mask >> i & 1 == 1)
        .map(|(_, &x)| x)
}

/// The least total of free trays over every set of exactly `ceil(n / max_rack)` racks
/// whose free trays hold `n` together; None when no such set exists. What
/// `multi_rack = "fewest-racks"` minimises.
pub fn fewest_racks_min_free(free: &[usize], n: usize, max_rack: usize) -> Option<usize> {
    let k = n.div_ceil(max_rack);
    subsets(free.len())
        .filter(|m| m.count_ones() as usize == k)
        .map(|m| members(free, m).sum::<usize>())
        .filter(|&total| total >= n)
        .min()
}

/// The least largest piece over every set of exactly `ceil(n / max_rack)` racks that hold
/// `n` trays when each gives at most that many: what `multi_rack = "balanced"` minimises.
pub fn balanced_min_cap(free: &[usize], n: usize, max_rack: usize) -> Option<usize> {
    balanced_min_cap_over(free, n, n.div_ceil(max_rack), max_rack)
}

/// [`balanced_min_cap`] over sets of exactly `k` racks: what a job spilling past its rack
/// limit minimises on the fewest racks that hold it now.
pub fn balanced_min_cap_over(free: &[usize], n: usize, k: usize, max_rack: usize) -> Option<usize> {
    subsets(free.len())
        .filter(|m| m.count_ones() as usize == k)
        .filter_map(|m| {
            (1..=max_rack).find(|&c| members(free, m).map(|f| f.min(c)).sum::<usize>() >= n)
        })
        .min()
}

/// Offered trays of rack `d`.
pub fn free_trays(topo: &Topology, view: &ClusterView, d: usize) -> usize {
    topo.racks[d]
        .nodes
        .iter()
        .filter(|&&n| view.tray(n).offered)
        .count()
}

/// The fewest of `amounts` that add up to at least `total`, trying every subset.
fn fewest_adding_up(amounts: &[u64], total: u64) -> Option<usize> {
    subsets(amounts.len())
        .filter(|&m| members(amounts, m).sum::<u64>() >= total)
        .map(|m| m.count_ones() as usize)
        .min()
}

/// How many of rack `d`'s offered tray a job that fits one rack needs: its node minimum
/// and task layout, and the fewest trays whose GPUs (and, separately, CPUs) cover its
/// totals; None when the rack cannot hold it or it would need more than `max_nodes`.
/// (What `Ctx::need` computes greedily.)
pub fn one_rack_need(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
    d: usize,
) -> Option<usize> {
    let trays: Vec<_> = topo.racks[d]
        .nodes
        .iter()
        .map(|&n| view.tray(n))
        .filter(|t| t.offered)
        .collect();
    let base = req.min_nodes.max(req.demand.trays);
    if base > trays.len() {
        return None;
    }
    let gpus: Vec<u64> = trays.iter().map(|t| u64::from(t.gpus)).collect();
    let cpus: Vec<u64> = trays.iter().map(|t| u64::from(t.cpus)).collect();
    let need = base
        .max(fewest_adding_up(&gpus, req.demand.gpus)?)
        .max(fewest_adding_up(&cpus, req.demand.cpus)?);
    (need <= req.max_nodes).then_some(need)
}

/// Is every `-w` node of `req` in rack `d`?
fn holds_required(topo: &Topology, req: &JobRequest, d: usize) -> bool {
    req.required.iter().all(|&n| topo.rack_of(n) == Some(d))
}

/// Every rack that can hold a job of one rack right now, with its need, in domain order:
/// it holds every `-w` node and [`one_rack_need`] is met. For a single `--segment` piece
/// the need is the segment size.
pub fn one_rack_fits(topo: &Topology, view: &ClusterView, req: &JobRequest) -> Vec<(usize, usize)> {
    (0..topo.racks.len())
        .filter(|&d| holds_required(topo, req, d))
        .filter_map(|d| match req.segment {
            Some(s) => (free_trays(topo, view, d) >= s).then_some((d, s)),
            None => one_rack_need(topo, view, req, d).map(|need| (d, need)),
        })
        .collect()
}

/// The distinct racks holding `req`'s `-w` nodes (None when one lies outside every rack).
pub fn required_racks(topo: &Topology, req: &JobRequest) -> Option<Vec<usize>> {
    let mut racks = req
        .required
        .iter()
        .map(|&n| topo.rack_of(n))
        .collect::<Option<Vec<usize>>>()?;
    racks.sort_unstable();
    racks.dedup();
    Some(racks)
}

/// Every rack's offered trays, in rack order.
fn frees(topo: &Topology, view: &ClusterView) -> Vec<usize> {
    (0..topo.racks.len())
        .map(|d| free_trays(topo, view, d))
        .collect()
}

/// The fewest racks that include every rack of `named` and whose free trays add up to `n`
/// (None: not even all of them), trying every subset: what a job without segments spills
/// onto, `-w` racks first (`plan_start_now` with pieces of one tray).
pub fn fewest_racks_with(free: &[usize], named: &[usize], n: usize) -> Option<usize> {
    let racks: Vec<usize> = (0..free.len()).collect();
    subsets(free.len())
        .filter(|&m| named.iter().all(|&d| m >> d & 1 == 1))
        .filter(|&m| members(&racks, m).map(|d| free[d]).sum::<usize>() >= n)
        .map(|m| m.count_ones() as usize)
        .min()
}

/// Whether the request is a job of one rack (unsegmented, fits the largest rack, `-w`
/// nodes in at most one rack) in the engine's sense.
pub fn is_one_rack_job(topo: &Topology, req: &JobRequest) -> bool {
    req.segment.is_none()
        && req.trays_needed(topo) <= topo.max_rack_size()
        && required_racks(topo, req).is_some_and(|r| r.len() <= 1)
}

/// Does some placement that follows the engine's rules exist on `view` right now?
///
/// - Every `-w` node lies in a rack and is a candidate; at least one node is requested.
/// - `--segment=s`: `min_nodes` is a multiple of `s`; one segment is a job of one rack of
///   `s` trays; several segments take no `-w` nodes and need `min_nodes / s` pieces of `s`
///   free trays, each inside a rack.
/// - A job of one rack: some rack that holds every `-w` node has its [`one_rack_need`].
/// - Larger (or `-w` nodes in several racks while `max_nodes` exceeds the largest rack):
///   `n` = [`JobRequest::trays_needed`] free trays on a set of racks that includes every rack
///   named by `-w`; with `fewest-racks` that set has at most
///   `max(ceil(n / largest rack), racks named by -w)` racks, with `start-now` any size; a job
///   that fits the largest rack but names several racks with `max_nodes` within it is never
///   runnable.
///
/// With a rack limit (`req.switches`) the placement must also keep to it; see
/// `limit::placement_exists`.
pub fn placement_exists(topo: &Topology, view: &ClusterView, req: &JobRequest) -> bool {
    match req.switches {
        None => placement_exists_by_rules(topo, view, req),
        Some(limit) => limit::placement_exists(topo, view, req, limit),
    }
}

/// [`placement_exists`] without the rack limit.
fn placement_exists_by_rules(topo: &Topology, view: &ClusterView, req: &JobRequest) -> bool {
    let max_rack = topo.max_rack_size();
    let Some(named) = required_racks(topo, req) else {
        return false;
    };
    if max_rack == 0 || req.min_nodes == 0 || req.required.iter().any(|&n| !view.tray(n).offered) {
        return false;
    }
    let free: Vec<usize> = (0..topo.racks.len())
        .map(|d| free_trays(topo, view, d))
        .collect();
    match req.segment {
        Some(0) => false,
        Some(s) if req.min_nodes % s != 0 => false,
        Some(s) if req.min_nodes == s => !one_rack_fits(topo, view, req).is_empty(),
        Some(_) if !req.required.is_empty() => false,
        Some(s) => free.iter().map(|f| f / s).sum::<usize>() >= req.min_nodes / s,
        None if is_one_rack_job(topo, req) => !one_rack_fits(topo, view, req).is_empty(),
        None => {
            let n = req.trays_needed(topo);
            if named.len() > 1 && n <= max_rack && req.max_nodes <= max_rack {
                return false;
            }
            let most_racks = match topo.policy.multi_rack {
                MultiRack::FewestRacks | MultiRack::Balanced => {
                    n.div_ceil(max_rack).max(named.len())
                }
                MultiRack::StartNow => free.len(),
            };
            let racks: Vec<usize> = (0..free.len()).collect();
            subsets(free.len()).any(|m| {
                m.count_ones() as usize <= most_racks
                    && named.iter().all(|&d| m >> d & 1 == 1)
                    && members(&racks, m).map(|d| free[d]).sum::<usize>() >= n
            })
        }
    }
}

/// The fewest racks whose free trays add up to `n` (None: not even all of them), trying
/// every subset: what `multi_rack = "start-now"` uses without `-w` nodes.
pub fn fewest_racks_now(free: &[usize], n: usize) -> Option<usize> {
    subsets(free.len())
        .filter(|&m| members(free, m).sum::<usize>() >= n)
        .map(|m| m.count_ones() as usize)
        .min()
}

/// A view of the same size where every tray is a free, healthy tray offering
/// `topo.full_tray`: what [`super::validate`] calls "some state of the cluster".
pub fn all_free_like(topo: &Topology, view: &ClusterView) -> ClusterView {
    ClusterView {
        trays: vec![crate::tray::Tray::free(topo.full_tray); view.trays.len()],
        ..ClusterView::default()
    }
}

/// `return Err(format!(...))` unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// Runs [`super::placements`] on `req` and checks the result against the engine's invariants
/// and the brute-force reference above; `Err` says which one failed. Used by the property
/// tests and the `placement` fuzz target. Same preconditions as the module.
pub fn check_plan(topo: &Topology, view: &ClusterView, req: &JobRequest) -> Result<(), String> {
    use super::Reject;
    let exists = placement_exists(topo, view, req);
    // Placed only because its rack limit let it spill over more racks than the rules take.
    let spilled = req.segment.is_none()
        && req.switches.is_some()
        && !placement_exists_by_rules(topo, view, req);
    let alts = match super::placements(topo, view, req) {
        Ok(alts) => alts,
        Err(Reject::NotNow(why)) => {
            ensure!(!exists, "waits ({why}) but the reference finds a placement");
            return Ok(());
        }
        Err(Reject::Never(why)) => {
            ensure!(!exists, "never runnable ({why}) but placeable now");
            let empty = all_free_like(topo, view);
            ensure!(
                !placement_exists(topo, &empty, req),
                "never runnable ({why}) but placeable on an empty cluster"
            );
            return Ok(());
        }
    };
    ensure!(exists, "placed but the reference finds no placement");
    ensure!(!alts.is_empty(), "Ok with no alternative");
    for (i, p) in alts.iter().enumerate() {
        check_alternative(topo, view, req, p).map_err(|e| format!("alternative {i}: {e}"))?;
        match req.segment {
            Some(s) => check_segments(req, p, s),
            None if spilled => limit::check_spilled(topo, view, req, p, (i, alts.len())),
            None if is_one_rack_job(topo, req) => check_one_rack(topo, view, req, p),
            None => check_multi_rack(topo, view, req, p, (i, alts.len())),
        }
        .and_then(|()| limit::check_within(req, p))
        .map_err(|e| format!("alternative {i}: {e}"))?;
    }
    if spilled {
        return limit::check_spill_ranking(topo, view, req, &alts);
    }
    check_ranking(topo, view, req, &alts)
}

/// What holds for every alternative: distinct offered nodes, every `-w` node, pieces in
/// distinct racks with their nodes grouped by piece.
fn check_alternative(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
    p: &Placement,
) -> Result<(), String> {
    let mut sorted = p.nodes.clone();
    sorted.sort_unstable();
    sorted.dedup();
    ensure!(sorted.len() == p.nodes.len(), "a node twice: {p:?}");
    for &node in &p.nodes {
        ensure!(view.tray(node).offered, "node {node} is not offered");
    }
    for r in &req.required {
        ensure!(p.nodes.contains(r), "-w node {r} missing: {p:?}");
    }
    let mut seen = 0;
    let mut racks = Vec::new();
    for &Piece { rack: d, trays: k } in &p.pieces {
        ensure!(k > 0 && !racks.contains(&d), "bad pieces {p:?}");
        racks.push(d);
        let Some(piece) = p.nodes.get(seen..seen + k) else {
            return Err(format!("pieces exceed the nodes: {p:?}"));
        };
        ensure!(
            piece.iter().all(|&x| topo.rack_of(x) == Some(d)),
            "a piece leaves its rack: {p:?}"
        );
        seen += k;
    }
    ensure!(seen == p.nodes.len(), "nodes outside the pieces: {p:?}");
    Ok(())
}

fn check_segments(req: &JobRequest, p: &Placement, s: usize) -> Result<(), String> {
    ensure!(p.exact, "segments are exact");
    ensure!(p.nodes.len() == req.min_nodes, "{} nodes", p.nodes.len());
    ensure!(
        p.pieces.iter().all(|p| p.trays % s == 0),
        "a segment spans racks: {p:?}"
    );
    Ok(())
}

/// One rack; exactly the node count, or all free trays for a flexible job; enough GPUs (or
/// CPUs for a job without GPUs).
fn check_one_rack(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
    p: &Placement,
) -> Result<(), String> {
    ensure!(p.pieces.len() == 1, "a one-rack job spans racks: {p:?}");
    let d = p.pieces[0].rack;
    if p.exact {
        ensure!(
            !req.is_flexible() && p.nodes.len() == req.min_nodes,
            "exact with {} nodes for {}..={}",
            p.nodes.len(),
            req.min_nodes,
            req.max_nodes
        );
    } else {
        ensure!(
            req.is_flexible() && p.nodes.len() == free_trays(topo, view, d),
            "a flexible job is offered all free trays of its rack"
        );
    }
    if req.required.is_empty() {
        let sum = |f: fn(&crate::tray::Tray) -> u16| -> u64 {
            p.nodes.iter().map(|&x| u64::from(f(&view.tray(x)))).sum()
        };
        let gpus = sum(|t| t.gpus);
        ensure!(
            gpus >= req.demand.gpus,
            "offers {gpus} GPUs of {}",
            req.demand.gpus
        );
        if req.demand.gpus == 0 {
            let cpus = sum(|t| t.cpus);
            ensure!(
                cpus >= req.demand.cpus,
                "offers {cpus} CPUs of {}",
                req.demand.cpus
            );
        }
    }
    Ok(())
}

/// One alternative of a plan over several racks by the rules: [`check_multi_rack_trays`],
/// and with fewest-racks no more racks than the rule allows.
fn check_multi_rack(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
    p: &Placement,
    alternative: (usize, usize),
) -> Result<(), String> {
    // Shaped pieces come first: balanced ones, or ones cut on groups (`piece_multiple`, or
    // `prefer_piece_multiple` where the racks allowed it) for a job without `--segment` or `-w`.
    let policy = &topo.policy;
    let cut_on_groups = policy.multi_rack == MultiRack::FewestRacks
        && (policy.piece_multiple > 1 || policy.prefer_piece_multiple > 1)
        && req.segment.is_none()
        && req.required.is_empty();
    let shaped = policy.multi_rack == MultiRack::Balanced || cut_on_groups;
    check_multi_rack_trays(topo, view, req, p, alternative, shaped)?;
    let n = req.trays_needed(topo);
    let racks: Vec<usize> = p.pieces.iter().map(|p| p.rack).collect();
    let named = required_racks(topo, req).unwrap_or_default();
    if topo.policy.multi_rack.fewest_racks_only() {
        let most = n.div_ceil(topo.max_rack_size()).max(named.len());
        ensure!(
            racks.len() <= most,
            "{} racks, at most {most}: {p:?}",
            racks.len()
        );
    }
    Ok(())
}

/// What holds for one alternative of any plan over several racks, by the rules or spilled:
/// the job's trays (all free trays of its racks when flexible), every rack of a `-w` node.
/// When the pieces are shaped (`multi_rack = "balanced"`, spilled, or cut on groups) a
/// flexible job sized by its demand may first be offered just its `n` trays, then the racks'
/// free trays.
fn check_multi_rack_trays(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
    p: &Placement,
    (i, alternatives): (usize, usize),
    shaped: bool,
) -> Result<(), String> {
    let n = req.trays_needed(topo);
    let shaped_first = shaped && req.is_flexible() && n > req.min_nodes;
    ensure!(
        alternatives == 1 || (shaped_first && alternatives == 2),
        "a multi-rack job has one alternative (two: shaped pieces, then the racks)"
    );
    if alternatives == 2 && i == 0 {
        ensure!(
            !p.exact && p.nodes.len() == n,
            "shaped pieces of {} trays, needs {n}",
            p.nodes.len()
        );
    } else if p.exact {
        ensure!(
            p.nodes.len() == n,
            "exact multi-rack with {} nodes, needs {n}",
            p.nodes.len()
        );
    } else {
        let all: usize = p
            .pieces
            .iter()
            .map(|p| free_trays(topo, view, p.rack))
            .sum();
        ensure!(
            req.is_flexible() && p.nodes.len() == all && all >= n,
            "a flexible multi-rack job is offered every free tray of its racks"
        );
    }
    let racks: Vec<usize> = p.pieces.iter().map(|p| p.rack).collect();
    let named = required_racks(topo, req).unwrap_or_default();
    for d in &named {
        ensure!(racks.contains(d), "rack {d} of a -w node unused: {p:?}");
    }
    Ok(())
}

/// The ranking, where the reference knows the answer: every fitting rack offered, best fit
/// first (one-rack jobs), the tightest or fewest racks (multi-rack jobs).
fn check_ranking(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
    alts: &[Placement],
) -> Result<(), String> {
    let n = req.trays_needed(topo);
    let max_rack = topo.max_rack_size();
    let free = |d: usize| free_trays(topo, view, d);
    if is_one_rack_job(topo, req) || req.segment == Some(req.min_nodes) {
        let fits = one_rack_fits(topo, view, req);
        let mut offered: Vec<usize> = alts.iter().map(|p| p.pieces[0].rack).collect();
        offered.sort_unstable();
        let expected: Vec<usize> = fits.iter().map(|&(d, _)| d).collect();
        ensure!(
            offered == expected,
            "offered racks {offered:?}, fitting racks {expected:?}"
        );
        let timed = topo.policy.end_time == crate::config::EndTime::Align
            && req.ends_at.is_some()
            && !view.busy_until.is_empty();
        // With node weights the lightest rack comes before the best fit (unit and property
        // tests in placement/tests/weights.rs check that order).
        if !timed && !view.weighted() {
            let leftover = |d: usize| free(d) - fits.iter().find(|f| f.0 == d).map_or(0, |f| f.1);
            let best = fits.iter().map(|&(d, _)| leftover(d)).min();
            let first = leftover(alts[0].pieces[0].rack);
            ensure!(
                Some(first) == best,
                "first rack leaves {first} trays, the best {best:?}"
            );
        }
        return Ok(());
    }
    if req.segment.is_some() || !req.required.is_empty() || view.weighted() {
        return Ok(());
    }
    let frees: Vec<usize> = (0..topo.racks.len()).map(free).collect();
    let chosen: Vec<usize> = alts[0].pieces.iter().map(|p| p.rack).collect();
    match topo.policy.multi_rack {
        MultiRack::FewestRacks => {
            let in_group = |members: &[usize]| {
                let f: Vec<usize> = members.iter().map(|&d| frees[d]).collect();
                fewest_racks_min_free(&f, n, max_rack)
            };
            let mut best = None;
            if topo.policy.prefer_same_group {
                best = topo.groups.iter().filter_map(|(_, m)| in_group(m)).min();
            }
            let best = best.or_else(|| fewest_racks_min_free(&frees, n, max_rack));
            let total: usize = chosen.iter().map(|&d| frees[d]).sum();
            ensure!(
                chosen.len() == n.div_ceil(max_rack) && Some(total) == best,
                "fewest-racks chose {chosen:?} ({total} free), the tightest set has {best:?}"
            );
        }
        // A flexible job's first alternative is its balanced pieces when there are two.
        MultiRack::Balanced if !req.is_flexible() || alts.len() == 2 => {
            let largest = alts[0].pieces.iter().map(|p| p.trays).max();
            let best = balanced_min_cap(&frees, n, max_rack);
            ensure!(
                chosen.len() == n.div_ceil(max_rack) && largest == best,
                "balanced chose {:?} (largest piece {largest:?}), the most balanced has {best:?}",
                alts[0].pieces
            );
        }
        MultiRack::Balanced => {}
        MultiRack::StartNow => {
            let fewest = fewest_racks_now(&frees, n);
            ensure!(
                Some(chosen.len()) == fewest,
                "start-now used {} racks, {fewest:?} would do",
                chosen.len()
            );
        }
    }
    Ok(())
}
