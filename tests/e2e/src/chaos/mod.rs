//! Chaos with invariants (issue 53): from a seed, a random sequence of every admin operation
//! and fault ([`ops`]) against a real lab with two controllers, and after every step the
//! invariants ([`invariants`]) read from Slurm's own records. A violation stops the storm
//! and reports the seed, the step, the journal of operations and Slurm's state; the same
//! seed replays the same operations (their effects still race with Slurm's own timing).

pub mod invariants;
pub mod ops;
pub mod records;
pub mod requests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Lab, TRAYS};
use nvl72_engine::hostlist;
use ops::Op;
use requests::{Request, Rule};

/// How the storm starts whichever daemon is not running: lab-up.sh with the lab's own
/// settings and the extra variables given (the storm passes the racks in force as
/// `TOPOLOGY_TOML` and `WAIT_NODES=0`, since it keeps trays down on purpose); returns what
/// lab-up.sh printed.
pub type Up<'a> = &'a dyn Fn(&[(&str, &str)]) -> String;

/// What one storm did, for the test's report and docs/notebook/soak.md.
#[derive(Debug, Default)]
pub struct Summary {
    pub seed: u64,
    pub steps: usize,
    /// Jobs sbatch accepted that Slurm still knew at the end (not those in `lost_by_slurm`).
    pub accepted: usize,
    pub refused: usize,
    /// Per operation: how many, and milliseconds spent in them.
    pub ops: BTreeMap<&'static str, (usize, u64)>,
    pub checks: usize,
    pub seconds: u64,
    /// Times a controller took control without `job_state` (Slurm's window), and the jobs
    /// Slurm lost then (`Storm::forget_jobs_slurm_lost`).
    pub slurm_state_windows: usize,
    pub lost_by_slurm: usize,
}

pub struct Storm<'a> {
    lab: &'a Lab,
    up: Up<'a>,
    seed: u64,
    rng: ChaCha8Rng,
    exclusive_topo: bool,
    /// The racks of the file in force: (name, trays), in file order.
    racks: Vec<(String, Vec<String>)>,
    accepted: BTreeSet<u32>,
    rules: HashMap<u32, Rule>,
    cancelled: BTreeSet<u32>,
    refused: usize,
    pending: Vec<u32>,
    running: Vec<(u32, String)>,
    /// Trays nothing runs on at the last check.
    free: Vec<String>,
    out_of_service: Vec<String>,
    dynamic: Vec<String>,
    made_nodes: usize,
    journal: Vec<String>,
    logs_from: [usize; 2],
    /// Plugin error lines expected (a refused topology file), each for so many more checks.
    expected_errors: Vec<(&'static str, usize)>,
    last_change: SystemTime,
    /// When sbatch last accepted a job: each submission asks slurmctld for a save.
    last_submission: SystemTime,
    /// The step being applied, for checks inside an operation.
    step: usize,
    summary: Summary,
}

impl<'a> Storm<'a> {
    /// A storm over `lab` (running, racks of 18 trays `gb001..` as lab-up.sh names them).
    pub fn new(lab: &'a Lab, up: Up<'a>, seed: u64, racks: usize) -> Self {
        let racks = (0..racks)
            .map(|r| {
                let trays = (r * TRAYS + 1..=(r + 1) * TRAYS).map(|i| format!("gb{i:03}"));
                (format!("rack{}", r + 1), trays.collect())
            })
            .collect();
        Storm {
            lab,
            up,
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            exclusive_topo: crate::slurm_series() != "24.11",
            racks,
            accepted: BTreeSet::new(),
            rules: HashMap::new(),
            cancelled: BTreeSet::new(),
            refused: 0,
            pending: Vec::new(),
            running: Vec::new(),
            free: Vec::new(),
            out_of_service: Vec::new(),
            dynamic: Vec::new(),
            made_nodes: 0,
            journal: Vec::new(),
            logs_from: [0, 0],
            expected_errors: Vec::new(),
            last_change: SystemTime::now(),
            last_submission: SystemTime::now(),
            step: 0,
            summary: Summary {
                seed,
                ..Summary::default()
            },
        }
    }

    /// Runs `steps` operations, checking every invariant after each; panics with the report
    /// on the first violation. Ends with every tray back in service and every job ended.
    pub fn run(mut self, steps: usize) -> Summary {
        let started = Instant::now();
        self.logs_from = [self.lab.ctld_log_len(), self.lab.backup_log().len()];
        self.check(0);
        for step in 1..=steps {
            let op = ops::draw(&mut self.rng, self.racks.len(), self.exclusive_topo);
            let pause = Duration::from_millis(self.rng.gen_range(0..1500));
            self.journal.push(format!("{step}: {}", op.describe()));
            self.step = step;
            self.apply(op);
            self.check(step);
            std::thread::sleep(pause);
        }
        self.wind_down(steps);
        self.summary.steps = steps;
        self.summary.accepted = self.accepted.len();
        self.summary.refused = self.refused;
        self.summary.seconds = started.elapsed().as_secs();
        self.summary
    }

    fn apply(&mut self, op: Op) {
        let name = match &op {
            Op::Submit(_) => "submit",
            Op::Cancel { .. } => "cancel",
            Op::Resize { .. } => "resize pending",
            Op::Reshape { .. } => "switches or segment on pending",
            Op::Drain { .. } => "drain",
            Op::Down { .. } => "down",
            Op::Resume { .. } => "resume",
            Op::KillSlurmd { .. } => "kill slurmd",
            Op::Reconfigure => "reconfigure",
            Op::ReorderRacks { .. } => "racks reordered",
            Op::WrongRacks { .. } => "wrong racks file",
            Op::MoveHeldTray { .. } => "held tray moved",
            Op::SwapFreeTrays { .. } => "free trays swapped",
            Op::KillPrimary => "kill -9 primary",
            Op::Takeover => "takeover",
            Op::CreateNode => "create node",
            Op::DeleteNode { .. } => "delete node",
        };
        let started = Instant::now();
        self.apply_op(op);
        let entry = self.summary.ops.entry(name).or_default();
        entry.0 += 1;
        entry.1 += started.elapsed().as_millis() as u64;
    }

    fn apply_op(&mut self, op: Op) {
        let edits_racks = matches!(
            op,
            Op::ReorderRacks { .. }
                | Op::WrongRacks { .. }
                | Op::MoveHeldTray { .. }
                | Op::SwapFreeTrays { .. }
        );
        if edits_racks && crate::topo_under_test() != "nvl72" {
            // Without the plugin there is no topology.toml: the storm goes on without edits.
            self.journal.push("   skipped: no topology.toml".into());
            return;
        }
        match op {
            Op::Submit(request) => self.submit(request),
            Op::Cancel { pick } => {
                if let Some(&job) = nth(&self.live(), pick) {
                    self.cancelled.insert(job);
                    self.client(&["scancel", &job.to_string()]);
                }
            }
            Op::Resize { pick, trays } => {
                if let Some(&job) = nth(&self.pending, pick) {
                    let nodes = format!("NumNodes={trays}");
                    self.update_pending(job, &nodes);
                }
            }
            Op::Reshape { pick, segment } => {
                if let Some(&job) = nth(&self.pending, pick) {
                    let (setting, rule) = match segment {
                        Some(s) => (format!("SegmentSize={s}"), Rule::Segments(s)),
                        None => ("Switches=1@0:20".to_string(), Rule::Lifted),
                    };
                    // `--switches` lifts the rack count, never a segment's one rack.
                    let segmented = matches!(self.rules.get(&job), Some(Rule::Segments(_)));
                    if self.update_pending(job, &setting) && !(segmented && rule == Rule::Lifted) {
                        self.rules.insert(job, rule);
                    }
                }
            }
            Op::Drain { tray } => self.take_out(tray, "drain"),
            Op::Down { tray } => self.take_out(tray, "down"),
            Op::Resume { pick } => {
                if !self.out_of_service.is_empty() {
                    let at = pick % self.out_of_service.len();
                    let node = self.out_of_service.remove(at);
                    let node = format!("nodename={node}");
                    self.client(&["scontrol", "update", &node, "state=resume"]);
                }
            }
            Op::KillSlurmd { tray } => self.kill_slurmd(tray),
            Op::Reconfigure => self.reconfigure(),
            Op::ReorderRacks { order } => {
                let racks = order.iter().map(|&r| self.racks[r].clone()).collect();
                self.edit_racks(racks, true);
            }
            Op::WrongRacks { kind } => self.wrong_racks(kind),
            Op::MoveHeldTray { pick } => self.move_held_tray(pick),
            Op::SwapFreeTrays { pick } => self.swap_free_trays(pick),
            Op::KillPrimary => {
                self.wait_state_saved();
                self.lab.kill_ctld();
                self.back_to_primary();
            }
            Op::Takeover => {
                self.client(&["scontrol", "takeover"]);
                self.back_to_primary();
            }
            Op::CreateNode => {
                self.made_nodes += 1;
                let node = format!("chaos{}", self.made_nodes);
                let name = format!("NodeName={node}");
                if self.client(&["scontrol", "create", &name, "State=FUTURE", "CPUs=4"]) {
                    self.dynamic.push(node);
                }
            }
            Op::DeleteNode { pick } => {
                if !self.dynamic.is_empty() {
                    let node = self.dynamic.remove(pick % self.dynamic.len());
                    self.client(&["scontrol", "delete", &format!("NodeName={node}")]);
                }
            }
        }
    }

    fn submit(&mut self, request: Request) {
        let mut args = vec!["sbatch", "--parsable"];
        args.extend(request.args.iter().map(String::as_str));
        let out = self.lab.sl(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let id = stdout.trim().split(';').next().and_then(|s| s.parse().ok());
        match id.filter(|_| out.status.success()) {
            Some(id) => {
                self.accepted.insert(id);
                self.rules.insert(id, request.rule);
                self.last_change = SystemTime::now();
                self.last_submission = self.last_change;
            }
            None => {
                let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
                assert!(
                    !said.is_empty(),
                    "{}",
                    self.report(&format!("sbatch refused without a message: {args:?}"))
                );
                self.journal.push(format!("   refused: {said}"));
                self.refused += 1;
            }
        }
    }

    /// Drains or downs the tray (`state`), unless the storm has it out of service already.
    fn take_out(&mut self, tray: usize, state: &str) {
        let node = tray_name(tray);
        if self.out_of_service.contains(&node) {
            return;
        }
        let update = format!("nodename={node}");
        let state = format!("state={state}");
        if self.client(&["scontrol", "update", &update, &state, "reason=chaos"]) {
            self.out_of_service.push(node);
        }
    }

    fn kill_slurmd(&mut self, tray: usize) {
        let node = tray_name(tray);
        let pid_file = self.lab.dir.join(format!("var/run/slurmd-{node}.pid"));
        if let Some(pid) = self.lab.live_pid(&pid_file) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            self.wait(60, "the killed slurmd to be gone", || {
                self.lab.live_pid(&pid_file).is_none()
            });
        }
        self.start_missing_daemons();
    }

    fn reconfigure(&mut self) {
        self.client(&["scontrol", "reconfigure"]);
        self.lab.wait_ctld_after_reconfigure(180);
    }

    /// Writes `racks` as the topology file and reconfigures. `valid`: the file must take
    /// effect; otherwise it must be refused whole, and the old file goes back.
    fn edit_racks(&mut self, racks: Vec<(String, Vec<String>)>, valid: bool) {
        let good = self.lab.write_racks(&borrow(&rack_lists(&racks)));
        if valid {
            self.racks = racks;
        } else {
            self.expect_error("reconfigure refused");
        }
        self.reconfigure();
        if !valid {
            std::fs::write(self.lab.etc("topology.toml"), good).expect("topology.toml back");
        }
    }

    /// A file with one valid change (rack1's last tray swapped with rack2's first) and one
    /// error of `kind`: an unknown node, a syntax error, a tray in two racks, a 19th tray.
    fn wrong_racks(&mut self, kind: usize) {
        let mut racks = self.racks.clone();
        if racks.len() < 2 || racks[1].1.is_empty() {
            return;
        }
        let (a, b) = (racks[0].1.last().cloned(), racks[1].1.first().cloned());
        if let (Some(a), Some(b)) = (a, b) {
            swap(&mut racks, &a, &b);
        }
        let last = racks[1].1.len() - 1;
        match kind {
            0 => racks[1].1[last] = "gb999".into(),
            1 => racks[1].0 = "rack\"broken".into(),
            2 => racks[1].1[last] = racks[0].1[0].clone(),
            _ => racks[1].1.push("gb999".into()),
        }
        self.edit_racks(racks, false);
    }

    /// Swaps a running job's tray with one of the next rack: refused while the job holds it.
    /// If Slurm takes the file, the job must have ended before the reconfigure.
    fn move_held_tray(&mut self, pick: usize) {
        let Some((job, tray)) = nth(&self.running, pick).cloned() else {
            return;
        };
        let Some(from) = self.racks.iter().position(|(_, t)| t.contains(&tray)) else {
            return;
        };
        let next = &self.racks[(from + 1) % self.racks.len()].1;
        let Some(other) = nth(next, pick).cloned() else {
            return;
        };
        self.journal
            .push(format!("   job {job} holds {tray}; swap with {other}"));
        if self.swap_trays(&tray, &other) && self.lab.state(job) == "RUNNING" {
            panic!(
                "{}",
                self.report(&format!("{tray} changed racks while job {job} runs on it"))
            );
        }
    }

    /// Swaps two trays that were free at the last check, in different racks: valid unless a
    /// job took one meanwhile.
    fn swap_free_trays(&mut self, pick: usize) {
        let rack = |t: &String| rack_map(&self.racks).get(t).cloned();
        let Some(a) = nth(&self.free, pick).cloned() else {
            return;
        };
        let others: Vec<String> = self
            .free
            .iter()
            .filter(|t| rack(t) != rack(&a))
            .cloned()
            .collect();
        let Some(b) = nth(&others, pick / 7).cloned() else {
            return;
        };
        self.journal.push(format!("   swap {a} with {b}"));
        self.swap_trays(&a, &b);
    }

    /// Writes the racks with `a` and `b` swapped and reconfigures; returns whether Slurm took
    /// the file. When it refused, the file goes back.
    fn swap_trays(&mut self, a: &str, b: &str) -> bool {
        let before = self.racks.clone();
        let mut racks = before.clone();
        swap(&mut racks, a, b);
        self.expect_error("reconfigure refused");
        self.edit_racks(racks, true);
        let now = self.read(&["scontrol", "show", "topology"], records::racks_in_force);
        let taken = now != rack_map(&before);
        if !taken {
            self.journal.push("   refused: the racks stay".into());
            let lists = rack_lists(&before);
            self.lab.write_racks(&borrow(&lists));
            self.racks = before;
        }
        taken
    }

    /// After the primary stopped: the backup takes control, the primary is started again and
    /// takes it back.
    fn back_to_primary(&mut self) {
        self.wait(120, "the backup in control", || self.lab.in_control("ctl2"));
        // Checked under the backup too, so a violation names the transition that caused it.
        self.journal
            .push("   the backup (ctl2) is in control".into());
        self.check(self.step);
        self.start_missing_daemons();
        self.wait(180, "the primary in control again", || {
            self.lab.in_control("ctl1")
        });
    }

    /// lab-up.sh, journaling what it did (a daemon started, or a restart it decided on).
    fn start_missing_daemons(&mut self) {
        // A loaded machine can take more than lab-up.sh's default 30 s to hand control back
        // to a returning primary.
        let mut env = vec![("WAIT_NODES", "0"), ("CTLD_WAIT", "180")];
        let copy = self.racks_file_copy();
        if let Some(path) = copy.as_ref().and_then(|p| p.to_str()) {
            env.push(("TOPOLOGY_TOML", path));
        }
        let said = (self.up)(&env);
        let what = ["pid", "changed", "restarting", "lab-down"];
        let noted = said
            .lines()
            .filter(|l| l.starts_with("[lab-up") && what.iter().any(|w| l.contains(w)));
        for line in noted {
            self.journal.push(format!("   {line}"));
        }
    }

    /// A copy of the topology file in force, for lab-up.sh to install unchanged (none
    /// without the plugin).
    fn racks_file_copy(&self) -> Option<PathBuf> {
        let copy = self.lab.dir.join("chaos-topology.toml");
        std::fs::copy(self.lab.etc("topology.toml"), &copy).ok()?;
        Some(copy)
    }

    /// Waits until slurmctld saved its job state after the last accepted submission, so that
    /// a `kill -9` loses no job Slurm has acknowledged (that window is Slurm's, not the
    /// plugin's: it answers sbatch before it saves).
    ///
    /// A save written more than a second after the last change holds it. One written around
    /// a submission may not (packed before it), but then the submission's own save request is
    /// still open and slurmctld saves again within SAVE_MAX_WAIT (5 s, state_save.c); when no
    /// newer save comes in 10 s, the last one took that request and holds the job. Changes
    /// that ask for no save (a pending job's cancel) stay Slurm's window: seed 77 cancelled
    /// its one job right after submitting it, and waiting for a save after the cancel only
    /// timed out.
    fn wait_state_saved(&self) {
        // Nothing submitted yet: nothing to save, and a fresh lab may have no job_state at all
        // (long run 5, seed 100 on 24.11: a kill -9 at step 2 waited 60 s for a save).
        if self.accepted.is_empty() {
            return;
        }
        let file = self.lab.state_file("job_state");
        let (change, submission) = (self.last_change, self.last_submission);
        let second = Duration::from_secs(1);
        let quiet = Instant::now() + Duration::from_secs(10);
        self.wait(60, "job_state saved after the last submission", || {
            let saved = std::fs::metadata(&file).and_then(|m| m.modified());
            saved.is_ok_and(|m| {
                m > change + second || (Instant::now() >= quiet && m + second >= submission)
            })
        });
    }

    /// `scontrol update` of a job the last check saw pending, held meanwhile so that it cannot
    /// start in between: `NumNodes=` on a job that has just started shrinks it, and which
    /// trays it keeps is Slurm's choice, not the plugin's (seed 102 on 26.05: a 24-tray job
    /// cut to its first 4 trays, across racks). A job that started already is left alone.
    fn update_pending(&mut self, job: u32, setting: &str) -> bool {
        let id = job.to_string();
        if !self.client(&["scontrol", "hold", &id]) {
            return false;
        }
        let updated = self.client(&["scontrol", "update", &format!("jobid={job}"), setting]);
        self.client(&["scontrol", "release", &id]);
        updated
    }

    /// Runs a client command; a refusal is journaled (the storm draws operations Slurm may
    /// refuse, such as resizing a job that just started), never a violation by itself.
    fn client(&mut self, args: &[&str]) -> bool {
        let out = self.lab.sl(args);
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stderr);
            self.journal.push(format!("   refused: {}", said.trim()));
        } else {
            self.last_change = SystemTime::now();
        }
        out.status.success()
    }

    /// Every invariant, from Slurm's records now; panics with the report on a violation.
    fn check(&mut self, step: usize) {
        self.summary.checks += 1;
        let mut found = Vec::new();
        if !self.lab.ctld_up() {
            self.wait(120, "a controller answering", || self.lab.ctld_up());
        }
        let jobs = self.read(&["scontrol", "show", "job", "-d"], records::job_records);
        let nodes = records::node_records(&self.lab.run(&["scontrol", "-o", "show", "node"]));
        let queue = records::queue_lines(
            &self
                .lab
                .run(&["squeue", "-h", "-t", "all", "-o", "%i|%T|%r"]),
        );
        let mut rack_of = self.read(&["scontrol", "show", "topology"], records::racks_in_force);
        if crate::topo_under_test() == "none" {
            // Slurm without a topology plugin knows no racks: judge it by the lab's.
            rack_of = rack_map(&self.racks);
        }
        found.extend(invariants::nothing_double_booked(&jobs, &nodes));
        found.extend(invariants::inside_allowed_racks(
            &jobs,
            &self.rules,
            &rack_of,
        ));
        let lines = self.new_log_lines();
        self.forget_jobs_slurm_lost(&queue, &lines);
        found.extend(invariants::every_job_accounted_for(
            &self.accepted,
            &self.cancelled,
            &queue,
        ));
        found.extend(self.racks_whole(&rack_of));
        found.extend(invariants::pending_jobs_keep_their_scripts(&jobs, |id| {
            self.lab
                .state_file(&format!("hash.{}/job.{id}/script", id % 10))
                .is_file()
        }));
        found.extend(self.plugin_errors(&lines));
        if !found.is_empty() {
            panic!(
                "{}",
                self.report(&format!("step {step}: {}", found.join("; ")))
            );
        }
        self.pending = jobs
            .iter()
            .filter(|j| j.state == "PENDING" && self.accepted.contains(&j.submitted_as))
            .map(|j| j.submitted_as)
            .collect();
        self.free = nodes
            .iter()
            .filter(|n| n.name.starts_with("gb") && n.cpus_given == 0)
            .map(|n| n.name.clone())
            .collect();
        self.running = jobs
            .iter()
            .filter(|j| j.state == "RUNNING" && self.accepted.contains(&j.submitted_as))
            .filter_map(|j| Some((j.submitted_as, j.nodes.first()?.clone())))
            .collect();
    }

    fn read<T>(&self, args: &[&str], parse: impl Fn(&str) -> Result<T, String>) -> T {
        let text = self.lab.run(args);
        parse(&text).unwrap_or_else(|e| panic!("{}", self.report(&format!("{args:?}: {e}"))))
    }

    /// The racks in force are those of the file the storm last made valid: whole, never a
    /// mix of it and a refused one.
    fn racks_whole(&self, rack_of: &BTreeMap<String, String>) -> Vec<String> {
        if *rack_of == rack_map(&self.racks) {
            return Vec::new();
        }
        vec![format!(
            "racks in force {rack_of:?} are not the file's {:?}",
            self.racks
        )]
    }

    /// Lets this step and the next check see `line` in a plugin error (a refused file: the
    /// reconfigure's child may log it after slurmctld answers again).
    fn expect_error(&mut self, line: &'static str) {
        self.expected_errors.push((line, 2));
    }

    /// The lines both controllers logged since the last check.
    fn new_log_lines(&mut self) -> Vec<String> {
        let logs = [self.lab.log("slurmctld.log"), self.lab.backup_log()];
        let mut lines = Vec::new();
        for (log, from) in logs.iter().zip(self.logs_from) {
            let new = log.get(from.min(log.len())..).unwrap_or_default();
            lines.extend(new.lines().map(str::to_string));
        }
        // Read up to where these copies end, so no line is judged twice.
        self.logs_from = [logs[0].len(), logs[1].len()];
        lines
    }

    /// Plugin error and fatal lines among `lines`, beyond those the step expected.
    fn plugin_errors(&mut self, lines: &[String]) -> Vec<String> {
        let found = lines
            .iter()
            .filter(|line| {
                let plugin = line.contains("topology/nvl72") || line.contains("panicked");
                let bad =
                    line.contains("error") || line.contains("fatal") || line.contains("panic");
                let expected = self.expected_errors.iter().any(|(e, _)| line.contains(e));
                plugin && bad && !expected
            })
            .cloned()
            .collect();
        for (_, checks) in &mut self.expected_errors {
            *checks -= 1;
        }
        self.expected_errors.retain(|(_, checks)| *checks > 0);
        found
    }

    /// Slurm's own state-file window (not the plugin's): a controller taking control found
    /// no `job_state`, because the other one was between the two renames of its state save
    /// (src/common/state_save.c), which nothing orders across processes (backup.c's FIXME:
    /// REQUEST_CONTROL returns before the state is saved). Without accounting slurmctld then
    /// starts with no jobs at all (job_mgr.c: fatal only when the clustername file came from
    /// slurmdbd). Only with that line in the log are the jobs Slurm no longer knows taken off
    /// the books, counted, and journaled; any other loss stays a violation.
    fn forget_jobs_slurm_lost(&mut self, queue: &[records::QueueLine], lines: &[String]) {
        let Some(line) = lines.iter().find(|l| l.contains("No job state file")) else {
            return;
        };
        let known: BTreeSet<u32> = queue.iter().map(|q| q.submitted_as).collect();
        let lost: Vec<u32> = self.accepted.difference(&known).copied().collect();
        if lost.is_empty() {
            return;
        }
        self.journal.push(format!(
            "   Slurm's state-file window: {} jobs gone ({line})",
            lost.len()
        ));
        self.summary.lost_by_slurm += lost.len();
        self.summary.slurm_state_windows += 1;
        self.keep_evidence();
        for job in lost {
            self.accepted.remove(&job);
            self.rules.remove(&job);
        }
    }

    /// Every tray back in service; the jobs still queued are left to run or are cancelled,
    /// and each is accounted for once more.
    fn wind_down(&mut self, steps: usize) {
        for node in std::mem::take(&mut self.out_of_service) {
            self.client(&[
                "scontrol",
                "update",
                &format!("nodename={node}"),
                "state=resume",
            ]);
        }
        self.check(steps + 1);
        self.cancelled.extend(self.accepted.iter().copied());
        for job in self.live() {
            self.client(&["scancel", &job.to_string()]);
        }
        self.wait(120, "every job ended", || {
            self.lab
                .run(&["squeue", "-h", "-o", "%i"])
                .trim()
                .is_empty()
        });
        self.check(steps + 2);
    }

    /// Waits up to `secs` for `ok`; a timeout is reported like a violation (journal, queue,
    /// evidence kept), since it may be one: a controller that never takes control back.
    fn wait(&self, secs: u64, what: &str, mut ok: impl FnMut() -> bool) {
        let end = Instant::now() + Duration::from_secs(secs);
        while !ok() {
            if Instant::now() >= end {
                panic!(
                    "{}",
                    self.report(&format!("timed out after {secs} s waiting for {what}"))
                );
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// The jobs the storm submitted that were pending or running at the last check.
    fn live(&self) -> Vec<u32> {
        let running = self.running.iter().map(|r| r.0);
        self.pending.iter().copied().chain(running).collect()
    }

    /// The violation report: seed, the journal's tail, Slurm's queue, and where the
    /// evidence was kept.
    fn report(&self, what: &str) -> String {
        let tail = self.journal.len().saturating_sub(40);
        format!(
            "chaos seed {} violated: {what}\nreplay: CHAOS_SEEDS={} (scripts/chaos.sh)\n\
             evidence (both controllers' logs, the state directory): {}\n\
             last operations:\n{}\n{}",
            self.seed,
            self.seed,
            self.keep_evidence().display(),
            self.journal[tail..].join("\n"),
            self.lab.diagnostics()
        )
    }

    /// Copies both controllers' logs and a listing of StateSaveLocation out of the lab, which
    /// the next storm's `CLEAN=1` wipes: `<lab>/evidence/seed<seed>-<unix time>/`.
    fn keep_evidence(&self) -> PathBuf {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let dir = self
            .lab
            .dir
            .join(format!("evidence/seed{}-{now}", self.seed));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(
            dir.join("slurmctld-ctl1.log"),
            self.lab.log("slurmctld.log"),
        );
        let _ = std::fs::write(dir.join("slurmctld-ctl2.log"), self.lab.backup_log());
        let mut listing = Vec::new();
        list_tree(&self.lab.dir.join("var/state"), "", &mut listing);
        let _ = std::fs::write(dir.join("state-listing.txt"), listing.join("\n"));
        let _ = std::fs::write(dir.join("journal.txt"), self.journal.join("\n"));
        dir
    }
}

/// Every file under `dir` with its size and time, paths relative to it: the state directory
/// down to each job's batch script (`hash.<n>/job.<id>/script`).
fn list_tree(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = format!("{prefix}{}", e.file_name().to_string_lossy());
        let meta = e.metadata().ok();
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            list_tree(&e.path(), &format!("{name}/"), out);
            continue;
        }
        let size = meta.as_ref().map_or(0, |m| m.len());
        let modified = meta.and_then(|m| m.modified().ok());
        out.push(format!("{name} {size} {modified:?}"));
    }
}

/// Swaps trays `a` and `b` in the racks, each keeping the other's place.
fn swap(racks: &mut [(String, Vec<String>)], a: &str, b: &str) {
    for (_, trays) in racks.iter_mut() {
        for t in trays.iter_mut() {
            if t == a {
                *t = b.to_string();
            } else if t == b {
                *t = a.to_string();
            }
        }
    }
}

/// Tray name to rack name.
fn rack_map(racks: &[(String, Vec<String>)]) -> BTreeMap<String, String> {
    racks
        .iter()
        .flat_map(|(name, trays)| trays.iter().map(move |t| (t.clone(), name.clone())))
        .collect()
}

/// (name, host list) per rack, as topology.toml says them.
fn rack_lists(racks: &[(String, Vec<String>)]) -> Vec<(String, String)> {
    racks
        .iter()
        .map(|(name, trays)| (name.clone(), hostlist::compress(trays)))
        .collect()
}

fn borrow(lists: &[(String, String)]) -> Vec<(&str, &str)> {
    lists
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect()
}

/// The `pick`-th item, wrapping: how a drawn operation names one of the live jobs.
fn nth<T>(items: &[T], pick: usize) -> Option<&T> {
    (!items.is_empty()).then(|| &items[pick % items.len()])
}

/// lab-up.sh's name of the 0-based tray (`gb001`).
fn tray_name(tray: usize) -> String {
    format!("gb{:03}", tray + 1)
}
