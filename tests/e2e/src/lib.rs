//! Harness for the end-to-end tests: a real slurmctld with topology/nvl72 loaded, in the
//! chroot lab of `scripts/lab-up.sh` (4 racks x 18 trays gb001..gb072, cpu01..cpu02). The
//! Slurm release is the lab's: `SLURM_SERIES=24.11` (default, Debian trixie's 24.11.5) or
//! `SLURM_SERIES=26.05` (Debian sid's 26.05.5, in its own lab `/var/tmp/nvl72-lab-26.05`
//! unless `LAB` says otherwise), or a site's own Slurm installation with
//! `SLURM_PREFIX=/opt/slurm-25.11.7` (its series is read from the installation; its own lab,
//! e.g. `/var/tmp/nvl72-lab-25.11`, and the plugin from `target/slurm-25.11/release`). The
//! client outputs and log lines the tests read are the same in every series, except two the
//! harness covers: `scontrol show topology NAME` ([`Lab::show_topology`]) and backfill's job
//! start line ([`BACKFILL_STARTED`]).
//!
//! The tests share one cluster, so each one takes [`Lab::claim`], which serialises them and
//! returns the cluster to an empty, all-healthy state first.
//!
//! This crate is the end-to-end suite (its tests are in `tests/`): it needs root and a lab, so
//! it is not a default member of the workspace; `bash scripts/test.sh` builds the plugin, its
//! package and `nvl72`, brings the labs up and runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nvl72_engine::hostlist;

pub mod chaos;
mod controllers;
mod env;
mod nodes;
mod topology_file;
pub mod upgrade;
pub use env::*;
pub use nodes::*;

pub const TRAYS: usize = 18;

/// How slurmctld.log introduces a job that backfill started, followed by `N in <partition> on
/// <nodes>`. 24.11 logs it at info; 26.05 only under `DebugFlags=HetJob` at verbose, with a
/// `HETJOB: ` tag (lab-up.sh sets both for `SLURM_SERIES=26.05`). The main scheduler's
/// `sched: Allocate JobId=N NodeList=<nodes>` is the same in both.
pub const BACKFILL_STARTED: [&str; 2] = [
    "sched/backfill: _start_job: Started JobId=",
    "sched/backfill: _start_job: HETJOB: Started JobId=",
];

/// The repository this suite belongs to (two levels above its manifest).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository above tests/e2e")
}

/// The `nvl72` built in the same profile as the running test (`<target>/<profile>/nvl72`,
/// above `<target>/<profile>/deps/<test>`): another package's binary, so Cargo gives its path
/// to no test here, and a fixed path could be a stale build.
pub fn nvl72() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary in <target>/<profile>/deps");
    let nvl72 = profile_dir.join("nvl72");
    assert!(
        nvl72.is_file(),
        "{} missing: build it in this profile first (cargo build -p nvl72-cli; scripts/test.sh does)",
        nvl72.display()
    );
    nvl72
}

pub struct Lab {
    pub repo: PathBuf,
    pub dir: PathBuf,
}

static LAB: OnceLock<Lab> = OnceLock::new();
static SERIAL: Mutex<()> = Mutex::new(());

impl Lab {
    /// Brings the lab up once per test binary (idempotent and fast when it already runs).
    fn get() -> &'static Lab {
        LAB.get_or_init(|| {
            let built_for = env!("NVL72_E2E_SERIES");
            assert_eq!(
                slurm_series(),
                built_for,
                "these tests were built for Slurm {built_for}'s lab: build them with \
                 SLURM_SERIES set to the lab's series (scripts/test.sh does)"
            );
            let repo = repo();
            let dir = PathBuf::from(
                std::env::var("LAB")
                    .ok()
                    .filter(|d| !d.is_empty())
                    .unwrap_or_else(|| default_lab_dir(&slurm_series())),
            );
            // lab-up.sh installs $PLUGIN when it is set (another build than the repo's); for
            // SLURM_PREFIX its default is that series' target dir, for SLURM_DEBS that
            // release's.
            let plugin = std::env::var_os("PLUGIN")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| match (slurm_prefix(), slurm_debs()) {
                    (None, None) => repo.join("target/release/libtopology_nvl72.so"),
                    _ => repo.join(build_dir()).join("libtopology_nvl72.so"),
                });
            let build = match (slurm_prefix(), smd_release()) {
                (Some(_), _) => format!(
                    "SLURM_SRC=<its source tree> cargo build --release -p topology_nvl72 \
                     -p nvl72-cli --target-dir target/slurm-{}",
                    slurm_series()
                ),
                (None, Some(release)) => format!(
                    "SLURM_SRC=<SchedMD's tree of {release}> SLURM_SERIES={} cargo build \
                     --release -p topology_nvl72 -p nvl72-cli --target-dir target/slurm-{release}",
                    slurm_series()
                ),
                (None, None) => "cargo build --release -p topology_nvl72".to_string(),
            };
            assert!(
                plugin.is_file(),
                "{} missing: run `{build}` first (scripts/test.sh does)",
                plugin.display()
            );
            let lab = Lab { repo, dir };
            // An earlier test process may have left jobs or a drained tray behind, and
            // lab-up.sh waits for every node to be up: clear them first.
            if lab.ctld_pid().is_some() {
                lab.release_leftovers();
            }
            lab.restart_with(&[]);
            lab
        })
    }

    /// Runs lab-up.sh (which restarts the daemons when their config or plugin changed);
    /// returns what it printed.
    pub fn restart_with(&self, env: &[(&str, &str)]) -> String {
        let out = Command::new("bash")
            .arg(self.repo.join("scripts/lab-up.sh"))
            .env("LAB", &self.dir)
            .env("SLURM_SERIES", slurm_series())
            .env("TOPO", topo_under_test())
            .envs(env.iter().copied())
            .output()
            .expect("cannot run scripts/lab-up.sh");
        assert!(
            out.status.success(),
            "lab-up.sh failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Exclusive use of an empty, healthy cluster with the default configuration for one
    /// test. After the reset (lab-up.sh waits for every node to be up, so drained trays must
    /// be resumed first), lab-up.sh puts back any configuration an earlier, possibly failed,
    /// test changed; it is a no-op otherwise.
    pub fn claim() -> (&'static Lab, MutexGuard<'static, ()>) {
        let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let lab = Lab::get();
        lab.reset();
        lab.restart_with(&[]);
        (lab, guard)
    }

    pub fn sl(&self, args: &[&str]) -> Output {
        Command::new(self.repo.join("scripts/sl"))
            .args(args)
            .env("LAB", &self.dir)
            .env("SLURM_SERIES", slurm_series())
            .output()
            .expect("cannot run scripts/sl")
    }

    /// Runs a client command that must succeed; returns its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let out = self.sl(args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `sbatch --parsable ARGS --wrap SCRIPT`: the job id, or sbatch's error text.
    pub fn sbatch(&self, args: &[&str], script: &str) -> Result<u32, String> {
        let mut all = vec!["sbatch", "--parsable"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--wrap", script]);
        let out = self.sl(&all);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.status.success() {
            Ok(stdout
                .trim()
                .split(';')
                .next()
                .unwrap_or("")
                .parse()
                .expect("job id"))
        } else {
            Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// Runs an exclusive job on exactly `nodes` (a hostlist) and waits until it runs. Tests
    /// use it to break the node order, so that Slurm's default selection (lowest-numbered
    /// consecutive nodes) would cross a rack boundary where the plugin must not.
    pub fn occupy(&self, nodes: &str) -> u32 {
        let count = hostlist::expand(nodes).expect("hostlist").len().to_string();
        let job = self.submit(&["-N", &count, "--exclusive", "-w", nodes]);
        self.running_nodes(job);
        job
    }

    /// [`Lab::occupy`] with more sbatch arguments (a partition, `--requeue`, a name, ...).
    pub fn occupy_with(&self, nodes: &str, args: &[&str]) -> u32 {
        let count = hostlist::expand(nodes).expect("hostlist").len().to_string();
        let mut all = vec!["-N", &count, "--exclusive", "-w", nodes];
        all.extend_from_slice(args);
        let job = self.submit(&all);
        self.running_nodes(job);
        job
    }

    /// [`Lab::occupy`] with a time limit (`--time`), for rules that read job end times.
    pub fn occupy_for(&self, nodes: &str, time: &str) -> u32 {
        let count = hostlist::expand(nodes).expect("hostlist").len().to_string();
        let time = format!("--time={time}");
        let job = self.submit(&["-N", &count, "--exclusive", &time, "-w", nodes]);
        self.running_nodes(job);
        job
    }

    /// Submits a long-running job that must be accepted.
    pub fn submit(&self, args: &[&str]) -> u32 {
        self.sbatch(args, "sleep 600")
            .unwrap_or_else(|e| panic!("sbatch {args:?} rejected: {e}"))
    }

    pub fn state(&self, job: u32) -> String {
        self.run(&["squeue", "-h", "-j", &job.to_string(), "-o", "%T"])
            .trim()
            .to_string()
    }

    /// The job's pending reason (`%r`), e.g. `Resources`.
    pub fn reason(&self, job: u32) -> String {
        self.run(&["squeue", "-h", "-j", &job.to_string(), "-o", "%r"])
            .trim()
            .to_string()
    }

    /// The job's reason while it is pending, `None` once it is not: state and reason from one
    /// `squeue`, so a job that starts between two queries is never read as pending with the
    /// reason a running job has (`None`).
    pub fn pending_reason(&self, job: u32) -> Option<String> {
        let out = self.run(&["squeue", "-h", "-j", &job.to_string(), "-o", "%T|%r"]);
        let (state, reason) = out.trim().split_once('|')?;
        (state == "PENDING").then(|| reason.to_string())
    }

    /// One `Key=value` field of `scontrol show job`, e.g. `Switches` (`1@00:00:30`), or ""
    /// when the job lacks it.
    pub fn job_field(&self, job: u32, key: &str) -> String {
        show_field(
            &self.run(&["scontrol", "show", "job", &job.to_string()]),
            key,
        )
    }

    /// Makes slurmctld look at the pending jobs again soon: a node update (gb001's comment)
    /// counts as a change, which backfill waits for before its next pass (`bf_interval`).
    /// For rules that depend on how long a job has waited (`--switches=c@t`), which nothing
    /// else would re-evaluate before the main scheduler's 60 s pass. (A job update would do
    /// too, but it resets the job's pending reason.)
    pub fn nudge(&self) {
        self.run(&["scontrol", "update", "nodename=gb001", "comment=nudge"]);
    }

    /// `scontrol update jobid=<job> <setting>`, e.g. `SegmentSize=4` (26.11 changes a pending
    /// job's segment this way).
    pub fn update_job(&self, job: u32, setting: &str) {
        self.run(&["scontrol", "update", &format!("jobid={job}"), setting]);
    }

    /// A time field of `scontrol show job` (`SubmitTime`, `StartTime`, `LastSchedEval`) as
    /// seconds on slurmctld's clock (its `YYYY-MM-DDTHH:MM:SS`, local time, read as if it
    /// were UTC: only differences mean anything); `None` for `Unknown` or `None`.
    pub fn job_time(&self, job: u32, key: &str) -> Option<i64> {
        parse_slurm_time(&self.job_field(job, key))
    }

    /// `scontrol show topology` for one rack, rack group or node list. 24.11 takes the name as
    /// its argument; 26.05 (from 25.05 on) reads a positional argument as the name of a
    /// topology (`default`) and wants `unit=<rack or group>` or `node=<nodes>` instead.
    pub fn show_topology(&self, name: &str) -> String {
        let arg = if slurm_series() == "24.11" {
            name.to_string()
        } else if is_node_list(name) {
            format!("node={name}")
        } else {
            format!("unit={name}")
        };
        self.run(&["scontrol", "show", "topology", &arg])
    }

    /// slurmctld's decision line for the job (`log_decisions = true`), if any.
    pub fn decision(&self, job: u32) -> Option<String> {
        let needle = format!("topology/nvl72: JobId={job} nodes=");
        self.log("slurmctld.log")
            .lines()
            .rev()
            .find(|l| l.contains(&needle))
            .map(str::to_string)
    }

    /// Waits until the job is RUNNING and returns its nodes.
    pub fn running_nodes(&self, job: u32) -> Vec<String> {
        self.wait_for(&format!("job {job} RUNNING"), || {
            self.state(job) == "RUNNING"
        });
        let list = self.run(&["squeue", "-h", "-j", &job.to_string(), "-o", "%N"]);
        hostlist::expand(list.trim()).expect("squeue node list")
    }

    /// Asserts the job stays PENDING for a while (the scheduler and backfill both had a go).
    pub fn assert_stays_pending(&self, job: u32) {
        let end = Instant::now() + Duration::from_secs(12);
        while Instant::now() < end {
            assert_eq!(self.state(job), "PENDING", "job {job} should wait");
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    pub fn wait_for(&self, what: &str, ok: impl FnMut() -> bool) {
        self.wait_up_to(60, what, ok);
    }

    pub fn diagnostics(&self) -> String {
        let q = self.sl(&["squeue", "-o", "%i %j %T %D %N %R"]);
        format!("squeue:\n{}", String::from_utf8_lossy(&q.stdout))
    }

    /// Cancels every job and waits until the queue is empty.
    pub fn cancel_all(&self) {
        let _ = self.sl(&["scancel", "--user=root"]);
        self.wait_for("an empty queue", || {
            self.run(&["squeue", "-h", "-o", "%i"]).trim().is_empty()
        });
    }

    /// Cancels every job, resumes drained trays and waits for an idle cluster.
    fn reset(&self) {
        self.cancel_all();
        self.resume_drained();
        self.wait_for("all nodes idle", || {
            self.run(&["sinfo", "-h", "-N", "-o", "%t"])
                .lines()
                .all(|s| s.trim() == "idle")
        });
    }

    /// Resumes every drained or down tray (errors ignored: a tray may just come back).
    fn resume_drained(&self) {
        let drained = self.sl(&["sinfo", "-h", "-N", "-t", "drain,down", "-o", "%N"]);
        let drained = String::from_utf8_lossy(&drained.stdout);
        for node in drained.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let _ = self.sl(&[
                "scontrol",
                "update",
                &format!("nodename={node}"),
                "state=resume",
            ]);
        }
    }

    /// Before the first lab-up of a test process: cancels jobs and resumes trays an earlier
    /// process left behind, without waiting (lab-up.sh waits for the nodes).
    fn release_leftovers(&self) {
        let _ = self.sl(&["scancel", "--user=root"]);
        self.resume_drained();
    }

    pub fn drain(&self, node: &str) {
        self.run(&[
            "scontrol",
            "update",
            &format!("nodename={node}"),
            "state=drain",
            "reason=e2e-test",
        ]);
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join("var/log").join(name)).unwrap_or_default()
    }

    /// How long slurmctld.log is now: the offset for [`Lab::ctld_log_since`].
    pub fn ctld_log_len(&self) -> usize {
        self.log("slurmctld.log").len()
    }

    /// The part of slurmctld.log written after byte offset `from`.
    pub fn ctld_log_since(&self, from: usize) -> String {
        let log = self.log("slurmctld.log");
        log.get(from..).unwrap_or_default().to_string()
    }

    /// `scontrol ping` says the primary controller is UP.
    pub fn ctld_up(&self) -> bool {
        let out = self.sl(&["scontrol", "ping"]);
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("is UP")
    }

    /// Waits up to `secs` for slurmctld to answer again after `scontrol reconfigure`;
    /// returns how many times it had to be nudged.
    ///
    /// Slurm 24.11.5's connection manager can lose the wakeup that ends the quiesce before a
    /// reconfigure: `pollctl_interrupt` is dropped when it comes between the check and the
    /// poller's `epoll_wait(-1)` (src/conmgr/epoll.c `_interrupt`, watch.c
    /// `_poll_connections`), and slurmctld answers nothing until a signal interrupts that
    /// poll (SchedMD ticket 25227, fixed in 26.05.3; 24.11.6 bounds it to 5 minutes). Seen
    /// once on a loaded 2-core machine: 35 minutes silent after "Reconfigure signal (SIGHUP)
    /// received", released the moment gdb attached. When the log shows exactly that stall
    /// for 45 s, the harness sends SIGUSR1 (slurmctld catches and ignores it, through the
    /// same signal pipe) as an admin would, and the caller reports it. Any other silence is
    /// left alone and fails the caller's wait.
    pub fn wait_ctld_after_reconfigure(&self, secs: u64) -> usize {
        let start = Instant::now();
        let end = start + Duration::from_secs(secs);
        let (mut nudges, mut last_nudge) = (0, start);
        while !self.ctld_up() && Instant::now() < end {
            let stalled = last_nudge.elapsed() > Duration::from_secs(45) && self.quiesce_stalled();
            if let Some(pid) = self.ctld_pid().filter(|_| stalled) {
                let sent = Command::new("kill")
                    .args(["-USR1", &pid.to_string()])
                    .status();
                if sent.is_ok_and(|s| s.success()) {
                    eprintln!("slurmctld {pid} silent in its reconfigure's quiesce: SIGUSR1 sent");
                    nudges += 1;
                    last_nudge = Instant::now();
                }
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        nudges
    }

    /// slurmctld's last reconfigure got its SIGHUP but never reached "Saving all slurm
    /// state": stuck in `_flush_rpcs`/`conmgr_quiesce` (controller.c, `_slurmctld_background`).
    fn quiesce_stalled(&self) -> bool {
        let log = self.log("slurmctld.log");
        log.rfind("Reconfigure signal (SIGHUP) received")
            .is_some_and(|at| !log[at..].contains("Saving all slurm state"))
    }

    /// The log of the daemon's current run: from the start line before its last plugin load.
    /// The start line is `slurmctld version X started on cluster ...` or `slurmd version X
    /// started` in every series, so any version matches.
    pub fn current_run(&self, name: &str, load_line: &str) -> String {
        let text = self.log(name);
        let Some(load) = text.rfind(load_line) else {
            return String::new();
        };
        let head = &text[..load];
        let start = head
            .rmatch_indices(" started")
            .map(|(i, _)| head[..i].rfind('\n').map_or(0, |n| n + 1))
            .find(|&l| {
                let line = &head[l..];
                let line = &line[..line.find('\n').unwrap_or(line.len())];
                line.contains(" version ") && line.contains(" started")
            })
            .unwrap_or(0);
        text[start..].to_string()
    }

    /// The Debian version of the Slurm the lab runs (slurmctld's package in the chroot), e.g.
    /// `24.11.5-4+deb13u1` or `26.05.5-1`.
    pub fn slurm_debian_version(&self) -> String {
        self.run(&["dpkg-query", "-W", "-f", "${Version}", "slurmctld"])
            .trim()
            .to_string()
    }

    /// `SLURM_DEBIAN_VERSION` of the pin the plugin is built against for the lab's Slurm
    /// (`slurm-headers/pins/<upstream version>`); `None` when there is no pin for it.
    pub fn pinned_slurm_debian_version(&self) -> Option<String> {
        let installed = self.slurm_debian_version();
        let upstream = installed.split('-').next().unwrap_or_default();
        let pins = self.repo.join("slurm-headers/pins").join(upstream);
        let text = std::fs::read_to_string(pins).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("SLURM_DEBIAN_VERSION="))
            .map(|v| v.split_whitespace().next().unwrap_or_default().to_string())
    }

    pub fn etc(&self, name: &str) -> PathBuf {
        self.dir.join("rootfs/etc/slurm").join(name)
    }

    /// [`Lab::wait_for`] with a timeout of `secs` seconds, for steps that take long on a
    /// loaded machine (a slurmctld restart, a reconfigure, a queue of hundreds of jobs).
    pub fn wait_up_to(&self, secs: u64, what: &str, mut ok: impl FnMut() -> bool) {
        let end = Instant::now() + Duration::from_secs(secs);
        while !ok() {
            assert!(
                Instant::now() < end,
                "timed out after {secs} s waiting for {what}\n{}",
                self.diagnostics()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// slurmctld's pid from its pid file, if that process is alive and runs in this lab's
    /// chroot.
    pub fn ctld_pid(&self) -> Option<u32> {
        self.live_pid(&self.dir.join("var/run/slurmctld.pid"))
    }

    /// The pid on the first line of `pid_file`, if that process is alive and runs in this
    /// lab's chroot (the same check as lab-lib.sh's `alive`, so a stale pid file never matches
    /// a foreign process). Only the first line counts: after a reconfigure the new slurmctld
    /// rewrites the file from its start without truncating it (update_pidfile in
    /// daemonize.c), so a shorter pid after a pid wrap-around leaves the old one's tail on a
    /// second line ("301\n1\n").
    pub fn live_pid(&self, pid_file: &Path) -> Option<u32> {
        let text = std::fs::read_to_string(pid_file).ok()?;
        let pid: u32 = text.lines().next()?.trim().parse().ok()?;
        let root = std::fs::read_link(format!("/proc/{pid}/root")).ok()?;
        let ours = std::fs::canonicalize(self.dir.join("rootfs")).ok()?;
        (root == ours).then_some(pid)
    }

    /// A file in slurmctld's StateSaveLocation (`job_state`, `node_state`, ...).
    pub fn state_file(&self, name: &str) -> PathBuf {
        self.dir.join("var/state").join(name)
    }

    /// Makes slurmctld save `jobs` as they are now and waits until its job state file on disk
    /// holds them: each job gets the comment `<prefix>-<id>` (a job update schedules a save
    /// within SAVE_MAX_WAIT, 5 s), and the file that holds every tag also holds the jobs'
    /// running state and nodes. Returns the tags, in `jobs` order.
    pub fn wait_until_saved(&self, jobs: &[u32], prefix: &str) -> Vec<String> {
        let tags: Vec<String> = jobs.iter().map(|j| format!("{prefix}-{j}")).collect();
        for (job, tag) in jobs.iter().zip(&tags) {
            self.run(&[
                "scontrol",
                "update",
                &format!("jobid={job}"),
                &format!("comment={tag}"),
            ]);
        }
        let job_state = self.state_file("job_state");
        self.wait_up_to(60, "the tagged jobs in StateSaveLocation/job_state", || {
            let bytes = std::fs::read(&job_state).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            tags.iter().all(|t| text.contains(t.as_str()))
        });
        tags
    }

    /// `kill -9` slurmctld between two of its state saves and waits until it is gone;
    /// returns its pid. slurmctld replaces a state file by writing `<name>.new`, then
    /// unlinking `<name>` and linking the new one in its place; a kill inside that window
    /// leaves the next controller without the file (26.05 then recovers no job at all), which
    /// is Slurm's window, not the plugin's. So the process is stopped first and killed only
    /// while no `.new` file is in StateSaveLocation; otherwise it runs on for a moment.
    pub fn kill_ctld(&self) -> u32 {
        let pid = self.ctld_pid().expect("slurmctld is not running");
        let signal = |sig: &str| {
            Command::new("kill")
                .args([sig, &pid.to_string()])
                .status()
                .expect("cannot run kill")
                .success()
        };
        let state = self.dir.join("var/state");
        self.wait_up_to(60, "slurmctld stopped between two state saves", || {
            assert!(signal("-STOP"), "kill -STOP {pid} failed");
            let saving = std::fs::read_dir(&state)
                .map(|d| {
                    d.flatten()
                        .any(|e| e.file_name().to_string_lossy().ends_with(".new"))
                })
                .unwrap_or(false);
            if saving {
                signal("-CONT");
            }
            !saving
        });
        let killed = signal("-9");
        assert!(killed, "kill -9 {pid} failed");
        self.wait_up_to(60, "the killed slurmctld to be gone", || {
            self.ctld_pid().is_none()
        });
        pid
    }

    /// `squeue` for the given jobs as sorted `id state nodes` lines.
    pub fn jobs_with_nodes(&self, jobs: &[u32]) -> Vec<String> {
        let ids: Vec<String> = jobs.iter().map(u32::to_string).collect();
        let out = self.run(&["squeue", "-h", "-j", &ids.join(","), "-o", "%i %T %N"]);
        let mut lines: Vec<String> = out.lines().map(|l| l.trim().to_string()).collect();
        lines.sort();
        lines
    }

    pub fn job_output(&self, job: u32) -> String {
        let path = self.dir.join("var/jobs").join(format!("slurm-{job}.out"));
        self.wait_for("job output", || Path::new(&path).is_file());
        std::fs::read_to_string(path).unwrap_or_default()
    }
}

/// Ten free trays in each of racks 1-3 (gb[009-018], gb[027-036], gb[045-054]) and rack4 full:
/// no rack holds a 12-tray job, two racks do (the `--switches` tests). Returns the holder jobs,
/// rack by rack. Stock Slurm's consecutive choice for `-N 12` is gb[009-018] + gb[027-028],
/// 10 + 2, at once.
pub fn ten_free_in_three_racks(lab: &Lab) -> Vec<u32> {
    ["gb[001-008]", "gb[019-026]", "gb[037-044]", "gb[055-072]"]
        .into_iter()
        .map(|nodes| lab.occupy(nodes))
        .collect()
}

/// One `Key=value` field of `scontrol show` output, or "" when it lacks the key.
pub fn show_field(show: &str, key: &str) -> String {
    let prefix = format!("{key}=");
    show.split_whitespace()
        .find_map(|w| w.strip_prefix(prefix.as_str()))
        .unwrap_or_default()
        .to_string()
}

/// `YYYY-MM-DDTHH:MM:SS` as seconds, read as UTC (the sacct reader's own parser).
fn parse_slurm_time(text: &str) -> Option<i64> {
    nvl72_sim::workload::sacct::timestamp(text).ok().flatten()
}

/// A lab node name or node list (`gb050`, `gb[001-004]`, `cpu01`), not a rack or group name.
fn is_node_list(name: &str) -> bool {
    ["gb", "cpu"].iter().any(|p| {
        name.strip_prefix(p)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| c.is_ascii_digit() || c == '[')
    })
}
