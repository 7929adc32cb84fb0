//! What is measured: [`metrics`] is the recorder a run fills as it goes (and the definition
//! of every figure), [`policy_report`] the per-policy report it fills (the schema the
//! reports, the verdict and calibration read), [`preemption`] what preemption cost a run.

pub mod metrics;
pub mod policy_report;
pub mod preemption;
