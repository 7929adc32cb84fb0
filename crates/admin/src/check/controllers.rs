//! Each controller's last loaded racks against the file being checked. slurmctld keeps, per
//! `SlurmctldHost`, a copy of the racks it loaded last in StateSaveLocation
//! (`topology_nvl72.loaded-by-<host>.toml`), so on one controller `nvl72 check` can see that
//! the other controller loaded other racks: with a topology file of its own per host, a
//! takeover would then change the racks.

use std::path::Path;

use super::{problem, Problem, Severity};
use nvl72_engine::config::{describe_changes, last_good, Config};

/// `controllers`: the `SlurmctldHost` names, in slurm.conf order; `this_host`: the short
/// hostname `nvl72 check` runs on.
pub fn compare(
    config: &Config,
    state_save: &Path,
    controllers: &[String],
    this_host: Option<&str>,
    out: &mut Vec<Problem>,
) {
    for host in controllers {
        let copy = state_save.join(last_good::loaded_by_file(host));
        let Ok(text) = std::fs::read_to_string(&copy) else {
            continue; // never in control yet, or StateSaveLocation is not readable here
        };
        let loaded = match last_good::parse(&text, &copy) {
            Ok((loaded, _)) => loaded,
            Err(e) => {
                out.push(problem(
                    &copy,
                    None,
                    Severity::Note,
                    format!("unreadable: {e}"),
                ));
                continue;
            }
        };
        let changes = describe_changes(&loaded, config);
        if changes.is_empty() {
            continue;
        }
        let (severity, what) = if this_host == Some(host.as_str()) {
            (
                Severity::Note,
                format!(
                    "this controller ({host}) last loaded other racks; `scontrol reconfigure` \
                     applies this file"
                ),
            )
        } else {
            (
                Severity::Warning,
                format!(
                    "controller {host} last loaded other racks; if its own topology file still \
                     says so, a takeover by {host} changes the racks: give every SlurmctldHost \
                     the same file"
                ),
            )
        };
        out.push(problem(
            &config.source,
            None,
            severity,
            format!("{what} (from {}): {}", copy.display(), changes.join("; ")),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvl72_engine::testkit::rack;

    fn config(racks: usize) -> Config {
        Config {
            racks: (0..racks)
                .map(|r| rack(&format!("rack{}", r + 1), r * 18..(r + 1) * 18))
                .collect(),
            source: "/etc/slurm/topology.toml".into(),
            ..Config::default()
        }
    }

    fn run(copies: &[(&str, Config)], this_host: &str) -> Vec<String> {
        let dir = nvl72_engine::testkit::temp_dir(&format!("controllers-{}", copies.len()));
        for (host, loaded) in copies {
            let path = dir.join(last_good::loaded_by_file(host));
            std::fs::write(path, last_good::render(loaded)).unwrap();
        }
        let hosts = ["ctl1".to_string(), "ctl2".to_string(), "ctl3".to_string()];
        let mut out = Vec::new();
        compare(&config(4), &dir, &hosts, Some(this_host), &mut out);
        out.iter()
            .map(|p| p.to_string().replace(&dir.display().to_string(), "STATE"))
            .collect()
    }

    #[test]
    fn a_controller_that_loaded_other_racks_is_a_warning() {
        let out = run(&[("ctl1", config(4)), ("ctl2", config(3))], "ctl1");
        assert_eq!(
            out,
            [
                "/etc/slurm/topology.toml: warning: controller ctl2 last loaded other racks; if \
              its own topology file still says so, a takeover by ctl2 changes the racks: give \
              every SlurmctldHost the same file (from \
              STATE/topology_nvl72.loaded-by-ctl2.toml): rack4 added (18 trays)"
            ]
        );
    }

    #[test]
    fn this_controllers_own_older_racks_are_a_note() {
        let out = run(&[("ctl1", config(3)), ("ctl2", config(4))], "ctl1");
        assert_eq!(out.len(), 1);
        assert!(
            out[0].starts_with(
                "/etc/slurm/topology.toml: note: this controller (ctl1) last loaded other \
                 racks; `scontrol reconfigure` applies this file"
            ),
            "{out:?}"
        );
    }

    #[test]
    fn the_same_racks_everywhere_and_missing_copies_say_nothing() {
        assert!(run(&[("ctl1", config(4)), ("ctl2", config(4))], "ctl1").is_empty());
        assert!(run(&[], "ctl1").is_empty());
    }
}
