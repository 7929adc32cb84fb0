//! How far the simulator is from real slurmctld: the error of its occupancy prediction on a
//! set of real replays (`scripts/replays.sh`, `nvl72 calibrate`), summarized per plugin, and
//! the band that `simulate` prints next to its own figures so that nobody reads a difference
//! smaller than the simulator's error as a finding.
//!
//! The bands shipped with the binary are `calibration.json` (Slurm's backfill, as replays
//! predict) and `calibration-easy.json` (EASY, `simulate`'s default) beside this file, written
//! by `nvl72 calibrate tests/fixtures/calibration/*.json [--backfill easy] --write ...` from
//! the last calibration run's reports; `crates/cli/tests/calibration.rs` checks they are up to date.

use serde::{Deserialize, Serialize};

use crate::contenders::policy::PolicyKind;
use crate::job::Job;
use crate::measures::policy_report::PolicyReport;
use crate::run::scheduler::Backfill;
use crate::run::simulation::{simulate_all, SimConfig};

/// One figure of a policy's report that calibration compares with the real run.
pub type Figure = fn(&PolicyReport) -> Option<f64>;

/// Occupancy while jobs wait.
pub fn occupancy(r: &PolicyReport) -> Option<f64> {
    r.occupancy_while_waiting
}

/// Usable occupancy while jobs wait (GPU time ÷ each job's slowdown).
pub fn usable(r: &PolicyReport) -> Option<f64> {
    r.usable_occupancy_while_waiting
}

/// Goodput while jobs wait (usable occupancy less the work kills threw away).
pub fn goodput(r: &PolicyReport) -> Option<f64> {
    r.goodput_while_waiting
}

/// Which figure a group of errors is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    Occupancy,
    /// In the replays whose jobs paid their splits' slowdown.
    Usable,
    /// In the replays whose requeued jobs resumed from their checkpoints.
    Goodput,
}

/// Occupancy while jobs wait, per model: the mean over `members` runs whose scheduling
/// passes fall at evenly spread phases of `cfg.sched_period`, and the range of the members
/// (points). Which instant of slurmctld's tick an event lands on is chance, and one phase
/// can redirect a whole run (a big job starts a tick earlier or later), so the mean is the
/// prediction and the range says how far one run may stray.
pub fn ensemble(
    cfg: &SimConfig,
    jobs: &[Job],
    models: &[PolicyKind],
    members: usize,
) -> Vec<Option<(f64, f64)>> {
    ensembles(cfg, jobs, models, members, &[occupancy]).remove(0)
}

/// [`ensemble`] of several figures from the same runs: one list per figure, one entry per
/// model (the members run once, whatever the number of figures).
pub fn ensembles(
    cfg: &SimConfig,
    jobs: &[Job],
    models: &[PolicyKind],
    members: usize,
    figures: &[Figure],
) -> Vec<Vec<Option<(f64, f64)>>> {
    let period = cfg.sched_period.filter(|&p| p > 0);
    let members = if period.is_some() { members.max(1) } else { 1 };
    let mut runs: Vec<Vec<PolicyReport>> = Vec::new();
    for i in 0..members {
        let mut c = cfg.clone();
        c.tick_phase = period.map_or(0, |p| p * i as u64 / members as u64);
        runs.push(simulate_all(&c, jobs, models, true, &|_, _| {}));
    }
    figures
        .iter()
        .map(|figure| {
            (0..models.len())
                .map(|m| {
                    let xs: Vec<f64> = runs.iter().filter_map(|r| figure(&r[m])).collect();
                    (!xs.is_empty()).then(|| {
                        let lo = xs.iter().copied().fold(f64::MAX, f64::min);
                        let hi = xs.iter().copied().fold(f64::MIN, f64::max);
                        (mean(&xs), (hi - lo) * 100.0)
                    })
                })
                .collect()
        })
        .collect()
}

/// One plugin in one replay: occupancy while jobs wait, real and predicted (shares, 0-1),
/// and usable occupancy when the replay's jobs paid their splits' slowdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub policy: PolicyKind,
    pub real: f64,
    pub predicted: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_usable: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_usable: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_goodput: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_goodput: Option<f64>,
}

impl Prediction {
    /// Real minus predicted occupancy, in points.
    pub fn error_points(&self) -> f64 {
        (self.real - self.predicted) * 100.0
    }

    /// Real minus predicted usable occupancy, in points, when both were measured.
    pub fn usable_error_points(&self) -> Option<f64> {
        Some((self.real_usable? - self.predicted_usable?) * 100.0)
    }

    /// Real minus predicted goodput, in points, when both were measured.
    pub fn goodput_error_points(&self) -> Option<f64> {
        Some((self.real_goodput? - self.predicted_goodput?) * 100.0)
    }
}

/// One real replay and the simulator's prediction of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    pub name: String,
    pub racks: usize,
    /// Trays failed during the run (drains and requeues).
    pub with_failures: bool,
    /// Its jobs ran for their run time × the slowdown of the racks Slurm gave them.
    #[serde(default)]
    pub priced: bool,
    /// Its jobs saved their progress and a requeued job resumed from its last checkpoint.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checkpointed: bool,
    pub plugins: Vec<Prediction>,
}

/// The error of one plugin's predictions over a group of replays, in points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginError {
    pub policy: PolicyKind,
    pub replays: usize,
    /// Mean of real minus predicted: the bias.
    pub mean: f64,
    pub mean_abs: f64,
    pub max_abs: f64,
    /// Predictions within 3 points of the real run.
    pub within_3: usize,
}

/// Errors over a group of replays (without failures, or with).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupError {
    pub replays: usize,
    pub per_plugin: Vec<PluginError>,
    /// Mean absolute error over every prediction of the group.
    pub mean_abs: f64,
    pub max_abs: f64,
}

/// The whole calibration: what `nvl72 calibrate` prints and `simulate` quotes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// When the real replays ran (the newest report's date, `YYYY-MM-DD`).
    pub date: String,
    /// The backfill model the predictions used.
    pub backfill: Backfill,
    pub without_failures: GroupError,
    pub with_failures: GroupError,
    /// The same on usable occupancy, over the priced replays only.
    #[serde(default)]
    pub usable_without_failures: GroupError,
    #[serde(default)]
    pub usable_with_failures: GroupError,
    /// The same on goodput, over the replays whose jobs checkpointed only.
    #[serde(default, skip_serializing_if = "GroupError::is_empty")]
    pub goodput_without_failures: GroupError,
    #[serde(default, skip_serializing_if = "GroupError::is_empty")]
    pub goodput_with_failures: GroupError,
    /// The largest real difference for one plugin between two runs of one stream, in points.
    pub real_spread: Option<f64>,
    /// Replays whose real ranking of two plugins differs by more than the spread, and of
    /// those, how many the simulator ranks the same way on every such pair.
    pub ranked: usize,
    pub ranking_held: usize,
    /// Each replay, for the record.
    pub replays: Vec<Replay>,
}

impl Calibration {
    /// Summarizes `replays`; `real_spread` from runs of the same stream (see [`spread`]).
    pub fn new(
        date: String,
        backfill: Backfill,
        replays: Vec<Replay>,
        real_spread: Option<f64>,
    ) -> Calibration {
        let group = |f: bool, error: ErrorOf| {
            let of: Vec<&Replay> = replays.iter().filter(|r| r.with_failures == f).collect();
            group_error(&of, error)
        };
        let margin = real_spread.unwrap_or(0.0);
        let ranked: Vec<&Replay> = replays
            .iter()
            .filter(|r| !pairs_apart(r, margin).is_empty())
            .collect();
        let held = ranked
            .iter()
            .filter(|r| {
                pairs_apart(r, margin).iter().all(|&(a, b)| {
                    let real = a.real - b.real;
                    let sim = a.predicted - b.predicted;
                    real.signum() == sim.signum()
                })
            })
            .count();
        Calibration {
            date,
            backfill,
            without_failures: group(false, |p| Some(p.error_points())),
            with_failures: group(true, |p| Some(p.error_points())),
            usable_without_failures: group(false, Prediction::usable_error_points),
            usable_with_failures: group(true, Prediction::usable_error_points),
            goodput_without_failures: group(false, Prediction::goodput_error_points),
            goodput_with_failures: group(true, Prediction::goodput_error_points),
            real_spread,
            ranked: ranked.len(),
            ranking_held: held,
            replays,
        }
    }

    fn group(&self, with_failures: bool, figure: Measured) -> &GroupError {
        match (with_failures, figure) {
            (false, Measured::Occupancy) => &self.without_failures,
            (true, Measured::Occupancy) => &self.with_failures,
            (false, Measured::Usable) => &self.usable_without_failures,
            (true, Measured::Usable) => &self.usable_with_failures,
            (false, Measured::Goodput) => &self.goodput_without_failures,
            (true, Measured::Goodput) => &self.goodput_with_failures,
        }
    }

    /// The mean absolute error in points on occupancy while jobs wait, `None` when the set
    /// has no such replays.
    pub fn margin(&self, with_failures: bool) -> Option<f64> {
        let g = self.group(with_failures, Measured::Occupancy);
        (g.replays > 0).then_some(g.mean_abs)
    }

    /// [`Self::margin`] on usable occupancy, from the priced replays; `None` without any.
    pub fn usable_margin(&self, with_failures: bool) -> Option<f64> {
        let g = self.group(with_failures, Measured::Usable);
        (g.replays > 0).then_some(g.mean_abs)
    }

    /// Each policy's own mean absolute error on occupancy (`usable`: on usable occupancy,
    /// from the priced replays): a difference between two policies is a finding only beyond
    /// the larger of their two.
    pub fn policy_margins(&self, with_failures: bool, figure: Measured) -> PolicyMargins {
        PolicyMargins(
            self.group(with_failures, figure)
                .per_plugin
                .iter()
                .map(|p| (p.policy, p.mean_abs))
                .collect(),
        )
    }

    /// The band `simulate` prints: one line, or `None` when the set has no such replays.
    pub fn band(&self, with_failures: bool) -> Option<String> {
        self.describe(with_failures, Measured::Occupancy)
    }

    /// [`Self::band`] on usable occupancy, from the priced replays.
    pub fn usable_band(&self, with_failures: bool) -> Option<String> {
        self.describe(with_failures, Measured::Usable)
    }

    /// [`Self::band`] on goodput, from the replays whose jobs checkpointed.
    pub fn goodput_band(&self, with_failures: bool) -> Option<String> {
        self.describe(with_failures, Measured::Goodput)
    }

    fn describe(&self, with_failures: bool, figure: Measured) -> Option<String> {
        let g = self.group(with_failures, figure);
        (g.replays > 0).then(|| {
            let per_policy: Vec<String> = g
                .per_plugin
                .iter()
                .map(|p| format!("{} ±{:.1}", p.policy, p.mean_abs))
                .collect();
            format!(
                "±{:.1} points (mean; at most {:.1}; per policy {}) from {} real slurmctld replays {} failures{}, {}, {} backfill model",
                g.mean_abs,
                g.max_abs,
                per_policy.join(", "),
                g.replays,
                if with_failures { "with" } else { "without" },
                match figure {
                    Measured::Occupancy => "",
                    Measured::Usable => " whose jobs paid their splits' slowdown",
                    Measured::Goodput => " whose requeued jobs resumed from their checkpoints",
                },
                self.date,
                match self.backfill {
                    Backfill::Conservative => "Slurm's",
                    Backfill::Easy => "EASY",
                }
            )
        })
    }

    /// The calibration shipped with this build for a backfill model: `calibration.json`
    /// (Slurm's, as replays predict) or `calibration-easy.json` beside this file, both from
    /// the same replays (`nvl72 calibrate --backfill easy --write ...`).
    pub fn shipped(backfill: Backfill) -> Option<Calibration> {
        let text = match backfill {
            Backfill::Conservative => include_str!("calibration.json"),
            Backfill::Easy => include_str!("calibration-easy.json"),
        };
        serde_json::from_str(text).ok()
    }
}

/// Each policy's measured error in points ([`Calibration::policy_margins`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyMargins(pub Vec<(PolicyKind, f64)>);

impl PolicyMargins {
    pub fn of(&self, policy: PolicyKind) -> Option<f64> {
        self.0.iter().find(|(p, _)| *p == policy).map(|&(_, m)| m)
    }

    /// How far apart `a` and `b` must be for the difference to be a finding: the larger of
    /// their two errors (`None` when neither was measured).
    pub fn between(&self, a: PolicyKind, b: PolicyKind) -> Option<f64> {
        match (self.of(a), self.of(b)) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Pairs of plugins whose real occupancy differs by more than `margin` points.
fn pairs_apart(r: &Replay, margin: f64) -> Vec<(&Prediction, &Prediction)> {
    let mut out = Vec::new();
    for (i, a) in r.plugins.iter().enumerate() {
        for b in &r.plugins[i + 1..] {
            if ((a.real - b.real) * 100.0).abs() > margin {
                out.push((a, b));
            }
        }
    }
    out
}

/// The error of one prediction in points, `None` when it was not measured.
type ErrorOf = fn(&Prediction) -> Option<f64>;

fn group_error(replays: &[&Replay], error: ErrorOf) -> GroupError {
    let replays: Vec<&Replay> = replays
        .iter()
        .copied()
        .filter(|r| r.plugins.iter().any(|p| error(p).is_some()))
        .collect();
    let mut policies: Vec<PolicyKind> = replays
        .iter()
        .flat_map(|r| r.plugins.iter().filter(|p| error(p).is_some()))
        .map(|p| p.policy)
        .collect();
    policies.sort();
    policies.dedup();
    let per_plugin: Vec<PluginError> = policies
        .into_iter()
        .map(|policy| {
            let errors: Vec<f64> = replays
                .iter()
                .flat_map(|r| r.plugins.iter())
                .filter(|p| p.policy == policy)
                .filter_map(error)
                .collect();
            PluginError {
                policy,
                replays: errors.len(),
                mean: mean(&errors),
                mean_abs: mean(&errors.iter().map(|e| e.abs()).collect::<Vec<_>>()),
                max_abs: errors.iter().fold(0.0, |m, e| m.max(e.abs())),
                within_3: errors.iter().filter(|e| e.abs() <= 3.0).count(),
            }
        })
        .collect();
    let all: Vec<f64> = replays
        .iter()
        .flat_map(|r| r.plugins.iter().filter_map(error))
        .map(f64::abs)
        .collect();
    GroupError {
        replays: replays.len(),
        per_plugin,
        mean_abs: mean(&all),
        max_abs: all.iter().fold(0.0, |m, &e| m.max(e)),
    }
}

impl GroupError {
    pub fn is_empty(&self) -> bool {
        self.replays == 0
    }
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// The largest real difference, in points, for one plugin between two runs of one stream.
pub fn spread(runs_of_one_stream: &[&Replay]) -> Option<f64> {
    let mut worst: Option<f64> = None;
    for (i, a) in runs_of_one_stream.iter().enumerate() {
        for b in &runs_of_one_stream[i + 1..] {
            for p in &a.plugins {
                if let Some(q) = b.plugins.iter().find(|q| q.policy == p.policy) {
                    let d = ((p.real - q.real) * 100.0).abs();
                    worst = Some(worst.map_or(d, |w: f64| w.max(d)));
                }
            }
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay(name: &str, failures: bool, plugins: &[(PolicyKind, f64, f64)]) -> Replay {
        Replay {
            name: name.into(),
            racks: 8,
            with_failures: failures,
            priced: false,
            checkpointed: false,
            plugins: plugins
                .iter()
                .map(|&(policy, real, predicted)| Prediction {
                    policy,
                    real,
                    predicted,
                    real_usable: None,
                    predicted_usable: None,
                    real_goodput: None,
                    predicted_goodput: None,
                })
                .collect(),
        }
    }

    use PolicyKind::{Block, Naive, Nvl72};

    #[test]
    fn errors_are_real_minus_predicted_per_plugin_and_split_by_failures() {
        let set = vec![
            replay("a", false, &[(Nvl72, 0.80, 0.78), (Block, 0.75, 0.79)]),
            replay("b", false, &[(Nvl72, 0.82, 0.83), (Block, 0.70, 0.70)]),
            replay("c", true, &[(Nvl72, 0.60, 0.70)]),
        ];
        let c = Calibration::new("2026-12-01".into(), Backfill::Conservative, set, None);
        let nvl72 = &c.without_failures.per_plugin[0];
        assert_eq!(nvl72.policy, Nvl72);
        assert!((nvl72.mean - 0.5).abs() < 1e-9, "(+2 - 1) / 2");
        assert!((nvl72.max_abs - 2.0).abs() < 1e-9);
        let block = &c.without_failures.per_plugin[1];
        assert_eq!(
            (block.within_3, block.replays),
            (1, 2),
            "-4 points is outside"
        );
        assert_eq!(c.with_failures.replays, 1);
        assert!((c.with_failures.max_abs - 10.0).abs() < 1e-9);
        assert!(c.band(true).unwrap().starts_with("±10.0 points"));
    }

    #[test]
    fn the_ranking_counts_only_differences_larger_than_the_real_spread() {
        let set = vec![
            // 1 point apart in reality, the simulator disagrees: inside a 2-point spread.
            replay("close", false, &[(Nvl72, 0.80, 0.78), (Block, 0.79, 0.80)]),
            // 5 points apart, the simulator agrees.
            replay("apart", false, &[(Nvl72, 0.80, 0.80), (Block, 0.75, 0.76)]),
            // 5 points apart, the simulator puts them the other way round.
            replay("wrong", false, &[(Nvl72, 0.80, 0.75), (Naive, 0.85, 0.74)]),
        ];
        let c = Calibration::new("d".into(), Backfill::Conservative, set, Some(2.0));
        assert_eq!((c.ranking_held, c.ranked), (1, 2));
    }

    #[test]
    fn the_spread_is_the_largest_difference_between_runs_of_one_stream() {
        let a = replay("s", false, &[(Nvl72, 0.80, 0.0), (Block, 0.70, 0.0)]);
        let b = replay("s-again", false, &[(Nvl72, 0.78, 0.0), (Block, 0.73, 0.0)]);
        assert!((spread(&[&a, &b]).unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(spread(&[&a]), None);
    }

    #[test]
    fn the_usable_band_comes_from_the_priced_replays_only() {
        let mut priced = replay("p", true, &[(Nvl72, 0.80, 0.79), (Block, 0.75, 0.76)]);
        priced.priced = true;
        priced.plugins[0].real_usable = Some(0.70);
        priced.plugins[0].predicted_usable = Some(0.73);
        priced.plugins[1].real_usable = Some(0.74);
        priced.plugins[1].predicted_usable = Some(0.73);
        let plain = replay("q", true, &[(Nvl72, 0.80, 0.70)]);
        let c = Calibration::new(
            "d".into(),
            Backfill::Conservative,
            vec![priced, plain],
            None,
        );
        assert_eq!(c.usable_with_failures.replays, 1);
        assert!(
            (c.usable_margin(true).unwrap() - 2.0).abs() < 1e-9,
            "(3 + 1) / 2"
        );
        assert!((c.usable_with_failures.max_abs - 3.0).abs() < 1e-9);
        assert_eq!(
            c.usable_margin(false),
            None,
            "no priced replay without failures"
        );
        assert_eq!(c.with_failures.replays, 2, "occupancy counts both");
        assert!(c
            .usable_band(true)
            .unwrap()
            .starts_with("±2.0 points (mean; at most 3.0; per policy nvl72 ±3.0, block ±1.0) from 1 real slurmctld replays with failures whose jobs paid"));
        let margins = c.policy_margins(true, Measured::Usable);
        let near = |x: Option<f64>, y: f64| (x.unwrap() - y).abs() < 1e-9;
        assert!(near(margins.of(Nvl72), 3.0));
        assert!(
            near(margins.between(Nvl72, Block), 3.0),
            "the larger of the two"
        );
        assert!(
            near(margins.between(Block, Naive), 1.0),
            "naive not measured"
        );
    }

    #[test]
    fn the_shipped_calibration_parses() {
        assert!(Calibration::shipped(Backfill::Conservative).is_some());
        assert!(Calibration::shipped(Backfill::Easy).is_some());
    }
}
