//! Roaring bitmaps (the TairRoaring `TR.*` type) on a `Txn`.
//!
//! A bitmap is one `meta` entry whose summary ([`BitmapSummary`]) carries
//! cardinality, min, max, sum, container count and the per-kind census, and
//! one `data` entry per non-empty container: subkey = the container's block
//! (high 16 bits) as 2 bytes big-endian, so entries sort numerically; value =
//! the container's serialized bytes exactly as the bitmap engine keeps them.
//! A container of [`delta::DELTA_MIN_BYTES`] or more may also carry up to
//! [`delta::MAX_DELTAS`] delta entries (small edits stored beside it, see
//! [`delta`]); every read sees the container with them
//! applied. Stored bytes are untrusted: every read goes through
//! [`ContainerView::parse`], and a bad entry is `Corrupt`, never a panic.
//!
//! Costs: TR.BITCOUNT (whole key), TR.MIN, TR.MAX, TR.STAT read `meta` only;
//! a single-bit write reads one container and writes `meta` and either the
//! container entry (small containers, every 64th edit of a big one: the
//! fold) or a 3-byte delta entry (plus one seek when it empties the
//! container holding the minimum or maximum).
//! DEL and overwrites are O(1) through the key version (stale containers go
//! with the data GC). Multi-key operations ([`Txn::tr_bitop`] and friends)
//! merge-scan the sources' container entries in block order, holding one
//! container per source at a time; only a stored result is collected (it is
//! written under a new version once the scan is done).
//!
//! Semantics follow `spec/tairroaring-commands.md`; the open points chosen
//! are named on each function. Empty bitmaps are kept as keys (open point 7);
//! values written by whole-value replacements carry no TTL (open point 14).

pub mod block_facts;
pub mod container_cache;
pub mod delta;
pub mod dirty;
pub mod oplog;

use std::iter::Peekable;
use std::ops::Bound;
use std::sync::Arc;

use roaringd_bitmap::setops;
use roaringd_bitmap::{Bitmap, ContainerBuf, ContainerRef, ContainerView, Kind as CKind};

use crate::error::{Result, StoreError};
use crate::keys;
use crate::kv::Space;
use crate::meta::{BitmapSummary, KeyMeta, Kind, Summary};
use crate::txn::{take_chunk, Txn};
use block_facts::{low_sum, BlockFacts};
use container_cache::{
    deltas_of, facts_of, held_charge, padded, padded_by, padded_with, prefetch, set_facts,
    ContainerCache, Held, Snap, PAD,
};
use delta::{Folded, FoldedBlock};

/// Values per container.
const BLOCK: u64 = 1 << 16;

/// An operation of TR.BITOP / TR.BITOPCARD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    /// Intersection of all sources.
    And,
    /// Union of all sources.
    Or,
    /// Bits set in an odd number of sources.
    Xor,
    /// First source minus the second (exactly two sources).
    Diff,
    /// Complement of the one source within `[0, max(source)]` (open point 2).
    Not,
}

/// A range write of TR.SETRANGE / TR.FLIPRANGE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeOp {
    /// Set every bit of the range.
    Set,
    /// Invert every bit of the range.
    Flip,
}

fn split(v: u32) -> (u16, u16) {
    ((v >> 16) as u16, v as u16)
}

fn join(hi: u16, lo: u16) -> u32 {
    (u32::from(hi) << 16) | u32::from(lo)
}

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("bitmap container: {e}"))
}

/// Container bytes a checked view can be taken over.
trait ContainerBytes {
    /// The view, or `Corrupt` when the bytes are not a valid container.
    fn checked_view(&self) -> Result<ContainerView<'_>>;
}

impl ContainerBytes for [u8] {
    /// Bytes read from the `Kv` (untrusted): every check.
    fn checked_view(&self) -> Result<ContainerView<'_>> {
        ContainerView::parse(self).map_err(corrupt)
    }
}

impl ContainerBytes for Vec<u8> {
    fn checked_view(&self) -> Result<ContainerView<'_>> {
        self.as_slice().checked_view()
    }
}

impl ContainerBytes for Bytes {
    /// `Owned` bytes come from the `Kv` and get every check. `Shared`
    /// bytes are container cache entries or a `Txn`'s record of a block
    /// it wrote ([`WrittenBlock::Folded`]): each was validated by
    /// [`ContainerView::parse`] when it entered the cache (`FillScan`,
    /// `bm_get_stored`) or is the engine's own encoding (a `ContainerBuf`'s
    /// or a `PointWrite`'s: commit-time updates of containers this module
    /// wrote, those records, the tier's blocks), so only the O(1)
    /// structure checks run again.
    fn checked_view(&self) -> Result<ContainerView<'_>> {
        match self {
            Bytes::Owned(v, _) => v.checked_view(),
            Bytes::Shared(a) => a.checked_view(),
        }
    }
}

impl ContainerBytes for Arc<[u8]> {
    /// A padded value the engine encoded or validated (see `Bytes`): the
    /// O(1) structure checks.
    fn checked_view(&self) -> Result<ContainerView<'_>> {
        // SAFETY: cache entries and written-block records hold validated
        // or engine-encoded container bytes only (see `Bytes`); neither
        // is changed in place.
        unsafe { ContainerView::parse_prevalidated(&self[PAD..]) }.map_err(corrupt)
    }
}

/// Validates container bytes (see [`ContainerBytes`] for how much).
fn view<B: ContainerBytes + ?Sized>(bytes: &B) -> Result<ContainerView<'_>> {
    bytes.checked_view()
}

/// Raw `(subkey, value)` data entries of one key version.
type RawEntries<'a> = Box<dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + Send + 'a>;

/// The first container of `entries` with its deltas applied, as
/// `(bytes, deltas)`, when it is `block`'s.
fn fold_first(entries: RawEntries<'_>, block: u16) -> Result<Option<(Vec<u8>, u16)>> {
    match Folded::new(entries, false).next().transpose()? {
        Some((b, v, n)) if b == block => Ok(Some((v, n))),
        _ => Ok(None),
    }
}

fn kind_index(k: CKind) -> usize {
    match k {
        CKind::Array => 0,
        CKind::Bitset => 1,
        CKind::Run => 2,
    }
}

/// Sum of the full offsets held by container `hi`.
fn container_sum(hi: u16, r: ContainerRef<'_>) -> u64 {
    (u64::from(hi) << 16) * u64::from(r.cardinality()) + low_sum(r)
}

/// The summary of a bitmap meta (zeros for another type).
fn summary_of(m: &KeyMeta) -> BitmapSummary {
    match &m.summary {
        Summary::Bitmap(s) => *s,
        _ => BitmapSummary::default(),
    }
}

/// Adds (`sign = 1`) or removes (`sign = -1`) a container's census share.
fn census(s: &mut BitmapSummary, r: ContainerRef<'_>, add: bool) {
    if r.is_empty() {
        return;
    }
    let k = &mut s.kinds[kind_index(r.kind())];
    let card = u64::from(r.cardinality());
    let bytes = r.stat_bytes() as u64;
    if add {
        k.containers += 1;
        k.values += card;
        k.bytes += bytes;
        s.containers += 1;
        s.card += card;
    } else {
        k.containers = k.containers.saturating_sub(1);
        k.values = k.values.saturating_sub(card);
        k.bytes = k.bytes.saturating_sub(bytes);
        s.containers = s.containers.saturating_sub(1);
        s.card = s.card.saturating_sub(card);
    }
}

/// [`census`] of a point write to a bitset container that stays one:
/// its removal and re-addition net to one value more (`value`) or less.
fn census_bitset_flip(s: &mut BitmapSummary, value: bool) {
    let k = &mut s.kinds[kind_index(CKind::Bitset)];
    if value {
        k.values += 1;
        s.card += 1;
    } else {
        k.values = k.values.saturating_sub(1);
        s.card = s.card.saturating_sub(1);
    }
}

/// The sum and extremes of a summary after bit `off` is set (`value`)
/// or cleared; a clear must not be of the minimum or the maximum (their
/// successors need a scan).
fn summary_point(s: &mut BitmapSummary, off: u32, value: bool) {
    if value {
        s.sum += u64::from(off);
        s.min = s.min.min(off);
        s.max = s.max.max(off);
    } else {
        s.sum -= u64::from(off);
    }
}

/// An open bitmap being written: its meta and summary, saved by `finish`.
struct Edit {
    meta: KeyMeta,
    s: BitmapSummary,
    /// The key did not exist before this command.
    created: bool,
}

/// Adds container `hi` (`r`, non-empty, above every container added
/// before) to the summary of a bitmap being built block by block:
/// census, cardinality, sum and extremes.
fn summary_push(s: &mut BitmapSummary, hi: u16, r: ContainerRef<'_>) {
    summary_push_facts(s, hi, r, BlockFacts::of(r));
}

/// [`summary_push`] with `r`'s facts known (`f`: [`BlockFacts::of`]`(r)`):
/// reads only `r`'s header, not its values. Nothing is added for an empty
/// container (`f` is `None`).
fn summary_push_facts(s: &mut BitmapSummary, hi: u16, r: ContainerRef<'_>, f: Option<BlockFacts>) {
    debug_assert_eq!(f, BlockFacts::of(r), "facts carried for another container");
    let Some(f) = f else {
        return;
    };
    if s.containers == 0 {
        s.min = join(hi, f.min);
    }
    s.max = join(hi, f.max);
    census(s, r, true);
    s.sum += (u64::from(hi) << 16) * u64::from(r.cardinality()) + u64::from(f.low_sum);
}

/// Summary of a whole in-memory bitmap (census, extremes, sum), in one
/// pass over its containers (no per-value iteration).
pub(crate) fn summary_of_bitmap(b: &Bitmap) -> BitmapSummary {
    let mut s = BitmapSummary::default();
    for (hi, c) in b.containers() {
        if !c.is_empty() {
            summary_push(&mut s, hi, c.as_ref());
        }
    }
    s
}

/// A bitmap container as a `Txn` left it ([`Txn::bm_written`]).
#[derive(Debug)]
pub(crate) enum WrittenBlock {
    /// Deleted, with its deltas.
    Gone,
    /// The container entry in the overlay, with no deltas.
    Entry,
    /// The container with its deltas applied, padded with their count
    /// ([`padded`]), as the container cache holds it; with the index of
    /// the delta record that gave it to the `Txn`'s cache records, if any.
    /// The bytes are a `ContainerBuf`'s own encoding (read back without
    /// the full validation, as cache entries are: [`ContainerBytes`]).
    Folded(Arc<[u8]>, Option<usize>),
}

/// Container bytes as read, deltas applied: owned (from this `Txn`'s
/// overlay or a `Kv` read that was not cached; with the number of delta
/// entries stored for the container) or shared with the container cache
/// (a [`padded`] value, which carries that number). Either way the same
/// serialized bytes, parsed through [`view`] before use.
#[derive(Clone, Debug)]
enum Bytes {
    Owned(Vec<u8>, u16),
    Shared(Arc<[u8]>),
}

impl Bytes {
    /// Number of delta entries stored beside the container.
    fn deltas(&self) -> u16 {
        match self {
            Bytes::Owned(_, n) => *n,
            Bytes::Shared(a) => deltas_of(a),
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v, _) => v,
            Bytes::Shared(a) => &a[PAD..],
        }
    }
}

/// The facts a container read from the cache carries ([`facts_of`]);
/// `None` for bytes read from the `Kv` or without facts.
fn cached_facts(b: &Bytes) -> Option<BlockFacts> {
    match b {
        Bytes::Shared(a) => facts_of(a),
        Bytes::Owned(..) => None,
    }
}

/// One source's containers in stream order (block order, or its reverse).
enum Stream<'a> {
    /// The blocks are known up front (the cached directory); a container
    /// is read only when taken, so skipping blocks ([`skip_below`]) reads
    /// nothing. An AND of a one-container key with a 66-container key then
    /// reads two containers, not 67.
    Dir {
        blocks: Vec<u16>,
        pos: usize,
        fetch: Box<dyn Fn(u16) -> Result<Bytes> + Send + 'a>,
    },
    /// A scan that reads each block's container as it passes it.
    Scan(Peekable<EntryIter<'a>>),
    /// A key version held whole by the container cache, from `pos` on
    /// (ascending): its containers are at hand, taking one costs no lookup.
    Held { held: Held, pos: usize },
    /// A one-container key version's container, until taken (no scan, no
    /// iterator to allocate: most census-like bitmaps are one container).
    One(Option<(u16, Bytes)>),
}

/// How many containers ahead of the one taken a [`Stream::Held`] asks the
/// CPU to load.
const LOOKAHEAD: usize = 2;

/// A stream over all of `held`.
fn held_stream<'a>(held: Held) -> Stream<'a> {
    for (_, c) in held.iter().take(LOOKAHEAD) {
        prefetch(c);
    }
    Stream::Held { held, pos: 0 }
}

/// A boxed iterator over `(block, container bytes)` entries.
type EntryIter<'a> = Box<dyn Iterator<Item = Result<(u16, Bytes)>> + Send + 'a>;

/// The block of a stream's head, `None` at its end. A scan's read error
/// surfaces here; a directory stream's when the container is taken.
#[inline]
fn head(s: &mut Stream<'_>) -> Result<Option<u16>> {
    match s {
        Stream::Dir { blocks, pos, .. } => Ok(blocks.get(*pos).copied()),
        Stream::Held { held, pos } => Ok(held.get(*pos).map(|(b, _)| *b)),
        Stream::One(one) => Ok(one.as_ref().map(|(b, _)| *b)),
        Stream::Scan(it) => match it.peek() {
            None => Ok(None),
            Some(Ok((hi, _))) => Ok(Some(*hi)),
            Some(Err(_)) => match it.next() {
                Some(Err(e)) => Err(e),
                _ => Ok(None),
            },
        },
    }
}

/// Advances a forward stream past its blocks below `target` without
/// taking them (a directory stream reads none of their containers).
fn skip_below(s: &mut Stream<'_>, target: u16) -> Result<()> {
    match s {
        Stream::Dir { blocks, pos, .. } => {
            while blocks.get(*pos).is_some_and(|&b| b < target) {
                *pos += 1;
            }
        }
        Stream::Held { held, pos } => {
            while held.get(*pos).is_some_and(|(b, _)| *b < target) {
                *pos += 1;
            }
        }
        Stream::One(one) => {
            if one.as_ref().is_some_and(|(b, _)| *b < target) {
                *one = None;
            }
        }
        Stream::Scan(_) => {
            while head(s)?.is_some_and(|h| h < target) {
                take(s)?;
            }
        }
    }
    Ok(())
}

/// Bytes of a key's containers, by the summary's census.
fn key_bytes(s: &BitmapSummary) -> u64 {
    s.kinds.iter().map(|k| k.bytes).sum()
}

/// A `Kv` scan of a key version's containers (deltas applied) that fills
/// the container cache as it goes and, when `dir` and the scan runs to its
/// end, the key version's directory. Fills are refused if a container
/// commit ran since `snap` (see `container_cache`).
struct FillScan<'a, I> {
    inner: I,
    cache: &'a ContainerCache,
    version: u64,
    snap: Snap,
    /// Blocks seen, while a directory fill is still possible.
    dir: Option<Vec<u16>>,
}

impl<I> Iterator for FillScan<'_, I>
where
    I: Iterator<Item = Result<FoldedBlock>>,
{
    type Item = Result<(u16, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.inner.next() {
            None => {
                if let Some(d) = self.dir.take() {
                    self.cache.fill_dir(self.version, d.into(), self.snap);
                }
                None
            }
            Some(Err(e)) => {
                self.dir = None;
                Some(Err(e))
            }
            Some(Ok((hi, v, n))) => {
                if let Some(d) = self.dir.as_mut() {
                    d.push(hi);
                }
                // Validated once here: readers of the cache entry skip
                // the O(n) checks (`ContainerBytes for Bytes`).
                let facts = match view(&v) {
                    Ok(c) => BlockFacts::of(c.as_ref()),
                    Err(e) => {
                        self.dir = None;
                        return Some(Err(e));
                    }
                };
                let a = padded_with(&v, n, facts);
                self.cache
                    .fill_container(self.version, hi, Arc::clone(&a), self.snap);
                Some(Ok((hi, Bytes::Shared(a))))
            }
        }
    }
}

/// A result container as [`Txn::bm_merge`] hands it to its sink: a
/// source's container taken as it is stored (the result's block is that
/// source's alone), or one the operation built.
#[derive(Clone, Copy)]
enum Piece<'a> {
    Source(&'a Bytes),
    Built(&'a [u8]),
}

impl Piece<'_> {
    /// The container's serialized bytes.
    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Source(b) => b,
            Piece::Built(b) => b,
        }
    }

    /// The facts a source's cached container carries, if any.
    fn facts(&self) -> Option<BlockFacts> {
        match self {
            Piece::Source(b) => cached_facts(b),
            Piece::Built(_) => None,
        }
    }

    /// The container `r` (this piece's) as a padded value with no delta
    /// count, carrying its facts ([`BlockFacts::of`]), and those facts: a
    /// source's container cache entry itself where it is one with facts
    /// (shared, not copied: cache values are immutable; its values are
    /// not read), else a copy.
    fn kept(&self, r: ContainerRef<'_>) -> (Option<BlockFacts>, Arc<[u8]>) {
        if let Piece::Source(Bytes::Shared(a)) = self {
            if let (0, Some(f)) = (deltas_of(a), facts_of(a)) {
                return (Some(f), Arc::clone(a));
            }
        }
        let f = self.facts().or_else(|| BlockFacts::of(r));
        (f, padded_with(self.bytes(), 0, f))
    }
}

/// A TR.BITOP result as the write-back tier keeps it: block, padded
/// container (a source's cache entry where the block is its own).
type KeptBlocks = Vec<(u16, Arc<[u8]>)>;

/// The sink of [`Txn::bm_merge`]: block, parsed container, its bytes.
type MergeSink<'s> = dyn FnMut(u16, ContainerRef<'_>, Piece<'_>) + 's;

/// Hands one block's result to `sink`: a lone source container as its own
/// bytes (nothing copied; skipped when empty), else what `combine` builds
/// from the two or more containers, when non-empty. One or two containers
/// (every pairwise operation) allocate nothing here.
fn sink_block(
    hi: u16,
    bufs: &[Bytes],
    sink: &mut MergeSink<'_>,
    combine: impl FnOnce(&[ContainerRef<'_>]) -> ContainerBuf,
) -> Result<()> {
    let c = match bufs {
        [] => return Ok(()),
        [only] => {
            let v = view(only)?;
            if !v.as_ref().is_empty() {
                sink(hi, v.as_ref(), Piece::Source(only));
            }
            return Ok(());
        }
        [a, b] => combine(&[view(a)?.as_ref(), view(b)?.as_ref()]),
        _ => {
            let views: Vec<ContainerView<'_>> = bufs.iter().map(view).collect::<Result<_>>()?;
            let refs: Vec<ContainerRef<'_>> = views.iter().map(ContainerView::as_ref).collect();
            combine(&refs)
        }
    };
    if !c.is_empty() {
        sink(hi, c.as_ref(), Piece::Built(c.as_bytes()));
    }
    Ok(())
}

/// Container bytes from which a TR.BITOP result may overwrite its
/// destination in place: below them a fresh write costs less than
/// reading the old value to compare (a range scan when the destination is
/// not cached). With 0 instead, `bench/tr-callgrind` counted 13,886
/// instructions per census1881 pairwise AND (mostly one small container)
/// against 13,627, and 135,179 per pairwise OR against 131,052.
const IN_PLACE_MIN_BYTES: u64 = 4096;

/// True when TR.BITOP overwrites a destination bitmap (summary `old`)
/// with a result (summary `new`, `n` containers) in place
/// ([`Txn::bm_rewrite`]: unchanged containers are not written again)
/// rather than under a fresh version. Deleting the old containers that
/// the result lacks then costs at most one entry per result container, so
/// the overwrite stays proportional to the result; a destination much
/// bigger than the result, an empty result, or one under
/// [`IN_PLACE_MIN_BYTES`] takes a fresh version instead (O(1) in the old
/// key's size).
fn rewrite_in_place(old: &BitmapSummary, new: &BitmapSummary, n: usize) -> bool {
    n > 0 && old.containers <= 2 * n as u64 && key_bytes(new) >= IN_PLACE_MIN_BYTES
}

/// Bytes of containers TR.OPTIMIZE reads before rewriting them.
const OPTIMIZE_CHUNK_BYTES: usize = 1 << 20;

/// True for an empty bitmap without expiry, as an empty TR.BITOP result
/// is stored: no `data` entries, so the version does not matter.
fn is_plain_empty_bitmap(m: &KeyMeta) -> bool {
    m.expire_at_ms == 0
        && !m.big
        && !m.noint
        && m.summary == Summary::Bitmap(BitmapSummary::default())
}

/// Takes the head entry's container bytes.
fn take(s: &mut Stream<'_>) -> Result<Bytes> {
    let ended = || StoreError::corrupt("bitmap stream ended early");
    match s {
        Stream::Dir { blocks, pos, fetch } => {
            let hi = *blocks.get(*pos).ok_or_else(ended)?;
            *pos += 1;
            fetch(hi)
        }
        Stream::Held { held, pos } => {
            let (_, c) = held.get(*pos).ok_or_else(ended)?;
            if let Some((_, next)) = held.get(*pos + LOOKAHEAD) {
                prefetch(next);
            }
            *pos += 1;
            Ok(Bytes::Shared(Arc::clone(c)))
        }
        Stream::One(one) => one.take().map(|(_, c)| c).ok_or_else(ended),
        Stream::Scan(it) => match it.next() {
            Some(Ok((_, v))) => Ok(v),
            Some(Err(e)) => Err(e),
            None => Err(ended()),
        },
    }
}

impl Txn {
    // ----- plumbing -----------------------------------------------------

    /// Live meta and summary of a bitmap key; `None` when absent.
    ///
    /// # Errors
    /// `WrongType` when the key holds another type.
    pub fn tr_summary(&mut self, db: u16, key: &[u8]) -> Result<Option<BitmapSummary>> {
        Ok(self.meta_of(db, key, Kind::Bitmap)?.map(|m| summary_of(&m)))
    }

    fn bm_open(&mut self, db: u16, key: &[u8], create: bool) -> Result<Option<Edit>> {
        match self.meta_of(db, key, Kind::Bitmap)? {
            Some(m) => {
                let s = summary_of(&m);
                Ok(Some(Edit {
                    meta: m,
                    s,
                    created: false,
                }))
            }
            None if create => Ok(Some(Edit {
                meta: KeyMeta {
                    version: self.new_data_version()?,
                    expire_at_ms: 0,
                    big: false,
                    noint: false,
                    summary: Summary::Bitmap(BitmapSummary::default()),
                },
                s: BitmapSummary::default(),
                created: true,
            })),
            None => Ok(None),
        }
    }

    /// The write-back tier's TR.SETBIT (`docs/handoff/write-back-tier.md`,
    /// step 4): edits a copy of the container (a bitset that stays one and
    /// that the dirty map alone holds: in place,
    /// [`dirty::Dirty::record_in_place`]),
    /// keeps it and the new summary in the dirty map and appends the edit
    /// to the operation log (synced by the commit under `always`); nothing
    /// is written to the `Kv`. Returns the bit's previous value, or
    /// `None` when the edit is not the tier's to take: a missing key, one
    /// with an expiry, an absent block or one the edit empties, a clear
    /// of the minimum or maximum (which needs a scan), or a full budget.
    ///
    /// # Errors
    /// `WrongType`; `Io` when the log cannot be written (nothing changed).
    fn bm_setbit_dirty(
        &mut self,
        db: u16,
        key: &[u8],
        off: u32,
        value: bool,
    ) -> Result<Option<bool>> {
        let Some(m) = self.meta_of(db, key, Kind::Bitmap)? else {
            return Ok(None);
        };
        if m.expire_at_ms != 0 {
            return Ok(None);
        }
        let mut s = summary_of(&m);
        let (hi, lo) = split(off);
        let Some(old_bytes) = self.bm_get(db, key, m.version, hi, Some(&s))? else {
            return Ok(None);
        };
        let n = old_bytes.deltas();
        let old_facts = cached_facts(&old_bytes);
        let old_view = view(&old_bytes)?;
        let old = old_view.as_ref();
        let prev = old.contains(lo);
        if prev == value {
            return Ok(Some(prev));
        }
        if !value && (off == s.min || off == s.max) {
            return Ok(None);
        }
        let dirty = &self.inner.dirty;
        let plan = old.plan_point_write(lo, value);
        // A bitset that stays one is flipped in place where the tier
        // holds the only copy of it (no 8 KiB copy), when its cached
        // facts, if any, follow without a scan.
        let in_place = match (old, &plan, &old_bytes) {
            (ContainerRef::Bitset { .. }, Some(w), Bytes::Shared(_)) => {
                if !dirty.has_room((PAD + w.encoded_len()) as u64) {
                    return Ok(None);
                }
                old_facts.map_or(Some(None), |f| f.after_inner_flip(lo, value).map(Some))
            }
            _ => None,
        };
        if let Some(facts) = in_place {
            let Bytes::Shared(held) = old_bytes else {
                unreachable!("matched as shared above")
            };
            let mut flipped = s;
            census_bitset_flip(&mut flipped, value);
            summary_point(&mut flipped, off, value);
            let meta = KeyMeta {
                summary: Summary::Bitmap(flipped),
                ..m
            };
            let mk = keys::KeyBuf::meta(db, key);
            {
                let mut log = dirty.log.lock();
                let Some(log) = log.as_mut() else {
                    return Ok(None);
                };
                let seq = log.append(db, m.version, key, off, value)?;
                let edit = |b: &mut [u8]| {
                    let (pad, c) = b.split_at_mut(PAD);
                    let done = roaringd_bitmap::flip_bitset_in_place(c, lo, value);
                    if let (true, Some(f)) = (done, facts) {
                        set_facts(pad, f);
                    }
                    done
                };
                if let Err(held) = dirty.record_in_place(&mk, &meta, (hi, seq), held, edit) {
                    // Shared (a reader holds it) or not the tier's yet
                    // (read from the container cache): copied, under the
                    // record appended above.
                    let old = view(&held)?;
                    let old = old.as_ref();
                    // The bytes planned on above: the same plan.
                    let w = old.plan_point_write(lo, value).ok_or_else(|| {
                        StoreError::corrupt("a dirty container changed under its key's lock")
                    })?;
                    let mut bytes = padded_by(w.encoded_len(), n, |out| w.write(out));
                    if let Some(f) = facts {
                        set_facts(Arc::get_mut(&mut bytes).expect("a new Arc"), f);
                    }
                    let block = dirty::DirtyBlock {
                        bytes,
                        stored_deltas: n,
                    };
                    dirty.record(&mk, meta, hi, block, seq);
                }
            }
            self.oplog_appended = true;
            self.touch(db, key);
            return Ok(Some(prev));
        }
        // The new block's value, written in one pass over the old bytes
        // where the kind stays (nearly every edit), else edited as a buffer.
        let mut bytes = match plan {
            Some(w) => {
                if !dirty.has_room((PAD + w.encoded_len()) as u64) {
                    return Ok(None);
                }
                padded_by(w.encoded_len(), n, |out| w.write(out))
            }
            None => {
                let mut new = old.to_buf();
                if value {
                    new.insert(lo);
                } else {
                    new.remove(lo);
                }
                if new.is_empty() || !dirty.has_room((PAD + new.as_bytes().len()) as u64) {
                    return Ok(None);
                }
                padded(new.as_bytes(), n)
            }
        };
        let new = bytes.checked_view()?;
        let new = new.as_ref();
        census(&mut s, old, false);
        census(&mut s, new, true);
        summary_point(&mut s, off, value);
        if let Some(f) = old_facts.and_then(|f| f.after_flip(new, lo, value)) {
            set_facts(Arc::get_mut(&mut bytes).expect("a new Arc"), f);
        }
        let block = dirty::DirtyBlock {
            bytes,
            stored_deltas: n,
        };
        let meta = KeyMeta {
            summary: Summary::Bitmap(s),
            ..m
        };
        {
            // Recorded under the log's lock: a checkpoint, which releases
            // log segments under it, sees the key dirty with this record.
            let mut log = dirty.log.lock();
            let Some(log) = log.as_mut() else {
                return Ok(None);
            };
            let seq = log.append(db, m.version, key, off, value)?;
            dirty.record(&keys::KeyBuf::meta(db, key), meta, hi, block, seq);
        }
        // Synced by the commit under `always`, off the I/O threads.
        self.oplog_appended = true;
        // Watchers of the key see the write.
        self.touch(db, key);
        Ok(Some(prev))
    }

    /// Absorbs dirty key `mk` (meta key) into this `Txn`, if dirty: each
    /// dirty container is written as its entry with its stored deltas
    /// deleted, the meta with the lowered delta count, and the `wb` entry
    /// of its last log record; the dirty entry is dropped after the
    /// commit (`docs/handoff/write-back-tier.md`, step 5).
    pub(crate) fn bm_absorb(&mut self, mk: &[u8]) {
        if self.absorbed.iter().any(|(k, _)| k.as_slice() == mk) {
            return;
        }
        let Some(d) = self.inner.dirty.get(mk) else {
            return;
        };
        let Ok((db, key)) = keys::split_meta_key(mk) else {
            return;
        };
        let key = key.to_vec();
        let version = d.meta.version;
        let mut s = summary_of(&d.meta);
        for (hi, bytes, stored_deltas) in d.blocks.iter() {
            self.data_put(db, &key, version, &hi.to_be_bytes(), bytes[PAD..].to_vec());
            for seq in 0..stored_deltas {
                self.data_delete(db, &key, version, &delta::delta_sub(hi, seq));
            }
            s.deltas = s.deltas.saturating_sub(u64::from(stored_deltas));
            if self.inner.ccache.enabled() {
                // The block's bytes and facts as the tier holds them, for
                // a cached copy of the block (no delta entries now).
                let bytes = if deltas_of(bytes) == 0 {
                    Arc::clone(bytes)
                } else {
                    padded_with(&bytes[PAD..], 0, facts_of(bytes))
                };
                let dk = keys::data_key(db, &key, version, &hi.to_be_bytes());
                self.cc_pending.record_update((version, hi, dk), bytes);
            }
            self.bm_written_set((db, version, hi), WrittenBlock::Entry);
        }
        let meta = KeyMeta {
            summary: Summary::Bitmap(s),
            ..d.meta
        };
        self.absorb_meta(mk, meta);
        self.internal_puts
            .push(crate::store::wb_key(d.last_seq, db, version, &key));
        self.absorbed.push((mk.to_vec(), d.last_seq));
    }

    fn bm_finish(&mut self, db: u16, key: &[u8], mut e: Edit) -> Result<u64> {
        let card = e.s.card;
        e.meta.summary = Summary::Bitmap(e.s);
        self.put_meta(db, key, e.meta)?;
        Ok(card)
    }

    /// The bytes of container `hi` of a key version, deltas applied: with
    /// this `Txn`'s own writes to the block when it made any, else from
    /// the container cache, else the `Kv` (then cached). A cached
    /// directory without `hi` answers "absent" without a `Kv` read. `s`:
    /// the version's summary, when the caller has it: on a miss a small
    /// key is then warmed whole ([`Txn::bm_warm`]), so that later reads of
    /// absent blocks need no `Kv` read either.
    fn bm_get(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        hi: u16,
        s: Option<&BitmapSummary>,
    ) -> Result<Option<Bytes>> {
        match self.bm_written.get(&(db, version, hi)) {
            Some(WrittenBlock::Gone) => return Ok(None),
            Some(WrittenBlock::Folded(a, _)) => return Ok(Some(Bytes::Shared(Arc::clone(a)))),
            // Unless a spill of fresh entries moved it to the `Kv`.
            Some(WrittenBlock::Entry) => {
                let first = keys::data_key(db, key, version, &hi.to_be_bytes());
                if let Some(v) = self.data_overlay_get(&first) {
                    return Ok(v.map(|v| Bytes::Owned(v.to_vec(), 0)));
                }
            }
            None => {}
        }
        if !self.inner.dirty.is_empty() {
            let mk = keys::KeyBuf::meta(db, key);
            // A whole dirty key (a TR.BITOP result) has nothing in the
            // `Kv` or the cache yet: a block it lacks is absent.
            if let Some(b) = self.inner.dirty.block(&mk, version, hi) {
                return Ok(b.map(|b| Bytes::Shared(b.bytes)));
            }
        }
        let warm = if self.data_overlay_is_empty() {
            true
        } else {
            let first = keys::data_key(db, key, version, &hi.to_be_bytes());
            if self.data_overlay_has_prefix(&first) {
                let after = hi.checked_sub(1).map(|b| delta::delta_sub(b, u16::MAX));
                let entries =
                    self.data_iter(db, key, version, after.as_ref().map(|a| &a[..]), false);
                return Ok(fold_first(Box::new(entries), hi)?.map(|(v, n)| Bytes::Owned(v, n)));
            }
            // The overlay may hold other blocks of the key: no warming.
            false
        };
        self.bm_get_stored(db, key, (version, s), hi, warm)
    }

    /// Container `hi` of a key version with its deltas, from the `Kv`: a
    /// point read of its entry when the key is known to have no deltas
    /// (`s`, its summary, read under the key's lock, which this `Txn` still
    /// holds: no delta can appear meanwhile), else one short range read
    /// (the entry and its deltas).
    fn bm_read_block(
        &self,
        db: u16,
        key: &[u8],
        (version, s): (u64, Option<&BitmapSummary>),
        hi: u16,
    ) -> Result<Option<(Vec<u8>, u16)>> {
        let first = keys::data_key(db, key, version, &hi.to_be_bytes());
        if s.is_some_and(|s| s.deltas == 0) && self.holds_lock(db, key) {
            return Ok(self.inner.kv.get(Space::Data, &first)?.map(|v| (v, 0)));
        }
        let last = keys::data_key(db, key, version, &delta::delta_sub(hi, u16::MAX));
        let plen = first.len() - 2;
        let entries = self
            .inner
            .kv
            .range(
                Space::Data,
                Bound::Included(&first),
                Bound::Included(&last),
                false,
            )
            .map(move |r| r.map(|(k, v)| (k[plen..].to_vec(), v)));
        fold_first(Box::new(entries), hi)
    }

    /// As [`Txn::bm_get`] for a block this `Txn` has not written (`s`:
    /// the version's summary when the caller has it; `warm`: whether the
    /// key may then be warmed).
    fn bm_get_stored(
        &self,
        db: u16,
        key: &[u8],
        (version, s): (u64, Option<&BitmapSummary>),
        hi: u16,
        warm: bool,
    ) -> Result<Option<Bytes>> {
        let cc = &self.inner.ccache;
        if !cc.enabled() {
            return Ok(self
                .bm_read_block(db, key, (version, s), hi)?
                .map(|(v, n)| Bytes::Owned(v, n)));
        }
        if let Some(b) = cc.container(version, hi) {
            return Ok(Some(Bytes::Shared(b)));
        }
        let dir = match cc.dir(version) {
            Some(d) => Some(d),
            None => s
                .filter(|_| warm)
                .and_then(|s| self.bm_warm(db, key, version, s)),
        };
        if let Some(d) = dir {
            if d.binary_search(&hi).is_err() {
                return Ok(None);
            }
            if let Some(b) = cc.container(version, hi) {
                return Ok(Some(Bytes::Shared(b)));
            }
        }
        let snap = cc.snapshot(version);
        match self.bm_read_block(db, key, (version, s), hi)? {
            Some((v, n)) => {
                // Validated once here (see `ContainerBytes for Bytes`).
                let facts = BlockFacts::of(view(&v)?.as_ref());
                let a = padded_with(&v, n, facts);
                cc.fill_container(version, hi, Arc::clone(&a), snap);
                Ok(Some(Bytes::Shared(a)))
            }
            None => Ok(None),
        }
    }

    /// Key version `version` (summary `s`) held whole, cached as such:
    /// built from its cached directory and containers, each read (and
    /// cached) first where it is not. `None` when the whole is too big to
    /// cache, or a read fails or is not cached (the caller streams the key
    /// then, which reports the error). The caller guarantees this `Txn` has
    /// not written the key ([`Txn::bm_clean`]).
    fn bm_hold(&self, db: u16, key: &[u8], version: u64, s: &BitmapSummary) -> Option<Held> {
        let cc = &self.inner.ccache;
        let n = usize::try_from(s.containers).ok()?;
        let bytes = usize::try_from(key_bytes(s)).ok()? + n * (PAD + 4);
        if !cc.admits(held_charge(n, bytes)) {
            return None;
        }
        let snap = cc.snapshot(version);
        let d = cc
            .dir(version)
            .or_else(|| self.bm_warm(db, key, version, s))?;
        let mut all = Vec::with_capacity(d.len());
        for &b in d.iter() {
            let c = match cc.container(version, b) {
                Some(c) => c,
                None => match self.bm_get_stored(db, key, (version, Some(s)), b, false) {
                    Ok(Some(Bytes::Shared(c))) => c,
                    _ => return None,
                },
            };
            all.push((b, c));
        }
        let held: Held = all.into();
        cc.fill_held(version, Arc::clone(&held), snap);
        Some(held)
    }

    /// Reads a whole small key version into the container cache (its
    /// containers and directory) and returns the directory; `None` when
    /// the key is too big to warm (over 1/64 of the budget or 4,096
    /// containers), the scan failed, or a racing commit refused the fill.
    /// The caller guarantees this `Txn` has no pending writes to the key.
    fn bm_warm(&self, db: u16, key: &[u8], version: u64, s: &BitmapSummary) -> Option<Arc<[u16]>> {
        let cc = &self.inner.ccache;
        if s.containers > 4096 || key_bytes(s) > cc.capacity() / 64 {
            return None;
        }
        let scan = FillScan {
            inner: Folded::new(self.data_iter(db, key, version, None, false), false),
            cache: cc,
            version,
            snap: cc.snapshot(version),
            dir: Some(Vec::new()),
        };
        for e in scan {
            e.ok()?;
        }
        cc.dir(version)
    }

    /// The container of block `hi` of a key version, owned, with the
    /// number of its delta entries.
    fn bm_container(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        hi: u16,
        s: Option<&BitmapSummary>,
    ) -> Result<Option<(ContainerBuf, u16)>> {
        match self.bm_get(db, key, version, hi, s)? {
            Some(b) => Ok(Some((view(&b)?.to_buf(), b.deltas()))),
            None => Ok(None),
        }
    }

    /// Records a container write under a live version for the container
    /// cache (applied at commit).
    fn bm_note_write(&mut self, db: u16, key: &[u8], version: u64, hi: u16) {
        if self.inner.ccache.enabled() {
            let dk = keys::data_key(db, key, version, &hi.to_be_bytes());
            self.cc_pending.record(version, hi, dk);
        }
    }

    /// Stores `ops` (the bits that change, in order) as delta number `seq`
    /// of container `hi`, whose content after them is `new` (with `facts`,
    /// when known).
    fn bm_put_delta(
        &mut self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        hi: u16,
        seq: u16,
        (ops, new, facts): (&[(u16, bool)], &ContainerBuf, Option<BlockFacts>),
    ) {
        let sub = delta::delta_sub(hi, seq);
        let version = e.meta.version;
        self.data_put(db, key, version, &sub, delta::encode_ops(ops));
        e.s.deltas += 1;
        let container = padded_with(new.as_bytes(), seq + 1, facts);
        let record = self.inner.ccache.enabled().then(|| {
            let dk = keys::data_key(db, key, version, &sub);
            self.cc_pending
                .record_known((version, hi, dk), Arc::clone(&container), true)
        });
        self.bm_written_set((db, version, hi), WrittenBlock::Folded(container, record));
    }

    /// Sets what block `(db, version, hi)` holds in this `Txn` after a
    /// write that also recorded it for the container cache (when on):
    /// the block's previous delta record, if any, is superseded.
    fn bm_written_set(&mut self, block: (u16, u64, u16), now: WrittenBlock) {
        if let Some(WrittenBlock::Folded(_, Some(i))) = self.bm_written.insert(block, now) {
            self.cc_pending.supersede(i);
        }
    }

    /// Deletes the `n` delta entries of container `hi` (its container
    /// entry is rewritten or deleted in the same batch).
    fn bm_drop_deltas(&mut self, db: u16, key: &[u8], e: &mut Edit, hi: u16, n: u16) {
        for seq in 0..n {
            self.data_delete(db, key, e.meta.version, &delta::delta_sub(hi, seq));
        }
        e.s.deltas = e.s.deltas.saturating_sub(u64::from(n));
    }

    /// True when a write of `ops` to a container (now `new`, with `n`
    /// deltas stored) is kept as a delta entry rather than a rewrite: the
    /// container is big, it has room for one more delta, and the edit is
    /// small. A block may take several deltas in one `Txn`: the container
    /// cache applies its records in order, and later reads in the `Txn`
    /// find the block in [`Txn::bm_written`].
    fn bm_delta_fits((n, ops, new): (u16, &[(u16, bool)], &ContainerBuf)) -> bool {
        !ops.is_empty()
            && ops.len() <= delta::MAX_DELTA_OPS
            && n + 1 < delta::MAX_DELTAS
            && new.as_bytes().len() >= delta::DELTA_MIN_BYTES
            && !new.is_empty()
    }

    /// The container entries of a key version from block `from` upward
    /// (or, `reverse`, from `from` downward). `s`: the version's summary
    /// (sizes the cache fill). Served from a cached directory when there
    /// is one and this `Txn` has not written the key; else a `Kv` scan
    /// that fills the cache (the directory too when it covers the key).
    fn bm_stream(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        from: u16,
        reverse: bool,
        s: &BitmapSummary,
    ) -> Stream<'_> {
        let cc = &self.inner.ccache;
        let clean = self.bm_clean(db, key, version);
        if clean {
            if let Some(d) = cc
                .dir(version)
                .or_else(|| self.bm_warm(db, key, version, s))
            {
                let blocks: Vec<u16> = if reverse {
                    let end = d.partition_point(|&b| b <= from);
                    d[..end].iter().rev().copied().collect()
                } else {
                    let start = d.partition_point(|&b| b < from);
                    d[start..].to_vec()
                };
                let key = key.to_vec();
                let s = *s;
                return Stream::Dir {
                    blocks,
                    pos: 0,
                    fetch: Box::new(move |hi| {
                        self.bm_get_stored(db, &key, (version, Some(&s)), hi, false)?
                            .ok_or_else(|| {
                                StoreError::corrupt(
                                    "bitmap container directory names a container that is not stored",
                                )
                            })
                    }),
                };
            }
        }
        // Exclusive cursors: past block `from - 1`'s last possible delta
        // going up, block `from + 1`'s container going down.
        let after: Option<Vec<u8>> = if reverse {
            from.checked_add(1).map(|b| b.to_be_bytes().to_vec())
        } else {
            from.checked_sub(1)
                .map(|b| delta::delta_sub(b, u16::MAX).to_vec())
        };
        let scan = Folded::new(
            self.data_iter(db, key, version, after.as_deref(), reverse),
            reverse,
        );
        let it: EntryIter<'_> = if clean && key_bytes(s) <= cc.capacity() / 8 {
            Box::new(FillScan {
                inner: scan,
                cache: cc,
                version,
                snap: cc.snapshot(version),
                dir: (from == 0 && !reverse).then(Vec::new),
            })
        } else {
            Box::new(scan.map(|r| r.map(|(hi, v, n)| (hi, Bytes::Owned(v, n)))))
        };
        Stream::Scan(it.peekable())
    }

    /// True when the container cache may serve key version `version` to
    /// this `Txn`: the cache is on and this `Txn` has not written the key
    /// (the cache holds committed state only).
    fn bm_clean(&self, db: u16, key: &[u8], version: u64) -> bool {
        // A stream scans the `Kv`, which lacks a dirty key's edits: a
        // `keep_dirty` transaction never streams a key it did not absorb
        // (the server's rows marked `TierUse::KeepDirty` are point and summary reads only),
        // nor does TR.BITOP stream the destination it kept dirty.
        debug_assert!(
            (!self.keep_dirty && self.keep_dest.is_none()) || !self.dirty_unabsorbed(db, key),
            "keep_dirty stream of a dirty key"
        );
        self.inner.ccache.enabled()
            && (self.data_overlay_is_empty()
                || !self.data_overlay_has_prefix(&keys::data_prefix(db, key, version)))
    }

    /// A whole bitmap's container entries for a merge scan. The summary
    /// saves the range iterator where it can: an empty bitmap has no entry,
    /// and a one-container bitmap's entry is a point read at its minimum's
    /// block (most real bitmaps of small id sets have one container). A
    /// bigger one, when `whole` (the merge takes every container of the
    /// source: OR, XOR), comes from the version held whole by the cache
    /// ([`Txn::bm_hold`]); else it is streamed (an AND skips containers
    /// without reading them, and a lookup of a held entry that only OR
    /// builds cost AND more than it saved).
    fn bm_source_stream(
        &self,
        db: u16,
        key: &[u8],
        (version, s): (u64, &BitmapSummary),
        whole: bool,
    ) -> Stream<'_> {
        let it: EntryIter<'_> = match s.containers {
            0 => Box::new(std::iter::empty()),
            1 => {
                let hi = (s.min >> 16) as u16;
                match self.bm_get(db, key, version, hi, Some(s)) {
                    Ok(Some(v)) => return Stream::One(Some((hi, v))),
                    Ok(None) => Box::new(std::iter::once(Err(StoreError::corrupt(
                        "bitmap summary names a container that is not stored",
                    )))),
                    Err(e) => Box::new(std::iter::once(Err(e))),
                }
            }
            _ => {
                if whole && self.bm_clean(db, key, version) {
                    let held = self
                        .inner
                        .ccache
                        .held(version)
                        .or_else(|| self.bm_hold(db, key, version, s));
                    if let Some(h) = held {
                        return held_stream(h);
                    }
                }
                return self.bm_stream(db, key, version, 0, false, s);
            }
        };
        Stream::Scan(it.peekable())
    }

    /// First value of the key version in a block after `past` (or,
    /// `reverse`, last value in a block before it), by a seek; `None` when
    /// there is none.
    ///
    /// Callers pass the block that just lost the extreme: values below the
    /// old minimum cannot exist, and the scan must not start below it,
    /// where emptied blocks leave tombstones that an engine scan walks over
    /// until compaction drops them (a bitmap whose low ids are cleared in
    /// order would rescan all of them on every new minimum).
    fn bm_extreme(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        (reverse, past): (bool, u16),
        s: &BitmapSummary,
    ) -> Result<Option<u32>> {
        let from = if reverse {
            past.checked_sub(1)
        } else {
            past.checked_add(1)
        };
        let Some(from) = from else {
            return Ok(None);
        };
        let mut st = self.bm_stream(db, key, version, from, reverse, s);
        let Some(hi) = head(&mut st)? else {
            return Ok(None);
        };
        let bytes = take(&mut st)?;
        let v = view(&bytes)?;
        let r = v.as_ref();
        let lo = if reverse { r.max() } else { r.min() };
        Ok(lo.map(|lo| join(hi, lo)))
    }

    /// Replaces container `hi` (`old` = its previous content, `None` when
    /// absent, stored with `n` delta entries) by `new`, keeping the summary
    /// exact. `ops`: the bits that changed, in order, when the caller has
    /// them: a small edit of a big container is then stored as a delta
    /// entry ([`Txn::bm_delta_fits`]); otherwise the container entry is
    /// rewritten (or deleted when `new` is empty) and its deltas deleted.
    /// `sum_delta`: the change of the offsets' sum when the caller knows
    /// it (single-bit edits), else it is computed from both containers.
    /// `facts`: `new`'s [`BlockFacts`] when the caller has them at no cost
    /// (a single-bit edit of a cached container), for the container
    /// cache's copy of the block.
    fn bm_put(
        &mut self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        hi: u16,
        (old, new, n): (Option<ContainerRef<'_>>, &ContainerBuf, u16),
        (ops, sum_delta, facts): (Option<delta::Ops<'_>>, Option<i128>, Option<BlockFacts>),
    ) -> Result<()> {
        let was_empty = e.s.card == 0;
        let delta = match sum_delta {
            Some(d) => d,
            None => {
                i128::from(container_sum(hi, new.as_ref()))
                    - old.map_or(0, |o| i128::from(container_sum(hi, o)))
            }
        };
        if let Some(o) = old {
            census(&mut e.s, o, false);
        }
        census(&mut e.s, new.as_ref(), true);
        e.s.sum = u64::try_from(i128::from(e.s.sum) + delta).unwrap_or(0);
        let sub = hi.to_be_bytes();
        let version = e.meta.version;
        match ops {
            Some(ops) if old.is_some() && Self::bm_delta_fits((n, ops, new)) => {
                self.bm_put_delta(db, key, e, hi, n, (ops, new, facts));
            }
            _ if new.is_empty() => {
                if old.is_some() {
                    self.data_delete(db, key, version, &sub);
                    self.bm_drop_deltas(db, key, e, hi, n);
                    self.bm_note_write(db, key, version, hi);
                    self.bm_written_set((db, version, hi), WrittenBlock::Gone);
                }
            }
            _ => {
                self.data_put(db, key, version, &sub, new.as_bytes().to_vec());
                self.bm_drop_deltas(db, key, e, hi, n);
                match facts.filter(|_| self.inner.ccache.enabled()) {
                    // Known facts: the commit need not parse the bytes
                    // again to cache them with their facts.
                    Some(f) => {
                        let dk = keys::data_key(db, key, version, &sub);
                        let bytes = padded_with(new.as_bytes(), 0, Some(f));
                        self.cc_pending.record_update((version, hi, dk), bytes);
                    }
                    None => self.bm_note_write(db, key, version, hi),
                }
                self.bm_written_set((db, version, hi), WrittenBlock::Entry);
            }
        }
        // Extremes: only the edited block can move them.
        if e.s.card == 0 {
            e.s.min = 0;
            e.s.max = 0;
            return Ok(());
        }
        let new_min = new.as_ref().min().map(|lo| join(hi, lo));
        let new_max = new.as_ref().max().map(|lo| join(hi, lo));
        if was_empty {
            e.s.min = new_min.unwrap_or(0);
            e.s.max = new_max.unwrap_or(0);
            return Ok(());
        }
        let (min_hi, max_hi) = ((e.s.min >> 16) as u16, (e.s.max >> 16) as u16);
        if hi <= min_hi {
            match new_min {
                Some(m) => e.s.min = m,
                None => {
                    let s = e.s;
                    e.s.min = self
                        .bm_extreme(db, key, e.meta.version, (false, hi), &s)?
                        .unwrap_or(0);
                }
            }
        }
        if hi >= max_hi {
            match new_max {
                Some(m) => e.s.max = m,
                None => {
                    let s = e.s;
                    e.s.max = self
                        .bm_extreme(db, key, e.meta.version, (true, hi), &s)?
                        .unwrap_or(0);
                }
            }
        }
        Ok(())
    }

    /// Applies `f` to the container of each block in `blocks` (ascending),
    /// creating absent ones empty.
    fn bm_edit_blocks(
        &mut self,
        db: u16,
        key: &[u8],
        e: &mut Edit,
        blocks: impl IntoIterator<Item = u16>,
        mut f: impl FnMut(u16, &mut ContainerBuf),
    ) -> Result<()> {
        for hi in blocks {
            let (old, n) = match self.bm_container(db, key, e.meta.version, hi, Some(&e.s))? {
                Some((c, n)) => (Some(c), n),
                None => (None, 0),
            };
            let mut new = old.clone().unwrap_or_default();
            f(hi, &mut new);
            if old.as_ref() != Some(&new) {
                self.bm_put(
                    db,
                    key,
                    e,
                    hi,
                    (old.as_ref().map(ContainerBuf::as_ref), &new, n),
                    (None, None, None),
                )?;
            }
        }
        Ok(())
    }

    // ----- writes -------------------------------------------------------

    /// TR.SETBIT: sets bit `off` to `value`; returns its previous value.
    /// Creates the key even when `value` is false (open point 6).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_setbit(&mut self, db: u16, key: &[u8], off: u32, value: bool) -> Result<bool> {
        if self.keep_dirty {
            if self.writes_nothing() && self.inner.dirty.enabled() {
                if let Some(prev) = self.bm_setbit_dirty(db, key, off, value)? {
                    return Ok(prev);
                }
            }
            // Not the tier's (refused, the tier off, or this `Txn` has
            // written already): the normal path, on a clean key. Written
            // on top of a dirty key, the edit would be hidden by its dirty
            // state and then undone by its absorb.
            self.bm_absorb(&keys::KeyBuf::meta(db, key));
        }
        let Some(mut e) = self.bm_open(db, key, true)? else {
            return Ok(false);
        };
        let (hi, lo) = split(off);
        let old = self.bm_get(db, key, e.meta.version, hi, Some(&e.s))?;
        let n = old.as_ref().map_or(0, Bytes::deltas);
        let old_facts = old.as_ref().and_then(cached_facts);
        let old = old.as_ref().map(view).transpose()?;
        let old = old.as_ref().map(ContainerView::as_ref);
        let prev = old.is_some_and(|c| c.contains(lo));
        if prev != value {
            let mut new = old.map_or_else(ContainerBuf::default, |c| c.to_buf());
            if value {
                new.insert(lo);
            } else {
                new.remove(lo);
            }
            let d = if value {
                i128::from(off)
            } else {
                -i128::from(off)
            };
            let facts = old_facts.and_then(|f| f.after_flip(new.as_ref(), lo, value));
            self.bm_put(
                db,
                key,
                &mut e,
                hi,
                (old, &new, n),
                (Some(&[(lo, value)]), Some(d), facts),
            )?;
        } else if !e.created {
            return Ok(prev);
        }
        self.bm_finish(db, key, e)?;
        Ok(prev)
    }

    /// TR.SETBITS / TR.APPENDINTARRAY: sets every listed bit; returns the
    /// cardinality after the update.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_setbits(&mut self, db: u16, key: &[u8], offs: &[u32]) -> Result<u64> {
        self.tr_bits(db, key, offs, true).map(|(card, _)| card)
    }

    /// TR.CLEARBITS: clears every listed bit; returns how many changed from
    /// 1 to 0 (a repeated offset counts once). A missing key stays missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_clearbits(&mut self, db: u16, key: &[u8], offs: &[u32]) -> Result<u64> {
        if self.meta_of(db, key, Kind::Bitmap)?.is_none() {
            return Ok(0);
        }
        self.tr_bits(db, key, offs, false)
            .map(|(_, changed)| changed)
    }

    /// Sets or clears the listed bits, container by container; returns
    /// (cardinality after, bits changed).
    fn tr_bits(&mut self, db: u16, key: &[u8], offs: &[u32], set: bool) -> Result<(u64, u64)> {
        let Some(mut e) = self.bm_open(db, key, set)? else {
            return Ok((0, 0));
        };
        let mut sorted = offs.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut changed = 0u64;
        let mut i = 0;
        while i < sorted.len() {
            let hi = split(sorted[i]).0;
            let j = i + sorted[i..].partition_point(|&v| split(v).0 == hi);
            let (old, n) = match self.bm_container(db, key, e.meta.version, hi, Some(&e.s))? {
                Some((c, n)) => (Some(c), n),
                None => (None, 0),
            };
            let mut new = old.clone().unwrap_or_default();
            let mut delta = 0i128;
            let mut ops: Vec<(u16, bool)> = Vec::new();
            for &v in &sorted[i..j] {
                let hit = if set {
                    new.insert(v as u16)
                } else {
                    new.remove(v as u16)
                };
                if hit {
                    changed += 1;
                    delta += i128::from(v);
                    if ops.len() <= delta::MAX_DELTA_OPS {
                        ops.push((v as u16, set));
                    }
                }
            }
            if old.as_ref() != Some(&new) && !(old.is_none() && new.is_empty()) {
                let d = if set { delta } else { -delta };
                // Over MAX_DELTA_OPS changes: `ops` is cut short, and too
                // long for a delta, so the container is rewritten.
                self.bm_put(
                    db,
                    key,
                    &mut e,
                    hi,
                    (old.as_ref().map(ContainerBuf::as_ref), &new, n),
                    (Some(&ops), Some(d), None),
                )?;
            }
            i = j;
        }
        if changed == 0 && !e.created {
            return Ok((e.s.card, 0));
        }
        let card = self.bm_finish(db, key, e)?;
        Ok((card, changed))
    }

    /// TR.SETRANGE / TR.FLIPRANGE over `[start, end]` (inclusive, `start <=
    /// end`); creates the key; returns the cardinality after (open point 1).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_range_write(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        end: u32,
        op: RangeOp,
    ) -> Result<u64> {
        let Some(mut e) = self.bm_open(db, key, true)? else {
            return Ok(0);
        };
        let (shi, slo) = split(start);
        let (ehi, elo) = split(end);
        self.bm_edit_blocks(db, key, &mut e, shi..=ehi, |hi, c| {
            let lo = if hi == shi { slo } else { 0 };
            let up = if hi == ehi { elo } else { u16::MAX };
            match op {
                RangeOp::Set => c.add_range(lo, up),
                RangeOp::Flip => c.flip_range(lo, up),
            }
        })?;
        self.bm_finish(db, key, e)
    }

    /// TR.APPENDBITARRAY: writes `bits` (bytes `b'0'` / `b'1'`, validated by
    /// the caller) to offsets `first ..`, overwriting; creates the key;
    /// returns the cardinality after (open point 1). The caller checks that
    /// the window ends at or below 2^32 − 1.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_write_bits(&mut self, db: u16, key: &[u8], first: u32, bits: &[u8]) -> Result<u64> {
        let Some(mut e) = self.bm_open(db, key, true)? else {
            return Ok(0);
        };
        if bits.is_empty() {
            return self.bm_finish(db, key, e);
        }
        let last = u64::from(first) + bits.len() as u64 - 1;
        let last = u32::try_from(last).unwrap_or(u32::MAX);
        let (shi, _) = split(first);
        let (ehi, _) = split(last);
        self.bm_edit_blocks(db, key, &mut e, shi..=ehi, |hi, c| {
            let block_start = u64::from(hi) << 16;
            let lo = u64::from(first).max(block_start);
            let up = u64::from(last).min(block_start + BLOCK - 1);
            for v in lo..=up {
                let ch = bits[(v - u64::from(first)) as usize];
                let low = (v - block_start) as u16;
                if ch == b'1' {
                    c.insert(low);
                } else {
                    c.remove(low);
                }
            }
        })?;
        self.bm_finish(db, key, e)
    }

    /// TR.SETINTARRAY / TR.SETBITARRAY / TR.IMPORT: replaces the whole value
    /// by `b` under a new version (no TTL: open point 14).
    ///
    /// # Errors
    /// `WrongType` when the key holds another type.
    pub fn tr_replace(&mut self, db: u16, key: &[u8], b: &Bitmap) -> Result<u64> {
        self.meta_of(db, key, Kind::Bitmap)?;
        let version = self.new_data_version()?;
        for (hi, c) in b.containers() {
            self.data_put_fresh(db, key, version, &hi.to_be_bytes(), c.as_bytes().to_vec())?;
        }
        let s = summary_of_bitmap(b);
        self.put_new_bitmap_meta(db, key, version, s)?;
        Ok(s.card)
    }

    /// Writes the meta of a bitmap stored under the fresh `version` (no
    /// expiry: a replaced key loses its TTL).
    fn put_new_bitmap_meta(
        &mut self,
        db: u16,
        key: &[u8],
        version: u64,
        s: BitmapSummary,
    ) -> Result<()> {
        self.put_meta(
            db,
            key,
            KeyMeta {
                version,
                expire_at_ms: 0,
                big: false,
                noint: false,
                summary: Summary::Bitmap(s),
            },
        )
    }

    /// TR.OPTIMIZE: re-encodes each container in its smallest form (runs
    /// where strictly smaller) and folds every delta entry into its
    /// container. `None` when the key is missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_optimize(&mut self, db: u16, key: &[u8]) -> Result<Option<()>> {
        let Some(mut e) = self.bm_open(db, key, false)? else {
            return Ok(None);
        };
        // Read in chunks of about OPTIMIZE_CHUNK_BYTES: only rewritten
        // containers are held (in the overlay), not the whole key.
        let mut after: Option<Vec<u8>> = None;
        loop {
            let scan = self.data_iter(db, key, e.meta.version, after.as_deref(), false);
            let blocks: Vec<FoldedBlock> =
                take_chunk(Folded::new(scan, false), OPTIMIZE_CHUNK_BYTES, |b| {
                    b.1.len()
                })?;
            let Some(&(last, _, _)) = blocks.last() else {
                break;
            };
            // Past block `last`'s last possible delta entry.
            after = Some(delta::delta_sub(last, u16::MAX).to_vec());
            for (hi, bytes, n) in blocks {
                let old = view(&bytes)?.to_buf();
                let mut new = old.clone();
                new.optimize();
                // A rewrite also folds the container's deltas.
                if new != old || n > 0 {
                    self.bm_put(
                        db,
                        key,
                        &mut e,
                        hi,
                        (Some(old.as_ref()), &new, n),
                        (None, Some(0), None),
                    )?;
                }
            }
        }
        self.bm_finish(db, key, e)?;
        Ok(Some(()))
    }

    // ----- reads --------------------------------------------------------

    fn bm_version(&mut self, db: u16, key: &[u8]) -> Result<Option<(u64, BitmapSummary)>> {
        Ok(self
            .meta_of(db, key, Kind::Bitmap)?
            .map(|m| (m.version, summary_of(&m))))
    }

    /// TR.GETBIT.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_getbit(&mut self, db: u16, key: &[u8], off: u32) -> Result<bool> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(false);
        };
        let (hi, lo) = split(off);
        match self.bm_get(db, key, version, hi, Some(&s))? {
            Some(b) => Ok(view(&b)?.as_ref().contains(lo)),
            None => Ok(false),
        }
    }

    /// TR.GETBITS: one flag per offset, in the order given; `None` when the
    /// key is missing (the command then replies an empty array).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_getbits(&mut self, db: u16, key: &[u8], offs: &[u32]) -> Result<Option<Vec<bool>>> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(None);
        };
        let mut cache: Option<(u16, Option<ContainerBuf>)> = None;
        let mut out = Vec::with_capacity(offs.len());
        for &off in offs {
            let (hi, lo) = split(off);
            if cache.as_ref().is_none_or(|(h, _)| *h != hi) {
                cache = Some((
                    hi,
                    self.bm_container(db, key, version, hi, Some(&s))?
                        .map(|(c, _)| c),
                ));
            }
            let hit = cache
                .as_ref()
                .and_then(|(_, c)| c.as_ref())
                .is_some_and(|c| c.as_ref().contains(lo));
            out.push(hit);
        }
        Ok(Some(out))
    }

    /// TR.BITCOUNT with a range: set bits in `[start, end]` (`start <= end`).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_count_range(&mut self, db: u16, key: &[u8], start: u32, end: u32) -> Result<u64> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(0);
        };
        if s.card == 0 {
            return Ok(0);
        }
        if start <= s.min && end >= s.max {
            return Ok(s.card);
        }
        let (shi, slo) = split(start);
        let (ehi, elo) = split(end);
        let mut st = self.bm_stream(db, key, version, shi, false, &s);
        let mut n = 0u64;
        while let Some(hi) = head(&mut st)? {
            if hi > ehi {
                break;
            }
            let bytes = take(&mut st)?;
            let r = view(&bytes)?;
            let r = r.as_ref();
            let lo = if hi == shi { slo } else { 0 };
            let up = if hi == ehi { elo } else { u16::MAX };
            n += u64::from(if lo == 0 && up == u16::MAX {
                r.cardinality()
            } else {
                r.count_range(lo, up)
            });
        }
        Ok(n)
    }

    /// TR.RANK: set bits in `[0, off]`; `None` when the key is missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_rank(&mut self, db: u16, key: &[u8], off: u32) -> Result<Option<u64>> {
        if self.bm_version(db, key)?.is_none() {
            return Ok(None);
        }
        self.tr_count_range(db, key, 0, off).map(Some)
    }

    /// TR.BITPOS (spec 2.4, open point 5): the offset of the `count`-th bit
    /// equal to `value` counting upward from 0 (`count > 0`) or downward
    /// from the highest set bit (`count < 0`); −1 when there is none, the
    /// key is missing, or the answer would pass 2^32 − 1. `count != 0`.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_bitpos(&mut self, db: u16, key: &[u8], value: bool, count: i64) -> Result<i64> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(-1);
        };
        let n = count.unsigned_abs();
        if value {
            if n > s.card || count == 0 {
                return Ok(-1);
            }
            let reverse = count < 0;
            let from = if reverse { u16::MAX } else { 0 };
            let mut st = self.bm_stream(db, key, version, from, reverse, &s);
            let mut left = n; // 1-based position still to skip
            while let Some(hi) = head(&mut st)? {
                let bytes = take(&mut st)?;
                let v = view(&bytes)?;
                let r = v.as_ref();
                let c = u64::from(r.cardinality());
                if left <= c {
                    let idx = if reverse { c - left } else { left - 1 };
                    return Ok(r
                        .select(idx as u32)
                        .map_or(-1, |lo| i64::from(join(hi, lo))));
                }
                left -= c;
            }
            return Ok(-1);
        }
        if count > 0 {
            // Clear bits upward: gaps between containers, holes inside them,
            // then everything above the last container.
            let mut st = self.bm_stream(db, key, version, 0, false, &s);
            let mut left = n;
            let mut next_block: u64 = 0;
            while let Some(hi) = head(&mut st)? {
                let gap = (u64::from(hi) - next_block) * BLOCK;
                if left <= gap {
                    return Ok(fit(next_block * BLOCK + left - 1));
                }
                left -= gap;
                let bytes = take(&mut st)?;
                let v = view(&bytes)?;
                let r = v.as_ref();
                let zeros = BLOCK - u64::from(r.cardinality());
                if left <= zeros {
                    let lo = nth_zero_up(r, left);
                    return Ok(i64::from(join(hi, lo)));
                }
                left -= zeros;
                next_block = u64::from(hi) + 1;
            }
            return Ok(fit(next_block * BLOCK + left - 1));
        }
        // Clear bits downward from the highest set bit (open point 5c).
        if s.card == 0 {
            return Ok(-1);
        }
        let (top_hi, top_lo) = split(s.max);
        let mut st = self.bm_stream(db, key, version, top_hi, true, &s);
        let mut left = n;
        // `expect`: the next block to examine, going down; blocks between
        // it and the next stored one are absent (all clear).
        let mut expect = i64::from(top_hi);
        loop {
            let h = head(&mut st)?;
            let stop = h.map_or(-1, i64::from);
            let gap = (expect - stop).max(0) as u64 * BLOCK;
            if left <= gap {
                return Ok(((expect + 1) as u64 * BLOCK - left) as i64);
            }
            left -= gap;
            let Some(hi) = h else {
                return Ok(-1);
            };
            let bytes = take(&mut st)?;
            let v = view(&bytes)?;
            let r = v.as_ref();
            let top = if hi == top_hi { top_lo } else { u16::MAX };
            let zeros = u64::from(top) + 1 - u64::from(r.rank(top));
            if left <= zeros {
                return Ok(i64::from(join(hi, nth_zero_down(r, top, left))));
            }
            left -= zeros;
            expect = i64::from(hi) - 1;
        }
    }

    /// TR.SCAN: up to `count` set bits `>= start` and the cursor: the next
    /// set bit after them, or 0 when none is left. `None` when missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_scan(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        count: usize,
    ) -> Result<Option<(u32, Vec<u32>)>> {
        let Some(vals) = self.tr_range(db, key, start, u32::MAX, count)? else {
            return Ok(None);
        };
        let mut vals = vals;
        let cursor = if vals.len() > count {
            vals.pop().unwrap_or(0)
        } else {
            0
        };
        Ok(Some((cursor, vals)))
    }

    /// Calls `f` with each set bit in `[start, end]`, ascending, until `f`
    /// returns false: the values stream from the containers, nothing is
    /// collected. Returns false when the key is missing (`f` not called).
    ///
    /// # Errors
    /// `WrongType`; `Corrupt` on a bad container entry.
    pub fn tr_range_each(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        end: u32,
        mut f: impl FnMut(u32) -> bool,
    ) -> Result<bool> {
        let Some((version, s)) = self.bm_version(db, key)? else {
            return Ok(false);
        };
        if s.card == 0 || start > end {
            return Ok(true);
        }
        let (shi, slo) = split(start);
        let mut st = self.bm_stream(db, key, version, shi, false, &s);
        while let Some(hi) = head(&mut st)? {
            if join(hi, 0) > end {
                break;
            }
            let bytes = take(&mut st)?;
            let v = view(&bytes)?;
            let r = v.as_ref();
            let it = if hi == shi {
                r.iter_from(slo)
            } else {
                r.iter()
            };
            for lo in it {
                let x = join(hi, lo);
                if x > end || !f(x) {
                    return Ok(true);
                }
            }
        }
        Ok(true)
    }

    /// TR.RANGE: the set bits in `[start, end]`, ascending, at most `max + 1`
    /// of them (a reply longer than `max` tells the caller the limit was
    /// passed). `None` when the key is missing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_range(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        end: u32,
        max: usize,
    ) -> Result<Option<Vec<u32>>> {
        let mut out = Vec::new();
        let found = self.tr_range_each(db, key, start, end, |x| {
            out.push(x);
            out.len() <= max
        })?;
        Ok(found.then_some(out))
    }

    /// TR.RANGEBITARRAY: bits `start..=end` as `'0'` / `'1'` bytes; `None`
    /// when the key is missing. The caller bounds the width; the string is
    /// the only allocation (the set bits are not collected first).
    ///
    /// # Errors
    /// `WrongType`; `Corrupt` on a bad container entry.
    pub fn tr_range_bits(
        &mut self,
        db: u16,
        key: &[u8],
        start: u32,
        end: u32,
    ) -> Result<Option<Vec<u8>>> {
        let width = (u64::from(end) - u64::from(start) + 1) as usize;
        let mut out = Vec::new();
        let found = self.tr_range_each(db, key, start, end, |v| {
            if out.is_empty() {
                out = vec![b'0'; width];
            }
            out[(v - start) as usize] = b'1';
            true
        })?;
        if found && out.is_empty() {
            out = vec![b'0'; width];
        }
        Ok(found.then_some(out))
    }

    /// The whole bitmap in memory (TR.EXPORT); `None` when missing.
    ///
    /// # Errors
    /// `WrongType`; `Corrupt` on a bad container entry.
    pub fn tr_load(&mut self, db: u16, key: &[u8]) -> Result<Option<Bitmap>> {
        let Some((version, _)) = self.bm_version(db, key)? else {
            return Ok(None);
        };
        let mut pairs = Vec::new();
        for e in Folded::new(self.data_iter(db, key, version, None, false), false) {
            let (hi, bytes, _) = e?;
            pairs.push((hi, view(&bytes)?.to_buf()));
        }
        Bitmap::from_containers(pairs).map(Some).map_err(corrupt)
    }

    // ----- multi-key ----------------------------------------------------

    /// Versions and summaries of the sources (`None` = missing), checking
    /// every type first.
    fn bm_sources(&mut self, db: u16, keys: &[&[u8]]) -> Result<Vec<Option<(u64, BitmapSummary)>>> {
        keys.iter().map(|k| self.bm_version(db, k)).collect()
    }

    /// Runs `op` over the sources in one merge scan, handing each non-empty
    /// result container to `sink` in block order, parsed and as its
    /// serialized bytes (a source's own bytes where the result is that
    /// source's container: nothing is copied then). Missing sources are
    /// empty (open point 3). Key counts are the caller's to check.
    fn bm_merge(
        &mut self,
        db: u16,
        op: BitOp,
        keys: &[&[u8]],
        sink: &mut MergeSink<'_>,
    ) -> Result<()> {
        let srcs = self.bm_sources(db, keys)?;
        // OR and XOR take every container of every source.
        let whole = matches!(op, BitOp::Or | BitOp::Xor);
        let mut streams: Vec<Option<Stream<'_>>> = srcs
            .iter()
            .zip(keys)
            .map(|(s, k)| {
                s.filter(|(_, sum)| sum.card > 0)
                    .map(|(v, sum)| self.bm_source_stream(db, k, (v, &sum), whole))
            })
            .collect();
        match op {
            BitOp::And => {
                if streams.iter().any(Option::is_none) {
                    return Ok(());
                }
                let mut ss: Vec<Stream<'_>> = streams.into_iter().flatten().collect();
                let mut bufs = Vec::with_capacity(ss.len());
                'outer: loop {
                    let mut target = 0u16;
                    for s in &mut ss {
                        match head(s)? {
                            Some(h) => target = target.max(h),
                            None => break 'outer,
                        }
                    }
                    let mut all = true;
                    for s in &mut ss {
                        skip_below(s, target)?;
                        match head(s)? {
                            Some(h) if h == target => {}
                            Some(_) => all = false,
                            None => break 'outer,
                        }
                    }
                    if all {
                        bufs.clear();
                        for s in &mut ss {
                            bufs.push(take(s)?);
                        }
                        sink_block(target, &bufs, sink, |refs| match refs {
                            [a, b] => setops::and(*a, *b),
                            _ => setops::intersection_many(refs),
                        })?;
                    }
                }
            }
            BitOp::Or | BitOp::Xor => {
                let mut ss: Vec<Stream<'_>> = streams.into_iter().flatten().collect();
                let mut bufs = Vec::with_capacity(ss.len());
                loop {
                    let mut low: Option<u16> = None;
                    for s in &mut ss {
                        if let Some(h) = head(s)? {
                            low = Some(low.map_or(h, |l| l.min(h)));
                        }
                    }
                    let Some(low) = low else { break };
                    bufs.clear();
                    for s in &mut ss {
                        if head(s)? == Some(low) {
                            bufs.push(take(s)?);
                        }
                    }
                    sink_block(low, &bufs, sink, |refs| match (op, refs) {
                        (BitOp::Or, [a, b]) => setops::or(*a, *b),
                        (BitOp::Or, _) => setops::union_many(refs),
                        _ => {
                            let mut acc = setops::xor(refs[0], refs[1]);
                            for r in &refs[2..] {
                                setops::xor_in_place(&mut acc, *r);
                            }
                            acc
                        }
                    })?;
                }
            }
            BitOp::Diff => {
                let mut b = streams.pop().flatten();
                let Some(mut a) = streams.pop().flatten() else {
                    return Ok(());
                };
                while let Some(hi) = head(&mut a)? {
                    let abytes = take(&mut a)?;
                    let av = view(&abytes)?;
                    let mut matched = None;
                    if let Some(bs) = b.as_mut() {
                        skip_below(bs, hi)?;
                        if head(bs)? == Some(hi) {
                            matched = Some(take(bs)?);
                        }
                    }
                    match &matched {
                        Some(bb) => {
                            let c = setops::andnot(av.as_ref(), view(bb)?.as_ref());
                            if !c.is_empty() {
                                sink(hi, c.as_ref(), Piece::Built(c.as_bytes()));
                            }
                        }
                        None if !av.as_ref().is_empty() => {
                            sink(hi, av.as_ref(), Piece::Source(&abytes));
                        }
                        None => {}
                    }
                }
            }
            BitOp::Not => {
                let Some(Some((_, s))) = srcs.first() else {
                    return Ok(());
                };
                if s.card == 0 {
                    return Ok(());
                }
                let (max_hi, max_lo) = split(s.max);
                let mut src = streams.pop().flatten();
                for hi in 0..=max_hi {
                    let up = if hi == max_hi { max_lo } else { u16::MAX };
                    let mut cur = None;
                    if let Some(st) = src.as_mut() {
                        if head(st)? == Some(hi) {
                            cur = Some(take(st)?);
                        }
                    }
                    let mut c = match &cur {
                        Some(b) => view(b)?.to_buf(),
                        None => ContainerBuf::new(),
                    };
                    c.flip_range(0, up);
                    if !c.is_empty() {
                        sink(hi, c.as_ref(), Piece::Built(c.as_bytes()));
                    }
                }
            }
        }
        Ok(())
    }

    /// TR.BITOP: stores `op` over `srcs` in `dest` (replacing any bitmap
    /// there, no TTL: open point 14; an empty result is kept as an empty
    /// bitmap: open point 7) and returns the result's cardinality.
    ///
    /// # Errors
    /// `WrongType` when a source or the destination holds another type
    /// (open point 9); nothing is written then.
    pub fn tr_bitop(&mut self, db: u16, dest: &[u8], op: BitOp, srcs: &[&[u8]]) -> Result<u64> {
        // The destination's type is checked once the result is known (one
        // meta read; a wrong-typed destination only costs the merge). The
        // result's containers as bytes to store, and its summary
        // built as they come (census, sum, extremes: as
        // `summary_of_bitmap`), without an in-memory `Bitmap`.
        let mut s = BitmapSummary::default();
        let mut out: Vec<(u16, Vec<u8>)> = Vec::new();
        if let Some(prev) = self.tier_may_take(db, dest) {
            // Collected as the tier keeps them: padded, and shared with
            // the sources' cache entries where a block is one source's own.
            let mut kept: KeptBlocks = Vec::with_capacity(32);
            self.bm_merge(db, op, srcs, &mut |hi, r, piece| {
                let (f, bytes) = piece.kept(r);
                summary_push_facts(&mut s, hi, r, f);
                kept.push((hi, bytes));
            })?;
            let Some(kept) = self.bm_bitop_dirty(db, dest, kept, (&prev, &s))? else {
                return Ok(s.card);
            };
            out = kept
                .into_iter()
                .map(|(hi, a)| (hi, a[PAD..].to_vec()))
                .collect();
        } else {
            self.bm_merge(db, op, srcs, &mut |hi, r, piece| {
                summary_push(&mut s, hi, r);
                out.push((hi, piece.bytes().to_vec()));
            })?;
        }
        if self.keep_dest.is_some() {
            // Refused by the tier: the normal path, on a clean key.
            self.keep_dest = None;
            self.bm_absorb(&keys::KeyBuf::meta(db, dest));
        }
        let prev = self.meta_of(db, dest, Kind::Bitmap)?;
        if out.is_empty() && prev.as_ref().is_some_and(is_plain_empty_bitmap) {
            // The result is the key's current state (an empty bitmap
            // without expiry): nothing to write. The key still counts as
            // modified, as in Redis (WATCH).
            self.touch(db, dest);
            return Ok(0);
        }
        if let Some(m) = prev.filter(|m| rewrite_in_place(&summary_of(m), &s, out.len())) {
            let version = m.version;
            self.bm_rewrite(db, dest, (m, &s), &mut out)?;
            self.put_new_bitmap_meta(db, dest, version, s)?;
            self.touch(db, dest);
            return Ok(s.card);
        }
        let version = self.new_data_version()?;
        for (hi, bytes) in out {
            self.data_put_fresh(db, dest, version, &hi.to_be_bytes(), bytes)?;
        }
        self.put_new_bitmap_meta(db, dest, version, s)?;
        Ok(s.card)
    }

    /// True when [`Txn::bm_bitop_dirty`] may take a result into `dest`,
    /// as far as it can be told before the result is known: this `Txn`
    /// was begun by `Store::begin_keeping` for `dest` and has written
    /// nothing, the tier is on, and `dest` is a bitmap without expiry (the
    /// tier never changes a key's existence or expiry, which SCAN, DBSIZE
    /// and the expiry index read from the `Kv`). Returns `dest`'s summary
    /// when it may, `None` when not; an error reading `dest` answers
    /// `None` (it surfaces again on the ordinary path).
    fn tier_may_take(&mut self, db: u16, dest: &[u8]) -> Option<BitmapSummary> {
        let mk = keys::KeyBuf::meta(db, dest);
        if self.keep_dest.as_deref() != Some(&mk[..])
            || !self.writes_nothing()
            || !self.inner.dirty.enabled()
        {
            return None;
        }
        match self.meta_of(db, dest, Kind::Bitmap) {
            Ok(Some(m)) if m.expire_at_ms == 0 => Some(summary_of(&m)),
            _ => None,
        }
    }

    /// The write-back tier's TR.BITOP (`docs/handoff/write-back-tier.md`,
    /// "TR.BITOP results"): the result `out` (summary `s`) becomes
    /// `dest`'s state under a fresh version, kept whole in the dirty map
    /// and logged as one value record (synced by the commit under
    /// `always`); nothing is written to the `Kv`, and the old version's
    /// entries become garbage once the key is absorbed. Called only where
    /// [`Txn::tier_may_take`] held before the merge (which writes
    /// nothing), with the summary it returned (`prev`); returns `None`
    /// when taken, and `out` back when the result is still not the tier's
    /// to take: it is empty or over `oplog::MAX_VALUE`, or the budget is
    /// full.
    ///
    /// # Errors
    /// `Io` when the log cannot be written (nothing changed then).
    fn bm_bitop_dirty(
        &mut self,
        db: u16,
        dest: &[u8],
        out: KeptBlocks,
        (prev, s): (&BitmapSummary, &BitmapSummary),
    ) -> Result<Option<KeptBlocks>> {
        let mk = keys::KeyBuf::meta(db, dest);
        let body: usize = out.iter().map(|(_, b)| 6 + b.len() - PAD).sum();
        let padded_bytes: usize = out.iter().map(|(_, b)| b.len()).sum();
        if out.is_empty()
            || body > oplog::MAX_VALUE
            || !self.inner.dirty.has_room(padded_bytes as u64)
        {
            return Ok(Some(out));
        }
        // Equal contents have equal summaries (stored deltas aside): only
        // then are the bytes compared.
        let same = BitmapSummary { deltas: 0, ..*prev } == *s && {
            let bare: Vec<(u16, &[u8])> = out.iter().map(|(hi, b)| (*hi, &b[PAD..])).collect();
            self.inner.dirty.holds_whole(&mk, &bare)
        };
        if same {
            // The same result again (a recomputed audience that did not
            // change): the key already is it, logged.
            self.touch(db, dest);
            return Ok(None);
        }
        let version = self.new_data_version()?;
        // One list for the log record and the dirty map.
        let blocks: dirty::ValueBlocks = out.into();
        let meta = KeyMeta {
            version,
            expire_at_ms: 0,
            big: false,
            noint: false,
            summary: Summary::Bitmap(*s),
        };
        {
            // Under the log's lock, as in `bm_setbit_dirty`.
            let dirty = &self.inner.dirty;
            let mut log = dirty.log.lock();
            let Some(log) = log.as_mut() else {
                return Ok(Some(blocks.to_vec()));
            };
            let seq = log.append_value(db, version, dest, Arc::clone(&blocks), PAD)?;
            dirty.record_value(&mk, meta, blocks, seq);
        }
        self.oplog_appended = true;
        self.touch(db, dest);
        Ok(None)
    }

    /// Recovery of a logged TR.BITOP result (`oplog::Change::Value`):
    /// `key` becomes the bitmap of `blocks` (laid out as
    /// `oplog::encode_blocks` does) under a fresh version, which it
    /// returns; the key is created if missing. `None`, changing nothing,
    /// when the key holds another type: the record's destination was a
    /// bitmap, so the log does not lead to that state.
    ///
    /// # Errors
    /// `Corrupt` for bytes that are not valid non-empty containers in
    /// ascending block order.
    pub(crate) fn tr_restore_value(
        &mut self,
        db: u16,
        key: &[u8],
        blocks: &[u8],
    ) -> Result<Option<u64>> {
        let bad = || StoreError::corrupt("operation log: bad value record");
        let list = oplog::decode_blocks(blocks).ok_or_else(bad)?;
        match self.meta_of(db, key, Kind::Bitmap) {
            Err(StoreError::WrongType) => return Ok(None),
            r => r?,
        };
        let mut s = BitmapSummary::default();
        let mut last: Option<u16> = None;
        for &(hi, b) in &list {
            let v = view(b)?;
            if last.is_some_and(|l| l >= hi) || v.as_ref().is_empty() {
                return Err(bad());
            }
            last = Some(hi);
            summary_push(&mut s, hi, v.as_ref());
        }
        let version = self.new_data_version()?;
        for (hi, b) in list {
            self.data_put_fresh(db, key, version, &hi.to_be_bytes(), b.to_vec())?;
        }
        self.put_new_bitmap_meta(db, key, version, s)?;
        Ok(Some(version))
    }

    /// Makes the containers of `dest`'s live version (`m`) those of `out`
    /// (a result, in block order), writing only the blocks that differ:
    /// a block whose stored bytes equal the result's is left alone, one
    /// the result lacks is deleted, every other is written. A block with
    /// delta entries is always rewritten (its deltas deleted), so the
    /// version ends with none. `s`: the result's summary; the caller
    /// writes the meta. The old containers are read as
    /// [`Txn::bm_old_blocks`] says.
    fn bm_rewrite(
        &mut self,
        db: u16,
        dest: &[u8],
        (m, s): (KeyMeta, &BitmapSummary),
        out: &mut [(u16, Vec<u8>)],
    ) -> Result<()> {
        let ps = summary_of(&m);
        let version = m.version;
        let olds = self.bm_old_blocks(db, dest, (version, &ps), out)?;
        // Read from the overlay from now on (rare: an edit and a TR.BITOP
        // into the same key in one `Txn`).
        self.bm_written
            .retain(|&(d, v, _), _| (d, v) != (db, version));
        let mut gone: Vec<(u16, u16)> = Vec::new();
        let mut write = vec![true; out.len()];
        let mut drop_deltas: Vec<(u16, u16)> = Vec::new();
        let mut i = 0;
        for (hi, n, equal) in olds {
            while out.get(i).is_some_and(|(h, _)| *h < hi) {
                i += 1;
            }
            match out.get(i) {
                Some((h, _)) if *h == hi => {
                    if equal {
                        write[i] = false;
                    } else if n > 0 {
                        drop_deltas.push((hi, n));
                    }
                }
                _ => gone.push((hi, n)),
            }
        }
        let mut e = Edit {
            meta: m,
            s: ps,
            created: false,
        };
        for (hi, n) in gone {
            self.data_delete(db, dest, version, &hi.to_be_bytes());
            self.bm_drop_deltas(db, dest, &mut e, hi, n);
            self.bm_note_write(db, dest, version, hi);
        }
        for (hi, n) in drop_deltas {
            self.bm_drop_deltas(db, dest, &mut e, hi, n);
        }
        let fill = self.bm_result_cached(s);
        for ((hi, bytes), _) in out.iter_mut().zip(write).filter(|(_, w)| *w) {
            let sub = hi.to_be_bytes();
            if fill {
                let dk = keys::data_key(db, dest, version, &sub);
                self.cc_pending
                    .record_known((version, *hi, dk), padded(bytes, 0), false);
            } else {
                self.bm_note_write(db, dest, version, *hi);
            }
            self.data_put(db, dest, version, &sub, std::mem::take(bytes));
        }
        if fill {
            // The version now holds exactly the result's blocks.
            let blocks: Vec<u16> = out.iter().map(|(hi, _)| *hi).collect();
            self.cc_pending.record_dir(version, blocks.into());
        }
        Ok(())
    }

    /// The blocks of a key version (`ps`: its summary) as `(block, delta
    /// entries, whether the stored container equals the result's bytes
    /// for the block in `out` and has no deltas)`, ascending. From the
    /// cached directory when there is one (reading only the containers
    /// `out` also holds, through the cache); else one raw scan of the
    /// version's entries, compared as bytes: equal to a result's bytes
    /// means valid, so nothing is parsed, and nothing enters the cache.
    fn bm_old_blocks(
        &self,
        db: u16,
        key: &[u8],
        (version, ps): (u64, &BitmapSummary),
        out: &[(u16, Vec<u8>)],
    ) -> Result<Vec<(u16, u16, bool)>> {
        let result = |i: &mut usize, hi: u16| -> Option<&[u8]> {
            while out.get(*i).is_some_and(|(h, _)| *h < hi) {
                *i += 1;
            }
            out.get(*i).filter(|(h, _)| *h == hi).map(|(_, b)| &b[..])
        };
        let mut olds: Vec<(u16, u16, bool)> = Vec::new();
        let mut i = 0;
        let cc = &self.inner.ccache;
        let clean = cc.enabled()
            && (self.data_overlay_is_empty()
                || !self.data_overlay_has_prefix(&keys::data_prefix(db, key, version)));
        if let Some(dir) = cc.dir(version).filter(|_| clean) {
            for &hi in dir.iter() {
                let new = result(&mut i, hi);
                if new.is_none() && ps.deltas == 0 {
                    olds.push((hi, 0, false));
                    continue;
                }
                let b = self
                    .bm_get_stored(db, key, (version, Some(ps)), hi, false)?
                    .ok_or_else(|| {
                        StoreError::corrupt(
                            "bitmap container directory names a container that is not stored",
                        )
                    })?;
                let n = b.deltas();
                olds.push((hi, n, n == 0 && new.is_some_and(|new| *b == *new)));
            }
            return Ok(olds);
        }
        for e in self.data_iter(db, key, version, None, false) {
            let (sub, v) = e?;
            match *sub {
                [a, b] => {
                    let hi = u16::from_be_bytes([a, b]);
                    let equal = result(&mut i, hi).is_some_and(|new| v == new);
                    olds.push((hi, 0, equal));
                }
                [a, b, _, _] => match olds.last_mut() {
                    Some((hi, n, equal)) if *hi == u16::from_be_bytes([a, b]) => {
                        *n += 1;
                        *equal = false;
                    }
                    _ => {
                        return Err(StoreError::corrupt(
                            "bitmap delta entry without its container",
                        ))
                    }
                },
                _ => return Err(StoreError::corrupt("bitmap data entry with a bad subkey")),
            }
        }
        Ok(olds)
    }

    /// True when the containers a TR.BITOP writes over a destination in
    /// place (result summary `s`) enter the container cache with the
    /// version's directory, so that the next overwrite compares from
    /// memory: unless the result is too big for the cache (as
    /// [`Txn::bm_stream`]'s fill). A result stored under a fresh version
    /// is not cached: most are written once, and the copy of every
    /// container that filling takes made census1881's ORs into new keys
    /// about a quarter slower.
    fn bm_result_cached(&self, s: &BitmapSummary) -> bool {
        let cc = &self.inner.ccache;
        cc.enabled() && key_bytes(s) <= cc.capacity() / 8
    }

    /// TR.BITOPCARD: the cardinality of `op` over `srcs`; stores nothing.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_bitopcard(&mut self, db: u16, op: BitOp, srcs: &[&[u8]]) -> Result<u64> {
        if srcs.len() == 2 && matches!(op, BitOp::And | BitOp::Or | BitOp::Xor | BitOp::Diff) {
            let (inter, ca, cb) = self.bm_and_len(db, srcs[0], srcs[1])?;
            return Ok(match op {
                BitOp::And => inter,
                // Saturating: a summary that disagrees with the stored
                // containers (corrupt bytes) must not wrap.
                BitOp::Or => (ca + cb).saturating_sub(inter),
                BitOp::Xor => (ca + cb).saturating_sub(2 * inter),
                _ => ca.saturating_sub(inter),
            });
        }
        let mut n = 0u64;
        self.bm_merge(db, op, srcs, &mut |_, r, _| n += u64::from(r.cardinality()))?;
        Ok(n)
    }

    /// `(|A ∩ B|, |A|, |B|)` for two keys (missing = empty): the
    /// intersection from the blocks both hold, the cardinalities from the
    /// summaries (exact), so no container that only one side holds is
    /// read. Other two-key counts follow: |A ∪ B| = |A| + |B| − |A ∩ B|.
    fn bm_and_len(&mut self, db: u16, ka: &[u8], kb: &[u8]) -> Result<(u64, u64, u64)> {
        let mut inter = 0u64;
        let (ca, cb) = self.bm_pairs(db, (ka, kb), (false, false), &mut |a, b| {
            if let (Some(a), Some(b)) = (a, b) {
                inter += u64::from(setops::and_len(a, b));
            }
            true
        })?;
        Ok((inter, ca, cb))
    }

    /// Walks two bitmaps' containers in block order, calling `f` with the
    /// pair present at each block (either side `None` when absent there);
    /// stops early when `f` returns false. Missing keys are empty. A block
    /// that only one side holds is handed to `f` only when that side is
    /// `lone` (`(a, b)`); otherwise it is stepped over unread, and the walk
    /// ends where no further block can reach `f`. Returns the two keys'
    /// cardinalities, from their summaries.
    fn bm_pairs(
        &mut self,
        db: u16,
        (ka, kb): (&[u8], &[u8]),
        lone: (bool, bool),
        f: &mut dyn FnMut(Option<ContainerRef<'_>>, Option<ContainerRef<'_>>) -> bool,
    ) -> Result<(u64, u64)> {
        let srcs = self.bm_sources(db, &[ka, kb])?;
        let cards = (
            srcs[0].map_or(0, |(_, sum)| sum.card),
            srcs[1].map_or(0, |(_, sum)| sum.card),
        );
        let mut sa = srcs[0].map(|(v, sum)| self.bm_source_stream(db, ka, (v, &sum), false));
        let mut sb = srcs[1].map(|(v, sum)| self.bm_source_stream(db, kb, (v, &sum), false));
        loop {
            let ha = match sa.as_mut() {
                Some(s) => head(s)?,
                None => None,
            };
            let hb = match sb.as_mut() {
                Some(s) => head(s)?,
                None => None,
            };
            // Which sides this block has; a side that is alone there and
            // not wanted is advanced to the other side's block instead.
            let (ta, tb) = match (ha, hb) {
                (None, None) => return Ok(cards),
                (Some(a), Some(b)) if a == b => (true, true),
                _ => {
                    // One side alone at the lower block: `a_first` when it
                    // is the first key's.
                    let a_first = match (ha, hb) {
                        (Some(a), Some(b)) => a < b,
                        (a, _) => a.is_some(),
                    };
                    let (wanted, alone, other) = if a_first {
                        (lone.0, sa.as_mut(), hb)
                    } else {
                        (lone.1, sb.as_mut(), ha)
                    };
                    if !wanted {
                        match (other, alone) {
                            (Some(t), Some(s)) => skip_below(s, t)?,
                            _ => return Ok(cards),
                        }
                        continue;
                    }
                    (a_first, !a_first)
                }
            };
            let ba = match (ta, sa.as_mut()) {
                (true, Some(s)) => Some(take(s)?),
                _ => None,
            };
            let bb = match (tb, sb.as_mut()) {
                (true, Some(s)) => Some(take(s)?),
                _ => None,
            };
            let va = ba.as_ref().map(view).transpose()?;
            let vb = bb.as_ref().map(view).transpose()?;
            if !f(
                va.as_ref().map(ContainerView::as_ref),
                vb.as_ref().map(ContainerView::as_ref),
            ) {
                return Ok(cards);
            }
        }
    }

    /// TR.JACCARD: |A ∩ B| / |A ∪ B|; 0 when both are empty or missing
    /// (open point 3).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_jaccard(&mut self, db: u16, ka: &[u8], kb: &[u8]) -> Result<f64> {
        let (inter, ca, cb) = self.bm_and_len(db, ka, kb)?;
        let union = (ca + cb).saturating_sub(inter);
        Ok(if union == 0 {
            0.0
        } else {
            inter as f64 / union as f64
        })
    }

    /// TR.CONTAINS: true when every set bit of `ka` is set in `kb` (a
    /// missing or empty `ka` is a subset: open point 3). Stops at the first
    /// counter-example.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn tr_contains(&mut self, db: u16, ka: &[u8], kb: &[u8]) -> Result<bool> {
        // Blocks only `kb` holds cannot break the subset: not read.
        let mut ok = true;
        self.bm_pairs(db, (ka, kb), (true, false), &mut |a, b| {
            ok = match (a, b) {
                (Some(a), Some(b)) => setops::is_subset(a, b),
                (Some(a), None) => a.is_empty(),
                _ => true,
            };
            ok
        })?;
        Ok(ok)
    }
}

/// Clamps an offset computed in u64 to the reply: −1 past 2^32 − 1.
fn fit(v: u64) -> i64 {
    if v <= u64::from(u32::MAX) {
        v as i64
    } else {
        -1
    }
}

/// The `n`-th (1-based) clear low offset of a container, counting upward.
/// The caller guarantees it exists.
fn nth_zero_up(r: ContainerRef<'_>, n: u64) -> u16 {
    // zeros in [0, x] = x + 1 - rank(x), monotone in x: binary search.
    let (mut lo, mut hi) = (0u32, u32::from(u16::MAX));
    while lo < hi {
        let mid = (lo + hi) / 2;
        let zeros = u64::from(mid) + 1 - u64::from(r.rank(mid as u16));
        if zeros >= n {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo as u16
}

/// The `n`-th (1-based) clear low offset at or below `top`, counting
/// downward. The caller guarantees it exists.
fn nth_zero_down(r: ContainerRef<'_>, top: u16, n: u64) -> u16 {
    let rank_top = u64::from(r.rank(top));
    // zeros in [y, top] = (top - y + 1) - (rank(top) - rank(y - 1)),
    // decreasing in y: the largest y with zeros >= n.
    let zeros_from = |y: u32| -> u64 {
        let below = if y == 0 {
            0
        } else {
            u64::from(r.rank((y - 1) as u16))
        };
        (u64::from(top) - u64::from(y) + 1) - (rank_top - below)
    };
    let (mut lo, mut hi) = (0u32, u32::from(top));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if zeros_from(mid) >= n {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, StoreConfig};
    use std::collections::BTreeSet;

    fn store() -> Store {
        Store::open(StoreConfig::default()).unwrap()
    }

    /// Asserts that bitmap `key` exists and holds exactly `model`: its
    /// summary (extremes 0 when empty), census, delta count and content.
    fn check(t: &mut Txn, key: &[u8], model: &BTreeSet<u32>) {
        let s = t.tr_summary(0, key).unwrap().unwrap();
        assert_eq!(s.card, model.len() as u64);
        let extremes = (model.first(), model.last());
        assert_eq!(
            (s.min, s.max),
            (*extremes.0.unwrap_or(&0), *extremes.1.unwrap_or(&0))
        );
        assert_eq!(s.sum, model.iter().map(|&v| u64::from(v)).sum::<u64>());
        let all = t
            .tr_range(0, key, 0, u32::MAX, usize::MAX - 1)
            .unwrap()
            .unwrap();
        assert_eq!(all, model.iter().copied().collect::<Vec<_>>());
        let b = t.tr_load(0, key).unwrap().unwrap();
        let (version, _) = t.bm_version(0, key).unwrap().unwrap();
        let stored_deltas = t
            .data_iter(0, key, version, None, false)
            .filter(|e| e.as_ref().unwrap().0.len() == 4)
            .count() as u64;
        assert_eq!(s.deltas, stored_deltas, "delta count drifted");
        assert!(stored_deltas <= s.containers * u64::from(delta::MAX_DELTAS));
        let computed = BitmapSummary {
            deltas: s.deltas,
            ..summary_of_bitmap(&b)
        };
        assert_eq!(computed, s, "census drifted");
    }

    #[test]
    fn single_bit_writes_keep_the_summary_exact_across_kinds() {
        let st = store();
        let mut t = st.begin(&[]);
        let mut model = BTreeSet::new();
        let mut x: u64 = 12345;
        for i in 0..12_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((x >> 33) as u32) % 200_000;
            let set = i % 5 != 0;
            let prev = t.tr_setbit(0, b"k", v, set).unwrap();
            assert_eq!(prev, model.contains(&v));
            if set {
                model.insert(v);
            } else {
                model.remove(&v);
            }
        }
        check(&mut t, b"k", &model);
        for v in model.clone().into_iter().take(5000) {
            t.tr_setbit(0, b"k", v, false).unwrap();
            model.remove(&v);
        }
        check(&mut t, b"k", &model);
    }

    /// Extremes kept exact while whole blocks empty from either end (a
    /// sliding window of ids): each new minimum / maximum is found past
    /// the block that lost it.
    #[test]
    fn extremes_follow_blocks_emptied_from_both_ends() {
        let st = store();
        let mut model = BTreeSet::new();
        let mut t = st.begin(&[]);
        let vals: Vec<u32> = (0..40u32)
            .flat_map(|hi| [hi << 16 | 7, hi << 16 | 900])
            .collect();
        t.tr_setbits(0, b"k", &vals).unwrap();
        t.commit().unwrap();
        model.extend(vals);
        let mut step = 0;
        while model.len() > 1 {
            let v = if step % 3 == 0 {
                *model.last().unwrap()
            } else {
                *model.first().unwrap()
            };
            step += 1;
            let mut t = st.begin(&[(0, b"k")]);
            assert!(t.tr_setbit(0, b"k", v, false).unwrap());
            t.commit().unwrap();
            model.remove(&v);
            let mut t = st.begin(&[]);
            let s = t.tr_summary(0, b"k").unwrap().unwrap();
            let want = (*model.first().unwrap(), *model.last().unwrap());
            assert_eq!((s.min, s.max), want, "after clearing {v}");
        }
        let mut t = st.begin(&[]);
        check(&mut t, b"k", &model);
    }

    /// TR.OPTIMIZE over a key of several read chunks: containers that
    /// become runs, bitsets that stay, and deltas to fold, in every chunk.
    #[test]
    fn optimize_rewrites_a_big_key_chunk_by_chunk() {
        let st = store();
        let mut model = BTreeSet::new();
        let mut t = st.begin(&[]);
        let mut x = 5u64;
        for hi in 0..400u32 {
            let vals: Vec<u32> = if hi % 2 == 0 {
                // 2,000 consecutive values: an array that is one run.
                (0..2000).map(|i| (hi << 16) | (100 + i)).collect()
            } else {
                (0..5000)
                    .map(|_| {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        (hi << 16) | ((x >> 48) as u32)
                    })
                    .collect()
            };
            t.tr_setbits(0, b"k", &vals).unwrap();
            model.extend(vals);
        }
        t.commit().unwrap();
        for hi in (0..400u32).step_by(7) {
            let v = (hi << 16) | 60_000;
            let mut t = st.begin(&[(0, b"k")]);
            t.tr_setbit(0, b"k", v, true).unwrap();
            t.commit().unwrap();
            model.insert(v);
        }
        let mut t = st.begin(&[]);
        let before = t.tr_summary(0, b"k").unwrap().unwrap();
        assert!(before.deltas > 0 && key_bytes(&before) > 2 * OPTIMIZE_CHUNK_BYTES as u64);
        let mut t = st.begin(&[(0, b"k")]);
        assert_eq!(t.tr_optimize(0, b"k").unwrap(), Some(()));
        t.commit().unwrap();
        let mut t = st.begin(&[]);
        check(&mut t, b"k", &model);
        let after = t.tr_summary(0, b"k").unwrap().unwrap();
        assert_eq!(after.deltas, 0);
        assert!(after.kinds[2].containers >= 150, "{after:?}");
        assert!(key_bytes(&after) < key_bytes(&before));
    }

    /// Single-bit edits of a big container go to delta entries, folded
    /// every `MAX_DELTAS` edits; every read path (cache on and off, point
    /// reads, forward and reverse scans, load, RENAME, TR.OPTIMIZE) sees
    /// the container with its deltas applied.
    #[test]
    fn deltas_fold_and_read_back_everywhere() {
        for budget in [container_cache::DEFAULT_BYTES, 0] {
            let st = store();
            st.set_container_cache_bytes(budget);
            let mut model = BTreeSet::new();
            let mut t = st.begin(&[]);
            let base: Vec<u32> = (0..2000).map(|i| (5 << 16) | (i * 7)).collect();
            t.tr_setbits(0, b"k", &base).unwrap();
            t.tr_setbits(0, b"k", &[(6 << 16) | 3]).unwrap();
            t.commit().unwrap();
            model.extend(base);
            model.insert((6 << 16) | 3);
            let (mut seen_deltas, mut folds, mut last) = (0u64, 0, 0u64);
            let mut x = 99u64;
            for step in 0..300u32 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                let v = (5 << 16) | ((x >> 40) as u32 % 14_000);
                let on = step % 3 != 0;
                let mut t = st.begin(&[(0, b"k")]);
                assert_eq!(t.tr_setbit(0, b"k", v, on).unwrap(), model.contains(&v));
                t.commit().unwrap();
                if on {
                    model.insert(v);
                } else {
                    model.remove(&v);
                }
                let mut t = st.begin(&[]);
                let s = t.tr_summary(0, b"k").unwrap().unwrap();
                seen_deltas = seen_deltas.max(s.deltas);
                if s.deltas < last {
                    folds += 1;
                }
                last = s.deltas;
                assert!(s.deltas < u64::from(delta::MAX_DELTAS));
                assert_eq!(t.tr_getbit(0, b"k", v).unwrap(), on);
                let top = *model.range(..(6 << 16)).next_back().unwrap();
                let pos = t.tr_bitpos(0, b"k", true, -2).unwrap();
                assert_eq!(pos, i64::from(top), "step {step}");
                if step % 25 == 0 {
                    check(&mut t, b"k", &model);
                    // MEMORY USAGE from the summary vs the stored entries.
                    let m = t.meta_of(0, b"k", Kind::Bitmap).unwrap().unwrap();
                    let plen = keys::data_prefix(0, b"k", m.version).len();
                    let stored: usize = t
                        .data_iter(0, b"k", m.version, None, false)
                        .map(|e| e.map(|(sub, v)| plen + sub.len() + v.len()).unwrap())
                        .sum();
                    let mem = t.memory_usage(0, b"k", 0).unwrap().unwrap();
                    let data = mem - (2 + 1 + m.encode().len()) as u64;
                    assert!(
                        data.abs_diff(stored as u64) <= 2 * s.deltas,
                        "{data} {stored}"
                    );
                }
            }
            assert!(seen_deltas > 10 && folds >= 2, "{seen_deltas} {folds}");
            // Two edits of the block in one Txn (two deltas), read back
            // before the commit.
            let mut t = st.begin(&[(0, b"k")]);
            t.tr_setbit(0, b"k", 5 << 16 | 13_999, true).unwrap();
            t.tr_setbit(0, b"k", 5 << 16 | 13_998, true).unwrap();
            assert!(t.tr_getbit(0, b"k", 5 << 16 | 13_999).unwrap());
            t.commit().unwrap();
            model.extend([5 << 16 | 13_999, 5 << 16 | 13_998]);
            let mut t = st.begin(&[(0, b"k"), (0, b"r")]);
            check(&mut t, b"k", &model);
            t.rename(0, b"k", b"r", false).unwrap();
            t.commit().unwrap();
            let mut t = st.begin(&[(0, b"r")]);
            check(&mut t, b"r", &model);
            t.tr_optimize(0, b"r").unwrap();
            t.commit().unwrap();
            let mut t = st.begin(&[]);
            assert_eq!(t.tr_summary(0, b"r").unwrap().unwrap().deltas, 0);
            check(&mut t, b"r", &model);
        }
    }

    /// Many single-bit edits of one big container in one `Txn` (a
    /// pipeline's group, MULTI/EXEC): deltas pile up and fold within the
    /// `Txn`, each edit reads the block as the previous ones left it, and
    /// a TR.BITOP in place, TR.OPTIMIZE and an abort in between keep
    /// every read exact; with the container cache default, tiny and off.
    #[test]
    fn many_edits_of_one_block_in_one_txn_match_a_model() {
        for budget in [container_cache::DEFAULT_BYTES, 16 * 1024, 0] {
            let st = store();
            st.set_container_cache_bytes(budget);
            let mut model = BTreeSet::new();
            let base: Vec<u32> = (0..3000).map(|i| (2 << 16) | (i * 11)).collect();
            let mut t = st.begin(&[]);
            t.tr_setbits(0, b"k", &base).unwrap();
            t.tr_setbits(0, b"src", &base[..1500]).unwrap();
            t.commit().unwrap();
            model.extend(base.iter().copied());
            let mut x = 7u64 ^ budget;
            let mut rnd = move |n: u32| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % u64::from(n)) as u32
            };
            let edit = |t: &mut Txn, model: &mut BTreeSet<u32>, rnd: &mut dyn FnMut(u32) -> u32| {
                let v = (2 << 16) | rnd(40_000);
                let on = rnd(3) != 0;
                assert_eq!(t.tr_setbit(0, b"k", v, on).unwrap(), model.contains(&v));
                if on {
                    model.insert(v);
                } else {
                    model.remove(&v);
                }
                assert_eq!(t.tr_getbit(0, b"k", v).unwrap(), on);
                let w = (2 << 16) | rnd(40_000);
                assert_eq!(t.tr_getbit(0, b"k", w).unwrap(), model.contains(&w));
            };
            // 3 * MAX_DELTAS edits: the block's deltas fold twice or more
            // inside the Txn.
            let mut t = st.begin(&[(0, b"k")]);
            let mut seen = 0;
            for i in 0..3 * u32::from(delta::MAX_DELTAS) {
                edit(&mut t, &mut model, &mut rnd);
                seen = seen.max(t.tr_summary(0, b"k").unwrap().unwrap().deltas);
                if i % 40 == 0 {
                    check(&mut t, b"k", &model);
                }
            }
            assert!(seen > 20, "deltas seen in the Txn: {seen}");
            // One container copy kept for the cache per block, not one per
            // edit.
            assert!(t.cc_pending.containers_held() <= 1, "{budget}");
            check(&mut t, b"k", &model);
            t.commit().unwrap();
            let mut t = st.begin(&[]);
            check(&mut t, b"k", &model);
            drop(t);
            // Edits, TR.BITOP in place into the key, edits, TR.OPTIMIZE,
            // edits: one Txn.
            let mut t = st.begin(&[(0, b"k"), (0, b"src")]);
            for _ in 0..30 {
                edit(&mut t, &mut model, &mut rnd);
            }
            t.tr_bitop(0, b"k", BitOp::Or, &[b"k", b"src"]).unwrap();
            model.extend(base[..1500].iter().copied());
            check(&mut t, b"k", &model);
            for _ in 0..30 {
                edit(&mut t, &mut model, &mut rnd);
            }
            t.tr_optimize(0, b"k").unwrap();
            assert_eq!(t.tr_summary(0, b"k").unwrap().unwrap().deltas, 0);
            for _ in 0..30 {
                edit(&mut t, &mut model, &mut rnd);
            }
            check(&mut t, b"k", &model);
            t.commit().unwrap();
            let mut t = st.begin(&[]);
            check(&mut t, b"k", &model);
            drop(t);
            // An aborted Txn of many edits leaves the committed state.
            let mut t = st.begin(&[(0, b"k")]);
            let mut scratch = model.clone();
            for _ in 0..100 {
                edit(&mut t, &mut scratch, &mut rnd);
            }
            drop(t);
            let mut t = st.begin(&[]);
            check(&mut t, b"k", &model);
            for _ in 0..50 {
                let w = (2 << 16) | rnd(40_000);
                assert_eq!(t.tr_getbit(0, b"k", w).unwrap(), model.contains(&w));
            }
        }
    }

    /// One step of [`one_txn_of_edits_matches_a_model`].
    #[derive(Debug, Clone)]
    enum TxnStep {
        SetBit(u32, bool),
        Bits(Vec<u32>, bool),
        Range(u32, u16, bool),
        Optimize,
        GetBit(u32),
        /// Clears every bit of a block (which deletes its container).
        ClearBlock(u32),
        Commit,
    }

    /// Offsets in two blocks, low bits below 6,000: repeats are common
    /// and the base's containers are big enough for deltas.
    fn txn_offset() -> impl proptest::strategy::Strategy<Value = u32> {
        use proptest::prelude::*;
        (0u32..2, 0u32..6000).prop_map(|(b, lo)| (b << 16) | lo)
    }

    fn txn_step() -> impl proptest::strategy::Strategy<Value = TxnStep> {
        use proptest::prelude::*;
        prop_oneof![
            8 => (txn_offset(), any::<bool>()).prop_map(|(v, on)| TxnStep::SetBit(v, on)),
            1 => (proptest::collection::vec(txn_offset(), 1..20), any::<bool>())
                .prop_map(|(v, on)| TxnStep::Bits(v, on)),
            1 => (txn_offset(), any::<u16>(), any::<bool>())
                .prop_map(|(v, n, flip)| TxnStep::Range(v, n % 3000, flip)),
            1 => Just(TxnStep::Optimize),
            4 => txn_offset().prop_map(TxnStep::GetBit),
            1 => (0u32..2).prop_map(TxnStep::ClearBlock),
            1 => Just(TxnStep::Commit),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Random single-bit and range writes, TR.OPTIMIZE and reads, many
        /// to one block, inside transactions of many commands (a
        /// pipeline's group, MULTI/EXEC) against a model: every reply in
        /// the `Txn`, the whole key at each commit and at the end; with
        /// the container cache default, tiny and off.
        #[test]
        fn one_txn_of_edits_matches_a_model(
            steps in proptest::collection::vec(txn_step(), 1..250),
            budget in proptest::sample::select(vec![
                container_cache::DEFAULT_BYTES, 16 * 1024, 0,
            ]),
        ) {
            let st = store();
            st.set_container_cache_bytes(budget);
            let base: Vec<u32> = (0..2u32)
                .flat_map(|b| (0..1500u32).map(move |i| (b << 16) | (i * 4)))
                .collect();
            let mut model: BTreeSet<u32> = base.iter().copied().collect();
            let mut t = st.begin(&[]);
            t.tr_setbits(0, b"k", &base).unwrap();
            t.commit().unwrap();
            let mut t = st.begin(&[(0, b"k")]);
            for step in steps {
                match step {
                    TxnStep::SetBit(v, on) => {
                        let prev = t.tr_setbit(0, b"k", v, on).unwrap();
                        proptest::prop_assert_eq!(prev, model.contains(&v));
                        if on {
                            model.insert(v);
                        } else {
                            model.remove(&v);
                        }
                    }
                    TxnStep::Bits(vs, on) => {
                        if on {
                            model.extend(vs.iter().copied());
                            let card = t.tr_setbits(0, b"k", &vs).unwrap();
                            proptest::prop_assert_eq!(card, model.len() as u64);
                        } else {
                            let had = vs.iter().filter(|v| model.remove(v)).count();
                            let changed = t.tr_clearbits(0, b"k", &vs).unwrap();
                            proptest::prop_assert_eq!(changed, had as u64);
                        }
                    }
                    TxnStep::Range(v, n, flip) => {
                        let end = v.saturating_add(u32::from(n));
                        let op = if flip { RangeOp::Flip } else { RangeOp::Set };
                        let card = t.tr_range_write(0, b"k", v, end, op).unwrap();
                        for x in v..=end {
                            if flip && model.contains(&x) {
                                model.remove(&x);
                            } else {
                                model.insert(x);
                            }
                        }
                        proptest::prop_assert_eq!(card, model.len() as u64);
                    }
                    TxnStep::Optimize => {
                        if !model.is_empty() {
                            t.tr_optimize(0, b"k").unwrap();
                        }
                    }
                    TxnStep::GetBit(v) => {
                        proptest::prop_assert_eq!(t.tr_getbit(0, b"k", v).unwrap(), model.contains(&v));
                    }
                    TxnStep::ClearBlock(b) => {
                        let vs: Vec<u32> = model.range(b << 16..(b + 1) << 16).copied().collect();
                        for v in &vs {
                            model.remove(v);
                        }
                        let changed = t.tr_clearbits(0, b"k", &vs).unwrap();
                        proptest::prop_assert_eq!(changed, vs.len() as u64);
                    }
                    TxnStep::Commit => {
                        check(&mut t, b"k", &model);
                        t.commit().unwrap();
                        t = st.begin(&[(0, b"k")]);
                    }
                }
            }
            t.commit().unwrap();
            // A key whose last bit was cleared stays, empty (spec open
            // point 7): `check` then wants a zero summary and no entries.
            let mut t = st.begin(&[]);
            check(&mut t, b"k", &model);
        }
    }

    /// TR.BITOP over an existing destination: in place (same version)
    /// when the old key is at most twice the result's containers, writing
    /// only the blocks that changed; a fresh version otherwise. Checked
    /// against a model, with and without the container cache, with the
    /// destination also a source and holding delta entries.
    #[test]
    fn bitop_rewrites_an_existing_destination_in_place() {
        for budget in [container_cache::DEFAULT_BYTES, 0] {
            let st = store();
            st.set_container_cache_bytes(budget);
            let set = |key: &[u8], vals: &[u32]| {
                let mut t = st.begin(&[(0, key)]);
                t.tr_setbits(0, key, vals).unwrap();
                t.commit().unwrap();
                vals.iter().copied().collect::<BTreeSet<u32>>()
            };
            let version = |key: &[u8]| {
                let mut t = st.begin(&[]);
                t.bm_version(0, key).unwrap().unwrap().0
            };
            // Blocks 0..4 of `a`, 2..6 of `b` (block 3 big enough for deltas).
            let a: Vec<u32> = (0..4u32)
                .flat_map(|b| (0..3000).map(move |i| (b << 16) | (i * 3)))
                .collect();
            let b: Vec<u32> = (2..6u32)
                .flat_map(|b| (0..500).map(move |i| (b << 16) | (i * 11)))
                .collect();
            let (ma, mb) = (set(b"a", &a), set(b"b", &b));
            let mut t = st.begin(&[(0, b"d")]);
            t.tr_bitop(0, b"d", BitOp::Or, &[b"a", b"b"]).unwrap();
            t.commit().unwrap();
            let v0 = version(b"d");
            // The same result again: nothing is written. The old result,
            // stored under a fresh version, is compared without the cache.
            let mut t = st.begin(&[(0, b"d")]);
            let union: BTreeSet<u32> = ma.union(&mb).copied().collect();
            assert_eq!(
                t.tr_bitop(0, b"d", BitOp::Or, &[b"a", b"b"]).unwrap(),
                union.len() as u64
            );
            assert!(
                t.data_overlay_is_empty(),
                "an unchanged result rewrote containers"
            );
            t.commit().unwrap();
            assert_eq!(version(b"d"), v0);
            // Once rewritten in place, its directory is cached; the next
            // comparison fills the containers it reads, and from then on
            // every read is a cache hit.
            for round in 0..2 {
                let misses = st.container_cache_stats().misses;
                let mut t = st.begin(&[(0, b"d")]);
                t.tr_bitop(0, b"d", BitOp::Or, &[b"a", b"b"]).unwrap();
                assert!(t.data_overlay_is_empty());
                t.commit().unwrap();
                let missed = st.container_cache_stats().misses - misses;
                if budget > 0 && round == 1 {
                    assert_eq!(missed, 0);
                }
            }
            // Deltas on the destination, then a result that drops blocks
            // 0..2, keeps 2..4 (block 3 with its deltas), adds none.
            for i in 0..5u32 {
                let mut t = st.begin(&[(0, b"d")]);
                t.tr_setbit(0, b"d", (3 << 16) | (i * 3 + 1), true).unwrap();
                t.commit().unwrap();
            }
            let mut t = st.begin(&[]);
            assert!(t.tr_summary(0, b"d").unwrap().unwrap().deltas > 0);
            drop(t);
            let mut t = st.begin(&[(0, b"d")]);
            t.tr_bitop(0, b"d", BitOp::And, &[b"a", b"d"]).unwrap();
            t.commit().unwrap();
            let and: BTreeSet<u32> = ma.iter().filter(|v| union.contains(v)).copied().collect();
            let mut t = st.begin(&[]);
            check(&mut t, b"d", &and);
            assert_eq!(t.tr_summary(0, b"d").unwrap().unwrap().deltas, 0);
            drop(t);
            assert_eq!(version(b"d"), v0);
            // A result of one block where `d` holds four: a fresh version.
            let one = set(b"c", &[(9 << 16) | 5]);
            let mut t = st.begin(&[(0, b"d")]);
            t.tr_bitop(0, b"d", BitOp::Or, &[b"c"]).unwrap();
            t.commit().unwrap();
            assert_ne!(version(b"d"), v0);
            let mut t = st.begin(&[]);
            check(&mut t, b"d", &one);
            drop(t);
            // Back to the union, with a TTL on `d` and inside one Txn
            // that reads it back before and after.
            let v1 = version(b"d");
            let mut t = st.begin(&[(0, b"d")]);
            let at = i64::try_from(crate::now_ms()).unwrap() + 100_000;
            t.expire_at(0, b"d", at, crate::types::keyspace::ExpireCond::default())
                .unwrap();
            t.tr_bitop(0, b"d", BitOp::Or, &[b"b", b"a"]).unwrap();
            check(&mut t, b"d", &union);
            t.commit().unwrap();
            assert_eq!(version(b"d"), v1);
            let mut t = st.begin(&[]);
            check(&mut t, b"d", &union);
            assert_eq!(
                t.meta_of(0, b"d", Kind::Bitmap)
                    .unwrap()
                    .unwrap()
                    .expire_at_ms,
                0
            );
        }
    }

    #[test]
    fn ranges_bitpos_and_setops_match_a_model() {
        let st = store();
        let mut t = st.begin(&[]);
        t.tr_range_write(0, b"a", 65_530, 131_080, RangeOp::Set)
            .unwrap();
        t.tr_range_write(0, b"a", 70_000, 70_010, RangeOp::Flip)
            .unwrap();
        let mut a: BTreeSet<u32> = (65_530..=131_080).collect();
        for v in 70_000..=70_010 {
            a.remove(&v);
        }
        check(&mut t, b"a", &a);
        t.tr_setbits(0, b"b", &[1, 65_535, 65_536, 70_005, 1 << 31])
            .unwrap();
        let b: BTreeSet<u32> = [1, 65_535, 65_536, 70_005, 1 << 31].into();
        let and: Vec<u32> = a.intersection(&b).copied().collect();
        assert_eq!(
            t.tr_bitopcard(0, BitOp::And, &[b"a", b"b"]).unwrap(),
            and.len() as u64
        );
        assert_eq!(
            t.tr_bitopcard(0, BitOp::Or, &[b"a", b"b"]).unwrap(),
            a.union(&b).count() as u64
        );
        assert_eq!(
            t.tr_bitopcard(0, BitOp::Xor, &[b"a", b"b", b"b"]).unwrap(),
            a.len() as u64
        );
        assert_eq!(
            t.tr_bitop(0, b"d", BitOp::Diff, &[b"a", b"b"]).unwrap(),
            a.difference(&b).count() as u64
        );
        assert_eq!(
            t.tr_bitop(0, b"n", BitOp::Not, &[b"b"]).unwrap(),
            (1u64 << 31) + 1 - 5
        );
        assert!(t.tr_contains(0, b"d", b"a").unwrap());
        assert!(!t.tr_contains(0, b"b", b"a").unwrap());
        // bitpos, both directions and values
        assert_eq!(t.tr_bitpos(0, b"a", true, 1).unwrap(), 65_530);
        assert_eq!(t.tr_bitpos(0, b"a", true, -1).unwrap(), 131_080);
        assert_eq!(t.tr_bitpos(0, b"a", false, 65_531).unwrap(), 70_000);
        assert_eq!(t.tr_bitpos(0, b"a", false, -1).unwrap(), 70_010);
        assert_eq!(t.tr_bitpos(0, b"a", false, -12).unwrap(), 65_529);
        assert_eq!(t.tr_bitpos(0, b"a", false, 65_530 + 12).unwrap(), 131_081);
        let (c, v) = t.tr_scan(0, b"b", 2, 2).unwrap().unwrap();
        assert_eq!((c, v), (70_005, vec![65_535, 65_536]));
    }

    fn brute_bitpos(s: &BTreeSet<u32>, value: bool, count: i64) -> i64 {
        let n = count.unsigned_abs();
        let max = s.last().copied();
        let mut k = 0;
        if count > 0 {
            let mut v: u64 = 0;
            while v <= u64::from(u32::MAX) {
                if s.contains(&(v as u32)) == value {
                    k += 1;
                    if k == n {
                        return v as i64;
                    }
                }
                if value && Some(v as u32) >= max {
                    return -1;
                }
                v += 1;
            }
            -1
        } else {
            let Some(max) = max else { return -1 };
            let mut v = i64::from(max);
            while v >= 0 {
                if s.contains(&(v as u32)) == value {
                    k += 1;
                    if k == n {
                        return v;
                    }
                }
                v -= 1;
            }
            -1
        }
    }

    #[test]
    fn bitpos_matches_brute_force_across_blocks_and_gaps() {
        let st = store();
        let mut t = st.begin(&[]);
        let mut model = BTreeSet::new();
        // Blocks 0, 2 and 5 populated (1, 3, 4 absent), one dense run.
        for v in [0u32, 1, 2, 7, 65_535] {
            model.insert(v);
        }
        for v in 131_072..131_172 {
            model.insert(v);
        }
        model.insert(5 * 65_536 + 9);
        let vals: Vec<u32> = model.iter().copied().collect();
        t.tr_setbits(0, b"p", &vals).unwrap();
        for value in [false, true] {
            for count in (-300..=300)
                .step_by(23)
                .chain([1, -1, 65_530, 65_540, 200_000, -200_000, -65_540])
            {
                if count == 0 {
                    continue;
                }
                assert_eq!(
                    t.tr_bitpos(0, b"p", value, count).unwrap(),
                    brute_bitpos(&model, value, count),
                    "value {value} count {count}"
                );
            }
        }
        // An empty (existing) bitmap: every bit is clear upward, none downward.
        t.tr_setbits(0, b"e", &[3]).unwrap();
        t.tr_clearbits(0, b"e", &[3]).unwrap();
        assert_eq!(t.tr_summary(0, b"e").unwrap().unwrap().card, 0);
        assert_eq!(t.tr_bitpos(0, b"e", false, 5).unwrap(), 4);
        assert_eq!(t.tr_bitpos(0, b"e", false, -1).unwrap(), -1);
        assert_eq!(t.tr_bitpos(0, b"e", true, 1).unwrap(), -1);
        assert_eq!(t.tr_bitpos(0, b"missing", false, 1).unwrap(), -1);
    }

    #[test]
    fn corrupt_container_bytes_are_an_error_not_a_panic() {
        let st = store();
        let mut t = st.begin(&[]);
        t.tr_setbits(0, b"c", &[1, 2, 70_000]).unwrap();
        let version = t.meta(0, b"c").unwrap().unwrap().version;
        t.data_put(
            0,
            b"c",
            version,
            &0u16.to_be_bytes(),
            vec![0x10, 9, 0, 0, 1],
        );
        assert!(matches!(
            t.tr_getbit(0, b"c", 1),
            Err(StoreError::Corrupt(_))
        ));
        assert!(matches!(
            t.tr_range(0, b"c", 0, 10, 100),
            Err(StoreError::Corrupt(_))
        ));
        assert!(matches!(
            t.tr_bitopcard(0, BitOp::Or, &[b"c", b"c"]),
            Err(StoreError::Corrupt(_))
        ));
        t.data_put(0, b"c", version, b"xyz", vec![]);
        assert!(t.tr_load(0, b"c").is_err());
    }

    /// Random edits, DEL, RENAME, BITOP, multi-key and aborted
    /// transactions, each checked against a model after commit, with the
    /// container cache off, tiny (constant eviction) and default-sized.
    fn container_cache_coherence(budget: u64) {
        use std::collections::HashMap;
        let st = store();
        st.set_container_cache_bytes(budget);
        let names: [&[u8]; 3] = [b"x", b"y", b"z"];
        let mut model: HashMap<&[u8], BTreeSet<u32>> = HashMap::new();
        struct R(u64);
        impl R {
            fn n(&mut self, n: u64) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 % n
            }
            /// Offsets in 4 blocks; block 1 gets dense enough for bitsets.
            fn off(&mut self) -> u32 {
                let b = self.n(4) as u32;
                let lo = if b == 1 { self.n(9000) } else { self.n(300) } as u32;
                (b << 16) | lo
            }
        }
        let mut r = R(0x1234_5678 ^ budget);
        for step in 0..2000 {
            let k = names[r.n(3) as usize];
            let k2 = names[r.n(3) as usize];
            let mut t = st.begin(&[(0, k), (0, k2)]);
            match r.n(12) {
                0..=4 => {
                    let (v, on) = (r.off(), r.n(3) != 0);
                    t.tr_setbit(0, k, v, on).unwrap();
                    let m = model.entry(k).or_default();
                    if on {
                        m.insert(v);
                    } else {
                        m.remove(&v);
                    }
                }
                5 => {
                    let vs: Vec<u32> = (0..r.n(200)).map(|_| r.off()).collect();
                    if r.n(2) == 0 {
                        t.tr_setbits(0, k, &vs).unwrap();
                        model.entry(k).or_default().extend(vs);
                    } else {
                        t.tr_clearbits(0, k, &vs).unwrap();
                        if let Some(m) = model.get_mut(k) {
                            for v in &vs {
                                m.remove(v);
                            }
                        }
                    }
                }
                6 => {
                    t.del(0, k).unwrap();
                    model.remove(k);
                }
                7 if k != k2 && model.contains_key(k) => {
                    t.rename(0, k, k2, false).unwrap();
                    let m = model.remove(k).unwrap();
                    model.insert(k2, m);
                }
                8 => {
                    let a = model.get(k).cloned().unwrap_or_default();
                    let b = model.get(k2).cloned().unwrap_or_default();
                    let d = names[r.n(3) as usize];
                    drop(std::mem::replace(&mut t, st.begin(&[])));
                    let mut t2 = st.begin(&[(0, k), (0, k2), (0, d)]);
                    if r.n(2) == 0 {
                        t2.tr_bitop(0, d, BitOp::Or, &[k, k2]).unwrap();
                        model.insert(d, a.union(&b).copied().collect());
                    } else {
                        t2.tr_bitop(0, d, BitOp::And, &[k, k2]).unwrap();
                        model.insert(d, a.intersection(&b).copied().collect());
                    }
                    t2.commit().unwrap();
                }
                9 => {
                    // Aborted: writes then reads of its own writes, dropped.
                    let v = r.off();
                    t.tr_setbit(0, k, v, true).unwrap();
                    assert!(t.tr_getbit(0, k, v).unwrap());
                    t.tr_range_write(0, k, 65_536, 65_536 + 70, RangeOp::Flip)
                        .unwrap();
                    let _ = t.tr_bitopcard(0, BitOp::Or, &[k, k2]).unwrap();
                    drop(t);
                    t = st.begin(&[]);
                }
                _ => {
                    // Several edits of one key in one Txn (MULTI/EXEC), the
                    // last one reading back through the overlay.
                    let m = model.entry(k).or_default();
                    for _ in 0..3 {
                        let v = r.off();
                        t.tr_setbit(0, k, v, true).unwrap();
                        m.insert(v);
                    }
                    let v = *m.iter().next().unwrap();
                    t.tr_setbit(0, k, v, false).unwrap();
                    m.remove(&v);
                    let got = t.tr_range(0, k, 0, u32::MAX, 1 << 20).unwrap().unwrap();
                    assert_eq!(got, m.iter().copied().collect::<Vec<_>>());
                }
            }
            t.commit().unwrap();
            let mut t = st.begin(&[]);
            for name in names {
                match model.get(name) {
                    Some(m) => check(&mut t, name, m),
                    None => assert!(t.tr_summary(0, name).unwrap().is_none()),
                }
            }
            let v = r.off();
            let want = model.get(k).is_some_and(|m| m.contains(&v));
            assert_eq!(t.tr_getbit(0, k, v).unwrap(), want, "step {step}");
        }
        let cs = st.container_cache_stats();
        assert!(cs.bytes <= budget, "{cs:?}");
        if budget > 0 {
            assert!(cs.hits > 0, "{cs:?}");
        } else {
            assert_eq!(cs.entries, 0);
        }
    }

    /// Writers on shared keys (each owning its offsets) and readers that
    /// warm and stream the same keys, under a tiny and a default budget:
    /// every reader sees each writer's bits in order (a bit once seen set
    /// is set until its writer clears it), and the final state is exact.
    #[test]
    fn container_cache_is_coherent_under_concurrency() {
        for budget in [64 * 1024, container_cache::DEFAULT_BYTES] {
            let st = std::sync::Arc::new(store());
            st.set_container_cache_bytes(budget);
            let keys: [&[u8]; 2] = [b"p", b"q"];
            let mut hs = Vec::new();
            for w in 0..2u32 {
                let st = std::sync::Arc::clone(&st);
                hs.push(std::thread::spawn(move || {
                    // Writer w owns offsets ≡ w (mod 2), over 3 blocks.
                    for i in 0..1500u32 {
                        let off = (i * 2 + w) * 97 % (3 << 16) / 2 * 2 + w;
                        let k = keys[(i % 2) as usize];
                        let mut t = st.begin(&[(0, k)]);
                        t.tr_setbit(0, k, off, true).unwrap();
                        if i % 3 == 0 {
                            t.tr_setbit(0, k, off, false).unwrap();
                        }
                        t.commit().unwrap();
                    }
                }));
            }
            for _ in 0..2 {
                let st = std::sync::Arc::clone(&st);
                hs.push(std::thread::spawn(move || {
                    for i in 0..400 {
                        let k = keys[i % 2];
                        let mut t = st.begin(&[(0, k)]);
                        if let Some(s) = t.tr_summary(0, k).unwrap() {
                            let all = t.tr_range(0, k, 0, u32::MAX, 1 << 20).unwrap().unwrap();
                            assert_eq!(all.len() as u64, s.card, "summary vs containers");
                            let _ = t.tr_bitopcard(0, BitOp::And, &[k, k]).unwrap();
                        }
                    }
                }));
            }
            for h in hs {
                h.join().unwrap();
            }
            let mut model: [BTreeSet<u32>; 2] = Default::default();
            for w in 0..2u32 {
                for i in 0..1500u32 {
                    let off = (i * 2 + w) * 97 % (3 << 16) / 2 * 2 + w;
                    let m = &mut model[(i % 2) as usize];
                    if i % 3 == 0 {
                        m.remove(&off);
                    } else {
                        m.insert(off);
                    }
                }
            }
            let mut t = st.begin(&[]);
            for (k, m) in keys.iter().zip(&model) {
                check(&mut t, k, m);
            }
        }
    }

    #[test]
    fn container_cache_is_coherent_default_budget() {
        container_cache_coherence(container_cache::DEFAULT_BYTES);
    }

    #[test]
    fn container_cache_is_coherent_tiny_budget() {
        container_cache_coherence(64 * 1024);
    }

    #[test]
    fn container_cache_is_coherent_when_off() {
        container_cache_coherence(0);
    }

    #[test]
    fn a_bitmap_summary_sums_every_container() {
        let b = Bitmap::from_sorted(&[0, 5, 65_536, 70_000, u32::MAX]);
        let s = summary_of_bitmap(&b);
        assert_eq!((s.card, s.min, s.max, s.containers), (5, 0, u32::MAX, 3));
        assert_eq!(s.sum, 5 + 65_536 + 70_000 + u64::from(u32::MAX));
    }
}
