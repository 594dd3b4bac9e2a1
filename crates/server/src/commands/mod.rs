//! Command families, one file each. Every file exports
//! `pub const COMMANDS: &[CommandSpec]`; `command_table::FAMILIES` lists them.

pub mod connection;
pub mod hashes;
pub mod introspection;
pub mod keyspace;
pub mod server;
pub mod sets;
pub mod strings;
pub mod transactions;
