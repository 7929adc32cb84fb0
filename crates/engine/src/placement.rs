//! The placement engine: which trays a job gets so that it (or each of its segments) stays
//! inside one rack (one NVLink domain) while the fewest GPUs are left stranded.
//!
//! The engine only chooses *which nodes may be used*. The plugin then hands that set to Slurm's
//! own selection code, which charges cores and GRES exactly as for any other topology plugin.
//! For that reason [`plan`] returns ranked alternatives: if Slurm cannot fit the job's cores or
//! GPUs on the first set, the plugin tries the next.
//!
//! One question per file: `request` (what is asked), `validate` (can it ever fit), `reject`
//! (why not), `room` (a rack's room for the job, the shared tie-break, which trays it gets),
//! `one_rack`, `multi_rack` (+ the `fewest_racks` search, and `balanced` pieces), `segments`,
//! `rack_order` (the best-fit order of racks every such rule reads, off the free index or
//! sorted rooms), `rack_limit` (a job's `--switches`), `clearing` (the cheapest rack to clear by
//! preemption), `piece` (a rack's share and a node set), and `plan`
//! (the ranked answer).
#![forbid(unsafe_code)]

mod balanced;
mod clearing;
mod fewest_racks;
mod multi_rack;
mod one_rack;
mod piece;
mod plan;
mod preemption_plan;
mod rack_limit;
mod rack_order;
#[doc(hidden)]
#[cfg(any(test, feature = "testkit"))]
pub mod reference;
mod reject;
mod request;
mod room;
mod segments;
#[cfg(test)]
mod tests;
mod validate;

pub use crate::demand::Demand;
pub use clearing::{
    best_fit_rack, cheapest_rack, cheapest_racks, slurm_victims, Blocker, Clearing, ClearingCost,
    Pieces, RackSetClearing,
};
pub use piece::{Piece, Placement};
pub use plan::{placements, plan, Plan};
pub use preemption_plan::{
    checkpoint_interval, pieces_of, preemption_plan, slurm_order_choice, Candidate, PreemptionPlan,
};
pub use reject::{NeverReason, Reject, WaitReason};
pub use request::{JobRequest, JobSwitches, RackLimit, SLURM_INFINITE, SLURM_NO_VAL};
pub use validate::validate;
