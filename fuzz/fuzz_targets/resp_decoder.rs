//! Feeds arbitrary bytes to the server's request parser, at once and in
//! chunks, under the default, unauthenticated and tiny limits, and to the
//! client-side frame decoder. The same logic runs deterministically in
//! `cargo test -p roaringd-resp` (`request_parser_fuzz_logic_*`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    roaringd_resp::fuzzing::fuzz_request_parser(data);
});
