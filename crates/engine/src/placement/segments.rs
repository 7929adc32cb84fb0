//! Several segments of one job (`--segment`), each inside one rack: topology/block's best
//! fit (the default), a rack of its own per segment (`--spread-segments`), and segments
//! larger than a rack (Slurm 25.11+). One segment is a one-rack job (`one_rack`); several
//! in as few racks as possible is `multi_rack::plan_start_now`.

use super::fewest_racks::{self, Cuts};
use super::rack_order::RackOrder;
use super::room::{Ctx, Room};
use super::{Piece, Reject, WaitReason};

/// Segments larger than a rack (Slurm 25.11+): each one over the fewest racks, the tightest
/// set of what the earlier segments left, as `multi_rack = "fewest-racks"` places a job that
/// size. Pieces of two segments in one rack are one piece.
pub(super) fn oversized_segments(
    ctx: &Ctx,
    rooms: &[Room],
    count: usize,
    s: usize,
) -> Result<Vec<Piece>, Reject> {
    let topo = ctx.topo;
    let mut left: Vec<Room> = rooms.to_vec();
    let mut pieces: Vec<Piece> = Vec::new();
    for i in 0..count {
        let set = fewest_racks::tightest_set(
            &RackOrder::of_rooms(topo, &left),
            s,
            topo.max_rack_size(),
            Cuts::ANY,
            topo,
        )
        .ok_or(Reject::NotNow(WaitReason::NoRacksForSegment {
            racks: s.div_ceil(topo.max_rack_size()),
            segment: s,
            index: i + 1,
            segments: count,
        }))?;
        for taken in set {
            let room = &mut left[taken.rack];
            room.free -= taken.trays;
            room.whole = false;
            match pieces.iter_mut().find(|p| p.rack == taken.rack) {
                Some(p) => p.trays += taken.trays,
                None => pieces.push(taken),
            }
        }
    }
    Ok(pieces)
}

/// `--spread-segments`: each segment in a rack of its own, the best-fitting racks first.
pub(super) fn spread_segments(
    order: &RackOrder,
    count: usize,
    s: usize,
) -> Result<Vec<Piece>, Reject> {
    let fits = order.at_least(s);
    if fits.len() < count {
        return Err(too_few_to_spread(fits.len(), count, s));
    }
    let piece = |at: usize| Piece {
        rack: order.room_at(at).rack,
        trays: s,
    };
    Ok(fits.take(count).map(piece).collect())
}

fn too_few_to_spread(racks: usize, count: usize, s: usize) -> Reject {
    Reject::NotNow(WaitReason::TooFewRacksToSpread {
        racks,
        segment: s,
        segments: count,
    })
}

/// topology/block's segment rule, each segment on its own: the rack whose free trays fit
/// the segment most tightly; ties go to racks the job already uses, then
/// [`Room::tie_break`].
///
/// The racks come in slots of free trays, so each segment costs O(largest rack) rather than
/// a scan of every rack: untouched racks leave each slot from the front, and the few racks
/// this job already uses are kept in a short list.
pub(super) fn best_fit_segments(
    ctx: &Ctx,
    order: &RackOrder,
    count: usize,
    s: usize,
) -> Result<Vec<Piece>, Reject> {
    let topo = ctx.topo;
    let start = order.slot_starts();
    let slots = start.len() - 1;
    let mut next = start.to_vec();
    // (room, free trays left) of racks this job already uses
    let mut used: Vec<(Room, usize)> = Vec::new();
    for _ in 0..count {
        let untouched = (2 * s..slots).find(|&k| next[k] < start[k + 1]);
        let reused = used
            .iter()
            .enumerate()
            .filter(|(_, (_, left))| *left >= s)
            .min_by_key(|(_, (h, left))| h.fit_key(topo, *left))
            .map(|(u, &(_, left))| (u, left));
        let take_reused = match (untouched, reused) {
            (_, None) => false,
            (None, Some(_)) => true,
            // same leftover: the rack already used wins
            (Some(k), Some((_, left))) => left <= k / 2,
        };
        if take_reused {
            let (u, _) = reused.expect("checked above");
            used[u].1 -= s;
        } else if let Some(k) = untouched {
            let h = order.room_at(next[k] as usize);
            next[k] += 1;
            let left = h.free - s;
            used.push((h, left));
        } else {
            return Err(Reject::NotNow(WaitReason::NoRackForSegment { segment: s }));
        }
    }
    let piece = |(h, left): &(Room, usize)| Piece {
        rack: h.rack,
        trays: h.free - left,
    };
    Ok(used.iter().map(piece).collect())
}
