//! keyspace family. Owned by the store helper: handlers over `Ctx::txn()`.

use crate::command_table::CommandSpec;

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[];
