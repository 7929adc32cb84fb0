//! The brute-force reference for a job's rack limit (`--switches`, `RackLimit`): whether a
//! placement exists that keeps to it, and what holds for a job placed by spilling over more
//! racks than the rules take (`placement::rack_limit`).

use super::{
    balanced_min_cap_over, check_multi_rack_trays, fewest_racks_with, frees, is_one_rack_job,
    placement_exists_by_rules, required_racks,
};
use crate::config::MultiRack;
use crate::placement::{JobRequest, Placement, RackLimit};
use crate::topology::Topology;
use crate::view::ClusterView;

/// Does a placement exist now that follows the rules and `limit`?
///
/// - A request `validate` refuses is never runnable, limit or not: it does not read the
///   limit (the reference without a limit is checked against it on an empty cluster).
/// - `--segment`: one segment is one rack. Several, while the limit holds: the `count` racks
///   with room for the most segments hold them all (the fewest racks, the fallback of any
///   segment rule). Once lifted: the rules.
/// - Without segments, a job takes the rules' racks (the fewest racks its rule allows, for
///   `start-now` the fewest that hold it now) when that is within the limit; or it spills:
///   the fewest racks holding its `n` trays now (every `-w` rack among them), when `n` is
///   within its `max_nodes`, at least two for a job that fits one rack, and at most `count`
///   racks while the limit holds, which it may only use when `count` is above its minimum
///   racks (`ceil(n / M)`, or the racks its `-w` nodes name).
pub(super) fn placement_exists(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
    limit: RackLimit,
) -> bool {
    if crate::placement::validate(topo, req).is_err() {
        return false;
    }
    let by_rules = placement_exists_by_rules(topo, view, req);
    let max_rack = topo.max_rack_size();
    let Some(named) = required_racks(topo, req) else {
        return false;
    };
    if max_rack == 0 || req.min_nodes == 0 || req.required.iter().any(|&n| !view.tray(n).offered) {
        return false;
    }
    let free = frees(topo, view);
    let most = (!limit.lifted).then_some(limit.max_racks.max(1));
    if let Some(s) = req.segment {
        return match most {
            Some(most) if by_rules && req.min_nodes > s => {
                let mut room: Vec<usize> = free.iter().map(|f| f / s).collect();
                room.sort_unstable_by(|a, b| b.cmp(a));
                room.iter().take(most).sum::<usize>() >= req.min_nodes / s
            }
            _ => by_rules,
        };
    }
    let n = req.trays_needed(topo);
    let one_rack = is_one_rack_job(topo, req);
    let fewest = fewest_racks_with(&free, &named, n);
    let min_racks = n.div_ceil(max_rack).max(named.len());
    let rules_racks = match topo.policy.multi_rack {
        _ if one_rack => 1,
        MultiRack::FewestRacks | MultiRack::Balanced => min_racks,
        MultiRack::StartNow => fewest.unwrap_or(usize::MAX),
    };
    let spills = |cap: Option<usize>| {
        fewest.is_some_and(|k| {
            n <= req.max_nodes && (!one_rack || k >= 2) && cap.map_or(true, |c| k <= c)
        })
    };
    match most {
        None => by_rules || spills(None),
        Some(c) => (by_rules && rules_racks <= c) || (c > min_racks && spills(Some(c))),
    }
}

/// Every alternative keeps to a limit that holds.
pub(super) fn check_within(req: &JobRequest, p: &Placement) -> Result<(), String> {
    let Some(most) = req.switches.and_then(RackLimit::active) else {
        return Ok(());
    };
    if p.pieces.len() > most {
        return Err(format!(
            "{} racks, the rack limit is {most}: {p:?}",
            p.pieces.len()
        ));
    }
    Ok(())
}

/// One alternative of a spilled job: the trays of a plan over several racks, on exactly the
/// fewest racks that hold its `n` trays now (with every `-w` rack).
pub(super) fn check_spilled(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
    p: &Placement,
    alternative: (usize, usize),
) -> Result<(), String> {
    check_multi_rack_trays(topo, view, req, p, alternative, true)?;
    let named = required_racks(topo, req).unwrap_or_default();
    let fewest = fewest_racks_with(&frees(topo, view), &named, req.trays_needed(topo));
    if Some(p.pieces.len()) != fewest {
        return Err(format!(
            "spilled over {} racks, the fewest that hold it now: {fewest:?}: {p:?}",
            p.pieces.len()
        ));
    }
    Ok(())
}

/// A spilled job's pieces (without `-w`, when they are its exact trays) are as even as the
/// fewest racks allow: the largest piece is the least any such set of racks allows.
pub(super) fn check_spill_ranking(
    topo: &Topology,
    view: &ClusterView,
    req: &JobRequest,
    alts: &[Placement],
) -> Result<(), String> {
    let every_free_tray = req.is_flexible() && alts.len() == 1;
    if !req.required.is_empty() || every_free_tray {
        return Ok(());
    }
    let n = req.trays_needed(topo);
    let racks = alts[0].pieces.len();
    let largest = alts[0].pieces.iter().map(|p| p.trays).max();
    let best = balanced_min_cap_over(&frees(topo, view), n, racks, topo.max_rack_size());
    if largest != best {
        return Err(format!(
            "spilled as {:?} (largest piece {largest:?}), the most even on {racks} racks has {best:?}",
            alts[0].pieces
        ));
    }
    Ok(())
}
