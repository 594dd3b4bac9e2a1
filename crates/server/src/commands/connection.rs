//! PING ECHO QUIT RESET HELLO AUTH SELECT CLIENT.

use roaringd_resp::Args;

use crate::command_table::{AclCat, CommandSpec, Flag};
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("ping", -1, ping)
        .flags(&[Flag::Fast, Flag::Sentinel])
        .acl(&[AclCat::Connection])
        .doc(
            "Returns the server's liveliness response.",
            "1.0.0",
            "connection",
        ),
    CommandSpec::new("echo", 2, echo)
        .flags(&[Flag::Fast])
        .acl(&[AclCat::Connection])
        .doc("Returns the given string.", "1.0.0", "connection"),
];

fn ping(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    match args.remaining() {
        0 => Ok(Reply::status("PONG")),
        1 => Ok(Reply::Bulk(args.next_bytes()?.to_vec())),
        _ => Err(CommandError::Arity("ping".into())),
    }
}

fn echo(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::Bulk(args.next_bytes()?.to_vec()))
}
