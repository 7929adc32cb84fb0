//! The storm's operations, drawn from its seed: every admin operation and fault the issue
//! lists. A drawn operation carries all its randomness (which job is the `pick`-th live one
//! is resolved against the state when it runs), so one seed replays one sequence.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::requests::{self, Request};

#[derive(Debug, Clone)]
pub enum Op {
    Submit(Request),
    /// scancel the `pick`-th job still pending or running.
    Cancel {
        pick: usize,
    },
    /// `scontrol update NumNodes=` of the `pick`-th pending job.
    Resize {
        pick: usize,
        trays: usize,
    },
    /// `scontrol update` of the `pick`-th pending job's rack rules: `Switches=1@0:20` or
    /// `SegmentSize=<segment>` (26.11 changes a pending job's segment; earlier series refuse
    /// it with a message).
    Reshape {
        pick: usize,
        segment: Option<usize>,
    },
    /// Drain a tray (`tray` is 0-based in node-table order).
    Drain {
        tray: usize,
    },
    /// Set a tray down: the jobs on it are requeued.
    Down {
        tray: usize,
    },
    /// Resume the `pick`-th tray the storm drained or set down.
    Resume {
        pick: usize,
    },
    /// `kill -9` a tray's slurmd, then start it again.
    KillSlurmd {
        tray: usize,
    },
    Reconfigure,
    /// A valid edit: the racks in another order, then a reconfigure.
    ReorderRacks {
        order: Vec<usize>,
    },
    /// A file that must be refused whole (`kind`: an unknown node, a syntax error, a tray in
    /// two racks), each with one valid move in it so that half-applying it would show.
    WrongRacks {
        kind: usize,
    },
    /// Swaps the `pick`-th running job's first tray with a tray of the next rack: refused
    /// while the job runs.
    MoveHeldTray {
        pick: usize,
    },
    /// A valid edit: two free trays of different racks swap racks.
    SwapFreeTrays {
        pick: usize,
    },
    /// `kill -9` the primary controller; the backup takes over, then the primary comes back.
    KillPrimary,
    /// `scontrol takeover`: the backup takes control, then the primary comes back.
    Takeover,
    CreateNode,
    /// `scontrol delete` the `pick`-th dynamic node the storm created.
    DeleteNode {
        pick: usize,
    },
}

/// Draws one operation; `racks` racks of 18 trays, `exclusive_topo` as in
/// [`requests::draw`]. Weights out of 100: submissions dominate, controller faults are rare
/// (each takes tens of seconds).
pub fn draw(rng: &mut ChaCha8Rng, racks: usize, exclusive_topo: bool) -> Op {
    let trays = racks * crate::TRAYS;
    let pick = rng.gen_range(0..1000);
    match rng.gen_range(0..100) {
        0..=44 => Op::Submit(requests::draw(rng, exclusive_topo)),
        45..=53 => Op::Cancel { pick },
        54..=57 => Op::Resize {
            pick,
            trays: *[1, 2, 4, 8, 18, 24].choose(rng).expect("sizes"),
        },
        58..=59 => Op::Reshape {
            pick,
            segment: *[None, Some(2), Some(4)].choose(rng).expect("segments"),
        },
        60..=65 => Op::Drain {
            tray: rng.gen_range(0..trays),
        },
        66..=68 => Op::Down {
            tray: rng.gen_range(0..trays),
        },
        69..=76 => Op::Resume { pick },
        77..=79 => Op::KillSlurmd {
            tray: rng.gen_range(0..trays),
        },
        80..=83 => Op::Reconfigure,
        84 => Op::SwapFreeTrays { pick },
        85..=86 => {
            let mut order: Vec<usize> = (0..racks).collect();
            order.shuffle(rng);
            Op::ReorderRacks { order }
        }
        87..=89 => Op::WrongRacks {
            kind: rng.gen_range(0..4),
        },
        90..=91 => Op::MoveHeldTray { pick },
        92 => Op::KillPrimary,
        93 => Op::Takeover,
        94..=96 => Op::CreateNode,
        _ => Op::DeleteNode { pick },
    }
}

impl Op {
    /// The journal's line for this operation.
    pub fn describe(&self) -> String {
        match self {
            Op::Submit(r) => format!("sbatch {}", r.describe()),
            other => format!("{other:?}"),
        }
    }
}
