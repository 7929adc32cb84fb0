//! What each exported plugin operation does (`exports.rs` maps Slurm's symbols onto these).
//! Every function takes the [`Call`] of the Slurm call it serves: pointers read from the
//! arguments borrow it and cannot outlive the call.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use super::bindings as b;
use super::call::Call;
use super::error::PluginError;
use super::guard::install_logger;
use super::slurm::{self, BitmapRef};
use super::state;
use nvl72_engine::config::{Config, ConfigError};
use nvl72_engine::reload::{on_refusal, OnRefusal, Role};

pub fn init(_: &Call) -> Result<(), PluginError> {
    install_logger();
    log::debug!("loaded, built for Slurm {}", env!("NVL72_SLURM_VERSION"));
    Ok(())
}

pub fn fini(_: &Call) -> Result<(), PluginError> {
    state::clear();
    Ok(())
}

/// Whether this process has loaded the racks before (see `reload::Role`).
static LOADED_BEFORE: AtomicBool = AtomicBool::new(false);

/// Reads the racks. Slurm ignores the return value, so a file that must be refused (broken,
/// or in slurmctld naming nodes slurm.conf does not define or taking trays that running jobs
/// hold out of their rack) is handled here, by the role of
/// the process (`reload`): a reconfigure child exits and its parent keeps its racks; any
/// other slurmctld load uses the last good copy from StateSaveLocation (with none, it refuses
/// to start, as Slurm does for a broken topology.conf); slurmd and the clients carry on
/// without racks (only SLURM_TOPOLOGY_ADDR is affected). A refused file is never half
/// applied and never becomes the last good copy.
pub fn build_config(_: &Call) -> Result<(), PluginError> {
    let in_ctld = slurm::running_in_slurmctld();
    if in_ctld {
        // part_list exists by now and its pointer never changes afterwards (see slurm/conf.rs).
        // SAFETY: build_config runs single-threaded during slurmctld's config load.
        unsafe { slurm::PART_LIST.refresh(std::ptr::addr_of_mut!(b::part_list)) };
    }
    let role = Role::of(
        in_ctld,
        std::env::var_os("SLURMCTLD_RECONF_PARENT_FD").is_some(),
        !LOADED_BEFORE.swap(true, Ordering::Relaxed),
    );
    let file = state::read_config().and_then(|config| match in_ctld {
        true => state::refuse_unknown_nodes(&config)
            .and_then(|()| state::refuse_moving_held(&config))
            .map(|()| config),
        false => Ok(config),
    });
    let config = match file {
        Ok(config) => {
            if in_ctld {
                log_changes(&config);
                state::save_last_good(&config);
            }
            config
        }
        Err(e) => refused(role, &e)?,
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

/// The configuration to run with when the file was refused (`e`), as `role` says: none (this
/// process places nothing by racks), the running slurmctld's (a reconfigure's child exits),
/// or the last good copy.
fn refused(role: Role, e: &ConfigError) -> Result<Config, PluginError> {
    match on_refusal(role) {
        OnRefusal::NoRacks => {
            log::warn!("{e}; continuing without rack information in this process");
            Err(PluginError::Error)
        }
        OnRefusal::ExitForParent => slurm::fatal(&format!(
            "reconfigure refused, topology configuration is invalid: {e}; the running \
             slurmctld keeps its racks"
        )),
        OnRefusal::LastGood => match state::load_last_good() {
            Some(Ok(good)) => {
                slurm::log_error(&format!(
                    "invalid topology configuration: {e}; placing jobs by the last good \
                     configuration {} until the file is fixed and `scontrol reconfigure` is run",
                    good.source.display()
                ));
                Ok(good)
            }
            Some(Err(bad)) => slurm::fatal(&format!(
                "invalid topology configuration: {e}; and the last good copy is unreadable: {bad}"
            )),
            None => slurm::fatal(&format!("invalid topology configuration: {e}")),
        },
    }
}

/// Tells the admin what a reconfigure (or a restart with an edited file) changed, against
/// the last configuration slurmctld accepted.
fn log_changes(config: &nvl72_engine::config::Config) {
    if let Some(Ok(old)) = state::load_last_good() {
        let changes = nvl72_engine::config::describe_changes(&old, config);
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

/// Orders slurmctld's node table: the order saved in StateSaveLocation, kept while job state
/// exists, with new nodes appended in rack order; on a first start rack by rack, trays in
/// rack order, other nodes after them (`node_order`). Runs before build_config, so it reads
/// the racks on its own (the last good copy when the file is broken).
///
/// # Safety
/// Only as slurmctld calls it: single-threaded while it builds the node table, right before
/// sorting it by node_rank.
pub unsafe fn generate_node_ranking(_: &Call) -> bool {
    let racks = state::read_config()
        .ok()
        .or_else(|| state::load_last_good().and_then(Result::ok));
    let nodes: Vec<slurm::NodeInfo> = (0..slurm::node_count()).filter_map(slurm::node).collect();
    let table: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let saved = state::load_node_order();
    let order =
        nvl72_engine::node_order::order(&table, saved.as_ref().map(|s| &s.1[..]), racks.as_ref());
    for (rank, &k) in order.iter().enumerate() {
        // SAFETY: exclusive access to the node table, per the function contract; k indexes
        // `nodes`, which holds live records.
        unsafe { slurm::set_node_rank(nodes[k].index, rank as u32) };
    }
    if let (Some((path, _)), Some(racks)) = (&saved, &racks) {
        let moved = nvl72_engine::node_order::moved_since(&table, &order, racks);
        if moved > 0 {
            log::info!(
                "node order kept from {}: {moved} trays are not where the racks alone would \
                 rank them, so that no running job's cores or GPUs move; placement follows the \
                 racks all the same",
                path.display()
            );
        }
    }
    let names: Vec<&str> = order.iter().map(|&k| table[k].as_str()).collect();
    state::save_node_order(&names);
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
    nvl72_engine::fragmentation::score(&st.topo, mask.tester())
}
