//! The symbols Slurm's plugin loader resolves (`plugin_*`, `init`, `fini` and the
//! `topology_p_*` operations of the Slurm series built for, `src/interfaces/topology.c`
//! `syms[]`: 24.11, 25.05, 25.11 or 26.05, chosen by the `cfg`s build.rs sets).
//!
//! This file is every exported function (the data symbols the loader reads are in
//! `plugin_id`). It denies `unsafe_code`, so a function written here with a bare
//! `#[no_mangle]` does not compile: every symbol comes from [`export!`], which wraps its
//! implementation in the panic guard. The implementations live in `ops` (plugin life cycle
//! and lookups), `eval` (placement) and `topoinfo` (`scontrol show topology`).
#![deny(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

use super::bindings as b;
#[cfg(slurm_ctx)]
use super::ctx;
use super::guard::export;
#[cfg(slurm_jobinfo)]
use super::jobinfo;
use super::slurm;
use super::{eval, ops, topoinfo};

// Operations with the same signature in every supported series.
export! {
    fn init() -> c_int = ops::init, on_panic slurm::ERROR;
    fn fini() -> c_int = ops::fini, on_panic slurm::ERROR;
    fn topology_p_eval_nodes(te: *mut b::topology_eval_t) -> c_int
        = eval::eval_nodes, on_panic slurm::ERROR;
}

// Up to 25.05: the topoinfo calls' first names.
#[cfg(not(slurm_jobinfo))]
export! {
    fn topology_p_topology_free(topoinfo: *mut c_void) -> c_int
        = topoinfo::free, on_panic slurm::ERROR;
    fn topology_p_topology_pack(topoinfo: *mut c_void, buffer: *mut b::buf_t, proto: u16) -> c_int
        = topoinfo::pack, on_panic slurm::ERROR;
    fn topology_p_topology_unpack(out: *mut *mut c_void, buffer: *mut b::buf_t, proto: u16) -> c_int
        = topoinfo::unpack, on_panic slurm::ERROR;
}

// 24.11: no topology context.
#[cfg(not(slurm_ctx))]
export! {
    fn topology_p_build_config() -> c_int = ops::build_config, on_panic slurm::ERROR;
    fn topology_p_whole_topo(node_mask: *mut b::bitstr_t) -> c_int
        = ops::whole_topo, on_panic slurm::ERROR;
    fn topology_p_get_bitmap(name: *mut c_char) -> *mut b::bitstr_t
        = ops::get_bitmap, on_panic slurm::null();
    fn topology_p_generate_node_ranking() -> bool
        = ops::generate_node_ranking, on_panic false;
    fn topology_p_get_node_addr(
        node_name: *mut c_char,
        addr: *mut *mut c_char,
        pattern: *mut *mut c_char,
    ) -> c_int = ops::get_node_addr, on_panic slurm::ERROR;
    fn topology_p_split_hostlist(
        hl: *mut b::hostlist_t,
        sp_hl: *mut *mut *mut b::hostlist_t,
        count: *mut c_int,
        tree_width: u16,
    ) -> c_int = ops::split_hostlist, on_panic slurm::ERROR;
    fn topology_p_get(kind: u32, data: *mut c_void) -> c_int = ops::get, on_panic slurm::ERROR;
    fn topology_p_get_fragmentation(node_mask: *mut b::bitstr_t) -> u32
        = ops::get_fragmentation, on_panic 0;
    fn topology_p_topology_print(
        topoinfo: *mut c_void,
        nodes_list: *mut c_char,
        out: *mut *mut c_char,
    ) -> c_int = topoinfo::print, on_panic slurm::ERROR;
}

// 25.05+: every operation gets the topology context (`void *` is its plugin_ctx, which this
// plugin does not use: there is one rack table per process).
#[cfg(slurm_ctx)]
export! {
    fn topology_p_build_config(tctx: *mut b::topology_ctx_t) -> c_int
        = ctx::build_config, on_panic slurm::ERROR;
    fn topology_p_destroy_config(tctx: *mut b::topology_ctx_t) -> c_int
        = ctx::destroy_config, on_panic slurm::ERROR;
    fn topology_p_add_rm_node(
        node: *mut b::node_record_t,
        unit: *mut c_char,
        tctx: *mut b::topology_ctx_t,
    ) -> c_int = ctx::add_rm_node, on_panic slurm::ERROR;
    fn topology_p_whole_topo(node_mask: *mut b::bitstr_t; _ctx: *mut c_void) -> c_int
        = ops::whole_topo, on_panic slurm::ERROR;
    fn topology_p_get_bitmap(name: *mut c_char; _ctx: *mut c_void) -> *mut b::bitstr_t
        = ops::get_bitmap, on_panic slurm::null();
    fn topology_p_generate_node_ranking(tctx: *mut b::topology_ctx_t) -> bool
        = ctx::generate_node_ranking, on_panic false;
    fn topology_p_get_node_addr(
        node_name: *mut c_char,
        addr: *mut *mut c_char,
        pattern: *mut *mut c_char;
        _ctx: *mut c_void,
    ) -> c_int = ops::get_node_addr, on_panic slurm::ERROR;
    fn topology_p_split_hostlist(
        hl: *mut b::hostlist_t,
        sp_hl: *mut *mut *mut b::hostlist_t,
        count: *mut c_int,
        tree_width: u16;
        _ctx: *mut c_void,
    ) -> c_int = ops::split_hostlist, on_panic slurm::ERROR;
    fn topology_p_get(kind: u32, data: *mut c_void; _ctx: *mut c_void) -> c_int
        = ops::get, on_panic slurm::ERROR;
    fn topology_p_get_fragmentation(node_mask: *mut b::bitstr_t; _ctx: *mut c_void) -> u32
        = ops::get_fragmentation, on_panic 0;
}

// 25.05: print gains the unit filter.
#[cfg(all(slurm_ctx, not(slurm_jobinfo)))]
export! {
    fn topology_p_topology_print(
        topoinfo: *mut c_void,
        nodes_list: *mut c_char,
        unit: *mut c_char,
        out: *mut *mut c_char,
    ) -> c_int = topoinfo::print_unit, on_panic slurm::ERROR;
}

// 25.11+: topoinfo_* names, per-job NVLink-domain pieces (IMEX channels), a node's rack.
#[cfg(slurm_jobinfo)]
export! {
    fn topology_p_topoinfo_free(topoinfo: *mut c_void) -> c_int
        = topoinfo::free, on_panic slurm::ERROR;
    fn topology_p_topoinfo_pack(topoinfo: *mut c_void, buffer: *mut b::buf_t, proto: u16) -> c_int
        = topoinfo::pack, on_panic slurm::ERROR;
    fn topology_p_topoinfo_unpack(out: *mut *mut c_void, buffer: *mut b::buf_t, proto: u16) -> c_int
        = topoinfo::unpack, on_panic slurm::ERROR;
    fn topology_p_topoinfo_print(
        topoinfo: *mut c_void,
        nodes_list: *mut c_char,
        unit: *mut c_char,
        out: *mut *mut c_char,
    ) -> c_int = topoinfo::print_unit, on_panic slurm::ERROR;
    fn topology_p_jobinfo_free(jobinfo: *mut c_void) -> ()
        = jobinfo::free, on_panic ();
    fn topology_p_jobinfo_pack(jobinfo: *mut c_void, buffer: *mut b::buf_t, proto: u16) -> ()
        = jobinfo::pack, on_panic ();
    fn topology_p_jobinfo_unpack(out: *mut *mut c_void, buffer: *mut b::buf_t, proto: u16) -> c_int
        = jobinfo::unpack, on_panic slurm::ERROR;
    fn topology_p_jobinfo_get(kind: u32, jobinfo: *mut c_void, data: *mut c_void) -> c_int
        = jobinfo::get, on_panic slurm::ERROR;
    fn topology_p_get_topology_str(
        node: *mut b::node_record_t,
        out: *mut *mut c_char,
        tctx: *mut b::topology_ctx_t,
    ) -> () = ctx::get_topology_str, on_panic ();
}

// 26.05+: the one-node fast path, per-node ranks for task layout.
#[cfg(slurm_eval_action)]
export! {
    fn topology_p_allow_one_node(; _ctx: *mut c_void) -> bool = ctx::allow_one_node, on_panic false;
    fn topology_p_eval_node(te: *mut b::topology_eval_t, node_inx: c_int) -> c_int
        = ctx::eval_node, on_panic slurm::ERROR;
    fn topology_p_get_rank(
        node_bitmap: *mut b::bitstr_t,
        node_rank: *mut *mut u32,
        size: *mut u32;
        _ctx: *mut c_void,
    ) -> c_int = ctx::get_rank, on_panic slurm::ERROR;
}
