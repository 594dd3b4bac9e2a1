//! The operation log of the bitmap write-back tier
//! (`docs/architecture.md`, "The write-back tier"): an append-only record of single-bit
//! edits, edits of listed bits, range writes and TR.BITOP results that are acknowledged before their
//! containers reach the LSM store.
//!
//! Layout: a directory of segments named `oplog-<first seq, 20 digits>.log`.
//! A segment is a sequence of records, each framed as
//! `len: u32 LE | check: u32 LE | payload (len bytes)`, where `check` is the
//! low half of the payload's XXH3-64 and the payload is
//! `seq: u64 | db: u16 | version: u64 | kind: u8 | word: u32 | rest`
//! (little-endian). Kind 0 or 1 is a single-bit edit ([`Change::Bit`]:
//! clear or set; `word` is the offset, `rest` the key); kind 2 is a whole
//! value ([`Change::Value`]: `word` is the key's length, `rest` the key
//! and then the containers, see [`encode_blocks`]); kind 3 or 4 is an
//! edit of listed bits ([`Change::Bits`]: clear or set; `word` is the
//! number of offsets, at most [`MAX_BITS`], `rest` the key and then the
//! offsets, `u32` each); kind 5 or 6 is a range write ([`Change::Range`]:
//! set or flip; `word` is the range's first bit, `rest` the key and then
//! its last bit, `u32`). Sequence numbers are
//! contiguous across segments, so a segment's name says which records it
//! holds.
//!
//! Recovery ([`OpLog::replay`]) reads every segment in order, one record
//! at a time (memory holds one record, however long the log). A record
//! that is cut short or fails its check ends the replay when it is in the
//! last segment (a write torn by a crash: the tail from there is cut off
//! and appends continue at that point); anywhere else it is `Corrupt`.
//!
//! Durability is the caller's: [`OpLog::append`] and
//! [`OpLog::append_value`] only queue a record (a value record keeps its
//! containers shared with the dirty map, and its check is computed when it
//! is written); [`OpLog::flush`] writes the queue and hands it to the OS
//! (enough for a process crash), and [`OpLog::sync`] makes it durable
//! (power loss). A writer thread ([`OpLog::take_for_writer`]) writes the
//! queue off the command path, a few milliseconds after a value record
//! or 64 KiB of edits is queued (the persister's flush each second takes
//! the rest), so a command that appends neither hashes nor copies its record;
//! past [`MAX_PENDING`] bytes an append writes the queue itself. Records
//! are written in sequence order whoever writes them (the queue is taken
//! under the log's lock, the segment's own lock before that one is let go).
//! A failed write or sync poisons the log: every later append, flush and
//! sync fails ([`OpLog::failure_flag`]); the store then turns the tier
//! off.
//! Segments whose records have all been written back are removed by
//! [`OpLog::release_below`].

use std::fs::{File, OpenOptions};
use std::hash::Hasher as _;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::thread::Thread;

use parking_lot::lock_api::ArcMutexGuard;
use parking_lot::{Mutex, RawMutex};

use crate::error::{Result, StoreError};

/// Payload bytes before the key.
const FIXED: usize = 8 + 2 + 8 + 1 + 4;

/// Longest key a record may carry (the store's key limit).
pub const MAX_KEY: usize = 64 * 1024;

/// Longest containers section a value record may carry
/// ([`encode_blocks`]): a TR.BITOP result bigger than this is not the
/// tier's to take.
pub const MAX_VALUE: usize = 1 << 20;

/// Buffer size of the appending writer.
const BUFFER: usize = 64 * 1024;

/// Queued bytes past which an append writes the queue itself (the writer
/// thread has fallen behind): the bound on the queue's memory.
pub const MAX_PENDING: usize = 8 << 20;

/// The kind byte of a value record.
const KIND_VALUE: u8 = 2;

/// The kind byte of a record clearing listed bits; the next one sets them.
const KIND_CLEAR_BITS: u8 = 3;

/// The kind byte of a record setting a range; the next one flips it.
const KIND_SET_RANGE: u8 = 5;

/// Most offsets one record of listed bits carries ([`OpLog::append_bits`]):
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
    /// Position in the log: contiguous, from 1.
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

/// A queued record, not written yet.
enum Item {
    /// Whole records, framed and checked (single-bit edits).
    Records(Vec<u8>),
    /// A value record: its frame, fixed part and key (the check not set
    /// yet), then the containers `bytes[pad..]` of `blocks`.
    Value {
        head: Vec<u8>,
        blocks: Arc<[(u16, Arc<[u8]>)]>,
        pad: usize,
    },
}

/// The segment being appended to.
struct Sink {
    out: BufWriter<File>,
}

/// The log, open for appending. See the module docs.
pub struct OpLog {
    dir: PathBuf,
    /// The segment, locked by whoever writes the queue (after the log).
    sink: Arc<Mutex<Sink>>,
    /// The first write or sync failure (see [`OpLog::failure_flag`]).
    failed: Arc<OnceLock<String>>,
    /// Records appended and not written yet, in sequence order.
    queue: Vec<Item>,
    /// Bytes of `queue`'s records.
    queued: usize,
    /// The writer thread, woken by a value record or [`BUFFER`] bytes of
    /// edits queued since it last took the queue.
    writer: Option<Thread>,
    /// A wake-up was sent since the writer last took the queue.
    woken: bool,
    /// First sequence numbers of the segments on disk, ascending; the
    /// last one is the segment being appended to.
    segments: Vec<u64>,
    /// Sequence number of the next append.
    next: u64,
    /// Encoding buffer of `append`.
    scratch: Vec<u8>,
}

/// Queued records taken for writing, with the segment's lock: written in
/// order by [`Batch::write`], outside the log's lock.
pub struct Batch {
    items: Vec<Item>,
    sink: ArcMutexGuard<RawMutex, Sink>,
    failed: Arc<OnceLock<String>>,
}

impl Batch {
    /// Writes the records and hands them to the OS. A failure poisons
    /// the log (a record may then be torn: the next open cuts it off).
    ///
    /// # Errors
    /// `Io`.
    pub fn write(mut self) -> Result<()> {
        self.write_out().map(|_| ())
    }

    /// [`Batch::write`], then the segment's lock, still held.
    fn write_out(&mut self) -> Result<&mut Sink> {
        if let Some(e) = self.failed.get() {
            return Err(poisoned(e));
        }
        let out = &mut self.sink.out;
        let mut write = || -> std::io::Result<()> {
            for item in &mut self.items {
                match item {
                    Item::Records(b) => out.write_all(b)?,
                    Item::Value { head, blocks, pad } => {
                        // The check covers the head after its frame, and
                        // every block's framing and bytes, in record order.
                        let mut h = twox_hash::XxHash3_64::new();
                        h.write(&head[8..]);
                        for (hi, b) in blocks.iter() {
                            h.write(&block_frame(*hi, &b[*pad..]));
                            h.write(&b[*pad..]);
                        }
                        head[4..8].copy_from_slice(&(h.finish() as u32).to_le_bytes());
                        out.write_all(head)?;
                        for (hi, b) in blocks.iter() {
                            out.write_all(&block_frame(*hi, &b[*pad..]))?;
                            out.write_all(&b[*pad..])?;
                        }
                    }
                }
            }
            out.flush()
        };
        match write() {
            Ok(()) => Ok(&mut self.sink),
            Err(e) => Err(fail(&self.failed, "write", e)),
        }
    }

    /// [`Batch::write`], then syncs the segment.
    fn write_and_sync(&mut self) -> Result<&mut Sink> {
        let failed = Arc::clone(&self.failed);
        let sink = self.write_out()?;
        match sink.out.get_ref().sync_data() {
            Ok(()) => Ok(sink),
            Err(e) => Err(fail(&failed, "sync", e)),
        }
    }
}

/// The framing of a value record's container: `block: u16 | len: u32`.
fn block_frame(hi: u16, b: &[u8]) -> [u8; 6] {
    let mut f = [0u8; 6];
    f[..2].copy_from_slice(&hi.to_le_bytes());
    f[2..].copy_from_slice(&(b.len() as u32).to_le_bytes());
    f
}

/// Records the log's first failure and returns it as an error.
fn fail(failed: &OnceLock<String>, what: &str, e: std::io::Error) -> StoreError {
    let _ = failed.set(format!("{what}: {e}"));
    io(what, e)
}

fn poisoned(e: &str) -> StoreError {
    StoreError::Io(format!(
        "operation log: refused after an earlier failure ({e})"
    ))
}

fn io(what: &str, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("operation log: {what}: {e}"))
}

fn segment_name(first: u64) -> String {
    format!("oplog-{first:020}.log")
}

/// A record's check: the low 32 bits of the payload's XXH3-64 (seed 0).
/// `twox-hash` picks its AVX2 or SSE2 kernel at run time; the digest is
/// the algorithm's, so logs written with another implementation read the
/// same (`checks_match_the_reference_xxh3`).
fn check_of(payload: &[u8]) -> u32 {
    twox_hash::XxHash3_64::oneshot(payload) as u32
}

/// Frames a record's head: `(kind, word)` as the module docs say, then
/// the key, checked. A value record's containers follow it
/// ([`OpLog::append_value`] extends the frame's length and check).
fn encode_parts(
    seq: u64,
    (db, version, key): (u16, u64, &[u8]),
    (kind, word): (u8, u32),
    out: &mut Vec<u8>,
) {
    let len = FIXED + key.len();
    out.reserve(8 + len);
    let start = out.len();
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&db.to_le_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    out.push(kind);
    out.extend_from_slice(&word.to_le_bytes());
    out.extend_from_slice(key);
    let check = check_of(&out[start + 8..]);
    out[start + 4..start + 8].copy_from_slice(&check.to_le_bytes());
}

/// Decodes the record at the start of `buf`: the op and the bytes it
/// takes, or `None` when it is cut short, too long or fails its check.
fn decode(buf: &[u8]) -> Option<(Op, usize)> {
    let head: [u8; 8] = buf.get(..8)?.try_into().ok()?;
    let len = u32::from_le_bytes(head[..4].try_into().ok()?) as usize;
    if !(FIXED..=FIXED + MAX_KEY + MAX_VALUE).contains(&len) {
        return None;
    }
    let payload = buf.get(8..8 + len)?;
    if check_of(payload) != u32::from_le_bytes(head[4..].try_into().ok()?) {
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
            if klen > MAX_KEY || klen > rest.len() {
                return None;
            }
            let value = &rest[klen..];
            decode_blocks(value)?;
            (&rest[..klen], Change::Value(value.to_vec()))
        }
        _ => return None,
    };
    let op = Op {
        seq: u64_at(0),
        db: u16::from_le_bytes([payload[8], payload[9]]),
        version: u64_at(10),
        key: key.to_vec(),
        change,
    };
    Some((op, 8 + len))
}

/// The segments in `dir`, by first sequence number, ascending.
fn list_segments(dir: &Path) -> Result<Vec<u64>> {
    let mut firsts = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io("list", e))? {
        let name = entry.map_err(|e| io("list", e))?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(n) = name
            .strip_prefix("oplog-")
            .and_then(|r| r.strip_suffix(".log"))
        {
            match n.parse::<u64>() {
                Ok(first) if first > 0 => firsts.push(first),
                _ => {
                    return Err(StoreError::corrupt(format!(
                        "operation log: odd file {name}"
                    )))
                }
            }
        }
    }
    firsts.sort_unstable();
    Ok(firsts)
}

/// The records of a log being opened ([`OpLog::replay`]), read one at a
/// time: memory holds one record (at most [`MAX_KEY`] + [`MAX_VALUE`]
/// bytes and the framing), however long the log. Then the log itself,
/// for appends ([`Replay::into_log`]).
pub struct Replay {
    dir: PathBuf,
    segments: Vec<u64>,
    /// Index in `segments` of the segment being read (or next to read).
    i: usize,
    /// The segment being read, its path, and the bytes of its records
    /// read so far.
    file: Option<(BufReader<File>, PathBuf, u64)>,
    /// Sequence number the next record must have.
    next: u64,
    /// The record being read: frame and payload.
    buf: Vec<u8>,
}

/// Reads into `buf` until it is full or the input ends; returns the bytes
/// read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl Replay {
    /// The next record, in sequence order; `None` after the last one, by
    /// which time a torn tail of the last segment has been cut off.
    ///
    /// # Errors
    /// `Io`; `Corrupt` for a bad record before the last segment or a gap
    /// in the sequence numbers.
    pub fn next_op(&mut self) -> Result<Option<Op>> {
        loop {
            let Some((reader, path, at)) = self.file.as_mut() else {
                let Some(&first) = self.segments.get(self.i) else {
                    return Ok(None);
                };
                if first != self.next {
                    return Err(StoreError::corrupt(format!(
                        "operation log: segment {first} follows record {}",
                        self.next - 1
                    )));
                }
                let path = self.dir.join(segment_name(first));
                let f = File::open(&path).map_err(|e| io("read", e))?;
                self.file = Some((BufReader::with_capacity(BUFFER, f), path, 0));
                continue;
            };
            self.buf.resize(8, 0);
            let got = read_full(reader, &mut self.buf).map_err(|e| io("read", e))?;
            if got == 0 {
                // The segment ends after a whole record.
                self.file = None;
                self.i += 1;
                continue;
            }
            let len = u32::from_le_bytes(self.buf[..4].try_into().expect("8 bytes")) as usize;
            let mut whole = got == 8 && (FIXED..=FIXED + MAX_KEY + MAX_VALUE).contains(&len);
            if whole {
                self.buf.resize(8 + len, 0);
                whole = read_full(reader, &mut self.buf[8..]).map_err(|e| io("read", e))? == len;
            }
            let record = if whole { decode(&self.buf) } else { None };
            match record {
                Some((op, used)) if op.seq == self.next => {
                    self.next += 1;
                    *at += used as u64;
                    return Ok(Some(op));
                }
                _ if self.i + 1 == self.segments.len() => {
                    // The torn tail: appends continue where it starts.
                    let f = OpenOptions::new()
                        .write(true)
                        .open(&*path)
                        .map_err(|e| io("open", e))?;
                    f.set_len(*at).map_err(|e| io("truncate", e))?;
                    f.sync_all().map_err(|e| io("sync", e))?;
                    self.file = None;
                    self.i += 1;
                    return Ok(None);
                }
                _ => {
                    return Err(StoreError::corrupt(format!(
                        "operation log: bad record at byte {at} of {}",
                        path.display()
                    )))
                }
            }
        }
    }

    /// The log, open for appends after its last record (the records not
    /// read yet are read and dropped first).
    ///
    /// # Errors
    /// As [`Replay::next_op`]; `Io` when the last segment cannot be
    /// opened.
    pub fn into_log(mut self) -> Result<OpLog> {
        while self.next_op()?.is_some() {}
        if self.segments.is_empty() {
            self.segments.push(self.next);
        }
        let last = *self.segments.last().expect("one segment at least");
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(segment_name(last)))
            .map_err(|e| io("open", e))?;
        Ok(OpLog {
            dir: self.dir,
            sink: Arc::new(Mutex::new(Sink {
                out: BufWriter::with_capacity(BUFFER, file),
            })),
            failed: Arc::new(OnceLock::new()),
            queue: Vec::new(),
            queued: 0,
            writer: None,
            woken: false,
            segments: self.segments,
            next: self.next,
            scratch: Vec::new(),
        })
    }
}

impl OpLog {
    /// Opens (creating) the log in `dir` for replay: its records are read
    /// one at a time from the [`Replay`], which then gives the log.
    ///
    /// # Errors
    /// `Io`; `Corrupt` for a file name it does not understand.
    pub fn replay(dir: &Path) -> Result<Replay> {
        std::fs::create_dir_all(dir).map_err(|e| io("create", e))?;
        let segments = list_segments(dir)?;
        let next = segments.first().copied().unwrap_or(1);
        Ok(Replay {
            dir: dir.to_path_buf(),
            segments,
            i: 0,
            file: None,
            next,
            buf: Vec::new(),
        })
    }

    /// [`OpLog::replay`], with every record collected.
    ///
    /// # Errors
    /// As [`Replay::next_op`].
    #[cfg(test)]
    pub fn open(dir: &Path) -> Result<(OpLog, Vec<Op>)> {
        let mut r = Self::replay(dir)?;
        let mut ops = Vec::new();
        while let Some(op) = r.next_op()? {
            ops.push(op);
        }
        Ok((r.into_log()?, ops))
    }

    /// Test hook: the segment's writes fail from here on (its file is
    /// reopened read-only), as on a full or failing disk.
    #[cfg(test)]
    pub(crate) fn break_writes(&mut self) {
        let last = *self.segments.last().expect("a segment");
        let file = File::open(self.dir.join(segment_name(last))).unwrap();
        self.sink.lock().out = BufWriter::with_capacity(BUFFER, file);
    }

    /// Sequence number the next append gets.
    #[must_use]
    pub fn next_seq(&self) -> u64 {
        self.next
    }

    /// First sequence numbers of the segments on disk, ascending.
    #[must_use]
    pub fn segments(&self) -> &[u64] {
        &self.segments
    }

    /// The writer thread to wake when a value record or 64 KiB of edits
    /// are queued (it then calls [`OpLog::take_for_writer`]). Without one,
    /// the queue is written by [`OpLog::flush`], [`OpLog::sync`] and by
    /// appends once 8 MiB are pending.
    pub fn set_writer(&mut self, writer: Thread) {
        self.writer = Some(writer);
    }

    /// The log's first write or sync failure, once there was one (from
    /// then on every append, flush and sync fails), read without the
    /// log's lock.
    #[must_use]
    pub fn failure_flag(&self) -> Arc<OnceLock<String>> {
        Arc::clone(&self.failed)
    }

    /// Takes the queue for writing, with the segment's lock (waiting for
    /// a write in progress): the records are written in order, by
    /// [`Batch::write`], once this log's lock is let go.
    fn take(&mut self) -> Batch {
        let sink = self.sink.lock_arc();
        self.queued = 0;
        self.woken = false;
        Batch {
            items: std::mem::take(&mut self.queue),
            sink,
            failed: Arc::clone(&self.failed),
        }
    }

    /// The writer thread's turn: the queue to write, or `None` when it is
    /// empty or the log has failed.
    pub fn take_for_writer(&mut self) -> Option<Batch> {
        self.woken = false;
        if self.queue.is_empty() || self.failed.get().is_some() {
            return None;
        }
        Some(self.take())
    }

    /// Before an append: fails once the log has; writes the queue when
    /// it holds [`MAX_PENDING`] bytes or more.
    fn make_room(&mut self) -> Result<()> {
        if let Some(e) = self.failed.get() {
            return Err(poisoned(e));
        }
        if self.queued >= MAX_PENDING {
            self.take().write()?;
        }
        Ok(())
    }

    /// After an append: counts its bytes and wakes the writer for a value
    /// record, or once single-bit edits fill [`BUFFER`] (as often as the
    /// buffered writer of earlier builds wrote them: a wake-up per edit
    /// would cost TR.SETBIT more than the write it moves).
    fn queued(&mut self, bytes: usize, value: bool) {
        self.queued += bytes;
        self.next += 1;
        if !self.woken && (value || self.queued >= BUFFER) {
            if let Some(w) = &self.writer {
                self.woken = true;
                w.unpark();
            }
        }
    }

    /// Queues an edit and returns its sequence number.
    ///
    /// # Errors
    /// `Io` when the log has failed or the full queue could not be
    /// written; `Corrupt` for a key over [`MAX_KEY`] (nothing is appended
    /// then).
    pub fn append(
        &mut self,
        db: u16,
        version: u64,
        key: &[u8],
        offset: u32,
        set: bool,
    ) -> Result<u64> {
        self.make_room()?;
        let seq = self.start_record((db, version, key), (u8::from(set), offset))?;
        let n = self.scratch.len();
        match self.queue.last_mut() {
            Some(Item::Records(b)) => b.extend_from_slice(&self.scratch),
            _ => self.queue.push(Item::Records(self.scratch.clone())),
        }
        self.queued(n, false);
        Ok(seq)
    }

    /// Queues an edit of the listed bits (set or cleared) and returns its
    /// sequence number.
    ///
    /// # Errors
    /// As [`OpLog::append`]; `Corrupt` too for more than [`MAX_BITS`]
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
        let tail: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
        let kind = KIND_CLEAR_BITS + u8::from(set);
        self.append_with((db, version, key), (kind, offsets.len() as u32), &tail)
    }

    /// Queues a range write (`start..=end` set, or flipped) and returns
    /// its sequence number.
    ///
    /// # Errors
    /// As [`OpLog::append`]; `Corrupt` too when `end < start` (nothing is
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
        self.append_with(
            (db, version, key),
            (KIND_SET_RANGE + u8::from(flip), start),
            &end.to_le_bytes(),
        )
    }

    /// Queues a record of kind `kind` whose `rest` is the key then
    /// `tail`, and returns its sequence number.
    fn append_with(
        &mut self,
        (db, version, key): (u16, u64, &[u8]),
        (kind, word): (u8, u32),
        tail: &[u8],
    ) -> Result<u64> {
        self.make_room()?;
        let seq = self.start_record((db, version, key), (kind, word))?;
        // The tail follows the key: frame and check again.
        let r = &mut self.scratch;
        r.extend_from_slice(tail);
        let len = (r.len() - 8) as u32;
        r[..4].copy_from_slice(&len.to_le_bytes());
        let check = check_of(&r[8..]);
        r[4..8].copy_from_slice(&check.to_le_bytes());
        let n = r.len();
        match self.queue.last_mut() {
            Some(Item::Records(b)) => b.extend_from_slice(&self.scratch),
            _ => self.queue.push(Item::Records(self.scratch.clone())),
        }
        self.queued(n, false);
        Ok(seq)
    }

    /// Frames the next record's fixed part and key into `scratch` (its
    /// check covering those alone) and returns its sequence number.
    ///
    /// # Errors
    /// `Corrupt` for a key over [`MAX_KEY`].
    fn start_record(
        &mut self,
        (db, version, key): (u16, u64, &[u8]),
        (kind, word): (u8, u32),
    ) -> Result<u64> {
        if key.len() > MAX_KEY {
            return Err(StoreError::corrupt("operation log: key too long"));
        }
        self.scratch.clear();
        encode_parts(
            self.next,
            (db, version, key),
            (kind, word),
            &mut self.scratch,
        );
        Ok(self.next)
    }

    /// Queues a whole value: key `key` becomes, under `version`, the
    /// bitmap of containers `(block, bytes[pad..])`, recorded as
    /// [`encode_blocks`] lays them out. The containers stay shared until
    /// written (no copy now; they must not change, as no `Arc<[u8]>` of
    /// the store does). Returns its sequence number.
    ///
    /// # Errors
    /// As [`OpLog::append`]; `Corrupt` too when the containers take over
    /// [`MAX_VALUE`] bytes so laid out, or `pad` is past a container's
    /// end (nothing is appended then).
    pub fn append_value(
        &mut self,
        db: u16,
        version: u64,
        key: &[u8],
        blocks: impl Into<Arc<[(u16, Arc<[u8]>)]>>,
        pad: usize,
    ) -> Result<u64> {
        let blocks = blocks.into();
        if blocks.iter().any(|(_, b)| b.len() < pad) {
            return Err(StoreError::corrupt(
                "operation log: container shorter than its pad",
            ));
        }
        let body: usize = blocks.iter().map(|(_, b)| 6 + b.len() - pad).sum();
        if body > MAX_VALUE {
            return Err(StoreError::corrupt("operation log: value too long"));
        }
        self.make_room()?;
        let seq = self.start_record((db, version, key), (KIND_VALUE, key.len() as u32))?;
        let mut head = self.scratch.clone();
        let len = head.len() - 8 + body;
        head[..4].copy_from_slice(&(len as u32).to_le_bytes());
        self.queue.push(Item::Value { head, blocks, pad });
        self.queued(8 + len, true);
        Ok(seq)
    }

    /// Writes every queued record and hands them to the OS (survives a
    /// process crash).
    ///
    /// # Errors
    /// `Io`, and once the log has failed.
    pub fn flush(&mut self) -> Result<()> {
        self.take().write()
    }

    /// Writes every queued record, hands them to the OS and returns a
    /// handle on the current segment: its `sync_data` makes them durable
    /// without holding the log. A sync of a second's TR.BITOP results can
    /// take long, and appends wait for the log's lock meanwhile.
    ///
    /// # Errors
    /// `Io`, and once the log has failed.
    pub fn flushed_segment(&mut self) -> Result<File> {
        let mut batch = self.take();
        let sink = batch.write_out()?;
        sink.out.get_ref().try_clone().map_err(|e| io("open", e))
    }

    /// Writes the queue and syncs the current segment (survives power
    /// loss).
    ///
    /// # Errors
    /// `Io`, and once the log has failed.
    pub fn sync(&mut self) -> Result<()> {
        self.take().write_and_sync().map(|_| ())
    }

    /// Syncs the current segment and starts a new one at the next
    /// sequence number (nothing when the current one is empty).
    ///
    /// # Errors
    /// `Io`.
    pub fn rotate(&mut self) -> Result<()> {
        if self.segments.last() == Some(&self.next) {
            return Ok(());
        }
        let mut batch = self.take();
        let sink = batch.write_and_sync()?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(segment_name(self.next)))
            .map_err(|e| io("open", e))?;
        sink.out = BufWriter::with_capacity(BUFFER, file);
        self.segments.push(self.next);
        Ok(())
    }

    /// Removes the segments whose records all come before `seq` (they
    /// have been written back). The current segment stays.
    ///
    /// # Errors
    /// `Io`.
    pub fn release_below(&mut self, seq: u64) -> Result<()> {
        while self.segments.len() > 1 && self.segments[1] <= seq {
            let first = self.segments[0];
            std::fs::remove_file(self.dir.join(segment_name(first)))
                .map_err(|e| io("remove", e))?;
            self.segments.remove(0);
        }
        Ok(())
    }
}

impl Drop for OpLog {
    /// Writes what is queued, as the buffered writer of earlier builds
    /// did when dropped: a store dropped without a shutdown (the tests'
    /// crash) loses no record its process had queued.
    fn drop(&mut self) {
        if self.failed.get().is_none() && !self.queue.is_empty() {
            let _ = self.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks are the reference XXH3-64's (as `xxhash-rust` computes
    /// it, which wrote the logs of earlier builds), one-shot and streamed
    /// in pieces of every kind of length, across the 240-byte (short
    /// input), 1,024-byte (block) and 64-byte (stripe) boundaries.
    #[test]
    fn checks_match_the_reference_xxh3() {
        let data: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [
            0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1023, 1024, 1025, 4097, 5000,
        ] {
            let want = xxhash_rust::xxh3::xxh3_64(&data[..len]);
            assert_eq!(twox_hash::XxHash3_64::oneshot(&data[..len]), want, "{len}");
            for piece in [1, 6, 7, 64, 100, 1024, 3000] {
                let mut h = twox_hash::XxHash3_64::new();
                for c in data[..len].chunks(piece) {
                    h.write(c);
                }
                assert_eq!(h.finish(), want, "{len} in pieces of {piece}");
            }
        }
    }

    /// A replay holds one record at a time: eight value records of about
    /// 900 KB each (7 MB of log) come back whole and in order through a
    /// buffer that never grows past one of them; appends then continue
    /// after the last.
    #[test]
    fn a_replay_reads_one_record_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let block = |i: u8| vec![i; 900_000];
        let (mut log, _) = OpLog::open(dir.path()).unwrap();
        for i in 0..8u8 {
            log.append_value(
                0,
                u64::from(i),
                b"k",
                vec![(u16::from(i), block(i).into())],
                0,
            )
            .unwrap();
        }
        log.sync().unwrap();
        drop(log);
        let mut r = OpLog::replay(dir.path()).unwrap();
        for i in 0..8u8 {
            let op = r.next_op().unwrap().expect("eight records");
            assert_eq!((op.seq, op.version), (u64::from(i) + 1, u64::from(i)));
            let mut want = Vec::new();
            encode_blocks([(u16::from(i), &block(i)[..])], &mut want);
            assert_eq!(op.change, Change::Value(want));
            assert!(r.buf.capacity() < 1_000_000, "{}", r.buf.capacity());
        }
        assert!(r.next_op().unwrap().is_none());
        let mut log = r.into_log().unwrap();
        assert_eq!(log.append(0, 9, b"k", 1, true).unwrap(), 9);
    }

    fn encode(op: &Op, out: &mut Vec<u8>) {
        let bits: Vec<u8>;
        let (kind, word, rest) = match &op.change {
            Change::Bit { offset, set } => (u8::from(*set), *offset, &[][..]),
            Change::Value(v) => (KIND_VALUE, op.key.len() as u32, &v[..]),
            Change::Bits { offsets, set } => {
                bits = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
                let kind = KIND_CLEAR_BITS + u8::from(*set);
                (kind, offsets.len() as u32, &bits[..])
            }
            Change::Range { start, end, flip } => {
                bits = end.to_le_bytes().to_vec();
                (KIND_SET_RANGE + u8::from(*flip), *start, &bits[..])
            }
        };
        let start = out.len();
        encode_parts(op.seq, (op.db, op.version, &op.key), (kind, word), out);
        // A value's containers follow the head: frame and check again.
        out.extend_from_slice(rest);
        let len = (out.len() - start - 8) as u32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        let check = check_of(&out[start + 8..]);
        out[start + 4..start + 8].copy_from_slice(&check.to_le_bytes());
    }

    /// Record `seq`, drawn from `i`: every seventh a value record, every
    /// fifth (else) one of listed bits.
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

    fn append(log: &mut OpLog, o: &Op) {
        let seq = match &o.change {
            Change::Bit { offset, set } => log.append(o.db, o.version, &o.key, *offset, *set),
            Change::Bits { offsets, set } => {
                log.append_bits(o.db, o.version, &o.key, offsets, *set)
            }
            Change::Range { start, end, flip } => {
                log.append_range(o.db, o.version, &o.key, (*start, *end), *flip)
            }
            Change::Value(v) => {
                let blocks: Vec<(u16, Arc<[u8]>)> = decode_blocks(v)
                    .unwrap()
                    .into_iter()
                    .map(|(hi, b)| (hi, b.into()))
                    .collect();
                log.append_value(o.db, o.version, &o.key, blocks, 0)
            }
        }
        .unwrap();
        assert_eq!(seq, o.seq);
    }

    #[test]
    fn records_survive_a_reopen_in_order_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, ops) = OpLog::open(dir.path()).unwrap();
        assert!(ops.is_empty());
        let want: Vec<Op> = (1..=300).map(|s| op(s, s as u32)).collect();
        for (i, o) in want.iter().enumerate() {
            append(&mut log, o);
            if i % 100 == 99 {
                log.rotate().unwrap();
            }
        }
        log.rotate().unwrap(); // empty current segment: no new one
        log.flush().unwrap();
        assert_eq!(log.segments(), &[1, 101, 201, 301]);
        drop(log);
        let (mut log, got) = OpLog::open(dir.path()).unwrap();
        assert_eq!(got, want);
        assert_eq!(log.next_seq(), 301);
        append(&mut log, &op(301, 9));
        log.release_below(201).unwrap();
        assert_eq!(log.segments(), &[201, 301]);
        log.sync().unwrap();
        let (_, got) = OpLog::open(dir.path()).unwrap();
        assert_eq!(got.first().map(|o| o.seq), Some(201));
        assert_eq!(got.last(), Some(&op(301, 9)));
    }

    /// A new log in `dir` holding records 1..=n.
    fn log_of(dir: &Path, n: u64) -> OpLog {
        let (mut log, _) = OpLog::open(dir).unwrap();
        for s in 1..=n {
            append(&mut log, &op(s, s as u32));
        }
        log
    }

    #[test]
    fn a_torn_tail_is_cut_and_appends_continue() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = log_of(dir.path(), 20);
        log.sync().unwrap();
        drop(log);
        let path = dir.path().join(segment_name(1));
        let full = std::fs::metadata(&path).unwrap().len();
        for cut in [full - 1, full - 20, full / 2, 3] {
            let f = OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(cut).unwrap();
            drop(f);
            let (mut log, got) = OpLog::open(dir.path()).unwrap();
            let n = got.len() as u64;
            assert!(got.iter().zip(1..).all(|(o, s)| *o == op(s, s as u32)));
            assert_eq!(log.next_seq(), n + 1);
            append(&mut log, &op(n + 1, 99));
            log.sync().unwrap();
            drop(log);
            let (_, again) = OpLog::open(dir.path()).unwrap();
            assert_eq!(again.len() as u64, n + 1);
            assert_eq!(again.last(), Some(&op(n + 1, 99)));
        }
    }

    #[test]
    fn damage_before_the_last_segment_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = log_of(dir.path(), 10);
        log.rotate().unwrap();
        append(&mut log, &op(11, 11));
        log.sync().unwrap();
        drop(log);
        let path = dir.path().join(segment_name(1));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[30] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            OpLog::open(dir.path()),
            Err(StoreError::Corrupt(_))
        ));
        // A gap between segments is corrupt too.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(dir.path().join(segment_name(3)), b"").unwrap();
        assert!(matches!(
            OpLog::open(dir.path()),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn hostile_lengths_and_keys_are_refused() {
        let mut rec = Vec::new();
        encode(&op(1, 1), &mut rec);
        assert_eq!(decode(&rec), Some((op(1, 1), rec.len())));
        let mut long = rec.clone();
        long[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&long).is_none());
        // Re-checked, so only the decoder's own checks stand between.
        let rechecked = |mut r: Vec<u8>| {
            let check = check_of(&r[8..]);
            r[4..8].copy_from_slice(&check.to_le_bytes());
            r
        };
        let mut bad_flag = rec.clone();
        bad_flag[8 + 18] = 7;
        assert!(decode(&rechecked(bad_flag)).is_none());
        // A record of listed bits whose count overruns it or passes MAX_BITS.
        let b = op(5, 5);
        assert!(matches!(b.change, Change::Bits { .. }));
        let mut rec = Vec::new();
        encode(&b, &mut rec);
        assert_eq!(decode(&rec), Some((b, rec.len())));
        let r = op(11, 11);
        assert!(matches!(r.change, Change::Range { .. }));
        let mut rrec = Vec::new();
        encode(&r, &mut rrec);
        assert_eq!(decode(&rrec), Some((r, rrec.len())));
        let mut backwards = rrec.clone();
        backwards[8 + 19..8 + 23].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&rechecked(backwards)).is_none());
        for n in [rec.len() as u32, MAX_BITS as u32 + 1] {
            let mut bad = rec.clone();
            bad[8 + 19..8 + 23].copy_from_slice(&n.to_le_bytes());
            assert!(decode(&rechecked(bad)).is_none());
        }
        // A value record whose key length or containers overrun it.
        let v = op(7, 7);
        assert!(matches!(v.change, Change::Value(_)));
        let mut rec = Vec::new();
        encode(&v, &mut rec);
        assert_eq!(decode(&rec), Some((v, rec.len())));
        let mut long_key = rec.clone();
        long_key[8 + 19..8 + 23].copy_from_slice(&(rec.len() as u32).to_le_bytes());
        assert!(decode(&rechecked(long_key)).is_none());
        let mut long_block = rec.clone();
        let at = 8 + FIXED + 5 + 2;
        long_block[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&rechecked(long_block)).is_none());
        assert_eq!(decode_blocks(&[1, 0, 9, 0, 0, 0, 1]), None);
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = OpLog::open(dir.path()).unwrap();
        assert!(log.append(0, 1, &vec![0; MAX_KEY + 1], 0, true).is_err());
        assert!(log
            .append_bits(0, 1, b"k", &[0; MAX_BITS + 1], true)
            .is_err());
        assert!(log.append_range(0, 1, b"k", (5, 4), true).is_err());
        assert!(log
            .append_value(0, 1, b"k", vec![(0, vec![0; MAX_VALUE].into())], 0)
            .is_err());
        assert!(log
            .append_value(0, 1, b"k", vec![(0, vec![0; 3].into())], 4)
            .is_err());
        assert_eq!(log.next_seq(), 1);
    }

    proptest::proptest! {
        /// Appends, rotations and releases, then a crash that keeps a
        /// random prefix of the last segment's bytes: the replay is the
        /// appended records from the first kept segment on, up to a
        /// prefix of the last segment.
        #[test]
        fn replay_after_a_crash_is_a_prefix(
            steps in proptest::collection::vec(0u8..10, 1..120),
            keep in 0.0f64..=1.0,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let (mut log, _) = OpLog::open(dir.path()).unwrap();
            let mut all = Vec::new();
            for (i, s) in steps.iter().enumerate() {
                match s {
                    0 => log.rotate().unwrap(),
                    1 => {
                        let below = log.next_seq().saturating_sub(5).max(1);
                        log.release_below(below).unwrap();
                    }
                    _ => {
                        let o = op(log.next_seq(), i as u32);
                        append(&mut log, &o);
                        all.push(o);
                    }
                }
            }
            log.sync().unwrap();
            let first = log.segments()[0];
            let last = *log.segments().last().unwrap();
            drop(log);
            let path = dir.path().join(segment_name(last));
            let len = std::fs::metadata(&path).unwrap().len();
            let f = OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len((len as f64 * keep) as u64).unwrap();
            drop(f);
            let (mut log, got) = OpLog::open(dir.path()).unwrap();
            let kept: Vec<Op> = all.iter().filter(|o| o.seq >= first).cloned().collect();
            proptest::prop_assert!(got.len() <= kept.len());
            proptest::prop_assert_eq!(&got[..], &kept[..got.len()]);
            // Everything before the last segment is replayed whole.
            proptest::prop_assert!(got.iter().filter(|o| o.seq < last).count()
                == kept.iter().filter(|o| o.seq < last).count());
            proptest::prop_assert_eq!(log.next_seq(), first + got.len() as u64);
            // Appends go on after the replayed prefix.
            let o = op(log.next_seq(), 7);
            append(&mut log, &o);
            log.sync().unwrap();
            drop(log);
            let (_, again) = OpLog::open(dir.path()).unwrap();
            proptest::prop_assert_eq!(again.len(), got.len() + 1);
            proptest::prop_assert_eq!(again.last(), Some(&o));
        }
    }
}
