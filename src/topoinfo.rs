//! `scontrol show topology`: slurmctld builds the rack table under its node read lock and sends
//! it as one packed string; the client's copy of the plugin unpacks and prints it.

use std::ffi::{c_char, c_void};

use super::bindings as b;
use super::call::Call;
use super::error::PluginError;
use super::slurm;
use super::state;
use nvl72_engine::topoinfo::TopoInfo;

/// TOPO_DATA_TOPOLOGY_PTR: fills `*out` with a container from Slurm's allocator (the
/// interface xfree()s it) holding a boxed [`TopoInfo`] (freed by `topology_p_topology_free`).
///
/// # Safety
/// `out` must be a valid `dynamic_plugin_data_t **` (slurmctld holds its node read lock).
pub unsafe fn get(out: *mut *mut b::dynamic_plugin_data_t) -> Result<(), PluginError> {
    let info = match state::current() {
        Some(st) => TopoInfo::collect(&st.topo, &super::view::cluster_view()),
        None => TopoInfo {
            version: nvl72_engine::topoinfo::WIRE_VERSION,
            gpus_per_tray: 0,
            racks: Vec::new(),
            live_hidden: false,
            placement_off: None,
        },
    };
    let info = TopoInfo {
        placement_off: slurm::placement_off(),
        ..info
    };
    let info = match slurm::private_nodes() {
        true => info.without_live_state(),
        false => info,
    };
    let container = slurm::xmalloc::<b::dynamic_plugin_data_t>();
    // SAFETY: `out` is the out-pointer Slurm passed; `container` is fresh zeroed memory.
    unsafe {
        (*container).data = Box::into_raw(Box::new(info)).cast();
        (*container).plugin_id = super::plugin_id::plugin_id;
        *out = container;
    }
    Ok(())
}

/// # Safety
/// `topoinfo` must be NULL or a pointer this plugin handed out (`get`, `unpack`), not yet freed.
pub unsafe fn free(_: &Call, topoinfo: *mut c_void) -> Result<(), PluginError> {
    if !topoinfo.is_null() {
        // SAFETY: every non-NULL topoinfo we hand out is a Box<TopoInfo> (get and unpack).
        drop(unsafe { Box::from_raw(topoinfo.cast::<TopoInfo>()) });
    }
    Ok(())
}

/// # Safety
/// `topoinfo` must be NULL or ours (see [`free`]), `buffer` NULL or a valid `buf_t`.
pub unsafe fn pack(
    _: &Call,
    topoinfo: *mut c_void,
    buffer: *mut b::buf_t,
    _proto: u16,
) -> Result<(), PluginError> {
    if topoinfo.is_null() || buffer.is_null() {
        return Err(PluginError::Error);
    }
    // SAFETY: topoinfo is our Box<TopoInfo> (see free), borrowed for the call.
    let info = unsafe { &*topoinfo.cast::<TopoInfo>() };
    let mut wire = info.to_wire().into_bytes();
    wire.push(0);
    // SAFETY: packmem copies `len` bytes from our buffer into Slurm's buf_t (packstr format).
    unsafe { b::slurm_packmem(wire.as_mut_ptr().cast(), wire.len() as u32, buffer) };
    Ok(())
}

/// # Safety
/// `out` must be NULL or a writable out-pointer, `buffer` NULL or a valid `buf_t`.
pub unsafe fn unpack(
    _: &Call,
    out: *mut *mut c_void,
    buffer: *mut b::buf_t,
    _proto: u16,
) -> Result<(), PluginError> {
    if out.is_null() || buffer.is_null() {
        return Err(PluginError::Error);
    }
    let mut raw: *mut c_char = slurm::null();
    let mut len = 0u32;
    // SAFETY: unpackstr allocates with xmalloc into `raw`; we copy it and xfree it.
    let text = unsafe {
        if b::slurm_unpackstr_xmalloc_chooser(&mut raw, &mut len, buffer) != slurm::SUCCESS {
            return Err(PluginError::Error);
        }
        let s = slurm::owned_str(raw).unwrap_or_default();
        slurm::xfree(raw);
        s
    };
    match TopoInfo::from_wire(&text) {
        Ok(info) => {
            // SAFETY: `out` is Slurm's out-pointer for the plugin data.
            unsafe { *out = Box::into_raw(Box::new(info)).cast() };
            Ok(())
        }
        Err(e) => {
            log::error!("{e}");
            Err(PluginError::Error)
        }
    }
}

/// # Safety
/// `topoinfo` must be NULL or ours (see [`free`]), `nodes_list` NULL or a C string, `out`
/// NULL or a writable pointer to NULL or an xmalloc'd string the caller will xfree.
pub unsafe fn print(
    call: &Call,
    topoinfo: *mut c_void,
    nodes_list: *mut c_char,
    out: *mut *mut c_char,
) -> Result<(), PluginError> {
    if topoinfo.is_null() || out.is_null() {
        return Err(PluginError::Error);
    }
    // SAFETY: per the function contract.
    let (info, filter) = unsafe {
        (
            &*topoinfo.cast::<TopoInfo>(),
            slurm::str_arg(call, nodes_list),
        )
    };
    let text = match info.render(filter) {
        Ok(t) => t,
        Err(e) => {
            log::error!("{e}");
            return Ok(()); // like topology/block: message, empty output
        }
    };
    // SAFETY: *out is NULL or an xmalloc'd string the caller will xfree; we replace it with
    // the concatenation and free the old one.
    unsafe {
        let prev = *out;
        let old = slurm::owned_str(prev).unwrap_or_default();
        *out = slurm::xstrdup(&(old + &text));
        slurm::xfree(prev);
    }
    Ok(())
}

/// 25.05+: `scontrol show topology unit=<rack or group> node=<nodes>`; the unit, when given,
/// selects (the positional argument now names the topology context, `default`).
///
/// # Safety
/// As [`print`]; `unit` NULL or a C string.
#[cfg(slurm_ctx)]
pub unsafe fn print_unit(
    call: &Call,
    topoinfo: *mut c_void,
    nodes_list: *mut c_char,
    unit: *mut c_char,
    out: *mut *mut c_char,
) -> Result<(), PluginError> {
    // SAFETY: per the function contract.
    let has_unit = unsafe { slurm::str_arg(call, unit) }.is_some_and(|u| !u.trim().is_empty());
    let filter = if has_unit { unit } else { nodes_list };
    // SAFETY: per the function contract.
    unsafe { print(call, topoinfo, filter, out) }
}
