//! The rack table every entry point reads, built by `topology_p_build_config`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::{Mutex, RwLock};

use super::slurm::{self, Bitmap};
use nvl72_engine::config::lines::TopologyLines;
use nvl72_engine::config::{Config, ConfigError};
use nvl72_engine::topology::{Topology, UnknownNode};

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
    /// The racks as read, to resolve them again when a dynamic node goes.
    pub config: Config,
    /// Dynamic nodes in racks, with their index: a deleted one's index can be given to the
    /// next node created, which must not inherit its rack (see [`current`]).
    pub dynamic: Vec<(usize, String)>,
}

static STATE: Lazy<RwLock<Option<Arc<Loaded>>>> = Lazy::new(|| RwLock::new(None));
/// Tables replaced by a rebuild stay alive: Slurm may still hold a `get_bitmap` pointer.
static RETIRED: Lazy<Mutex<Vec<Arc<Loaded>>>> = Lazy::new(|| Mutex::new(Vec::new()));

/// The rack table in force. Racks are resolved by name at each load; a dynamic node in a rack
/// that was deleted since (its index now empty or another node's) leaves its rack here, on the
/// first call after, so that a node created in its place never inherits the rack. Static
/// nodes cannot be deleted, so with no dynamic node in a rack this costs nothing.
pub fn current() -> Option<Arc<Loaded>> {
    let st = STATE.read().clone()?;
    let gone: Vec<&(usize, String)> = st
        .dynamic
        .iter()
        .filter(|(i, name)| !slurm::node_named(*i, name))
        .collect();
    if gone.is_empty() {
        return Some(st);
    }
    let names: Vec<&str> = gone.iter().map(|(_, n)| n.as_str()).collect();
    log::info!(
        "dynamic node(s) {} deleted: they leave their racks until they exist again and \
         `scontrol reconfigure` reads the racks",
        nvl72_engine::hostlist::compress(&names)
    );
    let fresh = resolve_quietly(&st.config);
    install(fresh);
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

/// slurmctld refuses a file whose racks name nodes slurm.conf does not define
/// (`topology::refuse_unknown`), at the line of the first such rack.
pub fn refuse_unknown_nodes(config: &Config) -> Result<(), ConfigError> {
    let by_name = node_index_by_name();
    let unknown: Vec<UnknownNode> = config
        .racks
        .iter()
        .flat_map(|r| r.nodes.iter().map(move |n| (r, n)))
        .filter(|(_, n)| !by_name.contains_key(n.as_str()))
        .map(|(r, n)| UnknownNode {
            rack: r.name.clone(),
            node: n.clone(),
        })
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let lines = TopologyLines::read(&config.source);
    nvl72_engine::topology::refuse_unknown(config, &unknown, &lines)
}

/// slurmctld refuses a file that takes a tray running jobs hold out of the rack it is in
/// (`held_trays`), against the last good racks (the ones in force) and the jobs slurmctld is
/// about to recover. Saved jobs that cannot be read are reported and the edit is let through,
/// as before this check existed.
pub fn refuse_moving_held(config: &Config) -> Result<(), ConfigError> {
    let Some(Ok(old)) = load_last_good() else {
        return Ok(());
    };
    let jobs = match super::saved_jobs::held_jobs() {
        Ok(Some(jobs)) => jobs,
        Ok(None) => return Ok(()),
        Err(e) => {
            log::warn!(
                "cannot read the saved jobs ({e}); this load does not check that running jobs \
                 keep their racks"
            );
            return Ok(());
        }
    };
    let lines = TopologyLines::read(&config.source);
    nvl72_engine::held_trays::refuse_moving_held(&old, config, &jobs, &lines)
}

/// Resolves `config` against the node table and builds the bitmaps. Unknown names (a last
/// good copy from before slurm.conf lost those nodes, or slurmd) are left out with a warning.
pub fn resolve(config: &Config) -> Loaded {
    let loaded = resolve_quietly(config);
    let missing: Vec<&str> = config
        .racks
        .iter()
        .flat_map(|r| r.nodes.iter())
        .filter(|n| !loaded.rack_by_name.contains_key(n.as_str()))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        log::warn!(
            "{}: {} node(s) listed in racks are not in slurm.conf and are ignored: {}",
            config.source.display(),
            missing.len(),
            nvl72_engine::hostlist::compress(&missing)
        );
    }
    loaded
}

/// [`resolve`] without the warning (a deleted dynamic node is expected to be missing).
fn resolve_quietly(config: &Config) -> Loaded {
    let by_name = node_index_by_name();
    let count = slurm::node_count();
    // Names that resolve to no node are left out; `resolve` names them.
    let (mut topo, _) = Topology::resolve(config, count, |n| by_name.get(n).copied());
    topo.block_25_11_segments = cfg!(slurm_jobinfo);
    // A whole tray's CPUs, for "does this job fit one rack" on jobs sized by CPUs.
    if let Some(cpus) = (0..count)
        .filter(|&n| topo.in_any_rack(n))
        .filter_map(slurm::node_cpus)
        .max()
    {
        topo.full_tray.cpus = cpus;
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
    let dynamic = topo
        .racks
        .iter()
        .flat_map(|d| d.nodes.iter().zip(&d.node_names))
        .filter(|(&n, _)| slurm::node_state(n).is_some_and(slurm::state_dynamic))
        .map(|(&n, name)| (n, name.clone()))
        .collect();
    Loaded {
        topo,
        rack_nodes,
        rack_bitmaps,
        group_bitmaps,
        rack_by_name,
        config: config.clone(),
        dynamic,
    }
}

/// Reads topology.toml (or topology.conf) from the directory of slurm.conf.
pub fn read_config() -> Result<Config, ConfigError> {
    nvl72_engine::config::load_dir(&slurm::config_dir())
}

const LAST_GOOD: &str = nvl72_engine::config::last_good::FILE;
const NODE_ORDER: &str = "topology_nvl72.node-order";

/// The node order saved in StateSaveLocation, while that also holds slurmctld's job state
/// (`job_state`, or the `.old` copy slurmctld falls back to): only then can a running job
/// be recovered onto the table. A file that cannot be read is reported and not used.
pub fn load_node_order() -> Option<(PathBuf, Vec<String>)> {
    let dir = slurm::state_save_location()?;
    let jobs = ["job_state", "job_state.old"]
        .iter()
        .any(|f| dir.join(f).is_file());
    let path = dir.join(NODE_ORDER);
    if !jobs || !path.is_file() {
        return None;
    }
    let read = std::fs::read_to_string(&path).map_err(|e| e.to_string());
    match read.and_then(|t| nvl72_engine::node_order::parse(&t).map_err(|e| e.0)) {
        Ok(names) => Some((path, names)),
        Err(e) => {
            slurm::log_error(&format!(
                "{}: {e}; ranking nodes by the racks instead, which moves the cores and GPUs \
                 of running jobs whose trays change place",
                path.display()
            ));
            None
        }
    }
}

/// Saves the node table's order for the next start (atomically: a crash leaves the old file).
pub fn save_node_order(names: &[&str]) {
    if let Some(dir) = slurm::state_save_location() {
        write_atomically(
            &dir.join(NODE_ORDER),
            &nvl72_engine::node_order::render(names),
        );
    }
}

/// Writes `path` through a temporary file of an unpredictable name in the same directory
/// (never a planted symlink) and a rename, mode 0644 as before.
fn write_atomically(path: &std::path::Path, text: &str) {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let result = tempfile::NamedTempFile::new_in(dir).and_then(|mut tmp| {
        tmp.write_all(text.as_bytes())?;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
        tmp.persist(path).map(drop).map_err(|e| e.error)
    });
    if let Err(e) = result {
        log::warn!("cannot save {}: {e}", path.display());
    }
}

/// slurmctld keeps a copy of the last configuration it accepted in StateSaveLocation, so a
/// restart with a broken file keeps placing jobs by the racks it knew; and one per controller
/// host, so that `nvl72 check` on one controller sees what the other loaded.
pub fn save_last_good(config: &Config) {
    use nvl72_engine::config::last_good;
    if let Some(dir) = slurm::state_save_location() {
        let text = last_good::render(config);
        write_atomically(&dir.join(LAST_GOOD), &text);
        if let Some(host) = last_good::this_host() {
            write_atomically(&dir.join(last_good::loaded_by_file(&host)), &text);
        }
    }
}

/// The last good copy, read leniently (`config::last_good`): keys of a newer build are left
/// out with a warning, so a downgrade never makes the copy unreadable.
pub fn load_last_good() -> Option<Result<Config, ConfigError>> {
    let path = slurm::state_save_location()?.join(LAST_GOOD);
    if !path.is_file() {
        return None;
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => return Some(Err(ConfigError::unreadable(&path, &e))),
    };
    Some(
        nvl72_engine::config::last_good::parse(&text, &path).map(|(config, ignored)| {
            if !ignored.is_empty() {
                log::warn!(
                    "{}: left out what this build does not know: {}",
                    path.display(),
                    ignored.join(", ")
                );
            }
            config
        }),
    )
}
