//! INFO CONFIG DBSIZE TIME FLUSHDB FLUSHALL SLOWLOG SAVE BGSAVE LASTSAVE SHUTDOWN.

use std::sync::atomic::Ordering;

use roaringd_resp::Args;

use crate::command_table::{AclCat, CommandSpec, CommandTable, Flag};
use crate::commands::connection::{container, help};
use crate::config::SetError;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;
use crate::state::{now_ms, Server};

const ADMIN: &[Flag] = &[Flag::Admin, Flag::Noscript, Flag::Loading, Flag::Stale];
const FLUSH_ACL: &[AclCat] = &[AclCat::Keyspace, AclCat::Dangerous];

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("info", -1, info)
        .flags(&[Flag::Loading, Flag::Stale, Flag::Sentinel])
        .acl(&[AclCat::Dangerous])
        .doc(
            "Returns information and statistics about the server.",
            "1.0.0",
            "server",
        ),
    CommandSpec::new("config", -2, container)
        .subcommands(CONFIG)
        .doc(
            "A container for server configuration commands.",
            "2.0.0",
            "server",
        ),
    CommandSpec::new("dbsize", 1, dbsize)
        .flags(&[Flag::Readonly, Flag::Fast])
        .acl(&[AclCat::Keyspace])
        .doc(
            "Returns the number of keys in the database.",
            "1.0.0",
            "server",
        ),
    CommandSpec::new("time", 1, time)
        .flags(&[Flag::Loading, Flag::Stale, Flag::Fast])
        .doc("Returns the server time.", "2.6.0", "server"),
    CommandSpec::new("flushdb", -1, flushdb)
        .flags(&[Flag::Write, Flag::Exclusive])
        .acl(FLUSH_ACL)
        .doc(
            "Removes all keys from the current database.",
            "1.0.0",
            "server",
        ),
    CommandSpec::new("flushall", -1, flushall)
        .flags(&[Flag::Write, Flag::Exclusive])
        .acl(FLUSH_ACL)
        .doc("Removes all keys from all databases.", "1.0.0", "server"),
    CommandSpec::new("slowlog", -2, container)
        .subcommands(SLOWLOG)
        .doc("A container for slow log commands.", "2.2.12", "server"),
    CommandSpec::new("save", 1, save)
        .flags(&[
            Flag::Admin,
            Flag::Noscript,
            Flag::NoAsyncLoading,
            Flag::NoMulti,
        ])
        .doc(
            "Synchronously saves the database(s) to disk.",
            "1.0.0",
            "server",
        ),
    CommandSpec::new("bgsave", -1, bgsave)
        .flags(&[Flag::Admin, Flag::Noscript, Flag::NoAsyncLoading])
        .doc(
            "Asynchronously saves the database(s) to disk.",
            "1.0.0",
            "server",
        ),
    CommandSpec::new("lastsave", 1, lastsave)
        .flags(&[Flag::Loading, Flag::Stale, Flag::Fast])
        .acl(&[AclCat::Admin, AclCat::Dangerous])
        .doc(
            "Returns the Unix timestamp of the last successful save to disk.",
            "1.0.0",
            "server",
        ),
    CommandSpec::new("shutdown", -1, shutdown)
        .flags(&[
            Flag::Admin,
            Flag::Noscript,
            Flag::Loading,
            Flag::Stale,
            Flag::NoMulti,
            Flag::AllowBusy,
            Flag::Sentinel,
        ])
        .doc(
            "Synchronously saves the database(s) to disk and shuts down the server.",
            "1.0.0",
            "server",
        ),
];

const CONFIG: &[CommandSpec] = &[
    CommandSpec::new("get", -3, config_get).flags(ADMIN).doc(
        "Returns the effective values of configuration parameters.",
        "2.0.0",
        "server",
    ),
    CommandSpec::new("set", -4, config_set).flags(ADMIN).doc(
        "Sets configuration parameters in-flight.",
        "2.0.0",
        "server",
    ),
    CommandSpec::new("resetstat", 2, config_resetstat)
        .flags(ADMIN)
        .doc("Resets the server's statistics.", "2.0.0", "server"),
    CommandSpec::new("rewrite", 2, config_rewrite)
        .flags(ADMIN)
        .doc(
            "Persists the effective configuration to file.",
            "2.8.0",
            "server",
        ),
    CommandSpec::new("help", 2, config_help)
        .flags(&[Flag::Loading, Flag::Stale])
        .doc(
            "Returns helpful text about the different subcommands.",
            "5.0.0",
            "server",
        ),
];

const SLOWLOG: &[CommandSpec] = &[
    CommandSpec::new("get", -2, slowlog_get)
        .flags(&[Flag::Admin, Flag::Loading, Flag::Stale])
        .doc("Returns the slow log's entries.", "2.2.12", "server"),
    CommandSpec::new("len", 2, slowlog_len)
        .flags(&[Flag::Admin, Flag::Loading, Flag::Stale])
        .doc(
            "Returns the number of entries in the slow log.",
            "2.2.12",
            "server",
        ),
    CommandSpec::new("reset", 2, slowlog_reset)
        .flags(&[Flag::Admin, Flag::Loading, Flag::Stale])
        .doc("Clears all entries from the slow log.", "2.2.12", "server"),
    CommandSpec::new("help", 2, slowlog_help)
        .flags(&[Flag::Loading, Flag::Stale])
        .doc(
            "Show helpful text about the different subcommands",
            "6.2.0",
            "server",
        ),
];

fn info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let sections: Vec<Vec<u8>> = args.rest().map(<[u8]>::to_vec).collect();
    Ok(Reply::Verbatim(
        crate::info::render(ctx.server, &sections).into_bytes(),
    ))
}

fn dbsize(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let db = ctx.db;
    let n = ctx.txn()?.dbsize(db)?;
    Ok(Reply::Integer(n as i64))
}

fn time(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Reply::Array(vec![
        Reply::Bulk(now.as_secs().to_string().into_bytes()),
        Reply::Bulk(now.subsec_micros().to_string().into_bytes()),
    ]))
}

/// `[ASYNC|SYNC]`: both flush now (the store's flush is cheap: stale
/// elements are collected by compaction).
fn flush_mode(args: &mut Args<'_>) -> Result<(), CommandError> {
    if args.remaining() > 0 && !args.eat_keyword("ASYNC") && !args.eat_keyword("SYNC") {
        return Err(CommandError::Syntax);
    }
    args.finish()?;
    Ok(())
}

/// Marks dirty the WATCHers of keys in `db` (all dbs when `None`) that
/// exist right now (before the flush), as Redis does.
fn touch_flushed(ctx: &mut Ctx<'_>, db: Option<u16>) -> Result<(), CommandError> {
    let server = ctx.server;
    if !server.watches.any() {
        return Ok(());
    }
    let watched = server.watches.watched_in(db);
    let txn = ctx.txn()?;
    let mut hit = Vec::new();
    for (d, k) in watched {
        if txn.exists(d, &k)? {
            hit.push((d, k));
        }
    }
    server
        .watches
        .touch(hit.iter().map(|(d, k)| (*d, k.as_slice())));
    Ok(())
}

fn flushdb(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    flush_mode(args)?;
    let db = ctx.db;
    touch_flushed(ctx, Some(db))?;
    ctx.txn()?.flush_db(db)?;
    Ok(Reply::Ok)
}

fn flushall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    flush_mode(args)?;
    touch_flushed(ctx, None)?;
    ctx.txn()?.flush_all()?;
    ctx.server.stats.dirty.add(1);
    Ok(Reply::Ok)
}

/// Makes everything committed so far durable; updates LASTSAVE.
fn persist(server: &Server) -> Result<(), CommandError> {
    crate::dispatch::run_blocking(|| server.store.persist())?;
    server.last_save.store(now_ms() / 1000, Ordering::Relaxed);
    server.stats.dirty.reset();
    Ok(())
}

fn save(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    persist(ctx.server)?;
    Ok(Reply::Ok)
}

fn bgsave(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    if args.remaining() > 0 && !args.eat_keyword("SCHEDULE") {
        return Err(CommandError::Syntax);
    }
    args.finish()?;
    // Persisting is quick (it syncs the write-ahead log); do it before the
    // reply so that INFO never reports a save in progress.
    persist(ctx.server)?;
    Ok(Reply::status("Background saving started"))
}

fn lastsave(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::Integer(
        ctx.server.last_save.load(Ordering::Relaxed) as i64
    ))
}

fn shutdown(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let (mut nosave, mut save, mut abort, mut other) = (false, false, false, false);
    while args.remaining() > 0 {
        if args.eat_keyword("NOSAVE") {
            nosave = true;
        } else if args.eat_keyword("SAVE") {
            save = true;
        } else if args.eat_keyword("NOW") || args.eat_keyword("FORCE") {
            other = true;
        } else if args.eat_keyword("ABORT") {
            abort = true;
        } else {
            return Err(CommandError::Syntax);
        }
    }
    // As Redis: SAVE and NOSAVE exclude each other; ABORT stands alone.
    if (nosave && save) || (abort && (nosave || save || other)) {
        return Err(CommandError::Syntax);
    }
    if abort {
        return Err(CommandError::err("No shutdown in progress."));
    }
    // The listener persists the store before the process exits.
    ctx.server.request_shutdown();
    ctx.client.close_after_reply = true;
    Ok(Reply::NoReply)
}

fn config_get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let cfg = ctx.server.config.read().clone();
    let mut found = Vec::new();
    let mut pairs = Vec::new();
    for pattern in args.rest() {
        let before = found.len();
        cfg.matching(pattern, &mut found);
        // A plain name is echoed as the client spelled it (as Redis does).
        let plain = !pattern.iter().any(|c| matches!(c, b'*' | b'?' | b'['));
        for (k, v) in found[before..].iter() {
            let key = if plain {
                Reply::Bulk(pattern.to_vec())
            } else {
                Reply::Static(k.as_bytes())
            };
            pairs.push((key, Reply::Bulk(v.clone().into_bytes())));
        }
    }
    Ok(Reply::Map(pairs))
}

fn config_set(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    if !args.remaining().is_multiple_of(2) {
        return Err(CommandError::Arity("config|set".into()));
    }
    let server = ctx.server;
    let mut cfg = server.config.read().clone();
    let mut seen: Vec<String> = Vec::new();
    while args.remaining() > 0 {
        let raw_name = args.next_bytes()?.to_ascii_lowercase();
        let name = String::from_utf8_lossy(&raw_name).into_owned();
        let value = String::from_utf8_lossy(args.next_bytes()?).into_owned();
        if seen.contains(&name) {
            return Err(CommandError::err_echo(
                "CONFIG SET failed (possibly related to argument '",
                &raw_name,
                "') - duplicate parameter",
            ));
        }
        let values = if name == "bind" || name == "save" {
            value.split_whitespace().map(str::to_string).collect()
        } else {
            vec![value]
        };
        if let Err(e) = cfg.set(&name, &values, false) {
            let failed = "CONFIG SET failed (possibly related to argument '";
            return Err(match e {
                SetError::Unknown => CommandError::err_echo(
                    "Unknown option or number of arguments for CONFIG SET - '",
                    &raw_name,
                    "'",
                ),
                SetError::Immutable => {
                    CommandError::err_echo(failed, &raw_name, "') - can't set immutable config")
                }
                SetError::Invalid(t) => {
                    CommandError::err_echo(failed, &raw_name, &format!("') - {t}"))
                }
            });
        }
        seen.push(name);
    }
    server
        .store
        .set_sync_mode(crate::start::sync_mode(cfg.appendfsync));
    let split = crate::memory::Split::of(
        cfg.maxmemory,
        cfg.cache_bytes,
        cfg.container_cache_bytes,
        cfg.write_back_bytes,
    );
    let maxmemory_set = seen.iter().any(|n| n == "maxmemory");
    if cfg.container_cache_bytes != server.config.read().container_cache_bytes || maxmemory_set {
        server
            .store
            .set_container_cache_bytes(split.container_cache);
    }
    server.store.set_write_back_bytes(split.write_back);
    server
        .memory
        .write_back_share
        .store(split.write_back, Ordering::Relaxed);
    if maxmemory_set {
        // The block cache and memtables keep their startup sizes; the tier
        // takes the new share at once (the governor adjusts from there).
        let mem = &server.memory;
        mem.maxmemory.store(split.maxmemory, Ordering::Relaxed);
        mem.tier_share.store(split.tier, Ordering::Relaxed);
        server
            .store
            .tier()
            .set_budget(usize::try_from(split.tier).unwrap_or(usize::MAX));
    }
    crate::start::apply_policy(&server.store, &cfg);
    crate::log::set_level(cfg.loglevel);
    server.hot.load(&cfg);
    if seen.iter().any(|n| n == "requirepass") {
        // As Redis: the default user gets exactly this password (none:
        // nopass), whatever ACL SETUSER gave it before.
        server.acl.set_default_password(cfg.requirepass.as_deref());
    }
    server.acl.log.set_max_len(cfg.acllog_max_len);
    server.acl.set_pubsub_all(cfg.acl_pubsub_all);
    server.slowlog.trim(cfg.slowlog_max_len as usize);
    *server.config.write() = cfg;
    Ok(Reply::Ok)
}

fn config_resetstat(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    reset_stats(ctx.server);
    Ok(Reply::Ok)
}

/// CONFIG RESETSTAT: zeroes server and per-command counters.
pub fn reset_stats(server: &Server) {
    server.stats.reset();
    server.store.reset_keyspace_stats();
    server
        .stats
        .expired_keys_base
        .store(server.store.stats().expired_keys, Ordering::Relaxed);
    for e in CommandTable::get().entries() {
        e.stats.reset();
        for s in &e.subs {
            s.stats.reset();
        }
    }
}

fn config_rewrite(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Err(CommandError::err(
        "The server is running without a config file",
    ))
}

fn config_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(help(
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    ))
}

fn slowlog_get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    if args.remaining() > 1 {
        let sub = args.get(1).unwrap_or_default();
        let mut t = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
        t.extend_from_slice(crate::error::c_str(sub));
        t.extend_from_slice(b"'. Try SLOWLOG HELP.");
        return Err(CommandError::UnknownSubcommand(t));
    }
    let count = if args.remaining() > 0 {
        match args.next_i64() {
            Ok(n) if n >= -1 => n,
            _ => {
                return Err(CommandError::err(
                    "count should be greater than or equal to -1",
                ))
            }
        }
    } else {
        10
    };
    let count = if count == -1 {
        usize::MAX
    } else {
        count as usize
    };
    Ok(Reply::Array(
        ctx.server
            .slowlog
            .get(count)
            .into_iter()
            .map(|e| {
                Reply::Array(vec![
                    Reply::Integer(e.id as i64),
                    Reply::Integer(e.time_s),
                    Reply::Integer(e.usec),
                    Reply::bulks(e.args),
                    Reply::Bulk(e.addr.into_bytes()),
                    Reply::Bulk(e.name),
                ])
            })
            .collect(),
    ))
}

fn slowlog_len(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::Integer(ctx.server.slowlog.len() as i64))
}

fn slowlog_reset(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    ctx.server.slowlog.reset();
    Ok(Reply::Ok)
}

fn slowlog_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(help(
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    ))
}
