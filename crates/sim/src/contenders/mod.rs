//! The contenders: the placement policies the simulator compares behind one
//! [`policy::Placer::place`] call, and what they decide on.
//!
//! | Module | One concept |
//! |---|---|
//! | [`policy`] | nvl72, block, naive (and two engine what-ifs) behind one `place` call |
//! | [`block`] | The model of topology/block's node choice |
//! | [`naive`] | Slurm's own consecutive best fit, without a topology plugin |
//! | [`engine_view`] | The engine's view of the cluster, updated where trays changed |
//! | [`free_map`] | A free-tray map with its count and fingerprint |
//! | [`latency`] | Nanoseconds per placement call |

pub mod block;
pub mod engine_view;
pub mod free_map;
pub mod latency;
pub mod naive;
pub mod policy;
