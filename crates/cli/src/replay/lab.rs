//! One replay lab: a chroot with its own slurmctld and slurmds for one topology plugin
//! (`scripts/lab-up.sh`), driven in real time through the schedule: `sbatch` at each submission
//! instant, drain and requeue at each failure, resume at each repair; then slurmctld's log.
//! With `--cloud` the trays have no slurmd (`CLOUD=1`) and the driver ends each job itself
//! (`replay_cloud.rs`).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use nvl72_engine::hostlist;
use nvl72_sim::replay::lab_model::SCHED_PARAMS;
use nvl72_sim::replay::lab_nodes::{tray_name, TRAYS_PER_RACK};
use nvl72_sim::replay::report::CloudEnds;
use nvl72_sim::replay::schedule::{ReplayJob, Schedule, TrayEvent};
use nvl72_sim::replay::timeline::Observed;
use nvl72_sim::slowdown::{Limits, Slowdown};
use nvl72_sim::workload::checkpoint::Checkpoints;

use super::cloud::{unix_ms, Ender, RunSpec};
use super::{ReplayArgs, Topo};

/// How long a client command waits for a slurmctld it cannot connect to (one that is
/// restarting) before it counts as failed.
const CTLD_AWAY: Duration = Duration::from_secs(120);

/// The client's error says it never reached slurmctld (`Unable to contact slurm controller
/// (connect failure)`): the request was not sent, so it can be sent again. A timeout after
/// connecting (`Socket timed out`) may have been acted on and is not retried.
fn ctld_unreachable(stderr: &str) -> bool {
    stderr.contains("Unable to contact slurm controller (connect failure)")
}

/// Some tray in `sinfo -h -N -o %t` output is still drained or draining (`drain`, `drng`,
/// with or without a `*`/`~` suffix).
fn still_drained(sinfo_states: &str) -> bool {
    sinfo_states
        .split_whitespace()
        .any(|s| s.starts_with("drain") || s.starts_with("drng"))
}

/// One lab: a chroot with its own slurmctld and slurmds, for one topology plugin.
pub(super) struct Lab {
    pub(super) topo: Topo,
    pub(super) dir: String,
    pub(super) scripts: PathBuf,
    pub(super) port_offset: u16,
    pub(super) bar: ProgressBar,
    /// `24.11` or `26.05`: the Debian Slurm the lab runs.
    pub(super) series: String,
    /// Trays are cloud nodes without slurmd; the driver ends the jobs.
    pub(super) cloud: bool,
    /// What a split costs the lab's jobs (they sleep base × s); off: they sleep their base.
    pub(super) slowdown: Slowdown,
    /// How often the lab's jobs save their progress, in real ms of work (a requeued job
    /// resumes from its last checkpoint); none: a restart sleeps its whole time again.
    pub(super) checkpoints: Checkpoints,
}

/// Where a priced lab's job scripts find `nvl72 stretch`: the driver's own binary, copied in.
const STRETCH_PATH: &str = "/usr/local/lib/nvl72-stretch";
/// Where the lab's jobs keep their progress (`nvl72 stretch --progress-dir`), in the chroot.
const PROGRESS_DIR: &str = "/var/tmp/nvl72-progress";

/// What one lab run gives: what the driver saw, slurmctld's log, and with `--cloud` the
/// driver's ends.
pub(super) type LabRun = (Observed, String, Option<CloudEnds>);

impl Lab {
    fn script(&self, name: &str) -> Command {
        let mut c = Command::new("bash");
        let (ctld, port0) = self.topo.ports();
        let (ctld, port0) = (ctld + self.port_offset, port0 + 1000 * self.port_offset);
        c.arg(self.scripts.join(name))
            .env("LAB", &self.dir)
            .env("SLURM_SERIES", &self.series)
            .env("TOPO", self.topo.name())
            .env("CTLD_PORT", ctld.to_string())
            .env("PORT0", port0.to_string())
            .env("TZ", "UTC");
        c
    }

    fn up(&self, racks: usize, a: &ReplayArgs) -> Result<(), String> {
        let log = a.out.join(format!("{}-lab-up.log", self.topo.name()));
        let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        let mut c = self.script("lab-up.sh");
        c.env("RACKS", racks.to_string())
            .env("CPU_NODES", "0")
            .env("CLEAN", "1")
            .env("SCHED_PARAMS", SCHED_PARAMS)
            .env(
                "EXTRA_CONF",
                format!(
                    "JobCompType=jobcomp/filetxt\nJobCompLoc={}/var/log/jobcomp.txt{}",
                    self.dir,
                    // Lenient limits: a slowed job runs past its limit, as the simulator's does.
                    if !self.slowdown.is_off() && self.slowdown.limits == Limits::Lenient {
                        "\nOverTimeLimit=UNLIMITED"
                    } else {
                        ""
                    }
                ),
            )
            .env("WAIT", "300")
            .env("CLOUD", if self.cloud { "1" } else { "0" })
            .stdout(file)
            .stderr(err);
        if let Some(p) = &a.plugin {
            c.env("PLUGIN", p);
        }
        if let Some(p) = &a.package {
            c.env("PACKAGE", p);
        }
        let status = c.status().map_err(|e| format!("lab-up.sh: {e}"))?;
        if !status.success() {
            return Err(format!(
                "lab-up.sh failed ({status}); see {}",
                log.display()
            ));
        }
        Ok(())
    }

    pub(super) fn down(&self) {
        let _ = self.script("lab-down.sh").output();
    }

    /// A Slurm client command in the chroot; stdout, or the error with stderr. A command that
    /// could not reach slurmctld at all is tried again for up to [`CTLD_AWAY`] (a restarted
    /// slurmctld, `scripts/soak.sh`): nothing reached Slurm, so even `sbatch` is safe to repeat.
    fn slurm(&self, args: &[&str]) -> Result<String, String> {
        let give_up = Instant::now() + CTLD_AWAY;
        loop {
            let out = Command::new("chroot")
                .arg(format!("{}/rootfs", self.dir))
                .args(args)
                .env("TZ", "UTC")
                .output()
                .map_err(|e| format!("{}: {e}", args.join(" ")))?;
            if out.status.success() {
                return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
            }
            let err = String::from_utf8_lossy(&out.stderr);
            if !ctld_unreachable(&err) || Instant::now() >= give_up {
                return Err(format!("{}: {}", args.join(" "), err.trim()));
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    pub(super) fn run(
        &self,
        schedule: &Schedule,
        racks: usize,
        a: &ReplayArgs,
        max_requeue: Option<u32>,
    ) -> Result<LabRun, String> {
        self.bar.set_message("lab starting");
        let trays = racks * TRAYS_PER_RACK;
        if let Err(first) = self.up(racks, a) {
            // Several labs starting at once on a small host can trip lab-up.sh: one more try.
            self.bar.set_message("lab-up failed, trying again");
            self.down();
            self.up(racks, a)
                .map_err(|again| format!("{first}; and again: {again}"))?;
        }
        if self.runs_stretch() {
            self.install_stretch()?;
        }
        let log_path = format!("{}/var/log/slurmctld.log", self.dir);
        let ender = if self.cloud {
            Some(
                Ender::start(
                    PathBuf::from(format!("{}/rootfs", self.dir)),
                    std::path::Path::new(&log_path),
                    &self.series,
                    &tray_name(0, trays),
                    &a.out.join(format!("{}-end-jobs.log", self.topo.name())),
                )
                .inspect(|e| e.book().price_with(self.slowdown.clone()))?,
            )
        } else {
            None
        };
        let mut obs = Observed {
            slurm_ids: vec![None; schedule.jobs.len()],
            ..Observed::default()
        };
        let mut kills = vec![0u32; schedule.jobs.len()];
        let mut errors = Vec::new();
        // Submissions and tray changes in time order (tray changes first at one instant).
        let mut actions: Vec<(u64, u8, usize)> = schedule
            .tray_events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.at_ms, 0, i))
            .chain(schedule.jobs.iter().map(|j| (j.submit_ms, 1, j.id)))
            .collect();
        actions.sort();
        // Tray changes at one instant in one direction go to Slurm as one host list (at the
        // start, a few percent of thousands of trays are down at once).
        let mut steps: Vec<(u64, u8, Vec<usize>)> = Vec::new();
        for (at, kind, i) in actions {
            match steps.last_mut() {
                Some((a, 0, group))
                    if kind == 0
                        && *a == at
                        && schedule.tray_events[group[0]].down == schedule.tray_events[i].down =>
                {
                    group.push(i)
                }
                _ => steps.push((at, kind, vec![i])),
            }
        }
        let start = Instant::now();
        obs.t0_ms = unix_ms();
        let mut submitted = 0;
        for (at, kind, group) in steps {
            let due = start + Duration::from_millis(at);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let now_ms = start.elapsed().as_millis() as u64;
            self.bar.set_position(now_ms / 1000);
            if let Some(e) = ender.as_ref().and_then(Ender::failure) {
                return Err(format!("ending jobs: {e}"));
            }
            if kind == 1 {
                let i = group[0];
                let j = &schedule.jobs[i];
                match self.submit(j) {
                    Ok(id) => {
                        obs.slurm_ids[i] = Some(id);
                        if let Some(ender) = &ender {
                            ender.book().register(
                                id,
                                RunSpec {
                                    sleep_ms: j.sleep_ms,
                                    limit_min: j.limit_min,
                                    segment: j.segment,
                                    class: j.class,
                                },
                            );
                        }
                    }
                    Err(e) => errors.push(e),
                }
                submitted += 1;
                self.bar
                    .set_message(format!("{submitted}/{} submitted", schedule.jobs.len()));
            } else {
                let events: Vec<TrayEvent> =
                    group.iter().map(|&i| schedule.tray_events[i]).collect();
                let names: Vec<String> = events.iter().map(|e| tray_name(e.tray, trays)).collect();
                let changed = self.tray_change(
                    &hostlist::compress(&names),
                    events[0].down,
                    &obs.slurm_ids,
                    &mut kills,
                    max_requeue,
                    ender.as_ref(),
                );
                match changed {
                    Ok(held) => obs.held.extend(held),
                    Err(err) => errors.push(err),
                }
                obs.tray_events
                    .extend(events.into_iter().map(|e| TrayEvent { at_ms: now_ms, ..e }));
            }
        }
        // Drain: until nothing is left or the stop time.
        let stop = start + Duration::from_millis(schedule.stop_ms);
        loop {
            let left = self
                .slurm(&["squeue", "-h", "-t", "PD,R,CF,CG", "-o", "%i"])
                .map(|s| s.lines().count())
                .unwrap_or(usize::MAX);
            self.bar.set_position(start.elapsed().as_secs());
            self.bar.set_message(format!("draining, {left} jobs left"));
            if left == 0 || Instant::now() >= stop {
                break;
            }
            if let Some(e) = ender.as_ref().and_then(Ender::failure) {
                return Err(format!("ending jobs: {e}"));
            }
            std::thread::sleep(Duration::from_millis(1000));
        }
        // No more ends once the rest is cancelled.
        let ends = ender.map(Ender::finish).transpose()?;
        let _ = self.slurm(&["scancel", "-u", "root"]);
        self.bar.finish_with_message(if errors.is_empty() {
            "done".to_string()
        } else {
            format!("done, {} errors", errors.len())
        });
        if let Some(e) = errors.first() {
            eprintln!(
                "{}: {} Slurm command(s) failed; the first: {e}",
                self.topo.name(),
                errors.len()
            );
        }
        let log = std::fs::read_to_string(&log_path).map_err(|e| format!("{log_path}: {e}"))?;
        Ok((obs, log, ends))
    }

    /// The job scripts are `nvl72 stretch`: splits are priced, or jobs checkpoint.
    fn runs_stretch(&self) -> bool {
        let priced_or_checkpointing = !self.slowdown.is_off() || !self.checkpoints.is_none();
        !self.cloud && priced_or_checkpointing
    }

    /// Copies this binary into the chroot, where the job scripts run `nvl72 stretch`, and
    /// starts the jobs' progress afresh.
    fn install_stretch(&self) -> Result<(), String> {
        let exe = std::env::current_exe().map_err(|e| format!("the nvl72 binary: {e}"))?;
        let inside = format!("{}/rootfs{STRETCH_PATH}", self.dir);
        std::fs::copy(&exe, &inside).map_err(|e| format!("{} -> {inside}: {e}", exe.display()))?;
        let progress = format!("{}/rootfs{PROGRESS_DIR}", self.dir);
        match std::fs::remove_dir_all(&progress) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("{progress}: {e}"))
            }
            _ => {}
        }
        std::fs::create_dir_all(&progress).map_err(|e| format!("{progress}: {e}"))
    }

    /// The job script: sleep the base time, or `nvl72 stretch` (base × s for the nodes Slurm
    /// gave the job; with checkpoints, resumed from the job's last one).
    fn job_script(&self, j: &ReplayJob) -> String {
        if !self.runs_stretch() {
            return format!("sleep {}.{:03}", j.sleep_ms / 1000, j.sleep_ms % 1000);
        }
        let model = serde_json::to_string(&self.slowdown).expect("a slowdown serializes");
        let segment = j
            .segment
            .map_or(String::new(), |s| format!(" --segment {s}"));
        let checkpoints = match self.checkpoints {
            Checkpoints::Every(ms) => {
                format!(" --checkpoint-ms {ms} --progress-dir {PROGRESS_DIR}")
            }
            Checkpoints::None => String::new(),
        };
        format!(
            "exec {STRETCH_PATH} stretch --base-ms {}{segment} --class {} --slowdown '{model}'{checkpoints}",
            j.sleep_ms, j.class
        )
    }

    /// `sbatch` of one job; Slurm's job id.
    fn submit(&self, j: &ReplayJob) -> Result<u32, String> {
        let mut args: Vec<String> = vec![
            "sbatch".into(),
            "--parsable".into(),
            "--exclusive".into(),
            format!("--job-name=replay-{}", j.id),
            format!("--time={}", j.limit_min),
            "--output=/dev/null".into(),
            "--chdir=/tmp".into(),
        ];
        if j.by_gpus {
            args.push(format!("--gpus={}", 4 * j.trays));
        } else {
            args.push(format!("--nodes={}", j.trays));
            args.push("--gres=gpu:4".into());
        }
        if let Some(s) = j.segment {
            args.push(format!("--segment={s}"));
        }
        args.push(format!("--wrap={}", self.job_script(j)));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.slurm(&argv)?;
        let id = out.trim().split(';').next().unwrap_or("");
        id.parse()
            .map_err(|_| format!("sbatch printed `{}`", out.trim()))
    }

    /// Drains (and requeues the jobs on) or resumes trays (a host list); the stream jobs
    /// requeued held.
    /// With `--cloud`, the ending thread waits meanwhile and ends none of the jobs requeued.
    fn tray_change(
        &self,
        node: &str,
        down: bool,
        slurm_ids: &[Option<u32>],
        kills: &mut [u32],
        max_requeue: Option<u32>,
        ender: Option<&Ender>,
    ) -> Result<Vec<usize>, String> {
        if !down {
            self.resume(node)?;
            return Ok(vec![]);
        }
        if let Some(ender) = ender {
            return self.cloud_failure(node, slurm_ids, kills, max_requeue, ender);
        }
        let mut held = Vec::new();
        self.slurm(&[
            "scontrol",
            "update",
            &format!("nodename={node}"),
            "state=drain",
            "reason=nvl72-replay-failure",
        ])?;
        let ids = self.slurm(&["squeue", "-h", "-t", "R,CF", "-w", node, "-o", "%i"])?;
        for id in ids.split_whitespace() {
            let Ok(slurm_id) = id.parse::<u32>() else {
                continue;
            };
            let Some(job) = slurm_ids.iter().position(|&s| s == Some(slurm_id)) else {
                continue;
            };
            kills[job] += 1;
            if max_requeue.is_some_and(|m| kills[job] > m) {
                self.slurm(&["scontrol", "requeuehold", id])?;
                held.push(job);
            } else {
                self.slurm(&["scontrol", "requeue", id])?;
                // Once the old run has finished completing, Slurm sets the begin time to now
                // + the credential lifetime (120 s): wait for that, then bring it back.
                self.wait_pending(id);
                self.start_now(id)?;
            }
        }
        Ok(held)
    }

    /// A tray failure with `--cloud`. Draining a tray that is allocated and powering up makes
    /// slurmctld requeue its jobs itself (`requeue job JobId=N due to failure of node`, then
    /// `Requeuing JobId=N`; node_mgr.c update_node, 24.11 and 26.05), so the driver lists
    /// them first, drains, and then only brings them back (or holds them). The ending thread
    /// waits meanwhile, and ends none of them until it has read their `Requeuing` line.
    fn cloud_failure(
        &self,
        node: &str,
        slurm_ids: &[Option<u32>],
        kills: &mut [u32],
        max_requeue: Option<u32>,
        ender: &Ender,
    ) -> Result<Vec<usize>, String> {
        let mut book = ender.book();
        let ids = self.slurm(&["squeue", "-h", "-t", "R,CF", "-w", node, "-o", "%i"])?;
        let on_tray: Vec<(u32, usize)> = ids
            .split_whitespace()
            .filter_map(|id| id.parse::<u32>().ok())
            .filter_map(|id| Some((id, slurm_ids.iter().position(|&s| s == Some(id))?)))
            .collect();
        for &(id, _) in &on_tray {
            book.killing(id);
        }
        if let Err(e) = self.slurm(&[
            "scontrol",
            "update",
            &format!("nodename={node}"),
            "state=drain",
            "reason=nvl72-replay-failure",
        ]) {
            for &(id, _) in &on_tray {
                book.not_killed(id);
            }
            return Err(e);
        }
        drop(book);
        let mut held = Vec::new();
        for (id, job) in on_tray {
            kills[job] += 1;
            let id = id.to_string();
            self.wait_pending(&id);
            if max_requeue.is_some_and(|m| kills[job] > m) {
                self.slurm(&["scontrol", "hold", &id])?;
                held.push(job);
            } else {
                self.start_now(&id)?;
            }
        }
        Ok(held)
    }

    /// Resumes trays (a host list). Right after a slurmctld restart, a drained tray whose slurmd
    /// has not registered again is refused with `Invalid node state specified`, though its drain
    /// is cleared (24.11): what counts is the trays' state, polled for up to 30 s, with the
    /// resume sent again while some are still drained.
    fn resume(&self, node: &str) -> Result<(), String> {
        let update = [
            "scontrol",
            "update",
            &format!("nodename={node}"),
            "state=resume",
        ];
        let Err(first) = self.slurm(&update) else {
            return Ok(());
        };
        if !first.contains("Invalid node state specified") {
            return Err(first);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let states = self.slurm(&["sinfo", "-h", "-N", "-n", node, "-o", "%t"])?;
            if !still_drained(&states) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(first);
            }
            std::thread::sleep(Duration::from_secs(1));
            let _ = self.slurm(&update);
        }
    }

    /// Brings a requeued job back at once: Slurm would hold it for the credential lifetime
    /// (120 s), which the time compression would turn into hours.
    fn start_now(&self, id: &str) -> Result<(), String> {
        self.slurm(&[
            "scontrol",
            "update",
            &format!("jobid={id}"),
            "StartTime=now+1",
        ])
        .map(|_| ())
    }

    /// Waits (up to 5 s) until the requeued job is PENDING again.
    fn wait_pending(&self, id: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let state = self.slurm(&["squeue", "-h", "-j", id, "-o", "%T"]);
            if state.is_ok_and(|s| s.trim() == "PENDING") {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ctld_unreachable, still_drained};

    #[test]
    fn a_resume_counts_once_no_tray_is_drained() {
        assert!(still_drained("idle\ndrain\n"));
        assert!(still_drained("drng*\n"));
        assert!(still_drained("alloc\ndrain*"));
        assert!(!still_drained("idle\nalloc*\nmix\n"));
        assert!(!still_drained(""));
    }

    #[test]
    fn only_a_connect_failure_is_tried_again() {
        assert!(ctld_unreachable(
            "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)"
        ));
        assert!(ctld_unreachable(
            "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"
        ));
        // Sent, maybe acted on: not repeated.
        assert!(!ctld_unreachable(
            "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"
        ));
        assert!(!ctld_unreachable(
            "scontrol: error: Invalid job id specified"
        ));
    }

    #[test]
    fn trays_are_named_as_lab_up_names_them() {}
}
