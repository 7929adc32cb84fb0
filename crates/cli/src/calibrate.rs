//! `nvl72 calibrate`: the simulator as it is now, against real replays made earlier
//! (`nvl72 replay --json`, `scripts/replays.sh`). Each report carries the stream exactly as
//! Slurm got it and the simulator settings the replay assumed, so every prediction is made
//! again and compared with the real run; the summary is per plugin, with and without failures.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use nvl72_sim::replay::lab_model::fill_in;
use nvl72_sim::replay::predict::{predict_again, ENSEMBLE};
use nvl72_sim::replay::report::ReplayReport;
use nvl72_sim::run::scheduler::Backfill;
use nvl72_sim::studies::calibration::{spread, Calibration, GroupError, Prediction, Replay};

use crate::choices::BackfillArg;

#[derive(Args)]
pub struct CalibrateArgs {
    /// `nvl72 replay --json` reports (`scripts/replays.sh` leaves one per workload)
    #[arg(required = true)]
    reports: Vec<PathBuf>,
    /// Write the summary as JSON (`crates/sim/src/studies/calibration.json` is the one `simulate` quotes)
    #[arg(long, value_name = "FILE")]
    write: Option<PathBuf>,
    /// Predict with this backfill model instead of the one each replay assumed
    #[arg(long, value_enum)]
    backfill: Option<BackfillArg>,
    /// Predict with jobs holding their trays this many real seconds longer than they run
    #[arg(long, value_name = "SECONDS")]
    run_overhead_s: Option<f64>,
    /// Runs per prediction, their scheduling passes at evenly spread phases of the tick
    #[arg(long, default_value_t = ENSEMBLE)]
    members: usize,
}

/// A saved replay and when it ran (older reports: the file's time).
fn read(path: &Path) -> Result<(ReplayReport, String), String> {
    let saved = ReplayReport::read(path)?;
    let date = match &saved.date {
        Some(d) => d.clone(),
        None => {
            let modified = std::fs::metadata(path)
                .and_then(|m| m.modified())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            super::replay::day(modified)
        }
    };
    Ok((saved, date))
}

pub fn calibrate(a: &CalibrateArgs) -> Result<(), String> {
    let mut replays = Vec::new();
    let mut streams: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut dates = Vec::new();
    let mut settings = Vec::new();
    let mut backfill = Backfill::Conservative;
    for path in &a.reports {
        let (mut saved, date) = read(path)?;
        if let Some(b) = a.backfill {
            saved.sim.backfill = b.into();
        }
        backfill = saved.sim.backfill;
        // Reports from before these were modelled: the labs' own values; the driver's
        // requeue as measured, whatever the report's simulator assumed.
        fill_in(&mut saved.sim, saved.scale);
        if let Some(s) = a.run_overhead_s {
            saved.sim.run_overhead = Some((s * 1000.0 * saved.scale).round() as u64);
        }
        let name = path
            .file_stem()
            .map_or("?".into(), |s| s.to_string_lossy().into_owned());
        let replay = predict_again(name, &saved, a.members)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // The same stream run again: a priced run of it, or one whose jobs checkpoint, is
        // another experiment.
        let key =
            serde_json::to_string(&(&saved.stream, &saved.sim.slowdown, &saved.sim.checkpoints))
                .map_err(|e| e.to_string())?;
        streams.entry(key).or_default().push(replays.len());
        dates.push(date);
        if !saved.slurm_settings.is_empty() {
            settings.push(saved.slurm_settings.clone());
        }
        replays.push(replay);
    }
    let same: Vec<Vec<usize>> = streams.into_values().filter(|ids| ids.len() > 1).collect();
    let real_spread = same
        .iter()
        .filter_map(|ids| spread(&ids.iter().map(|&i| &replays[i]).collect::<Vec<_>>()))
        .reduce(f64::max);
    let same: Vec<Vec<String>> = same
        .iter()
        .map(|ids| ids.iter().map(|&i| replays[i].name.clone()).collect())
        .collect();
    dates.sort();
    let date = dates.last().cloned().unwrap_or_default();
    settings.sort();
    settings.dedup();
    let c = Calibration::new(date, backfill, replays, real_spread);
    print!("{}", table(&c, &settings, &same));
    if let Some(path) = &a.write {
        let json = serde_json::to_string_pretty(&c).map_err(|e| e.to_string())?;
        crate::output::write_file(path, json + "\n")?;
    }
    Ok(())
}

/// Real and predicted shares of one prediction, when it has them.
type Pair = fn(&Prediction) -> Option<(f64, f64)>;

fn table(c: &Calibration, settings: &[String], same: &[Vec<String>]) -> String {
    use std::fmt::Write;
    let mut out =
        String::from("Occupancy while jobs wait: real slurmctld vs the simulator as it is now\n\n");
    out.push_str(&rows(&c.replays, |p| Some((p.real, p.predicted))));
    out.push_str(&groups(&[
        ("no failures", &c.without_failures),
        ("failures", &c.with_failures),
    ]));
    if c.replays.iter().any(|r| r.priced) {
        out.push_str(&section(
            "Usable occupancy while jobs wait (GPU time ÷ each job's slowdown), in the replays whose jobs paid it",
            &c.replays,
            |p| Some((p.real_usable?, p.predicted_usable?)),
            &[
                ("usable, no failures", &c.usable_without_failures),
                ("usable, failures", &c.usable_with_failures),
            ],
        ));
    }
    if c.replays.iter().any(|r| r.checkpointed) {
        out.push_str(&section(
            "Goodput while jobs wait (usable, less the work kills threw away), in the replays whose requeued jobs resumed from their checkpoints",
            &c.replays,
            |p| Some((p.real_goodput?, p.predicted_goodput?)),
            &[
                ("goodput, no failures", &c.goodput_without_failures),
                ("goodput, failures", &c.goodput_with_failures),
            ],
        ));
    }
    out.push('\n');
    for names in same {
        let _ = writeln!(out, "same stream: {}", names.join(", "));
    }
    match c.real_spread {
        Some(s) => {
            let _ = writeln!(
                out,
                "real run-to-run spread: {s:.2} points (the largest difference for one plugin between runs of one stream)"
            );
        }
        None => out.push_str("real run-to-run spread: unknown (no stream was run twice)\n"),
    }
    let _ = writeln!(
        out,
        "ranking of the plugins held in {} of {} replays where the real runs differ by more than the spread",
        c.ranking_held, c.ranked
    );
    for with in [false, true] {
        if let Some(b) = c.band(with) {
            let _ = writeln!(out, "band: {b}");
        }
    }
    for with in [false, true] {
        if let Some(b) = c.usable_band(with) {
            let _ = writeln!(out, "usable band: {b}");
        }
    }
    for with in [false, true] {
        if let Some(b) = c.goodput_band(with) {
            let _ = writeln!(out, "goodput band: {b}");
        }
    }
    for s in settings {
        let _ = writeln!(out, "slurmctld SchedulerParameters in every lab: {s}");
    }
    out
}

/// A titled table of the replays that have the `pair`, then its groups' summary.
fn section(title: &str, replays: &[Replay], pair: Pair, summary: &[(&str, &GroupError)]) -> String {
    format!("\n{title}\n\n{}{}", rows(replays, pair), groups(summary))
}

/// One row per plugin and replay that has the `pair`.
fn rows(replays: &[Replay], pair: Pair) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "| Replay | Racks | Failures | Plugin | Real % | Simulator % | Real − sim, points |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in replays {
        let measured = r.plugins.iter().filter_map(|p| Some((p, pair(p)?)));
        for (i, (p, (real, sim))) in measured.enumerate() {
            let (name, racks, fail) = if i == 0 {
                (
                    r.name.as_str(),
                    r.racks.to_string(),
                    if r.with_failures { "yes" } else { "no" },
                )
            } else {
                ("", String::new(), "")
            };
            let _ = writeln!(
                out,
                "| {name} | {racks} | {fail} | {} | {:.2} | {:.2} | {:+.2} |",
                p.policy,
                real * 100.0,
                sim * 100.0,
                (real - sim) * 100.0
            );
        }
    }
    out
}

/// The summary rows per plugin of some groups of replays.
fn groups(groups: &[(&str, &GroupError)]) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "\n| Group | Plugin | Replays | Mean real − sim | Mean abs | Max abs | Within 3 points |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for (label, g) in groups {
        for p in &g.per_plugin {
            let _ = writeln!(
                out,
                "| {label} | {} | {} | {:+.2} | {:.2} | {:.2} | {} of {} |",
                p.policy, p.replays, p.mean, p.mean_abs, p.max_abs, p.within_3, p.replays
            );
        }
    }
    out
}
