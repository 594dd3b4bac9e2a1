//! The load generator against roaringd itself, started by the testkit
//! (`$ROARINGD_BIN`, else `roaringd` in this test's cargo target dir, built by
//! `cargo build -p roaringd-server`). The tests skip, saying so, when there is
//! no binary. The bench crate does not depend on the server crate.

mod common;

use common::options;
use roaringd_bench::runner::run;
use roaringd_resp::frame::Frame;
use roaringd_testkit::{default_bin, TestServer};

fn roaringd() -> Option<TestServer> {
    let bin = default_bin();
    if !bin.is_file() {
        eprintln!(
            "no roaringd binary at {} (set ROARINGD_BIN or build roaringd-server): skipping",
            bin.display()
        );
        return None;
    }
    Some(TestServer::start_with(bin, &[]))
}

#[test]
fn incr_counts_match_c_plain_pipelined_and_batched() {
    let Some(server) = roaringd() else { return };
    let port = server.port().to_string();
    for (key, c, extra) in [
        ("plain", "1000", &[][..]),
        ("piped", "1000", &["-P", "16"][..]),
        ("multi", "100", &["-batching", "10"][..]),
    ] {
        let command = format!("INCR {key}");
        let mut args = vec!["-port", &port, "-c", c, "-p", "4", "-command", &command];
        args.extend_from_slice(extra);
        let o = run(&options(&args), |_| {});
        assert_eq!(o.errors, 0, "{key}: {:?}", o.error_samples);
        assert!(o.failures.is_empty(), "{key}: {:?}", o.failures);
        assert_eq!(o.commands, 1000);
        let got = server.client().call(&["GET", key]).unwrap();
        assert_eq!(got, Frame::Bulk(b"1000".to_vec()), "{key}");
    }
}

#[test]
fn wrongtype_errors_from_roaringd_are_counted() {
    let Some(server) = roaringd() else { return };
    server.client().call(&["SET", "s", "x"]).unwrap();
    let port = server.port().to_string();
    let o = run(
        &options(&[
            "-port", &port, "-c", "20", "-p", "2", "-command", "SADD s m",
        ]),
        |_| {},
    );
    assert_eq!((o.requests, o.errors), (20, 20));
    assert!(
        o.error_samples[0].contains("WRONGTYPE"),
        "{:?}",
        o.error_samples
    );
}
