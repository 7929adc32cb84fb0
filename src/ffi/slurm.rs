//! Thin, safe wrappers over the Slurm calls the plugin makes.
//!
//! Soundness rests on two facts that hold in every process that loads the plugin: the node
//! table (`node_record_table_ptr`, `node_record_count`) is only rebuilt while no plugin entry
//! point runs (slurmctld holds its config write lock, slurmd is single-threaded at that point),
//! and every `bitstr_t` handed to us is a valid Slurm bitmap of at least `bit_size` bits.

use std::ffi::{c_char, c_int, CStr, CString};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::OnceLock;

use super::bindings as b;
use super::guard::Call;

/// An owned Slurm bitmap (`bit_alloc`), freed with `bit_free`.
pub struct Bitmap(*mut b::bitstr_t);

// SAFETY: the bitmap is exclusively owned; after construction the plugin only reads it, and
// Slurm's bit_* readers do not mutate shared state.
unsafe impl Send for Bitmap {}
unsafe impl Sync for Bitmap {}

impl Bitmap {
    /// # Safety
    /// `raw` must be a valid Slurm bitmap.
    pub unsafe fn copy_of(raw: *mut b::bitstr_t) -> Bitmap {
        // SAFETY: bit_copy duplicates a valid bitmap (it aborts on OOM, never returns NULL).
        Bitmap(unsafe { b::slurm_bit_copy(raw) })
    }

    pub fn with_bits(size: usize, bits: impl IntoIterator<Item = usize>) -> Bitmap {
        // SAFETY: bit_alloc returns a zeroed bitmap of `size` bits (it aborts on OOM).
        let raw = unsafe { b::slurm_bit_alloc(size as b::bitoff_t) };
        let map = Bitmap(raw);
        for i in bits.into_iter().filter(|&i| i < size) {
            // SAFETY: i < size, the allocated length.
            unsafe { b::slurm_bit_set(raw, i as b::bitoff_t) };
        }
        map
    }

    pub fn as_ptr(&self) -> *mut b::bitstr_t {
        self.0
    }

    pub fn len(&self) -> usize {
        // SAFETY: an owned, valid bitmap.
        unsafe { b::slurm_bit_size(self.0) as usize }
    }
}

impl Drop for Bitmap {
    fn drop(&mut self) {
        // SAFETY: self.0 came from bit_alloc and is freed exactly once.
        unsafe { b::slurm_bit_free(&mut self.0) };
    }
}

/// A Slurm bitmap we do not own, borrowed for one call from Slurm (`'c`, see [`Call`]).
#[derive(Clone, Copy)]
pub struct BitmapRef<'c> {
    raw: NonNull<b::bitstr_t>,
    _call: PhantomData<&'c Call<'c>>,
}

impl<'c> BitmapRef<'c> {
    /// # Safety
    /// `raw` must be NULL or a valid Slurm bitmap for the whole of `call`. The writing
    /// methods (`set`, `clear_all`, `or`) may only be used when the caller may write it and
    /// nothing else accesses it meanwhile (slurmctld's locks, for `node_map`).
    pub unsafe fn new(_call: &Call<'c>, raw: *mut b::bitstr_t) -> Option<BitmapRef<'c>> {
        NonNull::new(raw).map(|raw| BitmapRef {
            raw,
            _call: PhantomData,
        })
    }

    pub fn as_ptr(self) -> *mut b::bitstr_t {
        self.raw.as_ptr()
    }

    pub fn len(self) -> usize {
        // SAFETY: valid bitmap per the constructor's contract.
        unsafe { b::slurm_bit_size(self.as_ptr()) as usize }
    }

    /// Tests bits, with the size read once, for loops over many nodes.
    pub fn tester(self) -> impl Fn(usize) -> bool + 'c {
        let len = self.len();
        // SAFETY: bounds checked against bit_size, read once (the bitmap is not resized while
        // the caller holds it, per the constructor's contract).
        move |i| i < len && unsafe { b::slurm_bit_test(self.as_ptr(), i as b::bitoff_t) != 0 }
    }

    pub fn ones(self) -> Vec<usize> {
        let mut out = Vec::new();
        let mut i: std::ffi::c_int = 0;
        // SAFETY: next_node_bitmap scans the valid bitmap from index i (updated in place) and
        // returns NULL at the end; it only reads the bitmap and the node table.
        while !unsafe { b::next_node_bitmap(self.as_ptr(), &mut i) }.is_null() {
            out.push(i as usize);
            i += 1;
        }
        out
    }

    pub fn set(self, i: usize) {
        if i < self.len() {
            // SAFETY: bounds checked.
            unsafe { b::slurm_bit_set(self.as_ptr(), i as b::bitoff_t) };
        }
    }

    pub fn clear_all(self) {
        // SAFETY: valid bitmap.
        unsafe { b::slurm_bit_clear_all(self.as_ptr()) };
    }

    /// Copies every bit of `from`, which must have the same size (else nothing changes).
    pub fn copy_from(self, from: &Bitmap) {
        if self.len() != from.len() {
            log::warn!("node bitmap sizes differ; bitmap left unchanged");
            return;
        }
        // SAFETY: both valid and of the same size.
        unsafe { b::slurm_bit_copybits(self.as_ptr(), from.as_ptr()) };
    }

    /// A copy owned by the plugin (freed on drop).
    pub fn to_owned(self) -> Bitmap {
        // SAFETY: a valid bitmap per the constructor's contract.
        unsafe { Bitmap::copy_of(self.as_ptr()) }
    }

    /// ORs `other` in. Slurm's bit_or works over the smaller of the two sizes.
    pub fn or(self, other: &Bitmap) {
        if self.len() != other.len() {
            log::warn!("node bitmap sizes differ (node table changed since build_config)");
        }
        // SAFETY: both are valid Slurm bitmaps; bit_or never writes past the smaller size.
        unsafe { b::slurm_bit_or(self.as_ptr(), other.as_ptr()) };
    }

    /// False when the sizes differ: bit_overlap_any reads the second bitmap for the first
    /// one's size (its size check is compiled out with NDEBUG).
    pub fn overlaps(self, other: &Bitmap) -> bool {
        if self.len() != other.len() {
            log::warn!("node bitmap sizes differ (node table changed since build_config)");
            return false;
        }
        // SAFETY: both are valid Slurm bitmaps of the same size; bit_overlap_any only reads.
        unsafe { b::slurm_bit_overlap_any(self.as_ptr(), other.as_ptr()) != 0 }
    }
}

/// A node's index and name.
pub struct NodeInfo {
    pub index: usize,
    pub name: String,
}

pub fn node_count() -> usize {
    // SAFETY: plain read of an int that only changes while no plugin call runs (module docs).
    unsafe { b::node_record_count.max(0) as usize }
}

/// The node record at `index`, or None for an index out of range or a hole in the table
/// (dynamic or future nodes).
fn record(index: usize) -> Option<*mut b::node_record_t> {
    if index >= node_count() {
        return None;
    }
    // SAFETY: index < node_record_count, so the slot of a non-NULL table is readable.
    unsafe {
        let table = b::node_record_table_ptr;
        if table.is_null() {
            return None;
        }
        let rec = *table.add(index);
        (!rec.is_null()).then_some(rec)
    }
}

/// The node at `index` with its name.
pub fn node(index: usize) -> Option<NodeInfo> {
    let rec = record(index)?;
    // SAFETY: `record` returns live node records; `name` is NULL or NUL-terminated.
    unsafe {
        let name = (*rec).name;
        (!name.is_null()).then(|| NodeInfo {
            index,
            name: CStr::from_ptr(name).to_string_lossy().into_owned(),
        })
    }
}

/// The state word of the node at `index` without copying its name (hot path of eval).
pub fn node_state(index: usize) -> Option<u32> {
    // SAFETY: `record` returns live node records.
    record(index).map(|rec| unsafe { (*rec).node_state })
}

/// The node's scheduling weight as Slurm's selection orders nodes by it (`sched_weight`:
/// the node's `Weight`, plus the penalties for powered-down, rebooting and completing nodes
/// that slurmctld adds), without its lowest byte: cons_tres writes a per-job GPU locality
/// hint there, which is not a weight an admin set.
pub fn node_sched_weight(index: usize) -> Option<u64> {
    // SAFETY: `record` returns live node records.
    record(index).map(|rec| unsafe { (*rec).sched_weight } & !0xff)
}

/// CPUs a job may use on the node at `index` (`cpus_efctv`: configured minus specialized).
pub fn node_cpus(index: usize) -> Option<u16> {
    // SAFETY: `record` returns live node records.
    record(index).map(|rec| unsafe { (*rec).cpus_efctv })
}

/// A node record's name, borrowed for the call.
///
/// # Safety
/// `node` must be NULL or a live node record for the whole of `call`.
#[cfg(slurm_ctx)]
pub unsafe fn node_name_of<'c>(call: &Call<'c>, node: *mut b::node_record_t) -> Option<&'c str> {
    // SAFETY: per the contract; name is NULL or NUL-terminated.
    (!node.is_null())
        .then(|| unsafe { str_arg(call, (*node).name) })
        .flatten()
}

/// The node's `Topology=` string (`scontrol show node`).
#[cfg(slurm_ctx)]
pub fn topology_str(index: usize) -> Option<String> {
    // SAFETY: `record` returns live node records; the field is NULL or a C string.
    record(index).and_then(|rec| unsafe { owned_str((*rec).topology_str) })
}

/// Replaces the node's `Topology=` string (Slurm's allocator; the old one is freed).
///
/// # Safety
/// Only while no other thread reads or writes node records (slurmctld's configuration load).
#[cfg(slurm_ctx)]
pub unsafe fn set_topology_str(index: usize, value: Option<&str>) {
    if let Some(rec) = record(index) {
        // SAFETY: a live record, exclusive access per the contract; the old string came from
        // Slurm's allocator (xstrdup) and nothing else keeps it.
        unsafe {
            let old = (*rec).topology_str;
            (*rec).topology_str = value.map_or(null(), xstrdup);
            xfree(old);
        }
    }
}

/// Sets `node_rank` for the node at `index`.
///
/// # Safety
/// Only while slurmctld builds its node table (generate_node_ranking): no other thread may
/// read or write node records at the same time.
pub unsafe fn set_node_rank(index: usize, rank: u32) {
    if let Some(rec) = record(index) {
        // SAFETY: a live record; exclusive access per the contract above.
        unsafe { (*rec).node_rank = rank };
    }
}

#[cfg(slurm_jobinfo)]
/// Host list of the named nodes (`gb[001-004]`), for messages and Slurm strings.
pub fn node_names(indices: &[usize]) -> String {
    let names: Vec<String> = indices
        .iter()
        .filter_map(|&i| node(i))
        .map(|n| n.name)
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    crate::hostlist::compress(&refs)
}

/// Set once a Slurm record did not carry its magic number where this build expects it.
static LAYOUT_MISMATCH: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Struct layouts can drift between Slurm releases (and a source tree can be mislabelled):
/// Slurm's records start with or carry magic numbers, checked here at the offsets this build
/// was compiled for. On a mismatch one error names the Slurm the plugin was built for, and
/// the callers fall back to Slurm's generic selection instead of reading garbage.
fn layout_mismatch(what: &str) -> bool {
    if !LAYOUT_MISMATCH.swap(true, std::sync::atomic::Ordering::Relaxed) {
        log_error(&format!(
            "built for Slurm {} but this process's {what} do not match that layout; rack \
             placement is off and Slurm's generic selection places jobs. Rebuild the plugin \
             against this Slurm's exact release",
            env!("NVL72_SLURM_VERSION")
        ));
    }
    false
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

/// DOWN, DRAIN, FAIL, or not responding: the tray is not healthy capacity.
pub fn state_unavailable(state: u32) -> bool {
    let base = state & b::NODE_STATE_BASE;
    base == b::node_states_NODE_STATE_DOWN
        || base == b::node_states_NODE_STATE_FUTURE
        || state
            & (b::nvl72_node_flag_NVL72_NODE_STATE_DRAIN
                | b::nvl72_node_flag_NVL72_NODE_STATE_FAIL
                | b::nvl72_node_flag_NVL72_NODE_STATE_NO_RESPOND)
            != 0
}

/// Some job runs on (or is still leaving) the node.
pub fn state_allocated(state: u32) -> bool {
    let base = state & b::NODE_STATE_BASE;
    base == b::node_states_NODE_STATE_ALLOCATED
        || base == b::node_states_NODE_STATE_MIXED
        || state & b::nvl72_node_flag_NVL72_NODE_STATE_COMPLETING != 0
}

/// Copies `s` into memory from Slurm's allocator, which the caller frees with `xfree`.
pub fn xstrdup(s: &str) -> *mut c_char {
    let c = CString::new(s.replace('\0', " ")).unwrap_or_default();
    // SAFETY: c is a valid NUL-terminated string; xstrdup copies it.
    unsafe { b::slurm_xstrdup(c.as_ptr()) }
}

/// Frees memory that Slurm's allocator returned (xmalloc/xstrdup).
///
/// # Safety
/// `p` must be NULL or come from Slurm's allocator and not be used afterwards.
pub unsafe fn xfree(p: *mut c_char) {
    let mut p = p.cast::<std::ffi::c_void>();
    // SAFETY: per the contract above; slurm_xfree takes the address of the pointer.
    unsafe { b::slurm_xfree(&mut p) };
}

/// Allocates zeroed memory for `T` with Slurm's allocator (the caller frees with xfree).
pub fn xmalloc<T>() -> *mut T {
    // SAFETY: xcalloc(1, size, clear=true, try=false) aborts on OOM and never returns NULL.
    unsafe {
        b::slurm_xcalloc(
            1,
            std::mem::size_of::<T>(),
            true,
            false,
            c"topology_nvl72".as_ptr(),
            0,
            c"xmalloc".as_ptr(),
        )
        .cast()
    }
}

#[cfg(slurm_eval_action)]
/// Allocates `n` zeroed `T`s with Slurm's allocator (the caller frees with xfree).
pub fn xmalloc_array<T>(n: usize) -> *mut T {
    // SAFETY: xcalloc(n, size, clear=true, try=false) aborts on OOM and never returns NULL.
    unsafe {
        b::slurm_xcalloc(
            n.max(1),
            std::mem::size_of::<T>(),
            true,
            false,
            c"topology_nvl72".as_ptr(),
            0,
            c"xmalloc_array".as_ptr(),
        )
        .cast()
    }
}

/// Borrows a C string argument for the rest of the call.
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string valid for the whole of `call`.
pub unsafe fn str_arg<'c>(_call: &Call<'c>, p: *const c_char) -> Option<&'c str> {
    if p.is_null() {
        None
    } else {
        // SAFETY: per the contract above.
        unsafe { CStr::from_ptr(p) }.to_str().ok()
    }
}

/// Copies a C string (for strings the caller frees or Slurm may replace later).
///
/// # Safety
/// `p` must be NULL or a valid NUL-terminated string.
pub unsafe fn owned_str(p: *const c_char) -> Option<String> {
    // SAFETY: per the contract above; the bytes are copied before returning.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

#[cfg(not(slurm_ctx))]
pub fn running_in_slurmctld() -> bool {
    // SAFETY: no arguments; reads a cached process flag.
    unsafe { b::slurm_running_in_slurmctld() }
}

/// 25.05+: `running_in_slurmctld()` became a macro over `run_in_daemon(IS_SLURMCTLD)`.
#[cfg(slurm_ctx)]
pub fn running_in_slurmctld() -> bool {
    // SAFETY: takes a daemon mask by value; reads a cached process flag.
    unsafe { b::slurm_run_in_daemon(b::nvl72_daemon_NVL72_IS_SLURMCTLD) }
}

/// slurmctld's StateSaveLocation, where the last good topology is kept.
pub fn state_save_location() -> Option<std::path::PathBuf> {
    // SAFETY: slurm_conf is initialised by the time any plugin op runs; the field is NULL or an
    // xstrdup'd path that only changes on reconfigure (a new process in 24.11).
    unsafe { owned_str(b::slurm_conf.state_save_location) }.map(std::path::PathBuf::from)
}

/// The directory holding slurm.conf (and so topology.toml), from Slurm's `topo_conf` path
/// (`<confdir>/topology.conf`); programs without one (clients) use `SLURM_CONF`'s directory.
pub fn config_dir() -> std::path::PathBuf {
    topo_conf()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        .or_else(|| {
            std::env::var_os("SLURM_CONF")
                .and_then(|c| std::path::Path::new(&c).parent().map(|d| d.to_path_buf()))
        })
        .unwrap_or_else(|| "/etc/slurm".into())
}

/// 24.11: the interface's global `topo_conf`.
#[cfg(not(slurm_ctx))]
fn topo_conf() -> Option<std::path::PathBuf> {
    // SAFETY: topo_conf is NULL or an xstrdup'd path set by topology_g_init before any op.
    unsafe { owned_str(b::topo_conf) }.map(std::path::PathBuf::from)
}

/// 25.05+: `tctx->topo_conf`, remembered from the ops that receive the context
/// (`generate_node_ranking`, `build_config`, which run before any other).
#[cfg(slurm_ctx)]
static TOPO_CONF: parking_lot::Mutex<Option<std::path::PathBuf>> = parking_lot::Mutex::new(None);

#[cfg(slurm_ctx)]
fn topo_conf() -> Option<std::path::PathBuf> {
    TOPO_CONF.lock().clone()
}

#[cfg(slurm_ctx)]
pub fn set_topo_conf(path: &str) {
    *TOPO_CONF.lock() = Some(path.into());
}

/// A slurmctld global that Slurm's topology helper library also defines as a local
/// placeholder (`idle_node_bitmap`, `part_list`). Slurm's own plugins export the placeholder so
/// the executable's definition interposes; a Rust cdylib keeps it local, so we copy the value.
pub struct Shadow {
    name: &'static CStr,
    /// The address of the process's definition (0 if none), looked up once: it never moves.
    global: OnceLock<usize>,
}

pub static IDLE_NODE_BITMAP: Shadow = Shadow::new(c"idle_node_bitmap");
pub static PART_LIST: Shadow = Shadow::new(c"part_list");

impl Shadow {
    const fn new(name: &'static CStr) -> Shadow {
        Shadow {
            name,
            global: OnceLock::new(),
        }
    }

    /// Copies the global's current value into `local`.
    ///
    /// # Safety
    /// `local` must point to the placeholder variable of the same type as the global, and the
    /// caller must hold the slurmctld lock that guards the global (no concurrent writer).
    pub unsafe fn refresh<T>(&self, local: *mut *mut T) {
        let global = *self.global.get_or_init(|| {
            // SAFETY: dlsym with RTLD_DEFAULT only looks a symbol up.
            unsafe { libc::dlsym(libc::RTLD_DEFAULT, self.name.as_ptr()) as usize }
        }) as *mut *mut T;
        if !global.is_null() && global != local {
            // SAFETY: a non-NULL dlsym result is the address of the process's definition of
            // the global, of type `*mut T` per the contract; the lock excludes writers.
            unsafe { *local = *global };
        }
    }
}

pub fn log_level_filter() -> log::LevelFilter {
    // SAFETY: reads the logger's current level.
    let level = unsafe { b::slurm_get_log_level() } as u32;
    match level {
        l if l > b::log_level_t_LOG_LEVEL_DEBUG => log::LevelFilter::Trace,
        l if l >= b::log_level_t_LOG_LEVEL_VERBOSE => log::LevelFilter::Debug,
        l if l >= b::log_level_t_LOG_LEVEL_INFO => log::LevelFilter::Info,
        l if l >= b::log_level_t_LOG_LEVEL_ERROR => log::LevelFilter::Warn,
        _ => log::LevelFilter::Off,
    }
}

/// One line in Slurm's log, prefixed with the plugin type like Slurm's own plugin messages.
pub fn log_line(level: log::Level, msg: &str) {
    let (slurm_level, prefix) = match level {
        log::Level::Error => (b::log_level_t_LOG_LEVEL_ERROR, ""),
        log::Level::Warn => (b::log_level_t_LOG_LEVEL_INFO, "warning: "),
        log::Level::Info => (b::log_level_t_LOG_LEVEL_INFO, ""),
        log::Level::Debug => (b::log_level_t_LOG_LEVEL_VERBOSE, ""),
        log::Level::Trace => (b::log_level_t_LOG_LEVEL_DEBUG, ""),
    };
    let line = CString::new(format!("{prefix}topology/nvl72: {msg}").replace('\0', " "))
        .unwrap_or_default();
    // SAFETY: "%s" with one NUL-terminated string argument matches log_var's printf contract.
    unsafe { b::slurm_log_var(slurm_level, c"%s".as_ptr(), line.as_ptr()) };
}

pub fn log_error(msg: &str) {
    log_line(log::Level::Error, msg);
}

/// `fatal()`: only for a reconfigure child whose failure makes the old slurmctld resume.
pub fn fatal(msg: &str) -> ! {
    let line =
        CString::new(format!("topology/nvl72: {msg}").replace('\0', " ")).unwrap_or_default();
    // SAFETY: "%s" format with one string; slurm_fatal logs, flushes and exits.
    unsafe { slurm_fatal(c"%s".as_ptr(), line.as_ptr()) };
    #[allow(unreachable_code)]
    {
        std::process::exit(1)
    }
}

extern "C" {
    fn slurm_fatal(fmt: *const c_char, ...);
}

pub const SUCCESS: c_int = b::SLURM_SUCCESS as c_int;
pub const ERROR: c_int = b::SLURM_ERROR;
pub const TOPO_UNAVAILABLE: c_int =
    b::slurm_err_t_ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE as c_int;

pub fn null<T>() -> *mut T {
    ptr::null_mut()
}
