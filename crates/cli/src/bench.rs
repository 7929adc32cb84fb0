//! `nvl72 bench`: the engine's decision latency per request style, over rack counts.

use std::path::PathBuf;

use clap::Args;

use nvl72_engine::config::EndTime;
use nvl72_sim::contenders::latency::LatencySummary;
use nvl72_sim::studies::bench;

use crate::output::write_json;

mod ab;

#[derive(Args)]
pub struct BenchArgs {
    /// Rack counts, e.g. `18,72,278,1000,2800` for the cost curve
    #[arg(long, value_delimiter = ',', default_value = "278")]
    racks: Vec<usize>,
    /// Times each request is timed per scenario
    #[arg(long, default_value_t = 400)]
    rounds: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also print every request's latency
    #[arg(long)]
    per_request: bool,
    /// The engine's `[policy] end_time` rule: off, tie-break or align
    #[arg(long, default_value = "off", value_parser = parse_end_time)]
    end_time: EndTime,
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Measure this build (A) and another `nvl72` (B) side by side, in alternating runs with
    /// the same arguments, and print each one's p99 and A/B
    #[arg(long, value_name = "NVL72")]
    ab: Option<PathBuf>,
    /// Runs of each build with --ab
    #[arg(long, default_value_t = 3, requires = "ab")]
    repeats: usize,
}

impl BenchArgs {
    /// The arguments of one plain run, for --ab to hand to both builds.
    fn plain_args(&self) -> Vec<String> {
        let racks: Vec<String> = self.racks.iter().map(usize::to_string).collect();
        vec![
            format!("--racks={}", racks.join(",")),
            format!("--rounds={}", self.rounds),
            format!("--seed={}", self.seed),
            format!("--end-time={}", self.end_time.as_str()),
        ]
    }
}

fn parse_end_time(s: &str) -> Result<EndTime, String> {
    [EndTime::Off, EndTime::TieBreak, EndTime::Align]
        .into_iter()
        .find(|e| e.as_str() == s)
        .ok_or_else(|| format!("`{s}`: expected off, tie-break or align"))
}

pub fn run(a: &BenchArgs) -> Result<(), String> {
    if a.racks.contains(&0) || a.rounds == 0 {
        return Err("--racks and --rounds must be at least 1".into());
    }
    if let Some(other) = &a.ab {
        if a.repeats == 0 {
            return Err("--repeats must be at least 1".into());
        }
        return ab::run(other, &a.plain_args(), a.repeats);
    }
    let us = |ns: f64| ns / 1e3;
    let mut all = Vec::new();
    for &racks in &a.racks {
        println!(
            "nvl72 engine decision latency, {racks} racks, {} rounds of {} requests per scenario (us)\n",
            a.rounds,
            bench::REQUESTS.len() + bench::GPU_SIZED.len()
        );
        println!(
            "{:<24} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "scenario", "busy", "placeable", "mean", "p50", "p99", "max"
        );
        for s in bench::scenarios_with(racks, a.seed, a.end_time) {
            let m = bench::measure(&s, a.rounds);
            let row = |name: &str, busy: &str, placeable: &str, l: &LatencySummary| {
                println!(
                    "{name:<24} {busy:>9} {placeable:>9} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
                    us(l.mean_ns),
                    us(l.p50_ns as f64),
                    us(l.p99_ns as f64),
                    us(l.max_ns as f64)
                )
            };
            row(
                &m.scenario,
                &format!("{:.1}%", m.occupancy * 100.0),
                &format!("{}/{}", m.placeable, m.requests),
                &m.latency,
            );
            for st in &m.by_style {
                row(&format!("  {}", st.style.name()), "", "", &st.latency);
            }
            row("  (view build)", "", "", &m.count_racks);
            if let Some(fresh) = &m.fresh_view {
                row("  (view build as before)", "", "", fresh);
            }
            if a.per_request {
                for req in &s.requests {
                    let one = bench::Scenario {
                        name: String::new(),
                        occupancy: s.occupancy,
                        topo: s.topo.clone(),
                        view: s.view.clone(),
                        requests: vec![req.clone()],
                    };
                    let r = bench::measure(&one, a.rounds);
                    let name = match req.demand.gpus {
                        0 => format!(
                            "    -N {}{}",
                            req.min_nodes,
                            req.segment
                                .map_or(String::new(), |g| format!(" --segment={g}"))
                        ),
                        g => format!("    --gpus={g}"),
                    };
                    row(&name, "", &format!("{}/1", r.placeable), &r.latency);
                }
            }
            all.push(m);
        }
        println!();
    }
    if a.racks.len() > 1 {
        print!("{}", bench::curve(&all));
    }
    write_json(a.json.as_deref(), &all)
}
