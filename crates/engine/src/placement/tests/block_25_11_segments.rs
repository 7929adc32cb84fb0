//! topology/block's segment rules from Slurm 25.11 (`Topology::block_25_11_segments`):
//! `-w` with several segments (never before; from 25.11 `-w` names every node of the job and
//! each rack's share is whole segments), and segments larger than a rack (never before; from
//! 25.11 each one over the fewest racks).

use super::*;

fn segmented_on(nodes: &[usize], n: usize, s: usize) -> JobRequest {
    JobRequest {
        required: nodes.to_vec(),
        ..JobRequest::segmented(n, s)
    }
}

fn cluster_25_11(racks: usize) -> (Topology, ClusterView) {
    testkit::uniform(racks, 18).block_25_11_segments().parts()
}

#[test]
fn before_25_11_required_nodes_and_several_segments_never_run() {
    let (topo, view) = cluster(4);
    let req = segmented_on(&[0, 1, 2, 3], 4, 2);
    assert!(matches!(
        placements(&topo, &view, &req),
        Err(Reject::Never(_))
    ));
    // One segment with -w stays a one-rack job.
    let p = &placements(&topo, &view, &segmented_on(&[0, 1], 2, 2)).unwrap()[0];
    assert_eq!(p.nodes, vec![0, 1]);
}

/// SchedMD's test_150_2 cases, blocks of 4 carried over to racks of 18.
#[test]
fn from_25_11_the_named_nodes_are_split_into_segments_per_rack() {
    let (topo, view) = cluster_25_11(4);
    let p = &placements(&topo, &view, &segmented_on(&[0, 1, 2, 3], 4, 2)).unwrap()[0];
    assert_eq!(p.pieces, vec![(0, 4)]);
    assert_eq!(p.nodes, vec![0, 1, 2, 3]);
    let p = &placements(&topo, &view, &segmented_on(&[0, 1, 18, 19], 4, 2)).unwrap()[0];
    assert_eq!(p.pieces, vec![(0, 2), (1, 2)]);
    let p = &placements(&topo, &view, &segmented_on(&[0, 1, 2, 18, 19, 20], 6, 3)).unwrap()[0];
    assert_eq!(p.pieces, vec![(0, 3), (1, 3)]);
    assert!(p.exact);
}

#[test]
fn from_25_11_named_nodes_that_are_not_whole_segments_per_rack_never_run() {
    let (topo, view) = cluster_25_11(4);
    // 3 + 1: the second segment would span racks.
    let req = segmented_on(&[0, 1, 2, 18], 4, 2);
    assert!(matches!(
        placements(&topo, &view, &req),
        Err(Reject::Never(_))
    ));
    // Fewer -w nodes than the job: block refuses it too.
    let req = segmented_on(&[0, 1], 4, 2);
    assert!(matches!(
        placements(&topo, &view, &req),
        Err(Reject::Never(_))
    ));
}

#[test]
fn from_25_11_a_busy_named_node_makes_the_job_wait() {
    let kit = testkit::uniform(4, 18)
        .block_25_11_segments()
        .draw("rack2", ".A.... ...... ......");
    let (topo, view) = kit.clone().parts();
    let named = kit.nodes(&[("rack1", 0), ("rack1", 1), ("rack2", 0), ("rack2", 1)]);
    let req = segmented_on(&named, 4, 2);
    assert!(matches!(
        placements(&topo, &view, &req),
        Err(Reject::NotNow(_))
    ));
}

#[test]
fn before_25_11_a_segment_larger_than_a_rack_never_runs() {
    let (topo, view) = cluster(4);
    let req = JobRequest::segmented(40, 20);
    assert!(matches!(
        placements(&topo, &view, &req),
        Err(Reject::Never(_))
    ));
}

/// 25.11's block accepts segments larger than a block; each one gets the fewest racks.
#[test]
fn from_25_11_each_segment_larger_than_a_rack_gets_the_fewest_racks() {
    let (topo, view) = cluster_25_11(4);
    let p = &placements(&topo, &view, &JobRequest::segmented(40, 20)).unwrap()[0];
    assert_eq!(p.nodes.len(), 40);
    assert_eq!(racks_of(&topo, p).len(), 3, "{:?}", p.pieces);
    let p = &placements(&topo, &view, &JobRequest::segmented(20, 20)).unwrap()[0];
    assert_eq!(p.pieces.len(), 2);
    // Three segments of 20 fit four racks (18+2, 16+4, 14+6); four do not (80 > 72).
    assert!(placements(&topo, &view, &JobRequest::segmented(60, 20)).is_ok());
    let too_many = JobRequest::segmented(80, 20);
    assert!(matches!(
        placements(&topo, &view, &too_many),
        Err(Reject::Never(_))
    ));
}

#[test]
fn from_25_11_a_segment_larger_than_a_rack_waits_for_its_racks() {
    // Every rack half busy: no two racks hold 20.
    let (topo, view) = racks(&[
        "rack1 ...... ...___ ______",
        "rack2 ...... ...___ ______",
        "rack3 ...... ...___ ______",
        "rack4 ...... ...___ ______",
    ])
    .block_25_11_segments()
    .parts();
    let req = JobRequest::segmented(20, 20);
    assert!(matches!(
        placements(&topo, &view, &req),
        Err(Reject::NotNow(_))
    ));
}
