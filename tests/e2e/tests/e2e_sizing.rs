//! End-to-end tests of the request styles users size jobs with when they do not write `-N`:
//! `--gpus`, `-n` with `--gpus-per-task`, `--ntasks-per-node` with `--gpus-per-node`, node
//! ranges, `-n`/`-c`. Slurm hands such jobs to the plugin with a node minimum of 1, so each
//! state below is built so that ranking racks on that minimum, Slurm's own consecutive-node
//! choice (topology/default) and topology/block all give a different answer than the plugin.
//! `scripts/without-plugin.sh` runs them against stock Slurm and records which fail.

use nvl72_e2e as lab;

use lab::{per_rack, per_rack_in, racks_in, Lab};

/// Ten racks of four trays (`BlockName`-sized racks, cheap to fill): more candidate racks
/// than the eight alternatives the plugin used to offer.
const SMALL_RACKS: &[(&str, &str)] = &[
    ("RACKS", "10"),
    ("NPR", "4"),
    ("POLICY", "log_decisions = true"),
];

/// Racks 1-8 keep their first tray free, rack9 its last (gb036), rack10 is empty. Slurm's
/// consecutive choice sees gb[036-040] as one run and would start at gb036 (racks 9 and 10);
/// the best fit on one node offers racks 1-9, none of which holds 8 GPUs; topology/block
/// picks the fullest block with a free node (rack9) and then waits.
fn nine_racks_with_one_free_tray(lab: &Lab) {
    for r in 0..8 {
        lab.occupy(&format!("gb[{:03}-{:03}]", r * 4 + 2, r * 4 + 4));
    }
    lab.occupy("gb[033-035]");
}

#[test]
fn gpu_count_jobs_take_two_trays_of_the_empty_rack_not_one_tray_in_each_of_two() {
    let (lab, _g) = Lab::claim();
    lab.restart_with(SMALL_RACKS);
    nine_racks_with_one_free_tray(lab);
    let by_gpus = lab.submit(&["--gpus=8", "--exclusive"]);
    let nodes = lab.running_nodes(by_gpus);
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert_eq!(
        racks_in(&nodes, 4),
        vec![10],
        "--gpus=8 was split: {nodes:?}"
    );
    let by_tasks = lab.submit(&["-n", "8", "--gpus-per-task=1", "--exclusive"]);
    let nodes = lab.running_nodes(by_tasks);
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    assert_eq!(
        racks_in(&nodes, 4),
        vec![10],
        "-n 8 --gpus-per-task=1 was split: {nodes:?}"
    );
    // The decision line says how the demand was derived.
    let line = lab.decision(by_tasks).expect("decision logged");
    assert!(
        line.contains("trays>=2 (gpus=1/task x 8 tasks") && line.contains("-> rack10:"),
        "{line}"
    );
    // Rack10 is full now: a third such job waits rather than using the free trays of
    // racks 1-9 (one per rack), and says why in the log.
    let waits = lab.submit(&["--gpus=8", "--exclusive"]);
    lab.assert_stays_pending(waits);
    // 24.11, 25.05 and 25.11 have no topology reason; 26.05 says that no rack can hold the job.
    let reason = match lab::slurm_series().as_str() {
        "24.11" | "25.05" | "25.11" => "Resources",
        _ => "No suitable topology unit found",
    };
    assert_eq!(lab.reason(waits), reason);
}

/// Rack1 has two free trays that are not adjacent (gb002, gb004), rack2 is empty, the rest
/// is busy. `-N 2 --contiguous` fits rack1 by count, so the plugin offers it first, but
/// Slurm's own selection refuses non-adjacent trays; the plugin must restore the maps and
/// offer the second choice, rack2. Slurm's consecutive choice alone would take gb[004-005]
/// across racks 1 and 2.
#[test]
fn a_rack_slurm_refuses_is_followed_by_the_next_one() {
    let (lab, _g) = Lab::claim();
    lab.restart_with(SMALL_RACKS);
    lab.occupy("gb001");
    lab.occupy("gb003");
    lab.occupy("gb[009-012]");
    for r in 3..10 {
        lab.occupy(&format!("gb[{:03}-{:03}]", r * 4 + 1, r * 4 + 4));
    }
    let job = lab.submit(&["-N", "2", "--contiguous", "--exclusive"]);
    let nodes = lab.running_nodes(job);
    assert_eq!(per_rack_in(&nodes, 4), vec![(2, 2)], "{nodes:?}");
    let line = lab.decision(job).expect("decision logged");
    assert!(
        line.contains("-> rack2:2") && line.contains("choice 2 of 2"),
        "{line}"
    );
    // The refused try left nothing behind: rack1's two trays still take a plain -N 2.
    let plain = lab.submit(&["-N", "2", "--exclusive"]);
    assert_eq!(per_rack_in(&lab.running_nodes(plain), 4), vec![(1, 2)]);
}

/// Every rack keeps three free trays. `-n 4 --gpus-per-task=3` fits three trays by GPU
/// count, but a tray of four GPUs runs one such task, so Slurm's selection refuses every
/// rack; its retry loop then drops free trays and calls the plugin again (26.05: one tray a
/// call), and each later callback withdraws the dropped trays from the view it built last.
/// The job waits for resources, and when rack7 frees its fourth tray it starts there, in one
/// rack. Stock Slurm starts it at once over four racks.
#[test]
fn a_job_slurm_refuses_on_every_rack_waits_then_takes_the_rack_that_frees() {
    let (lab, _g) = Lab::claim();
    lab.restart_with(SMALL_RACKS);
    let holders: Vec<u32> = (0..10)
        .map(|r| lab.occupy(&format!("gb{:03}", r * 4 + 1)))
        .collect();
    let job = lab.submit(&["-n", "4", "--gpus-per-task=3", "--exclusive"]);
    lab.assert_stays_pending(job);
    assert_eq!(lab.reason(job), "Resources");
    lab.run(&["scancel", &holders[6].to_string()]);
    let nodes = lab.running_nodes(job);
    assert_eq!(per_rack_in(&nodes, 4), vec![(7, 4)], "{nodes:?}");
}

/// 4 racks of 18: rack1 has its last three trays free (gb[016-018]), rack2 is empty, racks
/// 3 and 4 are busy. Every style below needs four or more trays: Slurm's consecutive choice
/// would start at gb016 and cross into rack2, ranking on a minimum of one or two nodes
/// would pick rack1.
#[test]
fn every_request_style_lands_in_the_one_rack_that_holds_it() {
    let (lab, _g) = Lab::claim();
    lab.restart_with(&[("POLICY", "log_decisions = true")]);
    lab.occupy("gb[001-015]");
    lab.occupy("gb[037-072]");
    let styles: [&[&str]; 4] = [
        &["-n", "16", "--gpus-per-task=1", "--exclusive"],
        &[
            "-n",
            "16",
            "--ntasks-per-node=4",
            "--gpus-per-node=4",
            "--exclusive",
        ],
        &["-N", "2-8", "--gpus=24", "--exclusive"],
        &["-n", "16", "-c", "36", "--exclusive"],
    ];
    let mut used = 0;
    for args in styles {
        let job = lab.submit(args);
        let nodes = lab.running_nodes(job);
        assert_eq!(per_rack(&nodes).len(), 1, "{args:?} spans racks: {nodes:?}");
        assert_eq!(per_rack(&nodes)[0].0, 2, "{args:?} not in rack2: {nodes:?}");
        used += nodes.len();
    }
    assert_eq!(used, 4 + 4 + 6 + 4);
}

/// `DebugFlags=SelectType`, set in the running slurmctld with `scontrol setdebugflags`, logs
/// every decision at info (as topology/block logs its selection with that flag) without
/// `[policy] log_decisions`, and why a job waits; without the flag neither is logged at info.
#[test]
fn select_type_debug_flag_logs_decisions_and_waits() {
    let (lab, _g) = Lab::claim();
    // Off to begin with, should an earlier run have stopped with it on; and slurmctld at
    // info, where the plugin's debug lines do not show (26.05's lab runs at verbose).
    let _ = lab.sl(&["scontrol", "setdebugflags", "-SelectType"]);
    let config = lab.run(&["scontrol", "show", "config"]);
    let level = config
        .lines()
        .find_map(|l| l.strip_prefix("SlurmctldDebug"))
        .and_then(|rest| rest.split('=').nth(1))
        .map(str::trim)
        .expect("SlurmctldDebug in scontrol show config")
        .to_string();
    let _ = lab.sl(&["scontrol", "setdebug", "info"]);
    let from = lab.ctld_log_len();
    let quiet = lab.submit(&["-N", "2", "--exclusive"]);
    lab.running_nodes(quiet);
    for tray in ["gb019", "gb037", "gb055"] {
        lab.occupy(tray);
    }
    let _ = lab.sl(&["scontrol", "setdebugflags", "+SelectType"]);
    let logged = lab.submit(&["-N", "3", "--exclusive"]);
    lab.running_nodes(logged);
    // A full-rack job while every rack has a busy tray: the plugin says it waits.
    let waits = lab.submit(&["-N", "18", "--exclusive"]);
    let wait_line = format!("JobId={waits}: waits, ");
    lab.wait_for("the waiting job's line", || {
        lab.ctld_log_since(from).contains(&wait_line)
    });
    let _ = lab.sl(&["scontrol", "setdebugflags", "-SelectType"]);
    let _ = lab.sl(&["scontrol", "setdebug", &level]);
    lab.cancel_all();
    let log = lab.ctld_log_since(from);
    assert!(!log.contains(&format!("JobId={quiet} nodes=")), "{log}");
    assert!(log.contains(&format!("JobId={logged} nodes=3-3 ")), "{log}");
}

/// `block{rack2}` and `blockwith{gb040}` in `-w`/`-x` are resolved by the plugin's
/// `get_bitmap` and `whole_topo`; stock Slurm without a block-aware plugin rejects them.
#[test]
fn block_hostlist_functions_name_our_racks() {
    let (lab, _g) = Lab::claim();
    let job = lab.submit(&["-N", "18", "-w", "block{rack2}", "--exclusive"]);
    assert_eq!(per_rack(&lab.running_nodes(job)), vec![(2, 18)]);
    // rack3 is partly used (the best fit), but the job excludes it.
    lab.occupy("gb[037-040]");
    let job = lab.submit(&["-N", "4", "-x", "blockwith{gb040}", "--exclusive"]);
    let nodes = lab.running_nodes(job);
    assert_eq!(per_rack(&nodes).len(), 1, "{nodes:?}");
    assert_ne!(per_rack(&nodes)[0].0, 3, "{nodes:?}");
    let bad = lab.sbatch(&["-N", "1", "-w", "block{rack9}"], "true");
    assert!(bad.is_err(), "an unknown rack must be refused: {bad:?}");
}

/// slurm.conf lists the racks last to first. The plugin ranks nodes rack by rack, so jobs
/// still pack by best fit. Without the ranking, Slurm's table starts with rack4, and its
/// consecutive choice would put the job there.
#[test]
fn node_ranking_restores_rack_order_from_a_reversed_slurm_conf() {
    let (lab, _g) = Lab::claim();
    lab.restart_with(&[("NODE_ORDER", "reverse")]);
    lab.occupy("gb[053-054]");
    let job = lab.submit(&["-N", "4", "--exclusive"]);
    assert_eq!(per_rack(&lab.running_nodes(job)), vec![(3, 4)]);
}

/// `SchedulerParameters=bf_busy_nodes` makes Slurm's generic selection read the idle-node
/// map that the plugin keeps a copy of; placements stay inside one rack, by best fit.
#[test]
fn bf_busy_nodes_keeps_best_fit() {
    let (lab, _g) = Lab::claim();
    lab.restart_with(&[("SCHED_PARAMS", "bf_interval=5,bf_busy_nodes")]);
    // rack1: 16 free (gb[001-015], gb018); rack2: 14 free at its end (gb[023-036]), which
    // Slurm's consecutive choice would extend into rack3.
    lab.occupy("gb[016-017]");
    lab.occupy("gb[019-022]");
    let job = lab.submit(&["-N", "16", "--exclusive"]);
    assert_eq!(per_rack(&lab.running_nodes(job)), vec![(1, 16)]);
}

/// Rack groups and segment policies in slurmctld: with `prefer_same_group` a two-rack job
/// stays in one row, and `segment_placement = "consolidate"` packs segments into the
/// fewest racks.
#[test]
fn same_group_and_consolidate_policies_in_slurmctld() {
    let (lab, _g) = Lab::claim();
    lab.restart_with(&[("GROUP_SIZE", "2")]);
    // row1 = racks 1-2, row2 = racks 3-4. Free: rack1 10, rack2 17, rack3 16, rack4 18.
    // The tightest pair for 26 trays is rack1+rack3 (26 free), across rows; inside a row
    // it is rack1+rack2 (27). Slurm's consecutive choice would take rack3+rack4.
    lab.occupy("gb[001-008]");
    lab.occupy("gb019");
    lab.occupy("gb[037-038]");
    let job = lab.submit(&["-N", "26", "--exclusive"]);
    let nodes = lab.running_nodes(job);
    let racks: Vec<usize> = per_rack(&nodes).iter().map(|p| p.0).collect();
    assert_eq!(
        racks,
        vec![1, 2],
        "a two-rack job left its row or the tightest pair"
    );
    lab.sl(&["scancel", &job.to_string()]);
    lab.restart_with(&[("POLICY", "segment_placement = \"consolidate\"")]);
    // rack1 has 4 free (gb[015-018]), rack2 8, rack3 and rack4 18. Best fit would put the
    // three segments of 4 into rack1, rack2, rack2; consolidate takes one rack. Slurm's
    // consecutive choice would take gb[029-040], racks 2 and 3.
    lab.occupy("gb[001-014]");
    lab.occupy("gb[019-028]");
    let job = lab.submit(&["-N", "12", "--segment=4", "--exclusive"]);
    assert_eq!(per_rack(&lab.running_nodes(job)).len(), 1);
}

/// `--gpus=80` needs 20 trays, more than a rack: it follows `multi_rack` like `-N 20`, the
/// two racks with the fewest free trays that hold it (rack2 and rack4, 16 free each), whole
/// pieces first. Slurm's consecutive choice would take gb[021-040] (racks 2 and 3);
/// topology/block refuses the job at submission.
#[test]
fn gpu_count_jobs_larger_than_a_rack_take_the_tightest_racks() {
    let (lab, _g) = Lab::claim();
    lab.occupy("gb[019-020]");
    lab.occupy("gb[055-056]");
    let job = lab.submit(&["--gpus=80", "--exclusive"]);
    let nodes = lab.running_nodes(job);
    assert_eq!(nodes.len(), 20, "{nodes:?}");
    assert_eq!(per_rack(&nodes), vec![(2, 16), (4, 4)], "{nodes:?}");
}

/// `-n 8 --gpus=8 -w gb001,gb040`: two trays hold the job, but the named ones lie in two
/// racks. Like `-N 2 -w gb001,gb040` it is refused at submission; before the node maximum
/// was capped at the task count as Slurm caps it, the check passed at submission and Slurm
/// then ran the job on gb[001,040], across racks (as stock Slurm does).
#[test]
fn task_sized_jobs_with_named_trays_in_two_racks_are_refused() {
    let (lab, _g) = Lab::claim();
    let err = lab
        .sbatch(
            &["-n", "8", "--gpus=8", "--exclusive", "-w", "gb001,gb040"],
            "true",
        )
        .expect_err("must be refused");
    assert!(
        err.contains("Requested topology configuration is not available"),
        "{err}"
    );
    let job = lab.submit(&["-n", "8", "--gpus=8", "--exclusive", "-w", "gb001,gb002"]);
    assert_eq!(per_rack(&lab.running_nodes(job)), vec![(1, 2)]);
}
