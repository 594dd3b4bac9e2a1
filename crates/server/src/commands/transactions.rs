//! MULTI EXEC DISCARD WATCH UNWATCH.

use crate::command_table::CommandSpec;

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[];
