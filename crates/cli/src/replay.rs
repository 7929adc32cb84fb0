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

use nvl72_sim::contenders::policy::PolicyKind;
use nvl72_sim::job::hours;
use nvl72_sim::measures::policy_report::PolicyReport;
use nvl72_sim::replay::compare::{
    comparison, describe_ends, goodput_comparison, table, usable_comparison,
};
use nvl72_sim::replay::lab_model::{model_lab, CLOUD_NOTE, SCHED_PARAMS};
use nvl72_sim::replay::observe::parse_log;
use nvl72_sim::replay::predict::{predict, runnable_at_load};
use nvl72_sim::replay::report::{CloudEnds, CloudReport, ReplayReport};
use nvl72_sim::replay::schedule::{scale_for, schedule, Schedule, ScheduleSpec};
use nvl72_sim::replay::timeline::{report, Fidelity, Measure};
use nvl72_sim::reports::plot;
use nvl72_sim::reports::report::{describe_failures, WorkloadInfo};
use nvl72_sim::run::scheduler::Backfill;
use nvl72_sim::run::simulation::SimConfig;
use nvl72_sim::workload::checkpoint::Checkpoints;

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

/// `YYYY-MM-DD` of a time, UTC.
pub fn day(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()[..10].to_string()
}

pub fn replay(a: &ReplayArgs) -> Result<(), String> {
    let racks = a.w.racks.unwrap_or(8);
    if a.w.preempts() {
        // The lab's streams run in one partition: nothing there would preempt.
        return Err(
            "preemption tiers (--high-tier-from, --tier-partition, --tier-qos) apply to simulate and breakeven, not to a replay"
                .into(),
        );
    }
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
    let jobs = runnable_at_load(jobs, racks, cfg.trays_per_rack, healthy, a.w.load);
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
    model_lab(&mut cfg, scale, a.tick_s, a.cloud);
    let predicted = predict(&cfg, &schedule.stream, &models);
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
        print!("{}", table(&info, &cfg, predicted.runs.clone()));
        if let Some(g) = &predicted.goodput {
            println!("{}", goodput_comparison(&[], &models, g));
        }
        if let Some(u) = &predicted.usable {
            println!("{}", usable_comparison(&[], &models, u));
        }
        println!("{}", comparison(&[], &models, &predicted.occupancy, &[]));
        println!("{assumptions}");
        return Ok(());
    }

    let (real, fidelity, ends) = run_labs(a, &schedule, racks, &cfg)?;
    let (fidelity, ends) = (by_name(fidelity), by_name(ends));
    let mut all = real.clone();
    all.extend(predicted.runs.iter().cloned());
    print!("{}", table(&info, &cfg, all.clone()));
    if let Some(g) = &predicted.goodput {
        println!("{}", goodput_comparison(&real, &models, g));
    }
    if let Some(u) = &predicted.usable {
        println!("{}", usable_comparison(&real, &models, u));
    }
    println!(
        "{}",
        comparison(&real, &models, &predicted.occupancy, &fidelity)
    );
    for (lab, e) in &ends {
        println!("{}", describe_ends(lab, e));
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
        segment_placement: Some(cfg.policy.segment_placement),
        sim: cfg,
        scale,
        real_minutes: schedule.stop_ms as f64 / 60_000.0,
        jobs_left_out: left_out,
        tray_events: schedule.tray_events.len(),
        policies: all,
        prediction: models.iter().copied().zip(predicted.occupancy).collect(),
        fidelity,
        slurm_settings: SCHED_PARAMS.to_string(),
        stream: schedule.stream.clone(),
        date: Some(day(std::time::SystemTime::now())),
        series: a.series.clone(),
        cloud: a.cloud.then_some(CloudReport {
            note: CLOUD_NOTE.to_string(),
            ends,
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
