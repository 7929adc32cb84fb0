//! The slowdown in the event loop: a split job holds its trays longer, strict limits kill it
//! at its limit, and usable occupancy counts its GPUs at the speed they work.

use crate::contenders::policy::PolicyKind;
use crate::job::{Job, HOUR, MINUTE};
use crate::run::failures::FailureModel;
use crate::run::simulation::{simulate, simulate_all, SimConfig};
use crate::slowdown::{parse_variant, CommClass, Limits, Model, Slowdown};
use crate::workload::synthetic::{generate, SyntheticSpec};

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
    let text = crate::reports::verdict::verdict(&report, &crate::tests::margins_of(1.5)).unwrap();
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
