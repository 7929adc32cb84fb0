//! A job's saved NVLink pieces (`saved_pieces::decode`) on any bytes, as a damaged or foreign
//! job state would hand them to the plugin. Invariants: no panic; what is accepted is host
//! lists that each name at least one tray and that save and read back unchanged; a refusal
//! displays as one line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvl72_engine::hostlist::count;
use nvl72_engine::saved_pieces::{decode, encode};

fuzz_target!(|data: &[u8]| {
    match decode(data) {
        Ok(pieces) => {
            for p in &pieces {
                assert!(count(p).is_ok_and(|n| n > 0), "{p:?}");
            }
            assert_eq!(decode(&encode(&pieces).to_bytes()).as_ref(), Ok(&pieces));
        }
        Err(why) => assert!(!why.to_string().contains('\n'), "{why}"),
    }
});
