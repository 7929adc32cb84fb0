//! Which rack to clear for a job that can start only by preemption (issue 52): of the racks
//! whose free trays and preemptable jobs can hold the job, the one whose clearing loses
//! least. Slurm's own candidate order (tier, then the smallest job) knows nothing of racks
//! and clears the first rack its order happens to free; this is the plan the plugin steers
//! it to (docs/decisions.md).
//!
//! The cost of a set of victims, compared in this order: the highest preemption priority
//! among them (Slurm's key, so a higher tier is never taken where a lower one would do), the
//! work they lose, then how many they are. Exact for victims that own whole trays; a tray
//! shared by several jobs is not counted as clearable by the caller.

/// A running job Slurm may preempt for the pending one, and where it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    pub job: u32,
    /// Slurm's preemption priority of the job (partition tier or QOS priority): lower goes
    /// first.
    pub priority: u32,
    /// The work its preemption loses (GPU-seconds since its start, or since its last
    /// checkpoint where known).
    pub lost: u64,
    /// `(rack, trays)` it holds: preempting it frees them all.
    pub trays_by_rack: Vec<(usize, usize)>,
}

/// What clearing costs, compared field by field in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct ClearingCost {
    /// The highest preemption priority among the victims (0 without victims).
    pub priority: u32,
    pub lost: u64,
    pub jobs: usize,
}

/// The rack to clear, the jobs to preempt there (in `blockers` order) and their cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clearing {
    pub rack: usize,
    pub victims: Vec<u32>,
    pub cost: ClearingCost,
}

/// The pieces a job takes, each inside one rack: `count` pieces of `size` trays (several may
/// share a rack, as `--segment` pieces do) and, for a job larger than a rack, one more of
/// `rest` trays (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pieces {
    pub size: usize,
    pub count: usize,
    pub rest: usize,
}

impl Pieces {
    /// A job of `trays` in one rack.
    pub fn one_rack(trays: usize) -> Pieces {
        Pieces {
            size: trays,
            count: 1,
            rest: 0,
        }
    }

    /// The pieces a job of `trays` takes: its `--segment` pieces, else the job in one rack
    /// of `per_rack` trays, or for a larger job full racks and the rest.
    pub fn of_job(trays: usize, segment: Option<usize>, per_rack: usize) -> Pieces {
        match segment {
            Some(s) if s > 0 => Pieces {
                size: s,
                count: trays.div_ceil(s),
                rest: 0,
            },
            _ if trays <= per_rack => Pieces::one_rack(trays),
            _ => Pieces {
                size: per_rack,
                count: trays / per_rack,
                rest: trays % per_rack,
            },
        }
    }
}

/// The racks to clear for a job of several pieces: how many trays each takes there (in
/// rack order), the jobs to preempt (in `blockers` order) and their cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RackSetClearing {
    pub racks: Vec<(usize, usize)>,
    pub victims: Vec<u32>,
    pub cost: ClearingCost,
}

/// The cheapest rack to clear for a job of `need` trays in one rack, given each rack's free
/// trays (`free[r]`) and the preemptable jobs; `None` when no rack can hold it even with
/// every blocker gone. A rack with `need` free trays costs nothing: the job needs no
/// preemption there. Equal costs go to the rack first in `free`'s order.
pub fn cheapest_rack(free: &[usize], blockers: &[Blocker], need: usize) -> Option<Clearing> {
    let set = cheapest_racks(free, blockers, Pieces::one_rack(need))?;
    Some(Clearing {
        rack: set.racks[0].0,
        victims: set.victims,
        cost: set.cost,
    })
}

/// The cheapest set of racks to clear for a job of `pieces`: the lowest priority ceiling
/// under which the pieces fit, then the least (lost, jobs) there, by dynamic programming
/// over the racks (state: pieces placed so far). A victim running in two chosen racks is
/// counted in each (an over-estimate; the plugin's victims own their trays, which one rack
/// holds in the NVL72 norm). Equal costs go to the racks first in `free`'s order.
pub fn cheapest_racks(
    free: &[usize],
    blockers: &[Blocker],
    pieces: Pieces,
) -> Option<RackSetClearing> {
    let mut ceilings: Vec<u32> = blockers.iter().map(|b| b.priority).collect();
    ceilings.push(0);
    ceilings.sort_unstable();
    ceilings.dedup();
    ceilings
        .into_iter()
        .find_map(|ceiling| cheapest_under(free, blockers, pieces, ceiling))
}

/// [`cheapest_racks`] with only the blockers of priority `ceiling` or lower.
fn cheapest_under(
    free: &[usize],
    blockers: &[Blocker],
    pieces: Pieces,
    ceiling: u32,
) -> Option<RackSetClearing> {
    let allowed: Vec<Blocker> = blockers
        .iter()
        .filter(|b| b.priority <= ceiling)
        .cloned()
        .collect();
    let rests = usize::from(pieces.rest > 0);
    // state: (pieces of `size` placed, rest placed); value: ((lost, jobs), per-rack choices).
    type Way = ((u64, usize), Vec<(usize, usize, Clearing)>);
    let states = (pieces.count + 1) * (rests + 1);
    let index = |m: usize, h: usize| m * (rests + 1) + h;
    let mut best: Vec<Option<Way>> = vec![None; states];
    best[index(0, 0)] = Some(((0, 0), Vec::new()));
    for (rack, &free_here) in free.iter().enumerate() {
        // What this rack can take, and at what cost: m pieces and maybe the rest.
        let mut options: Vec<(usize, usize, Clearing)> = Vec::new();
        for h in 0..=rests {
            for m in 0..=pieces.count {
                let need = m * pieces.size + h * pieces.rest;
                if need == 0 {
                    continue;
                }
                match cheapest_in_rack(rack, free_here, &allowed, need) {
                    Some(c) => options.push((m, h, c)),
                    None => break, // more pieces need more trays still
                }
            }
        }
        if options.is_empty() {
            continue;
        }
        let before = best.clone();
        for m0 in 0..=pieces.count {
            for h0 in 0..=rests {
                let Some(((lost, jobs), ways)) = &before[index(m0, h0)] else {
                    continue;
                };
                for (m, h, c) in &options {
                    if h0 + h > rests {
                        continue;
                    }
                    let to = index((m0 + m).min(pieces.count), h0 + h);
                    let cost = (lost + c.cost.lost, jobs + c.cost.jobs);
                    if best[to].as_ref().map_or(true, |(old, _)| cost < *old) {
                        let mut ways = ways.clone();
                        ways.push((*m, *h, c.clone()));
                        best[to] = Some((cost, ways));
                    }
                }
            }
        }
    }
    let (_, ways) = best[index(pieces.count, rests)].take()?;
    let mut victims: Vec<u32> = Vec::new();
    let mut racks = Vec::new();
    let mut priority = 0;
    for (m, h, c) in &ways {
        racks.push((c.rack, m * pieces.size + h * pieces.rest));
        priority = priority.max(c.cost.priority);
        for v in &c.victims {
            if !victims.contains(v) {
                victims.push(*v);
            }
        }
    }
    let chosen = |b: &&Blocker| victims.contains(&b.job);
    Some(RackSetClearing {
        cost: ClearingCost {
            priority,
            lost: blockers.iter().filter(chosen).map(|b| b.lost).sum(),
            jobs: victims.len(),
        },
        victims: blockers.iter().filter(chosen).map(|b| b.job).collect(),
        racks,
    })
}

/// The cheapest victims in `rack` that free what its `free` trays lack of `need`.
fn cheapest_in_rack(
    rack: usize,
    free: usize,
    blockers: &[Blocker],
    need: usize,
) -> Option<Clearing> {
    let deficit = need.saturating_sub(free);
    let here: Vec<(&Blocker, usize)> = blockers
        .iter()
        .filter_map(|b| {
            let trays: usize = b
                .trays_by_rack
                .iter()
                .filter(|t| t.0 == rack)
                .map(|t| t.1)
                .sum();
            (trays > 0).then_some((b, trays))
        })
        .collect();
    cheapest_cover(&here, deficit).map(|victims| Clearing {
        rack,
        cost: ClearingCost {
            priority: victims.iter().map(|b| b.priority).max().unwrap_or(0),
            lost: victims.iter().map(|b| b.lost).sum(),
            jobs: victims.len(),
        },
        victims: victims.iter().map(|b| b.job).collect(),
    })
}

/// The least (lost work, jobs) set of `items` (blockers and the trays each frees here) that
/// frees at least `deficit` trays, in `items`' order: a 0/1 knapsack over trays freed
/// (capped at the deficit, at most a rack's size), exact because the cost adds up field by
/// field.
fn cheapest_cover<'b>(items: &[(&'b Blocker, usize)], deficit: usize) -> Option<Vec<&'b Blocker>> {
    // best[t]: the cheapest set found freeing t trays (t = deficit: at least that many), as
    // ((lost, jobs), indices into `items`).
    type Cover = ((u64, usize), Vec<usize>);
    let mut best: Vec<Option<Cover>> = vec![None; deficit + 1];
    best[0] = Some(((0, 0), Vec::new()));
    for (i, &(b, trays)) in items.iter().enumerate() {
        for t in (0..=deficit).rev() {
            let Some(((lost, jobs), set)) = best[t].clone() else {
                continue;
            };
            let to = (t + trays).min(deficit);
            let cost = (lost + b.lost, jobs + 1);
            if best[to].as_ref().map_or(true, |(c, _)| cost < *c) {
                let mut set = set;
                set.push(i); // sets grow in `items` order
                best[to] = Some((cost, set));
            }
        }
    }
    let (_, chosen) = best[deficit].take()?;
    Some(chosen.iter().map(|&i| items[i].0).collect())
}

/// Slurm's own choice of victims on the run-now path (cons_tres `_run_now`, read in
/// ../shared/reference/preemption.md §1.3), for a job of `need` trays in one rack, whole-tray
/// victims: the candidates (`in_order`, Slurm's order: lowest priority, then fewest nodes)
/// are removed one at a time, cumulatively, and after each removal the topology plugin is
/// asked for a rack (`accept`: each rack's free trays plus those of the removed jobs in it;
/// it answers the rack it would place the job in, or `None`). At the first answer the list is
/// reordered (the job that made it fit first, then the others by their trays in the chosen
/// rack, the rest after) and the loop starts again, `passes` successes in all (`reorder_count
/// = 1`, Slurm's default, gives 3). The victims are the removed jobs with trays in the rack of
/// the last pass. This is what the plugin steers by accepting only its own rack.
pub fn slurm_victims(
    free: &[usize],
    in_order: &[Blocker],
    need: usize,
    passes: usize,
    accept: impl Fn(&[usize], usize) -> Option<usize>,
) -> Option<(usize, Vec<u32>)> {
    // The plain test first: where the job fits on free trays, nothing is preempted.
    if let Some(rack) = accept(free, need) {
        return Some((rack, Vec::new()));
    }
    let mut order: Vec<&Blocker> = in_order.iter().collect();
    let mut last = None;
    for _ in 0..passes.max(1) {
        let mut avail = free.to_vec();
        let (made_fit, rack) = order.iter().enumerate().find_map(|(i, b)| {
            for &(r, t) in &b.trays_by_rack {
                avail[r] += t;
            }
            accept(&avail, need).map(|rack| (i, rack))
        })?;
        let in_rack = |b: &Blocker| -> usize {
            b.trays_by_rack
                .iter()
                .filter(|t| t.0 == rack)
                .map(|t| t.1)
                .sum()
        };
        let victims: Vec<u32> = order[..=made_fit]
            .iter()
            .filter(|b| in_rack(b) > 0)
            .map(|b| b.job)
            .collect();
        last = Some((rack, victims));
        // Slurm's `usable_nodes`: the job that made it fit first, earlier ones by their
        // overlap with the chosen nodes, later ones 0; a stable sort keeps ties in order.
        let key = |i: usize, b: &Blocker| match i.cmp(&made_fit) {
            std::cmp::Ordering::Equal => usize::MAX,
            std::cmp::Ordering::Less => in_rack(b),
            std::cmp::Ordering::Greater => 0,
        };
        let mut keyed: Vec<(usize, &Blocker)> = order
            .iter()
            .enumerate()
            .map(|(i, b)| (key(i, b), *b))
            .collect();
        keyed.sort_by_key(|&(k, _)| std::cmp::Reverse(k));
        order = keyed.into_iter().map(|(_, b)| b).collect();
    }
    last
}

/// What topology/block and topology/nvl72 without steering answer in [`slurm_victims`]: the
/// best-fitting rack that holds the job (fewest trays left over, then the first).
pub fn best_fit_rack(avail: &[usize], need: usize) -> Option<usize> {
    (0..avail.len())
        .filter(|&r| avail[r] >= need)
        .min_by_key(|&r| (avail[r] - need, r))
}
