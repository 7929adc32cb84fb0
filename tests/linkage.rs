//! The built plugin must load lazily in every Slurm program: slurmd, slurmstepd and the
//! client commands lack slurmctld-only symbols, so nothing may be bound at load time except
//! data and callbacks that libslurmfull provides everywhere.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `.so` of this test's profile: it sits in the profile directory (`<target>/<profile>/`)
/// above this test binary (`<target>/<profile>/deps/linkage-*`), whatever the target
/// directory or profile. Cargo does not build a cdylib-only crate for its integration
/// tests, so a `.so` older than the plugin's sources is refused as stale.
fn plugin() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary in <target>/<profile>/deps");
    let so = profile_dir.join("libtopology_nvl72.so");
    assert!(
        so.is_file(),
        "{} missing: cargo test builds the cdylib next to the tests",
        so.display()
    );
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    let built = modified(&so).expect("the .so's time");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = vec![root.join("build.rs"), root.join("Cargo.toml")];
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src/").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                sources.push(path);
            }
        }
    }
    let stale: Vec<_> = sources
        .iter()
        .filter(|p| modified(p).is_some_and(|t| t > built))
        .collect();
    assert!(
        stale.is_empty(),
        "{} is older than {stale:?}: build the plugin in this profile first (cargo build -p topology_nvl72)",
        so.display()
    );
    so
}

fn readelf(args: &[&str]) -> String {
    let out = Command::new("readelf")
        .args(args)
        .arg(plugin())
        .output()
        .expect("readelf (binutils) is needed");
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "readelf {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn no_eager_binding_and_no_libslurm_dependency() {
    let dynamic = readelf(&["-d"]);
    assert!(!dynamic.contains("BIND_NOW"), "{dynamic}");
    assert!(
        !dynamic
            .lines()
            .any(|l| l.contains("FLAGS") && l.contains("NOW")),
        "{dynamic}"
    );
    let needed: Vec<&str> = dynamic.lines().filter(|l| l.contains("(NEEDED)")).collect();
    assert!(!needed.iter().any(|l| l.contains("slurm")), "{needed:?}");
}

#[test]
fn load_time_bindings_are_only_symbols_every_slurm_program_has() {
    // Resolved when the .so is loaded: must exist in libslurmfull (or libc/libgcc).
    const EVERYWHERE: &[&str] = &[
        "node_record_count",
        "node_record_table_ptr",
        "slurm_conf",
        #[cfg(not(slurm_ctx))]
        "topo_conf",
        #[cfg(slurm_jobinfo)]
        "slurm_xfree_ptr",
        // Our own export, read by the log macros of Debian's helper objects (26.05.5 build).
        "plugin_type",
        "slurm_gres_find_sock_by_job_state",
        "slurm_gres_sock_delete",
    ];
    let relocs = readelf(&["-r", "-W"]);
    for line in relocs
        .lines()
        .filter(|l| l.contains("R_X86_64_GLOB_DAT") || l.contains("R_X86_64_64"))
    {
        let Some(sym) = line.split_whitespace().nth(4) else {
            continue;
        };
        let name = sym.split('@').next().unwrap_or(sym);
        let system = name.starts_with('_') || sym.contains("@GLIBC") || sym.contains("@GCC");
        assert!(
            system || EVERYWHERE.contains(&name),
            "bound at load time: {line}"
        );
    }
    for slurmctld_only in [
        "job_mgr_determine_cpus_per_core",
        "lock_slurmctld",
        "unlock_slurmctld",
        "hres_select_check",
        "hres_select_return",
    ] {
        let line = relocs.lines().find(|l| l.contains(slurmctld_only));
        assert!(
            line.is_none_or(|l| l.contains("JUMP_SLOT")),
            "{slurmctld_only} not lazy: {line:?}"
        );
    }
}

/// Exactly the symbols the Slurm series built for resolves (`src/interfaces/topology.c`
/// `syms[]`, plus the loader's `plugin_*`, `init`, `fini`): a missing one makes the loader
/// refuse the plugin as corrupted, an extra `topology_p_*` one means a wrong series.
fn expected_exports() -> Vec<&'static str> {
    let mut syms = vec![
        "plugin_name",
        "plugin_type",
        "plugin_version",
        "plugin_id",
        "init",
        "fini",
        "topology_p_build_config",
        "topology_p_eval_nodes",
        "topology_p_whole_topo",
        "topology_p_get_bitmap",
        "topology_p_generate_node_ranking",
        "topology_p_get_node_addr",
        "topology_p_split_hostlist",
        "topology_p_get",
        "topology_p_get_fragmentation",
    ];
    if cfg!(slurm_jobinfo) {
        syms.extend([
            "topology_p_topoinfo_free",
            "topology_p_topoinfo_pack",
            "topology_p_topoinfo_print",
            "topology_p_topoinfo_unpack",
            "topology_p_jobinfo_free",
            "topology_p_jobinfo_pack",
            "topology_p_jobinfo_unpack",
            "topology_p_jobinfo_get",
            "topology_p_get_topology_str",
        ]);
    } else {
        syms.extend([
            "topology_p_topology_free",
            "topology_p_topology_pack",
            "topology_p_topology_print",
            "topology_p_topology_unpack",
        ]);
    }
    if cfg!(slurm_ctx) {
        syms.extend([
            "supports_exclusive_topo",
            "topology_p_add_rm_node",
            "topology_p_destroy_config",
        ]);
    }
    if cfg!(slurm_eval_action) {
        syms.extend([
            "topology_p_allow_one_node",
            "topology_p_eval_node",
            "topology_p_get_rank",
        ]);
    }
    syms
}

#[test]
fn exports_exactly_the_topology_interface_of_its_slurm_series() {
    let table = readelf(&["--dyn-syms", "-W"]);
    let defined: Vec<&str> = table
        .lines()
        .filter(|l| !l.contains(" UND "))
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    let expected = expected_exports();
    for sym in &expected {
        assert!(defined.contains(sym), "{sym} not exported");
    }
    for sym in defined.iter().filter(|s| s.starts_with("topology_p_")) {
        assert!(
            expected.contains(sym),
            "{sym} exported but not in this series' interface"
        );
    }
    // syms[] has 15 names in 24.11, 18 in 25.05, 23 in 25.11 and 26 in 26.05 (26.05.3
    // topology.c:106-133); the loader adds plugin_name, plugin_version, init and fini.
    let count = match (
        cfg!(slurm_ctx),
        cfg!(slurm_jobinfo),
        cfg!(slurm_eval_action),
    ) {
        (false, _, _) => 19,
        (true, false, _) => 22,
        (true, true, false) => 27,
        (true, true, true) => 30,
    };
    assert_eq!(expected.len(), count);
}
