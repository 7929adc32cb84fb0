//! The little `nvl72 check` needs from slurm.conf and gres.conf: node names, their GPU counts,
//! partitions and their nodes, `TopologyPlugin` and `PluginDir`, read with Slurm's own line syntax
//! (`slurm_lines`).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::slurm_lines::{error, Reader};
use super::Problem;
use nvl72_engine::hostlist;

pub use super::slurm_lines::Loc;

/// One `NodeName=` line (not DEFAULT), with the GPUs its `Gres=` (or the DEFAULT's) gives
/// each node: what slurmctld schedules with.
#[derive(Debug, Clone)]
pub struct NodeLine {
    pub loc: Loc,
    pub names: Vec<String>,
    pub gpus: u64,
}

#[derive(Debug, Default)]
pub struct SlurmConf {
    /// False when slurm.conf itself could not be read; cross-checks are skipped then.
    pub readable: bool,
    pub node_lines: Vec<NodeLine>,
    /// Node name -> index into `node_lines` of its first definition.
    pub node_index: HashMap<String, usize>,
    /// `PartitionName=` lines (not DEFAULT), in file order.
    pub partitions: Vec<PartitionLine>,
    /// The last `TopologyPlugin=` (Slurm keeps the last value) and its line.
    pub topology_plugin: Option<(String, Loc)>,
    /// The last `PluginDir=` (a colon-separated search path) and its line.
    pub plugin_dir: Option<(String, Loc)>,
    /// The last `StateSaveLocation=`.
    pub state_save_location: Option<String>,
    /// Each `SlurmctldHost=` name (without its `(address)`), in order.
    pub controllers: Vec<String>,
    pub problems: Vec<Problem>,
}

/// One `PartitionName=` line and the nodes its `Nodes=` (or the DEFAULT's) names.
#[derive(Debug, Clone)]
pub struct PartitionLine {
    pub loc: Loc,
    pub name: String,
    /// Defined nodes of the partition (`ALL`: every node; `NodeSet=` names resolved).
    pub nodes: Vec<String>,
    /// A name in `Nodes=` that is neither a node nor a `NodeSet=` of nodes (e.g. a node set
    /// by `Feature=`): `nodes` may then be incomplete.
    pub unresolved: bool,
}

/// A gres.conf `Name=gpu` line and the nodes it applies to (`None`: every node).
#[derive(Debug, Clone)]
pub struct GresLine {
    pub loc: Loc,
    pub nodes: Option<HashSet<String>>,
    /// `None` when the count is left to AutoDetect.
    pub gpus: Option<u64>,
}

#[derive(Debug, Default)]
pub struct GresConf {
    pub lines: Vec<GresLine>,
    pub problems: Vec<Problem>,
}

/// What gres.conf says about one node's GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GresGpus {
    /// No `Name=gpu` line applies to the node.
    None,
    /// Sum over the lines that apply, and the first of them.
    Known(u64, Loc),
    /// A line that applies leaves the count to AutoDetect.
    Unknown,
}

impl GresConf {
    pub fn gpus(&self, node: &str) -> GresGpus {
        let mut total: Option<(u64, &Loc)> = None;
        for line in &self.lines {
            if line.nodes.as_ref().is_some_and(|n| !n.contains(node)) {
                continue;
            }
            let Some(gpus) = line.gpus else {
                return GresGpus::Unknown;
            };
            let entry = total.get_or_insert((0, &line.loc));
            entry.0 = entry.0.saturating_add(gpus);
        }
        match total {
            Some((n, loc)) => GresGpus::Known(n, loc.clone()),
            None => GresGpus::None,
        }
    }
}

/// Reads slurm.conf and the files it includes.
pub fn read_slurm_conf(path: &Path) -> SlurmConf {
    let mut conf = SlurmConf::default();
    let mut reader = Reader::new(path);
    conf.readable = reader.read(path, None, 0);
    // Keys of the NodeName=DEFAULT lines so far; later DEFAULT lines add to them (Slurm merges).
    let mut default_gres: Option<String> = None;
    let mut duplicates: Vec<(usize, Vec<String>)> = Vec::new();
    // Partitions and node sets are resolved once every node is known.
    let mut partitions: Vec<(Loc, String, Option<String>)> = Vec::new();
    let mut default_part_nodes: Option<String> = None;
    let mut node_sets: HashMap<String, Option<String>> = HashMap::new();

    for (loc, pairs) in reader.lines {
        let Some((key, value)) = pairs.first() else {
            continue;
        };
        if key.eq_ignore_ascii_case("TopologyPlugin") {
            conf.topology_plugin = Some((value.clone(), loc));
            continue;
        }
        if key.eq_ignore_ascii_case("PluginDir") {
            conf.plugin_dir = Some((value.clone(), loc));
            continue;
        }
        if key.eq_ignore_ascii_case("StateSaveLocation") {
            conf.state_save_location = Some(value.clone());
            continue;
        }
        if key.eq_ignore_ascii_case("SlurmctldHost") {
            let name = value.split('(').next().unwrap_or_default().trim();
            conf.controllers.push(name.to_string());
            continue;
        }
        let nodes_key = || {
            pairs[1..]
                .iter()
                .rfind(|(k, _)| k.eq_ignore_ascii_case("Nodes"))
                .map(|(_, v)| v.clone())
        };
        if key.eq_ignore_ascii_case("PartitionName") {
            if value.eq_ignore_ascii_case("DEFAULT") {
                default_part_nodes = nodes_key().or(default_part_nodes);
            } else {
                let nodes = nodes_key().or_else(|| default_part_nodes.clone());
                partitions.push((loc, value.clone(), nodes));
            }
            continue;
        }
        if key.eq_ignore_ascii_case("NodeSet") {
            node_sets.insert(value.clone(), nodes_key());
            continue;
        }
        if !key.eq_ignore_ascii_case("NodeName") {
            continue;
        }
        let gres = pairs[1..]
            .iter()
            .rfind(|(k, _)| k.eq_ignore_ascii_case("Gres"))
            .map(|(_, v)| v.clone());
        if value.eq_ignore_ascii_case("DEFAULT") {
            if gres.is_some() {
                default_gres = gres;
            }
            continue;
        }
        let names = match hostlist::expand(value) {
            Ok(names) => names,
            Err(e) => {
                conf.problems
                    .push(error(&loc, format!("NodeName: bad hostlist: {e}")));
                continue;
            }
        };
        let index = conf.node_lines.len();
        let mut dup = Vec::new();
        for name in &names {
            if conf.node_index.contains_key(name) {
                dup.push(name.clone());
            } else {
                conf.node_index.insert(name.clone(), index);
            }
        }
        if !dup.is_empty() {
            duplicates.push((index, dup));
        }
        let gpus = gres
            .or_else(|| default_gres.clone())
            .map_or(0, |g| gres_gpus(&g));
        conf.node_lines.push(NodeLine { loc, names, gpus });
    }
    for (index, dup) in duplicates {
        let loc = &conf.node_lines[index].loc;
        let first = conf.node_lines[conf.node_index[&dup[0]]]
            .loc
            .seen_from(&loc.file);
        let message = format!(
            "NodeName {} already defined at {first}; slurmctld refuses to start (Duplicated NodeName)",
            hostlist::compress(&dup)
        );
        conf.problems.push(error(loc, message));
    }
    conf.partitions = partitions
        .into_iter()
        .map(|(loc, name, nodes)| partition(&conf, &node_sets, loc, name, nodes.as_deref()))
        .collect();
    conf.problems.splice(0..0, reader.problems);
    conf
}

/// A partition's nodes, as slurmctld resolves `Nodes=`: `ALL`, node names and `NodeSet=`
/// names (of nodes; a node set by feature is left unresolved).
fn partition(
    conf: &SlurmConf,
    node_sets: &HashMap<String, Option<String>>,
    loc: Loc,
    name: String,
    nodes: Option<&str>,
) -> PartitionLine {
    let mut line = PartitionLine {
        loc,
        name,
        nodes: Vec::new(),
        unresolved: false,
    };
    let Some(nodes) = nodes else {
        return line;
    };
    if nodes.eq_ignore_ascii_case("ALL") {
        line.nodes = conf
            .node_lines
            .iter()
            .flat_map(|l| l.names.clone())
            .collect();
        return line;
    }
    let mut resolve = |n: &str| {
        if conf.node_index.contains_key(n) {
            line.nodes.push(n.to_string());
        } else if let Some(Some(set)) = node_sets.get(n) {
            let names = hostlist::expand(set).unwrap_or_default();
            line.nodes.extend(
                names
                    .into_iter()
                    .filter(|n| conf.node_index.contains_key(n)),
            );
        } else {
            line.unresolved = true;
        }
    };
    match hostlist::expand(nodes) {
        Ok(names) => names.iter().for_each(|n| resolve(n)),
        Err(_) => line.unresolved = true,
    }
    line
}

/// Reads gres.conf; relative `Include`s are resolved against slurm.conf's directory, as
/// Slurm does for every configuration file.
pub fn read_gres_conf(path: &Path, slurm_conf: &Path) -> GresConf {
    let mut reader = Reader::new(slurm_conf);
    reader.read(path, None, 0);
    let mut conf = GresConf::default();
    let mut autodetect_global = false;
    for (loc, pairs) in reader.lines {
        let get = |key: &str| {
            pairs
                .iter()
                .rfind(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.as_str())
        };
        let autodetect = |v: Option<&str>| v.is_some_and(|v| !v.eq_ignore_ascii_case("off"));
        let Some((first, _)) = pairs.first() else {
            continue;
        };
        if first.eq_ignore_ascii_case("AutoDetect") {
            autodetect_global = autodetect(Some(&pairs[0].1));
            continue;
        }
        if !get("Name").is_some_and(|n| n.eq_ignore_ascii_case("gpu")) {
            continue;
        }
        let nodes = match get("NodeName").map(hostlist::expand) {
            None => None,
            Some(Ok(names)) => Some(names.into_iter().collect()),
            Some(Err(e)) => {
                conf.problems
                    .push(error(&loc, format!("NodeName: bad hostlist: {e}")));
                continue;
            }
        };
        let files = match get("File").or_else(|| get("Files")).map(hostlist::count) {
            None => None,
            Some(Ok(n)) => Some(n as u64),
            Some(Err(e)) => {
                conf.problems
                    .push(error(&loc, format!("File: bad file list: {e}")));
                continue;
            }
        };
        let files = files.or(get("MultipleFiles").map(|_| 1));
        let count = get("Count").map(|c| parse_count(c).ok_or(c));
        let gpus = match (count, files) {
            (Some(Err(c)), _) => {
                conf.problems
                    .push(error(&loc, format!("Count: invalid count `{c}`")));
                continue;
            }
            (Some(Ok(n)), _) => Some(n),
            (None, Some(n)) => Some(n),
            (None, None) if autodetect_global || autodetect(get("AutoDetect")) => None,
            (None, None) => Some(1),
        };
        conf.lines.push(GresLine { loc, nodes, gpus });
    }
    conf.problems.splice(0..0, reader.problems);
    conf
}

/// GPUs in a slurm.conf `Gres=` value: `gpu:4`, `gpu:gb200:4`, `gpu` (one), several entries
/// (`gpu:a:2,gpu:b:2`) summed; other GRES such as `mps:100` are ignored.
pub fn gres_gpus(value: &str) -> u64 {
    split_outside_parens(value)
        .into_iter()
        .filter_map(|entry| {
            // `gpu:4(S:0-1)`: the socket binding of old configurations.
            let entry = entry.split('(').next().unwrap_or("").trim();
            let mut parts = entry.split(':');
            let name = parts.next()?;
            if !name.eq_ignore_ascii_case("gpu") {
                return None;
            }
            Some(parts.next_back().and_then(parse_count).unwrap_or(1))
        })
        .fold(0u64, u64::saturating_add)
}

fn split_outside_parens(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in value.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&value[start..]);
    out
}

/// A count with Slurm's optional binary suffix (`4`, `1k`, `2M`).
fn parse_count(text: &str) -> Option<u64> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: u64 = digits.parse().ok()?;
    let shift = match text[digits.len()..].to_ascii_lowercase().as_str() {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        "p" => 50,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gres_values() {
        assert_eq!(gres_gpus("gpu:4"), 4);
        assert_eq!(gres_gpus("gpu:gb200:4"), 4);
        assert_eq!(gres_gpus("gpu"), 1);
        assert_eq!(gres_gpus("gpu:gb200"), 1);
        assert_eq!(gres_gpus("gpu:a:2,gpu:b:2,mps:400"), 4);
        assert_eq!(gres_gpus("gpu:4(S:0,1)"), 4);
        assert_eq!(gres_gpus("mps:100"), 0);
        assert_eq!(gres_gpus("gpu:1k"), 1024);
    }
}
