//! Engine decision latency on 278 racks (5,004 trays) and on 2,800 racks (50,400 trays, the
//! largest GB200 sites) at 0%, 50% and 90% occupancy, with a fixed mix of request sizes with
//! and without `--segment`, and jobs sized by GPUs (see `nvl72_sim::bench`); and
//! the count of every rack's offered trays that the plugin makes while it builds the view.
//!
//! `cargo bench --bench decision`. Criterion reports the time of one round of all requests;
//! the throughput line gives decisions per second. Afterwards the bench prints the mean and
//! p99 per decision from its own per-call timing, which criterion does not report.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nvl72_sim::bench::{decide, measure, scenarios};

const RACKS: [usize; 2] = [278, 2800];

fn decision(c: &mut Criterion) {
    for racks in RACKS {
        decision_at(c, racks);
    }
}

fn decision_at(c: &mut Criterion, racks: usize) {
    let scenarios = scenarios(racks, 1);
    let mut group = c.benchmark_group(format!("plan {racks} racks"));
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for s in &scenarios {
        group.throughput(Throughput::Elements(s.requests.len() as u64));
        group.bench_function(format!("{:.0}% busy", s.occupancy * 100.0), |b| {
            b.iter(|| {
                for req in &s.requests {
                    black_box(decide(&s.topo, &s.view, black_box(req)));
                }
            })
        });
    }
    group.finish();
    let mut count = c.benchmark_group(format!("count racks {racks} racks"));
    count
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    for s in &scenarios {
        let mut view = s.view.clone();
        count.bench_function(format!("{:.0}% busy", s.occupancy * 100.0), |b| {
            b.iter(|| {
                view.tallies.clear();
                view.count_racks(black_box(&s.topo));
            })
        });
    }
    count.finish();
    let calls = 400 * scenarios.first().map_or(0, |s| s.requests.len());
    println!("\nper decision (own timing, {calls} calls each):");
    println!(
        "{:<22} {:>10} {:>10} {:>10}",
        "scenario", "mean us", "p50 us", "p99 us"
    );
    for s in &scenarios {
        let m = measure(s, 400);
        println!(
            "{:<22} {:>10.2} {:>10.2} {:>10.2}",
            m.scenario,
            m.latency.mean_ns / 1e3,
            m.latency.p50_ns as f64 / 1e3,
            m.latency.p99_ns as f64 / 1e3
        );
    }
}

criterion_group!(benches, decision);
criterion_main!(benches);
