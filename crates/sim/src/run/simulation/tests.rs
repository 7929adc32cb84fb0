//! Whole-simulator properties: invariants at every event, determinism, completion, and the
//! locality guarantees of the topology-aware policies; then the slowdown in the event loop.

use proptest::prelude::*;

use crate::contenders::policy::PolicyKind;
use crate::idle::Cause;
use crate::job::{Job, HOUR, MINUTE};
use crate::reports::report::{RunReport, WorkloadInfo};
use crate::run::failures::FailureModel;
use crate::run::simulation::{simulate, simulate_all, SimConfig};
use crate::slowdown::{parse_variant, CommClass, Limits, Model, Slowdown};
use crate::studies::calibration;
use crate::workload::checkpoint::Checkpoints;
use crate::workload::synthetic::{generate, SyntheticSpec};

fn config(racks: usize, p: f64, seed: u64) -> SimConfig {
    let mut cfg = SimConfig::new(racks);
    cfg.failures = FailureModel::with_unavailability(p, Some(72.0)).unwrap();
    cfg.seed = seed;
    cfg.check_invariants = true;
    cfg
}

fn workload(jobs: usize, racks: usize, load: f64, seed: u64) -> Vec<Job> {
    generate(&SyntheticSpec::new(jobs, load, racks as f64 * 18.0, seed)).unwrap()
}

#[test]
fn every_policy_finishes_every_job_and_keeps_the_invariants() {
    // 20 racks hold the largest synthetic job (288 trays); 5% of trays fail and recover.
    let mut cfg = config(20, 0.05, 3);
    cfg.max_requeue = None;
    let jobs = workload(300, 20, 1.0, 3);
    let reports = simulate_all(&cfg, &jobs, &PolicyKind::ALL, true, &|_, _| {});
    for r in &reports {
        assert_eq!(
            (r.completed, r.rejected, r.held),
            (300, 0, 0),
            "{}",
            r.policy
        );
        assert!(r.occupancy_while_waiting.unwrap() > 0.3, "{}", r.policy);
    }
    // The same failure timeline for everybody: runs that last longer see more of it.
    assert!(reports[0].tray_failures > 0);
    let mut by_length: Vec<_> = reports
        .iter()
        .map(|r| (r.makespan_h, r.tray_failures))
        .collect();
    by_length.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(
        by_length.windows(2).all(|w| w[0].1 <= w[1].1),
        "{by_length:?}"
    );
    for r in &reports[..2] {
        assert_eq!(r.small_jobs_in_one_rack.share, Some(1.0), "{}", r.policy);
        assert_eq!(r.segments_in_one_rack.share, Some(1.0), "{}", r.policy);
    }
    // The naive policy ignores racks and strands nothing by definition.
    assert_eq!(reports[2].stranded_gpus, Some(0.0));
    assert!(reports[2].segments_in_one_rack.share.unwrap() < 1.0);
}

/// Every policy on 150 synthetic jobs at load 1.1 on 12 racks.
fn run_report(failures: f64, seed: u64) -> RunReport {
    let cfg = config(12, failures, seed);
    let jobs = workload(150, 12, 1.1, seed);
    RunReport {
        workload: WorkloadInfo {
            name: "synthetic".into(),
            details: serde_json::Value::Null,
            jobs: jobs.len(),
            offered_load: 1.1,
            span_h: 0.0,
            gpu_hours: 0.0,
        },
        policies: simulate_all(&cfg, &jobs, &PolicyKind::ALL, true, &|_, _| {}),
        sim: cfg,
        error_band: None,
        usable_error_band: None,
    }
}

/// A small report of every policy, for the report's renderers.
pub(crate) fn small_report() -> RunReport {
    run_report(0.02, 9)
}

fn run_json(seed: u64) -> String {
    run_report(0.02, seed).to_json()
}

#[test]
fn the_same_seed_gives_the_same_json() {
    let a = run_json(9);
    assert_eq!(a, run_json(9));
    assert_ne!(a, run_json(10));
}

#[test]
fn a_report_reads_back_as_its_json() {
    let json = run_json(9);
    let read: RunReport = serde_json::from_str(&json).unwrap();
    assert_eq!(read.to_json(), json);
    assert_eq!(read.policies.len(), PolicyKind::ALL.len());
}

/// One rack whose trays fail about every 30 h and are back after 30 min, jobs requeued
/// forever, checked after every event.
fn flaky_rack(checkpoints: Checkpoints) -> SimConfig {
    let mut cfg = SimConfig::new(1);
    cfg.failures = FailureModel::OnOff {
        mtbf_h: 30.0,
        mttr_h: 0.5,
    };
    cfg.check_invariants = true;
    cfg.max_requeue = None;
    cfg.checkpoints = checkpoints;
    cfg
}

#[test]
fn a_requeued_job_restarts_from_scratch_behind_the_jobs_already_waiting() {
    // One rack whose trays fail about every 30 h and are back after 30 min: the 4-hour,
    // 18-tray job is killed again and again and restarts from scratch each time. Its first
    // requeue puts it behind the later job, which waited since minute 1 and so runs first
    // (slurmctld resets a requeued job's submit time).
    let cfg = flaky_rack(Checkpoints::None);
    let job = |id, trays, runtime| Job {
        id,
        submit: id as u64 * MINUTE,
        trays,
        segment: None,
        by_gpus: false,
        class: Default::default(),
        runtime,
        limit: 2 * runtime,
        tier: Default::default(),
    };
    let jobs = vec![job(0, 18, 4 * HOUR), job(1, 18, HOUR)];
    let r = simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {});
    assert_eq!(r.completed, 2);
    assert!(r.requeues > 0);
    assert!(r.lost_gpu_hours > 0.0);
    assert!(r.ends[1] < r.ends[0]);
}

#[test]
fn a_requeued_job_resumes_from_its_last_checkpoint() {
    // The same rack and jobs as above: with checkpoints every 30 minutes each kill loses
    // less than 30 minutes of work and the restart does only the rest, so the long job ends
    // sooner; either way each job's work is kept once, and the rest counts as lost.
    let run = |checkpoints| {
        let cfg = flaky_rack(checkpoints);
        let jobs = vec![
            Job::plain(0, 0, 18, 4 * HOUR, 8 * HOUR),
            Job::plain(1, MINUTE, 18, HOUR, 2 * HOUR),
        ];
        simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {})
    };
    let from_scratch = run(Checkpoints::None);
    let resumed = run(Checkpoints::Every(30 * MINUTE));
    assert!(from_scratch.requeues > 0 && resumed.requeues > 0);
    assert!(resumed.ends[0] < from_scratch.ends[0]);
    let per_kill = 18.0 * 4.0 * 0.5; // GPU-hours: 18 trays, under 30 minutes each
    assert!(resumed.lost_work.failure_gpu_hours < resumed.requeues as f64 * per_kill);
    assert!((from_scratch.lost_work.failure_gpu_hours - from_scratch.lost_gpu_hours).abs() < 1e-6);
    assert!(resumed.lost_work.failure_gpu_hours > 0.0);
    // What is kept is every job's work done once: 18 trays × 5 hours, however often killed.
    assert!((resumed.goodput_gpu_hours - 4.0 * 18.0 * 5.0).abs() < 1e-6);
    assert!((from_scratch.goodput_gpu_hours - 4.0 * 18.0 * 5.0).abs() < 1e-6);
}

#[test]
fn jobs_larger_than_the_cluster_are_rejected_not_stuck() {
    let cfg = config(2, 0.0, 1);
    let job = |id, trays, segment| Job {
        id,
        submit: 0,
        trays,
        segment,
        by_gpus: false,
        class: Default::default(),
        runtime: HOUR,
        limit: HOUR,
        tier: Default::default(),
    };
    let jobs = vec![job(0, 40, None), job(1, 6, Some(4)), job(2, 4, None)];
    for kind in PolicyKind::ALL {
        let r = simulate(&cfg, &jobs, kind, &|_| {});
        let rejected = if kind == PolicyKind::Naive { 1 } else { 2 };
        assert_eq!(
            (r.rejected, r.completed),
            (rejected, 3 - rejected),
            "{kind}"
        );
    }
}

prop_compose! {
    fn jobs(max: usize)(specs in prop::collection::vec(
        (0u64..20, 1usize..=36, prop::option::of(prop::sample::select(vec![2usize, 3, 4, 6, 9])), 1u64..300),
        1..max,
    )) -> Vec<Job> {
        let mut specs = specs;
        specs.sort_by_key(|s| s.0);
        specs.into_iter().enumerate().map(|(id, (submit, trays, seg, minutes))| {
            let segment = seg.filter(|&s| trays % s == 0 && s < trays);
            Job {
                id,
                submit: submit * 10 * MINUTE,
                trays,
                segment,
                by_gpus: false,
                class: Default::default(),
                runtime: minutes * MINUTE,
                limit: minutes * MINUTE * 2,
                tier: Default::default(),
            }
        }).collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// No tray is ever held twice, trays are conserved at every event (both checked after
    /// every event by `check_invariants`), and every job ends.
    #[test]
    fn random_workloads_keep_the_invariants(
        jobs in jobs(40),
        p in prop::sample::select(vec![0.0, 0.01, 0.03]),
        seed in 0u64..1000,
    ) {
        let cfg = config(6, p, seed);
        for kind in PolicyKind::ALL {
            let r = simulate(&cfg, &jobs, kind, &|_| {});
            prop_assert_eq!(r.completed + r.rejected + r.held, jobs.len());
            if kind != PolicyKind::Naive {
                prop_assert!(r.small_jobs_in_one_rack.share.map_or(true, |s| s == 1.0));
                prop_assert!(r.segments_in_one_rack.share.map_or(true, |s| s == 1.0));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// The idle breakdown's parts add up to the idle GPUs while jobs wait, for every policy;
    /// the naive policy, to which every free tray is of use, leaves trays idle only for a
    /// reservation or because no waiting job fits them by count.
    #[test]
    fn idle_causes_add_up_to_the_idle_gpus(
        jobs in jobs(40),
        p in prop::sample::select(vec![0.0, 0.02, 0.05]),
        seed in 0u64..1000,
    ) {
        let cfg = config(6, p, seed);
        for kind in PolicyKind::ALL.into_iter().chain(PolicyKind::VARIANTS) {
            let r = simulate(&cfg, &jobs, kind, &|_| {});
            let Some(idle) = r.idle_gpus_while_waiting else { continue };
            let causes = r.idle_by_cause.as_ref().expect("the simulator splits idle GPUs");
            let sum: f64 = causes.iter().map(|c| c.gpus).sum();
            prop_assert!((sum - idle).abs() <= 1e-9 * idle.max(1.0), "{}: {} vs {}", kind, sum, idle);
            if kind == PolicyKind::Naive {
                for c in causes.iter().filter(|c| !matches!(c.cause, Cause::Reserved | Cause::TooFew)) {
                    prop_assert_eq!(c.gpus, 0.0, "naive: {:?}", c.cause);
                }
            }
        }
    }
}

/// Hand-computed stranding and extra racks. Three racks; three 10-tray jobs leave 8 free
/// trays in each, then a 20-tray job arrives (a 1-tray job at 20 h closes the window).
/// - nvl72 waits for two racks that hold 20 (10 h): 24 of 54 trays stranded all that time,
///   and the job then uses 2 racks (0 extra);
/// - nvl72-start-now starts it at once over 3 racks (8 + 8 + 4: 1 extra), stranding nothing;
/// - naive packed the 10-tray jobs onto trays 0-29 regardless of racks, so the 20 trays
///   30-49 happen to span 2 racks (0 extra).
#[test]
fn stranding_and_extra_racks_match_a_hand_computed_case() {
    let job = |id, submit_h: u64, trays, hours: u64| Job {
        id,
        submit: submit_h * HOUR,
        trays,
        segment: None,
        by_gpus: false,
        class: Default::default(),
        runtime: hours * HOUR,
        limit: hours * HOUR,
        tier: Default::default(),
    };
    let jobs = vec![
        job(0, 0, 10, 10),
        job(1, 0, 10, 10),
        job(2, 0, 10, 10),
        job(3, 0, 20, 1),
        job(4, 20, 1, 1),
    ];
    let cfg = config(3, 0.0, 1);
    let run = |kind| simulate(&cfg, &jobs, kind, &|_| {});
    let nvl72 = run(PolicyKind::Nvl72);
    let share = nvl72.stranded_share.unwrap();
    assert!((share - 24.0 / 54.0).abs() < 1e-9, "{share}");
    assert_eq!(nvl72.large_jobs_extra_racks, Some(0.0));
    for (kind, extra) in [(PolicyKind::Nvl72StartNow, 1.0), (PolicyKind::Naive, 0.0)] {
        let r = run(kind);
        assert_eq!(r.large_jobs_extra_racks, Some(extra), "{kind}");
        assert_eq!(r.stranded_share.unwrap_or(0.0), 0.0, "{kind}");
    }
}

/// Jobs sized by GPUs (no `-N`): the engine keeps every one that fits a rack in one rack and
/// runs the larger ones on the fewest racks; topology/block cannot place the larger ones at
/// all (its block choice uses a one-node minimum) and the naive policy splits them.
#[test]
fn gpu_sized_jobs_stay_in_one_rack_under_the_engine() {
    let cfg = config(20, 0.02, 5);
    let mut jobs = workload(300, 20, 0.9, 5);
    crate::job::size_by_gpus(&mut jobs, 1.0, 5);
    let sized = jobs.iter().filter(|j| j.by_gpus && j.trays <= 18).count();
    assert!(sized > 100, "{sized}");
    let reports = simulate_all(&cfg, &jobs, &PolicyKind::ALL, true, &|_, _| {});
    let nvl72 = &reports[0];
    assert_eq!(nvl72.gpu_sized_in_one_rack.share, Some(1.0));
    assert!(nvl72.gpu_sized_in_one_rack.eligible >= sized as u64);
    assert_eq!(nvl72.rejected, 0);
    assert_eq!(nvl72.large_jobs_extra_racks, Some(0.0));
    let large = jobs.iter().filter(|j| j.by_gpus && j.trays > 18).count();
    assert_eq!(
        reports[1].rejected, large,
        "block never places GPU-sized jobs over a rack"
    );
    assert!(reports[2].gpu_sized_in_one_rack.share.unwrap() < 1.0);
}

#[test]
fn with_a_scheduling_period_jobs_start_only_at_its_ticks() {
    // Three one-tray jobs: at 0 (a tick), at 10 min and at 25 min; passes every 30 min.
    let job = |id, submit| Job::plain(id, submit, 1, HOUR, 2 * HOUR);
    let jobs = [job(0, 0), job(1, 10 * MINUTE), job(2, 25 * MINUTE)];
    let mut cfg = config(1, 0.0, 1);
    cfg.sched_period = Some(30 * MINUTE);
    let r = simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {});
    // Waits 0, 20 and 5 minutes: the second and third start at the 30-minute tick.
    let all = &r.wait[0];
    assert!((all.mean_h - 25.0 / 60.0 / 3.0).abs() < 1e-9, "{all:?}");
    assert_eq!(r.ends, [Some(HOUR), Some(90 * MINUTE), Some(90 * MINUTE)]);
    // Without it every job starts at its arrival.
    cfg.sched_period = None;
    let r = simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {});
    assert_eq!(r.wait[0].mean_h, 0.0);
}

#[test]
fn a_requeued_job_waits_out_the_requeue_delay() {
    // Frequent failures on 4 racks; every killed job must wait at least the delay again. 60
    // jobs give hundreds of requeues (150 took the quick loop's whole minute).
    let mut cfg = config(4, 0.05, 7);
    cfg.failures = FailureModel::OnOff {
        mtbf_h: 60.0,
        mttr_h: 3.0,
    };
    cfg.max_requeue = None;
    cfg.check_invariants = false;
    let jobs = workload(60, 4, 0.8, 7);
    let delay = 2 * HOUR;
    let plain = simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {});
    cfg.requeue_delay = Some(delay);
    let r = simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {});
    assert!(r.requeues > 5, "{} requeues", r.requeues);
    assert_eq!(r.completed + r.rejected, jobs.len());
    let total_wait_h = r.wait[0].mean_h * r.completed as f64;
    assert!(
        total_wait_h >= r.requeues as f64 * 2.0 - 1e-6,
        "{total_wait_h} h of waits for {} requeues of 2 h",
        r.requeues
    );
    assert_ne!(r.wait[0].mean_h, plain.wait[0].mean_h);
}

/// A replay's prediction is the mean of runs whose passes fall at spread phases of the tick,
/// and their range says how far one run may stray.
#[test]
fn a_prediction_is_the_mean_of_its_tick_phases() {
    let mut cfg = config(6, 0.0, 1);
    cfg.sched_period = Some(10 * MINUTE);
    let jobs = workload(80, 6, 1.0, 1);
    let phases: Vec<f64> = (0..4)
        .map(|i| {
            let mut c = cfg.clone();
            c.tick_phase = 10 * MINUTE * i / 4;
            simulate(&c, &jobs, PolicyKind::Nvl72, &|_| {})
                .occupancy_while_waiting
                .unwrap()
        })
        .collect();
    let (mean, range) = calibration::ensemble(&cfg, &jobs, &[PolicyKind::Nvl72], 4)[0].unwrap();
    assert!((mean - phases.iter().sum::<f64>() / 4.0).abs() < 1e-12);
    let (lo, hi) = phases
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
    assert!((range - (hi - lo) * 100.0).abs() < 1e-9);
}

#[test]
fn the_verdict_counts_gpus_kept_busy_and_jobs_split_against_each_other_policy() {
    let report = run_report(0.0, 5);
    let text = crate::reports::verdict::verdict(&report, &margins_of(1.5)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "verdict: on these 150 jobs (synthetic) on 12 racks (864 GPUs):"
    );
    // GPUs kept busy = the occupancy difference times the healthy GPUs, against both.
    let (ours, block) = (&report.policies[0], &report.policies[1]);
    let d = ours.occupancy_while_waiting.unwrap() - block.occupancy_while_waiting.unwrap();
    let gpus = (d * 864.0).abs().round() as u64;
    let against_block = match gpus {
        0 => "as many GPUs busy as block".to_string(),
        n if d > 0.0 => format!("{n} more GPUs busy than block"),
        n => format!("{n} fewer GPUs busy than block"),
    };
    // No failures, no slowdown: goodput is occupancy, and leads.
    assert!(
        lines[1].starts_with("- nvl72 would have given ") && lines[1].contains("GPUs of goodput"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("- plain occupancy: while jobs waited, nvl72 would have kept "),
        "{text}"
    );
    assert!(lines[2].contains(&against_block), "{text}");
    assert!(
        lines[2].contains("than naive") || lines[2].contains("as naive"),
        "{text}"
    );
    assert_eq!(
        (d * 100.0).abs() <= 1.5,
        lines[2].split("; and ").next().unwrap().contains("a tie"),
        "{text}"
    );
    // nvl72 splits no job that fits a rack; naive's count is its own report's.
    let naive = &report.policies[2];
    let split = naive.small_jobs_in_one_rack.eligible - naive.small_jobs_in_one_rack.inside;
    let fits = ours.small_jobs_in_one_rack.eligible;
    let line = format!("- of the {fits} jobs that fit in one rack, split across racks: nvl72 none, block none, naive {}",
        if split == 0 { "none".to_string() } else { split.to_string() });
    assert!(lines.contains(&line.as_str()), "{line}\n{text}");
    assert!(text.contains("±1.5 points"), "{text}");
    // Without block and naive there is nothing to compare.
    let alone = RunReport {
        policies: report.policies[..1].to_vec(),
        ..report.clone()
    };
    assert!(crate::reports::verdict::verdict(&alone, &margins_of(1.5)).is_none());
}

/// The same measured error for every policy, on occupancy only.
pub(crate) fn margins_of(points: f64) -> crate::reports::verdict::Margins {
    crate::reports::verdict::Margins {
        occupancy: crate::studies::calibration::PolicyMargins(
            PolicyKind::ALL[..3].iter().map(|&k| (k, points)).collect(),
        ),
        ..Default::default()
    }
}

#[test]
fn policy_switches_hold_a_job_to_its_racks_until_its_wait_is_over() {
    // Three racks, each with 2 trays left beside a 10-hour job; a 4-tray job fits no rack.
    // With `switches = { count = 1, wait_minutes = 30 }` it waits 30 minutes, then starts on
    // two racks (2 + 2); without, it waits for a rack; block ignores the setting.
    let mut jobs: Vec<Job> = (0..3)
        .map(|id| Job::plain(id, 0, 16, 10 * HOUR, 10 * HOUR))
        .collect();
    jobs.push(Job::plain(3, 0, 4, HOUR, 2 * HOUR));
    let mut cfg = config(3, 0.0, 1);
    let waits = |cfg: &SimConfig, kind| simulate(cfg, &jobs, kind, &|_| {}).ends[3];
    assert_eq!(waits(&cfg, PolicyKind::Nvl72), Some(11 * HOUR));
    cfg.policy.switches = crate::config::Switches::Limit {
        count: 1,
        wait_minutes: 30,
    };
    assert_eq!(waits(&cfg, PolicyKind::Nvl72), Some(90 * MINUTE));
    assert_eq!(waits(&cfg, PolicyKind::Block), Some(11 * HOUR));
    // A count of 2 is above the job's one rack: it may start on two racks at once.
    cfg.policy.switches = crate::config::Switches::Limit {
        count: 2,
        wait_minutes: 30,
    };
    assert_eq!(waits(&cfg, PolicyKind::Nvl72), Some(HOUR));
}

// The slowdown in the event loop: a split job holds its trays longer, strict limits kill it
// at its limit, and usable occupancy counts its GPUs at the speed they work.

fn priced(variant: &str, limits: Limits) -> Slowdown {
    let (model, variant, _) = parse_variant(variant).unwrap();
    Slowdown {
        model,
        limits,
        variant,
        classes: "all dense".into(),
    }
}

/// Two racks. A 17-tray job fills rack 0 but one tray, an 18-tray job arrives a minute
/// later, then a 2-tray dense job of one hour and limit `limit`: naive's consecutive best fit
/// gives it trays 17 and 18 (1 + 1 over the boundary), nvl72 waits for one rack.
fn boundary_case(limit: u64) -> Vec<Job> {
    vec![
        Job::plain(0, 0, 17, 10 * HOUR, 10 * HOUR),
        Job::plain(1, MINUTE, 2, HOUR, limit),
    ]
}

fn run(
    kind: PolicyKind,
    slowdown: Slowdown,
    jobs: &[Job],
) -> crate::measures::policy_report::PolicyReport {
    let mut cfg = SimConfig::new(2);
    cfg.check_invariants = true;
    cfg.slowdown = slowdown;
    simulate(&cfg, jobs, kind, &|_| {})
}

#[test]
fn a_job_cut_one_plus_one_runs_as_long_as_the_model_says() {
    let jobs = boundary_case(3 * HOUR);
    let naive = run(PolicyKind::Naive, priced("default", Limits::Lenient), &jobs);
    let s = Model::Priced(Default::default())
        .factor(&[1, 1], None, CommClass::Dense, 18)
        .s;
    assert!((s - 1.633).abs() < 0.001, "{s}");
    assert_eq!(naive.ends[1], Some(MINUTE + Slowdown::stretch(HOUR, s)));
    assert_eq!(naive.mean_slowdown_split, Some(s));
    // nvl72 keeps it in rack 1: it runs its hour.
    let nvl72 = run(PolicyKind::Nvl72, priced("default", Limits::Lenient), &jobs);
    assert_eq!(nvl72.ends[1], Some(MINUTE + HOUR));
    assert_eq!(nvl72.split_work_share, Some(0.0));
}

#[test]
fn strict_limits_kill_the_slowed_run_at_its_limit_and_lenient_ones_let_it_run_on() {
    let jobs = boundary_case(HOUR);
    let strict = run(PolicyKind::Naive, priced("default", Limits::Strict), &jobs);
    assert_eq!(strict.ends[1], Some(MINUTE + HOUR));
    assert_eq!((strict.timeouts, strict.overruns), (1, 0));
    assert!((strict.timeout_gpu_hours - 8.0).abs() < 1e-9);
    let lenient = run(PolicyKind::Naive, priced("default", Limits::Lenient), &jobs);
    assert!(lenient.ends[1] > Some(MINUTE + HOUR));
    assert_eq!((lenient.timeouts, lenient.overruns), (0, 1));
}

#[test]
fn without_a_price_usable_occupancy_is_occupancy() {
    let cfg = {
        let mut cfg = SimConfig::new(8);
        cfg.failures = FailureModel::with_unavailability(0.05, Some(72.0)).unwrap();
        cfg
    };
    let jobs = generate(&SyntheticSpec::new(400, 1.0, 8.0 * 18.0, 2)).unwrap();
    for r in simulate_all(&cfg, &jobs, &PolicyKind::ALL, true, &|_, _| {}) {
        assert_eq!(
            r.usable_occupancy_while_waiting, r.occupancy_while_waiting,
            "{}",
            r.policy
        );
        assert_eq!(
            r.usable_occupancy_arrivals, r.occupancy_arrivals,
            "{}",
            r.policy
        );
        assert_eq!((r.overruns, r.timeouts), (0, 0), "{}", r.policy);
    }
}

#[test]
fn a_slowdown_changes_nothing_for_jobs_inside_one_rack() {
    // Jobs of at most a rack without segments, no failures: nvl72 never splits them, so
    // pricing splits is free.
    let mut jobs = generate(&SyntheticSpec::new(300, 1.0, 4.0 * 18.0, 4)).unwrap();
    jobs.retain(|j| j.trays <= 18 && j.segment.is_none());
    for (i, j) in jobs.iter_mut().enumerate() {
        j.id = i;
    }
    let mut cfg = SimConfig::new(4);
    let off = simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {});
    cfg.slowdown = priced("high", Limits::Strict);
    let high = simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {});
    assert_eq!(off.ends, high.ends);
    assert_eq!(
        high.usable_occupancy_while_waiting,
        off.occupancy_while_waiting
    );
}

#[test]
fn slowed_and_killed_runs_keep_every_invariant_under_failures() {
    let jobs = generate(&SyntheticSpec::new(600, 1.0, 20.0 * 18.0, 7)).unwrap();
    for limits in [Limits::Lenient, Limits::Strict] {
        let mut cfg = SimConfig::new(20);
        cfg.failures = FailureModel::with_unavailability(0.05, Some(72.0)).unwrap();
        cfg.check_invariants = true;
        cfg.max_requeue = None;
        cfg.slowdown = priced("high", limits);
        for r in simulate_all(&cfg, &jobs, &PolicyKind::ALL, true, &|_, _| {}) {
            assert_eq!(r.completed + r.rejected, 600, "{} {limits:?}", r.policy);
            let (usable, busy) = (r.usable_occupancy_while_waiting, r.occupancy_while_waiting);
            assert!(
                usable <= busy,
                "{} {limits:?}: {usable:?} > {busy:?}",
                r.policy
            );
        }
    }
}

#[test]
fn a_priced_verdict_leads_with_usable_gpus_then_split_work_then_plain_occupancy() {
    let mut cfg = SimConfig::new(12);
    cfg.slowdown = priced("default", Limits::Lenient);
    let jobs = generate(&SyntheticSpec::new(150, 1.0, 12.0 * 18.0, 5)).unwrap();
    let report = crate::reports::report::RunReport {
        workload: crate::reports::report::WorkloadInfo {
            name: "synthetic".into(),
            details: serde_json::Value::Null,
            jobs: jobs.len(),
            offered_load: 1.0,
            span_h: 1.0,
            gpu_hours: 1.0,
        },
        policies: simulate_all(&cfg, &jobs, &PolicyKind::ALL[..3], false, &|_, _| {}),
        sim: cfg,
        error_band: None,
        usable_error_band: None,
    };
    let text =
        crate::reports::verdict::verdict(&report, &crate::run::simulation::tests::margins_of(1.5))
            .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (ours, naive) = (&report.policies[0], &report.policies[2]);
    let d = ours.usable_occupancy_while_waiting.unwrap()
        - naive.usable_occupancy_while_waiting.unwrap();
    let gpus = (d * 864.0).abs().round();
    let how = if d >= 0.0 { "more" } else { "fewer" };
    assert!(lines[1].contains("GPUs of goodput"), "{text}");
    assert!(
        lines[2].starts_with(&format!("- nvl72 would have given {gpus} {how} usable GPUs than Slurm without a topology plugin")),
        "{text}"
    );
    assert!(
        lines[2].contains("model: default; classes all dense; lenient limits"),
        "{text}"
    );
    assert!(
        lines[3].starts_with("- work done split across racks: naive "),
        "{text}"
    );
    assert!(
        lines[4].starts_with("- plain occupancy: while jobs waited"),
        "{text}"
    );
    assert!(report
        .to_table()
        .contains("slowdown of split jobs: default; classes all dense"));
}
