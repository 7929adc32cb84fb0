//! The one order in which the rules that take racks best fit first read them: slots of
//! (free trays, keep-whole), fewest free trays first and, under `prefer_degraded`, a whole
//! rack after the others with as many, each slot's racks lighter first, then in
//! configuration order ([`Room::tie_break`]). The view's free index *is* that order for
//! every rack's room, so a plan on the index reads only the racks it takes; a plan on other
//! rooms (weights, a tier of lighter trays, `-w` nodes, one rack group, rounded rooms) sorts
//! them into it once. Each rule is then written once, over a [`RackOrder`].

use std::borrow::Cow;
use std::ops::Range;

use super::room::{Ctx, Room};
use crate::free_index::{sort_into_slots, FreeIndex};
use crate::topology::Topology;

/// Racks in best-fit order, from the view's free index or from rooms.
pub(super) struct RackOrder<'a> {
    source: Source<'a>,
}

enum Source<'a> {
    /// Every rack's room ([`Ctx::room`]), in the free index's order.
    Index(&'a Ctx<'a>),
    /// Rooms sorted into slots: `rooms[start[s]..start[s + 1]]` are slot `s`'s.
    Sorted { start: Vec<u32>, rooms: Vec<Room> },
}

impl<'a> RackOrder<'a> {
    /// Every rack, read off the view's free index (built, no weights, no `-w` nodes).
    pub fn of_index(ctx: &'a Ctx<'a>) -> RackOrder<'a> {
        debug_assert!(ctx.view.free_index.is_built() && !ctx.weighted);
        debug_assert!(ctx.required.is_empty());
        RackOrder {
            source: Source::Index(ctx),
        }
    }

    /// `rooms` sorted into the order.
    pub fn of_rooms<'r>(topo: &Topology, rooms: impl IntoIterator<Item = &'r Room>) -> Self {
        let mut by_weight: Vec<&Room> = rooms.into_iter().collect();
        // Stable: configuration order among equal weights (the index's order within a slot).
        by_weight.sort_by_key(|r| (r.weight, r.rack));
        let slots = by_weight
            .iter()
            .enumerate()
            .map(|(i, r)| (i, FreeIndex::slot(topo, r.free, r.whole)));
        let (mut start, mut at) = (Vec::new(), Vec::new());
        sort_into_slots(topo, slots, &mut start, &mut at);
        let rooms = at.iter().map(|&i| by_weight[i as usize].clone()).collect();
        RackOrder {
            source: Source::Sorted { start, rooms },
        }
    }

    /// How many racks the order holds.
    pub fn len(&self) -> usize {
        match &self.source {
            Source::Index(ctx) => ctx.topo.racks.len(),
            Source::Sorted { rooms, .. } => rooms.len(),
        }
    }

    /// Where each slot starts: positions `start[s]..start[s + 1]` are slot `s`'s racks (slot
    /// = 2 × free trays + keep-whole, [`FreeIndex::slot`]).
    pub fn slot_starts(&self) -> &[u32] {
        match &self.source {
            Source::Index(ctx) => ctx.view.free_index.slots().0,
            Source::Sorted { start, .. } => start,
        }
    }

    /// The room of the rack at position `at`.
    pub fn room_at(&self, at: usize) -> Room {
        match &self.source {
            Source::Index(ctx) => ctx.room(ctx.view.free_index.rack(at)),
            Source::Sorted { rooms, .. } => rooms[at].clone(),
        }
    }

    /// The positions of the racks with at least `k` free trays, best fit first.
    pub fn at_least(&self, k: usize) -> Range<usize> {
        let start = self.slot_starts();
        start[(2 * k).min(start.len() - 1)] as usize..self.len()
    }

    /// The positions of the racks with exactly `k` free trays, in order.
    pub fn exactly(&self, k: usize) -> Range<usize> {
        let start = self.slot_starts();
        let last = start.len() - 1;
        start[(2 * k).min(last)] as usize..start[(2 * k + 2).min(last)] as usize
    }
}

/// The racks a plan reads: every rack off the view's free index, or these rooms. Rules that
/// take racks best fit first read them through [`Racks::order`]; the others (rack groups, `-w`
/// nodes, start-now, balanced, oversized segments, rack limits) read every room.
#[derive(Clone, Copy)]
pub(super) enum Racks<'a> {
    Index(&'a Ctx<'a>),
    Rooms(&'a [Room]),
}

impl<'a> Racks<'a> {
    /// The racks in best-fit order (sorted once when they are rooms).
    pub fn order(&self, topo: &Topology) -> RackOrder<'a> {
        match *self {
            Racks::Index(ctx) => RackOrder::of_index(ctx),
            Racks::Rooms(rooms) => RackOrder::of_rooms(topo, rooms),
        }
    }

    /// One room per rack, in rack order (`rooms[r].rack == r`).
    pub fn rooms(&self) -> Cow<'a, [Room]> {
        match *self {
            Racks::Index(ctx) => Cow::Owned(ctx.rooms()),
            Racks::Rooms(rooms) => Cow::Borrowed(rooms),
        }
    }
}
