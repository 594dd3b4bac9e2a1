//! The meta summary ([`BitmapSummary`]) and its upkeep. Contract: after
//! every write a bitmap's summary is exact (cardinality, min, max, sum of
//! offsets, container count, per-kind census), so
//! TR.BITCOUNT without a range, TR.MIN, TR.MAX, TR.STAT and MEMORY USAGE
//! read `meta` only. A write opens the key as an [`Edit`]
//! ([`Txn::bm_open`]), changes containers through `block_write`, which
//! keeps the summary exact, and saves it with [`Txn::bm_finish`]; a result
//! built block by block sums its containers with [`summary_push`].

use roaringd_bitmap::{Bitmap, ContainerRef, Kind as CKind};

use crate::error::Result;
use crate::meta::{BitmapSummary, KeyMeta, Kind, Summary};
use crate::txn::Txn;

use super::block_facts::{low_sum, BlockFacts};
use super::bytes::join;

fn kind_index(k: CKind) -> usize {
    match k {
        CKind::Array => 0,
        CKind::Bitset => 1,
        CKind::Run => 2,
    }
}

/// Sum of the full offsets held by container `hi`.
pub(super) fn container_sum(hi: u16, r: ContainerRef<'_>) -> u64 {
    (u64::from(hi) << 16) * u64::from(r.cardinality()) + low_sum(r)
}

/// The summary of a bitmap meta (zeros for another type).
pub(super) fn summary_of(m: &KeyMeta) -> BitmapSummary {
    match &m.summary {
        Summary::Bitmap(s) => *s,
        _ => BitmapSummary::default(),
    }
}

/// Adds (`sign = 1`) or removes (`sign = -1`) a container's census share.
pub(super) fn census(s: &mut BitmapSummary, r: ContainerRef<'_>, add: bool) {
    if r.is_empty() {
        return;
    }
    census_of(s, (r.kind(), r.cardinality(), r.stat_bytes()), add);
}

/// [`census`] of a non-empty container given by its kind, cardinality
/// and TR.STAT bytes.
pub(super) fn census_of(
    s: &mut BitmapSummary,
    (kind, card, bytes): (CKind, u32, usize),
    add: bool,
) {
    let k = &mut s.kinds[kind_index(kind)];
    let card = u64::from(card);
    let bytes = bytes as u64;
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
pub(super) fn census_bitset_flip(s: &mut BitmapSummary, value: bool) {
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
pub(super) fn summary_point(s: &mut BitmapSummary, off: u32, value: bool) {
    if value {
        s.sum += u64::from(off);
        s.min = s.min.min(off);
        s.max = s.max.max(off);
    } else {
        s.sum -= u64::from(off);
    }
}

/// An open bitmap being written: its meta and summary, saved by `finish`.
pub(super) struct Edit {
    pub(super) meta: KeyMeta,
    pub(super) s: BitmapSummary,
    /// The key did not exist before this command.
    pub(super) created: bool,
}

/// Adds container `hi` (`r`, non-empty, above every container added
/// before) to the summary of a bitmap being built block by block:
/// census, cardinality, sum and extremes.
pub(super) fn summary_push(s: &mut BitmapSummary, hi: u16, r: ContainerRef<'_>) {
    summary_push_facts(s, hi, r, BlockFacts::of(r));
}

/// [`summary_push`] with `r`'s facts known (`f`: [`BlockFacts::of`]`(r)`):
/// reads only `r`'s header, not its values. Nothing is added for an empty
/// container (`f` is `None`).
pub(super) fn summary_push_facts(
    s: &mut BitmapSummary,
    hi: u16,
    r: ContainerRef<'_>,
    f: Option<BlockFacts>,
) {
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

/// Bytes of a key's containers, by the summary's census.
pub(super) fn key_bytes(s: &BitmapSummary) -> u64 {
    s.kinds.iter().map(|k| k.bytes).sum()
}

/// True for an empty bitmap without expiry, as an empty TR.BITOP result
/// is stored: no `data` entries, so the version does not matter.
pub(super) fn is_plain_empty_bitmap(m: &KeyMeta) -> bool {
    m.expire_at_ms == 0
        && !m.big
        && !m.noint
        && m.summary == Summary::Bitmap(BitmapSummary::default())
}

impl Txn {
    /// Live meta and summary of a bitmap key; `None` when absent.
    ///
    /// # Errors
    /// `WrongType` when the key holds another type.
    pub fn tr_summary(&mut self, db: u16, key: &[u8]) -> Result<Option<BitmapSummary>> {
        Ok(self.meta_of(db, key, Kind::Bitmap)?.map(|m| summary_of(&m)))
    }

    pub(super) fn bm_open(&mut self, db: u16, key: &[u8], create: bool) -> Result<Option<Edit>> {
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
                meta: self.new_key_meta(Summary::Bitmap(BitmapSummary::default()))?,
                s: BitmapSummary::default(),
                created: true,
            })),
            None => Ok(None),
        }
    }

    pub(super) fn bm_finish(&mut self, db: u16, key: &[u8], mut e: Edit) -> Result<u64> {
        let card = e.s.card;
        e.meta.summary = Summary::Bitmap(e.s);
        self.put_meta(db, key, e.meta)?;
        Ok(card)
    }

    /// Writes the meta of a bitmap stored under the fresh `version` (no
    /// expiry: a replaced key loses its TTL).
    pub(super) fn put_new_bitmap_meta(
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

    pub(super) fn bm_version(
        &mut self,
        db: u16,
        key: &[u8],
    ) -> Result<Option<(u64, BitmapSummary)>> {
        Ok(self
            .meta_of(db, key, Kind::Bitmap)?
            .map(|m| (m.version, summary_of(&m))))
    }
}

/// Stored bytes from which a single-key reader (TR.GETBIT, TR.RANGE, ...)
/// reads a key through the container cache, decoded once and shared,
/// rather than as stored bytes copied out of the memory tier on each
/// call: a smaller key costs less to copy than to cache, and caching every
/// small key of a many-key workload only churned the cache.
const CACHED_STREAM_BYTES: u64 = 64 << 10;

pub(super) fn read_through_cache(s: &BitmapSummary) -> bool {
    key_bytes(s) >= CACHED_STREAM_BYTES
}
