//! A job's NVLink pieces as slurmctld keeps them in its job state (25.11+, `jobinfo_pack`).
//!
//! The bytes outlive the plugin that wrote them: a restart, a plugin upgrade or downgrade, or a
//! Slurm upgrade reads what an older build saved. So the format carries a version of its own,
//! and a reader refuses what it cannot read instead of guessing: the job then keeps its nodes
//! and only loses its per-domain IMEX channels (Slurm's default, one channel for the job).
//!
//! Slurm frames the bytes (`dynamic_plugin_data_pack`: a length, then our plugin id), so a
//! reader always knows where they end and never has to trust a count inside them to stay in
//! step with the rest of the job record.
//!
//! - **Format 0** (until 2026-12, no version word): `u32` count, then each host list as Slurm's
//!   `packstr` writes it: `u32` length including a NUL, the bytes, the NUL.
//! - **Format 1**: `u32` [`FORMAT_1`] (`"NVL"` and the format number, above any format-0
//!   count), then one `packmem` of text: each host list followed by `\n`.
//!
//! All integers are big-endian, as Slurm's `pack32`.
#![forbid(unsafe_code)]

use std::fmt;

use crate::hostlist;

/// Format words are `"NVL"` and a byte; a format-0 count is never this large.
const FORMAT_TAG: u32 = 0x4e56_4c00;
/// The format this build writes.
pub const FORMAT: u32 = 1;
/// The first word of format 1: `"NVL"` and the format number.
pub const FORMAT_1: u32 = FORMAT_TAG | FORMAT;
/// A job has at most one piece per tray; format 0 refused larger counts too.
pub const MAX_PIECES: u32 = 1 << 20;
// A format word is never read as a format-0 count.
const _: () = assert!(FORMAT_TAG > MAX_PIECES);

/// Why saved pieces were refused, with what a log line needs to say where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Fewer bytes than the format needs at `at`.
    Truncated {
        at: usize,
        needed: usize,
    },
    /// Bytes left over after the last piece.
    Trailing {
        bytes: usize,
    },
    /// Written by a newer plugin.
    Newer {
        format: u32,
    },
    /// The first word is neither a format-0 count nor a format word.
    NotPieces {
        word: u32,
    },
    TooMany {
        count: u32,
    },
    /// Piece `index` (from 0) is not a host list.
    BadPiece {
        index: usize,
        why: String,
    },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Truncated { at, needed } => {
                write!(f, "truncated: {needed} more bytes needed at byte {at}")
            }
            Refused::Trailing { bytes } => write!(f, "{bytes} bytes after the last piece"),
            Refused::Newer { format } => write!(
                f,
                "format {format} was written by a newer topology/nvl72 (this one reads 0 to {FORMAT})"
            ),
            Refused::NotPieces { word } => {
                write!(f, "first word {word:#010x} is no format this plugin knows")
            }
            Refused::TooMany { count } => write!(f, "{count} pieces (at most {MAX_PIECES})"),
            Refused::BadPiece { index, why } => write!(f, "piece {}: {why}", index + 1),
        }
    }
}

/// What [`encode`] gives: the format word and the text, which the plugin writes with Slurm's
/// `pack32` and `packmem` (so [`Saved::to_bytes`] is exactly what lands in the job state).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub format_word: u32,
    pub text: Vec<u8>,
}

impl Saved {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.text.len());
        out.extend_from_slice(&self.format_word.to_be_bytes());
        out.extend_from_slice(&(self.text.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.text);
        out
    }
}

pub fn encode(pieces: &[String]) -> Saved {
    let mut text = Vec::with_capacity(pieces.iter().map(|p| p.len() + 1).sum());
    for p in pieces {
        text.extend_from_slice(p.as_bytes());
        text.push(b'\n');
    }
    Saved {
        format_word: FORMAT_1,
        text,
    }
}

/// The pieces in `bytes`, all of which must be used (they are exactly what Slurm framed).
pub fn decode(bytes: &[u8]) -> Result<Vec<String>, Refused> {
    let mut r = Reader { bytes, at: 0 };
    let word = r.u32()?;
    let pieces = if word <= MAX_PIECES {
        format_0(&mut r, word)?
    } else if word & !0xff == FORMAT_TAG {
        match word & 0xff {
            1 => format_1(&mut r)?,
            format => return Err(Refused::Newer { format }),
        }
    } else {
        return Err(Refused::NotPieces { word });
    };
    match bytes.len() - r.at {
        0 => Ok(pieces),
        bytes => Err(Refused::Trailing { bytes }),
    }
}

fn format_0(r: &mut Reader<'_>, count: u32) -> Result<Vec<String>, Refused> {
    let mut pieces = Vec::new();
    for index in 0..count as usize {
        let len = r.u32()? as usize;
        let raw = r.take(len)?;
        let Some((&0, text)) = raw.split_last() else {
            return Err(bad(index, "not NUL-terminated"));
        };
        pieces.push(piece(index, text)?);
    }
    Ok(pieces)
}

fn format_1(r: &mut Reader<'_>) -> Result<Vec<String>, Refused> {
    let len = r.u32()? as usize;
    let text = r.take(len)?;
    let Some(body) = text.strip_suffix(b"\n") else {
        return match text.is_empty() {
            true => Ok(Vec::new()),
            false => Err(bad(0, "the text does not end with a newline")),
        };
    };
    let lines = body.split(|&b| b == b'\n');
    let count = body.iter().filter(|&&b| b == b'\n').count() + 1;
    if count > MAX_PIECES as usize {
        return Err(Refused::TooMany {
            count: count as u32,
        });
    }
    lines.enumerate().map(|(i, line)| piece(i, line)).collect()
}

/// A piece must be a host list that names at least one tray: the IMEX plugin expands it.
fn piece(index: usize, text: &[u8]) -> Result<String, Refused> {
    let text = std::str::from_utf8(text).map_err(|_| bad(index, "not UTF-8"))?;
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(index, "holds whitespace or control characters"));
    }
    match hostlist::count(text) {
        Ok(0) => Err(bad(index, "names no tray")),
        Ok(_) => Ok(text.to_string()),
        Err(e) => Err(bad(index, &e.to_string())),
    }
}

/// Damaged text can be long: a log line quotes at most this much of it.
const QUOTED_AT_MOST: usize = 120;

fn bad(index: usize, why: &str) -> Refused {
    let mut why = why.to_string();
    if why.len() > QUOTED_AT_MOST {
        let cut = (0..=QUOTED_AT_MOST)
            .rev()
            .find(|&i| why.is_char_boundary(i));
        why.truncate(cut.unwrap_or(0));
        why.push_str("...");
    }
    Refused::BadPiece { index, why }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Refused> {
        let left = self.bytes.len() - self.at;
        if n > left {
            return Err(Refused::Truncated {
                at: self.at,
                needed: n - left,
            });
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, Refused> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests;
