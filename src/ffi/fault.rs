//! Test-only fault injection (cargo feature `fault-injection`, never in a release build):
//! proves in the real slurmctld that a panic inside the placement callback leaves slurmctld
//! up, the job pending and Slurm's evaluation state restored.

use super::bindings as b;
use super::slurm;

/// The `--comment` that makes the callback panic.
const PANIC_COMMENT: &str = "nvl72-test-panic";

/// Panics when the job's comment asks for it (called after `node_map` has been narrowed).
///
/// # Safety
/// `job` must be a valid job record (the scheduler holds the job lock).
pub unsafe fn panic_if_asked(job: *const b::job_record_t) {
    // SAFETY: per the function contract; `comment` is NULL or a C string, copied here.
    let comment = unsafe { slurm::owned_str((*job).comment) };
    if comment.as_deref() == Some(PANIC_COMMENT) {
        panic!("fault injection: forced panic for a job with --comment={PANIC_COMMENT}");
    }
}
