//! What changed between two configurations, in words an admin reads in slurmctld.log after
//! `scontrol reconfigure`: `rack4 removed (18 trays)`, `rack5 added (18 trays)`,
//! `gb018 moved from rack1 to rack5`, `policy changed: multi_rack fewest-racks -> start-now`.
//!
//! Pure: the plugin logs the items joined by `; ` (nothing when the list is empty).

use std::collections::{HashMap, HashSet};

use super::{Config, Policy, RackConfig};
use crate::hostlist;

/// The differences between `old` and `new`, one short item each, in this order:
///
/// 1. racks that are gone (`rack4 removed (18 trays)`), or renamed when another rack now has
///    exactly their trays (`rack4 renamed to rack9`);
/// 2. new racks (`rack5 added (18 trays)`);
/// 3. trays that changed rack, grouped per pair of racks in the order of the new file
///    (`gb[018-019] moved from rack1 to rack5`); trays that joined or left a rack that exists
///    in both files (`gb040 added to rack3`, `gb072 removed from rack4`). A tray that goes
///    from a removed rack to an added one, or that comes or goes with its whole rack, is
///    already told by items 1 and 2;
/// 4. per rack kept: group, clique and tray order; then the order of the racks in the file
///    (it decides ties);
/// 5. `trays_per_rack`, `gpus_per_tray`, and one `policy changed: ...` item.
///
/// `source` (the file the configuration came from) is not compared.
pub fn describe_changes(old: &Config, new: &Config) -> Vec<String> {
    let mut items = Vec::new();
    let old_names: HashSet<&str> = old.racks.iter().map(|r| r.name.as_str()).collect();
    let new_names: HashSet<&str> = new.racks.iter().map(|r| r.name.as_str()).collect();
    let removed: Vec<&RackConfig> = old
        .racks
        .iter()
        .filter(|r| !new_names.contains(r.name.as_str()))
        .collect();
    let mut added: Vec<&RackConfig> = new
        .racks
        .iter()
        .filter(|r| !old_names.contains(r.name.as_str()))
        .collect();

    // 1. Removed or renamed (same trays under a new name, matched one to one).
    let mut renamed: Vec<(&str, &str)> = Vec::new();
    for rack in &removed {
        let same = added.iter().position(|a| same_set(&a.nodes, &rack.nodes));
        match same {
            Some(i) => {
                let to = added.remove(i);
                items.push(format!("{} renamed to {}", rack.name, to.name));
                renamed.push((&rack.name, &to.name));
            }
            None => items.push(format!(
                "{} removed ({})",
                rack.name,
                trays(rack.nodes.len())
            )),
        }
    }
    // 2. Added.
    for rack in &added {
        items.push(format!("{} added ({})", rack.name, trays(rack.nodes.len())));
    }

    // 3. Trays that changed rack, joined one or left one.
    let owner = |config: &Config| -> HashMap<String, String> {
        let mut map = HashMap::new();
        for rack in &config.racks {
            for node in &rack.nodes {
                map.insert(node.clone(), rack.name.clone());
            }
        }
        map
    };
    let (old_owner, new_owner) = (owner(old), owner(new));
    let was_removed = |name: &str| !new_names.contains(name);
    let is_added = |name: &str| !old_names.contains(name);
    // (from, to) -> trays; `from`/`to` empty for a tray that joined / left every rack.
    let mut moves: Vec<((String, String), Vec<String>)> = Vec::new();
    let mut note = |from: &str, to: &str, node: &str| {
        let key = (from.to_string(), to.to_string());
        match moves.iter_mut().find(|(k, _)| *k == key) {
            Some((_, nodes)) => nodes.push(node.to_string()),
            None => moves.push((key, vec![node.to_string()])),
        }
    };
    for rack in &new.racks {
        for node in &rack.nodes {
            match old_owner.get(node) {
                Some(from) if *from == rack.name => {}
                Some(from) if was_removed(from) && is_added(&rack.name) => {}
                Some(from) => note(from, &rack.name, node),
                None if is_added(&rack.name) => {}
                None => note("", &rack.name, node),
            }
        }
    }
    for rack in &old.racks {
        for node in &rack.nodes {
            if !new_owner.contains_key(node) && !was_removed(&rack.name) {
                note(&rack.name, "", node);
            }
        }
    }
    for ((from, to), nodes) in &moves {
        let list = hostlist::compress(nodes);
        items.push(match (from.is_empty(), to.is_empty()) {
            (true, _) => format!("{list} added to {to}"),
            (_, true) => format!("{list} removed from {from}"),
            _ => format!("{list} moved from {from} to {to}"),
        });
    }

    // 4. Racks kept under their name: labels, tray order, then rack order.
    let old_by_name: HashMap<&str, &RackConfig> =
        old.racks.iter().map(|r| (r.name.as_str(), r)).collect();
    for rack in &new.racks {
        let Some(before) = old_by_name.get(rack.name.as_str()) else {
            continue;
        };
        for (what, a, b) in [
            ("group", &before.group, &rack.group),
            ("clique", &before.clique, &rack.clique),
        ] {
            if a != b {
                items.push(format!(
                    "{} {what} {} -> {}",
                    rack.name,
                    a.as_deref().unwrap_or("none"),
                    b.as_deref().unwrap_or("none")
                ));
            }
        }
        if before.nodes != rack.nodes && same_set(&before.nodes, &rack.nodes) {
            items.push(format!("{} tray order changed", rack.name));
        }
    }
    let kept = |config: &Config, names: &HashSet<&str>| -> Vec<String> {
        config
            .racks
            .iter()
            .filter(|r| names.contains(r.name.as_str()))
            .map(|r| r.name.clone())
            .collect()
    };
    // A renamed rack keeps its place under its new name.
    let rename: HashMap<&str, &str> = renamed.iter().copied().collect();
    let old_order: Vec<String> = old
        .racks
        .iter()
        .filter_map(|r| {
            if new_names.contains(r.name.as_str()) {
                Some(r.name.clone())
            } else {
                rename.get(r.name.as_str()).map(|n| n.to_string())
            }
        })
        .collect();
    let mut new_kept_names: HashSet<&str> = old_names.intersection(&new_names).copied().collect();
    new_kept_names.extend(renamed.iter().map(|(_, to)| *to));
    if old_order != kept(new, &new_kept_names) {
        items.push("rack order changed".to_string());
    }

    // 5. Counts and policy.
    for (what, a, b) in [
        ("trays_per_rack", old.trays_per_rack, new.trays_per_rack),
        ("gpus_per_tray", old.gpus_per_tray, new.gpus_per_tray),
    ] {
        if a != b {
            items.push(format!("{what} {a} -> {b}"));
        }
    }
    let policy = policy_changes(&old.policy, &new.policy);
    if !policy.is_empty() {
        items.push(format!("policy changed: {}", policy.join(", ")));
    }
    items
}

/// `field old -> new` for every policy field that differs, in file order.
fn policy_changes(a: &Policy, b: &Policy) -> Vec<String> {
    let list = |names: &[String]| format!("[{}]", names.join(", "));
    let fields: [(&str, String, String); 12] = [
        (
            "segment_placement",
            a.segment_placement.as_str().into(),
            b.segment_placement.as_str().into(),
        ),
        (
            "multi_rack",
            a.multi_rack.as_str().into(),
            b.multi_rack.as_str().into(),
        ),
        (
            "prefer_degraded",
            a.prefer_degraded.to_string(),
            b.prefer_degraded.to_string(),
        ),
        (
            "prefer_same_group",
            a.prefer_same_group.to_string(),
            b.prefer_same_group.to_string(),
        ),
        (
            "log_decisions",
            a.log_decisions.to_string(),
            b.log_decisions.to_string(),
        ),
        (
            "end_time",
            a.end_time.as_str().into(),
            b.end_time.as_str().into(),
        ),
        (
            "end_time_hours_per_tray",
            a.end_time_hours_per_tray.to_string(),
            b.end_time_hours_per_tray.to_string(),
        ),
        (
            "flat_partitions",
            list(&a.flat_partitions),
            list(&b.flat_partitions),
        ),
        ("switches", a.switches.as_toml(), b.switches.as_toml()),
        (
            "piece_multiple",
            a.piece_multiple.to_string(),
            b.piece_multiple.to_string(),
        ),
        (
            "prefer_piece_multiple",
            a.prefer_piece_multiple.to_string(),
            b.prefer_piece_multiple.to_string(),
        ),
        (
            "preemption_cost",
            a.preemption_cost.as_str().into(),
            b.preemption_cost.as_str().into(),
        ),
    ];
    fields
        .into_iter()
        .filter(|(_, x, y)| x != y)
        .map(|(name, x, y)| format!("{name} {x} -> {y}"))
        .collect()
}

fn same_set(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && {
        let set: HashSet<&String> = a.iter().collect();
        b.iter().all(|n| set.contains(n))
    }
}

fn trays(n: usize) -> String {
    if n == 1 {
        "1 tray".into()
    } else {
        format!("{n} trays")
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{parse_toml, EndTime, MultiRack};

    /// A configuration from `name = nodes` pairs (up to 20 trays per rack, so that trays
    /// can move into a full rack).
    fn config(racks: &[(&str, &str)]) -> Config {
        let mut text = String::from("trays_per_rack = 20\ngpus_per_tray = 4\n");
        for (name, nodes) in racks {
            text.push_str(&format!(
                "\n[[rack]]\nname = \"{name}\"\nnodes = \"{nodes}\"\n"
            ));
        }
        parse_toml(&text, Path::new("topology.toml")).unwrap_or_else(|e| panic!("{e}"))
    }

    fn lab() -> Config {
        config(&[
            ("rack1", "gb[001-018]"),
            ("rack2", "gb[019-036]"),
            ("rack3", "gb[037-054]"),
            ("rack4", "gb[055-072]"),
        ])
    }

    #[test]
    fn unchanged_says_nothing() {
        assert!(describe_changes(&lab(), &lab()).is_empty());
        let mut other_source = lab();
        other_source.source = "/elsewhere/topology.conf".into();
        assert!(describe_changes(&lab(), &other_source).is_empty());
    }

    /// The e2e test's edit: a tray moves from rack1 to a new rack5 that takes rack4's trays
    /// but one; rack4 goes.
    #[test]
    fn moved_tray_added_and_removed_rack() {
        let new = config(&[
            ("rack1", "gb[001-017]"),
            ("rack2", "gb[019-036]"),
            ("rack3", "gb[037-054]"),
            ("rack5", "gb018,gb[055-071]"),
        ]);
        assert_eq!(
            describe_changes(&lab(), &new),
            vec![
                "rack4 removed (18 trays)",
                "rack5 added (18 trays)",
                "gb018 moved from rack1 to rack5",
            ]
        );
    }

    #[test]
    fn moves_are_grouped_per_pair_of_racks() {
        let new = config(&[
            ("rack1", "gb[001-016]"),
            ("rack2", "gb[017-018],gb[019-034]"),
            ("rack3", "gb[037-054],gb[035-036]"),
            ("rack4", "gb[055-072]"),
        ]);
        assert_eq!(
            describe_changes(&lab(), &new),
            vec![
                "gb[017-018] moved from rack1 to rack2",
                "gb[035-036] moved from rack2 to rack3",
            ]
        );
    }

    #[test]
    fn trays_that_join_or_leave_a_kept_rack() {
        let new = config(&[
            ("rack1", "gb[001-017]"),
            ("rack2", "gb[019-036],gb100"),
            ("rack3", "gb[037-054]"),
            ("rack4", "gb[055-072]"),
        ]);
        assert_eq!(
            describe_changes(&lab(), &new),
            vec!["gb100 added to rack2", "gb018 removed from rack1"]
        );
    }

    #[test]
    fn trays_of_a_removed_rack_that_go_to_a_kept_rack_are_moves() {
        let new = config(&[
            ("rack1", "gb[001-018]"),
            ("rack2", "gb[019-036]"),
            ("rack3", "gb[037-054],gb[055-056]"),
        ]);
        assert_eq!(
            describe_changes(&lab(), &new),
            vec![
                "rack4 removed (18 trays)",
                "gb[055-056] moved from rack4 to rack3"
            ]
        );
    }

    #[test]
    fn a_rename_is_one_item_and_keeps_the_rack_order() {
        let new = config(&[
            ("rack1", "gb[001-018]"),
            ("rack2", "gb[019-036]"),
            ("rack3", "gb[037-054]"),
            ("nvl-d4", "gb[055-072]"),
        ]);
        assert_eq!(
            describe_changes(&lab(), &new),
            vec!["rack4 renamed to nvl-d4"]
        );
    }

    #[test]
    fn rack_order_tray_order_and_labels() {
        let mut new = config(&[
            ("rack2", "gb[019-036]"),
            ("rack1", "gb[001-018]"),
            ("rack3", "gb[037-054]"),
            ("rack4", "gb[055-072]"),
        ]);
        new.racks[0].nodes.reverse();
        new.racks[1].group = Some("row1".into());
        new.racks[2].clique = Some("uuid.7".into());
        assert_eq!(
            describe_changes(&lab(), &new),
            vec![
                "rack2 tray order changed",
                "rack1 group none -> row1",
                "rack3 clique none -> uuid.7",
                "rack order changed",
            ]
        );
    }

    #[test]
    fn counts_and_policy() {
        let mut new = lab();
        new.trays_per_rack = 18;
        new.gpus_per_tray = 8;
        new.policy.multi_rack = MultiRack::StartNow;
        new.policy.log_decisions = true;
        new.policy.end_time = EndTime::Align;
        new.policy.flat_partitions = vec!["admin".into(), "debug".into()];
        new.policy.switches = crate::config::Switches::Limit {
            count: 1,
            wait_minutes: 30,
        };
        assert_eq!(
            describe_changes(&lab(), &new),
            vec![
                "trays_per_rack 20 -> 18",
                "gpus_per_tray 4 -> 8",
                "policy changed: multi_rack fewest-racks -> start-now, \
                 log_decisions false -> true, end_time off -> align, \
                 flat_partitions [] -> [admin, debug], \
                 switches \"off\" -> { count = 1, wait_minutes = 30 }",
            ]
        );
    }

    #[test]
    fn a_one_tray_rack_is_singular() {
        let mut old = lab();
        old.racks.push(RackConfig {
            name: "spare".into(),
            nodes: vec!["gb073".into()],
            clique: None,
            group: None,
        });
        assert_eq!(
            describe_changes(&old, &lab()),
            vec!["spare removed (1 tray)"]
        );
        assert_eq!(describe_changes(&lab(), &old), vec!["spare added (1 tray)"]);
    }

    /// From nothing (no racks before): every rack is added, nothing else.
    #[test]
    fn from_an_empty_configuration() {
        let empty = Config {
            racks: Vec::new(),
            ..lab()
        };
        let items = describe_changes(&empty, &lab());
        assert_eq!(items.len(), 4, "{items:?}");
        assert!(
            items.iter().all(|i| i.ends_with("added (18 trays)")),
            "{items:?}"
        );
    }
}
