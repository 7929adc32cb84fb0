use std::path::{Path, PathBuf};

use super::*;
use nvl72_engine::config::parse_toml;

/// The fixture cluster's two NVLink domains (tests/fixtures/nvidia-smi/README.md).
const A: &str = "5b2e7a3c-1d4f-4e8a-9c6b-0f1e2d3c4b5a";
const B: &str = "c41d9e27-8b3a-4f65-a0d2-7e19b5c3f804";
const BUSES: [&str; 4] = [
    "00000008:01:00.0",
    "00000009:01:00.0",
    "00000018:01:00.0",
    "00000019:01:00.0",
];

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nvidia-smi")
        .join(path)
}

fn gpu(bus: &str, state: &str, status: &str, uuid: &str, id: &str) -> GpuFabric {
    let field = |s: &str| (!s.is_empty()).then(|| s.to_string());
    GpuFabric {
        bus_id: bus.to_string(),
        state: field(state),
        status: field(status),
        cluster_uuid: field(uuid),
        clique_id: field(id),
    }
}

fn ready(bus: &str, uuid: &str, id: &str) -> GpuFabric {
    gpu(bus, "Completed", "Success", uuid, id)
}

fn tray(node: &str, gpus: Vec<GpuFabric>) -> NodeReport {
    NodeReport {
        node: node.to_string(),
        answer: Answer::Gpus(gpus),
    }
}

/// A tray whose four GPUs all report `uuid.id`.
fn healthy(node: &str, uuid: &str, id: &str) -> NodeReport {
    tray(node, BUSES.iter().map(|b| ready(b, uuid, id)).collect())
}

/// Healthy trays for every node of `hostlist`.
fn rack(hostlist: &str, uuid: &str, id: &str) -> Vec<NodeReport> {
    let nodes = nvl72_engine::hostlist::expand(hostlist).unwrap();
    nodes.iter().map(|n| healthy(n, uuid, id)).collect()
}

/// (name, nodes as hostlist, clique) per rack.
fn racks(d: &Discovery) -> Vec<(String, String, String)> {
    d.racks()
        .iter()
        .map(|r| {
            let nodes = nvl72_engine::hostlist::compress(&r.nodes);
            (r.name.clone(), nodes, r.clique.to_string())
        })
        .collect()
}

fn findings(d: &Discovery) -> Vec<String> {
    d.findings().iter().map(Finding::to_string).collect()
}

/// Renders, checks the text parses back to exactly `to_config`, returns the text.
fn round_trip(d: &Discovery) -> String {
    let text = d.to_toml().expect("has racks");
    let path = Path::new("/etc/slurm/topology.toml");
    let parsed = parse_toml(&text, path).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut expected = d.to_config().unwrap();
    expected.source = path.to_path_buf();
    assert_eq!(parsed, expected, "{text}");
    text
}

fn temp_dir() -> PathBuf {
    nvl72_engine::testkit::temp_dir("discover")
}

// ---- parsing nvidia-smi -q ---------------------------------------------------------------

#[test]
fn parses_a_full_gb200_tray() {
    let text = std::fs::read_to_string(fixture("nodes/gb001")).unwrap();
    let gpus = parse_nvidia_smi(&text);
    let expected: Vec<GpuFabric> = BUSES.iter().map(|b| ready(b, A, "32766")).collect();
    assert_eq!(gpus, expected);
    assert!(gpus.iter().all(GpuFabric::is_ready));
    assert_eq!(gpus[0].clique().unwrap().to_string(), format!("{A}.32766"));
}

#[test]
fn fabric_fields_come_only_from_the_fabric_section_of_each_gpu() {
    // `State`, `Status` and `CliqueId` lines outside Fabric (or below it) must not count.
    let text = "\
Attached GPUs                             : 2
GPU 00000008:01:00.0
    State                                 : Decoy
    Inforom Version
        State                             : Decoy
        CliqueId                          : 999
    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 7
        ClusterUUID                       : 5B2E7A3C-1D4F-4E8A-9C6B-0F1E2D3C4B5A
        Health
            Status                        : Decoy
            Bandwidth                     : Full
    Clocks
        State                             : Decoy
GPU 00000009:01:00.0
    Fabric
        State                             : In Progress
";
    let gpus = parse_nvidia_smi(text);
    assert_eq!(
        gpus,
        vec![
            gpu(
                BUSES[0],
                "Completed",
                "Success",
                "5B2E7A3C-1D4F-4E8A-9C6B-0F1E2D3C4B5A",
                "7"
            ),
            gpu(BUSES[1], "In Progress", "", "", ""),
        ]
    );
    // The clique is normalised to lower case, as GFD's label has it.
    assert_eq!(gpus[0].clique().unwrap().to_string(), format!("{A}.7"));
}

#[test]
fn tolerates_crlf_missing_fields_and_gpus_without_fabric_section() {
    let text = "GPU 00000008:01:00.0\r\n    Product Name : NVIDIA H100\r\n\r\n\
                GPU 00000009:01:00.0\r\n    Fabric\r\n        State : Completed\r\n\
                        Status :\r\n";
    assert_eq!(
        parse_nvidia_smi(text),
        vec![
            gpu(BUSES[0], "", "", "", ""),
            gpu(BUSES[1], "Completed", "", "", ""),
        ]
    );
    assert_eq!(parse_nvidia_smi(""), vec![]);
    assert_eq!(parse_nvidia_smi("No devices were found\n"), vec![]);
}

#[test]
fn reads_grep_filtered_output_with_separators() {
    // nvidia-smi -q | grep -A4 -E '^GPU |^    Fabric$'
    let text = format!(
        "GPU {}\n    Product Name : NVIDIA GB200\n--\n    Fabric\n        State : Completed\n\
         \x20       Status : Success\n        CliqueId : 32766\n        ClusterUUID : {A}\n--\n\
         GPU {}\n--\n    Fabric\n        State : Completed\n        Status : Success\n\
         \x20       CliqueId : 32766\n        ClusterUUID : {A}\n",
        BUSES[0], BUSES[1]
    );
    let expected: Vec<GpuFabric> = BUSES[..2].iter().map(|b| ready(b, A, "32766")).collect();
    assert_eq!(parse_nvidia_smi(&text), expected);
}

// ---- reading many nodes ------------------------------------------------------------------

#[test]
fn from_dir_reads_one_file_per_node_and_agrees_with_the_pdsh_stream() {
    let reports = from_dir(&fixture("nodes")).unwrap();
    let names: Vec<&str> = reports.iter().map(|r| r.node.as_str()).collect();
    // gb001 has no extension; .txt, .log and .out are stripped.
    assert_eq!(names, ["gb001", "gb005", "gb012", "gb031"]);
    let stream = from_stream(&std::fs::read_to_string(fixture("pdsh-fabric.txt")).unwrap());
    for report in &reports {
        let same = stream.iter().find(|r| r.node == report.node).unwrap();
        assert_eq!(report, same);
    }
    let Answer::Gpus(gb005) = &reports[1].answer else {
        panic!("{:?}", reports[1])
    };
    assert_eq!(gb005[2], gpu(BUSES[2], "In Progress", "N/A", "N/A", "N/A"));
}

#[test]
fn from_dir_skips_hidden_files_and_directories_and_rejects_two_files_for_one_node() {
    let dir = temp_dir();
    let gb001 = format!("GPU {}\n    Fabric\n        State : Completed\n", BUSES[0]);
    std::fs::write(dir.join("gb001.txt"), &gb001).unwrap();
    std::fs::write(dir.join(".gb002.txt.swp"), "x").unwrap();
    std::fs::write(dir.join("gb001.txt~"), "x").unwrap();
    std::fs::create_dir(dir.join("old")).unwrap();
    std::fs::write(dir.join("gb10.cluster.log"), "").unwrap();
    let reports = from_dir(&dir).unwrap();
    let names: Vec<&str> = reports.iter().map(|r| r.node.as_str()).collect();
    // Only known extensions are stripped: node names may contain dots.
    assert_eq!(names, ["gb001", "gb10.cluster"]);

    std::fs::write(dir.join("gb001.log"), &gb001).unwrap();
    let err = from_dir(&dir).unwrap_err();
    assert!(
        matches!(&err, DiscoverError::DuplicateNode { node, .. } if node == "gb001"),
        "{err}"
    );
    assert!(err.to_string().contains("are both for node gb001"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();

    let err = from_dir(&dir).unwrap_err();
    assert!(err.to_string().starts_with("cannot read "), "{err}");
}

#[test]
fn the_fixture_cluster_from_the_pdsh_stream() {
    let text = std::fs::read_to_string(fixture("pdsh-fabric.txt")).unwrap();
    let reports = from_stream(&text);
    assert_eq!(reports.len(), 36);
    assert_eq!(reports[0].node, "gb001");
    assert_eq!(reports[35].node, "gb036");
    let d = discover(&reports, 18, 4);
    assert_eq!(
        racks(&d),
        [
            ("rack1".into(), "gb[001-018]".into(), format!("{A}.32766")),
            ("rack2".into(), "gb[019-028]".into(), format!("{B}.1")),
            ("rack3".into(), "gb[029-036]".into(), format!("{B}.2")),
        ]
    );
    assert_eq!(
        findings(&d),
        [
            "error: gb005: NVLink fabric not ready on 1 of 4 GPUs: \
             00000018:01:00.0 (State In Progress, Status N/A)"
                .to_string(),
            format!(
                "error: gb012: GPUs in different NVLink cliques: {A}.32766 (00000008:01:00.0, \
                 00000009:01:00.0, 00000018:01:00.0), {A}.1 (00000019:01:00.0); \
                 put in rack1 with the majority"
            ),
            "error: gb031: NVLink fabric not ready on 1 of 4 GPUs: \
             00000009:01:00.0 (State Completed, Status Timeout)"
                .to_string(),
            format!("warning: rack2 (clique {B}.1) has 10 nodes, expected 18"),
            format!("warning: rack3 (clique {B}.2) has 8 nodes, expected 18"),
            format!(
                "warning: rack2, rack3 are one NVLink domain (ClusterUUID {B}) split into \
                 cliques 1, 2; each is a rack of its own"
            ),
        ]
    );
    assert!(d.has_errors());
    let text = round_trip(&d);
    assert!(
        text.contains("# 3 racks, 36 nodes; 6 findings:\n"),
        "{text}"
    );
    assert!(
        text.contains("\n# error: gb005: NVLink fabric not ready"),
        "{text}"
    );
    assert!(text.contains("\n# warning: rack2 (clique "), "{text}");
}

#[test]
fn stream_demultiplexes_hosts_and_keeps_tool_errors() {
    let text = format!(
        "gb002: GPU {bus}\n\
         gb001: GPU {bus}\n\
         gb002:     Fabric\n\
         gb001:     Fabric\n\
         gb001:         State : Completed\n\
         gb002:         State : In Progress\n\
         pdsh@login01: gb003: ssh exited with exit code 255\n\
         clush: gb004: exited with exit code 1\n\
         pdsh@login01: gb001: exited with exit code 1\n\
         ==============NVSMI LOG==============\n\
         GPU 00000019:01:00.0\n\
         \x20   Timestamp : Mon Jun  2 09:14:05 2025\n",
        bus = BUSES[0]
    );
    let reports = from_stream(&text);
    assert_eq!(
        reports,
        vec![
            tray("gb001", vec![gpu(BUSES[0], "Completed", "", "", "")]),
            tray("gb002", vec![gpu(BUSES[0], "In Progress", "", "", "")]),
            NodeReport {
                node: "gb003".into(),
                answer: Answer::NoAnswer("ssh exited with exit code 255".into()),
            },
            NodeReport {
                node: "gb004".into(),
                answer: Answer::NoAnswer("exited with exit code 1".into()),
            },
        ]
    );
    let d = discover(&reports, 18, 4);
    assert_eq!(
        findings(&d),
        [
            "error: gb001: NVLink fabric not ready on 1 of 1 GPUs: 00000008:01:00.0 (State \
             Completed, Status missing)",
            // The same finding for several nodes is one, at the first node's place.
            "warning: gb[001-002]: left out: no NVLink clique reported",
            "error: gb002: NVLink fabric not ready on 1 of 1 GPUs: 00000008:01:00.0 (State In \
             Progress, Status missing)",
            "warning: gb003: left out: no answer (ssh exited with exit code 255)",
            "warning: gb004: left out: no answer (exited with exit code 1)",
        ]
    );
}

#[test]
fn features_in_both_spellings_across_partitions_and_hostlists() {
    let text = format!(
        "gb001 clique={A}.32766,gpu,gb200\n\
         gb002 nvl_clique_{A}.32766\n\
         gb001 clique={A}.32766,gpu,gb200\n\
         gb[003-004] gpu,clique={A}.32766\n\
         cpu01 (null)\n\
         cpu02 amd\n"
    );
    let reports = from_features(&text);
    let names: Vec<&str> = reports.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(
        names,
        ["cpu01", "cpu02", "gb001", "gb002", "gb003", "gb004"]
    );
    assert_eq!(
        reports[2].answer,
        Answer::Features(vec![format!("{A}.32766")])
    );
    let d = discover(&reports, 4, 4);
    assert_eq!(
        racks(&d),
        [("rack1".into(), "gb[001-004]".into(), format!("{A}.32766"))]
    );
    assert_eq!(
        findings(&d),
        ["warning: cpu[01-02]: left out: no NVLink clique reported"]
    );
    // A header line from `sinfo` without -h is skipped.
    assert_eq!(from_features("NODELIST AVAIL_FEATURES\n"), vec![]);
}

#[test]
fn conflicting_and_malformed_clique_features() {
    let text = format!(
        "gb001 clique={A}.1,clique={B}.1\n\
         gb002 clique={A}.1,clique=N/A.1\n\
         gb003 clique=00000000-0000-0000-0000-000000000000.0\n"
    );
    let d = discover(&from_features(&text), 1, 4);
    assert_eq!(
        racks(&d),
        [("rack1".into(), "gb002".into(), format!("{A}.1"))]
    );
    assert_eq!(
        findings(&d),
        [
            format!("error: gb001: clique features disagree: {A}.1, {B}.1; no majority; left out"),
            "error: gb002: clique feature `N/A.1` is not <ClusterUUID>.<CliqueId>; ignored"
                .to_string(),
            "error: gb003: clique feature `00000000-0000-0000-0000-000000000000.0` is not \
             <ClusterUUID>.<CliqueId>; ignored"
                .to_string(),
            "warning: gb003: left out: no NVLink clique reported".to_string(),
        ]
    );
}

// ---- findings ------------------------------------------------------------------------------

#[test]
fn gpus_whose_fabric_is_not_ready_are_errors_and_do_not_vote() {
    let mut nodes = rack("gb[01-04]", A, "1");
    nodes[1] = tray(
        "gb02",
        vec![
            ready(BUSES[0], A, "1"),
            gpu(BUSES[1], "Not Started", "N/A", "N/A", "N/A"),
            // A failed registration's clique is not trusted, even if it names one.
            gpu(BUSES[2], "Completed", "Insufficient Resources", B, "1"),
            gpu(BUSES[3], "In Progress", "", "", ""),
        ],
    );
    let all_down = BUSES
        .iter()
        .map(|b| gpu(b, "In Progress", "N/A", "N/A", "N/A"));
    nodes[3] = tray("gb04", all_down.collect());
    let d = discover(&nodes, 3, 4);
    assert_eq!(
        racks(&d),
        [("rack1".into(), "gb[01-03]".into(), format!("{A}.1"))]
    );
    assert_eq!(
        findings(&d),
        [
            "error: gb02: NVLink fabric not ready on 3 of 4 GPUs: 00000009:01:00.0 (State Not \
             Started, Status N/A), 00000018:01:00.0 (State Completed, Status Insufficient \
             Resources), 00000019:01:00.0 (State In Progress, Status missing)",
            "error: gb04: NVLink fabric not ready on 4 of 4 GPUs: 00000008:01:00.0 (State In \
             Progress, Status N/A), 00000009:01:00.0 (State In Progress, Status N/A), \
             00000018:01:00.0 (State In Progress, Status N/A), 00000019:01:00.0 (State In \
             Progress, Status N/A)",
            "warning: gb04: left out: no NVLink clique reported",
        ]
    );
}

#[test]
fn a_node_whose_gpus_disagree_joins_a_strict_majority_or_nothing() {
    let mut nodes = rack("gb[01-03]", A, "1");
    nodes.extend(rack("gb[04-06]", B, "1"));
    // 3 of 4 in A: goes to A's rack.
    nodes[1] = tray(
        "gb02",
        vec![
            ready(BUSES[0], A, "1"),
            ready(BUSES[1], B, "1"),
            ready(BUSES[2], A, "1"),
            ready(BUSES[3], A, "1"),
        ],
    );
    // 2 and 2: no majority.
    nodes[4] = tray(
        "gb05",
        vec![
            ready(BUSES[0], B, "1"),
            ready(BUSES[1], B, "1"),
            ready(BUSES[2], A, "1"),
            ready(BUSES[3], A, "1"),
        ],
    );
    let d = discover(&nodes, 3, 4);
    assert_eq!(
        racks(&d),
        [
            ("rack1".into(), "gb[01-03]".into(), format!("{A}.1")),
            ("rack2".into(), "gb[04,06]".into(), format!("{B}.1")),
        ]
    );
    assert_eq!(
        findings(&d),
        [
            format!(
                "error: gb02: GPUs in different NVLink cliques: {A}.1 (00000008:01:00.0, \
                 00000018:01:00.0, 00000019:01:00.0), {B}.1 (00000009:01:00.0); put in rack1 \
                 with the majority"
            ),
            format!(
                "error: gb05: GPUs in different NVLink cliques: {B}.1 (00000008:01:00.0, \
                 00000009:01:00.0), {A}.1 (00000018:01:00.0, 00000019:01:00.0); no majority; \
                 left out"
            ),
            format!("warning: rack2 (clique {B}.1) has 2 nodes, expected 3"),
        ]
    );
}

#[test]
fn nodes_without_a_clique_are_left_out_in_one_merged_finding() {
    let zero = "00000000-0000-0000-0000-000000000000";
    let mut nodes = rack("gb[1-2]", A, "32766");
    // HGX H100: fabric completed, but no multi-node domain.
    nodes.push(tray("hgx1", vec![ready(BUSES[0], zero, "0")]));
    nodes.push(tray("hgx2", vec![ready(BUSES[0], zero, "0")]));
    // PCIe GPU, older driver without Fabric section, node without GPUs.
    nodes.push(tray(
        "pcie1",
        vec![gpu(BUSES[0], "Not Supported", "", "N/A", "N/A")],
    ));
    nodes.push(tray("old1", vec![gpu(BUSES[0], "", "", "", "")]));
    nodes.push(tray("cpu1", vec![]));
    // A tray with a clique on some GPUs only is broken, not a non-NVL node.
    nodes[1] = tray(
        "gb2",
        vec![
            ready(BUSES[0], A, "32766"),
            ready(BUSES[1], A, "32766"),
            ready(BUSES[2], A, "32766"),
            gpu(BUSES[3], "N/A", "N/A", "N/A", "N/A"),
        ],
    );
    let d = discover(&nodes, 2, 4);
    assert_eq!(
        racks(&d),
        [("rack1".into(), "gb[1-2]".into(), format!("{A}.32766"))]
    );
    assert_eq!(
        findings(&d),
        [
            "warning: cpu1: left out: no GPU in the nvidia-smi output",
            "error: gb2: no NVLink clique on GPU 00000019:01:00.0 (State N/A, ClusterUUID N/A, \
             CliqueId N/A)",
            "warning: hgx[1-2],old1,pcie1: left out: no NVLink clique reported",
        ]
    );
}

#[test]
fn trays_with_another_gpu_count_are_warned_about() {
    let mut nodes = rack("gb[1-2]", A, "1");
    nodes[0] = tray("gb1", BUSES[..3].iter().map(|b| ready(b, A, "1")).collect());
    let d = discover(&nodes, 2, 4);
    assert_eq!(findings(&d), ["warning: gb1: reports 3 GPUs, expected 4"]);
}

#[test]
fn racks_of_unexpected_size() {
    let mut nodes = rack("gb[001-020]", A, "32766");
    nodes.extend(rack("gb[021-030]", B, "32766"));
    let d = discover(&nodes, 18, 4);
    assert_eq!(
        findings(&d),
        [
            format!(
                "error: rack1 (clique {A}.32766) has 20 nodes, more than trays_per_rack = 18; \
                 the file sets trays_per_rack to the largest rack so that it loads"
            ),
            format!("warning: rack2 (clique {B}.32766) has 10 nodes, expected 18"),
        ]
    );
    // Different ClusterUUIDs: two small racks, not a split domain.
    let config = d.to_config().unwrap();
    assert_eq!(config.trays_per_rack, 20);
    round_trip(&d);
}

#[test]
fn a_split_domain_is_two_racks_with_a_warning_only_when_all_parts_are_small() {
    let mut nodes = rack("gb[01-10]", A, "1");
    nodes.extend(rack("gb[11-18]", A, "2"));
    let d = discover(&nodes, 18, 4);
    assert_eq!(
        racks(&d),
        [
            ("rack1".into(), "gb[01-10]".into(), format!("{A}.1")),
            ("rack2".into(), "gb[11-18]".into(), format!("{A}.2")),
        ]
    );
    assert_eq!(
        findings(&d)[2],
        format!(
            "warning: rack1, rack2 are one NVLink domain (ClusterUUID {A}) split into cliques \
             1, 2; each is a rack of its own"
        )
    );
    round_trip(&d);

    // One full clique next to a small one of the same ClusterUUID: only the size warning.
    let mut nodes = rack("gb[01-18]", A, "1");
    nodes.extend(rack("gb[19-20]", A, "2"));
    let d = discover(&nodes, 18, 4);
    assert_eq!(
        findings(&d),
        [format!(
            "warning: rack2 (clique {A}.2) has 2 nodes, expected 18"
        )]
    );
}

#[test]
fn rack_names_follow_the_natural_order_of_first_nodes_whatever_the_input_order() {
    let mut nodes = rack("gb[10-11]", A, "1");
    nodes.extend(rack("gb[2-3]", B, "1"));
    nodes.extend(rack("ab7", B, "2"));
    let expected = [
        ("rack1".to_string(), "ab7".to_string(), format!("{B}.2")),
        ("rack2".into(), "gb[2-3]".into(), format!("{B}.1")),
        ("rack3".into(), "gb[10-11]".into(), format!("{A}.1")),
    ];
    assert_eq!(racks(&discover(&nodes, 2, 4))[..], expected[..]);
    nodes.reverse();
    let d = discover(&nodes, 2, 4);
    assert_eq!(racks(&d)[..], expected[..]);
    // Nodes inside a rack are in natural order too.
    let mut nodes = vec![healthy("gb10", A, "1"), healthy("gb9", A, "1")];
    nodes.push(healthy("gb09", A, "1"));
    assert_eq!(
        discover(&nodes, 3, 4).racks()[0].nodes,
        ["gb9", "gb09", "gb10"]
    );
}

#[test]
fn odd_and_repeated_node_names_are_errors() {
    let mut nodes = rack("gb[1-2]", A, "1");
    nodes.push(healthy("gb1", B, "1"));
    nodes.push(healthy("gb[3]", A, "1"));
    nodes.push(healthy("", A, "1"));
    let d = discover(&nodes, 2, 4);
    assert_eq!(
        racks(&d),
        [("rack1".into(), "gb[1-2]".into(), format!("{A}.1"))]
    );
    assert_eq!(
        findings(&d),
        [
            "error: a node without a name; left out",
            "error: gb1: answered more than once; only the first answer is used",
            "error: gb[3]: node name `gb[3]` cannot be written in a hostlist; left out",
        ]
    );
}

// ---- rendering -----------------------------------------------------------------------------

#[test]
fn rendered_file_parses_back_to_the_same_configuration() {
    let mut nodes = rack("gb[001-018]", A, "32766");
    nodes.extend(rack("gb[019-035]", B, "32766"));
    nodes[4] = tray(
        "gb005",
        vec![gpu(BUSES[0], "In Progress", "N/A", "N/A", "N/A")],
    );
    let d = discover(&nodes, 18, 4);
    let text = round_trip(&d);
    let expected_header = format!(
        "# topology.toml for topology/nvl72, written by `nvl72 discover` from the NVLink\n\
         # clique (ClusterUUID.CliqueId) each node reported: one [[rack]] per clique, racks\n\
         # numbered by their first node so re-running on the same nodes keeps the names.\n\
         #\n\
         # 2 racks, 34 nodes; 4 findings:\n\
         # error: gb005: NVLink fabric not ready on 1 of 1 GPUs: 00000008:01:00.0 (State In \
         Progress, Status N/A)\n\
         # warning: gb005: left out: no NVLink clique reported\n\
         # warning: rack1 (clique {A}.32766) has 17 nodes, expected 18\n\
         # warning: rack2 (clique {B}.32766) has 17 nodes, expected 18\n\n"
    );
    assert!(text.starts_with(&expected_header), "{text}");
    assert!(
        text.contains(&format!(
            "[[rack]]\nname = \"rack1\"\nnodes = \"gb[001-004,006-018]\"\nclique = \"{A}.32766\"\n"
        )),
        "{text}"
    );
    // The configuration's own renderer is accepted too.
    let config = d.to_config().unwrap();
    assert_eq!(config.trays_per_rack, 18);
    assert_eq!(config.gpus_per_tray, 4);
    let plain = parse_toml(&config.to_toml(), Path::new("")).unwrap();
    assert_eq!(plain, config);

    // Without findings the header says so.
    let d = discover(&rack("gb[1-2]", A, "1"), 2, 4);
    assert!(round_trip(&d).contains("# 1 rack, 2 nodes; 0 findings.\n\n"));
    assert!(!d.has_errors());
}

#[test]
fn nothing_to_render_without_racks() {
    let d = discover(&[tray("cpu1", vec![])], 18, 4);
    assert!(d.racks().is_empty());
    assert!(matches!(d.to_config(), Err(DiscoverError::NoRacks)));
    let err = d.to_toml().unwrap_err();
    assert_eq!(
        err.to_string(),
        "no rack found: no node reported an NVLink clique"
    );
}

// ---- helpers -------------------------------------------------------------------------------

#[test]
fn natural_order_of_node_names() {
    let mut names = vec![
        "gb10", "gb2", "gb02", "gb1a", "gb1", "ab", "gb", "gbx", "gb9-2", "gb9-10",
    ];
    names.sort_by(|a, b| natural_cmp(a, b));
    assert_eq!(
        names,
        ["ab", "gb", "gb1", "gb1a", "gb2", "gb02", "gb9-2", "gb9-10", "gb10", "gbx"]
    );
    assert_eq!(natural_cmp("gb007", "gb007"), std::cmp::Ordering::Equal);
    let huge = "n123456789012345678901234567890";
    assert_eq!(natural_cmp(huge, "n9"), std::cmp::Ordering::Greater);
}

#[test]
fn clique_labels() {
    let c = Clique::parse(&format!("{}.32766", A.to_uppercase())).unwrap();
    assert_eq!(c.cluster_uuid, A);
    assert_eq!(c.clique_id, 32766);
    assert_eq!(c.to_string(), format!("{A}.32766"));
    for bad in [
        "",
        "32766",
        "N/A.N/A",
        &format!("{A}.N/A"),
        &format!("{A}.-1"),
        &format!("{A}.4294967296"),
        "00000000-0000-0000-0000-000000000000.0",
        "not-a-uuid.1",
    ] {
        assert_eq!(Clique::parse(bad), None, "{bad}");
    }
}

#[test]
fn fixtures_stay_small() {
    fn size(path: &Path) -> u64 {
        if path.is_dir() {
            std::fs::read_dir(path)
                .unwrap()
                .map(|e| size(&e.unwrap().path()))
                .sum()
        } else {
            std::fs::metadata(path).unwrap().len()
        }
    }
    let total = size(&fixture(""));
    assert!(
        total < 300_000,
        "tests/fixtures/nvidia-smi is {total} bytes"
    );
}
