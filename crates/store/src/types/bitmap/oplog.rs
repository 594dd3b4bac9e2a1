//! The operation log of the bitmap write-back tier
//! (`docs/architecture.md`, "The write-back tier"): the records of
//! single-bit edits, edits of listed bits, range writes and TR.BITOP
//! results that are acknowledged before their containers reach the LSM
//! store.
//!
//! **One log.** The records are entries of the `log` space, written
//! through the `Kv` like any commit's batch, so the LSM store's journal is
//! the only log the store keeps: a record is ordered, handed to the OS
//! and synced with the commits around it, and a crash keeps a prefix of
//! the journal, never a torn record (the journal checks its batches).
//! Earlier builds kept a log of their own in `<dir>/roaringd-oplog/`,
//! synced beside the journal: two `fsync`s for an `always` commit, and a
//! writer thread, segments and checks of their own.
//!
//! **Chunks.** An append encodes its record into the pending chunk
//! (`len: u32 LE | payload` per record), which is written as one entry,
//! key [`log_key`] (the seq of its last record, u64 BE), once it passes
//! [`CHUNK`] bytes, or by [`OpLog::flush`]: before every sync and every
//! hand-over to the OS (`Store::persist`, `Store::write_to_os`, an
//! `always` commit that appended), so a record is as durable as a commit
//! of the same moment, and an `everysec` crash loses at most the last
//! second's records. A record of its own per edit cost a TR.SETBIT an LSM
//! batch and a memtable insert each: ~2 µs more server CPU and 8% of its
//! QPS under 20 connections.
//!
//! A record's payload is
//! `seq: u64 | db: u16 | version: u64 | kind: u8 | word: u32 | rest`
//! (little-endian). Kind 0 or 1 is a single-bit edit ([`Change::Bit`]:
//! clear or set; `word` is the offset, `rest` the key); kind 2 is a whole
//! value ([`Change::Value`]: `word` is the key's length, `rest` the key
//! and then the containers, see [`encode_blocks`]); kind 3 or 4 is an
//! edit of listed bits ([`Change::Bits`]: clear or set; `word` is the
//! number of offsets, at most [`MAX_BITS`], `rest` the key and then the
//! offsets, `u32` each); kind 5 or 6 is a range write ([`Change::Range`]:
//! set or flip; `word` is the range's first bit, `rest` the key and then
//! its last bit, `u32`).
//!
//! **The floor.** Records below the floor ([`floor_key`], in `meta`)
//! have all been written back. A checkpoint raises it, in one batch with
//! the deletes of the chunks that end below it and of the `wb` entries
//! below it ([`OpLog::release_below`]); that batch follows the absorbs'
//! batches in the journal, so a crash never keeps the raised floor
//! without them. The log asks for a checkpoint once [`RELEASE_BYTES`] of
//! chunks are written since the last ([`OpLog::wants_release`]): a chunk
//! deleted before its memtable is flushed is dropped by the flush, so the
//! chunks of a stream of TR.BITOP results (~20 KB a record on
//! census1881) seldom reach a table, where their flushes and compactions
//! had tripled a pairwise OR's server time. Recovery reads the records
//! from the floor up ([`records`]), one chunk at a time, and the log
//! appends after the last one.

use std::ops::Bound;
use std::sync::Arc;

use crate::error::{Result, StoreError};
use crate::keys::{self, INTERNAL_DB};
use crate::kv::{Durability, Kv, KvRead, Space, WriteBatch};

/// Payload bytes before the key.
const FIXED: usize = 8 + 2 + 8 + 1 + 4;

/// Longest key a record may carry (the store's key limit).
pub const MAX_KEY: usize = 64 * 1024;

/// Longest containers section a value record may carry
/// ([`encode_blocks`]): a TR.BITOP result bigger than this is not the
/// tier's to take.
pub const MAX_VALUE: usize = 1 << 20;

/// The kind byte of a value record.
const KIND_VALUE: u8 = 2;

/// The kind byte of a record clearing listed bits; the next one sets them.
const KIND_CLEAR_BITS: u8 = 3;

/// The kind byte of a record setting a range; the next one flips it.
const KIND_SET_RANGE: u8 = 5;

/// Most offsets one record of listed bits carries ([`Appender::append_bits`]):
/// a longer TR.SETBITS is not the tier's to take.
pub const MAX_BITS: usize = 4096;

/// What a record changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Bit `offset` set (`set`) or cleared, in the record's key version
    /// (a replay skips it when the key now has another version).
    Bit {
        /// The bit.
        offset: u32,
        /// Set (true) or clear.
        set: bool,
    },
    /// The key becomes a bitmap of these containers (a TR.BITOP result),
    /// stored under the record's version: [`encode_blocks`]'s bytes.
    Value(Vec<u8>),
    /// Every bit of `offsets` set (`set`) or cleared, in the record's key
    /// version (TR.SETBITS, TR.CLEARBITS; skipped as [`Change::Bit`] is).
    Bits {
        /// The bits, as the command listed them (at most [`MAX_BITS`]).
        offsets: Vec<u32>,
        /// Set (true) or clear.
        set: bool,
    },
    /// Every bit of `start..=end` set, or flipped (`flip`), in the
    /// record's key version (TR.SETRANGE, TR.FLIPRANGE; skipped as
    /// [`Change::Bit`] is).
    Range {
        /// First bit of the range.
        start: u32,
        /// Last bit of the range (at least `start`).
        end: u32,
        /// Flip (true) or set.
        flip: bool,
    },
}

/// One logged change of key `key` (database `db`, key version `version`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    /// Position in the log: ascending, from 1 (a crash may leave gaps:
    /// a record's batch and a later one of another key may reach the
    /// journal in either order, and the later one alone survive).
    pub seq: u64,
    /// Database index.
    pub db: u16,
    /// The key version the change belongs to.
    pub version: u64,
    /// The user key.
    pub key: Vec<u8>,
    /// The change.
    pub change: Change,
}

/// Appends containers `(block, container bytes)`, as a value record
/// carries them, to `out`: each `block: u16 | len: u32 | bytes`
/// (little-endian).
pub fn encode_blocks<'a>(blocks: impl IntoIterator<Item = (u16, &'a [u8])>, out: &mut Vec<u8>) {
    for (hi, b) in blocks {
        out.extend_from_slice(&hi.to_le_bytes());
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    }
}

/// The containers of [`encode_blocks`]'s bytes, or `None` when they are
/// cut short. The container bytes themselves are not checked here.
#[must_use]
pub fn decode_blocks(mut buf: &[u8]) -> Option<Vec<(u16, &[u8])>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let hi = u16::from_le_bytes(buf.get(..2)?.try_into().ok()?);
        let len = u32::from_le_bytes(buf.get(2..6)?.try_into().ok()?) as usize;
        out.push((hi, buf.get(6..6 + len)?));
        buf = &buf[6 + len..];
    }
    Some(out)
}

/// `log` key of the chunk whose last record is `seq`.
#[must_use]
pub fn log_key(seq: u64) -> Vec<u8> {
    seq.to_be_bytes().to_vec()
}

/// `meta` key of the floor record: the first seq a replay reads (`u64`
/// BE).
#[must_use]
pub fn floor_key() -> Vec<u8> {
    keys::meta_key(INTERNAL_DB, b"logfloor")
}

/// The seq a chunk key names, or `None` for a key of another length.
#[must_use]
pub fn seq_of_key(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.try_into().ok()?))
}

/// Refuses a key longer than [`MAX_KEY`].
fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY {
        return Err(StoreError::corrupt("operation log: key too long"));
    }
    Ok(())
}

/// Appends a record to `out` as a chunk holds it: `len: u32 LE`, then
/// the payload (the fixed part, the key, then the `tail_len` bytes that
/// `tail` appends).
fn encode_into(
    out: &mut Vec<u8>,
    seq: u64,
    (db, version, key): (u16, u64, &[u8]),
    (kind, word): (u8, u32),
    (tail_len, tail): (usize, impl FnOnce(&mut Vec<u8>)),
) {
    let len = FIXED + key.len() + tail_len;
    out.reserve(4 + len);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&db.to_le_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    out.push(kind);
    out.extend_from_slice(&word.to_le_bytes());
    out.extend_from_slice(key);
    let at = out.len();
    tail(out);
    debug_assert_eq!(out.len() - at, tail_len, "the tail's length as announced");
}

/// Decodes a record's payload, or `None` when it is cut short, too long
/// or of an unknown kind.
fn decode(payload: &[u8]) -> Option<Op> {
    if !(FIXED..=FIXED + MAX_KEY + MAX_VALUE + 4 * MAX_BITS).contains(&payload.len()) {
        return None;
    }
    let u64_at = |i: usize| u64::from_le_bytes(payload[i..i + 8].try_into().unwrap());
    let word = u32::from_le_bytes(payload[19..23].try_into().unwrap());
    let rest = &payload[FIXED..];
    let (key, change) = match payload[18] {
        kind @ (0 | 1) if rest.len() <= MAX_KEY => (
            rest,
            Change::Bit {
                offset: word,
                set: kind == 1,
            },
        ),
        kind @ (KIND_CLEAR_BITS | 4) => {
            let n = word as usize;
            if n > MAX_BITS || n * 4 > rest.len() || rest.len() - n * 4 > MAX_KEY {
                return None;
            }
            let (key, offs) = rest.split_at(rest.len() - n * 4);
            let offsets = offs
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect();
            (
                key,
                Change::Bits {
                    offsets,
                    set: kind == 4,
                },
            )
        }
        kind @ (KIND_SET_RANGE | 6) => {
            let at = rest.len().checked_sub(4)?;
            let end = u32::from_le_bytes(rest[at..].try_into().ok()?);
            if at > MAX_KEY || end < word {
                return None;
            }
            let flip = kind == KIND_SET_RANGE + 1;
            (
                &rest[..at],
                Change::Range {
                    start: word,
                    end,
                    flip,
                },
            )
        }
        KIND_VALUE => {
            let klen = word as usize;
            if klen > MAX_KEY || klen > rest.len() || rest.len() - klen > MAX_VALUE {
                return None;
            }
            let value = &rest[klen..];
            decode_blocks(value)?;
            (&rest[..klen], Change::Value(value.to_vec()))
        }
        _ => return None,
    };
    Some(Op {
        seq: u64_at(0),
        db: u16::from_le_bytes([payload[8], payload[9]]),
        version: u64_at(10),
        key: key.to_vec(),
        change,
    })
}

/// The floor recorded in `kv` (1 when none is: records start at 1).
///
/// # Errors
/// `Io`; `Corrupt` for a floor record of the wrong size.
fn read_floor(kv: &dyn KvRead) -> Result<u64> {
    match kv.get(Space::Meta, &floor_key())? {
        None => Ok(1),
        Some(b) => Ok(u64::from_be_bytes(b.as_slice().try_into().map_err(
            |_| StoreError::corrupt("operation log: bad floor record"),
        )?)),
    }
}

/// The records of `kv` from its floor up, in sequence order, read one
/// chunk at a time ([`records`]).
pub struct Records<'a> {
    chunks: crate::kv::KvIter<'a>,
    floor: u64,
    /// The chunk being read, where its next record starts, and the seq
    /// its key names (its last record's).
    chunk: Vec<u8>,
    at: usize,
    last: u64,
    /// The seq the previous record had.
    prev: Option<u64>,
    /// An error was returned: the iteration is over.
    failed: bool,
}

impl Records<'_> {
    fn bad(&self, what: &str) -> StoreError {
        StoreError::corrupt(format!(
            "operation log: {what} in the chunk ending at record {}",
            self.last
        ))
    }

    /// The next record of the chunk being read, if any is left.
    fn next_in_chunk(&mut self) -> Option<Result<Op>> {
        while self.at < self.chunk.len() {
            let Some(head) = self.chunk.get(self.at..self.at + 4) else {
                return Some(Err(self.bad("a cut length")));
            };
            let len = u32::from_le_bytes(head.try_into().expect("4 bytes")) as usize;
            let start = self.at + 4;
            let Some(op) = self.chunk.get(start..start + len).and_then(decode) else {
                return Some(Err(self.bad("a bad record")));
            };
            self.at = start + len;
            let last = self.at == self.chunk.len();
            if self.prev.is_some_and(|p| op.seq <= p) || (last && op.seq != self.last) {
                return Some(Err(self.bad("records out of order")));
            }
            self.prev = Some(op.seq);
            if op.seq >= self.floor {
                return Some(Ok(op));
            }
        }
        None
    }
}

impl Iterator for Records<'_> {
    type Item = Result<Op>;

    fn next(&mut self) -> Option<Result<Op>> {
        let r = self.next_record();
        self.failed |= matches!(r, Some(Err(_)));
        r
    }
}

impl Records<'_> {
    /// [`Iterator::next`], before the fuse.
    fn next_record(&mut self) -> Option<Result<Op>> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(r) = self.next_in_chunk() {
                return Some(r);
            }
            let (k, v) = match self.chunks.next()? {
                Ok(e) => e,
                Err(e) => return Some(Err(e)),
            };
            let Some(last) = seq_of_key(&k) else {
                return Some(Err(StoreError::corrupt("operation log: a bad chunk key")));
            };
            (self.chunk, self.at, self.last, self.prev) = (v, 0, last, None);
            if self.chunk.is_empty() {
                return Some(Err(self.bad("an empty chunk")));
            }
        }
    }
}

/// The records of `kv` from its floor up, in sequence order: the chunks
/// whose last record is at or past the floor, read one at a time (memory
/// holds one chunk, however long the log).
///
/// # Errors
/// `Io`, or `Corrupt` for a bad floor record; each item: `Io`; `Corrupt`
/// for a chunk that does not decode, or whose records are out of order or
/// do not end at the seq its key names.
pub fn records(kv: &dyn KvRead) -> Result<Records<'_>> {
    let floor = read_floor(kv)?;
    let chunks = kv.range(
        Space::Log,
        Bound::Included(&log_key(floor)[..]),
        Bound::Unbounded,
        false,
    );
    Ok(Records {
        chunks,
        floor,
        chunk: Vec::new(),
        at: 0,
        last: 0,
        prev: None,
        failed: false,
    })
}

/// Bytes of pending records past which an append writes them out.
pub const CHUNK: usize = 64 * 1024;

/// Bytes of chunks written since the last release past which the log
/// asks for a checkpoint ([`OpLog::wants_release`]): released early, most
/// chunks are deleted before their memtable is flushed, and the flush
/// drops them instead of writing them to a table.
pub const RELEASE_BYTES: u64 = 16 << 20;

/// Bytes of held value records past which an append writes them out.
const MAX_HELD: usize = 4 << 20;

/// Held value records (of distinct keys) past which an append writes them
/// out: the search for a key's held record stays short.
const MAX_HELD_VALUES: usize = 64;

/// The log, open for appending. See the module docs.
pub struct OpLog {
    kv: Arc<dyn Kv>,
    /// The floor: records below it are written back.
    floor: u64,
    /// Sequence number of the next append.
    next: u64,
    /// Records appended and not written yet (the next chunk's value), the
    /// last of them `pending_last`; value records are held apart.
    pending: Vec<u8>,
    pending_last: u64,
    /// Value records not written yet (each a chunk of its own once
    /// written). A later value of the same key replaces the held one (it
    /// replaces the key whole), so a stream of TR.BITOP results into one
    /// key writes one record per flush, not one per result.
    values: Vec<HeldValue>,
    /// Bytes of `values`' chunks.
    values_bytes: usize,
    /// Keys (last seqs) of the chunks in the `Kv`: those that end below
    /// the floor are deleted by the next release.
    chunks: std::collections::BTreeSet<u64>,
    /// Bytes of chunks written since the last release.
    unreleased: u64,
    /// Woken once `unreleased` passes [`RELEASE_BYTES`] (the store's
    /// persister, which runs the checkpoints).
    waker: Option<std::thread::Thread>,
}

impl OpLog {
    /// The log of `kv`, appending after its last record (or at its
    /// floor).
    ///
    /// # Errors
    /// `Io`; `Corrupt` for a bad floor record or chunk key.
    pub fn open(kv: Arc<dyn Kv>) -> Result<OpLog> {
        let floor = read_floor(&*kv)?;
        let mut chunks = std::collections::BTreeSet::new();
        for e in kv.range(Space::Log, Bound::Unbounded, Bound::Unbounded, false) {
            let (k, _) = e?;
            chunks.insert(
                seq_of_key(&k)
                    .ok_or_else(|| StoreError::corrupt("operation log: a bad chunk key"))?,
            );
        }
        let next = chunks.last().map_or(floor, |&s| floor.max(s + 1));
        Ok(OpLog {
            kv,
            floor,
            next,
            pending: Vec::new(),
            pending_last: 0,
            values: Vec::new(),
            values_bytes: 0,
            chunks,
            unreleased: 0,
            waker: None,
        })
    }

    /// The thread to wake when the chunks written since the last release
    /// pass [`RELEASE_BYTES`].
    pub fn set_waker(&mut self, waker: std::thread::Thread) {
        self.waker = Some(waker);
    }

    /// Sequence number the next append gets.
    #[must_use]
    pub fn next_seq(&self) -> u64 {
        self.next
    }

    /// The floor: records below it are written back.
    #[must_use]
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// True when the chunks written since the last release pass
    /// [`RELEASE_BYTES`]: a checkpoint should release them.
    #[must_use]
    pub fn wants_release(&self) -> bool {
        self.unreleased >= RELEASE_BYTES
    }

    /// Writes the pending records as one chunk (queued for the LSM store
    /// like a commit's batch, `Lazy`): a sync or a hand-over to the OS
    /// that follows takes them with it. Nothing when none is pending.
    ///
    /// # Errors
    /// `Io` when the `Kv` refuses the write (the records are dropped: an
    /// earlier write failed, and every later one fails too).
    pub fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() && self.values.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::with_capacity(1 + self.values.len());
        let bytes = (self.pending.len() + self.values_bytes) as u64;
        let mut written = Vec::with_capacity(1 + self.values.len());
        if !self.pending.is_empty() {
            let chunk = std::mem::take(&mut self.pending);
            batch.put(Space::Log, log_key(self.pending_last), chunk);
            written.push(self.pending_last);
        }
        for v in self.values.drain(..) {
            batch.put(Space::Log, log_key(v.seq), v.encode());
            written.push(v.seq);
        }
        self.values_bytes = 0;
        self.kv.write(batch, Durability::Lazy)?;
        self.written(LogChunks {
            keys: written,
            bytes,
        });
        Ok(())
    }

    /// Notes chunks `c` as written: a later release deletes them, and
    /// their bytes count towards [`OpLog::wants_release`] (waking the
    /// checkpointer once it turns true). For a transaction's own records
    /// ([`OwnRecords::put_into`]) once its commit wrote them, under the
    /// key locks that keep their keys dirty until then.
    pub fn written(&mut self, c: LogChunks) {
        self.chunks.extend(c.keys);
        let before = self.unreleased;
        self.unreleased += c.bytes;
        if before < RELEASE_BYTES && self.unreleased >= RELEASE_BYTES {
            if let Some(w) = &self.waker {
                w.unpark();
            }
        }
    }

    /// Writes a transaction's own records as a batch of their own
    /// (`Lazy`): a transaction dropped without its commit, whose edits
    /// the dirty map already holds, so that the map and the log agree.
    ///
    /// # Errors
    /// `Io` when the `Kv` refuses the write.
    pub fn write_own(&mut self, own: OwnRecords) -> Result<()> {
        if own.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::new();
        let c = own.put_into(&mut batch);
        self.kv.write(batch, Durability::Lazy)?;
        self.written(c);
        Ok(())
    }

    /// Where the next appends go: the shared pending chunk (`own`
    /// `None`), or `own`, the records of one transaction that its commit
    /// writes in its own batch ([`OwnRecords`]). Sequence numbers come
    /// from the log either way. A transaction's first own record writes
    /// the shared pending records out first, so that every earlier record
    /// of its keys is in a chunk whose key is below its own chunk's (its
    /// key locks keep later records of those keys after its commit).
    pub fn to<'a>(&'a mut self, own: Option<&'a mut OwnRecords>) -> Appender<'a> {
        Appender { log: self, own }
    }

    /// Puts into `batch` the floor `seq` (every record below it is
    /// written back: the caller wrote those keys clean in batches before
    /// this one, which the journal keeps in order) and the deletes of the
    /// chunks that end below it, and returns those chunks. Once `batch`
    /// is written the caller calls [`OpLog::released`] with them (the
    /// log's lock may be let go meanwhile: a chunk written then is deleted
    /// by a later release).
    pub fn release_below(&self, seq: u64, batch: &mut WriteBatch) -> Vec<u64> {
        batch.put(Space::Meta, floor_key(), seq.to_be_bytes().to_vec());
        let gone: Vec<u64> = self.chunks.range(..seq).copied().collect();
        for &c in &gone {
            batch.delete(Space::Log, log_key(c));
        }
        gone
    }

    /// Notes that a batch of [`OpLog::release_below`]`(seq, ..)`, which
    /// deleted chunks `gone`, is written.
    pub fn released(&mut self, seq: u64, gone: &[u64]) {
        self.floor = self.floor.max(seq);
        for c in gone {
            self.chunks.remove(c);
        }
        // Held values below the floor are written back: never needed.
        self.values.retain(|v| v.seq >= seq);
        self.values_bytes = self.values.iter().map(|v| v.bytes).sum();
        self.unreleased = 0;
    }
}

/// Appends to an [`OpLog`] ([`OpLog::to`]): to its shared pending
/// chunk, or to one transaction's own records.
pub struct Appender<'a> {
    log: &'a mut OpLog,
    own: Option<&'a mut OwnRecords>,
}

impl Appender<'_> {
    /// Appends the record of `parts` as the log's next seq and returns
    /// it: to the shared pending chunk, written once it passes [`CHUNK`]
    /// bytes, or to the transaction's own records. A transaction's first
    /// own record writes the shared pending records first, so that every
    /// earlier record of its keys precedes its own in the journal (its
    /// key locks keep later ones of those keys after its commit).
    fn append_record(
        &mut self,
        target: (u16, u64, &[u8]),
        kind_word: (u8, u32),
        tail: (usize, impl FnOnce(&mut Vec<u8>)),
    ) -> Result<u64> {
        check_key(target.2)?;
        let log = &mut *self.log;
        let seq = log.next;
        match self.own.as_deref_mut() {
            Some(own) => {
                own.follow_shared(log)?;
                encode_into(&mut own.chunk, seq, target, kind_word, tail);
                own.last = seq;
                log.next += 1;
            }
            None => {
                // The chunk's buffer is sized once for a whole chunk (it
                // is handed to the `Kv` when full), not grown by doublings.
                if log.pending.capacity() == 0 {
                    log.pending.reserve_exact(CHUNK + 4096);
                }
                encode_into(&mut log.pending, seq, target, kind_word, tail);
                log.pending_last = seq;
                log.next += 1;
                if log.pending.len() >= CHUNK {
                    log.flush()?;
                }
            }
        }
        Ok(seq)
    }

    /// Appends a single-bit edit and returns its sequence number.
    ///
    /// # Errors
    /// `Io` when a chunk it completes cannot be written (the `Kv` failed);
    /// `Corrupt` for a key over [`MAX_KEY`] (nothing is appended then).
    pub fn append(
        &mut self,
        db: u16,
        version: u64,
        key: &[u8],
        offset: u32,
        set: bool,
    ) -> Result<u64> {
        self.append_record(
            (db, version, key),
            (u8::from(set), offset),
            (0, |_: &mut Vec<u8>| {}),
        )
    }

    /// Appends an edit of the listed bits (set or cleared) and returns
    /// its sequence number.
    ///
    /// # Errors
    /// As [`Appender::append`]; `Corrupt` too for more than [`MAX_BITS`]
    /// offsets (nothing is appended then).
    pub fn append_bits(
        &mut self,
        db: u16,
        version: u64,
        key: &[u8],
        offsets: &[u32],
        set: bool,
    ) -> Result<u64> {
        if offsets.len() > MAX_BITS {
            return Err(StoreError::corrupt("operation log: too many bits"));
        }
        let tail = |out: &mut Vec<u8>| {
            for o in offsets {
                out.extend_from_slice(&o.to_le_bytes());
            }
        };
        let kind = KIND_CLEAR_BITS + u8::from(set);
        self.append_record(
            (db, version, key),
            (kind, offsets.len() as u32),
            (4 * offsets.len(), tail),
        )
    }

    /// Appends a range write (`start..=end` set, or flipped) and returns
    /// its sequence number.
    ///
    /// # Errors
    /// As [`Appender::append`]; `Corrupt` too when `end < start` (nothing is
    /// appended then).
    pub fn append_range(
        &mut self,
        db: u16,
        version: u64,
        key: &[u8],
        (start, end): (u32, u32),
        flip: bool,
    ) -> Result<u64> {
        if end < start {
            return Err(StoreError::corrupt("operation log: empty range"));
        }
        self.append_record(
            (db, version, key),
            (KIND_SET_RANGE + u8::from(flip), start),
            (4, |out: &mut Vec<u8>| {
                out.extend_from_slice(&end.to_le_bytes())
            }),
        )
    }

    /// Appends a whole value: key `key` becomes, under `version`, the
    /// bitmap of containers `(block, bytes[pad..])`, recorded as
    /// [`encode_blocks`] lays them out. The record is held, its containers
    /// shared (they must not change, as no `Arc<[u8]>` of the store
    /// does), until the next flush encodes it, and a later value of the
    /// same key replaces it: a stream of TR.BITOP results into one key
    /// copies and writes one record per flush, and none on the command
    /// path. Returns its sequence number.
    ///
    /// # Errors
    /// As [`Appender::append`]; `Corrupt` too when the containers take over
    /// [`MAX_VALUE`] bytes so laid out, or `pad` is past a container's
    /// end (nothing is appended then).
    pub fn append_value(
        &mut self,
        db: u16,
        version: u64,
        key: &[u8],
        blocks: Arc<[(u16, Arc<[u8]>)]>,
        pad: usize,
    ) -> Result<u64> {
        check_key(key)?;
        if blocks.iter().any(|(_, b)| b.len() < pad) {
            return Err(StoreError::corrupt(
                "operation log: container shorter than its pad",
            ));
        }
        let body: usize = blocks.iter().map(|(_, b)| 6 + b.len() - pad).sum();
        if body > MAX_VALUE {
            return Err(StoreError::corrupt("operation log: value too long"));
        }
        let log = &mut *self.log;
        let seq = log.next;
        let value = HeldValue {
            db,
            key: key.to_vec(),
            seq,
            version,
            blocks,
            pad,
            bytes: 4 + FIXED + key.len() + body,
        };
        if let Some(own) = self.own.as_deref_mut() {
            own.follow_shared(log)?;
            // Its own entry, after the records before it.
            if !own.chunk.is_empty() {
                let chunk = std::mem::take(&mut own.chunk);
                own.entries.push((own.last, chunk));
            }
            own.entries.push((seq, value.encode()));
            own.last = seq;
            log.next += 1;
            return Ok(seq);
        }
        log.values_bytes += value.bytes;
        match log.values.iter_mut().find(|v| v.db == db && v.key == key) {
            Some(held) => {
                log.values_bytes -= held.bytes;
                *held = value;
            }
            None => log.values.push(value),
        }
        log.next += 1;
        if log.values_bytes >= MAX_HELD || log.values.len() >= MAX_HELD_VALUES {
            log.flush()?;
        }
        Ok(seq)
    }
}

/// The records of one transaction (an EXEC), kept apart from the shared
/// chunk until its commit puts them into its own batch
/// ([`OwnRecords::put_into`]): the journal then keeps all of them with
/// the transaction's other writes, or none. Their sequence numbers are
/// the log's, taken as they are appended, so other records may fall
/// between them; a replay reads the chunks in key order, which keeps
/// each key's records in order (see [`OpLog::to`]).
#[derive(Default)]
pub struct OwnRecords {
    /// Records after the last entry of `entries`, the last one `last`.
    chunk: Vec<u8>,
    last: u64,
    /// Finished entries (key seq, value): a chunk cut before a value
    /// record, and value records, each under its last record's seq.
    entries: Vec<(u64, Vec<u8>)>,
}

/// Chunks a batch holds ([`OwnRecords::put_into`], a flush), for
/// [`OpLog::written`] once the batch is written.
#[must_use]
pub struct LogChunks {
    keys: Vec<u64>,
    bytes: u64,
}

impl OwnRecords {
    /// True when nothing was appended.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.chunk.is_empty() && self.entries.is_empty()
    }

    /// Before the first record: writes `log`'s shared pending records
    /// out (see [`OpLog::to`]).
    fn follow_shared(&self, log: &mut OpLog) -> Result<()> {
        if self.is_empty() {
            log.flush()?;
        }
        Ok(())
    }

    /// Puts the records into `batch`, each entry under the seq of its last
    /// record; hand the result to [`OpLog::written`] once `batch` is
    /// written.
    pub fn put_into(self, batch: &mut WriteBatch) -> LogChunks {
        let mut entries = self.entries;
        if !self.chunk.is_empty() {
            entries.push((self.last, self.chunk));
        }
        let mut c = LogChunks {
            keys: Vec::with_capacity(entries.len()),
            bytes: 0,
        };
        for (seq, v) in entries {
            c.bytes += v.len() as u64;
            c.keys.push(seq);
            batch.put(Space::Log, log_key(seq), v);
        }
        c
    }
}

/// A value record held until the next flush ([`Appender::append_value`]).
struct HeldValue {
    db: u16,
    key: Vec<u8>,
    seq: u64,
    version: u64,
    blocks: Arc<[(u16, Arc<[u8]>)]>,
    pad: usize,
    /// Its chunk's size.
    bytes: usize,
}

impl HeldValue {
    /// The record as a chunk of its own.
    fn encode(&self) -> Vec<u8> {
        let body = self.bytes - 4 - FIXED - self.key.len();
        let mut chunk = Vec::with_capacity(self.bytes);
        encode_into(
            &mut chunk,
            self.seq,
            (self.db, self.version, &self.key),
            (KIND_VALUE, self.key.len() as u32),
            (body, |out: &mut Vec<u8>| {
                encode_blocks(self.blocks.iter().map(|(hi, b)| (*hi, &b[self.pad..])), out);
            }),
        );
        chunk
    }
}

impl Drop for OpLog {
    /// Writes the pending records: a store dropped without a shutdown (the
    /// tests' crash) loses no record its process had appended, as a
    /// process crash loses none it had handed to the OS.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::mem::MemKv;

    /// Record `seq`, drawn from `i`: every seventh a value record, every
    /// fifth (else) one of listed bits, every eleventh (else) a range.
    fn op(seq: u64, i: u32) -> Op {
        let change = if i.is_multiple_of(11) && !i.is_multiple_of(7) {
            Change::Range {
                start: i,
                end: i + i % 3 * 70_000,
                flip: i.is_multiple_of(2),
            }
        } else if i.is_multiple_of(5) && !i.is_multiple_of(7) {
            Change::Bits {
                offsets: (0..i % 9)
                    .map(|j| j.wrapping_mul(2_654_435_761) ^ i)
                    .collect(),
                set: i.is_multiple_of(2),
            }
        } else if i.is_multiple_of(7) {
            let body: Vec<Vec<u8>> = (0..i % 4)
                .map(|b| vec![b as u8; (i % 50) as usize])
                .collect();
            let mut v = Vec::new();
            encode_blocks(
                body.iter().enumerate().map(|(b, c)| (b as u16 * 3, &c[..])),
                &mut v,
            );
            Change::Value(v)
        } else {
            Change::Bit {
                offset: i.wrapping_mul(2_654_435_761),
                set: i.is_multiple_of(2),
            }
        };
        Op {
            seq,
            db: (i % 3) as u16,
            version: u64::from(i) << 20 | 7,
            key: format!("key:{}", i % 5).into_bytes(),
            change,
        }
    }

    /// Record `seq` as [`op`] draws it, a value record made a single-bit
    /// edit (value records are held apart, [`Appender::append_value`]).
    fn edit_op(seq: u64, i: u32) -> Op {
        let mut o = op(seq, i);
        if matches!(o.change, Change::Value(_)) {
            o.change = Change::Bit {
                offset: i,
                set: true,
            };
        }
        o
    }

    /// Appends `o` through the log's own calls; its seq must be `o.seq`.
    fn append(log: &mut OpLog, o: &Op) {
        append_to(&mut log.to(None), o);
    }

    /// Appends `o` through `to`; its seq must be `o.seq`.
    fn append_to(to: &mut Appender<'_>, o: &Op) {
        let seq = match &o.change {
            Change::Bit { offset, set } => to.append(o.db, o.version, &o.key, *offset, *set),
            Change::Bits { offsets, set } => to.append_bits(o.db, o.version, &o.key, offsets, *set),
            Change::Range { start, end, flip } => {
                to.append_range(o.db, o.version, &o.key, (*start, *end), *flip)
            }
            Change::Value(v) => {
                let blocks: Vec<(u16, Arc<[u8]>)> = decode_blocks(v)
                    .unwrap()
                    .into_iter()
                    .map(|(hi, b)| (hi, Arc::from(b)))
                    .collect();
                to.append_value(o.db, o.version, &o.key, blocks.into(), 0)
            }
        };
        assert_eq!(seq.unwrap(), o.seq);
    }

    /// The payload of `o`, as its append writes it.
    fn payload(o: &Op) -> Vec<u8> {
        let kv: Arc<dyn Kv> = Arc::new(MemKv::new(None));
        let mut log = OpLog::open(Arc::clone(&kv)).unwrap();
        log.next = o.seq;
        append(&mut log, o);
        log.flush().unwrap();
        let chunk = kv.get(Space::Log, &log_key(o.seq)).unwrap().unwrap();
        assert_eq!(chunk[..4], ((chunk.len() - 4) as u32).to_le_bytes());
        chunk[4..].to_vec()
    }

    /// A chunk of the given payloads.
    fn chunk_of(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in payloads {
            out.extend_from_slice(&(p.len() as u32).to_le_bytes());
            out.extend_from_slice(p);
        }
        out
    }

    fn all(kv: &dyn Kv) -> Vec<Op> {
        records(kv).unwrap().map(Result::unwrap).collect()
    }

    /// The chunks in the `log` space, by key.
    fn chunk_keys(kv: &dyn Kv) -> Vec<u64> {
        kv.range(Space::Log, Bound::Unbounded, Bound::Unbounded, false)
            .map(|e| seq_of_key(&e.unwrap().0).unwrap())
            .collect()
    }

    /// Writes a release of everything below `seq`.
    fn release(log: &mut OpLog, kv: &dyn Kv, seq: u64) {
        let mut batch = WriteBatch::new();
        let gone = log.release_below(seq, &mut batch);
        kv.write(batch, Durability::Sync).unwrap();
        log.released(seq, &gone);
    }

    /// Records come back in order, each as appended, from the floor up
    /// (a floor inside a chunk skips its records below it); a release
    /// deletes the chunks that end below the floor, and a log opened
    /// again deletes at its first release those an earlier run left. A
    /// log opened again appends after the last record, or at the floor
    /// when none is left above it. Pending records are written as a chunk
    /// by a flush, past [`CHUNK`] bytes, or when the log is dropped; past
    /// [`RELEASE_BYTES`] of chunks the log asks for a release.
    #[test]
    fn records_come_back_from_the_floor_up_and_releases_delete_chunks() {
        let kv: Arc<dyn Kv> = Arc::new(MemKv::new(None));
        let mut log = OpLog::open(Arc::clone(&kv)).unwrap();
        assert_eq!((log.next_seq(), log.floor()), (1, 1));
        let ops: Vec<Op> = (0..60).map(|i| edit_op(i + 1, i as u32)).collect();
        for (i, o) in ops.iter().enumerate() {
            append(&mut log, o);
            if i % 7 == 2 {
                log.flush().unwrap();
            }
        }
        assert_eq!(all(&*kv), ops[..59], "the last record is pending");
        log.flush().unwrap();
        assert_eq!(all(&*kv), ops);
        assert_eq!(chunk_keys(&*kv), [3, 10, 17, 24, 31, 38, 45, 52, 59, 60]);
        release(&mut log, &*kv, 41);
        assert_eq!(log.floor(), 41);
        assert_eq!(
            chunk_keys(&*kv),
            [45, 52, 59, 60],
            "chunks ending below 41 go"
        );
        assert_eq!(all(&*kv), ops[40..]);
        drop(log);
        let mut log = OpLog::open(Arc::clone(&kv)).unwrap();
        assert_eq!((log.next_seq(), log.floor()), (61, 41));
        let o = edit_op(61, 3);
        append(&mut log, &o);
        drop(log);
        assert_eq!(all(&*kv).last(), Some(&o), "written when dropped");
        // A chunk an earlier run left below the floor goes at the next
        // release.
        let mut batch = WriteBatch::new();
        batch.put(
            Space::Log,
            log_key(7),
            chunk_of(&[&payload(&edit_op(7, 1))]),
        );
        kv.write(batch, Durability::Sync).unwrap();
        let mut log = OpLog::open(Arc::clone(&kv)).unwrap();
        assert_eq!(log.next_seq(), 62);
        assert_eq!(all(&*kv).len(), 21, "below the floor: not read");
        release(&mut log, &*kv, 46);
        assert_eq!(chunk_keys(&*kv), [52, 59, 60, 61]);
        // A full chunk is written at once.
        let mut n = 0;
        loop {
            log.to(None).append(0, 1, &[7; 1000], n, true).unwrap();
            n += 1;
            if log.pending.is_empty() {
                break;
            }
        }
        assert_eq!(n as usize, CHUNK.div_ceil(4 + FIXED + 1000));
        assert!(!log.wants_release());
        while !log.wants_release() {
            log.to(None).append(0, 1, &[7; 1000], n, true).unwrap();
            n += 1;
        }
        // Every record released: the next append starts at the floor.
        let next = log.next_seq();
        log.flush().unwrap();
        release(&mut log, &*kv, next);
        assert!(!log.wants_release());
        assert!(chunk_keys(&*kv).is_empty());
        drop(log);
        let log = OpLog::open(Arc::clone(&kv)).unwrap();
        assert_eq!(log.next_seq(), next);
        assert!(all(&*kv).is_empty());
    }

    /// A value record near the size limit round-trips whole.
    #[test]
    fn a_big_value_record_round_trips() {
        let kv: Arc<dyn Kv> = Arc::new(MemKv::new(None));
        let mut log = OpLog::open(Arc::clone(&kv)).unwrap();
        let big: Arc<[u8]> = vec![7u8; MAX_VALUE - 6].into();
        log.to(None)
            .append_value(0, 9, b"k", vec![(3, big)].into(), 0)
            .unwrap();
        log.flush().unwrap();
        let got = all(&*kv);
        let mut want = Vec::new();
        encode_blocks([(3u16, &vec![7u8; MAX_VALUE - 6][..])], &mut want);
        assert_eq!(got[0].change, Change::Value(want));
    }

    /// A transaction's own records take their seqs from the log and stay
    /// apart until its commit puts them into its batch; its first record
    /// writes the shared pending ones out first, and a value record cuts
    /// its chunk. A replay reads the chunks in key order, so each key's
    /// records come in order, with other keys' records between the
    /// transaction's seqs ahead of them; a release deletes the own chunks
    /// once the floor passes them, and an abandoned transaction's records
    /// are written as a batch of their own.
    #[test]
    fn own_records_go_into_their_transactions_batch() {
        let kv: Arc<dyn Kv> = Arc::new(MemKv::new(None));
        let mut log = OpLog::open(Arc::clone(&kv)).unwrap();
        let ops = [
            edit_op(1, 1),
            edit_op(2, 2),
            edit_op(3, 3),
            edit_op(4, 4),
            edit_op(5, 6),
            op(6, 7),
            edit_op(7, 8),
        ];
        assert!(matches!(ops[5].change, Change::Value(_)));
        append(&mut log, &ops[0]);
        append(&mut log, &ops[1]);
        let mut own = OwnRecords::default();
        append_to(&mut log.to(Some(&mut own)), &ops[2]);
        assert_eq!(chunk_keys(&*kv), [2], "the shared records go first");
        append(&mut log, &ops[3]);
        for o in &ops[4..] {
            append_to(&mut log.to(Some(&mut own)), o);
        }
        log.flush().unwrap();
        assert_eq!(chunk_keys(&*kv), [2, 4]);
        let mut batch = WriteBatch::new();
        let chunks = own.put_into(&mut batch);
        kv.write(batch, Durability::Sync).unwrap();
        log.written(chunks);
        assert_eq!(chunk_keys(&*kv), [2, 4, 5, 6, 7]);
        let order = [0, 1, 3, 2, 4, 5, 6];
        assert_eq!(all(&*kv), order.map(|i| ops[i].clone()));
        release(&mut log, &*kv, 6);
        assert_eq!(chunk_keys(&*kv), [6, 7]);
        assert_eq!(all(&*kv), [ops[5].clone(), ops[6].clone()]);
        let mut own = OwnRecords::default();
        let more = edit_op(8, 9);
        append_to(&mut log.to(Some(&mut own)), &more);
        log.write_own(own).unwrap();
        assert_eq!(chunk_keys(&*kv), [6, 7, 8]);
        assert_eq!(all(&*kv).last(), Some(&more));
    }

    /// A value record is held until the next flush and replaced by a
    /// later value of the same key, and written as a chunk of its own:
    /// a replay meets each key's records in their order.
    #[test]
    fn a_later_value_of_a_key_replaces_its_held_one() {
        let kv: Arc<dyn Kv> = Arc::new(MemKv::new(None));
        let mut log = OpLog::open(Arc::clone(&kv)).unwrap();
        let value = |log: &mut OpLog, key: &[u8], byte: u8| {
            let c: Arc<[u8]> = vec![byte; 10].into();
            log.to(None)
                .append_value(0, 5, key, vec![(1, c)].into(), 0)
                .unwrap()
        };
        assert_eq!(value(&mut log, b"k", 1), 1);
        assert_eq!(log.to(None).append(0, 5, b"k", 3, true).unwrap(), 2);
        assert_eq!(value(&mut log, b"k", 2), 3);
        assert_eq!(value(&mut log, b"j", 3), 4);
        assert!(all(&*kv).is_empty(), "held until a flush");
        log.flush().unwrap();
        let got = all(&*kv);
        let seqs: Vec<u64> = got.iter().map(|o| o.seq).collect();
        assert_eq!(seqs, [2, 3, 4]);
        let mut want = Vec::new();
        encode_blocks([(1u16, &[2u8; 10][..])], &mut want);
        assert_eq!(got[1].change, Change::Value(want));
        // A release drops the held values below the floor unwritten.
        value(&mut log, b"k", 4);
        let next = log.next_seq();
        release(&mut log, &*kv, next);
        log.flush().unwrap();
        assert!(all(&*kv).is_empty());
    }

    #[test]
    fn hostile_payloads_and_keys_are_refused() {
        let rechecked = |o: &Op| {
            let p = payload(o);
            assert_eq!(decode(&p), Some(o.clone()));
            p
        };
        let rec = rechecked(&op(1, 1));
        let mut bad_kind = rec.clone();
        bad_kind[18] = 7;
        assert!(decode(&bad_kind).is_none());
        assert!(decode(&rec[..FIXED - 1]).is_none());
        // A record of listed bits whose count overruns it or passes MAX_BITS.
        let b = op(5, 5);
        assert!(matches!(b.change, Change::Bits { .. }));
        let rec = rechecked(&b);
        for n in [rec.len() as u32, MAX_BITS as u32 + 1] {
            let mut bad = rec.clone();
            bad[19..23].copy_from_slice(&n.to_le_bytes());
            assert!(decode(&bad).is_none());
        }
        // A range that ends before it starts.
        let r = op(11, 11);
        assert!(matches!(r.change, Change::Range { .. }));
        let mut backwards = rechecked(&r);
        backwards[19..23].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&backwards).is_none());
        // A value record whose key length or containers overrun it.
        let v = op(7, 7);
        assert!(matches!(v.change, Change::Value(_)));
        let rec = rechecked(&v);
        let mut long_key = rec.clone();
        long_key[19..23].copy_from_slice(&(rec.len() as u32).to_le_bytes());
        assert!(decode(&long_key).is_none());
        let mut long_block = rec.clone();
        let at = FIXED + 5 + 2;
        long_block[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&long_block).is_none());
        assert_eq!(decode_blocks(&[1, 0, 9, 0, 0, 0, 1]), None);
        // A stored chunk with a record that does not decode or is cut
        // short, whose key names another seq than its last record's, whose
        // records go backwards, or that is empty, is `Corrupt`.
        let (p1, p2) = (payload(&op(1, 1)), payload(&op(2, 2)));
        let mut cut = chunk_of(&[&p1]);
        cut.extend_from_slice(&[1, 0]);
        for (k, v) in [
            (log_key(1), chunk_of(&[&bad_kind])),
            (log_key(1), cut),
            (log_key(3), chunk_of(&[&p1, &p2])),
            (log_key(1), chunk_of(&[&p2, &p1])),
            (log_key(1), Vec::new()),
        ] {
            let kv: Arc<dyn Kv> = Arc::new(MemKv::new(None));
            let mut batch = WriteBatch::new();
            batch.put(Space::Log, k, v);
            kv.write(batch, Durability::Sync).unwrap();
            let got: Vec<Result<Op>> = records(&*kv).unwrap().collect();
            assert!(
                matches!(got.last(), Some(Err(StoreError::Corrupt(_)))),
                "{got:?}"
            );
        }
        // What an append refuses, it does not write.
        let kv: Arc<dyn Kv> = Arc::new(MemKv::new(None));
        let mut log = OpLog::open(Arc::clone(&kv)).unwrap();
        assert!(log
            .to(None)
            .append(0, 1, &vec![0; MAX_KEY + 1], 0, true)
            .is_err());
        assert!(log
            .to(None)
            .append_bits(0, 1, b"k", &[0; MAX_BITS + 1], true)
            .is_err());
        assert!(log.to(None).append_range(0, 1, b"k", (5, 4), true).is_err());
        assert!(log
            .to(None)
            .append_value(0, 1, b"k", vec![(0, vec![0; MAX_VALUE].into())].into(), 0)
            .is_err());
        assert!(log
            .to(None)
            .append_value(0, 1, b"k", vec![(0, vec![0; 3].into())].into(), 4)
            .is_err());
        assert_eq!(log.next_seq(), 1);
        assert!(all(&*kv).is_empty());
    }

    /// A chunk key is its seq, eight bytes; another length is no seq.
    #[test]
    fn only_chunk_keys_have_a_seq() {
        assert_eq!(seq_of_key(&log_key(77)), Some(77));
        assert_eq!(seq_of_key(&floor_key()), None);
        assert_eq!(seq_of_key(&[0; 7]), None);
    }
}
