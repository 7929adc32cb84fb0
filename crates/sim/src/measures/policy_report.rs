//! One policy's figures as a run reports them ([`PolicyReport`]) and the parts they are made
//! of: the schema of `--json`, of saved reports and of the calibration fixtures. The
//! [`crate::measures::metrics`] recorder fills it; the definitions of every figure are there.

use serde::{Deserialize, Serialize};

use crate::contenders::latency::LatencySummary;
use crate::contenders::policy::PolicyKind;
use crate::idle::Cause;
use crate::job::Millis;

/// Slowdown and usable share of one group of runs (a communication class or a size class).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowdownRow {
    pub class: String,
    /// Starts, restarts included.
    pub runs: u64,
    /// Starts on more than one rack.
    pub split_runs: u64,
    /// Mean slowdown over all starts.
    pub mean_slowdown: f64,
    /// Work done at NVLink speed per tray-hour held (tray·ran/s ÷ tray·ran over ended runs).
    pub efficiency: Option<f64>,
}

/// `inside` out of `eligible`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub eligible: u64,
    pub inside: u64,
    /// `None` when nothing was eligible.
    pub share: Option<f64>,
}

impl Share {
    pub(crate) fn add(&mut self, eligible: u64, inside: u64) {
        self.eligible += eligible;
        self.inside += inside;
        self.share = Some(self.inside as f64 / self.eligible as f64);
    }
}

/// Queue wait of one size class, in hours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassWait {
    pub class: String,
    pub jobs: usize,
    pub mean_h: f64,
    pub p50_h: f64,
    pub p95_h: f64,
}

/// One point of the downsampled time series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Start of the bin, hours.
    pub t_h: f64,
    /// Time-averaged allocated / healthy GPUs in the bin.
    pub occupancy: f64,
    /// Time-averaged queued jobs in the bin.
    pub queued: f64,
}

/// One cause's part of the idle GPUs while jobs wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleCause {
    pub cause: Cause,
    /// Time average over the waiting time, GPUs.
    pub gpus: f64,
    /// Share of the healthy GPUs (the same denominator as `stranded_share`).
    pub share: f64,
}

/// Everything measured for one policy. A report saved by an older build, or a calibration
/// fixture trimmed to what `nvl72 calibrate` reads, lacks fields: they read as zero or empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyReport {
    pub policy: PolicyKind,
    /// Set when the report is not the simulator's: `slurm nvl72` for a run in a real
    /// slurmctld (`nvl72 replay`) measured by the same definitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default)]
    pub jobs: usize,
    #[serde(default)]
    pub completed: usize,
    #[serde(default)]
    pub rejected: usize,
    /// Killed by failures more often than `max_requeue`.
    #[serde(default)]
    pub held: usize,
    #[serde(default)]
    pub unfinished: usize,
    /// Trays that went down during the run (the same for every policy of a run).
    #[serde(default)]
    pub tray_failures: u64,
    /// Runs killed by a tray failure (re-queued or held).
    #[serde(default)]
    pub requeues: u64,
    /// GPU-hours of runs killed by tray failures.
    #[serde(default)]
    pub lost_gpu_hours: f64,
    #[serde(default)]
    pub makespan_h: f64,
    #[serde(default)]
    pub waiting_h: f64,
    /// Work kept at NVLink speed per healthy GPU while jobs waited: usable occupancy less the
    /// work kills threw away (module docs). The headline; equals usable occupancy when no
    /// run was killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_while_waiting: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_arrivals: Option<f64>,
    /// Work kept at NVLink speed by the runs that ended, GPU-hours.
    #[serde(default)]
    pub goodput_gpu_hours: f64,
    /// Work thrown away, per cause, GPU-hours at NVLink speed.
    #[serde(default)]
    pub lost_work: LostWork,
    /// What preemption cost, for workloads with tiers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption: Option<crate::measures::preemption::PreemptionReport>,
    /// Work done at NVLink speed per healthy GPU while jobs waited: busy trays, each divided
    /// by its job's slowdown (module docs); equals occupancy when nothing pays.
    pub usable_occupancy_while_waiting: Option<f64>,
    pub usable_occupancy_arrivals: Option<f64>,
    /// Share of the work (trays × run time ÷ slowdown) done on more than one rack.
    pub split_work_share: Option<f64>,
    /// The same for runs a rack boundary cuts inside a tight group.
    pub misaligned_work_share: Option<f64>,
    /// Mean slowdown of the starts on more than one rack.
    pub mean_slowdown_split: Option<f64>,
    /// `(smallest piece in trays, starts)` of the split starts.
    #[serde(default)]
    pub smallest_piece_runs: Vec<(usize, u64)>,
    /// Per communication class that ran, then per size class that ran.
    #[serde(default)]
    pub slowdown_by_comm: Vec<SlowdownRow>,
    #[serde(default)]
    pub slowdown_by_size: Vec<SlowdownRow>,
    /// Lenient limits: runs stretched past their time limit that ran on.
    #[serde(default)]
    pub overruns: u64,
    /// Strict limits: runs Slurm killed at their limit, and the GPU-hours they held.
    #[serde(default)]
    pub timeouts: u64,
    #[serde(default)]
    pub timeout_gpu_hours: f64,
    pub occupancy_while_waiting: Option<f64>,
    pub occupancy_arrivals: Option<f64>,
    /// Busy trays over every tray, healthy or not, while jobs wait (what the segment-size
    /// capacity formula of `analytic` predicts); the old name is read from saved reports.
    #[serde(alias = "usable_fraction_while_waiting")]
    pub occupancy_of_all_trays_while_waiting: Option<f64>,
    pub idle_gpus_while_waiting: Option<f64>,
    pub stranded_gpus: Option<f64>,
    pub stranded_share: Option<f64>,
    /// `idle_gpus_while_waiting` split by cause (module docs); the parts add up to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_by_cause: Option<Vec<IdleCause>>,
    #[serde(default)]
    pub small_jobs_in_one_rack: Share,
    /// The same for jobs sized by GPUs (`--gpus`, no `-N`), a subset of the small jobs.
    #[serde(default)]
    pub gpu_sized_in_one_rack: Share,
    #[serde(default)]
    pub segments_in_one_rack: Share,
    pub large_jobs_extra_racks: Option<f64>,
    pub large_jobs_piece_balance: Option<f64>,
    /// First row `all`, then one row per size class that had jobs.
    #[serde(default)]
    pub wait: Vec<ClassWait>,
    #[serde(default)]
    pub engine_calls: u64,
    pub decision_latency: Option<LatencySummary>,
    #[serde(default)]
    pub series: Vec<SeriesPoint>,
    /// When each job completed, by job id (for tests and tools; not in the JSON).
    #[serde(skip)]
    pub ends: Vec<Option<Millis>>,
}

impl PolicyReport {
    /// The column and legend name: the label, else the policy.
    pub fn name(&self) -> String {
        self.label
            .clone()
            .unwrap_or_else(|| self.policy.to_string())
    }
}

/// Why a run's work since its last checkpoint was thrown away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// A tray under it failed.
    Failure,
    /// A higher-priority job took its trays.
    Preemption,
    /// Slurm killed it at its time limit (strict limits).
    Limit,
}

/// Work thrown away by kills, GPU-hours at NVLink speed, per [`Loss`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LostWork {
    pub failure_gpu_hours: f64,
    pub preemption_gpu_hours: f64,
    pub limit_gpu_hours: f64,
}

impl LostWork {
    pub fn total_gpu_hours(&self) -> f64 {
        self.failure_gpu_hours + self.preemption_gpu_hours + self.limit_gpu_hours
    }
}
