//! The jobs slurmctld is about to recover, read from its own job state file before it does.
//!
//! `topology_p_build_config` runs before slurmctld loads its jobs (read_config.c: the node
//! state, then the topology, then `load_all_job_state`), so the plugin cannot ask the job
//! table which trays running jobs hold. It reads the same file slurmctld reads next
//! (`StateSaveLocation/job_state`, else `job_state.old`, as slurmctld falls back) with Slurm's
//! own record reader (`job_record_unpack`, exported by libslurmfull in every series), and
//! keeps each held job's id and node list. Any doubt (no file, another header, a record that
//! does not unpack) is an `Err` the caller logs; it never stops slurmctld.

use std::ffi::{c_int, CStr};
use std::sync::OnceLock;

use super::bindings as b;
use super::slurm;
use nvl72_engine::held_trays::HeldJob;

/// The header string of slurmctld's job state file (job_mgr.c `JOB_STATE_VERSION`).
const JOB_STATE_VERSION: &str = "PROTOCOL_VERSION";
/// pack.c refuses buffers larger than this (`MAX_BUF_SIZE`) with `fatal_abort`.
const MAX_BUF_SIZE: usize = 0xffff_0000;

thread_local! {
    /// Set while this module reads the job state: our own job data reader (`jobinfo`) then
    /// stays quiet, so that a damaged record is reported once, when slurmctld reads it.
    static READING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is reading the job state ahead of slurmctld ([`held_jobs`]). Only
/// the job data reader of 25.11 and later asks.
#[cfg(slurm_jobinfo)]
pub fn reading() -> bool {
    READING.with(std::cell::Cell::get)
}

/// The jobs in slurmctld's saved job state that hold trays (running, suspended, or
/// completing), or `Ok(None)` when there is no saved job state (a clean start).
pub fn held_jobs() -> Result<Option<Vec<HeldJob>>, String> {
    let Some(dir) = slurm::state_save_location() else {
        return Ok(None);
    };
    let Some(path) = ["job_state", "job_state.old"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
    else {
        return Ok(None);
    };
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (protocol, offset) = header(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let tres_cnt = tres_count().ok_or("slurmctld's TRES count is not available here")?;
    READING.with(|r| r.set(true));
    // SAFETY: `bytes` outlives the call; `unpack_all` only reads it through a Slurm buffer
    // it owns, and the job records it unpacks are freed before it returns.
    let read = unsafe { unpack_all(&bytes, offset, protocol, tres_cnt) };
    READING.with(|r| r.set(false));
    read.map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The protocol version and where the records start: `packstr(JOB_STATE_VERSION)`,
/// `pack16(protocol)`, `pack_time(now)`, `pack32(next job id)`, `pack_time(last backfill)`,
/// all big-endian (job_mgr.c `_dump_job_state` header, the same in 24.11, 26.05 and 26.11;
/// 26.11's `job_record_unpack` reads protocols 25.05 to 26.11 and refuses older state).
fn header(bytes: &[u8]) -> Result<(u16, usize), String> {
    let take = |at: usize, n: usize| {
        bytes
            .get(at..at + n)
            .ok_or_else(|| "job state header is cut short".to_string())
    };
    let len = u32::from_be_bytes(take(0, 4)?.try_into().unwrap()) as usize;
    let version = take(4, len)?;
    let version = version.strip_suffix(&[0]).unwrap_or(version);
    if version != JOB_STATE_VERSION.as_bytes() {
        return Err(format!(
            "job state header {:?} is not {JOB_STATE_VERSION:?}",
            String::from_utf8_lossy(version)
        ));
    }
    let protocol = u16::from_be_bytes(take(4 + len, 2)?.try_into().unwrap());
    let offset = 4 + len + 2 + 8 + 4 + 8;
    take(offset, 0)?;
    Ok((protocol, offset))
}

/// `slurmctld_tres_cnt`, which `job_record_unpack` needs to size TRES arrays. It exists only
/// in slurmctld, so it is looked up by name (a direct reference would not load elsewhere).
fn tres_count() -> Option<c_int> {
    static ADDR: OnceLock<usize> = OnceLock::new();
    let addr = *ADDR.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT only looks a symbol up.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"slurmctld_tres_cnt".as_ptr()) as usize }
    });
    // SAFETY: a non-zero address is slurmctld's `int slurmctld_tres_cnt`, set before the
    // configuration is read and not written while build_config runs.
    (addr != 0).then(|| unsafe { *(addr as *const c_int) })
}

/// Unpacks every record after `offset` and keeps those holding trays.
///
/// # Safety
/// Only in slurmctld, while it reads its configuration (Slurm's plugins that the record
/// reader calls, for GRES, select and switch data, are initialised by then).
unsafe fn unpack_all(
    bytes: &[u8],
    offset: usize,
    protocol: u16,
    tres_cnt: c_int,
) -> Result<Vec<HeldJob>, String> {
    if bytes.len() > MAX_BUF_SIZE {
        return Err("the job state file is larger than a Slurm buffer".into());
    }
    // SAFETY: init_buf returns a buffer of exactly `size` writable bytes (never NULL: it
    // aborts on allocation failure, and the size was checked above).
    let buf = unsafe { b::slurm_init_buf(bytes.len() as u32) };
    // SAFETY: `head` holds `bytes.len()` bytes; the source is a different allocation.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), (*buf).head.cast(), bytes.len());
        (*buf).processed = offset as u32;
    }
    let mut held = Vec::new();
    let mut result = Ok(());
    loop {
        // SAFETY: `buf` is the buffer filled above; job_record_unpack advances `processed`.
        if unsafe { (*buf).processed >= (*buf).size } {
            break;
        }
        let mut job: *mut b::job_record_t = std::ptr::null_mut();
        // SAFETY: job_record_unpack allocates the record into `job` (or frees it and sets
        // NULL on failure); `buf` is a valid Slurm buffer.
        let rc = unsafe { b::job_record_unpack(&mut job, tres_cnt, buf, protocol) };
        if rc != b::SLURM_SUCCESS as c_int || job.is_null() {
            result = Err(format!(
                "a job record at byte {} does not unpack",
                // SAFETY: as above.
                unsafe { (*buf).processed }
            ));
            break;
        }
        // SAFETY: `job` is the record just unpacked; its `nodes` is NULL or a C string.
        let (id, state, nodes) = unsafe { ((*job).job_id, (*job).job_state, (*job).nodes) };
        let holds = matches!(
            state & b::JOB_STATE_BASE,
            b::job_states_JOB_RUNNING | b::job_states_JOB_SUSPENDED
        ) || state & b::nvl72_job_flag_NVL72_JOB_COMPLETING != 0;
        if holds && !nodes.is_null() {
            // SAFETY: non-NULL `nodes` is an xstrdup'd C string owned by the record.
            let nodes = unsafe { CStr::from_ptr(nodes) }.to_string_lossy();
            if let Ok(trays) = nvl72_engine::hostlist::expand(&nodes) {
                held.push(HeldJob { id, trays });
            }
        }
        // job_record_delete queues a finished job's id on slurmctld's purge_files_list
        // (common/job_record.c, `_delete_job_details`), whose thread then removes that job's
        // batch directory: for a finished array meta record with a requeued task still
        // pending, the script the task needs (slurmctld dies with "Unable to load job batch
        // script" when it starts the task). This copy is the plugin's own, so it is freed
        // as a pending record, which queues nothing.
        // SAFETY: the record came from job_record_unpack and is referenced nowhere else;
        // job_state is a plain field of it.
        unsafe {
            (*job).job_state = b::job_states_JOB_PENDING;
            b::job_record_delete(job.cast());
        }
    }
    // SAFETY: `buf` came from init_buf and is freed once.
    unsafe { b::slurm_free_buf(buf) };
    result.map(|()| held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_bytes(version: &str, protocol: u16) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend((version.len() as u32 + 1).to_be_bytes());
        v.extend(version.as_bytes());
        v.push(0);
        v.extend(protocol.to_be_bytes());
        v.extend([0u8; 8 + 4 + 8]);
        v
    }

    #[test]
    fn the_header_gives_the_protocol_and_where_records_start() {
        let bytes = header_bytes(JOB_STATE_VERSION, 0x2b00);
        assert_eq!(header(&bytes), Ok((0x2b00, bytes.len())));
    }

    #[test]
    fn another_header_or_a_short_file_is_an_error() {
        assert!(header(&header_bytes("VER014", 1)).is_err());
        assert!(header(&header_bytes(JOB_STATE_VERSION, 1)[..10]).is_err());
        assert!(header(&[]).is_err());
    }
}
