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
    /// Human-readable name: "scalar", "avx2", "avx512", "avx512+vbmi2".
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
    /// Sets the bit of every listed value, no count (array into bitset, n-way union).
    pub set_list: fn(&mut Words, &[u16]),
    /// Writes the set bits ascending into `out` (at least the cardinality long;
    /// panics otherwise); returns the count.
    pub bitset_to_array: fn(&Words, &mut [u16]) -> usize,
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
    set_list: scalar::set_list,
    bitset_to_array: scalar::bitset_to_array,
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

#[cfg(test)]
mod tests {
    //! Every vector kernel against the scalar one on boundary and random inputs.
    use super::*;
    use crate::testing::{lows_of_runs, lows_of_size, SplitMix};

    fn arrays() -> Vec<Vec<u16>> {
        let mut v = vec![
            vec![],
            vec![0],
            vec![65535],
            (0..8).collect(),
            (0..4096).collect(),
        ];
        let mut seed = 1;
        for n in [1, 7, 8, 9, 15, 16, 17, 100, 1000, 4095, 4096] {
            for _ in 0..3 {
                seed += 1;
                v.push(lows_of_size(n, seed));
            }
        }
        // Dense overlapping sets from a small universe: many equal values across inputs.
        let mut rng = SplitMix(5);
        for (universe, keep) in [
            (64u16, 2u64),
            (512, 2),
            (512, 4),
            (3000, 2),
            (3000, 3),
            (8000, 2),
        ] {
            for _ in 0..3 {
                v.push((0..universe).filter(|_| rng.below(keep) == 0).collect());
            }
        }
        // Short lists and lists holding 0 (the implicit-length compare's blind spot).
        for n in [1usize, 2, 3, 9, 13, 24, 31] {
            let s = lows_of_size(n, 1000 + n as u64);
            let mut z = vec![0u16];
            z.extend(s.iter().copied().filter(|&x| x != 0));
            v.push(z);
            v.push((0..n as u16).collect());
            v.push((0..n as u16).map(|i| i * 3 + 1).collect());
        }
        for c in [1, 5, 50] {
            seed += 1;
            let r = lows_of_runs(c, 40, seed);
            if r.len() <= 4096 {
                v.push(r);
            }
        }
        v
    }

    fn bitsets() -> Vec<Box<Words>> {
        let mut rng = SplitMix(99);
        let mut out = vec![
            Box::new([0u64; BITSET_WORDS]),
            Box::new([u64::MAX; BITSET_WORDS]),
        ];
        for case in 0..6 {
            let mut w = Box::new([0u64; BITSET_WORDS]);
            for x in w.iter_mut() {
                *x = match case % 3 {
                    0 => rng.next_u64(),
                    1 => rng.next_u64() & rng.next_u64() & rng.next_u64(),
                    _ => rng.next_u64() | rng.next_u64(),
                };
            }
            out.push(w);
        }
        out
    }

    fn check(k: &Kernels) {
        let s = &SCALAR;
        let mut sparse = Box::new([0u64; BITSET_WORDS]);
        sparse[0] = 1;
        sparse[511] = 1 << 63 | 1 << 31 | 1 << 32;
        sparse[1023] = 1 << 63;
        let mut extra = vec![sparse];
        for list in arrays() {
            let mut w = Box::new([0u64; BITSET_WORDS]);
            (s.set_list)(&mut w, &list);
            extra.push(w);
        }
        for w in bitsets().iter().chain(&extra) {
            let card = (s.popcount)(&w[..]) as usize;
            // Exact room, and room with garbage past the end that must stay untouched.
            for room in [card, card + 40] {
                let mut o1 = vec![7u16; room];
                let mut o2 = vec![7u16; room];
                assert_eq!((s.bitset_to_array)(w, &mut o1), card);
                assert_eq!((k.bitset_to_array)(w, &mut o2), card, "{}", k.name);
                assert_eq!(o1, o2, "{}", k.name);
            }
        }
        let arrs = arrays();
        for a in &arrs {
            for b in &arrs {
                let mut o1 = vec![0u16; a.len() + b.len()];
                let mut o2 = vec![0u16; a.len() + b.len()];
                type ArrFn = fn(&[u16], &[u16], &mut [u16]) -> usize;
                let pairs: [(ArrFn, ArrFn, usize); 4] = [
                    (s.and_array_array, k.and_array_array, a.len().min(b.len())),
                    (s.or_array_array, k.or_array_array, a.len() + b.len()),
                    (s.xor_array_array, k.xor_array_array, a.len() + b.len()),
                    (s.andnot_array_array, k.andnot_array_array, a.len()),
                ];
                for (i, (f, g, cap)) in pairs.into_iter().enumerate() {
                    let n1 = f(a, b, &mut o1[..cap]);
                    let n2 = g(a, b, &mut o2[..cap]);
                    assert_eq!(&o1[..n1], &o2[..n2], "{} kernel {i}", k.name);
                }
                assert_eq!((s.and_array_array_len)(a, b), (k.and_array_array_len)(a, b));
            }
        }
        let bs = bitsets();
        for a in &bs {
            assert_eq!((s.popcount)(&a[..]), (k.popcount)(&a[..]));
            assert_eq!((s.popcount)(&a[3..1021]), (k.popcount)(&a[3..1021]));
            for b in &bs {
                type BinFn = fn(&Words, &Words, &mut Words) -> u32;
                type IpFn = fn(&mut Words, &Words) -> u32;
                let ops: [(BinFn, BinFn, IpFn, IpFn); 4] = [
                    (
                        s.and_bitset_bitset,
                        k.and_bitset_bitset,
                        s.and_bitset_bitset_in_place,
                        k.and_bitset_bitset_in_place,
                    ),
                    (
                        s.or_bitset_bitset,
                        k.or_bitset_bitset,
                        s.or_bitset_bitset_in_place,
                        k.or_bitset_bitset_in_place,
                    ),
                    (
                        s.xor_bitset_bitset,
                        k.xor_bitset_bitset,
                        s.xor_bitset_bitset_in_place,
                        k.xor_bitset_bitset_in_place,
                    ),
                    (
                        s.andnot_bitset_bitset,
                        k.andnot_bitset_bitset,
                        s.andnot_bitset_bitset_in_place,
                        k.andnot_bitset_bitset_in_place,
                    ),
                ];
                for (f, g, fi, gi) in ops {
                    let (mut o1, mut o2) = (
                        Box::new([0u64; BITSET_WORDS]),
                        Box::new([0u64; BITSET_WORDS]),
                    );
                    assert_eq!(f(a, b, &mut o1), g(a, b, &mut o2));
                    assert_eq!(o1, o2);
                    let (mut x1, mut x2) = (a.clone(), a.clone());
                    assert_eq!(fi(&mut x1, b), gi(&mut x2, b));
                    assert_eq!(x1, x2);
                    assert_eq!(x1, o1);
                }
                assert_eq!(
                    (s.and_bitset_bitset_len)(a, b),
                    (k.and_bitset_bitset_len)(a, b)
                );
                assert_eq!(
                    (s.intersects_bitset_bitset)(a, b),
                    (k.intersects_bitset_bitset)(a, b)
                );
                let (mut x1, mut x2) = (a.clone(), a.clone());
                for list in arrays() {
                    (s.set_list)(&mut x1, &list);
                    (k.set_list)(&mut x2, &list);
                }
                assert_eq!(x1, x2);
                (s.or_words_in_place)(&mut x1[5..1000], &b[5..1000]);
                (k.or_words_in_place)(&mut x2[5..1000], &b[5..1000]);
                assert_eq!(x1, x2);
            }
        }
    }

    #[test]
    fn vector_kernels_equal_scalar() {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("popcnt");
            if avx2 {
                check(&x86::AVX2);
            }
            if let Some(k) = x86::detect().filter(|k| k.name.starts_with("avx512")) {
                check(&x86::AVX512);
                check(k);
            }
        }
        check(&SCALAR);
    }

    #[test]
    fn force_scalar_is_honoured() {
        if scalar_forced() {
            assert_eq!(get().name, "scalar");
        } else {
            assert_eq!(get().name, best_vector().map_or("scalar", |k| k.name));
        }
    }
}
