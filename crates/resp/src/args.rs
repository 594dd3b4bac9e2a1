//! `Args`: a cursor over one request's arguments, with Redis's parse rules.
//!
//! The arguments are never copied: an `Args` borrows the buffer the request
//! was parsed from plus the list of [`Span`]s that locate each argument in
//! it. Handlers read arguments in order (`next_bytes`, `next_i64`, ...),
//! match keywords case-insensitively (`eat_keyword`) and end with
//! [`Args::finish`], so leftover arguments are rejected in one place.
//! Errors are [`ArgError`]s, which the server maps to Redis's reply texts.
//! The number rules themselves are `roaringd_compat::number`'s.

use roaringd_compat::number::{parse_f64, parse_i64, parse_u64};
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
