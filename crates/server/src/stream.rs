//! Streamed replies: a reply whose bytes are produced a chunk at a time
//! while the connection writes them ([`Reply::Stream`]).
//!
//! Contract:
//! - A handler returns one only when [`Ctx::may_stream`] is true (a
//!   command run alone, or in a pipeline group after its last write; never
//!   in EXEC) and the reply is big ([`STREAM_ABOVE_BYTES`] at least). Its
//!   producer reads the key through a [`KeyRead`]: a snapshot the command's
//!   `Txn` takes at its commit, under the key's lock, so the reply is the
//!   key's state at the command's point in time although it is produced
//!   after the locks are gone. No lock is held while the client reads.
//! - The producer knows the reply's size before the first byte (exactly
//!   for TR.RANGE and TR.RANGEBITARRAY, a lower bound for SMEMBERS and the
//!   HGETALL family), so a reply past `max-reply-bytes` is refused with the
//!   command's usual error before anything is sent, and the connection
//!   counts the bytes still to come as pending output for
//!   `client-output-buffer-limit`.
//! - The connection ([`crate::connection`]) asks for [`CHUNK_BYTES`] at a
//!   time and writes each chunk before it asks for the next: a streamed
//!   reply costs one chunk of memory plus what the socket buffers hold,
//!   and a slow reader makes the producer wait. It runs no later request
//!   of the connection before the stream is written.
//! - A read error after the first byte (a corrupt container) cannot be
//!   replied: the connection logs it and closes.
//! - Encoded anywhere else ([`Reply::encode`], inside an array), a stream
//!   is produced whole into the buffer; [`inline_streams`] does the same
//!   for the streams a connection would have written.

use std::sync::Arc;

use parking_lot::Mutex;
use roaringd_resp::{Protocol, ReplyEncoder};
use roaringd_store::{KeyRead, Kind, StoreError};

use crate::client::Client;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;

/// Bytes the connection asks a producer for at a time.
pub const CHUNK_BYTES: usize = 256 << 10;

/// Replies whose size (or its lower bound) passes this are streamed where
/// they may be; smaller ones are built whole (cheaper than a snapshot).
pub const STREAM_ABOVE_BYTES: u64 = 256 << 10;

/// Smallest encoding of a bulk string element (`$0\r\n\r\n`).
const MIN_BULK: u64 = 6;

/// The bytes of one reply, produced on demand.
pub trait Produce: Send {
    /// Appends the next bytes of the reply to `out`: about `want` (more
    /// by at most one element), at least one unless the reply is complete.
    /// Returns true once the reply is complete.
    ///
    /// # Errors
    /// A store error reading the key (the reply is cut short).
    fn produce(&mut self, out: &mut Vec<u8>, want: usize) -> Result<bool, StoreError>;

    /// Bytes still to come: exact, or a lower bound.
    fn left(&self) -> u64;
}

/// A streamed reply: a shared handle on its producer (the `Reply` enum is
/// `Clone`; a clone produces the same, one, stream).
#[derive(Clone)]
pub struct StreamedReply(Arc<Mutex<Box<dyn Produce>>>);

impl std::fmt::Debug for StreamedReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StreamedReply({} bytes left)", self.left())
    }
}

impl PartialEq for StreamedReply {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl StreamedReply {
    /// Wraps a producer.
    pub fn new(p: impl Produce + 'static) -> Self {
        StreamedReply(Arc::new(Mutex::new(Box::new(p))))
    }

    /// See [`Produce::produce`].
    ///
    /// # Errors
    /// As [`Produce::produce`].
    pub fn produce(&self, out: &mut Vec<u8>, want: usize) -> Result<bool, StoreError> {
        self.0.lock().produce(out, want)
    }

    /// See [`Produce::left`].
    pub fn left(&self) -> u64 {
        self.0.lock().left()
    }

    /// The rest of the reply, produced whole.
    ///
    /// # Errors
    /// As [`Produce::produce`].
    pub fn produce_all(&self) -> Result<Vec<u8>, StoreError> {
        let mut p = self.0.lock();
        let mut out = Vec::with_capacity(usize::try_from(p.left()).unwrap_or(0));
        while !p.produce(&mut out, CHUNK_BYTES)? {}
        Ok(out)
    }
}

/// Puts the streams a connection would write after `out`'s bytes
/// (`client.streams`) into `out`, produced whole, in their places (the
/// fuzz harness and tests read one buffer). A stream that fails is
/// replaced by its error reply.
pub fn inline_streams(client: &mut Client, out: &mut Vec<u8>) {
    if client.streams.is_empty() {
        return;
    }
    let tail = out.split_off(0);
    let mut pos = 0;
    for (at, s) in client.streams.drain(..) {
        out.extend_from_slice(&tail[pos..at]);
        pos = at;
        match s.produce_all() {
            Ok(b) => out.extend_from_slice(&b),
            Err(e) => {
                let e: CommandError = e.into();
                crate::reply::encode_error(&e, &mut ReplyEncoder::new(out, client.protocol));
            }
        }
    }
    out.extend_from_slice(&tail[pos..]);
}

/// The streamed reply of SMEMBERS (`Shape::Members`, a set) or HGETALL,
/// HKEYS, HVALS (a hash) of `key`, when the handler may stream, the key
/// is `big` (a small one replies in another order) and the reply's lower
/// bound passes [`STREAM_ABOVE_BYTES`]; `None` otherwise (the handler
/// builds it whole, and reports a missing key or a wrong type).
///
/// # Errors
/// What reading the key's meta returns.
pub fn elements_reply(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    shape: Shape,
) -> Result<Option<Reply>, CommandError> {
    if !ctx.may_stream() {
        return Ok(None);
    }
    let want = if shape == Shape::Members {
        Kind::Set
    } else {
        Kind::Hash
    };
    let db = ctx.db;
    let proto = ctx.client.protocol;
    let txn = ctx.txn()?;
    // This read is the command's lookup (keyspace hits / misses): the
    // handler's own read, when it builds the reply, counts nothing more.
    let m = txn.meta(db, key)?;
    txn.set_count_lookups(false);
    let Some(m) = m else {
        return Ok(None);
    };
    let n = m.data_entries();
    if m.kind() != want || !m.big || Elements::min_bytes(shape, n) <= STREAM_ABOVE_BYTES {
        return Ok(None);
    }
    let Some(read) = txn.read_after_commit(db, key)? else {
        return Ok(None);
    };
    Ok(Some(Reply::Stream(StreamedReply::new(Elements::new(
        read, shape, proto, n,
    )))))
}

/// Encoded size of the integer replies of the values in `[start, end]`
/// that `count(lo, hi)` (set bits in `[lo, hi]`) finds: one count per
/// decimal length, `:` + digits + CRLF each.
///
/// # Errors
/// What `count` returns.
pub fn int_values_bytes(
    start: u32,
    end: u32,
    mut count: impl FnMut(u32, u32) -> Result<u64, StoreError>,
) -> Result<u64, StoreError> {
    let mut bytes = 0u64;
    let mut lo = 0u64;
    for digits in 1..=10u64 {
        let hi = (10u64.pow(digits as u32) - 1).min(u64::from(u32::MAX));
        let (a, b) = (lo.max(u64::from(start)), hi.min(u64::from(end)));
        if a <= b {
            bytes += count(a as u32, b as u32)? * (digits + 3);
        }
        lo = hi + 1;
    }
    Ok(bytes)
}

/// Length of a RESP aggregate or bulk header for `n` (`*n\r\n`).
pub fn header_len(n: u64) -> u64 {
    let digits = if n == 0 { 1 } else { u64::from(n.ilog10()) + 1 };
    digits + 3
}

/// TR.RANGE: `*n` then the set bits in `[start, end]` as integers.
pub struct RangeValues {
    read: KeyRead,
    /// Next value to give; `None` once `end` was reached.
    next: Option<u32>,
    end: u32,
    /// Values still to give (the count the command found).
    values: u64,
    /// Exact bytes still to produce.
    bytes: u64,
    header: bool,
}

impl RangeValues {
    /// The reply of `values` set bits (encoded size `bytes`, header
    /// included) in `[start, end]` of `read`.
    pub fn new(read: KeyRead, start: u32, end: u32, values: u64, bytes: u64) -> Self {
        RangeValues {
            read,
            next: Some(start),
            end,
            values,
            bytes,
            header: false,
        }
    }
}

impl Produce for RangeValues {
    fn produce(&mut self, out: &mut Vec<u8>, want: usize) -> Result<bool, StoreError> {
        let base = out.len();
        let mut enc = ReplyEncoder::new(out, Protocol::Resp2);
        if !self.header {
            enc.array_header(self.values as usize);
            self.header = true;
        }
        let mut given = 0u64;
        while let Some(from) = self.next {
            let room = want.saturating_sub(enc.len() - base);
            if room == 0 {
                break;
            }
            // At most 13 bytes a value: `room / 13 + 1` stays near `want`.
            self.next = self
                .read
                .bitmap_values(from, self.end, room / 13 + 1, |v| {
                    enc.integer(i64::from(v));
                    given += 1;
                })?;
        }
        let made = (enc.len() - base) as u64;
        self.values = self.values.checked_sub(given).ok_or_else(changed)?;
        self.bytes = self.bytes.checked_sub(made).ok_or_else(changed)?;
        if self.next.is_none() && (self.values != 0 || self.bytes != 0) {
            return Err(changed());
        }
        Ok(self.next.is_none())
    }

    fn left(&self) -> u64 {
        self.bytes
    }
}

/// The snapshot disagrees with the counts the command read under its lock.
fn changed() -> StoreError {
    StoreError::Corrupt("a streamed reply's key changed under its snapshot".into())
}

/// TR.RANGEBITARRAY: a bulk string of `'0'`/`'1'`, one per offset of
/// `[start, end]`.
pub struct RangeBits {
    read: KeyRead,
    /// Next offset to render; `None` once done.
    next: Option<u32>,
    end: u32,
    /// Exact bytes still to produce.
    bytes: u64,
    header: bool,
}

impl RangeBits {
    /// The reply for offsets `[start, end]` of `read`.
    pub fn new(read: KeyRead, start: u32, end: u32) -> Self {
        let width = u64::from(end) - u64::from(start) + 1;
        RangeBits {
            read,
            next: Some(start),
            end,
            bytes: header_len(width) + width + 2,
            header: false,
        }
    }
}

impl Produce for RangeBits {
    fn produce(&mut self, out: &mut Vec<u8>, want: usize) -> Result<bool, StoreError> {
        let base = out.len();
        if !self.header {
            let width = u64::from(self.end) - u64::from(self.next.unwrap_or(self.end)) + 1;
            out.push(b'$');
            out.extend_from_slice(itoa::Buffer::new().format(width).as_bytes());
            out.extend_from_slice(b"\r\n");
            self.header = true;
        }
        if let Some(from) = self.next {
            let room = want.saturating_sub(out.len() - base).max(1) as u64;
            let last = (u64::from(from) + room - 1).min(u64::from(self.end)) as u32;
            let at = out.len();
            out.resize(at + (last - from) as usize + 1, b'0');
            self.read.bitmap_values(from, last, usize::MAX, |v| {
                out[at + (v - from) as usize] = b'1';
            })?;
            self.next = if last == self.end {
                None
            } else {
                Some(last + 1)
            };
        }
        if self.next.is_none() {
            out.extend_from_slice(b"\r\n");
        }
        self.bytes = self
            .bytes
            .checked_sub((out.len() - base) as u64)
            .ok_or_else(changed)?;
        Ok(self.next.is_none())
    }

    fn left(&self) -> u64 {
        self.bytes
    }
}

/// Which reply a set's or hash's elements make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// SMEMBERS: a set of members.
    Members,
    /// HGETALL: a map of fields to values.
    Pairs,
    /// HKEYS: an array of fields.
    Fields,
    /// HVALS: an array of values.
    Values,
}

/// SMEMBERS, HGETALL, HKEYS, HVALS of a `big` set or hash: its elements
/// in byte order, as [`KeyRead::elements`] gives them.
pub struct Elements {
    read: KeyRead,
    shape: Shape,
    proto: Protocol,
    /// Where the next read starts (after this member or field).
    after: Option<Vec<u8>>,
    /// Elements (members, fields) still to give.
    elements: u64,
    done: bool,
    header: bool,
}

impl Elements {
    /// The reply of `shape` over the `elements` members or fields of
    /// `read`, for a client speaking `proto`.
    pub fn new(read: KeyRead, shape: Shape, proto: Protocol, elements: u64) -> Self {
        Elements {
            read,
            shape,
            proto,
            after: None,
            elements,
            done: false,
            header: false,
        }
    }

    /// Bulk strings per element.
    fn per_element(&self) -> u64 {
        if self.shape == Shape::Pairs {
            2
        } else {
            1
        }
    }

    /// The lower bound of the reply's size: its header and the smallest
    /// bulk strings.
    pub fn min_bytes(shape: Shape, elements: u64) -> u64 {
        let n = if shape == Shape::Pairs {
            elements.saturating_mul(2)
        } else {
            elements
        };
        header_len(n) + n.saturating_mul(MIN_BULK)
    }
}

impl Produce for Elements {
    fn produce(&mut self, out: &mut Vec<u8>, want: usize) -> Result<bool, StoreError> {
        let base = out.len();
        let shape = self.shape;
        let mut enc = ReplyEncoder::new(out, self.proto);
        if !self.header {
            let n = self.elements as usize;
            match shape {
                Shape::Members => enc.set_header(n),
                Shape::Pairs => enc.map_header(n),
                Shape::Fields | Shape::Values => enc.array_header(n),
            }
            self.header = true;
        }
        let mut given = 0u64;
        while !self.done {
            let room = want.saturating_sub(enc.len() - base);
            if room == 0 {
                break;
            }
            let after = self.after.take();
            self.after = self.read.elements(after.as_deref(), room, |f, v| {
                match shape {
                    Shape::Members | Shape::Fields => enc.bulk(f),
                    Shape::Pairs => {
                        enc.bulk(f);
                        enc.bulk(v);
                    }
                    Shape::Values => enc.bulk(v),
                }
                given += 1;
            })?;
            self.done = self.after.is_none();
        }
        self.elements = self.elements.checked_sub(given).ok_or_else(changed)?;
        if self.done && self.elements != 0 {
            return Err(changed());
        }
        Ok(self.done)
    }

    fn left(&self) -> u64 {
        let per = self.per_element();
        let header = if self.header {
            0
        } else {
            header_len(self.elements * per)
        };
        header + self.elements * per * MIN_BULK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_values_bytes_counts_each_decimal_length() {
        // Every value of [start, end] present: count = the band's width.
        let all = |a: u32, b: u32| Ok(u64::from(b - a) + 1);
        let direct = |s: u32, e: u32| -> u64 {
            (u64::from(s)..=u64::from(e))
                .map(crate::commands::tr_args::int_reply_len)
                .sum()
        };
        for (s, e) in [
            (0, 0),
            (0, 9),
            (5, 123),
            (9, 10),
            (99_990, 100_010),
            (0, 200_000),
        ] {
            assert_eq!(
                int_values_bytes(s, e, all).unwrap(),
                direct(s, e),
                "{s}..{e}"
            );
        }
        let top = int_values_bytes(u32::MAX - 1, u32::MAX, all).unwrap();
        assert_eq!(top, 2 * 13);
        assert_eq!(header_len(0), 4);
        assert_eq!(header_len(30_000_000), 11);
    }
}
