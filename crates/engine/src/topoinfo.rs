//! What `scontrol show topology` prints: every rack with its trays and live counts.
//!
//! slurmctld builds a [`TopoInfo`] under its node read lock, sends it to the client as one
//! string (so the wire format is ours and versioned here, not a Slurm struct), and the client's
//! copy of the plugin prints it.
#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};

use crate::hostlist;
use crate::topology::Topology;
use crate::view::ClusterView;

/// Bumped when the fields change, so an old client reports a clear error instead of garbage.
pub const WIRE_VERSION: u32 = 1;
/// Sent instead of [`WIRE_VERSION`] when the live state is hidden: a client that predates
/// `live_hidden` would print every tray free, so it must refuse the message instead.
pub const WIRE_VERSION_HIDDEN: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopoInfo {
    pub version: u32,
    pub gpus_per_tray: u32,
    pub racks: Vec<RackInfo>,
    /// `PrivateData=nodes`: which trays are allocated or unavailable is not shown, as Slurm
    /// shows nodes only to operators then and the plugin is not told who asks.
    #[serde(default)]
    pub live_hidden: bool,
    /// Why slurmctld's plugin switched rack placement off (a record layout mismatch), if it
    /// did: printed first, and read by `nvl72 status` and `nvl72 check`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_off: Option<String>,
}

/// How `scontrol show topology` starts when rack placement is off; `nvl72 status` and
/// `nvl72 check` look for it.
pub const PLACEMENT_OFF: &str = "RackPlacement=OFF Reason=";

/// The reason after [`PLACEMENT_OFF`] in `scontrol show topology` output, if any.
pub fn placement_off_in(show_topology: &str) -> Option<String> {
    let rest = show_topology
        .lines()
        .find_map(|l| l.strip_prefix(PLACEMENT_OFF))?;
    let quoted = rest.strip_prefix('"').and_then(|r| r.split_once('"'));
    Some(quoted.map_or(rest, |(why, _)| why).to_string())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RackInfo {
    pub name: String,
    pub index: usize,
    pub nodes: Vec<String>,
    pub allocated: Vec<String>,
    pub unavailable: Vec<String>,
    pub group: Option<String>,
    pub clique: Option<String>,
}

impl RackInfo {
    pub fn free(&self) -> usize {
        self.nodes
            .len()
            .saturating_sub(self.allocated.len() + self.unavailable.len())
    }
}

impl TopoInfo {
    pub fn collect(topo: &Topology, view: &ClusterView) -> TopoInfo {
        let racks = topo
            .racks
            .iter()
            .enumerate()
            .map(|(index, d)| {
                let pick = |f: &dyn Fn(usize) -> bool| -> Vec<String> {
                    d.nodes
                        .iter()
                        .zip(&d.node_names)
                        .filter(|(n, _)| f(**n))
                        .map(|(_, name)| name.clone())
                        .collect()
                };
                RackInfo {
                    name: d.name.clone(),
                    index,
                    nodes: d.node_names.clone(),
                    unavailable: pick(&|n| view.tray(n).unavailable),
                    allocated: pick(&|n| view.tray(n).allocated && !view.tray(n).unavailable),
                    group: d.group.clone(),
                    clique: d.clique.clone(),
                }
            })
            .collect();
        TopoInfo {
            version: WIRE_VERSION,
            gpus_per_tray: topo.gpus_per_tray,
            racks,
            live_hidden: false,
            placement_off: None,
        }
    }

    /// The same racks without their live state (`PrivateData=nodes`).
    pub fn without_live_state(mut self) -> TopoInfo {
        for rack in &mut self.racks {
            rack.allocated.clear();
            rack.unavailable.clear();
        }
        self.live_hidden = true;
        self.version = WIRE_VERSION_HIDDEN;
        self
    }

    pub fn to_wire(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    pub fn from_wire(text: &str) -> Result<TopoInfo, String> {
        let info: TopoInfo =
            toml::from_str(text).map_err(|e| format!("malformed topology info: {e}"))?;
        let expected = match info.live_hidden {
            true => WIRE_VERSION_HIDDEN,
            false => WIRE_VERSION,
        };
        if info.version != expected {
            return Err(format!(
                "topology info version {} from slurmctld, this client understands {}",
                info.version, WIRE_VERSION
            ));
        }
        Ok(info)
    }

    /// Lines for `scontrol show topology [NAME]`: NAME is a rack, a rack group, or node names.
    pub fn render(&self, filter: Option<&str>) -> Result<String, String> {
        let filter = filter.map(str::trim).filter(|f| !f.is_empty());
        let selected: Vec<&RackInfo> = match filter {
            None => self.racks.iter().collect(),
            Some(f) => {
                let by_name: Vec<&RackInfo> = self
                    .racks
                    .iter()
                    .filter(|r| r.name == f || r.group.as_deref() == Some(f))
                    .collect();
                if by_name.is_empty() {
                    let wanted = hostlist::expand(f).map_err(|e| e.to_string())?;
                    self.racks
                        .iter()
                        .filter(|r| wanted.iter().any(|w| r.nodes.contains(w)))
                        .collect()
                } else {
                    by_name
                }
            }
        };
        if selected.is_empty() {
            return Err(match filter {
                Some(f) => format!("no rack, rack group or node named {f} in topology/nvl72"),
                None => "topology/nvl72 has no racks configured".into(),
            });
        }
        let off = self.placement_off.iter().map(|why| {
            format!("{PLACEMENT_OFF}\"{why}\" (Slurm's generic selection places every job)\n")
        });
        Ok(off
            .chain(selected.iter().map(|r| self.render_rack(r)))
            .collect())
    }

    fn render_rack(&self, r: &RackInfo) -> String {
        let list = |v: &[String]| {
            if v.is_empty() {
                "(none)".to_string()
            } else {
                hostlist::compress(v)
            }
        };
        if self.live_hidden {
            let mut line = format!(
                "RackName={} RackIndex={} Nodes={} Trays={} GPUs={}",
                r.name,
                r.index,
                list(&r.nodes),
                r.nodes.len(),
                r.nodes.len() as u64 * self.gpus_per_tray as u64,
            );
            self.push_labels(r, &mut line);
            line.push_str("\n   (free and allocated trays hidden: PrivateData=nodes)\n");
            return line;
        }
        let free = r.free();
        let mut line = format!(
            "RackName={} RackIndex={} Nodes={} Trays={} GPUs={} FreeTrays={} AllocatedTrays={} \
             UnavailableTrays={} FreeGPUs={}",
            r.name,
            r.index,
            list(&r.nodes),
            r.nodes.len(),
            r.nodes.len() as u64 * self.gpus_per_tray as u64,
            free,
            r.allocated.len(),
            r.unavailable.len(),
            free as u64 * self.gpus_per_tray as u64,
        );
        self.push_labels(r, &mut line);
        line.push_str(&format!(
            "\n   AllocatedNodes={} UnavailableNodes={}\n",
            list(&r.allocated),
            list(&r.unavailable)
        ));
        line
    }

    fn push_labels(&self, r: &RackInfo, line: &mut String) {
        if let Some(g) = &r.group {
            line.push_str(&format!(" Group={g}"));
        }
        if let Some(c) = &r.clique {
            line.push_str(&format!(" Clique={c}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TopoInfo {
        let (topo, view) = crate::testkit::racks(&["rack1 .x+.", "rack2 ...."]).parts();
        TopoInfo::collect(&topo, &view)
    }

    /// `PrivateData=nodes`: no live state on the wire, a line that says why, and a version
    /// that a client predating `live_hidden` refuses instead of printing every tray free.
    #[test]
    fn hidden_live_state_travels_as_version_two() {
        let hidden = sample().without_live_state();
        let wire = hidden.to_wire();
        assert!(wire.starts_with("version = 2\n"), "{wire}");
        let back = TopoInfo::from_wire(&wire).unwrap();
        assert!(sample().racks[0].allocated.len() + sample().racks[0].unavailable.len() > 0);
        assert!(back
            .racks
            .iter()
            .all(|r| r.allocated.is_empty() && r.unavailable.is_empty()));
        assert_eq!(back, hidden);
        assert_eq!(
            back.render(Some("rack1")).unwrap(),
            "RackName=rack1 RackIndex=0 Nodes=n[0-3] Trays=4 GPUs=16\n   \
             (free and allocated trays hidden: PrivateData=nodes)\n"
        );
        let forged = wire.replacen("live_hidden = true", "live_hidden = false", 1);
        assert!(TopoInfo::from_wire(&forged).is_err());
    }

    /// A layout mismatch switched placement off: the first line says so and why, whatever is
    /// asked for, and `nvl72 status` / `nvl72 check` read the reason back from it.
    #[test]
    fn placement_off_leads_the_output_and_reads_back() {
        let why = "built for Slurm 24.11.5 but this process's job records do not match that layout";
        let info = TopoInfo {
            placement_off: Some(why.into()),
            ..sample()
        };
        let info = TopoInfo::from_wire(&info.to_wire()).unwrap();
        let out = info.render(Some("rack2")).unwrap();
        assert!(
            out.starts_with(&format!(
                "RackPlacement=OFF Reason=\"{why}\" (Slurm's generic selection places every \
                 job)\nRackName=rack2 "
            )),
            "{out}"
        );
        assert_eq!(placement_off_in(&out).as_deref(), Some(why));
        assert_eq!(placement_off_in(&sample().render(None).unwrap()), None);
    }

    #[test]
    fn wire_round_trip() {
        let info = sample();
        assert_eq!(TopoInfo::from_wire(&info.to_wire()).unwrap(), info);
    }

    #[test]
    fn renders_counts_and_node_lists() {
        let text = sample().render(None).unwrap();
        assert!(
            text.contains("RackName=rack1 RackIndex=0 Nodes=n[0-3] Trays=4 GPUs=16"),
            "{text}"
        );
        assert!(
            text.contains("FreeTrays=2 AllocatedTrays=1 UnavailableTrays=1 FreeGPUs=8"),
            "{text}"
        );
        assert!(
            text.contains("AllocatedNodes=n2 UnavailableNodes=n1"),
            "{text}"
        );
    }

    #[test]
    fn filters_by_rack_or_node() {
        let info = sample();
        assert_eq!(info.render(Some("rack2")).unwrap().lines().count(), 2);
        assert!(info
            .render(Some("n5"))
            .unwrap()
            .starts_with("RackName=rack2"));
        assert!(info.render(Some("nosuch")).is_err());
    }

    #[test]
    fn rejects_other_wire_versions() {
        let mut info = sample();
        info.version = 99;
        assert!(TopoInfo::from_wire(&info.to_wire())
            .unwrap_err()
            .contains("version 99"));
    }
}
