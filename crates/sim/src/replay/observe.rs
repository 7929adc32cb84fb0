//! What slurmctld did, read from its log: when each job was submitted, started (on which
//! nodes), ended, or was requeued. The log's timestamps have milliseconds, where `squeue`
//! and the job completion record have whole seconds, which is too coarse once time is
//! compressed a few hundred times.
//!
//! The lines (Slurm 24.11 at `SlurmctldDebug=info`; 26.05 logs backfill starts with
//! `DebugFlags=HetJob`, which the lab sets):
//!
//! ```text
//! [2026-12-01T02:38:05.592] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=1 usec=581
//! [2026-12-01T02:38:05.834] sched/backfill: _start_job: Started JobId=1 in gpu on gb[001-002]
//! [2026-12-01T02:38:30.007] sched: Allocate JobId=3 NodeList=gb[001-002,019-036] #CPUs=2880 Partition=gpu
//! [2026-12-01T02:38:08.890] _job_complete: JobId=1 done
//! [2026-12-01T02:38:29.133] Requeuing JobId=3
//! ```

use crate::hostlist;

/// What happened to a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    Submitted,
    /// Allocated these nodes (by name).
    Started(Vec<String>),
    Ended,
    /// The running job was requeued (its run is over; it waits again).
    Requeued,
}

/// One line of interest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEvent {
    /// Unix time in milliseconds (the log's wall clock, read as UTC).
    pub at_ms: i64,
    pub job: u32,
    pub what: What,
}

/// The events in `log`, in file order. Lines that do not parse are skipped; a start whose
/// node list does not expand is an error (it would silently lose a placement).
pub fn parse_log(log: &str) -> Result<Vec<LogEvent>, String> {
    let mut events = Vec::new();
    for line in log.lines() {
        let Some(rest) = line.strip_prefix('[') else {
            continue;
        };
        let Some((stamp, msg)) = rest.split_once("] ") else {
            continue;
        };
        let Some(what) = classify(msg) else {
            continue;
        };
        let Some(at_ms) = parse_timestamp(stamp) else {
            continue;
        };
        let (job, what) = what;
        let what = match what {
            Classified::Started(nodes) => What::Started(
                hostlist::expand(nodes)
                    .map_err(|e| format!("node list `{nodes}` in `{line}`: {e:?}"))?,
            ),
            Classified::Submitted => What::Submitted,
            Classified::Ended => What::Ended,
            Classified::Requeued => What::Requeued,
        };
        events.push(LogEvent { at_ms, job, what });
    }
    Ok(events)
}

enum Classified<'a> {
    Submitted,
    Started(&'a str),
    Ended,
    Requeued,
}

fn classify(msg: &str) -> Option<(u32, Classified<'_>)> {
    if let Some(r) = msg.strip_prefix("_slurm_rpc_submit_batch_job: JobId=") {
        return Some((leading_id(r)?, Classified::Submitted));
    }
    if let Some(r) = msg.strip_prefix("sched: Allocate JobId=") {
        let id = leading_id(r)?;
        let nodes = r.split(' ').find_map(|w| w.strip_prefix("NodeList="))?;
        return Some((id, Classified::Started(nodes)));
    }
    if let Some(i) = msg.find("Started JobId=") {
        let r = &msg[i + "Started JobId=".len()..];
        let id = leading_id(r)?;
        let (_, nodes) = r.split_once(" on ")?;
        return Some((id, Classified::Started(nodes.split(' ').next()?)));
    }
    if let Some(r) = msg.strip_prefix("_job_complete: JobId=") {
        let id = leading_id(r)?;
        return r.ends_with(" done").then_some((id, Classified::Ended));
    }
    if let Some(r) = msg.strip_prefix("Requeuing JobId=") {
        return Some((leading_id(r)?, Classified::Requeued));
    }
    None
}

fn leading_id(s: &str) -> Option<u32> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s[..end].parse().ok()
}

/// `2026-12-01T02:38:05.592` (Slurm's `iso8601_ms`) as Unix milliseconds, read as UTC.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 23
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss, ms) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    Some((((days_from_civil(y, m, d) * 24 + hh) * 60 + mm) * 60 + ss) * 1000 + ms)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
[2026-12-01T02:38:05.592] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=1 usec=581
[2026-12-01T02:38:05.834] sched/backfill: _start_job: Started JobId=1 in gpu on gb[001-002]
[2026-12-01T02:38:06.711] update_node: node gb003 state set to DRAINING
[2026-12-01T02:38:08.890] _job_complete: JobId=1 WEXITSTATUS 0
[2026-12-01T02:38:08.890] _job_complete: JobId=1 done
[2026-12-01T02:38:29.133] Requeuing JobId=3
[2026-12-01T02:38:30.007] sched: Allocate JobId=3 NodeList=gb[001-002,019] #CPUs=2880 Partition=gpu
[2026-12-01T02:38:31.007] sched/backfill: _start_job: HETJOB: Started JobId=4 in gpu on gb020
";

    #[test]
    fn the_lines_of_interest_become_events() {
        let ev = parse_log(LOG).unwrap();
        let base = parse_timestamp("2026-12-01T02:38:05.592").unwrap();
        let got: Vec<(i64, u32, What)> = ev
            .into_iter()
            .map(|e| (e.at_ms - base, e.job, e.what))
            .collect();
        let nodes = |v: &[&str]| What::Started(v.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            got,
            [
                (0, 1, What::Submitted),
                (242, 1, nodes(&["gb001", "gb002"])),
                (3298, 1, What::Ended),
                (23541, 3, What::Requeued),
                (24415, 3, nodes(&["gb001", "gb002", "gb019"])),
                (25415, 4, nodes(&["gb020"])),
            ]
        );
    }

    #[test]
    fn timestamps_are_utc_unix_milliseconds() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00.000"), Some(0));
        assert_eq!(
            parse_timestamp("2000-03-01T00:00:01.250"),
            Some(951_868_801_250)
        );
        assert_eq!(parse_timestamp("2026-12-01T02:38:05"), None);
        assert_eq!(parse_timestamp("2026-13-01T02:38:05.000"), None);
    }

    #[test]
    fn a_start_with_a_broken_node_list_is_an_error() {
        let err = parse_log(
            "[2026-12-01T02:38:05.834] sched: Allocate JobId=1 NodeList=gb[001- #CPUs=1\n",
        )
        .unwrap_err();
        assert!(err.contains("gb[001-"), "{err}");
    }
}
