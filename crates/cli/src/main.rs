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
// The doc comments here are clap's help text, where `[policy]` names a TOML table, not a link.
#![allow(rustdoc::broken_intra_doc_links)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod admin;
mod analytic;
mod bench;
mod breakeven;
mod calibrate;
mod choices;
mod output;
mod replay;
mod simulate;
mod stretch;
mod summarize;
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
    Simulate(simulate::SimulateArgs),
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
    Analytic(analytic::AnalyticArgs),
    /// Engine decision latency (mean, p50, p99) at 0%, 50% and 90% occupancy.
    Bench(bench::BenchArgs),
    /// Average several `simulate --json` (or `replay --json`) reports (e.g. seeds) into one
    /// markdown table.
    Summarize(summarize::SummarizeArgs),
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
        Cmd::Simulate(a) => simulate::simulate(&a),
        Cmd::Replay(a) => replay::replay(&a),
        Cmd::Calibrate(a) => calibrate::calibrate(&a),
        Cmd::Analytic(a) => analytic::run(&a),
        Cmd::Bench(a) => bench::run(&a),
        Cmd::Summarize(a) => summarize::summarize(&a),
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
