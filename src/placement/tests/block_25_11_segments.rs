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
    let (mut topo, view) = cluster(racks);
    topo.block_25_11_segments = true;
    (topo, view)
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
    let (topo, mut view) = cluster_25_11(4);
    view.trays[19].offered = false;
    view.trays[19].allocated = true;
    let req = segmented_on(&[0, 1, 18, 19], 4, 2);
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
    assert_eq!(domains_of(&topo, p).len(), 3, "{:?}", p.pieces);
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
    let (topo, mut view) = cluster_25_11(4);
    for n in (0..72).filter(|n| n % 18 >= 9) {
        view.trays[n].offered = false; // every rack half busy: no two racks hold 20
    }
    let req = JobRequest::segmented(20, 20);
    assert!(matches!(
        placements(&topo, &view, &req),
        Err(Reject::NotNow(_))
    ));
}
