//! `Txn`: one command's (or one EXEC's) view of the store. Holds its locks,
//! an overlay of its own writes (every read sees them), the original state
//! of each key it touched (for the per-database counters and the expiry
//! index, both derived at commit), and its in-flight versions. `commit`
//! writes one atomic batch; dropping without commit discards everything.

use crate::error::{Result, StoreError};
use crate::keys;
use crate::kv::{KvIter, Space, WriteBatch};
use crate::locks::{stripe_of, Held, Slot};
use crate::meta::{KeyMeta, Kind, MetaBrief, Summary};
use crate::store::{counts_key, encode_counts, now_ms, Inner, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::iter::Peekable;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A transaction over the store. See the module docs.
///
/// Writes to a key whose stripe the `Txn` does not hold take that stripe
/// lock on demand; that is deadlock-free only if callers name every key they
/// write in [`Store::begin`], which the server's key specs guarantee.
pub struct Txn {
    pub(crate) inner: Arc<Inner>,
    now: u64,
    /// Meta overlay by meta key: `None` = deleted in this txn.
    meta: BTreeMap<Vec<u8>, Option<KeyMeta>>,
    /// Expire time before this txn (`None` = absent) of each key in the
    /// meta overlay, recorded when the key first enters it.
    orig: BTreeMap<Vec<u8>, Option<u64>>,
    /// Data overlay by data key: `None` = deleted in this txn.
    data: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    touched: BTreeSet<(u16, Vec<u8>)>,
    versions: Vec<u64>,
    expired: u64,
    /// Count key lookups as keyspace hits / misses (read commands).
    count_lookups: bool,
    /// Expiry index entries to drop that no meta entry backs.
    stale_expiry: Vec<Vec<u8>>,
    extra_locks: Vec<Held>,
    held: Held,
    /// tr-cache hook: container writes under live versions, for the
    /// container cache at commit (recorded by `bitmaps.rs`).
    pub(crate) cc_pending: crate::container_cache::Pending,
}

impl Drop for Txn {
    fn drop(&mut self) {
        Store::release_versions(&self.inner, &self.versions);
    }
}

impl Txn {
    pub(crate) fn new(inner: Arc<Inner>, held: Held) -> Txn {
        Txn {
            inner,
            now: now_ms(),
            meta: BTreeMap::new(),
            orig: BTreeMap::new(),
            data: BTreeMap::new(),
            touched: BTreeSet::new(),
            versions: Vec::new(),
            expired: 0,
            count_lookups: false,
            stale_expiry: Vec::new(),
            extra_locks: Vec::new(),
            held,
            cc_pending: crate::container_cache::Pending::default(),
        }
    }

    /// The time this transaction runs at (Unix ms, fixed at begin, as Redis
    /// freezes the clock for one command).
    #[must_use]
    pub fn now_ms(&self) -> u64 {
        self.now
    }

    /// Overrides the transaction clock (tests of expiry).
    pub fn set_now_ms(&mut self, now: u64) {
        self.now = now;
    }

    /// Number of databases of the store.
    #[must_use]
    pub fn databases(&self) -> u16 {
        self.inner.databases
    }

    /// True when the `Txn` holds the global lock exclusively.
    #[must_use]
    pub fn is_exclusive(&self) -> bool {
        self.held.is_exclusive()
    }

    pub(crate) fn check_db(&self, db: u16) -> Result<()> {
        if db < self.inner.databases {
            Ok(())
        } else {
            Err(StoreError::DbIndexOutOfRange)
        }
    }

    /// Makes the following key lookups count as keyspace hits / misses
    /// (INFO stats), as Redis's `lookupKeyRead` does. The server turns it on
    /// for each read-only command and off for writes (in EXEC, per queued
    /// command). Off by default.
    pub fn set_count_lookups(&mut self, on: bool) {
        self.count_lookups = on;
    }

    /// The keys modified so far, sorted, each once: what `commit` would
    /// return (lazily expired keys included).
    #[must_use]
    pub fn modified_keys(&self) -> Vec<(u16, Vec<u8>)> {
        self.touched.iter().cloned().collect()
    }

    /// Writes the overlay as one atomic batch (synced per the sync mode)
    /// and returns the keys it modified, each once, sorted. Keys removed by
    /// lazy expiry are included.
    ///
    /// # Errors
    /// `Io` when the write fails; nothing is applied then.
    pub fn commit(mut self) -> Result<Vec<(u16, Vec<u8>)>> {
        let mut batch = WriteBatch::new();
        let mut deltas: BTreeMap<u16, (i64, i64)> = BTreeMap::new();
        let mut min_added_expiry = u64::MAX;
        let meta = std::mem::take(&mut self.meta);
        let exclusive = self.held.is_exclusive();
        for (mk, new) in meta {
            let (db, key) = keys::split_meta_key(&mk)?;
            // The meta cache takes the new state now; the stripe stays held
            // until after the write, and a failed write clears it below.
            let stripe = stripe_of(db, key);
            match slot_of(&mut self.held, &mut self.extra_locks, stripe) {
                Some(slot) if cacheable(&new) => slot.set(&mk, new.clone()),
                Some(slot) => slot.clear(),
                None if exclusive => self.inner.locks.with_slot(stripe, Slot::clear),
                // Unreachable: a non-exclusive Txn writes only keys whose
                // stripe it holds (`ensure_locked`, `live_meta`).
                None => {}
            }
            let old_exp = self.orig.get(&mk).copied().flatten();
            let old_exists = self.orig.get(&mk).is_some_and(Option::is_some);
            let new_exp = new.as_ref().map(|m| m.expire_at_ms);
            let d = deltas.entry(db).or_default();
            d.0 += i64::from(new.is_some()) - i64::from(old_exists);
            d.1 += i64::from(new_exp.is_some_and(|e| e != 0))
                - i64::from(old_exp.is_some_and(|e| e != 0));
            let old_e = old_exp.unwrap_or(0);
            let new_e = new_exp.unwrap_or(0);
            if old_e != new_e {
                if old_e != 0 {
                    batch.delete(Space::Expiry, keys::expiry_key(old_e, db, key));
                }
                if new_e != 0 {
                    batch.put(Space::Expiry, keys::expiry_key(new_e, db, key), Vec::new());
                    min_added_expiry = min_added_expiry.min(new_e);
                }
            }
            match new {
                Some(m) => batch.put(Space::Meta, mk, m.encode()),
                None => batch.delete(Space::Meta, mk),
            }
        }
        for k in std::mem::take(&mut self.stale_expiry) {
            batch.delete(Space::Expiry, k);
        }
        // tr-cache hook: new bytes for cached containers, applied after the write.
        let cc = self
            .inner
            .ccache
            .prepare(std::mem::take(&mut self.cc_pending), |dk| {
                self.data.get(dk).cloned()
            });
        for (dk, v) in std::mem::take(&mut self.data) {
            match v {
                Some(v) => batch.put(Space::Data, dk, v),
                None => batch.delete(Space::Data, dk),
            }
        }
        let durability = Store::durability(&self.inner);
        deltas.retain(|_, d| *d != (0, 0));
        if batch.is_empty() && deltas.is_empty() {
            // A write that changed nothing (SET of the same value, SADD of
            // a member present, ...) acknowledges state that an earlier
            // commit wrote; under `always` make sure that one is synced too
            // (it may date from before a switch to `always`).
            if durability == crate::kv::Durability::Sync && !self.touched.is_empty() {
                self.inner.kv.persist()?;
            }
        } else if deltas.is_empty() {
            self.write_or_forget(batch, durability)?;
        } else {
            let inner = Arc::clone(&self.inner);
            let mut counts = inner.counts.lock();
            let mut next = counts.clone();
            for (db, (dk, de)) in &deltas {
                if let Some(c) = next.get_mut(*db as usize) {
                    c.keys = c.keys.saturating_add_signed(*dk);
                    c.expires = c.expires.saturating_add_signed(*de);
                    batch.put(Space::Meta, counts_key(*db), encode_counts(*c));
                }
            }
            self.write_or_forget(batch, durability)?;
            *counts = next;
        }
        cc.apply(&self.inner.ccache); // tr-cache hook
        if min_added_expiry != u64::MAX {
            self.inner.note_expiry_added(min_added_expiry);
        }
        self.inner
            .expired
            .fetch_add(self.expired, Ordering::Relaxed);
        Ok(std::mem::take(&mut self.touched).into_iter().collect())
    }

    /// Writes the commit batch; on failure clears the meta cache slots
    /// this `Txn` updated (every slot it holds, or all when exclusive).
    fn write_or_forget(
        &mut self,
        batch: WriteBatch,
        durability: crate::kv::Durability,
    ) -> Result<()> {
        let r = self.inner.kv.write(batch, durability);
        if r.is_err() {
            self.held.clear_slots();
            for h in &mut self.extra_locks {
                h.clear_slots();
            }
            if self.held.is_exclusive() {
                self.inner.locks.clear_all_slots();
            }
        }
        r
    }

    // ----- meta ---------------------------------------------------------

    /// Reads meta as stored (expired or not), or as this `Txn` left it.
    /// The stored state comes from the stripe's meta cache when this `Txn`
    /// holds the stripe and the slot has the key, else from the `Kv` (and
    /// then fills the slot).
    fn load_meta(&mut self, mk: &[u8]) -> Result<Option<KeyMeta>> {
        if let Some(m) = self.meta.get(mk) {
            return Ok(m.clone());
        }
        let stripe = keys::split_meta_key(mk)
            .ok()
            .map(|(db, key)| stripe_of(db, key));
        let cached = stripe
            .and_then(|s| slot_of(&mut self.held, &mut self.extra_locks, s))
            .and_then(|slot| (slot.key == mk).then(|| slot.meta.clone()));
        let m = match cached {
            Some(m) => m,
            None => {
                let m = match self.inner.kv.get(Space::Meta, mk)? {
                    Some(b) => Some(KeyMeta::decode(&b)?),
                    None => None,
                };
                if let Some(slot) =
                    stripe.and_then(|s| slot_of(&mut self.held, &mut self.extra_locks, s))
                {
                    if cacheable(&m) {
                        slot.set(mk, m.clone());
                    }
                }
                m
            }
        };
        Ok(m)
    }

    /// Records the stored expire time of `mk` before its first write in
    /// this `Txn` (`stored`: what `load_meta` gave with no overlay entry).
    fn record_orig(&mut self, mk: &[u8], stored: Option<&KeyMeta>) {
        self.orig
            .entry(mk.to_vec())
            .or_insert(stored.map(|m| m.expire_at_ms));
    }

    /// The live meta of `(db, key)`: `None` when absent or expired. An
    /// expired key this `Txn` holds the lock of is deleted (at commit).
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn meta(&mut self, db: u16, key: &[u8]) -> Result<Option<KeyMeta>> {
        let m = self.live_meta(db, key)?;
        if self.count_lookups {
            let counter = if m.is_some() {
                &self.inner.keyspace_hits
            } else {
                &self.inner.keyspace_misses
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        Ok(m)
    }

    pub(crate) fn live_meta(&mut self, db: u16, key: &[u8]) -> Result<Option<KeyMeta>> {
        let mk = keys::meta_key(db, key);
        let Some(m) = self.load_meta(&mk)? else {
            return Ok(None);
        };
        if m.is_expired(self.now) {
            if self.held.covers(db, key) {
                if !self.meta.contains_key(&mk) {
                    self.record_orig(&mk, Some(&m));
                }
                self.meta.insert(mk, None);
                self.touched.insert((db, key.to_vec()));
                self.expired += 1;
            }
            return Ok(None);
        }
        Ok(Some(m))
    }

    /// Live meta that must be of `kind`.
    ///
    /// # Errors
    /// `WrongType` when the key holds another type.
    pub fn meta_of(&mut self, db: u16, key: &[u8], kind: Kind) -> Result<Option<KeyMeta>> {
        match self.meta(db, key)? {
            Some(m) if m.kind() != kind => Err(StoreError::WrongType),
            m => Ok(m),
        }
    }

    fn ensure_locked(&mut self, db: u16, key: &[u8]) {
        if !self.held.covers(db, key) && !self.extra_locks.iter().any(|h| h.covers(db, key)) {
            self.extra_locks
                .push(self.inner.locks.lock_stripes_only(&[(db, key)]));
        }
    }

    /// Writes the meta of `(db, key)` (created or replaced).
    ///
    /// # Errors
    /// `Io` / `Corrupt` while reading the original state.
    pub fn put_meta(&mut self, db: u16, key: &[u8], m: KeyMeta) -> Result<()> {
        self.check_db(db)?;
        self.ensure_locked(db, key);
        let mk = keys::meta_key(db, key);
        // A meta equal to the current one (HSET of an existing field, ...)
        // needs no write: the overlay or the store already holds it.
        let unchanged = match self.meta.get(&mk) {
            Some(cur) => cur.as_ref() == Some(&m),
            None => {
                let stored = self.load_meta(&mk)?;
                let same = stored.as_ref() == Some(&m);
                if !same {
                    self.record_orig(&mk, stored.as_ref());
                }
                same
            }
        };
        if !unchanged {
            self.meta.insert(mk, Some(m));
        }
        self.touched.insert((db, key.to_vec()));
        Ok(())
    }

    /// Deletes `(db, key)`: its meta goes, its elements become stale.
    ///
    /// # Errors
    /// `Io` / `Corrupt` while reading the original state.
    pub fn delete_meta(&mut self, db: u16, key: &[u8]) -> Result<()> {
        self.check_db(db)?;
        self.ensure_locked(db, key);
        let mk = keys::meta_key(db, key);
        if !self.meta.contains_key(&mk) {
            let stored = self.load_meta(&mk)?;
            self.record_orig(&mk, stored.as_ref());
        }
        self.meta.insert(mk, None);
        self.touched.insert((db, key.to_vec()));
        Ok(())
    }

    /// A fresh version for a key that will get `data` entries.
    ///
    /// # Errors
    /// `Io` when a new epoch must be persisted and that fails.
    pub fn new_data_version(&mut self) -> Result<u64> {
        let v = Store::alloc_version(&self.inner, true)?;
        self.versions.push(v);
        Ok(v)
    }

    /// A fresh version for a key without `data` entries (a string).
    ///
    /// # Errors
    /// As [`Txn::new_data_version`].
    pub fn new_plain_version(&mut self) -> Result<u64> {
        Store::alloc_version(&self.inner, false)
    }

    /// Live keys `(user key, type and expire time)` of database `db` from
    /// `start` (a bound on the user key), ascending, overlay applied,
    /// expired keys skipped.
    pub(crate) fn meta_iter(
        &self,
        db: u16,
        start: Bound<&[u8]>,
    ) -> impl Iterator<Item = Result<(Vec<u8>, MetaBrief)>> + '_ {
        let prefix = keys::meta_db_prefix(db);
        let end = crate::kv::prefix_end(&prefix);
        let start_key: Bound<Vec<u8>> = match start {
            Bound::Included(k) => Bound::Included(keys::meta_key(db, k)),
            Bound::Excluded(k) => Bound::Excluded(keys::meta_key(db, k)),
            Bound::Unbounded => Bound::Included(prefix.to_vec()),
        };
        let start = as_ref_bound(&start_key);
        let end_b: Bound<&[u8]> = match &end {
            Some(e) => Bound::Excluded(e.as_slice()),
            None => Bound::Unbounded,
        };
        let kv: KvIter<'_> = self.inner.kv.range(Space::Meta, start, end_b, false);
        let kv = kv.map(|r| r.and_then(|(k, v)| Ok((k, KeyMeta::decode_brief(&v)?))));
        let ov: Box<dyn Iterator<Item = (Vec<u8>, Option<MetaBrief>)> + Send + '_> =
            if crate::kv::range_is_empty(start, end_b) {
                Box::new(std::iter::empty())
            } else {
                Box::new(
                    self.meta
                        .range::<[u8], _>((start, end_b))
                        .map(|(k, v)| (k.clone(), v.as_ref().map(KeyMeta::brief))),
                )
            };
        let now = self.now;
        Merge::new(kv, ov, false).filter_map(move |r| match r {
            Ok((_, m)) if m.is_expired(now) => None,
            Ok((mk, m)) => Some(Ok((mk[2..].to_vec(), m))),
            Err(e) => Some(Err(e)),
        })
    }

    /// The stored meta of the key, expired or not (no lazy delete).
    pub(crate) fn raw_meta(&mut self, db: u16, key: &[u8]) -> Result<Option<KeyMeta>> {
        self.load_meta(&keys::meta_key(db, key))
    }

    /// The greatest stored key of `db` (ignoring this Txn's overlay and
    /// expiry): an upper bound for random sampling.
    pub(crate) fn last_key(&self, db: u16) -> Result<Option<Vec<u8>>> {
        let prefix = keys::meta_db_prefix(db);
        match self.inner.kv.prefix(Space::Meta, &prefix, true).next() {
            Some(e) => Ok(Some(e?.0[2..].to_vec())),
            None => Ok(None),
        }
    }

    /// Queues the removal of an expiry index entry no meta entry backs.
    pub(crate) fn drop_expiry_entry(&mut self, index_key: Vec<u8>) {
        self.stale_expiry.push(index_key);
    }

    /// Keys created minus keys deleted in `db` by this `Txn` so far.
    pub(crate) fn pending_key_delta(&self, db: u16) -> i64 {
        let prefix = keys::meta_db_prefix(db);
        self.meta
            .iter()
            .filter(|(mk, _)| mk.starts_with(&prefix))
            .map(|(mk, new)| {
                let old = self.orig.get(mk).is_some_and(Option::is_some);
                i64::from(new.is_some()) - i64::from(old)
            })
            .sum()
    }

    /// Drops this `Txn`'s pending writes and recorded originals for `db`
    /// (every database when `None`); used by flushes.
    pub(crate) fn discard_db(&mut self, db: Option<u16>) {
        // Flushes delete meta entries behind the meta cache: forget it all.
        // (Flushes run exclusive, so every stripe is free to take.)
        if self.held.is_exclusive() {
            self.inner.locks.clear_all_slots();
        } else {
            self.held.clear_slots();
        }
        let keep = |k: &[u8]| match db {
            Some(d) => !k.starts_with(&d.to_be_bytes()),
            None => false,
        };
        self.meta.retain(|k, _| keep(k));
        self.orig.retain(|k, _| keep(k));
        self.data.retain(|k, _| keep(k));
    }

    // ----- data ---------------------------------------------------------

    /// One element of a key version.
    ///
    /// # Errors
    /// `Io`.
    pub fn data_get(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        sub: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let dk = keys::data_key(db, key, version, sub);
        if let Some(v) = self.data.get(&dk) {
            return Ok(v.clone());
        }
        self.inner.kv.get(Space::Data, &dk)
    }

    /// tr-cache hook: this `Txn`'s own pending write of data key `dk`
    /// (`Some(None)` = deleted), if any.
    pub(crate) fn data_overlay(&self, dk: &[u8]) -> Option<Option<&[u8]>> {
        self.data.get(dk).map(Option::as_deref)
    }

    /// tr-cache hook: true when this `Txn` has no pending data writes.
    pub(crate) fn data_overlay_is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// tr-cache hook: true when this `Txn` has pending writes to data keys
    /// starting with `prefix`.
    pub(crate) fn data_overlay_has_prefix(&self, prefix: &[u8]) -> bool {
        self.data
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .next()
            .is_some_and(|(k, _)| k.starts_with(prefix))
    }

    /// Writes one element.
    pub fn data_put(&mut self, db: u16, key: &[u8], version: u64, sub: &[u8], value: Vec<u8>) {
        self.ensure_locked(db, key);
        self.data
            .insert(keys::data_key(db, key, version, sub), Some(value));
        self.touched.insert((db, key.to_vec()));
    }

    /// Deletes one element.
    pub fn data_delete(&mut self, db: u16, key: &[u8], version: u64, sub: &[u8]) {
        self.ensure_locked(db, key);
        self.data
            .insert(keys::data_key(db, key, version, sub), None);
        self.touched.insert((db, key.to_vec()));
    }

    /// Up to `k` distinct random elements `(subkey, value)` of a key
    /// version holding `card` elements. Up to 1,024 elements (or when `k`
    /// is over a quarter of them) the sample is uniform over a full scan;
    /// bigger collections sample a window of about `2k` elements after a
    /// random pivot between the first and last subkey (cheap, not exactly
    /// uniform).
    ///
    /// # Errors
    /// `Io`.
    pub fn sample_elements(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        card: u64,
        k: usize,
    ) -> Result<Pairs> {
        if card <= 1024 || (k as u64).saturating_mul(4) > card {
            let all = self
                .data_iter(db, key, version, None, false)
                .collect::<Result<Vec<_>>>()?;
            return Ok(crate::sample::reservoir(all.into_iter(), k));
        }
        let first = self
            .data_iter(db, key, version, None, false)
            .next()
            .transpose()?;
        let last = self
            .data_iter(db, key, version, None, true)
            .next()
            .transpose()?;
        let (Some((first, _)), Some((last, _))) = (first, last) else {
            return Ok(Vec::new());
        };
        let pivot = crate::sample::pivot_between(&first, &last);
        let want = k.saturating_mul(2).max(16);
        let mut window = Vec::with_capacity(want);
        for e in self.data_iter(db, key, version, Some(&pivot), false) {
            if window.len() >= want {
                break;
            }
            window.push(e?);
        }
        if window.len() < want {
            for e in self.data_iter(db, key, version, None, false) {
                let e = e?;
                if window.len() >= want || e.0 > pivot {
                    break;
                }
                window.push(e);
            }
        }
        Ok(crate::sample::reservoir(window.into_iter(), k))
    }

    /// Elements `(subkey, value)` of a key version with subkey after `after`
    /// (exclusive; `None` = from the first), ascending or descending
    /// (descending: subkeys before `after`), overlay applied.
    pub fn data_iter(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        after: Option<&[u8]>,
        reverse: bool,
    ) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + '_ {
        let prefix = keys::data_prefix(db, key, version);
        let plen = prefix.len();
        let pend = crate::kv::prefix_end(&prefix);
        let cursor = after.map(|a| keys::data_key(db, key, version, a));
        let (start, end): (Bound<Vec<u8>>, Bound<Vec<u8>>) = match (&cursor, reverse) {
            (Some(c), false) => (Bound::Excluded(c.clone()), owned_end(&pend)),
            (Some(c), true) => (Bound::Included(prefix.clone()), Bound::Excluded(c.clone())),
            (None, _) => (Bound::Included(prefix.clone()), owned_end(&pend)),
        };
        let sb = as_ref_bound(&start);
        let eb = as_ref_bound(&end);
        let kv = self.inner.kv.range(Space::Data, sb, eb, reverse);
        let ov: Box<dyn Iterator<Item = OverlayEntry> + Send + '_> =
            if crate::kv::range_is_empty(sb, eb) {
                Box::new(std::iter::empty())
            } else if reverse {
                Box::new(
                    self.data
                        .range::<[u8], _>((sb, eb))
                        .rev()
                        .map(|(k, v)| (k.clone(), v.clone())),
                )
            } else {
                Box::new(
                    self.data
                        .range::<[u8], _>((sb, eb))
                        .map(|(k, v)| (k.clone(), v.clone())),
                )
            };
        Merge::new(kv, ov, reverse).map(move |r| r.map(|(k, v)| (k[plen..].to_vec(), v)))
    }
}

/// Longest string value the meta cache keeps (longer ones are read from
/// the `Kv` each time rather than copied on every commit).
const CACHE_MAX_STRING: usize = 512;

fn cacheable(m: &Option<KeyMeta>) -> bool {
    match m {
        Some(m) => match &m.summary {
            Summary::String(v) => v.len() <= CACHE_MAX_STRING,
            _ => true,
        },
        None => true,
    }
}

/// The meta cache slot of `stripe` if `held` or one of `extra` holds it.
fn slot_of<'a>(held: &'a mut Held, extra: &'a mut [Held], stripe: usize) -> Option<&'a mut Slot> {
    if let Some(s) = held.slot_mut(stripe) {
        return Some(s);
    }
    extra.iter_mut().find_map(|h| h.slot_mut(stripe))
}

/// An overlay entry of the data space: key and new value (`None` = deleted).
type OverlayEntry = (Vec<u8>, Option<Vec<u8>>);

/// Element pairs `(subkey or field, value)`.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn owned_end(pend: &Option<Vec<u8>>) -> Bound<Vec<u8>> {
    match pend {
        Some(e) => Bound::Excluded(e.clone()),
        None => Bound::Unbounded,
    }
}

fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Merges an ordered store iterator with an ordered overlay iterator over
/// the same range; the overlay wins on equal keys and `None` hides a key.
struct Merge<K, O, T>
where
    K: Iterator<Item = Result<(Vec<u8>, T)>>,
    O: Iterator<Item = (Vec<u8>, Option<T>)>,
{
    kv: Peekable<K>,
    ov: Peekable<O>,
    reverse: bool,
}

impl<K, O, T> Merge<K, O, T>
where
    K: Iterator<Item = Result<(Vec<u8>, T)>>,
    O: Iterator<Item = (Vec<u8>, Option<T>)>,
{
    fn new(kv: K, ov: O, reverse: bool) -> Self {
        Merge {
            kv: kv.peekable(),
            ov: ov.peekable(),
            reverse,
        }
    }
}

impl<K, O, T> Iterator for Merge<K, O, T>
where
    K: Iterator<Item = Result<(Vec<u8>, T)>>,
    O: Iterator<Item = (Vec<u8>, Option<T>)>,
{
    type Item = Result<(Vec<u8>, T)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let take_ov = match (self.kv.peek(), self.ov.peek()) {
                (None, None) => return None,
                (Some(_), None) => return self.kv.next(),
                (Some(Err(_)), _) => return self.kv.next(),
                (None, Some(_)) => true,
                (Some(Ok((kk, _))), Some((ok, _))) => {
                    if kk == ok {
                        self.kv.next();
                        true
                    } else {
                        (ok < kk) != self.reverse
                    }
                }
            };
            if !take_ov {
                return self.kv.next();
            }
            if let Some((k, Some(v))) = self.ov.next() {
                return Some(Ok((k, v)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kv: Vec<(&str, &str)>, ov: Vec<(&str, Option<&str>)>, reverse: bool) -> Vec<String> {
        let kv = kv
            .into_iter()
            .map(|(k, v)| Ok((k.as_bytes().to_vec(), v.to_string())));
        let ov = ov
            .into_iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.map(str::to_string)));
        Merge::new(kv, ov, reverse)
            .map(|r| {
                let (k, v) = r.unwrap();
                format!("{}={v}", String::from_utf8(k).unwrap())
            })
            .collect()
    }

    /// Two keys of one stripe: the stripe's meta cache slot must follow
    /// every commit (either key, named or locked on demand), a dropped Txn
    /// and a flush.
    #[test]
    fn meta_cache_follows_commits_drops_and_flushes() {
        let store = Store::open(crate::StoreConfig::default()).unwrap();
        let a = b"a".to_vec();
        let s = stripe_of(0, &a);
        let b = (0..100_000u32)
            .map(|i| format!("b{i}").into_bytes())
            .find(|k| stripe_of(0, k) == s)
            .unwrap();
        let get = |k: &[u8]| store.begin(&[(0, k)]).get(0, k).unwrap();
        let mut t = store.begin(&[(0, &a)]);
        t.put_string(0, &a, b"1".to_vec(), 0, false).unwrap();
        t.commit().unwrap();
        assert_eq!(get(&a), Some(b"1".to_vec()));
        // b written by a Txn that named only a (b's stripe is a's).
        let mut t = store.begin(&[(0, &a)]);
        assert_eq!(t.get(0, &a).unwrap(), Some(b"1".to_vec()));
        t.put_string(0, &b, b"2".to_vec(), 0, false).unwrap();
        t.commit().unwrap();
        assert_eq!(get(&a), Some(b"1".to_vec()));
        assert_eq!(get(&b), Some(b"2".to_vec()));
        // Uncommitted writes never reach the cache.
        let mut t = store.begin(&[(0, &a)]);
        t.put_string(0, &a, b"3".to_vec(), 0, false).unwrap();
        drop(t);
        assert_eq!(get(&a), Some(b"1".to_vec()));
        // A key written by another stripe's holder (on-demand lock).
        let mut t = store.begin(&[(0, b"zzz")]);
        t.put_string(0, &a, b"4".to_vec(), 0, false).unwrap();
        t.commit().unwrap();
        assert_eq!(get(&a), Some(b"4".to_vec()));
        // Long strings are not cached but read correctly.
        let long = vec![b'x'; CACHE_MAX_STRING + 1];
        let mut t = store.begin(&[(0, &a)]);
        t.put_string(0, &a, long.clone(), 0, false).unwrap();
        t.commit().unwrap();
        assert_eq!(get(&a), Some(long));
        // Flushes delete behind the cache.
        let mut t = store.begin(&[(0, &b)]);
        t.put_string(0, &b, b"5".to_vec(), 0, false).unwrap();
        t.commit().unwrap();
        assert_eq!(get(&b), Some(b"5".to_vec()));
        let mut t = store.begin_exclusive();
        t.flush_db(0).unwrap();
        t.commit().unwrap();
        assert_eq!(get(&a), None);
        assert_eq!(get(&b), None);
        // Exclusive writers update behind the cache too.
        assert_eq!(get(&a), None);
        let mut t = store.begin_exclusive();
        t.put_string(0, &a, b"6".to_vec(), 0, false).unwrap();
        t.commit().unwrap();
        assert_eq!(get(&a), Some(b"6".to_vec()));
    }

    #[test]
    fn merge_overlay_wins_and_hides() {
        assert_eq!(
            run(
                vec![("a", "1"), ("b", "2"), ("d", "4")],
                vec![("b", None), ("c", Some("3")), ("d", Some("x"))],
                false
            ),
            vec!["a=1", "c=3", "d=x"]
        );
        assert_eq!(
            run(
                vec![("d", "4"), ("b", "2"), ("a", "1")],
                vec![("d", Some("x")), ("c", Some("3")), ("b", None)],
                true
            ),
            vec!["d=x", "c=3", "a=1"]
        );
    }
}
