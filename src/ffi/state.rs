//! The rack table every entry point reads, built by `topology_p_build_config`.

use std::collections::HashMap;
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::{Mutex, RwLock};

use super::slurm::{self, Bitmap};
use crate::config::{Config, ConfigError};
use crate::model::Topology;

/// The topology plus the Slurm bitmaps `get_bitmap` hands out by name.
pub struct Loaded {
    pub topo: Topology,
    /// Every node that belongs to some rack.
    pub rack_nodes: Bitmap,
    /// Per-rack bitmaps (index = domain), then rack-group bitmaps.
    pub rack_bitmaps: Vec<Bitmap>,
    pub group_bitmaps: Vec<(String, Bitmap)>,
    /// Rack of each configured node name (for get_node_addr, which gets names).
    pub rack_by_name: HashMap<String, usize>,
}

static STATE: Lazy<RwLock<Option<Arc<Loaded>>>> = Lazy::new(|| RwLock::new(None));
/// Tables replaced by a rebuild stay alive: Slurm may still hold a `get_bitmap` pointer.
static RETIRED: Lazy<Mutex<Vec<Arc<Loaded>>>> = Lazy::new(|| Mutex::new(Vec::new()));

pub fn current() -> Option<Arc<Loaded>> {
    STATE.read().clone()
}

pub fn install(loaded: Loaded) {
    let old = STATE.write().replace(Arc::new(loaded));
    if let Some(l) = old {
        RETIRED.lock().push(l);
    }
}

pub fn clear() {
    *STATE.write() = None;
    RETIRED.lock().clear();
}

/// Name -> node index over Slurm's current node table.
pub fn node_index_by_name() -> HashMap<String, usize> {
    (0..slurm::node_count())
        .filter_map(slurm::node)
        .map(|n| (n.name, n.index))
        .collect()
}

/// Resolves `config` against the node table and builds the bitmaps.
pub fn resolve(config: &Config) -> Loaded {
    let by_name = node_index_by_name();
    let count = slurm::node_count();
    let (mut topo, unknown) = Topology::resolve(config, count, |n| by_name.get(n).copied());
    topo.block_25_11_segments = cfg!(slurm_jobinfo);
    // A whole tray's CPUs, for "does this job fit one rack" on jobs sized by CPUs.
    if let Some(cpus) = (0..count)
        .filter(|&n| topo.in_any_rack(n))
        .filter_map(slurm::node_cpus)
        .max()
    {
        topo.full_tray.cpus = cpus;
    }
    if !unknown.is_empty() {
        let names: Vec<&str> = unknown.iter().map(|u| u.node.as_str()).collect();
        log::warn!(
            "{}: {} node(s) listed in racks are not in slurm.conf and are ignored: {}",
            config.source.display(),
            unknown.len(),
            crate::hostlist::compress(&names)
        );
    }
    let rack_bitmaps: Vec<Bitmap> = topo
        .racks
        .iter()
        .map(|d| Bitmap::with_bits(count, d.nodes.iter().copied()))
        .collect();
    let group_bitmaps = topo
        .groups
        .iter()
        .map(|(g, members)| {
            let nodes = members
                .iter()
                .flat_map(|&d| topo.racks[d].nodes.iter().copied());
            (g.clone(), Bitmap::with_bits(count, nodes))
        })
        .collect();
    let rack_nodes = Bitmap::with_bits(count, (0..count).filter(|&n| topo.in_any_rack(n)));
    let rack_by_name = topo
        .racks
        .iter()
        .enumerate()
        .flat_map(|(d, dom)| dom.node_names.iter().map(move |n| (n.clone(), d)))
        .collect();
    Loaded {
        topo,
        rack_nodes,
        rack_bitmaps,
        group_bitmaps,
        rack_by_name,
    }
}

/// Reads topology.toml (or topology.conf) from the directory of slurm.conf.
pub fn read_config() -> Result<Config, ConfigError> {
    crate::config::load_dir(&slurm::config_dir())
}

const LAST_GOOD: &str = "topology_nvl72.last-good.toml";

/// slurmctld keeps a copy of the last configuration it accepted in StateSaveLocation, so a
/// restart with a broken file keeps placing jobs by the racks it knew.
pub fn save_last_good(config: &Config) {
    let Some(dir) = slurm::state_save_location() else {
        return;
    };
    let tmp = dir.join(format!("{LAST_GOOD}.new"));
    let result = std::fs::write(&tmp, config.to_toml())
        .and_then(|_| std::fs::rename(&tmp, dir.join(LAST_GOOD)));
    if let Err(e) = result {
        log::warn!("cannot save {}: {e}", dir.join(LAST_GOOD).display());
    }
}

pub fn load_last_good() -> Option<Result<Config, ConfigError>> {
    let path = slurm::state_save_location()?.join(LAST_GOOD);
    path.is_file().then(|| crate::config::load_file(&path))
}
