//! `StoreError`: the one error type of the store. User-facing variants (the
//! client did something the data type does not allow) are kept apart from
//! `Io` / `Corrupt` (the store itself failed or holds bytes it cannot trust).

use std::fmt;

/// Every failure a store operation can report.
///
/// The `Display` text of the user-facing variants is Redis's exact reply text
/// (without the leading `-`), so a server may forward it unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The key holds a value of another type.
    WrongType,
    /// A stored string (or argument) is not a canonical 64-bit integer.
    NotInteger,
    /// A stored hash field is not a canonical 64-bit integer (HINCRBY).
    HashNotInteger,
    /// A stored string (or argument) is not a valid float.
    NotFloat,
    /// A stored hash field is not a valid float (HINCRBYFLOAT).
    HashNotFloat,
    /// An integer increment would overflow `i64`.
    Overflow,
    /// A float increment would produce NaN or an infinity.
    NanOrInfinity,
    /// The source key does not exist (RENAME).
    NoSuchKey,
    /// An offset or index is out of the allowed range (SETRANGE offset < 0).
    OffsetOutOfRange,
    /// A string would grow past 512 MiB.
    StringTooLong,
    /// An expire time overflows when converted to milliseconds.
    InvalidExpireTime(&'static str),
    /// A SCAN-family cursor is not an unsigned integer.
    InvalidCursor,
    /// The database index is outside `0..databases`.
    DbIndexOutOfRange,
    /// A key (or key plus member / field) exceeds the store's entry key
    /// limit ([`crate::kv::MAX_ENTRY_KEY`] bytes with its prefix). Redis has
    /// no such limit; this is ours.
    KeyTooLong,
    /// An I/O failure in the underlying store. The text is for logs.
    Io(String),
    /// Stored bytes failed validation. The text is for logs.
    Corrupt(String),
}

impl StoreError {
    /// True for errors caused by the request (the client gets the text),
    /// false for `Io` / `Corrupt` (the server logs them).
    #[must_use]
    pub fn is_user_error(&self) -> bool {
        !matches!(self, StoreError::Io(_) | StoreError::Corrupt(_))
    }

    /// Shorthand for a `Corrupt` error.
    pub(crate) fn corrupt(what: impl Into<String>) -> Self {
        StoreError::Corrupt(what.into())
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::WrongType => {
                f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            StoreError::NotInteger => f.write_str("ERR value is not an integer or out of range"),
            StoreError::HashNotInteger => f.write_str("ERR hash value is not an integer"),
            StoreError::NotFloat => f.write_str("ERR value is not a valid float"),
            StoreError::HashNotFloat => f.write_str("ERR hash value is not a float"),
            StoreError::Overflow => f.write_str("ERR increment or decrement would overflow"),
            StoreError::NanOrInfinity => f.write_str("ERR increment would produce NaN or Infinity"),
            StoreError::NoSuchKey => f.write_str("ERR no such key"),
            StoreError::OffsetOutOfRange => f.write_str("ERR offset is out of range"),
            StoreError::StringTooLong => {
                f.write_str("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
            }
            StoreError::InvalidExpireTime(cmd) => {
                write!(f, "ERR invalid expire time in '{cmd}' command")
            }
            StoreError::InvalidCursor => f.write_str("ERR invalid cursor"),
            StoreError::DbIndexOutOfRange => f.write_str("ERR DB index is out of range"),
            StoreError::KeyTooLong => f.write_str(
                "ERR key or element too long for the store (an entry key is limited to 65535 bytes)",
            ),
            StoreError::Io(e) => write!(f, "ERR I/O error in the store: {e}"),
            StoreError::Corrupt(e) => write!(f, "ERR stored data is corrupt: {e}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Result alias of the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
