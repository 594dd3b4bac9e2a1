//! Roaring bitmaps (the TairRoaring `TR.*` type) on a `Txn`.
//!
//! A bitmap is one `meta` entry whose summary ([`BitmapSummary`](crate::meta::BitmapSummary)) carries
//! cardinality, min, max, sum, container count and the per-kind census, and
//! `data` entries holding its non-empty containers ([`page`]): subkey = a
//! block (high 16 bits) as 2 bytes big-endian, so entries sort numerically;
//! value = that block's container as the bitmap engine serializes it (a
//! single), or a page of several small containers whose last block is the
//! subkey's. Stored bytes are untrusted: every read goes through
//! [`ContainerView::parse`](roaringd_bitmap::ContainerView::parse), and a bad entry is `Corrupt`, never a panic.
//!
//! Costs: TR.BITCOUNT (whole key), TR.MIN, TR.MAX, TR.STAT read `meta` only;
//! a single-bit write reads one container and, unless the write-back tier
//! keeps it (`write_back`), writes `meta` and the container's entry (its
//! page for a small container, the single for a big one), plus one seek
//! when it empties the container holding the minimum or maximum.
//! DEL and overwrites are O(1) through the key version (stale containers go
//! with the data GC). Multi-key operations ([`Txn::tr_bitop`](crate::txn::Txn::tr_bitop) and friends)
//! merge-scan the sources' container entries in block order, holding one
//! container per source at a time; only a stored result is collected (it is
//! written under a new version once the scan is done).
//!
//! Semantics follow `spec/tairroaring-commands.md`; the open points chosen
//! are named on each function. Empty bitmaps are kept as keys (open point 7);
//! values written by whole-value replacements carry no TTL (open point 14).

//!
//! Modules, by concern (each states its contract):
//! - `bytes`: container bytes and their validation; `summary`: the
//!   meta summary, exact after every write.
//! - `block_read` and `block_write`: one container of a key version,
//!   read through this `Txn`'s writes, the dirty map, the container cache
//!   and the `Kv`; stored by a rewrite of the entry that holds it.
//! - `stream`: a key version's containers in block order.
//! - The commands: `reads`, `bit_writes`, `range_writes`,
//!   `setops` (TR.BITOP and the other multi-key operations).
//! - `write_back`: the write-back tier's paths on a `Txn`.
//!
//! The machinery only bitmaps use: [`page`] (packed pages), [`delta`] (delta entries of
//! earlier store formats, folded at open),
//! [`block_facts`] and [`container_cache`] (the in-process cache of
//! containers), [`dirty`] and [`oplog`] (the write-back tier's dirty map
//! and operation log).

pub mod block_facts;
pub mod container_cache;
pub mod delta;
pub mod dirty;
pub mod oplog;
pub mod page;

mod bit_writes;
mod block_read;
mod block_write;
mod bytes;
mod range_writes;
mod reads;
mod setops;
mod stream;
mod summary;
mod txn_state;
mod write_back;

#[cfg(test)]
mod tests;

pub use range_writes::RangeOp;
pub use setops::BitOp;

/// For the write-back tier's model tests (`dirty.rs`).
#[cfg(test)]
pub(crate) use summary::summary_of_bitmap;
pub(crate) use txn_state::BitmapTxnState;
