//! Generic keyspace operations on a `Txn`: TYPE, EXISTS, DEL, EXPIRE family,
//! TTL family, PERSIST, RENAME, KEYS, SCAN, RANDOMKEY, DBSIZE, FLUSHDB /
//! FLUSHALL, OBJECT ENCODING, MEMORY USAGE, and the active-expiry step.
//! Every method takes the database explicitly; times are Unix milliseconds.

use crate::error::{Result, StoreError};
use crate::keys;
use crate::kv::{Space, WriteBatch};
use crate::meta::{Kind, Summary};
use crate::store::{counts_key, encode_counts, now_ms, DbStats};
use crate::txn::{take_chunk, Txn};
use roaringd_compat::glob::{glob_match, literal_prefix};
use roaringd_compat::number::parse_i64;
use std::ops::Bound;

/// Conditions of EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT (Redis 7); each
/// set flag must hold. A key without an expire time counts as infinite for
/// GT / LT. The command layer rejects incompatible combinations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpireCond {
    /// Only when the key has no expire time.
    pub nx: bool,
    /// Only when the key has an expire time.
    pub xx: bool,
    /// Only when the new time is later than the current one.
    pub gt: bool,
    /// Only when the new time is earlier than the current one.
    pub lt: bool,
}

/// A key name with its type (SCAN results).
pub type TypedKey = (Vec<u8>, Kind);

/// Entries written per batch while flushing a database.
const FLUSH_CHUNK: usize = 4096;

/// Bytes of entries RENAME reads from the source before writing them.
const RENAME_CHUNK_BYTES: usize = 1 << 20;

impl Txn {
    /// TYPE: the key's kind, `None` when absent.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn key_type(&mut self, db: u16, key: &[u8]) -> Result<Option<Kind>> {
        Ok(self.meta(db, key)?.map(|m| m.kind()))
    }

    /// The key's kind without counting a keyspace hit / miss (for commands
    /// that check the type before parsing further and look the key up
    /// again).
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn kind_of(&mut self, db: u16, key: &[u8]) -> Result<Option<Kind>> {
        Ok(self.live_meta(db, key)?.map(|m| m.kind()))
    }

    /// EXISTS for one key.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn exists(&mut self, db: u16, key: &[u8]) -> Result<bool> {
        Ok(self.meta(db, key)?.is_some())
    }

    /// DEL / UNLINK of one key: true when it existed. O(1) for every type
    /// (elements become stale and are collected by compaction).
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn del(&mut self, db: u16, key: &[u8]) -> Result<bool> {
        if self.meta(db, key)?.is_none() {
            return Ok(false);
        }
        self.delete_meta(db, key)?;
        Ok(true)
    }

    /// EXPIRE family with an absolute time `at_ms` (may be in the past or
    /// negative). Returns true when the time was set or the key deleted
    /// because `at_ms` is not in the future; false when the key is absent or
    /// the condition failed.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn expire_at(&mut self, db: u16, key: &[u8], at_ms: i64, cond: ExpireCond) -> Result<bool> {
        let in_place = self.dirty_expiry_in_place(db, key);
        let Some(mut m) = self.meta(db, key)? else {
            return Ok(false);
        };
        let current = if m.expire_at_ms == 0 {
            None
        } else {
            Some(m.expire_at_ms as i64)
        };
        let blocked = (cond.nx && current.is_some())
            || (cond.xx && current.is_none())
            || (cond.gt && current.is_none_or(|c| at_ms <= c))
            || (cond.lt && current.is_some_and(|c| at_ms >= c));
        let ok = !blocked;
        if !ok {
            return Ok(false);
        }
        if at_ms <= self.now_ms() as i64 {
            self.delete_meta(db, key)?;
            return Ok(true);
        }
        if let Some(stored_at) = in_place {
            self.bm_expire_dirty(db, key, (stored_at, at_ms as u64))?;
        } else {
            m.expire_at_ms = at_ms as u64;
            self.put_meta(db, key, m)?;
        }
        Ok(true)
    }

    /// The key's stored expire time when the write-back tier sets its
    /// expire time in place (`Txn::bm_expiry_in_place`). Otherwise a
    /// dirty key is absorbed first, so that the meta read next and written
    /// back is its whole state (in a `Txn` that keeps dirty keys, as
    /// EXPIRE and PERSIST run).
    fn dirty_expiry_in_place(&mut self, db: u16, key: &[u8]) -> Option<u64> {
        let in_place = self.bm_expiry_in_place(db, key);
        if in_place.is_none() {
            self.absorb_key(db, key);
        }
        in_place
    }

    /// PTTL / TTL / PEXPIRETIME / EXPIRETIME in milliseconds: -2 when the
    /// key is absent, -1 when it has no expire time, else the remaining time
    /// (`absolute = false`, at least 0) or the absolute expire time.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn ttl_ms(&mut self, db: u16, key: &[u8], absolute: bool) -> Result<i64> {
        let Some(m) = self.meta(db, key)? else {
            return Ok(-2);
        };
        if m.expire_at_ms == 0 {
            return Ok(-1);
        }
        let at = m.expire_at_ms as i64;
        Ok(if absolute {
            at
        } else {
            (at - self.now_ms() as i64).max(0)
        })
    }

    /// PERSIST: true when an expire time was removed.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn persist(&mut self, db: u16, key: &[u8]) -> Result<bool> {
        let in_place = self.dirty_expiry_in_place(db, key);
        match self.meta(db, key)? {
            Some(mut m) if m.expire_at_ms != 0 => {
                if let Some(stored_at) = in_place {
                    self.bm_expire_dirty(db, key, (stored_at, 0))?;
                } else {
                    m.expire_at_ms = 0;
                    self.put_meta(db, key, m)?;
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// RENAME (`nx = false`) / RENAMENX (`nx = true`) within `db`. The
    /// value and its expire time move to `dst`, replacing it unless `nx`.
    /// Returns false only for RENAMENX when `dst` exists (or `src == dst`).
    /// Keys with `data` entries (sets, hashes, sorted sets, bitmaps) are
    /// copied entry by entry under a new version: O(entries) time, memory
    /// bounded by chunks and [`Txn::data_put_fresh`]'s spills.
    ///
    /// # Errors
    /// `NoSuchKey` when `src` is absent.
    pub fn rename(&mut self, db: u16, src: &[u8], dst: &[u8], nx: bool) -> Result<bool> {
        let Some(m) = self.meta(db, src)? else {
            return Err(StoreError::NoSuchKey);
        };
        if src == dst {
            return Ok(!nx);
        }
        if self.meta(db, dst)?.is_some() {
            if nx {
                return Ok(false);
            }
            self.delete_meta(db, dst)?;
        }
        let mut moved = m.clone();
        if m.has_data() {
            // Copied in chunks under a fresh version, which spills to the
            // `Kv` as it grows: memory stays bounded for any key size.
            let version = self.new_data_version()?;
            let mut after: Option<Vec<u8>> = None;
            loop {
                let chunk = take_chunk(
                    self.data_iter(db, src, m.version, after.as_deref(), false),
                    RENAME_CHUNK_BYTES,
                    |(sub, v)| sub.len() + v.len(),
                )?;
                let Some((last, _)) = chunk.last() else {
                    break;
                };
                after = Some(last.clone());
                for (sub, v) in chunk {
                    self.data_put_fresh(db, dst, version, &sub, v)?;
                }
            }
            moved.version = version;
        }
        self.delete_meta(db, src)?;
        self.put_meta(db, dst, moved)?;
        Ok(true)
    }

    /// KEYS: every live key of `db` matching the glob `pattern`, in key
    /// order. Scans only the pattern's literal prefix.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn keys(&self, db: u16, pattern: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.check_db(db)?;
        let prefix = literal_prefix(pattern);
        let all = pattern == b"*";
        let mut out = Vec::new();
        for entry in self.meta_iter(db, Bound::Included(prefix)) {
            let (key, _) = entry?;
            if !key.starts_with(prefix) {
                break;
            }
            if all || glob_match(pattern, &key) {
                out.push(key);
            }
        }
        Ok(out)
    }

    /// SCAN: visits up to `count` keys of `db` after `cursor` (0 = start)
    /// and returns `(next cursor, matching keys with their types)`; next
    /// cursor 0 = done. The caller filters by type (SCAN TYPE).
    /// Cursors are ids of positions the store remembers (bounded table); an
    /// unknown cursor ends the iteration (`(0, [])`).
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn scan(
        &self,
        db: u16,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<(u64, Vec<TypedKey>)> {
        self.check_db(db)?;
        let after = if cursor == 0 {
            None
        } else {
            match self.inner.cursors.lock().get(cursor) {
                Some(pos) => Some(pos),
                None => return Ok((0, Vec::new())),
            }
        };
        let mut out = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        let mut more = false;
        let start = match &after {
            Some(a) => Bound::Excluded(a.as_slice()),
            None => Bound::Unbounded,
        };
        for (visited, entry) in self.meta_iter(db, start).enumerate() {
            let (key, m) = entry?;
            if visited >= count.max(1) {
                more = true;
                break;
            }
            if pattern.is_none_or(|p| glob_match(p, &key)) {
                out.push((key.clone(), m.kind));
            }
            last = Some(key);
        }
        let next = match (more, last) {
            (true, Some(pos)) => self.inner.cursors.lock().insert(pos),
            _ => 0,
        };
        Ok((next, out))
    }

    /// RANDOMKEY: a random live key of `db`, `None` when empty: a pick by
    /// rank, exactly uniform over the live keys (expired ones skipped) for
    /// databases up to `random-pick-limit` keys, see
    /// [`crate::sample::pick_one`] for the work and the bias above it.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn random_key(&mut self, db: u16) -> Result<Option<Vec<u8>>> {
        let n = self.dbsize(db)?;
        if n == 0 {
            return Ok(None);
        }
        let this = &*self;
        let scan = |from: Option<&[u8]>| {
            let start = from.map_or(Bound::Unbounded, Bound::Included);
            this.meta_iter(db, start).map(|e| e.map(|(k, _)| k))
        };
        let bounds = || {
            let Some((first, _)) = this.meta_iter(db, Bound::Unbounded).next().transpose()? else {
                return Ok(None);
            };
            let last = this.last_key(db)?.unwrap_or_else(|| first.clone());
            Ok(Some((first, last)))
        };
        crate::sample::pick_one(n, scan, None, bounds)
    }

    /// DBSIZE: number of keys in `db` (including expired keys not yet
    /// removed, as Redis), counting this `Txn`'s own creations and deletes.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn dbsize(&self, db: u16) -> Result<u64> {
        self.check_db(db)?;
        let base = self
            .inner
            .counts
            .lock()
            .get(db as usize)
            .map_or(0, |c| c.keys);
        Ok(base.saturating_add_signed(self.pending_key_delta(db)))
    }

    /// FLUSHDB: removes every key of `db`. Requires a Txn from
    /// [`crate::Store::begin_exclusive`]. Unlike other writes it is applied
    /// at once, in chunks, not at commit; this `Txn`'s pending writes to `db`
    /// are discarded. Elements are collected later by compaction.
    ///
    /// # Errors
    /// `Io`; `Corrupt` on a malformed expiry entry.
    pub fn flush_db(&mut self, db: u16) -> Result<()> {
        self.check_db(db)?;
        self.discard_db(Some(db));
        let kv = &*self.inner.kv;
        let prefix = keys::meta_db_prefix(db);
        delete_matching(kv, Space::Meta, Some(&prefix), |_| Ok(true))?;
        delete_matching(kv, Space::Expiry, None, |k| {
            Ok(keys::split_expiry_key(k)?.1 == db)
        })?;
        let mut counts = self.inner.counts.lock();
        let mut batch = WriteBatch::new();
        batch.put(
            Space::Meta,
            counts_key(db),
            encode_counts(DbStats::default()),
        );
        kv.write(batch, crate::store::Store::durability(&self.inner))?;
        if let Some(c) = counts.get_mut(db as usize) {
            *c = DbStats::default();
        }
        Ok(())
    }

    /// FLUSHALL: [`Txn::flush_db`] for every database.
    ///
    /// # Errors
    /// As `flush_db`.
    pub fn flush_all(&mut self) -> Result<()> {
        for db in 0..self.databases() {
            self.flush_db(db)?;
        }
        Ok(())
    }

    /// OBJECT ENCODING, as Redis 7.0 would name it: strings `int` /
    /// `embstr` / `raw`; sets `intset` / `hashtable`; hashes `listpack` /
    /// `hashtable`; bitmaps `roaring` (our own name: the type is not Redis's). `None` when the key is absent.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn object_encoding(&mut self, db: u16, key: &[u8]) -> Result<Option<&'static str>> {
        let Some(m) = self.meta(db, key)? else {
            return Ok(None);
        };
        Ok(Some(match &m.summary {
            Summary::String(v) => {
                if !m.big && !m.noint && v.len() <= 20 && parse_i64(v).is_some() {
                    "int"
                } else if !m.big && v.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                }
            }
            Summary::Set { .. } => {
                if m.big {
                    "hashtable"
                } else {
                    "intset"
                }
            }
            Summary::Hash { .. } => {
                if m.big {
                    "hashtable"
                } else {
                    "listpack"
                }
            }
            // Containers in the engine's serialized Roaring form.
            Summary::Bitmap(_) => "roaring",
        }))
    }

    /// MEMORY USAGE: bytes the key occupies in the store (its meta entry and
    /// its element entries, keys and values, before compression). With
    /// `samples > 0` and more elements than that, the element bytes are
    /// estimated from the first `samples` elements times the cardinality
    /// (Redis samples 5 by default; 0 = all); bitmaps are estimated from
    /// their summary without a scan. `None` when absent. Not
    /// counted as a keyspace hit / miss (as in Redis).
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn memory_usage(&mut self, db: u16, key: &[u8], samples: usize) -> Result<Option<u64>> {
        let Some(m) = self.live_meta(db, key)? else {
            return Ok(None);
        };
        let mut total = (2 + key.len() + m.encode().len()) as u64;
        let card = match m.summary {
            Summary::String(_) => return Ok(Some(total)),
            Summary::Set { card } => card,
            Summary::Hash { len, .. } => len,
            // From the summary's census, by kind: containers of
            // `STANDALONE_BYTES` or more (on average) are singles, each
            // its key (prefix + 2-byte block) and its bytes (4-byte header
            // + payload); smaller ones share pages, 2 bytes of block list
            // each beside their bytes, one key and 4-byte header per
            // `PAGE_BYTES` of them (a key of one container has it as a
            // single). An estimate: the census does not say how the
            // containers of one kind differ in size.
            Summary::Bitmap(b) => {
                use crate::types::bitmap::page;
                let plen = keys::data_prefix(db, key, m.version).len() as u64;
                let (mut bytes, mut paged) = (0u64, 0u64);
                for k in b.kinds.iter().filter(|k| k.containers > 0) {
                    let stored = k.bytes + 4 * k.containers;
                    if stored / k.containers >= page::STANDALONE_BYTES as u64 {
                        bytes += stored + k.containers * (plen + 2);
                    } else {
                        paged += stored + 2 * k.containers;
                    }
                }
                bytes += match b.containers {
                    // One container is a single, whatever its size.
                    1 => paged.saturating_sub(2) + (plen + 2) * u64::from(paged > 0),
                    _ => paged + paged.div_ceil(page::PAGE_BYTES as u64) * (plen + 2 + 4),
                };
                return Ok(Some(total + bytes));
            }
        };
        let plen = keys::data_prefix(db, key, m.version).len() as u64;
        let mut seen = 0u64;
        let mut bytes = 0u64;
        for e in self.data_iter(db, key, m.version, None, false) {
            if samples > 0 && seen >= samples as u64 {
                break;
            }
            let (sub, v) = e?;
            bytes += plen + sub.len() as u64 + v.len() as u64;
            seen += 1;
        }
        if seen > 0 && seen < card {
            bytes = bytes / seen * card;
        }
        total += bytes;
        Ok(Some(total))
    }

    /// True when the key has a meta entry whose expire time has passed at
    /// this `Txn`'s clock (logically gone, not yet removed). Does not
    /// delete it. For WATCH: Redis 7 aborts EXEC when a watched key expired.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn is_expired(&mut self, db: u16, key: &[u8]) -> Result<bool> {
        Ok(self
            .raw_meta(db, key)?
            .is_some_and(|m| m.is_expired(self.now_ms())))
    }

    /// Active-expiry step for the index entry `(at_ms, db, key)`: deletes
    /// the key when its expire time has passed by the wall clock and returns
    /// true. An index entry that no longer matches the key's meta (it
    /// cannot happen with atomic commits, but must never wedge the cycle)
    /// is dropped.
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn expire_if_due(&mut self, at_ms: u64, db: u16, key: &[u8]) -> Result<bool> {
        let now = now_ms();
        if now > self.now_ms() {
            self.set_now_ms(now);
        }
        let backed = db < self.databases()
            && self
                .raw_meta(db, key)?
                .is_some_and(|m| m.expire_at_ms == at_ms);
        if !backed {
            self.drop_expiry_entry(keys::expiry_key(at_ms, db, key));
            return Ok(false);
        }
        // `meta` performs the lazy delete (the key is expired and locked).
        Ok(self.meta(db, key)?.is_none())
    }
}

/// Deletes every entry of `space` (optionally under `prefix`) for which
/// `pred` holds, in chunks, each chunk one batch.
fn delete_matching(
    kv: &dyn crate::kv::Kv,
    space: Space,
    prefix: Option<&[u8]>,
    pred: impl Fn(&[u8]) -> Result<bool>,
) -> Result<()> {
    loop {
        let mut batch = WriteBatch::new();
        {
            let iter = match prefix {
                Some(p) => kv.prefix(space, p, false),
                None => kv.range(
                    space,
                    std::ops::Bound::Unbounded,
                    std::ops::Bound::Unbounded,
                    false,
                ),
            };
            for e in iter {
                let (k, _) = e?;
                if pred(&k)? {
                    batch.delete(space, k);
                    if batch.len() >= FLUSH_CHUNK {
                        break;
                    }
                }
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        let full = batch.len() >= FLUSH_CHUNK;
        kv.write(batch, crate::kv::Durability::Buffer)?;
        if !full {
            return Ok(());
        }
    }
}
