//! A topology file may not take a tray out of the rack it was in while a running job holds
//! that tray: the job was placed inside that rack, and a file that cuts it (or hides its
//! trays from the racks) is refused, so the racks in force stay the ones running jobs were
//! placed by. Trays no job holds can move freely; a tray may also join a rack it was not in.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};

use crate::config::lines::TopologyLines;
use crate::config::{Config, ConfigError};

/// A job that holds trays: running, suspended or completing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldJob {
    pub id: u32,
    pub trays: Vec<String>,
}

/// Refuses `new` when a tray some job in `jobs` holds is in rack R of `old` (the racks in
/// force) and not in a rack named R in `new`. The error points at the first such rack's
/// `nodes` line in `new` (or the file, when the rack is gone) and names each rack's trays
/// and the jobs holding them.
pub fn refuse_moving_held(
    old: &Config,
    new: &Config,
    jobs: &[HeldJob],
    lines: &TopologyLines,
) -> Result<(), ConfigError> {
    let rack_of = |config: &Config| -> HashMap<String, String> {
        config
            .racks
            .iter()
            .flat_map(|r| r.nodes.iter().map(|n| (n.clone(), r.name.clone())))
            .collect()
    };
    let (was_in, now_in) = (rack_of(old), rack_of(new));
    // old rack -> tray -> jobs holding it
    let mut lost: BTreeMap<&str, BTreeMap<&str, Vec<u32>>> = BTreeMap::new();
    for job in jobs {
        for tray in &job.trays {
            let Some(rack) = was_in.get(tray) else {
                continue;
            };
            if now_in.get(tray) != Some(rack) {
                let ids = lost.entry(rack).or_default().entry(tray).or_default();
                if !ids.contains(&job.id) {
                    ids.push(job.id);
                }
            }
        }
    }
    let Some(first) = lost.keys().next().copied() else {
        return Ok(());
    };
    let rack_index = |name: &str| new.racks.iter().position(|r| r.name == name);
    let mut parts = Vec::new();
    for (rack, trays) in &lost {
        let names: Vec<&str> = trays.keys().copied().collect();
        let mut ids: Vec<u32> = trays.values().flatten().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
        let where_ = match rack_index(rack).and_then(|i| lines.rack(i)) {
            Some(l) => format!(" (line {l})"),
            None if rack_index(rack).is_none() => " (no longer in the file)".to_string(),
            None => String::new(),
        };
        parts.push(format!(
            "{rack}{where_} loses {} held by job(s) {}",
            crate::hostlist::compress(&names),
            ids.join(",")
        ));
    }
    let trays: usize = lost.values().map(BTreeMap::len).sum();
    let first_index = rack_index(first);
    Err(ConfigError {
        file: new.source.clone(),
        line: first_index.and_then(|i| lines.rack(i)),
        field: first_index.map(|i| format!("rack[{}].nodes", i + 1)),
        message: format!(
            "{trays} tray(s) that running jobs hold would leave the rack they run in: {}; \
             edit those racks after the jobs end (or drain the trays first)",
            parts.join("; ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::rack;

    /// Racks of the nodes `n<i>`.
    fn racks(racks: &[(&str, &[usize])]) -> Config {
        Config {
            racks: racks
                .iter()
                .map(|(name, nodes)| rack(name, nodes.iter().copied()))
                .collect(),
            source: "topology.toml".into(),
            ..Config::default()
        }
    }

    fn job(id: u32, trays: &[usize]) -> HeldJob {
        HeldJob {
            id,
            trays: trays.iter().map(|t| format!("n{t}")).collect(),
        }
    }

    fn refused(old: &Config, new: &Config, jobs: &[HeldJob]) -> Option<String> {
        refuse_moving_held(old, new, jobs, &TopologyLines::default())
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn a_held_tray_moved_to_another_rack_is_refused_naming_rack_tray_and_job() {
        let old = racks(&[("rack1", &[1, 2]), ("rack2", &[3])]);
        let new = racks(&[("rack1", &[1]), ("rack2", &[2, 3])]);
        let msg = refused(&old, &new, &[job(7, &[1, 2])]).expect("refused");
        assert!(
            msg.starts_with("topology.toml: rack[1].nodes: 1 tray(s)"),
            "{msg}"
        );
        assert!(msg.contains("rack1 loses n2 held by job(s) 7"), "{msg}");
    }

    #[test]
    fn a_held_tray_left_out_of_every_rack_or_a_removed_rack_is_refused() {
        let old = racks(&[("rack1", &[1, 2]), ("rack2", &[3])]);
        let new = racks(&[("rack1", &[1])]);
        let msg = refused(&old, &new, &[job(7, &[2]), job(8, &[3])]).expect("refused");
        assert!(msg.contains("2 tray(s)"), "{msg}");
        assert!(
            msg.contains("rack2 (no longer in the file) loses n3 held by job(s) 8"),
            "{msg}"
        );
    }

    #[test]
    fn free_trays_move_freely_and_held_trays_may_stay_or_join_a_rack() {
        let old = racks(&[("rack1", &[1, 2]), ("rack2", &[3])]);
        // n2 is free and leaves; n4 was in no rack; n1 stays in rack1 though racks reorder.
        let new = racks(&[("rack2", &[3, 2]), ("rack1", &[1, 4])]);
        assert_eq!(refused(&old, &new, &[job(9, &[1, 4])]), None);
    }
}
