use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;

const EXAMPLE: &str = include_str!("../../../../conf/topology.toml");

fn file() -> &'static Path {
    Path::new("/etc/slurm/topology.toml")
}

fn toml_ok(text: &str) -> Config {
    parse_toml(text, file()).unwrap_or_else(|e| panic!("{e}"))
}

/// Display of the error, after checking it carries the expected line and field.
fn toml_err(text: &str, line: Option<usize>, field: Option<&str>) -> String {
    let err = parse_toml(text, file()).expect_err("should fail");
    check_err(&err, "/etc/slurm/topology.toml", line, field)
}

fn conf_err(text: &str, line: Option<usize>, field: Option<&str>) -> String {
    let err = parse_block_conf(text, Path::new("topology.conf")).expect_err("should fail");
    check_err(&err, "topology.conf", line, field)
}

fn check_err(err: &ConfigError, file: &str, line: Option<usize>, field: Option<&str>) -> String {
    let shown = err.to_string();
    assert_eq!(err.line, line, "{shown}");
    assert_eq!(err.field.as_deref(), field, "{shown}");
    let mut prefix = file.to_string();
    if let Some(line) = line {
        prefix.push_str(&format!(":{line}"));
    }
    prefix.push(':');
    if let Some(field) = field {
        prefix.push_str(&format!(" {field}:"));
    }
    assert!(
        shown.starts_with(&prefix),
        "{shown:?} should start with {prefix:?}"
    );
    shown
}

const ONE_RACK: &str = "[[rack]]\nname = \"r1\"\nnodes = \"gb[001-002]\"\n";

#[test]
fn defaults() {
    let policy = Policy::default();
    assert_eq!(policy.segment_placement, SegmentPlacement::OneRackFirst);
    assert!(policy.prefer_degraded && policy.prefer_same_group && !policy.log_decisions);
    let config = Config::default();
    assert_eq!((config.trays_per_rack, config.gpus_per_tray), (18, 4));
    assert!(config.racks.is_empty() && config.source.as_os_str().is_empty());

    let parsed = toml_ok(ONE_RACK);
    assert_eq!(parsed.trays_per_rack, 18);
    assert_eq!(parsed.gpus_per_tray, 4);
    assert_eq!(parsed.policy, Policy::default());
    assert_eq!(parsed.source, file());
    assert_eq!(
        parsed.racks,
        [RackConfig {
            name: "r1".into(),
            nodes: vec!["gb001".into(), "gb002".into()],
            clique: None,
            group: None,
        }]
    );
    // An empty [policy] table is fine too.
    assert_eq!(
        toml_ok(&format!("[policy]\n{ONE_RACK}")).policy,
        Policy::default()
    );
}

#[test]
fn example_file_parses() {
    let config = toml_ok(EXAMPLE);
    assert_eq!((config.trays_per_rack, config.gpus_per_tray), (18, 4));
    assert_eq!(config.policy, Policy::default());
    let names: Vec<&str> = config.racks.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["rack1", "rack2", "rack3", "rack4"]);
    let groups: Vec<_> = config.racks.iter().map(|r| r.group.as_deref()).collect();
    assert_eq!(
        groups,
        [Some("row1"), Some("row1"), Some("row2"), Some("row2")]
    );
    assert!(config.racks[0].clique.is_some());
    assert!(config.racks.iter().all(|r| r.nodes.len() == 18));
    assert_eq!(
        config.racks[1].nodes.last().map(String::as_str),
        Some("gb036")
    );
    assert_eq!(
        config.racks[3].nodes.last().map(String::as_str),
        Some("gb072")
    );
}

#[test]
fn full_file_with_every_key() {
    let config = toml_ok(
        "trays_per_rack = 16\ngpus_per_tray = 8\n[policy]\nsegment_placement = \"consolidate\"\n\
         multi_rack = \"start-now\"\nprefer_degraded = false\nprefer_same_group = false\nlog_decisions = true\n\
         end_time = \"align\"\nend_time_hours_per_tray = 6\nflat_partitions = [\"admin\", \"debug\"]\n\
         switches = { count = 2, wait_minutes = 30 }\n\
         [[rack]]\nname = \"a.b_c-1\"\nnodes = \"n[3,1], x\"\nclique = \"uuid:1\"\ngroup = \"row1\"\n",
    );
    assert_eq!((config.trays_per_rack, config.gpus_per_tray), (16, 8));
    assert_eq!(
        config.policy,
        Policy {
            segment_placement: SegmentPlacement::Consolidate,
            multi_rack: MultiRack::StartNow,
            prefer_degraded: false,
            prefer_same_group: false,
            log_decisions: true,
            end_time: EndTime::Align,
            end_time_hours_per_tray: 6,
            flat_partitions: vec!["admin".into(), "debug".into()],
            switches: Switches::Limit {
                count: 2,
                wait_minutes: 30,
            },
            piece_multiple: 1,
            prefer_piece_multiple: DEFAULT_PREFER_PIECE_MULTIPLE,
            preemption_cost: PreemptionCost::Work,
        }
    );
    assert_eq!(config.racks[0].nodes, ["n3", "n1", "x"]);
    assert_eq!(config.racks[0].clique.as_deref(), Some("uuid:1"));
    assert_eq!(config.racks[0].group.as_deref(), Some("row1"));
}

#[test]
fn toml_syntax_and_type_errors() {
    let msg = toml_err("trays_per_rack = 18\ngpus_per_tray =\n", Some(2), None);
    assert!(msg.contains("invalid string; expected"), "{msg}");
    let msg = toml_err("trays_per_rack = \"x\"\n", Some(1), None);
    assert!(msg.contains("u32") || msg.contains("integer"), "{msg}");
    toml_err("\n\ntrays_per_rack = -1\n", Some(3), None);
    let msg = toml_err(&format!("{ONE_RACK}nodes = \"x\"\n"), Some(4), None);
    assert!(msg.contains("duplicate"), "{msg}");
    let msg = toml_err("[[rack]]\nname = \"r1\"\nnodes = [\"a\"]\n", Some(3), None);
    assert!(msg.contains("string"), "{msg}");
    // Multi-line toml messages are joined into one line.
    let msg = toml_err("[policy\n", Some(1), None);
    assert!(!msg.contains('\n'), "{msg}");
}

#[test]
fn toml_unknown_keys_are_errors() {
    let msg = toml_err(&format!("tray_per_rack = 18\n{ONE_RACK}"), Some(1), None);
    assert!(msg.contains("tray_per_rack"), "{msg}");
    let msg = toml_err(
        &format!("[policy]\nprefer_degrade = true\n{ONE_RACK}"),
        Some(2),
        None,
    );
    assert!(msg.contains("prefer_degrade"), "{msg}");
    let msg = toml_err(&format!("{ONE_RACK}grup = \"row1\"\n"), Some(4), None);
    assert!(msg.contains("grup"), "{msg}");
    let msg = toml_err("[[racks]]\nname = \"r\"\nnodes = \"n1\"\n", Some(1), None);
    assert!(msg.contains("racks"), "{msg}");
}

#[test]
fn toml_bad_segment_placement() {
    let msg = toml_err(
        &format!("[policy]\nsegment_placement = \"fast\"\n{ONE_RACK}"),
        Some(2),
        None,
    );
    assert!(msg.contains("fast") && msg.contains("best-fit"), "{msg}");
    let msg = toml_err(
        &format!("[policy]\n\nmulti_rack = \"fewest\"\n{ONE_RACK}"),
        Some(3),
        None,
    );
    assert!(
        msg.contains("fewest-racks") && msg.contains("start-now") && msg.contains("balanced"),
        "{msg}"
    );
}

#[test]
fn toml_multi_rack_balanced() {
    let cfg = parse_toml(
        &format!("[policy]\nmulti_rack = \"balanced\"\n{ONE_RACK}"),
        file(),
    )
    .unwrap();
    assert_eq!(cfg.policy.multi_rack, MultiRack::Balanced);
    assert_eq!(cfg.policy.multi_rack.as_str(), "balanced");
}

#[test]
fn toml_flat_partitions() {
    let config = toml_ok(&format!(
        "[policy]\nflat_partitions = [\"admin\"]\n{ONE_RACK}"
    ));
    assert!(config.policy.is_flat("admin"));
    assert!(!config.policy.is_flat("Admin") && !config.policy.is_flat("gpu"));
    assert!(toml_ok(ONE_RACK).policy.flat_partitions.is_empty());
    let field = Some("policy.flat_partitions");
    let msg = toml_err(
        &format!("[policy]\nflat_partitions = [\n  \"admin\",\n  \"\",\n]\n{ONE_RACK}"),
        Some(4),
        field,
    );
    assert!(msg.contains("empty"), "{msg}");
    let msg = toml_err(
        &format!("[policy]\nflat_partitions = [\"admin,debug\"]\n{ONE_RACK}"),
        Some(2),
        field,
    );
    assert!(msg.contains("`,`"), "{msg}");
    toml_err(
        &format!("[policy]\nflat_partitions = [\"ad min\"]\n{ONE_RACK}"),
        Some(2),
        field,
    );
    let msg = toml_err(
        &format!("[policy]\nflat_partitions = [\"admin\",\n\"admin\"]\n{ONE_RACK}"),
        Some(3),
        field,
    );
    assert!(msg.contains("already listed at line 2"), "{msg}");
    // Not a list of strings: the type error of the first read, with its line.
    let msg = toml_err(
        &format!("[policy]\n\nflat_partitions = \"admin\"\n{ONE_RACK}"),
        Some(3),
        None,
    );
    assert!(msg.contains("sequence") || msg.contains("array"), "{msg}");
}

/// `[policy] switches`: "off" (the default) or `{ count = N, wait_minutes = W }`; anything
/// else is an error on its line.
#[test]
fn toml_switches() {
    assert_eq!(toml_ok(ONE_RACK).policy.switches, Switches::Off);
    let policy =
        |value: &str| format!("[policy]\nlog_decisions = true\nswitches = {value}\n{ONE_RACK}");
    assert_eq!(toml_ok(&policy("\"off\"")).policy.switches, Switches::Off);
    assert_eq!(
        toml_ok(&policy("{ count = 1, wait_minutes = 30 }"))
            .policy
            .switches,
        Switches::Limit {
            count: 1,
            wait_minutes: 30
        }
    );
    let table = format!("[policy.switches]\ncount = 3\nwait_minutes = 0\n{ONE_RACK}");
    assert_eq!(
        toml_ok(&table).policy.switches,
        Switches::Limit {
            count: 3,
            wait_minutes: 0
        }
    );
    for (value, says) in [
        (
            "\"on\"",
            "invalid value: string \"on\", expected \"off\" or { count = N, wait_minutes = W }",
        ),
        (
            "1",
            "invalid type: integer `1`, expected \"off\" or { count = N, wait_minutes = W }",
        ),
        (
            "{ count = 0, wait_minutes = 5 }",
            "switches: count must be at least 1 (\"off\" means no limit)",
        ),
        ("{ count = 1 }", "missing field `wait_minutes`"),
        (
            "{ count = 1, wait = 5 }",
            "unknown field `wait`, expected `count` or `wait_minutes`",
        ),
        (
            "{ count = -1, wait_minutes = 5 }",
            "invalid value: integer `-1`, expected u32",
        ),
    ] {
        let msg = toml_err(&policy(value), Some(3), None);
        assert!(msg.contains(says), "{value}: {msg}");
    }
    let msg = toml_err(
        &format!("[policy.switches]\ncount = 0\nwait_minutes = 5\n{ONE_RACK}"),
        Some(1),
        None,
    );
    assert!(msg.contains("count must be at least 1"), "{msg}");
}

#[test]
fn toml_missing_rack_field() {
    let err = parse_toml("[[rack]]\nname = \"r1\"\n", file()).unwrap_err();
    assert!(err.line.is_some(), "{err}");
    assert!(err.to_string().contains("nodes"), "{err}");
}

#[test]
fn toml_counts_out_of_range() {
    for (text, field) in [
        ("trays_per_rack = 0\n", "trays_per_rack"),
        ("trays_per_rack = 1025\n", "trays_per_rack"),
        ("gpus_per_tray = 0\n", "gpus_per_tray"),
        ("gpus_per_tray = 4096\n", "gpus_per_tray"),
    ] {
        let msg = toml_err(&format!("\n{text}{ONE_RACK}"), Some(2), Some(field));
        assert!(msg.contains("between 1 and 1024"), "{msg}");
    }
}

#[test]
fn toml_no_racks() {
    let msg = toml_err("trays_per_rack = 18\n", None, None);
    assert_eq!(msg, "/etc/slurm/topology.toml: no [[rack]] defined");
    toml_err("", None, None);
}

fn racks(extra: &str) -> String {
    format!("[[rack]]\nname = \"rack1\"\nnodes = \"gb[001-018]\"\n\n[[rack]]\n{extra}")
}

#[test]
fn toml_rack_name_errors() {
    let msg = toml_err(
        &racks("name = \"\"\nnodes = \"x1\"\n"),
        Some(6),
        Some("rack[2].name"),
    );
    assert!(msg.contains("empty"), "{msg}");
    let msg = toml_err(
        &racks("name = \"rack 2\"\nnodes = \"x1\"\n"),
        Some(6),
        Some("rack[2].name"),
    );
    assert!(msg.contains("`rack 2`") && msg.contains("` `"), "{msg}");
    toml_err(
        &racks("name = \"r/2\"\nnodes = \"x1\"\n"),
        Some(6),
        Some("rack[2].name"),
    );
    toml_err(
        &racks("name = \"rück\"\nnodes = \"x1\"\n"),
        Some(6),
        Some("rack[2].name"),
    );
    let msg = toml_err(
        &racks("name = \"rack1\"\nnodes = \"x1\"\n"),
        Some(6),
        Some("rack[2].name"),
    );
    assert!(msg.contains("rack1 is already used at line 2"), "{msg}");
}

#[test]
fn toml_rack_node_errors() {
    let msg = toml_err(
        &racks("name = \"rack2\"\nnodes = \"gb[018-019]\"\n"),
        Some(7),
        Some("rack[2].nodes"),
    );
    assert_eq!(
        msg,
        "/etc/slurm/topology.toml:7: rack[2].nodes: node gb018 is already in rack rack1 (line 3)"
    );
    let msg = toml_err(
        &racks("name = \"rack2\"\nnodes = \"gb[019-020],gb019\"\n"),
        Some(7),
        Some("rack[2].nodes"),
    );
    assert!(
        msg.contains("node gb019 is listed twice in rack rack2"),
        "{msg}"
    );
    let msg = toml_err(
        &racks("name = \"rack2\"\nnodes = \" , \"\n"),
        Some(7),
        Some("rack[2].nodes"),
    );
    assert!(msg.contains("rack rack2 lists no nodes"), "{msg}");
    let msg = toml_err(
        &racks("name = \"rack2\"\nnodes = \"gb[019-037]\"\n"),
        Some(7),
        Some("rack[2].nodes"),
    );
    assert!(
        msg.contains("lists 19 nodes, more than trays_per_rack (18)"),
        "{msg}"
    );
    let msg = toml_err(
        &racks("name = \"rack2\"\nnodes = \"gb[019-036\"\n"),
        Some(7),
        Some("rack[2].nodes"),
    );
    assert!(
        msg.contains("bad hostlist") && msg.contains("gb[019-036"),
        "{msg}"
    );
    let msg = toml_err(
        &racks("name = \"rack2\"\nnodes = \"gb[36-19]\"\n"),
        Some(7),
        Some("rack[2].nodes"),
    );
    assert!(msg.contains("bad range `36-19`"), "{msg}");
    let msg = toml_err(
        &racks("name = \"rack2\"\nnodes = \"gb[1-99999999999]\"\n"),
        Some(7),
        Some("rack[2].nodes"),
    );
    assert!(msg.contains("more than 1000000 names"), "{msg}");
}

#[test]
fn error_display_omits_missing_parts() {
    let mut err = ConfigError {
        file: PathBuf::from("/etc/slurm/topology.toml"),
        line: Some(12),
        field: Some("rack[2].nodes".into()),
        message: "boom".into(),
    };
    assert_eq!(
        err.to_string(),
        "/etc/slurm/topology.toml:12: rack[2].nodes: boom"
    );
    err.field = None;
    assert_eq!(err.to_string(), "/etc/slurm/topology.toml:12: boom");
    err.line = None;
    assert_eq!(err.to_string(), "/etc/slurm/topology.toml: boom");
    err.field = Some("f".into());
    assert_eq!(err.to_string(), "/etc/slurm/topology.toml: f: boom");
    err.file = PathBuf::new();
    assert_eq!(err.to_string(), "f: boom");
    err.line = Some(3);
    assert_eq!(err.to_string(), "line 3: f: boom");
}

const BLOCK_CONF: &str = "\
# topology/block style
BlockName=rack1 Nodes=gb[001-018]   # first rack
blockname=rack2 nodes=gb[019-034]

BLOCKNAME=\"rack3\" \\
   NODES=\"gb[035-036]\"
";

#[test]
fn block_conf_fallback() {
    let path = Path::new("/etc/slurm/topology.conf");
    let config = parse_block_conf(BLOCK_CONF, path).unwrap();
    assert_eq!(config.trays_per_rack, 18);
    assert_eq!(config.gpus_per_tray, 4);
    assert_eq!(config.policy, Policy::default());
    assert_eq!(config.source, path);
    let sizes: Vec<_> = config
        .racks
        .iter()
        .map(|r| (r.name.as_str(), r.nodes.len()))
        .collect();
    assert_eq!(sizes, [("rack1", 18), ("rack2", 16), ("rack3", 2)]);
    assert_eq!(config.racks[2].nodes, ["gb035", "gb036"]);

    let with_sizes = parse_block_conf(&format!("BlockSizes=18,36,72\n{BLOCK_CONF}"), path).unwrap();
    assert_eq!(with_sizes.racks, config.racks);

    // Without BlockSizes a larger block is allowed and sets trays_per_rack.
    let big =
        parse_block_conf("BlockName=b1 Nodes=n[1-20]\nBlockName=b2 Nodes=m1\n", path).unwrap();
    assert_eq!(big.trays_per_rack, 20);
    assert_eq!(big.to_toml().lines().next(), Some("trays_per_rack = 20"));
}

#[test]
fn block_conf_errors() {
    let msg = conf_err(
        "BlockName=b1 Nodes=n1\nSwitchName=s1 Nodes=n[1-4]\n",
        Some(2),
        Some("SwitchName"),
    );
    assert!(msg.ends_with(
        "topology.conf describes a tree (SwitchName); topology/nvl72 reads BlockName= lines or topology.toml"
    ));
    let msg = conf_err(
        "BlockName=b1 Nodes=n1 LinkSpeed=1\n",
        Some(1),
        Some("LinkSpeed"),
    );
    assert!(msg.contains("unknown key `LinkSpeed`"), "{msg}");
    conf_err("\nFoo=bar\n", Some(2), Some("Foo"));
    conf_err("BlockSizes=4 Nodes=n1\n", Some(1), Some("Nodes"));
    let msg = conf_err("BlockName=b1 n1\n", Some(1), None);
    assert!(msg.contains("`n1`"), "{msg}");
    let msg = conf_err("BlockName=b1\n", Some(1), Some("BlockName"));
    assert!(msg.contains("no Nodes="), "{msg}");
    conf_err("BlockName=b1 Nodes=n1 Nodes=n2\n", Some(1), Some("Nodes"));
    let msg = conf_err(
        "BlockSizes=4\nBlockSizes=8\nBlockName=b1 Nodes=n1\n",
        Some(2),
        Some("BlockSizes"),
    );
    assert!(msg.contains("line 1"), "{msg}");
    conf_err(
        "BlockSizes=four\nBlockName=b1 Nodes=n1\n",
        Some(1),
        Some("BlockSizes"),
    );
    conf_err(
        "BlockSizes=18,x\nBlockName=b1 Nodes=n1\n",
        Some(1),
        Some("BlockSizes"),
    );
    conf_err(
        "BlockSizes=0\nBlockName=b1 Nodes=n1\n",
        Some(1),
        Some("BlockSizes"),
    );
    let msg = conf_err(
        "BlockSizes=2\nBlockName=b1 Nodes=n[1-3]\n",
        Some(2),
        Some("Nodes"),
    );
    assert!(
        msg.contains("lists 3 nodes, more than the first BlockSizes value (2)"),
        "{msg}"
    );
    let msg = conf_err("BlockName=b1 Nodes=n[1-1025]\n", Some(1), Some("Nodes"));
    assert!(msg.contains("1024"), "{msg}");
    let msg = conf_err(
        "BlockName=b1 Nodes=n[1-4]\n\nBlockName=b2 Nodes=n4\n",
        Some(3),
        Some("Nodes"),
    );
    assert!(
        msg.contains("node n4 is already in rack b1 (line 1)"),
        "{msg}"
    );
    let msg = conf_err(
        "BlockName=b1 Nodes=n1\nBlockName=b1 Nodes=n2\n",
        Some(2),
        Some("BlockName"),
    );
    assert!(msg.contains("already used at line 1"), "{msg}");
    conf_err("BlockName=b/1 Nodes=n1\n", Some(1), Some("BlockName"));
    conf_err("BlockName=b1 Nodes=n[1-\n", Some(1), Some("Nodes"));
    conf_err("BlockName=b1 Nodes=\n", Some(1), Some("Nodes"));
    let msg = conf_err("# nothing\nBlockSizes=18\n", None, None);
    assert!(msg.contains("no BlockName= lines"), "{msg}");
}

#[test]
fn to_toml_round_trips() {
    let mut config = toml_ok(EXAMPLE);
    config.gpus_per_tray = 8;
    config.policy = Policy {
        segment_placement: SegmentPlacement::Consolidate,
        multi_rack: MultiRack::StartNow,
        prefer_degraded: false,
        prefer_same_group: false,
        log_decisions: true,
        end_time: EndTime::TieBreak,
        end_time_hours_per_tray: 3,
        flat_partitions: vec!["admin".into(), "a\"b\\".into()],
        switches: Switches::Limit {
            count: 1,
            wait_minutes: 0,
        },
        piece_multiple: 1,
        prefer_piece_multiple: 1,
        preemption_cost: PreemptionCost::Jobs,
    };
    // Order that compress would change, odd padding, and text needing escapes.
    config.racks[1].nodes = ["gb020", "gb019", "n9", "n10", "n08"]
        .map(String::from)
        .to_vec();
    config.racks[2].clique = Some("a \"quoted\" \\ 'label'\n".into());
    config.racks[3].group = None;
    let text = config.to_toml();
    assert!(text.contains("nodes = \"gb[001-018]\""), "{text}");
    let back = parse_toml(&text, Path::new("x.toml")).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        back,
        Config {
            source: "x.toml".into(),
            ..config.clone()
        }
    );
    // The last good copy keeps every key this build writes (its reader drops unknown ones).
    let (kept, dropped) = last_good::parse(&last_good::render(&config), Path::new("x.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (kept.policy, dropped),
        (config.policy, Vec::<String>::new())
    );

    let conf = parse_block_conf(BLOCK_CONF, Path::new("t.conf")).unwrap();
    let back = parse_toml(&conf.to_toml(), Path::new("t.conf")).unwrap();
    assert_eq!(back, conf);
}

fn temp_dir() -> PathBuf {
    crate::testkit::temp_dir("config")
}

#[test]
fn load_dir_prefers_toml_then_conf() {
    let dir = temp_dir();
    let err = load_dir(&dir).unwrap_err();
    assert_eq!(
        err.message,
        format!("no topology.toml or topology.conf in {}", dir.display())
    );

    std::fs::write(dir.join("topology.conf"), "BlockName=b1 Nodes=n[1-2]\n").unwrap();
    let config = load_dir(&dir).unwrap();
    assert_eq!(config.racks[0].name, "b1");
    assert_eq!(config.source, dir.join("topology.conf"));

    std::fs::write(dir.join("topology.toml"), ONE_RACK).unwrap();
    let config = load_dir(&dir).unwrap();
    assert_eq!(config.racks[0].name, "r1");
    assert_eq!(config.source, dir.join("topology.toml"));

    std::fs::write(dir.join("topology.toml"), "[[rack]]\nname = \"r1\"\n").unwrap();
    let err = load_dir(&dir).unwrap_err();
    assert_eq!(err.file, dir.join("topology.toml"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn load_file_by_extension_and_io_errors() {
    let dir = temp_dir();
    let upper = dir.join("racks.TOML");
    std::fs::write(&upper, ONE_RACK).unwrap();
    assert_eq!(load_file(&upper).unwrap().racks.len(), 1);
    let other = dir.join("racks.txt");
    std::fs::write(&other, "BlockName=b1 Nodes=n1\n").unwrap();
    assert_eq!(load_file(&other).unwrap().racks[0].name, "b1");

    let missing = dir.join("missing.toml");
    let err = load_file(&missing).unwrap_err();
    assert_eq!(err.file, missing);
    assert!(err
        .to_string()
        .starts_with(&format!("{}: cannot read file", missing.display())));
    let binary = dir.join("bad.toml");
    std::fs::write(&binary, [0xff, 0xfe, b'\n']).unwrap();
    assert!(load_file(&binary).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

proptest! {
    #[test]
    fn parsers_never_panic(text in "[a-zA-Z0-9_\\[\\]=\",.#\\\\ \n-]{0,80}") {
        let _ = parse_toml(&text, file());
        let _ = parse_block_conf(&text, file());
    }
}

/// The simulator's `--policy-file`: a topology.toml or only its `[policy]` table, checked as
/// the plugin checks the table (unknown keys, flat partition names), racks not read.
#[test]
fn a_policy_file_is_checked_as_the_plugin_checks_its_policy() {
    let policy = parse_policy(
        "[policy]\nsegment_placement = \"spread\"\nprefer_degraded = false\n",
        file(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(policy.segment_placement, SegmentPlacement::Spread);
    assert!(!policy.prefer_degraded);
    let whole = parse_policy(
        &format!("[policy]\nlog_decisions = true\n{ONE_RACK}"),
        file(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(whole.log_decisions);
    assert_eq!(parse_policy("", file()).unwrap(), Policy::default());

    let typo = parse_policy("[policy]\nsegment_placment = \"spread\"\n", file()).unwrap_err();
    let shown = check_err(&typo, "/etc/slurm/topology.toml", Some(2), None);
    assert!(shown.contains("segment_placment"), "{shown}");
    let flat = parse_policy("[policy]\nflat_partitions = [\"admin,debug\"]\n", file()).unwrap_err();
    let shown = check_err(
        &flat,
        "/etc/slurm/topology.toml",
        Some(2),
        Some("policy.flat_partitions"),
    );
    assert!(shown.contains("`,`"), "{shown}");
}

#[test]
fn piece_multiple_is_read_round_trips_and_is_checked_with_its_line() {
    let rack = "[[rack]]\nname = \"r\"\nnodes = \"gb[001-018]\"\n";
    let config = toml_ok(&format!("[policy]\npiece_multiple = 8\n{rack}"));
    assert_eq!(config.policy.piece_multiple, 8);
    let text = config.to_toml();
    assert!(text.contains("piece_multiple = 8\n"), "{text}");
    assert_eq!(
        parse_toml(&text, Path::new("x.toml")).unwrap().policy,
        config.policy
    );
    // The default is not written, so a last good copy stays readable by older builds.
    assert!(!toml_ok(rack).to_toml().contains("piece_multiple"));
    for (policy, want) in [
        (
            "piece_multiple = 0",
            "t.toml:2: policy.piece_multiple: must be between 1 and 18, got 0",
        ),
        (
            "piece_multiple = 19",
            "t.toml:2: policy.piece_multiple: must be between 1 and 18, got 19",
        ),
        (
            "multi_rack = \"balanced\"\npiece_multiple = 2",
            "t.toml:3: policy.piece_multiple: piece_multiple = 2 shapes the pieces of \
             multi_rack = \"fewest-racks\", not of multi_rack = \"balanced\"",
        ),
    ] {
        let text = format!("[policy]\n{policy}\n{rack}");
        let err = parse_toml(&text, Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{err}");
    }
    let err = parse_policy("[policy]\npiece_multiple = 40\n", Path::new("p.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("p.toml:2: policy.piece_multiple"), "{err}");
}

#[test]
fn one_rack_first_is_the_default_and_only_other_rules_are_written_out() {
    let config = toml_ok(ONE_RACK);
    assert_eq!(
        config.policy.segment_placement,
        SegmentPlacement::OneRackFirst
    );
    // A last good copy an older build must read: it knows the key, not this value.
    assert!(!config.to_toml().contains("segment_placement"));
    let config = toml_ok(&format!(
        "[policy]\nsegment_placement = \"best-fit\"\n{ONE_RACK}"
    ));
    let text = config.to_toml();
    assert!(
        text.contains("segment_placement = \"best-fit\"\n"),
        "{text}"
    );
    assert_eq!(toml_ok(&text).policy, config.policy);
}

#[test]
fn prefer_piece_multiple_defaults_to_8_round_trips_and_is_checked_with_its_line() {
    let rack = "[[rack]]\nname = \"r\"\nnodes = \"gb[001-018]\"\n";
    assert_eq!(toml_ok(rack).policy.prefer_piece_multiple, 8);
    assert!(!toml_ok(rack).to_toml().contains("prefer_piece_multiple"));
    let config = toml_ok(&format!("[policy]\nprefer_piece_multiple = 1\n{rack}"));
    assert_eq!(config.policy.prefer_piece_multiple, 1);
    let text = config.to_toml();
    assert!(text.contains("prefer_piece_multiple = 1\n"), "{text}");
    assert_eq!(
        parse_toml(&text, Path::new("x.toml")).unwrap().policy,
        config.policy
    );
    // Under another multi_rack rule the default says nothing and is accepted.
    toml_ok(&format!("[policy]\nmulti_rack = \"balanced\"\n{rack}"));
    for (policy, want) in [
        (
            "prefer_piece_multiple = 0",
            "t.toml:2: policy.prefer_piece_multiple: must be between 1 and 18, got 0",
        ),
        (
            "multi_rack = \"start-now\"\nprefer_piece_multiple = 4",
            "t.toml:3: policy.prefer_piece_multiple: prefer_piece_multiple = 4 shapes the \
             pieces of multi_rack = \"fewest-racks\", not of multi_rack = \"start-now\"",
        ),
        (
            "piece_multiple = 4\nprefer_piece_multiple = 6",
            "t.toml:3: policy.prefer_piece_multiple: prefer_piece_multiple = 6 would cut \
             between the groups of piece_multiple = 4: use a multiple of 4, or 1",
        ),
    ] {
        let text = format!("[policy]\n{policy}\n{rack}");
        let err = parse_toml(&text, Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{err}");
    }
}
