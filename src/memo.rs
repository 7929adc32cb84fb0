//! What one `topology_p_eval_nodes` call learns in its first callbacks and its later ones
//! reuse: that the job cannot be placed now, and which node sets Slurm's own selection
//! refused. Kept in one [`Memo`] keyed by the call's number, so a new call starts afresh.
//!
//! Within one call Slurm's retries only ever offer fewer trays (and no more GPUs or CPUs per
//! tray), so a job that cannot be placed in the first callback cannot be in the later ones
//! either: they return at once instead of redoing the work under the locks. After a refusal
//! 26.05's retry loop (`common_topo_choose_nodes`) drops one node and calls back, once per
//! dropped node, and before each call it restores `node_map`, `max_nodes` and the cores; our
//! attempt restores the rest. So a set already refused in the same call and pass fails again
//! and is skipped. Without this a job the racks fit but Slurm refuses on every rack
//! (`--contiguous` on fragmented racks) cost free trays × racks selections under the
//! scheduler's write locks.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::error::Failure;

/// Counts `topology_p_eval_nodes` calls: the key of [`MEMO`].
static EVAL: AtomicU64 = AtomicU64::new(0);

static MEMO: Mutex<Memo> = Mutex::new(Memo {
    eval: u64::MAX,
    not_now: None,
    refused: BTreeSet::new(),
});

/// What the call numbered `eval` learned so far.
struct Memo {
    eval: u64,
    not_now: Option<NotNow>,
    refused: BTreeSet<Tried>,
}

impl Memo {
    /// The memo of call `eval`, forgetting an earlier call's (its free cores and trays differ).
    fn of(&mut self, eval: u64) -> &mut Self {
        if self.eval != eval {
            *self = Memo {
                eval,
                not_now: None,
                refused: BTreeSet::new(),
            };
        }
        self
    }
}

/// Starts a new `topology_p_eval_nodes` call.
pub fn begin() {
    EVAL.fetch_add(1, Ordering::Relaxed);
}

/// The number of the current `topology_p_eval_nodes` call.
pub fn current() -> u64 {
    EVAL.load(Ordering::Relaxed)
}

/// Why a job cannot be placed now, as its first callback reported it: whether the job has
/// `--segment` (26.05 names the reason after it), or waits for its rack limit.
#[derive(Clone, Copy)]
pub enum NotNow {
    NoRoom,
    NoRoomForSegments,
    SwitchLimit,
}

impl NotNow {
    /// Remembers this as the answer for the rest of the call and returns its failure.
    pub fn remember(self) -> Failure {
        MEMO.lock().of(current()).not_now = Some(self);
        self.failure()
    }

    /// The answer remembered in this call, if any.
    pub fn recalled() -> Option<Failure> {
        MEMO.lock().of(current()).not_now.map(NotNow::failure)
    }

    fn failure(self) -> Failure {
        match self {
            NotNow::NoRoom => Failure::NoRoom { segment: false },
            NotNow::NoRoomForSegments => Failure::NoRoom { segment: true },
            NotNow::SwitchLimit => Failure::SwitchLimit,
        }
    }
}

/// A node set tried in one call, and the `first_pass` it was tried in.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub enum Tried {
    /// One rack's piece, named without building its nodes: while the offers of the call
    /// only shrink (one `lineage`, see `view::OFFERS`), a rack's trays left are known by
    /// their count, and the piece is taken from them alike every time.
    Rack {
        lineage: u64,
        first_pass: bool,
        rack: usize,
        trays: usize,
        offered: usize,
    },
    Set {
        first_pass: bool,
        nodes: Vec<usize>,
    },
}

impl Tried {
    /// Slurm's selection refused this set earlier in the current call.
    pub fn was_refused(&self) -> bool {
        MEMO.lock().of(current()).refused.contains(self)
    }

    /// Slurm's selection refused this set.
    pub fn refused(self) {
        MEMO.lock().of(current()).refused.insert(self);
    }
}
