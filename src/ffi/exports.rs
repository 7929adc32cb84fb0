//! The symbols Slurm's plugin loader resolves (`plugin_*`, `init`, `fini` and the
//! `topology_p_*` operations of the 24.11 interface, `src/interfaces/topology.c` `syms[]`).
//! Placement lives in `eval`, `scontrol show topology` in `topoinfo`.
#![allow(non_upper_case_globals)]

use std::ffi::{c_char, c_int};

use super::bindings as b;
use super::guard::{guarded, install_logger};
use super::slurm::{self, BitmapRef};
use super::state;

const fn parse_u32(s: &str) -> u32 {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut v = 0u32;
    while i < bytes.len() {
        v = v * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    v
}

#[no_mangle]
pub static plugin_name: [u8; 22] = *b"topology NVL72 plugin\0";
/// Must be exactly "topology/<name>": the loader matches it when scanning PluginDir.
#[no_mangle]
pub static plugin_type: [u8; 15] = *b"topology/nvl72\0";
/// Slurm loads a plugin only if major.minor.micro equal its own (build.rs derives this from
/// the tree it compiled against).
#[no_mangle]
pub static plugin_version: u32 = parse_u32(env!("NVL72_SLURM_VERSION_NUMBER"));
/// Unused by Slurm's own topology plugins (100-103); `scontrol show topology` compares it with
/// the id of the plugin loaded in the client.
#[no_mangle]
pub static plugin_id: u32 = 172;

#[no_mangle]
pub extern "C" fn init() -> c_int {
    guarded("init", slurm::ERROR, || {
        install_logger();
        log::debug!("loaded, built for Slurm {}", env!("NVL72_SLURM_VERSION"));
        slurm::SUCCESS
    })
}

#[no_mangle]
pub extern "C" fn fini() -> c_int {
    guarded("fini", slurm::ERROR, || {
        state::clear();
        slurm::SUCCESS
    })
}

/// Reads the racks. Slurm ignores the return value, so a broken file is handled here:
/// - a reconfigure child of slurmctld exits, and the running slurmctld resumes with its
///   current racks ("Resuming operation, reconfigure failed.");
/// - a freshly started slurmctld uses the last good copy from StateSaveLocation and says so;
///   with no such copy it refuses to start, as Slurm does for a broken topology.conf;
/// - slurmd and other programs carry on without racks (only SLURM_TOPOLOGY_ADDR is affected).
#[no_mangle]
pub extern "C" fn topology_p_build_config() -> c_int {
    guarded("build_config", slurm::ERROR, build_config)
}

fn build_config() -> c_int {
    let in_ctld = slurm::running_in_slurmctld();
    if in_ctld {
        // part_list exists by now and its pointer never changes afterwards (see slurm.rs).
        // SAFETY: build_config runs single-threaded during slurmctld's config load.
        unsafe { slurm::PART_LIST.refresh(std::ptr::addr_of_mut!(b::part_list)) };
    }
    let config = match state::read_config() {
        Ok(config) => {
            if in_ctld {
                state::save_last_good(&config);
            }
            config
        }
        Err(e) if !in_ctld => {
            log::warn!("{e}; continuing without rack information in this process");
            return slurm::ERROR;
        }
        Err(e) if std::env::var_os("SLURMCTLD_RECONF_PARENT_FD").is_some() => slurm::fatal(
            &format!("reconfigure refused, topology configuration is invalid: {e}"),
        ),
        Err(e) => match state::load_last_good() {
            Some(Ok(good)) => {
                slurm::log_error(&format!(
                    "invalid topology configuration: {e}; placing jobs by the last good \
                     configuration {} until the file is fixed and `scontrol reconfigure` is run",
                    good.source.display()
                ));
                good
            }
            _ => slurm::fatal(&format!("invalid topology configuration: {e}")),
        },
    };
    let loaded = state::resolve(&config);
    log::info!(
        "{} racks, {} trays, {} GPUs per tray from {}",
        loaded.topo.domains.len(),
        loaded
            .topo
            .domains
            .iter()
            .map(|d| d.nodes.len())
            .sum::<usize>(),
        loaded.topo.gpus_per_tray,
        config.source.display()
    );
    state::install(loaded);
    slurm::SUCCESS
}

/// `--exclusive=topo` and `ExclusiveTopo`: widen `node_mask` to whole racks.
#[no_mangle]
pub extern "C" fn topology_p_whole_topo(node_mask: *mut b::bitstr_t) -> c_int {
    guarded("whole_topo", slurm::ERROR, || {
        // SAFETY: Slurm passes a valid node bitmap sized to node_record_count.
        let Some(mask) = (unsafe { BitmapRef::new(node_mask) }) else {
            return slurm::ERROR;
        };
        if let Some(st) = state::current() {
            for rack in st.rack_bitmaps.iter().filter(|r| mask.overlaps(r)) {
                mask.or(rack);
            }
        }
        slurm::SUCCESS
    })
}

/// Resolves a rack or rack-group name (`block{rack1}` style host expressions); the caller
/// must not free the result, which stays valid for the life of the process.
#[no_mangle]
pub extern "C" fn topology_p_get_bitmap(name: *mut c_char) -> *mut b::bitstr_t {
    guarded("get_bitmap", slurm::null(), || {
        // SAFETY: Slurm passes NULL or a NUL-terminated name.
        let (Some(name), Some(st)) = (unsafe { slurm::str_arg(name) }, state::current()) else {
            return slurm::null();
        };
        if let Some(d) = st.topo.domain_by_name(name) {
            return st.rack_bitmaps[d].as_ptr();
        }
        st.group_bitmaps
            .iter()
            .find(|(g, _)| g == name)
            .map_or(slurm::null(), |(_, m)| m.as_ptr())
    })
}

/// Orders slurmctld's node table rack by rack, trays in rack order, other nodes after them.
/// Runs before build_config, so it reads the configuration on its own.
#[no_mangle]
pub extern "C" fn topology_p_generate_node_ranking() -> bool {
    guarded("generate_node_ranking", false, || {
        let Ok(config) = state::read_config() else {
            return false; // build_config reports the error
        };
        let by_name = state::node_index_by_name();
        let mut ranked = vec![false; slurm::node_count()];
        let mut rank = 0u32;
        // SAFETY: slurmctld calls generate_node_ranking single-threaded while it builds the
        // node table, right before sorting it by node_rank.
        unsafe {
            for name in config.racks.iter().flat_map(|r| r.nodes.iter()) {
                if let Some(&i) = by_name.get(name) {
                    slurm::set_node_rank(i, rank);
                    ranked[i] = true;
                    rank += 1;
                }
            }
            for (i, done) in ranked.iter().enumerate() {
                if !done {
                    slurm::set_node_rank(i, rank + i as u32);
                }
            }
        }
        true
    })
}

/// `SLURM_TOPOLOGY_ADDR=rack3.gb041`, pattern `rack.node`; nodes outside racks get Slurm's
/// default (the node name, pattern `node`).
#[no_mangle]
pub extern "C" fn topology_p_get_node_addr(
    node_name: *mut c_char,
    addr: *mut *mut c_char,
    pattern: *mut *mut c_char,
) -> c_int {
    guarded("get_node_addr", slurm::ERROR, || {
        if addr.is_null() || pattern.is_null() {
            return slurm::ERROR;
        }
        // SAFETY: Slurm passes NULL or a NUL-terminated node name.
        let name = unsafe { slurm::str_arg(node_name) };
        let rack = name.zip(state::current()).and_then(|(n, st)| {
            st.rack_by_name
                .get(n)
                .map(|&d| format!("{}.{n}", st.topo.domains[d].name))
        });
        match rack {
            Some(a) => {
                // SAFETY: addr/pattern are valid out-pointers; the caller xfree()s both.
                unsafe {
                    *addr = slurm::xstrdup(&a);
                    *pattern = slurm::xstrdup("rack.node");
                }
                slurm::SUCCESS
            }
            // SAFETY: same arguments Slurm gave us, forwarded to Slurm's default.
            None => unsafe { b::common_topo_get_node_addr(node_name, addr, pattern) },
        }
    })
}

/// Message fan-out: Slurm's TreeWidth split (also honours TopologyParam=RoutePart).
#[no_mangle]
pub extern "C" fn topology_p_split_hostlist(
    hl: *mut b::hostlist_t,
    sp_hl: *mut *mut *mut b::hostlist_t,
    count: *mut c_int,
    tree_width: u16,
) -> c_int {
    guarded("split_hostlist", slurm::ERROR, || {
        // SAFETY: arguments forwarded unchanged to Slurm's helper, which takes the node and
        // partition locks itself for RoutePart (part_list was refreshed in build_config).
        unsafe { b::common_topo_split_hostlist_treewidth(hl, sp_hl, count, tree_width) }
    })
}

#[no_mangle]
pub extern "C" fn topology_p_get(kind: u32, data: *mut std::ffi::c_void) -> c_int {
    // `kind` is a C enum; taking it as an integer means an unknown value is an error, not UB.
    const PTR: u32 = b::topology_data_t::TOPO_DATA_TOPOLOGY_PTR as u32;
    const REC_CNT: u32 = b::topology_data_t::TOPO_DATA_REC_CNT as u32;
    const EXCLUSIVE: u32 = b::topology_data_t::TOPO_DATA_EXCLUSIVE_TOPO as u32;
    guarded("get", slurm::ERROR, || {
        if data.is_null() {
            return slurm::ERROR;
        }
        match kind {
            // SAFETY: for TOPOLOGY_PTR Slurm passes a dynamic_plugin_data_t ** (proc_req.c).
            PTR => unsafe { super::topoinfo::get(data.cast()) },
            REC_CNT => {
                let racks = state::current().map_or(0, |s| s.topo.domains.len());
                // SAFETY: for REC_CNT Slurm passes an int out-pointer.
                unsafe { *data.cast::<c_int>() = racks as c_int };
                slurm::SUCCESS
            }
            EXCLUSIVE => {
                // SAFETY: for EXCLUSIVE_TOPO Slurm passes an int out-pointer.
                unsafe { *data.cast::<c_int>() = 1 };
                slurm::SUCCESS
            }
            other => {
                log::error!("get: unsupported data type {other}");
                slurm::ERROR
            }
        }
    })
}

/// Backfill's `bf_topopt_enable` score: available trays stranded in incomplete racks.
#[no_mangle]
pub extern "C" fn topology_p_get_fragmentation(node_mask: *mut b::bitstr_t) -> u32 {
    guarded("get_fragmentation", 0, || {
        // SAFETY: Slurm passes a valid node bitmap.
        let (Some(mask), Some(st)) = (unsafe { BitmapRef::new(node_mask) }, state::current())
        else {
            return 0;
        };
        crate::metrics::fragmentation(&st.topo, mask.tester())
    })
}
