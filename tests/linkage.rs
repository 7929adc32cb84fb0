//! The built plugin must load lazily in every Slurm program: slurmd, slurmstepd and the
//! client commands lack slurmctld-only symbols, so nothing may be bound at load time except
//! data and callbacks that libslurmfull provides everywhere.

use std::path::PathBuf;
use std::process::Command;

/// The `.so` cargo built in the same run as this test: it sits in the profile directory
/// (`<target>/<profile>/`) above this test binary (`<target>/<profile>/deps/linkage-*`),
/// whatever the target directory or profile. A fixed path could be a stale build.
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
    let built = |p: &std::path::Path| p.metadata().and_then(|m| m.modified()).ok();
    let lib = profile_dir.join("libtopology_nvl72.rlib");
    if let (Some(so_time), Some(lib_time)) = (built(&so), built(&lib)) {
        // Both come from the same rustc invocation (crate-type = cdylib + rlib).
        let skew = so_time
            .duration_since(lib_time)
            .unwrap_or_else(|e| e.duration());
        assert!(
            skew.as_secs() < 60,
            "{} is not from the build of this test run",
            so.display()
        );
    }
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
        "topo_conf",
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
    ] {
        let line = relocs.lines().find(|l| l.contains(slurmctld_only));
        assert!(
            line.is_none_or(|l| l.contains("JUMP_SLOT")),
            "{slurmctld_only} not lazy: {line:?}"
        );
    }
}

#[test]
fn exports_the_whole_24_11_topology_interface() {
    let syms = readelf(&["--dyn-syms", "-W"]);
    for sym in [
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
        "topology_p_topology_free",
        "topology_p_get",
        "topology_p_topology_pack",
        "topology_p_topology_print",
        "topology_p_topology_unpack",
        "topology_p_get_fragmentation",
    ] {
        assert!(
            syms.lines()
                .any(|l| l.split_whitespace().last() == Some(sym) && !l.contains(" UND ")),
            "{sym} not exported"
        );
    }
}
