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

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use lab::racks;
use lab::upgrade::{plugin_errors, wait_until, Chroot, UpgradeLab};

/// Out of every other lab's way: main labs 6817/6827 with 17000/18000, replays above them.
const LAB: UpgradeLab = UpgradeLab {
    dir: "/var/tmp/nvl72-upgrade",
    ports: [
        ("CTLD_PORT", "6967"),
        ("PORT0", "31000"),
        ("CPU_PORT0", "31900"),
    ],
};

fn package(var: &str) -> PathBuf {
    let p = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        panic!("{var} must name a topology-nvl72 .deb (scripts/test.sh sets it)")
    });
    assert!(p.is_file(), "{var}={} is no file", p.display());
    p
}

/// A release of Debian's: its series, its chroot in the lab, the main lab whose rootfs that
/// chroot copies, and the plugin package built for it.
fn debian(series: &str, rootfs: &str, from: &str, package_var: &str) -> Chroot {
    Chroot {
        lab: LAB,
        name: series.to_string(),
        rootfs: Path::new(LAB.dir).join(rootfs),
        package: package(package_var),
        release_env: vec![("SLURM_SERIES", OsString::from(series))],
        start_env: vec![
            ("TOPO", OsString::from(lab::topo_under_test())),
            ("ROOTFS_FROM", OsString::from(from)),
        ],
    }
}

fn old() -> Chroot {
    debian(
        "24.11",
        "rootfs",
        "/var/tmp/nvl72-lab",
        "NVL72_PACKAGE_24_11",
    )
}

fn new() -> Chroot {
    debian(
        "26.05",
        "rootfs-26.05",
        "/var/tmp/nvl72-lab-26.05",
        "PACKAGE",
    )
}

#[test]
fn jobs_survive_the_upgrade_from_24_11_to_26_05_and_a_newer_plugin_package() {
    let (old, new) = (old(), new());
    LAB.fresh_start([&old, &new]);

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
    let asked = [old.request(whole_rack), old.request(held)];

    // --- The upgrade: the daemons stop, the steps go on; 26.05.5 starts on the same state.
    old.down(&["--keep-steps"]);
    let started_at = LAB.log("slurmctld.log").len();
    new.must_start(&[]);
    let after = new.jobs();
    assert_eq!(after, before, "jobs changed across the upgrade");
    assert_eq!(
        [new.request(whole_rack), new.request(held)],
        asked,
        "pending jobs' requests changed"
    );
    new.check_trays(&running);
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
    new.upgrade_plugin_in_place();
    let mut still = new.jobs();
    still.retain(|l| !l.starts_with(&format!("{newcomer} ")));
    assert_eq!(still, after, "jobs changed across the plugin upgrade");

    // --- Every job finishes normally; the waiting whole-rack job gets one rack.
    new.release_and_complete(&[one_rack, two_racks, segments, newcomer, whole_rack], 120);
    assert_eq!(racks(&new.nodes(whole_rack)).len(), 1);
    assert_eq!(new.nodes(whole_rack).len(), 18);
    let upgraded_log = LAB.log("slurmctld.log")[started_at..].to_string();
    assert!(
        plugin_errors(&upgraded_log).is_empty(),
        "{:?}",
        plugin_errors(&upgraded_log)
    );

    // --- A downgrade attempt: 24.11 refuses 26.05's state before it loads the plugin, and
    // the state is still whole for 26.05.
    new.down(&["--keep-jobs"]);
    let refused_at = LAB.log("slurmctld.log").len();
    let attempt = old.up(&[]);
    let refusal = LAB.log("slurmctld.log")[refused_at..].to_string();
    old.down(&[]);
    assert!(!attempt.status.success(), "24.11 started on 26.05's state");
    assert!(
        refusal.contains("fatal: Can not recover") && refusal.contains("incompatible version"),
        "{refusal}"
    );
    assert!(plugin_errors(&refusal).is_empty(), "{refusal}");
    new.must_start(&[]);
    assert_eq!(new.field(held, "JobState"), "PENDING");
    assert_eq!(new.request(held), asked[1]);
    new.down(&[]);
}
