//! Server side: parse requests (multibulk `*N $len ...` or inline text) with
//! Redis's limits and error texts.
//!
//! [`RequestParser`] is resumable: when a request is only partly buffered
//! it remembers how far it got, so a large request arriving in many reads
//! is scanned once. It never allocates from a length the client sent: the
//! only growth is one [`Span`] per argument actually present in the buffer
//! (and, for inline requests, a copy of the line's bytes). Multibulk
//! arguments are not copied: their spans point into the caller's buffer.

use crate::args::{Args, Span};

/// Redis's `PROTO_INLINE_MAX_SIZE`: longest inline request and longest
/// `*N` / `$N` header line.
pub const INLINE_MAX: usize = 64 * 1024;

/// Request size limits (Redis defaults from [`Limits::default`]).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// `proto-max-bulk-len`: longest bulk argument (default 512 MB).
    pub max_bulk_len: usize,
    /// Most arguments in one multibulk request (default 1024 * 1024).
    pub max_multibulk_len: usize,
    /// Longest inline request (default 64 KB).
    pub max_inline_len: usize,
    /// `client-query-buffer-limit` (default 1 GB); enforced by the caller
    /// on its read buffer.
    pub max_query_buf: usize,
    /// When true (authentication required and not yet given), Redis's tighter
    /// limits apply: at most 10 arguments of at most 16384 bytes.
    pub unauthenticated: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_multibulk_len: 1024 * 1024,
            max_inline_len: INLINE_MAX,
            max_query_buf: 1024 * 1024 * 1024,
            unauthenticated: false,
        }
    }
}

/// A malformed or oversized request. The client gets the error, then the
/// connection is closed (as Redis does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// `*N` with N not an integer or above the limit.
    InvalidMultibulkLength,
    /// `$N` with N not an integer, negative or above `proto-max-bulk-len`.
    InvalidBulkLength,
    /// Inline request longer than the limit with no newline.
    TooBigInline,
    /// `*N` header line longer than the limit with no newline.
    TooBigMbulkCount,
    /// `$N` header line longer than the limit with no newline.
    TooBigBulkCount,
    /// An element of a multibulk request that does not start with `$`.
    ExpectedDollar(u8),
    /// Inline request with unbalanced quotes.
    UnbalancedQuotes,
    /// More than 10 arguments before authentication.
    UnauthenticatedMultibulkLength,
    /// A bulk longer than 16384 bytes before authentication.
    UnauthenticatedBulkLength,
}

impl ProtocolError {
    /// The full error reply text, as Redis writes it (without the `-`).
    pub fn message(&self) -> String {
        match self {
            ProtocolError::InvalidMultibulkLength => {
                "ERR Protocol error: invalid multibulk length".into()
            }
            ProtocolError::InvalidBulkLength => "ERR Protocol error: invalid bulk length".into(),
            ProtocolError::TooBigInline => "ERR Protocol error: too big inline request".into(),
            ProtocolError::TooBigMbulkCount => {
                "ERR Protocol error: too big mbulk count string".into()
            }
            ProtocolError::TooBigBulkCount => {
                "ERR Protocol error: too big bulk count string".into()
            }
            ProtocolError::ExpectedDollar(c) => {
                format!("ERR Protocol error: expected '$', got '{}'", *c as char)
            }
            ProtocolError::UnbalancedQuotes => {
                "ERR Protocol error: unbalanced quotes in request".into()
            }
            ProtocolError::UnauthenticatedMultibulkLength => {
                "ERR Protocol error: unauthenticated multibulk length".into()
            }
            ProtocolError::UnauthenticatedBulkLength => {
                "ERR Protocol error: unauthenticated bulk length".into()
            }
        }
    }
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ProtocolError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Nothing parsed of the current request.
    Start,
    /// Inside a multibulk request: `left` arguments still to read.
    Multibulk { left: usize },
    /// The last call returned a complete request; the next call starts over.
    Done { inline: bool },
}

/// Resumable request parser; one per connection, reused for every request.
#[derive(Debug)]
pub struct RequestParser {
    state: State,
    /// Offset (from the start of the request) of the next unparsed byte.
    pos: usize,
    spans: Vec<Span>,
    /// Inline arguments, copied (quotes and escapes resolved).
    inline: Vec<u8>,
}

impl Default for RequestParser {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestParser {
    /// A parser waiting for the start of a request.
    pub fn new() -> Self {
        RequestParser {
            state: State::Start,
            pos: 0,
            spans: Vec::new(),
            inline: Vec::new(),
        }
    }

    /// Parses the request that starts at `buf[0]`.
    ///
    /// Returns `Ok(Some(consumed))` when a whole request is buffered: its
    /// arguments are then available from [`RequestParser::args`] (called
    /// with the same `buf`) until the next call. An empty request (blank
    /// inline line, `*0`, `*-1`) is reported with zero arguments. Returns
    /// `Ok(None)` when more bytes are needed; the next call must pass a
    /// buffer that starts at the same request (it may have grown).
    ///
    /// # Errors
    /// A [`ProtocolError`]; the caller replies with it and closes.
    pub fn parse(&mut self, buf: &[u8], limits: &Limits) -> Result<Option<usize>, ProtocolError> {
        if let State::Done { .. } = self.state {
            self.reset();
        }
        if self.state == State::Start {
            if buf.is_empty() {
                return Ok(None);
            }
            if buf[0] != b'*' {
                return self.parse_inline(buf, limits);
            }
            let Some((n, next)) = header_line(buf, 0, ProtocolError::TooBigMbulkCount)? else {
                return Ok(None);
            };
            let n = n.ok_or(ProtocolError::InvalidMultibulkLength)?;
            if n > limits.max_multibulk_len as i64 || n > i32::MAX as i64 {
                return Err(ProtocolError::InvalidMultibulkLength);
            }
            if limits.unauthenticated && n > 10 {
                return Err(ProtocolError::UnauthenticatedMultibulkLength);
            }
            self.pos = next;
            if n <= 0 {
                self.state = State::Done { inline: false };
                return Ok(Some(next));
            }
            self.state = State::Multibulk { left: n as usize };
        }
        let State::Multibulk { mut left } = self.state else {
            unreachable!("state is Multibulk here");
        };
        while left > 0 {
            let Some(&c) = buf.get(self.pos) else {
                self.state = State::Multibulk { left };
                return Ok(None);
            };
            if c != b'$' {
                return Err(ProtocolError::ExpectedDollar(c));
            }
            let Some((len, next)) = header_line(buf, self.pos, ProtocolError::TooBigBulkCount)?
            else {
                self.state = State::Multibulk { left };
                return Ok(None);
            };
            let len = match len {
                Some(l) if l >= 0 && l as u64 <= limits.max_bulk_len as u64 => l as usize,
                _ => return Err(ProtocolError::InvalidBulkLength),
            };
            if limits.unauthenticated && len > 16384 {
                return Err(ProtocolError::UnauthenticatedBulkLength);
            }
            // The payload plus CRLF must be buffered before anything is recorded.
            if buf.len() < next + len + 2 {
                self.state = State::Multibulk { left };
                return Ok(None);
            }
            self.spans.push(Span {
                start: next,
                end: next + len,
            });
            self.pos = next + len + 2;
            left -= 1;
        }
        self.state = State::Done { inline: false };
        Ok(Some(self.pos))
    }

    fn parse_inline(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<Option<usize>, ProtocolError> {
        let Some(nl) = memchr::memchr(b'\n', buf) else {
            if buf.len() > limits.max_inline_len {
                return Err(ProtocolError::TooBigInline);
            }
            return Ok(None);
        };
        if nl > limits.max_inline_len {
            return Err(ProtocolError::TooBigInline);
        }
        let mut line = &buf[..nl];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        split_args(line, &mut self.inline, &mut self.spans)?;
        self.state = State::Done { inline: true };
        Ok(Some(nl + 1))
    }

    /// Number of arguments of the last complete request.
    pub fn argc(&self) -> usize {
        self.spans.len()
    }

    /// The spans of the last complete multibulk request (relative to the
    /// `buf` passed to `parse`), or `None` for an inline request (whose
    /// arguments live in the parser's own buffer).
    pub fn multibulk_spans(&self) -> Option<&[Span]> {
        match self.state {
            State::Done { inline: true } => None,
            _ => Some(&self.spans),
        }
    }

    /// The arguments of the last complete request; `buf` must be the buffer
    /// passed to the [`RequestParser::parse`] call that completed it.
    pub fn args<'a>(&'a self, buf: &'a [u8]) -> Args<'a> {
        match self.state {
            State::Done { inline: true } => Args::new(&self.inline, &self.spans),
            _ => Args::new(buf, &self.spans),
        }
    }

    /// Forgets any partial request.
    pub fn reset(&mut self) {
        self.state = State::Start;
        self.pos = 0;
        self.spans.clear();
        self.inline.clear();
    }

    /// True when part of a request has been parsed but it is not complete.
    pub fn in_progress(&self) -> bool {
        matches!(self.state, State::Multibulk { .. })
    }
}

/// Reads a `*N\r\n` or `$N\r\n` header starting at `buf[at]` (the type byte).
/// `Ok(None)`: no newline yet. `Ok(Some((None, _)))`: not an integer.
fn header_line(
    buf: &[u8],
    at: usize,
    too_big: ProtocolError,
) -> Result<Option<(Option<i64>, usize)>, ProtocolError> {
    match short_header(buf, at) {
        Some(found) => Ok(Some(found)),
        None => scanned_header(buf, at, too_big),
    }
}

/// [`header_line`] by a search for the line's end, for any header.
fn scanned_header(
    buf: &[u8],
    at: usize,
    too_big: ProtocolError,
) -> Result<Option<(Option<i64>, usize)>, ProtocolError> {
    let search_end = buf.len().min(at + INLINE_MAX + 2);
    let Some(cr) = memchr::memchr(b'\r', &buf[at..search_end]) else {
        if buf.len() - at > INLINE_MAX {
            return Err(too_big);
        }
        return Ok(None);
    };
    let cr = at + cr;
    if cr + 1 >= buf.len() {
        return Ok(None);
    }
    let n = roaringd_compat::number::parse_i64(&buf[at + 1..cr]);
    Ok(Some((n, cr + 2)))
}

/// The common header, read without a search for its end: a canonical
/// count of at most [`SHORT_DIGITS`] digits (no sign, no leading zero)
/// and its `\r\n`, all buffered. `None` for anything else (the general
/// path of [`header_line`] decides it: the same value, or its error).
fn short_header(buf: &[u8], at: usize) -> Option<(Option<i64>, usize)> {
    let digits = buf.get(at + 1..)?;
    let mut n: i64 = 0;
    for (i, &c) in digits.iter().enumerate().take(SHORT_DIGITS + 1) {
        match c {
            b'0'..=b'9' if i < SHORT_DIGITS && !(i == 1 && n == 0) => {
                n = n * 10 + i64::from(c - b'0');
            }
            b'\r' if i > 0 && digits.get(i + 1) == Some(&b'\n') => {
                return Some((Some(n), at + 1 + i + 2));
            }
            _ => return None,
        }
    }
    None
}

/// Most digits [`short_header`] reads: any count of this many fits an
/// `i64` without a check.
const SHORT_DIGITS: usize = 18;

/// Splits an inline line like Redis's `sdssplitargs`: whitespace separated,
/// `"..."` with `\n \r \t \b \a \\ \" \xHH` escapes, `'...'` with `\'`.
fn split_args(line: &[u8], out: &mut Vec<u8>, spans: &mut Vec<Span>) -> Result<(), ProtocolError> {
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Ok(());
        }
        let start = out.len();
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            if in_dq {
                if i >= n {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < n
                    && line[i + 1] == b'x'
                    && line[i + 2].is_ascii_hexdigit()
                    && line[i + 3].is_ascii_hexdigit()
                {
                    out.push(hex(line[i + 2]) * 16 + hex(line[i + 3]));
                    i += 3;
                } else if c == b'\\' && i + 1 < n {
                    i += 1;
                    out.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    // The closing quote must be followed by a space or the end.
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    i += 1;
                    break;
                } else {
                    out.push(c);
                }
            } else if in_sq {
                if i >= n {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    out.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    i += 1;
                    break;
                } else {
                    out.push(c);
                }
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    c if is_space(c) => break,
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    c => out.push(c),
                }
            }
            i += 1;
        }
        spans.push(Span {
            start,
            end: out.len(),
        });
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut p = RequestParser::new();
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(n) = p.parse(&input[at..], &Limits::default())? {
            out.push(p.args(&input[at..]).all().map(|a| a.to_vec()).collect());
            at += n;
        }
        Ok(out)
    }

    #[test]
    fn the_short_header_reads_what_the_scan_reads() {
        let bodies: &[&[u8]] = &[
            b"0",
            b"1",
            b"9",
            b"10",
            b"16",
            b"007",
            b"00",
            b"-1",
            b"+5",
            b"1a",
            b"",
            b" 3",
            b"999999999999999999",
            b"9999999999999999999",
            b"12345678901234567890",
        ];
        let ends: &[&[u8]] = &[b"\r\n", b"\r", b"", b"\rx", b"\n", b"\r\nrest"];
        for body in bodies {
            for end in ends {
                let buf = [b"$".as_slice(), body, end].concat();
                let scanned = scanned_header(&buf, 0, ProtocolError::TooBigBulkCount)
                    .ok()
                    .flatten();
                if let Some(short) = short_header(&buf, 0) {
                    assert_eq!(Some(short), scanned, "{:?}", String::from_utf8_lossy(&buf));
                }
            }
        }
        assert_eq!(short_header(b"$16\r\nx", 0), Some((Some(16), 5)));
        assert_eq!(short_header(b"*0\r\n", 0), Some((Some(0), 4)));
        assert_eq!(short_header(b"$007\r\n", 0), None);
    }

    fn v(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_and_inline_requests_parse() {
        let r = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\nset a \"b c\\x41\" 'd\\'e'\r\n")
            .unwrap();
        assert_eq!(r[0], v(&["GET", "k"]));
        assert_eq!(r[1], v(&["PING"]));
        assert_eq!(r[2], v(&["set", "a", "b cA", "d'e"]));
    }

    #[test]
    fn partial_request_resumes_byte_by_byte() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
        let mut p = RequestParser::new();
        for end in 0..input.len() {
            assert_eq!(p.parse(&input[..end], &Limits::default()), Ok(None));
        }
        assert_eq!(p.parse(input, &Limits::default()), Ok(Some(input.len())));
        let got: Vec<_> = p.args(input).all().collect();
        assert_eq!(got, vec![&b"SET"[..], b"k", b"hello"]);
    }

    #[test]
    fn hostile_lengths_are_rejected_without_allocation() {
        assert_eq!(
            parse_all(b"*99999999999\r\n"),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            parse_all(b"*1048577\r\n"),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            parse_all(b"*1\r\n$536870913\r\n"),
            Err(ProtocolError::InvalidBulkLength)
        );
        assert_eq!(
            parse_all(b"*1\r\n$-1\r\n"),
            Err(ProtocolError::InvalidBulkLength)
        );
        assert_eq!(
            parse_all(b"*x\r\n"),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            parse_all(b"*1\r\nx\r\n").unwrap_err().message(),
            "ERR Protocol error: expected '$', got 'x'"
        );
        // A huge declared bulk that is not yet buffered is simply incomplete.
        assert_eq!(parse_all(b"*1\r\n$536870912\r\nabc"), Ok(vec![]));
        assert_eq!(parse_all(b"\"abc"), Ok(vec![]));
        assert_eq!(
            parse_all(b"\"abc\r\n"),
            Err(ProtocolError::UnbalancedQuotes)
        );
    }

    #[test]
    fn oversized_inline_and_headers_are_rejected() {
        let big = vec![b'a'; INLINE_MAX + 1];
        assert_eq!(parse_all(&big), Err(ProtocolError::TooBigInline));
        let mut hdr = b"*1\r\n$".to_vec();
        hdr.extend(std::iter::repeat_n(b'1', INLINE_MAX + 1));
        assert_eq!(parse_all(&hdr), Err(ProtocolError::TooBigBulkCount));
    }

    #[test]
    fn empty_requests_have_no_arguments() {
        assert_eq!(
            parse_all(b"\r\n*0\r\n   \n").unwrap(),
            vec![vec![]; 3] as Vec<Vec<Vec<u8>>>
        );
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn encode(args: &[Vec<u8>]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut p = RequestParser::new();
            let mut at = 0;
            while at < data.len() {
                match p.parse(&data[at..], &Limits::default()) {
                    Ok(Some(n)) => {
                        prop_assert!(n > 0);
                        let _ = p.args(&data[at..]).all().count();
                        at += n;
                    }
                    _ => break,
                }
            }
        }

        #[test]
        fn encoded_requests_round_trip_in_any_split(
            reqs in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6), 1..5),
            split in 0usize..400,
        ) {
            let mut wire = Vec::new();
            for r in &reqs {
                wire.extend_from_slice(&encode(r));
            }
            let split = split.min(wire.len());
            // Feed the first `split` bytes, then everything.
            let mut p = RequestParser::new();
            let mut got: Vec<Vec<Vec<u8>>> = Vec::new();
            let mut at = 0;
            for end in [split, wire.len()] {
                while at < end {
                    match p.parse(&wire[at..end], &Limits::default()).unwrap() {
                        Some(n) => {
                            got.push(p.args(&wire[at..end]).all().map(<[u8]>::to_vec).collect());
                            at += n;
                        }
                        None => break,
                    }
                }
            }
            prop_assert_eq!(got, reqs);
        }
    }
}
