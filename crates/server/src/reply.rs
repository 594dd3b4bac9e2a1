//! `Reply`: the typed value a handler returns, and its encoding through the
//! resp crate's `ReplyEncoder` (which downgrades RESP3 types for RESP2).

use std::borrow::Cow;

use roaringd_resp::ReplyEncoder;

use crate::error::CommandError;

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
        }
    }
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
