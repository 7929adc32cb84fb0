//! One scheduling pass, close to Slurm's: priority FIFO, then backfill.
//!
//! 1. **FIFO.** Jobs start in priority order (submit order; a requeued job from its requeue on)
//!    until the first one the policy cannot place now: the *head*.
//! 2. **Backfill, as Slurm's sched/backfill does it** ([`Backfill::Conservative`], the
//!    default). The head and then up to `bf_depth` later jobs (Slurm's `bf_max_job_test`), in
//!    priority order, each get the earliest time at which the policy can place them on the
//!    future map: running jobs end at their time limits, and the trays of every reservation
//!    made before are taken for its interval. A job whose time is now starts now; any other
//!    job reserves those trays from then until its limit, up to `bf_window` ahead. So a job
//!    that starts early delays no job ahead of it, not only the head.
//! 3. **EASY** ([`Backfill::Easy`], the simulator's model before it was calibrated against
//!    real slurmctld): only the head gets a reservation (its *shadow time* is the earliest
//!    running job's end after which it fits, found by bisection, since placement success only
//!    grows with the free set); a later job starts now on any free tray when it ends before
//!    the shadow time, otherwise on free trays outside the reservation.
//!
//! A request shape that failed once in a pass is not tried again in that pass (EASY), or not
//! before the time the last job of its shape got (Slurm's): trays are only taken, never
//! returned, within a pass.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashSet;

use crate::contenders::free_map::{FreeMap, Print};
use crate::contenders::policy::{Placer, SimRequest};
use crate::job::{Job, Millis};

/// A running job as the planner sees it.
#[derive(Debug, Clone, Copy)]
pub struct Running<'a> {
    /// Start + time limit.
    pub expected_end: Millis,
    pub trays: &'a [usize],
    /// [`print_of`](crate::contenders::free_map::print_of) its trays: what its end changes in a free
    /// map's fingerprint.
    pub print: Print,
}

/// The inputs of one pass.
pub struct Pass<'a> {
    pub now: Millis,
    pub jobs: &'a [Job],
    /// Queued job ids in priority order.
    pub queue: &'a [usize],
    pub free: &'a FreeMap,
    /// Sorted by `expected_end`.
    pub running: &'a [Running<'a>],
    pub bf_depth: usize,
    pub backfill: Backfill,
    /// How far ahead backfill reserves (Slurm's `bf_window`): a job that cannot start before
    /// `now + bf_window` gets no reservation.
    pub bf_window: Millis,
}

/// How backfill protects waiting jobs from the ones it starts early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backfill {
    /// EASY: only the first waiting job (the head) holds a reservation.
    Easy,
    /// Slurm's sched/backfill: every job it tests, in priority order, gets the earliest trays
    /// the policy would give it on the future map (running jobs end at their limits, earlier
    /// reservations taken), and a job starts now only where it delays none of them.
    #[default]
    Conservative,
}

/// A job the pass starts, with its trays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub job: usize,
    pub trays: Vec<usize>,
}

/// A job placed on `map` (a reservation's future trays), asking as it does at `now`.
fn try_place(placer: &mut Placer, map: &FreeMap, job: &Job, now: Millis) -> Option<Vec<usize>> {
    let ask = placer.ask(job, now);
    placer.place(map, ask)
}

/// A job starting now: the placer also learns when it is expected to end (for the engine's
/// `end_time` rules), and the trays it takes are marked busy until then.
fn try_start(placer: &mut Placer, map: &FreeMap, job: &Job, now: Millis) -> Option<Vec<usize>> {
    let until = now.saturating_add(job.limit);
    let ask = placer.ask(job, now);
    let trays = placer.place_until(map, ask, until)?;
    placer.mark_busy(&trays, until);
    Some(trays)
}

/// Runs one pass and returns the jobs to start, in the order they were chosen.
pub fn run_pass(pass: &Pass<'_>, placer: &mut Placer) -> Vec<Start> {
    run_pass_planned(pass, placer).starts
}

/// What a pass did, for the idle breakdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub starts: Vec<Start>,
    /// Trays held for waiting jobs' reservations: the head's under EASY, every reserved job's
    /// under Slurm's backfill (empty when nothing waits or nothing could be reserved).
    pub reserved: Vec<usize>,
    /// How many jobs at the front of the queue the pass looked at (started ones included).
    pub looked_at: usize,
}

/// [`run_pass`], and what the idle breakdown needs to know about it.
pub fn run_pass_planned(pass: &Pass<'_>, placer: &mut Placer) -> Planned {
    placer.next_pass();
    if placer.uses_clock() {
        let mut busy_until = vec![0; pass.free.as_slice().len()];
        for r in pass.running {
            for &t in r.trays {
                busy_until[t] = r.expected_end;
            }
        }
        placer.set_times(pass.now, &busy_until);
    }
    let mut free = pass.free.clone();
    let mut starts = Vec::new();
    let mut queue = pass.queue.iter().copied();
    let head = loop {
        let Some(j) = queue.next() else {
            return Planned {
                starts,
                reserved: Vec::new(),
                looked_at: pass.queue.len(),
            };
        };
        match try_start(placer, &free, &pass.jobs[j], pass.now) {
            Some(trays) => {
                free.take(&trays);
                starts.push(Start { job: j, trays });
            }
            None => break j,
        }
    };
    let head_at = starts.len();
    if pass.backfill == Backfill::Conservative {
        let mut later = vec![head];
        later.extend(queue.take(pass.bf_depth));
        return conservative(pass, placer, &free, starts, head_at, &later);
    }

    let (shadow, reserved) = reserve(placer, &free, pass.running, &pass.jobs[head], pass.now)
        .unwrap_or((Millis::MAX, Vec::new()));
    let mut outside = free.clone();
    outside.take(&reserved);
    let mut failed: FxHashSet<(SimRequest, bool)> = FxHashSet::default();
    for j in queue.take(pass.bf_depth) {
        let job = &pass.jobs[j];
        let before_shadow = pass.now.saturating_add(job.limit) <= shadow;
        let ask = placer.ask(job, pass.now);
        let shape = |before| (ask, before);
        if failed.contains(&shape(before_shadow)) || failed.contains(&shape(true)) {
            continue;
        }
        let map = if before_shadow { &free } else { &outside };
        match try_start(placer, map, job, pass.now) {
            Some(trays) => {
                free.take(&trays);
                outside.take(&trays);
                starts.push(Start { job: j, trays });
            }
            None => {
                failed.insert(shape(before_shadow));
            }
        }
    }
    Planned {
        looked_at: (head_at + 1 + pass.bf_depth).min(pass.queue.len()),
        starts,
        reserved,
    }
}

/// A tray's future as backfill plans it: busy until `from` (0: free now; `MAX`: down), then
/// free except for the reservations on it.
struct Future {
    from: Millis,
    reserved: Vec<(Millis, Millis)>,
}

impl Future {
    fn free_over(&self, start: Millis, end: Millis) -> bool {
        self.from <= start && self.reserved.iter().all(|&(a, b)| b <= start || a >= end)
    }
}

/// Slurm's backfill after the FIFO starts: each job of `jobs` (the head first), in priority
/// order, starts now if trays free over its whole limit fit it, or else reserves the trays the
/// policy gives it at the earliest time they are (a running job's end, or a reservation's).
fn conservative(
    pass: &Pass<'_>,
    placer: &mut Placer,
    free: &FreeMap,
    mut starts: Vec<Start>,
    head_at: usize,
    jobs: &[usize],
) -> Planned {
    // The future map is all this pass plans on: a start sets its trays' `from`.
    let mut future: Vec<Future> = free
        .as_slice()
        .iter()
        .map(|&f| Future {
            from: if f { 0 } else { Millis::MAX },
            reserved: Vec::new(),
        })
        .collect();
    for r in pass.running {
        for &t in r.trays {
            future[t].from = r.expected_end;
        }
    }
    // When trays come free (running ends, reservations' ends): the only start times to try.
    let mut times: BTreeSet<Millis> = pass
        .running
        .iter()
        .map(|r| r.expected_end.max(pass.now))
        .collect();
    times.insert(pass.now);
    // Every tray's `from`, sorted: how many trays are free at a time, before any reservation.
    let sorted_from = |future: &[Future]| {
        let mut v: Vec<Millis> = future.iter().map(|f| f.from).collect();
        v.sort_unstable();
        v
    };
    let mut froms = sorted_from(&future);
    let mut reserved = Vec::new();
    let mut map = FreeMap::none(future.len(), free.per_rack());
    let window_end = pass.now.saturating_add(pass.bf_window);
    // Per request shape: the limit and the start time (MAX: none in the window) the last job
    // of that shape got. The map only loses trays during a pass, so a job of the same shape
    // and no shorter limit cannot start earlier.
    let mut earliest: BTreeMap<SimRequest, (Millis, Millis)> = BTreeMap::new();
    for &j in jobs {
        let job = &pass.jobs[j];
        let ask = placer.ask(job, pass.now);
        let from = match earliest.get(&ask) {
            Some(&(limit, at)) if job.limit >= limit => at,
            _ => pass.now,
        };
        if from > window_end {
            continue;
        }
        earliest.insert(ask, (job.limit, Millis::MAX));
        let tries: Vec<Millis> = std::iter::once(from)
            .chain(
                times
                    .range(from..=window_end)
                    .copied()
                    .filter(|&t| t != from),
            )
            .collect();
        for at in tries {
            if froms.partition_point(|&f| f <= at) < job.trays {
                continue; // too few trays free by then, reservations aside
            }
            let end = at.saturating_add(job.limit);
            for (t, f) in future.iter().enumerate() {
                map.set(t, f.free_over(at, end));
            }
            if at == pass.now {
                if let Some(trays) = try_start(placer, &map, job, pass.now) {
                    for &t in &trays {
                        future[t].from = end;
                    }
                    froms = sorted_from(&future);
                    times.insert(end);
                    starts.push(Start { job: j, trays });
                    earliest.insert(ask, (job.limit, at));
                    break;
                }
            } else if let Some(trays) = try_place(placer, &map, job, pass.now) {
                for &t in &trays {
                    future[t].reserved.push((at, end));
                }
                times.insert(end);
                earliest.insert(ask, (job.limit, at));
                reserved.extend(trays);
                break;
            }
        }
    }
    Planned {
        looked_at: (head_at + jobs.len()).min(pass.queue.len()),
        starts,
        reserved,
    }
}

/// The head job's shadow time and reserved trays, or `None` if it cannot be placed even when
/// every running job has ended.
fn reserve(
    placer: &mut Placer,
    free: &FreeMap,
    running: &[Running<'_>],
    job: &Job,
    now: Millis,
) -> Option<(Millis, Vec<usize>)> {
    // cuts[k]: how many running jobs have ended once the k-th distinct end time is reached.
    let cuts: Vec<usize> = (1..=running.len())
        .filter(|&i| i == running.len() || running[i].expected_end != running[i - 1].expected_end)
        .collect();
    // Running jobs' trays are busy in `free`: the map after the first i have ended has
    // prints[i] and counts[i], known before it is built (and built only if the placer asks).
    let (mut prints, mut counts) = (vec![free.print()], vec![free.count()]);
    for r in running {
        debug_assert!(r.trays.iter().all(|&t| !free.is_free(t)));
        debug_assert_eq!(r.print, crate::contenders::free_map::print_of(r.trays));
        prints.push(prints[prints.len() - 1] ^ r.print);
        counts.push(counts[counts.len() - 1] + r.trays.len());
    }
    let ask = placer.ask(job, now);
    let by_count = placer.fits_any_free_trays();
    let mut attempt = |k: usize| {
        let ended = cuts[k];
        placer.place_lazy(prints[ended], counts[ended], ask, || {
            let mut map = free.clone();
            for r in &running[..ended] {
                map.give_busy(r.trays, r.print);
            }
            map
        })
    };
    let mut hi = cuts.len().checked_sub(1)?;
    if by_count {
        // The first cut that frees enough trays is the shadow.
        hi = cuts.partition_point(|&ended| counts[ended] < job.trays);
        let best = cuts.get(hi).and_then(|_| attempt(hi))?;
        return Some((running[cuts[hi] - 1].expected_end, best));
    }
    let mut best = attempt(hi)?;
    let mut lo = 0;
    while lo < hi {
        let mid = (lo + hi) / 2;
        match attempt(mid) {
            Some(trays) => {
                best = trays;
                hi = mid;
            }
            None => lo = mid + 1,
        }
    }
    Some((running[cuts[hi] - 1].expected_end, best))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;
    use crate::contenders::free_map::print_of;
    use crate::contenders::policy::PolicyKind;
    use crate::job::HOUR;

    fn job(id: usize, trays: usize, limit_h: u64) -> Job {
        Job {
            id,
            submit: 0,
            trays,
            segment: None,
            by_gpus: false,
            class: Default::default(),
            runtime: limit_h * HOUR,
            limit: limit_h * HOUR,
            tier: Default::default(),
        }
    }

    fn started(starts: &[Start]) -> Vec<usize> {
        starts.iter().map(|s| s.job).collect()
    }

    /// `trays` trays, free except those of `busy`.
    fn free_except(trays: usize, busy: &[&[usize]]) -> Vec<bool> {
        let mut free = vec![true; trays];
        for &t in busy.iter().copied().flatten() {
            free[t] = false;
        }
        free
    }

    #[test]
    fn fifo_stops_at_the_head_and_backfill_respects_its_reservation() {
        // Two racks. Rack 1: 10 trays busy until 2 h (job A). Rack 2: 12 trays busy until 5 h.
        let busy_a: Vec<usize> = (0..10).collect();
        let busy_b: Vec<usize> = (18..30).collect();
        let free = free_except(36, &[&busy_a, &busy_b]);
        let running = [
            Running {
                expected_end: 2 * HOUR,
                trays: &busy_a,
                print: print_of(&busy_a),
            },
            Running {
                expected_end: 5 * HOUR,
                trays: &busy_b,
                print: print_of(&busy_b),
            },
        ];
        let jobs = vec![
            job(0, 2, 1),  // starts (FIFO), best fit: rack 2, which keeps 4 free
            job(1, 18, 4), // head: needs a whole rack, gets rack 1 at 2 h
            job(2, 5, 1),  // ends before the shadow time: may use rack 1's free trays
            job(3, 4, 9),  // ends after: must stay out of rack 1, fits rack 2
            job(4, 1, 9),  // nothing left outside the reservation
        ];
        let queue: Vec<usize> = (0..5).collect();
        let mut placer = Placer::new(PolicyKind::Nvl72, 2, 18, &Policy::default(), false);
        let starts = run_pass(
            &Pass {
                now: 0,
                jobs: &jobs,
                queue: &queue,
                free: &FreeMap::new(&free, 18),
                running: &running,
                bf_depth: 100,
                backfill: Backfill::Easy,
                bf_window: Millis::MAX,
            },
            &mut placer,
        );
        assert_eq!(started(&starts), vec![0, 2, 3]);
        assert!(starts[2].trays.iter().all(|&t| t >= 18));
    }

    /// Two racks. Rack 1 is busy until 10 h; rack 2 has 10 trays busy until 1 h and 8 free.
    /// The head (36 trays) reserves everything at 10 h; job B (16 trays, 5 h) reserves 16 of
    /// rack 2's trays at 1 h; job C (8 trays, 3 h) fits the 8 free trays now and ends long
    /// before the head. EASY starts C; Slurm's backfill does not, since C would delay B, and
    /// reserves C a later slot instead.
    #[test]
    fn slurms_backfill_starts_no_job_that_would_delay_any_reservation() {
        let rack1: Vec<usize> = (0..18).collect();
        let rack2_busy: Vec<usize> = (18..28).collect();
        let free = free_except(36, &[&rack1, &rack2_busy]);
        let running = [
            Running {
                expected_end: HOUR,
                trays: &rack2_busy,
                print: print_of(&rack2_busy),
            },
            Running {
                expected_end: 10 * HOUR,
                trays: &rack1,
                print: print_of(&rack1),
            },
        ];
        let jobs = vec![job(0, 36, 1), job(1, 16, 5), job(2, 8, 3)];
        let plan = |backfill| {
            let mut placer = Placer::new(PolicyKind::Naive, 2, 18, &Policy::default(), false);
            run_pass_planned(
                &Pass {
                    now: 0,
                    jobs: &jobs,
                    queue: &[0, 1, 2],
                    free: &FreeMap::new(&free, 18),
                    running: &running,
                    bf_depth: 100,
                    backfill,
                    bf_window: Millis::MAX,
                },
                &mut placer,
            )
        };
        assert_eq!(started(&plan(Backfill::Easy).starts), vec![2]);
        let slurm = plan(Backfill::Conservative);
        assert_eq!(started(&slurm.starts), Vec::<usize>::new());
        // Every job got a reservation: the head, B, and C itself (rack 2 from 6 h to 9 h).
        assert_eq!(slurm.reserved.len(), 36 + 16 + 8);
    }

    #[test]
    fn no_reservation_when_the_head_can_never_fit() {
        let free = vec![true; 18];
        let jobs = vec![job(0, 18, 1), job(1, 2, 9)];
        let mut free_minus_one = free.clone();
        free_minus_one[0] = false; // a down tray: the head never fits
        let mut placer = Placer::new(PolicyKind::Block, 1, 18, &Policy::default(), false);
        let starts = run_pass(
            &Pass {
                now: 0,
                jobs: &jobs,
                queue: &[0, 1],
                free: &FreeMap::new(&free_minus_one, 18),
                running: &[],
                bf_depth: 100,
                backfill: Backfill::Easy,
                bf_window: Millis::MAX,
            },
            &mut placer,
        );
        assert_eq!(started(&starts), vec![1]);
    }
}
