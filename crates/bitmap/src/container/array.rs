//! Array containers: sorted distinct u16 values, at most 4,096.
//!
//! Free functions over `&[u16]` payloads; they never change a container's
//! kind (that is `kind_policy`'s job).

use crate::codec::BITSET_WORDS;

/// True when `v` is present.
///
/// The standard library's branchless binary search. (Narrowing to 32
/// values and comparing them all at once measured 5-15% slower on the
/// membership benchmark, so it was not kept.)
#[inline]
pub fn contains(a: &[u16], v: u16) -> bool {
    a.binary_search(&v).is_ok()
}

/// Number of values ≤ `v`.
#[inline]
pub fn rank(a: &[u16], v: u16) -> u32 {
    a.partition_point(|&x| x <= v) as u32
}

/// Number of values in `lo..=hi`.
pub fn count_range(a: &[u16], lo: u16, hi: u16) -> u32 {
    let start = a.partition_point(|&x| x < lo);
    let end = a.partition_point(|&x| x <= hi);
    end.saturating_sub(start) as u32
}

/// Sets the bits of every value in `a` in `words`; returns how many were newly set.
pub fn set_bits(a: &[u16], words: &mut [u64; BITSET_WORDS]) -> u32 {
    let mut added = 0u32;
    for &v in a {
        let w = &mut words[(v >> 6) as usize];
        let m = 1u64 << (v & 63);
        added += ((*w & m) == 0) as u32;
        *w |= m;
    }
    added
}

/// Number of maximal runs of consecutive values.
pub fn count_runs(a: &[u16]) -> usize {
    if a.is_empty() {
        return 0;
    }
    1 + a
        .windows(2)
        .filter(|w| w[1] != w[0].wrapping_add(1))
        .count()
}

/// Writes the runs of `a` to `out` as (start, length-1) pairs.
pub fn to_runs(a: &[u16], out: &mut Vec<[u16; 2]>) {
    let mut i = 0;
    while i < a.len() {
        let start = a[i];
        let mut j = i;
        while j + 1 < a.len() && a[j + 1] == a[j] + 1 {
            j += 1;
        }
        out.push([start, (j - i) as u16]);
        i = j + 1;
    }
}

/// Values of `a` that are ≥ `lo`, as a sub-slice.
#[inline]
pub fn tail_from(a: &[u16], lo: u16) -> &[u16] {
    &a[a.partition_point(|&x| x < lo)..]
}
