//! A proposed engine change, simulated: how jobs without `--segment` that are larger than a
//! rack should pick their racks (policy `nvl72-tight`, see `docs/benchmarks.md`).
//!
//! The engine's `plan_spread` takes whole pieces from the racks with the *most* free trays
//! and may use more racks than the minimum when no rack is whole. The proposal: use exactly
//! `k = ceil(n / 18)` racks (wait otherwise, as topology/block does), and among the sets of
//! `k` racks that can hold the job, take the one with the *fewest* free trays in total, so
//! partly used and degraded racks are filled and whole healthy racks stay free for
//! full-rack jobs.

/// The trays for an exact job of `n` trays, larger than one rack, on racks of `trays`
/// consecutive trays: the `ceil(n / trays)` racks with the fewest free trays in total that
/// hold `n`, fullest of them first, trays in index order. `None` when no such set exists.
/// Searches rack free counts (not racks), so it is cheap for the up to 4 racks it is meant
/// for; callers fall back to the engine beyond that.
pub fn tight_spread(free: &[bool], trays: usize, n: usize) -> Option<Vec<usize>> {
    let k = n.div_ceil(trays);
    let counts: Vec<usize> = free
        .chunks(trays)
        .map(|r| r.iter().filter(|&&f| f).count())
        .collect();
    let mut by_count: Vec<Vec<usize>> = vec![Vec::new(); trays + 1];
    for (r, &c) in counts.iter().enumerate() {
        by_count[c].push(r);
    }
    let avail: Vec<usize> = by_count.iter().map(Vec::len).collect();
    let mut best: Option<((usize, usize), Vec<usize>)> = None;
    let mut values = Vec::with_capacity(k);
    search(&avail, trays, k, n, &mut values, 0, &mut best);
    let (_, values) = best?;
    // values are non-increasing: the fullest racks first, the last takes the remainder.
    let mut next = vec![0usize; trays + 1];
    let mut nodes = Vec::with_capacity(n);
    for v in values {
        let rack = by_count[v][next[v]];
        next[v] += 1;
        let take = v.min(n - nodes.len());
        nodes.extend(
            (rack * trays..(rack + 1) * trays)
                .filter(|&t| free[t])
                .take(take),
        );
    }
    (nodes.len() == n).then_some(nodes)
}

/// Depth-first over non-increasing free counts: the multiset of `k` counts with sum `>= n`
/// and the smallest sum; on equal sums the one with fewer whole (all free) racks.
fn search(
    avail: &[usize],
    max: usize,
    k: usize,
    n: usize,
    values: &mut Vec<usize>,
    sum: usize,
    best: &mut Option<((usize, usize), Vec<usize>)>,
) {
    if values.len() == k {
        let whole = values.iter().filter(|&&v| v == avail.len() - 1).count();
        let better = match best {
            None => true,
            Some(b) => (sum, whole) < b.0,
        };
        if sum >= n && better {
            *best = Some(((sum, whole), values.clone()));
        }
        return;
    }
    let left = k - values.len();
    for v in (1..=max).rev() {
        if sum + v * left < n {
            break; // smaller values cannot reach n either
        }
        let lower = (sum + v + left - 1).max(n);
        if best.as_ref().is_some_and(|b| lower > b.0 .0) {
            continue;
        }
        let used = values.iter().filter(|&&x| x == v).count();
        if used < avail[v] {
            values.push(v);
            search(avail, v, k, n, values, sum + v, best);
            values.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn racks(free_counts: &[usize]) -> Vec<bool> {
        free_counts
            .iter()
            .flat_map(|&c| (0..18).map(move |t| t < c))
            .collect()
    }

    fn per_rack(nodes: &[usize], n: usize) -> Vec<usize> {
        let mut c = vec![0; n];
        for t in nodes {
            c[t / 18] += 1;
        }
        c
    }

    #[test]
    fn partly_used_racks_before_whole_ones() {
        // 32 trays: 16 + 16 rather than a whole rack + 14.
        let free = racks(&[18, 16, 14, 16, 18]);
        let nodes = tight_spread(&free, 18, 32).unwrap();
        assert_eq!(per_rack(&nodes, 5), vec![0, 16, 0, 16, 0]);
        // 36 trays need two whole racks.
        let nodes = tight_spread(&free, 18, 36).unwrap();
        assert_eq!(per_rack(&nodes, 5), vec![18, 0, 0, 0, 18]);
        // 40 trays: three racks; 16 + 16 + 14 = 46 is the tightest set holding 40.
        let nodes = tight_spread(&free, 18, 40).unwrap();
        assert_eq!(per_rack(&nodes, 5), vec![0, 16, 8, 16, 0]);
    }

    #[test]
    fn waits_rather_than_using_more_racks() {
        let free = racks(&[10, 10, 10, 10]);
        assert_eq!(tight_spread(&free, 18, 21), None);
        assert_eq!(
            per_rack(&tight_spread(&free, 18, 19).unwrap(), 4),
            vec![10, 9, 0, 0]
        );
        let free = racks(&[10, 9, 10, 10]);
        assert_eq!(
            per_rack(&tight_spread(&free, 18, 19).unwrap(), 4),
            vec![10, 9, 0, 0]
        );
    }
}
