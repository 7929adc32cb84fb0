//! Slurm's configuration-file syntax as 24.11's `parse_config.c` reads it: `#` comments,
//! `\` continuations, escapes, `Include` (relative to slurm.conf's directory, `%c`),
//! case-insensitive `Key=Value` tokens. slurm.conf and gres.conf share it, so a file Slurm
//! reads one way is not checked another way.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{Problem, Severity};

/// Include nesting deeper than this is reported instead of followed (cycles).
const MAX_INCLUDE_DEPTH: usize = 16;

/// Where a line came from; included files keep their own path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loc {
    pub file: PathBuf,
    /// 1-based; the first physical line of a continued line, as Slurm counts.
    pub line: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

impl Loc {
    /// `line 7` inside `file` itself, else `path:7`, for messages that point elsewhere.
    pub fn seen_from(&self, file: &Path) -> String {
        if self.file == file {
            format!("line {}", self.line)
        } else {
            self.to_string()
        }
    }
}

pub fn error(loc: &Loc, message: String) -> Problem {
    Problem {
        file: loc.file.clone(),
        line: Some(loc.line),
        severity: Severity::Error,
        message,
    }
}

/// Collects the logical lines of a file and its includes as `Key=Value` pairs.
pub struct Reader {
    /// Relative includes are resolved against this directory (slurm.conf's).
    base: PathBuf,
    /// The latest `ClusterName`, for `%c` in include paths.
    cluster: Option<String>,
    pub lines: Vec<(Loc, Vec<(String, String)>)>,
    pub problems: Vec<Problem>,
}

impl Reader {
    pub fn new(slurm_conf: &Path) -> Self {
        Reader {
            base: slurm_conf.parent().unwrap_or(Path::new("")).to_path_buf(),
            cluster: None,
            lines: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// False if `path` could not be read (reported at `from`, the Include line, if any).
    pub fn read(&mut self, path: &Path, from: Option<&Loc>, depth: usize) -> bool {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                self.problems.push(Problem {
                    file: from.map_or_else(|| path.to_path_buf(), |l| l.file.clone()),
                    line: from.map(|l| l.line),
                    severity: Severity::Error,
                    message: match from {
                        Some(_) => format!("Include: cannot read {}: {e}", path.display()),
                        None => format!("cannot read file: {e}"),
                    },
                });
                return false;
            }
        };
        for (line, content) in logical_lines(&text) {
            let loc = Loc {
                file: path.to_path_buf(),
                line,
            };
            if let Some(target) = include_target(&content) {
                self.include(target, &loc, depth);
                continue;
            }
            let pairs = pairs(&content);
            if let Some((k, v)) = pairs.first() {
                if k.eq_ignore_ascii_case("ClusterName") {
                    self.cluster = Some(v.to_ascii_lowercase());
                }
            }
            self.lines.push((loc, pairs));
        }
        true
    }

    fn include(&mut self, target: &str, loc: &Loc, depth: usize) {
        let fail = |message: String| error(loc, message);
        if target.contains("%c") && self.cluster.is_none() {
            return self.problems.push(fail(format!(
                "Include {target}: %c needs a ClusterName= before this line"
            )));
        }
        let target = target.replace("%c", self.cluster.as_deref().unwrap_or(""));
        if target.contains('*') {
            return self.problems.push(fail(format!(
                "Include {target}: Slurm 24.11 does not expand `*` in Include and fails on it"
            )));
        }
        if depth >= MAX_INCLUDE_DEPTH {
            return self.problems.push(fail(format!(
                "Include {target}: nested more than {MAX_INCLUDE_DEPTH} deep (an include cycle?)"
            )));
        }
        let path = self.base.join(&target);
        self.read(&path, Some(loc), depth + 1);
    }
}

/// The file of an `Include <file>` line: the keyword (any case) at the very start of the
/// line, then whitespace, as in Slurm's `_parse_include_directive`.
fn include_target(line: &str) -> Option<&str> {
    let head = line.get(..7)?;
    let rest = &line[7..];
    if !head.eq_ignore_ascii_case("include") || !rest.starts_with(|c: char| c.is_whitespace()) {
        return None;
    }
    rest.split_whitespace().next()
}

/// Logical lines with the 1-based number of their first physical line: `#` starts a comment
/// unless escaped, an odd number of trailing `\` joins the next line (without a space, as
/// Slurm does), and `\x` becomes `x` afterwards. Blank lines are dropped.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let content = strip_comment(raw);
        let entry = pending.get_or_insert_with(|| (i + 1, String::new()));
        match strip_continuation(content) {
            Some(body) => entry.1.push_str(body),
            None => {
                entry.1.push_str(content);
                let (line, joined) = pending.take().unwrap_or_default();
                let unescaped = unescape(&joined);
                if !unescaped.trim().is_empty() {
                    out.push((line, unescaped));
                }
            }
        }
    }
    if let Some((line, joined)) = pending {
        let unescaped = unescape(&joined);
        if !unescaped.trim().is_empty() {
            out.push((line, unescaped));
        }
    }
    out
}

fn strip_comment(line: &str) -> &str {
    let mut backslashes = 0;
    for (i, c) in line.char_indices() {
        match c {
            '#' if backslashes % 2 == 0 => return &line[..i],
            '\\' => backslashes += 1,
            _ => backslashes = 0,
        }
    }
    line
}

/// The line without its continuation backslash, if it ends in an odd number of them
/// (trailing whitespace ignored).
fn strip_continuation(line: &str) -> Option<&str> {
    let trimmed = line.trim_end();
    let body = trimmed.trim_end_matches('\\');
    let count = trimmed.len() - body.len();
    (count % 2 == 1).then(|| &trimmed[..trimmed.len() - 1])
}

fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// `Key=Value` pairs from the start of a line, as Slurm's key/value regex finds them: keys
/// of `A-Z a-z 0-9 _ .`, optional spaces and operator (`+=`, `-=`, ...) around `=`, values
/// in double quotes or up to the next whitespace. Stops at the first text that is no pair.
fn pairs(line: &str) -> Vec<(String, String)> {
    let bytes = line.as_bytes();
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let mut out = Vec::new();
    let mut i = skip_ws(0);
    while i < bytes.len() {
        let key_start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || b"_.".contains(&bytes[i])) {
            i += 1;
        }
        let key = &line[key_start..i];
        i = skip_ws(i);
        if i < bytes.len() && b"-*+/".contains(&bytes[i]) {
            i += 1;
        }
        if key.is_empty() || bytes.get(i) != Some(&b'=') {
            break;
        }
        i = skip_ws(i + 1);
        let ends_token = |j: usize| j >= bytes.len() || bytes[j].is_ascii_whitespace();
        let quoted = (bytes.get(i) == Some(&b'"'))
            .then(|| line[i + 1..].find('"').map(|q| i + 1 + q))
            .flatten()
            .filter(|&close| ends_token(close + 1));
        let value = match quoted {
            Some(close) => {
                let v = &line[i + 1..close];
                i = close + 1;
                v
            }
            None => {
                let start = i;
                while !ends_token(i) {
                    i += 1;
                }
                if i == start {
                    break;
                }
                &line[start..i]
            }
        };
        out.push((key.to_string(), value.to_string()));
        i = skip_ws(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_pairs() {
        let text = "A=1 # comment\nNodeName=gb[1-2] \\\n  Gres=\"gpu:4\"\n\n  B = x\\#y\nC=\"a b\"";
        let lines = logical_lines(text);
        let got: Vec<(usize, Vec<(String, String)>)> =
            lines.iter().map(|(n, l)| (*n, pairs(l))).collect();
        let p = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            got,
            vec![
                (1, vec![p("A", "1")]),
                (2, vec![p("NodeName", "gb[1-2]"), p("Gres", "gpu:4")]),
                (5, vec![p("B", "x#y")]),
                (6, vec![p("C", "a b")]),
            ]
        );
        assert_eq!(include_target("include  nodes.conf x"), Some("nodes.conf"));
        assert_eq!(include_target("IncludeX=1"), None);
    }
}
