//! `nvl72`: the placement simulator's command line, and the admin's tools around the plugin.
//!
//! ```text
//! nvl72 status                       # live rack view (Slurm client commands on PATH)
//! nvl72 check                        # topology.toml against slurm.conf/gres.conf
//! nvl72 discover --dir smi-outputs/  # topology.toml from NVLink clique ids
//! nvl72 simulate --workload synthetic --racks 278 --jobs 3000 --load 0.9 --lambda 0.02
//! nvl72 simulate --workload philly --racks 12 --load 1.2 --json out.json --plot out.svg
//! nvl72 replay --workload synthetic --racks 8 --jobs 200 --minutes 8 --plot replay.svg
//! nvl72 analytic --k 4,16 --lambda 0,0.05 --racks 278 --seeds 20
//! nvl72 bench --racks 278
//! ```
#![forbid(unsafe_code)]
// The doc comments here are clap's help text, where `[policy]` names a TOML table, not a link.
#![allow(rustdoc::broken_intra_doc_links)]

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Deserialize;

use topology_nvl72::config::{EndTime, Policy};
use topology_nvl72::sim::analytic;
use topology_nvl72::sim::bench;
use topology_nvl72::sim::calibration::Calibration;
use topology_nvl72::sim::failures::FailureModel;
use topology_nvl72::sim::job::HOUR;
use topology_nvl72::sim::latency::LatencySummary;
use topology_nvl72::sim::plot;
use topology_nvl72::sim::policy::PolicyKind;
use topology_nvl72::sim::report::{describe_failures, RunReport};
use topology_nvl72::sim::simulation::simulate_all;
use topology_nvl72::sim::verdict::verdict;

#[path = "nvl72/admin.rs"]
mod admin;
#[path = "nvl72/breakeven.rs"]
mod breakeven;
#[path = "nvl72/calibrate.rs"]
mod calibrate;
#[path = "nvl72/output.rs"]
mod output;
#[path = "nvl72/replay.rs"]
mod replay;
#[path = "nvl72/stretch.rs"]
mod stretch;
#[path = "nvl72/workload.rs"]
mod workload;

#[derive(Parser)]
#[command(
    name = "nvl72",
    version,
    about = "topology/nvl72 tools: live rack status, and the placement simulator (the nvl72 engine vs topology/block vs Slurm without a topology plugin)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Replay a workload under several policies side by side.
    Simulate(SimulateArgs),
    /// Replay a workload in real slurmctlds (a lab per topology plugin: nvl72, block, none),
    /// time-compressed, and compare with the simulator's prediction for the same stream.
    Replay(replay::ReplayArgs),
    /// Predict earlier replays (`replay --json`) again with this simulator and print the
    /// error of every prediction, per plugin, with and without failures.
    Calibrate(calibrate::CalibrateArgs),
    /// Usable occupancy against a uniform slowdown of split jobs, and the slowdown at which
    /// nvl72 catches up with block and with naive.
    Breakeven(breakeven::BreakevenArgs),
    /// A priced replay lab's job script: sleep the base time × the slowdown of the nodes Slurm
    /// gave the job.
    #[command(hide = true)]
    Stretch(stretch::StretchArgs),
    /// Check the segment-size capacity formula against the simulator.
    Analytic(AnalyticArgs),
    /// Engine decision latency (mean, p50, p99) at 0%, 50% and 90% occupancy.
    Bench(BenchArgs),
    /// Average several `simulate --json` (or `replay --json`) reports (e.g. seeds) into one
    /// markdown table.
    Summarize(SummarizeArgs),
    /// Live view of the racks: a character per tray, the largest job that can start now,
    /// stranded GPUs and jobs waiting for topology.
    Status(admin::StatusArgs),
    /// Check topology.toml (or topology.conf) against slurm.conf and gres.conf with the
    /// plugin's own rules, and the plugin's Slurm release against slurmctld's, before
    /// `scontrol reconfigure` or a restart; exit 1 on errors.
    Check(admin::CheckArgs),
    /// Write topology.toml from the NVLink clique ids the nodes report (nvidia-smi -q, or
    /// node features); exit 1 when something needs an admin's attention.
    Discover(admin::DiscoverArgs),
}

#[derive(Args)]
struct SimulateArgs {
    #[command(flatten)]
    w: workload::WorkloadArgs,
    /// Comma-separated: nvl72, block, naive, nvl72-start-now, nvl72-balanced (the engine
    /// with multi_rack = "start-now" or "balanced"), nvl72-end-tie, nvl72-end-align
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
    /// Do not time placement calls (the JSON is then identical for equal seeds)
    #[arg(long)]
    no_timing: bool,
    /// Run the policies one after another instead of in parallel (clean timings)
    #[arg(long)]
    serial: bool,
    /// Recount the cluster after every event (slow; for debugging)
    #[arg(long)]
    check: bool,
    /// No progress bars
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct AnalyticArgs {
    /// Segment sizes
    #[arg(long, value_delimiter = ',', default_value = "4,8,9,16,18")]
    k: Vec<usize>,
    /// Unavailability rates
    #[arg(long, value_delimiter = ',', default_value = "0,0.02,0.05,0.1")]
    lambda: Vec<f64>,
    #[arg(long, default_value_t = 278)]
    racks: usize,
    /// Failure draws per point
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    #[arg(long, value_delimiter = ',', default_value = "nvl72,block")]
    policies: Vec<PolicyKind>,
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Args)]
struct BenchArgs {
    /// Rack counts, e.g. `18,72,278,1000,2800` for the cost curve
    #[arg(long, value_delimiter = ',', default_value = "278")]
    racks: Vec<usize>,
    /// Times each request is timed per scenario
    #[arg(long, default_value_t = 400)]
    rounds: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also print every request's latency
    #[arg(long)]
    per_request: bool,
    /// The engine's `[policy] end_time` rule: off, tie-break or align
    #[arg(long, default_value = "off", value_parser = parse_end_time)]
    end_time: EndTime,
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn parse_end_time(s: &str) -> Result<EndTime, String> {
    [EndTime::Off, EndTime::TieBreak, EndTime::Align]
        .into_iter()
        .find(|e| e.as_str() == s)
        .ok_or_else(|| format!("`{s}`: expected off, tie-break or align"))
}

#[derive(Args)]
struct SummarizeArgs {
    /// JSON reports of the same workload and cluster, e.g. one per seed
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let cmd = Cli::parse().cmd;
    let code = match &cmd {
        Cmd::Check(a) => Some(admin::check(a)),
        Cmd::Discover(a) => Some(admin::discover(a)),
        _ => None,
    };
    if let Some(code) = code {
        return match code {
            Ok(code) => ExitCode::from(code as u8),
            Err(e) => {
                eprintln!("nvl72: {e}");
                ExitCode::from(2)
            }
        };
    }
    let result = match cmd {
        Cmd::Simulate(a) => simulate(&a),
        Cmd::Replay(a) => replay::replay(&a),
        Cmd::Calibrate(a) => calibrate::calibrate(&a),
        Cmd::Analytic(a) => run_analytic(&a),
        Cmd::Bench(a) => run_bench(&a),
        Cmd::Summarize(a) => summarize(&a),
        Cmd::Breakeven(a) => breakeven::run(&a),
        Cmd::Stretch(a) => stretch::run(&a),
        Cmd::Status(a) => admin::status(&a),
        Cmd::Check(_) | Cmd::Discover(_) => unreachable!("handled above"),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvl72: {e}");
            ExitCode::FAILURE
        }
    }
}

fn simulate(a: &SimulateArgs) -> Result<(), String> {
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
    let (jobs, name, details) = a.w.build(healthy)?;
    let info = workload::workload_info(name, details, &jobs, healthy, cfg.gpus_per_tray);

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
    let margin = calibration.as_ref().and_then(|c| c.margin(with_failures));
    let usable_margin = calibration.and_then(|c| c.usable_margin(with_failures));
    if let Some(v) = verdict(&report, margin, usable_margin) {
        println!("{v}");
    }
    print!("{}", report.to_table());
    if let Some(path) = &a.json {
        write(path, &report.to_json())?;
    }
    if let Some(path) = &a.plot {
        let w = &report.workload;
        let title = format!(
            "{} ({} jobs, load {:.2}) on {} racks, failures: {}",
            w.name,
            w.jobs,
            w.offered_load,
            racks,
            describe_failures(&failures)
        );
        write(path, &plot::svg(&report.policies, &title))?;
    }
    Ok(())
}

/// The `[policy]` table of a topology.toml, or of a file that holds only that table.
fn read_policy(path: &Path) -> Result<Policy, String> {
    #[derive(Deserialize)]
    struct PolicyOnly {
        #[serde(default)]
        policy: Policy,
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let value: toml::Value =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let policy_only = match value.get("policy") {
        Some(p) => toml::Value::Table([("policy".to_string(), p.clone())].into_iter().collect()),
        None => toml::Value::Table(Default::default()),
    };
    policy_only
        .try_into::<PolicyOnly>()
        .map(|p| p.policy)
        .map_err(|e| format!("{}: [policy]: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    output::write_file(path, text)
}

/// Writes `value` as pretty JSON when `--json FILE` was given.
fn write_json(path: Option<&Path>, value: &impl serde::Serialize) -> Result<(), String> {
    match path {
        Some(p) => write(
            p,
            &serde_json::to_string_pretty(value).map_err(|e| e.to_string())?,
        ),
        None => Ok(()),
    }
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
        let style =
            ProgressStyle::with_template("{prefix:>6} [{bar:40}] {pos}/{len} jobs {elapsed}")
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

fn run_analytic(a: &AnalyticArgs) -> Result<(), String> {
    if let Some(&k) = a.k.iter().find(|&&k| k == 0 || k > 18) {
        return Err(format!("segment size {k} must be in 1..=18"));
    }
    println!(
        "usable fraction while jobs wait: formula vs simulation ({} racks, {} failure draws per point)\n",
        a.racks, a.seeds
    );
    println!(
        "{:>6} {:>3} {:>6} {:>8} {:>10} {:>8} {:>8} {:>14}",
        "policy", "k", "lambda", "formula", "simulated", "std.err", "diff", "equals draws"
    );
    let mut all = Vec::new();
    for &kind in &a.policies {
        for &k in &a.k {
            for &lambda in &a.lambda {
                let c = analytic::compare(kind, k, lambda, a.racks, a.seeds);
                println!(
                    "{:>6} {:>3} {:>6.2} {:>8.4} {:>10.4} {:>8.4} {:>7.2}% {:>14}",
                    kind.name(),
                    k,
                    lambda,
                    c.formula,
                    c.simulated,
                    c.std_err,
                    100.0 * (c.simulated - c.formula) / c.formula,
                    if c.exact_per_draw { "yes" } else { "NO" }
                );
                all.push(c);
            }
        }
    }
    write_json(a.json.as_deref(), &all)
}

fn run_bench(a: &BenchArgs) -> Result<(), String> {
    if a.racks.contains(&0) || a.rounds == 0 {
        return Err("--racks and --rounds must be at least 1".into());
    }
    let us = |ns: f64| ns / 1e3;
    let mut all = Vec::new();
    for &racks in &a.racks {
        println!(
            "nvl72 engine decision latency, {racks} racks, {} rounds of {} requests per scenario (us)\n",
            a.rounds,
            bench::REQUESTS.len() + bench::GPU_SIZED.len()
        );
        println!(
            "{:<24} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "scenario", "busy", "placeable", "mean", "p50", "p99", "max"
        );
        for s in bench::scenarios_with(racks, a.seed, a.end_time) {
            let m = bench::measure(&s, a.rounds);
            let row = |name: &str, busy: &str, placeable: &str, l: &LatencySummary| {
                println!(
                    "{name:<24} {busy:>9} {placeable:>9} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
                    us(l.mean_ns),
                    us(l.p50_ns as f64),
                    us(l.p99_ns as f64),
                    us(l.max_ns as f64)
                )
            };
            row(
                &m.scenario,
                &format!("{:.1}%", m.occupancy * 100.0),
                &format!("{}/{}", m.placeable, m.requests),
                &m.latency,
            );
            for st in &m.by_style {
                row(&format!("  {}", st.style.name()), "", "", &st.latency);
            }
            row("  (counting the racks)", "", "", &m.count_racks);
            if a.per_request {
                for req in &s.requests {
                    let one = bench::Scenario {
                        name: String::new(),
                        occupancy: s.occupancy,
                        topo: s.topo.clone(),
                        view: s.view.clone(),
                        requests: vec![req.clone()],
                    };
                    let r = bench::measure(&one, a.rounds);
                    let name = match req.demand.gpus {
                        0 => format!(
                            "    -N {}{}",
                            req.min_nodes,
                            req.segment
                                .map_or(String::new(), |g| format!(" --segment={g}"))
                        ),
                        g => format!("    --gpus={g}"),
                    };
                    row(&name, "", &format!("{}/1", r.placeable), &r.latency);
                }
            }
            all.push(m);
        }
        println!();
    }
    if a.racks.len() > 1 {
        print!("{}", bench::curve(&all));
    }
    write_json(a.json.as_deref(), &all)
}

/// The headline metrics of several reports: mean, and the range over the files.
fn summarize(a: &SummarizeArgs) -> Result<(), String> {
    use serde_json::Value;
    let reports: Vec<Value> = a
        .files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))
        })
        .collect::<Result<_, String>>()?;
    let first = &reports[0];
    println!(
        "{} jobs of `{}`, offered load {:.2}, {} racks, failures {}; {} run(s), mean (min-max)\n",
        first["workload"]["jobs"],
        first["workload"]["name"].as_str().unwrap_or("?"),
        first["workload"]["offered_load"].as_f64().unwrap_or(0.0),
        first["sim"]["racks"],
        first["sim"]["failures"],
        reports.len()
    );
    type Metric = (&'static str, f64, fn(&Value) -> Option<f64>);
    let metrics: [Metric; 29] = [
        ("usable occupancy while waiting %", 100.0, |p| {
            p["usable_occupancy_while_waiting"].as_f64()
        }),
        ("usable occupancy while submitting %", 100.0, |p| {
            p["usable_occupancy_arrivals"].as_f64()
        }),
        ("work split across racks %", 100.0, |p| {
            p["split_work_share"].as_f64()
        }),
        ("work cut inside a group %", 100.0, |p| {
            p["misaligned_work_share"].as_f64()
        }),
        ("mean slowdown of split runs", 1.0, |p| {
            p["mean_slowdown_split"].as_f64()
        }),
        ("runs past / killed at their limit", 1.0, |p| {
            Some(p["overruns"].as_f64()? + p["timeouts"].as_f64()?)
        }),
        ("occupancy while waiting %", 100.0, |p| {
            p["occupancy_while_waiting"].as_f64()
        }),
        ("occupancy while submitting %", 100.0, |p| {
            p["occupancy_arrivals"].as_f64()
        }),
        ("stranded % of healthy GPUs", 100.0, |p| {
            p["stranded_share"].as_f64()
        }),
        ("idle: reserved % of healthy", 100.0, |p| {
            idle_of(p, "reserved")
        }),
        ("idle: too few trays % of healthy", 100.0, |p| {
            idle_of(p, "too-few")
        }),
        ("idle: other % of healthy", 100.0, |p| idle_of(p, "other")),
        ("idle: rack set wait % of healthy", 100.0, |p| {
            idle_of(p, "rack-set")
        }),
        ("idle: failed trays % of healthy", 100.0, |p| {
            idle_of(p, "failed")
        }),
        ("idle: whole-rack wait % of healthy", 100.0, |p| {
            idle_of(p, "whole-rack")
        }),
        ("idle: remainders % of healthy", 100.0, |p| {
            idle_of(p, "remainder")
        }),
        ("small jobs in one rack %", 100.0, |p| {
            p["small_jobs_in_one_rack"]["share"].as_f64()
        }),
        ("GPU-sized jobs in one rack %", 100.0, |p| {
            p["gpu_sized_in_one_rack"]["share"].as_f64()
        }),
        ("segments in one rack %", 100.0, |p| {
            p["segments_in_one_rack"]["share"].as_f64()
        }),
        ("extra racks per large job", 1.0, |p| {
            p["large_jobs_extra_racks"].as_f64()
        }),
        ("large jobs' piece balance", 1.0, |p| {
            p["large_jobs_piece_balance"].as_f64()
        }),
        ("wait all jobs mean h", 1.0, |p| wait_of(p, "all", "mean_h")),
        ("wait all jobs p95 h", 1.0, |p| wait_of(p, "all", "p95_h")),
        ("wait 17-18 trays p95 h", 1.0, |p| {
            wait_of(p, "17-18", "p95_h")
        }),
        ("wait 19-72 trays mean h", 1.0, |p| {
            wait_of(p, "19-72", "mean_h")
        }),
        ("wait 19-72 trays p95 h", 1.0, |p| {
            wait_of(p, "19-72", "p95_h")
        }),
        ("wait 144+ trays p95 h", 1.0, |p| {
            wait_of(p, "144+", "p95_h")
        }),
        ("jobs held (killed > max-requeue)", 1.0, |p| {
            p["held"].as_f64()
        }),
        ("decision p99 us", 1e-3, |p| {
            p["decision_latency"]["p99_ns"].as_f64()
        }),
    ];
    // A report's column: its label (`slurm nvl72` in `replay` reports), else its policy.
    let column = |p: &Value| -> Option<String> {
        p["label"]
            .as_str()
            .or(p["policy"].as_str())
            .map(String::from)
    };
    let policies: Vec<String> = first["policies"]
        .as_array()
        .map(|ps| ps.iter().filter_map(column).collect())
        .unwrap_or_default();
    if let Some(line) = summary_usable_line(&reports, &policies, &column) {
        println!("{line}\n");
    }
    println!("| metric | {} |", policies.join(" | "));
    println!("|---|{}", "---|".repeat(policies.len()));
    for (name, scale, get) in metrics {
        let cells: Vec<String> = policies
            .iter()
            .map(|pol| {
                let vals: Vec<f64> = reports
                    .iter()
                    .filter_map(|r| {
                        r["policies"]
                            .as_array()?
                            .iter()
                            .find(|p| column(p).as_deref() == Some(pol.as_str()))
                            .and_then(get)
                    })
                    .map(|v| v * scale)
                    .collect();
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
            })
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    Ok(())
}

/// The verdict's usable line from the reports' means, when they price split jobs and have
/// an nvl72 column.
fn summary_usable_line(
    reports: &[serde_json::Value],
    policies: &[String],
    column: &dyn Fn(&serde_json::Value) -> Option<String>,
) -> Option<String> {
    use topology_nvl72::sim::verdict::{usable_line, Usable};
    let first = &reports[0];
    let slowdown = &first["sim"]["slowdown"];
    if slowdown.is_null() {
        return None; // priced nothing: usable equals occupancy
    }
    let mean = |pol: &str| -> Option<f64> {
        let vals: Vec<f64> = reports
            .iter()
            .filter_map(|r| {
                r["policies"]
                    .as_array()?
                    .iter()
                    .find(|p| column(p).as_deref() == Some(pol))?["usable_occupancy_while_waiting"]
                    .as_f64()
            })
            .collect();
        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
    };
    let pick = |name: &str| {
        policies
            .iter()
            .find(|p| p.as_str() == name)
            .and_then(|p| mean(p))
    };
    let sim = &first["sim"];
    let gpus = ["racks", "trays_per_rack", "gpus_per_tray"]
        .iter()
        .map(|k| sim[k].as_f64().unwrap_or(0.0))
        .product::<f64>();
    let failures: topology_nvl72::sim::failures::FailureModel =
        serde_json::from_value(sim["failures"].clone()).ok()?;
    let described: topology_nvl72::sim::slowdown::Slowdown =
        serde_json::from_value(slowdown.clone()).ok()?;
    Some(usable_line(&Usable {
        ours: pick("nvl72")?,
        naive: pick("naive"),
        block: pick("block"),
        healthy_gpus: gpus * (1.0 - failures.unavailability()),
        band: None,
        band_is_usables: false,
        model: format!("{} (means of {} runs)", described.describe(), reports.len()),
    }))
}

/// One cause's share of the healthy GPUs in `idle_by_cause`.
fn idle_of(p: &serde_json::Value, cause: &str) -> Option<f64> {
    p["idle_by_cause"]
        .as_array()?
        .iter()
        .find(|c| c["cause"] == cause)
        .and_then(|c| c["share"].as_f64())
}

fn wait_of(p: &serde_json::Value, class: &str, key: &str) -> Option<f64> {
    p["wait"]
        .as_array()?
        .iter()
        .find(|w| w["class"] == class)
        .and_then(|w| w[key].as_f64())
}
