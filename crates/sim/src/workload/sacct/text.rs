//! The text forms of an export: `sacct --parsable2` (the README's), `--parsable` (a
//! delimiter after the last field too) and `--delimiter=D`, with or without steps, with raw
//! or formatted limits and run times, converted memory units or not. Read line by line.

use std::io::BufRead;

use super::fields::{
    duration, job_kind, limit, seconds, timestamp, tres_gpus, Field, Header, JobKind, SubmitLine,
};
use super::{Collector, Record, SacctError, SacctOptions, TierField};

/// Every record of a text export into `jobs`.
pub(super) fn read(
    input: &mut dyn BufRead,
    opts: &SacctOptions,
    jobs: &mut Collector,
) -> Result<(), SacctError> {
    let mut header: Option<Header> = None;
    let mut buf = Vec::new();
    let mut line = 0;
    loop {
        buf.clear();
        let n = input.read_until(b'\n', &mut buf).map_err(|e| SacctError {
            line: line + 1,
            message: e.to_string(),
        })?;
        if n == 0 {
            break;
        }
        line += 1;
        let bytes = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let text = std::str::from_utf8(bytes).map_err(|e| SacctError {
            line,
            message: format!("not UTF-8 (byte {})", e.valid_up_to() + 1),
        })?;
        if text.trim().is_empty() {
            continue;
        }
        let at = |message: String| SacctError { line, message };
        match &header {
            None => {
                let h = Header::parse(text.trim_end()).map_err(at)?;
                if opts.partition.is_some() && !h.has(Field::Partition) {
                    return Err(at(
                        "--partition needs the Partition field in the export".into()
                    ));
                }
                if let Some(by) = opts.tiers.as_ref().map(|t| t.by) {
                    let field = match by {
                        TierField::Partition => Field::Partition,
                        TierField::Qos => Field::Qos,
                    };
                    if !h.has(field) {
                        return Err(at(format!(
                            "{} needs the {} field in the export (add it to sacct's --format)",
                            by.flag(),
                            field.name()
                        )));
                    }
                }
                header = Some(h);
            }
            Some(h) => match record(h, text).map_err(at)? {
                Some(r) => jobs.add(r),
                None => jobs.step(),
            },
        }
    }
    if header.is_none() {
        return Err(SacctError {
            line: 1,
            message: "empty: no header line".into(),
        });
    }
    Ok(())
}

/// A data line as a record; `None` for a step, whose other fields are not read (a step's
/// limits and TRES are empty or its own).
fn record(h: &Header, text: &str) -> Result<Option<Record>, String> {
    let cells = h.split(text)?;
    let get = |f: Field| h.get(&cells, f).map(str::trim);
    let field = |f: Field, e: String| format!("{}: {e}", f.name());
    let id = get(Field::JobIdRaw)
        .filter(|s| !s.is_empty())
        .or(get(Field::JobId))
        .unwrap_or_default()
        .to_string();
    let kind = job_kind(get(Field::JobId).unwrap_or(&id))?;
    if kind == JobKind::Step {
        return Ok(None);
    }
    let time = |f: Field| get(f).map_or(Ok(None), |s| timestamp(s).map_err(|e| field(f, e)));
    let submit = time(Field::Submit)?;
    let start = time(Field::Start)?;
    let end = time(Field::End)?;
    let ran_s = match (get(Field::ElapsedRaw), get(Field::Elapsed)) {
        _ if start.is_none() => None,
        _ if h.has(Field::End) && end.is_none() => None,
        (Some(raw), _) => Some(seconds(raw).map_err(|e| field(Field::ElapsedRaw, e))?),
        (None, Some(e)) => Some(duration(e).map_err(|e| field(Field::Elapsed, e))?),
        (None, None) => match (start, end) {
            (Some(s), Some(e)) => Some(e.saturating_sub(s).max(0) as u64),
            _ => None,
        },
    };
    let limit = match (get(Field::TimelimitRaw), get(Field::Timelimit)) {
        (Some(raw), _) => limit(raw, true)?,
        (None, Some(l)) => limit(l, false)?,
        (None, None) => unreachable!("the header requires a time limit"),
    };
    let count = |f: Field| -> Result<Option<u64>, String> {
        match get(f) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| field(f, format!("`{v}` is not a whole number"))),
        }
    };
    let alloc = get(Field::AllocTres).map_or(Ok(None), tres_gpus)?;
    let req = get(Field::ReqTres).map_or(Ok(None), tres_gpus)?;
    Ok(Some(Record {
        id,
        kind,
        partition: get(Field::Partition).map(String::from),
        qos: get(Field::Qos).filter(|q| !q.is_empty()).map(String::from),
        submit,
        start,
        ran_s,
        limit,
        nnodes: count(Field::NNodes)?,
        gpus: alloc.filter(|&g| g > 0).or(req),
        restarts: count(Field::Restarts)?.unwrap_or(0).min(u32::MAX as u64) as u32,
        segment: count(Field::SegmentSize)?.filter(|&k| k > 0),
        submit_line: get(Field::SubmitLine)
            .map(SubmitLine::parse)
            .unwrap_or_default(),
    }))
}
