//! `sacct --json`: Slurm's own JSON (data_parser v0.0.42 in 24.11, v0.0.43 to v0.0.45 in
//! 25.05 to 26.05; the fields read here are the same in all of them in SchedMD's source, and
//! real exports of 24.11 and 26.05 are tested). The `jobs` array is
//! read one job at a time, so a history of millions of jobs is never held as a tree. Steps
//! are inside their job, so every element is a job.

use std::fmt;
use std::io::BufRead;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::fields::{gpu_count, JobKind, Limit, SubmitLine};
use super::{Collector, Record, SacctError};

/// Every job of a `sacct --json` export into `jobs`.
pub(super) fn read(input: &mut dyn BufRead, jobs: &mut Collector) -> Result<(), SacctError> {
    let mut de = serde_json::Deserializer::from_reader(input);
    let found = de
        .deserialize_map(Export { jobs })
        .and_then(|found| de.end().map(|()| found))
        .map_err(|e| {
            let text = e.to_string();
            let message = match text.rsplit_once(" at line ") {
                Some((what, _)) => format!("{what} (column {})", e.column()),
                None => text,
            };
            SacctError {
                line: e.line().max(1),
                message,
            }
        })?;
    if !found {
        return Err(SacctError {
            line: 1,
            message: "no `jobs` array: not the output of `sacct --json`".into(),
        });
    }
    Ok(())
}

/// The top-level object; `true` once its `jobs` were read.
struct Export<'a> {
    jobs: &'a mut Collector,
}

impl<'de> Visitor<'de> for Export<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the object `sacct --json` prints")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "jobs" {
                map.next_value_seed(Jobs {
                    jobs: &mut *self.jobs,
                })?;
                found = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

struct Jobs<'a> {
    jobs: &'a mut Collector,
}

impl<'de> DeserializeSeed<'de> for Jobs<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Jobs<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the array of jobs")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(job) = seq.next_element::<Job>()? {
            let record = job.record().map_err(de::Error::custom)?;
            self.jobs.add(record);
        }
        Ok(())
    }
}

/// A number as data_parser writes it: plain, or `{"set", "infinite", "number"}` where Slurm
/// has a NO_VAL (unset) or INFINITE value.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
enum Number {
    Plain(i64),
    Flagged {
        #[serde(default)]
        set: bool,
        #[serde(default)]
        infinite: bool,
        #[serde(default)]
        number: i64,
    },
}

impl Number {
    /// The value when it is set and finite.
    fn value(self) -> Option<i64> {
        match self {
            Number::Plain(n) => Some(n),
            Number::Flagged {
                set: true,
                infinite: false,
                number,
            } => Some(number),
            Number::Flagged { .. } => None,
        }
    }

    /// A timestamp: `None` for unset and 0 (never happened).
    fn time(self) -> Option<i64> {
        self.value().filter(|&t| t > 0)
    }
}

/// The fields of a job this reader uses (data_parser's names).
#[derive(Debug, Deserialize)]
struct Job {
    job_id: u64,
    #[serde(default)]
    array: Option<Array>,
    #[serde(default)]
    het: Option<Het>,
    #[serde(default)]
    partition: Option<String>,
    #[serde(default)]
    qos: Option<String>,
    time: Time,
    #[serde(default)]
    allocation_nodes: Option<Number>,
    #[serde(default)]
    tres: Option<Tres>,
    #[serde(default)]
    restart_cnt: Option<Number>,
    /// 25.05 and later.
    #[serde(default)]
    segment_size: Option<Number>,
    #[serde(default)]
    submit_line: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Array {
    #[serde(default)]
    job_id: u64,
    #[serde(default)]
    task_id: Option<Number>,
}

#[derive(Debug, Deserialize)]
struct Het {
    #[serde(default)]
    job_id: u64,
    #[serde(default)]
    job_offset: Option<Number>,
}

#[derive(Debug, Deserialize)]
struct Time {
    #[serde(default)]
    submission: Option<Number>,
    #[serde(default)]
    start: Option<Number>,
    #[serde(default)]
    end: Option<Number>,
    /// Seconds.
    #[serde(default)]
    elapsed: Option<Number>,
    /// Minutes; unset: the partition's; infinite: UNLIMITED.
    #[serde(default)]
    limit: Option<Number>,
}

#[derive(Debug, Default, Deserialize)]
struct Tres {
    #[serde(default)]
    allocated: Vec<TresItem>,
    #[serde(default)]
    requested: Vec<TresItem>,
}

#[derive(Debug, Deserialize)]
struct TresItem {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    count: i64,
}

/// The GPUs in a TRES list, by the rule of the text export ([`gpu_count`]).
fn gpus(items: &[TresItem]) -> Option<u64> {
    let names: Vec<(String, u64)> = items
        .iter()
        .map(|t| (format!("{}/{}", t.kind, t.name), t.count.max(0) as u64))
        .collect();
    gpu_count(names.iter().map(|(name, n)| (name.as_str(), *n)))
}

impl Job {
    fn record(self) -> Result<Record, String> {
        let array_task = self.array.as_ref().filter(|a| a.job_id != 0);
        let kind = match (array_task, &self.het) {
            (Some(a), _) => match a.task_id.and_then(Number::value) {
                Some(_) => JobKind::ArrayTask,
                None => JobKind::ArrayPending,
            },
            (None, Some(h)) if h.job_id != 0 && h.job_offset.and_then(Number::value).is_some() => {
                JobKind::HetComponent
            }
            _ => JobKind::Job,
        };
        let t = &self.time;
        let start = t.start.and_then(Number::time);
        let end = t.end.and_then(Number::time);
        let ran_s = match (start, end) {
            (Some(_), Some(_)) => {
                Some(t.elapsed.and_then(Number::value).unwrap_or(0).max(0) as u64)
            }
            _ => None,
        };
        let limit = match t.limit {
            None => Limit::Partition,
            Some(Number::Flagged { infinite: true, .. }) => Limit::Unlimited,
            Some(n) => match n.value() {
                Some(m) if m >= 0 => Limit::Seconds((m as u64).saturating_mul(60)),
                Some(m) => return Err(format!("job {}: time limit {m} minutes", self.job_id)),
                None => Limit::Partition,
            },
        };
        let tres = self.tres.unwrap_or_default();
        let count = |n: Option<Number>| n.and_then(Number::value).map(|v| v.max(0) as u64);
        Ok(Record {
            id: self.job_id.to_string(),
            kind,
            partition: self.partition.filter(|p| !p.is_empty()),
            qos: self.qos.filter(|q| !q.is_empty()),
            submit: t.submission.and_then(Number::time),
            start,
            ran_s,
            limit,
            nnodes: count(self.allocation_nodes).filter(|&n| n > 0),
            gpus: gpus(&tres.allocated)
                .filter(|&g| g > 0)
                .or(gpus(&tres.requested)),
            restarts: count(self.restart_cnt).unwrap_or(0).min(u32::MAX as u64) as u32,
            segment: count(self.segment_size).filter(|&k| k > 0),
            submit_line: self
                .submit_line
                .as_deref()
                .map(SubmitLine::parse)
                .unwrap_or_default(),
        })
    }
}
