//! The plain-language verdict at the top of a `simulate` report: what nvl72 would have done
//! on this workload against topology/block and topology-naive Slurm, in GPUs an admin can
//! count, with the simulator's measured error beside every difference.

use std::fmt::Write;

use super::metrics::{PolicyReport, Share};
use super::policy::PolicyKind;
use super::report::RunReport;

/// Which of a report's one-rack shares a verdict line counts.
type ShareOf = fn(&PolicyReport) -> Share;

/// A few lines, or `None` when the run has no nvl72 column or nothing to compare it with.
/// `margin`: the simulator's mean error on occupancy, in points ([`super::calibration`]).
pub fn verdict(report: &RunReport, margin: Option<f64>) -> Option<String> {
    let find = |k: PolicyKind| {
        report
            .policies
            .iter()
            .find(|p| p.policy == k && p.label.is_none())
    };
    let ours = find(PolicyKind::Nvl72)?;
    let others: Vec<&PolicyReport> = [PolicyKind::Block, PolicyKind::Naive]
        .into_iter()
        .filter_map(find)
        .collect();
    if others.is_empty() {
        return None;
    }
    let s = &report.sim;
    let gpus = (s.racks * s.trays_per_rack * s.gpus_per_tray) as f64;
    let healthy = gpus * (1.0 - s.failures.unavailability());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "verdict: on these {} jobs ({}) on {} racks ({} GPUs):",
        grouped(report.workload.jobs as u64),
        report.workload.name,
        s.racks,
        grouped(gpus as u64)
    );
    let occ = |p: &PolicyReport| p.occupancy_while_waiting;
    if let Some(o) = occ(ours) {
        let parts: Vec<String> = others
            .iter()
            .filter_map(|p| {
                let d = o - occ(p)?;
                let n = (d * healthy).abs().round() as u64;
                let how_many = match (n, d >= 0.0) {
                    (0, _) => "as many GPUs busy as".to_string(),
                    (n, true) => format!("{} more GPUs busy than", grouped(n)),
                    (n, false) => format!("{} fewer GPUs busy than", grouped(n)),
                };
                let mut t = format!(
                    "{how_many} {} ({:+.1} points: {:.1}% vs {:.1}%)",
                    p.name(),
                    d * 100.0,
                    o * 100.0,
                    occ(p)? * 100.0
                );
                if margin.is_some_and(|m| (d * 100.0).abs() <= m) {
                    t += ", within the simulator's error: not a finding";
                }
                Some(t)
            })
            .collect();
        let _ = writeln!(
            out,
            "- while jobs waited, nvl72 would have kept {}",
            parts.join("; and ")
        );
    } else {
        let _ = writeln!(
            out,
            "- no job ever waited: every policy ran every job at once, so occupancy does not tell them apart (try --load or --time-scale)"
        );
    }
    let split = |sh: &Share| sh.eligible - sh.inside;
    let counts = |f: &dyn Fn(&PolicyReport) -> Share| -> String {
        std::iter::once(ours)
            .chain(others.iter().copied())
            .map(|p| {
                let sh = f(p);
                match split(&sh) {
                    0 => format!("{} none", p.name()),
                    n => format!("{} {n}", p.name()),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kept: [(&str, ShareOf); 2] = [
        ("jobs that fit in one rack", |p| p.small_jobs_in_one_rack),
        ("--segment pieces", |p| p.segments_in_one_rack),
    ];
    for (what, share) in kept {
        let eligible = share(ours).eligible;
        if eligible > 0 {
            let _ = writeln!(
                out,
                "- of the {eligible} {what}, split across racks: {}",
                counts(&share)
            );
        }
    }
    let waits: Vec<String> = std::iter::once(ours)
        .chain(others.iter().copied())
        .filter_map(|p| {
            let w = p.wait.iter().find(|w| w.class == "all")?;
            Some(format!("{} {:.2} h", p.name(), w.mean_h))
        })
        .collect();
    if !waits.is_empty() {
        let _ = writeln!(out, "- mean queue wait: {}", waits.join(", "));
    }
    let left: Vec<String> = std::iter::once(ours)
        .chain(others.iter().copied())
        .filter(|p| p.rejected + p.held + p.unfinished > 0)
        .map(|p| {
            format!(
                "{} {} never runnable, {} held, {} unfinished",
                p.name(),
                p.rejected,
                p.held,
                p.unfinished
            )
        })
        .collect();
    if !left.is_empty() {
        let _ = writeln!(out, "- jobs not done: {}", left.join("; "));
    }
    if let Some(m) = margin {
        let _ = writeln!(
            out,
            "- the simulator's measured error on occupancy is ±{m:.1} points (real slurmctld replays); the figures below are the simulator's"
        );
    }
    Some(out)
}

/// `4213` as `4,213`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(grouped(7), "7");
        assert_eq!(grouped(1080), "1,080");
        assert_eq!(grouped(4_213_000), "4,213,000");
    }
}
