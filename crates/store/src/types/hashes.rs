//! Hash operations on a `Txn`: HSET, HSETNX, HGET, HMGET, HGETALL, HDEL,
//! HEXISTS, HLEN, HKEYS, HVALS, HINCRBY, HINCRBYFLOAT, HSTRLEN, HSCAN,
//! HRANDFIELD. A hash is a meta entry (field count in its summary, so HLEN
//! is O(1)) plus one `data` entry per field:
//!
//! ```text
//! value = insertion seq u64 BE | field value
//! ```
//!
//! The insertion sequence replays Redis 7.0's `listpack` order (insertion
//! order) while the hash is small (≤ 128 fields, every field and value
//! ≤ 64 bytes); past that it is `hashtable` for good and order is by field.

use std::ops::Bound;

use crate::error::{Result, StoreError};
use crate::meta::{KeyMeta, Kind, Summary};
use crate::sample;
use crate::txn::{Pairs, Txn};
use roaringd_compat::glob::glob_match;
use roaringd_compat::number::{incr_float_text, parse_i64, FloatIncrError};

/// `hash-max-listpack-entries` default.
pub const MAX_LISTPACK_ENTRIES: u64 = 128;
/// `hash-max-listpack-value` default.
pub const MAX_LISTPACK_VALUE: usize = 64;

fn split_value(v: &[u8]) -> Result<(u64, &[u8])> {
    if v.len() < 8 {
        return Err(StoreError::corrupt("hash field entry shorter than 8 bytes"));
    }
    let mut s = [0u8; 8];
    s.copy_from_slice(&v[..8]);
    Ok((u64::from_be_bytes(s), &v[8..]))
}

fn join_value(seq: u64, v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + v.len());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(v);
    out
}

fn len_of(m: &KeyMeta) -> (u64, u64) {
    match m.summary {
        Summary::Hash { len, next_seq } => (len, next_seq),
        _ => (0, 0),
    }
}

impl Txn {
    fn hash_meta(&mut self, db: u16, key: &[u8]) -> Result<Option<KeyMeta>> {
        self.meta_of(db, key, Kind::Hash)
    }

    fn hash_field(
        &self,
        db: u16,
        key: &[u8],
        m: &KeyMeta,
        field: &[u8],
    ) -> Result<Option<(u64, Vec<u8>)>> {
        match self.data_get(db, key, m.version, field)? {
            Some(v) => {
                let (seq, val) = split_value(&v)?;
                Ok(Some((seq, val.to_vec())))
            }
            None => Ok(None),
        }
    }

    /// HSET / HMSET: sets fields, creating the hash; returns how many
    /// fields were new. `only_new`: HSETNX semantics per field.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hset<F: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        db: u16,
        key: &[u8],
        pairs: &[(F, V)],
        only_new: bool,
    ) -> Result<u64> {
        let mut m = match self.hash_meta(db, key)? {
            Some(m) => m,
            None => self.new_key_meta(Summary::Hash {
                len: 0,
                next_seq: 0,
            })?,
        };
        let (mut len, mut next_seq) = len_of(&m);
        let mut added = 0;
        let mut changed = false;
        for (f, v) in pairs {
            let (f, v) = (f.as_ref(), v.as_ref());
            // The same value again needs no data write (the key still counts
            // as modified, through `put_meta` below).
            let mut same = false;
            let seq = match self.hash_field(db, key, &m, f)? {
                Some(_) if only_new => continue,
                Some((seq, old)) => {
                    same = old == v;
                    seq
                }
                None => {
                    len += 1;
                    added += 1;
                    next_seq += 1;
                    next_seq - 1
                }
            };
            if !same {
                self.data_put(db, key, m.version, f, join_value(seq, v));
            }
            changed = true;
            // Redis 7.0 `hashTypeSet`: a written field or value over 64
            // bytes, or more than 128 fields, converts to `hashtable`.
            if !m.big
                && (len > MAX_LISTPACK_ENTRIES
                    || f.len() > MAX_LISTPACK_VALUE
                    || v.len() > MAX_LISTPACK_VALUE)
            {
                m.big = true;
            }
        }
        if changed {
            m.summary = Summary::Hash { len, next_seq };
            self.put_meta(db, key, m)?;
        }
        Ok(added)
    }

    /// HGET.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hget(&mut self, db: u16, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>> {
        let Some(m) = self.hash_meta(db, key)? else {
            return Ok(None);
        };
        Ok(self.hash_field(db, key, &m, field)?.map(|(_, v)| v))
    }

    /// HMGET: one optional value per field.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hmget<F: AsRef<[u8]>>(
        &mut self,
        db: u16,
        key: &[u8],
        fields: &[F],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let Some(m) = self.hash_meta(db, key)? else {
            return Ok(vec![None; fields.len()]);
        };
        fields
            .iter()
            .map(|f| Ok(self.hash_field(db, key, &m, f.as_ref())?.map(|(_, v)| v)))
            .collect()
    }

    /// HGETALL: `(field, value)` pairs, in insertion order while the hash is
    /// small (listpack), else in field order.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hgetall(&mut self, db: u16, key: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let Some(m) = self.hash_meta(db, key)? else {
            return Ok(Vec::new());
        };
        self.fields_of(db, key, &m)
    }

    fn fields_of(&self, db: u16, key: &[u8], m: &KeyMeta) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut with_seq = Vec::new();
        for e in self.data_iter(db, key, m.version, None, false) {
            let (f, v) = e?;
            let (seq, val) = split_value(&v)?;
            with_seq.push((seq, f, val.to_vec()));
        }
        if !m.big {
            with_seq.sort_by_key(|(seq, _, _)| *seq);
        }
        Ok(with_seq.into_iter().map(|(_, f, v)| (f, v)).collect())
    }

    /// HDEL: removes fields; deletes the key when it empties. Returns how
    /// many were removed.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hdel<F: AsRef<[u8]>>(&mut self, db: u16, key: &[u8], fields: &[F]) -> Result<u64> {
        let Some(mut m) = self.hash_meta(db, key)? else {
            return Ok(0);
        };
        let (mut len, next_seq) = len_of(&m);
        let mut removed = 0;
        for f in fields {
            let f = f.as_ref();
            if self.data_get(db, key, m.version, f)?.is_some() {
                self.data_delete(db, key, m.version, f);
                len = len.saturating_sub(1);
                removed += 1;
            }
        }
        if removed > 0 {
            if len == 0 {
                self.delete_meta(db, key)?;
            } else {
                m.summary = Summary::Hash { len, next_seq };
                self.put_meta(db, key, m)?;
            }
        }
        Ok(removed)
    }

    /// HEXISTS.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hexists(&mut self, db: u16, key: &[u8], field: &[u8]) -> Result<bool> {
        Ok(self.hget(db, key, field)?.is_some())
    }

    /// HLEN, O(1).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hlen(&mut self, db: u16, key: &[u8]) -> Result<u64> {
        Ok(self.hash_meta(db, key)?.map_or(0, |m| len_of(&m).0))
    }

    /// HSTRLEN: length of a field's value, 0 when absent.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hstrlen(&mut self, db: u16, key: &[u8], field: &[u8]) -> Result<u64> {
        Ok(self.hget(db, key, field)?.map_or(0, |v| v.len() as u64))
    }

    /// HINCRBY: adds to an integer field (absent = 0), returns the result.
    ///
    /// # Errors
    /// `WrongType`; `HashNotInteger`; `Overflow`.
    pub fn hincrby(&mut self, db: u16, key: &[u8], field: &[u8], delta: i64) -> Result<i64> {
        let cur = match self.hget(db, key, field)? {
            Some(v) => parse_i64(&v).ok_or(StoreError::HashNotInteger)?,
            None => 0,
        };
        let new = cur.checked_add(delta).ok_or(StoreError::Overflow)?;
        self.hset(db, key, &[(field, new.to_string().as_bytes())], false)?;
        Ok(new)
    }

    /// HINCRBYFLOAT: adds the decimal text `incr` to a float field
    /// (absent = 0) in `long double` arithmetic as Redis does; stores and
    /// returns the formatted result.
    ///
    /// # Errors
    /// `WrongType`; `HashNotFloat` when the field is not a float; `NotFloat`
    /// when `incr` is not; `NanOrInfinity`.
    pub fn hincrbyfloat(
        &mut self,
        db: u16,
        key: &[u8],
        field: &[u8],
        incr: &[u8],
    ) -> Result<Vec<u8>> {
        let cur = self.hget(db, key, field)?.unwrap_or_else(|| b"0".to_vec());
        let text = incr_float_text(&cur, incr).map_err(|e| match e {
            FloatIncrError::Current => StoreError::HashNotFloat,
            FloatIncrError::Increment => StoreError::NotFloat,
            FloatIncrError::NanOrInfinity => StoreError::NanOrInfinity,
        })?;
        self.hset(db, key, &[(field, text.as_slice())], false)?;
        Ok(text)
    }

    /// HSCAN: `(next cursor, pairs)`. Listpack hashes return everything
    /// with cursor 0; others visit `count` fields per call.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hscan(
        &mut self,
        db: u16,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<(u64, Pairs)> {
        let Some(m) = self.hash_meta(db, key)? else {
            return Ok((0, Vec::new()));
        };
        let keep = |f: &[u8]| pattern.is_none_or(|p| glob_match(p, f));
        if !m.big {
            let mut all = self.fields_of(db, key, &m)?;
            all.retain(|(f, _)| keep(f));
            return Ok((0, all));
        }
        let (next, items) = self.scan_cursor(
            cursor,
            count,
            |after| self.data_iter(db, key, m.version, after, false),
            |e| &e.0,
        )?;
        let mut out = Vec::with_capacity(items.len());
        for (f, v) in items {
            if keep(&f) {
                out.push((f, split_value(&v)?.1.to_vec()));
            }
        }
        Ok((next, out))
    }

    /// HRANDFIELD: `count` `None` → at most one field; positive → that many
    /// distinct fields (at most all); negative → exactly `-count`, possibly
    /// repeated. Values come along for WITHVALUES.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn hrandfield(
        &mut self,
        db: u16,
        key: &[u8],
        count: Option<i64>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let Some(m) = self.hash_meta(db, key)? else {
            return Ok(Vec::new());
        };
        let (len, _) = len_of(&m);
        let pick = |t: &Txn, k: usize| -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
            if k == 1 {
                let bounds = || {
                    let first = t.data_first(db, key, m.version, Bound::Unbounded, false)?;
                    let last = t.data_first(db, key, m.version, Bound::Unbounded, true)?;
                    Ok(first.zip(last).map(|((f, _), (l, _))| (f, l)))
                };
                let one = t.pick_by_rank(
                    (db, key, m.version),
                    len,
                    bounds,
                    |_| Ok(1),
                    |f, v, _| Ok((f.to_vec(), split_value(v)?.1.to_vec())),
                )?;
                return Ok(one.into_iter().collect());
            }
            let mut out = Vec::with_capacity(k);
            for (f, v) in t.sample_elements(db, key, m.version, len, k)? {
                out.push((f, split_value(&v)?.1.to_vec()));
            }
            Ok(out)
        };
        Ok(match count {
            None => pick(self, 1)?,
            Some(c) if c >= 0 => {
                if c as u64 >= len {
                    self.fields_of(db, key, &m)?
                } else {
                    pick(self, c as usize)?
                }
            }
            Some(c) => {
                let n = c.unsigned_abs() as usize;
                let pool = pick(self, n.min(len as usize))?;
                sample::with_repeats(&pool, n)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_value_codec_rejects_short_entries() {
        assert!(split_value(b"1234567").is_err());
        let v = join_value(5, b"xy");
        assert_eq!(split_value(&v).unwrap(), (5, &b"xy"[..]));
    }
}
