//! `Store`: the handle the server holds. Opens the `Kv` (fjall on disk, or
//! in memory), owns versions, locks, per-database counters, the SCAN cursor
//! table, the sync mode and its background persister, and starts `Txn`s.

use crate::error::{Result, StoreError};
use crate::keys::{self, INTERNAL_DB};
use crate::kv::behind::WriteBehind;
use crate::kv::lsm::LsmKv;
use crate::kv::mem::MemKv;
use crate::kv::{DataGc, Durability, Kv, KvStats, Space, WriteBatch};
use crate::locks::Locks;
use crate::meta::KeyMeta;
use crate::tier::{Tier, TieredKv};
use crate::txn::Txn;
use crate::types::bitmap::{container_cache, dirty, oplog};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// When committed batches reach stable storage (Redis `appendfsync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// Synced before `commit` returns.
    Always,
    /// Synced by a background thread once a second (commits stay in the
    /// journal's user-space buffer until then, or until it fills).
    EverySec,
    /// Handed to the OS by a background thread once a second (or when the
    /// journal's buffer fills); syncing is left to the OS.
    No,
}

impl SyncMode {
    fn to_u8(self) -> u8 {
        match self {
            SyncMode::Always => 0,
            SyncMode::EverySec => 1,
            SyncMode::No => 2,
        }
    }

    fn from_u8(v: u8) -> Self {
        match v {
            0 => SyncMode::Always,
            1 => SyncMode::EverySec,
            _ => SyncMode::No,
        }
    }
}

/// How to open a store.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Data directory; `None` keeps everything in memory (tests).
    pub dir: Option<PathBuf>,
    /// Number of databases (SELECT 0..databases). At most 65535.
    pub databases: u16,
    /// Initial sync mode.
    pub sync: SyncMode,
    /// Block cache size in bytes (fjall only).
    pub cache_bytes: u64,
    /// Budget of the memory tier in bytes (`crate::tier`).
    pub tier_bytes: u64,
    /// Largest memtable of each LSM keyspace, in bytes (fjall only; taken
    /// when a keyspace is created, kept by fjall afterwards).
    pub memtable_bytes: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            dir: None,
            databases: 16,
            sync: SyncMode::EverySec,
            cache_bytes: 64 << 20,
            tier_bytes: 256 << 20,
            memtable_bytes: 64 << 20,
        }
    }
}

/// Key counts of one database (INFO keyspace).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DbStats {
    /// Keys (including expired ones not yet removed).
    pub keys: u64,
    /// Keys with an expire time.
    pub expires: u64,
}

/// Everything INFO reports about the store.
#[derive(Clone, Debug, Default)]
pub struct StoreStats {
    /// Per database, index = db number.
    pub dbs: Vec<DbStats>,
    /// Engine sizes.
    pub kv: KvStats,
    /// Keys removed by expiry (lazy and active) since open.
    pub expired_keys: u64,
    /// Read lookups that found a live key (see `Txn::set_count_lookups`).
    pub keyspace_hits: u64,
    /// Read lookups that found no live key.
    pub keyspace_misses: u64,
}

/// Bits of a version below the epoch.
const EPOCH_SHIFT: u32 = 40;

/// Version allocation: `epoch << 40 | seq`, the epoch persisted and bumped
/// on every open, so versions are unique across restarts. Versions handed
/// to live transactions that may write `data` entries are "in flight"; the
/// data GC never drops entries at or above the oldest in-flight version.
pub(crate) struct VersionState {
    epoch: u64,
    next: u64,
    inflight: BTreeMap<u64, u32>,
}

impl VersionState {
    /// Versions below this belong to finished transactions.
    fn horizon(&self) -> u64 {
        self.inflight.keys().next().copied().unwrap_or(self.next)
    }
}

/// The data GC the store installs into the `Kv`.
struct StoreGc {
    versions: Arc<Mutex<VersionState>>,
}

impl DataGc for StoreGc {
    fn is_stale(&self, data_key: &[u8], meta: &crate::kv::MetaLookup<'_>) -> Result<bool> {
        let parts = keys::split_data_key(data_key)?;
        if parts.db == INTERNAL_DB || parts.version >= self.versions.lock().horizon() {
            return Ok(false);
        }
        match meta(&keys::meta_key(parts.db, parts.key))? {
            None => Ok(true),
            Some(bytes) => Ok(KeyMeta::decode_version(&bytes)? != parts.version),
        }
    }
}

/// Remembers where SCAN-family iterations stopped: cursor id → the last
/// entry key returned. Bounded; the oldest cursors are forgotten.
pub(crate) struct Cursors {
    map: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
}

const MAX_CURSORS: usize = 1 << 16;

impl Cursors {
    pub(crate) fn insert(&mut self, pos: Vec<u8>) -> u64 {
        let mut id;
        loop {
            id = rand::random::<u64>() >> 1;
            if id != 0 && !self.map.contains_key(&id) {
                break;
            }
        }
        if self.order.len() >= MAX_CURSORS {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
        self.map.insert(id, pos);
        self.order.push_back(id);
        id
    }

    pub(crate) fn get(&self, id: u64) -> Option<Vec<u8>> {
        self.map.get(&id).cloned()
    }
}

pub(crate) struct Inner {
    /// The memory tier over the LSM store (`crate::tier`).
    pub(crate) kv: Arc<dyn Kv>,
    /// The tier's budget, policy and counters.
    pub(crate) tier: Arc<Tier>,
    pub(crate) databases: u16,
    sync: AtomicU8,
    pub(crate) locks: Locks,
    pub(crate) versions: Arc<Mutex<VersionState>>,
    /// Per-database counters; also serialises commits that change them.
    pub(crate) counts: Mutex<Vec<DbStats>>,
    pub(crate) cursors: Mutex<Cursors>,
    pub(crate) expired: std::sync::atomic::AtomicU64,
    /// Where the active expiry cycle resumes: see [`ExpiryCursor`].
    pub(crate) expiry_cursor: Mutex<ExpiryCursor>,
    pub(crate) keyspace_hits: std::sync::atomic::AtomicU64,
    pub(crate) keyspace_misses: std::sync::atomic::AtomicU64,
    /// tr-cache hook: the in-process container cache (container_cache.rs).
    pub(crate) ccache: container_cache::ContainerCache,
    /// The bitmap write-back tier: dirty keys and the operation log
    /// (dirty.rs, oplog.rs).
    pub(crate) dirty: dirty::Dirty,
}

/// Where the active expiry cycle starts scanning the time-ordered expiry
/// index, so it does not wade through the tombstones of entries it already
/// removed. Every commit that adds an index entry at time `t` lowers `from`
/// (and `added_min`) to `t` after its write; a cycle resets `added_min` when
/// it starts and, when it finishes, moves `from` to what it processed, but
/// never past an entry added meanwhile.
pub(crate) struct ExpiryCursor {
    from: u64,
    added_min: u64,
}

impl Inner {
    /// Writes the operation log's pending records to the `Kv`
    /// (`OpLog::flush`), ahead of a sync or a hand-over to the OS.
    ///
    /// # Errors
    /// `Io` when the write fails.
    fn flush_log(&self) -> Result<()> {
        match self.dirty.log.lock().as_mut() {
            Some(log) => log.flush(),
            None => Ok(()),
        }
    }

    /// Syncs everything committed so far, the operation log's pending
    /// records included ([`Store::persist`], an `always` commit that
    /// appended to the log).
    ///
    /// # Errors
    /// `Io` on failure.
    pub(crate) fn persist(&self) -> Result<()> {
        self.flush_log()?;
        self.kv.persist()
    }

    /// Records that a commit added an expiry index entry at `t`.
    pub(crate) fn note_expiry_added(&self, t: u64) {
        let mut c = self.expiry_cursor.lock();
        c.from = c.from.min(t);
        c.added_min = c.added_min.min(t);
    }
}

/// The store handle: cheap to clone, shared by every connection.
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
}

/// The store format this build writes: 6 = no bitmap delta entries
/// (`types::bitmap::delta`: a store of an earlier format has its deltas
/// folded into their containers when it opens, before the format record
/// is raised, so a crash during the pass leaves it to the next open; a
/// format-5 build refuses a format-6 directory, whose data it would read
/// correctly, by the rule below); 5 = the bitmap operation log's
/// records are entries of the `log` keyspace (`types::bitmap::oplog`: the
/// LSM store's journal is the one log; format 4 kept them in files of its own,
/// `refuse_old_oplog`, and a format-4 build would not replay the
/// records of a format-5 directory, so it refuses one); 4 = a bitmap
/// whose data is one
/// small entry keeps it in its meta entry (`meta::KeyMeta::inline_entry`;
/// format 3 kept every entry in `data`, which format 4 reads as is; a
/// format-3 build's meta decoder refuses such a meta as corrupt); 3 = set
/// members in pages
/// (`types::sets::page`; format 2 stored one entry per member, which
/// format 3 reads as one-member pages); 2 = bitmaps in packed pages
/// (`types::bitmap::page`; 1, unrecorded, was one entry per container,
/// which later formats read as is). A directory of a higher format is
/// refused at open, so a format-2 build never takes a set page's members
/// for its last one alone, and a format-3 build never answers errors for
/// the inline bitmaps of a directory it would open.
pub const STORE_FORMAT: u64 = 6;

/// `meta` key of the store format record.
fn format_key() -> Vec<u8> {
    keys::meta_key(INTERNAL_DB, b"format")
}

fn epoch_key() -> Vec<u8> {
    keys::meta_key(INTERNAL_DB, b"epoch")
}

pub(crate) fn counts_key(db: u16) -> Vec<u8> {
    let mut k = keys::meta_key(INTERNAL_DB, b"counts:");
    k.extend_from_slice(&db.to_be_bytes());
    k
}

pub(crate) fn encode_counts(c: DbStats) -> Vec<u8> {
    let mut v = c.keys.to_be_bytes().to_vec();
    v.extend_from_slice(&c.expires.to_be_bytes());
    v
}

/// The last absorbed log seq of each key: `(db, key)` → seq.
type AbsorbedSeqs = HashMap<(u16, Vec<u8>), u64>;

/// Directory of the operation log of builds before store format 5,
/// inside the store's directory (see [`refuse_old_oplog`]).
const OLD_OPLOG_DIR: &str = "roaringd-oplog";

/// Opens the way for a directory written by a build that kept the bitmap
/// operation log in files of its own (store format 4 and before): a log
/// whose segments are all empty (what a clean shutdown or a finished
/// recovery leaves) is removed; one that holds records is refused, with
/// the way out, since this build does not read those files and would
/// lose the edits they hold.
///
/// # Errors
/// `Io` for a log holding records, or when the directory cannot be read
/// or removed.
fn refuse_old_oplog(dir: &std::path::Path) -> Result<()> {
    let old = dir.join(OLD_OPLOG_DIR);
    let io = |e: std::io::Error| StoreError::Io(format!("{}: {e}", old.display()));
    let entries = match std::fs::read_dir(&old) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(e)),
    };
    let mut held = 0u64;
    for entry in entries {
        held += entry.map_err(io)?.metadata().map_err(io)?.len();
    }
    if held > 0 {
        return Err(StoreError::Io(format!(
            "the data directory holds {held} bytes of bitmap operation log records in \
             {OLD_OPLOG_DIR}/, written by an older build that kept that log apart from \
             the LSM store's journal: start that build on it and SHUTDOWN it (which \
             writes the records back and empties the log), then start this one"
        )));
    }
    std::fs::remove_dir_all(&old).map_err(io)
}

/// Prefix of the `wb` entries (meta space, internal database): one per
/// absorb of a dirty key, `seq: u64 BE | db: u16 BE | version: u64 BE |
/// key`, so that they sort by log seq.
fn wb_prefix() -> Vec<u8> {
    keys::meta_key(INTERNAL_DB, b"wb:")
}

/// The `wb` entry recording that the dirty state of `(db, key)` at
/// `version`, up to log record `seq`, was absorbed.
pub(crate) fn wb_key(seq: u64, db: u16, version: u64, key: &[u8]) -> Vec<u8> {
    let mut k = wb_prefix();
    k.extend_from_slice(&seq.to_be_bytes());
    k.extend_from_slice(&db.to_be_bytes());
    k.extend_from_slice(&version.to_be_bytes());
    k.extend_from_slice(key);
    k
}

fn parse_wb_key(rest: &[u8]) -> Option<(u64, u16, u64, &[u8])> {
    let seq = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
    let db = u16::from_be_bytes(rest.get(8..10)?.try_into().ok()?);
    let version = u64::from_be_bytes(rest.get(10..18)?.try_into().ok()?);
    Some((seq, db, version, &rest[18..]))
}

fn decode_u64(b: &[u8]) -> Result<u64> {
    Ok(u64::from_be_bytes(b.try_into().map_err(|_| {
        StoreError::corrupt("internal counter has the wrong length")
    })?))
}

/// Current Unix time in milliseconds.
#[must_use]
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Store {
    /// Opens the store: fjall in `config.dir`, or in memory when `None`.
    /// Bumps and syncs the version epoch; starts the once-a-second persister
    /// (it exits when the last `Store` handle is dropped).
    ///
    /// # Errors
    /// `Io` when the directory cannot be opened; `Corrupt` when the internal
    /// records are damaged.
    pub fn open(config: StoreConfig) -> Result<Store> {
        let versions = Arc::new(Mutex::new(VersionState {
            epoch: 0,
            next: 0,
            inflight: BTreeMap::new(),
        }));
        let gc: Arc<dyn DataGc> = Arc::new(StoreGc {
            versions: Arc::clone(&versions),
        });
        if let Some(dir) = &config.dir {
            refuse_old_oplog(dir)?;
        }
        let lsm: Box<dyn Kv> = match &config.dir {
            // The engine's writes off the committing thread (`kv::behind`).
            Some(dir) => Box::new(WriteBehind::new(Box::new(LsmKv::open(
                dir,
                config.cache_bytes,
                config.memtable_bytes,
                Some(gc),
            )?))?),
            None => Box::new(MemKv::new(Some(gc))),
        };
        let tier = Arc::new(Tier::new(
            usize::try_from(config.tier_bytes).unwrap_or(usize::MAX),
        ));
        let kv: Arc<dyn Kv> = Arc::new(TieredKv::new(lsm, Arc::clone(&tier)));
        let databases = config.databases.clamp(1, INTERNAL_DB);
        let found = match kv.get(Space::Meta, &format_key())? {
            Some(b) => decode_u64(&b)?,
            None => 0,
        };
        if found > STORE_FORMAT {
            return Err(StoreError::Io(format!(
                "the data directory is of store format {found}, newer than this build's \
                 {STORE_FORMAT}: open it with the build that wrote it"
            )));
        }
        if found < 6 {
            crate::types::bitmap::delta::fold_store(kv.as_ref())?;
        }
        let epoch = match kv.get(Space::Meta, &epoch_key())? {
            Some(b) => decode_u64(&b)? + 1,
            None => 1,
        };
        let mut batch = WriteBatch::new();
        batch.put(Space::Meta, epoch_key(), epoch.to_be_bytes().to_vec());
        batch.put(
            Space::Meta,
            format_key(),
            STORE_FORMAT.to_be_bytes().to_vec(),
        );
        kv.write(batch, Durability::Sync)?;
        {
            let mut v = versions.lock();
            v.epoch = epoch;
            v.next = epoch << EPOCH_SHIFT;
        }
        let mut counts = Vec::with_capacity(databases as usize);
        for db in 0..databases {
            counts.push(match kv.get(Space::Meta, &counts_key(db))? {
                Some(b) if b.len() == 16 => DbStats {
                    keys: decode_u64(&b[..8])?,
                    expires: decode_u64(&b[8..])?,
                },
                Some(_) => return Err(StoreError::corrupt("bad key counter record")),
                None => DbStats::default(),
            });
        }
        // A store without user keys: the tier holds every key there is, so
        // a key it lacks is absent without an LSM read (`TieredKv`). The
        // counts say so; one seek confirms it (they are written with the
        // keys, but a wrong "no key" would hide data).
        let internal = INTERNAL_DB.to_be_bytes();
        if counts.iter().all(|c| c.keys == 0)
            && kv
                .range_first(
                    Space::Meta,
                    std::ops::Bound::Unbounded,
                    std::ops::Bound::Excluded(&internal[..]),
                    false,
                )?
                .is_none()
        {
            tier.set_holds_all();
        }
        let inner = Arc::new(Inner {
            kv,
            tier,
            databases,
            sync: AtomicU8::new(config.sync.to_u8()),
            locks: Locks::default(),
            versions,
            counts: Mutex::new(counts),
            cursors: Mutex::new(Cursors {
                map: HashMap::new(),
                order: VecDeque::new(),
            }),
            expired: std::sync::atomic::AtomicU64::new(0),
            expiry_cursor: Mutex::new(ExpiryCursor {
                from: 0,
                added_min: u64::MAX,
            }),
            keyspace_hits: std::sync::atomic::AtomicU64::new(0),
            keyspace_misses: std::sync::atomic::AtomicU64::new(0),
            ccache: container_cache::ContainerCache::default(),
            // The log is installed once replayed (`recover`).
            dirty: dirty::Dirty::new(None),
        });
        let store = Store { inner };
        if config.dir.is_some() {
            store.recover()?;
            let persister = spawn_persister(Arc::downgrade(&store.inner));
            if let (Some(p), Some(log)) = (persister, store.inner.dirty.log.lock().as_mut()) {
                log.set_waker(p);
            }
        }
        Ok(store)
    }

    /// Applies the operation log's records that the `Kv` lacks (see
    /// docs/architecture.md, "The write-back tier", Recovery), read one at a
    /// time from the floor up, then turns the tier on with the log,
    /// persists and empties it. A record applies when its seq is above the key's
    /// last absorb (`wb` entry, of any version: an absorb writes the key's
    /// state after all its records up to that seq, a TR.BITOP result
    /// having replaced those before it). A single-bit edit, an edit of
    /// listed bits or a range write applies when the key still has that
    /// version; a whole value (a TR.BITOP result) is written under a fresh
    /// version, which the later records of its version then name instead,
    /// so that a replay repeated after a crash during recovery gives the
    /// same state.
    fn recover(&self) -> Result<()> {
        use oplog::Change;
        let kv = Arc::clone(&self.inner.kv);
        let absorbed = self.absorbed_seqs()?;
        // (db, logged version, key) → the version its value was written
        // under by this recovery.
        let mut rewritten: HashMap<(u16, u64, Vec<u8>), u64> = HashMap::new();
        let mut applied = false;
        // Consecutive records of one key are applied in one transaction (a
        // record's own transaction wrote its containers to the LSM store
        // each time: 360 µs a record for a range write of ~76 containers),
        // committed when the next record names another key, or once it
        // holds `REPLAY_RECORDS` records or `REPLAY_ENTRIES` overlay
        // entries. (One transaction over many keys made the replay of
        // single-bit edits of 100,000 keys twice as slow.)
        let mut batch: Option<(Txn, usize, (u16, Vec<u8>))> = None;
        for op in oplog::records(&*kv)? {
            let op = op?;
            let id = (op.db, op.version, op.key);
            let done = absorbed
                .get(&(id.0, id.2.clone()))
                .is_some_and(|&s| s >= op.seq);
            if done || op.db >= self.inner.databases {
                continue;
            }
            let (db, key) = (id.0, &id.2[..]);
            if batch
                .as_ref()
                .is_some_and(|(_, _, k)| (k.0, &k.1[..]) != (db, key))
            {
                let (t, ..) = batch.take().expect("a batch is open");
                t.commit()?;
            }
            let (t, records, _) =
                batch.get_or_insert_with(|| (self.begin(&[(db, key)]), 0, (db, key.to_vec())));
            // An edit applies when the key still has its logged version
            // (or the one its logged value was rewritten under).
            let want = rewritten.get(&id).copied().unwrap_or(id.1);
            let current = |t: &mut Txn| -> Result<bool> {
                Ok(t.live_meta(db, key)?.is_some_and(|m| m.version == want))
            };
            match &op.change {
                Change::Bit { offset, set } => {
                    if current(t)? {
                        t.tr_setbit(db, key, *offset, *set)?;
                    }
                }
                Change::Bits { offsets, set } => {
                    if current(t)? {
                        if *set {
                            t.tr_setbits(db, key, offsets)?;
                        } else {
                            t.tr_clearbits(db, key, offsets)?;
                        }
                    }
                }
                Change::Range { start, end, flip } => {
                    if current(t)? {
                        let op = if *flip {
                            crate::types::bitmap::RangeOp::Flip
                        } else {
                            crate::types::bitmap::RangeOp::Set
                        };
                        t.tr_range_write(db, key, *start, *end, op)?;
                    }
                }
                Change::Value(blocks) => {
                    if let Some(v) = t.tr_restore_value(db, key, blocks)? {
                        rewritten.insert(id.clone(), v);
                    }
                }
            }
            *records += 1;
            if *records >= REPLAY_RECORDS || t.pending_entries() >= REPLAY_ENTRIES {
                let (t, ..) = batch.take().expect("a batch is open");
                t.commit()?;
            }
            applied = true;
        }
        if let Some((t, ..)) = batch {
            t.commit()?;
        }
        self.inner
            .dirty
            .install_log(oplog::OpLog::open(Arc::clone(&kv))?);
        if applied {
            self.inner.kv.persist()?;
        }
        self.checkpoint()?;
        // Every key is clean now and the log holds no record above its
        // floor (the checkpoint raised it past the last one). So no `wb`
        // entry filters anything; and one may name a record the log lost
        // (a store whose journal kept an absorb and not the records before
        // it), whose sequence number the log hands out again from here:
        // were it kept, that later record would be taken for absorbed.
        // All go, durably, before any append.
        let prefix = wb_prefix();
        let mut batch = WriteBatch::new();
        for e in self.inner.kv.prefix(Space::Meta, &prefix, false) {
            batch.delete(Space::Meta, e?.0);
        }
        if !batch.is_empty() {
            self.inner.kv.write(batch, Durability::Sync)?;
        }
        Ok(())
    }

    /// The `wb` entries: the last absorbed log seq by `(db, key)`.
    fn absorbed_seqs(&self) -> Result<AbsorbedSeqs> {
        let mut out = HashMap::new();
        let prefix = wb_prefix();
        for e in self.inner.kv.prefix(Space::Meta, &prefix, false) {
            let (k, _) = e?;
            if let Some((seq, db, _version, key)) = parse_wb_key(&k[prefix.len()..]) {
                let s = out.entry((db, key.to_vec())).or_insert(0);
                *s = seq.max(*s);
            }
        }
        Ok(out)
    }

    /// Writes every dirty bitmap key back to the `Kv` (each through an
    /// ordinary `Txn`, which absorbs it), then raises the operation log's
    /// floor past the records that no dirty key needs, deleting the `wb`
    /// entries and the log's chunks below it, in one batch. That batch
    /// follows the absorbs' batches in the LSM store's journal, so a crash
    /// never keeps the raised floor without the absorbs it stands on: no
    /// sync is needed here. Run by the persister every
    /// `CHECKPOINT_EVERY` (or sooner, see `Dirty::wants_checkpoint` and
    /// `OpLog::wants_release`), at open and at shutdown.
    ///
    /// # Errors
    /// `Io` / `Corrupt`; what was not written back stays dirty and logged.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.dirty.checkpoint_started();
        for mk in self.inner.dirty.keys() {
            let (db, key) = keys::split_meta_key(&mk)?;
            self.begin(&[(db, key)]).commit()?;
        }
        // Under the log's lock, what must stay: the records of the keys
        // dirty now, and later ones (a key's records and its dirty state
        // are recorded under that lock), and the chunks below it.
        let (keep_from, mut batch, gone) = {
            let guard = self.inner.dirty.log.lock();
            let Some(log) = guard.as_ref() else {
                return Ok(());
            };
            let keep_from = self.inner.dirty.min_first_seq().unwrap_or(log.next_seq());
            if keep_from <= log.floor() {
                return Ok(());
            }
            let mut batch = WriteBatch::new();
            let gone = log.release_below(keep_from, &mut batch);
            (keep_from, batch, gone)
        };
        // The `wb` entries below the floor filter nothing once a replay
        // starts there. Read and written without the log's lock, which
        // appends take: the read waits for the LSM store's queue.
        let prefix = wb_prefix();
        for e in self.inner.kv.prefix(Space::Meta, &prefix, false) {
            let (k, _) = e?;
            match parse_wb_key(&k[prefix.len()..]) {
                Some((seq, ..)) if seq < keep_from => batch.delete(Space::Meta, k),
                _ => break,
            }
        }
        self.inner.kv.write(batch, Durability::Lazy)?;
        if let Some(log) = self.inner.dirty.log.lock().as_mut() {
            log.released(keep_from, &gone);
        }
        Ok(())
    }

    /// Number of databases.
    #[must_use]
    pub fn databases(&self) -> u16 {
        self.inner.databases
    }

    /// Hands every commit made so far to the OS (`write(2)` of the LSM
    /// store's journal buffer, which holds the operation log's records
    /// too), without syncing: after it returns, a crash of the process (not of the
    /// machine) loses none of those commits. The server calls it before
    /// replying to writes under `everysec` and `no` (`write-before-reply`),
    /// for many connections' commits at once.
    ///
    /// # Errors
    /// `Io` when a write fails.
    pub fn write_to_os(&self) -> Result<()> {
        self.inner.flush_log()?;
        self.inner.kv.flush_buffers()
    }

    /// Current sync mode.
    #[must_use]
    pub fn sync_mode(&self) -> SyncMode {
        SyncMode::from_u8(self.inner.sync.load(Ordering::Relaxed))
    }

    /// Changes the sync mode (CONFIG SET appendfsync); applies to the next
    /// commit.
    pub fn set_sync_mode(&self, mode: SyncMode) {
        self.inner.sync.store(mode.to_u8(), Ordering::Relaxed);
    }

    /// True when a command on `key` of `db` would be served from process
    /// memory, without an LSM read (`Kv::is_resident`). Cheap: the server
    /// asks it of every key of a request before running it.
    #[must_use]
    pub fn is_resident(&self, db: u16, key: &[u8]) -> bool {
        self.inner.kv.is_resident(&keys::KeyBuf::meta(db, key))
    }

    /// Asks the CPU to start loading the resident parts of `names`
    /// (`Kv::prefetch`) that a command reads first: a transaction calls it
    /// for its keys before it runs, so that their cache misses overlap
    /// instead of each command waiting for its own.
    pub fn prefetch(&self, names: &[(u16, &[u8])]) {
        let mks: Vec<keys::KeyBuf> = names
            .iter()
            .map(|(db, key)| keys::KeyBuf::meta(*db, key))
            .collect();
        let mks: Vec<&[u8]> = mks.iter().map(|mk| &mk[..]).collect();
        self.inner.kv.prefetch(&mks);
    }

    /// Asks the CPU to start loading, for each `(db, key, element)`, the
    /// data entry a read of that element of the key reads first
    /// (`Kv::prefetch_seeks`: a set's page that would hold the member, a
    /// hash's field), where the key is resident: a pipeline calls it for
    /// its commands that each read one element, before it runs them.
    pub fn prefetch_seeks(&self, seeks: &[(u16, &[u8], &[u8])]) {
        // The meta keys side by side in one buffer, each key once per run
        // of seeks on it (a pipeline on one key builds one).
        let mut bytes = Vec::new();
        let mut spans: Vec<std::ops::Range<usize>> = Vec::with_capacity(seeks.len());
        let mut prev: Option<(u16, &[u8])> = None;
        for &(db, key, _) in seeks {
            let span = match spans.last() {
                Some(last) if prev == Some((db, key)) => last.clone(),
                _ => {
                    let start = bytes.len();
                    bytes.extend_from_slice(&db.to_be_bytes());
                    bytes.extend_from_slice(key);
                    start..bytes.len()
                }
            };
            spans.push(span);
            prev = Some((db, key));
        }
        let pairs: Vec<(&[u8], &[u8])> = spans
            .into_iter()
            .zip(seeks)
            .map(|(span, &(_, _, element))| (&bytes[span], element))
            .collect();
        self.inner.kv.prefetch_seeks(&pairs);
    }

    /// Reads each key of `names` into the memory tier (`Kv::warm`; a bitmap by
    /// one point read where one entry holds it all, `page::whole_entry`). The
    /// server calls it off its connection workers for a request whose keys
    /// are not resident, then runs the request, so a read from disk holds
    /// up only that client. Takes no key lock: what it loads is the LSM
    /// store's state, installed only if no write to the key finished
    /// meanwhile.
    ///
    /// # Errors
    /// The first `Io` or `Corrupt` of a read (the command then meets it
    /// again, or not, on its own read).
    pub fn warm(&self, names: &[(u16, Vec<u8>)]) -> Result<()> {
        for (db, key) in names {
            self.inner.kv.warm(
                &keys::KeyBuf::meta(*db, key),
                &crate::types::bitmap::page::whole_entry,
            )?;
        }
        Ok(())
    }

    /// The memory tier: budget, policy and counters (`crate::tier`).
    #[must_use]
    pub fn tier(&self) -> &Tier {
        &self.inner.tier
    }

    /// tr-cache hook: sets the container cache budget in bytes (0 turns
    /// the cache off); shrinking evicts at once. See `container_cache`.
    pub fn set_container_cache_bytes(&self, bytes: u64) {
        self.inner.ccache.set_capacity(bytes);
    }

    /// Sets the write-back tier's budget of dirty container bytes (0: no
    /// new edit is taken; dirty keys are written back by the next
    /// checkpoint). See `dirty.rs`.
    pub fn set_write_back_bytes(&self, bytes: u64) {
        self.inner.dirty.set_budget(bytes);
    }

    /// The write-back tier's budget now ([`Store::set_write_back_bytes`]).
    #[must_use]
    pub fn write_back_bytes(&self) -> u64 {
        self.inner.dirty.budget()
    }

    /// The LSM store's first failed write, once there was one (INFO's
    /// `aof_last_write_status`): its journal is the one log, and every
    /// later write fails too (`Kv::write_failure`).
    #[must_use]
    pub fn log_failure(&self) -> Option<String> {
        self.inner.kv.write_failure()
    }

    /// The write-back tier's dirty keys and container bytes now.
    #[must_use]
    pub fn write_back_stats(&self) -> (usize, u64) {
        (self.inner.dirty.len(), self.inner.dirty.bytes())
    }

    /// tr-cache hook: the container cache's counters.
    #[must_use]
    pub fn container_cache_stats(&self) -> container_cache::CacheStats {
        self.inner.ccache.stats()
    }

    /// Starts a transaction over `keys`: takes the shared global lock and
    /// the keys' stripe locks (ascending, deduplicated), blocking until held.
    /// The `Txn` may read any key, but writes only keys it locked (others
    /// are locked on demand, see [`Txn`]).
    #[must_use]
    ///
    /// Dirty bitmap keys among `keys` (the write-back tier) are absorbed
    /// into the `Txn` first: their edits commit with it.
    pub fn begin(&self, keys: &[(u16, &[u8])]) -> Txn {
        let mut t = Txn::new(Arc::clone(&self.inner), self.inner.locks.lock_keys(keys));
        if !self.inner.dirty.is_empty() {
            for &(db, key) in keys {
                t.bm_absorb(&keys::KeyBuf::meta(db, key));
            }
        }
        t
    }

    /// As [`Store::begin`], but dirty keys stay dirty: for commands that
    /// read and write bitmaps through the tier's paths only (TR.SETBIT,
    /// TR.GETBIT: one container, dirty map first; the summary reads and
    /// the keyspace's meta commands: the dirty `meta`), and for a pipeline
    /// group, whose other commands call [`Txn::absorb_key`] for their keys
    /// first. Such a `Txn` must not stream or scan a dirty key it has not
    /// absorbed (debug builds assert it). An edit of a key it has neither
    /// written nor absorbed may be taken by the tier.
    pub fn begin_keep_dirty(&self, keys: &[(u16, &[u8])]) -> Txn {
        let mut t = Txn::new(Arc::clone(&self.inner), self.inner.locks.lock_keys(keys));
        t.bm.keep_dirty();
        t
    }

    /// As [`Store::begin_keep_dirty`], for an EXEC: the write-back
    /// tier's records of this `Txn` go into its commit's batch instead of
    /// the shared log, so that a crash keeps all of the transaction or
    /// none of it (`oplog::OwnRecords`).
    pub fn begin_exec(&self, keys: &[(u16, &[u8])]) -> Txn {
        let mut t = self.begin_keep_dirty(keys);
        t.bm.own_records();
        t
    }

    /// As [`Store::begin`], but `keep`, a TR.BITOP destination, stays
    /// dirty unless it is also among the sources (it appears in `keys`
    /// more than once): `Txn::tr_bitop` may then hand its result to the
    /// write-back tier, which replaces the key's dirty state whole, and
    /// absorbs the key itself when it does not.
    pub fn begin_keeping(&self, keys: &[(u16, &[u8])], keep: (u16, &[u8])) -> Txn {
        let mut t = Txn::new(Arc::clone(&self.inner), self.inner.locks.lock_keys(keys));
        let twice = keys.iter().filter(|&&k| k == keep).count() > 1;
        if !self.inner.dirty.is_empty() {
            for &(db, key) in keys {
                if twice || (db, key) != keep {
                    t.bm_absorb(&keys::KeyBuf::meta(db, key));
                }
            }
        }
        if !twice {
            t.bm.keep_dest(keys::meta_key(keep.0, keep.1));
        }
        t
    }

    /// Starts a transaction that excludes every other one (FLUSHDB,
    /// FLUSHALL, SWAPDB-like operations). Every dirty key is absorbed.
    #[must_use]
    pub fn begin_exclusive(&self) -> Txn {
        let mut t = Txn::new(Arc::clone(&self.inner), self.inner.locks.lock_exclusive());
        for mk in self.inner.dirty.keys() {
            t.bm_absorb(&mk);
        }
        t
    }

    /// Syncs everything committed so far, the operation log's records
    /// included (SAVE, shutdown, `everysec`'s second).
    ///
    /// # Errors
    /// `Io` on failure.
    pub fn persist(&self) -> Result<()> {
        self.inner.persist()
    }

    /// Flushes and fully compacts the store, dropping stale element entries.
    /// Blocks; for tests and admin commands.
    ///
    /// # Errors
    /// `Io` on failure.
    pub fn compact(&self) -> Result<()> {
        self.inner.kv.compact()
    }

    /// Counters and engine sizes for INFO.
    #[must_use]
    pub fn stats(&self) -> StoreStats {
        StoreStats {
            dbs: self.db_stats(),
            kv: self.inner.kv.stats(),
            expired_keys: self.inner.expired.load(Ordering::Relaxed),
            keyspace_hits: self.inner.keyspace_hits.load(Ordering::Relaxed),
            keyspace_misses: self.inner.keyspace_misses.load(Ordering::Relaxed),
        }
    }

    /// The key counts of every database (`stats().dbs`), without the
    /// engine sizes, which take a walk over the in-memory engine.
    #[must_use]
    pub fn db_stats(&self) -> Vec<DbStats> {
        self.inner.counts.lock().clone()
    }

    /// Zeroes the keyspace hit / miss counters (CONFIG RESETSTAT).
    pub fn reset_keyspace_stats(&self) {
        self.inner.keyspace_hits.store(0, Ordering::Relaxed);
        self.inner.keyspace_misses.store(0, Ordering::Relaxed);
    }

    /// A consistent read-only view of the raw spaces (for tests, and for a
    /// future full-sync). See [`Kv::snapshot`].
    #[must_use]
    pub fn snapshot(&self) -> Box<dyn crate::kv::KvRead> {
        self.inner.kv.snapshot()
    }

    /// Raw access to the storage engine (tests, diagnostics).
    #[must_use]
    pub fn kv(&self) -> &dyn Kv {
        &*self.inner.kv
    }

    /// Removes up to `budget` keys whose expire time has passed, oldest
    /// first, reading the expiry index. Returns the removed `(db, key)`s
    /// (so the server can touch their WATCHers). The keys are locked as in
    /// `begin` and removed in one batch.
    ///
    /// # Errors
    /// `Io` / `Corrupt` from the store.
    pub fn active_expire_cycle(&self, budget: usize) -> Result<Vec<(u16, Vec<u8>)>> {
        let now = now_ms();
        let end = (now + 1).to_be_bytes();
        let start = {
            let mut c = self.inner.expiry_cursor.lock();
            c.added_min = u64::MAX;
            c.from
        };
        let start_key = start.to_be_bytes();
        let mut due: Vec<(u64, u16, Vec<u8>)> = Vec::new();
        for entry in self.inner.kv.range(
            Space::Expiry,
            std::ops::Bound::Included(&start_key),
            std::ops::Bound::Excluded(&end),
            false,
        ) {
            if due.len() >= budget {
                break;
            }
            let (k, _) = entry?;
            let (at, db, key) = keys::split_expiry_key(&k)?;
            due.push((at, db, key.to_vec()));
        }
        // Everything before `candidate` has been processed once this
        // cycle's commit succeeds.
        let candidate = if due.len() >= budget {
            due.last().map_or(start, |(at, _, _)| *at)
        } else {
            now + 1
        };
        let advance = |inner: &Inner| {
            let mut c = inner.expiry_cursor.lock();
            c.from = candidate.min(c.added_min);
        };
        if due.is_empty() {
            advance(&self.inner);
            return Ok(Vec::new());
        }
        let refs: Vec<(u16, &[u8])> = due.iter().map(|(_, d, k)| (*d, k.as_slice())).collect();
        let mut txn = self.begin(&refs);
        let mut removed = Vec::new();
        for (at, db, key) in &due {
            if txn.expire_if_due(*at, *db, key)? {
                removed.push((*db, key.clone()));
            }
        }
        txn.commit()?;
        advance(&self.inner);
        Ok(removed)
    }

    /// Allocates a fresh version. `for_data`: the caller may write `data`
    /// entries under it, so it stays in flight until `release_version`.
    pub(crate) fn alloc_version(inner: &Inner, for_data: bool) -> Result<u64> {
        let mut v = inner.versions.lock();
        if v.next >= (v.epoch + 1) << EPOCH_SHIFT {
            // 2^40 versions used in one run: move to the next epoch.
            let epoch = v.epoch + 1;
            let mut batch = WriteBatch::new();
            batch.put(Space::Meta, epoch_key(), epoch.to_be_bytes().to_vec());
            inner.kv.write(batch, Durability::Sync)?;
            v.epoch = epoch;
            v.next = epoch << EPOCH_SHIFT;
        }
        let ver = v.next;
        v.next += 1;
        if for_data {
            *v.inflight.entry(ver).or_insert(0) += 1;
        }
        Ok(ver)
    }

    /// Keeps the data GC off the entries of `ver` (an existing version)
    /// until a matching `release_versions`: a [`crate::key_read::KeyRead`]
    /// reads them from a snapshot after the key may have been deleted.
    pub(crate) fn hold_version(inner: &Inner, ver: u64) {
        *inner.versions.lock().inflight.entry(ver).or_insert(0) += 1;
    }

    /// Ends the in-flight period of versions from `alloc_version(_, true)`
    /// or `hold_version`.
    pub(crate) fn release_versions(inner: &Inner, vers: &[u64]) {
        if vers.is_empty() {
            return;
        }
        let mut v = inner.versions.lock();
        for ver in vers {
            if let Some(c) = v.inflight.get_mut(ver) {
                *c -= 1;
                if *c == 0 {
                    v.inflight.remove(ver);
                }
            }
        }
    }

    pub(crate) fn durability(inner: &Inner) -> Durability {
        if SyncMode::from_u8(inner.sync.load(Ordering::Relaxed)) == SyncMode::Always {
            Durability::Sync
        } else {
            // The persister flushes (everysec: syncs) once a second.
            Durability::Lazy
        }
    }
}

/// Starts the persister: once a second, the `appendfsync` work and the
/// handing back of idle memory; the write-back tier's checkpoints every
/// [`CHECKPOINT_EVERY`], or as soon as the dirty keys or the log ask for
/// one (the log wakes the thread, `OpLog::set_waker`). Returns its
/// handle, or `None` when no thread could be started.
fn spawn_persister(weak: Weak<Inner>) -> Option<std::thread::Thread> {
    let handle = std::thread::Builder::new()
        .name("roaringd-fsync".into())
        .spawn(move || {
            let mut last_checkpoint = Instant::now();
            let mut next_tick = Instant::now() + Duration::from_secs(1);
            loop {
                std::thread::park_timeout(next_tick.saturating_duration_since(Instant::now()));
                let Some(inner) = weak.upgrade() else { return };
                let store = Store { inner };
                let inner = &store.inner;
                let tick = Instant::now() >= next_tick;
                if tick {
                    next_tick = Instant::now() + Duration::from_secs(1);
                    // A failure here surfaces on the next commit (fjall
                    // poisons). `always` commits sync (and so flush)
                    // themselves.
                    match SyncMode::from_u8(inner.sync.load(Ordering::Relaxed)) {
                        SyncMode::EverySec => {
                            let _ = store.persist();
                        }
                        SyncMode::No => {
                            let _ = store.write_to_os();
                        }
                        SyncMode::Always => {}
                    }
                }
                // The write-back tier: dirty keys go to the `Kv` every
                // `CHECKPOINT_EVERY`, or sooner once they take half their
                // budget (past it, edits would take the ordinary path) or
                // their records would take a recovery long to replay; and
                // the log's chunks are released once they pass
                // `oplog::RELEASE_BYTES`, before their memtable is flushed.
                let release = inner
                    .dirty
                    .log
                    .lock()
                    .as_ref()
                    .is_some_and(oplog::OpLog::wants_release);
                if release
                    || (!inner.dirty.is_empty()
                        && (last_checkpoint.elapsed() >= CHECKPOINT_EVERY
                            || inner.dirty.wants_checkpoint()))
                {
                    let _ = store.checkpoint();
                    last_checkpoint = Instant::now();
                }
                if tick {
                    let _ = inner.kv.release_when_idle();
                }
            }
        })
        .ok()?;
    Some(handle.thread().clone())
}

/// Recovery commits its transaction of replayed records after this many
/// records, or once its overlay holds [`REPLAY_ENTRIES`] entries.
const REPLAY_RECORDS: usize = 4096;
/// See [`REPLAY_RECORDS`]: at most ~32 MB of bitset containers.
const REPLAY_ENTRIES: usize = 4096;

/// How often the persister writes the write-back tier's dirty keys back
/// ([`Store::checkpoint`]). Each dirty key costs one LSM write at a
/// checkpoint however many edits it took since the last: over 100,000
/// keys, TR.SETBIT's checkpoints once a second rewrote ~45,000 keys a
/// second and took ~40% of the process's CPU; every 5 s, sustained
/// TR.SETBIT went from 64k to 71-76k QPS. The price is recovery after a
/// crash, which replays the records since the last checkpoint: 6 s after 5
/// s of TR.SETBIT at 80k/s (a clean shutdown checkpoints).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);

#[cfg(test)]
mod format_tests {
    use super::*;

    fn open(dir: &std::path::Path) -> Result<Store> {
        Store::open(StoreConfig {
            dir: Some(dir.to_path_buf()),
            ..StoreConfig::default()
        })
    }

    /// The operation log of an older build (its own files): refused while
    /// it holds records, with the way out; removed when it is empty, as a
    /// clean shutdown leaves it.
    #[test]
    fn an_old_operation_log_is_refused_while_it_holds_records() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(OLD_OPLOG_DIR);
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("oplog-00000000000000000007.log"), b"\x01").unwrap();
        let err = open(dir.path()).err().expect("refused");
        assert!(err.to_string().contains("SHUTDOWN it"), "{err}");
        std::fs::write(old.join("oplog-00000000000000000007.log"), b"").unwrap();
        let st = open(dir.path()).unwrap();
        assert!(!old.exists());
        drop(st);
    }

    /// The store format is recorded at open; a directory of a newer
    /// format is refused with the reason, and nothing is read from it.
    #[test]
    fn a_newer_store_format_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let st = open(dir.path()).unwrap();
        assert_eq!(
            st.inner.kv.get(Space::Meta, &format_key()).unwrap(),
            Some(STORE_FORMAT.to_be_bytes().to_vec())
        );
        let mut batch = WriteBatch::new();
        batch.put(
            Space::Meta,
            format_key(),
            (STORE_FORMAT + 1).to_be_bytes().to_vec(),
        );
        st.inner.kv.write(batch, Durability::Sync).unwrap();
        drop(st);
        let err = open(dir.path()).err().expect("refused");
        assert!(err.to_string().contains("newer than this build"), "{err}");
    }
}
