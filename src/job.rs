//! `Job<'c>`: a job record Slurm lends for one call, read through safe accessors.
//!
//! Every field the plugin reads of `job_record_t` (and its `details`) is read here, so the
//! layout assumptions about the record sit in one file. One write is offered, the `--switches`
//! clock ([`Job::start_switch_wait`]), which topology/tree makes the same way; the other write
//! the plugin makes (`topo_jobinfo`, 25.11+) lives in `jobinfo`.

use std::marker::PhantomData;
use std::ptr::NonNull;

use super::bindings as b;
use super::call::Call;
use super::slurm::{self, BitmapRef};
use nvl72_engine::placement::JobSwitches;

/// A live job record, borrowed for one call from Slurm (`'c`, see [`Call`]).
#[derive(Clone, Copy)]
pub struct Job<'c> {
    raw: NonNull<b::job_record_t>,
    _call: PhantomData<&'c Call<'c>>,
}

/// The job's `details` (every job Slurm evaluates has them), borrowed like its [`Job`].
#[derive(Clone, Copy)]
pub struct Details<'c> {
    raw: NonNull<b::job_details_t>,
    _call: PhantomData<&'c Call<'c>>,
}

impl<'c> Job<'c> {
    /// # Safety
    /// `raw` must be NULL or a job record that stays live, and is not written by anyone else,
    /// for the whole of `call` (slurmctld holds the job lock); its string fields are NULL or
    /// NUL-terminated and `details` is NULL or a live record.
    pub unsafe fn new(_call: &Call<'c>, raw: *mut b::job_record_t) -> Option<Job<'c>> {
        NonNull::new(raw).map(|raw| Job {
            raw,
            _call: PhantomData,
        })
    }

    /// The record, for the one module that writes it (`jobinfo`) and Slurm calls taking it.
    pub fn as_ptr(self) -> *mut b::job_record_t {
        self.raw.as_ptr()
    }

    fn record(&self) -> &'c b::job_record_t {
        // SAFETY: live and not written by others for `'c` (constructor's contract).
        unsafe { &*self.raw.as_ptr() }
    }

    pub fn id(self) -> u32 {
        self.record().job_id
    }

    /// `--time` in minutes (`INFINITE` or `NO_VAL` without a limit).
    pub fn time_limit(self) -> u32 {
        self.record().time_limit
    }

    pub fn bit_flags(self) -> u64 {
        self.record().bit_flags
    }

    /// `--switches=count@max-time` as slurmctld keeps it (`req_switch`, `wait4switch`) and
    /// the job's clock (`wait4switch_start`); `placement::RackLimit::of_job` reads them.
    /// `best_switch` is left alone: the plugin never offers a set over the limit, so
    /// cons_tres's check of it (true since submission) stays true.
    pub fn switches(self) -> JobSwitches {
        let r = self.record();
        JobSwitches {
            req_switch: r.req_switch,
            wait4switch: r.wait4switch,
            wait4switch_start: r.wait4switch_start,
        }
    }

    /// Starts the job's `--switches` clock at its first evaluation: `wait4switch_start =
    /// now` when it is 0, as topology/tree's `_eval_nodes_topo` does. Nothing in Slurm resets
    /// it (a requeued job keeps its clock) and slurmctld does not save it (a restart starts
    /// it again).
    ///
    /// # Safety
    /// `self` must be the job record of the current evaluation, under slurmctld's job write
    /// lock (`topology_p_eval_nodes`), with no reference to the record alive.
    pub unsafe fn start_switch_wait(self, now: i64) {
        // SAFETY: per the contract the record is live and nobody else reads or writes it
        // during this call; the field is read and written through the raw pointer, without
        // a reference to the whole record.
        unsafe {
            let start = std::ptr::addr_of_mut!((*self.raw.as_ptr()).wait4switch_start);
            if *start == 0 {
                *start = now;
            }
        }
    }

    /// `tres_per_job`, e.g. `gres/gpu:8` (NULL or invalid UTF-8: None).
    pub fn tres_per_job(self) -> Option<&'c str> {
        // SAFETY: NULL or NUL-terminated, live for `'c` (constructor's contract).
        unsafe { slurm::borrowed_str(self.record().tres_per_job) }
    }

    pub fn tres_per_task(self) -> Option<&'c str> {
        // SAFETY: NULL or NUL-terminated, live for `'c` (constructor's contract).
        unsafe { slurm::borrowed_str(self.record().tres_per_task) }
    }

    /// `--network`.
    #[cfg(slurm_jobinfo)]
    pub fn network(self) -> Option<&'c str> {
        // SAFETY: NULL or NUL-terminated, live for `'c` (constructor's contract).
        unsafe { slurm::borrowed_str(self.record().network) }
    }

    /// `--comment`, copied (invalid UTF-8 replaced): a preemption candidate's checkpoint
    /// interval, and the test-only faults.
    pub fn comment(self) -> Option<String> {
        // SAFETY: NULL or NUL-terminated (constructor's contract); copied before returning.
        unsafe { slurm::owned_str(self.record().comment) }
    }

    /// The name of the partition this job is evaluated for (`part_ptr->name`). For a job
    /// submitted to several partitions slurmctld points `part_ptr` at the one it tries before
    /// each selection (`schedule()`, backfill, and submission's never-runnable test), so this
    /// is the partition of this evaluation, not the job's list. None when there is no
    /// partition record, or its magic number is not at this build's offset.
    pub fn partition(self) -> Option<&'c str> {
        // SAFETY: a partition's name is NULL or NUL-terminated, live like the record.
        unsafe { slurm::borrowed_str(self.part()?.name) }
    }

    /// The partition record of this evaluation (see [`Job::partition`]), when its magic
    /// number is at this build's offset.
    fn part(self) -> Option<&'c b::part_record_t> {
        let part = self.record().part_ptr;
        if part.is_null() {
            return None;
        }
        // SAFETY: a job's `part_ptr` is NULL or a record of slurmctld's `part_list`; the
        // scheduler holds the partition read lock with the job lock, so it stays live and
        // unwritten for `'c`. Only the magic number is read before it is trusted.
        let part = unsafe { &*part };
        (part.magic == b::PART_MAGIC).then_some(part)
    }

    /// The nodes of the job's partition (of this evaluation).
    pub fn partition_nodes(self, call: &Call<'c>) -> Option<BitmapRef<'c>> {
        // SAFETY: a partition's node_bitmap is NULL or valid, live like the record.
        unsafe { BitmapRef::new(call, self.part()?.node_bitmap) }
    }

    /// Slurm's preemption tier of the job: its QOS priority under preempt/qos (`qos`), else
    /// its partition's PriorityTier (the high part of the key Slurm sorts candidates by).
    pub fn preemption_tier(self, qos: bool) -> u32 {
        if qos {
            let q = self.record().qos_ptr;
            if q.is_null() {
                return 0;
            }
            // SAFETY: a job's non-NULL `qos_ptr` is a record of the association manager's QOS
            // list, which slurmctld keeps while jobs point at it.
            return unsafe { (*q).priority };
        }
        self.part().map_or(0, |p| u32::from(p.priority_tier))
    }

    pub fn state(self) -> u32 {
        self.record().job_state
    }

    pub fn is_pending(self) -> bool {
        self.state() & b::JOB_STATE_BASE == b::job_states_JOB_PENDING
    }

    pub fn is_running(self) -> bool {
        self.state() & b::JOB_STATE_BASE == b::job_states_JOB_RUNNING
    }

    /// When the job started (seconds since the epoch; 0 before).
    pub fn start_time(self) -> i64 {
        self.record().start_time
    }

    /// The nodes a running job holds.
    pub fn nodes(self, call: &Call<'c>) -> Option<BitmapRef<'c>> {
        // SAFETY: NULL or a valid bitmap of the live record, for `'c` (constructor's contract).
        unsafe { BitmapRef::new(call, self.record().node_bitmap) }
    }

    pub fn details(self) -> Option<Details<'c>> {
        NonNull::new(self.record().details).map(|raw| Details {
            raw,
            _call: PhantomData,
        })
    }

    /// The record and its details carry their magic numbers at this build's offsets
    /// (see `slurm::job_layout_ok`); false once any record did not.
    pub fn layout_ok(self) -> bool {
        // SAFETY: a live job record (constructor's contract).
        unsafe { slurm::job_layout_ok(self.as_ptr()) }
    }
}

impl<'c> Details<'c> {
    fn record(&self) -> &'c b::job_details_t {
        // SAFETY: `details` of a live job record, live for `'c` like it (Job's contract).
        unsafe { &*self.raw.as_ptr() }
    }

    /// `--segment` (0 or NO_VAL16 without one).
    pub fn segment_size(self) -> u16 {
        self.record().segment_size
    }

    /// `--contiguous`: the nodes must be consecutive in slurmctld's node table.
    pub fn contiguous(self) -> bool {
        self.record().contiguous != 0
    }

    /// `-w` nodes.
    pub fn required(self, call: &Call<'c>) -> Option<BitmapRef<'c>> {
        // SAFETY: NULL or a valid bitmap of the live record, for `'c` (Job's contract).
        unsafe { BitmapRef::new(call, self.record().req_node_bitmap) }
    }

    pub fn num_tasks(self) -> u32 {
        self.record().num_tasks
    }

    /// `--ntasks-per-node` (NO_VAL16 when not given).
    pub fn ntasks_per_node(self) -> u16 {
        self.record().ntasks_per_node
    }

    pub fn min_cpus(self) -> u32 {
        self.record().min_cpus
    }
}
