//! Test-only fault injection (cargo feature `fault-injection`, never in a release build):
//! proves in the real slurmctld that a panic inside the placement callback leaves slurmctld
//! up, the job pending and Slurm's evaluation state restored, and that a record layout
//! mismatch is visible beyond its one log line.

use super::job::Job;

/// The `--comment` that makes the callback panic.
const PANIC_COMMENT: &str = "nvl72-test-panic";

/// The `--comment` that makes the plugin act as if the job record's layout did not match.
const LAYOUT_COMMENT: &str = "nvl72-test-layout";

/// Switches rack placement off as a real layout mismatch does, when the comment asks for it.
pub fn layout_mismatch_if_asked(job: Job<'_>) {
    if job.comment().as_deref() == Some(LAYOUT_COMMENT) {
        super::slurm::force_layout_mismatch("job records (fault injection)");
    }
}

/// Panics when the job's comment asks for it (called after `node_map` has been narrowed).
pub fn panic_if_asked(job: Job<'_>) {
    let comment = job.comment();
    if comment.as_deref() == Some(PANIC_COMMENT) {
        panic!("fault injection: forced panic for a job with --comment={PANIC_COMMENT}");
    }
}
