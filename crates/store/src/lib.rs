//! Key layout and data-type semantics on the embedded LSM store.

pub mod error;
pub mod kv;
pub mod kv_lsm;
pub mod kv_mem;

pub mod keys;
pub mod locks;
pub mod meta;
pub mod store;
pub mod txn;

pub use error::{Result, StoreError};
pub use kv::{Durability, Kv, KvRead, KvStats, Space, WriteBatch};
pub use meta::{KeyMeta, Kind, Summary};
pub use store::{now_ms, DbStats, Store, StoreConfig, StoreStats, SyncMode};
pub use txn::Txn;
pub mod glob;
pub mod hashes;
pub mod keyspace;
pub mod number;
mod sample;
pub mod sets;
pub mod strings;
