//! `WriteBehind`: a [`Kv`] in front of the LSM store that takes the
//! engine's write off the committing thread.
//!
//! A commit under `appendfsync everysec` or `no` asks for
//! [`Durability::Lazy`]: its batch may sit in the engine's user-space
//! journal buffer for up to a second anyway. Writing it there costs the
//! committing thread the journal's serialization and one memtable insert
//! per entry, under the engine's journal lock: a skip-list search with a
//! cache miss and a key comparison per level. For 10 TR.SETBITs of new
//! keys in one EXEC that was about half of the server's time. Here such a
//! batch is queued and acknowledged, and one writer thread hands queued
//! batches to the engine in order, on another core.
//!
//! Contracts:
//!
//! - **Order.** Batches reach the engine in the order [`Kv::write`] took
//!   them, one engine batch each (atomic as before).
//! - **Reads see every acknowledged write.** A read of the engine first
//!   waits until the engine holds every queued batch that writes the key
//!   it reads: a point read or a scan within one key waits for that key's
//!   batches (by a slot of its hash, [`SLOTS`]), any other read (a scan of
//!   `meta` or `expiry`, an internal record) for all queued batches. So a
//!   reader never waits for other keys' writes, and the memory tier above,
//!   which takes a batch only after it is queued here, may evict a key
//!   whose write is still queued: a miss on it waits for that write.
//! - **Durability.** `Lazy` returns once queued; `Buffer` and `Sync` wait
//!   until the engine wrote (and synced) the batch; [`Kv::persist`] and
//!   [`Kv::flush_buffers`] queue an empty batch that asks for it, so a
//!   commit may queue `Lazy` under a lock and sync after releasing it. The writer takes what
//!   is queued as a group and writes and syncs it at once (group commit;
//!   the LSM store writes only each key's last write of a group,
//!   [`crate::kv::last_writes`]),
//!   every millisecond or when someone waits for it. [`Kv::flush_buffers`],
//!   [`Kv::persist`], [`Kv::snapshot`] and [`Kv::compact`] first wait for
//!   every batch queued before them. A crash loses the queued batches with
//!   the journal buffer: `everysec` still loses at most about a second of
//!   writes, the queue being bounded ([`QUEUE_BYTES`]) and short.
//! - **Failure.** When the engine refuses a batch (an I/O error), every
//!   later write fails with that error, as the engine's own poisoned
//!   journal would make it: the batches acknowledged after the failed one
//!   are lost, as a crash would lose them. A panic of the engine counts
//!   as such a failure.
//! - **Memory.** Queued batches hold at most [`QUEUE_BYTES`] (or one
//!   batch); a commit past it waits for room.

use crate::error::{Result, StoreError};
use crate::kv::{Durability, Kv, KvIter, KvRead, KvStats, Space, WriteBatch};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Per-key slots (a power of two): the sequence number of the last queued
/// batch that writes a key whose hash picks the slot.
pub const SLOTS: usize = 4096;

/// Bytes of queued batches (keys and values) past which a write waits.
pub const QUEUE_BYTES: usize = 8 << 20;

/// Bytes of queued batches past which a write wakes the napping writer.
const WAKE_BYTES: usize = 1 << 20;

/// How long the writer naps between groups ([`Shared::run`]).
const NAP: std::time::Duration = std::time::Duration::from_millis(1);

/// The write-behind engine. See the module docs.
pub struct WriteBehind {
    inner: Arc<dyn Kv>,
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
}

struct Shared {
    queue: Mutex<Queue>,
    /// The writer waits on it for work.
    work: Condvar,
    /// Signalled (to `waiting` threads) when `applied` moves or room frees.
    done: Condvar,
    /// Threads waiting on `done`.
    waiting: AtomicUsize,
    /// Sequence number of the last queued batch.
    queued: AtomicU64,
    /// Sequence number of the last batch the engine took (or refused).
    applied: AtomicU64,
    slots: Box<[AtomicU64]>,
}

#[derive(Default)]
struct Queue {
    batches: VecDeque<Queued>,
    /// Bytes of the queued batches and of the one the engine is taking.
    bytes: usize,
    /// The engine's first refusal: every later write fails with it.
    failed: Option<String>,
    /// The sequence number of the first batch of the refused group.
    failed_at: u64,
    /// The writer thread sleeps on `work` until notified (it found the
    /// queue empty after a nap); while it naps or writes, a `Lazy` batch
    /// is queued without a wake-up.
    idle: bool,
    /// A group is being written (by the writer thread or by a waiter).
    writing: bool,
    stop: bool,
}

/// A batch waiting for the engine.
struct Queued {
    seq: u64,
    batch: Arc<WriteBatch>,
    durability: Durability,
    /// `batch.bytes()`, counted in [`Queue::bytes`] until the engine took it.
    bytes: usize,
}

/// The slot of the user key `db | key`, given as its two parts (a meta key
/// is `db | key`, a data key `db | len | key | ...`).
fn slot_of(db: &[u8], key: &[u8]) -> usize {
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(db);
    h.write(key);
    // Fx's high bits are its best mixed.
    (h.finish() >> 52) as usize & (SLOTS - 1)
}

/// The user key slot of an entry, or `None` for entries that belong to no
/// user key (internal records, the expiry index): reads of those wait for
/// every queued batch.
fn entry_slot(space: Space, key: &[u8]) -> Option<usize> {
    match space {
        Space::Meta
            if key.len() >= 2 && !key.starts_with(&crate::keys::INTERNAL_DB.to_be_bytes()) =>
        {
            Some(slot_of(&key[..2], &key[2..]))
        }
        Space::Data => {
            let plen = crate::keys::data_key_prefix_len(key)?;
            Some(slot_of(&key[..2], &key[6..plen]))
        }
        _ => None,
    }
}

/// The slot of the one user key a `data` range lies in, if it lies in one.
fn range_slot(space: Space, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Option<usize> {
    if space != Space::Data {
        return None;
    }
    let (Bound::Included(s) | Bound::Excluded(s)) = start else {
        return None;
    };
    let plen = crate::keys::data_key_prefix_len(s)?;
    let prefix = &s[..plen];
    let within = match end {
        Bound::Included(e) | Bound::Excluded(e) if e.starts_with(prefix) => true,
        Bound::Excluded(e) => crate::kv::prefix_end(prefix).as_deref() == Some(e),
        _ => false,
    };
    within.then(|| slot_of(&s[..2], &s[6..plen]))
}

impl WriteBehind {
    /// `inner` behind a queue and its writer thread.
    ///
    /// # Errors
    /// `Io` when the thread cannot be started.
    pub fn new(inner: Box<dyn Kv>) -> Result<Self> {
        let inner: Arc<dyn Kv> = Arc::from(inner);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            done: Condvar::new(),
            waiting: AtomicUsize::new(0),
            queued: AtomicU64::new(0),
            applied: AtomicU64::new(0),
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
        });
        let writer = {
            let inner = Arc::clone(&inner);
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("roaringd-lsm-writer".into())
                .spawn(move || shared.run(&*inner))
                .map_err(|e| StoreError::Io(format!("cannot start the LSM writer: {e}")))?
        };
        Ok(WriteBehind {
            inner,
            shared,
            writer: Some(writer),
        })
    }

    /// Queues `batch`; returns its sequence number.
    fn push(&self, batch: Arc<WriteBatch>, durability: Durability) -> Result<u64> {
        let bytes = batch.bytes();
        let sh = &*self.shared;
        let mut q = sh.queue.lock();
        loop {
            if let Some(e) = &q.failed {
                return Err(failed(e));
            }
            // `bytes` counts a batch until the engine took it.
            if q.bytes == 0 || q.bytes + bytes <= QUEUE_BYTES {
                break;
            }
            sh.waiting.fetch_add(1, Ordering::SeqCst);
            sh.done.wait(&mut q);
            sh.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        let seq = sh.queued.load(Ordering::Relaxed) + 1;
        // Slots before the tier above takes the batch (it does so after
        // this returns): a reader that misses the key there then finds
        // the slot set.
        for (space, key, _) in batch.ops() {
            if let Some(s) = entry_slot(*space, key) {
                sh.slots[s].fetch_max(seq, Ordering::Release);
            }
        }
        sh.queued.store(seq, Ordering::Release);
        q.bytes += bytes;
        q.batches.push_back(Queued {
            seq,
            batch,
            durability,
            bytes,
        });
        // A `Buffer` or `Sync` writer writes the group itself if no one
        // is writing (`wait_applied`): only a sleeping writer thread, or
        // a queue grown past `WAKE_BYTES`, needs a wake-up.
        if q.idle || q.bytes >= WAKE_BYTES {
            q.idle = false;
            sh.work.notify_one();
        }
        Ok(seq)
    }

    /// True when a read of `slot` (or, for `None`, any read) must wait for
    /// queued batches.
    #[cfg(test)]
    fn must_wait(&self, slot: Option<usize>) -> bool {
        let target = self.target(slot);
        self.shared.applied.load(Ordering::Acquire) < target
    }

    fn target(&self, slot: Option<usize>) -> u64 {
        match slot {
            Some(s) => self.shared.slots[s].load(Ordering::Acquire),
            None => self.shared.queued.load(Ordering::Acquire),
        }
    }

    /// Waits until the engine holds the batches a read of `slot` needs.
    fn settle_for(&self, slot: Option<usize>) {
        let target = self.target(slot);
        self.shared.wait_applied(target, &*self.inner);
    }

    /// Waits until the engine took the batch `seq`; its refusal, or that
    /// of one before it, if any.
    fn wait_written(&self, seq: u64) -> Result<()> {
        self.shared.wait_applied(seq, &*self.inner);
        let q = self.shared.queue.lock();
        match &q.failed {
            Some(e) if q.failed_at <= seq => Err(failed(e)),
            _ => Ok(()),
        }
    }

    /// Queues an empty batch of `durability` and waits for it: every
    /// batch before it is then written, and durable so.
    fn write_marker(&self, durability: Durability) -> Result<()> {
        let seq = self.push(Arc::new(WriteBatch::new()), durability)?;
        self.wait_written(seq)
    }

    /// Waits until the engine took every batch queued so far; the
    /// engine's refusal of one of them, if any.
    fn drain(&self) -> Result<()> {
        self.wait_written(self.shared.queued.load(Ordering::Acquire))
    }
}

fn failed(e: &str) -> StoreError {
    StoreError::Io(format!("an earlier write to the LSM store failed: {e}"))
}

impl Shared {
    /// The writer thread: writes the queued batches in groups
    /// ([`Shared::write_group`]) until stopped with an empty queue.
    ///
    /// Between groups it naps for [`NAP`] (or until the queue passes
    /// [`WAKE_BYTES`]), so that a stream of `Lazy` commits costs their
    /// threads no wake-up each and the engine one write per nap; an empty
    /// queue after a nap puts it to sleep until the next batch. A group
    /// someone waits for is written by that thread itself
    /// ([`Shared::wait_applied`]), without a hand-over.
    fn run(&self, inner: &dyn Kv) {
        // The end of the nap after the last group, if any.
        let mut nap_until: Option<Instant> = None;
        let mut q = self.queue.lock();
        loop {
            if q.writing {
                // A waiter writes; it wakes us if batches remain, and so
                // does the next batch.
                q.idle = true;
                self.work.wait(&mut q);
                q.idle = false;
                continue;
            }
            let nap_over =
                q.stop || q.bytes >= WAKE_BYTES || nap_until.is_none_or(|t| Instant::now() >= t);
            if !q.batches.is_empty() && nap_over {
                self.write_group(&mut q, inner);
                nap_until = Some(Instant::now() + NAP);
                continue;
            }
            if q.stop {
                return;
            }
            match nap_until {
                Some(t) if !nap_over => {
                    self.work.wait_until(&mut q, t);
                }
                _ => {
                    // Nothing came during the nap: sleep until a batch
                    // does.
                    nap_until = None;
                    q.idle = true;
                    self.work.wait(&mut q);
                    q.idle = false;
                }
            }
        }
    }

    /// Takes every queued batch as one group and writes it by one
    /// [`Kv::write_group`] (for the LSM store, one journal record: a group
    /// commit), with the strongest durability any of them asked for, so
    /// one sync serves every `appendfsync always` commit that queued
    /// meanwhile. The queue's lock is released while the engine writes;
    /// `applied` moves past the group once that write returned.
    fn write_group(&self, q: &mut MutexGuard<'_, Queue>, inner: &dyn Kv) {
        let group: Vec<Queued> = q.batches.drain(..).collect();
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            return;
        };
        let (first, last) = (first.seq, last.seq);
        let skip = q.failed.is_some();
        q.writing = true;
        let refused = MutexGuard::unlocked(q, || {
            if skip {
                // Past a refusal nothing more is written (the batches
                // after it were acknowledged as a crash's would be: lost).
                return None;
            }
            let strongest = group
                .iter()
                .map(|g| g.durability)
                .max()
                .unwrap_or(Durability::Lazy);
            let batches: Vec<Arc<WriteBatch>> =
                group.iter().map(|g| Arc::clone(&g.batch)).collect();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inner.write_group(&batches, strongest)
            }));
            match r {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("the engine panicked".to_string()),
            }
        });
        q.writing = false;
        q.bytes -= group.iter().map(|g| g.bytes).sum::<usize>();
        if let Some(e) = refused {
            if q.failed.is_none() {
                // The whole group: its sync, if it asked for one, is not
                // known to have happened.
                q.failed = Some(e);
                q.failed_at = first;
            }
        }
        self.applied.store(last, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.done.notify_all();
        }
        if !q.batches.is_empty() || q.stop {
            self.work.notify_one();
        }
    }

    /// Returns once `applied` reaches `target`: writes the queued batches
    /// itself when no one else is writing, else waits for the writer.
    fn wait_applied(&self, target: u64, inner: &dyn Kv) {
        if self.applied.load(Ordering::Acquire) >= target {
            return;
        }
        let mut q = self.queue.lock();
        while self.applied.load(Ordering::SeqCst) < target {
            if !q.writing && !q.batches.is_empty() {
                self.write_group(&mut q, inner);
                continue;
            }
            self.waiting.fetch_add(1, Ordering::SeqCst);
            self.done.wait(&mut q);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for WriteBehind {
    fn drop(&mut self) {
        self.shared.queue.lock().stop = true;
        self.shared.work.notify_one();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

impl KvRead for WriteBehind {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.settle_for(entry_slot(space, key));
        self.inner.get(space, key)
    }

    fn range(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> KvIter<'_> {
        self.settle_for(range_slot(space, start, end));
        self.inner.range(space, start, end, reverse)
    }

    // `range_first` and `range_visit`: the trait's defaults over `range`,
    // as the LSM store's own are.
}

impl Kv for WriteBehind {
    fn write(&self, batch: WriteBatch, durability: Durability) -> Result<()> {
        self.write_shared(&Arc::new(batch), durability)
    }

    fn write_shared(&self, batch: &Arc<WriteBatch>, durability: Durability) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        batch.check_keys()?;
        let seq = self.push(Arc::clone(batch), durability)?;
        if durability == Durability::Lazy {
            return Ok(());
        }
        self.wait_written(seq)
    }

    fn settle(&self) -> Result<()> {
        self.drain()
    }

    fn snapshot(&self) -> Box<dyn KvRead> {
        self.settle_for(None);
        self.inner.snapshot()
    }

    fn persist(&self) -> Result<()> {
        // An empty batch that asks for a sync: it joins the group of the
        // commits queued before it, and their sync serves all of them.
        self.write_marker(Durability::Sync)
    }

    fn write_failure(&self) -> Option<String> {
        self.shared.queue.lock().failed.clone()
    }

    fn flush_buffers(&self) -> Result<()> {
        self.write_marker(Durability::Buffer)
    }

    fn release_when_idle(&self) -> Result<()> {
        self.inner.release_when_idle()
    }

    fn compact(&self) -> Result<()> {
        self.drain()?;
        self.inner.compact()
    }

    fn stats(&self) -> KvStats {
        KvStats {
            queued_bytes: self.shared.queue.lock().bytes as u64,
            ..self.inner.stats()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::mem::MemKv;

    /// A `Kv` whose writes block while its gate is shut, and fail while
    /// `refuse` is set.
    struct Gated {
        kv: MemKv,
        gate: Arc<(parking_lot::Mutex<bool>, Condvar)>,
        refuse: Arc<std::sync::atomic::AtomicBool>,
        /// The durability of each write taken.
        taken: Arc<parking_lot::Mutex<Vec<Durability>>>,
        /// The threads waiting at the gate.
        blocked: Arc<parking_lot::Mutex<Vec<std::thread::ThreadId>>>,
    }

    impl KvRead for Gated {
        fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
            self.kv.get(space, key)
        }
        fn range(
            &self,
            space: Space,
            start: Bound<&[u8]>,
            end: Bound<&[u8]>,
            reverse: bool,
        ) -> KvIter<'_> {
            self.kv.range(space, start, end, reverse)
        }
    }

    impl Kv for Gated {
        fn write(&self, batch: WriteBatch, durability: Durability) -> Result<()> {
            let (open, cv) = &*self.gate;
            let mut o = open.lock();
            let me = std::thread::current().id();
            self.blocked.lock().push(me);
            while !*o {
                cv.wait(&mut o);
            }
            self.blocked.lock().retain(|t| *t != me);
            if self.refuse.load(Ordering::SeqCst) {
                return Err(StoreError::Io("disk full".into()));
            }
            self.taken.lock().push(durability);
            self.kv.write(batch, durability)
        }
        fn snapshot(&self) -> Box<dyn KvRead> {
            self.kv.snapshot()
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

    struct Rig {
        wb: WriteBehind,
        gate: Arc<(parking_lot::Mutex<bool>, Condvar)>,
        refuse: Arc<std::sync::atomic::AtomicBool>,
        taken: Arc<parking_lot::Mutex<Vec<Durability>>>,
        blocked: Arc<parking_lot::Mutex<Vec<std::thread::ThreadId>>>,
    }

    impl Rig {
        fn new() -> Rig {
            let gate = Arc::new((parking_lot::Mutex::new(true), Condvar::new()));
            let refuse = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let taken = Arc::new(parking_lot::Mutex::new(Vec::new()));
            let blocked = Arc::new(parking_lot::Mutex::new(Vec::new()));
            let wb = WriteBehind::new(Box::new(Gated {
                kv: MemKv::new(None),
                gate: Arc::clone(&gate),
                refuse: Arc::clone(&refuse),
                taken: Arc::clone(&taken),
                blocked: Arc::clone(&blocked),
            }))
            .unwrap();
            Rig {
                wb,
                gate,
                refuse,
                taken,
                blocked,
            }
        }

        fn set_gate(&self, open: bool) {
            *self.gate.0.lock() = open;
            self.gate.1.notify_all();
        }
    }

    impl Drop for Rig {
        fn drop(&mut self) {
            // Else a failed test would hang in the writer's join.
            self.set_gate(true);
        }
    }

    fn meta_key(db: u16, key: &[u8]) -> Vec<u8> {
        crate::keys::meta_key(db, key)
    }

    fn put(space: Space, k: &[u8], v: &[u8]) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(space, k.to_vec(), v.to_vec());
        b
    }

    #[test]
    fn a_read_waits_for_its_keys_queued_writes_only() {
        let rig = Rig::new();
        rig.set_gate(false);
        let a = meta_key(0, b"a");
        let b = meta_key(0, b"b");
        let a_data = crate::keys::data_key(0, b"a", 7, b"x");
        let b_data = crate::keys::data_key(0, b"b", 7, b"x");
        rig.wb
            .write(put(Space::Meta, &a, b"1"), Durability::Lazy)
            .unwrap();
        // Key a's meta, its data and a scan within it wait; key b does
        // not (unless it shares a's slot), nor does it see a's write.
        assert!(rig.wb.must_wait(entry_slot(Space::Meta, &a)));
        assert!(rig.wb.must_wait(entry_slot(Space::Data, &a_data)));
        let pa = crate::keys::key_data_prefix(0, b"a");
        let end = crate::kv::prefix_end(&pa).unwrap();
        assert!(rig.wb.must_wait(range_slot(
            Space::Data,
            Bound::Included(&pa),
            Bound::Excluded(&end)
        )));
        assert_ne!(entry_slot(Space::Meta, &a), entry_slot(Space::Meta, &b));
        assert!(!rig.wb.must_wait(entry_slot(Space::Meta, &b)));
        assert!(!rig.wb.must_wait(entry_slot(Space::Data, &b_data)));
        assert_eq!(rig.wb.get(Space::Meta, &b).unwrap(), None);
        // Scans of meta and internal records wait for everything.
        assert!(rig
            .wb
            .must_wait(range_slot(Space::Meta, Bound::Unbounded, Bound::Unbounded)));
        assert!(rig.wb.must_wait(entry_slot(
            Space::Meta,
            &meta_key(crate::keys::INTERNAL_DB, b"counts")
        )));
        // The read of a, from another thread, returns the write once the
        // engine has it.
        std::thread::scope(|s| {
            let r = s.spawn(|| rig.wb.get(Space::Meta, &a).unwrap());
            // The gate opens once the read waits for the writer, or
            // writes the queued group itself (a thread that waits does),
            // or returned early.
            let reader = r.thread().id();
            while rig.wb.shared.waiting.load(Ordering::SeqCst) == 0
                && !rig.blocked.lock().contains(&reader)
                && !r.is_finished()
            {
                std::thread::yield_now();
            }
            rig.set_gate(true);
            assert_eq!(r.join().unwrap(), Some(b"1".to_vec()));
        });
        assert!(!rig.wb.must_wait(None));
    }

    #[test]
    fn batches_reach_the_engine_in_order_and_drop_drains_them() {
        let kv = MemKv::new(None);
        let wb = WriteBehind::new(Box::new(kv.clone())).unwrap();
        let k = meta_key(0, b"k");
        for i in 0..1000u32 {
            wb.write(put(Space::Meta, &k, &i.to_be_bytes()), Durability::Lazy)
                .unwrap();
        }
        drop(wb);
        assert_eq!(
            kv.get(Space::Meta, &k).unwrap(),
            Some(999u32.to_be_bytes().to_vec())
        );
    }

    #[test]
    fn a_refused_batch_fails_every_later_write_and_the_drains() {
        let rig = Rig::new();
        rig.refuse.store(true, Ordering::SeqCst);
        let k = meta_key(0, b"k");
        assert_eq!(rig.wb.write_failure(), None);
        // Acknowledged when queued, refused by the engine.
        rig.wb
            .write(put(Space::Meta, &k, b"1"), Durability::Lazy)
            .unwrap();
        assert!(rig.wb.persist().is_err());
        // INFO's aof_last_write_status reads it.
        assert!(rig
            .wb
            .write_failure()
            .is_some_and(|e| e.contains("disk full")));
        assert!(rig.wb.flush_buffers().is_err());
        rig.refuse.store(false, Ordering::SeqCst);
        let e = rig
            .wb
            .write(put(Space::Meta, &k, b"2"), Durability::Lazy)
            .unwrap_err();
        assert!(e.to_string().contains("disk full"), "{e}");
        assert!(rig
            .wb
            .write(put(Space::Meta, &k, b"3"), Durability::Sync)
            .is_err());
        assert_eq!(rig.wb.get(Space::Meta, &k).unwrap(), None);
    }

    #[test]
    fn a_synced_write_returns_once_the_engine_has_it() {
        let kv = MemKv::new(None);
        let wb = WriteBehind::new(Box::new(kv.clone())).unwrap();
        let k = meta_key(0, b"k");
        wb.write(put(Space::Meta, &k, b"v"), Durability::Sync)
            .unwrap();
        // Read past the queue: the engine itself holds it.
        assert_eq!(kv.get(Space::Meta, &k).unwrap(), Some(b"v".to_vec()));
    }

    #[test]
    fn batches_queued_together_are_synced_once_by_the_last() {
        let rig = Rig::new();
        rig.set_gate(false);
        let k = meta_key(0, b"k");
        // The writer takes this one and waits at the gate.
        rig.wb
            .write(put(Space::Meta, &k, b"1"), Durability::Lazy)
            .unwrap();
        while rig.blocked.lock().is_empty() {
            std::thread::yield_now();
        }
        std::thread::scope(|s| {
            let synced = s.spawn(|| rig.wb.write(put(Space::Meta, &k, b"2"), Durability::Sync));
            while rig.wb.shared.queued.load(Ordering::SeqCst) < 2 {
                std::thread::yield_now();
            }
            rig.wb
                .write(put(Space::Meta, &k, b"3"), Durability::Lazy)
                .unwrap();
            rig.set_gate(true);
            synced.join().unwrap().unwrap();
        });
        rig.wb.settle().unwrap();
        // 2 and 3 went as one group: 2 unsynced, 3 carrying 2's sync.
        assert_eq!(
            *rig.taken.lock(),
            [Durability::Lazy, Durability::Lazy, Durability::Sync]
        );
        assert_eq!(rig.wb.get(Space::Meta, &k).unwrap(), Some(b"3".to_vec()));
    }

    #[test]
    fn a_full_queue_makes_writers_wait_for_room() {
        let rig = Rig::new();
        rig.set_gate(false);
        // One batch past the bound is taken alone.
        let big = vec![0u8; QUEUE_BYTES];
        let k = meta_key(0, b"k");
        rig.wb
            .write(put(Space::Meta, &k, &big), Durability::Lazy)
            .unwrap();
        std::thread::scope(|s| {
            let w = s.spawn(|| {
                rig.wb
                    .write(put(Space::Meta, &k, b"small"), Durability::Lazy)
                    .unwrap();
            });
            // The second write waits while the first is not taken: it is
            // not queued while it waits.
            while rig.wb.shared.waiting.load(Ordering::SeqCst) == 0 && !w.is_finished() {
                std::thread::yield_now();
            }
            assert_eq!(rig.wb.shared.queued.load(Ordering::SeqCst), 1);
            rig.set_gate(true);
            w.join().unwrap();
        });
        assert_eq!(
            rig.wb.get(Space::Meta, &k).unwrap(),
            Some(b"small".to_vec())
        );
    }
}
