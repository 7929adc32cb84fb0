//! Least-loss preemption (issue 52): a high-tier job that can start only by preempting
//! lower-tier work clears the racks whose loss is least, where Slurm's own candidate order
//! (lowest tier, then the smallest job) clears whatever rack its order frees first.
//!
//! The lab gets two partitions over every tray (slurm.conf's `PreemptType=
//! preempt/partition_prio`): `low` (PriorityTier=1, requeued when preempted) and `high`
//! (PriorityTier=10). Requeues are counted from slurmctld's `Restarts=`, not from squeue.
//! Every test but three fails with topology/block (docs/lab.md), which takes Slurm's order:
//! the free-rack one (no preemption), the `preemption_cost = "slurm"` one (Slurm's order by
//! design) and the no-start guard (it ends in Slurm's order) pass there by design.

use nvl72_e2e as lab;

use lab::{per_rack, Lab};

const PREEMPTION: &str = "PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobRequeue=1
PartitionName=low Nodes=gb[001-072] PriorityTier=1 PreemptMode=REQUEUE MaxTime=INFINITE State=UP
PartitionName=high Nodes=gb[001-072] PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP";

/// The lab with the two partitions (and `policy`, topology.toml's `[policy]` lines).
fn preemption_lab(policy: &str) -> (&'static Lab, std::sync::MutexGuard<'static, ()>) {
    let (lab, guard) = Lab::claim();
    lab.restart_with(&[("EXTRA_CONF", PREEMPTION), ("POLICY", policy)]);
    (lab, guard)
}

/// A low-tier job on exactly `nodes`, requeued when preempted, running when this returns.
fn low(lab: &Lab, name: &str, nodes: &str) -> u32 {
    low_with(lab, name, nodes, &[])
}

/// [`low`] with more sbatch arguments.
fn low_with(lab: &Lab, name: &str, nodes: &str, args: &[&str]) -> u32 {
    let mut all = vec!["-p", "low", "--requeue", "-J", name];
    all.extend_from_slice(args);
    lab.occupy_with(nodes, &all)
}

/// High-tier work on racks 3 and 4, which high jobs do not preempt.
fn high_on_racks_3_and_4(lab: &Lab) {
    for nodes in ["gb[037-054]", "gb[055-072]"] {
        lab.occupy_with(nodes, &["-p", "high"]);
    }
}

/// How often slurmctld requeued the job.
fn restarts(lab: &Lab, job: u32) -> u32 {
    lab.job_field(job, "Restarts").parse().expect("Restarts=")
}

/// The reference's layout (../shared/reference/preemption.md §1.5): rack1 = l1 (10 trays) +
/// l2 (8), rack2 = l3 (10) + 8 free, rack3 = l4 (18), rack4 = l5 (18). Slurm's order is l2,
/// l1, l3, l4, l5 (tier, then size, then submission): removing l2 then l1 frees rack1
/// first, so it preempts two jobs where rack2's one (l3) would do.
struct Layout {
    l1: u32,
    l2: u32,
    l3: u32,
    l4: u32,
    l5: u32,
}

impl Layout {
    /// The whole-rack jobs start first, l3 last: under the default cost (work lost) l3,
    /// the youngest, is also the cheapest, as it is by jobs. Slurm's order does not change:
    /// equal sizes keep submission order (l1 before l3).
    fn start(lab: &Lab) -> Layout {
        let l4 = low(lab, "l4", "gb[037-054]");
        let l5 = low(lab, "l5", "gb[055-072]");
        let l1 = low(lab, "l1", "gb[001-010]");
        let l2 = low(lab, "l2", "gb[011-018]");
        let l3 = low(lab, "l3", "gb[019-028]");
        Layout { l1, l2, l3, l4, l5 }
    }

    fn all(&self) -> [(&'static str, u32); 5] {
        [
            ("l1", self.l1),
            ("l2", self.l2),
            ("l3", self.l3),
            ("l4", self.l4),
            ("l5", self.l5),
        ]
    }

    /// The names of the jobs slurmctld requeued.
    fn requeued(&self, lab: &Lab) -> Vec<&'static str> {
        self.all()
            .into_iter()
            .filter(|&(_, job)| restarts(lab, job) > 0)
            .map(|(name, _)| name)
            .collect()
    }
}

/// A high-tier job of `args`, running when this returns.
fn high(lab: &Lab, args: &[&str]) -> (u32, Vec<String>) {
    let mut all = vec!["-p", "high", "--exclusive"];
    all.extend_from_slice(args);
    let job = lab.submit(&all);
    lab.wait_up_to(180, &format!("high job {job} RUNNING"), || {
        lab.state(job) == "RUNNING"
    });
    (job, lab.running_nodes(job))
}

#[test]
fn a_whole_rack_job_preempts_the_one_job_whose_rack_loses_least() {
    let (lab, _g) = preemption_lab("");
    let layout = Layout::start(lab);
    let (_, nodes) = high(lab, &["-N", "18"]);
    assert_eq!(per_rack(&nodes), vec![(2, 18)], "{nodes:?}");
    assert_eq!(layout.requeued(lab), ["l3"], "{}", lab.diagnostics());
    let line = lab
        .log("slurmctld.log")
        .lines()
        .rev()
        .find(|l| l.contains("to start by preemption"))
        .map(str::to_string)
        .expect("the decision line");
    assert!(line.contains("clears rack2 "), "{line}");
    assert!(
        line.contains(&format!("victims {}, cost", layout.l3)),
        "{line}"
    );
    let slurms = format!(
        "Slurm's order: clears rack1: victims {},{}",
        layout.l2, layout.l1
    );
    assert!(line.contains(&slurms), "{line}");
}

/// `sbatch --test-only` (the will-run path, one call with every candidate's trays offered)
/// names the same victim the kill takes; block names l5 there while killing l2 and l1.
#[test]
fn test_only_names_the_victims_the_kill_takes() {
    let (lab, _g) = preemption_lab("");
    let layout = Layout::start(lab);
    let out = lab.sl(&[
        "sbatch",
        "--test-only",
        "-p",
        "high",
        "--exclusive",
        "-N",
        "18",
        "--wrap",
        "sleep 1",
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let preempts = text
        .split("Preempts:")
        .nth(1)
        .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no Preempts: in {text}"));
    assert_eq!(preempts, layout.l3.to_string(), "{text}");
    assert!(layout.requeued(lab).is_empty(), "test-only preempted");
}

/// The key's other value: `preemption_cost = "slurm"` gives Slurm's order back, which
/// clears rack1 (two jobs). Shows the lab case separates the two.
#[test]
fn with_slurms_order_the_same_job_preempts_two() {
    let (lab, _g) = preemption_lab("preemption_cost = \"slurm\"");
    let layout = Layout::start(lab);
    let (_, nodes) = high(lab, &["-N", "18"]);
    assert_eq!(per_rack(&nodes), vec![(1, 18)], "{nodes:?}");
    let mut requeued = layout.requeued(lab);
    requeued.sort_unstable();
    assert_eq!(requeued, ["l1", "l2"]);
}

/// A job over two racks under `preemption_cost = "jobs"` clears the pair with the fewest
/// victims: rack2 (l3) and the first whole-rack job's rack (l4), two jobs; Slurm's order
/// removes l2, l1 and l3 before two racks are free (three jobs). (By work lost, the default,
/// rack1's two young jobs cost less than l4's or l5's older rack: Slurm's three.)
#[test]
fn a_two_rack_job_clears_the_pair_of_racks_with_the_fewest_victims() {
    let (lab, _g) = preemption_lab("preemption_cost = \"jobs\"");
    let layout = Layout::start(lab);
    let (_, nodes) = high(lab, &["-N", "36"]);
    assert_eq!(per_rack(&nodes), vec![(2, 18), (3, 18)], "{nodes:?}");
    assert_eq!(layout.requeued(lab), ["l3", "l4"]);
}

/// `--segment=9` pieces: two pieces of 9 fit rack2 once l3 goes (8 free + 10), so one victim
/// serves both, where Slurm's order frees rack1 first (l2, l1).
#[test]
fn segment_pieces_clear_the_cheapest_rack() {
    let (lab, _g) = preemption_lab("");
    let layout = Layout::start(lab);
    let (_, nodes) = high(lab, &["-N", "18", "--segment=9"]);
    assert_eq!(per_rack(&nodes), vec![(2, 18)], "{nodes:?}");
    assert_eq!(layout.requeued(lab), ["l3"]);
}

/// Two whole-rack jobs of the same tier and size: Slurm's order takes the one submitted
/// first, which has run longest; the default cost (work lost) takes the younger one.
#[test]
fn of_two_equal_jobs_the_younger_is_preempted() {
    let (lab, _g) = preemption_lab("");
    let old = low(lab, "old", "gb[001-018]");
    let started = lab.job_time(old, "StartTime").expect("StartTime");
    // Two seconds between the two starts (slurmctld's times have one-second resolution).
    lab.wait_for("the old job to run 2 s", || {
        !matches!(
            lab.job_field(old, "RunTime").as_str(),
            "00:00:00" | "00:00:01"
        )
    });
    let young = low(lab, "young", "gb[019-036]");
    assert!(lab.job_time(young, "StartTime").expect("StartTime") > started);
    high_on_racks_3_and_4(lab);
    let (_, nodes) = high(lab, &["-N", "18"]);
    assert_eq!(per_rack(&nodes), vec![(2, 18)], "{nodes:?}");
    assert_eq!((restarts(lab, old), restarts(lab, young)), (0, 1));
}

/// A job that says it checkpoints (`--comment=checkpoint=2s`) loses only the work since its
/// last checkpoint. rack1: C, 18 trays, checkpointing, started first; rack2: Y, 10 trays, no
/// checkpoint, started later, and 8 free trays. Slurm's order (the smallest job first) and the
/// work since each start both take Y; the work since the last checkpoint (at most 2 s of C's
/// 72 GPUs, against at least 3 s of Y's 40) takes C.
#[test]
fn a_job_that_checkpoints_loses_only_the_work_since_its_checkpoint() {
    let (lab, _g) = preemption_lab("");
    let c = low_with(lab, "c", "gb[001-018]", &["--comment=checkpoint=2s"]);
    let y = low(lab, "y", "gb[019-028]");
    lab.wait_for("y to run 3 s", || {
        !matches!(
            lab.job_field(y, "RunTime").as_str(),
            "00:00:00" | "00:00:01" | "00:00:02"
        )
    });
    high_on_racks_3_and_4(lab);
    let (_, nodes) = high(lab, &["-N", "18"]);
    assert_eq!(per_rack(&nodes), vec![(1, 18)], "{nodes:?}");
    assert_eq!((restarts(lab, c), restarts(lab, y)), (1, 0));
}

/// A job that fits a free rack preempts nothing. Stock Slurm passes this too: its plain test
/// (free trays only) comes before any preemption; the test guards that steering never
/// turns a free start into a preemption.
#[test]
fn a_free_rack_means_no_preemption() {
    let (lab, _g) = preemption_lab("");
    let l1 = low(lab, "l1", "gb[001-018]");
    let l2 = low(lab, "l2", "gb[019-030]");
    let (_, nodes) = high(lab, &["-N", "18"]);
    let racks = per_rack(&nodes);
    assert_eq!(racks.len(), 1, "{nodes:?}");
    assert!(racks[0].0 >= 3, "{nodes:?}");
    assert_eq!((restarts(lab, l1), restarts(lab, l2)), (0, 0));
}

/// The no-start guard: l3 runs inside a reservation the high job may not use, so the plan
/// (rack2, l3 alone) can never be reached: Slurm's loop never offers l3's trays. The job is
/// steered for at most `preemption::PATIENCE_SECONDS` (60 s) without preempting anything,
/// then Slurm's order decides (l2 and l1) and it starts; nothing is requeued twice. Stock
/// Slurm passes this too (it takes its order at once): the test guards that steering never
/// keeps a job from starting.
#[test]
fn a_plan_slurm_cannot_reach_gives_way_to_slurms_order() {
    let (lab, _g) = preemption_lab("");
    let _kept = Reservation::create(lab, "kept", "gb[019-028]");
    let l4 = low(lab, "l4", "gb[037-054]");
    let l5 = low(lab, "l5", "gb[055-072]");
    let l1 = low(lab, "l1", "gb[001-010]");
    let l2 = low(lab, "l2", "gb[011-018]");
    let l3 = low_with(lab, "l3", "gb[019-028]", &["--reservation=kept"]);
    let (job, nodes) = high(lab, &["-N", "18"]);
    assert_eq!(per_rack(&nodes), vec![(1, 18)], "{nodes:?}");
    let restarts_of = |jobs: &[u32]| jobs.iter().map(|&j| restarts(lab, j)).collect::<Vec<_>>();
    assert_eq!(restarts_of(&[l1, l2, l3, l4, l5]), [1, 1, 0, 0, 0]);
    let log = lab.log("slurmctld.log");
    assert!(
        log.contains(&format!(
            "JobId={job}: preemption plan for rack2 not reached"
        )),
        "no give-up line"
    );
}

/// A reservation for root on `nodes`, deleted when dropped (also when the test fails).
struct Reservation<'a> {
    lab: &'a Lab,
    name: &'static str,
}

impl<'a> Reservation<'a> {
    fn create(lab: &'a Lab, name: &'static str, nodes: &str) -> Reservation<'a> {
        lab.run(&[
            "scontrol",
            "create",
            "reservation",
            &format!("reservationname={name}"),
            "users=root",
            &format!("nodes={nodes}"),
            "starttime=now",
            "duration=60",
            "flags=ignore_jobs",
        ]);
        Reservation { lab, name }
    }
}

impl Drop for Reservation<'_> {
    /// Slurm refuses to delete a reservation that jobs run in: they go first.
    fn drop(&mut self) {
        let name = self.name;
        let _ = self.lab.sl(&["scancel", &format!("--reservation={name}")]);
        let delete = format!("reservationname={name}");
        self.lab
            .wait_for(&format!("reservation {name} deleted"), || {
                self.lab
                    .sl(&["scontrol", "delete", &delete])
                    .status
                    .success()
            });
    }
}
