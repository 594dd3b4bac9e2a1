//! The bitmap write-back tier's dirty state (`docs/architecture.md`, "The
//! write-back tier"):
//! single-bit edits, edits of listed bits (TR.SETBITS, TR.CLEARBITS), range
//! writes (TR.SETRANGE, TR.FLIPRANGE) and TR.BITOP results acknowledged from memory and the operation log
//! ([`crate::types::bitmap::oplog`]) before their containers reach the `Kv`.
//!
//! A deviation from DESIGN.md's "every write command is one atomic write
//! batch": such an edit is one atomic log record, and reaches the `Kv` in
//! a later batch. Without it TR.SETBIT stays near 0.45× Redis's SETBIT
//! (docs/benchmarks.md, "Single-bit commands under 20 connections";
//! docs/architecture.md).
//!
//! A dirty key holds its live meta (summary included) and the edited
//! containers, each with the number of delta entries still stored beside
//! it in the `Kv` (deleted when the key is absorbed). A TR.BITOP result
//! is a *whole* dirty key: a fresh version of an existing bitmap key of
//! which every container is here (a block not here is absent) and none
//! is in the `Kv` yet; absorbing it writes them all with the meta, which
//! makes the old version's entries garbage. Readers consult it
//! before the meta cache and the container cache (`Txn::load_meta`,
//! `Txn::bm_get`). Every other path sees a clean key: a `Txn` that is not
//! begun with `keep_dirty` absorbs the dirty state of each key it locks
//! into its own overlay first, and the entry is dropped once that `Txn`
//! commits ([`Dirty::remove_if`]).
//!
//! A TR.FLIPRANGE that covers a whole block whose dirty container is a
//! run container does not rewrite its runs: the block is marked as the
//! complement of its bytes (`DirtyBlock::negated`), and the summary is
//! updated from the complement's shape, which the runs give in O(1)
//! (`run::complement_shape`). Flipped twice, the mark is gone. The
//! complement is written out when the block is handed out
//! ([`Dirty::block`], [`Dirty::get`]: a read, an edit, an absorb), so no
//! reader sees the mark. A flip of [random, 10^7] over a key of 153 run
//! containers of a few hundred runs each went from 35 µs to 6.5 µs of
//! server time (docs/benchmarks.md).
//!
//! Only a `Txn` holding a key's stripe lock reads or changes its entry, so
//! the shard mutexes only guard the maps themselves.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use roaringd_bitmap::container::run;
use roaringd_bitmap::ContainerRef;

use crate::meta::KeyMeta;
use crate::types::bitmap::block_facts::{low_sum, BlockFacts};
use crate::types::bitmap::bytes::view;
use crate::types::bitmap::container_cache::{facts_of, padded_with};
use crate::types::bitmap::oplog::OpLog;

/// Number of shards of the map.
const SHARDS: usize = 16;

/// Default byte budget of the dirty state (past it the fast path
/// refuses), counted as [`Dirty::bytes`]: what 64 MiB counted by
/// containers and a flat cost per key had let the dirty keys hold, and
/// about 200,000 dirty keys of one container each.
pub const DEFAULT_BUDGET: u64 = 128 << 20;

/// Container edits logged since the last checkpoint past which the next
/// one comes early ([`Dirty::wants_checkpoint`]): a recovery replays a
/// record's edits container by container (about 4 µs each for a range
/// write), so this bounds it to a few seconds. 5 s of TR.SETBIT (one container a record)
/// stay under it; TR.FLIPRANGE of ~76 containers a record reaches it in
/// well under a second.
pub const REPLAY_EDITS: u64 = 1_000_000;

/// Bytes counted per dirty key besides its slot in its shard's table
/// ([`SLOT`]) and its containers: its meta key's allocation and the
/// allocation of its map of containers while it has one.
const KEY_COST: u64 = 48;
/// Bytes counted per dirty container besides its bytes: its `Arc`'s
/// counts and allocation rounding, and its share of its key's map.
const BLOCK_COST: u64 = 80;
/// Bytes of one slot of a shard's table: a dirty key's entry sits in it
/// (meta included), and the table's spare slots cost as much as full ones.
/// Counted per key alone (192 bytes a key besides its containers), 4,000
/// dirty keys of one container each passed for 1.19 MB while they had
/// allocated 2.75 (`tests/dirty_memory.rs`): the tables, sized for the
/// most keys they held, and a map allocated per key even for one
/// container.
const SLOT: u64 = (std::mem::size_of::<(Vec<u8>, DirtyKey)>() + 1) as u64;

/// Counted bytes of a shard's table allocated for `capacity` entries (its
/// buckets are 8/7 of that).
fn table_bytes(capacity: usize) -> u64 {
    capacity as u64 * SLOT * 8 / 7
}

/// Tables of fewer slots are not shrunk ([`Dirty::remove_if`]).
const SHRINK_MIN: usize = 64;

/// A dirty container: padded bytes (`container_cache::padded`).
#[derive(Clone)]
pub struct DirtyBlock {
    /// The container as it is now (unless `negated`).
    pub bytes: Arc<[u8]>,
    /// The container is the complement of `bytes` over the whole block, a
    /// run container: a TR.FLIPRANGE over the whole block flips this
    /// instead of rewriting the runs ([`Dirty::record_many`]'s
    /// `toggles`). Only inside the map: [`Dirty::block`] and
    /// [`Dirty::get`], which hand blocks out, write the complement first.
    negated: bool,
}

impl DirtyBlock {
    /// The container `bytes` (padded).
    #[must_use]
    pub fn new(bytes: Arc<[u8]>) -> Self {
        DirtyBlock {
            bytes,
            negated: false,
        }
    }

    /// Writes the complement of a negated block's bytes (with its facts),
    /// as the flips it stands for would have left it: a no-op otherwise.
    /// Returns the change in the block's byte length.
    fn materialize(&mut self) -> i64 {
        if !self.negated {
            return 0;
        }
        let before = self.bytes.len() as i64;
        let mut c = match view(&self.bytes) {
            Ok(v) => v.as_ref().to_buf(),
            // Bytes this process wrote: cannot happen; the readers of
            // the block get the same error from them.
            Err(_) => return 0,
        };
        c.flip_range(0, u16::MAX);
        self.bytes = padded_with(c.as_bytes(), BlockFacts::of(c.as_ref()));
        self.negated = false;
        self.bytes.len() as i64 - before
    }

    /// The container this block stands for and the one a flip of the
    /// whole block leaves, when the block is a run container or the
    /// complement of one: O(1) but for the low sum of bytes without facts.
    /// `None` for another kind (or bytes that do not parse), which a
    /// whole-block flip rewrites.
    #[must_use]
    pub fn whole_flip(&self) -> Option<WholeFlip> {
        let v = view(&self.bytes).ok()?;
        let r = v.as_ref();
        let ContainerRef::Run { runs, card } = r else {
            return None;
        };
        let stored = run::shape(runs, card)?;
        let stored_low = facts_of(&self.bytes).map_or_else(|| low_sum(r), |f| u64::from(f.low_sum));
        let complement = run::complement_shape(runs, card);
        let complement_low = BLOCK_LOW_SUM.saturating_sub(stored_low);
        Some(if self.negated {
            WholeFlip {
                now: (complement?, complement_low),
                flipped: Some((stored, stored_low)),
            }
        } else {
            WholeFlip {
                now: (stored, stored_low),
                flipped: complement.map(|c| (c, complement_low)),
            }
        })
    }
}

/// Sum of every value of a block (0 + 1 + ... + 65,535).
const BLOCK_LOW_SUM: u64 = 65_535 * 65_536 / 2;

/// What [`DirtyBlock::whole_flip`] reads off a block: the container it
/// stands for now and after a flip of the whole block (`None`: empty),
/// each with its low sum.
#[derive(Clone, Copy, Debug)]
pub struct WholeFlip {
    /// Now.
    pub now: (run::Shape, u64),
    /// After the flip.
    pub flipped: Option<(run::Shape, u64)>,
}

/// A TR.BITOP result's containers as the tier keeps them: ascending by
/// block, padded (`container_cache::padded_with`), shared with
/// the result's log record (and with the container cache where a block is
/// a source's own).
pub type ValueBlocks = Arc<[(u16, Arc<[u8]>)]>;

/// A dirty key's containers.
#[derive(Clone)]
pub enum Blocks {
    /// One edited container, the common case over many keys (a TR.SETBIT
    /// each): no map allocated.
    One(u16, DirtyBlock),
    /// Edited containers by block (empty only before the first edit;
    /// an empty map allocates nothing).
    Map(FxHashMap<u16, DirtyBlock>),
    /// A TR.BITOP result's: kept as its log record holds them (no map is built, no container shared
    /// again) until an edit turns them into a map.
    Value(ValueBlocks),
}

impl Blocks {
    /// Number of containers.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Blocks::One(..) => 1,
            Blocks::Map(m) => m.len(),
            Blocks::Value(v) => v.len(),
        }
    }

    /// True when there is none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Block `hi`'s container, if here.
    #[must_use]
    pub fn find(&self, hi: u16) -> Option<&Arc<[u8]>> {
        match self {
            Blocks::One(..) | Blocks::Map(_) => self.get(hi).map(|b| &b.bytes),
            Blocks::Value(v) => v
                .binary_search_by_key(&hi, |(b, _)| *b)
                .ok()
                .map(|i| &v[i].1),
        }
    }

    /// Every container: `(block, container)`, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &Arc<[u8]>)> + '_ {
        let (one, map, value) = match self {
            Blocks::One(hi, b) => (Some((*hi, b)), None, None),
            Blocks::Map(m) => (None, Some(m), None),
            Blocks::Value(v) => (None, None, Some(v)),
        };
        one.into_iter()
            .map(|(hi, b)| (hi, &b.bytes))
            .chain(
                map.into_iter()
                    .flat_map(|m| m.iter().map(|(&hi, b)| (hi, &b.bytes))),
            )
            .chain(
                value
                    .into_iter()
                    .flat_map(|v| v.iter().map(|(hi, b)| (*hi, b))),
            )
    }

    /// Flips block `hi` whole (see [`DirtyBlock::whole_flip`]); nothing
    /// when the block is not here.
    fn toggle(&mut self, hi: u16) {
        self.make_map();
        if let Some(b) = self.get_mut(hi) {
            debug_assert!(
                b.whole_flip().is_some(),
                "a toggled block is a run container"
            );
            b.negated = !b.negated;
        }
    }

    /// Block `hi`'s entry as kept (possibly negated), unless the key is a
    /// TR.BITOP result's list.
    fn get(&self, hi: u16) -> Option<&DirtyBlock> {
        match self {
            Blocks::One(h, b) => (*h == hi).then_some(b),
            Blocks::Map(m) => m.get(&hi),
            Blocks::Value(_) => None,
        }
    }

    /// [`Blocks::get`], to change.
    fn get_mut(&mut self, hi: u16) -> Option<&mut DirtyBlock> {
        match self {
            Blocks::One(h, b) => (*h == hi).then_some(b),
            Blocks::Map(m) => m.get_mut(&hi),
            Blocks::Value(_) => None,
        }
    }

    /// True when some block is marked as its complement.
    fn any_negated(&self) -> bool {
        match self {
            Blocks::One(_, b) => b.negated,
            Blocks::Map(m) => m.values().any(|b| b.negated),
            Blocks::Value(_) => false,
        }
    }

    /// Writes out every marked block's complement
    /// ([`DirtyBlock::materialize`]); returns the change in byte length.
    fn materialize_all(&mut self) -> i64 {
        match self {
            Blocks::One(_, b) => b.materialize(),
            Blocks::Map(m) => m.values_mut().map(DirtyBlock::materialize).sum(),
            Blocks::Value(_) => 0,
        }
    }

    /// Turns a TR.BITOP result's list into a map (for an edit).
    fn make_map(&mut self) {
        if let Blocks::Value(v) = self {
            let m: FxHashMap<u16, DirtyBlock> = v
                .iter()
                .map(|(hi, b)| (*hi, DirtyBlock::new(Arc::clone(b))))
                .collect();
            *self = Blocks::Map(m);
        }
    }

    /// Sets block `hi`'s container; returns the one it replaces.
    fn insert(&mut self, hi: u16, block: DirtyBlock) -> Option<DirtyBlock> {
        self.make_map();
        match self {
            Blocks::One(h, b) if *h == hi => Some(std::mem::replace(b, block)),
            Blocks::One(..) => {
                let Blocks::One(h, b) = std::mem::replace(self, Blocks::Map(FxHashMap::default()))
                else {
                    unreachable!("matched as one above")
                };
                let mut m = FxHashMap::with_capacity_and_hasher(2, Default::default());
                m.insert(h, b);
                m.insert(hi, block);
                *self = Blocks::Map(m);
                None
            }
            Blocks::Map(m) if m.is_empty() => {
                *self = Blocks::One(hi, block);
                None
            }
            Blocks::Map(m) => m.insert(hi, block),
            Blocks::Value(_) => unreachable!("made a map above"),
        }
    }
}

/// A dirty key. See the module docs.
#[derive(Clone)]
pub struct DirtyKey {
    /// Its live meta; `version` is the key version every record of it has.
    pub meta: KeyMeta,
    /// Its dirty containers.
    pub blocks: Blocks,
    /// Every container of the version is in `blocks` (a TR.BITOP result).
    pub whole: bool,
    /// Log sequence numbers of its first and last unabsorbed edits.
    pub first_seq: u64,
    /// See `first_seq`.
    pub last_seq: u64,
}

impl DirtyKey {
    /// Counted bytes besides its table slot: [`KEY_COST`] and each
    /// container with [`BLOCK_COST`].
    fn bytes(&self) -> u64 {
        KEY_COST
            + self
                .blocks
                .iter()
                .map(|(_, b)| b.len() as u64 + BLOCK_COST)
                .sum::<u64>()
    }
}

/// Dirty keys by meta key (`keys::meta_key`).
type Map = FxHashMap<Vec<u8>, DirtyKey>;

/// The dirty keys and the operation log. See the module docs.
pub struct Dirty {
    shards: Box<[Mutex<Map>]>,
    /// The entries each shard's table is allocated for, as counted in
    /// `bytes`; changed under the shard's lock only. The table's own
    /// `capacity()` is not that: a removal that leaves a tombstone lowers
    /// it, an insert into one raises it, and neither reallocates.
    tables: Box<[AtomicUsize]>,
    /// Number of dirty keys: readers skip the map when it is 0.
    count: AtomicUsize,
    /// Counted bytes: the shards' tables ([`table_bytes`]) and every
    /// dirty key's [`DirtyKey::bytes`].
    bytes: AtomicU64,
    /// Containers the records logged since the last checkpoint edit (a
    /// TR.SETBIT one, a TR.FLIPRANGE up to 1,024): what a recovery would
    /// replay, container by container ([`Dirty::wants_checkpoint`]).
    edits: AtomicU64,
    budget: AtomicU64,
    /// The log; `None` for a store without a directory (the tier is off)
    /// and while a store's log is being replayed.
    pub(crate) log: Mutex<Option<OpLog>>,
    /// Whether `log` is `Some` (read without its lock).
    has_log: AtomicBool,
}

fn shard_of(mk: &[u8]) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    mk.hash(&mut h);
    (h.finish() >> 32) as usize % SHARDS
}

impl Dirty {
    /// An empty map; the tier is on when `log` is given.
    #[must_use]
    pub fn new(log: Option<OpLog>) -> Self {
        Dirty {
            shards: (0..SHARDS).map(|_| Mutex::new(Map::default())).collect(),
            tables: (0..SHARDS).map(|_| AtomicUsize::new(0)).collect(),
            count: AtomicUsize::new(0),
            bytes: AtomicU64::new(0),
            edits: AtomicU64::new(0),
            budget: AtomicU64::new(DEFAULT_BUDGET),
            has_log: AtomicBool::new(log.is_some()),
            log: Mutex::new(log),
        }
    }

    /// Turns the tier on with `log` (a store's, once replayed).
    pub fn install_log(&self, log: OpLog) {
        *self.log.lock() = Some(log);
        self.has_log.store(true, Ordering::Release);
    }

    /// True when nothing is dirty (one atomic load).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count.load(Ordering::Acquire) == 0
    }

    /// Number of dirty keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Counted bytes of the dirty state: what the budget bounds, about
    /// what it holds in memory (the tables, the keys, the containers).
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// True when the dirty keys should be written back before the
    /// regular checkpoint: the counted bytes are past half the budget
    /// (edits would soon find no room), or the records since the last
    /// checkpoint edit [`REPLAY_EDITS`] containers (a crash would leave
    /// that much to replay).
    #[must_use]
    pub fn wants_checkpoint(&self) -> bool {
        self.bytes() * 2 > self.budget.load(Ordering::Relaxed)
            || self.edits.load(Ordering::Relaxed) >= REPLAY_EDITS
    }

    /// Marks a checkpoint's start: the edits counted for
    /// [`Dirty::wants_checkpoint`] start again from zero.
    pub fn checkpoint_started(&self) {
        self.edits.store(0, Ordering::Relaxed);
    }

    /// Counts `n` container edits of a record just logged.
    fn count_edits(&self, n: usize) {
        self.edits.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// True when another `extra` bytes fit the budget, which bounds the
    /// counted bytes (containers, and a cost per key and per container).
    #[must_use]
    pub fn has_room(&self, extra: u64) -> bool {
        self.bytes() + extra <= self.budget.load(Ordering::Relaxed)
    }

    /// Sets the byte budget (0 turns the fast path off).
    pub fn set_budget(&self, bytes: u64) {
        self.budget.store(bytes, Ordering::Relaxed);
    }

    /// The byte budget.
    #[must_use]
    pub fn budget(&self) -> u64 {
        self.budget.load(Ordering::Relaxed)
    }

    /// True when the tier is on (the store has a log and a budget).
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.has_log.load(Ordering::Acquire) && self.budget.load(Ordering::Relaxed) > 0
    }

    /// The live meta of dirty key `mk` (its meta key).
    #[must_use]
    pub fn meta(&self, mk: &[u8]) -> Option<KeyMeta> {
        if self.is_empty() {
            return None;
        }
        let s = self.shards[shard_of(mk)].lock();
        s.get(mk).map(|d| d.meta.clone())
    }

    /// The live meta of dirty key `mk` when its dirty state is edits of
    /// its stored containers; `None` when it is not dirty, or when it is
    /// a whole value (a TR.BITOP result, which recovery writes under a
    /// fresh version without an expire time).
    #[must_use]
    pub fn edited_meta(&self, mk: &[u8]) -> Option<KeyMeta> {
        if self.is_empty() {
            return None;
        }
        let s = self.shards[shard_of(mk)].lock();
        s.get(mk).filter(|d| !d.whole).map(|d| d.meta.clone())
    }

    /// Dirty container `hi` of key `mk` at version `version`:
    /// `Some(Some(_))` when dirty, `Some(None)` when the key is whole
    /// (the block is absent), `None` when the tier does not know it.
    #[must_use]
    pub fn block(&self, mk: &[u8], version: u64, hi: u16) -> Option<Option<DirtyBlock>> {
        if self.is_empty() {
            return None;
        }
        let mut s = self.shards[shard_of(mk)].lock();
        let d = s.get_mut(mk).filter(|d| d.meta.version == version)?;
        let found = match &mut d.blocks {
            // One lookup: the block's complement written out if it is
            // marked, then handed out.
            Blocks::One(..) | Blocks::Map(_) => d.blocks.get_mut(hi).map(|b| {
                self.add_bytes(b.materialize());
                DirtyBlock::new(Arc::clone(&b.bytes))
            }),
            Blocks::Value(_) => d.blocks.find(hi).map(|b| DirtyBlock::new(Arc::clone(b))),
        };
        match found {
            Some(b) => Some(Some(b)),
            None => d.whole.then_some(None),
        }
    }

    /// Dirty container `hi` of key `mk` at version `version` as the map
    /// keeps it, possibly negated (see [`DirtyBlock::whole_flip`]), for a
    /// flip of the whole block; `None` when not dirty.
    #[must_use]
    pub fn block_as_kept(&self, mk: &[u8], version: u64, hi: u16) -> Option<DirtyBlock> {
        if self.is_empty() {
            return None;
        }
        let s = self.shards[shard_of(mk)].lock();
        let d = s.get(mk).filter(|d| d.meta.version == version)?;
        match &d.blocks {
            Blocks::One(..) | Blocks::Map(_) => d.blocks.get(hi).cloned(),
            Blocks::Value(_) => d.blocks.find(hi).map(|b| DirtyBlock::new(Arc::clone(b))),
        }
    }

    /// A copy of dirty key `mk`'s state.
    #[must_use]
    pub fn get(&self, mk: &[u8]) -> Option<DirtyKey> {
        if self.is_empty() {
            return None;
        }
        let mut s = self.shards[shard_of(mk)].lock();
        let d = s.get_mut(mk)?;
        self.add_bytes(d.blocks.materialize_all());
        Some(d.clone())
    }

    /// Adds `delta` (of either sign) to the counted bytes: an atomic add
    /// wraps, so the two's complement of a negative delta subtracts it.
    fn add_bytes(&self, delta: i64) {
        self.bytes.fetch_add(delta as u64, Ordering::Relaxed);
    }

    /// Counts shard `i`'s table as allocated for `entries` from now on
    /// (the caller holds the shard's lock).
    fn count_table(&self, i: usize, entries: usize) {
        let old = self.tables[i].swap(entries, Ordering::Relaxed);
        self.add_bytes(table_bytes(entries) as i64 - table_bytes(old) as i64);
    }

    /// Makes room for one more entry in shard `i`'s table `s` and counts
    /// any growth: a table that grew holds no tombstone, so its capacity
    /// is what it is allocated for, and one that did not grow has a
    /// capacity of at most that.
    fn reserve_one(&self, i: usize, s: &mut Map) {
        s.reserve(1);
        if s.capacity() > self.tables[i].load(Ordering::Relaxed) {
            self.count_table(i, s.capacity());
        }
    }

    /// Records an edit (log sequence number `seq`) that leaves key `mk`
    /// with `meta` and block `hi` with `block`.
    pub fn record(&self, mk: &[u8], meta: KeyMeta, hi: u16, block: DirtyBlock, seq: u64) {
        self.record_many(mk, meta, ([(hi, block)], &[]), seq);
    }

    /// Records an edit (log sequence number `seq`) that leaves key `mk`
    /// with `meta`, each listed block with its new state, and each block
    /// of `toggles` flipped whole: dirty blocks that
    /// [`DirtyBlock::whole_flip`] read (the caller holds the key's lock,
    /// so they are unchanged since), which become their complements
    /// without a rewrite.
    pub fn record_many(
        &self,
        mk: &[u8],
        meta: KeyMeta,
        (blocks, toggles): (impl IntoIterator<Item = (u16, DirtyBlock)>, &[u16]),
        seq: u64,
    ) {
        let i = shard_of(mk);
        let mut s = self.shards[i].lock();
        let mut add = 0;
        let d = match s.get_mut(mk) {
            Some(d) => {
                d.meta = meta;
                d.last_seq = seq;
                d
            }
            None => {
                self.count.fetch_add(1, Ordering::AcqRel);
                self.reserve_one(i, &mut s);
                add = KEY_COST;
                s.entry(mk.to_vec()).or_insert(DirtyKey {
                    meta,
                    blocks: Blocks::Map(FxHashMap::default()),
                    whole: false,
                    first_seq: seq,
                    last_seq: seq,
                })
            }
        };
        let (mut sub, mut edited) = (0, 0);
        for (hi, block) in blocks {
            edited += 1;
            add += block.bytes.len() as u64 + BLOCK_COST;
            if let Some(old) = d.blocks.insert(hi, block) {
                sub += old.bytes.len() as u64 + BLOCK_COST;
            }
        }
        for &hi in toggles {
            d.blocks.toggle(hi);
        }
        self.count_edits(edited + toggles.len());
        self.bytes.fetch_add(add, Ordering::Relaxed);
        self.bytes.fetch_sub(sub, Ordering::Relaxed);
    }

    /// Records an edit as [`Dirty::record`] does, made by `edit` on block
    /// `hi`'s bytes in place (no copy, the length kept). `held` is the
    /// caller's reference to the bytes it read ([`Dirty::block`]); the
    /// edit is made when they are key `mk`'s block `hi` in the map (not in
    /// a TR.BITOP result's list) and, `held` let go, the map holds the
    /// only reference to them (no reader has a copy). `edit` returns
    /// false, having changed nothing, to refuse.
    ///
    /// # Errors
    /// Gives back a reference to the block's unchanged bytes when the
    /// edit was not made (nothing is recorded then).
    pub fn record_in_place(
        &self,
        mk: &[u8],
        meta: &KeyMeta,
        (hi, seq): (u16, u64),
        held: Arc<[u8]>,
        edit: impl FnOnce(&mut [u8]) -> bool,
    ) -> Result<(), Arc<[u8]>> {
        let mut s = self.shards[shard_of(mk)].lock();
        let Some(d) = s.get_mut(mk) else {
            return Err(held);
        };
        let Some(b) = d
            .blocks
            .get_mut(hi)
            .filter(|b| Arc::ptr_eq(&b.bytes, &held))
        else {
            return Err(held);
        };
        drop(held);
        let done = Arc::get_mut(&mut b.bytes).is_some_and(edit);
        if !done {
            return Err(Arc::clone(&b.bytes));
        }
        d.meta = meta.clone();
        d.last_seq = seq;
        self.count_edits(1);
        Ok(())
    }

    /// Records a whole value (log sequence number `seq`): key `mk` is now
    /// `meta` (a fresh version) with exactly the containers `blocks`. It
    /// replaces any dirty state of the key: that state's records come
    /// before `seq`, and a replay of the log ends on this one, so only
    /// this record and later ones need keeping (`first_seq` is `seq`).
    pub fn record_value(&self, mk: &[u8], meta: KeyMeta, blocks: ValueBlocks, seq: u64) {
        let d = DirtyKey {
            meta,
            blocks: Blocks::Value(blocks),
            whole: true,
            first_seq: seq,
            last_seq: seq,
        };
        self.bytes.fetch_add(d.bytes(), Ordering::Relaxed);
        self.count_edits(d.blocks.len());
        let i = shard_of(mk);
        let mut s = self.shards[i].lock();
        let old = match s.get_mut(mk) {
            Some(slot) => Some(std::mem::replace(slot, d)),
            None => {
                self.reserve_one(i, &mut s);
                s.insert(mk.to_vec(), d);
                self.count.fetch_add(1, Ordering::AcqRel);
                None
            }
        };
        drop(s);
        // The old state (often a result's own containers) is freed
        // outside the shard's lock.
        if let Some(old) = old {
            self.bytes.fetch_sub(old.bytes(), Ordering::Relaxed);
        }
    }

    /// True when key `mk` is whole and holds exactly the containers
    /// `blocks` (block, container bytes; ascending): a TR.BITOP result
    /// equal to the key's state, which needs no record.
    #[must_use]
    pub fn holds_whole<B: AsRef<[u8]>>(&self, mk: &[u8], blocks: &[(u16, B)]) -> bool {
        if self.is_empty() {
            return false;
        }
        let s = self.shards[shard_of(mk)].lock();
        s.get(mk).is_some_and(|d| {
            d.whole
                && !d.blocks.any_negated()
                && d.blocks.len() == blocks.len()
                && blocks.iter().all(|(hi, b)| {
                    d.blocks.find(*hi).is_some_and(|x| {
                        &x[crate::types::bitmap::container_cache::PAD..] == b.as_ref()
                    })
                })
        })
    }

    /// Drops key `mk`'s entry if its last edit is still `last_seq` (it
    /// was absorbed by a commit that covered every edit). A table left
    /// empty, or under a quarter full, is shrunk to twice its entries (a
    /// checkpoint empties the tables, which had grown for the most keys
    /// they held).
    pub fn remove_if(&self, mk: &[u8], last_seq: u64) {
        let i = shard_of(mk);
        let mut s = self.shards[i].lock();
        if s.get(mk).is_some_and(|d| d.last_seq == last_seq) {
            let d = s.remove(mk).expect("checked above");
            let cap = self.tables[i].load(Ordering::Relaxed);
            let left = s.len();
            if left == 0 || (cap >= SHRINK_MIN && left * 4 < cap) {
                // Half the buckets or fewer: the table is reallocated,
                // without tombstones, so its capacity is exact.
                s.shrink_to(left * 2);
                self.count_table(i, s.capacity());
            }
            self.bytes.fetch_sub(d.bytes(), Ordering::Relaxed);
            self.count.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Sets dirty key `mk`'s expire time to `at_ms` (0: none), once its
    /// stored meta has it ([`Txn::bm_expire_dirty`](crate::txn::Txn)); a
    /// key no longer dirty is left alone.
    pub fn set_expiry(&self, mk: &[u8], at_ms: u64) {
        if let Some(d) = self.shards[shard_of(mk)].lock().get_mut(mk) {
            d.meta.expire_at_ms = at_ms;
        }
    }

    /// The meta keys of every dirty key.
    #[must_use]
    pub fn keys(&self) -> Vec<Vec<u8>> {
        if self.is_empty() {
            return Vec::new();
        }
        self.shards
            .iter()
            .flat_map(|s| s.lock().keys().cloned().collect::<Vec<_>>())
            .collect()
    }

    /// The smallest `first_seq` of the dirty keys, if any.
    #[must_use]
    pub fn min_first_seq(&self) -> Option<u64> {
        self.shards
            .iter()
            .filter_map(|s| s.lock().values().map(|d| d.first_seq).min())
            .min()
    }
}

#[cfg(test)]
mod tests {
    use crate::meta::BitmapSummary;
    use crate::store::{Store, StoreConfig};
    use crate::txn::Txn;
    use crate::types::bitmap::{BitOp, RangeOp};
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    fn open(dir: &Path) -> Store {
        // A dropped store's persister may still hold it for a moment.
        for _ in 0..200 {
            if let Ok(s) = Store::open(StoreConfig {
                dir: Some(dir.to_path_buf()),
                ..StoreConfig::default()
            }) {
                return s;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("store did not reopen");
    }

    #[derive(Debug, Clone)]
    enum Step {
        /// TR.SETBIT through a `keep_dirty` transaction (the tier's path).
        Fast(usize, u32, bool),
        /// A pipeline group of TR.SETBITs, after a write of a string key
        /// (an ordinary write) when `.2`: the tier's, still.
        FastGroup(usize, Vec<(u32, bool)>, bool),
        /// TR.SETBIT clearing the key's minimum (false) or maximum (true).
        FastExtreme(usize, bool),
        /// TR.GETBIT through a `keep_dirty` transaction.
        Get(usize, u32),
        /// A summary read (TR.BITCOUNT, TR.MIN, TR.MAX, TR.STAT) through a
        /// `keep_dirty` transaction, then checked against the containers.
        Summary(usize),
        /// TR.SETBITS (`.2`) / TR.CLEARBITS through a `keep_dirty`
        /// transaction (`.3`: the tier's path where it takes the edit) or
        /// an ordinary one (absorbs).
        Bits(usize, Vec<u32>, bool, bool),
        /// TR.RANGE over the whole key (a read that absorbs).
        Range(usize),
        /// TR.SETRANGE / TR.FLIPRANGE (`.3`) of `.1 ..= .1 + .2` through a
        /// `keep_dirty` transaction (`.4`) or an ordinary one.
        RangeWrite(usize, u32, u32, bool, bool),
        /// TR.BITOP into key `.0` (operation `.1`, see [`op_of`]) over
        /// the keys `.2`, begun as the server begins it
        /// (`Store::begin_keeping`): the tier may keep the result whole.
        /// A source that is the destination, or a dirty one, makes it an
        /// ordinary write.
        BitOp(usize, u8, Vec<usize>),
        Del(usize),
        /// One ordinary `Txn` (MULTI/EXEC) over key `.0` and key `.2`:
        /// TR.SETBIT `.0` `.1` 1, TR.BITOP `.0` OR `.0` `.2`, then
        /// TR.GETBIT of `.1` and of each of `.3` (read back in the `Txn`).
        ExecBitOp(usize, u32, usize, Vec<u32>),
        /// EXPIRE far in the future (an ordinary command: absorbs); the
        /// tier goes on taking the key's edits.
        Expire(usize),
        /// EXPIRE far in the future (`false`) or PERSIST (`true`) through
        /// a `keep_dirty` transaction: a dirty key stays dirty.
        KeptExpire(usize, bool),
        /// A TR.GETBIT through a `keep_dirty` transaction whose clock is
        /// past every expiry [`Step::Expire`] sets: a key with an expiry
        /// is deleted then, dirty or not.
        Expired(usize),
        /// An EXEC of TR.SETBITs over both keys (`Store::begin_exec`),
        /// the shared log written to the OS after its first edit (as the
        /// `everysec` thread may); with `.1`, the process dies before the
        /// commit (the `Txn`'s own records lost with it), and the store is
        /// reopened: none of the EXEC survives.
        Exec(Vec<(usize, u32, bool)>, bool),
        Checkpoint,
        /// Drop the store without a checkpoint and reopen it.
        Crash,
    }

    const KEYS: [&[u8]; 2] = [b"a", b"b"];

    fn off() -> impl proptest::strategy::Strategy<Value = u32> {
        use proptest::prelude::*;
        // Blocks 0 and 1 arrays (every third value), block 2 a bitset
        // near the array limit (every 13th); blocks 10-39 a few values
        // each, small containers that share pages.
        prop_oneof![
            3 => (0u32..3, 0u32..3000)
                .prop_map(|(b, lo)| (b << 16) | (lo * if b == 2 { 13 } else { 3 })),
            1 => (10u32..40, 0u32..8).prop_map(|(b, lo)| (b << 16) | (lo * 5)),
        ]
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            12 => (0usize..2, off(), any::<bool>()).prop_map(|(k, o, v)| Step::Fast(k, o, v)),
            4 => (0usize..2, proptest::collection::vec((off(), any::<bool>()), 1..30), any::<bool>())
                .prop_map(|(k, v, mixed)| Step::FastGroup(k, v, mixed)),
            1 => (0usize..2, any::<bool>()).prop_map(|(k, m)| Step::FastExtreme(k, m)),
            4 => (0usize..2, off()).prop_map(|(k, o)| Step::Get(k, o)),
            2 => (0usize..2).prop_map(Step::Summary),
            4 => (0usize..2, proptest::collection::vec(off(), 1..10), any::<bool>(), any::<bool>())
                .prop_map(|(k, v, s, fast)| Step::Bits(k, v, s, fast)),
            1 => (0usize..2).prop_map(Step::Range),
            3 => (0usize..2, off(), prop_oneof![0u32..40, 0u32..140_000], any::<bool>(), any::<bool>())
                .prop_map(|(k, o, n, flip, fast)| Step::RangeWrite(k, o, n, flip, fast)),
            3 => (0usize..2, 0u8..4, proptest::collection::vec(0usize..2, 1..3))
                .prop_map(|(k, op, srcs)| Step::BitOp(k, op, srcs)),
            1 => (0usize..2).prop_map(Step::Del),
            2 => (0usize..2, off(), 0usize..2, proptest::collection::vec(off(), 1..6))
                .prop_map(|(k, o, src, probes)| Step::ExecBitOp(k, o, src, probes)),
            1 => (0usize..2).prop_map(Step::Expire),
            2 => (0usize..2, any::<bool>()).prop_map(|(k, p)| Step::KeptExpire(k, p)),
            1 => (0usize..2).prop_map(Step::Expired),
            3 => (proptest::collection::vec((0usize..2, off(), any::<bool>()), 1..12), proptest::bool::weighted(0.3))
                .prop_map(|(edits, crash)| Step::Exec(edits, crash)),
            1 => Just(Step::Checkpoint),
            1 => Just(Step::Crash),
        ]
    }

    /// The operation of a [`Step::BitOp`]: DIFF needs two sources (else OR).
    fn op_of(op: u8, n: usize) -> BitOp {
        match op {
            0 => BitOp::And,
            1 => BitOp::Or,
            2 => BitOp::Xor,
            _ if n == 2 => BitOp::Diff,
            _ => BitOp::Or,
        }
    }

    /// The model's TR.BITOP result over `srcs` (a missing key is empty).
    fn model_op(op: BitOp, srcs: &[BTreeSet<u32>]) -> BTreeSet<u32> {
        let mut it = srcs.iter().cloned();
        let first = it.next().unwrap_or_default();
        it.fold(first, |acc, s| match op {
            BitOp::And => acc.intersection(&s).copied().collect(),
            BitOp::Or => acc.union(&s).copied().collect(),
            BitOp::Xor => acc.symmetric_difference(&s).copied().collect(),
            BitOp::Diff => acc.difference(&s).copied().collect(),
            BitOp::Not => unreachable!("not drawn"),
        })
    }

    /// The expiry [`Step::Expire`] sets: far beyond any test's run.
    fn far_expiry() -> u64 {
        crate::store::now_ms() + 1_000_000_000
    }

    /// True when `key` exists with an expiry, read through a `keep_dirty`
    /// transaction (which absorbs nothing).
    fn has_expiry(st: &Store, key: &[u8]) -> bool {
        let mut t = st.begin_keep_dirty(&[(0, key)]);
        let m = t.meta(0, key).unwrap();
        t.commit().unwrap();
        m.is_some_and(|m| m.expire_at_ms != 0)
    }

    /// The expiry index: expire time by user key (database 0).
    fn expiry_index(st: &Store) -> BTreeMap<Vec<u8>, u64> {
        use crate::kv::Space;
        use std::ops::Bound::Unbounded;
        st.inner
            .kv
            .range(Space::Expiry, Unbounded, Unbounded, false)
            .map(|e| {
                let (k, _) = e.unwrap();
                let (at, _, key) = crate::keys::split_expiry_key(&k).unwrap();
                (key.to_vec(), at)
            })
            .collect()
    }

    /// Every key's expire time, read through a `keep_dirty` transaction,
    /// is in the expiry index, which holds nothing else; and the key
    /// counts say as much.
    fn check_expiries(st: &Store) {
        // `s`: the string key of [`Step::MixedGroup`].
        check_expiries_of(st, &[KEYS[0], KEYS[1], b"s"]);
    }

    /// [`check_expiries`] for a store whose keys are `all`.
    fn check_expiries_of(st: &Store, all: &[&[u8]]) {
        let mut want = BTreeMap::new();
        let mut keys = 0;
        for key in all {
            let mut t = st.begin_keep_dirty(&[(0, key)]);
            let m = t.meta(0, key).unwrap();
            t.commit().unwrap();
            keys += u64::from(m.is_some());
            if let Some(at) = m.map(|m| m.expire_at_ms).filter(|&at| at != 0) {
                want.insert(key.to_vec(), at);
            }
        }
        assert_eq!(expiry_index(st), want);
        let counts = st.db_stats()[0];
        assert_eq!((counts.keys, counts.expires), (keys, want.len() as u64));
    }

    /// True when the write-back tier holds `key` dirty.
    fn is_dirty(st: &Store, key: &[u8]) -> bool {
        st.inner.dirty.get(&crate::keys::meta_key(0, key)).is_some()
    }

    /// TR.GETBIT `key` 0 through a `keep_dirty` transaction whose clock is
    /// past [`far_expiry`]: its reply.
    fn getbit_after_expiry(st: &Store, key: &[u8]) -> bool {
        let mut t = st.begin_keep_dirty(&[(0, key)]);
        t.set_now_ms(far_expiry() + 1_000_000);
        let got = t.tr_getbit(0, key, 0).unwrap();
        t.commit().unwrap();
        got
    }

    /// Runs TR.BITOP as the server runs it alone (`begin_keeping`).
    fn bitop(st: &Store, dest: &[u8], op: BitOp, srcs: &[&[u8]]) -> u64 {
        let mut keys: Vec<(u16, &[u8])> = vec![(0, dest)];
        keys.extend(srcs.iter().map(|k| (0, *k)));
        let mut t = st.begin_keeping(&keys, (0, dest));
        let n = t.tr_bitop(0, dest, op, srcs).unwrap();
        t.commit().unwrap();
        n
    }

    fn check_all(st: &Store, model: &BTreeMap<usize, BTreeSet<u32>>) {
        for (k, key) in KEYS.iter().enumerate() {
            let mut t = st.begin(&[(0, key)]);
            let got = t.tr_range(0, key, 0, u32::MAX, usize::MAX - 1).unwrap();
            let s = t.tr_summary(0, key).unwrap();
            t.commit().unwrap();
            match model.get(&k) {
                Some(m) => {
                    assert_eq!(
                        got.unwrap(),
                        m.iter().copied().collect::<Vec<_>>(),
                        "key {k}"
                    );
                    let s = s.unwrap();
                    assert_eq!(s.card, m.len() as u64);
                    assert_eq!(s.sum, m.iter().map(|&v| u64::from(v)).sum::<u64>());
                    if let (Some(a), Some(b)) = (m.first(), m.last()) {
                        assert_eq!((s.min, s.max), (*a, *b));
                    }
                }
                None => assert!(got.is_none(), "key {k} should be missing"),
            }
        }
    }

    /// Range writes kept dirty, over and over the same blocks (the second
    /// and later edits of a block take its low sum from the facts the
    /// first kept): the summary after each matches a model, and so does
    /// the key an ordinary read absorbs, and a TR.BITOP over it (which
    /// passes facts on into its result's summary).
    #[test]
    fn repeated_dirty_range_writes_keep_the_summary_exact() {
        let dir = tempfile::tempdir().unwrap();
        let mut st = open(dir.path());
        let base: Vec<u32> = (0..4u32)
            .flat_map(|b| (0..400u32).map(move |i| (b << 16) | (i * 7)))
            .collect();
        let mut t = st.begin(&[(0, b"k")]);
        t.tr_setbits(0, b"k", &base).unwrap();
        t.commit().unwrap();
        let mut model: BTreeSet<u32> = base.iter().copied().collect();
        let mut x: u64 = 5;
        let mut kept = 0;
        for i in 0..300 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            let start = ((x >> 33) % (4 << 16)) as u32;
            let end = if i % 3 == 0 {
                start + ((x >> 20) % 5000) as u32
            } else {
                (4 << 16) - 2
            };
            let flip = i % 5 != 0;
            let mut t = st.begin_keep_dirty(&[(0, b"k")]);
            let op = if flip { RangeOp::Flip } else { RangeOp::Set };
            let card = t.tr_range_write(0, b"k", start, end, op).unwrap();
            let s = t.tr_summary(0, b"k").unwrap().unwrap();
            t.commit().unwrap();
            kept += usize::from(!st.inner.dirty.is_empty());
            for v in start..=end {
                if flip && model.contains(&v) {
                    model.remove(&v);
                } else {
                    model.insert(v);
                }
            }
            assert_eq!((card, s.card), (model.len() as u64, model.len() as u64));
            assert_eq!(
                s.sum,
                model.iter().map(|&v| u64::from(v)).sum::<u64>(),
                "step {i}"
            );
            assert_eq!(
                (s.min, s.max),
                (*model.first().unwrap(), *model.last().unwrap())
            );
            // Reads and single-bit writes between the flips (a read
            // writes out a block flipped whole without a rewrite).
            let o = ((x >> 40) % (4 << 16)) as u32;
            let mut t = st.begin_keep_dirty(&[(0, b"k")]);
            assert_eq!(
                t.tr_getbit(0, b"k", o).unwrap(),
                model.contains(&o),
                "step {i}"
            );
            if i % 4 == 0 {
                let on = i % 8 == 0;
                assert_eq!(t.tr_setbit(0, b"k", o, on).unwrap(), model.contains(&o));
                if on {
                    model.insert(o);
                } else {
                    model.remove(&o);
                }
            }
            t.commit().unwrap();
            // A crash halfway: the log is replayed.
            if i == 150 {
                drop(st);
                st = open(dir.path());
            }
        }
        assert!(kept > 200, "the writes were the tier's: {kept} of 300");
        let mut t = st.begin_keeping(&[(0, b"k"), (0, b"d")], (0, b"d"));
        t.tr_bitop(0, b"d", BitOp::Or, &[b"k".as_slice()]).unwrap();
        let s = t.tr_summary(0, b"d").unwrap().unwrap();
        t.commit().unwrap();
        assert_eq!(s.sum, model.iter().map(|&v| u64::from(v)).sum::<u64>());
        let mut t = st.begin(&[(0, b"k")]);
        let b = t.tr_load(0, b"k").unwrap().unwrap();
        let s = t.tr_summary(0, b"k").unwrap().unwrap();
        t.commit().unwrap();
        assert_eq!(
            b.iter().collect::<Vec<u32>>(),
            model.iter().copied().collect::<Vec<_>>()
        );
        assert_eq!(s, crate::types::bitmap::summary_of_bitmap(&b));
        // The counted bytes followed every block written out.
        st.checkpoint().unwrap();
        assert!(st.inner.dirty.is_empty());
        assert_eq!(st.inner.dirty.bytes(), 0);
    }

    /// The checkpoint comes early once the dirty state passes half its
    /// budget (`Dirty::wants_checkpoint`), before edits find no room.
    #[test]
    fn half_the_budget_calls_for_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        let base: Vec<u32> = (0..1000u32).map(|i| i * 6).collect();
        for key in [b"a", b"b"] {
            let mut t = st.begin(&[(0, key)]);
            t.tr_setbits(0, key, &base).unwrap();
            t.commit().unwrap();
        }
        let edit = |key: &[u8]| {
            let mut t = st.begin_keep_dirty(&[(0, key)]);
            t.tr_setbit(0, key, 7, true).unwrap();
            t.commit().unwrap();
        };
        edit(b"a");
        let one = st.inner.dirty.bytes();
        st.inner.dirty.set_budget(one * 3);
        assert!(!st.inner.dirty.wants_checkpoint());
        edit(b"b");
        assert!(
            st.inner.dirty.wants_checkpoint(),
            "{} of {}",
            st.inner.dirty.bytes(),
            one * 3
        );
        st.checkpoint().unwrap();
        assert!(!st.inner.dirty.wants_checkpoint());
    }

    /// One edit taken by the tier: dirty, readable, written back by an
    /// ordinary command that reads the key, and recovered from the log
    /// after a crash when no command wrote it back.
    #[test]
    fn an_edit_stays_dirty_until_absorbed_and_survives_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        let base: Vec<u32> = (0..1000u32).map(|i| i * 6).collect();
        let mut t = st.begin(&[(0, b"k")]);
        t.tr_setbits(0, b"k", &base).unwrap();
        t.commit().unwrap();
        let mut t = st.begin_keep_dirty(&[(0, b"k")]);
        assert!(!t.tr_setbit(0, b"k", 1, true).unwrap());
        assert!(t.tr_setbit(0, b"k", 6, false).unwrap());
        t.commit().unwrap();
        assert_eq!(st.inner.dirty.len(), 1);
        let mut t = st.begin_keep_dirty(&[(0, b"k")]);
        assert!(t.tr_getbit(0, b"k", 1).unwrap());
        assert!(!t.tr_getbit(0, b"k", 6).unwrap());
        assert_eq!(t.tr_summary(0, b"k").unwrap().unwrap().card, 1000);
        t.commit().unwrap();
        assert_eq!(st.inner.dirty.len(), 1);
        // A crash: the log is replayed.
        drop(st);
        let st = open(dir.path());
        assert!(st.inner.dirty.is_empty());
        let mut t = st.begin(&[(0, b"k")]);
        let got = t.tr_range(0, b"k", 0, 12, 100).unwrap().unwrap();
        assert_eq!(got, vec![0, 1, 12]);
        t.commit().unwrap();
        // An ordinary read absorbs: the key is clean after its commit.
        let mut t = st.begin_keep_dirty(&[(0, b"k")]);
        assert!(t.tr_setbit(0, b"k", 7, true).is_ok());
        t.commit().unwrap();
        assert_eq!(st.inner.dirty.len(), 1);
        let mut t = st.begin(&[(0, b"k")]);
        assert_eq!(
            t.tr_range(0, b"k", 0, 12, 100).unwrap().unwrap(),
            vec![0, 1, 7, 12]
        );
        t.commit().unwrap();
        assert!(st.inner.dirty.is_empty());
    }

    /// A store in `dir` whose key `k` holds blocks 0 and 1 as arrays of
    /// 1,000 values (every sixth), written by an ordinary `Txn`; returns it
    /// and those values.
    fn open_with_two_arrays(dir: &Path) -> (Store, BTreeSet<u32>) {
        let st = open(dir);
        let base: Vec<u32> = (0..2u32)
            .flat_map(|b| (0..1000u32).map(move |i| (b << 16) | (i * 6)))
            .collect();
        set_bits(&st, b"k", &base);
        (st, base.into_iter().collect())
    }

    /// A crash (`st` dropped with its dirty keys), then key `k` of the
    /// reopened store checked against `model`; returns that store.
    fn crash_and_check(dir: &Path, st: Store, model: &BTreeSet<u32>) -> Store {
        drop(st);
        let st = open(dir);
        assert!(st.inner.dirty.is_empty());
        assert_eq!(
            values(&st, b"k").unwrap(),
            model.iter().copied().collect::<Vec<_>>()
        );
        st
    }

    /// `f` in a transaction on `key` (`keep_dirty`: one that keeps dirty
    /// keys, else an ordinary one), committed; returns what `f` did.
    fn in_txn<T>(st: &Store, key: &[u8], keep_dirty: bool, f: impl FnOnce(&mut Txn) -> T) -> T {
        let mut t = if keep_dirty {
            st.begin_keep_dirty(&[(0, key)])
        } else {
            st.begin(&[(0, key)])
        };
        let got = f(&mut t);
        t.commit().unwrap();
        got
    }

    /// TR.SETBITS (`set`) or TR.CLEARBITS of `offs` on key `k` through a
    /// `keep_dirty` transaction: its reply.
    fn keep_bits(st: &Store, offs: &[u32], set: bool) -> u64 {
        in_txn(st, b"k", true, |t| match set {
            true => t.tr_setbits(0, b"k", offs).unwrap(),
            false => t.tr_clearbits(0, b"k", offs).unwrap(),
        })
    }

    /// An edit of listed bits over existing blocks is one record of the
    /// tier (several blocks dirty, exact replies and summary), replayed
    /// after a crash, a new block included; one that empties a block or
    /// that clears the minimum takes the ordinary path, after the key's
    /// dirty state is absorbed.
    #[test]
    fn listed_bits_stay_dirty_and_survive_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let (st, mut model) = open_with_two_arrays(dir.path());
        let keep = |offs: &[u32], set: bool| keep_bits(&st, offs, set);
        let edit = [7, 13, 1 << 16 | 5, 7, 12];
        assert_eq!(keep(&edit, true), 2003);
        model.extend(edit);
        assert_eq!(st.inner.dirty.len(), 1);
        let d = st.inner.dirty.get(&crate::keys::meta_key(0, b"k")).unwrap();
        assert_eq!((d.blocks.len(), d.first_seq, d.last_seq), (2, 1, 1));
        assert_eq!(keep(&[7, 1 << 16 | 6, 99], false), 2);
        model.remove(&7);
        model.remove(&(1 << 16 | 6));
        assert_eq!(
            st.inner
                .dirty
                .get(&crate::keys::meta_key(0, b"k"))
                .unwrap()
                .last_seq,
            2
        );
        // Summary reads see the dirty state.
        let s = in_txn(&st, b"k", true, |t| t.tr_summary(0, b"k").unwrap().unwrap());
        assert_eq!(s.card, model.len() as u64);
        assert_eq!(s.sum, model.iter().map(|&v| u64::from(v)).sum::<u64>());
        // A crash: both records are replayed.
        let st = crash_and_check(dir.path(), st, &model);
        let keep = |offs: &[u32], set: bool| keep_bits(&st, offs, set);
        keep(&[1], true);
        model.insert(1);
        // A new block (5), past the maximum: a new dirty container.
        assert_eq!(keep(&[2, 5 << 16 | 9], true), model.len() as u64 + 2);
        model.extend([2, 5 << 16 | 9]);
        let d = st.inner.dirty.get(&crate::keys::meta_key(0, b"k")).unwrap();
        assert_eq!(d.blocks.len(), 2);
        let mut t = st.begin_keep_dirty(&[(0, b"k")]);
        assert!(t.tr_getbit(0, b"k", 5 << 16 | 9).unwrap());
        let s = t.tr_summary(0, b"k").unwrap().unwrap();
        assert_eq!(
            (s.max, s.containers, s.card),
            (5 << 16 | 9, 3, model.len() as u64)
        );
        t.commit().unwrap();
        // Not the tier's: the minimum cleared, a block emptied. Each
        // absorbs the key, which its commit leaves clean.
        assert_eq!(keep(&[0, 3], false), 1);
        model.remove(&0);
        assert!(st.inner.dirty.is_empty());
        keep(&[3], true);
        model.insert(3);
        assert_eq!(keep(&[5 << 16 | 9], false), 1);
        model.remove(&(5 << 16 | 9));
        // More offsets than one record carries: the ordinary path, on a
        // dirty key (absorbed first).
        keep(&[4], true);
        model.insert(4);
        assert_eq!(st.inner.dirty.len(), 1);
        let many: Vec<u32> = (0..=crate::types::bitmap::oplog::MAX_BITS as u32)
            .map(|i| 3 << 16 | i)
            .collect();
        assert_eq!(keep(&many, true), (model.len() + many.len()) as u64);
        model.extend(many);
        assert!(st.inner.dirty.is_empty());
        crash_and_check(dir.path(), st, &model);
    }

    /// A range write over existing and absent blocks is one record of the
    /// tier, with exact replies and summary, replayed after a crash; one
    /// that empties a block takes the ordinary path.
    #[test]
    fn range_writes_stay_dirty_and_survive_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let (st, mut model) = open_with_two_arrays(dir.path());
        let range = |st: &Store, (start, end): (u32, u32), op: RangeOp| {
            in_txn(st, b"k", true, |t| {
                t.tr_range_write(0, b"k", start, end, op).unwrap()
            })
        };
        let flip = |m: &mut BTreeSet<u32>, (start, end): (u32, u32)| {
            for v in start..=end {
                if !m.remove(&v) {
                    m.insert(v);
                }
            }
        };
        // Blocks 0 to 3 (2 and 3 absent), the maximum moving up.
        flip(&mut model, (100, 200_000));
        assert_eq!(
            range(&st, (100, 200_000), RangeOp::Flip),
            model.len() as u64
        );
        assert_eq!(st.inner.dirty.len(), 1);
        model.extend(5..=50);
        assert_eq!(range(&st, (5, 50), RangeOp::Set), model.len() as u64);
        let s = in_txn(&st, b"k", true, |t| t.tr_summary(0, b"k").unwrap().unwrap());
        assert_eq!((s.min, s.max, s.card), (0, 200_000, model.len() as u64));
        assert_eq!(s.sum, model.iter().map(|&v| u64::from(v)).sum::<u64>());
        let st = crash_and_check(dir.path(), st, &model);
        // Emptying block 3 (all set from 3 << 16 up to 200,000): ordinary.
        flip(&mut model, (3 << 16, 200_000));
        assert_eq!(
            range(&st, (3 << 16, 200_000), RangeOp::Flip),
            model.len() as u64
        );
        assert!(st.inner.dirty.is_empty());
        crash_and_check(dir.path(), st, &model);
    }

    /// A dirty bitset block is edited in place by the tier's TR.SETBIT
    /// when no reader holds it, and copied when one does (the reader's
    /// bytes stay as they were); either way the key reads back every edit,
    /// with exact cached facts and summary, and after a crash.
    #[test]
    fn a_dirty_bitset_is_edited_in_place_unless_a_reader_holds_it() {
        use crate::types::bitmap::container_cache::{facts_of, PAD};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        let base: Vec<u32> = (0..5000u32).map(|i| i * 13).collect();
        set_bits(&st, b"k", &base);
        let edit = |off: u32, v: bool| {
            let mut t = st.begin_keep_dirty(&[(0, b"k")]);
            let prev = t.tr_setbit(0, b"k", off, v).unwrap();
            t.commit().unwrap();
            prev
        };
        let mk = crate::keys::KeyBuf::meta(0, b"k");
        let block = || {
            let version = st.inner.dirty.meta(&mk).unwrap().version;
            st.inner
                .dirty
                .block(&mk, version, 0)
                .unwrap()
                .unwrap()
                .bytes
        };
        let bit = |b: &[u8], lo: usize| b[PAD + 4 + lo / 8] >> (lo % 8) & 1 == 1;
        // The first edit copies the clean block into the tier.
        assert!(!edit(1, true));
        // A reader's copy: the next edit copies, leaving it unchanged.
        let held = block();
        assert!(!edit(2, true));
        assert!(!bit(&held, 2) && bit(&block(), 2));
        assert!(!Arc::ptr_eq(&held, &block()));
        drop(held);
        // No reader: in place (the same allocation), a set and a clear.
        let at = Arc::as_ptr(&block());
        assert!(!edit(3, true));
        assert!(edit(13, false));
        let now = block();
        assert_eq!(Arc::as_ptr(&now), at);
        assert!(bit(&now, 3) && !bit(&now, 13));
        let view = roaringd_bitmap::ContainerView::parse(&now[PAD..]).unwrap();
        assert_eq!(view.as_ref().cardinality(), 5002);
        // Facts, when the block carries them, stay exact (a block first
        // read from the memory tier carries none).
        let facts = facts_of(&now);
        assert!(
            facts.is_none()
                || facts == crate::types::bitmap::block_facts::BlockFacts::of(view.as_ref())
        );
        drop(now);
        let mut want: BTreeSet<u32> = base.iter().copied().collect();
        want.extend([1, 2, 3]);
        want.remove(&13);
        let s = in_txn(&st, b"k", true, |t| t.tr_summary(0, b"k").unwrap().unwrap());
        assert_eq!(s.card, want.len() as u64);
        assert_eq!(s.sum, want.iter().map(|&v| u64::from(v)).sum::<u64>());
        assert_eq!((s.min, s.max), (0, 4999 * 13));
        assert_eq!(st.inner.dirty.len(), 1);
        drop(st);
        let st = open(dir.path());
        assert_eq!(
            values(&st, b"k").unwrap(),
            want.into_iter().collect::<Vec<_>>()
        );
    }

    /// TR.SETBITS through an ordinary `Txn`.
    fn set_bits(st: &Store, key: &[u8], bits: &[u32]) {
        let mut t = st.begin(&[(0, key)]);
        t.tr_setbits(0, key, bits).unwrap();
        t.commit().unwrap();
    }

    /// A fresh store (and its directory) whose keys `keys` hold [`base`].
    fn open_with_base(keys: &[&[u8]]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        for key in keys {
            set_bits(&st, key, &base());
        }
        (dir, st)
    }

    /// TR.SETBIT `key` `off` 1 in a `keep_dirty` transaction (the tier's
    /// path when it takes the edit).
    fn kept_setbit(st: &Store, key: &[u8], off: u32) {
        let mut t = st.begin_keep_dirty(&[(0, key)]);
        t.tr_setbit(0, key, off, true).unwrap();
        t.commit().unwrap();
    }

    /// 300 bits in block 0: an array container of 604 bytes, a single that
    /// the write-back tier takes (smaller containers share pages).
    fn base() -> Vec<u32> {
        (1000..1600).step_by(2).collect()
    }

    /// [`base`] with `extra`, sorted.
    fn with_base(extra: &[u32]) -> Vec<u32> {
        let mut v = base();
        v.extend_from_slice(extra);
        v.sort_unstable();
        v
    }

    /// The keys of `d` now, read by an ordinary (absorbing) `Txn`.
    fn values(st: &Store, key: &[u8]) -> Option<Vec<u32>> {
        in_txn(st, key, false, |t| {
            t.tr_range(0, key, 0, u32::MAX, usize::MAX - 1).unwrap()
        })
    }

    /// An EXEC's edits that the tier takes stay dirty, and its records
    /// reach the journal with its commit, all of them or none: with the
    /// shared log written to the OS between two of its edits (as the
    /// `everysec` thread may), a death before the commit keeps neither
    /// (a pipeline group's first edit would be in the journal by then),
    /// and after it both are replayed.
    #[test]
    fn an_exec_keeps_all_of_its_tier_edits_or_none_across_a_crash() {
        let (dir, st) = open_with_base(&[b"a", b"b"]);
        let exec = |st: &Store, crash: bool| {
            let mut t = st.begin_exec(&[(0, b"a"), (0, b"b")]);
            assert!(!t.tr_setbit(0, b"a", 1001, true).unwrap());
            st.write_to_os().unwrap();
            assert!(!t.tr_setbit(0, b"b", 1003, true).unwrap());
            assert_eq!(st.inner.dirty.len(), 2, "both edits are the tier's");
            if crash {
                t.bm.own = None;
            } else {
                t.commit().unwrap();
            }
        };
        exec(&st, true);
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"a").unwrap(), base());
        assert_eq!(values(&st, b"b").unwrap(), base());
        exec(&st, false);
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"a").unwrap(), with_base(&[1001]));
        assert_eq!(values(&st, b"b").unwrap(), with_base(&[1003]));
    }

    /// A record of a key still pending in the shared log when an EXEC
    /// edits the key is replayed before the EXEC's: the EXEC's first
    /// record writes the shared ones out first (its own chunk's key is
    /// below the shared chunk's that would otherwise hold the earlier
    /// record, and chunks replay in key order).
    #[test]
    fn an_exec_replays_after_the_edits_before_it() {
        let (dir, st) = open_with_base(&[b"a"]);
        kept_setbit(&st, b"a", 1001);
        let mut t = st.begin_exec(&[(0, b"a")]);
        assert!(t.tr_setbit(0, b"a", 1001, false).unwrap());
        t.commit().unwrap();
        kept_setbit(&st, b"a", 1003);
        assert_eq!(st.inner.dirty.len(), 1);
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"a").unwrap(), with_base(&[1003]));
    }

    /// A key with an expiry is the tier's like any other: its edits stay
    /// dirty and keep the expiry, and a crash replays them onto the key
    /// with its expiry. Once the key expires, a `keep_dirty` read deletes
    /// it and its dirty state with it, so neither a checkpoint nor a
    /// reopen brings it back.
    #[test]
    fn a_key_with_an_expiry_stays_dirty_and_expires_whole() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        let at = far_expiry();
        for key in [&b"k"[..], b"e"] {
            set_bits(&st, key, &base());
            in_txn(&st, key, false, |t| {
                t.expire_at(0, key, at as i64, Default::default()).unwrap()
            });
            kept_setbit(&st, key, 1001);
            assert!(is_dirty(&st, key));
        }
        let expiry = |st: &Store, key: &[u8]| {
            in_txn(st, key, true, |t| {
                t.meta(0, key).unwrap().unwrap().expire_at_ms
            })
        };
        assert_eq!(expiry(&st, b"k"), at);
        drop(st);
        let st = open(dir.path());
        for key in [&b"k"[..], b"e"] {
            assert_eq!(values(&st, key).unwrap(), with_base(&[1001]));
            assert_eq!(expiry(&st, key), at);
        }
        kept_setbit(&st, b"e", 1003);
        assert!(is_dirty(&st, b"e"));
        assert!(!getbit_after_expiry(&st, b"e"));
        assert!(!is_dirty(&st, b"e"));
        st.checkpoint().unwrap();
        assert_eq!(values(&st, b"e"), None);
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"e"), None);
        assert_eq!(values(&st, b"k").unwrap(), with_base(&[1001]));
        assert_eq!(
            st.db_stats()[0],
            crate::store::DbStats {
                keys: 1,
                expires: 1
            }
        );
    }

    /// A TR.BITOP into a dirty key whose expire time was set without an
    /// absorb: the tier refuses the result (it drops the TTL), the key is
    /// absorbed, and the result replaces it whole.
    #[test]
    fn a_bitop_into_a_dirty_key_with_a_kept_expiry_replaces_it() {
        let (_dir, st) = open_with_base(&[b"d"]);
        set_bits(&st, b"a", &[1000, 70_000]);
        set_bits(&st, b"b", &[1002, 1003]);
        kept_setbit(&st, b"d", 1001);
        in_txn(&st, b"d", true, |t| {
            t.expire_at(0, b"d", far_expiry() as i64, Default::default())
                .unwrap()
        });
        assert!(is_dirty(&st, b"d"));
        assert_eq!(bitop(&st, b"d", BitOp::Or, &[b"a", b"b"]), 4);
        assert_eq!(values(&st, b"d").unwrap(), vec![1000, 1002, 1003, 70_000]);
        assert!(!has_expiry(&st, b"d"));
        check_expiries_of(&st, &[b"d", b"a", b"b"]);
    }

    /// An EXPIRE of a TR.BITOP result the tier keeps whole absorbs it
    /// (recovery writes a whole value under a fresh version, which would
    /// drop an expire time set beside it): after a crash the key has its
    /// result and its expire time.
    #[test]
    fn an_expire_of_a_whole_result_absorbs_it_and_survives_a_crash() {
        let (dir, st) = open_with_base(&[b"a"]);
        set_bits(&st, b"d", &[3]);
        bitop(&st, b"d", BitOp::Or, &[b"a"]);
        assert!(is_dirty(&st, b"d"));
        let at = far_expiry();
        in_txn(&st, b"d", true, |t| {
            t.expire_at(0, b"d", at as i64, Default::default()).unwrap()
        });
        assert!(!is_dirty(&st, b"d"));
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"d").unwrap(), base());
        assert!(has_expiry(&st, b"d"));
        check_expiries_of(&st, &[b"a", b"d"]);
    }

    /// In a pipeline group (a `keep_dirty` `Txn`), an ordinary write of
    /// another key does not keep the tier from a bitmap edit after it; one
    /// of the same key does (the key is absorbed).
    #[test]
    fn a_group_keeps_edits_after_a_write_of_another_key() {
        let (dir, st) = open_with_base(&[b"d"]);
        let mut t = st.begin_keep_dirty(&[(0, b"s"), (0, b"d")]);
        t.put_string(0, b"s", b"v".to_vec(), 0, false).unwrap();
        assert!(!t.tr_setbit(0, b"d", 1001, true).unwrap());
        t.commit().unwrap();
        assert!(is_dirty(&st, b"d"));
        // A TR.RANGE of `d` in the group absorbs it first
        // (`dispatch::absorb_unless_kept`): later edits are ordinary.
        let mut t = st.begin_keep_dirty(&[(0, b"d")]);
        t.absorb_key(0, b"d");
        let got = t.tr_range(0, b"d", 1000, 1002, 10).unwrap().unwrap();
        assert_eq!(got, vec![1000, 1001, 1002]);
        assert!(!t.tr_setbit(0, b"d", 1003, true).unwrap());
        t.commit().unwrap();
        assert!(!is_dirty(&st, b"d"));
        assert_eq!(values(&st, b"d").unwrap(), with_base(&[1001, 1003]));
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"d").unwrap(), with_base(&[1001, 1003]));
    }

    /// An expire time set in place reaches the dirty entry with its
    /// commit only, even when a tier edit of the key in the same `Txn`
    /// records the entry first: a `Txn` dropped without commit leaves the
    /// stored time.
    #[test]
    fn an_expiry_set_in_place_reaches_the_dirty_entry_with_the_commit() {
        let (_dir, st) = open_with_base(&[b"d"]);
        kept_setbit(&st, b"d", 1001);
        let entry_expiry = |st: &Store| {
            st.inner
                .dirty
                .meta(&crate::keys::meta_key(0, b"d"))
                .unwrap()
                .expire_at_ms
        };
        let at = far_expiry();
        for commit in [false, true] {
            let mut t = st.begin_keep_dirty(&[(0, b"d")]);
            assert!(t.expire_at(0, b"d", at as i64, Default::default()).unwrap());
            t.tr_setbit(0, b"d", 1003, true).unwrap();
            assert_eq!(t.meta(0, b"d").unwrap().unwrap().expire_at_ms, at);
            if commit {
                t.commit().unwrap();
            } else {
                drop(t);
            }
            assert!(is_dirty(&st, b"d"));
            assert_eq!(entry_expiry(&st), if commit { at } else { 0 });
        }
        check_expiries_of(&st, &[b"d"]);
    }

    /// A TR.BITOP result the tier keeps whole, absorbed by a `Txn` that
    /// edits the key, overwrites it with another result in place and
    /// reads it back (MULTI/EXEC): every read sees the `Txn`'s own writes.
    #[test]
    fn a_whole_result_absorbed_then_rewritten_in_place_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        let a: Vec<u32> = (0..3000u32).map(|i| i * 7).collect();
        let b: Vec<u32> = (0..3000u32).map(|i| 65_536 + i * 5).collect();
        set_bits(&st, b"a", &a);
        set_bits(&st, b"b", &b);
        set_bits(&st, b"d", &[3]);
        bitop(&st, b"d", BitOp::Or, &[b"a", b"b"]);
        assert!(st
            .inner
            .dirty
            .get(&crate::keys::meta_key(0, b"d"))
            .is_some_and(|d| d.whole));
        let mut t = st.begin(&[(0, b"d"), (0, b"b")]);
        assert!(!t.tr_setbit(0, b"d", 65_536 + 7, true).unwrap());
        t.tr_bitop(0, b"d", BitOp::Or, &[b"d", b"b"]).unwrap();
        assert!(t.tr_getbit(0, b"d", 65_536 + 7).unwrap());
        assert!(t.tr_getbit(0, b"d", 7).unwrap());
        t.commit().unwrap();
        let mut want: BTreeSet<u32> = a.iter().chain(&b).copied().collect();
        want.insert(65_536 + 7);
        assert_eq!(
            values(&st, b"d").unwrap(),
            want.into_iter().collect::<Vec<_>>()
        );
    }

    /// The facts (extremes, low sum) that cached containers carry into a
    /// TR.BITOP's summary stay exact while the sources are edited bit by
    /// bit on both paths (the tier's and the `Kv`'s delta entries), clears
    /// of a container's extremes and kind changes included: every result's
    /// summary is checked against its values.
    #[test]
    fn bitop_summaries_stay_exact_while_sources_are_edited_bit_by_bit() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        let mut model: BTreeMap<usize, BTreeSet<u32>> = BTreeMap::new();
        // Block 0 of "a" a bitset, block 1 an array big enough for delta
        // entries; "b" sparse arrays.
        let a: Vec<u32> = (0..5000u32)
            .map(|i| i * 13)
            .chain((0..900).map(|i| 65_536 + i * 3))
            .collect();
        let b: Vec<u32> = (0..300u32).map(|i| i * 211).chain([131_072 + 5]).collect();
        set_bits(&st, KEYS[0], &a);
        set_bits(&st, KEYS[1], &b);
        model.insert(0, a.into_iter().collect());
        model.insert(1, b.into_iter().collect());
        let mut x: u64 = 3;
        for i in 0..400 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (x >> 60) as usize % 2;
            let m = model.get_mut(&k).unwrap();
            // Now and then a key's extreme, else an offset in block 0 or
            // in the key's own other block (1 or 2), which a TR.BITOP OR
            // passes through as the source's cached container.
            let block = if (x >> 20).is_multiple_of(2) {
                0
            } else {
                k as u32 + 1
            };
            let o = match (x >> 40) % 8 {
                0 => *m.iter().next().unwrap(),
                1 => *m.iter().next_back().unwrap(),
                _ => block * 65_536 + ((x >> 8) % 65_536) as u32,
            };
            let v = !(x >> 5).is_multiple_of(3) || m.len() < 10;
            let mut t = if i % 2 == 0 {
                st.begin_keep_dirty(&[(0, KEYS[k])])
            } else {
                st.begin(&[(0, KEYS[k])])
            };
            t.tr_setbit(0, KEYS[k], o, v).unwrap();
            t.commit().unwrap();
            if v {
                m.insert(o);
            } else {
                m.remove(&o);
            }
            let dest: &[u8] = b"d";
            let op = [BitOp::Or, BitOp::Xor, BitOp::And][i % 3];
            bitop(&st, dest, op, &[KEYS[0], KEYS[1]]);
            let (ma, mb) = (&model[&0], &model[&1]);
            let want: Vec<u32> = match op {
                BitOp::Or => ma.union(mb).copied().collect(),
                BitOp::Xor => ma.symmetric_difference(mb).copied().collect(),
                _ => ma.intersection(mb).copied().collect(),
            };
            let mut t = st.begin_keep_dirty(&[(0, dest)]);
            let s = t.tr_summary(0, dest).unwrap().unwrap();
            t.commit().unwrap();
            let sum: u64 = want.iter().map(|&v| u64::from(v)).sum();
            let got = (s.card, s.sum, s.min, s.max);
            let first = want.first().copied().unwrap_or(0);
            let last = want.last().copied().unwrap_or(0);
            assert_eq!(
                got,
                (want.len() as u64, sum, first, last),
                "step {i} {op:?}"
            );
        }
    }

    /// A TR.BITOP result kept whole by the tier: read through the dirty
    /// map (absent blocks included), edited, replaced by the next result,
    /// recovered after a crash, and recovered to the same state when the
    /// replay runs again (a crash during recovery).
    #[test]
    fn a_bitop_result_stays_whole_and_replays_twice_to_the_same_state() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        let a: Vec<u32> = (0..500u32).map(|i| i * 7).collect();
        let b: Vec<u32> = (0..500u32).map(|i| (2 << 16) | (i * 5)).collect();
        for (key, vals) in [(&b"a"[..], &a[..]), (b"b", &b), (b"d", &[9][..])] {
            let mut t = st.begin(&[(0, key)]);
            t.tr_setbits(0, key, vals).unwrap();
            t.commit().unwrap();
        }
        assert_eq!(bitop(&st, b"d", BitOp::Or, &[b"a", b"b"]), 1000);
        let mk = crate::keys::meta_key(0, b"d");
        let d = st.inner.dirty.get(&mk).expect("the result is kept dirty");
        assert!(d.whole);
        assert_eq!(d.blocks.len(), 2);
        // Each block is one source's own container (shared with the
        // container cache when a set operation put the source there).
        assert!(matches!(d.blocks, super::Blocks::Value(_)));
        drop(d);
        let next = || st.inner.dirty.log.lock().as_ref().unwrap().next_seq();
        let seq = next();
        assert_eq!(bitop(&st, b"d", BitOp::Or, &[b"b", b"a"]), 1000);
        assert_eq!(next(), seq, "the same result again logs nothing");
        let mut t = st.begin_keep_dirty(&[(0, b"d")]);
        assert!(t.tr_getbit(0, b"d", 7).unwrap());
        assert!(t.tr_getbit(0, b"d", (2 << 16) | 5).unwrap());
        assert!(!t.tr_getbit(0, b"d", 9).unwrap());
        assert!(!t.tr_getbit(0, b"d", 1 << 16).unwrap(), "block 1 is absent");
        assert_eq!(t.tr_summary(0, b"d").unwrap().unwrap().card, 1000);
        // An edit of a block the result holds stays in the tier.
        assert!(!t.tr_setbit(0, b"d", 8, true).unwrap());
        t.commit().unwrap();
        assert!(st.inner.dirty.get(&mk).is_some_and(|d| d.whole));
        let mut model: BTreeSet<u32> = a.iter().chain(&b).copied().collect();
        model.insert(8);
        assert_eq!(
            values(&st, b"a"),
            Some(a.clone()),
            "the shared source is intact"
        );
        assert_eq!(values(&st, b"d"), Some(model.iter().copied().collect()));
        assert!(st.inner.dirty.is_empty(), "an ordinary read absorbs");
        // A second result replaces the first; an edit follows it.
        assert_eq!(bitop(&st, b"d", BitOp::Xor, &[b"a", b"b"]), 1000);
        let mut t = st.begin_keep_dirty(&[(0, b"d")]);
        assert!(t.tr_setbit(0, b"d", 7, false).unwrap());
        t.commit().unwrap();
        let mut model: BTreeSet<u32> = a.iter().chain(&b).copied().collect();
        model.remove(&7);
        let want: Vec<u32> = model.iter().copied().collect();
        // What a crash leaves: the records handed to the OS, and the
        // floor as it is.
        st.write_to_os().unwrap();
        let saved = saved_log(&st);
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"d"), Some(want.clone()));
        // As if recovery had crashed before it raised the floor.
        restore_log(&st, &saved);
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"d"), Some(want));
        let mut t = st.begin(&[(0, b"d")]);
        assert_eq!(t.tr_summary(0, b"d").unwrap().unwrap().card, 999);
        t.commit().unwrap();
    }

    /// A `keep_dirty` transaction (a pipeline group of TR.SETBITs) whose
    /// first edit the tier refuses writes the rest through the `Kv`: each
    /// dirty key it edits is absorbed first, so no edit is hidden by the
    /// key's dirty state or undone when that state is written back.
    #[test]
    fn a_group_the_tier_refuses_absorbs_each_key_it_edits() {
        let (_dir, st) = open_with_base(&[b"a", b"b"]);
        for key in [&b"a"[..], b"b"] {
            kept_setbit(&st, key, 3);
        }
        assert_eq!(st.inner.dirty.len(), 2);
        let mut t = st.begin_keep_dirty(&[(0, b"a"), (0, b"b")]);
        // A new container: not the tier's.
        t.tr_setbit(0, b"a", 1 << 16, true).unwrap();
        t.tr_setbit(0, b"b", 7, true).unwrap();
        t.commit().unwrap();
        assert_eq!(values(&st, b"a").unwrap(), with_base(&[3, 1 << 16]));
        assert_eq!(values(&st, b"b").unwrap(), with_base(&[3, 7]));
        st.checkpoint().unwrap();
        assert_eq!(values(&st, b"b").unwrap(), with_base(&[3, 7]));
    }

    /// A store whose journal kept an absorb but not the records before it
    /// (the journal keeps a prefix, so only damage could do this) has a
    /// `wb` entry above the log's last record. The sequence
    /// numbers the log then hands out again must not be taken for
    /// absorbed: an edit logged after the restart survives the next crash.
    #[test]
    fn records_after_a_lost_log_tail_are_not_taken_for_absorbed() {
        let (dir, st) = open_with_base(&[b"k"]);
        for off in [1, 2, 3] {
            let mut t = st.begin_keep_dirty(&[(0, b"k")]);
            t.tr_setbit(0, b"k", off, true).unwrap();
            t.commit().unwrap();
        }
        assert_eq!(st.inner.dirty.len(), 1);
        // An ordinary read absorbs the key: its `wb` entry names seq 3.
        assert_eq!(values(&st, b"k").unwrap(), with_base(&[1, 2, 3]));
        // The loss: the log's records go.
        st.persist().unwrap();
        let mut batch = crate::kv::WriteBatch::new();
        for (k, _) in saved_log(&st).0 {
            batch.delete(crate::kv::Space::Log, k);
        }
        st.inner
            .kv
            .write(batch, crate::kv::Durability::Sync)
            .unwrap();
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"k").unwrap(), with_base(&[1, 2, 3]));
        let mut t = st.begin_keep_dirty(&[(0, b"k")]);
        t.tr_setbit(0, b"k", 100, true).unwrap();
        t.commit().unwrap();
        assert_eq!(st.inner.dirty.len(), 1);
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"k").unwrap(), with_base(&[1, 2, 3, 100]));
    }

    /// A value record whose containers are not valid is `Corrupt` at
    /// open, not a panic.
    #[test]
    fn a_hostile_value_record_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path());
        st.inner
            .dirty
            .log
            .lock()
            .as_mut()
            .unwrap()
            .to(None)
            .append_value(0, 1, b"k", vec![(0u16, vec![0xff; 5].into())].into(), 0)
            .unwrap();
        st.persist().unwrap();
        drop(st);
        let r = Store::open(StoreConfig {
            dir: Some(dir.path().to_path_buf()),
            ..StoreConfig::default()
        });
        assert!(matches!(r, Err(crate::error::StoreError::Corrupt(_))));
    }

    /// A checkpoint raises the log's floor past the records it wrote
    /// back and deletes their chunks; the records of a key still dirty
    /// stay.
    #[test]
    fn a_checkpoint_deletes_the_chunks_below_the_floor() {
        let (dir, st) = open_with_base(&[b"a", b"b"]);
        for off in [1, 2, 3] {
            kept_setbit(&st, b"a", off);
        }
        assert!(saved_log(&st).0.is_empty(), "pending until a flush");
        st.persist().unwrap();
        assert_eq!(saved_log(&st).0.len(), 1, "one chunk");
        st.checkpoint().unwrap();
        kept_setbit(&st, b"b", 4);
        st.persist().unwrap();
        let (records, floor) = saved_log(&st);
        assert_eq!(floor, Some(4u64.to_be_bytes().to_vec()));
        let seqs: Vec<Option<u64>> = records
            .iter()
            .map(|(k, _)| crate::types::bitmap::oplog::seq_of_key(k))
            .collect();
        assert_eq!(seqs, [Some(4)]);
        drop(st);
        let st = open(dir.path());
        assert_eq!(values(&st, b"a").unwrap(), with_base(&[1, 2, 3]));
        assert_eq!(values(&st, b"b").unwrap(), with_base(&[4]));
    }

    /// The log's record entries and its floor entry, as stored.
    type SavedLog = (Vec<(Vec<u8>, Vec<u8>)>, Option<Vec<u8>>);

    fn saved_log(st: &Store) -> SavedLog {
        use crate::kv::Space;
        use crate::types::bitmap::oplog;
        let records = st
            .inner
            .kv
            .range(
                Space::Log,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                false,
            )
            .map(Result::unwrap)
            .collect();
        let floor = st.inner.kv.get(Space::Meta, &oplog::floor_key()).unwrap();
        (records, floor)
    }

    /// Writes `saved`'s records and floor back, durably.
    fn restore_log(st: &Store, (records, floor): &SavedLog) {
        use crate::kv::{Space, WriteBatch};
        use crate::types::bitmap::oplog;
        let mut batch = WriteBatch::new();
        for (k, v) in records {
            batch.put(Space::Log, k.clone(), v.clone());
        }
        match floor {
            Some(f) => batch.put(Space::Meta, oplog::floor_key(), f.clone()),
            None => batch.delete(Space::Meta, oplog::floor_key()),
        }
        st.inner
            .kv
            .write(batch, crate::kv::Durability::Sync)
            .unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// The write-back tier against a model: single-bit edits taken by
        /// the tier, mixed with ordinary commands that absorb dirty keys,
        /// checkpoints, and crashes (the store dropped with dirty keys,
        /// then reopened: the operation log is replayed). Every reply,
        /// and every key after each crash and at the end, must match.
        #[test]
        fn tier_matches_a_model_across_crashes(steps in proptest::collection::vec(step(), 1..120)) {
            let dir = tempfile::tempdir().unwrap();
            let mut st = open(dir.path());
            let mut model: BTreeMap<usize, BTreeSet<u32>> = BTreeMap::new();
            let base: Vec<u32> = (0..2u32)
                .flat_map(|b| (0..1000u32).map(move |i| (b << 16) | (i * 6)))
                .chain((0..4100u32).map(|i| (2 << 16) | (i * 13)))
                .collect();
            for (k, key) in KEYS.iter().enumerate() {
                let mut t = st.begin(&[(0, key)]);
                t.tr_setbits(0, key, &base).unwrap();
                t.commit().unwrap();
                model.insert(k, base.iter().copied().collect());
            }
            for step in steps {
                match step {
                    Step::Fast(k, o, v) => {
                        let mut t = st.begin_keep_dirty(&[(0, KEYS[k])]);
                        let prev = t.tr_setbit(0, KEYS[k], o, v).unwrap();
                        t.commit().unwrap();
                        let m = model.entry(k).or_default();
                        proptest::prop_assert_eq!(prev, m.contains(&o));
                        if v { m.insert(o); } else { m.remove(&o); }
                    }
                    Step::FastGroup(k, edits, mixed) => {
                        let mut t = st.begin_keep_dirty(&[(0, b"s"), (0, KEYS[k])]);
                        if mixed {
                            t.put_string(0, b"s", b"v".to_vec(), 0, false).unwrap();
                        }
                        let m = model.entry(k).or_default();
                        for (o, v) in edits {
                            let prev = t.tr_setbit(0, KEYS[k], o, v).unwrap();
                            proptest::prop_assert_eq!(prev, m.contains(&o));
                            if v { m.insert(o); } else { m.remove(&o); }
                        }
                        t.commit().unwrap();
                    }
                    Step::FastExtreme(k, max) => {
                        let Some(m) = model.get_mut(&k) else {
                            continue;
                        };
                        let Some(&o) = (if max { m.last() } else { m.first() }) else {
                            continue;
                        };
                        let mut t = st.begin_keep_dirty(&[(0, KEYS[k])]);
                        proptest::prop_assert!(t.tr_setbit(0, KEYS[k], o, false).unwrap());
                        t.commit().unwrap();
                        m.remove(&o);
                    }
                    Step::Get(k, o) => {
                        let mut t = st.begin_keep_dirty(&[(0, KEYS[k])]);
                        let got = t.tr_getbit(0, KEYS[k], o).unwrap();
                        t.commit().unwrap();
                        proptest::prop_assert_eq!(got, model.get(&k).is_some_and(|m| m.contains(&o)));
                    }
                    Step::Summary(k) => {
                        let mut t = st.begin_keep_dirty(&[(0, KEYS[k])]);
                        let got = t.tr_summary(0, KEYS[k]).unwrap();
                        t.commit().unwrap();
                        let Some(m) = model.get(&k) else {
                            proptest::prop_assert!(got.is_none());
                            continue;
                        };
                        let got = got.unwrap();
                        proptest::prop_assert_eq!(got.card, m.len() as u64);
                        proptest::prop_assert_eq!(got.sum, m.iter().map(|&v| u64::from(v)).sum::<u64>());
                        if let (Some(a), Some(b)) = (m.first(), m.last()) {
                            proptest::prop_assert_eq!((got.min, got.max), (*a, *b));
                        }
                        // The whole summary, census included, is that of
                        // the containers an ordinary read (absorbing) sees.
                        let mut t = st.begin(&[(0, KEYS[k])]);
                        let b = t.tr_load(0, KEYS[k]).unwrap().unwrap();
                        t.commit().unwrap();
                        let want = crate::types::bitmap::summary_of_bitmap(&b);
                        // Extremes mean nothing in an empty bitmap.
                        let (min, max) = if got.card == 0 { (0, 0) } else { (got.min, got.max) };
                        proptest::prop_assert_eq!(BitmapSummary { min, max, ..got }, want);
                    }
                    Step::Bits(k, offs, set, fast) => {
                        let mut t = if fast {
                            st.begin_keep_dirty(&[(0, KEYS[k])])
                        } else {
                            st.begin(&[(0, KEYS[k])])
                        };
                        if set {
                            let card = t.tr_setbits(0, KEYS[k], &offs).unwrap();
                            let m = model.entry(k).or_default();
                            m.extend(offs);
                            proptest::prop_assert_eq!(card, m.len() as u64);
                        } else {
                            let changed = t.tr_clearbits(0, KEYS[k], &offs).unwrap();
                            let mut want = 0;
                            if let Some(m) = model.get_mut(&k) {
                                for o in offs { want += u64::from(m.remove(&o)); }
                            }
                            proptest::prop_assert_eq!(changed, want);
                        }
                        t.commit().unwrap();
                    }
                    Step::RangeWrite(k, start, n, flip, fast) => {
                        let end = start.saturating_add(n);
                        let mut t = if fast {
                            st.begin_keep_dirty(&[(0, KEYS[k])])
                        } else {
                            st.begin(&[(0, KEYS[k])])
                        };
                        let op = if flip { RangeOp::Flip } else { RangeOp::Set };
                        let card = t.tr_range_write(0, KEYS[k], start, end, op).unwrap();
                        t.commit().unwrap();
                        let m = model.entry(k).or_default();
                        for v in start..=end {
                            if flip && m.contains(&v) {
                                m.remove(&v);
                            } else {
                                m.insert(v);
                            }
                        }
                        proptest::prop_assert_eq!(card, m.len() as u64);
                    }
                    Step::Range(k) => {
                        let mut t = st.begin(&[(0, KEYS[k])]);
                        let got = t.tr_range(0, KEYS[k], 0, u32::MAX, usize::MAX - 1).unwrap();
                        t.commit().unwrap();
                        proptest::prop_assert_eq!(got, model.get(&k).map(|m| m.iter().copied().collect::<Vec<_>>()));
                    }
                    Step::BitOp(k, op, srcs) => {
                        let op = op_of(op, srcs.len());
                        let keys: Vec<&[u8]> = srcs.iter().map(|&i| KEYS[i]).collect();
                        let sets: Vec<BTreeSet<u32>> =
                            srcs.iter().map(|i| model.get(i).cloned().unwrap_or_default()).collect();
                        let want = model_op(op, &sets);
                        // The tier takes the result when the destination
                        // exists, is no source, the sources are clean (an
                        // absorb is a write) and the result is not empty.
                        let clean = |i: &usize| !is_dirty(&st, KEYS[*i]);
                        // A result replaces the key's TTL too, which the
                        // tier never changes.
                        let taken = model.contains_key(&k)
                            && !has_expiry(&st, KEYS[k])
                            && !srcs.contains(&k)
                            && srcs.iter().all(clean)
                            && !want.is_empty();
                        proptest::prop_assert_eq!(bitop(&st, KEYS[k], op, &keys), want.len() as u64);
                        let whole = st.inner.dirty.get(&crate::keys::meta_key(0, KEYS[k])).is_some_and(|d| d.whole);
                        proptest::prop_assert_eq!(whole, taken);
                        model.insert(k, want);
                    }
                    Step::Del(k) => {
                        let mut t = st.begin(&[(0, KEYS[k])]);
                        t.del(0, KEYS[k]).unwrap();
                        t.commit().unwrap();
                        model.remove(&k);
                    }
                    Step::Expire(k) => {
                        let mut t = st.begin(&[(0, KEYS[k])]);
                        let set = t.expire_at(0, KEYS[k], far_expiry() as i64, Default::default()).unwrap();
                        t.commit().unwrap();
                        proptest::prop_assert_eq!(set, has_expiry(&st, KEYS[k]));
                    }
                    Step::ExecBitOp(k, o, src, probes) => {
                        let mut t = st.begin(&[(0, KEYS[k]), (0, KEYS[src])]);
                        let prev = t.tr_setbit(0, KEYS[k], o, true).unwrap();
                        proptest::prop_assert_eq!(prev, model.get(&k).is_some_and(|m| m.contains(&o)));
                        let mut want = model.get(&k).cloned().unwrap_or_default();
                        want.insert(o);
                        want.extend(model.get(&src).cloned().unwrap_or_default());
                        let card = t.tr_bitop(0, KEYS[k], BitOp::Or, &[KEYS[k], KEYS[src]]).unwrap();
                        proptest::prop_assert_eq!(card, want.len() as u64);
                        for p in std::iter::once(o).chain(probes) {
                            proptest::prop_assert_eq!(t.tr_getbit(0, KEYS[k], p).unwrap(), want.contains(&p));
                        }
                        t.commit().unwrap();
                        model.insert(k, want);
                    }
                    Step::KeptExpire(k, persist) => {
                        let was_dirty = is_dirty(&st, KEYS[k]);
                        // A whole value (a TR.BITOP result) is absorbed.
                        let was_whole = st.inner.dirty.get(&crate::keys::meta_key(0, KEYS[k])).is_some_and(|d| d.whole);
                        let had = has_expiry(&st, KEYS[k]);
                        let exists = {
                            let mut t = st.begin_keep_dirty(&[(0, KEYS[k])]);
                            let m = t.meta(0, KEYS[k]).unwrap();
                            t.commit().unwrap();
                            m.is_some()
                        };
                        let mut t = st.begin_keep_dirty(&[(0, KEYS[k])]);
                        let done = if persist {
                            t.persist(0, KEYS[k]).unwrap()
                        } else {
                            t.expire_at(0, KEYS[k], far_expiry() as i64, Default::default()).unwrap()
                        };
                        t.commit().unwrap();
                        proptest::prop_assert_eq!(done, if persist { had } else { exists });
                        proptest::prop_assert_eq!(has_expiry(&st, KEYS[k]), exists && !persist);
                        proptest::prop_assert_eq!(is_dirty(&st, KEYS[k]), was_dirty && !was_whole);
                        check_expiries(&st);
                    }
                    Step::Expired(k) => {
                        let expiring = has_expiry(&st, KEYS[k]);
                        let got = getbit_after_expiry(&st, KEYS[k]);
                        if expiring {
                            proptest::prop_assert!(!got);
                            proptest::prop_assert!(!is_dirty(&st, KEYS[k]));
                            model.remove(&k);
                        } else {
                            proptest::prop_assert_eq!(got, model.get(&k).is_some_and(|m| m.contains(&0)));
                        }
                    }
                    Step::Exec(edits, crash) => {
                        let mut t = st.begin_exec(&[(0, KEYS[0]), (0, KEYS[1])]);
                        let mut after = model.clone();
                        for (i, (k, o, v)) in edits.into_iter().enumerate() {
                            let m = after.entry(k).or_default();
                            let prev = t.tr_setbit(0, KEYS[k], o, v).unwrap();
                            proptest::prop_assert_eq!(prev, m.contains(&o));
                            if v { m.insert(o); } else { m.remove(&o); }
                            if i == 0 {
                                st.write_to_os().unwrap();
                            }
                        }
                        if crash {
                            t.bm.own = None;
                            drop(t);
                            drop(st);
                            st = open(dir.path());
                            check_all(&st, &model);
                            check_expiries(&st);
                        } else {
                            t.commit().unwrap();
                            model = after;
                        }
                    }
                    Step::Checkpoint => st.checkpoint().unwrap(),
                    Step::Crash => {
                        drop(st);
                        st = open(dir.path());
                        check_all(&st, &model);
                        check_expiries(&st);
                    }
                }
            }
            check_all(&st, &model);
            check_expiries(&st);
            drop(st);
            let st = open(dir.path());
            check_all(&st, &model);
            check_expiries(&st);
            proptest::prop_assert!(st.inner.dirty.is_empty());
        }
    }
}
