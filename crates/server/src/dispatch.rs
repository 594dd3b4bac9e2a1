//! Dispatch: name lookup → subcommand → arity → auth → ACL permissions →
//! MULTI queueing → store `Txn` over the row's keys → handler → commit →
//! stats → reply.
//!
//! `execute` is called once per request and appends exactly one reply (or
//! none, for an empty request) to the connection's output buffer.

use std::sync::atomic::Ordering;
use std::time::Instant;

use roaringd_resp::{Args, ReplyEncoder};

use crate::client::Client;
use crate::command_table::{CommandSpec, CommandTable, Entry, Flag};
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;
use crate::state::Server;
use crate::transaction::Queued;

/// Runs one request and appends its reply to `out`.
pub fn execute(server: &Server, client: &mut Client, args: Args<'_>, out: &mut Vec<u8>) {
    if args.is_empty() || !synced(server, client) {
        return;
    }
    match resolve(client, &args) {
        Ok(entry) => execute_entry(server, client, entry, args, out),
        Err(e) => {
            flag_transaction(client);
            encode(server, client, Reply::Error(e), out);
        }
    }
}

/// `execute` for a request whose row `resolve` already found (the
/// pipeline's single queued command): the same checks and effects.
pub fn execute_entry(
    server: &Server,
    client: &mut Client,
    entry: &'static Entry,
    args: Args<'_>,
    out: &mut Vec<u8>,
) {
    if !synced(server, client) {
        return;
    }
    let reply = match admit(server, client, entry, &args) {
        Ok(()) => {
            if client.multi.is_some() && !entry.spec.has(Flag::NoQueue) {
                queue(client, entry, &args)
            } else {
                run(server, client, entry, args)
            }
        }
        Err(e) => {
            entry.stats.rejected.add(1);
            flag_transaction(client);
            if entry.full_name == "exec" {
                // Redis discards the transaction and names the cause.
                client.multi = None;
                client.info.multi.store(-1, Ordering::Relaxed);
                server.watches.unwatch_all(client.id, &mut client.watch);
                // Redis embeds the bare text: `ERR ` is dropped, other
                // codes (NOAUTH) stay.
                let text = e.to_string();
                let bare = text.strip_prefix("ERR ").unwrap_or(&text);
                Reply::Error(CommandError::Custom(
                    format!("EXECABORT Transaction discarded because of: {bare}").into(),
                ))
            } else {
                Reply::Error(e)
            }
        }
    };
    encode(server, client, reply, out);
}

/// Appends `reply` in the client's protocol, counting an error reply for
/// INFO (EXEC counts the errors of its queued commands itself).
/// A reply already encoded in one buffer becomes `out` itself when `out`
/// is empty (no copy); any other reply of one big buffer (over
/// [`LONG_REPLY_BYTES`]) is copied, and freed, off the connection worker.
/// A streamed reply goes to `client.streams`, placed after `out`'s bytes
/// so far: the connection writes it there ([`crate::stream`]).
pub fn encode(server: &Server, client: &mut Client, reply: Reply, out: &mut Vec<u8>) {
    if let Reply::Error(e) = &reply {
        record_error(server, e);
    }
    let big = match reply {
        Reply::Stream(s) => {
            client.streams.push((out.len(), s));
            return;
        }
        Reply::Encoded(b) if out.is_empty() => {
            *out = b;
            return;
        }
        Reply::Bulk(ref b) | Reply::Encoded(ref b) => b.len() > LONG_REPLY_BYTES,
        _ => false,
    };
    run_blocking_if(big, move || {
        reply.encode(&mut ReplyEncoder::new(out, client.protocol));
        drop(reply);
    });
}

/// Bytes of a one-buffer reply above which [`encode`] copies it off the
/// worker (a 300 MB TR.RANGEBITARRAY's copy stalled the worker 150 ms).
pub const LONG_REPLY_BYTES: usize = 4 << 20;
/// Brings the client's ACL user up to date; false (and the connection
/// closes, with no reply) when its user was deleted, and for every later
/// request of a connection that is closing.
#[inline]
fn synced(server: &Server, client: &mut Client) -> bool {
    if client.close_after_reply {
        return false;
    }
    if crate::acl::sync(&server.acl, client) {
        return true;
    }
    client.close_after_reply = true;
    false
}

/// True when `client` may only run no-auth commands: it has not
/// authenticated and `default` needs a password (or is off).
#[inline]
pub fn needs_auth(server: &Server, client: &Client) -> bool {
    !client.authenticated && server.acl.default_needs_auth()
}

/// Counts one error reply in INFO stats/errorstats.
pub fn record_error(server: &Server, e: &CommandError) {
    match e {
        CommandError::Err(_) | CommandError::Syntax | CommandError::NotInteger => {
            server.stats.record_error(b"ERR")
        }
        other => server.stats.record_error(other.to_string().as_bytes()),
    }
}

/// A command that fails to queue makes the transaction fail at EXEC.
fn flag_transaction(client: &mut Client) {
    if let Some(m) = client.multi.as_mut() {
        m.aborted = true;
    }
}

/// Finds the row (and subcommand row) for the request.
pub fn resolve(_client: &Client, args: &Args<'_>) -> Result<&'static Entry, CommandError> {
    let name = args.get(0).unwrap_or_default();
    let Some(entry) = CommandTable::get().lookup(name) else {
        return Err(CommandError::unknown_command(name, args.all().skip(1)));
    };
    if entry.subs.is_empty() {
        return Ok(entry);
    }
    match args.get(1) {
        None if entry.spec.arity_ok(1) => Ok(entry),
        None => Err(CommandError::Arity(entry.full_name.into())),
        Some(sub) => match entry.sub(sub) {
            Some(s) => Ok(s),
            None => Err(CommandError::unknown_subcommand(entry.spec.name, sub)),
        },
    }
}

/// The checks that precede execution or queueing, in Redis's order.
fn admit(
    server: &Server,
    client: &Client,
    entry: &'static Entry,
    args: &Args<'_>,
) -> Result<(), CommandError> {
    if !entry.spec.arity_ok(args.len()) {
        return Err(CommandError::Arity(entry.full_name.into()));
    }
    if needs_auth(server, client) && !entry.spec.has(Flag::NoAuth) {
        return Err(CommandError::NoAuth);
    }
    if client.multi.is_some() && entry.spec.has(Flag::NoMulti) {
        return Err(CommandError::err(
            "Command not allowed inside a transaction",
        ));
    }
    if let Err(d) = client.user.check(entry, args) {
        client.info.set_last_cmd(entry);
        crate::acl::log_denial(server, client, entry, args, d, None);
        return Err(crate::acl::denial_error(entry, d));
    }
    Ok(())
}

fn queue(client: &mut Client, entry: &'static Entry, args: &Args<'_>) -> Reply {
    let multi = client
        .multi
        .as_mut()
        .expect("queue is only called inside MULTI");
    multi.queued.push(Queued::new(entry, args));
    client
        .info
        .multi
        .store(multi.queued.len() as i64, Ordering::Relaxed);
    Reply::status("QUEUED")
}

/// Estimated microseconds of work (see `CommandSpec::work`) above which a
/// request runs off the connection workers ([`run_blocking`]): about a
/// millisecond, well above the thread wake-up that handing the worker
/// over costs.
pub const LONG_WORK_US: u64 = 1000;

/// Runs a resolved, admitted command as its own store transaction: off the
/// worker when its arguments ask for long work (`CommandSpec::is_long`),
/// so that the worker's other connections go on meanwhile.
fn run(server: &Server, client: &mut Client, entry: &'static Entry, args: Args<'_>) -> Reply {
    let spec = entry.spec;
    let start = Instant::now();
    let result = run_blocking_if(spec.is_long(&args), || {
        if spec.has(Flag::Write) || spec.has(Flag::Readonly) {
            run_in_txn(server, client, entry, args)
        } else {
            call(server, client, entry, args, None, false)
        }
    });
    let usec = start.elapsed().as_micros() as u64;
    account(server, client, entry, &args, usec, result.is_err());
    result.unwrap_or_else(Reply::Error)
}

/// [`run`]'s data command: begins the `Txn` over the row's keys, calls the
/// handler, commits on success.
fn run_in_txn(
    server: &Server,
    client: &mut Client,
    entry: &'static Entry,
    args: Args<'_>,
) -> Result<Reply, CommandError> {
    let spec = entry.spec;
    let db = client.db;
    // Key positions go to a per-connection scratch vector and the keys
    // to a stack array: no allocation for commands with few keys.
    let mut idx = std::mem::take(&mut client.key_scratch);
    idx.clear();
    spec.keys.extract(&args, &mut idx);
    let mut small: [(u16, &[u8]); 4] = [(0, &[]); 4];
    let big: Vec<(u16, &[u8])>;
    let keys: &[(u16, &[u8])] = if idx.len() <= small.len() {
        for (slot, &i) in small.iter_mut().zip(idx.iter()) {
            *slot = (db, args.get(i).unwrap_or_default());
        }
        &small[..idx.len()]
    } else {
        big = idx
            .iter()
            .map(|&i| (db, args.get(i).unwrap_or_default()))
            .collect();
        &big
    };
    client.key_scratch = idx;
    let mut txn = if spec.has(Flag::Exclusive) {
        server.store.begin_exclusive()
    } else if spec.tier.keeps_dirty(args.len()) {
        server.store.begin_keep_dirty(keys)
    } else if spec.tier == crate::command_table::TierUse::KeepDest && !keys.is_empty() {
        server.store.begin_keeping(keys, keys[0])
    } else {
        server.store.begin(keys)
    };
    let long = spec
        .data_work
        .is_some_and(|f| f(&mut txn, db, &args) > LONG_WORK_US);
    let reply = run_blocking_if(long, || {
        call(server, client, entry, args, Some(&mut txn), true)
    })?;
    commit(server, client, txn, spec.has(Flag::Write))?;
    Ok(reply)
}

/// True when the `data_work` estimates of `cmds` (row, database, whole
/// request), read through `txn` (which holds their keys), add up past
/// [`LONG_WORK_US`]: a pipeline group or an EXEC then runs off the worker,
/// as a single command does.
pub fn data_work_is_long<'a>(
    txn: &mut roaringd_store::Txn,
    cmds: impl Iterator<Item = (&'static crate::command_table::CommandSpec, u16, Args<'a>)>,
) -> bool {
    let mut total = 0u64;
    for (spec, db, args) in cmds {
        if let Some(f) = spec.data_work {
            total = total.saturating_add(f(txn, db, &args));
            if total > LONG_WORK_US {
                return true;
            }
        }
    }
    false
}

/// Runs `f` as blocking work when called on a worker of the
/// multi-threaded runtime (`block_in_place`: the worker's other
/// connections move to another thread until `f` returns); elsewhere (no
/// runtime, a current-thread runtime, where `block_in_place` would panic)
/// it just calls `f`.
pub fn run_blocking<T>(f: impl FnOnce() -> T) -> T {
    run_blocking_if(true, f)
}

/// [`run_blocking`] when `long` (work that would stall the worker's other
/// connections), else calls `f` in place: handing the worker over costs a
/// thread wake-up, more than short work takes.
pub fn run_blocking_if<T>(long: bool, f: impl FnOnce() -> T) -> T {
    if !long {
        return f();
    }
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Commits `txn`, touching WATCHers of the modified keys, and marks the
/// client as having written (see `write-before-reply`). Under `appendfsync
/// always` the commit does not sync: it marks the client, whose connection
/// syncs before it writes the replies, one sync for every connection
/// waiting meanwhile (`group_sync.rs`).
pub fn commit(
    server: &Server,
    client: &mut Client,
    mut txn: roaringd_store::Txn,
    write: bool,
) -> Result<(), CommandError> {
    client.wrote |= write;
    if write && server.store.sync_mode() == roaringd_store::SyncMode::Always {
        txn.defer_sync();
        client.needs_sync = true;
    }
    if write && server.watches.any() {
        // Touch WATCHers while the key locks are still held, so an EXEC that
        // locks one of these keys after us sees its dirty flag.
        let keys = txn.modified_keys();
        server
            .watches
            .touch(keys.iter().map(|(d, k)| (*d, k.as_slice())));
    }
    let modified = txn.commit();
    match modified {
        Ok(keys) => {
            if !keys.is_empty() {
                server.stats.dirty.add(keys.len() as u64);
                if !write {
                    // Keys removed by lazy expiry during a read.
                    server
                        .watches
                        .touch_expired(keys.iter().map(|(d, k)| (*d, k.as_slice())));
                }
            }
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Calls the handler (no stats, no commit). A panic in the handler is
/// caught, logged with the command's name, and returned as
/// [`CommandError::Panicked`]; a single command's transaction is then
/// dropped by its caller like any failed command's, and a group's is
/// handled by [`run_skipping_panicked`]. `may_stream`: see
/// [`Ctx::may_stream`] (the caller guarantees its condition).
/// Before a command runs in a pipeline group's `Txn` (begun by
/// `Store::begin_keep_dirty`, so dirty keys stay dirty): unless its row
/// is `TierUse::KeepDirty` for this request, the write-back tier's dirty
/// state of each of its keys is written into the `Txn` first
/// (`Txn::absorb_key`), as `Store::begin` does for every key it locks.
/// `idx`: scratch for the key positions.
pub fn absorb_unless_kept(
    txn: &mut roaringd_store::Txn,
    db: u16,
    spec: &crate::command_table::CommandSpec,
    args: &Args<'_>,
    idx: &mut Vec<usize>,
) {
    if !txn.any_dirty() || spec.tier.keeps_dirty(args.len()) {
        return;
    }
    idx.clear();
    spec.keys.extract(args, idx);
    for &i in idx.iter() {
        txn.absorb_key(db, args.get(i).unwrap_or_default());
    }
}

pub fn call(
    server: &Server,
    client: &mut Client,
    entry: &'static Entry,
    mut args: Args<'_>,
    txn: Option<&mut roaringd_store::Txn>,
    may_stream: bool,
) -> Result<Reply, CommandError> {
    args.seek(if entry.is_sub { 2 } else { 1 });
    client.info.set_last_cmd(entry);
    let mut txn = txn;
    if let Some(t) = txn.as_deref_mut() {
        // Keyspace hits/misses count the lookups of read-only commands.
        t.set_count_lookups(!entry.spec.has(Flag::Write));
    }
    let writes_before = txn.as_deref().map(roaringd_store::Txn::write_count);
    let mut ctx = Ctx {
        db: client.db,
        client,
        server,
        txn,
        may_stream,
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (entry.spec.handler)(&mut ctx, &mut args)
    }));
    match result {
        Ok(r) => r,
        Err(payload) => {
            let wrote = ctx.txn.as_deref().map(roaringd_store::Txn::write_count) != writes_before;
            crate::warning!(
                "Panic while running '{}' for client id={}: {}",
                entry.full_name,
                ctx.client.id,
                panic_message(payload.as_ref())
            );
            Err(CommandError::Panicked {
                name: entry.full_name,
                wrote,
            })
        }
    }
}

/// The text of a panic's payload (`panic!` with a literal or a format).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// Runs a list of commands as one atomic unit that a panic in one of them
/// does not take down: `attempt(settled)` begins a transaction, runs every
/// command that `settled` does not settle ([`Settled::replay`] answers
/// those) and commits. When command `i` panics after writing to the
/// transaction ([`CommandError::Panicked`] with `wrote`), `attempt` drops
/// the transaction and returns what it settled ([`Settled::of_attempt`]):
/// `i` with its error, and each command before it whose edit the
/// write-back tier took, with its reply (the tier applies an edit to its
/// dirty map as the command runs, which a dropped transaction does not
/// take back). The list then runs again without them. So every other
/// command applies once and keeps its reply, and the failed one applies
/// nothing (unless the tier took an edit of its own before it panicked:
/// that edit stays, and counts as a write of its keys).
///
/// Returns what the first attempt that ends returns. At most one attempt
/// more than there are commands runs, since each failed attempt settles
/// an index that later attempts skip. A command that ran before the panic
/// outside the tier runs again in the next attempt (its stats count
/// twice).
pub fn run_skipping_panicked<T>(mut attempt: impl FnMut(&Settled) -> Result<T, Settled>) -> T {
    let mut settled = Settled::default();
    loop {
        match attempt(&settled) {
            Ok(t) => return t,
            Err(more) => {
                debug_assert!(more.0.iter().all(|(i, ..)| settled.get(*i).is_none()));
                settled.0.extend(more.0);
            }
        }
    }
}

/// The commands of a group that earlier attempts settled, by index
/// ([`run_skipping_panicked`]): a command that panicked after writing
/// (its error), or one whose edit the write-back tier took (its reply,
/// flagged `true`).
#[derive(Default, Debug)]
pub struct Settled(Vec<(usize, Reply, bool)>);

impl Settled {
    /// Command `i`'s settled reply, and whether the tier took its edit.
    pub fn get(&self, i: usize) -> Option<(&Reply, bool)> {
        self.0
            .iter()
            .find(|(j, ..)| *j == i)
            .map(|(_, r, kept)| (r, *kept))
    }

    /// What an attempt settled when its command `i` panicked after
    /// writing (`error`; `took`: the tier took an edit of it before the
    /// panic, which stays): `i`, and each command of `taken` (indices, in
    /// order, of commands whose edit the tier took) with its reply from
    /// `replies` (the attempt's replies so far, by index).
    pub fn of_attempt(
        (i, error, took): (usize, CommandError, bool),
        taken: &[usize],
        replies: &[Reply],
    ) -> Settled {
        let mut out: Vec<(usize, Reply, bool)> = taken
            .iter()
            .filter_map(|&j| replies.get(j).map(|r| (j, r.clone(), true)))
            .collect();
        out.push((i, Reply::Error(error), took));
        Settled(out)
    }

    /// For command `i` of a new attempt (arguments `args`, in database
    /// `db`): its reply when it is settled, else `None` (run it). A
    /// settled edit of the tier is not run again: its keys are marked
    /// modified in `txn` (`Txn::keep_tier_edit`), so that the commit
    /// tells WATCHers and syncs the log under `always` as the dropped
    /// attempt would have. `idx`: scratch for key positions.
    pub fn replay(
        &self,
        i: usize,
        txn: Option<&mut roaringd_store::Txn>,
        (db, spec, args): (u16, &CommandSpec, &Args<'_>),
        idx: &mut Vec<usize>,
    ) -> Option<Reply> {
        let (r, kept) = self.get(i)?;
        if let (true, Some(txn)) = (kept, txn) {
            idx.clear();
            spec.keys.extract(args, idx);
            for &k in idx.iter() {
                txn.keep_tier_edit(db, args.get(k).unwrap_or_default());
            }
        }
        Some(r.clone())
    }
}

/// True for the error of a command that panicked after writing to its
/// transaction (see [`run_skipping_panicked`]).
pub fn panicked_after_write(r: &Result<Reply, CommandError>) -> bool {
    matches!(r, Err(CommandError::Panicked { wrote: true, .. }))
}

/// Records stats and the slow log for one executed command.
pub fn account(
    server: &Server,
    client: &Client,
    entry: &'static Entry,
    args: &Args<'_>,
    usec: u64,
    failed: bool,
) {
    entry.stats.calls.add(1);
    entry.stats.usec.add(usec);
    if failed {
        entry.stats.failed.add(1);
    }
    server.stats.total_commands.add(1);
    let threshold = server.hot.slowlog_log_slower_than.load(Ordering::Relaxed);
    if !entry.spec.has(Flag::SkipSlowlog) && threshold >= 0 && usec as i64 >= threshold {
        server.slowlog.push(
            args.all(),
            usec as i64,
            client.info.addr.to_string(),
            client.info.name.lock().clone(),
            server.hot.slowlog_max_len.load(Ordering::Relaxed) as usize,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panicked(name: &'static str) -> CommandError {
        CommandError::Panicked { name, wrote: true }
    }

    #[test]
    fn run_skipping_panicked_reruns_without_each_failed_command() {
        // Commands 1 and 3 of 5 panic after writing, and the tier takes
        // command 2's edit; each attempt runs the list from the start and
        // skips what the ones before settled: the failed commands, and
        // command 2 once an attempt that ran it failed.
        let mut attempts = Vec::new();
        let mut runs = [0; 5];
        let out = run_skipping_panicked(|settled| {
            attempts.push(
                (0..5)
                    .filter(|&i| settled.get(i).is_some())
                    .collect::<Vec<_>>(),
            );
            let (mut replies, mut taken) = (Vec::new(), Vec::new());
            for (i, n) in runs.iter_mut().enumerate() {
                if let Some((r, _)) = settled.get(i) {
                    replies.push(r.clone());
                    continue;
                }
                *n += 1;
                match i {
                    1 | 3 => {
                        let e = panicked(if i == 1 { "one" } else { "three" });
                        return Err(Settled::of_attempt((i, e, false), &taken, &replies));
                    }
                    2 => taken.push(i),
                    _ => {}
                }
                replies.push(Reply::Integer(i as i64));
            }
            Ok(replies)
        });
        assert_eq!(attempts, vec![vec![], vec![1], vec![1, 2, 3]]);
        assert_eq!(runs, [3, 1, 1, 1, 1], "command 2 runs once");
        let e = |n| Reply::Error(panicked(n));
        assert_eq!(
            out,
            vec![
                Reply::Integer(0),
                e("one"),
                Reply::Integer(2),
                e("three"),
                Reply::Integer(4)
            ]
        );
    }

    #[test]
    fn data_work_of_a_group_adds_up() {
        use roaringd_resp::Span;
        let store = roaringd_store::Store::open(roaringd_store::StoreConfig::default()).unwrap();
        let mut t = store.begin(&[(0, b"s")]);
        let members: Vec<Vec<u8>> = (0..600).map(|i| i.to_string().into_bytes()).collect();
        t.sadd(0, b"s", &members).unwrap();
        t.commit().unwrap();
        let buf = b"smemberssgetk".to_vec();
        let span = |start, end| Span { start, end };
        let smembers = [span(0, 8), span(8, 9)];
        let get = [span(9, 12), span(12, 13)];
        let spec = |name: &[u8]| CommandTable::get().lookup(name).unwrap().spec;
        let cmd = |spans| (spec(b"smembers"), 0u16, Args::new(&buf, spans));
        let mut t = store.begin(&[(0, b"s")]);
        // 600 members: short alone, long twice (1,200 us of estimates).
        assert!(!data_work_is_long(&mut t, [cmd(&smembers)].into_iter()));
        assert!(data_work_is_long(
            &mut t,
            [cmd(&smembers), cmd(&smembers)].into_iter()
        ));
        // Rows without a data estimate add nothing; another database's
        // key has no members.
        let g = (spec(b"get"), 0u16, Args::new(&buf, &get));
        assert!(!data_work_is_long(&mut t, [cmd(&smembers), g].into_iter()));
        let other = (spec(b"smembers"), 1u16, Args::new(&buf, &smembers));
        assert!(!data_work_is_long(
            &mut t,
            [cmd(&smembers), other].into_iter()
        ));
    }

    #[test]
    fn only_a_panic_after_a_write_restarts_a_group() {
        assert!(panicked_after_write(&Err(panicked("x"))));
        assert!(!panicked_after_write(&Err(CommandError::Panicked {
            name: "x",
            wrote: false
        })));
        assert!(!panicked_after_write(&Err(CommandError::Syntax)));
        assert!(!panicked_after_write(&Ok(Reply::Ok)));
    }
}
