//! One scheduling pass, close to Slurm's: priority FIFO, then EASY backfill with a node
//! reservation for the first job that cannot start.
//!
//! 1. **FIFO.** Jobs start in priority order (submit order; a re-queued job keeps its place)
//!    until the first one the policy cannot place now: the *head*.
//! 2. **Reservation.** Running jobs are assumed to end at their time limit. The head's
//!    *shadow time* is the earliest such end after which the policy can place it, and its
//!    *reserved trays* are the trays the policy would give it then (Slurm's backfill plans
//!    the same way: it places the job on the future node map). Placement success only grows
//!    with the free set for all three policies, so the earliest end is found by bisection.
//!    When the head cannot be placed even on every tray that will free up (trays that are
//!    down stay down), there is no reservation.
//! 3. **Backfill.** Later jobs, at most `bf_depth` of them (Slurm's `bf_max_job_test`), start
//!    now if the policy can place them: on any free tray when they end (by their limit) before
//!    the shadow time, otherwise on free trays outside the reservation.
//!
//! A request shape that failed once in a pass is not tried again in that pass: trays are only
//! taken, never returned, within a pass, so it would fail again.

use std::collections::BTreeSet;

use super::job::{Job, Millis};
use super::policy::{Placer, SimRequest};

/// A running job as the planner sees it.
#[derive(Debug, Clone, Copy)]
pub struct Running<'a> {
    /// Start + time limit.
    pub expected_end: Millis,
    pub trays: &'a [usize],
}

/// The inputs of one pass.
pub struct Pass<'a> {
    pub now: Millis,
    pub jobs: &'a [Job],
    /// Queued job ids in priority order.
    pub queue: &'a [usize],
    pub free: &'a [bool],
    /// Sorted by `expected_end`.
    pub running: &'a [Running<'a>],
    pub bf_depth: usize,
}

/// A job the pass starts, with its trays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub job: usize,
    pub trays: Vec<usize>,
}

/// A free map with its count, so hopeless requests never reach the policy.
#[derive(Clone)]
struct Map {
    free: Vec<bool>,
    count: usize,
}

impl Map {
    fn new(free: &[bool]) -> Map {
        Map {
            free: free.to_vec(),
            count: free.iter().filter(|&&f| f).count(),
        }
    }

    fn take(&mut self, trays: &[usize]) {
        for &t in trays {
            if self.free[t] {
                self.free[t] = false;
                self.count -= 1;
            }
        }
    }

    fn give(&mut self, trays: &[usize]) {
        for &t in trays {
            if !self.free[t] {
                self.free[t] = true;
                self.count += 1;
            }
        }
    }
}

fn try_place(placer: &mut Placer, map: &Map, job: &Job) -> Option<Vec<usize>> {
    if job.trays > map.count {
        return None;
    }
    placer.place(&map.free, SimRequest::of(job))
}

/// A job starting now: the placer also learns when it is expected to end (for the engine's
/// `end_time` rules), and the trays it takes are marked busy until then.
fn try_start(placer: &mut Placer, map: &Map, job: &Job, now: Millis) -> Option<Vec<usize>> {
    if job.trays > map.count {
        return None;
    }
    let until = now.saturating_add(job.limit);
    let trays = placer.place_until(&map.free, SimRequest::of(job), until)?;
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
    /// The head job's reserved trays (empty when nothing waits or it has no reservation).
    pub reserved: Vec<usize>,
    /// How many jobs at the front of the queue the pass looked at (started ones included).
    pub looked_at: usize,
}

/// [`run_pass`], and what the idle breakdown needs to know about it.
pub fn run_pass_planned(pass: &Pass<'_>, placer: &mut Placer) -> Planned {
    let mut busy_until = vec![0; pass.free.len()];
    for r in pass.running {
        for &t in r.trays {
            busy_until[t] = r.expected_end;
        }
    }
    placer.set_times(pass.now, &busy_until);
    let mut free = Map::new(pass.free);
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

    let (shadow, reserved) =
        reserve(placer, &free, pass.running, &pass.jobs[head]).unwrap_or((Millis::MAX, Vec::new()));
    let mut outside = free.clone();
    outside.take(&reserved);
    let mut failed: BTreeSet<(SimRequest, bool)> = BTreeSet::new();
    for j in queue.take(pass.bf_depth) {
        let job = &pass.jobs[j];
        let before_shadow = pass.now.saturating_add(job.limit) <= shadow;
        let shape = |before| (SimRequest::of(job), before);
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

/// The head job's shadow time and reserved trays, or `None` if it cannot be placed even when
/// every running job has ended.
fn reserve(
    placer: &mut Placer,
    free: &Map,
    running: &[Running<'_>],
    job: &Job,
) -> Option<(Millis, Vec<usize>)> {
    // cuts[k]: how many running jobs have ended once the k-th distinct end time is reached.
    let cuts: Vec<usize> = (1..=running.len())
        .filter(|&i| i == running.len() || running[i].expected_end != running[i - 1].expected_end)
        .collect();
    let mut attempt = |k: usize| {
        let mut map = free.clone();
        for r in &running[..cuts[k]] {
            map.give(r.trays);
        }
        try_place(placer, &map, job)
    };
    let mut hi = cuts.len().checked_sub(1)?;
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
    use crate::sim::job::HOUR;
    use crate::sim::policy::PolicyKind;

    fn job(id: usize, trays: usize, limit_h: u64) -> Job {
        Job {
            id,
            submit: 0,
            trays,
            segment: None,
            by_gpus: false,
            runtime: limit_h * HOUR,
            limit: limit_h * HOUR,
        }
    }

    fn started(starts: &[Start]) -> Vec<usize> {
        starts.iter().map(|s| s.job).collect()
    }

    #[test]
    fn fifo_stops_at_the_head_and_backfill_respects_its_reservation() {
        // Two racks. Rack 1: 10 trays busy until 2 h (job A). Rack 2: 12 trays busy until 5 h.
        let busy_a: Vec<usize> = (0..10).collect();
        let busy_b: Vec<usize> = (18..30).collect();
        let mut free = vec![true; 36];
        for &t in busy_a.iter().chain(&busy_b) {
            free[t] = false;
        }
        let running = [
            Running {
                expected_end: 2 * HOUR,
                trays: &busy_a,
            },
            Running {
                expected_end: 5 * HOUR,
                trays: &busy_b,
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
                free: &free,
                running: &running,
                bf_depth: 100,
            },
            &mut placer,
        );
        assert_eq!(started(&starts), vec![0, 2, 3]);
        assert!(starts[2].trays.iter().all(|&t| t >= 18));
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
                free: &free_minus_one,
                running: &[],
                bf_depth: 100,
            },
            &mut placer,
        );
        assert_eq!(started(&starts), vec![1]);
    }
}
