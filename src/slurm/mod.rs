//! Thin, safe wrappers over the Slurm calls the plugin makes.
//!
//! Soundness rests on two facts that hold in every process that loads the plugin: the node
//! table (`node_record_table_ptr`, `node_record_count`) is only rebuilt while no plugin entry
//! point runs (slurmctld holds its config write lock, slurmd is single-threaded at that point),
//! and every `bitstr_t` handed to us is a valid Slurm bitmap of at least `bit_size` bits.
//!
//! One module per concern: [`bitmap`], [`node`] records, [`layout`] checks, [`memory`]
//! (allocator and strings), [`logging`] and [`conf`]iguration; all re-exported here, so callers
//! write `slurm::name`.

use std::ffi::c_int;

use super::bindings as b;

mod bitmap;
mod conf;
mod layout;
mod logging;
mod memory;
mod node;

pub use bitmap::*;
pub use conf::*;
pub use layout::*;
pub use logging::*;
pub use memory::*;
pub use node::*;

pub const SUCCESS: c_int = b::SLURM_SUCCESS as c_int;
pub const ERROR: c_int = b::SLURM_ERROR;
pub const TOPO_UNAVAILABLE: c_int =
    b::slurm_err_t_ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE as c_int;
