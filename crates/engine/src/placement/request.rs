//! What the engine is asked: the topology-relevant part of a job request (node counts,
//! `--segment`, `-w`, the job's demand, its end, its own segment rule).

use crate::config::{SegmentPlacement, Switches};
use crate::demand::Demand;
use crate::topology::Topology;

/// The topology-relevant part of a job request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRequest {
    pub min_nodes: usize,
    /// Upper bound on nodes; equal to `min_nodes` for `-N n`.
    pub max_nodes: usize,
    /// `--segment`: every group of this many nodes must share a domain.
    pub segment: Option<usize>,
    /// `-w` nodes that must be part of the allocation.
    pub required: Vec<usize>,
    /// What the job needs besides a node count (GPUs, CPUs, task layout).
    pub demand: Demand,
    /// When the job is expected to end (start now plus its time limit), on the clock of
    /// [`ClusterView::busy_until`](crate::view::ClusterView::busy_until); None when unknown (no `end_time` rule then).
    pub ends_at: Option<u32>,
    /// The job's own segment rule (`--spread-segments`, `--consolidate-segments` on Slurm
    /// 25.11+), which overrides `[policy] segment_placement`.
    pub segment_placement: Option<SegmentPlacement>,
    /// `--switches=count[@max-time]` (or `[policy] switches`): the most racks the job may
    /// take while it has not waited out its time; None keeps every rule as it is.
    pub switches: Option<RackLimit>,
}

/// A job's rack limit, the plugin's reading of `--switches=count[@max-time]`: topology/tree
/// counts leaf switches, an NVL72 job crosses NVLink domains, so the count is racks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RackLimit {
    /// The most racks the job may take while the limit holds (`req_switch`). 0 counts as
    /// 1: every job takes a rack.
    pub max_racks: usize,
    /// The job has waited `wait4switch` seconds: it may take as many racks as it needs now
    /// (topology/tree then sets `best_switch` whatever the count).
    pub lifted: bool,
}

impl RackLimit {
    /// The limit that still binds: None once lifted.
    pub fn active(self) -> Option<usize> {
        (!self.lifted).then_some(self.max_racks.max(1))
    }

    /// A job's limit at `now` (seconds, the clock of `wait4switch_start`): its own
    /// `--switches`, or else `policy` (`[policy] switches`); None when neither sets one.
    /// Lifted once the job has waited its time, counted as topology/tree counts it:
    /// `now - wait4switch_start >= wait4switch`. A clock not started yet (0) or ahead of
    /// `now` counts as no wait; a wait of `NO_VAL` or `INFINITE` never ends (tree's
    /// comparison never reaches them either).
    pub fn of_job(job: JobSwitches, policy: Switches, now: i64) -> Option<RackLimit> {
        let (count, wait) = match (job.req_switch, policy) {
            (0 | SLURM_NO_VAL, Switches::Off) => return None,
            (
                0 | SLURM_NO_VAL,
                Switches::Limit {
                    count,
                    wait_minutes,
                },
            ) => (count, Some(u64::from(wait_minutes) * 60)),
            (count, _) => {
                let wait = job.wait4switch;
                (
                    count,
                    (wait != SLURM_NO_VAL && wait != SLURM_INFINITE).then_some(u64::from(wait)),
                )
            }
        };
        let waited = match job.wait4switch_start {
            0 => 0,
            start => u64::try_from(now.saturating_sub(start)).unwrap_or(0),
        };
        Some(RackLimit {
            max_racks: usize::try_from(count).unwrap_or(usize::MAX),
            lifted: wait.is_some_and(|w| waited >= w),
        })
    }
}

/// Slurm's `NO_VAL` (slurm.h): a 32-bit field that was not set.
pub const SLURM_NO_VAL: u32 = 0xffff_fffe;
/// Slurm's `INFINITE` (slurm.h) for 32-bit fields.
pub const SLURM_INFINITE: u32 = 0xffff_ffff;

/// The job record's `--switches` fields, as slurmctld keeps them: the plugin reads them
/// (`ffi::job`) and [`RackLimit::of_job`] turns them into the job's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobSwitches {
    /// `--switches=count`; 0 (or `NO_VAL`) when the job did not ask for a limit.
    pub req_switch: u32,
    /// Seconds the job may wait for its count: `@max-time`, capped by slurmctld at
    /// `SchedulerParameters=max_switch_wait` (300 s by default, also without `@`).
    pub wait4switch: u32,
    /// When the job's first evaluation started its clock (0: not yet). Not in slurmctld's
    /// saved state: a restart starts it again, as for topology/tree.
    pub wait4switch_start: i64,
}

impl JobRequest {
    /// How many `--segment` pieces the job asks for, and their size (`None` without one).
    pub fn segments(&self) -> Option<(usize, usize)> {
        self.segment.map(|s| (self.min_nodes / s, s))
    }

    pub fn nodes(n: usize) -> JobRequest {
        JobRequest {
            min_nodes: n,
            max_nodes: n,
            segment: None,
            required: Vec::new(),
            demand: Demand::default(),
            ends_at: None,
            segment_placement: None,
            switches: None,
        }
    }

    /// A job sized by GPUs alone (`--gpus=g`): Slurm leaves the node count open.
    pub fn gpus(g: u64, max_nodes: usize) -> JobRequest {
        JobRequest {
            min_nodes: 1,
            max_nodes,
            demand: Demand {
                gpus: g,
                cpus: 1,
                trays: 0,
            },
            ..JobRequest::nodes(1)
        }
    }

    /// The fewest trays this job needs on whole free trays of `topo`: its node minimum, or
    /// more when its GPUs, CPUs or task layout need more. Decides "one rack or several".
    pub fn trays_needed(&self, topo: &Topology) -> usize {
        self.min_nodes.max(self.demand.trays_at(topo.full_tray))
    }

    pub fn segmented(n: usize, segment: usize) -> JobRequest {
        JobRequest {
            segment: Some(segment),
            ..JobRequest::nodes(n)
        }
    }

    /// How this job's segments are placed: its own rule, else the policy's.
    pub fn segment_rule(&self, topo: &Topology) -> SegmentPlacement {
        self.segment_placement
            .unwrap_or(topo.policy.segment_placement)
    }

    /// The fewest free trays a rack must have for the engine to put part of this job there:
    /// the job when it fits a rack, a segment, or for a larger job the share the last of its
    /// `ceil(n / M)` racks must hold (1 with `multi_rack = "start-now"`). The idle causes of
    /// the simulator and `nvl72 status` are judged by it.
    pub fn rack_need(&self, topo: &Topology) -> usize {
        let m = topo.max_rack_size().max(1);
        let n = self.trays_needed(topo);
        match self.segment {
            Some(s) => s.min(n).min(m),
            None if n <= m => n,
            None if topo.policy.multi_rack == crate::config::MultiRack::StartNow => 1,
            None => n.saturating_sub(m * (n.div_ceil(m) - 1)).clamp(1, m),
        }
    }

    /// A node range or an open node count: Slurm decides how many nodes within the set.
    pub fn is_flexible(&self) -> bool {
        self.max_nodes > self.min_nodes && self.segment.is_none()
    }
}
