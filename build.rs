//! Build script: binds to one Slurm release and compiles (or links) Slurm's topology helper
//! library.
//!
//! 1. Choose the Slurm inputs: `SLURM_SRC` (any source tree), else the pin
//!    `slurm-headers/pins/$SLURM_PIN` (default 24.11.5), fetched when missing:
//!    - `SLURM_KIND=debian-source`: Debian's orig tarball (`scripts/fetch-slurm-source.sh`);
//!    - `SLURM_KIND=debian-binary`: Debian's `libslurm-dev` (public headers) and the helper
//!      objects from `slurm-wlm-basic-plugins-dev` (`scripts/fetch-slurm-binary.sh`), with the
//!      internal layouts from the committed ABI description (`slurm-headers/abi/`), for a
//!      release whose source cannot be downloaded (26.05.5).
//! 2. Derive `plugin_version` from the release, refuse a series the crate does not implement,
//!    and tell the code which interface to export (`cfg(slurm_ctx)`, `cfg(slurm_jobinfo)`,
//!    `cfg(slurm_eval_action)`, see [`Series`]).
//! 3. Compile `src/plugins/topology/common/*.c` with `cc` (source tree), or link Debian's
//!    objects of it (binary).
//! 4. Run bindgen over `slurm-headers/wrapper.h` with an allowlist.
//! 5. Link for lazy binding: slurmd, slurmstepd and the clients load the same `.so`, and they
//!    lack slurmctld-only functions such as `job_mgr_determine_cpus_per_core`.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

include!("slurm-headers/series.rs");

const DEFAULT_PIN: &str = "24.11.5";

/// Where the Slurm declarations and the helper library come from.
enum Inputs {
    /// A full source tree: internal headers, helper sources.
    Tree(PathBuf),
    /// Debian binary packages: public headers, helper objects; internal layouts from the
    /// committed ABI description `abi_header` (relative to slurm-headers/).
    Binary { dir: PathBuf, abi_header: String },
}

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for f in [
        "slurm-headers/pins",
        "slurm-headers/abi",
        "slurm-headers/wrapper.h",
        "slurm-headers/config.h",
    ] {
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rerun-if-env-changed=SLURM_SRC");
    println!("cargo:rerun-if-env-changed=SLURM_PIN");
    println!("cargo:rerun-if-env-changed=SLURM_PREFIX");
    for cfg in ALL_CFGS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }

    let pin_name = env::var("SLURM_PIN").unwrap_or_else(|_| DEFAULT_PIN.into());
    let pin = read_pin(&root, &pin_name);
    let inputs = slurm_inputs(&root, &pin);
    let (major, minor, micro) = match &inputs {
        Inputs::Tree(tree) => {
            println!("cargo:rerun-if-changed={}", tree.join("META").display());
            meta_version(tree)
        }
        Inputs::Binary { dir, .. } => header_version(&dir.join("include/slurm/slurm_version.h")),
    };
    let version = format!("{major}.{minor:02}.{micro}");
    let pinned = pin_value(&pin, "SLURM_VERSION");
    if env::var_os("SLURM_SRC").is_some() {
        refuse_another_installed_release(&version);
        if version != pinned {
            println!(
                "cargo:warning=building topology/nvl72 for Slurm {version} from SLURM_SRC \
                 (the pin is {pinned}); the .so loads ONLY into Slurm {version}"
            );
        }
    } else if version != pinned {
        panic!("the Slurm inputs fetched for pin {pin_name} are Slurm {version}, not {pinned}");
    }
    let Some(series) = SUPPORTED
        .iter()
        .find(|s| (s.major, s.minor) == (major, minor))
    else {
        let names: Vec<String> = SUPPORTED
            .iter()
            .map(|s| format!("{}.{:02}", s.major, s.minor))
            .collect();
        panic!(
            "topology/nvl72 does not implement the topology plugin interface of Slurm {version}; \
             supported series: {} (see docs/abi.md)",
            names.join(", ")
        );
    };
    for cfg in series.cfgs {
        println!("cargo:rustc-cfg={cfg}");
    }
    let version_number = (major << 16) | (minor << 8) | micro;
    println!("cargo:rustc-env=NVL72_SLURM_VERSION={version}");
    println!("cargo:rustc-env=NVL72_SLURM_VERSION_NUMBER={version_number}");

    refuse_unguarded_exports(&root.join("src"));
    match &inputs {
        Inputs::Tree(tree) => {
            let gen_inc = write_version_header(&out, version_number, &version);
            let includes = [gen_inc, root.join("slurm-headers"), tree.clone()];
            compile_topology_common(tree, &includes);
            generate_bindings(&root, &out, &includes, None);
        }
        Inputs::Binary { dir, abi_header } => {
            let includes = [dir.join("include"), root.join("slurm-headers")];
            let lib = dir.join("lib");
            println!("cargo:rerun-if-changed={}", lib.display());
            println!("cargo:rustc-link-search=native={}", lib.display());
            println!("cargo:rustc-link-lib=static=slurm_topology_common");
            generate_bindings(&root, &out, &includes, Some(abi_header));
        }
    }

    // Lazy binding and partial RELRO: never resolve slurmctld-only functions at load time.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,lazy");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,relro");
}

/// slurm/slurm_version.h is generated by configure; a source tree lacks it, so write the
/// equivalent from META.
fn write_version_header(out: &Path, version_number: u32, version: &str) -> PathBuf {
    let gen_inc = out.join("include");
    fs::create_dir_all(gen_inc.join("slurm")).unwrap();
    let version_h = format!(
        "#ifndef _SLURM_VERSION_H_\n#define _SLURM_VERSION_H_\n\
         #define SLURM_VERSION_NUMBER 0x{version_number:06x}\n\
         #define SLURM_VERSION_STRING \"{version}\"\n\
         #define SLURM_VERSION_NUM(a,b,c) (((a) << 16) + ((b) << 8) + (c))\n\
         #define SLURM_VERSION_MAJOR(a) (((a) >> 16) & 0xff)\n\
         #define SLURM_VERSION_MINOR(a) (((a) >> 8) & 0xff)\n\
         #define SLURM_VERSION_MICRO(a) ((a) & 0xff)\n#endif\n"
    );
    // bindgen asks cargo to rerun this script when any header it read changes, this one
    // included: rewriting it unchanged would rerun bindgen and cc on every build.
    let version_path = gen_inc.join("slurm/slurm_version.h");
    if fs::read_to_string(&version_path).ok().as_deref() != Some(version_h.as_str()) {
        fs::write(&version_path, version_h).unwrap();
    }
    gen_inc
}

/// The pin file `slurm-headers/pins/<name>`; an unknown name lists the known ones.
fn read_pin(root: &Path, name: &str) -> String {
    let dir = root.join("slurm-headers/pins");
    fs::read_to_string(dir.join(name)).unwrap_or_else(|e| {
        let mut known: Vec<String> = fs::read_dir(&dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into())
                    .collect()
            })
            .unwrap_or_default();
        known.sort();
        panic!(
            "SLURM_PIN={name}: cannot read {} ({e}); pinned releases: {}",
            dir.join(name).display(),
            known.join(", ")
        )
    })
}

fn pin_value(pin: &str, key: &str) -> String {
    pin.lines()
        .filter_map(|l| l.split('#').next())
        .filter_map(|l| l.trim().strip_prefix(&format!("{key}=")))
        .map(|v| v.trim().trim_matches('"').to_string())
        .next()
        .unwrap_or_else(|| panic!("the Slurm pin lacks {key}="))
}

/// `SLURM_SRC`, else the pinned inputs, fetched on first use by the pin's script.
fn slurm_inputs(root: &Path, pin: &str) -> Inputs {
    if let Some(src) = env::var_os("SLURM_SRC") {
        let p = PathBuf::from(src);
        assert!(
            p.join("META").is_file(),
            "SLURM_SRC={} is not a Slurm source tree (no META)",
            p.display()
        );
        return Inputs::Tree(p);
    }
    let kind = pin_value(pin, "SLURM_KIND");
    let (script, inputs, ready) = match kind.as_str() {
        "debian-source" => {
            let tree = root
                .join("slurm-headers/src")
                .join(pin_value(pin, "SLURM_TREE"));
            let ready = tree.join("META");
            ("fetch-slurm-source.sh", Inputs::Tree(tree), ready)
        }
        "debian-binary" => {
            let dir = root
                .join("slurm-headers/src")
                .join(format!("debian-{}", pin_value(pin, "SLURM_VERSION")));
            let ready = dir.join(".complete");
            let abi_header = pin_value(pin, "SLURM_ABI_HEADER");
            (
                "fetch-slurm-binary.sh",
                Inputs::Binary { dir, abi_header },
                ready,
            )
        }
        other => {
            panic!("unknown SLURM_KIND={other} in the Slurm pin (debian-source, debian-binary)")
        }
    };
    if !ready.is_file() {
        println!("cargo:warning=Slurm inputs missing; running scripts/{script}");
        let status = Command::new("bash")
            .arg(root.join("scripts").join(script))
            .status()
            .unwrap_or_else(|e| panic!("cannot run scripts/{script}: {e}"));
        assert!(
            status.success(),
            "scripts/{script} failed; see its output above"
        );
    }
    assert!(ready.is_file(), "no Slurm inputs at {}", ready.display());
    inputs
}

/// With `SLURM_PREFIX` (the Slurm installation the plugin is for, as lab-up.sh and
/// scripts/test.sh name it) next to `SLURM_SRC`, both must be the same release: Slurm loads a
/// plugin only of its own major.minor.micro, and a tree of another micro release may lay out
/// the job record differently (26.05.3 and Debian's 26.05.5 do).
fn refuse_another_installed_release(tree_version: &str) {
    let Some(prefix) = env::var_os("SLURM_PREFIX").filter(|p| !p.is_empty()) else {
        return;
    };
    let header = PathBuf::from(&prefix).join("include/slurm/slurm_version.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let (major, minor, micro) = header_version(&header);
    let installed = format!("{major}.{minor:02}.{micro}");
    assert!(
        installed == tree_version,
        "SLURM_SRC={} is Slurm {tree_version}, but the installation SLURM_PREFIX={} is Slurm \
         {installed}: Slurm loads a plugin only of its own release; point SLURM_SRC at the \
         source tree of Slurm {installed}",
        env::var("SLURM_SRC").unwrap_or_default(),
        PathBuf::from(&prefix).display(),
    );
}

/// (major, minor, micro) from a public `slurm_version.h` (`SLURM_VERSION_NUMBER 0x1a0505`).
fn header_version(path: &Path) -> (u32, u32, u32) {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let number = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#define SLURM_VERSION_NUMBER"))
        .filter_map(|v| u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
        .next()
        .unwrap_or_else(|| panic!("{} lacks SLURM_VERSION_NUMBER", path.display()));
    ((number >> 16) & 0xff, (number >> 8) & 0xff, number & 0xff)
}

fn meta_version(tree: &Path) -> (u32, u32, u32) {
    let meta = fs::read_to_string(tree.join("META")).expect("cannot read META");
    let field = |name: &str| -> u32 {
        meta.lines()
            .filter_map(|l| l.trim().strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().parse().expect("bad number in META"))
            .next()
            .unwrap_or_else(|| panic!("META lacks {name}"))
    };
    (field("Major"), field("Minor"), field("Micro"))
}

/// Slurm links `src/plugins/topology/common` (a static convenience library) into every
/// topology plugin; it holds the core/GRES charging helpers that are not in libslurmfull.
///
/// Compiled with the warnings Slurm's own build enables (`-Wall`, cc prints them as cargo
/// warnings), minus the two that Slurm's sources trigger by design (unused parameters of
/// callbacks, signed/unsigned comparisons); it rebuilds when any of its files changes.
fn compile_topology_common(tree: &Path, includes: &[PathBuf]) {
    let dir = tree.join("src/plugins/topology/common");
    let mut build = cc::Build::new();
    build
        .warnings(true)
        .extra_warnings(false)
        .flag("-Wno-unused-parameter")
        .flag("-Wno-sign-compare")
        .flag("-fno-strict-aliasing")
        .include(&dir);
    for inc in includes {
        build.include(inc);
    }
    for name in [
        "common_topo.c",
        "eval_nodes.c",
        "gres_filter.c",
        "gres_sched.c",
    ] {
        build.file(dir.join(name));
    }
    for entry in fs::read_dir(&dir).expect("cannot list the topology helper library") {
        let path = entry
            .expect("cannot list the topology helper library")
            .path();
        if matches!(path.extension().and_then(|e| e.to_str()), Some("c" | "h")) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    build.compile("slurm_topology_common");
}

/// Every function Slurm calls by name must come from `export!` (src/guard.rs), which wraps it
/// in the panic guard. In the modules that do not allow `unsafe_code` (`exports.rs`, ...) the
/// compiler already refuses a bare `#[no_mangle]`; this check covers the modules that allow
/// it. Only `src/` is watched: the engine is its own crate, so editing it does not rerun
/// this script (bindgen, cc).
fn refuse_unguarded_exports(src: &Path) {
    let mut files = vec![src.to_path_buf()];
    let mut offenders = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in fs::read_dir(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
                files.push(entry.expect("cannot list src/").path());
            }
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        println!("cargo:rerun-if-changed={}", path.display());
        if path.ends_with("src/guard.rs") {
            continue; // the macro's own expansion
        }
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            if !(t.starts_with("#[no_mangle]") || t.starts_with("#[export_name")) {
                continue;
            }
            // The item the attribute applies to: the next line that is not an attribute,
            // doc comment or comment. Data (the plugin_* statics) may be exported directly.
            let item = lines[i + 1..]
                .iter()
                .map(|l| l.trim_start())
                .find(|l| !(l.starts_with("#[") || l.starts_with("//")))
                .unwrap_or("");
            if item.contains("fn ") {
                offenders.push(format!("{}:{}", path.display(), i + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "functions exported without the panic guard (use export! from src/guard.rs): {}",
        offenders.join(", ")
    );
}

/// bindgen over wrapper.h; `abi_header` (binary inputs) replaces Slurm's internal headers by
/// the committed ABI description of that release.
fn generate_bindings(root: &Path, out: &Path, includes: &[PathBuf], abi_header: Option<&String>) {
    let mut builder = bindgen::Builder::default()
        .header(root.join("slurm-headers/wrapper.h").to_string_lossy())
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .layout_tests(true)
        .derive_default(false)
        .generate_comments(false)
        .allowlist_type(
            "topology_eval_t|topology_data_t|dynamic_plugin_data_t|avail_res_t|sock_gres_t",
        )
        .allowlist_type("topology_ctx_t|eval_action_t|topology_jobinfo_type_t")
        .allowlist_type("job_record_t|job_details_t|node_record_t|hostlist_t|buf_t|bitstr_t")
        .allowlist_function("slurm_bit_.*|next_node|next_node_bitmap|slurm_find_node_record")
        .allowlist_function(
            "slurm_node_name2bitmap|slurm_bitmap2node_name|copy_core_array|free_core_array",
        )
        .allowlist_function("core_array_or|slurm_xcalloc|slurm_xfree|slurm_xfree_ptr|slurm_xstrdup")
        .allowlist_function("slurm_packmem|slurm_unpackstr_xmalloc_chooser|slurm_hostlist_.*")
        .allowlist_function("slurm_pack32|slurm_unpack32|slurm_init_buf|slurm_free_buf")
        .allowlist_function("job_record_unpack|job_record_delete")
        .allowlist_function(
            "slurm_log_var|slurm_error|slurm_get_log_level|slurm_running_in_slurmctld",
        )
        .allowlist_function("slurm_run_in_daemon")
        .allowlist_function("common_topo_choose_nodes|common_topo_get_node_addr")
        .allowlist_function("common_topo_split_hostlist_treewidth|eval_nodes|common_test_node")
        .allowlist_function("slurm_list_for_each_ro|slurm_list_create|slurm_list_append")
        .allowlist_function("slurm_list_count|slurm_list_destroy")
        .allowlist_var("node_record_table_ptr|node_record_count|topo_conf|slurm_conf")
        .allowlist_var("part_list|idle_node_bitmap")
        .allowlist_var("SLURM_SUCCESS|SLURM_ERROR|ESLURM_.*|NODE_STATE_.*|TOPOLOGY_PLUGIN_.*")
        .allowlist_var("NO_VAL|NO_VAL16|JOB_MAGIC|DETAILS_MAGIC|NODE_MAGIC|PART_MAGIC")
        .allowlist_var("TOPO_RANK_ID_SHIFT|PREEMPT_MODE_.*")
        .allowlist_var("WHOLE_NODE_.*|LOG_LEVEL_.*|JOB_STATE_BASE|INFINITE")
        .allowlist_type("log_level_t|slurm_err_t|node_states|nvl72_.*|job_states")
        .rustified_enum("topology_data_t");
    for inc in includes {
        builder = builder.clang_arg(format!("-I{}", inc.display()));
    }
    if let Some(h) = abi_header {
        builder = builder.clang_arg(format!("-DNVL72_ABI_HEADER=\"{h}\""));
    }
    builder
        .generate()
        .expect("bindgen failed on slurm-headers/wrapper.h")
        .write_to_file(out.join("slurm_bindings.rs"))
        .expect("cannot write bindings");
}
