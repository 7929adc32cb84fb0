//! The topology/nvl72 engine: every GB200 NVL72 rack is one NVLink domain, and each job (or
//! each `--segment` piece) goes inside one domain with the fewest stranded GPUs.
//!
//! Safe Rust without Slurm types: the plugin's FFI layer (the root package) turns Slurm's
//! structures into these types and back, and the simulator and `nvl72`'s admin commands use
//! them as they are. `testkit` draws racks as rack maps for the tests of every crate; it and
//! the placement oracle are built only for tests and with the feature `testkit`, so the
//! plugin does not carry them.

pub mod allocation;
pub mod config;
pub mod demand;
pub mod fragmentation;
pub mod free_index;
pub mod held_trays;
pub mod hostlist;
pub mod idle;
pub mod node_order;
pub mod offered_view;
pub mod placement;
pub mod reload;
pub mod saved_pieces;
#[doc(hidden)]
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod topoinfo;
pub mod topology;
pub mod tray;
pub mod view;
