//! A trace-driven placement simulator: replays a job stream on a cluster of NVL72 racks
//! under three policies side by side — the plugin's engine (`nvl72`, the `nvl72-engine` crate), a model of Slurm
//! 24.11 topology/block (`block`), and topology-naive Slurm (`naive`: its consecutive best fit) — with the same
//! failure timeline for each, and measures occupancy, stranded GPUs, locality, queue waits
//! and decision latency. The `nvl72` binary (`crates/cli`) is its command line; the
//! method and results are in `docs/notebook/benchmarks.md`.
//!
//! The crate is in floors, each folder one job and importing only the floors below it:
//!
//! | Folder / module | One job |
//! |---|---|
//! | [`job`], [`slowdown`] | The ground floor: a job (trays, `--segment`, submit time, run time, time limit; size classes) and what a rack boundary costs it (its slowdown from its pieces) |
//! | [`workload`] | A job stream from its description: [`workload::synthetic`] (the synthetic NVL72 mix), [`workload::trace`] (a CSV job trace), [`workload::sacct`] (a site's history from Slurm accounting), [`workload::checkpoint`] (how often jobs save their progress: what a kill loses), [`workload::tiers`] and [`workload::site_tiers`] (preemption tiers: by job size, or a site's by partition or QOS) |
//! | [`contenders`] | The policies compared, behind one `place` call ([`contenders::policy`]): the engine, the model of topology/block ([`contenders::block`]), Slurm's consecutive best fit ([`contenders::naive`]); what they decide on ([`contenders::free_map`], [`contenders::engine_view`]) and their decision latency ([`contenders::latency`]) |
//! | [`measures`] | What is measured: the recorder and its definitions ([`measures::metrics`]), the per-policy report it fills ([`measures::policy_report`]) |
//! | [`run`] | The event engine: the discrete-event loop ([`run::simulation`]), one scheduling pass of priority FIFO plus backfill ([`run::scheduler`]), the queue, the trays' states ([`run::cluster`]), per-tray up/down processes ([`run::failures`]), preemption by a higher tier ([`run::preemption`]) |
//! | [`studies`] | Many runs to one answer: calibration against real replays, break-even, the `[policy]` recommendation, the segment-size formula, decision-latency scenarios |
//! | [`reports`] | The text table and the JSON ([`reports::report`]), the verdict, the SVG, the HTML report |
//! | [`replay`] | The model side of `nvl72 replay`: a stream compressed for a real slurmctld, the lab as the simulator models it, what it did measured alike, and the comparison |

// The engine's modules under the names the simulator has always used for them.
#[cfg(test)]
use nvl72_engine::testkit;
use nvl72_engine::{config, hostlist, idle, offered_view, placement, topology, tray, view};

pub mod contenders;
pub mod job;
pub mod measures;
pub mod replay;
pub mod reports;
pub mod run;
pub mod slowdown;
pub mod studies;
pub mod workload;
