//! The packages for a site's own Slurm build (`SLURM_SRC=<tree> scripts/package.sh`) are what
//! that site's packaging expects: a .deb next to SchedMD's `slurm-smd` of exactly the tree's
//! release, an .rpm next to `slurm.spec`'s `slurm` of that release, a tarball for a prefix,
//! all three with the same files.
//!
//! Read with the packaging tools a site uses (`dpkg-deb`, `dpkg --compare-versions`, `rpm`,
//! `rpmspec`) from the packages scripts/test.sh builds from the 24.11.5 source tree of the
//! pin: `NVL72_SITE_PACKAGES` (their folder) and `NVL72_SITE_SLURM_SRC` (the tree). Installed
//! next to SchedMD's own packages in the lab: docs/install.md, "SchedMD's Debian packages".
#![cfg(site_packages)]

use std::path::{Path, PathBuf};
use std::process::Command;

use nvl72_admin::check::release;

/// The three packages and the tree they were built from.
struct SitePackages {
    release: String,
    tree: PathBuf,
    deb: PathBuf,
    rpm: PathBuf,
    tarball: PathBuf,
}

fn env_path(var: &str) -> PathBuf {
    let p = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "{var} is not set: scripts/test.sh builds the site packages \
             (SLURM_SRC=<tree> scripts/package.sh) and sets it"
        )
    });
    assert!(p.exists(), "{var}={} does not exist", p.display());
    p
}

fn site_packages() -> SitePackages {
    let dir = env_path("NVL72_SITE_PACKAGES");
    let tree = env_path("NVL72_SITE_SLURM_SRC");
    let meta = std::fs::read_to_string(tree.join("META")).expect("the tree's META");
    let field = |key: &str| {
        meta.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{key}:")))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("no {key} in META"))
    };
    let release = field("Version");
    let only = |suffix: &str| {
        let found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("the site packages' folder")
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "one *{suffix} in {}: {found:?}",
            dir.display()
        );
        found.into_iter().next().unwrap()
    };
    SitePackages {
        deb: only(&format!("+slurm{release}-1_amd64.deb")),
        rpm: only(&format!(".slurm{release}.x86_64.rpm")),
        tarball: only(&format!("-slurm-{release}.tar.gz")),
        release,
        tree,
    }
}

/// `cmd args...`'s standard output; a failure names the command and its error output.
fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Whether dpkg finds `version` to satisfy every `relation` of a Depends field for `package`.
fn dpkg_satisfies(depends: &str, package: &str, version: &str) -> bool {
    let relations: Vec<(String, String)> = depends
        .split(',')
        .map(str::trim)
        .filter_map(|d| d.strip_prefix(package)?.trim().strip_prefix('('))
        .map(|r| {
            let (op, v) = r.trim_end_matches(')').split_once(' ').unwrap();
            (op.to_string(), v.trim().to_string())
        })
        .collect();
    assert!(
        !relations.is_empty(),
        "{depends} names no version of {package}"
    );
    relations.iter().all(|(op, v)| {
        let dpkg_op = match op.as_str() {
            ">=" => "ge",
            "<<" => "lt",
            "=" => "eq",
            other => panic!("relation {other} in {depends}"),
        };
        Command::new("dpkg")
            .args(["--compare-versions", version, dpkg_op, v])
            .status()
            .unwrap()
            .success()
    })
}

#[test]
fn the_schedmd_deb_depends_on_slurm_smd_of_exactly_its_release_in_any_packaging_revision() {
    let site = site_packages();
    let depends = run("dpkg-deb", &["-f", path(&site.deb), "Depends"]);
    let release = &site.release;
    // SchedMD's own packaging of the tree is <release>-1 (its debian/changelog, META's
    // Release); a site's rebuild of the same release is -2 or more.
    for fits in [format!("{release}-1"), format!("{release}-2")] {
        assert!(
            dpkg_satisfies(&depends, "slurm-smd", &fits),
            "{fits}: {depends}"
        );
    }
    let (major_minor, micro) = release.rsplit_once('.').unwrap();
    let micro: u32 = micro.parse().unwrap();
    let mut other = vec![format!("{major_minor}.{}-1", micro + 1)];
    if micro > 0 {
        other.push(format!("{major_minor}.{}-1", micro - 1));
    }
    for refused in other {
        assert!(
            !dpkg_satisfies(&depends, "slurm-smd", &refused),
            "{refused}: {depends}"
        );
    }
    let conflicts = run("dpkg-deb", &["-f", path(&site.deb), "Conflicts"]);
    assert_eq!(conflicts.trim(), "slurm-wlm-basic-plugins");
    assert_eq!(
        run("dpkg-deb", &["-f", path(&site.deb), "Package"]).trim(),
        "topology-nvl72"
    );
}

#[test]
fn the_schedmd_deb_installs_into_the_plugin_dir_of_schedmds_packaging() {
    let site = site_packages();
    let files = run("dpkg-deb", &["-c", path(&site.deb)]);
    for f in [
        "./usr/lib/x86_64-linux-gnu/slurm/topology_nvl72.so",
        "./usr/bin/nvl72",
        "./usr/share/doc/topology-nvl72/examples/topology.toml",
        "./usr/share/doc/topology-nvl72/config.md",
    ] {
        assert!(files.lines().any(|l| l.ends_with(f)), "{f} not in {files}");
    }
    // SchedMD's debian/rules configures with Debian's default libdir, where Slurm's PluginDir
    // is <libdir>/slurm (no --libdir, no --with-plugindir, no other PluginDir).
    let rules = std::fs::read_to_string(site.tree.join("debian/rules"))
        .expect("the tree's debian/rules (SchedMD's packaging)");
    assert!(rules.contains("dh_auto_configure"), "{rules}");
    assert!(
        !rules.contains("--libdir") && !rules.contains("plugindir"),
        "{rules}"
    );
}

#[test]
fn the_rpm_requires_the_slurm_that_slurm_spec_of_its_tree_provides() {
    let site = site_packages();
    let requires = run("rpm", &["-qpR", path(&site.rpm)]);
    let wanted = format!("slurm = {}", site.release);
    assert!(requires.lines().any(|l| l.trim() == wanted), "{requires}");
    assert!(
        !requires.contains("slurm-smd") && !requires.contains("libslurm"),
        "{requires}"
    );
    // What rpmbuild of the same tree names its package: slurm.spec evaluated by rpm itself.
    let spec = site.tree.join("slurm.spec");
    let provides = run("rpmspec", &["-q", "--provides", path(&spec)]);
    let provided = provides
        .lines()
        .find_map(|l| l.trim().strip_prefix("slurm = "))
        .unwrap_or_else(|| panic!("slurm.spec provides no slurm: {provides}"));
    // `slurm = <version>` (no release) is met by every release of that version.
    let version = provided.split_once('-').map_or(provided, |(v, _)| v);
    assert_eq!(version, site.release, "{provided}");
}

#[test]
fn the_rpm_installs_into_the_plugin_dir_of_slurm_spec() {
    let site = site_packages();
    let files = run("rpm", &["-qpl", path(&site.rpm)]);
    for f in [
        "/usr/lib64/slurm/topology_nvl72.so",
        "/usr/bin/nvl72",
        "/usr/share/doc/topology-nvl72/examples/topology.toml",
        "/usr/share/licenses/topology-nvl72/LICENSE",
    ] {
        assert!(files.lines().any(|l| l == f), "{f} not in {files}");
    }
    // slurm.spec installs Slurm's plugins into %{_libdir}/slurm, /usr/lib64/slurm on x86_64.
    let spec = std::fs::read_to_string(site.tree.join("slurm.spec")).unwrap();
    assert!(
        spec.lines().any(|l| l.trim() == "%{_libdir}/slurm/*.so"),
        "slurm.spec's %files"
    );
    assert_eq!(run("rpm", &["--eval", "%{_libdir}"]).trim(), "/usr/lib64");
}

/// sha256 of `file` under each form: the deb's and tarball's files unpacked, the rpm's from
/// its own digests (`rpm -qp --dump`).
fn sha256(file: &Path) -> String {
    run("sha256sum", &[path(file)])
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn every_form_holds_the_same_plugin_and_nvl72() {
    let site = site_packages();
    let scratch = tempfile::tempdir().unwrap();
    let deb_root = scratch.path().join("deb");
    run("dpkg-deb", &["-x", path(&site.deb), path(&deb_root)]);
    let tar_root = scratch.path().join("tar");
    std::fs::create_dir(&tar_root).unwrap();
    run(
        "tar",
        &[
            "-xzf",
            path(&site.tarball),
            "-C",
            path(&tar_root),
            "--strip-components=1",
        ],
    );
    let dump = run("rpm", &["-qp", "--dump", path(&site.rpm)]);
    let rpm_digest = |file: &str| {
        dump.lines()
            .find_map(|l| {
                let mut f = l.split_whitespace();
                (f.next() == Some(file)).then(|| f.nth(2).unwrap().to_string())
            })
            .unwrap_or_else(|| panic!("{file} not in the rpm: {dump}"))
    };
    let plugin = sha256(&deb_root.join("usr/lib/x86_64-linux-gnu/slurm/topology_nvl72.so"));
    assert_eq!(
        sha256(&tar_root.join("lib/slurm/topology_nvl72.so")),
        plugin
    );
    assert_eq!(rpm_digest("/usr/lib64/slurm/topology_nvl72.so"), plugin);
    let nvl72 = sha256(&deb_root.join("usr/bin/nvl72"));
    assert_eq!(sha256(&tar_root.join("bin/nvl72")), nvl72);
    assert_eq!(rpm_digest("/usr/bin/nvl72"), nvl72);
    // Built for the tree's release: the plugin_version Slurm compares when it loads it.
    let built_for =
        release::plugin_release(&deb_root.join("usr/lib/x86_64-linux-gnu/slurm/topology_nvl72.so"))
            .unwrap();
    assert_eq!(Some(built_for), release::Release::parse(&site.release));
}
