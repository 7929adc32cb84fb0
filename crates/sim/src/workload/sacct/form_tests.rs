//! The forms an export comes in read to the same jobs: `--parsable`, other delimiters,
//! steps, formatted limits, gzip, zstd and `sacct --json`. The labs' real exports of each
//! form are read in `tests.rs`.

use std::io::Write;

use super::*;

const PARSABLE2: &str = "JobID|JobIDRaw|Partition|Submit|Start|End|ElapsedRaw|TimelimitRaw|State|NNodes|AllocTRES|ReqTRES|Restarts|SubmitLine
7|7|gpu|2026-11-01T10:00:00|2026-11-01T10:00:05|2026-11-01T10:01:05|60|10|COMPLETED|3|billing=432,cpu=432,gres/gpu=12,mem=3000M,node=3|cpu=3,gres/gpu=12,node=3|0|sbatch -N 3 --wrap a|b
8|8|gpu|2026-11-01T10:00:01|2026-11-01T10:00:06|2026-11-01T10:00:36|30|UNLIMITED|COMPLETED|1|cpu=1,gres/gpu=4,node=1|cpu=1,gres/gpu=4,node=1|0|sbatch --gpus=4
";

fn jobs(bytes: &[u8]) -> Vec<HistoryJob> {
    parse(bytes, &SacctOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(bytes)))
        .jobs
}

#[test]
fn parsable_with_its_trailing_delimiter_reads_like_parsable2() {
    let parsable: String = PARSABLE2.lines().map(|l| format!("{l}|\n")).collect();
    assert_eq!(jobs(parsable.as_bytes()), jobs(PARSABLE2.as_bytes()));
    assert_eq!(jobs(PARSABLE2.as_bytes())[0].trays, 3);
}

#[test]
fn another_delimiter_is_found_in_the_header() {
    for d in [";", "\t", "#!"] {
        let text = PARSABLE2.replace('|', d);
        assert_eq!(jobs(text.as_bytes()), jobs(PARSABLE2.as_bytes()), "{d:?}");
    }
    // A comma also separates TRES items: a clear error, not wrong jobs.
    let e = parse(
        PARSABLE2.replace('|', ",").as_bytes(),
        &SacctOptions::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("line 1: the delimiter `,` also separates TRES items"),
        "{e}"
    );
}

#[test]
fn fixed_width_output_is_refused_with_what_to_do() {
    let text = "JobID        JobIDRaw  Submit\n------------ --------- ----\n";
    let e = parse(text.as_bytes(), &SacctOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1: fixed-width sacct output, whose columns are cut at their width: export with --parsable2 (-P)"
    );
}

#[test]
fn steps_with_formatted_and_empty_limits_are_counted_not_parsed() {
    let text = "JobID|JobIDRaw|Submit|Start|End|Elapsed|Timelimit|AllocTRES
1001|1001|2026-11-01T10:00:00|2026-11-01T10:00:05|2026-11-01T10:01:05|00:01:00|00:10:00|gres/gpu=4,node=1
1001.batch|1001.batch|2026-11-01T10:00:05|2026-11-01T10:00:05|2026-11-01T10:01:05|00:01:00||cpu=1
1001.extern|1001.extern|2026-11-01T10:00:05|2026-11-01T10:00:05|2026-11-01T10:01:05|00:01:00||billing=1
1001.0|1001.0|2026-11-01T10:00:06|2026-11-01T10:00:06|2026-11-01T10:01:04|00:00:58||cpu=1,gres/gpu=4
";
    let h = parse(text.as_bytes(), &SacctOptions::default()).unwrap();
    assert_eq!(
        h.summary(),
        "read 1 jobs (4 records, 3 of them steps), used 1, skipped 0"
    );
    assert_eq!((h.jobs[0].runtime_s, h.jobs[0].limit_s), (60, 600));
}

#[test]
fn gzip_and_zstd_read_like_the_plain_export() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(PARSABLE2.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let zst = ruzstd::encoding::compress_to_vec(
        PARSABLE2.as_bytes(),
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    let plain = parse(PARSABLE2.as_bytes(), &SacctOptions::default()).unwrap();
    for (packed, name) in [(gz, "gzip"), (zst, "zstd")] {
        let h = parse(&packed, &SacctOptions::default()).unwrap();
        assert_eq!(h.jobs, plain.jobs, "{name}");
        assert!(
            h.summary()
                .starts_with(&format!("read 2 jobs (2 records, {name}), used 2")),
            "{}",
            h.summary()
        );
    }
}

/// The two jobs of [`PARSABLE2`] as `sacct --json` writes them (data_parser v0.0.42; the
/// labs' real exports are in tests/fixtures/sacct/).
const JSON: &str = r#"{"meta": {"plugin": {"data_parser": "data_parser/v0.0.42"}},
 "jobs": [
  {"job_id": 7, "partition": "gpu", "allocation_nodes": 3,
   "array": {"job_id": 0, "task_id": {"set": false, "infinite": false, "number": 0}},
   "het": {"job_id": 0, "job_offset": {"set": false, "infinite": false, "number": 0}},
   "time": {"submission": 1793527200, "start": 1793527205, "end": 1793527265, "elapsed": 60,
            "limit": {"set": true, "infinite": false, "number": 10}},
   "tres": {"allocated": [{"type": "cpu", "name": "", "id": 1, "count": 432},
                          {"type": "gres", "name": "gpu", "id": 1001, "count": 12}],
            "requested": []},
   "restart_cnt": 0, "submit_line": "sbatch -N 3 --wrap a|b", "steps": [{"step": {"name": "batch"}}]},
  {"job_id": 8, "partition": "gpu", "allocation_nodes": 1,
   "time": {"submission": 1793527201, "start": 1793527206, "end": 1793527236, "elapsed": 30,
            "limit": {"set": true, "infinite": true, "number": 0}},
   "tres": {"allocated": [{"type": "gres", "name": "gpu", "id": 1001, "count": 4}]},
   "submit_line": "sbatch --gpus=4"}
 ],
 "warnings": [], "errors": []}"#;

#[test]
fn sacct_json_reads_to_the_same_jobs_as_the_text_export() {
    let h = parse(JSON.as_bytes(), &SacctOptions::default()).unwrap();
    assert_eq!(h.jobs, jobs(PARSABLE2.as_bytes()));
    assert!(h
        .summary()
        .starts_with("read 2 jobs (2 records, sacct --json), used 2"));
}

#[test]
fn bad_json_is_an_error_naming_its_line() {
    let e = |text: &str| {
        parse(text.as_bytes(), &SacctOptions::default())
            .unwrap_err()
            .to_string()
    };
    let missing = JSON.replace("\"job_id\": 8,", "");
    // The line where the job's object ends.
    assert_eq!(e(&missing), "line 16: missing field `job_id` (column 36)");
    assert!(e("{\"meta\": {}}").contains("no `jobs` array"));
    assert!(
        e("{\"jobs\": [").starts_with("line 1: EOF"),
        "{}",
        e("{\"jobs\": [")
    );
}
