//! `Txn`: one command's (or one EXEC's) view of the store. Holds its locks,
//! an overlay of its own writes (every read sees them), the original state
//! of each key it touched (for the per-database counters and the expiry
//! index, both derived at commit), and its in-flight versions. `commit`
//! writes one atomic batch; dropping without commit discards everything.

use crate::error::{Result, StoreError};
use crate::keys;
use crate::kv::{KvIter, Space, WriteBatch};
use crate::locks::Held;
use crate::meta::{KeyMeta, Kind, MetaBrief, INLINE_SUBKEY};
use crate::store::{counts_key, encode_counts, now_ms, Inner, Store};
use crate::types::bitmap::BitmapTxnState;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
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
    /// Meta overlay by meta key, with each key's state before this txn.
    meta: BTreeMap<Vec<u8>, MetaEntry>,
    /// Data overlay by data key: `None` = deleted in this txn.
    data: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Keys modified, in write order; a key written again right after
    /// itself is not repeated, other repeats are (sorted and deduplicated
    /// when read, and whenever it reaches twice `touched_distinct`).
    touched: Vec<(u16, Vec<u8>)>,
    /// Length of `touched` after its last deduplication.
    touched_distinct: usize,
    /// Calls of [`Txn::touch`]: every write to the overlay counts.
    writes: u64,
    versions: Vec<u64>,
    expired: u64,
    /// Count key lookups as keyspace hits / misses (read commands).
    count_lookups: bool,
    /// Expiry index entries to drop that no meta entry backs.
    stale_expiry: Vec<Vec<u8>>,
    extra_locks: Vec<Held>,
    held: Held,
    /// Overlay keys written by [`Txn::data_put_fresh`] since the last
    /// spill, and their bytes (see [`SPILL_BYTES`]).
    fresh: Vec<Vec<u8>>,
    fresh_bytes: usize,
    /// Commit without syncing under `always` ([`Txn::defer_sync`]).
    defer_sync: bool,
    /// Fresh-version entries went to the `Kv` ahead of the commit (so the
    /// commit's batch does not hold every entry of those versions).
    spilled: bool,
    /// What bitmaps keep beside the overlay: written blocks, the
    /// container cache's pending updates, the write-back tier's absorbed
    /// keys. Owned by `types::bitmap`; this file only calls its hooks.
    pub(crate) bm: BitmapTxnState,
    /// Set by [`Txn::read_after_commit`]: the commit leaves a snapshot of
    /// the `Kv` here, taken after its write, before its locks go.
    pub(crate) snapshot_cell: Option<crate::key_read::SnapshotCell>,
    /// Key versions whose stored meta this `Txn` has examined for an
    /// inline `data` entry ([`KeyMeta::inline_entry`]), by version:
    /// `Some` when the stored meta carries one (see [`InlineStored`]).
    /// Filled as stored meta is read, so only versions of keys this `Txn`
    /// read; the read-only path fills only `Some`.
    stored_inline: InlineNotes,
    /// The meta key this `Txn` last found absent from the store (empty:
    /// none), so that the reads of one command (the write-back tier's
    /// offer, the open, the write of the meta) ask the store once for a
    /// key that does not exist. The overlay and the dirty map, which are
    /// asked first, hold every change this `Txn` makes; taking a key's
    /// lock late (`ensure_locked`) forgets it, since another `Txn` may
    /// have created the key before that.
    absent_meta: Vec<u8>,
}

/// What a `Txn` noted of key versions' stored inline entries, by version
/// (see `Txn::stored_inline`): the first version in place, so that a
/// command on one key allocates nothing; the others in a map.
#[derive(Default)]
struct InlineNotes {
    first: Option<(u64, Option<InlineStored>)>,
    /// Empty while `first` is `None`.
    rest: FxHashMap<u64, Option<InlineStored>>,
}

impl InlineNotes {
    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// What was noted of `version`: `None` when nothing.
    fn get(&self, version: u64) -> Option<Option<InlineStored>> {
        match self.first {
            Some((v, i)) if v == version => Some(i),
            Some(_) if !self.rest.is_empty() => self.rest.get(&version).copied(),
            _ => None,
        }
    }

    /// Notes `i` for `version`, replacing what was noted.
    fn insert(&mut self, version: u64, i: Option<InlineStored>) {
        match &mut self.first {
            None => self.first = Some((version, i)),
            Some((v, noted)) if *v == version => *noted = i,
            Some(_) => {
                if self.rest.capacity() == 0 {
                    self.rest.reserve(INLINE_KEYS_HINT);
                }
                self.rest.insert(version, i);
            }
        }
    }
}

/// A key version whose stored data is one entry inside its stored meta
/// value: the `Kv` holds no `data` entry of it, and the `Txn`'s data
/// readers take this entry, read in place from the stored meta
/// ([`Txn::visit_inline`]; the key is locked, so it stays as it was), as
/// what the `Kv` holds of the version. The commit decides again from what
/// the version holds after it: one small entry stays inline, anything
/// else is written out as `data` entries ([`Txn::settle_inline`]).
#[derive(Clone, Copy)]
struct InlineStored {
    /// The entry's subkey.
    sub: [u8; INLINE_SUBKEY],
    /// Where the entry (its subkey) starts in the stored meta value.
    at: usize,
}

/// Takes items from `it` until their `size` reaches `max_bytes` (the item
/// that reaches it included) or `it` ends: a chunk of a long scan, for
/// work that must not hold the whole scan at once.
///
/// # Errors
/// The first error `it` yields.
pub(crate) fn take_chunk<T>(
    it: impl Iterator<Item = Result<T>>,
    max_bytes: usize,
    size: impl Fn(&T) -> usize,
) -> Result<Vec<T>> {
    let mut chunk = Vec::new();
    let mut bytes = 0;
    for item in it {
        let item = item?;
        bytes += size(&item);
        chunk.push(item);
        if bytes >= max_bytes {
            break;
        }
    }
    Ok(chunk)
}

/// Bytes of fresh-version entries a `Txn` keeps in its overlay before it
/// writes them to the `Kv` ahead of its commit ([`Txn::data_put_fresh`]).
pub const SPILL_BYTES: usize = 8 << 20;

impl Drop for Txn {
    fn drop(&mut self) {
        Store::release_versions(&self.inner, &self.versions);
        self.bm.abandon(&self.inner);
    }
}

impl Txn {
    pub(crate) fn new(inner: Arc<Inner>, held: Held) -> Txn {
        Txn {
            inner,
            now: now_ms(),
            meta: BTreeMap::new(),
            data: BTreeMap::new(),
            touched: Vec::new(),
            touched_distinct: 0,
            writes: 0,
            versions: Vec::new(),
            expired: 0,
            count_lookups: false,
            stale_expiry: Vec::new(),
            extra_locks: Vec::new(),
            held,
            fresh: Vec::new(),
            fresh_bytes: 0,
            spilled: false,
            defer_sync: false,
            bm: BitmapTxnState::default(),
            snapshot_cell: None,
            stored_inline: InlineNotes::default(),
            absent_meta: Vec::new(),
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
        let mut keys = self.touched.clone();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// How many writes this `Txn` has made so far (each write to a key
    /// counts, lazy expiry included). Equal values before and after a
    /// piece of work mean the work wrote nothing: a caller that abandons
    /// that work midway (a caught panic) may still commit the rest.
    pub fn write_count(&self) -> u64 {
        self.writes
    }

    /// Records `(db, key)` as modified (see `touched`).
    pub(crate) fn touch(&mut self, db: u16, key: &[u8]) {
        self.writes += 1;
        if let Some((d, k)) = self.touched.last() {
            if *d == db && k.as_slice() == key {
                return;
            }
        }
        // Keep it within twice the distinct keys (plus a little): writes
        // alternating between keys would otherwise grow it without bound.
        if self.touched.len() >= 64 && self.touched.len() >= 2 * self.touched_distinct {
            self.touched.sort_unstable();
            self.touched.dedup();
            self.touched_distinct = self.touched.len();
        }
        self.touched.push((db, key.to_vec()));
    }

    /// Makes [`Txn::commit`] leave the sync that `appendfsync always`
    /// asks for to the caller, which must make the commit durable
    /// ([`Store::persist`], or a group sync that starts after the commit
    /// returned) before it acknowledges the commit's writes: so one sync
    /// can serve the commits of many clients. No effect under `everysec`
    /// and `no`.
    pub fn defer_sync(&mut self) {
        self.defer_sync = true;
    }

    /// The durability this `Txn`'s commit gives its writes.
    fn durability(&self) -> crate::kv::Durability {
        if self.defer_sync {
            crate::kv::Durability::Lazy
        } else {
            Store::durability(&self.inner)
        }
    }

    /// Writes the overlay as one atomic batch (synced per the sync mode)
    /// and returns the keys it modified, each once, sorted. Keys removed by
    /// lazy expiry are included. Then, when a [`Txn::read_after_commit`]
    /// asked for one, takes the snapshot its reads use, before the locks
    /// are let go.
    ///
    /// # Errors
    /// `Io` when the write fails; nothing is applied then.
    pub fn commit(mut self) -> Result<Vec<(u16, Vec<u8>)>> {
        let keys = self.write_batch()?;
        if let Some(cell) = self.snapshot_cell.take() {
            let _ = cell.set(Arc::from(self.inner.kv.snapshot()));
        }
        Ok(keys)
    }

    /// [`Txn::commit`]'s write.
    fn write_batch(&mut self) -> Result<Vec<(u16, Vec<u8>)>> {
        self.bm.check_absorbs()?;
        let durability = self.durability();
        self.bm.sync_log(&self.inner, durability)?;
        if self.is_read_only() {
            // A read (TR.GETBIT, GET, ...): nothing to write, sync, cache
            // or count.
            return Ok(Vec::new());
        }
        self.rewrite_inline_metas()?;
        let meta = std::mem::take(&mut self.meta);
        // One entry per meta and data write, plus a count entry: most
        // commits add no expiry entries, so this is usually exact.
        let writes = meta.len() + self.data.len() + self.stale_expiry.len();
        let mut batch = WriteBatch::with_capacity(writes + usize::from(writes > 0));
        let mut deltas = Deltas::default();
        let mut min_added_expiry = u64::MAX;
        // Data keys not to write: entries kept inline in their meta.
        let mut skip: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        for (mk, MetaEntry { new, orig }) in meta {
            let (db, key) = keys::split_meta_key(&mk)?;
            let old_exp = orig;
            let new_exp = new.as_ref().map(|m| m.expire_at_ms);
            deltas.add(
                db,
                i64::from(new.is_some()) - i64::from(orig.is_some()),
                i64::from(new_exp.is_some_and(|e| e != 0))
                    - i64::from(old_exp.is_some_and(|e| e != 0)),
            );
            let (old_e, new_e) = (old_exp.unwrap_or(0), new_exp.unwrap_or(0));
            move_expiry(&mut batch, (db, key), (old_e, new_e), &mut min_added_expiry);
            // A key version this Txn created has all its entries in this
            // batch (unless some were spilled ahead), and so has one whose
            // stored data was inline: the memory tier may hold it as
            // complete.
            let value = match &new {
                Some(m) => {
                    let complete = (!self.spilled && self.versions.contains(&m.version))
                        || self.inline_of(m.version).is_some();
                    if complete {
                        batch.note_complete(mk.clone(), m.version);
                        Some(self.settle_inline(&mk, m, &mut batch, &mut skip)?)
                    } else {
                        Some(m.encode())
                    }
                }
                None => None,
            };
            match value {
                Some(v) => batch.put(Space::Meta, mk, v),
                None => batch.delete(Space::Meta, mk),
            }
        }
        // Expire times set on dirty keys without absorbing them: their
        // stored meta, patched, and the expiry index.
        for e in self.bm.expiries() {
            let (db, key) = keys::split_meta_key(&e.mk)?;
            deltas.add(db, 0, i64::from(e.new != 0) - i64::from(e.old != 0));
            move_expiry(&mut batch, (db, key), (e.old, e.new), &mut min_added_expiry);
            batch.put(Space::Meta, e.mk.clone(), e.stored.clone());
        }
        for k in std::mem::take(&mut self.stale_expiry) {
            batch.delete(Space::Expiry, k);
        }
        let bm = self.bm.prepare_commit(&self.inner, &mut batch, |dk| {
            self.data.get(dk).map(Option::as_deref)
        });
        // The skipped ranges (disjoint: one per key version) in key order,
        // stepped through beside the overlay's entries.
        skip.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut ranges = skip.iter().peekable();
        for (dk, v) in std::mem::take(&mut self.data) {
            while ranges
                .peek()
                .is_some_and(|(_, hi)| hi.as_deref().is_some_and(|h| h <= dk.as_slice()))
            {
                ranges.next();
            }
            if ranges
                .peek()
                .is_some_and(|(lo, _)| lo.as_slice() <= dk.as_slice())
            {
                continue;
            }
            match v {
                Some(v) => batch.put(Space::Data, dk, v),
                None => batch.delete(Space::Data, dk),
            }
        }
        let deltas = deltas.into_nonzero();
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
            for &(db, dk, de) in &deltas {
                if let Some(c) = next.get_mut(db as usize) {
                    c.keys = c.keys.saturating_add_signed(dk);
                    c.expires = c.expires.saturating_add_signed(de);
                    batch.put(Space::Meta, counts_key(db), encode_counts(*c));
                }
            }
            // The counts entry orders these commits: the write under the
            // lock, its sync (if asked) after it, so that the commits of
            // new keys share one (`kv::behind`'s group commit).
            self.write_or_forget(batch, crate::kv::Durability::Lazy)?;
            *counts = next;
            drop(counts);
            if durability != crate::kv::Durability::Lazy {
                self.inner.kv.persist()?;
            }
        }
        bm.finish(&self.inner);
        if min_added_expiry != u64::MAX {
            self.inner.note_expiry_added(min_added_expiry);
        }
        self.inner
            .expired
            .fetch_add(self.expired, Ordering::Relaxed);
        let mut keys = std::mem::take(&mut self.touched);
        if keys.len() > 1 {
            keys.sort_unstable();
            keys.dedup();
        }
        Ok(keys)
    }

    /// True when this `Txn` has nothing to write (keys it only touched,
    /// as the write-back tier's edits do, allowed).
    pub(crate) fn writes_nothing(&self) -> bool {
        self.meta.is_empty()
            && self.data.is_empty()
            && self.stale_expiry.is_empty()
            && self.expired == 0
            && self.bm.writes_nothing()
    }

    /// True when this `Txn` wrote nothing, expired nothing and touched no
    /// key, so that its commit has no effect.
    fn is_read_only(&self) -> bool {
        self.writes_nothing() && self.touched.is_empty()
    }

    /// Writes the commit batch (through the memory tier, which takes the
    /// new state of the keys it holds once the engine took the batch).
    fn write_or_forget(
        &mut self,
        batch: WriteBatch,
        durability: crate::kv::Durability,
    ) -> Result<()> {
        self.inner.kv.write(batch, durability)?;
        if self.spilled {
            // The entries spilled ahead are in the engine, under a version
            // that only this batch's meta names; the data GC keeps them
            // while the version is in flight, which ends when this `Txn`
            // does: so the engine must hold the meta by then.
            self.inner.kv.settle()?;
        }
        Ok(())
    }

    /// Gives a meta write to every key whose inline entry this `Txn`
    /// changed without changing its meta (an edit that leaves the summary
    /// as it was), so that the commit writes the entry back into it.
    fn rewrite_inline_metas(&mut self) -> Result<()> {
        if self.stored_inline.is_empty() || self.data.is_empty() {
            return Ok(());
        }
        let mut rewrite: Vec<Vec<u8>> = Vec::new();
        for dk in self.data.keys() {
            let p = keys::split_data_key(dk)?;
            if self.inline_of(p.version).is_none() {
                continue;
            }
            let mk = keys::meta_key(p.db, p.key);
            if !self.meta.contains_key(&mk) && rewrite.last() != Some(&mk) {
                rewrite.push(mk);
            }
        }
        for mk in rewrite {
            if let Some(b) = self.inner.kv.get(Space::Meta, &mk)? {
                let m = KeyMeta::decode(&b)?;
                let orig = Some(m.expire_at_ms);
                self.meta.insert(mk, MetaEntry { new: Some(m), orig });
            }
        }
        Ok(())
    }

    /// The meta value the commit writes for key `mk` at `m`, a version
    /// whose every entry this `Txn` knows (created here, or inline in the
    /// stored meta): a bitmap whose version then holds one entry of at
    /// most [`crate::meta::INLINE_MAX`] bytes keeps it inline, and the
    /// version's overlay entries go to `skip` (none reaches the `Kv`); a
    /// version stored inline that no longer fits is written out whole
    /// (its stored entry too, when this `Txn` left it as it was).
    fn settle_inline(
        &self,
        mk: &[u8],
        m: &KeyMeta,
        batch: &mut WriteBatch,
        skip: &mut Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<Vec<u8>> {
        if m.kind() != Kind::Bitmap {
            return Ok(m.encode());
        }
        let (db, key) = keys::split_meta_key(mk)?;
        let prefix = keys::data_prefix(db, key, m.version);
        let end = crate::kv::prefix_end(&prefix);
        // The stored inline entry, when this `Txn` left it as it was.
        let mut stored = self.inline_of(m.version);
        // The version's entries after this `Txn`: the overlay over the
        // stored inline entry.
        let mut one: Option<(&[u8], &[u8])> = None;
        let mut count = 0usize;
        let hi = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        for (k, v) in self
            .data
            .range::<[u8], _>((Bound::Included(&prefix[..]), hi))
        {
            if stored.is_some_and(|i| k[prefix.len()..] == i.sub) {
                stored = None;
            }
            if let Some(v) = v {
                count += 1;
                one = Some((&k[prefix.len()..], v));
            }
        }
        let kept = match stored {
            Some(i) => self.inline_entry_of((db, key, m.version), i)?,
            None => None,
        };
        if let Some((dk, v)) = &kept {
            count += 1;
            one = Some((&dk[prefix.len()..], v));
        }
        match one {
            Some((sub, v))
                if count == 1
                    && sub.len() == INLINE_SUBKEY
                    && !v.is_empty()
                    && v.len() <= crate::meta::INLINE_MAX =>
            {
                skip.push((prefix, end));
                Ok(m.encode_inline(sub, v))
            }
            _ => {
                if let Some((dk, v)) = kept {
                    batch.put(Space::Data, dk, v);
                }
                Ok(m.encode())
            }
        }
    }

    // ----- meta ---------------------------------------------------------

    /// Reads meta as stored (expired or not), or as this `Txn` left it.
    /// The stored state comes from the memory tier (`crate::tier`), which
    /// reads the LSM store on a miss.
    fn load_meta(&mut self, mk: &[u8]) -> Result<Option<KeyMeta>> {
        if let Some(e) = self.meta.get(mk) {
            return Ok(e.new.clone());
        }
        // The write-back tier's state is newer than the `Kv`.
        if let Some(mut m) = self.inner.dirty.meta(mk) {
            self.examine_stored(mk, m.version)?;
            if let Some(e) = self.bm.pending_expiry(mk) {
                m.expire_at_ms = e.new;
            }
            return Ok(Some(m));
        }
        if self.absent_meta == mk {
            return Ok(None);
        }
        let Some((m, inline)) = self.read_stored_meta(mk)? else {
            self.absent_meta.clear();
            self.absent_meta.extend_from_slice(mk);
            return Ok(None);
        };
        if let Some(i) = inline {
            self.note_inline(m.version, i);
        }
        Ok(Some(m))
    }

    /// The stored meta of `mk`, decoded in place from the `Kv`, with its
    /// inline entry if it carries one.
    fn read_stored_meta(&self, mk: &[u8]) -> Result<Option<(KeyMeta, Option<InlineStored>)>> {
        self.read_stored_meta_if(mk, |_| true)
    }

    /// [`Txn::read_stored_meta`] when `wanted` says yes to the stored
    /// bytes (before they are decoded); `None` when it says no.
    fn read_stored_meta_if(
        &self,
        mk: &[u8],
        wanted: impl Fn(&[u8]) -> bool,
    ) -> Result<Option<(KeyMeta, Option<InlineStored>)>> {
        let mut read = None;
        self.inner.kv.get_visit(Space::Meta, mk, &mut |b| {
            if wanted(b) {
                read = Some(decode_stored(b));
            }
        })?;
        read.transpose()
    }

    /// Notes that the stored meta of key version `version` carries its
    /// only entry inline, as `i` says.
    fn note_inline(&mut self, version: u64, i: InlineStored) {
        self.stored_inline.insert(version, Some(i));
    }

    /// Examines the stored meta of key `mk` for an inline entry of
    /// `version`, once per version (for a key whose meta this `Txn` took
    /// from elsewhere: the write-back tier's dirty map).
    ///
    /// # Errors
    /// `Io` / `Corrupt` reading the stored meta.
    pub(crate) fn examine_stored(&mut self, mk: &[u8], version: u64) -> Result<()> {
        if self.stored_inline.get(version).is_some() {
            return Ok(());
        }
        // Decoded only when it carries an inline entry (a key of many
        // entries, the usual dirty key, does not).
        let noted = match self.read_stored_meta_if(mk, KeyMeta::bytes_have_inline)? {
            Some((m, Some(i))) if m.version == version => Some(i),
            _ => None,
        };
        self.stored_inline.insert(version, noted);
        Ok(())
    }

    /// `f(subkey, value)` of the inline entry `i`, read in place from the
    /// stored meta; `None` when the stored meta no longer carries it (a
    /// flush of its database in this `Txn`).
    ///
    /// # Errors
    /// `Io` / `Corrupt` reading the stored meta.
    fn visit_inline<T>(
        &self,
        (db, key): (u16, &[u8]),
        i: InlineStored,
        f: impl FnOnce(&[u8], &[u8]) -> T,
    ) -> Result<Option<T>> {
        let mut f = Some(f);
        let mut out = None;
        let mk = keys::KeyBuf::meta(db, key);
        self.inner.kv.get_visit(Space::Meta, &mk, &mut |b| {
            // Where `note_inline` found it (the key is locked); checked,
            // and decoded again if the bytes differ.
            let entry = match b.get(i.at..) {
                Some(e)
                    if KeyMeta::bytes_have_inline(b)
                        && e.len() > INLINE_SUBKEY
                        && e[..INLINE_SUBKEY] == i.sub =>
                {
                    Ok(Some(e.split_at(INLINE_SUBKEY)))
                }
                _ => KeyMeta::inline_entry(b),
            };
            out = Some(entry.map(|e| {
                e.filter(|(sub, _)| *sub == i.sub)
                    .and_then(|(sub, v)| f.take().map(|f| f(sub, v)))
            }));
        })?;
        Ok(out.transpose()?.flatten())
    }

    /// The inline entry `i` of key version `(db, key, version)` as `(full
    /// data key, value)`, copied.
    fn inline_entry_of(
        &self,
        (db, key, version): (u16, &[u8], u64),
        i: InlineStored,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.visit_inline((db, key), i, |sub, v| {
            (keys::data_key(db, key, version, sub), v.to_vec())
        })
    }

    /// The inline entry this `Txn` read as the stored data of `version`.
    fn inline_of(&self, version: u64) -> Option<InlineStored> {
        self.stored_inline.get(version).flatten()
    }

    /// Puts the absorbed meta of a dirty bitmap key into the overlay; the
    /// key's stored expire time is `stored_expiry`.
    pub(crate) fn absorb_meta(&mut self, mk: &[u8], m: KeyMeta, stored_expiry: u64) {
        let orig = Some(stored_expiry);
        self.meta
            .insert(mk.to_vec(), MetaEntry { new: Some(m), orig });
    }

    /// True when this `Txn`'s overlay holds meta key `mk` (it wrote the
    /// key, or absorbed it).
    pub(crate) fn meta_overlaid(&self, mk: &[u8]) -> bool {
        self.meta.contains_key(mk)
    }

    /// True when this `Txn`'s meta overlay is empty.
    pub(crate) fn meta_overlay_is_empty(&self) -> bool {
        self.meta.is_empty()
    }

    /// Sets the overlay entry of `mk` to `new`. A key entering the overlay
    /// records its stored state first (`load_meta` with no overlay entry).
    fn overlay_meta(&mut self, mk: keys::KeyBuf, new: Option<KeyMeta>) -> Result<()> {
        if let Some(e) = self.meta.get_mut(&*mk) {
            e.new = new;
            return Ok(());
        }
        let stored = self.load_meta(&mk)?;
        let orig = stored.map(|m| m.expire_at_ms);
        self.meta.insert(mk.into_vec(), MetaEntry { new, orig });
        Ok(())
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
        let mk = keys::KeyBuf::meta(db, key);
        let Some(m) = self.load_meta(&mk)? else {
            return Ok(None);
        };
        if m.is_expired(self.now) {
            if self.held.covers(db, key) {
                // A key that expired while dirty (the write-back tier edits
                // keys with an expiry) is absorbed first, so the delete
                // below replaces its dirty state in this commit and the
                // dirty entry is dropped with it; a checkpoint would
                // otherwise write the expired key back.
                self.absorb_key(db, key);
                self.overlay_meta(mk, None)?;
                self.touch(db, key);
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

    /// True when this `Txn` holds the lock of `(db, key)`: no other `Txn`
    /// writes the key until it ends.
    pub(crate) fn holds_lock(&self, db: u16, key: &[u8]) -> bool {
        self.held.covers(db, key) || self.extra_locks.iter().any(|h| h.covers(db, key))
    }

    fn ensure_locked(&mut self, db: u16, key: &[u8]) {
        if !self.holds_lock(db, key) {
            self.extra_locks
                .push(self.inner.locks.lock_stripes_only(&[(db, key)]));
            // An absence read before the lock may be stale now.
            self.absent_meta.clear();
            self.absorb_key(db, key);
        }
    }

    /// Writes the meta of `(db, key)` (created or replaced).
    ///
    /// # Errors
    /// `Io` / `Corrupt` while reading the original state.
    pub fn put_meta(&mut self, db: u16, key: &[u8], m: KeyMeta) -> Result<()> {
        self.check_db(db)?;
        self.ensure_locked(db, key);
        let mk = keys::KeyBuf::meta(db, key);
        // A meta equal to the current one (HSET of an existing field, ...)
        // needs no write: the overlay or the store already holds it.
        if let Some(cur) = self.meta.get_mut(&*mk) {
            if cur.new.as_ref() != Some(&m) {
                cur.new = Some(m);
            }
        } else {
            let stored = self.load_meta(&mk)?;
            if stored.as_ref() != Some(&m) {
                let orig = stored.map(|s| s.expire_at_ms);
                self.meta
                    .insert(mk.into_vec(), MetaEntry { new: Some(m), orig });
            }
        }
        self.touch(db, key);
        Ok(())
    }

    /// Deletes `(db, key)`: its meta goes, its elements become stale.
    ///
    /// # Errors
    /// `Io` / `Corrupt` while reading the original state.
    pub fn delete_meta(&mut self, db: u16, key: &[u8]) -> Result<()> {
        self.check_db(db)?;
        self.ensure_locked(db, key);
        // A dirty key goes with its dirty state (in a `Txn` that keeps
        // dirty keys, an EXPIRE in the past).
        self.absorb_key(db, key);
        self.overlay_meta(keys::KeyBuf::meta(db, key), None)?;
        self.touch(db, key);
        Ok(())
    }

    /// The meta of a new key with data entries: a fresh version
    /// ([`Txn::new_data_version`]), no expiry, the small encoding, and
    /// `summary` (an empty one).
    ///
    /// # Errors
    /// As [`Txn::new_data_version`].
    pub fn new_key_meta(&mut self, summary: crate::meta::Summary) -> Result<KeyMeta> {
        Ok(KeyMeta {
            version: self.new_data_version()?,
            expire_at_ms: 0,
            big: false,
            noint: false,
            summary,
        })
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

    /// False when the `Kv` holds no `data` entry of key version `version`:
    /// this `Txn` allocated it and has spilled nothing ahead, so its
    /// entries are all in the overlay (versions are never reused). The
    /// data readers then skip the `Kv` (a new key costs no LSM read).
    fn stored_may_hold(&self, version: u64) -> bool {
        (self.spilled || !self.versions.contains(&version)) && self.inline_of(version).is_none()
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
        let start = crate::kv::bound_slice(&start_key);
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
                        .map(|(k, e)| (k.clone(), e.new.as_ref().map(KeyMeta::brief))),
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
        self.load_meta(&keys::KeyBuf::meta(db, key))
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
            .map(|(_, e)| i64::from(e.new.is_some()) - i64::from(e.orig.is_some()))
            .sum()
    }

    /// Drops this `Txn`'s pending writes and recorded originals for `db`
    /// (every database when `None`); used by flushes.
    pub(crate) fn discard_db(&mut self, db: Option<u16>) {
        let keep = |k: &[u8]| match db {
            Some(d) => !k.starts_with(&d.to_be_bytes()),
            None => false,
        };
        self.meta.retain(|k, _| keep(k));
        self.data.retain(|k, _| keep(k));
        self.bm.discard_db(db);
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
        let dk = keys::KeyBuf::data(db, key, version, sub);
        if let Some(v) = self.data.get(&*dk) {
            return Ok(v.clone());
        }
        if let Some(i) = self.inline_of(version) {
            if *sub != i.sub {
                return Ok(None);
            }
            return self.visit_inline((db, key), i, |_, v| v.to_vec());
        }
        self.inner.kv.get(Space::Data, &dk)
    }

    /// Entries this `Txn` will write at its commit (meta and data
    /// overlays).
    pub(crate) fn pending_entries(&self) -> usize {
        self.meta.len() + self.data.len()
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
        self.touch(db, key);
    }

    /// Writes one element under `version`, a version this `Txn` allocated
    /// ([`Txn::new_data_version`]) and no committed meta names yet. Such
    /// writes are invisible to every other reader until the meta that
    /// names the version commits, so once they pass [`SPILL_BYTES`] they
    /// go to the `Kv` ahead of the commit, in their own batch, keeping a
    /// large copy (RENAME, a TR.BITOP result) from sitting in the overlay,
    /// the commit batch and the engine at once. This `Txn` still reads them
    /// (from the `Kv`). If it never commits, the spilled entries are
    /// garbage under an unused version: the data GC drops them, and never
    /// while the version is in flight.
    ///
    /// # Errors
    /// `Io` when a spill write fails.
    pub fn data_put_fresh(
        &mut self,
        db: u16,
        key: &[u8],
        version: u64,
        sub: &[u8],
        value: Vec<u8>,
    ) -> Result<()> {
        debug_assert!(self.versions.contains(&version), "not a fresh version");
        let dk = keys::data_key(db, key, version, sub);
        self.fresh_bytes += dk.len() + value.len();
        self.fresh.push(dk.clone());
        self.ensure_locked(db, key);
        self.data.insert(dk, Some(value));
        self.touch(db, key);
        if self.fresh_bytes >= SPILL_BYTES {
            self.spill_fresh()?;
        }
        Ok(())
    }

    /// Writes the fresh-version entries still in the overlay to the `Kv`
    /// (durable with the commit that names their version: one journal).
    fn spill_fresh(&mut self) -> Result<()> {
        let mut batch = WriteBatch::with_capacity(self.fresh.len());
        for dk in std::mem::take(&mut self.fresh) {
            match self.data.remove(&dk) {
                Some(Some(v)) => batch.put(Space::Data, dk, v),
                // Deleted since it was written: the delete stays.
                Some(None) => {
                    self.data.insert(dk, None);
                }
                // Listed twice (written twice): already in the batch.
                None => {}
            }
        }
        self.fresh_bytes = 0;
        if batch.is_empty() {
            return Ok(());
        }
        self.spilled = true;
        self.inner.kv.write(batch, crate::kv::Durability::Lazy)
    }

    /// Deletes one element.
    pub fn data_delete(&mut self, db: u16, key: &[u8], version: u64, sub: &[u8]) {
        self.ensure_locked(db, key);
        self.data
            .insert(keys::data_key(db, key, version, sub), None);
        self.touch(db, key);
    }

    /// Up to `k` distinct random elements `(subkey, value)` of a key
    /// version holding `card` elements (see `Txn::sample_of`).
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
        self.sample_of(
            card,
            k,
            |after, reverse| self.data_iter(db, key, version, after, reverse),
            |e| &e.0,
        )
    }

    /// Up to `k` distinct random items of an ordered collection of `card`
    /// items, which `items(after, reverse)` yields ascending above `after`
    /// (exclusive; `None`: all) or, for `reverse`, all of them descending
    /// (`after` is then `None`); `name` gives an item's key. One item
    /// (`k == 1`) is a pick by rank, exactly uniform up to
    /// `random-pick-limit` items ([`crate::sample::pick_one`]). Otherwise,
    /// up to 1,024 items (or when `k` is over a quarter of them) the sample
    /// is uniform over a full scan; bigger collections sample a window of
    /// about `2k` items after a random pivot between the first and last key
    /// (cheap, not exactly uniform).
    ///
    /// # Errors
    /// Those of `items`.
    pub(crate) fn sample_of<T, I>(
        &self,
        card: u64,
        k: usize,
        items: impl Fn(Option<&[u8]>, bool) -> I,
        name: impl Fn(&T) -> &[u8],
    ) -> Result<Vec<T>>
    where
        I: Iterator<Item = Result<T>>,
    {
        let bounds = || -> Result<Option<(T, T)>> {
            let first = items(None, false).next().transpose()?;
            let last = items(None, true).next().transpose()?;
            Ok(first.zip(last))
        };
        if k == 1 {
            let names = || Ok(bounds()?.map(|(f, l)| (name(&f).to_vec(), name(&l).to_vec())));
            let rev = Box::new(|| items(None, true));
            return Ok(
                crate::sample::pick_one(card, |from| items(from, false), Some(rev), names)?
                    .into_iter()
                    .collect(),
            );
        }
        if card <= 1024 || (k as u64).saturating_mul(4) > card {
            let all = items(None, false).collect::<Result<Vec<_>>>()?;
            return Ok(crate::sample::reservoir(all.into_iter(), k));
        }
        let Some((first, last)) = bounds()? else {
            return Ok(Vec::new());
        };
        let pivot = crate::sample::pivot_between(name(&first), name(&last));
        let want = k.saturating_mul(2).max(16);
        let mut window = Vec::with_capacity(want);
        for e in items(Some(&pivot), false) {
            if window.len() >= want {
                break;
            }
            window.push(e?);
        }
        if window.len() < want {
            for e in items(None, false) {
                let e = e?;
                if window.len() >= want || name(&e) > pivot.as_slice() {
                    break;
                }
                window.push(e);
            }
        }
        Ok(crate::sample::reservoir(window.into_iter(), k))
    }

    /// One random element of the key version `(db, key, version)`, which
    /// holds `card` elements, picked
    /// by rank with `sample::pick_one`'s contract: exactly uniform up to
    /// `random-pick-limit` elements; above it, the element fewer than that
    /// many places after a random pivot between the first and last element
    /// names that `bounds()` gives (wrapping round). The entries are
    /// visited in place ([`Txn::data_visit`]): an entry holds `count(value)`
    /// elements (a hash field one, a set page its members) and `nth(subkey,
    /// value, i)` takes its `i`-th. `None` when there is none.
    ///
    /// # Errors
    /// `Io`, and what the closures return.
    pub(crate) fn pick_by_rank<T>(
        &self,
        (db, key, version): (u16, &[u8], u64),
        card: u64,
        bounds: impl FnOnce() -> Result<Option<(Vec<u8>, Vec<u8>)>>,
        count: impl Fn(&[u8]) -> Result<u64>,
        nth: impl Fn(&[u8], &[u8], u64) -> Result<T>,
    ) -> Result<Option<T>> {
        use rand::Rng;
        let limit = crate::sample::exact_pick_limit();
        let mut rng = rand::rng();
        let (pivot, mut r) = if card <= limit {
            if card == 0 {
                return Ok(None);
            }
            (None, rng.random_range(0..card))
        } else {
            let Some((first, last)) = bounds()? else {
                return Ok(None);
            };
            let pivot = if first <= last {
                crate::sample::pivot_between(&first, &last)
            } else {
                first
            };
            (Some(pivot), rng.random_range(0..limit))
        };
        // From the pivot's entry to the end, then from the first; a walk
        // that runs out (a stale count) starts over below what it saw.
        let mut from = pivot;
        for _ in 0..3 {
            let start = from.as_deref().map_or(Bound::Unbounded, Bound::Included);
            let mut seen = 0;
            let mut found: Result<Option<T>> = Ok(None);
            self.data_visit(db, key, version, start, |k, v| {
                let n = match count(v) {
                    Ok(n) => n,
                    Err(e) => {
                        found = Err(e);
                        return false;
                    }
                };
                if r < n {
                    found = nth(k, v, r).map(Some);
                    return false;
                }
                r -= n;
                seen += n;
                true
            })?;
            if let Some(x) = found? {
                return Ok(Some(x));
            }
            if from.take().is_none() {
                if seen == 0 {
                    return Ok(None);
                }
                r = rng.random_range(0..seen);
            }
        }
        Ok(None)
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
        let bounds = match (after, reverse) {
            (Some(a), false) => (Bound::Excluded(a), Bound::Unbounded),
            (Some(a), true) => (Bound::Unbounded, Bound::Excluded(a)),
            (None, _) => (Bound::Unbounded, Bound::Unbounded),
        };
        self.data_range(db, key, version, bounds, reverse)
    }

    /// Elements `(subkey, value)` of a key version with subkey within
    /// `(start, end)` (`Unbounded`: the version's edge), ascending or
    /// descending, overlay applied.
    pub fn data_range(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        (start, end): (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
    ) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + '_ {
        let prefix = keys::data_prefix(db, key, version);
        let plen = prefix.len();
        let pend = crate::kv::prefix_end(&prefix);
        let full = |b: Bound<&[u8]>| b.map(|s| keys::data_key(db, key, version, s));
        let start: Bound<Vec<u8>> = match full(start) {
            Bound::Unbounded => Bound::Included(prefix.clone()),
            b => b,
        };
        let end: Bound<Vec<u8>> = match full(end) {
            Bound::Unbounded => owned_end(&pend),
            b => b,
        };
        let sb = crate::kv::bound_slice(&start);
        let eb = crate::kv::bound_slice(&end);
        let kv: crate::kv::KvIter<'_> = if let Some(i) = self.inline_of(version) {
            let dk = keys::KeyBuf::data(db, key, version, &i.sub);
            let entry = if within((sb, eb), &dk) {
                self.inline_entry_of((db, key, version), i).transpose()
            } else {
                None
            };
            Box::new(entry.into_iter())
        } else if self.stored_may_hold(version) {
            self.inner.kv.range(Space::Data, sb, eb, reverse)
        } else {
            Box::new(std::iter::empty())
        };
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

    /// `f(subkey, value)` of the first element of a key version from
    /// `from` upward, as [`Txn::data_first`] finds it (see
    /// [`Txn::data_visit`]). `None` when there is none.
    ///
    /// # Errors
    /// `Io`.
    pub(crate) fn data_first_with<T>(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        from: Bound<&[u8]>,
        f: impl FnOnce(&[u8], &[u8]) -> T,
    ) -> Result<Option<T>> {
        let mut f = Some(f);
        let mut out = None;
        self.data_visit(db, key, version, from, |k, v| {
            if let Some(f) = f.take() {
                out = Some(f(k, v));
            }
            false
        })?;
        Ok(out)
    }

    /// Calls `f(subkey, value)` with the elements of a key version from
    /// `from` upward, in order, until it returns false, as this `Txn` sees
    /// them: borrowed where the `Kv` holds them in memory and this `Txn`
    /// has no pending write in the range (else copies, through
    /// [`Txn::data_range`]).
    ///
    /// # Errors
    /// `Io`.
    pub(crate) fn data_visit(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        from: Bound<&[u8]>,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let (Bound::Included(sub) | Bound::Excluded(sub)) = from else {
            return self.data_visit(db, key, version, Bound::Included(&[]), f);
        };
        // True when this `Txn` has written within the version at or after
        // `from`: the version's entries lie below the first key of the
        // next one (keys built on the stack, and only when it wrote).
        let pending = |next: u64| {
            if self.data.is_empty() {
                return false;
            }
            let lo_key = keys::KeyBuf::data(db, key, version, sub);
            let lo = crate::kv::bound_like(from, &lo_key);
            let hi_key = keys::KeyBuf::data(db, key, next, &[]);
            let hi = Bound::Excluded(&*hi_key);
            self.data.range::<[u8], _>((lo, hi)).next().is_some()
        };
        let next = version.checked_add(1);
        if let (Some(i), Some(next)) = (self.inline_of(version), next) {
            // The stored inline entry, in place, when this `Txn` has not
            // written within the range.
            if !pending(next) {
                let within = match from {
                    Bound::Excluded(s) => i.sub.as_slice() > s,
                    _ => i.sub.as_slice() >= sub,
                };
                if within {
                    self.visit_inline((db, key), i, |s, v| f(s, v))?;
                }
                return Ok(());
            }
        }
        // Straight from the `Kv` when this `Txn` has not written within
        // the version.
        let direct = next.is_some_and(|next| self.stored_may_hold(version) && !pending(next));
        if !direct {
            for e in self.data_range(db, key, version, (from, Bound::Unbounded), false) {
                let (k, v) = e?;
                if !f(&k, &v) {
                    break;
                }
            }
            return Ok(());
        }
        self.inner
            .kv
            .version_visit((db, key, version), from, &mut f)
    }

    /// The first element `(subkey, value)` of a key version from `from` (a
    /// subkey bound) upward, or from the top downward when `reverse`
    /// (`from` then bounds from above), as this `Txn` sees it: one seek of
    /// the `Kv` ([`crate::kv::KvRead::range_first`]) merged with the
    /// overlay, whose deletes it steps over. Reads nothing further.
    ///
    /// # Errors
    /// `Io`.
    pub(crate) fn data_first(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        from: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let prefix = keys::data_prefix(db, key, version);
        let plen = prefix.len();
        let pend = crate::kv::prefix_end(&prefix);
        let sub_key = |s: &[u8]| keys::data_key(db, key, version, s);
        // The moving bound, as a full data key (`None`: the prefix's edge).
        let mut cursor: Bound<Vec<u8>> = match from {
            Bound::Included(s) => Bound::Included(sub_key(s)),
            Bound::Excluded(s) => Bound::Excluded(sub_key(s)),
            Bound::Unbounded => Bound::Unbounded,
        };
        loop {
            let edge_lo = Bound::Included(prefix.as_slice());
            let edge_hi = owned_end(&pend);
            let (sb, eb): (Bound<&[u8]>, Bound<&[u8]>) = if reverse {
                let hi = match &cursor {
                    Bound::Unbounded => crate::kv::bound_slice(&edge_hi),
                    c => crate::kv::bound_slice(c),
                };
                (edge_lo, hi)
            } else {
                let lo = match &cursor {
                    Bound::Unbounded => edge_lo,
                    c => crate::kv::bound_slice(c),
                };
                (lo, crate::kv::bound_slice(&edge_hi))
            };
            if crate::kv::range_is_empty(sb, eb) {
                return Ok(None);
            }
            let kv = if let Some(i) = self.inline_of(version) {
                if within((sb, eb), &keys::KeyBuf::data(db, key, version, &i.sub)) {
                    self.inline_entry_of((db, key, version), i)?
                } else {
                    None
                }
            } else if self.stored_may_hold(version) {
                self.inner.kv.range_first(Space::Data, sb, eb, reverse)?
            } else {
                None
            };
            let mut ov = self.data.range::<[u8], _>((sb, eb));
            let ov = if reverse { ov.next_back() } else { ov.next() };
            let take_ov = match (&kv, &ov) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some((k, _)), Some((o, _))) => {
                    let o: &[u8] = o;
                    if reverse {
                        o >= k.as_slice()
                    } else {
                        o <= k.as_slice()
                    }
                }
            };
            if !take_ov {
                return Ok(kv.map(|(k, v)| (k[plen..].to_vec(), v)));
            }
            let (ok, ov) = ov.expect("taken only when present");
            match ov {
                Some(v) => return Ok(Some((ok[plen..].to_vec(), v.clone()))),
                None => cursor = Bound::Excluded(ok.clone()),
            }
        }
    }
}

/// Stored meta bytes decoded, with the subkey of their inline entry and
/// where it starts.
fn decode_stored(b: &[u8]) -> Result<(KeyMeta, Option<InlineStored>)> {
    let (m, at) = KeyMeta::decode_with_inline(b)?;
    let inline = at.and_then(|at| {
        let sub = b.get(at..at + INLINE_SUBKEY)?.try_into().ok()?;
        Some(InlineStored { sub, at })
    });
    Ok((m, inline))
}

/// Inline keys a `Txn` makes room for when it meets its first (an EXEC
/// of reads over many small bitmaps meets one per key).
const INLINE_KEYS_HINT: usize = 16;

/// True when data key `k` lies within `(lo, hi)`.
fn within((lo, hi): (Bound<&[u8]>, Bound<&[u8]>), k: &[u8]) -> bool {
    let above = match lo {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
        Bound::Unbounded => true,
    };
    above && below
}

/// One meta overlay entry.
struct MetaEntry {
    /// The meta this txn leaves (`None` = deleted).
    new: Option<KeyMeta>,
    /// Expire time of the key before this txn (`None` = absent, `Some(0)` =
    /// present without expiry), recorded when the key enters the overlay.
    orig: Option<u64>,
}

/// Per-database changes of (keys, keys with an expiry) of one commit.
/// Almost every commit touches one database: that one is kept inline.
#[derive(Default)]
struct Deltas {
    first: Option<(u16, i64, i64)>,
    rest: BTreeMap<u16, (i64, i64)>,
}

impl Deltas {
    fn add(&mut self, db: u16, keys: i64, expires: i64) {
        match &mut self.first {
            None => self.first = Some((db, keys, expires)),
            Some((d, k, e)) if *d == db => {
                *k += keys;
                *e += expires;
            }
            Some(_) => {
                let r = self.rest.entry(db).or_default();
                r.0 += keys;
                r.1 += expires;
            }
        }
    }

    /// The databases whose counts change: `(db, keys, expires)`.
    fn into_nonzero(self) -> Vec<(u16, i64, i64)> {
        self.first
            .into_iter()
            .chain(self.rest.into_iter().map(|(d, (k, e))| (d, k, e)))
            .filter(|&(_, k, e)| (k, e) != (0, 0))
            .collect()
    }
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

/// Moves key `(db, key)`'s entry in the expiry index from expire time
/// `old` to `new` (0: none) in `batch`, lowering `min_added` to a time
/// it adds.
fn move_expiry(
    batch: &mut WriteBatch,
    (db, key): (u16, &[u8]),
    (old, new): (u64, u64),
    min_added: &mut u64,
) {
    if old == new {
        return;
    }
    if old != 0 {
        batch.delete(Space::Expiry, keys::expiry_key(old, db, key));
    }
    if new != 0 {
        batch.put(Space::Expiry, keys::expiry_key(new, db, key), Vec::new());
        *min_added = (*min_added).min(new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_notes_keep_what_a_map_keeps() {
        let note = |at: usize| {
            Some(InlineStored {
                sub: [at as u8; INLINE_SUBKEY],
                at,
            })
        };
        let mut notes = InlineNotes::default();
        let mut model: std::collections::HashMap<u64, Option<usize>> = Default::default();
        assert!(notes.is_empty());
        for (step, version) in [7u64, 7, 3, 9, 7, 3, 11, 9].into_iter().enumerate() {
            let i = if step % 3 == 0 { None } else { note(step) };
            notes.insert(version, i);
            model.insert(version, i.map(|i| i.at));
            for v in 0..12 {
                let got = notes.get(v).map(|i| i.map(|i| i.at));
                assert_eq!(got, model.get(&v).copied(), "version {v} after step {step}");
            }
        }
        assert!(!notes.is_empty());
    }

    /// A `Txn` that found a key absent before holding its lock, and
    /// writes it after another `Txn` created it, counts it once: the late
    /// lock forgets the remembered absence (`Txn::absent_meta`).
    #[test]
    fn a_key_created_before_a_late_lock_is_counted_once() {
        use crate::types::strings::SetOptions;
        let st = crate::store::Store::open(crate::store::StoreConfig::default()).unwrap();
        let mut a = st.begin(&[]);
        assert!(!a.exists(0, b"k").unwrap());
        let mut b = st.begin(&[(0, b"k")]);
        b.set(0, b"k", b"1".to_vec(), SetOptions::default())
            .unwrap();
        b.commit().unwrap();
        a.set(0, b"k", b"2".to_vec(), SetOptions::default())
            .unwrap();
        a.commit().unwrap();
        let mut t = st.begin(&[]);
        assert_eq!(t.dbsize(0).unwrap(), 1);
        assert_eq!(t.get(0, b"k").unwrap(), Some(b"2".to_vec()));
    }

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

    #[test]
    fn fresh_version_writes_spill_and_stay_readable() {
        let store = Store::open(crate::StoreConfig::default()).unwrap();
        let mut t = store.begin(&[(0, b"k")]);
        let v = t.new_data_version().unwrap();
        let value = vec![7u8; 1000];
        let n = 3 * SPILL_BYTES / 1000;
        for i in 0..n as u32 {
            t.data_put_fresh(0, b"k", v, &i.to_be_bytes(), value.clone())
                .unwrap();
            assert!(t.fresh_bytes < SPILL_BYTES && t.data.len() <= SPILL_BYTES / 1000);
        }
        // Deletes of a spilled entry and of one still in the overlay both
        // survive the next spill.
        t.data_delete(0, b"k", v, &0u32.to_be_bytes());
        t.data_delete(0, b"k", v, &(n as u32 - 1).to_be_bytes());
        t.spill_fresh().unwrap();
        assert_eq!(t.data.len(), 2);
        let read: Vec<_> = t.data_iter(0, b"k", v, None, false).collect();
        assert_eq!(read.len(), n - 2);
        assert!(read.iter().all(|e| e.as_ref().unwrap().1 == value));
        assert_eq!(
            t.data_get(0, b"k", v, &1u32.to_be_bytes()).unwrap(),
            Some(value)
        );
    }

    /// Two keys of one lock stripe, both resident in the memory tier: reads
    /// follow every commit (either key, named or locked on demand), a
    /// dropped Txn and a flush.
    #[test]
    fn resident_keys_follow_commits_drops_and_flushes() {
        let store = Store::open(crate::StoreConfig::default()).unwrap();
        let a = b"a".to_vec();
        let s = crate::locks::stripe_of(0, &a);
        let b = (0..100_000u32)
            .map(|i| format!("b{i}").into_bytes())
            .find(|k| crate::locks::stripe_of(0, k) == s)
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
        // Long strings too.
        let long = vec![b'x'; 100_000];
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

    /// Writes alternating between two keys keep `touched` small, and the
    /// commit still reports each modified key once, sorted.
    #[test]
    fn touched_stays_bounded_and_deduplicated() {
        let store = Store::open(crate::StoreConfig::default()).unwrap();
        let keys: [&[u8]; 3] = [b"a", b"b", b"c"];
        let mut t = store.begin(&[(0, keys[0]), (0, keys[1]), (0, keys[2])]);
        for i in 0..10_000u32 {
            let k = keys[(i % 3) as usize];
            t.put_string(0, k, i.to_string().into_bytes(), 0, false)
                .unwrap();
            assert!(t.touched.len() <= 64 + 2 * 3);
        }
        let expect: Vec<(u16, Vec<u8>)> = keys.iter().map(|k| (0, k.to_vec())).collect();
        assert_eq!(t.modified_keys(), expect);
        assert_eq!(t.commit().unwrap(), expect);
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
