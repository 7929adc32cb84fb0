//! Every check against the fixtures in tests/fixtures/check, asserting the exact lines an
//! admin would see (paths are relative because cargo runs tests in the crate root, crates/admin).

use super::slurm_conf::{read_gres_conf, read_slurm_conf, GresGpus};
use super::*;

const F: &str = "../../tests/fixtures/check";

fn run(topology: &str, slurm_conf: &str) -> Report {
    run_for(topology, slurm_conf, false)
}

/// As [`run`], for a Slurm that reads topology.yaml (25.05 and later) or not (24.11).
fn run_for(topology: &str, slurm_conf: &str, reads_topology_yaml: bool) -> Report {
    check(&CheckInput {
        topology: format!("{F}/{topology}").into(),
        slurm_conf: format!("{F}/{slurm_conf}").into(),
        gres_conf: None,
        release: None,
        show_topology: None,
        this_host: None,
        held_jobs: None,
        reads_topology_yaml,
    })
}

fn lines(report: &Report) -> Vec<String> {
    report.problems.iter().map(ToString::to_string).collect()
}

#[test]
fn the_lab_layout_is_clean() {
    let report = check(&CheckInput::new(format!("{F}/good/slurm.conf")));
    assert_eq!(report.render(), "");
    assert_eq!(report.exit_code(), 0);
    assert_eq!(
        report.summary(),
        format!("{F}/good/topology.toml: 4 racks, 72 trays: 0 errors, 0 warnings")
    );
    assert_eq!(run("topology/block.conf", "good/slurm.conf").render(), "");
}

/// slurmctld's plugin switched rack placement off (`scontrol show topology`'s first line):
/// an error, so `nvl72 check && ...` stops.
#[test]
fn rack_placement_switched_off_in_slurmctld_is_an_error() {
    let report = check(&CheckInput {
        show_topology: Some(
            "RackPlacement=OFF Reason=\"built for Slurm 24.11.5 but this process's job records \
             do not match that layout\" (Slurm's generic selection places every job)\n\
             RackName=rack1 RackIndex=0 Nodes=gb[001-018] Trays=18\n"
                .into(),
        ),
        ..CheckInput::new(format!("{F}/good/slurm.conf"))
    });
    assert_eq!(
        lines(&report),
        [format!(
            "{F}/good/slurm.conf: error: the running slurmctld switched rack placement off: \
             built for Slurm 24.11.5 but this process's job records do not match that layout; \
             Slurm's generic selection places every job until the plugin is rebuilt for this \
             release"
        )]
    );
    assert_eq!(report.exit_code(), 1);
}

/// DEFAULT, continuations, Include (plain and `%c`), key case and quoting describe the same
/// cluster as good/slurm.conf.
#[test]
fn slurm_conf_syntax_is_followed() {
    assert_eq!(run("good/topology.toml", "styles/slurm.conf").render(), "");

    let path = PathBuf::from(format!("{F}/styles/slurm.conf"));
    let conf = read_slurm_conf(&path);
    assert!(conf.problems.is_empty(), "{:?}", conf.problems);
    assert_eq!(conf.node_index.len(), 74);
    let gpus = |node: &str| conf.node_lines[conf.node_index[node]].gpus;
    assert_eq!((gpus("gb001"), gpus("gb040"), gpus("gb060")), (4, 4, 4));
    assert_eq!(gpus("cpu01"), 0);
    let line = |node: &str| conf.node_lines[conf.node_index[node]].loc.to_string();
    assert_eq!(line("gb036"), format!("{F}/styles/slurm.conf:8"));
    assert_eq!(line("cpu02"), format!("{F}/styles/lab-cpu.conf:1"));
    assert_eq!(line("gb072"), format!("{F}/styles/racks34.conf:2"));
    assert_eq!(conf.topology_plugin.as_ref().unwrap().0, "topology/nvl72");

    let gres = read_gres_conf(&PathBuf::from(format!("{F}/styles/gres.conf")), &path);
    let known = |node: &str| match gres.gpus(node) {
        GresGpus::Known(n, loc) => (n, loc.line),
        other => panic!("{other:?}"),
    };
    assert_eq!((known("gb001"), known("gb060")), ((4, 1), (4, 2)));
    assert_eq!(gres.gpus("cpu01"), GresGpus::None);
}

/// Checks 1, 3 and 4: the plugin's own parser, with its message after `error: `.
#[test]
fn plugin_rules_are_reported_with_their_line() {
    let cases = [
        (
            "topology/typo.toml",
            "typo.toml:3: error: unknown field `prefer_degrade`, expected one of `segment_placement`, `multi_rack`, `prefer_degraded`, `prefer_same_group`, `log_decisions`, `end_time`, `end_time_hours_per_tray`, `flat_partitions`, `switches`, `piece_multiple`, `prefer_piece_multiple`, `preemption_cost`",
        ),
        (
            "topology/switches.toml",
            "switches.toml:3: error: switches: count must be at least 1 (\"off\" means no limit)",
        ),
        (
            "topology/two-racks.toml",
            "two-racks.toml:9: error: rack[2].nodes: node gb018 is already in rack rack1 (line 5)",
        ),
        (
            "topology/too-many.toml",
            "too-many.toml:9: error: rack[2].nodes: rack rack2 lists 19 nodes, more than trays_per_rack (18)",
        ),
        (
            "topology/two-racks.conf",
            "two-racks.conf:3: error: Nodes: node gb018 is already in rack rack1 (line 2)",
        ),
        (
            "topology/too-many.conf",
            "too-many.conf:3: error: Nodes: rack rack1 lists 19 nodes, more than the first BlockSizes value (18)",
        ),
    ];
    for (file, want) in cases {
        let report = run(file, "good/slurm.conf");
        assert_eq!(lines(&report), [format!("{F}/topology/{want}")], "{file}");
        assert_eq!(report.exit_code(), 1);
        assert!(report.config.is_none());
        // Identical to what the plugin logs, after the severity.
        let plugin = config::load_file(&PathBuf::from(format!("{F}/{file}"))).unwrap_err();
        let without_severity = want.replacen("error: ", "", 1);
        assert_eq!(
            plugin.to_string(),
            format!("{F}/topology/{without_severity}")
        );
    }
}

#[test]
fn big_blocks_without_block_sizes_are_flagged() {
    assert_eq!(
        lines(&run("topology/big-block.conf", "good/slurm.conf")),
        [
            format!("{F}/topology/big-block.conf:3: warning: block rows1 lists 36 nodes, more than the 18 trays of an NVL72 rack (without BlockSizes= any size is accepted; add BlockSizes=18)"),
            format!("{F}/topology/big-block.conf:4: warning: block rows2 lists 36 nodes, more than the 18 trays of an NVL72 rack (without BlockSizes= any size is accepted; add BlockSizes=18)"),
        ]
    );
}

/// Checks 2 and 6.
#[test]
fn nodes_missing_from_slurm_conf_or_from_every_rack() {
    let report = run("topology/unknown.toml", "good/slurm.conf");
    assert_eq!(
        lines(&report),
        [
            format!("{F}/topology/unknown.toml:9: error: rack rack2: gb[101-102] not defined by any NodeName= in slurm.conf; slurmctld refuses the whole file (a reconfigure fails, a start keeps the last good racks)"),
            format!("{F}/good/slurm.conf:10: warning: gb[035-036] have GPUs but are in no rack of {F}/topology/unknown.toml; Slurm's generic selection places them"),
        ]
    );
    assert_eq!(report.exit_code(), 1);
}

/// Check 5, with gpus_per_tray set, defaulted, and fixed by topology.conf.
#[test]
fn gpus_per_tray_against_slurm_conf() {
    let report = run("topology/gpus8.toml", "good/slurm.conf");
    assert_eq!(
        lines(&report),
        [format!("{F}/topology/gpus8.toml:2: warning: gpus_per_tray is 8, but slurm.conf gives gb[001-072] 4 GPUs each (NodeName= at {F}/good/slurm.conf:9)")]
    );
    assert_eq!(report.exit_code(), 0);

    let gpu_lines = |topology: &str| -> Vec<String> {
        lines(&run(topology, "mixed/slurm.conf"))
            .into_iter()
            .filter(|l| l.contains("gpus_per_tray"))
            .collect()
    };
    let eight = format!("gb[019-036] 8 GPUs each (NodeName= at {F}/mixed/slurm.conf:8)");
    let none =
        format!("gb[037-054] no GPUs (no gpu in Gres= of NodeName= at {F}/mixed/slurm.conf:9)");
    assert_eq!(
        gpu_lines("topology/policy.toml"),
        [
            format!("{F}/topology/policy.toml: warning: gpus_per_tray is 4 (the default), but slurm.conf gives {eight}"),
            format!("{F}/topology/policy.toml: warning: gpus_per_tray is 4 (the default), but slurm.conf gives {none}"),
        ]
    );
    let fixed = "gpus_per_tray is 4 (fixed in topology.conf; set it in a topology.toml)";
    assert_eq!(
        gpu_lines("topology/block.conf"),
        [
            format!("{F}/topology/block.conf: warning: {fixed}, but slurm.conf gives {eight}"),
            format!("{F}/topology/block.conf: warning: {fixed}, but slurm.conf gives {none}"),
        ]
    );
}

/// Check 7.
#[test]
fn policy_knobs_without_effect() {
    assert_eq!(
        lines(&run("topology/policy.toml", "good/slurm.conf")),
        [
            format!("{F}/topology/policy.toml:3: warning: end_time_hours_per_tray has no effect unless end_time = \"align\" (end_time is \"off\")"),
            format!("{F}/topology/policy.toml:4: warning: prefer_same_group = true has no effect: no rack has a group"),
        ]
    );
    assert_eq!(
        lines(&run("topology/policy-groups.toml", "good/slurm.conf")),
        [
            format!("{F}/topology/policy-groups.toml:5: warning: end_time_hours_per_tray has no effect unless end_time = \"align\" (end_time is \"tie-break\")"),
            format!("{F}/topology/policy-groups.toml:3: warning: prefer_same_group = true has no effect: no two racks share a group"),
        ]
    );
}

/// `[policy] flat_partitions` against slurm.conf's partitions, and the summary naming them.
#[test]
fn flat_partitions_against_slurm_conf() {
    let report = run("topology/flat.toml", "good/slurm.conf");
    let t = format!("{F}/topology/flat.toml");
    assert_eq!(
        lines(&report),
        [
            format!("{t}:6: warning: flat partition cpu (PartitionName= at {F}/good/slurm.conf:15) has no rack node; Slurm's generic selection places its jobs anyway"),
            format!("{t}:7: error: flat partition Admin: no PartitionName=Admin in slurm.conf (partition names are case-sensitive), so no job gets flat placement"),
        ]
    );
    assert_eq!(report.exit_code(), 1);
    assert_eq!(
        report.summary(),
        format!("{t}: 4 racks, 72 trays, flat partitions gpu, cpu, Admin: 1 error, 1 warning")
    );
}

/// Partition nodes as slurmctld resolves them: the DEFAULT's `Nodes=`, `ALL`, node sets of
/// nodes; a node set by feature leaves the partition unresolved (no warning then).
#[test]
fn partition_nodes_follow_slurm_conf() {
    let dir = nvl72_engine::testkit::temp_dir("check-parts");
    let conf = dir.join("slurm.conf");
    std::fs::write(
        &conf,
        "NodeName=gb[001-002] Gres=gpu:4\nNodeName=cpu01\nNodeSet=racked Nodes=gb[001-002]\n\
         NodeSet=fast Feature=fast\nPartitionName=DEFAULT Nodes=cpu01\nPartitionName=a\n\
         PartitionName=b Nodes=ALL\nPartitionName=c Nodes=racked,cpu01\nPartitionName=d Nodes=fast\n",
    )
    .unwrap();
    let slurm = read_slurm_conf(&conf);
    let parts: Vec<(&str, Vec<&str>, bool)> = slurm
        .partitions
        .iter()
        .map(|p| {
            let nodes = p.nodes.iter().map(String::as_str).collect();
            (p.name.as_str(), nodes, p.unresolved)
        })
        .collect();
    assert_eq!(
        parts,
        [
            ("a", vec!["cpu01"], false),
            ("b", vec!["gb001", "gb002", "cpu01"], false),
            ("c", vec!["gb001", "gb002", "cpu01"], false),
            ("d", vec![], true),
        ]
    );
    assert_eq!(slurm.partitions[1].loc.line, 7);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Everything slurm.conf and gres.conf can get wrong at once (checks 2, 5, 6, 8 and the
/// files' own problems), in the documented order.
#[test]
fn broken_slurm_side() {
    for reads_yaml in [false, true] {
        broken_slurm_side_for(reads_yaml);
    }
}

fn broken_slurm_side_for(reads_yaml: bool) {
    let report = run_for("good/topology.toml", "mixed/slurm.conf", reads_yaml);
    let m = format!("{F}/mixed");
    let want = [
        format!("{m}/slurm.conf:6: error: Include: cannot read {m}/missing.conf: No such file or directory (os error 2)"),
        format!("{m}/slurm.conf:11: error: NodeName gb018 already defined at line 7; slurmctld refuses to start (Duplicated NodeName)"),
        format!("{F}/good/topology.toml:27: error: rack rack4: gb[071-072] not defined by any NodeName= in slurm.conf; slurmctld refuses the whole file (a reconfigure fails, a start keeps the last good racks)"),
        format!("{F}/good/topology.toml:3: warning: gpus_per_tray is 4, but slurm.conf gives gb[019-036] 8 GPUs each (NodeName= at {m}/slurm.conf:8)"),
        format!("{F}/good/topology.toml:3: warning: gpus_per_tray is 4, but slurm.conf gives gb[037-054] no GPUs (no gpu in Gres= of NodeName= at {m}/slurm.conf:9)"),
        format!("{m}/gres.conf:2: error: gres.conf gives gb[019-036] 4 GPUs each but slurm.conf gives them 8 (NodeName= at {m}/slurm.conf:8); slurmctld drains them (gres/gpu count reported lower than configured)"),
        format!("{m}/gres.conf:3: warning: gres.conf gives gb[037-054] 4 GPUs each but slurm.conf gives them none (NodeName= at {m}/slurm.conf:9); Slurm ignores them"),
        format!("{m}/slurm.conf:12: warning: gb[073-080] have GPUs but are in no rack of {F}/good/topology.toml; Slurm's generic selection places them"),
        format!("{m}/slurm.conf:4: warning: TopologyPlugin=topology/block: Slurm does not load topology/nvl72 (set TopologyPlugin=topology/nvl72)"),
        if reads_yaml {
            format!("{m}/topology.yaml: error: Slurm reads this file instead of TopologyPlugin= and cannot name topology/nvl72 in it, so topology/nvl72 is not loaded: remove or rename it on every host (it is also sent to configless nodes)")
        } else {
            format!("{m}/topology.yaml: warning: Slurm 24.11 ignores this file, but 25.05 and later read it instead of TopologyPlugin= and would not load topology/nvl72: remove or rename it before upgrading")
        },
    ];
    assert_eq!(lines(&report), want);
    assert_eq!(report.render(), want.map(|l| l + "\n").concat());
    // topology.yaml is an error where Slurm reads it (25.05+), a warning on 24.11.
    let (errors, warnings) = if reads_yaml { (5, 5) } else { (4, 6) };
    assert_eq!(
        (report.errors(), report.warnings(), report.exit_code()),
        (errors, warnings, 1)
    );
    assert_eq!(
        report.summary(),
        format!("{F}/good/topology.toml: 4 racks, 72 trays: {errors} errors, {warnings} warnings")
    );
}

/// Without a topology file the slurm.conf checks still run.
#[test]
fn missing_files() {
    let report = run("mixed", "good/slurm.conf");
    assert_eq!(
        lines(&report),
        [format!(
            "{F}/mixed: error: no topology.toml or topology.conf in {F}/mixed"
        )]
    );
    assert_eq!(report.summary(), "1 error, 0 warnings");

    assert_eq!(
        lines(&run("good", "nope/slurm.conf")),
        [format!(
            "{F}/nope/slurm.conf: error: cannot read file: No such file or directory (os error 2)"
        )]
    );

    let report = check(&CheckInput {
        gres_conf: Some(format!("{F}/nope/gres.conf").into()),
        ..CheckInput::new(format!("{F}/good/slurm.conf"))
    });
    assert_eq!(
        lines(&report),
        [format!(
            "{F}/nope/gres.conf: error: cannot read file: No such file or directory (os error 2)"
        )]
    );
}

/// The plugin reads topology.toml when both files are next to slurm.conf.
#[test]
fn shadowed_topology_conf() {
    assert_eq!(
        lines(&run("good/topology.conf", "good/slurm.conf")),
        [format!("{F}/good/topology.conf: warning: the plugin reads {F}/good/topology.toml instead of this file when both are in the slurm.conf directory")]
    );
}

/// Include forms Slurm 24.11 refuses, and include cycles.
#[test]
fn include_errors() {
    let dir = nvl72_engine::testkit::temp_dir("check");
    let conf = dir.join("slurm.conf");
    std::fs::write(
        &conf,
        "Include %c.conf\nInclude nodes*.conf\nClusterName=c\nInclude loop.conf\n",
    )
    .unwrap();
    std::fs::write(dir.join("loop.conf"), "SlurmUser=root\ninclude loop.conf\n").unwrap();
    let report = read_slurm_conf(&conf);
    let got: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
    let (c, l) = (conf.display(), dir.join("loop.conf"));
    assert_eq!(
        got[..2],
        [
            format!("{c}:1: error: Include %c.conf: %c needs a ClusterName= before this line"),
            format!("{c}:2: error: Include nodes*.conf: Slurm 24.11 does not expand `*` in Include and fails on it"),
        ]
    );
    assert_eq!(
        got[2..],
        [format!(
            "{}:2: error: Include loop.conf: nested more than 16 deep (an include cycle?)",
            l.display()
        )]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
