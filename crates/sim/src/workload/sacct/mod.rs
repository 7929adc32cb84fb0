//! A site's job history from Slurm accounting as a workload: what
//! `sacct --allocations --parsable2 --noconvert ...` exports (the README has the command),
//! and the other common forms: with steps, `--parsable`, any `--delimiter`, converted units,
//! `sacct --json`; plain, gzip or zstd; a file or stdin ([`input`]). Text fields are found
//! by the header line, in any order (`text.rs`); JSON by name (`json.rs`). Every record is used
//! or skipped for a counted reason ([`History::summary`]); a record that cannot be read is an
//! error naming its line.

mod fields;
pub mod input;
mod json;
#[cfg(test)]
mod tests;
mod text;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde::Serialize;

use super::site_tiers::{SiteTiers, TierField};
use crate::job::{Job, Tier, SECOND};
pub use fields::timestamp;
use fields::{JobKind, Limit, SubmitLine};

/// Backfill plans an unlimited job as running this long (Slurm's `YEAR_SECONDS`).
const YEAR_S: u64 = 365 * 24 * 3600;

/// Which records to use and how to map the site's nodes to trays.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SacctOptions {
    /// Only jobs that ran in this partition.
    pub partition: Option<String>,
    /// Only jobs submitted at or after this time (seconds, as [`fields::timestamp`] reads).
    pub since: Option<i64>,
    /// Only jobs submitted before this time.
    pub until: Option<i64>,
    /// GPUs per node in the exported history (4 on a GB200 site; 8 on an H100 partition).
    pub gpus_per_node: u64,
    /// GPUs per tray of the simulated racks.
    pub gpus_per_tray: u64,
    /// Each job's preemption tier from its partition or QOS; None: the default tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<SiteTiers>,
}

impl Default for SacctOptions {
    fn default() -> Self {
        SacctOptions {
            partition: None,
            since: None,
            until: None,
            gpus_per_node: 4,
            gpus_per_tray: 4,
            tiers: None,
        }
    }
}

/// Why a record is not in the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Skip {
    NeverStarted,
    StillRunning,
    NoGpus,
    OtherPartition,
    OutsideWindow,
}

impl Skip {
    pub fn describe(self) -> &'static str {
        match self {
            Skip::NeverStarted => "never started",
            Skip::StillRunning => "still running (no end yet)",
            Skip::NoGpus => "no GPUs in AllocTRES/ReqTRES",
            Skip::OtherPartition => "another partition",
            Skip::OutsideWindow => "submitted outside the window",
        }
    }
}

/// How a used job was read, where an admin might want to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Note {
    ArrayTask,
    HetComponent,
    Requeued,
    RequeuedLastRunOnly,
    Unlimited,
    PartitionLimit,
    RanPastLimit,
    SegmentFromSubmitLine,
    SegmentDropped,
    SizedByGpus,
}

impl Note {
    pub fn describe(self) -> &'static str {
        match self {
            Note::ArrayTask => "array tasks (each a job)",
            Note::HetComponent => "hetjob components (each placed as a job, as Slurm does)",
            Note::Requeued => "requeued (run times of all runs summed)",
            Note::RequeuedLastRunOnly => {
                "requeued, last run only (export with --duplicates to count every run)"
            }
            Note::Unlimited => "time limit UNLIMITED (planned as a year, as Slurm's backfill does)",
            Note::PartitionLimit => "time limit Partition_Limit (planned as a year)",
            Note::RanPastLimit => "ran past their limit (the limit is raised to the run time)",
            Note::SegmentFromSubmitLine => "--segment read from SubmitLine",
            Note::SegmentDropped => "--segment that does not divide the job's trays (dropped)",
            Note::SizedByGpus => {
                "sized by GPUs (SubmitLine has --gpus or --gpus-per-task and no -N)"
            }
        }
    }
}

/// One job of the history, ready to simulate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryJob {
    pub id: String,
    /// Seconds, as [`fields::timestamp`] reads them.
    pub submit: i64,
    /// Summed over its runs.
    pub runtime_s: u64,
    /// At least `runtime_s`.
    pub limit_s: u64,
    pub gpus: u64,
    pub trays: usize,
    /// In trays.
    pub segment: Option<usize>,
    pub by_gpus: bool,
    pub attempts: u32,
    /// From its partition or QOS ([`SacctOptions::tiers`]); the default without them.
    #[serde(skip_serializing_if = "Tier::is_default")]
    pub tier: Tier,
}

/// What a history held and what was made of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct History {
    /// In submit order.
    pub jobs: Vec<HistoryJob>,
    /// Records read: data lines, or jobs of `sacct --json`.
    pub records: usize,
    /// Of those, step records (an export without `--allocations`): not jobs.
    pub steps: usize,
    /// Jobs (the records of one `JobIDRaw`) read.
    pub read: usize,
    pub skipped: BTreeMap<Skip, usize>,
    pub notes: BTreeMap<Note, usize>,
    /// What the export was written in, for the summary.
    pub form: Option<Form>,
    /// The partitions (or QOS) the export's jobs carry, gathered only for a tier rule: what
    /// its names are checked against.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub tier_names: BTreeSet<String>,
}

/// How an export was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Form {
    /// `sacct --json`, else text.
    pub json: bool,
    /// `gzip`, `zstd`, or none.
    pub packing: Option<&'static str>,
}

/// A record that cannot be read, and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SacctError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for SacctError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// One record (a data line, or a job of `sacct --json`), read.
#[derive(Debug, Clone)]
struct Record {
    id: String,
    kind: JobKind,
    partition: Option<String>,
    /// Kept only when the tiers are by QOS (`Collector::add` drops it otherwise).
    qos: Option<String>,
    submit: Option<i64>,
    start: Option<i64>,
    /// `None`: no end yet.
    ran_s: Option<u64>,
    limit: Limit,
    nnodes: Option<u64>,
    gpus: Option<u64>,
    restarts: u32,
    segment: Option<u64>,
    submit_line: SubmitLine,
}

/// Reads an export: a file, or stdin for `-`; text or JSON, plain or compressed. A tier
/// rule naming a partition (QOS) that no job of the export carries is an error naming it.
pub fn read(path: &Path, opts: &SacctOptions) -> Result<History, String> {
    let name = input::name(path);
    let input = input::open(path).map_err(|e| format!("{name}: {e}"))?;
    let history = from_input(input, opts).map_err(|e| format!("{name}: {e}"))?;
    if let Some(tiers) = &opts.tiers {
        tiers
            .check_found(&history.tier_names)
            .map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(history)
}

/// [`read`] on bytes in memory, whose every error names a line: the tier rule's names are
/// not checked (`SiteTiers::check_found` on [`History::tier_names`] does it).
pub fn parse(bytes: &[u8], opts: &SacctOptions) -> Result<History, SacctError> {
    let input = input::detect(Box::new(std::io::Cursor::new(bytes.to_vec())))
        .map_err(|message| SacctError { line: 1, message })?;
    from_input(input, opts)
}

fn from_input(mut input: input::Input, opts: &SacctOptions) -> Result<History, SacctError> {
    let mut jobs = Collector {
        keep_qos: opts.tiers.as_ref().is_some_and(|t| t.by == TierField::Qos),
        ..Collector::default()
    };
    match input.format {
        input::Format::Text => text::read(&mut input.reader, opts, &mut jobs)?,
        input::Format::Json => json::read(&mut input.reader, &mut jobs)?,
    }
    let mut history = jobs.finish(opts);
    history.form = Some(Form {
        json: input.format == input::Format::Json,
        packing: input.packing.describe(),
    });
    Ok(history)
}

/// The records of each job in order of first appearance (`--duplicates` gives one per run).
#[derive(Default)]
struct Collector {
    records: usize,
    /// Step records (`123.batch`, `123.0`): counted, never read further.
    steps: usize,
    groups: Vec<Vec<Record>>,
    by_id: HashMap<String, usize>,
    /// Whether records keep their QOS (only a tier rule by QOS reads it).
    keep_qos: bool,
}

impl Collector {
    fn step(&mut self) {
        self.records += 1;
        self.steps += 1;
    }

    fn add(&mut self, mut record: Record) {
        if !self.keep_qos {
            record.qos = None;
        }
        self.records += 1;
        let next = self.groups.len();
        let slot = *self.by_id.entry(record.id.clone()).or_insert(next);
        if slot == next {
            self.groups.push(Vec::new());
        }
        self.groups[slot].push(record);
    }

    fn finish(self, opts: &SacctOptions) -> History {
        let mut history = History {
            records: self.records,
            steps: self.steps,
            read: self.groups.len(),
            ..History::default()
        };
        if let Some(tiers) = &opts.tiers {
            for name in self
                .groups
                .iter()
                .flatten()
                .filter_map(|r| r.tier_name(tiers.by))
            {
                if !history.tier_names.contains(name) {
                    history.tier_names.insert(name.to_string());
                }
            }
        }
        for group in &self.groups {
            match job(group, opts, &mut history.notes) {
                Ok(j) => history.jobs.push(j),
                Err(why) => *history.skipped.entry(why).or_default() += 1,
            }
        }
        history.jobs.sort_by_key(|j| j.submit);
        history
    }
}

impl Record {
    /// Its partition or QOS, as `by` names tiers (an empty field names none).
    fn tier_name(&self, by: TierField) -> Option<&str> {
        let name = match by {
            TierField::Partition => self.partition.as_deref(),
            TierField::Qos => self.qos.as_deref(),
        };
        name.filter(|n| !n.is_empty())
    }
}

/// One job from its records (several with `--duplicates`: one per run), or why not.
fn job(
    records: &[Record],
    opts: &SacctOptions,
    notes: &mut BTreeMap<Note, usize>,
) -> Result<HistoryJob, Skip> {
    let last = records.last().expect("a group has a record");
    let mut note = |n: Note| *notes.entry(n).or_default() += 1;
    if last.kind == JobKind::ArrayPending {
        return Err(Skip::NeverStarted);
    }
    let runs: Vec<&Record> = records.iter().filter(|r| r.start.is_some()).collect();
    let Some(&final_run) = runs.last() else {
        return Err(Skip::NeverStarted);
    };
    let runtime_s = runs
        .iter()
        .try_fold(0u64, |sum, r| r.ran_s.map(|s| sum.saturating_add(s)))
        .ok_or(Skip::StillRunning)?;
    if let Some(p) = &opts.partition {
        if final_run.partition.as_deref() != Some(p) {
            return Err(Skip::OtherPartition);
        }
    }
    let submit = records
        .iter()
        .filter_map(|r| r.submit)
        .min()
        .or(final_run.start)
        .unwrap_or_default();
    if opts.since.is_some_and(|s| submit < s) || opts.until.is_some_and(|u| submit >= u) {
        return Err(Skip::OutsideWindow);
    }
    let gpus = final_run.gpus.filter(|&g| g > 0).ok_or(Skip::NoGpus)?;
    let per_tray = opts.gpus_per_tray.max(1);
    let by_gpus_trays = gpus.div_ceil(per_tray);
    let trays = match final_run.nnodes {
        Some(n) if n > 0 && opts.gpus_per_node == per_tray => n.max(by_gpus_trays),
        _ => by_gpus_trays,
    } as usize;
    let segment_nodes = match (final_run.segment, final_run.submit_line.segment) {
        (Some(k), _) => Some(k),
        (None, Some(k)) => {
            note(Note::SegmentFromSubmitLine);
            Some(k)
        }
        (None, None) => None,
    };
    let segment = segment_nodes.and_then(|k| {
        let t = k.saturating_mul(opts.gpus_per_node);
        let ok = t % per_tray == 0 && t > 0 && trays as u64 % (t / per_tray) == 0;
        if !ok {
            note(Note::SegmentDropped);
        }
        ok.then(|| (t / per_tray) as usize)
    });
    match final_run.kind {
        JobKind::ArrayTask => note(Note::ArrayTask),
        JobKind::HetComponent => note(Note::HetComponent),
        _ => {}
    }
    let attempts = if runs.len() > 1 {
        note(Note::Requeued);
        runs.len() as u32
    } else if final_run.restarts > 0 {
        note(Note::RequeuedLastRunOnly);
        final_run.restarts.saturating_add(1)
    } else {
        1
    };
    let mut limit_s = match final_run.limit {
        Limit::Seconds(s) => s,
        Limit::Unlimited => {
            note(Note::Unlimited);
            YEAR_S
        }
        Limit::Partition => {
            note(Note::PartitionLimit);
            YEAR_S
        }
    };
    if runtime_s > limit_s && runs.len() == 1 {
        note(Note::RanPastLimit);
    }
    limit_s = limit_s.max(runtime_s);
    let by_gpus = final_run.submit_line.by_gpus && segment.is_none();
    if by_gpus {
        note(Note::SizedByGpus);
    }
    let tier = opts
        .tiers
        .as_ref()
        .map_or_else(Tier::default, |t| t.tier_of(final_run.tier_name(t.by)));
    Ok(HistoryJob {
        id: final_run.id.clone(),
        submit,
        runtime_s,
        limit_s,
        gpus,
        trays,
        segment,
        by_gpus,
        attempts,
        tier,
    })
}

impl History {
    /// "read N jobs (R records), used M, skipped K: reasons; notes".
    pub fn summary(&self) -> String {
        let skipped: usize = self.skipped.values().sum();
        let mut records = format!("{} records", self.records);
        if self.steps > 0 {
            records += &format!(", {} of them steps", self.steps);
        }
        let form = self.form.unwrap_or_default();
        if form.json {
            records += ", sacct --json";
        }
        if let Some(p) = form.packing {
            records += &format!(", {p}");
        }
        let mut out = format!(
            "read {} jobs ({records}), used {}, skipped {}",
            self.read,
            self.jobs.len(),
            skipped
        );
        if skipped > 0 {
            out += ": ";
            out += &counted(&self.skipped, Skip::describe);
        }
        if !self.notes.is_empty() {
            out += "; of those used: ";
            out += &counted(&self.notes, Note::describe);
        }
        if self.jobs.is_empty() && self.skipped.get(&Skip::NoGpus) == Some(&skipped) && skipped > 0
        {
            out += " (no job has gres/gpu in its TRES: add gres/gpu to AccountingStorageTRES)";
        }
        out
    }

    /// The simulator's jobs: submit times from the first job, in submit order.
    pub fn workload(&self) -> Vec<Job> {
        let first = self.jobs.first().map_or(0, |j| j.submit);
        self.jobs
            .iter()
            .enumerate()
            .map(|(id, j)| {
                let runtime = j.runtime_s.saturating_mul(SECOND).max(SECOND);
                Job {
                    id,
                    submit: (j.submit.saturating_sub(first).max(0) as u64).saturating_mul(SECOND),
                    trays: j.trays.max(1),
                    segment: j.segment,
                    by_gpus: j.by_gpus,
                    class: Default::default(),
                    runtime,
                    limit: j.limit_s.saturating_mul(SECOND).max(runtime),
                    tier: j.tier,
                }
            })
            .collect()
    }
}

/// `reason 3, other reason 1`.
fn counted<K: Copy>(counts: &BTreeMap<K, usize>, describe: fn(K) -> &'static str) -> String {
    counts
        .iter()
        .map(|(&k, n)| format!("{} {n}", describe(k)))
        .collect::<Vec<_>>()
        .join(", ")
}
