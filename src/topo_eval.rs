//! `TopoEval<'c>`: cons_tres's `topology_eval_t`, borrowed for one call, read through safe
//! accessors.
//!
//! Reads live here; the plugin's writes to the struct (the callback, `trump_others`,
//! `eval_action` and the undo of a failed try) live only in `restore`. Slurm's own helpers,
//! which write it as they always do, get it through [`TopoEval::choose_nodes`] and `restore`.

use std::ffi::c_int;
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::bindings as b;
use super::call::Call;
use super::job::Job;
use super::slurm::{self, BitmapRef};

/// The evaluation state of one `topology_p_eval_nodes` call and its callbacks.
#[derive(Clone, Copy)]
pub struct TopoEval<'c> {
    raw: NonNull<b::topology_eval_t>,
    _call: PhantomData<&'c Call<'c>>,
}

impl<'c> TopoEval<'c> {
    /// # Safety
    /// `raw` must be NULL or a fully initialised `topology_eval_t` as cons_tres passes it, that
    /// only this thread accesses for the whole of `call` (slurmctld's job and node locks): its
    /// job (with details), bitmaps and arrays stay valid; `avail_core` and `avail_res_array`
    /// are NULL or arrays of `node_record_count` entries, each NULL or valid.
    pub unsafe fn new(_call: &Call<'c>, raw: *mut b::topology_eval_t) -> Option<TopoEval<'c>> {
        NonNull::new(raw).map(|raw| TopoEval {
            raw,
            _call: PhantomData,
        })
    }

    /// The struct, for `restore` (its one writer in the plugin) and Slurm's helpers. Anything
    /// that writes through it must keep the constructor's contract.
    pub fn as_ptr(self) -> *mut b::topology_eval_t {
        self.raw.as_ptr()
    }

    fn get(&self) -> &b::topology_eval_t {
        // SAFETY: valid and ours for `'c` (constructor's contract); the reference does not
        // outlive this accessor's caller, and no write happens while it is held.
        unsafe { &*self.raw.as_ptr() }
    }

    pub fn job(self, call: &Call<'c>) -> Option<Job<'c>> {
        // SAFETY: the job record of a valid eval, live for the call (constructor's contract).
        unsafe { Job::new(call, self.get().job_ptr) }
    }

    /// The nodes offered (and, after Slurm's selection, chosen).
    pub fn node_map(self, call: &Call<'c>) -> Option<BitmapRef<'c>> {
        // SAFETY: NULL or a valid bitmap that only this call writes (constructor's contract).
        unsafe { BitmapRef::new(call, self.get().node_map) }
    }

    pub fn min_nodes(self) -> u32 {
        self.get().min_nodes
    }

    pub fn max_nodes(self) -> u32 {
        self.get().max_nodes
    }

    /// The first pass of Slurm's retry loop (on 26.05 the only one allowed a permanent
    /// error; in every series it filters GRES differently).
    pub fn first_pass(self) -> bool {
        self.get().first_pass
    }

    /// (GPUs, CPUs) cons_tres found usable for this job on node `n`, when it said.
    pub fn avail_res(self, n: usize) -> Option<(u16, u16)> {
        let array = self.get().avail_res_array;
        if array.is_null() || n >= slurm::node_count() {
            return None;
        }
        // SAFETY: n < node_record_count, the array's length; each entry is NULL or valid
        // (constructor's contract).
        unsafe {
            let r = *array.add(n);
            (!r.is_null()).then(|| ((*r).avail_gpus, (*r).avail_cpus))
        }
    }

    /// Slurm's default selection (`common_topo_choose_nodes`), with whatever callback is set.
    pub fn choose_nodes(self) -> c_int {
        // SAFETY: the valid, exclusively ours eval this helper is made for (constructor's
        // contract); Slurm's helper keeps that contract.
        unsafe { b::common_topo_choose_nodes(self.as_ptr()) }
    }
}
