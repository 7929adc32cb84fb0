//! Checks that Slurm's records carry their magic numbers where this build expects them.

use super::super::bindings as b;
use super::log_error;
use super::node::{node_count, record};

/// Set once a Slurm record did not carry its magic number where this build expects it.
static LAYOUT_MISMATCH: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// Why rack placement is off, for `scontrol show topology` (and through it `nvl72 status` and
/// `nvl72 check`): one log line is easy to miss.
static PLACEMENT_OFF: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Why rack placement is off in this process, if it is.
pub fn placement_off() -> Option<String> {
    PLACEMENT_OFF.get().cloned()
}

/// Struct layouts can drift between Slurm releases (and a source tree can be mislabelled):
/// Slurm's records start with or carry magic numbers, checked here at the offsets this build
/// was compiled for. On a mismatch one error names the Slurm the plugin was built for, and
/// the callers fall back to Slurm's generic selection instead of reading garbage.
fn layout_mismatch(what: &str) -> bool {
    if !LAYOUT_MISMATCH.swap(true, std::sync::atomic::Ordering::Relaxed) {
        let why = format!(
            "built for Slurm {} but this process's {what} do not match that layout",
            env!("NVL72_SLURM_VERSION")
        );
        log_error(&format!(
            "{why}; rack placement is off and Slurm's generic selection places jobs. Rebuild \
             the plugin against this Slurm's exact release"
        ));
        let _ = PLACEMENT_OFF.set(why);
    }
    false
}

/// Test-only (`fault-injection`): what a real mismatch does, for the e2e test that it is
/// visible.
#[cfg(feature = "fault-injection")]
pub fn force_layout_mismatch(what: &str) {
    layout_mismatch(what);
}

/// The job record and its details (every job Slurm evaluates has them) carry their magic
/// numbers.
///
/// # Safety
/// `job` must be NULL or a live job record (job lock held).
pub unsafe fn job_layout_ok(job: *const b::job_record_t) -> bool {
    if LAYOUT_MISMATCH.load(std::sync::atomic::Ordering::Relaxed) {
        return false;
    }
    if job.is_null() {
        return false;
    }
    // SAFETY: per the contract; the magic fields lie inside the records at this build's
    // offsets, which are within the records of any release whose sizes are at least ours.
    // `details` is read at our offset: after a drift it may be another field, so it is only
    // followed when it is a plausible pointer (aligned, not NULL or in the zero page); a
    // string field found there instead points to readable memory too.
    let ok = unsafe {
        let details = (*job).details;
        (*job).magic == b::JOB_MAGIC
            && details as usize % std::mem::align_of::<b::job_details_t>() == 0
            && details as usize >= 4096
            && (*details).magic == b::DETAILS_MAGIC
    };
    ok || layout_mismatch("job records")
}

/// Every node record carries NODE_MAGIC and its own index.
pub fn node_table_layout_ok() -> bool {
    let ok = (0..node_count()).all(|i| {
        // SAFETY: `record` returns live node records.
        record(i).map_or(true, |rec| unsafe {
            (*rec).magic == b::NODE_MAGIC && i64::from((*rec).index) == i as i64
        })
    });
    ok || layout_mismatch("node records")
}
