//! `nvl72 check`: validates a topology.toml (or topology/block topology.conf) against
//! slurm.conf and gres.conf before an admin runs `scontrol reconfigure`.
//!
//! The file itself goes through the plugin's own loader ([`config::load_file`] /
//! [`config::load_dir`]), so a file the plugin would refuse is reported with the very same
//! `file:line: field: message`. On top of that come the cross-checks against Slurm's files.
//!
//! ```no_run
//! use nvl72_admin::check::{check, CheckInput};
//! let report = check(&CheckInput::new("/etc/slurm/slurm.conf"));
//! print!("{}", report.render());
//! std::process::exit(report.exit_code());
//! ```
//!
//! Problems are reported in this order, each as `file:line: error|warning: message`:
//!
//! | Check | Severity |
//! |---|---|
//! | the topology file breaks a plugin rule (syntax, unknown key, node in two racks, rack larger than `trays_per_rack`, ...) | error (only the first, as the plugin) |
//! | `topology.conf` checked while a `topology.toml` sits next to it (the plugin reads the toml) | warning |
//! | topology.conf without `BlockSizes=` and a block of more than 18 nodes (the parser allows any size then) | warning |
//! | policy knobs that have no effect (`end_time_hours_per_tray` without `end_time = "align"`, `prefer_same_group = true` without two racks sharing a `group`) | warning |
//! | slurm.conf / gres.conf unreadable, bad `Include`, bad `NodeName` hostlist, node defined twice | error |
//! | rack nodes that slurm.conf does not define (slurmctld refuses the whole file) | error, at the rack's line |
//! | slurm.conf GPUs of rack nodes differ from `gpus_per_tray`, one line per distinct count | warning |
//! | gres.conf gives rack nodes fewer GPUs than slurm.conf (slurmctld drains them) | error |
//! | gres.conf gives rack nodes more GPUs than slurm.conf (Slurm ignores the excess) | warning |
//! | slurm.conf nodes with GPUs in no rack (Slurm's generic selection places them) | warning |
//! | a `flat_partitions` name that no `PartitionName=` defines | error, at its line |
//! | a flat partition without rack nodes (it changes nothing) | warning, at its line |
//! | `TopologyPlugin` is not `topology/nvl72` | warning |
//! | a `topology.yaml` next to slurm.conf (25.05+ read it instead and never load the plugin) | error on 25.05+, warning on 24.11 |
//! | the installed plugin (`topology_nvl72.so` in PluginDir) was built for another Slurm release than slurmctld runs, or than the installed Slurm a restart starts; or it is missing, or no Slurm plugin ([`release`]) | error |
//! | the same for a plugin not yet installed (`--plugin FILE`) | warning |
//! | slurmctld not reachable, or the packages already upgraded and slurmctld not yet restarted | note |
//! | another `SlurmctldHost` last loaded other racks than this file (its copy in StateSaveLocation, `check/controllers.rs`) | warning |
//! | this host's controller last loaded other racks (a reconfigure applies the file) | note |
//!
//! GPU counts: slurmctld schedules with slurm.conf's `Gres=` (a node without a gpu there has
//! none, whatever gres.conf says), so that is what is compared with `gpus_per_tray`; gres.conf
//! is only compared with slurm.conf. A GPU mismatch is a warning because Slurm still places
//! and charges GPUs per node; only the plugin's notion of a whole tray is off.
//!
//! Exit code ([`Report::exit_code`]): 0 when there is no error (warnings and notes allowed, so
//! `nvl72 check && scontrol reconfigure` works), 1 when there is at least one error. A note
//! says what was not checked, or a state that needs no change.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use nvl72_engine::config::{self, Config, ConfigError, EndTime};

mod controllers;
mod cross;
pub mod release;
mod slurm_conf;
mod slurm_lines;
#[cfg(test)]
mod tests;

use cross::Cross;
use nvl72_engine::config::lines::TopologyLines;
use release::ReleaseInput;
use slurm_conf::SlurmConf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    /// Neither counted nor affecting the exit code: what was not checked, and why.
    Note,
}

/// One finding, displayed like a compiler diagnostic: `file:line: error: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    /// 1-based; `None` for problems of a whole file (or a key left at its default).
    pub line: Option<usize>,
    pub severity: Severity,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, "{line}:")?;
        }
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        };
        write!(f, " {severity}: {}", self.message)
    }
}

/// What to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckInput {
    /// topology.toml or topology.conf (parser chosen by extension, as the plugin does), or a
    /// directory to look in like the plugin (topology.toml, else topology.conf).
    pub topology: PathBuf,
    pub slurm_conf: PathBuf,
    /// Default: gres.conf next to slurm.conf, if it exists.
    pub gres_conf: Option<PathBuf>,
    /// The plugin's Slurm release against slurmctld's ([`release`]); `None` (the default)
    /// skips it.
    pub release: Option<ReleaseInput>,
    /// `scontrol show topology` of the running slurmctld, to report rack placement switched
    /// off ([`nvl72_engine::topoinfo::PLACEMENT_OFF`]); `None` (the default) skips it.
    pub show_topology: Option<String>,
    /// The short hostname this runs on, to tell this controller's copy of the racks from the
    /// others' (the `controllers` module); [`CheckInput::new`] reads it.
    pub this_host: Option<String>,
    /// The running slurmctld's jobs that hold trays, to refuse a file that takes one out of
    /// the rack it runs in ([`nvl72_engine::held_trays`]); `None` (the default) skips it.
    pub held_jobs: Option<Vec<nvl72_engine::held_trays::HeldJob>>,
    /// Whether the Slurm that reads these files builds its topologies from topology.yaml
    /// when it exists (25.05 and later); `false` (the default) is 24.11. A run-time input, so
    /// this crate is the same for every series: `nvl72` passes the series it was built for.
    pub reads_topology_yaml: bool,
}

impl CheckInput {
    /// What the plugin would read: the topology file next to `slurm_conf`.
    pub fn new(slurm_conf: impl Into<PathBuf>) -> CheckInput {
        let slurm_conf = slurm_conf.into();
        CheckInput {
            topology: dir_of(&slurm_conf).to_path_buf(),
            slurm_conf,
            gres_conf: None,
            release: None,
            show_topology: None,
            this_host: config::last_good::this_host(),
            held_jobs: None,
            reads_topology_yaml: false,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub problems: Vec<Problem>,
    /// The topology as the plugin would load it, if it loads.
    pub config: Option<Config>,
}

impl Report {
    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }

    fn count(&self, severity: Severity) -> usize {
        self.problems
            .iter()
            .filter(|p| p.severity == severity)
            .count()
    }

    /// One line per problem, each ending in a newline; empty when all is well.
    pub fn render(&self) -> String {
        self.problems.iter().map(|p| format!("{p}\n")).collect()
    }

    /// e.g. `4 racks, 72 trays: 1 error, 2 warnings`; flat partitions are named after the
    /// trays (`4 racks, 72 trays, flat partition admin: ...`).
    pub fn summary(&self) -> String {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let counts = format!(
            "{}, {}",
            plural(self.errors(), "error"),
            plural(self.warnings(), "warning")
        );
        match &self.config {
            Some(c) => {
                let flat = &c.policy.flat_partitions;
                let flat = match flat.len() {
                    0 => String::new(),
                    1 => format!(", flat partition {}", flat[0]),
                    _ => format!(", flat partitions {}", flat.join(", ")),
                };
                format!(
                    "{}: {}, {}{flat}: {counts}",
                    c.source.display(),
                    plural(c.racks.len(), "rack"),
                    plural(c.racks.iter().map(|r| r.nodes.len()).sum(), "tray")
                )
            }
            None => counts,
        }
    }

    /// 0 without errors (warnings allowed), 1 with errors.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.errors() > 0)
    }
}

/// Runs every check; never fails, unreadable files are problems too.
pub fn check(input: &CheckInput) -> Report {
    let mut out = Vec::new();
    let loaded = if input.topology.is_dir() {
        config::load_dir(&input.topology)
    } else {
        config::load_file(&input.topology)
    };
    let config = match loaded {
        Ok(config) => Some(config),
        Err(e) => {
            out.push(config_error(e));
            None
        }
    };
    let lines = config.as_ref().map(|c| TopologyLines::read(&c.source));
    if let (Some(c), Some(l)) = (&config, &lines) {
        check_shadowed(c, &mut out);
        check_block_sizes(c, l, &mut out);
        check_policy(c, l, &mut out);
    }

    let slurm = slurm_conf::read_slurm_conf(&input.slurm_conf);
    out.extend(slurm.problems.iter().cloned());
    let default_gres = dir_of(&input.slurm_conf).join("gres.conf");
    let gres_path = match &input.gres_conf {
        Some(path) => Some(path.clone()),
        None => default_gres.is_file().then_some(default_gres),
    };
    let gres = gres_path.map(|p| slurm_conf::read_gres_conf(&p, &input.slurm_conf));
    if let Some(g) = &gres {
        out.extend(g.problems.iter().cloned());
    }

    if let (Some(c), Some(l), true) = (&config, &lines, slurm.readable) {
        let cross = Cross {
            config: c,
            lines: l,
            slurm: &slurm,
        };
        cross.undefined_nodes(&mut out);
        cross.gpus_per_tray(&mut out);
        if let Some(g) = &gres {
            cross.gres_conf(g, &mut out);
        }
        cross.unracked_gpu_nodes(&mut out);
        cross.flat_partitions(&mut out);
    }
    if slurm.readable {
        check_plugin(input, &slurm, &mut out);
    }
    let off = input
        .show_topology
        .as_deref()
        .and_then(nvl72_engine::topoinfo::placement_off_in);
    if let Some(why) = off {
        out.push(problem(
            &input.slurm_conf,
            None,
            Severity::Error,
            format!(
                "the running slurmctld switched rack placement off: {why}; Slurm's generic \
                 selection places every job until the plugin is rebuilt for this release"
            ),
        ));
    }
    if let (Some(c), Some(dir)) = (&config, &slurm.state_save_location) {
        let this_host = input.this_host.as_deref();
        controllers::compare(c, Path::new(dir), &slurm.controllers, this_host, &mut out);
        if let (Some(l), Some(jobs)) = (&lines, &input.held_jobs) {
            check_held_trays(c, l, Path::new(dir), jobs, &mut out);
        }
    }
    if let Some(r) = &input.release {
        release::check(r, &input.slurm_conf, &slurm, &mut out);
    }
    Report {
        problems: out,
        config,
    }
}

fn dir_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new(""))
}

/// The same rule as `config::load_file`.
fn is_toml(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

/// The plugin's error, word for word after `file:line: error: `.
/// The racks in force are slurmctld's last good copy in StateSaveLocation; a file that takes
/// a tray a running job holds out of its rack there would be refused by the reconfigure.
fn check_held_trays(
    config: &Config,
    lines: &TopologyLines,
    state_save: &Path,
    jobs: &[nvl72_engine::held_trays::HeldJob],
    out: &mut Vec<Problem>,
) {
    let copy = state_save.join(config::last_good::FILE);
    let Ok(text) = std::fs::read_to_string(&copy) else {
        return; // no racks loaded yet, or StateSaveLocation is not readable here
    };
    if let Ok((in_force, _)) = config::last_good::parse(&text, &copy) {
        if let Err(e) = nvl72_engine::held_trays::refuse_moving_held(&in_force, config, jobs, lines)
        {
            out.push(config_error(e));
        }
    }
}

fn config_error(e: ConfigError) -> Problem {
    let message = match &e.field {
        Some(field) => format!("{field}: {}", e.message),
        None => e.message.clone(),
    };
    Problem {
        file: e.file,
        line: e.line,
        severity: Severity::Error,
        message,
    }
}

fn problem(file: &Path, line: Option<usize>, severity: Severity, message: String) -> Problem {
    Problem {
        file: file.to_path_buf(),
        line,
        severity,
        message,
    }
}

/// A checked topology.conf is not what the plugin reads when topology.toml sits next to it.
fn check_shadowed(c: &Config, out: &mut Vec<Problem>) {
    let name = c.source.file_name().and_then(|n| n.to_str());
    let toml = dir_of(&c.source).join("topology.toml");
    if name == Some("topology.conf") && toml.exists() {
        out.push(problem(
            &c.source,
            None,
            Severity::Warning,
            format!(
                "the plugin reads {} instead of this file when both are in the slurm.conf directory",
                toml.display()
            ),
        ));
    }
}

/// Without `BlockSizes=`, topology.conf blocks may have any size; a block larger than an
/// NVL72 rack is most likely a topology/block block of several racks.
fn check_block_sizes(c: &Config, l: &TopologyLines, out: &mut Vec<Problem>) {
    let default = u64::from(Config::default().trays_per_rack);
    if is_toml(&c.source) || l.block_sizes.is_some() {
        return;
    }
    for (i, rack) in c.racks.iter().enumerate() {
        if rack.nodes.len() as u64 > default {
            out.push(problem(
                &c.source,
                l.rack(i),
                Severity::Warning,
                format!(
                    "block {} lists {} nodes, more than the {default} trays of an NVL72 rack \
                     (without BlockSizes= any size is accepted; add BlockSizes={default})",
                    rack.name,
                    rack.nodes.len()
                ),
            ));
        }
    }
}

/// Policy combinations the parser accepts but that do nothing.
fn check_policy(c: &Config, l: &TopologyLines, out: &mut Vec<Problem>) {
    let p = &c.policy;
    if let (Some(line), false) = (l.end_time_hours_per_tray, p.end_time == EndTime::Align) {
        out.push(problem(
            &c.source,
            Some(line),
            Severity::Warning,
            format!(
                "end_time_hours_per_tray has no effect unless end_time = \"align\" (end_time is \"{}\")",
                p.end_time.as_str()
            ),
        ));
    }
    if let (Some(line), true) = (l.prefer_same_group, p.prefer_same_group) {
        let mut per_group: HashMap<&str, usize> = HashMap::new();
        for group in c.racks.iter().filter_map(|r| r.group.as_deref()) {
            *per_group.entry(group).or_default() += 1;
        }
        let why = if per_group.is_empty() {
            Some("no rack has a group")
        } else if per_group.values().all(|&n| n < 2) {
            Some("no two racks share a group")
        } else {
            None
        };
        if let Some(why) = why {
            out.push(problem(
                &c.source,
                Some(line),
                Severity::Warning,
                format!("prefer_same_group = true has no effect: {why}"),
            ));
        }
    }
}

fn check_plugin(input: &CheckInput, slurm: &SlurmConf, out: &mut Vec<Problem>) {
    const WANT: &str = "topology/nvl72";
    match &slurm.topology_plugin {
        Some((value, _)) if value == WANT => {}
        Some((value, loc)) => out.push(problem(
            &loc.file,
            Some(loc.line),
            Severity::Warning,
            format!("TopologyPlugin={value}: Slurm does not load topology/nvl72 (set TopologyPlugin={WANT})"),
        )),
        None => out.push(problem(
            &input.slurm_conf,
            None,
            Severity::Warning,
            format!("no TopologyPlugin, so Slurm uses topology/default (set TopologyPlugin={WANT})"),
        )),
    }
    let yaml = dir_of(&input.slurm_conf).join("topology.yaml");
    if yaml.exists() {
        out.push(yaml_problem(&yaml, input.reads_topology_yaml));
    }
}

/// Slurm 25.05 and later build their topologies from topology.yaml when it exists and then
/// never read `TopologyPlugin=`; the file cannot name topology/nvl72 (its parser knows only
/// Slurm's own plugins), so the plugin is not even loaded. 24.11 ignores the file.
fn yaml_problem(yaml: &Path, read: bool) -> Problem {
    let (severity, message) = if read {
        (
            Severity::Error,
            "Slurm reads this file instead of TopologyPlugin= and cannot name topology/nvl72 in \
             it, so topology/nvl72 is not loaded: remove or rename it on every host (it is also \
             sent to configless nodes)",
        )
    } else {
        (
            Severity::Warning,
            "Slurm 24.11 ignores this file, but 25.05 and later read it instead of \
             TopologyPlugin= and would not load topology/nvl72: remove or rename it before \
             upgrading",
        )
    };
    problem(yaml, None, severity, message.to_string())
}
