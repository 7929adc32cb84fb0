//! The engine's view of the trays for one callback, built into the memory of the call before
//! (`SpareView`), and the live state of every tray for `scontrol show topology`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::slurm::{self, Bitmap, BitmapRef};
use super::state::Loaded;
use super::topo_eval::TopoEval;
use nvl72_engine::offered_view::OfferedView;
use nvl72_engine::tray::Tray;
use nvl72_engine::view::ClusterView;

/// Numbers the runs of callbacks whose node maps only shrank; a map that is not a subset of
/// the last one starts a new run (never seen from Slurm's loops, which only drop nodes).
static OFFERS: AtomicU64 = AtomicU64::new(0);

/// The live state of every tray, none of them offered (for `scontrol show topology`).
pub fn cluster_view() -> ClusterView {
    let trays = (0..slurm::node_count())
        .map(|i| tray(i, false, None))
        .collect();
    ClusterView {
        trays,
        ..ClusterView::default()
    }
}

/// The view of the last call, kept for the next one to build in ([`SpareView`]).
static SPARE_VIEW: Mutex<Option<SpareView>> = Mutex::new(None);

/// A view being used, given back to [`SPARE_VIEW`] on every way out of the call (a panic
/// included), so the next call writes into its memory rather than a fresh table of every
/// tray. A call that finds no spare (the first, or a nested one) builds a new view.
#[derive(Default)]
pub struct SpareView {
    pub built: OfferedView,
    /// What it was built from, for the next callback of the same evaluation.
    from: Option<BuiltFrom>,
}

/// The evaluation, configuration and node map a view was built from, and its run of
/// shrinking maps ([`OFFERS`]).
struct BuiltFrom {
    eval: u64,
    loaded: Arc<Loaded>,
    map: Bitmap,
    lineage: u64,
}

impl Drop for SpareView {
    fn drop(&mut self) {
        if let Some(mut spare) = SPARE_VIEW.try_lock() {
            *spare = Some(SpareView {
                built: std::mem::take(&mut self.built),
                from: self.from.take(),
            });
        }
    }
}

/// The offered trays (`node_map`) with their live state and what each offers this job
/// (`avail_res_array`); other trays stay "not offered", which is all the engine reads of
/// them. Reads the node table only for offered trays, and counts and indexes the racks as it
/// goes ([`OfferedView`]), so the engine reads no tray again.
///
/// A later callback of the same evaluation (Slurm's retry loop, after it refused every set)
/// offers the same trays less the ones it dropped, with the same state and `avail_res`
/// (Slurm restores the cores, our attempts restore the rest): those trays are withdrawn from
/// the last callback's view instead, which costs a comparison of the two maps and the racks.
///
/// A tray without an entry there is taken as a whole free tray (`unknown`): the engine then
/// offers it, and Slurm's own check decides, rather than making the job wait for ever.
/// `eval` numbers the `topology_p_eval_nodes` call (`memo::current`).
pub fn offered_view(
    te: TopoEval<'_>,
    node_map: BitmapRef<'_>,
    st: &Arc<Loaded>,
    eval: u64,
) -> SpareView {
    let spare = SPARE_VIEW.try_lock().and_then(|mut s| s.take());
    let mut spare = spare.unwrap_or_default();
    let topo = &st.topo;
    let dropped = spare
        .from
        .as_mut()
        .filter(|f| f.eval == eval && Arc::ptr_eq(&f.loaded, st))
        .and_then(|f| f.map.shrink_to(node_map));
    let lineage = match (&dropped, &spare.from) {
        (Some(_), Some(from)) => from.lineage,
        _ => OFFERS.fetch_add(1, Ordering::Relaxed) + 1,
    };
    if let Some(dropped) = dropped {
        if spare.built.withdraw(topo, &dropped) {
            return spare;
        }
    }
    let unknown = topo.full_tray;
    let node_count = slurm::node_count();
    spare.built.reset(topo, node_count);
    let offered = node_map.ones().into_iter().filter(|&n| n < node_count);
    spare.built.offer(
        topo,
        offered.map(|n| {
            let weight = slurm::node_sched_weight(n).unwrap_or(0);
            let res = te.avail_res(n).or(Some((unknown.gpus, unknown.cpus)));
            (n, tray(n, true, res), weight)
        }),
    );
    spare.built.finish(topo);
    spare.from = Some(BuiltFrom {
        eval,
        loaded: Arc::clone(st),
        map: node_map.to_owned(),
        lineage,
    });
    spare
}

/// A tray's state; `res` is (GPUs, CPUs) this job could use there, when Slurm said.
fn tray(node: usize, offered: bool, res: Option<(u16, u16)>) -> Tray {
    let state = slurm::node_state(node).unwrap_or(0);
    let (gpus, cpus) = res.unwrap_or((0, 0));
    Tray {
        offered,
        unavailable: slurm::state_unavailable(state),
        allocated: slurm::state_allocated(state),
        gpus,
        cpus,
    }
}

impl SpareView {
    /// The run of shrinking offers this view belongs to ([`OFFERS`]).
    pub fn lineage(&self) -> u64 {
        self.from.as_ref().map_or(0, |f| f.lineage)
    }
}
