//! topology/nvl72: a Slurm topology plugin that treats every GB200 NVL72 rack as one
//! NVLink domain and keeps each job (or each `--segment` piece) inside one domain.
//!
//! The engine (`nvl72-engine`) is a crate of its own, re-exported here under its module names;
//! this crate adds the plugin's FFI layer: Slurm's topology C ABI over the engine. The admin
//! tools, the simulator and the `nvl72` command line are other members of the workspace
//! (`crates/`), which the plugin does not link.
//! The engine is safe Rust without Slurm types. `ffi` is the only module with
//! `unsafe`: the crate denies `unsafe_code`, every other module forbids it, and inside `ffi`
//! each submodule that needs it says so.
#![deny(unsafe_code)]

#[doc(hidden)]
pub use nvl72_engine::testkit;
pub use nvl72_engine::{
    allocation, config, demand, fragmentation, free_index, held_trays, hostlist, idle, model,
    node_order, offered_view, placement, reload, saved_pieces, topoinfo,
};

mod ffi;
