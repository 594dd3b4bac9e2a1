//! How a container's new content is stored ([`Txn::bm_put`]): a small edit
//! of a big container as a delta entry, anything else as a rewrite of the
//! container entry with its deltas deleted, an emptied container deleted.
//! Contract: the [`Edit`]'s summary stays exact (census, sum, extremes: the
//! successor of an emptied extreme is found by one seek), the container
//! cache gets the new bytes at commit, and [`WrittenBlock`] records what
//! the block holds now, for later reads in the same `Txn`.

use std::ops::Bound;
use std::sync::Arc;

use roaringd_bitmap::{ContainerBuf, ContainerRef};

use crate::error::{Result, StoreError};
use crate::keys;
use crate::txn::Txn;

use super::block_facts::BlockFacts;
use super::bytes::join;
use super::container_cache::padded_with;
use super::delta;
use super::page;
use super::summary::{census, container_sum, Edit};
use super::txn_state::WrittenBlock;

impl Txn {
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
                .record_delta((version, hi, dk), Arc::clone(&container))
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
        let version = e.meta.version;
        // Only a single (see `page`) takes deltas: one with some already,
        // or one too big for a page.
        let single = old.is_some_and(|o| n > 0 || o.byte_len() >= page::STANDALONE_BYTES);
        match ops {
            Some(ops) if single && Self::bm_delta_fits((n, ops, new)) => {
                self.bm_put_delta(db, key, e, hi, n, (ops, new, facts));
            }
            _ if new.is_empty() && old.is_none() => {}
            _ => {
                let stored = (!new.is_empty()).then(|| new.as_bytes());
                let others_have_deltas = e.s.deltas > u64::from(n);
                let dk = self.bm_place(db, key, version, hi, stored, others_have_deltas)?;
                self.bm_drop_deltas(db, key, e, hi, n);
                let now = stored.map(|b| padded_with(b, 0, facts));
                if self.inner.ccache.enabled() {
                    self.bm
                        .cc_pending
                        .record_stored((version, hi, dk), now.clone(), false);
                }
                let now = match now {
                    Some(a) => WrittenBlock::Folded(a, None),
                    None => WrittenBlock::Gone,
                };
                self.bm.written_set((db, version, hi), now);
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

    /// Stores container `hi` of a key version as `new` (`None`: deletes
    /// it) in the packed layout ([`super::page`]): the entry whose interval
    /// takes the block (holding it, or a page around it) is edited and
    /// packed again; another small container the key lacks
    /// joins the first entry after it (or the last entry, when it goes past
    /// every block) where that entry is a page or a small single, else it
    /// is a single of its own. `others_have_deltas`: another block of the
    /// key has delta entries (only after singles; such a small single,
    /// which older stores wrote, is not joined). Returns the data key of
    /// the entry that holds (or held) the block. Delta entries of the block
    /// are the caller's to delete.
    ///
    /// # Errors
    /// `Io`; `Corrupt` when an entry read breaks the layout.
    pub(super) fn bm_place(
        &mut self,
        db: u16,
        key: &[u8],
        version: u64,
        hi: u16,
        new: Option<&[u8]>,
        others_have_deltas: bool,
    ) -> Result<Vec<u8>> {
        let small = new.is_some_and(|c| c.len() < page::STANDALONE_BYTES);
        let joinable = |v: &[u8]| {
            page::is_page(v) || (v.len() < page::STANDALONE_BYTES && !others_have_deltas)
        };
        let entry_key = |sub: &[u8]| match *sub {
            [a, b] => Ok(u16::from_be_bytes([a, b])),
            _ => Err(StoreError::corrupt(
                "bitmap delta entry without its container",
            )),
        };
        // The entry taking the block: its key and containers.
        let mut base: Option<(u16, page::Containers)> = None;
        match self.data_first(db, key, version, Bound::Included(&hi.to_be_bytes()), false)? {
            Some((sub, v)) => {
                let k = entry_key(&sub)?;
                let members = page::containers(k, &v)?;
                // Within the entry's interval (holding the block or not),
                // the block must go into it: the entry is split around a
                // big container rather than overlapped.
                let first = members.first().map_or(k, |&(b, _)| b);
                if first <= hi || (small && joinable(&v)) {
                    base = Some((k, members));
                }
            }
            None if small => {
                if let Some((sub, v)) = self.data_first(db, key, version, Bound::Unbounded, true)? {
                    if sub.len() == 2 && joinable(&v) {
                        let k = entry_key(&sub)?;
                        base = Some((k, page::containers(k, &v)?));
                    }
                }
            }
            None => {}
        }
        let (old_key, mut list) = match base {
            Some((k, members)) => (Some(k), members),
            None => (None, Vec::new()),
        };
        list.retain(|&(b, _)| b != hi);
        if let Some(c) = new {
            let at = list.partition_point(|&(b, _)| b < hi);
            list.insert(at, (hi, c.to_vec()));
        }
        let packed = page::pack(&list);
        let holder = packed
            .iter()
            .map(|&(k, _)| k)
            .find(|&k| k >= hi)
            .or(old_key)
            .unwrap_or(hi);
        if let Some(old_key) = old_key {
            if !packed.iter().any(|&(k, _)| k == old_key) {
                self.data_delete(db, key, version, &old_key.to_be_bytes());
            }
        }
        for (k, v) in packed {
            self.data_put(db, key, version, &k.to_be_bytes(), v);
        }
        Ok(keys::data_key(db, key, version, &holder.to_be_bytes()))
    }

    /// Writes the containers `all` (ascending, none empty) of `version`, a
    /// fresh version, packed ([`super::page`]); the overlay spills as it
    /// grows ([`Txn::data_put_fresh`]), so a key of any size is written in
    /// bounded memory.
    ///
    /// # Errors
    /// `Io` when a spill fails.
    pub(super) fn bm_put_packed<'b>(
        &mut self,
        db: u16,
        key: &[u8],
        version: u64,
        all: impl IntoIterator<Item = (u16, &'b [u8])>,
    ) -> Result<()> {
        let mut packer = page::Packer::default();
        let mut closed = Vec::new();
        for (hi, c) in all {
            packer.push(hi, c, &mut closed);
            for (k, v) in closed.drain(..) {
                self.data_put_fresh(db, key, version, &k.to_be_bytes(), v)?;
            }
        }
        packer.finish(&mut closed);
        for (k, v) in closed {
            self.data_put_fresh(db, key, version, &k.to_be_bytes(), v)?;
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
