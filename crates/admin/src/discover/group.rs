//! Grouping nodes into racks by clique, and the findings along the way (rules in the
//! module documentation of `discover`).

use std::collections::{HashMap, HashSet};

use super::{
    natural_cmp, Answer, Clique, Discovery, Finding, GpuFabric, NodeReport, Rack, Severity,
};
use nvl72_engine::config::{MAX_GPUS_PER_TRAY, MAX_TRAYS_PER_RACK};
use nvl72_engine::hostlist;

const LEFT_OUT: &str = "left out: no NVLink clique reported";

/// What one node's answer says, before racks have names.
struct Verdict<'a> {
    node: &'a str,
    clique: Option<Clique>,
    findings: Vec<(Severity, String)>,
    /// Set when the node's GPUs (or features) name more than one clique.
    mixed: Option<Mixed>,
}

struct Mixed {
    /// "GPUs in different NVLink cliques" or the like.
    what: &'static str,
    /// Votes per clique, most votes first: GPU bus ids, or nothing for features.
    tally: Vec<(Clique, Vec<String>)>,
}

/// Groups `nodes` into racks by clique and collects the findings. `trays_per_rack` and
/// `gpus_per_tray` are what a healthy rack and tray should have; they are clamped to the
/// range topology.toml accepts (1..=1024).
pub fn discover(nodes: &[NodeReport], trays_per_rack: u32, gpus_per_tray: u32) -> Discovery {
    let trays_per_rack = trays_per_rack.clamp(1, MAX_TRAYS_PER_RACK);
    let gpus_per_tray = gpus_per_tray.clamp(1, MAX_GPUS_PER_TRAY);
    let mut findings: Vec<Finding> = Vec::new();
    let mut node_finding = |severity, node: Option<&str>, message: String| {
        findings.push(Finding {
            severity,
            node: node.map(str::to_string),
            message,
        })
    };

    let mut seen: HashSet<&str> = HashSet::new();
    let mut reports: Vec<&NodeReport> = Vec::new();
    for report in nodes {
        if report.node.is_empty() {
            let message = "a node without a name; left out".to_string();
            node_finding(Severity::Error, None, message);
        } else if let Some(why) = bad_name(&report.node) {
            node_finding(
                Severity::Error,
                Some(&report.node),
                format!("{why}; left out"),
            );
        } else if !seen.insert(report.node.as_str()) {
            let message = "answered more than once; only the first answer is used".into();
            node_finding(Severity::Error, Some(&report.node), message);
        } else {
            reports.push(report);
        }
    }
    reports.sort_by(|a, b| natural_cmp(&a.node, &b.node));
    let verdicts: Vec<Verdict> = reports.iter().map(|r| judge(r, gpus_per_tray)).collect();

    // Cliques in the order of their first node = their smallest node in natural order.
    let mut groups: Vec<(Clique, Vec<String>)> = Vec::new();
    for v in &verdicts {
        if let Some(clique) = &v.clique {
            match groups.iter_mut().find(|(c, _)| c == clique) {
                Some((_, members)) => members.push(v.node.to_string()),
                None => groups.push((clique.clone(), vec![v.node.to_string()])),
            }
        }
    }
    let mut rack_findings: Vec<Finding> = Vec::new();
    let mut rack_finding = |message: String, severity| {
        rack_findings.push(Finding {
            severity,
            node: None,
            message,
        })
    };
    let mut racks: Vec<Rack> = Vec::new();
    for (clique, nodes) in groups {
        if nodes.len() > MAX_TRAYS_PER_RACK as usize {
            let message = format!(
                "clique {clique} has {} nodes, more than a rack can list \
                 ({MAX_TRAYS_PER_RACK}); left out",
                nodes.len()
            );
            rack_finding(message, Severity::Error);
            continue;
        }
        racks.push(Rack {
            name: format!("rack{}", racks.len() + 1),
            clique,
            nodes,
        });
    }
    let rack_of: HashMap<&Clique, &str> =
        racks.iter().map(|r| (&r.clique, r.name.as_str())).collect();

    for v in &verdicts {
        for (severity, message) in &v.findings {
            node_finding(*severity, Some(v.node), message.clone());
        }
        if let Some(mixed) = &v.mixed {
            let listed: Vec<String> = mixed
                .tally
                .iter()
                .map(|(c, voters)| {
                    if voters.is_empty() {
                        c.to_string()
                    } else {
                        format!("{c} ({})", voters.join(", "))
                    }
                })
                .collect();
            let outcome = match v.clique.as_ref().map(|c| rack_of.get(c)) {
                Some(Some(rack)) => format!("put in {rack} with the majority"),
                Some(None) => "left out with the majority's clique".to_string(),
                None => "no majority; left out".to_string(),
            };
            let message = format!("{}: {}; {outcome}", mixed.what, listed.join(", "));
            node_finding(Severity::Error, Some(v.node), message);
        }
    }

    for rack in &racks {
        let (n, name, clique) = (rack.nodes.len(), &rack.name, &rack.clique);
        if n < trays_per_rack as usize {
            let message =
                format!("{name} (clique {clique}) has {n} nodes, expected {trays_per_rack}");
            rack_finding(message, Severity::Warning);
        } else if n > trays_per_rack as usize {
            let message = format!(
                "{name} (clique {clique}) has {n} nodes, more than trays_per_rack = {trays_per_rack}; \
                 the file sets trays_per_rack to the largest rack so that it loads"
            );
            rack_finding(message, Severity::Error);
        }
    }
    split_domains(&racks, trays_per_rack, &mut rack_finding);

    // Stable: each node's findings keep their order.
    findings.sort_by(|a, b| {
        natural_cmp(
            a.node.as_deref().unwrap_or(""),
            b.node.as_deref().unwrap_or(""),
        )
    });
    let mut all = merge_same(findings);
    all.extend(rack_findings);
    Discovery {
        racks,
        findings: all,
        trays_per_rack,
        gpus_per_tray,
    }
}

/// Cliques of one ClusterUUID that are all undersized: one NVLink domain split into
/// partitions. Scheduled as separate racks (jobs cannot span partitions), but worth saying.
fn split_domains(racks: &[Rack], trays_per_rack: u32, report: &mut impl FnMut(String, Severity)) {
    let mut done: HashSet<&str> = HashSet::new();
    for rack in racks {
        let uuid = rack.clique.cluster_uuid.as_str();
        if !done.insert(uuid) {
            continue;
        }
        let parts: Vec<&Rack> = racks
            .iter()
            .filter(|r| r.clique.cluster_uuid == uuid)
            .collect();
        if parts.len() < 2
            || parts
                .iter()
                .any(|r| r.nodes.len() >= trays_per_rack as usize)
        {
            continue;
        }
        let names: Vec<&str> = parts.iter().map(|r| r.name.as_str()).collect();
        let ids: Vec<String> = parts
            .iter()
            .map(|r| r.clique.clique_id.to_string())
            .collect();
        report(
            format!(
                "{} are one NVLink domain (ClusterUUID {uuid}) split into cliques {}; \
                 each is a rack of its own",
                names.join(", "),
                ids.join(", ")
            ),
            Severity::Warning,
        );
    }
}

/// The node's clique and what is wrong with its answer.
fn judge(report: &NodeReport, gpus_per_tray: u32) -> Verdict<'_> {
    let mut v = Verdict {
        node: &report.node,
        clique: None,
        findings: Vec::new(),
        mixed: None,
    };
    // (clique, voter) pairs: GPU bus ids, or no name for a feature.
    let mut votes: Vec<(Clique, Option<String>)> = Vec::new();
    let mut what = "GPUs in different NVLink cliques";
    match &report.answer {
        Answer::NoAnswer(why) => {
            v.findings
                .push((Severity::Warning, format!("left out: no answer ({why})")));
            return v;
        }
        Answer::Gpus(gpus) if gpus.is_empty() => {
            let message = "left out: no GPU in the nvidia-smi output".to_string();
            v.findings.push((Severity::Warning, message));
            return v;
        }
        Answer::Gpus(gpus) => {
            let mut not_ready: Vec<String> = Vec::new();
            let mut no_clique: Vec<&GpuFabric> = Vec::new();
            for gpu in gpus {
                match (gpu.is_ready(), gpu.clique()) {
                    (true, Some(clique)) => votes.push((clique, Some(gpu.bus_id.clone()))),
                    (true, None) => no_clique.push(gpu),
                    (false, _) if is_fabricless(gpu) => no_clique.push(gpu),
                    (false, _) => not_ready.push(format!(
                        "{} (State {}, Status {})",
                        gpu.bus_id,
                        shown(&gpu.state),
                        shown(&gpu.status)
                    )),
                }
            }
            if !not_ready.is_empty() {
                let message = format!(
                    "NVLink fabric not ready on {} of {} GPUs: {}",
                    not_ready.len(),
                    gpus.len(),
                    not_ready.join(", ")
                );
                v.findings.push((Severity::Error, message));
            }
            // A tray without any clique is simply not an NVL tray; some GPUs without one
            // next to GPUs with one is a broken tray.
            if !votes.is_empty() && !no_clique.is_empty() {
                let listed: Vec<String> = no_clique
                    .iter()
                    .map(|g| {
                        format!(
                            "{} (State {}, ClusterUUID {}, CliqueId {})",
                            g.bus_id,
                            shown(&g.state),
                            shown(&g.cluster_uuid),
                            shown(&g.clique_id)
                        )
                    })
                    .collect();
                let message = format!("no NVLink clique on GPU {}", listed.join(", "));
                v.findings.push((Severity::Error, message));
            }
            if !votes.is_empty() && gpus.len() != gpus_per_tray as usize {
                let message = format!("reports {} GPUs, expected {gpus_per_tray}", gpus.len());
                v.findings.push((Severity::Warning, message));
            }
        }
        Answer::Features(labels) => {
            what = "clique features disagree";
            for label in labels {
                match Clique::parse(label) {
                    Some(clique) => votes.push((clique, None)),
                    None => {
                        let message = format!(
                            "clique feature `{label}` is not <ClusterUUID>.<CliqueId>; ignored"
                        );
                        v.findings.push((Severity::Error, message));
                    }
                }
            }
        }
    }
    if votes.is_empty() {
        v.findings.push((Severity::Warning, LEFT_OUT.to_string()));
        return v;
    }
    let mut counts: Vec<(Clique, usize, Vec<String>)> = Vec::new();
    for (clique, voter) in votes.iter().cloned() {
        let i = match counts.iter().position(|(c, _, _)| *c == clique) {
            Some(i) => i,
            None => {
                counts.push((clique, 0, Vec::new()));
                counts.len() - 1
            }
        };
        counts[i].1 += 1;
        counts[i].2.extend(voter);
    }
    // Stable: equal counts keep output order.
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    if counts[0].1 * 2 > votes.len() {
        v.clique = Some(counts[0].0.clone());
    }
    if counts.len() > 1 {
        let tally = counts
            .into_iter()
            .map(|(c, _, voters)| (c, voters))
            .collect();
        v.mixed = Some(Mixed { what, tally });
    }
    v
}

/// The GPU does not take part in any NVLink fabric (non-NVL GPU, or no Fabric section).
fn is_fabricless(gpu: &GpuFabric) -> bool {
    match gpu.state.as_deref() {
        None => true,
        Some(state) => ["N/A", "Not Supported"]
            .iter()
            .any(|s| state.eq_ignore_ascii_case(s)),
    }
}

fn shown(field: &Option<String>) -> &str {
    field.as_deref().unwrap_or("missing")
}

/// Why `name` cannot be written into a hostlist, if it cannot.
fn bad_name(name: &str) -> Option<String> {
    if name.len() > hostlist::MAX_NAME_LEN {
        return Some(format!(
            "node name longer than {} characters",
            hostlist::MAX_NAME_LEN
        ));
    }
    let bad = |c: char| c.is_whitespace() || c.is_control() || matches!(c, '[' | ']' | ',');
    name.contains(bad).then(|| {
        format!(
            "node name `{}` cannot be written in a hostlist",
            name.escape_default()
        )
    })
}

/// Joins node findings with the same severity and message into one whose node is a
/// hostlist (`left out: ...` for a hundred CPU nodes is one line), at the first one's place.
fn merge_same(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<(Finding, Vec<String>)> = Vec::new();
    let mut index: HashMap<(Severity, String), usize> = HashMap::new();
    for finding in findings {
        let Some(node) = finding.node.clone() else {
            out.push((finding, Vec::new()));
            continue;
        };
        let key = (finding.severity, finding.message.clone());
        match index.get(&key) {
            Some(&i) => out[i].1.push(node),
            None => {
                index.insert(key, out.len());
                out.push((finding, vec![node]));
            }
        }
    }
    out.into_iter()
        .map(|(mut finding, nodes)| {
            if nodes.len() > 1 {
                finding.node = Some(hostlist::compress(&nodes));
            }
            finding
        })
        .collect()
}
