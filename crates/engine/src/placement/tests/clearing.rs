//! `cheapest_rack`: the rack whose clearing loses least, against a brute force over every
//! set of victims, and the case of docs/decisions.md (Slurm's order clears two jobs where
//! one would do).

use super::*;

fn job(job: u32, priority: u32, lost: u64, at: &[(usize, usize)]) -> Blocker {
    Blocker {
        job,
        priority,
        lost,
        trays_by_rack: at.to_vec(),
    }
}

/// The reference's layout: rack0 = l1 (10 trays) + l2 (8); rack1 = l3 (10) + 8 free; rack2 =
/// l4 (18); rack3 = l5 (18), all one tier, work lost in proportion to trays. A whole-rack job
/// costs one job of 10 trays in rack1, where Slurm's order (the smallest job first) clears
/// rack0's two.
#[test]
fn a_whole_rack_job_clears_the_rack_that_loses_least() {
    let free = [0, 8, 0, 0];
    let blockers = [
        job(1, 1, 10, &[(0, 10)]),
        job(2, 1, 8, &[(0, 8)]),
        job(3, 1, 10, &[(1, 10)]),
        job(4, 1, 18, &[(2, 18)]),
        job(5, 1, 18, &[(3, 18)]),
    ];
    let got = cheapest_rack(&free, &blockers, 18).unwrap();
    assert_eq!((got.rack, got.victims.as_slice()), (1, &[3][..]));
    assert_eq!(
        got.cost,
        ClearingCost {
            priority: 1,
            lost: 10,
            jobs: 1
        }
    );
}

#[test]
fn a_higher_tier_is_taken_only_where_no_lower_one_will_do() {
    // rack0: one cheap job of tier 5; rack1: two expensive jobs of tier 1.
    let blockers = [
        job(1, 5, 1, &[(0, 18)]),
        job(2, 1, 500, &[(1, 9)]),
        job(3, 1, 500, &[(1, 9)]),
    ];
    let got = cheapest_rack(&[0, 0], &blockers, 18).unwrap();
    assert_eq!(got.victims, [2, 3]);
    // A free rack needs no preemption at all.
    let got = cheapest_rack(&[0, 18], &blockers, 18).unwrap();
    assert_eq!((got.rack, got.victims.len()), (1, 0));
    // No rack can hold the job even with every blocker gone.
    assert_eq!(cheapest_rack(&[0, 0], &blockers[1..2], 18), None);
}

#[test]
fn a_job_over_two_racks_loses_all_its_work_and_frees_only_this_racks_trays() {
    // Job 1 spans racks 0 and 1 (4 + 14): clearing rack0 for 8 trays with it frees 4.
    let blockers = [job(1, 1, 18, &[(0, 4), (1, 14)]), job(2, 1, 20, &[(0, 4)])];
    let got = cheapest_rack(&[10, 0], &blockers, 14).unwrap();
    assert_eq!((got.rack, got.victims.as_slice()), (0, &[1][..]));
    assert_eq!(got.cost.lost, 18);
}

/// Every subset of each rack's blockers: the cheapest feasible one by (highest priority,
/// lost, jobs), and the cheapest rack; `cheapest_rack` finds that cost.
#[test]
fn the_cheapest_rack_matches_a_brute_force_over_every_set_of_victims() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(52);
    for _ in 0..2000 {
        let racks = rng.gen_range(1..4);
        let (left, blockers) = random_racks(&mut rng, racks, 8, 0.8, |rng, id, r, t| {
            job(id, rng.gen_range(0..3), rng.gen_range(0..50), &[(r, t)])
        });
        let free: Vec<usize> = left.iter().map(|&l| rng.gen_range(0..=l)).collect();
        let need = rng.gen_range(1..=18);
        let want = (0..racks)
            .filter_map(|r| brute_force(r, free[r], &blockers, need))
            .min();
        let got = cheapest_rack(&free, &blockers, need).map(|c| c.cost);
        assert_eq!(got, want, "free {free:?} need {need} blockers {blockers:?}");
    }
}

/// 18-tray racks filled with random whole-tray jobs of up to `largest` trays (another job
/// with probability `more`), `make` drawing each job: each rack's trays left, and the jobs.
fn random_racks<R: rand::Rng>(
    rng: &mut R,
    racks: usize,
    largest: usize,
    more: f64,
    mut make: impl FnMut(&mut R, u32, usize, usize) -> Blocker,
) -> (Vec<usize>, Vec<Blocker>) {
    let mut blockers = Vec::new();
    let left = (0..racks)
        .map(|r| {
            let mut left = 18;
            while left > 0 && rng.gen_bool(more) {
                let t = rng.gen_range(1..=left.min(largest));
                let id = blockers.len() as u32 + 1;
                blockers.push(make(rng, id, r, t));
                left -= t;
            }
            left
        })
        .collect();
    (left, blockers)
}

fn brute_force(
    rack: usize,
    free: usize,
    blockers: &[Blocker],
    need: usize,
) -> Option<ClearingCost> {
    let here: Vec<&Blocker> = blockers
        .iter()
        .filter(|b| b.trays_by_rack.iter().any(|t| t.0 == rack))
        .collect();
    (0u32..1 << here.len())
        .filter_map(|mask| {
            let set: Vec<&Blocker> = (0..here.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| here[i])
                .collect();
            let freed: usize = set
                .iter()
                .flat_map(|b| b.trays_by_rack.iter())
                .filter(|t| t.0 == rack)
                .map(|t| t.1)
                .sum();
            (free + freed >= need).then(|| ClearingCost {
                priority: set.iter().map(|b| b.priority).max().unwrap_or(0),
                lost: set.iter().map(|b| b.lost).sum(),
                jobs: set.len(),
            })
        })
        .min()
}

/// The reference's case through Slurm's loop: its own order clears rack0 (l2 and l1), and a
/// plugin that accepts only the cheapest rack makes the same loop clear rack1's l3 alone.
#[test]
fn slurms_loop_clears_two_jobs_and_steering_makes_it_clear_one() {
    let free = [0, 8, 0, 0];
    // Slurm's order: lowest priority, then fewest nodes, then submission: l2, l1, l3, l4, l5.
    let in_order = [
        job(2, 1, 8, &[(0, 8)]),
        job(1, 1, 10, &[(0, 10)]),
        job(3, 1, 10, &[(1, 10)]),
        job(4, 1, 18, &[(2, 18)]),
        job(5, 1, 18, &[(3, 18)]),
    ];
    let slurm = slurm_victims(&free, &in_order, 18, 3, best_fit_rack).unwrap();
    assert_eq!(slurm, (0, vec![2, 1]));
    let plan = cheapest_rack(&free, &in_order, 18).unwrap();
    let only_plan = |avail: &[usize], need: usize| (avail[plan.rack] >= need).then_some(plan.rack);
    let steered = slurm_victims(&free, &in_order, 18, 3, only_plan).unwrap();
    assert_eq!(steered, (1, vec![3]));
}

/// Random layouts of one tier: steering Slurm's loop (a plugin that accepts only the
/// cheapest rack) clears that rack, and never loses more work than Slurm's own choice. (The
/// loop may take more of that rack's jobs than the plan names: what it removes is Slurm's
/// order; the plugin's part of issue 52 is to make the two agree.)
#[test]
fn steering_never_costs_more_than_slurms_own_choice() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(53);
    for _ in 0..2000 {
        let racks = rng.gen_range(1..5);
        let (free, mut blockers) = random_racks(&mut rng, racks, 10, 0.85, |rng, id, r, t| {
            job(id, 1, t as u64 * rng.gen_range(1..5), &[(r, t)])
        });
        // Slurm's order: fewest nodes first (one tier), then submission.
        blockers.sort_by_key(|b| (b.trays_by_rack[0].1, b.job));
        let need = 18;
        let cost_of = |victims: &[u32]| -> u64 {
            blockers
                .iter()
                .filter(|b| victims.contains(&b.job))
                .map(|b| b.lost)
                .sum()
        };
        let Some(plan) = cheapest_rack(&free, &blockers, need) else {
            assert_eq!(
                slurm_victims(&free, &blockers, need, 3, best_fit_rack),
                None
            );
            continue;
        };
        let (_, slurm) = slurm_victims(&free, &blockers, need, 3, best_fit_rack).unwrap();
        let only_plan =
            |avail: &[usize], need: usize| (avail[plan.rack] >= need).then_some(plan.rack);
        let (rack, steered) = slurm_victims(&free, &blockers, need, 3, only_plan).unwrap();
        let case = format!("free {free:?} blockers {blockers:?}");
        assert_eq!(rack, plan.rack, "{case}");
        assert!(cost_of(&steered) <= cost_of(&slurm), "{case}");
    }
}

/// Jobs of several pieces (`--segment` pieces, or a job larger than a rack): the cheapest
/// set of racks matches a brute force over every set of victims in every rack.
#[test]
fn the_cheapest_racks_for_several_pieces_match_a_brute_force() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(54);
    for _ in 0..1500 {
        let racks = rng.gen_range(1..4);
        let (left, blockers) = random_racks(&mut rng, racks, 9, 0.6, |rng, id, r, t| {
            job(id, rng.gen_range(0..3), rng.gen_range(0..50), &[(r, t)])
        });
        if blockers.len() > 14 {
            continue;
        }
        let free: Vec<usize> = left.iter().map(|&l| rng.gen_range(0..=l)).collect();
        let pieces = if rng.gen_bool(0.5) {
            Pieces {
                size: rng.gen_range(1..=9),
                count: rng.gen_range(1..=4),
                rest: 0,
            }
        } else {
            Pieces {
                size: 18,
                count: rng.gen_range(1..racks.max(2)),
                rest: rng.gen_range(1..18),
            }
        };
        let got = cheapest_racks(&free, &blockers, pieces);
        let want = brute_force_pieces(&free, &blockers, pieces);
        let case = format!("free {free:?} pieces {pieces:?} blockers {blockers:?}");
        assert_eq!(got.as_ref().map(|c| c.cost), want, "{case}");
        if let Some(got) = got {
            let placed: usize = got.racks.iter().map(|r| r.1).sum();
            assert_eq!(placed, pieces.size * pieces.count + pieces.rest, "{case}");
        }
    }
}

/// Every set of victims (each in one rack): the cheapest after which the pieces fit.
fn brute_force_pieces(
    free: &[usize],
    blockers: &[Blocker],
    pieces: Pieces,
) -> Option<ClearingCost> {
    let fits = |avail: &[usize]| {
        let count_fit =
            |avail: &[usize]| -> usize { avail.iter().map(|a| a / pieces.size).sum::<usize>() };
        if pieces.rest == 0 {
            return count_fit(avail) >= pieces.count;
        }
        (0..avail.len()).any(|r| {
            let mut a = avail.to_vec();
            a[r] >= pieces.rest && {
                a[r] -= pieces.rest;
                count_fit(&a) >= pieces.count
            }
        })
    };
    (0u32..1 << blockers.len())
        .filter_map(|mask| {
            let set: Vec<&Blocker> = (0..blockers.len())
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| &blockers[i])
                .collect();
            let mut avail = free.to_vec();
            for (r, t) in set.iter().flat_map(|b| b.trays_by_rack.iter()) {
                avail[*r] += t;
            }
            fits(&avail).then(|| ClearingCost {
                priority: set.iter().map(|b| b.priority).max().unwrap_or(0),
                lost: set.iter().map(|b| b.lost).sum(),
                jobs: set.len(),
            })
        })
        .min()
}

/// The reference's layout on real trays: the plan accepts rack1's 8 free trays and l3's 10,
/// and under `preemption_cost = "jobs"` still one job; a job that fits on free trays needs
/// no victims.
#[test]
fn the_plan_takes_a_racks_free_trays_first_then_its_victims_trays() {
    use crate::config::{Policy, PreemptionCost};
    use crate::topology::Topology;
    let at = |rack: usize, trays: std::ops::Range<usize>| -> Vec<usize> {
        trays.map(|t| rack * 18 + t).collect()
    };
    let cand = |job: u32, trays: Vec<usize>| Candidate {
        job,
        tier: 1,
        started: 1000 - i64::from(job),
        checkpoint_every: None,
        trays,
    };
    // Slurm's order: l2, l1, l3, l4, l5.
    let candidates = [
        cand(2, at(0, 10..18)),
        cand(1, at(0, 0..10)),
        cand(3, at(1, 0..10)),
        cand(4, at(2, 0..18)),
        cand(5, at(3, 0..18)),
    ];
    let free = at(1, 10..18);
    for cost in [
        PreemptionCost::Work,
        PreemptionCost::Jobs,
        PreemptionCost::Trays,
    ] {
        let topo = Topology::uniform(
            4,
            18,
            Policy {
                preemption_cost: cost,
                ..Policy::default()
            },
        );
        let plan = preemption_plan(&topo, &free, &candidates, Pieces::one_rack(18), 2000).unwrap();
        assert_eq!(plan.victims, [3], "{cost:?}");
        assert_eq!(plan.trays, at(1, 0..18), "{cost:?}");
        assert_eq!(plan.racks, [1]);
        let (rack, slurm, _) =
            slurm_order_choice(&topo, &free, &candidates, Pieces::one_rack(18), 2000).unwrap();
        assert_eq!((rack, slurm), (0, vec![2, 1]));
        let small = preemption_plan(&topo, &free, &candidates, Pieces::one_rack(8), 2000).unwrap();
        assert_eq!((small.victims.len(), small.trays), (0, free.clone()));
    }
}

/// A job that checkpoints loses only the work since its last checkpoint: of two whole-rack
/// jobs, the one that ran longer but checkpointed a minute ago goes, not the younger one
/// that never checkpointed.
#[test]
fn a_checkpointing_job_loses_only_the_work_since_its_last_checkpoint() {
    use crate::config::Policy;
    use crate::topology::Topology;
    let topo = Topology::uniform(2, 18, Policy::default());
    let rack = |r: usize| (r * 18..r * 18 + 18).collect::<Vec<usize>>();
    let old = Candidate {
        job: 1,
        tier: 1,
        started: 0,
        checkpoint_every: checkpoint_interval("run=7 checkpoint=30m"),
        trays: rack(0),
    };
    let young = Candidate {
        job: 2,
        tier: 1,
        started: 9000,
        checkpoint_every: None,
        trays: rack(1),
    };
    // At 10,860 s the old job is 60 s past its 6th checkpoint; the young one has run 1,860 s.
    let plan = |c: &[Candidate]| preemption_plan(&topo, &[], c, Pieces::one_rack(18), 10_860);
    assert_eq!(plan(&[old.clone(), young.clone()]).unwrap().victims, [1]);
    let never = Candidate {
        checkpoint_every: None,
        ..old
    };
    assert_eq!(plan(&[never, young]).unwrap().victims, [2]);
}

#[test]
fn checkpoint_intervals_are_read_from_the_comment_word() {
    assert_eq!(checkpoint_interval("checkpoint=30"), Some(1800));
    assert_eq!(checkpoint_interval("a,checkpoint=2h;b"), Some(7200));
    assert_eq!(checkpoint_interval("x checkpoint=45s"), Some(45));
    for bad in [
        "",
        "checkpoint=",
        "checkpoint=0",
        "checkpoint=5d",
        "checkpoint=-1",
        "nocheckpoint=5",
    ] {
        assert_eq!(checkpoint_interval(bad), None, "{bad}");
    }
}
