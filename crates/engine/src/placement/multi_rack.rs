//! Jobs over several racks: without `--segment`, the tightest set of the fewest racks
//! (`multi_rack = "fewest-racks"`, searched in `fewest_racks`) or the fewest racks that can
//! start the job now (`"start-now"`); with several segments, `--consolidate-segments`.

use std::cmp::Reverse;

use super::fewest_racks::{self, Cuts};
use super::rack_order::{RackOrder, Racks};
use super::room::{Ctx, Room};
use super::{Piece, Reject, WaitReason};
use crate::topology::Topology;

/// A job larger than a rack, without `--segment`, under `multi_rack = "fewest-racks"`: the
/// tightest set of `ceil(n / largest rack)` racks (inside one rack group when possible), or
/// wait. With `-w` nodes the racks holding them are part of the set and filled first; the
/// rest of the job goes to the tightest set of further racks, and the job waits when that
/// needs more racks than the fewest possible.
pub(super) fn plan_fewest_racks(ctx: &Ctx, racks: Racks, n: usize) -> Result<Vec<Piece>, Reject> {
    let topo = ctx.topo;
    let largest = topo.max_rack_size();
    // The nodes -w names set the cuts; piece_multiple and its preference do not move them.
    let cuts = if ctx.required.is_empty() {
        Cuts::of(topo)
    } else {
        Cuts::ANY
    };
    let wait = || no_fewest_racks(topo, n, cuts.multiple);
    let tightest = |members: &[&Room], n: usize| {
        let order = RackOrder::of_rooms(topo, members.iter().copied());
        fewest_racks::tightest_set(&order, n, largest, cuts, topo)
    };
    if !ctx.required.is_empty() {
        let rooms = racks.rooms();
        return with_required_racks(&rooms, n, n.div_ceil(largest), tightest).ok_or_else(wait);
    }
    let mut best = None;
    if topo.policy.prefer_same_group && !topo.groups.is_empty() {
        let rooms = racks.rooms();
        let free_of =
            |pieces: &Vec<Piece>| -> usize { pieces.iter().map(|p| rooms[p.rack].free).sum() };
        best = rooms_by_group(topo, &rooms)
            .iter()
            .filter_map(|members| tightest(members, n))
            .min_by_key(free_of);
    }
    if best.is_none() {
        best = fewest_racks::tightest_set(&racks.order(topo), n, largest, cuts, topo);
    }
    best.ok_or_else(wait)
}

fn no_fewest_racks(topo: &Topology, n: usize, multiple: usize) -> Reject {
    Reject::NotNow(WaitReason::NoFewestRacks {
        racks: fewest_racks::fewest_racks(n, topo.max_rack_size(), multiple),
        trays: n,
        rule: topo.policy.multi_rack,
    })
}

/// Fewest racks with `-w` nodes: every rack holding a required node is used and filled first
/// (required trays come first in [`Ctx::take`]); what is left goes to the tightest set of the
/// other racks. None when that takes more than `max(fewest, racks named by -w)` racks.
fn with_required_racks(
    rooms: &[Room],
    n: usize,
    fewest: usize,
    tightest: impl Fn(&[&Room], usize) -> Option<Vec<Piece>>,
) -> Option<Vec<Piece>> {
    // Each named rack first gets its `-w` trays, then fills up with the rest of the job.
    let named: Vec<&Room> = rooms.iter().filter(|r| r.required > 0).collect();
    let mut left = n.checked_sub(named.iter().map(|r| r.required).sum())?;
    let mut pieces: Vec<Piece> = Vec::with_capacity(named.len());
    for room in &named {
        let extra = (room.free - room.required).min(left);
        left -= extra;
        pieces.push(Piece {
            rack: room.rack,
            trays: room.required + extra,
        });
    }
    let forced = pieces.len();
    if left > 0 {
        let rest: Vec<&Room> = rooms.iter().filter(|r| r.required == 0).collect();
        pieces.extend(tightest(&rest, left)?);
    }
    (pieces.len() <= fewest.max(forced)).then_some(pieces)
}

/// The rooms of each rack group, groups in name order (`rooms[r]` is rack `r`'s).
pub(super) fn rooms_by_group<'r>(topo: &Topology, rooms: &'r [Room]) -> Vec<Vec<&'r Room>> {
    topo.groups
        .iter()
        .map(|(_, members)| members.iter().map(|&r| &rooms[r]).collect())
        .collect()
}

/// Places `count` pieces of `size` trays (each piece inside one rack) in as few racks as
/// possible: fullest racks first, the remainder into the best-fitting one. With rack groups,
/// a plan inside one group wins when it needs no more racks than the global plan.
/// `multi_rack = "start-now"` uses it with pieces of one tray.
pub(super) fn plan_start_now(
    ctx: &Ctx,
    rooms: &[Room],
    count: usize,
    size: usize,
) -> Result<Vec<Piece>, Reject> {
    let topo = ctx.topo;
    let all: Vec<&Room> = rooms.iter().collect();
    let required = ctx.required.len();
    let global = fewest_racks_within(topo, &all, count, size, required).ok_or(Reject::NotNow(
        WaitReason::NoWholePieces {
            pieces: count,
            size,
        },
    ))?;
    let mut best = global;
    if topo.policy.prefer_same_group {
        let in_group = rooms_by_group(topo, rooms)
            .iter()
            .filter_map(|members| fewest_racks_within(topo, members, count, size, required))
            .filter(|p| p.len() <= best.len())
            .min_by_key(|p| p.len());
        if let Some(p) = in_group {
            best = p;
        }
    }
    Ok(best)
}

/// The pieces of a fewest-racks plan over `rooms`, or None if it cannot be done. `required`
/// is how many `-w` nodes there are; all must be covered.
fn fewest_racks_within(
    topo: &Topology,
    rooms: &[&Room],
    count: usize,
    size: usize,
    required: usize,
) -> Option<Vec<Piece>> {
    let forced: Vec<&Room> = rooms.iter().copied().filter(|r| r.required > 0).collect();
    if forced.iter().map(|r| r.required).sum::<usize>() < required {
        return None; // some `-w` rack is not among these rooms
    }
    let capacity = |r: &Room| r.free / size;
    // Racks named by `-w` are used anyway: first give each enough pieces for its required
    // nodes (they come first in `Ctx::take`), then fill them before opening other racks.
    let mut rem = count;
    let mut granted: Vec<(&Room, usize)> = Vec::new();
    for r in forced {
        let need = r.required.div_ceil(size).max(1);
        if need > capacity(r) || need > rem {
            return None;
        }
        granted.push((r, need));
        rem -= need;
    }
    for (r, k) in granted.iter_mut() {
        let extra = (capacity(r) - *k).min(rem);
        *k += extra;
        rem -= extra;
    }
    let piece = |r: &Room, k: usize| Piece {
        rack: r.rack,
        trays: k * size,
    };
    let mut pieces: Vec<Piece> = granted.iter().map(|&(r, k)| piece(r, k)).collect();
    let mut rest: Vec<&Room> = rooms
        .iter()
        .copied()
        .filter(|r| r.required == 0 && capacity(r) > 0)
        .collect();
    // Fullest first, whole racks first among equals (whatever `prefer_degraded` says:
    // these racks are filled, not kept).
    rest.sort_unstable_by_key(|r| (Reverse(capacity(r)), !r.whole, r.weight, r.rack));
    let mut next = 0;
    while rem > 0 {
        let last = rest[next..]
            .iter()
            .filter(|r| capacity(r) >= rem)
            .min_by_key(|r| r.fit_key(topo, capacity(r) - rem));
        if let Some(r) = last {
            pieces.push(piece(r, rem));
            rem = 0;
        } else if next < rest.len() {
            let r = rest[next];
            next += 1;
            pieces.push(piece(r, capacity(r)));
            rem -= capacity(r);
        } else {
            return None;
        }
    }
    Some(pieces)
}
