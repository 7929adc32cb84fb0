//! A job's rack limit ([`RackLimit`]): Slurm's `--switches=count[@max-time]`, which
//! topology/tree reads as leaf switches and this plugin as racks (NVLink domains).
//!
//! While the limit holds, a job keeps the engine's preference (one rack, the fewest racks)
//! but never takes more than `count` racks: plans over it are dropped, several segments fall
//! back to the fewest racks ([`within`]), and otherwise the job waits
//! ([`WaitReason::SwitchLimit`]), never "never runnable": tree does not reject a count below
//! what the job needs, the job waits out its time. A job the rules cannot start now may
//! **spill** ([`spill`]) onto the fewest racks that hold it now, in pieces as equal as they
//! allow (the smallest piece sets the pace of traffic between racks), when its count is above
//! its minimum racks (up to `count` racks) or once it has waited out its time (any number):
//! the simulator's `nvl72-spill` what-if, with the job's own count instead of one more rack.
//!
//! Jobs with `--segment` never spill: every segment stays inside one rack whatever the limit.

use super::balanced::balanced_pieces;
use super::multi_rack::plan_start_now;
use super::room::{Ctx, Room};
use super::validate::required_rack_list;
use super::{JobRequest, Piece, RackLimit, Reject, WaitReason};

/// Several segments whose rule's `pieces` take more than `most` racks: the fewest racks that
/// hold the segments now (the consolidate rule, `plan_start_now`), or wait. The limit is the
/// job's own request and wins over the segment rule; a rule that waits on its own still
/// waits (the caller only comes here with a plan). Segments larger than a rack, `-w` nodes
/// (which fix the pieces) and jobs without segments have no fewer racks to fall back to.
pub(super) fn within(
    ctx: &Ctx,
    rooms: &[Room],
    req: &JobRequest,
    most: usize,
    pieces: Vec<Piece>,
) -> Result<Vec<Piece>, Reject> {
    let mut needs = pieces.len();
    if let Some((count, s)) = req.segments() {
        if s <= ctx.topo.max_rack_size() && ctx.required.is_empty() {
            if let Ok(fewest) = plan_start_now(ctx, rooms, count, s) {
                if fewest.len() <= most {
                    return Ok(fewest);
                }
                needs = needs.min(fewest.len());
            }
        }
    }
    Err(Reject::NotNow(WaitReason::SwitchLimit {
        racks: most,
        needs,
    }))
}

/// The pieces of a job without segments that the rules leave waiting (`why`), when its rack
/// limit lets it spill (and `n` is within its `max_nodes`): on the fewest racks that hold its
/// `n` trays now, at most the limit's count while the limit holds and only when that count is
/// above the job's minimum racks (`ceil(n / M)`, or the racks its `-w` nodes name), any
/// number once lifted. Otherwise the job waits: for its limit ([`WaitReason::SwitchLimit`])
/// when more racks would start it now, else for `why`.
pub(super) fn spill(
    ctx: &Ctx,
    req: &JobRequest,
    n: usize,
    limit: RackLimit,
    why: WaitReason,
) -> Result<Vec<Piece>, Reject> {
    let topo = ctx.topo;
    if n > req.max_nodes {
        // Its GPUs, CPUs or tasks need more whole trays than its node count allows: more
        // racks cannot help.
        return Err(Reject::NotNow(why));
    }
    let min_racks = n
        .div_ceil(topo.max_rack_size().max(1))
        .max(required_rack_list(topo, req).len());
    let rooms = ctx.rooms();
    // The fewest racks that hold its trays now; a job that fits one rack spills only over two
    // or more (one rack that holds its trays but not its GPUs, CPUs or `-w` nodes is what the
    // one-rack rule already refused).
    let fewest = plan_start_now(ctx, &rooms, n, 1)
        .ok()
        .filter(|f| n > topo.max_rack_size() || f.len() >= 2);
    match (fewest, limit.active()) {
        (Some(f), None) => Ok(balance(ctx, &rooms, n, f)),
        (Some(f), Some(most)) if most > min_racks && f.len() <= most => {
            Ok(balance(ctx, &rooms, n, f))
        }
        (Some(f), Some(most)) if f.len() > most => Err(Reject::NotNow(WaitReason::SwitchLimit {
            racks: most,
            needs: f.len(),
        })),
        _ => Err(Reject::NotNow(why)),
    }
}

/// `fewest` (`plan_start_now` with pieces of one tray: `-w` racks first, then the fullest)
/// rebalanced on as many racks by `balanced`'s rule; with `-w` nodes the pieces stay as they
/// are, as `balanced` leaves them.
fn balance(ctx: &Ctx, rooms: &[Room], n: usize, fewest: Vec<Piece>) -> Vec<Piece> {
    if !ctx.required.is_empty() {
        return fewest;
    }
    balanced_pieces(ctx.topo, rooms, n, fewest.len()).unwrap_or(fewest)
}
