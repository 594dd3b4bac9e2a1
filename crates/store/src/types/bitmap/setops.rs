//! Set operations over several keys: TR.BITOP, TR.BITOPCARD, TR.JACCARD and
//! TR.CONTAINS. Contract: the sources' containers are merge-scanned in block
//! order ([`Txn::bm_merge`], [`Txn::bm_pairs`]), one container per source
//! held at a time, and a block only one side needs is stepped over unread;
//! missing sources are empty (open point 3); a source's container that is
//! the result's block passes through uncopied. A stored result replaces
//! the destination under a fresh version, or in place over a destination
//! of similar size ([`rewrite_in_place`]: only the blocks that differ are
//! written), or goes to the write-back tier (`write_back`).

use std::sync::Arc;

use roaringd_bitmap::{setops, ContainerBuf, ContainerRef, ContainerView};

use crate::error::Result;
use crate::keys;
use crate::meta::{BitmapSummary, KeyMeta, Kind};
use crate::txn::Txn;

use super::block_facts::BlockFacts;
use super::bytes::{cached_facts, split, view, Bytes};
use super::container_cache::{facts_of, padded, padded_with, PAD};
use super::page;
use super::stream::{head, skip_below, take, Stream};
use super::summary::{
    is_plain_empty_bitmap, key_bytes, summary_of, summary_push, summary_push_facts,
};

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

    /// The container `r` (this piece's) as a padded value carrying its
    /// facts ([`BlockFacts::of`]), and those facts: a
    /// source's container cache entry itself where it is one with facts
    /// (shared, not copied: cache values are immutable; its values are
    /// not read), else a copy.
    fn kept(&self, r: ContainerRef<'_>) -> (Option<BlockFacts>, Arc<[u8]>) {
        if let Piece::Source(Bytes::Shared(a)) = self {
            if let Some(f) = facts_of(a) {
                return (Some(f), Arc::clone(a));
            }
        }
        let f = self.facts().or_else(|| BlockFacts::of(r));
        (f, padded_with(self.bytes(), f))
    }
}

/// A TR.BITOP result as the write-back tier keeps it: block, padded
/// container (a source's cache entry where the block is its own).
pub(super) type KeptBlocks = Vec<(u16, Arc<[u8]>)>;

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

impl Txn {
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
        if self.bm.keep_dest.is_some() {
            // Refused by the tier: the normal path, on a clean key.
            self.bm.keep_dest = None;
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
        self.bm_put_packed(
            db,
            dest,
            version,
            out.iter().map(|(hi, b)| (*hi, b.as_slice())),
        )?;
        self.put_new_bitmap_meta(db, dest, version, s)?;
        Ok(s.card)
    }

    /// Makes the containers of `dest`'s live version (`m`) those of `out`
    /// (a result, in block order), writing only the entries that differ:
    /// the result is packed ([`super::page`]) and compared with the stored
    /// entries as bytes; an entry stored with the same bytes is left
    /// alone, every other stored entry is deleted or overwritten. `s`: the
    /// result's summary; the caller writes the meta.
    fn bm_rewrite(
        &mut self,
        db: u16,
        dest: &[u8],
        (m, s): (KeyMeta, &BitmapSummary),
        out: &mut [(u16, Vec<u8>)],
    ) -> Result<()> {
        let version = m.version;
        let old: Vec<(Vec<u8>, Vec<u8>)> = self
            .data_iter(db, dest, version, None, false)
            .collect::<Result<_>>()?;
        // Read from the overlay from now on (rare: an edit and a TR.BITOP
        // into the same key in one `Txn`).
        self.bm
            .written
            .retain(|&(d, v, _), _| (d, v) != (db, version));
        let packed = page::pack(out);
        let new_at = |k: &[u8]| -> Option<usize> {
            let [a, b] = *k else { return None };
            packed
                .binary_search_by_key(&u16::from_be_bytes([a, b]), |&(k, _)| k)
                .ok()
        };
        let mut kept = vec![false; packed.len()];
        let mut gone: Vec<(u16, u16)> = Vec::new();
        for (sub, v) in &old {
            match new_at(sub) {
                Some(j) if packed[j].1 == *v => kept[j] = true,
                Some(_) => {}
                None => self.data_delete(db, dest, version, sub),
            }
            if let [a, b] = sub[..] {
                let k = u16::from_be_bytes([a, b]);
                for (hi, _) in page::containers(k, v)? {
                    if out.binary_search_by_key(&hi, |(h, _)| *h).is_err() {
                        gone.push((hi, k));
                    }
                }
            }
        }
        let cache = self.inner.ccache.enabled();
        let fill = self.bm_result_cached(s);
        if cache {
            for (hi, k) in gone {
                let dk = keys::data_key(db, dest, version, &k.to_be_bytes());
                self.bm
                    .cc_pending
                    .record_stored((version, hi, dk), None, false);
            }
            let mut j = 0;
            for (hi, bytes) in out.iter() {
                while packed[j].0 < *hi {
                    j += 1;
                }
                if kept[j] {
                    continue;
                }
                let dk = keys::data_key(db, dest, version, &packed[j].0.to_be_bytes());
                self.bm
                    .cc_pending
                    .record_stored((version, *hi, dk), Some(padded(bytes)), fill);
            }
        }
        for ((k, v), kept) in packed.into_iter().zip(kept) {
            if !kept {
                self.data_put(db, dest, version, &k.to_be_bytes(), v);
            }
        }
        if fill {
            // The version now holds exactly the result's blocks.
            let blocks: Vec<u16> = out.iter().map(|(hi, _)| *hi).collect();
            self.bm.cc_pending.record_dir(version, blocks.into());
        }
        Ok(())
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
        if let (BitOp::Not, [src]) = (op, srcs) {
            // The complement over [0, max]: counted from the summary.
            return Ok(match self.bm_version(db, src)? {
                Some((_, s)) if s.card > 0 => (u64::from(s.max) + 1).saturating_sub(s.card),
                _ => 0,
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
