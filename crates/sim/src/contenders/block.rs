//! A model of Slurm 24.11 topology/block's node choice, for exclusive whole-tray jobs.
//!
//! Written from a reading of `src/plugins/topology/block/eval_nodes_block.c` (24.11.5) and
//! `block_record.c`, reduced to what decides *which nodes* an exclusive job gets when every
//! node has the same weight and enough CPUs, GPUs and memory:
//!
//! 1. **Levels.** `BlockSizes` gives the base block (one rack, 18 trays) and the enforced
//!    power-of-two levels above it. A job of `n` nodes wants level `ceil(log2(ceil(n/18)))`,
//!    rounded up to the next configured level. No such level: the whole cluster is one block.
//!    `llblock` is the highest configured level below the wanted one.
//! 2. **Block choice.** Candidate blocks are the aligned groups of `2^level` racks in
//!    configuration order (the last group may be partial). A group qualifies when it has
//!    enough free nodes (counting only its `max_llblock` fullest llblocks when Slurm tracks
//!    llblocks). Among qualifying groups the one with the *fewest* free nodes wins; on equal
//!    counts the *later* group wins (`bnc <= block_node_cnt`).
//! 3. **Greedy fill** (`_choose_best_bblock`): repeatedly pick a rack of the chosen group:
//!    with llblock tracking, racks in an llblock already used first, then the smallest llblock
//!    that covers the remainder, else the largest; then the smallest rack that covers the
//!    remainder alone, else the largest (later racks win ties). Nodes are taken in bitmap order.
//! 4. **Segments.** `--segment=s` must divide `n` and be at most the base block size, else
//!    the job is rejected at submission. Each segment is then placed as an independent
//!    sub-job of `s` nodes against the free map minus the segments placed before it.
//!
//! Left out: node weights, CPU/GRES/memory counting (the simulator's jobs are exclusive
//! whole trays), `-w` required nodes and node ranges.
//!
//! [`choose`] is the entry point a differential test drives from a recorded fixture: a free
//! vector and a request in, the node list (or nothing) out.

use std::fmt;

/// The block table: racks of `trays` consecutive node indices, and the configured levels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockConfig {
    pub racks: usize,
    /// Nodes per rack; also the base block size (`bblock_node_cnt`).
    pub trays: usize,
    /// Bit `l` set: `BlockSizes` contains `trays * 2^l` (`block_levels`).
    levels: u16,
}

impl BlockConfig {
    /// `BlockSizes=18,36,72,...` up to the number of nodes in the cluster: what the project's
    /// lab (`scripts/lab-up.sh`) writes, and what a site following NVIDIA's advice of one block
    /// per NVL72 rack with aggregation levels would configure.
    pub fn lab(racks: usize, trays: usize) -> BlockConfig {
        let mut levels = 1u16;
        let mut l = 1;
        while l < 16 && (trays << l) <= racks * trays {
            levels |= 1 << l;
            l += 1;
        }
        BlockConfig {
            racks,
            trays,
            levels,
        }
    }

    /// An explicit `BlockSizes` list; the first value must be the rack size, every value a
    /// power-of-two multiple of it (as `block_record.c` demands).
    pub fn with_block_sizes(
        racks: usize,
        trays: usize,
        sizes: &[usize],
    ) -> Result<BlockConfig, String> {
        if sizes.first() != Some(&trays) {
            return Err(format!(
                "the first BlockSizes value must be the rack size {trays}"
            ));
        }
        let mut levels = 0u16;
        for &s in sizes {
            let ratio = s / trays;
            if s % trays != 0 || !ratio.is_power_of_two() || ratio.trailing_zeros() > 15 {
                return Err(format!("invalid BlockSizes value {s}"));
            }
            levels |= 1 << ratio.trailing_zeros();
        }
        Ok(BlockConfig {
            racks,
            trays,
            levels,
        })
    }

    /// The configured block sizes in nodes, smallest first.
    pub fn block_sizes(&self) -> Vec<usize> {
        (0..16)
            .filter(|l| self.levels & (1 << l) != 0)
            .map(|l| self.trays << l)
            .collect()
    }

    fn nodes(&self) -> usize {
        self.racks * self.trays
    }
}

/// Why topology/block gives no nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockError {
    /// Rejected at submission (`ESLURM_REQUESTED_TOPO_CONFIG_UNAVAILABLE`, or more nodes
    /// than the cluster has).
    Rejected(String),
    /// No block has room now (`SLURM_ERROR`): the job stays pending.
    Pending,
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::Rejected(m) => write!(f, "rejected: {m}"),
            BlockError::Pending => f.write_str("pending"),
        }
    }
}

/// What topology/block (`BlockSizes` as [`BlockConfig::lab`]) gives an exclusive job of `n`
/// nodes on `racks` racks of `trays` nodes, where `free[i]` says node `i` may be used.
/// `segment` 0 or `None` means no `--segment`. Nodes come segment by segment, each in the
/// order Slurm adds them. `None` when the job is rejected or must wait.
pub fn choose(
    free: &[bool],
    racks: usize,
    trays: usize,
    n: usize,
    segment: Option<usize>,
) -> Option<Vec<usize>> {
    evaluate(&BlockConfig::lab(racks, trays), free, n, segment).ok()
}

/// [`choose`] for any block configuration, telling rejection from waiting.
pub fn evaluate(
    cfg: &BlockConfig,
    free: &[bool],
    n: usize,
    segment: Option<usize>,
) -> Result<Vec<usize>, BlockError> {
    evaluate_counted(cfg, free, &rack_counts(cfg, free), n, segment)
}

/// Free nodes per rack.
fn rack_counts(cfg: &BlockConfig, free: &[bool]) -> Vec<u32> {
    free.chunks(cfg.trays)
        .map(|rack| rack.iter().filter(|&&f| f).count() as u32)
        .collect()
}

/// [`evaluate`] with the free nodes per rack already counted (`counts[r]` for rack `r`).
pub fn evaluate_counted(
    cfg: &BlockConfig,
    free: &[bool],
    counts: &[u32],
    n: usize,
    segment: Option<usize>,
) -> Result<Vec<usize>, BlockError> {
    if let Err(why) = validate(cfg, n, segment) {
        return Err(BlockError::Rejected(why));
    }
    assert_eq!(free.len(), cfg.nodes(), "free map must cover every node");
    let segment = segment.filter(|&s| s > 0);
    let (count, size) = match segment {
        Some(s) => (n / s, s),
        None => (1, n),
    };
    let levels = Levels::new(cfg, size);
    if count == 1 {
        return place_one(cfg, free, counts, size, &levels).ok_or(BlockError::Pending);
    }
    let (mut map, mut counts) = (free.to_vec(), counts.to_vec());
    let mut all = Vec::with_capacity(n);
    for _ in 0..count {
        let nodes = place_one(cfg, &map, &counts, size, &levels).ok_or(BlockError::Pending)?;
        for &node in &nodes {
            map[node] = false;
            counts[node / cfg.trays] -= 1;
        }
        all.extend(nodes);
    }
    Ok(all)
}

/// A job sized by GPUs alone (`--gpus=4*n`, no `-N`), exclusive 4-GPU trays: Slurm gives
/// block a minimum of one node, so `eval_nodes_block` picks the base block by node count
/// alone (at least one free node, fewest free; ties go to the later block, since it compares
/// with `<=`) and only then checks the GPUs inside that block. Too few there and the job
/// waits: no other block is tried, and no job larger than a base block ever fits
/// (`eval_nodes_block.c` 24.11.5 lines 437-498 and 615-654). Exact for identical nodes of
/// equal weight; `None` means it waits (or never runs).
pub fn evaluate_gpu_sized(cfg: &BlockConfig, free: &[bool], n: usize) -> Option<Vec<usize>> {
    evaluate_gpu_sized_counted(cfg, free, &rack_counts(cfg, free), n)
}

/// [`evaluate_gpu_sized`] with the free nodes per rack already counted.
pub fn evaluate_gpu_sized_counted(
    cfg: &BlockConfig,
    free: &[bool],
    counts: &[u32],
    n: usize,
) -> Option<Vec<usize>> {
    assert_eq!(free.len(), cfg.nodes(), "free map must cover every node");
    let free_in = |r: usize| counts[r] as usize;
    let mut best: Option<(usize, usize)> = None;
    for r in 0..cfg.racks {
        let f = free_in(r);
        if f >= 1 && best.map_or(true, |(_, bf)| f <= bf) {
            best = Some((r, f));
        }
    }
    let (rack, f) = best?;
    if f < n {
        return None;
    }
    let nodes: Vec<usize> = (rack * cfg.trays..(rack + 1) * cfg.trays)
        .filter(|&i| free[i])
        .take(n)
        .collect();
    Some(nodes)
}

/// The submission-time checks: slurmctld's node count, then `eval_nodes_block`'s segment rules.
pub fn validate(cfg: &BlockConfig, n: usize, segment: Option<usize>) -> Result<(), String> {
    if n == 0 || n > cfg.nodes() {
        return Err(format!(
            "{n} nodes requested, the cluster has {}",
            cfg.nodes()
        ));
    }
    match segment.filter(|&s| s > 0) {
        Some(s) if s > cfg.trays => Err(format!(
            "segment ({s}) > bblock_node_cnt ({}) is not supported",
            cfg.trays
        )),
        Some(s) if n % s != 0 => Err(format!(
            "segment_size ({s}) does not fit the job size ({n})"
        )),
        _ => Ok(()),
    }
}

/// The level plan for a (sub-)job of `rem` nodes, computed once before the segment loop.
struct Levels {
    /// `None`: no configured level is large enough, the whole cluster is one block.
    block_level: Option<u32>,
    llblock_level: u32,
    max_llblock: i64,
}

impl Levels {
    fn new(cfg: &BlockConfig, rem: usize) -> Levels {
        let bblocks = rem.div_ceil(cfg.trays);
        let want = bblocks.next_power_of_two().trailing_zeros();
        let llblock_level = if want > 0 {
            last_set_at_or_below(cfg.levels, want - 1).unwrap_or(0)
        } else {
            0
        };
        let llblock_size = cfg.trays << llblock_level;
        Levels {
            block_level: first_set_at_or_above(cfg.levels, want),
            llblock_level,
            max_llblock: rem.div_ceil(llblock_size) as i64,
        }
    }
}

fn first_set_at_or_above(bits: u16, from: u32) -> Option<u32> {
    (from..16).find(|l| bits & (1 << l) != 0)
}

fn last_set_at_or_below(bits: u16, from: u32) -> Option<u32> {
    (0..=from.min(15)).rev().find(|l| bits & (1 << l) != 0)
}

/// One pass of `eval_nodes_block` for `rem` nodes against `map`.
fn place_one(
    cfg: &BlockConfig,
    map: &[bool],
    count: &[u32],
    rem: usize,
    lv: &Levels,
) -> Option<Vec<usize>> {
    let racks = cfg.racks;
    let (per_block, blocks) = match lv.block_level {
        None => (racks, 1),
        Some(l) => (1usize << l, racks.div_ceil(1 << l)),
    };
    let per_llblock = 1usize << lv.llblock_level;
    let tracked = per_block != per_llblock * lv.max_llblock as usize;
    let llblocks = racks.div_ceil(per_llblock);
    let members = |b: usize| b * per_block..((b + 1) * per_block).min(racks);
    let llblock_count = |k: usize| -> u32 {
        count[k * per_llblock..((k + 1) * per_llblock).min(racks)]
            .iter()
            .sum()
    };

    // Block choice: enough nodes, then fewest free nodes; the later block wins ties.
    let mut chosen: Option<(usize, u32)> = None;
    for b in 0..blocks {
        let bnc: u32 = count[members(b)].iter().sum();
        let avail = if tracked {
            let full = per_block / per_llblock;
            let offset = b * full;
            let own = full.min(llblocks - offset);
            let mut ll: Vec<u32> = (offset..offset + own).map(llblock_count).collect();
            ll.sort_unstable_by(|a, b| b.cmp(a));
            ll.iter().take((lv.max_llblock as usize).min(own)).sum()
        } else {
            bnc
        };
        if (avail as usize) < rem || bnc == 0 {
            continue;
        }
        match chosen {
            Some((_, best)) if bnc > best => {}
            _ => chosen = Some((b, bnc)),
        }
    }
    let (block, _) = chosen?;

    // Greedy fill, one base block (rack) at a time.
    let mut on_bblock = vec![0u32; racks];
    let mut on_llblock = tracked.then(|| vec![0u32; llblocks]);
    for r in members(block) {
        on_bblock[r] = count[r];
        if let Some(ll) = on_llblock.as_mut() {
            ll[r / per_llblock] += count[r];
        }
    }
    let mut used = vec![false; racks];
    let mut max_llblock = lv.max_llblock;
    let mut taken = Vec::with_capacity(rem);
    let mut rem = rem as i64;
    let mut prev = rem + 1;
    while prev != rem {
        prev = rem;
        let mut best = Best::default();
        for r in members(block).filter(|&r| !used[r]) {
            best.consider(
                &used,
                lv.llblock_level,
                rem,
                &on_bblock,
                on_llblock.as_deref(),
                r,
            );
        }
        let Some(r) = best.index else { break };
        if max_llblock <= 0 && !best.same_block {
            break;
        }
        used[r] = true;
        for (node, _) in map
            .iter()
            .enumerate()
            .skip(r * cfg.trays)
            .take(cfg.trays)
            .filter(|(_, &f)| f)
        {
            taken.push(node);
            rem -= 1;
            if rem <= 0 {
                return Some(taken);
            }
        }
        if !best.same_block {
            max_llblock -= 1;
        }
    }
    (rem <= 0).then_some(taken)
}

/// The running choice of `_choose_best_bblock`.
struct Best {
    index: Option<usize>,
    fit: bool,
    same_block: bool,
}

impl Default for Best {
    fn default() -> Self {
        Best {
            index: None,
            fit: false,
            same_block: true,
        }
    }
}

impl Best {
    /// `_choose_best_bblock` for rack `i`: fewer llblocks first (when tracked), then fewer
    /// racks: the smallest rack covering the remainder, else the largest; later racks win ties.
    fn consider(
        &mut self,
        used: &[bool],
        ll_level: u32,
        rem: i64,
        on_bblock: &[u32],
        on_llblock: Option<&[u32]>,
        i: usize,
    ) {
        let fit = on_bblock[i] as i64 >= rem;
        let same_llblock =
            |a: Option<usize>, b: usize| a.is_some_and(|a| a >> ll_level == b >> ll_level);
        if let Some(on_ll) = on_llblock {
            if !same_llblock(self.index, i) {
                let lo = i & (usize::MAX << ll_level);
                let hi = (i | !(usize::MAX << ll_level)).min(used.len() - 1);
                let same_block = (lo..=hi).any(|j| used[j]);
                let Some(best) = self.index else {
                    return self.set(i, fit, same_block);
                };
                if same_block && !self.same_block {
                    return self.set(i, fit, same_block);
                }
                if !same_block && self.same_block {
                    return;
                }
                let best_ll = on_ll[best >> ll_level] as i64;
                let ll = on_ll[i >> ll_level] as i64;
                match (ll >= rem, best_ll >= rem) {
                    (true, false) => return self.set(i, fit, same_block),
                    (false, true) => return,
                    // Both cover the remainder: the smaller llblock avoids fragmentation.
                    (true, true) if ll < best_ll => return self.set(i, fit, same_block),
                    (true, true) if ll > best_ll => return,
                    // Neither does: the larger llblock needs fewer of them.
                    (false, false) if ll > best_ll => return self.set(i, fit, same_block),
                    (false, false) if ll < best_ll => return,
                    _ => {}
                }
            }
        }
        // Fitting racks beat non-fitting ones; among fitting racks the smallest, among
        // non-fitting ones the largest; the later rack wins ties.
        let take = match self.index {
            None => true,
            Some(b) => match (fit, self.fit) {
                (true, false) => true,
                (false, true) => false,
                (true, true) => on_bblock[i] <= on_bblock[b],
                (false, false) => on_bblock[i] >= on_bblock[b],
            },
        };
        if take {
            self.index = Some(i);
            self.fit = fit;
        }
    }

    fn set(&mut self, i: usize, fit: bool, same_block: bool) {
        self.index = Some(i);
        self.fit = fit;
        self.same_block = same_block;
    }
}

#[cfg(test)]
mod tests;
