//! A trace-driven placement simulator: replays a job stream on a cluster of NVL72 racks
//! under three policies side by side — the plugin's engine (`nvl72`, the `nvl72-engine` crate), a model of Slurm
//! 24.11 topology/block (`block`), and topology-naive Slurm (`naive`: its consecutive best fit) — with the same
//! failure timeline for each, and measures occupancy, stranded GPUs, locality, queue waits
//! and decision latency. The `nvl72` binary (`crates/cli`) is its command line; the
//! method and results are in `docs/notebook/benchmarks.md`.
//!
//! | Module | One concept |
//! |---|---|
//! | [`job`] | A job: trays, `--segment`, submit time, run time, time limit; size classes |
//! | [`workload::trace`] | A CSV job trace (Philly, the Kalos sample, a site's own) as a workload |
//! | [`workload::sacct`] | A site's job history, as `sacct` exports it from Slurm accounting, as a workload |
//! | [`workload::synthetic`] | The synthetic NVL72 job mix |
//! | [`run::failures`] | Per-tray up/down processes |
//! | [`workload::checkpoint`] | How often jobs save their progress: what a kill loses |
//! | [`run::cluster`] | Tray states: free, busy, down |
//! | [`contenders::free_map`] | A free-tray map with its count and fingerprint |
//! | [`contenders::block`] | The model of topology/block's node choice |
//! | [`contenders::engine_view`] | The engine's view of the cluster, updated where trays changed |
//! | [`contenders::naive`] | Slurm's own consecutive best fit, without a topology plugin |
//! | [`contenders::policy`] | nvl72, block, naive (and two engine what-ifs) behind one `place` call |
//! | [`run::scheduler`] | One pass: priority FIFO plus EASY backfill |
//! | [`run::simulation`] | The discrete-event loop |
//! | [`slowdown`] | What a rack boundary costs a job: its slowdown from its pieces |
//! | [`measures::metrics`] | What is measured, and its definitions |
//! | [`contenders::latency`] | Nanoseconds per placement call |
//! | [`report`] / [`plot`] | The text table, the JSON, the SVG |
//! | [`verdict`] | The plain-language verdict at the top of a report |
//! | [`recommend`] | The `[policy]` setting with the most goodput on a workload |
//! | [`breakeven`] | The uniform slowdown at which nvl72 meets another policy on usable GPUs |
//! | [`calibration`] | The simulator's measured error against real slurmctld replays |
//! | [`analytic`] | The segment-size capacity formula and its check |
//! | [`bench`](mod@bench) | Decision-latency scenarios |
//! | [`replay`] | The model side of `nvl72 replay`: a stream compressed for a real slurmctld, and what it did, measured alike |

// The engine's modules under the names the simulator has always used for them.
#[cfg(test)]
use nvl72_engine::testkit;
use nvl72_engine::{config, hostlist, idle, offered_view, placement, topology, tray, view};

pub mod analytic;
pub mod bench;
pub mod breakeven;
pub mod calibration;
pub mod contenders;
pub mod html;
pub mod job;
pub mod measures;
pub mod plot;
pub mod recommend;
pub mod replay;
pub mod report;
pub mod run;
pub mod slowdown;
pub mod verdict;
pub mod workload;

/// The sacct reader under the name the lab suite (`tests/e2e`, which this crate's moves
/// leave alone) and its own callers used before it moved under [`workload`].
pub use workload::sacct;

#[cfg(test)]
mod slowdown_tests;
#[cfg(test)]
mod tests;
