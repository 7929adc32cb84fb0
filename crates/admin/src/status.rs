//! `nvl72 status`: what an admin looks at before the logs. One row per rack with a character
//! per tray, the largest job that can start now (per rack and cluster-wide, plain and with
//! `--segment` 4/8/16), the free GPUs that no waiting job can use and why (the simulator's
//! idle causes, [`nvl72_engine::idle::Cause`]), and the jobs that wait for topology rather than
//! for trays.
//!
//! The figures come from the engine itself ([`nvl72_engine::placement`]) on the racks of the
//! plugin's own configuration, so "can start now" means what the plugin would do. The live
//! state is read with Slurm's client commands ([`gather`]); everything here is plain data.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use nvl72_engine::config::Config;
use nvl72_engine::demand::Demand;
use nvl72_engine::idle::Cause;
use nvl72_engine::placement::{self, JobRequest};
use nvl72_engine::topology::Topology;
use nvl72_engine::tray::Tray;
use nvl72_engine::view::ClusterView;

pub mod gather;
#[cfg(test)]
mod tests;

/// Segment sizes the "largest job" columns are given for (0: no `--segment`).
pub const SEGMENTS: [usize; 4] = [0, 4, 8, 16];

/// A tray as Slurm's client commands show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrayState {
    Free,
    /// Running these jobs (more than one when trays are shared).
    Busy(Vec<u32>),
    /// Idle but held for a waiting job (backfill's `planned`) or by a reservation.
    Held,
    /// Drained or draining: kept out by an admin.
    Drained,
    /// Down, failed or not responding.
    Down,
}

/// A job that waits, with what it asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingJob {
    pub id: u32,
    pub min_nodes: usize,
    pub segment: Option<usize>,
    #[serde(skip)]
    pub demand: Demand,
    /// Slurm's pending reason (`Resources`, `Priority`, ...).
    pub reason: String,
}

/// A job that holds trays: when it started (None when scontrol did not say) and how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningJob {
    pub started: Option<i64>,
    pub trays: usize,
}

/// The live state: tray states by node name, the waiting and the running jobs, and when it
/// was read (seconds since the epoch).
#[derive(Debug, Clone, Default)]
pub struct Live {
    pub trays: BTreeMap<String, TrayState>,
    pub pending: Vec<PendingJob>,
    pub running: BTreeMap<u32, RunningJob>,
    pub now: i64,
}

/// One rack's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RackRow {
    pub name: String,
    /// One character per tray: `.` free, a letter per job, `*` shared by several jobs,
    /// `r` held (planned for a waiting job, or reserved), `-` drained, `x` down.
    pub map: String,
    pub free: usize,
    pub allocated: usize,
    pub unavailable: usize,
    /// Largest job that can start in this rack now, in trays, for each of [`SEGMENTS`].
    pub largest: Vec<usize>,
    /// Free healthy GPUs here that no waiting job can use.
    pub stranded_gpus: usize,
    /// Why, when `stranded_gpus` > 0 (`stranded_cause`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stranded_cause: Option<Cause>,
    /// What freeing the whole rack by preemption would cost now: its running jobs, and the
    /// GPU-hours they have run (all of each job's GPUs, since its start).
    pub clearing_jobs: usize,
    pub clearing_gpu_hours: f64,
}

/// Everything `nvl72 status` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    pub racks: Vec<RackRow>,
    pub gpus_per_tray: u32,
    pub free_trays: usize,
    pub unavailable_trays: usize,
    /// Largest job that can start anywhere now, in trays, for each of [`SEGMENTS`] (as the
    /// plugin would place it: one rack, or the fewest racks under `multi_rack`).
    pub largest: Vec<usize>,
    pub stranded_gpus: usize,
    /// Waiting jobs whose trays are free in total but not in a shape the racks allow.
    pub waiting_for_topology: Vec<PendingJob>,
    /// Job letter in the maps -> job id.
    pub legend: Vec<(char, u32)>,
    /// slurmctld's plugin switched rack placement off, and why (`scontrol show topology`'s
    /// first line, [`nvl72_engine::topoinfo::PLACEMENT_OFF`]): every figure above then assumes a
    /// placement that is not happening.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement_off: Option<String>,
}

/// Computes the status of `live` on the racks of `config`.
pub fn compute(config: &Config, live: &Live) -> Status {
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    let mut all: Vec<&str> = Vec::new();
    for rack in &config.racks {
        for node in &rack.nodes {
            names.insert(node.as_str(), all.len());
            all.push(node.as_str());
        }
    }
    let (topo, _) = Topology::resolve(config, all.len(), |n| names.get(n).copied());
    let view = ClusterView {
        trays: all
            .iter()
            .map(|n| match live.trays.get(*n) {
                Some(TrayState::Free) => Tray::free(topo.full_tray),
                Some(TrayState::Busy(_) | TrayState::Held) => Tray {
                    allocated: true,
                    ..Tray::default()
                },
                _ => Tray {
                    unavailable: true,
                    ..Tray::default()
                },
            })
            .collect(),
        ..ClusterView::default()
    };
    let legend = job_letters(live);
    let usable = usable_racks(&topo, &view, &live.pending);
    let waiting: Vec<&PendingJob> = live.pending.iter().filter(|j| waits_for_trays(j)).collect();
    let gpus = config.gpus_per_tray as usize;
    let racks: Vec<RackRow> = topo
        .racks
        .iter()
        .enumerate()
        .map(|(d, dom)| {
            let states: Vec<Option<&TrayState>> =
                dom.node_names.iter().map(|n| live.trays.get(n)).collect();
            let free = states
                .iter()
                .filter(|s| matches!(s, Some(TrayState::Free)))
                .count();
            let allocated = states
                .iter()
                .filter(|s| matches!(s, Some(TrayState::Busy(_) | TrayState::Held)))
                .count();
            RackRow {
                name: dom.name.clone(),
                map: states.iter().map(|s| tray_char(*s, &legend)).collect(),
                free,
                allocated,
                unavailable: dom.nodes.len() - free - allocated,
                largest: SEGMENTS
                    .iter()
                    .map(|&s| free.checked_div(s).map_or(free, |k| k * s))
                    .collect(),
                stranded_gpus: if usable[d] { 0 } else { free * gpus },
                stranded_cause: (!usable[d] && free > 0)
                    .then(|| stranded_cause(&topo, &view, &waiting, d)),
                clearing_jobs: jobs_in(&states).len(),
                clearing_gpu_hours: jobs_in(&states)
                    .iter()
                    .filter_map(|id| live.running.get(id))
                    .map(|j| gpu_hours(j, live.now, gpus))
                    .sum(),
            }
        })
        .collect();
    let waiting_for_topology = waiting_for_topology(&topo, &view, &live.pending);
    Status {
        free_trays: racks.iter().map(|r| r.free).sum(),
        unavailable_trays: racks.iter().map(|r| r.unavailable).sum(),
        stranded_gpus: racks.iter().map(|r| r.stranded_gpus).sum(),
        largest: SEGMENTS
            .iter()
            .map(|&s| largest_job(&topo, &view, s))
            .collect(),
        racks,
        gpus_per_tray: config.gpus_per_tray,
        waiting_for_topology,
        legend: legend.into_iter().map(|(id, c)| (c, id)).collect(),
        placement_off: None,
    }
}

/// The jobs running on any of a rack's trays, in id order.
fn jobs_in(states: &[Option<&TrayState>]) -> Vec<u32> {
    let mut ids: Vec<u32> = states
        .iter()
        .filter_map(|s| match s {
            Some(TrayState::Busy(jobs)) => Some(jobs.iter().copied()),
            _ => None,
        })
        .flatten()
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The GPU-hours a running job has run (all its trays' GPUs): what preempting it loses
/// back to its start (0 when its start is not known).
fn gpu_hours(job: &RunningJob, now: i64, gpus_per_tray: usize) -> f64 {
    let age = job.started.map_or(0, |s| (now - s).max(0));
    (job.trays * gpus_per_tray) as f64 * age as f64 / 3600.0
}

/// A letter per running job, in job id order: A-Z, then a-z, then `#`.
fn job_letters(live: &Live) -> BTreeMap<u32, char> {
    let mut ids: Vec<u32> = live
        .trays
        .values()
        .filter_map(|s| match s {
            TrayState::Busy(jobs) => Some(jobs.iter().copied()),
            _ => None,
        })
        .flatten()
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let letters = ('A'..='Z').chain('a'..='z');
    ids.into_iter()
        .zip(letters.map(Some).chain(std::iter::repeat(None)))
        .map(|(id, c)| (id, c.unwrap_or('#')))
        .collect()
}

fn tray_char(state: Option<&TrayState>, legend: &BTreeMap<u32, char>) -> char {
    match state {
        Some(TrayState::Free) => '.',
        Some(TrayState::Busy(jobs)) if jobs.len() == 1 => {
            legend.get(&jobs[0]).copied().unwrap_or('#')
        }
        Some(TrayState::Busy(_)) => '*',
        Some(TrayState::Held) => 'r',
        Some(TrayState::Drained) => '-',
        Some(TrayState::Down) | None => 'x',
    }
}

/// The request of a waiting job, as the plugin sees it.
fn request(job: &PendingJob) -> JobRequest {
    let mut req = match job.segment {
        Some(s) => JobRequest::segmented(job.min_nodes, s),
        None => JobRequest::nodes(job.min_nodes),
    };
    if job.segment.is_none() {
        req.max_nodes = usize::MAX / 2;
        req.demand = job.demand.clone();
    }
    req
}

/// Jobs that wait for trays (or behind higher-priority jobs that do), not for a dependency,
/// a hold, a start time or a limit: only they can use free trays now.
fn waits_for_trays(job: &PendingJob) -> bool {
    matches!(
        job.reason.as_str(),
        "Resources" | "Priority" | "None" | "" | "No_suitable_topology_unit_found"
    )
}

/// Racks whose free trays some waiting job could use now: a one-rack job whose need fits
/// them, or any rack of a placement the engine finds for a waiting job.
fn usable_racks(topo: &Topology, view: &ClusterView, pending: &[PendingJob]) -> Vec<bool> {
    let waiting: Vec<&PendingJob> = pending.iter().filter(|j| waits_for_trays(j)).collect();
    let mut usable = vec![waiting.is_empty(); topo.racks.len()];
    for job in waiting {
        let req = request(job);
        if let Ok(plan) = placement::plan(topo, view, &req) {
            for i in 0..plan.len() {
                for piece in plan.placement(i).pieces {
                    usable[piece.rack] = true;
                }
            }
        }
    }
    usable
}

/// Why rack `rack`'s free trays are of no use to the jobs `waiting` (for trays, in
/// `scontrol`'s order; the head is the first with reason `Resources`, else the first): the
/// simulator's causes in its order (`sim::measures::metrics`), with the engine as the judge of
/// `failed`. `too-few`: no waiting job's trays fit the free trays of the whole cluster.
/// `other` (a job of one piece) and `rack-set` (of several segments or racks): some job that
/// fits by count needs no more free trays in a rack than this one has, yet the engine's plans
/// leave the rack out. `failed`: the engine would place some waiting
/// job on this rack if its unavailable trays were free. `whole-rack`: the head has no
/// `--segment` and needs a rack or more. `remainder`: otherwise.
fn stranded_cause(
    topo: &Topology,
    view: &ClusterView,
    waiting: &[&PendingJob],
    rack: usize,
) -> Cause {
    let free_all = view.trays.iter().filter(|t| t.offered).count();
    let reqs: Vec<JobRequest> = waiting.iter().map(|j| request(j)).collect();
    if !reqs.iter().any(|r| r.trays_needed(topo) <= free_all) {
        return Cause::TooFew;
    }
    let head = waiting
        .iter()
        .position(|j| j.reason == "Resources")
        .unwrap_or(0);
    let whole =
        |i: usize| reqs[i].segment.is_none() && reqs[i].trays_needed(topo) >= topo.max_rack_size();
    let nodes = &topo.racks[rack].nodes;
    let free = nodes.iter().filter(|&&n| view.tray(n).offered).count();
    let m = topo.max_rack_size();
    let several = |r: &JobRequest| match r.segment {
        Some(s) => r.min_nodes > s,
        None => r.trays_needed(topo) > m,
    };
    let fits_here = |pieces: bool| {
        reqs.iter().enumerate().any(|(i, r)| {
            r.trays_needed(topo) <= free_all
                && !(i == head && whole(i))
                && several(r) == pieces
                && r.rack_need(topo) <= free
        })
    };
    if fits_here(false) {
        return Cause::Other;
    }
    if fits_here(true) {
        return Cause::RackSet;
    }
    let mut healed = view.clone();
    let mut any_down = false;
    for &n in nodes {
        if view.tray(n).unavailable {
            healed.trays[n] = Tray::free(topo.full_tray);
            any_down = true;
        }
    }
    let uses_rack = |req: &JobRequest| {
        placement::plan(topo, &healed, req).is_ok_and(|plan| {
            (0..plan.len()).any(|i| plan.placement(i).pieces.iter().any(|p| p.rack == rack))
        })
    };
    if any_down && reqs.iter().any(uses_rack) {
        Cause::Failed
    } else if whole(head) {
        Cause::WholeRack
    } else {
        Cause::Remainder
    }
}

/// Waiting jobs for which enough healthy trays are free in total, but the engine finds no
/// placement: they wait for the racks, not for capacity.
fn waiting_for_topology(
    topo: &Topology,
    view: &ClusterView,
    pending: &[PendingJob],
) -> Vec<PendingJob> {
    let free = view.trays.iter().filter(|t| t.offered).count();
    pending
        .iter()
        .filter(|job| waits_for_trays(job))
        .filter(|job| {
            let req = request(job);
            req.trays_needed(topo) <= free && placement::plan(topo, view, &req).is_err()
        })
        .cloned()
        .collect()
}

/// The largest job (in trays, a multiple of `segment` when given) the engine places now.
fn largest_job(topo: &Topology, view: &ClusterView, segment: usize) -> usize {
    let free = view.trays.iter().filter(|t| t.offered).count();
    let step = segment.max(1);
    (1..=free / step)
        .rev()
        .map(|k| k * step)
        .find(|&n| {
            let req = match segment {
                0 => JobRequest::nodes(n),
                s => JobRequest::segmented(n, s),
            };
            placement::plan(topo, view, &req).is_ok()
        })
        .unwrap_or(0)
}

/// The table `nvl72 status` prints.
pub fn render(st: &Status) -> String {
    let mut out = String::new();
    if let Some(why) = &st.placement_off {
        let _ = writeln!(
            out,
            "RACK PLACEMENT IS OFF in slurmctld: {why}; Slurm's generic selection places every \
             job (rebuild the plugin for this Slurm release)\n"
        );
    }
    let width = st
        .racks
        .iter()
        .map(|r| r.map.len())
        .max()
        .unwrap_or(0)
        .max(4);
    // Wide enough for the last row's "cluster".
    let name = st
        .racks
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let _ = writeln!(
        out,
        "{:<name$}  {:<width$}  free  unavail  largest job now: -N  seg4  seg8  seg16  stranded GPUs  why",
        "rack", "trays"
    );
    for r in &st.racks {
        let row = format!(
            "{:<name$}  {:<width$}  {:>4}  {:>7}  {:>21}  {:>4}  {:>4}  {:>5}  {:>13}  {}",
            r.name,
            r.map,
            r.free,
            r.unavailable,
            r.largest[0],
            r.largest[1],
            r.largest[2],
            r.largest[3],
            r.stranded_gpus,
            r.stranded_cause.map_or("", |c| c.name())
        );
        let _ = writeln!(out, "{}", row.trim_end());
    }
    let _ = writeln!(
        out,
        "{:<name$}  {:<width$}  {:>4}  {:>7}  {:>21}  {:>4}  {:>4}  {:>5}  {:>13}",
        "cluster",
        "",
        st.free_trays,
        st.unavailable_trays,
        st.largest[0],
        st.largest[1],
        st.largest[2],
        st.largest[3],
        st.stranded_gpus
    );
    let _ = writeln!(
        out,
        "\n. free  r held  - drained  x down  * shared  letters: jobs ({})",
        st.legend
            .iter()
            .map(|(c, id)| format!("{c}={id}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let causes: Vec<String> = nvl72_engine::idle::CAUSES
        .iter()
        .filter(|&&c| st.racks.iter().any(|r| r.stranded_cause == Some(c)))
        .map(|c| format!("{} = {}", c.name(), c.describe()))
        .collect();
    if !causes.is_empty() {
        let _ = writeln!(out, "why stranded: {}", causes.join("; "));
    }
    render_clearing(&mut out, st);
    if st.waiting_for_topology.is_empty() {
        let _ = writeln!(out, "no job waits for topology");
    } else {
        let _ = writeln!(
            out,
            "waiting for topology (trays are free, not in one rack):"
        );
        for j in &st.waiting_for_topology {
            let seg = j
                .segment
                .map_or(String::new(), |s| format!(" --segment={s}"));
            let gpus = match j.demand.gpus {
                0 => String::new(),
                g => format!(" ({g} GPUs)"),
            };
            let _ = writeln!(
                out,
                "  JobId={} -N {}{seg}{gpus}  {}",
                j.id, j.min_nodes, j.reason
            );
        }
    }
    out
}

/// What clearing each busy rack would cost by preemption now, the cheapest first: the order
/// `[policy] preemption_cost = "work"` weighs them in (which of the jobs Slurm may preempt
/// depends on their tiers, not shown here).
fn render_clearing(out: &mut String, st: &Status) {
    let mut busy: Vec<&RackRow> = st.racks.iter().filter(|r| r.clearing_jobs > 0).collect();
    if busy.is_empty() {
        return;
    }
    busy.sort_by(|a, b| {
        a.clearing_gpu_hours
            .total_cmp(&b.clearing_gpu_hours)
            .then(a.clearing_jobs.cmp(&b.clearing_jobs))
    });
    let rows: Vec<String> = busy
        .iter()
        .map(|r| {
            let jobs = if r.clearing_jobs == 1 { "job" } else { "jobs" };
            let out_of = match r.unavailable {
                0 => String::new(),
                n => format!(", {n} trays out"),
            };
            format!(
                "{} {} {jobs} {:.1} GPU-h{out_of}",
                r.name, r.clearing_jobs, r.clearing_gpu_hours
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "to clear a rack by preemption (its jobs, GPU-hours run), cheapest first: {}",
        rows.join("; ")
    );
}

/// The same figures in the text format of node_exporter's textfile collector.
pub fn prometheus(st: &Status) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, help: &str, rows: Vec<(String, usize)>| {
        gauge(&mut out, name, help, rows);
    };
    metric(
        "rack_placement_off",
        "1 when slurmctld's plugin switched rack placement off (a record layout mismatch).",
        vec![(String::new(), usize::from(st.placement_off.is_some()))],
    );
    let rack = |r: &RackRow| format!("rack=\"{}\"", r.name);
    metric(
        "rack_free_trays",
        "Free healthy trays per rack.",
        st.racks
            .iter()
            .map(|r| (format!("{{{}}}", rack(r)), r.free))
            .collect(),
    );
    metric(
        "rack_allocated_trays",
        "Trays running jobs per rack.",
        st.racks
            .iter()
            .map(|r| (format!("{{{}}}", rack(r)), r.allocated))
            .collect(),
    );
    metric(
        "rack_unavailable_trays",
        "Drained or down trays per rack.",
        st.racks
            .iter()
            .map(|r| (format!("{{{}}}", rack(r)), r.unavailable))
            .collect(),
    );
    metric(
        "rack_largest_job_trays",
        "Largest job that can start in the rack now, by --segment size (0: none).",
        st.racks
            .iter()
            .flat_map(|r| {
                SEGMENTS
                    .iter()
                    .zip(&r.largest)
                    .map(move |(s, v)| (format!("{{{},segment=\"{s}\"}}", rack(r)), *v))
            })
            .collect(),
    );
    metric(
        "largest_job_trays",
        "Largest job that can start anywhere now, by --segment size (0: none).",
        SEGMENTS
            .iter()
            .zip(&st.largest)
            .map(|(s, v)| (format!("{{segment=\"{s}\"}}"), *v))
            .collect(),
    );
    metric(
        "stranded_gpus",
        "Free healthy GPUs that no waiting job can use.",
        vec![(String::new(), st.stranded_gpus)],
    );
    metric(
        "rack_stranded_gpus",
        "Free healthy GPUs per rack that no waiting job can use, by cause (nvl72 simulate's idle causes).",
        st.racks
            .iter()
            .filter_map(|r| {
                let cause = r.stranded_cause?;
                Some((
                    format!("{{{},cause=\"{}\"}}", rack(r), cause.name()),
                    r.stranded_gpus,
                ))
            })
            .collect(),
    );
    metric(
        "rack_clearing_jobs",
        "Running jobs per rack: what freeing the whole rack by preemption would take.",
        st.racks
            .iter()
            .map(|r| (format!("{{{}}}", rack(r)), r.clearing_jobs))
            .collect(),
    );
    metric(
        "jobs_waiting_for_topology",
        "Waiting jobs whose trays are free in total but not in a shape the racks allow.",
        vec![(String::new(), st.waiting_for_topology.len())],
    );
    gauge(
        &mut out,
        "rack_clearing_gpu_hours",
        "GPU-hours the running jobs of each rack have run: what freeing the whole rack by \
         preemption would lose.",
        st.racks
            .iter()
            .map(|r| {
                (
                    format!("{{{}}}", rack(r)),
                    format!("{:.3}", r.clearing_gpu_hours),
                )
            })
            .collect(),
    );
    out
}

/// One gauge in node_exporter's text format: its help, type and a line per labelled value.
fn gauge<V: std::fmt::Display>(out: &mut String, name: &str, help: &str, rows: Vec<(String, V)>) {
    let _ = writeln!(out, "# HELP nvl72_{name} {help}\n# TYPE nvl72_{name} gauge");
    for (labels, v) in rows {
        let _ = writeln!(out, "nvl72_{name}{labels} {v}");
    }
}
