//! The load generator against a real Redis 7 (`redis-server` on a free port,
//! no persistence). Each test skips, saying so, if redis-server is missing.

mod common;

use common::{options, Redis};
use roaringd_bench::runner::run;
use roaringd_resp::frame::Frame;

fn redis() -> Option<Redis> {
    let r = Redis::start();
    if r.is_none() {
        eprintln!("redis-server not installed: skipping");
    }
    r
}

fn get_int(redis: &Redis, key: &str) -> i64 {
    match redis.client().call(&["GET", key]).unwrap() {
        Frame::Bulk(b) => String::from_utf8(b).unwrap().parse().unwrap(),
        other => panic!("GET {key}: {other:?}"),
    }
}

#[test]
fn incr_counts_match_c_plain_pipelined_and_batched() {
    let Some(redis) = redis() else { return };
    let port = redis.port.to_string();
    for (key, extra, want) in [
        ("plain", &[][..], 1000),
        ("piped", &["-P", "16"][..], 1000),
        ("multi", &["-batching", "10"][..], 1000),
    ] {
        let c = if extra.first() == Some(&"-batching") {
            "100"
        } else {
            "1000"
        };
        let mut args = vec!["-port", &port, "-c", c, "-p", "4", "-command"];
        let command = format!("INCR {key}");
        args.push(&command);
        args.extend_from_slice(extra);
        let o = run(&options(&args), |_| {});
        assert_eq!(o.errors, 0, "{key}: {:?}", o.error_samples);
        assert!(o.failures.is_empty(), "{key}: {:?}", o.failures);
        assert_eq!(get_int(&redis, key), want, "{key}");
        assert_eq!(o.commands, 1000);
    }
}

#[test]
fn placeholders_reach_redis_within_range() {
    let Some(redis) = redis() else { return };
    let port = redis.port.to_string();
    let o = run(
        &options(&[
            "-port",
            &port,
            "-c",
            "3000",
            "-p",
            "3",
            "-r",
            "200",
            "-r2",
            "5",
            "-command",
            "SADD set-__RAND2__ m-__RAND__",
        ]),
        |_| {},
    );
    assert_eq!(o.errors, 0);
    let mut c = redis.client();
    let keys = c.call(&["KEYS", "set-*"]).unwrap();
    assert_eq!(keys.as_items().unwrap().len(), 5);
    let mut total = 0;
    for k in 0..5 {
        let members = c.call(&["SMEMBERS", &format!("set-{k}")]).unwrap();
        for m in members.as_items().unwrap() {
            let text = std::str::from_utf8(m.as_bytes().unwrap()).unwrap();
            let v: u64 = text.strip_prefix("m-").unwrap().parse().unwrap();
            assert!(v < 200);
            total += 1;
        }
    }
    // 600 draws per set from 200 values: nearly all present.
    assert!(total > 900, "{total}");
}

#[test]
fn wrongtype_errors_from_redis_are_counted() {
    let Some(redis) = redis() else { return };
    redis.client().call(&["SET", "s", "x"]).unwrap();
    let port = redis.port.to_string();
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
    // Inside MULTI, Redis reports WRONGTYPE per element of EXEC's reply.
    let o = run(
        &options(&[
            "-port",
            &port,
            "-c",
            "3",
            "-p",
            "1",
            "-batching",
            "4",
            "-command",
            "SADD s m",
        ]),
        |_| {},
    );
    assert_eq!(o.errors, 12);
    // An unknown command aborts the transaction: one error when queued, one EXECABORT.
    let o = run(
        &options(&[
            "-port",
            &port,
            "-c",
            "2",
            "-p",
            "1",
            "-batching",
            "2",
            "-command",
            "NOPE",
        ]),
        |_| {},
    );
    assert_eq!(o.errors, 2 * 3);
    assert!(o.error_samples.iter().any(|e| e.contains("EXECABORT")));
}

#[test]
fn auth_against_redis_with_a_password() {
    let Some(redis) = redis() else { return };
    redis
        .client()
        .call(&["CONFIG", "SET", "requirepass", "pw"])
        .unwrap();
    let port = redis.port.to_string();
    for auth in ["pw", "default:pw"] {
        let o = run(
            &options(&["-port", &port, "-c", "10", "-a", auth, "-command", "PING"]),
            |_| {},
        );
        assert_eq!((o.requests, o.errors), (10, 0), "{auth}: {:?}", o.failures);
    }
    let o = run(
        &options(&["-port", &port, "-c", "10", "-a", "bad", "-command", "PING"]),
        |_| {},
    );
    assert_eq!(o.requests, 0);
    assert_eq!(o.failures.len(), 4);
}
