//! What a plan is made of: a job's trays in one rack ([`Piece`]) and the node set offered to
//! Slurm's selection ([`Placement`]).

use crate::topology::Topology;

/// The trays a job gets in one rack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub rack: usize,
    pub trays: usize,
}

/// `(rack, trays)`, so that tests can write pieces as pairs.
impl PartialEq<(usize, usize)> for Piece {
    fn eq(&self, &(rack, trays): &(usize, usize)) -> bool {
        self.rack == rack && self.trays == trays
    }
}

/// A set of nodes offered to Slurm's selection for one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub nodes: Vec<usize>,
    /// True when every node is meant to be allocated; false when Slurm picks within the set.
    pub exact: bool,
    /// The job's pieces, in the order they were chosen.
    pub pieces: Vec<Piece>,
}

impl Placement {
    /// "rack1:4+rack2:4" for log lines.
    pub fn describe(&self, topo: &Topology) -> String {
        let parts: Vec<String> = self
            .pieces
            .iter()
            .map(|p| format!("{}:{}", topo.racks[p.rack].name, p.trays))
            .collect();
        parts.join("+")
    }
}
