//! Where a container's bytes come from, first match wins: this `Txn`'s
//! own writes ([`WrittenBlock`]), the write-back tier's dirty map, the
//! container cache, the `Kv` (the memory tier serves hot keys; whole-key
//! readers fill the container cache on the way).
//! Contract: a read sees the block as this `Txn` would commit it; the
//! container cache holds committed state only, so it serves a key version
//! only while this `Txn` has not written it ([`Txn::bm_clean`]).

use std::ops::Bound;
use std::sync::Arc;

use roaringd_bitmap::ContainerBuf;

use crate::error::{Result, StoreError};
use crate::keys;
use crate::meta::BitmapSummary;
use crate::txn::Txn;

use super::block_facts::BlockFacts;
use super::bytes::{view, Bytes};
use super::container_cache::{held_charge, padded_with, Held, PAD};
use super::page::{self, Unpacked};
use super::stream::FillScan;
use super::summary::key_bytes;
use super::txn_state::WrittenBlock;

impl Txn {
    /// The bytes of container `hi` of a key version: with
    /// this `Txn`'s own writes to the block when it made any, else from
    /// the container cache where a set operation left the block (or a
    /// directory without it: "absent"), else the `Kv`, whose memory tier
    /// holds hot keys (nothing is cached on the way). `s`: the version's
    /// summary, when the caller has it.
    pub(super) fn bm_get(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        hi: u16,
        s: Option<&BitmapSummary>,
    ) -> Result<Option<Bytes>> {
        match self.bm.written.get(&(db, version, hi)) {
            Some(WrittenBlock::Gone) => return Ok(None),
            Some(WrittenBlock::Container(a)) => return Ok(Some(Bytes::Shared(Arc::clone(a)))),
            None => {}
        }
        if !self.inner.dirty.is_empty() {
            let mk = keys::KeyBuf::meta(db, key);
            // A whole dirty key (a TR.BITOP result) has nothing in the
            // `Kv` or the cache yet: a block it lacks is absent. A key
            // this `Txn` absorbed is read from its overlay instead: the
            // dirty entry stays until the commit, and once a TR.BITOP
            // rewrote the key in place (`written` dropped) it is stale.
            if !self.bm.has_absorbed(&mk) {
                if let Some(b) = self.inner.dirty.block(&mk, version, hi) {
                    return Ok(b.map(|b| Bytes::Shared(b.bytes)));
                }
            }
        }
        if !self.data_overlay_is_empty()
            && self.data_overlay_has_prefix(&keys::data_prefix(db, key, version))
        {
            return Ok(self.bm_block_at(db, key, version, hi)?.map(Bytes::Owned));
        }
        // Outside the summary's extremes (or in an empty key, a new one
        // included) the block is absent: no read. A stored block there
        // would be one this `Txn` emptied, which `written` answered above.
        if s.is_some_and(|s| !summary_may_hold(s, hi)) {
            return Ok(None);
        }
        // A point read: the memory tier holds the key's stored bytes; the
        // container cache serves it where a set operation filled it, and
        // is filled here only for a big key (many keys filling it per point
        // read churned it for nothing; a big key's containers are worth
        // sharing rather than copying out of the tier on every read).
        let fill = s.is_some_and(super::summary::read_through_cache);
        self.bm_get_stored(db, key, version, hi, fill)
    }

    /// Container `hi` of a key version as this `Txn` sees it: from the
    /// first entry at or after the block (one seek, see [`super::page`]),
    /// which is its single, a page holding it, or another block's entry
    /// (absent).
    fn bm_block_at(&self, db: u16, key: &[u8], version: u64, hi: u16) -> Result<Option<Vec<u8>>> {
        let sub = hi.to_be_bytes();
        // The first entry is looked at in place (the memory tier lends
        // it): only the container's bytes are copied out.
        let first = self.data_first_with(db, key, version, Bound::Included(&sub), |at, v| {
            let [a, b] = at[..] else {
                return Err(StoreError::corrupt(
                    "a bitmap data entry whose subkey is not a block",
                ));
            };
            let k = u16::from_be_bytes([a, b]);
            if page::is_page(v) {
                return page::find(k, v, hi);
            }
            Ok((k == hi).then(|| v.to_vec()))
        })?;
        Ok(first.transpose()?.flatten())
    }

    /// As [`Txn::bm_get`] for a block this `Txn` has not written. The
    /// container cache answers when it holds the block (or a directory
    /// that lacks it); else the `Kv` (the memory tier) does, and with
    /// `fill` the block then enters the container cache (whole-key
    /// readers: set operations).
    pub(super) fn bm_get_stored(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        hi: u16,
        fill: bool,
    ) -> Result<Option<Bytes>> {
        let cc = &self.inner.ccache;
        if !cc.enabled() {
            return Ok(self.bm_block_at(db, key, version, hi)?.map(Bytes::Owned));
        }
        if let Some(b) = cc.container(version, hi) {
            return Ok(Some(Bytes::Shared(b)));
        }
        if let Some(d) = cc.dir(version) {
            if d.binary_search(&hi).is_err() {
                return Ok(None);
            }
        }
        if !fill {
            return Ok(self.bm_block_at(db, key, version, hi)?.map(Bytes::Owned));
        }
        let snap = cc.snapshot(version);
        match self.bm_block_at(db, key, version, hi)? {
            Some(v) => {
                // Validated once here (see `ContainerBytes for Bytes`).
                let facts = BlockFacts::of(view(&v)?.as_ref());
                let a = padded_with(&v, facts);
                cc.fill_container(version, hi, Arc::clone(&a), snap);
                Ok(Some(Bytes::Shared(a)))
            }
            None => Ok(None),
        }
    }

    /// Key version `version` (summary `s`) held whole, cached as such:
    /// built from its cached directory and containers, each read (and
    /// cached) first where it is not. `None` when the whole is too big to
    /// cache, or a read fails or is not cached (the caller streams the key
    /// then, which reports the error). The caller guarantees this `Txn` has
    /// not written the key ([`Txn::bm_clean`]).
    pub(super) fn bm_hold(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        s: &BitmapSummary,
    ) -> Option<Held> {
        let cc = &self.inner.ccache;
        let n = usize::try_from(s.containers).ok()?;
        let bytes = usize::try_from(key_bytes(s)).ok()? + n * (PAD + 4);
        if !cc.admits(held_charge(n, bytes)) {
            return None;
        }
        let snap = cc.snapshot(version);
        let d = cc
            .dir(version)
            .or_else(|| self.bm_warm(db, key, version, s))?;
        let mut all = Vec::with_capacity(d.len());
        for &b in d.iter() {
            let c = match cc.container(version, b) {
                Some(c) => c,
                None => match self.bm_get_stored(db, key, version, b, true) {
                    Ok(Some(Bytes::Shared(c))) => c,
                    _ => return None,
                },
            };
            all.push((b, c));
        }
        let held: Held = all.into();
        cc.fill_held(version, Arc::clone(&held), snap);
        Some(held)
    }

    /// Reads a whole small key version into the container cache (its
    /// containers and directory) and returns the directory; `None` when
    /// the key is too big to warm (over 1/64 of the budget or 4,096
    /// containers), the scan failed, or a racing commit refused the fill.
    /// The caller guarantees this `Txn` has no pending writes to the key.
    pub(super) fn bm_warm(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        s: &BitmapSummary,
    ) -> Option<Arc<[u16]>> {
        let cc = &self.inner.ccache;
        if s.containers > 4096 || key_bytes(s) > cc.capacity() / 64 {
            return None;
        }
        let scan = FillScan {
            inner: Unpacked::new(
                self.data_iter(db, key, version, None, false),
                false,
                (0, u16::MAX),
            ),
            cache: cc,
            version,
            snap: cc.snapshot(version),
            dir: Some(Vec::new()),
        };
        for e in scan {
            e.ok()?;
        }
        cc.dir(version)
    }

    /// The container of block `hi` of a key version, owned.
    pub(super) fn bm_container(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        hi: u16,
        s: Option<&BitmapSummary>,
    ) -> Result<Option<ContainerBuf>> {
        match self.bm_get(db, key, version, hi, s)? {
            Some(b) => Ok(Some(view(&b)?.to_buf())),
            None => Ok(None),
        }
    }

    /// True when the container cache may serve key version `version` to
    /// this `Txn`: the cache is on and this `Txn` has not written the key
    /// (the cache holds committed state only).
    pub(super) fn bm_clean(&self, db: u16, key: &[u8], version: u64) -> bool {
        // A stream scans the `Kv`, which lacks a dirty key's edits: a
        // `keep_dirty` transaction never streams a key it did not absorb
        // (the server's rows marked `TierUse::KeepDirty` are point and summary reads only),
        // nor does TR.BITOP stream the destination it kept dirty.
        debug_assert!(
            (!self.bm.keep_dirty && self.bm.keep_dest.is_none()) || !self.dirty_unabsorbed(db, key),
            "keep_dirty stream of a dirty key"
        );
        self.inner.ccache.enabled()
            && (self.data_overlay_is_empty()
                || !self.data_overlay_has_prefix(&keys::data_prefix(db, key, version)))
    }
}

/// False when summary `s` rules block `hi` out: the key is empty or the
/// block lies outside its extremes' blocks.
fn summary_may_hold(s: &BitmapSummary, hi: u16) -> bool {
    s.card > 0 && (s.min >> 16) as u16 <= hi && hi <= (s.max >> 16) as u16
}
