//! `piece_multiple = m`: a multi-rack job without `--segment` is cut only between groups of
//! `m` trays (every piece but the last, in node order, a multiple of `m`), on the fewest racks
//! that allow it; jobs that fit one rack, `--segment` jobs and `-w` jobs are placed as before.
//! `prefer_piece_multiple = p` (8 by default) cuts so too when the racks the job gets anyway
//! allow it, and never changes those racks.

use super::*;

fn multiple(m: u32) -> impl FnOnce(&mut Policy) {
    move |p| p.piece_multiple = m
}

fn preferred(m: u32) -> impl FnOnce(&mut Policy) {
    move |p| p.prefer_piece_multiple = m
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
    // rack2's 14 free trays cannot take 16, so the preference gives way to the fullest
    // rack first: 18 + 14 cuts the third group of 8 trays.
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
    // Where the preference gives way (the lab's case), the rule takes other racks.
    let kit = racks(&[
        "rack1 AAAA..............",
        "rack2 ..................",
        "rack3 ..................",
        "rack4 ..................",
    ]);
    let (topo, view) = kit.clone().parts();
    assert_eq!(
        pieces(&topo, &view, &JobRequest::nodes(32)),
        [(0, 14), (1, 18)]
    );
    let (topo, view) = kit.with_policy(multiple(8)).parts();
    assert_eq!(
        pieces(&topo, &view, &JobRequest::nodes(32)),
        [(1, 16), (2, 16)]
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

/// Under the rule and under the default preference alike.
#[test]
fn a_flexible_job_is_offered_the_cut_pieces_first() {
    let kit = racks(&["rack1 ..................", "rack2 .................."]);
    for (topo, view) in [kit.clone().parts(), kit.with_policy(multiple(8)).parts()] {
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
}

/// Two to five 18-tray racks with random free trays, and a job larger than a rack they
/// could hold together: `(free trays per rack, job trays, kit)`.
fn random_racks(rng: &mut impl rand::Rng) -> (Vec<usize>, usize, crate::testkit::Kit) {
    let count: usize = rng.gen_range(2..6);
    let free: Vec<usize> = (0..count).map(|_| rng.gen_range(0..=18)).collect();
    let n: usize = rng.gen_range(19..=(count * 18).min(72));
    let rows: Vec<String> = free
        .iter()
        .enumerate()
        .map(|(r, &f)| format!("rack{r} {}{}", ".".repeat(f), "A".repeat(18 - f)))
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    (free, n, racks(&rows))
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
        let (free, n, kit) = random_racks(&mut rng);
        let (topo, view) = kit.with_policy(multiple(m as u32)).parts();
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

#[test]
fn by_default_two_empty_racks_give_a_32_tray_job_16_and_16() {
    let kit = racks(&[
        "rack1 ..................",
        "rack2 ..................",
        "rack3 ...",
    ]);
    let (topo, view) = kit.clone().parts();
    assert_eq!(
        pieces(&topo, &view, &JobRequest::nodes(32)),
        [(0, 16), (1, 16)]
    );
    // 40 trays: three racks either way; 16 + 16 + 8, not 18 + 18 + 4.
    let (topo, view) = racks(&[
        "rack1 ..................",
        "rack2 ..................",
        "rack3 ........",
    ])
    .parts();
    assert_eq!(
        pieces(&topo, &view, &JobRequest::nodes(40)),
        [(0, 16), (1, 16), (2, 8)]
    );
    // Without the preference, the fullest racks first.
    let (topo, view) = kit.with_policy(preferred(1)).parts();
    assert_eq!(
        pieces(&topo, &view, &JobRequest::nodes(32)),
        [(0, 18), (1, 14)]
    );
}

/// Random racks: the preference keeps the racks and the tray count the fewest-racks rule
/// chose, and cuts every piece but the last (in node order) on a multiple of `p` whenever
/// some split of the job over those racks does (brute force over every split).
#[test]
fn the_preference_keeps_the_racks_and_cuts_on_groups_whenever_those_racks_allow() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    for _ in 0..1500 {
        let p = [2usize, 4, 8, 16][rng.gen_range(0..4)];
        let (free, n, kit) = random_racks(&mut rng);
        let (plain_topo, plain_view) = kit.clone().with_policy(preferred(1)).parts();
        let (topo, view) = kit.with_policy(preferred(p as u32)).parts();
        let req = JobRequest::nodes(n);
        let (Ok(plain), Ok(got)) = (
            placements(&plain_topo, &plain_view, &req),
            placements(&topo, &view, &req),
        ) else {
            assert_eq!(
                placements(&plain_topo, &plain_view, &req).is_ok(),
                placements(&topo, &view, &req).is_ok(),
                "p {p} free {free:?} n {n}: the preference never makes a job wait"
            );
            continue;
        };
        let racks_of = |pl: &Placement| {
            let mut r: Vec<usize> = pl.pieces.iter().map(|p| p.rack).collect();
            r.sort_unstable();
            r
        };
        let case = format!("p {p} free {free:?} n {n}: {:?}", got[0].pieces);
        assert_eq!(racks_of(&got[0]), racks_of(&plain[0]), "{case}");
        let mut cut: Vec<(usize, usize)> =
            got[0].pieces.iter().map(|p| (p.rack, p.trays)).collect();
        cut.sort_unstable();
        assert_eq!(cut.iter().map(|c| c.1).sum::<usize>(), n, "{case}");
        assert!(cut.iter().all(|&(r, t)| t > 0 && t <= free[r]), "{case}");
        let chosen: Vec<usize> = cut.iter().map(|c| free[c.0]).collect();
        let aligned = cut[..cut.len() - 1].iter().all(|c| c.1 % p == 0);
        assert_eq!(aligned, some_split_is_cut_on(&chosen, n, p), "{case}");
    }
}

/// Can `n` trays be split over racks with these free trays (in node order, each at least
/// one) so that every piece but the last is a multiple of `p`?
fn some_split_is_cut_on(free: &[usize], n: usize, p: usize) -> bool {
    match free {
        [] => false,
        [last] => (1..=*last).contains(&n),
        [first, rest @ ..] => (1..=*first.min(&n))
            .filter(|t| t % p == 0)
            .any(|t| some_split_is_cut_on(rest, n - t, p)),
    }
}
