//! The columns of a `sacct --parsable2` export and the values in them: timestamps, time
//! limits, durations, TRES strings, job ids and the submit line.

use std::collections::HashMap;

/// Every field `sacct --format` accepts in Slurm 24.11 and 26.05 (`sacct --helpformat`), so
/// that a header naming anything else is refused as not being a sacct export.
const SACCT_FIELDS: &[&str] = &[
    "Account",
    "AdminComment",
    "AllocCPUS",
    "AllocNodes",
    "AllocTRES",
    "AssocID",
    "AveCPU",
    "AveCPUFreq",
    "AveDiskRead",
    "AveDiskWrite",
    "AvePages",
    "AveRSS",
    "AveVMSize",
    "BlockID",
    "Cluster",
    "Comment",
    "Constraints",
    "ConsumedEnergy",
    "ConsumedEnergyRaw",
    "Container",
    "CPUTime",
    "CPUTimeRAW",
    "DBIndex",
    "DerivedExitCode",
    "Elapsed",
    "ElapsedRaw",
    "Eligible",
    "End",
    "Exclusive",
    "ExitCode",
    "Extra",
    "FailedNode",
    "Flags",
    "GID",
    "Group",
    "JobID",
    "JobIDRaw",
    "JobName",
    "Layout",
    "Licenses",
    "MaxDiskRead",
    "MaxDiskReadNode",
    "MaxDiskReadTask",
    "MaxDiskWrite",
    "MaxDiskWriteNode",
    "MaxDiskWriteTask",
    "MaxPages",
    "MaxPagesNode",
    "MaxPagesTask",
    "MaxRSS",
    "MaxRSSNode",
    "MaxRSSTask",
    "MaxVMSize",
    "MaxVMSizeNode",
    "MaxVMSizeTask",
    "McsLabel",
    "MinCPU",
    "MinCPUNode",
    "MinCPUTask",
    "NCPUS",
    "NNodes",
    "NodeList",
    "NTasks",
    "OriginalSLUID",
    "OverSubscribe",
    "Partition",
    "Planned",
    "PlannedCPU",
    "PlannedCPURAW",
    "Priority",
    "QOS",
    "QOSRAW",
    "QOSREQ",
    "Reason",
    "ReqCPUFreq",
    "ReqCPUFreqGov",
    "ReqCPUFreqMax",
    "ReqCPUFreqMin",
    "ReqCPUS",
    "ReqMem",
    "ReqNodes",
    "ReqTRES",
    "Reservation",
    "ReservationId",
    "ReqReservation",
    "Restarts",
    "SegmentSize",
    "SLUID",
    "Start",
    "State",
    "StdErr",
    "StdIn",
    "StdOut",
    "Submit",
    "SubmitLine",
    "Suspended",
    "SystemComment",
    "SystemCPU",
    "Timelimit",
    "TimelimitRaw",
    "TotalCPU",
    "TRESUsageInAve",
    "TRESUsageInMax",
    "TRESUsageInMaxNode",
    "TRESUsageInMaxTask",
    "TRESUsageInMin",
    "TRESUsageInMinNode",
    "TRESUsageInMinTask",
    "TRESUsageInTot",
    "TRESUsageOutAve",
    "TRESUsageOutMax",
    "TRESUsageOutMaxNode",
    "TRESUsageOutMaxTask",
    "TRESUsageOutMin",
    "TRESUsageOutMinNode",
    "TRESUsageOutMinTask",
    "TRESUsageOutTot",
    "UID",
    "User",
    "UserCPU",
    "WCKey",
    "WCKeyID",
    "WorkDir",
];

/// The fields the reader uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    JobId,
    JobIdRaw,
    Partition,
    Qos,
    Submit,
    Start,
    End,
    Elapsed,
    ElapsedRaw,
    Timelimit,
    TimelimitRaw,
    State,
    NNodes,
    AllocTres,
    ReqTres,
    Restarts,
    SegmentSize,
    SubmitLine,
}

impl Field {
    const ALL: [(Field, &'static str); 18] = [
        (Field::JobId, "JobID"),
        (Field::JobIdRaw, "JobIDRaw"),
        (Field::Partition, "Partition"),
        (Field::Qos, "QOS"),
        (Field::Submit, "Submit"),
        (Field::Start, "Start"),
        (Field::End, "End"),
        (Field::Elapsed, "Elapsed"),
        (Field::ElapsedRaw, "ElapsedRaw"),
        (Field::Timelimit, "Timelimit"),
        (Field::TimelimitRaw, "TimelimitRaw"),
        (Field::State, "State"),
        (Field::NNodes, "NNodes"),
        (Field::AllocTres, "AllocTRES"),
        (Field::ReqTres, "ReqTRES"),
        (Field::Restarts, "Restarts"),
        (Field::SegmentSize, "SegmentSize"),
        (Field::SubmitLine, "SubmitLine"),
    ];

    pub fn name(self) -> &'static str {
        Field::ALL.iter().find(|f| f.0 == self).map_or("?", |f| f.1)
    }
}

/// The header line: which column holds which field.
#[derive(Debug, Clone)]
pub struct Header {
    pub columns: usize,
    index: HashMap<Field, usize>,
    /// `|` (`--parsable2`, `--parsable`) or what `--delimiter` set.
    delimiter: String,
    /// `--parsable` ends every line with the delimiter.
    trailing: bool,
    /// A submit line is free text and may hold the delimiter: as the last column it takes
    /// the rest.
    submit_line_last: bool,
}

impl Header {
    /// The header line of `sacct --parsable2`, `--parsable` or `--delimiter=D`: the
    /// delimiter is what separates the first field name from the second.
    pub fn parse(line: &str) -> Result<Header, String> {
        let first = line
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(line.len());
        let rest = &line[first..];
        let delimiter: String = rest
            .chars()
            .take_while(|c| !c.is_ascii_alphanumeric())
            .collect();
        if !rest.is_empty() && delimiter.bytes().all(|b| b == b' ') {
            return Err(
                "fixed-width sacct output, whose columns are cut at their width: export with --parsable2 (-P)"
                    .into(),
            );
        }
        let delimiter = if delimiter.is_empty() {
            "|".into()
        } else {
            delimiter
        };
        let trailing = line.ends_with(delimiter.as_str());
        let line = if trailing {
            &line[..line.len() - delimiter.len()]
        } else {
            line
        };
        let mut index = HashMap::new();
        let names: Vec<&str> = line.split(delimiter.as_str()).collect();
        for (i, name) in names.iter().enumerate() {
            let known = SACCT_FIELDS
                .iter()
                .find(|f| f.eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| {
                    format!(
                        "`{name}` is not a sacct field; the first line must be the header of `sacct --parsable2` (see `sacct --helpformat`)"
                    )
                })?;
            if let Some(&(field, _)) = Field::ALL.iter().find(|f| f.1 == *known) {
                if index.insert(field, i).is_some() {
                    return Err(format!("the field {known} is named twice"));
                }
            }
        }
        let header = Header {
            columns: names.len(),
            submit_line_last: index.get(&Field::SubmitLine) == Some(&(names.len() - 1)),
            index,
            delimiter,
            trailing,
        };
        header.require()?;
        if header.delimiter.contains(',')
            && (header.has(Field::AllocTres) || header.has(Field::ReqTres))
        {
            return Err(format!(
                "the delimiter `{}` also separates TRES items (AllocTRES, ReqTRES): export with --parsable2 or another --delimiter",
                header.delimiter
            ));
        }
        Ok(header)
    }

    fn require(&self) -> Result<(), String> {
        let any = |fs: &[Field]| fs.iter().any(|f| self.index.contains_key(f));
        let needs: [&[Field]; 6] = [
            &[Field::JobIdRaw, Field::JobId],
            &[Field::Submit],
            &[Field::Start],
            &[Field::End, Field::ElapsedRaw, Field::Elapsed],
            &[Field::TimelimitRaw, Field::Timelimit],
            &[Field::AllocTres, Field::ReqTres],
        ];
        let missing: Vec<String> = needs
            .iter()
            .filter(|fs| !any(fs))
            .map(|fs| fs.iter().map(|f| f.name()).collect::<Vec<_>>().join(" or "))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the export lacks {}; export with the --format of the README",
                missing.join(", ")
            ))
        }
    }

    pub fn has(&self, field: Field) -> bool {
        self.index.contains_key(&field)
    }

    /// Splits a data line into its columns; an error when it has too few or too many.
    pub fn split<'a>(&self, line: &'a str) -> Result<Vec<&'a str>, String> {
        let d = self.delimiter.as_str();
        let line = match line.strip_suffix(d) {
            Some(l) if self.trailing => l,
            _ => line,
        };
        let mut cells: Vec<&str> = line.split(d).collect();
        if cells.len() > self.columns && self.submit_line_last {
            let start: usize = cells[..self.columns - 1]
                .iter()
                .map(|c| c.len() + d.len())
                .sum();
            cells.truncate(self.columns - 1);
            cells.push(&line[start..]);
        }
        if cells.len() != self.columns {
            let why = if d == "|" {
                "a truncated or garbled line?".to_string()
            } else {
                format!("a truncated line, or the delimiter `{d}` inside a value?")
            };
            return Err(format!(
                "{} fields, but the header has {} ({why})",
                cells.len(),
                self.columns
            ));
        }
        Ok(cells)
    }

    pub fn get<'a>(&self, cells: &[&'a str], field: Field) -> Option<&'a str> {
        self.index.get(&field).map(|&i| cells[i])
    }
}

/// A timestamp in seconds: sacct's local time `2026-12-01T21:46:18` (read as if UTC: only
/// differences matter, and a daylight-saving change moves them by an hour at most), or epoch
/// seconds (`SLURM_TIME_FORMAT=%s`). `None` for `None`, `Unknown` and empty: never happened.
pub fn timestamp(s: &str) -> Result<Option<i64>, String> {
    let s = s.trim();
    if s.is_empty() || s == "None" || s == "Unknown" {
        return Ok(None);
    }
    if let Ok(n) = s.parse::<i64>() {
        return Ok(Some(n));
    }
    let t = humantime::parse_rfc3339_weak(s)
        .map_err(|_| format!("`{s}` is not a time (YYYY-MM-DDTHH:MM:SS or epoch seconds)"))?;
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => Ok(Some(d.as_secs() as i64)),
        Err(e) => Ok(Some(-(e.duration().as_secs() as i64))),
    }
}

/// A time limit as sacct prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Seconds(u64),
    /// `UNLIMITED`: backfill plans such a job as running a year (Slurm's `YEAR_SECONDS`).
    Unlimited,
    /// `Partition_Limit`: the partition's, which the export does not say.
    Partition,
}

/// `TimelimitRaw` (minutes) or `Timelimit` (`[D-]HH:MM:SS`, `MM:SS`).
pub fn limit(s: &str, raw: bool) -> Result<Limit, String> {
    match s.trim() {
        "UNLIMITED" | "INFINITE" => Ok(Limit::Unlimited),
        "Partition_Limit" => Ok(Limit::Partition),
        v if raw => v
            .parse::<u64>()
            .ok()
            .and_then(|m| m.checked_mul(60))
            .map(Limit::Seconds)
            .ok_or_else(|| {
                format!("TimelimitRaw `{v}` is not minutes, UNLIMITED or Partition_Limit")
            }),
        v => duration(v)
            .map(Limit::Seconds)
            .map_err(|e| format!("Timelimit {e}")),
    }
}

/// `ElapsedRaw` (seconds).
pub fn seconds(s: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{s}` is not whole seconds"))
}

/// sacct's `[D-][HH:]MM:SS[.mmm]` (Elapsed, Timelimit).
pub fn duration(s: &str) -> Result<u64, String> {
    let bad = || format!("`{s}` is not a duration ([D-]HH:MM:SS)");
    let s = s.trim();
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<u64>().map_err(|_| bad())?, r),
        None => (0, s),
    };
    let rest = rest.split('.').next().unwrap_or(rest);
    let parts: Vec<u64> = rest
        .split(':')
        .map(|p| {
            if p.is_empty() || p.len() > 9 {
                Err(bad())
            } else {
                p.parse::<u64>().map_err(|_| bad())
            }
        })
        .collect::<Result<_, _>>()?;
    let (h, m, sec) = match parts[..] {
        [h, m, s] => (h, m, s),
        [m, s] => (0, m, s),
        _ => return Err(bad()),
    };
    if m >= 60 || sec >= 60 {
        return Err(bad());
    }
    days.checked_mul(86_400)
        .and_then(|d| d.checked_add(h * 3600 + m * 60 + sec))
        .ok_or_else(bad)
}

/// The GPUs in a TRES string (`billing=144,cpu=144,gres/gpu=4,mem=800000M,node=1`): the
/// `gres/gpu` count, else the sum of typed `gres/gpu:TYPE` counts; `None` when it names no
/// GPU. Every item must be `name=count`. Unlike a job's request (`demand::gpus_in_tres`),
/// accounting lists the total and each type side by side, so they must not be added up.
pub fn tres_gpus(s: &str) -> Result<Option<u64>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let mut gpus = Vec::new();
    for item in s.split(',') {
        let bad = || format!("TRES `{s}`: `{item}` is not name=count");
        let (name, value) = item.split_once('=').ok_or_else(bad)?;
        let digits = value.trim_end_matches(['K', 'M', 'G', 'T', 'P', 'E']);
        let numeric = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && digits.bytes().filter(|&b| b == b'.').count() <= 1;
        let name_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/_:.-".contains(&b));
        if !numeric || !name_ok || value.len() - digits.len() > 1 {
            return Err(bad());
        }
        if name == "gres/gpu" || name.starts_with("gres/gpu:") {
            let n: u64 = value
                .parse()
                .map_err(|_| format!("TRES `{s}`: {name} `{value}` is not a whole number"))?;
            gpus.push((name, n));
        }
    }
    Ok(gpu_count(gpus))
}

/// The GPUs of a job's TRES items `(name, count)`, named as in a TRES string (`gres/gpu`,
/// `gres/gpu:h100`): the `gres/gpu` total, else the sum of the typed counts (accounting lists
/// the total and each type side by side). `None` when none names a GPU. The text and the
/// JSON exports both count with it.
pub fn gpu_count<'a>(items: impl IntoIterator<Item = (&'a str, u64)>) -> Option<u64> {
    let (mut total, mut typed) = (None, None::<u64>);
    for (name, n) in items {
        if name == "gres/gpu" {
            total = Some(n);
        } else if name.starts_with("gres/gpu:") {
            typed = Some(typed.unwrap_or(0).saturating_add(n));
        }
    }
    total.or(typed)
}

/// What a `JobID` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    Job,
    /// `123_4`: one task of an array, a job of its own.
    ArrayTask,
    /// `123_[5-10]`: array tasks that never started.
    ArrayPending,
    /// `123+0`: one component of a heterogeneous job, placed as a job of its own.
    HetComponent,
    /// `123.batch`, `123.0`: a step (the export lacks `--allocations`).
    Step,
}

pub fn job_kind(id: &str) -> Result<JobKind, String> {
    let id = id.trim();
    let bad = || format!("`{id}` is not a job id");
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (job, step) = match id.split_once('.') {
        Some((j, s)) if !s.is_empty() => (j, true),
        Some(_) => return Err(bad()),
        None => (id, false),
    };
    let kind = if let Some((base, task)) = job.split_once('_') {
        if !digits(base) {
            return Err(bad());
        }
        if digits(task) {
            JobKind::ArrayTask
        } else if task.starts_with('[') && task.ends_with(']') {
            JobKind::ArrayPending
        } else {
            return Err(bad());
        }
    } else if let Some((base, comp)) = job.split_once('+') {
        if !digits(base) || !digits(comp) {
            return Err(bad());
        }
        JobKind::HetComponent
    } else if digits(job) {
        JobKind::Job
    } else {
        return Err(bad());
    };
    Ok(if step { JobKind::Step } else { kind })
}

/// What a submit line (`SubmitLine`) says about the job's shape. Options in the batch
/// script's `#SBATCH` lines are not in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubmitLine {
    /// `--segment=K` (24.11's accounting has no `SegmentSize` field).
    pub segment: Option<u64>,
    /// Sized by GPUs with the node count left to Slurm: `--gpus`/`-G` or `--gpus-per-task`
    /// (with `-n`) without `-N`/`--nodes`.
    pub by_gpus: bool,
}

impl SubmitLine {
    pub fn parse(line: &str) -> SubmitLine {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let value = |i: usize, long: &str| -> Option<&str> {
            let t = tokens[i];
            t.strip_prefix(&format!("{long}="))
                .or_else(|| (t == long).then(|| tokens.get(i + 1).copied()).flatten())
        };
        let mut out = SubmitLine::default();
        let (mut nodes, mut gpus) = (false, false);
        for (i, t) in tokens.iter().enumerate() {
            if let Some(k) = value(i, "--segment") {
                out.segment = k.parse().ok().filter(|&k| k > 0);
            }
            nodes |= *t == "--nodes" || t.starts_with("--nodes=") || t.starts_with("-N");
            gpus |= ["--gpus", "--gpus-per-task"]
                .iter()
                .any(|o| *t == *o || t.starts_with(&format!("{o}=")))
                || t.starts_with("-G");
        }
        out.by_gpus = gpus && !nodes;
        out
    }
}
