//! Reading the nodes' answers: `nvidia-smi -q` text (one node, a directory of them, or a
//! pdsh/clush stream) and Slurm node features.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{natural_cmp, Answer, DiscoverError, GpuFabric, NodeReport};
use nvl72_engine::hostlist;

/// Extensions [`from_dir`] strips from file names. Only these: node names may contain dots.
const EXTENSIONS: [&str; 3] = [".txt", ".log", ".out"];

/// The GPUs of one node's `nvidia-smi -q` output, in output order.
///
/// Sections are tracked by indentation, so `State` or `CliqueId` lines elsewhere do not
/// count: only the `Fabric` section directly under a `GPU <bus id>` header is read. Other
/// sections, CRLF line ends, missing fields and grep-filtered output (`--` separators,
/// nothing but the Fabric lines) are all fine.
pub fn parse_nvidia_smi(text: &str) -> Vec<GpuFabric> {
    let mut gpus: Vec<GpuFabric> = Vec::new();
    let mut gpu_indent = 0;
    // (indent, name) of the open sections inside the current GPU.
    let mut sections: Vec<(usize, &str)> = Vec::new();
    for line in text.lines() {
        let body = line.trim();
        if body.is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if let Some(bus_id) = gpu_header(body) {
            gpus.push(GpuFabric {
                bus_id: bus_id.to_string(),
                ..GpuFabric::default()
            });
            gpu_indent = indent;
            sections.clear();
            continue;
        }
        let Some(gpu) = gpus.last_mut() else { continue };
        if indent <= gpu_indent {
            // Not part of the GPU block (a grep `--`, a second run's banner): forget the
            // sections, keep the GPU so its later lines still count.
            sections.clear();
            continue;
        }
        while sections.last().is_some_and(|&(i, _)| i >= indent) {
            sections.pop();
        }
        let Some((key, value)) = body.split_once(':') else {
            sections.push((indent, body));
            continue;
        };
        if !matches!(sections.as_slice(), [(_, s)] if s.eq_ignore_ascii_case("Fabric")) {
            continue;
        }
        let value = value.trim();
        let value = (!value.is_empty()).then(|| value.to_string());
        let key = key.trim();
        let field = if key.eq_ignore_ascii_case("State") {
            &mut gpu.state
        } else if key.eq_ignore_ascii_case("Status") {
            &mut gpu.status
        } else if key.eq_ignore_ascii_case("ClusterUUID") {
            &mut gpu.cluster_uuid
        } else if key.eq_ignore_ascii_case("CliqueId") {
            &mut gpu.clique_id
        } else {
            continue;
        };
        *field = value;
    }
    gpus
}

/// `GPU 00000008:01:00.0` -> the bus id. Key-value lines never match: their first `:` has
/// a space before it.
fn gpu_header(body: &str) -> Option<&str> {
    let bus = body.strip_prefix("GPU ")?.trim();
    let looks_like_bus = bus.contains(':')
        && bus
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
    looks_like_bus.then_some(bus)
}

/// One report per regular file in `dir`, named after the file (without `.txt`, `.log` or
/// `.out`), in natural node order. Hidden files, editor backups (`~`) and subdirectories
/// are skipped; two files for the same node are an error.
pub fn from_dir(dir: &Path) -> Result<Vec<NodeReport>, DiscoverError> {
    let read_err = |path: &Path, source| DiscoverError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| read_err(dir, e))? {
        let path = entry.map_err(|e| read_err(dir, e))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // metadata() follows symlinks, so a link to a file counts.
        let is_file = std::fs::metadata(&path).is_ok_and(|m| m.is_file());
        if name.starts_with('.') || name.ends_with('~') || !is_file {
            continue;
        }
        let node = EXTENSIONS
            .iter()
            .find_map(|ext| name.strip_suffix(ext))
            .unwrap_or(&name)
            .to_string();
        files.push((node, path));
    }
    files.sort_by(|a, b| natural_cmp(&a.0, &b.0).then_with(|| a.1.cmp(&b.1)));
    let mut reports: Vec<NodeReport> = Vec::with_capacity(files.len());
    for (i, (node, path)) in files.iter().enumerate() {
        if i > 0 && files[i - 1].0 == *node {
            return Err(DiscoverError::DuplicateNode {
                node: node.clone(),
                first: files[i - 1].1.clone(),
                second: path.clone(),
            });
        }
        let bytes = std::fs::read(path).map_err(|e| read_err(path, e))?;
        reports.push(NodeReport {
            node: node.clone(),
            answer: Answer::Gpus(parse_nvidia_smi(&String::from_utf8_lossy(&bytes))),
        });
    }
    Ok(reports)
}

/// Splits pdsh/clush output (`host: line`) by host and parses each host's lines as
/// `nvidia-smi -q`. Lines of different hosts may interleave. The tools' own messages
/// (`pdsh@login: gb005: ssh exited with exit code 255`, `clush: gb005: exited with exit
/// code 1`) become [`Answer::NoAnswer`] for hosts that printed nothing else. Lines without
/// a `host:` prefix are ignored.
pub fn from_stream(text: &str) -> Vec<NodeReport> {
    let mut outputs: HashMap<&str, String> = HashMap::new();
    let mut tool_messages: HashMap<&str, &str> = HashMap::new();
    for line in text.lines() {
        let Some((host, rest)) = line.split_once(':') else {
            continue;
        };
        if !is_host(host) {
            continue;
        }
        // The tools print "host: line"; the one space is theirs, the indentation is ours.
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        if host.contains('@') || host == "clush" {
            if let Some((target, message)) = rest.split_once(':') {
                if is_host(target) {
                    tool_messages.entry(target).or_insert(message.trim());
                }
            }
            continue;
        }
        let out = outputs.entry(host).or_default();
        out.push_str(rest);
        out.push('\n');
    }
    let mut reports: Vec<NodeReport> = outputs
        .iter()
        .map(|(host, out)| NodeReport {
            node: host.to_string(),
            answer: Answer::Gpus(parse_nvidia_smi(out)),
        })
        .collect();
    for (host, message) in tool_messages {
        if !outputs.contains_key(host) {
            reports.push(NodeReport {
                node: host.to_string(),
                answer: Answer::NoAnswer(message.to_string()),
            });
        }
    }
    reports.sort_by(|a, b| natural_cmp(&a.node, &b.node));
    reports
}

fn is_host(s: &str) -> bool {
    !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || c.is_control())
}

/// Reads `sinfo -N -h -o "%N %f"` (node name, comma-separated features) and keeps each
/// node's clique features, `clique=<ClusterUUID>.<CliqueId>` or
/// `nvl_clique_<ClusterUUID>.<CliqueId>`. A node listed once per partition is merged; a
/// hostlist in the first column (`sinfo` without `-N`) is expanded; `(null)` means no
/// features and a `NODELIST` header line is skipped.
pub fn from_features(text: &str) -> Vec<NodeReport> {
    let mut labels: HashMap<String, Vec<String>> = HashMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(nodes) = words.next() else { continue };
        if nodes == "NODELIST" {
            continue;
        }
        let found: Vec<String> = words
            .flat_map(|w| w.split(','))
            .filter_map(|f| {
                f.strip_prefix("clique=")
                    .or_else(|| f.strip_prefix("nvl_clique_"))
            })
            .map(str::to_string)
            .collect();
        let names = match hostlist::expand(nodes) {
            Ok(names) if !names.is_empty() => names,
            // Not a valid hostlist: keep the text so discover() reports the odd name.
            _ => vec![nodes.to_string()],
        };
        for name in names {
            let node_labels = labels.entry(name).or_default();
            for label in &found {
                if !node_labels.contains(label) {
                    node_labels.push(label.clone());
                }
            }
        }
    }
    let mut reports: Vec<NodeReport> = labels
        .into_iter()
        .map(|(node, labels)| NodeReport {
            node,
            answer: Answer::Features(labels),
        })
        .collect();
    reports.sort_by(|a, b| natural_cmp(&a.node, &b.node));
    reports
}
