//! Slurm's node `Weight`: lighter trays are used first, as topology/block and Slurm's own
//! selection promise; best fit decides among trays of equal weight.

use super::*;

/// `racks` racks of 18 free trays, every tray weighing `weight_of(rack, tray)`.
fn weighted(racks: usize, weight_of: impl Fn(usize, usize) -> u64) -> testkit::Kit {
    let weights = (0..racks * 18).map(|n| weight_of(n / 18, n % 18)).collect();
    testkit::uniform(racks, 18).weights(weights)
}

fn max_weight(view: &ClusterView, p: &Placement) -> u64 {
    p.nodes.iter().map(|&n| view.weight(n)).max().unwrap()
}

#[test]
fn equal_weights_are_not_kept() {
    let (_, view) = weighted(2, |_, _| 7).parts();
    assert!(!view.weighted());
}

#[test]
fn one_rack_jobs_go_to_the_lightest_rack() {
    // The lab: gb[001-036] (racks 1 and 2) at weight 100, racks 3 and 4 at 1.
    let (topo, view) = weighted(4, |r, _| if r < 2 { 100 } else { 1 }).parts();
    let p = &placements(&topo, &view, &JobRequest::nodes(4)).unwrap()[0];
    assert_eq!(racks_of(&topo, p), vec![2]);
    let p = &placements(&topo, &view, &JobRequest::gpus(8, 72)).unwrap()[0];
    assert_eq!(racks_of(&topo, p), vec![2]);
}

#[test]
fn weight_comes_before_best_fit_and_best_fit_among_equal_weights() {
    let (topo, view) = weighted(4, |r, _| if r == 0 { 100 } else { 1 })
        .draw("rack1", "....__ ______ ______") // heavy, exactly 4 free
        .draw("rack3", "______ __.... ......") // light, 10 free
        .parts();
    let p = &placements(&topo, &view, &JobRequest::nodes(4)).unwrap()[0];
    assert_eq!(racks_of(&topo, p), vec![2], "the tightest light rack");
    // Every fitting rack is still offered, the heavy one last.
    let alts = placements(&topo, &view, &JobRequest::nodes(4)).unwrap();
    assert_eq!(racks_of(&topo, alts.last().unwrap()), vec![0]);
}

#[test]
fn lighter_trays_of_a_rack_are_taken_first() {
    let (topo, view) = weighted(2, |r, t| if r == 0 && t >= 10 { 1 } else { 10 }).parts();
    let p = &placements(&topo, &view, &JobRequest::nodes(4)).unwrap()[0];
    assert_eq!(p.nodes, vec![10, 11, 12, 13]);
    // A job needing more than the light trays gets them all, then the lightest others.
    let p = &placements(&topo, &view, &JobRequest::nodes(10)).unwrap()[0];
    assert_eq!(racks_of(&topo, p), vec![0]);
    assert!((10..18).all(|n| p.nodes.contains(&n)));
}

#[test]
fn required_nodes_come_before_lighter_ones() {
    let (topo, view) = weighted(2, |_, t| if t == 0 { 50 } else { 1 }).parts();
    let req = JobRequest {
        required: vec![0],
        ..JobRequest::nodes(2)
    };
    let p = &placements(&topo, &view, &req).unwrap()[0];
    assert_eq!(p.nodes, vec![0, 1]);
}

#[test]
fn multi_rack_jobs_take_the_light_racks() {
    let (topo, view) = weighted(4, |r, _| if r < 2 { 100 } else { 1 }).parts();
    let p = &placements(&topo, &view, &JobRequest::nodes(36)).unwrap()[0];
    assert_eq!(racks_of(&topo, p), vec![2, 3]);
    // Heavier racks only when the light ones cannot hold the job.
    let p = &placements(&topo, &view, &JobRequest::nodes(54)).unwrap()[0];
    assert_eq!(racks_of(&topo, p), vec![0, 2, 3]);
}

#[test]
fn segments_take_the_light_racks_first() {
    let (topo, view) = weighted(4, |r, _| if r == 3 { 1 } else { 100 })
        .draw("rack4", "______ ______ __....") // light, room for one segment of 4
        .parts();
    let p = &placements(&topo, &view, &JobRequest::segmented(8, 4)).unwrap()[0];
    assert_eq!(p.pieces.len(), 2);
    assert!(
        p.pieces.contains(&Piece { rack: 3, trays: 4 }),
        "{:?}",
        p.pieces
    );
    let p = &placements(&topo, &view, &JobRequest::segmented(4, 4)).unwrap()[0];
    assert_eq!(racks_of(&topo, p), vec![3]);
}

fn arb_weights() -> impl Strategy<Value = Vec<u64>> {
    proptest::collection::vec(prop_oneof![Just(1u64), Just(5), Just(100)], 4 * 18)
}

proptest! {
    /// Weights order the choice; they never make a job wait that could run.
    #[test]
    fn weights_never_make_a_job_wait(
        view in arb_view(4),
        weights in arb_weights(),
        n in 1usize..72,
        segment in prop_oneof![Just(None), Just(Some(2usize)), Just(Some(4))],
    ) {
        let topo = testkit::uniform(4, 18).topo;
        let req = match segment {
            Some(s) => JobRequest::segmented(n.div_ceil(s) * s, s),
            None => JobRequest::nodes(n),
        };
        let mut heavy = view.clone();
        heavy.set_weights(weights);
        let plain = placements(&topo, &view, &req).is_ok();
        prop_assert_eq!(placements(&topo, &heavy, &req).is_ok(), plain);
    }

    /// A one-rack job uses no heavier tray than it must: the heaviest tray it gets is the
    /// least, over every rack that can hold it, of that rack's n-th lightest free tray.
    #[test]
    fn one_rack_jobs_use_the_lightest_trays_that_hold_them(
        view in arb_view(4),
        weights in arb_weights(),
        n in 1usize..=18,
    ) {
        let topo = testkit::uniform(4, 18).topo;
        let mut view = view;
        view.set_weights(weights);
        let best = (0..4)
            .filter_map(|d| {
                let mut w: Vec<u64> = topo.racks[d]
                    .nodes
                    .iter()
                    .filter(|&&t| view.tray(t).offered)
                    .map(|&t| view.weight(t))
                    .collect();
                w.sort_unstable();
                w.get(n - 1).copied()
            })
            .min();
        match placements(&topo, &view, &JobRequest::nodes(n)) {
            Ok(p) => prop_assert_eq!(Some(max_weight(&view, &p[0])), best),
            Err(_) => prop_assert_eq!(best, None),
        }
    }
}
