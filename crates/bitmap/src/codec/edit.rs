//! In-place edits on owned container bytes: point and range writes.
//!
//! Every edit leaves the container normalized (`kind_policy`). Point writes
//! (`insert`, `remove`) never create runs; range writes optimize the
//! container they touch, so a written range becomes a run where that is
//! strictly smaller.

use crate::codec::{Kind, ARRAY_MAX};
use crate::container::{bitset, run, ContainerBuf, ContainerRef};

/// A bitset-kind copy of any container, regardless of its cardinality (not normalized).
pub(crate) fn bitset_copy(r: ContainerRef<'_>) -> ContainerBuf {
    match r {
        ContainerRef::Bitset { words, card } => ContainerBuf::from_words_unchecked(words, card),
        _ => {
            let mut out = ContainerBuf::bitset_zeroed();
            r.set_bits_in(out.bitset_words_mut());
            out.set_bitset_card(r.cardinality());
            out
        }
    }
}

impl ContainerBuf {
    /// Adds `v`; returns true when it was absent.
    pub fn insert(&mut self, v: u16) -> bool {
        match self.as_ref() {
            ContainerRef::Array(a) => {
                let n = a.len();
                let pos = match a.binary_search(&v) {
                    Ok(_) => return false,
                    Err(p) => p,
                };
                if n < ARRAY_MAX {
                    self.reserve_array(n + 1);
                    let s = self.array_storage_mut();
                    s.copy_within(pos..n, pos + 1);
                    s[pos] = v;
                    self.set_array_len(n + 1);
                } else {
                    let mut b = bitset_copy(self.as_ref());
                    b.bitset_words_mut()[(v >> 6) as usize] |= 1 << (v & 63);
                    b.set_bitset_card(n as u32 + 1);
                    *self = b;
                }
                true
            }
            ContainerRef::Bitset { card, .. } => {
                let w = &mut self.bitset_words_mut()[(v >> 6) as usize];
                let m = 1u64 << (v & 63);
                if *w & m != 0 {
                    return false;
                }
                *w |= m;
                self.set_bitset_card(card + 1);
                true
            }
            ContainerRef::Run { runs, card } => {
                if run::contains(runs, v) {
                    return false;
                }
                let mut out = Vec::with_capacity(runs.len() + 1);
                run::union(runs, &[[v, 0]], &mut out);
                *self = ContainerBuf::from_runs_unchecked(&out, card + 1);
                self.normalize();
                true
            }
        }
    }

    /// Removes `v`; returns true when it was present.
    pub fn remove(&mut self, v: u16) -> bool {
        match self.as_ref() {
            ContainerRef::Array(a) => {
                let n = a.len();
                let pos = match a.binary_search(&v) {
                    Ok(p) => p,
                    Err(_) => return false,
                };
                self.array_storage_mut().copy_within(pos + 1..n, pos);
                self.set_array_len(n - 1);
                true
            }
            ContainerRef::Bitset { card, .. } => {
                let w = &mut self.bitset_words_mut()[(v >> 6) as usize];
                let m = 1u64 << (v & 63);
                if *w & m == 0 {
                    return false;
                }
                *w &= !m;
                self.set_bitset_card(card - 1);
                if card - 1 <= ARRAY_MAX as u32 {
                    self.normalize();
                }
                true
            }
            ContainerRef::Run { runs, .. } => {
                if !run::contains(runs, v) {
                    return false;
                }
                let mut out = Vec::with_capacity(runs.len() + 1);
                run::remove_interval(runs, v, v, &mut out);
                *self = ContainerBuf::from_run_list_optimized(&out);
                true
            }
        }
    }

    /// Adds every value in `lo..=hi` (nothing when `lo > hi`).
    pub fn add_range(&mut self, lo: u16, hi: u16) {
        if lo > hi {
            return;
        }
        let width = (hi - lo) as u32 + 1;
        if self.is_empty() {
            *self = ContainerBuf::from_run_list_optimized(&[[lo, hi - lo]]);
            return;
        }
        match self.as_ref() {
            ContainerRef::Array(a) if a.len() + width as usize <= ARRAY_MAX => {
                let start = a.partition_point(|&x| x < lo);
                let end = a.partition_point(|&x| x <= hi);
                let mut out =
                    ContainerBuf::array_with_capacity(start + width as usize + a.len() - end);
                let s = out.array_spare_mut();
                s[..start].copy_from_slice(&a[..start]);
                for (i, v) in (lo..=hi).enumerate() {
                    s[start + i] = v;
                }
                let w = width as usize;
                s[start + w..start + w + a.len() - end].copy_from_slice(&a[end..]);
                out.set_array_len(start + w + a.len() - end);
                *self = out;
            }
            ContainerRef::Run { runs, .. } => {
                let mut out = Vec::with_capacity(runs.len() + 1);
                run::union(runs, &[[lo, hi - lo]], &mut out);
                *self = ContainerBuf::from_runs_unchecked(&out, run::cardinality(&out));
            }
            r => {
                if r.kind() != Kind::Bitset {
                    *self = bitset_copy(r);
                }
                let before = self.as_ref().count_range(lo, hi);
                let card = self.cardinality() + width - before;
                bitset::set_range(self.bitset_words_mut(), lo, hi);
                self.set_bitset_card(card);
            }
        }
        // A range that overlaps present values may leave ≤ 4,096 values in
        // the bitset branch (an array of 4,096 plus a value it holds).
        self.normalize();
        self.optimize();
    }

    /// Removes every value in `lo..=hi` (nothing when `lo > hi`).
    pub fn remove_range(&mut self, lo: u16, hi: u16) {
        if lo > hi {
            return;
        }
        match self.as_ref() {
            ContainerRef::Array(a) => {
                let start = a.partition_point(|&x| x < lo);
                let end = a.partition_point(|&x| x <= hi);
                let n = a.len();
                self.array_storage_mut().copy_within(end..n, start);
                self.set_array_len(n - (end - start));
            }
            ContainerRef::Run { runs, .. } => {
                let mut out = Vec::with_capacity(runs.len() + 1);
                run::remove_interval(runs, lo, hi, &mut out);
                *self = ContainerBuf::from_runs_unchecked(&out, run::cardinality(&out));
            }
            r @ ContainerRef::Bitset { card, .. } => {
                let removed = r.count_range(lo, hi);
                bitset::clear_range(self.bitset_words_mut(), lo, hi);
                self.set_bitset_card(card - removed);
            }
        }
        self.normalize();
        self.optimize();
    }

    /// Inverts every value in `lo..=hi` (nothing when `lo > hi`).
    pub fn flip_range(&mut self, lo: u16, hi: u16) {
        if lo > hi {
            return;
        }
        let width = (hi - lo) as u32 + 1;
        match self.as_ref() {
            ContainerRef::Run { runs, .. } => {
                let mut out = Vec::with_capacity(runs.len() + 2);
                run::flip_interval(runs, lo, hi, &mut out);
                *self = ContainerBuf::from_runs_unchecked(&out, run::cardinality(&out));
            }
            r => {
                if r.kind() != Kind::Bitset {
                    *self = bitset_copy(r);
                }
                let before = self.as_ref().count_range(lo, hi);
                let card = self.cardinality() - before + (width - before);
                bitset::flip_range(self.bitset_words_mut(), lo, hi);
                self.set_bitset_card(card);
            }
        }
        self.normalize();
        self.optimize();
    }
}
