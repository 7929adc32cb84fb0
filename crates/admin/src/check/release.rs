//! The plugin's Slurm release against slurmctld's, for upgrades.
//!
//! Slurm loads a plugin only when its exported `plugin_version` (`SLURM_VERSION_NUMBER`,
//! `major << 16 | minor << 8 | micro`) equals its own, micro version included
//! (`plugin_peek` in Slurm's `src/common/plugin.c`). slurmctld refuses any other and stops
//! with `fatal: Failed to initialize topology plugin` at a restart; `scontrol reconfigure`
//! starts a new slurmctld too, which fails the same way (the old one resumes, "reconfigure
//! failed"). So the release is read from the
//! `.so` file's symbol table, without loading it, and compared with the release slurmctld
//! runs (`scontrol show config`: `SLURM_VERSION`, from slurmctld) and the installed one
//! (`scontrol version`: the client's, which is what a restart starts).
//!
//! The facts about Slurm come in as [`Scontrol`] (gathered by [`ask_scontrol`]), so that
//! every decision here is tested without a Slurm installation.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use object::{Object, ObjectSection, ObjectSymbol};

use super::slurm_conf::SlurmConf;
use super::{problem, Problem, Severity};

/// The plugin's file name in PluginDir (`topology/nvl72` → `topology_nvl72.so`).
pub const PLUGIN_FILE: &str = "topology_nvl72.so";
/// Debian's PluginDir (package slurm-wlm-basic-plugins), Slurm's default there.
pub const DEBIAN_PLUGIN_DIR: &str = "/usr/lib/x86_64-linux-gnu/slurm-wlm";

/// A Slurm release, `24.11.5`: what `SLURM_VERSION_NUMBER` encodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Release {
    pub major: u8,
    pub minor: u8,
    pub micro: u8,
}

impl Release {
    /// From `SLURM_VERSION_NUMBER` (`0x180b05` = 24.11.5); the bits above 24 are ignored.
    pub fn from_number(n: u32) -> Release {
        let [_, major, minor, micro] = n.to_be_bytes();
        Release {
            major,
            minor,
            micro,
        }
    }

    pub fn number(self) -> u32 {
        u32::from_be_bytes([0, self.major, self.minor, self.micro])
    }

    /// Whether slurmctld of this release builds its topologies from topology.yaml (25.05 and
    /// later, the ctx interface) rather than from TopologyPlugin alone.
    pub fn reads_topology_yaml(self) -> bool {
        (self.major, self.minor) >= (25, 5)
    }

    /// `24.11.5`, also with a suffix Slurm puts on pre-releases (`25.11.0-0rc1`).
    pub fn parse(s: &str) -> Option<Release> {
        let mut parts = s.trim().splitn(3, '.');
        let mut next = || -> Option<u8> {
            let part = parts.next()?;
            let digits = part.len() - part.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            part[..digits].parse().ok()
        };
        Some(Release {
            major: next()?,
            minor: next()?,
            micro: next()?,
        })
    }
}

/// `24.11.5`, as Slurm prints it (`SLURM_VERSION_STRING`: the minor always of two digits).
impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}.{}", self.major, self.minor, self.micro)
    }
}

/// The Slurm release a plugin file was built for: its `plugin_version` symbol, read from the
/// ELF symbol table and the data of the section that holds it. The error says what the file
/// is instead (the caller names the file).
pub fn plugin_release(path: &Path) -> Result<Release, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    if !data.starts_with(b"\x7fELF") {
        return Err("not an ELF file, so not a Slurm plugin".into());
    }
    let file = object::File::parse(&*data).map_err(|e| format!("a broken ELF file: {e}"))?;
    let symbol = file
        .dynamic_symbols()
        .chain(file.symbols())
        .find(|s| s.name() == Ok("plugin_version") && s.is_definition())
        .ok_or("no plugin_version symbol, so not a Slurm plugin (Slurm refuses it)")?;
    let bytes = symbol
        .section_index()
        .and_then(|i| file.section_by_index(i).ok())
        .and_then(|section| section.data_range(symbol.address(), 4).ok().flatten())
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .ok_or("its plugin_version symbol holds no 4-byte value")?;
    let n = if file.is_little_endian() {
        u32::from_le_bytes(bytes)
    } else {
        u32::from_be_bytes(bytes)
    };
    Ok(Release::from_number(n))
}

/// What Slurm's client said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scontrol {
    /// The running slurmctld's release (`SLURM_VERSION` of `scontrol show config`), or why
    /// it is not known (slurmctld not reachable, scontrol missing).
    pub running: Result<Release, String>,
    /// The installed Slurm (`scontrol version`), which a restarted slurmctld runs.
    pub installed: Option<Release>,
    /// `PluginDir` of `scontrol show config`.
    pub plugin_dir: Option<String>,
}

impl Scontrol {
    /// The release a check is about: the one slurmctld runs, else the installed one (what a
    /// restart runs), else `fallback` (for `nvl72`, the release it was built for).
    pub fn release_or(&self, fallback: Option<Release>) -> Option<Release> {
        self.running
            .as_ref()
            .ok()
            .copied()
            .or(self.installed)
            .or(fallback)
    }
}

/// What the release check needs; see [`super::CheckInput::release`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseInput {
    /// A plugin to check before it is installed (`--plugin FILE`); `None`: the installed one,
    /// `topology_nvl72.so` in PluginDir.
    pub plugin: Option<PathBuf>,
    pub scontrol: Scontrol,
}

/// Runs `scontrol show config` and `scontrol version` (each at most once).
pub fn ask_scontrol() -> Scontrol {
    let installed = run(&["version"]).ok().and_then(|o| parse_version(&o));
    let (running, plugin_dir) = match run(&["show", "config"]) {
        Ok(out) => {
            let (release, dir) = parse_show_config(&out);
            let release =
                release.ok_or_else(|| "scontrol show config printed no SLURM_VERSION".into());
            (release, dir)
        }
        Err(e) => (Err(e), None),
    };
    Scontrol {
        running,
        installed,
        plugin_dir,
    }
}

/// `scontrol show topology` of the running slurmctld (10 s at most), or `None`.
pub fn ask_show_topology() -> Option<String> {
    run(&["show", "topology"]).ok()
}

/// How long scontrol may take: with slurmctld down, `scontrol show config` retries for about
/// 30 s before it gives up, and `nvl72 check` should not hang that long.
const SCONTROL_TIMEOUT: Duration = Duration::from_secs(10);

fn run(args: &[&str]) -> Result<String, String> {
    let what = format!("scontrol {}", args.join(" "));
    let mut child = Command::new("scontrol")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run scontrol: {e}"))?;
    // Polled, not read while waiting: both outputs fit a pipe's buffer (show config prints
    // about 10 kB).
    let deadline = Instant::now() + SCONTROL_TIMEOUT;
    while child
        .try_wait()
        .map_err(|e| format!("{what}: {e}"))?
        .is_none()
    {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{what}: no answer within {} s",
                SCONTROL_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{what}: {}", err.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `slurm 24.11.5` (`scontrol version`; Debian's prints `slurm-wlm 24.11.5`).
pub fn parse_version(out: &str) -> Option<Release> {
    let mut words = out.lines().next()?.split_whitespace();
    let name = words.next()?;
    if !name.starts_with("slurm") {
        return None;
    }
    Release::parse(words.next()?)
}

/// `SLURM_VERSION = 24.11.5` and `PluginDir = /usr/lib/...` of `scontrol show config`.
pub fn parse_show_config(out: &str) -> (Option<Release>, Option<String>) {
    let mut release = None;
    let mut plugin_dir = None;
    for line in out.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key.trim() {
            "SLURM_VERSION" => release = Release::parse(value),
            "PluginDir" => plugin_dir = Some(value.trim().to_string()),
            _ => {}
        }
    }
    (release, plugin_dir)
}

/// PluginDir (slurm.conf's, else slurmctld's, else Debian's) and every `topology_nvl72.so`
/// along it, in Slurm's search order.
fn installed_plugins(slurm: &SlurmConf, scontrol: &Scontrol) -> (String, Vec<PathBuf>) {
    let dirs = slurm
        .plugin_dir
        .as_ref()
        .map(|(d, _)| d.clone())
        .or_else(|| scontrol.plugin_dir.clone())
        .unwrap_or_else(|| DEBIAN_PLUGIN_DIR.into());
    let files = dirs
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(PLUGIN_FILE))
        .filter(|p| p.is_file())
        .collect();
    (dirs, files)
}

/// The problem of a plugin file of another release: an error for the installed plugin (the
/// next start of slurmctld fails, so `nvl72 check && scontrol reconfigure` must stop), a
/// warning for `--plugin` (nothing breaks until it is installed).
///
/// Slurm tries each `topology_nvl72.so` along PluginDir and loads the first it accepts
/// (`plugin_load_and_link`), so one of the right release anywhere along it is enough; the
/// files it skips before that one get a note.
pub(super) fn check(
    input: &ReleaseInput,
    slurm_conf: &Path,
    slurm: &SlurmConf,
    out: &mut Vec<Problem>,
) {
    let sc = &input.scontrol;
    if let Some(plugin) = &input.plugin {
        out.extend(judge(plugin, Severity::Warning, Fix::Candidate, sc));
        return;
    }
    let (dirs, files) = installed_plugins(slurm, sc);
    let judged: Vec<Vec<Problem>> = files
        .iter()
        .map(|f| judge(f, Severity::Error, Fix::Installed, sc))
        .collect();
    let loads = judged
        .iter()
        .position(|p| p.iter().all(|p| p.severity != Severity::Error));
    match loads {
        Some(i) => {
            for skipped in &files[..i] {
                let what = match plugin_release(skipped) {
                    Ok(r) => format!("built for Slurm {r}"),
                    Err(e) => e,
                };
                out.push(problem(
                    skipped,
                    None,
                    Severity::Note,
                    format!(
                        "Slurm skips this file ({what}) and loads {}, later in PluginDir",
                        files[i].display()
                    ),
                ));
            }
            out.extend(judged[i].iter().cloned());
        }
        None => match judged.into_iter().next() {
            Some(first) => out.extend(first),
            None => out.push(missing(slurm_conf, slurm, sc, &dirs)),
        },
    }
}

/// One plugin file against what scontrol said.
fn judge(path: &Path, severity: Severity, fix_for: Fix, sc: &Scontrol) -> Vec<Problem> {
    let mut out = Vec::new();
    let name = "the plugin";
    let built = match plugin_release(path) {
        Ok(r) => r,
        Err(why) => return vec![problem(path, None, severity, why)],
    };
    let refuses = "Slurm refuses to load a plugin built for another release, so";
    let fails = "(\"fatal: Failed to initialize topology plugin\")";
    let message = match (&sc.running, sc.installed) {
        // Mid-upgrade: the packages are new, slurmctld still the old one; a restart loads it.
        (Ok(running), Some(installed))
            if built != *running && built == installed && installed != *running =>
        {
            out.push(problem(
                path,
                None,
                Severity::Note,
                format!(
                    "{name} was built for Slurm {built}, the installed release (scontrol \
                     version), while slurmctld still runs {running}: restart slurmctld to \
                     finish the upgrade"
                ),
            ));
            return out;
        }
        (Ok(running), _) if built != *running => format!(
            "{name} was built for Slurm {built} but slurmctld runs {running}: {refuses} {} \
             {fails} and `scontrol reconfigure` would fail; {}",
            fix_for.breaks(),
            fix_for.fix(built, *running)
        ),
        (Ok(running), Some(installed)) if installed != *running => format!(
            "{name} was built for Slurm {built}, which slurmctld runs now, but the installed \
             Slurm is {installed} (scontrol version): {refuses} slurmctld {installed} would \
             not start after a restart {fails} and `scontrol reconfigure` would fail; {}",
            fix_for.fix(built, installed)
        ),
        (Ok(_), _) => return out,
        (Err(why), installed) => {
            let compared = match installed {
                Some(i) => format!("compared with the installed Slurm {i} (scontrol version)"),
                None => format!("{name}'s release ({built}) was not compared with it"),
            };
            out.push(problem(
                path,
                None,
                Severity::Note,
                format!("slurmctld's release is not known ({why}): {compared}"),
            ));
            match installed {
                Some(installed) if installed != built => format!(
                    "{name} was built for Slurm {built} but the installed Slurm is {installed} \
                     (scontrol version): {refuses} slurmctld would not start {fails}; {}",
                    fix_for.fix(built, installed)
                ),
                _ => return out,
            }
        }
    };
    out.push(problem(path, None, severity, message));
    out
}

/// No `topology_nvl72.so` along PluginDir: an error where Slurm is installed (scontrol
/// answers) and slurm.conf names topology/nvl72, for slurmctld would not start; otherwise
/// (a copy of the files on another host, another TopologyPlugin) a note.
fn missing(slurm_conf: &Path, slurm: &SlurmConf, sc: &Scontrol, dirs: &str) -> Problem {
    let wanted = slurm
        .topology_plugin
        .as_ref()
        .is_some_and(|(v, _)| v == "topology/nvl72");
    let slurm_here = sc.running.is_ok() || sc.installed.is_some();
    let (file, line) = match &slurm.plugin_dir {
        Some((_, loc)) => (loc.file.as_path(), Some(loc.line)),
        None => (slurm_conf, None),
    };
    let (severity, then) = match (wanted, slurm_here) {
        (true, true) => (
            Severity::Error,
            "Slurm cannot load topology/nvl72 (\"Couldn't load specified plugin name for \
             topology/nvl72\")"
                .to_string(),
        ),
        (_, false) => (
            Severity::Note,
            "its Slurm release was not checked (no scontrol answered here either)".to_string(),
        ),
        (false, true) => (
            Severity::Note,
            "its Slurm release was not checked".to_string(),
        ),
    };
    problem(
        file,
        line,
        severity,
        format!("no {PLUGIN_FILE} in PluginDir {dirs}: {then}"),
    )
}

/// Which plugin is checked, for the advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fix {
    Installed,
    Candidate,
}

impl Fix {
    fn breaks(self) -> &'static str {
        match self {
            Fix::Installed => "slurmctld would not start after a restart",
            Fix::Candidate => "once it is installed, slurmctld would not start after a restart",
        }
    }

    fn fix(self, built: Release, wanted: Release) -> String {
        match self {
            Fix::Installed => format!("install the package built for {wanted}"),
            Fix::Candidate => format!(
                "install it only together with Slurm {built}, or use the package built for \
                 {wanted}"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
