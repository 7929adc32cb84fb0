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

use std::ffi::c_int;
use std::sync::Arc;

use super::bindings as b;
use super::call::Call;
use super::end_times;
use super::error::{Failure, PluginError};
use super::guard::callback;
use super::job::Job;
use super::memo::{self, NotNow, Tried};
use super::preemption::{self, Steer};
use super::restore::{self, Offer};
use super::slurm::{self, BitmapRef};
use super::state::{self, Loaded};
use super::topo_eval::TopoEval;
use super::view;
use nvl72_engine::config::{EndTime, SegmentPlacement, Switches};
use nvl72_engine::demand::{gpus_in_tres, JobShape};
use nvl72_engine::placement::{self, JobRequest, Placement, Plan, RackLimit, Reject, WaitReason};

// The core's spelling of Slurm's markers for unset and infinite 32-bit fields.
const _: () =
    assert!(placement::SLURM_NO_VAL == b::NO_VAL && placement::SLURM_INFINITE == b::INFINITE);

/// `topology_p_eval_nodes`.
///
/// # Safety
/// `te` must be NULL or a fully initialised topology_eval_t as cons_tres passes it (the
/// contract of [`TopoEval::new`]: slurmctld holds the job and node locks).
pub unsafe fn eval_nodes(call: &Call, te: *mut b::topology_eval_t) -> Result<(), PluginError> {
    // SAFETY: per the function contract.
    let te = unsafe { TopoEval::new(call, te) }.ok_or(PluginError::Error)?;
    memo::begin();
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
    if let Some(failure) = NotNow::recalled() {
        // No room in this evaluation already (see `memo`).
        return Err(restore::report(te, failure));
    }
    let (Some(node_map), Some(job)) = (te.node_map(call), te.job(call)) else {
        return Err(PluginError::Error);
    };
    if job.details().is_some_and(|d| d.contiguous())
        && longest_run(node_map) < te.min_nodes().max(1) as usize
    {
        // `--contiguous` takes one run of consecutive nodes; Slurm's selection refuses any
        // other offer, and its retry loop only ever shrinks the map. Without this a job no
        // run fits was offered every rack once per dropped node (docs/notebook/real-slurm-cost.md).
        return Err(restore::report(te, NotNow::NoRoom.remember()));
    }
    let now = end_times::now();
    let (mut req, shape) = job_request(call, te, job, st.topo.policy.switches, i64::from(now));
    match preemption::steer(call, job, st, node_map, &req) {
        Steer::Off => {}
        Steer::Refuse => return Err(restore::report(te, Failure::NoResources)),
        Steer::Place(trays) => return take_preemption_plan(call, te, job, &trays),
    }
    let mut built = view::offered_view(te, node_map, st, memo::current());
    let lineage = built.lineage();
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
        Err(reject) => return Err(restore::report(te, not_placed(job, &req, &shape, reject))),
    };
    let decision = Decision {
        st,
        job,
        req: &req,
        shape: &shape,
    };
    try_in_turn(call, te, &decision, &alternatives, lineage)
}

/// The trays of the job's preemption plan, all offered now: Slurm's own selection over
/// exactly them (cores, GRES, memory). Where it refuses them the job waits rather than
/// taking other trays, whose clearing Slurm's order would choose; the plan's patience
/// (`preemption::PATIENCE_SECONDS`) bounds the wait.
fn take_preemption_plan<'c>(
    call: &Call<'c>,
    te: TopoEval<'c>,
    job: Job<'c>,
    trays: &[usize],
) -> Result<(), PluginError> {
    let offer = Offer::take(call, te).ok_or(PluginError::Error)?;
    if offer.attempt(trays).run() == slurm::SUCCESS {
        log::log!(
            wait_level(),
            "JobId={}: takes its preemption plan's trays {}",
            job.id(),
            slurm::node_names(trays)
        );
        return Ok(());
    }
    log::log!(
        wait_level(),
        "JobId={}: Slurm refused its preemption plan's trays {}",
        job.id(),
        slurm::node_names(trays)
    );
    Err(restore::report(te, Failure::NoResources))
}

/// Why the engine placed nothing, logged and remembered for the rest of the evaluation.
fn not_placed(job: Job<'_>, req: &JobRequest, shape: &JobShape, reject: Reject) -> Failure {
    match reject {
        Reject::Never(why) => {
            log::info!("JobId={}: {why}", job.id());
            Failure::Never
        }
        Reject::NotNow(why) => {
            let not_now = match (&why, req.segment) {
                (WaitReason::SwitchLimit { .. }, _) => NotNow::SwitchLimit,
                (_, Some(_)) => NotNow::NoRoomForSegments,
                (_, None) => NotNow::NoRoom,
            };
            let level = wait_level();
            if log::log_enabled!(level) {
                log::log!(
                    level,
                    "JobId={}: waits, {why}; demand {}",
                    job.id(),
                    shape.explain()
                );
            }
            not_now.remember()
        }
    }
}

/// The job being placed and what it asked, for the decision line.
struct Decision<'a, 'c> {
    st: &'a Loaded,
    job: Job<'c>,
    req: &'a JobRequest,
    shape: &'a JobShape,
}

/// Tries the engine's choices in rank order with Slurm's own selection, skipping the sets it
/// refused earlier in this evaluation; the first it accepts wins.
fn try_in_turn<'c>(
    call: &Call<'c>,
    te: TopoEval<'c>,
    decision: &Decision<'_, 'c>,
    alternatives: &Plan<'_>,
    lineage: u64,
) -> Result<(), PluginError> {
    let offer = Offer::take(call, te).ok_or(PluginError::Error)?;
    let first_pass = te.first_pass();
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
        if key.was_refused() {
            skipped += 1;
            continue;
        }
        let alt = alt.unwrap_or_else(|| alternatives.placement(i));
        // Dropping the attempt restores what a failed try lowered (and, on every path,
        // our callback), before the next choice or our return.
        let attempt = offer.attempt(&alt.nodes);
        #[cfg(feature = "fault-injection")]
        super::fault::panic_if_asked(decision.job);
        if attempt.run() == slurm::SUCCESS {
            log_decision(decision, alternatives, (i, &alt));
            return Ok(());
        }
        key.refused();
    }
    log::log!(
        wait_level(),
        "JobId={}: none of {} rack choices satisfies CPUs/GRES ({skipped} refused before)",
        decision.job.id(),
        alternatives.len()
    );
    Err(restore::report(te, Failure::NoResources))
}

/// Decision lines are info with `[policy] log_decisions` or with slurmctld's
/// `DebugFlags=SelectType` (either turns them on: the flag, as topology/block's selection
/// lines come with it, without editing topology.toml; the key, without Slurm's other
/// SelectType lines), else debug.
fn decision_level(st: &Loaded) -> log::Level {
    if st.topo.policy.log_decisions || slurm::debug_select_type() {
        log::Level::Info
    } else {
        log::Level::Debug
    }
}

/// Why a job waits or Slurm refused every choice: info under `DebugFlags=SelectType` (block
/// says "insufficient resources" there), else debug; `log_decisions` logs placements only, as
/// every scheduling pass would repeat these for every waiting job.
fn wait_level() -> log::Level {
    if slurm::debug_select_type() {
        log::Level::Info
    } else {
        log::Level::Debug
    }
}

/// The decision line (at [`decision_level`]); describing the placement
/// allocates, so only when the line is logged.
fn log_decision(
    decision: &Decision<'_, '_>,
    alternatives: &Plan<'_>,
    (i, alt): (usize, &Placement),
) {
    let Decision {
        st,
        job,
        req,
        shape,
    } = decision;
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
