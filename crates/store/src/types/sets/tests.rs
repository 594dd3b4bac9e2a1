//! Sets through their pages against a `BTreeSet` model.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::page::{self, PAGE_BYTES};
use crate::keys;
use crate::kv::Space;
use crate::store::{Store, StoreConfig};

/// Member `i` of the test pool: lengths vary (1 to 40 bytes), and every
/// 97th is longer than a page.
fn member(i: u16) -> Vec<u8> {
    if i.is_multiple_of(97) {
        return format!("{i:0>1500}").into_bytes();
    }
    let mut m = format!("{i}-").into_bytes();
    m.resize(m.len() + usize::from(i % 37), b'x');
    m
}

#[derive(Clone, Debug)]
enum Op {
    Add(Vec<u16>),
    Rem(Vec<u16>),
    Pop(u8),
    Has(u16),
    Scan(u8),
    Rand(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let ids = |n| prop::collection::vec(0u16..3000, 1..n);
    prop_oneof![
        4 => ids(300).prop_map(Op::Add),
        2 => ids(100).prop_map(Op::Rem),
        1 => (1u8..20).prop_map(Op::Pop),
        2 => (0u16..3000).prop_map(Op::Has),
        1 => (1u8..50).prop_map(Op::Scan),
        1 => (1u8..30).prop_map(Op::Rand),
    ]
}

/// The stored pages of set `s` obey `page`'s invariants and hold `model`.
fn check_pages(store: &Store, model: &BTreeSet<Vec<u8>>) {
    let Some(m) = store.begin(&[]).meta(0, b"s").unwrap() else {
        assert!(model.is_empty());
        return;
    };
    let prefix = keys::data_prefix(0, b"s", m.version);
    let mut all: Vec<Vec<u8>> = Vec::new();
    for e in store.kv().prefix(Space::Data, &prefix, false) {
        let (k, v) = e.unwrap();
        let ms = page::members(&k[prefix.len()..], &v).unwrap();
        let bytes: usize = ms.iter().map(|m| page::encoded_len(m)).sum();
        assert!(
            ms.len() == 1 || bytes <= PAGE_BYTES,
            "page of {bytes} bytes"
        );
        if let Some(prev) = all.last() {
            assert!(ms[0] > prev.as_slice(), "pages overlap");
        }
        all.extend(ms.into_iter().map(<[u8]>::to_vec));
    }
    assert_eq!(all, model.iter().cloned().collect::<Vec<_>>());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn sets_in_pages_behave_as_the_model(ops in prop::collection::vec(op(), 1..40)) {
        let store = Store::open(StoreConfig::default()).unwrap();
        let mut model = BTreeSet::new();
        for op in ops {
            let mut t = store.begin(&[(0, b"s")]);
            match op {
                Op::Add(ids) => {
                    let ms: Vec<Vec<u8>> = ids.iter().map(|&i| member(i)).collect();
                    let before = model.len();
                    model.extend(ms.iter().cloned());
                    prop_assert_eq!(t.sadd(0, b"s", &ms).unwrap(), (model.len() - before) as u64);
                }
                Op::Rem(ids) => {
                    let ms: Vec<Vec<u8>> = ids.iter().map(|&i| member(i)).collect();
                    let gone = ms.iter().collect::<BTreeSet<_>>().into_iter().filter(|m| model.remove(*m)).count();
                    prop_assert_eq!(t.srem(0, b"s", &ms).unwrap(), gone as u64);
                }
                Op::Pop(n) => {
                    let got = t.spop(0, b"s", Some(u64::from(n))).unwrap();
                    prop_assert_eq!(got.len(), model.len().min(usize::from(n)));
                    for m in &got {
                        prop_assert!(model.remove(m), "popped a non-member");
                    }
                }
                Op::Has(i) => {
                    let m = member(i);
                    prop_assert_eq!(t.sismember(0, b"s", &m).unwrap(), model.contains(&m));
                    let miss = [m.clone(), b"zz".to_vec()];
                    prop_assert_eq!(
                        t.smismember(0, b"s", &miss).unwrap(),
                        vec![model.contains(&m), model.contains(&miss[1])]
                    );
                }
                Op::Scan(count) => {
                    let mut seen = Vec::new();
                    let mut cursor = 0;
                    loop {
                        let (next, got) = t.sscan(0, b"s", cursor, None, usize::from(count)).unwrap();
                        seen.extend(got);
                        if next == 0 {
                            break;
                        }
                        cursor = next;
                    }
                    // Each member once (a big set's scan follows byte order).
                    seen.sort();
                    prop_assert_eq!(seen, model.iter().cloned().collect::<Vec<_>>());
                    let all = t.smembers(0, b"s").unwrap();
                    prop_assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), model.clone());
                }
                Op::Rand(n) => {
                    let got = t.srandmember(0, b"s", Some(i64::from(n))).unwrap();
                    prop_assert_eq!(got.len(), model.len().min(usize::from(n)));
                    prop_assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), got.len());
                    prop_assert!(got.iter().all(|m| model.contains(m)));
                    let one = t.srandmember(0, b"s", None).unwrap();
                    prop_assert_eq!(one.len(), usize::from(!model.is_empty()));
                    prop_assert!(one.iter().all(|m| model.contains(m)));
                    let rep = t.srandmember(0, b"s", Some(-i64::from(n))).unwrap();
                    prop_assert!(model.is_empty() || rep.len() == usize::from(n));
                    prop_assert!(rep.iter().all(|m| model.contains(m)));
                }
            }
            t.commit().unwrap();
            let mut t = store.begin(&[(0, b"s")]);
            prop_assert_eq!(t.scard(0, b"s").unwrap(), model.len() as u64);
            drop(t);
            check_pages(&store, &model);
        }
    }
}

#[test]
fn set_algebra_reads_members_through_pages() {
    let store = Store::open(StoreConfig::default()).unwrap();
    let mut t = store.begin(&[(0, b"a"), (0, b"b")]);
    let a: Vec<Vec<u8>> = (0..2000u16).map(member).collect();
    let b: Vec<Vec<u8>> = (1000..3000u16).map(member).collect();
    t.sadd(0, b"a", &a).unwrap();
    t.sadd(0, b"b", &b).unwrap();
    let sorted = |mut v: Vec<Vec<u8>>| {
        v.sort();
        v
    };
    let want = |r: std::ops::Range<u16>| sorted(r.map(member).collect());
    let keys: [&[u8]; 2] = [b"a", b"b"];
    assert_eq!(
        sorted(t.set_combine(0, super::SetOp::Inter, &keys).unwrap()),
        want(1000..2000)
    );
    assert_eq!(
        sorted(t.set_combine(0, super::SetOp::Diff, &keys).unwrap()),
        want(0..1000)
    );
    assert_eq!(
        sorted(t.set_combine(0, super::SetOp::Union, &keys).unwrap()),
        want(0..3000)
    );
    assert!(t.smove(0, b"a", b"b", &member(5)).unwrap());
    assert!(!t.sismember(0, b"a", &member(5)).unwrap());
    assert!(t.sismember(0, b"b", &member(5)).unwrap());
    t.commit().unwrap();
}
