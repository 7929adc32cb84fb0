//! Test-only fault injection (cargo feature `fault-injection`, never in a release build):
//! proves in the real slurmctld that a panic inside the placement callback leaves slurmctld
//! up, the job pending and Slurm's evaluation state restored.

use super::job::Job;

/// The `--comment` that makes the callback panic.
const PANIC_COMMENT: &str = "nvl72-test-panic";

/// Panics when the job's comment asks for it (called after `node_map` has been narrowed).
pub fn panic_if_asked(job: Job<'_>) {
    let comment = job.comment();
    if comment.as_deref() == Some(PANIC_COMMENT) {
        panic!("fault injection: forced panic for a job with --comment={PANIC_COMMENT}");
    }
}
