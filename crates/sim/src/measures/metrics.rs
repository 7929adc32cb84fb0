//! What a simulation run measures, per policy: the [`Recorder`] that integrates it while the
//! run goes, into the schema of [`crate::measures::policy_report`].
//!
//! Definitions (all GPU figures are trays x 4):
//!
//! - **Measurement window**: from the first to the last submission. The drain after the last
//!   submission is left out: how a finite workload's last jobs trickle out says nothing about
//!   steady-state packing. (A workload whose jobs all arrive at once is measured whole.)
//! - **Waiting time**: the time during which at least one job is queued.
//! - **Occupancy while waiting**: allocated GPU-time / healthy GPU-time, integrated over the
//!   waiting time inside the window. Idle GPUs while nobody waits are not the scheduler's
//!   fault, so they are left out. `occupancy_arrivals` integrates over the whole window.
//! - **Occupancy of all trays while waiting**: allocated / *all* GPUs (unavailable ones
//!   included) over the same time: the quantity of the segment-size capacity model.
//! - **Stranded GPUs**: after every scheduling pass, if jobs wait and the job at the head of
//!   the queue needs no more trays than are free and healthy, yet the policy cannot place it,
//!   every free healthy GPU counts as stranded until the next event: there is capacity, but
//!   in the wrong shape. Reported as a time average over the waiting time, and as a share of
//!   the healthy GPUs. The topology-naive policy strands nothing by construction.
//! - **Idle GPUs by cause** ([`crate::idle`]): right after every scheduling pass while a job
//!   waits, each free healthy tray gets exactly one cause, the first that applies below; the
//!   time averages add up to *idle GPUs while waiting* (free healthy GPUs, averaged over the
//!   waiting time). Inputs: the *waiting jobs* W, the jobs the last pass looked at (FIFO up
//!   to the head, then `bf_depth` more) that still wait, in priority order, the head H first
//!   (no pass, as with nothing free: W is empty); each job's
//!   size n and *rack need* h, the fewest free trays a rack must have for the policy to put
//!   part of the job there (naive: 1; a job of n ≤ M = 18 trays: n; `--segment=s`: s; larger
//!   unsegmented jobs: n − M(k − 1) with k = ⌈n/M⌉ racks for nvl72, the next power of two of
//!   ⌈n/M⌉ for block, 1 for nvl72-start-now); a job is *whole* when it has no `--segment` and
//!   n ≥ M, of *several pieces* when it has several segments (n > s) or no segment and
//!   n > M. F' = free trays outside the reservation; C = the jobs of W with n ≤ F' (H only if
//!   it is not whole). Causes 3-7 are decided per rack, with f = its free trays outside the
//!   reservation and u = its unavailable trays.
//!   1. `reserved`: the tray is in the head's reservation (the trays the scheduler plans to
//!      give it at its shadow time).
//!   2. `too-few`: no job of W has n ≤ F': no waiting job fits the free trays even ignoring
//!      racks (W empty included). Applies to every non-reserved free tray at once.
//!   3. `other`: a job of C of one piece has h ≤ f: a job that fits one rack would fit this
//!      one, yet did not start (the policy's own rule, e.g. block's for GPU-sized jobs).
//!   4. `rack-set`: a job of C of several pieces has h ≤ f: the rack could hold a piece of
//!      it, and the job waits for enough such racks.
//!   5. `failed`: some job of W has f < h ≤ f + u: healthy, the unavailable trays would make
//!      the rack fit it.
//!   6. `whole-rack`: H is whole: it waits for a whole rack (n = 18) or its rack set, and
//!      no other waiting job fits these trays.
//!   7. `remainder`: otherwise: fewer free trays than any waiting job needs in a rack.
//!
//!   The naive policy has only `reserved` and `too-few` (every tray is of use to it), so its
//!   breakdown is the baseline of what any scheduler leaves idle.
//! - **Small jobs in one rack**: placements of jobs without `--segment` that fit a rack
//!   (`<= 18` trays) whose trays all lie in one rack. Every start counts, restarts included.
//! - **GPU-sized jobs in one rack**: the same, for the jobs sized by GPUs (`--gpus`, no `-N`).
//! - **Segments in one rack**: for jobs with `--segment=s`, the segments that can be formed
//!   inside one rack from the placement, `sum over racks floor(trays in rack / s)`, out of
//!   `n / s`.
//! - **Extra racks**: for jobs without `--segment` larger than a rack, racks used beyond the
//!   minimum `ceil(n / 18)`, averaged over their placements.
//! - **Piece balance**: for the same jobs, their smallest piece (trays in one rack) over the
//!   even share `n / racks used`, averaged over their placements: 1 for 16 + 16 + 16, 0.75 for
//!   18 + 18 + 12. The smallest piece has the fewest NICs for the job's traffic between racks.
//! - **Goodput while waiting**: usable occupancy less the work that was thrown away: a run a
//!   failure, a preemption or its time limit kills loses what it did since its last checkpoint
//!   ([`crate::workload::checkpoint`]); that stretch of its usable trays is taken back out of the same
//!   windows. The headline: GPU time that did work at NVLink speed *and was kept*. Equals
//!   usable occupancy when no run was killed.
//! - **Lost work**: the same thrown-away work in GPU-hours at NVLink speed, per cause.
//! - **Queue wait**: total time a completed job spent queued, from submission to its final
//!   start, re-queued periods included (run time lost to failures is not wait).

use crate::contenders::latency::LatencySummary;
use crate::contenders::policy::PolicyKind;
use crate::idle::{Idle, CAUSES};
use crate::job::{class_of, hours, Job, Millis, CLASSES};
use crate::measures::policy_report::{
    ClassWait, IdleCause, Loss, LostWork, PolicyReport, SeriesPoint, Share, SlowdownRow,
};
use crate::measures::preemption::PreemptionCounts;
pub use crate::slowdown::Fate;
use crate::slowdown::{CommClass, Factor};
use crate::workload::checkpoint::Checkpoints;

/// The cluster at one moment, as the metrics need it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub busy: usize,
    pub healthy: usize,
    pub queued: usize,
    /// Free healthy trays counted as stranded (see the module docs).
    pub stranded: usize,
    /// The free healthy trays by cause, when the source knows them (the simulator; not a
    /// replay of a real slurmctld).
    pub idle: Option<Idle>,
}

#[derive(Debug, Clone, Default)]
struct JobRecord {
    queued_since: Option<Millis>,
    waited: Millis,
    end: Option<Millis>,
    rejected: bool,
    held: bool,
    /// Work at NVLink speed its checkpoints have kept (ms); a restart does only the rest.
    saved: Millis,
    /// The run in progress and its price.
    run: Option<OpenRun>,
}

/// A run the recorder prices until it ends.
#[derive(Debug, Clone, Copy)]
struct OpenRun {
    start: Millis,
    trays: usize,
    factor: Factor,
    fate: Fate,
    /// Its part of the usable trays, in thousandths of a tray.
    usable_milli: u64,
    /// Indexes into [`CommClass::ALL`] and [`CLASSES`].
    comm: usize,
    size: usize,
    /// The job's work still to do when the run started (ms at NVLink speed).
    remaining: Millis,
}

/// What a start costs: the placement's slowdown and the run's fate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub factor: Factor,
    pub fate: Fate,
}

impl Price {
    /// A run that pays `factor` and ends within its limit.
    pub fn ends(factor: Factor) -> Price {
        Price {
            factor,
            fate: Fate::Ends,
        }
    }

    /// A run does work at NVLink speed whatever its fate; what a kill throws away is taken
    /// back out of goodput, not of usable occupancy.
    fn usable_milli(&self, trays: usize) -> u64 {
        (1000.0 * trays as f64 / self.factor.s).round() as u64
    }
}

/// Sums behind a [`SlowdownRow`].
#[derive(Debug, Clone, Copy, Default)]
struct SlowdownSums {
    runs: u64,
    split_runs: u64,
    s_sum: f64,
    held_tray_ms: f64,
    work_tray_ms: f64,
}

impl SlowdownSums {
    fn row(&self, class: &str) -> SlowdownRow {
        SlowdownRow {
            class: class.to_string(),
            runs: self.runs,
            split_runs: self.split_runs,
            mean_slowdown: self.s_sum / self.runs.max(1) as f64,
            efficiency: (self.held_tray_ms > 0.0).then(|| self.work_tray_ms / self.held_tray_ms),
        }
    }
}

/// Accumulates the measurements while a simulation runs.
pub struct Recorder {
    gpus_per_tray: f64,
    trays_per_rack: usize,
    total_trays: usize,
    /// End of the measurement window.
    window_end: Millis,
    last: Millis,
    now: Snapshot,
    // Integrals in tray-milliseconds (or milliseconds).
    wait_time: u128,
    wait_in_window: u128,
    busy_waiting: u128,
    healthy_waiting: u128,
    stranded_waiting: u128,
    /// Per cause (`CAUSES` order), once a snapshot carried a breakdown.
    idle_waiting: Option<[u128; 7]>,
    busy_arrivals: u128,
    healthy_arrivals: u128,
    /// Busy trays divided by their slowdowns now, in thousandths, and its integrals.
    usable_now: u64,
    usable_waiting: u128,
    usable_arrivals: u128,
    /// How a kill's lost stretch is taken back out of the waiting window: `(t, time waited
    /// in the window up to t, whether jobs waited from t on)`, one entry per change.
    waiting_clock: Vec<(Millis, u128, bool)>,
    checkpoints: Checkpoints,
    /// Usable tray-ms (thousandths) thrown away inside the waiting and the arrival windows.
    lost_waiting: f64,
    lost_arrivals: f64,
    /// Work thrown away (tray-ms at NVLink speed), per [`Loss`].
    lost: [f64; 3],
    /// Work (tray-ms ÷ slowdown): all, split, cut.
    work: [f64; 3],
    split_s: (u64, f64),
    smallest_piece: std::collections::BTreeMap<usize, u64>,
    by_comm: [SlowdownSums; 3],
    by_size: [SlowdownSums; CLASSES.len()],
    overruns: u64,
    timeouts: u64,
    timeout_tray_ms: u128,
    points: Vec<(Millis, Snapshot)>,
    jobs: Vec<JobRecord>,
    tray_failures: u64,
    requeues: u64,
    lost_tray_ms: u128,
    small_in_rack: Share,
    gpu_sized_in_rack: Share,
    segments_in_rack: Share,
    extra_racks: (u64, u64),
    /// Placements of large jobs and the sum of their piece balances.
    piece_balance: (u64, f64),
    preemption: PreemptionCounts,
}

impl Recorder {
    /// `last_submit`: when the last job arrives (end of the submission window).
    pub fn new(
        jobs: usize,
        last_submit: Millis,
        total_trays: usize,
        trays_per_rack: usize,
        gpus_per_tray: usize,
    ) -> Self {
        Recorder {
            gpus_per_tray: gpus_per_tray as f64,
            trays_per_rack,
            total_trays,
            window_end: if last_submit > 0 {
                last_submit
            } else {
                Millis::MAX
            },
            last: 0,
            now: Snapshot::default(),
            wait_time: 0,
            wait_in_window: 0,
            busy_waiting: 0,
            healthy_waiting: 0,
            stranded_waiting: 0,
            idle_waiting: None,
            busy_arrivals: 0,
            healthy_arrivals: 0,
            usable_now: 0,
            usable_waiting: 0,
            usable_arrivals: 0,
            waiting_clock: Vec::new(),
            checkpoints: Checkpoints::None,
            lost_waiting: 0.0,
            lost_arrivals: 0.0,
            lost: [0.0; 3],
            work: [0.0; 3],
            split_s: (0, 0.0),
            smallest_piece: Default::default(),
            by_comm: Default::default(),
            by_size: Default::default(),
            overruns: 0,
            timeouts: 0,
            timeout_tray_ms: 0,
            points: Vec::new(),
            jobs: vec![JobRecord::default(); jobs],
            tray_failures: 0,
            requeues: 0,
            lost_tray_ms: 0,
            small_in_rack: Share::default(),
            gpu_sized_in_rack: Share::default(),
            segments_in_rack: Share::default(),
            extra_racks: (0, 0),
            piece_balance: (0, 0.0),
            preemption: PreemptionCounts::default(),
        }
    }

    /// Jobs save their progress `checkpoints` (none unless told).
    pub fn checkpointing(mut self, checkpoints: Checkpoints) -> Self {
        self.checkpoints = checkpoints;
        self
    }

    /// The work `job` has still to do: its run time less what its checkpoints kept.
    pub fn remaining(&self, job: &Job) -> Millis {
        job.runtime.saturating_sub(self.jobs[job.id].saved)
    }

    /// Integrates the current state up to `t`.
    pub fn advance(&mut self, t: Millis) {
        let s = self.now;
        let waiting = s.queued > 0;
        if self
            .waiting_clock
            .last()
            .map_or(true, |&(_, _, w)| w != waiting)
        {
            self.waiting_clock
                .push((self.last, self.wait_in_window, waiting));
        }
        if s.queued > 0 {
            self.wait_time += t.saturating_sub(self.last) as u128;
        }
        let dt = t.min(self.window_end).saturating_sub(self.last) as u128;
        self.busy_arrivals += s.busy as u128 * dt;
        self.healthy_arrivals += s.healthy as u128 * dt;
        self.usable_arrivals += self.usable_now as u128 * dt;
        if s.queued > 0 {
            self.wait_in_window += dt;
            self.busy_waiting += s.busy as u128 * dt;
            self.usable_waiting += self.usable_now as u128 * dt;
            self.healthy_waiting += s.healthy as u128 * dt;
            self.stranded_waiting += s.stranded as u128 * dt;
            if let Some(idle) = s.idle {
                let sums = self.idle_waiting.get_or_insert([0; 7]);
                for (sum, c) in sums.iter_mut().zip(CAUSES) {
                    *sum += idle.get(c) as u128 * dt;
                }
            }
        }
        self.last = self.last.max(t);
    }

    /// The state from `t` on (after the scheduling pass at `t`).
    pub fn set(&mut self, t: Millis, s: Snapshot) {
        self.now = s;
        match self.points.last_mut() {
            Some((last, p)) if *last == t => *p = s,
            _ => self.points.push((t, s)),
        }
    }

    pub fn queued(&mut self, job: usize, t: Millis) {
        self.jobs[job].queued_since = Some(t);
    }

    pub fn rejected(&mut self, job: usize) {
        self.jobs[job].rejected = true;
    }

    /// `racks` is `(rack, trays there)` for every rack the placement touches; `price` what
    /// the placement costs the job.
    pub fn started(&mut self, job: &Job, t: Millis, racks: &[(usize, usize)], price: Price) {
        let r = &mut self.jobs[job.id];
        if let Some(since) = r.queued_since.take() {
            r.waited += t - since;
        }
        let usable_milli = price.usable_milli(job.trays);
        let remaining = job.runtime.saturating_sub(r.saved);
        r.run = Some(OpenRun {
            remaining,
            start: t,
            trays: job.trays,
            factor: price.factor,
            fate: price.fate,
            usable_milli,
            comm: comm_index(job.class),
            size: class_of(job.trays),
        });
        self.usable_now += usable_milli;
        let f = price.factor;
        for sums in [
            &mut self.by_comm[comm_index(job.class)],
            &mut self.by_size[class_of(job.trays)],
        ] {
            sums.runs += 1;
            sums.split_runs += u64::from(f.split());
            sums.s_sum += f.s;
        }
        if f.split() {
            self.split_s.0 += 1;
            self.split_s.1 += f.s;
            *self.smallest_piece.entry(f.k_min).or_default() += 1;
        }
        if price.fate == Fate::Overruns {
            self.overruns += 1;
        }
        match job.segment {
            Some(s) => {
                let inside: usize = racks.iter().map(|&(_, c)| c / s).sum();
                self.segments_in_rack
                    .add((job.trays / s) as u64, inside as u64);
            }
            None if job.trays <= self.trays_per_rack => {
                self.small_in_rack.add(1, u64::from(racks.len() == 1));
                if job.by_gpus {
                    self.gpu_sized_in_rack.add(1, u64::from(racks.len() == 1));
                }
            }
            None => {
                let min = job.trays.div_ceil(self.trays_per_rack);
                self.extra_racks.0 += 1;
                self.extra_racks.1 += (racks.len() - min) as u64;
                let smallest = racks.iter().map(|&(_, c)| c).min().unwrap_or(0);
                self.piece_balance.0 += 1;
                self.piece_balance.1 += smallest as f64 * racks.len() as f64 / job.trays as f64;
            }
        }
    }

    pub fn finished(&mut self, job: usize, t: Millis) {
        self.jobs[job].end = Some(t);
        if self.jobs[job].run.is_some_and(|r| r.fate == Fate::TimesOut) {
            self.lose(job, t, Loss::Limit);
        }
        if let Some(run) = self.close(job, t) {
            if run.fate == Fate::TimesOut {
                self.timeouts += 1;
                self.timeout_tray_ms += run.trays as u128 * (t - run.start) as u128;
            }
        }
    }

    /// Ends the priced run of `job` at `t`: its usable trays leave, its work is counted.
    fn close(&mut self, job: usize, t: Millis) -> Option<OpenRun> {
        let run = self.jobs[job].run.take()?;
        self.usable_now -= run.usable_milli;
        let held = run.trays as f64 * t.saturating_sub(run.start) as f64;
        let work = if run.usable_milli == 0 {
            0.0
        } else {
            held / run.factor.s
        };
        self.work[0] += work;
        if run.factor.split() {
            self.work[1] += work;
        }
        if run.factor.cut {
            self.work[2] += work;
        }
        for sums in [&mut self.by_comm[run.comm], &mut self.by_size[run.size]] {
            sums.held_tray_ms += held;
            sums.work_tray_ms += work;
        }
        Some(run)
    }

    /// What killing `job`'s run at `t` would throw away: tray-ms at NVLink speed since its
    /// last checkpoint (0 when it is not running). The steering's measure of work lost.
    pub fn loss_if_killed(&self, job: usize, t: Millis) -> f64 {
        let Some(run) = self.jobs[job].run else {
            return 0.0;
        };
        let before = self.jobs[job].saved;
        let elapsed = t.saturating_sub(run.start) as f64;
        let (_, lost) =
            self.checkpoints
                .after_kill(before, before + run.remaining, elapsed, run.factor.s);
        run.trays as f64 * lost
    }

    /// A pending job starts by preempting others ([`Recorder::preempted`] for each).
    pub fn preempting(&mut self) {
        self.preemption.preemptions += 1;
    }

    /// A preemption killed `job`'s run at `t`: requeued, it loses the work since its last
    /// checkpoint; cancelled, the whole run's work, and it never runs again.
    pub fn preempted(&mut self, job: usize, t: Millis, cancel: bool) {
        if cancel {
            self.jobs[job].saved = 0;
            self.preemption.cancelled += 1;
            let checkpoints = std::mem::replace(&mut self.checkpoints, Checkpoints::None);
            self.lose(job, t, Loss::Preemption);
            self.checkpoints = checkpoints;
        } else {
            self.lose(job, t, Loss::Preemption);
        }
        self.close(job, t);
        self.preemption.jobs_preempted += 1;
    }

    /// The run of `job` is killed at `t`: its work since the last checkpoint is thrown away,
    /// and what it kept is the job's saved work from now on.
    fn lose(&mut self, job: usize, t: Millis, cause: Loss) {
        let Some(run) = self.jobs[job].run else {
            return;
        };
        let before = self.jobs[job].saved;
        let (saved, lost) = self.checkpoints.after_kill(
            before,
            before + run.remaining,
            t.saturating_sub(run.start) as f64,
            run.factor.s,
        );
        self.jobs[job].saved = saved;
        self.lost[cause as usize] += run.trays as f64 * lost;
        // The lost work is the run's last stretch: from its last checkpoint to `t`.
        let from = t - ((lost * run.factor.s).round() as Millis).min(t - run.start);
        let usable = run.usable_milli as f64;
        self.lost_waiting += usable * (self.waited_until(t) - self.waited_until(from)) as f64;
        let in_window = |x: Millis| x.min(self.window_end);
        self.lost_arrivals += usable * (in_window(t) - in_window(from)) as f64;
    }

    /// Time waited inside the measurement window up to `t` (no later than the last advance).
    fn waited_until(&self, t: Millis) -> u128 {
        let i = self.waiting_clock.partition_point(|&(at, _, _)| at <= t);
        let Some(&(at, waited, waiting)) = i.checked_sub(1).map(|i| &self.waiting_clock[i]) else {
            return 0;
        };
        let in_window = |x: Millis| x.min(self.window_end);
        waited + u128::from(waiting) * (in_window(t) - in_window(at)) as u128
    }

    pub fn tray_failed(&mut self) {
        self.tray_failures += 1;
    }

    /// A tray failure killed the job after `ran` ms on `trays` trays.
    pub fn killed(&mut self, job: usize, trays: usize, ran: Millis) {
        if let Some(run) = self.jobs[job].run {
            self.lose(job, run.start + ran, Loss::Failure);
            self.close(job, run.start + ran);
        }
        self.requeues += 1;
        self.lost_tray_ms += trays as u128 * ran as u128;
    }

    /// The job was killed too often and is held (it will not run again).
    pub fn held(&mut self, job: usize) {
        self.jobs[job].held = true;
    }

    /// The final report. `jobs` must be the workload the recorder was created for.
    pub fn finish(
        self,
        policy: PolicyKind,
        jobs: &[Job],
        engine_calls: u64,
        decision_latency: Option<LatencySummary>,
        series_bins: usize,
    ) -> PolicyReport {
        let gpus = self.gpus_per_tray;
        let ratio = |a: u128, b: u128| (b > 0).then(|| a as f64 / b as f64);
        let completed = self.jobs.iter().filter(|j| j.end.is_some()).count();
        let rejected = self.jobs.iter().filter(|j| j.rejected).count();
        let held = self.jobs.iter().filter(|j| j.held).count();
        let makespan = self.jobs.iter().filter_map(|j| j.end).max().unwrap_or(0);
        let total_waiting = self.total_trays as u128 * self.wait_in_window;
        let kept = |usable: u128, lost: f64, healthy: u128| {
            (healthy > 0).then(|| (usable as f64 - lost).max(0.0) / (1000 * healthy) as f64)
        };
        let tray_hours = |tray_ms: f64| tray_ms * gpus / crate::job::HOUR as f64;
        PolicyReport {
            policy,
            label: None,
            jobs: jobs.len(),
            completed,
            rejected,
            held,
            unfinished: jobs.len() - completed - rejected - held,
            tray_failures: self.tray_failures,
            requeues: self.requeues,
            lost_gpu_hours: self.lost_tray_ms as f64 * gpus / crate::job::HOUR as f64,
            makespan_h: hours(makespan),
            waiting_h: hours(self.wait_time as Millis),
            goodput_while_waiting: kept(
                self.usable_waiting,
                self.lost_waiting,
                self.healthy_waiting,
            ),
            goodput_arrivals: kept(
                self.usable_arrivals,
                self.lost_arrivals,
                self.healthy_arrivals,
            ),
            goodput_gpu_hours: tray_hours(self.work[0] - self.lost.iter().sum::<f64>()),
            preemption: self.preemption.report(
                jobs,
                &self
                    .jobs
                    .iter()
                    .map(|j| j.end.map(|_| j.waited))
                    .collect::<Vec<_>>(),
                tray_hours(self.lost[Loss::Preemption as usize]),
            ),
            lost_work: LostWork {
                failure_gpu_hours: tray_hours(self.lost[Loss::Failure as usize]),
                preemption_gpu_hours: tray_hours(self.lost[Loss::Preemption as usize]),
                limit_gpu_hours: tray_hours(self.lost[Loss::Limit as usize]),
            },
            usable_occupancy_while_waiting: ratio(self.usable_waiting, 1000 * self.healthy_waiting),
            usable_occupancy_arrivals: ratio(self.usable_arrivals, 1000 * self.healthy_arrivals),
            split_work_share: (self.work[0] > 0.0).then(|| self.work[1] / self.work[0]),
            misaligned_work_share: (self.work[0] > 0.0).then(|| self.work[2] / self.work[0]),
            mean_slowdown_split: (self.split_s.0 > 0)
                .then(|| self.split_s.1 / self.split_s.0 as f64),
            smallest_piece_runs: self.smallest_piece.iter().map(|(&k, &n)| (k, n)).collect(),
            slowdown_by_comm: CommClass::ALL
                .iter()
                .zip(&self.by_comm)
                .filter(|(_, s)| s.runs > 0)
                .map(|(c, s)| s.row(c.name()))
                .collect(),
            slowdown_by_size: CLASSES
                .iter()
                .zip(&self.by_size)
                .filter(|(_, s)| s.runs > 0)
                .map(|(c, s)| s.row(c.0))
                .collect(),
            overruns: self.overruns,
            timeouts: self.timeouts,
            timeout_gpu_hours: self.timeout_tray_ms as f64 * gpus / crate::job::HOUR as f64,
            occupancy_while_waiting: ratio(self.busy_waiting, self.healthy_waiting),
            occupancy_arrivals: ratio(self.busy_arrivals, self.healthy_arrivals),
            occupancy_of_all_trays_while_waiting: ratio(self.busy_waiting, total_waiting),
            idle_gpus_while_waiting: ratio(
                (self.healthy_waiting - self.busy_waiting) * gpus as u128,
                self.wait_in_window,
            ),
            stranded_gpus: ratio(self.stranded_waiting * gpus as u128, self.wait_in_window),
            stranded_share: ratio(self.stranded_waiting, self.healthy_waiting),
            idle_by_cause: self.idle_waiting.and_then(|sums| {
                let (window, healthy) = (self.wait_in_window, self.healthy_waiting);
                (window > 0 && healthy > 0).then(|| {
                    CAUSES
                        .iter()
                        .zip(sums)
                        .map(|(&cause, sum)| IdleCause {
                            cause,
                            gpus: (sum * gpus as u128) as f64 / window as f64,
                            share: sum as f64 / healthy as f64,
                        })
                        .collect()
                })
            }),
            small_jobs_in_one_rack: self.small_in_rack,
            gpu_sized_in_one_rack: self.gpu_sized_in_rack,
            segments_in_one_rack: self.segments_in_rack,
            large_jobs_extra_racks: ratio(self.extra_racks.1 as u128, self.extra_racks.0 as u128),
            large_jobs_piece_balance: (self.piece_balance.0 > 0)
                .then(|| self.piece_balance.1 / self.piece_balance.0 as f64),
            wait: class_waits(jobs, &self.jobs),
            engine_calls,
            decision_latency,
            series: downsample(&self.points, makespan.max(self.last), series_bins),
            ends: self.jobs.iter().map(|j| j.end).collect(),
        }
    }
}

fn comm_index(class: CommClass) -> usize {
    class as usize
}

fn class_waits(jobs: &[Job], records: &[JobRecord]) -> Vec<ClassWait> {
    let mut per_class: Vec<Vec<f64>> = vec![Vec::new(); CLASSES.len()];
    let mut all = Vec::new();
    for (job, r) in jobs.iter().zip(records).filter(|(_, r)| r.end.is_some()) {
        let w = hours(r.waited);
        per_class[class_of(job.trays)].push(w);
        all.push(w);
    }
    std::iter::once(("all", all))
        .chain(CLASSES.iter().map(|c| c.0).zip(per_class))
        .filter(|(_, w)| !w.is_empty())
        .map(|(class, mut w)| {
            w.sort_by(f64::total_cmp);
            ClassWait {
                class: class.to_string(),
                jobs: w.len(),
                mean_h: w.iter().sum::<f64>() / w.len() as f64,
                p50_h: percentile(&w, 0.50),
                p95_h: percentile(&w, 0.95),
            }
        })
        .collect()
}

/// Nearest-rank percentile of sorted, non-empty `v`.
pub fn percentile(v: &[f64], q: f64) -> f64 {
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Time-averages the step function `points` over `bins` equal bins of `[0, end]`.
pub fn downsample(points: &[(Millis, Snapshot)], end: Millis, bins: usize) -> Vec<SeriesPoint> {
    if points.is_empty() || end == 0 || bins == 0 {
        return Vec::new();
    }
    let width = end as f64 / bins as f64;
    let mut out = Vec::with_capacity(bins);
    let mut i = 0; // points[i] is the state in force at the start of the current piece
    for b in 0..bins {
        let (lo, hi) = (b as f64 * width, (b + 1) as f64 * width);
        let (mut occ, mut queued, mut covered) = (0.0, 0.0, 0.0);
        let mut t = lo;
        while t < hi {
            while i + 1 < points.len() && points[i + 1].0 as f64 <= t {
                i += 1;
            }
            let next = points.get(i + 1).map_or(hi, |p| (p.0 as f64).min(hi));
            let s = points[i].1;
            let dt = next - t;
            if s.healthy > 0 {
                occ += s.busy as f64 / s.healthy as f64 * dt;
            }
            queued += s.queued as f64 * dt;
            covered += dt;
            t = next;
        }
        out.push(SeriesPoint {
            t_h: lo / crate::job::HOUR as f64,
            occupancy: occ / covered,
            queued: queued / covered,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::HOUR;

    fn snap(busy: usize, queued: usize) -> Snapshot {
        Snapshot {
            busy,
            healthy: 10,
            queued,
            stranded: 0,
            idle: None,
        }
    }

    #[test]
    fn occupancy_counts_only_while_jobs_wait() {
        let mut r = Recorder::new(1, 2 * HOUR, 10, 5, 4);
        r.set(0, snap(5, 1));
        r.advance(HOUR);
        r.set(HOUR, snap(10, 0));
        r.advance(2 * HOUR);
        r.set(2 * HOUR, snap(0, 0));
        let job = Job {
            id: 0,
            submit: 0,
            trays: 1,
            segment: None,
            by_gpus: false,
            class: Default::default(),
            runtime: HOUR,
            limit: HOUR,
            tier: Default::default(),
        };
        r.queued(0, 0);
        r.started(&job, HOUR, &[(0, 1)], Price::ends(Factor::WHOLE));
        r.finished(0, 2 * HOUR);
        let rep = r.finish(PolicyKind::Naive, &[job], 0, None, 2);
        assert_eq!(rep.occupancy_while_waiting, Some(0.5));
        assert_eq!(rep.occupancy_arrivals, Some(0.75));
        assert_eq!(rep.waiting_h, 1.0);
        assert_eq!(rep.wait[0].p95_h, 1.0);
        assert_eq!(rep.small_jobs_in_one_rack.share, Some(1.0));
        assert_eq!(rep.series.len(), 2);
        assert_eq!((rep.series[0].occupancy, rep.series[0].queued), (0.5, 1.0));
        assert_eq!(rep.series[1].occupancy, 1.0);
    }

    #[test]
    fn segments_inside_racks_are_counted_per_segment() {
        let mut r = Recorder::new(1, 0, 36, 18, 4);
        let job = Job {
            id: 0,
            submit: 0,
            trays: 12,
            segment: Some(4),
            by_gpus: false,
            class: Default::default(),
            runtime: 1,
            limit: 1,
            tier: Default::default(),
        };
        // 6 + 6 trays: one segment in each rack, one straddles.
        r.started(&job, 0, &[(0, 6), (1, 6)], Price::ends(Factor::WHOLE));
        assert_eq!(r.segments_in_rack.eligible, 3);
        assert_eq!(r.segments_in_rack.inside, 2);
    }

    /// A 2-tray job on 10 healthy trays, waited on for 2 hours, at slowdown `s`.
    fn one_run(s: f64, fate: Fate) -> PolicyReport {
        let mut r = Recorder::new(2, 2 * HOUR, 10, 5, 4);
        let job = Job::plain(0, 0, 2, HOUR, HOUR);
        let factor = Factor {
            s,
            racks: if s > 1.0 { 2 } else { 1 },
            k_min: 1,
            cut: s > 1.5,
        };
        r.queued(0, 0);
        r.queued(1, 0);
        r.started(&job, 0, &[(0, 1), (1, 1)], Price { factor, fate });
        r.set(0, snap(2, 1));
        r.advance(2 * HOUR);
        r.finished(0, 2 * HOUR);
        r.set(2 * HOUR, snap(0, 1));
        let other = Job::plain(1, 0, 1, HOUR, HOUR);
        r.finish(PolicyKind::Naive, &[job, other], 0, None, 1)
    }

    #[test]
    fn usable_occupancy_is_occupancy_divided_by_each_jobs_slowdown() {
        let full = one_run(1.0, Fate::Ends);
        assert_eq!(full.occupancy_while_waiting, Some(0.2));
        assert_eq!(full.usable_occupancy_while_waiting, Some(0.2));
        assert_eq!(full.usable_occupancy_arrivals, full.occupancy_arrivals);
        assert_eq!(full.split_work_share, Some(0.0));
        let slow = one_run(2.0, Fate::Overruns);
        assert_eq!(slow.occupancy_while_waiting, Some(0.2));
        assert_eq!(slow.usable_occupancy_while_waiting, Some(0.1));
        assert_eq!(slow.split_work_share, Some(1.0));
        assert_eq!(slow.misaligned_work_share, Some(1.0));
        assert_eq!(slow.mean_slowdown_split, Some(2.0));
        assert_eq!(slow.smallest_piece_runs, vec![(1, 1)]);
        assert_eq!(slow.overruns, 1);
        let dense = &slow.slowdown_by_comm[0];
        assert_eq!(
            (dense.class.as_str(), dense.runs, dense.split_runs),
            ("dense", 1, 1)
        );
        assert_eq!(dense.efficiency, Some(0.5));
        assert_eq!(slow.slowdown_by_size[0].class, "1-2");
    }

    #[test]
    fn a_run_killed_at_its_limit_keeps_no_work_without_checkpoints() {
        let rep = one_run(2.0, Fate::TimesOut);
        assert_eq!(rep.occupancy_while_waiting, Some(0.2));
        assert_eq!(rep.usable_occupancy_while_waiting, Some(0.1));
        assert_eq!(rep.goodput_while_waiting, Some(0.0));
        assert_eq!((rep.timeouts, rep.timeout_gpu_hours), (1, 16.0));
        assert_eq!(rep.lost_work.limit_gpu_hours, 8.0);
        assert_eq!(rep.goodput_gpu_hours, 0.0);
    }

    /// A 1-tray job of 3 hours' work on 10 trays, killed by a failure after 100 minutes
    /// while another job waits the whole time, checkpointing `every`.
    fn killed_after_100_minutes(every: Checkpoints) -> (PolicyReport, Millis) {
        let minute = crate::job::MINUTE;
        let mut r = Recorder::new(2, 4 * HOUR, 10, 5, 4).checkpointing(every);
        let job = Job::plain(0, 0, 1, 3 * HOUR, 4 * HOUR);
        r.queued(0, 0);
        r.queued(1, 0);
        r.started(&job, 0, &[(0, 1)], Price::ends(Factor::WHOLE));
        r.set(0, snap(1, 1));
        r.advance(100 * minute);
        r.killed(0, 1, 100 * minute);
        let remaining = r.remaining(&job);
        r.set(100 * minute, snap(0, 2));
        r.advance(4 * HOUR);
        let other = Job::plain(1, 0, 1, HOUR, HOUR);
        (
            r.finish(PolicyKind::Naive, &[job, other], 0, None, 1),
            remaining,
        )
    }

    #[test]
    fn a_killed_run_loses_the_work_since_its_last_checkpoint() {
        let minute = crate::job::MINUTE;
        let (rep, remaining) = killed_after_100_minutes(Checkpoints::Every(30 * minute));
        // 100 minutes of work, 90 kept: the restart has 90 of its 180 left.
        assert_eq!(remaining, 90 * minute);
        let gpu_hours = |minutes: f64| 4.0 * minutes / 60.0;
        assert!((rep.lost_work.failure_gpu_hours - gpu_hours(10.0)).abs() < 1e-9);
        // One tray of ten busy for 100 of the 240 waited minutes; 10 of them thrown away.
        let usable = rep.usable_occupancy_while_waiting.unwrap();
        let goodput = rep.goodput_while_waiting.unwrap();
        assert!((usable - 100.0 / 2400.0).abs() < 1e-12, "{usable}");
        assert!((goodput - 90.0 / 2400.0).abs() < 1e-12, "{goodput}");
        assert!((rep.goodput_gpu_hours - gpu_hours(90.0)).abs() < 1e-9);
    }

    #[test]
    fn without_checkpoints_a_killed_run_loses_all_its_work() {
        let (rep, remaining) = killed_after_100_minutes(Checkpoints::None);
        assert_eq!(remaining, 3 * HOUR);
        assert_eq!(rep.goodput_while_waiting, Some(0.0));
        assert!((rep.lost_work.failure_gpu_hours - rep.lost_gpu_hours).abs() < 1e-9);
    }

    #[test]
    fn goodput_is_usable_occupancy_when_nothing_is_killed() {
        let rep = one_run(2.0, Fate::Overruns);
        assert_eq!(
            rep.goodput_while_waiting,
            rep.usable_occupancy_while_waiting
        );
        assert_eq!(rep.goodput_arrivals, rep.usable_occupancy_arrivals);
        assert_eq!(rep.lost_work.total_gpu_hours(), 0.0);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.95), 19.0);
        assert_eq!(percentile(&v, 0.5), 10.0);
        assert_eq!(percentile(&[3.0], 0.95), 3.0);
    }
}
