//! How a container's new content is stored ([`Txn::bm_put`]): a rewrite of
//! the entry that holds it (a page or a single, see `page`); an emptied
//! container deleted. Small edits of big containers are not stored here one by one:
//! the write-back tier keeps them (`write_back`), and this path writes a
//! container whole.
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
use super::page;
use super::summary::{census, container_sum, Edit};
use super::txn_state::WrittenBlock;

/// Counts the edit of block `hi` from `old` to `new` in the summary of `e`:
/// census, and the offsets' sum (`sum_delta` when the caller knows it,
/// else computed from both containers). The extremes are the caller's
/// ([`Txn::bm_settle_extremes`]).
fn account(
    e: &mut Edit,
    hi: u16,
    (old, new): (Option<ContainerRef<'_>>, &ContainerBuf),
    sum_delta: Option<i128>,
) {
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
}

/// The edits of several blocks of one key, ascending, on their way to the
/// store (range writes through [`Txn::bm_edit_blocks`], writes of listed
/// bits): the summary's state before them, what each edited block holds
/// now, the edits' own extremes, and the changed containers not yet placed.
pub(super) struct Edits {
    before: (bool, u32, u32),
    edited: Vec<(u16, bool)>,
    new_min: Option<u32>,
    new_max: Option<u32>,
    chunk: Vec<(u16, Option<ContainerBuf>)>,
    chunk_bytes: usize,
}

impl Edits {
    /// Edits of the key whose summary is in `e` now.
    pub(super) fn new(e: &Edit) -> Self {
        Edits {
            before: (e.s.card == 0, e.s.min, e.s.max),
            edited: Vec::new(),
            new_min: None,
            new_max: None,
            chunk: Vec::new(),
            chunk_bytes: 0,
        }
    }

    /// Notes that block `hi` (above every block noted before) holds `new`.
    fn note(&mut self, hi: u16, new: &ContainerBuf) {
        if let (Some(lo), Some(up)) = (new.as_ref().min(), new.as_ref().max()) {
            self.new_min = self.new_min.or(Some(join(hi, lo)));
            self.new_max = Some(join(hi, up));
        }
        self.edited.push((hi, !new.is_empty()));
    }
}

impl Txn {
    /// Adds the edit of block `hi` from `old` to `new` to `edits`: counted
    /// in the summary at
    /// once, queued for [`Txn::bm_place_many`] (stored once about
    /// [`EDIT_CHUNK_BYTES`] are queued, and by [`Txn::bm_finish_edits`]).
    /// `sum_delta`: the change of the offsets' sum when the caller knows it.
    ///
    /// # Errors
    /// `Io`, `Corrupt`.
    pub(super) fn bm_edit(
        &mut self,
        (db, key, e): (u16, &[u8], &mut Edit),
        edits: &mut Edits,
        (hi, old, new): (u16, Option<ContainerRef<'_>>, ContainerBuf),
        sum_delta: Option<i128>,
    ) -> Result<()> {
        account(e, hi, (old, &new), sum_delta);
        edits.note(hi, &new);
        edits.chunk_bytes += new.as_bytes().len();
        edits.chunk.push((hi, (!new.is_empty()).then_some(new)));
        if edits.chunk_bytes >= EDIT_CHUNK_BYTES {
            self.bm_store_chunk(db, key, e, std::mem::take(&mut edits.chunk))?;
            edits.chunk_bytes = 0;
        }
        Ok(())
    }

    /// Stores what `edits` still queues and settles the summary's extremes.
    ///
    /// # Errors
    /// `Io`, `Corrupt`.
    pub(super) fn bm_finish_edits(
        &mut self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        mut edits: Edits,
    ) -> Result<()> {
        self.bm_store_chunk(db, key, e, std::mem::take(&mut edits.chunk))?;
        if edits.edited.is_empty() {
            return Ok(());
        }
        self.bm_settle_extremes(
            db,
            key,
            e,
            edits.before,
            &edits.edited,
            (edits.new_min, edits.new_max),
        )
    }

    /// Replaces container `hi` (`old` = its previous content, `None` when
    /// absent) by `new`, keeping the summary exact: the entry that holds
    /// the block is rewritten (the block deleted from it when `new` is
    /// empty). `sum_delta`: the change of the offsets' sum when the caller knows
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
        (old, new): (Option<ContainerRef<'_>>, &ContainerBuf),
        (sum_delta, facts): (Option<i128>, Option<BlockFacts>),
    ) -> Result<()> {
        let before = (e.s.card == 0, e.s.min, e.s.max);
        account(e, hi, (old, new), sum_delta);
        let version = e.meta.version;
        if !(new.is_empty() && old.is_none()) {
            let stored = (!new.is_empty()).then(|| new.as_bytes());
            let dk = self.bm_place(db, key, version, hi, stored)?;
            let now = stored.map(|b| padded_with(b, facts));
            self.bm_note_stored(db, (version, hi, dk), now);
        }
        let new_min = new.as_ref().min().map(|lo| join(hi, lo));
        let new_max = new.as_ref().max().map(|lo| join(hi, lo));
        self.bm_settle_extremes(
            db,
            key,
            e,
            before,
            &[(hi, !new.is_empty())],
            (new_min, new_max),
        )
    }

    /// Sets the summary's extremes after edits of the blocks `edited`
    /// (ascending, each with whether it still holds a container), given
    /// the summary's state before them (`before`: empty, min, max) and the
    /// smallest and largest value the edited blocks hold now. A seek past
    /// the edits only where an edit emptied the block of the old minimum
    /// (or maximum); the census must be exact already.
    ///
    /// # Errors
    /// As [`Txn::bm_extreme`].
    fn bm_settle_extremes(
        &self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        (was_empty, old_min, old_max): (bool, u32, u32),
        edited: &[(u16, bool)],
        (new_min, new_max): (Option<u32>, Option<u32>),
    ) -> Result<()> {
        if e.s.card == 0 {
            e.s.min = 0;
            e.s.max = 0;
            return Ok(());
        }
        if was_empty {
            e.s.min = new_min.unwrap_or(0);
            e.s.max = new_max.unwrap_or(0);
            return Ok(());
        }
        let state = |v: u32| {
            edited
                .binary_search_by_key(&((v >> 16) as u16), |&(b, _)| b)
                .ok()
                .map(|i| edited[i].1)
        };
        let s = e.s;
        let version = e.meta.version;
        // One extreme (`upward`: the maximum). The old one's block untouched
        // or still holding values: the edits' own extreme decides; emptied:
        // a block past it (before it, for the maximum) that no edit touched
        // may hold the new one.
        let settle = |old: u32, new: Option<u32>, upward: bool| -> Result<Option<u32>> {
            let pick = |a: u32, b: u32| if upward { a.max(b) } else { a.min(b) };
            Ok(match state(old) {
                None => Some(new.map_or(old, |m| pick(m, old))),
                Some(true) => new,
                Some(false) => {
                    let past =
                        self.bm_extreme(db, key, version, (upward, (old >> 16) as u16), &s)?;
                    match (new, past) {
                        (Some(a), Some(b)) => Some(pick(a, b)),
                        (a, b) => a.or(b),
                    }
                }
            })
        };
        let min = settle(old_min, new_min, false)?;
        let max = settle(old_max, new_max, true)?;
        e.s.min = min.unwrap_or(0);
        e.s.max = max.unwrap_or(0);
        Ok(())
    }

    /// Stores container `hi` of a key version as `new` (`None`: deletes
    /// it): [`Txn::bm_place_many`] of one block. Returns the data key of the
    /// entry that holds (or held) the block.
    ///
    /// # Errors
    /// As [`Txn::bm_place_many`].
    pub(super) fn bm_place(
        &mut self,
        db: u16,
        key: &[u8],
        version: u64,
        hi: u16,
        new: Option<&[u8]>,
    ) -> Result<Vec<u8>> {
        let mut dks = self.bm_place_many(db, key, version, &[(hi, new)])?;
        Ok(dks.pop().unwrap_or_default())
    }

    /// Stores containers of a key version in the packed layout
    /// ([`super::page`]): `edits` (ascending blocks) give each block's new
    /// container (`None`: deleted). The edits are taken entry by entry:
    /// the first entry at or after an edited block, with every edit up to
    /// its key, is read once, edited and packed again (split past a page's
    /// size, its key moved when its last block changes) when an edit falls
    /// inside its interval, or when a small container can join it (a page
    /// or a small single); edits past every entry join the key's last
    /// entry the same way; other edits are packed on their own, in the gap
    /// before the entry. Returns, per edit, the data key of the entry that
    /// holds (or held) its block.
    ///
    /// # Errors
    /// `Io`; `Corrupt` when an entry read breaks the layout.
    pub(super) fn bm_place_many(
        &mut self,
        db: u16,
        key: &[u8],
        version: u64,
        edits: &[(u16, Option<&[u8]>)],
    ) -> Result<Vec<Vec<u8>>> {
        let joinable = |v: &[u8]| page::is_page(v) || v.len() < page::STANDALONE_BYTES;
        let small = |group: &[(u16, Option<&[u8]>)]| {
            group
                .iter()
                .any(|(_, c)| c.is_some_and(|c| c.len() < page::STANDALONE_BYTES))
        };
        let entry_key = |sub: &[u8]| match *sub {
            [a, b] => Ok(u16::from_be_bytes([a, b])),
            _ => Err(StoreError::corrupt(
                "a bitmap data entry whose subkey is not a block",
            )),
        };
        let mut dks = Vec::with_capacity(edits.len());
        let mut i = 0;
        while i < edits.len() {
            let x = edits[i].0;
            // The entry taking the group, its key and containers, and the
            // group (the edits up to that entry's key).
            let mut base: Option<(u16, page::Containers)> = None;
            let end = match self.data_first(
                db,
                key,
                version,
                Bound::Included(&x.to_be_bytes()),
                false,
            )? {
                Some((sub, v)) => {
                    let k = entry_key(&sub)?;
                    let end = i + edits[i..].partition_point(|&(b, _)| b <= k);
                    let members = page::containers(k, &v)?;
                    // An edit within the entry's interval must go into it
                    // (the entry is split around a big container rather
                    // than overlapped).
                    let first = members.first().map_or(k, |&(b, _)| b);
                    if first <= edits[end - 1].0 || (small(&edits[i..end]) && joinable(&v)) {
                        base = Some((k, members));
                    }
                    end
                }
                None => {
                    if small(&edits[i..]) {
                        if let Some((sub, v)) =
                            self.data_first(db, key, version, Bound::Unbounded, true)?
                        {
                            if sub.len() == 2 && joinable(&v) {
                                let k = entry_key(&sub)?;
                                base = Some((k, page::containers(k, &v)?));
                            }
                        }
                    }
                    edits.len()
                }
            };
            let group = &edits[i..end];
            let (old_key, mut list) = match base {
                Some((k, members)) => (Some(k), members),
                None => (None, Vec::new()),
            };
            list.retain(|(b, _)| group.binary_search_by_key(b, |&(h, _)| h).is_err());
            for &(hi, c) in group {
                if let Some(c) = c {
                    let at = list.partition_point(|&(b, _)| b < hi);
                    list.insert(at, (hi, c.to_vec()));
                }
            }
            let packed = page::pack(&list);
            for &(hi, _) in group {
                let holder = packed
                    .iter()
                    .map(|&(k, _)| k)
                    .find(|&k| k >= hi)
                    .or(old_key)
                    .unwrap_or(hi);
                dks.push(keys::data_key(db, key, version, &holder.to_be_bytes()));
            }
            if let Some(old_key) = old_key {
                if !packed.iter().any(|&(k, _)| k == old_key) {
                    self.data_delete(db, key, version, &old_key.to_be_bytes());
                }
            }
            for (k, v) in packed {
                self.data_put(db, key, version, &k.to_be_bytes(), v);
            }
            i = end;
        }
        Ok(dks)
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
    /// creating absent ones empty. The changed containers are stored page
    /// by page ([`Txn::bm_place_many`], in chunks of about
    /// [`EDIT_CHUNK_BYTES`]: memory stays bounded over any range), and the
    /// summary is kept exact (census and sum per block; the extremes once
    /// at the end, [`Txn::bm_settle_extremes`]).
    ///
    /// # Errors
    /// `Io`, `Corrupt`.
    pub(super) fn bm_edit_blocks(
        &mut self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        blocks: impl IntoIterator<Item = u16>,
        mut f: impl FnMut(u16, &mut ContainerBuf),
    ) -> Result<()> {
        let version = e.meta.version;
        let mut edits = Edits::new(e);
        for hi in blocks {
            let old = self.bm_container(db, key, version, hi, Some(&e.s))?;
            let mut new = old.clone().unwrap_or_default();
            f(hi, &mut new);
            if old.as_ref() == Some(&new) || (old.is_none() && new.is_empty()) {
                continue;
            }
            let old = old.as_ref().map(ContainerBuf::as_ref);
            self.bm_edit((db, key, e), &mut edits, (hi, old, new), None)?;
        }
        self.bm_finish_edits(db, key, e, edits)
    }

    /// Stores a chunk of [`Edits`]: `(block, new container (`None`:
    /// emptied))`, ascending; records the blocks for later reads and the
    /// container cache.
    fn bm_store_chunk(
        &mut self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        chunk: Vec<(u16, Option<ContainerBuf>)>,
    ) -> Result<()> {
        if chunk.is_empty() {
            return Ok(());
        }
        let version = e.meta.version;
        let refs: Vec<(u16, Option<&[u8]>)> = chunk
            .iter()
            .map(|(hi, c)| (*hi, c.as_ref().map(ContainerBuf::as_bytes)))
            .collect();
        let dks = self.bm_place_many(db, key, version, &refs)?;
        for ((hi, c), dk) in chunk.into_iter().zip(dks) {
            let now = c.map(|c| padded_with(c.as_bytes(), None));
            self.bm_note_stored(db, (version, hi, dk), now);
        }
        Ok(())
    }

    /// Records what block `hi` of `version` holds after it was stored in
    /// the entry `dk` (`now`: the container, padded; `None`: deleted): for
    /// later reads in this `Txn` and for the container cache at commit.
    pub(super) fn bm_note_stored(
        &mut self,
        db: u16,
        (version, hi, dk): (u64, u16, Vec<u8>),
        now: Option<Arc<[u8]>>,
    ) {
        if self.inner.ccache.enabled() {
            self.bm
                .cc_pending
                .record_stored((version, hi, dk), now.clone(), false);
        }
        let now = match now {
            Some(a) => WrittenBlock::Container(a),
            None => WrittenBlock::Gone,
        };
        self.bm.written_set((db, version, hi), now);
    }
}

/// Bytes of changed containers [`Txn::bm_edit_blocks`] holds before it
/// stores them.
const EDIT_CHUNK_BYTES: usize = 256 * 1024;
