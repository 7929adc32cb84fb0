use super::*;
use crate::config::Policy;
use crate::placement::{best_fit_rack, slurm_victims};

/// ../shared/reference/preemption.md §1.5 on two racks of 18 trays: rack 0 holds a 10-tray
/// job (job 0, submitted first) and an 8-tray job (job 1); rack 1 a 10-tray job (job 2) and 8
/// free trays; all low tier, equally old. An 18-tray job of the high tier needs a whole rack.
/// Slurm's order is job 1 (the smallest), then jobs 0 and 2.
fn reference_case() -> (FreeMap, Vec<Candidate>) {
    let mut free = vec![false; 36];
    for f in free.iter_mut().skip(28) {
        *f = true;
    }
    let job = |job, trays: std::ops::Range<usize>| Candidate {
        job,
        tier: 0,
        lost: 3600 * 4 * trays.len() as u64,
        trays: trays.collect(),
    };
    let mut candidates = vec![job(0, 0..10), job(1, 10..18), job(2, 18..28)];
    sort_slurm_order(&mut candidates);
    (FreeMap::new(&free, 18), candidates)
}

#[test]
fn steering_clears_the_rack_of_one_job_where_slurms_order_takes_two() {
    let (free, candidates) = reference_case();
    let steer = least_loss(&free, &candidates, Pieces::one_rack(18)).unwrap();
    assert_eq!(steer.victims, [2]);
    assert_eq!(steer.trays, (18..36).collect::<Vec<_>>());
    for kind in [PolicyKind::Block, PolicyKind::Nvl72SlurmOrder] {
        let mut placer = Placer::new(kind, 2, 18, &Policy::default(), false);
        let slurm = slurm_order(&mut placer, &free, &candidates, SimRequest::nodes(18, None));
        assert_eq!(slurm.unwrap().victims, [1, 0], "{kind}");
    }
}

#[test]
fn on_a_one_rack_job_the_tray_loop_is_the_engines_model_of_slurm() {
    let (free, candidates) = reference_case();
    let blockers: Vec<Blocker> = candidates.iter().map(|c| c.blocker(18)).collect();
    let free_by_rack: Vec<usize> = free.in_racks().iter().map(|&n| n as usize).collect();
    let (rack, mut victims) =
        slurm_victims(&free_by_rack, &blockers, 18, 3, best_fit_rack).unwrap();
    let mut placer = Placer::new(PolicyKind::Block, 2, 18, &Policy::default(), false);
    let choice = slurm_order(&mut placer, &free, &candidates, SimRequest::nodes(18, None));
    let choice = choice.unwrap();
    assert_eq!(rack, 0);
    assert!(choice.trays.iter().all(|&t| t / 18 == rack));
    victims.sort_unstable();
    let mut ours: Vec<u32> = choice.victims.iter().map(|&v| v as u32).collect();
    ours.sort_unstable();
    assert_eq!(ours, victims);
}

#[test]
fn naive_takes_the_first_trays_slurms_order_frees() {
    // Without a topology plugin an 18-tray job takes any 18 trays: the 8-tray job (the
    // smallest) and the 8 free trays are 16; the next candidate (job 0) makes it fit, and
    // the consecutive best fit takes job 0's 10 trays and the 8 free ones (over two racks),
    // so the reorder passes keep job 0 alone.
    let (free, candidates) = reference_case();
    let mut placer = Placer::new(PolicyKind::Naive, 2, 18, &Policy::default(), false);
    let choice = slurm_order(&mut placer, &free, &candidates, SimRequest::nodes(18, None));
    let choice = choice.unwrap();
    assert_eq!(choice.victims, [0]);
    assert_eq!(choice.trays, (0..10).chain(28..36).collect::<Vec<_>>());
}

#[test]
fn no_preemption_when_the_job_fits_on_free_trays() {
    let free = FreeMap::new(&[true; 36], 18);
    let c = Candidate {
        job: 0,
        tier: 0,
        lost: 1,
        trays: vec![],
    };
    assert_eq!(
        least_loss(&free, std::slice::from_ref(&c), Pieces::one_rack(18)),
        None
    );
    let mut placer = Placer::new(PolicyKind::Naive, 2, 18, &Policy::default(), false);
    assert_eq!(
        slurm_order(&mut placer, &free, &[c], SimRequest::nodes(18, None)),
        None
    );
}

#[test]
fn a_job_larger_than_a_rack_takes_whole_racks_and_the_rest() {
    assert_eq!(
        Pieces::of_job(40, None, 18),
        Pieces {
            size: 18,
            count: 2,
            rest: 4
        }
    );
    assert_eq!(Pieces::of_job(32, Some(8), 18).count, 4);
    assert_eq!(Pieces::of_job(12, None, 18), Pieces::one_rack(12));
}

/// The §1.5 case as a simulator workload: three low-tier jobs fill the racks as in the
/// reference (best fit puts jobs 0 and 1 in rack 0, job 2 in rack 1), then an 18-tray job of
/// the high tier arrives an hour later.
fn reference_workload() -> Vec<crate::job::Job> {
    use crate::job::{Job, Tier, HOUR};
    let low = Tier {
        level: 0,
        preemptable: true,
    };
    let mut jobs: Vec<Job> = [(0, 10), (0, 8), (0, 10), (HOUR, 18)]
        .iter()
        .enumerate()
        .map(|(i, &(at, trays))| Job {
            tier: low,
            ..Job::plain(i, at, trays, 10 * HOUR, 10 * HOUR)
        })
        .collect();
    jobs[3].tier = Tier {
        level: 1,
        preemptable: false,
    };
    jobs
}

/// Through the simulator, requeued: steering requeues one job, Slurm's order two, and every
/// victim runs again.
#[test]
fn the_reference_case_through_the_simulator() {
    use crate::run::simulation::{simulate, SimConfig};
    let jobs = reference_workload();
    let mut cfg = SimConfig::new(2);
    cfg.check_invariants = true;
    let preempted = |kind| {
        let r = simulate(&cfg, &jobs, kind, &|_| {});
        let p = r
            .preemption
            .expect("a workload with tiers reports preemption");
        assert_eq!(p.preemptions, 1, "{kind}");
        assert_eq!(r.completed, 4, "{kind}: the victims ran again");
        assert!(r.lost_work.preemption_gpu_hours > 0.0, "{kind}");
        p.jobs_preempted
    };
    assert_eq!(preempted(PolicyKind::Nvl72), 1);
    assert_eq!(preempted(PolicyKind::Nvl72SlurmOrder), 2);
    assert_eq!(preempted(PolicyKind::Block), 2);
}

/// Cancelled victims never finish, and the high-tier job waits only the kill delay.
#[test]
fn cancelled_victims_never_finish() {
    use crate::run::simulation::{simulate, SimConfig};
    let jobs = reference_workload();
    let mut cfg = SimConfig::new(2);
    cfg.preempt_mode = PreemptMode::Cancel;
    let r = simulate(&cfg, &jobs, PolicyKind::Nvl72SlurmOrder, &|_| {});
    let p = r.preemption.unwrap();
    assert_eq!((p.jobs_preempted, p.cancelled), (2, 2));
    assert_eq!((r.completed, r.unfinished), (2, 2));
    let wait_s = p.high_tier_wait_mean_h * 3600.0;
    assert!((wait_s - 30.0).abs() < 1e-6, "{wait_s}");
}

/// A site's history with its partitions' tiers (tests/fixtures/sacct/two-tiers.txt: whole-rack
/// jobs of partition `high` arrive while jobs of `low` fill the racks) preempts the low
/// partition's jobs; the same history without the tiers preempts nothing.
#[test]
fn a_history_preempts_by_its_partitions_tiers_and_not_without_them() {
    use crate::run::simulation::{simulate, SimConfig};
    use crate::workload::sacct::{parse, SacctOptions};
    use crate::workload::site_tiers::{SiteTiers, TierField};
    let history: &[u8] = include_bytes!("../../../../../tests/fixtures/sacct/two-tiers.txt");
    let items = ["high=1".to_string(), "low=0:preemptable".to_string()];
    let with_tiers = SacctOptions {
        tiers: Some(SiteTiers::parse(TierField::Partition, &items).unwrap()),
        ..SacctOptions::default()
    };
    let mut cfg = SimConfig::new(3);
    cfg.check_invariants = true;
    let jobs = parse(history, &with_tiers).unwrap().workload();
    let r = simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {});
    let p = r
        .preemption
        .expect("a history with tiers reports preemption");
    assert!(
        p.preemptions >= 1 && p.jobs_preempted >= p.preemptions,
        "{p:?}"
    );
    assert_eq!(r.completed, jobs.len(), "requeued victims run again");
    let jobs = parse(history, &SacctOptions::default()).unwrap().workload();
    let r = simulate(&cfg, &jobs, PolicyKind::Nvl72, &|_| {});
    assert!(r.preemption.is_none());
    assert_eq!(r.lost_work.preemption_gpu_hours, 0.0);
}
