//! `nvl72 bench --ab OTHER`: this build and another `nvl72` measured side by side in one run,
//! each in its own process with the same arguments, in alternating order, so that both see
//! the same machine noise; the table gives each build's p99 per call and their ratio.

use std::path::Path;
use std::process::Command;

use nvl72_sim::contenders::latency::LatencySummary;
use nvl72_sim::studies::bench::{Measured, Style};

/// One figure of one scenario: a style's decisions, all of them, or the view build.
#[derive(Clone, Copy, PartialEq)]
enum Figure {
    All,
    Style(Style),
    ViewBuild,
}

impl Figure {
    fn name(self) -> &'static str {
        match self {
            Figure::All => "all",
            Figure::Style(s) => s.name(),
            Figure::ViewBuild => "(view build)",
        }
    }

    fn of(self, m: &Measured) -> Option<LatencySummary> {
        match self {
            Figure::All => Some(m.latency),
            Figure::Style(s) => m.by_style.iter().find(|b| b.style == s).map(|b| b.latency),
            Figure::ViewBuild => Some(m.count_racks),
        }
    }
}

/// Runs `nvl72 bench` of this build (A) and of `other` (B) `repeats` times each, A then B,
/// then B then A, and so on, with `args` (the bench's own arguments, without `--ab`), and
/// prints the p99 per call of each, the median over the repeats [min-max], and A/B.
pub fn run(other: &Path, args: &[String], repeats: usize) -> Result<(), String> {
    let this = std::env::current_exe().map_err(|e| format!("this nvl72: {e}"))?;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..repeats {
        let mut order = [(&this, &mut a), (&other.to_path_buf(), &mut b)];
        if i % 2 == 1 {
            order.reverse();
        }
        for (exe, runs) in order {
            eprintln!("[bench --ab] run {} of {repeats}: {}", i + 1, exe.display());
            runs.push(one_run(exe, args)?);
        }
    }
    println!(
        "A = {} (this build), B = {}; {repeats} runs each, interleaved\n\
         p99 per call (us): median of the runs [min-max]\n",
        this.display(),
        other.display()
    );
    println!(
        "{:>6} {:>5} {:<16} {:>22} {:>22} {:>7}",
        "racks", "busy", "", "A", "B", "A/B"
    );
    let figures = std::iter::once(Figure::All)
        .chain(Style::ALL.into_iter().map(Figure::Style))
        .chain([Figure::ViewBuild]);
    let figures: Vec<Figure> = figures.collect();
    for (i, m) in a[0].iter().enumerate() {
        for &f in &figures {
            let (Some(pa), Some(pb)) = (p99s(&a, i, f), p99s(&b, i, f)) else {
                continue;
            };
            println!(
                "{:>6} {:>4.0}% {:<16} {:>22} {:>22} {:>7.3}",
                m.racks,
                m.occupancy * 100.0,
                f.name(),
                spread(&pa),
                spread(&pb),
                median(&pa) / median(&pb).max(1e-9)
            );
        }
    }
    println!(
        "\n(view build): the view the plugin builds on every call before the engine decides, as \
         each build's bench times it; builds from before issue 33 timed only the rack count \
         (what they built per call is this build's line `(view build as before)`)."
    );
    Ok(())
}

/// One `nvl72 bench ... --json` of `exe`, read back.
fn one_run(exe: &Path, args: &[String]) -> Result<Vec<Measured>, String> {
    let json = std::env::temp_dir().join(format!("nvl72-bench-ab-{}.json", std::process::id()));
    let out = Command::new(exe)
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} bench failed: {}",
            exe.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = std::fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()));
    let _ = std::fs::remove_file(&json);
    serde_json::from_str(&text?).map_err(|e| format!("{} bench --json: {e}", exe.display()))
}

/// The p99s (us) of figure `f` of scenario `i` over the runs; None when a run lacks it.
fn p99s(runs: &[Vec<Measured>], i: usize, f: Figure) -> Option<Vec<f64>> {
    runs.iter()
        .map(|r| {
            r.get(i)
                .and_then(|m| f.of(m))
                .map(|l| l.p99_ns as f64 / 1e3)
        })
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// "median [min-max]".
fn spread(v: &[f64]) -> String {
    let (lo, hi) = v
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    format!("{:.2} [{lo:.2}-{hi:.2}]", median(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_spreads_of_repeats() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(spread(&[2.0, 1.0, 5.0]), "2.00 [1.00-5.00]");
    }
}
