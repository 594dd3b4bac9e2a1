//! Which kind a container takes, and the byte sizes TR.STAT reports.
//!
//! The rules (spec section 4.1):
//! - a container of ≤ 4,096 values is an array, above that a bitset;
//! - a run container exists only where a run form was chosen: by
//!   [`ContainerBuf::optimize`](super::ContainerBuf::optimize) (TR.OPTIMIZE) and by range
//!   writes (add/remove/flip a range), which optimize the containers they touch;
//! - once chosen, a run container stays a run while it is strictly smaller than
//!   the array or bitset form; otherwise `normalize` turns it back.

use crate::codec::{Kind, ARRAY_MAX, BITSET_BYTES};

/// TR.STAT byte size of an array container of `card` values.
#[inline]
pub const fn array_bytes(card: usize) -> usize {
    2 * card
}

/// TR.STAT byte size of a run container of `runs` runs.
#[inline]
pub const fn run_bytes(runs: usize) -> usize {
    2 + 4 * runs
}

/// TR.STAT byte size of a bitset container.
pub const fn bitset_bytes() -> usize {
    BITSET_BYTES
}

/// The kind a container of `card` values takes without runs.
#[inline]
pub const fn plain_kind(card: usize) -> Kind {
    if card <= ARRAY_MAX {
        Kind::Array
    } else {
        Kind::Bitset
    }
}

/// TR.STAT size of the plain (array or bitset) form of `card` values.
#[inline]
pub const fn plain_bytes(card: usize) -> usize {
    if card <= ARRAY_MAX {
        array_bytes(card)
    } else {
        BITSET_BYTES
    }
}

/// True when `runs` runs holding `card` values should be stored as a run container.
#[inline]
pub const fn run_is_smaller(runs: usize, card: usize) -> bool {
    runs > 0 && run_bytes(runs) < plain_bytes(card)
}
