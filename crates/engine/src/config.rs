//! Admin configuration: which nodes form each NVL72 rack (NVLink domain) and how jobs should
//! be placed on them.
//!
//! The preferred file is `topology.toml` next to slurm.conf; a topology/block `topology.conf`
//! (`BlockName=` lines) is accepted as a fallback so sites can switch plugins without writing a
//! new file, and because configless slurmd only receives topology.conf. Both formats go
//! through the same validation, and every error names the file, line and field so an admin
//! can fix it without reading code.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::hostlist;

mod block_conf;
mod diff;
pub mod last_good;
pub mod lines;
mod switches;
mod toml_file;

#[cfg(test)]
mod tests;

pub use block_conf::parse_block_conf;
pub use diff::describe_changes;
pub use switches::Switches;
pub use toml_file::{parse_policy, parse_toml};

/// Upper bound for `trays_per_rack`; far above any NVL rack, low enough that a typo cannot make
/// us expand or allocate absurd amounts.
pub const MAX_TRAYS_PER_RACK: u32 = 1024;
/// Upper bound for `gpus_per_tray`, same reasoning as [`MAX_TRAYS_PER_RACK`].
pub const MAX_GPUS_PER_TRAY: u32 = 1024;
/// `prefer_piece_multiple`'s default: 8 trays (32 GPUs) keeps whole every power-of-two group
/// up to an EP32 expert group or a 32-GPU pipeline stage, and 16 + 16 costs an 18-tray rack
/// nothing the job was not leaving free anyway (docs/decisions.md, 2026-12-06).
pub const DEFAULT_PREFER_PIECE_MULTIPLE: u32 = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Physical slots per rack, i.e. the most nodes one rack may list (18 on GB200 NVL72).
    pub trays_per_rack: u32,
    pub gpus_per_tray: u32,
    /// In file order, so rack indices are stable across reconfigures of an unchanged file.
    pub racks: Vec<RackConfig>,
    pub policy: Policy,
    /// Kept for log and error messages.
    pub source: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RackConfig {
    pub name: String,
    /// Expanded node names in file order.
    pub nodes: Vec<String>,
    /// NVLink clique / ClusterUUID.CliqueId label; shown to users, never interpreted.
    pub clique: Option<String>,
    /// Racks sharing a group are close on the scale-out fabric.
    pub group: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SegmentPlacement {
    /// A job that fits one rack takes one rack when one can hold it (else the fewest racks,
    /// like `Consolidate`): its segments may be cut apart, but a cut still costs it the
    /// cross-rack traffic. A larger job's segments go into the best-fitting holes, like
    /// `BestFit`, where consolidating lost goodput with failures (docs/decisions.md).
    #[default]
    OneRackFirst,
    /// Each segment goes into the best-fitting hole, like topology/block.
    BestFit,
    /// A job's segments go into as few racks as possible.
    Consolidate,
    /// Each segment of a job in a rack of its own (Slurm 25.11's `--spread-segments`).
    Spread,
}

/// Jobs without `--segment` that are larger than one rack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MultiRack {
    /// Wait until the fewest possible racks (`ceil(n / largest rack)`) can hold the job, then
    /// take the set of that many racks with the fewest free trays: partly used and degraded
    /// racks fill up and whole healthy racks stay free for full-rack jobs.
    #[default]
    FewestRacks,
    /// Start as soon as the free trays suffice, over as many racks as it takes, fullest racks
    /// first (higher occupancy, less NVLink locality).
    StartNow,
    /// The fewest racks, started as `FewestRacks` starts them, but in pieces as equal as the
    /// free trays allow (48 trays: 16 + 16 + 16 rather than 18 + 18 + 12): each rack then
    /// carries an equal share of the job's traffic between racks, and a rack with one or two
    /// unavailable trays can take a piece.
    Balanced,
}

/// Whether placement looks at when the jobs already on a rack are expected to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndTime {
    /// Best fit on free trays only.
    #[default]
    Off,
    /// Among racks of equal fit, the one whose running jobs end closest after this job.
    TieBreak,
    /// Weigh fit against how much longer this job keeps its rack from becoming whole:
    /// `end_time_hours_per_tray` hours of delay count as one tray of worse fit.
    Align,
}

/// Which rack a job that can start only by preemption clears (docs/config.md): the one whose
/// victims lose least by this measure, never taking a higher preemption tier than a lower
/// one would do. `Slurm` leaves the choice to Slurm's own candidate order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreemptionCost {
    /// The least GPU time since the victims started, then the fewest jobs.
    #[default]
    Work,
    /// The fewest jobs, then the least GPU time.
    Jobs,
    /// The fewest trays, then the fewest jobs.
    Trays,
    /// Slurm's order (lowest tier, then the smallest job), as without the plugin.
    Slurm,
}

impl PreemptionCost {
    /// The spelling used in topology.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptionCost::Work => "work",
            PreemptionCost::Jobs => "jobs",
            PreemptionCost::Trays => "trays",
            PreemptionCost::Slurm => "slurm",
        }
    }
}

impl EndTime {
    /// The spelling used in topology.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            EndTime::Off => "off",
            EndTime::TieBreak => "tie-break",
            EndTime::Align => "align",
        }
    }
}

impl MultiRack {
    /// The spelling used in topology.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            MultiRack::FewestRacks => "fewest-racks",
            MultiRack::StartNow => "start-now",
            MultiRack::Balanced => "balanced",
        }
    }

    /// The job gets exactly the fewest racks that can hold it, or waits.
    pub fn fewest_racks_only(self) -> bool {
        matches!(self, MultiRack::FewestRacks | MultiRack::Balanced)
    }
}

impl SegmentPlacement {
    /// The spelling used in topology.toml, for logs and [`Config::to_toml`].
    pub fn as_str(self) -> &'static str {
        match self {
            SegmentPlacement::OneRackFirst => "one-rack-first",
            SegmentPlacement::BestFit => "best-fit",
            SegmentPlacement::Consolidate => "consolidate",
            SegmentPlacement::Spread => "spread",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    pub segment_placement: SegmentPlacement,
    pub multi_rack: MultiRack,
    /// On ties, fill racks that are already degraded or partly used, keeping whole healthy
    /// racks free for full-rack jobs.
    pub prefer_degraded: bool,
    /// Multi-rack jobs prefer racks that share a `group`.
    pub prefer_same_group: bool,
    /// Log every placement decision at info level (debugging aid; noisy on busy clusters).
    pub log_decisions: bool,
    /// Racks that empty together: use the expected end of the jobs on each rack.
    pub end_time: EndTime,
    /// With `end_time = "align"`: hours a rack stays broken longer that weigh one tray.
    pub end_time_hours_per_tray: u32,
    /// Partitions whose jobs Slurm's generic selection places, without the rack rule: what
    /// `Topology=flat` gives a partition with topology.yaml (e.g. NVIDIA's admin partition).
    pub flat_partitions: Vec<String>,
    /// The rack limit of jobs that do not pass `--switches` (off: none, today's rules).
    pub switches: Switches,
    /// A multi-rack job without `--segment` is cut only between groups of this many trays:
    /// every piece but the last (in node order) holds a multiple of it, so a tensor- or
    /// expert-parallel group the site's jobs keep together never spans two racks. 1: any cut.
    pub piece_multiple: u32,
    /// Within the racks a multi-rack job gets anyway, cut it after a multiple of this many
    /// trays when those racks allow it (16 + 16 rather than 18 + 14): a preference that never
    /// changes the racks or makes a job wait, so groups of up to this many trays (and every
    /// power of two below it) stay on NVLink at no cost to packing. 1: fullest racks first.
    pub prefer_piece_multiple: u32,
    /// Which rack a job that needs preemption clears (issue 52).
    pub preemption_cost: PreemptionCost,
}

impl Policy {
    /// Does a job evaluated for partition `name` bypass rack placement? Slurm's partition
    /// names are case-sensitive, and so is this.
    pub fn is_flat(&self, name: &str) -> bool {
        self.flat_partitions.iter().any(|p| p == name)
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            segment_placement: SegmentPlacement::OneRackFirst,
            multi_rack: MultiRack::FewestRacks,
            prefer_degraded: true,
            prefer_same_group: true,
            log_decisions: false,
            end_time: EndTime::Off,
            end_time_hours_per_tray: 2,
            flat_partitions: Vec::new(),
            switches: Switches::Off,
            piece_multiple: 1,
            prefer_piece_multiple: DEFAULT_PREFER_PIECE_MULTIPLE,
            preemption_cost: PreemptionCost::Work,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            trays_per_rack: 18,
            gpus_per_tray: 4,
            racks: Vec::new(),
            policy: Policy::default(),
            source: PathBuf::new(),
        }
    }
}

/// A configuration problem, located precisely enough to fix it: displays as
/// `<file>:<line>: <field>: <message>`, leaving out the parts that are unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based.
    pub line: Option<usize>,
    /// e.g. `rack[2].nodes` (racks counted from 1) or `BlockName`.
    pub field: Option<String>,
    pub message: String,
}

impl ConfigError {
    fn new(
        file: &Path,
        line: Option<usize>,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            file: file.to_path_buf(),
            line,
            field: field.map(str::to_string),
            message: message.into(),
        }
    }
}

impl ConfigError {
    /// A file that could not be read at all.
    pub fn unreadable(file: &Path, e: &std::io::Error) -> Self {
        ConfigError::new(file, None, None, format!("cannot read file: {e}"))
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.file.as_os_str().is_empty() {
            write!(f, "{}:", self.file.display())?;
            if let Some(line) = self.line {
                write!(f, "{line}:")?;
            }
            f.write_str(" ")?;
        } else if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Reads `dir/topology.toml`, or failing that `dir/topology.conf`.
pub fn load_dir(dir: &Path) -> Result<Config, ConfigError> {
    for name in ["topology.toml", "topology.conf"] {
        let path = dir.join(name);
        if path.exists() {
            return load_file(&path);
        }
    }
    Err(ConfigError::new(
        dir,
        None,
        None,
        format!("no topology.toml or topology.conf in {}", dir.display()),
    ))
}

/// Parses `path` as topology.toml if it ends in `.toml`, else as a topology/block
/// topology.conf.
pub fn load_file(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::unreadable(path, &e))?;
    let is_toml = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    if is_toml {
        parse_toml(&text, path)
    } else {
        parse_block_conf(&text, path)
    }
}

impl Config {
    /// Renders a topology.toml that [`parse_toml`] reads back to an equal `Config` (apart from
    /// `source`), e.g. to show the effective configuration or to convert a topology.conf.
    pub fn to_toml(&self) -> String {
        let p = &self.policy;
        let mut out = format!(
            "trays_per_rack = {}\ngpus_per_tray = {}\n\n[policy]\n\
             multi_rack = {}\nprefer_degraded = {}\n\
             prefer_same_group = {}\nlog_decisions = {}\nend_time = {}\n\
             end_time_hours_per_tray = {}\nflat_partitions = [{}]\n",
            self.trays_per_rack,
            self.gpus_per_tray,
            quote(p.multi_rack.as_str()),
            p.prefer_degraded,
            p.prefer_same_group,
            p.log_decisions,
            quote(p.end_time.as_str()),
            p.end_time_hours_per_tray,
            p.flat_partitions
                .iter()
                .map(|n| quote(n))
                .collect::<Vec<_>>()
                .join(", "),
        );
        if p.segment_placement != SegmentPlacement::default() {
            // Only when not the default: builds from before `one-rack-first` refuse that
            // value, and read a last good copy without the key as their own default.
            out.push_str(&format!(
                "segment_placement = {}\n",
                quote(p.segment_placement.as_str())
            ));
        }
        if p.switches != Switches::Off {
            // Only when set: a last good copy of a file without it stays readable, without a
            // note, by builds from before the key.
            out.push_str(&format!("switches = {}\n", p.switches.as_toml()));
        }
        if p.piece_multiple != 1 {
            out.push_str(&format!("piece_multiple = {}\n", p.piece_multiple));
        }
        if p.prefer_piece_multiple != DEFAULT_PREFER_PIECE_MULTIPLE {
            out.push_str(&format!(
                "prefer_piece_multiple = {}\n",
                p.prefer_piece_multiple
            ));
        }
        if p.preemption_cost != PreemptionCost::default() {
            out.push_str(&format!(
                "preemption_cost = {}\n",
                quote(p.preemption_cost.as_str())
            ));
        }
        for rack in &self.racks {
            let mut nodes = hostlist::compress(&rack.nodes);
            // compress sorts; fall back to a plain list when that would change the order.
            if hostlist::expand(&nodes).ok().as_ref() != Some(&rack.nodes) {
                nodes = rack.nodes.join(",");
            }
            out.push_str(&format!(
                "\n[[rack]]\nname = {}\nnodes = {}\n",
                quote(&rack.name),
                quote(&nodes)
            ));
            for (key, value) in [("clique", &rack.clique), ("group", &rack.group)] {
                if let Some(value) = value {
                    out.push_str(&format!("{key} = {}\n", quote(value)));
                }
            }
        }
        out
    }
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// 1-based line of a byte offset; offsets past the end count as the last line.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Checks `trays_per_rack` / `gpus_per_tray` style counts.
fn check_count(
    file: &Path,
    value: u32,
    max: u32,
    line: Option<usize>,
    field: &str,
) -> Result<u32, ConfigError> {
    if value == 0 || value > max {
        return Err(ConfigError::new(
            file,
            line,
            Some(field),
            format!("must be between 1 and {max}, got {value}"),
        ));
    }
    Ok(value)
}

/// A rack as written in either file format, before validation. Fields carry their line and
/// the name to show in errors (`rack[2].nodes`, `Nodes`, ...).
struct RawRack {
    name: String,
    name_line: usize,
    name_field: String,
    nodes: String,
    nodes_line: usize,
    nodes_field: String,
    clique: Option<String>,
    group: Option<String>,
}

/// The node limit a rack is checked against, and how to name it in the error.
struct NodeLimit<'a> {
    max: u32,
    what: &'a str,
}

/// Validation shared by both formats: names, hostlists, sizes and overlaps.
fn build_racks(
    file: &Path,
    raw: Vec<RawRack>,
    limit: NodeLimit<'_>,
) -> Result<Vec<RackConfig>, ConfigError> {
    let mut racks: Vec<RackConfig> = Vec::with_capacity(raw.len());
    let mut name_lines: HashMap<String, usize> = HashMap::new();
    // node -> index of the rack that lists it
    let mut owner: HashMap<String, usize> = HashMap::new();
    let mut nodes_lines: Vec<usize> = Vec::with_capacity(raw.len());

    for (index, r) in raw.into_iter().enumerate() {
        let name_err =
            |msg: String| ConfigError::new(file, Some(r.name_line), Some(&r.name_field), msg);
        let nodes_err =
            |msg: String| ConfigError::new(file, Some(r.nodes_line), Some(&r.nodes_field), msg);
        if r.name.is_empty() {
            return Err(name_err("rack name is empty".into()));
        }
        if let Some(bad) = r
            .name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
        {
            return Err(name_err(format!(
                "rack name `{}` contains `{bad}`; use only A-Z a-z 0-9 _ . -",
                r.name
            )));
        }
        if let Some(first) = name_lines.get(&r.name) {
            return Err(name_err(format!(
                "rack name {} is already used at line {first}",
                r.name
            )));
        }
        name_lines.insert(r.name.clone(), r.name_line);

        // Count before expanding so an oversized range never gets allocated.
        let count =
            hostlist::count(&r.nodes).map_err(|e| nodes_err(format!("bad hostlist: {e}")))?;
        if count == 0 {
            return Err(nodes_err(format!("rack {} lists no nodes", r.name)));
        }
        if count > limit.max as usize {
            return Err(nodes_err(format!(
                "rack {} lists {count} nodes, more than {} ({})",
                r.name, limit.what, limit.max
            )));
        }
        let nodes =
            hostlist::expand(&r.nodes).map_err(|e| nodes_err(format!("bad hostlist: {e}")))?;
        for node in &nodes {
            match owner.get(node) {
                Some(&i) if i == index => {
                    return Err(nodes_err(format!(
                        "node {node} is listed twice in rack {}",
                        r.name
                    )));
                }
                Some(&i) => {
                    return Err(nodes_err(format!(
                        "node {node} is already in rack {} (line {})",
                        racks[i].name, nodes_lines[i]
                    )));
                }
                None => {
                    owner.insert(node.clone(), index);
                }
            }
        }
        nodes_lines.push(r.nodes_line);
        racks.push(RackConfig {
            name: r.name,
            nodes,
            clique: r.clique,
            group: r.group,
        });
    }
    Ok(racks)
}
