//! End-to-end tests of what Slurm 26.05 added to the topology interface, against Debian's
//! slurmctld 26.05.5 (`SLURM_SERIES=26.05`, plugin built with `SLURM_PIN=26.05.5`): the
//! topology pending reason, each tray's rack in `scontrol show node`, one-tray jobs through
//! rack packing (`allow_one_node`), and one IMEX channel per NVLink domain (`jobinfo`).
//! Compiled for 25.05 and later (the build script's `slurm_ctx`); each test needs the series
//! that added what it checks: the rack in `scontrol show node` is 25.05's, the IMEX pieces
//! 25.11's (`slurm_jobinfo`), the pending reasons, one-tray packing and the topology.yaml test
//! 26.05's (`slurm_eval_action`; the last also needs a Slurm built with YAML support, which
//! the 25.05/25.11 builds of the SLURM_PREFIX labs so far lacked). On 25.05/25.11 they run in
//! a lab of a site's own installation (`SLURM_PREFIX`, docs/lab.md).
#![cfg(slurm_ctx)]

use nvl72_e2e as lab;

#[cfg(slurm_jobinfo)]
use lab::per_rack;
#[cfg(slurm_jobinfo)]
use lab::racks;
use lab::Lab;

/// One busy tray in every rack: 68 trays free, but no rack can hold 18.
#[cfg(slurm_eval_action)]
fn one_busy_tray_per_rack(lab: &Lab) {
    for tray in ["gb001", "gb019", "gb037", "gb055"] {
        lab.occupy(tray);
    }
}

#[cfg(slurm_eval_action)]
fn scontrol_reason(lab: &Lab, job: u32) -> String {
    let show = lab.run(&["scontrol", "show", "job", &job.to_string()]);
    show.split_whitespace()
        .find_map(|w| w.strip_prefix("Reason="))
        .unwrap_or_default()
        .to_string()
}

#[cfg(slurm_eval_action)]
#[test]
fn a_job_no_rack_can_hold_waits_for_a_topology_unit_not_for_resources() {
    let (lab, _g) = Lab::claim();
    one_busy_tray_per_rack(lab);
    // Without a topology plugin Slurm starts it at once over two racks.
    let rack_job = lab.submit(&["-N", "18", "--exclusive"]);
    lab.assert_stays_pending(rack_job);
    lab.wait_for("the topology reason", || {
        scontrol_reason(lab, rack_job) == "No_suitable_topology_unit_found"
    });
    assert_eq!(lab.reason(rack_job), "No suitable topology unit found");
    // A cluster without any free tray: the reason stays Slurm's own.
    lab.cancel_all();
    for rack in ["gb[001-018]", "gb[019-036]", "gb[037-054]", "gb[055-072]"] {
        lab.occupy(rack);
    }
    let one = lab.submit(&["-N", "1", "--exclusive"]);
    lab.assert_stays_pending(one);
    assert_eq!(lab.reason(one), "Resources");
}

#[cfg(slurm_eval_action)]
#[test]
fn a_segment_job_no_rack_can_hold_names_the_segment() {
    let (lab, _g) = Lab::claim();
    one_busy_tray_per_rack(lab);
    // Four segments of 18: every rack has room for 17 only.
    let job = lab.submit(&["-N", "36", "--segment=18", "--exclusive"]);
    lab.assert_stays_pending(job);
    lab.wait_for("the segment reason", || {
        scontrol_reason(lab, job).starts_with("No_suitable_topology_unit_found")
    });
    assert!(lab.reason(job).contains("segment"), "{}", lab.reason(job));
}

/// 26.11: `scontrol update` changes a pending job's segment size and spread flag, and no
/// plugin hook runs; the plugin reads both afresh at every evaluation. Racks 1 and 2 have four
/// free trays each: segments of 8 wait, segments of 4 then take both racks. Spreading more
/// segments than there are racks can never run: Slurm holds the job (`BadConstraints`) and
/// the plugin's log line says why, as with topology/block. Without a topology plugin the job
/// would start at once on any eight free trays.
#[cfg(slurm_segment_update)]
#[test]
fn segment_changes_of_a_pending_job_apply_at_its_next_evaluation() {
    let (lab, _g) = Lab::claim();
    for busy in ["gb[005-018]", "gb[023-036]", "gb[037-054]", "gb[055-072]"] {
        lab.occupy(busy);
    }
    let job = lab.submit(&["-H", "-N", "8", "--segment=2", "--exclusive"]);
    lab.update_job(job, "SegmentSize=8");
    lab.run(&["scontrol", "release", &job.to_string()]);
    lab.assert_stays_pending(job);
    lab.update_job(job, "SegmentSize=4");
    assert_eq!(per_rack(&lab.running_nodes(job)), vec![(1, 4), (2, 4)]);
    lab.cancel_all();
    let spread = lab.submit(&["-H", "-N", "16", "--segment=2", "--exclusive"]);
    let id = spread.to_string();
    lab.update_job(spread, "SpreadSegments=yes");
    lab.run(&["scontrol", "release", &id]);
    lab.wait_for("the job to be held as never runnable", || {
        lab.pending_reason(spread).as_deref() == Some("BadConstraints")
    });
    let why = format!("JobId={id}: 8 segments of 2, each in its own rack, but 4 racks hold 2");
    assert!(lab.log("slurmctld.log").contains(&why), "no line: {why}");
}

#[test]
fn show_node_names_each_trays_rack() {
    let (lab, _g) = Lab::claim();
    for (node, rack) in [("gb001", "rack1"), ("gb020", "rack2"), ("gb072", "rack4")] {
        let show = lab.run(&["scontrol", "show", "node", node]);
        let topology = show
            .split_whitespace()
            .find_map(|w| w.strip_prefix("Topology="))
            .unwrap_or_else(|| panic!("no Topology= for {node}: {show}"));
        assert_eq!(topology, format!("default:{rack}"), "{node}");
    }
    let cpu = lab.run(&["scontrol", "show", "node", "cpu01"]);
    assert!(!cpu.contains("Topology="), "{cpu}");
}

#[cfg(slurm_eval_action)]
#[test]
fn one_tray_jobs_pack_into_the_fullest_rack() {
    let (lab, _g) = Lab::claim();
    // rack3 is partly used: best fit puts one-tray jobs there; 26.05's one-node fast path
    // (first free tray in node order) would start at gb001.
    lab.occupy("gb[053-054]");
    let mut all = Vec::new();
    for _ in 0..4 {
        let job = lab.submit(&["-N", "1", "--exclusive", "--gres=gpu:4"]);
        all.extend(lab.running_nodes(job));
    }
    assert_eq!(
        racks(&all),
        vec![3],
        "one-tray jobs were scattered: {all:?}"
    );
}

/// `SWITCH: allocating channel N to JobId=J with node_list X` lines of one job.
#[cfg(slurm_jobinfo)]
fn channels(log: &str, job: u32) -> Vec<String> {
    let needle = format!("to JobId={job} with node_list ");
    let mut lists: Vec<String> = log
        .lines()
        .filter(|l| l.contains("allocating channel"))
        .filter_map(|l| l.split(&needle).nth(1))
        .map(|s| s.trim().to_string())
        .collect();
    lists.sort();
    lists
}

#[cfg(slurm_jobinfo)]
#[test]
fn every_nvlink_domain_of_a_job_gets_its_own_imex_channel() {
    let (lab, _g) = Lab::claim();
    // switch/nvidia_imex runs in slurmctld without NVIDIA's driver (slurmd only warns that it
    // has no IMEX device and sets nothing up); DebugFlags=Switch logs each channel, at
    // verbose (the 26.05 lab's level; 25.11 runs at info).
    let conf = "SwitchType=switch/nvidia_imex\nDebugFlags=HetJob,Switch\nSlurmctldDebug=verbose";
    lab.restart_with(&[("EXTRA_CONF", conf)]);
    let from = lab.ctld_log_len();
    lab.occupy("gb[001-012]");
    let net = "--network=unique-channel-per-segment";
    // 24 trays over two racks without --segment: one channel per rack part.
    let across = lab.submit(&["-N", "24", "--exclusive", net]);
    let across_nodes = lab.running_nodes(across);
    // Two segments of four: one channel each.
    let segments = lab.submit(&["-N", "8", "--segment=4", "--exclusive", net]);
    let segment_nodes = lab.running_nodes(segments);
    let log = lab.ctld_log_since(from);
    lab.cancel_all();
    lab.restart_with(&[]);

    let parts = per_rack(&across_nodes);
    assert_eq!(parts.len(), 2, "{across_nodes:?}");
    let got = channels(&log, across);
    assert_eq!(got.len(), 2, "one channel per rack: {got:?}\n{log}");
    for list in &got {
        let nodes = lab::expand(list);
        assert_eq!(racks(&nodes).len(), 1, "a channel spans racks: {list}");
    }
    let mut covered: Vec<String> = got.iter().flat_map(|l| lab::expand(l)).collect();
    covered.sort();
    assert_eq!(
        covered, across_nodes,
        "channels must cover the job exactly once"
    );

    let got = channels(&log, segments);
    assert_eq!(got.len(), 2, "one channel per segment: {got:?}");
    for list in &got {
        assert_eq!(lab::expand(list).len(), 4, "{list}");
    }
    assert_eq!(segment_nodes.len(), 8);
}

/// A job held by its `--switches` limit waits with reason `Resources`, as with topology/tree
/// (slurm.h has no reason for switches), where the same job without the option waits for a
/// rack with 26.05's topology reason; once its wait is over, each of its two rack pieces (6 +
/// 6) is an NVLink domain with an IMEX channel of its own. Ten free trays in each of racks
/// 1-3: no rack holds 12 trays, two racks do. Without a topology plugin the job without the
/// option runs at once, 10 + 2.
#[cfg(all(slurm_eval_action, slurm_jobinfo))]
#[test]
fn a_job_held_by_its_switch_limit_waits_for_resources_then_gets_a_channel_per_rack() {
    let (lab, _g) = Lab::claim();
    let conf = "SwitchType=switch/nvidia_imex\nDebugFlags=HetJob,Switch\nSlurmctldDebug=verbose";
    lab.restart_with(&[("EXTRA_CONF", conf)]);
    let from = lab.ctld_log_len();
    lab::ten_free_in_three_racks(lab);
    let net = "--network=unique-channel-per-segment";
    let plain = lab.submit(&["-N", "12", "--exclusive", net]);
    lab.wait_for("the topology reason", || {
        scontrol_reason(lab, plain) == "No_suitable_topology_unit_found"
    });
    lab.run(&["scancel", &plain.to_string()]);
    lab.wait_for("the job without --switches to end", || {
        lab.state(plain).is_empty()
    });
    let job = lab.submit(&["-N", "12", "--exclusive", "--switches=1@0:10", net]);
    lab.wait_for(&format!("a scheduling pass over job {job}"), || {
        lab.state(job) != "PENDING" || scontrol_reason(lab, job) != "None"
    });
    let (state, reason) = (lab.state(job), scontrol_reason(lab, job));
    let switches = lab.job_field(job, "Switches");
    lab.wait_up_to(90, &format!("job {job} RUNNING after its wait"), || {
        lab.nudge();
        lab.state(job) == "RUNNING"
    });
    let nodes = lab.running_nodes(job);
    let log = lab.ctld_log_since(from);
    lab.cancel_all();
    lab.restart_with(&[]);

    assert_eq!((state.as_str(), reason.as_str()), ("PENDING", "Resources"));
    assert_eq!(switches, "1@00:00:10");
    let pieces: Vec<usize> = per_rack(&nodes).iter().map(|p| p.1).collect();
    assert_eq!(pieces, [6, 6], "{:?}", per_rack(&nodes));
    let got = channels(&log, job);
    assert_eq!(got.len(), 2, "one channel per rack: {got:?}");
    let mut covered = Vec::new();
    for list in &got {
        let piece = lab::expand(list);
        assert_eq!(piece.len(), 6, "{list}");
        assert_eq!(racks(&piece).len(), 1, "a channel spans racks: {list}");
        covered.extend(piece);
    }
    covered.sort();
    assert_eq!(covered, nodes, "channels must cover the job exactly once");
}

/// Under `multi_rack = "balanced"` the equal pieces are the job's NVLink domains: 48 trays
/// get three IMEX channels of 16 trays, one per rack.
#[cfg(slurm_jobinfo)]
#[test]
fn balanced_pieces_get_one_imex_channel_each() {
    let (lab, _g) = Lab::claim();
    let conf = "SwitchType=switch/nvidia_imex\nDebugFlags=HetJob,Switch\nSlurmctldDebug=verbose";
    let policy = "multi_rack = \"balanced\"";
    lab.restart_with(&[("EXTRA_CONF", conf), ("POLICY", policy)]);
    let from = lab.ctld_log_len();
    let net = "--network=unique-channel-per-segment";
    let job = lab.submit(&["-N", "48", "--exclusive", net]);
    let nodes = lab.running_nodes(job);
    let log = lab.ctld_log_since(from);
    lab.cancel_all();
    lab.restart_with(&[]);

    let got = channels(&log, job);
    assert_eq!(got.len(), 3, "one channel per rack: {got:?}\n{log}");
    for list in &got {
        let piece = lab::expand(list);
        assert_eq!(piece.len(), 16, "{list}");
        assert_eq!(racks(&piece).len(), 1, "a channel spans racks: {list}");
    }
    assert_eq!(nodes.len(), 48);
}

/// slurmctld keeps each job's NVLink pieces in its job state (`jobinfo_pack`) and reads them
/// back on start (`jobinfo_unpack`); a wrong byte count there would lose the job and every
/// record after it.
#[cfg(slurm_jobinfo)]
#[test]
fn imex_pieces_are_saved_with_the_job_and_recovered_after_kill_9() {
    let (lab, _g) = Lab::claim();
    let conf = [(
        "EXTRA_CONF",
        "SwitchType=switch/nvidia_imex\nDebugFlags=HetJob,Switch",
    )];
    // From an empty state, so that the job state file holds only this test's jobs (finished
    // jobs of earlier tests stay in it for MinJobAge).
    lab.restart_with(&[conf[0], ("CLEAN", "1")]);
    lab.occupy("gb[001-012]");
    let net = "--network=unique-channel-per-segment";
    let across = lab.submit(&["-N", "24", "--exclusive", net]);
    let after_it = lab.submit(&["-N", "4", "--exclusive", net, "--segment=2"]);
    let jobs = [across, after_it];
    for job in jobs {
        lab.running_nodes(job);
    }
    let before = lab.jobs_with_nodes(&jobs);
    lab.wait_until_saved(&jobs, "imex-saved");
    // The pieces are in the file: each rack part of the 24-tray job is its own string
    // (Slurm's own node list of the job is the whole gb[013-036]).
    let text =
        String::from_utf8_lossy(&std::fs::read(lab.state_file("job_state")).unwrap()).into_owned();
    for piece in ["gb[013-018]", "gb[019-036]"] {
        assert!(text.contains(piece), "{piece} not saved with the job");
    }

    lab.kill_ctld();
    let from = lab.ctld_log_len();
    lab.restart_with(&conf);
    let log = lab.ctld_log_since(from);
    let after = lab.jobs_with_nodes(&jobs);
    lab.cancel_all();
    lab.restart_with(&[]);

    for job in jobs {
        assert!(
            log.contains(&format!("Recovered JobId={job} ")),
            "JobId={job} lost:\n{log}"
        );
    }
    assert!(!log.to_lowercase().contains("unpack error"), "{log}");
    assert_eq!(after, before, "running jobs changed across the restart");
}

/// Where each saved list of pieces starts in a job state file: its format word.
#[cfg(slurm_jobinfo)]
fn saved_pieces_at(bytes: &[u8]) -> Vec<usize> {
    let word = nvl72_engine::saved_pieces::FORMAT_1.to_be_bytes();
    (0..bytes.len().saturating_sub(3))
        .filter(|&i| bytes[i..i + 4] == word)
        .collect()
}

/// Saved pieces damaged on disk (a host list garbled, a length that runs past its text) are
/// refused with one log line each, inside Slurm's frame: slurmctld starts, recovers both jobs
/// and they keep running on their nodes, with Slurm's one IMEX channel per job.
#[cfg(slurm_jobinfo)]
#[test]
fn damaged_saved_pieces_are_refused_and_their_jobs_keep_running() {
    let (lab, _g) = Lab::claim();
    let conf = (
        "EXTRA_CONF",
        "SwitchType=switch/nvidia_imex\nDebugFlags=HetJob,Switch",
    );
    lab.restart_with(&[conf, ("CLEAN", "1")]);
    let net = "--network=unique-channel-per-segment";
    let jobs = [
        lab.submit(&["-N", "24", "--exclusive", net]),
        lab.submit(&["-N", "4", "--exclusive", net, "--segment=2"]),
    ];
    for job in jobs {
        lab.running_nodes(job);
    }
    let before = lab.jobs_with_nodes(&jobs);
    lab.wait_until_saved(&jobs, "damaged");
    lab.kill_ctld();
    let path = lab.state_file("job_state");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = saved_pieces_at(&bytes);
    assert_eq!(at.len(), 2, "two saved lists of pieces in job_state");
    // The first: its text's first two bytes ("gb") become "[[".
    bytes[at[0] + 8] = b'[';
    bytes[at[0] + 9] = b'[';
    // The second: its text's length one more than the bytes Slurm framed.
    let len = u32::from_be_bytes(bytes[at[1] + 4..at[1] + 8].try_into().unwrap());
    bytes[at[1] + 4..at[1] + 8].copy_from_slice(&(len + 1).to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();

    let from = lab.ctld_log_len();
    lab.restart_with(&[conf]);
    let log = lab.ctld_log_since(from);
    let after = lab.jobs_with_nodes(&jobs);
    lab.cancel_all();
    lab.restart_with(&[]);

    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("saved NVLink pieces of a job refused"))
        .collect();
    assert_eq!(refused.len(), 2, "one line per damaged job:\n{log}");
    assert!(
        refused.iter().any(|l| l.contains("piece 1: ")),
        "{refused:?}"
    );
    assert!(
        refused.iter().any(|l| l.contains("truncated")),
        "{refused:?}"
    );
    for job in jobs {
        assert!(
            log.contains(&format!("Recovered JobId={job} ")),
            "JobId={job} lost:\n{log}"
        );
    }
    assert_eq!(after, before, "the jobs must keep running on their nodes");
}

#[cfg(slurm_eval_action)]
#[test]
fn a_topology_yaml_takes_over_and_nvl72_check_says_why() {
    let (lab, _g) = Lab::claim();
    let yaml = lab.etc("topology.yaml");
    std::fs::write(
        &yaml,
        "- topology: default\n  cluster_default: true\n  flat: true\n",
    )
    .unwrap();
    // Any configuration change makes lab-up.sh restart the daemons, which then read the file.
    lab.restart_with(&[("EXTRA_CONF", "# topology.yaml test")]);
    let log = lab.log("slurmctld.log");
    let since_start = &log[log.rfind(" started on cluster").unwrap_or(0)..];
    let topo = lab.sl(&["scontrol", "show", "topology"]);
    let check = lab.sl(&["nvl72", "check"]);
    std::fs::remove_file(&yaml).unwrap();
    lab.restart_with(&[]);

    // Slurm built its topology from the file and never loaded topology/nvl72.
    assert!(
        !since_start.contains("topology/nvl72: 4 racks"),
        "{since_start}"
    );
    assert!(!String::from_utf8_lossy(&topo.stdout).contains("RackName="));
    // `nvl72 check` names the file and the fix, and fails.
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(!check.status.success(), "{report}");
    assert!(
        report.contains(
            "/etc/slurm/topology.yaml: error: Slurm reads this file instead of TopologyPlugin="
        ),
        "{report}"
    );
    // Without the file the plugin is back in charge.
    let load = lab.current_run("slurmctld.log", "topology/nvl72: 4 racks");
    assert!(
        !load.is_empty(),
        "plugin not loaded again after removing topology.yaml"
    );
}
