//! `KeyMeta`: the `meta` entry of one user key — its type, version, expire
//! time, encoding flag and type summary (a string's bytes inline; a set's
//! cardinality; a hash's length) — and its checked byte codec.
//!
//! ```text
//! format u8 = 1 | kind u8 | flags u8 | version u64 BE | expire_at_ms u64 BE | summary
//! summary: string → the value bytes
//!          set    → card u64 BE
//!          hash   → len u64 BE | next_seq u64 BE
//!          bitmap → [`BitmapSummary`] as LEB128 varints: card, min, max,
//!                   containers, sum, then (containers, values, bytes) for
//!                   the array, bitset and run kinds, then the number of
//!                   delta entries (a one-bit bitmap's summary is about 20
//!                   bytes); with flag [`FLAG_INLINE`], then the key's only
//!                   `data` entry: its subkey (2 bytes) and value (the rest)
//! ```
//!
//! An inline entry ([`KeyMeta::inline_entry`]) is how a bitmap whose data is
//! one small entry (a page or a small single, at most [`INLINE_MAX`] bytes)
//! is stored: in its meta entry, so that reading the key is one entry and
//! writing it one LSM write. The `data` keyspace then holds nothing of that
//! key version; [`KeyMeta::decode`] skips the entry (the `Txn` reads it as
//! the version's stored data, `crate::txn`).

use crate::error::{Result, StoreError};
use crate::varint;

const FORMAT: u8 = 1;
const HEADER: usize = 19;
/// Flag bit: the key has left its small encoding (Redis never goes back).
const FLAG_BIG: u8 = 1;
/// Flag bit (strings): never reported as `int` (an INCRBYFLOAT result).
const FLAG_NOINT: u8 = 2;
/// Flag bit (bitmaps): the key version's only `data` entry follows the
/// summary (module docs).
pub const FLAG_INLINE: u8 = 4;
/// Bytes of a subkey of an inline entry (a bitmap block, u16 BE).
pub const INLINE_SUBKEY: usize = 2;
/// The largest value kept inline: a full page (`types::bitmap::page`).
pub const INLINE_MAX: usize = 2048;

/// The Redis type of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// String.
    String,
    /// Set of members.
    Set,
    /// Hash of fields.
    Hash,
    /// Roaring bitmap (TairRoaring, `TR.*`): one `data` entry per container.
    Bitmap,
}

impl Kind {
    /// The name TYPE replies with.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Set => "set",
            Kind::Hash => "hash",
            Kind::Bitmap => BITMAP_TYPE_NAME,
        }
    }

    fn tag(self) -> u8 {
        match self {
            Kind::String => 0,
            Kind::Set => 1,
            Kind::Hash => 2,
            Kind::Bitmap => 3,
        }
    }
}

/// The name TYPE (and SCAN TYPE) uses for bitmap keys. The reference does
/// not document what the real service answers (spec open point 13: "any
/// stable module-type name"; a search of the public docs found nothing), so
/// we answer the product name, `TairRoaring`, and keep it stable.
pub const BITMAP_TYPE_NAME: &str = "TairRoaring";

/// Per-kind container census of a bitmap (TR.STAT's detail lines).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindCensus {
    /// Containers of this kind.
    pub containers: u64,
    /// Values held in them.
    pub values: u64,
    /// Bytes as TR.STAT counts them (array 2×n, bitset 8,192, run 2 + 4×runs).
    pub bytes: u64,
}

/// The summary a bitmap keeps in `meta`, so TR.BITCOUNT (whole key), TR.MIN,
/// TR.MAX and TR.STAT need no container read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitmapSummary {
    /// Number of set bits.
    pub card: u64,
    /// Smallest set bit (meaningless when `card == 0`).
    pub min: u32,
    /// Largest set bit (meaningless when `card == 0`).
    pub max: u32,
    /// Number of non-empty containers (= container `data` entries).
    pub containers: u64,
    /// Sum of all set offsets (at most 2^63 − 2^31, fits u64).
    pub sum: u64,
    /// Census by kind: array, bitset, run.
    pub kinds: [KindCensus; 3],
    /// Number of delta `data` entries, small edits that builds before
    /// store format 6 stored beside their container: always 0 once the
    /// store has opened at format 6, which folds them
    /// (`types::bitmap::delta`). Kept in the encoding, so that a meta
    /// entry of an earlier format decodes as it was written.
    pub deltas: u64,
}

impl BitmapSummary {
    fn encode_into(&self, out: &mut Vec<u8>) {
        for v in [
            self.card,
            u64::from(self.min),
            u64::from(self.max),
            self.containers,
            self.sum,
        ] {
            varint::put(out, v);
        }
        for k in &self.kinds {
            varint::put(out, k.containers);
            varint::put(out, k.values);
            varint::put(out, k.bytes);
        }
        varint::put(out, self.deltas);
    }

    /// Decodes the summary at the front of `b`; returns it and the bytes
    /// after it.
    fn decode_prefix(b: &[u8]) -> Result<(BitmapSummary, &[u8])> {
        // Fifteen numbers, read without an error value each (this runs on
        // every read of a bitmap's meta); the first failure decides.
        let mut rest = b;
        let mut failed = None;
        let mut next = || match varint::get(&mut rest, 10) {
            Ok(v) => v,
            Err(e) => {
                failed.get_or_insert(e);
                0
            }
        };
        let card = next();
        let (min, max) = (next(), next());
        let containers = next();
        let sum = next();
        let mut kinds = [KindCensus::default(); 3];
        for k in &mut kinds {
            k.containers = next();
            k.values = next();
            k.bytes = next();
        }
        let deltas = next();
        if let Some(e) = failed {
            return Err(StoreError::corrupt(match e {
                varint::VarintError::Truncated => "bitmap summary truncated",
                varint::VarintError::TooLong => "bitmap summary varint too long",
            }));
        }
        let (Ok(min), Ok(max)) = (u32::try_from(min), u32::try_from(max)) else {
            return Err(StoreError::corrupt("bitmap summary min/max above u32"));
        };
        Ok((
            BitmapSummary {
                card,
                min,
                max,
                containers,
                sum,
                kinds,
                deltas,
            },
            rest,
        ))
    }
}

/// The type-specific part of a key's meta.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Summary {
    /// A string's bytes (strings live inline in `meta`).
    String(Vec<u8>),
    /// A set: its member count (members are `data` entries).
    Set {
        /// Number of members.
        card: u64,
    },
    /// A hash: its field count and the next insertion sequence number
    /// (fields carry it to replay Redis's listpack insertion order).
    Hash {
        /// Number of fields.
        len: u64,
        /// Sequence number the next new field gets.
        next_seq: u64,
    },
    /// A bitmap: its summary (containers are `data` entries).
    Bitmap(BitmapSummary),
}

/// A key's type and expire time: all that key scans (KEYS, SCAN,
/// RANDOMKEY) need, decoded without copying a string's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaBrief {
    /// The key's type.
    pub kind: Kind,
    /// Absolute expire time in Unix ms; 0 = none.
    pub expire_at_ms: u64,
}

impl MetaBrief {
    /// True when the key has an expire time at or before `now_ms`.
    #[must_use]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }
}

/// The `meta` entry of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyMeta {
    /// Version of the key's `data` entries; unique across restarts.
    pub version: u64,
    /// Absolute expire time in Unix milliseconds; 0 = no expiry.
    pub expire_at_ms: u64,
    /// The key has been converted to its big encoding (raw string,
    /// hashtable set or hash); sticky, as in Redis.
    pub big: bool,
    /// Strings only: the value was stored without integer encoding
    /// (INCRBYFLOAT results are `embstr` / `raw` even when integral).
    pub noint: bool,
    /// Type and summary.
    pub summary: Summary,
}

impl KeyMeta {
    /// The key's type.
    #[must_use]
    pub fn kind(&self) -> Kind {
        match self.summary {
            Summary::String(_) => Kind::String,
            Summary::Set { .. } => Kind::Set,
            Summary::Hash { .. } => Kind::Hash,
            Summary::Bitmap(_) => Kind::Bitmap,
        }
    }

    /// True when the key has an expire time at or before `now_ms`.
    #[must_use]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }

    /// True when the key's elements live in `data` entries.
    #[must_use]
    pub fn has_data(&self) -> bool {
        !matches!(self.summary, Summary::String(_))
    }

    /// How many `data` entries the key has: members, fields, or a
    /// bitmap's containers; 0 for a string.
    #[must_use]
    pub fn data_entries(&self) -> u64 {
        match &self.summary {
            Summary::String(_) => 0,
            Summary::Set { card } => *card,
            Summary::Hash { len, .. } => *len,
            Summary::Bitmap(s) => s.containers,
        }
    }

    /// Encodes into the `meta` value bytes.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let extra = match &self.summary {
            Summary::String(v) => v.len(),
            Summary::Set { .. } => 8,
            Summary::Hash { .. } => 16,
            Summary::Bitmap(_) => 40,
        };
        let mut out = Vec::with_capacity(HEADER + extra);
        out.push(FORMAT);
        out.push(self.kind().tag());
        out.push(if self.big { FLAG_BIG } else { 0 } | if self.noint { FLAG_NOINT } else { 0 });
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.expire_at_ms.to_be_bytes());
        match &self.summary {
            Summary::String(v) => out.extend_from_slice(v),
            Summary::Set { card } => out.extend_from_slice(&card.to_be_bytes()),
            Summary::Hash { len, next_seq } => {
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(&next_seq.to_be_bytes());
            }
            Summary::Bitmap(b) => b.encode_into(&mut out),
        }
        out
    }

    /// [`KeyMeta::encode`] with `(subkey, value)`, the key version's only
    /// `data` entry, inline (module docs). The caller keeps to the
    /// contract: a bitmap, a subkey of [`INLINE_SUBKEY`] bytes, a value of
    /// 1 to [`INLINE_MAX`] bytes, and no `data` entry of the version
    /// stored.
    #[must_use]
    pub fn encode_inline(&self, subkey: &[u8], value: &[u8]) -> Vec<u8> {
        debug_assert!(matches!(self.summary, Summary::Bitmap(_)));
        debug_assert_eq!(subkey.len(), INLINE_SUBKEY);
        let mut out = self.encode();
        out.reserve(subkey.len() + value.len());
        out[2] |= FLAG_INLINE;
        out.extend_from_slice(subkey);
        out.extend_from_slice(value);
        out
    }

    /// The inline `data` entry `(subkey, value)` of encoded meta bytes
    /// ([`KeyMeta::encode_inline`]), `None` when they carry none.
    ///
    /// # Errors
    /// `Corrupt` as [`KeyMeta::decode`].
    pub fn inline_entry(bytes: &[u8]) -> Result<Option<(&[u8], &[u8])>> {
        if !Self::bytes_have_inline(bytes) {
            Self::decode_header(bytes)?;
            return Ok(None);
        }
        let (_, at) = Self::decode_with_inline(bytes)?;
        Ok(at.map(|at| bytes[at..].split_at(INLINE_SUBKEY)))
    }

    /// [`KeyMeta::decode`], with where the inline entry starts in `bytes`
    /// (its subkey's offset), if it has one: one pass over the summary.
    ///
    /// # Errors
    /// `Corrupt` as [`KeyMeta::decode`].
    pub fn decode_with_inline(bytes: &[u8]) -> Result<(KeyMeta, Option<usize>)> {
        let (kind, flags, version, expire_at_ms) = Self::decode_header(bytes)?;
        check_inline_kind(kind, flags)?;
        let rest = &bytes[HEADER..];
        let mut inline_at = None;
        let summary = match kind {
            0 => Summary::String(rest.to_vec()),
            1 => Summary::Set {
                card: u64::from_be_bytes(exact::<8>(rest)?),
            },
            2 => {
                let b = exact::<16>(rest)?;
                let (l, s) = b.split_at(8);
                Summary::Hash {
                    len: u64::from_be_bytes(l.try_into().map_err(|_| bad_len())?),
                    next_seq: u64::from_be_bytes(s.try_into().map_err(|_| bad_len())?),
                }
            }
            3 => {
                let (s, tail) = BitmapSummary::decode_prefix(rest)?;
                check_tail(flags, tail)?;
                if flags & FLAG_INLINE != 0 {
                    inline_at = Some(bytes.len() - tail.len());
                }
                Summary::Bitmap(s)
            }
            k => return Err(StoreError::Corrupt(format!("unknown key kind {k}"))),
        };
        let m = KeyMeta {
            version,
            expire_at_ms,
            big: flags & FLAG_BIG != 0,
            noint: flags & FLAG_NOINT != 0,
            summary,
        };
        Ok((m, inline_at))
    }

    /// Decodes `meta` value bytes, validating every field. A bitmap's
    /// inline entry is checked for its length and skipped.
    ///
    /// # Errors
    /// `Corrupt` on an unknown format or kind, or a wrong length.
    pub fn decode(bytes: &[u8]) -> Result<KeyMeta> {
        Self::decode_with_inline(bytes).map(|(m, _)| m)
    }

    /// The key's type and expire time.
    #[must_use]
    pub fn brief(&self) -> MetaBrief {
        MetaBrief {
            kind: self.kind(),
            expire_at_ms: self.expire_at_ms,
        }
    }

    /// Decodes only the type and expire time, validating like
    /// [`KeyMeta::decode`] without copying a string's value.
    ///
    /// # Errors
    /// `Corrupt` as `decode`.
    pub fn decode_brief(bytes: &[u8]) -> Result<MetaBrief> {
        let (kind, flags, _, expire_at_ms) = Self::decode_header(bytes)?;
        check_inline_kind(kind, flags)?;
        let rest = bytes.len() - HEADER;
        let kind = match (kind, rest) {
            (0, _) => Kind::String,
            (1, 8) => Kind::Set,
            (2, 16) => Kind::Hash,
            (3, _) => {
                // A few varints: validate them all, as `decode` would.
                let (_, tail) = BitmapSummary::decode_prefix(&bytes[HEADER..])?;
                check_tail(flags, tail)?;
                Kind::Bitmap
            }
            (1 | 2, _) => return Err(bad_len()),
            (k, _) => return Err(StoreError::Corrupt(format!("unknown key kind {k}"))),
        };
        Ok(MetaBrief { kind, expire_at_ms })
    }

    /// Reads only the version of encoded meta bytes (for the data GC).
    ///
    /// # Errors
    /// `Corrupt` when the header is malformed.
    pub fn decode_version(bytes: &[u8]) -> Result<u64> {
        Self::decode_header(bytes).map(|h| h.2)
    }

    /// True when encoded meta bytes carry an inline entry (by their
    /// header's flag alone; [`KeyMeta::inline_entry`] validates it).
    #[must_use]
    pub fn bytes_have_inline(bytes: &[u8]) -> bool {
        bytes.len() >= HEADER && bytes[1] == Kind::Bitmap.tag() && bytes[2] & FLAG_INLINE != 0
    }

    /// True when encoded meta bytes name a key whose elements live in
    /// `data` entries (any type but a string, and a bitmap whose only
    /// entry is inline); false for bytes that do not decode.
    #[must_use]
    pub fn bytes_have_data(bytes: &[u8]) -> bool {
        Self::decode_header(bytes).is_ok_and(|h| h.0 != 0 && h.1 & FLAG_INLINE == 0)
    }

    /// The encoded meta `bytes` with expire time `at_ms` (0: none) and
    /// everything else as it is: its summary and any inline entry keep
    /// their bytes.
    ///
    /// # Errors
    /// `Corrupt` when `bytes` has no valid header.
    pub(crate) fn with_expiry(bytes: &[u8], at_ms: u64) -> Result<Vec<u8>> {
        Self::decode_header(bytes)?;
        let mut out = bytes.to_vec();
        out[11..HEADER].copy_from_slice(&at_ms.to_be_bytes());
        Ok(out)
    }

    fn decode_header(bytes: &[u8]) -> Result<(u8, u8, u64, u64)> {
        if bytes.len() < HEADER {
            return Err(StoreError::corrupt("meta value shorter than its header"));
        }
        if bytes[0] != FORMAT {
            return Err(StoreError::Corrupt(format!(
                "unknown meta format {}",
                bytes[0]
            )));
        }
        let mut v = [0u8; 8];
        v.copy_from_slice(&bytes[3..11]);
        let mut e = [0u8; 8];
        e.copy_from_slice(&bytes[11..19]);
        Ok((
            bytes[1],
            bytes[2],
            u64::from_be_bytes(v),
            u64::from_be_bytes(e),
        ))
    }
}

/// Refuses the inline flag on a key of kind `kind` that is no bitmap.
fn check_inline_kind(kind: u8, flags: u8) -> Result<()> {
    if kind != Kind::Bitmap.tag() && flags & FLAG_INLINE != 0 {
        return Err(StoreError::corrupt(
            "inline data entry on a key that is no bitmap",
        ));
    }
    Ok(())
}

/// Checks what follows a bitmap's summary: an inline entry (a subkey and
/// 1 to [`INLINE_MAX`] bytes of value) when `flags` says so, else nothing.
fn check_tail(flags: u8, tail: &[u8]) -> Result<()> {
    let ok = if flags & FLAG_INLINE == 0 {
        tail.is_empty()
    } else {
        (INLINE_SUBKEY + 1..=INLINE_SUBKEY + INLINE_MAX).contains(&tail.len())
    };
    if ok {
        Ok(())
    } else {
        Err(bad_len())
    }
}

fn bad_len() -> StoreError {
    StoreError::corrupt("meta summary has the wrong length")
}

fn exact<const N: usize>(b: &[u8]) -> Result<[u8; N]> {
    b.try_into().map_err(|_| bad_len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<KeyMeta> {
        vec![
            KeyMeta {
                version: 1,
                expire_at_ms: 0,
                big: false,
                noint: true,
                summary: Summary::String(b"hello".to_vec()),
            },
            KeyMeta {
                version: u64::MAX,
                expire_at_ms: 123,
                big: true,
                noint: false,
                summary: Summary::Set { card: 7 },
            },
            KeyMeta {
                version: 9,
                expire_at_ms: 5,
                big: false,
                noint: false,
                summary: Summary::Hash {
                    len: 3,
                    next_seq: 10,
                },
            },
            KeyMeta {
                version: 11,
                expire_at_ms: 0,
                big: false,
                noint: false,
                summary: Summary::Bitmap(BitmapSummary {
                    card: 1 << 40,
                    min: 3,
                    max: u32::MAX,
                    containers: 65_536,
                    sum: u64::MAX - 7,
                    kinds: [
                        KindCensus {
                            containers: 1,
                            values: 2,
                            bytes: 4,
                        },
                        KindCensus::default(),
                        KindCensus {
                            containers: 300,
                            values: 70_000,
                            bytes: 1_000_000,
                        },
                    ],
                    deltas: 0,
                }),
            },
            KeyMeta {
                version: 12,
                expire_at_ms: 0,
                big: false,
                noint: false,
                summary: Summary::Bitmap(BitmapSummary {
                    card: 5_000,
                    containers: 1,
                    deltas: 63,
                    ..BitmapSummary::default()
                }),
            },
        ]
    }

    #[test]
    fn meta_roundtrips() {
        for m in samples() {
            let b = m.encode();
            assert_eq!(KeyMeta::decode(&b).unwrap(), m);
            assert_eq!(KeyMeta::decode_version(&b).unwrap(), m.version);
            assert_eq!(KeyMeta::decode_brief(&b).unwrap(), m.brief());
        }
    }

    #[test]
    fn an_inline_entry_roundtrips_and_is_skipped_by_decode() {
        let m = &samples()[3];
        let b = m.encode_inline(&[0, 7], b"page bytes");
        assert_eq!(KeyMeta::decode(&b).unwrap(), *m);
        assert_eq!(KeyMeta::decode_brief(&b).unwrap(), m.brief());
        assert_eq!(KeyMeta::decode_version(&b).unwrap(), m.version);
        assert_eq!(
            KeyMeta::inline_entry(&b).unwrap(),
            Some((&[0u8, 7][..], &b"page bytes"[..]))
        );
        assert!(!KeyMeta::bytes_have_data(&b));
        assert!(KeyMeta::bytes_have_data(&m.encode()));
        assert_eq!(KeyMeta::inline_entry(&m.encode()).unwrap(), None);
        // Every cut of the entry, and the flag without one, is `Corrupt`.
        let plain = m.encode().len();
        for n in plain..plain + 3 {
            assert!(KeyMeta::decode(&b[..n]).is_err(), "cut at {n}");
            assert!(KeyMeta::decode_brief(&b[..n]).is_err(), "cut at {n}");
            assert!(KeyMeta::inline_entry(&b[..n]).is_err(), "cut at {n}");
        }
        // An entry too long to be inline, or on another type, is refused.
        let long = m.encode_inline(&[0, 7], &vec![1u8; INLINE_MAX + 1]);
        assert!(KeyMeta::decode(&long).is_err());
        let mut set = samples()[1].encode();
        set[2] |= FLAG_INLINE;
        assert!(KeyMeta::decode(&set).is_err());
        assert!(KeyMeta::decode_brief(&set).is_err());
        // Bytes without the flag but with a tail stay refused.
        let mut tail = m.encode();
        tail.extend_from_slice(&[0, 7, 1]);
        assert!(KeyMeta::decode(&tail).is_err());
    }

    #[test]
    fn meta_decode_of_damaged_bytes_is_corrupt_not_panic() {
        for m in samples() {
            let b = m.encode();
            for n in 0..b.len() {
                let r = KeyMeta::decode(&b[..n]);
                if m.kind() != Kind::String || n < HEADER {
                    assert!(r.is_err(), "{m:?} truncated at {n}");
                    assert!(KeyMeta::decode_brief(&b[..n]).is_err(), "{m:?} at {n}");
                }
            }
            let mut x = b.clone();
            x[1] = 77;
            assert!(KeyMeta::decode(&x).is_err());
            let mut y = b.clone();
            y[0] = 0;
            assert!(KeyMeta::decode(&y).is_err());
        }
    }
}
