//! Entry keys of the three spaces (docs/architecture.md, "store"):
//!
//! ```text
//! meta:   db u16 BE | user key
//! data:   db u16 BE | user key len u32 BE | user key | version u64 BE | subkey
//! expiry: expire_at_ms u64 BE | db u16 BE | user key
//! ```
//!
//! Database `0xFFFF` is reserved for the store's own records in `meta`
//! (the version epoch, key counters); it is never a user database.

use crate::error::{Result, StoreError};

/// Database number reserved for internal records.
pub const INTERNAL_DB: u16 = 0xFFFF;

/// `meta` key of `(db, key)`.
#[must_use]
pub fn meta_key(db: u16, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + key.len());
    k.extend_from_slice(&db.to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// An entry key built on the stack when short (lookups allocate
/// nothing); derefs to the key bytes.
pub enum KeyBuf {
    /// Length and bytes of a key of at most [`KeyBuf::INLINE`] bytes.
    Inline(usize, [u8; KeyBuf::INLINE]),
    /// A longer key.
    Heap(Vec<u8>),
}

impl KeyBuf {
    /// Longest key kept inline.
    pub const INLINE: usize = 80;

    // Inlined with `meta` and `data`: called, it built the 88-byte value
    // on its own stack and returned it by a move, 16-byte loads over the
    // parts' narrower stores that stalled on store forwarding (5% of an
    // EXEC of 100 TR.GETBITs over 100,000 keys; about 1% is left where
    // the caller still moves the value).
    #[inline(always)]
    pub(crate) fn from_parts(parts: &[&[u8]]) -> Self {
        let n: usize = parts.iter().map(|p| p.len()).sum();
        if n > Self::INLINE {
            let mut v = Vec::with_capacity(n);
            for p in parts {
                v.extend_from_slice(p);
            }
            return KeyBuf::Heap(v);
        }
        let mut b = [0u8; Self::INLINE];
        let mut at = 0;
        for p in parts {
            b[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        KeyBuf::Inline(n, b)
    }

    /// The `meta` key of `(db, key)`, as [`meta_key`].
    #[must_use]
    #[inline(always)]
    pub fn meta(db: u16, key: &[u8]) -> Self {
        Self::from_parts(&[&db.to_be_bytes(), key])
    }

    /// The `data` key of an element, as [`data_key`].
    #[must_use]
    #[inline(always)]
    pub fn data(db: u16, key: &[u8], version: u64, subkey: &[u8]) -> Self {
        Self::from_parts(&[
            &db.to_be_bytes(),
            &(key.len() as u32).to_be_bytes(),
            key,
            &version.to_be_bytes(),
            subkey,
        ])
    }

    /// The key as an owned vector.
    #[must_use]
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            KeyBuf::Inline(n, b) => b[..n].to_vec(),
            KeyBuf::Heap(v) => v,
        }
    }
}

impl std::ops::Deref for KeyBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            KeyBuf::Inline(n, b) => &b[..*n],
            KeyBuf::Heap(v) => v,
        }
    }
}

/// Prefix of every `meta` key of database `db`.
#[must_use]
pub fn meta_db_prefix(db: u16) -> [u8; 2] {
    db.to_be_bytes()
}

/// Splits a `meta` key into `(db, user key)`.
///
/// # Errors
/// `Corrupt` when shorter than the database prefix.
pub fn split_meta_key(k: &[u8]) -> Result<(u16, &[u8])> {
    match k {
        [a, b, rest @ ..] => Ok((u16::from_be_bytes([*a, *b]), rest)),
        _ => Err(StoreError::corrupt("meta key shorter than 2 bytes")),
    }
}

/// Where a `data` key's user key ends: the length of its `db | len | key`
/// prefix, or `None` when `k` is too short to hold what its length says.
#[must_use]
pub fn data_key_prefix_len(k: &[u8]) -> Option<usize> {
    let len = u32::from_be_bytes(k.get(2..6)?.try_into().ok()?) as usize;
    let end = 6usize.checked_add(len)?;
    (k.len() >= end).then_some(end)
}

/// Prefix of every `data` entry of one key, all versions: `db | len | key`.
#[must_use]
pub fn key_data_prefix(db: u16, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(14 + key.len());
    k.extend_from_slice(&db.to_be_bytes());
    k.extend_from_slice(&(key.len() as u32).to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// Prefix of every `data` entry of one key version: `db | len | key | version`.
#[must_use]
pub fn data_prefix(db: u16, key: &[u8], version: u64) -> Vec<u8> {
    let mut k = key_data_prefix(db, key);
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// `data` key of one element (member, field, container) of a key version.
#[must_use]
pub fn data_key(db: u16, key: &[u8], version: u64, subkey: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(14 + key.len() + subkey.len());
    k.extend_from_slice(&db.to_be_bytes());
    k.extend_from_slice(&(key.len() as u32).to_be_bytes());
    k.extend_from_slice(key);
    k.extend_from_slice(&version.to_be_bytes());
    k.extend_from_slice(subkey);
    k
}

/// The parts of a `data` key.
#[derive(Debug, PartialEq, Eq)]
pub struct DataKeyParts<'a> {
    /// Database.
    pub db: u16,
    /// User key.
    pub key: &'a [u8],
    /// Key version the entry belongs to.
    pub version: u64,
    /// Member, field or container id.
    pub subkey: &'a [u8],
}

/// Splits a `data` key.
///
/// # Errors
/// `Corrupt` when the length field points past the end of the key.
pub fn split_data_key(k: &[u8]) -> Result<DataKeyParts<'_>> {
    let bad = || StoreError::corrupt("malformed data key");
    let db = u16::from_be_bytes(k.get(0..2).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
    let len = u32::from_be_bytes(k.get(2..6).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
    let key_end = 6usize.checked_add(len as usize).ok_or_else(bad)?;
    let key = k.get(6..key_end).ok_or_else(bad)?;
    let ver_end = key_end.checked_add(8).ok_or_else(bad)?;
    let version = u64::from_be_bytes(
        k.get(key_end..ver_end)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?,
    );
    Ok(DataKeyParts {
        db,
        key,
        version,
        subkey: &k[ver_end..],
    })
}

/// `expiry` index key: `expire_at_ms | db | key` (sorted by time first).
#[must_use]
pub fn expiry_key(expire_at_ms: u64, db: u16, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(10 + key.len());
    k.extend_from_slice(&expire_at_ms.to_be_bytes());
    k.extend_from_slice(&db.to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// Splits an `expiry` key into `(expire_at_ms, db, key)`.
///
/// # Errors
/// `Corrupt` when shorter than 10 bytes.
pub fn split_expiry_key(k: &[u8]) -> Result<(u64, u16, &[u8])> {
    if k.len() < 10 {
        return Err(StoreError::corrupt("expiry key shorter than 10 bytes"));
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&k[..8]);
    Ok((
        u64::from_be_bytes(t),
        u16::from_be_bytes([k[8], k[9]]),
        &k[10..],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keybuf_matches_owned_keys() {
        for n in [0usize, 1, 60, 61, 66, 67, 78, 79, 200] {
            let key = vec![b'k'; n];
            assert_eq!(&*KeyBuf::meta(7, &key), meta_key(7, &key).as_slice());
            assert_eq!(KeyBuf::meta(7, &key).into_vec(), meta_key(7, &key));
            for sub in [&b""[..], b"field", &[b's'; 70]] {
                assert_eq!(
                    &*KeyBuf::data(3, &key, 42, sub),
                    data_key(3, &key, 42, sub).as_slice()
                );
            }
        }
    }

    #[test]
    fn data_key_roundtrips() {
        let k = data_key(3, b"k\x00y", 77, b"member");
        let p = split_data_key(&k).unwrap();
        assert_eq!(
            p,
            DataKeyParts {
                db: 3,
                key: b"k\x00y",
                version: 77,
                subkey: b"member"
            }
        );
        assert!(k.starts_with(&data_prefix(3, b"k\x00y", 77)));
    }

    #[test]
    fn split_data_key_on_truncated_input_is_corrupt() {
        let k = data_key(3, b"key", 77, b"");
        for n in 0..k.len() {
            assert!(split_data_key(&k[..n]).is_err(), "len {n}");
        }
        let mut huge = vec![0, 0, 0xFF, 0xFF, 0xFF, 0xFF];
        huge.extend_from_slice(b"xx");
        assert!(split_data_key(&huge).is_err());
    }

    #[test]
    fn expiry_key_sorts_by_time_first() {
        assert!(expiry_key(1, 9, b"z") < expiry_key(2, 0, b"a"));
        assert_eq!(
            split_expiry_key(&expiry_key(5, 2, b"k")).unwrap(),
            (5, 2, &b"k"[..])
        );
    }
}
