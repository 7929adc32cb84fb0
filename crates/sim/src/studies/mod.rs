//! Studies: questions the simulator answers by running many simulations, each with its own
//! command.
//!
//! | Module | One concept |
//! |---|---|
//! | [`calibration`] | The simulator's measured error against real slurmctld replays (`nvl72 calibrate`; the bands shipped beside it) |
//! | [`breakeven`] | The uniform slowdown at which nvl72 meets another policy on usable GPUs (`nvl72 breakeven`) |
//! | [`recommend`] | The `[policy]` setting with the most goodput on a workload (`simulate --recommend`) |
//! | [`analytic`] | The segment-size capacity formula and its check (`nvl72 analytic`) |
//! | [`bench`](mod@bench) | Decision-latency scenarios (`nvl72 bench`, the criterion benchmark) |

pub mod analytic;
pub mod bench;
pub mod breakeven;
pub mod calibration;
pub mod recommend;
