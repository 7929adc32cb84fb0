//! A site's history, round trip: jobs of every sizing style run in the real lab with real
//! accounting (slurmdbd and MariaDB, `ACCOUNTING=1`), are exported with the README's `sacct`
//! command, and read back by `nvl72 simulate --workload sacct`; the stream must be what was
//! submitted (sizes, run times, limits, segments, requeues), and every job that did not run
//! on GPUs must be skipped for its reason. This tests the reader against real Slurm output,
//! not the plugin's placement: it passes the same under topology/block (the jobs fit).

use nvl72_e2e as lab;

use std::collections::HashMap;
use std::process::Command;

use lab::*;
use nvl72_sim::workload::sacct::{self, HistoryJob, SacctOptions, Skip};

/// The README's export command, for this lab's series (24.11's sacct has no SegmentSize).
fn export_command(since: &str) -> Vec<String> {
    let mut fields = "JobID,JobIDRaw,Partition,Submit,Start,End,ElapsedRaw,TimelimitRaw,State,NNodes,AllocTRES,ReqTRES,Restarts,SegmentSize,SubmitLine".to_string();
    if slurm_series() == "24.11" {
        fields = fields.replace(",SegmentSize", "");
    }
    [
        "sacct",
        "--allocations",
        "--parsable2",
        "--noconvert",
        "--allusers",
        "--duplicates",
        "--starttime",
        since,
        &format!("--format={fields}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// What sacct shows for a job: its state, once it has one.
fn sacct_state(lab: &Lab, job: u32) -> String {
    lab.run(&[
        "sacct",
        "-X",
        "-n",
        "-P",
        "-j",
        &job.to_string(),
        "-o",
        "State",
    ])
    .lines()
    .last()
    .unwrap_or("")
    .trim()
    .to_string()
}

fn ended(state: &str) -> bool {
    !state.is_empty() && !["PENDING", "RUNNING", "REQUEUED", "CONFIGURING"].contains(&state)
}

#[test]
fn a_history_exported_with_sacct_reads_back_as_the_stream_that_ran() {
    // Every lab-up this process runs has accounting on; the next test binary's lab-up turns
    // it off again (scripts/test.sh, docs/lab.md).
    std::env::set_var("ACCOUNTING", "1");
    let (lab, _guard) = Lab::claim();
    let clusters = lab.run(&["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"]);
    assert!(
        clusters.lines().any(|l| l.trim() == "lab"),
        "slurmdbd does not know the cluster `lab`: {clusters}"
    );
    let since = lab.run(&["date", "+%Y-%m-%dT%H:%M:%S"]).trim().to_string();

    let sb = |args: &[&str], script: &str| {
        lab.sbatch(args, script)
            .unwrap_or_else(|e| panic!("sbatch {args:?}: {e}"))
    };
    let by_nodes = sb(&["-N", "2", "--exclusive", "--time=3"], "sleep 2");
    let by_gpus = sb(&["--gpus=8", "--time=4"], "sleep 2");
    let segmented = sb(
        &["-N", "4", "--segment=2", "--gres=gpu:4", "--time=5"],
        "sleep 2",
    );
    let per_task = sb(&["-n", "8", "--gpus-per-task=1", "--time=2"], "sleep 1");
    let array = sb(
        &["--array=1-2", "-N", "1", "--gres=gpu:4", "--time=2"],
        "sleep 1",
    );
    let requeued = sb(
        &["--requeue", "-N", "1", "--gres=gpu:4", "--time=6"],
        "sleep 3",
    );
    let held = sb(&["--hold", "-N", "1", "--time=2"], "sleep 1");
    let cpu = sb(&["-p", "cpu", "-N", "1", "--time=2"], "sleep 1");
    lab.run(&["scancel", &held.to_string()]);
    lab.wait_for("the job to requeue running", || {
        lab.state(requeued) == "RUNNING"
    });
    lab.run(&["scontrol", "requeue", &requeued.to_string()]);
    // A requeued job may start again only after the credential lifetime (120 s); an admin
    // may let it start at once.
    lab.wait_for("the requeued job pending", || {
        lab.state(requeued) == "PENDING"
    });
    lab.run(&[
        "scontrol",
        "update",
        &format!("jobid={requeued}"),
        "StartTime=now",
    ]);
    let all = [by_nodes, by_gpus, segmented, per_task, requeued, held, cpu];
    lab.wait_up_to(300, "every job to end in accounting", || {
        all.iter().all(|&j| ended(&sacct_state(lab, j)))
            && lab.run(&["squeue", "-h", "-o", "%i"]).trim().is_empty()
    });

    let out = std::env::temp_dir().join(format!("nvl72-sacct-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let export = out.join("history.txt");
    let cmd = export_command(&since);
    let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let text = lab.run(&args);
    std::fs::write(&export, &text).unwrap();

    // The command line an admin runs: the summary line, the verdict and the saved stream.
    let stream = out.join("stream.json");
    let sim = Command::new(lab::nvl72())
        .current_dir(&lab.repo)
        .args(["simulate", "--workload", "sacct"])
        .arg(&export)
        .args(["--racks", "4", "--quiet", "--no-timing", "--save-stream"])
        .arg(&stream)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&sim.stderr);
    let stdout = String::from_utf8_lossy(&sim.stdout);
    assert!(sim.status.success(), "{stderr}\n{stdout}\n{text}");
    assert!(
        stdout.starts_with("verdict: on these 7 jobs (sacct) on 4 racks"),
        "{stdout}"
    );
    // The job cancelled while held was never eligible: sacct's --starttime window leaves it
    // out of the export (the reader's own test covers such records).
    assert!(
        stderr
            .contains("read 8 jobs (9 records), used 7, skipped 1: no GPUs in AllocTRES/ReqTRES 1"),
        "{stderr}\n{text}"
    );
    let saved: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&stream).unwrap()).unwrap();
    assert_eq!(saved.len(), 7);

    // Job by job, as the reader sees them.
    let history = sacct::read(&export, &SacctOptions::default()).unwrap();
    assert_eq!(history.skipped.get(&Skip::NoGpus), Some(&1));
    assert!(
        !text.lines().any(|l| l.starts_with(&format!("{held}|"))),
        "{text}"
    );
    let jobs: HashMap<&str, &HistoryJob> =
        history.jobs.iter().map(|j| (j.id.as_str(), j)).collect();
    let job = |id: u32| -> &HistoryJob {
        jobs.get(id.to_string().as_str())
            .unwrap_or_else(|| panic!("job {id} not read back: {}\n{text}", history.summary()))
    };
    let ran = |j: &HistoryJob, slept: u64| {
        assert!(
            (slept..=slept + 3).contains(&j.runtime_s),
            "job {} ran {} s, slept {slept} s\n{text}",
            j.id,
            j.runtime_s
        );
    };
    let j = job(by_nodes);
    assert_eq!(
        (j.trays, j.gpus, j.limit_s, j.segment, j.by_gpus),
        (2, 8, 180, None, false)
    );
    ran(j, 2);
    let j = job(by_gpus);
    assert_eq!(
        (j.trays, j.gpus, j.limit_s, j.by_gpus),
        (2, 8, 240, true),
        "{text}"
    );
    ran(j, 2);
    let j = job(segmented);
    assert_eq!(
        (j.trays, j.gpus, j.limit_s, j.segment),
        (4, 16, 300, Some(2)),
        "{text}"
    );
    ran(j, 2);
    let j = job(per_task);
    assert_eq!((j.gpus, j.limit_s, j.by_gpus), (8, 120, true), "{text}");
    assert!(j.trays >= 2, "8 GPUs on 4-GPU trays: {j:?}");
    ran(j, 1);
    // Array tasks are jobs of their own, under their own JobIDRaw.
    let tasks: Vec<&&HistoryJob> = jobs
        .values()
        .filter(|j| {
            ![by_nodes, by_gpus, segmented, per_task, requeued]
                .map(|i| i.to_string())
                .contains(&j.id)
        })
        .collect();
    assert_eq!(tasks.len(), 2, "array {array}: {tasks:?}\n{text}");
    assert!(tasks
        .iter()
        .all(|j| j.trays == 1 && j.gpus == 4 && j.limit_s == 120));
    // The requeued job: both runs, their run times summed.
    let j = job(requeued);
    assert_eq!((j.trays, j.attempts, j.limit_s), (1, 2, 360), "{text}");
    assert!(j.runtime_s >= 3, "{j:?}");

    // The same history in every other form sites export it in reads to the same jobs.
    for (form, flags) in other_forms(&since) {
        let mut args = vec!["sacct".to_string()];
        args.extend(flags);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let bytes = lab.run(&args).into_bytes();
        let read = sacct::parse(&bytes, &SacctOptions::default()).unwrap_or_else(|e| {
            panic!(
                "{form}: {e}
{}",
                String::from_utf8_lossy(&bytes)
            )
        });
        assert_eq!(read.jobs, history.jobs, "{form}: {}", read.summary());
        assert_eq!(read.skipped, history.skipped, "{form}: {}", read.summary());
        if form == "sacct --json" {
            // Packed as a site ships it, through stdin: the command line an admin runs.
            let packed = ruzstd::encoding::compress_to_vec(
                &bytes[..],
                ruzstd::encoding::CompressionLevel::Fastest,
            );
            let summary = simulate_stdin(lab, &packed);
            assert!(
                summary
                    .contains("nvl72: stdin: read 8 jobs (9 records, sacct --json, zstd), used 7"),
                "{summary}"
            );
        }
        if form == "with steps" {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut gz, &bytes).unwrap();
            let summary = simulate_stdin(lab, &gz.finish().unwrap());
            assert!(
                summary.contains("of them steps, gzip), used 7"),
                "{summary}"
            );
        }
    }
}

/// The export forms other than the README's: (name, sacct's arguments).
fn other_forms(since: &str) -> Vec<(&'static str, Vec<String>)> {
    let readme = export_command(since);
    let format = readme.last().unwrap().clone();
    let raw_to_formatted = format
        .replace("ElapsedRaw", "Elapsed")
        .replace("TimelimitRaw", "Timelimit");
    let window = ["--allusers", "--duplicates", "--starttime", since].map(String::from);
    let with = |flags: &[&str], format: &str| -> Vec<String> {
        let mut v: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        v.extend(window.iter().cloned());
        v.push(format.to_string());
        v
    };
    vec![
        ("with steps", with(&["--parsable2", "--noconvert"], &format)),
        ("-X -p", with(&["-X", "-p", "--noconvert"], &format)),
        (
            "--delimiter",
            with(&["-X", "-P", "--delimiter=;", "--noconvert"], &format),
        ),
        ("converted units", with(&["-X", "-P"], &format)),
        ("--units=G", with(&["-X", "-P", "--units=G"], &format)),
        ("Elapsed and Timelimit", with(&["-P"], &raw_to_formatted)),
        ("sacct --json", {
            let mut v = vec!["--json".to_string()];
            v.extend(window.iter().cloned());
            v
        }),
    ]
}

/// What `nvl72 simulate --workload sacct -` prints on stderr with `bytes` on stdin.
fn simulate_stdin(lab: &Lab, bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new(lab::nvl72())
        .current_dir(&lab.repo)
        .args([
            "simulate",
            "--workload",
            "sacct",
            "-",
            "--racks",
            "4",
            "--quiet",
            "--no-timing",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}
