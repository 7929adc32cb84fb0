//! Replaying a simulator workload in a real slurmctld (`nvl72 replay`): [`schedule`] compresses
//! the job stream and the tray failures in time, [`observe`] reads what slurmctld did from
//! its log, [`stretch`] prices a lab job's real nodes with the slowdown model, and
//! [`timeline`] measures that with the simulator's own metrics so the real run
//! and the simulator's prediction for the same stream sit side by side, and [`report`] is
//! the document that holds both; [`lab_nodes`] names the lab's trays. The command and the driver that runs the labs are
//! `replay.rs` and `replay/lab.rs` in the `nvl72` binary (`crates/cli`); the method is in
//! docs/notebook/benchmarks.md ("Real Slurm").
#![forbid(unsafe_code)]

pub mod lab_nodes;
pub mod observe;
pub mod report;
pub mod schedule;
pub mod stretch;
pub mod timeline;
