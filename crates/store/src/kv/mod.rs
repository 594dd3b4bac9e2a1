//! `Kv`: the narrow storage trait under the store. It knows nothing of Redis
//! types: three ordered byte maps (spaces), point reads, ordered range scans
//! in both directions, atomic batches across spaces, snapshots, persistence
//! and a forced compaction. [`lsm`] implements it on fjall, [`mem`]
//! on `BTreeMap`s; `tests/kv_conformance.rs` runs against both.

pub mod behind;
pub mod lsm;
pub mod mem;

use crate::error::Result;
use rustc_hash::FxHashSet;
use std::ops::Bound;
use std::sync::Arc;

/// Longest entry key any backend accepts (fjall's limit). `get` of a longer
/// key finds nothing; `write` of one fails with `KeyTooLong`; range bounds
/// longer than this are clamped (no stored key is longer).
pub const MAX_ENTRY_KEY: usize = u16::MAX as usize;

/// One of the ordered byte maps of a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Space {
    /// `db | key` → encoded `KeyMeta` (strings inline).
    Meta,
    /// `db | key len | key | version | subkey` → element value.
    Data,
    /// `expire_at_ms | db | key` → empty: the expiry index.
    Expiry,
    /// `seq u64 BE` → a chunk of the bitmap write-back tier's operation
    /// log (`types::bitmap::oplog`).
    Log,
}

impl Space {
    /// Every space, in a fixed order.
    pub const ALL: [Space; 4] = [Space::Meta, Space::Data, Space::Expiry, Space::Log];

    /// The on-disk name of the space (a fjall keyspace name).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Space::Meta => "meta",
            Space::Data => "data",
            Space::Expiry => "expiry",
            Space::Log => "log",
        }
    }

    /// Index of the space in [`Space::ALL`].
    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One write of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Insert or overwrite the entry.
    Put(Vec<u8>),
    /// Remove the entry (a no-op if it is absent).
    Delete,
}

/// An ordered list of writes, applied atomically by [`Kv::write`]. When the
/// same key appears twice the later write wins.
#[derive(Clone, Debug, Default)]
pub struct WriteBatch {
    ops: Vec<(Space, Vec<u8>, Op)>,
    /// `(meta key, version)`: the batch holds every `data` entry of that
    /// key version (a version created by this batch's transaction and
    /// never written before). A hint for caches; engines ignore it.
    complete: Vec<(Vec<u8>, u64)>,
}

impl WriteBatch {
    /// An empty batch.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty batch with room for `n` writes.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        WriteBatch {
            ops: Vec::with_capacity(n),
            complete: Vec::new(),
        }
    }

    /// Queues an insert.
    pub fn put(&mut self, space: Space, key: Vec<u8>, value: Vec<u8>) {
        self.ops.push((space, key, Op::Put(value)));
    }

    /// Queues a delete.
    pub fn delete(&mut self, space: Space, key: Vec<u8>) {
        self.ops.push((space, key, Op::Delete));
    }

    /// Number of queued writes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Bytes of the queued writes' keys and values.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.ops
            .iter()
            .map(|(_, k, op)| {
                k.len()
                    + match op {
                        Op::Put(v) => v.len(),
                        Op::Delete => 0,
                    }
            })
            .sum()
    }

    /// True when nothing is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Fails when a key is longer than [`MAX_ENTRY_KEY`].
    ///
    /// # Errors
    /// `KeyTooLong`.
    pub fn check_keys(&self) -> Result<()> {
        if self.ops.iter().any(|(_, k, _)| k.len() > MAX_ENTRY_KEY) {
            return Err(crate::error::StoreError::KeyTooLong);
        }
        Ok(())
    }

    /// The queued writes, in order.
    #[must_use]
    pub fn ops(&self) -> &[(Space, Vec<u8>, Op)] {
        &self.ops
    }

    /// Notes that the batch holds every `data` entry of version `version`
    /// of the key with meta key `meta_key` (see the field's docs).
    pub fn note_complete(&mut self, meta_key: Vec<u8>, version: u64) {
        self.complete.push((meta_key, version));
    }

    /// The versions noted by [`WriteBatch::note_complete`].
    #[must_use]
    pub fn complete_versions(&self) -> &[(Vec<u8>, u64)] {
        &self.complete
    }

    /// Consumes the batch into its writes, in order.
    #[must_use]
    pub fn into_ops(self) -> Vec<(Space, Vec<u8>, Op)> {
        self.ops
    }
}

/// The writes of `batches` (in order, as one group) that decide the
/// group's outcome: of the writes of one `(space, key)`, only the last.
/// Writing these alone leaves an engine as writing them all would (a later
/// write of a key replaces an earlier one), at one engine insert per key:
/// a group of commits that each create keys carries one key-counts entry
/// per commit, and a hot key written by many clients one entry per write.
/// Order is kept among the writes returned; a single batch (which a `Txn`
/// builds without repeats) is returned as it is.
#[must_use]
pub fn last_writes(batches: &[Arc<WriteBatch>]) -> Vec<&(Space, Vec<u8>, Op)> {
    if let [one] = batches {
        return one.ops().iter().collect();
    }
    let all: Vec<&(Space, Vec<u8>, Op)> = batches.iter().flat_map(|b| b.ops()).collect();
    let mut seen: FxHashSet<(Space, &[u8])> = FxHashSet::default();
    seen.reserve(all.len());
    let mut keep = vec![false; all.len()];
    for (i, (space, key, _)) in all.iter().enumerate().rev() {
        keep[i] = seen.insert((*space, key.as_slice()));
    }
    all.into_iter()
        .zip(keep)
        .filter_map(|(w, k)| k.then_some(w))
        .collect()
}

/// How durable a committed batch is when [`Kv::write`] returns; ordered
/// weakest first (a stronger one implies the weaker).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Durability {
    /// May stay in the engine's user-space write buffer until the next
    /// [`Kv::flush_buffers`], [`Kv::persist`] or `Sync` write (or until the
    /// buffer fills): a process crash may lose it. Saves a `write(2)` per
    /// batch; the store's persister hands it to the OS within a second.
    Lazy,
    /// Handed to the OS (survives a process crash, not a power loss).
    Buffer,
    /// Synced to stable storage (survives a power loss).
    Sync,
}

/// A boxed ordered iterator of `(key, value)` entries.
pub type KvIter<'a> = Box<dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + Send + 'a>;

/// Read access: the live store or a snapshot of it.
pub trait KvRead: Send + Sync {
    /// The value of `key` in `space`, if present.
    ///
    /// # Errors
    /// `Io` when the underlying store fails.
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Calls `f` with the value of `key` in `space`, borrowed, if present;
    /// returns whether it was. An engine that holds the value in memory
    /// (the memory tier) hands it over without a copy.
    ///
    /// # Errors
    /// `Io` when the underlying store fails.
    fn get_visit(&self, space: Space, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.get(space, key)?.map(|v| f(&v)).is_some())
    }

    /// Entries with `start <= key < end` (per the bounds), ascending, or
    /// descending when `reverse`. Errors are yielded by the iterator.
    fn range(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> KvIter<'_>;

    /// The first entry [`KvRead::range`] would yield, without reading
    /// further (a seek: the container of a block is in the first bitmap
    /// entry at or after it).
    ///
    /// # Errors
    /// `Io` when the underlying store fails.
    fn range_first(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.range(space, start, end, reverse).next().transpose()
    }

    /// Calls `f` with the entries an ascending [`KvRead::range`] would
    /// yield (key and value, borrowed), in order, until it returns false or
    /// the range ends. An engine that holds the entries in memory (the
    /// memory tier) hands them over without a copy.
    ///
    /// # Errors
    /// `Io` when the underlying store fails.
    fn range_visit(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        for e in self.range(space, start, end, false) {
            let (k, v) = e?;
            if !f(&k, &v) {
                break;
            }
        }
        Ok(())
    }

    /// Calls `f(subkey, value)` with the `Data` entries of version
    /// `version` of `(db, key)` whose subkey lies within `from` (a bound
    /// on the subkey; `Unbounded` = from the first), in order, until it
    /// returns false: [`KvRead::range_visit`] over the version's keys,
    /// handing over subkeys. An engine that finds the key by its meta key
    /// (the memory tier) builds no data key for it.
    ///
    /// # Errors
    /// `Io` when the underlying store fails.
    fn version_visit(
        &self,
        (db, key, version): (u16, &[u8], u64),
        from: Bound<&[u8]>,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        version_visit_by_range(self, (db, key, version), from, f)
    }

    /// Entries whose key starts with `prefix`, ascending or descending.
    fn prefix(&self, space: Space, prefix: &[u8], reverse: bool) -> KvIter<'_> {
        match prefix_end(prefix) {
            Some(end) => self.range(
                space,
                Bound::Included(prefix),
                Bound::Excluded(&end),
                reverse,
            ),
            None => self.range(space, Bound::Included(prefix), Bound::Unbounded, reverse),
        }
    }
}

/// Reads one `Meta` entry by key (the data GC's view of the live keys).
pub type MetaLookup<'a> = dyn Fn(&[u8]) -> Result<Option<Vec<u8>>> + 'a;

/// Decides whether a `Data` entry belongs to a dead key version. Installed
/// by the store; called by [`Kv::compact`] and by the LSM store's background
/// compactions.
pub trait DataGc: Send + Sync {
    /// True when the entry `data_key` can be dropped. `meta` reads the live
    /// `Meta` space.
    ///
    /// # Errors
    /// Errors from `meta` are passed through; the caller keeps the entry.
    fn is_stale(&self, data_key: &[u8], meta: &MetaLookup<'_>) -> Result<bool>;
}

/// Sizes the store reports for INFO. Zero where a backend has no such thing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KvStats {
    /// Bytes of table files (and blob files) on disk.
    pub disk_bytes: u64,
    /// Bytes of journal (write-ahead log) files on disk.
    pub journal_bytes: u64,
    /// Bytes held in memtables (active and sealed).
    pub memtable_bytes: u64,
    /// Bytes currently held by the block cache.
    pub cache_bytes: u64,
    /// Capacity of the block cache.
    pub cache_capacity: u64,
    /// Number of table files.
    pub table_count: u64,
    /// Compactions completed since open.
    pub compactions_completed: u64,
    /// Bytes of batches queued for the engine and not yet taken
    /// (`behind.rs`).
    pub queued_bytes: u64,
}

/// The storage engine under the store.
pub trait Kv: KvRead {
    /// Applies `batch` atomically: after a crash either every write of it is
    /// visible or none is.
    ///
    /// # Errors
    /// `Io` when the write (or the sync) fails; nothing is applied then.
    fn write(&self, batch: WriteBatch, durability: Durability) -> Result<()>;

    /// As [`Kv::write`], sharing the batch with the caller (the memory tier
    /// applies it to its resident keys after the engine took it, while an
    /// engine that queues it keeps it).
    ///
    /// # Errors
    /// As [`Kv::write`].
    fn write_shared(&self, batch: &Arc<WriteBatch>, durability: Durability) -> Result<()> {
        self.write((**batch).clone(), durability)
    }

    /// Writes `batches` in order, as one atomic write where the engine can
    /// (the LSM store: one journal record), durable per `durability` once
    /// it returns. By default each batch on its own, the last one with
    /// `durability`, the others `Lazy`.
    ///
    /// # Errors
    /// As [`Kv::write`]; some of the batches may be applied then.
    fn write_group(&self, batches: &[Arc<WriteBatch>], durability: Durability) -> Result<()> {
        let last = batches.len().saturating_sub(1);
        for (i, b) in batches.iter().enumerate() {
            let d = if i == last {
                durability
            } else {
                Durability::Lazy
            };
            self.write_shared(b, d)?;
        }
        Ok(())
    }

    /// Returns once the engine's own store holds every batch written so
    /// far, so that what reads it directly (its compactions' data GC) sees
    /// them. A no-op for an engine that applies a batch before
    /// [`Kv::write`] returns (see `behind.rs`).
    ///
    /// # Errors
    /// `Io` when an engine that queued a batch failed to write it.
    fn settle(&self) -> Result<()> {
        Ok(())
    }

    /// A consistent read-only view as of now. Later writes are invisible to
    /// it. `Data` entries of dead versions may still disappear from it (data
    /// GC does not honour snapshots), so readers go through `Meta` first and
    /// treat a missing element as absent.
    fn snapshot(&self) -> Box<dyn KvRead>;

    /// Syncs every batch written so far to stable storage.
    ///
    /// # Errors
    /// `Io` when the sync fails.
    fn persist(&self) -> Result<()>;

    /// The first write the engine refused, once there was one: every
    /// later write fails with it too. `None` by default.
    fn write_failure(&self) -> Option<String> {
        None
    }

    /// Hands every batch written so far (`Lazy` ones included) to the OS,
    /// without syncing. A no-op for engines without a write buffer.
    ///
    /// # Errors
    /// `Io` when the write fails.
    fn flush_buffers(&self) -> Result<()> {
        Ok(())
    }

    /// Called once a second by the store's persister: when no batch was
    /// written since the previous call, hands back the memory the engine
    /// holds for writes it has made durable (for the LSM store, its
    /// memtables, see `lsm.rs`), in steps over later calls. A no-op for
    /// engines without such memory.
    ///
    /// # Errors
    /// `Io` when a step fails (the next call tries again).
    fn release_when_idle(&self) -> Result<()> {
        Ok(())
    }

    /// Flushes memtables and compacts every space fully, dropping stale
    /// `Data` entries per the installed [`DataGc`]. Blocks until done.
    ///
    /// # Errors
    /// `Io` on failure.
    fn compact(&self) -> Result<()>;

    /// Sizes for INFO.
    fn stats(&self) -> KvStats;

    /// True when a command on the key whose `Meta` key is `mk` would find
    /// what it reads in process memory: the key's meta is resident (or
    /// known absent), and when the key keeps `data` entries they are held
    /// whole (or the key is too big to be). Cheap (one hash lookup); always
    /// true for an engine without a memory tier.
    fn is_resident(&self, _mk: &[u8]) -> bool {
        true
    }

    /// Asks the CPU to start loading what commands on the keys whose
    /// `Meta` keys are `mks` read first, where they are in process memory:
    /// a hint (nothing is read from disk, nothing changes). A no-op for an
    /// engine without a memory tier.
    fn prefetch(&self, _mks: &[&[u8]]) {}

    /// Asks the CPU to start loading, for each `(mk, element)`, the first
    /// `Data` entry at or after `element` of the version that the meta of
    /// `mk` names (the set page that would hold a member, a hash field),
    /// where the key is in process memory: a hint, for a batch of
    /// commands that each read one element, so that their cache misses
    /// overlap. A no-op for an engine without a memory tier.
    fn prefetch_seeks(&self, _seeks: &[(&[u8], &[u8])]) {}

    /// Reads the key whose `Meta` key is `mk` into process memory, as far
    /// as [`Kv::is_resident`] asks, so that a command run next is served
    /// without an LSM read (the key may be evicted again before that: then
    /// the command reads the LSM store itself). A key with data is read by
    /// one point read where `whole` (given the key's meta value) names the
    /// entry that may hold all of it and that entry does ([`WholeEntry`]: a
    /// point read skips the LSM store's levels by their filters, where a
    /// scan of the key's data seeks in every level), else by a scan. A
    /// no-op for an engine without a memory tier.
    ///
    /// # Errors
    /// `Io` or `Corrupt` from the read; nothing is installed then.
    fn warm(&self, _mk: &[u8], _whole: &dyn Fn(&[u8]) -> Option<WholeEntry>) -> Result<()> {
        Ok(())
    }
}

/// The one `data` entry that may hold all of a key version's data
/// ([`Kv::warm`]), as the key's type tells from its meta.
pub struct WholeEntry {
    /// The key version.
    pub version: u64,
    /// The entry's subkey.
    pub subkey: Vec<u8>,
    /// True when the entry's value is all of that version's data.
    pub holds_all: ValueCheck,
}

/// A check of a `data` entry's value ([`WholeEntry::holds_all`]).
pub type ValueCheck = Box<dyn Fn(&[u8]) -> bool>;

/// The subkey that a lower bound on subkeys starts at (`Unbounded`: the
/// empty subkey, below every other).
pub(crate) fn bound_subkey(from: Bound<&[u8]>) -> &[u8] {
    match from {
        Bound::Included(s) | Bound::Excluded(s) => s,
        Bound::Unbounded => &[],
    }
}

/// A lower bound on `at` (a key built from [`bound_subkey`] of `from`) of
/// `from`'s kind: excluded when `from` is, else included.
pub(crate) fn bound_like<'a>(from: Bound<&[u8]>, at: &'a [u8]) -> Bound<&'a [u8]> {
    match from {
        Bound::Excluded(_) => Bound::Excluded(at),
        _ => Bound::Included(at),
    }
}

/// [`KvRead::version_visit`] by [`KvRead::range_visit`] over the
/// version's whole data keys: the way of every engine that holds no
/// index by meta key.
///
/// # Errors
/// `Io` when the underlying store fails.
pub(crate) fn version_visit_by_range<K: KvRead + ?Sized>(
    kv: &K,
    (db, key, version): (u16, &[u8], u64),
    from: Bound<&[u8]>,
    f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) -> Result<()> {
    let sub = bound_subkey(from);
    let lo_key = crate::keys::KeyBuf::data(db, key, version, sub);
    let lo = bound_like(from, &lo_key);
    // The version's entries lie below the first key of the next one, or
    // of the next key when it is the last version.
    let hi_key = match version.checked_add(1) {
        Some(next) => Some(crate::keys::KeyBuf::data(db, key, next, &[])),
        None => prefix_end(&crate::keys::key_data_prefix(db, key)).map(crate::keys::KeyBuf::Heap),
    };
    let hi = hi_key.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let plen = lo_key.len() - sub.len();
    kv.range_visit(Space::Data, lo, hi, &mut |k, v| f(&k[plen..], v))
}

/// A bound over owned key bytes as a bound over a slice.
#[must_use]
pub fn bound_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// True when the range holds no key at all (start after end), which some
/// engines would reject with a panic.
#[must_use]
pub fn range_is_empty(start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
    match (start, end) {
        (Bound::Included(s), Bound::Included(e)) => s > e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e))
        | (Bound::Excluded(s), Bound::Included(e)) => s >= e,
        _ => false,
    }
}

/// Rewrites range bounds longer than [`MAX_ENTRY_KEY`] into equivalent
/// ones of at most that length (valid because no stored key is longer):
/// a start bound `S` becomes `Excluded(S[..MAX])`, an end bound `Included(S[..MAX])`.
#[must_use]
pub fn clamp_bounds<'a>(
    start: Bound<&'a [u8]>,
    end: Bound<&'a [u8]>,
) -> (Bound<&'a [u8]>, Bound<&'a [u8]>) {
    let start = match start {
        Bound::Included(k) | Bound::Excluded(k) if k.len() > MAX_ENTRY_KEY => {
            Bound::Excluded(&k[..MAX_ENTRY_KEY])
        }
        b => b,
    };
    let end = match end {
        Bound::Included(k) | Bound::Excluded(k) if k.len() > MAX_ENTRY_KEY => {
            Bound::Included(&k[..MAX_ENTRY_KEY])
        }
        b => b,
    };
    (start, end)
}

/// The smallest key greater than every key starting with `prefix`, or `None`
/// when no such key exists (the prefix is empty or all `0xFF`).
#[must_use]
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.last_mut() {
        if *last == 0xFF {
            end.pop();
        } else {
            *last += 1;
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_skips_ff_bytes() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }

    type Model = std::collections::BTreeMap<(Space, Vec<u8>), Vec<u8>>;

    fn apply<'a>(m: &mut Model, ops: impl IntoIterator<Item = &'a (Space, Vec<u8>, Op)>) {
        for (space, key, op) in ops {
            match op {
                Op::Put(v) => m.insert((*space, key.clone()), v.clone()),
                Op::Delete => m.remove(&(*space, key.clone())),
            };
        }
    }

    proptest::proptest! {
        /// Applying a group's last writes leaves what applying all of its
        /// writes in order leaves, and no `(space, key)` is written twice.
        #[test]
        fn last_writes_decide_like_all_writes(
            group in proptest::collection::vec(
                proptest::collection::vec((0..2usize, 0..4u8, proptest::option::of(0..9u8)), 0..6),
                1..5,
            ),
        ) {
            let spaces = [Space::Meta, Space::Data];
            let batches: Vec<Arc<WriteBatch>> = group
                .iter()
                .map(|ops| {
                    let mut b = WriteBatch::new();
                    for &(s, k, v) in ops {
                        match v {
                            Some(v) => b.put(spaces[s], vec![k], vec![v]),
                            None => b.delete(spaces[s], vec![k]),
                        }
                    }
                    Arc::new(b)
                })
                .collect();
            let mut all = Model::new();
            let mut start = Model::new();
            for k in 0..4u8 {
                start.insert((Space::Meta, vec![k]), vec![100]);
            }
            all.extend(start.clone());
            apply(&mut all, batches.iter().flat_map(|b| b.ops()));
            let last = last_writes(&batches);
            let mut keys: Vec<_> = last.iter().map(|(s, k, _)| (*s, k.clone())).collect();
            keys.sort();
            keys.dedup();
            if batches.len() > 1 {
                proptest::prop_assert_eq!(keys.len(), last.len());
            }
            let mut got = start;
            apply(&mut got, last);
            proptest::prop_assert_eq!(got, all);
        }
    }
}
