//! Which lab: the Slurm series, the installation, the lab directory and the topology plugin
//! under test, read from the environment as lab-lib.sh reads it.

/// The Slurm series the lab runs, as lab-lib.sh reads it: `SLURM_SERIES`, else the release of
/// the installation at `SLURM_PREFIX` (its `include/slurm/slurm_version.h`), else that of
/// SchedMD's packages in `SLURM_DEBS`, else `24.11`.
pub fn slurm_series() -> String {
    if let Some(s) = std::env::var("SLURM_SERIES").ok().filter(|s| !s.is_empty()) {
        return s;
    }
    if let Some(release) = smd_release() {
        return release
            .rsplit_once('.')
            .map_or(release.clone(), |(s, _)| s.to_string());
    }
    match slurm_prefix() {
        Some(prefix) => {
            let version = prefix_version(&prefix).unwrap_or_else(|| {
                panic!(
                    "cannot read the Slurm release of SLURM_PREFIX={prefix} \
                     (SLURM_VERSION_NUMBER in include/slurm/slurm_version.h); set SLURM_SERIES"
                )
            });
            version
                .rsplit_once('.')
                .map_or(version.clone(), |(s, _)| s.to_string())
        }
        None => "24.11".into(),
    }
}

/// `SLURM_PREFIX`: the site's own Slurm installation the lab runs instead of Debian's.
pub fn slurm_prefix() -> Option<String> {
    std::env::var("SLURM_PREFIX")
        .ok()
        .map(|p| p.trim_end_matches('/').to_string())
        .filter(|p| !p.is_empty())
}

/// `SLURM_DEBS`: the folder of SchedMD's own Debian packages (`slurm-smd_<version>_amd64.deb`
/// and its siblings) the lab runs instead of Debian's (lab-up.sh's SLURM_DEBS mode).
pub fn slurm_debs() -> Option<String> {
    std::env::var("SLURM_DEBS")
        .ok()
        .map(|p| p.trim_end_matches('/').to_string())
        .filter(|p| !p.is_empty())
}

/// The Slurm release (e.g. `26.05.3`) of SchedMD's packages in `SLURM_DEBS`, from the name of
/// its one `slurm-smd_<version>-<revision>_<arch>.deb` (lab-lib.sh reads the same version
/// with dpkg-deb).
pub fn smd_release() -> Option<String> {
    let dir = slurm_debs()?;
    let mut found = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("SLURM_DEBS={dir}: {e}"))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| {
            let v = n.strip_prefix("slurm-smd_")?.strip_suffix(".deb")?;
            let upstream = v.split(['-', '_']).next()?;
            Some(upstream.to_string())
        });
    let release = found
        .next()
        .unwrap_or_else(|| panic!("SLURM_DEBS={dir} holds no slurm-smd_<version>_<arch>.deb"));
    assert!(
        found.next().is_none(),
        "SLURM_DEBS={dir} holds more than one slurm-smd_*.deb"
    );
    Some(release)
}

/// The release (e.g. `25.11.7`) of an installation: `SLURM_VERSION_NUMBER` (`0x190b07`) in
/// its `include/slurm/slurm_version.h`, as lab-lib.sh reads it.
pub fn prefix_version(prefix: &str) -> Option<String> {
    let h = std::fs::read_to_string(format!("{prefix}/include/slurm/slurm_version.h")).ok()?;
    h.lines().find_map(|l| {
        let rest = l.strip_prefix("#define")?.trim_start();
        let v = rest.strip_prefix("SLURM_VERSION_NUMBER")?.trim();
        let n = u32::from_str_radix(v.split_whitespace().next()?.strip_prefix("0x")?, 16).ok()?;
        Some(format!(
            "{}.{:02}.{}",
            (n >> 16) & 0xff,
            (n >> 8) & 0xff,
            n & 0xff
        ))
    })
}

/// lab-lib.sh's default `LAB` for a series (each series has its own lab and ports), for
/// Debian's Slurm or, with `SLURM_PREFIX`, for an installation of that series, or with
/// `SLURM_DEBS` for SchedMD's packages of it.
pub fn default_lab_dir(series: &str) -> String {
    if slurm_debs().is_some() {
        return format!("/var/tmp/nvl72-lab-smd-{series}");
    }
    match (slurm_prefix().is_some(), series) {
        (false, "26.05") => "/var/tmp/nvl72-lab-26.05".into(),
        (false, _) => "/var/tmp/nvl72-lab".into(),
        (true, "25.05" | "25.11") => format!("/var/tmp/nvl72-lab-{series}"),
        (true, _) => format!("/var/tmp/nvl72-lab-prefix-{series}"),
    }
}

/// The topology plugin the lab runs: `nvl72`, or with `E2E_TOPO=none` (or `block`) stock
/// Slurm, to show which placement tests fail without the plugin (scripts/without-plugin.sh).
pub fn topo_under_test() -> String {
    std::env::var("E2E_TOPO").unwrap_or_else(|_| "nvl72".into())
}

/// The folder of a lab a test starts besides the main one (`name`: `failover`, `chaos`):
/// `/var/tmp/nvl72-<name>-<series>`, or for SchedMD's packages (`SLURM_DEBS`)
/// `/var/tmp/nvl72-<name>-smd-<series>`, so that it runs next to Debian's lab of the series
/// (on ports of its own: docs/lab.md's port map).
pub fn side_lab_dir(name: &str) -> String {
    let series = slurm_series();
    match slurm_debs() {
        Some(_) => format!("/var/tmp/nvl72-{name}-smd-{series}"),
        None => format!("/var/tmp/nvl72-{name}-{series}"),
    }
}

/// The build directory (`<target>/<profile>`) of the plugin and `nvl72` for the lab, as
/// scripts/test.sh builds them: the series' Debian profile (`target/release` for 24.11,
/// `target/slurm-26-05` for 26.05), `target/slurm-<series>/release` for an installation
/// (`SLURM_PREFIX`), `target/slurm-<release>/release` for SchedMD's packages (`SLURM_DEBS`).
pub fn build_dir() -> String {
    let series = slurm_series();
    if let Some(release) = smd_release() {
        format!("target/slurm-{release}/release")
    } else if slurm_prefix().is_some() {
        format!("target/slurm-{series}/release")
    } else if series == "26.05" {
        "target/slurm-26-05".into()
    } else {
        "target/release".into()
    }
}
