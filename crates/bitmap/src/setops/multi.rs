//! N-way union and intersection over many containers of the same high key.

use crate::container::{ContainerBuf, ContainerRef};
use crate::kernels;

/// Total input cardinality up to which an n-way union sorts instead of using a bitset.
pub const SMALL_UNION: usize = 64;

/// Union of all inputs, normalized.
///
/// Sizes the output once from the inputs' cardinalities: when they sum to at
/// most [`SMALL_UNION`] the values are gathered and sorted; otherwise every
/// input is ORed into one bitset with no per-step counting, the cardinality is
/// computed once at the end, and the result is normalized (back to an array
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
    let w = out.bitset_words_mut();
    for c in inputs {
        c.set_bits_in(w);
    }
    let card = (kernels::get().popcount)(w) as u32;
    out.set_bitset_card(card);
    out.normalize();
    out
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
