//! The cluster as NVLink domains (racks) of trays, resolved against the scheduler's node indices.
//!
//! Node indices are whatever the caller uses to name nodes (Slurm's `node_ptr->index` in the
//! plugin, plain numbers in tests and the simulator), so the model never sees a Slurm type.
#![forbid(unsafe_code)]

use crate::config::{Config, Policy};
use crate::tray::Capacity;

/// One NVLink domain: the trays of one NVL72 rack.
#[derive(Debug, Clone, PartialEq)]
pub struct Rack {
    pub name: String,
    /// Node indices in tray order (the order of the rack's hostlist).
    pub nodes: Vec<usize>,
    /// Node names in tray order, kept for messages and `scontrol show topology`.
    pub node_names: Vec<String>,
    pub clique: Option<String>,
    pub group: Option<String>,
}

/// Racks resolved to node indices, plus the placement policy that goes with them.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub racks: Vec<Rack>,
    /// `node_rack[node]` is the rack holding that node, [`NO_RACK`] for none: four bytes a
    /// node, as the plugin looks it up for every offered tray on every call.
    node_rack: Vec<u32>,
    /// `node_range[d]` is `Some(first..end)` when rack `d`'s nodes are consecutive indices
    /// in order (the usual case): counting its free trays is then a scan of one slice.
    node_range: Vec<Option<std::ops::Range<usize>>>,
    /// `rack_size[d]` is rack `d`'s configured trays: one small array that a decision reads
    /// for every rack, where the racks themselves are large records.
    rack_size: Vec<usize>,
    /// `largest_racks[k]` is how many trays the `k` largest racks have together: what a job
    /// over `k` racks can get at most, looked up rather than sorted for every job.
    largest_racks: Vec<usize>,
    /// `(trays, racks)`: how many racks have each configured size (one or two sizes in
    /// practice), so that checks over every rack's size cost nothing per rack.
    sizes: Vec<(usize, usize)>,
    max_rack: usize,
    pub gpus_per_tray: u32,
    /// What a whole free tray offers a job (GPUs from `gpus_per_tray`; the plugin sets the
    /// CPUs from slurm.conf's node records).
    pub full_tray: Capacity,
    pub policy: Policy,
    /// Each rack group's name and member racks, sorted by name.
    pub groups: Vec<(String, Vec<usize>)>,
    /// topology/block's segment rules of Slurm 25.11 and later: `-w` may name the nodes of a
    /// job with several segments, and a segment may be larger than a rack. The plugin sets it
    /// for those builds.
    pub block_25_11_segments: bool,
}

/// [`Topology`]'s mark for a node in no rack (more racks than this are refused long before:
/// a rack has at least one tray, and Slurm's node indices are 32-bit).
const NO_RACK: u32 = u32::MAX;

/// A name from the configuration that the scheduler does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownNode {
    pub rack: String,
    pub node: String,
}

/// Refuses a file whose racks name nodes slurm.conf does not define, as topology/block does
/// (`Invalid node name`): a typo must not leave a rack empty and its trays open to Slurm's
/// generic selection. The error points at the first such rack's `nodes` line (`lines`, see
/// [`crate::config::lines`]) and names every unknown node, rack by rack.
pub fn refuse_unknown(
    config: &Config,
    unknown: &[UnknownNode],
    lines: &crate::config::lines::TopologyLines,
) -> Result<(), crate::config::ConfigError> {
    let Some(first) = unknown.first() else {
        return Ok(());
    };
    let rack_index = |name: &str| config.racks.iter().position(|r| r.name == name);
    let mut parts = Vec::new();
    let mut racks: Vec<&str> = unknown.iter().map(|u| u.rack.as_str()).collect();
    racks.dedup();
    for rack in racks {
        let names: Vec<&str> = unknown
            .iter()
            .filter(|u| u.rack == rack)
            .map(|u| u.node.as_str())
            .collect();
        let line = rack_index(rack)
            .and_then(|i| lines.rack(i))
            .map_or(String::new(), |l| format!(" (line {l})"));
        parts.push(format!(
            "{rack}{line}: {} ({})",
            crate::hostlist::compress(&names),
            names.len()
        ));
    }
    let first_index = rack_index(&first.rack);
    Err(crate::config::ConfigError {
        file: config.source.clone(),
        line: first_index.and_then(|i| lines.rack(i)),
        field: first_index.map(|i| format!("rack[{}].nodes", i + 1)),
        message: format!(
            "{} node(s) not defined by any NodeName= in slurm.conf: {}",
            unknown.len(),
            parts.join("; ")
        ),
    })
}

impl Topology {
    /// Resolves every configured node name with `resolve`; unknown names are returned for
    /// the caller to refuse ([`refuse_unknown`]) or, outside slurmctld, to leave out.
    pub fn resolve(
        config: &Config,
        node_count: usize,
        mut resolve: impl FnMut(&str) -> Option<usize>,
    ) -> (Topology, Vec<UnknownNode>) {
        let mut unknown = Vec::new();
        let mut node_rack = vec![NO_RACK; node_count];
        let mut racks = Vec::with_capacity(config.racks.len());
        for rack in &config.racks {
            let d = racks.len();
            let mut nodes = Vec::with_capacity(rack.nodes.len());
            let mut node_names = Vec::with_capacity(rack.nodes.len());
            for name in &rack.nodes {
                match resolve(name).filter(|&i| i < node_count) {
                    Some(i) if node_rack[i] == NO_RACK => {
                        node_rack[i] = d as u32;
                        nodes.push(i);
                        node_names.push(name.clone());
                    }
                    Some(_) => {} // already in a rack; the config validator reports duplicates
                    None => unknown.push(UnknownNode {
                        rack: rack.name.clone(),
                        node: name.clone(),
                    }),
                }
            }
            racks.push(Rack {
                name: rack.name.clone(),
                nodes,
                node_names,
                clique: rack.clique.clone(),
                group: rack.group.clone(),
            });
        }
        let node_range = racks.iter().map(|d| consecutive(&d.nodes)).collect();
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for (d, dom) in racks.iter().enumerate() {
            let Some(name) = &dom.group else { continue };
            match groups.iter_mut().find(|(g, _)| g == name) {
                Some((_, members)) => members.push(d),
                None => groups.push((name.clone(), vec![d])),
            }
        }
        groups.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let rack_size: Vec<usize> = racks.iter().map(|d| d.nodes.len()).collect();
        let max_rack = rack_size.iter().copied().max().unwrap_or(0);
        let mut sizes = rack_size.clone();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let largest_racks = std::iter::once(0)
            .chain(sizes.iter().scan(0, |sum, &n| {
                *sum += n;
                Some(*sum)
            }))
            .collect();
        let mut size_counts: Vec<(usize, usize)> = Vec::new();
        for &size in &sizes {
            match size_counts.last_mut() {
                Some((last, racks)) if *last == size => *racks += 1,
                _ => size_counts.push((size, 1)),
            }
        }
        let topo = Topology {
            racks,
            node_rack,
            node_range,
            rack_size,
            largest_racks,
            sizes: size_counts,
            max_rack,
            gpus_per_tray: config.gpus_per_tray,
            full_tray: Capacity {
                gpus: u16::try_from(config.gpus_per_tray).unwrap_or(u16::MAX),
                cpus: Capacity::GB200_TRAY.cpus,
            },
            policy: config.policy.clone(),
            groups,
            block_25_11_segments: false,
        };
        (topo, unknown)
    }

    /// A topology of `racks` racks of `trays` consecutive node indices (tests, simulator).
    pub fn uniform(racks: usize, trays: usize, policy: Policy) -> Topology {
        let mut config = Config {
            trays_per_rack: trays as u32,
            ..Config::default()
        };
        config.policy = policy;
        for r in 0..racks {
            config.racks.push(crate::config::RackConfig {
                name: format!("rack{}", r + 1),
                nodes: (0..trays).map(|t| format!("n{}", r * trays + t)).collect(),
                clique: None,
                group: None,
            });
        }
        let (topo, _) = Topology::resolve(&config, racks * trays, |name| {
            name.strip_prefix('n').and_then(|n| n.parse().ok())
        });
        topo
    }

    pub fn rack_of(&self, node: usize) -> Option<usize> {
        match self.node_rack.get(node) {
            Some(&r) if r != NO_RACK => Some(r as usize),
            _ => None,
        }
    }

    /// Rack `d`'s configured trays.
    #[inline]
    pub fn rack_size(&self, d: usize) -> usize {
        self.rack_size[d]
    }

    /// The configured trays of the `k` largest racks together (of every rack when `k` is
    /// larger than the rack count).
    pub fn largest_racks(&self, k: usize) -> usize {
        self.largest_racks[k.min(self.racks.len())]
    }

    /// The largest rack, in configured trays: the biggest job or segment that fits one rack.
    pub fn max_rack_size(&self) -> usize {
        self.max_rack
    }

    /// How many racks have at least `trays` configured trays.
    pub fn racks_of_at_least(&self, trays: usize) -> usize {
        self.sizes
            .iter()
            .filter(|&&(size, _)| size >= trays)
            .map(|&(_, racks)| racks)
            .sum()
    }

    /// How many pieces of `trays` trays the racks hold together, each inside one rack, when
    /// every tray is free.
    pub fn pieces_held(&self, trays: usize) -> usize {
        self.sizes
            .iter()
            .map(|&(size, racks)| racks * (size / trays.max(1)))
            .sum()
    }

    /// Every configured tray of every rack.
    pub fn total_trays(&self) -> usize {
        self.largest_racks(self.racks.len())
    }

    /// Rack `d`'s node indices as one range, when they are consecutive (the usual case).
    pub fn node_range(&self, d: usize) -> Option<std::ops::Range<usize>> {
        self.node_range[d].clone()
    }

    pub fn rack_by_name(&self, name: &str) -> Option<usize> {
        self.racks.iter().position(|d| d.name == name)
    }

    pub fn in_any_rack(&self, node: usize) -> bool {
        self.rack_of(node).is_some()
    }
}

/// `Some(a..b)` when `nodes` is exactly `a, a+1, ..., b-1`.
fn consecutive(nodes: &[usize]) -> Option<std::ops::Range<usize>> {
    let first = *nodes.first()?;
    let in_order = nodes.iter().enumerate().all(|(i, &n)| n == first + i);
    in_order.then_some(first..first + nodes.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::ClusterView;

    #[test]
    fn uniform_topology_maps_nodes_to_racks() {
        let t = Topology::uniform(3, 18, Policy::default());
        assert_eq!(t.racks.len(), 3);
        assert_eq!(t.rack_of(0), Some(0));
        assert_eq!(t.rack_of(17), Some(0));
        assert_eq!(t.rack_of(18), Some(1));
        assert_eq!(t.rack_of(54), None);
        assert_eq!(t.max_rack_size(), 18);
    }

    #[test]
    fn rack_sizes_are_counted_once_for_checks_over_every_rack() {
        let mut config = Config::default();
        for (r, size) in [18, 16, 18, 12].into_iter().enumerate() {
            config.racks.push(crate::config::RackConfig {
                name: format!("r{r}"),
                nodes: (0..size).map(|t| format!("r{r}n{t}")).collect(),
                clique: None,
                group: None,
            });
        }
        let names: Vec<String> = config.racks.iter().flat_map(|r| r.nodes.clone()).collect();
        let (t, _) = Topology::resolve(&config, names.len(), |n| names.iter().position(|m| m == n));
        assert_eq!(t.racks_of_at_least(17), 2);
        assert_eq!(t.racks_of_at_least(12), 4);
        assert_eq!(t.racks_of_at_least(19), 0);
        // 8 trays: 2 + 2 + 2 + 1 pieces; 6 trays: 3 + 2 + 3 + 2.
        assert_eq!(t.pieces_held(8), 7);
        assert_eq!(t.pieces_held(6), 10);
    }

    #[test]
    fn candidate_counts_with_and_without_consecutive_nodes() {
        let mut config = Config::default();
        for (name, nodes) in [("a", ["n0", "n1", "n2"]), ("b", ["n5", "n3", "n4"])] {
            config.racks.push(crate::config::RackConfig {
                name: name.into(),
                nodes: nodes.map(String::from).to_vec(),
                clique: None,
                group: None,
            });
        }
        let (t, _) = Topology::resolve(&config, 6, |n| n[1..].parse().ok());
        assert_eq!(t.node_range, vec![Some(0..3), None]);
        let mut v = ClusterView::all_free(6);
        v.trays[1].offered = false;
        v.trays[4].offered = false;
        assert_eq!((v.offered_in(&t, 0), v.offered_in(&t, 1)), (2, 2));
        // A view shorter than the node table counts what it has.
        v.trays.truncate(2);
        assert_eq!((v.offered_in(&t, 0), v.offered_in(&t, 1)), (1, 0));
    }

    #[test]
    fn unknown_nodes_are_reported_not_fatal() {
        let mut config = Config::default();
        config.racks.push(crate::config::RackConfig {
            name: "r1".into(),
            nodes: vec!["a".into(), "ghost".into()],
            clique: None,
            group: None,
        });
        let (t, unknown) = Topology::resolve(&config, 1, |n| (n == "a").then_some(0));
        assert_eq!(t.racks[0].nodes, vec![0]);
        assert_eq!(
            unknown,
            vec![UnknownNode {
                rack: "r1".into(),
                node: "ghost".into()
            }]
        );
    }

    /// The typo of issue 36: rack2 written as `xx[019-036]` refuses the whole file, at
    /// rack2's `nodes` line, naming all 18 names.
    #[test]
    fn unknown_nodes_refuse_the_file_at_their_racks_line() {
        let text = "[[rack]]\nname = \"rack1\"\nnodes = \"gb[001-018]\"\n\n\
                    [[rack]]\nname = \"rack2\"\nnodes = \"xx[019-036]\"\n\n\
                    [[rack]]\nname = \"rack3\"\nnodes = \"gb[037-053],yy1\"\n";
        let path = std::path::Path::new("/etc/slurm/topology.toml");
        let config = crate::config::parse_toml(text, path).unwrap();
        let lines = crate::config::lines::TopologyLines::from_text(text, true);
        let (_, unknown) = Topology::resolve(&config, 54, |n| {
            n.strip_prefix("gb")
                .and_then(|i| i.parse::<usize>().ok())
                .map(|i| i - 1)
        });
        let err = refuse_unknown(&config, &unknown, &lines).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/etc/slurm/topology.toml:7: rack[2].nodes: 19 node(s) not defined by any \
             NodeName= in slurm.conf: rack2 (line 7): xx[019-036] (18); rack3 (line 11): yy1 (1)"
        );
        assert_eq!(refuse_unknown(&config, &[], &lines), Ok(()));
    }
}
