//! End-to-end tests: real `sbatch` jobs on a real slurmctld 24.11.5 that loaded
//! topology_nvl72.so, placements read back with `squeue`. Needs root and the lab
//! (`scripts/test.sh` builds the plugin and runs these).

use nvl72_e2e as lab;

use lab::{per_rack, racks, ten_free_in_three_racks, Lab};

const TOPO_ERROR: &str = "Requested topology configuration is not available";

#[test]
fn plugin_is_loaded_by_slurmctld_slurmd_and_scontrol() {
    let (lab, _g) = Lab::claim();
    let config = lab.run(&["scontrol", "show", "config"]);
    assert!(config
        .lines()
        .any(|l| l.starts_with("TopologyPlugin") && l.contains("topology/nvl72")));
    let load_line = "topology/nvl72: 4 racks, 72 trays, 4 GPUs per tray";
    let ctld = lab.current_run("slurmctld.log", load_line);
    assert!(!ctld.is_empty(), "slurmctld.log lacks our load line");
    let slurmd = lab.current_run("slurmd-gb001.log", load_line);
    assert!(!slurmd.is_empty(), "slurmd-gb001.log lacks our load line");
    for (name, text) in [("slurmctld.log", &ctld), ("slurmd-gb001.log", &slurmd)] {
        let bad: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("topology") && (l.contains("error") || l.contains("fatal")))
            .filter(|l| !l.contains("reconfigure refused")) // the broken-config test's own lines
            .collect();
        assert!(bad.is_empty(), "{name} has topology errors: {bad:#?}");
    }
    let topo = lab.run(&["scontrol", "show", "topology"]);
    assert_eq!(topo.matches("RackName=").count(), 4, "{topo}");
    assert!(
        topo.contains("RackName=rack1 RackIndex=0 Nodes=gb[001-018] Trays=18 GPUs=72 FreeTrays=18"),
        "{topo}"
    );
}

#[test]
fn four_full_rack_jobs_get_one_whole_rack_each() {
    let (lab, _g) = Lab::claim();
    // With gb010 busy, Slurm's own consecutive-node choice for 18 nodes straddles racks.
    let blocker = lab.occupy("gb010");
    let mut placed: Vec<Vec<String>> = (0..3)
        .map(|_| lab.submit(&["-N", "18", "--exclusive"]))
        .map(|job| lab.running_nodes(job))
        .collect();
    let _ = lab.sl(&["scancel", &blocker.to_string()]);
    let last = lab.submit(&["-N", "18", "--exclusive"]);
    placed.push(lab.running_nodes(last));
    let mut seen = Vec::new();
    for nodes in placed {
        assert_eq!(nodes.len(), 18);
        let r = racks(&nodes);
        assert_eq!(r.len(), 1, "a job spans racks: {nodes:?}");
        seen.push(r[0]);
    }
    seen.sort_unstable();
    assert_eq!(seen, vec![1, 2, 3, 4]);
}

#[test]
fn small_jobs_fill_one_rack_before_opening_a_second() {
    let (lab, _g) = Lab::claim();
    // rack3 is partly used: best fit packs the small jobs there, where Slurm's own choice
    // would start at gb001.
    lab.occupy("gb[053-054]");
    let mut all = Vec::new();
    for n in ["4", "4", "4", "4"] {
        let job = lab.submit(&["-N", n, "--exclusive", "--gres=gpu:4"]);
        all.extend(lab.running_nodes(job));
    }
    assert_eq!(all.len(), 16);
    assert_eq!(racks(&all), vec![3], "small jobs were scattered: {all:?}");
}

/// A segmented job that fits one rack takes one by default (`one-rack-first`), where
/// topology/block puts each segment into the best-fitting hole; `best-fit` gives block's.
#[test]
fn segments_land_in_multiples_of_the_segment_size() {
    let (lab, _g) = Lab::claim();
    // rack1 has 9 free trays (gb[010-018]): Slurm's consecutive choice would take all 9
    // and 3 of rack2, splitting a segment.
    lab.occupy("gb[001-009]");
    let job = lab.submit(&["-N", "12", "--segment=4", "--exclusive"]);
    let nodes = lab.running_nodes(job);
    assert_eq!(nodes.len(), 12);
    assert_eq!(
        per_rack(&nodes),
        vec![(2, 12)],
        "one rack, not rack1's hole: {nodes:?}"
    );
    lab.cancel_all();
    lab.restart_with(&[("POLICY", "segment_placement = \"best-fit\"")]);
    lab.occupy("gb[001-009]");
    let job = lab.submit(&["-N", "12", "--segment=4", "--exclusive"]);
    let nodes = lab.running_nodes(job);
    for (rack, count) in per_rack(&nodes) {
        assert_eq!(count % 4, 0, "rack{rack} got {count} nodes: {nodes:?}");
    }
    // best fit: two segments in rack1's hole, the third in the next rack
    assert_eq!(per_rack(&nodes), vec![(1, 8), (2, 4)], "{nodes:?}");
}

#[test]
fn impossible_segments_are_rejected_at_submission() {
    let (lab, _g) = Lab::claim();
    // The last: six segments of 12, but each 18-tray rack has room for one.
    for args in [
        ["-N", "5", "--segment=2"],
        ["-N", "4", "--segment=20"],
        ["-N", "72", "--segment=12"],
    ] {
        if cfg!(slurm_eval_action) && args[1] == "4" {
            // From 26.05 block runs a job whose segment is larger than the job as if it had
            // none, and so does the plugin there: four trays of one rack.
            let job = lab.submit(&[&args[..], &["--exclusive"]].concat());
            assert_eq!(racks(&lab.running_nodes(job)).len(), 1);
            lab.cancel_all();
            continue;
        }
        let err = lab.sbatch(&args, "true").expect_err("must be rejected");
        // 26.05's sbatch refuses a node count above the segment size that it does not
        // divide before asking slurmctld; the other two still need the plugin.
        let by_client = lab::slurm_series() != "24.11"
            && err.contains("node count must be evenly divisible by segment size");
        assert!(err.contains(TOPO_ERROR) || by_client, "{args:?}: {err}");
    }
    let err = lab
        .sbatch(&["-N", "2", "-w", "gb001,gb040"], "true")
        .expect_err("spans racks");
    assert!(err.contains(TOPO_ERROR), "{err}");
}

#[test]
fn a_drained_tray_keeps_full_rack_jobs_out_but_fits_seventeen() {
    let (lab, _g) = Lab::claim();
    lab.drain("gb005");
    let full: Vec<u32> = (0..4)
        .map(|_| lab.submit(&["-N", "18", "--exclusive"]))
        .collect();
    for &job in &full[..3] {
        let nodes = lab.running_nodes(job);
        assert_ne!(
            racks(&nodes),
            vec![1],
            "an 18-node job landed in the degraded rack"
        );
        assert_eq!(racks(&nodes).len(), 1);
    }
    lab.assert_stays_pending(full[3]);
    let seventeen = lab.submit(&["-N", "17", "--exclusive"]);
    let nodes = lab.running_nodes(seventeen);
    assert_eq!(racks(&nodes), vec![1]);
    assert!(
        !nodes.iter().any(|n| n == "gb005"),
        "the drained tray was allocated"
    );
}

#[test]
fn thirty_six_nodes_take_two_whole_racks() {
    let (lab, _g) = Lab::claim();
    lab.occupy("gb001"); // Slurm's own choice would be gb[002-037], three racks
    let job = lab.submit(&["-N", "36", "--exclusive"]);
    let nodes = lab.running_nodes(job);
    assert_eq!(per_rack(&nodes), vec![(2, 18), (3, 18)], "{nodes:?}");
}

#[test]
fn twenty_nodes_in_segments_of_ten_split_ten_and_ten() {
    let (lab, _g) = Lab::claim();
    let job = lab.submit(&["-N", "20", "--segment=10", "--exclusive"]);
    let pieces = per_rack(&lab.running_nodes(job));
    assert_eq!(
        pieces.iter().map(|p| p.1).collect::<Vec<_>>(),
        vec![10, 10],
        "{pieces:?}"
    );
}

#[test]
fn jobs_outside_every_rack_still_run() {
    let (lab, _g) = Lab::claim();
    let job = lab.submit(&["-p", "cpu", "-N", "2"]);
    let nodes = lab.running_nodes(job);
    assert_eq!(nodes, vec!["cpu01".to_string(), "cpu02".to_string()]);
}

#[test]
fn shared_jobs_and_gpu_counts_are_honoured() {
    let (lab, _g) = Lab::claim();
    // Two non-exclusive 2-GPU jobs share the same two trays (the engine offers trays that
    // already run jobs first), and Slurm still charges 2 GPUs per tray to each job. Only
    // gb018 is free in rack1: Slurm's consecutive choice would take gb[018-019].
    lab.occupy("gb[001-017]");
    let a = lab.submit(&["-N", "2", "--gres=gpu:2", "-n", "2"]);
    let b = lab.submit(&["-N", "2", "--gres=gpu:2", "-n", "2"]);
    let (na, nb) = (lab.running_nodes(a), lab.running_nodes(b));
    assert_eq!(racks(&na), vec![2], "{na:?}");
    assert_eq!(na, nb, "shared jobs did not pack onto the same trays");
    // The GPUs Slurm charged (not the request echoed back): 2 per tray, different ones.
    let charged = |job: u32| {
        let detail = lab.run(&["scontrol", "show", "job", "-d", &job.to_string()]);
        let idx = detail
            .split_whitespace()
            .find_map(|w| w.strip_prefix("GRES=gpu:2(IDX:"))
            .unwrap_or_else(|| panic!("no per-node GRES=gpu:2 in {detail}"))
            .to_string();
        assert!(detail.contains("JOB_GRES=gpu:4"), "{detail}");
        idx
    };
    let (ga, gb) = (charged(a), charged(b));
    assert_ne!(ga, gb, "both jobs were given the same GPUs");
}

#[test]
fn topology_addr_inside_a_job_names_its_rack() {
    let (lab, _g) = Lab::claim();
    let job = lab
        .sbatch(
            &["-N", "1", "-w", "gb040"],
            "echo ADDR=$SLURM_TOPOLOGY_ADDR PATTERN=$SLURM_TOPOLOGY_ADDR_PATTERN",
        )
        .unwrap();
    lab.wait_for("job end", || lab.state(job).is_empty());
    let out = lab.job_output(job);
    assert!(out.contains("ADDR=rack3.gb040 PATTERN=rack.node"), "{out}");
}

#[test]
fn show_topology_reports_live_counts() {
    let (lab, _g) = Lab::claim();
    lab.drain("gb019");
    let job = lab.submit(&["-N", "4", "--exclusive", "-w", "gb020"]);
    lab.running_nodes(job);
    let rack2 = lab.show_topology("rack2");
    assert!(
        rack2.contains("FreeTrays=13 AllocatedTrays=4 UnavailableTrays=1"),
        "{rack2}"
    );
    assert!(rack2.contains("UnavailableNodes=gb019"), "{rack2}");
    let by_node = lab.show_topology("gb050");
    assert!(by_node.starts_with("RackName=rack3"), "{by_node}");
}

#[test]
fn reconfigure_with_a_broken_file_keeps_slurmctld_up() {
    let (lab, _g) = Lab::claim();
    let path = lab.etc("topology.toml");
    let good = std::fs::read_to_string(&path).unwrap();
    let broken = good.replacen("nodes = \"gb[019-036]\"", "nodes = \"gb[019-036\"", 1);
    assert_ne!(broken, good, "fixture did not change the file");
    std::fs::write(&path, &broken).unwrap();
    let before = lab.ctld_log_len();
    let _ = lab.sl(&["scontrol", "reconfigure"]);
    lab.wait_for("the refused reconfigure in the log", || {
        lab.ctld_log_since(before)
            .contains("Resuming operation, reconfigure failed")
    });
    std::fs::write(&path, &good).unwrap();
    let log = lab.ctld_log_since(before);
    assert!(
        log.contains("topology.toml:"),
        "error names no file/line: {log}"
    );
    assert!(log.contains("unbalanced brackets"), "{log}");
    lab.run(&["scontrol", "ping"]);
    // The controller kept its racks and still places jobs.
    lab.occupy("gb001");
    let job = lab.submit(&["-N", "18", "--exclusive"]);
    assert_eq!(racks(&lab.running_nodes(job)), vec![2]);
}

#[test]
fn restart_with_a_broken_file_keeps_the_last_good_racks() {
    let (lab, _g) = Lab::claim();
    let broken = std::env::temp_dir().join("nvl72-e2e-broken-topology.toml");
    let good = std::fs::read_to_string(lab.etc("topology.toml")).unwrap();
    std::fs::write(
        &broken,
        good.replacen("[[rack]]", "[[rack]]\nname_typo = 1", 1),
    )
    .unwrap();
    let before = lab.ctld_log_len();
    lab.restart_with(&[("TOPOLOGY_TOML", broken.to_str().unwrap())]);
    let log = lab.ctld_log_since(before);
    lab.restart_with(&[]);
    assert!(log.contains("invalid topology configuration"), "{log}");
    assert!(log.contains("unknown field `name_typo`"), "{log}");
    assert!(log.contains("topology_nvl72.last-good.toml"), "{log}");
    assert!(
        log.contains("topology/nvl72: 4 racks, 72 trays"),
        "racks not kept: {log}"
    );
}

#[test]
fn node_ranges_stay_inside_one_rack() {
    let (lab, _g) = Lab::claim();
    let filler = lab.submit(&["-N", "15", "--exclusive"]);
    let filler_racks = racks(&lab.running_nodes(filler));
    let job = lab.submit(&["-N", "2-6", "--exclusive"]);
    let nodes = lab.running_nodes(job);
    assert!((2..=6).contains(&nodes.len()), "{nodes:?}");
    assert_eq!(racks(&nodes).len(), 1, "{nodes:?}");
    assert_eq!(
        racks(&nodes),
        filler_racks,
        "best fit: the 3 trays next to the filler"
    );
}

#[test]
fn exclusive_topo_reserves_the_whole_rack() {
    let (lab, _g) = Lab::claim();
    let topo = lab.submit(&["-N", "2", "--exclusive=topo"]);
    let topo_rack = racks(&lab.running_nodes(topo));
    assert_eq!(topo_rack.len(), 1);
    // Best fit alone would put this job next to the first one; the rack is reserved instead.
    let other = lab.submit(&["-N", "4", "--exclusive"]);
    let other_racks = racks(&lab.running_nodes(other));
    assert_ne!(
        other_racks, topo_rack,
        "a job landed in a rack held with --exclusive=topo"
    );
}

#[test]
fn racks_come_from_a_block_topology_conf_without_topology_toml() {
    let (lab, _g) = Lab::claim();
    let before = lab.ctld_log_len();
    lab.restart_with(&[("TOPOLOGY_TOML", "none")]);
    let log = lab.ctld_log_since(before);
    lab.occupy("gb001");
    let job = lab.submit(&["-N", "18", "--exclusive"]);
    let placed = racks(&lab.running_nodes(job));
    let _ = lab.sl(&["scancel", "--user=root"]);
    lab.restart_with(&[]);
    assert!(
        log.contains("4 racks, 72 trays, 4 GPUs per tray from /etc/slurm/topology.conf"),
        "{log}"
    );
    assert_eq!(placed, vec![2]);
}

#[test]
fn jobs_larger_than_a_rack_wait_for_the_fewest_racks_and_fill_partly_used_ones() {
    let (lab, _g) = Lab::claim();
    let in_rack2 = lab.submit(&["-N", "2", "--exclusive", "-w", "gb019,gb020"]);
    lab.running_nodes(in_rack2);
    let in_rack4 = lab.submit(&["-N", "2", "--exclusive", "-w", "gb055,gb056"]);
    lab.running_nodes(in_rack4);
    // 32 trays: the two racks with 16 free, not a whole rack plus 14.
    let tight = lab.submit(&["-N", "32", "--exclusive"]);
    let nodes = lab.running_nodes(tight);
    assert_eq!(per_rack(&nodes), vec![(2, 16), (4, 16)], "{nodes:?}");
    let _ = lab.sl(&["scancel", &tight.to_string()]);
    // 54 trays need three whole racks; two are whole, so the job waits although 68 trays
    // are free (multi_rack = "fewest-racks")...
    let big = lab.submit(&["-N", "54", "--exclusive"]);
    lab.assert_stays_pending(big);
    // ...and starts on three whole racks as soon as rack2 is whole again.
    let _ = lab.sl(&["scancel", &in_rack2.to_string()]);
    let nodes = lab.running_nodes(big);
    assert_eq!(
        per_rack(&nodes),
        vec![(1, 18), (2, 18), (3, 18)],
        "{nodes:?}"
    );
}

/// `multi_rack = "balanced"`: a job larger than a rack gets the fewest racks in equal pieces.
/// Three racks with a drained tray each take 16 + 16 + 16 and the whole rack stays free
/// (`fewest-racks` would also take them, as 17 + 17 + 14); on empty racks it is 16 + 16 + 16
/// again (18 + 18 + 12 under `fewest-racks`, and in Slurm's own node order without the plugin),
/// and for the same job sized by GPUs (`--gpus=192`).
#[test]
fn balanced_splits_give_equal_pieces_and_use_degraded_racks() {
    let (lab, _g) = Lab::claim();
    lab.restart_with(&[("POLICY", "multi_rack = \"balanced\"")]);
    for tray in ["gb001", "gb019", "gb037"] {
        lab.drain(tray);
    }
    let degraded = lab.submit(&["-N", "48", "--exclusive"]);
    let on_degraded = lab.running_nodes(degraded);
    lab.cancel_all();
    let _ = lab.sl(&[
        "scontrol",
        "update",
        "nodename=gb[001,019,037]",
        "state=resume",
    ]);
    lab.wait_for("all nodes idle", || {
        lab.run(&["sinfo", "-h", "-N", "-o", "%t"])
            .lines()
            .all(|s| s.trim() == "idle")
    });
    let empty = lab.submit(&["-N", "48", "--exclusive"]);
    let on_empty = lab.running_nodes(empty);
    lab.cancel_all();
    // Sized by GPUs (Slurm picks the count): offered the balanced pieces first.
    let by_gpus = lab.submit(&["--gpus=192", "--exclusive"]);
    let on_gpus = lab.running_nodes(by_gpus);
    lab.cancel_all();
    lab.restart_with(&[]);
    assert_eq!(
        per_rack(&on_degraded),
        vec![(1, 16), (2, 16), (3, 16)],
        "{on_degraded:?}"
    );
    let pieces: Vec<usize> = per_rack(&on_empty).iter().map(|p| p.1).collect();
    assert_eq!(pieces, vec![16, 16, 16], "{on_empty:?}");
    let pieces: Vec<usize> = per_rack(&on_gpus).iter().map(|p| p.1).collect();
    assert_eq!(pieces, vec![16, 16, 16], "--gpus=192: {on_gpus:?}");
}

/// `piece_multiple = 8`: a job larger than a rack is cut only between groups of 8 trays (an
/// EP32 group never spans two racks), on the fewest racks that hold it that way: `-N 32` is
/// 16 + 16 and `-N 20` 16 + 4, the piece that is not a multiple last; two racks with a drained
/// tray each (17 free) give 16 + 16, where the tightest set would be 17 + 15; a job sized by
/// GPUs gets the same pieces. Where the default preference gives way, the rule does not:
/// with 4 trays of rack1 busy, the tightest pair for `-N 32` is rack1's 14 + 18 of rack2
/// (a cut after 14, what the preference and Slurm's node order give), and under the rule it
/// is 16 + 16 on racks 2 and 3.
#[test]
fn piece_multiple_cuts_jobs_only_between_groups() {
    let (lab, _g) = Lab::claim();
    lab.restart_with(&[("POLICY", "piece_multiple = 8")]);
    let mut got = Vec::new();
    for args in [&["-N", "32"][..], &["-N", "20"], &["--gpus=128"]] {
        let job = lab.submit(&[args, &["--exclusive"]].concat());
        got.push(per_rack(&lab.running_nodes(job)));
        lab.cancel_all();
    }
    for tray in ["gb001", "gb019"] {
        lab.drain(tray);
    }
    let degraded = lab.submit(&["-N", "32", "--exclusive"]);
    let on_degraded = per_rack(&lab.running_nodes(degraded));
    lab.cancel_all();
    let _ = lab.sl(&["scontrol", "update", "nodename=gb[001,019]", "state=resume"]);
    lab.occupy("gb[001-004]");
    let beside_busy = lab.submit(&["-N", "32", "--exclusive"]);
    let on_whole = per_rack(&lab.running_nodes(beside_busy));
    lab.cancel_all();
    lab.restart_with(&[]);
    let sizes = |pieces: &[(usize, usize)]| pieces.iter().map(|p| p.1).collect::<Vec<_>>();
    assert_eq!(sizes(&got[0]), [16, 16], "-N 32: {:?}", got[0]);
    assert_eq!(sizes(&got[1]), [16, 4], "-N 20: {:?}", got[1]);
    assert_eq!(sizes(&got[2]), [16, 16], "--gpus=128: {:?}", got[2]);
    assert_eq!(on_degraded, [(1, 16), (2, 16)], "drained gb001, gb019");
    assert_eq!(on_whole, [(2, 16), (3, 16)], "gb[001-004] busy");
}

/// `prefer_piece_multiple` (8 by default): on empty racks `-N 32` and `--gpus=128` are cut
/// 16 + 16 and `-N 40` 16 + 16 + 8, so no group of 8 trays spans two racks; `-N 36` needs
/// both racks whole and stays 18 + 18 (the preference never changes the racks). With the
/// preference off, and without the plugin (Slurm's node order), `-N 32` is 18 + 14.
#[test]
fn by_default_multi_rack_jobs_are_cut_between_groups_of_8_when_their_racks_allow() {
    let (lab, _g) = Lab::claim();
    let mut got = Vec::new();
    for args in [
        &["-N", "32"][..],
        &["--gpus=128"],
        &["-N", "40"],
        &["-N", "36"],
    ] {
        let job = lab.submit(&[args, &["--exclusive"]].concat());
        got.push(per_rack(&lab.running_nodes(job)));
        lab.cancel_all();
    }
    lab.restart_with(&[("POLICY", "prefer_piece_multiple = 1")]);
    let off = lab.submit(&["-N", "32", "--exclusive"]);
    let without = per_rack(&lab.running_nodes(off));
    lab.cancel_all();
    lab.restart_with(&[]);
    let sizes = |pieces: &[(usize, usize)]| pieces.iter().map(|p| p.1).collect::<Vec<_>>();
    assert_eq!(sizes(&got[0]), [16, 16], "-N 32: {:?}", got[0]);
    assert_eq!(sizes(&got[1]), [16, 16], "--gpus=128: {:?}", got[1]);
    assert_eq!(sizes(&got[2]), [16, 16, 8], "-N 40: {:?}", got[2]);
    assert_eq!(sizes(&got[3]), [18, 18], "-N 36: {:?}", got[3]);
    assert_eq!(sizes(&without), [18, 14], "preference off: {without:?}");
}

#[test]
fn multi_rack_start_now_spreads_instead_of_waiting() {
    let (lab, _g) = Lab::claim();
    let toml = std::env::temp_dir().join("nvl72-e2e-start-now.toml");
    let good = std::fs::read_to_string(lab.etc("topology.toml")).unwrap();
    let start_now = good.replacen(
        "gpus_per_tray = 4\n",
        "gpus_per_tray = 4\n[policy]\nmulti_rack = \"start-now\"\n",
        1,
    );
    assert_ne!(start_now, good, "fixture did not change the file");
    std::fs::write(&toml, start_now).unwrap();
    lab.restart_with(&[("TOPOLOGY_TOML", toml.to_str().unwrap())]);
    for pair in ["gb019,gb020", "gb055,gb056"] {
        let filler = lab.submit(&["-N", "2", "--exclusive", "-w", pair]);
        lab.running_nodes(filler);
    }
    // 18 + 16 + 18 + 16 free: 54 trays fit only over all four racks.
    let big = lab.submit(&["-N", "54", "--exclusive"]);
    let nodes = lab.running_nodes(big);
    let _ = lab.sl(&["scancel", "--user=root"]);
    lab.restart_with(&[]);
    assert_eq!(nodes.len(), 54);
    assert_eq!(racks(&nodes).len(), 4, "{:?}", per_rack(&nodes));
}

/// `[policy] flat_partitions = ["admin"]` with a partition `admin` over the same GPU nodes as
/// `gpu`: as with topology.yaml's `Topology=flat`, Slurm's generic selection places admin jobs.
fn with_flat_admin_partition(lab: &Lab) {
    lab.restart_with(&[
        (
            "EXTRA_CONF",
            "PartitionName=admin Nodes=gb[001-072] MaxTime=INFINITE State=UP",
        ),
        (
            "POLICY",
            "flat_partitions = [\"admin\"]\nlog_decisions = true",
        ),
    ]);
}

/// Two free trays in every rack (gb017-018, gb035-036, gb053-054, gb071-072).
fn two_free_per_rack(lab: &Lab) -> Vec<u32> {
    ["gb[001-016]", "gb[019-034]", "gb[037-052]", "gb[055-070]"]
        .into_iter()
        .map(|nodes| lab.occupy(nodes))
        .collect()
}

fn partition_of(lab: &Lab, job: u32) -> String {
    lab.run(&["squeue", "-h", "-j", &job.to_string(), "-o", "%P"])
        .trim()
        .to_string()
}

/// A flat partition bypasses the rack rule, the normal partition over the same trays keeps
/// it. Without the plugin the `gpu` job runs across racks at once.
#[test]
fn flat_partition_runs_across_racks_while_gpu_keeps_the_rack_rule() {
    let (lab, _g) = Lab::claim();
    with_flat_admin_partition(lab);
    let fillers = two_free_per_rack(lab);
    // First in the queue, so that the pending gpu job cannot hold it back.
    let admin = lab.submit(&["-p", "admin", "-N", "4", "--exclusive"]);
    let admin_nodes = lab.running_nodes(admin);
    let gpu = lab.submit(&["-p", "gpu", "-N", "4", "--exclusive"]);
    lab.assert_stays_pending(gpu);
    // A whole rack frees up: the gpu job starts there, inside one rack.
    lab.run(&["scancel", &fillers[3].to_string()]);
    let gpu_nodes = lab.running_nodes(gpu);
    let flat_line = lab
        .log("slurmctld.log")
        .contains(&format!("JobId={admin}: partition admin is flat"));
    lab.cancel_all();
    lab.restart_with(&[]);
    assert_eq!(admin_nodes.len(), 4);
    assert_eq!(racks(&admin_nodes).len(), 2, "{:?}", per_rack(&admin_nodes));
    assert_eq!(per_rack(&gpu_nodes), [(4, 4)], "{gpu_nodes:?}");
    assert!(flat_line, "no flat-partition decision line for job {admin}");
}

/// `-p gpu,admin`: slurmctld tries the job in each partition; it fits only in admin (no rack
/// has four free trays), so it runs there, across racks. A `--segment` the racks could never
/// honour (six segments of 12, one per rack fits) is refused in gpu at submission but runs
/// in admin, where Slurm ignores it as topology/flat does.
#[test]
fn a_job_for_gpu_and_admin_runs_in_the_partition_it_fits() {
    let (lab, _g) = Lab::claim();
    with_flat_admin_partition(lab);
    two_free_per_rack(lab);
    let both = lab.submit(&["-p", "gpu,admin", "-N", "4", "--exclusive"]);
    let nodes = lab.running_nodes(both);
    let partition = partition_of(lab, both);
    lab.cancel_all();
    let in_gpu = lab.sbatch(&["-p", "gpu", "-N", "72", "--segment=12"], "sleep 600");
    let in_admin = lab.sbatch(&["-p", "admin", "-N", "72", "--segment=12"], "sleep 600");
    let admin_nodes = in_admin.as_ref().map(|&job| lab.running_nodes(job));
    lab.cancel_all();
    lab.restart_with(&[]);
    assert_eq!(partition, "admin");
    assert_eq!(racks(&nodes).len(), 2, "{:?}", per_rack(&nodes));
    let err = in_gpu.expect_err("-p gpu -N 72 --segment=12 should be refused");
    assert!(err.contains(TOPO_ERROR), "{err}");
    assert_eq!(admin_nodes.expect("-p admin accepted").len(), 72);
}

/// Waits until slurmctld has looked at the pending job (its reason is no longer `None`) or
/// started it.
fn first_look(lab: &Lab, job: u32) {
    lab.wait_for(&format!("a scheduling pass over job {job}"), || {
        lab.state(job) != "PENDING" || lab.reason(job) != "None"
    });
}

/// `--switches`: at most `count` racks (NVLink domains) until the job has waited its
/// `@max-time`, then the fewest racks that hold it, in pieces as large as possible. Ten free
/// trays in each of racks 1-3, no rack holds 12; two jobs of 12 trays at once, sized as most
/// users size them (`-N 12` is the 26.05 IMEX test's, e2e_slurm26.rs):
/// - A, `--gpus=48 --switches=1@0:10`: waits with reason `Resources` (as with
///   topology/tree), `Switches=1@00:00:10`, and after its 10 s starts on two racks as 6 + 6;
/// - B, `-n 48 --gpus-per-task=1 --switches=1` without `@`: Slurm caps its wait at
///   `max_switch_wait`, 300 s by
///   default (`Switches=1@00:05:00`), so evaluated again and again for 15 s it stays pending
///   with `Resources`, and once rack3 empties it runs there in one piece.
///
/// Without a topology plugin both start at once (`E2E_TOPO=none`: "started at once"). Slurm
/// evaluates a pending job only when something changes (or at its 60 s main pass), so the
/// test nudges slurmctld ([`Lab::nudge`]) while they wait.
#[test]
fn switches_hold_a_job_to_one_rack_until_its_wait_is_over_then_split_it_evenly() {
    let (lab, _g) = Lab::claim();
    let holders = ten_free_in_three_racks(lab);
    let a = lab.submit(&["--gpus=48", "--exclusive", "--switches=1@0:10"]);
    let b = lab.submit(&[
        "-n",
        "48",
        "--gpus-per-task=1",
        "--exclusive",
        "--switches=1",
    ]);
    for job in [a, b] {
        first_look(lab, job);
        let started_at_once = lab.state(job) != "PENDING";
        let at_once = started_at_once.then(|| lab.running_nodes(job));
        assert!(!started_at_once, "job {job} started at once on {at_once:?}");
    }
    assert_eq!(lab.job_field(a, "Switches"), "1@00:00:10");
    assert_eq!(lab.job_field(b, "Switches"), "1@00:05:00");
    // A: pending with Resources, and nothing else, until it starts.
    let mut reasons = Vec::new();
    lab.wait_up_to(90, &format!("job {a} RUNNING after its wait"), || {
        let Some(reason) = lab.pending_reason(a) else {
            return true;
        };
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
        lab.nudge();
        false
    });
    let nodes = lab.running_nodes(a);
    let submit = lab.job_time(a, "SubmitTime").expect("SubmitTime");
    let start = lab.job_time(a, "StartTime").expect("StartTime");
    assert_eq!(reasons, ["Resources"], "pending reasons of job {a}");
    assert!(
        start - submit >= 10,
        "started {} s after submission: {nodes:?}",
        start - submit
    );
    let pieces: Vec<usize> = per_rack(&nodes).iter().map(|p| p.1).collect();
    assert_eq!(pieces, [6, 6], "{:?}", per_rack(&nodes));
    assert!(racks(&nodes).iter().all(|&r| r <= 3), "{nodes:?}");
    // B: pending at every look until slurmctld has evaluated it 15 s after submission.
    let submit = lab.job_time(b, "SubmitTime").expect("SubmitTime");
    let mut split = None;
    lab.wait_up_to(
        90,
        &format!("job {b} evaluated 15 s after submission"),
        || {
            if lab.state(b) != "PENDING" {
                split = Some(lab.running_nodes(b));
                return true;
            }
            lab.nudge();
            lab.job_time(b, "LastSchedEval")
                .is_some_and(|t| t - submit >= 15)
        },
    );
    let reason = lab.reason(b);
    // rack3 empties (A took at most 6 of its trays): B starts there, in one piece.
    lab.run(&["scancel", &holders[2].to_string()]);
    let nodes = split.is_none().then(|| lab.running_nodes(b));
    assert_eq!(split, None, "job {b} did not wait for one rack");
    assert_eq!(reason, "Resources");
    let nodes = nodes.unwrap();
    assert_eq!(per_rack(&nodes), [(3, 12)], "{nodes:?}");
}
