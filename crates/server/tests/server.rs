//! Server commands over the wire: INFO, CONFIG, COMMAND, SLOWLOG, DBSIZE,
//! TIME, SAVE/LASTSAVE, SHUTDOWN and SIGTERM (persisting the store).

use roaringd_testkit::{Frame, TestServer};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_roaringd")
}

fn ok() -> Frame {
    Frame::Simple(b"OK".to_vec())
}

fn text(f: &Frame) -> String {
    String::from_utf8_lossy(f.as_bytes().expect("bulk or verbatim")).into_owned()
}

/// `INFO storage`: the LSM store's sizes, only when named or with `all`.
#[test]
fn info_storage_reports_the_lsm_store() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    let field = |t: &str, name: &str| -> u64 {
        let line = t
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("{name} missing in {t}"));
        line[name.len() + 1..].parse().expect("a number")
    };
    c.call(&["TR.SETRANGE", "b", "0", "999999"]).unwrap();
    let st = text(&c.call(&["INFO", "storage"]).unwrap());
    assert!(
        st.starts_with("# Storage\r\n") && !st.contains("# Server"),
        "{st}"
    );
    // The range's containers are in a memtable, the block cache has a size.
    assert!(field(&st, "lsm_memtable_bytes") > 0, "{st}");
    assert!(field(&st, "lsm_block_cache_capacity") > 0, "{st}");
    for name in [
        "lsm_disk_bytes",
        "lsm_journal_bytes",
        "lsm_block_cache_bytes",
        "lsm_tables",
        "lsm_compactions_completed",
        "lsm_write_queue_bytes",
    ] {
        field(&st, name);
    }
    assert!(!text(&c.call(&["INFO"]).unwrap()).contains("# Storage"));
    let all = text(&c.call(&["INFO", "all"]).unwrap());
    assert!(all.contains("# Commandstats") && all.contains("# Storage"));
    assert!(text(&c.call(&["INFO", "everything"]).unwrap()).contains("# Storage"));
}

#[test]
fn info_has_redis_sections_and_fields() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    let all = text(&c.call(&["INFO"]).unwrap());
    for header in [
        "# Server",
        "# Clients",
        "# Memory",
        "# Persistence",
        "# Stats",
        "# Replication",
        "# Keyspace",
    ] {
        assert!(all.contains(header), "{header} missing");
    }
    assert!(all.contains(&format!("tcp_port:{}\r\n", s.port())));
    assert!(all.contains("connected_clients:"));
    assert!(!all.contains("# Commandstats"));
    let one = text(&c.call(&["INFO", "clients"]).unwrap());
    assert!(one.starts_with("# Clients\r\n") && !one.contains("# Server"));
    // The test kit's readiness probe was a PING too.
    assert_eq!(c.call(&["CONFIG", "RESETSTAT"]).unwrap(), ok());
    c.call(&["PING"]).unwrap();
    let cs = text(&c.call(&["INFO", "commandstats"]).unwrap());
    let line = cs
        .lines()
        .find(|l| l.starts_with("cmdstat_ping:"))
        .expect("cmdstat_ping");
    assert!(
        line.contains("calls=1,usec=") && line.contains(",rejected_calls=0,failed_calls=0"),
        "{line}"
    );
    c.call(&["ECHO"]).unwrap();
    let cs = text(&c.call(&["INFO", "commandstats"]).unwrap());
    assert!(
        cs.contains(
            "cmdstat_echo:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0"
        ),
        "{cs}"
    );
    assert_eq!(c.call(&["CONFIG", "RESETSTAT"]).unwrap(), ok());
    let cs = text(&c.call(&["INFO", "commandstats"]).unwrap());
    assert!(!cs.contains("cmdstat_ping"));
    // RESP3: INFO is a verbatim string.
    c.call(&["HELLO", "3"]).unwrap();
    assert!(matches!(
        c.call(&["INFO", "server"]).unwrap(),
        Frame::Verbatim { .. }
    ));
}

#[test]
fn config_get_set_and_globs() {
    let s = TestServer::start_with(bin(), &["--maxclients", "77", "--appendfsync", "no"]);
    let mut c = s.client();
    assert_eq!(
        c.call(&["CONFIG", "GET", "maxclients"]).unwrap(),
        Frame::Array(vec![
            Frame::Bulk(b"maxclients".to_vec()),
            Frame::Bulk(b"77".to_vec())
        ])
    );
    let all = c.call(&["CONFIG", "GET", "*"]).unwrap();
    assert!(all.as_items().unwrap().len() >= 20);
    let sl = c.call(&["CONFIG", "GET", "slowlog-*"]).unwrap();
    assert_eq!(sl.as_items().unwrap().len(), 4);
    assert_eq!(
        c.call(&[
            "CONFIG",
            "SET",
            "appendfsync",
            "always",
            "slowlog-max-len",
            "5"
        ])
        .unwrap(),
        ok()
    );
    assert_eq!(
        c.call(&["CONFIG", "GET", "appendfsync"]).unwrap(),
        Frame::Array(vec![
            Frame::Bulk(b"appendfsync".to_vec()),
            Frame::Bulk(b"always".to_vec())
        ])
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "databases", "3"]).unwrap(),
        Frame::Error(b"ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config".to_vec())
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "nosuch", "1"]).unwrap(),
        Frame::Error(
            b"ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'".to_vec()
        )
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "timeout"]).unwrap(),
        Frame::Error(b"ERR wrong number of arguments for 'config|set' command".to_vec())
    );
}

/// `disable-thp yes` (the default, as in Redis) turns transparent huge
/// pages off for the server process (`THP_enabled: 0` in its
/// /proc/PID/status, on kernels that report it); `no` leaves them on.
#[test]
fn disable_thp_reaches_the_process() {
    let thp = |s: &TestServer| {
        let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid().unwrap())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("THP_enabled:"))
            .map(|v| v.trim().to_string())
    };
    let on = TestServer::start_with(bin(), &[]);
    let mut c = on.client();
    assert_eq!(
        c.call(&["CONFIG", "GET", "disable-thp"]).unwrap(),
        Frame::Array(vec![
            Frame::Bulk(b"disable-thp".to_vec()),
            Frame::Bulk(b"yes".to_vec())
        ])
    );
    assert_eq!(
        c.call(&["CONFIG", "SET", "disable-thp", "no"]).unwrap(),
        Frame::Error(b"ERR CONFIG SET failed (possibly related to argument 'disable-thp') - can't set immutable config".to_vec())
    );
    let off = TestServer::start_with(bin(), &["--disable-thp", "no"]);
    if let (Some(a), Some(b)) = (thp(&on), thp(&off)) {
        assert_eq!((a.as_str(), b.as_str()), ("0", "1"));
    }
}

#[test]
fn config_file_and_command_line_combine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("roaringd.conf");
    std::fs::write(
        &path,
        "# test\nmaxclients 55\nrequirepass \"from file\"\nslowlog-max-len 9\n",
    )
    .unwrap();
    let s = TestServer::start_with(bin(), &[path.to_str().unwrap(), "--slowlog-max-len", "11"]);
    let mut c = s.raw_client();
    assert_eq!(c.call(&["AUTH", "from file"]).unwrap(), ok());
    let r = c.call(&["CONFIG", "GET", "slowlog-max-len"]).unwrap();
    assert_eq!(r.as_items().unwrap()[1], Frame::Bulk(b"11".to_vec()));
    let r = c.call(&["CONFIG", "GET", "maxclients"]).unwrap();
    assert_eq!(r.as_items().unwrap()[1], Frame::Bulk(b"55".to_vec()));
}

#[test]
fn bad_config_directive_fails_start() {
    let st = std::process::Command::new(bin())
        .args(["--port", "0", "--nosuchdirective", "1"])
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&st.stderr).contains("Bad directive"));
}

#[test]
fn command_introspection() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    let n = c.call(&["COMMAND", "COUNT"]).unwrap().as_integer().unwrap();
    assert!(n > 20);
    let all = c.call(&["COMMAND"]).unwrap();
    assert_eq!(all.as_items().unwrap().len() as i64, n);
    let info = c.call(&["COMMAND", "INFO", "watch", "nosuch"]).unwrap();
    let items = info.as_items().unwrap();
    let watch = items[0].as_items().unwrap();
    assert_eq!(watch.len(), 10);
    assert_eq!(watch[0], Frame::Bulk(b"watch".to_vec()));
    assert_eq!(watch[1], Frame::Integer(-2));
    assert_eq!(
        &watch[3..6],
        &[Frame::Integer(1), Frame::Integer(-1), Frame::Integer(1)]
    );
    assert_eq!(items[1], Frame::NullBulk);
    assert_eq!(
        c.call(&["COMMAND", "GETKEYS", "watch", "a", "b"]).unwrap(),
        Frame::Array(vec![Frame::Bulk(b"a".to_vec()), Frame::Bulk(b"b".to_vec())])
    );
    let list = c
        .call(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "client|*"])
        .unwrap();
    assert!(list
        .as_items()
        .unwrap()
        .contains(&Frame::Bulk(b"client|kill".to_vec())));
    let docs = c.call(&["COMMAND", "DOCS", "ping"]).unwrap();
    assert_eq!(docs.as_items().unwrap()[0], Frame::Bulk(b"ping".to_vec()));
}

#[test]
fn slowlog_records_and_resets() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    assert_eq!(
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "0"])
            .unwrap(),
        ok()
    );
    c.call(&["CLIENT", "SETNAME", "slowpoke"]).unwrap();
    c.call(&["ECHO", "hello"]).unwrap();
    let log = c.call(&["SLOWLOG", "GET", "-1"]).unwrap();
    let entries = log.as_items().unwrap();
    let echo = entries
        .iter()
        .find(|e| {
            e.as_items().unwrap()[3]
                == Frame::Array(vec![
                    Frame::Bulk(b"ECHO".to_vec()),
                    Frame::Bulk(b"hello".to_vec()),
                ])
        })
        .expect("ECHO in slowlog");
    assert_eq!(
        echo.as_items().unwrap()[5],
        Frame::Bulk(b"slowpoke".to_vec())
    );
    assert!(c.call(&["SLOWLOG", "LEN"]).unwrap().as_integer().unwrap() >= 1);
    assert_eq!(
        c.call(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"])
            .unwrap(),
        ok()
    );
    assert_eq!(c.call(&["SLOWLOG", "RESET"]).unwrap(), ok());
    c.call(&["PING"]).unwrap();
    assert_eq!(c.call(&["SLOWLOG", "LEN"]).unwrap(), Frame::Integer(0));
}

#[test]
fn time_lastsave_save_dbsize() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    let t = c.call(&["TIME"]).unwrap();
    assert_eq!(t.as_items().unwrap().len(), 2);
    let before = c.call(&["LASTSAVE"]).unwrap().as_integer().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(c.call(&["SAVE"]).unwrap(), ok());
    assert!(c.call(&["LASTSAVE"]).unwrap().as_integer().unwrap() > before);
    assert_eq!(c.call(&["DBSIZE"]).unwrap(), Frame::Integer(0));
    assert_eq!(
        c.call(&["BGSAVE"]).unwrap(),
        Frame::Simple(b"Background saving started".to_vec())
    );
}

#[test]
fn data_survives_shutdown_and_sigterm() {
    let mut s = TestServer::start_with(bin(), &["--appendfsync", "no"]);
    let mut c = s.client();
    assert_eq!(c.call(&["SET", "k", "v1"]).unwrap(), ok());
    // SHUTDOWN closes the connection without a reply, then the process exits.
    assert!(c.call(&["SHUTDOWN"]).is_err());
    assert_eq!(s.wait_exit(), Some(0));
    s.restart();
    let mut c = s.client();
    assert_eq!(c.call(&["GET", "k"]).unwrap(), Frame::Bulk(b"v1".to_vec()));
    assert_eq!(c.call(&["SET", "k", "v2"]).unwrap(), ok());
    assert_eq!(s.terminate(), Some(0));
    s.restart();
    let mut c = s.client();
    assert_eq!(c.call(&["GET", "k"]).unwrap(), Frame::Bulk(b"v2".to_vec()));
}

#[test]
fn errorstats_count_error_codes() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    c.call(&["NOSUCH"]).unwrap();
    c.call(&["SET", "k", "v"]).unwrap();
    c.call(&["SADD", "k", "m"]).unwrap();
    let es = text(&c.call(&["INFO", "errorstats"]).unwrap());
    assert!(es.contains("errorstat_ERR:count=1\r\n"), "{es}");
    assert!(es.contains("errorstat_WRONGTYPE:count=1\r\n"), "{es}");
    let st = text(&c.call(&["INFO", "stats"]).unwrap());
    assert!(st.contains("total_error_replies:2\r\n"), "{st}");
}

#[test]
fn maxclients_refuses_extra_connections() {
    let s = TestServer::start_with(bin(), &["--maxclients", "2"]);
    let _a = s.client();
    let _b = s.client();
    let mut extra = s.socket();
    let got = roaringd_testkit::read_some(&mut extra, 40);
    assert_eq!(got, b"-ERR max number of clients reached\r\n");
    let mut c = s.client();
    drop(c.call(&["PING"]));
}

#[test]
fn query_buffer_limit_closes_the_client() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    assert_eq!(
        c.call(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"])
            .unwrap(),
        ok()
    );
    let mut sock = s.socket();
    use std::io::Write;
    // A 4 MB bulk that never completes: closed once 1 MB is buffered.
    sock.write_all(b"*2\r\n$4\r\nECHO\r\n$4000000\r\n").unwrap();
    let chunk = vec![b'x'; 64 * 1024];
    let mut closed = false;
    for _ in 0..60 {
        if sock.write_all(&chunk).is_err() {
            closed = true;
            break;
        }
    }
    assert!(closed || roaringd_testkit::is_closed(&mut sock));
    assert_eq!(c.call(&["PING"]).unwrap(), Frame::Simple(b"PONG".to_vec()));
}

#[test]
fn appendfsync_always_writes_work_alone_pipelined_and_in_exec() {
    let s = TestServer::start_with(bin(), &["--appendfsync", "always"]);
    let mut c = s.client();
    assert_eq!(c.call(&["SET", "a", "1"]).unwrap(), ok());
    let mut sock = s.socket();
    let want: &[u8] = b":2\r\n:3\r\n$1\r\n3\r\n";
    let got = roaringd_testkit::exchange(
        &mut sock,
        b"INCR a\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n",
        want.len(),
    );
    assert_eq!(got, want);
    assert_eq!(c.call(&["MULTI"]).unwrap(), ok());
    c.call(&["INCR", "a"]).unwrap();
    c.call(&["INCR", "a"]).unwrap();
    assert_eq!(
        c.call(&["EXEC"]).unwrap(),
        Frame::Array(vec![Frame::Integer(4), Frame::Integer(5)])
    );
}
