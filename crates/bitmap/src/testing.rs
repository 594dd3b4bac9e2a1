//! Test support, behind the `testing` feature (and always in this crate's
//! tests): a `BTreeSet<u32>` shadow model, generators that aim at container
//! representations and boundaries, validation helpers, and the shared
//! decode-and-apply routine of the fuzz target.
//!
//! Generators deliberately produce containers of 0, 1, 4,095, 4,096, 4,097,
//! 65,535 and 65,536 values, full containers, run-shaped containers, and high
//! keys 0 and 65,535 (values near 0 and 2^32 − 1).

use crate::Bitmap;
use proptest::prelude::*;
use std::collections::BTreeSet;

/// A small deterministic generator (SplitMix64), so generators need no RNG crate.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Exactly `n` distinct values of `0..=65535`, ascending, chosen by `seed`.
pub fn lows_of_size(n: usize, seed: u64) -> Vec<u16> {
    let n = n.min(65536);
    let mut rng = SplitMix(seed);
    // Pick the smaller of the set and its complement by rejection on a bitset.
    let pick = n.min(65536 - n);
    let mut bits = vec![false; 65536];
    let mut chosen = 0;
    while chosen < pick {
        let v = rng.below(65536) as usize;
        if !bits[v] {
            bits[v] = true;
            chosen += 1;
        }
    }
    let want = pick == n;
    (0..65536u32)
        .filter(|&v| bits[v as usize] == want)
        .map(|v| v as u16)
        .collect()
}

/// Values covered by `count` random runs, chosen by `seed`.
pub fn lows_of_runs(count: usize, max_len: u16, seed: u64) -> Vec<u16> {
    let mut rng = SplitMix(seed);
    let mut set = BTreeSet::new();
    for _ in 0..count {
        let start = rng.below(65536) as u32;
        let len = rng.below(max_len as u64 + 1) as u32;
        for v in start..=(start + len).min(65535) {
            set.insert(v as u16);
        }
    }
    set.into_iter().collect()
}

/// The low 16-bit parts of one container, ascending and distinct, aimed at
/// every kind and every size boundary.
pub fn container_lows() -> impl Strategy<Value = Vec<u16>> {
    let sized = prop_oneof![
        4 => 0usize..64,
        2 => 64usize..4000,
        1 => Just(4095usize),
        1 => Just(4096usize),
        1 => Just(4097usize),
        1 => 4098usize..30000,
        1 => Just(65535usize),
        1 => Just(65536usize),
    ];
    prop_oneof![
        6 => (sized, any::<u64>()).prop_map(|(n, s)| lows_of_size(n, s)),
        2 => (1usize..40, 0u16..300, any::<u64>()).prop_map(|(c, l, s)| lows_of_runs(c, l, s)),
        1 => (0u16..=65535, 0u16..=65535).prop_map(|(a, b)| (a.min(b)..=a.max(b)).collect()),
        1 => prop::collection::btree_set(prop_oneof![Just(0u16), Just(1), Just(65534), Just(65535), any::<u16>()], 0..6)
            .prop_map(|s| s.into_iter().collect()),
    ]
}

/// High keys biased to the ends of the domain and to collisions.
pub fn high_key() -> impl Strategy<Value = u16> {
    prop_oneof![
        Just(0u16),
        Just(1),
        Just(2),
        Just(65534),
        Just(65535),
        any::<u16>()
    ]
}

/// Ascending distinct u32 values spread over 0–3 containers.
pub fn bitmap_values() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec((high_key(), container_lows()), 0..=3).prop_map(|parts| {
        let mut by_key = std::collections::BTreeMap::new();
        for (k, lows) in parts {
            by_key.insert(k, lows);
        }
        by_key
            .into_iter()
            .flat_map(|(k, lows)| lows.into_iter().map(move |l| ((k as u32) << 16) | l as u32))
            .collect()
    })
}

/// A bitmap and its model; half of them run-optimized so run containers appear.
pub fn bitmap_and_model() -> impl Strategy<Value = (Bitmap, BTreeSet<u32>)> {
    (bitmap_values(), any::<bool>()).prop_map(|(v, opt)| {
        let mut b = Bitmap::from_sorted(&v);
        if opt {
            b.optimize();
        }
        (b, v.into_iter().collect())
    })
}

/// A value whose high key is one of the biased keys.
pub fn value() -> impl Strategy<Value = u32> {
    prop_oneof![
        (high_key(), any::<u16>()).prop_map(|(h, l)| ((h as u32) << 16) | l as u32),
        Just(0u32),
        Just(u32::MAX),
        any::<u32>(),
    ]
}

/// Number of proptest cases: `PROPTEST_CASES` when set, else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Asserts `b` is valid and holds exactly `model`.
///
/// # Panics
/// On any difference or broken invariant.
pub fn assert_matches(b: &Bitmap, model: &BTreeSet<u32>) {
    if let Err(e) = b.validate() {
        panic!("invalid bitmap: {e}");
    }
    assert_eq!(b.len(), model.len() as u64, "cardinality");
    assert!(b.iter().eq(model.iter().copied()), "content differs");
}

/// Operations are read from at most this many leading bytes (64 operations).
pub const MAX_OP_BYTES: usize = 512;

/// Decodes arbitrary bytes into operations, applies them to a bitmap and a
/// `BTreeSet<u32>` model, and checks agreement and invariants after every
/// step; also feeds the bytes to every decoder, which must not panic.
/// Shared by the fuzz target and the deterministic test.
///
/// # Panics
/// On any disagreement or broken invariant (that is the finding).
pub fn fuzz_decode_and_apply(data: &[u8]) {
    fuzz_decode(data);
    fuzz_apply(data);
}

/// Feeds `data` to every decoder: each must reject it or return a valid value.
///
/// # Panics
/// When a decoder accepts bytes that do not give a valid value.
pub fn fuzz_decode(data: &[u8]) {
    // Decoders must reject or accept, never panic; accepted input must be valid.
    if let Ok(v) = crate::ContainerView::parse(data) {
        // Readers accept format-valid bytes; the kind rules are the writer's
        // (docs/format.md), so the policy is checked after normalizing.
        let mut c = v.to_buf();
        assert_eq!(c.as_bytes(), data);
        let values: Vec<u16> = c.as_ref().iter().collect();
        c.normalize();
        c.validate()
            .expect("accepted container must be valid once normalized");
        assert!(
            c.as_ref().iter().eq(values),
            "normalize changed the content"
        );
    }
    if let Ok(b) = Bitmap::from_bytes(data) {
        b.validate().expect("accepted bitmap must be valid");
    }
    if let Ok(b) = Bitmap::deserialize_portable(data) {
        b.validate()
            .expect("accepted portable bitmap must be valid");
    }
    if let Ok(b) = crate::Bitmap64::deserialize_portable(data) {
        b.validate()
            .expect("accepted portable64 bitmap must be valid");
    }
}

/// Applies the operations encoded in the first [`MAX_OP_BYTES`] of `data`
/// (8 bytes each) to two bitmaps and their models, checking after every step.
///
/// # Panics
/// On any disagreement or broken invariant.
pub fn fuzz_apply(data: &[u8]) {
    // Values stay within four containers' worth (keys 0, 1, 65534, 65535) so operations collide.
    let val = |b: &[u8]| -> u32 {
        let key = [0u32, 1, 65534, 65535][(b[0] & 3) as usize];
        (key << 16) | u16::from_le_bytes([b[1], b[2]]) as u32
    };
    let mut bm = [Bitmap::new(), Bitmap::new()];
    let mut model = [BTreeSet::new(), BTreeSet::new()];
    for op in data[..data.len().min(MAX_OP_BYTES)].chunks_exact(8) {
        let side = (op[0] >> 7) as usize;
        let (x, y) = (val(&op[1..4]), val(&op[4..7]));
        let (lo, hi) = (x.min(y), x.max(y));
        // Mostly narrow ranges; wide ones (whole containers) when the top bit of the last byte is set.
        let cap = if op[7] & 0x80 != 0 { 70_000 } else { 3_000 };
        let (lo, hi) = (lo, hi.min(lo.saturating_add(cap)));
        match op[0] & 0x0F {
            0 | 1 => {
                assert_eq!(bm[side].insert(x), model[side].insert(x));
            }
            2 => {
                assert_eq!(bm[side].remove(x), model[side].remove(&x));
            }
            3 => {
                bm[side].add_range(lo, hi);
                model[side].extend(lo..=hi);
            }
            4 => {
                bm[side].remove_range(lo, hi);
                let gone: Vec<u32> = model[side].range(lo..=hi).copied().collect();
                for v in gone {
                    model[side].remove(&v);
                }
            }
            5 => {
                bm[side].flip_range(lo, hi);
                for v in lo..=hi {
                    if !model[side].remove(&v) {
                        model[side].insert(v);
                    }
                }
            }
            6 => {
                bm[side].optimize();
            }
            7 => {
                let r = bm[0].and(&bm[1]);
                let m: BTreeSet<u32> = model[0].intersection(&model[1]).copied().collect();
                assert_eq!(bm[0].and_len(&bm[1]), m.len() as u64);
                assert_eq!(bm[0].intersects(&bm[1]), !m.is_empty());
                bm[side] = r;
                model[side] = m;
            }
            8 => {
                let r = bm[0].or(&bm[1]);
                let m: BTreeSet<u32> = model[0].union(&model[1]).copied().collect();
                assert_eq!(bm[0].or_len(&bm[1]), m.len() as u64);
                bm[side] = r;
                model[side] = m;
            }
            9 => {
                let r = bm[0].xor(&bm[1]);
                let m: BTreeSet<u32> = model[0].symmetric_difference(&model[1]).copied().collect();
                assert_eq!(bm[0].xor_len(&bm[1]), m.len() as u64);
                bm[side] = r;
                model[side] = m;
            }
            10 => {
                let (a, b) = (side, 1 - side);
                let r = bm[a].andnot(&bm[b]);
                let m: BTreeSet<u32> = model[a].difference(&model[b]).copied().collect();
                assert_eq!(bm[a].andnot_len(&bm[b]), m.len() as u64);
                assert_eq!(bm[a].is_subset(&bm[b]), model[a].is_subset(&model[b]));
                bm[a] = r;
                model[a] = m;
            }
            11 => {
                let bytes = bm[side].to_bytes();
                bm[side] = Bitmap::from_bytes(&bytes).expect("own bytes decode");
            }
            12 => {
                let bytes = bm[side].serialize_portable();
                bm[side] = Bitmap::deserialize_portable(&bytes).expect("own portable decodes");
            }
            13 => {
                assert_eq!(bm[side].rank(x), model[side].range(..=x).count() as u64);
                assert_eq!(bm[side].contains(x), model[side].contains(&x));
                assert_eq!(
                    bm[side].count_range(lo, hi),
                    model[side].range(lo..=hi).count() as u64
                );
            }
            _ => {
                let (a, b) = (side, 1 - side);
                let other = bm[b].clone();
                match op[7] & 3 {
                    0 => bm[a].and_in_place(&other),
                    1 => bm[a].or_in_place(&other),
                    2 => bm[a].xor_in_place(&other),
                    _ => bm[a].andnot_in_place(&other),
                }
                let m: BTreeSet<u32> = match op[7] & 3 {
                    0 => model[a].intersection(&model[b]).copied().collect(),
                    1 => model[a].union(&model[b]).copied().collect(),
                    2 => model[a].symmetric_difference(&model[b]).copied().collect(),
                    _ => model[a].difference(&model[b]).copied().collect(),
                };
                model[a] = m;
            }
        }
        assert_matches(&bm[side], &model[side]);
    }
    assert_matches(&bm[0], &model[0]);
    assert_matches(&bm[1], &model[1]);
}

#[cfg(test)]
mod fuzz_findings {
    use super::*;

    /// cargo-fuzz `codec_view` crash-82d7499340e8bd3aa4e91a9f59e66b803bc859f4:
    /// a run container of one 1-value run (6 payload bytes where an array
    /// takes 2) is format-valid; it must decode, and whole-bitmap decoding
    /// must normalize it rather than return a bitmap that fails `validate`.
    #[test]
    fn run_container_not_smaller_than_plain_form() {
        let container = [0x12u8, 1, 0, 0, 1, 0, 0, 0, 0, 0];
        fuzz_decode(&container);
        let mut native = vec![1u8, 0, 0, 0, 7, 0];
        native.extend_from_slice(&container);
        fuzz_decode(&native);
        let b = Bitmap::from_bytes(&native).expect("format-valid");
        b.validate().unwrap();
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![7 << 16]);
        assert_eq!(b.container(7).unwrap().kind(), crate::Kind::Array);
    }

    /// proptest `mutation_sequences_match_model` (found in CI): an array
    /// of 4,096 values given a range it already holds went through the
    /// bitset branch of `add_range` and stayed a bitset of 4,096 values,
    /// which the kind policy forbids.
    #[test]
    fn add_range_over_a_full_array_keeps_it_an_array() {
        let vals: Vec<u32> = (0..4095u32).map(|i| 0xFFFF_0000 | (i * 16)).collect();
        let mut b = Bitmap::from_sorted(&vals);
        let mut m: std::collections::BTreeSet<u32> = vals.into_iter().collect();
        for _ in 0..2 {
            b.add_range(u32::MAX, u32::MAX);
            m.insert(u32::MAX);
            assert_matches(&b, &m);
        }
        for (lo, hi) in [(0xFFFF_0000, 0xFFFF_0010), (0xFFFF_0100, 0xFFFF_0100)] {
            b.add_range(lo, hi);
            m.extend(lo..=hi);
            assert_matches(&b, &m);
        }
    }
}
