//! Bitmap keys under the generic keyspace commands and across families:
//! WRONGTYPE both ways, TYPE / SCAN TYPE, OBJECT ENCODING, MEMORY USAGE,
//! EXPIRE / TTL / PERSIST, RENAME, SELECT, FLUSHDB, MULTI/EXEC with WATCH,
//! COMMAND INFO / GETKEYS of the TR rows, RESP3 replies, and the reply-size
//! ceiling (`tr-max-reply-bytes`).

use roaringd_testkit::{Client, Frame, TestServer};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_roaringd")
}

fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

fn ok() -> Frame {
    Frame::Simple(b"OK".to_vec())
}

fn status(s: &str) -> Frame {
    Frame::Simple(s.as_bytes().to_vec())
}

fn err(t: &str) -> Frame {
    Frame::Error(t.as_bytes().to_vec())
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const OUT_OF_RANGE: &str = "ERR invalid arguments, maybe out of range or illegal";

fn call(c: &mut Client, args: &[&str]) -> Frame {
    c.call(args).unwrap()
}

/// `cmd key` followed by every one of `rest` (a long argument list).
fn call_with(c: &mut Client, cmd: &str, key: &str, rest: &[String]) -> Frame {
    let mut args = vec![cmd, key];
    args.extend(rest.iter().map(String::as_str));
    call(c, &args)
}

#[test]
fn wrongtype_across_families_and_generic_commands() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    assert_eq!(call(&mut c, &["TR.SETBITS", "b", "1", "70000"]), int(2));
    assert_eq!(call(&mut c, &["SADD", "set", "x"]), int(1));
    assert_eq!(call(&mut c, &["HSET", "h", "f", "v"]), int(1));
    for req in [
        &["GET", "b"][..],
        &["SADD", "b", "x"],
        &["HGET", "b", "f"],
        &["APPEND", "b", "x"],
        &["SMEMBERS", "b"],
    ] {
        assert_eq!(call(&mut c, req), err(WRONGTYPE), "{req:?}");
    }
    for req in [
        &["TR.GETBIT", "set", "1"][..],
        &["TR.SETBIT", "h", "1", "1"],
        &["TR.BITCOUNT", "h"],
        &["TR.CONTAINS", "b", "set"],
        &["TR.JACCARD", "set", "b"],
        &["TR.BITOPCARD", "OR", "b", "h"],
        &["TR.STAT", "set"],
        &["TR.EXPORT", "set"],
    ] {
        assert_eq!(call(&mut c, req), err(WRONGTYPE), "{req:?}");
    }
    // Nothing changed by the refused writes.
    assert_eq!(call(&mut c, &["TR.BITCOUNT", "b"]), int(2));
    assert_eq!(call(&mut c, &["TYPE", "b"]), status("TairRoaring"));
    assert_eq!(
        call(&mut c, &["OBJECT", "ENCODING", "b"]),
        Frame::Bulk(b"roaring".to_vec())
    );
    match call(&mut c, &["MEMORY", "USAGE", "b"]) {
        Frame::Integer(n) => assert!(n > 0 && n < 200, "{n}"),
        f => panic!("{f:?}"),
    }
    let scan = call(
        &mut c,
        &["SCAN", "0", "TYPE", "TairRoaring", "COUNT", "100"],
    );
    assert_eq!(
        scan,
        Frame::Array(vec![
            Frame::Bulk(b"0".to_vec()),
            Frame::Array(vec![Frame::Bulk(b"b".to_vec())])
        ])
    );
    // EXPIRE / TTL / PERSIST, RENAME keeps content and TTL.
    assert_eq!(call(&mut c, &["EXPIRE", "b", "100"]), int(1));
    assert_eq!(call(&mut c, &["RENAME", "b", "b2"]), ok());
    assert!(matches!(call(&mut c, &["TTL", "b2"]), Frame::Integer(t) if t > 0 && t <= 100));
    assert_eq!(
        call(&mut c, &["TR.RANGE", "b2", "0", "100000"]),
        Frame::Array(vec![int(1), int(70000)])
    );
    assert_eq!(call(&mut c, &["PERSIST", "b2"]), int(1));
    assert_eq!(call(&mut c, &["TTL", "b2"]), int(-1));
    // TR.SETBITS keeps a TTL; whole-value replacements drop it (open point 14).
    assert_eq!(call(&mut c, &["EXPIRE", "b2", "100"]), int(1));
    assert_eq!(call(&mut c, &["TR.SETBITS", "b2", "5"]), int(3));
    assert!(matches!(call(&mut c, &["TTL", "b2"]), Frame::Integer(t) if t > 0));
    assert_eq!(call(&mut c, &["TR.SETINTARRAY", "b2", "5"]), ok());
    assert_eq!(call(&mut c, &["TTL", "b2"]), int(-1));
    // An expired bitmap is gone for every command.
    assert_eq!(call(&mut c, &["PEXPIRE", "b2", "1"]), int(1));
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(
        call(&mut c, &["TR.GETBITS", "b2", "5"]),
        Frame::Array(vec![])
    );
    assert_eq!(call(&mut c, &["EXISTS", "b2"]), int(0));
}

#[test]
fn select_flushdb_and_transactions() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    assert_eq!(call(&mut c, &["SELECT", "3"]), ok());
    assert_eq!(call(&mut c, &["TR.SETBIT", "k", "9", "1"]), int(0));
    assert_eq!(call(&mut c, &["SELECT", "0"]), ok());
    assert_eq!(call(&mut c, &["TR.GETBIT", "k", "9"]), int(0));
    assert_eq!(call(&mut c, &["TR.SETBIT", "k", "1", "1"]), int(0));
    assert_eq!(call(&mut c, &["SELECT", "3"]), ok());
    assert_eq!(call(&mut c, &["TR.GETBIT", "k", "9"]), int(1));
    assert_eq!(call(&mut c, &["FLUSHDB"]), ok());
    assert_eq!(call(&mut c, &["TR.STAT", "k"]), Frame::NullBulk);
    assert_eq!(call(&mut c, &["SELECT", "0"]), ok());
    assert_eq!(call(&mut c, &["TR.MAX", "k"]), int(1));

    // MULTI/EXEC: one batch; a WATCHed bitmap changed by another client aborts.
    assert_eq!(call(&mut c, &["MULTI"]), ok());
    assert_eq!(
        call(&mut c, &["TR.SETBITS", "m", "1", "2", "3"]),
        status("QUEUED")
    );
    assert_eq!(
        call(&mut c, &["TR.BITOP", "n", "NOT", "m"]),
        status("QUEUED")
    );
    assert_eq!(
        call(&mut c, &["TR.RANGE", "n", "0", "10"]),
        status("QUEUED")
    );
    assert_eq!(
        call(&mut c, &["EXEC"]),
        Frame::Array(vec![int(3), int(1), Frame::Array(vec![int(0)])])
    );
    let mut other = s.client();
    assert_eq!(call(&mut c, &["WATCH", "m"]), ok());
    assert_eq!(call(&mut other, &["TR.SETBIT", "m", "100", "1"]), int(0));
    assert_eq!(call(&mut c, &["MULTI"]), ok());
    assert_eq!(call(&mut c, &["TR.CLEARBITS", "m", "1"]), status("QUEUED"));
    assert_eq!(call(&mut c, &["EXEC"]), Frame::NullArray);
    assert_eq!(call(&mut c, &["TR.BITCOUNT", "m"]), int(4));

    // An empty result over an empty destination writes nothing, yet still
    // counts as a change of the destination for WATCH; over an expiring
    // empty destination it clears the expiry.
    assert_eq!(call(&mut c, &["TR.SETBITS", "far", "5000000"]), int(1));
    assert_eq!(call(&mut c, &["TR.BITOP", "e", "AND", "m", "far"]), int(0));
    assert_eq!(call(&mut c, &["WATCH", "e"]), ok());
    assert_eq!(
        call(&mut other, &["TR.BITOP", "e", "AND", "m", "far"]),
        int(0)
    );
    assert_eq!(call(&mut c, &["MULTI"]), ok());
    assert_eq!(
        call(&mut c, &["TR.SETBIT", "e", "1", "1"]),
        status("QUEUED")
    );
    assert_eq!(call(&mut c, &["EXEC"]), Frame::NullArray);
    assert_eq!(call(&mut c, &["EXISTS", "e"]), int(1));
    assert_eq!(call(&mut c, &["TYPE", "e"]), status("TairRoaring"));
    assert_eq!(call(&mut c, &["TR.BITCOUNT", "e"]), int(0));
    assert_eq!(call(&mut c, &["EXPIRE", "e", "100"]), int(1));
    assert_eq!(call(&mut c, &["TR.BITOP", "e", "AND", "m", "far"]), int(0));
    assert_eq!(call(&mut c, &["TTL", "e"]), int(-1));
    assert_eq!(call(&mut c, &["TR.BITOP", "e", "OR", "m", "far"]), int(5));
    assert_eq!(call(&mut c, &["TR.BITOP", "e", "AND", "m", "far"]), int(0));
    assert_eq!(call(&mut c, &["TR.MIN", "e"]), int(-1));
}

#[test]
fn resp3_and_command_introspection() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    assert!(matches!(call(&mut c, &["HELLO", "3"]), Frame::Map(_)));
    call(&mut c, &["TR.SETBITS", "a", "1", "2", "3", "4"]);
    call(&mut c, &["TR.SETBITS", "c", "3", "4", "5"]);
    assert_eq!(call(&mut c, &["TR.JACCARD", "a", "c"]), Frame::Double(0.4));
    assert_eq!(call(&mut c, &["TR.JACCARD", "x", "y"]), Frame::Double(0.0));
    assert_eq!(call(&mut c, &["TR.STAT", "nosuch"]), Frame::Null);
    assert_eq!(
        call(
            &mut c,
            &["COMMAND", "GETKEYS", "TR.BITOP", "d", "AND", "a", "c"]
        ),
        Frame::Array(vec![
            Frame::Bulk(b"d".to_vec()),
            Frame::Bulk(b"a".to_vec()),
            Frame::Bulk(b"c".to_vec())
        ])
    );
    assert_eq!(
        call(
            &mut c,
            &["COMMAND", "GETKEYS", "TR.BITOPCARD", "OR", "a", "c"]
        ),
        Frame::Array(vec![Frame::Bulk(b"a".to_vec()), Frame::Bulk(b"c".to_vec())])
    );
    for name in [
        "tr.setbit",
        "tr.bitop",
        "tr.stat",
        "tr.export",
        "tr.import",
        "tr.scan",
    ] {
        let info = call(&mut c, &["COMMAND", "INFO", name]);
        assert!(
            matches!(&info, Frame::Array(v) if matches!(v.first(), Some(Frame::Array(_)))),
            "{name}: {info:?}"
        );
    }
}

#[test]
fn reply_ceiling_refuses_large_replies() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    assert_eq!(
        call(&mut c, &["TR.SETRANGE", "full", "0", "4294967295"]),
        int(4_294_967_296)
    );
    assert_eq!(call(&mut c, &["TR.BITCOUNT", "full"]), int(4_294_967_296));
    assert_eq!(
        call(&mut c, &["TR.RANGEBITARRAY", "full", "0", "4294967295"]),
        err(OUT_OF_RANGE)
    );
    assert_eq!(
        call(&mut c, &["TR.RANGE", "full", "0", "4294967295"]),
        err(OUT_OF_RANGE)
    );
    assert_eq!(
        call(&mut c, &["CONFIG", "SET", "tr-max-reply-bytes", "100"]),
        ok()
    );
    assert_eq!(
        call(&mut c, &["CONFIG", "GET", "tr-max-reply-bytes"]),
        Frame::Array(vec![
            Frame::Bulk(b"tr-max-reply-bytes".to_vec()),
            Frame::Bulk(b"100".to_vec())
        ])
    );
    assert_eq!(
        call(&mut c, &["TR.RANGE", "full", "0", "99"]),
        err(OUT_OF_RANGE)
    );
    assert_eq!(
        call(&mut c, &["TR.RANGE", "full", "0", "9"]).to_string_lossy_len(),
        10
    );
    assert_eq!(
        call(&mut c, &["TR.SCAN", "full", "0", "COUNT", "1000"]),
        err(OUT_OF_RANGE)
    );
    assert_eq!(
        call(&mut c, &["TR.RANGEBITARRAY", "full", "0", "99"]),
        err(OUT_OF_RANGE)
    );
    assert_eq!(call(&mut c, &["TR.EXPORT", "full"]), err(OUT_OF_RANGE));
    // Missing keys keep their fixed replies whatever the size asked for.
    assert_eq!(
        call(&mut c, &["TR.RANGEBITARRAY", "nosuch", "0", "4294967295"]),
        Frame::NullBulk
    );
    assert_eq!(
        call(&mut c, &["TR.RANGE", "nosuch", "0", "4294967295"]),
        Frame::Array(vec![])
    );
    assert_eq!(call(&mut c, &["TR.EXPORT", "nosuch"]), Frame::NullBulk);
    assert_eq!(call(&mut c, &["DEL", "full"]), int(1));
}

trait Len {
    fn to_string_lossy_len(&self) -> usize;
}

impl Len for Frame {
    fn to_string_lossy_len(&self) -> usize {
        match self {
            Frame::Array(v) => v.len(),
            f => panic!("{f:?}"),
        }
    }
}

#[test]
fn concurrent_writers_keep_the_summary_exact() {
    // More workers than cores (the default is half the cores), so the
    // writers' commands really run in parallel.
    let s = TestServer::start_with(bin(), &["--io-threads", "4"]);
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let mut c = s.client();
            std::thread::spawn(move || {
                for i in 0..1500u32 {
                    // Interleaved offsets: every writer touches every container.
                    let off = (i * 4 + t) * 37;
                    assert_eq!(
                        c.call(&["TR.SETBIT", "hot", &off.to_string(), "1"])
                            .unwrap(),
                        Frame::Integer(0)
                    );
                    if i % 3 == 0 {
                        c.call(&["TR.SETBIT", "hot", &off.to_string(), "0"])
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = s.client();
    let want = 4 * (1500 - 500);
    assert_eq!(call(&mut c, &["TR.BITCOUNT", "hot"]), int(want));
    match call(&mut c, &["TR.RANGE", "hot", "0", "4294967295"]) {
        Frame::Array(v) => assert_eq!(v.len() as i64, want),
        f => panic!("{f:?}"),
    }
    let Frame::Bulk(stat) = call(&mut c, &["TR.STAT", "hot"]) else {
        panic!()
    };
    let text = String::from_utf8(stat).unwrap();
    assert!(
        text.starts_with(&format!("cardinality: {want}\r\n")),
        "{text}"
    );
}

#[test]
fn random_arguments_never_break_the_connection() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    c.call(&["TR.SETBITS", "k", "1", "65536", "4294967295"])
        .unwrap();
    c.call(&["SET", "str", "0101"]).unwrap();
    let names = [
        "TR.SETBIT",
        "TR.SETBITS",
        "TR.CLEARBITS",
        "TR.SETRANGE",
        "TR.APPENDBITARRAY",
        "TR.FLIPRANGE",
        "TR.APPENDINTARRAY",
        "TR.SETINTARRAY",
        "TR.SETBITARRAY",
        "TR.GETBIT",
        "TR.GETBITS",
        "TR.BITCOUNT",
        "TR.BITPOS",
        "TR.SCAN",
        "TR.RANGE",
        "TR.RANGEBITARRAY",
        "TR.MIN",
        "TR.MAX",
        "TR.RANK",
        "TR.BITOP",
        "TR.BITOPCARD",
        "TR.JACCARD",
        "TR.CONTAINS",
        "TR.STAT",
        "TR.OPTIMIZE",
        "TR.EXPORT",
        "TR.IMPORT",
        "TR.DIFF",
        "TR.LOAD",
        "TR.LOADSTRING",
    ];
    let tokens = [
        "k",
        "str",
        "nosuch",
        "0",
        "1",
        "-1",
        "-2",
        "2",
        "4294967295",
        "4294967296",
        "18446744073709551616",
        "-9223372036854775808",
        "AND",
        "OR",
        "NOT",
        "DIFF",
        "XOR",
        "COUNT",
        "JSON",
        "",
        "0101",
        "1x",
        "000000000000000000007",
        "\u{0}",
        "99999",
        "65535",
        "65536",
    ];
    let mut x: u64 = 7;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for _ in 0..4000 {
        let name = names[next(names.len() as u64) as usize];
        let n = next(6) as usize;
        let mut args = vec![name.to_string()];
        for _ in 0..n {
            args.push(tokens[next(tokens.len() as u64) as usize].to_string());
        }
        let r = c
            .call(&args)
            .unwrap_or_else(|e| panic!("{args:?}: connection error {e}"));
        if let Frame::Error(e) = &r {
            let t = String::from_utf8_lossy(e);
            assert!(
                t.starts_with("ERR ") || t.starts_with("WRONGTYPE "),
                "{args:?}: {t}"
            );
        }
    }
    assert_eq!(call(&mut c, &["PING"]), status("PONG"));
    // The surviving keys are still consistent bitmaps.
    for key in ["k", "0", "1", "nosuch"] {
        let card = call(&mut c, &["TR.BITCOUNT", key]);
        if let Frame::Integer(n) = card {
            if n < 1_000_000 {
                match call(&mut c, &["TR.RANGE", key, "0", "4294967295"]) {
                    Frame::Array(v) => assert_eq!(v.len() as i64, n, "{key}"),
                    f => panic!("{key}: {f:?}"),
                }
            }
        }
    }
}

/// Multi-key operations over more than 512 source containers run as
/// blocking work off the I/O worker (DESIGN.md: a long BITOP must not
/// stall other connections); results, errors and MULTI/EXEC are as for
/// small ones, and another connection is served meanwhile.
#[test]
fn big_multi_key_operations_run_off_the_worker() {
    for io in ["1", "2"] {
        let s = TestServer::start_with(bin(), &["--io-threads", io]);
        let mut c = s.client();
        // a: bit 1 of blocks 0..600; b: bit 1 of blocks 300..900 and bit 2
        // of every block: 1,500 source containers.
        let a: Vec<String> = (0..600u64).map(|i| ((i << 16) | 1).to_string()).collect();
        let mut b: Vec<String> = (300..900u64).map(|i| ((i << 16) | 1).to_string()).collect();
        b.extend((300..900u64).map(|i| ((i << 16) | 2).to_string()));
        assert_eq!(call_with(&mut c, "TR.SETBITS", "a", &a), int(600));
        assert_eq!(call_with(&mut c, "TR.SETBITS", "b", &b), int(1200));
        let mut other = s.client();
        assert_eq!(call(&mut c, &["TR.BITOP", "o", "OR", "a", "b"]), int(1500));
        assert_eq!(call(&mut other, &["PING"]), status("PONG"));
        assert_eq!(call(&mut c, &["TR.BITOP", "x", "AND", "a", "b"]), int(300));
        assert_eq!(call(&mut c, &["TR.BITOPCARD", "XOR", "a", "b"]), int(1200));
        assert_eq!(call(&mut c, &["TR.CONTAINS", "x", "a"]), int(1));
        assert_eq!(call(&mut c, &["TR.DIFF", "d", "b", "a"]), ok());
        assert_eq!(call(&mut c, &["TR.BITCOUNT", "d"]), int(900));
        assert!(matches!(
            call(&mut c, &["TR.JACCARD", "a", "b"]),
            Frame::Bulk(_)
        ));
        call(&mut c, &["SET", "str", "v"]);
        assert_eq!(
            call(&mut c, &["TR.BITOP", "o", "OR", "a", "b", "str"]),
            err(WRONGTYPE)
        );
        assert_eq!(call(&mut c, &["MULTI"]), ok());
        assert_eq!(
            call(&mut c, &["TR.BITOP", "o2", "OR", "a", "b"]),
            status("QUEUED")
        );
        assert_eq!(call(&mut c, &["TR.BITCOUNT", "o2"]), status("QUEUED"));
        assert_eq!(
            call(&mut c, &["EXEC"]),
            Frame::Array(vec![int(1500), int(1500)])
        );
    }
}

/// RENAME / RENAMENX of keys with more than 4,096 entries copy them as
/// blocking work off the I/O worker; the results are those of small keys,
/// in MULTI/EXEC too, and another connection is served meanwhile.
#[test]
fn big_renames_run_off_the_worker() {
    for io in ["1", "2"] {
        let s = TestServer::start_with(bin(), &["--io-threads", io]);
        let mut c = s.client();
        let mut other = s.client();
        // 5,000 containers of one bit each, and a set of 5,000 members.
        let bits: Vec<String> = (0..5000u64).map(|i| ((i << 16) | 3).to_string()).collect();
        assert_eq!(call_with(&mut c, "TR.SETBITS", "bm", &bits), int(5000));
        assert_eq!(call_with(&mut c, "SADD", "set", &bits), int(5000));
        assert_eq!(call(&mut c, &["EXPIRE", "bm", "1000"]), int(1));

        assert_eq!(call(&mut c, &["RENAME", "bm", "bm2"]), ok());
        assert_eq!(call(&mut other, &["PING"]), status("PONG"));
        assert_eq!(call(&mut c, &["TR.BITCOUNT", "bm2"]), int(5000));
        assert_eq!(call(&mut c, &["TR.MAX", "bm2"]), int((4999 << 16) | 3));
        assert!(matches!(call(&mut c, &["TTL", "bm2"]), Frame::Integer(t) if t > 990));
        assert_eq!(call(&mut c, &["EXISTS", "bm"]), int(0));
        assert_eq!(call(&mut c, &["RENAMENX", "set", "bm2"]), int(0));
        assert_eq!(call(&mut c, &["RENAMENX", "set", "set2"]), int(1));
        assert_eq!(call(&mut c, &["SCARD", "set2"]), int(5000));
        assert_eq!(call(&mut c, &["SISMEMBER", "set2", &bits[4321]]), int(1));

        assert_eq!(call(&mut c, &["MULTI"]), ok());
        assert_eq!(call(&mut c, &["RENAME", "bm2", "bm3"]), status("QUEUED"));
        assert_eq!(
            call(&mut c, &["TR.GETBIT", "bm3", &bits[17]]),
            status("QUEUED")
        );
        assert_eq!(call(&mut c, &["RENAME", "set2", "bm3"]), status("QUEUED"));
        assert_eq!(call(&mut c, &["TYPE", "bm3"]), status("QUEUED"));
        assert_eq!(
            call(&mut c, &["EXEC"]),
            Frame::Array(vec![ok(), int(1), ok(), status("set")])
        );
        assert_eq!(call(&mut c, &["SCARD", "bm3"]), int(5000));
        assert_eq!(call(&mut c, &["DBSIZE"]), int(1));
    }
}

/// TR.SETRANGE over values already present in a full array container
/// (4,096 values) keeps the key readable: the container stays an array
/// (it became a bitset of 4,096 values, which every read refused as
/// corrupt).
#[test]
fn setrange_over_a_full_array_keeps_the_key_readable() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    let vals: Vec<String> = (0..4096u32).map(|i| (i * 16).to_string()).collect();
    assert_eq!(call_with(&mut c, "TR.SETBITS", "k", &vals), int(4096));
    assert_eq!(call(&mut c, &["TR.SETRANGE", "k", "0", "0"]), int(4096));
    assert_eq!(call(&mut c, &["TR.GETBIT", "k", "16"]), int(1));
    assert_eq!(
        call(&mut c, &["TR.RANGE", "k", "0", "40"]),
        Frame::Array(vec![int(0), int(16), int(32)])
    );
    assert_eq!(call(&mut c, &["TR.SETRANGE", "k", "1", "1"]), int(4097));
    assert_eq!(call(&mut c, &["TR.BITCOUNT", "k", "0", "20"]), int(3));
}

/// `container_cache_hits` from INFO stats.
fn cache_hits(c: &mut Client) -> u64 {
    let Frame::Bulk(t) = call(c, &["INFO", "stats"]) else {
        panic!("INFO stats is not a bulk string")
    };
    let t = String::from_utf8(t).unwrap();
    t.lines()
        .find_map(|l| l.strip_prefix("container_cache_hits:"))
        .expect("container_cache_hits")
        .parse()
        .unwrap()
}

/// An AND (and a DIFF subtracting a big key) steps over the blocks that
/// the other side lacks without reading their containers, once the big
/// key's directory is cached: a one-container key against a
/// 66-container key reads two containers, not 67 (two cache hits: `big`'s
/// directory and its one container; `small`'s one container is a point
/// read, served by the memory tier).
#[test]
fn and_skips_the_containers_of_blocks_the_other_side_lacks() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    let big: Vec<String> = (0..66u32)
        .flat_map(|b| [b * 65536 + 1, b * 65536 + 7])
        .map(|v| v.to_string())
        .collect();
    assert_eq!(call_with(&mut c, "TR.SETBITS", "big", &big), int(132));
    assert_eq!(
        call(&mut c, &["TR.SETBITS", "small", "327681", "327682"]),
        int(2)
    );
    // The first pass scans `big` and caches its containers and directory.
    assert_eq!(
        call(&mut c, &["TR.BITOPCARD", "AND", "small", "big"]),
        int(1)
    );
    for (req, want) in [
        (&["TR.BITOPCARD", "AND", "small", "big"][..], 1),
        (&["TR.BITOPCARD", "AND", "big", "small"], 1),
        (&["TR.BITOPCARD", "DIFF", "small", "big"], 1),
        (&["TR.BITOP", "d", "AND", "big", "small"], 1),
    ] {
        let before = cache_hits(&mut c);
        assert_eq!(call(&mut c, req), int(want), "{req:?}");
        assert_eq!(cache_hits(&mut c) - before, 2, "{req:?}");
    }
    assert_eq!(
        call(&mut c, &["TR.GETBITS", "d", "327681", "327682"]),
        Frame::Array(vec![int(1), int(0)])
    );
    // TR.JACCARD reads the shared block only (1 / (2 + 132 − 1)); TR.CONTAINS
    // stops at it (327682 is not in `big`): `big`'s directory and one
    // container from the cache each (`small`'s from the memory tier).
    let before = cache_hits(&mut c);
    let Frame::Bulk(j) = call(&mut c, &["TR.JACCARD", "small", "big"]) else {
        panic!("TR.JACCARD is not a bulk string")
    };
    let j: f64 = String::from_utf8(j).unwrap().parse().unwrap();
    assert!((j - 1.0 / 133.0).abs() < 1e-12, "{j}");
    assert_eq!(call(&mut c, &["TR.CONTAINS", "small", "big"]), int(0));
    assert_eq!(cache_hits(&mut c) - before, 4);
}
