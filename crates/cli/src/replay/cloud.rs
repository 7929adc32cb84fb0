//! `nvl72 replay --cloud`: the driver ends the jobs itself. The lab's trays are Slurm
//! power-saving cloud nodes without a slurmd (`lab-up.sh` `CLOUD=1`), so a job placed on
//! them stays CONFIGURING and never ends by itself (docs/notebook/scale-replay.md). This thread
//! reads slurmctld.log as it grows, learns each job's start (`sched: Allocate` or backfill's
//! `Started`, with the log's millisecond stamps), and at start + run time ends it through
//! `scripts/replay-end-jobs.py`, a python3 helper inside the chroot that calls Slurm's public
//! `slurm_complete_job()` (REQUEST_COMPLETE_JOB_ALLOCATION) and then a no-op
//! `slurm_update_node()`, which queues a scheduling pass as a real job's epilog-complete does.
//!
//! Requeues and ends must not cross: completing a job that a tray failure has just put back
//! in the queue would cancel it. The driver takes the [`Book`] lock while it drains a tray
//! (slurmctld then requeues the jobs on it itself) and marks each of them
//! [`Book::killing`]; this thread reads the log and sends ends only under the same lock, and
//! never for a job so marked until it has read that job's `Requeuing` line (after which a new
//! start line schedules a new end).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nvl72_sim::replay::lab_nodes::TRAYS_PER_RACK;
use nvl72_sim::replay::observe::{parse_log, What};
use nvl72_sim::replay::report::CloudEnds;
use nvl72_sim::replay::stretch::{factor_of_nodes, sleep_ms};
use nvl72_sim::slowdown::{CommClass, Limits, Slowdown};

/// The helper, installed into each lab's chroot at [`HELPER_PATH`].
pub(super) const HELPER: &str = include_str!("../../../../scripts/replay-end-jobs.py");
/// Where the helper lives inside the chroot.
pub(super) const HELPER_PATH: &str = "/usr/local/lib/nvl72-replay-end-jobs.py";

/// How often the log is read when no end is due sooner.
const POLL: Duration = Duration::from_millis(50);

/// Milliseconds since the Unix epoch: the clock the driver and slurmctld's log share.
pub(super) fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A submitted job's run, as the driver times it.
#[derive(Debug, Clone)]
pub(super) struct RunSpec {
    /// Its sleep at NVLink speed, real ms.
    pub(super) sleep_ms: u64,
    pub(super) limit_min: u64,
    pub(super) segment: Option<usize>,
    pub(super) class: CommClass,
}

/// The driver's record of runs and ends, shared with the submitting thread.
#[derive(Default)]
pub(super) struct Book {
    /// What a split costs the jobs (off: every run lasts its sleep).
    slowdown: Slowdown,
    /// Slurm job id -> its run.
    runs: HashMap<u32, RunSpec>,
    /// Starts (time, nodes) read before the submitting thread registered the job id.
    early_starts: HashMap<u32, (i64, Vec<String>)>,
    /// Ends to send: job -> due (Unix ms).
    due: HashMap<u32, i64>,
    /// Jobs being requeued by the driver whose `Requeuing` line has not been read yet.
    killing: HashSet<u32>,
}

impl Book {
    /// The jobs pay `slowdown` for the nodes they start on.
    pub(super) fn price_with(&mut self, slowdown: Slowdown) {
        self.slowdown = slowdown;
    }

    /// The job `id` was submitted.
    pub(super) fn register(&mut self, id: u32, run: RunSpec) {
        if let Some((at, nodes)) = self.early_starts.remove(&id) {
            let due = at + self.run_ms(&run, &nodes);
            self.due.insert(id, due);
        }
        self.runs.insert(id, run);
    }

    /// How long a run on `nodes` lasts, real ms: its sleep × the slowdown of those nodes;
    /// past its limit by one second at most, as Slurm would have killed it, unless lenient
    /// limits let it run on (the lab then has `OverTimeLimit=UNLIMITED`).
    fn run_ms(&self, run: &RunSpec, nodes: &[String]) -> i64 {
        let stretched = if self.slowdown.is_off() {
            run.sleep_ms
        } else {
            // A start line whose nodes are not lab trays is priced as one rack.
            factor_of_nodes(
                &self.slowdown,
                nodes,
                run.segment,
                run.class,
                TRAYS_PER_RACK,
            )
            .map_or(run.sleep_ms, |f| sleep_ms(run.sleep_ms, &f))
        };
        if !self.slowdown.is_off() && self.slowdown.limits == Limits::Lenient {
            stretched as i64
        } else {
            run_ms(stretched, run.limit_min)
        }
    }

    /// The driver is about to requeue `id`: no end for it until its `Requeuing` line.
    pub(super) fn killing(&mut self, id: u32) {
        self.killing.insert(id);
        self.due.remove(&id);
    }

    /// The requeue of `id` failed (it had ended already): forget the mark.
    pub(super) fn not_killed(&mut self, id: u32) {
        self.killing.remove(&id);
    }

    fn started(&mut self, id: u32, at_ms: i64, nodes: &[String]) {
        match self.runs.get(&id) {
            Some(run) => {
                let due = at_ms + self.run_ms(run, nodes);
                self.due.insert(id, due);
            }
            None => {
                self.early_starts.insert(id, (at_ms, nodes.to_vec()));
            }
        }
    }

    fn requeued(&mut self, id: u32) {
        self.killing.remove(&id);
        self.due.remove(&id);
    }

    fn ended(&mut self, id: u32) {
        self.due.remove(&id);
    }

    /// The ends due at `now`, sorted by due time, removed from the book.
    fn take_due(&mut self, now: i64) -> Vec<(u32, i64)> {
        let mut due: Vec<(u32, i64)> = self
            .due
            .iter()
            .filter(|(id, &at)| at <= now && !self.killing.contains(id))
            .map(|(&id, &at)| (id, at))
            .collect();
        due.sort_by_key(|&(id, at)| (at, id));
        for (id, _) in &due {
            self.due.remove(id);
        }
        due
    }

    fn next_due(&self) -> Option<i64> {
        self.due
            .iter()
            .filter(|(id, _)| !self.killing.contains(id))
            .map(|(_, &at)| at)
            .min()
    }
}

/// The helper process inside the chroot: one request line per batch, one reply line.
struct Helper {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Helper {
    /// Installs the helper in the chroot and starts it; waits for its `ready` line.
    fn start(root: &Path, series: &str, kick_node: &str, stderr: &Path) -> Result<Helper, String> {
        let inside = root.join(HELPER_PATH.trim_start_matches('/'));
        std::fs::write(&inside, HELPER).map_err(|e| format!("{}: {e}", inside.display()))?;
        let err = File::create(stderr).map_err(|e| format!("{}: {e}", stderr.display()))?;
        let mut child = Command::new("chroot")
            .arg(root)
            .args(["python3", "-u", HELPER_PATH, series, kick_node])
            .env("TZ", "UTC")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .map_err(|e| format!("chroot python3 {HELPER_PATH}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no helper stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no helper stdout")?);
        let mut h = Helper {
            child,
            stdin,
            stdout,
        };
        let ready = h.line()?;
        if !ready.starts_with("ready ") {
            return Err(format!("{HELPER_PATH} said `{ready}`"));
        }
        Ok(h)
    }

    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err(format!(
                "{HELPER_PATH} exited ({:?}); see its stderr log",
                self.child.try_wait().ok().flatten()
            )),
            Ok(_) => Ok(line.trim_end().to_string()),
            Err(e) => Err(format!("{HELPER_PATH}: {e}")),
        }
    }

    /// Ends `jobs`, then kicks the scheduler: each job's return code and the kick's.
    fn end(&mut self, jobs: &[u32]) -> Result<(Vec<(u32, i64)>, i64), String> {
        let ids: Vec<String> = jobs.iter().map(u32::to_string).collect();
        writeln!(self.stdin, "end {}", ids.join(" "))
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("{HELPER_PATH}: {e}"))?;
        let reply = self.line()?;
        parse_reply(&reply, jobs)
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// `ID:RC ... kick:RC` for exactly `jobs`, in order.
fn parse_reply(reply: &str, jobs: &[u32]) -> Result<(Vec<(u32, i64)>, i64), String> {
    let bad = || format!("{HELPER_PATH}: unexpected reply `{reply}`");
    let mut words: Vec<&str> = reply.split_whitespace().collect();
    let kick = words
        .pop()
        .and_then(|w| w.strip_prefix("kick:"))
        .and_then(|rc| rc.parse().ok())
        .ok_or_else(bad)?;
    if words.len() != jobs.len() {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(jobs.len());
    for (w, &job) in words.iter().zip(jobs) {
        let (id, rc) = w.split_once(':').ok_or_else(bad)?;
        if id.parse::<u32>().ok() != Some(job) {
            return Err(bad());
        }
        out.push((job, rc.parse().map_err(|_| bad())?));
    }
    Ok((out, kick))
}

/// slurmctld.log read as it grows, complete lines only.
struct LogTail {
    file: File,
    partial: Vec<u8>,
}

impl LogTail {
    /// From the log's current end: what came before is lab-up's, not the replay's.
    fn open(path: &Path) -> Result<LogTail, String> {
        let mut file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        file.seek(SeekFrom::End(0))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(LogTail {
            file,
            partial: Vec::new(),
        })
    }

    /// The complete lines written since the last call.
    fn read(&mut self) -> String {
        let _ = self.file.read_to_end(&mut self.partial);
        match self.partial.iter().rposition(|&b| b == b'\n') {
            Some(end) => {
                let rest = self.partial.split_off(end + 1);
                let lines = std::mem::replace(&mut self.partial, rest);
                String::from_utf8_lossy(&lines).into_owned()
            }
            None => String::new(),
        }
    }
}

/// The ending thread of one lab.
pub(super) struct Ender {
    book: Arc<Mutex<Book>>,
    stop: Arc<AtomicBool>,
    failed: Arc<Mutex<Option<String>>>,
    thread: Option<JoinHandle<CloudEnds>>,
}

impl Ender {
    /// Starts the helper in `root` and the thread that reads `log` and ends the jobs.
    pub(super) fn start(
        root: PathBuf,
        log: &Path,
        series: &str,
        kick_node: &str,
        helper_log: &Path,
    ) -> Result<Ender, String> {
        let mut tail = LogTail::open(log)?;
        let mut helper = Helper::start(&root, series, kick_node, helper_log)?;
        let book = Arc::new(Mutex::new(Book::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(Mutex::new(None));
        let (b, s, f) = (book.clone(), stop.clone(), failed.clone());
        let thread = std::thread::spawn(move || {
            let mut stats = CloudEnds::default();
            let mut lates: Vec<i64> = Vec::new();
            let result = run(&mut tail, &mut helper, &b, &s, &mut stats, &mut lates);
            helper.stop();
            if let Err(e) = result {
                *f.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            }
            lates.sort_unstable();
            if !lates.is_empty() {
                stats.late_mean_ms = lates.iter().sum::<i64>() as f64 / lates.len() as f64;
                stats.late_p99_ms = lates[(lates.len() - 1) * 99 / 100];
                stats.late_max_ms = *lates.last().unwrap_or(&0);
            }
            stats
        });
        Ok(Ender {
            book,
            stop,
            failed,
            thread: Some(thread),
        })
    }

    /// The shared book, for registering jobs and marking requeues.
    pub(super) fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why the thread stopped early, if it did (the helper died, say).
    pub(super) fn failure(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stops the thread (ends not yet due are dropped) and returns its figures.
    pub(super) fn finish(mut self) -> Result<CloudEnds, String> {
        self.stop.store(true, Ordering::SeqCst);
        let stats = self
            .thread
            .take()
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default();
        match self.failure() {
            Some(e) => Err(e),
            None => Ok(stats),
        }
    }
}

impl Drop for Ender {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(
    tail: &mut LogTail,
    helper: &mut Helper,
    book: &Mutex<Book>,
    stop: &AtomicBool,
    stats: &mut CloudEnds,
    lates: &mut Vec<i64>,
) -> Result<(), String> {
    while !stop.load(Ordering::SeqCst) {
        // The log is read under the lock: once the driver has drained a tray, the
        // `Requeuing` lines of its jobs are in the log before any end is sent.
        let mut b = book.lock().unwrap_or_else(|e| e.into_inner());
        let events = parse_log(&tail.read())?;
        for e in events {
            match e.what {
                What::Started(nodes) => {
                    stats.starts_seen += 1;
                    b.started(e.job, e.at_ms, &nodes);
                }
                What::Requeued => b.requeued(e.job),
                What::Ended => b.ended(e.job),
                What::Submitted => {}
            }
        }
        let due = b.take_due(unix_ms());
        if !due.is_empty() {
            let ids: Vec<u32> = due.iter().map(|&(id, _)| id).collect();
            let (rcs, kick) = helper.end(&ids)?;
            let done = unix_ms();
            stats.batches += 1;
            if kick != 0 {
                stats.kicks_failed += 1;
            }
            for ((job, rc), (_, at)) in rcs.into_iter().zip(&due) {
                lates.push(done - at);
                if rc == 0 {
                    stats.ended += 1;
                } else {
                    stats.failed += 1;
                    if stats.errors.len() < 5 {
                        stats
                            .errors
                            .push(format!("slurm_complete_job({job}): Slurm error {rc}"));
                    }
                }
            }
        }
        let next = b.next_due();
        drop(b);
        let wait = next.map_or(POLL, |at| {
            Duration::from_millis((at - unix_ms()).clamp(1, POLL.as_millis() as i64) as u64)
        });
        std::thread::sleep(wait);
    }
    Ok(())
}

/// A job's run in the lab, real ms: its sleep, or its limit and one second when that is
/// shorter (then Slurm records TIMEOUT, as it would have killed it).
pub(super) fn run_ms(sleep_ms: u64, limit_min: u64) -> i64 {
    sleep_ms.min(limit_min * 60_000 + 1000) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvl72_sim::slowdown::parse_variant;

    fn sleeps(ms: u64) -> RunSpec {
        RunSpec {
            sleep_ms: ms,
            limit_min: 10,
            segment: None,
            class: CommClass::Dense,
        }
    }

    #[test]
    fn a_split_start_is_ended_after_its_sleep_times_its_slowdown() {
        let mut b = Book::default();
        b.price_with(Slowdown {
            model: parse_variant("default").unwrap().0,
            ..Slowdown::default()
        });
        b.register(1, sleeps(1000));
        b.started(1, 0, &["gb018".into(), "gb019".into()]);
        assert_eq!(b.next_due(), Some(1634)); // 1 + 1 over the boundary: 1.633
        b.register(2, sleeps(1000));
        b.started(2, 0, &["gb019".into(), "gb020".into()]);
        assert_eq!(b.take_due(1000), [(2, 1000)]);
    }

    #[test]
    fn an_end_is_due_at_start_plus_run_and_never_for_a_job_being_requeued() {
        let mut b = Book::default();
        let none: &[String] = &[];
        b.register(1, sleeps(500));
        b.started(1, 1000, none);
        // A start read before its sbatch returned.
        b.started(2, 1200, none);
        b.register(2, sleeps(100));
        assert_eq!(b.next_due(), Some(1300));
        assert_eq!(b.take_due(1400), [(2, 1300)]);
        // The driver requeues job 1: its end is never sent, even once the log shows the old
        // run's start again, until the Requeuing line.
        b.killing(1);
        b.started(1, 1000, none);
        assert_eq!(b.take_due(2000), []);
        assert_eq!(b.next_due(), None);
        b.requeued(1);
        b.started(1, 3000, none);
        assert_eq!(b.take_due(3499), []);
        assert_eq!(b.take_due(3500), [(1, 3500)]);
        // An end read in the log (scancel) cancels the pending one.
        b.register(3, sleeps(100));
        b.started(3, 0, none);
        b.ended(3);
        assert_eq!(b.take_due(10_000), []);
    }

    #[test]
    fn replies_name_every_job_in_order() {
        assert_eq!(
            parse_reply("7:0 9:2017 kick:0", &[7, 9]),
            Ok((vec![(7, 0), (9, 2017)], 0))
        );
        assert!(parse_reply("7:0 kick:0", &[7, 9]).is_err());
        assert!(parse_reply("9:0 7:0 kick:0", &[7, 9]).is_err());
        assert!(parse_reply("error: x", &[]).is_err());
    }

    #[test]
    fn a_run_is_its_sleep_or_its_limit_and_a_second() {
        assert_eq!(run_ms(1500, 1), 1500);
        assert_eq!(run_ms(200_000, 2), 121_000);
    }
}
