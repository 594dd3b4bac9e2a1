//! The roaringd server library: configuration, listener, connections,
//! dispatch through one command table, and the command families.
//!
//! Request path: `listener` accepts → `connection` reads and parses every
//! complete request → `dispatch` resolves the row, checks arity/auth/MULTI
//! and the user's ACL permissions (`acl`),
//! opens the store `Txn`, runs the handler, commits → the `Reply` is encoded
//! into the connection's output buffer → one write per read (a big reply
//! is streamed instead: `stream`).

pub mod acl;
pub mod allocator;
pub mod client;
pub mod command_table;
pub mod commands;
pub mod config;
pub mod connection;
pub mod counter;
pub mod ctx;
pub mod dispatch;
pub mod error;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod group_sync;
pub mod info;
pub mod listener;
pub mod log;
pub mod memory;
pub mod pipeline;
pub mod reply;
pub mod slowlog;
pub mod start;
pub mod state;
pub mod stream;
pub mod transaction;
pub mod warm;
pub mod watch;

pub use command_table::{AclCat, CommandSpec, Flag, Handler, KeyFind, KeySpec, KeySpecDoc};
pub use ctx::Ctx;
pub use error::CommandError;
pub use reply::Reply;

/// The Redis version roaringd reports (HELLO, INFO `redis_version`): the
/// command set and reply shapes follow Redis 7.0.
pub const REDIS_VERSION: &str = "7.0.15";
