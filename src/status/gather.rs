//! Reads the live state with Slurm's client commands, as an admin on a login node would:
//! `sinfo` for tray states and `scontrol -o show job` for running and waiting jobs.

use std::collections::BTreeMap;
use std::process::Command;

use super::{Live, PendingJob, TrayState};
use crate::demand::{gpus_in_tres, JobShape};
use crate::hostlist;

/// Runs the commands and parses their output.
pub fn live() -> Result<Live, String> {
    let sinfo = run("sinfo", &["-h", "-N", "-o", "%N|%T"])?;
    let jobs = run("scontrol", &["-o", "show", "job"])?;
    Ok(parse(&sinfo, &jobs))
}

/// Why slurmctld's plugin switched rack placement off, from `scontrol show topology`'s first
/// line; `None` when placement is on or scontrol cannot say.
pub fn placement_off() -> Option<String> {
    let out = run("scontrol", &["show", "topology"]).ok()?;
    crate::topoinfo::placement_off_in(&out)
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

/// `sinfo -h -N -o "%N|%T"` and `scontrol -o show job` output into [`Live`].
pub fn parse(sinfo: &str, jobs: &str) -> Live {
    let mut trays: BTreeMap<String, TrayState> = BTreeMap::new();
    for line in sinfo.lines() {
        let Some((node, state)) = line.trim().split_once('|') else {
            continue;
        };
        trays.insert(node.to_string(), tray_state(state));
    }
    let mut pending = Vec::new();
    for line in jobs.lines() {
        let fields = fields(line);
        let get = |k: &str| fields.get(k).map(String::as_str).unwrap_or("");
        let Ok(id) = get("JobId").parse::<u32>() else {
            continue;
        };
        match get("JobState") {
            "RUNNING" | "COMPLETING" | "SUSPENDED" => {
                for node in hostlist::expand(get("NodeList")).unwrap_or_default() {
                    if let Some(TrayState::Busy(ids)) = trays.get_mut(&node) {
                        if !ids.contains(&id) {
                            ids.push(id);
                        }
                    }
                }
            }
            "PENDING" => pending.push(pending_job(id, &fields)),
            _ => {}
        }
    }
    Live { trays, pending }
}

fn pending_job(id: u32, fields: &BTreeMap<String, String>) -> PendingJob {
    let get = |k: &str| fields.get(k).map(String::as_str).unwrap_or("");
    let number = |k: &str| get(k).split('-').next().unwrap_or("").parse::<u32>().ok();
    let tres = |k: &str| match get(k) {
        "" | "(null)" | "N/A" => 0,
        t => gpus_in_tres(t),
    };
    let shape = JobShape {
        gpus_per_job: tres("TresPerJob"),
        gpus_per_task: tres("TresPerTask"),
        num_tasks: number("NumTasks").unwrap_or(0),
        ntasks_per_node: 0,
        min_cpus: number("NumCPUs").unwrap_or(1),
    };
    PendingJob {
        id,
        min_nodes: number("NumNodes").unwrap_or(1).max(1) as usize,
        segment: number("Segment").filter(|&s| s > 0).map(|s| s as usize),
        demand: shape.demand(),
        reason: get("Reason").to_string(),
    }
}

/// `Key=Value` pairs of one `scontrol -o` line (values without spaces; the rest is ignored).
/// Slurm 24.11 does not print a job's `--segment` there, so waiting segmented jobs are judged
/// by their node count.
fn fields(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
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
