//! A synthetic GB200 NVL72 job mix: size classes with weights and per-class `--segment`,
//! log-normal run times and Poisson arrivals at a target offered load.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, LogNormal, WeightedIndex};
use serde::Serialize;

use crate::job::{time_limit, Job, Millis, HOUR, MINUTE, SECOND};

/// One size class: jobs draw a tray count uniformly from the multiples of `step` (of the
/// segment size when the class has one) in `min..=max`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeClass {
    pub label: String,
    /// Relative share of jobs (not of GPU time).
    pub weight: f64,
    pub min: usize,
    pub max: usize,
    pub segment: Option<usize>,
    /// Size granularity without a segment.
    pub step: usize,
}

impl SizeClass {
    fn new(label: &str, weight: f64, (min, max, step): (usize, usize, usize)) -> Self {
        SizeClass {
            label: label.to_string(),
            weight,
            min,
            max,
            segment: None,
            step,
        }
    }

    fn segment(self, s: usize) -> Self {
        SizeClass {
            segment: Some(s),
            ..self
        }
    }

    /// The tray counts this class draws from.
    pub fn sizes(&self) -> Vec<usize> {
        let step = self.segment.unwrap_or(self.step);
        (self.min..=self.max).filter(|n| n % step == 0).collect()
    }
}

/// The default mix (share of jobs; share of tray-time in brackets, at equal run times):
///
/// | class | trays | weight | `--segment` |
/// |---|---|---|---|
/// | `1-2` | 1, 2 | 30% (2%) | none: fits any rack |
/// | `4` | 4 | 20% (4%) | none |
/// | `8-16` | 8, 12, 16 | 22% (13%) | 4: tensor-parallel groups of 16 GPUs (NVIDIA: 4 for 32-64 GPU jobs) |
/// | `18` | 18 | 12% (10%) | none: needs a whole healthy rack |
/// | `32-72` | 32, 36, ... 72 | 12% (30%) | none: `-N 36` or `-N 72` style multi-rack requests, where block's aligned rack pairs and nvl72's fewest-racks rule differ; `--segment 32-72=8` gives 32-GPU groups |
/// | `144+` | 144, 160, ... 288 | 4% (41%) | 16: NVIDIA's advice for the largest jobs; fits a rack with 2 failed trays |
pub fn default_classes() -> Vec<SizeClass> {
    vec![
        SizeClass::new("1-2", 0.30, (1, 2, 1)),
        SizeClass::new("4", 0.20, (4, 4, 1)),
        SizeClass::new("8-16", 0.22, (8, 16, 4)).segment(4),
        SizeClass::new("18", 0.12, (18, 18, 1)),
        SizeClass::new("32-72", 0.12, (32, 72, 4)),
        SizeClass::new("144+", 0.04, (144, 288, 16)).segment(16),
    ]
}

/// Applies a `CLASS=K` override (`K` a segment size or `none`) to `classes`.
pub fn set_segment(classes: &mut [SizeClass], rule: &str) -> Result<(), String> {
    let (label, value) = rule
        .split_once('=')
        .ok_or_else(|| format!("`{rule}`: expected CLASS=K, e.g. 144+=16 or 8-16=none"))?;
    let class = classes
        .iter_mut()
        .find(|c| c.label == label)
        .ok_or_else(|| format!("`{rule}`: no class `{label}`"))?;
    class.segment = match value {
        "none" | "0" => None,
        v => Some(
            v.parse()
                .ok()
                .filter(|&k: &usize| k > 0)
                .ok_or_else(|| format!("`{rule}`: bad segment size `{v}`"))?,
        ),
    };
    if class.sizes().is_empty() {
        return Err(format!(
            "`{rule}`: no size in {}..={} is a multiple of {value}",
            class.min, class.max
        ));
    }
    Ok(())
}

/// What to generate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyntheticSpec {
    pub jobs: usize,
    /// Target offered load on the healthy trays.
    pub load: f64,
    pub healthy_trays: f64,
    pub classes: Vec<SizeClass>,
    /// Median run time (log-normal), hours.
    pub runtime_median_h: f64,
    /// Sigma of the underlying normal.
    pub runtime_sigma: f64,
    pub seed: u64,
}

impl SyntheticSpec {
    pub fn new(jobs: usize, load: f64, healthy_trays: f64, seed: u64) -> SyntheticSpec {
        SyntheticSpec {
            jobs,
            load,
            healthy_trays,
            classes: default_classes(),
            runtime_median_h: 1.5,
            runtime_sigma: 1.2,
            seed,
        }
    }
}

/// Shortest and longest run time drawn (the log-normal is clipped to this range).
pub const MIN_RUNTIME: Millis = 2 * MINUTE;
pub const MAX_RUNTIME: Millis = 48 * HOUR;

/// Generates the jobs: sizes and run times first, then Poisson arrivals with rate
/// `load * healthy_trays / mean(trays * runtime)` of the drawn jobs.
pub fn generate(spec: &SyntheticSpec) -> Result<Vec<Job>, String> {
    if spec.jobs == 0 || spec.load <= 0.0 || spec.healthy_trays <= 0.0 {
        return Err("need jobs > 0, load > 0 and healthy trays > 0".into());
    }
    let weights = WeightedIndex::new(spec.classes.iter().map(|c| c.weight))
        .map_err(|e| format!("class weights: {e}"))?;
    let sizes: Vec<Vec<usize>> = spec.classes.iter().map(SizeClass::sizes).collect();
    if let Some(c) = spec.classes.iter().zip(&sizes).find(|(_, s)| s.is_empty()) {
        return Err(format!("class {} has no valid size", c.0.label));
    }
    let runtime = LogNormal::new(
        (spec.runtime_median_h * HOUR as f64).ln(),
        spec.runtime_sigma,
    )
    .map_err(|e| format!("run time distribution: {e}"))?;
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let mut jobs: Vec<Job> = (0..spec.jobs)
        .map(|id| {
            let c = weights.sample(&mut rng);
            let trays = sizes[c][rng.gen_range(0..sizes[c].len())];
            let runtime = (runtime.sample(&mut rng) as Millis).clamp(MIN_RUNTIME, MAX_RUNTIME);
            let runtime = runtime.div_ceil(SECOND) * SECOND;
            Job {
                id,
                submit: 0,
                trays,
                segment: spec.classes[c].segment.filter(|&s| s < trays),
                by_gpus: false,
                class: Default::default(),
                runtime,
                limit: time_limit(&mut rng, runtime),
                tier: Default::default(),
            }
        })
        .collect();
    let work: f64 = jobs
        .iter()
        .map(|j| j.trays as f64 * j.runtime as f64)
        .sum::<f64>()
        / jobs.len() as f64;
    let rate = spec.load * spec.healthy_trays / work; // jobs per millisecond
    let gap = Exp::new(rate).map_err(|e| format!("arrival rate: {e}"))?;
    let mut t = 0.0;
    for (i, job) in jobs.iter_mut().enumerate() {
        if i > 0 {
            t += gap.sample(&mut rng);
        }
        job.submit = t.round() as Millis;
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::offered_load;

    #[test]
    fn sizes_are_multiples_of_the_segment() {
        let c = default_classes();
        assert_eq!(c[2].sizes(), vec![8, 12, 16]);
        assert_eq!(c[4].sizes(), (8..=18).map(|k| 4 * k).collect::<Vec<_>>());
        assert_eq!(c[5].sizes().first(), Some(&144));
        assert_eq!(c[5].sizes().last(), Some(&288));
        assert_eq!(c[0].sizes(), vec![1, 2]);
    }

    #[test]
    fn segment_overrides() {
        let mut c = default_classes();
        set_segment(&mut c, "32-72=16").unwrap();
        assert_eq!(c[4].sizes(), vec![32, 48, 64]);
        set_segment(&mut c, "32-72=none").unwrap();
        assert_eq!(c[4].sizes().len(), 11);
        set_segment(&mut c, "8-16=none").unwrap();
        assert_eq!(c[2].segment, None);
        assert!(set_segment(&mut c, "4=3").is_err());
        assert!(set_segment(&mut c, "nope=3").is_err());
        assert!(set_segment(&mut c, "18").is_err());
    }

    #[test]
    fn generated_load_is_close_to_the_target_and_reproducible() {
        let spec = SyntheticSpec::new(4000, 0.9, 1000.0, 5);
        let jobs = generate(&spec).unwrap();
        assert_eq!(jobs, generate(&spec).unwrap());
        let load = offered_load(&jobs, 1000.0);
        assert!((load - 0.9).abs() < 0.05, "{load}");
        assert!(jobs.windows(2).all(|w| w[0].submit <= w[1].submit));
        for j in &jobs {
            assert!(j.limit >= j.runtime);
            assert!((MIN_RUNTIME..=MAX_RUNTIME).contains(&j.runtime));
            if let Some(s) = j.segment {
                assert!(j.trays % s == 0 && s < j.trays && s <= 18);
            }
        }
    }
}
