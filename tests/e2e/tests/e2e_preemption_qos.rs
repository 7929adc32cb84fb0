//! Least-loss preemption under preempt/qos (issue 52): the same reference case as
//! `e2e_preemption.rs`, with the tiers as QOS in slurmdbd (`ACCOUNTING=1`: slurmdbd and
//! MariaDB) instead of partitions: QOS `high` preempts QOS `low` by requeueing. Slurm's order
//! (the lowest QOS priority, then the smallest job) requeues l2 and l1; the plugin requeues
//! l3 alone. Fails with topology/block (docs/lab.md).

use nvl72_e2e as lab;

use lab::{per_rack, Lab};

const PREEMPT_BY_QOS: &str = "PreemptType=preempt/qos
PreemptMode=REQUEUE
JobRequeue=1";

/// A low-QOS job on exactly `nodes`, requeued when preempted, running when this returns.
fn low(lab: &Lab, name: &str, nodes: &str) -> u32 {
    lab.occupy_with(nodes, &["--qos=low", "--requeue", "-J", name])
}

#[test]
fn under_preempt_qos_a_whole_rack_job_preempts_the_one_job_whose_rack_loses_least() {
    // Every lab-up this process runs has accounting on (as in e2e_accounting.rs).
    std::env::set_var("ACCOUNTING", "1");
    let (lab, _g) = Lab::claim();
    lab.restart_with(&[("EXTRA_CONF", PREEMPT_BY_QOS)]);
    let sacctmgr = |args: &[&str]| {
        let mut all = vec!["sacctmgr", "-i"];
        all.extend_from_slice(args);
        // "Nothing new added" when the QOS exists from an earlier run is not an error here.
        let _ = lab.sl(&all);
    };
    sacctmgr(&["add", "qos", "low", "priority=1", "preemptmode=requeue"]);
    sacctmgr(&["add", "qos", "high", "priority=10"]);
    sacctmgr(&["modify", "qos", "high", "set", "preempt=low"]);
    // slurmctld reads QOS changes from slurmdbd: wait until it knows both.
    lab.wait_for("slurmctld to know QOS high preempts low", || {
        let out = lab.run(&[
            "sacctmgr",
            "-n",
            "-P",
            "show",
            "qos",
            "high",
            "format=preempt",
        ]);
        out.trim() == "low"
    });
    // Whole-rack jobs first, l3 last (as in e2e_preemption.rs: l3 is also the youngest).
    let l4 = low(lab, "l4", "gb[037-054]");
    let l5 = low(lab, "l5", "gb[055-072]");
    let l1 = low(lab, "l1", "gb[001-010]");
    let l2 = low(lab, "l2", "gb[011-018]");
    let l3 = low(lab, "l3", "gb[019-028]");
    let job = lab.submit(&["--qos=high", "--exclusive", "-N", "18"]);
    lab.wait_up_to(180, &format!("high job {job} RUNNING"), || {
        lab.state(job) == "RUNNING"
    });
    let nodes = lab.running_nodes(job);
    assert_eq!(per_rack(&nodes), vec![(2, 18)], "{nodes:?}");
    let restarts = |j: u32| -> u32 { lab.job_field(j, "Restarts").parse().expect("Restarts=") };
    let got: Vec<u32> = [l1, l2, l3, l4, l5].into_iter().map(restarts).collect();
    assert_eq!(got, [0, 0, 1, 0, 0], "{}", lab.diagnostics());
    // sacct agrees: l3's first allocation ended PREEMPTED (then it waits, requeued).
    let sacct = lab.run(&[
        "sacct",
        "-X",
        "-n",
        "-P",
        "-D",
        "-j",
        &l3.to_string(),
        "-o",
        "State",
    ]);
    assert_eq!(
        sacct.lines().next().map(str::trim),
        Some("PREEMPTED"),
        "{sacct}"
    );
}
