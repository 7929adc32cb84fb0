//! A job trace in CSV (`submit_s,gpus,runtime_s[,attempts]`) as a job stream, mapped onto
//! 4-GPU trays: the Philly trace (Microsoft, Jeon et al., USENIX ATC 2019), the LLM-era
//! Acme/Kalos sample (Hu et al., NSDI 2024), or any trace a site converts to these columns.

use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::job::{set_offered_load, time_limit, Job, SECOND};

/// The file name of the Philly trace in the shared data folder.
pub const PHILLY_FILE: &str = "philly-multigpu-jobs.csv";

/// One line of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceRow {
    pub submit_s: u64,
    pub gpus: u32,
    pub runtime_s: u64,
    /// How many times it was scheduled (1 when the trace has no such column); its run time
    /// is the sum over them.
    pub attempts: u32,
}

/// Where the Philly trace is when no file is given: `data/` of the working directory (a
/// clone), else where the Debian package installs it, else `data/` of the source tree this
/// binary was built from.
pub fn philly_path() -> PathBuf {
    let candidates = [
        Path::new("data").join(PHILLY_FILE),
        Path::new(INSTALLED_DATA).join(PHILLY_FILE),
    ];
    candidates
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../data")
                .join(PHILLY_FILE)
        })
}

/// The traces' folder in the Debian package (Cargo.toml's `package.metadata.deb` assets).
const INSTALLED_DATA: &str = "/usr/share/topology-nvl72/data";

const HEADER: &str = "submit_s,gpus,runtime_s";

/// Parses the CSV: the header `submit_s,gpus,runtime_s` or `submit_s,gpus,runtime_s,attempts`,
/// then one job a line. Blank lines are skipped; anything else that is not whole numbers in
/// those columns is an error naming its line.
pub fn parse(text: &str) -> Result<Vec<TraceRow>, String> {
    let mut lines = text.lines().enumerate();
    let columns = match lines.next().map(|(_, h)| h.trim()) {
        Some(HEADER) => 3,
        Some(h) if h == format!("{HEADER},attempts") => 4,
        other => {
            return Err(format!(
                "line 1: expected the header `{HEADER}` or `{HEADER},attempts`, got {:?}",
                other.unwrap_or("")
            ))
        }
    };
    lines
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let f: Vec<&str> = l.trim().split(',').collect();
            let bad = || {
                format!(
                    "line {}: expected {columns} whole numbers ({}), got `{l}`",
                    i + 1,
                    if columns == 3 {
                        HEADER.to_string()
                    } else {
                        format!("{HEADER},attempts")
                    }
                )
            };
            if f.len() != columns {
                return Err(bad());
            }
            let row = TraceRow {
                submit_s: f[0].parse().map_err(|_| bad())?,
                gpus: f[1].parse().map_err(|_| bad())?,
                runtime_s: f[2].parse().map_err(|_| bad())?,
                attempts: match f.get(3) {
                    Some(a) => a.parse().map_err(|_| bad())?,
                    None => 1,
                },
            };
            if row.gpus == 0 {
                return Err(format!("line {}: a job of 0 GPUs", i + 1));
            }
            Ok(row)
        })
        .collect()
}

pub fn read(path: &Path) -> Result<Vec<TraceRow>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// How to turn the trace into a workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceSpec {
    /// Multiply every job's tray count by this (rounded, at least 1).
    pub scale_sizes: f64,
    /// Compress or stretch submit times to this offered load; `None` keeps the trace's times.
    pub load: Option<f64>,
    pub healthy_trays: f64,
    pub gpus_per_tray: u32,
    /// Only the first jobs (by submit time).
    pub max_jobs: Option<usize>,
    /// Seed for the time limits.
    pub seed: u64,
}

/// Trays = `max(1, round(ceil(gpus / gpus_per_tray) * scale_sizes))`; no `--segment` (the
/// trace has none); time limits as [`time_limit`]; submit times scaled by one factor so the
/// offered load is `load`.
pub fn workload(rows: &[TraceRow], spec: &TraceSpec) -> Result<Vec<Job>, String> {
    if spec.scale_sizes <= 0.0 {
        return Err("--scale-sizes must be positive".into());
    }
    let mut rows = rows.to_vec();
    rows.sort_by_key(|r| r.submit_s); // stable: ties keep file order
    rows.truncate(spec.max_jobs.unwrap_or(usize::MAX));
    if rows.is_empty() {
        return Err("the trace has no jobs".into());
    }
    let first = rows[0].submit_s;
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let mut jobs: Vec<Job> = rows
        .iter()
        .enumerate()
        .map(|(id, r)| {
            let trays = r.gpus.div_ceil(spec.gpus_per_tray) as f64 * spec.scale_sizes;
            let runtime = (r.runtime_s * SECOND).max(SECOND);
            Job {
                id,
                submit: (r.submit_s - first) * SECOND,
                trays: (trays.round() as usize).max(1),
                segment: None,
                by_gpus: false,
                class: Default::default(),
                runtime,
                limit: time_limit(&mut rng, runtime),
                tier: Default::default(),
            }
        })
        .collect();
    if let Some(load) = spec.load {
        if load <= 0.0 {
            return Err("--load must be positive".into());
        }
        set_offered_load(&mut jobs, spec.healthy_trays, load);
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::offered_load;

    const SAMPLE: &str =
        "submit_s,gpus,runtime_s,attempts\n0,8,1000,1\n50,4,200,2\n100,128,3000,1\n";

    fn spec(load: Option<f64>, scale: f64) -> TraceSpec {
        TraceSpec {
            scale_sizes: scale,
            load,
            healthy_trays: 36.0,
            gpus_per_tray: 4,
            max_jobs: None,
            seed: 1,
        }
    }

    #[test]
    fn trays_are_gpus_over_four_scaled() {
        let rows = parse(SAMPLE).unwrap();
        let jobs = workload(&rows, &spec(None, 1.0)).unwrap();
        assert_eq!(
            jobs.iter().map(|j| j.trays).collect::<Vec<_>>(),
            vec![2, 1, 32]
        );
        assert_eq!(jobs[2].submit, 100 * SECOND);
        let jobs = workload(&rows, &spec(None, 0.25)).unwrap();
        assert_eq!(
            jobs.iter().map(|j| j.trays).collect::<Vec<_>>(),
            vec![1, 1, 8]
        );
    }

    #[test]
    fn load_rescales_arrivals() {
        let rows = parse(SAMPLE).unwrap();
        let jobs = workload(&rows, &spec(Some(0.5), 1.0)).unwrap();
        assert!((offered_load(&jobs, 36.0) - 0.5).abs() < 1e-3);
    }

    #[test]
    fn bad_lines_are_reported() {
        assert!(parse("submit_s,gpus,runtime_s,attempts\n1,2,x,1\n").is_err());
        assert!(parse("a,b\n").is_err());
        assert!(parse("submit_s,gpus,runtime_s\n1,0,5\n")
            .unwrap_err()
            .starts_with("line 2:"));
    }

    #[test]
    fn attempts_are_optional() {
        let rows = parse("submit_s,gpus,runtime_s\n0,8,100\n\n5,16,7\n").unwrap();
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.attempts == 1));
        assert!(parse("submit_s,gpus,runtime_s\n0,8,100,2\n")
            .unwrap_err()
            .contains("line 2"));
    }

    #[test]
    fn the_shared_trace_parses_when_present() {
        let path = philly_path();
        if let Ok(rows) = read(&path) {
            assert_eq!(rows.len(), 3034);
            assert!(rows.iter().all(|r| r.gpus >= 4));
        }
    }
}
