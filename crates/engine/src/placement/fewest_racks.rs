//! `multi_rack = "fewest-racks"`: a job without `--segment` that is larger than one rack gets
//! exactly the fewest racks that can hold it, `k = ceil(n / M)` for racks of at most `M`
//! trays, or waits. Of all sets of `k` racks that hold it, it takes the one with the fewest
//! free trays, so partly used and degraded racks fill up and whole healthy racks stay free
//! for full-rack jobs (fewer whole racks break ties).
//!
//! Why this is cheap: `k` racks hold `n` trays exactly when their *deficits* (`M - free`) add
//! up to at most `D = k*M - n`, which is below `M`. So only racks with a deficit of at most
//! `D` matter, and the search runs over deficit values (at most 18 for NVL72), not racks.

use super::rack_order::RackOrder;
use super::room::Room;
use super::Piece;
use crate::config::MultiRack;
use crate::topology::Topology;

/// Stop the search after this many steps and keep the best set found so far (only reachable
/// with unusually large racks; 18-tray racks need at most a few thousand).
const SEARCH_BUDGET: usize = 100_000;

/// The pieces of the tightest `ceil(n / max_rack)`-rack set among `rooms` (fullest racks
/// first, the remainder last), or `None` if no such set exists now. With `multiple` above 1
/// the set is searched on each rack's free trays rounded down to a multiple of it (see
/// [`aligned_set`]).
pub(super) fn tightest_set(
    order: &RackOrder,
    n: usize,
    max_rack: usize,
    cuts: Cuts,
    topo: &Topology,
) -> Option<Vec<Piece>> {
    if let Some(cap) = aligned_cap(max_rack, cuts.multiple) {
        return aligned_set(order, n, cap, cuts, topo);
    }
    let k = n.div_ceil(max_rack);
    let racks = tightest_racks(&Buckets::of(order, n, max_rack, k)?, k, topo)?;
    pieces_of(&racks, n, cuts.preferred, topo)
}

/// Where a multi-rack job may be cut: after any multiple of `multiple` trays
/// (`piece_multiple`, a rule), and, when the chosen racks allow it, after a multiple of
/// `preferred` (`prefer_piece_multiple`, a preference that never changes the racks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cuts {
    pub multiple: usize,
    pub preferred: usize,
}

impl Cuts {
    /// Any cut: the nodes `-w` names set them.
    pub const ANY: Cuts = Cuts {
        multiple: 1,
        preferred: 1,
    };

    /// The policy's cuts. The preference counts only where it keeps the rule (a multiple of
    /// it), which topology.toml checks.
    pub fn of(topo: &Topology) -> Cuts {
        let multiple = topo.policy.piece_multiple.max(1) as usize;
        let preferred = topo.policy.prefer_piece_multiple.max(1) as usize;
        Cuts {
            multiple,
            preferred: if preferred % multiple == 0 {
                preferred
            } else {
                1
            },
        }
    }

    /// Do `pieces` (of a multi-rack job) fall on the preferred cuts, so that Slurm should be
    /// offered exactly them first? Without it a job whose count Slurm picks is offered the
    /// racks' free trays, as before the preference.
    pub fn cut_on_preferred(&self, pieces: &[Piece], topo: &Topology) -> bool {
        let last = pieces.iter().max_by_key(|p| first_node(topo, p.rack));
        self.preferred > 1
            && topo.policy.multi_rack == MultiRack::FewestRacks
            && pieces.len() > 1
            && pieces
                .iter()
                .filter(|p| Some(*p) != last)
                .all(|p| p.trays % self.preferred == 0)
    }
}

/// How many racks a job of `n` trays takes at least: `ceil(n / c)` where `c` is the most a
/// rack gives it (its size, or with `piece_multiple` that rounded down to a multiple).
pub(super) fn fewest_racks(n: usize, max_rack: usize, multiple: usize) -> usize {
    let cap = aligned_cap(max_rack, multiple).unwrap_or(max_rack);
    n.div_ceil(cap.max(1))
}

/// The most trays a rack of `max_rack` gives a job cut between groups of `multiple`, when
/// such cuts apply (a multiple above 1 that fits a rack).
fn aligned_cap(max_rack: usize, multiple: usize) -> Option<usize> {
    (multiple > 1 && max_rack >= multiple).then(|| max_rack / multiple * multiple)
}

/// `piece_multiple = m`: the tightest set of the fewest racks when each rack counts only a
/// multiple of `m` of its free trays, filled in node order so that every piece but the last
/// is such a multiple (Slurm ranks a job's nodes in node order, so the cuts fall on group
/// boundaries and only the job's own partial last group, if any, ends in the last rack).
fn aligned_set(
    order: &RackOrder,
    n: usize,
    cap: usize,
    cuts: Cuts,
    topo: &Topology,
) -> Option<Vec<Piece>> {
    let multiple = cuts.multiple;
    let k = n.div_ceil(cap);
    let rounded: Vec<Room> = (0..order.len())
        .map(|at| {
            let r = order.room_at(at);
            Room {
                free: r.free / multiple * multiple,
                ..r
            }
        })
        .collect();
    let rounded = RackOrder::of_rooms(topo, &rounded);
    let mut racks = tightest_racks(&Buckets::of(&rounded, n, cap, k)?, k, topo)?;
    in_node_order(&mut racks, topo);
    pieces_of(&racks, n, cuts.preferred, topo)
}

fn in_node_order(racks: &mut [Room], topo: &Topology) {
    racks.sort_by_key(|r| first_node(topo, r.rack));
}

/// A rack's place in node order (Slurm ranks a job's nodes that way): its first node.
fn first_node(topo: &Topology, rack: usize) -> Option<usize> {
    topo.racks[rack].nodes.iter().min().copied()
}

/// `n` trays from `racks`: cut after multiples of `preferred` trays when these racks allow it
/// ([`cut_on_multiples`]), else each rack in the given order giving all its free trays but
/// the last.
fn pieces_of(racks: &[Room], n: usize, preferred: usize, topo: &Topology) -> Option<Vec<Piece>> {
    if preferred > 1 {
        let mut ordered = racks.to_vec();
        in_node_order(&mut ordered, topo);
        if let Some(pieces) = cut_on_multiples(&ordered, n, preferred) {
            return Some(pieces);
        }
    }
    fill_in_order(racks, n)
}

/// `n` trays from `racks` in node order, every piece but the last a multiple of `m`, or
/// `None` when these racks cannot be cut so. Each rack but the last gives the largest
/// multiple it can, which leaves the least to the last rack, so this finds a cut whenever
/// one exists.
fn cut_on_multiples(racks: &[Room], n: usize, m: usize) -> Option<Vec<Piece>> {
    let mut pieces = Vec::with_capacity(racks.len());
    let mut left = n;
    for (i, r) in racks.iter().enumerate() {
        let last = i + 1 == racks.len();
        let take = if last { left } else { r.free.min(left) / m * m };
        if take == 0 || take > r.free || (!last && take == left) {
            return None;
        }
        pieces.push(Piece {
            rack: r.rack,
            trays: take,
        });
        left -= take;
    }
    Some(pieces)
}

/// `n` trays from `racks` in their order, each giving all its free trays but the last.
fn fill_in_order(racks: &[Room], n: usize) -> Option<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut left = n;
    for h in racks {
        let take = h.free.min(left);
        pieces.push(Piece {
            rack: h.rack,
            trays: take,
        });
        left -= take;
    }
    (left == 0).then_some(pieces)
}

/// The racks a set of `k` racks holding `n` trays, each counting at most `cap` of its free
/// trays, can be made of, by deficit: `len[d]` racks miss `d` of `cap` free trays (`d = 0`:
/// they have `cap` or more), and `front[d]` are the first `k` of them in the order a set
/// takes them (fewest free trays, then [`Room::tie_break`]; with `prefer_degraded`, not
/// whole first, so that a whole rack of a smaller size is kept when another does as well).
pub(super) struct Buckets {
    len: Vec<usize>,
    front: Vec<Vec<Room>>,
}

impl Buckets {
    /// The buckets of the racks of `order`; `None` when no `k` racks can hold `n` at that
    /// cap. The order has each bucket's racks in the order a set takes them, and only the
    /// front of each is read.
    pub(super) fn of(order: &RackOrder, n: usize, cap: usize, k: usize) -> Option<Buckets> {
        let budget = (k * cap).checked_sub(n)?;
        // A rack without a free tray would be a piece of none (only reachable when `k`
        // racks leave more than `cap` trays to spare).
        let at = |d: usize| match d {
            0 => order.at_least(cap),
            d if d < cap => order.exactly(cap - d),
            _ => 0..0,
        };
        let ranges: Vec<std::ops::Range<usize>> = (0..=budget).map(at).collect();
        Some(Buckets {
            len: ranges.iter().map(|r| r.len()).collect(),
            front: ranges
                .into_iter()
                .map(|r| r.take(k).map(|at| order.room_at(at)).collect())
                .collect(),
        })
    }
}

/// The tightest set of `k` racks of `buckets` (see [`Buckets`]), fullest first; `None` if
/// there is none. The cap is the largest rack for `fewest-racks`, the largest piece for
/// `balanced`, with `k = ceil(n / cap)` racks for both; a job spilling past its rack limit
/// (`rack_limit`) asks for the fewest racks that hold it now, which may be more. Tightest:
/// the fewest counted free trays, then (with `prefer_degraded`) the most racks that are not
/// whole; racks that can give all `cap` trays go best fit first (fewest free trays), then by
/// [`Room::tie_break`].
pub(super) fn tightest_racks(buckets: &Buckets, k: usize, topo: &Topology) -> Option<Vec<Room>> {
    let budget = buckets.len.len() - 1;
    let values: Vec<usize> = (1..=budget).rev().filter(|&d| buckets.len[d] > 0).collect();
    let mut search = Search {
        lens: &buckets.len,
        values: &values,
        k,
        count_tiebreak: topo.policy.prefer_degraded,
        counts: vec![0; values.len()],
        best: None,
        steps: 0,
    };
    search.run(0, 0, 0, budget);
    let (_, counts) = search.best?;
    let partial = counts.iter().sum::<usize>();
    let full = buckets.front[0].iter().take(k - partial);
    let chosen = values
        .iter()
        .zip(&counts)
        .rev() // smallest deficits (fullest racks) first
        .flat_map(|(&d, &c)| buckets.front[d].iter().take(c));
    Some(full.chain(chosen).cloned().collect())
}

/// Depth-first search over how many racks of each deficit value to use.
struct Search<'a> {
    /// Racks per deficit value.
    lens: &'a [usize],
    /// Non-empty deficit values, largest first.
    values: &'a [usize],
    k: usize,
    /// Prefer more non-whole racks on equal total deficit.
    count_tiebreak: bool,
    counts: Vec<usize>,
    /// ((total deficit, non-whole racks), counts per value)
    best: Option<((usize, usize), Vec<usize>)>,
    steps: usize,
}

impl Search<'_> {
    fn key(&self, deficit: usize, racks: usize) -> (usize, usize) {
        (deficit, if self.count_tiebreak { racks } else { 0 })
    }

    /// `i`: next value index; `deficit`/`racks`: chosen so far; `left`: deficit still allowed.
    fn run(&mut self, i: usize, deficit: usize, racks: usize, left: usize) {
        self.steps += 1;
        if self.steps > SEARCH_BUDGET {
            return;
        }
        let bound = self.key(deficit + left, racks + left.min(self.k - racks));
        if self.best.as_ref().is_some_and(|(b, _)| bound <= *b) {
            return; // cannot beat the best set found
        }
        if i == self.values.len() {
            let key = self.key(deficit, racks);
            let better = self.best.as_ref().map_or(true, |(b, _)| key > *b);
            if better && self.k - racks <= self.lens[0] {
                self.best = Some((key, self.counts.clone()));
            }
            return;
        }
        let d = self.values[i];
        let most = self.lens[d].min(self.k - racks).min(left / d);
        for c in (0..=most).rev() {
            self.counts[i] = c;
            self.run(i + 1, deficit + c * d, racks + c, left - c * d);
        }
        self.counts[i] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::Policy;

    fn rooms(free: &[usize]) -> Vec<Room> {
        free.iter()
            .enumerate()
            .map(|(r, &f)| Room {
                rack: r,
                free: f,
                whole: f == 18,
                required: 0,
                weight: 0,
            })
            .collect()
    }

    fn racks(count: usize, prefer_degraded: bool) -> Topology {
        let policy = Policy {
            prefer_degraded,
            ..Policy::default()
        };
        Topology::uniform(count, 18, policy)
    }

    /// The tightest set as `(rack, trays)` pairs.
    fn set(free: &[usize], n: usize) -> Option<Vec<(usize, usize)>> {
        let topo = racks(free.len(), true);
        let order = RackOrder::of_rooms(&topo, &rooms(free));
        let pieces = tightest_set(&order, n, 18, Cuts::ANY, &topo)?;
        Some(pieces.iter().map(|p| (p.rack, p.trays)).collect())
    }

    #[test]
    fn partly_used_racks_before_whole_ones() {
        let free = [18, 16, 14, 16, 18];
        // 32 trays: 16 + 16 rather than a whole rack + 14.
        assert_eq!(set(&free, 32), Some(vec![(1, 16), (3, 16)]));
        // 36 trays need two whole racks.
        assert_eq!(set(&free, 36), Some(vec![(0, 18), (4, 18)]));
        // 40 trays: three racks; 16 + 16 + 14 = 46 is the tightest set holding 40.
        assert_eq!(set(&free, 40), Some(vec![(1, 16), (3, 16), (2, 8)]));
    }

    #[test]
    fn waits_rather_than_using_more_racks() {
        assert_eq!(set(&[10, 10, 10, 10], 21), None);
        assert_eq!(set(&[10, 10, 10, 10], 19), Some(vec![(0, 10), (1, 9)]));
        assert_eq!(set(&[10, 9, 18, 10], 19), Some(vec![(0, 10), (1, 9)]));
        assert_eq!(set(&[10, 8, 18, 8], 19), Some(vec![(2, 18), (1, 1)]));
        assert_eq!(set(&[17, 9, 2, 10], 19), Some(vec![(0, 17), (2, 2)]));
    }

    #[test]
    fn fewer_whole_racks_on_equal_free_trays() {
        // 19 trays: {18, 1} and {10, 9} both leave 0; {10, 9} keeps the whole rack.
        assert_eq!(set(&[18, 10, 9, 1], 19), Some(vec![(1, 10), (2, 9)]));
        let topo = racks(4, false);
        let order = RackOrder::of_rooms(&topo, &rooms(&[18, 10, 9, 1]));
        // Without prefer_degraded either exact set will do; it is still exact.
        let p = tightest_set(&order, 19, 18, Cuts::ANY, &topo).unwrap();
        assert_eq!(p.iter().map(|p| p.trays).sum::<usize>(), 19);
    }

    /// Brute force over every k-subset: the search finds the minimal total free trays.
    #[test]
    fn matches_brute_force_on_small_clusters() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..2000 {
            let racks: usize = rng.gen_range(2..8);
            let free: Vec<usize> = (0..racks).map(|_| rng.gen_range(0..=18)).collect();
            let n: usize = rng.gen_range(19..=(racks * 18).min(72));
            let k = n.div_ceil(18);
            let best = crate::placement::reference::fewest_racks_min_free(&free, n, 18);
            let got = set(&free, n);
            assert_eq!(
                got.as_ref()
                    .map(|p| p.iter().map(|&(r, _)| free[r]).sum::<usize>()),
                best,
                "free {free:?} n {n}"
            );
            if let Some(p) = got {
                assert_eq!(p.len(), k);
                assert_eq!(p.iter().map(|&(_, t)| t).sum::<usize>(), n);
                assert!(p.iter().all(|&(r, t)| t <= free[r] && t > 0));
            }
        }
    }
}
