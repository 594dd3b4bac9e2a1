//! Feeds arbitrary bytes to the container view, the native bitmap decoder and
//! the portable decoders: each must reject the input or return a valid value.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    roaringd_bitmap::testing::fuzz_decode(data);
});
