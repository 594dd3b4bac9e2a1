//! Writes of listed bits: TR.SETBIT, TR.SETBITS / TR.APPENDINTARRAY and
//! TR.CLEARBITS. Contract: each container that changes is read once and
//! stored once, with the other changed containers of the command, page by
//! page (`block_write::Edits`); a
//! `Txn` begun with `Store::begin_keep_dirty` first offers the edit to
//! the write-back tier (`write_back`) and absorbs the key when the tier
//! refuses it.

use roaringd_bitmap::{ContainerBuf, ContainerView};

use crate::error::Result;
use crate::meta::Kind;
use crate::txn::Txn;

use super::block_write::Edits;
use super::bytes::{by_block, cached_facts, split, view};
use super::summary::{summary_push, Edit};

impl Txn {
    /// TR.SETBIT: sets bit `off` to `value`; returns its previous value.
    /// Creates the key even when `value` is false (open point 6).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_setbit(&mut self, db: u16, key: &[u8], off: u32, value: bool) -> Result<bool> {
        if let Some(prev) =
            self.bm_offer_dirty(db, key, |t| t.bm_setbit_dirty(db, key, off, value))?
        {
            return Ok(prev);
        }
        let Some(mut e) = self.bm_open(db, key, true)? else {
            return Ok(false);
        };
        if e.created && value {
            self.bm_create_with(db, key, e, &[off])?;
            return Ok(false);
        }
        let (hi, lo) = split(off);
        let old = self.bm_get(db, key, e.meta.version, hi, Some(&e.s))?;
        let old_facts = old.as_ref().and_then(cached_facts);
        let old = old.as_ref().map(view).transpose()?;
        let old = old.as_ref().map(ContainerView::as_ref);
        let prev = old.is_some_and(|c| c.contains(lo));
        if prev != value {
            let mut new = old.map_or_else(ContainerBuf::default, |c| c.to_buf());
            if value {
                new.insert(lo);
            } else {
                new.remove(lo);
            }
            let d = if value {
                i128::from(off)
            } else {
                -i128::from(off)
            };
            let facts = old_facts.and_then(|f| f.after_flip(new.as_ref(), lo, value));
            self.bm_put(db, key, &mut e, hi, (old, &new), (Some(d), facts))?;
        } else if !e.created {
            return Ok(prev);
        }
        self.bm_finish(db, key, e)?;
        Ok(prev)
    }

    /// TR.SETBITS / TR.APPENDINTARRAY: sets every listed bit; returns the
    /// cardinality after the update.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_setbits(&mut self, db: u16, key: &[u8], offs: &[u32]) -> Result<u64> {
        self.tr_bits(db, key, offs, true).map(|(card, _)| card)
    }

    /// TR.CLEARBITS: clears every listed bit; returns how many changed from
    /// 1 to 0 (a repeated offset counts once). A missing key stays missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_clearbits(&mut self, db: u16, key: &[u8], offs: &[u32]) -> Result<u64> {
        if self.meta_of(db, key, Kind::Bitmap)?.is_none() {
            return Ok(0);
        }
        self.tr_bits(db, key, offs, false)
            .map(|(_, changed)| changed)
    }

    /// Sets or clears the listed bits, container by container; returns
    /// (cardinality after, bits changed).
    fn tr_bits(&mut self, db: u16, key: &[u8], offs: &[u32], set: bool) -> Result<(u64, u64)> {
        let mut sorted = offs.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if let Some(done) =
            self.bm_offer_dirty(db, key, |t| t.bm_bits_dirty(db, key, &sorted, set))?
        {
            return Ok(done);
        }
        let Some(mut e) = self.bm_open(db, key, set)? else {
            return Ok((0, 0));
        };
        if e.created && !sorted.is_empty() {
            let card = self.bm_create_with(db, key, e, &sorted)?;
            return Ok((card, card));
        }
        let mut changed = 0u64;
        // The blocks' new containers are stored together, page by page.
        let mut edits = Edits::new(&e);
        for (hi, group) in by_block(&sorted) {
            let old = self.bm_container(db, key, e.meta.version, hi, Some(&e.s))?;
            let mut new = old.clone().unwrap_or_default();
            let mut delta = 0i128;
            for &v in group {
                let hit = if set {
                    new.insert(v as u16)
                } else {
                    new.remove(v as u16)
                };
                if hit {
                    changed += 1;
                    delta += i128::from(v);
                }
            }
            if old.as_ref() != Some(&new) && !(old.is_none() && new.is_empty()) {
                let d = if set { delta } else { -delta };
                let old = old.as_ref().map(ContainerBuf::as_ref);
                self.bm_edit((db, key, &mut e), &mut edits, (hi, old, new), Some(d))?;
            }
        }
        self.bm_finish_edits(db, key, &mut e, edits)?;
        if changed == 0 && !e.created {
            return Ok((e.s.card, 0));
        }
        let card = self.bm_finish(db, key, e)?;
        Ok((card, changed))
    }

    /// Writes the key that `e` has just created (`e.created`: a fresh
    /// version, no entries anywhere) holding the bits `sorted` (ascending,
    /// distinct, not empty) whole, as TR.IMPORT writes a value: its
    /// containers packed into pages and its summary counted from them,
    /// with no read of entries that cannot exist. Returns the cardinality.
    ///
    /// # Errors
    /// `Io` when the `Txn` spills entries ahead.
    fn bm_create_with(&mut self, db: u16, key: &[u8], mut e: Edit, sorted: &[u32]) -> Result<u64> {
        debug_assert!(e.created && !sorted.is_empty());
        let mut blocks: Vec<(u16, ContainerBuf)> = Vec::new();
        for (hi, group) in by_block(sorted) {
            let mut c = ContainerBuf::default();
            for &v in group {
                c.insert(v as u16);
            }
            summary_push(&mut e.s, hi, c.as_ref());
            blocks.push((hi, c));
        }
        let version = e.meta.version;
        self.bm_put_packed(
            db,
            key,
            version,
            blocks.iter().map(|(hi, c)| (*hi, c.as_bytes())),
        )?;
        self.bm_finish(db, key, e)
    }
}
