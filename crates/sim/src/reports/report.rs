//! The result of a run: the JSON document and the side-by-side text table.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::job::{hours, offered_load, Job};

use crate::measures::policy_report::{PolicyReport, Share};
use crate::measures::preemption::PreemptionReport;
use crate::run::failures::FailureModel;
use crate::run::simulation::SimConfig;
use crate::slowdown::Limits;

/// What was replayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    /// `philly` or `synthetic`.
    pub name: String,
    /// The options that shaped it (trace path, scale, load, classes...).
    pub details: serde_json::Value,
    pub jobs: usize,
    /// Tray-time asked for / (expected healthy trays x submission span).
    pub offered_load: f64,
    pub span_h: f64,
    pub gpu_hours: f64,
}

impl WorkloadInfo {
    /// The workload's header for reports.
    pub fn of(
        name: &str,
        details: serde_json::Value,
        jobs: &[Job],
        healthy: f64,
        gpus_per_tray: usize,
    ) -> WorkloadInfo {
        WorkloadInfo {
            name: name.into(),
            details,
            jobs: jobs.len(),
            offered_load: offered_load(jobs, healthy),
            span_h: hours(jobs.last().map_or(0, |j| j.submit)),
            gpu_hours: jobs
                .iter()
                .map(|j| (j.trays * gpus_per_tray) as f64 * hours(j.runtime))
                .sum(),
        }
    }
}

/// One `nvl72 simulate` run: its inputs and one report per policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub workload: WorkloadInfo,
    pub sim: SimConfig,
    pub policies: Vec<PolicyReport>,
    /// The simulator's measured error against real slurmctld (`calibration`), quoted with the
    /// figures so that nobody reads a smaller difference as a finding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_band: Option<String>,
    /// The same on usable occupancy, from the replays whose jobs paid their slowdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usable_error_band: Option<String>,
}

impl RunReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialize")
    }

    /// The text table printed on stdout: what was run, one column per policy, the error band.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        for (what, line) in self.inputs() {
            let _ = writeln!(out, "{what}: {line}");
        }
        out.push('\n');
        let rows = self.rows();
        let first = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let widths: Vec<usize> = (0..self.policies.len())
            .map(|i| rows.iter().map(|r| r.1[i].len()).max().unwrap_or(0))
            .collect();
        for (name, cells) in rows {
            let _ = write!(out, "{name:<first$}");
            for (cell, w) in cells.iter().zip(&widths) {
                let _ = write!(out, "  {cell:>w$}");
            }
            out.push('\n');
        }
        if self.error_band.is_some() {
            out.push('\n');
        }
        for line in self.bands() {
            let _ = writeln!(out, "{line}");
        }
        out
    }

    /// What was run, as `(what, description)`: workload, input, cluster, scheduler model and
    /// slowdown.
    pub fn inputs(&self) -> Vec<(&'static str, String)> {
        let w = &self.workload;
        let s = &self.sim;
        let mut lines = vec![(
            "workload",
            format!(
                "{}, {} jobs, offered load {:.2}, submissions over {:.1} h, {:.0} GPU-h",
                w.name, w.jobs, w.offered_load, w.span_h, w.gpu_hours
            ),
        )];
        if let Some(read) = w.details.get("read").and_then(|r| r.as_str()) {
            lines.push(("input", read.to_string()));
        }
        lines.push((
            "cluster",
            format!(
                "{} racks x {} trays x {} GPUs; failures: {}; seed {}",
                s.racks,
                s.trays_per_rack,
                s.gpus_per_tray,
                describe_failures(&s.failures),
                s.seed
            ),
        ));
        lines.push(("scheduler model", s.describe_scheduler()));
        lines.push(("slowdown of split jobs", s.slowdown.describe()));
        lines.push(("checkpoints", s.checkpoints.describe()));
        lines
    }

    /// The table: a row name and one cell per policy; the first row names the policies, a
    /// row with empty cells heads the indented rows under it.
    pub fn rows(&self) -> Vec<(String, Vec<String>)> {
        let s = &self.sim;
        let mut rows: Vec<(String, Vec<String>)> = Vec::new();
        let mut row = |name: &str, f: &dyn Fn(&PolicyReport) -> String| {
            rows.push((name.to_string(), self.policies.iter().map(f).collect()));
        };
        row("", &|p| p.name());
        row("jobs done/rejected/held/left", &|p| {
            format!("{}/{}/{}/{}", p.completed, p.rejected, p.held, p.unfinished)
        });
        row("killed runs (lost GPU-h)", &|p| {
            format!("{} ({:.0})", p.requeues, p.lost_gpu_hours)
        });
        row("makespan h", &|p| format!("{:.1}", p.makespan_h));
        row("time with jobs waiting h", &|p| {
            format!("{:.1}", p.waiting_h)
        });
        row("goodput while waiting", &|p| pct(p.goodput_while_waiting));
        row("goodput while submitting", &|p| pct(p.goodput_arrivals));
        row("work kept GPU-h (lost: failure/preemption/limit)", &|p| {
            let l = &p.lost_work;
            format!(
                "{:.0} ({:.0}/{:.0}/{:.0})",
                p.goodput_gpu_hours, l.failure_gpu_hours, l.preemption_gpu_hours, l.limit_gpu_hours
            )
        });
        if self.policies.iter().any(|p| p.preemption.is_some()) {
            let cell = |p: &PolicyReport, f: &dyn Fn(&PreemptionReport) -> String| {
                p.preemption.as_ref().map_or("-".into(), f)
            };
            row("preemptions (jobs preempted)", &|p| {
                cell(p, &|r| format!("{} ({})", r.preemptions, r.jobs_preempted))
            });
            row("GPU-h lost per preemption", &|p| {
                cell(p, &|r| format!("{:.1}", r.lost_gpu_hours_per_preemption))
            });
            row("high-tier wait h, mean (p95)", &|p| {
                cell(p, &|r| {
                    format!(
                        "{:.2} ({:.2})",
                        r.high_tier_wait_mean_h, r.high_tier_wait_p95_h
                    )
                })
            });
        }
        row("usable GPU occupancy while waiting", &|p| {
            pct(p.usable_occupancy_while_waiting)
        });
        row("usable GPU occupancy while submitting", &|p| {
            pct(p.usable_occupancy_arrivals)
        });
        row("work split across racks (cut)", &|p| {
            format!(
                "{} ({})",
                pct(p.split_work_share),
                pct(p.misaligned_work_share)
            )
        });
        row("mean slowdown of split runs", &|p| {
            p.mean_slowdown_split
                .map_or("-".into(), |x| format!("{x:.2}"))
        });
        match s.slowdown.limits {
            Limits::Lenient => row("runs past their time limit", &|p| p.overruns.to_string()),
            Limits::Strict => row("runs killed at their limit (GPU-h)", &|p| {
                format!("{} ({:.0})", p.timeouts, p.timeout_gpu_hours)
            }),
        }
        if !s.slowdown.is_off() {
            row("split runs, mean slowdown by size", &|_| String::new());
            for (class, ..) in crate::job::CLASSES {
                row(&format!("  {class}"), &|p| {
                    p.slowdown_by_size
                        .iter()
                        .find(|r| r.class == class)
                        .map_or("-".into(), |r| {
                            format!("{}/{} {:.2}", r.split_runs, r.runs, r.mean_slowdown)
                        })
                });
            }
        }
        row("GPU occupancy while waiting", &|p| {
            pct(p.occupancy_while_waiting)
        });
        row("GPU occupancy while submitting", &|p| {
            pct(p.occupancy_arrivals)
        });
        row("idle GPUs while waiting", &|p| {
            num(p.idle_gpus_while_waiting)
        });
        row("stranded GPUs (of healthy)", &|p| {
            format!("{} ({})", num(p.stranded_gpus), pct(p.stranded_share))
        });
        if self.policies.iter().any(|p| p.idle_by_cause.is_some()) {
            row("idle GPUs by cause (of healthy)", &|_| String::new());
            for cause in crate::idle::CAUSES {
                row(&format!("  {}", cause.describe()), &|p| {
                    p.idle_by_cause
                        .iter()
                        .flatten()
                        .find(|c| c.cause == cause)
                        .map_or("-".into(), |c| {
                            format!("{:.1} ({})", c.gpus, pct(Some(c.share)))
                        })
                });
            }
        }
        row("small jobs in one rack", &|p| {
            share(&p.small_jobs_in_one_rack)
        });
        row("GPU-sized jobs in one rack", &|p| {
            share(&p.gpu_sized_in_one_rack)
        });
        row("segments in one rack", &|p| share(&p.segments_in_one_rack));
        row("extra racks per large job", &|p| {
            p.large_jobs_extra_racks
                .map_or("-".into(), |x| format!("{x:.2}"))
        });
        row("large jobs' piece balance", &|p| {
            p.large_jobs_piece_balance
                .map_or("-".into(), |x| format!("{x:.2}"))
        });
        // Every class some policy completed jobs in ("all" first), in size order.
        let classes: Vec<&str> = std::iter::once("all")
            .chain(crate::job::CLASSES.iter().map(|c| c.0))
            .filter(|c| {
                self.policies
                    .iter()
                    .any(|p| p.wait.iter().any(|w| w.class == *c))
            })
            .collect();
        row("queue wait h: mean/p50/p95", &|_| String::new());
        for class in &classes {
            row(&format!("  {class}"), &|p| {
                p.wait
                    .iter()
                    .find(|w| w.class == *class)
                    .map_or("-".into(), |w| {
                        format!("{:.2}/{:.2}/{:.2} ({})", w.mean_h, w.p50_h, w.p95_h, w.jobs)
                    })
            });
        }
        row("placement calls", &|p| p.engine_calls.to_string());
        row("decision us: mean/p99", &|p| {
            p.decision_latency.map_or("-".into(), |l| {
                format!("{:.1}/{:.1}", l.mean_ns / 1e3, l.p99_ns as f64 / 1e3)
            })
        });
        rows
    }

    /// The simulator's measured error, as the sentences the table ends with.
    pub fn bands(&self) -> Vec<String> {
        let s = &self.sim;
        let usable_band = self
            .usable_error_band
            .as_ref()
            .filter(|_| !s.slowdown.is_off());
        let mut lines = Vec::new();
        if let Some(band) = &self.error_band {
            lines.push(format!(
                "the simulator's error on GPU occupancy while waiting: {band}; two policies closer than the larger of their two errors are a tie{}",
                if s.slowdown.is_off() || usable_band.is_some() { "" } else { " (quoted for usable occupancy too until replays that pay the slowdown calibrate it)" }
            ));
        }
        if let Some(band) = usable_band {
            lines.push(format!(
                "the simulator's error on usable GPU occupancy while waiting: {band}"
            ));
        }
        if !lines.is_empty() {
            lines.push(format!(
                "goodput is not yet calibrated on its own: {}'s band stands in for it",
                if usable_band.is_some() {
                    "usable occupancy"
                } else {
                    "occupancy"
                }
            ));
        }
        lines
    }
}

pub fn describe_failures(f: &FailureModel) -> String {
    match *f {
        FailureModel::None => "none".into(),
        FailureModel::Static { p } => format!("static, {:.1}% of trays down", p * 100.0),
        FailureModel::OnOff { mtbf_h, mttr_h } => format!(
            "on/off, {:.1}% down (MTBF {mtbf_h:.0} h, MTTR {mttr_h:.0} h)",
            100.0 * f.unavailability()
        ),
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:.2}%", x * 100.0))
}

fn num(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.1}"))
}

fn share(s: &Share) -> String {
    s.share.map_or("-".into(), |x| {
        format!("{:.2}% of {}", x * 100.0, s.eligible)
    })
}
