//! Container bytes as the operations see them. Stored bytes are untrusted:
//! every container reaching an operation goes through [`view`], which runs
//! every check on bytes read from the `Kv` and only the O(1) structure
//! checks on bytes the engine encoded or the container cache validated when
//! it took them ([`ContainerBytes`]); a bad container is `Corrupt`, never a
//! panic. [`Bytes`] is either kind. Also the offset arithmetic (`split`,
//! `join`).

use std::sync::Arc;

use roaringd_bitmap::ContainerView;

use crate::error::{Result, StoreError};

use super::block_facts::BlockFacts;
use super::container_cache::{facts_of, PAD};

/// Values per container.
pub(super) const BLOCK: u64 = 1 << 16;

pub(super) fn split(v: u32) -> (u16, u16) {
    ((v >> 16) as u16, v as u16)
}

/// The offsets `sorted` (ascending) grouped by block: `(block, its
/// offsets)`, ascending.
pub(super) fn by_block(sorted: &[u32]) -> impl Iterator<Item = (u16, &[u32])> {
    sorted
        .chunk_by(|&a, &b| split(a).0 == split(b).0)
        .map(|g| (split(g[0]).0, g))
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
    /// it wrote ([`WrittenBlock::Container`](super::txn_state::WrittenBlock::Container)): each was validated by
    /// [`ContainerView::parse`] when it entered the cache (`FillScan`,
    /// `bm_get_stored`) or is the engine's own encoding (a `ContainerBuf`'s
    /// or a `PointWrite`'s: commit-time updates of containers this module
    /// wrote, those records, the tier's blocks), so only the O(1)
    /// structure checks run again.
    fn checked_view(&self) -> Result<ContainerView<'_>> {
        match self {
            Bytes::Owned(v) => v.checked_view(),
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

/// Container bytes as read: owned (from this `Txn`'s overlay or a `Kv`
/// read that was not cached) or shared with the container cache (a
/// [`padded`](super::container_cache::padded) value). Either way the same
/// serialized bytes, parsed through [`view`] before use.
#[derive(Clone, Debug)]
pub(super) enum Bytes {
    Owned(Vec<u8>),
    Shared(Arc<[u8]>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
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
