//! The order of slurmctld's node table, which the plugin sets through `node_rank`.
//!
//! slurmctld restores every running job's per-node cores, memory and GPU indices by position
//! in its node table (cons_tres `job_res_add_job`), so that order must never change under
//! running jobs. A rank computed from the racks would: a rack edit, a restart with a broken
//! file or a takeover by a controller with another file reorders the table, and two jobs get
//! the same GPU. So the order is **kept**: the first start ranks rack by rack (trays in rack
//! order, other nodes after them) and saves the order in StateSaveLocation; every later
//! start keeps the saved order and appends nodes new to slurm.conf, in rack order.
#![forbid(unsafe_code)]

use std::collections::HashSet;

use crate::config::Config;

/// The saved file's first line. A later format keeps this prefix and still lists one name per
/// line, so an older build reads a newer file.
pub const HEADER_PREFIX: &str = "# topology/nvl72 node order, format ";
pub const FORMAT: u32 = 1;

/// Why a saved order cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub String);

/// Reads a saved order: the header line, then one node name per line.
pub fn parse(text: &str) -> Result<Vec<String>, Unreadable> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let format = header
        .strip_prefix(HEADER_PREFIX)
        .and_then(|f| f.trim().parse::<u32>().ok())
        .ok_or_else(|| Unreadable(format!("line 1 is not `{HEADER_PREFIX}{FORMAT}`")))?;
    if format == 0 {
        return Err(Unreadable("format 0 does not exist".into()));
    }
    let mut names = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in lines.enumerate() {
        let name = line.trim();
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        if name.contains(char::is_whitespace) || name.contains(',') {
            return Err(Unreadable(format!(
                "line {}: `{name}` is no node name",
                i + 2
            )));
        }
        if !seen.insert(name) {
            return Err(Unreadable(format!(
                "line {}: {name} is listed twice",
                i + 2
            )));
        }
        names.push(name.to_string());
    }
    Ok(names)
}

/// The file [`parse`] reads back.
pub fn render(order: &[&str]) -> String {
    let mut out = format!("{HEADER_PREFIX}{FORMAT}\n");
    for name in order {
        out.push_str(name);
        out.push('\n');
    }
    out
}

/// The node table in its new order, as indices into `table` (the nodes as slurm.conf lists
/// them): first the `saved` order, then the trays of `racks` in rack order, then every other
/// node in table order. Names of `saved` or `racks` that `table` lacks are left out.
pub fn order(table: &[String], saved: Option<&[String]>, racks: Option<&Config>) -> Vec<usize> {
    let index: std::collections::HashMap<&str, usize> = table
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut placed = vec![false; table.len()];
    let mut order = Vec::with_capacity(table.len());
    let saved_names = saved.into_iter().flatten();
    let rack_names = racks
        .into_iter()
        .flat_map(|c| c.racks.iter().flat_map(|r| r.nodes.iter()));
    for name in saved_names.chain(rack_names) {
        if let Some(&i) = index.get(name.as_str()) {
            if !placed[i] {
                placed[i] = true;
                order.push(i);
            }
        }
    }
    order.extend((0..table.len()).filter(|&i| !placed[i]));
    order
}

/// Trays whose place in `order` differs from where the racks alone would put them: how far
/// the kept order has drifted from the racks (0 on a first start).
pub fn moved_since(table: &[String], order: &[usize], racks: &Config) -> usize {
    let by_racks = self::order(table, None, Some(racks));
    order.iter().zip(&by_racks).filter(|(a, b)| a != b).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::rack;

    fn names(list: &str) -> Vec<String> {
        crate::hostlist::expand(list).unwrap()
    }

    fn config(racks: &[(&str, &str)]) -> Config {
        Config {
            racks: racks
                .iter()
                .map(|(name, nodes)| crate::config::RackConfig {
                    nodes: names(nodes),
                    ..rack(name, [])
                })
                .collect(),
            ..Config::default()
        }
    }

    fn ordered(table: &[String], order: &[usize]) -> Vec<String> {
        order.iter().map(|&i| table[i].clone()).collect()
    }

    #[test]
    fn a_first_start_ranks_rack_by_rack_then_the_other_nodes() {
        let table = names("cpu01,n[1-4]");
        let racks = config(&[("r1", "n[3-4]"), ("r2", "n[1-2]")]);
        let order = order(&table, None, Some(&racks));
        assert_eq!(ordered(&table, &order), names("n[3-4],n[1-2],cpu01"));
    }

    /// The bug this module exists for: listing rack2 before rack1 must not move a node.
    #[test]
    fn a_rack_reorder_keeps_the_saved_order() {
        let table = names("gb[001-004]");
        let saved = names("gb[001-004]");
        let swapped = config(&[("rack2", "gb[003-004]"), ("rack1", "gb[001-002]")]);
        let order = order(&table, Some(&saved), Some(&swapped));
        assert_eq!(order, vec![0, 1, 2, 3]);
        assert_eq!(moved_since(&table, &order, &swapped), 4);
    }

    #[test]
    fn new_nodes_come_after_the_saved_ones_in_rack_order() {
        let table = names("gb[001-006],cpu01");
        let saved = names("gb[001-002],gone01,cpu01");
        let racks = config(&[("rack1", "gb[001-002]"), ("rack2", "gb006,gb005")]);
        let order = order(&table, Some(&saved), Some(&racks));
        assert_eq!(
            ordered(&table, &order),
            names("gb[001-002],cpu01,gb006,gb005,gb[003-004]")
        );
    }

    #[test]
    fn without_racks_or_a_saved_order_the_table_order_stays() {
        let table = names("b,a,c");
        assert_eq!(order(&table, None, None), vec![0, 1, 2]);
    }

    #[test]
    fn the_saved_file_reads_back() {
        let text = render(&["gb001", "gb002", "cpu01"]);
        assert!(text.starts_with("# topology/nvl72 node order, format 1\n"));
        assert_eq!(parse(&text).unwrap(), names("gb[001-002],cpu01"));
    }

    #[test]
    fn a_newer_format_with_the_same_lines_is_read() {
        let text = "# topology/nvl72 node order, format 2\n# a later note\ngb001\n";
        assert_eq!(parse(text).unwrap(), vec!["gb001".to_string()]);
    }

    #[test]
    fn a_damaged_file_is_refused_with_its_line() {
        assert_eq!(
            parse("gb001\n"),
            Err(Unreadable(
                "line 1 is not `# topology/nvl72 node order, format 1`".into()
            ))
        );
        let twice = render(&["gb001", "gb002", "gb001"]);
        assert_eq!(
            parse(&twice),
            Err(Unreadable("line 4: gb001 is listed twice".into()))
        );
        let spaced = format!("{}gb 001\n", render(&[]));
        assert!(parse(&spaced).unwrap_err().0.starts_with("line 2:"));
    }
}
