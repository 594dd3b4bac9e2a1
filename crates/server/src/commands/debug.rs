//! DEBUG: diagnostics and fault injection, refused unless
//! `enable-debug-command` allows the client (as in Redis 7).
//!
//! - `DEBUG SLEEP <seconds>`: the connection's worker sleeps (fractions
//!   allowed), as Redis's whole server does: for tests of what a stalled
//!   worker costs other clients.
//! - `DEBUG PANIC`: panics inside the command. Redis crashes the server
//!   here; roaringd only fails the command (`ERR internal error while
//!   running 'debug|panic'`), which is what the tests of panic isolation
//!   need: the connection, the pipeline around it and the data stay.
//! - `DEBUG PANIC-AFTER-WRITE <key>` (roaringd only): sets `key` to the
//!   string `panic` in the command's transaction, then panics. A data
//!   command, so it joins pipeline groups and EXEC: the write must not be
//!   applied and the commands around it must keep their effects.

use roaringd_resp::Args;

use crate::command_table::{AclCat, CommandSpec, Flag, KeySpec};
use crate::commands::connection::{container, help};
use crate::config::DebugAccess;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;

const FLAGS: &[Flag] = &[Flag::Admin, Flag::Noscript, Flag::Loading, Flag::Stale];
const ACL: &[AclCat] = &[AclCat::Dangerous];

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec::new("debug", -2, container)
    .subcommands(DEBUG)
    .doc("A container for debugging commands.", "1.0.0", "server")];

const DEBUG: &[CommandSpec] = &[
    CommandSpec::new("sleep", 3, debug_sleep)
        .flags(FLAGS)
        .acl(ACL)
        .doc(
            "Blocks the connection's worker for a while.",
            "1.0.0",
            "server",
        ),
    CommandSpec::new("panic", 2, debug_panic)
        .flags(FLAGS)
        .acl(ACL)
        .doc("Panics inside the command.", "1.0.0", "server"),
    CommandSpec::new("panic-after-write", 3, debug_panic_after_write)
        .flags(&[Flag::Write, Flag::Admin, Flag::Noscript])
        .keys(KeySpec::range(2, 2, 1))
        .acl(ACL)
        .doc(
            "Writes a key in the command's transaction, then panics.",
            "1.0.0",
            "server",
        ),
    CommandSpec::new("compact", 2, debug_compact)
        .flags(FLAGS)
        .acl(ACL)
        .doc(
            "Flushes the memtables and compacts the LSM store fully.",
            "1.0.0",
            "server",
        ),
    CommandSpec::new("help", 2, debug_help)
        .flags(&[Flag::Loading, Flag::Stale])
        .doc(
            "Returns helpful text about the different subcommands.",
            "1.0.0",
            "server",
        ),
];

/// `Ok` when `enable-debug-command` lets this client run DEBUG, else
/// Redis 7's refusal.
fn allowed(ctx: &Ctx<'_>) -> Result<(), CommandError> {
    let ok = match ctx.server.config.read().enable_debug_command {
        DebugAccess::Yes => true,
        DebugAccess::Local => ctx.client.info.addr.ip().is_loopback(),
        DebugAccess::No => false,
    };
    if ok {
        Ok(())
    } else {
        Err(CommandError::err(
            "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", \
             you can run it from a local connection, otherwise you need to set this option in the \
             configuration file, and then restart the server.",
        ))
    }
}

fn debug_sleep(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    allowed(ctx)?;
    let secs = args.next_f64()?;
    args.finish()?;
    if !(0.0..=3600.0).contains(&secs) {
        return Err(CommandError::err("value is out of range"));
    }
    std::thread::sleep(std::time::Duration::from_secs_f64(secs));
    Ok(Reply::Ok)
}

fn debug_panic(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    allowed(ctx)?;
    args.finish()?;
    panic!("DEBUG PANIC");
}

fn debug_panic_after_write(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    allowed(ctx)?;
    let key = args.next_bytes()?;
    args.finish()?;
    let db = ctx.db;
    ctx.txn()?.set(
        db,
        key,
        b"panic".to_vec(),
        roaringd_store::types::strings::SetOptions::default(),
    )?;
    panic!("DEBUG PANIC-AFTER-WRITE");
}

/// `DEBUG COMPACT`: flushes and compacts the LSM store (blocking this
/// connection's worker, off its I/O threads), so that INFO storage then
/// shows the table bytes of the live data only.
fn debug_compact(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    allowed(ctx)?;
    args.finish()?;
    let store = &ctx.server.store;
    crate::dispatch::run_blocking(|| store.compact())?;
    Ok(Reply::Ok)
}

fn debug_help(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    args.finish()?;
    Ok(help(
        "DEBUG",
        &[
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "PANIC",
            "    Panic inside the command (roaringd fails the command only).",
            "PANIC-AFTER-WRITE <key>",
            "    Write <key> in the command's transaction, then panic.",
            "COMPACT",
            "    Flush the memtables and compact the LSM store fully.",
        ],
    ))
}
