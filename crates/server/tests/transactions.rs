//! MULTI / EXEC / DISCARD / WATCH over the wire, with two connections.

use roaringd_testkit::{Frame, TestServer};

fn server() -> TestServer {
    TestServer::start_with(env!("CARGO_BIN_EXE_roaringd"), &[])
}

/// A server with more workers than cores (the default is half the cores),
/// so that concurrent clients' commands really run in parallel.
fn parallel_server() -> TestServer {
    TestServer::start_with(env!("CARGO_BIN_EXE_roaringd"), &["--io-threads", "4"])
}

fn ok() -> Frame {
    Frame::Simple(b"OK".to_vec())
}

fn queued() -> Frame {
    Frame::Simple(b"QUEUED".to_vec())
}

fn err(text: &str) -> Frame {
    Frame::Error(text.as_bytes().to_vec())
}

#[test]
fn multi_errors_follow_redis() {
    let s = server();
    let mut c = s.client();
    assert_eq!(c.call(&["EXEC"]).unwrap(), err("ERR EXEC without MULTI"));
    assert_eq!(
        c.call(&["DISCARD"]).unwrap(),
        err("ERR DISCARD without MULTI")
    );
    assert_eq!(c.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(
        c.call(&["MULTI"]).unwrap(),
        err("ERR MULTI calls can not be nested")
    );
    assert_eq!(
        c.call(&["WATCH", "k"]).unwrap(),
        err("ERR WATCH inside MULTI is not allowed")
    );
    assert_eq!(c.call(&["PING"]).unwrap(), queued());
    assert_eq!(c.call(&["ECHO", "x"]).unwrap(), queued());
    assert_eq!(
        c.call(&["EXEC"]).unwrap(),
        Frame::Array(vec![
            Frame::Simple(b"PONG".to_vec()),
            Frame::Bulk(b"x".to_vec())
        ])
    );
    assert_eq!(c.call(&["MULTI"]).unwrap(), ok());
    assert!(c.call(&["NOSUCH"]).unwrap().is_error());
    assert_eq!(c.call(&["PING"]).unwrap(), queued());
    assert_eq!(
        c.call(&["EXEC"]).unwrap(),
        err("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(c.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(
        c.call(&["SAVE"]).unwrap(),
        err("ERR Command not allowed inside a transaction")
    );
    assert_eq!(c.call(&["DISCARD"]).unwrap(), ok());
    assert_eq!(c.call(&["PING"]).unwrap(), Frame::Simple(b"PONG".to_vec()));
}

#[test]
fn runtime_errors_inside_exec_are_per_command() {
    let s = server();
    let mut c = s.client();
    assert_eq!(c.call(&["SET", "s", "abc"]).unwrap(), ok());
    assert_eq!(c.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(c.call(&["INCR", "s"]).unwrap(), queued());
    assert_eq!(c.call(&["SET", "t", "1"]).unwrap(), queued());
    let r = c.call(&["EXEC"]).unwrap();
    let items = r.as_items().unwrap();
    assert!(items[0].is_error());
    assert_eq!(items[1], ok());
    assert_eq!(c.call(&["GET", "t"]).unwrap(), Frame::Bulk(b"1".to_vec()));
}

#[test]
fn watched_key_modified_by_another_client_aborts_exec() {
    let s = server();
    let mut a = s.client();
    let mut b = s.client();
    assert_eq!(a.call(&["WATCH", "k"]).unwrap(), ok());
    assert_eq!(b.call(&["SET", "k", "other"]).unwrap(), ok());
    assert_eq!(a.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(a.call(&["SET", "k", "mine"]).unwrap(), queued());
    assert_eq!(a.call(&["EXEC"]).unwrap(), Frame::NullArray);
    assert_eq!(
        a.call(&["GET", "k"]).unwrap(),
        Frame::Bulk(b"other".to_vec())
    );
    // RESP3: the aborted EXEC is `_`.
    assert!(matches!(a.call(&["HELLO", "3"]).unwrap(), Frame::Map(_)));
    assert_eq!(a.call(&["WATCH", "k"]).unwrap(), ok());
    assert_eq!(b.call(&["SET", "k", "again"]).unwrap(), ok());
    assert_eq!(a.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(a.call(&["PING"]).unwrap(), queued());
    assert_eq!(a.call(&["EXEC"]).unwrap(), Frame::Null);
}

#[test]
fn unmodified_watch_and_unwatch_let_exec_run() {
    let s = server();
    let mut a = s.client();
    let mut b = s.client();
    assert_eq!(a.call(&["WATCH", "k"]).unwrap(), ok());
    assert_eq!(b.call(&["SET", "other", "x"]).unwrap(), ok());
    assert_eq!(a.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(a.call(&["SET", "k", "v"]).unwrap(), queued());
    assert_eq!(a.call(&["EXEC"]).unwrap(), Frame::Array(vec![ok()]));
    assert_eq!(a.call(&["WATCH", "k"]).unwrap(), ok());
    assert_eq!(b.call(&["SET", "k", "x"]).unwrap(), ok());
    assert_eq!(a.call(&["UNWATCH"]).unwrap(), ok());
    assert_eq!(a.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(a.call(&["GET", "k"]).unwrap(), queued());
    assert_eq!(
        a.call(&["EXEC"]).unwrap(),
        Frame::Array(vec![Frame::Bulk(b"x".to_vec())])
    );
}

#[test]
fn flushall_touches_watched_keys_that_exist() {
    let s = server();
    let mut a = s.client();
    let mut b = s.client();
    assert_eq!(a.call(&["SET", "k", "v"]).unwrap(), ok());
    assert_eq!(a.call(&["WATCH", "k"]).unwrap(), ok());
    assert_eq!(b.call(&["FLUSHALL"]).unwrap(), ok());
    assert_eq!(a.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(a.call(&["PING"]).unwrap(), queued());
    assert_eq!(a.call(&["EXEC"]).unwrap(), Frame::NullArray);
    // A watched key that did not exist is not touched by a flush.
    assert_eq!(a.call(&["WATCH", "nokey"]).unwrap(), ok());
    assert_eq!(b.call(&["FLUSHDB"]).unwrap(), ok());
    assert_eq!(a.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(a.call(&["PING"]).unwrap(), queued());
    assert_eq!(
        a.call(&["EXEC"]).unwrap(),
        Frame::Array(vec![Frame::Simple(b"PONG".to_vec())])
    );
}

#[test]
fn exec_is_atomic_for_other_clients() {
    let s = parallel_server();
    let mut setup = s.client();
    assert_eq!(setup.call(&["SET", "a", "0"]).unwrap(), ok());
    assert_eq!(setup.call(&["SET", "b", "0"]).unwrap(), ok());
    let addr = s.addr();
    let writer = std::thread::spawn(move || {
        let mut c = roaringd_testkit::Client::connect(addr).unwrap();
        for _ in 0..300 {
            c.call(&["MULTI"]).unwrap();
            c.call(&["INCR", "a"]).unwrap();
            c.call(&["INCR", "b"]).unwrap();
            c.call(&["EXEC"]).unwrap();
        }
    });
    let mut r = s.client();
    for _ in 0..300 {
        r.call(&["MULTI"]).unwrap();
        r.call(&["GET", "a"]).unwrap();
        r.call(&["GET", "b"]).unwrap();
        let v = r.call(&["EXEC"]).unwrap();
        let items = v.as_items().unwrap();
        assert_eq!(items[0], items[1], "saw a half-applied EXEC");
    }
    writer.join().unwrap();
}

#[test]
fn select_inside_multi_applies_to_later_commands() {
    let s = server();
    let mut c = s.client();
    assert_eq!(c.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(c.call(&["SELECT", "2"]).unwrap(), queued());
    assert_eq!(c.call(&["SET", "k", "in2"]).unwrap(), queued());
    assert_eq!(c.call(&["EXEC"]).unwrap(), Frame::Array(vec![ok(), ok()]));
    assert_eq!(c.call(&["GET", "k"]).unwrap(), Frame::Bulk(b"in2".to_vec()));
    assert_eq!(c.call(&["SELECT", "0"]).unwrap(), ok());
    assert_eq!(c.call(&["GET", "k"]).unwrap(), Frame::NullBulk);
}

#[test]
fn watched_key_that_expires_before_exec_aborts_it() {
    let s = server();
    let mut c = s.client();
    assert_eq!(c.call(&["SET", "k", "v", "PX", "100"]).unwrap(), ok());
    assert_eq!(c.call(&["WATCH", "k"]).unwrap(), ok());
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(c.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(c.call(&["PING"]).unwrap(), queued());
    assert_eq!(c.call(&["EXEC"]).unwrap(), Frame::NullArray);
    // Already expired at WATCH time: not a modification.
    assert_eq!(c.call(&["SET", "k2", "v", "PX", "20"]).unwrap(), ok());
    std::thread::sleep(std::time::Duration::from_millis(60));
    assert_eq!(c.call(&["WATCH", "k2"]).unwrap(), ok());
    assert_eq!(c.call(&["MULTI"]).unwrap(), ok());
    assert_eq!(c.call(&["PING"]).unwrap(), queued());
    assert_eq!(
        c.call(&["EXEC"]).unwrap(),
        Frame::Array(vec![Frame::Simple(b"PONG".to_vec())])
    );
}

#[test]
fn optimistic_locking_loses_no_update() {
    let s = parallel_server();
    let mut c = s.client();
    assert_eq!(c.call(&["SET", "cnt", "0"]).unwrap(), ok());
    let addr = s.addr();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = roaringd_testkit::Client::connect(addr).unwrap();
                let mut done = 0;
                while done < 50 {
                    c.call(&["WATCH", "cnt"]).unwrap();
                    let v: i64 = String::from_utf8(
                        c.call(&["GET", "cnt"])
                            .unwrap()
                            .as_bytes()
                            .unwrap()
                            .to_vec(),
                    )
                    .unwrap()
                    .parse()
                    .unwrap();
                    c.call(&["MULTI"]).unwrap();
                    c.call(&["SET", "cnt", &(v + 1).to_string()]).unwrap();
                    if c.call(&["EXEC"]).unwrap() != Frame::NullArray {
                        done += 1;
                    }
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    assert_eq!(
        c.call(&["GET", "cnt"]).unwrap(),
        Frame::Bulk(b"200".to_vec())
    );
}
