//! Container bytes as the operations see them. Stored bytes are untrusted:
//! every container reaching an operation goes through [`view`], which runs
//! every check on bytes read from the `Kv` and only the O(1) structure
//! checks on bytes the engine encoded or the container cache validated when
//! it took them ([`ContainerBytes`]); a bad container is `Corrupt`, never a
//! panic. [`Bytes`] is either kind, with the number of delta entries stored
//! beside the container. Also the offset arithmetic (`split`, `join`).

use std::sync::Arc;

use roaringd_bitmap::ContainerView;

use crate::error::{Result, StoreError};

use super::block_facts::BlockFacts;
use super::container_cache::{deltas_of, facts_of, PAD};
use super::delta::Folded;

/// Values per container.
pub(super) const BLOCK: u64 = 1 << 16;

pub(super) fn split(v: u32) -> (u16, u16) {
    ((v >> 16) as u16, v as u16)
}

pub(super) fn join(hi: u16, lo: u16) -> u32 {
    (u32::from(hi) << 16) | u32::from(lo)
}

pub(super) fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("bitmap container: {e}"))
}

/// Container bytes a checked view can be taken over.
pub(super) trait ContainerBytes {
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
    /// it wrote ([`WrittenBlock::Folded`](super::txn_state::WrittenBlock::Folded)): each was validated by
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
pub(super) fn view<B: ContainerBytes + ?Sized>(bytes: &B) -> Result<ContainerView<'_>> {
    bytes.checked_view()
}

/// Raw `(subkey, value)` data entries of one key version.
pub(super) type RawEntries<'a> = Box<dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + Send + 'a>;

/// The first container of `entries` with its deltas applied, as
/// `(bytes, deltas)`, when it is `block`'s.
pub(super) fn fold_first(entries: RawEntries<'_>, block: u16) -> Result<Option<(Vec<u8>, u16)>> {
    match Folded::new(entries, false).next().transpose()? {
        Some((b, v, n)) if b == block => Ok(Some((v, n))),
        _ => Ok(None),
    }
}

/// Container bytes as read, deltas applied: owned (from this `Txn`'s
/// overlay or a `Kv` read that was not cached; with the number of delta
/// entries stored for the container) or shared with the container cache
/// (a [`padded`](super::container_cache::padded) value, which carries that number). Either way the same
/// serialized bytes, parsed through [`view`] before use.
#[derive(Clone, Debug)]
pub(super) enum Bytes {
    Owned(Vec<u8>, u16),
    Shared(Arc<[u8]>),
}

impl Bytes {
    /// Number of delta entries stored beside the container.
    pub(super) fn deltas(&self) -> u16 {
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
pub(super) fn cached_facts(b: &Bytes) -> Option<BlockFacts> {
    match b {
        Bytes::Shared(a) => facts_of(a),
        Bytes::Owned(..) => None,
    }
}
