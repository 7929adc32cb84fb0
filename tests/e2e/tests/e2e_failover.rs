//! Two controllers over one StateSaveLocation, as a site runs them for failover: the backup
//! takes over, reconfigures, hands control back, and takes over again with a broken topology
//! file. Nothing moves, nothing is lost, no controller exits (issue 36).
//!
//! Its own lab folder (`/var/tmp/nvl72-failover-<series>`, 3 racks, its own ports, a copy of
//! the main lab's rootfs) with lab-up.sh's `BACKUP_CTLD=1`: ctl1 (127.0.0.1) and ctl2
//! (127.0.0.2), each slurmctld in a UTS namespace named after its `SlurmctldHost`, ctl2 with
//! its own pid file and log (`var/ctl2/`).

use nvl72_e2e as lab;

use std::path::PathBuf;
use std::process::Command;

use lab::Lab;

const LOADED: &str = "topology/nvl72: 3 racks, 54 trays, 4 GPUs per tray";

/// The lab folder and ports of a series, clear of every other lab (docs/lab.md's port map);
/// a lab of SchedMD's packages (`SLURM_DEBS`) has its own, next to Debian's of the series.
fn failover_lab() -> (Lab, [(&'static str, &'static str); 3]) {
    let series = lab::slurm_series();
    let ports = match series.as_str() {
        _ if lab::slurm_debs().is_some() => [
            ("CTLD_PORT", "6981"),
            ("PORT0", "10000"),
            ("CPU_PORT0", "10190"),
        ],
        "26.05" => [
            ("CTLD_PORT", "6987"),
            ("PORT0", "26400"),
            ("CPU_PORT0", "26590"),
        ],
        _ => [
            ("CTLD_PORT", "6977"),
            ("PORT0", "26200"),
            ("CPU_PORT0", "26390"),
        ],
    };
    let lab = Lab {
        repo: lab::repo(),
        dir: PathBuf::from(lab::side_lab_dir("failover")),
    };
    (lab, ports)
}

/// 26.05: switch/nvidia_imex, so that jobs carry NVLink pieces across the takeovers.
fn extra_conf() -> &'static str {
    match lab::slurm_series().as_str() {
        "24.11" => "",
        _ => "SwitchType=switch/nvidia_imex",
    }
}

/// lab-up.sh for the failover lab: starts whichever controller and slurmd are not running.
fn up(lab: &Lab, ports: &[(&str, &str)], extra: &[(&str, &str)]) {
    let from = lab::default_lab_dir(&lab::slurm_series());
    let mut env = vec![
        ("BACKUP_CTLD", "1"),
        ("RACKS", "3"),
        ("CPU_NODES", "0"),
        ("ROOTFS_FROM", from.as_str()),
        ("EXTRA_CONF", extra_conf()),
        ("POLICY", ""),
    ];
    env.extend_from_slice(ports);
    env.extend_from_slice(extra);
    lab.restart_with(&env);
}

/// Stops the failover lab when the test ends, passed or failed.
struct Down<'a>(&'a Lab);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(self.0.repo.join("scripts/lab-down.sh"))
            .env("LAB", &self.0.dir)
            .env("SLURM_SERIES", lab::slurm_series())
            .output();
    }
}

/// What every job holds: state and nodes, each node's cores and GPU indices, and the
/// allocation of the tray two jobs share.
fn held(lab: &Lab, jobs: &[u32]) -> Vec<String> {
    let mut v = lab.jobs_with_nodes(jobs);
    for &job in jobs {
        v.extend(lab.job_detail(job));
    }
    v.push(lab.node_allocation("gb054"));
    v
}

#[test]
fn failover_and_back_twice_moves_and_loses_nothing() {
    let (lab, ports) = failover_lab();
    let stop = Down(&lab);
    up(&lab, &ports, &[("CLEAN", "1")]);
    // Shared tray gb054 first (GPUs 0-1, then one more and a core), then exclusive jobs: one
    // rack, two racks, two segments of 4.
    let shared = lab.submit(&["-w", "gb054", "-n1", "--gres=gpu:2"]);
    lab.running_nodes(shared);
    let beside = lab.submit(&[
        "-w",
        "gb[053-054]",
        "-N2",
        "--ntasks-per-node=1",
        "--gres=gpu:1",
    ]);
    let one_rack = lab.submit(&["-N", "6", "--exclusive"]);
    let two_racks = lab.submit(&["-N", "24", "--exclusive"]);
    let segments = lab.submit(&["-N", "8", "--segment=4", "--exclusive"]);
    let jobs = [shared, beside, one_rack, two_racks, segments];
    for job in jobs {
        lab.running_nodes(job);
    }
    let before = held(&lab, &jobs);
    assert!(before.last().unwrap().contains("CPUAlloc=2"), "{before:#?}");

    // 1. The primary dies; the backup takes over.
    lab.wait_until_saved(&jobs, "failover-1");
    let before = held(&lab, &jobs);
    let from = lab.backup_log().len();
    lab.kill_ctld();
    lab.wait_up_to(120, "ctl2 in control", || lab.in_control("ctl2"));
    assert_eq!(held(&lab, &jobs), before, "after the takeover");
    assert!(lab.backup_log()[from..].contains(LOADED));

    // 2. A reconfigure on the backup: a new ctl2 process, born with
    //    SLURMCTLD_RECONF_PARENT_FD in its environment.
    let from = lab.backup_log().len();
    lab.run(&["scontrol", "reconfigure"]);
    lab.wait_up_to(120, "the reconfigured backup", || {
        lab.backup_log()[from..].contains(LOADED) && lab.in_control("ctl2")
    });
    assert_eq!(held(&lab, &jobs), before, "after the backup's reconfigure");
    let reborn = lab.backup_pid().expect("ctl2 runs");

    // 3. The primary returns and takes control back; ctl2 goes back to standby.
    up(&lab, &ports, &[]);
    lab.wait_up_to(120, "ctl1 in control", || lab.in_control("ctl1"));
    assert_eq!(held(&lab, &jobs), before, "after the primary returned");
    assert_eq!(lab.backup_pid(), Some(reborn), "ctl2 restarted");

    // Each controller left a copy of the racks it loaded in StateSaveLocation; `nvl72 check`
    // compares the file with them: nothing to say now, a warning per controller once the
    // file says otherwise (a controller with its own, different file would change the racks
    // on a takeover).
    let path = lab.etc("topology.toml");
    let good = std::fs::read_to_string(&path).unwrap();
    let check = |lab: &Lab| {
        let out = lab.sl(&["nvl72", "check"]);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), said)
    };
    let (status, same) = check(&lab);
    assert_eq!(status, Some(0), "{same}");
    assert!(!same.contains("last loaded other racks"), "{same}");
    lab.write_racks(&[("rack1", "gb[001-018]"), ("rack2", "gb[019-036]")]);
    let (status, differs) = check(&lab);
    std::fs::write(&path, &good).unwrap();
    // Running jobs hold rack3's trays: a reconfigure would refuse this file, and so does check.
    assert_eq!(status, Some(1), "{differs}");
    assert!(
        differs.contains(
            "that running jobs hold would leave the rack they run in: rack3 (no \
                          longer in the file) loses gb"
        ),
        "{differs}"
    );
    for ctl in ["ctl1", "ctl2"] {
        let expected = format!(
            "warning: controller {ctl} last loaded other racks; if its own topology file still \
             says so, a takeover by {ctl} changes the racks: give every SlurmctldHost the same \
             file (from {state}/topology_nvl72.loaded-by-{ctl}.toml): rack3 removed (18 trays)",
            state = lab.dir.join("var/state").display()
        );
        assert!(
            differs.contains(&expected),
            "expected {expected} in\n{differs}"
        );
    }

    // 4. A broken topology file, then the primary dies again: the reconfigure-born backup
    //    takes over with the last good racks. Before issue 36 it called fatal() here.
    std::fs::write(&path, good.replacen("gb[019-036]", "gb[019-036", 1)).unwrap();
    lab.wait_until_saved(&jobs, "failover-2");
    let before = held(&lab, &jobs);
    let from = lab.backup_log().len();
    lab.kill_ctld();
    lab.wait_up_to(120, "ctl2 in control again", || {
        lab.backup_pid().is_some() && lab.in_control("ctl2")
    });
    let log = lab.backup_log()[from..].to_string();
    let taker = lab.backup_pid();
    let after = held(&lab, &jobs);
    let topology = lab.run(&["scontrol", "show", "topology"]);
    std::fs::write(&path, &good).unwrap();
    drop(stop);

    assert_eq!(
        taker,
        Some(reborn),
        "the reconfigure-born ctl2 did not take over"
    );
    assert!(
        log.contains("invalid topology configuration: ")
            && log.contains("topology_nvl72.last-good.toml"),
        "{log}"
    );
    assert!(log.contains(LOADED), "{log}");
    assert!(!log.contains("fatal"), "{log}");
    assert_eq!(after, before, "after the second takeover");
    assert!(topology.contains("Nodes=gb[019-036]"), "{topology}");
}
