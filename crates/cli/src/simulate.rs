//! `nvl72 simulate`: a workload under several policies side by side, with the verdict, the
//! table, the error band of the simulator and optional JSON and SVG.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use nvl72_engine::config::{self, Policy};
use nvl72_sim::contenders::policy::PolicyKind;
use nvl72_sim::job::HOUR;
use nvl72_sim::reports::html::Page;
use nvl72_sim::reports::plot;
use nvl72_sim::reports::report::{describe_failures, RunReport, WorkloadInfo};
use nvl72_sim::reports::verdict::{verdict, Figure, Margins};
use nvl72_sim::run::failures::FailureModel;
use nvl72_sim::run::simulation::simulate_all;
use nvl72_sim::studies::calibration::Calibration;
use nvl72_sim::studies::recommend;

use crate::output::write_file;
use crate::workload;

#[derive(Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    w: workload::WorkloadArgs,
    /// Comma-separated: nvl72, block, naive, nvl72-start-now, nvl72-balanced (the engine
    /// with multi_rack = "start-now" or "balanced"), nvl72-end-tie, nvl72-end-align,
    /// nvl72-spill, nvl72-slurm-order (the engine, but preemption victims in Slurm's own
    /// order: the plugin with preemption_cost = "slurm"; nvl72 steers to the least loss)
    #[arg(long, value_delimiter = ',', default_value = "nvl72,block,naive")]
    policies: Vec<PolicyKind>,
    /// topology.toml (or a file with just its [policy] table) for the nvl72 engine's knobs
    #[arg(long)]
    policy_file: Option<PathBuf>,
    /// Stop after this many simulated days (jobs left count as unfinished)
    #[arg(long)]
    horizon_days: Option<f64>,
    /// Scheduling passes only every this many simulated seconds (slurmctld's one-second
    /// tick, times a replay's time scale) instead of after every event
    #[arg(long, value_name = "SECONDS")]
    sched_period_s: Option<f64>,
    /// Write the full report as JSON
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write occupancy and queue length over time as SVG
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Write the report to forward as one HTML file that reads offline: the verdict, what
    /// was run (this command, the input's summary), the table and the plot
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
    /// Do not time placement calls (the JSON is then identical for equal seeds)
    #[arg(long)]
    no_timing: bool,
    /// Run the policies one after another instead of in parallel (clean timings)
    #[arg(long)]
    serial: bool,
    /// Recount the cluster after every event (slow; for debugging)
    #[arg(long)]
    check: bool,
    /// Also run nvl72 under each candidate `[policy]` setting (one key away from the one in
    /// force: multi_rack, end_time, segment_placement, a switches limit) and print the one
    /// with the most goodput as a topology.toml snippet, when it wins beyond the error band
    #[arg(long)]
    recommend: bool,
    /// No progress bars
    #[arg(long)]
    quiet: bool,
}

pub fn simulate(a: &SimulateArgs) -> Result<(), String> {
    let racks = a.w.racks_for_simulate()?;
    let mut cfg = a.w.sim_config(racks)?;
    cfg.timing = !a.no_timing;
    cfg.check_invariants = a.check;
    cfg.horizon = a.horizon_days.map(|d| (d * 24.0 * HOUR as f64) as u64);
    cfg.sched_period = a.sched_period_s.map(|s| (s * 1000.0).round() as u64);
    if let Some(path) = &a.policy_file {
        cfg.policy = read_policy(path)?;
    }
    let failures = cfg.failures;
    let healthy = cfg.trays() as f64 * (1.0 - failures.unavailability());
    let (jobs, name, details) = a.w.build(&cfg, healthy)?;
    let info = WorkloadInfo::of(name, details, &jobs, healthy, cfg.gpus_per_tray);

    let bars = Bars::new(&a.policies, jobs.len(), a.quiet);
    let policies = simulate_all(&cfg, &jobs, &a.policies, !a.serial, &|k, done| {
        bars.set(k, done)
    });
    bars.finish();
    let with_failures = !matches!(cfg.failures, FailureModel::None);
    let calibration = Calibration::shipped(cfg.backfill);
    let report = RunReport {
        workload: info,
        error_band: calibration.as_ref().and_then(|c| c.band(with_failures)),
        usable_error_band: calibration
            .as_ref()
            .and_then(|c| c.usable_band(with_failures)),
        sim: cfg,
        policies,
    };
    let margins = Margins::of(calibration.as_ref(), with_failures);
    let verdict = verdict(&report, &margins);
    if let Some(v) = &verdict {
        println!("{v}");
    }
    print!("{}", report.to_table());
    if a.recommend {
        let tried = recommend::try_all(
            &report.sim,
            &jobs,
            recommend::candidates(&report.sim.policy),
            !a.serial,
        );
        let (band, band_of) = margins.policy_band(Figure::Goodput, PolicyKind::Nvl72);
        println!(
            "\n[policy] settings tried on this workload (nvl72 only; goodput while jobs wait):\n\n{}",
            recommend::render(&tried, band, band_of)
        );
    }
    if let Some(path) = &a.json {
        write_file(path, report.to_json())?;
    }
    let w = &report.workload;
    let title = format!(
        "{} ({} jobs, load {:.2}) on {} racks, failures: {}",
        w.name,
        w.jobs,
        w.offered_load,
        racks,
        describe_failures(&failures)
    );
    if let Some(path) = &a.plot {
        write_file(path, plot::svg(&report.policies, &title))?;
    }
    if let Some(path) = &a.report {
        let page = Page {
            report: &report,
            verdict: verdict.as_deref(),
            command: &command_line(),
            plot_svg: &plot::svg(&report.policies, &title),
            made_by: &format!(
                "nvl72 {}, {}",
                env!("CARGO_PKG_VERSION"),
                humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            ),
        };
        write_file(path, page.render())?;
    }
    Ok(())
}

/// This process's command line as a shell would read it back, named `nvl72`.
fn command_line() -> String {
    let args = std::iter::once("nvl72".to_string()).chain(std::env::args().skip(1));
    shlex::try_join(args.collect::<Vec<_>>().iter().map(String::as_str))
        .unwrap_or_else(|_| std::env::args().collect::<Vec<_>>().join(" "))
}

/// The `[policy]` table of a topology.toml, or of a file that holds only that table, checked
/// as the plugin checks it.
fn read_policy(path: &Path) -> Result<Policy, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    config::parse_policy(&text, path).map_err(|e| e.to_string())
}

/// One progress bar per policy on stderr; hidden with `--quiet` or when stderr is no TTY.
struct Bars {
    bars: Vec<(PolicyKind, ProgressBar)>,
}

impl Bars {
    fn new(kinds: &[PolicyKind], jobs: usize, quiet: bool) -> Bars {
        let multi = MultiProgress::with_draw_target(if quiet || !std::io::stderr().is_terminal() {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        });
        let style = ProgressStyle::with_template(
            "{prefix:>6} [{bar:40}] {pos}/{len} jobs {elapsed}, about {eta} left",
        )
        .expect("valid template")
        .progress_chars("=> ");
        let bars = kinds
            .iter()
            .map(|&k| {
                let bar = multi.add(ProgressBar::new(jobs as u64));
                bar.set_style(style.clone());
                bar.set_prefix(k.name());
                (k, bar)
            })
            .collect();
        Bars { bars }
    }

    fn set(&self, kind: PolicyKind, done: usize) {
        if let Some((_, bar)) = self.bars.iter().find(|(k, _)| *k == kind) {
            bar.set_position(done as u64);
        }
    }

    fn finish(&self) {
        for (_, bar) in &self.bars {
            bar.finish_and_clear();
        }
    }
}
