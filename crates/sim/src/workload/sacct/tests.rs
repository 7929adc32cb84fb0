use std::io::Write;

use super::*;

mod tiers;

const HEADER: &str = "JobID|JobIDRaw|Partition|Submit|Start|End|ElapsedRaw|TimelimitRaw|State|NNodes|AllocTRES|ReqTRES|Restarts|SubmitLine";

fn export(rows: &[&str]) -> Vec<u8> {
    let mut s = HEADER.to_string();
    for r in rows {
        s.push('\n');
        s.push_str(r);
    }
    s.push('\n');
    s.into_bytes()
}

fn gpu_job(id: &str, submit: &str, start: &str, end: &str, elapsed: u64, nodes: u64) -> String {
    format!(
        "{id}|{id}|gpu|{submit}|{start}|{end}|{elapsed}|10|COMPLETED|{nodes}|billing={c},cpu={c},gres/gpu={g},mem=1000M,node={nodes}|cpu={c},gres/gpu={g},node={nodes}|0|sbatch -N {nodes} --wrap true",
        c = 144 * nodes,
        g = 4 * nodes
    )
}

/// A job that ran 8 s right after its submission at 10:00, under JobIDRaw `raw`.
fn ran(id: &str, raw: &str, nodes: u64) -> String {
    gpu_job(
        id,
        "2026-11-01T10:00:00",
        "2026-11-01T10:00:01",
        "2026-11-01T10:00:09",
        8,
        nodes,
    )
    .replacen(&format!("{id}|{id}"), &format!("{id}|{raw}"), 1)
}

fn read(rows: &[&str]) -> History {
    parse(&export(rows), &SacctOptions::default()).unwrap()
}

#[test]
fn a_completed_job_keeps_its_size_run_time_and_limit() {
    let row = gpu_job(
        "7",
        "2026-11-01T10:00:00",
        "2026-11-01T10:00:05",
        "2026-11-01T10:01:05",
        60,
        3,
    );
    let h = read(&[&row]);
    assert_eq!(h.summary(), "read 1 jobs (1 records), used 1, skipped 0");
    let j = &h.jobs[0];
    assert_eq!((j.trays, j.gpus, j.runtime_s, j.limit_s), (3, 12, 60, 600));
    let w = h.workload();
    assert_eq!(
        (w[0].submit, w[0].runtime, w[0].limit),
        (0, 60_000, 600_000)
    );
}

#[test]
fn fields_are_found_by_the_header_in_any_order() {
    let text = "State|ReqTRES|Timelimit|Elapsed|Start|Submit|JobID\n\
                COMPLETED|gres/gpu=8,node=2|1-00:00:00|01:02:03|2026-11-01T10:00:00|2026-11-01T09:00:00|12\n";
    let h = parse(text.as_bytes(), &SacctOptions::default()).unwrap();
    let j = &h.jobs[0];
    assert_eq!((j.trays, j.runtime_s, j.limit_s), (2, 3723, 86_400));
}

#[test]
fn every_record_is_used_or_skipped_for_a_counted_reason() {
    let pending = "9|9|gpu|2026-11-01T10:00:00|None|2026-11-01T10:05:00|0|10|CANCELLED by 0|1||cpu=1,gres/gpu=4,node=1|0|sbatch -N 1";
    let running = "10|10|gpu|2026-11-01T10:00:00|2026-11-01T10:00:01|Unknown|30|10|RUNNING|1|gres/gpu=4,node=1|gres/gpu=4,node=1|0|sbatch";
    let cpu = "11|11|cpu|2026-11-01T10:00:00|2026-11-01T10:00:01|2026-11-01T10:00:09|8|10|COMPLETED|1|cpu=2,node=1|cpu=2,node=1|0|sbatch -p cpu";
    // A step's limit is empty by nature: it is counted, not read.
    let step = "12.batch|12.batch||2026-11-01T10:00:00|2026-11-01T10:00:01|2026-11-01T10:00:09|8||COMPLETED|1|cpu=2,node=1||0|";
    let array_pending = "13_[2-5]|13|gpu|2026-11-01T10:00:00|None|Unknown|0|10|PENDING|1||gres/gpu=4,node=1|0|sbatch --array=1-5";
    let used = ran("14", "14", 1);
    let h = read(&[pending, running, cpu, step, array_pending, &used]);
    assert_eq!(h.jobs.len(), 1);
    assert_eq!(
        h.summary(),
        "read 5 jobs (6 records, 1 of them steps), used 1, skipped 4: never started 2, \
         still running (no end yet) 1, no GPUs in AllocTRES/ReqTRES 1"
    );
}

#[test]
fn array_tasks_and_hetjob_components_are_jobs_of_their_own() {
    let a = ran("20_1", "21", 1);
    let b = ran("22+0", "22", 2);
    let c = ran("22+1", "23", 1);
    let h = read(&[&a, &b, &c]);
    assert_eq!(h.jobs.len(), 3);
    assert!(h.summary().contains("array tasks (each a job) 1"));
    assert!(h
        .summary()
        .contains("hetjob components (each placed as a job, as Slurm does) 2"));
}

#[test]
fn a_requeued_job_exported_with_duplicates_sums_its_runs() {
    let first = "30|30|gpu|2026-11-01T10:00:00|2026-11-01T10:00:10|2026-11-01T10:00:40|30|10|REQUEUED|2|gres/gpu=8,node=2|gres/gpu=8,node=2|0|sbatch -N 2";
    let second = "30|30|gpu|2026-11-01T10:00:41|2026-11-01T10:01:00|2026-11-01T10:02:00|60|10|COMPLETED|2|gres/gpu=8,node=2|gres/gpu=8,node=2|1|sbatch -N 2";
    let h = read(&[first, second]);
    let j = &h.jobs[0];
    assert_eq!((j.runtime_s, j.attempts, h.read, h.records), (90, 2, 1, 2));
    assert_eq!(h.workload()[0].submit, 0);
    assert!(h
        .summary()
        .contains("requeued (run times of all runs summed) 1"));
    // Without --duplicates only the last run is there: Restarts says it was requeued.
    let h = read(&[second]);
    assert_eq!((h.jobs[0].runtime_s, h.jobs[0].attempts), (60, 2));
    assert!(h.summary().contains("last run only"));
}

#[test]
fn limits_unlimited_and_overrun_become_what_backfill_plans_with() {
    let unlimited = ran("40", "40", 1).replace("|8|10|", "|8|UNLIMITED|");
    let over = gpu_job(
        "41",
        "2026-11-01T10:00:00",
        "2026-11-01T10:00:01",
        "2026-11-01T10:11:00",
        659,
        1,
    )
    .replace("|COMPLETED|", "|TIMEOUT|");
    let h = read(&[&unlimited, &over]);
    assert_eq!(h.jobs[0].limit_s, YEAR_S);
    assert_eq!((h.jobs[1].runtime_s, h.jobs[1].limit_s), (659, 659));
    assert!(h.summary().contains("ran past their limit"));
}

#[test]
fn segments_come_from_segment_size_or_the_submit_line() {
    let text = "JobID|Submit|Start|End|ElapsedRaw|TimelimitRaw|NNodes|AllocTRES|SegmentSize|SubmitLine\n\
                1|2026-11-01T10:00:00|2026-11-01T10:00:00|2026-11-01T10:00:05|5|1|8|gres/gpu=32,node=8|4|sbatch -N 8 --segment=4\n\
                2|2026-11-01T10:00:00|2026-11-01T10:00:00|2026-11-01T10:00:05|5|1|8|gres/gpu=32,node=8||sbatch -N 8 --segment 2 --wrap x\n\
                3|2026-11-01T10:00:00|2026-11-01T10:00:00|2026-11-01T10:00:05|5|1|6|gres/gpu=24,node=6|4|sbatch -N 6 --segment=4\n";
    let h = parse(text.as_bytes(), &SacctOptions::default()).unwrap();
    let segs: Vec<_> = h.jobs.iter().map(|j| j.segment).collect();
    assert_eq!(segs, vec![Some(4), Some(2), None]);
    assert!(h.summary().contains("--segment read from SubmitLine 1"));
    assert!(h.summary().contains("(dropped) 1"));
}

#[test]
fn gpu_sized_jobs_are_told_by_their_submit_line() {
    let row = ran("50", "50", 2).replace("sbatch -N 2 --wrap true", "sbatch --gpus=8 --wrap a|b");
    let h = read(&[&row]);
    assert!(h.jobs[0].by_gpus);
    assert_eq!(h.jobs[0].trays, 2);
}

#[test]
fn eight_gpu_nodes_map_to_trays_by_gpus() {
    let row = ran("60", "60", 2).replace("gres/gpu=8", "gres/gpu=16");
    let opts = SacctOptions {
        gpus_per_node: 8,
        ..Default::default()
    };
    let h = parse(&export(&[&row]), &opts).unwrap();
    assert_eq!(h.jobs[0].trays, 4);
}

#[test]
fn partition_and_window_filters_are_counted() {
    let early = gpu_job(
        "70",
        "2026-10-31T23:59:59",
        "2026-11-01T00:00:01",
        "2026-11-01T00:00:09",
        8,
        1,
    );
    let inside = gpu_job(
        "71",
        "2026-11-02T00:00:00",
        "2026-11-02T00:00:01",
        "2026-11-02T00:00:09",
        8,
        1,
    );
    let other = inside.replace("71|71|gpu", "72|72|h100");
    let opts = SacctOptions {
        partition: Some("gpu".into()),
        since: fields::timestamp("2026-11-01T00:00:00").unwrap(),
        ..Default::default()
    };
    let h = parse(&export(&[&early, &inside, &other]), &opts).unwrap();
    assert_eq!(h.jobs.len(), 1);
    assert_eq!(h.skipped[&Skip::OutsideWindow], 1);
    assert_eq!(h.skipped[&Skip::OtherPartition], 1);
}

#[test]
fn bad_input_is_an_error_naming_its_line() {
    let err = |bytes: &[u8]| {
        parse(bytes, &SacctOptions::default())
            .unwrap_err()
            .to_string()
    };
    let good = ran("1", "1", 1);
    let truncated = &good[..good.len() / 2];
    assert!(
        err(&export(&[&good, truncated])).starts_with("line 3: "),
        "{}",
        err(&export(&[&good, truncated]))
    );
    assert!(err(b"JobID|Frobs\n1|2\n").contains("`Frobs` is not a sacct field"));
    assert!(err(b"JobID|Submit\n1|2\n").contains("lacks Start"));
    let garbage = good.replace("gres/gpu=4", "gres/gpu=four");
    assert!(
        err(&export(&[&garbage])).starts_with("line 2: TRES"),
        "{}",
        err(&export(&[&garbage]))
    );
    let junk = good.replace("billing=144", "billing");
    assert!(err(&export(&[&junk])).contains("is not name=count"));
    let mut bytes = export(&[&good]);
    bytes.extend_from_slice(b"2|2|gpu|\xff\n");
    assert_eq!(err(&bytes), "line 3: not UTF-8 (byte 9)");
    assert_eq!(err(b""), "line 1: empty: no header line");
    let bad_time = good.replace("2026-11-01T10:00:01", "yesterday");
    assert!(err(&export(&[&bad_time])).contains("Start: `yesterday` is not a time"));
}

#[test]
fn epoch_times_read_like_iso_times() {
    let iso = ran("1", "1", 1);
    let s = fields::timestamp("2026-11-01T10:00:00").unwrap().unwrap();
    let epoch = gpu_job(
        "2",
        &(s + 100).to_string(),
        &(s + 101).to_string(),
        &(s + 109).to_string(),
        8,
        1,
    );
    let h = read(&[&iso, &epoch]);
    assert_eq!(h.workload()[1].submit, 100_000);
}

#[test]
fn durations_read_every_form_sacct_prints() {
    assert_eq!(fields::duration("00:00:07").unwrap(), 7);
    assert_eq!(fields::duration("05:07").unwrap(), 307);
    assert_eq!(fields::duration("2-01:00:00").unwrap(), 2 * 86_400 + 3600);
    assert_eq!(fields::duration("00:01:02.345").unwrap(), 62);
    assert!(fields::duration("1:99:00").is_err());
    assert!(fields::duration("").is_err());
}

/// The real exports of the lab's job mix (tests/fixtures/sacct/README.md says which command
/// made which row; `jobs-<series>.txt` which job id each got): the same jobs read the same on
/// 24.11 and 26.05.
#[test]
fn the_labs_real_exports_read_the_same_on_both_series() {
    let exports: [(&str, &[u8], &str); 4] = [
        (
            "24.11",
            include_bytes!("../../../../../tests/fixtures/sacct/lab-24.11.txt"),
            include_str!("../../../../../tests/fixtures/sacct/jobs-24.11.txt"),
        ),
        (
            "26.05",
            include_bytes!("../../../../../tests/fixtures/sacct/lab-26.05.txt"),
            include_str!("../../../../../tests/fixtures/sacct/jobs-26.05.txt"),
        ),
        (
            "24.11 -D",
            include_bytes!("../../../../../tests/fixtures/sacct/lab-24.11-no-duplicates.txt"),
            include_str!("../../../../../tests/fixtures/sacct/jobs-24.11.txt"),
        ),
        (
            "26.05 -D",
            include_bytes!("../../../../../tests/fixtures/sacct/lab-26.05-no-duplicates.txt"),
            include_str!("../../../../../tests/fixtures/sacct/jobs-26.05.txt"),
        ),
    ];
    for (series, bytes, submitted) in exports {
        let id_of = |command: &str| -> String {
            submitted
                .lines()
                .find_map(|l| l.split_once('\t').filter(|(_, c)| *c == command))
                .map(|(id, _)| id.to_string())
                .unwrap_or_else(|| panic!("{series}: `{command}` not in jobs-*.txt"))
        };
        let h = parse(bytes, &SacctOptions::default()).unwrap();
        let skipped = "skipped 8: still running (no end yet) 1, no GPUs in AllocTRES/ReqTRES 7";
        assert!(h.summary().contains(skipped), "{series}: {}", h.summary());
        let shape: Vec<(&str, usize, u64, bool)> = h
            .jobs
            .iter()
            .map(|j| (j.id.as_str(), j.trays, j.limit_s, j.by_gpus))
            .collect();
        let hetjob = "sbatch --parsable -N 1 --time=5 --wrap sleep 3 : -N 1 --gpus=4 --time=5";
        // The hetjob's GPU component `+1` runs under the next raw id.
        let gpu_component = (id_of(hetjob).parse::<u32>().unwrap() + 1).to_string();
        for (id, expected) in [
            // -N 2 --exclusive: every GPU of both trays
            (
                id_of("sbatch --parsable -N 2 --exclusive --time=5 --wrap sleep 3"),
                (2, 300, false),
            ),
            // --gpus=8: NNodes 2
            (
                id_of("sbatch --parsable --gpus=8 --time=5 --wrap sleep 3"),
                (2, 300, true),
            ),
            (gpu_component, (1, 300, false)),
            // no --time: 525600 minutes
            (
                id_of("sbatch --parsable -N 1 --gpus=2 --wrap sleep 2"),
                (1, YEAR_S, false),
            ),
            // -n 8 --gpus-per-task=1: the count is left to Slurm
            (
                id_of("sbatch --parsable -n 8 --gpus-per-task=1 --time=5 --wrap sleep 3"),
                (2, 300, true),
            ),
            (
                id_of("srun -N 1 --gpus=1 --time=5 sh -c 'echo $SLURM_JOB_ID'"),
                (1, 300, false),
            ),
        ] {
            let expected = (id.as_str(), expected.0, expected.1, expected.2);
            assert!(
                shape.contains(&expected),
                "{series}: {expected:?} not in {shape:?}"
            );
        }
    }
    let cancelled: [&[u8]; 2] = [
        include_bytes!("../../../../../tests/fixtures/sacct/lab-24.11-pending-cancelled.txt"),
        include_bytes!("../../../../../tests/fixtures/sacct/lab-26.05-pending-cancelled.txt"),
    ];
    for bytes in cancelled {
        let h = parse(bytes, &SacctOptions::default()).unwrap();
        assert_eq!(h.skipped.get(&Skip::NeverStarted), Some(&1));
    }
}

#[test]
fn accounting_tres_counts_the_total_not_the_total_plus_its_types() {
    assert_eq!(
        fields::tres_gpus("cpu=8,gres/gpu=8,gres/gpu:h100=8,node=1").unwrap(),
        Some(8)
    );
    assert_eq!(
        fields::tres_gpus("gres/gpu:a100=2,gres/gpu:h100=2").unwrap(),
        Some(4)
    );
    assert_eq!(fields::tres_gpus("cpu=8,mem=1000M,node=1").unwrap(), None);
    assert!(fields::tres_gpus("gres/gpu=1.5").is_err());
}

/// Every form the labs' sacct exported the job mix in (tests/fixtures/sacct/README.md,
/// "Export forms") reads to the jobs of the README's export, on both series.
#[test]
fn every_export_form_of_the_labs_reads_to_the_same_jobs() {
    macro_rules! forms {
        ($series:literal) => {
            [
                (
                    "steps",
                    &include_bytes!(concat!(
                        "../../../../../tests/fixtures/sacct/lab-",
                        $series,
                        "-steps.txt"
                    ))[..],
                ),
                (
                    "parsable",
                    &include_bytes!(concat!(
                        "../../../../../tests/fixtures/sacct/lab-",
                        $series,
                        "-parsable.txt"
                    ))[..],
                ),
                (
                    "delimiter",
                    &include_bytes!(concat!(
                        "../../../../../tests/fixtures/sacct/lab-",
                        $series,
                        "-delimiter.txt"
                    ))[..],
                ),
                (
                    "converted",
                    &include_bytes!(concat!(
                        "../../../../../tests/fixtures/sacct/lab-",
                        $series,
                        "-converted.txt"
                    ))[..],
                ),
                (
                    "units",
                    &include_bytes!(concat!(
                        "../../../../../tests/fixtures/sacct/lab-",
                        $series,
                        "-units.txt"
                    ))[..],
                ),
                (
                    "formatted",
                    &include_bytes!(concat!(
                        "../../../../../tests/fixtures/sacct/lab-",
                        $series,
                        "-formatted.txt"
                    ))[..],
                ),
                (
                    "json",
                    &include_bytes!(concat!(
                        "../../../../../tests/fixtures/sacct/lab-",
                        $series,
                        ".json"
                    ))[..],
                ),
                (
                    "steps.txt.gz",
                    &include_bytes!(concat!(
                        "../../../../../tests/fixtures/sacct/lab-",
                        $series,
                        "-steps.txt.gz"
                    ))[..],
                ),
                (
                    "json.zst",
                    &include_bytes!(concat!(
                        "../../../../../tests/fixtures/sacct/lab-",
                        $series,
                        ".json.zst"
                    ))[..],
                ),
            ]
        };
    }
    type Forms = [(&'static str, &'static [u8]); 9];
    let series: [(&str, &[u8], Forms); 2] = [
        (
            "24.11",
            include_bytes!("../../../../../tests/fixtures/sacct/lab-24.11.txt"),
            forms!("24.11"),
        ),
        (
            "26.05",
            include_bytes!("../../../../../tests/fixtures/sacct/lab-26.05.txt"),
            forms!("26.05"),
        ),
    ];
    let opts = SacctOptions::default();
    for (name, readme, forms) in series {
        let expected = parse(readme, &opts).unwrap();
        assert!(expected.jobs.len() >= 10, "{name}: {}", expected.summary());
        for (form, bytes) in forms {
            let h = parse(bytes, &opts).unwrap_or_else(|e| panic!("{name} {form}: {e}"));
            assert_eq!(h.jobs, expected.jobs, "{name} {form}: {}", h.summary());
            assert_eq!(h.read, expected.read, "{name} {form}: {}", h.summary());
            assert_eq!(h.skipped, expected.skipped, "{name} {form}");
        }
    }
}

// The forms an export comes in read to the same jobs: `--parsable`, other delimiters,
// steps, formatted limits, gzip, zstd and `sacct --json`. The labs' real exports of each
// form are read above.

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
