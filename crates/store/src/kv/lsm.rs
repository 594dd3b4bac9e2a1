//! `LsmKv`: the [`Kv`] on fjall 3 — the only file in the workspace that
//! names fjall. One fjall `Database` with one keyspace per [`Space`]; batches
//! are fjall write batches (atomic across keyspaces); stale `Data` entries
//! are dropped by a fjall compaction filter installed on the `data`
//! keyspace, which asks the store's [`DataGc`] with a read of the live
//! `meta` keyspace.

use crate::error::{Result, StoreError};
use crate::kv::{
    clamp_bounds, range_is_empty, DataGc, Durability, Kv, KvIter, KvRead, KvStats, Op, Space,
    WriteBatch, MAX_ENTRY_KEY,
};
use fjall::compaction::filter::{CompactionFilter, Context, Factory, ItemAccessor, Verdict};
use fjall::config::PartitioningPolicy;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode, Readable, Snapshot};
use parking_lot::RwLock;
use std::cell::RefCell;
use std::ops::Bound;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

fn io(e: fjall::Error) -> StoreError {
    StoreError::Io(e.to_string())
}

/// The fjall-backed storage engine.
pub struct LsmKv {
    db: Database,
    spaces: Arc<[Keyspace; 3]>,
    /// The `meta` handle lent to the compaction filter. Cleared on drop:
    /// the filter factory lives inside the database's config, so holding a
    /// keyspace there would keep the database alive (and locked) forever.
    meta_slot: MetaSlot,
    /// Bytes of memtables (all keyspaces, active and sealed) past which a
    /// write seals the active memtables for flushing: fjall keeps each
    /// keyspace's memtable size from its creation, so this applies the
    /// current setting to an older data directory too.
    memtable_limit: u64,
}

type MetaSlot = Arc<RwLock<Option<Keyspace>>>;

impl Drop for LsmKv {
    fn drop(&mut self) {
        self.meta_slot.write().take();
    }
}

impl LsmKv {
    /// Opens (or creates) the database in `dir` with a block cache of
    /// `cache_bytes` and memtables of at most `memtable_bytes` per keyspace
    /// (for keyspaces created now: fjall keeps a keyspace's setting),
    /// installing `gc` as the `data` compaction filter.
    ///
    /// # Errors
    /// `Io` when the directory cannot be opened or recovery fails.
    pub fn open(
        dir: &Path,
        cache_bytes: u64,
        memtable_bytes: u64,
        gc: Option<Arc<dyn DataGc>>,
    ) -> Result<Self> {
        let meta_slot: MetaSlot = Arc::new(RwLock::new(None));
        // No lz4 in the journal: container values (arrays of distinct u16,
        // bitsets) rarely shrink much, and compressing every entry of 4 KiB
        // or more cost ~13% of a 200-key TR.BITOP's instructions. The
        // journal is short-lived (dropped once its memtable is flushed);
        // SST blocks keep their own compression settings.
        let mut builder = Database::builder(dir)
            .cache_size(cache_bytes.max(1 << 20))
            .journal_compression(fjall::CompressionType::None);
        if let Some(gc) = gc {
            let factory: Arc<dyn Factory> = Arc::new(GcFactory(AssertUnwindSafe(GcShared {
                gc,
                meta: Arc::clone(&meta_slot),
            })));
            builder = builder.with_compaction_filter_factories(Arc::new(move |name: &str| {
                (name == Space::Data.name()).then(|| Arc::clone(&factory))
            }));
        }
        let db = builder.open().map_err(io)?;
        // Partitioned index and filter blocks in every level (the engine's
        // default partitions them from L3 only): a table of a lower level
        // otherwise keeps its whole index in memory for good, about 4% of
        // its size with 4 KiB blocks (21 MB for 3 million 182-byte records,
        // a third of a 65 MB `maxmemory`). Partitioned, a table keeps only
        // its top-level index, and the partitions go through the block
        // cache, whose size `maxmemory` bounds.
        let open = |s: Space| {
            db.keyspace(s.name(), || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(memtable_bytes.max(1 << 20))
                    .index_block_partitioning_policy(PartitioningPolicy::all(true))
                    .filter_block_partitioning_policy(PartitioningPolicy::all(true))
            })
            .map_err(io)
        };
        let spaces = [open(Space::Meta)?, open(Space::Data)?, open(Space::Expiry)?];
        *meta_slot.write() = Some(spaces[Space::Meta.index()].clone());
        let kv = LsmKv {
            db,
            spaces: Arc::new(spaces),
            meta_slot,
            memtable_limit: 2 * memtable_bytes.max(1 << 20),
        };
        // A replayed journal may have refilled memtables of an older size.
        kv.bound_memtables()?;
        Ok(kv)
    }

    /// Seals the active memtables (fjall flushes them in the background)
    /// when the memtables hold more than `memtable_limit`; a keyspace whose
    /// sealed memtables still wait for their flush is left alone (writes
    /// then wait for fjall's own limit of sealed memtables).
    fn bound_memtables(&self) -> Result<()> {
        if self.db.write_buffer_size() <= self.memtable_limit {
            return Ok(());
        }
        for ks in self.spaces.iter() {
            if ks.sealed_memtable_count() == 0 {
                ks.rotate_memtable().map_err(io)?;
            }
        }
        Ok(())
    }

    fn ks(&self, space: Space) -> &Keyspace {
        &self.spaces[space.index()]
    }
}

fn collect_iter(iter: fjall::Iter) -> KvIter<'static> {
    Box::new(iter.map(|guard| {
        guard
            .into_inner()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .map_err(io)
    }))
}

fn iter_dir(iter: fjall::Iter, reverse: bool) -> KvIter<'static> {
    if reverse {
        Box::new(collect_iter_rev(iter))
    } else {
        collect_iter(iter)
    }
}

fn collect_iter_rev(
    iter: fjall::Iter,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + Send + 'static {
    iter.rev().map(|guard| {
        guard
            .into_inner()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .map_err(io)
    })
}

impl KvRead for LsmKv {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // fjall panics on over-long keys; none can be stored.
        if key.len() > MAX_ENTRY_KEY {
            return Ok(None);
        }
        Ok(self.ks(space).get(key).map_err(io)?.map(|v| v.to_vec()))
    }

    fn range(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> KvIter<'_> {
        let (start, end) = clamp_bounds(start, end);
        if range_is_empty(start, end) {
            return Box::new(std::iter::empty());
        }
        iter_dir(self.ks(space).range::<&[u8], _>((start, end)), reverse)
    }
}

/// A fjall cross-keyspace snapshot.
struct LsmSnapshot {
    snap: Snapshot,
    spaces: Arc<[Keyspace; 3]>,
}

impl KvRead for LsmSnapshot {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if key.len() > MAX_ENTRY_KEY {
            return Ok(None);
        }
        Ok(self
            .snap
            .get(&self.spaces[space.index()], key)
            .map_err(io)?
            .map(|v| v.to_vec()))
    }

    fn range(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> KvIter<'_> {
        let (start, end) = clamp_bounds(start, end);
        if range_is_empty(start, end) {
            return Box::new(std::iter::empty());
        }
        let iter = self
            .snap
            .range::<&[u8], _>(&self.spaces[space.index()], (start, end));
        iter_dir(iter, reverse)
    }
}

impl Kv for LsmKv {
    fn write(&self, batch: WriteBatch, durability: Durability) -> Result<()> {
        self.write_ref(&batch, durability)
    }

    fn write_ref(&self, batch: &WriteBatch, durability: Durability) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        batch.check_keys()?;
        let mode = match durability {
            // Left in the journal's user-space buffer (`flush_buffers`).
            Durability::Lazy => None,
            Durability::Buffer => Some(PersistMode::Buffer),
            Durability::Sync => Some(PersistMode::SyncData),
        };
        let mut b =
            fjall::OwnedWriteBatch::with_capacity(self.db.clone(), batch.len()).durability(mode);
        for (space, key, op) in batch.ops() {
            match op {
                Op::Put(v) => b.insert(self.ks(*space), key.as_slice(), v.as_slice()),
                Op::Delete => b.remove(self.ks(*space), key.as_slice()),
            }
        }
        b.commit().map_err(io)?;
        self.bound_memtables()
    }

    fn snapshot(&self) -> Box<dyn KvRead> {
        Box::new(LsmSnapshot {
            snap: self.db.snapshot(),
            spaces: Arc::clone(&self.spaces),
        })
    }

    fn persist(&self) -> Result<()> {
        self.db.persist(PersistMode::SyncData).map_err(io)
    }

    fn flush_buffers(&self) -> Result<()> {
        self.db.persist(PersistMode::Buffer).map_err(io)
    }

    fn compact(&self) -> Result<()> {
        // Meta first, so that the data filter reads settled meta tables.
        for space in Space::ALL {
            let ks = self.ks(space);
            ks.rotate_memtable_and_wait().map_err(io)?;
            ks.major_compact().map_err(io)?;
        }
        Ok(())
    }

    fn stats(&self) -> KvStats {
        KvStats {
            disk_bytes: self.spaces.iter().map(Keyspace::disk_space).sum(),
            journal_bytes: self.db.journal_disk_space().unwrap_or(0),
            memtable_bytes: self.db.write_buffer_size(),
            cache_bytes: self.db.cache_size(),
            cache_capacity: self.db.cache_capacity(),
            table_count: self.spaces.iter().map(|k| k.table_count() as u64).sum(),
            compactions_completed: self.db.compactions_completed() as u64,
        }
    }
}

/// What the data compaction filter needs: the store's decision and a handle
/// to the `meta` keyspace (set once the database is open).
struct GcShared {
    gc: Arc<dyn DataGc>,
    meta: MetaSlot,
}

/// Makes one [`GcFilter`] per compaction run of the `data` keyspace.
struct GcFactory(AssertUnwindSafe<GcShared>);

impl Factory for GcFactory {
    fn name(&self) -> &str {
        "roaringd-data-gc"
    }

    fn make_filter(&self, _ctx: &Context) -> Box<dyn CompactionFilter> {
        Box::new(GcFilter {
            gc: Arc::clone(&self.0.gc),
            meta: self.0.meta.read().clone(),
            last: RefCell::new(None),
        })
    }
}

/// A memoised meta lookup: key and its value.
type LastLookup = (Vec<u8>, Option<Vec<u8>>);

/// Drops `data` entries whose key version is dead. Entries of one key and
/// version are adjacent, so the last meta lookup is memoised.
struct GcFilter {
    gc: Arc<dyn DataGc>,
    meta: Option<Keyspace>,
    last: RefCell<Option<LastLookup>>,
}

impl CompactionFilter for GcFilter {
    fn filter_item(
        &mut self,
        item: ItemAccessor<'_>,
        _ctx: &Context,
    ) -> fjall::compaction::filter::CompactionFilterResult {
        let Some(meta) = &self.meta else {
            return Ok(Verdict::Keep);
        };
        let lookup = |k: &[u8]| -> Result<Option<Vec<u8>>> {
            if let Some((lk, lv)) = &*self.last.borrow() {
                if lk.as_slice() == k {
                    return Ok(lv.clone());
                }
            }
            let v = meta.get(k).map_err(io)?.map(|v| v.to_vec());
            *self.last.borrow_mut() = Some((k.to_vec(), v.clone()));
            Ok(v)
        };
        // On any error keep the entry: a later compaction will retry.
        match self.gc.is_stale(item.key(), &lookup) {
            Ok(true) => Ok(Verdict::Destroy),
            _ => Ok(Verdict::Keep),
        }
    }
}
