//! Intersection kernels for every pair of kinds (canonical order array, run, bitset).

use crate::codec::{ARRAY_MAX, BITSET_WORDS};
use crate::container::{bitset, run, ContainerBuf, ContainerRef};
use crate::kernels;
use crate::setops::sink::{AnyHit, Count, Materialize, Sink};

type Words = [u64; BITSET_WORDS];

pub fn and_array_array(a: &[u16], b: &[u16]) -> ContainerBuf {
    and_array_array_opt(a, b).unwrap_or_default()
}

fn and_array_array_opt(a: &[u16], b: &[u16]) -> Option<ContainerBuf> {
    ContainerBuf::try_build_array(a.len().min(b.len()), |out| {
        (kernels::get().and_array_array)(a, b, out)
    })
}

fn array_bitset_into<S: Sink>(a: &[u16], w: &Words, sink: &mut S) {
    for &v in a {
        if bitset::contains(w, v) {
            sink.push(v);
            if sink.done() {
                return;
            }
        }
    }
}

pub fn and_array_bitset(a: &[u16], w: &Words) -> ContainerBuf {
    and_array_bitset_opt(a, w).unwrap_or_default()
}

fn and_array_bitset_opt(a: &[u16], w: &Words) -> Option<ContainerBuf> {
    ContainerBuf::try_build_array(a.len(), |s| {
        let mut k = 0;
        for &v in a {
            s[k] = v;
            k += bitset::contains(w, v) as usize;
        }
        k
    })
}

fn array_run_into<S: Sink>(a: &[u16], runs: &[[u16; 2]], sink: &mut S) {
    let mut j = 0;
    for &v in a {
        while j < runs.len() && run::end(runs[j]) < v {
            j += 1;
        }
        if j == runs.len() {
            return;
        }
        if runs[j][0] <= v {
            sink.push(v);
            if sink.done() {
                return;
            }
        }
    }
}

pub fn and_array_run(a: &[u16], runs: &[[u16; 2]]) -> ContainerBuf {
    and_array_run_opt(a, runs).unwrap_or_default()
}

fn and_array_run_opt(a: &[u16], runs: &[[u16; 2]]) -> Option<ContainerBuf> {
    ContainerBuf::try_build_array(a.len(), |out| {
        let mut s = Materialize { out, len: 0 };
        array_run_into(a, runs, &mut s);
        s.len
    })
}

pub fn and_run_run(a: &[[u16; 2]], b: &[[u16; 2]]) -> ContainerBuf {
    let mut v = Vec::with_capacity(a.len() + b.len());
    run::intersect(a, b, &mut v);
    ContainerBuf::from_run_list_optimized(&v)
}

#[allow(clippy::needless_range_loop)] // word index drives both input and masks
pub fn and_run_bitset(runs: &[[u16; 2]], w: &Words) -> ContainerBuf {
    let card = and_run_bitset_len(runs, w);
    if card as usize <= ARRAY_MAX {
        let mut out = ContainerBuf::array_with_capacity(card as usize);
        let s = out.array_spare_mut();
        let mut k = 0;
        for r in runs {
            let (lo, hi) = (r[0] as usize, run::end(*r) as usize);
            for wi in lo / 64..=hi / 64 {
                let mut word = w[wi];
                if wi == lo / 64 {
                    word &= u64::MAX << (lo % 64);
                }
                if wi == hi / 64 {
                    word &= u64::MAX >> (63 - hi % 64);
                }
                while word != 0 {
                    s[k] = (wi * 64) as u16 + word.trailing_zeros() as u16;
                    k += 1;
                    word &= word - 1;
                }
            }
        }
        out.set_array_len(k);
        out
    } else {
        let mut out = ContainerBuf::bitset_zeroed();
        let o = out.bitset_words_mut();
        for r in runs {
            let (lo, hi) = (r[0] as usize, run::end(*r) as usize);
            for wi in lo / 64..=hi / 64 {
                let mut m = u64::MAX;
                if wi == lo / 64 {
                    m &= u64::MAX << (lo % 64);
                }
                if wi == hi / 64 {
                    m &= u64::MAX >> (63 - hi % 64);
                }
                o[wi] |= w[wi] & m;
            }
        }
        out.set_bitset_card(card);
        out
    }
}

pub fn and_bitset_bitset(a: &Words, b: &Words) -> ContainerBuf {
    let k = kernels::get();
    let card = (k.and_bitset_bitset_len)(a, b);
    if card as usize <= ARRAY_MAX && card >= 1024 {
        // Dense enough for the vector bitset-to-array kernel: AND into a
        // scratch bitset first, then convert.
        let mut out = ContainerBuf::array_with_capacity(card as usize);
        let mut tmp = [0u64; BITSET_WORDS];
        (k.and_bitset_bitset)(a, b, &mut tmp);
        let n = (k.bitset_to_array)(&tmp, out.array_spare_mut());
        out.set_array_len(n);
        out
    } else if card as usize <= ARRAY_MAX {
        let mut out = ContainerBuf::array_with_capacity(card as usize);
        let s = out.array_spare_mut();
        let mut n = 0;
        for (wi, (x, y)) in a.iter().zip(b.iter()).enumerate() {
            let mut w = x & y;
            while w != 0 {
                s[n] = (wi * 64) as u16 + w.trailing_zeros() as u16;
                n += 1;
                w &= w - 1;
            }
        }
        out.set_array_len(n);
        out
    } else {
        let mut out = ContainerBuf::bitset_zeroed();
        let c = (k.and_bitset_bitset)(a, b, out.bitset_words_mut());
        out.set_bitset_card(c);
        out
    }
}

pub fn and_array_bitset_len(a: &[u16], w: &Words) -> u32 {
    a.iter().map(|&v| bitset::contains(w, v) as u32).sum()
}

pub fn and_array_run_len(a: &[u16], runs: &[[u16; 2]]) -> u32 {
    let mut c = Count(0);
    array_run_into(a, runs, &mut c);
    c.0 as u32
}

pub fn and_run_bitset_len(runs: &[[u16; 2]], w: &Words) -> u32 {
    runs.iter()
        .map(|r| bitset::count_range(w, r[0], run::end(*r)))
        .sum()
}

pub fn intersects_array_array(a: &[u16], b: &[u16]) -> bool {
    let mut s = AnyHit(false);
    kernels::scalar::intersect_into(a, b, &mut s);
    s.0
}

pub fn intersects_array_bitset(a: &[u16], w: &Words) -> bool {
    let mut s = AnyHit(false);
    array_bitset_into(a, w, &mut s);
    s.0
}

pub fn intersects_array_run(a: &[u16], runs: &[[u16; 2]]) -> bool {
    let mut s = AnyHit(false);
    array_run_into(a, runs, &mut s);
    s.0
}

pub fn intersects_run_run(a: &[[u16; 2]], b: &[[u16; 2]]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (ea, eb) = (run::end(a[i]), run::end(b[j]));
        if a[i][0].max(b[j][0]) <= ea.min(eb) {
            return true;
        }
        if ea < eb {
            i += 1;
        } else {
            j += 1;
        }
    }
    false
}

pub fn intersects_run_bitset(runs: &[[u16; 2]], w: &Words) -> bool {
    runs.iter()
        .any(|r| bitset::count_range(w, r[0], run::end(*r)) > 0)
}

/// `a ∩ b`, normalized.
pub fn and(a: ContainerRef<'_>, b: ContainerRef<'_>) -> ContainerBuf {
    use ContainerRef::*;
    match (a, b) {
        (Array(x), Array(y)) => and_array_array(x, y),
        (Array(x), Run { runs, .. }) | (Run { runs, .. }, Array(x)) => and_array_run(x, runs),
        (Array(x), Bitset { words, .. }) | (Bitset { words, .. }, Array(x)) => {
            and_array_bitset(x, words)
        }
        (Run { runs: x, .. }, Run { runs: y, .. }) => and_run_run(x, y),
        (Run { runs, .. }, Bitset { words, .. }) | (Bitset { words, .. }, Run { runs, .. }) => {
            and_run_bitset(runs, words)
        }
        (Bitset { words: x, .. }, Bitset { words: y, .. }) => and_bitset_bitset(x, y),
    }
}

/// `a ∩ b`, normalized, or `None` when empty (array results then allocate nothing).
pub fn and_nonempty(a: ContainerRef<'_>, b: ContainerRef<'_>) -> Option<ContainerBuf> {
    use ContainerRef::*;
    match (a, b) {
        (Array(x), Array(y)) => and_array_array_opt(x, y),
        (Array(x), Run { runs, .. }) | (Run { runs, .. }, Array(x)) => and_array_run_opt(x, runs),
        (Array(x), Bitset { words, .. }) | (Bitset { words, .. }, Array(x)) => {
            and_array_bitset_opt(x, words)
        }
        _ => Some(and(a, b)).filter(|c| !c.is_empty()),
    }
}

/// `|a ∩ b|`; allocates nothing.
pub fn and_len(a: ContainerRef<'_>, b: ContainerRef<'_>) -> u32 {
    use ContainerRef::*;
    match (a, b) {
        (Array(x), Array(y)) => (kernels::get().and_array_array_len)(x, y) as u32,
        (Array(x), Run { runs, .. }) | (Run { runs, .. }, Array(x)) => and_array_run_len(x, runs),
        (Array(x), Bitset { words, .. }) | (Bitset { words, .. }, Array(x)) => {
            and_array_bitset_len(x, words)
        }
        (Run { runs: x, .. }, Run { runs: y, .. }) => run::intersect_len(x, y),
        (Run { runs, .. }, Bitset { words, .. }) | (Bitset { words, .. }, Run { runs, .. }) => {
            and_run_bitset_len(runs, words)
        }
        (Bitset { words: x, .. }, Bitset { words: y, .. }) => {
            (kernels::get().and_bitset_bitset_len)(x, y)
        }
    }
}

/// `a ∩ b ≠ ∅`, stopping at the first common value.
pub fn intersects(a: ContainerRef<'_>, b: ContainerRef<'_>) -> bool {
    use ContainerRef::*;
    match (a, b) {
        (Array(x), Array(y)) => intersects_array_array(x, y),
        (Array(x), Run { runs, .. }) | (Run { runs, .. }, Array(x)) => {
            intersects_array_run(x, runs)
        }
        (Array(x), Bitset { words, .. }) | (Bitset { words, .. }, Array(x)) => {
            intersects_array_bitset(x, words)
        }
        (Run { runs: x, .. }, Run { runs: y, .. }) => intersects_run_run(x, y),
        (Run { runs, .. }, Bitset { words, .. }) | (Bitset { words, .. }, Run { runs, .. }) => {
            intersects_run_bitset(runs, words)
        }
        (Bitset { words: x, .. }, Bitset { words: y, .. }) => {
            (kernels::get().intersects_bitset_bitset)(x, y)
        }
    }
}

/// `a ∩= b`, normalized.
pub fn and_in_place(a: &mut ContainerBuf, b: ContainerRef<'_>) {
    match (a.as_ref(), b) {
        (ContainerRef::Bitset { .. }, ContainerRef::Bitset { words, .. }) => {
            let card = (kernels::get().and_bitset_bitset_in_place)(a.bitset_words_mut(), words);
            a.set_bitset_card(card);
            a.normalize();
        }
        (ContainerRef::Array(x), _) => {
            // Compact in place: the write index never passes the read index.
            let n = x.len();
            let mut k = 0;
            for i in 0..n {
                let v = a.array_storage_mut()[i];
                if b.contains(v) {
                    a.array_storage_mut()[k] = v;
                    k += 1;
                }
            }
            a.set_array_len(k);
        }
        (x, y) => *a = and(x, y),
    }
}
