//! Data-type semantics of the store (strings, keyspace, sets, hashes), run
//! against both backends. Expected values are Redis 7.0's.

use roaringd_store::types::keyspace::ExpireCond;
use roaringd_store::types::sets::SetOp;
use roaringd_store::types::strings::{ExpireUpdate, SetCond, SetOptions};
use roaringd_store::{Kind, Store, StoreConfig, StoreError, SyncMode};

/// The LSM store of the tests, in `dir` (new or reopened).
fn lsm_store(dir: &std::path::Path) -> Store {
    Store::open(StoreConfig {
        dir: Some(dir.to_path_buf()),
        databases: 16,
        sync: SyncMode::No,
        cache_bytes: 8 << 20,
        tier_bytes: 32 << 10,
        memtable_bytes: 8 << 20,
    })
    .unwrap()
}

fn stores() -> Vec<(&'static str, Store, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let lsm = lsm_store(dir.path());
    vec![
        ("mem", Store::open(StoreConfig::default()).unwrap(), None),
        ("lsm", lsm, Some(dir)),
    ]
}

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

#[test]
fn strings_set_options_and_numbers() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"k"), (0, b"n"), (0, b"f")]);
        let nx = SetOptions {
            cond: SetCond::Nx,
            ..Default::default()
        };
        assert!(t.set(0, b"k", b("v1"), nx).unwrap().written, "{name}");
        assert!(!t.set(0, b"k", b("v2"), nx).unwrap().written, "{name}");
        let get = SetOptions {
            get: true,
            ..Default::default()
        };
        assert_eq!(t.set(0, b"k", b("v3"), get).unwrap().old, Some(b("v1")));
        assert_eq!(t.incr_by(0, b"n", 5).unwrap(), 5);
        assert_eq!(t.incr_by(0, b"n", -7).unwrap(), -2);
        assert_eq!(t.incr_by(0, b"k", 1), Err(StoreError::NotInteger));
        t.put_string(0, b"n", b(&i64::MAX.to_string()), 0, false)
            .unwrap();
        assert_eq!(t.incr_by(0, b"n", 1), Err(StoreError::Overflow));
        assert_eq!(t.incr_by_float(0, b"f", b"10.5").unwrap(), b("10.5"));
        assert_eq!(t.incr_by_float(0, b"f", b"0.1").unwrap(), b("10.6"));
        assert_eq!(
            t.incr_by_float(0, b"f", b"5.0e3").unwrap(),
            b("5010.60000000000000009")
        );
        assert_eq!(
            t.incr_by_float(0, b"f", b"inf"),
            Err(StoreError::NanOrInfinity)
        );
        assert_eq!(t.append(0, b"k", b"xy").unwrap(), 4);
        assert_eq!(t.get(0, b"k").unwrap(), Some(b("v3xy")));
        assert_eq!(t.object_encoding(0, b"k").unwrap(), Some("raw"));
        assert_eq!(t.object_encoding(0, b"f").unwrap(), Some("embstr"));
        t.incr_by(0, b"n", -1).unwrap();
        assert_eq!(t.object_encoding(0, b"n").unwrap(), Some("int"));
        assert_eq!(t.setrange(0, b"k", 6, b"Z").unwrap(), 7);
        assert_eq!(t.get(0, b"k").unwrap(), Some(b"v3xy\0\0Z".to_vec()));
        assert_eq!(
            t.setrange(0, b"k", -1, b"Z"),
            Err(StoreError::OffsetOutOfRange)
        );
        assert_eq!(t.setrange(0, b"none", 0, b"").unwrap(), 0);
        assert!(!t.exists(0, b"none").unwrap());
        assert_eq!(t.getrange(0, b"k", 0, 1).unwrap(), b("v3"));
        assert_eq!(t.getdel(0, b"k").unwrap(), Some(b"v3xy\0\0Z".to_vec()));
        assert!(!t.exists(0, b"k").unwrap());
        t.commit().unwrap();
        assert_eq!(store.stats().dbs[0].keys, 2, "{name}");
    }
}

#[test]
fn strings_on_other_types_are_wrongtype() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"s")]);
        t.sadd(0, b"s", &[b"a"]).unwrap();
        assert_eq!(t.get(0, b"s"), Err(StoreError::WrongType), "{name}");
        assert_eq!(t.append(0, b"s", b"x"), Err(StoreError::WrongType));
        assert_eq!(t.hget(0, b"s", b"f"), Err(StoreError::WrongType));
        // SET replaces any type; the old members are gone.
        t.set(0, b"s", b("str"), SetOptions::default()).unwrap();
        assert_eq!(t.key_type(0, b"s").unwrap(), Some(Kind::String));
        assert_eq!(t.sadd(0, b"s", &[b"a"]), Err(StoreError::WrongType));
        t.commit().unwrap();
    }
}

#[test]
fn keyspace_expire_conditions_ttl_and_persist() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"k")]);
        let now = t.now_ms() as i64;
        t.put_string(0, b"k", b("v"), 0, false).unwrap();
        let c = |nx, xx, gt, lt| ExpireCond { nx, xx, gt, lt };
        assert!(!t
            .expire_at(0, b"k", now + 10_000, c(false, true, false, false))
            .unwrap());
        assert!(!t
            .expire_at(0, b"k", now + 10_000, c(false, false, true, false))
            .unwrap());
        assert!(t
            .expire_at(0, b"k", now + 10_000, c(false, false, false, true))
            .unwrap());
        assert_eq!(t.ttl_ms(0, b"k", false).unwrap(), 10_000, "{name}");
        assert!(!t
            .expire_at(0, b"k", now + 5_000, c(true, false, false, false))
            .unwrap());
        assert!(!t
            .expire_at(0, b"k", now + 5_000, c(false, false, true, false))
            .unwrap());
        assert!(t
            .expire_at(0, b"k", now + 20_000, c(false, false, true, false))
            .unwrap());
        assert_eq!(t.ttl_ms(0, b"k", true).unwrap(), now + 20_000);
        assert!(t.persist(0, b"k").unwrap());
        assert!(!t.persist(0, b"k").unwrap());
        assert_eq!(t.ttl_ms(0, b"k", false).unwrap(), -1);
        assert_eq!(t.ttl_ms(0, b"nokey", false).unwrap(), -2);
        // A time in the past deletes the key.
        assert!(t
            .expire_at(0, b"k", now - 1, ExpireCond::default())
            .unwrap());
        assert!(!t.exists(0, b"k").unwrap());
        t.commit().unwrap();
        assert_eq!(store.stats().dbs[0], Default::default(), "{name}");
    }
}

#[test]
fn keyspace_rename_moves_sets_and_ttl() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"a"), (0, b"b")]);
        t.sadd(0, b"a", &[b"1", b"2", b"x"]).unwrap();
        let at = t.now_ms() as i64 + 50_000;
        t.expire_at(0, b"a", at, ExpireCond::default()).unwrap();
        t.put_string(0, b"b", b("old"), 0, false).unwrap();
        assert!(t.rename(0, b"a", b"b", false).unwrap());
        assert!(!t.exists(0, b"a").unwrap());
        assert_eq!(
            sorted(t.smembers(0, b"b").unwrap()),
            vec![b("1"), b("2"), b("x")],
            "{name}"
        );
        assert_eq!(t.ttl_ms(0, b"b", true).unwrap(), at);
        assert_eq!(t.rename(0, b"a", b"c", false), Err(StoreError::NoSuchKey));
        t.put_string(0, b"a", b("v"), 0, false).unwrap();
        assert!(!t.rename(0, b"a", b"b", true).unwrap());
        assert!(!t.rename(0, b"a", b"a", true).unwrap());
        assert!(t.rename(0, b"a", b"a", false).unwrap());
        t.commit().unwrap();
        let mut t = store.begin(&[]);
        assert_eq!(t.scard(0, b"b").unwrap(), 3, "{name}");
        assert_eq!(store.stats().dbs[0].keys, 2, "{name}");
    }
}

/// RENAME of a key bigger than a spill (`txn::SPILL_BYTES`): every field
/// arrives, in the same transaction and after it, and (LSM) after a
/// reopen; the source is gone.
#[test]
fn keyspace_rename_copies_big_keys_in_chunks() {
    for (name, store, dir) in stores() {
        let field = |i: u32| format!("field-{i:08}").into_bytes();
        let value = |i: u32| vec![(i % 251) as u8; 200];
        let n = 60_000u32; // ~13 MB of entries
        let mut t = store.begin(&[(0, b"big")]);
        for start in (0..n).step_by(10_000) {
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = (start..start + 10_000)
                .map(|i| (field(i), value(i)))
                .collect();
            t.hset(0, b"big", &pairs, false).unwrap();
        }
        t.commit().unwrap();
        let mut t = store.begin(&[(0, b"big"), (0, b"moved")]);
        assert!(t.rename(0, b"big", b"moved", false).unwrap(), "{name}");
        assert_eq!(t.hlen(0, b"moved").unwrap(), u64::from(n), "{name}");
        assert_eq!(
            t.hget(0, b"moved", &field(n - 1)).unwrap(),
            Some(value(n - 1))
        );
        t.commit().unwrap();
        let check = |store: &Store| {
            let mut t = store.begin(&[]);
            assert!(!t.exists(0, b"big").unwrap(), "{name}");
            let all = t.hgetall(0, b"moved").unwrap();
            assert_eq!(all.len(), n as usize, "{name}");
            for (i, (f, v)) in all.iter().enumerate() {
                assert_eq!((f, v), (&field(i as u32), &value(i as u32)), "{name}");
            }
        };
        check(&store);
        if let Some(dir) = dir {
            drop(store);
            check(&lsm_store(dir.path()));
        }
    }
}

#[test]
fn keyspace_keys_and_scan_cover_every_key_once() {
    for (name, store, _d) in stores() {
        let keys: Vec<Vec<u8>> = (0..250).map(|i| format!("user:{i}").into_bytes()).collect();
        let mut t = store.begin(&[]);
        for k in &keys {
            t.put_string(3, k, b("v"), 0, false).unwrap();
        }
        t.put_string(3, b"other", b("v"), 0, false).unwrap();
        // Reads see this Txn's own writes before commit.
        assert_eq!(t.keys(3, b"user:*").unwrap().len(), 250, "{name}");
        assert_eq!(t.dbsize(3).unwrap(), 251);
        t.commit().unwrap();
        let t = store.begin(&[]);
        assert_eq!(t.keys(3, b"user:1?").unwrap().len(), 10);
        assert_eq!(t.keys(3, b"*").unwrap().len(), 251);
        assert_eq!(t.keys(3, b"o[a-z]her").unwrap(), vec![b("other")]);
        let mut seen = Vec::new();
        let mut cursor = 0;
        loop {
            let (next, page) = t.scan(3, cursor, Some(b"user:*"), 17).unwrap();
            assert!(page.len() <= 17);
            seen.extend(page.into_iter().map(|(k, kind)| {
                assert_eq!(kind, Kind::String);
                k
            }));
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(sorted(seen), sorted(keys.clone()), "{name}");
        assert_eq!(t.scan(3, 12345, None, 10).unwrap(), (0, Vec::new()));
    }
}

#[test]
fn sets_algebra_pop_and_random() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[]);
        assert_eq!(
            t.sadd(0, b"a", &[b"1", b"2", b"3", b"3"]).unwrap(),
            3,
            "{name}"
        );
        t.sadd(0, b"b", &[b"2", b"3", b"4"]).unwrap();
        assert_eq!(t.object_encoding(0, b"a").unwrap(), Some("intset"));
        assert_eq!(
            t.set_combine(0, SetOp::Inter, &[b"a", b"b"]).unwrap(),
            vec![b("2"), b("3")]
        );
        assert_eq!(
            t.set_combine(0, SetOp::Union, &[b"a", b"b"]).unwrap().len(),
            4
        );
        assert_eq!(
            t.set_combine(0, SetOp::Diff, &[b"a", b"b"]).unwrap(),
            vec![b("1")]
        );
        assert!(t
            .set_combine(0, SetOp::Inter, &[&b"a"[..], b"none"])
            .unwrap()
            .is_empty());
        assert_eq!(t.sintercard(0, &[b"a", b"b"], 1).unwrap(), 1);
        assert_eq!(
            t.set_combine_store(0, SetOp::Union, b"u", &[b"a", b"b"])
                .unwrap(),
            4
        );
        assert_eq!(t.scard(0, b"u").unwrap(), 4);
        assert_eq!(
            t.set_combine_store(0, SetOp::Inter, b"u", &[&b"a"[..], b"none"])
                .unwrap(),
            0
        );
        assert!(!t.exists(0, b"u").unwrap());
        t.put_string(0, b"s", b("x"), 0, false).unwrap();
        assert_eq!(
            t.set_combine(0, SetOp::Inter, &[&b"none"[..], b"s"]),
            Err(StoreError::WrongType)
        );
        assert!(t.smove(0, b"a", b"c", b"1").unwrap());
        assert!(!t.smove(0, b"a", b"c", b"1").unwrap());
        assert_eq!(t.smove(0, b"a", b"s", b"2"), Err(StoreError::WrongType));
        assert_eq!(t.smembers(0, b"a").unwrap(), vec![b("2"), b("3")]);
        // Numeric (intset) order, not byte order.
        t.sadd(0, b"n", &[&b"10"[..], b"9", b"-1"]).unwrap();
        assert_eq!(t.smembers(0, b"n").unwrap(), vec![b("-1"), b("9"), b("10")]);
        t.sadd(0, b"n", &[b"abc"]).unwrap();
        assert_eq!(t.object_encoding(0, b"n").unwrap(), Some("hashtable"));
        assert_eq!(t.srandmember(0, b"n", Some(2)).unwrap().len(), 2);
        assert_eq!(t.srandmember(0, b"n", Some(10)).unwrap().len(), 4);
        assert_eq!(t.srandmember(0, b"n", Some(-10)).unwrap().len(), 10);
        let popped = t.spop(0, b"n", Some(3)).unwrap();
        assert_eq!(popped.len(), 3);
        assert_eq!(t.scard(0, b"n").unwrap(), 1);
        assert_eq!(t.spop(0, b"n", None).unwrap().len(), 1);
        assert!(
            !t.exists(0, b"n").unwrap(),
            "{name}: emptied set is deleted"
        );
        assert_eq!(t.srem(0, b"b", &[b"2", b"9"]).unwrap(), 1);
        assert_eq!(
            t.smismember(0, b"b", &[b"3", b"2"]).unwrap(),
            vec![true, false]
        );
        t.commit().unwrap();
    }
}

#[test]
fn sets_sscan_pages_big_sets() {
    for (name, store, _d) in stores() {
        let members: Vec<Vec<u8>> = (0..600).map(|i| format!("m{i}").into_bytes()).collect();
        let mut t = store.begin(&[(0, b"big")]);
        t.sadd(0, b"big", &members).unwrap();
        t.commit().unwrap();
        let mut t = store.begin(&[(0, b"big")]);
        let mut seen = Vec::new();
        let mut cursor = 0;
        loop {
            let (next, page) = t.sscan(0, b"big", cursor, None, 100).unwrap();
            seen.extend(page);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(sorted(seen), sorted(members.clone()), "{name}");
        let exact = t.memory_usage(0, b"big", 0).unwrap().unwrap();
        assert!(exact > 600 * 8, "{name}");
        let sampled = t.memory_usage(0, b"big", 5).unwrap().unwrap();
        assert!(
            sampled > exact / 2 && sampled < exact * 2,
            "{name}: {sampled} vs {exact}"
        );
        assert_eq!(t.memory_usage(0, b"nokey", 5).unwrap(), None);
    }
}

#[test]
fn hashes_fields_order_and_increments() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"h")]);
        assert_eq!(
            t.hset(0, b"h", &[(b"z", b"1"), (b"a", b"2")], false)
                .unwrap(),
            2
        );
        assert_eq!(t.hset(0, b"h", &[(b"z", b"3")], false).unwrap(), 0);
        assert_eq!(t.hset(0, b"h", &[(b"z", b"4")], true).unwrap(), 0);
        // Listpack order = insertion order.
        assert_eq!(
            t.hgetall(0, b"h").unwrap(),
            vec![(b("z"), b("3")), (b("a"), b("2"))],
            "{name}"
        );
        assert_eq!(t.hlen(0, b"h").unwrap(), 2);
        assert_eq!(t.hincrby(0, b"h", b"a", 5).unwrap(), 7);
        assert_eq!(t.hincrby(0, b"h", b"n", -1).unwrap(), -1);
        t.hset(0, b"h", &[(b"s", b"x")], false).unwrap();
        assert_eq!(t.hincrby(0, b"h", b"s", 1), Err(StoreError::HashNotInteger));
        assert_eq!(
            t.hincrbyfloat(0, b"h", b"s", b"1"),
            Err(StoreError::HashNotFloat)
        );
        assert_eq!(t.hincrbyfloat(0, b"h", b"a", b"0.5").unwrap(), b("7.5"));
        assert_eq!(t.hstrlen(0, b"h", b"a").unwrap(), 3);
        assert_eq!(
            t.hmget(0, b"h", &[&b"a"[..], b"q"]).unwrap(),
            vec![Some(b("7.5")), None]
        );
        assert_eq!(t.object_encoding(0, b"h").unwrap(), Some("listpack"));
        t.hset(0, b"h", &[(b"long", [b'x'; 65].as_slice())], false)
            .unwrap();
        assert_eq!(t.object_encoding(0, b"h").unwrap(), Some("hashtable"));
        assert_eq!(
            t.hdel(0, b"h", &[&b"z"[..], b"a", b"n", b"s", b"long", b"q"])
                .unwrap(),
            5
        );
        assert!(!t.exists(0, b"h").unwrap(), "{name}");
        t.hset(0, b"h", &[(b"f", b"v")], false).unwrap();
        assert_eq!(t.hrandfield(0, b"h", Some(-3)).unwrap().len(), 3);
        assert_eq!(
            t.hscan(0, b"h", 0, Some(b"f*"), 10).unwrap(),
            (0, vec![(b("f"), b("v"))])
        );
        t.commit().unwrap();
        let mut t = store.begin(&[]);
        assert_eq!(t.hget(0, b"h", b"f").unwrap(), Some(b("v")), "{name}");
    }
}

#[test]
fn txn_composes_many_commands_like_exec() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"s"), (0, b"k")]);
        t.sadd(0, b"s", &[b"a", b"b"]).unwrap();
        assert!(t.del(0, b"s").unwrap());
        t.sadd(0, b"s", &[b"c"]).unwrap();
        t.getex(0, b"k", ExpireUpdate::Default).unwrap();
        t.put_string(0, b"k", b("1"), 0, false).unwrap();
        t.incr_by(0, b"k", 1).unwrap();
        let touched = t.commit().unwrap();
        assert_eq!(touched, vec![(0, b("k")), (0, b("s"))], "{name}");
        let mut t = store.begin(&[(0, b"s")]);
        assert_eq!(t.smembers(0, b"s").unwrap(), vec![b("c")], "{name}");
        assert_eq!(t.get(0, b"k").unwrap(), Some(b("2")));
        assert_eq!(store.stats().dbs[0].keys, 2);
    }
}

#[test]
fn sets_sampling_big_sets_returns_distinct_members() {
    for (name, store, _d) in stores() {
        let members: Vec<Vec<u8>> = (0..3000)
            .map(|i| format!("member:{i}").into_bytes())
            .collect();
        let mut t = store.begin(&[(0, b"big")]);
        t.sadd(0, b"big", &members).unwrap();
        t.commit().unwrap();
        let mut t = store.begin(&[(0, b"big")]);
        let picked = t.srandmember(0, b"big", Some(20)).unwrap();
        let mut uniq = sorted(picked.clone());
        uniq.dedup();
        assert_eq!(uniq.len(), 20, "{name}");
        assert!(picked.iter().all(|p| members.contains(p)));
        assert_eq!(t.srandmember(0, b"big", Some(-50)).unwrap().len(), 50);
        let popped = t.spop(0, b"big", Some(10)).unwrap();
        assert_eq!(popped.len(), 10);
        assert_eq!(t.scard(0, b"big").unwrap(), 2990);
        for p in &popped {
            assert!(!t.sismember(0, b"big", p).unwrap());
        }
        assert_eq!(t.spop(0, b"big", None).unwrap().len(), 1);
        t.commit().unwrap();
    }
}

#[test]
fn randomkey_returns_live_keys_of_small_and_big_dbs() {
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[]);
        assert_eq!(t.random_key(5).unwrap(), None, "{name}");
        t.put_string(5, b"only", b("v"), 0, false).unwrap();
        assert_eq!(t.random_key(5).unwrap(), Some(b("only")));
        for i in 0..2000 {
            t.put_string(6, format!("key:{i}").as_bytes(), b("v"), 0, false)
                .unwrap();
        }
        t.commit().unwrap();
        let mut t = store.begin(&[]);
        for _ in 0..20 {
            let k = t.random_key(6).unwrap().unwrap();
            assert!(k.starts_with(b"key:"), "{name}");
        }
    }
}

#[test]
fn hashes_hrandfield_on_big_hashes_returns_distinct_fields_with_values() {
    for (name, store, _d) in stores() {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..2000)
            .map(|i| (format!("f{i}").into_bytes(), format!("v{i}").into_bytes()))
            .collect();
        let mut t = store.begin(&[(0, b"h")]);
        t.hset(0, b"h", &pairs, false).unwrap();
        let picked = t.hrandfield(0, b"h", Some(30)).unwrap();
        assert_eq!(picked.len(), 30, "{name}");
        let mut names: Vec<_> = picked.iter().map(|(f, _)| f.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 30, "{name}");
        for (f, v) in &picked {
            assert_eq!(&f[1..], &v[1..], "{name}: value belongs to its field");
        }
        assert_eq!(t.hrandfield(0, b"h", Some(-5)).unwrap().len(), 5);
        assert_eq!(t.hrandfield(0, b"h", None).unwrap().len(), 1);
    }
}

#[test]
fn single_random_picks_spread_over_gappy_keys_and_skip_expired_ones() {
    // Decimal names: a pivot in key space would favour "1", "10", "100".
    let names: Vec<Vec<u8>> = (0..3000).map(|i| i.to_string().into_bytes()).collect();
    let distinct = |mut v: Vec<Vec<u8>>| {
        v.sort();
        v.dedup();
        v.len()
    };
    for (name, store, _d) in stores() {
        let mut t = store.begin(&[(0, b"s")]);
        t.sadd(0, b"s", &names).unwrap();
        let pairs: Vec<_> = names.iter().map(|n| (n.clone(), n.clone())).collect();
        t.hset(0, b"h", &pairs, false).unwrap();
        for (i, n) in names.iter().enumerate() {
            // Odd keys expired long ago: RANDOMKEY never returns them.
            let at = if i.is_multiple_of(2) { 0 } else { 1 };
            t.put_string(7, n, b("v"), at, false).unwrap();
        }
        t.commit().unwrap();
        let mut t = store.begin(&[(0, b"s")]);
        // Uniform: ~285 distinct of 300 draws from 3000 (~275 from 1500).
        let picks: Vec<_> = (0..300)
            .map(|_| t.srandmember(0, b"s", None).unwrap().pop().unwrap())
            .collect();
        assert!(distinct(picks) > 250, "{name}: SRANDMEMBER");
        let picks: Vec<_> = (0..300)
            .map(|_| t.hrandfield(0, b"h", None).unwrap().pop().unwrap().0)
            .collect();
        assert!(distinct(picks) > 250, "{name}: HRANDFIELD");
        let picks: Vec<_> = (0..300)
            .map(|_| t.random_key(7).unwrap().unwrap())
            .collect();
        assert!(picks.iter().all(|k| {
            let i: usize = std::str::from_utf8(k).unwrap().parse().unwrap();
            i.is_multiple_of(2)
        }));
        assert!(distinct(picks) > 230, "{name}: RANDOMKEY");
        // SPOP without count in one Txn: each pop is a member still there.
        let mut popped = Vec::new();
        for _ in 0..100 {
            let p = t.spop(0, b"s", None).unwrap().pop().unwrap();
            assert!(!t.sismember(0, b"s", &p).unwrap());
            popped.push(p);
        }
        assert_eq!(distinct(popped), 100, "{name}: SPOP");
        assert_eq!(t.scard(0, b"s").unwrap(), 2900);
        t.commit().unwrap();
    }
}
