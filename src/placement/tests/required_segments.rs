//! `-w` with several segments: never before Slurm 25.11; from 25.11, as topology/block
//! there, `-w` names every node of the job and each rack's share is whole segments.

use super::*;

fn segmented_on(nodes: &[usize], n: usize, s: usize) -> JobRequest {
    JobRequest {
        required: nodes.to_vec(),
        ..JobRequest::segmented(n, s)
    }
}

fn cluster_25_11(racks: usize) -> (Topology, ClusterView) {
    let (mut topo, view) = cluster(racks);
    topo.required_with_segments = true;
    (topo, view)
}

#[test]
fn before_25_11_required_nodes_and_several_segments_never_run() {
    let (topo, view) = cluster(4);
    let req = segmented_on(&[0, 1, 2, 3], 4, 2);
    assert!(matches!(plan(&topo, &view, &req), Err(Reject::Never(_))));
    // One segment with -w stays a one-rack job.
    let p = &plan(&topo, &view, &segmented_on(&[0, 1], 2, 2)).unwrap()[0];
    assert_eq!(p.nodes, vec![0, 1]);
}

/// SchedMD's test_150_2 cases, blocks of 4 carried over to racks of 18.
#[test]
fn from_25_11_the_named_nodes_are_split_into_segments_per_rack() {
    let (topo, view) = cluster_25_11(4);
    let p = &plan(&topo, &view, &segmented_on(&[0, 1, 2, 3], 4, 2)).unwrap()[0];
    assert_eq!(p.pieces, vec![(0, 4)]);
    assert_eq!(p.nodes, vec![0, 1, 2, 3]);
    let p = &plan(&topo, &view, &segmented_on(&[0, 1, 18, 19], 4, 2)).unwrap()[0];
    assert_eq!(p.pieces, vec![(0, 2), (1, 2)]);
    let p = &plan(&topo, &view, &segmented_on(&[0, 1, 2, 18, 19, 20], 6, 3)).unwrap()[0];
    assert_eq!(p.pieces, vec![(0, 3), (1, 3)]);
    assert!(p.exact);
}

#[test]
fn from_25_11_named_nodes_that_are_not_whole_segments_per_rack_never_run() {
    let (topo, view) = cluster_25_11(4);
    // 3 + 1: the second segment would span racks.
    let req = segmented_on(&[0, 1, 2, 18], 4, 2);
    assert!(matches!(plan(&topo, &view, &req), Err(Reject::Never(_))));
    // Fewer -w nodes than the job: block refuses it too.
    let req = segmented_on(&[0, 1], 4, 2);
    assert!(matches!(plan(&topo, &view, &req), Err(Reject::Never(_))));
}

#[test]
fn from_25_11_a_busy_named_node_makes_the_job_wait() {
    let (topo, mut view) = cluster_25_11(4);
    view.trays[19].candidate = false;
    view.trays[19].in_use = true;
    let req = segmented_on(&[0, 1, 18, 19], 4, 2);
    assert!(matches!(plan(&topo, &view, &req), Err(Reject::NotNow(_))));
}
