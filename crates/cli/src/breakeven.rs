//! `nvl72 breakeven`: goodput of nvl72, block and naive against a uniform slowdown of split
//! jobs, and the slowdown x* from which nvl72 stays ahead of each (ref §4.6.1).

use clap::Args;

use nvl72_sim::studies::breakeven::{self, Crossing, Splits};

use crate::choices::SplitsArg;
use nvl72_sim::contenders::policy::PolicyKind;
use nvl72_sim::measures::policy_report::PolicyReport;

use crate::workload::WorkloadArgs;
use nvl72_sim::reports::report::WorkloadInfo;

#[derive(Args)]
pub struct BreakevenArgs {
    #[command(flatten)]
    pub w: WorkloadArgs,
    /// Uniform slowdowns of split jobs to tabulate
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,1.05,1.1,1.2,1.3,1.5,2"
    )]
    sweep: Vec<f64>,
    /// Which split jobs pay x: `avoidable` (on more racks than their size needs: the splits
    /// topology awareness avoids) or `every` (every job on more than one rack, ref §4.6.1)
    #[arg(long, value_enum, default_value = "avoidable")]
    splits: SplitsArg,
    /// Search x* up to this slowdown
    #[arg(long, default_value_t = 3.0)]
    up_to: f64,
    /// x* to this precision
    #[arg(long, default_value_t = 0.005)]
    tolerance: f64,
}

pub fn run(a: &BreakevenArgs) -> Result<(), String> {
    if a.w.slowdown.is_some() {
        return Err("breakeven prices every split job uniformly itself; drop --slowdown".into());
    }
    if !(a.up_to > 1.0 && a.tolerance > 0.0) || a.sweep.iter().any(|&x| x < 1.0) {
        return Err(
            "--up-to must be above 1, --sweep values at least 1, --tolerance positive".into(),
        );
    }
    let racks = a.w.racks_for_simulate()?;
    let cfg = a.w.sim_config(racks)?;
    let healthy = cfg.trays() as f64 * (1.0 - cfg.failures.unavailability());
    let (jobs, name, details) = a.w.build(&cfg, healthy)?;
    let info = WorkloadInfo::of(name, details, &jobs, healthy, cfg.gpus_per_tray);
    let kinds = [PolicyKind::Nvl72, PolicyKind::Block, PolicyKind::Naive];
    println!(
        "{} jobs of {} (offered load {:.2}) on {racks} racks, failures {}; {:?} limits",
        info.jobs,
        info.name,
        info.offered_load,
        nvl72_sim::reports::report::describe_failures(&cfg.failures),
        cfg.slowdown.limits
    );
    let which = match Splits::from(a.splits) {
        Splits::Every => "every split job",
        Splits::Avoidable => "every job on more racks than its size needs",
    };
    println!("goodput while jobs wait, {which} x times slower:\n");
    println!("| x | nvl72 | block | naive | naive's split work |");
    println!("|---|---|---|---|---|");
    let usable = breakeven::goodput;
    let mut unpriced = None;
    for &x in &a.sweep {
        let r = breakeven::at(&cfg, &jobs, &kinds, Splits::from(a.splits), x);
        println!(
            "| {x:.2} | {:.2}% | {:.2}% | {:.2}% | {:.1}% |",
            usable(&r[0]) * 100.0,
            usable(&r[1]) * 100.0,
            usable(&r[2]) * 100.0,
            r[2].split_work_share.unwrap_or(0.0) * 100.0
        );
        if x == 1.0 {
            unpriced = Some(r);
        }
    }
    let unpriced = match unpriced {
        Some(r) => r,
        None => breakeven::at(&cfg, &jobs, &kinds, Splits::from(a.splits), 1.0),
    };
    println!("\nbreak-even x* (from here up nvl72's goodput is ahead at every x tried):");
    let mut grid: Vec<f64> = a.sweep.iter().copied().filter(|&x| x < a.up_to).collect();
    grid.extend([1.0, a.up_to]);
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    for (i, other) in [(1, PolicyKind::Block), (2, PolicyKind::Naive)] {
        let x = breakeven::solve(
            &cfg,
            &jobs,
            other,
            Splits::from(a.splits),
            &grid,
            a.tolerance,
        );
        let o = |p: &PolicyReport| p.occupancy_while_waiting.unwrap_or(0.0);
        let f0 = unpriced[i].split_work_share.unwrap_or(0.0);
        let estimate = breakeven::first_order(o(&unpriced[0]), o(&unpriced[i]), f0)
            .map_or("-".into(), |e| format!("{e:.2}"));
        let found = match x {
            Crossing::AlwaysAhead => format!(
                "none needed: nvl72 is ahead at every x tried ({})",
                grid.iter()
                    .map(|x| format!("{x}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Crossing::At(x) => format!("x* = {x:.2}"),
            Crossing::Beyond(hi) => format!("x* > {hi:.2}: nvl72 stays behind"),
        };
        println!(
            "- against {other}: {found} (first-order estimate {estimate}, from {other}'s split work {:.1}% and occupancy {:.1}% vs nvl72's {:.1}%)",
            f0 * 100.0,
            o(&unpriced[i]) * 100.0,
            o(&unpriced[0]) * 100.0
        );
    }
    Ok(())
}
