//! Where the idle GPUs go: every free healthy tray while jobs wait gets one [`Cause`], so the
//! occupancy gap between policies can be read as failed trays, whole-rack waits, remainders
//! and reservations instead of one "stranded" figure. The definitions are in the simulator's
//! metrics module docs (`sim::measures::metrics`); this file is their code, cause by cause in that
//! order. It is the engine's, not the simulator's: `nvl72 status` gives live trays the same
//! causes.

use serde::{Deserialize, Serialize};

/// Why a free healthy tray stays idle while jobs wait: the first that applies, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// In the head job's backfill reservation.
    Reserved,
    /// No waiting job fits in the free trays outside the reservation even ignoring racks.
    TooFew,
    /// A waiting job that fits one rack would fit this one now, and still does not start.
    Other,
    /// The rack could hold a piece of a waiting job of several racks or segments, which
    /// waits for enough such racks.
    RackSet,
    /// The rack would fit a waiting job if its unavailable trays were healthy.
    Failed,
    /// The head job needs whole racks (or its fewest-racks set) and nothing else fits here.
    WholeRack,
    /// Too few free trays in this rack for any waiting job.
    Remainder,
}

/// Every cause, in the order they are tested (and reported).
pub const CAUSES: [Cause; 7] = [
    Cause::Reserved,
    Cause::TooFew,
    Cause::Other,
    Cause::RackSet,
    Cause::Failed,
    Cause::WholeRack,
    Cause::Remainder,
];

impl Cause {
    pub fn name(self) -> &'static str {
        match self {
            Cause::Reserved => "reserved",
            Cause::TooFew => "too-few",
            Cause::Other => "other",
            Cause::RackSet => "rack-set",
            Cause::Failed => "failed",
            Cause::WholeRack => "whole-rack",
            Cause::Remainder => "remainder",
        }
    }

    /// The row label of the text report and of `nvl72 status`.
    pub fn describe(self) -> &'static str {
        match self {
            Cause::Reserved => "held for the head's reservation",
            Cause::TooFew => "too few free trays for any job",
            Cause::Other => "a one-rack job fits, not started",
            Cause::RackSet => "a piece fits, job waits for more",
            Cause::Failed => "racks short of failed trays",
            Cause::WholeRack => "head waits for whole racks",
            Cause::Remainder => "remainders no job fits",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Free trays per cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Idle([usize; 7]);

impl Idle {
    pub fn get(&self, cause: Cause) -> usize {
        self.0[cause.index()]
    }

    pub fn add(&mut self, cause: Cause, trays: usize) {
        self.0[cause.index()] += trays;
    }

    pub fn total(&self) -> usize {
        self.0.iter().sum()
    }
}

/// A waiting job as the breakdown sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    pub trays: usize,
    /// The fewest free trays a rack must have for the policy to put part of the job there
    /// (the simulator's `Placer::rack_need`).
    pub rack_need: usize,
    /// Unsegmented and at least a rack's trays: it waits for whole racks or a rack set.
    pub whole: bool,
    /// Needs several pieces: several segments, or more trays than a rack has.
    pub several: bool,
}

/// The cluster right after a scheduling pass.
#[derive(Debug, Clone, Copy)]
pub struct Moment<'a> {
    pub trays_per_rack: usize,
    /// Free and healthy, per tray.
    pub free: &'a [bool],
    /// Free and healthy trays per rack (`free` counted rack by rack).
    pub free_in_rack: &'a [u32],
    /// Unavailable (down, drained) trays per rack.
    pub down_in_rack: &'a [u32],
    /// Trays held for waiting jobs' reservations (busy ones included, and a tray may be
    /// listed more than once; only the free ones count).
    pub reserved: &'a [usize],
    /// The jobs the pass looked at, head first (at most 1 + `bf_depth`).
    pub waiting: &'a [Waiting],
}

/// Each free healthy tray's cause, counted; the counts add up to the free trays. Reads the
/// racks' counts, the reserved trays and the waiting jobs, never every tray: the simulator
/// takes one after every event.
pub fn breakdown(m: &Moment<'_>) -> Idle {
    let mut idle = Idle::default();
    let mut held: Vec<usize> = m.reserved.iter().copied().filter(|&t| m.free[t]).collect();
    held.sort_unstable();
    held.dedup();
    idle.add(Cause::Reserved, held.len());
    let all_free: usize = m.free_in_rack.iter().map(|&c| c as usize).sum();
    let outside = all_free - held.len();
    if !m.waiting.iter().any(|w| w.trays <= outside) {
        idle.add(Cause::TooFew, outside);
        return idle;
    }
    let head = m.waiting[0];
    // The jobs that make a rack "usable": they fit by count; a whole-rack head is left out
    // because a rack that meets its need alone is part of the set it waits for. The least
    // rack need of the one-rack ones and of the others.
    let (mut one_rack, mut set) = (usize::MAX, usize::MAX);
    for (i, w) in m.waiting.iter().enumerate() {
        if w.trays <= outside && !(i == 0 && head.whole) {
            let least = if w.several { &mut set } else { &mut one_rack };
            *least = (*least).min(w.rack_need);
        }
    }
    // at_most[k]: how many waiting jobs need at most k trays of a rack (k up to a rack's
    // trays, and one more slot for the jobs that need more).
    let per_rack = m.trays_per_rack.max(1);
    let mut at_most = vec![0usize; per_rack + 2];
    for w in m.waiting {
        at_most[w.rack_need.min(per_rack + 1)] += 1;
    }
    for k in 1..at_most.len() {
        at_most[k] += at_most[k - 1];
    }
    // Some waiting job needs more than `free` but at most `free + down` trays of a rack.
    let failed = |free: usize, down: usize| {
        let top = (free + down).min(per_rack + 1);
        top > free && at_most[top] > at_most[free]
    };
    let mut held_racks = held.iter().map(|&t| t / per_rack).peekable();
    for (rack, &in_rack) in m.free_in_rack.iter().enumerate() {
        let mut free = in_rack as usize;
        while held_racks.next_if_eq(&rack).is_some() {
            free -= 1;
        }
        if free == 0 {
            continue;
        }
        let down = m.down_in_rack[rack] as usize;
        let cause = if one_rack <= free {
            Cause::Other
        } else if set <= free {
            Cause::RackSet
        } else if failed(free, down) {
            Cause::Failed
        } else if head.whole {
            Cause::WholeRack
        } else {
            Cause::Remainder
        };
        idle.add(cause, free);
    }
    idle
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{racks, Kit};

    /// The breakdown of a drawn state: `.` free, `-`/`x` unavailable, `r` free but reserved
    /// for the head, letters busy.
    fn of(kit: &Kit, rows: &[&str], waiting: &[Waiting]) -> Idle {
        let reserved: Vec<usize> = rows
            .iter()
            .flat_map(|r| r.split_once(' ').unwrap().1.chars().filter(|c| *c != ' '))
            .enumerate()
            .filter(|(_, c)| *c == 'r')
            .map(|(i, _)| i)
            .collect();
        let mut free = kit.offered();
        for &t in &reserved {
            free[t] = true;
        }
        let per_rack = |of: &dyn Fn(usize) -> bool| -> Vec<u32> {
            (0..free.len() / 18)
                .map(|r| (r * 18..(r + 1) * 18).filter(|&t| of(t)).count() as u32)
                .collect()
        };
        breakdown(&Moment {
            trays_per_rack: 18,
            free: &free,
            free_in_rack: &per_rack(&|t| free[t]),
            down_in_rack: &per_rack(&|t| kit.view.trays[t].unavailable),
            reserved: &reserved,
            waiting,
        })
    }

    fn state(rows: &[&str], waiting: &[Waiting]) -> Idle {
        of(&racks(rows), rows, waiting)
    }

    fn job(trays: usize) -> Waiting {
        Waiting {
            trays,
            rack_need: trays.min(18),
            whole: trays >= 18,
            several: trays > 18,
        }
    }

    fn only(cause: Cause, trays: usize) -> Idle {
        let mut idle = Idle::default();
        idle.add(cause, trays);
        idle
    }

    #[test]
    fn free_trays_in_the_heads_reservation_are_reserved() {
        let idle = state(&["rack1 rrrrrrrrrrAAAAAAAA"], &[job(18), job(12)]);
        assert_eq!(idle, only(Cause::Reserved, 10));
    }

    #[test]
    fn too_few_when_no_waiting_job_fits_the_free_trays_even_across_racks() {
        let idle = state(
            &["rack1 ....AAAAAAAAAAAAAA", "rack2 ....AAAAAAAAAAAAAA"],
            &[job(12), job(9)],
        );
        assert_eq!(idle, only(Cause::TooFew, 8));
    }

    #[test]
    fn a_rack_one_failed_tray_short_of_the_head_is_failed() {
        // rack1: 17 free and one down, a whole rack for the 18-tray head if the tray were
        // healthy; rack2 would not be whole even then.
        let idle = state(
            &["rack1 x.................", "rack2 -.........AAAAAAAA"],
            &[job(18)],
        );
        let mut want = only(Cause::Failed, 17);
        want.add(Cause::WholeRack, 9);
        assert_eq!(idle, want);
        // Alone, the 17 free trays are too few for it, racks or not.
        let idle = state(&["rack1 x................."], &[job(18)]);
        assert_eq!(idle, only(Cause::TooFew, 17));
    }

    #[test]
    fn a_partly_busy_rack_while_the_head_needs_a_whole_one_is_whole_rack() {
        let idle = state(
            &["rack1 ..........AAAAAAAA", "rack2 ..........BBBBBBBB"],
            &[job(18), job(12)],
        );
        assert_eq!(idle, only(Cause::WholeRack, 20));
        // The same for a job of two racks waiting for its fewest-racks set: 32 trays need 14
        // free in each of two racks.
        let two_racks = Waiting {
            trays: 32,
            rack_need: 14,
            whole: true,
            several: true,
        };
        let idle = state(
            &[
                "rack1 ..........AAAAAAAA",
                "rack2 ..........BBBBBBBB",
                "rack3 ............CCCCCC",
            ],
            &[two_racks],
        );
        assert_eq!(idle, only(Cause::WholeRack, 32));
    }

    #[test]
    fn free_trays_no_waiting_job_fits_are_a_remainder() {
        // Segments of 8 wait: rack1's 6 free and rack2's 6 free hold none (12 trays fit by
        // count, racks ignored).
        let seg8 = Waiting {
            trays: 8,
            rack_need: 8,
            whole: false,
            several: false,
        };
        let idle = state(
            &["rack1 ......AAAAAAAAAAAA", "rack2 ......BBBBBBBBBBBB"],
            &[seg8],
        );
        assert_eq!(idle, only(Cause::Remainder, 12));
    }

    #[test]
    fn a_rack_that_holds_a_piece_of_a_job_waiting_for_more_is_rack_set() {
        // Three segments of 8 (25 trays free): rack1 and rack2 hold one each, rack3 and rack4
        // none; the job waits for a third rack with 8 free.
        let three_seg8 = Waiting {
            trays: 24,
            rack_need: 8,
            whole: false,
            several: true,
        };
        let idle = state(
            &[
                "rack1 ........AAAAAAAAAA",
                "rack2 ........BBBBBBBBBB",
                "rack3 .......CCCCCCCCCCC",
                "rack4 ..DDDDDDDDDDDDDDDD",
            ],
            &[three_seg8],
        );
        let mut want = only(Cause::RackSet, 16);
        want.add(Cause::Remainder, 9);
        assert_eq!(idle, want);
    }

    #[test]
    fn a_rack_a_waiting_one_rack_job_fits_but_that_did_not_start_is_other() {
        // Behind the head, a 4-tray job that fits rack1 is left waiting (by the policy's own
        // rule, or a time test): the breakdown cannot say why.
        let idle = state(
            &["rack1 ......AAAAAAAAAAAA", "rack2 ..BBBBBBBBBBBBBBBB"],
            &[job(8), job(4)],
        );
        let mut want = only(Cause::Other, 6);
        want.add(Cause::Remainder, 2);
        assert_eq!(idle, want);
    }

    #[test]
    fn causes_are_tested_in_order_and_add_up_to_the_free_trays() {
        // rack1: 4 reserved. rack2: 17 free + 1 down, one tray short of the 18-tray head, but
        // the 2-tray job behind it fits (other comes before failed), as in rack3. rack4's one
        // free tray fits nobody while the head waits for a whole rack.
        let rows = [
            "rack1 rrrrAAAAAAAAAAAAAA",
            "rack2 -.................",
            "rack3 ..BBBBBBBBBBBBBBBB",
            "rack4 .CCCCCCCCCCCCCCCCC",
        ];
        let idle = state(&rows, &[job(18), job(2)]);
        let want = [
            (Cause::Reserved, 4),
            (Cause::Failed, 0),
            (Cause::Other, 19),
            (Cause::WholeRack, 1),
        ];
        for (cause, trays) in want {
            assert_eq!(idle.get(cause), trays, "{cause:?}");
        }
        assert_eq!(idle.total(), 4 + 17 + 2 + 1);
    }
}
