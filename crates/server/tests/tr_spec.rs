//! Spec conformance for the TR.* family: replays every table in
//! `tests/spec/*.txt` (format in `tests/spec/README.md`) against a fresh
//! server per file, over the wire (RESP2), comparing every reply exactly.

use std::path::PathBuf;

use roaringd_testkit::{Frame, TestServer};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_roaringd")
}

fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/spec")
}

/// Splits a request line on spaces; `"..."` groups (C escapes inside).
fn split_args(line: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        let mut arg = Vec::new();
        if c == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => arg.push(unescape(chars.next().expect("escape"))),
                    c => arg.extend_from_slice(c.to_string().as_bytes()),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' {
                    break;
                }
                arg.extend_from_slice(c.to_string().as_bytes());
                chars.next();
            }
        }
        out.push(arg);
    }
    out
}

fn unescape(c: char) -> u8 {
    match c {
        'r' => b'\r',
        'n' => b'\n',
        't' => b'\t',
        '0' => 0,
        c => c as u8,
    }
}

/// Parses `[1, [2, 3]]` into nested integer arrays.
fn parse_array(s: &str) -> (Frame, &str) {
    let mut rest = s
        .strip_prefix('[')
        .expect("array starts with [")
        .trim_start();
    let mut items = Vec::new();
    loop {
        if let Some(r) = rest.strip_prefix(']') {
            return (Frame::Array(items), r);
        }
        if rest.starts_with('[') {
            let (f, r) = parse_array(rest);
            items.push(f);
            rest = r;
        } else {
            let end = rest.find([',', ']']).expect("item end");
            items.push(Frame::Integer(
                rest[..end].trim().parse().expect("integer item"),
            ));
            rest = &rest[end..];
        }
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        }
    }
}

fn parse_expected(s: &str) -> Frame {
    let (tag, body) = s.split_at(1);
    match tag {
        ":" => Frame::Integer(body.parse().expect("integer reply")),
        "+" => Frame::Simple(body.as_bytes().to_vec()),
        "-" => Frame::Error(body.as_bytes().to_vec()),
        "$" if body == "nil" => Frame::NullBulk,
        "$" => {
            let inner = body
                .strip_prefix('"')
                .and_then(|b| b.strip_suffix('"'))
                .expect("quoted bulk");
            let mut out = Vec::new();
            let mut it = inner.chars();
            while let Some(c) = it.next() {
                if c == '\\' {
                    out.push(unescape(it.next().expect("escape")));
                } else {
                    out.extend_from_slice(c.to_string().as_bytes());
                }
            }
            Frame::Bulk(out)
        }
        "*" => parse_array(body).0,
        _ => panic!("unknown expectation {s:?}"),
    }
}

fn replay(file: &str) {
    let path = spec_dir().join(file);
    let text = std::fs::read_to_string(&path).expect("spec table");
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    let mut request: Option<(usize, Vec<Vec<u8>>)> = None;
    let mut steps = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if let Some(req) = line.strip_prefix("> ") {
            assert!(request.is_none(), "{file}:{}: request without reply", i + 1);
            request = Some((i + 1, split_args(req)));
        } else if let Some(exp) = line.strip_prefix("< ") {
            let (n, args) = request.take().expect("reply without request");
            let got = c.call(&args).expect("call");
            let want = parse_expected(exp);
            assert_eq!(
                got,
                want,
                "{file}:{n}: {}",
                args.iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            steps += 1;
        }
    }
    assert!(steps > 0, "{file}: no steps");
}

#[test]
fn spec_tr_write() {
    replay("tr_write.txt");
}

#[test]
fn spec_tr_read() {
    replay("tr_read.txt");
}

#[test]
fn spec_tr_setops() {
    replay("tr_setops.txt");
}

#[test]
fn spec_tr_admin() {
    replay("tr_admin.txt");
}

#[test]
fn split_args_handles_quotes() {
    assert_eq!(
        split_args(r#"A "" "b c" d"#),
        vec![b"A".to_vec(), b"".to_vec(), b"b c".to_vec(), b"d".to_vec()]
    );
}
