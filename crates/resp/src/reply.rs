//! Server side: `ReplyEncoder` writes replies as RESP2 or RESP3 into a `Vec<u8>`.
//!
//! RESP3-only types are downgraded for protocol 2 the way Redis does it:
//! map → flat array of 2n elements, set → array, double → bulk string,
//! boolean → integer 0/1, null → `$-1` (or `*-1` for a null array), verbatim
//! string → bulk string, big number → bulk string, push → array. Doubles are
//! formatted like Redis 7.0's `addReplyDouble` (`%.17g`, `inf`, `-inf`).
//! The encoder only appends; it never writes to a socket.

/// Protocol version negotiated by `HELLO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2 (the default for a new connection).
    #[default]
    Resp2,
    /// RESP3.
    Resp3,
}

impl Protocol {
    /// The number `HELLO` reports (2 or 3).
    pub fn number(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// Appends encoded replies to a buffer.
pub struct ReplyEncoder<'a> {
    out: &'a mut Vec<u8>,
    proto: Protocol,
}

impl<'a> ReplyEncoder<'a> {
    /// An encoder appending to `out` in protocol `proto`.
    pub fn new(out: &'a mut Vec<u8>, proto: Protocol) -> Self {
        ReplyEncoder { out, proto }
    }

    /// Bytes in the output buffer so far (earlier replies included).
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// True when the output buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// The protocol this encoder writes.
    pub fn protocol(&self) -> Protocol {
        self.proto
    }

    fn line(&mut self, prefix: u8, n: i64) {
        self.out.push(prefix);
        let mut b = itoa::Buffer::new();
        self.out.extend_from_slice(b.format(n).as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    /// Appends `bytes`, already encoded replies, verbatim. For replies whose
    /// encoding is the same in both protocols (arrays, bulk strings,
    /// integers), or encoded for this encoder's protocol.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// `+text` (a simple string; `\r` and `\n` are replaced by spaces).
    pub fn simple(&mut self, text: &[u8]) {
        self.out.push(b'+');
        self.push_sanitized(text);
        self.out.extend_from_slice(b"\r\n");
    }

    /// `-text`: `text` starts with the error code (`ERR ...`, `WRONGTYPE ...`).
    /// `\r` and `\n` are replaced by spaces.
    pub fn error(&mut self, text: &[u8]) {
        self.out.push(b'-');
        self.push_sanitized(text);
        self.out.extend_from_slice(b"\r\n");
    }

    fn push_sanitized(&mut self, text: &[u8]) {
        if memchr::memchr2(b'\r', b'\n', text).is_none() {
            self.out.extend_from_slice(text);
        } else {
            self.out.extend(
                text.iter()
                    .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
            );
        }
    }

    /// `:n`.
    pub fn integer(&mut self, n: i64) {
        self.line(b':', n);
    }

    /// `$len\r\nbytes\r\n`.
    pub fn bulk(&mut self, bytes: &[u8]) {
        self.line(b'$', bytes.len() as i64);
        self.out.extend_from_slice(bytes);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A null bulk string: RESP2 `$-1`, RESP3 `_`.
    pub fn null(&mut self) {
        match self.proto {
            Protocol::Resp2 => self.out.extend_from_slice(b"$-1\r\n"),
            Protocol::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    /// A null array: RESP2 `*-1`, RESP3 `_`.
    pub fn null_array(&mut self) {
        match self.proto {
            Protocol::Resp2 => self.out.extend_from_slice(b"*-1\r\n"),
            Protocol::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    /// Array header for `n` elements that follow.
    pub fn array_header(&mut self, n: usize) {
        self.line(b'*', n as i64);
    }

    /// Map header for `n` key/value pairs that follow (RESP2: array of 2n).
    pub fn map_header(&mut self, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.line(b'*', 2 * n as i64),
            Protocol::Resp3 => self.line(b'%', n as i64),
        }
    }

    /// Set header for `n` elements that follow (RESP2: array).
    pub fn set_header(&mut self, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.line(b'*', n as i64),
            Protocol::Resp3 => self.line(b'~', n as i64),
        }
    }

    /// Push header for `n` elements that follow (RESP2: array).
    pub fn push_header(&mut self, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.line(b'*', n as i64),
            Protocol::Resp3 => self.line(b'>', n as i64),
        }
    }

    /// A double: RESP3 `,1.5`, RESP2 bulk string `1.5`; `inf`/`-inf`.
    pub fn double(&mut self, d: f64) {
        let mut buf = [0u8; 40];
        let n = format_double(d, &mut buf);
        match self.proto {
            Protocol::Resp2 => self.bulk(&buf[..n]),
            Protocol::Resp3 => {
                self.out.push(b',');
                self.out.extend_from_slice(&buf[..n]);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A boolean: RESP3 `#t`/`#f`, RESP2 integer 1/0.
    pub fn boolean(&mut self, b: bool) {
        match self.proto {
            Protocol::Resp2 => self.integer(i64::from(b)),
            Protocol::Resp3 => self
                .out
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" }),
        }
    }

    /// A verbatim string with a three-letter format (`txt`, `mkd`);
    /// RESP2: a plain bulk string.
    pub fn verbatim(&mut self, format: &[u8; 3], text: &[u8]) {
        match self.proto {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                self.line(b'=', text.len() as i64 + 4);
                self.out.extend_from_slice(format);
                self.out.push(b':');
                self.out.extend_from_slice(text);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// A big number given as decimal digits; RESP2: bulk string.
    pub fn big_number(&mut self, digits: &[u8]) {
        match self.proto {
            Protocol::Resp2 => self.bulk(digits),
            Protocol::Resp3 => {
                self.out.push(b'(');
                self.out.extend_from_slice(digits);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }
}

/// Formats `d` like C's `printf("%.17g")` (Redis 7.0's double replies),
/// with `inf`, `-inf` and `nan`. Returns the number of bytes written.
pub fn format_double(d: f64, buf: &mut [u8; 40]) -> usize {
    use std::io::Write;
    let mut cur = std::io::Cursor::new(&mut buf[..]);
    if d.is_nan() {
        let _ = cur.write_all(b"nan");
    } else if d.is_infinite() {
        let _ = cur.write_all(if d > 0.0 { b"inf" } else { b"-inf" });
    } else if d == 0.0 {
        let _ = cur.write_all(if d.is_sign_negative() { b"-0" } else { b"0" });
    } else {
        // 17 significant digits in scientific form, then %g's layout rules.
        let sci = format!("{:.16e}", d);
        let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let neg = mant.starts_with('-');
        let digits: Vec<u8> = mant.bytes().filter(|c| c.is_ascii_digit()).collect();
        // Trailing zeros are dropped by %g.
        let sig = digits.iter().rposition(|&c| c != b'0').map_or(1, |p| p + 1);
        let digits = &digits[..sig];
        if neg {
            let _ = cur.write_all(b"-");
        }
        if !(-4..17).contains(&exp) {
            let _ = cur.write_all(&digits[..1]);
            if digits.len() > 1 {
                let _ = cur.write_all(b".");
                let _ = cur.write_all(&digits[1..]);
            }
            let _ = write!(
                cur,
                "e{}{:02}",
                if exp < 0 { '-' } else { '+' },
                exp.unsigned_abs()
            );
        } else if exp < 0 {
            let _ = cur.write_all(b"0.");
            for _ in 0..(-exp - 1) {
                let _ = cur.write_all(b"0");
            }
            let _ = cur.write_all(digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                let _ = cur.write_all(digits);
                for _ in digits.len()..int_len {
                    let _ = cur.write_all(b"0");
                }
            } else {
                let _ = cur.write_all(&digits[..int_len]);
                let _ = cur.write_all(b".");
                let _ = cur.write_all(&digits[int_len..]);
            }
        }
    }
    cur.position() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(proto: Protocol, f: impl FnOnce(&mut ReplyEncoder<'_>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut ReplyEncoder::new(&mut out, proto));
        out
    }

    fn g(d: f64) -> String {
        let mut b = [0u8; 40];
        let n = format_double(d, &mut b);
        String::from_utf8(b[..n].to_vec()).unwrap()
    }

    #[test]
    fn doubles_format_like_printf_17g() {
        assert_eq!(g(1.5), "1.5");
        assert_eq!(g(1.0), "1");
        assert_eq!(g(-2.0), "-2");
        assert_eq!(g(0.1), "0.10000000000000001");
        assert_eq!(g(100.0), "100");
        assert_eq!(g(1e17), "1e+17");
        assert_eq!(g(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(g(1e16), "10000000000000000");
        assert_eq!(g(0.0001), "0.0001");
        assert_eq!(g(0.00001), "1.0000000000000001e-05");
        assert_eq!(g(3.0e-300), "3.0000000000000002e-300");
        assert_eq!(g(f64::INFINITY), "inf");
        assert_eq!(g(f64::NEG_INFINITY), "-inf");
        assert_eq!(g(0.0), "0");
    }

    #[test]
    fn resp3_types_downgrade_for_resp2() {
        assert_eq!(enc(Protocol::Resp3, |e| e.double(1.5)), b",1.5\r\n");
        assert_eq!(enc(Protocol::Resp2, |e| e.double(1.5)), b"$3\r\n1.5\r\n");
        assert_eq!(enc(Protocol::Resp3, |e| e.null()), b"_\r\n");
        assert_eq!(enc(Protocol::Resp2, |e| e.null()), b"$-1\r\n");
        assert_eq!(enc(Protocol::Resp2, |e| e.null_array()), b"*-1\r\n");
        assert_eq!(enc(Protocol::Resp2, |e| e.map_header(2)), b"*4\r\n");
        assert_eq!(enc(Protocol::Resp3, |e| e.map_header(2)), b"%2\r\n");
        assert_eq!(enc(Protocol::Resp2, |e| e.boolean(true)), b":1\r\n");
        assert_eq!(enc(Protocol::Resp3, |e| e.boolean(false)), b"#f\r\n");
        assert_eq!(
            enc(Protocol::Resp3, |e| e.verbatim(b"txt", b"hi")),
            b"=6\r\ntxt:hi\r\n"
        );
        assert_eq!(
            enc(Protocol::Resp2, |e| e.error(b"ERR a\r\nb")),
            b"-ERR a  b\r\n"
        );
    }
}
