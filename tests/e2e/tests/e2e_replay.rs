//! `nvl72 replay` end to end: a small synthetic stream, compressed, submitted to three real
//! slurmctlds 24.11.5 at once (topology/nvl72 from the package under test, topology/block,
//! and no topology plugin), measured from their logs. Split jobs pay the slowdown model
//! (`--slowdown default`): each job script sleeps its base time × the slowdown of the nodes
//! Slurm gave it, and usable occupancy is measured alike. The replay labs are Debian trixie
//! chroots of their own (`/var/tmp/nvl72-replay-test-*`, built on first use), so the test
//! is compiled for 24.11 builds only.
#![cfg(not(slurm_ctx))]

use std::path::Path;
use std::process::Command;

use nvl72_e2e as lab;
use serde_json::Value;

fn policy<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["policies"]
        .as_array()
        .and_then(|ps| {
            ps.iter()
                .find(|p| p["label"] == name || (p["label"].is_null() && p["policy"] == name))
        })
        .unwrap_or_else(|| panic!("no report `{name}` in {report:#}"))
}

fn share(p: &Value, key: &str) -> f64 {
    p[key]["share"]
        .as_f64()
        .unwrap_or_else(|| panic!("{key}: {p:#}"))
}

#[test]
fn a_compressed_stream_runs_in_three_real_slurmctlds_and_is_measured_like_the_simulator() {
    let repo = lab::repo();
    let out = std::env::temp_dir().join(format!("nvl72-replay-test-{}", std::process::id()));
    let json = out.join("report.json");
    let mut cmd = Command::new(lab::nvl72());
    cmd.current_dir(&repo).args([
        "replay",
        "--workload",
        "synthetic",
        "--racks",
        "2",
        "--jobs",
        "40",
        "--load",
        "0.9",
        "--lambda",
        "0.05",
        "--mttr",
        "12",
        "--minutes",
        "1.5",
        "--drain",
        "0.5",
        "--slowdown",
        "default",
        "--lab-prefix",
        "/var/tmp/nvl72-replay-test",
        "--port-offset",
        "1",
        "--quiet",
    ]);
    cmd.arg("--out")
        .arg(&out)
        .arg("--json")
        .arg(&json)
        .arg("--plot")
        .arg(out.join("replay.svg"));
    // A new lab copies the 24.11 main lab's rootfs (lab-up.sh ROOTFS_FROM), which the test
    // command has built already: no three debootstraps on a new machine.
    cmd.env("ROOTFS_FROM", "/var/tmp/nvl72-lab");
    match std::env::var_os("PACKAGE").filter(|p| !p.is_empty()) {
        Some(deb) => cmd.arg("--package").arg(deb),
        None => cmd
            .arg("--plugin")
            .arg(repo.join("target/release/libtopology_nvl72.so")),
    };
    let run = cmd.output().expect("nvl72 replay runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "nvl72 replay failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
            .expect("JSON parses");

    let jobs = report["workload"]["jobs"].as_u64().unwrap();
    assert!(jobs >= 30, "{jobs} jobs");
    assert!(
        report["tray_events"].as_u64().unwrap() > 0,
        "the stream has tray failures"
    );
    for topo in ["nvl72", "block", "none"] {
        let real = policy(&report, &format!("slurm {topo}"));
        // Slurm ran the stream: most jobs completed before the stop.
        assert!(
            real["completed"].as_u64().unwrap() * 10 >= jobs * 8,
            "{topo}: {real:#}"
        );
        // Slurm placed every start on exactly the trays asked for, on lab trays.
        let fid = report["fidelity"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f[0] == topo)
            .unwrap();
        assert_eq!(fid[1]["wrong_size_starts"], 0, "{topo}: {fid}");
        assert_eq!(fid[1]["unknown_nodes"], 0, "{topo}: {fid}");
        assert!(
            fid[1]["submit_late_mean_ms"].as_f64().unwrap() < 1000.0,
            "{topo}: {fid}"
        );
    }
    let nvl72 = policy(&report, "slurm nvl72");
    let none = policy(&report, "slurm none");
    // The plugin's promise, read from the real slurmctld: every job that fits a rack and
    // every --segment piece in one rack. Without a topology plugin Slurm splits some.
    assert_eq!(share(nvl72, "small_jobs_in_one_rack"), 1.0, "{nvl72:#}");
    assert_eq!(share(nvl72, "segments_in_one_rack"), 1.0, "{nvl72:#}");
    assert!(
        share(none, "small_jobs_in_one_rack") < 1.0 || share(none, "segments_in_one_rack") < 1.0,
        "Slurm without a topology plugin kept everything in one rack; the stream proves nothing: {none:#}"
    );
    // Failures reached Slurm: trays were drained and jobs on them requeued.
    assert!(nvl72["tray_failures"].as_u64().unwrap() > 0, "{nvl72:#}");
    // The real run and the simulator's prediction (1 s tick) measure the same thing.
    let predicted = policy(&report, "nvl72");
    let (r, p) = (
        nvl72["occupancy_while_waiting"].as_f64().unwrap(),
        predicted["occupancy_while_waiting"].as_f64().unwrap(),
    );
    assert!((r - p).abs() < 0.15, "real {r} vs simulated {p}");
    assert!(stdout.contains("ranking, real Slurm:"), "{stdout}");
    // Splits were priced, in the real runs as in the prediction.
    assert_eq!(
        report["sim"]["slowdown"]["variant"], "default",
        "{:#}",
        report["sim"]
    );
    assert!(
        stdout.contains("USABLE GPU occupancy while jobs wait"),
        "{stdout}"
    );
    for topo in ["nvl72", "block", "none"] {
        let real = policy(&report, &format!("slurm {topo}"));
        let usable = real["usable_occupancy_while_waiting"].as_f64().unwrap();
        let busy = real["occupancy_while_waiting"].as_f64().unwrap();
        assert!(
            usable <= busy + 1e-12,
            "{topo}: usable {usable} > occupancy {busy}"
        );
    }
    let svg = std::fs::read_to_string(out.join("replay.svg")).unwrap();
    assert!(
        svg.contains("slurm nvl72") && svg.contains("stroke-dasharray"),
        "{svg}"
    );
    the_report_predicts_again_as_the_replay_did(&report, &json, &out);
    split_runs_slept_their_stretched_time(&report, &out);
    let _ = std::fs::remove_dir_all(&out);
}

/// Read from slurmctld's own log: every run Slurm split over racks that ended by itself
/// lasted at least its base sleep × the model's slowdown for its nodes (so the job script
/// really slept its stretched time), and Slurm without a topology plugin made such runs.
fn split_runs_slept_their_stretched_time(report: &Value, out: &Path) {
    use nvl72_sim::job::Job;
    use nvl72_sim::replay::observe::{parse_log, What};
    use nvl72_sim::replay::stretch::factor_of_nodes;
    use nvl72_sim::slowdown::Slowdown;
    let slowdown: Slowdown = serde_json::from_value(report["sim"]["slowdown"].clone()).unwrap();
    let stream: Vec<Job> = serde_json::from_value(report["stream"].clone()).unwrap();
    let scale = report["scale"].as_f64().unwrap();
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
    let observed: Value = serde_json::from_str(&read("none-observed.json")).unwrap();
    let job_of = |slurm_id: u32| {
        observed["slurm_ids"]
            .as_array()
            .unwrap()
            .iter()
            .position(|id| id.as_u64() == Some(u64::from(slurm_id)))
    };
    let mut started = std::collections::HashMap::new();
    let mut checked = Vec::new();
    for e in parse_log(&read("none-slurmctld.log")).unwrap() {
        let Some(job) = job_of(e.job) else { continue };
        match e.what {
            What::Started(nodes) => {
                started.insert(job, (e.at_ms, nodes));
            }
            What::Ended => {
                let Some((at, nodes)) = started.remove(&job) else {
                    continue;
                };
                let j = &stream[job];
                let f = factor_of_nodes(&slowdown, &nodes, j.segment, j.class, 18).unwrap();
                if f.s > 1.05 {
                    let base = j.runtime as f64 / scale;
                    let ran = (e.at_ms - at) as f64;
                    assert!(
                        ran >= 0.95 * base * f.s,
                        "job {job} on {nodes:?} (slowdown {:.2}) ran {ran} ms, base {base:.0} ms",
                        f.s
                    );
                    checked.push((job, f.s));
                }
            }
            _ => {
                started.remove(&job);
            }
        }
    }
    assert!(
        !checked.is_empty(),
        "Slurm without a topology plugin split no run that a slowdown prices"
    );
}

/// `nvl72 calibrate` reads the stream and settings the replay saved and, with the same
/// simulator, predicts exactly what the replay predicted, against the same real figures.
fn the_report_predicts_again_as_the_replay_did(report: &Value, json: &Path, out: &Path) {
    let summary = out.join("calibration.json");
    let run = Command::new(lab::nvl72())
        .arg("calibrate")
        .arg(json)
        .arg("--write")
        .arg(&summary)
        .output()
        .expect("nvl72 calibrate runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let plugins = c["replays"][0]["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 3, "{c:#}");
    for (p, (model, predicted)) in plugins.iter().zip(
        report["prediction"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x[0].as_str().unwrap(), x[1][0].as_f64().unwrap())),
    ) {
        assert_eq!(p["policy"], model, "{c:#}");
        let topo = if model == "naive" { "none" } else { model };
        let real = policy(report, &format!("slurm {topo}"))["occupancy_while_waiting"]
            .as_f64()
            .unwrap();
        assert_eq!(p["real"].as_f64().unwrap(), real, "{c:#}");
        assert!(
            (p["predicted"].as_f64().unwrap() - predicted).abs() < 1e-12,
            "calibrate predicted {} where the replay predicted {predicted}",
            p["predicted"]
        );
    }
    assert!(
        stdout.contains("with failures") || stdout.contains("| failures |"),
        "{stdout}"
    );
}
