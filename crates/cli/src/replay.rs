//! `nvl72 replay`: the simulator's workload, compressed in time, submitted to real
//! slurmctlds (one lab per topology plugin, side by side), measured from slurmctld's log by
//! the simulator's own metrics, next to the simulator's prediction for the same stream.
//!
//! Each lab is `scripts/lab-up.sh` with its own folder and ports. Jobs are `sbatch
//! --exclusive` with `-N` (or `--gpus`), `--segment`, `--time` and a `sleep` of their
//! compressed run time; failures drain the tray and requeue the job on it (`scontrol
//! requeue`, then its begin time is set to `now+1`, the next whole second, because Slurm
//! otherwise holds a requeued job back for the 120 s credential lifetime, which compression
//! would turn into many hours); a job killed more than `--max-requeue` times is requeued
//! held, as Slurm's MaxBatchRequeue does.
//!
//! With `--cloud` the trays are Slurm power-saving cloud nodes without a slurmd (lab-up.sh
//! `CLOUD=1`), so a lab of thousands of trays fits in memory; the driver ends each job at
//! its start (from the log) + its run time with Slurm's `slurm_complete_job()` and queues a
//! scheduling pass after each batch of ends (`replay_cloud.rs`, docs/notebook/scale-replay.md).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::output::write_file;

use nvl72_engine::config::Policy;
use nvl72_sim::calibration::{self, ensembles};
use nvl72_sim::checkpoint::Checkpoints;
use nvl72_sim::job::{hours, set_offered_load, Job, HOUR};
use nvl72_sim::plot;
use nvl72_sim::policy::{Placer, PolicyKind, SimRequest};
use nvl72_sim::policy_report::PolicyReport;
use nvl72_sim::replay::observe::parse_log;
use nvl72_sim::replay::report::{CloudEnds, CloudReport, ReplayReport};
use nvl72_sim::replay::schedule::{scale_for, schedule, Schedule, ScheduleSpec};
use nvl72_sim::replay::timeline::{report, Fidelity, Measure};
use nvl72_sim::report::{describe_failures, RunReport, WorkloadInfo};
use nvl72_sim::scheduler::Backfill;
use nvl72_sim::simulation::{simulate_all, SimConfig};

use super::workload::WorkloadArgs;

mod cloud;
mod lab;
use lab::Lab;

#[derive(Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    w: WorkloadArgs,
    /// Topology plugins, one lab each: nvl72, block, none (topology/default)
    #[arg(long, value_delimiter = ',', default_value = "nvl72,block,none")]
    topologies: Vec<Topo>,
    /// Real minutes the submissions take (sets the time scale)
    #[arg(long, default_value_t = 8.0)]
    minutes: f64,
    /// Simulated seconds per real second, instead of --minutes
    #[arg(long, conflicts_with = "minutes")]
    speed: Option<f64>,
    /// slurmctld's scheduling tick in real seconds, for the simulator's corrected prediction
    #[arg(long, default_value_t = 1.0)]
    tick_s: f64,
    /// After the last submission go on for this share of the submission span, then cancel
    /// what is left (it counts as unfinished, in the simulator too)
    #[arg(long, default_value_t = 0.5)]
    drain: f64,
    /// Folder for slurmctld logs, lab-up logs and the report
    #[arg(long, default_value = "target/replay")]
    out: PathBuf,
    /// Write the full report (both sides) as JSON
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write occupancy and queue length over time as SVG (real runs solid, simulator dashed)
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Lab folders are PREFIX-nvl72, PREFIX-block, PREFIX-none (a chroot each, built once)
    /// [default: /var/tmp/nvl72-replay; --series 26.05: /var/tmp/nvl72-replay-26.05]
    #[arg(long)]
    lab_prefix: Option<String>,
    /// The labs' Slurm: Debian trixie's 24.11.5 or sid's 26.05.5 (the plugin must be built
    /// for it: lab-up.sh's default for 26.05 is target/slurm-26-05/libtopology_nvl72.so)
    #[arg(long, default_value = "24.11", value_parser = ["24.11", "26.05"])]
    series: String,
    /// The trays are Slurm cloud nodes without a slurmd (lab-up.sh CLOUD=1); the driver ends
    /// each job at its start + run time with slurm_complete_job() (docs/notebook/scale-replay.md):
    /// hundreds of racks in one real slurmctld, without slurmd traffic
    #[arg(long)]
    cloud: bool,
    /// Shift the labs' ports (slurmctld + N, slurmd + 1000 N) to run two replays at once. From 2
    /// on, a lab's ports meet another plugin's lab at a lower offset (nvl72 at 2 = block at 0):
    /// only for runs of fewer labs, such as scripts/soak.sh's nvl72 lab at 6
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=9))]
    port_offset: u16,
    /// The plugin for the nvl72 lab [default: lab-up.sh's, target/release/libtopology_nvl72.so]
    #[arg(long)]
    plugin: Option<PathBuf>,
    /// The topology-nvl72 .deb to install in the nvl72 lab instead of --plugin
    #[arg(long, conflicts_with = "plugin")]
    package: Option<PathBuf>,
    /// The repository's scripts/ folder [default: ./scripts, else next to the binary's repo]
    #[arg(long)]
    scripts: Option<PathBuf>,
    /// One lab after the other instead of all at once
    #[arg(long)]
    sequential: bool,
    /// Leave the labs running afterwards
    #[arg(long)]
    keep_labs: bool,
    /// Print the schedule and the simulator's prediction only; no lab
    #[arg(long)]
    dry_run: bool,
    /// No progress bars
    #[arg(long)]
    quiet: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Topo {
    Nvl72,
    Block,
    None,
}

impl Topo {
    fn name(self) -> &'static str {
        match self {
            Topo::Nvl72 => "nvl72",
            Topo::Block => "block",
            Topo::None => "none",
        }
    }

    /// The simulator's model of this plugin.
    fn model(self) -> PolicyKind {
        match self {
            Topo::Nvl72 => PolicyKind::Nvl72,
            Topo::Block => PolicyKind::Block,
            Topo::None => PolicyKind::Naive,
        }
    }

    /// slurmctld port and the first slurmd port: apart from the test labs and each other.
    fn ports(self) -> (u16, u16) {
        match self {
            Topo::Nvl72 => (6857, 20000),
            Topo::Block => (6867, 22000),
            Topo::None => (6877, 24000),
        }
    }
}

/// Slurm settings that keep the compressed time meaningful: backfill every second (its
/// default 30 s would be hours) at one-second resolution.
const SCHED_PARAMS: &str = "bf_interval=1,bf_resolution=1,bf_max_job_test=500";

/// Tick phases a prediction averages (`calibration::ensemble`).
pub const ENSEMBLE: usize = 8;

/// How much longer than its `sleep` a job holds its trays in a replay lab, real seconds:
/// from `sched: Allocate` (or backfill's `Started`) to `_job_complete ... done` the median
/// was 85-104 ms over the sleep in the six labs of the calibration set's `syn-s1` and
/// `syn-s2` (launch and completion on a loaded 2-core host).
const LAB_RUN_OVERHEAD_S: f64 = 0.1;

/// The same with `--cloud`, where the driver ends each job itself at its start line's time +
/// its sleep: the median (`Fidelity::run_overhead_median_ms`) was 2-3 ms in 2-rack labs of
/// 24.11 and 26.05 and 4 ms at 278 racks (p90 0.5 s there, when the complete RPC waits for
/// the backfill cycle's locks); 2026-12-02.
const CLOUD_RUN_OVERHEAD_S: f64 = 0.005;

/// How long a requeued job waits before it may start again in a replay lab, real seconds:
/// the driver sets `StartTime=now+1`, which slurmctld reads in whole seconds, so the begin
/// time is the next whole second, not a full second later (`setting begin to` minus
/// `Requeuing` averaged 0.54 s, from 0.03 to 1.02 s, over 88 requeues in the three labs of
/// ph4-fail-s1-priced, 2026-12-04).
const LAB_REQUEUE_DELAY_S: f64 = 0.5;

/// [`LAB_REQUEUE_DELAY_S`] in simulated time.
pub fn lab_requeue_delay(scale: f64) -> u64 {
    (LAB_REQUEUE_DELAY_S * 1000.0 * scale).round() as u64
}

/// [`LAB_RUN_OVERHEAD_S`] in simulated time.
pub fn lab_run_overhead(scale: f64) -> u64 {
    (LAB_RUN_OVERHEAD_S * 1000.0 * scale).round() as u64
}

/// [`CLOUD_RUN_OVERHEAD_S`] in simulated time.
fn cloud_run_overhead(scale: f64) -> u64 {
    (CLOUD_RUN_OVERHEAD_S * 1000.0 * scale).round() as u64
}

/// What a `--cloud` replay is, for its report.
const CLOUD_NOTE: &str = "--cloud: the trays are Slurm cloud nodes without slurmd (powering up, \
    idle#/alloc#); every job stays CONFIGURING until the driver ends it at its start + run \
    time with slurm_complete_job() (COMPLETED, or TIMEOUT past its limit), then queues a \
    scheduling pass with a no-op node update; a drained tray's jobs are requeued by \
    slurmctld itself. Measured: slurmctld's placement, backfill, job turnover and requeues; \
    not measured: slurmd traffic (launch, epilog-complete, registration, pings), \
    slurmctld's own time limits, unresponsive nodes";

/// The labs' `bf_window` (Slurm's default, one real day) in simulated time.
pub fn lab_bf_window(scale: f64) -> u64 {
    (24.0 * HOUR as f64 * scale).round() as u64
}

/// `YYYY-MM-DD` of a time, UTC.
pub fn day(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()[..10].to_string()
}

pub fn replay(a: &ReplayArgs) -> Result<(), String> {
    let racks = a.w.racks.unwrap_or(8);
    // Off unless asked: a priced replay's jobs sleep their stretched time (`nvl72 stretch`).
    let mut cfg =
        a.w.sim_config_or(racks, &crate::workload::Defaults::REPLAY)?;
    let trays = cfg.trays();
    if trays > 9999 {
        return Err(format!(
            "--racks {racks}: the lab names at most 9999 trays (555 racks)"
        ));
    }
    if trays > 2000 && !a.cloud && !a.dry_run {
        eprintln!(
            "replay: warning: {} trays, one slurmd each (about 10 MB apiece at this size, \
             docs/notebook/real-slurm-cost.md): consider --cloud",
            trays
        );
    }
    if a.topologies.is_empty() {
        return Err("--topologies: name at least one of nvl72, block, none".into());
    }
    // The labs' own algorithm unless asked otherwise: replays are small enough for it.
    cfg.backfill = a.w.backfill.map_or(Backfill::Conservative, Backfill::from);
    let healthy = cfg.trays() as f64 * (1.0 - cfg.failures.unavailability());
    let (jobs, name, details) = a.w.build(&cfg, healthy)?;
    let drawn = jobs.len();
    let jobs = runnable_at_load(jobs, racks, healthy, a.w.load);
    let left_out = drawn - jobs.len();
    let scale = match a.speed {
        Some(s) => s,
        None if a.minutes > 0.0 => scale_for(&jobs, a.minutes),
        None => return Err("--minutes must be positive".into()),
    };
    let spec = ScheduleSpec {
        racks,
        trays_per_rack: cfg.trays_per_rack,
        failures: cfg.failures,
        seed: cfg.seed,
        scale,
        drain: a.drain,
    };
    let schedule = schedule(&jobs, &spec)?;
    cfg.horizon = Some(schedule.horizon());
    // The lab's jobs checkpoint every so many real ms; the prediction uses that interval
    // scaled back, so both sides save at the same points.
    if let Checkpoints::Every(real) = cfg.checkpoints.scaled_down(scale) {
        if a.cloud {
            return Err("--checkpoint-minutes with --cloud: the cloud driver ends jobs itself and does not resume them; replay in a slurmd lab".into());
        }
        cfg.checkpoints = Checkpoints::Every(schedule.sim_ms(real));
    }
    let info = WorkloadInfo::of(name, details, &schedule.stream, healthy, cfg.gpus_per_tray);
    println!(
        "replay: {} jobs of `{}` (offered load {:.2}, {} left out: a compared policy could never run them on {} racks), {:.1} simulated hours in {:.1} real minutes (x{:.0}); failures: {} ({} tray changes)",
        schedule.jobs.len(),
        name,
        info.offered_load,
        left_out,
        racks,
        hours(schedule.horizon()),
        schedule.stop_ms as f64 / 60_000.0,
        scale,
        describe_failures(&cfg.failures),
        schedule.tray_events.len()
    );
    let models: Vec<PolicyKind> = a.topologies.iter().map(|t| t.model()).collect();
    // slurmctld's one-second scheduling tick, which compression stretches.
    cfg.sched_period = Some((1000.0 * a.tick_s * scale).round() as u64);
    cfg.requeue_delay = Some(lab_requeue_delay(scale));
    cfg.bf_window = Some(lab_bf_window(scale));
    cfg.run_overhead = Some(if a.cloud {
        cloud_run_overhead(scale)
    } else {
        lab_run_overhead(scale)
    });
    // The tables: one tick phase. The occupancy compared: the mean over the phases.
    let predicted = simulate_all(&cfg, &schedule.stream, &models, true, &|_, _| {});
    // Priced splits: usable occupancy, real against predicted, leads.
    let mut figures = ensembles(
        &cfg,
        &schedule.stream,
        &models,
        ENSEMBLE,
        &[
            calibration::occupancy,
            calibration::usable,
            calibration::goodput,
        ],
    );
    let goodput_prediction = (!cfg.checkpoints.is_none()).then(|| figures.remove(2));
    let usable_prediction = (!cfg.slowdown.is_off()).then(|| figures.remove(1));
    let prediction = figures.remove(0);
    let mut assumptions = format!(
        "slurmctld {} in every lab: SchedulerParameters={SCHED_PARAMS}, Slurm's defaults otherwise\nsimulator: {}",
        a.series,
        cfg.describe_scheduler()
    );
    if a.cloud {
        assumptions.push('\n');
        assumptions.push_str(CLOUD_NOTE);
    }
    if a.dry_run {
        print!("{}", table(&info, &cfg, predicted.clone()));
        if let Some(g) = &goodput_prediction {
            println!("{}", goodput_comparison(&[], &models, g));
        }
        if let Some(u) = &usable_prediction {
            println!("{}", usable_comparison(&[], &models, u));
        }
        println!("{}", comparison(&[], &models, &prediction, &[]));
        println!("{assumptions}");
        return Ok(());
    }

    let (real, fidelity, ends) = run_labs(a, &schedule, racks, &cfg)?;
    let mut all = real.clone();
    all.extend(predicted.iter().cloned());
    print!("{}", table(&info, &cfg, all.clone()));
    if let Some(g) = &goodput_prediction {
        println!("{}", goodput_comparison(&real, &models, g));
    }
    if let Some(u) = &usable_prediction {
        println!("{}", usable_comparison(&real, &models, u));
    }
    println!("{}", comparison(&real, &models, &prediction, &fidelity));
    for (topo, e) in &ends {
        println!("{}", describe_ends(*topo, e));
    }
    println!("{assumptions}");
    let title = format!(
        "{} ({} jobs, load {:.2}) on {} racks, failures: {}: real Slurm (solid) vs simulator (dashed)",
        info.name,
        info.jobs,
        info.offered_load,
        racks,
        describe_failures(&cfg.failures)
    );
    if let Some(path) = &a.plot {
        write_file(path, plot::svg(&all, &title))?;
    }
    let full = ReplayReport {
        workload: info,
        prefer_piece_multiple: Some(cfg.policy.prefer_piece_multiple),
        sim: cfg,
        scale,
        real_minutes: schedule.stop_ms as f64 / 60_000.0,
        jobs_left_out: left_out,
        tray_events: schedule.tray_events.len(),
        policies: all,
        prediction: models.iter().copied().zip(prediction).collect(),
        fidelity: by_name(fidelity),
        slurm_settings: SCHED_PARAMS.to_string(),
        stream: schedule.stream.clone(),
        date: Some(day(std::time::SystemTime::now())),
        series: a.series.clone(),
        cloud: a.cloud.then_some(CloudReport {
            note: CLOUD_NOTE.to_string(),
            ends: by_name(ends),
        }),
    };
    let json = serde_json::to_string_pretty(&full).map_err(|e| e.to_string())?;
    write_file(&a.out.join("replay.json"), &json)?;
    if let Some(path) = &a.json {
        write_file(path, &json)?;
    }
    Ok(())
}

/// Each real run measured, how well the log matched the schedule, and (`--cloud`) the
/// driver's ends, per topology.
type RealRuns = (
    Vec<PolicyReport>,
    Vec<(Topo, Fidelity)>,
    Vec<(Topo, CloudEnds)>,
);

/// Per-lab figures keyed by the topology plugin's name, as the report holds them.
fn by_name<T>(per_lab: Vec<(Topo, T)>) -> Vec<(String, T)> {
    per_lab
        .into_iter()
        .map(|(topo, x)| (topo.name().to_string(), x))
        .collect()
}

/// One line on the driver's ends in a `--cloud` lab.
fn describe_ends(topo: Topo, e: &CloudEnds) -> String {
    let mut line = format!(
        "{}: --cloud ends: {} jobs ended by slurm_complete_job in {} batches, {} refused, {} kicks refused; \
         replies after the due time: mean {:.0} ms, p99 {} ms, max {} ms",
        topo.name(),
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

/// Runs the schedule in one lab per compared topology (in parallel unless `--sequential`),
/// keeps each slurmctld log in `--out`, and measures each real run from it.
fn run_labs(
    a: &ReplayArgs,
    schedule: &Schedule,
    racks: usize,
    cfg: &SimConfig,
) -> Result<RealRuns, String> {
    let max_requeue = cfg.max_requeue;
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let scripts = scripts_dir(a.scripts.as_deref())?;
    let multi = MultiProgress::with_draw_target(if a.quiet || !std::io::stderr().is_terminal() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    });
    let prefix = a
        .lab_prefix
        .clone()
        .unwrap_or_else(|| match a.series.as_str() {
            "24.11" => "/var/tmp/nvl72-replay".to_string(),
            s => format!("/var/tmp/nvl72-replay-{s}"),
        });
    let labs: Vec<Lab> = a
        .topologies
        .iter()
        .map(|&topo| Lab {
            topo,
            dir: format!("{prefix}-{}", topo.name()),
            scripts: scripts.clone(),
            port_offset: a.port_offset,
            bar: bar(&multi, topo, schedule),
            series: a.series.clone(),
            cloud: a.cloud,
            slowdown: cfg.slowdown.clone(),
            // The prediction's interval on the lab's clock.
            checkpoints: cfg.checkpoints.scaled_down(schedule.scale),
        })
        .collect();
    let run = |lab: &Lab| -> Result<lab::LabRun, String> {
        let result = lab.run(schedule, racks, a, max_requeue);
        if !a.keep_labs {
            lab.down();
        }
        result
    };
    let results: Vec<Result<lab::LabRun, String>> = if a.sequential {
        labs.iter().map(run).collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = labs.iter().map(|lab| s.spawn(|| run(lab))).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("replay thread panicked".into()))
                })
                .collect()
        })
    };
    let mut real = Vec::new();
    let mut fidelity = Vec::new();
    let mut all_ends = Vec::new();
    for (lab, result) in labs.iter().zip(results) {
        let (observed, log, ends) = result.map_err(|e| format!("{}: {e}", lab.topo.name()))?;
        if let Some(e) = ends {
            all_ends.push((lab.topo, e));
        }
        write_file(
            &a.out.join(format!("{}-slurmctld.log", lab.topo.name())),
            &log,
        )?;
        // What the driver saw besides the log, to measure the run again later.
        let saved = serde_json::to_string(&observed).map_err(|e| e.to_string())?;
        write_file(
            &a.out.join(format!("{}-observed.json", lab.topo.name())),
            saved,
        )?;
        let events = parse_log(&log)?;
        let (r, fid) = report(
            schedule,
            &observed,
            &events,
            &Measure {
                kind: lab.topo.model(),
                trays_per_rack: cfg.trays_per_rack,
                total_trays: cfg.trays(),
                slowdown: &cfg.slowdown,
                checkpoints: cfg.checkpoints,
                series_bins: 200,
            },
        );
        real.push(r);
        fidelity.push((lab.topo, fid));
    }
    Ok((real, fidelity, all_ends))
}

/// Drops the jobs that some compared policy could never run on `racks` racks (the
/// simulator's own test, [`Placer::never_runnable`]: Slurm would leave them pending for
/// ever), restarts the clock at the first submission and, with `--load`, compresses arrivals
/// back to that load.
fn runnable_at_load(jobs: Vec<Job>, racks: usize, healthy: f64, load: Option<f64>) -> Vec<Job> {
    let policy = Policy::default();
    let mut placers: Vec<Placer> = PolicyKind::ALL
        .iter()
        .map(|&k| Placer::new(k, racks, 18, &policy, false))
        .collect();
    let mut kept: Vec<Job> = jobs
        .into_iter()
        .filter(|j| {
            placers
                .iter_mut()
                .all(|p| !p.never_runnable(SimRequest::of(j)))
        })
        .collect();
    let first = kept.first().map_or(0, |j| j.submit);
    for (id, j) in kept.iter_mut().enumerate() {
        j.id = id;
        j.submit -= first;
    }
    if let Some(load) = load.filter(|&l| l > 0.0) {
        set_offered_load(&mut kept, healthy, load);
    }
    kept
}

fn table(info: &WorkloadInfo, cfg: &SimConfig, policies: Vec<PolicyReport>) -> String {
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
fn usable_comparison(
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
fn goodput_comparison(
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
fn comparison(
    real: &[PolicyReport],
    models: &[PolicyKind],
    prediction: &[Option<(f64, f64)>],
    fidelity: &[(Topo, Fidelity)],
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
    for (topo, f) in fidelity {
        let _ = writeln!(
            out,
            "{}: submissions late by {:.0} ms on average (max {} ms); starts of the wrong size: {}; unknown nodes: {}; runs over their sleep: median {} ms, p90 {} ms",
            topo.name(),
            f.submit_late_mean_ms,
            f.submit_late_max_ms,
            f.wrong_size_starts,
            f.unknown_nodes,
            f.run_overhead_median_ms.map_or("-".into(), |v| v.to_string()),
            f.run_overhead_p90_ms.map_or("-".into(), |v| v.to_string()),
        );
    }
    out
}

fn bar(multi: &MultiProgress, topo: Topo, schedule: &Schedule) -> ProgressBar {
    let bar = multi.add(ProgressBar::new(schedule.stop_ms / 1000));
    bar.set_style(
        ProgressStyle::with_template("{prefix:>6} [{bar:30}] {pos}/{len} s {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(topo.name());
    bar
}

fn scripts_dir(given: Option<&Path>) -> Result<PathBuf, String> {
    let candidates: Vec<PathBuf> = match given {
        Some(p) => vec![p.to_path_buf()],
        None => vec![
            PathBuf::from("scripts"),
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts"),
        ],
    };
    candidates
        .into_iter()
        .find(|p| p.join("lab-up.sh").is_file())
        .map(|p| p.canonicalize().unwrap_or(p))
        .ok_or_else(|| {
            "scripts/lab-up.sh not found: run from the repository or pass --scripts".into()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvl72_sim::job::{offered_load, HOUR};

    fn job(id: usize, submit: u64, trays: usize) -> Job {
        Job::plain(id, submit, trays, HOUR, 2 * HOUR)
    }

    #[test]
    fn jobs_that_cannot_run_are_dropped_and_the_rest_keep_the_load() {
        let nine_segments = Job {
            segment: Some(16),
            ..job(2, 2 * HOUR, 144)
        };
        let jobs = vec![
            job(0, 0, 300),
            job(1, HOUR, 4),
            nine_segments,
            job(3, 5 * HOUR, 18),
        ];
        let kept = runnable_at_load(jobs, 8, 144.0, Some(0.5));
        assert_eq!(
            kept.iter().map(|j| (j.id, j.trays)).collect::<Vec<_>>(),
            [(0, 4), (1, 18)]
        );
        assert_eq!(kept[0].submit, 0, "the clock starts at the first kept job");
        assert!((offered_load(&kept, 144.0) - 0.5).abs() < 1e-3);
    }
}
