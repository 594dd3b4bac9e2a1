//! Property tests: every operation against a `BTreeSet<u32>` model, for
//! generated bitmaps that cover every pair of container kinds and the size
//! boundaries; invariants validated after every step. Case count:
//! `PROPTEST_CASES` (default 64 per property).

use crate::testing::{assert_matches, bitmap_and_model, cases, value};
use crate::{Bitmap, ContainerBuf, ContainerView};
use proptest::prelude::*;
use std::collections::BTreeSet;

type Model = BTreeSet<u32>;

fn cfg() -> ProptestConfig {
    ProptestConfig {
        cases: cases(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn check_pair(a: &Bitmap, ma: &Model, b: &Bitmap, mb: &Model) {
    let and: Model = ma.intersection(mb).copied().collect();
    let or: Model = ma.union(mb).copied().collect();
    let xor: Model = ma.symmetric_difference(mb).copied().collect();
    let andnot: Model = ma.difference(mb).copied().collect();

    for (name, got, model) in [
        ("and", a.and(b), &and),
        ("or", a.or(b), &or),
        ("xor", a.xor(b), &xor),
        ("andnot", a.andnot(b), &andnot),
    ] {
        assert_matches(&got, model);
        let _ = name;
    }
    assert_eq!(a.and_len(b), and.len() as u64);
    assert_eq!(a.or_len(b), or.len() as u64);
    assert_eq!(a.xor_len(b), xor.len() as u64);
    assert_eq!(a.andnot_len(b), andnot.len() as u64);
    assert_eq!(a.intersects(b), !and.is_empty());
    assert_eq!(a.is_subset(b), ma.is_subset(mb));
    let j = a.jaccard(b);
    let expect = if or.is_empty() {
        0.0
    } else {
        and.len() as f64 / or.len() as f64
    };
    assert!((j - expect).abs() < 1e-12);

    let mut x = a.clone();
    x.and_in_place(b);
    assert_matches(&x, &and);
    let mut x = a.clone();
    x.or_in_place(b);
    assert_matches(&x, &or);
    let mut x = a.clone();
    x.xor_in_place(b);
    assert_matches(&x, &xor);
    let mut x = a.clone();
    x.andnot_in_place(b);
    assert_matches(&x, &andnot);

    // Container level: every pair of containers of the same key, through views.
    for (k, ca) in a.containers() {
        if let Some(cb) = b.container(k) {
            let (ra, rb) = (ca.as_ref(), cb.as_ref());
            let n = crate::setops::and(ra, rb);
            n.validate().unwrap();
            assert_eq!(crate::setops::and_len(ra, rb), n.cardinality());
            assert_eq!(crate::setops::intersects(ra, rb), !n.is_empty());
            for f in [crate::setops::or, crate::setops::xor, crate::setops::andnot] {
                f(ra, rb).validate().unwrap();
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u32),
    Remove(u32),
    AddRange(u32, u32),
    RemoveRange(u32, u32),
    FlipRange(u32, u32),
    InsertMany(Vec<u32>),
    RemoveMany(Vec<u32>),
    Optimize,
}

fn op() -> impl Strategy<Value = Op> {
    let range = || (value(), 0u32..140_000).prop_map(|(s, w)| (s, s.saturating_add(w)));
    prop_oneof![
        3 => value().prop_map(Op::Insert),
        3 => value().prop_map(Op::Remove),
        1 => range().prop_map(|(s, e)| Op::AddRange(s, e)),
        1 => range().prop_map(|(s, e)| Op::RemoveRange(s, e)),
        1 => range().prop_map(|(s, e)| Op::FlipRange(s, e)),
        1 => prop::collection::vec(value(), 0..200).prop_map(Op::InsertMany),
        1 => prop::collection::vec(value(), 0..200).prop_map(Op::RemoveMany),
        1 => Just(Op::Optimize),
    ]
}

fn apply(b: &mut Bitmap, m: &mut Model, op: &Op) {
    match op {
        Op::Insert(v) => assert_eq!(b.insert(*v), m.insert(*v)),
        Op::Remove(v) => assert_eq!(b.remove(*v), m.remove(v)),
        Op::AddRange(s, e) => {
            b.add_range(*s, *e);
            m.extend(*s..=*e);
        }
        Op::RemoveRange(s, e) => {
            b.remove_range(*s, *e);
            let gone: Vec<u32> = m.range(*s..=*e).copied().collect();
            for v in gone {
                m.remove(&v);
            }
        }
        Op::FlipRange(s, e) => {
            b.flip_range(*s, *e);
            for v in *s..=*e {
                if !m.remove(&v) {
                    m.insert(v);
                }
            }
        }
        Op::InsertMany(vs) => {
            let before = m.len();
            m.extend(vs.iter().copied());
            assert_eq!(b.insert_many(vs), (m.len() - before) as u64);
        }
        Op::RemoveMany(vs) => {
            let n = vs.iter().filter(|v| m.remove(v)).count();
            assert_eq!(b.remove_many(vs), n as u64);
        }
        Op::Optimize => {
            b.optimize();
        }
    }
}

fn check_queries(b: &Bitmap, m: &Model, probes: &[u32]) {
    assert_eq!(b.min(), m.first().copied());
    assert_eq!(b.max(), m.last().copied());
    assert_eq!(b.is_empty(), m.is_empty());
    for &p in probes {
        assert_eq!(b.contains(p), m.contains(&p), "contains {p}");
        assert_eq!(b.rank(p), m.range(..=p).count() as u64, "rank {p}");
        let from: Vec<u32> = b.iter_from(p).take(5).collect();
        let mfrom: Vec<u32> = m.range(p..).take(5).copied().collect();
        assert_eq!(from, mfrom, "iter_from {p}");
        let e = p.saturating_add(70_000);
        assert_eq!(b.count_range(p, e), m.range(p..=e).count() as u64);
    }
    let n = m.len() as u64;
    for i in [0, 1, n / 2, n.saturating_sub(1), n, n + 1] {
        assert_eq!(b.select(i), m.iter().nth(i as usize).copied(), "select {i}");
    }
    let st = b.stat();
    assert_eq!(st.cardinality, n);
    assert_eq!(st.sum, m.iter().map(|&v| v as u128).sum::<u128>());
    assert_eq!(st.array.values + st.bitset.values + st.run.values, n);
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn pairwise_ops_match_model((a, ma) in bitmap_and_model(), (b, mb) in bitmap_and_model()) {
        check_pair(&a, &ma, &b, &mb);
        check_pair(&b, &mb, &a, &ma);
        check_pair(&a, &ma, &a, &ma);
    }

    #[test]
    fn queries_match_model((b, m) in bitmap_and_model(), probes in prop::collection::vec(value(), 1..20)) {
        check_queries(&b, &m, &probes);
    }

    #[test]
    fn mutation_sequences_match_model((mut b, mut m) in bitmap_and_model(), ops in prop::collection::vec(op(), 1..12)) {
        for o in &ops {
            apply(&mut b, &mut m, o);
            assert_matches(&b, &m);
        }
    }

    #[test]
    fn bytes_round_trip_at_any_alignment((b, m) in bitmap_and_model(), shift in 0usize..8) {
        let bytes = b.to_bytes();
        prop_assert_eq!(bytes.len(), b.serialized_size());
        let back = Bitmap::from_bytes(&bytes).unwrap();
        assert_matches(&back, &m);
        for (_, c) in b.containers() {
            let mut buf = vec![0u8; shift];
            buf.extend_from_slice(c.as_bytes());
            let v = ContainerView::parse(&buf[shift..]).unwrap();
            prop_assert_eq!(v.to_buf(), c.clone());
            prop_assert!(v.as_ref().iter().eq(c.as_ref().iter()));
            prop_assert_eq!(ContainerBuf::from_bytes(&buf[shift..]).unwrap(), c.clone());
        }
        let p = b.serialize_portable();
        prop_assert_eq!(p.len(), b.portable_size());
        let back = Bitmap::deserialize_portable(&p).unwrap();
        assert_matches(&back, &m);
    }

    #[test]
    fn nway_ops_match_model(inputs in prop::collection::vec(bitmap_and_model(), 0..6)) {
        let refs: Vec<&Bitmap> = inputs.iter().map(|(b, _)| b).collect();
        let mut union = Model::new();
        for (_, m) in &inputs {
            union.extend(m.iter().copied());
        }
        assert_matches(&Bitmap::union_many(&refs), &union);
        let inter: Model = match inputs.split_first() {
            None => Model::new(),
            Some(((_, first), rest)) => first
                .iter()
                .copied()
                .filter(|v| rest.iter().all(|(_, m)| m.contains(v)))
                .collect(),
        };
        assert_matches(&Bitmap::intersection_many(&refs), &inter);
    }

    #[test]
    fn corrupted_bytes_are_rejected_or_valid((b, _) in bitmap_and_model(), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4)) {
        let mut bytes = b.to_bytes();
        let mut portable = b.serialize_portable();
        for (i, x) in &flips {
            if !bytes.is_empty() {
                let n = bytes.len();
                bytes[i % n] ^= x | 1;
            }
            let n = portable.len();
            portable[i % n] ^= x | 1;
        }
        if let Ok(d) = Bitmap::from_bytes(&bytes) {
            d.validate().unwrap();
        }
        if let Ok(d) = Bitmap::deserialize_portable(&portable) {
            d.validate().unwrap();
        }
        for cut in [0, 1, 3, bytes.len() / 2] {
            if cut < bytes.len() {
                prop_assert!(Bitmap::from_bytes(&b.to_bytes()[..cut]).is_err() || cut == 0 && b.is_empty());
            }
        }
    }
}

#[test]
fn kind_policy_follows_the_spec_examples() {
    // 3 array values → 6 bytes; 4 → 8 bytes.
    let b = Bitmap::from_sorted(&[3, 10, 100]);
    assert_eq!(b.stat().array.bytes, 6);
    let b = Bitmap::from_sorted(&[3, 10, 100, 1000]);
    assert_eq!(b.stat().array.bytes, 8);
    // {1..9} after optimize → one run container of 9 values in 6 bytes, sum 45.
    let mut b = Bitmap::from_sorted(&(1..=9).collect::<Vec<_>>());
    assert_eq!(b.stat().array.containers, 1);
    b.optimize();
    let s = b.stat();
    assert_eq!(
        (s.run.containers, s.run.values, s.run.bytes, s.sum),
        (1, 9, 6, 45)
    );
    // array → bitset past 4,096 and back.
    let mut b = Bitmap::from_sorted(&(0..4096).map(|v| v * 2).collect::<Vec<_>>());
    assert_eq!(b.stat().array.containers, 1);
    b.insert(1);
    assert_eq!(
        (b.stat().bitset.containers, b.stat().bitset.bytes),
        (1, 8192)
    );
    b.remove(1);
    assert_eq!(b.stat().array.containers, 1);
}

#[test]
fn full_domain_range_write_is_cheap_and_exact() {
    let mut b = Bitmap::new();
    b.add_range(0, u32::MAX);
    assert_eq!(b.len(), 1 << 32);
    assert_eq!(b.container_count(), 65536);
    assert_eq!(b.stat().run.containers, 65536);
    assert_eq!(b.rank(u32::MAX), 1 << 32);
    assert_eq!(b.select((1 << 32) - 1), Some(u32::MAX));
    b.remove(u32::MAX);
    assert!(!b.contains(u32::MAX));
    assert_eq!(b.max(), Some(u32::MAX - 1));
    b.flip_range(0, u32::MAX);
    assert_eq!(b.iter().collect::<Vec<_>>(), vec![u32::MAX]);
}

#[test]
fn fuzz_logic_over_random_byte_strings() {
    let n = (cases(64) as u64 / 2).max(1);
    let mut rng = crate::testing::SplitMix(0x5EED);
    for _ in 0..n {
        let len = rng.below(200) as usize;
        let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        crate::testing::fuzz_decode_and_apply(&data);
    }
    // Structured seeds: valid encodings, then mutated.
    for seed in 0..n {
        let mut r = crate::testing::SplitMix(seed);
        let vals: Vec<u32> = (0..r.below(3000))
            .map(|_| r.below(1 << 18) as u32)
            .collect();
        let mut b = Bitmap::from_unsorted(&vals);
        if seed % 2 == 0 {
            b.optimize();
        }
        for mut bytes in [b.to_bytes(), b.serialize_portable()] {
            crate::testing::fuzz_decode(&bytes);
            for _ in 0..4 {
                let i = r.below(bytes.len() as u64) as usize;
                bytes[i] ^= 1 << r.below(8);
                crate::testing::fuzz_decode(&bytes);
            }
        }
    }
}
