//! Reference kernels in plain Rust, always compiled and the fallback of every
//! vector kernel. Contracts are those of the fields of [`Kernels`](super::Kernels).

use crate::codec::BITSET_WORDS;
use crate::setops::sink::{Count, Materialize, Sink};

type Words = [u64; BITSET_WORDS];

/// Ratio of sizes above which intersection gallops through the larger array.
const GALLOP_RATIO: usize = 32;

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
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        if x == y {
            i += 1;
            j += 1;
        } else if x < y {
            out[k] = x;
            k += 1;
            i += 1;
        } else {
            out[k] = y;
            k += 1;
            j += 1;
        }
    }
    let rest = if i < a.len() { &a[i..] } else { &b[j..] };
    out[k..k + rest.len()].copy_from_slice(rest);
    k + rest.len()
}

pub fn andnot_array_array(a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        if x < y {
            out[k] = x;
            k += 1;
            i += 1;
        } else if x == y {
            i += 1;
            j += 1;
        } else {
            j += 1;
        }
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

pub fn popcount(words: &[u64]) -> u64 {
    words.iter().map(|w| w.count_ones() as u64).sum()
}
