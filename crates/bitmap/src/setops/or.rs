//! Union kernels for every pair of kinds (canonical order array, run, bitset).

use crate::codec::{ARRAY_MAX, BITSET_WORDS};
use crate::container::{array, run, ContainerBuf, ContainerRef};
use crate::kernels;

type Words = [u64; BITSET_WORDS];

pub fn or_array_array(a: &[u16], b: &[u16]) -> ContainerBuf {
    let k = kernels::get();
    if a.len() + b.len() <= ARRAY_MAX {
        return ContainerBuf::build_array(a.len() + b.len(), |out| (k.or_array_array)(a, b, out));
    }
    let mut out = ContainerBuf::bitset_zeroed();
    let w = out.bitset_words_mut();
    let card = array::set_bits(a, w) + array::set_bits(b, w);
    out.set_bitset_card(card);
    out.normalize();
    out
}

pub fn or_array_bitset(a: &[u16], w: &Words, card: u32) -> ContainerBuf {
    let mut out = ContainerBuf::from_words_unchecked(w, card);
    let added = array::set_bits(a, out.bitset_words_mut());
    out.set_bitset_card(card + added);
    out
}

pub fn or_array_run(a: &[u16], runs: &[[u16; 2]], card: u32) -> ContainerBuf {
    if card == 65536 {
        return ContainerBuf::from_runs_unchecked(runs, card);
    }
    let mut ar = Vec::with_capacity(a.len());
    array::to_runs(a, &mut ar);
    or_run_run(&ar, runs)
}

pub fn or_run_run(a: &[[u16; 2]], b: &[[u16; 2]]) -> ContainerBuf {
    let mut v = Vec::with_capacity(a.len() + b.len());
    run::union(a, b, &mut v);
    ContainerBuf::from_run_list_optimized(&v)
}

pub fn or_run_bitset(runs: &[[u16; 2]], w: &Words, card: u32) -> ContainerBuf {
    let mut out = ContainerBuf::from_words_unchecked(w, card);
    let o = out.bitset_words_mut();
    run::set_bits(runs, o);
    let c = (kernels::get().popcount)(o) as u32;
    out.set_bitset_card(c);
    out
}

pub fn or_bitset_bitset(a: &Words, b: &Words) -> ContainerBuf {
    let mut out = ContainerBuf::bitset_zeroed();
    let c = (kernels::get().or_bitset_bitset)(a, b, out.bitset_words_mut());
    out.set_bitset_card(c);
    out
}

/// `a ∪ b`, normalized.
pub fn or(a: ContainerRef<'_>, b: ContainerRef<'_>) -> ContainerBuf {
    use ContainerRef::*;
    match (a, b) {
        (Array(x), Array(y)) => or_array_array(x, y),
        (Array(x), Run { runs, card }) | (Run { runs, card }, Array(x)) => {
            or_array_run(x, runs, card)
        }
        (Array(x), Bitset { words, card }) | (Bitset { words, card }, Array(x)) => {
            or_array_bitset(x, words, card)
        }
        (Run { runs: x, .. }, Run { runs: y, .. }) => or_run_run(x, y),
        (Run { runs, .. }, Bitset { words, card }) | (Bitset { words, card }, Run { runs, .. }) => {
            or_run_bitset(runs, words, card)
        }
        (Bitset { words: x, .. }, Bitset { words: y, .. }) => or_bitset_bitset(x, y),
    }
}

/// `|a ∪ b|`; allocates nothing.
pub fn or_len(a: ContainerRef<'_>, b: ContainerRef<'_>) -> u32 {
    a.cardinality() + b.cardinality() - super::and::and_len(a, b)
}

/// `a ∪= b`, normalized.
pub fn or_in_place(a: &mut ContainerBuf, b: ContainerRef<'_>) {
    match (a.as_ref(), b) {
        (ContainerRef::Bitset { card, .. }, ContainerRef::Array(y)) => {
            let added = array::set_bits(y, a.bitset_words_mut());
            a.set_bitset_card(card + added);
        }
        (ContainerRef::Bitset { .. }, ContainerRef::Bitset { words, .. }) => {
            let c = (kernels::get().or_bitset_bitset_in_place)(a.bitset_words_mut(), words);
            a.set_bitset_card(c);
        }
        (ContainerRef::Bitset { .. }, ContainerRef::Run { runs, .. }) => {
            let o = a.bitset_words_mut();
            run::set_bits(runs, o);
            let c = (kernels::get().popcount)(o) as u32;
            a.set_bitset_card(c);
        }
        (x, y) => *a = or(x, y),
    }
}
