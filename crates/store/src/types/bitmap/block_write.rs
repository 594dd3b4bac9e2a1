//! How a container's new content is stored ([`Txn::bm_put`]): a small edit
//! of a big container as a delta entry, anything else as a rewrite of the
//! container entry with its deltas deleted, an emptied container deleted.
//! Contract: the [`Edit`]'s summary stays exact (census, sum, extremes: the
//! successor of an emptied extreme is found by one seek), the container
//! cache gets the new bytes at commit, and [`WrittenBlock`] records what
//! the block holds now, for later reads in the same `Txn`.

use std::sync::Arc;

use roaringd_bitmap::{ContainerBuf, ContainerRef};

use crate::error::Result;
use crate::keys;
use crate::txn::Txn;

use super::block_facts::BlockFacts;
use super::bytes::join;
use super::container_cache::padded_with;
use super::delta;
use super::summary::{census, container_sum, Edit};
use super::txn_state::WrittenBlock;

impl Txn {
    /// Records a container write under a live version for the container
    /// cache (applied at commit).
    pub(super) fn bm_note_write(&mut self, db: u16, key: &[u8], version: u64, hi: u16) {
        if self.inner.ccache.enabled() {
            let dk = keys::data_key(db, key, version, &hi.to_be_bytes());
            self.bm.cc_pending.record(version, hi, dk);
        }
    }

    /// Stores `ops` (the bits that change, in order) as delta number `seq`
    /// of container `hi`, whose content after them is `new` (with `facts`,
    /// when known).
    fn bm_put_delta(
        &mut self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        hi: u16,
        seq: u16,
        (ops, new, facts): (&[(u16, bool)], &ContainerBuf, Option<BlockFacts>),
    ) {
        let sub = delta::delta_sub(hi, seq);
        let version = e.meta.version;
        self.data_put(db, key, version, &sub, delta::encode_ops(ops));
        e.s.deltas += 1;
        let container = padded_with(new.as_bytes(), seq + 1, facts);
        let record = self.inner.ccache.enabled().then(|| {
            let dk = keys::data_key(db, key, version, &sub);
            self.bm
                .cc_pending
                .record_known((version, hi, dk), Arc::clone(&container), true)
        });
        self.bm
            .written_set((db, version, hi), WrittenBlock::Folded(container, record));
    }

    /// Deletes the `n` delta entries of container `hi` (its container
    /// entry is rewritten or deleted in the same batch).
    pub(super) fn bm_drop_deltas(&mut self, db: u16, key: &[u8], e: &mut Edit, hi: u16, n: u16) {
        for seq in 0..n {
            self.data_delete(db, key, e.meta.version, &delta::delta_sub(hi, seq));
        }
        e.s.deltas = e.s.deltas.saturating_sub(u64::from(n));
    }

    /// True when a write of `ops` to a container (now `new`, with `n`
    /// deltas stored) is kept as a delta entry rather than a rewrite: the
    /// container is big, it has room for one more delta, and the edit is
    /// small. A block may take several deltas in one `Txn`: the container
    /// cache applies its records in order, and later reads in the `Txn`
    /// find the block in [`BitmapTxnState::written`](super::txn_state::BitmapTxnState::written).
    fn bm_delta_fits((n, ops, new): (u16, &[(u16, bool)], &ContainerBuf)) -> bool {
        !ops.is_empty()
            && ops.len() <= delta::MAX_DELTA_OPS
            && n + 1 < delta::MAX_DELTAS
            && new.as_bytes().len() >= delta::DELTA_MIN_BYTES
            && !new.is_empty()
    }

    /// Replaces container `hi` (`old` = its previous content, `None` when
    /// absent, stored with `n` delta entries) by `new`, keeping the summary
    /// exact. `ops`: the bits that changed, in order, when the caller has
    /// them: a small edit of a big container is then stored as a delta
    /// entry ([`Txn::bm_delta_fits`]); otherwise the container entry is
    /// rewritten (or deleted when `new` is empty) and its deltas deleted.
    /// `sum_delta`: the change of the offsets' sum when the caller knows
    /// it (single-bit edits), else it is computed from both containers.
    /// `facts`: `new`'s [`BlockFacts`] when the caller has them at no cost
    /// (a single-bit edit of a cached container), for the container
    /// cache's copy of the block.
    pub(super) fn bm_put(
        &mut self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        hi: u16,
        (old, new, n): (Option<ContainerRef<'_>>, &ContainerBuf, u16),
        (ops, sum_delta, facts): (Option<delta::Ops<'_>>, Option<i128>, Option<BlockFacts>),
    ) -> Result<()> {
        let was_empty = e.s.card == 0;
        let delta = match sum_delta {
            Some(d) => d,
            None => {
                i128::from(container_sum(hi, new.as_ref()))
                    - old.map_or(0, |o| i128::from(container_sum(hi, o)))
            }
        };
        if let Some(o) = old {
            census(&mut e.s, o, false);
        }
        census(&mut e.s, new.as_ref(), true);
        e.s.sum = u64::try_from(i128::from(e.s.sum) + delta).unwrap_or(0);
        let sub = hi.to_be_bytes();
        let version = e.meta.version;
        match ops {
            Some(ops) if old.is_some() && Self::bm_delta_fits((n, ops, new)) => {
                self.bm_put_delta(db, key, e, hi, n, (ops, new, facts));
            }
            _ if new.is_empty() => {
                if old.is_some() {
                    self.data_delete(db, key, version, &sub);
                    self.bm_drop_deltas(db, key, e, hi, n);
                    self.bm_note_write(db, key, version, hi);
                    self.bm.written_set((db, version, hi), WrittenBlock::Gone);
                }
            }
            _ => {
                self.data_put(db, key, version, &sub, new.as_bytes().to_vec());
                self.bm_drop_deltas(db, key, e, hi, n);
                match facts.filter(|_| self.inner.ccache.enabled()) {
                    // Known facts: the commit need not parse the bytes
                    // again to cache them with their facts.
                    Some(f) => {
                        let dk = keys::data_key(db, key, version, &sub);
                        let bytes = padded_with(new.as_bytes(), 0, Some(f));
                        self.bm.cc_pending.record_update((version, hi, dk), bytes);
                    }
                    None => self.bm_note_write(db, key, version, hi),
                }
                self.bm.written_set((db, version, hi), WrittenBlock::Entry);
            }
        }
        // Extremes: only the edited block can move them.
        if e.s.card == 0 {
            e.s.min = 0;
            e.s.max = 0;
            return Ok(());
        }
        let new_min = new.as_ref().min().map(|lo| join(hi, lo));
        let new_max = new.as_ref().max().map(|lo| join(hi, lo));
        if was_empty {
            e.s.min = new_min.unwrap_or(0);
            e.s.max = new_max.unwrap_or(0);
            return Ok(());
        }
        let (min_hi, max_hi) = ((e.s.min >> 16) as u16, (e.s.max >> 16) as u16);
        if hi <= min_hi {
            match new_min {
                Some(m) => e.s.min = m,
                None => {
                    let s = e.s;
                    e.s.min = self
                        .bm_extreme(db, key, e.meta.version, (false, hi), &s)?
                        .unwrap_or(0);
                }
            }
        }
        if hi >= max_hi {
            match new_max {
                Some(m) => e.s.max = m,
                None => {
                    let s = e.s;
                    e.s.max = self
                        .bm_extreme(db, key, e.meta.version, (true, hi), &s)?
                        .unwrap_or(0);
                }
            }
        }
        Ok(())
    }

    /// Applies `f` to the container of each block in `blocks` (ascending),
    /// creating absent ones empty.
    pub(super) fn bm_edit_blocks(
        &mut self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        blocks: impl IntoIterator<Item = u16>,
        mut f: impl FnMut(u16, &mut ContainerBuf),
    ) -> Result<()> {
        for hi in blocks {
            let (old, n) = match self.bm_container(db, key, e.meta.version, hi, Some(&e.s))? {
                Some((c, n)) => (Some(c), n),
                None => (None, 0),
            };
            let mut new = old.clone().unwrap_or_default();
            f(hi, &mut new);
            if old.as_ref() != Some(&new) {
                self.bm_put(
                    db,
                    key,
                    e,
                    hi,
                    (old.as_ref().map(ContainerBuf::as_ref), &new, n),
                    (None, None, None),
                )?;
            }
        }
        Ok(())
    }
}
