//! Reads the live state with Slurm's client commands, as an admin on a login node would:
//! `sinfo` for tray states and `scontrol show job --json` for running and waiting jobs.
//!
//! Jobs are read as JSON, never from `scontrol`'s `Key=Value` text: a job's name, comment,
//! wckey and other user text are printed there unquoted, so a comment such as
//! `x JobState=PENDING NumNodes=18` would fake a field. In JSON every field is its own value.
//!
//! The fields read, with the text field each replaces (Slurm 24.11's data_parser v0.0.42 and
//! 26.05's v0.0.45 name them alike; the numbers are `{"set", "infinite", "number"}` objects,
//! plain numbers are accepted too):
//!
//! | JSON | text | use |
//! |---|---|---|
//! | `job_id` | `JobId` | the job |
//! | `job_state` (a list: base state and flags; a string in older parsers) | `JobState` | `shown_state` |
//! | `nodes` | `NodeList` | a running job's trays |
//! | `node_count`, `max_nodes`, `job_size_str` | `NumNodes` | a waiting job's node count |
//! | `cpus` | `NumCPUs` | demand: CPUs |
//! | `tasks` | `NumTasks` | demand: tasks |
//! | `tres_per_job`, `tres_per_task` | `TresPerJob`, `TresPerTask` | demand: GPUs |
//! | `state_description`, else `state_reason` | `Reason` | why it waits |
//! | `segment_size` (26.05; 24.11's job records have none) | `SegmentSize` (26.05) | `--segment` |
//! | `start_time` | `StartTime` | what preempting a running job loses |

use std::collections::BTreeMap;
use std::process::Command;

use serde::{Deserialize, Deserializer};

use super::{Live, PendingJob, RunningJob, TrayState};
use nvl72_engine::demand::{gpus_in_tres, JobShape};
use nvl72_engine::hostlist;

#[cfg(test)]
mod tests;

/// Runs the commands and parses their output.
pub fn live() -> Result<Live, String> {
    let sinfo = run("sinfo", &["-h", "-N", "-o", "%N|%T"])?;
    let jobs = run("scontrol", &["show", "job", "--json"]).map_err(|e| {
        format!("{e} (nvl72 status reads jobs as JSON: Slurm needs its serializer/json plugin)")
    })?;
    let mut live = parse(&sinfo, &jobs).map_err(|e| format!("scontrol show job --json: {e}"))?;
    live.now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    Ok(live)
}

/// The running jobs that hold trays (running, suspended or completing), for `nvl72 check`;
/// `None` when slurmctld cannot be asked.
pub fn held_jobs() -> Option<Vec<nvl72_engine::held_trays::HeldJob>> {
    let jobs = run("scontrol", &["show", "job", "--json"]).ok()?;
    held_jobs_in(&jobs).ok()
}

/// `scontrol show job --json` output into the jobs that hold trays.
pub fn held_jobs_in(jobs: &str) -> Result<Vec<nvl72_engine::held_trays::HeldJob>, String> {
    let jobs: Jobs = serde_json::from_str(jobs).map_err(|e| e.to_string())?;
    Ok(jobs
        .jobs
        .iter()
        .filter(|j| j.job_id != 0 && holds_trays(j))
        .map(|j| nvl72_engine::held_trays::HeldJob {
            id: j.job_id,
            trays: hostlist::expand(&j.nodes).unwrap_or_default(),
        })
        .collect())
}

/// Why slurmctld's plugin switched rack placement off, from `scontrol show topology`'s first
/// line; `None` when placement is on or scontrol cannot say.
pub fn placement_off() -> Option<String> {
    let out = run("scontrol", &["show", "topology"]).ok()?;
    nvl72_engine::topoinfo::placement_off_in(&out)
}

fn run(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {cmd}: {e} (are Slurm's client commands on PATH?)"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `sinfo -h -N -o "%N|%T"` and `scontrol show job --json` output into [`Live`].
pub fn parse(sinfo: &str, jobs: &str) -> Result<Live, String> {
    let mut trays: BTreeMap<String, TrayState> = BTreeMap::new();
    for line in sinfo.lines() {
        let Some((node, state)) = line.trim().split_once('|') else {
            continue;
        };
        trays.insert(node.to_string(), tray_state(state));
    }
    let jobs: Jobs = serde_json::from_str(jobs).map_err(|e| e.to_string())?;
    let mut pending = Vec::new();
    let mut running = BTreeMap::new();
    for job in &jobs.jobs {
        // scontrol skips a federation's duplicated sibling record (job id 0).
        let id = job.job_id;
        if id == 0 {
            continue;
        }
        if holds_trays(job) {
            let nodes = hostlist::expand(&job.nodes).unwrap_or_default();
            running.insert(
                id,
                RunningJob {
                    started: job.start_time.0.map(i64::from),
                    trays: nodes.len(),
                },
            );
            for node in nodes {
                if let Some(TrayState::Busy(ids)) = trays.get_mut(&node) {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
        } else if shown_state(&job.job_state.0) == "PENDING" {
            pending.push(pending_job(job));
        }
    }
    Ok(Live {
        trays,
        pending,
        running,
        now: 0,
    })
}

/// A running, completing or suspended job: one that holds its trays.
fn holds_trays(job: &Job) -> bool {
    matches!(
        shown_state(&job.job_state.0),
        "RUNNING" | "COMPLETING" | "SUSPENDED"
    )
}

fn pending_job(job: &Job) -> PendingJob {
    let shape = JobShape {
        gpus_per_job: gpus_in_tres(&job.tres_per_job),
        gpus_per_task: gpus_in_tres(&job.tres_per_task),
        num_tasks: job.tasks.0.unwrap_or(0),
        ntasks_per_node: 0,
        min_cpus: job.cpus.0.unwrap_or(1),
    };
    PendingJob {
        id: job.job_id,
        min_nodes: min_nodes(job).max(1) as usize,
        segment: job.segment_size.0.filter(|&s| s > 0).map(|s| s as usize),
        demand: shape.demand(),
        reason: reason(job),
    }
}

/// The fewest nodes a waiting job starts on: the smallest of `-N 2,4,8`'s sizes, else
/// `node_count` (`-N`'s minimum), lowered to `max_nodes` when that is set and smaller (as
/// `scontrol` prints `NumNodes`).
fn min_nodes(job: &Job) -> u32 {
    let sizes = job
        .job_size_str
        .0
        .iter()
        .filter_map(|s| first_number(s))
        .min();
    if let Some(smallest) = sizes {
        return smallest;
    }
    let min = job.node_count.0.unwrap_or(1);
    match job.max_nodes.0 {
        Some(max) if max > 0 && max < min => max,
        _ => min,
    }
}

/// `2` of `2`, `2-8` or `2-8:2`.
fn first_number(size: &str) -> Option<u32> {
    size.split(['-', ':']).next()?.trim().parse().ok()
}

/// `Reason` as scontrol prints it: the description when there is one (its white space made
/// `_`), else the reason code's name.
fn reason(job: &Job) -> String {
    if job.state_description.is_empty() {
        job.state_reason.clone()
    } else {
        job.state_description
            .chars()
            .map(|c| if c.is_whitespace() { '_' } else { c })
            .collect()
    }
}

/// The one state `scontrol` shows for a job (`job_state_string`): the first of these flags
/// the job has, else its base state. A job that runs while its nodes boot (`CONFIGURING`) or
/// a waiting job being requeued (`REQUEUED`) is therefore neither running nor waiting here,
/// as before.
fn shown_state(states: &[String]) -> &'static str {
    const FLAGS: [&str; 13] = [
        "COMPLETING",
        "STAGE_OUT",
        "CONFIGURING",
        "EXPEDITING",
        "RESIZING",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "SPECIAL_EXIT",
        "STOPPED",
        "REVOKED",
        "RESV_DEL_HOLD",
        "SIGNALING",
    ];
    const BASES: [&str; 12] = [
        "PENDING",
        "RUNNING",
        "SUSPENDED",
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    ];
    let has = |s: &str| states.iter().any(|x| x == s);
    FLAGS
        .into_iter()
        .chain(BASES)
        .find(|s| has(s))
        .unwrap_or("?")
}

/// `scontrol show job --json`: the job list (the rest is ignored).
#[derive(Deserialize)]
struct Jobs {
    jobs: Vec<Job>,
}

/// The fields of one job that `nvl72 status` reads (table in the module doc).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Job {
    job_id: u32,
    job_state: States,
    #[serde(deserialize_with = "text")]
    nodes: String,
    node_count: Number,
    max_nodes: Number,
    job_size_str: Sizes,
    cpus: Number,
    tasks: Number,
    #[serde(deserialize_with = "text")]
    tres_per_job: String,
    #[serde(deserialize_with = "text")]
    tres_per_task: String,
    #[serde(deserialize_with = "text")]
    state_reason: String,
    #[serde(deserialize_with = "text")]
    state_description: String,
    segment_size: Number,
    start_time: Number,
}

/// A string field; `null` is empty.
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// `job_state`: a list of names (data_parser v0.0.41 and later) or one name.
#[derive(Default)]
struct States(Vec<String>);

impl<'de> Deserialize<'de> for States {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            List(Vec<String>),
            One(String),
        }
        Ok(States(match Option::<Form>::deserialize(d)? {
            Some(Form::List(v)) => v,
            Some(Form::One(s)) => vec![s],
            None => Vec::new(),
        }))
    }
}

/// `job_size_str`: a list of sizes, or one comma-separated string.
#[derive(Default)]
struct Sizes(Vec<String>);

impl<'de> Deserialize<'de> for Sizes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let States(v) = States::deserialize(d)?;
        Ok(Sizes(
            v.iter()
                .flat_map(|s| s.split(','))
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
        ))
    }
}

/// A count: `{"set": true, "infinite": false, "number": 4}` or a plain number. Not set (Slurm's
/// `NO_VAL`) or infinite is `None`.
#[derive(Default)]
struct Number(Option<u32>);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct NoVal {
            #[serde(default = "yes")]
            set: bool,
            #[serde(default)]
            infinite: bool,
            #[serde(default)]
            number: Option<u64>,
        }
        fn yes() -> bool {
            true
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Plain(u64),
            NoVal(NoVal),
        }
        let n = match Option::<Form>::deserialize(d)? {
            Some(Form::Plain(n)) => Some(n),
            Some(Form::NoVal(v)) if v.set && !v.infinite => v.number,
            _ => None,
        };
        Ok(Number(n.and_then(|n| u32::try_from(n).ok())))
    }
}

/// A `%T` state: `idle`, `allocated`, `mixed`, `drained`, `down*`, `idle+drain`, ...
fn tray_state(state: &str) -> TrayState {
    let s = state.trim().to_ascii_lowercase();
    if s.contains("drain") {
        TrayState::Drained
    } else if s.starts_with("down") || s.starts_with("fail") || s.ends_with('*') {
        TrayState::Down
    } else if s.starts_with("idle") {
        TrayState::Free
    } else if s.starts_with("alloc") || s.starts_with("mix") || s.starts_with("comp") {
        TrayState::Busy(Vec::new())
    } else if s.starts_with("planned") || s.starts_with("reserved") || s.starts_with("blocked") {
        TrayState::Held
    } else {
        TrayState::Down
    }
}
