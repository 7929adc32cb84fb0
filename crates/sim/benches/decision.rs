//! Engine decision latency on 278 racks (5,004 trays), 2,800 racks (50,400 trays, the
//! largest GB200 sites) and 5,000 racks, at 0%, 50% and 90% occupancy, for each request style
//! (`-N` in a rack, `-N` over several, `--segment`, `--gpus`; see `nvl72_sim::studies::bench`), and
//! the view the plugin builds on every call before the engine decides (counted and indexed).
//!
//! `cargo bench --bench decision`. Criterion reports the time of one round of a style's
//! requests; the throughput line gives decisions per second. `nvl72 bench` gives the p99 per
//! decision, which criterion does not report.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nvl72_engine::offered_view::OfferedView;
use nvl72_engine::tray::Tray;
use nvl72_sim::studies::bench::{build_view, decide, scenarios, Style};

const RACKS: [usize; 3] = [278, 2800, 5000];

fn decision(c: &mut Criterion) {
    for racks in RACKS {
        decision_at(c, racks);
    }
}

fn decision_at(c: &mut Criterion, racks: usize) {
    let scenarios = scenarios(racks, 1);
    for style in Style::ALL {
        let mut group = c.benchmark_group(format!("{} {racks} racks", style.name()));
        group
            .sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(1));
        for s in &scenarios {
            let requests: Vec<_> = (s.requests.iter())
                .filter(|r| Style::of(r, 18) == style)
                .collect();
            group.throughput(Throughput::Elements(requests.len() as u64));
            group.bench_function(format!("{:.0}% busy", s.occupancy * 100.0), |b| {
                b.iter(|| {
                    for req in &requests {
                        black_box(decide(&s.topo, &s.view, black_box(req)));
                    }
                })
            });
        }
        group.finish();
    }
    let mut build = c.benchmark_group(format!("view build {racks} racks"));
    build
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1));
    for s in &scenarios {
        let offered: Vec<(usize, Tray)> = (s.view.trays.iter().copied().enumerate())
            .filter(|(_, t)| t.offered)
            .collect();
        let mut built = OfferedView::default();
        build.bench_function(format!("{:.0}% busy", s.occupancy * 100.0), |b| {
            b.iter(|| build_view(&s.topo, s.view.trays.len(), black_box(&offered), &mut built))
        });
    }
    build.finish();
}

criterion_group!(benches, decision);
criterion_main!(benches);
