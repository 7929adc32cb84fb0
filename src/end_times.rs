//! When each tray's running jobs are expected to end, for `[policy] end_time`.
//!
//! slurmctld keeps no end time per node, so the job list is walked: each running job's
//! `end_time` (start plus time limit, which Slurm keeps up to date) marks its nodes. The walk
//! happens only when the job table changed since the last one (slurmctld's own stamp,
//! `last_job_update`), not on every evaluation. `job_list` and `last_job_update` exist only in
//! slurmctld, so they are looked up by name at run time (a direct reference would be a
//! load-time binding that slurmd and the client commands cannot satisfy).

use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

use parking_lot::Mutex;

use super::bindings as b;
use super::call::Call;
use super::guard::callback;
use super::job::Job;
use super::slurm::{self, BitmapRef};

/// The last walk: the job table's stamp then, when the walk ran, and every node's latest
/// expected end.
struct Walk {
    stamp: libc::time_t,
    walked_at: u32,
    until: Vec<u32>,
}

static LAST: Mutex<Option<Walk>> = Mutex::new(None);
static JOB_LIST: OnceLock<usize> = OnceLock::new();
static LAST_JOB_UPDATE: OnceLock<usize> = OnceLock::new();

/// The address of slurmctld's global (or function) `name`, or 0 outside slurmctld.
pub fn global(cell: &OnceLock<usize>, name: &CStr) -> usize {
    *cell.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT only looks a symbol up.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
    })
}

/// The current time on the clock of [`busy_until`] (seconds since the epoch).
pub fn now() -> u32 {
    // SAFETY: time(NULL) only reads the clock.
    let t = unsafe { libc::time(std::ptr::null_mut()) };
    u32::try_from(t.max(0)).unwrap_or(u32::MAX)
}

/// slurmctld's job table (`job_list`) and the time it last changed (`last_job_update`), or
/// None outside slurmctld. `_locked`: the job lock is held (see [`busy_until`]).
pub fn job_table(_locked: Job<'_>) -> Option<(*mut b::list_t, libc::time_t)> {
    // slurmstepd defines a `job_list` of its own; only slurmctld's is the job table.
    if !slurm::running_in_slurmctld() {
        return None;
    }
    let list = global(&JOB_LIST, c"job_list") as *const *mut b::list_t;
    let stamp = global(&LAST_JOB_UPDATE, c"last_job_update") as *const libc::time_t;
    if list.is_null() || stamp.is_null() {
        return None;
    }
    // SAFETY: non-NULL dlsym results are the addresses of slurmctld's `list_t *job_list` and
    // `time_t last_job_update`; the job lock (`_locked`) excludes writers.
    let (list, stamp) = unsafe { (*list, *stamp) };
    (!list.is_null()).then_some((list, stamp))
}

/// Every node's latest expected job end (0: no running job), or None outside slurmctld.
///
/// `_locked` is the proof that the job lock is held (a [`Job`] handle exists only under it,
/// as during eval), so that no job record changes while the list is walked.
pub fn busy_until(_locked: Job<'_>) -> Option<Vec<u32>> {
    let (list, stamp) = job_table(_locked)?;
    let nodes = slurm::node_count();
    let now = now();
    let mut last = LAST.lock();
    // `last_job_update` has one-second resolution: a walk is reused only if it ran after the
    // second of the last update, so jobs started later in that same second are not missed.
    let fresh =
        |w: &&Walk| w.stamp == stamp && i64::from(w.walked_at) > stamp && w.until.len() == nodes;
    if let Some(walk) = last.as_ref().filter(fresh) {
        return Some(walk.until.clone());
    }
    let mut until = vec![0u32; nodes];
    // SAFETY: job_list holds job_record_t pointers; `mark` only reads them and writes `until`,
    // which outlives the call.
    unsafe {
        b::slurm_list_for_each_ro(
            list,
            Some(mark),
            std::ptr::addr_of_mut!(until).cast::<c_void>(),
        );
    }
    *last = Some(Walk {
        stamp,
        walked_at: now,
        until: until.clone(),
    });
    Some(until)
}

callback! {
    /// `list_for_each_ro` over `job_list`: a running job's end time onto its nodes.
    fn mark(job: *mut c_void, arg: *mut c_void) -> c_int = mark_job, on_panic 0;
}

/// # Safety
/// `job` must be a `job_record_t` of job_list, `arg` the `Vec<u32>` of [`busy_until`].
unsafe fn mark_job(call: &Call, job: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: per the function contract.
    let (job, until) = unsafe {
        (
            &*job.cast::<b::job_record_t>(),
            &mut *arg.cast::<Vec<u32>>(),
        )
    };
    if job.job_state & b::JOB_STATE_BASE != b::job_states_JOB_RUNNING {
        return 0;
    }
    let end = u32::try_from(job.end_time.max(0)).unwrap_or(u32::MAX);
    // SAFETY: a running job's node_bitmap is NULL or a valid bitmap.
    if let Some(nodes) = unsafe { BitmapRef::new(call, job.node_bitmap) } {
        for n in nodes.ones() {
            if let Some(u) = until.get_mut(n) {
                *u = (*u).max(end);
            }
        }
    }
    0
}

/// When a job starting now would be expected to end (now plus its time limit), or None for
/// a job without a limit.
///
pub fn ends_at(job: Job<'_>, now: u32) -> Option<u32> {
    let limit = job.time_limit();
    (limit != b::INFINITE && limit != b::NO_VAL)
        .then(|| now.saturating_add(limit.saturating_mul(60)))
}
