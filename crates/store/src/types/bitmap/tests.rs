//! Model tests of the bitmap type across its modules: exact summaries and
//! extremes, delta entries of earlier builds, edits of one block in one `Txn`, TR.BITOP in
//! place, ranges, TR.BITPOS and set operations against `BTreeSet` models,
//! corrupt container bytes, and container cache coherence.

use super::range_writes::OPTIMIZE_CHUNK_BYTES;
use super::summary::{key_bytes, summary_of_bitmap};
use super::*;
use crate::error::StoreError;
use crate::keys;
use crate::meta::{BitmapSummary, Kind, Summary};
use crate::store::{Store, StoreConfig};
use crate::txn::Txn;
use roaringd_bitmap::Bitmap;
use std::collections::BTreeSet;

fn store() -> Store {
    Store::open(StoreConfig::default()).unwrap()
}

/// A seeded stream of draws: each call returns a value below its bound.
fn draws(seed: u64) -> impl FnMut(u32) -> u32 {
    let mut x = seed;
    move |bound| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 33) as u32) % bound
    }
}

/// Asserts that bitmap `key` exists and holds exactly `model`: its
/// summary (extremes 0 when empty), census and content, and that it has
/// no delta entry.
fn check(t: &mut Txn, key: &[u8], model: &BTreeSet<u32>) {
    let s = t.tr_summary(0, key).unwrap().unwrap();
    assert_eq!(s.card, model.len() as u64);
    let extremes = (model.first(), model.last());
    assert_eq!(
        (s.min, s.max),
        (*extremes.0.unwrap_or(&0), *extremes.1.unwrap_or(&0))
    );
    assert_eq!(s.sum, model.iter().map(|&v| u64::from(v)).sum::<u64>());
    let all = t
        .tr_range(0, key, 0, u32::MAX, usize::MAX - 1)
        .unwrap()
        .unwrap();
    assert_eq!(all, model.iter().copied().collect::<Vec<_>>());
    let b = t.tr_load(0, key).unwrap().unwrap();
    let (version, _) = t.bm_version(0, key).unwrap().unwrap();
    let subkeys_not_blocks = t
        .data_iter(0, key, version, None, false)
        .filter(|e| e.as_ref().unwrap().0.len() != 2)
        .count();
    assert_eq!((s.deltas, subkeys_not_blocks), (0, 0), "a delta entry");
    assert_eq!(summary_of_bitmap(&b), s, "census drifted");
}

/// Lays out delta entries of block `hi` of bitmap `key` (db 0) as builds
/// before store format 6 wrote them: one entry per op in `ops`, numbered
/// from 0, and the meta's summary of the content with them applied, with
/// its delta count. The key must have no deltas yet (this build reads
/// none), and the block must be a single (see `page`) that the ops leave
/// non-empty. Nothing of this build reads such a key before
/// [`delta::fold_store`] has run.
fn plant_raw(st: &Store, key: &[u8], hi: u16, ops: &[(u16, bool)]) {
    let mut t = st.begin(&[]);
    let mut b = t.tr_load(0, key).unwrap().unwrap();
    let mut m = t.meta_of(0, key, Kind::Bitmap).unwrap().unwrap();
    let single = keys::data_key(0, key, m.version, &hi.to_be_bytes());
    drop(t);
    let kv = &st.inner.kv;
    let stored = kv.get(crate::kv::Space::Data, &single).unwrap();
    assert!(
        stored.is_some_and(|v| !page::is_page(&v)),
        "block {hi} is a single"
    );
    let mut batch = crate::kv::WriteBatch::new();
    for (seq, &(lo, set)) in (0u16..).zip(ops) {
        let dk = keys::data_key(0, key, m.version, &delta::delta_sub(hi, seq));
        batch.put(crate::kv::Space::Data, dk, delta::encode_ops(&[(lo, set)]));
        let v = u32::from(hi) << 16 | u32::from(lo);
        if set {
            b.insert(v);
        } else {
            b.remove(v);
        }
    }
    m.summary = Summary::Bitmap(BitmapSummary {
        deltas: ops.len() as u64,
        ..summary_of_bitmap(&b)
    });
    batch.put(crate::kv::Space::Meta, keys::meta_key(0, key), m.encode());
    kv.write(batch, crate::kv::Durability::Sync).unwrap();
}

/// [`plant_raw`], then the fold an open of that store runs
/// ([`delta::fold_store`]), with the container cache emptied as a restart
/// leaves it.
fn plant_deltas(st: &Store, key: &[u8], hi: u16, ops: &[(u16, bool)]) {
    plant_raw(st, key, hi, ops);
    assert_eq!(delta::fold_store(st.inner.kv.as_ref()).unwrap(), 1);
    let cap = st.inner.ccache.capacity();
    st.set_container_cache_bytes(0);
    st.set_container_cache_bytes(cap);
}

#[test]
fn single_bit_writes_keep_the_summary_exact_across_kinds() {
    let st = store();
    let mut t = st.begin(&[]);
    let mut model = BTreeSet::new();
    let mut x: u64 = 12345;
    for i in 0..12_000u32 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let v = ((x >> 33) as u32) % 200_000;
        let set = i % 5 != 0;
        let prev = t.tr_setbit(0, b"k", v, set).unwrap();
        assert_eq!(prev, model.contains(&v));
        if set {
            model.insert(v);
        } else {
            model.remove(&v);
        }
    }
    check(&mut t, b"k", &model);
    for v in model.clone().into_iter().take(5000) {
        t.tr_setbit(0, b"k", v, false).unwrap();
        model.remove(&v);
    }
    check(&mut t, b"k", &model);
}

/// A key that TR.SETBIT or TR.SETBITS creates is written whole
/// (`bm_create_with`): its content, summary and census are those of the
/// same bits edited into an existing key, in the creating `Txn` and after
/// its commit, for one bit, a bitset block and more blocks than a page
/// holds.
#[test]
fn keys_created_by_bit_writes_match_keys_edited_into() {
    let st = store();
    let mut rnd = draws(99);
    let mut sets: Vec<Vec<u32>> = vec![vec![7], vec![u32::MAX], vec![5, 5, 3]];
    sets.push((0..6000).map(|_| rnd(1 << 16)).collect());
    sets.push((0..3000).map(|_| rnd(u32::MAX)).collect());
    sets.push((0..200).map(|_| rnd(10_000_000)).collect());
    for (i, bits) in sets.iter().enumerate() {
        let model: BTreeSet<u32> = bits.iter().copied().collect();
        let (new, old) = (format!("new{i}"), format!("old{i}"));
        let mut t = st.begin(&[]);
        // `old` exists (one far bit, then cleared) before the bits go in.
        t.tr_setbit(0, old.as_bytes(), 1 << 31, true).unwrap();
        t.tr_setbit(0, old.as_bytes(), 1 << 31, false).unwrap();
        let card = if bits.len() == 1 {
            assert!(!t.tr_setbit(0, new.as_bytes(), bits[0], true).unwrap());
            t.tr_setbit(0, old.as_bytes(), bits[0], true).unwrap();
            1
        } else {
            let card = t.tr_setbits(0, new.as_bytes(), bits).unwrap();
            t.tr_setbits(0, old.as_bytes(), bits).unwrap();
            card
        };
        assert_eq!(card, model.len() as u64);
        check(&mut t, new.as_bytes(), &model);
        let (a, b) = (
            t.tr_summary(0, new.as_bytes()),
            t.tr_summary(0, old.as_bytes()),
        );
        assert_eq!(a.unwrap().unwrap(), b.unwrap().unwrap());
        t.commit().unwrap();
        let mut t = st.begin(&[]);
        check(&mut t, new.as_bytes(), &model);
    }
}

/// Extremes kept exact while whole blocks empty from either end (a
/// sliding window of ids): each new minimum / maximum is found past
/// the block that lost it.
#[test]
fn extremes_follow_blocks_emptied_from_both_ends() {
    let st = store();
    let mut model = BTreeSet::new();
    let mut t = st.begin(&[]);
    let vals: Vec<u32> = (0..40u32)
        .flat_map(|hi| [hi << 16 | 7, hi << 16 | 900])
        .collect();
    t.tr_setbits(0, b"k", &vals).unwrap();
    t.commit().unwrap();
    model.extend(vals);
    let mut step = 0;
    while model.len() > 1 {
        let v = if step % 3 == 0 {
            *model.last().unwrap()
        } else {
            *model.first().unwrap()
        };
        step += 1;
        let mut t = st.begin(&[(0, b"k")]);
        assert!(t.tr_setbit(0, b"k", v, false).unwrap());
        t.commit().unwrap();
        model.remove(&v);
        let mut t = st.begin(&[]);
        let s = t.tr_summary(0, b"k").unwrap().unwrap();
        let want = (*model.first().unwrap(), *model.last().unwrap());
        assert_eq!((s.min, s.max), want, "after clearing {v}");
    }
    let mut t = st.begin(&[]);
    check(&mut t, b"k", &model);
}

/// TR.OPTIMIZE over a key of several read chunks: containers that
/// become runs and bitsets that stay, in every chunk, some of them with
/// deltas of an earlier format folded in.
#[test]
fn optimize_rewrites_a_big_key_chunk_by_chunk() {
    let st = store();
    let mut model = BTreeSet::new();
    let mut t = st.begin(&[]);
    let mut x = 5u64;
    for hi in 0..400u32 {
        let vals: Vec<u32> = if hi % 2 == 0 {
            // 2,000 consecutive values: an array that is one run.
            (0..2000).map(|i| (hi << 16) | (100 + i)).collect()
        } else {
            (0..5000)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (hi << 16) | ((x >> 48) as u32)
                })
                .collect()
        };
        t.tr_setbits(0, b"k", &vals).unwrap();
        model.extend(vals);
    }
    t.commit().unwrap();
    for hi in (0..400u32).step_by(7) {
        let v = (hi << 16) | 60_000;
        plant_deltas(&st, b"k", hi as u16, &[(60_000, true)]);
        model.insert(v);
    }
    let mut t = st.begin(&[]);
    let before = t.tr_summary(0, b"k").unwrap().unwrap();
    assert!(key_bytes(&before) > 2 * OPTIMIZE_CHUNK_BYTES as u64);
    let mut t = st.begin(&[(0, b"k")]);
    assert_eq!(t.tr_optimize(0, b"k").unwrap(), Some(()));
    t.commit().unwrap();
    let mut t = st.begin(&[]);
    check(&mut t, b"k", &model);
    let after = t.tr_summary(0, b"k").unwrap().unwrap();
    assert_eq!(after.deltas, 0);
    assert!(after.kinds[2].containers >= 150, "{after:?}");
    assert!(key_bytes(&after) < key_bytes(&before));
}

/// Delta entries of a store of an earlier format, folded as its open does
/// (`delta::fold_store`): every read path (cache on and off, point reads,
/// forward and reverse scans, load, MEMORY USAGE, RENAME, TR.OPTIMIZE)
/// sees the containers with them applied and no delta entry is left; no
/// write of this build adds one.
#[test]
fn deltas_of_an_earlier_format_fold_into_their_containers() {
    for budget in [container_cache::DEFAULT_BYTES, 0] {
        let st = store();
        st.set_container_cache_bytes(budget);
        let mut model = BTreeSet::new();
        let mut t = st.begin(&[]);
        let base: Vec<u32> = (0..2000).map(|i| (5 << 16) | (i * 7)).collect();
        let other: Vec<u32> = (0..2000).map(|i| (8 << 16) | (i * 5)).collect();
        t.tr_setbits(0, b"k", &base).unwrap();
        t.tr_setbits(0, b"k", &other).unwrap();
        t.tr_setbits(0, b"k", &[(6 << 16) | 3]).unwrap();
        t.commit().unwrap();
        model.extend(base);
        model.extend(other);
        model.insert((6 << 16) | 3);
        // Sets and clears, a bit set then cleared again.
        let mut ops5 = Vec::new();
        let mut x = 99u64;
        for step in 0..40u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            let lo = (x >> 40) as u32 % 14_000;
            ops5.push((lo as u16, step % 3 != 0));
        }
        ops5.push((13_001, true));
        ops5.push((13_001, false));
        for &(lo, on) in &ops5 {
            let v = (5 << 16) | u32::from(lo);
            if on {
                model.insert(v);
            } else {
                model.remove(&v);
            }
        }
        plant_deltas(&st, b"k", 5, &ops5);
        plant_deltas(&st, b"k", 8, &[(1, true), (5, false)]);
        model.insert((8 << 16) | 1);
        model.remove(&((8 << 16) | 5));
        let mut t = st.begin(&[]);
        check(&mut t, b"k", &model);
        for &(lo, _) in &ops5 {
            let v = (5 << 16) | u32::from(lo);
            assert_eq!(t.tr_getbit(0, b"k", v).unwrap(), model.contains(&v));
        }
        for back in [1usize, 2, 2002, 2003] {
            let want = *model.iter().rev().nth(back - 1).unwrap();
            let got = t.tr_bitpos(0, b"k", true, -(back as i64)).unwrap();
            assert_eq!(got, i64::from(want), "{back} from the end");
        }
        // MEMORY USAGE from the summary vs the stored entries.
        let m = t.meta_of(0, b"k", Kind::Bitmap).unwrap().unwrap();
        let plen = keys::data_prefix(0, b"k", m.version).len();
        let stored: usize = t
            .data_iter(0, b"k", m.version, None, false)
            .map(|e| e.map(|(sub, v)| plen + sub.len() + v.len()).unwrap())
            .sum();
        let mem = t.memory_usage(0, b"k", 0).unwrap().unwrap();
        let data = mem - (2 + 1 + m.encode().len()) as u64;
        assert_eq!(data, stored as u64);
        drop(t);
        let mut t = st.begin(&[(0, b"k"), (0, b"r")]);
        t.rename(0, b"k", b"r", false).unwrap();
        t.commit().unwrap();
        let mut t = st.begin(&[(0, b"r")]);
        check(&mut t, b"r", &model);
        t.tr_optimize(0, b"r").unwrap();
        t.commit().unwrap();
        let mut t = st.begin(&[]);
        check(&mut t, b"r", &model);
        drop(t);
        // Single-bit edits of a big container on the ordinary path store
        // no delta.
        for i in 0..30u32 {
            let mut t = st.begin(&[(0, b"r")]);
            t.tr_setbit(0, b"r", (5 << 16) | (i * 7 + 1), i % 2 == 0)
                .unwrap();
            t.commit().unwrap();
            if i % 2 == 0 {
                model.insert((5 << 16) | (i * 7 + 1));
            } else {
                model.remove(&((5 << 16) | (i * 7 + 1)));
            }
        }
        let mut t = st.begin(&[]);
        check(&mut t, b"r", &model);
    }
}

/// A data directory of store format 5 with delta entries: the open folds
/// them (the format record then says 6), and the keys read back as the
/// model; one whose deltas break the layout is refused at open with
/// `Corrupt`, and nothing is folded.
#[test]
fn a_format_5_directory_has_its_deltas_folded_at_open() {
    let open = |dir: &std::path::Path| {
        Store::open(StoreConfig {
            dir: Some(dir.to_path_buf()),
            ..StoreConfig::default()
        })
    };
    let format_key = keys::meta_key(keys::INTERNAL_DB, b"format");
    let set_format = |st: &Store, f: u64| {
        let mut batch = crate::kv::WriteBatch::new();
        batch.put(
            crate::kv::Space::Meta,
            format_key.clone(),
            f.to_be_bytes().to_vec(),
        );
        st.inner
            .kv
            .write(batch, crate::kv::Durability::Sync)
            .unwrap();
    };
    for broken in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path()).unwrap();
        let big: BTreeSet<u32> = (0..3000).map(|i| (3 << 16) | (i * 13)).collect();
        let small: BTreeSet<u32> = [1, 70_000, 140_000].into_iter().collect();
        let mut t = st.begin(&[]);
        t.tr_setbits(0, b"big", &big.iter().copied().collect::<Vec<_>>())
            .unwrap();
        for k in [&b"other"[..], b"zeta"] {
            t.tr_setbits(0, k, &big.iter().copied().collect::<Vec<_>>())
                .unwrap();
        }
        t.tr_setbits(0, b"small", &small.iter().copied().collect::<Vec<_>>())
            .unwrap();
        t.commit().unwrap();
        plant_raw(&st, b"big", 3, &[(1, true), (13, false), (2, true)]);
        plant_raw(&st, b"other", 3, &[(5, true)]);
        // A third key: the fold's second chunk in tests.
        plant_raw(&st, b"zeta", 3, &[(5, true)]);
        if broken {
            // Delta number 3 without number 2.
            let m = st
                .inner
                .kv
                .get(crate::kv::Space::Meta, &keys::meta_key(0, b"other"));
            let v = crate::meta::KeyMeta::decode(&m.unwrap().unwrap())
                .unwrap()
                .version;
            let mut batch = crate::kv::WriteBatch::new();
            let dk = keys::data_key(0, b"other", v, &delta::delta_sub(3, 3));
            batch.put(crate::kv::Space::Data, dk, delta::encode_ops(&[(9, true)]));
            st.inner
                .kv
                .write(batch, crate::kv::Durability::Sync)
                .unwrap();
        }
        set_format(&st, 5);
        drop(st);
        if broken {
            let err = open(dir.path()).err().expect("refused");
            assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
            assert!(err.to_string().contains("out of sequence"), "{err}");
            continue;
        }
        let st = open(dir.path()).unwrap();
        assert_eq!(
            st.inner
                .kv
                .get(crate::kv::Space::Meta, &format_key)
                .unwrap(),
            Some(6u64.to_be_bytes().to_vec())
        );
        let mut model = big.clone();
        model.insert((3 << 16) | 1);
        model.remove(&((3 << 16) | 13));
        model.insert((3 << 16) | 2);
        let mut other = big.clone();
        other.insert((3 << 16) | 5);
        let mut t = st.begin(&[]);
        check(&mut t, b"big", &model);
        check(&mut t, b"other", &other);
        check(&mut t, b"zeta", &other);
        check(&mut t, b"small", &small);
        drop(t);
        drop(st);
        // Opened again (format 6 now): nothing left to fold.
        let st = open(dir.path()).unwrap();
        assert_eq!(delta::fold_store(st.inner.kv.as_ref()).unwrap(), 0);
        let mut t = st.begin(&[]);
        check(&mut t, b"big", &model);
    }
}

/// Many single-bit edits of one big container in one `Txn` (a
/// pipeline's group, MULTI/EXEC), with deltas of an earlier format folded
/// into it before: each edit reads the block as the previous ones left
/// it, and
/// a TR.BITOP in place, TR.OPTIMIZE and an abort in between keep
/// every read exact; with the container cache default, tiny and off.
#[test]
fn many_edits_of_one_block_in_one_txn_match_a_model() {
    for budget in [container_cache::DEFAULT_BYTES, 16 * 1024, 0] {
        let st = store();
        st.set_container_cache_bytes(budget);
        let mut model = BTreeSet::new();
        let base: Vec<u32> = (0..3000).map(|i| (2 << 16) | (i * 11)).collect();
        let mut t = st.begin(&[]);
        t.tr_setbits(0, b"k", &base).unwrap();
        t.tr_setbits(0, b"src", &base[..1500]).unwrap();
        t.commit().unwrap();
        model.extend(base.iter().copied());
        plant_deltas(&st, b"k", 2, &[(1, true), (11, false)]);
        model.insert((2 << 16) | 1);
        model.remove(&((2 << 16) | 11));
        let mut x = 7u64 ^ budget;
        let mut rnd = move |n: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(n)) as u32
        };
        let edit = |t: &mut Txn, model: &mut BTreeSet<u32>, rnd: &mut dyn FnMut(u32) -> u32| {
            let v = (2 << 16) | rnd(40_000);
            let on = rnd(3) != 0;
            assert_eq!(t.tr_setbit(0, b"k", v, on).unwrap(), model.contains(&v));
            if on {
                model.insert(v);
            } else {
                model.remove(&v);
            }
            assert_eq!(t.tr_getbit(0, b"k", v).unwrap(), on);
            let w = (2 << 16) | rnd(40_000);
            assert_eq!(t.tr_getbit(0, b"k", w).unwrap(), model.contains(&w));
        };
        let mut t = st.begin(&[(0, b"k")]);
        for i in 0..200u32 {
            edit(&mut t, &mut model, &mut rnd);
            if i % 40 == 0 {
                check(&mut t, b"k", &model);
            }
        }
        check(&mut t, b"k", &model);
        t.commit().unwrap();
        let mut t = st.begin(&[]);
        check(&mut t, b"k", &model);
        drop(t);
        // Edits, TR.BITOP in place into the key, edits, TR.OPTIMIZE,
        // edits: one Txn.
        let mut t = st.begin(&[(0, b"k"), (0, b"src")]);
        for _ in 0..30 {
            edit(&mut t, &mut model, &mut rnd);
        }
        t.tr_bitop(0, b"k", BitOp::Or, &[b"k", b"src"]).unwrap();
        model.extend(base[..1500].iter().copied());
        check(&mut t, b"k", &model);
        for _ in 0..30 {
            edit(&mut t, &mut model, &mut rnd);
        }
        t.tr_optimize(0, b"k").unwrap();
        for _ in 0..30 {
            edit(&mut t, &mut model, &mut rnd);
        }
        check(&mut t, b"k", &model);
        t.commit().unwrap();
        let mut t = st.begin(&[]);
        check(&mut t, b"k", &model);
        drop(t);
        // An aborted Txn of many edits leaves the committed state.
        let mut t = st.begin(&[(0, b"k")]);
        let mut scratch = model.clone();
        for _ in 0..100 {
            edit(&mut t, &mut scratch, &mut rnd);
        }
        drop(t);
        let mut t = st.begin(&[]);
        check(&mut t, b"k", &model);
        for _ in 0..50 {
            let w = (2 << 16) | rnd(40_000);
            assert_eq!(t.tr_getbit(0, b"k", w).unwrap(), model.contains(&w));
        }
    }
}

/// One step of [`one_txn_of_edits_matches_a_model`].
#[derive(Debug, Clone)]
enum TxnStep {
    SetBit(u32, bool),
    Bits(Vec<u32>, bool),
    Range(u32, u16, bool),
    Optimize,
    GetBit(u32),
    /// Clears every bit of a block (which deletes its container).
    ClearBlock(u32),
    Commit,
}

/// Offsets in two blocks, low bits below 6,000: repeats are common
/// and the base's containers are singles (see `page`).
fn txn_offset() -> impl proptest::strategy::Strategy<Value = u32> + Clone {
    use proptest::prelude::*;
    (0u32..2, 0u32..6000).prop_map(|(b, lo)| (b << 16) | lo)
}

/// Offsets over 48 blocks, a few low bits each: small containers that
/// share pages (`page`), which the edits split, join and empty.
fn sparse_offset() -> impl proptest::strategy::Strategy<Value = u32> + Clone {
    use proptest::prelude::*;
    (0u32..48, 0u32..40).prop_map(|(b, lo)| (b << 16) | (lo * 7))
}

fn txn_step<S>(offset: S, blocks: u32) -> impl proptest::strategy::Strategy<Value = TxnStep>
where
    S: proptest::strategy::Strategy<Value = u32> + Clone + 'static,
{
    use proptest::prelude::*;
    prop_oneof![
        8 => (offset.clone(), any::<bool>()).prop_map(|(v, on)| TxnStep::SetBit(v, on)),
        1 => (proptest::collection::vec(offset.clone(), 1..20), any::<bool>())
            .prop_map(|(v, on)| TxnStep::Bits(v, on)),
        1 => (offset.clone(), any::<u16>(), any::<bool>())
            .prop_map(|(v, n, flip)| TxnStep::Range(v, n % 3000, flip)),
        1 => Just(TxnStep::Optimize),
        4 => offset.prop_map(TxnStep::GetBit),
        1 => (0u32..blocks).prop_map(TxnStep::ClearBlock),
        // 300 bits in one block at once: a container too big for a page,
        // possibly inside a page's interval (which it then splits).
        1 => (0u32..blocks, any::<u16>()).prop_map(|(b, x)| {
            let bits = (0..300u32).map(|i| (b << 16) | ((u32::from(x) + i * 13) & 0xFFFF)).collect();
            TxnStep::Bits(bits, true)
        }),
        1 => Just(TxnStep::Commit),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Random single-bit and range writes, TR.OPTIMIZE and reads, many
    /// to one block, inside transactions of many commands (a
    /// pipeline's group, MULTI/EXEC) against a model: every reply in
    /// the `Txn`, the whole key at each commit and at the end; with
    /// the container cache default, tiny and off.
    #[test]
    fn one_txn_of_edits_matches_a_model(
        steps in proptest::collection::vec(txn_step(txn_offset(), 2), 1..250),
        budget in proptest::sample::select(vec![
            container_cache::DEFAULT_BYTES, 16 * 1024, 0,
        ]),
    ) {
        let base: Vec<u32> = (0..2u32)
            .flat_map(|b| (0..1500u32).map(move |i| (b << 16) | (i * 4)))
            .collect();
        txn_model(steps, budget, &base)?;
    }

    /// As [`one_txn_of_edits_matches_a_model`] over a sparse key of
    /// small containers in pages.
    #[test]
    fn one_txn_of_sparse_edits_matches_a_model(
        steps in proptest::collection::vec(txn_step(sparse_offset(), 48), 1..250),
        budget in proptest::sample::select(vec![
            container_cache::DEFAULT_BYTES, 16 * 1024, 0,
        ]),
        every in 1u32..5,
    ) {
        let base: Vec<u32> = (0..48u32)
            .filter(|b| b % every == 0)
            .flat_map(|b| [(b << 16) | 3, (b << 16) | 70])
            .collect();
        txn_model(steps, budget, &base)?;
    }
}

/// Runs `steps` in transactions on key `k`, first set to `base`, with a
/// container cache of `budget` bytes, checking every reply and the whole
/// key against a model.
fn txn_model(
    steps: Vec<TxnStep>,
    budget: u64,
    base: &[u32],
) -> Result<(), proptest::test_runner::TestCaseError> {
    {
        let st = store();
        st.set_container_cache_bytes(budget);
        let mut model: BTreeSet<u32> = base.iter().copied().collect();
        let mut t = st.begin(&[]);
        t.tr_setbits(0, b"k", base).unwrap();
        t.commit().unwrap();
        let mut t = st.begin(&[(0, b"k")]);
        for step in steps {
            match step {
                TxnStep::SetBit(v, on) => {
                    let prev = t.tr_setbit(0, b"k", v, on).unwrap();
                    proptest::prop_assert_eq!(prev, model.contains(&v));
                    if on {
                        model.insert(v);
                    } else {
                        model.remove(&v);
                    }
                }
                TxnStep::Bits(vs, on) => {
                    if on {
                        model.extend(vs.iter().copied());
                        let card = t.tr_setbits(0, b"k", &vs).unwrap();
                        proptest::prop_assert_eq!(card, model.len() as u64);
                    } else {
                        let had = vs.iter().filter(|v| model.remove(v)).count();
                        let changed = t.tr_clearbits(0, b"k", &vs).unwrap();
                        proptest::prop_assert_eq!(changed, had as u64);
                    }
                }
                TxnStep::Range(v, n, flip) => {
                    let end = v.saturating_add(u32::from(n));
                    let op = if flip { RangeOp::Flip } else { RangeOp::Set };
                    let card = t.tr_range_write(0, b"k", v, end, op).unwrap();
                    for x in v..=end {
                        if flip && model.contains(&x) {
                            model.remove(&x);
                        } else {
                            model.insert(x);
                        }
                    }
                    proptest::prop_assert_eq!(card, model.len() as u64);
                }
                TxnStep::Optimize => {
                    if !model.is_empty() {
                        t.tr_optimize(0, b"k").unwrap();
                    }
                }
                TxnStep::GetBit(v) => {
                    proptest::prop_assert_eq!(t.tr_getbit(0, b"k", v).unwrap(), model.contains(&v));
                }
                TxnStep::ClearBlock(b) => {
                    let vs: Vec<u32> = model.range(b << 16..(b + 1) << 16).copied().collect();
                    for v in &vs {
                        model.remove(v);
                    }
                    let changed = t.tr_clearbits(0, b"k", &vs).unwrap();
                    proptest::prop_assert_eq!(changed, vs.len() as u64);
                }
                TxnStep::Commit => {
                    check(&mut t, b"k", &model);
                    t.commit().unwrap();
                    t = st.begin(&[(0, b"k")]);
                }
            }
        }
        t.commit().unwrap();
        // A key whose last bit was cleared stays, empty (spec open
        // point 7): `check` then wants a zero summary and no entries.
        let mut t = st.begin(&[]);
        check(&mut t, b"k", &model);
    }
    Ok(())
}

/// TR.BITOP over an existing destination: in place (same version)
/// when the old key is at most twice the result's containers, writing
/// only the blocks that changed; a fresh version otherwise. Checked
/// against a model, with and without the container cache, with the
/// destination also a source and with delta entries of an earlier format
/// folded in.
#[test]
fn bitop_rewrites_an_existing_destination_in_place() {
    for budget in [container_cache::DEFAULT_BYTES, 0] {
        let st = store();
        st.set_container_cache_bytes(budget);
        let set = |key: &[u8], vals: &[u32]| {
            let mut t = st.begin(&[(0, key)]);
            t.tr_setbits(0, key, vals).unwrap();
            t.commit().unwrap();
            vals.iter().copied().collect::<BTreeSet<u32>>()
        };
        let version = |key: &[u8]| {
            let mut t = st.begin(&[]);
            t.bm_version(0, key).unwrap().unwrap().0
        };
        // Blocks 0..4 of `a`, 2..6 of `b` (block 3 a single).
        let a: Vec<u32> = (0..4u32)
            .flat_map(|b| (0..3000).map(move |i| (b << 16) | (i * 3)))
            .collect();
        let b: Vec<u32> = (2..6u32)
            .flat_map(|b| (0..500).map(move |i| (b << 16) | (i * 11)))
            .collect();
        let (ma, mb) = (set(b"a", &a), set(b"b", &b));
        let mut t = st.begin(&[(0, b"d")]);
        t.tr_bitop(0, b"d", BitOp::Or, &[b"a", b"b"]).unwrap();
        t.commit().unwrap();
        let v0 = version(b"d");
        // The same result again: nothing is written. The old result,
        // stored under a fresh version, is compared without the cache.
        let mut t = st.begin(&[(0, b"d")]);
        let union: BTreeSet<u32> = ma.union(&mb).copied().collect();
        assert_eq!(
            t.tr_bitop(0, b"d", BitOp::Or, &[b"a", b"b"]).unwrap(),
            union.len() as u64
        );
        assert!(
            t.data_overlay_is_empty(),
            "an unchanged result rewrote containers"
        );
        t.commit().unwrap();
        assert_eq!(version(b"d"), v0);
        // Once rewritten in place, its directory is cached; the next
        // comparison fills the containers it reads, and from then on
        // every read is a cache hit.
        for round in 0..2 {
            let misses = st.container_cache_stats().misses;
            let mut t = st.begin(&[(0, b"d")]);
            t.tr_bitop(0, b"d", BitOp::Or, &[b"a", b"b"]).unwrap();
            assert!(t.data_overlay_is_empty());
            t.commit().unwrap();
            let missed = st.container_cache_stats().misses - misses;
            if budget > 0 && round == 1 {
                assert_eq!(missed, 0);
            }
        }
        // Deltas of an earlier format folded into the destination, then a
        // result that drops blocks 0..2, keeps 2..4 (block 3 as folded),
        // adds none.
        let ops: Vec<(u16, bool)> = (0..5u16).map(|i| (i * 3 + 1, true)).collect();
        plant_deltas(&st, b"d", 3, &ops);
        let mut t = st.begin(&[(0, b"d")]);
        t.tr_bitop(0, b"d", BitOp::And, &[b"a", b"d"]).unwrap();
        t.commit().unwrap();
        let and: BTreeSet<u32> = ma.iter().filter(|v| union.contains(v)).copied().collect();
        let mut t = st.begin(&[]);
        check(&mut t, b"d", &and);
        assert_eq!(t.tr_summary(0, b"d").unwrap().unwrap().deltas, 0);
        drop(t);
        assert_eq!(version(b"d"), v0);
        // A result of one block where `d` holds four: a fresh version.
        let one = set(b"c", &[(9 << 16) | 5]);
        let mut t = st.begin(&[(0, b"d")]);
        t.tr_bitop(0, b"d", BitOp::Or, &[b"c"]).unwrap();
        t.commit().unwrap();
        assert_ne!(version(b"d"), v0);
        let mut t = st.begin(&[]);
        check(&mut t, b"d", &one);
        drop(t);
        // Back to the union, with a TTL on `d` and inside one Txn
        // that reads it back before and after.
        let v1 = version(b"d");
        let mut t = st.begin(&[(0, b"d")]);
        let at = i64::try_from(crate::now_ms()).unwrap() + 100_000;
        t.expire_at(0, b"d", at, crate::types::keyspace::ExpireCond::default())
            .unwrap();
        t.tr_bitop(0, b"d", BitOp::Or, &[b"b", b"a"]).unwrap();
        check(&mut t, b"d", &union);
        t.commit().unwrap();
        assert_eq!(version(b"d"), v1);
        let mut t = st.begin(&[]);
        check(&mut t, b"d", &union);
        assert_eq!(
            t.meta_of(0, b"d", Kind::Bitmap)
                .unwrap()
                .unwrap()
                .expire_at_ms,
            0
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
    /// TR.BITOP NOT (the complement over [0, max]) and TR.BITOPCARD NOT
    /// (counted from the summary) against a model, over keys whose
    /// containers are arrays, runs and bitsets, and an empty and a missing
    /// key.
    #[test]
    fn not_and_its_count_match_a_model(
        vals in proptest::collection::btree_set(0u32..400_000, 0..300),
        run in proptest::option::of((0u32..300_000, 1u32..70_000)),
        dense in proptest::bool::ANY,
    ) {
        let st = store();
        let mut t = st.begin(&[(0, b"s")]);
        let mut model = vals;
        if let Some((lo, n)) = run {
            model.extend(lo..lo + n);
        }
        if dense {
            model.extend((200_000u32..265_536).step_by(3));
        }
        let offs: Vec<u32> = model.iter().copied().collect();
        if offs.is_empty() {
            // An empty bitmap: set and cleared again.
            t.tr_setbits(0, b"s", &[5]).unwrap();
            t.tr_clearbits(0, b"s", &[5]).unwrap();
        } else {
            t.tr_setbits(0, b"s", &offs).unwrap();
        }
        let want: BTreeSet<u32> = match model.last() {
            Some(&max) => (0..=max).filter(|v| !model.contains(v)).collect(),
            None => BTreeSet::new(),
        };
        let card = t.tr_bitop(0, b"n", BitOp::Not, &[b"s"]).unwrap();
        proptest::prop_assert_eq!(card, want.len() as u64);
        proptest::prop_assert_eq!(t.tr_bitopcard(0, BitOp::Not, &[b"s"]).unwrap(), card);
        check(&mut t, b"n", &want);
        proptest::prop_assert_eq!(t.tr_bitopcard(0, BitOp::Not, &[b"missing"]).unwrap(), 0);
        t.commit().unwrap();
    }
}

#[test]
fn ranges_bitpos_and_setops_match_a_model() {
    let st = store();
    let mut t = st.begin(&[]);
    t.tr_range_write(0, b"a", 65_530, 131_080, RangeOp::Set)
        .unwrap();
    t.tr_range_write(0, b"a", 70_000, 70_010, RangeOp::Flip)
        .unwrap();
    let mut a: BTreeSet<u32> = (65_530..=131_080).collect();
    for v in 70_000..=70_010 {
        a.remove(&v);
    }
    check(&mut t, b"a", &a);
    t.tr_setbits(0, b"b", &[1, 65_535, 65_536, 70_005, 1 << 31])
        .unwrap();
    let b: BTreeSet<u32> = [1, 65_535, 65_536, 70_005, 1 << 31].into();
    let and: Vec<u32> = a.intersection(&b).copied().collect();
    assert_eq!(
        t.tr_bitopcard(0, BitOp::And, &[b"a", b"b"]).unwrap(),
        and.len() as u64
    );
    assert_eq!(
        t.tr_bitopcard(0, BitOp::Or, &[b"a", b"b"]).unwrap(),
        a.union(&b).count() as u64
    );
    assert_eq!(
        t.tr_bitopcard(0, BitOp::Xor, &[b"a", b"b", b"b"]).unwrap(),
        a.len() as u64
    );
    assert_eq!(
        t.tr_bitop(0, b"d", BitOp::Diff, &[b"a", b"b"]).unwrap(),
        a.difference(&b).count() as u64
    );
    assert_eq!(
        t.tr_bitop(0, b"n", BitOp::Not, &[b"b"]).unwrap(),
        (1u64 << 31) + 1 - 5
    );
    assert!(t.tr_contains(0, b"d", b"a").unwrap());
    assert!(!t.tr_contains(0, b"b", b"a").unwrap());
    // bitpos, both directions and values
    assert_eq!(t.tr_bitpos(0, b"a", true, 1).unwrap(), 65_530);
    assert_eq!(t.tr_bitpos(0, b"a", true, -1).unwrap(), 131_080);
    assert_eq!(t.tr_bitpos(0, b"a", false, 65_531).unwrap(), 70_000);
    assert_eq!(t.tr_bitpos(0, b"a", false, -1).unwrap(), 70_010);
    assert_eq!(t.tr_bitpos(0, b"a", false, -12).unwrap(), 65_529);
    assert_eq!(t.tr_bitpos(0, b"a", false, 65_530 + 12).unwrap(), 131_081);
    let (c, v) = t.tr_scan(0, b"b", 2, 2).unwrap().unwrap();
    assert_eq!((c, v), (70_005, vec![65_535, 65_536]));
}

fn brute_bitpos(s: &BTreeSet<u32>, value: bool, count: i64) -> i64 {
    let n = count.unsigned_abs();
    let max = s.last().copied();
    let mut k = 0;
    if count > 0 {
        let mut v: u64 = 0;
        while v <= u64::from(u32::MAX) {
            if s.contains(&(v as u32)) == value {
                k += 1;
                if k == n {
                    return v as i64;
                }
            }
            if value && Some(v as u32) >= max {
                return -1;
            }
            v += 1;
        }
        -1
    } else {
        let Some(max) = max else { return -1 };
        let mut v = i64::from(max);
        while v >= 0 {
            if s.contains(&(v as u32)) == value {
                k += 1;
                if k == n {
                    return v;
                }
            }
            v -= 1;
        }
        -1
    }
}

#[test]
fn bitpos_matches_brute_force_across_blocks_and_gaps() {
    let st = store();
    let mut t = st.begin(&[]);
    let mut model = BTreeSet::new();
    // Blocks 0, 2 and 5 populated (1, 3, 4 absent), one dense run.
    for v in [0u32, 1, 2, 7, 65_535] {
        model.insert(v);
    }
    for v in 131_072..131_172 {
        model.insert(v);
    }
    model.insert(5 * 65_536 + 9);
    let vals: Vec<u32> = model.iter().copied().collect();
    t.tr_setbits(0, b"p", &vals).unwrap();
    for value in [false, true] {
        for count in (-300..=300)
            .step_by(23)
            .chain([1, -1, 65_530, 65_540, 200_000, -200_000, -65_540])
        {
            if count == 0 {
                continue;
            }
            assert_eq!(
                t.tr_bitpos(0, b"p", value, count).unwrap(),
                brute_bitpos(&model, value, count),
                "value {value} count {count}"
            );
        }
    }
    // An empty (existing) bitmap: every bit is clear upward, none downward.
    t.tr_setbits(0, b"e", &[3]).unwrap();
    t.tr_clearbits(0, b"e", &[3]).unwrap();
    assert_eq!(t.tr_summary(0, b"e").unwrap().unwrap().card, 0);
    assert_eq!(t.tr_bitpos(0, b"e", false, 5).unwrap(), 4);
    assert_eq!(t.tr_bitpos(0, b"e", false, -1).unwrap(), -1);
    assert_eq!(t.tr_bitpos(0, b"e", true, 1).unwrap(), -1);
    assert_eq!(t.tr_bitpos(0, b"missing", false, 1).unwrap(), -1);
}

#[test]
fn corrupt_container_bytes_are_an_error_not_a_panic() {
    let st = store();
    let mut t = st.begin(&[]);
    t.tr_setbits(0, b"c", &[1, 2, 70_000]).unwrap();
    t.commit().unwrap();
    let mut t = st.begin(&[]);
    let version = t.meta(0, b"c").unwrap().unwrap().version;
    t.data_put(
        0,
        b"c",
        version,
        &0u16.to_be_bytes(),
        vec![0x10, 9, 0, 0, 1],
    );
    assert!(matches!(
        t.tr_getbit(0, b"c", 1),
        Err(StoreError::Corrupt(_))
    ));
    assert!(matches!(
        t.tr_range(0, b"c", 0, 10, 100),
        Err(StoreError::Corrupt(_))
    ));
    assert!(matches!(
        t.tr_bitopcard(0, BitOp::Or, &[b"c", b"c"]),
        Err(StoreError::Corrupt(_))
    ));
    t.data_put(0, b"c", version, b"xyz", vec![]);
    assert!(t.tr_load(0, b"c").is_err());
}

/// Random edits, DEL, RENAME, BITOP, multi-key and aborted
/// transactions, each checked against a model after commit, with the
/// container cache off, tiny (constant eviction) and default-sized.
fn container_cache_coherence(budget: u64) {
    use std::collections::HashMap;
    let st = store();
    st.set_container_cache_bytes(budget);
    let names: [&[u8]; 3] = [b"x", b"y", b"z"];
    let mut model: HashMap<&[u8], BTreeSet<u32>> = HashMap::new();
    struct R(u64);
    impl R {
        fn n(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
        /// Offsets in 4 blocks; block 1 gets dense enough for bitsets.
        fn off(&mut self) -> u32 {
            let b = self.n(4) as u32;
            let lo = if b == 1 { self.n(9000) } else { self.n(300) } as u32;
            (b << 16) | lo
        }
    }
    let mut r = R(0x1234_5678 ^ budget);
    for step in 0..2000 {
        let k = names[r.n(3) as usize];
        let k2 = names[r.n(3) as usize];
        let mut t = st.begin(&[(0, k), (0, k2)]);
        match r.n(12) {
            0..=4 => {
                let (v, on) = (r.off(), r.n(3) != 0);
                t.tr_setbit(0, k, v, on).unwrap();
                let m = model.entry(k).or_default();
                if on {
                    m.insert(v);
                } else {
                    m.remove(&v);
                }
            }
            5 => {
                let vs: Vec<u32> = (0..r.n(200)).map(|_| r.off()).collect();
                if r.n(2) == 0 {
                    t.tr_setbits(0, k, &vs).unwrap();
                    model.entry(k).or_default().extend(vs);
                } else {
                    t.tr_clearbits(0, k, &vs).unwrap();
                    if let Some(m) = model.get_mut(k) {
                        for v in &vs {
                            m.remove(v);
                        }
                    }
                }
            }
            6 => {
                t.del(0, k).unwrap();
                model.remove(k);
            }
            7 if k != k2 && model.contains_key(k) => {
                t.rename(0, k, k2, false).unwrap();
                let m = model.remove(k).unwrap();
                model.insert(k2, m);
            }
            8 => {
                let a = model.get(k).cloned().unwrap_or_default();
                let b = model.get(k2).cloned().unwrap_or_default();
                let d = names[r.n(3) as usize];
                drop(std::mem::replace(&mut t, st.begin(&[])));
                let mut t2 = st.begin(&[(0, k), (0, k2), (0, d)]);
                if r.n(2) == 0 {
                    t2.tr_bitop(0, d, BitOp::Or, &[k, k2]).unwrap();
                    model.insert(d, a.union(&b).copied().collect());
                } else {
                    t2.tr_bitop(0, d, BitOp::And, &[k, k2]).unwrap();
                    model.insert(d, a.intersection(&b).copied().collect());
                }
                t2.commit().unwrap();
            }
            9 => {
                // Aborted: writes then reads of its own writes, dropped.
                let v = r.off();
                t.tr_setbit(0, k, v, true).unwrap();
                assert!(t.tr_getbit(0, k, v).unwrap());
                t.tr_range_write(0, k, 65_536, 65_536 + 70, RangeOp::Flip)
                    .unwrap();
                let _ = t.tr_bitopcard(0, BitOp::Or, &[k, k2]).unwrap();
                drop(t);
                t = st.begin(&[]);
            }
            _ => {
                // Several edits of one key in one Txn (MULTI/EXEC), the
                // last one reading back through the overlay.
                let m = model.entry(k).or_default();
                for _ in 0..3 {
                    let v = r.off();
                    t.tr_setbit(0, k, v, true).unwrap();
                    m.insert(v);
                }
                let v = *m.iter().next().unwrap();
                t.tr_setbit(0, k, v, false).unwrap();
                m.remove(&v);
                let got = t.tr_range(0, k, 0, u32::MAX, 1 << 20).unwrap().unwrap();
                assert_eq!(got, m.iter().copied().collect::<Vec<_>>());
            }
        }
        t.commit().unwrap();
        let mut t = st.begin(&[]);
        for name in names {
            match model.get(name) {
                Some(m) => check(&mut t, name, m),
                None => assert!(t.tr_summary(0, name).unwrap().is_none()),
            }
        }
        let v = r.off();
        let want = model.get(k).is_some_and(|m| m.contains(&v));
        assert_eq!(t.tr_getbit(0, k, v).unwrap(), want, "step {step}");
    }
    let cs = st.container_cache_stats();
    assert!(cs.bytes <= budget, "{cs:?}");
    if budget > 0 {
        assert!(cs.hits > 0, "{cs:?}");
    } else {
        assert_eq!(cs.entries, 0);
    }
}

/// Writers on shared keys (each owning its offsets) and readers that
/// warm and stream the same keys, under a tiny and a default budget:
/// every reader sees each writer's bits in order (a bit once seen set
/// is set until its writer clears it), and the final state is exact.
#[test]
fn container_cache_is_coherent_under_concurrency() {
    for budget in [64 * 1024, container_cache::DEFAULT_BYTES] {
        let st = std::sync::Arc::new(store());
        st.set_container_cache_bytes(budget);
        let keys: [&[u8]; 2] = [b"p", b"q"];
        let mut hs = Vec::new();
        for w in 0..2u32 {
            let st = std::sync::Arc::clone(&st);
            hs.push(std::thread::spawn(move || {
                // Writer w owns offsets ≡ w (mod 2), over 3 blocks.
                for i in 0..1500u32 {
                    let off = (i * 2 + w) * 97 % (3 << 16) / 2 * 2 + w;
                    let k = keys[(i % 2) as usize];
                    let mut t = st.begin(&[(0, k)]);
                    t.tr_setbit(0, k, off, true).unwrap();
                    if i % 3 == 0 {
                        t.tr_setbit(0, k, off, false).unwrap();
                    }
                    t.commit().unwrap();
                }
            }));
        }
        for _ in 0..2 {
            let st = std::sync::Arc::clone(&st);
            hs.push(std::thread::spawn(move || {
                for i in 0..400 {
                    let k = keys[i % 2];
                    let mut t = st.begin(&[(0, k)]);
                    if let Some(s) = t.tr_summary(0, k).unwrap() {
                        let all = t.tr_range(0, k, 0, u32::MAX, 1 << 20).unwrap().unwrap();
                        assert_eq!(all.len() as u64, s.card, "summary vs containers");
                        let _ = t.tr_bitopcard(0, BitOp::And, &[k, k]).unwrap();
                    }
                }
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        let mut model: [BTreeSet<u32>; 2] = Default::default();
        for w in 0..2u32 {
            for i in 0..1500u32 {
                let off = (i * 2 + w) * 97 % (3 << 16) / 2 * 2 + w;
                let m = &mut model[(i % 2) as usize];
                if i % 3 == 0 {
                    m.remove(&off);
                } else {
                    m.insert(off);
                }
            }
        }
        let mut t = st.begin(&[]);
        for (k, m) in keys.iter().zip(&model) {
            check(&mut t, k, m);
        }
    }
}

#[test]
fn container_cache_is_coherent_default_budget() {
    container_cache_coherence(container_cache::DEFAULT_BYTES);
}

#[test]
fn container_cache_is_coherent_tiny_budget() {
    container_cache_coherence(64 * 1024);
}

#[test]
fn container_cache_is_coherent_when_off() {
    container_cache_coherence(0);
}

#[test]
fn a_bitmap_summary_sums_every_container() {
    let b = Bitmap::from_sorted(&[0, 5, 65_536, 70_000, u32::MAX]);
    let s = summary_of_bitmap(&b);
    assert_eq!((s.card, s.min, s.max, s.containers), (5, 0, u32::MAX, 3));
    assert_eq!(s.sum, 5 + 65_536 + 70_000 + u64::from(u32::MAX));
}

/// A new key's writes read nothing stored: its version is this `Txn`'s
/// own (no data of it exists) and its summary is empty, so neither the
/// block read nor the page placement goes to the `Kv`. Blocks outside an
/// existing key's extremes are not read either. Every answer stays exact.
#[test]
fn new_keys_and_blocks_outside_the_extremes_read_nothing_stored() {
    let st = store();
    let misses = || st.tier().stats().misses;
    let before = misses();
    let mut t = st.begin(&[]);
    assert!(!t.tr_setbit(0, b"new", 5 << 16, true).unwrap());
    assert_eq!(t.tr_setbits(0, b"new2", &[1, 70_000, 1 << 30]).unwrap(), 3);
    // A second edit of the same new key in the same `Txn`: its own
    // writes answer.
    assert!(t.tr_setbit(0, b"new", 5 << 16, true).unwrap());
    t.commit().unwrap();
    assert_eq!(misses(), before, "a new key read the Kv");

    let mut t = st.begin(&[]);
    // Blocks 0 and 9 lie outside [5 << 16, 5 << 16]: absent, no read.
    assert!(!t.tr_getbit(0, b"new", 3).unwrap());
    assert!(!t.tr_getbit(0, b"new", 9 << 16).unwrap());
    assert!(t.tr_getbit(0, b"new", 5 << 16).unwrap());
    check(&mut t, b"new", &BTreeSet::from([5 << 16]));
    check(&mut t, b"new2", &BTreeSet::from([1, 70_000, 1 << 30]));
    // Clearing the only bit empties the key's summary; the block this
    // `Txn` emptied answers from its own writes.
    assert!(t.tr_setbit(0, b"new", 5 << 16, false).unwrap());
    assert!(!t.tr_getbit(0, b"new", 5 << 16).unwrap());
    assert!(!t.tr_setbit(0, b"new", 5 << 16, true).unwrap());
    assert!(t.tr_getbit(0, b"new", 5 << 16).unwrap());
    t.commit().unwrap();
}

#[test]
fn a_small_source_fills_the_container_cache_from_its_second_use() {
    let st = store();
    // Two small keys of several containers each (so neither is a point
    // read), sharing some bits.
    let a: Vec<u32> = (0..6u32).map(|b| (b << 16) | 7).collect();
    let b: Vec<u32> = (0..6u32).map(|b| (b << 16) | (7 + b % 2)).collect();
    let mut t = st.begin(&[(0, b"a"), (0, b"b")]);
    t.tr_setbits(0, b"a", &a).unwrap();
    t.tr_setbits(0, b"b", &b).unwrap();
    t.commit().unwrap();
    let entries = || st.container_cache_stats().entries;
    let card = || {
        let mut t = st.begin(&[]);
        t.tr_bitopcard(0, BitOp::And, &[b"a", b"b"]).unwrap()
    };
    let before = entries();
    assert_eq!(card(), 3);
    assert_eq!(entries(), before, "a first use filled the cache");
    assert_eq!(card(), 3);
    assert!(entries() > before, "a second use did not fill the cache");
    let filled = entries();
    assert_eq!(card(), 3);
    assert_eq!(entries(), filled);
}

#[test]
fn getbits_matches_a_model_in_small_and_big_keys() {
    let st = store();
    let mut rnd = draws(11);
    // "small": a few sparse containers (read whole); "big": ten bitsets of
    // ~8 KiB each, over 64 KiB (read block by block).
    let small: BTreeSet<u32> = (0..40).map(|_| rnd(8) << 16 | rnd(65_536)).collect();
    let big: BTreeSet<u32> = (0..60_000).map(|_| rnd(10) << 16 | rnd(65_536)).collect();
    for (key, model) in [(&b"small"[..], &small), (&b"big"[..], &big)] {
        let mut model = model.clone();
        let offs: Vec<u32> = model.iter().copied().collect();
        let mut t = st.begin(&[(0, key)]);
        t.tr_setbits(0, key, &offs).unwrap();
        t.commit().unwrap();
        // A few single-bit edits after the bulk write.
        for _ in 0..20 {
            let off = rnd(12) << 16 | rnd(65_536);
            let mut t = st.begin(&[(0, key)]);
            t.tr_setbit(0, key, off, true).unwrap();
            t.commit().unwrap();
            model.insert(off);
        }
        for many in [3usize, 100, 2_000] {
            let mut probe: Vec<u32> = (0..many).map(|_| rnd(12) << 16 | rnd(65_536)).collect();
            probe.extend(model.iter().take(many / 2));
            let mut t = st.begin(&[]);
            let got = t.tr_getbits(0, key, &probe).unwrap().unwrap();
            let want: Vec<bool> = probe.iter().map(|o| model.contains(o)).collect();
            assert_eq!(
                got,
                want,
                "{} with {many} offsets",
                String::from_utf8_lossy(key)
            );
        }
    }
    let mut t = st.begin(&[]);
    assert_eq!(t.tr_getbits(0, b"missing", &[1, 2]).unwrap(), None);
}

/// A cold bitmap is read in by one point read when one entry holds it all,
/// and by a scan otherwise; either way it is resident and reads as before.
#[test]
fn warming_a_cold_bitmap_makes_it_resident() {
    let s = store();
    let cases: [(&[u8], Vec<u32>); 4] = [
        // One array container: a single.
        (b"one", vec![5, 7, 9]),
        // Three blocks in one page.
        (b"page", vec![1, 70_000, 140_000, 140_001]),
        // A bitset (a single of its own) and a page: two entries.
        (
            b"two",
            (0..5000).map(|i| i * 3).chain([200_000, 300_000]).collect(),
        ),
        // The largest bit alone in its block, in a page of its own.
        (
            b"tail",
            (0..2).map(|i| i * 65_536).chain([9_000_000]).collect(),
        ),
    ];
    for (key, bits) in &cases {
        let mut t = s.begin(&[(0, key)]);
        t.tr_setbits(0, key, bits).unwrap();
        t.commit().unwrap();
    }
    for (key, bits) in &cases {
        s.tier().clear();
        assert!(!s.is_resident(0, key));
        s.warm(&[(0, key.to_vec())]).unwrap();
        assert!(s.is_resident(0, key), "{key:?}");
        let model: BTreeSet<u32> = bits.iter().copied().collect();
        let mut t = s.begin(&[(0, key)]);
        check(&mut t, key, &model);
    }
}

/// `(inline entry, data entries)` of bitmap `key` as the `Kv` holds them.
fn stored_layout(st: &Store, key: &[u8]) -> (bool, usize) {
    use crate::kv::Space;
    use crate::meta::KeyMeta;
    let mk = keys::meta_key(0, key);
    let meta = st.inner.kv.get(Space::Meta, &mk).unwrap().unwrap();
    let version = KeyMeta::decode_version(&meta).unwrap();
    let prefix = keys::data_prefix(0, key, version);
    let end = crate::kv::prefix_end(&prefix);
    let data = st
        .inner
        .kv
        .range(
            Space::Data,
            std::ops::Bound::Included(&prefix),
            end.as_deref()
                .map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
            false,
        )
        .count();
    (KeyMeta::inline_entry(&meta).unwrap().is_some(), data)
}

/// A bitmap whose data is one small entry is stored in its meta entry
/// alone; once it needs more (or a bigger one) its entries move to `data`
/// in the commit that grows it, and a new version starts inline again.
/// Reads, RENAME and a reopen see the same bits throughout.
#[test]
fn a_small_bitmap_lives_in_its_meta_until_it_outgrows_one_entry() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        Store::open(StoreConfig {
            dir: Some(dir.path().to_path_buf()),
            ..StoreConfig::default()
        })
        .unwrap()
    };
    let st = open();
    let mut model = BTreeSet::new();
    let edit = |st: &Store, offs: &[u32], model: &mut BTreeSet<u32>| {
        let mut t = st.begin(&[(0, b"k")]);
        t.tr_setbits(0, b"k", offs).unwrap();
        t.commit().unwrap();
        model.extend(offs);
        let mut t = st.begin(&[(0, b"k")]);
        check(&mut t, b"k", model);
    };
    edit(&st, &[5], &mut model);
    assert_eq!(stored_layout(&st, b"k"), (true, 0), "one bit");
    edit(&st, &[70_000, 140_000, 9], &mut model);
    assert_eq!(stored_layout(&st, b"k"), (true, 0), "a page of three");
    // A 1,000-value array is a single of 2 KB beside the page: two entries.
    let many: Vec<u32> = (0..1000).map(|i| (5 << 16) | (i * 7)).collect();
    edit(&st, &many, &mut model);
    assert_eq!(stored_layout(&st, b"k"), (false, 2), "moved to data");
    edit(&st, &[11], &mut model);
    assert_eq!(stored_layout(&st, b"k"), (false, 2), "stays in data");
    drop(st);
    let st = open();
    let mut t = st.begin(&[(0, b"k")]);
    check(&mut t, b"k", &model);
    t.commit().unwrap();
    // A new version of the key starts inline again; RENAME keeps it so.
    let mut t = st.begin(&[(0, b"k")]);
    assert!(t.del(0, b"k").unwrap());
    t.commit().unwrap();
    model.clear();
    edit(&st, &[1, 2, 3, 200_000], &mut model);
    assert_eq!(stored_layout(&st, b"k"), (true, 0), "a new version");
    let mut t = st.begin(&[(0, b"k"), (0, b"r")]);
    assert!(t.rename(0, b"k", b"r", false).unwrap());
    t.commit().unwrap();
    assert_eq!(stored_layout(&st, b"r"), (true, 0), "renamed");
    drop(st);
    let st = open();
    let mut t = st.begin(&[(0, b"r")]);
    check(&mut t, b"r", &model);
    // A clear that leaves one container keeps it inline; emptying the
    // key's last container leaves no entry at all.
    t.tr_clearbits(0, b"r", &[200_000]).unwrap();
    t.commit().unwrap();
    assert_eq!(stored_layout(&st, b"r"), (true, 0), "cleared a block");
    let mut t = st.begin(&[(0, b"r")]);
    t.tr_clearbits(0, b"r", &[1, 2, 3]).unwrap();
    t.commit().unwrap();
    let mut t = st.begin(&[(0, b"r")]);
    check(&mut t, b"r", &BTreeSet::new());
}
