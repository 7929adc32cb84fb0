//! Which `[policy]` setting gives a workload the most goodput: the what-if runs nvl72 once
//! per candidate setting on the same jobs and failures, and recommends the best one only
//! when it beats the setting in force by more than nvl72's own error band; the answer is a
//! `[policy]` snippet ready for topology.toml.
//!
//! The candidates are the settings that change where jobs larger than a rack or waiting for
//! one go (`multi_rack`, `end_time`, a rack limit that lets a waiting job spill after W
//! minutes, `segment_placement`, cuts between groups of 2 or 8 trays: TP8 pairs, EP32
//! groups), each one key away from the setting in force and one topology.toml accepts.

use std::fmt::Write;

use crate::config::{
    EndTime, MultiRack, Policy, SegmentPlacement, Switches, DEFAULT_PREFER_PIECE_MULTIPLE,
};
use crate::contenders::policy::PolicyKind;
use crate::job::Job;
use crate::measures::policy_report::PolicyReport;
use crate::run::simulation::{simulate_all, SimConfig};

/// One setting tried: the key as topology.toml spells it and the policy it gives.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// `multi_rack = "balanced"`; empty for the setting in force.
    pub key: String,
    pub policy: Policy,
}

/// The setting in force, then each candidate one key away from it.
pub fn candidates(base: &Policy) -> Vec<Candidate> {
    let mut out = vec![Candidate {
        key: String::new(),
        policy: base.clone(),
    }];
    let mut add = |key: String, change: &dyn Fn(&mut Policy)| {
        let mut policy = base.clone();
        change(&mut policy);
        // piece_multiple and prefer_piece_multiple shape fewest-racks pieces only;
        // topology.toml refuses them elsewhere, and a preference that cuts the rule's groups.
        let fewest = policy.multi_rack == MultiRack::FewestRacks;
        let changed_prefer = policy.prefer_piece_multiple != base.prefer_piece_multiple;
        let valid = (policy.piece_multiple == 1 || fewest)
            && (!changed_prefer || policy.prefer_piece_multiple == 1 || fewest)
            && (policy.prefer_piece_multiple % policy.piece_multiple == 0
                || policy.prefer_piece_multiple == 1);
        if policy != *base && valid {
            out.push(Candidate { key, policy });
        }
    };
    for m in [
        MultiRack::FewestRacks,
        MultiRack::Balanced,
        MultiRack::StartNow,
    ] {
        add(format!("multi_rack = \"{}\"", m.as_str()), &|p| {
            p.multi_rack = m
        });
    }
    for e in [EndTime::Off, EndTime::TieBreak, EndTime::Align] {
        add(format!("end_time = \"{}\"", e.as_str()), &|p| {
            p.end_time = e
        });
    }
    for s in [
        SegmentPlacement::OneRackFirst,
        SegmentPlacement::BestFit,
        SegmentPlacement::Consolidate,
        SegmentPlacement::Spread,
    ] {
        add(format!("segment_placement = \"{}\"", s.as_str()), &|p| {
            p.segment_placement = s
        });
    }
    let limits = [5, 30, 120].map(|wait_minutes| Switches::Limit {
        count: 1,
        wait_minutes,
    });
    for s in std::iter::once(Switches::Off).chain(limits) {
        add(format!("switches = {}", s.as_toml()), &|p| p.switches = s);
    }
    for m in [1, 2, 8] {
        add(format!("piece_multiple = {m}"), &|p| p.piece_multiple = m);
    }
    for m in [1, DEFAULT_PREFER_PIECE_MULTIPLE] {
        add(format!("prefer_piece_multiple = {m}"), &|p| {
            p.prefer_piece_multiple = m
        });
    }
    out
}

/// A candidate's result.
#[derive(Debug, Clone)]
pub struct Tried {
    pub candidate: Candidate,
    pub goodput: Option<f64>,
    /// Mean queue wait of all jobs, hours.
    pub mean_wait_h: Option<f64>,
}

/// Runs nvl72 under every candidate (in parallel when `parallel`), in `candidates` order.
pub fn try_all(
    cfg: &SimConfig,
    jobs: &[Job],
    candidates: Vec<Candidate>,
    parallel: bool,
) -> Vec<Tried> {
    let run = |c: &Candidate| -> PolicyReport {
        let mut cfg = cfg.clone();
        cfg.policy = c.policy.clone();
        simulate_all(&cfg, jobs, &[PolicyKind::Nvl72], false, &|_, _| {}).remove(0)
    };
    let reports: Vec<PolicyReport> = if parallel {
        std::thread::scope(|s| {
            let handles: Vec<_> = candidates.iter().map(|c| s.spawn(|| run(c))).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a candidate's simulation panicked"))
                .collect()
        })
    } else {
        candidates.iter().map(run).collect()
    };
    candidates
        .into_iter()
        .zip(reports)
        .map(|(candidate, r)| Tried {
            candidate,
            goodput: r.goodput_while_waiting,
            mean_wait_h: r.wait.iter().find(|w| w.class == "all").map(|w| w.mean_h),
        })
        .collect()
}

/// The table of every candidate and the recommendation: the best candidate when it beats
/// the setting in force (the first) by more than `band` points, else the setting in force.
pub fn render(tried: &[Tried], band: Option<f64>, band_of: &str) -> String {
    let mut out = String::from(
        "| [policy] setting | goodput while waiting | vs the setting in force, points | mean wait h |\n|---|---|---|---|\n",
    );
    let Some(base) = tried.first().and_then(|t| t.goodput) else {
        return out + "(no job waited: goodput cannot tell the settings apart)\n";
    };
    for t in tried {
        let name = if t.candidate.key.is_empty() {
            "in force".to_string()
        } else {
            format!("`{}`", t.candidate.key)
        };
        let g = t.goodput.unwrap_or(0.0);
        let _ = writeln!(
            out,
            "| {name} | {:.2}% | {:+.2} | {} |",
            g * 100.0,
            (g - base) * 100.0,
            t.mean_wait_h.map_or("-".into(), |w| format!("{w:.2}"))
        );
    }
    let best = tried
        .iter()
        .skip(1)
        .filter(|t| t.goodput.is_some())
        .max_by(|a, b| {
            a.goodput
                .partial_cmp(&b.goodput)
                .expect("goodput is a number")
        });
    let band_words = match band {
        Some(b) => format!("nvl72's error band on {band_of}: ±{b:.1} points"),
        None => "no error band measured".to_string(),
    };
    match best {
        Some(t) => {
            let margin = (t.goodput.unwrap_or(0.0) - base) * 100.0;
            if margin > band.unwrap_or(0.0) {
                let _ = write!(
                    out,
                    "\nrecommended: `{}`: {margin:+.2} points of goodput over the setting in force, beyond {band_words}. In topology.toml:\n\n    [policy]\n    {}\n",
                    t.candidate.key, t.candidate.key
                );
            } else {
                let _ = write!(
                    out,
                    "\nrecommended: keep the setting in force: the best candidate, `{}`, is {margin:+.2} points, within {band_words} (a tie)\n",
                    t.candidate.key
                );
            }
        }
        None => out.push_str("\nrecommended: keep the setting in force (no other candidate)\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_candidate_is_one_key_away_from_the_setting_in_force() {
        let base = Policy::default();
        let all = candidates(&base);
        assert!(all[0].key.is_empty());
        assert_eq!(all[0].policy, base);
        for c in &all[1..] {
            let text = format!("[policy]\n{}\n", c.key);
            let parsed = crate::config::parse_policy(&text, std::path::Path::new("t.toml"))
                .unwrap_or_else(|e| panic!("{}: {e}", c.key));
            assert_eq!(
                parsed, c.policy,
                "the snippet reads back as the setting tried"
            );
            assert_ne!(c.policy, base);
        }
        assert!(all
            .iter()
            .any(|c| c.key == "switches = { count = 1, wait_minutes = 30 }"));
        assert!(all.iter().any(|c| c.key == "piece_multiple = 8"));
        assert!(all.iter().any(|c| c.key == "prefer_piece_multiple = 1"));
    }

    #[test]
    fn no_candidate_is_a_setting_topology_toml_refuses() {
        let base = Policy {
            piece_multiple: 8,
            ..Policy::default()
        };
        let all = candidates(&base);
        assert!(all.iter().any(|c| c.key == "piece_multiple = 1"));
        assert!(
            all.iter()
                .all(|c| c.policy.piece_multiple == 1
                    || c.policy.multi_rack == MultiRack::FewestRacks)
        );
        let balanced = Policy {
            multi_rack: MultiRack::Balanced,
            ..Policy::default()
        };
        assert!(candidates(&balanced)
            .iter()
            .all(|c| c.policy.piece_multiple == 1));
        let off = Policy {
            multi_rack: MultiRack::StartNow,
            prefer_piece_multiple: 1,
            ..Policy::default()
        };
        assert!(
            candidates(&off)
                .iter()
                .all(|c| c.policy.prefer_piece_multiple == 1
                    || c.policy.multi_rack == MultiRack::FewestRacks),
            "an explicit preference under start-now"
        );
    }

    fn tried(key: &str, goodput: f64) -> Tried {
        Tried {
            candidate: Candidate {
                key: key.into(),
                policy: Policy::default(),
            },
            goodput: Some(goodput),
            mean_wait_h: Some(1.0),
        }
    }

    #[test]
    fn a_setting_is_recommended_only_beyond_the_band() {
        let runs = [
            tried("", 0.80),
            tried("multi_rack = \"start-now\"", 0.85),
            tried("end_time = \"align\"", 0.81),
        ];
        let text = render(&runs, Some(2.0), "goodput");
        assert!(
            text.contains("recommended: `multi_rack = \"start-now\"`: +5.00 points")
                && text.ends_with("    [policy]\n    multi_rack = \"start-now\"\n"),
            "{text}"
        );
        let text = render(&runs, Some(6.0), "goodput");
        assert!(
            text.contains("keep the setting in force: the best candidate, `multi_rack = \"start-now\"`, is +5.00 points, within nvl72's error band on goodput: ±6.0 points (a tie)"),
            "{text}"
        );
    }
}
