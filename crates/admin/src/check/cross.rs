//! Checks that compare the topology with slurm.conf and gres.conf (see the table in
//! `check.rs`).

use std::collections::{HashMap, HashSet};

use super::slurm_conf::{GresConf, GresGpus, Loc, NodeLine, SlurmConf};
use super::{is_toml, problem, Problem, Severity};
use nvl72_engine::config::lines::TopologyLines;
use nvl72_engine::config::Config;
use nvl72_engine::hostlist;

/// The node list of `key` in `groups`, appended (with `loc`, its first line) if new: keeps
/// groups in the order their first node appears.
fn group<'a, 'n, K: PartialEq, L>(
    groups: &'a mut Vec<(K, L, Vec<&'n str>)>,
    key: K,
    loc: L,
) -> &'a mut Vec<&'n str> {
    let i = match groups.iter().position(|g| g.0 == key) {
        Some(i) => i,
        None => {
            groups.push((key, loc, Vec::new()));
            groups.len() - 1
        }
    };
    &mut groups[i].2
}

/// Checks that compare the topology with slurm.conf and gres.conf.
pub(super) struct Cross<'a> {
    pub config: &'a Config,
    pub lines: &'a TopologyLines,
    pub slurm: &'a SlurmConf,
}

impl Cross<'_> {
    fn rack_nodes(&self) -> impl Iterator<Item = &str> {
        self.config
            .racks
            .iter()
            .flat_map(|r| r.nodes.iter().map(String::as_str))
    }

    /// The slurm.conf line defining `node`, if any.
    fn node_line(&self, node: &str) -> Option<&NodeLine> {
        let index = *self.slurm.node_index.get(node)?;
        Some(&self.slurm.node_lines[index])
    }

    pub fn undefined_nodes(&self, out: &mut Vec<Problem>) {
        for (i, rack) in self.config.racks.iter().enumerate() {
            let missing: Vec<&String> = rack
                .nodes
                .iter()
                .filter(|n| !self.slurm.node_index.contains_key(n.as_str()))
                .collect();
            if missing.is_empty() {
                continue;
            }
            out.push(problem(
                &self.config.source,
                self.lines.rack(i),
                Severity::Error,
                format!(
                    "rack {}: {} not defined by any NodeName= in slurm.conf; slurmctld refuses \
                     the whole file (a reconfigure fails, a start keeps the last good racks)",
                    rack.name,
                    hostlist::compress(&missing),
                ),
            ));
        }
    }

    pub fn gpus_per_tray(&self, out: &mut Vec<Problem>) {
        let want = u64::from(self.config.gpus_per_tray);
        // (GPU count, line of the first node's NodeName=, nodes), in rack order
        let mut by_count: Vec<(u64, &Loc, Vec<&str>)> = Vec::new();
        for node in self.rack_nodes() {
            let Some(def) = self.node_line(node) else {
                continue;
            };
            if def.gpus != want {
                group(&mut by_count, def.gpus, &def.loc).push(node);
            }
        }
        let source = match (is_toml(&self.config.source), self.lines.gpus_per_tray) {
            (true, Some(_)) => "",
            (true, None) => " (the default)",
            (false, _) => " (fixed in topology.conf; set it in a topology.toml)",
        };
        for (gpus, loc, nodes) in by_count {
            let has = match gpus {
                0 => format!("no GPUs (no gpu in Gres= of NodeName= at {loc})"),
                n => format!("{n} GPUs each (NodeName= at {loc})"),
            };
            out.push(problem(
                &self.config.source,
                self.lines.gpus_per_tray,
                Severity::Warning,
                format!(
                    "gpus_per_tray is {want}{source}, but slurm.conf gives {} {has}",
                    hostlist::compress(&nodes)
                ),
            ));
        }
    }

    pub fn gres_conf(&self, gres: &GresConf, out: &mut Vec<Problem>) {
        // ((gres.conf count, slurm.conf count), first gres.conf line, nodes), in rack order
        let mut groups: Vec<((u64, u64), Loc, Vec<&str>)> = Vec::new();
        let mut defs: HashMap<(u64, u64), &Loc> = HashMap::new();
        for node in self.rack_nodes() {
            let Some(def) = self.node_line(node) else {
                continue;
            };
            if let GresGpus::Known(n, loc) = gres.gpus(node) {
                if n != def.gpus {
                    defs.entry((n, def.gpus)).or_insert(&def.loc);
                    group(&mut groups, (n, def.gpus), loc).push(node);
                }
            }
        }
        for ((has, configured), loc, nodes) in groups {
            let nodes = hostlist::compress(&nodes);
            let def = defs[&(has, configured)];
            let (severity, consequence) = match configured {
                0 => (Severity::Warning, "Slurm ignores them"),
                c if has < c => (
                    Severity::Error,
                    "slurmctld drains them (gres/gpu count reported lower than configured)",
                ),
                _ => (Severity::Warning, "Slurm ignores the excess"),
            };
            let configured = match configured {
                0 => "none".to_string(),
                n => n.to_string(),
            };
            out.push(problem(
                &loc.file,
                Some(loc.line),
                severity,
                format!(
                    "gres.conf gives {nodes} {has} GPUs each but slurm.conf gives them {configured} \
                     (NodeName= at {def}); {consequence}"
                ),
            ));
        }
    }

    pub fn unracked_gpu_nodes(&self, out: &mut Vec<Problem>) {
        let racked: HashSet<&str> = self.rack_nodes().collect();
        for (index, def) in self.slurm.node_lines.iter().enumerate() {
            if def.gpus == 0 {
                continue;
            }
            let loose: Vec<&String> = def
                .names
                .iter()
                .filter(|n| self.slurm.node_index.get(n.as_str()) == Some(&index))
                .filter(|n| !racked.contains(n.as_str()))
                .collect();
            if loose.is_empty() {
                continue;
            }
            out.push(problem(
                &def.loc.file,
                Some(def.loc.line),
                Severity::Warning,
                format!(
                    "{} {} GPUs but {} in no rack of {}; Slurm's generic selection places {}",
                    hostlist::compress(&loose),
                    if loose.len() == 1 { "has" } else { "have" },
                    if loose.len() == 1 { "is" } else { "are" },
                    self.config.source.display(),
                    if loose.len() == 1 { "it" } else { "them" },
                ),
            ));
        }
    }
}

impl Cross<'_> {
    /// `[policy] flat_partitions` against slurm.conf's partitions: a name that slurm.conf does
    /// not define (a typo leaves the partition under the rack rule) is an error; a partition
    /// without rack nodes is a warning, because Slurm's generic selection places its jobs
    /// anyway.
    pub fn flat_partitions(&self, out: &mut Vec<Problem>) {
        let racked: HashSet<&str> = self.rack_nodes().collect();
        for (i, name) in self.config.policy.flat_partitions.iter().enumerate() {
            let line = self.lines.flat_partitions.get(i).copied();
            let Some(part) = self.slurm.partitions.iter().find(|p| &p.name == name) else {
                out.push(problem(
                    &self.config.source,
                    line,
                    Severity::Error,
                    format!(
                        "flat partition {name}: no PartitionName={name} in slurm.conf \
                         (partition names are case-sensitive), so no job gets flat placement"
                    ),
                ));
                continue;
            };
            if !part.unresolved && !part.nodes.iter().any(|n| racked.contains(n.as_str())) {
                out.push(problem(
                    &self.config.source,
                    line,
                    Severity::Warning,
                    format!(
                        "flat partition {name} (PartitionName= at {}) has no rack node; \
                         Slurm's generic selection places its jobs anyway",
                        part.loc
                    ),
                ));
            }
        }
    }
}
