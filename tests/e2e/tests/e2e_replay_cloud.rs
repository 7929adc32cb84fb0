//! `nvl72 replay --cloud` end to end: a small synthetic stream with tray failures, in one
//! real slurmctld (topology/nvl72) whose trays are Slurm cloud nodes without a slurmd
//! (lab-up.sh `CLOUD=1`), every job ended by the driver with `slurm_complete_job()`. What is
//! checked is read from Slurm's own records, not from the replay's report: slurmctld.log's
//! submit, start, `_job_complete` and `Requeuing` lines, and `scontrol show job`'s states.
//!
//! The series is the build's (24.11, or 26.05 for a 26.05 build; SLURM_PREFIX labs are
//! skipped: the replay runs Debian's Slurm only), in a lab of its own
//! (`/var/tmp/nvl72-cloudrep-test[-26.05]-nvl72`, built on first use) on the replay's second
//! port set (`--port-offset 1`, slurmctld 6858) in 24.11 and its third in 26.05 (6859), as the
//! test command runs both series at once; cloud trays listen on nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use nvl72_sim::replay::observe::parse_timestamp;
use serde_json::Value;

use lab::{expand, slurm_prefix};
use nvl72_e2e as lab;

/// The build's Slurm series, if the replay can run it.
fn series() -> Option<&'static str> {
    if cfg!(slurm_eval_action) {
        Some("26.05")
    } else if cfg!(slurm_ctx) {
        None
    } else {
        Some("24.11")
    }
}

/// Stops the lab however the test ends (the replay leaves it up with `--keep-labs`).
struct LabDown {
    repo: PathBuf,
    dir: String,
    series: &'static str,
}

impl LabDown {
    fn sl(&self, args: &[&str]) -> String {
        let out = Command::new(self.repo.join("scripts/sl"))
            .args(args)
            .env("LAB", &self.dir)
            .env("SLURM_SERIES", self.series)
            .output()
            .expect("scripts/sl runs");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for LabDown {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(self.repo.join("scripts/lab-down.sh"))
            .env("LAB", &self.dir)
            .env("SLURM_SERIES", self.series)
            .output();
    }
}

/// One job as slurmctld.log tells it: its starts (node lists), ends, requeues and cancels,
/// in order.
#[derive(Default, Debug)]
struct History {
    submitted: bool,
    /// `S` start (with its nodes), `E` end, `R` requeue, `K` scancel; Unix ms.
    events: Vec<(char, i64, Vec<String>)>,
}

fn histories(log: &str) -> BTreeMap<u32, History> {
    let mut jobs: BTreeMap<u32, History> = BTreeMap::new();
    let id = |s: &str| -> u32 {
        s[..s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len())]
            .parse()
            .unwrap()
    };
    for line in log.lines() {
        let Some((stamp, msg)) = line.split_once("] ") else {
            continue;
        };
        let Some(at) = parse_timestamp(stamp.trim_start_matches('[')) else {
            continue;
        };
        if let Some(r) = msg.strip_prefix("_slurm_rpc_submit_batch_job: JobId=") {
            jobs.entry(id(r)).or_default().submitted = true;
        } else if let Some(r) = msg.strip_prefix("sched: Allocate JobId=") {
            let nodes = r
                .split(' ')
                .find_map(|w| w.strip_prefix("NodeList="))
                .unwrap();
            let h = jobs.entry(id(r)).or_default();
            h.events.push(('S', at, expand(nodes)));
        } else if let Some(i) = msg.find("_start_job: ").and(msg.find("Started JobId=")) {
            let r = &msg[i + "Started JobId=".len()..];
            let nodes = r.split_once(" on ").unwrap().1.split(' ').next().unwrap();
            jobs.entry(id(r))
                .or_default()
                .events
                .push(('S', at, expand(nodes)));
        } else if let Some(r) = msg.strip_prefix("_job_complete: JobId=") {
            if r.ends_with(" done") {
                jobs.entry(id(r))
                    .or_default()
                    .events
                    .push(('E', at, vec![]));
            }
        } else if let Some(r) = msg.strip_prefix("Requeuing JobId=") {
            jobs.entry(id(r))
                .or_default()
                .events
                .push(('R', at, vec![]));
        } else if let Some(i) = msg.find("REQUEST_KILL_JOB JobId=") {
            let r = &msg[i + "REQUEST_KILL_JOB JobId=".len()..];
            jobs.entry(id(r))
                .or_default()
                .events
                .push(('K', at, vec![]));
        }
    }
    jobs
}

#[test]
fn a_cloud_replay_starts_and_ends_every_job_in_a_real_slurmctld_without_slurmd() {
    let Some(series) = series() else {
        eprintln!("skipped: nvl72 replay runs Debian's Slurm 24.11 or 26.05 only");
        return;
    };
    if slurm_prefix().is_some() {
        eprintln!("skipped: nvl72 replay does not run SLURM_PREFIX installations");
        return;
    }
    if lab::slurm_debs().is_some() {
        eprintln!("skipped: nvl72 replay runs Debian's Slurm packages, not SchedMD's (SLURM_DEBS)");
        return;
    }
    let repo = lab::repo();
    let (prefix, port_offset) = match series {
        "24.11" => ("/var/tmp/nvl72-cloudrep-test".to_string(), "1"),
        s => (format!("/var/tmp/nvl72-cloudrep-test-{s}"), "2"),
    };
    let out = std::env::temp_dir().join(format!("nvl72-cloudrep-test-{}", std::process::id()));
    let json = out.join("report.json");
    let lab = LabDown {
        repo: repo.clone(),
        dir: format!("{prefix}-nvl72"),
        series,
    };
    let mut cmd = Command::new(lab::nvl72());
    cmd.current_dir(&repo).args([
        "replay",
        "--cloud",
        "--series",
        series,
        "--topologies",
        "nvl72",
        "--workload",
        "synthetic",
        "--racks",
        "2",
        "--jobs",
        "30",
        "--load",
        "0.9",
        "--lambda",
        "0.05",
        "--mttr",
        "12",
        "--seed",
        "4",
        "--minutes",
        "0.4",
        "--drain",
        "1.2",
        "--lab-prefix",
        &prefix,
        "--port-offset",
        port_offset,
        "--keep-labs",
        "--quiet",
    ]);
    cmd.arg("--out").arg(&out).arg("--json").arg(&json);
    // A new lab copies the series' main lab's rootfs (lab-up.sh ROOTFS_FROM), which the test
    // command has built already: no second debootstrap on a new machine.
    cmd.env("ROOTFS_FROM", main_lab(series));
    match std::env::var_os("PACKAGE").filter(|p| !p.is_empty()) {
        Some(deb) => cmd.arg("--package").arg(deb),
        None => cmd.arg("--plugin").arg(repo.join(match series {
            "24.11" => "target/release/libtopology_nvl72.so",
            _ => "target/slurm-26-05/libtopology_nvl72.so",
        })),
    };
    let run = cmd.output().expect("nvl72 replay runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "nvl72 replay --cloud failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let log = std::fs::read_to_string(out.join("nvl72-slurmctld.log")).expect("the log is kept");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    check(&lab, &log, &report, &out);
    let _ = std::fs::remove_dir_all(&out);
}

fn check(lab: &LabDown, log: &str, report: &Value, out: &Path) {
    let where_ = || format!("(log and report in {})", out.display());
    // No tray ever came up: a registration would start the job for real.
    for never in ["Configuration for JobId=", "Resetting JobId="] {
        assert!(!log.contains(never), "`{never}` in the log {}", where_());
    }
    let jobs = histories(log);
    let submitted: Vec<u32> = jobs
        .iter()
        .filter(|(_, h)| h.submitted)
        .map(|(&id, _)| id)
        .collect();
    let streamed = report["workload"]["jobs"].as_u64().unwrap() as usize;
    assert_eq!(
        submitted.len(),
        streamed,
        "every job submitted {}",
        where_()
    );
    // Slurm's own states, for every submitted job (MinJobAge keeps them 300 s), and each
    // job's sleep in real ms (the stream's run time, compressed; jobs are named replay-<i>).
    let scale = report["scale"].as_f64().unwrap();
    let stream_job = |name: &str| -> (i64, Option<usize>) {
        let i: usize = name.strip_prefix("replay-").unwrap().parse().unwrap();
        let j = &report["stream"][i];
        let sleep = (j["runtime"].as_f64().unwrap() / scale).round() as i64;
        (sleep, j["segment"].as_u64().map(|s| s as usize))
    };
    let shown = lab.sl(&["scontrol", "-o", "show", "job"]);
    let states: BTreeMap<u32, (String, (i64, Option<usize>))> = shown
        .lines()
        .filter_map(|l| {
            let field = |k: &str| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .map(str::to_string)
            };
            Some((
                field("JobId=")?.parse().ok()?,
                (field("JobState=")?, stream_job(&field("JobName=")?)),
            ))
        })
        .collect();
    let mut ended = 0;
    let mut reused: BTreeMap<String, usize> = BTreeMap::new();
    for id in &submitted {
        let h = &jobs[id];
        let (state, (sleep, segment)) = states
            .get(id)
            .unwrap_or_else(|| panic!("scontrol knows no job {id}: {shown}"));
        let kinds: String = h.events.iter().map(|e| e.0).collect();
        let n = h.events.len();
        match state.as_str() {
            // Ended by the driver at its start + its sleep (a loaded host may be late).
            "COMPLETED" | "TIMEOUT" => {
                assert!(
                    kinds.ends_with("SE"),
                    "job {id} {state}: {h:?} {}",
                    where_()
                );
                let ran = h.events[n - 1].1 - h.events[n - 2].1;
                assert!(
                    (*sleep..*sleep + 5000).contains(&ran),
                    "job {id} ran {ran} ms for a sleep of {sleep} ms {}",
                    where_()
                );
                ended += 1;
            }
            // Left when the replay stopped and cancelled the rest: waiting, or running for
            // less than its sleep.
            "CANCELLED" => {
                assert!(kinds.ends_with('K'), "job {id}: {h:?}");
                if kinds.ends_with("SK") {
                    let ran = h.events[n - 1].1 - h.events[n - 2].1;
                    assert!(ran < sleep + 1000, "job {id} ran past its end: {h:?}");
                }
            }
            other => panic!("job {id} is {other}: {h:?} {}", where_()),
        }
        for (kind, _, nodes) in &h.events {
            if *kind != 'S' {
                continue;
            }
            // The plugin's promise: a job that fits a rack runs in one, and every --segment
            // piece of a job with segments.
            let racks = lab::per_rack(nodes);
            match segment {
                Some(s) => assert!(
                    racks.iter().all(|(_, n)| n % s == 0),
                    "job {id}'s segments of {s} split: {racks:?}"
                ),
                None if nodes.len() <= lab::TRAYS => {
                    assert_eq!(racks.len(), 1, "job {id} split over racks: {nodes:?}")
                }
                None => {}
            }
            for n in nodes {
                *reused.entry(n.clone()).or_default() += 1;
            }
        }
    }
    assert!(
        ended * 10 >= submitted.len() * 8,
        "only {ended} of {} jobs ended {}",
        submitted.len(),
        where_()
    );
    assert!(
        reused.values().any(|&c| c >= 3),
        "no tray ran three jobs: trays are not freed {}",
        where_()
    );
    // Failures reached Slurm: trays were drained, and a job on one was requeued and ran again.
    assert!(
        log.contains("state set to DRAIN"),
        "no tray drained {}",
        where_()
    );
    let again = jobs
        .values()
        .filter(|h| h.events.windows(2).any(|w| w[0].0 == 'R' && w[1].0 == 'S'))
        .count();
    assert!(again >= 1, "no requeued job ran again {}", where_());
    // The driver ended exactly the jobs whose end Slurm logged, and Slurm refused none.
    let ends = &report["cloud"]["ends"][0][1];
    assert_eq!(ends["failed"], 0, "{ends}");
    assert_eq!(ends["ended"].as_u64().unwrap() as usize, ended, "{ends}");
    let fid = &report["fidelity"][0][1];
    assert_eq!(fid["wrong_size_starts"], 0, "{fid}");
    assert_eq!(fid["unknown_nodes"], 0, "{fid}");
}

/// The series' main lab (scripts/lab-up.sh's default LAB), whose rootfs the test's lab copies.
fn main_lab(series: &str) -> &'static str {
    match series {
        "26.05" => "/var/tmp/nvl72-lab-26.05",
        _ => "/var/tmp/nvl72-lab",
    }
}
