//! Decision-latency scenarios for the engine, shared by `crates/sim/benches/decision.rs` (criterion)
//! and `nvl72 bench` (exact percentiles).
//!
//! A scenario is a cluster state at a target occupancy, built the way a real cluster gets
//! there: jobs from the synthetic mix are placed by the engine until the cluster is 10 points
//! fuller than the target, then random jobs end until it is back at the target, which leaves
//! the holes that departures leave. 2% of trays are down. The requests are a fixed mix of
//! sizes, with and without `--segment`.

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::config::{EndTime, Policy};
use crate::contenders::latency::{summarize, LatencySummary};
use crate::offered_view::OfferedView;
use crate::placement::{plan, JobRequest, Placement};
use crate::topology::Topology;
use crate::tray::Tray;
use crate::view::ClusterView;

/// The requests every scenario is timed with: `(trays, segment)`; see also [`GPU_SIZED`].
pub const REQUESTS: [(usize, Option<usize>); 15] = [
    (1, None),
    (2, None),
    (4, None),
    (8, None),
    (16, None),
    (18, None),
    (36, None),
    (72, None),
    (144, None),
    (8, Some(4)),
    (16, Some(4)),
    (48, Some(8)),
    (72, Some(8)),
    (144, Some(16)),
    (288, Some(16)),
];

/// Requests sized by GPUs (`--gpus=g`, no `-N`): the engine counts each rack's GPUs.
pub const GPU_SIZED: [u64; 4] = [4, 8, 32, 144];

/// One decision as the plugin makes it: rank the choices, build the first node set.
pub fn decide(topo: &Topology, view: &ClusterView, req: &JobRequest) -> Option<Placement> {
    let plan = plan(topo, view, req).ok()?;
    Some(plan.placement(0))
}

pub struct Scenario {
    pub name: String,
    /// Allocated / all trays, as built.
    pub occupancy: f64,
    pub topo: Topology,
    pub view: ClusterView,
    pub requests: Vec<JobRequest>,
}

/// The 0%, 50% and 90% occupancy scenarios on `racks` racks.
pub fn scenarios(racks: usize, seed: u64) -> Vec<Scenario> {
    scenarios_with(racks, seed, EndTime::Off)
}

/// [`scenarios`] with the engine's `end_time` rule: busy trays then carry expected job ends
/// (up to a day ahead) and every request a 4-hour limit, so the rule has something to read.
pub fn scenarios_with(racks: usize, seed: u64, end_time: EndTime) -> Vec<Scenario> {
    [0.0, 0.5, 0.9]
        .into_iter()
        .map(|target| {
            let mut s = scenario(racks, target, seed);
            s.topo.policy.end_time = end_time;
            if end_time != EndTime::Off {
                with_end_times(&mut s, seed);
            }
            s
        })
        .collect()
}

fn with_end_times(s: &mut Scenario, seed: u64) {
    const NOW: u32 = 1_000_000;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xe2d);
    s.view.now = NOW;
    s.view.busy_until = s
        .view
        .trays
        .iter()
        .map(|t| {
            if t.allocated {
                NOW + rng.gen_range(60..86_400)
            } else {
                0
            }
        })
        .collect();
    for req in &mut s.requests {
        req.ends_at = Some(NOW + 4 * 3600);
    }
}

pub fn scenario(racks: usize, target: f64, seed: u64) -> Scenario {
    let topo = Topology::uniform(racks, 18, Policy::default());
    let total = racks * 18;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut view = ClusterView::all_free(total);
    for tray in view.trays.iter_mut() {
        if rng.gen_bool(0.02) {
            tray.offered = false;
            tray.unavailable = true;
        }
    }
    let mut placed: Vec<Vec<usize>> = Vec::new();
    let mut busy = 0;
    let mut misses = 0;
    let sizes = [1, 2, 4, 4, 8, 12, 16, 18, 18, 32, 48, 64, 144];
    while target > 0.0 && (busy as f64) < (target + 0.1).min(0.99) * total as f64 && misses < 200 {
        let n = sizes[rng.gen_range(0..sizes.len())];
        let req = if n > 18 {
            JobRequest::segmented(n, if n >= 144 { 16 } else { 8 })
        } else {
            JobRequest::nodes(n)
        };
        match decide(&topo, &view, &req) {
            Some(first) => {
                for &t in &first.nodes {
                    view.trays[t].offered = false;
                    view.trays[t].allocated = true;
                }
                busy += first.nodes.len();
                placed.push(first.nodes);
            }
            None => misses += 1,
        }
    }
    // Random departures down to the target; a job whose departure would undershoot it by
    // more than 3 points stays.
    placed.shuffle(&mut rng);
    let floor = ((target - 0.03) * total as f64).max(0.0);
    while (busy as f64) > target * total as f64 {
        let Some(nodes) = placed.pop() else { break };
        if ((busy - nodes.len()) as f64) < floor {
            continue;
        }
        for t in nodes {
            view.trays[t].offered = true;
            view.trays[t].allocated = false;
            busy -= 1;
        }
    }
    // As the plugin's view comes: with each rack's count, made while it reads the offered
    // trays ([`measure`] times that count on its own).
    view.count_racks(&topo);
    Scenario {
        name: format!("{racks} racks, {:.0}% busy", target * 100.0),
        occupancy: busy as f64 / total as f64,
        topo,
        view,
        requests: REQUESTS
            .iter()
            .map(|&(n, s)| match s {
                Some(s) => JobRequest::segmented(n, s),
                None => JobRequest::nodes(n),
            })
            .chain(GPU_SIZED.iter().map(|&g| JobRequest::gpus(g, total)))
            .collect(),
    }
}

/// A request style, as users size jobs: the engine takes a different path for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Style {
    /// `-N n`, n at most a rack.
    #[serde(rename = "-N in a rack")]
    InRack,
    /// `-N n`, larger than a rack.
    #[serde(rename = "-N multi-rack")]
    MultiRack,
    #[serde(rename = "--segment")]
    Segmented,
    /// `--gpus=g`, no `-N`: every rack that fits is offered.
    #[serde(rename = "--gpus")]
    GpuSized,
}

impl Style {
    pub const ALL: [Style; 4] = [
        Style::InRack,
        Style::MultiRack,
        Style::Segmented,
        Style::GpuSized,
    ];

    pub fn of(req: &JobRequest, trays_per_rack: usize) -> Style {
        if req.demand.gpus > 0 {
            Style::GpuSized
        } else if req.segment.is_some() {
            Style::Segmented
        } else if req.min_nodes > trays_per_rack {
            Style::MultiRack
        } else {
            Style::InRack
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Style::InRack => "-N in a rack",
            Style::MultiRack => "-N multi-rack",
            Style::Segmented => "--segment",
            Style::GpuSized => "--gpus",
        }
    }
}

/// Latency of one request style in one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StyleLatency {
    pub style: Style,
    pub latency: LatencySummary,
}

/// Latency of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub scenario: String,
    pub racks: usize,
    pub occupancy: f64,
    /// Requests that got a placement, out of all timed calls' requests.
    pub placeable: usize,
    pub requests: usize,
    pub latency: LatencySummary,
    pub by_style: Vec<StyleLatency>,
    /// The view the plugin builds on every call, counted and indexed ([`build_view`]): not
    /// part of `latency`. (Named for what it measured before the free index: counting every
    /// rack's offered trays.)
    pub count_racks: LatencySummary,
    /// The view built as the plugin built it before issue 33 ([`fresh_view`]), for the same
    /// trays: the baseline of `count_racks` in one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_view: Option<LatencySummary>,
}

/// Times `rounds` x every request of `s` (one [`decide`] each) with a wall clock.
pub fn measure(s: &Scenario, rounds: usize) -> Measured {
    let styles: Vec<Style> = s.requests.iter().map(|r| Style::of(r, 18)).collect();
    let mut samples = Vec::with_capacity(rounds * s.requests.len());
    let mut by_style: Vec<Vec<u32>> = vec![Vec::new(); Style::ALL.len()];
    let mut placeable = 0;
    for round in 0..rounds {
        for (req, style) in s.requests.iter().zip(&styles) {
            let start = Instant::now();
            let out = decide(&s.topo, &s.view, req);
            let ns = start.elapsed().as_nanos().min(u32::MAX as u128) as u32;
            samples.push(ns);
            by_style[*style as usize].push(ns);
            if round == 0 && out.is_some() {
                placeable += 1;
            }
        }
    }
    let offered: Vec<(usize, Tray)> = (s.view.trays.iter().copied().enumerate())
        .filter(|(_, t)| t.offered)
        .collect();
    // The plugin keeps this memory from one call to the next: the first build, which
    // allocates it, is not timed.
    let mut built = OfferedView::default();
    build_view(&s.topo, s.view.trays.len(), &offered, &mut built);
    let counts: Vec<u32> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            build_view(&s.topo, s.view.trays.len(), &offered, &mut built);
            start.elapsed().as_nanos().min(u32::MAX as u128) as u32
        })
        .collect();
    debug_assert_eq!(built.view.tallies, s.view.tallies);
    let fresh: Vec<u32> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(fresh_view(&s.topo, s.view.trays.len(), &offered));
            start.elapsed().as_nanos().min(u32::MAX as u128) as u32
        })
        .collect();
    Measured {
        count_racks: summarize(&counts).expect("at least one round"),
        fresh_view: summarize(&fresh),
        scenario: s.name.clone(),
        racks: s.topo.racks.len(),
        occupancy: s.occupancy,
        placeable,
        requests: s.requests.len(),
        latency: summarize(&samples).expect("at least one sample"),
        by_style: Style::ALL
            .iter()
            .zip(&by_style)
            .filter_map(|(&style, v)| {
                Some(StyleLatency {
                    style,
                    latency: summarize(v)?,
                })
            })
            .collect(),
    }
}

/// What the plugin does on every call before the engine decides: the view of the `offered`
/// trays, counted and indexed, in the memory of the call before ([`OfferedView`]). Slurm's
/// own reads of each tray's state are not in it.
#[inline(never)]
pub fn build_view(
    topo: &Topology,
    trays: usize,
    offered: &[(usize, Tray)],
    built: &mut OfferedView,
) {
    built.reset(topo, trays);
    built.offer(topo, offered.iter().map(|&(n, tray)| (n, tray, 0)));
    built.finish(topo);
}

/// [`build_view`] as the plugin did it before issue 33, kept as the bench's baseline: a
/// fresh table of every tray and every rack's tally on every call, each offered tray added
/// to its rack's tally in memory, no index.
#[inline(never)]
pub fn fresh_view(topo: &Topology, trays: usize, offered: &[(usize, Tray)]) -> ClusterView {
    let mut view = ClusterView {
        trays: vec![Tray::default(); trays],
        tallies: vec![crate::tray::RackTally::default(); topo.racks.len()],
        ..ClusterView::default()
    };
    for &(n, tray) in offered {
        view.trays[n] = tray;
        if let Some(r) = topo.rack_of(n) {
            view.tallies[r].add(tray);
        }
    }
    view
}

/// The cost curve over rack counts: p99 per scenario and style, one row per rack count and
/// occupancy, and how each grows per rack against the smallest cluster measured.
pub fn curve(all: &[Measured]) -> String {
    use std::fmt::Write;
    let mut out = String::from("cost curve, p99 per call (us)\n");
    let _ = write!(out, "{:>6} {:>6} {:>8}", "racks", "busy", "all");
    for st in Style::ALL {
        let _ = write!(out, " {:>14}", st.name());
    }
    out.push('\n');
    let p99 = |l: &LatencySummary| l.p99_ns as f64 / 1e3;
    for m in all {
        let _ = write!(
            out,
            "{:>6} {:>5.0}% {:>8.2}",
            m.racks,
            m.occupancy * 100.0,
            p99(&m.latency)
        );
        for st in Style::ALL {
            match m.by_style.iter().find(|b| b.style == st) {
                Some(b) => {
                    let _ = write!(out, " {:>14.2}", p99(&b.latency));
                }
                None => {
                    let _ = write!(out, " {:>14}", "-");
                }
            }
        }
        out.push('\n');
    }
    // Growth: p99 at the largest over p99 at the smallest cluster, per busy level, against
    // the growth in racks (1.0 = linear).
    let smallest = all.iter().map(|m| m.racks).min().unwrap_or(0);
    let largest = all.iter().map(|m| m.racks).max().unwrap_or(0);
    if largest > smallest {
        for lo in all.iter().filter(|m| m.racks == smallest) {
            let busy = (lo.occupancy * 10.0).round();
            if let Some(hi) = all
                .iter()
                .find(|m| m.racks == largest && (m.occupancy * 10.0).round() == busy)
            {
                let grew = p99(&hi.latency) / p99(&lo.latency).max(1e-3);
                let racks = largest as f64 / smallest as f64;
                let _ = writeln!(
                    out,
                    "{:.0}% busy: p99 x{grew:.1} from {smallest} to {largest} racks (x{racks:.0} racks; {:.2} of linear)",
                    lo.occupancy * 100.0,
                    grew / racks
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_reach_their_occupancy() {
        for s in scenarios(40, 1) {
            let target: f64 = if s.name.contains("90%") {
                0.9
            } else if s.name.contains("50%") {
                0.5
            } else {
                0.0
            };
            assert!(
                s.occupancy <= target + 1e-9 && s.occupancy > target - 0.1,
                "{}",
                s.name
            );
            assert_eq!(
                measure(&s, 1).latency.calls,
                (REQUESTS.len() + GPU_SIZED.len()) as u64
            );
        }
    }
}
