//! Turns arbitrary bytes into requests for every row of the command table
//! and runs them through the parser, the pipeline and the dispatcher
//! against an in-process server over an in-memory store, checking replies
//! and the keyspace. The same logic runs deterministically in
//! `cargo test -p roaringd-server` (`dispatch_fuzz_logic_over_random_inputs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    roaringd_server::fuzzing::fuzz_dispatch(data);
});
