//! `nvl72 analytic`: the segment-size capacity formula against the simulator.

use std::path::PathBuf;

use clap::Args;

use nvl72_sim::contenders::policy::PolicyKind;
use nvl72_sim::studies::analytic;

use crate::output::write_json;

#[derive(Args)]
pub struct AnalyticArgs {
    /// Segment sizes
    #[arg(long, value_delimiter = ',', default_value = "4,8,9,16,18")]
    k: Vec<usize>,
    /// Unavailability rates
    #[arg(long, value_delimiter = ',', default_value = "0,0.02,0.05,0.1")]
    lambda: Vec<f64>,
    #[arg(long, default_value_t = 278)]
    racks: usize,
    /// Failure draws per point
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    #[arg(long, value_delimiter = ',', default_value = "nvl72,block")]
    policies: Vec<PolicyKind>,
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

pub fn run(a: &AnalyticArgs) -> Result<(), String> {
    if let Some(&k) = a.k.iter().find(|&&k| k == 0 || k > 18) {
        return Err(format!("segment size {k} must be in 1..=18"));
    }
    println!(
        "usable fraction while jobs wait: formula vs simulation ({} racks, {} failure draws per point)\n",
        a.racks, a.seeds
    );
    println!(
        "{:>6} {:>3} {:>6} {:>8} {:>10} {:>8} {:>8} {:>14}",
        "policy", "k", "lambda", "formula", "simulated", "std.err", "diff", "equals draws"
    );
    let mut all = Vec::new();
    for &kind in &a.policies {
        for &k in &a.k {
            for &lambda in &a.lambda {
                let c = analytic::compare(kind, k, lambda, a.racks, a.seeds);
                println!(
                    "{:>6} {:>3} {:>6.2} {:>8.4} {:>10.4} {:>8.4} {:>7.2}% {:>14}",
                    kind.name(),
                    k,
                    lambda,
                    c.formula,
                    c.simulated,
                    c.std_err,
                    100.0 * (c.simulated - c.formula) / c.formula,
                    if c.exact_per_draw { "yes" } else { "NO" }
                );
                all.push(c);
            }
        }
    }
    write_json(a.json.as_deref(), &all)
}
