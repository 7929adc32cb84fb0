//! topology/nvl72: a Slurm topology plugin that treats every GB200 NVL72 rack as one
//! NVLink domain and keeps each job (or each `--segment` piece) inside one domain.
//!
//! The engine (`nvl72-engine`) and the admin tools (`nvl72-admin`) are crates of their own,
//! re-exported here under the same module names; this crate adds the plugin's FFI layer and
//! the simulator.
//! Everything except `ffi` is safe Rust without Slurm types. `ffi` is the only module with
//! `unsafe`: the crate denies `unsafe_code`, every other module forbids it, and inside `ffi`
//! each submodule that needs it says so.
#![deny(unsafe_code)]

#[doc(hidden)]
pub use nvl72_engine::testkit;
pub use nvl72_engine::{
    allocation, config, demand, fragmentation, held_trays, hostlist, idle, model, node_order,
    placement, reload, saved_pieces, topoinfo,
};

pub use nvl72_admin::{check, discover, status};

mod ffi;
pub mod replay;
pub mod sim;
