//! Promises Slurm and topology/block keep that topology/nvl72 must keep too, in the real
//! slurmctld: node `Weight` (lower weight used first), `-w` with several segments (25.11 and
//! later), and SchedMD's own block tests (testsuite/python/tests/test_150_*) carried over
//! from blocks of 4 nodes to racks of 18. docs/lab.md lists which of those apply and how each
//! ended.

use nvl72_e2e as lab;

use lab::{per_rack, racks, Lab};

const TOPO_ERROR: &str = "Requested topology configuration is not available";

/// Sets node weights for one test and puts every tray back to weight 1 (slurm.conf's
/// default) when dropped, also when the test fails.
struct Weights<'a>(&'a Lab);

impl<'a> Weights<'a> {
    fn set(lab: &'a Lab, nodes: &[(&str, u32)]) -> Weights<'a> {
        for (list, weight) in nodes {
            lab.run(&[
                "scontrol",
                "update",
                &format!("nodename={list}"),
                &format!("weight={weight}"),
            ]);
        }
        Weights(lab)
    }
}

impl Drop for Weights<'_> {
    fn drop(&mut self) {
        let _ = self
            .0
            .sl(&["scontrol", "update", "nodename=gb[001-072]", "weight=1"]);
    }
}

/// 25.11 and later have topology/block's newer segment rules (`-w` with several segments,
/// segments larger than a block, per-job segment flags); 24.11 and 25.05 do not.
fn block_25_11_segments() -> bool {
    !matches!(lab::slurm_series().as_str(), "24.11" | "25.05")
}

/// The case: racks 1 and 2 at weight 100 (waiting for maintenance, say), racks 3 and
/// 4 at 1. rack3 has only 2 free trays, so Slurm's own choice of the 4 lightest trays spans
/// racks 3 and 4; topology/nvl72 ignored weights and took rack1. Now: rack4, the light rack
/// that holds the job, for every sizing style. topology/block also takes rack4.
#[test]
fn lower_weight_racks_are_used_first() {
    let (lab, _g) = Lab::claim();
    let _w = Weights::set(lab, &[("gb[001-036]", 100)]);
    lab.occupy("gb[037-052]");
    for args in [
        &["-N", "4", "--exclusive"][..],
        &["--gpus=16", "--exclusive"][..],
        &["-n", "16", "--gpus-per-task=1"][..],
    ] {
        let job = lab.submit(args);
        let nodes = lab.running_nodes(job);
        assert_eq!(racks(&nodes), vec![4], "{args:?}: {nodes:?}");
        lab.run(&["scancel", &job.to_string()]);
        lab.wait_for("the job to end", || lab.state(job).is_empty());
    }
}

/// Inside a rack the lighter trays go first, and a job larger than a rack takes the light
/// racks before heavy ones; a live `scontrol update weight=` takes effect at once. Stock
/// Slurm and topology/block pass this too (they order nodes by weight); the plugin failed it
/// before it read weights (rack1 for both jobs).
#[test]
fn lighter_trays_and_racks_go_first_and_live_updates_count() {
    let (lab, _g) = Lab::claim();
    let w = Weights::set(lab, &[("gb[001-072]", 10), ("gb[063-066]", 1)]);
    let job = lab.submit(&["-N", "4", "--exclusive"]);
    assert_eq!(lab.running_nodes(job), ["gb063", "gb064", "gb065", "gb066"]);
    lab.cancel_all();
    drop(w);
    let _w = Weights::set(lab, &[("gb[001-036]", 100)]);
    let job = lab.submit(&["-N", "36", "--exclusive"]);
    assert_eq!(racks(&lab.running_nodes(job)), vec![3, 4]);
}

/// Trays per rack of a job, as `lab::per_rack` reports them.
type Pieces = Vec<(usize, usize)>;

/// SchedMD's test_150_2 (blocks of 4, carried over to racks of 18): `-w` naming every node
/// of a job with several segments; each rack's share is whole segments. Stock Slurm runs the
/// accepted ones too, but also runs the last one across racks; topology/nvl72 refuses it
/// (block on 25.11+ refuses it with "Requested node configuration is not available").
#[test]
fn required_nodes_with_several_segments_follow_the_series_rule() {
    let (lab, _g) = Lab::claim();
    let cases: [(&[&str], Pieces); 3] = [
        (
            &["-N", "4", "-w", "gb[001-004]", "--segment=2"],
            vec![(1, 4)],
        ),
        (
            &["-N", "4", "-w", "gb[001-002,019-020]", "--segment=2"],
            vec![(1, 2), (2, 2)],
        ),
        (
            &["-N", "6", "-w", "gb[001-003,019-021]", "--segment=3"],
            vec![(1, 3), (2, 3)],
        ),
    ];
    for (args, pieces) in cases {
        let mut args = args.to_vec();
        args.push("--exclusive");
        if block_25_11_segments() {
            let job = lab.submit(&args);
            assert_eq!(per_rack(&lab.running_nodes(job)), pieces, "{args:?}");
            lab.cancel_all();
        } else {
            let err = lab
                .sbatch(&args, "true")
                .expect_err("24.11/25.05 refuse it");
            assert!(err.contains(TOPO_ERROR), "{args:?}: {err}");
        }
    }
    // 3 + 1: the second segment would span racks, on every series.
    let err = lab
        .sbatch(
            &[
                "-N",
                "4",
                "-w",
                "gb[001-003,019]",
                "--segment=2",
                "--exclusive",
            ],
            "true",
        )
        .expect_err("not whole segments per rack");
    assert!(err.contains(TOPO_ERROR), "{err}");
}

/// test_150_2's third case: `-w` naming more trays than the job makes slurmctld exclude the
/// others instead (no required nodes reach the plugin), so every series accepts it and each
/// segment lands in one rack. Stock Slurm takes gb[001-020]: its second segment spans racks.
#[test]
fn a_node_list_larger_than_the_job_limits_where_its_segments_go() {
    let (lab, _g) = Lab::claim();
    let job = lab.submit(&[
        "-N",
        "20",
        "-w",
        "gb[001-036]",
        "--segment=10",
        "--exclusive",
    ]);
    let nodes = lab.running_nodes(job);
    assert_eq!(per_rack(&nodes), vec![(1, 10), (2, 10)], "{nodes:?}");
}

/// `--spread-segments` and `--consolidate-segments` exist from Slurm 25.11 (sbatch of 24.11
/// and 25.05 does not know them). There the job's own rule overrides the plugin's policy:
/// spread puts each segment in a rack of its own, consolidate uses the fewest racks.
/// Stock Slurm without a topology plugin ignores both.
#[test]
fn a_jobs_own_segment_rule_overrides_the_policy() {
    let (lab, _g) = Lab::claim();
    if !block_25_11_segments() {
        let err = lab
            .sbatch(&["-N", "8", "--segment=4", "--spread-segments"], "true")
            .expect_err("unknown before 25.11");
        assert!(err.contains("spread-segments"), "{err}");
        return;
    }
    lab.occupy("gb[019-032]"); // rack2: 4 free, the tightest hole for a segment of 4
    let spread = lab.submit(&[
        "-N",
        "12",
        "--segment=4",
        "--spread-segments",
        "--exclusive",
    ]);
    let pieces = per_rack(&lab.running_nodes(spread));
    assert_eq!(pieces, vec![(1, 4), (2, 4), (3, 4)], "one segment per rack");
    lab.cancel_all();
    lab.occupy("gb[005-018]"); // rack1: 4 free; best fit would put one segment there
    let packed = lab.submit(&[
        "-N",
        "8",
        "--segment=4",
        "--consolidate-segments",
        "--exclusive",
    ]);
    let pieces = per_rack(&lab.running_nodes(packed));
    assert_eq!(pieces.len(), 1, "both segments in one rack: {pieces:?}");
}

/// A segment larger than a rack: 24.11 and 25.05 refuse it (their block too); 25.11 and
/// later accept it (block there drops that limit) and each segment gets the fewest racks, two
/// for 20 trays, so the job fits three racks. Stock Slurm has no segment limit at all and
/// passes on 25.11+; the plugin refused this job there before.
#[test]
fn segments_larger_than_a_rack_follow_the_series_rule() {
    let (lab, _g) = Lab::claim();
    let args = ["-N", "40", "--segment=20", "--exclusive"];
    if !block_25_11_segments() {
        let err = lab
            .sbatch(&args, "true")
            .expect_err("24.11/25.05 refuse it");
        assert!(err.contains(TOPO_ERROR), "{err}");
        return;
    }
    let job = lab.submit(&args);
    let nodes = lab.running_nodes(job);
    assert_eq!(nodes.len(), 40);
    assert_eq!(racks(&nodes).len(), 3, "{:?}", per_rack(&nodes));
}

/// SchedMD's test_150_3: the tasks of `srun -m block` follow the topology, a rack's trays
/// before the next rack's, even where slurm.conf's node order interleaves the racks (here
/// rack1 is the odd trays of gb[001-036], rack2 the even ones). The plugin ranks the node
/// table rack by rack (`generate_node_ranking`; 26.05 also asks `get_rank`). Without it the
/// tasks follow node names: gb001, gb002, ...
///
/// The ranking follows the racks on a start without job state: once jobs may run, the node
/// order is kept whatever the racks say (`node_order`, so that no running job's cores or GPUs
/// move), so both restarts here clear slurmctld's state (`CLEAN=1`), as a site sets up its
/// racks before its jobs.
#[test]
fn tasks_follow_the_racks_even_when_node_names_interleave_them() {
    let (lab, _g) = Lab::claim();
    let toml = std::env::temp_dir().join("nvl72-e2e-interleaved.toml");
    let numbered = |from: usize| -> Vec<String> {
        (from..=36).step_by(2).map(|i| format!("{i:03}")).collect()
    };
    let mut text = String::from("trays_per_rack = 18\ngpus_per_tray = 4\n");
    for (name, nodes) in [
        ("rack1", format!("gb[{}]", numbered(1).join(","))),
        ("rack2", format!("gb[{}]", numbered(2).join(","))),
        ("rack3", "gb[037-054]".to_string()),
        ("rack4", "gb[055-072]".to_string()),
    ] {
        text += &format!("\n[[rack]]\nname = \"{name}\"\nnodes = \"{nodes}\"\n");
    }
    std::fs::write(&toml, text).unwrap();
    lab.restart_with(&[("TOPOLOGY_TOML", toml.to_str().unwrap()), ("CLEAN", "1")]);
    let job = lab
        .sbatch(
            &["-N", "36", "--exclusive"],
            "srun -l -m block printenv SLURMD_NODENAME",
        )
        .unwrap();
    lab.wait_for("job end", || lab.state(job).is_empty());
    let out = lab.job_output(job);
    lab.restart_with(&[("CLEAN", "1")]);
    let mut tasks: Vec<(u32, String)> = out
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(task, node)| Some((task.trim().parse().ok()?, node.trim().to_string())))
        .collect();
    tasks.sort();
    assert_eq!(tasks.len(), 36, "{out}");
    let odd = |node: &str| node[2..].parse::<u32>().unwrap() % 2 == 1;
    for (task, node) in &tasks {
        assert_eq!(odd(node), *task < 18, "task {task} on {node}: {tasks:?}");
    }
}
