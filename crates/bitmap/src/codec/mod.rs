//! The container value format: a 4-byte header and a little-endian payload.
//!
//! This module owns the header layout, the format version and the decode
//! errors; `view` validates untrusted bytes, `edit` changes owned bytes in
//! place. The field-by-field layout is in `docs/format.md`; keep the two in
//! step.
//!
//! ```text
//! byte 0      tag: bits 0-3 kind (0 array, 1 bitset, 2 run), bits 4-7 format version (1)
//! bytes 1..4  cardinality, u24 little-endian (0..=65536)
//! bytes 4..   payload: array  = cardinality × u16 LE, ascending
//!                      bitset = 1024 × u64 LE, value v is bit (v % 64) of word v / 64
//!                      run    = u16 LE run count r, then r × (start u16 LE, length-1 u16 LE)
//! ```

pub mod edit;
pub mod view;

use core::fmt;

/// Format version written into every container header.
pub const FORMAT_VERSION: u8 = 1;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 4;
/// Payload bytes of a bitset container.
pub const BITSET_BYTES: usize = 8192;
/// Number of u64 words in a bitset container.
pub const BITSET_WORDS: usize = 1024;
/// Largest cardinality an array container may hold.
pub const ARRAY_MAX: usize = 4096;

/// Container kind, in the canonical order used by kernel names (array, run, bitset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Sorted distinct u16 values, at most 4,096.
    Array,
    /// Sorted, non-overlapping, non-adjacent runs of consecutive values.
    Run,
    /// 65,536 bits.
    Bitset,
}

impl Kind {
    /// The 4-bit kind code stored in the tag byte.
    pub const fn code(self) -> u8 {
        match self {
            Kind::Array => 0,
            Kind::Bitset => 1,
            Kind::Run => 2,
        }
    }

    /// Inverse of [`Kind::code`]; `None` for unknown codes.
    pub const fn from_code(code: u8) -> Option<Kind> {
        match code {
            0 => Some(Kind::Array),
            1 => Some(Kind::Bitset),
            2 => Some(Kind::Run),
            _ => None,
        }
    }

    /// Lower-case name as TR.STAT prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Array => "array",
            Kind::Bitset => "bitset",
            Kind::Run => "run",
        }
    }
}

/// Packs a header into its 4 bytes (tag, then u24 LE cardinality) as a u32 LE.
pub(crate) const fn pack_header(kind: Kind, card: u32) -> u32 {
    (kind.code() as u32) | ((FORMAT_VERSION as u32) << 4) | (card << 8)
}

/// Why bytes could not be decoded. Every decoder returns one of these; none panics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// Fewer bytes than the header or the payload needs.
    Truncated { needed: usize, got: usize },
    /// More bytes than the header says the container holds.
    TrailingBytes { expected: usize, got: usize },
    /// Header version is not [`FORMAT_VERSION`].
    UnsupportedVersion(u8),
    /// Header kind code is not 0, 1 or 2.
    UnknownKind(u8),
    /// Cardinality outside what the kind allows (array ≤ 4,096, bitset > 4,096, run ≥ 1).
    BadCardinality { kind: Kind, card: u32 },
    /// Values, runs or keys not strictly ascending (or runs touching) at this index.
    NotAscending { index: usize },
    /// A run passes 65,535.
    RunOverflow { index: usize },
    /// Stored cardinality differs from the payload's count.
    CardinalityMismatch { stored: u64, actual: u64 },
    /// Portable format: unknown cookie.
    BadCookie(u32),
    /// Portable format: container count or offset inconsistent with the layout.
    BadLayout(&'static str),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Truncated { needed, got } => {
                write!(f, "truncated: need {needed} bytes, got {got}")
            }
            FormatError::TrailingBytes { expected, got } => {
                write!(f, "trailing bytes: expected {expected} bytes, got {got}")
            }
            FormatError::UnsupportedVersion(v) => write!(f, "unsupported format version {v}"),
            FormatError::UnknownKind(k) => write!(f, "unknown container kind {k}"),
            FormatError::BadCardinality { kind, card } => {
                write!(
                    f,
                    "cardinality {card} not allowed for a {} container",
                    kind.name()
                )
            }
            FormatError::NotAscending { index } => write!(f, "not strictly ascending at {index}"),
            FormatError::RunOverflow { index } => write!(f, "run {index} passes 65535"),
            FormatError::CardinalityMismatch { stored, actual } => {
                write!(f, "stored cardinality {stored}, payload holds {actual}")
            }
            FormatError::BadCookie(c) => write!(f, "unknown portable cookie {c:#x}"),
            FormatError::BadLayout(what) => write!(f, "bad portable layout: {what}"),
        }
    }
}

impl std::error::Error for FormatError {}

/// Reads a u16 LE at `at`; the caller has checked the bounds.
#[inline]
pub(crate) fn read_u16(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

/// Reads a u32 LE at `at`; the caller has checked the bounds.
#[inline]
pub(crate) fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Reads a u64 LE at `at`; the caller has checked the bounds.
#[inline]
pub(crate) fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

#[cfg(target_endian = "big")]
compile_error!(
    "roaringd-bitmap operates on little-endian bytes in place and needs a little-endian target"
);
