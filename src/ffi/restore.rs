//! Trying one rack choice with Slurm's generic `eval_nodes`, and undoing what a failed try
//! changed before the next choice is tried.
//!
//! A failed `eval_nodes` leaves `topology_eval_t` lowered: `node_map` narrowed, cores cleared
//! in `avail_core`, `max_nodes`, `avail_cpus` and `gres_per_job` changed, and on the nodes it
//! looked at, `avail_res_array` counts (CPUs, cores per socket) and the per-socket GPU counts
//! of `sock_gres_list`. [`Attempt`] saves all of that for the nodes of its choice and puts it
//! back when dropped, so every path (a failed try, an early return, a panic) restores it.
//! What Slurm's eval reads only (`job_ptr`, `mc_ptr`, `cr_type`, ...) is not saved.

use std::ffi::{c_int, c_void};
use std::marker::PhantomData;

use super::bindings as b;
use super::guard::{callback, Call};
use super::slurm::{self, Bitmap, BitmapRef};

/// The evaluation state at the start of our callback.
pub struct Offer<'c> {
    te: *mut b::topology_eval_t,
    node_map: BitmapRef<'c>,
    offered: Bitmap,
    max_nodes: u32,
    avail_cpus: u16,
    gres_per_job: bool,
    trump_others: bool,
    eval_nodes: Option<unsafe extern "C" fn(*mut b::topology_eval_t) -> c_int>,
    _call: PhantomData<&'c Call<'c>>,
}

impl<'c> Offer<'c> {
    /// # Safety
    /// `te` must be a valid `topology_eval_t` that only this thread accesses for the whole of
    /// `call` (slurmctld's job and node locks), with `avail_core` and `avail_res_array` NULL or
    /// arrays of `node_record_count` entries.
    pub unsafe fn take(call: &Call<'c>, te: *mut b::topology_eval_t) -> Option<Offer<'c>> {
        // SAFETY: per the function contract.
        unsafe {
            let node_map = BitmapRef::new(call, (*te).node_map)?;
            Some(Offer {
                te,
                node_map,
                offered: node_map.to_owned(),
                max_nodes: (*te).max_nodes,
                avail_cpus: (*te).avail_cpus,
                gres_per_job: (*te).gres_per_job,
                trump_others: (*te).trump_others,
                eval_nodes: (*te).eval_nodes,
                _call: PhantomData,
            })
        }
    }

    /// Saves the state of `nodes`, narrows `node_map` to them and turns our callback off, so
    /// that [`Attempt::run`] gets Slurm's own selection over exactly this choice.
    pub fn attempt(&self, nodes: &[usize]) -> Attempt<'_, 'c> {
        let mut attempt = Attempt {
            offer: self,
            saved: Saved::default(),
            kept: false,
        };
        // SAFETY: `te` is valid and ours for the call (see `take`); only nodes < node_count
        // are read, and each array entry is checked for NULL.
        unsafe {
            for &n in nodes.iter().filter(|&&n| n < slurm::node_count()) {
                attempt.saved.node(self.te, n);
            }
            self.node_map.clear_all();
            for &n in nodes {
                self.node_map.set(n);
            }
            (*self.te).trump_others = false;
            (*self.te).eval_nodes = None;
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
        // SAFETY: `te` is valid and ours for the call (see `Offer::take`), with node_map
        // narrowed to this choice and our callback off, so eval_nodes does not recurse.
        let rc = unsafe { b::eval_nodes(self.offer.te) };
        self.kept = rc == slurm::SUCCESS;
        rc
    }
}

impl Drop for Attempt<'_, '_> {
    fn drop(&mut self) {
        let o = self.offer;
        // SAFETY: `te` is valid and ours for the call (see `Offer::take`); `saved` holds
        // pointers into its arrays, which eval_nodes never reallocates.
        unsafe {
            (*o.te).trump_others = o.trump_others;
            (*o.te).eval_nodes = o.eval_nodes;
            if self.kept {
                return;
            }
            self.saved.restore(o.te);
            o.node_map.copy_from(&o.offered);
            (*o.te).max_nodes = o.max_nodes;
            (*o.te).avail_cpus = o.avail_cpus;
            (*o.te).gres_per_job = o.gres_per_job;
            // 26.05: what Slurm's retry loop reads if nothing sets it after us (a panic
            // unwinding through here): stop, rather than retry a call that failed that way.
            // Normal failures set their own directive after the last attempt.
            #[cfg(slurm_eval_action)]
            {
                (*o.te).eval_action = b::eval_action_t_EVAL_ACTION_BREAK;
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
                let mut found: Vec<*mut b::sock_gres_t> = Vec::new();
                b::slurm_list_for_each_ro(
                    r.sock_gres_list,
                    Some(collect_sock_gres),
                    std::ptr::addr_of_mut!(found).cast(),
                );
                for g in found {
                    let s = &*g;
                    let sock_cnt = if s.cnt_by_sock.is_null() {
                        0
                    } else {
                        usize::try_from(s.sock_cnt).unwrap_or(0)
                    };
                    let at = self.gres_by_sock.len();
                    self.gres_by_sock
                        .extend_from_slice(slice(s.cnt_by_sock, sock_cnt));
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
