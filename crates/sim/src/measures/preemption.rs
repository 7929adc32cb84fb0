//! What preemption cost a run (issue 52): how often a higher-tier job took running jobs'
//! trays, how many runs it killed, the work they lost per preemption, and how long the
//! higher-tier jobs waited. Reported only for workloads with tiers
//! ([`crate::job::Tier`]), so every report saved before the model reads as it was run.

use serde::{Deserialize, Serialize};

use crate::job::{hours, Job, Millis};
use crate::measures::metrics::percentile;

/// Preemption per policy, in the JSON and the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PreemptionReport {
    /// Pending jobs started by preempting others.
    pub preemptions: u64,
    /// Runs killed by them (a job preempted twice counts twice).
    pub jobs_preempted: u64,
    /// Of those, cancelled (`PreemptMode::Cancel`): never finished.
    pub cancelled: u64,
    /// Work thrown away by preemption per preemption, GPU-hours at NVLink speed (a victim
    /// over several racks counts once).
    pub lost_gpu_hours_per_preemption: f64,
    /// Jobs above the lowest tier that finished, and their waits (hours, every queued
    /// stretch of the job).
    pub high_tier_jobs: usize,
    pub high_tier_wait_mean_h: f64,
    pub high_tier_wait_p95_h: f64,
}

/// The counts a run accumulates.
#[derive(Debug, Clone, Copy, Default)]
pub struct PreemptionCounts {
    pub preemptions: u64,
    pub jobs_preempted: u64,
    pub cancelled: u64,
}

impl PreemptionCounts {
    /// The report, or None when no job of the workload is above tier 0. `waits` are the
    /// finished jobs' total waits by job id (None: not finished); `lost_gpu_hours` the work
    /// preemption threw away.
    pub fn report(
        &self,
        jobs: &[Job],
        waits: &[Option<Millis>],
        lost_gpu_hours: f64,
    ) -> Option<PreemptionReport> {
        let lowest = jobs.iter().map(|j| j.tier.level).min()?;
        if jobs.iter().all(|j| j.tier.level == lowest) {
            return None;
        }
        let mut w: Vec<f64> = jobs
            .iter()
            .zip(waits)
            .filter(|(j, _)| j.tier.level > lowest)
            .filter_map(|(_, w)| w.map(hours))
            .collect();
        w.sort_by(f64::total_cmp);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        Some(PreemptionReport {
            preemptions: self.preemptions,
            jobs_preempted: self.jobs_preempted,
            cancelled: self.cancelled,
            lost_gpu_hours_per_preemption: lost_gpu_hours / self.preemptions.max(1) as f64,
            high_tier_jobs: w.len(),
            high_tier_wait_mean_h: mean(&w),
            high_tier_wait_p95_h: if w.is_empty() {
                0.0
            } else {
                percentile(&w, 0.95)
            },
        })
    }
}
