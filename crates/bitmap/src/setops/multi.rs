//! N-way union and intersection over many containers of the same high key.

use crate::container::{ContainerBuf, ContainerRef};
use crate::kernels;

/// Total input cardinality up to which an n-way union sorts instead of using a bitset.
pub const SMALL_UNION: usize = 64;

/// Union of all inputs, normalized.
///
/// Sizes the output once from the inputs' cardinalities: when they sum to at
/// most [`SMALL_UNION`] the values are gathered and sorted; otherwise every
/// input is ORed into one bitset (bitsets first, stopping as soon as the
/// union is full; see `fill_union`), and the result is normalized (back to an array
/// when it holds at most 4,096 values). A full input (65,536 values)
/// short-cuts to a copy of it.
pub fn union_many(inputs: &[ContainerRef<'_>]) -> ContainerBuf {
    match inputs {
        [] => return ContainerBuf::new(),
        [one] => return one.to_buf(),
        [a, b] => return super::or::or(*a, *b),
        _ => {}
    }
    let mut total = 0usize;
    for c in inputs {
        if c.cardinality() == 65536 {
            return c.to_buf();
        }
        total += c.cardinality() as usize;
    }
    if total <= SMALL_UNION {
        let mut values = Vec::with_capacity(total);
        for c in inputs {
            let start = values.len();
            values.resize(start + c.cardinality() as usize, 0);
            c.copy_to_array(&mut values[start..]);
        }
        values.sort_unstable();
        values.dedup();
        return ContainerBuf::from_sorted(&values);
    }
    let mut out = ContainerBuf::bitset_zeroed();
    let card = fill_union(out.bitset_words_mut(), inputs);
    out.set_bitset_card(card);
    out.normalize();
    out
}

/// Values scattered from arrays and runs between two checks whether the union is full.
const FULL_CHECK: u32 = 4096;

/// ORs every input into `w` (zeroed on entry) and returns the cardinality.
///
/// Bitset inputs go first, with the counting OR (as cheap as the plain one
/// while the scan is bound by memory), so a union that fills up — common in
/// wide unions of dense data — returns at once without touching the rest.
/// Arrays and runs follow without counting; the words are recounted only when
/// the last known count plus the values scattered since could reach 65,536,
/// and at most every [`FULL_CHECK`] values.
fn fill_union(w: &mut [u64; crate::codec::BITSET_WORDS], inputs: &[ContainerRef<'_>]) -> u32 {
    let k = kernels::get();
    let mut known = 0u32;
    for c in inputs {
        if let ContainerRef::Bitset { words, .. } = *c {
            known = (k.or_bitset_bitset_in_place)(w, words);
            if known == 65536 {
                return known;
            }
        }
    }
    let mut since = 0u32;
    for c in inputs {
        if matches!(c, ContainerRef::Bitset { .. }) {
            continue;
        }
        c.set_bits_in(w);
        since += c.cardinality();
        if since >= FULL_CHECK && known + since >= 65536 {
            known = (k.popcount)(w) as u32;
            since = 0;
            if known == 65536 {
                return known;
            }
        }
    }
    if since == 0 {
        known
    } else {
        (k.popcount)(w) as u32
    }
}

/// Intersection of all inputs, normalized; empty for no inputs.
///
/// Starts from the two smallest inputs and stops as soon as the running result is empty.
pub fn intersection_many(inputs: &[ContainerRef<'_>]) -> ContainerBuf {
    match inputs {
        [] => return ContainerBuf::new(),
        [one] => return one.to_buf(),
        _ => {}
    }
    let mut order: Vec<&ContainerRef<'_>> = inputs.iter().collect();
    order.sort_by_key(|c| c.cardinality());
    let mut acc = super::and::and(*order[0], *order[1]);
    for c in &order[2..] {
        if acc.is_empty() {
            break;
        }
        super::and::and_in_place(&mut acc, **c);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn naive(inputs: &[ContainerBuf]) -> ContainerBuf {
        let set: BTreeSet<u16> = inputs.iter().flat_map(|c| c.as_ref().iter()).collect();
        let mut out = ContainerBuf::from_sorted(&set.into_iter().collect::<Vec<_>>());
        out.normalize();
        out
    }

    fn check(inputs: &[ContainerBuf]) {
        let refs: Vec<ContainerRef<'_>> = inputs.iter().map(|c| c.as_ref()).collect();
        let got = union_many(&refs);
        let want = naive(inputs);
        assert_eq!(got.as_bytes(), want.as_bytes());
        got.validate().unwrap();
    }

    fn values(step: usize, offset: usize, n: usize) -> Vec<u16> {
        (0..n)
            .map(|i| ((offset + i * step) % 65536) as u16)
            .collect()
    }

    fn sorted(mut v: Vec<u16>) -> ContainerBuf {
        v.sort_unstable();
        v.dedup();
        ContainerBuf::from_sorted(&v)
    }

    #[test]
    fn bitsets_that_fill_up_stop_early_with_arrays_after() {
        // Evens and odds as bitsets: full after the second; arrays before and after.
        let inputs = vec![
            sorted(values(7, 3, 100)),
            sorted(values(2, 0, 32768)),
            sorted(values(13, 5, 500)),
            sorted(values(2, 1, 32768)),
            ContainerBuf::from_range(10, 20),
            sorted(values(3, 1, 4000)),
        ];
        check(&inputs);
    }

    #[test]
    fn arrays_that_fill_up() {
        // 16 arrays of 4,096 values cover everything; a run and a sparse bitset join.
        let mut inputs: Vec<ContainerBuf> = (0..16).map(|i| sorted(values(16, i, 4096))).collect();
        inputs.insert(3, ContainerBuf::from_range(100, 60000));
        inputs.push(sorted(values(11, 2, 5000)));
        check(&inputs);
        // One value short of full: the checks must not stop early.
        let mut short: Vec<ContainerBuf> = (0..15).map(|i| sorted(values(16, i, 4096))).collect();
        short.push(sorted(values(16, 15, 4095)));
        check(&short);
        short.push(sorted(values(1, 0, 300)));
        check(&short);
    }

    #[test]
    fn dense_but_not_full() {
        let inputs: Vec<ContainerBuf> = (0..40).map(|i| sorted(values(37, i * 11, 3000))).collect();
        check(&inputs);
        let mut with_bitsets = inputs.clone();
        with_bitsets.push(sorted(values(3, 0, 20000)));
        with_bitsets.push(sorted(values(5, 1, 13000)));
        check(&with_bitsets);
    }
}
