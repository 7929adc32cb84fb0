//! Replaying a simulator workload in a real slurmctld (`nvl72 replay`): [`schedule`] compresses
//! the job stream and the tray failures in time, [`observe`] reads what slurmctld did from
//! its log, [`stretch`] prices a lab job's real nodes with the slowdown model, and
//! [`timeline`] measures that with the simulator's own metrics so the real run
//! and the simulator's prediction for the same stream sit side by side, and [`report`] is
//! the document that holds both; [`lab_nodes`] names the lab's trays. [`lab_model`] is the
//! lab as the simulator models it (its Slurm settings, its delays in simulated time),
//! [`predict`] the simulator's side (the stream it can compare, its prediction, a saved
//! replay predicted again), [`compare`] the comparison `nvl72 replay` prints. The command and
//! the driver that runs the labs are `replay.rs` and `replay/lab.rs` in the `nvl72` binary
//! (`crates/cli`); the method is in docs/notebook/benchmarks.md ("Real Slurm").
#![forbid(unsafe_code)]

pub mod compare;
pub mod lab_model;
pub mod lab_nodes;
pub mod observe;
pub mod predict;
pub mod report;
pub mod schedule;
pub mod stretch;
pub mod timeline;
