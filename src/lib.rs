//! topology/nvl72: a Slurm topology plugin that treats every GB200 NVL72 rack as one
//! NVLink domain and keeps each job (or each `--segment` piece) inside one domain.
//!
//! This crate is the plugin's FFI layer and nothing else: Slurm's topology C ABI over the
//! engine (`nvl72_engine`, safe Rust without Slurm types, named as such everywhere). The
//! admin tools, the simulator and the `nvl72` command line are other members of the
//! workspace (`crates/`), which the plugin does not link. The crate denies `unsafe_code`;
//! each module that needs it says so below, and every `unsafe` block carries a SAFETY
//! comment.
//!
//! - `bindings`: bindgen output for the pinned Slurm headers.
//! - `call`: `Call<'c>`, the borrow scope of one call from Slurm; `guard`: the panic guard
//!   that opens it, and the `export!` and `callback!` macros.
//! - `exports`: the functions Slurm's plugin loader looks up (all through `export!`);
//!   `plugin_id`: the data symbols it reads (name, type, version, id).
//! - `slurm`: small safe wrappers, one module per concern (bitmaps, node records, layout
//!   checks, memory and strings, logging, configuration).
//! - `topo_eval`, `job`: `TopoEval<'c>` and `Job<'c>`, the eval struct and job record
//!   borrowed for one call, read through safe accessors.
//! - `error`: `PluginError` and how a result becomes each symbol's C code.
//! - `state`: the loaded rack table shared by all entry points.
//! - `ops`: plugin life cycle, rack lookups, `get`.
//! - `eval`: job placement inside slurmctld's selection (safe code over `TopoEval`/`Job`);
//!   `view`: the trays it offers the engine, built into the last call's memory; `memo`: what
//!   one evaluation's first callbacks learn for its later ones; `restore`: the only writer of
//!   the eval struct (the callback, 26.05's directive, a try and its undo).
//! - `end_times`: when running jobs end, for `[policy] end_time`.
//! - `preemption`: which rack a job that can start only by preemption clears (its plan,
//!   kept until the job starts, steers Slurm's run-now loop).
//! - `topoinfo`: `scontrol show topology` (get, pack, unpack, print, free).
//! - `ctx` (25.05+): the operations later series added or changed (context, node units,
//!   topology strings, one-node path, ranks).
//! - `jobinfo` (25.11+): each job's NVLink-domain pieces, for one IMEX channel each.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#[allow(unsafe_code, clippy::undocumented_unsafe_blocks)]
mod bindings;
mod call;
#[cfg(slurm_ctx)]
#[allow(unsafe_code)]
mod ctx;
#[allow(unsafe_code)]
mod end_times;
mod error;
#[allow(unsafe_code)]
mod eval;
mod exports;
#[cfg(feature = "fault-injection")]
#[allow(unsafe_code)]
mod fault;
mod guard;
#[allow(unsafe_code)]
mod job;
#[cfg(slurm_jobinfo)]
#[allow(unsafe_code)]
mod jobinfo;
mod memo;
#[allow(unsafe_code)]
mod ops;
mod plugin_id;
#[allow(unsafe_code)]
mod preemption;
#[allow(unsafe_code)]
mod restore;
#[allow(unsafe_code)]
mod saved_jobs;
#[allow(unsafe_code)]
mod slurm;
mod state;
#[allow(unsafe_code)]
mod topo_eval;
#[allow(unsafe_code)]
mod topoinfo;
mod view;
