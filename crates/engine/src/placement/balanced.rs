//! `multi_rack = "balanced"`: a job without `--segment` that is larger than one rack gets the
//! fewest racks, `k = ceil(n / M)`, exactly when `fewest-racks` would start it, but in pieces
//! as equal as the free trays allow. `-N 48` on empty racks is 16 + 16 + 16, not 18 + 18 + 12:
//! the job's traffic between racks goes through each piece's own NICs, so the smallest piece
//! sets the pace of that phase, and a rack with one or two unavailable trays can take a piece.
//!
//! The rule: the smallest cap `c` (the largest piece) such that some `k` racks hold `n` trays
//! counting at most `c` trays each; of those sets the tightest ([`tightest_racks`] with cap
//! `c`); the job spread over them as evenly as their free trays allow. With `c = M` this is
//! the `fewest-racks` set, so `balanced` never waits where `fewest-racks` would start.

use std::cmp::Reverse;

use super::fewest_racks::{tightest_racks, Buckets};
use super::multi_rack::{plan_fewest_racks, rooms_by_group};
use super::rack_order::{RackOrder, Racks};
use super::room::{Ctx, Room};
use super::{Piece, Reject, WaitReason};
use crate::topology::Topology;

/// The balanced pieces of a job of `n` trays over the fewest racks, or wait. With `-w` nodes
/// the racks holding them are filled first, as under `fewest-racks`: the job gets the nodes
/// it names, and its pieces are as the `-w` list makes them.
pub(super) fn plan_balanced(ctx: &Ctx, rooms: &[Room], n: usize) -> Result<Vec<Piece>, Reject> {
    let topo = ctx.topo;
    if !ctx.required.is_empty() {
        return plan_fewest_racks(ctx, Racks::Rooms(rooms), n);
    }
    let k = n.div_ceil(topo.max_rack_size());
    balanced_pieces(topo, rooms, n, k).ok_or(Reject::NotNow(WaitReason::NoFewestRacks {
        racks: k,
        trays: n,
        rule: topo.policy.multi_rack,
    }))
}

/// `n` trays over `k` racks of `rooms` in pieces as equal as the free trays allow (the rule
/// of the module doc with `k` racks), inside one rack group when that is as balanced; None
/// when no `k` racks hold `n`. `plan_balanced` asks for the fewest racks any state allows,
/// a job spilling past its rack limit for the fewest that hold it now (`rack_limit`).
pub(super) fn balanced_pieces(
    topo: &Topology,
    rooms: &[Room],
    n: usize,
    k: usize,
) -> Option<Vec<Piece>> {
    let all: Vec<&Room> = rooms.iter().collect();
    let mut best = balanced_set(topo, &all, n, k)?;
    if topo.policy.prefer_same_group {
        // Inside one group when that is as balanced as the best set across groups.
        let free_of = |set: &Balanced| set.racks.iter().map(|r| r.free).sum::<usize>();
        let in_group = rooms_by_group(topo, rooms)
            .iter()
            .filter_map(|members| balanced_set(topo, members, n, k))
            .filter(|set| set.cap <= best.cap)
            .min_by_key(|set| (set.cap, free_of(set)));
        if let Some(set) = in_group {
            best = set;
        }
    }
    Some(even_pieces(&best.racks, n, best.cap))
}

/// The racks of a balanced plan and its largest piece.
struct Balanced {
    racks: Vec<Room>,
    cap: usize,
}

/// The most balanced set of `k` racks among `rooms`: the least cap with which some set
/// holds `n`, then the tightest set at that cap.
fn balanced_set(topo: &Topology, rooms: &[&Room], n: usize, k: usize) -> Option<Balanced> {
    // The k racks with the most free trays hold the most at any cap.
    let mut frees: Vec<usize> = rooms.iter().map(|r| r.free).collect();
    frees.sort_unstable_by_key(|&f| Reverse(f));
    frees.truncate(k);
    if frees.len() < k {
        return None;
    }
    let holds = |cap: usize| frees.iter().map(|&f| f.min(cap)).sum::<usize>() >= n;
    let cap = (n.div_ceil(k.max(1))..=topo.max_rack_size()).find(|&c| holds(c))?;
    let order = RackOrder::of_rooms(topo, rooms.iter().copied());
    let racks = tightest_racks(&Buckets::of(&order, n, cap, k)?, k, topo)?;
    Some(Balanced { racks, cap })
}

/// `n` trays over `racks` as evenly as their free trays allow, none above `cap`: racks with
/// the fewest free trays are served first, each with its share of what is left.
fn even_pieces(racks: &[Room], n: usize, cap: usize) -> Vec<Piece> {
    let mut order: Vec<&Room> = racks.iter().collect();
    order.sort_by_key(|r| r.free.min(cap));
    let mut left = n;
    let mut shares = Vec::with_capacity(order.len());
    for (i, r) in order.iter().enumerate() {
        let share = left.div_ceil(order.len() - i).min(r.free).min(cap);
        shares.push((r.rack, share));
        left -= share;
    }
    // In the set's order (fullest racks first), as every multi-rack plan lists its pieces.
    racks
        .iter()
        .map(|r| {
            let trays = shares.iter().find(|s| s.0 == r.rack).map_or(0, |s| s.1);
            Piece {
                rack: r.rack,
                trays,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MultiRack, Policy};
    use crate::placement::{placements, JobRequest};
    use crate::testkit::racks;

    fn balanced() -> Policy {
        Policy {
            multi_rack: MultiRack::Balanced,
            ..Policy::default()
        }
    }

    /// Racks `rack1`.. drawn as `maps`, under `multi_rack = "balanced"`.
    fn kit(maps: &[&str]) -> crate::testkit::Kit {
        let rows: Vec<String> = maps
            .iter()
            .enumerate()
            .map(|(i, m)| format!("rack{} {m}", i + 1))
            .collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        racks(&rows).policy(balanced())
    }

    /// The first plan's pieces as sorted `(rack, trays)` pairs.
    fn pieces(maps: &[&str], n: usize) -> Vec<(usize, usize)> {
        let kit = kit(maps);
        let alternatives = placements(&kit.topo, &kit.view, &JobRequest::nodes(n)).expect("placed");
        let mut pieces: Vec<(usize, usize)> = alternatives[0]
            .pieces
            .iter()
            .map(|p| (p.rack, p.trays))
            .collect();
        pieces.sort_unstable();
        pieces
    }

    #[test]
    fn forty_eight_trays_on_empty_racks_are_three_pieces_of_sixteen() {
        let empty = "..................";
        let got = pieces(&[empty, empty, empty, empty], 48);
        assert_eq!(got.iter().map(|p| p.1).collect::<Vec<_>>(), [16, 16, 16]);
    }

    #[test]
    fn racks_with_a_failed_tray_take_equal_pieces() {
        // Three racks with one down tray and one whole rack: 16 + 16 + 16 on the degraded
        // ones keeps the whole rack free.
        let one_down = "x.................";
        let whole = "..................";
        let got = pieces(&[one_down, one_down, one_down, whole], 48);
        assert_eq!(got, [(0, 16), (1, 16), (2, 16)]);
    }

    /// The claim that `fewest-racks` needs whole racks for `-N 48` does not hold: its tightest
    /// set also takes three racks with a down tray each, filled fullest first (without the
    /// preferred cuts, which would make them 16 + 16 + 16 here).
    #[test]
    fn fewest_racks_also_uses_degraded_racks_but_in_uneven_pieces() {
        let one_down = "x.................";
        let whole = "..................";
        let kit = kit(&[one_down, one_down, one_down, whole]).with_policy(|p| {
            p.multi_rack = MultiRack::FewestRacks;
            p.prefer_piece_multiple = 1;
        });
        let got = &placements(&kit.topo, &kit.view, &JobRequest::nodes(48)).unwrap()[0];
        assert_eq!(got.pieces, vec![(0, 17), (1, 17), (2, 14)]);
    }

    #[test]
    fn uneven_free_trays_give_the_most_even_split_they_allow() {
        // 18 + 18 + 12 free: no three racks give more than 12 + 18 + 18, so that is the split;
        // the job starts where fewest-racks would start it.
        let twelve = "AAAAAA............";
        let whole = "..................";
        let got = pieces(&[whole, whole, twelve], 48);
        assert_eq!(got, [(0, 18), (1, 18), (2, 12)]);
        // 40 trays over three racks: 14 + 13 + 13.
        let got = pieces(&[whole, whole, whole], 40);
        let mut sizes: Vec<usize> = got.iter().map(|p| p.1).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, [13, 13, 14]);
    }

    #[test]
    fn waits_exactly_when_fewest_racks_waits() {
        // 54 trays over three racks, but only two are whole.
        let two_used = "AA................";
        let whole = "..................";
        let kit = kit(&[whole, two_used, whole, two_used]);
        let got = placements(&kit.topo, &kit.view, &JobRequest::nodes(54));
        assert!(
            matches!(
                got,
                Err(Reject::NotNow(WaitReason::NoFewestRacks {
                    racks: 3,
                    trays: 54,
                    rule: MultiRack::Balanced
                }))
            ),
            "{got:?}"
        );
    }

    /// Brute force over every set of racks: the largest piece is the least any set allows,
    /// and the job waits exactly when no set of the fewest racks holds it.
    #[test]
    fn matches_brute_force_on_small_clusters() {
        use crate::placement::reference::{balanced_min_cap, fewest_racks_min_free};
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
        for _ in 0..2000 {
            let count: usize = rng.gen_range(2..8);
            let free: Vec<usize> = (0..count).map(|_| rng.gen_range(0..=18)).collect();
            let maps: Vec<String> = free
                .iter()
                .map(|&f| format!("{}{}", ".".repeat(f), "A".repeat(18 - f)))
                .collect();
            let maps: Vec<&str> = maps.iter().map(String::as_str).collect();
            let n: usize = rng.gen_range(19..=(count * 18).min(72));
            let kit = kit(&maps);
            let got = placements(&kit.topo, &kit.view, &JobRequest::nodes(n));
            let case = format!("free {free:?} n {n}: {got:?}");
            match fewest_racks_min_free(&free, n, 18) {
                None => assert!(got.is_err(), "{case}"),
                Some(_) => {
                    let pieces = &got.as_ref().expect(&case)[0].pieces;
                    let largest = pieces.iter().map(|p| p.trays).max();
                    assert_eq!(largest, balanced_min_cap(&free, n, 18), "{case}");
                    assert_eq!(pieces.len(), n.div_ceil(18), "{case}");
                    assert_eq!(pieces.iter().map(|p| p.trays).sum::<usize>(), n, "{case}");
                    assert!(pieces.iter().all(|p| p.trays <= free[p.rack]), "{case}");
                }
            }
        }
    }

    /// A job sized by GPUs (`--gpus=192`, no `-N`: Slurm picks the count) is first offered
    /// just the balanced pieces, which its GPUs fill exactly, then every free tray of the
    /// racks in case Slurm refuses them.
    #[test]
    fn gpu_sized_jobs_are_offered_the_balanced_pieces_first() {
        let empty = "..................";
        let kit = kit(&[empty, empty, empty, empty]);
        let got = placements(&kit.topo, &kit.view, &JobRequest::gpus(192, 72)).unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
        let sizes = |p: &crate::placement::Placement| -> Vec<usize> {
            p.pieces.iter().map(|p| p.trays).collect()
        };
        assert_eq!(sizes(&got[0]), [16, 16, 16]);
        assert_eq!(got[0].nodes.len(), 48);
        assert_eq!(sizes(&got[1]), [18, 18, 18]);
        assert!(!got[0].exact && !got[1].exact);
        // A node range is not sized by its demand: Slurm picks the count in the racks.
        let range = JobRequest {
            max_nodes: 54,
            ..JobRequest::nodes(48)
        };
        let got = placements(&kit.topo, &kit.view, &range).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(sizes(&got[0]), [18, 18, 18]);
    }
}
