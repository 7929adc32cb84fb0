//! `nvl72 summarize`: the headline metrics of several `simulate --json` reports.

use std::path::PathBuf;

use clap::Args;

#[derive(Args)]
pub struct SummarizeArgs {
    /// JSON reports of the same workload and cluster, e.g. one per seed
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// The headline metrics of several reports: mean, and the range over the files.
pub fn summarize(a: &SummarizeArgs) -> Result<(), String> {
    use serde_json::Value;
    let reports: Vec<Value> = a
        .files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))
        })
        .collect::<Result<_, String>>()?;
    let first = &reports[0];
    println!(
        "{} jobs of `{}`, offered load {:.2}, {} racks, failures {}; {} run(s), mean (min-max)\n",
        first["workload"]["jobs"],
        first["workload"]["name"].as_str().unwrap_or("?"),
        first["workload"]["offered_load"].as_f64().unwrap_or(0.0),
        first["sim"]["racks"],
        first["sim"]["failures"],
        reports.len()
    );
    type Metric = (&'static str, f64, fn(&Value) -> Option<f64>);
    let metrics: [Metric; 29] = [
        ("usable occupancy while waiting %", 100.0, |p| {
            p["usable_occupancy_while_waiting"].as_f64()
        }),
        ("usable occupancy while submitting %", 100.0, |p| {
            p["usable_occupancy_arrivals"].as_f64()
        }),
        ("work split across racks %", 100.0, |p| {
            p["split_work_share"].as_f64()
        }),
        ("work cut inside a group %", 100.0, |p| {
            p["misaligned_work_share"].as_f64()
        }),
        ("mean slowdown of split runs", 1.0, |p| {
            p["mean_slowdown_split"].as_f64()
        }),
        ("runs past / killed at their limit", 1.0, |p| {
            Some(p["overruns"].as_f64()? + p["timeouts"].as_f64()?)
        }),
        ("occupancy while waiting %", 100.0, |p| {
            p["occupancy_while_waiting"].as_f64()
        }),
        ("occupancy while submitting %", 100.0, |p| {
            p["occupancy_arrivals"].as_f64()
        }),
        ("stranded % of healthy GPUs", 100.0, |p| {
            p["stranded_share"].as_f64()
        }),
        ("idle: reserved % of healthy", 100.0, |p| {
            idle_of(p, "reserved")
        }),
        ("idle: too few trays % of healthy", 100.0, |p| {
            idle_of(p, "too-few")
        }),
        ("idle: other % of healthy", 100.0, |p| idle_of(p, "other")),
        ("idle: rack set wait % of healthy", 100.0, |p| {
            idle_of(p, "rack-set")
        }),
        ("idle: failed trays % of healthy", 100.0, |p| {
            idle_of(p, "failed")
        }),
        ("idle: whole-rack wait % of healthy", 100.0, |p| {
            idle_of(p, "whole-rack")
        }),
        ("idle: remainders % of healthy", 100.0, |p| {
            idle_of(p, "remainder")
        }),
        ("small jobs in one rack %", 100.0, |p| {
            p["small_jobs_in_one_rack"]["share"].as_f64()
        }),
        ("GPU-sized jobs in one rack %", 100.0, |p| {
            p["gpu_sized_in_one_rack"]["share"].as_f64()
        }),
        ("segments in one rack %", 100.0, |p| {
            p["segments_in_one_rack"]["share"].as_f64()
        }),
        ("extra racks per large job", 1.0, |p| {
            p["large_jobs_extra_racks"].as_f64()
        }),
        ("large jobs' piece balance", 1.0, |p| {
            p["large_jobs_piece_balance"].as_f64()
        }),
        ("wait all jobs mean h", 1.0, |p| wait_of(p, "all", "mean_h")),
        ("wait all jobs p95 h", 1.0, |p| wait_of(p, "all", "p95_h")),
        ("wait 17-18 trays p95 h", 1.0, |p| {
            wait_of(p, "17-18", "p95_h")
        }),
        ("wait 19-72 trays mean h", 1.0, |p| {
            wait_of(p, "19-72", "mean_h")
        }),
        ("wait 19-72 trays p95 h", 1.0, |p| {
            wait_of(p, "19-72", "p95_h")
        }),
        ("wait 144+ trays p95 h", 1.0, |p| {
            wait_of(p, "144+", "p95_h")
        }),
        ("jobs held (killed > max-requeue)", 1.0, |p| {
            p["held"].as_f64()
        }),
        ("decision p99 us", 1e-3, |p| {
            p["decision_latency"]["p99_ns"].as_f64()
        }),
    ];
    // A report's column: its label (`slurm nvl72` in `replay` reports), else its policy.
    let column = |p: &Value| -> Option<String> {
        p["label"]
            .as_str()
            .or(p["policy"].as_str())
            .map(String::from)
    };
    let policies: Vec<String> = first["policies"]
        .as_array()
        .map(|ps| ps.iter().filter_map(column).collect())
        .unwrap_or_default();
    if let Some(line) = summary_usable_line(&reports, &policies, &column) {
        println!("{line}\n");
    }
    println!("| metric | {} |", policies.join(" | "));
    println!("|---|{}", "---|".repeat(policies.len()));
    for (name, scale, get) in metrics {
        let cells: Vec<String> = policies
            .iter()
            .map(|pol| {
                let vals: Vec<f64> = reports
                    .iter()
                    .filter_map(|r| {
                        r["policies"]
                            .as_array()?
                            .iter()
                            .find(|p| column(p).as_deref() == Some(pol.as_str()))
                            .and_then(get)
                    })
                    .map(|v| v * scale)
                    .collect();
                if vals.is_empty() {
                    return "-".into();
                }
                let mean = vals.iter().sum::<f64>() / vals.len() as f64;
                let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if vals.len() == 1 || (hi - lo).abs() < 1e-9 {
                    format!("{mean:.2}")
                } else {
                    format!("{mean:.2} ({lo:.2}-{hi:.2})")
                }
            })
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    Ok(())
}

/// The verdict's usable line from the reports' means, when they price split jobs and have
/// an nvl72 column.
fn summary_usable_line(
    reports: &[serde_json::Value],
    policies: &[String],
    column: &dyn Fn(&serde_json::Value) -> Option<String>,
) -> Option<String> {
    use nvl72_sim::verdict::{usable_line, Usable};
    let first = &reports[0];
    let slowdown = &first["sim"]["slowdown"];
    if slowdown.is_null() {
        return None; // priced nothing: usable equals occupancy
    }
    let mean = |pol: &str| -> Option<f64> {
        let vals: Vec<f64> = reports
            .iter()
            .filter_map(|r| {
                r["policies"]
                    .as_array()?
                    .iter()
                    .find(|p| column(p).as_deref() == Some(pol))?["usable_occupancy_while_waiting"]
                    .as_f64()
            })
            .collect();
        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
    };
    let pick = |name: &str| {
        policies
            .iter()
            .find(|p| p.as_str() == name)
            .and_then(|p| mean(p))
    };
    let sim = &first["sim"];
    let gpus = ["racks", "trays_per_rack", "gpus_per_tray"]
        .iter()
        .map(|k| sim[k].as_f64().unwrap_or(0.0))
        .product::<f64>();
    let failures: nvl72_sim::failures::FailureModel =
        serde_json::from_value(sim["failures"].clone()).ok()?;
    let described: nvl72_sim::slowdown::Slowdown = serde_json::from_value(slowdown.clone()).ok()?;
    Some(usable_line(&Usable {
        ours: pick("nvl72")?,
        naive: pick("naive"),
        block: pick("block"),
        healthy_gpus: gpus * (1.0 - failures.unavailability()),
        band: None,
        band_is_usables: false,
        model: format!("{} (means of {} runs)", described.describe(), reports.len()),
    }))
}

/// One cause's share of the healthy GPUs in `idle_by_cause`.
fn idle_of(p: &serde_json::Value, cause: &str) -> Option<f64> {
    p["idle_by_cause"]
        .as_array()?
        .iter()
        .find(|c| c["cause"] == cause)
        .and_then(|c| c["share"].as_f64())
}

fn wait_of(p: &serde_json::Value, class: &str, key: &str) -> Option<f64> {
    p["wait"]
        .as_array()?
        .iter()
        .find(|w| w["class"] == class)
        .and_then(|w| w[key].as_f64())
}
