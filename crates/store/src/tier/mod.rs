//! The memory tier: recently used keys held whole in process memory over
//! the LSM store (the capacity tier), in the stored bytes.
//!
//! [`TieredKv`] is a [`Kv`] over another `Kv`. It groups entries by user
//! key: the key's `meta` entry and its `data` entries (every version under
//! `db | len | key`) form one resident unit, keyed by the meta key.
//!
//! - **Reads.** A point read of a resident key's meta, or of a data entry
//!   of a resident key whose data is complete (or known in part), is
//!   answered from memory; a range scan within one complete key is too,
//!   in chunks that grow from 16 entries (so a scan that stops early copies
//!   little), and a visit ([`KvRead::range_visit`]) borrows the entries in
//!   place.
//!   A miss reads the LSM store and fills the tier: the meta alone, or the
//!   key's whole data when it is at most [`Tier::load_limit`] bytes (else
//!   the key stays partial: its point reads are kept, positive and
//!   negative, and its scans go to the LSM store). Scans of the `meta`
//!   space (KEYS, SCAN) and of the `expiry` space always read the LSM
//!   store, which holds everything.
//! - **Writes** are write-through: a batch goes to the engine below first
//!   (the LSM store's journal is the one log; durability as the batch
//!   asks; a `Lazy` batch may wait in the engine's queue, `kv::behind`,
//!   whose reads wait for the queued writes of the key they read), then
//!   updates the keys it names that are resident; a meta write of a key
//!   not resident makes it resident (its meta). So the engine always
//!   holds every key, and **eviction** only drops memory: it never writes
//!   and never loses data.
//! - **Budget.** Counted bytes (entries plus a fixed overhead per key and
//!   per entry, `entry::KEY_OVERHEAD`, `entry::ELEMENT_OVERHEAD`) stay
//!   at most the budget: past it, keys are evicted by the policy, choosing
//!   each victim among `samples` random resident keys as Redis does
//!   (sampled LRU, LFU with Redis's logarithmic counter, or random).
//! - **Races.** Every write of a key bumps its shard's generation; a miss
//!   fills only if the generation did not move while it read the LSM
//!   store, so a fill never installs a state older than a write that
//!   finished before it.

mod data_map;
pub(crate) mod entry;
mod head_tree;

use crate::error::Result;
use crate::keys;
use crate::kv::{
    bound_slice, prefix_end, Durability, Kv, KvIter, KvRead, KvStats, Op, Space, WholeEntry,
    WriteBatch,
};
use data_map::DataMap;
use entry::{suffix_version, Complete, Entry, Hashed, PrefetchStep, Shard};
use parking_lot::Mutex;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// Number of shards (a power of two).
const SHARDS: usize = 256;

/// The shard of a key of hash `h`: bits 48-55, which the shard's table
/// does not use (its buckets take the low bits, its tags the top seven).
/// Bits the table also used would be the same for every key of a shard,
/// and its keys would crowd the few buckets those bits allow.
fn shard_index(h: u64) -> usize {
    (h >> 48) as usize & (SHARDS - 1)
}

/// How the tier picks the key to evict (`maxmemory-policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The least recently used of the sampled keys.
    Lru,
    /// The least frequently used of the sampled keys (Redis's counter).
    Lfu,
    /// A random key.
    Random,
}

impl Policy {
    fn code(self) -> u8 {
        match self {
            Policy::Lru => 0,
            Policy::Lfu => 1,
            Policy::Random => 2,
        }
    }

    fn from_code(c: u8) -> Self {
        match c {
            1 => Policy::Lfu,
            2 => Policy::Random,
            _ => Policy::Lru,
        }
    }
}

/// Counters of the tier, for INFO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierStats {
    /// Counted bytes of the resident keys.
    pub resident_bytes: u64,
    /// Resident keys.
    pub resident_keys: u64,
    /// The budget in bytes.
    pub budget_bytes: u64,
    /// Reads answered from memory.
    pub hits: u64,
    /// Reads that went to the LSM store.
    pub misses: u64,
    /// Keys evicted (dropped from memory; the LSM store has them).
    pub evictions: u64,
    /// Counted bytes of the evicted keys.
    pub evicted_bytes: u64,
    /// Bytes of the batches written through to the LSM store.
    pub written_bytes: u64,
}

/// The tier's state, shared with the store (budget, policy, stats).
pub struct Tier {
    shards: Box<[Mutex<Shard>]>,
    resident: AtomicUsize,
    keys: AtomicUsize,
    budget: AtomicUsize,
    policy: AtomicU8,
    samples: AtomicUsize,
    evictions: AtomicU64,
    evicted_bytes: AtomicU64,
    written_bytes: AtomicU64,
    /// [`crate::clock::coarse_millis`] at open.
    started: u64,
    /// Where each thread's random draws start (`Tier::random`).
    seed: AtomicU64,
    /// Every key the LSM store has is resident: set when the store opened
    /// without keys, cleared by the first eviction or clear. While it
    /// holds, a key the tier lacks does not exist, so nothing is gained by
    /// reading it in ahead of a command (`Kv::is_resident`).
    holds_all: AtomicBool,
}

impl Tier {
    /// A tier of `budget` bytes with sampled LRU over 5 samples.
    #[must_use]
    pub fn new(budget: usize) -> Self {
        Tier {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            resident: AtomicUsize::new(0),
            keys: AtomicUsize::new(0),
            budget: AtomicUsize::new(budget),
            policy: AtomicU8::new(Policy::Lru.code()),
            samples: AtomicUsize::new(5),
            evictions: AtomicU64::new(0),
            evicted_bytes: AtomicU64::new(0),
            written_bytes: AtomicU64::new(0),
            started: crate::clock::coarse_millis(),
            seed: AtomicU64::new(0x9E37_79B9_7F4A_7C15),
            holds_all: AtomicBool::new(false),
        }
    }

    /// Sets the budget; shrinking evicts at once.
    pub fn set_budget(&self, bytes: usize) {
        self.budget.store(bytes, Ordering::Relaxed);
        self.evict_to_budget();
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget.load(Ordering::Relaxed)
    }

    /// Sets the eviction policy and the number of keys sampled per victim
    /// (at least 1).
    pub fn set_policy(&self, policy: Policy, samples: usize) {
        self.policy.store(policy.code(), Ordering::Relaxed);
        self.samples.store(samples.max(1), Ordering::Relaxed);
    }

    /// Largest key (counted bytes of its data) loaded whole on a miss: a
    /// 64th of the budget, at most 8 MiB, at least 64 KiB.
    pub fn load_limit(&self) -> usize {
        (self.budget() / 64).clamp(64 << 10, 8 << 20)
    }

    /// Counters for INFO.
    pub fn stats(&self) -> TierStats {
        let (hits, misses) = self.shards.iter().fold((0, 0), |(h, m), s| {
            let s = s.lock();
            (h + s.hits, m + s.misses)
        });
        TierStats {
            resident_bytes: self.resident.load(Ordering::Relaxed) as u64,
            resident_keys: self.keys.load(Ordering::Relaxed) as u64,
            budget_bytes: self.budget() as u64,
            hits,
            misses,
            evictions: self.evictions.load(Ordering::Relaxed),
            evicted_bytes: self.evicted_bytes.load(Ordering::Relaxed),
            written_bytes: self.written_bytes.load(Ordering::Relaxed),
        }
    }

    /// Declares that the LSM store has no keys the tier lacks (the store
    /// opened empty); the first eviction or clear ends it.
    pub fn set_holds_all(&self) {
        self.holds_all.store(true, Ordering::Relaxed);
    }

    /// True when user key `mk` (meta key), which the caller found not
    /// resident under its shard's lock, does not exist: the tier holds
    /// every key (an eviction, which ends that, clears the flag under the
    /// victim's shard lock). Internal records existed before the tier and
    /// are never known absent.
    fn knows_absent(&self, mk: &[u8]) -> bool {
        self.holds_all.load(Ordering::Relaxed) && !is_internal(mk)
    }

    /// Drops every resident key (a cache decision: nothing is lost).
    pub fn clear(&self) {
        self.holds_all.store(false, Ordering::Relaxed);
        for s in &*self.shards {
            let mut s = s.lock();
            s.gen += 1;
            let n = s.len();
            let bytes = s.clear();
            self.resident.fetch_sub(bytes, Ordering::Relaxed);
            self.keys.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// The shard of key `k`.
    fn shard_of(&self, k: Hashed<'_>) -> &Mutex<Shard> {
        &self.shards[shard_index(k.hash)]
    }

    fn tick(&self) -> u32 {
        // Milliseconds since open, on the coarse clock (every access of a
        // resident key reads it); wraps after 49 days, compared wrapping.
        crate::clock::coarse_millis().wrapping_sub(self.started) as u32
    }

    fn random(&self) -> u64 {
        // splitmix64 over a counter of the calling thread's own (no shared
        // write on a read's path), started from the shared one: cheap, and
        // good enough to pick shards and buckets and to count accesses.
        thread_local! {
            static DRAWN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        }
        const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut z = DRAWN.with(|d| {
            let mut at = d.get();
            if at == 0 {
                at = self.seed.fetch_add(GAMMA << 20, Ordering::Relaxed) | 1;
            }
            d.set(at.wrapping_add(GAMMA));
            at.wrapping_add(GAMMA)
        });
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Records an access to `e` (LRU time and LFU counter).
    fn touch(&self, e: &mut Entry) {
        e.last = self.tick();
        // Redis's LFULogIncr with lfu-log-factor 10.
        if e.freq < 255 {
            let base = f64::from(e.freq.saturating_sub(5));
            let p = 1.0 / (base * 10.0 + 1.0);
            let r = (self.random() >> 11) as f64 / (1u64 << 53) as f64;
            if r < p {
                e.freq += 1;
            }
        }
    }

    fn account(&self, delta: isize) {
        if delta >= 0 {
            self.resident.fetch_add(delta as usize, Ordering::Relaxed);
        } else {
            self.resident
                .fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
        }
    }

    /// Evicts keys until the counted bytes are within the budget.
    fn evict_to_budget(&self) {
        let mut rounds = 0usize;
        while self.resident.load(Ordering::Relaxed) > self.budget()
            && self.keys.load(Ordering::Relaxed) > 0
        {
            rounds += 1;
            if rounds > 1 << 20 {
                break; // only racing inserts could keep it going
            }
            if let Some(victim) = self.pick_victim() {
                let victim = Hashed::new(&victim);
                let mut s = self.shard_of(victim).lock();
                if let Some(bytes) = self.remove_locked(&mut s, victim) {
                    self.holds_all.store(false, Ordering::Relaxed);
                    self.evictions.fetch_add(1, Ordering::Relaxed);
                    self.evicted_bytes
                        .fetch_add(bytes as u64, Ordering::Relaxed);
                }
            }
        }
    }

    /// The best victim of `samples` random resident keys per the policy.
    fn pick_victim(&self) -> Option<Vec<u8>> {
        let policy = Policy::from_code(self.policy.load(Ordering::Relaxed));
        let samples = self.samples.load(Ordering::Relaxed);
        let now = self.tick();
        let mut best: Option<(u64, Vec<u8>)> = None;
        let mut tries = 0;
        let mut taken = 0;
        while taken < samples && tries < samples * 64 {
            tries += 1;
            let r = self.random();
            let s = self.shards[r as usize & (SHARDS - 1)].lock();
            if s.len() == 0 {
                continue;
            }
            let Some(e) = s.sample(r >> 16) else {
                continue;
            };
            taken += 1;
            // Higher score = better victim.
            let score = match policy {
                Policy::Lru => u64::from(now.wrapping_sub(e.last)),
                Policy::Lfu => u64::from(255 - e.freq),
                Policy::Random => 0,
            };
            if best.as_ref().is_none_or(|(b, _)| score > *b) {
                best = Some((score, e.key().to_vec()));
            }
            if policy == Policy::Random {
                break;
            }
        }
        best.map(|(_, k)| k)
    }

    /// Applies `f` to the entry of `tier_key` if the shard's generation is
    /// still `gen`, creating the entry when absent; then keeps the budget.
    fn fill(&self, tier_key: &[u8], gen: u64, f: impl FnOnce(&mut Entry) -> isize) {
        {
            let k = Hashed::new(tier_key);
            let mut s = self.shard_of(k).lock();
            if s.gen != gen {
                return;
            }
            self.update(&mut s, k, true, f);
        }
        self.evict_to_budget();
    }

    /// Drops `tier_key`'s entry from the locked shard `s` (bumping its
    /// generation, so no fill read before lands); returns its counted bytes.
    fn remove_locked(&self, s: &mut Shard, tier_key: Hashed<'_>) -> Option<usize> {
        let bytes = s.remove(tier_key)?;
        s.gen += 1;
        self.resident.fetch_sub(bytes, Ordering::Relaxed);
        self.keys.fetch_sub(1, Ordering::Relaxed);
        Some(bytes)
    }

    /// Runs `f` (which returns the change of the entry's counted bytes) on
    /// the entry of `tier_key` in the locked shard `s`, creating it first
    /// when `create`; keeps the counts.
    fn update(
        &self,
        s: &mut Shard,
        tier_key: Hashed<'_>,
        create: bool,
        f: impl FnOnce(&mut Entry) -> isize,
    ) {
        let (e, created) = if create {
            s.get_or_insert(tier_key)
        } else {
            match s.get_mut(tier_key) {
                Some(e) => (e, false),
                None => return,
            }
        };
        if created {
            self.keys.fetch_add(1, Ordering::Relaxed);
            self.account(e.bytes as isize);
        }
        let delta = f(e);
        e.bytes = e.bytes.saturating_add_signed(delta);
        self.touch(e);
        self.account(delta);
    }
}

/// True for a meta key of the store's internal records (format, epoch,
/// key counts, the write-back tier's `wb` records). The tier holds none of
/// them: they are read at open, not by commands, and the `wb` records take
/// a new name for each absorb (held, the tier filled with them: 140,000
/// entries after a minute of TR.SETBIT on 100,000 keys).
fn is_internal(mk: &[u8]) -> bool {
    mk.starts_with(&keys::INTERNAL_DB.to_be_bytes())
}

/// The one key version a range of data suffixes lies in, if it lies in
/// one: its start names the version and its end stays within it.
fn range_version(start: Bound<&[u8]>, end: Bound<&[u8]>) -> Option<u64> {
    let (Bound::Included(s) | Bound::Excluded(s)) = start else {
        return None;
    };
    let v = suffix_version(s)?;
    let within = match end {
        Bound::Included(e) => suffix_version(e) == Some(v),
        // Or the end of the version's prefix: the next version, exactly.
        Bound::Excluded(e) => {
            suffix_version(e) == Some(v) || v.checked_add(1).is_some_and(|n| e == n.to_be_bytes())
        }
        Bound::Unbounded => false,
    };
    within.then_some(v)
}

/// The tier key (`db | key`) of a `data` key prefix `db | len | key`.
fn tier_key_of_data(prefix: &[u8]) -> keys::KeyBuf {
    let db = u16::from_be_bytes([prefix[0], prefix[1]]);
    keys::KeyBuf::meta(db, &prefix[6..])
}

/// The [`Kv`] with the memory tier in front of another `Kv`. See the
/// module docs.
pub struct TieredKv {
    inner: Box<dyn Kv>,
    tier: Arc<Tier>,
}

impl TieredKv {
    /// `inner` behind `tier`.
    pub fn new(inner: Box<dyn Kv>, tier: Arc<Tier>) -> Self {
        TieredKv { inner, tier }
    }

    /// The tier (budget, policy, stats).
    #[must_use]
    pub fn tier(&self) -> &Arc<Tier> {
        &self.tier
    }

    fn get_meta(&self, mk: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut out = None;
        self.visit_meta(mk, &mut |m| out = Some(m.to_vec()))?;
        Ok(out)
    }

    /// [`KvRead::get_visit`] of a `Meta` key: `f` gets the resident meta
    /// in place (under its shard's lock); on a miss, the meta as read from
    /// the LSM store, which fills the tier.
    fn visit_meta(&self, mk: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        let k = Hashed::new(mk);
        let shard = self.tier.shard_of(k);
        let gen = {
            let mut s = shard.lock();
            match s.get_mut(k) {
                Some(e) => {
                    if let Some(m) = e.meta() {
                        let found = m.map(&mut *f).is_some();
                        // A command reads the data next, if it has any:
                        // its misses overlap the decoding of the meta.
                        e.data.prefetch();
                        self.tier.touch(e);
                        s.hits += 1;
                        return Ok(found);
                    }
                }
                // No LSM read, and no entry kept for the absence.
                None if self.tier.knows_absent(mk) => {
                    s.hits += 1;
                    return Ok(false);
                }
                None => {}
            }
            s.misses += 1;
            s.gen
        };
        let m = self.inner.get(Space::Meta, mk)?;
        self.tier.fill(mk, gen, |e| e.set_meta(m.as_deref()));
        Ok(m.map(|v| f(&v)).is_some())
    }

    fn get_data(&self, key: &[u8], plen: usize) -> Result<Option<Vec<u8>>> {
        let tk = tier_key_of_data(&key[..plen]);
        let suffix = &key[plen..];
        let k = Hashed::new(&tk);
        let shard = self.tier.shard_of(k);
        let (gen, load) = {
            let mut s = shard.lock();
            let gen = s.gen;
            let missed = match s.get_mut(k) {
                Some(e) => {
                    let found = match e.data.get(suffix) {
                        Some(v) => Some(v.as_ref().map(|b| b.to_vec())),
                        None if e.covers(suffix_version(suffix)) => Some(None),
                        None => None,
                    };
                    if let Some(v) = found {
                        self.tier.touch(e);
                        s.hits += 1;
                        return Ok(v);
                    }
                    (gen, !e.too_big)
                }
                None => (gen, true),
            };
            s.misses += 1;
            missed
        };
        if load {
            if let Some(v) = self.load_whole(&tk, &key[..plen], gen, |data| {
                data.get(suffix).cloned().flatten().map(|b| b.to_vec())
            })? {
                return Ok(v);
            }
        }
        let v = self.inner.get(Space::Data, key)?;
        self.tier
            .fill(&tk, gen, |e| e.set_data(suffix, v.as_deref()));
        Ok(v)
    }

    /// Reads every data entry under `prefix` (`db | len | key`) from the
    /// LSM store; when they fit the load limit, installs them as the key's
    /// complete data (if no write raced) and returns `Some(answer(data))`.
    /// `None` when the key is too big (marked so) or the read failed midway.
    fn load_whole<T>(
        &self,
        tk: &[u8],
        prefix: &[u8],
        gen: u64,
        answer: impl FnOnce(&DataMap) -> T,
    ) -> Result<Option<T>> {
        let limit = self.tier.load_limit();
        let mut data = Vec::new();
        let mut bytes = 0usize;
        for item in self.inner.prefix(Space::Data, prefix, false) {
            let (k, v) = item?;
            let suffix = &k[prefix.len()..];
            bytes += Entry::element_bytes(suffix, Some(&v));
            if bytes > limit {
                self.tier.fill(tk, gen, |e| {
                    e.too_big = true;
                    0
                });
                return Ok(None);
            }
            data.push((Box::from(suffix), Some(v.into_boxed_slice())));
        }
        let data = DataMap::from_sorted(data);
        let bytes = bytes + data.overhead();
        let out = answer(&data);
        self.tier.fill(tk, gen, |e| {
            let old = e.data_bytes();
            e.data = data;
            e.set_complete(Complete::All);
            let live = e
                .meta()
                .flatten()
                .and_then(|m| crate::meta::KeyMeta::decode(m).ok());
            let trimmed = live.map_or(0, |m| e.keep_only_version(m.version));
            bytes as isize - old as isize + trimmed
        });
        Ok(Some(out))
    }

    /// A range of `data` within one key, from memory when the key is
    /// resident and complete (loading it whole first when small enough):
    /// the first `limit` entries, as `range` yields them.
    fn range_data(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
        limit: usize,
    ) -> Option<Result<entry::Entries>> {
        self.with_data_range(start, end, |data, prefix, lo, hi| {
            entry::collect_range(data, prefix, lo, hi, reverse, limit)
        })
    }

    /// `answer(data, prefix, start, end)` over the map of the one key a
    /// `data` range lies in, with the range's bounds as suffixes of
    /// `prefix` (`db | len | key`), when the tier holds what the range
    /// covers (loading the key whole first when small enough). `None` when
    /// the range is not within one key or the key is too big: the caller
    /// reads the LSM store. The answer runs under the key's shard lock.
    fn with_data_range<T>(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        answer: impl FnOnce(&DataMap, &[u8], Bound<&[u8]>, Bound<&[u8]>) -> T,
    ) -> Option<Result<T>> {
        let (Bound::Included(s) | Bound::Excluded(s)) = start else {
            return None;
        };
        let plen = keys::data_key_prefix_len(s)?;
        let prefix = &s[..plen];
        // The end must stay within the key's prefix.
        let end_suffix: Bound<&[u8]> = match end {
            Bound::Included(e) | Bound::Excluded(e) if e.starts_with(prefix) => match end {
                Bound::Included(_) => Bound::Included(&e[plen..]),
                _ => Bound::Excluded(&e[plen..]),
            },
            Bound::Excluded(e) if prefix_end(prefix).as_deref() == Some(e) => Bound::Unbounded,
            _ => return None,
        };
        let start_suffix = match start {
            Bound::Included(_) => Bound::Included(&s[plen..]),
            _ => Bound::Excluded(&s[plen..]),
        };
        if crate::kv::range_is_empty(start_suffix, end_suffix) {
            return Some(Ok(answer(
                &DataMap::default(),
                prefix,
                start_suffix,
                end_suffix,
            )));
        }
        let tk = tier_key_of_data(prefix);
        let k = Hashed::new(&tk);
        let shard = self.tier.shard_of(k);
        let gen = {
            let mut s = shard.lock();
            let gen = s.gen;
            match s.get_mut(k) {
                Some(e) if e.covers(range_version(start_suffix, end_suffix)) => {
                    let out = answer(&e.data, prefix, start_suffix, end_suffix);
                    self.tier.touch(e);
                    s.hits += 1;
                    return Some(Ok(out));
                }
                Some(e) if e.too_big => return None,
                _ => {}
            }
            s.misses += 1;
            gen
        };
        let loaded = self.load_whole(&tk, prefix, gen, |data| {
            answer(data, prefix, start_suffix, end_suffix)
        });
        match loaded {
            Ok(Some(v)) => Some(Ok(v)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// Updates the resident keys a written batch names (after the LSM
    /// store applied it) and bumps their shards' generations. The writes of
    /// one key are applied under one hold of its shard, so an eviction
    /// cannot fall between them; a key whose meta the batch writes, or that
    /// the batch holds a whole version of, becomes resident.
    fn apply(&self, batch: &WriteBatch) {
        let ops = batch.ops();
        let mut by_key: Vec<(keys::KeyBuf, usize)> = Vec::with_capacity(ops.len());
        for (i, (space, key, _)) in ops.iter().enumerate() {
            match space {
                Space::Meta if is_internal(key) => {}
                Space::Meta => {
                    let tk = match keys::split_meta_key(key) {
                        Ok((db, user)) => keys::KeyBuf::meta(db, user),
                        Err(_) => keys::KeyBuf::Heap(key.clone()),
                    };
                    by_key.push((tk, i));
                }
                Space::Data => {
                    if let Some(plen) = keys::data_key_prefix_len(key) {
                        by_key.push((tier_key_of_data(&key[..plen]), i));
                    }
                }
                Space::Expiry | Space::Log => {}
            }
        }
        by_key.sort_by(|a, b| (*a.0).cmp(&*b.0).then(a.1.cmp(&b.1)));
        let hints = batch.complete_versions();
        let mut at = 0;
        while at < by_key.len() {
            let tk: &[u8] = &by_key[at].0;
            let end = at + by_key[at..].iter().take_while(|(k, _)| **k == *tk).count();
            let hint = hints
                .iter()
                .find(|(mk, _)| mk.as_slice() == tk)
                .map(|h| h.1);
            let last_meta = by_key[at..end]
                .iter()
                .rev()
                .find(|&&(_, i)| ops[i].0 == Space::Meta)
                .map(|&(_, i)| &ops[i].2);
            let k = Hashed::new(tk);
            let mut s = self.tier.shard_of(k).lock();
            s.gen += 1;
            // A key the write deletes keeps no entry (its LSM entries say
            // it is gone): a workload that deletes as much as it writes
            // would otherwise fill the tier with absences.
            if matches!(last_meta, Some(Op::Delete)) {
                self.tier.remove_locked(&mut s, k);
            } else {
                let create = hint.is_some() || last_meta.is_some();
                // A write's entries go to the tier's own heap (`alloc_hint`).
                // A fill's are left where the LSM read allocated them: flagged
                // too, a read-back of 100,000 small bitmap keys held 9.6 bytes
                // of RSS per set bit instead of 8.5 (bench/tier-many-keys).
                let _resident = crate::alloc_hint::Resident::enter();
                self.tier.update(&mut s, k, create, |e| {
                    let mut delta = 0;
                    for &(_, i) in &by_key[at..end] {
                        let (space, key, op) = &ops[i];
                        let value = match op {
                            Op::Put(v) => Some(v.as_slice()),
                            Op::Delete => None,
                        };
                        delta += if *space == Space::Meta {
                            e.set_meta(value)
                        } else {
                            // `db | len | key` is the tier key's bytes plus
                            // the 4-byte length.
                            e.set_data(&key[tk.len() + 4..], value)
                        };
                    }
                    if let Some(v) = hint {
                        delta += e.keep_only_version(v);
                        e.set_complete(Complete::Version(v));
                    }
                    delta
                });
            }
            drop(s);
            at = end;
        }
    }
}

/// Entries of the first chunk of a [`ChunkedRange`].
const FIRST_CHUNK: usize = 16;
/// Most entries of one chunk.
const MAX_CHUNK: usize = 1024;

/// A `data` range within one resident key, read from the tier in chunks
/// (16 entries, then four times more each time up to 1,024), each under one
/// hold of the key's shard: a scan that stops early (SSCAN's COUNT, a
/// random pick, the first page of a set) copies what it reads, not the
/// whole key. Each chunk is the tier's state when it is read (a command's
/// scan holds the key's lock, so no write falls between two of its
/// chunks). When the tier cannot answer a chunk (the key was evicted
/// meanwhile), the rest comes from the LSM store.
struct ChunkedRange<'a> {
    kv: &'a TieredKv,
    /// The bounds still to read: the last key handed out moves one of them.
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    reverse: bool,
    buf: std::vec::IntoIter<(Vec<u8>, Vec<u8>)>,
    /// The size of the last chunk asked for; a shorter one was the last.
    chunk: usize,
    more: bool,
    rest: Option<KvIter<'a>>,
}

impl<'a> ChunkedRange<'a> {
    fn new(
        kv: &'a TieredKv,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
        first: entry::Entries,
        chunk: usize,
    ) -> Self {
        ChunkedRange {
            kv,
            start: start.map(<[u8]>::to_vec),
            end: end.map(<[u8]>::to_vec),
            reverse,
            more: first.len() >= chunk,
            buf: first.into_iter(),
            chunk,
            rest: None,
        }
    }
}

impl Iterator for ChunkedRange<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(rest) = &mut self.rest {
            return rest.next();
        }
        if let Some(e) = self.buf.next() {
            let past = Bound::Excluded(e.0.clone());
            if self.reverse {
                self.end = past;
            } else {
                self.start = past;
            }
            return Some(Ok(e));
        }
        if !self.more {
            return None;
        }
        self.chunk = (self.chunk * 4).min(MAX_CHUNK);
        let (start, end) = (bound_slice(&self.start), bound_slice(&self.end));
        match self.kv.range_data(start, end, self.reverse, self.chunk) {
            Some(Ok(v)) => {
                self.more = v.len() >= self.chunk;
                self.buf = v.into_iter();
                self.next()
            }
            Some(Err(e)) => {
                self.more = false;
                Some(Err(e))
            }
            None => {
                let mut rest = self.kv.inner.range(Space::Data, start, end, self.reverse);
                let first = rest.next();
                self.rest = Some(rest);
                first
            }
        }
    }
}

impl KvRead for TieredKv {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match space {
            Space::Meta if is_internal(key) => self.inner.get(space, key),
            Space::Meta => self.get_meta(key),
            Space::Data => match keys::data_key_prefix_len(key) {
                Some(plen) => self.get_data(key, plen),
                None => self.inner.get(space, key),
            },
            Space::Expiry | Space::Log => self.inner.get(space, key),
        }
    }

    fn get_visit(&self, space: Space, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        if space == Space::Meta && !is_internal(key) {
            return self.visit_meta(key, f);
        }
        Ok(self.get(space, key)?.map(|v| f(&v)).is_some())
    }

    fn range(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> KvIter<'_> {
        if space == Space::Data {
            match self.range_data(start, end, reverse, FIRST_CHUNK) {
                Some(Ok(v)) => {
                    return Box::new(ChunkedRange::new(self, start, end, reverse, v, FIRST_CHUNK))
                }
                Some(Err(e)) => return Box::new(std::iter::once(Err(e))),
                None => {}
            }
        }
        self.inner.range(space, start, end, reverse)
    }

    fn range_first(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if space == Space::Data {
            match self.range_data(start, end, reverse, 1) {
                Some(Ok(v)) => return Ok(v.into_iter().next()),
                Some(Err(e)) => return Err(e),
                None => {}
            }
        }
        self.inner.range_first(space, start, end, reverse)
    }

    fn range_visit(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        if space == Space::Data {
            // The first entry by one seek (most visits stop there), the
            // rest by the map's iterator; all under one hold of the shard.
            let visited = self.with_data_range(start, end, |data, prefix, lo, hi| {
                entry::visit_present(data, lo, hi, &mut |k, v| {
                    f(&keys::KeyBuf::from_parts(&[prefix, k]), v)
                });
            });
            match visited {
                Some(Ok(())) => return Ok(()),
                Some(Err(e)) => return Err(e),
                None => {}
            }
        }
        self.inner.range_visit(space, start, end, f)
    }

    fn version_visit(
        &self,
        (db, key, version): (u16, &[u8], u64),
        from: Bound<&[u8]>,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        // A resident version: found by its meta key, its entries' suffixes
        // (`version | subkey`) bounded on the stack.
        if let Some(next) = version.checked_add(1) {
            let mk = keys::KeyBuf::meta(db, key);
            let k = Hashed::new(&mk);
            let at = version.to_be_bytes();
            let lo_suffix = keys::KeyBuf::from_parts(&[&at, crate::kv::bound_subkey(from)]);
            let lo = crate::kv::bound_like(from, &lo_suffix);
            let hi_suffix = next.to_be_bytes();
            let mut s = self.tier.shard_of(k).lock();
            if let Some(e) = s.get_mut(k).filter(|e| e.covers(Some(version))) {
                entry::visit_present(&e.data, lo, Bound::Excluded(&hi_suffix), &mut |k, v| {
                    f(&k[at.len()..], v)
                });
                self.tier.touch(e);
                s.hits += 1;
                return Ok(());
            }
        }
        crate::kv::version_visit_by_range(self, (db, key, version), from, f)
    }
}

impl Kv for TieredKv {
    fn write(&self, batch: WriteBatch, durability: Durability) -> Result<()> {
        self.write_shared(&Arc::new(batch), durability)
    }

    fn write_shared(&self, batch: &Arc<WriteBatch>, durability: Durability) -> Result<()> {
        batch.check_keys()?;
        let bytes = batch.bytes();
        // The engine first (it orders the batch for every later read of
        // the keys it names, `kv::behind`), then the resident keys.
        self.inner.write_shared(batch, durability)?;
        self.tier
            .written_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        self.apply(batch);
        self.tier.evict_to_budget();
        Ok(())
    }

    fn settle(&self) -> Result<()> {
        self.inner.settle()
    }

    fn snapshot(&self) -> Box<dyn KvRead> {
        self.inner.snapshot()
    }

    fn persist(&self) -> Result<()> {
        self.inner.persist()
    }

    fn write_failure(&self) -> Option<String> {
        self.inner.write_failure()
    }

    fn flush_buffers(&self) -> Result<()> {
        self.inner.flush_buffers()
    }

    fn release_when_idle(&self) -> Result<()> {
        self.inner.release_when_idle()
    }

    fn compact(&self) -> Result<()> {
        // Compaction drops stale data entries the tier may hold; they are
        // unreachable (no meta names their version), so keeping them is
        // harmless, but the memory is better spent: start over.
        self.inner.compact()?;
        self.tier.clear();
        Ok(())
    }

    fn stats(&self) -> KvStats {
        self.inner.stats()
    }

    fn is_resident(&self, mk: &[u8]) -> bool {
        let k = Hashed::new(mk);
        let mut s = self.tier.shard_of(k).lock();
        match s.get_mut(k) {
            Some(e) => {
                e.prefetch();
                e.is_warm()
            }
            None => self.tier.knows_absent(mk),
        }
    }

    fn prefetch(&self, mks: &[&[u8]]) {
        // Step by step over all the keys (`PrefetchStep`): a key's entry,
        // then its head, then its data, so that each step's misses
        // overlap across the keys.
        let hashed: Vec<Hashed<'_>> = mks.iter().map(|mk| Hashed::new(mk)).collect();
        for step in [PrefetchStep::Bucket, PrefetchStep::Head, PrefetchStep::Data] {
            for &k in &hashed {
                self.tier.shard_of(k).lock().prefetch(k, step);
            }
        }
    }

    fn prefetch_seeks(&self, seeks: &[(&[u8], &[u8])]) {
        // Each run of seeks of one shard (commands on one key) under one
        // hold of its lock, so that the steps keep what they found.
        let mut all: Vec<(Hashed<'_>, &[u8])> = Vec::with_capacity(seeks.len());
        for &(mk, element) in seeks {
            // Hashed once per run of seeks on one key.
            let k = match all.last() {
                Some(&(last, _)) if last.key == mk => last,
                _ => Hashed::new(mk),
            };
            all.push((k, element));
        }
        for run in all.chunk_by(|a, b| shard_index(a.0.hash) == shard_index(b.0.hash)) {
            self.tier.shard_of(run[0].0).lock().prefetch_seeks(run);
        }
    }

    fn warm(&self, mk: &[u8], whole: &dyn Fn(&[u8]) -> Option<WholeEntry>) -> Result<()> {
        let Some(meta) = self.get_meta(mk)? else {
            return Ok(());
        };
        if !crate::meta::KeyMeta::bytes_have_data(&meta) {
            return Ok(());
        }
        let gen = {
            let k = Hashed::new(mk);
            let mut s = self.tier.shard_of(k).lock();
            match s.get_mut(k) {
                Some(e) if e.is_warm() => return Ok(()),
                _ => s.gen,
            }
        };
        let (db, user) = keys::split_meta_key(mk)?;
        if let Some(w) = whole(&meta) {
            let dk = keys::data_key(db, user, w.version, &w.subkey);
            if self.warm_by_point(mk, &dk, w.version, &*w.holds_all)? {
                return Ok(());
            }
        }
        self.load_whole(mk, &keys::key_data_prefix(db, user), gen, |_| ())?;
        Ok(())
    }
}

impl TieredKv {
    /// The point read of [`Kv::warm`]: reads `data_key` (an entry of
    /// version `version` of the key whose `Meta` key is `mk`) and, when
    /// `whole` says its value is all of that version's data, installs it
    /// as that version's complete data. Returns true when the key is
    /// resident after it; false, with nothing installed, when the entry
    /// is absent or not whole, the meta no longer names `version`, or a
    /// write to the key raced the read.
    ///
    /// # Errors
    /// `Io` or `Corrupt` from the read; nothing is installed then.
    pub(crate) fn warm_by_point(
        &self,
        mk: &[u8],
        data_key: &[u8],
        version: u64,
        whole: &dyn Fn(&[u8]) -> bool,
    ) -> Result<bool> {
        // A data key is the meta key's `db | key` with the key's length
        // between them, then `version | subkey`.
        let Some(suffix) = data_key.get(mk.len() + 4..) else {
            return Ok(false);
        };
        let gen = {
            let k = Hashed::new(mk);
            let mut s = self.tier.shard_of(k).lock();
            match s.get_mut(k) {
                Some(e) if e.is_warm() => return Ok(true),
                _ => s.gen,
            }
        };
        let Some(v) = self.inner.get(Space::Data, data_key)? else {
            return Ok(false);
        };
        if !whole(&v) {
            return Ok(false);
        }
        let mut done = false;
        self.tier.fill(mk, gen, |e| {
            let named = e
                .meta()
                .flatten()
                .and_then(|m| crate::meta::KeyMeta::decode(m).ok())
                .is_some_and(|m| m.version == version);
            if !named || e.complete() != Complete::No {
                return 0;
            }
            let bytes = e.set_data(suffix, Some(&v));
            e.set_complete(Complete::Version(version));
            done = true;
            bytes
        });
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::mem::MemKv;

    /// A `Kv` that counts the reads reaching it (and, in its third field,
    /// the scans among them).
    struct Counting(MemKv, Arc<AtomicU64>, Arc<AtomicU64>);

    impl KvRead for Counting {
        fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.get(space, key)
        }

        fn range(
            &self,
            space: Space,
            start: Bound<&[u8]>,
            end: Bound<&[u8]>,
            reverse: bool,
        ) -> KvIter<'_> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.2.fetch_add(1, Ordering::Relaxed);
            self.0.range(space, start, end, reverse)
        }
    }

    impl Kv for Counting {
        fn write(&self, batch: WriteBatch, durability: Durability) -> Result<()> {
            self.0.write(batch, durability)
        }
        fn snapshot(&self) -> Box<dyn KvRead> {
            self.0.snapshot()
        }
        fn persist(&self) -> Result<()> {
            Ok(())
        }
        fn compact(&self) -> Result<()> {
            Ok(())
        }
        fn stats(&self) -> KvStats {
            KvStats::default()
        }
    }

    fn tiered(budget: usize) -> (TieredKv, Arc<AtomicU64>) {
        let (kv, reads, _) = tiered_counting_scans(budget);
        (kv, reads)
    }

    /// As [`tiered`], with the count of scans apart.
    fn tiered_counting_scans(budget: usize) -> (TieredKv, Arc<AtomicU64>, Arc<AtomicU64>) {
        let (reads, scans) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let inner = Counting(MemKv::new(None), Arc::clone(&reads), Arc::clone(&scans));
        (
            TieredKv::new(Box::new(inner), Arc::new(Tier::new(budget))),
            reads,
            scans,
        )
    }

    fn key_meta(version: u64, summary: crate::meta::Summary) -> crate::meta::KeyMeta {
        crate::meta::KeyMeta {
            version,
            expire_at_ms: 0,
            big: false,
            noint: false,
            summary,
        }
    }

    /// 200 keys of 40-byte metas: far more than a 4 KiB tier holds.
    fn put_200_keys(kv: &TieredKv) {
        for i in 0..200u32 {
            put(
                kv,
                Space::Meta,
                &keys::meta_key(0, &i.to_be_bytes()),
                &[1; 40],
            );
        }
    }

    fn put(kv: &TieredKv, space: Space, k: &[u8], v: &[u8]) {
        let mut b = WriteBatch::new();
        b.put(space, k.to_vec(), v.to_vec());
        kv.write(b, Durability::Lazy).unwrap();
    }

    #[test]
    fn hot_keys_are_read_from_memory_only() {
        let (kv, reads) = tiered(1 << 20);
        let mk = keys::meta_key(0, b"k");
        put(&kv, Space::Meta, &mk, b"meta");
        for sub in 0u8..10 {
            put(
                &kv,
                Space::Data,
                &keys::data_key(0, b"k", 7, &[sub]),
                &[sub],
            );
        }
        // The meta write made the key resident; its data loads on first use.
        assert_eq!(kv.get(Space::Meta, &mk).unwrap(), Some(b"meta".to_vec()));
        assert_eq!(reads.load(Ordering::Relaxed), 0);
        // Entries written are known; a scan loads the key whole once.
        let dk = keys::data_key(0, b"k", 7, &[3]);
        assert_eq!(kv.get(Space::Data, &dk).unwrap(), Some(vec![3]));
        assert_eq!(reads.load(Ordering::Relaxed), 0);
        let prefix = keys::data_prefix(0, b"k", 7);
        let all: Vec<_> = kv.prefix(Space::Data, &prefix, true).collect();
        let after_load = reads.load(Ordering::Relaxed);
        assert_eq!(after_load, 1);
        assert_eq!(all.len(), 10);
        assert_eq!(all[0].as_ref().unwrap().1, vec![9]);
        assert_eq!(
            kv.get(Space::Data, &keys::data_key(0, b"k", 7, &[99]))
                .unwrap(),
            None
        );
        // A write to a resident key updates it in place.
        put(&kv, Space::Data, &keys::data_key(0, b"k", 7, &[42]), b"x");
        assert_eq!(kv.prefix(Space::Data, &prefix, false).count(), 11);
        assert_eq!(reads.load(Ordering::Relaxed), after_load);
        let st = kv.tier().stats();
        assert_eq!(st.resident_keys, 1);
        assert!(st.hits >= 4);
    }

    /// The keys of one shard spread over its table's buckets: the bits that
    /// pick the shard are not bits that place a key in the table.
    #[test]
    fn a_shards_keys_spread_over_its_table() {
        let mut low = std::collections::BTreeSet::new();
        for i in 0..200_000u32 {
            let h = Hashed::new(&keys::meta_key(0, format!("foo-{i}").as_bytes())).hash;
            if shard_index(h) == 0 {
                // The bucket bits of a table of up to 4,096 buckets.
                low.insert(h & 0xFFF);
            }
        }
        // ~780 keys over 4,096 values: ~710 distinct if random (688 here);
        // with the shard's bits among them, 128.
        assert!(low.len() > 500, "{} distinct bucket positions", low.len());
    }

    /// A prefetch is a hint: over resident keys, absent ones and one key
    /// twice, it reads nothing from the LSM store and changes nothing
    /// (not even the hit counts), whatever index candidates its first
    /// steps guess.
    #[test]
    fn a_prefetch_of_many_keys_reads_and_changes_nothing() {
        let (kv, reads) = tiered(1 << 20);
        let mks: Vec<Vec<u8>> = (0..2000u32)
            .map(|i| keys::meta_key(0, &i.to_be_bytes()))
            .collect();
        for (i, mk) in mks.iter().enumerate().step_by(2) {
            put(&kv, Space::Meta, mk, b"meta");
            put(
                &kv,
                Space::Data,
                &keys::data_key(0, &(i as u32).to_be_bytes(), 1, b"a"),
                b"x",
            );
        }
        let before = kv.tier().stats();
        let reads_before = reads.load(Ordering::Relaxed);
        let mut asked: Vec<&[u8]> = mks.iter().map(Vec::as_slice).collect();
        asked.push(&mks[0]);
        asked.push(b"");
        kv.prefetch(&asked);
        kv.prefetch(&[]);
        assert_eq!(reads.load(Ordering::Relaxed), reads_before);
        let after = kv.tier().stats();
        assert_eq!(
            (after.resident_keys, after.resident_bytes),
            (before.resident_keys, before.resident_bytes)
        );
        assert_eq!((after.hits, after.misses), (before.hits, before.misses));
        assert_eq!(
            kv.get(Space::Meta, &mks[0]).unwrap(),
            Some(b"meta".to_vec())
        );
    }

    #[test]
    fn a_batch_holding_a_whole_new_version_makes_it_complete() {
        let (kv, reads) = tiered(1 << 20);
        let mut meta = key_meta(42, crate::meta::Summary::Set { card: 2 });
        let mk = keys::meta_key(0, b"s");
        let mut b = WriteBatch::new();
        b.put(Space::Meta, mk.clone(), meta.encode());
        for m in [b"a", b"b"] {
            b.put(Space::Data, keys::data_key(0, b"s", 42, m), Vec::new());
        }
        b.note_complete(mk.clone(), 42);
        kv.write(b, Durability::Lazy).unwrap();
        assert_eq!(
            kv.get(Space::Data, &keys::data_key(0, b"s", 42, b"c"))
                .unwrap(),
            None
        );
        let prefix = keys::data_prefix(0, b"s", 42);
        assert_eq!(kv.prefix(Space::Data, &prefix, false).count(), 2);
        assert_eq!(reads.load(Ordering::Relaxed), 0);
        // A new version (the key replaced) drops the old one's entries.
        meta.version = 43;
        put(&kv, Space::Meta, &mk, &meta.encode());
        let k = Hashed::new(&mk);
        let mut s = kv.tier().shard_of(k).lock();
        assert!(s.get_mut(k).unwrap().data.is_empty());
    }

    /// Keys written and deleted again leave nothing resident, nor do
    /// internal records; a deleted key still reads absent, and the counts
    /// match the shards. (A read that misses may still keep an absence: a
    /// cache decision of the reader.)
    #[test]
    fn a_deleted_key_keeps_no_entry() {
        let (kv, _) = tiered(1 << 20);
        let live = keys::meta_key(0, b"live");
        put(&kv, Space::Meta, &live, b"meta");
        for i in 0..100u32 {
            let mk = keys::meta_key(0, &i.to_be_bytes());
            put(&kv, Space::Meta, &mk, b"meta");
            put(
                &kv,
                Space::Data,
                &keys::data_key(0, &i.to_be_bytes(), 1, b"a"),
                b"x",
            );
            let mut b = WriteBatch::new();
            b.delete(Space::Meta, mk.clone());
            b.delete(Space::Data, keys::data_key(0, &i.to_be_bytes(), 1, b"a"));
            kv.write(b, Durability::Lazy).unwrap();
        }
        // Internal records are never resident.
        put(
            &kv,
            Space::Meta,
            &keys::meta_key(keys::INTERNAL_DB, b"wb:1"),
            b"x",
        );
        assert_eq!(
            kv.get(Space::Meta, &keys::meta_key(keys::INTERNAL_DB, b"wb:1"))
                .unwrap(),
            Some(b"x".to_vec())
        );
        // A delete of a key never written creates nothing either.
        let mut b = WriteBatch::new();
        b.delete(Space::Meta, keys::meta_key(0, b"never"));
        kv.write(b, Durability::Lazy).unwrap();
        let st = kv.tier().stats();
        assert_eq!(st.resident_keys, 1);
        let shard_keys: usize = kv.tier().shards.iter().map(|s| s.lock().len()).sum();
        assert_eq!(shard_keys, 1);
        assert_eq!(kv.get(Space::Meta, &live).unwrap(), Some(b"meta".to_vec()));
        let gone = keys::meta_key(0, &7u32.to_be_bytes());
        assert_eq!(kv.get(Space::Meta, &gone).unwrap(), None);
    }

    #[test]
    fn eviction_keeps_the_budget_and_loses_nothing() {
        let (kv, _) = tiered(4 << 10);
        put_200_keys(&kv);
        let st = kv.tier().stats();
        assert!(st.resident_bytes <= 4 << 10);
        assert!(st.evictions > 0);
        for i in 0..200u32 {
            let mk = keys::meta_key(0, &i.to_be_bytes());
            assert_eq!(kv.get(Space::Meta, &mk).unwrap(), Some(vec![1; 40]));
        }
    }

    #[test]
    fn warming_by_one_point_read_makes_the_key_resident_without_a_scan() {
        let (kv, reads, scans) = tiered_counting_scans(1 << 20);
        let meta = key_meta(9, crate::meta::Summary::Set { card: 2 });
        let mk = keys::meta_key(0, b"k");
        put(&kv, Space::Meta, &mk, &meta.encode());
        let dk = keys::data_key(0, b"k", 9, b"z");
        put(&kv, Space::Data, &dk, b"all");
        let whole = |v: &[u8]| v == b"all";
        // Not whole, an absent entry, or a version the meta does not name:
        // nothing is installed.
        for (key, version, check) in [
            (&dk, 9, &(|_: &[u8]| false) as &dyn Fn(&[u8]) -> bool),
            (&keys::data_key(0, b"k", 9, b"y"), 9, &whole),
            (&keys::data_key(0, b"k", 8, b"z"), 8, &whole),
        ] {
            kv.tier().clear();
            let _ = kv.get(Space::Meta, &mk).unwrap();
            assert!(!kv.warm_by_point(&mk, key, version, check).unwrap());
            assert!(!kv.is_resident(&mk));
        }
        kv.tier().clear();
        let _ = kv.get(Space::Meta, &mk).unwrap();
        let (r0, s0) = (reads.load(Ordering::Relaxed), scans.load(Ordering::Relaxed));
        assert!(kv.warm_by_point(&mk, &dk, 9, &whole).unwrap());
        assert!(kv.is_resident(&mk));
        assert_eq!(reads.load(Ordering::Relaxed), r0 + 1);
        // The version's data is answered from memory, scans included.
        assert_eq!(
            kv.prefix(Space::Data, &keys::data_prefix(0, b"k", 9), false)
                .map(|e| e.unwrap().1)
                .collect::<Vec<_>>(),
            vec![b"all".to_vec()]
        );
        assert_eq!(
            kv.get(Space::Data, &keys::data_key(0, b"k", 9, b"a"))
                .unwrap(),
            None
        );
        assert_eq!(reads.load(Ordering::Relaxed), r0 + 1);
        assert_eq!(scans.load(Ordering::Relaxed), s0);
        // A resident key is not read again.
        assert!(kv.warm_by_point(&mk, &dk, 9, &whole).unwrap());
        assert_eq!(reads.load(Ordering::Relaxed), r0 + 1);
    }

    #[test]
    fn warming_a_cold_key_makes_a_command_on_it_read_no_lsm() {
        let (kv, reads) = tiered(1 << 20);
        let meta = key_meta(9, crate::meta::Summary::Set { card: 3 });
        let mk = keys::meta_key(0, b"s");
        put(&kv, Space::Meta, &mk, &meta.encode());
        for m in [b"a", b"b", b"c"] {
            put(&kv, Space::Data, &keys::data_key(0, b"s", 9, m), b"");
        }
        let sk = keys::meta_key(0, b"str");
        let smeta = key_meta(1, crate::meta::Summary::String(b"v".to_vec()));
        put(&kv, Space::Meta, &sk, &smeta.encode());
        kv.tier().clear();
        let absent = keys::meta_key(0, b"nothing");
        for k in [&mk, &sk, &absent] {
            assert!(!kv.is_resident(k));
        }
        // A set's meta alone is not enough: its members are read whole.
        let _ = kv.get(Space::Meta, &mk).unwrap();
        assert!(!kv.is_resident(&mk));
        for k in [&mk, &sk, &absent] {
            kv.warm(k, &|_| None).unwrap();
            assert!(kv.is_resident(k));
        }
        let before = reads.load(Ordering::Relaxed);
        assert_eq!(kv.get(Space::Meta, &sk).unwrap(), Some(smeta.encode()));
        assert_eq!(kv.get(Space::Meta, &absent).unwrap(), None);
        let prefix = keys::data_prefix(0, b"s", 9);
        assert_eq!(kv.prefix(Space::Data, &prefix, false).count(), 3);
        assert_eq!(
            kv.get(Space::Data, &keys::data_key(0, b"s", 9, b"z"))
                .unwrap(),
            None
        );
        assert_eq!(reads.load(Ordering::Relaxed), before);
        // Warming what is resident reads nothing.
        kv.warm(&mk, &|_| None).unwrap();
        assert_eq!(reads.load(Ordering::Relaxed), before);
    }

    #[test]
    fn a_tier_that_holds_every_key_calls_an_unknown_key_resident_until_it_evicts() {
        let (kv, _) = tiered(4 << 10);
        let unknown = keys::meta_key(0, b"never-written");
        assert!(!kv.is_resident(&unknown));
        kv.tier().set_holds_all();
        assert!(kv.is_resident(&unknown));
        put_200_keys(&kv);
        assert!(kv.tier().stats().evictions > 0);
        assert!(!kv.is_resident(&unknown));
        kv.tier().set_holds_all();
        kv.tier().clear();
        assert!(!kv.is_resident(&unknown));
    }

    #[test]
    fn a_tier_that_holds_every_key_answers_an_absent_user_key_without_a_read() {
        let (kv, reads) = tiered(4 << 10);
        kv.tier().set_holds_all();
        let unknown = keys::meta_key(0, b"never-written");
        assert_eq!(kv.get(Space::Meta, &unknown).unwrap(), None);
        assert_eq!(reads.load(Ordering::Relaxed), 0);
        // Nothing is kept for the absence.
        assert_eq!(kv.tier().stats().resident_keys, 0);
        // Internal records are read from the LSM store.
        let internal = keys::meta_key(keys::INTERNAL_DB, b"counts:");
        assert_eq!(kv.get(Space::Meta, &internal).unwrap(), None);
        assert_eq!(reads.load(Ordering::Relaxed), 1);
        // After an eviction an unknown key is read again.
        put_200_keys(&kv);
        assert!(kv.tier().stats().evictions > 0);
        let before = reads.load(Ordering::Relaxed);
        assert_eq!(kv.get(Space::Meta, &unknown).unwrap(), None);
        assert_eq!(reads.load(Ordering::Relaxed), before + 1);
    }

    #[test]
    fn a_fill_raced_by_a_write_is_dropped() {
        let (kv, _) = tiered(1 << 20);
        let mk = keys::meta_key(0, b"k");
        let gen = kv.tier().shard_of(Hashed::new(&mk)).lock().gen;
        // A write lands between the miss's read and its fill.
        put(&kv, Space::Meta, &mk, b"new");
        kv.tier().fill(&mk, gen, |e| e.set_meta(Some(b"old")));
        assert_eq!(kv.get(Space::Meta, &mk).unwrap(), Some(b"new".to_vec()));
    }

    #[test]
    fn big_keys_stay_partial_and_serve_point_reads() {
        let (kv, reads) = tiered(64 << 10); // load limit: 64 KiB
        let mk = keys::meta_key(0, b"big");
        put(&kv, Space::Meta, &mk, b"m");
        for i in 0..2_000u32 {
            put(
                &kv,
                Space::Data,
                &keys::data_key(0, b"big", 1, &i.to_be_bytes()),
                &[0; 8],
            );
        }
        kv.tier().clear();
        let dk = keys::data_key(0, b"big", 1, &5u32.to_be_bytes());
        assert_eq!(kv.get(Space::Data, &dk).unwrap(), Some(vec![0; 8]));
        let n = reads.load(Ordering::Relaxed);
        assert_eq!(kv.get(Space::Data, &dk).unwrap(), Some(vec![0; 8]));
        assert_eq!(reads.load(Ordering::Relaxed), n, "second read is a hit");
        let prefix = keys::data_prefix(0, b"big", 1);
        assert_eq!(kv.prefix(Space::Data, &prefix, false).count(), 2_000);
    }
}
