//! Connection commands over the wire: HELLO, AUTH (requirepass), SELECT,
//! CLIENT, RESET, QUIT.

use roaringd_testkit::{exchange, is_closed, Frame, TestServer};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_roaringd")
}

fn ok() -> Frame {
    Frame::Simple(b"OK".to_vec())
}

fn err(text: &str) -> Frame {
    Frame::Error(text.as_bytes().to_vec())
}

#[test]
fn requirepass_gates_commands_until_auth() {
    let s = TestServer::start_with(bin(), &["--requirepass", "s3cret"]);
    let mut c = s.raw_client();
    assert_eq!(
        c.call(&["PING"]).unwrap(),
        err("NOAUTH Authentication required.")
    );
    assert_eq!(
        c.call(&["AUTH", "wrong"]).unwrap(),
        err("WRONGPASS invalid username-password pair or user is disabled.")
    );
    assert_eq!(
        c.call(&["AUTH", "bob", "s3cret"]).unwrap(),
        err("WRONGPASS invalid username-password pair or user is disabled.")
    );
    // Unknown commands and arity are checked before auth, as in Redis.
    assert!(c.call(&["NOSUCH"]).unwrap().is_error());
    assert_eq!(c.call(&["AUTH", "s3cret"]).unwrap(), ok());
    assert_eq!(c.call(&["PING"]).unwrap(), Frame::Simple(b"PONG".to_vec()));

    let mut c2 = s.raw_client();
    let r = c2.call(&["HELLO", "3"]).unwrap();
    assert!(
        matches!(&r, Frame::Error(e) if e.starts_with(b"NOAUTH HELLO must be called")),
        "{r:?}"
    );
    let r = c2
        .call(&["HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "me"])
        .unwrap();
    assert!(matches!(r, Frame::Map(_)), "{r:?}");
    assert_eq!(
        c2.call(&["CLIENT", "GETNAME"]).unwrap(),
        Frame::Bulk(b"me".to_vec())
    );
    // RESET drops authentication again.
    assert_eq!(
        c2.call(&["RESET"]).unwrap(),
        Frame::Simple(b"RESET".to_vec())
    );
    assert_eq!(
        c2.call(&["PING"]).unwrap(),
        err("NOAUTH Authentication required.")
    );

    let mut sock = s.socket();
    let want: &[u8] = b"-ERR Protocol error: unauthenticated multibulk length\r\n";
    assert_eq!(exchange(&mut sock, b"*20\r\n", want.len()), want);
    assert!(is_closed(&mut sock));
}

#[test]
fn auth_without_password_configured() {
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    assert_eq!(
        c.call(&["AUTH", "x"]).unwrap(),
        err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
    );
    assert_eq!(c.call(&["AUTH", "default", "anything"]).unwrap(), ok());
}

#[test]
fn select_checks_the_range() {
    let s = TestServer::start_with(bin(), &["--databases", "4"]);
    let mut c = s.client();
    assert_eq!(c.call(&["SELECT", "3"]).unwrap(), ok());
    assert_eq!(
        c.call(&["SELECT", "4"]).unwrap(),
        err("ERR DB index is out of range")
    );
    assert_eq!(
        c.call(&["SELECT", "-1"]).unwrap(),
        err("ERR DB index is out of range")
    );
    assert_eq!(
        c.call(&["SELECT", "x"]).unwrap(),
        err("ERR value is not an integer or out of range")
    );
    let info = c.call(&["CLIENT", "INFO"]).unwrap();
    assert!(String::from_utf8_lossy(info.as_bytes().unwrap()).contains(" db=3 "));
}

#[test]
fn client_subcommands() {
    let s = TestServer::start_with(bin(), &[]);
    let mut a = s.client();
    let mut b = s.client();
    let id_a = a.call(&["CLIENT", "ID"]).unwrap().as_integer().unwrap();
    let id_b = b.call(&["CLIENT", "ID"]).unwrap().as_integer().unwrap();
    assert_ne!(id_a, id_b);
    assert_eq!(a.call(&["CLIENT", "GETNAME"]).unwrap(), Frame::NullBulk);
    assert_eq!(a.call(&["CLIENT", "SETNAME", "alpha"]).unwrap(), ok());
    assert_eq!(
        a.call(&["CLIENT", "SETNAME", "a b"]).unwrap(),
        err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(
        a.call(&["CLIENT", "SETINFO", "lib-name", "mylib"]).unwrap(),
        ok()
    );
    let list = a.call(&["CLIENT", "LIST"]).unwrap();
    let list = String::from_utf8_lossy(list.as_bytes().unwrap()).to_string();
    assert_eq!(list.lines().count(), 2, "{list}");
    let line = list
        .lines()
        .find(|l| l.contains(&format!("id={id_a} ")))
        .unwrap();
    for field in [
        "addr=127.0.0.1:",
        "laddr=",
        "name=alpha",
        "db=0",
        "cmd=client|list",
        "resp=2",
        "lib-name=mylib",
    ] {
        assert!(line.contains(field), "{field} missing in {line}");
    }
    assert_eq!(
        a.call(&["CLIENT", "KILL", "ID", &id_b.to_string()])
            .unwrap(),
        Frame::Integer(1)
    );
    assert!(b.call(&["PING"]).is_err() || b.call(&["PING"]).is_err());
    assert_eq!(
        a.call(&["CLIENT", "KILL", "1.2.3.4:5"]).unwrap(),
        err("ERR No such client")
    );
}

#[test]
fn quit_replies_then_closes() {
    let s = TestServer::start_with(bin(), &[]);
    let mut sock = s.socket();
    assert_eq!(exchange(&mut sock, b"QUIT\r\nPING\r\n", 5), b"+OK\r\n");
    assert!(is_closed(&mut sock));
}
