//! Break-even: how slow must split jobs run before nvl72's locality pays for the trays it
//! leaves idle? Split jobs are priced at one uniform slowdown x and the goodput of each
//! policy is measured against x; x* is where nvl72's meets the other policy's. Either
//! every split pays x (ref §4.6.1: large jobs split under every policy, so x hits nvl72 too),
//! or only the avoidable ones, jobs on more racks than their size needs.

use crate::contenders::policy::PolicyKind;
use crate::job::Job;
use crate::measures::policy_report::PolicyReport;
use crate::run::simulation::{simulate_all, SimConfig};
use crate::slowdown::Model;

/// Where nvl72's goodput meets another policy's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Crossing {
    /// nvl72 is ahead at every slowdown tried, free splits included.
    AlwaysAhead,
    /// nvl72 is ahead from this slowdown on, at every slowdown tried above it (within the
    /// tolerance); it may be ahead at some below it too.
    At(f64),
    /// nvl72 is behind at the largest slowdown tried.
    Beyond(f64),
}

/// x* on `grid` (ascending slowdowns, 1 first): the smallest x from which `gap(x) >= 0` at
/// every grid point above, refined by bisection down to `tol`. `gap` is nvl72's goodput
/// minus the other's; it tends to rise with x (the other splits more) but need not be
/// monotone (queues feed back, and nvl72 splits too), so a gap that is positive at x = 1
/// and negative further up is no "always ahead".
pub fn crossing(mut gap: impl FnMut(f64) -> f64, grid: &[f64], tol: f64) -> Crossing {
    let gaps: Vec<f64> = grid.iter().map(|&x| gap(x)).collect();
    let Some(last_behind) = gaps.iter().rposition(|&g| g < 0.0) else {
        return Crossing::AlwaysAhead;
    };
    if last_behind + 1 == grid.len() {
        return Crossing::Beyond(grid[last_behind]);
    }
    let (mut below, mut above) = (grid[last_behind], grid[last_behind + 1]);
    while above - below > tol {
        let mid = (below + above) / 2.0;
        if gap(mid) >= 0.0 {
            above = mid;
        } else {
            below = mid;
        }
    }
    Crossing::At(above)
}

/// Which split jobs pay the uniform slowdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Splits {
    /// Every job on more than one rack.
    Every,
    /// Jobs on more racks than their size needs.
    Avoidable,
}

/// The reports of `kinds` with `splits` jobs `x` times slower (lenient or strict limits
/// as `cfg` says).
pub fn at(
    cfg: &SimConfig,
    jobs: &[Job],
    kinds: &[PolicyKind],
    splits: Splits,
    x: f64,
) -> Vec<PolicyReport> {
    let mut cfg = cfg.clone();
    cfg.slowdown.model = match splits {
        _ if x <= 1.0 => Model::Off,
        Splits::Every => Model::Uniform(x),
        Splits::Avoidable => Model::Avoidable(x),
    };
    cfg.slowdown.variant = format!("{splits:?}:{x}").to_lowercase();
    simulate_all(&cfg, jobs, kinds, true, &|_, _| {})
}

/// x* where nvl72's goodput while jobs wait meets `other`'s for good on `grid` (see
/// [`crossing`]), bracketed to `tol`.
pub fn solve(
    cfg: &SimConfig,
    jobs: &[Job],
    other: PolicyKind,
    splits: Splits,
    grid: &[f64],
    tol: f64,
) -> Crossing {
    let kinds = [PolicyKind::Nvl72, other];
    crossing(
        |x| {
            let r = at(cfg, jobs, &kinds, splits, x);
            goodput(&r[0]) - goodput(&r[1])
        },
        grid,
        tol,
    )
}

/// Goodput while jobs wait, the figure break-even compares.
pub fn goodput(p: &PolicyReport) -> f64 {
    p.goodput_while_waiting.unwrap_or(0.0)
}

/// The reference's first-order estimate, `1 + (O_other/O_nvl72 − 1)/f0_other`, from the
/// unpriced occupancies and the other policy's split share of work (ref §4.6.1): ignores
/// nvl72's own splits and the queue's feedback.
pub fn first_order(o_nvl72: f64, o_other: f64, f0_other: f64) -> Option<f64> {
    (f0_other > 0.0 && o_nvl72 > 0.0).then(|| 1.0 + (o_other / o_nvl72 - 1.0) / f0_other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::synthetic::{generate, SyntheticSpec};

    const GRID: [f64; 5] = [1.0, 1.2, 1.5, 2.0, 3.0];

    #[test]
    fn bisection_finds_the_crossing_of_a_rising_gap() {
        let Crossing::At(x) = crossing(|x| x - 1.37, &GRID, 1e-3) else {
            panic!()
        };
        assert!((x - 1.37).abs() < 1e-3, "{x}");
        assert_eq!(crossing(|x| x, &GRID, 1e-3), Crossing::AlwaysAhead);
        assert_eq!(crossing(|_| -1.0, &GRID, 1e-3), Crossing::Beyond(3.0));
    }

    #[test]
    fn ahead_at_free_splits_but_behind_further_up_is_no_always_ahead() {
        // Ahead at x = 1, behind from 1.8 to 2.4, ahead again above: x* is the last crossing.
        let gap = |x: f64| if (1.8..2.4).contains(&x) { -1.0 } else { 1.0 };
        let Crossing::At(x) = crossing(gap, &GRID, 1e-3) else {
            panic!()
        };
        assert!((x - 2.4).abs() < 1e-3, "{x}");
        assert_eq!(crossing(|x| 2.5 - x, &GRID, 1e-3), Crossing::Beyond(3.0));
    }

    #[test]
    fn the_reference_table_of_first_order_estimates() {
        // ref §4.6.1: O_naive 99%, O_nvl72 94%.
        for (f0, want) in [
            (0.02, 3.66),
            (0.05, 2.06),
            (0.10, 1.53),
            (0.20, 1.27),
            (0.30, 1.18),
        ] {
            let x = first_order(0.94, 0.99, f0).unwrap();
            assert!((x - want).abs() < 0.01, "{f0}: {x}");
        }
    }

    /// On a loaded synthetic mix naive keeps more GPUs busy when splits are free; the
    /// bisection's x* is where nvl72's usable occupancy catches up, to its tolerance.
    #[test]
    fn the_crossing_brackets_where_nvl72_catches_up_with_naive() {
        let jobs = generate(&SyntheticSpec::new(500, 0.9, 12.0 * 18.0, 3)).unwrap();
        let cfg = SimConfig::new(12);
        let gap = |x: f64| {
            let r = at(
                &cfg,
                &jobs,
                &[PolicyKind::Nvl72, PolicyKind::Naive],
                Splits::Every,
                x,
            );
            goodput(&r[0]) - goodput(&r[1])
        };
        assert!(gap(1.0) < 0.0, "naive is ahead when splits are free");
        match solve(&cfg, &jobs, PolicyKind::Naive, Splits::Every, &GRID, 1e-3) {
            Crossing::At(x) => assert!(x > 1.0 && x < 3.0 && gap(x) >= 0.0, "x* {x}"),
            other => panic!("{other:?}"),
        }
    }
}
