//! The bitmap side of the write-back tier (`dirty.rs`, `oplog.rs`;
//! docs/architecture.md, "The write-back tier"): a TR.SETBIT, an edit of
//! listed bits (TR.SETBITS, TR.CLEARBITS), a range write (TR.SETRANGE,
//! TR.FLIPRANGE) or a TR.BITOP result kept in the
//! dirty map and appended to the operation log instead of written to the
//! `Kv`, the absorb of a dirty key into a `Txn`, and the replay of a logged
//! TR.BITOP result at recovery. Contract: the tier never changes a
//! key's existence, type or expiry (it edits keys with an expiry, which
//! keep it); every `Txn` that may read or write a
//! dirty key through another path absorbs it first, and its commit writes
//! the key's dirty state with its own writes.

use std::sync::Arc;

use roaringd_bitmap::{ContainerBuf, ContainerRef};

use crate::error::{Result, StoreError};
use crate::keys;
use crate::kv::Space;
use crate::meta::{BitmapSummary, KeyMeta, Kind, Summary};
use crate::txn::Txn;

use super::block_facts::{low_sum, range_low_sum, BlockFacts};
use super::bytes::{by_block, cached_facts, split, view, Bytes, ContainerBytes};
use super::container_cache::{padded, padded_by, padded_with, set_facts, PAD};
use super::page;
use super::range_writes::{block_part, range_edit, RangeOp};
use super::setops::KeptBlocks;
use super::summary::{
    census, census_bitset_flip, census_of, summary_of, summary_point, summary_push,
};
use super::txn_state::{DirtyExpiry, WrittenBlock};
use super::{dirty, oplog};

/// Most blocks a range write the tier takes may span (2^26 bits): a longer
/// one is stored by the ordinary path.
pub(super) const MAX_RANGE_BLOCKS: usize = 1024;

/// The containers an edit of several blocks changes, for the dirty map,
/// with the bytes they count against its budget.
#[derive(Default)]
struct DirtyBlocks {
    blocks: Vec<(u16, dirty::DirtyBlock)>,
    /// Dirty blocks flipped whole without a rewrite ([`dirty::Dirty::record_many`]).
    toggles: Vec<u16>,
    room: u64,
}

impl DirtyBlocks {
    /// Block `hi` goes from `old` to `new`: counted in summary `s`'s census
    /// and kept.
    /// `facts`, when given, are `new`'s ([`BlockFacts::of`]), kept with it.
    fn push(
        &mut self,
        s: &mut BitmapSummary,
        hi: u16,
        (old, new): (ContainerRef<'_>, &ContainerBuf),
        facts: Option<BlockFacts>,
    ) {
        census(s, old, false);
        census(s, new.as_ref(), true);
        self.room += (PAD + new.as_bytes().len()) as u64;
        let block = dirty::DirtyBlock::new(padded_with(new.as_bytes(), facts));
        self.blocks.push((hi, block));
    }
}

impl Txn {
    /// The write-back tier's TR.SETBIT (`docs/architecture.md`, "The
    /// write-back tier"): edits a copy of the container (a bitset that stays one and
    /// that the dirty map alone holds: in place,
    /// [`dirty::Dirty::record_in_place`]),
    /// keeps it and the new summary in the dirty map and appends the edit
    /// to the operation log (synced by the commit under `always`); nothing
    /// is written to the `Kv`. Returns the bit's previous value, or
    /// `None` when the edit is not the tier's to take: a missing key, an
    /// absent block or one the edit empties, a clear of the minimum or
    /// maximum (which needs a scan), or a full budget. A key with an expiry
    /// is taken like any other: the edit keeps its expiry, and a key that
    /// expires while dirty is absorbed by the `Txn` that deletes it
    /// ([`Txn::live_meta`]).
    ///
    /// # Errors
    /// `WrongType`; `Io` when the log cannot be written (nothing changed).
    pub(super) fn bm_setbit_dirty(
        &mut self,
        db: u16,
        key: &[u8],
        off: u32,
        value: bool,
    ) -> Result<Option<bool>> {
        let Some(m) = self.meta_of(db, key, Kind::Bitmap)? else {
            return Ok(None);
        };
        let mut s = summary_of(&m);
        let (hi, lo) = split(off);
        let Some(old_bytes) = self.bm_get(db, key, m.version, hi, Some(&s))? else {
            // A set bit in a block the key lacks: a new container.
            return Ok(match value {
                true => self.bm_bits_dirty(db, key, &[off], true)?.map(|_| false),
                false => None,
            });
        };
        let old_facts = cached_facts(&old_bytes);
        let old_view = view(&old_bytes)?;
        let old = old_view.as_ref();
        let prev = old.contains(lo);
        if prev == value {
            return Ok(Some(prev));
        }
        if !value && (off == s.min || off == s.max) {
            return Ok(None);
        }
        let dirty = &self.inner.dirty;
        let plan = old.plan_point_write(lo, value);
        // A bitset that stays one is flipped in place where the tier
        // holds the only copy of it (no 8 KiB copy), when its cached
        // facts, if any, follow without a scan.
        let in_place = match (old, &plan, &old_bytes) {
            (ContainerRef::Bitset { .. }, Some(w), Bytes::Shared(_)) => {
                if !dirty.has_room((PAD + w.encoded_len()) as u64) {
                    return Ok(None);
                }
                old_facts.map_or(Some(None), |f| f.after_inner_flip(lo, value).map(Some))
            }
            _ => None,
        };
        if let Some(facts) = in_place {
            let Bytes::Shared(held) = old_bytes else {
                unreachable!("matched as shared above")
            };
            let mut flipped = s;
            census_bitset_flip(&mut flipped, value);
            summary_point(&mut flipped, off, value);
            let mk = keys::KeyBuf::meta(db, key);
            let meta = KeyMeta {
                summary: Summary::Bitmap(flipped),
                ..self.as_kept(&mk, m)
            };
            {
                let mut log = dirty.log.lock();
                let Some(log) = log.as_mut() else {
                    return Ok(None);
                };
                let seq = log
                    .to(self.bm.own.as_mut())
                    .append(db, meta.version, key, off, value)?;
                let edit = |b: &mut [u8]| {
                    let (pad, c) = b.split_at_mut(PAD);
                    let done = roaringd_bitmap::flip_bitset_in_place(c, lo, value);
                    if let (true, Some(f)) = (done, facts) {
                        set_facts(pad, f);
                    }
                    done
                };
                if let Err(held) = dirty.record_in_place(&mk, &meta, (hi, seq), held, edit) {
                    // Shared (a reader holds it) or not the tier's yet
                    // (read from the container cache): copied, under the
                    // record appended above.
                    let old = view(&held)?;
                    let old = old.as_ref();
                    // The bytes planned on above: the same plan.
                    let w = old.plan_point_write(lo, value).ok_or_else(|| {
                        StoreError::corrupt("a dirty container changed under its key's lock")
                    })?;
                    let mut bytes = padded_by(w.encoded_len(), |out| w.write(out));
                    if let Some(f) = facts {
                        set_facts(Arc::get_mut(&mut bytes).expect("a new Arc"), f);
                    }
                    let block = dirty::DirtyBlock::new(bytes);
                    dirty.record(&mk, meta, hi, block, seq);
                }
            }
            self.bm.logged();
            self.touch(db, key);
            return Ok(Some(prev));
        }
        // The new block's value, written in one pass over the old bytes
        // where the kind stays (nearly every edit), else edited as a buffer.
        let mut bytes = match plan {
            Some(w) => {
                if !dirty.has_room((PAD + w.encoded_len()) as u64) {
                    return Ok(None);
                }
                padded_by(w.encoded_len(), |out| w.write(out))
            }
            None => {
                let mut new = old.to_buf();
                if value {
                    new.insert(lo);
                } else {
                    new.remove(lo);
                }
                if new.is_empty() || !dirty.has_room((PAD + new.as_bytes().len()) as u64) {
                    return Ok(None);
                }
                padded(new.as_bytes())
            }
        };
        let new = bytes.checked_view()?;
        let new = new.as_ref();
        census(&mut s, old, false);
        census(&mut s, new, true);
        summary_point(&mut s, off, value);
        if let Some(f) = old_facts.and_then(|f| f.after_flip(new, lo, value)) {
            set_facts(Arc::get_mut(&mut bytes).expect("a new Arc"), f);
        }
        let block = dirty::DirtyBlock::new(bytes);
        // The room was checked when the bytes were made.
        let version = m.version;
        let one = DirtyBlocks {
            blocks: vec![(hi, block)],
            toggles: Vec::new(),
            room: 0,
        };
        let logged = self.bm_log_dirty((db, key, m, s), one, |log| {
            log.append(db, version, key, off, value)
        })?;
        Ok(logged.then_some(prev))
    }

    /// Offers an edit of `key` to the write-back tier when this `Txn` was
    /// begun with `Store::begin_keep_dirty` or `Store::begin_exec`: `take`
    /// is the tier's path (`Some` when it took the edit), tried while this
    /// `Txn` has neither written nor absorbed `key` and the tier is on.
    /// Writes of other keys do not matter: in a pipeline group, which
    /// Redis does not apply atomically either, the tier's record reaches
    /// the log apart from them; in an EXEC it goes into the commit's batch
    /// with them. When the tier does not take it, the key is
    /// absorbed, so the ordinary path the caller then takes edits a clean
    /// key (written on top of a dirty one, the edit would be hidden by its
    /// dirty state and then undone by its absorb). `None` for a `Txn` that
    /// does not keep dirty keys.
    ///
    /// # Errors
    /// `take`'s.
    pub(super) fn bm_offer_dirty<T>(
        &mut self,
        db: u16,
        key: &[u8],
        take: impl FnOnce(&mut Txn) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        if !self.bm.keep_dirty {
            return Ok(None);
        }
        if self.inner.dirty.enabled() && self.bm_untouched(db, key) {
            if let Some(done) = take(self)? {
                return Ok(Some(done));
            }
        }
        self.bm_absorb(&keys::KeyBuf::meta(db, key));
        Ok(None)
    }

    /// Appends an edit's record to the operation log (`append`) and
    /// records the key's meta (`m` with summary `s`) and changed blocks
    /// in the dirty map under the log's lock, so that a checkpoint, which
    /// raises the log's floor under it, sees the key dirty with this
    /// record. Returns false, having done nothing, when the blocks' room
    /// (counted bytes) is past the budget or the store has no log (the
    /// tier is off).
    ///
    /// # Errors
    /// `Io` when the log cannot be written (nothing recorded).
    fn bm_log_dirty(
        &mut self,
        (db, key, m, s): (u16, &[u8], KeyMeta, BitmapSummary),
        DirtyBlocks {
            blocks,
            toggles,
            room,
        }: DirtyBlocks,
        append: impl FnOnce(&mut oplog::Appender<'_>) -> Result<u64>,
    ) -> Result<bool> {
        let dirty = &self.inner.dirty;
        if !dirty.has_room(room) {
            return Ok(false);
        }
        let mk = keys::KeyBuf::meta(db, key);
        let meta = KeyMeta {
            summary: Summary::Bitmap(s),
            ..self.as_kept(&mk, m)
        };
        {
            let mut log = dirty.log.lock();
            let Some(log) = log.as_mut() else {
                return Ok(false);
            };
            let seq = append(&mut log.to(self.bm.own.as_mut()))?;
            dirty.record_many(&mk, meta, (blocks, &toggles), seq);
        }
        self.bm.logged();
        // Watchers of the key see the write.
        self.touch(db, key);
        Ok(true)
    }

    /// The write-back tier's TR.SETBITS / TR.CLEARBITS: the edit of the
    /// listed bits (`sorted`: ascending, no repeats), each changed
    /// container kept in the dirty map with the new summary and the whole
    /// edit appended to the operation log as one record (synced by the
    /// commit under `always`); nothing is written to the `Kv`. Returns
    /// (cardinality after, bits changed), or `None` when the edit is not
    /// the tier's to take, having changed nothing: a missing or empty key,
    /// more than [`oplog::MAX_BITS`] offsets, an edit
    /// that empties a block, a clear of the minimum or maximum (which needs
    /// a scan), or a full budget. A set bit of a block the key lacks makes
    /// a new container (absorbed where the packed layout puts it).
    ///
    /// # Errors
    /// `WrongType`; `Io` when the log cannot be written (nothing changed).
    pub(super) fn bm_bits_dirty(
        &mut self,
        db: u16,
        key: &[u8],
        sorted: &[u32],
        set: bool,
    ) -> Result<Option<(u64, u64)>> {
        if sorted.len() > oplog::MAX_BITS {
            return Ok(None);
        }
        let Some(m) = self.meta_of(db, key, Kind::Bitmap)? else {
            return Ok(None);
        };
        let mut s = summary_of(&m);
        // An empty key has no extremes to extend.
        if s.card == 0 {
            return Ok(None);
        }
        let mut out = DirtyBlocks::default();
        let mut changed = 0u64;
        for (hi, group) in by_block(sorted) {
            let old_bytes = self.bm_get(db, key, m.version, hi, Some(&s))?;
            if old_bytes.is_none() && !set {
                continue;
            }
            let old_view = old_bytes.as_ref().map(view).transpose()?;
            let old = old_view
                .as_ref()
                .map_or(ContainerRef::Array(&[]), |v| v.as_ref());
            let flips = |&v: &u32| old.contains(split(v).1) != set;
            if !group.iter().any(flips) {
                continue;
            }
            if !set && group.iter().any(|&v| v == s.min || v == s.max) {
                return Ok(None);
            }
            let mut new = old.to_buf();
            for &v in group.iter().filter(|v| flips(v)) {
                if set {
                    new.insert(split(v).1);
                } else {
                    new.remove(split(v).1);
                }
                summary_point(&mut s, v, set);
                changed += 1;
            }
            if new.is_empty() {
                return Ok(None);
            }
            out.push(&mut s, hi, (old, &new), None);
        }
        if changed == 0 {
            return Ok(Some((s.card, 0)));
        }
        let version = m.version;
        let logged = self.bm_log_dirty((db, key, m, s), out, |log| {
            log.append_bits(db, version, key, sorted, set)
        })?;
        Ok(logged.then_some((s.card, changed)))
    }

    /// The write-back tier's TR.SETRANGE / TR.FLIPRANGE over
    /// `start..=end`: each changed container kept in the dirty map with
    /// the new summary and the write appended to the operation log as one
    /// record (synced by the commit under `always`); nothing is written to
    /// the `Kv`. Returns the cardinality after, or `None` when the write
    /// is not the tier's to take, having changed nothing: a missing or
    /// empty key, a range over more than
    /// [`MAX_RANGE_BLOCKS`] blocks, a block emptied, extremes that only a
    /// scan past the range could find, or a full budget.
    ///
    /// # Errors
    /// `WrongType`; `Io` when the log cannot be written (nothing changed).
    pub(super) fn bm_range_dirty(
        &mut self,
        db: u16,
        key: &[u8],
        (start, end): (u32, u32),
        op: RangeOp,
    ) -> Result<Option<u64>> {
        let (shi, ehi) = (split(start).0, split(end).0);
        if usize::from(ehi - shi) >= MAX_RANGE_BLOCKS {
            return Ok(None);
        }
        let Some(m) = self.meta_of(db, key, Kind::Bitmap)? else {
            return Ok(None);
        };
        let old_s = summary_of(&m);
        if old_s.card == 0 {
            return Ok(None);
        }
        let mut s = old_s;
        let mut out = DirtyBlocks::default();
        // The smallest and largest set bits of the blocks of the range, as
        // they end up.
        let (mut first, mut last): (Option<u32>, Option<u32>) = (None, None);
        let mk = keys::KeyBuf::meta(db, key);
        for hi in shi..=ehi {
            let base = u32::from(hi) << 16;
            // A flip of a whole dirty run container (or of the complement
            // of one): the block is marked flipped, its runs untouched.
            if op == RangeOp::Flip && block_part(hi, (start, end)) == (0, u16::MAX) {
                let kept = self.inner.dirty.block_as_kept(&mk, m.version, hi);
                if let Some(f) = kept.as_ref().and_then(dirty::DirtyBlock::whole_flip) {
                    let (now, now_low) = f.now;
                    // A block emptied.
                    let Some((next, next_low)) = f.flipped else {
                        return Ok(None);
                    };
                    census_of(&mut s, (now.kind, now.card, now.stat_bytes), false);
                    census_of(&mut s, (next.kind, next.card, next.stat_bytes), true);
                    let grown = i128::from(next.card) - i128::from(now.card);
                    let sum = i128::from(s.sum) + grown * i128::from(base) + i128::from(next_low)
                        - i128::from(now_low);
                    s.sum = u64::try_from(sum).unwrap_or(0);
                    first.get_or_insert(base | u32::from(next.min));
                    last = Some(base | u32::from(next.max));
                    out.toggles.push(hi);
                    continue;
                }
            }
            let old_bytes = self.bm_get(db, key, m.version, hi, Some(&old_s))?;
            let old_facts = old_bytes.as_ref().and_then(cached_facts);
            let old_view = old_bytes.as_ref().map(view).transpose()?;
            let old = old_view
                .as_ref()
                .map_or(ContainerRef::Array(&[]), |v| v.as_ref());
            // A flip changes every bit of the block's part of the range; a
            // set, those not set yet.
            let (lo, up) = block_part(hi, (start, end));
            let unchanged = op == RangeOp::Set && old.count_range(lo, up) == u32::from(up - lo) + 1;
            let new = (!unchanged).then(|| {
                let mut c = old.to_buf();
                range_edit(&mut c, hi, (start, end), op);
                c
            });
            let now = new.as_ref().map_or(old, ContainerBuf::as_ref);
            let extremes = now.min().zip(now.max());
            match extremes {
                Some((a, b)) => {
                    first.get_or_insert(base | u32::from(a));
                    last = Some(base | u32::from(b));
                }
                // A block emptied.
                None if new.is_some() => return Ok(None),
                None => {}
            }
            let Some(new) = new else {
                continue;
            };
            // Only `lo..=up` changed: its old values' low sum and its new
            // one (all of it for a set, the old values' complement for a
            // flip). The old block's low sum comes with its facts when it
            // is dirty already, so a whole-block edit of it reads no value.
            let old_low = old_facts.map_or_else(|| low_sum(old), |f| u64::from(f.low_sum));
            let old_in = match (lo, up) {
                (0, u16::MAX) => old_low,
                _ => range_low_sum(old, lo, up),
            };
            let all_in = (u64::from(lo) + u64::from(up)) * (u64::from(up - lo) + 1) / 2;
            let new_in = if op == RangeOp::Set {
                all_in
            } else {
                all_in.saturating_sub(old_in)
            };
            // Within the block's bounds for consistent facts; facts that
            // are not (a bug) are dropped rather than trusted.
            let new_low = (old_low + new_in)
                .checked_sub(old_in)
                .and_then(|l| u32::try_from(l).ok());
            let grown = i128::from(new.cardinality()) - i128::from(old.cardinality());
            let sum = i128::from(s.sum) + grown * i128::from(base) + i128::from(new_in)
                - i128::from(old_in);
            s.sum = u64::try_from(sum).unwrap_or(0);
            let facts = extremes
                .zip(new_low)
                .map(|((min, max), low_sum)| BlockFacts { min, max, low_sum });
            out.push(&mut s, hi, (old, &new), facts);
        }
        if out.blocks.is_empty() && out.toggles.is_empty() {
            return Ok(Some(s.card));
        }
        // Bits outside the range are unchanged: an extreme outside it
        // stays; one inside it is the range's own as it ends up, unless
        // the range ends up empty while the key has bits beyond it.
        if old_s.min >= start {
            match first {
                Some(v) => s.min = v,
                None => return Ok(None),
            }
        }
        if old_s.max <= end {
            match last {
                Some(v) => s.max = v,
                None => return Ok(None),
            }
        }
        let version = m.version;
        let logged = self.bm_log_dirty((db, key, m, s), out, |log| {
            log.append_range(db, version, key, (start, end), op == RangeOp::Flip)
        })?;
        Ok(logged.then_some(s.card))
    }

    /// Writes the write-back tier's dirty state of `(db, key)`, if any,
    /// into this `Txn`, as [`Store::begin`](crate::Store::begin) does for
    /// every key it locks (one atomic load when nothing is dirty): for a
    /// key locked after the `Txn` began (`Txn::ensure_locked`), a key
    /// deleted or given an expire time the tier cannot set in place, and a
    /// command that reads or writes more of a key than the tier's paths in
    /// a `Txn` begun by
    /// [`Store::begin_keep_dirty`](crate::Store::begin_keep_dirty) (a
    /// pipeline group). The key must be one this `Txn` locked.
    pub fn absorb_key(&mut self, db: u16, key: &[u8]) {
        if !self.inner.dirty.is_empty() {
            self.bm_absorb(&keys::KeyBuf::meta(db, key));
        }
    }

    /// How many edits the write-back tier took for this `Txn` so far:
    /// each is in the dirty map at once, where dropping the `Txn` does not
    /// take it back (a caller that drops it after a panic must not run
    /// the command again, [`Txn::keep_tier_edit`]).
    #[must_use]
    pub fn tier_edits(&self) -> u64 {
        self.bm.tier_edits
    }

    /// For a tier edit of `(db, key)` that a dropped `Txn` made (see
    /// [`Txn::tier_edits`]), in the one that runs its command's group
    /// again without it: marks the key modified, so that the commit
    /// reports it (WATCH), and syncs the log under `always`, as the
    /// dropped `Txn`'s commit would have.
    pub fn keep_tier_edit(&mut self, db: u16, key: &[u8]) {
        self.bm.oplog_appended = true;
        self.touch(db, key);
    }

    /// True when the write-back tier holds any dirty key (one atomic
    /// load): else [`Txn::absorb_key`] has nothing to do.
    #[must_use]
    pub fn any_dirty(&self) -> bool {
        !self.inner.dirty.is_empty()
    }

    /// True when `key` is dirty and not absorbed by this `Txn` (the debug
    /// builds' check of the `keep_dirty` contract in `bm_clean`).
    pub(super) fn dirty_unabsorbed(&self, db: u16, key: &[u8]) -> bool {
        let mk = keys::KeyBuf::meta(db, key);
        self.inner.dirty.meta(&mk).is_some() && !self.bm.has_absorbed(&mk)
    }

    /// Absorbs dirty key `mk` (meta key) into this `Txn`, if dirty: each
    /// dirty container is written as its entry, the meta, and the `wb` entry
    /// of its last log record; the dirty entry is dropped after the
    /// commit (`docs/architecture.md`, "The write-back tier", Absorb).
    pub(crate) fn bm_absorb(&mut self, mk: &[u8]) {
        if self.bm.has_absorbed(mk) {
            return;
        }
        let Some(d) = self.inner.dirty.get(mk) else {
            return;
        };
        let Ok((db, key)) = keys::split_meta_key(mk) else {
            return;
        };
        let key = key.to_vec();
        let version = d.meta.version;
        // The stored data may be inline in the stored meta, which the
        // placement below reads as the version's entries.
        if let Err(e) = self.examine_stored(mk, version) {
            self.bm.failed.get_or_insert(e);
            return;
        }
        let s = summary_of(&d.meta);
        // In block order: the packer and `bm_place_many` take containers
        // ascending (the dirty map holds them in no order).
        let mut blocks: Vec<_> = d.blocks.iter().collect();
        blocks.sort_unstable_by_key(|&(hi, _)| hi);
        if d.whole {
            // A whole key (a TR.BITOP result) is a fresh version, never in
            // the cache: packed (`page`) as it comes.
            let mut packer = page::Packer::default();
            let mut entries = Vec::new();
            for &(hi, bytes) in &blocks {
                packer.push(hi, &bytes[PAD..], &mut entries);
                self.bm.written_set(
                    (db, version, hi),
                    WrittenBlock::Container(Arc::clone(bytes)),
                );
            }
            packer.finish(&mut entries);
            for (k, v) in entries {
                self.data_put(db, &key, version, &k.to_be_bytes(), v);
            }
        } else {
            // Each block where the packed layout puts it: its page or its
            // single, every entry touched read and packed once for all its
            // blocks (`Txn::bm_place_many`).
            let refs: Vec<(u16, Option<&[u8]>)> = blocks
                .iter()
                .map(|&(hi, bytes)| (hi, Some(&bytes[PAD..])))
                .collect();
            let dks = match self.bm_place_many(db, &key, version, &refs) {
                Ok(dks) => dks,
                Err(e) => {
                    // The commit refuses (nothing of the key is
                    // written; it stays dirty): see `BitmapTxnState::failed`.
                    self.bm.failed.get_or_insert(e);
                    return;
                }
            };
            for (&(hi, bytes), dk) in blocks.iter().zip(dks) {
                self.bm_note_stored(db, (version, hi, dk), Some(Arc::clone(bytes)));
            }
        }
        let mut meta = KeyMeta {
            summary: Summary::Bitmap(s),
            ..d.meta
        };
        // An expire time this `Txn` set without absorbing goes through
        // the overlay now, against the stored one.
        let stored_expiry = match self.bm.take_expiry(mk) {
            Some(e) => {
                meta.expire_at_ms = e.new;
                e.old
            }
            None => meta.expire_at_ms,
        };
        self.absorb_meta(mk, meta, stored_expiry);
        self.bm
            .internal_puts
            .push(crate::store::wb_key(d.last_seq, db, version, &key));
        self.bm.absorbed.push((mk.to_vec(), d.last_seq));
    }

    /// True when this `Txn` has neither written nor absorbed `(db, key)`
    /// (no key is built while it has written and absorbed nothing).
    fn bm_untouched(&self, db: u16, key: &[u8]) -> bool {
        if self.meta_overlay_is_empty() && self.bm.absorbed.is_empty() {
            return true;
        }
        let mk = keys::KeyBuf::meta(db, key);
        !self.meta_overlaid(&mk) && !self.bm.has_absorbed(&mk)
    }

    /// `m`, key `mk`'s meta as this `Txn` reads it, as the dirty map is
    /// to keep it: with the stored expire time when this `Txn` set a new
    /// one in place, which the dirty entry takes only once the commit has
    /// written it (`BitmapCommit::finish`), so a `Txn` that does not
    /// commit leaves the entry's time as stored.
    fn as_kept(&self, mk: &[u8], mut m: KeyMeta) -> KeyMeta {
        if let Some(e) = self.bm.pending_expiry(mk) {
            m.expire_at_ms = e.old;
        }
        m
    }

    /// True when the write-back tier can set `key`'s expire time in place
    /// ([`Txn::bm_expire_dirty`]): the key is dirty with edits of its
    /// stored containers, and this `Txn` neither absorbed nor wrote it. A
    /// whole value (a TR.BITOP result) is not: recovery writes it under a
    /// fresh version, without an expire time.
    /// Returns the key's stored expire time (0: none) when it can, which
    /// the dirty entry keeps until a commit sets a new one.
    pub(crate) fn bm_expiry_in_place(&self, db: u16, key: &[u8]) -> Option<u64> {
        if self.inner.dirty.is_empty() || !self.bm_untouched(db, key) {
            return None;
        }
        let mk = keys::KeyBuf::meta(db, key);
        self.inner.dirty.edited_meta(&mk).map(|m| m.expire_at_ms)
    }

    /// The write-back tier's EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT and
    /// PERSIST of a key for which [`Txn::bm_expiry_in_place`] gave its
    /// stored expire time `stored_at`: `at_ms` (0: none, a future time
    /// otherwise) becomes the key's expire
    /// time without its dirty state being written back. The commit writes
    /// the key's stored meta with only its expire time changed (the stored
    /// summary and inline entry stay those of the stored containers, onto
    /// which recovery replays the log's records) and the expiry index,
    /// then sets the dirty entry's expire time; this `Txn` reads the new
    /// one meanwhile ([`Txn::load_meta`]).
    ///
    /// # Errors
    /// `Io` reading the stored meta; `Corrupt` when it is missing or bad.
    pub(crate) fn bm_expire_dirty(
        &mut self,
        db: u16,
        key: &[u8],
        (stored_at, at_ms): (u64, u64),
    ) -> Result<()> {
        let mk = keys::KeyBuf::meta(db, key);
        // A second expire time in this `Txn` replaces the first.
        self.bm.take_expiry(&mk);
        let mut stored = None;
        self.inner.kv.get_visit(Space::Meta, &mk, &mut |b| {
            stored = Some(KeyMeta::with_expiry(b, at_ms));
        })?;
        let stored = stored
            .transpose()?
            .ok_or_else(|| StoreError::corrupt("a dirty key without its stored meta"))?;
        self.bm.expiries.push(DirtyExpiry {
            mk: mk.into_vec(),
            old: stored_at,
            new: at_ms,
            stored,
        });
        self.touch(db, key);
        Ok(())
    }

    /// True when [`Txn::bm_bitop_dirty`] may take a result into `dest`,
    /// as far as it can be told before the result is known: this `Txn`
    /// was begun by `Store::begin_keeping` for `dest` and has written
    /// nothing, the tier is on, and `dest` is a bitmap without expiry (the
    /// tier never changes a key's existence or expiry, which SCAN, DBSIZE
    /// and the expiry index read from the `Kv`). Returns `dest`'s summary
    /// when it may, `None` when not; an error reading `dest` answers
    /// `None` (it surfaces again on the ordinary path).
    pub(super) fn tier_may_take(&mut self, db: u16, dest: &[u8]) -> Option<BitmapSummary> {
        let mk = keys::KeyBuf::meta(db, dest);
        if self.bm.keep_dest.as_deref() != Some(&mk[..])
            || !self.writes_nothing()
            || !self.inner.dirty.enabled()
        {
            return None;
        }
        match self.meta_of(db, dest, Kind::Bitmap) {
            Ok(Some(m)) if m.expire_at_ms == 0 => Some(summary_of(&m)),
            _ => None,
        }
    }

    /// The write-back tier's TR.BITOP (`docs/architecture.md`, "The
    /// write-back tier"): the result `out` (summary `s`) becomes
    /// `dest`'s state under a fresh version, kept whole in the dirty map
    /// and logged as one value record (synced by the commit under
    /// `always`); nothing is written to the `Kv`, and the old version's
    /// entries become garbage once the key is absorbed. Called only where
    /// [`Txn::tier_may_take`] held before the merge (which writes
    /// nothing), with the summary it returned (`prev`); returns `None`
    /// when taken, and `out` back when the result is still not the tier's
    /// to take: it is empty or over `oplog::MAX_VALUE`, or the budget is
    /// full.
    ///
    /// # Errors
    /// `Io` when the log cannot be written (nothing changed then).
    pub(super) fn bm_bitop_dirty(
        &mut self,
        db: u16,
        dest: &[u8],
        out: KeptBlocks,
        (prev, s): (&BitmapSummary, &BitmapSummary),
    ) -> Result<Option<KeptBlocks>> {
        let mk = keys::KeyBuf::meta(db, dest);
        let body: usize = out.iter().map(|(_, b)| 6 + b.len() - PAD).sum();
        let padded_bytes: usize = out.iter().map(|(_, b)| b.len()).sum();
        if out.is_empty()
            || body > oplog::MAX_VALUE
            || !self.inner.dirty.has_room(padded_bytes as u64)
        {
            return Ok(Some(out));
        }
        // Equal contents have equal summaries: only then are the bytes
        // compared.
        let same = *prev == *s && {
            let bare: Vec<(u16, &[u8])> = out.iter().map(|(hi, b)| (*hi, &b[PAD..])).collect();
            self.inner.dirty.holds_whole(&mk, &bare)
        };
        if same {
            // The same result again (a recomputed audience that did not
            // change): the key already is it, logged.
            self.touch(db, dest);
            return Ok(None);
        }
        let version = self.new_data_version()?;
        // One list for the log record and the dirty map.
        let blocks: dirty::ValueBlocks = out.into();
        let meta = KeyMeta {
            version,
            expire_at_ms: 0,
            big: false,
            noint: false,
            summary: Summary::Bitmap(*s),
        };
        {
            // Under the log's lock, as in `bm_setbit_dirty`.
            let dirty = &self.inner.dirty;
            let mut log = dirty.log.lock();
            let Some(log) = log.as_mut() else {
                return Ok(Some(blocks.to_vec()));
            };
            let seq = log.to(self.bm.own.as_mut()).append_value(
                db,
                version,
                dest,
                Arc::clone(&blocks),
                PAD,
            )?;
            dirty.record_value(&mk, meta, blocks, seq);
        }
        self.bm.logged();
        self.touch(db, dest);
        Ok(None)
    }

    /// Recovery of a logged TR.BITOP result (`oplog::Change::Value`):
    /// `key` becomes the bitmap of `blocks` (laid out as
    /// `oplog::encode_blocks` does) under a fresh version, which it
    /// returns; the key is created if missing. `None`, changing nothing,
    /// when the key holds another type: the record's destination was a
    /// bitmap, so the log does not lead to that state.
    ///
    /// # Errors
    /// `Corrupt` for bytes that are not valid non-empty containers in
    /// ascending block order.
    pub(crate) fn tr_restore_value(
        &mut self,
        db: u16,
        key: &[u8],
        blocks: &[u8],
    ) -> Result<Option<u64>> {
        let bad = || StoreError::corrupt("operation log: bad value record");
        let list = oplog::decode_blocks(blocks).ok_or_else(bad)?;
        match self.meta_of(db, key, Kind::Bitmap) {
            Err(StoreError::WrongType) => return Ok(None),
            r => r?,
        };
        let mut s = BitmapSummary::default();
        let mut last: Option<u16> = None;
        for &(hi, b) in &list {
            let v = view(b)?;
            if last.is_some_and(|l| l >= hi) || v.as_ref().is_empty() {
                return Err(bad());
            }
            last = Some(hi);
            summary_push(&mut s, hi, v.as_ref());
        }
        let version = self.new_data_version()?;
        self.bm_put_packed(db, key, version, list.iter().map(|&(hi, b)| (hi, b)))?;
        self.put_new_bitmap_meta(db, key, version, s)?;
        Ok(Some(version))
    }
}
