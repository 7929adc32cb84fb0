//! Upgrades between SchedMD's packages lose nothing: Slurm 26.05 to 26.11 (`slurm-smd*`
//! debs) with jobs running, slurmctld first and the slurmd after it, the plugin's package
//! swapped with Slurm's; then a plugin-only upgrade within the new series.
//!
//! One lab folder (`/var/tmp/nvl72-upgrade-smd`, 3 racks, its own ports) holds two chroots
//! over the same `var/` (state, spool, logs; lab-up.sh's `LAB_ROOTFS`):
//! - `rootfs-<old>`: SchedMD's old debs (lab-up.sh's `SLURM_DEBS`) and the plugin's package
//!   built for them;
//! - `rootfs-<new>`: a copy of the old one, upgraded inside by `apt install` of the new debs
//!   together with the plugin's package for the new release, as an admin upgrades a host.
//!
//! The switch follows Slurm's order (a slurmctld may be newer than the slurmd, up to two
//! releases back): the old slurmctld stops (`lab-down.sh --slurmctld-only`), the new one
//! starts on the same state while the old slurmd keep running (`SLURMD=0`), then the old
//! slurmd stop with the job steps left running (`--keep-steps`) and the new slurmd start and
//! take the steps over.
//!
//! Inputs (all four, or the test is not built: the build script sets `smd_upgrade` when any
//! is given, and then every missing one is a failure):
//! - `NVL72_UPGRADE_FROM_DEBS`, `NVL72_UPGRADE_TO_DEBS`: folders of SchedMD's debs, one
//!   release each (e.g. /var/tmp/smd-debs/26.05.3 and /var/tmp/smd-debs/26.11.0), built with
//!   multiple-slurmd support (docs/install.md, "Building SchedMD's packages by hand");
//! - `NVL72_UPGRADE_FROM_PACKAGE`, `NVL72_UPGRADE_TO_PACKAGE`: the plugin's .deb for each
//!   (`SLURM_SRC=<that release's tree> bash scripts/package.sh`).
//!
//! scripts/test.sh runs it when given the debs and the source trees (docs/upgrades.md).
#![cfg(smd_upgrade)]

use nvl72_e2e as lab;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use lab::upgrade::{plugin_errors, run, text, wait_until, Chroot, UpgradeLab};
use lab::{expand, racks};
use nvl72_engine::saved_pieces;

/// Out of every other lab's way (docs/lab.md's port map), below the ephemeral ports.
const LAB: UpgradeLab = UpgradeLab {
    dir: "/var/tmp/nvl72-upgrade-smd",
    ports: [
        ("CTLD_PORT", "6963"),
        ("PORT0", "9000"),
        ("CPU_PORT0", "9900"),
    ],
};
/// IMEX channels per NVLink domain: the two-rack and the segment jobs carry the plugin's
/// pieces in slurmctld's job state (`jobinfo_pack`), which the new plugin must read.
const CONF: &str = "SwitchType=switch/nvidia_imex\nDebugFlags=HetJob,Switch";
const NET: &str = "--network=unique-channel-per-segment";

/// One Slurm release of the lab: SchedMD's debs, and its chroot with the plugin's package
/// for them.
struct Release {
    /// Debian version of slurm-smd, e.g. 26.05.3-1 or 26.11.0-0rc1.
    version: String,
    /// Upstream release (26.05.3) and series (26.05).
    release: String,
    series: String,
    debs: PathBuf,
    chroot: Chroot,
}

impl Deref for Release {
    type Target = Chroot;
    fn deref(&self) -> &Chroot {
        &self.chroot
    }
}

/// A required input: its value, or a failure that names it.
fn input(var: &str, what: &str) -> PathBuf {
    let p = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "{var} is not set, but another NVL72_UPGRADE_* input is (the build script \
                 built this test for them): give all four, NVL72_UPGRADE_FROM_DEBS, \
                 NVL72_UPGRADE_TO_DEBS, NVL72_UPGRADE_FROM_PACKAGE and \
                 NVL72_UPGRADE_TO_PACKAGE ({var}: {what})"
            )
        });
    assert!(p.exists(), "{var}={} does not exist ({what})", p.display());
    p
}

impl Release {
    fn from_inputs(debs_var: &str, package_var: &str) -> Release {
        let debs = input(
            debs_var,
            "a folder of SchedMD's slurm-smd*.deb of one release",
        );
        let package = input(
            package_var,
            "the topology-nvl72 .deb for that release (SLURM_SRC=<its tree> scripts/package.sh)",
        );
        let smd: Vec<PathBuf> = std::fs::read_dir(&debs)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with("slurm-smd_") && name.ends_with(".deb")
            })
            .collect();
        assert_eq!(
            smd.len(),
            1,
            "{debs_var}={}: one slurm-smd_<version>_amd64.deb expected, found {smd:?}",
            debs.display()
        );
        let version = run(&["dpkg-deb", "-f", &smd[0].to_string_lossy(), "Version"])
            .trim()
            .to_string();
        let release = upstream(&version);
        let series = release.rsplit_once('.').unwrap().0.to_string();
        let chroot = Chroot {
            lab: LAB,
            name: version.clone(),
            rootfs: Path::new(LAB.dir).join(format!("rootfs-{release}")),
            package,
            release_env: vec![
                ("SLURM_SERIES", OsString::from(&series)),
                ("SLURM_DEBS", debs.clone().into_os_string()),
            ],
            start_env: vec![
                ("TOPO", OsString::from("nvl72")),
                ("EXTRA_CONF", OsString::from(CONF)),
            ],
        };
        Release {
            version,
            release,
            series,
            debs,
            chroot,
        }
    }

    /// A command in this release's chroot while it is down (apt, dpkg): its output.
    fn in_chroot(&self, args: &[&str]) -> Output {
        Command::new("chroot")
            .arg(&self.rootfs)
            .args(["env", "DEBIAN_FRONTEND=noninteractive"])
            .args(args)
            .output()
            .expect("cannot run chroot")
    }

    fn installed(&self, package: &str) -> String {
        let out = self.in_chroot(&["dpkg-query", "-W", "-f", "${Version}", package]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// What the job holds on each node, from `scontrol show job -d`: the fields of its
    /// per-node lines that say where (nodes, cores, memory, GPU indices).
    fn detail(&self, job: u32) -> Vec<String> {
        let out = self.sl(&["scontrol", "show", "job", "-d", &job.to_string()]);
        out.lines()
            .map(str::trim)
            .filter(|l| l.starts_with("Nodes=") && l.contains("CPU_IDs="))
            .map(|l| {
                l.split_whitespace()
                    .filter(|f| {
                        ["Nodes=", "CPU_IDs=", "Mem=", "GRES="]
                            .iter()
                            .any(|k| f.starts_with(k))
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    /// The release slurmctld runs (`scontrol show config`'s SLURM_VERSION, which for a
    /// release candidate carries its suffix: 26.11.0-0rc1).
    fn ctld_version(&self) -> String {
        let config = self.sl(&["scontrol", "show", "config"]);
        config
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == "SLURM_VERSION").then(|| upstream(v.trim()))
            })
            .unwrap_or_else(|| panic!("no SLURM_VERSION in:\n{config}"))
    }

    /// The releases of the slurmd that registered, as slurmctld reports them (one entry per
    /// release).
    fn slurmd_versions(&self) -> BTreeSet<String> {
        self.sl(&["sinfo", "-h", "-N", "-o", "%v"])
            .lines()
            .map(|l| upstream(l.trim()))
            .collect()
    }

    /// Tags `jobs` with a comment and waits until slurmctld's saved job state holds the tags:
    /// the file then holds what this slurmctld packed for those jobs, plugin data included.
    fn wait_until_saved(&self, jobs: &[u32], prefix: &str) {
        let tags: Vec<String> = jobs.iter().map(|j| format!("{prefix}-{j}")).collect();
        for (job, tag) in jobs.iter().zip(&tags) {
            self.sl(&[
                "scontrol",
                "update",
                &format!("jobid={job}"),
                &format!("comment={tag}"),
            ]);
        }
        wait_until(60, "the tagged jobs in StateSaveLocation/job_state", || {
            let bytes = std::fs::read(state_file()).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            tags.iter().all(|t| text.contains(t.as_str()))
        });
    }
}

/// A Slurm version without a release candidate's suffix: 26.11.0-0rc1 is 26.11.0.
fn upstream(version: &str) -> String {
    version.split('-').next().unwrap_or_default().to_string()
}

fn state_file() -> PathBuf {
    Path::new(LAB.dir).join("var/state/job_state")
}

/// Every list of NVLink pieces in slurmctld's saved job state, decoded by this build's reader
/// (format 1: the format word, a length, the text), sorted.
fn saved_pieces_in_state() -> Vec<Vec<String>> {
    let bytes = std::fs::read(state_file()).expect("job_state");
    let word = saved_pieces::FORMAT_1.to_be_bytes();
    let mut found: Vec<Vec<String>> = (0..bytes.len().saturating_sub(8))
        .filter(|&i| bytes[i..i + 4] == word)
        .map(|i| {
            let len = u32::from_be_bytes(bytes[i + 4..i + 8].try_into().unwrap()) as usize;
            let end = (i + 8 + len).min(bytes.len());
            saved_pieces::decode(&bytes[i..end])
                .unwrap_or_else(|e| panic!("saved pieces at byte {i} of job_state: {e}"))
        })
        .collect();
    found.sort();
    found
}

/// The new release's chroot: a copy of the old one (stopped, so nothing is mounted in it),
/// upgraded as an admin upgrades a host, with apt. Returns what apt said when asked for
/// Slurm's new packages alone.
fn upgrade_chroot(old: &Release, new: &Release) -> String {
    run(&[
        "cp",
        "-ax",
        &old.rootfs.to_string_lossy(),
        &new.rootfs.to_string_lossy(),
    ]);
    // The SchedMD packages the old chroot has, each to be upgraded from the new folder.
    let listed = new.in_chroot(&["dpkg-query", "-W", "-f", "${Package}\n", "slurm-smd*"]);
    let smd: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|p| !new.installed(p).is_empty())
        .map(str::to_string)
        .collect();
    assert!(smd.contains(&"slurm-smd-slurmctld".to_string()), "{smd:?}");
    let inbox = new.rootfs.join("tmp/nvl72-upgrade");
    std::fs::create_dir_all(&inbox).unwrap();
    let mut debs = Vec::new();
    for p in &smd {
        let name = format!("{p}_{}_amd64.deb", new.version);
        std::fs::copy(new.debs.join(&name), inbox.join(&name))
            .unwrap_or_else(|e| panic!("{}/{name}: {e}", new.debs.display()));
        debs.push(format!("/tmp/nvl72-upgrade/{name}"));
    }
    let plugin = new
        .package
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    std::fs::copy(&new.package, inbox.join(&plugin)).unwrap();
    let apt = |extra: &[&str], with: &[String]| {
        let mut args = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
        args.extend_from_slice(extra);
        args.extend(with.iter().map(String::as_str));
        new.in_chroot(&args)
    };
    let old_plugin = old.installed("topology-nvl72");
    assert!(
        old_plugin.ends_with(&format!("+slurm{}-1", old.release)),
        "{old_plugin}"
    );

    // Slurm's new packages alone: apt keeps the old plugin package's Depends (slurm-smd of the
    // old release) only by removing that package. Simulated, then refused with --no-remove.
    let alone = apt(&["-s"], &debs);
    let said = text(&alone);
    assert!(alone.status.success(), "{said}");
    assert!(
        said.lines().any(|l| l.starts_with("Remv topology-nvl72 ")),
        "apt should remove the old plugin package to install Slurm {} alone:\n{said}",
        new.version
    );
    let refused = apt(&["--no-remove"], &debs);
    assert!(
        !refused.status.success(),
        "apt --no-remove installed Slurm {} next to the old plugin package:\n{}",
        new.version,
        text(&refused)
    );
    assert_eq!(
        new.installed("slurm-smd"),
        old.version,
        "a refused install changed Slurm"
    );
    assert_eq!(new.installed("topology-nvl72"), old_plugin);

    // Together with the plugin's package for the new release: one transaction.
    let mut both = debs.clone();
    both.push(format!("/tmp/nvl72-upgrade/{plugin}"));
    let done = apt(&[], &both);
    assert!(done.status.success(), "apt install: {}", text(&done));
    for p in &smd {
        assert_eq!(new.installed(p), new.version, "{p}");
    }
    let new_plugin = new.installed("topology-nvl72");
    assert!(
        new_plugin.ends_with(&format!("+slurm{}-1", new.release)),
        "{new_plugin}"
    );
    std::fs::remove_dir_all(&inbox).unwrap();
    // lab-up.sh's marker of what the chroot holds (written last when it builds one itself).
    std::fs::write(
        new.rootfs.join(".nvl72-lab-rootfs"),
        format!("smd={}\n", new.version),
    )
    .unwrap();
    said
}

#[test]
fn jobs_survive_schedmd_packages_upgrade_slurmctld_first_then_a_plugin_only_upgrade() {
    let old = Release::from_inputs("NVL72_UPGRADE_FROM_DEBS", "NVL72_UPGRADE_FROM_PACKAGE");
    let new = Release::from_inputs("NVL72_UPGRADE_TO_DEBS", "NVL72_UPGRADE_TO_PACKAGE");
    assert!(
        old.series < new.series,
        "an upgrade goes to a newer series: {} -> {}",
        old.version,
        new.version
    );
    LAB.fresh_start([&old, &new]);

    // --- The old release's chroot (a fresh state), then the new one made from it by apt.
    old.must_start(&[("CLEAN", "1")]);
    old.down(&[]);
    let apt_alone = upgrade_chroot(&old, &new);
    eprintln!("apt, Slurm {} alone:\n{apt_alone}", new.version);

    // --- Under the old release: one-rack, two-rack and segment jobs running (the last two
    // with IMEX pieces), a drained tray, a whole-rack job waiting and a held one.
    let from = LAB.log("slurmctld.log").len();
    old.must_start(&[]);
    old.sl(&[
        "scontrol",
        "update",
        "nodename=gb054",
        "state=drain",
        "reason=upgrade",
    ]);
    let one_rack = old.submit(&["-N", "6"]);
    let two_racks = old.submit(&["-N", "24", NET]);
    let segments = old.submit(&["-N", "8", "--segment=4", NET]);
    let running = [one_rack, two_racks, segments];
    wait_until(90, "the three jobs to run", || {
        running
            .iter()
            .all(|&j| old.field(j, "JobState") == "RUNNING")
    });
    let whole_rack = old.submit(&["-N", "18"]);
    let held = old.submit(&["-N", "2", "--hold"]);
    let all_jobs = [one_rack, two_racks, segments, whole_rack, held];
    let asked = [old.request(whole_rack), old.request(held)];
    let details =
        |r: &Release| -> Vec<Vec<String>> { running.iter().map(|&j| r.detail(j)).collect() };
    let before = old.jobs();
    let where_before = details(&old);
    assert!(
        where_before.iter().all(|d| !d.is_empty()),
        "{where_before:?}"
    );
    old.check_trays(&running);
    old.wait_until_saved(&all_jobs, "old");
    let pieces = saved_pieces_in_state();
    // One list per IMEX job: the two racks' parts of the 24-tray job, the two segments.
    assert_eq!(pieces.len(), 2, "{pieces:?}");
    for job in [two_racks, segments] {
        let nodes: BTreeSet<String> = old.nodes(job).into_iter().collect();
        let mine = pieces
            .iter()
            .find(|p| p.iter().flat_map(|h| expand(h)).all(|n| nodes.contains(&n)))
            .unwrap_or_else(|| panic!("no saved pieces for JobId={job}: {pieces:?}"));
        assert_eq!(mine.len(), 2, "JobId={job}: {mine:?}");
        for piece in mine {
            assert_eq!(
                racks(&expand(piece)).len(),
                1,
                "a piece spans racks: {piece}"
            );
        }
    }
    let same_everywhere = |r: &Release, step: &str| {
        assert_eq!(r.jobs(), before, "{step}: jobs changed");
        assert_eq!(details(r), where_before, "{step}: a job moved");
        assert_eq!(
            [r.request(whole_rack), r.request(held)],
            asked,
            "{step}: pending jobs' requests changed"
        );
        r.check_trays(&running);
    };

    // --- slurmctld first: the old one stops, the new one starts on the same state while the
    // old slurmd keep running (nodes report the old release).
    old.down(&["--slurmctld-only"]);
    new.must_start(&[("SLURMD", "0")]);
    assert_eq!(new.ctld_version(), new.release);
    assert_eq!(
        new.slurmd_versions(),
        BTreeSet::from([old.release.clone()]),
        "the old slurmd should still serve the nodes"
    );
    same_everywhere(&new, "new slurmctld, old slurmd");
    new.wait_until_saved(&all_jobs, "ctld");
    assert_eq!(
        saved_pieces_in_state(),
        pieces,
        "the new plugin did not save the pieces it read"
    );

    // --- Then the slurmd: the old ones stop with the steps left running, the new ones take
    // the steps over.
    old.down(&["--keep-steps"]);
    new.must_start(&[]);
    wait_until(60, "every slurmd to report the new release", || {
        new.slurmd_versions() == BTreeSet::from([new.release.clone()])
    });
    same_everywhere(&new, "new slurmctld and slurmd");

    // --- A plugin-only upgrade within the new series: a newer package over the running
    // daemons, then `scontrol reconfigure`.
    new.upgrade_plugin_in_place();
    same_everywhere(&new, "plugin-only upgrade");
    new.wait_until_saved(&all_jobs, "plugin");
    assert_eq!(
        saved_pieces_in_state(),
        pieces,
        "pieces lost by the plugin upgrade"
    );

    // --- Every job finishes normally: the held one once released, the waiting whole-rack
    // job in one rack.
    new.sl(&["scontrol", "release", &held.to_string()]);
    new.release_and_complete(&all_jobs, 180);
    assert_eq!(racks(&new.nodes(whole_rack)).len(), 1);
    assert_eq!(new.nodes(whole_rack).len(), 18);
    let ctld_log = LAB.log("slurmctld.log")[from..].to_string();
    assert!(
        plugin_errors(&ctld_log).is_empty(),
        "{:?}",
        plugin_errors(&ctld_log)
    );
    assert!(
        !ctld_log.contains("saved NVLink pieces of a job refused"),
        "{ctld_log}"
    );
    new.down(&[]);
    old.down(&[]);
}
