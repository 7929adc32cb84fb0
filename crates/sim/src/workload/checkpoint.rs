//! How often a job saves its progress, so that a kill loses only the work since its last
//! checkpoint: a killed job restarts with the rest of its work, and the lost part is what
//! separates goodput (work kept at NVLink speed) from usable occupancy.
//!
//! Progress is counted in work at NVLink speed, as training jobs checkpoint every so many
//! steps (Megatron's `--save-interval`, NeMo's `every_n_train_steps`): a job slowed by a split
//! takes longer between checkpoints. Writing a checkpoint is taken as free (asynchronous
//! checkpointing hides it; docs/decisions.md, "Goodput").

use serde::{Deserialize, Serialize};

use crate::job::{Millis, MINUTE};

/// The checkpoint interval `nvl72 simulate` uses unless told otherwise, in minutes of work:
/// the sources in docs/results.md, "Goodput: the checkpoint model".
pub const DEFAULT_MINUTES: u64 = 30;

/// [`DEFAULT_MINUTES`] as a setting.
pub const DEFAULT: Checkpoints = Checkpoints::Every(DEFAULT_MINUTES * MINUTE);

/// How often every job saves its progress.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Checkpoints {
    /// A killed job starts again from the beginning: all its work is lost (reports saved
    /// before the model read so).
    #[default]
    None,
    /// Every this many milliseconds of work at NVLink speed.
    Every(Millis),
}

impl Checkpoints {
    /// `none`, or a whole number of minutes of work between checkpoints.
    pub fn parse(text: &str) -> Result<Checkpoints, String> {
        let text = text.trim();
        if text == "none" {
            return Ok(Checkpoints::None);
        }
        match text.parse::<u64>() {
            Ok(m) if m > 0 => Ok(Checkpoints::Every(m * MINUTE)),
            _ => Err(format!(
                "--checkpoint-minutes: '{text}' is neither 'none' nor a whole number of minutes above 0"
            )),
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Checkpoints::None
    }

    /// The work a job has saved when it has done `progress` ms of work and had saved `before`:
    /// its last checkpoint at or before `progress`, never less than `before`.
    pub fn saved(self, before: Millis, progress: f64) -> Millis {
        match self {
            Checkpoints::None => before,
            Checkpoints::Every(every) => {
                let last = (progress.max(0.0) / every as f64).floor() as Millis * every;
                last.max(before)
            }
        }
    }

    /// A run killed after `elapsed` ms at slowdown `s`, of a job of `runtime` ms of work that
    /// had saved `before` when the run started: the work saved from now on, and the work the
    /// kill threw away (ms at NVLink speed).
    pub fn after_kill(
        self,
        before: Millis,
        runtime: Millis,
        elapsed: f64,
        s: f64,
    ) -> (Millis, f64) {
        let done = (elapsed / s.max(1.0)).min(runtime.saturating_sub(before) as f64);
        let progress = before as f64 + done.max(0.0);
        let saved = self.saved(before, progress);
        (saved, (progress - saved as f64).max(0.0))
    }

    /// The same interval on a clock `scale` times faster (a replay's real time): at least 1 ms.
    pub fn scaled_down(self, scale: f64) -> Checkpoints {
        match self {
            Checkpoints::None => Checkpoints::None,
            Checkpoints::Every(every) => {
                Checkpoints::Every(((every as f64 / scale).round() as Millis).max(1))
            }
        }
    }

    /// One line for the reports.
    pub fn describe(&self) -> String {
        match self {
            Checkpoints::None => "none (a killed job starts again from the beginning)".into(),
            Checkpoints::Every(every) => format!(
                "every {:.0} min of work (a killed job resumes from its last one)",
                *every as f64 / MINUTE as f64
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_keeps_the_work_up_to_its_last_checkpoint() {
        let hourly = Checkpoints::Every(60 * MINUTE);
        assert_eq!(hourly.saved(0, (59 * MINUTE) as f64), 0);
        assert_eq!(hourly.saved(0, (61 * MINUTE) as f64), 60 * MINUTE);
        assert_eq!(hourly.saved(0, (180 * MINUTE) as f64), 180 * MINUTE);
        assert_eq!(
            hourly.saved(120 * MINUTE, (150 * MINUTE) as f64),
            120 * MINUTE
        );
    }

    #[test]
    fn a_slowed_run_saves_less_work_in_the_same_time() {
        let hourly = Checkpoints::Every(60 * MINUTE);
        // 150 minutes at s = 1.25 are 120 minutes of work: two checkpoints, nothing lost.
        let (saved, lost) = hourly.after_kill(0, 600 * MINUTE, (150 * MINUTE) as f64, 1.25);
        assert_eq!((saved, lost), (120 * MINUTE, 0.0));
        // A run cannot do more than the work left.
        let (saved, lost) = hourly.after_kill(0, 90 * MINUTE, (500 * MINUTE) as f64, 1.0);
        assert_eq!((saved, lost), (60 * MINUTE, (30 * MINUTE) as f64));
    }

    #[test]
    fn without_checkpoints_a_kill_keeps_nothing() {
        assert_eq!(Checkpoints::None.saved(0, 1e9), 0);
    }

    #[test]
    fn the_interval_is_none_or_whole_minutes() {
        assert_eq!(Checkpoints::parse("none"), Ok(Checkpoints::None));
        assert_eq!(
            Checkpoints::parse("30"),
            Ok(Checkpoints::Every(30 * MINUTE))
        );
        for bad in ["0", "-5", "1.5", "hourly"] {
            let e = Checkpoints::parse(bad).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }
}
