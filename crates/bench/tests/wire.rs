//! The load generator against a recording test server: what goes on the
//! wire, and what the outcome counts.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{ok, options, recording_server};
use roaringd_bench::runner::{run, Outcome};
use roaringd_resp::frame::Frame;

fn run_quiet(args: &[&str]) -> Outcome {
    run(&options(args), |_| {})
}

fn number(arg: &[u8], prefix: &str) -> u64 {
    let text = std::str::from_utf8(arg).unwrap();
    text.strip_prefix(prefix)
        .unwrap_or_else(|| panic!("{text} lacks {prefix}"))
        .parse()
        .unwrap()
}

#[test]
fn exact_request_count_with_c_is_shared_by_connections() {
    let (port, seen) = recording_server(ok);
    let port = port.to_string();
    let o = run_quiet(&[
        "-port",
        &port,
        "-c",
        "1003",
        "-p",
        "3",
        "-command",
        "SET k-__RAND__ v",
        "-r",
        "50",
    ]);
    assert_eq!((o.requests, o.commands, o.errors), (1003, 1003, 0));
    assert!(o.failures.is_empty(), "{:?}", o.failures);
    assert_eq!(o.latency.count(), 1003);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.connections.len(), 3, "one connection per worker");
    let sets = seen.named("SET");
    assert_eq!(sets.len(), 1003);
    assert_eq!(seen.all().len(), 1003, "nothing but the command");
    for req in &sets {
        assert_eq!(req.len(), 3);
        assert!(number(&req[1], "k-") < 50);
        assert_eq!(req[2], b"v");
    }
}

#[test]
fn random_values_are_distinct_and_within_range() {
    let (port, seen) = recording_server(ok);
    let port = port.to_string();
    let o = run_quiet(&[
        "-port",
        &port,
        "-c",
        "4000",
        "-p",
        "2",
        "-r",
        "1000",
        "-r2",
        "7",
        "-command",
        "TR.SETBIT foo-__RAND__ __RAND2__:__RAND2__",
    ]);
    assert_eq!(o.requests, 4000);
    let seen = seen.lock().unwrap();
    let (mut rand, mut rand2) = (BTreeSet::new(), BTreeSet::new());
    for req in seen.named("TR.SETBIT") {
        let v = number(&req[1], "foo-");
        assert!(v < 1000);
        rand.insert(v);
        let text = String::from_utf8(req[2].clone()).unwrap();
        let (a, b) = text.split_once(':').unwrap();
        for x in [a, b] {
            let x: u64 = x.parse().unwrap();
            assert!(x < 7);
            rand2.insert(x);
        }
    }
    // 4000 uniform draws from 1000 values miss only ~2% of them.
    assert!(
        rand.len() > 900,
        "only {} distinct __RAND__ values",
        rand.len()
    );
    assert_eq!(rand2.len(), 7);
}

#[test]
fn batching_wraps_n_commands_in_multi_exec() {
    let (port, seen) = recording_server(ok);
    let port = port.to_string();
    let o = run_quiet(&[
        "-port",
        &port,
        "-c",
        "50",
        "-p",
        "2",
        "-batching",
        "10",
        "-command",
        "INCR c",
    ]);
    assert_eq!((o.requests, o.commands, o.errors), (50, 500, 0));
    assert_eq!(o.latency.count(), 50, "one timing per transaction");
    let seen = seen.lock().unwrap();
    for conn in &seen.connections {
        assert_eq!(conn.len() % 12, 0);
        for tx in conn.chunks(12) {
            assert_eq!(tx[0], [b"MULTI".to_vec()]);
            for cmd in &tx[1..11] {
                assert_eq!(cmd, &[b"INCR".to_vec(), b"c".to_vec()]);
            }
            assert_eq!(tx[11], [b"EXEC".to_vec()]);
        }
    }
    assert_eq!(seen.named("MULTI").len(), 50);
    assert_eq!(seen.named("EXEC").len(), 50);
    assert_eq!(seen.named("INCR").len(), 500);
}

#[test]
fn pipelining_sends_exactly_c_commands() {
    let (port, seen) = recording_server(ok);
    let port = port.to_string();
    let o = run_quiet(&[
        "-h",
        "localhost",
        "-port",
        &port,
        "-c",
        "1000",
        "-p",
        "3",
        "-P",
        "16",
        "-command",
        "PING",
    ]);
    assert_eq!((o.requests, o.errors), (1000, 0));
    assert_eq!(o.latency.count(), 1000);
    assert_eq!(seen.lock().unwrap().named("PING").len(), 1000);
}

#[test]
fn auth_is_sent_first_on_every_connection() {
    let (port, seen) = recording_server(ok);
    let port = port.to_string();
    run_quiet(&[
        "-port", &port, "-c", "10", "-p", "2", "-a", "alice:pw", "-command", "PING",
    ]);
    run_quiet(&[
        "-port", &port, "-c", "10", "-p", "1", "-a", "secret", "-command", "PING",
    ]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.connections.len(), 3);
    for conn in &seen.connections[..2] {
        assert_eq!(
            conn[0],
            [b"AUTH".to_vec(), b"alice".to_vec(), b"pw".to_vec()]
        );
    }
    assert_eq!(
        seen.connections[2][0],
        [b"AUTH".to_vec(), b"secret".to_vec()]
    );
    assert_eq!(seen.named("PING").len(), 20);
}

fn wrongtype(args: &[Vec<u8>]) -> Frame {
    if args[0] == b"AUTH" {
        Frame::Error(b"WRONGPASS invalid username-password pair".to_vec())
    } else {
        Frame::Error(b"WRONGTYPE Operation against a key holding the wrong kind of value".to_vec())
    }
}

#[test]
fn error_replies_are_counted_and_shown() {
    let (port, _) = recording_server(wrongtype);
    let port = port.to_string();
    let o = run_quiet(&["-port", &port, "-c", "30", "-p", "2", "-command", "GET k"]);
    assert_eq!((o.requests, o.errors), (30, 30));
    assert_eq!(o.error_samples.len(), 5);
    assert!(o.error_samples[0].contains("WRONGTYPE"));
    let o = run_quiet(&[
        "-port",
        &port,
        "-c",
        "4",
        "-p",
        "1",
        "-batching",
        "3",
        "-command",
        "GET k",
    ]);
    assert_eq!(o.errors, 12, "each error element of EXEC counts");
}

#[test]
fn failed_auth_and_refused_connections_are_reported_not_hung() {
    let (port, _) = recording_server(wrongtype);
    let port = port.to_string();
    let o = run_quiet(&["-port", &port, "-c", "10", "-p", "2", "-a", "x"]);
    assert_eq!(o.requests, 0);
    assert_eq!(o.failures.len(), 2);
    assert!(o.failures[0].contains("WRONGPASS"), "{:?}", o.failures);
    let closed = common::free_port().to_string();
    let o = run_quiet(&["-port", &closed, "-c", "10", "-p", "2"]);
    assert_eq!(o.failures.len(), 2);
}

#[test]
fn duration_mode_stops_and_counts_what_the_server_saw() {
    let (port, seen) = recording_server(ok);
    let port = port.to_string();
    let o = run_quiet(&["-port", &port, "-d", "0.2", "-p", "2", "-command", "PING"]);
    assert!(o.requests > 0);
    assert_eq!(o.latency.count(), o.requests);
    assert_eq!(seen.lock().unwrap().named("PING").len() as u64, o.requests);
}

fn bench_binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_roaringd-bench"))
}

#[test]
fn binary_prints_json_report_and_progress_free_stdout() {
    let (port, _) = recording_server(ok);
    let out = bench_binary()
        .args(["-port", &port.to_string(), "-c", "200", "-p", "2", "-json"])
        .args(["-command", "TR.GETBIT foo-__RAND__ 1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    for needle in [
        "\"requests\":200,",
        "\"errors\":0,",
        "\"command\":\"TR.GETBIT foo-__RAND__ 1\"",
        "\"p99_9\":",
        "\"histogram\":[{",
    ] {
        assert!(stdout.contains(needle), "missing {needle} in {stdout}");
    }
}

#[test]
fn binary_text_report_shows_errors_and_exits_1() {
    let (port, _) = recording_server(wrongtype);
    let out = bench_binary()
        .args(["-port", &port.to_string(), "-c", "7", "-p", "1", "-q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "requests:     7",
        "errors:       7",
        "(error) WRONGTYPE",
        "... (2 more)",
        "QPS:",
        "p99.9",
        "|#",
    ] {
        assert!(stdout.contains(needle), "missing {needle} in\n{stdout}");
    }
}

#[test]
fn binary_help_and_bad_flags() {
    for flag in ["--help", "-help"] {
        let out = bench_binary().arg(flag).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("-batching N") && text.contains("-h HOST"));
    }
    let out = bench_binary().args(["-nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown flag -nope"));
}
