//! ACL CAT DELUSER DRYRUN GENPASS GETUSER HELP LIST LOAD LOG SAVE SETUSER
//! USERS WHOAMI, with Redis 7.0's replies and error texts.

use rand::Rng;
use roaringd_resp::Args;

use crate::acl::describe::{getuser_reply, list_line};
use crate::acl::user::{category, has_spaces, merge_selector_args};
use crate::acl::{disconnect, Denial};
use crate::command_table::{AclCat, CommandSpec, CommandTable, Family, Flag, KeySpec};
use crate::commands::connection::{container, help};
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;
use crate::transaction::OwnedArgs;

const ADMIN: &[Flag] = &[Flag::Admin, Flag::Noscript, Flag::Loading, Flag::Stale];
const PLAIN: &[Flag] = &[Flag::Noscript, Flag::Loading, Flag::Stale];

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec::new("acl", -2, container)
    .subcommands(SUBCOMMANDS)
    .doc(
        "A container for Access List Control commands.",
        "6.0.0",
        "server",
    )];

/// The subcommands: no keys, no categories beyond their flags'.
const FAMILY: Family = Family {
    acl: &[],
    group: "server",
};

const SUBCOMMANDS: &[CommandSpec] = &[
    FAMILY.row(
        "cat",
        -2,
        cat,
        PLAIN,
        KeySpec::None,
        "Lists the ACL categories, or the commands inside a category.",
        "6.0.0",
    ),
    FAMILY.row(
        "deluser",
        -3,
        deluser,
        ADMIN,
        KeySpec::None,
        "Deletes ACL users, and terminates their connections.",
        "6.0.0",
    ),
    FAMILY.row(
        "dryrun",
        -4,
        dryrun,
        ADMIN,
        KeySpec::None,
        "Simulates the execution of a command by a user, without executing the command.",
        "7.0.0",
    ),
    FAMILY.row(
        "genpass",
        -2,
        genpass,
        PLAIN,
        KeySpec::None,
        "Generates a pseudorandom, secure password that can be used to identify ACL users.",
        "6.0.0",
    ),
    FAMILY.row(
        "getuser",
        3,
        getuser,
        ADMIN,
        KeySpec::None,
        "Lists the ACL rules of a user.",
        "6.0.0",
    ),
    FAMILY.row(
        "help",
        2,
        acl_help,
        &[Flag::Loading, Flag::Stale],
        KeySpec::None,
        "Returns helpful text about the different subcommands.",
        "6.0.0",
    ),
    FAMILY.row(
        "list",
        2,
        list,
        ADMIN,
        KeySpec::None,
        "Dumps the effective rules in ACL file format.",
        "6.0.0",
    ),
    FAMILY.row(
        "load",
        2,
        load,
        ADMIN,
        KeySpec::None,
        "Reloads the rules from the configured ACL file.",
        "6.0.0",
    ),
    FAMILY.row(
        "log",
        -2,
        log,
        ADMIN,
        KeySpec::None,
        "Lists recent security events generated due to ACL rules.",
        "6.0.0",
    ),
    FAMILY.row(
        "save",
        2,
        save,
        ADMIN,
        KeySpec::None,
        "Saves the effective ACL rules in the configured ACL file.",
        "6.0.0",
    ),
    FAMILY.row(
        "setuser",
        -3,
        setuser,
        ADMIN,
        KeySpec::None,
        "Creates and modifies an ACL user and its rules.",
        "6.0.0",
    ),
    FAMILY.row(
        "users",
        2,
        users,
        ADMIN,
        KeySpec::None,
        "Lists all ACL users.",
        "6.0.0",
    ),
    FAMILY.row(
        "whoami",
        2,
        whoami,
        PLAIN,
        KeySpec::None,
        "Returns the authenticated username of the current connection.",
        "6.0.0",
    ),
];

/// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try
/// ACL HELP.` (the subcommand as sent).
fn wrong_args(args: &Args<'_>) -> CommandError {
    let mut t = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    t.extend_from_slice(crate::error::c_str(args.get(1).unwrap_or_default()));
    t.extend_from_slice(b"'. Try ACL HELP.");
    CommandError::UnknownSubcommand(t)
}

/// ACL SETUSER name [rule ...]: all rules apply, or none.
fn setuser(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let name = args.next_bytes()?;
    if has_spaces(name) {
        return Err(CommandError::err(
            "Usernames can't contain spaces or null characters",
        ));
    }
    let raw: Vec<&[u8]> = args.rest().collect();
    let rules = merge_selector_args(&raw).map_err(|i| {
        CommandError::err_echo(
            "Unmatched parenthesis in acl selector starting at '",
            raw[i],
            "'.",
        )
    })?;
    ctx.server.acl.set_user(name, &rules).map_err(|e| {
        CommandError::err_echo(
            "Error in ACL SETUSER modifier '",
            &e.rule,
            &format!("': {}", e.error.message()),
        )
    })?;
    Ok(Reply::Ok)
}

/// ACL DELUSER name [name ...]: the number deleted; their connections
/// close.
fn deluser(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let names: Vec<&[u8]> = args.rest().collect();
    if names.iter().any(|n| *n == b"default") {
        return Err(CommandError::err("The 'default' user cannot be removed"));
    }
    let gone = ctx.server.acl.delete(&names);
    disconnect(ctx.server, ctx.client, &gone);
    Ok(Reply::Integer(gone.len() as i64))
}

/// ACL GETUSER name: the user's flags, passwords and permissions; nil
/// for an unknown user.
fn getuser(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(match ctx.server.acl.get(args.next_bytes()?) {
        Some(u) => getuser_reply(&u),
        None => Reply::Null,
    })
}

/// ACL LIST: one `user <name> <rules>` line per user, by name.
fn list(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::Array(
        ctx.server
            .acl
            .users()
            .iter()
            .map(|u| Reply::Bulk(list_line(u)))
            .collect(),
    ))
}

/// ACL USERS: the user names, sorted.
fn users(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::bulks(
        ctx.server.acl.users().iter().map(|u| u.name.clone()),
    ))
}

/// ACL WHOAMI: the connection's user.
fn whoami(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::Bulk(ctx.client.user.name.clone()))
}

/// The configured `aclfile`, or Redis's error when there is none.
fn aclfile(ctx: &Ctx<'_>) -> Result<String, CommandError> {
    let f = ctx.server.config.read().aclfile.clone();
    if f.is_empty() {
        return Err(CommandError::err("This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."));
    }
    Ok(f)
}

/// ACL LOAD: replaces every user by the ACL file's (nothing changes when
/// the file has errors); connections of the replaced users close.
fn load(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let path = aclfile(ctx)?;
    let gone = crate::dispatch::run_blocking(|| crate::acl::file::load(&ctx.server.acl, &path))
        .map_err(|e| CommandError::Custom(format!("ERR {e}").into()))?;
    disconnect(ctx.server, ctx.client, &gone);
    Ok(Reply::Ok)
}

/// ACL SAVE: writes every user to the ACL file.
fn save(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let path = aclfile(ctx)?;
    crate::dispatch::run_blocking(|| crate::acl::file::save(&ctx.server.acl, &path)).map_err(
        |_| {
            CommandError::err(
                "There was an error trying to save the ACLs. Please check the server logs for more information",
            )
        },
    )?;
    Ok(Reply::Ok)
}

/// ACL CAT [category]: the category names, or the commands (and
/// subcommands) in one.
fn cat(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    match args.remaining() {
        0 => Ok(Reply::Array(
            AclCat::ALL
                .iter()
                .map(|c| Reply::Static(&c.name().as_bytes()[1..]))
                .collect(),
        )),
        1 => {
            let name = args.next_bytes()?;
            let Some(c) = category(name) else {
                let shown = &name[..name.len().min(128)];
                return Err(CommandError::err_echo("Unknown category '", shown, "'"));
            };
            Ok(Reply::Array(
                CommandTable::get()
                    .all_entries()
                    .filter(|e| e.spec.all_acl().has(c))
                    .map(|e| Reply::Static(e.full_name.as_bytes()))
                    .collect(),
            ))
        }
        _ => Err(wrong_args(args)),
    }
}

/// ACL GENPASS [bits]: random hex digits, `bits` (256) rounded up to a
/// multiple of 4.
fn genpass(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let bits = match args.remaining() {
        0 => 256,
        1 => args.next_i64()?,
        _ => return Err(wrong_args(args)),
    };
    if !(1..=4096).contains(&bits) {
        return Err(CommandError::err("ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"));
    }
    let mut rng = rand::rng();
    let pass: Vec<u8> = (0..(bits + 3) / 4)
        .map(|_| b"0123456789abcdef"[rng.random_range(0..16usize)])
        .collect();
    Ok(Reply::Bulk(pass))
}

/// ACL LOG [count | RESET]: the newest `count` (10) entries, or clears
/// the log.
fn log(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let count = match args.remaining() {
        0 => 10,
        1 if args.eat_keyword("RESET") => {
            ctx.server.acl.log.reset();
            return Ok(Reply::Ok);
        }
        1 => args.next_i64()?.max(0),
        _ => return Err(wrong_args(args)),
    };
    Ok(ctx
        .server
        .acl
        .log
        .reply(usize::try_from(count).unwrap_or(usize::MAX)))
}

/// ACL DRYRUN user command [arg ...]: `OK` when the user may run the
/// command, else why not (a bulk string). Nothing runs, nothing is
/// logged.
fn dryrun(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let name = args.next_bytes()?;
    let Some(user) = ctx.server.acl.get(name) else {
        return Err(CommandError::err_echo("User '", name, "' not found"));
    };
    let inner = OwnedArgs::new(args.all().skip(args.position()));
    let cmd = inner.args();
    let cmd_name = cmd.get(0).unwrap_or_default();
    let not_found = || CommandError::err_echo("Command '", cmd_name, "' not found");
    let mut e = CommandTable::get().lookup(cmd_name).ok_or_else(not_found)?;
    if !e.subs.is_empty() && cmd.len() >= 2 {
        e = e
            .sub(cmd.get(1).unwrap_or_default())
            .ok_or_else(not_found)?;
    }
    if !e.spec.arity_ok(cmd.len()) {
        return Err(CommandError::Arity(e.full_name.into()));
    }
    Ok(match user.check(e, &cmd) {
        Ok(()) => Reply::Ok,
        Err(Denial::Command) => Reply::Bulk(
            format!(
                "This user has no permissions to run the '{}' command",
                e.full_name
            )
            .into_bytes(),
        ),
        Err(Denial::Key(i)) => {
            let mut t = b"This user has no permissions to access the '".to_vec();
            t.extend_from_slice(cmd.get(i).unwrap_or_default());
            t.extend_from_slice(b"' key");
            Reply::Bulk(t)
        }
    })
}

fn acl_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(help(
        "ACL",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    ))
}
