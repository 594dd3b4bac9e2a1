//! Key layout and data-type semantics on the embedded LSM store.
//!
//! Layers, bottom up: [`kv`] (the narrow storage trait) with [`kv::lsm`]
//! (fjall, the only file naming it) and [`kv::mem`] (in memory); [`keys`]
//! and [`meta`] (entry layout and codecs); [`locks`] and [`store`] (the
//! `Store` handle: versions, locks, counters, sync mode, active expiry);
//! [`txn`] (a transaction with its write overlay and one-batch commit); and
//! the typed operations on a `Txn`, one module per family under [`types`]:
//! [`types::keyspace`], [`types::strings`], [`types::sets`],
//! [`types::hashes`], [`types::bitmap`]. Redis's glob and number rules are
//! the `roaringd-compat` crate's.
//!
//! Design notes (see also docs/architecture.md):
//! - Every key has a unique version (`epoch << 40 | seq`, epoch persisted
//!   and bumped at open). DEL / overwrite rewrite only the meta entry; the
//!   old version's `data` entries are invisible at once and dropped by a
//!   fjall compaction filter on `data` that reads the live `meta` keyspace
//!   (`Store::compact` forces a full compaction).
//! - The expiry index is a third keyspace, `expiry` (`expire_at | db |
//!   key`), kept in the same batch as meta changes; the active cycle reads
//!   it from a cursor in time order. Per-database key / expire counters are
//!   persisted records in `meta` under the reserved database `0xFFFF`,
//!   updated in the same batch. A fourth keyspace, `log`, holds the bitmap
//!   write-back tier's operation log (`types::bitmap::oplog`), so the LSM
//!   store's journal is the store's one log.
//! - Strings live inline in `meta`, and so does a bitmap whose data is one
//!   entry of at most 2 KiB ([`meta::FLAG_INLINE`]); a set's members are
//!   `data` entries in pages of about a kilobyte (`types::sets::page`), a
//!   hash is one entry per field (value = insertion sequence | value, to
//!   replay Redis's listpack order), a bitmap's containers are packed
//!   pages or singles (`types::bitmap::page`). Cardinalities live in the
//!   meta summary.
//! - Limits that Redis does not have: an entry key (prefix + key, plus
//!   member / field for elements) is at most 65,535 bytes (fjall's limit),
//!   reported as `StoreError::KeyTooLong`.

pub mod alloc_hint;
mod clock;
pub mod error;
pub mod key_read;
pub mod keys;
pub mod kv;
pub mod locks;
pub mod meta;
mod prefetch;
pub mod sample;
pub mod store;
pub mod tier;
pub mod txn;
pub mod types;
mod varint;

pub use error::{Result, StoreError};
pub use key_read::KeyRead;
pub use kv::{Durability, Kv, KvRead, KvStats, Space, WriteBatch};
pub use meta::{BitmapSummary, KeyMeta, Kind, KindCensus, MetaBrief, Summary, BITMAP_TYPE_NAME};
pub use store::{now_ms, DbStats, Store, StoreConfig, StoreStats, SyncMode};
pub use txn::Txn;
