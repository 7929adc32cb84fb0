//! Requests that no state of the cluster could satisfy, found before any placement work:
//! Slurm turns them into "Requested topology configuration is not available" at submission.

use super::reject::NeverReason::{self, *};
use super::{JobRequest, Reject};
use crate::config::SegmentPlacement;
use crate::topology::Topology;

/// `Ok` when some state of the cluster could hold `req`.
pub fn validate(topo: &Topology, req: &JobRequest) -> Result<(), Reject> {
    check(topo, req).map_err(Reject::Never)
}

fn check(topo: &Topology, req: &JobRequest) -> Result<(), NeverReason> {
    let largest = topo.max_rack_size();
    if largest == 0 {
        return Err(NoRackNodes);
    }
    if req.min_nodes == 0 {
        return Err(ZeroNodes);
    }
    if let Some(&node) = req.required.iter().find(|&&n| !topo.in_any_rack(n)) {
        return Err(RequiredOutsideRacks { node });
    }
    let named = required_rack_list(topo, req);
    let Some(s) = req.segment else {
        let n = req.trays_needed(topo);
        return if named.len() > 1 && n <= largest && req.max_nodes <= largest {
            Err(RequiredSpanRacks {
                racks: named.len(),
                nodes: Some(n),
            })
        } else if n > largest {
            fits_some_racks(topo, n, &named)
        } else {
            Ok(())
        };
    };
    check_segments(topo, req, s, named.len())
}

/// `--segment=s`: a size that splits the job, `-w` by the series' rule, and room for the
/// segments under the job's segment rule.
fn check_segments(
    topo: &Topology,
    req: &JobRequest,
    s: usize,
    named_racks: usize,
) -> Result<(), NeverReason> {
    let largest = topo.max_rack_size();
    if s == 0 {
        return Err(ZeroSegment);
    }
    if s > largest && !topo.block_25_11_segments {
        return Err(SegmentLargerThanRack {
            segment: s,
            largest,
        });
    }
    if req.min_nodes % s != 0 {
        return Err(NotWholeSegments {
            nodes: req.min_nodes,
            segment: s,
        });
    }
    let segments = req.min_nodes / s;
    if segments > 1 && !req.required.is_empty() {
        return required_segments_fit(topo, req, s);
    }
    if named_racks > 1 && segments == 1 {
        return Err(RequiredSpanRacks {
            racks: named_racks,
            nodes: None,
        });
    }
    if s > largest {
        // 25.11+: each segment over the fewest racks, as a job larger than a rack.
        let total = topo.total_trays();
        if req.min_nodes > total {
            return Err(LargerThanRacks {
                nodes: req.min_nodes,
                total,
            });
        }
        return fits_some_racks(topo, s, &[]);
    }
    if req.segment_rule(topo) == SegmentPlacement::Spread {
        let racks = topo.racks_of_at_least(s);
        if segments > racks {
            return Err(TooFewRacksToSpread {
                segments,
                segment: s,
                racks,
            });
        }
        return Ok(());
    }
    let room = topo.pieces_held(s);
    if segments > room {
        return Err(SegmentsDoNotFit {
            segments,
            segment: s,
            room,
        });
    }
    Ok(())
}

/// `-w` with several segments. Before Slurm 25.11 never (as topology/block there); from
/// 25.11 the `-w` nodes must be all of the job's nodes, and block then splits them into
/// segments inside blocks, so each rack's share of them must be whole segments.
fn required_segments_fit(topo: &Topology, req: &JobRequest, s: usize) -> Result<(), NeverReason> {
    if !topo.block_25_11_segments {
        return Err(RequiredWithSegments);
    }
    if req.required.len() < req.min_nodes {
        return Err(RequiredNotEveryNode {
            nodes: req.min_nodes,
            named: req.required.len(),
        });
    }
    for r in required_rack_list(topo, req) {
        let named = req
            .required
            .iter()
            .filter(|&&n| topo.rack_of(n) == Some(r))
            .count();
        if named % s != 0 {
            return Err(RequiredSplitsSegment {
                rack: topo.racks[r].name.clone(),
                named,
                segment: s,
            });
        }
    }
    Ok(())
}

/// The racks holding the request's `-w` nodes, sorted, each once.
pub(super) fn required_rack_list(topo: &Topology, req: &JobRequest) -> Vec<usize> {
    let mut racks: Vec<usize> = req
        .required
        .iter()
        .filter_map(|&n| topo.rack_of(n))
        .collect();
    racks.sort_unstable();
    racks.dedup();
    racks
}

/// A job larger than a rack: it must fit all racks together, and with
/// `multi_rack = "fewest-racks"` or `"balanced"` the racks it may get: the racks of its `-w` nodes (`named`)
/// plus the largest others, `max(ceil(n / largest rack), named racks)` racks in all (the
/// rule of `multi_rack::with_required_racks`).
fn fits_some_racks(topo: &Topology, n: usize, named: &[usize]) -> Result<(), NeverReason> {
    let size = |r: usize| topo.racks[r].nodes.len();
    let total = topo.total_trays();
    if n > total {
        return Err(LargerThanRacks { nodes: n, total });
    }
    let racks = n.div_ceil(topo.max_rack_size()).max(named.len());
    let trays = if named.is_empty() {
        topo.largest_racks(racks)
    } else {
        let mut others: Vec<usize> = (0..topo.racks.len())
            .filter(|r| !named.contains(r))
            .map(size)
            .collect();
        others.sort_unstable_by(|a, b| b.cmp(a));
        named.iter().map(|&r| size(r)).sum::<usize>()
            + others.iter().take(racks - named.len()).sum::<usize>()
    };
    if topo.policy.multi_rack.fewest_racks_only() && trays < n {
        return Err(LargestRacksTooSmall {
            nodes: n,
            racks,
            trays,
            with_required: !named.is_empty(),
            rule: topo.policy.multi_rack,
        });
    }
    Ok(())
}
