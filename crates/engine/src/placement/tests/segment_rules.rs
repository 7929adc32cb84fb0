//! A job's own segment rule (Slurm 25.11's `--spread-segments` and
//! `--consolidate-segments`) overrides `[policy] segment_placement`.

use super::*;

fn with_rule(n: usize, s: usize, rule: SegmentPlacement) -> JobRequest {
    JobRequest {
        segment_placement: Some(rule),
        ..JobRequest::segmented(n, s)
    }
}

#[test]
fn spread_segments_take_a_rack_each_best_fit_first() {
    let (topo, view) = testkit::uniform(4, 18)
        .draw("rack2", "______ ______ __....") // 4 free: the tightest for a segment of 4
        .parts();
    let p = &placements(&topo, &view, &with_rule(12, 4, SegmentPlacement::Spread)).unwrap()[0];
    assert_eq!(p.pieces.len(), 3);
    assert_eq!(p.pieces[0], (1, 4));
    assert_eq!(racks_of(&topo, p).len(), 3);
    // Without the flag, the default keeps a job that fits a rack in one.
    let p = &placements(&topo, &view, &JobRequest::segmented(12, 4)).unwrap()[0];
    assert_eq!(racks_of(&topo, p).len(), 1);
}

#[test]
fn spread_segments_wait_for_free_racks_and_never_exceed_the_racks() {
    let kit = testkit::uniform(4, 18).draw("rack1", "______ ______ ____.."); // 2 free
    let (topo, view) = kit.clone().parts();
    let req = with_rule(8, 2, SegmentPlacement::Spread);
    assert!(placements(&topo, &view, &req).is_ok());
    let view = kit.draw("rack1", "______ ______ _____.").view;
    assert!(matches!(
        placements(&topo, &view, &req),
        Err(Reject::NotNow(_))
    ));
    let five = with_rule(10, 2, SegmentPlacement::Spread);
    assert!(matches!(
        placements(&topo, &view, &five),
        Err(Reject::Never(_))
    ));
}

#[test]
fn consolidate_segments_use_the_fewest_racks() {
    let (topo, view) = testkit::uniform(4, 18)
        .with_policy(|p| p.segment_placement = SegmentPlacement::BestFit)
        .draw("rack1", "....__ ______ ______") // 4 free: best fit would start there
        .parts();
    let p = &placements(
        &topo,
        &view,
        &with_rule(8, 4, SegmentPlacement::Consolidate),
    )
    .unwrap()[0];
    assert_eq!(racks_of(&topo, p).len(), 1);
    let p = &placements(&topo, &view, &JobRequest::segmented(8, 4)).unwrap()[0];
    assert_eq!(
        racks_of(&topo, p).len(),
        2,
        "best fit: rack1's hole, then another"
    );
}
