//! Trying one rack choice with Slurm's generic `eval_nodes`, and undoing what a failed try
//! changed before the next choice is tried.
//!
//! A failed `eval_nodes` leaves `topology_eval_t` lowered: `node_map` narrowed, cores cleared
//! in `avail_core`, `max_nodes`, `avail_cpus` and `gres_per_job` changed, and on the nodes it
//! looked at, `avail_res_array` counts (CPUs, cores per socket) and the per-socket GPU counts
//! of `sock_gres_list`. [`Attempt`] saves all of that for the nodes of its choice and puts it
//! back when dropped, so every path (a failed try, an early return, a panic) restores it.
//! What Slurm's eval reads only (`job_ptr`, `mc_ptr`, `cr_type`, ...) is not saved.
//!
//! This is the only module that writes `topology_eval_t` (besides Slurm's own helpers): the
//! callback and `trump_others` around Slurm's retry loop ([`choose_with`]), the 26.05
//! `eval_action` directive ([`report`]), and a try and its undo ([`Offer`], [`Attempt`]).

use std::ffi::{c_int, c_void};
use std::marker::PhantomData;

use super::bindings as b;
use super::call::Call;
use super::error::{Failure, PluginError};
use super::guard::callback;
use super::slurm::{self, Bitmap, BitmapRef};
use super::topo_eval::TopoEval;

/// Slurm's callback type for the placement algorithm (`topology_eval_t.eval_nodes`).
pub type EvalFn = unsafe extern "C" fn(*mut b::topology_eval_t) -> c_int;

/// Runs Slurm's helper `common_topo_choose_nodes` with `callback` as the placement algorithm
/// (`trump_others` set, so every pass reaches it), then puts Slurm's own fields back.
pub fn choose_with(te: TopoEval<'_>, callback: EvalFn) -> c_int {
    let raw = te.as_ptr();
    // SAFETY: `te` is valid and ours for the call (TopoEval's contract); the helper gets our
    // callback for this call only and calls it with the same `te`.
    let before = unsafe {
        let before = ((*raw).eval_nodes, (*raw).trump_others);
        (*raw).eval_nodes = Some(callback);
        (*raw).trump_others = true;
        before
    };
    let rc = te.choose_nodes();
    // SAFETY: as above; no Rust code that could panic ran since the fields were set, except
    // inside the callback's own guard.
    unsafe { ((*raw).eval_nodes, (*raw).trump_others) = before };
    rc
}

/// 26.05: sets the directive Slurm's retry loop reads after a failed call.
#[cfg(slurm_eval_action)]
pub fn set_eval_action(te: TopoEval<'_>, action: b::eval_action_t) {
    // SAFETY: `te` is valid and ours for the call (TopoEval's contract).
    unsafe { (*te.as_ptr()).eval_action = action };
}

/// The error for `failure`; on 26.05 also sets its retry-loop directive (see [`Failure`]).
pub fn report(te: TopoEval<'_>, failure: Failure) -> PluginError {
    #[cfg(slurm_eval_action)]
    {
        let (action, error) = failure.directive(te.first_pass());
        set_eval_action(te, action);
        error
    }
    #[cfg(not(slurm_eval_action))]
    {
        let _ = te;
        failure.error()
    }
}

/// The evaluation state at the start of our callback.
pub struct Offer<'c> {
    te: TopoEval<'c>,
    node_map: BitmapRef<'c>,
    offered: Bitmap,
    max_nodes: u32,
    avail_cpus: u16,
    gres_per_job: bool,
    trump_others: bool,
    eval_nodes: Option<EvalFn>,
    _call: PhantomData<&'c Call<'c>>,
}

impl<'c> Offer<'c> {
    /// None when Slurm passed no `node_map`.
    pub fn take(call: &Call<'c>, te: TopoEval<'c>) -> Option<Offer<'c>> {
        let node_map = te.node_map(call)?;
        // SAFETY: `te` is valid and ours for the call (TopoEval's contract); plain reads.
        let (max_nodes, avail_cpus, gres_per_job, trump_others, eval_nodes) = unsafe {
            let r = &*te.as_ptr();
            (
                r.max_nodes,
                r.avail_cpus,
                r.gres_per_job,
                r.trump_others,
                r.eval_nodes,
            )
        };
        Some(Offer {
            te,
            node_map,
            offered: node_map.to_owned(),
            max_nodes,
            avail_cpus,
            gres_per_job,
            trump_others,
            eval_nodes,
            _call: PhantomData,
        })
    }

    /// Saves the state of `nodes`, narrows `node_map` to them and turns our callback off, so
    /// that [`Attempt::run`] gets Slurm's own selection over exactly this choice.
    pub fn attempt(&self, nodes: &[usize]) -> Attempt<'_, 'c> {
        let mut attempt = Attempt {
            offer: self,
            saved: Saved::default(),
            kept: false,
        };
        let te = self.te.as_ptr();
        for &n in nodes.iter().filter(|&&n| n < slurm::node_count()) {
            // SAFETY: `te` is valid and ours for the call (TopoEval's contract), n < node_count.
            unsafe { attempt.saved.node(te, n) };
        }
        self.node_map.clear_all();
        for &n in nodes {
            self.node_map.set(n);
        }
        // SAFETY: as above.
        unsafe {
            (*te).trump_others = false;
            (*te).eval_nodes = None;
        }
        attempt
    }
}

/// One try of Slurm's selection on one rack choice; dropping it undoes the try unless it
/// succeeded, and always hands the callback back to Slurm's retry loop.
pub struct Attempt<'o, 'c> {
    offer: &'o Offer<'c>,
    saved: Saved,
    kept: bool,
}

impl Attempt<'_, '_> {
    /// Runs Slurm's `eval_nodes`; on success its choice (cores, GRES) is kept.
    pub fn run(mut self) -> c_int {
        // SAFETY: `te` is valid and ours for the call (TopoEval's contract), with node_map
        // narrowed to this choice and our callback off, so eval_nodes does not recurse.
        let rc = unsafe { b::eval_nodes(self.offer.te.as_ptr()) };
        self.kept = rc == slurm::SUCCESS;
        rc
    }
}

impl Drop for Attempt<'_, '_> {
    fn drop(&mut self) {
        let o = self.offer;
        let te = o.te.as_ptr();
        // SAFETY: `te` is valid and ours for the call (TopoEval's contract); `saved` holds
        // pointers into its arrays, which eval_nodes never reallocates.
        unsafe {
            (*te).trump_others = o.trump_others;
            (*te).eval_nodes = o.eval_nodes;
            if self.kept {
                return;
            }
            self.saved.restore(te);
            o.node_map.copy_from(&o.offered);
            (*te).max_nodes = o.max_nodes;
            (*te).avail_cpus = o.avail_cpus;
            (*te).gres_per_job = o.gres_per_job;
            // 26.05: what Slurm's retry loop reads if nothing sets it after us (a panic
            // unwinding through here): stop, rather than retry a call that failed that way.
            // Normal failures set their own directive after the last attempt.
            #[cfg(slurm_eval_action)]
            {
                (*te).eval_action = b::eval_action_t_EVAL_ACTION_BREAK;
            }
        }
    }
}

/// Per-node state of one choice, in flat vectors (one allocation each, not one per node).
#[derive(Default)]
struct Saved {
    cores: Vec<(usize, Bitmap)>,
    res: Vec<ResSave>,
    cores_per_sock: Vec<u16>,
    gres: Vec<GresSave>,
    gres_by_sock: Vec<u64>,
}

/// The counts of one `avail_res_t` (pointers are left alone: Slurm's eval never moves them).
struct ResSave {
    res: *mut b::avail_res_t,
    avail_cpus: u16,
    avail_gpus: u16,
    /// `avail_res_cnt` (CPUs + GPUs) up to 25.05, `avail_res_prod` (CPUs x GPUs) from 25.11.
    #[cfg(not(slurm_jobinfo))]
    avail_res_cnt: u16,
    #[cfg(slurm_jobinfo)]
    avail_res_prod: u64,
    gres_min_cpus: u32,
    gres_max_tasks: u32,
    max_cpus: u16,
    min_cpus: u16,
    spec_threads: u16,
    /// `cores_per_sock[at..at + sock_cnt]` holds `avail_cores_per_sock`.
    at: usize,
    sock_cnt: usize,
}

/// The counts of one `sock_gres_t`.
struct GresSave {
    gres: *mut b::sock_gres_t,
    cnt_any_sock: u64,
    max_node_gres: u64,
    total_cnt: u64,
    total_cnt_before_filter: u64,
    /// `gres_by_sock[at..at + sock_cnt]` holds `cnt_by_sock`.
    at: usize,
    sock_cnt: usize,
}

impl Saved {
    /// # Safety
    /// `te` valid and exclusively ours, `n < node_record_count`.
    unsafe fn node(&mut self, te: *mut b::topology_eval_t, n: usize) {
        // SAFETY: per the function contract: the arrays have node_record_count entries, each
        // NULL or valid; per-socket arrays have `sock_cnt` entries.
        unsafe {
            let cores = (*te).avail_core;
            if !cores.is_null() && !(*cores.add(n)).is_null() {
                self.cores.push((n, Bitmap::copy_of(*cores.add(n))));
            }
            let array = (*te).avail_res_array;
            if array.is_null() || (*array.add(n)).is_null() {
                return;
            }
            let res = *array.add(n);
            let r = &*res;
            let sock_cnt = if r.avail_cores_per_sock.is_null() {
                0
            } else {
                usize::from(r.sock_cnt)
            };
            let at = self.cores_per_sock.len();
            self.cores_per_sock
                .extend_from_slice(slice(r.avail_cores_per_sock, sock_cnt));
            self.res.push(ResSave {
                res,
                avail_cpus: r.avail_cpus,
                avail_gpus: r.avail_gpus,
                #[cfg(not(slurm_jobinfo))]
                avail_res_cnt: r.avail_res_cnt,
                #[cfg(slurm_jobinfo)]
                avail_res_prod: r.avail_res_prod,
                gres_min_cpus: r.gres_min_cpus,
                gres_max_tasks: r.gres_max_tasks,
                max_cpus: r.max_cpus,
                min_cpus: r.min_cpus,
                spec_threads: r.spec_threads,
                at,
                sock_cnt,
            });
            if !r.sock_gres_list.is_null() {
                self.sock_gres(r.sock_gres_list);
            }
        }
    }

    /// Saves the counts of every `sock_gres_t` of one node's `sock_gres_list`.
    ///
    /// # Safety
    /// `list` must be a valid list of valid `sock_gres_t`, each `cnt_by_sock` NULL or of
    /// `sock_cnt` entries, and exclusively ours for the call.
    unsafe fn sock_gres(&mut self, list: *mut b::list_t) {
        let mut found: Vec<*mut b::sock_gres_t> = Vec::new();
        // SAFETY: a valid list (function contract); the walker only pushes into `found`,
        // which outlives the walk.
        unsafe {
            b::slurm_list_for_each_ro(
                list,
                Some(collect_sock_gres),
                std::ptr::addr_of_mut!(found).cast(),
            )
        };
        for g in found {
            // SAFETY: the list's entries are valid `sock_gres_t` (function contract).
            let s = unsafe { &*g };
            let sock_cnt = if s.cnt_by_sock.is_null() {
                0
            } else {
                usize::try_from(s.sock_cnt).unwrap_or(0)
            };
            let at = self.gres_by_sock.len();
            // SAFETY: `cnt_by_sock` has `sock_cnt` entries when not NULL (function contract).
            self.gres_by_sock
                .extend_from_slice(unsafe { slice(s.cnt_by_sock, sock_cnt) });
            self.gres.push(GresSave {
                gres: g,
                cnt_any_sock: s.cnt_any_sock,
                max_node_gres: s.max_node_gres,
                total_cnt: s.total_cnt,
                total_cnt_before_filter: s.total_cnt_before_filter,
                at,
                sock_cnt,
            });
        }
    }

    /// # Safety
    /// `te` must be the one the state was saved from, still valid and exclusively ours.
    unsafe fn restore(&self, te: *mut b::topology_eval_t) {
        // SAFETY: every pointer was read from `te`'s arrays in `node` and is still valid;
        // per-socket arrays keep their `sock_cnt` length.
        unsafe {
            let cores = (*te).avail_core;
            for (n, saved) in &self.cores {
                let live = *cores.add(*n);
                if b::slurm_bit_size(live) == b::slurm_bit_size(saved.as_ptr()) {
                    b::slurm_bit_copybits(live, saved.as_ptr());
                }
            }
            for s in &self.res {
                let r = &mut *s.res;
                r.avail_cpus = s.avail_cpus;
                r.avail_gpus = s.avail_gpus;
                #[cfg(not(slurm_jobinfo))]
                {
                    r.avail_res_cnt = s.avail_res_cnt;
                }
                #[cfg(slurm_jobinfo)]
                {
                    r.avail_res_prod = s.avail_res_prod;
                }
                r.gres_min_cpus = s.gres_min_cpus;
                r.gres_max_tasks = s.gres_max_tasks;
                r.max_cpus = s.max_cpus;
                r.min_cpus = s.min_cpus;
                r.spec_threads = s.spec_threads;
                put_back(
                    &self.cores_per_sock[s.at..s.at + s.sock_cnt],
                    r.avail_cores_per_sock,
                );
            }
            for s in &self.gres {
                let g = &mut *s.gres;
                g.cnt_any_sock = s.cnt_any_sock;
                g.max_node_gres = s.max_node_gres;
                g.total_cnt = s.total_cnt;
                g.total_cnt_before_filter = s.total_cnt_before_filter;
                put_back(&self.gres_by_sock[s.at..s.at + s.sock_cnt], g.cnt_by_sock);
            }
        }
    }
}

/// Copies `saved` back over the C array it was read from.
///
/// # Safety
/// When `saved` is not empty, `to` must point to `saved.len()` writable elements.
unsafe fn put_back<T: Copy>(saved: &[T], to: *mut T) {
    if !saved.is_empty() {
        // SAFETY: per the function contract; `saved` is our own copy, so they do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(saved.as_ptr(), to, saved.len()) };
    }
}

/// A C array as a slice (empty when `len` is 0, whatever the pointer).
///
/// # Safety
/// When `len > 0`, `p` must point to `len` valid elements.
unsafe fn slice<'a, T>(p: *const T, len: usize) -> &'a [T] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: per the function contract.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

callback! {
    /// `list_for_each_ro` over a `sock_gres_list`: collects its `sock_gres_t` pointers into
    /// the `Vec` that `arg` points to.
    fn collect_sock_gres(item: *mut c_void, arg: *mut c_void) -> c_int
        = push_sock_gres, on_panic -1;
}

/// # Safety
/// `arg` must be the `Vec<*mut sock_gres_t>` of `Saved::node`, alive during the walk.
unsafe fn push_sock_gres(_: &Call, item: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: per the function contract.
    unsafe { (*arg.cast::<Vec<*mut b::sock_gres_t>>()).push(item.cast()) };
    0
}
