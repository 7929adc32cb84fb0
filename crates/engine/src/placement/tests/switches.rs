//! A job's rack limit (`--switches=count[@max-time]`, `RackLimit`): never more racks than
//! `count` while it holds, a spill onto the fewest racks that hold the job now when `count`
//! is above the job's minimum or once the limit is lifted, and a wait (never a rejection)
//! otherwise.

use super::*;

/// `req` with a rack limit of `max_racks`, holding or lifted.
fn limited(req: JobRequest, max_racks: usize, lifted: bool) -> JobRequest {
    JobRequest {
        switches: Some(RackLimit { max_racks, lifted }),
        ..req
    }
}

/// The first alternative's pieces as `(rack, trays)` pairs, in rack order.
fn first_pieces(topo: &Topology, view: &ClusterView, req: &JobRequest) -> Vec<(usize, usize)> {
    let p = &placements(topo, view, req).expect("placed")[0];
    let mut pieces: Vec<(usize, usize)> = p.pieces.iter().map(|p| (p.rack, p.trays)).collect();
    pieces.sort_unstable();
    pieces
}

/// Three racks with 10 free trays each.
fn three_racks_of_ten() -> (Topology, ClusterView) {
    racks(&[
        "rack1 .......... AAAAAAAA",
        "rack2 .......... BBBBBBBB",
        "rack3 .......... CCCCCCCC",
    ])
    .parts()
}

#[test]
fn a_limit_of_one_rack_waits_and_a_lifted_one_splits_six_and_six() {
    let (topo, view) = three_racks_of_ten();
    // Without a limit the one-rack rule waits, as today.
    assert!(matches!(
        placements(&topo, &view, &JobRequest::nodes(12)),
        Err(Reject::NotNow(WaitReason::NoRackRoom { trays: 12, .. }))
    ));
    let got = placements(&topo, &view, &limited(JobRequest::nodes(12), 1, false));
    assert_eq!(
        got,
        Err(Reject::NotNow(WaitReason::SwitchLimit {
            racks: 1,
            needs: 2
        }))
    );
    let lifted = limited(JobRequest::nodes(12), 1, true);
    assert_eq!(first_pieces(&topo, &view, &lifted), [(0, 6), (1, 6)]);
    let p = &placements(&topo, &view, &lifted).unwrap()[0];
    assert!(p.exact);
    assert_eq!(p.nodes.len(), 12);
    reference::check_plan(&topo, &view, &lifted).unwrap();
}

#[test]
fn a_limit_above_the_minimum_starts_a_job_now_on_that_many_racks() {
    // The 10-tray job fits one rack, but the only rack with room is full.
    let (topo, view) = racks(&[
        "rack1 AAAAAAAAAAAAAAAAAA",
        "rack2 ...... BBBBBBBBBBBB", // 6 free
        "rack3 ..... CCCCCCCCCCCCC", // 5 free
    ])
    .parts();
    assert!(matches!(
        placements(&topo, &view, &JobRequest::nodes(10)),
        Err(Reject::NotNow(WaitReason::NoRackRoom { .. }))
    ));
    let two = limited(JobRequest::nodes(10), 2, false);
    assert_eq!(first_pieces(&topo, &view, &two), [(1, 5), (2, 5)]);
    reference::check_plan(&topo, &view, &two).unwrap();
    // One rack: it waits for its rack.
    assert_eq!(
        placements(&topo, &view, &limited(JobRequest::nodes(10), 1, false)),
        Err(Reject::NotNow(WaitReason::SwitchLimit {
            racks: 1,
            needs: 2
        }))
    );
}

#[test]
fn a_job_that_fits_its_limit_keeps_the_rules_choice() {
    let (topo, view) = racks(&[
        "rack1 ..........AAAAAAAA", // 10 free
        "rack2 ..................",
    ])
    .parts();
    let plain = placements(&topo, &view, &JobRequest::nodes(10)).unwrap();
    for (most, lifted) in [(1, false), (2, false), (1, true)] {
        let req = limited(JobRequest::nodes(10), most, lifted);
        assert_eq!(placements(&topo, &view, &req).unwrap(), plain);
    }
}

#[test]
fn a_job_larger_than_a_rack_spills_over_its_limit_only_above_its_minimum() {
    // 30 trays need two racks, but no two racks hold them: fewest-racks waits.
    let (topo, view) = racks(&[
        "rack1 .......... AAAAAAAA",
        "rack2 .......... BBBBBBBB",
        "rack3 .......... CCCCCCCC",
        "rack4 .......... DDDDDDDD",
    ])
    .parts();
    let n = JobRequest::nodes(30);
    assert!(matches!(
        placements(&topo, &view, &n),
        Err(Reject::NotNow(WaitReason::NoFewestRacks { .. }))
    ));
    assert_eq!(
        placements(&topo, &view, &limited(n.clone(), 2, false)),
        Err(Reject::NotNow(WaitReason::SwitchLimit {
            racks: 2,
            needs: 3
        }))
    );
    for req in [limited(n.clone(), 3, false), limited(n.clone(), 1, true)] {
        assert_eq!(
            first_pieces(&topo, &view, &req),
            [(0, 10), (1, 10), (2, 10)]
        );
        reference::check_plan(&topo, &view, &req).unwrap();
    }
}

#[test]
fn a_spill_takes_the_racks_that_give_the_largest_pieces() {
    // 12 trays on 11, 10 and 2 free: start-now's last piece would go to the best-fitting
    // rack3 (11 + 1); 6 + 6 on rack1 and rack2 is as few racks, and even.
    let (topo, view) = racks(&[
        "rack1 ........... AAAAAAA",
        "rack2 .......... BBBBBBBB",
        "rack3 .. CCCCCCCCCCCCCCCC",
    ])
    .parts();
    let req = limited(JobRequest::nodes(12), 1, true);
    assert_eq!(first_pieces(&topo, &view, &req), [(0, 6), (1, 6)]);
}

#[test]
fn segments_are_held_to_the_limit_by_the_fewest_racks() {
    // Best fit puts the three segments of 4 in the racks with exactly 4 free trays.
    let (topo, view) = racks(&[
        "rack1 .... AAAAAAAAAAAAAA",
        "rack2 .... BBBBBBBBBBBBBB",
        "rack3 .... CCCCCCCCCCCCCC",
        "rack4 ..................",
    ])
    .with_policy(|p| p.segment_placement = SegmentPlacement::BestFit)
    .parts();
    let req = JobRequest::segmented(12, 4);
    assert_eq!(
        racks_of(&topo, &placements(&topo, &view, &req).unwrap()[0]).len(),
        3
    );
    for most in [1, 2] {
        let got = first_pieces(&topo, &view, &limited(req.clone(), most, false));
        assert_eq!(got, [(3, 12)], "limit {most}");
    }
    // Once lifted, the segment rule decides again.
    let lifted = limited(req.clone(), 1, true);
    assert_eq!(
        placements(&topo, &view, &lifted).unwrap(),
        placements(&topo, &view, &req).unwrap()
    );
    // The limit wins over spreading, too.
    let spread = JobRequest {
        segment_placement: Some(SegmentPlacement::Spread),
        ..limited(req.clone(), 2, false)
    };
    assert_eq!(first_pieces(&topo, &view, &spread), [(3, 12)]);
    // Six segments of 4 take three racks at the fewest now (16 + 4 + 4): the job waits.
    let big = limited(JobRequest::segmented(24, 4), 2, false);
    assert_eq!(
        placements(&topo, &view, &big),
        Err(Reject::NotNow(WaitReason::SwitchLimit {
            racks: 2,
            needs: 3
        }))
    );
    // Every segment stays in one rack, lifted or not: a segment never spills.
    let (topo, view) = three_racks_of_ten();
    let one = limited(JobRequest::segmented(12, 12), 3, true);
    assert!(matches!(
        placements(&topo, &view, &one),
        Err(Reject::NotNow(WaitReason::NoRackRoom { .. }))
    ));
}

#[test]
fn a_limit_below_what_the_job_needs_waits_and_is_never_rejected() {
    let (topo, view) = cluster(4);
    for req in [
        limited(JobRequest::nodes(36), 1, false),
        limited(JobRequest::nodes(72), 3, false),
        limited(JobRequest::segmented(36, 18), 1, false),
        limited(JobRequest::segmented(36, 12), 1, false),
    ] {
        assert!(validate(&topo, &req).is_ok(), "{req:?}");
        let got = placements(&topo, &view, &req);
        assert!(
            matches!(got, Err(Reject::NotNow(WaitReason::SwitchLimit { .. }))),
            "{req:?}: {got:?}"
        );
        // Waited out, it starts on the racks it needs.
        let lifted = JobRequest {
            switches: Some(RackLimit {
                lifted: true,
                ..req.switches.unwrap()
            }),
            ..req
        };
        assert!(placements(&topo, &view, &lifted).is_ok(), "{lifted:?}");
    }
    // A limit of 0 racks is one rack.
    let zero = limited(JobRequest::nodes(18), 0, false);
    assert_eq!(placements(&topo, &view, &zero).unwrap()[0].pieces.len(), 1);
}

#[test]
fn the_wait_reason_names_the_limit() {
    let why = WaitReason::SwitchLimit { racks: 1, needs: 2 };
    assert_eq!(
        Reject::NotNow(why).to_string(),
        "not now: --switches allows 1 racks, the job needs 2 now"
    );
}

/// The job record's fields: `--switches=count`, `@max-time` in seconds, the clock's start.
fn fields(req_switch: u32, wait4switch: u32, wait4switch_start: i64) -> JobSwitches {
    JobSwitches {
        req_switch,
        wait4switch,
        wait4switch_start,
    }
}

/// A limit of `max_racks`, lifted or not.
fn limit(max_racks: usize, lifted: bool) -> Option<RackLimit> {
    Some(RackLimit { max_racks, lifted })
}

#[test]
fn a_jobs_own_switches_are_lifted_once_it_has_waited_its_time() {
    let off = crate::config::Switches::Off;
    let of = |f: JobSwitches, now: i64| RackLimit::of_job(f, off, now);
    // No --switches (Slurm stores 0; NO_VAL only in an unset request): no limit.
    assert_eq!(of(fields(0, 0, 0), 5_000), None);
    assert_eq!(of(fields(SLURM_NO_VAL, 300, 1_000), 5_000), None);
    // --switches=2@5:00: two racks until now - start >= 300 s.
    assert_eq!(of(fields(2, 300, 1_000), 1_299), limit(2, false));
    assert_eq!(of(fields(2, 300, 1_000), 1_300), limit(2, true));
    // The clock not started yet, or ahead of now: no wait so far.
    assert_eq!(of(fields(2, 300, 0), 1_000_000), limit(2, false));
    assert_eq!(of(fields(2, 300, 2_000), 1_000), limit(2, false));
    // @0: lifted at once. NO_VAL or INFINITE: never (tree's comparison never gets there).
    assert_eq!(of(fields(1, 0, 1_000), 1_000), limit(1, true));
    for never in [SLURM_NO_VAL, SLURM_INFINITE] {
        assert_eq!(of(fields(1, never, 1), i64::MAX), limit(1, false));
    }
}

#[test]
fn the_policy_limits_jobs_that_give_none() {
    let policy = crate::config::Switches::Limit {
        count: 1,
        wait_minutes: 30,
    };
    let of = |f: JobSwitches, now: i64| RackLimit::of_job(f, policy, now);
    for none in [0, SLURM_NO_VAL] {
        assert_eq!(of(fields(none, 0, 1_000), 1_000 + 1_799), limit(1, false));
        assert_eq!(of(fields(none, 0, 1_000), 1_000 + 1_800), limit(1, true));
    }
    // The job's own --switches wins, with its own wait.
    assert_eq!(of(fields(3, 60, 1_000), 1_060), limit(3, true));
    assert_eq!(
        of(fields(3, SLURM_INFINITE, 1_000), 1_000_000),
        limit(3, false)
    );
    // wait_minutes = 0: lifted at once.
    let at_once = crate::config::Switches::Limit {
        count: 2,
        wait_minutes: 0,
    };
    assert_eq!(
        RackLimit::of_job(fields(0, 0, 7), at_once, 7),
        limit(2, true)
    );
}

/// A rack limit of 1 to 4 racks, holding or lifted.
fn arb_limit() -> impl Strategy<Value = RackLimit> {
    (1usize..=4, any::<bool>()).prop_map(|(max_racks, lifted)| RackLimit { max_racks, lifted })
}

/// [`arb_small_case`]'s requests that `validate` accepts (most of its requests are larger than
/// its small racks), so that the cases reach the limit.
fn arb_runnable_case() -> impl Strategy<Value = (Topology, ClusterView, JobRequest)> {
    arb_small_case().prop_filter("never runnable", |(topo, _, req)| {
        validate(topo, req).is_ok()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// No alternative takes more racks than a limit that holds, and the job is placed exactly
    /// when the brute-force reference finds a placement within the limit (`check_plan`).
    #[test]
    fn limited_plans_pass_the_brute_force_reference(
        (topo, view, req) in arb_runnable_case(),
        limit in arb_limit(),
    ) {
        let req = JobRequest { switches: Some(limit), ..req };
        if let Err(why) = reference::check_plan(&topo, &view, &req) {
            prop_assert!(false, "{}: {:?}", why, req);
        }
    }

    /// A job the rules place within its limit gets exactly the rules' plan.
    #[test]
    fn a_limit_the_rules_keep_changes_nothing(
        (topo, view, req) in arb_runnable_case(),
        limit in arb_limit(),
    ) {
        let plain = placements(&topo, &view, &req);
        let within = plain.as_ref().is_ok_and(|alts| {
            alts.iter().all(|p| limit.active().map_or(true, |most| p.pieces.len() <= most))
        });
        if !within {
            return Ok(());
        }
        let req = JobRequest { switches: Some(limit), ..req };
        prop_assert_eq!(placements(&topo, &view, &req), plain);
    }
}

/// The same promise for every way a user sizes the job: 48 GPUs by `--gpus` (no `-N`) or by
/// `-n 48 --gpus-per-task=1` wait for one rack under a limit of one, and split 6 + 6 once it
/// is lifted, as `-N 12` does.
#[test]
fn jobs_sized_by_gpus_or_tasks_wait_and_spill_as_node_counts_do() {
    let (topo, view) = three_racks_of_ten();
    let by_tasks = JobRequest {
        demand: crate::demand::Demand {
            gpus: 48,
            ..Default::default()
        },
        ..JobRequest::gpus(48, 48)
    };
    for req in [JobRequest::gpus(48, 6 * 18), by_tasks] {
        let held = limited(req.clone(), 1, false);
        assert!(
            matches!(
                placements(&topo, &view, &held),
                Err(Reject::NotNow(WaitReason::SwitchLimit { racks: 1, .. }))
            ),
            "{req:?}"
        );
        let lifted = limited(req.clone(), 1, true);
        let p = &placements(&topo, &view, &lifted).unwrap()[0];
        let per_rack: Vec<usize> = p.pieces.iter().map(|p| p.trays).collect();
        assert_eq!(per_rack, [6, 6], "{req:?}");
        reference::check_plan(&topo, &view, &lifted).unwrap();
    }
}
