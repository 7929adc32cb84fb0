//! The pending jobs, in the order slurmctld tries them.
//!
//! Every job in the labs has the same priority (`InitPrio=1`), and for equal priorities
//! slurmctld sorts by submit time, then job id (`sort_job_queue2`, job_scheduler.c). When a
//! requeued job has finished completing, slurmctld sets its submit time to that moment (and
//! clears its accrue time, so an age factor starts again): `batch_requeue_fini`, job_mgr.c,
//! 24.11 and 26.05 alike. A requeued job therefore queues behind every job already waiting,
//! not at its old place.
//!
//! Slurm sorts by the partition's `PriorityTier` before the priority: a job of a higher
//! preemption tier ([`crate::job::Tier`]) is tried before every job of a lower one. Without
//! tiers (every job at level 0) the order is the one above.

use std::collections::BTreeSet;

use crate::job::Millis;

pub struct Queue {
    /// `(rank, submit time as slurmctld sees it, job)`; the rank is `u32::MAX` less the
    /// job's tier level.
    order: BTreeSet<(u32, Millis, usize)>,
    /// Each job's rank.
    rank: Vec<u32>,
    /// Each job's current submit time: its arrival, or its last requeue.
    submitted: Vec<Millis>,
    /// Each job is in `order`: answers [`Queue::contains`] without a search.
    waiting: Vec<bool>,
}

impl Queue {
    pub fn new(jobs: usize) -> Queue {
        Queue {
            order: BTreeSet::new(),
            rank: vec![u32::MAX; jobs],
            submitted: vec![0; jobs],
            waiting: vec![false; jobs],
        }
    }

    /// The job's tier level: it queues before every job of a lower level.
    pub fn set_tier(&mut self, job: usize, level: u32) {
        debug_assert!(!self.waiting[job]);
        self.rank[job] = u32::MAX - level;
    }

    /// `job` waits from now on, behind everything submitted before `submitted`.
    pub fn insert(&mut self, job: usize, submitted: Millis) {
        self.submitted[job] = submitted;
        self.order.insert((self.rank[job], submitted, job));
        self.waiting[job] = true;
    }

    /// `job` was requeued at `at`, but may not start yet (its begin time is later): its place
    /// is fixed now, and [`Queue::eligible`] puts it there.
    pub fn requeued(&mut self, job: usize, at: Millis) {
        self.submitted[job] = at;
    }

    /// A job [`Queue::requeued`] earlier waits from now on, at its requeue's place.
    pub fn eligible(&mut self, job: usize) {
        self.order
            .insert((self.rank[job], self.submitted[job], job));
        self.waiting[job] = true;
    }

    pub fn remove(&mut self, job: usize) {
        self.order
            .remove(&(self.rank[job], self.submitted[job], job));
        self.waiting[job] = false;
    }

    pub fn contains(&self, job: usize) -> bool {
        self.waiting[job]
    }

    /// The job slurmctld would try first.
    pub fn first(&self) -> Option<usize> {
        self.order.first().map(|&(_, _, j)| j)
    }

    /// In the order slurmctld tries them.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.order.iter().map(|&(_, _, j)| j)
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requeued_job_waits_behind_every_job_submitted_before_its_requeue() {
        let mut q = Queue::new(5);
        for (job, at) in [(0, 0), (1, 10), (2, 10), (3, 20)] {
            q.insert(job, at);
        }
        assert_eq!(q.iter().collect::<Vec<_>>(), [0, 1, 2, 3]);
        q.remove(0);
        q.insert(0, 15); // requeued at 15
        assert_eq!(q.iter().collect::<Vec<_>>(), [1, 2, 0, 3]);
        assert_eq!(q.first(), Some(1));
        assert!(q.contains(0) && q.len() == 4);
        q.remove(0);
        assert!(!q.contains(0) && q.len() == 3);
        q.requeued(0, 12); // requeued at 12, eligible later
        assert!(!q.contains(0));
        q.insert(4, 13);
        q.eligible(0);
        assert_eq!(q.iter().collect::<Vec<_>>(), [1, 2, 0, 4, 3]);
    }

    #[test]
    fn a_higher_tier_goes_before_every_lower_one_whatever_its_submit_time() {
        let mut q = Queue::new(3);
        q.set_tier(2, 1);
        for (job, at) in [(0, 0), (1, 10), (2, 20)] {
            q.insert(job, at);
        }
        assert_eq!(q.iter().collect::<Vec<_>>(), [2, 0, 1]);
    }
}
