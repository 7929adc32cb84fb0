//! `nvl72 summarize`: the headline metrics of several `simulate --json` (or `replay --json`)
//! reports, read through the simulator's report types.

use std::path::{Path, PathBuf};

use clap::Args;

use nvl72_engine::idle::Cause;
use nvl72_sim::measures::policy_report::PolicyReport;
use nvl72_sim::reports::report::RunReport;
use nvl72_sim::reports::verdict::{compared_line, Compared, Figure};
use nvl72_sim::studies::calibration::PolicyMargins;

#[derive(Args)]
pub struct SummarizeArgs {
    /// JSON reports of the same workload and cluster, e.g. one per seed
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// One row: its name, the factor from the report's unit to the row's, and the figure.
type Metric = (&'static str, f64, fn(&PolicyReport) -> Option<f64>);

const METRICS: [Metric; 33] = [
    ("goodput while waiting %", 100.0, |p| {
        p.goodput_while_waiting
    }),
    ("goodput while submitting %", 100.0, |p| p.goodput_arrivals),
    ("work kept GPU-h", 1.0, |p| Some(p.goodput_gpu_hours)),
    (
        "work lost to failures / preemption / limits GPU-h",
        1.0,
        |p| Some(p.lost_work.total_gpu_hours()),
    ),
    ("usable occupancy while waiting %", 100.0, |p| {
        p.usable_occupancy_while_waiting
    }),
    ("usable occupancy while submitting %", 100.0, |p| {
        p.usable_occupancy_arrivals
    }),
    ("work split across racks %", 100.0, |p| p.split_work_share),
    ("work cut inside a group %", 100.0, |p| {
        p.misaligned_work_share
    }),
    ("mean slowdown of split runs", 1.0, |p| {
        p.mean_slowdown_split
    }),
    ("runs past / killed at their limit", 1.0, |p| {
        Some((p.overruns + p.timeouts) as f64)
    }),
    ("occupancy while waiting %", 100.0, |p| {
        p.occupancy_while_waiting
    }),
    ("occupancy while submitting %", 100.0, |p| {
        p.occupancy_arrivals
    }),
    ("stranded % of healthy GPUs", 100.0, |p| p.stranded_share),
    ("idle: reserved % of healthy", 100.0, |p| {
        idle_of(p, Cause::Reserved)
    }),
    ("idle: too few trays % of healthy", 100.0, |p| {
        idle_of(p, Cause::TooFew)
    }),
    ("idle: other % of healthy", 100.0, |p| {
        idle_of(p, Cause::Other)
    }),
    ("idle: rack set wait % of healthy", 100.0, |p| {
        idle_of(p, Cause::RackSet)
    }),
    ("idle: failed trays % of healthy", 100.0, |p| {
        idle_of(p, Cause::Failed)
    }),
    ("idle: whole-rack wait % of healthy", 100.0, |p| {
        idle_of(p, Cause::WholeRack)
    }),
    ("idle: remainders % of healthy", 100.0, |p| {
        idle_of(p, Cause::Remainder)
    }),
    ("small jobs in one rack %", 100.0, |p| {
        p.small_jobs_in_one_rack.share
    }),
    ("GPU-sized jobs in one rack %", 100.0, |p| {
        p.gpu_sized_in_one_rack.share
    }),
    ("segments in one rack %", 100.0, |p| {
        p.segments_in_one_rack.share
    }),
    ("extra racks per large job", 1.0, |p| {
        p.large_jobs_extra_racks
    }),
    ("large jobs' piece balance", 1.0, |p| {
        p.large_jobs_piece_balance
    }),
    ("wait all jobs mean h", 1.0, |p| {
        wait_of(p, "all", |w| w.mean_h)
    }),
    ("wait all jobs p95 h", 1.0, |p| {
        wait_of(p, "all", |w| w.p95_h)
    }),
    ("wait 17-18 trays p95 h", 1.0, |p| {
        wait_of(p, "17-18", |w| w.p95_h)
    }),
    ("wait 19-72 trays mean h", 1.0, |p| {
        wait_of(p, "19-72", |w| w.mean_h)
    }),
    ("wait 19-72 trays p95 h", 1.0, |p| {
        wait_of(p, "19-72", |w| w.p95_h)
    }),
    ("wait 144+ trays p95 h", 1.0, |p| {
        wait_of(p, "144+", |w| w.p95_h)
    }),
    ("jobs held (killed > max-requeue)", 1.0, |p| {
        Some(p.held as f64)
    }),
    ("decision p99 us", 1e-3, |p| {
        p.decision_latency.map(|l| l.p99_ns as f64)
    }),
];

/// The headline metrics of several reports: mean, and the range over the files.
pub fn summarize(a: &SummarizeArgs) -> Result<(), String> {
    let reports: Vec<RunReport> = a.files.iter().map(|f| read(f)).collect::<Result<_, _>>()?;
    let first = &reports[0];
    let failures = serde_json::to_value(first.sim.failures).map_err(|e| e.to_string())?;
    println!(
        "{} jobs of `{}`, offered load {:.2}, {} racks, failures {failures}; {} run(s), mean (min-max)\n",
        first.workload.jobs,
        first.workload.name,
        first.workload.offered_load,
        first.sim.racks,
        reports.len()
    );
    // A column per policy: its label (`slurm nvl72` in replay reports), else its policy.
    let columns: Vec<String> = first.policies.iter().map(PolicyReport::name).collect();
    let lines = [
        summary_line(&reports, &columns, Figure::Goodput),
        summary_line(&reports, &columns, Figure::Usable),
    ];
    for line in lines.iter().flatten() {
        println!("{line}");
    }
    println!();
    println!("| metric | {} |", columns.join(" | "));
    println!("|---|{}", "---|".repeat(columns.len()));
    for (name, scale, get) in METRICS {
        let cells: Vec<String> = columns
            .iter()
            .map(|col| cell(&figures(&reports, col, get, scale)))
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    Ok(())
}

/// A `simulate --json` report; a replay report reads as one too (its workload, cluster and
/// policies; the rest is left out).
fn read(path: &Path) -> Result<RunReport, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// One figure per report that has the column and the figure, scaled.
fn figures(
    reports: &[RunReport],
    col: &str,
    get: fn(&PolicyReport) -> Option<f64>,
    scale: f64,
) -> Vec<f64> {
    reports
        .iter()
        .filter_map(|r| r.policies.iter().find(|p| p.name() == col).and_then(get))
        .map(|v| v * scale)
        .collect()
}

/// `mean (min-max)`, the mean alone when the runs agree, `-` without figures.
fn cell(vals: &[f64]) -> String {
    if vals.is_empty() {
        return "-".into();
    }
    let mean = vals.iter().sum::<f64>() / vals.len() as f64;
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if vals.len() == 1 || (hi - lo).abs() < 1e-9 {
        format!("{mean:.2}")
    } else {
        format!("{mean:.2} ({lo:.2}-{hi:.2})")
    }
}

/// The verdict's goodput or usable line from the reports' means (usable only when they
/// price split jobs) when they have an nvl72 column.
fn summary_line(reports: &[RunReport], columns: &[String], figure: Figure) -> Option<String> {
    let sim = &reports[0].sim;
    let of: fn(&PolicyReport) -> Option<f64> = match figure {
        Figure::Goodput => |p| p.goodput_while_waiting,
        Figure::Usable if sim.slowdown.is_off() => return None, // usable equals occupancy
        Figure::Usable => |p| p.usable_occupancy_while_waiting,
    };
    let mean = |name: &str| -> Option<f64> {
        columns.iter().find(|c| c.as_str() == name)?;
        let vals = figures(reports, name, of, 1.0);
        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
    };
    let gpus = (sim.racks * sim.trays_per_rack * sim.gpus_per_tray) as f64;
    let model = match figure {
        Figure::Goodput => format!(
            "{}; checkpoints {}",
            sim.slowdown.describe(),
            sim.checkpoints.describe()
        ),
        Figure::Usable => sim.slowdown.describe(),
    };
    Some(compared_line(&Compared {
        figure,
        ours: mean("nvl72")?,
        naive: mean("naive"),
        block: mean("block"),
        healthy_gpus: gpus * (1.0 - sim.failures.unavailability()),
        margins: &PolicyMargins::default(),
        stand_in: None,
        model: format!("{model} (means of {} runs)", reports.len()),
    }))
}

/// One cause's share of the healthy GPUs in `idle_by_cause`.
fn idle_of(p: &PolicyReport, cause: Cause) -> Option<f64> {
    p.idle_by_cause
        .as_ref()?
        .iter()
        .find(|c| c.cause == cause)
        .map(|c| c.share)
}

/// A figure of one size class's wait (`all` for every job).
fn wait_of(
    p: &PolicyReport,
    class: &str,
    figure: fn(&nvl72_sim::measures::policy_report::ClassWait) -> f64,
) -> Option<f64> {
    p.wait.iter().find(|w| w.class == class).map(figure)
}
