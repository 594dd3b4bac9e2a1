//! Reference kernels in plain Rust, always compiled and the fallback of every
//! vector kernel. Contracts are those of the fields of [`Kernels`](super::Kernels).

use crate::codec::BITSET_WORDS;
use crate::setops::sink::{Count, Materialize, Sink};

type Words = [u64; BITSET_WORDS];

/// Ratio of sizes above which intersection gallops through the larger array.
const GALLOP_RATIO: usize = 32;

/// Size ratio above which merges walk the smaller side and search or copy runs of the larger.
pub const SKEW_RATIO: usize = 16;

/// True when one side is at least [`SKEW_RATIO`] times the other (and non-trivial).
#[inline]
pub fn skewed(a: &[u16], b: &[u16]) -> bool {
    let (s, l) = if a.len() <= b.len() {
        (a.len(), b.len())
    } else {
        (b.len(), a.len())
    };
    l >= 64 && l / s.max(1) >= SKEW_RATIO
}

/// First index ≥ `from` whose value is ≥ `v` (exponential then binary search).
#[inline]
fn lower_bound_from(s: &[u16], from: usize, v: u16) -> usize {
    let mut lo = from;
    let mut step = 1;
    let mut hi = from;
    while hi < s.len() && s[hi] < v {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    let hi = hi.min(s.len());
    lo + s[lo..hi].partition_point(|&x| x < v)
}

/// Merge of a small sorted list into a large one: copies runs of `large`
/// between the small side's values. `keep_equal`: emit a value present in both;
/// `keep_small`: emit small-side values absent from `large`; `keep_large`: emit large-side values.
fn merge_skewed(
    small: &[u16],
    large: &[u16],
    out: &mut [u16],
    keep_equal: bool,
    keep_small: bool,
    keep_large: bool,
) -> usize {
    let (mut cur, mut k) = (0usize, 0usize);
    for &v in small {
        let p = lower_bound_from(large, cur, v);
        if keep_large {
            out[k..k + (p - cur)].copy_from_slice(&large[cur..p]);
            k += p - cur;
        }
        if p < large.len() && large[p] == v {
            if keep_equal {
                out[k] = v;
                k += 1;
            }
            cur = p + 1;
        } else {
            if keep_small {
                out[k] = v;
                k += 1;
            }
            cur = p;
        }
    }
    if keep_large {
        out[k..k + (large.len() - cur)].copy_from_slice(&large[cur..]);
        k += large.len() - cur;
    }
    k
}

/// Intersection of two sorted arrays into any sink.
pub fn intersect_into<S: Sink>(a: &[u16], b: &[u16], sink: &mut S) {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.is_empty() {
        return;
    }
    if large.len() / small.len() >= GALLOP_RATIO {
        let mut base = 0usize;
        for &v in small {
            // Exponential search for the first position in `large` ≥ v.
            let mut step = 1usize;
            let mut hi = base;
            while hi < large.len() && large[hi] < v {
                base = hi;
                hi += step;
                step *= 2;
            }
            let hi = hi.min(large.len());
            base += large[base..hi].partition_point(|&x| x < v);
            if base >= large.len() {
                return;
            }
            if large[base] == v {
                sink.push(v);
                if sink.done() {
                    return;
                }
            }
        }
        return;
    }
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        if x == y {
            sink.push(x);
            if sink.done() {
                return;
            }
            i += 1;
            j += 1;
        } else if x < y {
            i += 1;
        } else {
            j += 1;
        }
    }
}

pub fn and_array_array(a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    let mut s = Materialize { out, len: 0 };
    intersect_into(a, b, &mut s);
    s.len
}

pub fn and_array_array_len(a: &[u16], b: &[u16]) -> usize {
    let mut s = Count(0);
    intersect_into(a, b, &mut s);
    s.0
}

pub fn or_array_array(a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    if skewed(a, b) {
        let (s, l) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        return merge_skewed(s, l, out, true, true, true);
    }
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out[k] = x.min(y);
        i += (x <= y) as usize;
        j += (y <= x) as usize;
        k += 1;
    }
    let rest = if i < a.len() { &a[i..] } else { &b[j..] };
    out[k..k + rest.len()].copy_from_slice(rest);
    k + rest.len()
}

pub fn xor_array_array(a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    if skewed(a, b) {
        let (s, l) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        return merge_skewed(s, l, out, false, true, true);
    }
    // Branchless merge: always write the smaller head, keep it unless both heads are equal.
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out[k] = x.min(y);
        k += (x != y) as usize;
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    let rest = if i < a.len() { &a[i..] } else { &b[j..] };
    out[k..k + rest.len()].copy_from_slice(rest);
    k + rest.len()
}

pub fn andnot_array_array(a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    if skewed(a, b) {
        if a.len() <= b.len() {
            // Few values of `a`: keep those `b` lacks.
            return merge_skewed(a, b, out, false, true, false);
        }
        // Few values of `b`: copy `a` around them.
        let (mut cur, mut k) = (0usize, 0usize);
        for &v in b {
            let p = lower_bound_from(a, cur, v);
            out[k..k + (p - cur)].copy_from_slice(&a[cur..p]);
            k += p - cur;
            cur = if p < a.len() && a[p] == v { p + 1 } else { p };
        }
        out[k..k + (a.len() - cur)].copy_from_slice(&a[cur..]);
        return k + a.len() - cur;
    }
    // Branchless merge: write the head of `a`, keep it only when it is below the head of `b`.
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out[k] = x;
        k += (x < y) as usize;
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    let rest = &a[i..];
    out[k..k + rest.len()].copy_from_slice(rest);
    k + rest.len()
}

#[inline]
fn binop(a: &Words, b: &Words, out: &mut Words, f: impl Fn(u64, u64) -> u64) -> u32 {
    let mut n = 0u32;
    for ((o, &x), &y) in out.iter_mut().zip(a.iter()).zip(b.iter()) {
        let w = f(x, y);
        *o = w;
        n += w.count_ones();
    }
    n
}

#[inline]
fn binop_in_place(a: &mut Words, b: &Words, f: impl Fn(u64, u64) -> u64) -> u32 {
    let mut n = 0u32;
    for (x, &y) in a.iter_mut().zip(b.iter()) {
        let w = f(*x, y);
        *x = w;
        n += w.count_ones();
    }
    n
}

pub fn and_bitset_bitset(a: &Words, b: &Words, out: &mut Words) -> u32 {
    binop(a, b, out, |x, y| x & y)
}
pub fn or_bitset_bitset(a: &Words, b: &Words, out: &mut Words) -> u32 {
    binop(a, b, out, |x, y| x | y)
}
pub fn xor_bitset_bitset(a: &Words, b: &Words, out: &mut Words) -> u32 {
    binop(a, b, out, |x, y| x ^ y)
}
pub fn andnot_bitset_bitset(a: &Words, b: &Words, out: &mut Words) -> u32 {
    binop(a, b, out, |x, y| x & !y)
}
pub fn and_bitset_bitset_in_place(a: &mut Words, b: &Words) -> u32 {
    binop_in_place(a, b, |x, y| x & y)
}
pub fn or_bitset_bitset_in_place(a: &mut Words, b: &Words) -> u32 {
    binop_in_place(a, b, |x, y| x | y)
}
pub fn xor_bitset_bitset_in_place(a: &mut Words, b: &Words) -> u32 {
    binop_in_place(a, b, |x, y| x ^ y)
}
pub fn andnot_bitset_bitset_in_place(a: &mut Words, b: &Words) -> u32 {
    binop_in_place(a, b, |x, y| x & !y)
}

pub fn and_bitset_bitset_len(a: &Words, b: &Words) -> u32 {
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x & y).count_ones())
        .sum()
}

pub fn intersects_bitset_bitset(a: &Words, b: &Words) -> bool {
    a.chunks_exact(16)
        .zip(b.chunks_exact(16))
        .any(|(x, y)| x.iter().zip(y).fold(0u64, |acc, (p, q)| acc | (p & q)) != 0)
}

pub fn or_words_in_place(a: &mut [u64], b: &[u64]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x |= *y;
    }
}

pub fn set_list(words: &mut Words, list: &[u16]) {
    for &v in list {
        words[(v >> 6) as usize] |= 1u64 << (v & 63);
    }
}

pub fn bitset_to_array(words: &Words, out: &mut [u16]) -> usize {
    crate::container::bitset::to_array(words, out)
}

pub fn popcount(words: &[u64]) -> u64 {
    words.iter().map(|w| w.count_ones() as u64).sum()
}
