//! The kernel table: hot array and bitset kernels, chosen once per process.
//!
//! [`get`] picks AVX-512 (with VPOPCNTDQ), then AVX2, then scalar, by CPU
//! detection on first use; `ROARINGD_FORCE_SCALAR=1` forces scalar. The
//! scalar table is always compiled; vector tables exist only on x86-64 and
//! must produce exactly the scalar results (tested below).

pub mod scalar;
#[cfg(target_arch = "x86_64")]
pub mod x86;

use crate::codec::BITSET_WORDS;
use std::sync::OnceLock;

type Words = [u64; BITSET_WORDS];

/// One implementation of each hot kernel. Array outputs are written to the
/// front of `out` (which must be at least as long as the largest possible
/// result: `min(a, b)` for and, `a + b` for or/xor, `a` for andnot) and the
/// count is returned. Bitset kernels return the output's cardinality.
pub struct Kernels {
    /// Human-readable name: "scalar", "avx2", "avx512".
    pub name: &'static str,
    /// Sorted-array intersection.
    pub and_array_array: fn(&[u16], &[u16], &mut [u16]) -> usize,
    /// Size of the sorted-array intersection; allocates nothing.
    pub and_array_array_len: fn(&[u16], &[u16]) -> usize,
    /// Sorted-array union (merge).
    pub or_array_array: fn(&[u16], &[u16], &mut [u16]) -> usize,
    /// Sorted-array symmetric difference.
    pub xor_array_array: fn(&[u16], &[u16], &mut [u16]) -> usize,
    /// Sorted-array difference `a \ b`.
    pub andnot_array_array: fn(&[u16], &[u16], &mut [u16]) -> usize,
    /// `out = a & b`.
    pub and_bitset_bitset: fn(&Words, &Words, &mut Words) -> u32,
    /// `out = a | b`.
    pub or_bitset_bitset: fn(&Words, &Words, &mut Words) -> u32,
    /// `out = a ^ b`.
    pub xor_bitset_bitset: fn(&Words, &Words, &mut Words) -> u32,
    /// `out = a & !b`.
    pub andnot_bitset_bitset: fn(&Words, &Words, &mut Words) -> u32,
    /// `a &= b`.
    pub and_bitset_bitset_in_place: fn(&mut Words, &Words) -> u32,
    /// `a |= b`.
    pub or_bitset_bitset_in_place: fn(&mut Words, &Words) -> u32,
    /// `a ^= b`.
    pub xor_bitset_bitset_in_place: fn(&mut Words, &Words) -> u32,
    /// `a &= !b`.
    pub andnot_bitset_bitset_in_place: fn(&mut Words, &Words) -> u32,
    /// `popcount(a & b)`.
    pub and_bitset_bitset_len: fn(&Words, &Words) -> u32,
    /// `a & b != 0`.
    pub intersects_bitset_bitset: fn(&Words, &Words) -> bool,
    /// `a |= b` over equal-length slices, no count (n-way union).
    pub or_words_in_place: fn(&mut [u64], &[u64]),
    /// Number of set bits.
    pub popcount: fn(&[u64]) -> u64,
}

/// The portable table.
pub static SCALAR: Kernels = Kernels {
    name: "scalar",
    and_array_array: scalar::and_array_array,
    and_array_array_len: scalar::and_array_array_len,
    or_array_array: scalar::or_array_array,
    xor_array_array: scalar::xor_array_array,
    andnot_array_array: scalar::andnot_array_array,
    and_bitset_bitset: scalar::and_bitset_bitset,
    or_bitset_bitset: scalar::or_bitset_bitset,
    xor_bitset_bitset: scalar::xor_bitset_bitset,
    andnot_bitset_bitset: scalar::andnot_bitset_bitset,
    and_bitset_bitset_in_place: scalar::and_bitset_bitset_in_place,
    or_bitset_bitset_in_place: scalar::or_bitset_bitset_in_place,
    xor_bitset_bitset_in_place: scalar::xor_bitset_bitset_in_place,
    andnot_bitset_bitset_in_place: scalar::andnot_bitset_bitset_in_place,
    and_bitset_bitset_len: scalar::and_bitset_bitset_len,
    intersects_bitset_bitset: scalar::intersects_bitset_bitset,
    or_words_in_place: scalar::or_words_in_place,
    popcount: scalar::popcount,
};

/// True when `ROARINGD_FORCE_SCALAR` is set to `1` (or `true`).
pub fn scalar_forced() -> bool {
    matches!(
        std::env::var("ROARINGD_FORCE_SCALAR").as_deref(),
        Ok("1") | Ok("true")
    )
}

/// The best vector table this CPU supports, ignoring the environment.
pub fn best_vector() -> Option<&'static Kernels> {
    #[cfg(target_arch = "x86_64")]
    {
        x86::detect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The table in use, chosen on first call.
#[inline]
pub fn get() -> &'static Kernels {
    static CHOSEN: OnceLock<&'static Kernels> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        if scalar_forced() {
            &SCALAR
        } else {
            best_vector().unwrap_or(&SCALAR)
        }
    })
}
