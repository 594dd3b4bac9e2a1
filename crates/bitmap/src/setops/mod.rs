//! Set operations on containers: one dispatch per operation over the pair of
//! kinds, with the pair kernels in one file per operation.
//!
//! Every producing form returns a normalized
//! [`ContainerBuf`](crate::container::ContainerBuf) (`_nonempty`
//! forms: `None` instead of an empty one, without allocating it); `_len` forms
//! only count and allocate nothing; `_in_place` forms change the left
//! operand; `intersects` stops at the first common value.

pub mod and;
pub mod andnot;
#[cfg(test)]
mod laws;
pub mod multi;
pub mod or;
pub mod sink;
pub mod xor;

pub use and::{and, and_in_place, and_len, and_nonempty, intersects};
pub use andnot::{andnot, andnot_in_place, andnot_len, andnot_nonempty};
pub use multi::{intersection_many, union_many};
pub use or::{or, or_in_place, or_len};
pub use xor::{xor, xor_in_place, xor_len, xor_nonempty};

use crate::container::ContainerRef;

/// True when every value of `a` is in `b`.
pub fn is_subset(a: ContainerRef<'_>, b: ContainerRef<'_>) -> bool {
    let ca = a.cardinality();
    ca <= b.cardinality() && and_len(a, b) == ca
}

/// Jaccard index |a ∩ b| / |a ∪ b|; 0 when both are empty.
pub fn jaccard(a: ContainerRef<'_>, b: ContainerRef<'_>) -> f64 {
    let inter = and_len(a, b) as u64;
    let union = a.cardinality() as u64 + b.cardinality() as u64 - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}
