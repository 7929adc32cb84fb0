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
/// `margin` and `usable_margin`: the simulator's mean error on occupancy and on usable
/// occupancy, in points ([`super::calibration`]); occupancy's stands in for usable's until
/// priced replays measure it.
pub fn verdict(
    report: &RunReport,
    margin: Option<f64>,
    usable_margin: Option<f64>,
) -> Option<String> {
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
    let priced = !s.slowdown.is_off();
    if let Some(u) = ours.usable_occupancy_while_waiting.filter(|_| priced) {
        let usable = |k| find(k).and_then(|p| p.usable_occupancy_while_waiting);
        let _ = writeln!(
            out,
            "{}",
            usable_line(&Usable {
                ours: u,
                naive: usable(PolicyKind::Naive),
                block: usable(PolicyKind::Block),
                healthy_gpus: healthy,
                band: usable_margin.or(margin),
                band_is_usables: usable_margin.is_some(),
                model: s.slowdown.describe(),
            })
        );
        let _ = writeln!(out, "{}", split_work_line(ours, &others));
    }
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
            "- {}while jobs waited, nvl72 would have kept {}",
            if priced { "plain occupancy: " } else { "" },
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

/// Usable occupancy of nvl72 and the two it is compared with, for [`usable_line`].
pub struct Usable {
    pub ours: f64,
    /// Slurm without a topology plugin.
    pub naive: Option<f64>,
    pub block: Option<f64>,
    pub healthy_gpus: f64,
    /// The simulator's error, in points.
    pub band: Option<f64>,
    /// `band` was measured on usable occupancy (else it is occupancy's, quoted instead).
    pub band_is_usables: bool,
    /// [`super::slowdown::Slowdown::describe`].
    pub model: String,
}

/// The headline: how many more GPUs did work at NVLink speed under nvl72 while jobs waited.
pub fn usable_line(u: &Usable) -> String {
    let parts: Vec<String> = [
        ("Slurm without a topology plugin", u.naive),
        ("topology/block", u.block),
    ]
    .into_iter()
    .filter_map(|(name, theirs)| {
        let theirs = theirs?;
        let d = u.ours - theirs;
        let n = (d * u.healthy_gpus).abs().round() as u64;
        let rel = if theirs > 0.0 {
            format!(" ({:+.1}%)", (u.ours / theirs - 1.0) * 100.0)
        } else {
            String::new()
        };
        let mut t = match (n, d >= 0.0) {
            (0, _) => format!("as many usable GPUs as {name}{rel}"),
            (n, true) => format!("{} more usable GPUs than {name}{rel}", grouped(n)),
            (n, false) => format!("{} fewer usable GPUs than {name}{rel}", grouped(n)),
        };
        if u.band.is_some_and(|b| (d * 100.0).abs() <= b) {
            t += ", within the simulator's error: not a finding";
        }
        Some(t)
    })
    .collect();
    let band = match u.band {
        Some(b) if u.band_is_usables => {
            format!("; the simulator's error on usable occupancy: ±{b:.1} points")
        }
        Some(b) => format!(
            "; the simulator's error: ±{b:.1} points (occupancy's band: usable not yet calibrated)"
        ),
        None => String::new(),
    };
    format!(
        "- nvl72 would have given {} while jobs waited ({:.1}% usable; usable = GPU time ÷ each job's slowdown; model: {}){band}",
        if parts.is_empty() { "no comparison".to_string() } else { parts.join(" and ") },
        u.ours * 100.0,
        u.model
    )
}

/// Who split how much of their work, and what it cost them.
fn split_work_line(ours: &PolicyReport, others: &[&PolicyReport]) -> String {
    let parts: Vec<String> = others
        .iter()
        .rev()
        .copied()
        .chain(std::iter::once(ours))
        .map(|p| {
            let share = p.split_work_share.unwrap_or(0.0) * 100.0;
            match p.mean_slowdown_split {
                Some(s) => format!("{} {share:.1}% (mean slowdown {s:.2})", p.name()),
                None => format!("{} none", p.name()),
            }
        })
        .collect();
    format!("- work done split across racks: {}", parts.join(", "))
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
    use super::*;

    fn usable(ours: f64, naive: f64, block: f64, band: Option<f64>, calibrated: bool) -> String {
        usable_line(&Usable {
            ours,
            naive: Some(naive),
            block: Some(block),
            healthy_gpus: 1000.0,
            band,
            band_is_usables: calibrated,
            model: "default".into(),
        })
    }

    #[test]
    fn the_usable_line_counts_gpus_and_percent_against_each_policy() {
        let line = usable(0.80, 0.70, 0.82, Some(1.5), true);
        assert_eq!(
            line,
            "- nvl72 would have given 100 more usable GPUs than Slurm without a topology plugin (+14.3%) \
             and 20 fewer usable GPUs than topology/block (-2.4%) while jobs waited (80.0% usable; \
             usable = GPU time ÷ each job's slowdown; model: default); the simulator's error on usable \
             occupancy: ±1.5 points"
        );
    }

    #[test]
    fn a_difference_inside_the_band_is_not_a_finding() {
        let line = usable(0.80, 0.79, 0.70, Some(1.5), false);
        assert!(line.contains("10 more usable GPUs than Slurm without a topology plugin (+1.3%), within the simulator's error: not a finding and 100 more"), "{line}");
        assert!(
            line.ends_with("±1.5 points (occupancy's band: usable not yet calibrated)"),
            "{line}"
        );
        assert!(!usable(0.8, 0.7, 0.7, None, false).contains("error"));
        assert!(usable(0.8, 0.8, 0.7, None, false)
            .contains("given as many usable GPUs as Slurm without a topology plugin (+0.0%) and"));
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(grouped(7), "7");
        assert_eq!(grouped(1080), "1,080");
        assert_eq!(grouped(4_213_000), "4,213,000");
    }
}
