//! The discrete-event loop: one policy replays a workload on a simulated cluster.
//!
//! Events are job arrivals, job ends and tray state changes. All events at one instant are
//! handled (ends, then tray changes, then arrivals; ties by job or tray number), then one
//! scheduling pass runs ([`crate::run::scheduler`]). A tray that fails under a running job kills
//! it; the job is queued again, behind every job already waiting (slurmctld resets a requeued
//! job's submit time: [`crate::run::queue`]), and later restarts with the work after its last
//! checkpoint still to do ([`crate::workload::checkpoint`]; all of it without checkpoints).
//! After each pass a pending job of a higher tier that did not start may preempt running
//! jobs of a lower one ([`crate::run::preemption`]): the victims are requeued like killed
//! jobs (or cancelled) and the job starts on their trays after [`KILL_DELAY`].
//! Nothing depends on hash order or wall-clock time, so a seed gives one exact result.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use serde::{Deserialize, Serialize};

use crate::config::Policy;
use crate::contenders::policy::{Placer, PolicyKind};
use crate::idle::{self, Moment, Waiting};
use crate::job::{Job, Millis, HOUR};
use crate::measures::metrics::{Fate, Price, Recorder, Snapshot};
use crate::measures::policy_report::PolicyReport;
use crate::run::cluster::{Cluster, TrayState};
use crate::run::failures::{FailureModel, FailureTimeline};
use crate::run::preemption::{self, Candidate, Choice, Order, PreemptMode, KILL_DELAY};
use crate::run::queue::Queue;
use crate::run::scheduler::{run_pass_planned, Backfill, Pass, Planned, Running, Start};
use crate::slowdown::Slowdown;
use crate::workload::checkpoint::Checkpoints;

/// Everything about a run except the workload and the policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    pub racks: usize,
    pub trays_per_rack: usize,
    pub gpus_per_tray: usize,
    pub failures: FailureModel,
    /// Seeds the failure timeline (the workload has its own seed).
    pub seed: u64,
    /// Slurm's `bf_max_job_test`: how many queued jobs after the head backfill looks at.
    pub bf_depth: usize,
    /// How backfill protects the jobs waiting ahead of the ones it starts.
    #[serde(default)]
    pub backfill: Backfill,
    /// How far ahead backfill reserves (Slurm's `bf_window`, 1 day by default; a replay scales
    /// the lab's real day); `None`: without limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bf_window: Option<Millis>,
    /// How much longer than its run time a job holds its trays: slurmctld allocates them
    /// before the batch script starts and frees them after it has ended (launch, completion);
    /// the replay labs measure about 0.1 real seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_overhead: Option<Millis>,
    /// Where in the period the passes fall (`phase + k * sched_period`): slurmctld's tick
    /// has no fixed phase against the workload, so a prediction averages several.
    #[serde(default)]
    pub tick_phase: Millis,
    /// Time every placement call (makes the report depend on the machine).
    pub timing: bool,
    /// Recount the cluster after every event (tests).
    pub check_invariants: bool,
    /// Points in the downsampled time series.
    pub series_bins: usize,
    /// The nvl72 engine's policy knobs.
    #[serde(skip)]
    pub policy: Policy,
    /// Stop at this time even if jobs are left (they count as unfinished).
    pub horizon: Option<Millis>,
    /// A job killed by tray failures more often than this is held instead of re-queued
    /// (Slurm's `MaxBatchRequeue`, default 5); `None`: re-queue forever.
    pub max_requeue: Option<u32>,
    /// Scheduling passes only at multiples of this period, like slurmctld's one-second
    /// scheduling tick (backfill's `bf_interval`, the main loop's background tick); `None`:
    /// a pass right after every event. Replays set it to one real second in simulated time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched_period: Option<Millis>,
    /// A job killed by a failure waits this long before it may start again, like the begin
    /// time slurmctld gives a requeued job; `None`: it may restart at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_delay: Option<Millis>,
    /// What a rack boundary costs a job's run time; off unless asked for, so reports saved
    /// before the model read as they were run.
    #[serde(default, skip_serializing_if = "Slowdown::is_off")]
    pub slowdown: Slowdown,
    /// How often jobs save their progress, so that a killed job resumes from its last
    /// checkpoint; none unless asked for, so reports saved before the model read as run.
    #[serde(default, skip_serializing_if = "Checkpoints::is_none")]
    pub checkpoints: Checkpoints,
    /// What a preempted job undergoes (only workloads with tiers preempt).
    #[serde(default, skip_serializing_if = "PreemptMode::is_default")]
    pub preempt_mode: PreemptMode,
}

impl SimConfig {
    pub fn new(racks: usize) -> SimConfig {
        SimConfig {
            racks,
            trays_per_rack: 18,
            gpus_per_tray: 4,
            failures: FailureModel::None,
            seed: 1,
            bf_depth: 500,
            backfill: Backfill::default(),
            bf_window: Some(24 * HOUR),
            run_overhead: None,
            tick_phase: 0,
            timing: false,
            check_invariants: false,
            series_bins: 200,
            policy: Policy::default(),
            horizon: None,
            max_requeue: Some(5),
            sched_period: None,
            requeue_delay: None,
            slowdown: Slowdown::default(),
            checkpoints: Checkpoints::None,
            preempt_mode: PreemptMode::default(),
        }
    }

    pub fn trays(&self) -> usize {
        self.racks * self.trays_per_rack
    }

    /// How this run models slurmctld's scheduler, for the reports: a replay prints it next to
    /// the lab's own settings, so both sides say what they assumed.
    pub fn describe_scheduler(&self) -> String {
        let secs = |ms: Millis| format!("{:.0} s", ms as f64 / 1000.0);
        let passes = match self.sched_period.filter(|&p| p > 0) {
            Some(p) => format!("a pass every {} (slurmctld's tick)", secs(p)),
            None => "a pass after every event".into(),
        };
        let requeue = match self.requeue_delay.filter(|&d| d > 0) {
            Some(d) => format!("a requeued job waits {}", secs(d)),
            None => "a requeued job may restart at once".into(),
        };
        let backfill = match self.backfill {
            Backfill::Easy => "EASY backfill (the head's reservation only)",
            Backfill::Conservative => "backfill reserving for every job it tests",
        };
        let overhead = match self.run_overhead.filter(|&o| o > 0) {
            Some(o) => format!("; a job holds its trays {} past its run time", secs(o)),
            None => String::new(),
        };
        let window = match self.bf_window {
            Some(w) => format!(" up to {:.0} h ahead", w as f64 / HOUR as f64),
            None => String::new(),
        };
        format!(
            "FIFO + {backfill}{window}, {} queued jobs (bf_max_job_test); {passes}; {requeue}{overhead}",
            self.bf_depth
        )
    }
}

/// A queue with nothing running and nothing left to arrive that has not started a job for
/// this long is stuck (its jobs wait for a tray state that does not come): the run stops.
const STALL: Millis = 30 * 24 * crate::job::HOUR;

/// Event kinds, in the order they are handled at one instant.
const END: u8 = 0;
const TRAY: u8 = 1;
/// A killed job becomes eligible again (after `requeue_delay`).
const ELIGIBLE: u8 = 2;
/// A waiting job's rack limit (`[policy] switches`) lifts: a pass may now spill it.
const WAIT_OVER: u8 = 3;

struct Run {
    trays: Vec<usize>,
    /// The fingerprint of its trays ([`crate::contenders::free_map::print_of`]), taken once.
    print: crate::contenders::free_map::Print,
    start: Millis,
}

struct Sim<'a> {
    cfg: &'a SimConfig,
    jobs: &'a [Job],
    placer: Placer,
    cluster: Cluster,
    failures: FailureTimeline,
    /// `(time, kind, job or tray, epoch)`; an end event whose epoch is stale is ignored.
    events: BinaryHeap<Reverse<(Millis, u8, usize, u32)>>,
    next_arrival: usize,
    queue: Queue,
    /// Killed jobs waiting out `requeue_delay` (queued, not yet eligible).
    delayed: usize,
    /// By `(expected end, job)`: the order a pass plans in, kept instead of sorted each pass.
    /// The expected end is when backfill expects the run to end: its start plus its time
    /// limit (a run stretched past its limit is expected any moment from then on, as Slurm's
    /// backfill treats it).
    running: BTreeMap<(Millis, usize), Run>,
    /// Each running job's expected end: its key in `running`.
    expected_end: Vec<Millis>,
    /// Runs of each job so far killed (by failures or preemption): tells stale end events
    /// apart.
    epoch: Vec<u32>,
    /// Runs of each job killed by failures (`max_requeue` counts these).
    failed: Vec<u32>,
    /// Some job is above tier 0: passes are followed by preemption.
    tiers: bool,
    /// Jobs cancelled by preemption.
    cancelled: usize,
    done: usize,
    rejected: usize,
    held: usize,
    /// Last time a job arrived, started or ended.
    progress_at: Millis,
    /// The head job's reserved trays at the last pass (the idle breakdown's `reserved`).
    reserved: Vec<usize>,
    /// The jobs the last pass looked at, in priority order (the idle breakdown's W).
    looked_at: Vec<usize>,
    rec: Recorder,
}

/// Runs `jobs` (sorted by submit time, `id` = index) under `kind`; `progress` is called
/// with the number of finished jobs after every instant.
pub fn simulate(
    cfg: &SimConfig,
    jobs: &[Job],
    kind: PolicyKind,
    progress: &dyn Fn(usize),
) -> PolicyReport {
    assert!(
        jobs.iter().enumerate().all(|(i, j)| j.id == i)
            && jobs.windows(2).all(|w| w[0].submit <= w[1].submit),
        "jobs must be sorted by submit time and numbered in that order"
    );
    let mut sim = Sim::new(cfg, jobs, kind);
    sim.run(progress);
    let latency = sim.placer.latency();
    let (calls, summary) = (latency.calls(), latency.summary());
    sim.rec.finish(kind, jobs, calls, summary, cfg.series_bins)
}

/// [`simulate`] for several policies, one thread each when `parallel` (timings then share
/// the cores); reports in `kinds` order.
pub fn simulate_all(
    cfg: &SimConfig,
    jobs: &[Job],
    kinds: &[PolicyKind],
    parallel: bool,
    progress: &(dyn Fn(PolicyKind, usize) + Sync),
) -> Vec<PolicyReport> {
    if !parallel {
        return kinds
            .iter()
            .map(|&k| simulate(cfg, jobs, k, &|done| progress(k, done)))
            .collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = kinds
            .iter()
            .map(|&k| s.spawn(move || simulate(cfg, jobs, k, &|done| progress(k, done))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("simulation thread panicked"))
            .collect()
    })
}

impl<'a> Sim<'a> {
    fn new(cfg: &'a SimConfig, jobs: &'a [Job], kind: PolicyKind) -> Sim<'a> {
        let trays = cfg.trays();
        let mut failures = FailureTimeline::new(cfg.failures, trays, cfg.seed);
        let mut events = BinaryHeap::new();
        let mut down = vec![false; trays];
        for (t, d) in down.iter_mut().enumerate() {
            let (is_down, next) = failures.start(t);
            *d = is_down;
            if let Some(at) = next {
                events.push(Reverse((at, TRAY, t, 0)));
            }
        }
        let mut queue = Queue::new(jobs.len());
        for j in jobs {
            queue.set_tier(j.id, j.tier.level);
        }
        Sim {
            cfg,
            jobs,
            placer: Placer::new(kind, cfg.racks, cfg.trays_per_rack, &cfg.policy, cfg.timing),
            cluster: Cluster::new(cfg.racks, cfg.trays_per_rack, &down),
            failures,
            events,
            next_arrival: 0,
            queue,
            delayed: 0,
            running: BTreeMap::new(),
            expected_end: vec![0; jobs.len()],
            epoch: vec![0; jobs.len()],
            failed: vec![0; jobs.len()],
            tiers: jobs.iter().any(|j| j.tier.level > 0),
            cancelled: 0,
            done: 0,
            rejected: 0,
            held: 0,
            progress_at: 0,
            reserved: Vec::new(),
            looked_at: Vec::new(),
            rec: Recorder::new(
                jobs.len(),
                jobs.last().map_or(0, |j| j.submit),
                trays,
                cfg.trays_per_rack,
                cfg.gpus_per_tray,
            )
            .checkpointing(cfg.checkpoints),
        }
    }

    fn run(&mut self, progress: &dyn Fn(usize)) {
        self.rec.set(0, self.snapshot());
        // With a scheduling period: the tick at which the next pass is due, if one is.
        let mut pass_due: Option<Millis> = None;
        while self.done + self.rejected + self.held + self.cancelled < self.jobs.len() {
            let next_event = self.events.peek().map(|Reverse(e)| e.0);
            let next_arrival = self.jobs.get(self.next_arrival).map(|j| j.submit);
            let Some(now) = next_event
                .into_iter()
                .chain(next_arrival)
                .chain(pass_due)
                .min()
            else {
                break; // nothing will ever change again: the queue is stuck
            };
            let idle = self.running.is_empty() && self.next_arrival == self.jobs.len();
            if let Some(h) = self.cfg.horizon.filter(|&h| now > h) {
                self.rec.advance(h); // the state since the last event lasts until the horizon
                break;
            }
            if idle && now > self.progress_at + STALL {
                break;
            }
            self.rec.advance(now);
            while let Some(&Reverse((t, kind, id, epoch))) = self.events.peek() {
                if t != now {
                    break;
                }
                self.events.pop();
                match kind {
                    END => self.end(now, id, epoch),
                    TRAY => self.tray_change(now, id),
                    WAIT_OVER => {} // the pass below sees the limit lifted
                    _ => {
                        self.delayed -= 1;
                        self.queue.eligible(id);
                    }
                }
            }
            while let Some(job) = self.jobs.get(self.next_arrival).filter(|j| j.submit == now) {
                self.arrive(now, job.id);
                self.next_arrival += 1;
            }
            match self.cfg.sched_period.filter(|&p| p > 0) {
                None => self.schedule(now),
                Some(period) => {
                    let phase = self.cfg.tick_phase % period;
                    let tick = (now.max(phase) - phase).next_multiple_of(period) + phase;
                    if tick == now {
                        pass_due = None;
                        self.schedule(now);
                    } else if pass_due.is_none() {
                        pass_due = Some(tick);
                    }
                }
            }
            let snapshot = self.snapshot();
            self.rec.set(now, snapshot);
            if self.cfg.check_invariants {
                self.check();
            }
            progress(self.done);
        }
    }

    fn arrive(&mut self, now: Millis, job: usize) {
        let j = &self.jobs[job];
        self.progress_at = now;
        if self
            .placer
            .never_runnable(crate::contenders::policy::SimRequest::of(j))
        {
            self.rejected += 1;
            self.rec.rejected(job);
        } else {
            self.queue.insert(job, now);
            self.rec.queued(job, now);
            if let Some(at) = self.placer.wait_over(j).filter(|&at| at > now) {
                self.events.push(Reverse((at, WAIT_OVER, job, 0)));
            }
        }
    }

    fn end(&mut self, now: Millis, job: usize, epoch: u32) {
        if epoch != self.epoch[job] {
            return; // the run this event belonged to was killed
        }
        let run = self.stop(job).expect("ending job is running");
        self.cluster.release(job, &run.trays);
        self.done += 1;
        self.progress_at = now;
        self.rec.finished(job, now);
    }

    fn tray_change(&mut self, now: Millis, tray: usize) {
        let was_down = self.cluster.state(tray) == TrayState::Down;
        if was_down {
            self.cluster.mark_up(tray);
        } else {
            if let TrayState::Busy(job) = self.cluster.state(tray) {
                let run = self.stop(job).expect("busy tray has a running job");
                self.cluster.release(job, &run.trays);
                self.epoch[job] += 1;
                self.failed[job] += 1;
                self.rec
                    .killed(job, run.trays.len(), now.saturating_sub(run.start));
                if self.cfg.max_requeue.is_some_and(|m| self.failed[job] > m) {
                    self.held += 1;
                    self.rec.held(job);
                } else {
                    self.requeue(now, job);
                }
            }
            self.cluster.mark_down(tray);
            self.rec.tray_failed();
        }
        if let Some(at) = self.failures.next_change(tray, now, !was_down) {
            self.events.push(Reverse((at, TRAY, tray, 0)));
        }
    }

    /// A killed `job` waits from now on, but is eligible only after the requeue delay.
    fn requeue(&mut self, now: Millis, job: usize) {
        self.rec.queued(job, now);
        match self.cfg.requeue_delay.filter(|&d| d > 0) {
            Some(d) => {
                self.queue.requeued(job, now);
                self.delayed += 1;
                self.events.push(Reverse((now + d, ELIGIBLE, job, 0)));
            }
            None => {
                self.queue.insert(job, now);
            }
        }
    }

    /// After a pass: each pending job, in queue order, that has lower-tier preemptable jobs
    /// running preempts the ones its policy chooses ([`preemption`]) and starts on the trays
    /// after [`KILL_DELAY`].
    fn preempt(&mut self, now: Millis) {
        let order = Order::of(self.placer.kind());
        let pending: Vec<usize> = self
            .queue
            .iter()
            .filter(|&j| self.jobs[j].tier.level > 0)
            .collect();
        for j in pending {
            let job = &self.jobs[j];
            let gpus = self.cfg.gpus_per_tray as f64;
            let mut candidates: Vec<Candidate> = self
                .running
                .iter()
                .filter(|(&(_, v), _)| job.tier.preempts(self.jobs[v].tier))
                .map(|(&(_, v), r)| Candidate {
                    job: v,
                    tier: self.jobs[v].tier.level,
                    trays: r.trays.clone(),
                    lost: (self.rec.loss_if_killed(v, now) * gpus / 1000.0) as u64,
                })
                .collect();
            if candidates.is_empty() {
                continue;
            }
            preemption::sort_slurm_order(&mut candidates);
            let free = self.cluster.free_map();
            let choice = match order {
                Order::LeastLoss => {
                    let pieces = nvl72_engine::placement::Pieces::of_job(
                        job.trays,
                        job.segment,
                        self.cfg.trays_per_rack,
                    );
                    preemption::least_loss(free, &candidates, pieces)
                }
                Order::Slurm => {
                    let ask = self.placer.ask(job, now);
                    preemption::slurm_order(&mut self.placer, free, &candidates, ask)
                }
            };
            let Some(Choice { trays, victims }) = choice else {
                continue;
            };
            if victims.is_empty() {
                continue;
            }
            self.rec.preempting();
            for v in victims {
                self.kill_for_preemption(now, v);
            }
            self.start_at(now, KILL_DELAY, Start { job: j, trays });
        }
    }

    /// A preemption kills `job`'s run: requeued or cancelled by the run's mode.
    fn kill_for_preemption(&mut self, now: Millis, job: usize) {
        let run = self.stop(job).expect("a victim is running");
        self.cluster.release(job, &run.trays);
        self.epoch[job] += 1;
        let cancel = self.cfg.preempt_mode == PreemptMode::Cancel;
        self.rec.preempted(job, now, cancel);
        if cancel {
            self.cancelled += 1;
        } else {
            self.requeue(now, job);
        }
    }

    fn schedule(&mut self, now: Millis) {
        self.reserved.clear();
        self.looked_at.clear();
        if self.queue.is_empty() || self.cluster.free_count() == 0 {
            return;
        }
        // Each start takes a tray, so the pass looks at no more jobs than this.
        let reach = self.cluster.free_count() + 1 + self.cfg.bf_depth;
        let queue: Vec<usize> = self.queue.iter().take(reach).collect();
        // Sorted by expected end; the jobs past it all end "any moment" (now + 1), in an
        // order no plan depends on.
        let running: Vec<Running<'_>> = self
            .running
            .iter()
            .map(|(&(end, _), r)| Running {
                expected_end: end.max(now + 1),
                trays: &r.trays,
                print: r.print,
            })
            .collect();
        let Planned {
            starts,
            reserved,
            looked_at,
        } = run_pass_planned(
            &Pass {
                now,
                jobs: self.jobs,
                queue: &queue,
                free: self.cluster.free_map(),
                running: &running,
                bf_depth: self.cfg.bf_depth,
                backfill: self.cfg.backfill,
                bf_window: self.cfg.bf_window.unwrap_or(Millis::MAX),
            },
            &mut self.placer,
        );
        self.reserved = reserved;
        self.looked_at = queue[..looked_at].to_vec();
        for s in starts {
            self.start_at(now, 0, s);
        }
        if self.tiers {
            self.preempt(now);
        }
    }

    /// Starts `job` on `trays` at `now`; it runs from `now + delay` (a preemptor waits for
    /// its victims' kill), holding its trays from now.
    fn start_at(&mut self, now: Millis, delay: Millis, Start { job, trays }: Start) {
        let j = &self.jobs[job];
        assert_eq!(trays.len(), j.trays, "job {job} got the wrong tray count");
        self.queue.remove(job);
        self.progress_at = now;
        self.cluster.allocate(job, &trays);
        let racks = self.cluster.per_rack(&trays);
        let pieces: Vec<usize> = racks.iter().map(|&(_, c)| c).collect();
        let factor =
            self.cfg
                .slowdown
                .model
                .factor(&pieces, j.segment, j.class, self.cfg.trays_per_rack);
        let (ran, fate) = self
            .cfg
            .slowdown
            .run(self.rec.remaining(j), j.limit, factor.s);
        let overhead = self.cfg.run_overhead.unwrap_or(0);
        let held_for = match fate {
            Fate::Ends => (ran + overhead).min(j.limit),
            Fate::Overruns => ran + overhead,
            Fate::TimesOut => j.limit,
        };
        // The recorder counts the run from `at`; its trays are held (and counted busy) from
        // now, so a kill delay shows as held, not idle.
        let at = now + delay;
        self.rec.started(j, at, &racks, Price { factor, fate });
        self.events
            .push(Reverse((at + held_for, END, job, self.epoch[job])));
        self.expected_end[job] = at + j.limit;
        self.running.insert(
            (at + j.limit, job),
            Run {
                print: crate::contenders::free_map::print_of(&trays),
                trays,
                start: at,
            },
        );
    }

    /// Takes `job` off the running jobs.
    fn stop(&mut self, job: usize) -> Option<Run> {
        self.running.remove(&(self.expected_end[job], job))
    }

    fn snapshot(&self) -> Snapshot {
        let free = self.cluster.free_count();
        let head_fits_by_count = self
            .queue
            .first()
            .is_some_and(|h| self.jobs[h].trays <= free);
        Snapshot {
            busy: self.cluster.busy_count(),
            healthy: self.cluster.healthy_count(),
            queued: self.queue.len() + self.delayed,
            stranded: if head_fits_by_count { free } else { 0 },
            idle: Some(self.idle()),
        }
    }

    /// The free trays by cause ([`idle::breakdown`]); nothing while no job waits.
    fn idle(&self) -> idle::Idle {
        if self.queue.is_empty() && self.delayed == 0 {
            return idle::Idle::default();
        }
        let waiting: Vec<Waiting> = self
            .looked_at
            .iter()
            .filter(|&&j| self.queue.contains(j))
            .map(|&j| {
                let job = &self.jobs[j];
                let ask = crate::contenders::policy::SimRequest::of(job);
                Waiting {
                    trays: job.trays,
                    rack_need: self.placer.rack_need(ask),
                    whole: job.segment.is_none() && job.trays >= self.cfg.trays_per_rack,
                    several: match job.segment {
                        Some(s) => job.trays > s,
                        None => job.trays > self.cfg.trays_per_rack,
                    },
                }
            })
            .collect();
        idle::breakdown(&Moment {
            trays_per_rack: self.cfg.trays_per_rack,
            free: self.cluster.free_map().as_slice(),
            free_in_rack: self.cluster.free_map().in_racks(),
            down_in_rack: self.cluster.down_in_racks(),
            reserved: &self.reserved,
            waiting: &waiting,
        })
    }

    /// Conservation and no-overlap, recounted from scratch.
    fn check(&self) {
        self.cluster.check().expect("cluster invariants");
        let mut owner = vec![None; self.cluster.total()];
        for (&(end, job), run) in &self.running {
            assert_eq!(end, self.expected_end[job]);
            for &t in &run.trays {
                assert!(owner[t].is_none(), "tray {t} held by two jobs");
                owner[t] = Some(job);
                assert_eq!(self.cluster.state(t), TrayState::Busy(job));
            }
        }
        let held = owner.iter().filter(|o| o.is_some()).count();
        assert_eq!(held, self.cluster.busy_count(), "busy trays without a job");
        assert!(self
            .queue
            .iter()
            .all(|j| !self.running.contains_key(&(self.expected_end[j], j))));
    }
}

#[cfg(test)]
pub(crate) mod tests;
