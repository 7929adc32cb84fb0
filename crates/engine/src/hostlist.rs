//! Slurm hostlist expressions (`gb[001-018,020]`), so admins can write racks the way they
//! already write them in slurm.conf.
//!
//! Follows Slurm: commas (and whitespace) outside brackets separate items, every bracket
//! group multiplies the names out in order, and a range keeps the zero-padding width of its
//! lower bound. Everything returns errors instead of panicking, because the input comes from
//! hand-edited files.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt::Write as _;

/// Upper bound on names one expression may produce; a typo like `[1-99999999]` must fail
/// fast instead of eating slurmctld's memory.
pub const MAX_NAMES: usize = 1_000_000;

/// Upper bound on the length of one produced name (DNS allows 253); together with
/// [`MAX_NAMES`] it bounds the memory an expansion can take.
pub const MAX_NAME_LEN: usize = 255;

/// Why an expression could not be expanded. Every variant names the offending text so the
/// config loader can pass the message straight to the admin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    #[error("unbalanced brackets in `{text}`: {reason}")]
    Unbalanced { text: String, reason: &'static str },
    #[error("bad range `{range}` in `{item}`: {reason}")]
    BadRange {
        item: String,
        range: String,
        reason: &'static str,
    },
    #[error("`{text}` expands to more than {limit} names")]
    TooLarge { text: String, limit: usize },
    #[error("`{item}` makes names longer than {limit} characters")]
    TooLong { item: String, limit: usize },
}

/// Expands `expr` into host names, in order, duplicates kept (the caller decides whether a
/// duplicate is an error). Empty items (`a,,b`, trailing commas) are skipped.
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    let items = parse(expr)?;
    let total = total_count(expr, &items)?;
    let mut out = Vec::with_capacity(total);
    for item in &items {
        expand_item(item, &mut out);
    }
    Ok(out)
}

/// Number of names `expr` expands to, without building them, so callers can reject
/// oversized input before allocating.
pub fn count(expr: &str) -> Result<usize, HostlistError> {
    total_count(expr, &parse(expr)?)
}

/// Compresses names into a Slurm hostlist expression, the inverse of [`expand`].
///
/// Names are grouped by the text before their trailing digits, groups keep their order of
/// first appearance, and numbers inside a group are sorted and deduplicated into ranges.
/// Names without trailing digits are listed as they are (once). Names containing `[`, `]`,
/// `,` or whitespace cannot be expressed and are emitted verbatim.
pub fn compress<S: AsRef<str>>(names: &[S]) -> String {
    // (prefix, numbers) for numbered names; (name, []) for names without trailing digits.
    let mut groups: Vec<(&str, Vec<(u64, &str)>)> = Vec::new();
    let mut index: HashMap<(bool, &str), usize> = HashMap::new();
    for name in names {
        let name = name.as_ref();
        if name.is_empty() {
            continue;
        }
        let (key, number) = match split_number(name) {
            Some((prefix, digits, value)) => ((true, prefix), Some((value, digits))),
            None => ((false, name), None),
        };
        let i = *index.entry(key).or_insert_with(|| {
            groups.push((key.1, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.extend(number);
    }

    let mut out = String::new();
    for (text, nums) in &mut groups {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(text);
        if !nums.is_empty() {
            // Same value with different padding (`n1`, `n01`) are different hosts.
            nums.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.len().cmp(&b.1.len())));
            nums.dedup_by(|a, b| a.1 == b.1);
            if let [(_, digits)] = nums.as_slice() {
                out.push_str(digits);
            } else {
                out.push('[');
                push_ranges(&mut out, nums);
                out.push(']');
            }
        }
    }
    out
}

/// Writes sorted numbers as `lo-hi` runs. A run only grows while the next number prints
/// exactly as given at the run's width, because [`expand`] pads the whole run to the width
/// of its lower bound.
fn push_ranges(out: &mut String, nums: &[(u64, &str)]) {
    let mut i = 0;
    while i < nums.len() {
        let lo_text = nums[i].1;
        let width = lo_text.len();
        let mut j = i;
        while j + 1 < nums.len() {
            let (next, next_text) = nums[j + 1];
            if nums[j].0.checked_add(1) != Some(next) || format!("{next:0width$}") != next_text {
                break;
            }
            j += 1;
        }
        if i > 0 {
            out.push(',');
        }
        out.push_str(lo_text);
        if j > i {
            let _ = write!(out, "-{}", nums[j].1);
        }
        i = j + 1;
    }
}

/// Splits `gb007` into (`gb`, `007`, 7). `None` if there are no trailing digits or they do
/// not fit in a u64 (such a name is then treated as plain text).
fn split_number(name: &str) -> Option<(&str, &str, u64)> {
    let prefix_len = name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let digits = &name[prefix_len..];
    if digits.is_empty() {
        return None;
    }
    let value = digits.parse().ok()?;
    Some((&name[..prefix_len], digits, value))
}

/// One item: literal text interleaved with bracket groups.
#[derive(Debug)]
enum Part<'a> {
    Text(&'a str),
    Ranges(Vec<Range>),
}

#[derive(Debug)]
struct Range {
    lo: u64,
    hi: u64,
    width: usize,
}

impl Range {
    /// `None` only for the full u64 range, which is far over [`MAX_NAMES`] anyway.
    fn len(&self) -> Option<u64> {
        (self.hi - self.lo).checked_add(1)
    }
}

/// Splits into items and parses each one; only the text is borrowed.
fn parse(expr: &str) -> Result<Vec<Vec<Part<'_>>>, HostlistError> {
    let mut items = Vec::new();
    for item in split_items(expr)? {
        items.push(parse_item(item)?);
    }
    Ok(items)
}

/// Top-level split on commas and whitespace, checking bracket balance on the way.
fn split_items(expr: &str) -> Result<Vec<&str>, HostlistError> {
    let unbalanced = |from: usize, to: usize, reason| HostlistError::Unbalanced {
        text: expr[from..to].trim().to_string(),
        reason,
    };
    let mut items = Vec::new();
    let mut start = 0;
    let mut open: Option<usize> = None;
    for (i, c) in expr.char_indices() {
        match c {
            '[' if open.is_some() => {
                return Err(unbalanced(start, expr.len(), "nested `[`"));
            }
            '[' => open = Some(i),
            ']' if open.is_none() => {
                let end = expr[i..].find(',').map_or(expr.len(), |n| i + n);
                return Err(unbalanced(start, end, "`]` without `[`"));
            }
            ']' => open = None,
            c if open.is_none() && (c == ',' || c.is_whitespace()) => {
                items.push(&expr[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    if open.is_some() {
        return Err(unbalanced(start, expr.len(), "`[` without `]`"));
    }
    items.push(&expr[start..]);
    items.retain(|item| !item.is_empty());
    Ok(items)
}

fn parse_item(item: &str) -> Result<Vec<Part<'_>>, HostlistError> {
    let mut parts = Vec::new();
    let mut rest = item;
    // split_items guarantees brackets are balanced and not nested.
    while let Some(open) = rest.find('[') {
        let close = match rest[open..].find(']') {
            Some(n) => open + n,
            None => {
                return Err(HostlistError::Unbalanced {
                    text: item.to_string(),
                    reason: "`[` without `]`",
                })
            }
        };
        if open > 0 {
            parts.push(Part::Text(&rest[..open]));
        }
        parts.push(Part::Ranges(parse_ranges(item, &rest[open + 1..close])?));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    let longest: usize = parts
        .iter()
        .map(|part| match part {
            Part::Text(text) => text.len(),
            Part::Ranges(ranges) => ranges
                .iter()
                .map(|r| r.width.max(digits(r.hi)))
                .max()
                .unwrap_or(0),
        })
        .fold(0, usize::saturating_add);
    if longest > MAX_NAME_LEN {
        return Err(HostlistError::TooLong {
            item: item.to_string(),
            limit: MAX_NAME_LEN,
        });
    }
    Ok(parts)
}

fn digits(mut n: u64) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

/// Parses the inside of one bracket group, e.g. `001-003,007`.
fn parse_ranges(item: &str, inner: &str) -> Result<Vec<Range>, HostlistError> {
    let bad = |range: &str, reason| HostlistError::BadRange {
        item: item.to_string(),
        range: range.to_string(),
        reason,
    };
    let mut ranges = Vec::new();
    for spec in inner.split(',') {
        let trimmed = spec.trim();
        if trimmed.is_empty() {
            return Err(bad(spec, "empty range"));
        }
        let (lo_text, hi_text) = match trimmed.split_once('-') {
            Some((lo, hi)) => (lo.trim(), hi.trim()),
            None => (trimmed, trimmed),
        };
        let number = |text: &str| -> Result<u64, HostlistError> {
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(
                    trimmed,
                    "expected a number or `lo-hi` of decimal digits",
                ));
            }
            text.parse().map_err(|_| bad(trimmed, "number too large"))
        };
        let lo = number(lo_text)?;
        let hi = number(hi_text)?;
        if hi < lo {
            return Err(bad(trimmed, "upper bound is below lower bound"));
        }
        ranges.push(Range {
            lo,
            hi,
            width: lo_text.len(),
        });
    }
    Ok(ranges)
}

fn total_count(expr: &str, items: &[Vec<Part<'_>>]) -> Result<usize, HostlistError> {
    let too_large = || HostlistError::TooLarge {
        text: expr.trim().to_string(),
        limit: MAX_NAMES,
    };
    let mut total: u64 = 0;
    for item in items {
        let mut n: u64 = 1;
        for part in item {
            if let Part::Ranges(ranges) = part {
                let mut group: u64 = 0;
                for r in ranges {
                    group = r
                        .len()
                        .and_then(|n| group.checked_add(n))
                        .ok_or_else(too_large)?;
                }
                n = n.checked_mul(group).ok_or_else(too_large)?;
            }
        }
        total = total.checked_add(n).ok_or_else(too_large)?;
        if total > MAX_NAMES as u64 {
            return Err(too_large());
        }
    }
    usize::try_from(total).map_err(|_| too_large())
}

/// Cartesian product of the item's bracket groups, leftmost group varying slowest.
fn expand_item(item: &[Part<'_>], out: &mut Vec<String>) {
    let mut names = vec![String::new()];
    for part in item {
        match part {
            Part::Text(text) => names.iter_mut().for_each(|n| n.push_str(text)),
            Part::Ranges(ranges) => {
                let mut next = Vec::new();
                for name in &names {
                    for r in ranges {
                        for v in r.lo..=r.hi {
                            let mut s = name.clone();
                            let _ = write!(s, "{v:0w$}", w = r.width);
                            next.push(s);
                        }
                    }
                }
                names = next;
            }
        }
    }
    out.extend(names);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ex(expr: &str) -> Vec<String> {
        expand(expr).unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    #[test]
    fn expands_plain_names_and_ranges() {
        assert_eq!(ex("node7"), ["node7"]);
        assert_eq!(ex("gb[001-003]"), ["gb001", "gb002", "gb003"]);
        assert_eq!(ex("gb[001-003,007]"), ["gb001", "gb002", "gb003", "gb007"]);
        assert_eq!(ex("rack1-n[1-2]"), ["rack1-n1", "rack1-n2"]);
        assert_eq!(ex("a,b , c"), ["a", "b", "c"]);
        assert_eq!(ex("[1-2]x"), ["1x", "2x"]);
    }

    #[test]
    fn keeps_width_of_lower_bound() {
        assert_eq!(ex("n[08-11]"), ["n08", "n09", "n10", "n11"]);
        assert_eq!(ex("n[1-3]"), ["n1", "n2", "n3"]);
        assert_eq!(ex("n[9-10]"), ["n9", "n10"]);
        assert_eq!(ex("n[098-101]"), ["n098", "n099", "n100", "n101"]);
        assert_eq!(ex("n[0-1]"), ["n0", "n1"]);
    }

    #[test]
    fn cartesian_product_in_order() {
        assert_eq!(ex("a[1-2]b[3-4]"), ["a1b3", "a1b4", "a2b3", "a2b4"]);
        assert_eq!(ex("a[1-2]b[3-4],c"), ["a1b3", "a1b4", "a2b3", "a2b4", "c"]);
    }

    #[test]
    fn empty_items_and_duplicates() {
        assert!(ex("").is_empty());
        assert!(ex("  ").is_empty());
        assert!(ex(",").is_empty());
        assert_eq!(ex("a,,b,"), ["a", "b"]);
        assert_eq!(ex("a,a,n[1-2],n2"), ["a", "a", "n1", "n2", "n2"]);
        assert_eq!(ex("a b\tc\n"), ["a", "b", "c"]);
        assert_eq!(ex("n[1 - 2, 4]"), ["n1", "n2", "n4"]);
    }

    #[test]
    fn unbalanced_brackets() {
        for (expr, text) in [
            ("gb[001-003", "gb[001-003"),
            ("ok,gb001-003],x", "gb001-003]"),
            ("a[1[2]]", "a[1[2]]"),
            ("a[1-2]]", "a[1-2]]"),
        ] {
            let err = expand(expr).unwrap_err();
            assert!(
                matches!(err, HostlistError::Unbalanced { .. }),
                "{expr}: {err}"
            );
            assert!(err.to_string().contains(&format!("`{text}`")), "{err}");
        }
    }

    #[test]
    fn bad_ranges() {
        for (expr, range) in [
            ("gb[5-2]", "5-2"),
            ("gb[a-2]", "a-2"),
            ("gb[1-]", "1-"),
            ("gb[]", ""),
            ("gb[1,,2]", ""),
            ("gb[1-2-3]", "1-2-3"),
            ("gb[-1]", "-1"),
            ("gb[99999999999999999999999]", "99999999999999999999999"),
        ] {
            let err = expand(expr).unwrap_err();
            assert!(
                matches!(err, HostlistError::BadRange { .. }),
                "{expr}: {err}"
            );
            let msg = err.to_string();
            assert!(msg.contains(&format!("`{range}`")), "{msg}");
            assert!(msg.contains(&format!("`{expr}`")), "{msg}");
        }
    }

    #[test]
    fn too_large() {
        let err = expand("n[1-1000001]").unwrap_err();
        assert!(matches!(err, HostlistError::TooLarge { .. }));
        assert!(err.to_string().contains("n[1-1000001]"));
        assert!(expand("n[0-18446744073709551615]").is_err());
        assert!(expand("a[1-1000]b[1-1000]c[1-2]").is_err());
        assert!(expand("n[1-600000],m[1-600000]").is_err());
        assert_eq!(count("n[1-1000000]"), Ok(1_000_000));
        assert_eq!(count("a[1-3]b[1-2],c"), Ok(7));
    }

    #[test]
    fn too_long() {
        let long = "x".repeat(MAX_NAME_LEN);
        assert_eq!(ex(&long), std::slice::from_ref(&long));
        let err = expand(&format!("{long}y")).unwrap_err();
        assert!(matches!(err, HostlistError::TooLong { .. }), "{err}");
        let prefix = "x".repeat(MAX_NAME_LEN - 2);
        assert_eq!(ex(&format!("{prefix}[98-99]")).len(), 2);
        assert!(expand(&format!("{prefix}[98-100]")).is_err());
        assert!(expand(&format!("n[{}1-2]", "0".repeat(MAX_NAME_LEN))).is_err());
        assert!(count(&format!("{long}[1-2]")).is_err());
    }

    #[test]
    fn compresses_slurm_style() {
        assert_eq!(
            compress(&["gb001", "gb002", "gb003", "gb007"]),
            "gb[001-003,007]"
        );
        assert_eq!(compress(&["gb005"]), "gb005");
        assert_eq!(compress(&["gb005", "gb005"]), "gb005");
        assert_eq!(
            compress(&["login", "gb002", "gb001", "cpu1", "login"]),
            "login,gb[001-002],cpu1"
        );
        assert_eq!(compress(&["n9", "n10", "n11"]), "n[9-11]");
        assert_eq!(compress(&["n099", "n100"]), "n[099-100]");
        assert_eq!(compress(&["n08", "n9", "n10"]), "n[08,9-10]");
        assert_eq!(compress(&["n1", "n01"]), "n[1,01]");
        assert_eq!(compress::<&str>(&[]), "");
        assert_eq!(compress(&["", "a"]), "a");
        assert_eq!(compress(&["7", "8"]), "[7-8]");
    }

    #[test]
    fn compress_round_trips_odd_padding() {
        for names in [
            &["n1", "n01", "n001", "n2", "n02"][..],
            &["n08", "n9", "n10", "n010"],
            &["x0", "x00", "x1"],
            &[
                "n18446744073709551615",
                "n18446744073709551614",
                "n99999999999999999999999",
            ],
        ] {
            let back = ex(&compress(names));
            let mut want: Vec<&str> = names.to_vec();
            want.sort();
            let mut got: Vec<&str> = back.iter().map(String::as_str).collect();
            got.sort();
            assert_eq!(got, want, "{}", compress(names));
        }
    }

    proptest! {
        #[test]
        fn expand_compress_round_trip(
            raw in proptest::collection::vec(
                (0usize..5, 0u64..300, 1usize..5),
                0..60,
            )
        ) {
            const PREFIXES: [&str; 5] = ["gb", "n", "rack1-n", "a.b_", "login"];
            let names: Vec<String> = raw
                .iter()
                .map(|&(p, n, w)| {
                    if p == 4 { "login".to_string() } else { format!("{}{n:0w$}", PREFIXES[p]) }
                })
                .collect();
            let compressed = compress(&names);
            let back = expand(&compressed).unwrap();
            let mut want = names.clone();
            want.sort();
            want.dedup();
            let mut got = back.clone();
            got.sort();
            got.dedup();
            prop_assert_eq!(got.len(), back.len(), "no name twice");
            prop_assert_eq!(got, want);
            prop_assert_eq!(compress(&back), compressed);
        }

        #[test]
        fn expand_never_panics(s in "[a-c0-9\\[\\],\\- ]{0,24}") {
            let _ = expand(&s);
            let _ = count(&s);
        }
    }
}
