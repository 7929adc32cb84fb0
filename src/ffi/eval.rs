//! `topology_p_eval_nodes`: the engine picks the trays, Slurm's own selection charges them.
//!
//! Flow (inside slurmctld's scheduler, locks already held):
//! 1. Requests that can never fit the racks (bad `--segment`, `-w` across racks) are refused
//!    with ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE, which rejects them at submission.
//! 2. `common_topo_choose_nodes` (Slurm's helper, as in every topology plugin) drops nodes
//!    without usable CPUs and calls back into [`eval_in_racks`], possibly several times.
//! 3. The callback builds a view of the racks from `node_map` and the node table, asks
//!    [`crate::placement::choose`] for ranked node sets, and for each one narrows `node_map` to
//!    it and runs Slurm's generic `eval_nodes`, which charges cores and GRES. The first set
//!    Slurm accepts wins; otherwise the maps are restored and the next set is tried.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::bindings as b;
use super::end_times;
use super::guard::guarded;
use super::slurm::{self, BitmapRef};
use super::state::{self, Loaded};
use crate::config::EndTime;
use crate::demand::{gpus_in_tres, JobShape};
use crate::model::{Capacity, ClusterView, Tray};
use crate::placement::{self, JobRequest, Reject};

#[no_mangle]
pub extern "C" fn topology_p_eval_nodes(te: *mut b::topology_eval_t) -> c_int {
    guarded("eval_nodes", slurm::ERROR, || {
        if te.is_null() {
            return slurm::ERROR;
        }
        EVAL.fetch_add(1, Ordering::Relaxed);
        // SAFETY: slurmctld passes a fully initialised topology_eval_t whose job, details and
        // bitmaps stay valid for this call (it holds the job and node locks).
        unsafe { eval_nodes(te) }
    })
}

/// Counts `topology_p_eval_nodes` calls; `NOT_NOW` holds the count of the call in which the
/// engine found no room. Within one call Slurm's retries only ever offer fewer trays (and no
/// more GPUs or CPUs per tray), so a job that cannot be placed in the first callback cannot be
/// in the later ones either: they return at once instead of redoing the work under the locks.
static EVAL: AtomicU64 = AtomicU64::new(0);
static NOT_NOW: AtomicU64 = AtomicU64::new(u64::MAX);

/// # Safety
/// `te` must be a valid topology_eval_t as passed by cons_tres.
unsafe fn eval_nodes(te: *mut b::topology_eval_t) -> c_int {
    // SAFETY: see the function contract.
    let (job, node_map) = unsafe { ((*te).job_ptr, BitmapRef::new((*te).node_map)) };
    let Some(node_map) = node_map else {
        return slurm::ERROR;
    };
    // Slurm's generic code (every path below) may read slurmctld's idle map, e.g. for
    // bf_busy_nodes; our copy of the helper library has its own placeholder (see slurm.rs).
    // SAFETY: we run under slurmctld's node write lock, which excludes concurrent evaluations
    // and writers of idle_node_bitmap; the copy stays valid for this call (and the callbacks
    // below, which run inside it).
    unsafe { slurm::IDLE_NODE_BITMAP.refresh(std::ptr::addr_of_mut!(b::idle_node_bitmap)) };
    let Some(st) = state::current() else {
        // SAFETY: plain delegation to Slurm's default selection with the same arguments.
        return unsafe { b::common_topo_choose_nodes(te) };
    };
    // SAFETY: job_ptr and its details are valid while the scheduler holds the job lock.
    let (req, _) = unsafe { job_request(te) };
    let outside = |n: &usize| !st.topo.in_any_domain(*n);
    if !node_map.overlaps(&st.rack_nodes) || req.required.iter().any(outside) {
        // No rack node offered (CPU or login partition), or `-w` names a node outside every
        // rack: Slurm's generic selection decides, as topology/default would.
        // SAFETY: as above.
        return unsafe { b::common_topo_choose_nodes(te) };
    }
    if let Err(Reject::Never(why)) = placement::validate(&st.topo, &req) {
        // SAFETY: job is valid (see above).
        log::info!("JobId={}: {why}", unsafe { (*job).job_id });
        return slurm::TOPO_UNAVAILABLE;
    }
    // SAFETY: we hand Slurm's helper our callback; it calls it with the same `te`.
    unsafe {
        (*te).eval_nodes = Some(eval_in_racks);
        (*te).trump_others = true;
        b::common_topo_choose_nodes(te)
    }
}

/// The request as the engine sees it: node counts, segment, `-w` nodes and the totals the
/// job asks for (with how they were derived, for the decision log).
///
/// # Safety
/// `te` must be valid, with a valid `job_ptr`.
unsafe fn job_request(te: *mut b::topology_eval_t) -> (JobRequest, JobShape) {
    // SAFETY: see the function contract; `details` is checked for NULL before each use.
    unsafe {
        let job = (*te).job_ptr;
        let details = (*job).details;
        let (segment, required, shape) = if details.is_null() {
            (0, Vec::new(), JobShape::default())
        } else {
            let d = &*details;
            let required = BitmapRef::new(d.req_node_bitmap)
                .map(|m| m.ones())
                .unwrap_or_default();
            // tres_per_job/tres_per_task are NULL or NUL-terminated strings of the job record,
            // read (not kept) under the job lock.
            let gpus = |tres| slurm::str_arg(tres).map_or(0, gpus_in_tres);
            let shape = JobShape {
                gpus_per_job: gpus((*job).tres_per_job),
                gpus_per_task: gpus((*job).tres_per_task),
                num_tasks: d.num_tasks,
                ntasks_per_node: if u32::from(d.ntasks_per_node) == b::NO_VAL16 {
                    0
                } else {
                    u32::from(d.ntasks_per_node)
                },
                min_cpus: d.min_cpus,
            };
            (d.segment_size, required, shape)
        };
        let min = (*te).min_nodes.max(1) as usize;
        let req = JobRequest {
            min_nodes: min,
            max_nodes: shape.max_nodes(min, ((*te).max_nodes as usize).max(min)),
            segment: (segment != 0 && u32::from(segment) != b::NO_VAL16)
                .then_some(segment as usize),
            required,
            demand: shape.demand(),
            ends_at: None,
        };
        (req, shape)
    }
}

/// The live state of every tray, none of them offered (for `scontrol show topology`).
pub fn cluster_view() -> ClusterView {
    let trays = (0..slurm::node_count())
        .map(|i| tray(i, false, None))
        .collect();
    ClusterView {
        trays,
        ..ClusterView::default()
    }
}

/// The offered trays (`node_map`) with their live state and what each offers this job
/// (`avail_res_array`); other trays stay "not offered", which is all the engine reads of
/// them. Reads the node table only for offered trays.
///
/// A tray without an entry there is taken as a whole free tray (`unknown`): the engine then
/// offers it, and Slurm's own check decides, rather than making the job wait for ever.
///
/// # Safety
/// `avail` must be NULL or cons_tres's per-node array of at least `node_count()` entries,
/// each NULL or valid, as in the `topology_eval_t` of the current eval.
unsafe fn offered_view(
    node_map: BitmapRef,
    avail: *mut *mut b::avail_res_t,
    unknown: Capacity,
) -> ClusterView {
    let mut trays = vec![Tray::default(); slurm::node_count()];
    for n in node_map.ones() {
        if let Some(t) = trays.get_mut(n) {
            // SAFETY: n < node_count() (checked by get_mut), per the contract above.
            let res = unsafe {
                (!avail.is_null())
                    .then(|| *avail.add(n))
                    .filter(|r| !r.is_null())
                    .map(|r| ((*r).avail_gpus, (*r).avail_cpus))
            };
            *t = tray(n, true, res.or(Some((unknown.gpus, unknown.cpus))));
        }
    }
    ClusterView {
        trays,
        ..ClusterView::default()
    }
}

/// A tray's state; `res` is (GPUs, CPUs) this job could use there, when Slurm said.
fn tray(node: usize, candidate: bool, res: Option<(u16, u16)>) -> Tray {
    let state = slurm::node_state(node).unwrap_or(0);
    let (gpus, cpus) = res.unwrap_or((0, 0));
    Tray {
        candidate,
        unavailable: slurm::state_unavailable(state),
        in_use: slurm::state_in_use(state),
        gpus,
        cpus,
    }
}

/// Called by Slurm's `eval_nodes` dispatcher (from `common_topo_choose_nodes`).
///
/// # Safety
/// `te` must be the topology_eval_t that `topology_p_eval_nodes` handed to Slurm.
unsafe extern "C" fn eval_in_racks(te: *mut b::topology_eval_t) -> c_int {
    guarded("eval_in_racks", slurm::ERROR, || match state::current() {
        // SAFETY: called by Slurm with the topology_eval_t we were given.
        Some(st) => unsafe { place(te, &st) },
        None => slurm::ERROR,
    })
}

/// # Safety
/// `te` must be the valid topology_eval_t of the current eval.
unsafe fn place(te: *mut b::topology_eval_t, st: &Arc<Loaded>) -> c_int {
    if NOT_NOW.load(Ordering::Relaxed) == EVAL.load(Ordering::Relaxed) {
        return slurm::ERROR; // no room in this evaluation already (see NOT_NOW)
    }
    // SAFETY: see the function contract; every pointer below comes from `te`.
    unsafe {
        let Some(node_map) = BitmapRef::new((*te).node_map) else {
            return slurm::ERROR;
        };
        let job_id = (*(*te).job_ptr).job_id;
        let (mut req, shape) = job_request(te);
        let mut view = offered_view(node_map, (*te).avail_res_array, st.topo.full_tray);
        if st.topo.policy.end_time != EndTime::Off {
            // When jobs on each tray end; cached between changes of the job table. The
            // scheduler holds the job lock during eval, as busy_until requires.
            view.now = end_times::now();
            view.busy_until = end_times::busy_until().unwrap_or_default();
            req.ends_at = end_times::ends_at((*te).job_ptr, view.now);
        }
        let alternatives = match placement::choose(&st.topo, &view, &req) {
            Ok(a) => a,
            Err(Reject::Never(why)) => {
                log::info!("JobId={job_id}: {why}");
                return slurm::TOPO_UNAVAILABLE;
            }
            Err(Reject::NotNow(why)) => {
                NOT_NOW.store(EVAL.load(Ordering::Relaxed), Ordering::Relaxed);
                if log::log_enabled!(log::Level::Debug) {
                    log::debug!("JobId={job_id}: waits, {why}; demand {}", shape.explain());
                }
                return slurm::ERROR;
            }
        };
        let level = if st.topo.policy.log_decisions {
            log::Level::Info
        } else {
            log::Level::Debug
        };
        // Only needed to try a next alternative: after our callback returns, Slurm's
        // common_topo_choose_nodes ORs its own copies of node_map and avail_core back in.
        let saved = (alternatives.len() > 1).then(|| Saved::take(te));
        for i in 0..alternatives.len() {
            let alt = alternatives.placement(i);
            node_map.clear_all();
            for &n in &alt.nodes {
                node_map.set(n);
            }
            (*te).trump_others = false;
            (*te).eval_nodes = None;
            let rc = b::eval_nodes(te);
            (*te).trump_others = true;
            (*te).eval_nodes = Some(eval_in_racks);
            if rc == slurm::SUCCESS {
                // Describing the placement allocates: only when the line is logged.
                if log::log_enabled!(level) {
                    log::log!(
                        level,
                        "JobId={job_id} nodes={}-{} segment={} trays>={} ({}) -> {} ({}, choice {} of {})",
                        req.min_nodes,
                        req.max_nodes,
                        req.segment.unwrap_or(0),
                        alternatives.trays_needed,
                        shape.explain(),
                        alt.describe(&st.topo),
                        if alt.exact { "exact" } else { "within" },
                        i + 1,
                        alternatives.len()
                    );
                }
                return rc;
            }
            if let Some(saved) = saved.as_ref().filter(|_| i + 1 < alternatives.len()) {
                saved.restore(te);
            }
        }
        log::debug!(
            "JobId={job_id}: none of {} rack choices satisfies CPUs/GRES",
            alternatives.len()
        );
        slurm::ERROR
    }
}

/// What one try of Slurm's `eval_nodes` may change and the next try needs back.
struct Saved {
    node_map: *mut b::bitstr_t,
    avail_core: *mut *mut b::bitstr_t,
    max_nodes: u32,
}

impl Saved {
    /// # Safety
    /// `te` must be valid.
    unsafe fn take(te: *mut b::topology_eval_t) -> Saved {
        // SAFETY: bit_copy/copy_core_array duplicate valid Slurm structures.
        unsafe {
            Saved {
                node_map: b::slurm_bit_copy((*te).node_map),
                avail_core: b::copy_core_array((*te).avail_core),
                max_nodes: (*te).max_nodes,
            }
        }
    }

    /// Puts back the nodes and cores a failed try removed (tries only ever clear bits).
    ///
    /// # Safety
    /// `te` must be the one `take` copied.
    unsafe fn restore(&self, te: *mut b::topology_eval_t) {
        // SAFETY: same-sized copies made by `take` from this `te`.
        unsafe {
            b::slurm_bit_copybits((*te).node_map, self.node_map);
            b::core_array_or((*te).avail_core, self.avail_core);
            (*te).max_nodes = self.max_nodes;
        }
    }
}

impl Drop for Saved {
    fn drop(&mut self) {
        // SAFETY: both copies were allocated by Slurm in `take` and are freed exactly once.
        unsafe {
            b::slurm_bit_free(&mut self.node_map);
            b::free_core_array(&mut self.avail_core);
        }
    }
}
