//! From the trays and Slurm's preemption candidates of one pending job to the exact trays the
//! plugin accepts while Slurm's run-now loop removes candidates (issue 52, docs/decisions.md):
//! the racks whose clearing costs least ([`cheapest_racks`]), and in them the free trays
//! first, then the victims' trays. Slurm preempts the removed candidates that overlap the
//! trays it accepts, so accepting only these trays makes the victims exactly the plan's.

use super::clearing::{
    best_fit_rack, cheapest_racks, slurm_victims, Blocker, ClearingCost, Pieces,
};
use super::request::JobRequest;
use crate::config::PreemptionCost;
use crate::topology::Topology;

/// A running job Slurm may preempt for the pending one, as the plugin reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub job: u32,
    /// Its preemption tier (partition PriorityTier or QOS priority): lower goes first.
    pub tier: u32,
    /// When it started (seconds since the epoch).
    pub started: i64,
    /// Seconds between its checkpoints, when the job says ([`checkpoint_interval`]): its
    /// preemption then loses only the work since the last one.
    pub checkpoint_every: Option<u32>,
    /// The usable rack trays it holds alone (preempting it frees them).
    pub trays: Vec<usize>,
}

/// The trays to accept and what taking them costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreemptionPlan {
    /// The trays of the placement, sorted.
    pub trays: Vec<usize>,
    /// The racks cleared.
    pub racks: Vec<usize>,
    /// The candidates preempted, in Slurm's order.
    pub victims: Vec<u32>,
    pub cost: ClearingCost,
}

/// The pieces `req` takes, each inside one rack: its `--segment` pieces, else the job in one
/// rack, or for a job larger than a rack full racks and the rest.
pub fn pieces_of(topo: &Topology, req: &JobRequest) -> Pieces {
    let per_rack = topo.max_rack_size().max(1);
    Pieces::of_job(req.trays_needed(topo), req.segment, per_rack)
}

/// The checkpoint interval a job declares in its `--comment`, in seconds: a word
/// `checkpoint=<n>` with `s`, `m` (the default) or `h` (`--comment="checkpoint=30m"`).
/// Slurm keeps no such field; the word is the plugin's convention (docs/usage.md).
pub fn checkpoint_interval(comment: &str) -> Option<u32> {
    comment
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .find_map(|word| {
            let value = word.strip_prefix("checkpoint=")?;
            let (digits, unit) = match value.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
                Some((i, _)) => value.split_at(i),
                None => (value, "m"),
            };
            let n: u32 = digits.parse().ok().filter(|&n| n > 0)?;
            let scale = match unit {
                "s" => 1,
                "m" => 60,
                "h" => 3600,
                _ => return None,
            };
            n.checked_mul(scale)
        })
}

/// What a candidate's preemption loses under `measure`, for [`Blocker::lost`]: GPU-seconds
/// since it started or its last checkpoint (`work`), nothing (`jobs`: then the fewest jobs
/// decide) or its trays.
fn lost(measure: PreemptionCost, topo: &Topology, c: &Candidate, now: i64) -> u64 {
    let trays = c.trays.len() as u64;
    match measure {
        PreemptionCost::Work | PreemptionCost::Slurm => {
            let age = u64::try_from(now.saturating_sub(c.started)).unwrap_or(0);
            let since_checkpoint = c.checkpoint_every.map_or(age, |e| age % u64::from(e));
            trays * u64::from(topo.gpus_per_tray) * since_checkpoint
        }
        PreemptionCost::Jobs => 0,
        PreemptionCost::Trays => trays,
    }
}

/// Each rack's free trays, and the candidates as [`Blocker`]s (in Slurm's order).
fn racks_and_blockers(
    topo: &Topology,
    free: &[usize],
    candidates: &[Candidate],
    now: i64,
) -> (Vec<usize>, Vec<Blocker>) {
    let mut free_by_rack = vec![0usize; topo.racks.len()];
    for &n in free {
        if let Some(r) = topo.rack_of(n) {
            free_by_rack[r] += 1;
        }
    }
    let measure = topo.policy.preemption_cost;
    let blockers = candidates
        .iter()
        .map(|c| {
            let mut by_rack: Vec<(usize, usize)> = Vec::new();
            for r in c.trays.iter().filter_map(|&n| topo.rack_of(n)) {
                match by_rack.iter_mut().find(|t| t.0 == r) {
                    Some(t) => t.1 += 1,
                    None => by_rack.push((r, 1)),
                }
            }
            Blocker {
                job: c.job,
                priority: c.tier,
                lost: lost(measure, topo, c, now),
                trays_by_rack: by_rack,
            }
        })
        .collect();
    (free_by_rack, blockers)
}

/// What Slurm's own order would preempt for a job in one rack (its run-now loop over a
/// plugin that takes the best-fitting rack, [`slurm_victims`]), and the cost by the
/// configured measure: the comparison the decision line gives. None for jobs of several
/// pieces (not modelled) or when the loop finds no rack.
pub fn slurm_order_choice(
    topo: &Topology,
    free: &[usize],
    candidates: &[Candidate],
    pieces: Pieces,
    now: i64,
) -> Option<(usize, Vec<u32>, ClearingCost)> {
    if pieces.count != 1 || pieces.rest != 0 {
        return None;
    }
    let (free_by_rack, blockers) = racks_and_blockers(topo, free, candidates, now);
    let (rack, victims) = slurm_victims(&free_by_rack, &blockers, pieces.size, 3, best_fit_rack)?;
    let taken: Vec<&Blocker> = blockers
        .iter()
        .filter(|b| victims.contains(&b.job))
        .collect();
    let cost = ClearingCost {
        priority: taken.iter().map(|b| b.priority).max().unwrap_or(0),
        lost: taken.iter().map(|b| b.lost).sum(),
        jobs: taken.len(),
    };
    Some((rack, victims, cost))
}

/// The cheapest plan for a job of `pieces` given the free trays offered to it and Slurm's
/// candidates, or None when no racks can hold it even with every candidate gone. A plan
/// with no victims means the job fits without preemption.
pub fn preemption_plan(
    topo: &Topology,
    free: &[usize],
    candidates: &[Candidate],
    pieces: Pieces,
    now: i64,
) -> Option<PreemptionPlan> {
    let (free_by_rack, blockers) = racks_and_blockers(topo, free, candidates, now);
    let set = cheapest_racks(&free_by_rack, &blockers, pieces)?;
    let victim_trays = |r: usize| -> Vec<usize> {
        candidates
            .iter()
            .filter(|c| set.victims.contains(&c.job))
            .flat_map(|c| c.trays.iter().copied())
            .filter(|&n| topo.rack_of(n) == Some(r))
            .collect()
    };
    let mut trays = Vec::new();
    for &(r, take) in &set.racks {
        let mut here: Vec<usize> = free
            .iter()
            .copied()
            .filter(|&n| topo.rack_of(n) == Some(r))
            .collect();
        here.sort_unstable();
        let mut theirs = victim_trays(r);
        theirs.sort_unstable();
        here.extend(theirs);
        trays.extend(here.into_iter().take(take));
    }
    trays.sort_unstable();
    Some(PreemptionPlan {
        trays,
        racks: set.racks.iter().map(|r| r.0).collect(),
        victims: set.victims,
        cost: set.cost,
    })
}
