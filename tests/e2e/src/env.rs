//! Which lab: the Slurm series, the installation, the lab directory and the topology plugin
//! under test, read from the environment as lab-lib.sh reads it.

/// The Slurm series the lab runs, as lab-lib.sh reads it: `SLURM_SERIES`, else the release of
/// the installation at `SLURM_PREFIX` (its `include/slurm/slurm_version.h`), else `24.11`.
pub fn slurm_series() -> String {
    if let Some(s) = std::env::var("SLURM_SERIES").ok().filter(|s| !s.is_empty()) {
        return s;
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
/// Debian's Slurm or, with `SLURM_PREFIX`, for an installation of that series.
pub fn default_lab_dir(series: &str) -> String {
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
