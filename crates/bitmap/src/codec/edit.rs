//! In-place edits on owned container bytes: point and range writes.
//!
//! Every edit leaves the container normalized (`kind_policy`). Point writes
//! (`insert`, `remove`) never create runs; range writes optimize the
//! container they touch, so a written range becomes a run where that is
//! strictly smaller. [`PointWrite`] re-encodes a container with one value
//! set or cleared in a single pass over the old encoding, for callers that
//! keep containers as encoded bytes.

use crate::codec::{pack_header, Kind, ARRAY_MAX, BITSET_BYTES, HEADER_LEN};
use crate::container::{bitset, run, ContainerBuf, ContainerRef};
use core::mem::MaybeUninit;

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
            ContainerRef::Run { runs, card } => {
                let mut out = Vec::new();
                let was = run::flip_interval(runs, lo, hi, &mut out);
                *self = ContainerBuf::from_runs_unchecked(&out, card + width - 2 * was);
            }
            r @ ContainerRef::Array(a) => {
                // Through the array's runs (at most one per value): the
                // complement of a few values over a wide range is a few
                // runs, where a bitset would cost 8 KiB to build and scan.
                let mut runs = Vec::with_capacity(a.len());
                r.runs_into(&mut runs);
                let mut out = Vec::new();
                let was = run::flip_interval(&runs, lo, hi, &mut out);
                *self = ContainerBuf::from_runs_unchecked(&out, a.len() as u32 + width - 2 * was);
            }
            ContainerRef::Bitset { .. } => {
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

/// One value set or cleared in a container, where the write keeps the
/// container's kind: planned by [`ContainerRef::plan_point_write`] and
/// written by [`PointWrite::write`] straight into the new encoding (header
/// and payload, `docs/format.md`), one pass over the old payload. The
/// result is the encoding [`ContainerBuf::insert`] or
/// [`ContainerBuf::remove`] leaves, byte for byte.
#[derive(Clone, Copy, Debug)]
pub struct PointWrite<'a> {
    src: ContainerRef<'a>,
    v: u16,
    value: bool,
    /// Array: the index `v` takes (set) or holds (clear); 0 for a bitset.
    pos: usize,
}

impl<'a> ContainerRef<'a> {
    /// Plans setting `v` to `value` in this container as a [`PointWrite`].
    /// `None` when the write changes nothing (`v` has `value` already),
    /// would leave the container empty, or does not keep the kind: run
    /// containers, an array of [`ARRAY_MAX`] values gaining one, a bitset
    /// dropping to [`ARRAY_MAX`] values. Those go through
    /// [`ContainerBuf::insert`] / [`ContainerBuf::remove`].
    #[must_use]
    pub fn plan_point_write(self, v: u16, value: bool) -> Option<PointWrite<'a>> {
        let pos = match self {
            ContainerRef::Array(a) => match (a.binary_search(&v), value) {
                (Err(p), true) if a.len() < ARRAY_MAX => p,
                (Ok(p), false) if a.len() > 1 => p,
                _ => return None,
            },
            ContainerRef::Bitset { words, card } => {
                let has = (words[(v >> 6) as usize] >> (v & 63)) & 1 == 1;
                if has == value || (!value && card - 1 <= ARRAY_MAX as u32) {
                    return None;
                }
                0
            }
            ContainerRef::Run { .. } => return None,
        };
        Some(PointWrite {
            src: self,
            v,
            value,
            pos,
        })
    }
}

impl PointWrite<'_> {
    /// The container's cardinality after the write.
    #[must_use]
    pub fn cardinality(&self) -> u32 {
        let card = self.src.cardinality();
        if self.value {
            card + 1
        } else {
            card - 1
        }
    }

    /// The length of the new encoding, header included.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        match self.src {
            ContainerRef::Array(_) => HEADER_LEN + 2 * self.cardinality() as usize,
            _ => HEADER_LEN + BITSET_BYTES,
        }
    }

    /// Writes the new encoding into `out` and returns it, initialized.
    ///
    /// # Panics
    /// When `out` is not [`Self::encoded_len`] bytes long.
    pub fn write<'o>(&self, out: &'o mut [MaybeUninit<u8>]) -> &'o mut [u8] {
        assert_eq!(out.len(), self.encoded_len(), "point write: output length");
        let (head, body) = out.split_at_mut(HEADER_LEN);
        head.write_copy_of_slice(&pack_header(self.src.kind(), self.cardinality()).to_le_bytes());
        match self.src {
            ContainerRef::Array(a) => {
                let before: &[u8] = bytemuck::cast_slice(&a[..self.pos]);
                let (b, rest) = body.split_at_mut(before.len());
                b.write_copy_of_slice(before);
                if self.value {
                    let (mid, after) = rest.split_at_mut(2);
                    mid.write_copy_of_slice(&self.v.to_le_bytes());
                    after.write_copy_of_slice(bytemuck::cast_slice(&a[self.pos..]));
                } else {
                    rest.write_copy_of_slice(bytemuck::cast_slice(&a[self.pos + 1..]));
                }
            }
            ContainerRef::Bitset { words, .. } => {
                let bytes = body.write_copy_of_slice(bytemuck::cast_slice(&words[..]));
                // Word v / 64, bit v % 64, little-endian: byte v / 8, bit v % 8.
                bytes[usize::from(self.v / 8)] ^= 1 << (self.v % 8);
            }
            ContainerRef::Run { .. } => unreachable!("plan_point_write plans no run"),
        }
        // SAFETY: the header and the payload pieces written above cover
        // every byte: the payload pieces add up to `encoded_len() -
        // HEADER_LEN` (asserted against `out`'s length), each one written.
        unsafe { out.assume_init_mut() }
    }
}

/// Sets (`value`) or clears bit `v` of an encoded bitset container in
/// place (header and payload, `docs/format.md`), leaving the bytes
/// [`PointWrite::write`] would write: no copy, for a caller that owns the
/// only reference to the encoding. Returns false, changing nothing, when
/// `bytes` is not a bitset container of this format (wrong length, tag or
/// cardinality), `v` has `value` already, or the clear would leave
/// [`ARRAY_MAX`] values (the container must then become an array).
pub fn flip_bitset_in_place(bytes: &mut [u8], v: u16, value: bool) -> bool {
    if bytes.len() != HEADER_LEN + BITSET_BYTES {
        return false;
    }
    let header = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let card = header >> 8;
    if header != pack_header(Kind::Bitset, card)
        || card as usize <= ARRAY_MAX
        || card as usize > BITSET_BYTES * 8
    {
        return false;
    }
    let byte = HEADER_LEN + usize::from(v / 8);
    let mask = 1u8 << (v % 8);
    let has = bytes[byte] & mask != 0;
    if has == value || (!value && card as usize - 1 <= ARRAY_MAX) {
        return false;
    }
    let card = if value { card + 1 } else { card - 1 };
    bytes[byte] ^= mask;
    bytes[..HEADER_LEN].copy_from_slice(&pack_header(Kind::Bitset, card).to_le_bytes());
    true
}

#[cfg(test)]
mod point_write_tests {
    use super::*;
    use crate::testing::lows_of_size;

    /// Every planned write leaves exactly the bytes `insert`/`remove`
    /// leave; every refused one is a no-op, an emptying or a kind change.
    fn check(lows: &[u16], v: u16) {
        let c = ContainerBuf::from_sorted(lows);
        for value in [true, false] {
            let mut want = c.clone();
            let changed = if value {
                want.insert(v)
            } else {
                want.remove(v)
            };
            match c.as_ref().plan_point_write(v, value) {
                Some(p) => {
                    assert!(changed);
                    let mut out = vec![MaybeUninit::uninit(); p.encoded_len()];
                    assert_eq!(p.write(&mut out), want.as_bytes(), "{v} {value}");
                    assert_eq!(p.cardinality(), want.cardinality());
                }
                None => assert!(
                    !changed || want.is_empty() || want.kind() != c.kind() || c.kind() == Kind::Run,
                    "{v} {value} refused"
                ),
            }
        }
    }

    #[test]
    fn point_writes_match_insert_and_remove_at_every_boundary() {
        for (n, seed) in [
            (1, 1),
            (2, 2),
            (100, 3),
            (4095, 4),
            (4096, 5),
            (4097, 6),
            (4098, 7),
            (30000, 8),
        ] {
            let lows = lows_of_size(n, seed);
            let mut probes = vec![0, 1, 65534, 65535, lows[0], lows[lows.len() - 1]];
            probes.extend(lows.iter().step_by(97).copied());
            probes.extend(lows.iter().step_by(89).map(|&x| x.wrapping_add(1)));
            for v in probes {
                check(&lows, v);
            }
        }
        let runs: Vec<u16> = (100..3000).collect();
        check(&runs, 50);
        check(&runs, 200);
    }

    #[test]
    fn an_in_place_bitset_flip_writes_what_a_point_write_writes() {
        for (n, seed) in [
            (4097, 11),
            (4098, 12),
            (30000, 13),
            (65535, 14),
            (65536, 15),
        ] {
            let lows = lows_of_size(n, seed);
            let c = ContainerBuf::from_sorted(&lows);
            assert_eq!(c.kind(), Kind::Bitset);
            let mut probes = vec![0, 1, 65534, 65535, lows[0], lows[lows.len() - 1]];
            probes.extend(lows.iter().step_by(101).copied());
            probes.extend(lows.iter().step_by(83).map(|&x| x.wrapping_add(1)));
            for v in probes {
                for value in [true, false] {
                    let mut bytes = c.as_bytes().to_vec();
                    let done = flip_bitset_in_place(&mut bytes, v, value);
                    match c.as_ref().plan_point_write(v, value) {
                        Some(p) => {
                            assert!(done, "{n} {v} {value}");
                            let mut out = vec![MaybeUninit::uninit(); p.encoded_len()];
                            assert_eq!(bytes, p.write(&mut out), "{n} {v} {value}");
                        }
                        None => {
                            assert!(!done, "{n} {v} {value}");
                            assert_eq!(bytes, c.as_bytes(), "refused, yet changed");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn an_in_place_flip_refuses_other_kinds_and_bad_headers() {
        let array = ContainerBuf::from_sorted(&lows_of_size(100, 16));
        let mut b = array.as_bytes().to_vec();
        assert!(!flip_bitset_in_place(&mut b, 7, true));
        let run = ContainerBuf::from_range(10, 20000);
        let mut b = run.as_bytes().to_vec();
        assert!(!flip_bitset_in_place(&mut b, 5, true));
        let bits = ContainerBuf::from_sorted(&lows_of_size(5000, 17));
        let good = bits.as_bytes().to_vec();
        // A bitset claiming array-sized, too large or other-version counts.
        for patch in [
            pack_header(Kind::Bitset, 4096),
            pack_header(Kind::Bitset, 65537),
            pack_header(Kind::Bitset, 5000) | 0xf0,
        ] {
            let mut b = good.clone();
            b[..4].copy_from_slice(&patch.to_le_bytes());
            let before = b.clone();
            assert!(!flip_bitset_in_place(&mut b, 3, true));
            assert_eq!(b, before);
        }
        let mut short = good[..good.len() - 1].to_vec();
        assert!(!flip_bitset_in_place(&mut short, 3, true));
    }

    #[test]
    fn a_point_write_refuses_kind_changes_and_emptying() {
        let full = lows_of_size(4096, 9);
        let absent = (0..=u16::MAX)
            .find(|x| full.binary_search(x).is_err())
            .unwrap();
        let c = ContainerBuf::from_sorted(&full);
        assert!(c.as_ref().plan_point_write(absent, true).is_none());
        let bits = lows_of_size(4097, 10);
        let b = ContainerBuf::from_sorted(&bits);
        assert_eq!(b.kind(), Kind::Bitset);
        assert!(b.as_ref().plan_point_write(bits[7], false).is_none());
        let one = ContainerBuf::from_sorted(&[42]);
        assert!(one.as_ref().plan_point_write(42, false).is_none());
        assert!(one.as_ref().plan_point_write(42, true).is_none());
        let run = ContainerBuf::from_range(10, 20000);
        assert_eq!(run.kind(), Kind::Run);
        assert!(run.as_ref().plan_point_write(5, true).is_none());
    }
}
