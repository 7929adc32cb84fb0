//! Decision latency: wall-clock nanoseconds per placement call, kept sample by sample so the
//! percentiles are exact.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Times calls and counts them. When disabled it only counts, so runs stay bit-for-bit
/// reproducible (the JSON then has no timing fields).
#[derive(Debug, Clone, Default)]
pub struct Latency {
    enabled: bool,
    calls: u64,
    samples: Vec<u32>,
}

/// Mean and percentiles of the timed calls, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub calls: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl Latency {
    pub fn new(enabled: bool) -> Latency {
        Latency {
            enabled,
            ..Latency::default()
        }
    }

    /// Runs `f`, recording how long it took.
    pub fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        self.calls += 1;
        if !self.enabled {
            return f();
        }
        let start = Instant::now();
        let out = f();
        let ns = start.elapsed().as_nanos().min(u32::MAX as u128) as u32;
        self.samples.push(ns);
        out
    }

    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// `None` when timing was disabled or nothing was timed.
    pub fn summary(&self) -> Option<LatencySummary> {
        summarize(&self.samples)
    }
}

/// Mean, median, p99 (nearest rank) and maximum of `samples` (nanoseconds).
pub fn summarize(samples: &[u32]) -> Option<LatencySummary> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank =
        |q: f64| sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
    Some(LatencySummary {
        calls: sorted.len() as u64,
        mean_ns: sorted.iter().map(|&s| s as f64).sum::<f64>() / sorted.len() as f64,
        p50_ns: rank(0.50) as u64,
        p99_ns: rank(0.99) as u64,
        max_ns: *sorted.last().unwrap() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let samples: Vec<u32> = (1..=100).collect();
        let s = summarize(&samples).unwrap();
        assert_eq!((s.p50_ns, s.p99_ns, s.max_ns, s.calls), (50, 99, 100, 100));
        assert!((s.mean_ns - 50.5).abs() < 1e-9);
        assert_eq!(summarize(&[]), None);
    }

    #[test]
    fn disabled_timer_only_counts() {
        let mut l = Latency::new(false);
        assert_eq!(l.time(|| 7), 7);
        assert_eq!((l.calls(), l.summary()), (1, None));
    }
}
