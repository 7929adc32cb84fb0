//! The upgrade labs: one lab folder holding two chroots over the same `var/` (state, spool,
//! logs, job output; lab-up.sh's `LAB_ROOTFS`), one per Slurm release. Switching chroots is an
//! upgrade with the state in place, as Slurm's guide does it (docs/upgrades.md). Shared by
//! `tests/e2e_upgrade.rs` (Debian's packages) and `tests/e2e_upgrade_smd.rs` (SchedMD's).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::{expand, racks, repo, show_field};

/// An upgrade lab's folder and ports (out of every other lab's way, docs/lab.md's port map).
#[derive(Clone, Copy)]
pub struct UpgradeLab {
    pub dir: &'static str,
    /// lab-up.sh's `CTLD_PORT`, `PORT0` and `CPU_PORT0`.
    pub ports: [(&'static str, &'static str); 3],
}

/// One Slurm release's chroot in an upgrade lab, and what lab-up.sh needs to start it.
pub struct Chroot {
    pub lab: UpgradeLab,
    /// What a failure calls this release: its series, or its package's version.
    pub name: String,
    pub rootfs: PathBuf,
    /// The plugin's package lab-up.sh installs in this chroot.
    pub package: PathBuf,
    /// Every script's variables for this release beyond `LAB` and `LAB_ROOTFS`:
    /// `SLURM_SERIES`, and `SLURM_DEBS` for SchedMD's packages.
    pub release_env: Vec<(&'static str, OsString)>,
    /// lab-up.sh's own further variables (`TOPO`, `ROOTFS_FROM`, `EXTRA_CONF`).
    pub start_env: Vec<(&'static str, OsString)>,
}

impl UpgradeLab {
    /// A log of the lab's `var/log` (both chroots write there).
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(Path::new(self.dir).join("var/log").join(name)).unwrap_or_default()
    }

    /// The file whose existence lets [`Chroot::submit`]'s jobs finish.
    fn release_file(&self) -> PathBuf {
        Path::new(self.dir).join("var/jobs/release")
    }

    /// Lets every job of [`Chroot::submit`] finish.
    pub fn release_jobs(&self) {
        std::fs::write(self.release_file(), "").unwrap();
    }

    /// What a job of [`Chroot::submit`] printed.
    pub fn job_output(&self, job: u32) -> String {
        std::fs::read_to_string(format!("{}/var/jobs/slurm-{job}.out", self.dir))
            .unwrap_or_default()
    }

    /// Both chroots stopped and removed (each test builds its chroots anew), the release file
    /// of the previous run gone.
    pub fn fresh_start(&self, chroots: [&Chroot; 2]) {
        for c in chroots.iter().rev() {
            c.down(&[]);
        }
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        for c in chroots {
            let root = c.rootfs.to_string_lossy().into_owned();
            assert!(
                !mounts.contains(&format!(" {root}/")),
                "{root} still has mounts"
            );
            let _ = std::fs::remove_dir_all(&c.rootfs);
        }
        let _ = std::fs::remove_file(self.release_file());
    }

    /// The package at `deb` with a higher version (`+upgrade1`), built with dpkg-deb into the
    /// lab's var/ (which both chroots see).
    pub fn newer_package(&self, deb: &Path) -> PathBuf {
        let work = Path::new(self.dir).join("var/newer-package");
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let tree = work.join("tree");
        run(&[
            "dpkg-deb",
            "-R",
            &deb.to_string_lossy(),
            &tree.to_string_lossy(),
        ]);
        let control = tree.join("DEBIAN/control");
        let fields = std::fs::read_to_string(&control).unwrap();
        let bumped: String = fields
            .lines()
            .map(|l| match l.strip_prefix("Version: ") {
                Some(v) => format!("Version: {v}+upgrade1\n"),
                None => format!("{l}\n"),
            })
            .collect();
        std::fs::write(&control, bumped).unwrap();
        let out = work.join("topology-nvl72-newer.deb");
        run(&[
            "dpkg-deb",
            "-b",
            &tree.to_string_lossy(),
            &out.to_string_lossy(),
        ]);
        out
    }
}

impl Chroot {
    fn env(&self, cmd: &mut Command) {
        cmd.env("LAB", self.lab.dir)
            .env("LAB_ROOTFS", &self.rootfs)
            .envs(self.release_env.iter().map(|(k, v)| (k, v)))
            .env_remove("SLURM_PREFIX")
            .env_remove("EXTRA_CONF")
            .env_remove("POLICY");
    }

    /// lab-up.sh for this release (its output; the caller checks the status).
    pub fn up(&self, extra: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join("scripts/lab-up.sh"));
        self.env(&mut cmd);
        cmd.env("RACKS", "3")
            .env("CPU_NODES", "0")
            .env("PACKAGE", &self.package)
            .envs(self.start_env.iter().map(|(k, v)| (k, v)))
            .envs(self.lab.ports)
            .envs(extra.iter().copied())
            .output()
            .expect("cannot run lab-up.sh")
    }

    pub fn must_start(&self, extra: &[(&str, &str)]) {
        let out = self.up(extra);
        assert!(
            out.status.success(),
            "Slurm {} did not start:\n{}",
            self.name,
            text(&out)
        );
    }

    pub fn down(&self, flags: &[&str]) {
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join("scripts/lab-down.sh")).args(flags);
        self.env(&mut cmd);
        let out = cmd.output().expect("cannot run lab-down.sh");
        assert!(out.status.success(), "lab-down.sh: {}", text(&out));
    }

    /// A client command in this chroot (scripts/sl); its output, which must be a success.
    pub fn sl(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(repo().join("scripts/sl"));
        cmd.args(args);
        self.env(&mut cmd);
        let out = cmd.output().expect("cannot run scripts/sl");
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// An exclusive batch job that runs until [`UpgradeLab::release_jobs`], then prints
    /// `finished`: its steps must outlive the switch of releases.
    pub fn submit(&self, args: &[&str]) -> u32 {
        let until_released = format!(
            "until [ -e {} ]; do sleep 1; done; echo finished",
            self.lab.release_file().display()
        );
        let mut all = vec!["sbatch", "--parsable", "--exclusive"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--wrap", &until_released]);
        self.sl(&all).trim().parse().expect("job id")
    }

    /// `id state nodes` of every job slurmctld holds, sorted.
    pub fn jobs(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .sl(&["squeue", "-h", "-t", "all", "-o", "%i %T %N"])
            .lines()
            .map(|l| l.trim().to_string())
            .collect();
        lines.sort();
        lines
    }

    pub fn field(&self, job: u32, name: &str) -> String {
        show_field(
            &self.sl(&["scontrol", "show", "job", &job.to_string()]),
            name,
        )
    }

    pub fn nodes(&self, job: u32) -> Vec<String> {
        expand(&self.field(job, "NodeList"))
    }

    /// A pending job's request as an upgrade must keep it: nodes (the lower bound: 26.05
    /// prints a recovered whole-rack job's `18-18` as `18`, under topology/block as well),
    /// CPUs, TRES and segment.
    pub fn request(&self, job: u32) -> [String; 4] {
        let nodes = self.field(job, "NumNodes");
        let least = nodes.split('-').next().unwrap_or_default().to_string();
        [
            least,
            self.field(job, "NumCPUs"),
            self.field(job, "ReqTRES"),
            self.field(job, "Segment"),
        ]
    }

    /// The running jobs hold disjoint trays, and `scontrol show topology` counts per rack what
    /// they hold, with gb054 unavailable (drained).
    pub fn check_trays(&self, running: &[u32]) {
        let mut held: Vec<String> = running.iter().flat_map(|&j| self.nodes(j)).collect();
        let all = held.len();
        held.sort();
        held.dedup();
        assert_eq!(held.len(), all, "a tray is held by two jobs: {running:?}");
        let topology = self.sl(&["scontrol", "show", "topology"]);
        for (rack, trays) in [(1, "gb[001-018]"), (2, "gb[019-036]"), (3, "gb[037-054]")] {
            let line = topology
                .lines()
                .find(|l| l.starts_with(&format!("RackName=rack{rack} ")))
                .unwrap_or_else(|| panic!("no rack{rack} in:\n{topology}"));
            assert!(line.contains(&format!("Nodes={trays} ")), "{line}");
            let busy = held
                .iter()
                .filter(|n| racks(&[n.to_string()]) == [rack])
                .count();
            assert!(
                line.contains(&format!("AllocatedTrays={busy} ")),
                "{line}\n{topology}"
            );
        }
        assert!(topology.contains("UnavailableNodes=gb054"), "{topology}");
    }

    /// What slurmctld and the slurmd of this chroot map of the plugin: each
    /// `topology_nvl72.so` mapping, with ` (deleted)` when the file was replaced after loading.
    /// (A running job's slurmstepd keeps its file until the job ends.)
    pub fn mapped_plugins(&self) -> Vec<String> {
        let root = std::fs::canonicalize(&self.rootfs).unwrap();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let pid = entry.path();
            if std::fs::read_link(pid.join("root")).ok().as_deref() != Some(root.as_path()) {
                continue;
            }
            let comm = std::fs::read_to_string(pid.join("comm")).unwrap_or_default();
            // Debian's binaries are slurmctld-wlm and slurmd-wlm, SchedMD's have no suffix.
            let daemon = comm.trim().trim_end_matches("-wlm");
            if !matches!(daemon, "slurmctld" | "slurmd") {
                continue;
            }
            let maps = std::fs::read_to_string(pid.join("maps")).unwrap_or_default();
            let mut mine: Vec<String> = maps
                .lines()
                .filter_map(|l| l.find('/').map(|at| l[at..].to_string()))
                .filter(|path| path.contains("topology_nvl72.so"))
                .collect();
            mine.dedup();
            found.extend(mine);
        }
        found
    }

    /// A newer plugin package installed over the running daemons and `scontrol reconfigure`,
    /// as an admin upgrades the plugin alone: returns once every daemon runs the new file and
    /// slurmctld answers.
    pub fn upgrade_plugin_in_place(&self) {
        let newer = self.lab.newer_package(&self.package);
        self.sl(&["dpkg", "-i", &newer.to_string_lossy()]);
        assert!(
            self.sl(&["dpkg-query", "-W", "topology-nvl72"])
                .contains("+upgrade1"),
            "the newer package is not installed"
        );
        self.sl(&["scontrol", "reconfigure"]);
        wait_until(
            90,
            "every daemon to run the newly installed plugin file",
            || {
                let mapped = self.mapped_plugins();
                !mapped.is_empty() && mapped.iter().all(|m| !m.contains("(deleted)"))
            },
        );
        wait_until(60, "slurmctld to answer after the reconfigure", || {
            self.sl(&["scontrol", "ping"]).contains("is UP")
        });
    }

    /// Lets every job finish and checks each of `jobs` completed normally, with its output.
    pub fn release_and_complete(&self, jobs: &[u32], secs: u64) {
        self.lab.release_jobs();
        wait_until(secs, "every released job to complete", || {
            jobs.iter()
                .all(|&j| self.field(j, "JobState") == "COMPLETED")
        });
        for &job in jobs {
            assert_eq!(self.field(job, "ExitCode"), "0:0", "JobId={job}");
            assert_eq!(self.lab.job_output(job).trim(), "finished", "JobId={job}");
        }
    }
}

/// A command's stdout and stderr, for failure messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs a host command; its output, which must be a success.
pub fn run(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(out.status.success(), "{args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn wait_until(secs: u64, what: &str, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < end, "timed out after {secs} s: {what}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The plugin's own problems in a log: its error lines, and any panic it caught.
pub fn plugin_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| (l.contains("topology/nvl72") && l.contains("error")) || l.contains("panic"))
        .collect()
}
