//! A hand-written SVG: GPU occupancy and queue length over time, one line per policy.

use std::fmt::Write;

use crate::contenders::policy::PolicyKind;
use crate::measures::policy_report::PolicyReport;

const WIDTH: f64 = 900.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const PANEL: f64 = 230.0;
const TOP: f64 = 50.0;
const GAP: f64 = 60.0;

fn color(k: PolicyKind) -> &'static str {
    match k {
        PolicyKind::Nvl72 => "#1f77b4",
        PolicyKind::Block => "#d62728",
        PolicyKind::Naive => "#7f7f7f",
        PolicyKind::Nvl72StartNow => "#9467bd",
        PolicyKind::Nvl72Balanced => "#8c564b",
        PolicyKind::Nvl72EndTie => "#2ca02c",
        PolicyKind::Nvl72EndAlign => "#ff7f0e",
        PolicyKind::Nvl72Spill => "#17becf",
        PolicyKind::Nvl72SlurmOrder => "#e377c2",
    }
}

/// The plot for `reports` under `title`.
pub fn svg(reports: &[PolicyReport], title: &str) -> String {
    let height = TOP + 2.0 * PANEL + GAP + 50.0;
    let t_max = reports
        .iter()
        .filter_map(|r| r.series.last().map(|p| p.t_h))
        .fold(0.0, f64::max)
        .max(1e-9);
    let q_max = reports
        .iter()
        .flat_map(|r| r.series.iter().map(|p| p.queued))
        .fold(0.0, f64::max)
        .max(1.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="24" font-size="15" text-anchor="middle">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    let panels = [
        ("GPU occupancy (allocated / healthy)", 1.0, TOP, true),
        ("queued jobs", q_max, TOP + PANEL + GAP, false),
    ];
    // Replay plots mix real runs (labelled, solid) with the simulator's prediction (dashed).
    let mixed = reports.iter().any(|r| r.label.is_some());
    let dash = |r: &PolicyReport| {
        if mixed && r.label.is_none() {
            r#" stroke-dasharray="6,4""#
        } else {
            ""
        }
    };
    for (label, y_max, y0, percent) in panels {
        axes(&mut out, label, y0, t_max, y_max, percent);
        for r in reports {
            let points: Vec<String> = r
                .series
                .iter()
                .map(|p| {
                    let v = if percent { p.occupancy } else { p.queued };
                    format!(
                        "{:.1},{:.1}",
                        x_of(p.t_h, t_max),
                        y0 + PANEL - v / y_max * PANEL
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                r#"<polyline fill="none" stroke="{}" stroke-width="1.5"{} points="{}"/>"#,
                color(r.policy),
                dash(r),
                points.join(" ")
            );
        }
    }
    for (i, r) in reports.iter().enumerate() {
        let y = TOP + 20.0 * i as f64;
        let x = WIDTH - RIGHT + 20.0;
        let _ = writeln!(
            out,
            r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="3"{}/><text x="{}" y="{}">{}</text>"#,
            x + 25.0,
            color(r.policy),
            dash(r),
            x + 32.0,
            y + 4.0,
            escape(&r.name())
        );
    }
    out.push_str("</svg>\n");
    out
}

fn x_of(t: f64, t_max: f64) -> f64 {
    LEFT + t / t_max * (WIDTH - LEFT - RIGHT)
}

fn axes(out: &mut String, label: &str, y0: f64, t_max: f64, y_max: f64, percent: bool) {
    let (x1, y1) = (WIDTH - RIGHT, y0 + PANEL);
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT}" y="{y0}" width="{}" height="{PANEL}" fill="none" stroke="#444"/>"##,
        x1 - LEFT
    );
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="{}">{}</text>"#,
        y0 - 8.0,
        escape(label)
    );
    let step = nice_step(y_max);
    for i in 0..=(y_max / step + 1e-9).floor() as usize {
        let v = i as f64 * step;
        let y = y1 - v / y_max * PANEL;
        let text = if percent {
            format!("{:.0}%", v * 100.0)
        } else {
            tick(v, step)
        };
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{text}</text>"##,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let step = nice_step(t_max);
    for i in 0..=(t_max / step + 1e-9).floor() as usize {
        let t = i as f64 * step;
        let x = x_of(t, t_max);
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{}" stroke="#444"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            y1 + 4.0,
            y1 + 17.0,
            tick(t, step)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">hours</text>"#,
        (LEFT + x1) / 2.0,
        y1 + 32.0
    );
}

/// A 1, 2 or 5 times a power of ten step giving about five ticks over `[0, max]`.
fn nice_step(max: f64) -> f64 {
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

/// A tick label with as many decimals as the step needs.
fn tick(v: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(1.0), 0.2);
        assert_eq!(nice_step(48.0), 10.0);
        assert_eq!(nice_step(1200.0), 500.0);
        assert_eq!(tick(0.6000000000000001, 0.2), "0.6");
        assert_eq!(escape("a<b&c"), "a&lt;b&amp;c");
    }
}
