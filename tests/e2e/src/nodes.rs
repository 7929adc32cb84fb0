//! Lab node names: `gbNNN` trays, their racks, and Slurm host lists.

use nvl72_engine::hostlist;

use super::TRAYS;

/// A Slurm host list (`gb[001-018],gb020`) as node names.
pub fn expand(list: &str) -> Vec<String> {
    hostlist::expand(list.trim()).unwrap_or_else(|e| panic!("bad node list {list:?}: {e}"))
}

/// Rack number (1-based) of a lab tray name `gbNNN`.
pub fn rack_of(node: &str) -> usize {
    rack_in(node, TRAYS)
}

/// Rack number (1-based) of `gbNNN` in a lab of `trays` trays per rack.
pub fn rack_in(node: &str, trays: usize) -> usize {
    let n: usize = node
        .trim_start_matches("gb")
        .parse()
        .unwrap_or_else(|_| panic!("not a tray: {node}"));
    (n - 1) / trays + 1
}

/// Sorted distinct racks of a node list.
pub fn racks(nodes: &[String]) -> Vec<usize> {
    racks_in(nodes, TRAYS)
}

/// Nodes per rack, as (rack, count) sorted by rack.
pub fn per_rack(nodes: &[String]) -> Vec<(usize, usize)> {
    per_rack_in(nodes, TRAYS)
}

/// [`racks`] in a lab of `trays` trays per rack.
pub fn racks_in(nodes: &[String], trays: usize) -> Vec<usize> {
    let mut r: Vec<usize> = nodes.iter().map(|n| rack_in(n, trays)).collect();
    r.sort_unstable();
    r.dedup();
    r
}

/// [`per_rack`] in a lab of `trays` trays per rack.
pub fn per_rack_in(nodes: &[String], trays: usize) -> Vec<(usize, usize)> {
    racks_in(nodes, trays)
        .into_iter()
        .map(|r| (r, nodes.iter().filter(|n| rack_in(n, trays) == r).count()))
        .collect()
}
