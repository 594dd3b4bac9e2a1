//! Command families, one file each. Every file exports
//! `pub const COMMANDS: &[CommandSpec]`; `command_table::FAMILIES` lists them.

pub mod acl;
pub mod connection;
pub mod debug;
pub mod hashes;
pub mod introspection;
pub mod keyspace;
pub mod server;
pub mod sets;
pub mod strings;
pub mod tr_admin;
pub mod tr_args;
pub mod tr_read;
pub mod tr_setops;
pub mod tr_write;
pub mod transactions;
pub mod work;
