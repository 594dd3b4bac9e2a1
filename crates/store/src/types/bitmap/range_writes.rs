//! Writes of many bits at once: TR.SETRANGE / TR.FLIPRANGE,
//! TR.APPENDBITARRAY, the whole-value replacements (TR.SETINTARRAY,
//! TR.SETBITARRAY, TR.IMPORT) and TR.OPTIMIZE. Contract: a range write
//! edits each block of its range once, creating absent ones; a
//! replacement takes a fresh version (O(1) in the old value's size, no
//! TTL: open point 14); TR.OPTIMIZE holds about [`OPTIMIZE_CHUNK_BYTES`] of
//! containers at a time.

use roaringd_bitmap::{Bitmap, ContainerBuf};

use crate::error::Result;
use crate::meta::Kind;
use crate::txn::{take_chunk, Txn};

use super::bytes::{split, view, BLOCK};
use super::summary::summary_of_bitmap;

/// A range write of TR.SETRANGE / TR.FLIPRANGE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeOp {
    /// Set every bit of the range.
    Set,
    /// Invert every bit of the range.
    Flip,
}

/// Applies `op` over `start..=end` to `c`, block `hi`'s container (a
/// block of the range).
pub(super) fn range_edit(c: &mut ContainerBuf, hi: u16, range: (u32, u32), op: RangeOp) {
    let (lo, up) = block_part(hi, range);
    match op {
        RangeOp::Set => c.add_range(lo, up),
        RangeOp::Flip => c.flip_range(lo, up),
    }
}

/// The low values `lo..=up` of block `hi`'s part of `start..=end` (a
/// range that reaches the block).
pub(super) fn block_part(hi: u16, (start, end): (u32, u32)) -> (u16, u16) {
    let (shi, slo) = split(start);
    let (ehi, elo) = split(end);
    let lo = if hi == shi { slo } else { 0 };
    let up = if hi == ehi { elo } else { u16::MAX };
    (lo, up)
}

/// Bytes of containers TR.OPTIMIZE reads before rewriting them.
pub(super) const OPTIMIZE_CHUNK_BYTES: usize = 1 << 20;

impl Txn {
    /// TR.SETRANGE / TR.FLIPRANGE over `[start, end]` (inclusive, `start <=
    /// end`); creates the key; returns the cardinality after (open point 1).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_range_write(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        end: u32,
        op: RangeOp,
    ) -> Result<u64> {
        if let Some(card) =
            self.bm_offer_dirty(db, key, |t| t.bm_range_dirty(db, key, (start, end), op))?
        {
            return Ok(card);
        }
        let Some(mut e) = self.bm_open(db, key, true)? else {
            return Ok(0);
        };
        let (shi, ehi) = (split(start).0, split(end).0);
        self.bm_edit_blocks(db, key, &mut e, shi..=ehi, |hi, c| {
            range_edit(c, hi, (start, end), op);
        })?;
        self.bm_finish(db, key, e)
    }

    /// TR.APPENDBITARRAY: writes `bits` (bytes `b'0'` / `b'1'`, validated by
    /// the caller) to offsets `first ..`, overwriting; creates the key;
    /// returns the cardinality after (open point 1). The caller checks that
    /// the window ends at or below 2^32 − 1.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_write_bits(&mut self, db: u16, key: &[u8], first: u32, bits: &[u8]) -> Result<u64> {
        let Some(mut e) = self.bm_open(db, key, true)? else {
            return Ok(0);
        };
        if bits.is_empty() {
            return self.bm_finish(db, key, e);
        }
        let last = u64::from(first) + bits.len() as u64 - 1;
        let last = u32::try_from(last).unwrap_or(u32::MAX);
        let (shi, _) = split(first);
        let (ehi, _) = split(last);
        self.bm_edit_blocks(db, key, &mut e, shi..=ehi, |hi, c| {
            let block_start = u64::from(hi) << 16;
            let lo = u64::from(first).max(block_start);
            let up = u64::from(last).min(block_start + BLOCK - 1);
            for v in lo..=up {
                let ch = bits[(v - u64::from(first)) as usize];
                let low = (v - block_start) as u16;
                if ch == b'1' {
                    c.insert(low);
                } else {
                    c.remove(low);
                }
            }
        })?;
        self.bm_finish(db, key, e)
    }

    /// TR.SETINTARRAY / TR.SETBITARRAY / TR.IMPORT: replaces the whole value
    /// by `b` under a new version (no TTL: open point 14).
    ///
    /// # Errors
    /// `WrongType` when the key holds another type.
    pub fn tr_replace(&mut self, db: u16, key: &[u8], b: &Bitmap) -> Result<u64> {
        self.meta_of(db, key, Kind::Bitmap)?;
        let version = self.new_data_version()?;
        self.bm_put_packed(
            db,
            key,
            version,
            b.containers().map(|(hi, c)| (hi, c.as_bytes())),
        )?;
        let s = summary_of_bitmap(b);
        self.put_new_bitmap_meta(db, key, version, s)?;
        Ok(s.card)
    }

    /// TR.OPTIMIZE: re-encodes each container in its smallest form (runs
    /// where strictly smaller). `None` when the key is missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_optimize(&mut self, db: u16, key: &[u8]) -> Result<Option<()>> {
        let Some(mut e) = self.bm_open(db, key, false)? else {
            return Ok(None);
        };
        // Read in chunks of about OPTIMIZE_CHUNK_BYTES: only rewritten
        // containers are held (in the overlay), not the whole key.
        let mut from = Some(0u16);
        while let Some(at) = from {
            let scan = self.bm_scan(db, key, e.meta.version, (at, false));
            let blocks: Vec<(u16, Vec<u8>)> =
                take_chunk(scan, OPTIMIZE_CHUNK_BYTES, |b| b.1.len())?;
            let Some(&(last, _)) = blocks.last() else {
                break;
            };
            from = last.checked_add(1);
            for (hi, bytes) in blocks {
                let old = view(&bytes)?.to_buf();
                let mut new = old.clone();
                new.optimize();
                if new != old {
                    self.bm_put(
                        db,
                        key,
                        &mut e,
                        hi,
                        (Some(old.as_ref()), &new),
                        (Some(0), None),
                    )?;
                }
            }
        }
        self.bm_finish(db, key, e)?;
        Ok(Some(()))
    }
}
