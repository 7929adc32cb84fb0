//! topology/nvl72: a Slurm topology plugin that treats every GB200 NVL72 rack as one
//! NVLink domain and keeps each job (or each `--segment` piece) inside one domain.
//!
//! Everything except [`ffi`] is safe Rust without Slurm types, so the placement logic can be
//! tested and benchmarked on its own. `ffi` is the only module with `unsafe`: the crate
//! denies `unsafe_code`, every other module forbids it, and inside `ffi` each submodule that
//! needs it says so.
#![deny(unsafe_code)]

pub mod allocation;
pub mod check;
pub mod config;
pub mod demand;
pub mod discover;
mod ffi;
pub mod fragmentation;
pub mod held_trays;
pub mod hostlist;
pub mod idle;
pub mod model;
pub mod node_order;
pub mod placement;
pub mod reload;
pub mod replay;
pub mod saved_pieces;
pub mod sim;
pub mod status;
#[doc(hidden)]
pub mod testkit;
pub mod topoinfo;
