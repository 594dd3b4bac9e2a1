//! MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! EXEC runs the queued commands as ONE store transaction: it locks the
//! union of their keys (or the whole store when one of them is `Exclusive`),
//! runs them in order — each command's error is its own reply — and commits
//! once, so other clients see all of the transaction or none of it. Each
//! queued command's ACL permissions are checked again before it runs.

use std::sync::atomic::Ordering;
use std::time::Instant;

use roaringd_resp::Args;

use crate::command_table::{AclCat, CommandSpec, Flag, KeySpec};
use crate::ctx::Ctx;
use crate::dispatch;
use crate::error::CommandError;
use crate::reply::Reply;
use crate::transaction::MultiState;

const TX: &[AclCat] = &[AclCat::Transaction];
const TX_FLAGS: &[Flag] = &[
    Flag::Noscript,
    Flag::Loading,
    Flag::Stale,
    Flag::Fast,
    Flag::AllowBusy,
    Flag::NoQueue,
];

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("multi", 1, multi)
        .flags(TX_FLAGS)
        .acl(TX)
        .doc("Starts a transaction.", "1.2.0", "transactions"),
    CommandSpec::new("exec", 1, exec)
        .flags(&[
            Flag::Noscript,
            Flag::Loading,
            Flag::Stale,
            Flag::SkipSlowlog,
            Flag::NoQueue,
        ])
        .acl(TX)
        .doc(
            "Executes all commands in a transaction.",
            "1.2.0",
            "transactions",
        ),
    CommandSpec::new("discard", 1, discard)
        .flags(TX_FLAGS)
        .acl(TX)
        .doc("Discards a transaction.", "2.0.0", "transactions"),
    CommandSpec::new("watch", -2, watch)
        .flags(TX_FLAGS)
        .keys(KeySpec::range(1, -1, 1))
        .key_flags(&["RO"])
        .acl(TX)
        .doc(
            "Monitors changes to keys to determine the execution of a transaction.",
            "2.2.0",
            "transactions",
        ),
    CommandSpec::new("unwatch", 1, unwatch)
        .flags(&[
            Flag::Noscript,
            Flag::Loading,
            Flag::Stale,
            Flag::Fast,
            Flag::AllowBusy,
        ])
        .acl(TX)
        .doc(
            "Forgets about watched keys of a transaction.",
            "2.2.0",
            "transactions",
        ),
];

fn multi(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    if ctx.client.multi.is_some() {
        return Err(CommandError::err("MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(MultiState::default());
    ctx.client.info.multi.store(0, Ordering::Relaxed);
    Ok(Reply::Ok)
}

fn discard(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    if ctx.client.multi.take().is_none() {
        return Err(CommandError::err("DISCARD without MULTI"));
    }
    ctx.client.info.multi.store(-1, Ordering::Relaxed);
    let c = &mut *ctx.client;
    ctx.server.watches.unwatch_all(c.id, &mut c.watch);
    Ok(Reply::Ok)
}

fn watch(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    if ctx.client.multi.is_some() {
        return Err(CommandError::err("WATCH inside MULTI is not allowed"));
    }
    let db = ctx.db;
    let server = ctx.server;
    let c = &mut *ctx.client;
    // A read-only look at expiry state (no locks needed for it).
    let mut probe = server.store.begin(&[]);
    for key in args.rest() {
        let live = probe.exists(db, key)?;
        server.watches.watch(c.id, &mut c.watch, db, key, live);
    }
    Ok(Reply::Ok)
}

fn unwatch(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let c = &mut *ctx.client;
    ctx.server.watches.unwatch_all(c.id, &mut c.watch);
    Ok(Reply::Ok)
}

fn exec(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let Some(multi) = ctx.client.multi.take() else {
        return Err(CommandError::err("EXEC without MULTI"));
    };
    let server = ctx.server;
    let client = &mut *ctx.client;
    client.info.multi.store(-1, Ordering::Relaxed);
    if multi.aborted {
        server.watches.unwatch_all(client.id, &mut client.watch);
        return Err(CommandError::ExecAbort);
    }

    // The union of the keys of every queued command, following SELECTs.
    let mut db = client.db;
    let mut exclusive = false;
    let mut needs_txn = false;
    let mut any_write = false;
    let mut owned: Vec<(u16, &[u8])> = Vec::new();
    // The element each one-element read reads (`CommandSpec::seek`).
    let mut seeks: Vec<(u16, &[u8], &[u8])> = Vec::new();
    // The database each queued command runs in.
    let mut dbs = Vec::with_capacity(multi.queued.len());
    let mut idx = Vec::new();
    for q in &multi.queued {
        let spec = q.entry.spec;
        let args = q.args();
        if q.entry.full_name == "select" {
            if let Some(d) = args.get(1).and_then(roaringd_compat::number::parse_i64) {
                if d >= 0 && d < i64::from(server.store.databases()) {
                    db = d as u16;
                }
            }
        }
        dbs.push(db);
        if spec.has(Flag::Write) || spec.has(Flag::Readonly) {
            needs_txn = true;
            any_write |= spec.has(Flag::Write);
            exclusive |= spec.has(Flag::Exclusive);
            idx.clear();
            spec.keys.extract(&args, &mut idx);
            owned.extend(idx.iter().filter_map(|&i| args.get(i).map(|k| (db, k))));
            seeks.extend(spec.seek_of(&args).map(|(k, e)| (db, k, e)));
        }
    }
    let mut txn = needs_txn.then(|| begin_exec_txn(server, exclusive, &owned));
    // The queued commands' keys, fetched into cache together rather than
    // one command's misses at a time.
    if owned.len() > 1 {
        server.store.prefetch(&owned);
    }
    // And the data entries their one-element reads seek, step by step
    // over all of them (`Store::prefetch_seeks`).
    if seeks.len() > 1 {
        server.store.prefetch_seeks(&seeks);
    }
    // Checked with the locks held: writers mark WATCHers dirty (with the
    // exact keys they modified) before they release their key locks.
    let mut dirty = client.watch.dirty.load(Ordering::Acquire);
    if !dirty && !client.watch.is_empty() {
        // Redis 7: a watched key that was live at WATCH and has expired since
        // counts as modified. Checking "no longer exists" also covers a key
        // removed by the active expiry cycle that has not touched us yet.
        let mut probe_txn;
        let probe = match txn.as_mut() {
            Some(t) => t,
            None => {
                probe_txn = server.store.begin(&[]);
                &mut probe_txn
            }
        };
        for ((d, k), live) in client.watch.keys.iter().zip(&client.watch.live_at_watch) {
            if *live && !probe.exists(*d, k)? {
                dirty = true;
                break;
            }
        }
    }
    server.watches.unwatch_all(client.id, &mut client.watch);
    if dirty {
        return Ok(Reply::NullArray);
    }

    // A queued command that panics after writing is left out and the
    // queue runs again without it, in a new transaction (its locks are
    // taken again, after the WATCH check: the one case where another
    // client's write may come between the check and the commands).
    let db_at_exec = client.db;
    // Long by the queued commands' arguments, or by the data they read
    // (their `data_work`, read now that the `Txn` holds their keys).
    let long = multi.queued.iter().any(|q| q.entry.spec.is_long(&q.args()))
        || txn.as_mut().is_some_and(|t| {
            let cmds = multi.queued.iter().zip(&dbs);
            dispatch::data_work_is_long(t, cmds.map(|(q, &db)| (q.entry.spec, db, q.args())))
        });
    let mut first_txn = Some(txn);
    client.in_exec = true;
    let result = dispatch::run_blocking_if(long, || {
        dispatch::run_skipping_panicked(|settled| {
            let mut txn = match first_txn.take() {
                Some(t) => t,
                None => {
                    client.db = db_at_exec;
                    needs_txn.then(|| begin_exec_txn(server, exclusive, &owned))
                }
            };
            let mut replies = Vec::with_capacity(multi.queued.len());
            // Commands whose edit the write-back tier took.
            let mut taken = Vec::new();
            // Each command's time runs from the end of the one before it
            // (one clock read per command, not two; the checks between
            // two commands count towards the second).
            let mut last_end = Instant::now();
            for (i, q) in multi.queued.iter().enumerate() {
                let spec = q.entry.spec;
                let args = q.args();
                let data = spec.has(Flag::Write) || spec.has(Flag::Readonly);
                let cmd = (client.db, spec, &args);
                if let Some(r) = settled.replay(i, txn.as_mut().filter(|_| data), cmd, &mut idx) {
                    replies.push(r);
                    continue;
                }
                // The user's rules may have changed since the command was queued.
                if let Err(d) = client.user.check(q.entry, &args) {
                    crate::acl::log_denial(server, client, q.entry, &args, d, Some("exec"));
                    let e = crate::acl::exec_denial_error(d);
                    dispatch::record_error(server, &e);
                    replies.push(Reply::Error(e));
                    continue;
                }
                let mut t = if data { txn.as_mut() } else { None };
                if let Some(t) = t.as_deref_mut() {
                    dispatch::absorb_unless_kept(t, client.db, spec, &args, &mut idx);
                }
                let edits = t.as_deref().map(roaringd_store::Txn::tier_edits);
                // No streamed reply: a later queued command may write the key.
                let r = dispatch::call(server, client, q.entry, args, t, false);
                let end = Instant::now();
                let usec = end.duration_since(last_end).as_micros() as u64;
                last_end = end;
                dispatch::account(server, client, q.entry, &args, usec, r.is_err());
                let took =
                    edits.is_some() && txn.as_ref().map(roaringd_store::Txn::tier_edits) != edits;
                if dispatch::panicked_after_write(&r) {
                    let e = r.unwrap_err();
                    return Err(dispatch::Settled::of_attempt(
                        (i, e, took),
                        &taken,
                        &replies,
                    ));
                }
                if took {
                    taken.push(i);
                }
                if let Err(e) = &r {
                    dispatch::record_error(server, e);
                }
                replies.push(r.unwrap_or_else(Reply::Error));
            }
            Ok(match txn {
                Some(txn) => {
                    dispatch::commit(server, client, txn, any_write).map(|()| Reply::Array(replies))
                }
                None => Ok(Reply::Array(replies)),
            })
        })
    });
    client.in_exec = false;
    result
}

/// The transaction of an EXEC over the union `owned` of its queued
/// commands' keys: over the whole store when a queued command is
/// exclusive, else over the keys (`Store::begin_exec`). Dirty keys of the
/// write-back tier stay dirty for the queued commands the tier takes, as
/// in a pipeline group (a command outside it writes its keys' dirty
/// state into the transaction first, `dispatch::absorb_unless_kept`),
/// and the tier's records go into the commit's batch, so that a crash
/// keeps all of the transaction or none of it, as Redis replays it.
fn begin_exec_txn(
    server: &crate::state::Server,
    exclusive: bool,
    owned: &[(u16, &[u8])],
) -> roaringd_store::Txn {
    if exclusive {
        server.store.begin_exclusive()
    } else {
        server.store.begin_exec(owned)
    }
}
