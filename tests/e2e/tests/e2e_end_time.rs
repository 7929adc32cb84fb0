//! End-to-end test of `[policy] end_time`: racks that empty together. The plugin reads the
//! expected end of the jobs on each rack from slurmctld's job list and places a job where it
//! keeps a rack broken the shortest time.

use nvl72_e2e as lab;

use lab::{per_rack, Lab};

/// rack1 has 5 free trays and its 13 busy ones end within 30 minutes; rack2 has 6 free and
/// its jobs run for 10 more hours. A 10-hour `-N 4` job: best fit (the rule off) puts it on
/// rack1, which then stays broken for 10 hours instead of 30 minutes; `end_time = "align"`
/// puts it on rack2, whose jobs end at the same time as it, so both racks come free as a
/// whole as early as they can. (Slurm's own choice, topology/default, would take gb014.)
#[test]
fn end_time_align_keeps_racks_that_empty_together() {
    let (lab, _g) = Lab::claim();
    let setup = |lab: &Lab| {
        lab.occupy_for("gb[001-013]", "00:30:00");
        lab.occupy_for("gb[019-030]", "10:00:00");
        lab.submit(&["-N", "4", "--exclusive", "--time=10:00:00"])
    };
    // Without the rule: best fit takes rack1.
    lab.restart_with(&[("POLICY", "log_decisions = true")]);
    let job = setup(lab);
    assert_eq!(per_rack(&lab.running_nodes(job)), vec![(1, 4)]);
    // With it: rack2.
    lab.cancel_all();
    lab.restart_with(&[(
        "POLICY",
        "log_decisions = true\nend_time = \"align\"\nend_time_hours_per_tray = 2",
    )]);
    let job = setup(lab);
    let nodes = lab.running_nodes(job);
    assert_eq!(per_rack(&nodes), vec![(2, 4)], "{nodes:?}");
    let line = lab.decision(job).expect("decision logged");
    assert!(line.contains("-> rack2:4"), "{line}");
}
