use proptest::prelude::*;

use super::*;

/// Slurm's frame around the plugin's bytes, as `dynamic_plugin_data_pack` writes it.
const PLUGIN_ID: u32 = 172;

/// The bytes of a fixture file: `#` lines are comments, the rest is hex.
fn fixture(text: &str) -> Vec<u8> {
    let hex: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<String>()
        .split_whitespace()
        .collect();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// The plugin's bytes inside a fixture's frame, after checking the frame.
fn unframe(framed: &[u8]) -> &[u8] {
    let word = |at: usize| u32::from_be_bytes(framed[at..at + 4].try_into().unwrap());
    assert_eq!(word(0) as usize, framed.len() - 4, "frame length");
    assert_eq!(word(4), PLUGIN_ID, "plugin id");
    &framed[8..]
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn pieces_saved_by_the_last_format_0_build_in_slurm_26_05_5_read_back() {
    let parts = fixture(include_str!(
        "../../../../tests/fixtures/saved-pieces/format0-two-rack-parts.hex"
    ));
    let segments = fixture(include_str!(
        "../../../../tests/fixtures/saved-pieces/format0-two-segments.hex"
    ));
    assert_eq!(
        decode(unframe(&parts)),
        Ok(strings(&["gb[013-018]", "gb[019-036]"]))
    );
    assert_eq!(
        decode(unframe(&segments)),
        Ok(strings(&["gb[037-038]", "gb[039-040]"]))
    );
}

#[test]
fn what_this_build_saves_reads_back_in_format_1() {
    let pieces = strings(&["gb[013-018]", "gb[019-036]", "gb072"]);
    let saved = encode(&pieces);
    assert_eq!(saved.format_word, FORMAT_1);
    assert_eq!(saved.format_word & 0xff, FORMAT);
    assert_eq!(decode(&saved.to_bytes()), Ok(pieces));
    assert_eq!(decode(&encode(&[]).to_bytes()), Ok(Vec::new()));
}

#[test]
fn a_newer_format_is_refused_and_named() {
    let mut bytes = encode(&strings(&["gb001"])).to_bytes();
    bytes[3] = 2;
    let refused = decode(&bytes).unwrap_err();
    assert_eq!(refused, Refused::Newer { format: 2 });
    assert!(refused.to_string().contains("format 2"), "{refused}");
}

#[test]
fn every_truncation_is_refused() {
    let format_1 = encode(&strings(&["gb[001-018]", "gb019"])).to_bytes();
    let format_0 = unframe(&fixture(include_str!(
        "../../../../tests/fixtures/saved-pieces/format0-two-rack-parts.hex"
    )))
    .to_vec();
    for bytes in [format_1, format_0] {
        for len in 0..bytes.len() {
            assert!(
                decode(&bytes[..len]).is_err(),
                "{len} of {} bytes accepted",
                bytes.len()
            );
        }
    }
}

#[test]
fn text_that_is_not_a_host_list_is_refused_naming_the_piece() {
    let saved = Saved {
        format_word: FORMAT_1,
        text: b"gb[001-004]\ngb[9-\n".to_vec(),
    };
    let refused = decode(&saved.to_bytes()).unwrap_err();
    assert!(
        matches!(refused, Refused::BadPiece { index: 1, .. }),
        "{refused:?}"
    );
    assert!(refused.to_string().starts_with("piece 2: "), "{refused}");
}

#[test]
fn bytes_after_the_last_piece_are_refused() {
    let mut bytes = encode(&strings(&["gb001"])).to_bytes();
    bytes.push(0);
    assert_eq!(decode(&bytes), Err(Refused::Trailing { bytes: 1 }));
}

fn arb_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u32..999).prop_map(|n| format!("gb{n:03}")),
        (1u32..900, 1u32..72).prop_map(|(a, k)| format!("gb[{a:03}-{:03}]", a + k)),
    ]
}

proptest! {
    #[test]
    fn any_pieces_read_back(pieces in prop::collection::vec(arb_piece(), 0..20)) {
        prop_assert_eq!(decode(&encode(&pieces).to_bytes()), Ok(pieces));
    }

    /// Garbage never panics; whatever is accepted is pieces that save and read back.
    #[test]
    fn any_bytes_are_read_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(pieces) = decode(&bytes) {
            prop_assert_eq!(decode(&encode(&pieces).to_bytes()), Ok(pieces));
        }
    }

    /// A saved list with one byte changed is read as some pieces or refused, never a panic.
    #[test]
    fn one_changed_byte_is_read_or_refused(
        pieces in prop::collection::vec(arb_piece(), 1..6),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut bytes = encode(&pieces).to_bytes();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        if let Ok(read) = decode(&bytes) {
            prop_assert_eq!(decode(&encode(&read).to_bytes()), Ok(read));
        }
    }
}

/// Found by the fuzz target: a format-0 piece holding a newline made a two-line refusal.
#[test]
fn a_refusal_is_one_short_line_whatever_the_piece_holds() {
    let mut bytes = 1u32.to_be_bytes().to_vec();
    let piece = b"18]\ngb-018]\0";
    bytes.extend_from_slice(&(piece.len() as u32).to_be_bytes());
    bytes.extend_from_slice(piece);
    let refused = decode(&bytes).unwrap_err().to_string();
    assert!(!refused.contains('\n'), "{refused}");

    let long = format!("gb[{}", "1".repeat(5000));
    let saved = Saved {
        format_word: FORMAT_1,
        text: format!("{long}\n").into_bytes(),
    };
    let refused = decode(&saved.to_bytes()).unwrap_err().to_string();
    assert!(refused.len() < 200, "{} bytes: {refused}", refused.len());
}
