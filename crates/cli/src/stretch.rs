//! `nvl72 stretch` (hidden): a priced replay lab's job script. It prices the nodes Slurm gave
//! the job (`SLURM_JOB_NODELIST`) with the replay's slowdown model and sleeps its base time
//! × s, so the real job holds its trays as long as the simulator's would.

use clap::Args;

use nvl72_sim::replay::stretch::{factor_of_nodelist, sleep_ms};
use nvl72_sim::slowdown::{CommClass, Slowdown};

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
}

pub fn run(a: &StretchArgs) -> Result<(), String> {
    let slowdown: Slowdown =
        serde_json::from_str(&a.slowdown).map_err(|e| format!("--slowdown: {e}"))?;
    let class = CommClass::parse(&a.class)
        .ok_or_else(|| format!("--class {}: expected dp, dense or moe", a.class))?;
    let nodes = std::env::var("SLURM_JOB_NODELIST")
        .map_err(|_| "SLURM_JOB_NODELIST is not set: run me as a job script".to_string())?;
    let factor = factor_of_nodelist(&slowdown, &nodes, a.segment, class, 18)?;
    let ms = sleep_ms(a.base_ms, &factor);
    eprintln!(
        "nvl72 stretch: {nodes}: slowdown {:.3}, sleeping {ms} ms",
        factor.s
    );
    std::thread::sleep(std::time::Duration::from_millis(ms));
    Ok(())
}
