//! The workload options `simulate` and `replay` share, and the job stream they build from
//! the synthetic mix, a CSV trace or a site's sacct export.

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use crate::choices::{BackfillArg, LimitsArg, PreemptModeArg};
use nvl72_sim::job::Job;
use nvl72_sim::run::failures::FailureModel;
use nvl72_sim::run::scheduler::Backfill;
use nvl72_sim::run::simulation::SimConfig;
use nvl72_sim::slowdown::{parse_variant, ClassRule, Slowdown};
use nvl72_sim::workload::checkpoint::{self, Checkpoints};
use nvl72_sim::workload::sacct::{self, SacctOptions};
use nvl72_sim::workload::site_tiers::{SiteTiers, TierField};
use nvl72_sim::workload::trace;
use nvl72_sim::workload::{self, Source, WorkloadSpec};

/// The workload, the cluster and its failures: what `simulate` and `replay` share.
#[derive(Args)]
pub struct WorkloadArgs {
    /// `synthetic`; `philly [FILE]` (the Philly trace, data/ by default); `csv FILE`
    /// (`submit_s,gpus,runtime_s[,attempts]`); `sacct FILE` (a site's history, exported with
    /// the README's sacct command, or `-p`/`-P`/`--delimiter`, with steps or not, or
    /// `sacct --json`; plain, gzip or zstd; `-` reads stdin)
    #[arg(long, num_args = 1..=2, value_names = ["KIND", "FILE"], default_value = "synthetic")]
    workload: Vec<String>,
    /// Racks of 18 trays [default: 278 synthetic, 12 philly, csv: 12 or what its largest
    /// job needs; sacct: required; replay: 8]
    #[arg(long)]
    pub racks: Option<usize>,
    /// Jobs: synthetic jobs to draw [default: 3000], or the first N of a trace or history
    #[arg(long)]
    jobs: Option<usize>,
    /// Offered load on the healthy trays: arrivals compressed or stretched to it [default:
    /// 0.9 synthetic; traces and histories keep their times]
    #[arg(long, conflicts_with = "time_scale")]
    pub load: Option<f64>,
    /// Traces and histories: multiply the time between arrivals by F (0.1: ten times denser)
    #[arg(long, value_name = "F")]
    time_scale: Option<f64>,
    /// Traces and histories: multiply each job's trays by F (rounded, at least 1)
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    scale_sizes: f64,
    /// sacct: only jobs that ran in this partition
    #[arg(long)]
    partition: Option<String>,
    /// sacct: only jobs submitted at or after this time (`2026-11-01` or `2026-11-01T08:00:00`)
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// sacct: only jobs submitted before this time
    #[arg(long, value_name = "TIME")]
    until: Option<String>,
    /// sacct: GPUs per node in the history (8 for an H100 partition); each job then takes
    /// ceil(GPUs / 4) trays
    #[arg(long, value_name = "N", default_value_t = 4)]
    gpus_per_node: u64,
    /// Also write the job stream as read (JSON: submit, trays, segment, run time, limit in ms)
    #[arg(long, value_name = "FILE")]
    save_stream: Option<PathBuf>,
    /// Synthetic: set a class's segment, e.g. `--segment 144+=16 --segment 8-16=none`
    #[arg(long = "segment", value_name = "CLASS=K")]
    segments: Vec<String>,
    /// Synthetic: median run time, hours (log-normal)
    #[arg(long, default_value_t = 1.5)]
    runtime_median_h: f64,
    /// Synthetic: sigma of the log-normal run time
    #[arg(long, default_value_t = 1.2)]
    runtime_sigma: f64,
    /// Share of the jobs without --segment that are sized by GPUs (`--gpus=4*trays`, no
    /// `-N`), as most ML users submit; the same jobs under every policy
    #[arg(long, value_name = "SHARE", default_value_t = 0.0)]
    gpu_sized: f64,
    /// Steady-state probability that a tray is unavailable
    #[arg(long, default_value_t = 0.0)]
    lambda: f64,
    /// Mean time to repair a tray, hours
    #[arg(long, value_name = "HOURS", default_value_t = 72.0)]
    mttr: f64,
    /// Mean time between failures of a tray, hours (instead of --lambda)
    #[arg(long, value_name = "HOURS", conflicts_with = "lambda")]
    mtbf: Option<f64>,
    /// Trays drawn down at the start stay down; no other failures
    #[arg(long, conflicts_with = "mtbf")]
    static_failures: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Backfill depth (Slurm's bf_max_job_test)
    #[arg(long, default_value_t = 500)]
    bf_depth: usize,
    /// Backfill's reservations: for every job it tests (`conservative`, Slurm's algorithm), or
    /// the head's only (`easy`, 20-100 times faster on hundreds of racks) [default: replay
    /// conservative, simulate easy]
    #[arg(long, value_enum)]
    pub backfill: Option<BackfillArg>,
    /// Hold a job killed by tray failures more than N times (Slurm's MaxBatchRequeue);
    /// -1: re-queue forever
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5,
        allow_negative_numbers = true
    )]
    max_requeue: i64,
    /// What a rack boundary costs a split job's run time: `off`, `low` (every job
    /// data-parallel), `default` (dense, TP8), `high` (mixture of experts, EP32) or
    /// `uniform:X` (every split job X times longer); constants as `,key=value` (e.g.
    /// `high,phi_tight_moe=0.25`; the model and its constants: crates/sim/src/slowdown.rs)
    /// [default: simulate default, replay off]
    #[arg(long, value_name = "VARIANT[,KEY=V]")]
    pub slowdown: Option<String>,
    /// Draw each job's class instead of the variant's: shares `dp=0.3,dense=0.5,moe=0.2`, or
    /// `by-size` (1-2 trays dp, 3-18 dense, 19+ moe)
    #[arg(long, value_name = "MIX")]
    comm_mix: Option<String>,
    /// A run that its slowdown stretches past its time limit: `lenient` runs on (counted as
    /// an overrun), `strict` is killed at the limit as Slurm does (its work is lost)
    #[arg(long, value_enum, default_value = "lenient")]
    time_limits: LimitsArg,
    /// Minutes of work between a job's checkpoints, or `none`: a run a failure, preemption or
    /// strict limit kills loses the work since its last checkpoint and resumes from it
    /// (docs/results.md, "Goodput: the checkpoint model") [default: simulate 30, replay none]
    #[arg(long, value_name = "MINUTES|none")]
    checkpoint_minutes: Option<String>,
    /// Preemption: jobs of at least N trays are the high tier and may preempt any smaller
    /// job (the low tier, preemptable); 18 makes whole-rack and multi-rack jobs the high
    /// tier. Off by default: no job is preempted
    #[arg(long, value_name = "N")]
    high_tier_from: Option<usize>,
    /// Preemption, sacct: each job's tier from its partition, as preempt/partition_prio
    /// ranks them: `NAME=LEVEL` (LEVEL: the partition's PriorityTier) or
    /// `NAME=LEVEL:preemptable` (its PreemptMode is not OFF), repeated or comma-separated,
    /// e.g. `high=2,low=1:preemptable`. Jobs of a partition not listed keep the default tier
    /// (0, not preemptable)
    #[arg(
        long,
        value_name = "NAME=LEVEL[:preemptable]",
        value_delimiter = ',',
        conflicts_with_all = ["high_tier_from", "tier_qos"]
    )]
    tier_partition: Vec<String>,
    /// Preemption, sacct: each job's tier from its QOS (preempt/qos; the export needs the QOS
    /// field), as --tier-partition: a QOS preempts the preemptable QOS of lower levels
    #[arg(
        long,
        value_name = "NAME=LEVEL[:preemptable]",
        value_delimiter = ',',
        conflicts_with = "high_tier_from"
    )]
    tier_qos: Vec<String>,
    /// Preemption: what a preempted job undergoes: `requeue` (it loses the work since its
    /// last checkpoint and queues again) or `cancel` (its run's work is lost for good)
    #[arg(long, value_enum, default_value = "requeue")]
    preempt_mode: PreemptModeArg,
}

/// What a command assumes when the user leaves a model's flag out.
pub struct Defaults {
    pub slowdown: &'static str,
    pub checkpoints: Checkpoints,
}

impl Defaults {
    /// `nvl72 simulate`, `breakeven`: the default slowdown model and checkpoint interval.
    pub const PREDICT: Defaults = Defaults {
        slowdown: "default",
        checkpoints: checkpoint::DEFAULT,
    };
    /// `nvl72 replay`: the lab's jobs sleep their base time and restart from the beginning.
    pub const REPLAY: Defaults = Defaults {
        slowdown: "off",
        checkpoints: Checkpoints::None,
    };
}

impl WorkloadArgs {
    fn failure_model(&self) -> Result<FailureModel, String> {
        match self.mtbf {
            Some(mtbf) if mtbf > 0.0 && self.mttr > 0.0 => Ok(FailureModel::OnOff {
                mtbf_h: mtbf,
                mttr_h: self.mttr,
            }),
            Some(_) => Err("--mtbf and --mttr must be positive".into()),
            None => FailureModel::with_unavailability(
                self.lambda,
                (!self.static_failures).then_some(self.mttr),
            ),
        }
    }

    /// The simulator's configuration for `racks` racks (failures, seeds, backfill depth).
    pub fn sim_config(&self, racks: usize) -> Result<SimConfig, String> {
        self.sim_config_or(racks, &Defaults::PREDICT)
    }

    /// The workload has preemption tiers (`--high-tier-from`, `--tier-partition`,
    /// `--tier-qos`).
    pub fn preempts(&self) -> bool {
        self.high_tier_from.is_some() || self.site_tiers().is_some()
    }

    /// `--tier-partition` or `--tier-qos` (clap lets at most one through), unparsed.
    fn site_tiers(&self) -> Option<(TierField, &[String])> {
        [
            (TierField::Partition, &self.tier_partition),
            (TierField::Qos, &self.tier_qos),
        ]
        .into_iter()
        .find(|(_, items)| !items.is_empty())
        .map(|(by, items)| (by, items.as_slice()))
    }

    /// [`Self::sim_config`], with `defaults` for the model flags not given.
    pub fn sim_config_or(&self, racks: usize, defaults: &Defaults) -> Result<SimConfig, String> {
        if racks == 0 {
            return Err("--racks must be at least 1".into());
        }
        let mut cfg = SimConfig::new(racks);
        cfg.failures = self.failure_model()?;
        cfg.seed = self.seed;
        cfg.bf_depth = self.bf_depth;
        cfg.backfill = self.backfill.map_or(Backfill::Easy, Backfill::from);
        cfg.max_requeue = u32::try_from(self.max_requeue).ok();
        let (model, variant, _) =
            parse_variant(self.slowdown.as_deref().unwrap_or(defaults.slowdown))?;
        cfg.slowdown = Slowdown {
            model,
            limits: self.time_limits.into(),
            variant,
            classes: self.class_rule()?.describe(),
        };
        cfg.checkpoints = match &self.checkpoint_minutes {
            Some(text) => Checkpoints::parse(text)?,
            None => defaults.checkpoints,
        };
        cfg.preempt_mode = self.preempt_mode.into();
        Ok(cfg)
    }

    fn variant(&self) -> &str {
        self.slowdown.as_deref().unwrap_or("default")
    }

    /// Which class each job gets: `--comm-mix`, else the variant's (dense for `off` and
    /// `uniform`, where it changes nothing).
    fn class_rule(&self) -> Result<ClassRule, String> {
        match &self.comm_mix {
            Some(mix) => ClassRule::parse(mix),
            None => {
                let (_, _, class) = parse_variant(self.variant())?;
                Ok(ClassRule::All(class.unwrap_or_default()))
            }
        }
    }

    pub fn source(&self) -> Result<Source, String> {
        let file = self.workload.get(1).map(PathBuf::from);
        let kind = self.workload.first().map_or("synthetic", String::as_str);
        let need = |what: &str| {
            file.clone()
                .ok_or_else(|| format!("--workload {kind} FILE: name the {what}"))
        };
        match kind {
            "synthetic" if file.is_none() => Ok(Source::Synthetic),
            "synthetic" => Err("--workload synthetic takes no file".into()),
            "philly" => Ok(Source::Trace {
                path: file.unwrap_or_else(trace::philly_path),
                philly: true,
            }),
            "csv" => Ok(Source::Trace {
                path: need("CSV trace (submit_s,gpus,runtime_s[,attempts])")?,
                philly: false,
            }),
            "sacct" => Ok(Source::Sacct(need("sacct export")?)),
            other => Err(format!(
                "--workload `{other}`: expected synthetic, philly [FILE], csv FILE or sacct FILE"
            )),
        }
    }

    /// `--racks`, or the source's default (`replay` has its own).
    pub fn racks_for_simulate(&self) -> Result<usize, String> {
        if let Some(r) = self.racks {
            return Ok(r);
        }
        // The racks' shape before there is a configuration: the simulator's (GB200 NVL72).
        let shape = SimConfig::new(1);
        let (per_tray, per_rack) = (shape.gpus_per_tray as u32, shape.trays_per_rack);
        match self.source()? {
            Source::Synthetic => Ok(278),
            Source::Trace { philly: true, .. } => Ok(12),
            Source::Trace { path, .. } => {
                let rows = trace::read(&path)?;
                let trays = rows
                    .iter()
                    .map(|r| r.gpus.div_ceil(per_tray) as usize)
                    .max()
                    .unwrap_or(1);
                let trays = (trays as f64 * self.scale_sizes).round() as usize;
                Ok(trays.div_ceil(per_rack).max(12))
            }
            Source::Sacct(path) => {
                let history = sacct::read(&path, &self.sacct_options(shape.gpus_per_tray)?)?;
                let trays = history.jobs.iter().map(|j| j.trays).max().unwrap_or(1);
                Err(format!(
                    "--racks: how many NVL72 racks the cluster has (the largest job of {} needs {})",
                    path.display(),
                    trays.div_ceil(per_rack)
                ))
            }
        }
    }

    fn sacct_options(&self, gpus_per_tray: usize) -> Result<SacctOptions, String> {
        let time = |flag: &str, v: &Option<String>| -> Result<Option<i64>, String> {
            let Some(v) = v else { return Ok(None) };
            let full = if v.len() == 10 {
                format!("{v}T00:00:00")
            } else {
                v.clone()
            };
            sacct::timestamp(&full)
                .ok()
                .flatten()
                .map(Some)
                .ok_or_else(|| format!("{flag} `{v}`: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS"))
        };
        if self.gpus_per_node == 0 {
            return Err("--gpus-per-node must be at least 1".into());
        }
        Ok(SacctOptions {
            partition: self.partition.clone(),
            since: time("--since", &self.since)?,
            until: time("--until", &self.until)?,
            gpus_per_node: self.gpus_per_node,
            gpus_per_tray: gpus_per_tray as u64,
            tiers: self
                .site_tiers()
                .map(|(by, items)| SiteTiers::parse(by, items))
                .transpose()?,
        })
    }

    /// The job stream for `cfg`'s cluster (`healthy` trays expected healthy), its name for
    /// reports and the options that shaped it.
    pub fn build(
        &self,
        cfg: &SimConfig,
        healthy: f64,
    ) -> Result<(Vec<Job>, &'static str, Value), String> {
        let source = self.source()?;
        if !matches!(source, Source::Synthetic) && !self.segments.is_empty() {
            return Err("--segment applies to the synthetic workload only".into());
        }
        let sacct = matches!(source, Source::Sacct(_));
        if !sacct && (self.partition.is_some() || self.since.is_some() || self.until.is_some()) {
            return Err("--partition, --since and --until apply to --workload sacct".into());
        }
        if let Some((by, _)) = self.site_tiers().filter(|_| !sacct) {
            return Err(format!(
                "{} applies to --workload sacct (other workloads name no partition or QOS); --high-tier-from sets tiers by size",
                by.flag()
            ));
        }
        if matches!(source, Source::Synthetic) && self.time_scale.is_some() {
            return Err(
                "--time-scale applies to traces and histories; the synthetic mix takes --load"
                    .into(),
            );
        }
        let spec = WorkloadSpec {
            sacct: match source {
                Source::Sacct(_) => Some(self.sacct_options(cfg.gpus_per_tray)?),
                _ => None,
            },
            source,
            jobs: self.jobs,
            load: self.load,
            seed: self.seed,
            runtime_median_h: self.runtime_median_h,
            runtime_sigma: self.runtime_sigma,
            segments: self.segments.clone(),
            time_scale: self.time_scale,
            scale_sizes: self.scale_sizes,
            gpu_sized: self.gpu_sized,
            class_rule: self.class_rule()?,
            gpus_per_tray: cfg.gpus_per_tray,
            high_tier_from: self.high_tier_from,
        };
        let built = workload::build(&spec, healthy)?;
        if let Some(read) = &built.read {
            eprintln!("nvl72: {read}");
        }
        let jobs = built.jobs;
        if let Some(path) = &self.save_stream {
            let text = serde_json::to_string_pretty(&jobs).map_err(|e| e.to_string())?;
            crate::output::write_file(path, text)?;
        }
        Ok((jobs, built.name, built.details))
    }
}
