//! Streams over a key version's containers in block order (or its
//! reverse), for range reads and multi-key merges: from the cached
//! directory (a container is read only when taken), from a version the
//! container cache holds whole, from a one-container key's point read, or
//! from a `Kv` scan that fills the cache ([`FillScan`]). Contract: [`head`]
//! peeks the next block, [`take`] returns its container, [`skip_below`]
//! steps over blocks without reading them; each stored container comes
//! once.

use std::iter::Peekable;
use std::ops::Bound;
use std::sync::Arc;

use crate::error::{Result, StoreError};
use crate::meta::BitmapSummary;
use crate::txn::Txn;

use super::block_facts::BlockFacts;
use super::bytes::{join, view, Bytes, RawEntries};
use super::container_cache::{padded_with, prefetch, ContainerCache, Held, Snap};
use super::page::{self, Unpacked};
use super::summary::key_bytes;

/// One source's containers in stream order (block order, or its reverse).
pub(super) enum Stream<'a> {
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
pub(super) fn head(s: &mut Stream<'_>) -> Result<Option<u16>> {
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
pub(super) fn skip_below(s: &mut Stream<'_>, target: u16) -> Result<()> {
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

/// A `Kv` scan of a key version's containers that fills
/// the container cache as it goes and, when `dir` and the scan runs to its
/// end, the key version's directory. Fills are refused if a container
/// commit ran since `snap` (see `container_cache`).
pub(super) struct FillScan<'a, I> {
    pub(super) inner: I,
    pub(super) cache: &'a ContainerCache,
    pub(super) version: u64,
    pub(super) snap: Snap,
    /// Blocks seen, while a directory fill is still possible.
    pub(super) dir: Option<Vec<u16>>,
}

impl<I> Iterator for FillScan<'_, I>
where
    I: Iterator<Item = Result<(u16, Vec<u8>)>>,
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
            Some(Ok((hi, v))) => {
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
                let a = padded_with(&v, facts);
                self.cache
                    .fill_container(self.version, hi, Arc::clone(&a), self.snap);
                Some(Ok((hi, Bytes::Shared(a))))
            }
        }
    }
}

/// Takes the head entry's container bytes.
pub(super) fn take(s: &mut Stream<'_>) -> Result<Bytes> {
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
    /// The container entries of a key version from block `from` upward
    /// (or, `reverse`, from `from` downward). `s`: the version's summary
    /// (sizes the cache fill). Served from a cached directory when there
    /// is one and this `Txn` has not written the key; else a `Kv` scan
    /// (the memory tier serves hot keys). With `fill` (set operations,
    /// which read the same keys whole again and again) a small key is
    /// warmed into the container cache first, or the scan fills the cache
    /// as it goes (the directory too when it covers the key); single-key
    /// readers do not fill it (with many keys that only churned it).
    pub(super) fn bm_stream(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        (from, reverse): (u16, bool),
        s: &BitmapSummary,
        fill: bool,
    ) -> Stream<'_> {
        let cc = &self.inner.ccache;
        let clean = self.bm_clean(db, key, version);
        if clean {
            if let Some(d) = cc
                .dir(version)
                .or_else(|| fill.then(|| self.bm_warm(db, key, version, s)).flatten())
            {
                let blocks: Vec<u16> = if reverse {
                    let end = d.partition_point(|&b| b <= from);
                    d[..end].iter().rev().copied().collect()
                } else {
                    let start = d.partition_point(|&b| b < from);
                    d[start..].to_vec()
                };
                let key = key.to_vec();
                return Stream::Dir {
                    blocks,
                    pos: 0,
                    fetch: Box::new(move |hi| {
                        self.bm_get_stored(db, &key, version, hi, fill)?
                            .ok_or_else(|| {
                                StoreError::corrupt(
                                    "bitmap container directory names a container that is not stored",
                                )
                            })
                    }),
                };
            }
        }
        let scan = self.bm_scan(db, key, version, (from, reverse));
        let it: EntryIter<'_> = if fill && clean && key_bytes(s) <= cc.capacity() / 8 {
            Box::new(FillScan {
                inner: scan,
                cache: cc,
                version,
                snap: cc.snapshot(version),
                dir: (from == 0 && !reverse).then(Vec::new),
            })
        } else {
            Box::new(scan.map(|r| r.map(|(hi, v)| (hi, Bytes::Owned(v)))))
        };
        Stream::Scan(it.peekable())
    }

    /// A key version's containers from block `from` on (down to
    /// block 0 when `reverse`), as this `Txn` sees them: a scan of the
    /// entries at or after `from` going up (a page holding earlier blocks
    /// too is passed through its window); going down, the page that holds
    /// `from` under a later key (one seek) and then the entries below.
    pub(super) fn bm_scan(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        (from, reverse): (u16, bool),
    ) -> Unpacked<RawEntries<'_>> {
        if !reverse {
            // Past block `from - 1`.
            let after = from.checked_sub(1).map(u16::to_be_bytes);
            let after = after.as_ref().map(|b| &b[..]);
            let scan = self.data_iter(db, key, version, after, false);
            return Unpacked::new(Box::new(scan), false, (from, u16::MAX));
        }
        let Some(next) = from.checked_add(1) else {
            let scan = self.data_iter(db, key, version, None, true);
            return Unpacked::new(Box::new(scan), true, (0, u16::MAX));
        };
        let past = from.to_be_bytes();
        let holder = match self.data_first(db, key, version, Bound::Excluded(&past), false) {
            Ok(Some((sub, v))) if page::is_page(&v) => Some(Ok((sub, v))),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        };
        let below = self.data_iter(db, key, version, Some(&next.to_be_bytes()), true);
        Unpacked::new(Box::new(holder.into_iter().chain(below)), true, (0, from))
    }

    /// [`Txn::bm_stream`] for a single-key reader (TR.RANGE, TR.RANK, ...):
    /// through the container cache only for a big key
    /// (`summary::read_through_cache`).
    pub(super) fn bm_key_stream(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        at: (u16, bool),
        s: &BitmapSummary,
    ) -> Stream<'_> {
        let fill = super::summary::read_through_cache(s);
        self.bm_stream(db, key, version, at, s, fill)
    }

    /// A whole bitmap's container entries for a merge scan. The summary
    /// saves the range iterator where it can: an empty bitmap has no entry,
    /// and a one-container bitmap's entry is a point read at its minimum's
    /// block (most real bitmaps of small id sets have one container). A
    /// bigger one, when `whole` (the merge takes every container of the
    /// source: OR, XOR), comes from the version held whole by the cache
    /// ([`Txn::bm_hold`]); else it is streamed (an AND skips containers
    /// without reading them, and a lookup of a held entry that only OR
    /// builds cost AND more than it saved). A key below the cache's
    /// stream threshold fills the cache only from its second use in a
    /// while ([`ContainerCache::seen_before`]); before, it is streamed
    /// from the memory tier.
    pub(super) fn bm_source_stream(
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
                let cc = &self.inner.ccache;
                // A small key is cached from its second use only
                // (`ContainerCache::seen_before`).
                let fill = super::summary::read_through_cache(s) || cc.seen_before(version);
                if whole && self.bm_clean(db, key, version) {
                    let held = cc
                        .held(version)
                        .or_else(|| fill.then(|| self.bm_hold(db, key, version, s)).flatten());
                    if let Some(h) = held {
                        return held_stream(h);
                    }
                }
                return self.bm_stream(db, key, version, (0, false), s, fill);
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
    pub(super) fn bm_extreme(
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
        let mut st = self.bm_stream(db, key, version, (from, reverse), s, false);
        let Some(hi) = head(&mut st)? else {
            return Ok(None);
        };
        let bytes = take(&mut st)?;
        let v = view(&bytes)?;
        let r = v.as_ref();
        let lo = if reverse { r.max() } else { r.min() };
        Ok(lo.map(|lo| join(hi, lo)))
    }
}
