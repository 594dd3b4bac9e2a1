//! `maxmemory`: one bound for the whole process.
//!
//! The bound is split at startup ([`Split::of`]) among the LSM store's
//! block cache and memtables, the bitmap caches (container cache and
//! write-back budget), a reserve for connections and buffers, and the
//! memory tier, which takes the rest. Because no split can foresee client
//! buffers or allocator slack, a governor thread ([`start_governor`])
//! watches the process's resident size ten times a second: while it is
//! above `maxmemory` the write-back tier gives way first (its budget goes
//! to 0: it takes no new edit, and the persister writes its dirty keys
//! back), and the tier's budget shrinks by the rest of the excess (the
//! tier evicts to the LSM store at once, and freed memory is handed back
//! to the OS); the tier grows back towards its share as room returns, and
//! past its share while the process stays below the bound (see
//! [`next_budget`]), and the write-back budget comes back once the tier's
//! budget is back at its share ([`next_write_back`]).
//! Eviction is a cache decision only: every key stays in the LSM store.
//!
//! Why the write-back tier gives way: under a `maxmemory` that the LSM
//! store's caches and the allocator's slack nearly fill, the bytes of hot
//! keys served from memory are worth more than bitmap edits kept dirty.
//! With 100,000 bitmaps beyond a 68 MB bound, a build whose write-back
//! tier took almost no edits kept ten times the resident keys and served
//! more reads and writes than one whose dirty keys held their budget
//! (docs/benchmarks.md, "Bitmaps ≈ 4× memory").
//!
//! `maxmemory 0` (the default) means half of the memory this process may
//! use: the smaller of the machine's memory and the limit of its memory
//! cgroup (v1 or v2).

use roaringd_store::tier::Policy;
use roaringd_store::Store;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The least budget the tier keeps, whatever the governor decides.
const MIN_TIER: u64 = 1 << 20;

/// How `maxmemory` is shared (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// The effective bound.
    pub maxmemory: u64,
    /// The LSM store's block cache.
    pub block_cache: u64,
    /// Each LSM keyspace's largest memtable. Six of them are set aside:
    /// the store seals every keyspace's memtable once together they pass
    /// two (`LsmKv::bound_memtables`; four keyspaces since the operation
    /// log's), and sealed ones wait for their flush beside the active.
    pub memtable: u64,
    /// The bitmap container cache.
    pub container_cache: u64,
    /// The bitmap write-back budget.
    pub write_back: u64,
    /// The memory tier.
    pub tier: u64,
}

impl Split {
    /// The split of `maxmemory` (0 = [`default_maxmemory`]), each cache
    /// capped by its own setting.
    #[must_use]
    pub fn of(maxmemory: u64, cache_bytes: u64, container_cache: u64, write_back: u64) -> Split {
        let maxmemory = effective(maxmemory);
        // Up to a quarter for the block cache: with data beyond memory it
        // holds the index and filter partitions every miss needs and data
        // blocks of ~20 small records each; at a 65 MB bound, a quarter
        // instead of an eighth served 1.3x the uniform reads and 1.1x the
        // zipfian ones of 3 million records (three eighths: less of both,
        // the tier too small). docs/benchmarks.md, "Storage tiers".
        let block_cache = cache_bytes.min(maxmemory / 4).max(1 << 20);
        let memtable = (maxmemory / 32).clamp(4 << 20, 64 << 20);
        let container_cache = container_cache.min(maxmemory / 32);
        let write_back = write_back.min(maxmemory / 32);
        // Connections, buffers, the runtime and allocator slack (the
        // governor takes from the tier whatever they need beyond it).
        let reserve = (maxmemory / 10).max(8 << 20);
        let tier = maxmemory
            .saturating_sub(block_cache + 6 * memtable + container_cache + write_back + reserve)
            .max(MIN_TIER);
        Split {
            maxmemory,
            block_cache,
            memtable,
            container_cache,
            write_back,
            tier,
        }
    }

    /// What the LSM store may hold in memory: block cache and memtables.
    #[must_use]
    pub fn lsm(&self) -> u64 {
        self.block_cache + 6 * self.memtable
    }
}

/// `maxmemory` itself, or the default for 0.
#[must_use]
pub fn effective(maxmemory: u64) -> u64 {
    if maxmemory == 0 {
        default_maxmemory()
    } else {
        maxmemory
    }
}

/// Half of the memory this process may use (machine or cgroup), at least
/// 64 MiB.
#[must_use]
pub fn default_maxmemory() -> u64 {
    (usable_memory() / 2).max(64 << 20)
}

/// The smaller of the machine's memory and this process's memory cgroup
/// limit; 4 GiB when neither can be read.
#[must_use]
pub fn usable_memory() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    });
    let total = total.map_or(4 << 30, |kb| kb * 1024);
    cgroup_limit().map_or(total, |l| l.min(total))
}

/// This process's memory cgroup limit (v2 `memory.max`, v1
/// `memory.limit_in_bytes`), when it has one.
fn cgroup_limit() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let file = if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}/memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        } else {
            continue;
        };
        if let Some(v) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            // v1 reports "no limit" as a huge page-aligned number.
            if v < 1 << 60 {
                return Some(v);
            }
        }
    }
    None
}

/// The tier policy a Redis `maxmemory-policy` name stands for. Every
/// policy evicts to the LSM store, never out of the data set, so the
/// `volatile-*` names (keys with an expire only) and `noeviction` (refuse
/// writes) have no separate meaning here: `volatile-lru`, `volatile-ttl`
/// and `noeviction` act as `allkeys-lru`, `volatile-lfu` as `allkeys-lfu`,
/// `volatile-random` as `allkeys-random`. `None` for an unknown name.
#[must_use]
pub fn policy(name: &str) -> Option<Policy> {
    Some(match name {
        "allkeys-lru" | "volatile-lru" | "volatile-ttl" | "noeviction" => Policy::Lru,
        "allkeys-lfu" | "volatile-lfu" => Policy::Lfu,
        "allkeys-random" | "volatile-random" => Policy::Random,
        _ => return None,
    })
}

/// The tier's share, as the governor currently sets it (shared with
/// CONFIG SET, which changes the share).
#[derive(Default)]
pub struct Governor {
    /// The bound (effective `maxmemory`).
    pub maxmemory: AtomicU64,
    /// The tier's share of it per [`Split`].
    pub tier_share: AtomicU64,
    /// The write-back tier's budget per [`Split`], which the governor
    /// sets while the process is within the bound.
    pub write_back_share: AtomicU64,
}

/// Starts the governor thread (see the module docs).
pub fn start_governor(store: Store, gov: Arc<Governor>) {
    let spawned = std::thread::Builder::new()
        .name("roaringd-maxmem".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100));
            govern(&store, &gov, crate::info::rss_bytes());
        });
    if let Err(e) = spawned {
        crate::warning!("Can't start the maxmemory governor thread: {e}");
    }
}

/// One step of the governor for a resident size of `rss` bytes.
pub fn govern(store: &Store, gov: &Governor, rss: u64) {
    let tier = store.tier();
    let budget = tier.budget() as u64;
    let share = gov.tier_share.load(Ordering::Relaxed);
    let max = gov.maxmemory.load(Ordering::Relaxed);
    let dirty = store.write_back_stats().1;
    let next = next_budget(
        budget,
        tier.stats().resident_bytes,
        share,
        max,
        (rss, dirty),
    );
    let wb = store.write_back_bytes();
    let wb_next = next_write_back(
        wb,
        gov.write_back_share.load(Ordering::Relaxed),
        rss > max,
        next >= share,
    );
    if wb_next != wb {
        store.set_write_back_bytes(wb_next);
    }
    if next != budget {
        tier.set_budget(usize::try_from(next).unwrap_or(usize::MAX));
        if next < budget {
            crate::allocator::collect();
        }
    }
}

/// The tier's next budget, from its budget and counted `resident` bytes,
/// its `share` of the bound `max`, the process's resident size `rss` and
/// the write-back tier's `dirty` bytes.
///
/// - Over the bound: the dirty keys' bytes go back at the next checkpoint
///   (the write-back budget is 0 meanwhile, [`next_write_back`]), so the
///   tier gives only the rest of the excess: what it holds (or its
///   budget, if less) less that rest, at least 1 MiB; its budget as it is
///   when the dirty bytes cover the excess.
/// - Under it: the budget grows by half the room left below 95% of the
///   bound, up to the share; once the tier holds its share, on past it as
///   far as its contents plus that room (the split's other parts, such as
///   memtables and client buffers, may be using less than it allowed for;
///   when they grow, the bound is crossed and the tier gives the room
///   back).
#[must_use]
pub fn next_budget(
    budget: u64,
    resident: u64,
    share: u64,
    max: u64,
    (rss, dirty): (u64, u64),
) -> u64 {
    if rss > max {
        match (rss - max).saturating_sub(dirty) {
            0 => budget,
            rest => budget.min(resident).saturating_sub(rest).max(MIN_TIER),
        }
    } else {
        let room = (max / 20 * 19).saturating_sub(rss);
        let cap = if resident >= share {
            resident + room
        } else {
            share
        };
        (budget + room / 2).min(cap)
    }
}

/// The write-back tier's next budget, from its budget `now` and its
/// `share`: 0 while the process is `over` the bound; its share again once
/// the memory tier's budget is back at its own share (`tier_at_share`);
/// else as it is.
#[must_use]
pub fn next_write_back(now: u64, share: u64, over: bool, tier_at_share: bool) -> u64 {
    if over {
        0
    } else if tier_at_share {
        share
    } else {
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_adds_up_and_leaves_the_tier_the_rest() {
        let s = Split::of(1 << 30, 64 << 20, 64 << 20, 64 << 20);
        assert_eq!(s.maxmemory, 1 << 30);
        assert_eq!(s.block_cache, 64 << 20);
        assert_eq!(s.memtable, 32 << 20);
        assert!(s.lsm() + s.container_cache + s.write_back + s.tier < s.maxmemory);
        assert!(s.tier > 400 << 20);
        // A small bound shrinks every cache to its share.
        let s = Split::of(128 << 20, 64 << 20, 64 << 20, 64 << 20);
        assert_eq!(s.block_cache, 32 << 20);
        assert_eq!(s.container_cache, 4 << 20);
        assert!(s.tier >= MIN_TIER);
        assert!(Split::of(0, 1, 1, 1).maxmemory >= 64 << 20);
    }

    #[test]
    fn policies_take_redis_names() {
        assert_eq!(policy("allkeys-lfu"), Some(Policy::Lfu));
        assert_eq!(policy("noeviction"), Some(Policy::Lru));
        assert_eq!(policy("volatile-random"), Some(Policy::Random));
        assert_eq!(policy("lru"), None);
    }

    #[test]
    fn the_governor_shrinks_the_tier_over_the_bound_and_regrows_it() {
        const M: u64 = 1 << 20;
        // (budget, resident, rss) with a 50 MiB share of a 100 MiB bound
        // and no dirty bytes, and the next budget.
        let next = |budget, resident, rss| next_budget(budget, resident, 50 * M, 100 * M, (rss, 0));
        for (budget, resident, rss, want, why) in [
            (
                50 * M,
                50 * M,
                110 * M,
                40 * M,
                "over by 10 MiB with 50 resident: evict 10",
            ),
            (
                50 * M,
                20 * M,
                110 * M,
                10 * M,
                "an unfilled budget shrinks from what it holds",
            ),
            (50 * M, 50 * M, 500 * M, MIN_TIER, "never below the floor"),
            (
                50 * M,
                50 * M,
                80 * M,
                57 * M + M / 2,
                "past the share while the tier fills",
            ),
            (
                50 * M,
                10 * M,
                80 * M,
                50 * M,
                "not past it while the tier has room",
            ),
            (50 * M, 50 * M, 96 * M, 50 * M, "not past it near the bound"),
        ] {
            assert_eq!(next(budget, resident, rss), want, "{why}");
        }
        // Under it: back up to the share, in steps of half the room.
        let mut b = MIN_TIER;
        for _ in 0..40 {
            b = next(b, b.min(30 * M), 60 * M);
        }
        assert_eq!(b, 50 * M);
    }

    #[test]
    fn the_write_back_budget_gives_way_first_and_comes_back_last() {
        const M: u64 = 1 << 20;
        assert_eq!(next_write_back(4 * M, 4 * M, true, true), 0);
        assert_eq!(next_write_back(0, 4 * M, false, false), 0);
        assert_eq!(next_write_back(0, 4 * M, false, true), 4 * M);
        assert_eq!(next_write_back(4 * M, 4 * M, false, false), 4 * M);
    }

    #[test]
    fn the_governor_step_changes_the_store_s_tier() {
        let store = Store::open(roaringd_store::StoreConfig::default()).unwrap();
        let gov = Governor {
            maxmemory: AtomicU64::new(100 << 20),
            tier_share: AtomicU64::new(50 << 20),
            write_back_share: AtomicU64::new(3 << 20),
        };
        store.tier().set_budget(50 << 20);
        store.set_write_back_bytes(3 << 20);
        govern(&store, &gov, 500 << 20);
        assert_eq!(store.tier().budget(), MIN_TIER as usize);
        assert_eq!(store.write_back_bytes(), 0);
        for i in 0..40 {
            govern(&store, &gov, 60 << 20);
            if store.tier().budget() < 50 << 20 {
                assert_eq!(store.write_back_bytes(), 0, "step {i}");
            }
        }
        assert_eq!(store.tier().budget(), 50 << 20);
        assert_eq!(store.write_back_bytes(), 3 << 20);
    }

    /// Over the bound by less than the dirty keys hold: the write-back
    /// tier gives way and the memory tier keeps its budget.
    #[test]
    fn dirty_keys_take_the_excess_before_the_tier() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(roaringd_store::StoreConfig {
            dir: Some(dir.path().to_path_buf()),
            ..roaringd_store::StoreConfig::default()
        })
        .unwrap();
        store.set_write_back_bytes(64 << 20);
        let mut t = store.begin_keep_dirty(&[(0, b"k")]);
        t.tr_setbits(0, b"k", &(0..3000).map(|i| i * 3).collect::<Vec<_>>())
            .unwrap();
        t.commit().unwrap();
        for i in 0..50u32 {
            let mut t = store.begin_keep_dirty(&[(0, b"k")]);
            t.tr_setbit(0, b"k", i * 3 + 1, true).unwrap();
            t.commit().unwrap();
        }
        let dirty = store.write_back_stats().1;
        assert!(dirty > 1000, "{dirty}");
        let gov = Governor {
            maxmemory: AtomicU64::new(100 << 20),
            tier_share: AtomicU64::new(50 << 20),
            write_back_share: AtomicU64::new(64 << 20),
        };
        store.tier().set_budget(50 << 20);
        govern(&store, &gov, (100 << 20) + dirty / 2);
        assert_eq!(store.tier().budget(), 50 << 20);
        assert_eq!(store.write_back_bytes(), 0);
    }
}
