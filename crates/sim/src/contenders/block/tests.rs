use super::*;
use crate::testkit::racks;

fn empty(racks: usize) -> Vec<bool> {
    vec![true; racks * 18]
}

fn racks_of(nodes: &[usize]) -> Vec<usize> {
    let mut r: Vec<usize> = nodes.iter().map(|n| n / 18).collect();
    r.sort_unstable();
    r.dedup();
    r
}

fn per_rack(nodes: &[usize], racks: usize) -> Vec<usize> {
    let mut c = vec![0; racks];
    for n in nodes {
        c[n / 18] += 1;
    }
    c
}

#[test]
fn lab_block_sizes_stop_at_the_cluster_size() {
    assert_eq!(BlockConfig::lab(4, 18).block_sizes(), vec![18, 36, 72]);
    assert_eq!(BlockConfig::lab(3, 18).block_sizes(), vec![18, 36]);
    assert_eq!(BlockConfig::lab(1, 18).block_sizes(), vec![18]);
    assert_eq!(
        BlockConfig::lab(278, 18).block_sizes().last(),
        Some(&(18 * 256))
    );
    assert!(BlockConfig::with_block_sizes(4, 18, &[18, 54]).is_err());
    assert!(BlockConfig::with_block_sizes(4, 18, &[36]).is_err());
}

#[test]
fn full_rack_job_gets_one_whole_rack_the_later_one_on_ties() {
    let nodes = choose(&empty(4), 4, 18, 18, None).unwrap();
    assert_eq!(nodes, (54..72).collect::<Vec<_>>());
}

#[test]
fn small_job_goes_to_the_rack_with_the_fewest_free_nodes() {
    let free = racks(&[
        "rack1 ...... ...... ......",
        "rack2 ..AAAA AAAAAA ......", // 8 free
        "rack3 ...... ...... ......",
        "rack4 ...... ...... ......",
    ])
    .offered();
    let nodes = choose(&free, 4, 18, 6, None).unwrap();
    assert_eq!(nodes, vec![18, 19, 30, 31, 32, 33]);
    // 9 nodes do not fit rack2 any more: the later of the whole racks.
    assert_eq!(racks_of(&choose(&free, 4, 18, 9, None).unwrap()), vec![3]);
}

#[test]
fn twenty_nodes_in_segments_of_ten_get_ten_plus_ten() {
    let nodes = choose(&empty(4), 4, 18, 20, Some(10)).unwrap();
    assert_eq!(per_rack(&nodes, 4), vec![0, 0, 10, 10]);
    assert_eq!(&nodes[..10], &(54..64).collect::<Vec<_>>()[..]);
}

#[test]
fn nineteen_nodes_take_a_level_one_block_of_two_racks() {
    let nodes = choose(&empty(4), 4, 18, 19, None).unwrap();
    // Level 1 = {rack1,rack2} or {rack3,rack4}: equal, so the later pair; the greedy fill
    // takes the later full rack first, then one node of the other.
    assert_eq!(per_rack(&nodes, 4), vec![0, 0, 1, 18]);
    assert_eq!(nodes[18], 36);
}

#[test]
fn a_job_never_straddles_an_aligned_pair_boundary() {
    // rack2 and rack3 have 10 free each, racks 1 and 4 are busy: 20 nodes would fit rack2+3,
    // but those are in different level-1 blocks, so block waits.
    let free = racks(&[
        "rack1 AAAAAA AAAAAA AAAAAA",
        "rack2 ...... ....AA AAAAAA",
        "rack3 ...... ....AA AAAAAA",
        "rack4 AAAAAA AAAAAA AAAAAA",
    ])
    .offered();
    assert_eq!(choose(&free, 4, 18, 20, None), None);
    // With segments, each segment is its own sub-job and does not care about pairs.
    assert_eq!(
        per_rack(&choose(&free, 4, 18, 20, Some(10)).unwrap(), 4),
        vec![0, 10, 10, 0]
    );
}

#[test]
fn invalid_segments_are_rejected_not_pending() {
    let cfg = BlockConfig::lab(4, 18);
    for (n, s) in [(4, 20), (5, 2), (10, 3), (18, 16)] {
        assert!(matches!(
            evaluate(&cfg, &empty(4), n, Some(s)),
            Err(BlockError::Rejected(_))
        ));
    }
    assert!(matches!(
        evaluate(&cfg, &empty(4), 73, None),
        Err(BlockError::Rejected(_))
    ));
    assert_eq!(
        evaluate(&cfg, &[false; 72], 4, None),
        Err(BlockError::Pending)
    );
    // Segment 0 is Slurm's "unset".
    assert_eq!(choose(&empty(4), 4, 18, 18, Some(0)).unwrap().len(), 18);
}

#[test]
fn a_drained_tray_keeps_full_rack_jobs_out_of_its_rack() {
    let kit = racks(&["rack1 ....-. ...... ......", "rack2 ...... ...... ......"]);
    let free = kit.offered();
    assert_eq!(racks_of(&choose(&free, 2, 18, 18, None).unwrap()), vec![1]);
    let free = kit.draw("rack2", "..-... ...... ......").offered();
    assert_eq!(choose(&free, 2, 18, 18, None), None);
    let seg = choose(&free, 2, 18, 16, Some(4)).unwrap();
    assert_eq!(seg.len(), 16);
    assert!(!seg.contains(&4) && !seg.contains(&20));
}

#[test]
fn without_a_large_enough_level_the_cluster_is_one_block_with_llblock_tracking() {
    // BlockSizes=18 only: a 20-node job has no level, so the whole cluster is one block and
    // racks are llblocks (max 2). The fullest rack first, then the smallest rack that covers
    // the remaining 2 nodes.
    let cfg = BlockConfig::with_block_sizes(4, 18, &[18]).unwrap();
    let kit = racks(&[
        "rack1 ...... ...... ......",
        "rack2 AAAAAA AA.... ......", // 10 free
        "rack3 AAAAAA ...... ......", // 12 free
        "rack4 ...... ...... ......",
    ]);
    let free = kit.offered();
    let nodes = evaluate(&cfg, &free, 20, None).unwrap();
    assert_eq!(per_rack(&nodes, 4), vec![0, 2, 0, 18]);
    // 40 nodes with rack1 busy: three llblocks allowed (ceil(40/18)), largest first.
    let free = kit.draw("rack1", "AAAAAA AAAAAA AAAAAA").offered();
    let nodes = evaluate(&cfg, &free, 40, None).unwrap();
    assert_eq!(per_rack(&nodes, 4), vec![0, 10, 12, 18]);
    assert_eq!(evaluate(&cfg, &free, 41, None), Err(BlockError::Pending));
}

/// Differential test: replays `tests/fixtures/block-24.11.5.trace`, recorded from the real
/// Slurm 24.11.5 topology/block by `scripts/record-block-fixture.sh`. The model must choose
/// exactly Slurm's nodes, and pend or reject exactly when Slurm did.
#[test]
fn matches_the_recorded_slurm_fixture() {
    let text = include_str!("../../../../../tests/fixtures/block-24.11.5.trace");
    let (mut racks, mut trays) = (0, 0);
    let index =
        |name: &str| -> usize { name.trim_start_matches("gb").parse::<usize>().unwrap() - 1 };
    let expand = |list: &str| -> Vec<usize> {
        if list == "none" {
            return Vec::new();
        }
        crate::hostlist::expand(list)
            .unwrap()
            .iter()
            .map(|n| index(n))
            .collect()
    };
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["racks", r, "trays", t] => {
                racks = r.parse().unwrap();
                trays = t.parse().unwrap();
            }
            ["submit", _id, nodes, segment, free, "->", result] => {
                let field = |w: &str, key: &str| w.strip_prefix(key).unwrap().to_string();
                let n: usize = field(nodes, "nodes=").parse().unwrap();
                let s: usize = field(segment, "segment=").parse().unwrap();
                let mut map = vec![false; racks * trays];
                for i in expand(&field(free, "free=")) {
                    map[i] = true;
                }
                let got = evaluate(&BlockConfig::lab(racks, trays), &map, n, Some(s));
                match *result {
                    "REJECTED" => assert!(
                        matches!(got, Err(BlockError::Rejected(_))),
                        "{line}: got {got:?}"
                    ),
                    "PENDING" => assert_eq!(got, Err(BlockError::Pending), "{line}"),
                    list => {
                        let mut nodes = got.unwrap_or_else(|e| panic!("{line}: {e}"));
                        nodes.sort_unstable();
                        assert_eq!(nodes, expand(list), "{line}");
                    }
                }
                checked += 1;
            }
            _ => {}
        }
    }
    assert_eq!(checked, 49, "submissions replayed");
}

/// Free maps with `free[r]` free trays at the start of each rack.
fn free_map(trays: usize, free: &[usize]) -> Vec<bool> {
    free.iter()
        .flat_map(|&f| (0..trays).map(move |t| t < f))
        .collect()
}

/// GPU-sized jobs (`--gpus=8`, a minimum of one node): block picks the fullest block that has
/// a free node and waits when that block lacks the GPUs, even while another rack is empty.
#[test]
fn gpu_sized_jobs_take_the_fullest_block_with_a_free_node_or_wait() {
    // Ten racks of four, racks 1-9 with one free tray, rack10 empty: rack9 wins the tie
    // (later block), has 4 GPUs, so the job waits.
    let cfg = BlockConfig::lab(10, 4);
    let mut free = free_map(4, &[1; 9]);
    free.extend([true; 4]);
    assert_eq!(evaluate_gpu_sized(&cfg, &free, 2), None);
    // Four racks of 18 with 1, 3, 18, 18 free: rack1 is chosen and cannot hold 8 GPUs.
    let cfg = BlockConfig::lab(4, 18);
    assert_eq!(
        evaluate_gpu_sized(&cfg, &free_map(18, &[1, 3, 18, 18]), 2),
        None
    );
    // With rack1 full, rack2 (3 free) is chosen and holds 2 trays.
    assert_eq!(
        evaluate_gpu_sized(&cfg, &free_map(18, &[0, 3, 18, 18]), 2),
        Some(vec![18, 19])
    );
    // More trays than a block never fit.
    assert_eq!(evaluate_gpu_sized(&cfg, &[true; 72], 19), None);
}
