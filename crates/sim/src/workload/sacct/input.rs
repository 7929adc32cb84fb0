//! Where an export comes from: a file or stdin (`-`), gzip- or zstd-compressed or not
//! (recognised by their magic bytes, not by the name), text or `sacct --json` (recognised by
//! the first byte that is not white space). Everything is read as a stream: a history of
//! millions of jobs is never held as text.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// What the export is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `sacct --parsable2` (or `--parsable`, or any `--delimiter`).
    Text,
    /// `sacct --json`.
    Json,
}

/// How the bytes were packed, for the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    Plain,
    Gzip,
    Zstd,
}

/// An opened export: a buffered reader over the decompressed bytes.
pub struct Input {
    pub reader: Box<dyn BufRead>,
    pub format: Format,
    pub packing: Packing,
}

/// How messages name an export: its path, or `stdin` for `-`.
pub fn name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "stdin".into()
    } else {
        path.display().to_string()
    }
}

/// `-` is stdin.
pub fn open(path: &Path) -> Result<Input, String> {
    let reader: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(|e| e.to_string())?)
    };
    detect(reader)
}

/// Whether bytes starting with `head` are gzip or zstd (then error lines count in the unpacked
/// text, not in these bytes).
pub fn packed(head: &[u8]) -> bool {
    head.starts_with(&GZIP_MAGIC) || head.starts_with(&ZSTD_MAGIC)
}

/// Unpacks and recognises any byte stream.
pub fn detect(reader: Box<dyn Read>) -> Result<Input, String> {
    let mut raw = BufReader::with_capacity(1 << 16, reader);
    let head = raw.fill_buf().map_err(|e| e.to_string())?;
    let (mut reader, packing): (Box<dyn BufRead>, Packing) = if head.starts_with(&GZIP_MAGIC) {
        let gz = flate2::bufread::MultiGzDecoder::new(raw);
        (
            Box::new(BufReader::with_capacity(1 << 16, gz)),
            Packing::Gzip,
        )
    } else if head.starts_with(&ZSTD_MAGIC) {
        let zst = ruzstd::decoding::StreamingDecoder::new(raw)
            .map_err(|e| format!("not a zstd file: {e}"))?;
        (
            Box::new(BufReader::with_capacity(1 << 16, zst)),
            Packing::Zstd,
        )
    } else {
        (Box::new(raw), Packing::Plain)
    };
    let format = match first_visible(&mut reader).map_err(|e| unpack_error(packing, e))? {
        Some(b'{') | Some(b'[') => Format::Json,
        _ => Format::Text,
    };
    Ok(Input {
        reader,
        format,
        packing,
    })
}

/// The first byte that is not white space in the first buffer, which stays unread.
fn first_visible(r: &mut dyn BufRead) -> std::io::Result<Option<u8>> {
    let buf = r.fill_buf()?;
    Ok(buf.iter().copied().find(|b| !b.is_ascii_whitespace()))
}

fn unpack_error(packing: Packing, e: std::io::Error) -> String {
    match packing {
        Packing::Plain => e.to_string(),
        Packing::Gzip => format!("gzip: {e}"),
        Packing::Zstd => format!("zstd: {e}"),
    }
}

impl Packing {
    pub fn describe(self) -> Option<&'static str> {
        match self {
            Packing::Plain => None,
            Packing::Gzip => Some("gzip"),
            Packing::Zstd => Some("zstd"),
        }
    }
}
