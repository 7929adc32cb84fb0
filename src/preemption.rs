//! Least-loss preemption (issue 52): which rack a pending job clears when it can start only by
//! preempting lower-tier work.
//!
//! Slurm's run-now loop (cons_tres `_run_now`, ../shared/reference/preemption.md §1.3)
//! removes its candidates one at a time in its own order (lowest tier, then the smallest job)
//! and asks the topology plugin after each removal; the first placement accepted ends the
//! search, and the victims are the removed candidates that overlap it. Here the plugin reads
//! the same candidate list (`slurm_find_preemptable_jobs`, in the same order), plans the racks
//! whose clearing loses least (`nvl72_engine::placement::preemption_plan`), and accepts only
//! those trays: Slurm's loop then preempts exactly the plan's victims. The same rule answers
//! the will-run call, so `sbatch --test-only` and backfill's plan name the same victims.
//!
//! A job keeps its target until it starts or the target becomes invalid, so it never
//! preempts twice; a plan Slurm's loop does not reach within [`PATIENCE`] is given up and
//! Slurm's order decides, so steering never keeps a job from starting. SUSPEND/gang
//! preemption, `-w` jobs and trays shared by several jobs are left to Slurm (docs/decisions.md).

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use once_cell::sync::Lazy;
use parking_lot::Mutex;

use super::bindings as b;
use super::call::Call;
use super::end_times;
use super::guard::callback;
use super::job::Job;
use super::slurm::{self, BitmapRef};
use super::state::Loaded;
use nvl72_engine::config::PreemptionCost;
use nvl72_engine::placement::{
    checkpoint_interval, pieces_of, preemption_plan, slurm_order_choice, Candidate, JobRequest,
    PreemptionPlan,
};

/// What an evaluation does with a job that might start by preemption.
#[derive(Debug, PartialEq, Eq)]
pub enum Steer {
    /// Not a preemption case (or left to Slurm): the usual placement.
    Off,
    /// The plan's trays are not all offered yet: no placement, so Slurm's loop removes its
    /// next candidate.
    Refuse,
    /// Take exactly these trays.
    Place(Vec<usize>),
}

/// How long a job is steered towards a target none of whose victims has been preempted:
/// after that Slurm's order decides for it (a plan Slurm's loop cannot reach, e.g. a tray
/// Slurm refuses for memory, must not keep the job waiting). Two of Slurm's default backfill
/// intervals and four of its main scheduler's.
pub const PATIENCE_SECONDS: u32 = 60;

/// The plan of one pending job and what it was made from.
struct Target {
    /// `last_job_update` when the plan was made or last checked, and when that was.
    stamp: libc::time_t,
    checked_at: u32,
    /// None: the job has no preemption candidates (at `stamp`).
    plan: Option<PreemptionPlan>,
    /// When the job's first plan with victims was made ([`PATIENCE_SECONDS`] runs from it).
    made_at: u32,
    /// A victim of this plan has been preempted: the plan is kept while they finish, and
    /// [`PATIENCE_SECONDS`] no longer applies.
    cleared: bool,
    /// Given up after [`PATIENCE_SECONDS`]: Slurm's order decides for this job.
    given_up: bool,
}

static TARGETS: Lazy<Mutex<HashMap<u32, Target>>> = Lazy::new(|| Mutex::new(HashMap::new()));
static FIND: OnceLock<usize> = OnceLock::new();
static MODE: OnceLock<usize> = OnceLock::new();

/// Targets kept at most; older entries (jobs long started or gone) are dropped beyond it.
const KEPT: usize = 4096;

/// Slurm's candidate list and preemption mode functions (exported by slurmctld only).
type FindFn = unsafe extern "C" fn(*mut b::job_record_t) -> *mut b::list_t;
type ModeFn = unsafe extern "C" fn(*mut b::job_record_t) -> u16;

fn functions() -> Option<(FindFn, ModeFn)> {
    let find = end_times::global(&FIND, c"slurm_find_preemptable_jobs");
    let mode = end_times::global(&MODE, c"slurm_job_preempt_mode");
    if find == 0 || mode == 0 {
        return None;
    }
    // SAFETY: non-zero dlsym results for these names are slurmctld's functions, whose
    // signatures (preempt.h) are the same from 24.11 to 26.05.
    unsafe {
        Some((
            std::mem::transmute::<usize, FindFn>(find),
            std::mem::transmute::<usize, ModeFn>(mode),
        ))
    }
}

/// Whether `job` takes the plan's trays now, waits for them, or is placed as usual. Called
/// from the eval callback under slurmctld's job and node locks.
pub fn steer<'c>(
    call: &Call<'c>,
    job: Job<'c>,
    st: &Loaded,
    node_map: BitmapRef<'c>,
    req: &JobRequest,
) -> Steer {
    if st.topo.policy.preemption_cost == PreemptionCost::Slurm
        || !slurm::preemption_configured()
        || !job.is_pending()
        || !req.required.is_empty()
    {
        return Steer::Off;
    }
    let offered = node_map.ones();
    // Slurm's preemption paths offer trays that jobs run on (simulated away); so do
    // trays shared by several jobs, which the plan does not count as free. Without either
    // this is a plain test.
    let held = |n: &usize| slurm::node_state(*n).is_some_and(slurm::state_allocated);
    if !offered.iter().any(|n| st.topo.in_any_rack(*n) && held(n)) {
        return Steer::Off;
    }
    let (Some((list, stamp)), Some((find, mode))) = (end_times::job_table(job), functions()) else {
        return Steer::Off;
    };
    let now = end_times::now();
    let mut targets = TARGETS.lock();
    // `last_job_update` has one-second resolution: a target is reused if it was checked
    // after the second of the last update (as end_times does), or earlier in this second
    // (Slurm's loop asks once per candidate it removes: one plan serves them all).
    let fresh = targets.get(&job.id()).is_some_and(|t| {
        t.given_up || t.stamp == stamp && (i64::from(t.checked_at) > stamp || t.checked_at == now)
    });
    if !fresh {
        let found = candidates(call, job, find, mode);
        let kept = targets.remove(&job.id());
        let target = match found {
            Reading::Steerable(found) => {
                let holders = holders(list);
                replan(
                    call, job, st, req, &offered, &found, &holders, kept, stamp, now,
                )
            }
            Reading::LeftToSlurm(why) => {
                if kept.as_ref().map_or(true, |k| k.plan.is_some()) {
                    log::debug!("JobId={}: preemption left to Slurm: {why}", job.id());
                }
                Target {
                    stamp,
                    checked_at: now,
                    plan: None,
                    made_at: now,
                    cleared: false,
                    given_up: false,
                }
            }
        };
        if targets.len() >= KEPT {
            targets.retain(|_, t| now.saturating_sub(t.checked_at) < 3600);
        }
        targets.insert(job.id(), target);
    }
    let Some(target) = targets.get_mut(&job.id()) else {
        return Steer::Off;
    };
    decide(job, st, &offered, target, now)
}

/// The decision with a job's target: take the plan's trays once all are offered,
/// else wait for Slurm to remove the next candidate, unless the plan is given up.
fn decide(job: Job<'_>, st: &Loaded, offered: &[usize], target: &mut Target, now: u32) -> Steer {
    let Some(plan) = target.plan.as_ref().filter(|p| !p.victims.is_empty()) else {
        return Steer::Off;
    };
    if target.given_up {
        return Steer::Off;
    }
    // Checked on every path, the will-run call included: where backfill plans the job for
    // later (a plan tray it may use only then), the run-now loop may never be entered.
    if !target.cleared && now.saturating_sub(target.made_at) > PATIENCE_SECONDS {
        target.given_up = true;
        log::info!(
            "JobId={}: preemption plan for {} not reached by Slurm's loop in {PATIENCE_SECONDS} s; \
             Slurm's order decides",
            job.id(),
            racks_named(st, &plan.racks)
        );
        return Steer::Off;
    }
    if plan.trays.iter().all(|n| offered.binary_search(n).is_ok()) {
        return Steer::Place(plan.trays.clone());
    }
    Steer::Refuse
}

/// The target for a job whose candidates were just read: the kept one while it is still
/// being cleared (a victim already preempted) and still valid, else a new plan (logged).
#[allow(clippy::too_many_arguments)]
fn replan<'c>(
    call: &Call<'c>,
    job: Job<'c>,
    st: &Loaded,
    req: &JobRequest,
    offered: &[usize],
    found: &[Found],
    holders: &[u8],
    kept: Option<Target>,
    stamp: libc::time_t,
    now: u32,
) -> Target {
    let part = job.partition_nodes(call);
    let usable = |n: usize| {
        st.topo.in_any_rack(n)
            && part.map_or(true, |p| p.tester()(n))
            && !slurm::node_state(n).is_some_and(slurm::state_unavailable)
    };
    let is_candidate = |n: usize| found.iter().any(|f| f.candidate.trays.contains(&n));
    let kept = kept.filter(|k| !k.given_up);
    if let Some(mut k) = kept.as_ref().filter(|k| k.plan.is_some()).map(|k| Target {
        plan: k.plan.clone(),
        ..*k
    }) {
        let plan = k.plan.as_ref().expect("filtered on a plan");
        let cleared = plan
            .victims
            .iter()
            .any(|v| !found.iter().any(|f| f.candidate.job == *v));
        let valid = plan
            .trays
            .iter()
            .all(|&n| usable(n) && (holders.get(n) == Some(&0) || is_candidate(n)));
        if cleared && valid {
            (k.stamp, k.checked_at, k.cleared) = (stamp, now, true);
            return k;
        }
    }
    let free: Vec<usize> = offered
        .iter()
        .copied()
        .filter(|&n| holders.get(n) == Some(&0) && usable(n))
        .collect();
    let mut shared = Vec::new();
    let clearable: Vec<Candidate> = found
        .iter()
        .filter(|f| {
            let alone = f
                .candidate
                .trays
                .iter()
                .all(|&n| holders.get(n) == Some(&1));
            if !alone {
                shared.push(f.candidate.job);
            }
            alone && f.requeue_or_cancel
        })
        .map(|f| Candidate {
            trays: f
                .candidate
                .trays
                .iter()
                .copied()
                .filter(|&n| usable(n))
                .collect(),
            ..f.candidate.clone()
        })
        .collect();
    if !shared.is_empty() {
        log::debug!(
            "JobId={}: preemption candidates {shared:?} share trays with other jobs; \
             not counted as clearable",
            job.id()
        );
    }
    let pieces = pieces_of(&st.topo, req);
    let now_s = i64::from(now);
    let plan = preemption_plan(&st.topo, &free, &clearable, pieces, now_s);
    // The same trays and victims again (the job table changed elsewhere; the cost moves
    // with the victims' age): its clock runs on, and it is not logged again.
    let same_as = |k: &PreemptionPlan| {
        plan.as_ref()
            .is_some_and(|p| p.trays == k.trays && p.victims == k.victims)
    };
    let same = kept
        .as_ref()
        .filter(|k| k.plan.as_ref().is_some_and(same_as));
    if let Some(k) = same {
        return Target {
            stamp,
            checked_at: now,
            plan,
            made_at: k.made_at,
            cleared: false,
            given_up: false,
        };
    }
    if let Some(plan) = plan.as_ref().filter(|p| !p.victims.is_empty()) {
        let slurm = slurm_order_choice(&st.topo, &free, &clearable, pieces, now_s);
        log::info!(
            "JobId={}: to start by preemption, clears {} (trays {}): victims {}, cost {}; \
             Slurm's order: {}",
            job.id(),
            racks_named(st, &plan.racks),
            slurm::node_names(&plan.trays),
            jobs_named(&plan.victims),
            cost_named(st, plan.cost),
            slurm.map_or(
                "not modelled for jobs of several racks".into(),
                |(r, v, c)| {
                    format!(
                        "clears {}: victims {}, cost {}",
                        racks_named(st, &[r]),
                        jobs_named(&v),
                        cost_named(st, c)
                    )
                }
            )
        );
    }
    // The patience runs from the job's first plan with victims, whatever plans followed:
    // calls that offer different trays (backfill's will-run, the run-now loop) must not
    // keep restarting it.
    let steered_since = kept
        .as_ref()
        .filter(|k| k.plan.as_ref().is_some_and(|p| !p.victims.is_empty()))
        .map_or(now, |k| k.made_at);
    Target {
        stamp,
        checked_at: now,
        plan,
        made_at: steered_since,
        cleared: false,
        given_up: false,
    }
}

fn racks_named(st: &Loaded, racks: &[usize]) -> String {
    let names: Vec<&str> = racks
        .iter()
        .filter_map(|&r| st.topo.racks.get(r).map(|d| d.name.as_str()))
        .collect();
    names.join(",")
}

fn jobs_named(jobs: &[u32]) -> String {
    let ids: Vec<String> = jobs.iter().map(u32::to_string).collect();
    ids.join(",")
}

fn cost_named(st: &Loaded, cost: nvl72_engine::placement::ClearingCost) -> String {
    let lost = match st.topo.policy.preemption_cost {
        PreemptionCost::Work | PreemptionCost::Slurm => {
            format!("{:.2} GPU-hours", cost.lost as f64 / 3600.0)
        }
        PreemptionCost::Trays => format!("{} trays", cost.lost),
        PreemptionCost::Jobs => String::new(),
    };
    format!("tier {} {lost} {} jobs", cost.priority, cost.jobs).replace("  ", " ")
}

/// A candidate as Slurm lists it, and whether Slurm's run-now loop removes it.
struct Found {
    candidate: Candidate,
    requeue_or_cancel: bool,
}

/// What Slurm's candidate list says of a job.
enum Reading {
    /// The candidates, in Slurm's order (possibly none).
    Steerable(Vec<Found>),
    /// A case the plugin leaves to Slurm, and why.
    LeftToSlurm(&'static str),
}

/// slurm.h's modes (the same values in every series).
const REQUEUE: u16 = b::PREEMPT_MODE_REQUEUE as u16;
const CANCEL: u16 = b::PREEMPT_MODE_CANCEL as u16;
const SUSPEND: u16 = b::PREEMPT_MODE_SUSPEND as u16;
const GANG: u16 = b::PREEMPT_MODE_GANG as u16;

/// Slurm's own candidates for `job` (`slurm_find_preemptable_jobs`), in its order.
fn candidates<'c>(call: &Call<'c>, job: Job<'c>, find: FindFn, mode: ModeFn) -> Reading {
    // SAFETY: the pending job of this evaluation, under the job lock that the function's
    // callers in slurmctld hold as well (`_get_req_features`).
    let list = unsafe { find(job.as_ptr()) };
    if list.is_null() {
        return Reading::Steerable(Vec::new());
    }
    let mut records: Vec<*mut b::job_record_t> = Vec::new();
    // SAFETY: `list` holds job_record_t pointers of job_list; `collect_job` only copies them
    // into `records`, which outlives the call; the list is ours to destroy after.
    unsafe {
        b::slurm_list_for_each_ro(
            list,
            Some(collect),
            std::ptr::addr_of_mut!(records).cast::<c_void>(),
        );
        b::slurm_list_destroy(list);
    }
    let qos = slurm::preempt_by_qos();
    let mut found = Vec::with_capacity(records.len());
    for raw in records {
        // SAFETY: a record of job_list, live under the job lock for this call.
        let Some(c) = (unsafe { Job::new(call, raw) }) else {
            continue;
        };
        // SAFETY: as above; the function only reads the record and the preempt plugin's
        // configuration.
        let m = unsafe { mode(raw) };
        if m & (SUSPEND | GANG) != 0 && m & (REQUEUE | CANCEL) == 0 {
            return Reading::LeftToSlurm("a candidate is suspended, not requeued or cancelled");
        }
        found.push(Found {
            candidate: Candidate {
                job: c.id(),
                tier: c.preemption_tier(qos),
                started: c.start_time(),
                checkpoint_every: c.comment().as_deref().and_then(checkpoint_interval),
                trays: c.nodes(call).map(|m| m.ones()).unwrap_or_default(),
            },
            requeue_or_cancel: m & (REQUEUE | CANCEL) != 0,
        });
    }
    Reading::Steerable(found)
}

callback! {
    /// `list_for_each_ro` over Slurm's candidate list: each record into a Vec.
    fn collect(job: *mut c_void, arg: *mut c_void) -> c_int = collect_job, on_panic 0;
}

/// # Safety
/// `arg` must be the `Vec<*mut job_record_t>` of [`candidates`].
unsafe fn collect_job(_call: &Call, job: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: per the function contract.
    let records = unsafe { &mut *arg.cast::<Vec<*mut b::job_record_t>>() };
    records.push(job.cast());
    0
}

/// How many running jobs hold each node (saturating at 255).
fn holders(list: *mut b::list_t) -> Vec<u8> {
    let mut count = Holders {
        counts: vec![0u8; slurm::node_count()],
    };
    // SAFETY: job_list holds job_record_t pointers; `count_job` only reads them and writes
    // `count`, which outlives the call.
    unsafe {
        b::slurm_list_for_each_ro(
            list,
            Some(count_holders),
            std::ptr::addr_of_mut!(count).cast::<c_void>(),
        );
    }
    count.counts
}

struct Holders {
    counts: Vec<u8>,
}

callback! {
    /// `list_for_each_ro` over `job_list`: each running job counted on its nodes.
    fn count_holders(job: *mut c_void, arg: *mut c_void) -> c_int = count_job, on_panic 0;
}

/// # Safety
/// `job` must be a `job_record_t` of job_list, `arg` the [`Holders`] of [`holders`].
unsafe fn count_job(call: &Call, job: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: per the function contract (a live record under the job lock).
    let (job, count) = unsafe { (Job::new(call, job.cast()), &mut *arg.cast::<Holders>()) };
    if let Some(job) = job.filter(|j| j.is_running()) {
        for n in job.nodes(call).map(|m| m.ones()).unwrap_or_default() {
            if let Some(c) = count.counts.get_mut(n) {
                *c = c.saturating_add(1);
            }
        }
    }
    0
}
