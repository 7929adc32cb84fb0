//! Slurm's configuration and process globals: which daemon we are in, StateSaveLocation,
//! the configuration directory, and the `Shadow` copies of slurmctld globals.

use std::ffi::CStr;
use std::sync::OnceLock;

use super::super::bindings as b;
use super::owned_str;

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

/// `PrivateData=nodes`: Slurm shows nodes to operators only.
pub fn private_nodes() -> bool {
    /// slurm.h's `PRIVATE_DATA_NODES`, `SLURM_BIT(1)` (the same in 24.11 and 26.05), a
    /// function-like macro that bindgen does not evaluate.
    const PRIVATE_DATA_NODES: u64 = 1 << 1;
    // SAFETY: slurm_conf is initialised by the time any plugin op runs; a plain integer read.
    let private = unsafe { b::slurm_conf.private_data };
    u64::from(private) & PRIVATE_DATA_NODES != 0
}

/// `DebugFlags=SelectType`, which `scontrol setdebugflags +SelectType` turns on in a running
/// slurmctld: topology/block logs its selection then, and so does this plugin.
pub fn debug_select_type() -> bool {
    /// slurm.h's `DEBUG_FLAG_SELECT_TYPE`, `SLURM_BIT(0)` (the same in 24.11 and 26.05), a
    /// function-like macro that bindgen does not evaluate.
    const DEBUG_FLAG_SELECT_TYPE: u64 = 1 << 0;
    // SAFETY: slurm_conf is initialised by the time any plugin op runs; a plain aligned
    // integer read (setdebugflags changes it under slurmctld's configuration lock).
    let flags = unsafe { b::slurm_conf.debug_flags };
    flags & DEBUG_FLAG_SELECT_TYPE != 0
}

/// A preemption plugin is configured (`PreemptType` other than `preempt/none`): without one
/// Slurm never offers a job the trays of running jobs, and the eval path skips the check.
pub fn preemption_configured() -> bool {
    // SAFETY: slurm_conf is initialised by the time any plugin op runs; the field is NULL or
    // an xstrdup'd NUL-terminated string that only changes on reconfigure (under the lock
    // the scheduler holds during eval); it is read in place, not kept.
    let t = unsafe { b::slurm_conf.preempt_type };
    // SAFETY: non-NULL: a NUL-terminated string, as above.
    !t.is_null() && unsafe { CStr::from_ptr(t) }.to_bytes() != b"preempt/none"
}

/// `PreemptType=preempt/qos`: Slurm orders preemption candidates by QOS priority (else by
/// partition PriorityTier, preempt/partition_prio).
pub fn preempt_by_qos() -> bool {
    // SAFETY: slurm_conf is initialised by the time any plugin op runs; the field is NULL or
    // an xstrdup'd string that only changes on reconfigure.
    unsafe { owned_str(b::slurm_conf.preempt_type) }.is_some_and(|t| t.contains("qos"))
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
