//! The event engine: [`simulation`] is the discrete-event loop that runs one policy over a
//! job stream, [`scheduler`] its scheduling pass (priority FIFO plus backfill), [`queue`]
//! the pending jobs, [`cluster`] the trays' states, [`failures`] their up/down processes,
//! [`preemption`] which running jobs a higher-tier job preempts, per policy.

pub mod cluster;
pub mod failures;
pub mod preemption;
pub mod queue;
pub mod scheduler;
pub mod simulation;
