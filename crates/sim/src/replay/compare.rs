//! A replay's comparison, as `nvl72 replay` prints it: the table of every run, real and
//! predicted, then each figure real against predicted per plugin, the rankings, how well
//! each lab kept to the schedule, and (`--cloud`) the driver's ends.

use crate::contenders::policy::PolicyKind;
use crate::measures::policy_report::PolicyReport;
use crate::reports::report::{RunReport, WorkloadInfo};
use crate::run::simulation::SimConfig;

use super::predict::ENSEMBLE;
use super::report::CloudEnds;
use super::timeline::Fidelity;

/// The replay's table: the workload, the settings and every run, real and predicted.
pub fn table(info: &WorkloadInfo, cfg: &SimConfig, policies: Vec<PolicyReport>) -> String {
    RunReport {
        workload: info.clone(),
        sim: cfg.clone(),
        policies,
        error_band: None,
        usable_error_band: None,
    }
    .to_table()
}

/// Usable occupancy, real against predicted, per plugin (a priced replay).
pub fn usable_comparison(
    real: &[PolicyReport],
    models: &[PolicyKind],
    prediction: &[Option<(f64, f64)>],
) -> String {
    let mut out =
        "\nUSABLE GPU occupancy while jobs wait (GPU time ÷ each job's slowdown: its script \
         slept base × s for the nodes Slurm gave it): real Slurm vs the simulator\n"
            .to_string();
    out += &real_vs_predicted(real, models, prediction, |r| {
        r.usable_occupancy_while_waiting
    });
    out
}

/// Goodput, real against predicted, per plugin (a replay whose jobs checkpointed).
pub fn goodput_comparison(
    real: &[PolicyReport],
    models: &[PolicyKind],
    prediction: &[Option<(f64, f64)>],
) -> String {
    "\nGOODPUT while jobs wait (usable occupancy less the work kills threw away: a requeued job's \
     script resumed from its last checkpoint): real Slurm vs the simulator\n"
        .to_string()
        + &real_vs_predicted(real, models, prediction, |r| r.goodput_while_waiting)
}

/// One line per plugin: `figure` in the real run against the prediction's mean.
fn real_vs_predicted(
    real: &[PolicyReport],
    models: &[PolicyKind],
    prediction: &[Option<(f64, f64)>],
    figure: fn(&PolicyReport) -> Option<f64>,
) -> String {
    use std::fmt::Write;
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.2}%", v * 100.0));
    let points = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:+.2}", (a - b) * 100.0),
        _ => "-".into(),
    };
    let mut out = String::new();
    for (i, (k, p)) in models.iter().zip(prediction).enumerate() {
        let r = real.get(i);
        let mean = p.map(|p| p.0);
        let _ = writeln!(
            out,
            "  {:<6} real {:>7}  simulator {:>7} ({} points; the phases range over {} points)",
            k.to_string(),
            r.map_or("-".into(), |r| pct(figure(r))),
            pct(mean),
            points(r.and_then(figure), mean),
            p.map_or("-".into(), |p| format!("{:.1}", p.1)),
        );
    }
    out
}

/// Real against predicted, per plugin, and the targets of the replay.
pub fn comparison(
    real: &[PolicyReport],
    models: &[PolicyKind],
    prediction: &[Option<(f64, f64)>],
    fidelity: &[(String, Fidelity)],
) -> String {
    use std::fmt::Write;
    let occ = |r: &PolicyReport| r.occupancy_while_waiting;
    let mut out = format!(
        "\nGPU occupancy while jobs wait: real Slurm vs the simulator on the same stream (the mean \
         of {ENSEMBLE} runs whose passes fall at spread phases of slurmctld's 1 s tick)\n"
    );
    out += &real_vs_predicted(real, models, prediction, |r| r.occupancy_while_waiting);
    let rank = |rs: &[(String, f64)]| {
        let mut v = rs.to_vec();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v.into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>()
            .join(" > ")
    };
    if !real.is_empty() {
        let named: Vec<(String, f64)> = real
            .iter()
            .map(|r| (r.name(), occ(r).unwrap_or(0.0)))
            .collect();
        let _ = writeln!(out, "ranking, real Slurm: {}", rank(&named));
    }
    let named: Vec<(String, f64)> = models
        .iter()
        .zip(prediction)
        .map(|(k, p)| (k.to_string(), p.map_or(0.0, |p| p.0)))
        .collect();
    let _ = writeln!(out, "ranking, simulator:  {}", rank(&named));
    for (lab, f) in fidelity {
        let _ = writeln!(
            out,
            "{}: submissions late by {:.0} ms on average (max {} ms); starts of the wrong size: {}; unknown nodes: {}; runs over their sleep: median {} ms, p90 {} ms; ends logged after a start on their trays: {}",
            lab,
            f.submit_late_mean_ms,
            f.submit_late_max_ms,
            f.wrong_size_starts,
            f.unknown_nodes,
            f.run_overhead_median_ms.map_or("-".into(), |v| v.to_string()),
            f.run_overhead_p90_ms.map_or("-".into(), |v| v.to_string()),
            f.ends_logged_after_a_start,
        );
    }
    out
}

/// One line on the driver's ends in a `--cloud` lab.
pub fn describe_ends(lab: &str, e: &CloudEnds) -> String {
    let mut line = format!(
        "{}: --cloud ends: {} jobs ended by slurm_complete_job in {} batches, {} refused, {} kicks refused; \
         replies after the due time: mean {:.0} ms, p99 {} ms, max {} ms",
        lab,
        e.ended,
        e.batches,
        e.failed,
        e.kicks_failed,
        e.late_mean_ms,
        e.late_p99_ms,
        e.late_max_ms
    );
    if let Some(first) = e.errors.first() {
        line.push_str(&format!(" (first refusal: {first})"));
    }
    line
}
