//! The simulator's side of a replay: the stream it can compare (jobs every compared policy
//! could run), its prediction for that stream, and a saved replay predicted again with the
//! simulator as it is now (`nvl72 calibrate`).

use nvl72_engine::config::Policy;

use crate::contenders::policy::{Placer, PolicyKind, SimRequest};
use crate::job::{set_offered_load, Job};
use crate::measures::policy_report::PolicyReport;
use crate::run::simulation::{simulate_all, SimConfig};
use crate::studies::calibration::{self, ensembles, Prediction, Replay};

use super::report::ReplayReport;

/// Tick phases a prediction averages (`calibration::ensemble`).
pub const ENSEMBLE: usize = 8;

/// Drops the jobs that some compared policy could never run on `racks` racks of
/// `trays_per_rack` trays (the simulator's own test, [`Placer::never_runnable`]: Slurm
/// would leave them pending for ever), restarts the clock at the first submission and,
/// with `load`, compresses arrivals back to that load on `healthy` trays.
pub fn runnable_at_load(
    jobs: Vec<Job>,
    racks: usize,
    trays_per_rack: usize,
    healthy: f64,
    load: Option<f64>,
) -> Vec<Job> {
    let policy = Policy::default();
    let mut placers: Vec<Placer> = PolicyKind::ALL
        .iter()
        .map(|&k| Placer::new(k, racks, trays_per_rack, &policy, false))
        .collect();
    let mut kept: Vec<Job> = jobs
        .into_iter()
        .filter(|j| {
            placers
                .iter_mut()
                .all(|p| !p.never_runnable(SimRequest::of(j)))
        })
        .collect();
    let first = kept.first().map_or(0, |j| j.submit);
    for (id, j) in kept.iter_mut().enumerate() {
        j.id = id;
        j.submit -= first;
    }
    if let Some(load) = load.filter(|&l| l > 0.0) {
        set_offered_load(&mut kept, healthy, load);
    }
    kept
}

/// The simulator's prediction for a replayed stream, one entry per model in each list.
pub struct Predicted {
    /// One run at tick phase 0, for the tables.
    pub runs: Vec<PolicyReport>,
    /// Occupancy while jobs wait over [`ENSEMBLE`] tick phases: (mean, range in points).
    pub occupancy: Vec<Option<(f64, f64)>>,
    /// The same for usable occupancy, when splits are priced.
    pub usable: Option<Vec<Option<(f64, f64)>>>,
    /// The same for goodput, when jobs checkpoint.
    pub goodput: Option<Vec<Option<(f64, f64)>>>,
}

/// Predicts `stream` under `models` with `cfg` (the lab modelled: [`super::lab_model`]).
pub fn predict(cfg: &SimConfig, stream: &[Job], models: &[PolicyKind]) -> Predicted {
    // The tables: one tick phase. The occupancy compared: the mean over the phases.
    let runs = simulate_all(cfg, stream, models, true, &|_, _| {});
    // Priced splits: usable occupancy, real against predicted, leads.
    let mut figures = ensembles(
        cfg,
        stream,
        models,
        ENSEMBLE,
        &[
            calibration::occupancy,
            calibration::usable,
            calibration::goodput,
        ],
    );
    let goodput = (!cfg.checkpoints.is_none()).then(|| figures.remove(2));
    let usable = (!cfg.slowdown.is_off()).then(|| figures.remove(1));
    let occupancy = figures.remove(0);
    Predicted {
        runs,
        occupancy,
        usable,
        goodput,
    }
}

/// Predicts one saved replay again with the simulator as it is now, over `members` tick
/// phases: occupancy, usable occupancy when its jobs paid their splits' slowdown, and
/// goodput when they checkpointed. `name` names it in the calibration.
pub fn predict_again(name: String, saved: &ReplayReport, members: usize) -> Result<Replay, String> {
    let real: Vec<(PolicyKind, f64, Option<f64>, Option<f64>)> = saved
        .policies
        .iter()
        .filter(|p| p.label.is_some())
        .filter_map(|p| {
            Some((
                p.policy,
                p.occupancy_while_waiting?,
                p.usable_occupancy_while_waiting,
                p.goodput_while_waiting,
            ))
        })
        .collect();
    if real.is_empty() {
        return Err("no real run in it (a --dry-run report?)".into());
    }
    let priced = !saved.sim.slowdown.is_off();
    let checkpointed = !saved.sim.checkpoints.is_none();
    let models: Vec<PolicyKind> = real.iter().map(|&(k, ..)| k).collect();
    let figures = ensembles(
        &saved.prediction_config(),
        &saved.stream,
        &models,
        members,
        &[
            calibration::occupancy,
            calibration::usable,
            calibration::goodput,
        ],
    );
    let plugins = real
        .iter()
        .enumerate()
        .filter_map(|(m, &(policy, real, real_usable, real_goodput))| {
            let usable = |x: Option<f64>| x.filter(|_| priced);
            let goodput = |x: Option<f64>| x.filter(|_| checkpointed);
            Some(Prediction {
                policy,
                real,
                predicted: figures[0][m]?.0,
                real_usable: usable(real_usable),
                predicted_usable: usable(figures[1][m].map(|f| f.0)),
                real_goodput: goodput(real_goodput),
                predicted_goodput: goodput(figures[2][m].map(|f| f.0)),
            })
        })
        .collect();
    Ok(Replay {
        name,
        racks: saved.sim.racks,
        with_failures: saved.tray_events > 0,
        priced,
        checkpointed,
        plugins,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{offered_load, HOUR};

    fn job(id: usize, submit: u64, trays: usize) -> Job {
        Job::plain(id, submit, trays, HOUR, 2 * HOUR)
    }

    #[test]
    fn jobs_that_cannot_run_are_dropped_and_the_rest_keep_the_load() {
        let nine_segments = Job {
            segment: Some(16),
            ..job(2, 2 * HOUR, 144)
        };
        let jobs = vec![
            job(0, 0, 300),
            job(1, HOUR, 4),
            nine_segments,
            job(3, 5 * HOUR, 18),
        ];
        let kept = runnable_at_load(jobs, 8, 18, 144.0, Some(0.5));
        assert_eq!(
            kept.iter().map(|j| (j.id, j.trays)).collect::<Vec<_>>(),
            [(0, 4), (1, 18)]
        );
        assert_eq!(kept[0].submit, 0, "the clock starts at the first kept job");
        assert!((offered_load(&kept, 144.0) - 0.5).abs() < 1e-3);
    }
}
