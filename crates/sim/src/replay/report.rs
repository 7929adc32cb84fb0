//! The replay report (`nvl72 replay --json`, and `replay.json` in each run's folder): the
//! command writes it, `nvl72 calibrate` and `nvl72 summarize` read it back through these
//! types. Fields added after the first saved reports read as empty when a report lacks them.

use nvl72_engine::config::SegmentPlacement;
use serde::{Deserialize, Serialize};

use super::timeline::Fidelity;
use crate::contenders::policy::PolicyKind;
use crate::job::Job;
use crate::measures::policy_report::PolicyReport;
use crate::reports::report::WorkloadInfo;
use crate::run::simulation::SimConfig;

/// One `nvl72 replay` run: real Slurm (labelled policies) and the simulator's prediction for
/// the same stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    pub workload: WorkloadInfo,
    pub sim: SimConfig,
    /// Simulated milliseconds per real millisecond.
    pub scale: f64,
    pub real_minutes: f64,
    pub jobs_left_out: usize,
    pub tray_events: usize,
    /// Real Slurm (labelled) then the simulator's prediction for the same stream.
    pub policies: Vec<PolicyReport>,
    /// The simulator's occupancy while jobs wait: the mean over the ensemble's tick phases,
    /// and the range of the phases in points.
    #[serde(default)]
    pub prediction: Vec<(PolicyKind, Option<(f64, f64)>)>,
    /// How well each lab's log matched the schedule, by topology plugin (`nvl72`, `block`,
    /// `none`).
    #[serde(default)]
    pub fidelity: Vec<(String, Fidelity)>,
    /// slurmctld's scheduling settings in every lab, which the prediction assumes.
    #[serde(default)]
    pub slurm_settings: String,
    /// The stream exactly as Slurm got it, in simulated time: `nvl72 calibrate` predicts it
    /// again with a later simulator.
    pub stream: Vec<Job>,
    /// When the replay ran, `YYYY-MM-DD` (UTC); older reports: none (calibrate takes the
    /// file's time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The labs' Slurm series.
    #[serde(default)]
    pub series: String,
    /// `--cloud`: what it measures, and the driver's ends per lab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<CloudReport>,
    /// The `prefer_piece_multiple` the labs' topology/nvl72 ran with (its default: the labs
    /// write no `[policy]`). Reports from before the key: none, which ran as 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefer_piece_multiple: Option<u32>,
    /// The `segment_placement` the labs' topology/nvl72 ran with (its default). Reports from
    /// before the key: none, which ran as `best-fit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment_placement: Option<SegmentPlacement>,
}

impl ReplayReport {
    /// The simulator configuration that predicts this run: the report's, with the nvl72
    /// engine's policy as the labs' plugin had it.
    pub fn prediction_config(&self) -> SimConfig {
        let mut cfg = self.sim.clone();
        cfg.policy.prefer_piece_multiple = self.prefer_piece_multiple.unwrap_or(1);
        cfg.policy.segment_placement = self.segment_placement.unwrap_or(SegmentPlacement::BestFit);
        cfg
    }
}

impl ReplayReport {
    /// Reads a saved report; errors name the file.
    pub fn read(path: &std::path::Path) -> Result<ReplayReport, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}: not a replay report with its stream (from `nvl72 replay --json` of this version): {e}",
                path.display()
            )
        })
    }
}

/// What a `--cloud` replay is, and how the driver's ends went in each lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloudReport {
    pub note: String,
    /// By topology plugin, as in [`ReplayReport::fidelity`].
    pub ends: Vec<(String, CloudEnds)>,
}

/// What the ends cost and how late they came, for the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CloudEnds {
    /// Jobs ended by `slurm_complete_job`.
    pub ended: usize,
    /// Calls Slurm refused (the first few in `errors`).
    pub failed: usize,
    pub errors: Vec<String>,
    /// Batches sent, each followed by one no-op node update (the scheduler kick).
    pub batches: usize,
    /// Kicks Slurm refused.
    pub kicks_failed: usize,
    /// Real milliseconds from an end's due time (start in the log + run time) to the reply
    /// of its `slurm_complete_job`: mean, 99th percentile and max.
    pub late_mean_ms: f64,
    pub late_p99_ms: i64,
    pub late_max_ms: i64,
    /// Starts the driver read in the log.
    pub starts_seen: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> Vec<std::path::PathBuf> {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/calibration"
        );
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .expect("the calibration fixtures")
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        files
    }

    #[test]
    fn every_calibration_fixture_reads_as_a_replay_report() {
        let files = fixtures();
        assert!(files.len() >= 20, "{files:?}");
        for f in files {
            let r = ReplayReport::read(&f).unwrap();
            assert!(!r.stream.is_empty(), "{}", f.display());
            assert!(
                r.policies.iter().any(|p| p.label.is_some()),
                "{}: no real run",
                f.display()
            );
        }
    }

    #[test]
    fn a_report_reads_back_as_written() {
        let mut r = ReplayReport::read(&fixtures()[0]).unwrap();
        r.cloud = Some(CloudReport {
            note: "--cloud".into(),
            ends: vec![(
                "nvl72".into(),
                CloudEnds {
                    ended: 3,
                    ..CloudEnds::default()
                },
            )],
        });
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<ReplayReport>(&text).unwrap(), r);
    }

    #[test]
    fn an_error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("simulate.json");
        std::fs::write(&path, "{\"workload\": {}}").unwrap();
        let e = ReplayReport::read(&path).unwrap_err();
        assert!(e.starts_with(&path.display().to_string()), "{e}");
    }
}
