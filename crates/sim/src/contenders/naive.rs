//! Slurm without a topology plugin: the tightest run of consecutive free trays
//! ([`consecutive_best_fit`]), the `naive` policy the simulator compares against.

/// The first `n` free trays in index order, wherever they are.
/// Slurm's own choice without a topology plugin (`eval_nodes`' consecutive blocks in
/// `src/plugins/topology/common/eval_nodes.c`, equal node weights, whole nodes): among the
/// runs of consecutive free trays, the smallest that holds what is left of the job, or else
/// the largest (the first on ties), taken from its start; repeated until the job has its
/// trays. So Slurm splits fewer jobs than a first fit, and packs small jobs into small holes.
pub fn consecutive_best_fit(free: &[bool], n: usize) -> Option<Vec<usize>> {
    if free.iter().filter(|&&f| f).count() < n {
        return None;
    }
    consecutive_best_fit_counted(free, None, n)
}

/// [`consecutive_best_fit`] with the free trays per rack when known (`(counts, trays per
/// rack)`): racks with none free or all free are passed over without reading their trays.
/// The runs are found once: a run taken whole leaves every other run as it was, so each
/// round only picks among them.
pub fn consecutive_best_fit_counted(
    free: &[bool],
    racks: Option<(&[u32], usize)>,
    n: usize,
) -> Option<Vec<usize>> {
    let mut runs: Vec<(usize, usize)> = Vec::new(); // (start, length), in order
    for_each_run(free, racks, |start, len| runs.push((start, len)));
    let mut nodes = Vec::with_capacity(n);
    loop {
        let left = n - nodes.len();
        let i = best_run(&runs, left)?;
        let (start, len) = runs[i];
        if len >= left {
            nodes.extend(start..start + left);
            break;
        }
        nodes.extend(start..start + len);
        runs.remove(i);
    }
    nodes.sort_unstable();
    Some(nodes)
}

/// Which of `runs` Slurm takes for `left` more trays: the smallest that holds them all, or
/// else the largest (the first on ties).
fn best_run(runs: &[(usize, usize)], left: usize) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None; // (index, length)
    for (i, &(_, len)) in runs.iter().enumerate() {
        let better = match best {
            None => true,
            Some((_, b)) => {
                let (enough, best_enough) = (len >= left, b >= left);
                if enough {
                    !best_enough || len < b
                } else {
                    len > b
                }
            }
        };
        if better {
            best = Some((i, len));
        }
    }
    best.map(|(i, _)| i)
}

/// Calls `f(start, length)` for each run of consecutive free trays, in order.
fn for_each_run(free: &[bool], racks: Option<(&[u32], usize)>, mut f: impl FnMut(usize, usize)) {
    let per = racks.map_or(free.len(), |(_, per)| per).max(1);
    let mut run: Option<usize> = None;
    for (r, trays) in free.chunks(per).enumerate() {
        let base = r * per;
        let counted = racks
            .and_then(|(counts, _)| counts.get(r))
            .map(|&c| c as usize);
        match counted {
            Some(0) => {
                if let Some(s) = run.take() {
                    f(s, base - s);
                }
                continue;
            }
            Some(c) if c == trays.len() => {
                run.get_or_insert(base);
                continue;
            }
            _ => {}
        }
        for (k, &free) in trays.iter().enumerate() {
            if free {
                run.get_or_insert(base + k);
            } else if let Some(s) = run.take() {
                f(s, base + k - s);
            }
        }
    }
    if let Some(s) = run {
        f(s, free.len() - s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;
    use crate::contenders::free_map::FreeMap;
    use crate::contenders::policy::{Placer, PolicyKind, SimRequest};

    /// Free: tray 0, tray 2, and trays 4-35 (a run of 32 that straddles the racks).
    #[test]
    fn naive_takes_the_tightest_run_of_consecutive_free_trays_as_slurm_does() {
        let mut free = vec![true; 36];
        free[1] = false;
        free[3] = false;
        let mut p = Placer::new(PolicyKind::Naive, 2, 18, &Policy::default(), false);
        assert_eq!(
            p.place(&FreeMap::new(&free, 18), SimRequest::nodes(1, None)),
            Some(vec![0])
        );
        assert_eq!(
            p.place(&FreeMap::new(&free, 18), SimRequest::nodes(4, None)),
            Some(vec![4, 5, 6, 7]),
            "the only run that holds 4, not the first free trays"
        );
        // It straddles racks without a second thought and ignores segments.
        assert_eq!(
            p.place(&FreeMap::new(&free, 18), SimRequest::nodes(20, Some(10)))
                .unwrap()[15..],
            [19, 20, 21, 22, 23]
        );
        // No run holds 33: the largest run first, then the tightest for the rest.
        let mut most: Vec<usize> = vec![0];
        most.extend(4..36);
        assert_eq!(
            p.place(&FreeMap::new(&free, 18), SimRequest::nodes(33, None)),
            Some(most)
        );
        assert_eq!(
            p.place(&FreeMap::new(&free, 18), SimRequest::nodes(35, None)),
            None
        );
        assert!(!p.never_runnable(SimRequest::nodes(20, Some(3))));
        assert!(p.never_runnable(SimRequest::nodes(37, None)));
    }

    proptest::proptest! {
        /// Reading racks' counts instead of their trays changes no choice.
        #[test]
        fn naive_with_rack_counts_is_naive(
            free in proptest::collection::vec(proptest::bool::weighted(0.6), 72),
            whole in proptest::collection::vec(0u8..3, 4),
            n in 1usize..60,
        ) {
            let mut free = free;
            for (r, w) in whole.iter().enumerate() {
                if *w < 2 {
                    free[r * 18..(r + 1) * 18].fill(*w == 1); // racks all busy or all free
                }
            }
            let map = FreeMap::new(&free, 18);
            let counted = if map.count() >= n {
                consecutive_best_fit_counted(&free, Some((map.in_racks(), 18)), n)
            } else {
                None
            };
            proptest::prop_assert_eq!(counted, consecutive_best_fit(&free, n));
        }
    }
}
