//! The in-process container cache: hot bitmap containers and container
//! directories, served from process memory in front of the `Kv`.
//!
//! What it holds, keyed by the key *version* (unique for the life of a
//! store: `epoch << 40 | seq`, never reused, a new one for every DEL-and-
//! recreate, overwrite, RENAME, ...):
//! - `(version, block)` → the container's serialized bytes, exactly as
//!   stored (callers still parse them through the checked view);
//! - `version` → the key version's directory: its blocks, ascending;
//! - `version` → the key version held whole ([`Held`]): every block with
//!   its cached container, ascending, so that a merge scan of a source
//!   takes one lookup, not one per container (a lookup's locked
//!   instructions serialize its cache misses: 14 per census1881 pairwise
//!   OR took ~2.3 µs of its ~8).
//!
//! Coherence. An entry is only ever filled with what the `Kv` held, and
//! only changed after a successful commit (never from a `Txn` overlay), so
//! uncommitted, aborted or failed writes never reach it. Since versions are
//! unique, DEL, overwrites, expiry, FLUSHDB and RENAME need no work here:
//! the old version's entries can no longer be asked for and age out. The
//! only writes under a live version are container edits by `types::bitmap`,
//! which the `Txn` records ([`Pending`]); after its batch is written the
//! commit hands them to [`Prepared::apply`], which replaces cached entries
//! by the new bytes (or drops them), fixes cached directories and drops
//! the [`Held`] entry of every version it wrote. Fills
//! that race with such a commit are refused: a reader takes
//! [`ContainerCache::snapshot`] of the version's write counter (one of
//! 1,024 stripes) before reading the `Kv`, and the fill inserts only if no
//! commit applied container writes to a version of that stripe since; a
//! commit bumps the counter *before* it touches the shards, so a fill
//! either sees the bump or lands before the commit's own update, which
//! then fixes it. A [`Held`] entry is built from cached containers, not
//! from the `Kv`, so the commit bumps the counters a second time once it
//! has updated the containers, then drops the held entries of the
//! versions it wrote: a held fill that read a container before its update
//! is refused by that second bump or removed after it.
//!
//! Memory: a byte budget (`container-cache-bytes`) split evenly over
//! [`SHARDS`] mutex-protected shards (a shard per lock, so concurrent
//! readers rarely meet); each shard evicts by CLOCK (second chance) when
//! its share is passed. Charged per entry: value bytes plus
//! [`ENTRY_OVERHEAD`]. A value over a quarter of a shard's share is not
//! cached. Budget 0 disables the cache. A [`Held`] entry is charged its
//! containers' bytes although they are shared with their own entries
//! (which may be evicted while it keeps them alive): the budget then
//! bounds what is held, at the price of counting a held key twice.

use crate::types::bitmap::block_facts::BlockFacts;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes of padding in front of every cached container: an `Arc<[u8]>`'s
/// data starts 8-aligned (after its two counters), so with 12 bytes of
/// padding the container's payload (after its 4-byte header) is 8-aligned
/// and the checked view borrows a bitset's words instead of copying them.
/// The padding carries what is known of the container beside its bytes:
/// byte 2 is 1 when bytes 4–11 hold its [`BlockFacts`] (minimum,
/// maximum, low sum; little-endian u16, u16, u32), else 0; bytes 0, 1
/// and 3 are 0. Cached values are [`padded`] or [`padded_with`]; readers
/// use `&value[PAD..]` and [`facts_of`].
pub const PAD: usize = 12;

/// `bytes` as a cached container value: [`PAD`] bytes (no facts), then
/// `bytes`.
#[must_use]
pub fn padded(bytes: &[u8]) -> Arc<[u8]> {
    padded_with(bytes, None)
}

/// `bytes` as a cached container value carrying `facts`, which must be
/// the facts of the container `bytes` encodes ([`BlockFacts::of`]).
#[must_use]
pub fn padded_with(bytes: &[u8], facts: Option<BlockFacts>) -> Arc<[u8]> {
    let mut a = padded_by(bytes.len(), |out| out.write_copy_of_slice(bytes));
    if let Some(f) = facts {
        set_facts(
            Arc::get_mut(&mut a).expect("a new Arc has no other owner"),
            f,
        );
    }
    a
}

/// A cached container value (no facts) of `len` container
/// bytes, which `fill` writes in place and returns, initialized: one
/// allocation, no intermediate copy (a `Vec` turned into an `Arc<[u8]>`
/// is copied again).
///
/// # Panics
/// When `fill` returns another slice than the one it was given.
#[must_use]
pub fn padded_by(
    len: usize,
    fill: impl for<'o> FnOnce(&'o mut [MaybeUninit<u8>]) -> &'o mut [u8],
) -> Arc<[u8]> {
    let mut a = Arc::<[u8]>::new_uninit_slice(PAD + len);
    let dst = Arc::get_mut(&mut a).expect("a new Arc has no other owner");
    let (head, body) = dst.split_at_mut(PAD);
    head.write_copy_of_slice(&[0u8; PAD]);
    let want = body.as_ptr().cast::<u8>();
    let done = fill(body);
    assert!(
        std::ptr::eq(done.as_ptr(), want) && done.len() == len,
        "padded_by: fill returned another slice"
    );
    // SAFETY: the head was written above, and `done`, a `&mut [u8]` over
    // exactly the rest (checked), proves that initialized.
    unsafe { a.assume_init() }
}

/// Asks the CPU to start loading the head of a cached value (its `Arc`
/// counters, padding and container header) ahead of its use; a hint only
/// (no effect off x86-64).
#[inline]
pub fn prefetch(value: &Arc<[u8]>) {
    let p = Arc::as_ptr(value).cast::<u8>();
    // The counters lie 16 bytes before the data, the container's header
    // at PAD.
    crate::prefetch::line(p.wrapping_sub(16));
    crate::prefetch::line(p.wrapping_add(PAD + 4));
}

/// Records `facts` in a padded value's head (see [`PAD`]); they must be
/// the facts of the container the value holds.
pub fn set_facts(value: &mut [u8], f: BlockFacts) {
    value[2] = 1;
    value[4..6].copy_from_slice(&f.min.to_le_bytes());
    value[6..8].copy_from_slice(&f.max.to_le_bytes());
    value[8..12].copy_from_slice(&f.low_sum.to_le_bytes());
}

/// The container facts a [`padded_with`] value carries, if any.
#[must_use]
pub fn facts_of(value: &[u8]) -> Option<BlockFacts> {
    (value[2] == 1).then(|| BlockFacts {
        min: u16::from_le_bytes([value[4], value[5]]),
        max: u16::from_le_bytes([value[6], value[7]]),
        low_sum: u32::from_le_bytes([value[8], value[9], value[10], value[11]]),
    })
}

/// Number of shards.
pub const SHARDS: usize = 64;

/// Bytes charged per entry on top of its value (map slot, ring slot, `Arc`
/// header): an estimate, so that a budget bounds the real footprint.
pub const ENTRY_OVERHEAD: usize = 96;

/// Default budget in bytes (64 MiB).
pub const DEFAULT_BYTES: u64 = 64 * 1024 * 1024;

/// A key version held whole: each block (ascending, every block of the
/// version) with its cached container value (as [`ContainerCache::container`]
/// returns it).
pub type Held = Arc<[(u16, Arc<[u8]>)]>;

/// Bytes a [`Held`] entry of `n` containers taking `container_bytes`
/// (their values' lengths) is charged.
#[must_use]
pub fn held_charge(n: usize, container_bytes: usize) -> usize {
    ENTRY_OVERHEAD + n * std::mem::size_of::<(u16, Arc<[u8]>)>() + container_bytes
}

/// What a cache entry is keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Id {
    /// One container of a key version.
    Container(u64, u16),
    /// The directory of a key version.
    Dir(u64),
    /// A key version held whole.
    Held(u64),
}

/// A cached value.
#[derive(Clone, Debug)]
enum Val {
    Container(Arc<[u8]>),
    Dir(Arc<[u16]>),
    Held(Held),
}

impl Val {
    fn bytes(&self) -> usize {
        match self {
            Val::Container(b) => ENTRY_OVERHEAD + b.len(),
            Val::Dir(d) => ENTRY_OVERHEAD + d.len() * 2,
            Val::Held(h) => held_charge(h.len(), h.iter().map(|(_, c)| c.len()).sum()),
        }
    }
}

struct Slot {
    id: Id,
    val: Val,
    referenced: bool,
}

#[derive(Default)]
struct Shard {
    /// Fx-hashed: ids are two integers, SipHash cost ~270 instructions per
    /// lookup (a third of a cached TR.GETBIT's work above the PING floor).
    map: FxHashMap<Id, usize>,
    /// The CLOCK ring; `None` = a free slot (listed in `free`).
    ring: Vec<Option<Slot>>,
    free: Vec<usize>,
    hand: usize,
    bytes: usize,
    hits: u64,
    misses: u64,
    evictions: u64,
}

impl Shard {
    fn get(&mut self, id: Id) -> Option<&Val> {
        match self.map.get(&id) {
            Some(&i) => {
                self.hits += 1;
                let s = self.ring[i].as_mut()?;
                s.referenced = true;
                Some(&s.val)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    fn remove(&mut self, id: Id) {
        if let Some(i) = self.map.remove(&id) {
            if let Some(s) = self.ring[i].take() {
                self.bytes -= s.val.bytes();
            }
            self.free.push(i);
        }
    }

    /// Inserts or replaces, then evicts down to `cap` bytes (never the
    /// entry just inserted).
    fn put(&mut self, id: Id, val: Val, cap: usize) {
        let size = val.bytes();
        if size > cap / 4 {
            self.remove(id);
            return;
        }
        if let Some(&i) = self.map.get(&id) {
            // Replace in place (a commit updating a cached container).
            if let Some(s) = self.ring[i].as_mut() {
                self.bytes = self.bytes - s.val.bytes() + size;
                s.val = val;
                s.referenced = true;
                self.evict_to(cap, Some(i));
                return;
            }
        }
        self.bytes += size;
        let slot = Slot {
            id,
            val,
            referenced: false,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.ring[i] = Some(slot);
                i
            }
            None => {
                self.ring.push(Some(slot));
                self.ring.len() - 1
            }
        };
        self.map.insert(id, i);
        self.evict_to(cap, Some(i));
    }

    /// CLOCK: sweeps the ring, clearing reference bits and evicting
    /// unreferenced entries until at most `cap` bytes are held.
    fn evict_to(&mut self, cap: usize, keep: Option<usize>) {
        let n = self.ring.len();
        // Two full turns suffice: the first clears every bit.
        let mut steps = 2 * n + 1;
        while self.bytes > cap && steps > 0 && n > 0 {
            steps -= 1;
            let i = self.hand % n;
            self.hand = (i + 1) % n;
            if Some(i) == keep {
                continue;
            }
            let Some(s) = self.ring[i].as_mut() else {
                continue;
            };
            if s.referenced {
                s.referenced = false;
                continue;
            }
            let id = s.id;
            self.remove(id);
            self.evictions += 1;
        }
        if self.map.is_empty() {
            self.ring.clear();
            self.free.clear();
            self.hand = 0;
        }
    }
}

/// Counters for INFO and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Budget in bytes (0 = disabled).
    pub capacity: u64,
    /// Bytes charged now.
    pub bytes: u64,
    /// Entries held now.
    pub entries: u64,
    /// Lookups answered.
    pub hits: u64,
    /// Lookups not answered.
    pub misses: u64,
    /// Entries evicted for space.
    pub evictions: u64,
}

/// The cache. See the module docs.
pub struct ContainerCache {
    shards: Box<[Mutex<Shard>]>,
    /// Total budget in bytes.
    capacity: AtomicU64,
    /// Write counters by key version ([`SEQS`] stripes): a commit bumps
    /// the counter of every version it writes containers of before it
    /// updates the shards; fills of a version taken before a bump of its
    /// counter are refused. Striped so that commits to other keys rarely
    /// refuse a fill (a refused whole-key warm-up is scanned again on the
    /// next miss).
    seqs: Box<[AtomicU64]>,
    /// The doorkeeper of [`ContainerCache::seen_before`]: the last key
    /// version asked about in each slot.
    door: Box<[AtomicU64]>,
}

/// Slots of the doorkeeper (a power of two).
const DOOR: usize = 4096;

/// The doorkeeper slot of key version `version`.
fn door_slot(version: u64) -> usize {
    (version.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize & (DOOR - 1)
}

/// Number of write counter stripes.
const SEQS: usize = 1024;

fn seq_of(version: u64) -> usize {
    (version.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize % SEQS
}

impl Default for ContainerCache {
    fn default() -> Self {
        Self::new(DEFAULT_BYTES)
    }
}

/// A reader's view of a version's write counter before it read the `Kv`.
#[derive(Clone, Copy, Debug)]
pub struct Snap(u64);

impl Id {
    fn version(self) -> u64 {
        match self {
            Id::Container(v, _) | Id::Dir(v) | Id::Held(v) => v,
        }
    }
}

fn shard_of(id: Id) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let h = match id {
        Id::Container(v, b) => (v ^ (u64::from(b) << 48) ^ u64::from(b)).wrapping_mul(K),
        Id::Dir(v) => v.wrapping_mul(K),
        Id::Held(v) => (v ^ 0x5555_5555_5555_5555).wrapping_mul(K),
    };
    (h >> 58) as usize % SHARDS
}

impl ContainerCache {
    /// A cache of `capacity` bytes (0 = disabled).
    #[must_use]
    pub fn new(capacity: u64) -> Self {
        ContainerCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            capacity: AtomicU64::new(capacity),
            seqs: (0..SEQS).map(|_| AtomicU64::new(0)).collect(),
            door: (0..DOOR).map(|_| AtomicU64::new(u64::MAX)).collect(),
        }
    }

    /// True when key version `version` was asked about here recently (it
    /// is the last version asked about of its doorkeeper slot, one of
    /// 4,096); records it either way. Callers fill the cache with a small
    /// key only from its second use, so that a workload over many more
    /// small keys than the cache holds (a set operation on two random
    /// keys of 100,000) streams them from the memory tier instead of
    /// churning the cache: filling and evicting their containers took ~60%
    /// of a TR.BITOP's server time there, while keys used again soon (the
    /// census1881 sweeps) are cached as before from their second use.
    pub fn seen_before(&self, version: u64) -> bool {
        self.door[door_slot(version)].swap(version, Ordering::Relaxed) == version
    }

    /// The budget of one shard.
    fn shard_cap(&self) -> usize {
        usize::try_from(self.capacity.load(Ordering::Relaxed) / SHARDS as u64).unwrap_or(usize::MAX)
    }

    /// True when the cache may hold anything.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.capacity.load(Ordering::Relaxed) > 0
    }

    /// The budget in bytes.
    #[must_use]
    pub fn capacity(&self) -> u64 {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Changes the budget; shrinking evicts at once (0 empties it).
    pub fn set_capacity(&self, capacity: u64) {
        self.capacity.store(capacity, Ordering::Relaxed);
        let cap = self.shard_cap();
        for s in &*self.shards {
            s.lock().evict_to(cap, None);
        }
        if capacity == 0 {
            self.clear();
        }
    }

    /// Drops every entry (counters stay).
    pub fn clear(&self) {
        for s in &*self.shards {
            let mut s = s.lock();
            s.map.clear();
            s.ring.clear();
            s.free.clear();
            s.hand = 0;
            s.bytes = 0;
        }
    }

    /// Counters, summed over the shards.
    #[must_use]
    pub fn stats(&self) -> CacheStats {
        let mut st = CacheStats {
            capacity: self.capacity(),
            ..CacheStats::default()
        };
        for s in &*self.shards {
            let s = s.lock();
            st.bytes += s.bytes as u64;
            st.entries += s.map.len() as u64;
            st.hits += s.hits;
            st.misses += s.misses;
            st.evictions += s.evictions;
        }
        st
    }

    /// Cached bytes of container `block` of key version `version`
    /// ([`padded`]: the container is `&value[PAD..]`).
    #[must_use]
    pub fn container(&self, version: u64, block: u16) -> Option<Arc<[u8]>> {
        match self.lookup(Id::Container(version, block))? {
            Val::Container(b) => Some(b),
            _ => None,
        }
    }

    /// The value cached under `id` (its `Arc` shared), if any.
    fn lookup(&self, id: Id) -> Option<Val> {
        if !self.enabled() {
            return None;
        }
        self.shards[shard_of(id)].lock().get(id).cloned()
    }

    /// The cached directory (blocks, ascending) of key version `version`.
    #[must_use]
    pub fn dir(&self, version: u64) -> Option<Arc<[u16]>> {
        match self.lookup(Id::Dir(version))? {
            Val::Dir(d) => Some(d),
            _ => None,
        }
    }

    /// The key version `version` held whole, if cached.
    #[must_use]
    pub fn held(&self, version: u64) -> Option<Held> {
        match self.lookup(Id::Held(version))? {
            Val::Held(h) => Some(h),
            _ => None,
        }
    }

    /// True when an entry charged `charge` bytes ([`held_charge`]) may be
    /// cached (one over a quarter of a shard's share is refused).
    #[must_use]
    pub fn admits(&self, charge: usize) -> bool {
        self.enabled() && charge <= self.shard_cap() / 4
    }

    /// Taken before reading key version `version` from the `Kv` (or from
    /// this cache, for [`ContainerCache::fill_held`]), for later fills of
    /// that version.
    #[must_use]
    pub fn snapshot(&self, version: u64) -> Snap {
        Snap(self.seqs[seq_of(version)].load(Ordering::Acquire))
    }

    fn fill_id(&self, id: Id, val: Val, snap: Snap) {
        if !self.enabled() {
            return;
        }
        let cap = self.shard_cap();
        let mut s = self.shards[shard_of(id)].lock();
        // Checked under the shard lock: see the module docs.
        if self.seqs[seq_of(id.version())].load(Ordering::Acquire) != snap.0 {
            return;
        }
        s.put(id, val, cap);
    }

    /// Caches the stored bytes of a container read from the `Kv` after
    /// `snap` was taken (refused if a container commit happened since);
    /// `bytes` is [`padded`].
    pub fn fill_container(&self, version: u64, block: u16, bytes: Arc<[u8]>, snap: Snap) {
        self.fill_id(Id::Container(version, block), Val::Container(bytes), snap);
    }

    /// Caches the directory of a key version, read from the `Kv` after
    /// `snap` was taken. `blocks` must be ascending and complete.
    pub fn fill_dir(&self, version: u64, blocks: Arc<[u16]>, snap: Snap) {
        self.fill_id(Id::Dir(version), Val::Dir(blocks), snap);
    }

    /// Caches key version `version` held whole: `held` must list every
    /// block of the version with its container value, each read from this
    /// cache (or the `Kv`) after `snap` was taken.
    pub fn fill_held(&self, version: u64, held: Held, snap: Snap) {
        self.fill_id(Id::Held(version), Val::Held(held), snap);
    }

    /// Before a commit's write: the new bytes of the recorded writes whose
    /// entry is cached now (a copy made only for those).
    pub(crate) fn prepare<'a>(
        &self,
        pending: Pending,
        value_of: impl Fn(&[u8]) -> Option<Option<&'a [u8]>>,
    ) -> Prepared {
        let mut ops = Vec::with_capacity(pending.writes.len());
        if !self.enabled() {
            return Prepared { ops };
        }
        for (version, block, dk, value) in pending.writes {
            match value {
                Written::Dir(blocks) => {
                    ops.push(PreparedOp::Dir(version, blocks));
                    continue;
                }
                Written::Stored(..) => {}
            }
            // `None` from value_of: the write was discarded (FLUSHDB in the
            // same Txn); treat as unknown and drop the entry.
            let new = value_of(&dk);
            let id = Id::Container(version, block);
            let cached = self.shards[shard_of(id)].lock().map.contains_key(&id);
            let (bytes, present, fill) = match (value, new) {
                (Written::Stored(b, fill), Some(_)) => {
                    let present = b.is_some();
                    let fill = fill && present;
                    ((fill || cached).then_some(b).flatten(), Some(present), fill)
                }
                (_, None) => (None, None, false),
                // Taken above.
                (Written::Dir(_), _) => continue,
            };
            ops.push(PreparedOp::Container(version, block, bytes, present, fill));
        }
        Prepared { ops }
    }
}

/// Container writes a `Txn` made under live versions: `(version, block,
/// data key written, what was written)`, in order (repeats allowed).
#[derive(Default, Debug)]
pub struct Pending {
    writes: Vec<PendingWrite>,
}

/// One recorded write: see [`Pending`].
type PendingWrite = (u64, u16, Vec<u8>, Written);

/// What a recorded write put under its data key.
#[derive(Debug)]
enum Written {
    /// The block's content after the commit, known as written (`None`:
    /// absent), through a packed entry (a page or a single: see `page`)
    /// whose data key is the one recorded; with `true`, cached even when
    /// the block was not. The entry's pending write or delete only says
    /// that the write was not discarded since.
    Stored(Option<Arc<[u8]>>, bool),
    /// Every block a key version holds once the commit is written (its
    /// directory).
    Dir(Arc<[u16]>),
}

impl Pending {
    /// Records the content of container `block` of `version` after this
    /// `Txn` (`None`: absent), written within the entry whose data key is
    /// `dk` ([`padded_with`] bytes); with `fill`, cached at
    /// commit whether or not the block was cached.
    pub(crate) fn record_stored(
        &mut self,
        (version, block, dk): (u64, u16, Vec<u8>),
        container: Option<Arc<[u8]>>,
        fill: bool,
    ) {
        self.writes
            .push((version, block, dk, Written::Stored(container, fill)));
    }

    /// Records the complete, ascending block list that `version` holds
    /// once this `Txn` commits (a key version it rewrote in full, under the
    /// key's lock): cached at commit, replacing any cached directory
    /// (writes recorded later still update it).
    pub(crate) fn record_dir(&mut self, version: u64, blocks: Arc<[u16]>) {
        self.writes
            .push((version, 0, Vec::new(), Written::Dir(blocks)));
    }

    /// True when nothing is recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }
}

/// A commit's cache updates, applied once its batch is written.
pub struct Prepared {
    ops: Vec<PreparedOp>,
}

/// One cache update of a commit.
enum PreparedOp {
    /// `(version, block, new bytes if cached now (or to fill), whether
    /// the container is stored after the commit: `None` = unknown, drop
    /// every trace of it; whether to cache the bytes even when not cached
    /// then)`.
    Container(u64, u16, Option<Arc<[u8]>>, Option<bool>, bool),
    /// A version's complete directory after the commit.
    Dir(u64, Arc<[u16]>),
}

impl PreparedOp {
    fn version(&self) -> u64 {
        match self {
            PreparedOp::Container(v, ..) | PreparedOp::Dir(v, _) => *v,
        }
    }
}

impl Prepared {
    /// Call after the batch is written (drop without calling when the
    /// write failed: the cache then still matches the `Kv`).
    pub fn apply(self, cache: &ContainerCache) {
        if self.ops.is_empty() {
            return;
        }
        let versions = self.versions();
        // Refuse racing fills first (see the module docs).
        bump(cache, &versions);
        self.update(cache);
        drop_held(cache, &versions);
    }

    /// The versions written, each once.
    fn versions(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.ops.iter().map(PreparedOp::version).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Updates the cached containers and directories.
    fn update(self, cache: &ContainerCache) {
        let cap = cache.shard_cap();
        for op in self.ops {
            let (version, block, bytes, present, fill) = match op {
                PreparedOp::Container(v, b, bytes, present, fill) => (v, b, bytes, present, fill),
                PreparedOp::Dir(v, blocks) => {
                    let did = Id::Dir(v);
                    cache.shards[shard_of(did)]
                        .lock()
                        .put(did, Val::Dir(blocks), cap);
                    continue;
                }
            };
            let id = Id::Container(version, block);
            {
                let mut s = cache.shards[shard_of(id)].lock();
                match bytes {
                    Some(b) if fill || s.map.contains_key(&id) => s.put(id, Val::Container(b), cap),
                    _ => s.remove(id),
                }
            }
            let did = Id::Dir(version);
            let mut s = cache.shards[shard_of(did)].lock();
            let Some(&i) = s.map.get(&did) else {
                continue;
            };
            let Some(Slot {
                val: Val::Dir(d), ..
            }) = s.ring[i].as_ref()
            else {
                continue;
            };
            let has = d.binary_search(&block);
            let next: Option<Arc<[u16]>> = match (present, has) {
                (Some(true), Ok(_)) | (Some(false), Err(_)) => continue,
                (Some(true), Err(at)) => {
                    let mut v = d.to_vec();
                    v.insert(at, block);
                    Some(v.into())
                }
                (Some(false), Ok(at)) => {
                    let mut v = d.to_vec();
                    v.remove(at);
                    Some(v.into())
                }
                (None, _) => None,
            };
            match next {
                Some(d) => s.put(did, Val::Dir(d), cap),
                None => s.remove(did),
            }
        }
    }
}

/// Bumps the write counters of `versions`: fills from reads made before
/// are refused.
fn bump(cache: &ContainerCache, versions: &[u64]) {
    for &v in versions {
        cache.seqs[seq_of(v)].fetch_add(1, Ordering::AcqRel);
    }
}

/// After a commit's updates: drops the whole-key entries of `versions`.
/// Such an entry is built from cached containers, which the updates just
/// changed, so a fill that read them since the first bump may mix old and
/// new ones: bumped again (refusing such a fill from now on), then
/// dropped (one that passed its check before this bump landed before the
/// drop).
fn drop_held(cache: &ContainerCache, versions: &[u64]) {
    bump(cache, versions);
    for &v in versions {
        let id = Id::Held(v);
        cache.shards[shard_of(id)].lock().remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, fill: u8) -> Arc<[u8]> {
        vec![fill; n].into()
    }

    /// A write of `block` leaving `content` (`None`: absent), in the entry
    /// `dk`.
    fn record(p: &mut Pending, version: u64, block: u16, dk: Vec<u8>, content: Option<&[u8]>) {
        p.record_stored((version, block, dk), content.map(padded), false);
    }

    #[test]
    fn the_doorkeeper_admits_a_version_from_its_second_use_in_its_slot() {
        let c = ContainerCache::new(1 << 20);
        assert!(!c.seen_before(7));
        assert!(c.seen_before(7));
        assert!(c.seen_before(7));
        // Another version of the same slot displaces it.
        let other = (8..).find(|&v| door_slot(v) == door_slot(7)).unwrap();
        assert!(!c.seen_before(other));
        assert!(!c.seen_before(7));
    }

    #[test]
    fn fill_get_and_refused_racing_fill() {
        let c = ContainerCache::new(1 << 20);
        let s = c.snapshot(7);
        c.fill_container(7, 1, bytes(10, 1), s);
        assert_eq!(&*c.container(7, 1).unwrap(), &[1u8; 10][..]);
        assert!(c.container(7, 2).is_none());
        assert!(c.container(8, 1).is_none());
        // A commit between snapshot and fill refuses the fill.
        let s = c.snapshot(9);
        let other = c.snapshot(7);
        let mut p = Pending::default();
        record(&mut p, 9, 0, b"dk".to_vec(), Some(&[5]));
        c.prepare(p, |_| Some(Some(&[5][..]))).apply(&c);
        c.fill_container(9, 0, bytes(3, 0), s);
        assert!(c.container(9, 0).is_none());
        // A commit to another version does not refuse its fills.
        c.fill_container(7, 2, bytes(3, 0), other);
        assert!(c.container(7, 2).is_some());
        let st = c.stats();
        assert_eq!(st.entries, 2);
        assert!(st.hits >= 1 && st.misses >= 1);
    }

    #[test]
    fn commits_update_cached_entries_and_directories() {
        let c = ContainerCache::new(1 << 20);
        let s = c.snapshot(1);
        c.fill_container(1, 3, bytes(4, 1), s);
        c.fill_dir(1, vec![3u16, 9].into(), s);
        // Update of a cached container, new block, deleted block.
        let mut p = Pending::default();
        record(&mut p, 1, 3, b"a".to_vec(), Some(&[2, 2]));
        record(&mut p, 1, 5, b"b".to_vec(), Some(&[7]));
        record(&mut p, 1, 9, b"c".to_vec(), None);
        let prep = c.prepare(p, |dk| match dk {
            b"a" => Some(Some(&[2, 2][..])),
            b"b" => Some(Some(&[7][..])),
            _ => Some(None),
        });
        // Not applied yet: the cache still shows the stored state.
        assert_eq!(&*c.container(1, 3).unwrap(), &[1u8; 4][..]);
        prep.apply(&c);
        assert_eq!(&c.container(1, 3).unwrap()[PAD..], &[2u8, 2][..]);
        assert!(c.container(1, 5).is_none(), "absent entries are not added");
        assert_eq!(&*c.dir(1).unwrap(), &[3u16, 5][..]);
        // A failed commit: prepared, never applied.
        let mut p = Pending::default();
        record(&mut p, 1, 3, b"a".to_vec(), Some(&[9]));
        drop(c.prepare(p, |_| Some(Some(&[9][..]))));
        assert_eq!(&c.container(1, 3).unwrap()[PAD..], &[2u8, 2][..]);
        // A discarded write (unknown value) drops entry and directory.
        let mut p = Pending::default();
        record(&mut p, 1, 3, b"a".to_vec(), Some(&[4]));
        c.prepare(p, |_| None).apply(&c);
        assert!(c.container(1, 3).is_none());
        assert!(c.dir(1).is_none());
    }

    #[test]
    fn commits_fill_written_containers_and_new_directories() {
        let c = ContainerCache::new(1 << 20);
        let mut p = Pending::default();
        p.record_dir(4, vec![1u16, 2].into());
        p.record_stored((4, 1, b"a".to_vec()), Some(padded(&[1, 1])), true);
        // Written again later in the Txn: the later record says what stays.
        p.record_stored((4, 2, b"b".to_vec()), Some(padded(&[2])), true);
        p.record_stored((4, 2, b"b".to_vec()), None, true);
        // A later write recorded after the directory updates it.
        p.record_stored((4, 7, b"c".to_vec()), Some(padded(&[7])), true);
        let prep = c.prepare(p, |_| Some(None));
        assert!(c.dir(4).is_none() && c.container(4, 1).is_none());
        prep.apply(&c);
        assert_eq!(&*c.dir(4).unwrap(), &[1u16, 7][..]);
        assert_eq!(&c.container(4, 1).unwrap()[PAD..], &[1u8, 1][..]);
        assert!(c.container(4, 2).is_none());
        assert_eq!(&c.container(4, 7).unwrap()[PAD..], &[7u8][..]);
        // Nothing is filled when the cache is off.
        let off = ContainerCache::new(0);
        let mut p = Pending::default();
        p.record_dir(4, vec![1u16].into());
        p.record_stored((4, 1, b"a".to_vec()), Some(padded(&[1])), true);
        off.prepare(p, |_| Some(Some(&[1][..]))).apply(&off);
        assert!(off.dir(4).is_none() && off.container(4, 1).is_none());
    }

    fn held(v: &[(u16, u8)]) -> Held {
        v.iter()
            .map(|&(b, x)| (b, padded(&[x])))
            .collect::<Vec<_>>()
            .into()
    }

    #[test]
    fn held_entries_are_dropped_by_any_commit_to_their_version() {
        let c = ContainerCache::new(1 << 20);
        let s = c.snapshot(3);
        c.fill_held(3, held(&[(1, 1), (4, 4)]), s);
        let s = c.snapshot(5);
        c.fill_held(5, held(&[(0, 9)]), s);
        let h = c.held(3).unwrap();
        assert_eq!(h.iter().map(|(b, _)| *b).collect::<Vec<_>>(), [1, 4]);
        assert_eq!(&h[1].1[PAD..], &[4u8][..]);
        // Charged its containers' bytes too.
        assert_eq!(
            c.stats().bytes as usize,
            held_charge(2, 2 * (PAD + 1)) + held_charge(1, PAD + 1)
        );
        // A write of a block the cache does not even hold.
        let mut p = Pending::default();
        record(&mut p, 3, 9, b"x".to_vec(), Some(&[1]));
        c.prepare(p, |_| Some(Some(&[1][..]))).apply(&c);
        assert!(c.held(3).is_none());
        assert!(c.held(5).is_some(), "other versions keep theirs");
        // So does a whole rewrite's directory.
        let mut p = Pending::default();
        p.record_dir(5, vec![0u16].into());
        c.prepare(p, |_| Some(Some(&[1][..]))).apply(&c);
        assert!(c.held(5).is_none());
        // Too big to cache: refused, and `admits` says so first.
        let big = held_charge(1, (1 << 20) / SHARDS);
        assert!(!c.admits(big) && c.admits(held_charge(1, 100)));
        let s = c.snapshot(6);
        c.fill_held(6, vec![(0u16, bytes((1 << 20) / SHARDS, 0))].into(), s);
        assert!(c.held(6).is_none());
        assert!(!ContainerCache::new(0).admits(0));
    }

    #[test]
    fn a_held_fill_that_read_containers_during_a_commit_is_refused() {
        let c = ContainerCache::new(1 << 20);
        let s = c.snapshot(2);
        c.fill_container(2, 0, padded(&[1]), s);
        let mut p = Pending::default();
        record(&mut p, 2, 0, b"a".to_vec(), Some(&[2]));
        let prep = c.prepare(p, |_| Some(Some(&[2][..])));
        // A reader that snapshots before the commit and reads the old
        // container: refused (the first bump).
        let before = c.snapshot(2);
        let old = c.container(2, 0).unwrap();
        prep.apply(&c);
        c.fill_held(2, vec![(0u16, Arc::clone(&old))].into(), before);
        assert!(c.held(2).is_none());
        // One that snapshots after the first bump but reads the old
        // container before the update: its fill is refused when it comes
        // after the update (the second bump), dropped when it comes before
        // the drop.
        for (value, fill_before_drop) in [(3u8, false), (2, true)] {
            let mut p = Pending::default();
            let stored = [value];
            record(&mut p, 2, 0, b"a".to_vec(), Some(&stored));
            let prep = c.prepare(p, |_| Some(Some(&stored[..])));
            let vs = prep.versions();
            bump(&c, &vs);
            let between = c.snapshot(2);
            let old = c.container(2, 0).unwrap();
            prep.update(&c);
            let fill = || c.fill_held(2, vec![(0u16, Arc::clone(&old))].into(), between);
            if fill_before_drop {
                fill();
                drop_held(&c, &vs);
            } else {
                drop_held(&c, &vs);
                fill();
            }
            assert!(c.held(2).is_none(), "fill before drop: {fill_before_drop}");
        }
        // One that snapshots after the commit reads the new one: kept.
        let after = c.snapshot(2);
        let new = c.container(2, 0).unwrap();
        assert_eq!(&new[PAD..], &[2u8][..]);
        c.fill_held(2, vec![(0u16, new)].into(), after);
        assert_eq!(&c.held(2).unwrap()[0].1[PAD..], &[2u8][..]);
    }

    #[test]
    fn budget_is_kept_and_clock_spares_referenced_entries() {
        let cap = (SHARDS * 4 * (ENTRY_OVERHEAD + 100)) as u64;
        let c = ContainerCache::new(cap);
        let hot: Vec<u64> = (0..20).collect();
        for v in 0..5000u64 {
            let s = c.snapshot(v);
            c.fill_container(v, 0, bytes(100, 0), s);
            for &h in &hot {
                if v > h {
                    let _ = c.container(h, 0);
                }
            }
            assert!(c.stats().bytes <= cap);
        }
        let st = c.stats();
        assert!(st.evictions > 0);
        let kept = hot.iter().filter(|&&h| c.container(h, 0).is_some()).count();
        assert!(kept >= 15, "hot entries evicted: kept {kept}");
        // Oversized values are not cached.
        let s = c.snapshot(99_999);
        c.fill_container(99_999, 0, bytes(cap as usize, 0), s);
        assert!(c.container(99_999, 0).is_none());
        // Shrinking evicts; 0 disables.
        c.set_capacity(cap / 2);
        assert!(c.stats().bytes <= cap / 2);
        c.set_capacity(0);
        assert_eq!(c.stats().entries, 0);
        let s = c.snapshot(1);
        c.fill_container(1, 0, bytes(1, 0), s);
        assert!(c.container(1, 0).is_none());
    }
}
