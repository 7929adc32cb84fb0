//! Test kit: racks and tray states drawn as the rack map `nvl72 status` prints, for the unit,
//! property, status and simulator tests, the fuzz targets and the benches. Not part of the
//! product: nothing in the plugin or the `nvl72` binary calls it.
//!
//! ```
//! use nvl72_engine::testkit::racks;
//! // rack1: 12 free trays, 2 running job A, 2 drained, 2 more free; rack2: 4 free trays.
//! let kit = racks(&["rack1 ............AA--..", "rack2 ...."]);
//! assert_eq!(kit.tray("rack2", 3), 21);
//! assert_eq!(kit.view.offered_in(&kit.topo, 0), 14);
//! ```
//!
//! Each row is a rack name, then one character per tray (spaces inside the map are ignored,
//! to group trays for the eye). Node indices run on from rack to rack in row order and the
//! nodes are named `n<index>`, as in [`Topology::uniform`].
//!
//! Legend. The characters `nvl72 status` prints mean the same here:
//!
//! | char | status meaning | tray |
//! |---|---|---|
//! | `.` | free | offered to the job, a whole tray's GPUs and CPUs |
//! | a letter but `r`/`x`, `*`, `#` | running a job (`*`: several) | allocated, not offered |
//! | `r` | held (planned, reserved) | allocated, not offered |
//! | `-` | drained | unavailable, not offered |
//! | `x` | down | unavailable, not offered |
//!
//! And two the status map has no need of, because they describe one job's view:
//!
//! | char | tray |
//! |---|---|
//! | `_` | idle and healthy but not offered to this job (excluded, another partition) |
//! | `+` | allocated and offered: shared with a running job, a whole tray's GPUs and CPUs |
#![forbid(unsafe_code)]

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config::{Config, Policy, RackConfig};
use crate::topology::Topology;
use crate::tray::{Capacity, Tray};
use crate::view::ClusterView;

/// A topology and a view of it, built from rack maps.
#[derive(Debug, Clone)]
pub struct Kit {
    pub topo: Topology,
    pub view: ClusterView,
    config: Config,
    /// Each node's character as drawn.
    chars: Vec<char>,
}

/// Racks drawn as rack maps: `racks(&["rack1 ....xx", "rack2 ......"])`. See the module doc
/// for the legend. Panics on a character outside it.
pub fn racks(rows: &[&str]) -> Kit {
    let mut config = Config::default();
    let mut chars = Vec::new();
    for row in rows {
        let (name, map) = row
            .trim()
            .split_once(' ')
            .unwrap_or_else(|| panic!("rack map {row:?}: no rack name before the trays"));
        let first = chars.len();
        chars.extend(map.chars().filter(|c| *c != ' '));
        config.racks.push(rack(name, first..chars.len()));
    }
    let view = ClusterView {
        trays: chars.iter().map(|&c| tray(c)).collect(),
        ..ClusterView::default()
    };
    let topo = resolve(&config, chars.len());
    Kit {
        topo,
        view,
        config,
        chars,
    }
}

/// `racks` racks named `rack1`... of `trays` free trays each: [`Topology::uniform`] with an
/// all-free view.
pub fn uniform(racks: usize, trays: usize) -> Kit {
    let row = format!("{:.<1$}", "", trays);
    let rows: Vec<String> = (1..=racks).map(|r| format!("rack{r} {row}")).collect();
    self::racks(&rows.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Racks of the given sizes, all trays free.
pub fn sized(sizes: &[usize]) -> Kit {
    let rows: Vec<String> = sizes
        .iter()
        .enumerate()
        .map(|(r, &n)| format!("rack{} {:.<2$}", r + 1, "", n))
        .collect();
    racks(&rows.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A rack's configuration with the nodes `n<i>` for each `i` of `nodes`.
pub fn rack(name: &str, nodes: impl IntoIterator<Item = usize>) -> RackConfig {
    RackConfig {
        name: name.into(),
        nodes: nodes.into_iter().map(|i| format!("n{i}")).collect(),
        clique: None,
        group: None,
    }
}

/// `config` resolved against a scheduler of `node_count` nodes named `n<index>`.
pub fn resolve(config: &Config, node_count: usize) -> Topology {
    Topology::resolve(config, node_count, |name| {
        name.strip_prefix('n').and_then(|n| n.parse().ok())
    })
    .0
}

/// One tray of a rack map (see the legend).
pub fn tray(c: char) -> Tray {
    let full = Tray::free(Capacity::GB200_TRAY);
    match c {
        '.' => full,
        '+' => Tray {
            allocated: true,
            ..full
        },
        '_' => Tray::default(),
        '-' | 'x' => Tray {
            unavailable: true,
            ..Tray::default()
        },
        'r' | '*' | '#' | 'A'..='Z' | 'a'..='z' => Tray {
            allocated: true,
            ..Tray::default()
        },
        _ => panic!("rack map: {c:?} is not in the test kit's legend"),
    }
}

impl Kit {
    fn rebuild(mut self) -> Kit {
        let keep = self.topo.clone();
        self.topo = resolve(&self.config, self.view.trays.len());
        self.topo.full_tray = keep.full_tray;
        self.topo.block_25_11_segments = keep.block_25_11_segments;
        self
    }

    /// The topology and the view.
    pub fn parts(self) -> (Topology, ClusterView) {
        (self.topo, self.view)
    }

    /// The placement policy.
    pub fn policy(mut self, policy: Policy) -> Kit {
        self.config.policy = policy;
        self.rebuild()
    }

    /// Changes the placement policy.
    pub fn with_policy(mut self, edit: impl FnOnce(&mut Policy)) -> Kit {
        edit(&mut self.config.policy);
        self.rebuild()
    }

    /// Puts `rack` into rack group `group`.
    pub fn group(mut self, rack: &str, group: &str) -> Kit {
        let d = self.rack(rack);
        self.config.racks[d].group = Some(group.into());
        self.rebuild()
    }

    /// topology/block's segment rules of Slurm 25.11 and later.
    pub fn block_25_11_segments(mut self) -> Kit {
        self.topo.block_25_11_segments = true;
        self
    }

    /// What a whole tray offers: `gpus_per_tray`, `full_tray`, and the GPUs and CPUs of every
    /// offered tray.
    pub fn full_tray(mut self, gpus: u16, cpus: u16) -> Kit {
        self.config.gpus_per_tray = u32::from(gpus);
        self = self.rebuild();
        self.topo.full_tray = Capacity { gpus, cpus };
        for t in self.view.trays.iter_mut().filter(|t| t.offered) {
            t.gpus = gpus;
            t.cpus = cpus;
        }
        self
    }

    /// Each tray's scheduling weight, in node order ([`ClusterView::set_weights`]).
    pub fn weights(mut self, weights: Vec<u64>) -> Kit {
        self.view.set_weights(weights);
        self
    }

    /// The time now, and when the jobs drawn with each character end (`[policy] end_time`):
    /// `ends(now, &[('A', now + 3600)])`. Trays drawn with another character have no jobs.
    pub fn ends(mut self, now: u32, ends: &[(char, u32)]) -> Kit {
        let end_of = |c: char| ends.iter().find(|e| e.0 == c).map_or(0, |e| e.1);
        self.view.busy_until = self.chars.iter().map(|&c| end_of(c)).collect();
        self.view.now = now;
        self
    }

    /// Draws rack `rack`'s trays again (a whole tray's GPUs and CPUs on the offered ones, as
    /// [`racks`] draws them).
    pub fn draw(mut self, rack: &str, map: &str) -> Kit {
        let nodes = self.topo.racks[self.rack(rack)].nodes.clone();
        let map: Vec<char> = map.chars().filter(|c| *c != ' ').collect();
        assert_eq!(map.len(), nodes.len(), "rack {rack}: a map of every tray");
        for (n, c) in nodes.into_iter().zip(map) {
            self.chars[n] = c;
            self.view.trays[n] = Tray {
                gpus: if tray(c).offered {
                    self.topo.full_tray.gpus
                } else {
                    0
                },
                cpus: if tray(c).offered {
                    self.topo.full_tray.cpus
                } else {
                    0
                },
                ..tray(c)
            };
        }
        self
    }

    /// Changes the trays `trays` (positions within `rack`).
    pub fn edit(mut self, rack: &str, trays: Range<usize>, edit: impl Fn(&mut Tray)) -> Kit {
        for n in self.trays(rack, trays) {
            edit(&mut self.view.trays[n]);
        }
        self
    }

    /// Rack `name`'s index.
    pub fn rack(&self, name: &str) -> usize {
        self.topo
            .rack_by_name(name)
            .unwrap_or_else(|| panic!("no rack {name:?} in the test kit"))
    }

    /// The node index of tray `i` of rack `rack` (0-based, in map order).
    pub fn tray(&self, rack: &str, i: usize) -> usize {
        self.topo.racks[self.rack(rack)].nodes[i]
    }

    /// The node indices of trays `trays` of rack `rack`.
    pub fn trays(&self, rack: &str, trays: Range<usize>) -> Vec<usize> {
        trays.map(|i| self.tray(rack, i)).collect()
    }

    /// The node indices of `(rack, tray)` pairs, e.g. the nodes named with `-w`.
    pub fn nodes(&self, trays: &[(&str, usize)]) -> Vec<usize> {
        trays.iter().map(|&(r, i)| self.tray(r, i)).collect()
    }

    /// Marks `nodes` allocated to a job and no longer offered, as after it started.
    pub fn allocate(&mut self, nodes: &[usize]) {
        for &n in nodes {
            self.view.trays[n].offered = false;
            self.view.trays[n].allocated = true;
        }
    }

    /// The racks as configured (node names `n<index>`), e.g. for `nvl72 status`.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Each configured tray's node name (`n<index>`) and the character it is drawn with.
    pub fn drawn(&self) -> impl Iterator<Item = (&str, char)> {
        let names = self.config.racks.iter().flat_map(|r| &r.nodes);
        names.zip(&self.chars).map(|(n, &c)| (n.as_str(), c))
    }

    /// Which trays are offered, in node order: the simulator's free map.
    pub fn offered(&self) -> Vec<bool> {
        self.view.trays.iter().map(|t| t.offered).collect()
    }

    /// The view drawn back as rack maps (`A` for every allocated tray not offered), for
    /// failure messages and for comparing a whole state at once.
    pub fn maps(&self) -> Vec<String> {
        maps(&self.topo, &self.view)
    }
}

/// A fresh empty directory under the system temp dir, `nvl72-<what>-test-<pid>-<n>` (no
/// tempfile dependency).
pub fn temp_dir(what: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("nvl72-{what}-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `view` on `topo` drawn as rack maps (see [`Kit::maps`]).
pub fn maps(topo: &Topology, view: &ClusterView) -> Vec<String> {
    topo.racks
        .iter()
        .map(|r| {
            let map: String = r
                .nodes
                .iter()
                .map(|&n| {
                    let t = view.tray(n);
                    match (t.offered, t.allocated, t.unavailable) {
                        (true, true, _) => '+',
                        (true, false, _) => '.',
                        (false, _, true) => 'x',
                        (false, true, false) => 'A',
                        (false, false, false) => '_',
                    }
                })
                .collect();
            format!("{} {map}", r.name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_read_back_as_drawn() {
        let kit = racks(&["rack1 ..AB *r-x", "rack2 _+.."]);
        assert_eq!(kit.maps(), ["rack1 ..AAAAxx", "rack2 _+.."]);
        assert_eq!(kit.tray("rack2", 1), 9);
        assert_eq!(kit.topo.rack_of(9), Some(1));
        assert!(kit.view.trays[9].offered && kit.view.trays[9].allocated);
        let (topo, view) = uniform(4, 18).parts();
        assert_eq!(topo, Topology::uniform(4, 18, Policy::default()));
        assert_eq!(view, ClusterView::all_free(72));
    }
}
