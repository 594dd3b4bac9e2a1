//! Facts about one container that a bitmap's summary is made of: its
//! smallest and largest low values and the sum of its low values, computed
//! without visiting values one by one, and carried by cached container
//! values ([`crate::types::bitmap::container_cache::padded_with`]) so that a TR.BITOP
//! that passes a source's container through to its result adds the
//! container to the result's summary without reading its values.

use roaringd_bitmap::container::run;
use roaringd_bitmap::ContainerRef;

/// A non-empty container's extremes and low-value sum (at most
/// 65,535·65,536/2 < 2^32, so it fits a `u32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockFacts {
    /// Smallest low value.
    pub min: u16,
    /// Largest low value.
    pub max: u16,
    /// Sum of the low values.
    pub low_sum: u32,
}

impl BlockFacts {
    /// The facts of `r`; `None` when it is empty.
    #[must_use]
    pub fn of(r: ContainerRef<'_>) -> Option<BlockFacts> {
        Some(BlockFacts {
            min: r.min()?,
            max: r.max()?,
            low_sum: u32::try_from(low_sum(r)).expect("a container's low sum is below 2^31"),
        })
    }

    /// The facts of `new`, the container of which these are the facts
    /// with the one bit `lo` then set (`value`) or cleared: O(1), except
    /// that clearing the minimum or the maximum reads `new`'s new one.
    /// `None` when `new` is empty.
    #[must_use]
    pub fn after_flip(self, new: ContainerRef<'_>, lo: u16, value: bool) -> Option<BlockFacts> {
        if let Some(f) = self.after_inner_flip(lo, value) {
            return Some(f);
        }
        Some(BlockFacts {
            min: new.min()?,
            max: new.max()?,
            low_sum: self.low_sum - u32::from(lo),
        })
    }

    /// [`BlockFacts::after_flip`] where it needs no read of the new
    /// container: `None` for a clear of the minimum or the maximum.
    #[must_use]
    pub fn after_inner_flip(self, lo: u16, value: bool) -> Option<BlockFacts> {
        if value {
            Some(BlockFacts {
                min: self.min.min(lo),
                max: self.max.max(lo),
                low_sum: self.low_sum + u32::from(lo),
            })
        } else if lo == self.min || lo == self.max {
            None
        } else {
            Some(BlockFacts {
                min: self.min,
                max: self.max,
                low_sum: self.low_sum - u32::from(lo),
            })
        }
    }
}

/// Bit `b` of a bit index within a word, as a mask over the word's bits:
/// `sum of set indices = Σ_b popcount(w & MASK[b]) << b`.
const INDEX_BIT_MASKS: [u64; 6] = [
    0xAAAA_AAAA_AAAA_AAAA,
    0xCCCC_CCCC_CCCC_CCCC,
    0xF0F0_F0F0_F0F0_F0F0,
    0xFF00_FF00_FF00_FF00,
    0xFFFF_0000_FFFF_0000,
    0xFFFF_FFFF_0000_0000,
];

/// Sum of the set bit indices within one word: `Σ_b 2^b·popcount(w & MASK[b])`.
#[inline(always)]
fn word_index_sum(w: u64) -> u64 {
    INDEX_BIT_MASKS
        .iter()
        .enumerate()
        .map(|(b, &m)| u64::from((w & m).count_ones()) << b)
        .sum()
}

/// Carry-save adder over three bit vectors: `(carries, sums)`.
#[inline(always)]
fn csa(a: u64, b: u64, c: u64) -> (u64, u64) {
    let u = a ^ b;
    ((a & b) | (u & c), u ^ c)
}

/// Sum of the set bits' indices in a bitset. Word-index part:
/// `64·Σ_i i·popcount(w_i)`. Bit-in-word part: the words are added
/// column-wise into bit-sliced counters (Harley-Seal carry-save adders,
/// 16 words per step), and `word_index_sum` is linear in the column
/// counts, so it is taken of the counter planes only (once per 16 words)
/// instead of per word. Uses the CPU's popcount instruction where it has
/// one (detected at run time).
fn bitset_low_sum(words: &[u64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vpopcntdq") {
            // SAFETY: the CPU supports AVX-512F and VPOPCNTDQ (the latter
            // implies the former; checked just above).
            return unsafe { bitset_low_sum_avx512(words) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU supports `popcnt` (checked just above).
            return unsafe { bitset_low_sum_hw(words) };
        }
    }
    bitset_low_sum_plain(words)
}

/// [`bitset_low_sum`] eight words at a time with AVX-512 popcounts: per
/// lane, the word's popcount times its index (word-index part) and the
/// popcounts of the word under each [`INDEX_BIT_MASKS`] mask (bit-in-word
/// part); the tail below eight words as in the plain form.
///
/// # Safety
/// The CPU must support `avx512f` and `avx512vpopcntdq`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn bitset_low_sum_avx512(words: &[u64]) -> u64 {
    use std::arch::x86_64::{
        _mm512_add_epi64, _mm512_and_si512, _mm512_loadu_si512, _mm512_mul_epu32,
        _mm512_popcnt_epi64, _mm512_reduce_add_epi64, _mm512_set1_epi64, _mm512_setr_epi64,
        _mm512_setzero_si512,
    };
    let chunks = words.chunks_exact(8);
    let tail = chunks.remainder();
    let masks = INDEX_BIT_MASKS.map(|m| _mm512_set1_epi64(m as i64));
    let mut cols = [_mm512_setzero_si512(); 6];
    let mut weighted = _mm512_setzero_si512();
    // Word indices fit in 32 bits and popcounts in 7: `mul_epu32` (low
    // 32 bits of each lane, 64-bit products) is exact.
    let mut index = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
    let eight = _mm512_set1_epi64(8);
    for c in chunks {
        // SAFETY: `c` holds eight u64, 64 readable bytes (unaligned load).
        let v = unsafe { _mm512_loadu_si512(c.as_ptr().cast()) };
        weighted = _mm512_add_epi64(weighted, _mm512_mul_epu32(_mm512_popcnt_epi64(v), index));
        index = _mm512_add_epi64(index, eight);
        for (col, m) in cols.iter_mut().zip(&masks) {
            *col = _mm512_add_epi64(*col, _mm512_popcnt_epi64(_mm512_and_si512(v, *m)));
        }
    }
    let mut sum = (_mm512_reduce_add_epi64(weighted) as u64) << 6;
    for (b, col) in cols.iter().enumerate() {
        sum += (_mm512_reduce_add_epi64(*col) as u64) << b;
    }
    let base = words.len() - tail.len();
    sum + tail
        .iter()
        .enumerate()
        .map(|(i, &w)| (((base + i) as u64 * u64::from(w.count_ones())) << 6) + word_index_sum(w))
        .sum::<u64>()
}

/// [`bitset_low_sum_plain`] compiled with `popcnt`.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn bitset_low_sum_hw(words: &[u64]) -> u64 {
    bitset_low_sum_plain(words)
}

/// One Harley–Seal step over eight words (`c[..8]`): adds them into the
/// running `ones` and `twos` and returns the two carries into the fours.
#[inline(always)]
fn csa8(ones: &mut u64, twos: &mut u64, c: &[u64]) -> (u64, u64) {
    let (ta, o) = csa(*ones, c[0], c[1]);
    let (tb, o) = csa(o, c[2], c[3]);
    let (fa, t) = csa(*twos, ta, tb);
    let (ta, o) = csa(o, c[4], c[5]);
    let (tb, o) = csa(o, c[6], c[7]);
    let (fb, t) = csa(t, ta, tb);
    (*ones, *twos) = (o, t);
    (fa, fb)
}

#[inline(always)]
fn bitset_low_sum_plain(words: &[u64]) -> u64 {
    let weighted: u64 = words
        .iter()
        .enumerate()
        .map(|(i, w)| i as u64 * u64::from(w.count_ones()))
        .sum();
    let (mut ones, mut twos, mut fours, mut eights) = (0u64, 0u64, 0u64, 0u64);
    let mut sixteens = 0u64;
    let mut chunks = words.chunks_exact(16);
    for c in &mut chunks {
        let (fa, fb) = csa8(&mut ones, &mut twos, &c[..8]);
        let (ea, f) = csa(fours, fa, fb);
        let (fa, fb) = csa8(&mut ones, &mut twos, &c[8..]);
        let (eb, f) = csa(f, fa, fb);
        let (s, e) = csa(eights, ea, eb);
        (fours, eights) = (f, e);
        sixteens += word_index_sum(s);
    }
    let rest: u64 = chunks.remainder().iter().map(|&w| word_index_sum(w)).sum();
    (weighted << 6)
        + 16 * sixteens
        + 8 * word_index_sum(eights)
        + 4 * word_index_sum(fours)
        + 2 * word_index_sum(twos)
        + word_index_sum(ones)
        + rest
}

/// Sum of the values of an array container (at most 65,536 of them).
///
/// Sixteen u32 lanes, each summing at most 4,096 values below 2^16 (under
/// 2^28), which the compiler vectorizes; a u64 sum of u16s did not (17%
/// of a pairwise TR.BITOP OR), nor did one u32 sum over the slice (about
/// 3 instructions per value under callgrind).
///
/// With AVX2 (detected at run time) the same loop takes 32-byte vectors:
/// the sums of a census1881 pairwise TR.BITOP OR fell from about 9,900 to
/// 3,500 instructions per call (`bench/tr-callgrind`).
fn array_low_sum(a: &[u16]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { array_low_sum_avx2(a) };
        }
    }
    array_low_sum_plain(a)
}

/// [`array_low_sum_plain`] compiled for AVX2.
///
/// # Safety
/// The CPU must support `avx2`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn array_low_sum_avx2(a: &[u16]) -> u64 {
    array_low_sum_plain(a)
}

#[inline(always)]
fn array_low_sum_plain(a: &[u16]) -> u64 {
    let mut lanes = [0u32; 16];
    let mut chunks = a.chunks_exact(16);
    for c in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l += u32::from(v);
        }
    }
    let tail: u64 = chunks.remainder().iter().map(|&v| u64::from(v)).sum();
    lanes.iter().map(|&l| u64::from(l)).sum::<u64>() + tail
}

/// Sum of the low 16-bit parts of a container's values, without visiting
/// values one by one (runs: arithmetic series; bitsets: popcounts).
pub(crate) fn low_sum(r: ContainerRef<'_>) -> u64 {
    match r {
        ContainerRef::Run { runs, .. } => runs
            .iter()
            .map(|x| {
                let (a, n) = (u64::from(x[0]), u64::from(x[1]) + 1);
                n * a + n * (n - 1) / 2
            })
            .sum(),
        ContainerRef::Array(a) => array_low_sum(a),
        ContainerRef::Bitset { words, .. } => bitset_low_sum(&words[..]),
    }
}

/// Sum of the values of `r` within `lo..=up` (`lo <= up`): the runs or the
/// array values in the interval, found by binary search; a bitset's words
/// in it, the two end words masked.
pub(crate) fn range_low_sum(r: ContainerRef<'_>, lo: u16, up: u16) -> u64 {
    match r {
        ContainerRef::Run { runs, .. } => {
            let first = runs.partition_point(|&x| run::end(x) < lo);
            runs[first..]
                .iter()
                .take_while(|x| x[0] <= up)
                .map(|&x| {
                    let (a, b) = (u64::from(x[0].max(lo)), u64::from(run::end(x).min(up)));
                    (a + b) * (b - a + 1) / 2
                })
                .sum()
        }
        ContainerRef::Array(a) => {
            let (i, j) = (
                a.partition_point(|&v| v < lo),
                a.partition_point(|&v| v <= up),
            );
            array_low_sum(&a[i..j])
        }
        ContainerRef::Bitset { words, .. } => {
            let (lw, hw) = (usize::from(lo >> 6), usize::from(up >> 6));
            let mask = |w: usize| {
                let from = if w == lw { u32::from(lo & 63) } else { 0 };
                let to = if w == hw { u32::from(up & 63) } else { 63 };
                (u64::MAX >> (63 - to)) & (u64::MAX << from)
            };
            let edge = |w: usize| {
                let x = words[w] & mask(w);
                (w as u64 * 64) * u64::from(x.count_ones()) + word_index_sum(x)
            };
            if lw == hw {
                return edge(lw);
            }
            let inner = &words[lw + 1..hw];
            let count: u64 = inner.iter().map(|w| u64::from(w.count_ones())).sum();
            edge(lw) + edge(hw) + (lw as u64 + 1) * 64 * count + bitset_low_sum(inner)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roaringd_bitmap::ContainerBuf;
    use std::collections::BTreeSet;

    #[test]
    fn range_low_sum_matches_a_plain_sum_for_every_kind() {
        let mut x: u64 = 7;
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            (x >> 48) as u16
        };
        for density in [10u32, 3000, 5000, 40_000] {
            let mut vals: Vec<u16> = (0..density).map(|_| next()).collect();
            vals.sort_unstable();
            vals.dedup();
            let mut c = ContainerBuf::from_sorted(&vals);
            for _ in 0..2 {
                let mut ends = vec![
                    (0, u16::MAX),
                    (0, 0),
                    (u16::MAX, u16::MAX),
                    (64, 127),
                    (63, 64),
                ];
                ends.extend((0..40).map(|_| {
                    let (a, b) = (next(), next());
                    (a.min(b), a.max(b))
                }));
                for (lo, up) in ends {
                    let want: u64 = vals
                        .iter()
                        .filter(|&&v| (lo..=up).contains(&v))
                        .map(|&v| u64::from(v))
                        .sum();
                    assert_eq!(
                        range_low_sum(c.as_ref(), lo, up),
                        want,
                        "{:?} {lo}..={up}",
                        c.kind()
                    );
                }
                c.optimize();
            }
        }
        // A run container of 437 runs.
        let vals: Vec<u16> = (0..=u16::MAX).filter(|v| (v / 50) % 3 == 0).collect();
        let mut c = ContainerBuf::from_sorted(&vals);
        c.optimize();
        assert_eq!(c.kind(), roaringd_bitmap::Kind::Run);
        for (lo, up) in [
            (0, u16::MAX),
            (49, 50),
            (50, 149),
            (151, 60_001),
            (65_500, u16::MAX),
        ] {
            let want: u64 = vals
                .iter()
                .filter(|&&v| (lo..=up).contains(&v))
                .map(|&v| u64::from(v))
                .sum();
            assert_eq!(range_low_sum(c.as_ref(), lo, up), want, "{lo}..={up}");
        }
    }

    #[test]
    fn low_sum_matches_a_plain_sum_for_every_kind() {
        let mut x: u64 = 99;
        for density in [10u32, 3000, 5000, 40_000, 65_536] {
            let mut vals: Vec<u16> = (0..density)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (x >> 48) as u16
                })
                .collect();
            vals.sort_unstable();
            vals.dedup();
            let mut c = ContainerBuf::from_sorted(&vals);
            let want: u64 = vals.iter().map(|&v| u64::from(v)).sum();
            assert_eq!(low_sum(c.as_ref()), want, "{:?}", c.kind());
            if let ContainerRef::Bitset { words, .. } = c.as_ref() {
                assert_eq!(bitset_low_sum_plain(&words[..]), want);
            }
            c.optimize();
            assert_eq!(low_sum(c.as_ref()), want, "{:?}", c.kind());
        }
        // Array sums: the lanes' bound (all 65,536 values) and the tail.
        let all: Vec<u16> = (0..=u16::MAX).collect();
        let plain = |a: &[u16]| a.iter().map(|&v| u64::from(v)).sum::<u64>();
        for n in [0usize, 1, 15, 16, 17, 4095, 4096, 65_536] {
            for a in [&all[..n], &all[all.len() - n..]] {
                assert_eq!(array_low_sum(a), plain(a), "{n} values");
                assert_eq!(array_low_sum_plain(a), plain(a), "{n} values");
            }
        }
        // Odd lengths and dense random words (the carry-save path and its remainder).
        let words: Vec<u64> = (0..1037)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                x ^ (x >> 17)
            })
            .collect();
        for n in [0usize, 1, 15, 16, 17, 1024, 1037] {
            let w = &words[..n];
            let want: u64 = (0..n * 64)
                .filter(|&p| w[p / 64] >> (p % 64) & 1 == 1)
                .map(|p| p as u64)
                .sum();
            assert_eq!(bitset_low_sum(w), want, "{n}");
            assert_eq!(bitset_low_sum_plain(w), want, "{n}");
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx512vpopcntdq") {
                // SAFETY: checked just above.
                assert_eq!(unsafe { bitset_low_sum_avx512(w) }, want, "{n}");
            }
        }
        let ones = [u64::MAX; 1024];
        assert_eq!(bitset_low_sum(&ones), 65_535 * 65_536 / 2);
        let full = ContainerBuf::from_range(0, u16::MAX);
        assert_eq!(low_sum(full.as_ref()), 65_535 * 65_536 / 2);
    }

    /// Random sets and clears (kind changes included), the facts kept by
    /// `after_flip` against the facts recomputed.
    #[test]
    fn facts_after_a_flip_are_the_facts_of_the_new_container() {
        let mut x: u64 = 7;
        let mut rnd = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        for round in 0..40 {
            let span = [16u64, 300, 65_536][round % 3];
            let mut model = BTreeSet::new();
            let mut c = ContainerBuf::new();
            let mut facts: Option<BlockFacts> = None;
            for _ in 0..600 {
                let lo = rnd(span) as u16;
                let value = rnd(3) != 0;
                if model.contains(&lo) == value {
                    continue;
                }
                if value {
                    model.insert(lo);
                    c.insert(lo);
                } else {
                    model.remove(&lo);
                    c.remove(lo);
                }
                if rnd(50) == 0 {
                    c.optimize();
                }
                facts = match facts {
                    Some(f) => f.after_flip(c.as_ref(), lo, value),
                    None => BlockFacts::of(c.as_ref()),
                };
                assert_eq!(facts, BlockFacts::of(c.as_ref()));
                let want = model.iter().map(|&v| u64::from(v)).sum::<u64>();
                assert_eq!(facts.map_or(0, |f| u64::from(f.low_sum)), want);
            }
        }
        let full = ContainerBuf::from_range(0, u16::MAX);
        let f = BlockFacts::of(full.as_ref()).unwrap();
        assert_eq!(
            (f.min, f.max, u64::from(f.low_sum)),
            (0, u16::MAX, 65_535 * 65_536 / 2)
        );
    }
}
