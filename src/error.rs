//! How the plugin's errors become Slurm's return codes, in one place.
//!
//! Implementations behind `export!`/`callback!` return `Result<(), PluginError>` (or a plain
//! C value); [`IntoC`] turns the result into the symbol's C return type, so no implementation
//! spells a code itself. [`Failure`] is why a placement try found nothing, which each series
//! reports differently (26.05 also tells its retry loop what to do next).

use std::ffi::c_int;

#[cfg(slurm_eval_action)]
use super::bindings as b;
use super::slurm;

/// An error returned to Slurm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PluginError {
    /// `SLURM_ERROR`: refused now (bad arguments, nothing loaded, no room or no resources).
    Error,
    /// `ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE`: the request can never fit the racks.
    TopoUnavailable,
    /// 26.05 `ESLURM_TOPO_NO_FIT`: "No suitable topology unit found" (the pending reason).
    #[cfg(slurm_eval_action)]
    TopoNoFit,
    /// 26.05 `ESLURM_TOPO_SEGMENT_NO_FIT`: the same for a `--segment` job.
    #[cfg(slurm_eval_action)]
    TopoSegmentNoFit,
    /// A code Slurm's own helper returned, passed on unchanged.
    Slurm(c_int),
}

impl PluginError {
    pub fn code(self) -> c_int {
        match self {
            PluginError::Error => slurm::ERROR,
            PluginError::TopoUnavailable => slurm::TOPO_UNAVAILABLE,
            #[cfg(slurm_eval_action)]
            PluginError::TopoNoFit => b::slurm_err_t_ESLURM_TOPO_NO_FIT as c_int,
            #[cfg(slurm_eval_action)]
            PluginError::TopoSegmentNoFit => b::slurm_err_t_ESLURM_TOPO_SEGMENT_NO_FIT as c_int,
            PluginError::Slurm(rc) => rc,
        }
    }

    /// A Slurm return code as a result: `SLURM_SUCCESS` is `Ok`.
    pub fn check(rc: c_int) -> Result<(), PluginError> {
        if rc == slurm::SUCCESS {
            Ok(())
        } else {
            Err(PluginError::Slurm(rc))
        }
    }
}

/// An implementation's result as the C value its symbol returns.
pub trait IntoC<R> {
    fn into_c(self) -> R;
}

/// Plain C values (pointers, counts, `bool`) pass through.
impl<T> IntoC<T> for T {
    fn into_c(self) -> T {
        self
    }
}

impl IntoC<c_int> for Result<(), PluginError> {
    fn into_c(self) -> c_int {
        self.map_or_else(PluginError::code, |()| slurm::SUCCESS)
    }
}

/// How a placement try ended without a placement.
#[derive(Clone, Copy, Debug)]
pub enum Failure {
    /// No rack (or set of racks, or room for the segments) can hold the job now.
    NoRoom {
        /// 26.05 names the reason after it.
        #[cfg_attr(not(slurm_eval_action), allow(dead_code))]
        segment: bool,
    },
    /// Racks fit, but Slurm refused every choice for cores, memory or GRES.
    NoResources,
    /// The request can never fit the racks (refused at submission).
    Never,
    /// The job could start now over more racks than its `--switches` (or `[policy] switches`)
    /// allows: it waits, with Slurm's reason `Resources`, as under topology/tree (cons_tres's
    /// "waiting for switches" is a plain error too; slurm.h has no reason for switches).
    SwitchLimit,
}

impl Failure {
    /// 24.11 to 25.11: never runnable is a topology error, the rest a plain error (the job
    /// waits with reason `Resources`).
    #[cfg(not(slurm_eval_action))]
    pub fn error(self) -> PluginError {
        match self {
            Failure::Never => PluginError::TopoUnavailable,
            Failure::NoRoom { .. } | Failure::NoResources | Failure::SwitchLimit => {
                PluginError::Error
            }
        }
    }

    /// 26.05: the error and the retry-loop directive (`common_topo_choose_nodes` reads
    /// `eval_action` after every failed call, and returns the first failure's code, which
    /// becomes the pending reason when it is a topology error):
    /// - no room: stop retrying (fewer trays cannot help), "No suitable topology unit found";
    /// - no resources: Slurm's default retry, plain error, so the reason stays `Resources`;
    /// - the rack limit: stop retrying (fewer trays cannot take fewer racks), plain error, so
    ///   the reason is `Resources` as with topology/tree;
    /// - never: a permanent error, which Slurm allows only on the first pass (it asserts it in
    ///   its retry loop); later passes just stop.
    #[cfg(slurm_eval_action)]
    pub fn directive(self, first_pass: bool) -> (b::eval_action_t, PluginError) {
        match self {
            Failure::NoRoom { segment: false } => {
                (b::eval_action_t_EVAL_ACTION_BREAK, PluginError::TopoNoFit)
            }
            Failure::NoRoom { segment: true } => (
                b::eval_action_t_EVAL_ACTION_BREAK,
                PluginError::TopoSegmentNoFit,
            ),
            Failure::NoResources => (
                b::eval_action_t_EVAL_ACTION_RETRY_DEFAULT,
                PluginError::Error,
            ),
            Failure::SwitchLimit => (b::eval_action_t_EVAL_ACTION_BREAK, PluginError::Error),
            Failure::Never if !first_pass => {
                (b::eval_action_t_EVAL_ACTION_BREAK, PluginError::Error)
            }
            Failure::Never => (
                b::eval_action_t_EVAL_ACTION_BREAK,
                PluginError::TopoUnavailable,
            ),
        }
    }
}
