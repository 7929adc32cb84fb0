//! `nvl72 stretch` (hidden): a priced replay lab's job script. It prices the nodes Slurm gave
//! the job (`SLURM_JOB_NODELIST`) with the replay's slowdown model and sleeps its base time
//! × s, so the real job holds its trays as long as the simulator's would. With
//! `--checkpoint-ms` it works like a training job that checkpoints: it writes its progress
//! (ms of work done) to `--progress-dir/$SLURM_JOB_ID` at every checkpoint and, when Slurm
//! requeues and restarts it, reads it back and sleeps only the rest.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use nvl72_sim::replay::lab_nodes::TRAYS_PER_RACK;
use nvl72_sim::replay::stretch::{checkpoint_marks, factor_of_nodelist, sleep_ms};
use nvl72_sim::slowdown::{CommClass, Slowdown};
use nvl72_sim::workload::checkpoint::Checkpoints;

#[derive(Args)]
pub struct StretchArgs {
    /// The job's run time at NVLink speed, real milliseconds
    #[arg(long)]
    base_ms: u64,
    /// The job's `--segment`
    #[arg(long)]
    segment: Option<usize>,
    /// dp, dense or moe
    #[arg(long)]
    class: String,
    /// The replay's slowdown setting, as JSON
    #[arg(long)]
    slowdown: String,
    /// Real milliseconds of work between checkpoints (none: a restart does all of it again)
    #[arg(long)]
    checkpoint_ms: Option<u64>,
    /// Where the job keeps its progress, one file per Slurm job id
    #[arg(long, default_value = "/var/tmp/nvl72-progress")]
    progress_dir: PathBuf,
}

pub fn run(a: &StretchArgs) -> Result<(), String> {
    let slowdown: Slowdown =
        serde_json::from_str(&a.slowdown).map_err(|e| format!("--slowdown: {e}"))?;
    let class = CommClass::parse(&a.class)
        .ok_or_else(|| format!("--class {}: expected dp, dense or moe", a.class))?;
    let nodes = std::env::var("SLURM_JOB_NODELIST")
        .map_err(|_| "SLURM_JOB_NODELIST is not set: run me as a job script".to_string())?;
    let factor = factor_of_nodelist(&slowdown, &nodes, a.segment, class, TRAYS_PER_RACK)?;
    let every = match a.checkpoint_ms {
        Some(0) => return Err("--checkpoint-ms must be above 0".into()),
        Some(ms) => Checkpoints::Every(ms),
        None => Checkpoints::None,
    };
    let progress = match every {
        Checkpoints::None => None,
        Checkpoints::Every(_) => {
            let id = std::env::var("SLURM_JOB_ID")
                .map_err(|_| "SLURM_JOB_ID is not set: run me as a job script".to_string())?;
            Some(a.progress_dir.join(id))
        }
    };
    let saved = match &progress {
        Some(file) => read_progress(file)?.min(a.base_ms),
        None => 0,
    };
    eprintln!(
        "nvl72 stretch: {nodes}: slowdown {:.3}, {} of {} ms of work left, sleeping {} ms",
        factor.s,
        a.base_ms - saved,
        a.base_ms,
        sleep_ms(a.base_ms - saved, &factor)
    );
    let mut done = saved;
    for mark in checkpoint_marks(saved, a.base_ms, every) {
        std::thread::sleep(Duration::from_millis(sleep_ms(mark - done, &factor)));
        done = mark;
        if let Some(file) = &progress {
            write_progress(file, done)?;
        }
    }
    std::thread::sleep(Duration::from_millis(sleep_ms(a.base_ms - done, &factor)));
    Ok(())
}

/// The work a job saved in an earlier run (0 when it has none yet).
fn read_progress(file: &Path) -> Result<u64, String> {
    match std::fs::read_to_string(file) {
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|_| format!("{}: `{}` is no progress in ms", file.display(), text.trim())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

/// Saves `done` whole or not at all: a kill during the write leaves the last checkpoint.
fn write_progress(file: &Path, done: u64) -> Result<(), String> {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, done.to_string()).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, file).map_err(|e| format!("{}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_back_as_written_and_starts_at_zero() {
        let dir = std::env::temp_dir().join(format!("nvl72-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("42");
        assert_eq!(read_progress(&file), Ok(0));
        write_progress(&file, 1234).unwrap();
        assert_eq!(read_progress(&file), Ok(1234));
        std::fs::write(&file, "half").unwrap();
        let e = read_progress(&file).unwrap_err();
        assert!(e.contains("42") && e.contains("`half`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
