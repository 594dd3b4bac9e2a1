//! Symmetric-difference kernels for every pair of kinds (canonical order array, run, bitset).
//!
//! Pairs with a run operand work on the run's plain form.

use crate::codec::{ARRAY_MAX, BITSET_WORDS};
use crate::container::{ContainerBuf, ContainerRef};
use crate::kernels;

type Words = [u64; BITSET_WORDS];

/// Inverts the bits of `a` in `w`; returns the new cardinality given the old one.
fn flip_bits(a: &[u16], w: &mut Words, card: u32) -> u32 {
    let mut card = card as i64;
    for &v in a {
        let word = &mut w[(v >> 6) as usize];
        let m = 1u64 << (v & 63);
        card += if *word & m == 0 { 1 } else { -1 };
        *word ^= m;
    }
    card as u32
}

/// `a ⊕ b` for arrays of at most 4,096 values together; `None` when empty.
fn xor_small_arrays(a: &[u16], b: &[u16]) -> Option<ContainerBuf> {
    ContainerBuf::try_build_array(a.len() + b.len(), |out| {
        (kernels::get().xor_array_array)(a, b, out)
    })
}

pub fn xor_array_array(a: &[u16], b: &[u16]) -> ContainerBuf {
    if a.len() + b.len() <= ARRAY_MAX {
        return xor_small_arrays(a, b).unwrap_or_default();
    }
    // One merge into scratch, then one allocation in the result's kind
    // (this used to copy `a` into an array, then into a bitset, flip `b`'s
    // bits and convert back when the result was small).
    ContainerBuf::build_sorted(a.len() + b.len(), |out| {
        (kernels::get().xor_array_array)(a, b, out)
    })
}

pub fn xor_array_bitset(a: &[u16], w: &Words, card: u32) -> ContainerBuf {
    let mut out = ContainerBuf::from_words_unchecked(w, card);
    let c = flip_bits(a, out.bitset_words_mut(), card);
    out.set_bitset_card(c);
    out.normalize();
    out
}

pub fn xor_bitset_bitset(a: &Words, b: &Words) -> ContainerBuf {
    let mut out = ContainerBuf::bitset_zeroed();
    let c = (kernels::get().xor_bitset_bitset)(a, b, out.bitset_words_mut());
    out.set_bitset_card(c);
    out.normalize();
    out
}

/// `a ⊕ b`, normalized.
pub fn xor(a: ContainerRef<'_>, b: ContainerRef<'_>) -> ContainerBuf {
    use ContainerRef::*;
    match (a, b) {
        (Array(x), Array(y)) => xor_array_array(x, y),
        (Array(x), Bitset { words, card }) | (Bitset { words, card }, Array(x)) => {
            xor_array_bitset(x, words, card)
        }
        (Bitset { words: x, .. }, Bitset { words: y, .. }) => xor_bitset_bitset(x, y),
        (Run { .. }, _) => xor(a.to_plain().as_ref(), b),
        (_, Run { .. }) => xor(a, b.to_plain().as_ref()),
    }
}

/// `a ⊕ b`, normalized, or `None` when empty (array results then allocate nothing).
pub fn xor_nonempty(a: ContainerRef<'_>, b: ContainerRef<'_>) -> Option<ContainerBuf> {
    match (a, b) {
        (ContainerRef::Array(x), ContainerRef::Array(y)) if x.len() + y.len() <= ARRAY_MAX => {
            xor_small_arrays(x, y)
        }
        _ => Some(xor(a, b)).filter(|c| !c.is_empty()),
    }
}

/// `|a ⊕ b|`; allocates nothing.
pub fn xor_len(a: ContainerRef<'_>, b: ContainerRef<'_>) -> u32 {
    a.cardinality() + b.cardinality() - 2 * super::and::and_len(a, b)
}

/// `a ⊕= b`, normalized.
pub fn xor_in_place(a: &mut ContainerBuf, b: ContainerRef<'_>) {
    match (a.as_ref(), b) {
        (ContainerRef::Bitset { card, .. }, ContainerRef::Array(y)) => {
            let c = flip_bits(y, a.bitset_words_mut(), card);
            a.set_bitset_card(c);
            a.normalize();
        }
        (ContainerRef::Bitset { .. }, ContainerRef::Bitset { words, .. }) => {
            let c = (kernels::get().xor_bitset_bitset_in_place)(a.bitset_words_mut(), words);
            a.set_bitset_card(c);
            a.normalize();
        }
        (x, y) => *a = xor(x, y),
    }
}

#[cfg(test)]
mod tests {
    use super::xor_array_array;
    use crate::Kind;

    /// Large array pairs whose result is an array (heavy overlap) or a bitset.
    #[test]
    fn large_array_pairs_build_the_right_kind() {
        let evens: Vec<u16> = (0..3000u16).map(|i| i * 2).collect();
        let odds: Vec<u16> = (0..3000u16).map(|i| i * 2 + 1).collect();
        let shifted: Vec<u16> = (0..3000u16).map(|i| i * 2 + 200).collect();
        for (a, b, kind) in [
            (&evens, &odds, Kind::Bitset),
            (&evens, &shifted, Kind::Array),
        ] {
            let got = xor_array_array(a, b);
            let mut want: Vec<u16> = a
                .iter()
                .filter(|v| b.binary_search(v).is_err())
                .chain(b.iter().filter(|v| a.binary_search(v).is_err()))
                .copied()
                .collect();
            want.sort_unstable();
            assert_eq!(got.kind(), kind);
            assert_eq!(got.as_ref().iter().collect::<Vec<_>>(), want);
            got.validate().unwrap();
        }
    }
}
