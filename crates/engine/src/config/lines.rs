//! Lines of a topology file that parsed: `Config` keeps no positions, so `nvl72 check`'s
//! cross-checks and the plugin's refusal of unknown node names find the rack and policy lines
//! here to point the admin at the line to edit.

use std::path::Path;

use serde::Deserialize;
use toml::{Spanned, Value};

/// 1-based lines; `None` when the key is not in the file (its default applies).
#[derive(Debug, Default)]
pub struct TopologyLines {
    pub gpus_per_tray: Option<usize>,
    /// `nodes` of each `[[rack]]`, or each `BlockName=` line, in file order.
    pub racks: Vec<Option<usize>>,
    /// topology.conf's `BlockSizes=` line.
    pub block_sizes: Option<usize>,
    pub end_time_hours_per_tray: Option<usize>,
    pub prefer_same_group: Option<usize>,
    /// Each name of `[policy] flat_partitions`, in file order.
    pub flat_partitions: Vec<usize>,
}

impl TopologyLines {
    /// Reads `path` again, as topology.toml or (any other name) topology.conf, as the plugin
    /// chose its parser; a file that vanished or changed since it was parsed just loses its
    /// line numbers.
    pub fn read(path: &Path) -> TopologyLines {
        let Ok(text) = std::fs::read_to_string(path) else {
            return TopologyLines::default();
        };
        Self::from_text(&text, path.extension().is_some_and(|e| e == "toml"))
    }

    /// The lines of a file's `text`, as [`TopologyLines::read`] finds them.
    pub fn from_text(text: &str, is_toml: bool) -> TopologyLines {
        if is_toml {
            toml_lines(text)
        } else {
            let (racks, block_sizes) = block_lines(text);
            TopologyLines {
                racks: racks.into_iter().map(Some).collect(),
                block_sizes,
                ..TopologyLines::default()
            }
        }
    }

    pub fn rack(&self, index: usize) -> Option<usize> {
        self.racks.get(index).copied().flatten()
    }
}

/// Only the spans; unknown keys are allowed here because the plugin's parser already
/// accepted the file.
#[derive(Deserialize, Default)]
#[serde(default)]
struct FileSpans {
    gpus_per_tray: Option<Spanned<Value>>,
    policy: PolicySpans,
    rack: Vec<RackSpans>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PolicySpans {
    end_time_hours_per_tray: Option<Spanned<Value>>,
    prefer_same_group: Option<Spanned<Value>>,
    flat_partitions: Vec<Spanned<Value>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RackSpans {
    nodes: Option<Spanned<Value>>,
}

fn toml_lines(text: &str) -> TopologyLines {
    let Ok(spans) = toml::from_str::<FileSpans>(text) else {
        return TopologyLines::default();
    };
    let line = |s: &Option<Spanned<Value>>| s.as_ref().map(|s| line_of(text, s.span().start));
    TopologyLines {
        gpus_per_tray: line(&spans.gpus_per_tray),
        racks: spans.rack.iter().map(|r| line(&r.nodes)).collect(),
        end_time_hours_per_tray: line(&spans.policy.end_time_hours_per_tray),
        prefer_same_group: line(&spans.policy.prefer_same_group),
        flat_partitions: spans
            .policy
            .flat_partitions
            .iter()
            .map(|s| line_of(text, s.span().start))
            .collect(),
        block_sizes: None,
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Lines that start a `BlockName=` entry, and the `BlockSizes=` line, with the comment and
/// continuation rules of the plugin's topology.conf parser (`config::block_conf`).
fn block_lines(text: &str) -> (Vec<usize>, Option<usize>) {
    let mut out = Vec::new();
    let mut sizes = None;
    let mut start: Option<(usize, bool)> = None;
    for (i, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or("").trim_end();
        let (body, continued) = match content.strip_suffix('\\') {
            Some(body) => (body, true),
            None => (content, false),
        };
        let entry = start.get_or_insert((i + 1, false));
        if body.trim().is_empty() && !entry.1 {
            // Still waiting for the first token of this logical line.
        } else if !entry.1 {
            entry.1 = true;
            let key = body.trim_start().split('=').next().unwrap_or("");
            if key.eq_ignore_ascii_case("BlockName") {
                out.push(entry.0);
            } else if key.eq_ignore_ascii_case("BlockSizes") {
                sizes = Some(entry.0);
            }
        }
        if !continued {
            start = None;
        }
    }
    (out, sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_conf_lines() {
        let text = "# c\nBlockSizes=18\n\\\n blockname=r1 Nodes=a\nBlockName=r2 \\\n Nodes=b\n";
        assert_eq!(block_lines(text), (vec![3, 5], Some(2)));
        assert_eq!(block_lines("BlockName=r1 Nodes=a"), (vec![1], None));
    }
}
