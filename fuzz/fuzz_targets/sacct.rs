//! A site's `sacct` export (`sim::workload::sacct::parse`: text or `--json`, plain or compressed) on
//! any bytes. Invariants: a rejection names a line (`line N: ...`, N within the input unless
//! it was compressed); an accepted export accounts
//! for every job it read (used + skipped = read, at most one job per record), and every job
//! it uses is one the simulator can run: at least one tray and one GPU, a limit no shorter
//! than its run time, a `--segment` that divides its trays, submit times in order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvl72_sim::workload::sacct::{parse, SacctOptions};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the site's node size, so 8-GPU histories are fuzzed too.
    let (opts, text) = match data.split_first() {
        Some((&b, rest)) if b & 1 == 1 => (
            SacctOptions {
                gpus_per_node: u64::from(b >> 1).max(1),
                ..Default::default()
            },
            rest,
        ),
        _ => (SacctOptions::default(), data),
    };
    match parse(text, &opts) {
        Err(e) => {
            let packed = nvl72_sim::workload::sacct::input::packed(text);
            let lines = text.split(|&b| b == b'\n').count().max(1);
            assert!(e.line >= 1 && (packed || e.line <= lines), "{e} (of {lines} lines)");
            assert!(e.to_string().starts_with(&format!("line {}: ", e.line)));
        }
        Ok(h) => {
            let skipped: usize = h.skipped.values().sum();
            assert_eq!(h.jobs.len() + skipped, h.read, "{}", h.summary());
            assert!(h.read <= h.records);
            for j in &h.jobs {
                assert!(j.trays >= 1 && j.gpus >= 1, "{j:?}");
                assert!(j.limit_s >= j.runtime_s, "{j:?}");
                assert!(j.segment.is_none_or(|k| k >= 1 && j.trays % k == 0), "{j:?}");
            }
            assert!(h.jobs.windows(2).all(|w| w[0].submit <= w[1].submit));
            let jobs = h.workload();
            assert!(jobs.iter().all(|j| j.limit >= j.runtime && j.trays >= 1));
            assert!(jobs.windows(2).all(|w| w[0].submit <= w[1].submit));
            let _ = h.summary();
        }
    }
});
