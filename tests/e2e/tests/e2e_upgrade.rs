//! Upgrades lose nothing: Slurm 24.11.5 to 26.05.5 with jobs running, a newer plugin package
//! installed over a running slurmctld, and what a downgrade attempt does.
//!
//! One lab folder (`/var/tmp/nvl72-upgrade`, 3 racks, its own ports) holds two chroots over
//! the same `var/` (state, spool, logs): trixie's 24.11.5 in `rootfs`, sid's 26.05.5 in
//! `rootfs-26.05` (lab-up.sh's `LAB_ROOTFS`), each a copy of its series' main lab. Switching
//! chroots is the upgrade of Slurm's guide: slurmctld and the slurmd stop, the job steps keep
//! running, the new release starts on the same state directory and takes the steps over.
//!
//! Runs with the suite of Debian's 26.05 lab (`debian_upgrade`, set by the build script for
//! `SLURM_SERIES=26.05` without `SLURM_PREFIX`): Debian's packages of both releases are what
//! it moves between. It needs both plugin packages: `PACKAGE` (26.05, as scripts/test.sh sets
//! it) and `NVL72_PACKAGE_24_11` (scripts/test.sh builds it).
#![cfg(debian_upgrade)]

use nvl72_e2e as lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use lab::{expand, racks, show_field};

const DIR: &str = "/var/tmp/nvl72-upgrade";
/// Out of every other lab's way: main labs 6817/6827 with 17000/18000, replays above them.
const PORTS: [(&str, &str); 3] = [
    ("CTLD_PORT", "6967"),
    ("PORT0", "31000"),
    ("CPU_PORT0", "31900"),
];
/// A job that runs until the test lets it finish: steps must outlive the switch of releases.
const UNTIL_RELEASED: &str =
    "until [ -e /var/tmp/nvl72-upgrade/var/jobs/release ]; do sleep 1; done; echo finished";

/// One Slurm release of the lab: its chroot, its series, the package it runs.
struct Release {
    series: &'static str,
    rootfs: PathBuf,
    /// The main lab whose rootfs a new chroot copies.
    from: &'static str,
    package: PathBuf,
}

fn package(var: &str) -> PathBuf {
    let p = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        panic!("{var} must name a topology-nvl72 .deb (scripts/test.sh sets it)")
    });
    assert!(p.is_file(), "{var}={} is no file", p.display());
    p
}

fn old() -> Release {
    Release {
        series: "24.11",
        rootfs: Path::new(DIR).join("rootfs"),
        from: "/var/tmp/nvl72-lab",
        package: package("NVL72_PACKAGE_24_11"),
    }
}

fn new() -> Release {
    Release {
        series: "26.05",
        rootfs: Path::new(DIR).join("rootfs-26.05"),
        from: "/var/tmp/nvl72-lab-26.05",
        package: package("PACKAGE"),
    }
}

fn script(name: &str) -> PathBuf {
    lab::repo().join("scripts").join(name)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

impl Release {
    fn env(&self, cmd: &mut Command) {
        cmd.env("LAB", DIR)
            .env("LAB_ROOTFS", &self.rootfs)
            .env("SLURM_SERIES", self.series)
            .env_remove("SLURM_PREFIX")
            .env_remove("EXTRA_CONF")
            .env_remove("POLICY");
    }

    /// lab-up.sh for this release (its output; the caller checks the status).
    fn up(&self, extra: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new("bash");
        cmd.arg(script("lab-up.sh"));
        self.env(&mut cmd);
        cmd.env("RACKS", "3")
            .env("CPU_NODES", "0")
            .env("TOPO", lab::topo_under_test())
            .env("ROOTFS_FROM", self.from)
            .env("PACKAGE", &self.package)
            .envs(PORTS)
            .envs(extra.iter().copied())
            .output()
            .expect("cannot run lab-up.sh")
    }

    fn must_start(&self, extra: &[(&str, &str)]) {
        let out = self.up(extra);
        assert!(
            out.status.success(),
            "Slurm {} did not start:\n{}",
            self.series,
            text(&out)
        );
    }

    fn down(&self, flags: &[&str]) {
        let mut cmd = Command::new("bash");
        cmd.arg(script("lab-down.sh")).args(flags);
        self.env(&mut cmd);
        let out = cmd.output().expect("cannot run lab-down.sh");
        assert!(out.status.success(), "lab-down.sh: {}", text(&out));
    }

    fn sl(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(script("sl"));
        cmd.args(args);
        self.env(&mut cmd);
        let out = cmd.output().expect("cannot run scripts/sl");
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn submit(&self, args: &[&str]) -> u32 {
        let mut all = vec!["sbatch", "--parsable", "--exclusive"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--wrap", UNTIL_RELEASED]);
        self.sl(&all).trim().parse().expect("job id")
    }

    /// `id state nodes` of every job slurmctld holds, sorted.
    fn jobs(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .sl(&["squeue", "-h", "-t", "all", "-o", "%i %T %N"])
            .lines()
            .map(|l| l.trim().to_string())
            .collect();
        lines.sort();
        lines
    }

    fn field(&self, job: u32, name: &str) -> String {
        show_field(
            &self.sl(&["scontrol", "show", "job", &job.to_string()]),
            name,
        )
    }

    fn nodes(&self, job: u32) -> Vec<String> {
        expand(&self.field(job, "NodeList"))
    }

    /// What slurmctld and the slurmd of this chroot map of the plugin: each
    /// `topology_nvl72.so` mapping, with ` (deleted)` when the file was replaced after loading.
    /// (A running job's slurmstepd keeps its file until the job ends.)
    fn mapped_plugins(&self) -> Vec<String> {
        let root = std::fs::canonicalize(&self.rootfs).unwrap();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let pid = entry.path();
            if std::fs::read_link(pid.join("root")).ok().as_deref() != Some(root.as_path()) {
                continue;
            }
            let comm = std::fs::read_to_string(pid.join("comm")).unwrap_or_default();
            // Debian's binaries are slurmctld-wlm and slurmd-wlm.
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
}

fn wait_until(secs: u64, what: &str, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < end, "timed out after {secs} s: {what}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn log(name: &str) -> String {
    std::fs::read_to_string(Path::new(DIR).join("var/log").join(name)).unwrap_or_default()
}

/// Both chroots stopped, the previous run's state and packages gone.
fn fresh_start(old: &Release, new: &Release) {
    new.down(&[]);
    old.down(&[]);
    for r in [old, new] {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        let root = r.rootfs.to_string_lossy().into_owned();
        assert!(
            !mounts.contains(&format!(" {root}/")),
            "{root} still has mounts"
        );
        // A copy of the main lab's rootfs takes seconds, and holds the package lab-up installs.
        let _ = std::fs::remove_dir_all(&r.rootfs);
    }
    let _ = std::fs::remove_file(Path::new(DIR).join("var/jobs/release"));
}

/// The plugin's own problems in a log: its error lines, and any panic it caught.
fn plugin_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| (l.contains("topology/nvl72") && l.contains("error")) || l.contains("panic"))
        .collect()
}

#[test]
fn jobs_survive_the_upgrade_from_24_11_to_26_05_and_a_newer_plugin_package() {
    let (old, new) = (old(), new());
    fresh_start(&old, &new);

    // --- Slurm 24.11.5: one-rack, multi-rack and segment jobs running, a drained tray, a
    // whole-rack job waiting and a held one.
    old.must_start(&[("CLEAN", "1")]);
    old.sl(&[
        "scontrol",
        "update",
        "nodename=gb054",
        "state=drain",
        "reason=upgrade",
    ]);
    let one_rack = old.submit(&["-N", "6"]);
    let two_racks = old.submit(&["-N", "24"]);
    let segments = old.submit(&["-N", "8", "--segment=4"]);
    let running = [one_rack, two_racks, segments];
    wait_until(60, "the three jobs to run under 24.11", || {
        running
            .iter()
            .all(|&j| old.field(j, "JobState") == "RUNNING")
    });
    let whole_rack = old.submit(&["-N", "18"]);
    let held = old.submit(&["-N", "2", "--hold"]);
    let before = old.jobs();
    // NumNodes' lower bound: 26.05 prints a recovered whole-rack job's `18-18` as `18`, under
    // topology/block as well; the request itself (ReqTRES node=18) is unchanged.
    let request = |r: &Release, job: u32| {
        let nodes = r.field(job, "NumNodes");
        let least = nodes.split('-').next().unwrap_or_default().to_string();
        [
            least,
            r.field(job, "NumCPUs"),
            r.field(job, "ReqTRES"),
            r.field(job, "Segment"),
        ]
    };
    let asked = [request(&old, whole_rack), request(&old, held)];

    // --- The upgrade: the daemons stop, the steps go on; 26.05.5 starts on the same state.
    old.down(&["--keep-steps"]);
    let started_at = log("slurmctld.log").len();
    new.must_start(&[]);
    let after = new.jobs();
    let topology = new.sl(&["scontrol", "show", "topology"]);
    let trays_in_use: Vec<String> = running.iter().flat_map(|&j| new.nodes(j)).collect();
    let asked_now = [request(&new, whole_rack), request(&new, held)];

    assert_eq!(after, before, "jobs changed across the upgrade");
    assert_eq!(asked_now, asked, "pending jobs' requests changed");
    for (rack, trays) in [(1, "gb[001-018]"), (2, "gb[019-036]"), (3, "gb[037-054]")] {
        let line = topology
            .lines()
            .find(|l| l.starts_with(&format!("RackName=rack{rack} ")))
            .unwrap_or_else(|| panic!("no rack{rack} in:\n{topology}"));
        assert!(line.contains(&format!("Nodes={trays} ")), "{line}");
        let busy = trays_in_use
            .iter()
            .filter(|n| racks(&[n.to_string()]) == [rack]);
        assert!(
            line.contains(&format!("AllocatedTrays={} ", busy.count())),
            "{line}\n{topology}"
        );
    }
    assert!(topology.contains("UnavailableNodes=gb054"), "{topology}");
    // A new job goes around them, into the one rack with room for it: rack3 (gb054 drained)
    // took the 6-tray job and 8 of the 24 (16 + 8 with the cut on groups of 8, so rack1
    // keeps 2 free and rack3 3), the segments took 8 of rack2, the whole-rack job rack4,
    // leaving rack2 the only rack with 10 free trays.
    let newcomer = new.submit(&["-N", "10"]);
    wait_until(60, "the new job to run under 26.05", || {
        new.field(newcomer, "JobState") == "RUNNING"
    });
    let newcomer_nodes = new.nodes(newcomer);
    assert_eq!(racks(&newcomer_nodes), [2], "{newcomer_nodes:?}");

    // --- A newer package over the running 26.05 slurmctld, as an admin installs it: the
    // running daemons keep the file they loaded until `scontrol reconfigure` restarts them.
    let newer = newer_package(&new.package);
    new.sl(&["dpkg", "-i", &newer.to_string_lossy()]);
    assert!(
        new.sl(&["dpkg-query", "-W", "topology-nvl72"])
            .contains("+upgrade"),
        "the newer package is not installed"
    );
    assert_eq!(new.jobs().len(), after.len() + 1, "a job went missing");
    new.sl(&["scontrol", "reconfigure"]);
    wait_until(
        90,
        "every daemon to run the newly installed plugin file",
        || {
            let mapped = new.mapped_plugins();
            !mapped.is_empty() && mapped.iter().all(|m| !m.contains("(deleted)"))
        },
    );
    wait_until(60, "slurmctld to answer after the reconfigure", || {
        new.sl(&["scontrol", "ping"]).contains("is UP")
    });
    let mut still = new.jobs();
    still.retain(|l| !l.starts_with(&format!("{newcomer} ")));
    assert_eq!(still, after, "jobs changed across the plugin upgrade");

    // --- Every job finishes normally; the waiting whole-rack job gets one rack.
    std::fs::write(Path::new(DIR).join("var/jobs/release"), "").unwrap();
    let all = [one_rack, two_racks, segments, newcomer, whole_rack];
    wait_until(120, "every released job to complete", || {
        all.iter().all(|&j| new.field(j, "JobState") == "COMPLETED")
    });
    for job in all {
        assert_eq!(new.field(job, "ExitCode"), "0:0", "JobId={job}");
        let out = std::fs::read_to_string(format!("{DIR}/var/jobs/slurm-{job}.out"));
        assert_eq!(out.unwrap_or_default().trim(), "finished", "JobId={job}");
    }
    assert_eq!(racks(&new.nodes(whole_rack)).len(), 1);
    assert_eq!(new.nodes(whole_rack).len(), 18);
    let upgraded_log = log("slurmctld.log")[started_at..].to_string();
    assert!(
        plugin_errors(&upgraded_log).is_empty(),
        "{:?}",
        plugin_errors(&upgraded_log)
    );

    // --- A downgrade attempt: 24.11 refuses 26.05's state before it loads the plugin, and
    // the state is still whole for 26.05.
    new.down(&["--keep-jobs"]);
    let refused_at = log("slurmctld.log").len();
    let attempt = old.up(&[]);
    let refusal = log("slurmctld.log")[refused_at..].to_string();
    old.down(&[]);
    assert!(!attempt.status.success(), "24.11 started on 26.05's state");
    assert!(
        refusal.contains("fatal: Can not recover") && refusal.contains("incompatible version"),
        "{refusal}"
    );
    assert!(plugin_errors(&refusal).is_empty(), "{refusal}");
    new.must_start(&[]);
    assert_eq!(new.field(held, "JobState"), "PENDING");
    assert_eq!(request(&new, held), asked[1]);
    new.down(&[]);
}

/// The package at `deb` with a higher version (`+upgrade1`), built with dpkg-deb into the
/// lab's var/ (which both chroots see).
fn newer_package(deb: &Path) -> PathBuf {
    let work = Path::new(DIR).join("var/newer-package");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let tree = work.join("tree");
    let run = |args: &[&str]| {
        let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    };
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
