//! `Args`: a cursor over one request's arguments, with Redis's parse rules.
//!
//! The arguments are never copied: an `Args` borrows the buffer the request
//! was parsed from plus the list of [`Span`]s that locate each argument in
//! it. Handlers read arguments in order (`next_bytes`, `next_i64`, ...),
//! match keywords case-insensitively (`eat_keyword`) and end with
//! [`Args::finish`], so leftover arguments are rejected in one place.
//! Errors are [`ArgError`]s, which the server maps to Redis's reply texts.

use std::ops::Range;

/// Where one argument lies in a request buffer (byte offsets, end exclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// The span as a range, for slicing.
    #[inline]
    pub fn range(self) -> Range<usize> {
        self.start..self.end
    }
}

/// Why an argument could not be read. Each maps to one Redis error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgError {
    /// A required argument is missing, or a leftover/unknown one is present
    /// (`ERR syntax error`).
    Syntax,
    /// Not an integer, or outside the requested range
    /// (`ERR value is not an integer or out of range`).
    NotInteger,
    /// Not a valid float (`ERR value is not a valid float`).
    NotFloat,
}

/// A cursor over the arguments of one request.
///
/// Index 0 is the command name. The dispatcher hands handlers a cursor
/// positioned after the name (or after the subcommand for container
/// commands), so a handler's first `next_*` call reads its first argument.
#[derive(Clone, Copy, Debug)]
pub struct Args<'a> {
    buf: &'a [u8],
    spans: &'a [Span],
    pos: usize,
}

impl<'a> Args<'a> {
    /// A cursor over `spans` (each a range of `buf`), positioned at index 0.
    ///
    /// # Panics
    /// Reading an argument panics if a span lies outside `buf`; spans come
    /// from the request parser, which only produces spans inside its buffer.
    pub fn new(buf: &'a [u8], spans: &'a [Span]) -> Self {
        Args { buf, spans, pos: 0 }
    }

    /// Number of arguments, the command name included.
    #[inline]
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True if there are no arguments at all (not even a name).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The argument at absolute index `i` (0 = command name), if present.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        self.spans.get(i).map(|s| &self.buf[s.range()])
    }

    /// Absolute index of the next argument the cursor will return.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Moves the cursor to absolute index `pos` (clamped to the length).
    #[inline]
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.spans.len());
    }

    /// Number of arguments not yet consumed.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.spans.len() - self.pos
    }

    /// The next argument without consuming it.
    #[inline]
    pub fn peek(&self) -> Option<&'a [u8]> {
        self.get(self.pos)
    }

    /// The next argument.
    ///
    /// # Errors
    /// [`ArgError::Syntax`] if there is none.
    #[inline]
    pub fn next_bytes(&mut self) -> Result<&'a [u8], ArgError> {
        let a = self.get(self.pos).ok_or(ArgError::Syntax)?;
        self.pos += 1;
        Ok(a)
    }

    /// The next argument as a signed 64-bit integer (Redis `string2ll`:
    /// optional `-`, no `+`, no leading zeros, no spaces, no overflow).
    ///
    /// # Errors
    /// `Syntax` if missing, `NotInteger` if malformed.
    pub fn next_i64(&mut self) -> Result<i64, ArgError> {
        let a = self.next_bytes()?;
        parse_i64(a).ok_or(ArgError::NotInteger)
    }

    /// The next argument as an unsigned 64-bit integer (as `next_i64`, no sign).
    ///
    /// # Errors
    /// `Syntax` if missing, `NotInteger` if malformed or negative.
    pub fn next_u64(&mut self) -> Result<u64, ArgError> {
        let a = self.next_bytes()?;
        parse_u64(a).ok_or(ArgError::NotInteger)
    }

    /// The next argument as an unsigned 32-bit integer.
    ///
    /// # Errors
    /// `Syntax` if missing, `NotInteger` if malformed, negative or > `u32::MAX`.
    pub fn next_u32(&mut self) -> Result<u32, ArgError> {
        let v = self.next_u64()?;
        u32::try_from(v).map_err(|_| ArgError::NotInteger)
    }

    /// The next argument as a double (Redis `string2d`: no leading space,
    /// whole argument consumed, not NaN, no overflow; `inf`/`-inf` accepted).
    ///
    /// # Errors
    /// `Syntax` if missing, `NotFloat` if malformed.
    pub fn next_f64(&mut self) -> Result<f64, ArgError> {
        let a = self.next_bytes()?;
        parse_f64(a).ok_or(ArgError::NotFloat)
    }

    /// Consumes the next argument if it equals `kw` ignoring ASCII case.
    #[inline]
    pub fn eat_keyword(&mut self, kw: &str) -> bool {
        match self.peek() {
            Some(a) if a.eq_ignore_ascii_case(kw.as_bytes()) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }

    /// The unconsumed arguments, consuming them.
    pub fn rest(&mut self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let buf = self.buf;
        let spans = &self.spans[self.pos..];
        self.pos = self.spans.len();
        spans.iter().map(move |s| &buf[s.range()])
    }

    /// Every argument from absolute index 0, regardless of the cursor.
    pub fn all(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let buf = self.buf;
        self.spans.iter().map(move |s| &buf[s.range()])
    }

    /// Succeeds only if every argument has been consumed.
    ///
    /// # Errors
    /// [`ArgError::Syntax`] if arguments are left over.
    #[inline]
    pub fn finish(&self) -> Result<(), ArgError> {
        if self.pos >= self.spans.len() {
            Ok(())
        } else {
            Err(ArgError::Syntax)
        }
    }
}

/// Parses a signed integer with Redis's `string2ll` rules.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let mag = parse_digits(digits)?;
    if neg {
        if mag > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((mag as i64).wrapping_neg())
        }
    } else {
        i64::try_from(mag).ok()
    }
}

/// Parses an unsigned integer: decimal digits, no sign, no leading zeros.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s == b"0" {
        return Some(0);
    }
    if s.len() > 20 {
        return None;
    }
    parse_digits(s)
}

/// `[1-9][0-9]*` without overflow.
fn parse_digits(d: &[u8]) -> Option<u64> {
    let (&first, rest) = d.split_first()?;
    if !(b'1'..=b'9').contains(&first) {
        return None;
    }
    let mut v = u64::from(first - b'0');
    for &c in rest {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// Parses a double with Redis's `string2d` rules.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5 * 1024 || s[0].is_ascii_whitespace() {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    let v: f64 = text.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    if v.is_infinite() {
        // strtod reports overflow (ERANGE) for finite literals that do not fit.
        let t = text.trim_start_matches(['+', '-']);
        if !(t.eq_ignore_ascii_case("inf") || t.eq_ignore_ascii_case("infinity")) {
            return None;
        }
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans_of(buf: &[u8]) -> Vec<Span> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &c) in buf.iter().enumerate() {
            if c == b' ' {
                out.push(Span { start, end: i });
                start = i + 1;
            }
        }
        out.push(Span {
            start,
            end: buf.len(),
        });
        out
    }

    #[test]
    fn integers_follow_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-0",
            b"+1",
            b"01",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"1.0",
            b"-",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", bad);
        }
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
    }

    #[test]
    fn floats_follow_string2d() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        for bad in [&b""[..], b"nan", b" 1", b"1 ", b"1e400", b"abc"] {
            assert_eq!(parse_f64(bad), None, "{:?}", bad);
        }
    }

    #[test]
    fn cursor_reads_in_order_and_finish_rejects_leftovers() {
        let buf = b"SET k 10 EX 5 junk";
        let spans = spans_of(buf);
        let mut a = Args::new(buf, &spans);
        assert_eq!(a.next_bytes(), Ok(&b"SET"[..]));
        assert_eq!(a.next_bytes(), Ok(&b"k"[..]));
        assert_eq!(a.next_i64(), Ok(10));
        assert!(!a.eat_keyword("px"));
        assert!(a.eat_keyword("ex"));
        assert_eq!(a.next_u32(), Ok(5));
        assert_eq!(a.remaining(), 1);
        assert_eq!(a.finish(), Err(ArgError::Syntax));
        assert_eq!(a.rest().collect::<Vec<_>>(), vec![&b"junk"[..]]);
        assert_eq!(a.finish(), Ok(()));
        assert_eq!(a.next_bytes(), Err(ArgError::Syntax));
    }
}
