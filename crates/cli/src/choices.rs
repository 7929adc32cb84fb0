//! The simulator's settings that `nvl72` takes as a fixed list of words. clap's `ValueEnum`
//! cannot be derived for the simulator's own types here (they belong to `nvl72-sim`, which has
//! no clap), so each has a twin with the help text `--help` lists, mapped onto it.

use clap::ValueEnum;

use nvl72_sim::run::preemption::PreemptMode;
use nvl72_sim::run::scheduler::Backfill;
use nvl72_sim::slowdown::Limits;
use nvl72_sim::studies::breakeven::Splits;

/// How backfill protects waiting jobs from the ones it starts early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackfillArg {
    /// EASY: only the first waiting job (the head) holds a reservation.
    Easy,
    /// Slurm's sched/backfill: every job it tests, in priority order, gets the earliest trays
    /// the policy would give it on the future map (running jobs end at their limits, earlier
    /// reservations taken), and a job starts now only where it delays none of them.
    Conservative,
}

impl From<BackfillArg> for Backfill {
    fn from(a: BackfillArg) -> Backfill {
        match a {
            BackfillArg::Easy => Backfill::Easy,
            BackfillArg::Conservative => Backfill::Conservative,
        }
    }
}

/// What a preempted job undergoes (Slurm's `PreemptMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PreemptModeArg {
    /// Killed and queued again: it loses the work since its last checkpoint.
    Requeue,
    /// Killed for good: its run's work is lost and it never finishes.
    Cancel,
}

impl From<PreemptModeArg> for PreemptMode {
    fn from(a: PreemptModeArg) -> PreemptMode {
        match a {
            PreemptModeArg::Requeue => PreemptMode::Requeue,
            PreemptModeArg::Cancel => PreemptMode::Cancel,
        }
    }
}

/// What happens to a job whose stretched run passes its time limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LimitsArg {
    /// It runs to its end; the overrun is counted (a site with `OverTimeLimit=UNLIMITED`, or
    /// users who set generous limits).
    Lenient,
    /// Slurm kills it at its limit (TIMEOUT, no requeue): its work is lost.
    Strict,
}

impl From<LimitsArg> for Limits {
    fn from(a: LimitsArg) -> Limits {
        match a {
            LimitsArg::Lenient => Limits::Lenient,
            LimitsArg::Strict => Limits::Strict,
        }
    }
}

/// Which split jobs pay the uniform slowdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SplitsArg {
    /// Every job on more than one rack.
    Every,
    /// Jobs on more racks than their size needs.
    Avoidable,
}

impl From<SplitsArg> for Splits {
    fn from(a: SplitsArg) -> Splits {
        match a {
            SplitsArg::Every => Splits::Every,
            SplitsArg::Avoidable => Splits::Avoidable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each twin names the simulator's values in the simulator's words (its serde names).
    #[test]
    fn every_choice_maps_onto_the_simulator_value_of_the_same_name() {
        for a in BackfillArg::value_variants() {
            let name = a.to_possible_value().unwrap().get_name().to_string();
            let b: Backfill = (*a).into();
            assert_eq!(serde_json::to_string(&b).unwrap(), format!("\"{name}\""));
        }
        for a in LimitsArg::value_variants() {
            let name = a.to_possible_value().unwrap().get_name().to_string();
            let l: Limits = (*a).into();
            assert_eq!(serde_json::to_string(&l).unwrap(), format!("\"{name}\""));
        }
        for a in SplitsArg::value_variants() {
            let name = a.to_possible_value().unwrap().get_name().to_string();
            let s: Splits = (*a).into();
            assert_eq!(format!("{s:?}").to_lowercase(), name);
        }
    }
}
