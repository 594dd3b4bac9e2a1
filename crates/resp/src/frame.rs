//! Client side: [`Frame`], one reply of any RESP2 or RESP3 type, with an
//! incremental decoder and an encoder.
//!
//! The decoder works on a caller-owned buffer and never consumes anything:
//! [`Frame::decode`] returns `Ok(None)` until a whole frame is buffered and
//! then the frame and the number of bytes it took. It allocates only for
//! bytes that are already in the buffer: a declared bulk length is checked
//! against the buffered bytes before anything is copied, and an aggregate's
//! declared element count only reserves as many slots as the remaining bytes
//! could possibly hold. Nesting is limited to [`MAX_DEPTH`] so a hostile
//! peer cannot exhaust the stack.
//!
//! RESP3 streamed strings and aggregates (`$?`, `*?`) are not supported
//! (Redis never sends them); they decode as [`DecodeError::Unsupported`].

use std::fmt;

/// The deepest nesting of aggregates (and attributes) that [`Frame::decode`]
/// accepts.
pub const MAX_DEPTH: usize = 128;

/// One RESP2/RESP3 value. Strings are bytes; integers are signed.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// `+OK\r\n`. Never contains CR or LF.
    Simple(Vec<u8>),
    /// `-ERR message\r\n`. Never contains CR or LF.
    Error(Vec<u8>),
    /// `:-42\r\n`.
    Integer(i64),
    /// `$3\r\nfoo\r\n`.
    Bulk(Vec<u8>),
    /// RESP2 null bulk string, `$-1\r\n`.
    NullBulk,
    /// RESP2 null array, `*-1\r\n`.
    NullArray,
    /// RESP3 null, `_\r\n`.
    Null,
    /// `*2\r\n...`.
    Array(Vec<Frame>),
    /// RESP3 map, `%1\r\n<key><value>`, in wire order.
    Map(Vec<(Frame, Frame)>),
    /// RESP3 set, `~2\r\n...`, in wire order.
    Set(Vec<Frame>),
    /// RESP3 double, `,3.14\r\n` (also `inf`, `-inf`, `nan`).
    Double(f64),
    /// RESP3 boolean, `#t\r\n` / `#f\r\n`.
    Boolean(bool),
    /// RESP3 big number, `(12345678901234567890\r\n`: an optional sign and
    /// decimal digits, kept as text.
    BigNumber(Vec<u8>),
    /// RESP3 verbatim string, `=15\r\ntxt:Some string\r\n`.
    Verbatim {
        /// The three-byte format, e.g. `txt` or `mkd`.
        format: [u8; 3],
        /// The text after the `xxx:` prefix.
        text: Vec<u8>,
    },
    /// RESP3 bulk error, `!21\r\nSYNTAX invalid syntax\r\n`.
    BulkError(Vec<u8>),
    /// RESP3 push, `>2\r\n...` (out-of-band data such as pub/sub messages).
    Push(Vec<Frame>),
    /// RESP3 attribute, `|1\r\n<key><value>`, together with the frame it
    /// annotates (the frame that follows it on the wire).
    Attribute {
        /// The attribute map, in wire order.
        attributes: Vec<(Frame, Frame)>,
        /// The annotated frame.
        value: Box<Frame>,
    },
}

/// Why bytes are not a valid frame. Any error means the stream is out of
/// sync: the connection should be closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The first byte of a frame is not a RESP type byte.
    UnknownType(u8),
    /// A line is not terminated by CRLF, or a lone CR or LF appears in it.
    BadLineEnding,
    /// A bulk payload is not followed by CRLF.
    BadPayloadEnding,
    /// An integer or length is not a valid signed 64-bit decimal.
    BadInteger,
    /// A length is negative (other than `-1` where RESP2 allows it).
    BadLength,
    /// A double is not a valid floating point number.
    BadDouble,
    /// A boolean is neither `t` nor `f`.
    BadBoolean,
    /// A big number is not an optional sign followed by decimal digits.
    BadBigNumber,
    /// A verbatim string is shorter than 4 bytes or lacks the `:` after its
    /// format.
    BadVerbatim,
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
    /// A streamed string or aggregate (`?` length), which is not supported.
    Unsupported,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::UnknownType(b) => write!(f, "unknown RESP type byte 0x{b:02x}"),
            DecodeError::BadLineEnding => f.write_str("line not terminated by CRLF"),
            DecodeError::BadPayloadEnding => f.write_str("bulk payload not followed by CRLF"),
            DecodeError::BadInteger => f.write_str("invalid integer"),
            DecodeError::BadLength => f.write_str("invalid length"),
            DecodeError::BadDouble => f.write_str("invalid double"),
            DecodeError::BadBoolean => f.write_str("invalid boolean"),
            DecodeError::BadBigNumber => f.write_str("invalid big number"),
            DecodeError::BadVerbatim => f.write_str("invalid verbatim string"),
            DecodeError::TooDeep => write!(f, "frames nested deeper than {MAX_DEPTH}"),
            DecodeError::Unsupported => f.write_str("streamed RESP3 types are not supported"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl Frame {
    /// Decodes one frame from the front of `buf`.
    ///
    /// Returns `Ok(None)` if `buf` holds only a prefix of a frame (read more
    /// and call again with the longer buffer), or the frame and the number of
    /// bytes it occupies; bytes after it are left alone.
    ///
    /// # Errors
    /// [`DecodeError`] if the bytes cannot be the start of a valid frame.
    pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, DecodeError> {
        let mut parser = Parser { buf, pos: 0 };
        match parser.frame(0) {
            Ok(frame) => Ok(Some((frame, parser.pos))),
            Err(Halt::Incomplete) => Ok(None),
            Err(Halt::Invalid(e)) => Err(e),
        }
    }

    /// Appends the wire form of `self` to `out`. Decoding the result gives
    /// back an equal frame (for `Simple` and `Error`, provided the text has no
    /// CR or LF; for `Double`, NaN excepted since NaN != NaN).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Frame::Simple(s) => line(out, b'+', s),
            Frame::Error(s) => line(out, b'-', s),
            Frame::Integer(n) => header(out, b':', *n),
            Frame::Bulk(b) => blob(out, b'$', b),
            Frame::NullBulk => out.extend_from_slice(b"$-1\r\n"),
            Frame::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Frame::Null => out.extend_from_slice(b"_\r\n"),
            Frame::Array(items) => seq(out, b'*', items),
            Frame::Set(items) => seq(out, b'~', items),
            Frame::Push(items) => seq(out, b'>', items),
            Frame::Map(pairs) => pairs_of(out, b'%', pairs),
            Frame::Double(d) => {
                out.push(b',');
                if d.is_nan() {
                    out.extend_from_slice(b"nan");
                } else if d.is_infinite() {
                    out.extend_from_slice(if *d > 0.0 { b"inf" } else { b"-inf" });
                } else {
                    out.extend_from_slice(ryu::Buffer::new().format_finite(*d).as_bytes());
                }
                out.extend_from_slice(b"\r\n");
            }
            Frame::Boolean(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Frame::BigNumber(s) => line(out, b'(', s),
            Frame::Verbatim { format, text } => {
                header(out, b'=', (text.len() + 4) as i64);
                out.extend_from_slice(format);
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Frame::BulkError(b) => blob(out, b'!', b),
            Frame::Attribute { attributes, value } => {
                pairs_of(out, b'|', attributes);
                value.encode(out);
            }
        }
    }

    /// `Simple` from text or bytes (for tests: `Frame::simple("OK")`).
    pub fn simple(text: impl AsRef<[u8]>) -> Frame {
        Frame::Simple(text.as_ref().to_vec())
    }

    /// `Error` from text or bytes.
    pub fn error(text: impl AsRef<[u8]>) -> Frame {
        Frame::Error(text.as_ref().to_vec())
    }

    /// `Bulk` from text or bytes.
    pub fn bulk(bytes: impl AsRef<[u8]>) -> Frame {
        Frame::Bulk(bytes.as_ref().to_vec())
    }

    /// The wire form of `self` as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// True for `Error` and `BulkError`, also behind an attribute.
    pub fn is_error(&self) -> bool {
        match self {
            Frame::Error(_) | Frame::BulkError(_) => true,
            Frame::Attribute { value, .. } => value.is_error(),
            _ => false,
        }
    }

    /// True for `Null`, `NullBulk` and `NullArray`.
    pub fn is_null(&self) -> bool {
        matches!(self, Frame::Null | Frame::NullBulk | Frame::NullArray)
    }

    /// The bytes of a string-like frame (simple, bulk, error, bulk error,
    /// verbatim text, big number); `None` for any other type.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Frame::Simple(b)
            | Frame::Error(b)
            | Frame::Bulk(b)
            | Frame::BulkError(b)
            | Frame::BigNumber(b)
            | Frame::Verbatim { text: b, .. } => Some(b),
            _ => None,
        }
    }

    /// The value of an `Integer` frame.
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Frame::Integer(n) => Some(*n),
            _ => None,
        }
    }

    /// The elements of an `Array`, `Set` or `Push`.
    pub fn as_items(&self) -> Option<&[Frame]> {
        match self {
            Frame::Array(v) | Frame::Set(v) | Frame::Push(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for Frame {
    /// A redis-cli-like one-line rendering, for messages and logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list(f: &mut fmt::Formatter<'_>, open: &str, items: &[Frame]) -> fmt::Result {
            f.write_str(open)?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{item}")?;
            }
            f.write_str("]")
        }
        fn map(f: &mut fmt::Formatter<'_>, pairs: &[(Frame, Frame)]) -> fmt::Result {
            f.write_str("{")?;
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{k}: {v}")?;
            }
            f.write_str("}")
        }
        match self {
            Frame::Simple(s) => write!(f, "{}", String::from_utf8_lossy(s)),
            Frame::Error(s) | Frame::BulkError(s) => {
                write!(f, "(error) {}", String::from_utf8_lossy(s))
            }
            Frame::Integer(n) => write!(f, "(integer) {n}"),
            Frame::Bulk(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            Frame::NullBulk | Frame::NullArray | Frame::Null => f.write_str("(nil)"),
            Frame::Array(v) => list(f, "[", v),
            Frame::Set(v) => list(f, "set[", v),
            Frame::Push(v) => list(f, "push[", v),
            Frame::Map(p) => map(f, p),
            Frame::Double(d) => write!(f, "(double) {d}"),
            Frame::Boolean(b) => write!(f, "(boolean) {b}"),
            Frame::BigNumber(s) => write!(f, "(big number) {}", String::from_utf8_lossy(s)),
            Frame::Verbatim { text, .. } => write!(f, "{:?}", String::from_utf8_lossy(text)),
            Frame::Attribute { value, .. } => write!(f, "{value}"),
        }
    }
}

fn line(out: &mut Vec<u8>, kind: u8, text: &[u8]) {
    out.push(kind);
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

fn header(out: &mut Vec<u8>, kind: u8, n: i64) {
    out.push(kind);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn blob(out: &mut Vec<u8>, kind: u8, bytes: &[u8]) {
    header(out, kind, bytes.len() as i64);
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

fn seq(out: &mut Vec<u8>, kind: u8, items: &[Frame]) {
    header(out, kind, items.len() as i64);
    for item in items {
        item.encode(out);
    }
}

fn pairs_of(out: &mut Vec<u8>, kind: u8, pairs: &[(Frame, Frame)]) {
    header(out, kind, pairs.len() as i64);
    for (k, v) in pairs {
        k.encode(out);
        v.encode(out);
    }
}

/// Why parsing stopped: more bytes are needed, or the bytes are invalid.
enum Halt {
    Incomplete,
    Invalid(DecodeError),
}

impl From<DecodeError> for Halt {
    fn from(e: DecodeError) -> Self {
        Halt::Invalid(e)
    }
}

/// The smallest number of bytes one frame can take (`_\r\n`), used to bound
/// the capacity reserved for a declared element count.
const MIN_FRAME_LEN: usize = 3;

struct Parser<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn frame(&mut self, depth: usize) -> Result<Frame, Halt> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::TooDeep.into());
        }
        let kind = *self.buf.get(self.pos).ok_or(Halt::Incomplete)?;
        self.pos += 1;
        Ok(match kind {
            b'+' => Frame::Simple(self.line()?.to_vec()),
            b'-' => Frame::Error(self.line()?.to_vec()),
            b':' => Frame::Integer(parse_i64(self.line()?)?),
            b'$' => match self.length(true)? {
                None => Frame::NullBulk,
                Some(n) => Frame::Bulk(self.payload(n)?.to_vec()),
            },
            b'!' => {
                let n = self.count()?;
                Frame::BulkError(self.payload(n)?.to_vec())
            }
            b'=' => {
                let n = self.count()?;
                let body = self.payload(n)?;
                if body.len() < 4 || body[3] != b':' {
                    return Err(DecodeError::BadVerbatim.into());
                }
                Frame::Verbatim {
                    format: [body[0], body[1], body[2]],
                    text: body[4..].to_vec(),
                }
            }
            b'*' => match self.length(true)? {
                None => Frame::NullArray,
                Some(n) => Frame::Array(self.items(n, depth)?),
            },
            b'~' => {
                let n = self.count()?;
                Frame::Set(self.items(n, depth)?)
            }
            b'>' => {
                let n = self.count()?;
                Frame::Push(self.items(n, depth)?)
            }
            b'%' => {
                let n = self.count()?;
                Frame::Map(self.pairs(n, depth)?)
            }
            b'|' => {
                let n = self.count()?;
                let attributes = self.pairs(n, depth)?;
                let value = Box::new(self.frame(depth + 1)?);
                Frame::Attribute { attributes, value }
            }
            b'_' => {
                if !self.line()?.is_empty() {
                    return Err(DecodeError::BadLineEnding.into());
                }
                Frame::Null
            }
            b',' => Frame::Double(parse_f64(self.line()?)?),
            b'#' => match self.line()? {
                b"t" => Frame::Boolean(true),
                b"f" => Frame::Boolean(false),
                _ => return Err(DecodeError::BadBoolean.into()),
            },
            b'(' => {
                let text = self.line()?;
                let digits = match text.first() {
                    Some(b'+' | b'-') => &text[1..],
                    _ => text,
                };
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return Err(DecodeError::BadBigNumber.into());
                }
                Frame::BigNumber(text.to_vec())
            }
            other => return Err(DecodeError::UnknownType(other).into()),
        })
    }

    /// The bytes up to the next CRLF, which is consumed. CR and LF may not
    /// appear otherwise.
    fn line(&mut self) -> Result<&'a [u8], Halt> {
        let rest = &self.buf[self.pos..];
        let at = memchr::memchr2(b'\r', b'\n', rest).ok_or(Halt::Incomplete)?;
        match rest.get(at..at + 2) {
            _ if rest[at] == b'\n' => Err(DecodeError::BadLineEnding.into()),
            None => Err(Halt::Incomplete),
            Some(b"\r\n") => {
                self.pos += at + 2;
                Ok(&rest[..at])
            }
            Some(_) => Err(DecodeError::BadLineEnding.into()),
        }
    }

    /// A length line; `-1` is `None` where `allow_null`.
    fn length(&mut self, allow_null: bool) -> Result<Option<usize>, Halt> {
        let text = self.line()?;
        if text == b"?" {
            return Err(DecodeError::Unsupported.into());
        }
        match parse_i64(text)? {
            -1 if allow_null => Ok(None),
            n if n < 0 => Err(DecodeError::BadLength.into()),
            n => usize::try_from(n)
                .map(Some)
                .map_err(|_| DecodeError::BadLength.into()),
        }
    }

    /// A length line that may not be `-1`.
    fn count(&mut self) -> Result<usize, Halt> {
        Ok(self.length(false)?.unwrap_or_default())
    }

    /// `n` bytes followed by CRLF; nothing is copied here.
    fn payload(&mut self, n: usize) -> Result<&'a [u8], Halt> {
        let end = self.pos.checked_add(n).ok_or(DecodeError::BadLength)?;
        let after = end.checked_add(2).ok_or(DecodeError::BadLength)?;
        if after > self.buf.len() {
            return Err(Halt::Incomplete);
        }
        if &self.buf[end..after] != b"\r\n" {
            return Err(DecodeError::BadPayloadEnding.into());
        }
        let body = &self.buf[self.pos..end];
        self.pos = after;
        Ok(body)
    }

    /// Capacity for `n` declared elements of at least `each` bytes: never more
    /// than the buffered bytes could hold.
    fn capacity(&self, n: usize, each: usize) -> usize {
        n.min((self.buf.len() - self.pos) / each)
    }

    fn items(&mut self, n: usize, depth: usize) -> Result<Vec<Frame>, Halt> {
        let mut items = Vec::with_capacity(self.capacity(n, MIN_FRAME_LEN));
        for _ in 0..n {
            items.push(self.frame(depth + 1)?);
        }
        Ok(items)
    }

    fn pairs(&mut self, n: usize, depth: usize) -> Result<Vec<(Frame, Frame)>, Halt> {
        let mut pairs = Vec::with_capacity(self.capacity(n, 2 * MIN_FRAME_LEN));
        for _ in 0..n {
            let k = self.frame(depth + 1)?;
            let v = self.frame(depth + 1)?;
            pairs.push((k, v));
        }
        Ok(pairs)
    }
}

fn parse_i64(text: &[u8]) -> Result<i64, DecodeError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(DecodeError::BadInteger)
}

fn parse_f64(text: &[u8]) -> Result<f64, DecodeError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(DecodeError::BadDouble)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(bytes: &[u8]) -> Frame {
        let (frame, used) = Frame::decode(bytes).unwrap().unwrap();
        assert_eq!(used, bytes.len(), "left over bytes");
        frame
    }

    #[test]
    fn decode_resp2_scalars_gives_their_values() {
        assert_eq!(decode_all(b"+OK\r\n"), Frame::Simple(b"OK".to_vec()));
        assert_eq!(
            decode_all(b"-ERR wrong\r\n"),
            Frame::Error(b"ERR wrong".to_vec())
        );
        assert_eq!(decode_all(b":-42\r\n"), Frame::Integer(-42));
        assert_eq!(
            decode_all(b":-9223372036854775808\r\n"),
            Frame::Integer(i64::MIN)
        );
        assert_eq!(decode_all(b":+7\r\n"), Frame::Integer(7));
        assert_eq!(
            decode_all(b"$5\r\na\r\nbc\r\n"),
            Frame::Bulk(b"a\r\nbc".to_vec())
        );
        assert_eq!(decode_all(b"$0\r\n\r\n"), Frame::Bulk(Vec::new()));
        assert_eq!(decode_all(b"$-1\r\n"), Frame::NullBulk);
        assert_eq!(decode_all(b"*-1\r\n"), Frame::NullArray);
        assert_eq!(decode_all(b"*0\r\n"), Frame::Array(Vec::new()));
    }

    #[test]
    fn decode_resp3_types_gives_their_values() {
        assert_eq!(decode_all(b"_\r\n"), Frame::Null);
        assert_eq!(decode_all(b",3.5\r\n"), Frame::Double(3.5));
        assert_eq!(decode_all(b",-inf\r\n"), Frame::Double(f64::NEG_INFINITY));
        assert_eq!(decode_all(b",1e3\r\n"), Frame::Double(1000.0));
        assert!(matches!(decode_all(b",nan\r\n"), Frame::Double(d) if d.is_nan()));
        assert_eq!(decode_all(b"#t\r\n"), Frame::Boolean(true));
        assert_eq!(decode_all(b"#f\r\n"), Frame::Boolean(false));
        assert_eq!(
            decode_all(b"(-123456789012345678901234567890\r\n"),
            Frame::BigNumber(b"-123456789012345678901234567890".to_vec())
        );
        assert_eq!(
            decode_all(b"=15\r\ntxt:Some string\r\n"),
            Frame::Verbatim {
                format: *b"txt",
                text: b"Some string".to_vec()
            }
        );
        assert_eq!(
            decode_all(b"!21\r\nSYNTAX invalid syntax\r\n"),
            Frame::BulkError(b"SYNTAX invalid syntax".to_vec())
        );
        assert_eq!(
            decode_all(b"%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n"),
            Frame::Map(vec![
                (Frame::Simple(b"first".to_vec()), Frame::Integer(1)),
                (Frame::Simple(b"second".to_vec()), Frame::Integer(2)),
            ])
        );
        assert_eq!(
            decode_all(b"~2\r\n:1\r\n_\r\n"),
            Frame::Set(vec![Frame::Integer(1), Frame::Null])
        );
        assert_eq!(
            decode_all(b">2\r\n+message\r\n$2\r\nhi\r\n"),
            Frame::Push(vec![
                Frame::Simple(b"message".to_vec()),
                Frame::Bulk(b"hi".to_vec())
            ])
        );
    }

    #[test]
    fn decode_attribute_attaches_it_to_the_next_frame() {
        let bytes = b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*1\r\n:2\r\n";
        let frame = decode_all(bytes);
        let Frame::Attribute { attributes, value } = frame else {
            panic!("not an attribute: {frame:?}");
        };
        assert_eq!(attributes.len(), 1);
        assert_eq!(*value, Frame::Array(vec![Frame::Integer(2)]));
    }

    #[test]
    fn decode_reports_the_length_of_the_first_frame_only() {
        let bytes = b"+OK\r\n:1\r\n";
        assert_eq!(
            Frame::decode(bytes).unwrap(),
            Some((Frame::Simple(b"OK".to_vec()), 5))
        );
    }

    #[test]
    fn decode_of_prefix_is_incomplete() {
        let bytes = b"*3\r\n$3\r\nfoo\r\n%1\r\n+a\r\n#t\r\n=7\r\ntxt:abc\r\n";
        for k in 0..bytes.len() {
            assert_eq!(Frame::decode(&bytes[..k]), Ok(None), "prefix {k}");
        }
        decode_all(bytes);
    }

    #[test]
    fn decode_huge_declared_lengths_waits_without_allocating() {
        // Would need exabytes if the declared size were reserved up front.
        assert_eq!(Frame::decode(b"$9223372036854775000\r\nab"), Ok(None));
        assert_eq!(Frame::decode(b"*9223372036854775000\r\n:1\r\n"), Ok(None));
        assert_eq!(Frame::decode(b"%9223372036854775000\r\n:1\r\n"), Ok(None));
        assert_eq!(
            Frame::decode(b"$9223372036854775807\r\n"),
            Ok(None),
            "position + length must not overflow"
        );
    }

    #[test]
    fn decode_invalid_input_is_an_error() {
        let cases: &[(&[u8], DecodeError)] = &[
            (b"?\r\n", DecodeError::UnknownType(b'?')),
            (b"+OK\n", DecodeError::BadLineEnding),
            (b"+O\rK\r\n", DecodeError::BadLineEnding),
            (b":12a\r\n", DecodeError::BadInteger),
            (b":\r\n", DecodeError::BadInteger),
            (b":99999999999999999999\r\n", DecodeError::BadInteger),
            (b"$-2\r\n", DecodeError::BadLength),
            (b"!-1\r\n", DecodeError::BadLength),
            (b"%-1\r\n", DecodeError::BadLength),
            (b"$3\r\nfooXY", DecodeError::BadPayloadEnding),
            (b",abc\r\n", DecodeError::BadDouble),
            (b"#x\r\n", DecodeError::BadBoolean),
            (b"(12a\r\n", DecodeError::BadBigNumber),
            (b"(-\r\n", DecodeError::BadBigNumber),
            (b"=3\r\ntxt\r\n", DecodeError::BadVerbatim),
            (b"=5\r\ntxt!a\r\n", DecodeError::BadVerbatim),
            (b"_x\r\n", DecodeError::BadLineEnding),
            (b"$?\r\n", DecodeError::Unsupported),
        ];
        for (bytes, want) in cases {
            assert_eq!(
                Frame::decode(bytes).as_ref(),
                Err(want),
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn decode_nesting_past_max_depth_is_an_error() {
        let deep = b"*1\r\n".repeat(MAX_DEPTH + 1);
        let mut ok = deep.clone();
        ok.extend_from_slice(b":1\r\n");
        assert_eq!(Frame::decode(&ok), Err(DecodeError::TooDeep));
        let fits = [b"*1\r\n".repeat(MAX_DEPTH), b":1\r\n".to_vec()].concat();
        assert!(Frame::decode(&fits).unwrap().is_some());
    }

    #[test]
    fn encode_double_specials_decodes_back() {
        for d in [f64::INFINITY, f64::NEG_INFINITY, 0.1, -0.0, 1e300, 5e-324] {
            assert_eq!(decode_all(&Frame::Double(d).to_bytes()), Frame::Double(d));
        }
        assert_eq!(Frame::Double(f64::NAN).to_bytes(), b",nan\r\n");
    }

    #[test]
    fn accessors_see_through_types() {
        assert!(Frame::Error(b"ERR".to_vec()).is_error());
        assert!(Frame::BulkError(b"ERR".to_vec()).is_error());
        assert!(Frame::Attribute {
            attributes: vec![],
            value: Box::new(Frame::Error(b"E".to_vec()))
        }
        .is_error());
        assert!(!Frame::Simple(b"OK".to_vec()).is_error());
        assert!(Frame::NullBulk.is_null() && Frame::Null.is_null());
        assert_eq!(Frame::Integer(3).as_integer(), Some(3));
        assert_eq!(Frame::simple("OK"), Frame::Simple(b"OK".to_vec()));
        assert_eq!(Frame::error("ERR x"), Frame::Error(b"ERR x".to_vec()));
        assert_eq!(Frame::bulk(b"\0"), Frame::Bulk(vec![0]));
        assert_eq!(Frame::Bulk(b"x".to_vec()).as_bytes(), Some(&b"x"[..]));
        assert_eq!(
            Frame::Error(b"ERR bad".to_vec()).to_string(),
            "(error) ERR bad"
        );
    }

    fn line_text() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'),
            0..12,
        )
    }

    fn arb_frame() -> impl Strategy<Value = Frame> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..16);
        let leaf = prop_oneof![
            line_text().prop_map(Frame::Simple),
            line_text().prop_map(Frame::Error),
            any::<i64>().prop_map(Frame::Integer),
            bytes().prop_map(Frame::Bulk),
            Just(Frame::NullBulk),
            Just(Frame::NullArray),
            Just(Frame::Null),
            prop_oneof![
                any::<f64>().prop_filter("not NaN", |d| !d.is_nan()),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
            ]
            .prop_map(Frame::Double),
            any::<bool>().prop_map(Frame::Boolean),
            ("[+-]?[0-9]{1,40}").prop_map(|s| Frame::BigNumber(s.into_bytes())),
            (any::<[u8; 3]>(), bytes()).prop_map(|(format, text)| Frame::Verbatim { format, text }),
            bytes().prop_map(Frame::BulkError),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            let pairs = proptest::collection::vec((inner.clone(), inner.clone()), 0..4);
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Array),
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Set),
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Push),
                pairs.clone().prop_map(Frame::Map),
                (pairs, inner).prop_map(|(attributes, value)| Frame::Attribute {
                    attributes,
                    value: Box::new(value)
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn encode_then_decode_round_trips(frame in arb_frame(), tail in proptest::collection::vec(any::<u8>(), 0..8)) {
            let bytes = frame.to_bytes();
            let mut with_tail = bytes.clone();
            with_tail.extend_from_slice(&tail);
            prop_assert_eq!(Frame::decode(&with_tail), Ok(Some((frame, bytes.len()))));
            for k in 0..bytes.len() {
                prop_assert_eq!(Frame::decode(&bytes[..k]), Ok(None));
            }
        }

        #[test]
        fn decode_mutated_frames_never_panics_or_overruns(
            frame in arb_frame(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        ) {
            let mut bytes = frame.to_bytes();
            for (at, byte) in edits {
                let i = at.index(bytes.len());
                bytes[i] = byte;
            }
            if let Ok(Some((_, used))) = Frame::decode(&bytes) {
                prop_assert!(used <= bytes.len());
            }
        }

        #[test]
        fn decode_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(Some((_, used))) = Frame::decode(&bytes) {
                prop_assert!(used <= bytes.len());
            }
        }
    }
}
