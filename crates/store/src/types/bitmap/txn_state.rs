//! What a `Txn` keeps for bitmaps beside its overlay ([`BitmapTxnState`],
//! the `Txn`'s one `bm` field), and the hooks the `Txn` calls, so that
//! `txn.rs` knows nothing else of bitmaps: [`BitmapTxnState::sync_log`]
//! when a commit begins, [`BitmapTxnState::prepare_commit`] as it fills its
//! batch, [`BitmapCommit::finish`] once the batch is written,
//! [`BitmapTxnState::writes_nothing`] and [`BitmapTxnState::discard_db`];
//! and [`Txn::absorb_key`](crate::txn::Txn::absorb_key) for a key it
//! locks on demand. Contract: a `Txn` dropped without commit leaves nothing
//! of this state behind (the container cache and the dirty map change only
//! in `finish`, after the batch is written; the write-back tier's edits,
//! which a `Txn` keeping dirty keys makes at once, stay logged: see
//! [`BitmapTxnState::abandon`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Result, StoreError};
use crate::kv::{Durability, Space, WriteBatch};
use crate::store::Inner;

use super::container_cache::{Pending, Prepared};
use super::oplog::{LogChunks, OwnRecords};

/// A bitmap container as a `Txn` left it ([`BitmapTxnState::written`]).
#[derive(Debug)]
pub(super) enum WrittenBlock {
    /// Deleted.
    Gone,
    /// The container as stored now, padded
    /// ([`padded`](super::container_cache::padded)), as the container
    /// cache holds it. The bytes are a `ContainerBuf`'s own encoding (read
    /// back without the full validation, as cache entries are:
    /// [`ContainerBytes`](super::bytes::ContainerBytes)).
    Container(Arc<[u8]>),
}

/// The bitmap state of one `Txn` (see the module docs).
#[derive(Default)]
pub(crate) struct BitmapTxnState {
    /// tr-cache hook: container writes under live versions, for the
    /// container cache at commit.
    pub(super) cc_pending: Pending,
    /// Bitmap containers this `Txn` wrote, by `(db, key version, block)`
    /// (a data version belongs to one key): what the block holds now, so
    /// that a block edited again in the same `Txn` (a pipeline's group,
    /// MULTI/EXEC) is read from here, not by a scan of the overlay merged
    /// with the `Kv`. A block absent from it is read as before. A map
    /// without entries allocates nothing, so a one-command `Txn` pays one
    /// small node at most.
    pub(super) written: BTreeMap<(u16, u64, u16), WrittenBlock>,
    /// Begun by [`Store::begin_keep_dirty`]: dirty keys are not absorbed,
    /// and a single-bit edit may go to the write-back tier.
    pub(super) keep_dirty: bool,
    /// Begun by [`Store::begin_keeping`]: the meta key of the one key
    /// left dirty, a TR.BITOP destination whose result may go to the
    /// write-back tier.
    pub(super) keep_dest: Option<Vec<u8>>,
    /// Dirty keys absorbed into this `Txn` (meta key, last log seq): their
    /// dirty entries are dropped after the commit.
    pub(super) absorbed: Vec<(Vec<u8>, u64)>,
    /// Meta-space entries outside any key's meta (the `wb` entries).
    pub(super) internal_puts: Vec<Vec<u8>>,
    /// The write-back tier logged an edit of this `Txn` to the shared
    /// log: the commit syncs the log under `always`.
    pub(super) oplog_appended: bool,
    /// Edits the write-back tier took for this `Txn` ([`Txn::tier_edits`]).
    pub(super) tier_edits: u64,
    /// Begun by [`Store::begin_exec`]: the tier's records of this `Txn`,
    /// which its commit writes in its own batch (all or none of an EXEC
    /// survives a crash).
    pub(super) own: Option<OwnRecords>,
    /// Expire times set on dirty keys without absorbing them
    /// ([`Txn::bm_expire_dirty`](crate::txn::Txn)), one per key.
    pub(super) expiries: Vec<DirtyExpiry>,
    /// An absorb could not place a dirty block (`Io` or `Corrupt` reading
    /// the page it goes to): the commit returns this error and writes
    /// nothing, so the key stays dirty and nothing of it is lost.
    pub(super) failed: Option<StoreError>,
}

/// An expire time set on a dirty key that a `Txn` has not absorbed.
#[derive(Debug)]
pub(crate) struct DirtyExpiry {
    /// The key's meta key.
    pub(crate) mk: Vec<u8>,
    /// Its expire time as stored (0: none).
    pub(crate) old: u64,
    /// The new one (0: none).
    pub(crate) new: u64,
    /// The key's stored meta with the new expire time.
    pub(crate) stored: Vec<u8>,
}

/// What a commit does for bitmaps once its batch is written
/// ([`BitmapTxnState::prepare_commit`]).
#[must_use]
pub(crate) struct BitmapCommit {
    cc: Prepared,
    absorbed: Vec<(Vec<u8>, u64)>,
    /// Dirty keys' new expire times, by meta key.
    expiries: Vec<(Vec<u8>, u64)>,
    /// The `Txn`'s own log records, in the batch.
    own: Option<LogChunks>,
}

impl BitmapTxnState {
    /// For [`Store::begin_keep_dirty`]: dirty keys stay dirty, and a
    /// TR.SETBIT may go to the write-back tier.
    pub(crate) fn keep_dirty(&mut self) {
        self.keep_dirty = true;
    }

    /// For [`Store::begin_exec`]: the tier's records go to the `Txn`'s
    /// own batch.
    pub(crate) fn own_records(&mut self) {
        self.own = Some(OwnRecords::default());
    }

    /// Notes a record of the tier appended for this `Txn`.
    pub(super) fn logged(&mut self) {
        self.tier_edits += 1;
        // Own records are synced with the commit's batch.
        if self.own.is_none() {
            self.oplog_appended = true;
        }
    }

    /// When the `Txn` is dropped without its commit: its own records are
    /// written as a batch of their own, since the dirty map already holds
    /// their edits (a panic isolated by the server; errors are ignored,
    /// as the `Kv` that refuses them refuses every later write).
    pub(crate) fn abandon(&mut self, inner: &Inner) {
        if let Some(own) = self.own.take().filter(|o| !o.is_empty()) {
            if let Some(log) = inner.dirty.log.lock().as_mut() {
                let _ = log.write_own(own);
            }
        }
    }

    /// For [`Store::begin_keeping`]: `mk` (a meta key), a TR.BITOP
    /// destination, stays dirty.
    pub(crate) fn keep_dest(&mut self, mk: Vec<u8>) {
        self.keep_dest = Some(mk);
    }

    /// Sets what block `(db, version, hi)` holds in this `Txn` after a
    /// write.
    pub(super) fn written_set(&mut self, block: (u16, u64, u16), now: WrittenBlock) {
        self.written.insert(block, now);
    }

    /// Commit hook, before anything: the error an absorb met, if any
    /// (see `failed`).
    ///
    /// # Errors
    /// That error.
    pub(crate) fn check_absorbs(&mut self) -> Result<()> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Commit hook, first of all: when the commit gives `durability`
    /// `Sync` (`always`, unless deferred), syncs the LSM store's journal
    /// when this `Txn` appended to the operation log, whose records it
    /// holds (a write the tier took writes nothing else, so this precedes
    /// the check for an empty commit).
    ///
    /// # Errors
    /// `Io` when the sync fails.
    pub(crate) fn sync_log(&self, inner: &Inner, durability: Durability) -> Result<()> {
        if self.oplog_appended && durability == Durability::Sync {
            inner.persist()?;
        }
        Ok(())
    }

    /// True when there is nothing of bitmaps to commit beyond the overlay
    /// and the tier's own state. Expire times set on dirty keys do not
    /// count: like the tier's edits they hide nothing from it (this `Txn`
    /// reads them over the dirty map), so a later edit may still go to the
    /// tier, and they touch their keys, which makes the commit write them.
    pub(crate) fn writes_nothing(&self) -> bool {
        self.internal_puts.is_empty() && self.cc_pending.is_empty()
    }

    /// True when this `Txn` absorbed dirty key `mk` (a meta key).
    pub(crate) fn has_absorbed(&self, mk: &[u8]) -> bool {
        self.absorbed.iter().any(|(k, _)| k.as_slice() == mk)
    }

    /// The expire time this `Txn` set on dirty key `mk` in place, if any
    /// (its `old`, the stored time, is what the dirty entry keeps until
    /// the commit).
    pub(crate) fn pending_expiry(&self, mk: &[u8]) -> Option<&DirtyExpiry> {
        self.expiries.iter().find(|e| e.mk == mk)
    }

    /// Takes back the expire time set on dirty key `mk`, as the key is
    /// absorbed (its meta then goes through the overlay).
    pub(super) fn take_expiry(&mut self, mk: &[u8]) -> Option<DirtyExpiry> {
        let i = self.expiries.iter().position(|e| e.mk == mk)?;
        Some(self.expiries.swap_remove(i))
    }

    /// Commit hook, as the meta overlay goes into the batch: the expire
    /// times set on dirty keys. The caller writes each one's stored meta
    /// and expiry index entries; [`BitmapCommit::finish`] then sets them
    /// in the dirty map.
    pub(crate) fn expiries(&self) -> &[DirtyExpiry] {
        &self.expiries
    }

    /// Commit hook, while the batch is filled and before the data overlay
    /// goes into it (`value_of` reads a data key's pending write, as the
    /// container cache's `prepare` says): puts the `wb` entries of
    /// absorbed keys into `batch` and prepares the container cache's
    /// updates. The result's [`BitmapCommit::finish`] runs once the batch
    /// is written.
    pub(crate) fn prepare_commit<'a>(
        &mut self,
        inner: &Inner,
        batch: &mut WriteBatch,
        value_of: impl Fn(&[u8]) -> Option<Option<&'a [u8]>>,
    ) -> BitmapCommit {
        for k in std::mem::take(&mut self.internal_puts) {
            batch.put(Space::Meta, k, Vec::new());
        }
        let own = self
            .own
            .take()
            .filter(|o| !o.is_empty())
            .map(|o| o.put_into(batch));
        // tr-cache hook: new bytes for cached containers, applied after the write.
        let cc = inner
            .ccache
            .prepare(std::mem::take(&mut self.cc_pending), value_of);
        BitmapCommit {
            cc,
            absorbed: std::mem::take(&mut self.absorbed),
            expiries: std::mem::take(&mut self.expiries)
                .into_iter()
                .map(|e| (e.mk, e.new))
                .collect(),
            own,
        }
    }

    /// Forgets what this `Txn` wrote to bitmaps of `db` (every database
    /// when `None`), as a flush discards its pending writes.
    pub(crate) fn discard_db(&mut self, db: Option<u16>) {
        self.written
            .retain(|&(d, _, _), _| db.is_some_and(|db| d != db));
    }
}

impl BitmapCommit {
    /// Commit hook, after the batch is written: the container cache takes
    /// the new bytes, and the absorbed keys' dirty entries are dropped
    /// (unless edited again since).
    pub(crate) fn finish(self, inner: &Inner) {
        self.cc.apply(&inner.ccache); // tr-cache hook
        if let Some(c) = self.own {
            if let Some(log) = inner.dirty.log.lock().as_mut() {
                log.written(c);
            }
        }
        for (mk, seq) in self.absorbed {
            inner.dirty.remove_if(&mk, seq);
        }
        for (mk, at) in self.expiries {
            inner.dirty.set_expiry(&mk, at);
        }
    }
}
