//! Difference kernels `a \ b` for every ordered pair of kinds (canonical order array, run, bitset).

use crate::codec::BITSET_WORDS;
use crate::container::{bitset, run, ContainerBuf, ContainerRef};
use crate::kernels;

type Words = [u64; BITSET_WORDS];

pub fn andnot_array_array(a: &[u16], b: &[u16]) -> ContainerBuf {
    andnot_array_array_opt(a, b).unwrap_or_default()
}

fn andnot_array_array_opt(a: &[u16], b: &[u16]) -> Option<ContainerBuf> {
    ContainerBuf::try_build_array(a.len(), |out| {
        (kernels::get().andnot_array_array)(a, b, out)
    })
}

pub fn andnot_array_bitset(a: &[u16], w: &Words) -> ContainerBuf {
    andnot_array_bitset_opt(a, w).unwrap_or_default()
}

fn andnot_array_bitset_opt(a: &[u16], w: &Words) -> Option<ContainerBuf> {
    ContainerBuf::try_build_array(a.len(), |s| {
        let mut k = 0;
        for &v in a {
            s[k] = v;
            k += !bitset::contains(w, v) as usize;
        }
        k
    })
}

pub fn andnot_array_run(a: &[u16], runs: &[[u16; 2]]) -> ContainerBuf {
    andnot_array_run_opt(a, runs).unwrap_or_default()
}

fn andnot_array_run_opt(a: &[u16], runs: &[[u16; 2]]) -> Option<ContainerBuf> {
    ContainerBuf::try_build_array(a.len(), |s| {
        let (mut j, mut k) = (0, 0);
        for &v in a {
            while j < runs.len() && run::end(runs[j]) < v {
                j += 1;
            }
            let covered = j < runs.len() && runs[j][0] <= v;
            s[k] = v;
            k += !covered as usize;
        }
        k
    })
}

pub fn andnot_bitset_array(w: &Words, card: u32, b: &[u16]) -> ContainerBuf {
    let mut out = ContainerBuf::from_words_unchecked(w, card);
    let o = out.bitset_words_mut();
    let mut removed = 0;
    for &v in b {
        let word = &mut o[(v >> 6) as usize];
        let m = 1u64 << (v & 63);
        removed += (*word & m != 0) as u32;
        *word &= !m;
    }
    out.set_bitset_card(card - removed);
    out.normalize();
    out
}

pub fn andnot_bitset_run(w: &Words, card: u32, runs: &[[u16; 2]]) -> ContainerBuf {
    let mut out = ContainerBuf::from_words_unchecked(w, card);
    let o = out.bitset_words_mut();
    let mut removed = 0;
    for r in runs {
        removed += bitset::count_range(o, r[0], run::end(*r));
        bitset::clear_range(o, r[0], run::end(*r));
    }
    out.set_bitset_card(card - removed);
    out.normalize();
    out
}

pub fn andnot_bitset_bitset(a: &Words, b: &Words) -> ContainerBuf {
    let mut out = ContainerBuf::bitset_zeroed();
    let c = (kernels::get().andnot_bitset_bitset)(a, b, out.bitset_words_mut());
    out.set_bitset_card(c);
    out.normalize();
    out
}

pub fn andnot_run_run(a: &[[u16; 2]], b: &[[u16; 2]]) -> ContainerBuf {
    let mut cur: Vec<[u16; 2]> = a.to_vec();
    let mut next = Vec::with_capacity(a.len() + b.len());
    for r in b {
        next.clear();
        run::remove_interval(&cur, r[0], run::end(*r), &mut next);
        std::mem::swap(&mut cur, &mut next);
    }
    ContainerBuf::from_run_list_optimized(&cur)
}

/// `a \ b`, normalized.
pub fn andnot(a: ContainerRef<'_>, b: ContainerRef<'_>) -> ContainerBuf {
    use ContainerRef::*;
    match (a, b) {
        (Array(x), Array(y)) => andnot_array_array(x, y),
        (Array(x), Run { runs, .. }) => andnot_array_run(x, runs),
        (Array(x), Bitset { words, .. }) => andnot_array_bitset(x, words),
        (Run { runs: x, .. }, Run { runs: y, .. }) if x.len() + y.len() <= 64 => {
            andnot_run_run(x, y)
        }
        (Run { .. }, _) => andnot(a.to_plain().as_ref(), b),
        (Bitset { words, card }, Array(y)) => andnot_bitset_array(words, card, y),
        (Bitset { words, card }, Run { runs, .. }) => andnot_bitset_run(words, card, runs),
        (Bitset { words: x, .. }, Bitset { words: y, .. }) => andnot_bitset_bitset(x, y),
    }
}

/// `a \ b`, normalized, or `None` when empty (array results then allocate nothing).
pub fn andnot_nonempty(a: ContainerRef<'_>, b: ContainerRef<'_>) -> Option<ContainerBuf> {
    use ContainerRef::*;
    match (a, b) {
        (Array(x), Array(y)) => andnot_array_array_opt(x, y),
        (Array(x), Run { runs, .. }) => andnot_array_run_opt(x, runs),
        (Array(x), Bitset { words, .. }) => andnot_array_bitset_opt(x, words),
        _ => Some(andnot(a, b)).filter(|c| !c.is_empty()),
    }
}

/// `|a \ b|`; allocates nothing.
pub fn andnot_len(a: ContainerRef<'_>, b: ContainerRef<'_>) -> u32 {
    a.cardinality() - super::and::and_len(a, b)
}

/// `a \= b`, normalized.
pub fn andnot_in_place(a: &mut ContainerBuf, b: ContainerRef<'_>) {
    match (a.as_ref(), b) {
        (ContainerRef::Array(x), _) => {
            let n = x.len();
            let mut k = 0;
            for i in 0..n {
                let v = a.array_storage_mut()[i];
                if !b.contains(v) {
                    a.array_storage_mut()[k] = v;
                    k += 1;
                }
            }
            a.set_array_len(k);
        }
        (ContainerRef::Bitset { .. }, ContainerRef::Bitset { words, .. }) => {
            let c = (kernels::get().andnot_bitset_bitset_in_place)(a.bitset_words_mut(), words);
            a.set_bitset_card(c);
            a.normalize();
        }
        (x, y) => *a = andnot(x, y),
    }
}
