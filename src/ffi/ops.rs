//! What each exported plugin operation does (`exports.rs` maps Slurm's symbols onto these).
//! Every function takes the [`Call`] of the Slurm call it serves: pointers read from the
//! arguments borrow it and cannot outlive the call.

use std::ffi::{c_char, c_int, c_void};

use super::bindings as b;
use super::error::PluginError;
use super::guard::{install_logger, Call};
use super::slurm::{self, BitmapRef};
use super::state;

pub fn init(_: &Call) -> Result<(), PluginError> {
    install_logger();
    log::debug!("loaded, built for Slurm {}", env!("NVL72_SLURM_VERSION"));
    Ok(())
}

pub fn fini(_: &Call) -> Result<(), PluginError> {
    state::clear();
    Ok(())
}

/// Reads the racks. Slurm ignores the return value, so a broken file is handled here:
/// - a reconfigure child of slurmctld exits, and the running slurmctld resumes with its
///   current racks ("Resuming operation, reconfigure failed.");
/// - a freshly started slurmctld uses the last good copy from StateSaveLocation and says so;
///   with no such copy it refuses to start, as Slurm does for a broken topology.conf;
/// - slurmd and other programs carry on without racks (only SLURM_TOPOLOGY_ADDR is affected).
pub fn build_config(_: &Call) -> Result<(), PluginError> {
    let in_ctld = slurm::running_in_slurmctld();
    if in_ctld {
        // part_list exists by now and its pointer never changes afterwards (see slurm/conf.rs).
        // SAFETY: build_config runs single-threaded during slurmctld's config load.
        unsafe { slurm::PART_LIST.refresh(std::ptr::addr_of_mut!(b::part_list)) };
    }
    let config = match state::read_config() {
        Ok(config) => {
            if in_ctld {
                log_changes(&config);
                state::save_last_good(&config);
            }
            config
        }
        Err(e) if !in_ctld => {
            log::warn!("{e}; continuing without rack information in this process");
            return Err(PluginError::Error);
        }
        Err(e) if std::env::var_os("SLURMCTLD_RECONF_PARENT_FD").is_some() => slurm::fatal(
            &format!("reconfigure refused, topology configuration is invalid: {e}"),
        ),
        Err(e) => match state::load_last_good() {
            Some(Ok(good)) => {
                slurm::log_error(&format!(
                    "invalid topology configuration: {e}; placing jobs by the last good \
                     configuration {} until the file is fixed and `scontrol reconfigure` is run",
                    good.source.display()
                ));
                good
            }
            _ => slurm::fatal(&format!("invalid topology configuration: {e}")),
        },
    };
    if !slurm::node_table_layout_ok() {
        return Err(PluginError::Error); // logged; no rack table, so eval falls back to Slurm's selection
    }
    let loaded = state::resolve(&config);
    log::info!(
        "{} racks, {} trays, {} GPUs per tray from {}",
        loaded.topo.racks.len(),
        loaded
            .topo
            .racks
            .iter()
            .map(|d| d.nodes.len())
            .sum::<usize>(),
        loaded.topo.gpus_per_tray,
        config.source.display()
    );
    state::install(loaded);
    Ok(())
}

/// Tells the admin what a reconfigure (or a restart with an edited file) changed, against
/// the last configuration slurmctld accepted.
fn log_changes(config: &crate::config::Config) {
    if let Some(Ok(old)) = state::load_last_good() {
        let changes = crate::config::describe_changes(&old, config);
        if !changes.is_empty() {
            log::info!(
                "racks changed since the last configuration: {}",
                changes.join("; ")
            );
        }
    }
}

/// `--exclusive=topo` and `ExclusiveTopo`: widen `node_mask` to whole racks.
///
/// # Safety
/// `node_mask` must be NULL or a node bitmap the caller lets us write during the call.
pub unsafe fn whole_topo(call: &Call, node_mask: *mut b::bitstr_t) -> Result<(), PluginError> {
    // SAFETY: per the function contract.
    let Some(mask) = (unsafe { BitmapRef::new(call, node_mask) }) else {
        return Err(PluginError::Error);
    };
    if let Some(st) = state::current() {
        for rack in st.rack_bitmaps.iter().filter(|r| mask.overlaps(r)) {
            mask.or(rack);
        }
    }
    Ok(())
}

/// Resolves a rack or rack-group name (`block{rack1}` style host expressions); the caller
/// must not free the result, which stays valid for the life of the process.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string.
pub unsafe fn get_bitmap(call: &Call, name: *mut c_char) -> *mut b::bitstr_t {
    // SAFETY: per the function contract.
    let (Some(name), Some(st)) = (unsafe { slurm::str_arg(call, name) }, state::current()) else {
        return slurm::null();
    };
    if let Some(d) = st.topo.rack_by_name(name) {
        return st.rack_bitmaps[d].as_ptr();
    }
    st.group_bitmaps
        .iter()
        .find(|(g, _)| g == name)
        .map_or(slurm::null(), |(_, m)| m.as_ptr())
}

/// Orders slurmctld's node table rack by rack, trays in rack order, other nodes after them.
/// Runs before build_config, so it reads the configuration on its own.
///
/// # Safety
/// Only as slurmctld calls it: single-threaded while it builds the node table, right before
/// sorting it by node_rank.
pub unsafe fn generate_node_ranking(_: &Call) -> bool {
    let Ok(config) = state::read_config() else {
        return false; // build_config reports the error
    };
    let by_name = state::node_index_by_name();
    let mut ranked = vec![false; slurm::node_count()];
    let mut rank = 0u32;
    // SAFETY: exclusive access to the node table, per the function contract.
    unsafe {
        for name in config.racks.iter().flat_map(|r| r.nodes.iter()) {
            if let Some(&i) = by_name.get(name) {
                slurm::set_node_rank(i, rank);
                ranked[i] = true;
                rank += 1;
            }
        }
        for (i, done) in ranked.iter().enumerate() {
            if !done {
                slurm::set_node_rank(i, rank + i as u32);
            }
        }
    }
    true
}

/// `SLURM_TOPOLOGY_ADDR=rack3.gb041`, pattern `rack.node`; nodes outside racks get Slurm's
/// default (the node name, pattern `node`).
///
/// # Safety
/// `node_name` must be NULL or a NUL-terminated string, `addr` and `pattern` NULL or
/// writable out-pointers whose results the caller xfree()s.
pub unsafe fn get_node_addr(
    call: &Call,
    node_name: *mut c_char,
    addr: *mut *mut c_char,
    pattern: *mut *mut c_char,
) -> Result<(), PluginError> {
    if addr.is_null() || pattern.is_null() {
        return Err(PluginError::Error);
    }
    // SAFETY: per the function contract.
    let name = unsafe { slurm::str_arg(call, node_name) };
    let rack = name.zip(state::current()).and_then(|(n, st)| {
        st.rack_by_name
            .get(n)
            .map(|&d| format!("{}.{n}", st.topo.racks[d].name))
    });
    match rack {
        Some(a) => {
            // SAFETY: valid out-pointers (checked non-NULL above), per the contract.
            unsafe {
                *addr = slurm::xstrdup(&a);
                *pattern = slurm::xstrdup("rack.node");
            }
            Ok(())
        }
        None => {
            // SAFETY: same arguments Slurm gave us, forwarded to Slurm's default.
            let rc = unsafe { b::common_topo_get_node_addr(node_name, addr, pattern) };
            PluginError::check(rc)
        }
    }
}

/// Message fan-out: Slurm's TreeWidth split (also honours TopologyParam=RoutePart).
///
/// # Safety
/// The arguments of `topology_p_split_hostlist`, forwarded unchanged.
pub unsafe fn split_hostlist(
    _: &Call,
    hl: *mut b::hostlist_t,
    sp_hl: *mut *mut *mut b::hostlist_t,
    count: *mut c_int,
    tree_width: u16,
) -> Result<(), PluginError> {
    // SAFETY: arguments forwarded unchanged to Slurm's helper, which takes the node and
    // partition locks itself for RoutePart (part_list was refreshed in build_config).
    PluginError::check(unsafe {
        b::common_topo_split_hostlist_treewidth(hl, sp_hl, count, tree_width)
    })
}

/// `kind` is a C enum; taking it as an integer means an unknown value is an error, not UB.
///
/// # Safety
/// `data` must be NULL or the out-pointer Slurm passes for `kind` (proc_req.c).
pub unsafe fn get(_: &Call, kind: u32, data: *mut c_void) -> Result<(), PluginError> {
    const PTR: u32 = b::topology_data_t::TOPO_DATA_TOPOLOGY_PTR as u32;
    const REC_CNT: u32 = b::topology_data_t::TOPO_DATA_REC_CNT as u32;
    const EXCLUSIVE: u32 = b::topology_data_t::TOPO_DATA_EXCLUSIVE_TOPO as u32;
    if data.is_null() {
        return Err(PluginError::Error);
    }
    match kind {
        // SAFETY: for TOPOLOGY_PTR Slurm passes a dynamic_plugin_data_t **.
        PTR => unsafe { super::topoinfo::get(data.cast()) },
        REC_CNT => {
            let racks = state::current().map_or(0, |s| s.topo.racks.len());
            // SAFETY: for REC_CNT Slurm passes an int out-pointer.
            unsafe { *data.cast::<c_int>() = racks as c_int };
            Ok(())
        }
        EXCLUSIVE => {
            // SAFETY: for EXCLUSIVE_TOPO Slurm passes an int out-pointer.
            unsafe { *data.cast::<c_int>() = 1 };
            Ok(())
        }
        other => {
            log::error!("get: unsupported data type {other}");
            Err(PluginError::Error)
        }
    }
}

/// Backfill's `bf_topopt_enable` score: available trays stranded in incomplete racks.
///
/// # Safety
/// `node_mask` must be NULL or a valid node bitmap for the call.
pub unsafe fn get_fragmentation(call: &Call, node_mask: *mut b::bitstr_t) -> u32 {
    // SAFETY: per the function contract.
    let (Some(mask), Some(st)) = (unsafe { BitmapRef::new(call, node_mask) }, state::current())
    else {
        return 0;
    };
    crate::fragmentation::score(&st.topo, mask.tester())
}
