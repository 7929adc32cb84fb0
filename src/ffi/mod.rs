//! The C side of the plugin. Every `unsafe` in the crate lives below this module; the rest of
//! the crate never sees a Slurm type.
//!
//! - `bindings`: bindgen output for the pinned Slurm headers.
//! - `slurm`: small safe wrappers (bitmaps, node table, strings, logging).
//! - `guard`: catches panics at every entry point.
//! - `state`: the loaded rack table shared by all entry points.
//! - `exports`: the symbols Slurm's plugin loader looks up.
//! - `eval`: job placement inside slurmctld's selection.
//! - `topoinfo`: `scontrol show topology` (get, pack, unpack, print, free).
mod bindings;
mod end_times;
mod eval;
mod exports;
mod guard;
mod slurm;
mod state;
mod topoinfo;
