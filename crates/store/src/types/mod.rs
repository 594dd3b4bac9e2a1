//! The data types' semantics as typed operations on a [`Txn`](crate::txn::Txn),
//! one module per family: [`keyspace`] (commands on any key), [`strings`],
//! [`sets`], [`hashes`] and [`bitmap`] (the TairRoaring `TR.*` type, with
//! the machinery only bitmaps use).

pub mod bitmap;
pub mod hashes;
pub mod keyspace;
pub mod sets;
pub mod strings;
