//! `Reply`: the typed value a handler returns, and its encoding through the
//! resp crate's `ReplyEncoder` (which downgrades RESP3 types for RESP2).

use std::borrow::Cow;

use roaringd_resp::ReplyEncoder;

use crate::error::CommandError;
use crate::stream::StreamedReply;

/// A reply value. Handlers build one; the connection encodes it for the
/// client's protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`
    Ok,
    /// A simple string (`+PONG`, `+QUEUED`).
    Status(Cow<'static, str>),
    /// An error reply (an element of an EXEC result, for instance).
    Error(CommandError),
    /// `:n`
    Integer(i64),
    /// A bulk string.
    Bulk(Vec<u8>),
    /// A bulk string from static bytes.
    Static(&'static [u8]),
    /// Null bulk string: RESP2 `$-1`, RESP3 `_`.
    Null,
    /// Null array: RESP2 `*-1`, RESP3 `_`.
    NullArray,
    /// An array.
    Array(Vec<Reply>),
    /// A map (RESP2: flat array of key, value, key, value ...).
    Map(Vec<(Reply, Reply)>),
    /// A set (RESP2: array).
    Set(Vec<Reply>),
    /// A double (RESP2: bulk string formatted like Redis).
    Double(f64),
    /// A boolean (RESP2: integer 1/0).
    Bool(bool),
    /// A verbatim text string (`=N txt:...`; RESP2: bulk string).
    Verbatim(Vec<u8>),
    /// A big number as decimal digits (RESP2: bulk string).
    BigNumber(String),
    /// A push message (RESP2: array).
    Push(Vec<Reply>),
    /// Nothing is written (SHUTDOWN closes the connection instead of replying).
    NoReply,
    /// Replies already encoded for the client's protocol (see
    /// [`repeated_draws`]): written verbatim, one reply's worth of bytes
    /// in one buffer instead of a tree of values.
    Encoded(Vec<u8>),
    /// A reply produced in chunks while the connection writes it
    /// ([`crate::stream`]: who may return one, what it reads, how it is
    /// bounded). [`crate::dispatch::encode`] hands it to the connection;
    /// encoded here (inside an array) it is produced whole, or replaced by
    /// its error reply when its read fails.
    Stream(StreamedReply),
}

impl Reply {
    /// `+<text>` from a static string.
    pub const fn status(text: &'static str) -> Self {
        Reply::Status(Cow::Borrowed(text))
    }

    /// An array of bulk strings.
    pub fn bulks<I, B>(items: I) -> Self
    where
        I: IntoIterator<Item = B>,
        B: Into<Vec<u8>>,
    {
        Reply::Array(items.into_iter().map(|b| Reply::Bulk(b.into())).collect())
    }

    /// An array of integers, encoded at once ([`Reply::Encoded`]): about 10
    /// bytes a value instead of a `Reply` each (a 30-million-value
    /// TR.RANGE took 1.5 GB as a tree of replies).
    pub fn integers(vals: impl IntoIterator<Item = i64, IntoIter: ExactSizeIterator>) -> Self {
        let vals = vals.into_iter();
        let mut out = Vec::with_capacity(16 + vals.len() * 8);
        let mut enc = ReplyEncoder::new(&mut out, roaringd_resp::Protocol::Resp2);
        enc.array_header(vals.len());
        vals.for_each(|v| enc.integer(v));
        Reply::Encoded(out)
    }

    /// A bulk string, or null when `v` is `None`.
    pub fn bulk_or_null(v: Option<Vec<u8>>) -> Self {
        v.map_or(Reply::Null, Reply::Bulk)
    }

    /// Appends this reply to `enc`.
    pub fn encode(&self, enc: &mut ReplyEncoder<'_>) {
        match self {
            Reply::Ok => enc.simple(b"OK"),
            Reply::Status(s) => enc.simple(s.as_bytes()),
            Reply::Error(e) => encode_error(e, enc),
            Reply::Integer(n) => enc.integer(*n),
            Reply::Bulk(b) => enc.bulk(b),
            Reply::Static(b) => enc.bulk(b),
            Reply::Null => enc.null(),
            Reply::NullArray => enc.null_array(),
            Reply::Array(items) => {
                enc.array_header(items.len());
                items.iter().for_each(|r| r.encode(enc));
            }
            Reply::Map(pairs) => {
                enc.map_header(pairs.len());
                for (k, v) in pairs {
                    k.encode(enc);
                    v.encode(enc);
                }
            }
            Reply::Set(items) => {
                enc.set_header(items.len());
                items.iter().for_each(|r| r.encode(enc));
            }
            Reply::Double(d) => enc.double(*d),
            Reply::Bool(b) => enc.boolean(*b),
            Reply::Verbatim(t) => enc.verbatim(b"txt", t),
            Reply::BigNumber(d) => enc.big_number(d.as_bytes()),
            Reply::Push(items) => {
                enc.push_header(items.len());
                items.iter().for_each(|r| r.encode(enc));
            }
            Reply::NoReply => {}
            Reply::Encoded(b) => enc.raw(b),
            Reply::Stream(s) => match s.produce_all() {
                Ok(b) => enc.raw(&b),
                Err(e) => encode_error(&e.into(), enc),
            },
        }
    }
}

/// The reply of SRANDMEMBER / HRANDFIELD with a negative count: an array
/// of `count` draws with repetition from `pool`, each draw one of its
/// items (already encoded for the client's protocol) making `per_draw`
/// array elements. An empty pool gives an empty array.
///
/// The reply is built in one buffer and checked against `max_bytes`
/// while it grows, so memory stays within `max_bytes` plus one item.
///
/// # Errors
/// `ERR reply would exceed max-reply-bytes` when it would: at once when
/// `count` draws of the smallest item already would, else when the buffer
/// passes it.
pub fn repeated_draws(
    pool: &[Vec<u8>],
    per_draw: u64,
    count: u64,
    max_bytes: u64,
) -> Result<Reply, CommandError> {
    use rand::Rng;
    let too_big = || CommandError::err("reply would exceed max-reply-bytes");
    let Some(smallest) = pool.iter().map(|p| p.len() as u64).min() else {
        return Ok(Reply::Array(Vec::new()));
    };
    let elements = count.checked_mul(per_draw).ok_or_else(too_big)?;
    let floor = smallest.checked_mul(count).ok_or_else(too_big)?;
    if floor > max_bytes {
        return Err(too_big());
    }
    let mut out = Vec::with_capacity(floor as usize + 24);
    ReplyEncoder::new(&mut out, roaringd_resp::Protocol::Resp2)
        .array_header(usize::try_from(elements).map_err(|_| too_big())?);
    let mut rng = rand::rng();
    for _ in 0..count {
        let item = &pool[rng.random_range(0..pool.len())];
        if (out.len() + item.len()) as u64 > max_bytes {
            return Err(too_big());
        }
        out.extend_from_slice(item);
    }
    Ok(Reply::Encoded(out))
}

/// `reply` encoded in protocol `proto`, for [`repeated_draws`]'s pool.
pub fn encoded(reply: &Reply, proto: roaringd_resp::Protocol) -> Vec<u8> {
    let mut out = Vec::new();
    reply.encode(&mut ReplyEncoder::new(&mut out, proto));
    out
}

/// Appends the error reply for `e`.
pub fn encode_error(e: &CommandError, enc: &mut ReplyEncoder<'_>) {
    match e {
        CommandError::Err(t) => {
            let mut s = String::with_capacity(4 + t.len());
            s.push_str("ERR ");
            s.push_str(t);
            enc.error(s.as_bytes());
        }
        CommandError::Custom(t) => enc.error(t.as_bytes()),
        CommandError::UnknownCommand(t)
        | CommandError::UnknownSubcommand(t)
        | CommandError::Raw(t) => enc.error(t),
        other => enc.error(other.to_string().as_bytes()),
    }
}

impl From<CommandError> for Reply {
    fn from(e: CommandError) -> Self {
        Reply::Error(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roaringd_resp::Protocol;

    fn pool(items: &[&[u8]]) -> Vec<Vec<u8>> {
        items
            .iter()
            .map(|b| encoded(&Reply::Bulk(b.to_vec()), Protocol::Resp2))
            .collect()
    }

    #[test]
    fn repeated_draws_are_count_items_of_the_pool() {
        let p = pool(&[b"a", b"bb"]);
        let Reply::Encoded(bytes) = repeated_draws(&p, 1, 50, 1 << 20).unwrap() else {
            panic!("not encoded");
        };
        let body = bytes.strip_prefix(b"*50\r\n").expect("array header");
        let mut rest = body;
        let mut n = 0;
        while !rest.is_empty() {
            let item = p.iter().find(|i| rest.starts_with(i)).expect("a pool item");
            rest = &rest[item.len()..];
            n += 1;
        }
        assert_eq!(n, 50);
    }

    #[test]
    fn repeated_draws_count_elements_per_draw_and_handle_an_empty_pool() {
        let p = pool(&[b"f"]);
        let Reply::Encoded(bytes) = repeated_draws(&p, 2, 3, 1 << 20).unwrap() else {
            panic!("not encoded");
        };
        assert!(bytes.starts_with(b"*6\r\n"));
        assert_eq!(
            repeated_draws(&[], 1, u64::MAX, 10).unwrap(),
            Reply::Array(Vec::new())
        );
    }

    #[test]
    fn repeated_draws_refuse_replies_over_the_bound_without_building_them() {
        let p = pool(&[b"a"]);
        // 7 bytes an item: 10 draws fit in 100 bytes, 20 do not.
        assert!(repeated_draws(&p, 1, 10, 100).is_ok());
        for count in [20, u64::MAX / 2, u64::MAX] {
            let e = repeated_draws(&p, 2, count, 100).unwrap_err();
            assert_eq!(e.to_string(), "ERR reply would exceed max-reply-bytes");
        }
        // The smallest item decides the early refusal; a big one is caught
        // while the reply grows.
        let mixed = pool(&[b"a", &[b'x'; 1000]]);
        let mut refused = 0;
        for _ in 0..20 {
            refused += usize::from(repeated_draws(&mixed, 1, 10, 500).is_err());
        }
        assert!(refused > 0);
    }
}
