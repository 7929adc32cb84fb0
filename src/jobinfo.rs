//! Per-job topology data (25.11+, `job_ptr->topo_jobinfo`): the job's NVLink-domain pieces.
//!
//! With `SwitchType=switch/nvidia_imex` and `--network=unique-channel-per-segment`, Slurm gives
//! each entry of the list that `jobinfo_get(TOPO_JOBINFO_SEGMENT_LIST)` returns its own IMEX
//! channel (`switch_nvidia_imex.c`, `switch_p_job_start`), and finds a node's channel by
//! expanding the entries: every node of the job is in exactly one entry. topology/block fills
//! the list only for `--segment` jobs; here every NVLink domain of the job is one entry
//! (`allocation::nvlink_pieces`): each segment, or each rack's part of a job across racks.
//!
//! The data is a `Box<JobInfo>`; slurmctld packs it into its job state (`jobinfo_pack`), in
//! the versioned format of `saved_pieces`, which every later build must read.

use std::ffi::c_void;

use super::bindings as b;
use super::call::Call;
use super::error::PluginError;
use super::job::Job;
use super::slurm;
use nvl72_engine::saved_pieces;

/// `xstrstr(job_ptr->network, ...)` in the IMEX plugin: only such jobs get the list.
pub const PER_DOMAIN_CHANNELS: &str = "unique-channel-per-segment";

/// One job's pieces, as host lists, and the Slurm list handed to the IMEX plugin.
pub struct JobInfo {
    pieces: Vec<String>,
    /// `list_t` of xstrdup'd strings (destroyed with its entries in Drop).
    list: *mut b::list_t,
}

impl JobInfo {
    pub fn new(pieces: Vec<String>) -> JobInfo {
        // SAFETY: list_create with Slurm's xfree_ptr destructor for xstrdup'd entries; it aborts
        // on OOM and never returns NULL. Each appended string is owned by the list afterwards.
        let list = unsafe { b::slurm_list_create(Some(b::slurm_xfree_ptr)) };
        for p in &pieces {
            // SAFETY: `list` is the valid list created above.
            unsafe { b::slurm_list_append(list, slurm::xstrdup(p).cast()) };
        }
        JobInfo { pieces, list }
    }
}

impl Drop for JobInfo {
    fn drop(&mut self) {
        // SAFETY: created by list_create in `new`, destroyed exactly once.
        unsafe { b::slurm_list_destroy(self.list) };
    }
}

/// Sets `job_ptr->topo_jobinfo` to the job's pieces. The interface frees any earlier value
/// before each evaluation; should one of ours still be there, its data is replaced.
///
/// # Safety
/// `job` must be the job record of the current evaluation (job write lock held).
pub unsafe fn attach(job: Job<'_>, pieces: Vec<String>) {
    let job = job.as_ptr();
    let data: *mut c_void = Box::into_raw(Box::new(JobInfo::new(pieces))).cast();
    // SAFETY: per the contract; the container comes from Slurm's allocator, which frees it
    // with topology_g_jobinfo_free (calling our `free` for `data`, found by plugin_id).
    unsafe {
        let old = (*job).topo_jobinfo;
        if !old.is_null() && (*old).plugin_id == super::plugin_id::plugin_id {
            free_data((*old).data);
            (*old).data = data;
            return;
        }
        if !old.is_null() {
            log::warn!("replacing another plugin's topology data of a job");
        }
        let container = slurm::xmalloc::<b::dynamic_plugin_data_t>();
        (*container).data = data;
        (*container).plugin_id = super::plugin_id::plugin_id;
        (*job).topo_jobinfo = container;
    }
}

/// Does the job ask for one IMEX channel per NVLink domain?
pub fn wants_pieces(job: Job<'_>) -> bool {
    job.network()
        .is_some_and(|n| n.contains(PER_DOMAIN_CHANNELS))
}

/// # Safety
/// `data` must be NULL or a `JobInfo` this module boxed, not yet freed.
unsafe fn free_data(data: *mut c_void) {
    if !data.is_null() {
        // SAFETY: per the contract.
        drop(unsafe { Box::from_raw(data.cast::<JobInfo>()) });
    }
}

/// # Safety
/// As [`free_data`].
pub unsafe fn free(_: &Call, jobinfo: *mut c_void) {
    // SAFETY: per the function contract.
    unsafe { free_data(jobinfo) }
}

/// # Safety
/// `jobinfo` NULL or ours; `buffer` a valid `buf_t`.
pub unsafe fn pack(_: &Call, jobinfo: *mut c_void, buffer: *mut b::buf_t, _proto: u16) {
    if buffer.is_null() {
        return;
    }
    // SAFETY: per the function contract (borrowed for the call).
    let pieces: &[String] = match unsafe { jobinfo.cast::<JobInfo>().as_ref() } {
        Some(info) => &info.pieces,
        None => &[],
    };
    let mut saved = saved_pieces::encode(pieces);
    // SAFETY: buffer is valid; pack32 and packmem copy into it (`Saved::to_bytes`' layout).
    unsafe {
        b::slurm_pack32(saved.format_word, buffer);
        let len = saved.text.len() as u32;
        b::slurm_packmem(saved.text.as_mut_ptr().cast(), len, buffer);
    }
}

/// Reads the pieces Slurm framed for us. Pieces that cannot be read (another format, damage)
/// are refused with one log line and the job gets no data, so it keeps its nodes with Slurm's
/// default of one IMEX channel: the bytes are skipped by the frame's length, so the rest of
/// the job record still reads (an error here would make slurmctld refuse its whole state).
///
/// # Safety
/// `out` a writable out-pointer, `buffer` a valid `buf_t`.
pub unsafe fn unpack(
    _: &Call,
    out: *mut *mut c_void,
    buffer: *mut b::buf_t,
    _proto: u16,
) -> Result<(), PluginError> {
    if out.is_null() || buffer.is_null() {
        return Err(PluginError::Error);
    }
    // Reported once, when slurmctld reads the job (not when the plugin reads ahead of it).
    let report = !super::saved_jobs::reading();
    // SAFETY: per the function contract.
    let Some(bytes) = (unsafe { take_framed(&mut *buffer) }) else {
        if report {
            log::error!("job state: saved NVLink pieces are not in Slurm's frame; not read");
        }
        return Err(PluginError::Error);
    };
    let data = match saved_pieces::decode(&bytes) {
        Ok(pieces) => Box::into_raw(Box::new(JobInfo::new(pieces))).cast(),
        Err(why) => {
            if report {
                log::error!(
                    "job state: saved NVLink pieces of a job refused ({why}); the job keeps \
                     its nodes, with one IMEX channel for the whole job"
                );
            }
            slurm::null()
        }
    };
    // SAFETY: Slurm's out-pointer for the plugin data (NULL: no data, as for a job without).
    unsafe { *out = data };
    Ok(())
}

/// Our bytes, whose length `dynamic_plugin_data_unpack` packed before our plugin id (the
/// 8 bytes before the read offset); the offset moves past them. None when those 8 bytes are
/// not such a frame.
///
/// # Safety
/// `buffer` a valid `buf_t`: `head` holds `size` bytes, `processed <= size`.
unsafe fn take_framed(buffer: &mut b::buf_t) -> Option<Vec<u8>> {
    let (at, size) = (buffer.processed as usize, buffer.size as usize);
    if buffer.head.is_null() || at < 8 || at > size {
        return None;
    }
    // SAFETY: `head` holds `size` bytes (the contract) and `at <= size`.
    let all = unsafe { std::slice::from_raw_parts(buffer.head.cast::<u8>(), size) };
    let word = |i: usize| u32::from_be_bytes([all[i], all[i + 1], all[i + 2], all[i + 3]]);
    let (framed, id) = (word(at - 8) as usize, word(at - 4));
    if id != super::plugin_id::plugin_id || framed < 4 || framed - 4 > size - at {
        return None;
    }
    let ours = all[at..at + framed - 4].to_vec();
    buffer.processed += (framed - 4) as u32;
    Some(ours)
}

/// `TOPO_JOBINFO_SEGMENT_LIST`: `*(list_t **)data`, borrowed (the caller does not free it).
///
/// # Safety
/// `jobinfo` NULL or ours; `data` a writable `list_t **` for that type.
pub unsafe fn get(
    _: &Call,
    kind: u32,
    jobinfo: *mut c_void,
    data: *mut c_void,
) -> Result<(), PluginError> {
    const SEGMENT_LIST: u32 = b::topology_jobinfo_type_t_TOPO_JOBINFO_SEGMENT_LIST;
    if kind != SEGMENT_LIST || jobinfo.is_null() || data.is_null() {
        return Err(PluginError::Error);
    }
    // SAFETY: per the function contract.
    unsafe { *data.cast::<*mut b::list_t>() = (*jobinfo.cast::<JobInfo>()).list };
    Ok(())
}
