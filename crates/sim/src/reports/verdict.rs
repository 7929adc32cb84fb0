//! The plain-language verdict at the top of a `simulate` report: what nvl72 would have done
//! on this workload against topology/block and topology-naive Slurm, in GPUs an admin can
//! count, with the simulator's measured error beside every difference.

use std::fmt::Write;

use crate::contenders::policy::PolicyKind;
use crate::measures::policy_report::{LostWork, PolicyReport, Share};
use crate::reports::report::RunReport;
use crate::studies::calibration::{Calibration, Measured, PolicyMargins};

/// Which of a report's one-rack shares a verdict line counts.
type ShareOf = fn(&PolicyReport) -> Share;

/// The simulator's measured error per policy, that a verdict holds each difference against.
#[derive(Debug, Clone, Default)]
pub struct Margins {
    /// On occupancy while jobs wait.
    pub occupancy: PolicyMargins,
    /// On usable occupancy, from the replays whose jobs paid their splits' slowdown; empty
    /// until such replays were measured (occupancy's stands in).
    pub usable: PolicyMargins,
    /// On goodput, from the replays whose requeued jobs resumed from their checkpoints;
    /// empty until such replays were measured (usable occupancy's stands in).
    pub goodput: PolicyMargins,
}

impl Margins {
    /// The margins of a calibration for runs with or without failures.
    pub fn of(calibration: Option<&Calibration>, with_failures: bool) -> Margins {
        calibration.map_or_else(Margins::default, |c| Margins {
            occupancy: c.policy_margins(with_failures, Measured::Occupancy),
            usable: c.policy_margins(with_failures, Measured::Usable),
            goodput: c.policy_margins(with_failures, Measured::Goodput),
        })
    }

    /// One policy's band on `figure` (or on the figure that stands in for it), and which
    /// figure's band it is.
    pub fn policy_band(&self, figure: Figure, policy: PolicyKind) -> (Option<f64>, &'static str) {
        let (margins, stand_in) = self.for_figure(figure);
        (margins.of(policy), stand_in.unwrap_or(figure.name()))
    }

    /// A figure's own margins, else the nearest that stands in for them, and whose they are.
    fn for_figure(&self, figure: Figure) -> (&PolicyMargins, Option<&'static str>) {
        let chain: &[(&PolicyMargins, &'static str)] = match figure {
            Figure::Goodput => &[
                (&self.goodput, "goodput"),
                (&self.usable, "usable occupancy"),
                (&self.occupancy, "occupancy"),
            ],
            Figure::Usable => &[
                (&self.usable, "usable occupancy"),
                (&self.occupancy, "occupancy"),
            ],
        };
        chain
            .iter()
            .find(|(m, _)| !m.is_empty())
            .map_or((&self.occupancy, None), |&(m, name)| {
                (m, (name != figure.name()).then_some(name))
            })
    }
}

/// A few lines, or `None` when the run has no nvl72 column or nothing to compare it with.
/// Each difference is held against the larger of the two policies' measured errors.
pub fn verdict(report: &RunReport, margins: &Margins) -> Option<String> {
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
    let mut compare = |figure: Figure, of: fn(&PolicyReport) -> Option<f64>| {
        let Some(u) = of(ours) else { return };
        let (policy_margins, stand_in) = margins.for_figure(figure);
        let _ = writeln!(
            out,
            "{}",
            compared_line(&Compared {
                figure,
                ours: u,
                naive: find(PolicyKind::Naive).and_then(of),
                block: find(PolicyKind::Block).and_then(of),
                healthy_gpus: healthy,
                margins: policy_margins,
                stand_in,
                model: match figure {
                    Figure::Goodput => format!(
                        "{}; checkpoints {}",
                        s.slowdown.describe(),
                        s.checkpoints.describe()
                    ),
                    Figure::Usable => s.slowdown.describe(),
                },
            })
        );
    };
    compare(Figure::Goodput, |p| p.goodput_while_waiting);
    if priced {
        compare(Figure::Usable, |p| p.usable_occupancy_while_waiting);
        let _ = writeln!(out, "{}", split_work_line(ours, &others));
    }
    let lost: Vec<String> = std::iter::once(ours)
        .chain(others.iter().copied())
        .filter(|p| p.lost_work.total_gpu_hours() > 0.0)
        .map(|p| format!("{} {}", p.name(), describe_lost(&p.lost_work)))
        .collect();
    if !lost.is_empty() {
        let _ = writeln!(
            out,
            "- work thrown away by kills (GPU-h at NVLink speed): {}",
            lost.join("; ")
        );
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
                if let Some(m) = margins.occupancy.between(PolicyKind::Nvl72, p.policy) {
                    if (d * 100.0).abs() <= m {
                        t += &tie(m);
                    }
                }
                Some(t)
            })
            .collect();
        let _ = writeln!(
            out,
            "- plain occupancy: while jobs waited, nvl72 would have kept {}",
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
    if !margins.occupancy.is_empty() {
        let _ = writeln!(
            out,
            "- the simulator's measured error on occupancy per policy is {} points (real slurmctld replays); the figures below are the simulator's",
            describe_margins(&margins.occupancy)
        );
    }
    Some(out)
}

/// The figure a headline line compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Work kept at NVLink speed: the headline.
    Goodput,
    /// Work at NVLink speed, kept or not.
    Usable,
}

impl Figure {
    /// Its name in the reports, and in a band's "whose".
    pub fn name(self) -> &'static str {
        match self {
            Figure::Goodput => "goodput",
            Figure::Usable => "usable occupancy",
        }
    }
}

/// One figure of nvl72 and of the two it is compared with, for [`compared_line`].
pub struct Compared<'a> {
    pub figure: Figure,
    pub ours: f64,
    /// Slurm without a topology plugin.
    pub naive: Option<f64>,
    pub block: Option<f64>,
    pub healthy_gpus: f64,
    /// Each policy's measured error on this figure, in points.
    pub margins: &'a PolicyMargins,
    /// Whose margins stand in for this figure's own, not yet measured.
    pub stand_in: Option<&'static str>,
    /// The slowdown model (and the checkpoints, for goodput).
    pub model: String,
}

/// How many more GPUs did (kept) work at NVLink speed under nvl72 while jobs waited; a
/// difference within the larger of the two policies' errors is a tie.
pub fn compared_line(c: &Compared) -> String {
    let (unit, definition) = match c.figure {
        Figure::Goodput => (
            "GPUs of goodput",
            "goodput = GPU time ÷ each job's slowdown, less the work kills threw away",
        ),
        Figure::Usable => ("usable GPUs", "usable = GPU time ÷ each job's slowdown"),
    };
    let parts: Vec<String> = [
        (
            PolicyKind::Naive,
            "Slurm without a topology plugin",
            c.naive,
        ),
        (PolicyKind::Block, "topology/block", c.block),
    ]
    .into_iter()
    .filter_map(|(kind, name, theirs)| {
        let theirs = theirs?;
        let d = c.ours - theirs;
        let n = (d * c.healthy_gpus).abs().round() as u64;
        let rel = if theirs > 0.0 {
            format!(" ({:+.1}%)", (c.ours / theirs - 1.0) * 100.0)
        } else {
            String::new()
        };
        let mut t = match (n, d >= 0.0) {
            (0, _) => format!("as many {unit} as {name}{rel}"),
            (n, true) => format!("{} more {unit} than {name}{rel}", grouped(n)),
            (n, false) => format!("{} fewer {unit} than {name}{rel}", grouped(n)),
        };
        if let Some(m) = c.margins.between(PolicyKind::Nvl72, kind) {
            if (d * 100.0).abs() <= m {
                t += &tie(m);
            }
        }
        Some(t)
    })
    .collect();
    let band = if c.margins.is_empty() {
        String::new()
    } else {
        let whose = c.stand_in.map_or(String::new(), |other| {
            format!(" ({other}'s: {} not yet calibrated)", c.figure.name())
        });
        format!(
            "; the simulator's error per policy: {} points{whose}",
            describe_margins(c.margins)
        )
    };
    let short = match c.figure {
        Figure::Goodput => "goodput",
        Figure::Usable => "usable",
    };
    format!(
        "- nvl72 would have given {} while jobs waited ({:.1}% {short}; {definition}; model: {}){band}",
        if parts.is_empty() { "no comparison".to_string() } else { parts.join(" and ") },
        c.ours * 100.0,
        c.model
    )
}

/// `, a tie: within the simulator's error of ±m points`.
fn tie(m: f64) -> String {
    format!(", a tie: within the simulator's error of ±{m:.1} points")
}

/// `nvl72 ±2.1, block ±1.3, naive ±1.4`.
fn describe_margins(m: &PolicyMargins) -> String {
    m.0.iter()
        .map(|(p, e)| format!("{p} ±{e:.1}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `12 (failure 10, limit 2)`.
fn describe_lost(l: &LostWork) -> String {
    let parts: Vec<String> = [
        ("failure", l.failure_gpu_hours),
        ("preemption", l.preemption_gpu_hours),
        ("limit", l.limit_gpu_hours),
    ]
    .into_iter()
    .filter(|&(_, h)| h > 0.0)
    .map(|(cause, h)| format!("{cause} {}", grouped(h.round() as u64)))
    .collect();
    format!(
        "{} ({})",
        grouped(l.total_gpu_hours().round() as u64),
        parts.join(", ")
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

    fn line(figure: Figure, ours: f64, naive: f64, block: f64, margins: &[f64]) -> String {
        let margins = PolicyMargins(
            [PolicyKind::Nvl72, PolicyKind::Block, PolicyKind::Naive]
                .into_iter()
                .zip(margins.iter().copied())
                .collect(),
        );
        compared_line(&Compared {
            figure,
            ours,
            naive: Some(naive),
            block: Some(block),
            healthy_gpus: 1000.0,
            margins: &margins,
            stand_in: (figure == Figure::Goodput).then_some("usable occupancy"),
            model: "default".into(),
        })
    }

    #[test]
    fn the_usable_line_counts_gpus_and_percent_against_each_policy() {
        let text = line(Figure::Usable, 0.80, 0.70, 0.82, &[1.5, 1.0, 1.2]);
        assert_eq!(
            text,
            "- nvl72 would have given 100 more usable GPUs than Slurm without a topology plugin (+14.3%) \
             and 20 fewer usable GPUs than topology/block (-2.4%) while jobs waited (80.0% usable; \
             usable = GPU time ÷ each job's slowdown; model: default); the simulator's error per \
             policy: nvl72 ±1.5, block ±1.0, naive ±1.2 points"
        );
    }

    #[test]
    fn a_difference_inside_the_larger_of_two_bands_is_a_tie() {
        // nvl72's band is 1.0, naive's 4.3: 3 points apart is a tie with naive, not with block.
        let text = line(Figure::Goodput, 0.80, 0.77, 0.77, &[1.0, 1.0, 4.3]);
        assert!(
            text.contains("than Slurm without a topology plugin (+3.9%), a tie: within the simulator's error of ±4.3 points and 30 more GPUs of goodput than topology/block (+3.9%) while"),
            "{text}"
        );
        assert!(
            text.ends_with("(usable occupancy's: goodput not yet calibrated)"),
            "{text}"
        );
        assert!(!line(Figure::Usable, 0.8, 0.7, 0.7, &[]).contains("error"));
        assert!(line(Figure::Usable, 0.8, 0.8, 0.7, &[])
            .contains("given as many usable GPUs as Slurm without a topology plugin (+0.0%) and"));
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(grouped(7), "7");
        assert_eq!(grouped(1080), "1,080");
        assert_eq!(grouped(4_213_000), "4,213,000");
    }
}
