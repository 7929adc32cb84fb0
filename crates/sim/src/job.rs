//! Jobs as the simulator sees them: a tray count, an optional `--segment`, a submit time, the
//! real run time and the time limit the user asked for.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::slowdown::{ClassRule, CommClass};

/// Simulated time in milliseconds since the first submission.
pub type Millis = u64;

pub const SECOND: Millis = 1_000;
pub const MINUTE: Millis = 60 * SECOND;
pub const HOUR: Millis = 60 * MINUTE;

/// Converts simulated time to hours for reports.
pub fn hours(t: Millis) -> f64 {
    t as f64 / HOUR as f64
}

/// One job of the workload. Every policy replays an identical copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// Index in the workload; also the priority (lower runs first: FIFO by submit order).
    pub id: usize,
    pub submit: Millis,
    /// Compute trays (Slurm nodes); 4 GPUs each.
    pub trays: usize,
    /// `--segment`: every group of this many trays must sit in one rack.
    pub segment: Option<usize>,
    /// Sized by GPUs (`--gpus=4*trays`, no `-N`): Slurm leaves the node count open and the
    /// topology plugin sees a minimum of one node.
    pub by_gpus: bool,
    /// How its GPUs talk, which prices a split ([`crate::slowdown`]); jobs saved before the
    /// model load as dense.
    #[serde(default)]
    pub class: CommClass,
    /// Run time when the job is not interrupted.
    pub runtime: Millis,
    /// Requested time limit (`--time`), always `>= runtime`; what backfill plans with.
    pub limit: Millis,
    /// Its preemption tier ([`Tier`]); the default (tier 0, not preemptable) for every
    /// workload without a tier rule, and then left out of saved reports.
    #[serde(default, skip_serializing_if = "Tier::is_default")]
    pub tier: Tier,
}

/// Where a job stands in Slurm's preemption (issue 52): its `level` is its partition's
/// `PriorityTier` (or its QOS priority), higher first. A pending job may preempt a running
/// job only when that job is `preemptable` and its level is strictly lower; the mode
/// (requeue or cancel) is the run's ([`crate::run::preemption::PreemptMode`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tier {
    pub level: u32,
    pub preemptable: bool,
}

impl Tier {
    pub fn is_default(&self) -> bool {
        *self == Tier::default()
    }

    /// `self` may preempt a running job of tier `other`.
    pub fn preempts(self, other: Tier) -> bool {
        other.preemptable && other.level < self.level
    }
}

impl Job {
    /// A job of `trays` trays without `--segment`, sized by `-N`.
    pub fn plain(id: usize, submit: Millis, trays: usize, runtime: Millis, limit: Millis) -> Job {
        Job {
            id,
            submit,
            trays,
            segment: None,
            by_gpus: false,
            class: CommClass::default(),
            runtime,
            limit,
            tier: Tier::default(),
        }
    }
}

/// The requested time limit of a job that really runs `runtime`: `runtime * U[1, 3]`,
/// rounded up to whole minutes (Slurm's `--time` granularity), at least one minute.
///
/// Users overestimate: traces show requested limits of one to several times the real run
/// time. A uniform factor in `[1, 3]` keeps the mean overestimate at 2x, which gives EASY
/// backfill realistic, imperfect information.
pub fn time_limit(rng: &mut impl Rng, runtime: Millis) -> Millis {
    let factor: f64 = rng.gen_range(1.0..=3.0);
    let raw = (runtime as f64 * factor).ceil() as Millis;
    raw.div_ceil(MINUTE).max(1) * MINUTE
}

/// Marks a `share` of the jobs without `--segment` as sized by GPUs (`--gpus=4*trays`),
/// chosen at random with `seed`, the same jobs for every policy.
pub fn size_by_gpus(jobs: &mut [Job], share: f64, seed: u64) {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x6770_7573);
    for job in jobs.iter_mut().filter(|j| j.segment.is_none()) {
        job.by_gpus = rng.gen_bool(share.clamp(0.0, 1.0));
    }
}

/// Gives every job its communication class by `rule`, drawn with `seed`: the same classes
/// for every policy.
pub fn assign_classes(jobs: &mut [Job], rule: &ClassRule, seed: u64) {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x636c_6173);
    for job in jobs.iter_mut() {
        job.class = rule.class(job.trays, rng.gen_range(0.0..1.0));
    }
}

/// Job-size classes used to report queue waits, by tray count.
pub const CLASSES: [(&str, usize, usize); 7] = [
    ("1-2", 1, 2),
    ("3-7", 3, 7),
    ("8-16", 8, 16),
    ("17-18", 17, 18),
    ("19-72", 19, 72),
    ("73-143", 73, 143),
    ("144+", 144, usize::MAX),
];

/// Index into [`CLASSES`] of a job of `trays` trays.
pub fn class_of(trays: usize) -> usize {
    CLASSES
        .iter()
        .position(|&(_, lo, hi)| (lo..=hi).contains(&trays))
        .unwrap_or(0)
}

/// Offered load of `jobs` on `healthy_trays`: tray-time asked for, divided by the tray-time
/// available between the first and the last submission.
pub fn offered_load(jobs: &[Job], healthy_trays: f64) -> f64 {
    let work: f64 = jobs.iter().map(|j| j.trays as f64 * j.runtime as f64).sum();
    let first = jobs.iter().map(|j| j.submit).min().unwrap_or(0);
    let last = jobs.iter().map(|j| j.submit).max().unwrap_or(0);
    let span = (last - first).max(1) as f64;
    work / (healthy_trays * span)
}

/// Scales every submit time by one factor so that the offered load of `jobs` on
/// `healthy_trays` becomes `load` (submit times must start at zero).
pub fn set_offered_load(jobs: &mut [Job], healthy_trays: f64, load: f64) {
    let factor = offered_load(jobs, healthy_trays) / load;
    for j in jobs {
        j.submit = (j.submit as f64 * factor).round() as Millis;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn limits_are_whole_minutes_between_one_and_three_times_the_runtime() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for runtime in [1, 59 * SECOND, MINUTE, 90 * MINUTE + 7, 30 * HOUR] {
            for _ in 0..50 {
                let l = time_limit(&mut rng, runtime);
                assert_eq!(l % MINUTE, 0);
                assert!(l >= runtime && l >= MINUTE);
                assert!(l <= (3 * runtime).div_ceil(MINUTE).max(1) * MINUTE);
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_classes() {
        let mut a: Vec<Job> = (0..200).map(|i| Job::plain(i, 0, 4, 1, 1)).collect();
        let mut b = a.clone();
        let rule = ClassRule::parse("dp=0.3,dense=0.5,moe=0.2").unwrap();
        assign_classes(&mut a, &rule, 9);
        assign_classes(&mut b, &rule, 9);
        assert_eq!(a, b);
        let moe = a.iter().filter(|j| j.class == CommClass::Moe).count();
        assert!((20..=60).contains(&moe), "{moe}");
    }

    #[test]
    fn classes_cover_every_size() {
        assert_eq!(CLASSES[class_of(1)].0, "1-2");
        assert_eq!(CLASSES[class_of(4)].0, "3-7");
        assert_eq!(CLASSES[class_of(16)].0, "8-16");
        assert_eq!(CLASSES[class_of(18)].0, "17-18");
        assert_eq!(CLASSES[class_of(32)].0, "19-72");
        assert_eq!(CLASSES[class_of(100)].0, "73-143");
        assert_eq!(CLASSES[class_of(10_000)].0, "144+");
    }
}
