//! The tests of one Slurm series differ from another's (26.05's `eval_action`, 25.05's
//! topology.yaml): the lab's series (`SLURM_SERIES`, as scripts/test.sh and lab-up.sh name it;
//! default 24.11) gives them the plugin's `cfg`s for that series.
use std::env;

include!("../../slurm-headers/series.rs");

fn main() {
    println!("cargo:rerun-if-env-changed=SLURM_SERIES");
    for cfg in ALL_CFGS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    let name = env::var("SLURM_SERIES").unwrap_or_else(|_| "24.11".into());
    let series = name
        .split_once('.')
        .and_then(|(major, minor)| Some((major.parse().ok()?, minor.parse().ok()?)))
        .and_then(|(major, minor): (u32, u32)| {
            SUPPORTED
                .iter()
                .find(|s| (s.major, s.minor) == (major, minor))
        })
        .unwrap_or_else(|| {
            panic!("SLURM_SERIES={name}: not a Slurm series topology/nvl72 implements")
        });
    println!("cargo:rustc-env=NVL72_E2E_SERIES={name}");
    // The upgrade test moves Debian's 24.11.5 lab onto Debian's 26.05.5 packages: only the
    // suite of Debian's 26.05 lab has both (not a site's own installation, not SchedMD's
    // packages, not 26.11).
    println!("cargo:rerun-if-env-changed=SLURM_PREFIX");
    println!("cargo:rerun-if-env-changed=SLURM_DEBS");
    println!("cargo::rustc-check-cfg=cfg(debian_upgrade)");
    let prefix = env::var_os("SLURM_PREFIX").filter(|p| !p.is_empty());
    let debs = env::var_os("SLURM_DEBS").filter(|p| !p.is_empty());
    if name == "26.05" && prefix.is_none() && debs.is_none() {
        println!("cargo:rustc-cfg=debian_upgrade");
    }
    // The upgrade between SchedMD's packages (tests/e2e/tests/e2e_upgrade_smd.rs) runs when
    // its inputs are given: built when any of them is set, so that a missing one fails the
    // test instead of skipping it.
    println!("cargo::rustc-check-cfg=cfg(smd_upgrade)");
    let mut smd_upgrade = false;
    for var in [
        "NVL72_UPGRADE_FROM_DEBS",
        "NVL72_UPGRADE_TO_DEBS",
        "NVL72_UPGRADE_FROM_PACKAGE",
        "NVL72_UPGRADE_TO_PACKAGE",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
        smd_upgrade |= env::var_os(var).is_some_and(|v| !v.is_empty());
    }
    if smd_upgrade {
        println!("cargo:rustc-cfg=smd_upgrade");
    }
    // The site packages (SLURM_SRC=<tree> scripts/package.sh) are built from the pin's source
    // tree, which only 24.11.5's pin is (26.05.5's is Debian's binaries); a lab of SchedMD's
    // packages (SLURM_DEBS) runs without them.
    println!("cargo::rustc-check-cfg=cfg(site_packages)");
    if name == "24.11" && prefix.is_none() && debs.is_none() {
        println!("cargo:rustc-cfg=site_packages");
    }
    for cfg in series.cfgs {
        println!("cargo:rustc-cfg={cfg}");
    }
}
