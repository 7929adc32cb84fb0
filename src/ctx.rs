//! The operations Slurm 25.05 and later added or changed: the topology context (`tctx`),
//! dynamic node placement, a node's rack as a topology string (25.11), the one-node fast
//! path and per-node ranks (26.05).
//!
//! The plugin keeps one rack table per process (`state`), so `tctx` is read only for the path
//! of the configuration (`tctx->topo_conf`) and its name (for topology strings).

use std::ffi::c_char;
#[cfg(slurm_eval_action)]
use std::ffi::c_int;

use super::bindings as b;
use super::call::Call;
use super::error::PluginError;
use super::ops;
use super::slurm;
use super::state;

/// The directory of `tctx->topo_conf` (`<confdir>/topology.conf`), where topology.toml lives.
///
/// # Safety
/// `tctx` must be NULL or the context Slurm passes, valid for the call.
unsafe fn remember_conf_dir(call: &Call, tctx: *mut b::topology_ctx_t) {
    if tctx.is_null() {
        return;
    }
    // SAFETY: per the contract; topo_conf is NULL or an xstrdup'd path of the context.
    if let Some(path) = unsafe { slurm::str_arg(call, (*tctx).topo_conf) } {
        slurm::set_topo_conf(path);
    }
}

/// # Safety
/// `tctx` must be NULL or the context Slurm passes, valid for the call.
pub unsafe fn build_config(call: &Call, tctx: *mut b::topology_ctx_t) -> Result<(), PluginError> {
    // SAFETY: per the function contract.
    unsafe { remember_conf_dir(call, tctx) };
    let rc = ops::build_config(call);
    if rc.is_ok() && slurm::running_in_slurmctld() {
        // SAFETY: build_config runs single-threaded during slurmctld's configuration load,
        // before `_set_nodes_topo` reads the strings back (read_config.c).
        unsafe { show_racks_on_nodes(tctx) };
    }
    rc
}

/// `scontrol show node` prints `Topology=` from the node record only (node_info.c): each rack
/// tray gets `<context>:<rack>`, as block prints. topology.toml is the truth, so a string
/// recovered from an older state (a tray since moved) is replaced, and one naming this
/// context on a node outside every rack is dropped; otherwise slurmctld's check of the strings
/// (`add_rm_node` for each, right after build_config) would refuse to start.
///
/// # Safety
/// Exclusive access to the node table (slurmctld's configuration load); `tctx` NULL or valid.
unsafe fn show_racks_on_nodes(tctx: *mut b::topology_ctx_t) {
    let Some(st) = state::current() else { return };
    // SAFETY: per the function contract.
    let context = unsafe { context_name(tctx) };
    let ours = format!("{context}:");
    for n in 0..slurm::node_count() {
        let rack = st.topo.rack_of(n).map(|d| st.topo.racks[d].name.as_str());
        let old = slurm::topology_str(n);
        let new = match (rack, &old) {
            (Some(r), _) => Some(format!("{ours}{r}")),
            (None, Some(o)) if o.starts_with(&ours) => {
                let name = slurm::node(n).map_or_else(|| format!("node {n}"), |i| i.name);
                log::warn!("{name}: Topology={o} dropped, the node is in no rack of topology.toml");
                None
            }
            (None, _) => continue,
        };
        if new != old {
            // SAFETY: n indexes the node table; we are its only user, per the contract.
            unsafe { slurm::set_topology_str(n, new.as_deref()) };
        }
    }
}

/// The context's name (`default` unless a topology.yaml named it).
///
/// # Safety
/// `tctx` NULL or valid for the call.
unsafe fn context_name(tctx: *mut b::topology_ctx_t) -> String {
    // SAFETY: per the contract; name is NULL or a C string owned by the context.
    let name = (!tctx.is_null())
        .then(|| unsafe { slurm::owned_str((*tctx).name) })
        .flatten();
    name.unwrap_or_else(|| "default".into())
}

/// Called when slurmctld (or a reconfigure) drops its topology contexts; the rack table is
/// replaced by the next `build_config` or dropped by `fini`.
pub fn destroy_config(_: &Call, _tctx: *mut b::topology_ctx_t) -> Result<(), PluginError> {
    Ok(())
}

/// A node's `Topology=` (slurm.conf, `scontrol update node`) names its unit; racks come from
/// topology.toml, so only the rack the node is already in is accepted (clear error otherwise).
///
/// # Safety
/// `node` must be NULL or a live node record, `unit` NULL or a C string.
pub unsafe fn add_rm_node(
    call: &Call,
    node: *mut b::node_record_t,
    unit: *mut c_char,
    _tctx: *mut b::topology_ctx_t,
) -> Result<(), PluginError> {
    // SAFETY: per the function contract.
    let (Some(unit), Some(node)) = (unsafe { slurm::str_arg(call, unit) }, unsafe {
        slurm::node_name_of(call, node)
    }) else {
        return Ok(()); // no unit named: nothing to change
    };
    let current = state::current().and_then(|st| {
        st.rack_by_name
            .get(node)
            .map(|&d| st.topo.racks[d].name.clone())
    });
    if current.as_deref() == Some(unit) {
        return Ok(());
    }
    slurm::log_error(&format!(
        "{node}: Topology unit {unit} refused: racks come from topology.toml ({node} is in {}); \
         edit it and run `scontrol reconfigure`",
        current.as_deref().unwrap_or("no rack")
    ));
    Err(PluginError::Error)
}

/// # Safety
/// As [`ops::generate_node_ranking`]; `tctx` NULL or valid for the call.
pub unsafe fn generate_node_ranking(call: &Call, tctx: *mut b::topology_ctx_t) -> bool {
    // SAFETY: per the function contract.
    unsafe {
        remember_conf_dir(call, tctx);
        ops::generate_node_ranking(call)
    }
}

/// `<context>:<rack>` for a tray, appended to `*out` (comma-separated, as the interface
/// concatenates all contexts); nothing for nodes outside racks.
///
/// # Safety
/// `node` NULL or a live node record; `out` NULL or a pointer to NULL or an xmalloc'd string.
#[cfg(slurm_jobinfo)]
pub unsafe fn get_topology_str(
    call: &Call,
    node: *mut b::node_record_t,
    out: *mut *mut c_char,
    tctx: *mut b::topology_ctx_t,
) {
    // SAFETY: per the function contract.
    let Some(name) = (unsafe { slurm::node_name_of(call, node) }) else {
        return;
    };
    let Some(st) = state::current() else { return };
    let Some(&d) = st.rack_by_name.get(name) else {
        return;
    };
    if out.is_null() {
        return;
    }
    // SAFETY: per the function contract.
    let context = unsafe { context_name(tctx) };
    // SAFETY: *out is NULL or an xmalloc'd string we replace (and free).
    unsafe {
        let prev = *out;
        let text = match slurm::owned_str(prev) {
            Some(p) if !p.is_empty() => format!("{p},{context}:{}", st.topo.racks[d].name),
            _ => format!("{context}:{}", st.topo.racks[d].name),
        };
        *out = slurm::xstrdup(&text);
        slurm::xfree(prev);
    }
}

/// False: a one-tray job must still go through rack packing (`eval_nodes`), not cons_tres's
/// first-fit single-node path, which would scatter small jobs over every rack.
#[cfg(slurm_eval_action)]
pub fn allow_one_node(_: &Call) -> bool {
    false
}

/// Only used on the one-node path, which `allow_one_node` turns off; Slurm's generic test.
///
/// # Safety
/// `te` as cons_tres passes it, `node_inx` an index of its node table.
#[cfg(slurm_eval_action)]
pub unsafe fn eval_node(
    _: &Call,
    te: *mut b::topology_eval_t,
    node_inx: c_int,
) -> Result<(), PluginError> {
    if te.is_null() {
        return Err(PluginError::Error);
    }
    // SAFETY: arguments forwarded unchanged to Slurm's helper.
    PluginError::check(unsafe { b::common_test_node(te, node_inx) })
}

/// One rank per allocated node, rack-major: `rack << TOPO_RANK_ID_SHIFT | tray position`, so
/// Slurm's task layout keeps each rack's tasks together. Nodes outside racks come last.
///
/// # Safety
/// `node_bitmap` a valid node bitmap; `node_rank` and `size` writable out-pointers.
#[cfg(slurm_eval_action)]
pub unsafe fn get_rank(
    call: &Call,
    node_bitmap: *mut b::bitstr_t,
    node_rank: *mut *mut u32,
    size: *mut u32,
) -> Result<(), PluginError> {
    if node_rank.is_null() || size.is_null() {
        return Err(PluginError::Error);
    }
    // SAFETY: per the function contract.
    let Some(nodes) = (unsafe { slurm::BitmapRef::new(call, node_bitmap) }) else {
        return Err(PluginError::Error);
    };
    let Some(st) = state::current() else {
        // SAFETY: valid out-pointers: no ranking (as topology/flat).
        unsafe { (*node_rank, *size) = (slurm::null(), 0) };
        return Ok(());
    };
    let ranks =
        nvl72_engine::allocation::node_ranks(&st.topo, &nodes.ones(), b::TOPO_RANK_ID_SHIFT);
    // SAFETY: valid out-pointers; the array comes from Slurm's allocator, the caller frees it.
    unsafe {
        let array = slurm::xmalloc_array::<u32>(ranks.len());
        std::ptr::copy_nonoverlapping(ranks.as_ptr(), array, ranks.len());
        *node_rank = array;
        *size = ranks.len() as u32;
    }
    Ok(())
}
