//! Durability of bitmap keys: content, summary (TR.STAT), TTL, TYPE and
//! OBJECT ENCODING survive a clean restart (SIGTERM) and, with
//! `appendfsync always`, a SIGKILL right after the acknowledged writes.
//! Single-bit edits of a big container (the write-back tier's, through its
//! log) survive both too.
//! Also: DEL / overwrite leave no visible containers behind after restart,
//! and MEMORY USAGE of a one-bit key at offset 2^31 stays small.

use roaringd_testkit::{Client, Frame, TestServer};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_roaringd")
}

/// Writes a mix of kinds: sparse arrays, a dense bitset block, runs, a bit
/// at the top of the domain; a TTL'd key; a deleted and an overwritten key.
fn populate(c: &mut Client) -> Vec<(String, Frame)> {
    let mut args: Vec<String> = vec!["TR.SETBITS".into(), "mix".into()];
    args.extend((0..6000u32).map(|i| (65_536 + i * 7 % 65_536).to_string()));
    args.extend(["1".into(), "4294967295".into(), "2147483648".into()]);
    assert!(matches!(c.call(&args).unwrap(), Frame::Integer(_)));
    assert!(matches!(
        c.call(&["TR.SETRANGE", "mix", "300000", "400000"]).unwrap(),
        Frame::Integer(_)
    ));
    assert!(matches!(
        c.call(&["TR.CLEARBITS", "mix", "350000"]).unwrap(),
        Frame::Integer(1)
    ));
    assert_eq!(
        c.call(&["TR.OPTIMIZE", "mix"]).unwrap(),
        Frame::Simple(b"OK".to_vec())
    );
    // Single-bit edits of the big block-1 container: a pair in one MULTI,
    // then 130 single edits, sets and clears.
    c.call(&["MULTI"]).unwrap();
    c.call(&["TR.SETBIT", "mix", "70001", "1"]).unwrap();
    c.call(&["TR.SETBIT", "mix", "70003", "1"]).unwrap();
    assert!(matches!(c.call(&["EXEC"]).unwrap(), Frame::Array(_)));
    for i in 0..130u32 {
        let (off, bit) = if i % 3 == 0 {
            (65_536 + i * 7, "0")
        } else {
            (65_536 + i * 7 + 1, "1")
        };
        c.call(&["TR.SETBIT", "mix", &off.to_string(), bit])
            .unwrap();
    }
    c.call(&["TR.SETBITS", "ttl", "5", "6"]).unwrap();
    c.call(&["EXPIRE", "ttl", "1000"]).unwrap();
    c.call(&["TR.SETBITS", "gone", "1", "2", "3"]).unwrap();
    c.call(&["DEL", "gone"]).unwrap();
    c.call(&["TR.SETBITS", "over", "1", "70000", "140000"])
        .unwrap();
    c.call(&["TR.SETINTARRAY", "over", "9"]).unwrap();
    c.call(&["TR.BITOP", "or", "OR", "mix", "over"]).unwrap();
    c.call(&["RENAME", "or", "renamed"]).unwrap();
    snapshot(c)
}

/// Replies that must be identical before and after a restart.
fn snapshot(c: &mut Client) -> Vec<(String, Frame)> {
    let reqs: &[&[&str]] = &[
        &["TR.STAT", "mix"],
        &["TR.STAT", "mix", "JSON"],
        &["TR.BITCOUNT", "mix"],
        &["TR.MIN", "mix"],
        &["TR.MAX", "mix"],
        &[
            "TR.GETBITS",
            "mix",
            "1",
            "65536",
            "350000",
            "4294967295",
            "2147483648",
        ],
        &["TR.RANGE", "mix", "0", "66000"],
        &["TR.RANGE", "mix", "65536", "131071"],
        &["TR.BITCOUNT", "mix", "100000", "4294967295"],
        &["TR.RANGE", "gone", "0", "10"],
        &["EXISTS", "gone"],
        &["TR.RANGE", "over", "0", "4294967295"],
        &["TR.STAT", "renamed", "JSON"],
        &["EXISTS", "or"],
        &["TYPE", "mix"],
        &["OBJECT", "ENCODING", "mix"],
        &["TR.RANGE", "ttl", "0", "10"],
        &["DBSIZE"],
    ];
    reqs.iter()
        .map(|r| (r.join(" "), c.call(r).unwrap()))
        .collect()
}

fn ttl_is_set(c: &mut Client) {
    match c.call(&["TTL", "ttl"]).unwrap() {
        Frame::Integer(t) => assert!(t > 0 && t <= 1000, "ttl {t}"),
        f => panic!("{f:?}"),
    }
}

#[test]
fn bitmaps_survive_a_clean_restart() {
    let mut s = TestServer::start_with(bin(), &[]);
    let before = populate(&mut s.client());
    assert_eq!(before[14].1, Frame::Simple(b"TairRoaring".to_vec()));
    s.terminate();
    s.restart();
    let mut c = s.client();
    assert_eq!(snapshot(&mut c), before);
    ttl_is_set(&mut c);
}

#[test]
fn bitmaps_survive_kill_9_under_appendfsync_always() {
    kill_9_under_always(&[]);
}

/// The same with a tiny container cache (constant eviction).
#[test]
fn bitmaps_survive_kill_9_with_a_tiny_container_cache() {
    kill_9_under_always(&["--container-cache-bytes", "64kb"]);
}

fn kill_9_under_always(extra: &[&str]) {
    let mut args = vec!["--appendfsync", "always"];
    args.extend_from_slice(extra);
    let mut s = TestServer::start_with(bin(), &args);
    let before = populate(&mut s.client());
    s.kill();
    s.restart();
    let mut c = s.client();
    assert_eq!(snapshot(&mut c), before);
    ttl_is_set(&mut c);
    // Writes after recovery still work and keep the summary exact.
    assert_eq!(
        c.call(&["TR.SETBIT", "mix", "2", "1"]).unwrap(),
        Frame::Integer(0)
    );
    let n = match c.call(&["TR.BITCOUNT", "mix"]).unwrap() {
        Frame::Integer(n) => n,
        f => panic!("{f:?}"),
    };
    let all = match c.call(&["TR.RANGE", "mix", "0", "4294967295"]).unwrap() {
        Frame::Array(v) => v.len() as i64,
        f => panic!("{f:?}"),
    };
    assert_eq!(n, all);
}

#[test]
fn one_bit_at_two_to_the_31_is_a_small_key() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    c.call(&["TR.SETBIT", "k", "2147483648", "1"]).unwrap();
    match c.call(&["MEMORY", "USAGE", "k"]).unwrap() {
        Frame::Integer(n) => assert!(n < 100, "MEMORY USAGE {n}"),
        f => panic!("{f:?}"),
    }
}
