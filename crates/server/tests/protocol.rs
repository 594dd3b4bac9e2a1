//! Raw-RESP wire tests: RESP2/RESP3 framing, inline commands, pipelining,
//! malformed and oversized requests (the offender is closed, others are not).

use roaringd_testkit::{exchange, is_closed, read_some, TestServer};

fn server() -> TestServer {
    TestServer::start_with(env!("CARGO_BIN_EXE_roaringd"), &[])
}

#[test]
fn multibulk_and_inline_requests_get_replies() {
    let s = server();
    let mut sock = s.socket();
    assert_eq!(
        exchange(&mut sock, b"*1\r\n$4\r\nPING\r\n", 7),
        b"+PONG\r\n"
    );
    assert_eq!(exchange(&mut sock, b"PING\r\n", 7), b"+PONG\r\n");
    assert_eq!(exchange(&mut sock, b"ECHO \"a b\"\n", 9), b"$3\r\na b\r\n");
    // Blank inline lines are ignored.
    assert_eq!(exchange(&mut sock, b"\r\n\r\nPING\r\n", 7), b"+PONG\r\n");
}

#[test]
fn pipelined_requests_are_all_answered_in_order() {
    let s = server();
    let mut sock = s.socket();
    let mut req = Vec::new();
    let mut want = Vec::new();
    for i in 0..500 {
        let v = format!("v{i}");
        req.extend_from_slice(format!("*2\r\n$4\r\nECHO\r\n${}\r\n{v}\r\n", v.len()).as_bytes());
        want.extend_from_slice(format!("${}\r\n{v}\r\n", v.len()).as_bytes());
    }
    req.extend_from_slice(b"PING\r\n");
    want.extend_from_slice(b"+PONG\r\n");
    assert_eq!(exchange(&mut sock, &req, want.len()), want);
}

#[test]
fn request_split_across_writes_is_reassembled() {
    let s = server();
    let mut sock = s.socket();
    let req = b"*2\r\n$4\r\nECHO\r\n$11\r\nhello world\r\n";
    for chunk in req.chunks(3) {
        use std::io::Write;
        sock.write_all(chunk).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert_eq!(read_some(&mut sock, 18), b"$11\r\nhello world\r\n");
}

#[test]
fn protocol_errors_reply_and_close_only_that_client() {
    let s = server();
    let mut bystander = s.socket();
    let cases: &[(&[u8], &[u8])] = &[
        (
            b"*1\r\nx\r\n",
            b"-ERR Protocol error: expected '$', got 'x'\r\n",
        ),
        (
            b"*2\r\n$3\r\nGET\r\n$-5\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*99999999999\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1048577\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n$536870913\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*abc\r\n",
            b"-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"ECHO \"abc\r\n",
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
    ];
    for (req, want) in cases {
        let mut sock = s.socket();
        let got = exchange(&mut sock, req, want.len());
        assert_eq!(&got, want, "request {:?}", String::from_utf8_lossy(req));
        assert!(
            is_closed(&mut sock),
            "not closed after {:?}",
            String::from_utf8_lossy(req)
        );
    }
    // Replies to requests before the bad one are still sent.
    let mut sock = s.socket();
    let want: &[u8] = b"+PONG\r\n-ERR Protocol error: expected '$', got 'x'\r\n";
    assert_eq!(
        exchange(&mut sock, b"PING\r\n*1\r\nx\r\n", want.len()),
        want
    );
    assert_eq!(exchange(&mut bystander, b"PING\r\n", 7), b"+PONG\r\n");
}

#[test]
fn oversized_inline_request_is_refused() {
    let s = server();
    let mut sock = s.socket();
    let big = vec![b'a'; 70 * 1024];
    let want: &[u8] = b"-ERR Protocol error: too big inline request\r\n";
    assert_eq!(exchange(&mut sock, &big, want.len()), want);
    assert!(is_closed(&mut sock));
}

#[test]
fn huge_declared_bulk_waits_without_allocating_and_others_are_served() {
    let s = server();
    let mut hostile = s.socket();
    use std::io::Write;
    // Declares 512 MB but sends 3 bytes: the server must just wait.
    hostile
        .write_all(b"*2\r\n$4\r\nECHO\r\n$536870912\r\nabc")
        .unwrap();
    let mut other = s.socket();
    assert_eq!(exchange(&mut other, b"PING\r\n", 7), b"+PONG\r\n");
    let mut c = s.client();
    let info = c.call(&["INFO", "memory"]).unwrap();
    let text = String::from_utf8_lossy(info.as_bytes().unwrap()).to_string();
    let rss: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_rss:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(rss < 256 << 20, "rss {rss} after a hostile length");
}

#[test]
fn unknown_command_and_arity_errors_match_redis() {
    let s = server();
    let mut sock = s.socket();
    let want: &[u8] = b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n";
    assert_eq!(exchange(&mut sock, b"foo a b\r\n", want.len()), want);
    let want: &[u8] = b"-ERR wrong number of arguments for 'echo' command\r\n";
    assert_eq!(exchange(&mut sock, b"ECHO\r\n", want.len()), want);
    let want: &[u8] = b"-ERR unknown subcommand 'foo'. Try CLIENT HELP.\r\n";
    assert_eq!(exchange(&mut sock, b"CLIENT foo\r\n", want.len()), want);
    // The connection stays usable after user errors.
    assert_eq!(exchange(&mut sock, b"PING\r\n", 7), b"+PONG\r\n");
}

#[test]
fn resp3_after_hello_3_and_back_to_resp2() {
    use roaringd_testkit::Frame;
    let s = server();
    let mut c = s.client();
    assert!(matches!(c.call(&["HELLO", "3"]).unwrap(), Frame::Map(_)));
    // RESP3 null is `_`; CLIENT GETNAME of an unnamed client is null.
    assert_eq!(c.call(&["CLIENT", "GETNAME"]).unwrap(), Frame::Null);
    let r = c.call(&["HELLO", "2"]).unwrap();
    assert_eq!(r.as_items().map(<[Frame]>::len), Some(14));
    assert_eq!(c.call(&["CLIENT", "GETNAME"]).unwrap(), Frame::NullBulk);
    let mut sock = s.socket();
    let want: &[u8] = b"-NOPROTO unsupported protocol version\r\n";
    assert_eq!(exchange(&mut sock, b"HELLO 4\r\n", want.len()), want);
}

#[test]
fn pipelined_data_commands_run_in_order_with_their_own_errors() {
    let s = server();
    let mut sock = s.socket();
    let req: &[u8] = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n1\r\n\
*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n\
*3\r\n$4\r\nSADD\r\n$1\r\nk\r\n$1\r\nx\r\n\
*2\r\n$3\r\nGET\r\n$1\r\nk\r\n\
*2\r\n$3\r\nGET\r\n\
*2\r\n$4\r\nECHO\r\n$1\r\ne\r\n\
*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nz\r\n\
*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n\
*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    let want: &[u8] = b"+OK\r\n:2\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n$1\r\n2\r\n\
-ERR Protocol error: expected '$', got '*'\r\n";
    // The 5th request is malformed (`*2` with one element, then `*`): the
    // earlier ones are answered, then the error, then the connection closes.
    let got = exchange(&mut sock, req, want.len());
    assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));
    assert!(is_closed(&mut sock));

    let mut sock = s.socket();
    let req: &[u8] = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n1\r\n\
*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n\
*2\r\n$4\r\nECHO\r\n$1\r\ne\r\n\
*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nz\r\n\
*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n\
*1\r\n$3\r\nGET\r\n\
*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    let want: &[u8] =
        b"+OK\r\n:2\r\n$1\r\ne\r\n+OK\r\n-ERR value is not an integer or out of range\r\n\
-ERR wrong number of arguments for 'get' command\r\n$1\r\nz\r\n";
    let got = exchange(&mut sock, req, want.len());
    assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));
}
