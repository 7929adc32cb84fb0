//! The JSON reader on real `scontrol show job --json` output of Slurm 24.11.5 and 26.05.5
//! (tests/fixtures/scontrol-job/, README there), held against the `scontrol -o show job` text
//! `nvl72 status` read before, captured at the same moment.

use std::path::Path;

use super::*;
use crate::status::compute;
use nvl72_engine::config::Config;
use nvl72_engine::idle::Cause;
use nvl72_engine::testkit::uniform;

const SERIES: [&str; 2] = ["24.11", "26.05"];

fn fixture(series: &str, when: &str, ext: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/scontrol-job")
        .join(format!("{series}-{when}.{ext}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixtures' lab: two racks, gb001..gb018 and gb019..gb036.
fn lab_config() -> Config {
    let mut config = uniform(2, 18).config().clone();
    for (r, rack) in config.racks.iter_mut().enumerate() {
        rack.nodes = (1..=18).map(|i| format!("gb{:03}", r * 18 + i)).collect();
    }
    config
}

fn job(live: &Live, id: u32) -> &PendingJob {
    live.pending
        .iter()
        .find(|j| j.id == id)
        .unwrap_or_else(|| panic!("job {id} is not pending: {:?}", live.pending))
}

fn ids(live: &Live) -> Vec<u32> {
    live.pending.iter().map(|j| j.id).collect()
}

/// The reader `nvl72 status` used before, on `scontrol -o show job` (`Key=Value` words, the
/// last of a key winning), kept as the reference for honest jobs.
mod text {
    use std::collections::BTreeMap;

    use super::super::{Live, PendingJob, TrayState};
    use nvl72_engine::demand::{gpus_in_tres, JobShape};
    use nvl72_engine::hostlist;

    pub fn parse(sinfo: &str, jobs: &str) -> Live {
        let Live { mut trays, .. } = super::parse(sinfo, r#"{"jobs": []}"#).unwrap();
        let mut pending = Vec::new();
        for line in jobs.lines() {
            let fields: BTreeMap<String, String> = line
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
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
                "PENDING" => {
                    let number =
                        |k: &str| get(k).split('-').next().unwrap_or("").parse::<u32>().ok();
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
                    pending.push(PendingJob {
                        id,
                        min_nodes: number("NumNodes").unwrap_or(1).max(1) as usize,
                        segment: number("Segment").filter(|&s| s > 0).map(|s| s as usize),
                        demand: shape.demand(),
                        reason: get("Reason").to_string(),
                    });
                }
                _ => {}
            }
        }
        Live {
            trays,
            pending,
            ..Live::default()
        }
    }
}

/// Honest jobs (tests/fixtures/scontrol-job/<series>-jobs.txt, 1 to 11) give the rows the
/// text gave, in both releases, but for two fields the text reader got wrong: job 10's
/// `-N 2,4` (`NumNodes=2,4`, read as 1 node; now its smallest size, 2) and, on 26.05, job
/// 7's `--segment=16` (printed `SegmentSize=16`, which the text reader, looking for
/// `Segment=`, never saw; 24.11 prints no segment, and its JSON has none either).
#[test]
fn honest_jobs_read_as_the_text_gave_them_in_both_releases() {
    let config = lab_config();
    for series in SERIES {
        let sinfo = fixture(series, "honest", "sinfo");
        let json = parse(&sinfo, &fixture(series, "honest", "json")).unwrap();
        let old = text::parse(&sinfo, &fixture(series, "honest", "txt"));

        assert_eq!(json.trays, old.trays, "{series}");
        assert_eq!(json.trays["gb001"], TrayState::Busy(vec![2]), "{series}");
        assert_eq!(json.trays["gb005"], TrayState::Busy(vec![4, 5]), "{series}");
        assert_eq!(json.trays["gb019"], TrayState::Busy(vec![3]), "{series}");
        assert_eq!(
            json.trays["gb036"],
            TrayState::Free,
            "{series}: job 1 completed"
        );
        assert_eq!(ids(&json), [6, 7, 8, 9, 10, 11], "{series}");

        let head = job(&json, 6);
        assert_eq!((head.min_nodes, head.segment), (18, None), "{series}");
        let reason = match series {
            "24.11" => "Resources",
            _ => "No_suitable_topology_unit_found",
        };
        assert_eq!(head.reason, reason);
        assert_eq!(
            job(&json, 8).demand.gpus,
            8,
            "{series}: 8 tasks x gres/gpu=1"
        );
        assert_eq!(job(&json, 9).demand.gpus, 12, "{series}: gres/gpu:12");
        assert_eq!(job(&json, 11).reason, "JobHeldUser", "{series}");

        let mut fixed = old.clone();
        let pos = |l: &Live, id: u32| l.pending.iter().position(|j| j.id == id).unwrap();
        let ten = pos(&fixed, 10);
        assert_eq!(fixed.pending[ten].min_nodes, 1, "{series}");
        fixed.pending[ten].min_nodes = 2;
        let seven = pos(&fixed, 7);
        assert_eq!(fixed.pending[seven].segment, None, "{series}");
        if series == "26.05" {
            fixed.pending[seven].segment = Some(16);
        }
        assert_eq!(json.pending, fixed.pending, "{series}");
        assert_eq!(
            compute(&config, &json),
            compute(&config, &fixed),
            "{series}"
        );
        let causes = |l: &Live| -> Vec<Option<Cause>> {
            compute(&config, l)
                .racks
                .iter()
                .map(|r| r.stranded_cause)
                .collect()
        };
        if series == "24.11" {
            // Job 10 waits for a dependency, so every figure status prints is the same.
            assert_eq!(compute(&config, &json), compute(&config, &old));
        } else {
            // The head (job 7, reason `Resources`) is now read with its segments of 16: the
            // free trays are remainders of it, no longer trays it needs as whole racks.
            assert_eq!(causes(&json), [Some(Cause::Remainder); 2]);
            assert_eq!(causes(&old), [Some(Cause::WholeRack); 2]);
        }
    }
}

/// Job 12 is named `forged JobId=1` and commented `forged JobState=RUNNING
/// NodeList=gb[001-018] NumNodes=1`; job 13 runs on gb[007-008] commented `forged
/// JobState=PENDING NumNodes=18 Reason=Resources TresPerJob=gres/gpu:72`. Read as JSON they are
/// what they are: the same rows with their name and comment made plain, the honest moment's
/// jobs plus a waiting -N 18 and two busy trays, and no fake waiting job in status.
#[test]
fn a_forged_name_and_comment_change_nothing() {
    let config = lab_config();
    for series in SERIES {
        let sinfo = fixture(series, "forged", "sinfo");
        let raw = fixture(series, "forged", "json");
        assert!(
            raw.contains("forged JobState=PENDING NumNodes=18"),
            "{series}"
        );
        let forged = parse(&sinfo, &raw).unwrap();

        let mut plain: serde_json::Value = serde_json::from_str(&raw).unwrap();
        for j in plain["jobs"].as_array_mut().unwrap() {
            j["name"] = "wrap".into();
            j["comment"] = "".into();
        }
        let plain = parse(&sinfo, &plain.to_string()).unwrap();
        assert_eq!(forged.trays, plain.trays, "{series}");
        assert_eq!(forged.pending, plain.pending, "{series}");

        let honest = parse(
            &fixture(series, "honest", "sinfo"),
            &fixture(series, "honest", "json"),
        )
        .unwrap();
        let mut expected = honest.trays.clone();
        for n in ["gb007", "gb008"] {
            assert_eq!(expected[n], TrayState::Free, "{series}");
            expected.insert(n.into(), TrayState::Busy(vec![13]));
        }
        assert_eq!(forged.trays, expected, "{series}");
        assert_eq!(ids(&forged), [6, 7, 8, 9, 10, 11, 12], "{series}");
        // The reasons of the waiting jobs are the scheduler's of each moment.
        let asks = |l: &Live| -> Vec<(u32, usize, Option<usize>, nvl72_engine::demand::Demand)> {
            l.pending
                .iter()
                .map(|j| (j.id, j.min_nodes, j.segment, j.demand.clone()))
                .collect()
        };
        assert_eq!(asks(&forged)[..6], asks(&honest)[..], "{series}");
        let twelve = job(&forged, 12);
        assert_eq!((twelve.min_nodes, twelve.demand.gpus), (18, 0), "{series}");
        assert_eq!(twelve.reason, "Priority", "{series}");

        let st = compute(&config, &forged);
        assert!(st.legend.iter().any(|&(_, id)| id == 13), "{series}");
        assert!(st.legend.iter().all(|&(_, id)| id != 1), "{series}");
        assert!(
            st.waiting_for_topology.iter().all(|j| j.id != 13),
            "{series}"
        );
    }
}

/// The same capture through the old text reader: job 13 becomes a waiting 18-tray job of 72
/// GPUs, job 12 disappears from the waiting jobs and job 1 (completed) runs on the busy
/// trays of gb[001-018]. This is what the JSON reader removes.
#[test]
fn the_text_reader_was_fooled_by_the_same_capture() {
    let config = lab_config();
    for series in SERIES {
        let sinfo = fixture(series, "forged", "sinfo");
        let old = text::parse(&sinfo, &fixture(series, "forged", "txt"));
        let fake = job(&old, 13);
        assert_eq!((fake.min_nodes, fake.demand.gpus), (18, 72), "{series}");
        assert_eq!(fake.reason, "Resources", "{series}");
        assert!(!ids(&old).contains(&12), "{series}");
        assert_eq!(old.trays["gb007"], TrayState::Busy(vec![1]), "{series}");
        assert!(compute(&config, &old)
            .waiting_for_topology
            .iter()
            .any(|j| j.id == 13));
    }
}

#[test]
fn parses_sinfo_and_scontrol_json() {
    let sinfo = "gb001|allocated\ngb002|mixed\ngb003|idle\ngb004|drained\ngb005|down*\n\
                 gb006|idle+drain\ngb007|completing\ngb008|draining\ngb009|planned\n\
                 gb010|reserved\n";
    let n = |v: u32| format!(r#"{{"set": true, "infinite": false, "number": {v}}}"#);
    let jobs = format!(
        r#"{{"jobs": [
        {{"job_id": 5, "name": "wrap", "job_state": ["RUNNING"], "nodes": "gb[001-002]",
          "node_count": {two}}},
        {{"job_id": 6, "job_state": ["RUNNING"], "nodes": "gb002"}},
        {{"job_id": 9, "job_state": ["PENDING"], "state_reason": "Resources", "nodes": "",
          "node_count": {one}, "max_nodes": {one}, "cpus": {eight}, "tasks": {eight},
          "tres_per_task": "cpu=1,gres/gpu=1", "tres_per_job": ""}},
        {{"job_id": 10, "job_state": ["PENDING"], "state_reason": "Priority",
          "node_count": {twelve}, "cpus": {twelve}, "segment_size": 4}},
        {{"job_id": 11, "job_state": ["COMPLETED"], "nodes": "gb003"}}
        ], "meta": {{}}}}"#,
        one = n(1),
        two = n(2),
        eight = n(8),
        twelve = n(12),
    );
    let l = parse(sinfo, &jobs).unwrap();
    assert_eq!(l.trays["gb001"], TrayState::Busy(vec![5]));
    assert_eq!(l.trays["gb002"], TrayState::Busy(vec![5, 6]));
    assert_eq!(l.trays["gb003"], TrayState::Free);
    for n in ["gb004", "gb006", "gb008"] {
        assert_eq!(l.trays[n], TrayState::Drained, "{n}");
    }
    assert_eq!(l.trays["gb005"], TrayState::Down);
    assert_eq!(l.trays["gb007"], TrayState::Busy(vec![]));
    assert_eq!(l.trays["gb009"], TrayState::Held);
    assert_eq!(l.trays["gb010"], TrayState::Held);
    assert_eq!(l.pending.len(), 2);
    assert_eq!((l.pending[0].min_nodes, l.pending[0].demand.gpus), (1, 8));
    assert_eq!(
        (l.pending[1].min_nodes, l.pending[1].segment),
        (12, Some(4))
    );
}

/// A job's state is the one scontrol shows (`job_state_string`: the first of its flags
/// scontrol names, else the base state), so a job counts as running or waiting exactly when
/// the text said so.
#[test]
fn job_state_as_scontrol_shows_it() {
    let shown = |s: &[&str]| shown_state(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    assert_eq!(shown(&["RUNNING"]), "RUNNING");
    assert_eq!(shown(&["COMPLETED", "COMPLETING"]), "COMPLETING");
    assert_eq!(shown(&["RUNNING", "CONFIGURING"]), "CONFIGURING");
    assert_eq!(shown(&["PENDING", "REQUEUED"]), "REQUEUED");
    // Flags scontrol does not name leave the base state.
    assert_eq!(shown(&["RUNNING", "POWER_UP_NODE"]), "RUNNING");
    assert_eq!(shown(&["PENDING", "LAUNCH_FAILED"]), "PENDING");
    assert_eq!(shown(&[]), "?");

    let sinfo = "gb001|completing\ngb002|allocated\ngb003|allocated\n";
    let jobs = r#"{"jobs": [
        {"job_id": 1, "job_state": ["COMPLETED", "COMPLETING"], "nodes": "gb001"},
        {"job_id": 2, "job_state": ["RUNNING", "CONFIGURING"], "nodes": "gb002"},
        {"job_id": 3, "job_state": "RUNNING", "nodes": "gb003"},
        {"job_id": 4, "job_state": ["PENDING", "REQUEUED"]},
        {"job_id": 5, "job_state": "PENDING"}
    ]}"#;
    let l = parse(sinfo, jobs).unwrap();
    assert_eq!(l.trays["gb001"], TrayState::Busy(vec![1]));
    assert_eq!(l.trays["gb002"], TrayState::Busy(vec![]));
    assert_eq!(l.trays["gb003"], TrayState::Busy(vec![3]));
    assert_eq!(ids(&l), [5]);
}

/// Counts unset (`NO_VAL`), infinite, plain or missing; `-N` ranges, sizes and a smaller
/// maximum; the reason's description; `null` strings.
#[test]
fn counts_sizes_and_reasons_in_every_form() {
    let jobs = r#"{"jobs": [
        {"job_id": 1, "job_state": ["PENDING"], "node_count": 4, "max_nodes": 8,
         "tasks": {"set": false, "infinite": false, "number": 0},
         "cpus": {"set": true, "infinite": true, "number": 0},
         "tres_per_job": "gres/gpu:16", "tres_per_task": null, "state_reason": "Resources",
         "state_description": null},
        {"job_id": 2, "job_state": ["PENDING"], "node_count": 4, "max_nodes": 3,
         "state_reason": "Resources", "state_description": "ReqNodeNotAvail, Reserved for maintenance"},
        {"job_id": 3, "job_state": ["PENDING"], "node_count": 8, "job_size_str": ["4", "8"]},
        {"job_id": 4, "job_state": ["PENDING"], "node_count": 8, "job_size_str": "2-8:2,6"},
        {"job_id": 5, "job_state": ["PENDING"], "segment_size": 0},
        {"job_id": 0, "job_state": ["PENDING"]}
    ]}"#;
    let l = parse("", jobs).unwrap();
    assert_eq!(ids(&l), [1, 2, 3, 4, 5]);
    let one = job(&l, 1);
    assert_eq!(one.min_nodes, 4);
    assert_eq!((one.demand.gpus, one.demand.cpus), (16, 1));
    assert_eq!(one.reason, "Resources");
    let two = job(&l, 2);
    assert_eq!(two.min_nodes, 3);
    assert_eq!(two.reason, "ReqNodeNotAvail,_Reserved_for_maintenance");
    assert_eq!(job(&l, 3).min_nodes, 4);
    assert_eq!(job(&l, 4).min_nodes, 2);
    let five = job(&l, 5);
    assert_eq!((five.min_nodes, five.segment), (1, None));

    assert!(parse("", "JobId=1 JobState=PENDING").is_err());
    assert!(parse("", r#"{"errors": []}"#).is_err());
}

/// `nvl72 check`'s view of the same jobs: those that hold trays, with every tray.
#[test]
fn held_jobs_are_the_running_ones_with_their_trays() {
    for series in SERIES {
        let held = held_jobs_in(&fixture(series, "honest", "json")).unwrap();
        let job2 = held.iter().find(|j| j.id == 2).expect("job 2 runs");
        assert_eq!(job2.trays, ["gb001", "gb002", "gb003", "gb004"], "{series}");
        let ids: Vec<u32> = held.iter().map(|j| j.id).collect();
        assert!(!ids.contains(&1) && !ids.contains(&6), "{series}: {ids:?}");
    }
}
