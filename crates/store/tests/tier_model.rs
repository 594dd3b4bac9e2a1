//! The memory tier under pressure: random commands over strings, sets,
//! hashes and bitmaps run through a store whose tier budget is so small
//! that nearly every command evicts, and every reply and the final state
//! are compared with a plain in-memory model. Runs on the LSM store and on
//! the in-memory one, with and without the bitmap write-back path.

use proptest::prelude::*;
use roaringd_store::types::bitmap::RangeOp;
use roaringd_store::types::strings::SetOptions;
use roaringd_store::{Store, StoreConfig, SyncMode};
use std::collections::{BTreeMap, BTreeSet};

const KEYS: usize = 8;

#[derive(Clone, Debug)]
enum Op {
    Set(usize, u8),
    Get(usize),
    SAdd(usize, Vec<u8>),
    SRem(usize, u8),
    SIsMember(usize, u8),
    SMembers(usize),
    HSet(usize, u8, u8),
    HDel(usize, u8),
    HGetAll(usize),
    SetBit(usize, u32, bool, bool),
    GetBit(usize, u32, bool),
    Range(usize),
    RangeSet(usize, u32, u32),
    Del(usize),
    Rename(usize, usize),
}

/// Key `i` always holds type `i % 4` (string, set, hash, bitmap), so the
/// model needs no type errors; RENAME keeps to keys of one type.
fn key(i: usize) -> Vec<u8> {
    format!("k{i}").into_bytes()
}

fn bit() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..300, 60_000u32..70_000, any::<u32>()]
}

fn op() -> impl Strategy<Value = Op> {
    let of = |t: usize| (0..KEYS / 4).prop_map(move |i| i * 4 + t);
    prop_oneof![
        (of(0), any::<u8>()).prop_map(|(k, v)| Op::Set(k, v)),
        of(0).prop_map(Op::Get),
        (of(1), prop::collection::vec(0u8..40, 1..20)).prop_map(|(k, m)| Op::SAdd(k, m)),
        (of(1), 0u8..40).prop_map(|(k, m)| Op::SRem(k, m)),
        (of(1), 0u8..40).prop_map(|(k, m)| Op::SIsMember(k, m)),
        of(1).prop_map(Op::SMembers),
        (of(2), 0u8..30, any::<u8>()).prop_map(|(k, f, v)| Op::HSet(k, f, v)),
        (of(2), 0u8..30).prop_map(|(k, f)| Op::HDel(k, f)),
        of(2).prop_map(Op::HGetAll),
        (of(3), bit(), any::<bool>(), any::<bool>())
            .prop_map(|(k, b, v, d)| Op::SetBit(k, b, v, d)),
        (of(3), bit(), any::<bool>()).prop_map(|(k, b, d)| Op::GetBit(k, b, d)),
        of(3).prop_map(Op::Range),
        (of(3), 0u32..200_000, 0u32..5_000).prop_map(|(k, s, n)| Op::RangeSet(k, s, n)),
        (0..KEYS).prop_map(Op::Del),
        (0..KEYS, 0..KEYS / 4).prop_map(|(a, j)| Op::Rename(a, j * 4 + a % 4)),
    ]
}

#[derive(Clone, Debug, PartialEq)]
enum Val {
    Str(Vec<u8>),
    Set(BTreeSet<Vec<u8>>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Bits(BTreeSet<u32>),
}

fn open(dir: Option<&std::path::Path>, tier_bytes: u64) -> Store {
    Store::open(StoreConfig {
        dir: dir.map(std::path::Path::to_path_buf),
        databases: 1,
        sync: SyncMode::No,
        cache_bytes: 1 << 20,
        tier_bytes,
        memtable_bytes: 4 << 20,
    })
    .unwrap()
}

fn run(store: &Store, ops: &[Op]) {
    let mut model: BTreeMap<usize, Val> = BTreeMap::new();
    for op in ops {
        apply(store, &mut model, op);
    }
    // Final state, key by key, read through a cold tier and a warm one.
    for round in 0..2 {
        if round == 0 {
            store.tier().clear();
        }
        for i in 0..KEYS {
            check_key(store, &model, i);
        }
    }
}

fn check_key(store: &Store, model: &BTreeMap<usize, Val>, i: usize) {
    let k = key(i);
    let mut t = store.begin(&[(0, &k)]);
    let got = match i % 4 {
        0 => t.get(0, &k).unwrap().map(Val::Str),
        1 => {
            let m = t.smembers(0, &k).unwrap();
            (!m.is_empty()).then(|| Val::Set(m.into_iter().collect()))
        }
        2 => {
            let h = t.hgetall(0, &k).unwrap();
            (!h.is_empty()).then(|| Val::Hash(h.into_iter().collect()))
        }
        _ => t
            .tr_range(0, &k, 0, u32::MAX, usize::MAX)
            .unwrap()
            .map(|v| Val::Bits(v.into_iter().collect())),
    };
    assert_eq!(got.as_ref(), model.get(&i), "key {i}");
}

fn apply(store: &Store, model: &mut BTreeMap<usize, Val>, op: &Op) {
    match op {
        Op::Set(i, v) => {
            let k = key(*i);
            let mut t = store.begin(&[(0, &k)]);
            t.set(0, &k, vec![*v; 1 + *v as usize % 50], SetOptions::default())
                .unwrap();
            t.commit().unwrap();
            model.insert(*i, Val::Str(vec![*v; 1 + *v as usize % 50]));
        }
        Op::Get(i) => {
            let k = key(*i);
            let mut t = store.begin(&[(0, &k)]);
            let got = t.get(0, &k).unwrap();
            let want = match model.get(i) {
                Some(Val::Str(s)) => Some(s.clone()),
                _ => None,
            };
            assert_eq!(got, want);
        }
        Op::SAdd(i, ms) => {
            let k = key(*i);
            let ms: Vec<Vec<u8>> = ms.iter().map(|m| vec![b'm', *m]).collect();
            let mut t = store.begin(&[(0, &k)]);
            let added = t.sadd(0, &k, &ms).unwrap();
            t.commit().unwrap();
            let Val::Set(s) = model.entry(*i).or_insert(Val::Set(BTreeSet::new())) else {
                unreachable!()
            };
            let before = s.len();
            s.extend(ms);
            assert_eq!(added as usize, s.len() - before);
        }
        Op::SRem(i, m) => {
            let k = key(*i);
            let mut t = store.begin(&[(0, &k)]);
            let n = t.srem(0, &k, &[vec![b'm', *m]]).unwrap();
            t.commit().unwrap();
            let removed = match model.get_mut(i) {
                Some(Val::Set(s)) => {
                    let r = s.remove(&vec![b'm', *m]);
                    if s.is_empty() {
                        model.remove(i);
                    }
                    r
                }
                _ => false,
            };
            assert_eq!(n == 1, removed);
        }
        Op::SIsMember(i, m) => {
            let k = key(*i);
            let mut t = store.begin(&[(0, &k)]);
            let got = t.sismember(0, &k, &[b'm', *m]).unwrap();
            let want = matches!(model.get(i), Some(Val::Set(s)) if s.contains(&vec![b'm', *m]));
            assert_eq!(got, want);
        }
        Op::SMembers(i) | Op::HGetAll(i) | Op::Range(i) => check_key(store, model, *i),
        Op::HSet(i, f, v) => {
            let k = key(*i);
            let mut t = store.begin(&[(0, &k)]);
            t.hset(0, &k, &[(vec![b'f', *f], vec![*v])], false).unwrap();
            t.commit().unwrap();
            let Val::Hash(h) = model.entry(*i).or_insert(Val::Hash(BTreeMap::new())) else {
                unreachable!()
            };
            h.insert(vec![b'f', *f], vec![*v]);
        }
        Op::HDel(i, f) => {
            let k = key(*i);
            let mut t = store.begin(&[(0, &k)]);
            let n = t.hdel(0, &k, &[vec![b'f', *f]]).unwrap();
            t.commit().unwrap();
            let removed = match model.get_mut(i) {
                Some(Val::Hash(h)) => {
                    let r = h.remove(&vec![b'f', *f]).is_some();
                    if h.is_empty() {
                        model.remove(i);
                    }
                    r
                }
                _ => false,
            };
            assert_eq!(n == 1, removed);
        }
        Op::SetBit(i, b, v, keep_dirty) => {
            let k = key(*i);
            let mut t = if *keep_dirty {
                store.begin_keep_dirty(&[(0, &k)])
            } else {
                store.begin(&[(0, &k)])
            };
            let old = t.tr_setbit(0, &k, *b, *v).unwrap();
            t.commit().unwrap();
            let bits = match model.get_mut(i) {
                Some(Val::Bits(s)) => s,
                _ => {
                    model.insert(*i, Val::Bits(BTreeSet::new()));
                    let Some(Val::Bits(s)) = model.get_mut(i) else {
                        unreachable!()
                    };
                    s
                }
            };
            let was = if *v { !bits.insert(*b) } else { bits.remove(b) };
            assert_eq!(old, was);
            if bits.is_empty() {
                // TR.SETBIT 0 on a missing key creates an empty bitmap;
                // clearing the last bit keeps the key (TairRoaring).
                let mut t = store.begin(&[(0, &k)]);
                let exists = t.exists(0, &k).unwrap();
                drop(t);
                if !exists {
                    model.remove(i);
                }
            }
        }
        Op::GetBit(i, b, keep_dirty) => {
            let k = key(*i);
            let mut t = if *keep_dirty {
                store.begin_keep_dirty(&[(0, &k)])
            } else {
                store.begin(&[(0, &k)])
            };
            let got = t.tr_getbit(0, &k, *b).unwrap();
            let want = matches!(model.get(i), Some(Val::Bits(s)) if s.contains(b));
            assert_eq!(got, want);
        }
        Op::RangeSet(i, s, n) => {
            let k = key(*i);
            let mut t = store.begin(&[(0, &k)]);
            t.tr_range_write(0, &k, *s, s + n, RangeOp::Set).unwrap();
            t.commit().unwrap();
            let Val::Bits(bits) = model.entry(*i).or_insert(Val::Bits(BTreeSet::new())) else {
                unreachable!()
            };
            bits.extend(*s..=s + n);
        }
        Op::Del(i) => {
            let k = key(*i);
            let mut t = store.begin(&[(0, &k)]);
            let got = t.del(0, &k).unwrap();
            t.commit().unwrap();
            assert_eq!(got, model.remove(i).is_some());
        }
        Op::Rename(a, b) => {
            let (ka, kb) = (key(*a), key(*b));
            let mut t = store.begin(&[(0, &ka), (0, &kb)]);
            let r = t.rename(0, &ka, &kb, false);
            match model.remove(a) {
                Some(v) => {
                    r.unwrap();
                    t.commit().unwrap();
                    model.insert(*b, v);
                }
                None => assert!(r.is_err()),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A 1 KiB tier: nearly every command evicts (a key of a few entries
    /// is about 400 counted bytes), on the LSM store.
    #[test]
    fn lsm_store_with_an_evicting_tier_matches_the_model(ops in prop::collection::vec(op(), 1..120)) {
        let dir = tempfile::tempdir().unwrap();
        let store = open(Some(dir.path()), 1 << 10);
        run(&store, &ops);
        let stats = store.tier().stats();
        prop_assert!(stats.resident_bytes <= stats.budget_bytes);
    }

    /// The same on the in-memory store, with a tier of 1 byte (every key
    /// is evicted right after it is filled).
    #[test]
    fn mem_store_with_an_empty_tier_matches_the_model(ops in prop::collection::vec(op(), 1..120)) {
        let store = open(None, 1);
        run(&store, &ops);
    }

    /// And with a tier that never evicts: every read after the first is a hit.
    #[test]
    fn mem_store_with_a_roomy_tier_matches_the_model(ops in prop::collection::vec(op(), 1..120)) {
        let store = open(None, 64 << 20);
        run(&store, &ops);
    }
}
