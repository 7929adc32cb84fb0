//! Which running jobs a pending job preempts, per policy (issue 52): a job that cannot start
//! on free trays may take the trays of running jobs of a strictly lower tier that are
//! preemptable ([`crate::job::Tier`]).
//!
//! Two ways to choose, as in slurmctld:
//! - **Least loss** ([`least_loss`]): the plugin's steering, the engine's own planner
//!   (`placement::clearing::cheapest_racks`): the racks whose clearing costs least by (the
//!   highest tier taken, the work lost, the jobs), and there the free trays first, then the
//!   victims' (as `placement::preemption_plan` takes them).
//! - **Slurm's order** ([`slurm_order`]): cons_tres's run-now loop
//!   (`placement::clearing::slurm_victims`, ../shared/reference/preemption.md §1.3) on tray
//!   maps instead of rack counts: the candidates (lowest tier, then the smallest job, then
//!   submission order) are removed one at a time, cumulatively, and the policy's own placer
//!   is asked after each removal; its first placement ends the pass, the list is reordered
//!   (the job that made it fit, then the others by their trays in the placement) and the loop
//!   runs again, three passes in all (`reorder_count = 1`). The victims are the removed jobs
//!   that overlap the last placement. For a one-rack job the block model and the engine
//!   answer the best-fitting rack, so this is `slurm_victims` with `best_fit_rack`; naive
//!   (Slurm without a topology plugin) answers its consecutive best fit on any trays.

use serde::{Deserialize, Serialize};

use crate::contenders::free_map::FreeMap;
use crate::contenders::policy::{Placer, PolicyKind, SimRequest};
use crate::job::{Millis, SECOND};
use crate::placement::{cheapest_racks, Blocker, Pieces};

/// From the moment the victims are signalled to the preemptor's start: Slurm's `KillWait`
/// default (30 s between SIGTERM and SIGKILL), which a victim that ignores SIGTERM uses in
/// full. One constant for every policy, so it moves no comparison.
pub const KILL_DELAY: Millis = 30 * SECOND;

/// What happens to a victim (Slurm's `PreemptMode`; SUSPEND and GANG are not modelled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PreemptMode {
    /// Killed and queued again: it loses the work since its last checkpoint.
    #[default]
    Requeue,
    /// Killed for good: the work of the run is lost and the job never finishes.
    Cancel,
}

impl PreemptMode {
    pub fn is_default(&self) -> bool {
        *self == PreemptMode::default()
    }
}

/// How a policy chooses its victims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The plugin's steering.
    LeastLoss,
    /// Slurm's candidate order through the policy's own placement.
    Slurm,
}

impl Order {
    /// nvl72 and its `[policy]` variants steer; block, naive and `nvl72-slurm-order` take
    /// Slurm's order (the plugin with `preemption_cost = "slurm"`).
    pub fn of(kind: PolicyKind) -> Order {
        match kind {
            PolicyKind::Block | PolicyKind::Naive | PolicyKind::Nvl72SlurmOrder => Order::Slurm,
            _ => Order::LeastLoss,
        }
    }
}

/// A running job the pending one may preempt.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub job: usize,
    pub tier: u32,
    /// Its trays (all whole: the simulator's jobs never share a tray).
    pub trays: Vec<usize>,
    /// What preempting it loses now, GPU-seconds at NVLink speed (since its last checkpoint).
    pub lost: u64,
}

impl Candidate {
    /// The engine's view of it, in racks of `per_rack` trays.
    pub fn blocker(&self, per_rack: usize) -> Blocker {
        Blocker {
            job: self.job as u32,
            priority: self.tier,
            lost: self.lost,
            trays_by_rack: by_rack(&self.trays, per_rack),
        }
    }
}

/// The preemptor's trays and its victims (in candidate order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub trays: Vec<usize>,
    pub victims: Vec<usize>,
}

/// Slurm's candidate order: lowest tier, then the fewest trays, then submission order (the
/// job number, which is submission order in the simulator).
pub fn sort_slurm_order(candidates: &mut [Candidate]) {
    candidates.sort_by_key(|c| (c.tier, c.trays.len(), c.job));
}

/// The plugin's plan: the cheapest racks to clear and the trays there. None when no racks
/// hold the job even with every candidate gone, or when it needs no victim (then it waits
/// for the scheduler like any job).
pub fn least_loss(free: &FreeMap, candidates: &[Candidate], pieces: Pieces) -> Option<Choice> {
    let per_rack = free.per_rack();
    let free_by_rack: Vec<usize> = free.in_racks().iter().map(|&n| n as usize).collect();
    let blockers: Vec<Blocker> = candidates.iter().map(|c| c.blocker(per_rack)).collect();
    let set = cheapest_racks(&free_by_rack, &blockers, pieces)?;
    if set.victims.is_empty() {
        return None;
    }
    let victims: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| set.victims.contains(&(c.job as u32)))
        .collect();
    let mut trays = Vec::new();
    for &(rack, take) in &set.racks {
        let in_rack = rack * per_rack..(rack + 1) * per_rack;
        let mut theirs: Vec<usize> = victims
            .iter()
            .flat_map(|c| c.trays.iter().copied())
            .filter(|t| in_rack.contains(t))
            .collect();
        theirs.sort_unstable();
        let here = in_rack.clone().filter(|&t| free.is_free(t)).chain(theirs);
        trays.extend(here.take(take));
    }
    trays.sort_unstable();
    Some(Choice {
        trays,
        victims: victims.iter().map(|c| c.job).collect(),
    })
}

/// Slurm's run-now loop over `in_order` (already in [`sort_slurm_order`]'s order) with the
/// policy's placer as the topology plugin's answer. None when the job fits on free trays (no
/// preemption) or not even with every candidate gone.
pub fn slurm_order(
    placer: &mut Placer,
    free: &FreeMap,
    in_order: &[Candidate],
    ask: SimRequest,
) -> Option<Choice> {
    if placer.place(free, ask).is_some() {
        return None;
    }
    let mut order: Vec<&Candidate> = in_order.iter().collect();
    let mut last = None;
    for _ in 0..3 {
        let mut map = free.clone();
        let (made_fit, trays) = order.iter().enumerate().find_map(|(i, c)| {
            map.give(&c.trays);
            placer.place(&map, ask).map(|t| (i, t))
        })?;
        let overlap = |c: &Candidate| c.trays.iter().filter(|t| trays.contains(t)).count();
        let victims = order[..=made_fit]
            .iter()
            .filter(|c| overlap(c) > 0)
            .map(|c| c.job)
            .collect();
        // Slurm's `usable_nodes`: the job that made it fit first, earlier ones by their
        // overlap with the placement, later ones 0; a stable sort keeps ties in order.
        let mut keyed: Vec<(usize, &Candidate)> = order
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let key = match i.cmp(&made_fit) {
                    std::cmp::Ordering::Equal => usize::MAX,
                    std::cmp::Ordering::Less => overlap(c),
                    std::cmp::Ordering::Greater => 0,
                };
                (key, *c)
            })
            .collect();
        keyed.sort_by_key(|&(k, _)| std::cmp::Reverse(k));
        order = keyed.into_iter().map(|(_, c)| c).collect();
        last = Some(Choice { trays, victims });
    }
    last
}

/// `(rack, trays there)` of a job's trays.
fn by_rack(trays: &[usize], per_rack: usize) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for r in trays.iter().map(|t| t / per_rack) {
        match out.iter_mut().find(|x| x.0 == r) {
            Some(x) => x.1 += 1,
            None => out.push((r, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests;
