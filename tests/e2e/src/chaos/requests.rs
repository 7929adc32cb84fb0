//! Every way users size a job, drawn from the storm's seed: node counts and ranges,
//! `--gpus`, `-n --gpus-per-task`, `--ntasks-per-node`, `-c` on a shared tray, `--mem`,
//! arrays, hetjobs, `--segment`, `--switches`, jobs larger than a rack, and the preemption
//! tiers (partition `low`, requeued when preempted, and `high`).

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A submission: sbatch's arguments, and what the job's placement is held to.
#[derive(Debug, Clone)]
pub struct Request {
    pub args: Vec<String>,
    pub rule: Rule,
}

/// Which racks the plugin promises the job's pieces (each record of it) may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// One rack when it fits one, else the fewest racks (⌈n/18⌉).
    FewestRacks,
    /// Each segment of `s` trays inside one rack.
    Segments(usize),
    /// `--switches=c@t`: after its wait the job may take more racks.
    Lifted,
}

impl Request {
    pub fn describe(&self) -> String {
        self.args.join(" ")
    }
}

/// Draws one request. `exclusive_topo`: the series knows `--exclusive=topo` (25.05 on).
pub fn draw(rng: &mut ChaCha8Rng, exclusive_topo: bool) -> Request {
    let pick = |rng: &mut ChaCha8Rng, v: &[usize]| *v.choose(rng).expect("choices");
    let sleep = rng.gen_range(5..=45);
    let (mut args, rule): (Vec<String>, Rule) = match rng.gen_range(0..13) {
        0 => (
            vec![
                "-N".into(),
                pick(rng, &[1, 2, 4, 6, 8, 12, 18]).to_string(),
                "--exclusive".into(),
            ],
            Rule::FewestRacks,
        ),
        1 => {
            let (a, b) = *[(2, 4), (4, 8), (6, 12)].choose(rng).expect("ranges");
            (
                vec!["-N".into(), format!("{a}-{b}"), "--exclusive".into()],
                Rule::FewestRacks,
            )
        }
        2 => (
            vec![
                format!("--gpus={}", pick(rng, &[4, 8, 16, 24, 48])),
                "--exclusive".into(),
            ],
            Rule::FewestRacks,
        ),
        3 => (
            vec![
                "-n".into(),
                pick(rng, &[4, 8, 12, 16]).to_string(),
                "--gpus-per-task=1".into(),
            ],
            Rule::FewestRacks,
        ),
        4 => (
            vec![
                "-N".into(),
                pick(rng, &[2, 3, 5]).to_string(),
                "--ntasks-per-node=4".into(),
                "--gres=gpu:4".into(),
            ],
            Rule::FewestRacks,
        ),
        5 => (
            vec![
                "-n1".into(),
                format!("-c{}", pick(rng, &[1, 2, 4])),
                format!("--gres=gpu:{}", pick(rng, &[1, 2])),
            ],
            Rule::FewestRacks,
        ),
        6 => (
            vec![
                "-N".into(),
                pick(rng, &[1, 3, 6]).to_string(),
                "--mem=1G".into(),
                "--gres=gpu:4".into(),
            ],
            Rule::FewestRacks,
        ),
        7 => (
            vec![
                "--array=0-3".into(),
                "-N".into(),
                pick(rng, &[1, 2, 4]).to_string(),
                "--exclusive".into(),
            ],
            Rule::FewestRacks,
        ),
        8 => {
            let (a, b) = *[(2, 4), (1, 8), (6, 6)].choose(rng).expect("components");
            let args = [
                "-N",
                &a.to_string(),
                "--exclusive",
                ":",
                "-N",
                &b.to_string(),
                "--exclusive",
            ];
            (
                args.iter().map(|s| s.to_string()).collect(),
                Rule::FewestRacks,
            )
        }
        9 => {
            let (n, s) = *[(8, 4), (12, 4), (16, 8), (24, 8), (36, 6)]
                .choose(rng)
                .expect("segments");
            (
                vec![
                    "-N".into(),
                    n.to_string(),
                    format!("--segment={s}"),
                    "--exclusive".into(),
                ],
                Rule::Segments(s),
            )
        }
        10 => (
            vec![
                "-N".into(),
                pick(rng, &[12, 16]).to_string(),
                "--switches=1@0:20".into(),
                "--exclusive".into(),
            ],
            Rule::Lifted,
        ),
        11 => (
            vec![
                "-N".into(),
                pick(rng, &[24, 30, 36]).to_string(),
                "--exclusive".into(),
            ],
            Rule::FewestRacks,
        ),
        _ => {
            let n = pick(rng, &[2, 4]).to_string();
            let exclusive = if exclusive_topo {
                "--exclusive=topo"
            } else {
                "--exclusive"
            };
            (vec!["-N".into(), n, exclusive.into()], Rule::FewestRacks)
        }
    };
    // A third of the jobs go to the preemption tiers: low (requeued when a high job
    // preempts it) or high; the rest to the default partition.
    let tier: &[&str] = match rng.gen_range(0..6) {
        0 => &["-p", "low", "--requeue"],
        1 => &["-p", "high"],
        _ => &[],
    };
    args.splice(0..0, tier.iter().map(|s| s.to_string()));
    args.extend([
        "-t".into(),
        "5".into(),
        "--wrap".into(),
        format!("sleep {sleep}"),
    ]);
    Request { args, rule }
}
