//! A workload from its description ([`WorkloadSpec`]): the job stream every simulator command
//! runs (the synthetic mix, a CSV trace or a site's sacct export), its name for reports and
//! the options that shaped it. The command line only turns its flags into the description.
//!
//! The readers it builds from: [`synthetic`] (the synthetic NVL72 job mix), [`trace`] (a CSV
//! job trace: Philly, the Kalos sample, a site's own), [`sacct`] (a site's history as `sacct`
//! exports it); [`checkpoint`], how often the jobs save their progress (what a kill loses);
//! [`tiers`], the rule that gives a workload preemption tiers by job size; and
//! [`site_tiers`], a site's own tiers by partition or QOS, which the sacct reader applies.

pub mod checkpoint;
pub mod sacct;
pub mod site_tiers;
pub mod synthetic;
pub mod tiers;
pub mod trace;

use std::path::PathBuf;

use serde_json::{json, Value};

use self::sacct::SacctOptions;
use self::synthetic::SyntheticSpec;
use self::trace::TraceSpec;
use crate::job::{assign_classes, set_offered_load, size_by_gpus, Job, Millis};
use crate::slowdown::ClassRule;

/// Where the jobs come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Synthetic,
    /// A CSV trace; `philly` names the Philly trace's.
    Trace {
        path: PathBuf,
        philly: bool,
    },
    Sacct(PathBuf),
}

/// What shapes a workload; `None` and empty fields take the source's defaults.
#[derive(Debug, Clone)]
pub struct WorkloadSpec {
    pub source: Source,
    /// At most this many jobs (the synthetic mix: exactly, default 3,000).
    pub jobs: Option<usize>,
    /// The offered load (the synthetic mix: default 0.9; traces and histories: as recorded).
    pub load: Option<f64>,
    pub seed: u64,
    /// The synthetic mix's run times: median hours and log-normal sigma.
    pub runtime_median_h: f64,
    pub runtime_sigma: f64,
    /// The synthetic mix's `CLASS=K` segment rules.
    pub segments: Vec<String>,
    /// Traces and histories: submission times times this factor.
    pub time_scale: Option<f64>,
    /// Job sizes (and their segments) times this factor.
    pub scale_sizes: f64,
    /// The share of jobs without `--segment` sized by GPUs.
    pub gpu_sized: f64,
    pub class_rule: ClassRule,
    /// How a history is read (sacct only).
    pub sacct: Option<SacctOptions>,
    pub gpus_per_tray: usize,
    /// Jobs of at least this many trays are the high preemption tier ([`tiers`]); None:
    /// every job at the default tier (no preemption), unless a history's
    /// [`SacctOptions::tiers`] sets them (the two are exclusive).
    pub high_tier_from: Option<usize>,
}

/// A built workload: the jobs, the name reports give it, and what shaped it.
pub struct Workload {
    pub jobs: Vec<Job>,
    pub name: &'static str,
    pub details: Value,
    /// A history's summary line (sacct only), for the command to print.
    pub read: Option<String>,
}

/// Builds the workload `spec` describes, on `healthy` trays (expected healthy on average:
/// what an offered load is measured against).
pub fn build(spec: &WorkloadSpec, healthy: f64) -> Result<Workload, String> {
    let mut read = None;
    let (mut jobs, name, mut details) = match &spec.source {
        Source::Synthetic => {
            let mut synth = SyntheticSpec::new(
                spec.jobs.unwrap_or(3000),
                spec.load.unwrap_or(0.9),
                healthy,
                spec.seed,
            );
            synth.runtime_median_h = spec.runtime_median_h;
            synth.runtime_sigma = spec.runtime_sigma;
            for rule in &spec.segments {
                synthetic::set_segment(&mut synth.classes, rule)?;
            }
            let details = serde_json::to_value(&synth).map_err(|e| e.to_string())?;
            (synthetic::generate(&synth)?, "synthetic", details)
        }
        Source::Trace { path, philly } => {
            let rows = trace::read(path)?;
            let trace_spec = TraceSpec {
                scale_sizes: spec.scale_sizes,
                load: None,
                healthy_trays: healthy,
                gpus_per_tray: spec.gpus_per_tray as u32,
                max_jobs: spec.jobs,
                seed: spec.seed,
            };
            let mut details = serde_json::to_value(&trace_spec).map_err(|e| e.to_string())?;
            details["trace"] = path.display().to_string().into();
            let name = if *philly { "philly" } else { "csv" };
            (trace::workload(&rows, &trace_spec)?, name, details)
        }
        Source::Sacct(path) => {
            let opts = spec
                .sacct
                .as_ref()
                .ok_or("a sacct workload needs its reading options")?;
            let history = sacct::read(path, opts)?;
            let summary = history.summary();
            read = Some(format!("{}: {summary}", sacct::input::name(path)));
            let mut jobs = history.workload();
            jobs.truncate(spec.jobs.unwrap_or(usize::MAX));
            scale_sizes(&mut jobs, spec.scale_sizes)?;
            let details = json!({
                "sacct": sacct::input::name(path),
                "read": summary,
                "options": opts,
                "scale_sizes": spec.scale_sizes,
            });
            (jobs, "sacct", details)
        }
    };
    if jobs.is_empty() {
        return Err("the workload has no jobs".into());
    }
    if !matches!(spec.source, Source::Synthetic) {
        if let Some(f) = spec.time_scale {
            if !(f > 0.0 && f.is_finite()) {
                return Err("--time-scale must be positive".into());
            }
            for j in &mut jobs {
                j.submit = (j.submit as f64 * f).round() as Millis;
            }
            details["time_scale"] = f.into();
        }
        if let Some(load) = spec.load {
            if !(load > 0.0 && load.is_finite()) {
                return Err("--load must be positive".into());
            }
            set_offered_load(&mut jobs, healthy, load);
            details["load"] = load.into();
        }
    }
    details["gpu_sized"] = spec.gpu_sized.into();
    // A history says itself which jobs were sized by GPUs (their submit lines).
    if !matches!(spec.source, Source::Sacct(_)) || spec.gpu_sized > 0.0 {
        size_by_gpus(&mut jobs, spec.gpu_sized, spec.seed);
    }
    assign_classes(&mut jobs, &spec.class_rule, spec.seed);
    if let Some(trays) = spec.high_tier_from {
        if let Some(site) = spec.sacct.as_ref().and_then(|o| o.tiers.as_ref()) {
            return Err(format!(
                "--high-tier-from and {} both set the tiers: choose one",
                site.by.flag()
            ));
        }
        tiers::high_tier_from(&mut jobs, trays);
        details["high_tier_from"] = trays.into();
    }
    Ok(Workload {
        jobs,
        name,
        details,
        read,
    })
}

/// `--scale-sizes` for a history: trays (and segments with them) times F, at least 1.
fn scale_sizes(jobs: &mut [Job], f: f64) -> Result<(), String> {
    if f <= 0.0 {
        return Err("--scale-sizes must be positive".into());
    }
    if f != 1.0 {
        for j in jobs {
            j.trays = ((j.trays as f64 * f).round() as usize).max(1);
            j.segment = j.segment.filter(|&k| j.trays % k == 0);
        }
    }
    Ok(())
}
