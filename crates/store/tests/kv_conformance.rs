//! One conformance suite for the `Kv` trait and the `Store` on top of it,
//! run against both backends: `MemKv` (in memory) and `LsmKv` (fjall in a
//! temporary directory), and `LsmKv` behind the write queue (`WriteBehind`).

use roaringd_store::keys;
use roaringd_store::kv::behind::WriteBehind;
use roaringd_store::kv::lsm::LsmKv;
use roaringd_store::kv::mem::MemKv;
use roaringd_store::kv::{Durability, Kv, Space, WriteBatch};
use roaringd_store::{Store, StoreConfig, SyncMode};
use std::ops::Bound;

fn backends() -> Vec<(&'static str, Box<dyn Kv>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let lsm = LsmKv::open(dir.path(), 8 << 20, 8 << 20, None).unwrap();
    let queued_dir = tempfile::tempdir().unwrap();
    let queued = LsmKv::open(queued_dir.path(), 8 << 20, 8 << 20, None).unwrap();
    vec![
        ("mem", Box::new(MemKv::new(None)), None),
        ("lsm", Box::new(lsm), Some(dir)),
        (
            "lsm behind a queue",
            Box::new(WriteBehind::new(Box::new(queued)).unwrap()),
            Some(queued_dir),
        ),
    ]
}

fn stores() -> Vec<(&'static str, Store, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let lsm = Store::open(StoreConfig {
        dir: Some(dir.path().to_path_buf()),
        databases: 16,
        sync: SyncMode::No,
        cache_bytes: 8 << 20,
        tier_bytes: 32 << 10,
        memtable_bytes: 8 << 20,
    })
    .unwrap();
    let mem = Store::open(StoreConfig::default()).unwrap();
    vec![("mem", mem, None), ("lsm", lsm, Some(dir))]
}

fn keys_of(it: roaringd_store::kv::KvIter<'_>) -> Vec<Vec<u8>> {
    it.map(|r| r.unwrap().0).collect()
}

#[test]
fn kv_get_put_delete_roundtrip() {
    for (name, kv, _d) in backends() {
        assert_eq!(kv.get(Space::Meta, b"a").unwrap(), None, "{name}");
        let mut b = WriteBatch::new();
        b.put(Space::Meta, b"a".to_vec(), b"1".to_vec());
        b.put(Space::Data, b"a".to_vec(), b"2".to_vec());
        kv.write(b, Durability::Buffer).unwrap();
        assert_eq!(
            kv.get(Space::Meta, b"a").unwrap(),
            Some(b"1".to_vec()),
            "{name}"
        );
        assert_eq!(
            kv.get(Space::Data, b"a").unwrap(),
            Some(b"2".to_vec()),
            "{name}"
        );
        assert_eq!(kv.get(Space::Expiry, b"a").unwrap(), None, "{name}");
        let mut b = WriteBatch::new();
        b.delete(Space::Meta, b"a".to_vec());
        kv.write(b, Durability::Sync).unwrap();
        assert_eq!(kv.get(Space::Meta, b"a").unwrap(), None, "{name}");
    }
}

#[test]
fn kv_batch_later_write_wins() {
    for (name, kv, _d) in backends() {
        let mut b = WriteBatch::new();
        b.put(Space::Meta, b"k".to_vec(), b"1".to_vec());
        b.delete(Space::Meta, b"k".to_vec());
        b.put(Space::Meta, b"j".to_vec(), b"1".to_vec());
        b.put(Space::Meta, b"j".to_vec(), b"2".to_vec());
        kv.write(b, Durability::Buffer).unwrap();
        assert_eq!(kv.get(Space::Meta, b"k").unwrap(), None, "{name}");
        assert_eq!(
            kv.get(Space::Meta, b"j").unwrap(),
            Some(b"2".to_vec()),
            "{name}"
        );
    }
}

#[test]
fn kv_range_and_prefix_scans_are_ordered_both_ways() {
    for (name, kv, _d) in backends() {
        let mut b = WriteBatch::new();
        for k in ["a", "ab", "abc", "b", "ba", "c"] {
            b.put(Space::Data, k.as_bytes().to_vec(), Vec::new());
        }
        // Enough keys to cross the in-memory chunk size.
        for i in 0..300u32 {
            b.put(Space::Meta, i.to_be_bytes().to_vec(), vec![1]);
        }
        kv.write(b, Durability::Buffer).unwrap();
        let fwd = keys_of(kv.prefix(Space::Data, b"a", false));
        assert_eq!(
            fwd,
            vec![b"a".to_vec(), b"ab".to_vec(), b"abc".to_vec()],
            "{name}"
        );
        let rev = keys_of(kv.prefix(Space::Data, b"a", true));
        assert_eq!(
            rev,
            vec![b"abc".to_vec(), b"ab".to_vec(), b"a".to_vec()],
            "{name}"
        );
        let r = keys_of(kv.range(
            Space::Data,
            Bound::Excluded(b"ab"),
            Bound::Included(b"ba"),
            false,
        ));
        assert_eq!(
            r,
            vec![b"abc".to_vec(), b"b".to_vec(), b"ba".to_vec()],
            "{name}"
        );
        let empty = keys_of(kv.range(
            Space::Data,
            Bound::Included(b"z"),
            Bound::Excluded(b"a"),
            false,
        ));
        assert!(empty.is_empty(), "{name}");
        let all = keys_of(kv.range(Space::Meta, Bound::Unbounded, Bound::Unbounded, false));
        assert_eq!(all.len(), 300, "{name}");
        assert!(all.windows(2).all(|w| w[0] < w[1]), "{name}");
        let all_rev = keys_of(kv.range(Space::Meta, Bound::Unbounded, Bound::Unbounded, true));
        assert_eq!(all_rev.len(), 300, "{name}");
        assert!(all_rev.windows(2).all(|w| w[0] > w[1]), "{name}");
    }
}

#[test]
fn kv_snapshot_ignores_later_writes() {
    for (name, kv, _d) in backends() {
        let mut b = WriteBatch::new();
        b.put(Space::Meta, b"x".to_vec(), b"old".to_vec());
        kv.write(b, Durability::Buffer).unwrap();
        let snap = kv.snapshot();
        let mut b = WriteBatch::new();
        b.put(Space::Meta, b"x".to_vec(), b"new".to_vec());
        b.put(Space::Meta, b"y".to_vec(), b"new".to_vec());
        kv.write(b, Durability::Buffer).unwrap();
        assert_eq!(
            snap.get(Space::Meta, b"x").unwrap(),
            Some(b"old".to_vec()),
            "{name}"
        );
        assert_eq!(snap.get(Space::Meta, b"y").unwrap(), None, "{name}");
        assert_eq!(
            keys_of(snap.prefix(Space::Meta, b"", false)).len(),
            1,
            "{name}"
        );
        assert_eq!(
            kv.get(Space::Meta, b"x").unwrap(),
            Some(b"new".to_vec()),
            "{name}"
        );
        kv.persist().unwrap();
        kv.compact().unwrap();
        assert_eq!(
            kv.get(Space::Meta, b"y").unwrap(),
            Some(b"new".to_vec()),
            "{name}"
        );
    }
}

#[test]
fn store_txn_reads_its_own_writes_and_drop_discards() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"k")]);
        t.put_string(0, b"k", b"v".to_vec(), 0, false).unwrap();
        assert_eq!(t.get(0, b"k").unwrap(), Some(b"v".to_vec()), "{name}");
        drop(t);
        let mut t = store.begin(&[(0, b"k")]);
        assert_eq!(t.get(0, b"k").unwrap(), None, "{name}");
        t.put_string(0, b"k", b"v".to_vec(), 0, false).unwrap();
        let touched = t.commit().unwrap();
        assert_eq!(touched, vec![(0, b"k".to_vec())], "{name}");
        let mut t = store.begin(&[(0, b"k")]);
        assert_eq!(t.get(0, b"k").unwrap(), Some(b"v".to_vec()), "{name}");
        assert_eq!(t.dbsize(0).unwrap(), 1, "{name}");
        assert_eq!(store.stats().dbs[0].keys, 1, "{name}");
    }
}

#[test]
fn store_deleted_set_elements_invisible_then_collected_by_compaction() {
    for (name, store, _d) in stores() {
        let members: Vec<Vec<u8>> = (0..100).map(|i| format!("m{i}").into_bytes()).collect();
        let mut t = store.begin(&[(0, b"s")]);
        t.sadd(0, b"s", &members).unwrap();
        t.commit().unwrap();
        let old_version = store.begin(&[]).meta(0, b"s").unwrap().unwrap().version;
        let prefix = keys::data_prefix(0, b"s", old_version);
        let raw = |store: &Store| store.kv().prefix(Space::Data, &prefix, false).count();
        // 100 short members are one page (`types::sets::page`).
        assert_eq!(raw(&store), 1, "{name}");

        // DEL, then recreate with one member: the old elements are invisible.
        let mut t = store.begin(&[(0, b"s")]);
        assert!(t.del(0, b"s").unwrap());
        t.sadd(0, b"s", &[b"fresh".to_vec()]).unwrap();
        t.commit().unwrap();
        let mut t = store.begin(&[(0, b"s")]);
        assert_eq!(
            t.smembers(0, b"s").unwrap(),
            vec![b"fresh".to_vec()],
            "{name}"
        );
        assert_eq!(t.scard(0, b"s").unwrap(), 1, "{name}");
        drop(t);
        assert_eq!(
            raw(&store),
            1,
            "{name}: stale entries still stored before compaction"
        );

        store.compact().unwrap();
        assert_eq!(
            raw(&store),
            0,
            "{name}: stale entries dropped by compaction"
        );
        let mut t = store.begin(&[(0, b"s")]);
        assert_eq!(
            t.smembers(0, b"s").unwrap(),
            vec![b"fresh".to_vec()],
            "{name}"
        );
    }
}

#[test]
fn store_versions_are_unique_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        dir: Some(dir.path().to_path_buf()),
        databases: 4,
        sync: SyncMode::Always,
        cache_bytes: 8 << 20,
        tier_bytes: 32 << 10,
        memtable_bytes: 8 << 20,
    };
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..3 {
        let store = Store::open(cfg.clone()).unwrap();
        for i in 0..5 {
            let key = format!("s{round}-{i}").into_bytes();
            let mut t = store.begin(&[(1, &key)]);
            t.sadd(1, &key, &[b"a".to_vec()]).unwrap();
            let v = t.meta(1, &key).unwrap().unwrap().version;
            assert!(seen.insert(v), "version {v} reused");
            t.commit().unwrap();
        }
        // Counters survive the restart.
        assert_eq!(store.stats().dbs[1].keys, 5 * (round + 1));
    }
}

#[test]
fn store_expired_keys_are_invisible_and_actively_removed() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"a"), (0, b"b")]);
        let now = t.now_ms();
        t.put_string(0, b"a", b"1".to_vec(), now + 60_000, false)
            .unwrap();
        t.put_string(0, b"b", b"1".to_vec(), now + 1, false)
            .unwrap();
        t.commit().unwrap();
        assert_eq!(store.stats().dbs[0].expires, 2, "{name}");
        std::thread::sleep(std::time::Duration::from_millis(5));
        let mut t = store.begin(&[]);
        assert!(!t.exists(0, b"b").unwrap(), "{name}");
        assert!(t.exists(0, b"a").unwrap(), "{name}");
        drop(t);
        assert_eq!(
            store.active_expire_cycle(100).unwrap(),
            vec![(0, b"b".to_vec())],
            "{name}"
        );
        assert!(store.active_expire_cycle(100).unwrap().is_empty(), "{name}");
        let s = store.stats();
        assert_eq!((s.dbs[0].keys, s.dbs[0].expires), (1, 1), "{name}");
    }
}

#[test]
fn store_flushdb_removes_only_that_db() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"a"), (1, b"a")]);
        t.put_string(0, b"a", b"1".to_vec(), 0, false).unwrap();
        t.put_string(1, b"a", b"1".to_vec(), t.now_ms() + 100_000, false)
            .unwrap();
        t.sadd(1, b"s", &[b"x".to_vec()]).unwrap();
        t.commit().unwrap();
        let mut t = store.begin_exclusive();
        t.flush_db(1).unwrap();
        t.commit().unwrap();
        let mut t = store.begin(&[]);
        assert!(t.exists(0, b"a").unwrap(), "{name}");
        assert!(!t.exists(1, b"a").unwrap(), "{name}");
        assert!(!t.exists(1, b"s").unwrap(), "{name}");
        assert_eq!(t.dbsize(1).unwrap(), 0, "{name}");
        assert_eq!(store.stats().dbs[1], Default::default(), "{name}");
        assert!(store.active_expire_cycle(10).unwrap().is_empty(), "{name}");
    }
}

#[test]
fn store_concurrent_increments_are_serialised_by_key_locks() {
    for (name, store, _d) in stores() {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let mut t = store.begin(&[(0, b"ctr"), (0, b"set")]);
                        let n = t.incr_by(0, b"ctr", 1).unwrap();
                        t.sadd(0, b"set", &[n.to_string().as_bytes()]).unwrap();
                        t.commit().unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut t = store.begin(&[]);
        assert_eq!(t.get(0, b"ctr").unwrap(), Some(b"800".to_vec()), "{name}");
        assert_eq!(t.scard(0, b"set").unwrap(), 800, "{name}");
    }
}

#[test]
fn store_committed_writes_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = StoreConfig {
        dir: Some(dir.path().to_path_buf()),
        databases: 2,
        sync: SyncMode::Always,
        cache_bytes: 8 << 20,
        tier_bytes: 32 << 10,
        memtable_bytes: 8 << 20,
    };
    {
        let store = Store::open(cfg.clone()).unwrap();
        let mut t = store.begin(&[(1, b"h")]);
        t.hset(1, b"h", &[(b"f", b"v")], false).unwrap();
        t.put_string(1, b"s", b"x".to_vec(), t.now_ms() + 100_000, false)
            .unwrap();
        t.commit().unwrap();
        // Uncommitted: must not survive.
        let mut t = store.begin(&[(1, b"gone")]);
        t.put_string(1, b"gone", b"x".to_vec(), 0, false).unwrap();
        drop(t);
    }
    let store = Store::open(cfg).unwrap();
    let mut t = store.begin(&[]);
    assert_eq!(t.hget(1, b"h", b"f").unwrap(), Some(b"v".to_vec()));
    assert!(t.ttl_ms(1, b"s", false).unwrap() > 0);
    assert!(!t.exists(1, b"gone").unwrap());
    assert_eq!(store.stats().dbs[1].keys, 2);
    assert_eq!(store.stats().dbs[1].expires, 1);
}

#[test]
fn store_counts_read_lookups_only_when_asked() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"k")]);
        t.put_string(0, b"k", b"v".to_vec(), 0, false).unwrap();
        assert_eq!(t.modified_keys(), vec![(0, b"k".to_vec())], "{name}");
        t.commit().unwrap();
        let mut t = store.begin(&[(0, b"k"), (0, b"nokey")]);
        t.get(0, b"k").unwrap();
        t.set_count_lookups(true);
        t.get(0, b"k").unwrap();
        t.get(0, b"k").unwrap();
        t.get(0, b"nokey").unwrap();
        t.set_count_lookups(false);
        t.get(0, b"nokey").unwrap();
        drop(t);
        let s = store.stats();
        assert_eq!((s.keyspace_hits, s.keyspace_misses), (2, 1), "{name}");
        store.reset_keyspace_stats();
        assert_eq!(store.stats().keyspace_hits, 0);
    }
}

#[test]
fn store_compaction_during_writes_never_drops_live_elements() {
    for (name, store, _d) in stores() {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let compactor = {
            let store = store.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    store.compact().unwrap();
                }
            })
        };
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let store = store.clone();
                std::thread::spawn(move || {
                    let key = format!("set{w}").into_bytes();
                    for round in 0..60 {
                        let mut t = store.begin(&[(0, &key)]);
                        t.del(0, &key).unwrap();
                        let members: Vec<Vec<u8>> = (0..20)
                            .map(|i| format!("{round}:{i}").into_bytes())
                            .collect();
                        t.sadd(0, &key, &members).unwrap();
                        t.commit().unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        compactor.join().unwrap();
        store.compact().unwrap();
        for w in 0..2 {
            let key = format!("set{w}").into_bytes();
            let mut t = store.begin(&[(0, &key)]);
            let members = t.smembers(0, &key).unwrap();
            assert_eq!(members.len(), 20, "{name}");
            assert!(members.iter().all(|m| m.starts_with(b"59:")), "{name}");
            let v = t.meta(0, &key).unwrap().unwrap().version;
            // Only the live version's entries remain after the final compaction.
            let raw = store
                .kv()
                .prefix(
                    Space::Data,
                    &keys::data_prefix(0, &key, 0)[..6 + key.len()],
                    false,
                )
                .count();
            // The live version's one page (20 short members).
            assert_eq!(raw, 1, "{name}: version {v}");
        }
    }
}

#[test]
fn kv_overlong_keys_are_refused_not_panicking() {
    for (name, kv, _d) in backends() {
        let long = vec![b'k'; 70_000];
        assert_eq!(kv.get(Space::Meta, &long).unwrap(), None, "{name}");
        let mut b = WriteBatch::new();
        b.put(Space::Meta, b"ok".to_vec(), Vec::new());
        b.put(Space::Meta, long.clone(), Vec::new());
        assert_eq!(
            kv.write(b, Durability::Buffer),
            Err(roaringd_store::StoreError::KeyTooLong),
            "{name}"
        );
        assert_eq!(
            kv.get(Space::Meta, b"ok").unwrap(),
            None,
            "{name}: nothing applied"
        );
        let mut b = WriteBatch::new();
        b.put(Space::Meta, vec![b'k'; 10], Vec::new());
        b.put(Space::Meta, vec![b'l'; 10], Vec::new());
        kv.write(b, Durability::Buffer).unwrap();
        assert_eq!(
            keys_of(kv.prefix(Space::Meta, &long, false)).len(),
            0,
            "{name}"
        );
        let after = keys_of(kv.range(Space::Meta, Bound::Excluded(&long), Bound::Unbounded, false));
        assert_eq!(after, vec![vec![b'l'; 10]], "{name}");
        let before =
            keys_of(kv.range(Space::Meta, Bound::Unbounded, Bound::Excluded(&long), false));
        assert_eq!(before, vec![vec![b'k'; 10]], "{name}");
    }
}

#[test]
fn store_overlong_keys_read_as_absent_and_fail_on_write() {
    for (name, store, _d) in stores() {
        let long = vec![b'k'; 70_000];
        let mut t = store.begin(&[(0, &long)]);
        assert_eq!(t.get(0, &long).unwrap(), None, "{name}");
        assert_eq!(t.smembers(0, &long).unwrap(), Vec::<Vec<u8>>::new());
        t.put_string(0, &long, b"v".to_vec(), 0, false).unwrap();
        assert_eq!(
            t.commit(),
            Err(roaringd_store::StoreError::KeyTooLong),
            "{name}"
        );
        let mut t = store.begin(&[(0, b"s")]);
        t.sadd(0, b"s", &[vec![b'm'; 65_530]]).unwrap();
        assert_eq!(
            t.commit(),
            Err(roaringd_store::StoreError::KeyTooLong),
            "{name}"
        );
        assert_eq!(store.stats().dbs[0].keys, 0, "{name}");
    }
}

#[test]
fn store_active_expiry_cursor_still_finds_keys_added_behind_it() {
    for (name, store, _d) in stores() {
        // A first cycle moves the cursor to "now".
        assert!(store.active_expire_cycle(10).unwrap().is_empty(), "{name}");
        // An expire time already in the past (behind the cursor).
        let mut t = store.begin(&[(0, b"past")]);
        t.put_string(0, b"past", b"v".to_vec(), 5, false).unwrap();
        t.commit().unwrap();
        assert_eq!(
            store.active_expire_cycle(10).unwrap(),
            vec![(0, b"past".to_vec())],
            "{name}"
        );
        // Budget-limited cycles resume where they stopped.
        let mut t = store.begin(&[]);
        let now = t.now_ms();
        for i in 0..5u64 {
            let k = format!("k{i}").into_bytes();
            t.put_string(0, &k, b"v".to_vec(), now - 10 + i, false)
                .unwrap();
        }
        t.commit().unwrap();
        let mut got = Vec::new();
        for _ in 0..10 {
            got.extend(store.active_expire_cycle(2).unwrap());
        }
        assert_eq!(got.len(), 5, "{name}");
        assert_eq!(store.stats().dbs[0].keys, 0, "{name}");
    }
}

#[test]
fn kv_release_when_idle_flushes_memtables_and_keeps_every_entry() {
    for (name, kv, _d) in backends() {
        let mut b = WriteBatch::new();
        for i in 0..20_000u32 {
            b.put(Space::Data, i.to_be_bytes().to_vec(), vec![7u8; 100]);
        }
        kv.write(b, Durability::Lazy).unwrap();
        let before = kv.stats().memtable_bytes;
        // The first call only notes the writes; idle calls then seal, and
        // once the flushes are done, release. Flushes run in the
        // background: call until the memtables are empty (bounded).
        for _ in 0..500 {
            kv.release_when_idle().unwrap();
            if kv.stats().memtable_bytes == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if name == "lsm" {
            assert!(before > 1 << 20, "{name}: {before}");
            assert_eq!(kv.stats().memtable_bytes, 0, "{name}");
        }
        assert_eq!(kv.prefix(Space::Data, &[], false).count(), 20_000, "{name}");
        assert_eq!(
            kv.get(Space::Data, &77u32.to_be_bytes()).unwrap(),
            Some(vec![7u8; 100]),
            "{name}"
        );
        // Another write starts over: the next call only notes it.
        let mut b = WriteBatch::new();
        b.put(Space::Meta, b"m".to_vec(), b"1".to_vec());
        kv.write(b, Durability::Lazy).unwrap();
        kv.release_when_idle().unwrap();
        assert_eq!(
            kv.get(Space::Meta, b"m").unwrap(),
            Some(b"1".to_vec()),
            "{name}"
        );
    }
}

#[test]
fn store_reads_and_edits_a_set_stored_one_entry_per_member() {
    use roaringd_store::meta::{KeyMeta, Summary};
    for (name, store, _d) in stores() {
        // How sets were stored before pages: an empty value under each
        // member.
        let version = store.begin(&[(0, b"s")]).new_data_version().unwrap();
        let members: Vec<Vec<u8>> = (0..300).map(|i| format!("m{i:03}").into_bytes()).collect();
        let mut b = WriteBatch::new();
        for m in &members {
            b.put(Space::Data, keys::data_key(0, b"s", version, m), Vec::new());
        }
        let meta = KeyMeta {
            version,
            expire_at_ms: 0,
            big: true,
            noint: false,
            summary: Summary::Set { card: 300 },
        };
        b.put(Space::Meta, keys::meta_key(0, b"s"), meta.encode());
        store.kv().write(b, Durability::Lazy).unwrap();

        let mut t = store.begin(&[(0, b"s")]);
        assert_eq!(t.smembers(0, b"s").unwrap(), members, "{name}");
        assert!(t.sismember(0, b"s", b"m150").unwrap(), "{name}");
        assert!(!t.sismember(0, b"s", b"m1500").unwrap(), "{name}");
        assert_eq!(
            t.sadd(0, b"s", &[b"m1500".to_vec(), b"m150".to_vec()])
                .unwrap(),
            1,
            "{name}"
        );
        assert_eq!(
            t.srem(0, b"s", &[b"m000".to_vec(), b"m299".to_vec()])
                .unwrap(),
            2,
            "{name}"
        );
        t.commit().unwrap();
        let mut t = store.begin(&[(0, b"s")]);
        let mut want: Vec<Vec<u8>> = members[1..299].to_vec();
        want.push(b"m1500".to_vec());
        want.sort();
        assert_eq!(t.smembers(0, b"s").unwrap(), want, "{name}");
        assert_eq!(t.scard(0, b"s").unwrap(), 299, "{name}");
    }
}
