//! `nvl72 discover`: write topology.toml from what the nodes themselves report about their
//! NVLink domain, instead of from a hand-maintained rack list.
//!
//! Every GB200 GPU reports, in the `Fabric` section of `nvidia-smi -q`, the NVLink domain it
//! registered with: `ClusterUUID` and `CliqueId` (GPU Feature Discovery labels nodes with
//! `nvidia.com/gpu.clique=<ClusterUUID>.<CliqueId>`). GPUs with the same pair can reach each
//! other over NVLink, so one clique is one rack for the plugin.
//!
//! Inputs, each turned into one [`NodeReport`] per node:
//! - [`parse_nvidia_smi`]: one node's `nvidia-smi -q` text; [`from_dir`]: a directory with
//!   one such file per node, the file name being the node name (`.txt`, `.log` or `.out`
//!   stripped);
//! - [`from_stream`]: the same output gathered by pdsh or clush (`gb001: GPU 0000...`),
//!   split by the host prefix;
//! - [`from_features`]: `sinfo -N -h -o "%N %f"`, where a node feature
//!   `clique=<ClusterUUID>.<CliqueId>` or `nvl_clique_<ClusterUUID>.<CliqueId>` names the
//!   node's clique (both spellings are accepted; the first is what GFD's label looks like,
//!   the second suits sites that keep `=` out of feature names).
//!
//! [`discover`] groups the nodes into racks and lists what needs an admin's attention as
//! [`Finding`]s; [`Discovery::to_toml`] renders a topology.toml with those findings as a
//! comment header. The rules:
//! - a GPU votes for its clique only if its fabric registration finished (`State:
//!   Completed`, `Status: Success`): NVML defines the status only for a completed
//!   registration, and a GPU still registering, or one that failed, may show no clique or
//!   a stale one. Such GPUs are an error naming their bus ids. GPUs outside any fabric
//!   (`State: N/A` or `Not Supported`, no Fabric section) simply have no clique;
//! - a node joins the clique of its voting GPUs; if they disagree it joins the clique of a
//!   strict majority, or none (error either way);
//! - a node without a voting GPU is left out (warning). An all-zero `ClusterUUID`, which
//!   single-node NVSwitch systems such as HGX H100 report, is no clique;
//! - racks are named `rack1`, `rack2`, ... in the natural order of their first node
//!   (`gb2` < `gb10`), so re-running on the same nodes gives the same names;
//! - a clique with another size than `trays_per_rack` is a warning (fewer) or an error
//!   (more: the file then raises `trays_per_rack` so it still loads). Cliques sharing one
//!   `ClusterUUID` that are all undersized are one NVLink domain split into partitions;
//!   each stays its own rack, with a warning.
#![forbid(unsafe_code)]

use std::cmp::Ordering;
use std::fmt;
use std::path::PathBuf;

use nvl72_engine::config::{Config, RackConfig};

mod group;
mod parse;

#[cfg(test)]
mod tests;

pub use group::discover;
pub use parse::{from_dir, from_features, from_stream, parse_nvidia_smi};

/// An NVLink clique: `<ClusterUUID>.<CliqueId>`, the value of GFD's `nvidia.com/gpu.clique`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Clique {
    /// Lower case, as nvidia-smi prints it.
    pub cluster_uuid: String,
    pub clique_id: u32,
}

impl Clique {
    /// Builds a clique from the two nvidia-smi fields. `None` for `N/A`, text that is not a
    /// hex UUID or a number, and the all-zero UUID (a GPU in no multi-node NVLink domain).
    pub fn new(cluster_uuid: &str, clique_id: &str) -> Option<Clique> {
        let uuid = cluster_uuid.trim().to_ascii_lowercase();
        let is_uuid = !uuid.is_empty() && uuid.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if !is_uuid || uuid.chars().all(|c| c == '0' || c == '-') {
            return None;
        }
        Some(Clique {
            cluster_uuid: uuid,
            clique_id: clique_id.trim().parse().ok()?,
        })
    }

    /// Parses the label form `<ClusterUUID>.<CliqueId>`.
    pub fn parse(label: &str) -> Option<Clique> {
        let (uuid, id) = label.trim().rsplit_once('.')?;
        Clique::new(uuid, id)
    }
}

impl fmt::Display for Clique {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.cluster_uuid, self.clique_id)
    }
}

/// One GPU's `Fabric` section, fields as printed (`None` when the line is missing).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuFabric {
    /// PCI bus id from the `GPU 00000008:01:00.0` header.
    pub bus_id: String,
    pub state: Option<String>,
    pub status: Option<String>,
    pub cluster_uuid: Option<String>,
    pub clique_id: Option<String>,
}

impl GpuFabric {
    /// Fabric registration finished without error, so the clique fields can be trusted.
    pub fn is_ready(&self) -> bool {
        let is = |field: &Option<String>, want: &str| {
            field
                .as_deref()
                .is_some_and(|v| v.eq_ignore_ascii_case(want))
        };
        is(&self.state, "Completed") && is(&self.status, "Success")
    }

    /// The clique the GPU reports, if the fields name one (see [`Clique::new`]).
    pub fn clique(&self) -> Option<Clique> {
        Clique::new(self.cluster_uuid.as_deref()?, self.clique_id.as_deref()?)
    }
}

/// What one node said about its NVLink domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    /// Slurm node name.
    pub node: String,
    pub answer: Answer,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Parsed `nvidia-smi -q`, one entry per GPU (empty if it listed none).
    Gpus(Vec<GpuFabric>),
    /// Clique labels from Slurm node features (`<ClusterUUID>.<CliqueId>`, unparsed so a
    /// malformed one can be reported); empty when the node has no clique feature.
    Features(Vec<String>),
    /// The node produced no output; the text says why (e.g. pdsh's `ssh exited with ...`).
    NoAnswer(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The file is usable, but check it (undersized rack, node left out, ...).
    Warning,
    /// Hardware or fabric state that needs fixing (GPU not registered, mixed cliques).
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// Something an admin should look at. Displays as `warning: gb005: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// The node, or a hostlist when several nodes have the very same finding; `None` for
    /// findings about racks.
    pub node: Option<String>,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.severity)?;
        if let Some(node) = &self.node {
            write!(f, "{node}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// One discovered rack: the nodes of one clique, in natural order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rack {
    pub name: String,
    pub clique: Clique,
    pub nodes: Vec<String>,
}

/// The result of [`discover`]: racks and findings, ready to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    racks: Vec<Rack>,
    findings: Vec<Finding>,
    trays_per_rack: u32,
    gpus_per_tray: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} and {} are both for node {node}", first.display(), second.display())]
    DuplicateNode {
        node: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("no rack found: no node reported an NVLink clique")]
    NoRacks,
}

impl Discovery {
    pub fn racks(&self) -> &[Rack] {
        &self.racks
    }

    /// Node findings in natural node order, then rack findings.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }

    /// The racks as a configuration with the default policy. `trays_per_rack` is raised to
    /// the largest rack if one is bigger (reported as an error by [`discover`]), so the
    /// result always validates.
    pub fn to_config(&self) -> Result<Config, DiscoverError> {
        let largest = self.racks.iter().map(|r| r.nodes.len()).max();
        let largest = largest.ok_or(DiscoverError::NoRacks)?;
        Ok(Config {
            trays_per_rack: self.trays_per_rack.max(largest as u32),
            gpus_per_tray: self.gpus_per_tray,
            racks: self
                .racks
                .iter()
                .map(|r| RackConfig {
                    name: r.name.clone(),
                    nodes: r.nodes.clone(),
                    clique: Some(r.clique.to_string()),
                    group: None,
                })
                .collect(),
            ..Config::default()
        })
    }

    /// topology.toml text: a comment header with every finding, then
    /// [`Config::to_toml`] of [`Discovery::to_config`], so it parses back to that config.
    pub fn to_toml(&self) -> Result<String, DiscoverError> {
        let config = self.to_config()?;
        let nodes: usize = self.racks.iter().map(|r| r.nodes.len()).sum();
        let mut out = String::from(
            "# topology.toml for topology/nvl72, written by `nvl72 discover` from the NVLink\n\
             # clique (ClusterUUID.CliqueId) each node reported: one [[rack]] per clique, racks\n\
             # numbered by their first node so re-running on the same nodes keeps the names.\n#\n",
        );
        out.push_str(&format!(
            "# {}, {}; {}{}\n",
            plural(self.racks.len(), "rack"),
            plural(nodes, "node"),
            plural(self.findings.len(), "finding"),
            if self.findings.is_empty() { "." } else { ":" }
        ));
        for finding in &self.findings {
            // One comment line each, whatever the input text contained.
            let line: String = finding
                .to_string()
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            out.push_str(&format!("# {line}\n"));
        }
        out.push('\n');
        out.push_str(&config.to_toml());
        Ok(out)
    }
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Natural order of node names: digit runs compare as numbers (`gb2` < `gb10`), equal
/// numbers with less padding first (`gb1` < `gb01`, as [`nvl72_engine::hostlist::compress`]
/// orders them), digits before other characters.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let (dx, rx) = split_digits(x);
                let (dy, ry) = split_digits(y);
                let (vx, vy) = (trim_zeros(dx), trim_zeros(dy));
                let by_value = vx.len().cmp(&vy.len()).then_with(|| vx.cmp(vy));
                let ord = by_value.then_with(|| dx.len().cmp(&dy.len()));
                if ord != Ordering::Equal {
                    return ord;
                }
                (x, y) = (rx, ry);
            }
            (Some(p), Some(q)) => {
                let ord = match (p.is_ascii_digit(), q.is_ascii_digit()) {
                    (true, false) => Ordering::Less,
                    (false, true) => Ordering::Greater,
                    _ => p.cmp(q),
                };
                if ord != Ordering::Equal {
                    return ord;
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    s.split_at(n)
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let n = digits.iter().take_while(|&&c| c == b'0').count();
    &digits[n..]
}
