//! Turns what Slurm did into the simulator's report: every submission, start, end, requeue
//! and tray change is replayed, in time order, into the simulator's own
//! [`Recorder`], with real time scaled back to simulated time,
//! so both sides are measured by one definition.
//!
//! Stranded GPUs need a judgement the simulator makes inside its scheduler ("the head of the
//! queue fits by count but the policy cannot place it"). Here it is read off the state Slurm
//! left after each instant: if the first waiting job (Slurm's FIFO order is the workload's)
//! asks for no more trays than are free and healthy, yet did not start, the free GPUs count
//! as stranded until the next event.

use std::collections::BTreeMap;

use super::lab_nodes::tray_of;
use super::observe::{LogEvent, What};
use super::schedule::Schedule;
use crate::contenders::policy::PolicyKind;
use crate::job::Millis;
use crate::measures::metrics::{Price, Recorder, Snapshot};
use crate::measures::policy_report::PolicyReport;
use crate::slowdown::Slowdown;
use crate::workload::checkpoint::Checkpoints;

/// What the driver knows besides the log.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Observed {
    /// Unix milliseconds of real time zero (the replay's start).
    pub t0_ms: i64,
    /// Slurm's job id of each stream job, by stream id (`None`: never submitted).
    pub slurm_ids: Vec<Option<u32>>,
    /// Tray changes as carried out, real milliseconds after the start.
    pub tray_events: Vec<super::schedule::TrayEvent>,
    /// Stream jobs cancelled after too many kills (Slurm's `MaxBatchRequeue`).
    pub held: Vec<usize>,
}

/// Checks of the log against the schedule, for the report.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fidelity {
    /// Real milliseconds between the planned and the logged submission: mean and max.
    pub submit_late_mean_ms: f64,
    pub submit_late_max_ms: i64,
    /// Starts on a node count other than the job's trays (`-N` jobs only).
    pub wrong_size_starts: usize,
    /// Starts on nodes that are not trays of the lab.
    pub unknown_nodes: usize,
    /// How much longer than its sleep a run held its trays, real ms, from its start line to
    /// its `_job_complete ... done` (runs that ended, not requeued ones): median and 90th
    /// percentile. Launch and completion with slurmd; the driver's ending with `--cloud`.
    pub run_overhead_median_ms: Option<i64>,
    pub run_overhead_p90_ms: Option<i64>,
    /// Runs whose end Slurm logged after another run had started on their trays (a requeue's
    /// line can follow the starts on the nodes it freed): measured as ended at that start.
    #[serde(default)]
    pub ends_logged_after_a_start: usize,
}

enum Ev {
    End { job: usize, killed: bool },
    Tray { tray: usize, down: bool },
    Submit(usize),
    Start { job: usize, trays: Vec<usize> },
}

impl Ev {
    /// Order of events at one instant: ends, tray changes, arrivals, starts (as the simulator).
    fn rank(&self) -> u8 {
        match self {
            Ev::End { .. } => 0,
            Ev::Tray { .. } => 1,
            Ev::Submit(_) => 2,
            Ev::Start { .. } => 3,
        }
    }
}

/// How a real run is measured: the plugin's simulator policy, the lab's shape, the price
/// its jobs paid for their splits, and the time series' bins.
pub struct Measure<'a> {
    pub kind: PolicyKind,
    pub trays_per_rack: usize,
    pub total_trays: usize,
    pub slowdown: &'a Slowdown,
    /// How often its jobs saved their progress (a requeued job resumed from its last one).
    pub checkpoints: Checkpoints,
    pub series_bins: usize,
}

/// The report of one real run.
pub fn report(
    schedule: &Schedule,
    observed: &Observed,
    log: &[LogEvent],
    m: &Measure,
) -> (PolicyReport, Fidelity) {
    let Measure {
        kind,
        trays_per_rack,
        total_trays,
        slowdown,
        checkpoints,
        series_bins,
    } = *m;
    let by_slurm: BTreeMap<u32, usize> = observed
        .slurm_ids
        .iter()
        .enumerate()
        .filter_map(|(job, id)| id.map(|id| (id, job)))
        .collect();
    let stop = observed.t0_ms + schedule.stop_ms as i64;
    let mut fid = Fidelity::default();
    let mut late = Vec::new();
    let mut overheads = Vec::new();
    // Each run's start, what it was to sleep (the work left × the slowdown of its nodes) and
    // that slowdown; each job's work saved by its checkpoints, on the lab's clock.
    let mut run_start: BTreeMap<usize, (i64, i64, f64)> = BTreeMap::new();
    let lab_checkpoints = checkpoints.scaled_down(schedule.scale);
    let mut saved = vec![0u64; schedule.jobs.len()];
    let mut events: Vec<(i64, Ev)> = Vec::new();
    for e in log {
        let Some(&job) = by_slurm.get(&e.job) else {
            continue;
        };
        if e.at_ms > stop {
            continue;
        }
        let at = (e.at_ms - observed.t0_ms).max(0);
        let ev = match &e.what {
            What::Submitted => {
                late.push(at - schedule.jobs[job].submit_ms as i64);
                Ev::Submit(job)
            }
            What::Started(nodes) => {
                let trays: Vec<usize> = nodes
                    .iter()
                    .filter_map(|n| tray_of(n))
                    .filter(|&t| t < total_trays)
                    .collect();
                fid.unknown_nodes += nodes.len() - trays.len();
                if !schedule.stream[job].by_gpus && trays.len() != schedule.stream[job].trays {
                    fid.wrong_size_starts += 1;
                }
                let j = &schedule.stream[job];
                let factor = slowdown.model.factor(
                    &super::stretch::pieces(&trays, trays_per_rack),
                    j.segment,
                    j.class,
                    trays_per_rack,
                );
                let left = schedule.jobs[job].sleep_ms.saturating_sub(saved[job]);
                let sleep = super::stretch::sleep_ms(left, &factor);
                run_start.insert(job, (e.at_ms, sleep as i64, factor.s));
                Ev::Start { job, trays }
            }
            What::Ended => {
                if let Some((start, sleep, _)) = run_start.remove(&job) {
                    overheads.push(e.at_ms - start - sleep);
                }
                Ev::End { job, killed: false }
            }
            What::Requeued => {
                if let Some((start, _, s)) = run_start.remove(&job) {
                    let elapsed = (e.at_ms - start).max(0) as f64;
                    let base = schedule.jobs[job].sleep_ms;
                    saved[job] = lab_checkpoints.after_kill(saved[job], base, elapsed, s).0;
                }
                Ev::End { job, killed: true }
            }
        };
        events.push((at, ev));
    }
    for t in &observed.tray_events {
        events.push((
            t.at_ms as i64,
            Ev::Tray {
                tray: t.tray,
                down: t.down,
            },
        ));
    }
    events.sort_by_key(|(at, ev)| (*at, ev.rank()));
    if !late.is_empty() {
        fid.submit_late_mean_ms = late.iter().sum::<i64>() as f64 / late.len() as f64;
        fid.submit_late_max_ms = late.iter().copied().max().unwrap_or(0);
    }
    overheads.sort_unstable();
    if !overheads.is_empty() {
        fid.run_overhead_median_ms = Some(overheads[overheads.len() / 2]);
        fid.run_overhead_p90_ms = Some(overheads[(overheads.len() - 1) * 9 / 10]);
    }

    let jobs = &schedule.stream;
    let last_submit = jobs.last().map_or(0, |j| j.submit);
    let mut rec = Recorder::new(jobs.len(), last_submit, total_trays, trays_per_rack, 4)
        .checkpointing(checkpoints);
    let mut state = State::new(jobs.len(), total_trays);
    // A held job is held after its last kill only.
    let mut kills_left = vec![0usize; jobs.len()];
    for (_, ev) in &events {
        if let Ev::End { job, killed: true } = ev {
            kills_left[*job] += 1;
        }
    }
    for held in &observed.held {
        state.held[*held] = true;
    }
    // Ends taken ahead of their log line (see `ends_logged_after_a_start`).
    let mut taken = vec![false; events.len()];
    let mut i = 0;
    while i < events.len() {
        let at = events[i].0;
        let t = schedule.sim_ms(at as u64);
        rec.advance(t);
        while i < events.len() && events[i].0 == at {
            if taken[i] {
                i += 1;
                continue;
            }
            match &events[i].1 {
                Ev::Submit(job) => {
                    state.queued[*job] = true;
                    rec.queued(*job, t);
                }
                Ev::Start { job, trays } => {
                    // Slurm gave these trays only once their runs had ended.
                    for before in state.holders(trays).into_iter().filter(|b| b != job) {
                        let end = events[i + 1..].iter().position(
                            |(_, ev)| matches!(ev, Ev::End { job, .. } if *job == before),
                        );
                        let killed = end.is_some_and(|k| {
                            taken[i + 1 + k] = true;
                            matches!(events[i + 1 + k].1, Ev::End { killed: true, .. })
                        });
                        fid.ends_logged_after_a_start += 1;
                        end_run(&mut state, &mut rec, &mut kills_left, before, killed, t);
                    }
                    state.queued[*job] = false;
                    for &tray in trays {
                        state.holder[tray] = Some(*job);
                    }
                    let mut racks: BTreeMap<usize, usize> = BTreeMap::new();
                    for &tray in trays {
                        *racks.entry(tray / trays_per_rack).or_default() += 1;
                    }
                    let racks: Vec<(usize, usize)> = racks.into_iter().collect();
                    // Priced as the lab's job paid it (its script slept base × s).
                    let j = &jobs[*job];
                    let pieces: Vec<usize> = racks.iter().map(|&(_, c)| c).collect();
                    let factor = slowdown
                        .model
                        .factor(&pieces, j.segment, j.class, trays_per_rack);
                    let (_, fate) = slowdown.run(rec.remaining(j), j.limit, factor.s);
                    rec.started(j, t, &racks, Price { factor, fate });
                    state.running.insert(*job, (t, trays.clone()));
                }
                Ev::End { job, killed } => {
                    end_run(&mut state, &mut rec, &mut kills_left, *job, *killed, t);
                }
                Ev::Tray { tray, down } => {
                    if *down && !state.down[*tray] {
                        rec.tray_failed();
                    }
                    state.down[*tray] = *down;
                }
            }
            i += 1;
        }
        rec.set(t, state.snapshot(jobs));
    }
    rec.advance(schedule.horizon());
    let mut report = rec.finish(kind, jobs, 0, None, series_bins);
    report.label = Some(format!("slurm {}", slurm_plugin(kind)));
    (report, fid)
}

/// The run of `job` ends at `t`: a kill queues it again (or holds it after its last kill).
fn end_run(
    state: &mut State,
    rec: &mut Recorder,
    kills_left: &mut [usize],
    job: usize,
    killed: bool,
    t: Millis,
) {
    let Some((start, trays)) = state.running.remove(&job) else {
        return;
    };
    for &tray in &trays {
        state.holder[tray] = None;
    }
    if killed {
        rec.killed(job, trays.len(), t - start);
        kills_left[job] -= 1;
        if state.held[job] && kills_left[job] == 0 {
            rec.held(job);
        } else {
            state.queued[job] = true;
            rec.queued(job, t);
        }
    } else {
        rec.finished(job, t);
    }
}

/// The Slurm topology plugin a simulator policy stands for in the replay.
pub fn slurm_plugin(kind: PolicyKind) -> &'static str {
    match kind {
        PolicyKind::Block => "block",
        PolicyKind::Naive => "none",
        _ => "nvl72",
    }
}

struct State {
    /// The running job on each tray.
    holder: Vec<Option<usize>>,
    down: Vec<bool>,
    queued: Vec<bool>,
    held: Vec<bool>,
    /// Running jobs: start (simulated) and trays.
    running: BTreeMap<usize, (u64, Vec<usize>)>,
}

impl State {
    fn new(jobs: usize, trays: usize) -> State {
        State {
            holder: vec![None; trays],
            down: vec![false; trays],
            queued: vec![false; jobs],
            held: vec![false; jobs],
            running: BTreeMap::new(),
        }
    }

    /// The running jobs that hold any of `trays`.
    fn holders(&self, trays: &[usize]) -> Vec<usize> {
        let mut jobs: Vec<usize> = trays.iter().filter_map(|&t| self.holder[t]).collect();
        jobs.sort_unstable();
        jobs.dedup();
        jobs
    }

    fn snapshot(&self, jobs: &[crate::job::Job]) -> Snapshot {
        let busy = self.holder.iter().filter(|h| h.is_some()).count();
        let healthy = self.down.iter().filter(|&&d| !d).count();
        let free = self
            .holder
            .iter()
            .zip(&self.down)
            .filter(|(h, &d)| h.is_none() && !d)
            .count();
        let head = self.queued.iter().position(|&q| q);
        Snapshot {
            busy,
            healthy,
            queued: self.queued.iter().filter(|&&q| q).count(),
            stranded: match head {
                Some(h) if jobs[h].trays <= free => free,
                _ => 0,
            },
            idle: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Job, HOUR};
    use crate::replay::schedule::{schedule, ScheduleSpec};
    use crate::run::failures::FailureModel;

    fn measure(kind: PolicyKind) -> Measure<'static> {
        static OFF: std::sync::LazyLock<Slowdown> = std::sync::LazyLock::new(Slowdown::default);
        Measure {
            kind,
            trays_per_rack: 18,
            total_trays: 36,
            slowdown: &OFF,
            checkpoints: Checkpoints::None,
            series_bins: 10,
        }
    }

    /// Jobs of an hour (limit two) submitted at `(submit, trays)`, on two racks, 1 real minute
    /// = 1 simulated hour.
    fn hour_jobs(jobs: &[(u64, usize)]) -> Schedule {
        let jobs: Vec<Job> = jobs
            .iter()
            .enumerate()
            .map(|(id, &(submit, trays))| Job::plain(id, submit, trays, HOUR, 2 * HOUR))
            .collect();
        let spec = ScheduleSpec {
            racks: 2,
            trays_per_rack: 18,
            failures: FailureModel::None,
            seed: 1,
            scale: 60.0,
            drain: 2.0,
        };
        schedule(&jobs, &spec).unwrap()
    }

    fn two_jobs() -> Schedule {
        hour_jobs(&[(0, 18), (HOUR, 20)])
    }

    fn ev(at_ms: i64, job: u32, what: What) -> LogEvent {
        LogEvent { at_ms, job, what }
    }

    fn nodes(a: usize, b: usize) -> What {
        What::Started((a..=b).map(|i| format!("gb{i:03}")).collect())
    }

    #[test]
    fn a_real_run_is_measured_like_a_simulated_one() {
        let p = two_jobs(); // 1 real minute = 1 simulated hour
        let obs = Observed {
            t0_ms: 1_000_000,
            slurm_ids: vec![Some(7), Some(8)],
            tray_events: vec![],
            held: vec![],
        };
        let m = 60_000; // one simulated hour in real ms
        let log = [
            ev(1_000_000, 7, What::Submitted),
            ev(1_000_000, 7, nodes(1, 18)),
            ev(1_000_000 + m, 8, What::Submitted),
            ev(1_000_000 + m, 7, What::Ended),
            // The 20-tray job starts half an hour late, over two racks.
            ev(1_000_000 + m + m / 2, 8, nodes(10, 29)),
            ev(1_000_000 + 2 * m + m / 2, 8, What::Ended),
        ];
        let (r, fid) = report(&p, &obs, &log, &measure(PolicyKind::Nvl72));
        assert_eq!(r.label.as_deref(), Some("slurm nvl72"));
        assert_eq!((r.completed, r.unfinished), (2, 0));
        assert_eq!(r.small_jobs_in_one_rack.share, Some(1.0));
        assert_eq!(r.large_jobs_extra_racks, Some(0.0));
        assert_eq!(fid.wrong_size_starts, 0);
        assert_eq!(fid.run_overhead_median_ms, Some(0));
        let all = &r.wait[0];
        assert!((all.mean_h - 0.25).abs() < 1e-9, "{all:?}");
        // The window is the first hour only (one submission after the other): nobody waits in it.
        assert_eq!(r.occupancy_while_waiting, None);
        assert!((r.waiting_h - 0.5).abs() < 1e-9);
        assert!((r.stranded_share.unwrap_or(0.0) - 0.0).abs() < 1e-9);
    }

    #[test]
    fn a_requeued_run_waits_again_and_a_second_start_counts() {
        let p = two_jobs();
        let obs = Observed {
            t0_ms: 0,
            slurm_ids: vec![Some(1), None],
            tray_events: vec![crate::replay::schedule::TrayEvent {
                at_ms: 30_000,
                tray: 0,
                down: true,
            }],
            held: vec![],
        };
        let log = [
            ev(0, 1, What::Submitted),
            ev(0, 1, nodes(1, 18)),
            ev(30_000, 1, What::Requeued),
            ev(40_000, 1, nodes(19, 36)),
            ev(100_000, 1, What::Ended),
        ];
        let (r, fid) = report(&p, &obs, &log, &measure(PolicyKind::Block));
        assert_eq!((r.requeues, r.tray_failures, r.completed), (1, 1, 1));
        // Only the run that ended counts: 60 s after its second start, its sleep.
        assert_eq!(fid.run_overhead_median_ms, Some(0));
        assert!(
            (r.lost_gpu_hours - 18.0 * 4.0 * 0.5).abs() < 1e-9,
            "{}",
            r.lost_gpu_hours
        );
        assert_eq!(r.small_jobs_in_one_rack.eligible, 2);
        assert!((r.wait[0].mean_h - 10.0 / 60.0).abs() < 1e-9);
    }

    #[test]
    fn a_requeue_logged_after_a_start_on_its_trays_ends_the_run_at_that_start() {
        let p = hour_jobs(&[(0, 18), (HOUR, 20), (3 * HOUR, 2)]);
        let obs = Observed {
            t0_ms: 0,
            slurm_ids: vec![Some(7), Some(8), Some(9)],
            tray_events: vec![crate::replay::schedule::TrayEvent {
                at_ms: 30_000,
                tray: 0,
                down: true,
            }],
            held: vec![],
        };
        let m = 60_000;
        // Job 8 starts on 17 of job 7's trays 13 ms before Slurm logs 7's requeue (as
        // slurmctld did on a loaded machine); 7 waits an hour, then runs in rack 2.
        let log = [
            ev(0, 7, What::Submitted),
            ev(0, 7, nodes(1, 18)),
            ev(m, 8, What::Submitted),
            ev(m, 8, nodes(2, 21)),
            ev(m + 13, 7, What::Requeued),
            ev(2 * m, 8, What::Ended),
            ev(2 * m, 7, nodes(19, 36)),
            ev(3 * m, 7, What::Ended),
            ev(3 * m, 9, What::Submitted),
            ev(3 * m, 9, nodes(2, 3)),
            ev(4 * m, 9, What::Ended),
        ];
        let (r, fid) = report(&p, &obs, &log, &measure(PolicyKind::Nvl72));
        assert_eq!(fid.ends_logged_after_a_start, 1);
        assert_eq!((r.requeues, r.completed), (1, 3));
        // Killed after its first hour, at job 8's start.
        assert!(
            (r.lost_gpu_hours - 18.0 * 4.0).abs() < 1e-9,
            "{}",
            r.lost_gpu_hours
        );
        // While job 7 waits, job 8's 20 trays are busy of the 35 healthy ones.
        let busy = r.occupancy_while_waiting.unwrap();
        assert!((busy - 20.0 / 35.0).abs() < 1e-9, "{busy}");
        assert!(r.usable_occupancy_while_waiting.unwrap() <= busy + 1e-12);
    }

    #[test]
    fn a_priced_run_counts_a_split_jobs_gpus_at_their_speed() {
        let p = two_jobs();
        let obs = Observed {
            t0_ms: 0,
            slurm_ids: vec![Some(7), Some(8)],
            tray_events: vec![],
            held: vec![],
        };
        let m = 60_000;
        // Job 7 runs its hour in rack 1; job 8 starts half an hour later over both racks
        // (10 + 10: dense, s = 1.02) for its stretched hour.
        let log = [
            ev(0, 7, What::Submitted),
            ev(0, 7, nodes(1, 18)),
            ev(m, 8, What::Submitted),
            ev(m, 7, What::Ended),
            ev(m + m / 2, 8, nodes(9, 28)),
            ev(m + m / 2 + 61_200, 8, What::Ended),
        ];
        let priced = Slowdown {
            model: crate::slowdown::parse_variant("default").unwrap().0,
            ..Slowdown::default()
        };
        let (r, fid) = report(
            &p,
            &obs,
            &log,
            &Measure {
                slowdown: &priced,
                checkpoints: Checkpoints::None,
                ..measure(PolicyKind::Naive)
            },
        );
        assert_eq!(r.mean_slowdown_split, Some(1.02));
        // Work is tray time ÷ slowdown: job 8 did 20 trays × 60 s, job 7 18 × 60 s.
        let share = |r: &PolicyReport| r.split_work_share.unwrap();
        assert!((share(&r) - 1200.0 / 2280.0).abs() < 1e-9, "{}", share(&r));
        // Its run over its stretched sleep: 61.2 s for 60 s × 1.02.
        assert_eq!(fid.run_overhead_median_ms, Some(0));
        // Unpriced, its 61.2 s count in full.
        let (off, _) = report(&p, &obs, &log, &measure(PolicyKind::Naive));
        assert!(
            (share(&off) - 1224.0 / 2304.0).abs() < 1e-9,
            "{}",
            share(&off)
        );
    }

    #[test]
    fn tray_names_map_to_indices() {}
}
