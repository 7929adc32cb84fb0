//! Reads (and the two writes slurmctld allows) of the node table, and node-state predicates.
//!
//! The table (`node_record_table_ptr`, `node_record_count`) is only rebuilt while no plugin
//! entry point runs, so a record found here stays live for the call.

use std::ffi::CStr;

use super::super::bindings as b;
#[cfg(slurm_ctx)]
use super::super::call::Call;
#[cfg(slurm_ctx)]
use super::{null, owned_str, str_arg, xfree, xstrdup};

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
pub(super) fn record(index: usize) -> Option<*mut b::node_record_t> {
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

/// Host list of the named nodes (`gb[001-004]`), for messages and Slurm strings.
pub fn node_names(indices: &[usize]) -> String {
    let names: Vec<String> = indices
        .iter()
        .filter_map(|&i| node(i))
        .map(|n| n.name)
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    nvl72_engine::hostlist::compress(&refs)
}

/// A node made by `scontrol create node` or `slurmd -Z`: only such nodes can be deleted, so
/// only their index can later hold another node.
pub fn state_dynamic(state: u32) -> bool {
    state & b::nvl72_node_flag_NVL72_NODE_STATE_DYNAMIC_NORM != 0
}

/// Whether the node at `index` exists and is named `name` (no copy: checked on every call
/// for the few dynamic trays in racks).
pub fn node_named(index: usize, name: &str) -> bool {
    // SAFETY: `record` returns live node records; `name` is NULL or NUL-terminated.
    record(index).is_some_and(|rec| unsafe {
        let n = (*rec).name;
        !n.is_null() && CStr::from_ptr(n).to_bytes() == name.as_bytes()
    })
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
