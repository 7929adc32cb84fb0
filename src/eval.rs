//! `topology_p_eval_nodes`: the engine picks the trays, Slurm's own selection charges them.
//!
//! Flow (inside slurmctld's scheduler, locks already held):
//! 1. Requests that can never fit the racks (bad `--segment`, `-w` across racks) are refused
//!    with ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE, which rejects them at submission.
//! 2. `common_topo_choose_nodes` (Slurm's helper, as in every topology plugin) drops nodes
//!    without usable CPUs and calls back into [`eval_in_racks`], possibly several times.
//! 3. The callback builds a view of the racks from `node_map` and the node table, asks
//!    [`nvl72_engine::placement::plan`] for ranked node sets, and for each one narrows `node_map` to
//!    it and runs Slurm's generic `eval_nodes`, which charges cores and GRES. The first set
//!    Slurm accepts wins; otherwise `restore::Attempt` puts back what the try lowered and the
//!    next set is tried.

use std::collections::BTreeSet;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::bindings as b;
use super::end_times;
use super::error::{Failure, PluginError};
use super::guard::{callback, Call};
use super::job::Job;
use super::restore::{self, Offer};
use super::slurm::{self, Bitmap, BitmapRef};
use super::state::{self, Loaded};
use super::topo_eval::TopoEval;
use nvl72_engine::config::{EndTime, SegmentPlacement, Switches};
use nvl72_engine::demand::{gpus_in_tres, JobShape};
use nvl72_engine::model::{ClusterView, Tray};
use nvl72_engine::offered_view::OfferedView;
use nvl72_engine::placement::{self, JobRequest, Placement, Plan, RackLimit, Reject, WaitReason};

/// Counts `topology_p_eval_nodes` calls; `NOT_NOW` holds the count of the call in which the
/// engine found no room. Within one call Slurm's retries only ever offer fewer trays (and no
/// more GPUs or CPUs per tray), so a job that cannot be placed in the first callback cannot be
/// in the later ones either: they return at once instead of redoing the work under the locks.
static EVAL: AtomicU64 = AtomicU64::new(0);
static NOT_NOW: AtomicU64 = AtomicU64::new(u64::MAX);
/// How that evaluation's first callback reported it ([`NotNow`]): whether the job has
/// `--segment` (26.05 names the reason after it), or waits for its rack limit.
static NOT_NOW_AS: AtomicU8 = AtomicU8::new(NotNow::NoRoom as u8);

/// The failures of a job that cannot be placed now, kept in [`NOT_NOW_AS`] for the later
/// callbacks of the same evaluation.
#[derive(Clone, Copy)]
#[repr(u8)]
enum NotNow {
    NoRoom,
    NoRoomForSegments,
    SwitchLimit,
}

impl NotNow {
    /// Remembers this as the answer for the rest of the evaluation (see [`NOT_NOW`]) and
    /// returns its failure.
    fn remember(self) -> Failure {
        NOT_NOW.store(EVAL.load(Ordering::Relaxed), Ordering::Relaxed);
        NOT_NOW_AS.store(self as u8, Ordering::Relaxed);
        self.failure()
    }

    /// The answer remembered for this evaluation.
    fn recalled() -> Failure {
        match NOT_NOW_AS.load(Ordering::Relaxed) {
            x if x == NotNow::SwitchLimit as u8 => NotNow::SwitchLimit,
            x if x == NotNow::NoRoomForSegments as u8 => NotNow::NoRoomForSegments,
            _ => NotNow::NoRoom,
        }
        .failure()
    }

    fn failure(self) -> Failure {
        match self {
            NotNow::NoRoom => Failure::NoRoom { segment: false },
            NotNow::NoRoomForSegments => Failure::NoRoom { segment: true },
            NotNow::SwitchLimit => Failure::SwitchLimit,
        }
    }
}

// The core's spelling of Slurm's markers for unset and infinite 32-bit fields.
const _: () =
    assert!(placement::SLURM_NO_VAL == b::NO_VAL && placement::SLURM_INFINITE == b::INFINITE);

/// The node sets Slurm's own selection refused in one `topology_p_eval_nodes` call (`EVAL`),
/// with the `first_pass` they were tried in. After a refusal 26.05's retry loop
/// (`common_topo_choose_nodes`) drops one node and calls back, once per dropped node, and
/// before each call it restores `node_map`, `max_nodes` and the cores; our attempt restores
/// the rest. So a set already refused in the same call and pass fails again and is skipped.
/// Without this a job the racks fit but Slurm refuses on every rack (`--contiguous` on
/// fragmented racks) cost free trays × racks selections under the scheduler's write locks.
static REFUSED: Mutex<Refused> = Mutex::new(Refused {
    eval: u64::MAX,
    sets: BTreeSet::new(),
});

struct Refused {
    eval: u64,
    sets: BTreeSet<Tried>,
}

/// A node set tried in one call, and the `first_pass` it was tried in.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Tried {
    /// One rack's piece, named without building its nodes: while the offers of the call
    /// only shrink (one `lineage`, see [`OFFERS`]), a rack's trays left are known by their
    /// count, and the piece is taken from them alike every time.
    Rack {
        lineage: u64,
        first_pass: bool,
        rack: usize,
        trays: usize,
        offered: usize,
    },
    Set {
        first_pass: bool,
        nodes: Vec<usize>,
    },
}

/// Numbers the runs of callbacks whose node maps only shrank; a map that is not a subset of
/// the last one starts a new run (never seen from Slurm's loops, which only drop nodes).
static OFFERS: AtomicU64 = AtomicU64::new(0);

impl Refused {
    /// Forgets the sets of earlier calls (their free cores and trays differ).
    fn of_call(&mut self, eval: u64) -> &mut Self {
        if self.eval != eval {
            self.eval = eval;
            self.sets.clear();
        }
        self
    }
}

/// `topology_p_eval_nodes`.
///
/// # Safety
/// `te` must be NULL or a fully initialised topology_eval_t as cons_tres passes it (the
/// contract of [`TopoEval::new`]: slurmctld holds the job and node locks).
pub unsafe fn eval_nodes(call: &Call, te: *mut b::topology_eval_t) -> Result<(), PluginError> {
    // SAFETY: per the function contract.
    let te = unsafe { TopoEval::new(call, te) }.ok_or(PluginError::Error)?;
    EVAL.fetch_add(1, Ordering::Relaxed);
    let node_map = te.node_map(call).ok_or(PluginError::Error)?;
    // Slurm's generic code (every path below) may read slurmctld's idle map, e.g. for
    // bf_busy_nodes; our copy of the helper library has its own placeholder (see slurm/conf.rs).
    // SAFETY: we run under slurmctld's node write lock, which excludes concurrent evaluations
    // and writers of idle_node_bitmap; the copy stays valid for this call (and the callbacks
    // below, which run inside it).
    unsafe { slurm::IDLE_NODE_BITMAP.refresh(std::ptr::addr_of_mut!(b::idle_node_bitmap)) };
    #[cfg(feature = "fault-injection")]
    if let Some(job) = te.job(call) {
        super::fault::layout_mismatch_if_asked(job);
    }
    let job = te.job(call).filter(|j| j.layout_ok());
    let (Some(st), Some(job)) = (state::current(), job) else {
        return PluginError::check(te.choose_nodes());
    };
    if let Some(part) = job.partition().filter(|p| st.topo.policy.is_flat(p)) {
        // A flat partition (`[policy] flat_partitions`): Slurm's generic selection places the
        // job, as with topology.yaml's `Topology=flat`: no rack rule, no `--segment` check,
        // no NVLink pieces.
        log::log!(
            decision_level(&st),
            "JobId={}: partition {part} is flat; Slurm's generic selection places it",
            job.id()
        );
        return PluginError::check(te.choose_nodes());
    }
    let now = i64::from(end_times::now());
    let req = job_request(call, te, job, st.topo.policy.switches, now).0;
    let outside = |n: &usize| !st.topo.in_any_rack(*n);
    if !node_map.overlaps(&st.rack_nodes) || req.required.iter().any(outside) {
        // No rack node offered (CPU or login partition), or `-w` names a node outside every
        // rack: Slurm's generic selection decides, as topology/default would.
        return PluginError::check(te.choose_nodes());
    }
    if req.switches.is_some() {
        // SAFETY: the job record of this evaluation, under slurmctld's job write lock (the
        // function contract); no reference to the record is alive here.
        unsafe { job.start_switch_wait(now) };
    }
    if let Err(Reject::Never(why)) = placement::validate(&st.topo, &req) {
        log::info!("JobId={}: {why}", job.id());
        return Err(PluginError::TopoUnavailable);
    }
    PluginError::check(restore::choose_with(te, eval_in_racks))?;
    #[cfg(slurm_jobinfo)]
    if super::jobinfo::wants_pieces(job) {
        // node_map is final now.
        let pieces =
            nvl72_engine::allocation::nvlink_pieces(&st.topo, &node_map.ones(), req.segment);
        let names = pieces.iter().map(|p| slurm::node_names(p)).collect();
        // SAFETY: the job record of this evaluation, under the job write lock.
        unsafe { super::jobinfo::attach(job, names) };
    }
    Ok(())
}

/// The request as the engine sees it: node counts, segment, `-w` nodes, the totals the job
/// asks for (with how they were derived, for the decision log) and its rack limit at `now`
/// (its `--switches`, or else `policy`, `[policy] switches`).
fn job_request<'c>(
    call: &Call<'c>,
    te: TopoEval<'c>,
    job: Job<'c>,
    policy: Switches,
    now: i64,
) -> (JobRequest, JobShape) {
    let (segment, required, shape) = match job.details() {
        None => (0, Vec::new(), JobShape::default()),
        Some(d) => {
            let required = d.required(call).map(|m| m.ones()).unwrap_or_default();
            let gpus = |tres: Option<&str>| tres.map_or(0, gpus_in_tres);
            let shape = JobShape {
                gpus_per_job: gpus(job.tres_per_job()),
                gpus_per_task: gpus(job.tres_per_task()),
                num_tasks: d.num_tasks(),
                ntasks_per_node: if u32::from(d.ntasks_per_node()) == b::NO_VAL16 {
                    0
                } else {
                    u32::from(d.ntasks_per_node())
                },
                min_cpus: d.min_cpus(),
            };
            (d.segment_size(), required, shape)
        }
    };
    let min = te.min_nodes().max(1) as usize;
    let segment = (segment != 0 && u32::from(segment) != b::NO_VAL16)
        .then_some(segment as usize)
        // 26.05's block runs a job whose segment is larger than the job as if it had
        // none; earlier series refuse it (placement::validate).
        .filter(|&s| !cfg!(slurm_eval_action) || s <= min);
    let req = JobRequest {
        min_nodes: min,
        max_nodes: shape.max_nodes(min, (te.max_nodes() as usize).max(min)),
        segment,
        required,
        demand: shape.demand(),
        ends_at: None,
        segment_placement: segment_flags(job.bit_flags()),
        switches: RackLimit::of_job(job.switches(), policy, now),
    };
    (req, shape)
}

/// The job's own segment rule from its `bit_flags`: `--spread-segments` and
/// `--consolidate-segments` exist from Slurm 25.11 (`SPREAD_SEGMENTS` and
/// `CONSOLIDATE_SEGMENTS` in slurm.h, `SLURM_BIT(43)` and `SLURM_BIT(44)`: function-like
/// macros, which bindgen cannot read, hence the literals). With both set, block consolidates
/// into the smallest block level that holds the spread segments; racks being the only level
/// here, that is spreading.
fn segment_flags(bit_flags: u64) -> Option<SegmentPlacement> {
    const SPREAD_SEGMENTS: u64 = 1 << 43;
    const CONSOLIDATE_SEGMENTS: u64 = 1 << 44;
    if !cfg!(slurm_jobinfo) {
        None
    } else if bit_flags & SPREAD_SEGMENTS != 0 {
        Some(SegmentPlacement::Spread)
    } else if bit_flags & CONSOLIDATE_SEGMENTS != 0 {
        Some(SegmentPlacement::Consolidate)
    } else {
        None
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

/// The view of the last call, kept for the next one to build in ([`SpareView`]).
static SPARE_VIEW: Mutex<Option<SpareView>> = Mutex::new(None);

/// A view being used, given back to [`SPARE_VIEW`] on every way out of the call (a panic
/// included), so the next call writes into its memory rather than a fresh table of every
/// tray. A call that finds no spare (the first, or a nested one) builds a new view.
#[derive(Default)]
struct SpareView {
    built: OfferedView,
    /// What it was built from, for the next callback of the same evaluation.
    from: Option<BuiltFrom>,
}

/// The evaluation, configuration and node map a view was built from, and its run of
/// shrinking maps ([`OFFERS`]).
struct BuiltFrom {
    eval: u64,
    loaded: Arc<Loaded>,
    map: Bitmap,
    lineage: u64,
}

impl Drop for SpareView {
    fn drop(&mut self) {
        if let Some(mut spare) = SPARE_VIEW.try_lock() {
            *spare = Some(SpareView {
                built: std::mem::take(&mut self.built),
                from: self.from.take(),
            });
        }
    }
}

/// The offered trays (`node_map`) with their live state and what each offers this job
/// (`avail_res_array`); other trays stay "not offered", which is all the engine reads of
/// them. Reads the node table only for offered trays, and counts and indexes the racks as it
/// goes ([`OfferedView`]), so the engine reads no tray again.
///
/// A later callback of the same evaluation (Slurm's retry loop, after it refused every set)
/// offers the same trays less the ones it dropped, with the same state and `avail_res`
/// (Slurm restores the cores, our attempts restore the rest): those trays are withdrawn from
/// the last callback's view instead, which costs a comparison of the two maps and the racks.
///
/// A tray without an entry there is taken as a whole free tray (`unknown`): the engine then
/// offers it, and Slurm's own check decides, rather than making the job wait for ever.
fn offered_view(te: TopoEval<'_>, node_map: BitmapRef<'_>, st: &Arc<Loaded>) -> SpareView {
    let eval = EVAL.load(Ordering::Relaxed);
    let spare = SPARE_VIEW.try_lock().and_then(|mut s| s.take());
    let mut spare = spare.unwrap_or_default();
    let topo = &st.topo;
    let dropped = spare
        .from
        .as_mut()
        .filter(|f| f.eval == eval && Arc::ptr_eq(&f.loaded, st))
        .and_then(|f| f.map.shrink_to(node_map));
    let lineage = match (&dropped, &spare.from) {
        (Some(_), Some(from)) => from.lineage,
        _ => OFFERS.fetch_add(1, Ordering::Relaxed) + 1,
    };
    if let Some(dropped) = dropped {
        if spare.built.withdraw(topo, &dropped) {
            return spare;
        }
    }
    let unknown = topo.full_tray;
    let node_count = slurm::node_count();
    spare.built.reset(topo, node_count);
    let offered = node_map.ones().into_iter().filter(|&n| n < node_count);
    spare.built.offer(
        topo,
        offered.map(|n| {
            let weight = slurm::node_sched_weight(n).unwrap_or(0);
            let res = te.avail_res(n).or(Some((unknown.gpus, unknown.cpus)));
            (n, tray(n, true, res), weight)
        }),
    );
    spare.built.finish(topo);
    spare.from = Some(BuiltFrom {
        eval,
        loaded: Arc::clone(st),
        map: node_map.to_owned(),
        lineage,
    });
    spare
}

/// The longest run of consecutive node indices in `map`.
fn longest_run(map: BitmapRef<'_>) -> usize {
    let (mut best, mut run, mut last) = (0, 0, None);
    for n in map.ones() {
        run = if last.is_some_and(|l: usize| l + 1 == n) {
            run + 1
        } else {
            1
        };
        best = best.max(run);
        last = Some(n);
    }
    best
}

/// A tray's state; `res` is (GPUs, CPUs) this job could use there, when Slurm said.
fn tray(node: usize, offered: bool, res: Option<(u16, u16)>) -> Tray {
    let state = slurm::node_state(node).unwrap_or(0);
    let (gpus, cpus) = res.unwrap_or((0, 0));
    Tray {
        offered,
        unavailable: slurm::state_unavailable(state),
        allocated: slurm::state_allocated(state),
        gpus,
        cpus,
    }
}

callback! {
    /// Called by Slurm's `eval_nodes` dispatcher (from `common_topo_choose_nodes`) with the
    /// topology_eval_t that `topology_p_eval_nodes` handed to Slurm.
    fn eval_in_racks(te: *mut b::topology_eval_t) -> c_int = eval_in_racks_impl, on_panic slurm::ERROR;
}

/// # Safety
/// `te` must be the topology_eval_t of the current `eval_nodes` (see its contract).
unsafe fn eval_in_racks_impl(call: &Call, te: *mut b::topology_eval_t) -> Result<(), PluginError> {
    // SAFETY: per the function contract.
    let te = unsafe { TopoEval::new(call, te) }.ok_or(PluginError::Error)?;
    // 26.05: the directive Slurm's retry loop finds should the call below panic before it
    // sets one (the guard returns an error); every normal return sets its own.
    #[cfg(slurm_eval_action)]
    restore::set_eval_action(te, b::eval_action_t_EVAL_ACTION_BREAK);
    match state::current() {
        Some(st) => place(call, te, &st),
        None => Err(restore::report(te, Failure::NoResources)),
    }
}

/// One callback: the engine's ranked choices, each tried with Slurm's own selection.
fn place<'c>(call: &Call<'c>, te: TopoEval<'c>, st: &Arc<Loaded>) -> Result<(), PluginError> {
    if NOT_NOW.load(Ordering::Relaxed) == EVAL.load(Ordering::Relaxed) {
        // No room in this evaluation already (see NOT_NOW).
        return Err(restore::report(te, NotNow::recalled()));
    }
    let (Some(node_map), Some(job)) = (te.node_map(call), te.job(call)) else {
        return Err(PluginError::Error);
    };
    if job.details().is_some_and(|d| d.contiguous())
        && longest_run(node_map) < te.min_nodes().max(1) as usize
    {
        // `--contiguous` takes one run of consecutive nodes; Slurm's selection refuses any
        // other offer, and its retry loop only ever shrinks the map. Without this a job no
        // run fits was offered every rack once per dropped node (docs/real-slurm-cost.md).
        return Err(restore::report(te, NotNow::NoRoom.remember()));
    }
    let now = end_times::now();
    let (mut req, shape) = job_request(call, te, job, st.topo.policy.switches, i64::from(now));
    let mut built = offered_view(te, node_map, st);
    let lineage = built.from.as_ref().map_or(0, |f| f.lineage);
    let view = &mut built.built.view;
    if st.topo.policy.end_time != EndTime::Off {
        // When jobs on each tray end; cached between changes of the job table. The
        // scheduler holds the job lock during eval, as busy_until requires.
        view.now = now;
        view.busy_until = end_times::busy_until(job).unwrap_or_default();
        req.ends_at = end_times::ends_at(job, view.now);
    }
    let alternatives = match placement::plan(&st.topo, view, &req) {
        Ok(a) => a,
        Err(Reject::Never(why)) => {
            log::info!("JobId={}: {why}", job.id());
            return Err(restore::report(te, Failure::Never));
        }
        Err(Reject::NotNow(why)) => {
            let not_now = match (&why, req.segment) {
                (WaitReason::SwitchLimit { .. }, _) => NotNow::SwitchLimit,
                (_, Some(_)) => NotNow::NoRoomForSegments,
                (_, None) => NotNow::NoRoom,
            };
            if log::log_enabled!(log::Level::Debug) {
                log::debug!(
                    "JobId={}: waits, {why}; demand {}",
                    job.id(),
                    shape.explain()
                );
            }
            return Err(restore::report(te, not_now.remember()));
        }
    };
    let offer = Offer::take(call, te).ok_or(PluginError::Error)?;
    let (eval, first_pass) = (EVAL.load(Ordering::Relaxed), te.first_pass());
    let mut skipped = 0;
    for i in 0..alternatives.len() {
        let (key, alt) = match alternatives.one_rack(i) {
            Some((piece, offered)) => {
                let key = Tried::Rack {
                    lineage,
                    first_pass,
                    rack: piece.rack,
                    trays: piece.trays,
                    offered,
                };
                (key, None)
            }
            None => {
                let alt = alternatives.placement(i);
                let nodes = alt.nodes.clone();
                (Tried::Set { first_pass, nodes }, Some(alt))
            }
        };
        if REFUSED.lock().of_call(eval).sets.contains(&key) {
            skipped += 1;
            continue;
        }
        let alt = alt.unwrap_or_else(|| alternatives.placement(i));
        // Dropping the attempt restores what a failed try lowered (and, on every path,
        // our callback), before the next choice or our return.
        let attempt = offer.attempt(&alt.nodes);
        #[cfg(feature = "fault-injection")]
        super::fault::panic_if_asked(job);
        if attempt.run() == slurm::SUCCESS {
            log_decision(st, job, &req, &shape, &alternatives, (i, &alt));
            return Ok(());
        }
        REFUSED.lock().sets.insert(key);
    }
    log::debug!(
        "JobId={}: none of {} rack choices satisfies CPUs/GRES ({skipped} refused before)",
        job.id(),
        alternatives.len()
    );
    Err(restore::report(te, Failure::NoResources))
}

/// Decision lines are info with `[policy] log_decisions`, else debug.
fn decision_level(st: &Loaded) -> log::Level {
    if st.topo.policy.log_decisions {
        log::Level::Info
    } else {
        log::Level::Debug
    }
}

/// The decision line (info with `log_decisions`, else debug); describing the placement
/// allocates, so only when the line is logged.
fn log_decision(
    st: &Loaded,
    job: Job<'_>,
    req: &JobRequest,
    shape: &JobShape,
    alternatives: &Plan<'_>,
    (i, alt): (usize, &Placement),
) {
    let level = decision_level(st);
    if log::log_enabled!(level) {
        let limit = match req.switches {
            None => String::new(),
            Some(l) if l.lifted => format!(", rack limit {} waited out", l.max_racks),
            Some(l) => format!(", rack limit {}", l.max_racks),
        };
        log::log!(
            level,
            "JobId={} nodes={}-{} segment={} trays>={} ({}) -> {} ({}, choice {} of {}{limit})",
            job.id(),
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
}
