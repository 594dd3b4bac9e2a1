//! INFO CONFIG DBSIZE TIME FLUSHDB FLUSHALL SLOWLOG SAVE BGSAVE LASTSAVE SHUTDOWN COMMAND.

use crate::command_table::CommandSpec;

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[];
