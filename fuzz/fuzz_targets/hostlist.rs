//! Hostlist expressions: `count`, `expand` and `compress` on any text. Invariants:
//! `count` and `expand` agree (same error or same length), every name is non-empty, at most
//! `MAX_NAME_LEN` long and free of separators; `compress` of the names expands back to exactly
//! the distinct names, and compressing that again gives the same text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvl72_engine::hostlist::{compress, count, expand, MAX_NAMES, MAX_NAME_LEN};

/// Larger expansions are only counted: building up to MAX_NAMES strings per input would
/// bring the fuzzer down to a few runs per second (the unit test `too_large` covers them).
const EXPAND_AT_MOST: usize = 256;

fuzz_target!(|data: &[u8]| {
    let Ok(expr) = std::str::from_utf8(data) else {
        return;
    };
    let counted = count(expr);
    if let Ok(n) = counted {
        assert!(n <= MAX_NAMES);
        if n > EXPAND_AT_MOST {
            return;
        }
    }
    let names = match expand(expr) {
        Ok(names) => names,
        Err(e) => {
            assert_eq!(
                counted,
                Err(e.clone()),
                "count and expand disagree on `{expr}`"
            );
            let _ = e.to_string();
            return;
        }
    };
    assert_eq!(counted, Ok(names.len()), "count of `{expr}`");
    for name in &names {
        assert!(
            !name.is_empty() && name.len() <= MAX_NAME_LEN,
            "`{expr}` gave `{name}`"
        );
        assert!(
            !name.contains(|c: char| matches!(c, '[' | ']' | ',') || c.is_whitespace()),
            "`{expr}` gave `{name}`"
        );
    }
    let compressed = compress(&names);
    let back = expand(&compressed)
        .unwrap_or_else(|e| panic!("compress of `{expr}` gives `{compressed}`: {e}"));
    let mut want = names.clone();
    want.sort();
    want.dedup();
    let mut got = back.clone();
    got.sort();
    assert_eq!(got.len(), back.len());
    got.dedup();
    assert_eq!(got.len(), back.len(), "`{compressed}` repeats a name");
    assert_eq!(got, want, "`{expr}` -> `{compressed}`");
    assert_eq!(
        compress(&back),
        compressed,
        "compress is stable on `{expr}`"
    );
});
