//! `piece_multiple = m`: a multi-rack job without `--segment` is cut only between groups of
//! `m` trays (every piece but the last, in node order, a multiple of `m`), on the fewest racks
//! that allow it; jobs that fit one rack, `--segment` jobs and `-w` jobs are placed as before.

use super::*;

fn multiple(m: u32) -> impl FnOnce(&mut Policy) {
    move |p| p.piece_multiple = m
}

/// The first alternative's pieces as `(rack, trays)` pairs, in rack (node) order.
fn pieces(topo: &Topology, view: &ClusterView, req: &JobRequest) -> Vec<(usize, usize)> {
    let p = &placements(topo, view, req).expect("placed")[0];
    let mut pieces: Vec<(usize, usize)> = p.pieces.iter().map(|p| (p.rack, p.trays)).collect();
    pieces.sort_unstable();
    pieces
}

#[test]
fn a_32_tray_job_is_cut_16_and_16_not_18_and_14() {
    let kit = racks(&["rack1 ..................", "rack2 ..............AAAA"]);
    let (topo, view) = kit.clone().parts();
    // By default the fullest rack first: 18 + 14 cuts the third group of 8 trays.
    assert_eq!(
        pieces(&topo, &view, &JobRequest::nodes(32)),
        [(0, 18), (1, 14)]
    );
    let (topo, view) = kit.with_policy(multiple(8)).parts();
    // A rack counts its free trays rounded down to whole groups: 14 free hold one group of
    // 8, not enough for 16 + 16, so the job waits for the fewest racks that hold it cut...
    assert!(matches!(
        placements(&topo, &view, &JobRequest::nodes(32)),
        Err(Reject::NotNow(WaitReason::NoFewestRacks {
            racks: 2,
            trays: 32,
            ..
        }))
    ));
    // ... and a 20-tray job is 16 + 4 rather than 18 + 2.
    assert_eq!(
        pieces(&topo, &view, &JobRequest::nodes(20)),
        [(0, 16), (1, 4)]
    );
    let (topo, view) = racks(&["rack1 ..................", "rack2 .................."])
        .with_policy(multiple(8))
        .parts();
    assert_eq!(
        pieces(&topo, &view, &JobRequest::nodes(32)),
        [(0, 16), (1, 16)]
    );
}

#[test]
fn the_piece_that_is_not_a_multiple_is_the_last_in_node_order() {
    // rack1 has 10 free trays (one group), rack2 and rack3 18: 20 = 8 + 12 would cut, so
    // 16 + 4 over two racks, with the 4 in the later rack.
    let (topo, view) = racks(&[
        "rack1 ..........AAAAAAAA",
        "rack2 ..................",
        "rack3 ..................",
    ])
    .with_policy(multiple(8))
    .parts();
    let got = pieces(&topo, &view, &JobRequest::nodes(20));
    assert_eq!(got.iter().map(|p| p.1).sum::<usize>(), 20);
    let last = got.last().unwrap();
    assert!(got[..got.len() - 1].iter().all(|p| p.1 % 8 == 0), "{got:?}");
    assert!(got.iter().all(|p| p.0 <= last.0), "{got:?}");
}

#[test]
fn jobs_that_fit_one_rack_and_segment_jobs_are_placed_as_before() {
    let kit = racks(&["rack1 ..........AAAAAAAA", "rack2 .............BBBBB"]);
    let (plain_topo, plain_view) = kit.clone().parts();
    let (topo, view) = kit.with_policy(multiple(8)).parts();
    for req in [
        JobRequest::nodes(10),
        JobRequest::nodes(13),
        JobRequest {
            segment: Some(4),
            ..JobRequest::nodes(20)
        },
    ] {
        assert_eq!(
            placements(&topo, &view, &req),
            placements(&plain_topo, &plain_view, &req),
            "{req:?}"
        );
    }
}

#[test]
fn a_flexible_job_is_offered_the_cut_pieces_first() {
    let kit = racks(&["rack1 ..................", "rack2 .................."]);
    let (topo, view) = kit.with_policy(multiple(8)).parts();
    // --gpus=128 with a node range: 32 trays, Slurm picks the count.
    let req = JobRequest {
        max_nodes: 36,
        ..sized_by(1, 128, 0)
    };
    let got = placements(&topo, &view, &req).unwrap();
    let first: Vec<usize> = got[0].pieces.iter().map(|p| p.trays).collect();
    assert_eq!(first, [16, 16]);
    assert!(got.len() > 1, "the racks' free trays come next");
}

/// Random racks: a cut placement exists exactly when the fewest racks that hold the job at
/// multiples of `m` exist (the brute-force reference on the rounded free trays), and it is
/// one: every piece but the last in node order a multiple of `m`, within the free trays.
#[test]
fn a_cut_placement_exists_whenever_the_reference_finds_one() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    for _ in 0..1500 {
        let m = [2usize, 4, 8, 9][rng.gen_range(0..4)];
        let count: usize = rng.gen_range(2..6);
        let free: Vec<usize> = (0..count).map(|_| rng.gen_range(0..=18)).collect();
        let n: usize = rng.gen_range(19..=(count * 18).min(72));
        let rows: Vec<String> = free
            .iter()
            .enumerate()
            .map(|(r, &f)| format!("rack{r} {}{}", ".".repeat(f), "A".repeat(18 - f)))
            .collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let (topo, view) = racks(&rows).with_policy(multiple(m as u32)).parts();
        let cap = 18 / m * m;
        let rounded: Vec<usize> = free.iter().map(|f| f / m * m).collect();
        let best = reference::fewest_racks_min_free(&rounded, n, cap);
        let got = placements(&topo, &view, &JobRequest::nodes(n));
        match (best, got) {
            (None, Err(Reject::NotNow(_))) => {}
            (Some(total), Ok(p)) => {
                let mut got: Vec<(usize, usize)> =
                    p[0].pieces.iter().map(|p| (p.rack, p.trays)).collect();
                got.sort_unstable();
                let case = format!("m {m} free {free:?} n {n}: {got:?}");
                assert_eq!(got.len(), n.div_ceil(cap), "{case}");
                assert_eq!(
                    got.iter().map(|p| rounded[p.0]).sum::<usize>(),
                    total,
                    "{case}"
                );
                assert_eq!(got.iter().map(|p| p.1).sum::<usize>(), n, "{case}");
                assert!(got.iter().all(|&(r, t)| t > 0 && t <= rounded[r]), "{case}");
                assert!(got[..got.len() - 1].iter().all(|p| p.1 % m == 0), "{case}");
            }
            (best, got) => panic!("m {m} free {free:?} n {n}: reference {best:?}, got {got:?}"),
        }
    }
}
