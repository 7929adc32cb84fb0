//! A job's allocation seen by NVLink domain: the pieces Slurm gets one IMEX channel each for
//! (`jobinfo`, 25.11+) and the per-node ranks that order its task layout (`get_rank`, 26.05+).
#![forbid(unsafe_code)]

use crate::topology::Topology;

/// The allocation `nodes` (node indices) cut into NVLink-domain pieces, each in node order:
/// with `segment` each `--segment` piece (consecutive trays of one rack, in rack order), else
/// each rack's part. Nodes outside every rack form one last piece.
pub fn nvlink_pieces(topo: &Topology, nodes: &[usize], segment: Option<usize>) -> Vec<Vec<usize>> {
    let mut by_rack: Vec<Vec<usize>> = vec![Vec::new(); topo.racks.len()];
    let mut outside = Vec::new();
    for &n in nodes {
        match topo.rack_of(n) {
            Some(d) => by_rack[d].push(n),
            None => outside.push(n),
        }
    }
    let mut pieces = Vec::new();
    for mut part in by_rack.into_iter().filter(|p| !p.is_empty()) {
        part.sort_unstable();
        match segment.filter(|&s| s > 0 && part.len() > s) {
            Some(s) => pieces.extend(part.chunks(s).map(<[usize]>::to_vec)),
            None => pieces.push(part),
        }
    }
    if !outside.is_empty() {
        outside.sort_unstable();
        pieces.push(outside);
    }
    pieces
}

/// One rank per node of `nodes`, in the given order: `rack << shift | position of the tray in
/// its rack`. Slurm reads `rank >> shift` as the topology unit, so tasks stay rack by rack;
/// nodes outside racks share one unit after the last rack, by index.
pub fn node_ranks(topo: &Topology, nodes: &[usize], shift: u32) -> Vec<u32> {
    let low = (1u64 << shift) - 1;
    nodes
        .iter()
        .map(|&n| {
            let (unit, pos) = match topo.rack_of(n) {
                Some(d) => (
                    d,
                    topo.racks[d]
                        .nodes
                        .iter()
                        .position(|&m| m == n)
                        .unwrap_or(0),
                ),
                None => (topo.racks.len(), n),
            };
            let rank = ((unit as u64) << shift) | (pos as u64 & low);
            u32::try_from(rank).unwrap_or(u32::MAX)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn racks(racks: usize, trays: usize) -> Topology {
        Topology::uniform(racks, trays, crate::config::Policy::default())
    }

    #[test]
    fn a_job_in_one_rack_is_one_piece() {
        let t = racks(2, 18);
        assert_eq!(nvlink_pieces(&t, &[3, 1, 2], None), vec![vec![1, 2, 3]]);
    }

    #[test]
    fn a_job_across_racks_has_one_piece_per_rack() {
        let t = racks(3, 18);
        let nodes: Vec<usize> = (10..18).chain(36..40).collect();
        let p = nvlink_pieces(&t, &nodes, None);
        assert_eq!(p, vec![(10..18).collect::<Vec<_>>(), (36..40).collect()]);
    }

    #[test]
    fn segments_are_cut_inside_each_rack() {
        let t = racks(2, 18);
        let nodes: Vec<usize> = (0..8).chain(18..22).collect();
        let p = nvlink_pieces(&t, &nodes, Some(4));
        assert_eq!(
            p,
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![18, 19, 20, 21]]
        );
        // A segment as large as the rack part is one piece.
        assert_eq!(nvlink_pieces(&t, &[0, 1], Some(4)), vec![vec![0, 1]]);
    }

    #[test]
    fn every_node_is_in_exactly_one_piece() {
        let t = racks(4, 18);
        let nodes: Vec<usize> = (5..30).chain(60..80).collect();
        for seg in [None, Some(1), Some(3), Some(5), Some(18)] {
            let mut all: Vec<usize> = nvlink_pieces(&t, &nodes, seg).concat();
            all.sort_unstable();
            assert_eq!(all, nodes, "segment {seg:?}");
        }
    }

    #[test]
    fn ranks_are_rack_major() {
        let t = racks(2, 18);
        let r = node_ranks(&t, &[17, 18, 19, 40], 16);
        assert_eq!(r, vec![17, 1 << 16, (1 << 16) | 1, (2 << 16) | 40]);
    }
}
