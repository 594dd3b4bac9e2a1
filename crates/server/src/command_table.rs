//! The one command table: each family file under `commands/` exports
//! `pub const COMMANDS: &[CommandSpec]`, and [`FAMILIES`] lists them all.
//! The table drives dispatch (lookup, arity, flags, key extraction),
//! `COMMAND` / `COMMAND INFO|DOCS|COUNT|LIST|GETKEYS`, and later ACL and
//! cluster slots.
//!
//! A row is built with `const fn` builders:
//!
//! ```ignore
//! CommandSpec::new("get", 2, get)
//!     .flags(&[Flag::Readonly, Flag::Fast])
//!     .keys(KeySpec::range(1, 1, 1))
//!     .acl(&[AclCat::String])
//!     .doc("Returns the string value of a key.", "1.0.0", "string")
//! ```
//!
//! Arity follows Redis: positive = exact argument count, negative = at
//! least `-arity`, both counting the command name (for a subcommand row,
//! counting the container name and the subcommand).

use std::collections::HashMap;
use std::sync::LazyLock;

use roaringd_resp::Args;

use crate::commands;
use crate::counter::Counter;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;

/// A command handler: reads its arguments from `args` (positioned after the
/// name, or after the subcommand), works on `ctx`, returns a reply.
/// Handlers never touch sockets. A big reply may be a [`Reply::Stream`]
/// when [`Ctx::may_stream`] allows it: its producer reads the key from
/// the snapshot of the command's commit while the connection writes it
/// (contract: [`crate::stream`]).
pub type Handler = fn(&mut Ctx<'_>, &mut Args<'_>) -> Result<Reply, CommandError>;

/// Estimates, from a request's arguments alone (no store access), the
/// microseconds of work it asks for: a count of offsets, members or
/// containers times a measured cost each. Unparsable arguments estimate 0
/// (the handler refuses them at once). See [`CommandSpec::work`].
pub type WorkFn = fn(&Args<'_>) -> u64;

/// How a row's store transaction treats the keys that the store's
/// write-back tier keeps dirty (docs/architecture.md, "The write-back
/// tier"). The eligibility rule of each command lives on its row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierUse {
    /// Every dirty key the command locks is written back into its `Txn`
    /// first (`Store::begin`): the default, for every command that reads
    /// a key's containers beyond the one the tier edits.
    Absorb,
    /// Works on dirty keys in place (`Store::begin_keep_dirty`): single-bit
    /// edits and reads, edits of listed bits, range writes, and the summary
    /// reads (`meta` only), for requests of at most `max_argc` arguments
    /// (TR.BITCOUNT without a range; TR.SETBITS of at most one log record's
    /// offsets).
    KeepDirty {
        /// The longest request (name included) that qualifies.
        max_argc: usize,
    },
    /// Its first key, a TR.BITOP destination, may stay dirty when the
    /// command runs alone (`Store::begin_keeping`).
    KeepDest,
}

impl TierUse {
    /// `KeepDirty` for any request length.
    pub const KEEP_DIRTY: TierUse = TierUse::KeepDirty {
        max_argc: usize::MAX,
    };

    /// True when a request of `argc` arguments works on dirty keys in place.
    pub fn keeps_dirty(self, argc: usize) -> bool {
        matches!(self, TierUse::KeepDirty { max_argc } if argc <= max_argc)
    }
}

/// Estimates, from the data a request names (read through its `Txn`,
/// which holds the keys' locks), the microseconds of work it asks for:
/// the entries of a whole-collection read, the keys of a KEYS. See
/// [`CommandSpec::data_work`].
pub type DataWorkFn = fn(&mut roaringd_store::Txn, u16, &Args<'_>) -> u64;

/// Extracts the absolute argument indices of the keys of a request whose
/// key positions depend on its arguments (movable keys). Pushes onto `out`.
pub type KeysFn = fn(args: &Args<'_>, out: &mut Vec<usize>);

/// A command flag. The public ones print in `COMMAND INFO` under Redis's
/// names and in Redis's order (the enum order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Flag {
    /// May modify data.
    Write = 0,
    /// Only reads data.
    Readonly,
    /// May grow memory use (refused under maxmemory).
    Denyoom,
    /// Administrative (`@admin`, `@dangerous`).
    Admin,
    /// Pub/sub related.
    Pubsub,
    /// Not allowed in scripts.
    Noscript,
    /// May block the client.
    Blocking,
    /// Allowed while loading data.
    Loading,
    /// Allowed on a stale replica.
    Stale,
    /// Never recorded in the slow log (EXEC records its commands instead).
    SkipSlowlog,
    /// O(1) or O(log N) and never blocks.
    Fast,
    /// Allowed before authentication (AUTH, HELLO, QUIT ...).
    NoAuth,
    /// May replicate even when read-only.
    MayReplicate,
    /// Not allowed while loading asynchronously (replica diskless load).
    NoAsyncLoading,
    /// Not allowed inside MULTI (rejected when queued; EXEC then aborts).
    NoMulti,
    /// Allowed while the server is busy.
    AllowBusy,
    /// Allowed in sentinel mode (not printed, as in Redis 7.0).
    Sentinel,
    /// Runs immediately even inside MULTI (MULTI, EXEC, DISCARD, WATCH,
    /// QUIT, RESET). Internal.
    NoQueue,
    /// Takes the store's global lock exclusively (FLUSHDB, FLUSHALL). Internal.
    Exclusive,
}

impl Flag {
    /// Every flag, in bit order.
    pub const ALL: [Flag; 19] = [
        Flag::Write,
        Flag::Readonly,
        Flag::Denyoom,
        Flag::Admin,
        Flag::Pubsub,
        Flag::Noscript,
        Flag::Blocking,
        Flag::Loading,
        Flag::Stale,
        Flag::SkipSlowlog,
        Flag::Fast,
        Flag::NoAuth,
        Flag::MayReplicate,
        Flag::NoAsyncLoading,
        Flag::NoMulti,
        Flag::AllowBusy,
        Flag::Sentinel,
        Flag::NoQueue,
        Flag::Exclusive,
    ];

    /// The name `COMMAND INFO` prints, or `None` for unprinted flags.
    pub const fn wire_name(self) -> Option<&'static str> {
        Some(match self {
            Flag::Write => "write",
            Flag::Readonly => "readonly",
            Flag::Denyoom => "denyoom",
            Flag::Admin => "admin",
            Flag::Pubsub => "pubsub",
            Flag::Noscript => "noscript",
            Flag::Blocking => "blocking",
            Flag::Loading => "loading",
            Flag::Stale => "stale",
            Flag::SkipSlowlog => "skip_slowlog",
            Flag::Fast => "fast",
            Flag::NoAuth => "no_auth",
            Flag::MayReplicate => "may_replicate",
            Flag::NoAsyncLoading => "no_async_loading",
            Flag::NoMulti => "no_multi",
            Flag::AllowBusy => "allow_busy",
            Flag::Sentinel | Flag::NoQueue | Flag::Exclusive => return None,
        })
    }
}

/// A set of [`Flag`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Flags(u32);

impl Flags {
    /// No flags.
    pub const NONE: Flags = Flags(0);

    /// The set of `flags`.
    pub const fn of(flags: &[Flag]) -> Flags {
        let mut bits = 0u32;
        let mut i = 0;
        while i < flags.len() {
            bits |= 1 << flags[i] as u8;
            i += 1;
        }
        Flags(bits)
    }

    /// True if `f` is in the set.
    #[inline]
    pub const fn has(self, f: Flag) -> bool {
        self.0 & (1 << f as u8) != 0
    }
}

/// An ACL category (`@string`, `@set`, ...). Categories implied by flags
/// (`@write`, `@read`, `@fast`, `@slow`, `@admin`, `@dangerous`,
/// `@pubsub`, `@blocking`) are added automatically and need not be listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum AclCat {
    /// `@keyspace`
    Keyspace = 0,
    /// `@read`
    Read,
    /// `@write`
    Write,
    /// `@set`
    Set,
    /// `@sortedset`
    SortedSet,
    /// `@list`
    List,
    /// `@hash`
    Hash,
    /// `@string`
    String,
    /// `@bitmap`
    Bitmap,
    /// `@hyperloglog`
    HyperLogLog,
    /// `@geo`
    Geo,
    /// `@stream`
    Stream,
    /// `@pubsub`
    Pubsub,
    /// `@admin`
    Admin,
    /// `@fast`
    Fast,
    /// `@slow`
    Slow,
    /// `@blocking`
    Blocking,
    /// `@dangerous`
    Dangerous,
    /// `@connection`
    Connection,
    /// `@transaction`
    Transaction,
    /// `@scripting`
    Scripting,
}

impl AclCat {
    /// Every category, in bit order.
    pub const ALL: [AclCat; 21] = [
        AclCat::Keyspace,
        AclCat::Read,
        AclCat::Write,
        AclCat::Set,
        AclCat::SortedSet,
        AclCat::List,
        AclCat::Hash,
        AclCat::String,
        AclCat::Bitmap,
        AclCat::HyperLogLog,
        AclCat::Geo,
        AclCat::Stream,
        AclCat::Pubsub,
        AclCat::Admin,
        AclCat::Fast,
        AclCat::Slow,
        AclCat::Blocking,
        AclCat::Dangerous,
        AclCat::Connection,
        AclCat::Transaction,
        AclCat::Scripting,
    ];

    /// The category name with its `@`.
    pub const fn name(self) -> &'static str {
        match self {
            AclCat::Keyspace => "@keyspace",
            AclCat::Read => "@read",
            AclCat::Write => "@write",
            AclCat::Set => "@set",
            AclCat::SortedSet => "@sortedset",
            AclCat::List => "@list",
            AclCat::Hash => "@hash",
            AclCat::String => "@string",
            AclCat::Bitmap => "@bitmap",
            AclCat::HyperLogLog => "@hyperloglog",
            AclCat::Geo => "@geo",
            AclCat::Stream => "@stream",
            AclCat::Pubsub => "@pubsub",
            AclCat::Admin => "@admin",
            AclCat::Fast => "@fast",
            AclCat::Slow => "@slow",
            AclCat::Blocking => "@blocking",
            AclCat::Dangerous => "@dangerous",
            AclCat::Connection => "@connection",
            AclCat::Transaction => "@transaction",
            AclCat::Scripting => "@scripting",
        }
    }
}

/// A set of [`AclCat`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AclCats(u32);

impl AclCats {
    /// The set of `cats`.
    pub const fn of(cats: &[AclCat]) -> AclCats {
        let mut bits = 0u32;
        let mut i = 0;
        while i < cats.len() {
            bits |= 1 << cats[i] as u8;
            i += 1;
        }
        AclCats(bits)
    }

    /// True if `c` is in the set.
    pub const fn has(self, c: AclCat) -> bool {
        self.0 & (1 << c as u8) != 0
    }

    const fn with(self, c: AclCat) -> AclCats {
        AclCats(self.0 | (1 << c as u8))
    }
}

/// Where a command's keys are.
#[derive(Clone, Copy, Debug)]
pub enum KeySpec {
    /// No keys.
    None,
    /// Keys at `first`, `first + step`, ... up to `last` (absolute indices,
    /// name = 0). `last = -1`: up to the last argument; `-2`: all but the
    /// last, and so on.
    Range {
        /// Index of the first key.
        first: usize,
        /// Index of the last key; negative counts from the end (-1 = last).
        last: i32,
        /// Distance between keys (2 for `MSET k v k v`).
        step: usize,
    },
    /// The argument at `numkeys` holds a count N; N keys follow it
    /// (`SINTERCARD numkeys key [key ...]`).
    NumKeys {
        /// Index of the count argument.
        numkeys: usize,
    },
    /// Key positions computed from the arguments.
    Movable(KeysFn),
}

impl KeySpec {
    /// `Range { first, last, step }`.
    pub const fn range(first: usize, last: i32, step: usize) -> KeySpec {
        KeySpec::Range { first, last, step }
    }

    /// Pushes the absolute indices of the keys of `args` onto `out`.
    /// Indices beyond the arguments are never produced.
    pub fn extract(&self, args: &Args<'_>, out: &mut Vec<usize>) {
        let argc = args.len();
        match *self {
            KeySpec::None => {}
            KeySpec::Range { first, last, step } => {
                let last = if last < 0 {
                    argc as i64 + last as i64
                } else {
                    last as i64
                };
                let mut i = first as i64;
                while i <= last && (i as usize) < argc && step > 0 {
                    out.push(i as usize);
                    i += step as i64;
                }
            }
            KeySpec::NumKeys { numkeys } => {
                let n = args
                    .get(numkeys)
                    .and_then(roaringd_compat::number::parse_u64)
                    .unwrap_or(0) as usize;
                let end = (numkeys + 1).saturating_add(n).min(argc);
                out.extend(numkeys + 1..end);
            }
            KeySpec::Movable(f) => {
                let start = out.len();
                f(args, out);
                // Defensive: a buggy extractor must not index past the arguments.
                let mut i = start;
                while i < out.len() {
                    if out[i] >= argc {
                        out.swap_remove(i);
                    } else {
                        i += 1;
                    }
                }
            }
        }
    }

    /// The legacy `(first, last, step)` triple of `COMMAND INFO`.
    pub fn legacy_triple(&self) -> (i64, i64, i64) {
        match *self {
            KeySpec::Range { first, last, step } => (first as i64, last as i64, step as i64),
            _ => (0, 0, 0),
        }
    }

    /// True for key positions that depend on the arguments.
    pub fn is_movable(&self) -> bool {
        matches!(self, KeySpec::NumKeys { .. } | KeySpec::Movable(_))
    }
}

/// One key spec as `COMMAND INFO` prints it. Documentation only: locking
/// and `COMMAND GETKEYS` use the row's [`KeySpec`].
#[derive(Clone, Copy, Debug)]
pub struct KeySpecDoc {
    /// Key-spec flags (`RW`, `OW`, `RM`, `RO`, `access`, `update`, `insert`, `delete`).
    pub flags: &'static [&'static str],
    /// `begin_search` index.
    pub begin_index: usize,
    /// `find_keys`.
    pub find: KeyFind,
}

/// The `find_keys` part of a [`KeySpecDoc`].
#[derive(Clone, Copy, Debug)]
pub enum KeyFind {
    /// `range`: `lastkey` relative to the first key (-1 = last argument).
    Range {
        /// Last key, relative to the begin index; negative counts from the end.
        lastkey: i32,
        /// Step between keys.
        step: usize,
        /// Limit (0 = none).
        limit: usize,
    },
    /// `keynum`: a count argument, then the keys.
    KeyNum {
        /// Index of the count, relative to the begin index.
        keynumidx: usize,
        /// First key, relative to the begin index.
        firstkey: usize,
        /// Step between keys.
        step: usize,
    },
}

impl KeySpecDoc {
    /// A `range` key spec: keys from `begin_index` to `lastkey` (relative)
    /// with `step`.
    pub const fn range(
        flags: &'static [&'static str],
        begin_index: usize,
        lastkey: i32,
        step: usize,
    ) -> Self {
        KeySpecDoc {
            flags,
            begin_index,
            find: KeyFind::Range {
                lastkey,
                step,
                limit: 0,
            },
        }
    }
}

/// One command (or subcommand) row.
#[derive(Clone, Copy, Debug)]
pub struct CommandSpec {
    /// Lowercase name (`get`, `tr.setbit`; for a subcommand row: `kill`).
    pub name: &'static str,
    /// Redis arity (see the module docs).
    pub arity: i32,
    /// Flags.
    pub flags: Flags,
    /// Key positions.
    pub keys: KeySpec,
    /// ACL categories besides those implied by the flags.
    pub acl: AclCats,
    /// The handler (for a container command with subcommands it is only
    /// called when no subcommand row matches — normally never).
    pub handler: Handler,
    /// Subcommand rows (`CLIENT KILL`, `CONFIG GET`); empty for plain commands.
    pub subcommands: &'static [CommandSpec],
    /// One-line summary for `COMMAND DOCS`.
    pub summary: &'static str,
    /// Version that introduced the command (Redis's, or ours for TR.*).
    pub since: &'static str,
    /// Group for `COMMAND DOCS` (`string`, `server`, `connection`, ...).
    pub group: &'static str,
    /// Key-spec flags `COMMAND INFO` prints (`RW`, `OW`, `RM`, `RO`,
    /// `access`, `update`, `insert`, `delete`); `None`: `OW update` for
    /// write commands, `RO access` otherwise.
    pub key_flags: Option<&'static [&'static str]>,
    /// Explicit key specs for `COMMAND INFO` (one per key position, each
    /// with its own flags); empty: derived from `keys` and `key_flags`.
    pub key_specs: &'static [KeySpecDoc],
    /// The work a request asks for by its arguments (a TR.SETBITS with a
    /// million offsets, a TR.FLIPRANGE over 2^32); `None`: always short.
    /// A request over [`crate::dispatch::LONG_WORK_US`] runs off the
    /// connection workers, so the other clients of its worker are not
    /// stalled. Work that depends on the data (a TR.RANGE over a dense
    /// key, a TR.BITOP of big sources) is judged by its handler, which
    /// sees the data's size.
    pub work: Option<WorkFn>,
    /// How its `Txn` treats keys the write-back tier keeps dirty.
    pub tier: TierUse,
    /// The work a request asks for by the size of the data it reads (a
    /// SMEMBERS of a million members); `None`: bounded by its arguments.
    /// Checked once the `Txn` is open; past
    /// [`crate::dispatch::LONG_WORK_US`] the handler runs off the worker.
    pub data_work: Option<DataWorkFn>,
    /// The argument naming the one element of its first key that the
    /// command reads (SISMEMBER's member, HGET's field); `None`: none.
    /// A pipeline prefetches those elements' data entries for all of its
    /// commands before it runs them (`Store::prefetch_seeks`).
    pub seek: Option<u8>,
}

/// What every row of one command-family file shares: its ACL categories and
/// its `COMMAND DOCS` group.
pub struct Family {
    /// ACL categories of every row.
    pub acl: &'static [AclCat],
    /// `COMMAND DOCS` group of every row.
    pub group: &'static str,
}

impl Family {
    /// A row of this family: name, arity, handler, flags, key spec and docs.
    // One positional argument per table column keeps the rows one line each.
    #[allow(clippy::too_many_arguments)]
    pub const fn row(
        &self,
        name: &'static str,
        arity: i32,
        handler: Handler,
        flags: &'static [Flag],
        keys: KeySpec,
        summary: &'static str,
        since: &'static str,
    ) -> CommandSpec {
        CommandSpec::new(name, arity, handler)
            .flags(flags)
            .keys(keys)
            .acl(self.acl)
            .doc(summary, since, self.group)
    }
}

impl CommandSpec {
    /// A row with no flags, no keys, no categories and no docs.
    pub const fn new(name: &'static str, arity: i32, handler: Handler) -> CommandSpec {
        CommandSpec {
            name,
            arity,
            flags: Flags::NONE,
            keys: KeySpec::None,
            acl: AclCats(0),
            handler,
            subcommands: &[],
            summary: "",
            since: "1.0.0",
            group: "generic",
            key_flags: None,
            key_specs: &[],
            work: None,
            tier: TierUse::Absorb,
            data_work: None,
            seek: None,
        }
    }

    /// Sets the argument naming the element the command reads (see
    /// [`CommandSpec::seek`]).
    pub const fn seeks(mut self, arg: u8) -> Self {
        self.seek = Some(arg);
        self
    }

    /// Sets the estimate of a request's work from its data (see
    /// [`CommandSpec::data_work`]).
    pub const fn data_work(mut self, f: DataWorkFn) -> Self {
        self.data_work = Some(f);
        self
    }

    /// Sets how the row's `Txn` treats dirty keys (see [`TierUse`]).
    pub const fn tier(mut self, tier: TierUse) -> Self {
        self.tier = tier;
        self
    }

    /// Sets the estimate of a request's work (see [`CommandSpec::work`]).
    pub const fn work(mut self, f: WorkFn) -> Self {
        self.work = Some(f);
        self
    }

    /// The key and the element that `args` (the whole request) reads, for
    /// a row with a [`CommandSpec::seek`] argument; `None` otherwise or
    /// when the request lacks them.
    pub fn seek_of<'a>(&self, args: &Args<'a>) -> Option<(&'a [u8], &'a [u8])> {
        Some((args.get(1)?, args.get(usize::from(self.seek?))?))
    }

    /// True when `args` (the whole request) asks for more work than
    /// [`crate::dispatch::LONG_WORK_US`].
    pub fn is_long(&self, args: &Args<'_>) -> bool {
        self.work
            .is_some_and(|f| f(args) > crate::dispatch::LONG_WORK_US)
    }

    /// Sets the flags.
    pub const fn flags(mut self, flags: &[Flag]) -> Self {
        self.flags = Flags::of(flags);
        self
    }

    /// Sets the key spec.
    pub const fn keys(mut self, keys: KeySpec) -> Self {
        self.keys = keys;
        self
    }

    /// Sets the ACL categories (flag-implied ones are added automatically).
    pub const fn acl(mut self, cats: &[AclCat]) -> Self {
        self.acl = AclCats::of(cats);
        self
    }

    /// Sets the key-spec flags `COMMAND INFO` prints.
    pub const fn key_flags(mut self, flags: &'static [&'static str]) -> Self {
        self.key_flags = Some(flags);
        self
    }

    /// Sets explicit key specs for `COMMAND INFO`.
    pub const fn key_specs(mut self, specs: &'static [KeySpecDoc]) -> Self {
        self.key_specs = specs;
        self
    }

    /// Sets the subcommand rows.
    pub const fn subcommands(mut self, subs: &'static [CommandSpec]) -> Self {
        self.subcommands = subs;
        self
    }

    /// Sets the `COMMAND DOCS` summary, `since` version and group.
    pub const fn doc(
        mut self,
        summary: &'static str,
        since: &'static str,
        group: &'static str,
    ) -> Self {
        self.summary = summary;
        self.since = since;
        self.group = group;
        self
    }

    /// True if the row has flag `f`.
    #[inline]
    pub const fn has(&self, f: Flag) -> bool {
        self.flags.has(f)
    }

    /// True if the argument count `argc` (name included) satisfies the arity.
    #[inline]
    pub const fn arity_ok(&self, argc: usize) -> bool {
        if self.arity >= 0 {
            argc == self.arity as usize
        } else {
            argc >= (-self.arity) as usize
        }
    }

    /// Every ACL category of the row, the flag-implied ones included.
    pub const fn all_acl(&self) -> AclCats {
        let mut c = self.acl;
        if self.has(Flag::Write) {
            c = c.with(AclCat::Write);
        }
        if self.has(Flag::Readonly) && !c.has(AclCat::Scripting) {
            c = c.with(AclCat::Read);
        }
        if self.has(Flag::Admin) {
            c = c.with(AclCat::Admin).with(AclCat::Dangerous);
        }
        if self.has(Flag::Pubsub) {
            c = c.with(AclCat::Pubsub);
        }
        if self.has(Flag::Fast) {
            c = c.with(AclCat::Fast);
        }
        if self.has(Flag::Blocking) {
            c = c.with(AclCat::Blocking);
        }
        if !c.has(AclCat::Fast) {
            c = c.with(AclCat::Slow);
        }
        c
    }
}

/// Every family's rows, in the order `COMMAND` lists them.
pub const FAMILIES: &[&[CommandSpec]] = &[
    commands::connection::COMMANDS,
    commands::server::COMMANDS,
    commands::debug::COMMANDS,
    commands::acl::COMMANDS,
    commands::introspection::COMMANDS,
    commands::transactions::COMMANDS,
    commands::keyspace::COMMANDS,
    commands::strings::COMMANDS,
    commands::sets::COMMANDS,
    commands::hashes::COMMANDS,
    commands::tr_write::COMMANDS,
    commands::tr_read::COMMANDS,
    commands::tr_setops::COMMANDS,
    commands::tr_admin::COMMANDS,
];

/// Longest command name the lookup considers (longer names are unknown).
const MAX_NAME: usize = 64;

/// Per-command counters for INFO commandstats.
#[derive(Debug, Default)]
pub struct CmdStats {
    /// Successful and failed executions.
    pub calls: Counter,
    /// Total execution time in microseconds.
    pub usec: Counter,
    /// Rejected before execution (arity, auth, queueing errors).
    pub rejected: Counter,
    /// Executed and replied with an error.
    pub failed: Counter,
}

impl CmdStats {
    /// Zeroes every counter (CONFIG RESETSTAT).
    pub fn reset(&self) {
        self.calls.reset();
        self.usec.reset();
        self.rejected.reset();
        self.failed.reset();
    }
}

/// A resolved row: the spec, its full name and its counters.
#[derive(Debug)]
pub struct Entry {
    /// The row.
    pub spec: &'static CommandSpec,
    /// `get`, or `client|kill` for a subcommand.
    pub full_name: &'static str,
    /// Counters.
    pub stats: CmdStats,
    /// Subcommand entries (same order as `spec.subcommands`).
    pub subs: Vec<Entry>,
    /// True for a subcommand entry.
    pub is_sub: bool,
    /// `top << 16 | (sub + 1)`, or `top << 16` for a top-level entry.
    pub id: u32,
    /// Dense index of this entry among every entry (top-level and
    /// subcommand, in table order): its bit in an ACL command set.
    pub acl_bit: usize,
}

impl Entry {
    /// The entry of `spec`; `next_bit` is the next free ACL bit, advanced
    /// past this entry and its subcommands.
    fn new(
        spec: &'static CommandSpec,
        parent: Option<&str>,
        id: u32,
        next_bit: &mut usize,
    ) -> Entry {
        let full_name: &'static str = match parent {
            None => spec.name,
            Some(p) => Box::leak(format!("{p}|{}", spec.name).into_boxed_str()),
        };
        let acl_bit = *next_bit;
        *next_bit += 1;
        Entry {
            spec,
            full_name,
            stats: CmdStats::default(),
            subs: spec
                .subcommands
                .iter()
                .enumerate()
                .map(|(i, s)| Entry::new(s, Some(spec.name), id | (i as u32 + 1), next_bit))
                .collect(),
            is_sub: parent.is_some(),
            id,
            acl_bit,
        }
    }

    /// The subcommand entry named `sub` (any case).
    pub fn sub(&'static self, sub: &[u8]) -> Option<&'static Entry> {
        self.subs
            .iter()
            .find(|s| s.spec.name.as_bytes().eq_ignore_ascii_case(sub))
    }
}

/// FNV-1a: command names are short and trusted-shape; SipHash's DoS
/// resistance buys nothing for a fixed table and costs on every request.
#[derive(Default, Clone, Copy)]
pub struct NameHasher(u64);

impl std::hash::Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        self.0 = h;
    }
}

type NameMap = HashMap<&'static [u8], usize, std::hash::BuildHasherDefault<NameHasher>>;

/// The command table, indexed by lowercase name.
pub struct CommandTable {
    entries: Vec<Entry>,
    by_name: NameMap,
    /// Entries and subcommand entries in all.
    acl_bits: usize,
}

static TABLE: LazyLock<CommandTable> = LazyLock::new(|| {
    let mut entries = Vec::new();
    let mut by_name = NameMap::default();
    let mut acl_bits = 0;
    for family in FAMILIES {
        for spec in family.iter() {
            by_name.insert(spec.name.as_bytes(), entries.len());
            let id = (entries.len() as u32) << 16;
            entries.push(Entry::new(spec, None, id, &mut acl_bits));
        }
    }
    CommandTable {
        entries,
        by_name,
        acl_bits,
    }
});

impl CommandTable {
    /// The process-wide table.
    pub fn get() -> &'static CommandTable {
        &TABLE
    }

    /// The entry named `name` (any case).
    pub fn lookup(&'static self, name: &[u8]) -> Option<&'static Entry> {
        if name.len() > MAX_NAME {
            return None;
        }
        let mut buf = [0u8; MAX_NAME];
        let lower = &mut buf[..name.len()];
        lower.copy_from_slice(name);
        lower.make_ascii_lowercase();
        self.by_name.get(&*lower).map(|&i| &self.entries[i])
    }

    /// The entry named `name` (any case): `get`, or `client|kill` for a
    /// subcommand. `None` for an unknown name, a subcommand of a command
    /// without subcommands, or more than one `|`.
    pub fn lookup_full(&'static self, name: &[u8]) -> Option<&'static Entry> {
        match name.iter().position(|&c| c == b'|') {
            None => self.lookup(name),
            Some(i) => self.lookup(&name[..i])?.sub(&name[i + 1..]),
        }
    }

    /// Number of entries, subcommand entries included: every
    /// [`Entry::acl_bit`] is below it.
    pub fn acl_bits(&self) -> usize {
        self.acl_bits
    }

    /// Every entry, each top-level one followed by its subcommand entries.
    pub fn all_entries(&'static self) -> impl Iterator<Item = &'static Entry> {
        self.entries
            .iter()
            .flat_map(|e| std::iter::once(e).chain(e.subs.iter()))
    }

    /// The entry with `Entry::id` `id`.
    pub fn by_id(&'static self, id: u32) -> Option<&'static Entry> {
        let top = self.entries.get((id >> 16) as usize)?;
        match id & 0xffff {
            0 => Some(top),
            sub => top.subs.get(sub as usize - 1),
        }
    }

    /// Every top-level entry, in table order.
    pub fn entries(&'static self) -> &'static [Entry] {
        &self.entries
    }

    /// Every row.
    pub fn iter(&self) -> impl Iterator<Item = &'static CommandSpec> {
        FAMILIES.iter().flat_map(|f| f.iter())
    }

    /// Number of top-level commands.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn only_single_key_bitmap_reads_and_edits_and_meta_commands_keep_dirty_keys() {
        // A row that keeps dirty keys must read nothing but the edited
        // container and `meta`: the tier's dirty state is not in the LSM
        // store that a range or a stream scans. The keyspace's meta-only
        // commands (EXISTS, TYPE, the TTL and EXPIRE families) read the
        // dirty meta and set a dirty key's expire time in place.
        let mut keep = Vec::new();
        let mut dest = Vec::new();
        for fam in FAMILIES {
            for spec in *fam {
                match spec.tier {
                    TierUse::Absorb => {}
                    TierUse::KeepDirty { max_argc } => keep.push((spec.name, max_argc)),
                    TierUse::KeepDest => dest.push(spec.name),
                }
            }
        }
        keep.sort_unstable();
        dest.sort_unstable();
        let any = usize::MAX;
        let listed = 2 + roaringd_store::types::bitmap::oplog::MAX_BITS;
        assert_eq!(
            keep,
            vec![
                ("exists", any),
                ("expire", any),
                ("expireat", any),
                ("expiretime", any),
                ("persist", any),
                ("pexpire", any),
                ("pexpireat", any),
                ("pexpiretime", any),
                ("pttl", any),
                ("touch", any),
                ("tr.appendintarray", listed),
                ("tr.bitcount", 2),
                ("tr.clearbits", listed),
                ("tr.fliprange", any),
                ("tr.getbit", any),
                ("tr.max", any),
                ("tr.min", any),
                ("tr.setbit", any),
                ("tr.setbits", listed),
                ("tr.setrange", any),
                ("tr.stat", any),
                ("ttl", any),
                ("type", any)
            ]
        );
        assert_eq!(dest, vec!["tr.bitop", "tr.diff"]);
        assert!(TierUse::KeepDirty { max_argc: 2 }.keeps_dirty(2));
        assert!(!TierUse::KeepDirty { max_argc: 2 }.keeps_dirty(4));
        assert!(!TierUse::KeepDest.keeps_dirty(1));
    }

    fn check_row(spec: &CommandSpec, full: &str) {
        assert!(spec.arity != 0, "{full}: arity 0");
        assert_eq!(
            spec.name,
            spec.name.to_ascii_lowercase(),
            "{full}: name not lowercase"
        );
        assert!(
            !(spec.has(Flag::Write) && spec.has(Flag::Readonly)),
            "{full}: both write and readonly"
        );
        if let KeySpec::Range { first, last, step } = spec.keys {
            assert!(first >= 1, "{full}: first key at {first}");
            assert!(step >= 1, "{full}: step 0");
            if last >= 0 {
                assert!(last as usize >= first, "{full}: last < first");
            }
            let min_argc = spec.arity.unsigned_abs() as usize;
            assert!(
                first < min_argc.max(first + 1),
                "{full}: first key beyond arity"
            );
        }
        if let KeySpec::NumKeys { numkeys } = spec.keys {
            assert!(numkeys >= 1, "{full}: numkeys at 0");
        }
    }

    #[test]
    fn table_names_are_unique_and_rows_are_sane() {
        let mut seen = HashSet::new();
        for spec in CommandTable::get().iter() {
            assert!(seen.insert(spec.name), "duplicate command {}", spec.name);
            check_row(spec, spec.name);
            let mut subs = HashSet::new();
            for sub in spec.subcommands {
                let full = format!("{}|{}", spec.name, sub.name);
                assert!(subs.insert(sub.name), "duplicate subcommand {full}");
                assert!(sub.arity.unsigned_abs() >= 2, "{full}: arity below 2");
                check_row(sub, &full);
            }
        }
        assert_eq!(seen.len(), CommandTable::get().len());
    }

    /// Every TR.* row is `@bitmap`, exactly one of `@read` / `@write`
    /// (reads are readonly rows, writes write rows) and one of `@fast` /
    /// `@slow`, so ACL category rules cover them as Redis's bitmap commands.
    #[test]
    fn bitmap_commands_have_acl_categories() {
        let mut n = 0;
        for spec in CommandTable::get()
            .iter()
            .filter(|s| s.name.starts_with("tr."))
        {
            let c = spec.all_acl();
            assert!(c.has(AclCat::Bitmap), "{}: not @bitmap", spec.name);
            assert_ne!(c.has(AclCat::Read), c.has(AclCat::Write), "{}", spec.name);
            assert_eq!(c.has(AclCat::Write), spec.has(Flag::Write), "{}", spec.name);
            assert_ne!(c.has(AclCat::Fast), c.has(AclCat::Slow), "{}", spec.name);
            n += 1;
        }
        assert!(n >= 25, "{n} TR.* commands");
    }

    #[test]
    fn acl_bits_are_dense_and_lookup_takes_full_names() {
        let t = CommandTable::get();
        let bits: Vec<usize> = t.all_entries().map(|e| e.acl_bit).collect();
        assert_eq!(bits, (0..t.acl_bits()).collect::<Vec<_>>());
        assert_eq!(
            t.lookup_full(b"CLIENT|Kill").unwrap().full_name,
            "client|kill"
        );
        assert_eq!(t.lookup_full(b"get").unwrap().full_name, "get");
        assert!(t.lookup_full(b"get|x").is_none());
        assert!(t.lookup_full(b"config|get|x").is_none());
    }

    #[test]
    fn lookup_ignores_case() {
        let t = CommandTable::get();
        assert!(t.lookup(b"PiNg").is_some());
        assert!(t.lookup(b"nosuchcommand").is_none());
    }

    #[test]
    fn key_specs_extract_positions() {
        let buf = b"mset a 1 b 2";
        let spans: Vec<_> = [(0, 4), (5, 6), (7, 8), (9, 10), (11, 12)]
            .iter()
            .map(|&(s, e)| roaringd_resp::Span { start: s, end: e })
            .collect();
        let args = Args::new(buf, &spans);
        let mut out = Vec::new();
        KeySpec::range(1, -1, 2).extract(&args, &mut out);
        assert_eq!(out, vec![1, 3]);
        out.clear();
        KeySpec::range(1, 1, 1).extract(&args, &mut out);
        assert_eq!(out, vec![1]);
        out.clear();
        KeySpec::range(1, -2, 1).extract(&args, &mut out);
        assert_eq!(out, vec![1, 2, 3]);
    }
}
