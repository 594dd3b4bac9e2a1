//! Decodes arbitrary bytes with every decoder, then applies the operations
//! they encode to two bitmaps and a `BTreeSet<u32>` model, checking agreement
//! and invariants after every step. The same logic runs deterministically in
//! `cargo test -p roaringd-bitmap` (`fuzz_logic_over_random_byte_strings`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    roaringd_bitmap::testing::fuzz_decode_and_apply(data);
});
