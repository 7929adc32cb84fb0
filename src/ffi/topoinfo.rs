//! `scontrol show topology`: slurmctld builds the rack table under its node read lock and sends
//! it as one packed string; the client's copy of the plugin unpacks and prints it.

use std::ffi::{c_char, c_int, c_void};

use super::bindings as b;
use super::guard::guarded;
use super::slurm;
use super::state;
use crate::topoinfo::TopoInfo;

/// TOPO_DATA_TOPOLOGY_PTR: fills `*out` with a container from Slurm's allocator (the
/// interface xfree()s it) holding a boxed [`TopoInfo`] (freed by `topology_p_topology_free`).
///
/// # Safety
/// `out` must be a valid `dynamic_plugin_data_t **` (slurmctld holds its node read lock).
pub unsafe fn get(out: *mut *mut b::dynamic_plugin_data_t) -> c_int {
    let info = match state::current() {
        Some(st) => TopoInfo::collect(&st.topo, &super::eval::cluster_view()),
        None => TopoInfo {
            version: crate::topoinfo::WIRE_VERSION,
            gpus_per_tray: 0,
            racks: Vec::new(),
        },
    };
    let container = slurm::xmalloc::<b::dynamic_plugin_data_t>();
    // SAFETY: `out` is the out-pointer Slurm passed; `container` is fresh zeroed memory.
    unsafe {
        (*container).data = Box::into_raw(Box::new(info)).cast();
        (*container).plugin_id = super::exports::plugin_id;
        *out = container;
    }
    slurm::SUCCESS
}

#[no_mangle]
pub extern "C" fn topology_p_topology_free(topoinfo: *mut c_void) -> c_int {
    guarded("topology_free", slurm::ERROR, || {
        if !topoinfo.is_null() {
            // SAFETY: every non-NULL topoinfo we hand out is a Box<TopoInfo> (get and unpack).
            drop(unsafe { Box::from_raw(topoinfo.cast::<TopoInfo>()) });
        }
        slurm::SUCCESS
    })
}

#[no_mangle]
pub extern "C" fn topology_p_topology_pack(
    topoinfo: *mut c_void,
    buffer: *mut b::buf_t,
    _proto: u16,
) -> c_int {
    guarded("topology_pack", slurm::ERROR, || {
        if topoinfo.is_null() || buffer.is_null() {
            return slurm::ERROR;
        }
        // SAFETY: topoinfo is our Box<TopoInfo> (see free), borrowed for the call.
        let info = unsafe { &*topoinfo.cast::<TopoInfo>() };
        let mut wire = info.to_wire().into_bytes();
        wire.push(0);
        // SAFETY: packmem copies `len` bytes from our buffer into Slurm's buf_t (packstr format).
        unsafe { b::slurm_packmem(wire.as_mut_ptr().cast(), wire.len() as u32, buffer) };
        slurm::SUCCESS
    })
}

#[no_mangle]
pub extern "C" fn topology_p_topology_unpack(
    out: *mut *mut c_void,
    buffer: *mut b::buf_t,
    _proto: u16,
) -> c_int {
    guarded("topology_unpack", slurm::ERROR, || {
        if out.is_null() || buffer.is_null() {
            return slurm::ERROR;
        }
        let mut raw: *mut c_char = slurm::null();
        let mut len = 0u32;
        // SAFETY: unpackstr allocates with xmalloc into `raw`; we copy it and xfree it.
        let text = unsafe {
            if b::slurm_unpackstr_xmalloc_chooser(&mut raw, &mut len, buffer) != slurm::SUCCESS {
                return slurm::ERROR;
            }
            let s = slurm::str_arg(raw).unwrap_or("").to_string();
            slurm::xfree(raw);
            s
        };
        match TopoInfo::from_wire(&text) {
            Ok(info) => {
                // SAFETY: `out` is Slurm's out-pointer for the plugin data.
                unsafe { *out = Box::into_raw(Box::new(info)).cast() };
                slurm::SUCCESS
            }
            Err(e) => {
                log::error!("{e}");
                slurm::ERROR
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn topology_p_topology_print(
    topoinfo: *mut c_void,
    nodes_list: *mut c_char,
    out: *mut *mut c_char,
) -> c_int {
    guarded("topology_print", slurm::ERROR, || {
        if topoinfo.is_null() || out.is_null() {
            return slurm::ERROR;
        }
        // SAFETY: topoinfo is our Box<TopoInfo>; nodes_list is NULL or a C string.
        let (info, filter) = unsafe { (&*topoinfo.cast::<TopoInfo>(), slurm::str_arg(nodes_list)) };
        let text = match info.render(filter) {
            Ok(t) => t,
            Err(e) => {
                log::error!("{e}");
                return slurm::SUCCESS; // like topology/block: message, empty output
            }
        };
        // SAFETY: *out is NULL or an xmalloc'd string the caller will xfree; we replace it with
        // the concatenation and free the old one.
        unsafe {
            let old = slurm::str_arg(*out).unwrap_or("").to_string();
            let prev = *out;
            *out = slurm::xstrdup(&(old + &text));
            slurm::xfree(prev);
        }
        slurm::SUCCESS
    })
}
