//! The three placement policies the simulator compares, behind one call: which trays an
//! exclusive job of `trays` trays (optionally `--segment`) gets from a free-tray map.
//!
//! - `nvl72`: this crate's engine, [`crate::placement::plan`], the very code the plugin runs;
//!   the first (best) alternative is taken, as Slurm's selection accepts it for whole trays.
//! - `block`: the model of Slurm 24.11 topology/block in [`crate::contenders::block`].
//! - `naive`: Slurm's own topology-unaware choice, the tightest run of consecutive free trays.
//! - `nvl72-start-now` (not run by default): the engine with `multi_rack = "start-now"`, so
//!   the cost of waiting for the fewest racks can be measured in the same run.
//! - `nvl72-balanced` (not run by default): the engine with `multi_rack = "balanced"`.
//! - `nvl72-spill` (not run by default): a what-if aimed at the idle breakdown's `rack-set`
//!   and `whole-rack` trays: a job larger than a rack that finds no ⌈n/M⌉ racks starts now
//!   on ⌈n/M⌉ + 1 racks when start-now's plan needs no more.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::config::{EndTime, MultiRack, Policy, Switches};
use crate::contenders::block::{self, BlockConfig};
use crate::contenders::engine_view::EngineView;
use crate::contenders::free_map::{FreeMap, Print};
use crate::contenders::latency::Latency;
use crate::contenders::naive;
use crate::job::{Job, Millis, MINUTE};
use crate::placement::{self, JobRequest, RackLimit, Reject};
use crate::topology::Topology;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyKind {
    Nvl72,
    Block,
    Naive,
    #[serde(rename = "nvl72-start-now")]
    Nvl72StartNow,
    /// The engine with `multi_rack = "balanced"`.
    #[serde(rename = "nvl72-balanced")]
    Nvl72Balanced,
    /// The engine with `end_time = "tie-break"`.
    #[serde(rename = "nvl72-end-tie")]
    Nvl72EndTie,
    /// The engine with `end_time = "align"`.
    #[serde(rename = "nvl72-end-align")]
    Nvl72EndAlign,
    /// The engine, and for a job larger than a rack that must wait, start-now's plan when it
    /// spans at most one rack more than the fewest.
    #[serde(rename = "nvl72-spill")]
    Nvl72Spill,
    /// The engine, but victims of preemption in Slurm's own order (the plugin with
    /// `preemption_cost = "slurm"`): the steering's baseline ([`crate::run::preemption`]).
    #[serde(rename = "nvl72-slurm-order")]
    Nvl72SlurmOrder,
}

impl PolicyKind {
    /// The three policies the simulator compares by default.
    pub const ALL: [PolicyKind; 3] = [PolicyKind::Nvl72, PolicyKind::Block, PolicyKind::Naive];
    /// The engine with one `[policy]` knob changed, for A/B runs.
    pub const VARIANTS: [PolicyKind; 6] = [
        PolicyKind::Nvl72StartNow,
        PolicyKind::Nvl72Balanced,
        PolicyKind::Nvl72EndTie,
        PolicyKind::Nvl72EndAlign,
        PolicyKind::Nvl72Spill,
        PolicyKind::Nvl72SlurmOrder,
    ];

    /// This crate's engine, whatever its knobs.
    pub fn is_nvl72(self) -> bool {
        !matches!(self, PolicyKind::Block | PolicyKind::Naive)
    }

    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Nvl72 => "nvl72",
            PolicyKind::Block => "block",
            PolicyKind::Naive => "naive",
            PolicyKind::Nvl72StartNow => "nvl72-start-now",
            PolicyKind::Nvl72Balanced => "nvl72-balanced",
            PolicyKind::Nvl72EndTie => "nvl72-end-tie",
            PolicyKind::Nvl72EndAlign => "nvl72-end-align",
            PolicyKind::Nvl72Spill => "nvl72-spill",
            PolicyKind::Nvl72SlurmOrder => "nvl72-slurm-order",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PolicyKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        PolicyKind::ALL
            .into_iter()
            .chain(PolicyKind::VARIANTS)
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown policy `{s}` (expected nvl72, block, naive, nvl72-start-now, \
                     nvl72-balanced, nvl72-end-tie, nvl72-end-align, nvl72-spill or nvl72-slurm-order)"
                )
            })
    }
}

/// How a job asks: trays, `--segment`, whether it is sized by GPUs (no `-N`), and whether it
/// has waited out the rack limit `[policy] switches` gives it ([`Placer::ask`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimRequest {
    pub trays: usize,
    pub segment: Option<usize>,
    pub by_gpus: bool,
    pub waited_out: bool,
}

impl SimRequest {
    pub fn of(job: &crate::job::Job) -> SimRequest {
        SimRequest {
            trays: job.trays,
            segment: job.segment,
            by_gpus: job.by_gpus,
            waited_out: false,
        }
    }

    /// `-N trays` (with `--segment` when given).
    pub fn nodes(trays: usize, segment: Option<usize>) -> SimRequest {
        SimRequest {
            trays,
            segment,
            by_gpus: false,
            waited_out: false,
        }
    }
}

/// `[policy] switches` in simulated time: the most racks a job takes until it has waited
/// `wait` since its submission (tree's `wait4switch_start` is never reset, so a requeued job
/// keeps its clock).
#[derive(Debug, Clone, Copy)]
struct SwitchWait {
    count: usize,
    wait: Millis,
}

/// One policy, ready to place jobs on a cluster of `racks` x `trays` trays.
pub struct Placer {
    kind: Kind,
    policy_kind: PolicyKind,
    racks: usize,
    trays: usize,
    latency: Latency,
    /// Shapes already tried on the whole, healthy, empty cluster.
    fits_empty: BTreeMap<SimRequest, bool>,
    /// The nvl72 engine's rack limit for every job (none of the simulated jobs passes its
    /// own `--switches`); block and naive ignore it, as topology/block ignores `--switches`.
    switches: Option<SwitchWait>,
    /// Decisions already made, when they depend on nothing but the free map and the request
    /// (every policy but the engine with an `end_time` rule, which also reads the clock).
    memo: Option<Memo>,
}

/// The decisions of this pass and the last, by the map's fingerprint and the request. A pass
/// after an arrival or a completion asks mostly what the last one asked on the same maps
/// (the head's reservation, the jobs that did not fit); older passes rarely match again, so
/// keeping two bounds the memory without losing those.
#[derive(Default)]
struct Memo {
    this_pass: FxHashMap<(Print, SimRequest), Option<Vec<usize>>>,
    last_pass: FxHashMap<(Print, SimRequest), Option<Vec<usize>>>,
}

impl Memo {
    fn next_pass(&mut self) {
        std::mem::swap(&mut self.this_pass, &mut self.last_pass);
        self.this_pass.clear();
    }

    fn get(&mut self, key: (Print, SimRequest)) -> Option<Option<Vec<usize>>> {
        if let Some(trays) = self.this_pass.get(&key) {
            return Some(trays.clone());
        }
        let trays = self.last_pass.remove(&key)?;
        self.this_pass.insert(key, trays.clone());
        Some(trays)
    }
}

enum Kind {
    /// Boxed: `Topology` and the view are large (policy, racks, indices, tallies), the
    /// other kinds are small. `spill`: the start-now topology `nvl72-spill` falls back to.
    Nvl72 {
        topo: Box<Topology>,
        view: Box<EngineView>,
        spill: Option<Box<Topology>>,
    },
    Block(BlockConfig),
    Naive,
}

impl Placer {
    /// `policy` configures the nvl72 engine (as `[policy]` in topology.toml); the other
    /// policies ignore it. With `timed`, every placement call is timed.
    pub fn new(
        kind: PolicyKind,
        racks: usize,
        trays: usize,
        policy: &Policy,
        timed: bool,
    ) -> Placer {
        let policy_kind = kind;
        let switches = match policy.switches {
            Switches::Limit {
                count,
                wait_minutes,
            } if kind.is_nvl72() => Some(SwitchWait {
                count: usize::try_from(count).unwrap_or(usize::MAX),
                wait: u64::from(wait_minutes) * MINUTE,
            }),
            _ => None,
        };
        let kind = match kind {
            PolicyKind::Nvl72
            | PolicyKind::Nvl72StartNow
            | PolicyKind::Nvl72Balanced
            | PolicyKind::Nvl72EndTie
            | PolicyKind::Nvl72EndAlign
            | PolicyKind::Nvl72Spill
            | PolicyKind::Nvl72SlurmOrder => {
                let mut policy = policy.clone();
                match kind {
                    PolicyKind::Nvl72StartNow => policy.multi_rack = MultiRack::StartNow,
                    PolicyKind::Nvl72Balanced => policy.multi_rack = MultiRack::Balanced,
                    PolicyKind::Nvl72EndTie => policy.end_time = EndTime::TieBreak,
                    PolicyKind::Nvl72EndAlign => policy.end_time = EndTime::Align,
                    _ => {}
                }
                let spill = (kind == PolicyKind::Nvl72Spill).then(|| {
                    let now = Policy {
                        multi_rack: MultiRack::StartNow,
                        ..policy.clone()
                    };
                    Box::new(Topology::uniform(racks, trays, now))
                });
                let topo = Box::new(Topology::uniform(racks, trays, policy));
                Kind::Nvl72 {
                    view: Box::new(EngineView::all_free(&topo, racks * trays)),
                    topo,
                    spill,
                }
            }
            PolicyKind::Block => Kind::Block(BlockConfig::lab(racks, trays)),
            PolicyKind::Naive => Kind::Naive,
        };
        let reads_clock =
            matches!(&kind, Kind::Nvl72 { topo, .. } if topo.policy.end_time != EndTime::Off);
        let memo = (!reads_clock).then(Memo::default);
        Placer {
            kind,
            policy_kind,
            racks,
            trays,
            latency: Latency::new(timed),
            fits_empty: BTreeMap::new(),
            switches,
            memo,
        }
    }

    /// How `job` asks at `now`: its shape, and whether its rack limit is lifted by then.
    pub fn ask(&self, job: &Job, now: Millis) -> SimRequest {
        SimRequest {
            waited_out: self.wait_over(job).is_some_and(|t| now >= t),
            ..SimRequest::of(job)
        }
    }

    /// When `job`'s rack limit lifts, if this policy gives it one.
    pub fn wait_over(&self, job: &Job) -> Option<Millis> {
        self.switches.map(|s| job.submit.saturating_add(s.wait))
    }

    pub fn kind(&self) -> PolicyKind {
        self.policy_kind
    }

    /// A new pass begins: decisions older than the last pass are forgotten.
    pub fn next_pass(&mut self) {
        if let Some(memo) = &mut self.memo {
            memo.next_pass();
        }
    }

    /// The policy reads the clock and the trays' expected ends ([`Placer::set_times`],
    /// [`Placer::mark_busy`]): the engine with an `end_time` rule.
    pub fn uses_clock(&self) -> bool {
        self.memo.is_none()
    }

    /// Any free trays hold any job no larger than them (naive): the job fits exactly when
    /// there are enough, so a search for when it fits needs no placement but the last.
    pub fn fits_any_free_trays(&self) -> bool {
        matches!(self.kind, Kind::Naive)
    }

    /// The clock and when each tray's running jobs are expected to end (0: free), for the
    /// engine's `end_time` rules; the other policies ignore it.
    pub fn set_times(&mut self, now: Millis, busy_until: &[Millis]) {
        if let Kind::Nvl72 { view, .. } = &mut self.kind {
            let view = view.view_mut();
            view.now = seconds(now);
            view.busy_until.clear();
            view.busy_until
                .extend(busy_until.iter().map(|&t| seconds(t)));
        }
    }

    /// Trays a job just took, busy until `until`.
    pub fn mark_busy(&mut self, trays: &[usize], until: Millis) {
        if let Kind::Nvl72 { view, .. } = &mut self.kind {
            let view = view.view_mut();
            for &t in trays {
                if let Some(b) = view.busy_until.get_mut(t) {
                    *b = seconds(until);
                }
            }
        }
    }

    /// Can this request never run on this cluster? True when the scheduler rejects it at
    /// submission, and also when the policy cannot place it even on the whole cluster with
    /// every tray healthy and free (e.g. 13 segments of 16 on 12 racks). Real Slurm leaves
    /// such a job pending forever, blocking the queue head until an admin cancels it; the
    /// simulator counts it as rejected instead.
    pub fn never_runnable(&mut self, ask: SimRequest) -> bool {
        if ask.trays == 0 || ask.trays > self.racks * self.trays {
            return true;
        }
        let rejected = match &self.kind {
            Kind::Nvl72 { topo, .. } => matches!(
                placement::validate(topo, &self.request(ask)),
                Err(Reject::Never(_))
            ),
            Kind::Block(cfg) => block::validate(cfg, ask.trays, ask.segment).is_err(),
            Kind::Naive => false,
        };
        if rejected {
            return true;
        }
        // Any wait ends: a job is never runnable only if no wait would start it.
        let ask = SimRequest {
            waited_out: true,
            ..ask
        };
        if let Some(&fits) = self.fits_empty.get(&ask) {
            return !fits;
        }
        let all = FreeMap::new(&vec![true; self.racks * self.trays], self.trays);
        let fits = self.decide(&all, ask, None, false).is_some();
        self.fits_empty.insert(ask, fits);
        !fits
    }

    /// The trays this policy gives the job on `map`, or `None` if it must wait. Only the
    /// policy's own decision is timed, not the bookkeeping around it.
    pub fn place(&mut self, map: &FreeMap, ask: SimRequest) -> Option<Vec<usize>> {
        self.memoized(map.print(), map.count(), ask, |p| {
            p.decide(map, ask, None, true)
        })
    }

    /// [`Placer::place`] for a job expected to end at `ends_at` (its start plus limit).
    pub fn place_until(
        &mut self,
        map: &FreeMap,
        ask: SimRequest,
        ends_at: Millis,
    ) -> Option<Vec<usize>> {
        self.memoized(map.print(), map.count(), ask, |p| {
            p.decide(map, ask, Some(ends_at), true)
        })
    }

    /// [`Placer::place`] on a map known by its fingerprint and count, which `map` builds
    /// only when the decision is not already known.
    pub fn place_lazy(
        &mut self,
        print: Print,
        count: usize,
        ask: SimRequest,
        map: impl FnOnce() -> FreeMap,
    ) -> Option<Vec<usize>> {
        self.memoized(print, count, ask, |p| p.decide(&map(), ask, None, true))
    }

    /// The decision on the map `print`, from the memo or else from `decide`. A job larger
    /// than the free trays never reaches the policy.
    fn memoized(
        &mut self,
        print: Print,
        count: usize,
        ask: SimRequest,
        decide: impl FnOnce(&mut Placer) -> Option<Vec<usize>>,
    ) -> Option<Vec<usize>> {
        if ask.trays > count {
            return None;
        }
        if let Some(known) = self.memo.as_mut().and_then(|m| m.get((print, ask))) {
            return known;
        }
        let trays = decide(self);
        if let Some(memo) = &mut self.memo {
            memo.this_pass.insert((print, ask), trays.clone());
        }
        trays
    }

    /// The request the plugin would see: `-N n` (and `--segment`), or for a job sized by
    /// GPUs a minimum of one node, any count up to the cluster, and `4*n` GPUs.
    fn request(&self, ask: SimRequest) -> JobRequest {
        match (ask.segment, ask.by_gpus) {
            (Some(s), _) => JobRequest::segmented(ask.trays, s),
            (None, true) => JobRequest::gpus(4 * ask.trays as u64, self.racks * self.trays),
            (None, false) => JobRequest::nodes(ask.trays),
        }
    }

    fn decide(
        &mut self,
        map: &FreeMap,
        ask: SimRequest,
        ends_at: Option<Millis>,
        count: bool,
    ) -> Option<Vec<usize>> {
        let free = map.as_slice();
        debug_assert_eq!(free.len(), self.racks * self.trays);
        let req = JobRequest {
            ends_at: ends_at.map(seconds),
            switches: self.switches.map(|s| RackLimit {
                max_racks: s.count,
                lifted: ask.waited_out,
            }),
            ..self.request(ask)
        };
        let mut untimed = Latency::new(false);
        let latency = if count {
            &mut self.latency
        } else {
            &mut untimed
        };
        let trays = ask.trays;
        match &mut self.kind {
            Kind::Nvl72 { topo, view, spill } => {
                let view = view.show(topo, free);
                // The best choice; within a flexible set Slurm takes the first trays that
                // hold the job (exclusive 4-GPU trays: exactly `trays` of them).
                let per_rack = self.trays;
                let best = latency.time(|| {
                    let first = |topo: &Topology| {
                        let plan = placement::plan(topo, view, &req).ok()?;
                        Some(plan.placement(0))
                    };
                    first(topo).or_else(|| {
                        let fewest = trays.div_ceil(per_rack);
                        let spill = spill.as_ref().filter(|_| trays > per_rack)?;
                        first(spill).filter(|p| {
                            let racks: std::collections::BTreeSet<usize> =
                                p.pieces.iter().map(|piece| piece.rack).collect();
                            racks.len() <= fewest + 1
                        })
                    })
                })?;
                let mut nodes = best.nodes;
                nodes.truncate(trays);
                Some(nodes)
            }
            Kind::Block(cfg) if ask.by_gpus && ask.segment.is_none() => {
                latency.time(|| block::evaluate_gpu_sized_counted(cfg, free, map.in_racks(), trays))
            }
            Kind::Block(cfg) => latency.time(|| {
                block::evaluate_counted(cfg, free, map.in_racks(), trays, ask.segment).ok()
            }),
            Kind::Naive => latency.time(|| {
                naive::consecutive_best_fit_counted(
                    free,
                    Some((map.in_racks(), map.per_rack())),
                    trays,
                )
            }),
        }
    }

    /// The fewest free trays a rack must have for this policy to put part of the job there
    /// (the idle breakdown's test, [`crate::idle`]): naive 1; the engine's own rule
    /// ([`JobRequest::rack_need`]); otherwise the job itself when it fits a rack, a segment,
    /// or for a larger job the share the last of its racks must hold (block: the next power
    /// of two of ⌈n/M⌉ racks; spill: one rack more).
    pub fn rack_need(&self, ask: SimRequest) -> usize {
        let m = self.trays;
        let set = |racks: usize| ask.trays.saturating_sub(m * (racks - 1)).clamp(1, m);
        match (ask.segment, &self.kind) {
            (_, Kind::Naive) => 1,
            (
                _,
                Kind::Nvl72 {
                    topo, spill: None, ..
                },
            ) => JobRequest {
                segment: ask.segment,
                ..JobRequest::nodes(ask.trays)
            }
            .rack_need(topo),
            (Some(s), _) => s.min(ask.trays).min(m),
            (None, _) if ask.trays <= m => ask.trays,
            (None, Kind::Block(_)) => set(ask.trays.div_ceil(m).next_power_of_two()),
            (None, Kind::Nvl72 { .. }) => set(ask.trays.div_ceil(m) + 1),
        }
    }

    pub fn latency(&self) -> &Latency {
        &self.latency
    }
}

/// Simulated milliseconds as the engine's seconds clock.
fn seconds(t: Millis) -> u32 {
    u32::try_from(t / 1000).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placer(kind: PolicyKind, racks: usize) -> Placer {
        Placer::new(kind, racks, 18, &Policy::default(), false)
    }

    #[test]
    fn a_decision_on_a_map_seen_this_pass_or_the_last_is_not_made_again() {
        let mut free = vec![true; 72];
        free[..10].fill(false);
        let map = FreeMap::new(&free, 18);
        let ask = SimRequest::nodes(12, None);
        for kind in [PolicyKind::Nvl72, PolicyKind::Block, PolicyKind::Naive] {
            let mut p = placer(kind, 4);
            let first = p.place(&map, ask);
            assert!(first.is_some());
            assert_eq!(p.place_until(&map, ask, 3_600_000), first);
            p.next_pass();
            assert_eq!(
                p.place(&map, ask),
                first,
                "{kind}: the last pass's decision"
            );
            assert_eq!(p.latency().calls(), 1, "{kind}: asked once");
            p.next_pass();
            p.next_pass(); // kept one more pass by its use above, then forgotten
            p.next_pass();
            assert_eq!(p.place(&map, ask), first);
            assert_eq!(p.latency().calls(), 2, "{kind}: asked again once forgotten");
        }
        // The engine with an end_time rule reads the clock: every decision is made.
        let mut p = placer(PolicyKind::Nvl72EndAlign, 4);
        assert!(p.uses_clock());
        p.place(&map, ask);
        p.place(&map, ask);
        assert_eq!(p.latency().calls(), 2);
    }

    #[test]
    fn nvl72_is_the_engine() {
        let mut free = vec![true; 72];
        free[4] = false;
        let mut p = placer(PolicyKind::Nvl72, 4);
        // 17 trays: the degraded rack fits exactly (the engine's best fit).
        let nodes = p
            .place(&FreeMap::new(&free, 18), SimRequest::nodes(17, None))
            .unwrap();
        assert!(nodes.iter().all(|&n| n < 18) && !nodes.contains(&4));
        let (topo, view) = crate::testkit::uniform(4, 18)
            .draw("rack1", "...._. ...... ......")
            .parts();
        let plan = placement::placements(&topo, &view, &JobRequest::segmented(32, 16)).unwrap();
        assert_eq!(
            p.place(&FreeMap::new(&free, 18), SimRequest::nodes(32, Some(16))),
            Some(plan[0].nodes.clone())
        );
        assert!(p.never_runnable(SimRequest::nodes(20, Some(3))));
        assert!(p.never_runnable(SimRequest::nodes(4, Some(20))));
        // Five segments of 16 need five racks.
        assert!(p.never_runnable(SimRequest::nodes(80, Some(16))));
        assert!(!p.never_runnable(SimRequest::nodes(64, Some(16))));
        assert_eq!(p.latency().calls(), 2);
    }

    #[test]
    fn start_now_spreads_where_the_engine_waits() {
        // Every rack has 10 free trays: the engine waits for two racks with 18 free,
        // start-now spreads 36 trays over 4 racks.
        let mut free = vec![true; 72];
        for r in 0..4 {
            free[r * 18..r * 18 + 8].fill(false);
        }
        let mut engine = placer(PolicyKind::Nvl72, 4);
        assert_eq!(
            engine.place(&FreeMap::new(&free, 18), SimRequest::nodes(36, None)),
            None
        );
        assert!(!engine.never_runnable(SimRequest::nodes(36, None)));
        let mut now = placer(PolicyKind::Nvl72StartNow, 4);
        assert_eq!(now.kind(), PolicyKind::Nvl72StartNow);
        assert_eq!(
            now.place(&FreeMap::new(&free, 18), SimRequest::nodes(36, None))
                .map(|n| n.len()),
            Some(36)
        );
        assert_eq!(
            now.place(&FreeMap::new(&free, 18), SimRequest::nodes(8, Some(4))),
            engine.place(&FreeMap::new(&free, 18), SimRequest::nodes(8, Some(4)))
        );
    }

    #[test]
    fn spill_takes_one_rack_more_than_the_fewest_and_no_more() {
        // 12 free trays in every rack: 36 trays find no two racks, but three.
        let mut free = vec![true; 72];
        for r in 0..4 {
            free[r * 18..r * 18 + 6].fill(false);
        }
        let mut engine = placer(PolicyKind::Nvl72, 4);
        assert_eq!(
            engine.place(&FreeMap::new(&free, 18), SimRequest::nodes(36, None)),
            None
        );
        let mut spill = placer(PolicyKind::Nvl72Spill, 4);
        let nodes = spill
            .place(&FreeMap::new(&free, 18), SimRequest::nodes(36, None))
            .unwrap();
        let mut racks: Vec<usize> = nodes.iter().map(|n| n / 18).collect();
        racks.dedup();
        assert_eq!((nodes.len(), racks.len()), (36, 3));
        // 10 free in every rack: start-now would need all four racks, so spill waits too.
        for r in 0..4 {
            free[r * 18 + 6..r * 18 + 8].fill(false);
        }
        assert_eq!(
            spill.place(&FreeMap::new(&free, 18), SimRequest::nodes(36, None)),
            None
        );
        // Jobs that fit a rack are the engine's.
        assert_eq!(
            spill.place(&FreeMap::new(&free, 18), SimRequest::nodes(9, None)),
            engine.place(&FreeMap::new(&free, 18), SimRequest::nodes(9, None))
        );
    }

    #[test]
    fn block_uses_the_block_model() {
        let free = vec![true; 72];
        let mut p = placer(PolicyKind::Block, 4);
        assert_eq!(
            p.place(&FreeMap::new(&free, 18), SimRequest::nodes(18, None)),
            block::choose(&free, 4, 18, 18, None)
        );
        assert!(p.never_runnable(SimRequest::nodes(20, Some(3))));
    }

    #[test]
    fn policy_names_round_trip() {
        for k in PolicyKind::ALL.into_iter().chain(PolicyKind::VARIANTS) {
            assert_eq!(k.name().parse::<PolicyKind>(), Ok(k));
        }
        assert!("tree".parse::<PolicyKind>().is_err());
    }
}
