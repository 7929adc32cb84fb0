//! What the replay does in real time: each job's submission instant, its `sleep` and its
//! `--time`, and the tray failures, all divided by one time scale.
//!
//! Slurm counts time limits in whole minutes, so a compressed limit is rounded up to a whole
//! real minute. The simulator then gets the stream exactly as Slurm sees it (rounded run
//! times and limits, scaled back): its prediction and the real run differ only by what Slurm
//! does, not by rounding.

use crate::job::{Job, Millis, MINUTE};
use crate::run::failures::{FailureModel, FailureTimeline};
use crate::slowdown::CommClass;

/// One `sbatch`, in real time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayJob {
    /// Index in [`Schedule::stream`]; jobs are submitted in this order, so Slurm's job ids (and
    /// its FIFO priority) follow it.
    pub id: usize,
    pub trays: usize,
    pub segment: Option<usize>,
    /// `--gpus` instead of `-N`.
    pub by_gpus: bool,
    /// How it communicates: what a split costs it when the replay prices splits.
    pub class: CommClass,
    /// Real milliseconds after the replay starts.
    pub submit_ms: Millis,
    /// The job script's `sleep`, real milliseconds.
    pub sleep_ms: Millis,
    /// `--time`, whole minutes.
    pub limit_min: u64,
}

/// A tray goes down (drained, and the job on it requeued) or comes back (resumed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TrayEvent {
    /// Real milliseconds after the replay starts.
    pub at_ms: Millis,
    pub tray: usize,
    pub down: bool,
}

/// How to compress a workload.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleSpec {
    pub racks: usize,
    pub trays_per_rack: usize,
    pub failures: FailureModel,
    /// Seeds the failure timeline, as `SimConfig::seed`.
    pub seed: u64,
    /// Simulated milliseconds per real millisecond.
    pub scale: f64,
    /// After the last submission, keep going for this share of the submission span (jobs
    /// still queued or running then are cancelled and count as unfinished).
    pub drain: f64,
}

/// The compressed workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub scale: f64,
    pub jobs: Vec<ReplayJob>,
    /// Sorted by time, then tray.
    pub tray_events: Vec<TrayEvent>,
    /// The same jobs in simulated time, as Slurm gets them (for the simulator's prediction).
    pub stream: Vec<Job>,
    /// When the replay stops, real milliseconds.
    pub stop_ms: Millis,
}

impl Schedule {
    /// The stop time in simulated milliseconds (the simulator's horizon).
    pub fn horizon(&self) -> Millis {
        self.sim_ms(self.stop_ms)
    }

    /// Real milliseconds to simulated ones.
    pub fn sim_ms(&self, real: Millis) -> Millis {
        (real as f64 * self.scale).round() as Millis
    }
}

/// Compresses `jobs` (sorted by submit time, numbered from 0, every one runnable on the
/// cluster) by `spec.scale`.
pub fn schedule(jobs: &[Job], spec: &ScheduleSpec) -> Result<Schedule, String> {
    if !(spec.scale.is_finite() && spec.scale >= 1.0) {
        return Err(format!(
            "time scale must be at least 1 (got {})",
            spec.scale
        ));
    }
    if !(spec.drain.is_finite() && spec.drain >= 0.0) {
        return Err(format!("drain must be >= 0 (got {})", spec.drain));
    }
    let real = |sim: Millis| (sim as f64 / spec.scale).round() as Millis;
    let back = |r: Millis| (r as f64 * spec.scale).round() as Millis;
    if jobs.is_empty() {
        return Err("no job of the workload can run on this cluster".into());
    }
    let mut replay = Vec::with_capacity(jobs.len());
    let mut stream = Vec::with_capacity(jobs.len());
    for (id, j) in jobs.iter().enumerate() {
        let submit_ms = real(j.submit);
        let sleep_ms = real(j.runtime).max(1);
        let limit_min = (j.limit as f64 / spec.scale / MINUTE as f64)
            .ceil()
            .max(1.0) as u64;
        let limit_min = limit_min.max(sleep_ms.div_ceil(MINUTE));
        replay.push(ReplayJob {
            id,
            trays: j.trays,
            segment: j.segment,
            by_gpus: j.by_gpus,
            class: j.class,
            submit_ms,
            sleep_ms,
            limit_min,
        });
        stream.push(Job {
            id,
            submit: back(submit_ms),
            trays: j.trays,
            segment: j.segment,
            by_gpus: j.by_gpus,
            class: j.class,
            runtime: back(sleep_ms),
            limit: back(limit_min * MINUTE),
            tier: Default::default(),
        });
    }
    let last = replay.last().map_or(0, |j| j.submit_ms);
    let stop_ms = last + (last as f64 * spec.drain).round() as Millis;
    let horizon = back(stop_ms);
    Ok(Schedule {
        scale: spec.scale,
        jobs: replay,
        tray_events: tray_events(spec, horizon, real),
        stream,
        stop_ms,
    })
}

/// Every tray change up to `horizon` (simulated), from the simulator's own timeline.
fn tray_events(
    spec: &ScheduleSpec,
    horizon: Millis,
    real: impl Fn(Millis) -> Millis,
) -> Vec<TrayEvent> {
    let trays = spec.racks * spec.trays_per_rack;
    let mut timeline = FailureTimeline::new(spec.failures, trays, spec.seed);
    let mut events = Vec::new();
    for tray in 0..trays {
        let (mut down, mut next) = timeline.start(tray);
        if down {
            events.push(TrayEvent {
                at_ms: 0,
                tray,
                down: true,
            });
        }
        while let Some(at) = next.filter(|&at| at <= horizon) {
            down = !down;
            events.push(TrayEvent {
                at_ms: real(at),
                tray,
                down,
            });
            next = timeline.next_change(tray, at, down);
        }
    }
    events.sort_by_key(|e| (e.at_ms, e.tray));
    events
}

/// The simulated time per real time that makes the submissions of `jobs` last `minutes`.
pub fn scale_for(jobs: &[Job], minutes: f64) -> f64 {
    let span = jobs.last().map_or(0, |j| j.submit) as f64;
    (span / (minutes * MINUTE as f64)).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{HOUR, SECOND};

    fn job(id: usize, submit: Millis, trays: usize, segment: Option<usize>) -> Job {
        Job {
            segment,
            ..Job::plain(id, submit, trays, 90 * MINUTE, 3 * HOUR)
        }
    }

    fn spec(scale: f64) -> ScheduleSpec {
        ScheduleSpec {
            racks: 2,
            trays_per_rack: 18,
            failures: FailureModel::None,
            seed: 1,
            scale,
            drain: 0.5,
        }
    }

    #[test]
    fn times_are_compressed_and_limits_rounded_up_to_real_minutes() {
        let jobs = [job(0, 0, 4, None), job(1, 10 * HOUR, 8, Some(4))];
        let p = schedule(&jobs, &spec(600.0)).unwrap();
        assert_eq!(p.jobs[1].submit_ms, 60 * SECOND);
        assert_eq!(p.jobs[1].sleep_ms, 9 * SECOND);
        // 3 h / 600 = 18 s: one real minute, which is 10 simulated hours.
        assert_eq!(p.jobs[1].limit_min, 1);
        assert_eq!(p.stream[1].limit, 10 * HOUR);
        assert_eq!(p.stream[1].runtime, 90 * MINUTE);
        assert_eq!(p.stop_ms, 90 * SECOND);
        assert_eq!(p.horizon(), 15 * HOUR);
    }

    #[test]
    fn failures_follow_the_simulators_timeline() {
        let mut s = spec(100.0);
        s.failures = FailureModel::with_unavailability(0.2, Some(5.0)).unwrap();
        let jobs = [job(0, 0, 1, None), job(1, 400 * HOUR, 1, None)];
        let p = schedule(&jobs, &s).unwrap();
        assert!(p.tray_events.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
        // Each tray alternates down and up, starting with down.
        for tray in 0..36 {
            let states: Vec<bool> = p
                .tray_events
                .iter()
                .filter(|e| e.tray == tray)
                .map(|e| e.down)
                .collect();
            assert!(
                states.iter().enumerate().all(|(i, &d)| d == (i % 2 == 0)),
                "{states:?}"
            );
        }
        let horizon_real = p.stop_ms;
        assert!(p.tray_events.iter().all(|e| e.at_ms <= horizon_real));
        assert!(p.tray_events.len() > 36, "{}", p.tray_events.len());
    }

    #[test]
    fn the_scale_fits_the_submissions_into_the_minutes() {
        let jobs = [job(0, 0, 1, None), job(1, 100 * HOUR, 1, None)];
        assert!((scale_for(&jobs, 10.0) - 600.0).abs() < 1e-9);
        assert!(schedule(&jobs, &spec(0.5)).is_err());
    }
}
