//! Several segments of one job (`--segment`), each inside one rack: topology/block's best
//! fit (the default), a rack of its own per segment (`--spread-segments`), and segments
//! larger than a rack (Slurm 25.11+). One segment is a one-rack job (`one_rack`); several
//! in as few racks as possible is `plan_spread`.

use super::{fewest_racks, fit_key, Ctx, Hole, Reject};

/// Segments larger than a rack (Slurm 25.11+): each one over the fewest racks, the tightest
/// set of what the earlier segments left, as `multi_rack = "fewest-racks"` places a job that
/// size. Pieces of two segments in one rack are one piece.
pub(super) fn oversized_segments(
    ctx: &Ctx,
    holes: &[Hole],
    count: usize,
    s: usize,
) -> Result<Vec<(usize, usize)>, Reject> {
    let topo = ctx.topo;
    let mut left: Vec<Hole> = holes.to_vec();
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    for i in 0..count {
        let refs: Vec<&Hole> = left.iter().collect();
        let set =
            fewest_racks::tightest_set(&refs, s, topo.max_rack_size(), topo.policy.prefer_degraded)
                .ok_or_else(|| {
                    Reject::NotNow(format!(
                        "no {} racks have {s} free trays for segment {} of {count}",
                        s.div_ceil(topo.max_rack_size()),
                        i + 1
                    ))
                })?;
        for (d, k) in set {
            left[d].free -= k;
            left[d].broken = true;
            match pieces.iter_mut().find(|p| p.0 == d) {
                Some(p) => p.1 += k,
                None => pieces.push((d, k)),
            }
        }
    }
    Ok(pieces)
}

/// `--spread-segments`: each segment in a rack of its own, the best-fitting racks first.
pub(super) fn spread_segments(
    ctx: &Ctx,
    holes: &[Hole],
    count: usize,
    s: usize,
) -> Result<Vec<(usize, usize)>, Reject> {
    let mut fits: Vec<&Hole> = holes.iter().filter(|h| h.free >= s).collect();
    if fits.len() < count {
        return Err(Reject::NotNow(format!(
            "{} racks have {s} free trays, {count} segments need a rack each",
            fits.len()
        )));
    }
    fits.sort_unstable_by_key(|h| fit_key(ctx.topo, h, h.free - s));
    Ok(fits[..count].iter().map(|h| (h.domain, s)).collect())
}

/// topology/block's segment rule, each segment on its own: the domain whose free trays fit
/// the segment most tightly; ties go to domains the job already uses, then broken ones.
///
/// Racks are bucketed by free trays, so each segment costs O(largest rack) rather than a scan
/// of every rack: untouched racks sit in buckets in tie-break order and leave from the front,
/// and the few racks this job already uses are kept in a short list.
pub(super) fn best_fit_segments(
    ctx: &Ctx,
    holes: &[Hole],
    count: usize,
    s: usize,
) -> Result<Vec<(usize, usize)>, Reject> {
    let topo = ctx.topo;
    // Counting sort by (free, keep_whole), stable in domain order: slot = 2 * free + whole.
    let slots = 2 * (topo.max_rack_size() + 1);
    let slot = |h: &Hole| 2 * h.free + usize::from(h.keep_whole(topo));
    let mut start = vec![0usize; slots + 1];
    for h in holes {
        start[slot(h) + 1] += 1;
    }
    for i in 1..=slots {
        start[i] += start[i - 1];
    }
    let mut next = start.clone(); // next[slot]: first untouched rack in that slot
    let mut order = vec![0usize; holes.len()];
    // Lighter racks first within a slot (stable: configuration order on ties).
    let mut by_weight: Vec<usize> = Vec::new();
    if ctx.weighted {
        by_weight = (0..holes.len()).collect();
        by_weight.sort_by_key(|&i| holes[i].weight);
    }
    let in_order = (!ctx.weighted).then_some(0..holes.len());
    for i in in_order.into_iter().flatten().chain(by_weight) {
        let h = &holes[i];
        let at = &mut next[slot(h)];
        order[*at] = i;
        *at += 1;
    }
    let mut next = start.clone();
    // (hole, free trays left) of racks this job already uses
    let mut used: Vec<(usize, usize)> = Vec::new();
    for _ in 0..count {
        let untouched = (2 * s..slots).find(|&k| next[k] < start[k + 1]);
        let reused = used
            .iter()
            .enumerate()
            .filter(|(_, &(_, left))| left >= s)
            .min_by_key(|(_, &(i, left))| (left, holes[i].keep_whole(topo), holes[i].weight, i))
            .map(|(u, &(_, left))| (u, left));
        let take_reused = match (untouched, reused) {
            (_, None) => false,
            (None, Some(_)) => true,
            // same leftover: the rack already used wins
            (Some(k), Some((_, left))) => left <= k / 2,
        };
        if take_reused {
            let (u, _) = reused.expect("checked above");
            used[u].1 -= s;
        } else if let Some(k) = untouched {
            let i = order[next[k]];
            next[k] += 1;
            used.push((i, holes[i].free - s));
        } else {
            return Err(Reject::NotNow(format!(
                "no rack has {s} free trays for the next segment"
            )));
        }
    }
    Ok(used
        .iter()
        .map(|&(i, left)| (holes[i].domain, holes[i].free - left))
        .collect())
}
