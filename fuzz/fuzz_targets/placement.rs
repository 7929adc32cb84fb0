//! The placement engine on small random clusters: up to 6 racks of up to 6 trays (node
//! indices in order or shuffled, some nodes outside every rack, rack groups), random tray
//! states and per-tray GPUs/CPUs, every policy, and random requests (`-N`, node ranges,
//! `--segment`, `-w`, GPU/CPU/task demand, end times, node weights, `--switches`). `reference::check_plan` checks every
//! placement against the engine's invariants and the brute-force reference.
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use nvl72_engine::config::{
    Config, EndTime, MultiRack, Policy, RackConfig, SegmentPlacement, Switches,
};
use nvl72_engine::topology::Topology;
use nvl72_engine::tray::Tray;
use nvl72_engine::view::ClusterView;
use nvl72_engine::placement::reference::check_plan;
use nvl72_engine::placement::{Demand, JobRequest, RackLimit};
use nvl72_engine::testkit;

const MAX_RACKS: usize = 6;
const MAX_TRAYS: usize = 6;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    if let Ok((topo, view, req)) = build(&mut u) {
        if let Err(why) = check_plan(&topo, &view, &req) {
            panic!(
                "{why}\nrequest {req:?}\nview {:?}\ntopology {topo:?}",
                view.trays
            );
        }
    }
});

fn build(u: &mut Unstructured) -> Result<(Topology, ClusterView, JobRequest)> {
    let policy = Policy {
        segment_placement: if u.arbitrary()? {
            SegmentPlacement::Consolidate
        } else {
            SegmentPlacement::BestFit
        },
        multi_rack: *u.choose(&[
            MultiRack::FewestRacks,
            MultiRack::StartNow,
            MultiRack::Balanced,
        ])?,
        prefer_degraded: u.arbitrary()?,
        prefer_same_group: u.arbitrary()?,
        log_decisions: false,
        end_time: *u.choose(&[EndTime::Off, EndTime::TieBreak, EndTime::Align])?,
        end_time_hours_per_tray: u.int_in_range(0..=4)?,
        flat_partitions: Vec::new(),
        switches: Switches::Off,
        // The brute-force reference does not model cuts between groups; the engine's
        // property test `a_cut_placement_exists_whenever_the_reference_finds_one` does.
        piece_multiple: 1,
        // The preference keeps the racks the rule chose, so the reference's answer holds;
        // cuts of 2 and 4 fit these small racks.
        prefer_piece_multiple: *u.choose(&[1, 2, 4])?,
    };
    // Racks of 0..=MAX_TRAYS trays (0: every name unknown to the scheduler).
    let sizes: Vec<usize> = (0..u.int_in_range(1..=MAX_RACKS)?)
        .map(|_| u.int_in_range(0..=MAX_TRAYS))
        .collect::<Result<_>>()?;
    let in_racks: usize = sizes.iter().sum();
    let node_count = in_racks + u.int_in_range(0..=2)?; // the rest are CPU/login nodes
    let mut order: Vec<usize> = (0..node_count).collect();
    for _ in 0..u.int_in_range(0..=3)? {
        let (a, b) = (
            u.choose_index(node_count.max(1))?,
            u.choose_index(node_count.max(1))?,
        );
        if a < node_count && b < node_count {
            order.swap(a, b);
        }
    }
    let mut config = Config {
        policy,
        gpus_per_tray: u.int_in_range(1..=4)?,
        ..Config::default()
    };
    let mut next = order.iter();
    for (r, &size) in sizes.iter().enumerate() {
        let nodes = next.by_ref().take(size).copied();
        config.racks.push(RackConfig {
            group: u.choose(&[None, Some("a"), Some("b")])?.map(String::from),
            ..testkit::rack(&format!("rack{r}"), nodes)
        });
    }
    let mut topo = testkit::resolve(&config, node_count);
    topo.full_tray.cpus = u.int_in_range(1..=8)?;
    let full = topo.full_tray;

    // Tray states as Slurm shows them, in the test kit's rack-map characters: free (`.`),
    // shared (`+`: offered, runs other jobs and offers less), busy (`A`), drained/down (`x`).
    // Every offered tray offers at least one CPU.
    let mut view = ClusterView {
        now: u.int_in_range(0..=100)?,
        ..ClusterView::default()
    };
    for _ in 0..node_count {
        let tray = match u.int_in_range(0..=3u8)? {
            0 => Tray::free(full),
            1 => Tray {
                gpus: u.int_in_range(0..=full.gpus)?,
                cpus: u.int_in_range(1..=full.cpus)?,
                ..testkit::tray('+')
            },
            2 => testkit::tray('A'),
            _ => testkit::tray('x'),
        };
        view.trays.push(tray);
    }
    if u.ratio(1, 3)? {
        // Node weights (Slurm's sched_weight): a few tiers, kept only when they differ.
        let weights = (0..node_count)
            .map(|_| Ok(u64::from(u.int_in_range(0..=2u8)?) * 100))
            .collect::<Result<_>>()?;
        view.set_weights(weights);
    }
    if u.arbitrary()? {
        view.busy_until = (0..node_count)
            .map(|_| u.int_in_range(0..=200u32))
            .collect::<Result<_>>()?;
    }

    let min_nodes = u.int_in_range(0..=(MAX_RACKS * MAX_TRAYS + 2))?;
    let max_nodes = if u.arbitrary()? {
        min_nodes
    } else {
        min_nodes + u.int_in_range(0..=MAX_RACKS * MAX_TRAYS)?
    };
    let segment = if u.ratio(1, 3)? {
        Some(u.int_in_range(0..=MAX_TRAYS + 1)?)
    } else {
        None
    };
    let demand = if u.arbitrary()? {
        Demand {
            gpus: u.int_in_range(0..=40)?,
            cpus: u.int_in_range(0..=60)?,
            trays: u.int_in_range(0..=8)?,
        }
    } else {
        Demand::default()
    };
    // `-w`: distinct nodes (possibly outside every rack), at most min_nodes of them, as
    // Slurm raises the node minimum to the named nodes.
    let mut required = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let n = u.int_in_range(0..=node_count)?;
        if !required.contains(&n) && required.len() < min_nodes {
            required.push(n);
        }
    }
    let ends_at = if u.arbitrary()? {
        Some(u.int_in_range(0..=300)?)
    } else {
        None
    };
    // `--switches`: none, or a limit of 1 to 4 racks, holding or waited out.
    let switches = if u.arbitrary()? {
        Some(RackLimit {
            max_racks: u.int_in_range(1..=4)?,
            lifted: u.arbitrary()?,
        })
    } else {
        None
    };
    let req = JobRequest {
        min_nodes,
        max_nodes,
        segment,
        required,
        demand,
        ends_at,
        // The reference does not model a job's own segment rule; unit tests cover it.
        segment_placement: None,
        switches,
    };
    Ok((topo, view, req))
}
