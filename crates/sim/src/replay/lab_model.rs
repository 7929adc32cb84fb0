//! The replay lab as the simulator models it: the Slurm settings every lab runs with, and the
//! lab's own delays (a job's launch and completion, a requeue's begin time, backfill's window)
//! in simulated time, so a prediction runs the stream as the lab does. `nvl72 replay` sets
//! them on its prediction; `nvl72 calibrate` fills them into reports from before they were
//! modelled.

use crate::job::HOUR;
use crate::run::simulation::SimConfig;

/// Slurm settings that keep the compressed time meaningful: backfill every second (its
/// default 30 s would be hours) at one-second resolution.
pub const SCHED_PARAMS: &str = "bf_interval=1,bf_resolution=1,bf_max_job_test=500";

/// How much longer than its `sleep` a job holds its trays in a replay lab, real seconds:
/// from `sched: Allocate` (or backfill's `Started`) to `_job_complete ... done` the median
/// was 85-104 ms over the sleep in the six labs of the calibration set's `syn-s1` and
/// `syn-s2` (launch and completion on a loaded 2-core host).
pub const LAB_RUN_OVERHEAD_S: f64 = 0.1;

/// The same with `--cloud`, where the driver ends each job itself at its start line's time +
/// its sleep: the median (`Fidelity::run_overhead_median_ms`) was 2-3 ms in 2-rack labs of
/// 24.11 and 26.05 and 4 ms at 278 racks (p90 0.5 s there, when the complete RPC waits for
/// the backfill cycle's locks); 2026-12-02.
pub const CLOUD_RUN_OVERHEAD_S: f64 = 0.005;

/// How long a requeued job waits before it may start again in a replay lab, real seconds:
/// the driver sets `StartTime=now+1`, which slurmctld reads in whole seconds, so the begin
/// time is the next whole second, not a full second later (`setting begin to` minus
/// `Requeuing` averaged 0.54 s, from 0.03 to 1.02 s, over 88 requeues in the three labs of
/// ph4-fail-s1-priced, 2026-12-04).
pub const LAB_REQUEUE_DELAY_S: f64 = 0.5;

/// What a `--cloud` replay is, for its report.
pub const CLOUD_NOTE: &str =
    "--cloud: the trays are Slurm cloud nodes without slurmd (powering up, \
    idle#/alloc#); every job stays CONFIGURING until the driver ends it at its start + run \
    time with slurm_complete_job() (COMPLETED, or TIMEOUT past its limit), then queues a \
    scheduling pass with a no-op node update; a drained tray's jobs are requeued by \
    slurmctld itself. Measured: slurmctld's placement, backfill, job turnover and requeues; \
    not measured: slurmd traffic (launch, epilog-complete, registration, pings), \
    slurmctld's own time limits, unresponsive nodes";

/// [`LAB_REQUEUE_DELAY_S`] in simulated time.
pub fn lab_requeue_delay(scale: f64) -> u64 {
    (LAB_REQUEUE_DELAY_S * 1000.0 * scale).round() as u64
}

/// [`LAB_RUN_OVERHEAD_S`] in simulated time.
pub fn lab_run_overhead(scale: f64) -> u64 {
    (LAB_RUN_OVERHEAD_S * 1000.0 * scale).round() as u64
}

/// [`CLOUD_RUN_OVERHEAD_S`] in simulated time.
pub fn cloud_run_overhead(scale: f64) -> u64 {
    (CLOUD_RUN_OVERHEAD_S * 1000.0 * scale).round() as u64
}

/// The labs' `bf_window` (Slurm's default, one real day) in simulated time.
pub fn lab_bf_window(scale: f64) -> u64 {
    (24.0 * HOUR as f64 * scale).round() as u64
}

/// Sets the lab's delays on a prediction of a replay at time scale `scale`: slurmctld's
/// scheduling tick of `tick_s` real seconds, which compression stretches, the requeue's
/// begin time, backfill's window, and how long a job holds its trays past its run (`cloud`:
/// the cloud driver's ends).
pub fn model_lab(cfg: &mut SimConfig, scale: f64, tick_s: f64, cloud: bool) {
    cfg.sched_period = Some((1000.0 * tick_s * scale).round() as u64);
    cfg.requeue_delay = Some(lab_requeue_delay(scale));
    cfg.bf_window = Some(lab_bf_window(scale));
    cfg.run_overhead = Some(if cloud {
        cloud_run_overhead(scale)
    } else {
        lab_run_overhead(scale)
    });
}

/// The lab's delays on a saved replay's simulator settings (time scale `scale`): reports
/// from before backfill's window and the run overhead were modelled get the labs' own
/// values, and the requeue is the driver's as measured, whatever the report assumed.
pub fn fill_in(cfg: &mut SimConfig, scale: f64) {
    cfg.bf_window = cfg.bf_window.or(Some(lab_bf_window(scale)));
    cfg.run_overhead = cfg.run_overhead.or(Some(lab_run_overhead(scale)));
    cfg.requeue_delay = Some(lab_requeue_delay(scale));
}
