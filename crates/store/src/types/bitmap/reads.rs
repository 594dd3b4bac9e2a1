//! The read commands: TR.GETBIT, TR.GETBITS, TR.BITCOUNT with a range,
//! TR.RANK, TR.BITPOS, TR.SCAN, TR.RANGE, TR.RANGEBITARRAY and TR.EXPORT's
//! load. Contract: nothing is written; a missing key reads as empty (or
//! `None` where the command replies otherwise); a point read takes one
//! container, a range read streams only the blocks of its range, and
//! answers the summary settles (a range covering the whole key) read no
//! container.

use roaringd_bitmap::{Bitmap, ContainerRef};

use crate::error::Result;
use crate::txn::Txn;

use super::bytes::{corrupt, join, split, view, Bytes, BLOCK};
use super::page::Unpacked;
use super::stream::{head, take};
use super::summary::key_bytes;

/// Container bytes up to which TR.GETBITS reads a key whole when it names
/// an offset for at least one in eight of the key's containers.
const GETBITS_WHOLE_BYTES: u64 = 64 * 1024;

/// Clamps an offset computed in u64 to the reply: −1 past 2^32 − 1.
fn fit(v: u64) -> i64 {
    if v <= u64::from(u32::MAX) {
        v as i64
    } else {
        -1
    }
}

/// The `n`-th (1-based) clear low offset of a container, counting upward.
/// The caller guarantees it exists.
fn nth_zero_up(r: ContainerRef<'_>, n: u64) -> u16 {
    // zeros in [0, x] = x + 1 - rank(x), monotone in x: binary search.
    let (mut lo, mut hi) = (0u32, u32::from(u16::MAX));
    while lo < hi {
        let mid = (lo + hi) / 2;
        let zeros = u64::from(mid) + 1 - u64::from(r.rank(mid as u16));
        if zeros >= n {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo as u16
}

/// The `n`-th (1-based) clear low offset at or below `top`, counting
/// downward. The caller guarantees it exists.
fn nth_zero_down(r: ContainerRef<'_>, top: u16, n: u64) -> u16 {
    let rank_top = u64::from(r.rank(top));
    // zeros in [y, top] = (top - y + 1) - (rank(top) - rank(y - 1)),
    // decreasing in y: the largest y with zeros >= n.
    let zeros_from = |y: u32| -> u64 {
        let below = if y == 0 {
            0
        } else {
            u64::from(r.rank((y - 1) as u16))
        };
        (u64::from(top) - u64::from(y) + 1) - (rank_top - below)
    };
    let (mut lo, mut hi) = (0u32, u32::from(top));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if zeros_from(mid) >= n {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo as u16
}

impl Txn {
    /// TR.GETBIT.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_getbit(&mut self, db: u16, key: &[u8], off: u32) -> Result<bool> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(false);
        };
        let (hi, lo) = split(off);
        match self.bm_get(db, key, version, hi, Some(&s))? {
            Some(b) => Ok(view(&b)?.as_ref().contains(lo)),
            None => Ok(false),
        }
    }

    /// TR.GETBITS: one flag per offset, in the order given; `None` when the
    /// key is missing (the command then replies an empty array).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_getbits(&mut self, db: u16, key: &[u8], offs: &[u32]) -> Result<Option<Vec<bool>>> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(None);
        };
        if 8 * offs.len() as u64 >= s.containers && key_bytes(&s) <= GETBITS_WHOLE_BYTES {
            // Offsets for one container in eight or more, in a small key:
            // one scan of the key (a page holds many of its containers)
            // instead of a lookup, each reading a whole page, per offset.
            // The containers' bytes as read (checked views of them, not
            // copies: a bitset is 8 KiB).
            let mut all: Vec<(u16, Bytes)> = Vec::new();
            let mut st = self.bm_key_stream(db, key, version, (0, false), &s);
            while let Some(hi) = head(&mut st)? {
                let b = take(&mut st)?;
                view(&b)?;
                all.push((hi, b));
            }
            let mut out = Vec::with_capacity(offs.len());
            for &off in offs {
                let (hi, lo) = split(off);
                let hit = match all.binary_search_by_key(&hi, |(h, _)| *h) {
                    Ok(i) => view(&all[i].1)?.as_ref().contains(lo),
                    Err(_) => false,
                };
                out.push(hit);
            }
            return Ok(Some(out));
        }
        // The last block's bytes, for runs of offsets in one block.
        let mut last: Option<(u16, Option<Bytes>)> = None;
        let mut out = Vec::with_capacity(offs.len());
        for &off in offs {
            let (hi, lo) = split(off);
            if last.as_ref().is_none_or(|(h, _)| *h != hi) {
                last = Some((hi, self.bm_get(db, key, version, hi, Some(&s))?));
            }
            let hit = match last.as_ref().and_then(|(_, b)| b.as_ref()) {
                Some(b) => view(b)?.as_ref().contains(lo),
                None => false,
            };
            out.push(hit);
        }
        Ok(Some(out))
    }

    /// TR.BITCOUNT with a range: set bits in `[start, end]` (`start <= end`).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_count_range(&mut self, db: u16, key: &[u8], start: u32, end: u32) -> Result<u64> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(0);
        };
        if s.card == 0 {
            return Ok(0);
        }
        if start <= s.min && end >= s.max {
            return Ok(s.card);
        }
        let (shi, slo) = split(start);
        let (ehi, elo) = split(end);
        let mut st = self.bm_key_stream(db, key, version, (shi, false), &s);
        let mut n = 0u64;
        while let Some(hi) = head(&mut st)? {
            if hi > ehi {
                break;
            }
            let bytes = take(&mut st)?;
            let r = view(&bytes)?;
            let r = r.as_ref();
            let lo = if hi == shi { slo } else { 0 };
            let up = if hi == ehi { elo } else { u16::MAX };
            n += u64::from(if lo == 0 && up == u16::MAX {
                r.cardinality()
            } else {
                r.count_range(lo, up)
            });
        }
        Ok(n)
    }

    /// TR.RANK: set bits in `[0, off]`; `None` when the key is missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_rank(&mut self, db: u16, key: &[u8], off: u32) -> Result<Option<u64>> {
        if self.bm_version(db, key)?.is_none() {
            return Ok(None);
        }
        self.tr_count_range(db, key, 0, off).map(Some)
    }

    /// TR.BITPOS (spec 2.4, open point 5): the offset of the `count`-th bit
    /// equal to `value` counting upward from 0 (`count > 0`) or downward
    /// from the highest set bit (`count < 0`); −1 when there is none, the
    /// key is missing, or the answer would pass 2^32 − 1. `count != 0`.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_bitpos(&mut self, db: u16, key: &[u8], value: bool, count: i64) -> Result<i64> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(-1);
        };
        let n = count.unsigned_abs();
        if value {
            if n > s.card || count == 0 {
                return Ok(-1);
            }
            let reverse = count < 0;
            let from = if reverse { u16::MAX } else { 0 };
            let mut st = self.bm_key_stream(db, key, version, (from, reverse), &s);
            let mut left = n; // 1-based position still to skip
            while let Some(hi) = head(&mut st)? {
                let bytes = take(&mut st)?;
                let v = view(&bytes)?;
                let r = v.as_ref();
                let c = u64::from(r.cardinality());
                if left <= c {
                    let idx = if reverse { c - left } else { left - 1 };
                    return Ok(r
                        .select(idx as u32)
                        .map_or(-1, |lo| i64::from(join(hi, lo))));
                }
                left -= c;
            }
            return Ok(-1);
        }
        if count > 0 {
            // Clear bits upward: gaps between containers, holes inside them,
            // then everything above the last container.
            let mut st = self.bm_key_stream(db, key, version, (0, false), &s);
            let mut left = n;
            let mut next_block: u64 = 0;
            while let Some(hi) = head(&mut st)? {
                let gap = (u64::from(hi) - next_block) * BLOCK;
                if left <= gap {
                    return Ok(fit(next_block * BLOCK + left - 1));
                }
                left -= gap;
                let bytes = take(&mut st)?;
                let v = view(&bytes)?;
                let r = v.as_ref();
                let zeros = BLOCK - u64::from(r.cardinality());
                if left <= zeros {
                    let lo = nth_zero_up(r, left);
                    return Ok(i64::from(join(hi, lo)));
                }
                left -= zeros;
                next_block = u64::from(hi) + 1;
            }
            return Ok(fit(next_block * BLOCK + left - 1));
        }
        // Clear bits downward from the highest set bit (open point 5c).
        if s.card == 0 {
            return Ok(-1);
        }
        let (top_hi, top_lo) = split(s.max);
        let mut st = self.bm_key_stream(db, key, version, (top_hi, true), &s);
        let mut left = n;
        // `expect`: the next block to examine, going down; blocks between
        // it and the next stored one are absent (all clear).
        let mut expect = i64::from(top_hi);
        loop {
            let h = head(&mut st)?;
            let stop = h.map_or(-1, i64::from);
            let gap = (expect - stop).max(0) as u64 * BLOCK;
            if left <= gap {
                return Ok(((expect + 1) as u64 * BLOCK - left) as i64);
            }
            left -= gap;
            let Some(hi) = h else {
                return Ok(-1);
            };
            let bytes = take(&mut st)?;
            let v = view(&bytes)?;
            let r = v.as_ref();
            let top = if hi == top_hi { top_lo } else { u16::MAX };
            let zeros = u64::from(top) + 1 - u64::from(r.rank(top));
            if left <= zeros {
                return Ok(i64::from(join(hi, nth_zero_down(r, top, left))));
            }
            left -= zeros;
            expect = i64::from(hi) - 1;
        }
    }

    /// TR.SCAN: up to `count` set bits `>= start` and the cursor: the next
    /// set bit after them, or 0 when none is left. `None` when missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_scan(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        count: usize,
    ) -> Result<Option<(u32, Vec<u32>)>> {
        let Some(vals) = self.tr_range(db, key, start, u32::MAX, count)? else {
            return Ok(None);
        };
        let mut vals = vals;
        let cursor = if vals.len() > count {
            vals.pop().unwrap_or(0)
        } else {
            0
        };
        Ok(Some((cursor, vals)))
    }

    /// Calls `f` with each set bit in `[start, end]`, ascending, until `f`
    /// returns false: the values stream from the containers, nothing is
    /// collected. Returns false when the key is missing (`f` not called).
    ///
    /// # Errors
    /// `WrongType`; `Corrupt` on a bad container entry.
    pub fn tr_range_each(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        end: u32,
        mut f: impl FnMut(u32) -> bool,
    ) -> Result<bool> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(false);
        };
        if s.card == 0 || start > end {
            return Ok(true);
        }
        let (shi, slo) = split(start);
        let mut st = self.bm_key_stream(db, key, version, (shi, false), &s);
        while let Some(hi) = head(&mut st)? {
            if join(hi, 0) > end {
                break;
            }
            let bytes = take(&mut st)?;
            let v = view(&bytes)?;
            let r = v.as_ref();
            let it = if hi == shi {
                r.iter_from(slo)
            } else {
                r.iter()
            };
            for lo in it {
                let x = join(hi, lo);
                if x > end || !f(x) {
                    return Ok(true);
                }
            }
        }
        Ok(true)
    }

    /// TR.RANGE: the set bits in `[start, end]`, ascending, at most `max + 1`
    /// of them (a reply longer than `max` tells the caller the limit was
    /// passed). `None` when the key is missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_range(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        end: u32,
        max: usize,
    ) -> Result<Option<Vec<u32>>> {
        let mut out = Vec::new();
        let found = self.tr_range_each(db, key, start, end, |x| {
            out.push(x);
            out.len() <= max
        })?;
        Ok(found.then_some(out))
    }

    /// TR.RANGEBITARRAY: bits `start..=end` as `'0'` / `'1'` bytes; `None`
    /// when the key is missing. The caller bounds the width; the string is
    /// the only allocation (the set bits are not collected first).
    ///
    /// # Errors
    /// `WrongType`; `Corrupt` on a bad container entry.
    pub fn tr_range_bits(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        end: u32,
    ) -> Result<Option<Vec<u8>>> {
        let width = (u64::from(end) - u64::from(start) + 1) as usize;
        let mut out = Vec::new();
        let found = self.tr_range_each(db, key, start, end, |v| {
            if out.is_empty() {
                out = vec![b'0'; width];
            }
            out[(v - start) as usize] = b'1';
            true
        })?;
        if found && out.is_empty() {
            out = vec![b'0'; width];
        }
        Ok(found.then_some(out))
    }

    /// The whole bitmap in memory (TR.EXPORT); `None` when missing.
    ///
    /// # Errors
    /// `WrongType`; `Corrupt` on a bad container entry.
    pub fn tr_load(&mut self, db: u16, key: &[u8]) -> Result<Option<Bitmap>> {
        let Some((version, _)) = self.bm_version(db, key)? else {
            return Ok(None);
        };
        let mut pairs = Vec::new();
        let scan = self.data_iter(db, key, version, None, false);
        for e in Unpacked::new(scan, false, (0, u16::MAX)) {
            let (hi, bytes) = e?;
            pairs.push((hi, view(&bytes)?.to_buf()));
        }
        Bitmap::from_containers(pairs).map(Some).map_err(corrupt)
    }
}
