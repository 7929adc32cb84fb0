//! Chaos with invariants (issue 53): seeded storms of every admin operation and fault against
//! a lab with two controllers, each invariant checked from Slurm's records after every step
//! (`nvl72_e2e::chaos`). The test command runs a short storm per series; `scripts/chaos.sh`
//! runs long ones (`CHAOS_SEEDS`, `CHAOS_STEPS`), and a failing seed replays with the same
//! operations.
//!
//! Its own lab folder (`/var/tmp/nvl72-chaos-<series>`, 3 racks, no cpu nodes, its own
//! ports, a copy of the main lab's rootfs) with lab-up.sh's `BACKUP_CTLD=1`, the preemption
//! tiers (partitions `low` and `high` over every tray), `MaxNodeCount` room for dynamic nodes
//! and `MinJobAge` long enough that every job the storm submitted stays in Slurm's records.
//!
//! What fails without the plugin: with topology/block or none, jobs that fit one rack are
//! spread over two (the rack invariant), and a wrong topology file is never refused (block
//! has no such file). The other invariants are Slurm's own promises, which the plugin must
//! not break; stock Slurm keeps them too.

use nvl72_e2e as lab;

use std::path::PathBuf;
use std::process::Command;

use lab::chaos::Storm;
use lab::Lab;

const RACKS: usize = 3;

/// The storms of the test command: (seed, steps) per series.
fn default_storms(series: &str) -> Vec<(u64, usize)> {
    match series {
        "24.11" => vec![(1, 100)],
        _ => vec![(2, 100)],
    }
}

/// The lab folder and ports of a series, clear of every other lab (docs/lab.md's port map;
/// a lab of SchedMD's packages, `SLURM_DEBS`, has its own, next to Debian's of the series);
/// `CHAOS_LAB`, `CHAOS_CTLD_PORT` and `CHAOS_PORT0` move a long run (scripts/chaos.sh) clear
/// of the test command's.
fn chaos_lab() -> (Lab, Vec<(&'static str, String)>) {
    let series = lab::slurm_series();
    let (ctld, port0) = match series.as_str() {
        _ if lab::slurm_debs().is_some() => ("6983", "10400"),
        "24.11" => ("6947", "15000"),
        _ => ("6957", "14000"),
    };
    let setting = |name: &str, default: String| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or(default)
    };
    let ctld = setting("CHAOS_CTLD_PORT", ctld.into());
    let port0 = setting("CHAOS_PORT0", port0.into());
    let dir = PathBuf::from(setting("CHAOS_LAB", lab::side_lab_dir("chaos")));
    let imex = if series == "24.11" {
        ""
    } else {
        "SwitchType=switch/nvidia_imex\n"
    };
    let extra = format!(
        "{imex}PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobRequeue=1
MinJobAge=86400
MaxNodeCount=70
PartitionName=low Nodes=gb[001-054] PriorityTier=1 PreemptMode=REQUEUE MaxTime=INFINITE State=UP
PartitionName=high Nodes=gb[001-054] PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP"
    );
    let env = vec![
        ("BACKUP_CTLD", "1".into()),
        ("RACKS", RACKS.to_string()),
        ("CPU_NODES", "0".into()),
        ("ROOTFS_FROM", lab::default_lab_dir(&series)),
        ("CTLD_PORT", ctld),
        ("PORT0", port0),
        ("EXTRA_CONF", extra),
    ];
    let lab = Lab {
        repo: lab::repo(),
        dir,
    };
    (lab, env)
}

/// lab-up.sh with the chaos lab's settings and `more`.
fn up(lab: &Lab, env: &[(&str, String)], more: &[(&str, &str)]) -> String {
    let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.push(("POLICY", ""));
    all.extend_from_slice(more);
    lab.restart_with(&all)
}

/// Stops the chaos lab when the test ends, passed or failed (CHAOS_KEEP=1 keeps it).
struct Down<'a>(&'a Lab);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        if std::env::var("CHAOS_KEEP").is_ok_and(|v| v == "1") {
            return;
        }
        let _ = Command::new("bash")
            .arg(self.0.repo.join("scripts/lab-down.sh"))
            .env("LAB", &self.0.dir)
            .env("SLURM_SERIES", lab::slurm_series())
            .output();
    }
}

/// `CHAOS_SEEDS=1,2,3` and `CHAOS_STEPS=N`, else the test command's storms.
fn storms() -> Vec<(u64, usize)> {
    let seeds = std::env::var("CHAOS_SEEDS").unwrap_or_default();
    if seeds.trim().is_empty() {
        return default_storms(&lab::slurm_series());
    }
    let steps = std::env::var("CHAOS_STEPS")
        .ok()
        .map(|s| s.parse().expect("CHAOS_STEPS is a number"))
        .unwrap_or(300);
    seeds
        .split(',')
        .map(|s| {
            (
                s.trim()
                    .parse()
                    .expect("CHAOS_SEEDS: numbers, comma-separated"),
                steps,
            )
        })
        .collect()
}

#[test]
fn a_seeded_storm_of_operations_and_faults_breaks_no_invariant() {
    let (lab, env) = chaos_lab();
    let _down = Down(&lab);
    for (seed, steps) in storms() {
        up(&lab, &env, &[("CLEAN", "1")]);
        let start = |more: &[(&str, &str)]| up(&lab, &env, more);
        let summary = Storm::new(&lab, &start, seed, RACKS).run(steps);
        eprintln!("chaos: {summary:?}");
        assert!(summary.accepted > steps / 4, "{summary:?}");
    }
}
