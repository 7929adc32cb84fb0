//! Why a job cannot be placed: never (Slurm rejects it at submission) or not now (it waits),
//! each with a reason that tests and tools match on and that prints the plugin's log text.

use std::fmt;

use crate::config::MultiRack;
use crate::demand::Demand;

/// Why a job cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reject {
    /// No state of the cluster could ever satisfy the request (rejected at submission).
    Never(NeverReason),
    /// Not enough suitable free trays right now (the job waits).
    NotNow(WaitReason),
}

/// Why no state of the cluster could ever hold the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NeverReason {
    NoRackNodes,
    ZeroNodes,
    /// A `-w` node (node index) lies outside every rack.
    RequiredOutsideRacks {
        node: usize,
    },
    ZeroSegment,
    /// Before Slurm 25.11 a segment must fit one rack.
    SegmentLargerThanRack {
        segment: usize,
        largest: usize,
    },
    NotWholeSegments {
        nodes: usize,
        segment: usize,
    },
    /// Before Slurm 25.11, `-w` with several segments (as topology/block there).
    RequiredWithSegments,
    /// 25.11+: with several segments `-w` must name every node.
    RequiredNotEveryNode {
        nodes: usize,
        named: usize,
    },
    /// 25.11+: a rack's share of the `-w` nodes is not whole segments.
    RequiredSplitsSegment {
        rack: String,
        named: usize,
        segment: usize,
    },
    /// `-w` nodes in several racks, but the job (or its one segment) must be in one.
    RequiredSpanRacks {
        racks: usize,
        /// Trays the job needs; `None` when it is one segment.
        nodes: Option<usize>,
    },
    LargerThanRacks {
        nodes: usize,
        total: usize,
    },
    /// `--spread-segments`: fewer racks hold a segment than the job has segments.
    TooFewRacksToSpread {
        segments: usize,
        segment: usize,
        racks: usize,
    },
    SegmentsDoNotFit {
        segments: usize,
        segment: usize,
        room: usize,
    },
    /// `multi_rack = "fewest-racks"` (or `"balanced"`, named by `rule`): the largest
    /// `racks` racks (with the `-w` ones) hold only `trays`.
    LargestRacksTooSmall {
        nodes: usize,
        racks: usize,
        trays: usize,
        with_required: bool,
        rule: MultiRack,
    },
}

/// Why the request cannot be placed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitReason {
    RequiredNotOffered,
    NoRackRoom {
        trays: usize,
        demand: Demand,
    },
    /// `multi_rack = "fewest-racks"` (or `"balanced"`, named by `rule`): no `racks` racks
    /// have the job's trays together.
    NoFewestRacks {
        racks: usize,
        trays: usize,
        rule: MultiRack,
    },
    NoWholePieces {
        pieces: usize,
        size: usize,
    },
    /// A segment larger than a rack (25.11+): no `racks` racks hold segment `index`.
    NoRacksForSegment {
        racks: usize,
        segment: usize,
        index: usize,
        segments: usize,
    },
    TooFewRacksToSpread {
        racks: usize,
        segment: usize,
        segments: usize,
    },
    NoRackForSegment {
        segment: usize,
    },
    /// The job's rack limit (`--switches`) allows `racks` racks; it would take `needs` now.
    /// It waits until it fits the limit or has waited out its time (Slurm's pending reason
    /// is then `Resources`, as with topology/tree).
    SwitchLimit {
        racks: usize,
        needs: usize,
    },
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reject::Never(why) => write!(f, "never runnable: {why}"),
            Reject::NotNow(why) => write!(f, "not now: {why}"),
        }
    }
}

impl fmt::Display for NeverReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use NeverReason::*;
        match self {
            NoRackNodes => write!(f, "no rack has any node"),
            ZeroNodes => write!(f, "the job asks for zero nodes"),
            RequiredOutsideRacks { node } => write!(f, "required node {node} belongs to no rack"),
            ZeroSegment => write!(f, "segment size 0"),
            SegmentLargerThanRack { segment, largest } => write!(
                f,
                "segment size {segment} exceeds the largest rack ({largest} trays)"
            ),
            NotWholeSegments { nodes, segment } => {
                write!(f, "{nodes} nodes cannot be split into segments of {segment}")
            }
            RequiredWithSegments => write!(
                f,
                "required nodes cannot be combined with more than one segment"
            ),
            RequiredNotEveryNode { nodes, named } => write!(
                f,
                "{nodes} nodes in segments but -w names only {named}: with several segments -w must name every node"
            ),
            RequiredSplitsSegment {
                rack,
                named,
                segment,
            } => write!(
                f,
                "-w names {named} nodes in {rack}, not whole segments of {segment}"
            ),
            RequiredSpanRacks { racks, nodes: None } => write!(
                f,
                "required nodes span {racks} racks but the segment must fit one"
            ),
            RequiredSpanRacks {
                racks,
                nodes: Some(n),
            } => write!(
                f,
                "required nodes span {racks} racks but {n} nodes fit in one"
            ),
            LargerThanRacks { nodes, total } => {
                write!(f, "{nodes} nodes but the racks hold {total}")
            }
            TooFewRacksToSpread {
                segments,
                segment,
                racks,
            } => write!(
                f,
                "{segments} segments of {segment}, each in its own rack, but {racks} racks hold {segment} trays"
            ),
            SegmentsDoNotFit {
                segments,
                segment,
                room,
            } => write!(
                f,
                "{segments} segments of {segment} do not fit: the racks have room for {room}"
            ),
            LargestRacksTooSmall {
                nodes,
                racks,
                trays,
                with_required,
                rule,
            } => {
                let with = if *with_required {
                    " holding the -w nodes"
                } else {
                    ""
                };
                write!(
                    f,
                    "{nodes} nodes do not fit the {racks} largest racks{with} ({trays} trays; multi_rack = \"{}\")",
                    rule.as_str()
                )
            }
        }
    }
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use WaitReason::*;
        match self {
            RequiredNotOffered => write!(f, "a required node is not available"),
            NoRackRoom { trays, demand } => {
                write!(f, "no rack has room for {trays} trays ({demand})")
            }
            NoFewestRacks { racks, trays, rule } => write!(
                f,
                "no {racks} racks have {trays} free trays together (multi_rack = \"{}\")",
                rule.as_str()
            ),
            NoWholePieces { pieces, size } => write!(
                f,
                "not enough free trays for {pieces} x {size} nodes in whole pieces"
            ),
            NoRacksForSegment {
                racks,
                segment,
                index,
                segments,
            } => write!(
                f,
                "no {racks} racks have {segment} free trays for segment {index} of {segments}"
            ),
            TooFewRacksToSpread {
                racks,
                segment,
                segments,
            } => write!(
                f,
                "{racks} racks have {segment} free trays, {segments} segments need a rack each"
            ),
            NoRackForSegment { segment } => {
                write!(f, "no rack has {segment} free trays for the next segment")
            }
            SwitchLimit { racks, needs } => write!(
                f,
                "--switches allows {racks} racks, the job needs {needs} now"
            ),
        }
    }
}
