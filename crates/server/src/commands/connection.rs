//! PING ECHO QUIT RESET HELLO AUTH SELECT CLIENT.

use std::sync::atomic::Ordering;

use roaringd_resp::{Args, Protocol};

use crate::command_table::{AclCat, CommandSpec, Flag};
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;
use crate::state::now_ms;

const CONN: &[AclCat] = &[AclCat::Connection];
const CONN_FLAGS: &[Flag] = &[
    Flag::Noscript,
    Flag::Loading,
    Flag::Stale,
    Flag::Fast,
    Flag::NoAuth,
    Flag::AllowBusy,
    Flag::NoQueue,
];

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("ping", -1, ping)
        .flags(&[Flag::Fast, Flag::Sentinel])
        .acl(CONN)
        .doc(
            "Returns the server's liveliness response.",
            "1.0.0",
            "connection",
        ),
    CommandSpec::new("echo", 2, echo)
        .flags(&[Flag::Loading, Flag::Stale, Flag::Fast])
        .acl(CONN)
        .doc("Returns the given string.", "1.0.0", "connection"),
    CommandSpec::new("quit", -1, quit)
        .flags(CONN_FLAGS)
        .acl(CONN)
        .doc("Closes the connection.", "1.0.0", "connection"),
    CommandSpec::new("reset", 1, reset)
        .flags(CONN_FLAGS)
        .acl(CONN)
        .doc("Resets the connection.", "6.2.0", "connection"),
    CommandSpec::new("hello", -1, hello)
        .flags(&[
            Flag::Noscript,
            Flag::Loading,
            Flag::Stale,
            Flag::Fast,
            Flag::NoAuth,
            Flag::AllowBusy,
            Flag::Sentinel,
        ])
        .acl(CONN)
        .doc("Handshakes with the Redis server.", "6.0.0", "connection"),
    CommandSpec::new("auth", -2, auth)
        .flags(&[
            Flag::Noscript,
            Flag::Loading,
            Flag::Stale,
            Flag::Fast,
            Flag::NoAuth,
            Flag::AllowBusy,
            Flag::Sentinel,
        ])
        .acl(CONN)
        .doc("Authenticates the connection.", "1.0.0", "connection"),
    CommandSpec::new("select", 2, select)
        .flags(&[Flag::Loading, Flag::Stale, Flag::Fast])
        .acl(CONN)
        .doc("Changes the selected database.", "1.0.0", "connection"),
    CommandSpec::new("client", -2, container)
        .subcommands(CLIENT)
        .doc(
            "A container for client connection commands.",
            "2.4.0",
            "connection",
        ),
];

const CLIENT_FLAGS: &[Flag] = &[Flag::Noscript, Flag::Loading, Flag::Stale];
const CLIENT_ADMIN: &[Flag] = &[Flag::Admin, Flag::Noscript, Flag::Loading, Flag::Stale];

const CLIENT: &[CommandSpec] = &[
    CommandSpec::new("id", 2, client_id)
        .flags(CLIENT_FLAGS)
        .acl(CONN)
        .doc(
            "Returns the unique client ID of the connection.",
            "5.0.0",
            "connection",
        ),
    CommandSpec::new("setname", 3, client_setname)
        .flags(CLIENT_FLAGS)
        .acl(CONN)
        .doc("Sets the connection name.", "2.6.9", "connection"),
    CommandSpec::new("getname", 2, client_getname)
        .flags(CLIENT_FLAGS)
        .acl(CONN)
        .doc("Returns the name of the connection.", "2.6.9", "connection"),
    CommandSpec::new("list", -2, client_list)
        .flags(CLIENT_ADMIN)
        .acl(CONN)
        .doc("Lists open connections.", "2.4.0", "connection"),
    CommandSpec::new("info", 2, client_info)
        .flags(CLIENT_FLAGS)
        .acl(CONN)
        .doc(
            "Returns information about the connection.",
            "6.2.0",
            "connection",
        ),
    CommandSpec::new("kill", -3, client_kill)
        .flags(CLIENT_ADMIN)
        .acl(CONN)
        .doc("Terminates open connections.", "2.4.0", "connection"),
    CommandSpec::new("setinfo", 4, client_setinfo)
        .flags(CLIENT_FLAGS)
        .acl(CONN)
        .doc(
            "Sets information specific to the client or connection.",
            "7.2.0",
            "connection",
        ),
    CommandSpec::new("help", 2, client_help)
        .flags(&[Flag::Loading, Flag::Stale])
        .acl(CONN)
        .doc(
            "Returns helpful text about the different subcommands.",
            "5.0.0",
            "connection",
        ),
];

/// Handler of container rows: only reached if dispatch found no subcommand.
pub(crate) fn container(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Err(CommandError::Syntax)
}

fn ping(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let _ = ctx;
    match args.remaining() {
        0 => Ok(Reply::status("PONG")),
        1 => Ok(Reply::Bulk(args.next_bytes()?.to_vec())),
        _ => Err(CommandError::Arity("ping".into())),
    }
}

fn echo(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::Bulk(args.next_bytes()?.to_vec()))
}

fn quit(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    ctx.client.close_after_reply = true;
    Ok(Reply::Ok)
}

fn reset(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let c = &mut *ctx.client;
    c.multi = None;
    c.info.multi.store(-1, Ordering::Relaxed);
    ctx.server.watches.unwatch_all(c.id, &mut c.watch);
    c.db = 0;
    c.info.db.store(0, Ordering::Relaxed);
    c.protocol = Protocol::Resp2;
    c.info.resp.store(2, Ordering::Relaxed);
    c.info.name.lock().clear();
    // Back to `default`, authenticated only if it needs no password.
    let default = ctx.server.acl.default_user();
    c.authenticated = default.nopass && default.enabled;
    c.set_user(default);
    Ok(Reply::status("RESET"))
}

/// Authenticates the client as `user` with `pass` (AUTH, HELLO AUTH).
///
/// # Errors
/// `WRONGPASS` (also recorded in the ACL log) for an unknown or disabled
/// user or a wrong password.
fn authenticate(
    ctx: &mut Ctx<'_>,
    command: &[u8],
    user: &[u8],
    pass: &[u8],
) -> Result<(), CommandError> {
    match ctx.server.acl.authenticate(user, pass) {
        Some(u) => {
            ctx.client.authenticated = true;
            ctx.client.set_user(u);
            Ok(())
        }
        None => {
            crate::acl::log_auth_failure(ctx.server, ctx.client, command, user);
            Err(CommandError::WrongPass)
        }
    }
}

fn auth(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let command = args.get(0).unwrap_or_default();
    let (user, pass) = match args.remaining() {
        1 => {
            if ctx.server.acl.default_user().nopass {
                return Err(CommandError::err(
                    "AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
                ));
            }
            (&b"default"[..], args.next_bytes()?)
        }
        2 => (args.next_bytes()?, args.next_bytes()?),
        _ => return Err(CommandError::Syntax),
    };
    authenticate(ctx, command, user, pass)?;
    Ok(Reply::Ok)
}

/// Redis's client-name rule: printable ASCII without spaces.
fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

fn hello(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let mut proto = None;
    if args.remaining() > 0 {
        let v = args
            .next_i64()
            .map_err(|_| CommandError::err("Protocol version is not an integer or out of range"))?;
        if !(2..=3).contains(&v) {
            return Err(CommandError::Custom(
                "NOPROTO unsupported protocol version".into(),
            ));
        }
        proto = Some(if v == 2 {
            Protocol::Resp2
        } else {
            Protocol::Resp3
        });
    }
    let mut creds = None;
    let mut name = None;
    while let Some(opt) = args.peek() {
        let more = args.remaining() - 1;
        if opt.eq_ignore_ascii_case(b"AUTH") && more >= 2 {
            args.next_bytes()?;
            creds = Some((args.next_bytes()?, args.next_bytes()?));
        } else if opt.eq_ignore_ascii_case(b"SETNAME") && more >= 1 {
            args.next_bytes()?;
            let n = args.next_bytes()?;
            if !valid_name(n) {
                return Err(CommandError::err(
                    "Client names cannot contain spaces, newlines or special characters.",
                ));
            }
            name = Some(n);
        } else {
            return Err(CommandError::err_echo(
                "Syntax error in HELLO option '",
                opt,
                "'",
            ));
        }
    }
    if let Some((user, pass)) = creds {
        let command = args.get(0).unwrap_or_default();
        authenticate(ctx, command, user, pass)?;
    }
    if !ctx.client.authenticated {
        return Err(CommandError::Custom(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time".into(),
        ));
    }
    if let Some(n) = name {
        *ctx.client.info.name.lock() = n.to_vec();
    }
    if let Some(p) = proto {
        ctx.client.protocol = p;
        ctx.client
            .info
            .resp
            .store(p.number() as u8, Ordering::Relaxed);
    }
    Ok(Reply::Map(vec![
        (Reply::Static(b"server"), Reply::Static(b"redis")),
        (
            Reply::Static(b"version"),
            Reply::Static(crate::REDIS_VERSION.as_bytes()),
        ),
        (
            Reply::Static(b"proto"),
            Reply::Integer(ctx.client.protocol.number()),
        ),
        (Reply::Static(b"id"), Reply::Integer(ctx.client.id as i64)),
        (Reply::Static(b"mode"), Reply::Static(b"standalone")),
        (Reply::Static(b"role"), Reply::Static(b"master")),
        (Reply::Static(b"modules"), Reply::Array(Vec::new())),
    ]))
}

fn select(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let db = args.next_i64()?;
    if db < 0 || db >= i64::from(ctx.server.store.databases()) || db > i64::from(i32::MAX) {
        return Err(CommandError::DbIndexOutOfRange);
    }
    ctx.client.db = db as u16;
    ctx.client.info.db.store(db as u32, Ordering::Relaxed);
    Ok(Reply::Ok)
}

fn client_id(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::Integer(ctx.client.id as i64))
}

fn client_setname(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let n = args.next_bytes()?;
    if !valid_name(n) {
        return Err(CommandError::err(
            "Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    *ctx.client.info.name.lock() = n.to_vec();
    Ok(Reply::Ok)
}

fn client_getname(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let n = ctx.client.info.name.lock();
    Ok(if n.is_empty() {
        Reply::Null
    } else {
        Reply::Bulk(n.clone())
    })
}

fn client_list(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let mut ids: Option<Vec<u64>> = None;
    let mut only_pubsub = false;
    while args.remaining() > 0 {
        if args.eat_keyword("TYPE") {
            let t = args.next_bytes()?.to_ascii_lowercase();
            match t.as_slice() {
                b"normal" => only_pubsub = false,
                b"pubsub" | b"master" | b"replica" | b"slave" => only_pubsub = true,
                _ => return Err(CommandError::err_echo("Unknown client type '", &t, "'")),
            }
        } else if args.eat_keyword("ID") {
            let mut v = Vec::new();
            while args.remaining() > 0 {
                let id = args
                    .next_i64()
                    .map_err(|_| CommandError::err("Invalid client ID"))?;
                if id <= 0 {
                    return Err(CommandError::err("Invalid client ID"));
                }
                v.push(id as u64);
            }
            ids = Some(v);
        } else {
            return Err(CommandError::Syntax);
        }
    }
    let now = now_ms();
    let mut text = String::new();
    if !only_pubsub {
        for info in ctx.server.clients.lock().values() {
            if ids.as_ref().is_some_and(|v| !v.contains(&info.id)) {
                continue;
            }
            let line = if info.id == ctx.client.id {
                describe_self(ctx, now)
            } else {
                info.describe(now)
            };
            text.push_str(&line);
            text.push('\n');
        }
    }
    Ok(Reply::Verbatim(text.into_bytes()))
}

/// This client's own line: its last command is the one running now.
fn describe_self(ctx: &Ctx<'_>, now: u64) -> String {
    ctx.client.info.describe(now)
}

fn client_info(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let mut line = describe_self(ctx, now_ms());
    line.push('\n');
    Ok(Reply::Verbatim(line.into_bytes()))
}

fn client_kill(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let clients: Vec<_> = ctx.server.clients.lock().values().cloned().collect();
    if args.remaining() == 1 {
        // Old form: CLIENT KILL addr:port.
        let addr = args.next_bytes()?;
        for c in &clients {
            if c.addr.to_string().as_bytes() == addr {
                kill(ctx, c);
                return Ok(Reply::Ok);
            }
        }
        return Err(CommandError::err("No such client"));
    }
    let mut id = None;
    let mut addr = None;
    let mut laddr = None;
    let mut user = None;
    let mut skipme = true;
    while args.remaining() > 0 {
        if args.remaining() < 2 {
            return Err(CommandError::Syntax);
        }
        let opt = args.next_bytes()?.to_ascii_lowercase();
        let val = args.next_bytes()?;
        match opt.as_slice() {
            b"id" => {
                let v = roaringd_compat::number::parse_i64(val)
                    .filter(|v| *v > 0)
                    .ok_or_else(|| CommandError::err("client-id should be greater than 0"))?;
                id = Some(v as u64);
            }
            b"addr" => addr = Some(val.to_vec()),
            b"laddr" => laddr = Some(val.to_vec()),
            b"user" => {
                let u = ctx
                    .server
                    .acl
                    .get(val)
                    .ok_or_else(|| CommandError::err_echo("No such user '", val, "'"))?;
                user = Some(u.uid);
            }
            b"type" => {
                let t = val.to_ascii_lowercase();
                if !matches!(
                    t.as_slice(),
                    b"normal" | b"master" | b"replica" | b"slave" | b"pubsub"
                ) {
                    return Err(CommandError::err_echo("Unknown client type '", val, "'"));
                }
            }
            b"skipme" => {
                skipme = match val.to_ascii_lowercase().as_slice() {
                    b"yes" => true,
                    b"no" => false,
                    _ => return Err(CommandError::Syntax),
                }
            }
            _ => return Err(CommandError::Syntax),
        }
    }
    let mut killed = 0;
    for c in &clients {
        if id.is_some_and(|i| i != c.id)
            || addr
                .as_ref()
                .is_some_and(|a| c.addr.to_string().as_bytes() != a.as_slice())
            || laddr
                .as_ref()
                .is_some_and(|a| c.laddr.to_string().as_bytes() != a.as_slice())
            || user.is_some_and(|u| u != c.user_uid())
            || (skipme && c.id == ctx.client.id)
        {
            continue;
        }
        kill(ctx, c);
        killed += 1;
    }
    Ok(Reply::Integer(killed))
}

fn kill(ctx: &mut Ctx<'_>, c: &std::sync::Arc<crate::client::ClientInfo>) {
    if c.id == ctx.client.id {
        ctx.client.close_after_reply = true;
    } else {
        // Gone at once for CLIENT LIST / KILL / INFO, as Redis frees it at once.
        ctx.server.clients.lock().remove(&c.id);
        c.kill();
    }
}

fn client_setinfo(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let attr = args.next_bytes()?.to_ascii_lowercase();
    let val = args.next_bytes()?;
    let slot = match attr.as_slice() {
        b"lib-name" => &ctx.client.info.lib_name,
        b"lib-ver" => &ctx.client.info.lib_ver,
        _ => return Err(CommandError::err_echo("Unrecognized option '", &attr, "'")),
    };
    if !valid_name(val) {
        return Err(CommandError::err_echo(
            "",
            &attr,
            " cannot contain spaces, newlines or special characters.",
        ));
    }
    *slot.lock() = val.to_vec();
    Ok(Reply::Ok)
}

fn client_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(help(
        "CLIENT",
        &[
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are: ID, ADDR, LADDR, USER, TYPE, SKIPME.",
            "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <id> [<id> ...]]",
            "    Return information about client connections.",
            "SETINFO <option> <value>",
            "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
        ],
    ))
}

/// A `<CMD> HELP` reply in Redis's layout.
pub(crate) fn help(cmd: &str, lines: &[&str]) -> Reply {
    let mut v = vec![Reply::Status(
        format!("{cmd} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:").into(),
    )];
    v.extend(lines.iter().map(|l| Reply::Status((*l).to_string().into())));
    v.push(Reply::status("HELP"));
    v.push(Reply::status("    Prints this help."));
    Reply::Array(v)
}
