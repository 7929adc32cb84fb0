//! Tray failures: which trays are unavailable, and when that changes.
//!
//! Each tray runs its own alternating up/down process with exponential up times (mean MTBF)
//! and down times (mean MTTR), so in steady state it is unavailable with probability
//! `p = MTTR / (MTBF + MTTR)`. The run starts in steady state: each tray is down with
//! probability `p`, and because exponential periods are memoryless the time to its first
//! change is a fresh period. Every tray draws from its own random stream (seed + tray number),
//! so every policy sees the identical failure timeline whatever it does with the jobs.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};

use crate::job::{Millis, HOUR};

/// How trays fail.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum FailureModel {
    /// Every tray is healthy for the whole run.
    None,
    /// Each tray is unavailable with probability `p` from the start, for the whole run.
    Static { p: f64 },
    /// Alternating up/down periods with the given means, in hours.
    OnOff { mtbf_h: f64, mttr_h: f64 },
}

impl FailureModel {
    /// Steady-state unavailability `p` with repairs taking `mttr_h` hours on average;
    /// `mttr_h = None` gives static failures.
    pub fn with_unavailability(p: f64, mttr_h: Option<f64>) -> Result<FailureModel, String> {
        if !(0.0..1.0).contains(&p) {
            return Err(format!("unavailability must be in [0, 1), got {p}"));
        }
        if p == 0.0 {
            return Ok(FailureModel::None);
        }
        match mttr_h {
            None => Ok(FailureModel::Static { p }),
            Some(m) if m > 0.0 => Ok(FailureModel::OnOff {
                mtbf_h: m * (1.0 - p) / p,
                mttr_h: m,
            }),
            Some(m) => Err(format!("MTTR must be positive, got {m} h")),
        }
    }

    /// The stationary probability that a tray is unavailable.
    pub fn unavailability(&self) -> f64 {
        match *self {
            FailureModel::None => 0.0,
            FailureModel::Static { p } => p,
            FailureModel::OnOff { mtbf_h, mttr_h } => mttr_h / (mtbf_h + mttr_h),
        }
    }
}

/// The failure timeline of every tray, generated on demand.
pub struct FailureTimeline {
    model: FailureModel,
    rngs: Vec<ChaCha8Rng>,
}

impl FailureTimeline {
    pub fn new(model: FailureModel, trays: usize, seed: u64) -> FailureTimeline {
        let rngs = (0..trays)
            .map(|t| {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xFA11_0000_0000_0000);
                rng.set_stream(t as u64);
                rng
            })
            .collect();
        FailureTimeline { model, rngs }
    }

    /// Whether `tray` starts unavailable, and when it next changes state.
    pub fn start(&mut self, tray: usize) -> (bool, Option<Millis>) {
        let p = self.model.unavailability();
        let down = p > 0.0 && self.rngs[tray].gen_bool(p);
        (down, self.next_change(tray, 0, down))
    }

    /// When a tray that is `down` (or up) since `now` changes state; `None` if never.
    pub fn next_change(&mut self, tray: usize, now: Millis, down: bool) -> Option<Millis> {
        let mean_h = match self.model {
            FailureModel::None | FailureModel::Static { .. } => return None,
            FailureModel::OnOff { mttr_h, .. } if down => mttr_h,
            FailureModel::OnOff { mtbf_h, .. } => mtbf_h,
        };
        let hours = Exp::new(1.0 / mean_h)
            .expect("positive mean")
            .sample(&mut self.rngs[tray]);
        Some(now + ((hours * HOUR as f64).round() as Millis).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mttr_and_p_give_the_mtbf() {
        let m = FailureModel::with_unavailability(0.05, Some(24.0)).unwrap();
        let FailureModel::OnOff { mtbf_h, mttr_h } = m else {
            panic!("{m:?}")
        };
        assert!((mtbf_h - 24.0 * 19.0).abs() < 1e-9 && mttr_h == 24.0);
        assert!((m.unavailability() - 0.05).abs() < 1e-12);
        assert_eq!(
            FailureModel::with_unavailability(0.0, Some(5.0)),
            Ok(FailureModel::None)
        );
        assert!(FailureModel::with_unavailability(1.0, None).is_err());
    }

    #[test]
    fn timelines_are_reproducible_and_stationary() {
        let model = FailureModel::with_unavailability(0.1, Some(10.0)).unwrap();
        let mut a = FailureTimeline::new(model, 2000, 3);
        let mut b = FailureTimeline::new(model, 2000, 3);
        let starts: Vec<_> = (0..2000).map(|t| a.start(t)).collect();
        assert_eq!(starts, (0..2000).map(|t| b.start(t)).collect::<Vec<_>>());
        let down = starts.iter().filter(|s| s.0).count() as f64 / 2000.0;
        assert!((down - 0.1).abs() < 0.025, "{down}");
        // Long-run fraction of time down, on one tray.
        let (mut t, mut is_down, mut down_time) = (0, false, 0);
        let horizon = 200_000 * HOUR;
        while t < horizon {
            let next = a.next_change(7, t, is_down).unwrap().min(horizon);
            if is_down {
                down_time += next - t;
            }
            t = next;
            is_down = !is_down;
        }
        let frac = down_time as f64 / horizon as f64;
        assert!((frac - 0.1).abs() < 0.01, "{frac}");
    }

    #[test]
    fn static_failures_never_change() {
        let mut f = FailureTimeline::new(FailureModel::Static { p: 0.5 }, 10, 1);
        assert!((0..10).all(|t| f.start(t).1.is_none()));
    }
}
