//! The segment-size capacity model and its check against the simulator.
//!
//! Model (`docs/reference/nvl72-scheduling-facts.md` §3): each of a rack's `N = 18` trays is
//! unavailable independently with probability `lambda`, so `A ~ Binomial(N, 1 - lambda)` trays
//! are available, and jobs made of `--segment=k` pieces can use `k * floor(A / k)` of them:
//!
//! ```text
//! E[usable fraction](k, lambda) = sum_a C(N, a) (1-lambda)^a lambda^(N-a) k floor(a/k) / N
//! ```
//!
//! Simulated counterpart: static failures with probability `lambda` per tray, and a
//! saturating stream of identical jobs, each one segment of `k` trays (`-N k --segment=k`),
//! all submitted at time 0 with equal run times, twice as many as could ever run at once.
//! While jobs wait, a rack with `a` available trays holds exactly `floor(a / k)` of them
//! under any policy that keeps a segment inside one rack and fills racks until no rack has
//! `k` free trays, which nvl72 and block both do. So the simulator's usable fraction while
//! jobs wait equals `sum_r k floor(A_r / k) / (18 R)` for the drawn failures, whose
//! expectation is the formula.

use serde::Serialize;

use crate::contenders::policy::PolicyKind;
use crate::job::{Job, HOUR};
use crate::run::failures::{FailureModel, FailureTimeline};
use crate::run::simulation::{simulate, SimConfig};

/// The expected usable fraction of an `n`-tray rack for segments of `k` trays.
pub fn usable_fraction(k: usize, lambda: f64, n: usize) -> f64 {
    assert!(k >= 1 && k <= n, "segment {k} must be in 1..={n}");
    let p = 1.0 - lambda;
    let mut binom = 1.0; // C(n, a)
    let mut sum = 0.0;
    for a in 0..=n {
        if a > 0 {
            binom = binom * (n - a + 1) as f64 / a as f64;
        }
        let prob = binom * p.powi(a as i32) * lambda.powi((n - a) as i32);
        sum += prob * (k * (a / k)) as f64;
    }
    sum / n as f64
}

/// One simulated point: the policy's usable fraction, and the same quantity computed
/// directly from the drawn failures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    pub simulated: f64,
    pub from_failures: f64,
}

/// Runs the saturating single-segment experiment once (see the module docs).
pub fn simulate_usable(kind: PolicyKind, k: usize, lambda: f64, racks: usize, seed: u64) -> Sample {
    const TRAYS: usize = 18;
    let mut cfg = SimConfig::new(racks);
    cfg.failures = FailureModel::with_unavailability(lambda, None).expect("valid lambda");
    cfg.seed = seed;
    cfg.series_bins = 0;
    let capacity = (racks * TRAYS).div_ceil(k);
    let jobs: Vec<Job> = (0..2 * capacity)
        .map(|id| Job {
            id,
            submit: 0,
            trays: k,
            segment: Some(k),
            by_gpus: false,
            class: Default::default(),
            runtime: HOUR,
            limit: HOUR,
            tier: Default::default(),
        })
        .collect();
    let report = simulate(&cfg, &jobs, kind, &|_| {});
    let mut timeline = FailureTimeline::new(cfg.failures, racks * TRAYS, seed);
    let down: Vec<bool> = (0..racks * TRAYS).map(|t| timeline.start(t).0).collect();
    let usable: usize = down
        .chunks(TRAYS)
        .map(|rack| k * (rack.iter().filter(|&&d| !d).count() / k))
        .sum();
    Sample {
        simulated: report.occupancy_of_all_trays_while_waiting.unwrap_or(0.0),
        from_failures: usable as f64 / (racks * TRAYS) as f64,
    }
}

/// The formula next to the mean over `seeds` simulated samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub policy: PolicyKind,
    pub k: usize,
    pub lambda: f64,
    pub racks: usize,
    pub seeds: u64,
    pub formula: f64,
    pub simulated: f64,
    /// Standard error of `simulated` across seeds.
    pub std_err: f64,
    /// Every sample matched its own failure draw exactly.
    pub exact_per_draw: bool,
}

pub fn compare(kind: PolicyKind, k: usize, lambda: f64, racks: usize, seeds: u64) -> Comparison {
    let samples: Vec<Sample> = (1..=seeds)
        .map(|s| simulate_usable(kind, k, lambda, racks, s))
        .collect();
    let n = samples.len() as f64;
    let mean = samples.iter().map(|s| s.simulated).sum::<f64>() / n;
    let var = samples
        .iter()
        .map(|s| (s.simulated - mean).powi(2))
        .sum::<f64>()
        / (n - 1.0).max(1.0);
    Comparison {
        policy: kind,
        k,
        lambda,
        racks,
        seeds,
        formula: usable_fraction(k, lambda, 18),
        simulated: mean,
        std_err: (var / n).sqrt(),
        exact_per_draw: samples
            .iter()
            .all(|s| (s.simulated - s.from_failures).abs() < 1e-9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The full table of `docs/reference/nvl72-scheduling-facts.md` §3 (rows lambda, columns k).
    const KS: [usize; 9] = [1, 2, 4, 6, 8, 9, 12, 16, 18];
    const TABLE: [(f64, [f64; 9]); 7] = [
        (
            0.00,
            [
                1.000, 1.000, 0.889, 1.000, 0.889, 1.000, 0.667, 0.889, 1.000,
            ],
        ),
        (
            0.01,
            [
                0.990, 0.982, 0.889, 0.945, 0.889, 0.917, 0.667, 0.888, 0.835,
            ],
        ),
        (
            0.02,
            [
                0.980, 0.966, 0.888, 0.898, 0.887, 0.848, 0.667, 0.884, 0.695,
            ],
        ),
        (
            0.05,
            [
                0.950, 0.926, 0.876, 0.799, 0.863, 0.699, 0.667, 0.837, 0.397,
            ],
        ),
        (
            0.10,
            [
                0.900, 0.873, 0.829, 0.716, 0.771, 0.575, 0.666, 0.652, 0.150,
            ],
        ),
        (
            0.15,
            [
                0.850, 0.822, 0.771, 0.681, 0.658, 0.527, 0.659, 0.426, 0.054,
            ],
        ),
        (
            0.20,
            [
                0.800, 0.772, 0.716, 0.656, 0.565, 0.509, 0.632, 0.241, 0.018,
            ],
        ),
    ];

    #[test]
    fn formula_reproduces_the_reference_table() {
        for (lambda, row) in TABLE {
            for (k, want) in KS.iter().zip(row) {
                let got = usable_fraction(*k, lambda, 18);
                assert!(
                    (got - want).abs() <= 0.0005 + 1e-12,
                    "k={k} lambda={lambda}: {got:.4} vs {want}"
                );
            }
        }
    }

    #[test]
    fn simulated_usable_fraction_matches_the_formula_within_one_percent() {
        // 278 racks (a 5,000-tray cluster) x 20 failure draws per point.
        for (kind, k, lambda) in [
            (PolicyKind::Nvl72, 16, 0.05),
            (PolicyKind::Block, 16, 0.05),
            (PolicyKind::Nvl72, 4, 0.02),
            (PolicyKind::Nvl72, 9, 0.05),
        ] {
            let c = compare(kind, k, lambda, 278, 20);
            assert!(c.exact_per_draw, "{c:?}");
            let rel = (c.simulated - c.formula).abs() / c.formula;
            assert!(rel < 0.01, "{c:?}: off by {:.2}%", rel * 100.0);
        }
    }
}
