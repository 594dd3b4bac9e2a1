//! `LsmKv`: the [`Kv`] on fjall 3 — the only file in the workspace that
//! names fjall. One fjall `Database` with one keyspace per [`Space`]; batches
//! are fjall write batches (atomic across keyspaces); stale `Data` entries
//! are dropped by a fjall compaction filter installed on the `data`
//! keyspace, which asks the store's [`DataGc`] with a read of the live
//! `meta` keyspace.

use crate::error::{Result, StoreError};
use crate::kv::{
    clamp_bounds, last_writes, range_is_empty, DataGc, Durability, Kv, KvIter, KvRead, KvStats, Op,
    Space, WriteBatch, MAX_ENTRY_KEY,
};
use fjall::compaction::filter::{CompactionFilter, Context, Factory, ItemAccessor, Verdict};
use fjall::config::PartitioningPolicy;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode, Readable, Snapshot};
use parking_lot::{Mutex, RwLock};
use std::cell::RefCell;
use std::ops::Bound;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn io(e: fjall::Error) -> StoreError {
    StoreError::Io(e.to_string())
}

/// The fjall-backed storage engine.
pub struct LsmKv {
    db: Database,
    spaces: Arc<[Keyspace; 4]>,
    /// The `meta` handle lent to the compaction filter. Cleared on drop:
    /// the filter factory lives inside the database's config, so holding a
    /// keyspace there would keep the database alive (and locked) forever.
    meta_slot: MetaSlot,
    /// Bytes of memtables (all keyspaces, active and sealed) past which a
    /// write seals the active memtables for flushing: fjall keeps each
    /// keyspace's memtable size from its creation, so this applies the
    /// current setting to an older data directory too.
    memtable_limit: u64,
    /// Batches written so far (for [`Kv::release_when_idle`]).
    writes: AtomicU64,
    /// Where [`Kv::release_when_idle`] stands.
    idle: Mutex<Idle>,
    /// A keyspace of its own for [`Kv::release_when_idle`]'s marker entry
    /// (never read; holds one key).
    marker: Keyspace,
}

/// Releasing memtables once writes stop ([`Kv::release_when_idle`]).
///
/// fjall frees a flushed memtable only when it drops the engine versions
/// that name it, and it drops those only while sealing some memtable
/// later (with no snapshot open). After a burst of writes the last
/// memtables (up to `memtable_limit` of them, plus the one flushed
/// before) so stayed in memory until the next burst: 150 MB after loading
/// a million set members. So, once a call finds no batch written since
/// the previous one, it seals every non-empty memtable (they flush in the
/// background), unless they hold under [`IDLE_RELEASE_MIN`] and no table
/// was written since the last release; once those flushes are done, it
/// writes one entry to the `marker` keyspace and seals that, which lets
/// fjall drop the versions that kept the flushed memtables. Then nothing
/// until the next write.
#[derive(Default)]
struct Idle {
    /// [`LsmKv::writes`] at the previous call.
    seen: u64,
    stage: IdleStage,
    /// Tables of the three spaces at the last release.
    tables: u64,
}

/// Memtable bytes from which an idle store flushes them (below it, only a
/// flush since the last release makes it act).
const IDLE_RELEASE_MIN: u64 = 1 << 20;

#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum IdleStage {
    /// Writes since the previous call.
    #[default]
    Busy,
    /// Memtables sealed; their flushes may be running.
    Sealed,
    /// Everything released.
    Released,
}

/// Name of the marker keyspace.
const MARKER_SPACE: &str = "idle-marker";

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
        // The operation log's chunks are written once, read only by a
        // recovery, and deleted within seconds: uncompressed, and most of
        // them deleted before their memtable is flushed (the flush then
        // drops them).
        let log = db
            .keyspace(Space::Log.name(), || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(memtable_bytes.max(1 << 20))
                    .data_block_compression_policy(fjall::config::CompressionPolicy::all(
                        fjall::CompressionType::None,
                    ))
            })
            .map_err(io)?;
        let spaces = [
            open(Space::Meta)?,
            open(Space::Data)?,
            open(Space::Expiry)?,
            log,
        ];
        *meta_slot.write() = Some(spaces[Space::Meta.index()].clone());
        let marker = db
            .keyspace(MARKER_SPACE, KeyspaceCreateOptions::default)
            .map_err(io)?;
        let kv = LsmKv {
            db,
            spaces: Arc::new(spaces),
            meta_slot,
            memtable_limit: 2 * memtable_bytes.max(1 << 20),
            writes: AtomicU64::new(0),
            idle: Mutex::new(Idle::default()),
            marker,
        };
        // A replayed journal may have refilled memtables of an older size.
        kv.bound_memtables()?;
        Ok(kv)
    }

    /// Tables of the three spaces.
    fn table_count(&self) -> u64 {
        self.spaces.iter().map(|k| k.table_count() as u64).sum()
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
    spaces: Arc<[Keyspace; 4]>,
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
        self.write_shared(&Arc::new(batch), durability)
    }

    fn write_shared(&self, batch: &Arc<WriteBatch>, durability: Durability) -> Result<()> {
        self.write_group(std::slice::from_ref(batch), durability)
    }

    fn write_group(&self, batches: &[Arc<WriteBatch>], durability: Durability) -> Result<()> {
        let len: usize = batches.iter().map(|b| b.len()).sum();
        if len == 0 {
            // Nothing to write, only durability to give (`behind.rs`
            // queues empty batches for `persist` and `flush_buffers`).
            return match durability {
                Durability::Lazy => Ok(()),
                Durability::Buffer => self.flush_buffers(),
                Durability::Sync => self.persist(),
            };
        }
        for b in batches {
            b.check_keys()?;
        }
        let mode = match durability {
            // Left in the journal's user-space buffer (`flush_buffers`).
            Durability::Lazy => None,
            Durability::Buffer => Some(PersistMode::Buffer),
            Durability::Sync => Some(PersistMode::SyncData),
        };
        // One fjall batch of each key's last write in the group: fjall
        // lets a later write of a key win within a batch too
        // (`kv_batch_later_write_wins`), but each would cost a memtable
        // search and its journal bytes.
        let writes = last_writes(batches);
        let mut b =
            fjall::OwnedWriteBatch::with_capacity(self.db.clone(), writes.len()).durability(mode);
        for (space, key, op) in writes {
            match op {
                Op::Put(v) => b.insert(self.ks(*space), key.as_slice(), v.as_slice()),
                Op::Delete => b.remove(self.ks(*space), key.as_slice()),
            }
        }
        b.commit().map_err(io)?;
        self.writes.fetch_add(1, Ordering::Relaxed);
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

    fn release_when_idle(&self) -> Result<()> {
        let writes = self.writes.load(Ordering::Relaxed);
        let mut idle = self.idle.lock();
        if writes != idle.seen {
            idle.seen = writes;
            idle.stage = IdleStage::Busy;
            return Ok(());
        }
        match idle.stage {
            IdleStage::Busy => {
                // Small memtables, and no flush since the last release
                // (which could have left a flushed memtable held): nothing
                // worth a flush.
                if self.db.write_buffer_size() < IDLE_RELEASE_MIN
                    && self.table_count() == idle.tables
                {
                    idle.stage = IdleStage::Released;
                    return Ok(());
                }
                for ks in self.spaces.iter() {
                    ks.rotate_memtable().map_err(io)?;
                }
                idle.stage = IdleStage::Sealed;
            }
            IdleStage::Sealed if self.db.outstanding_flushes() == 0 => {
                self.marker
                    .insert("idle", writes.to_be_bytes())
                    .map_err(io)?;
                self.marker.rotate_memtable().map_err(io)?;
                idle.stage = IdleStage::Released;
                idle.tables = self.table_count();
            }
            IdleStage::Sealed | IdleStage::Released => {}
        }
        Ok(())
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
            table_count: self.table_count(),
            compactions_completed: self.db.compactions_completed() as u64,
            queued_bytes: 0,
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
