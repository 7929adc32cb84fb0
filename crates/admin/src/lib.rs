//! The logic of `nvl72`'s admin commands, over the engine: [`status`] (the live rack view),
//! [`check`] (a topology file, `slurm.conf` and a plugin file, checked the way the plugin
//! and the Slurm release given at run time would load them) and [`discover`] (racks from
//! NVLink clique ids). Text in, text and typed reports out; the `nvl72` binary runs the
//! Slurm commands and prints.

pub mod check;
pub mod discover;
pub mod status;
