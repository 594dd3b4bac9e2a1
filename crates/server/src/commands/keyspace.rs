//! Generic keyspace commands: DEL UNLINK EXISTS TOUCH TYPE EXPIRE PEXPIRE
//! EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME PEXPIRETIME PERSIST RENAME
//! RENAMENX KEYS SCAN RANDOMKEY OBJECT MEMORY, plus the cursor and SCAN
//! option parsing the set and hash families share. Semantics and error
//! texts follow Redis 7.0.

use roaringd_resp::Args;
use roaringd_store::types::keyspace::ExpireCond;
use roaringd_store::{Kind, StoreError};

use crate::command_table::{AclCat, CommandSpec, Family, Flag, KeySpec, KeySpecDoc, TierUse};
use crate::commands::connection::{container, help};
use crate::commands::work;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;

const R: &[Flag] = &[Flag::Readonly];
const RF: &[Flag] = &[Flag::Readonly, Flag::Fast];
const W: &[Flag] = &[Flag::Write];
const WF: &[Flag] = &[Flag::Write, Flag::Fast];
const ACL: &[AclCat] = &[AclCat::Keyspace];
const K1: KeySpec = KeySpec::range(1, 1, 1);
const K12: KeySpec = KeySpec::range(1, 2, 1);
const KALL: KeySpec = KeySpec::range(1, -1, 1);

const FAMILY: Family = Family {
    acl: ACL,
    group: "generic",
};

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    FAMILY.row("del", -2, del, W, KALL, "Deletes one or more keys.", "1.0.0").work(work::per_element).key_flags(&["RM", "delete"]),
    FAMILY.row("unlink", -2, del, WF, KALL, "Asynchronously deletes one or more keys.", "4.0.0").work(work::per_element)
        .key_flags(&["RM", "delete"]),
    FAMILY.row("exists", -2, exists, RF, KALL, "Determines whether one or more keys exist.", "1.0.0").work(work::per_element)
        .key_flags(&["RO"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("touch", -2, exists, RF, KALL, "Returns the number of existing keys out of those specified after updating the time they were last accessed.", "3.2.1").work(work::per_element)
        .key_flags(&["RO"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("type", 2, type_, RF, K1, "Determines the type of value stored at a key.", "1.0.0")
        .key_flags(&["RO"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("expire", -3, expire, WF, K1, "Sets the expiration time of a key in seconds.", "1.0.0")
        .key_flags(&["RW", "update"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("pexpire", -3, pexpire, WF, K1, "Sets the expiration time of a key in milliseconds.", "2.6.0")
        .key_flags(&["RW", "update"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("expireat", -3, expireat, WF, K1, "Sets the expiration time of a key to a Unix timestamp.", "1.2.0")
        .key_flags(&["RW", "update"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("pexpireat", -3, pexpireat, WF, K1, "Sets the expiration time of a key to a Unix milliseconds timestamp.", "2.6.0")
        .key_flags(&["RW", "update"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("ttl", 2, ttl, RF, K1, "Returns the expiration time in seconds of a key.", "1.0.0")
        .key_flags(&["RO", "access"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("pttl", 2, pttl, RF, K1, "Returns the expiration time in milliseconds of a key.", "2.6.0")
        .key_flags(&["RO", "access"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("expiretime", 2, expiretime, RF, K1, "Returns the expiration time of a key as a Unix timestamp.", "7.0.0")
        .key_flags(&["RO", "access"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("pexpiretime", 2, pexpiretime, RF, K1, "Returns the expiration time of a key as a Unix milliseconds timestamp.", "7.0.0")
        .key_flags(&["RO", "access"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("persist", 2, persist, WF, K1, "Removes the expiration time of a key.", "2.2.0")
        .key_flags(&["RW", "update"])
        .tier(TierUse::KEEP_DIRTY),
    FAMILY.row("rename", 3, rename, W, K12, "Renames a key and overwrites the destination.", "1.0.0")
        .key_specs(&[
            KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1),
            KeySpecDoc::range(&["OW", "update"], 2, 0, 1),
        ]),
    FAMILY.row("renamenx", 3, renamenx, WF, K12, "Renames a key only when the target key name doesn't exist.", "1.0.0")
        .key_specs(&[
            KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1),
            KeySpecDoc::range(&["OW", "insert"], 2, 0, 1),
        ]),
    FAMILY.row("keys", 2, keys, R, KeySpec::None, "Returns all key names that match a pattern.", "1.0.0").data_work(work::db_keys)
        .acl(&[AclCat::Keyspace, AclCat::Dangerous]),
    FAMILY.row("scan", -2, scan, R, KeySpec::None, "Iterates over the key names in the database.", "2.8.0").work(work::count_option),
    FAMILY.row("randomkey", 1, randomkey, R, KeySpec::None, "Returns a random key name from the database.", "1.0.0"),
    CommandSpec::new("object", -2, container)
        .subcommands(OBJECT)
        .doc("A container for object introspection commands.", "2.2.3", "generic"),
    CommandSpec::new("memory", -2, container)
        .subcommands(MEMORY)
        .doc("A container for memory diagnostics commands.", "4.0.0", "server"),
];

/// OBJECT subcommands, in the order Redis 7.0 lists them.
const OBJECT: &[CommandSpec] = &[
    CommandSpec::new("encoding", 3, object_encoding)
        .flags(R)
        .keys(KeySpec::range(2, 2, 1))
        .acl(ACL)
        .key_flags(&["RO"])
        .doc(
            "Returns the internal encoding of a Redis object.",
            "2.2.3",
            "generic",
        ),
    CommandSpec::new("help", 2, object_help)
        .flags(&[Flag::Loading, Flag::Stale])
        .acl(ACL)
        .doc(
            "Returns helpful text about the different subcommands.",
            "6.2.0",
            "generic",
        ),
    CommandSpec::new("refcount", 3, object_refcount)
        .flags(R)
        .keys(KeySpec::range(2, 2, 1))
        .acl(ACL)
        .key_flags(&["RO"])
        .doc(
            "Returns the reference count of a value of a key.",
            "2.2.3",
            "generic",
        ),
    CommandSpec::new("idletime", 3, object_idletime)
        .flags(R)
        .keys(KeySpec::range(2, 2, 1))
        .acl(ACL)
        .key_flags(&["RO"])
        .doc(
            "Returns the time since the last access to a Redis object.",
            "2.2.3",
            "generic",
        ),
    CommandSpec::new("freq", 3, object_freq)
        .flags(R)
        .keys(KeySpec::range(2, 2, 1))
        .acl(ACL)
        .key_flags(&["RO"])
        .doc(
            "Returns the logarithmic access frequency counter of a Redis object.",
            "4.0.0",
            "generic",
        ),
];

/// MEMORY subcommands we implement (no DOCTOR / STATS), in Redis's order.
const MEMORY: &[CommandSpec] = &[
    CommandSpec::new("malloc-stats", 2, memory_malloc_stats).doc(
        "Returns the allocator statistics.",
        "4.0.0",
        "server",
    ),
    CommandSpec::new("help", 2, memory_help)
        .flags(&[Flag::Loading, Flag::Stale])
        .doc(
            "Returns helpful text about the different subcommands.",
            "4.0.0",
            "server",
        ),
    CommandSpec::new("purge", 2, memory_purge).doc(
        "Asks the allocator to release memory.",
        "4.0.0",
        "server",
    ),
    CommandSpec::new("usage", -3, memory_usage)
        .flags(R)
        .keys(KeySpec::range(2, 2, 1))
        .key_flags(&["RO"])
        .doc("Estimates the memory usage of a key.", "4.0.0", "server"),
];

fn del(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let db = ctx.db;
    let txn = ctx.txn()?;
    let mut n = 0;
    for key in args.rest() {
        n += i64::from(txn.del(db, key)?);
    }
    Ok(Reply::Integer(n))
}

fn exists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let db = ctx.db;
    let txn = ctx.txn()?;
    let mut n = 0;
    for key in args.rest() {
        n += i64::from(txn.exists(db, key)?);
    }
    Ok(Reply::Integer(n))
}

fn type_(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    let name = ctx.txn()?.key_type(db, key)?.map_or("none", Kind::name);
    Ok(Reply::status(name))
}

/// Parses EXPIRE's trailing NX / XX / GT / LT options (Redis 7.0
/// `parseExtendedExpireArgumentsOrReply`).
fn expire_cond(args: &mut Args<'_>) -> Result<ExpireCond, CommandError> {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in args.rest() {
        if opt.eq_ignore_ascii_case(b"nx") {
            nx = true;
        } else if opt.eq_ignore_ascii_case(b"xx") {
            xx = true;
        } else if opt.eq_ignore_ascii_case(b"gt") {
            gt = true;
        } else if opt.eq_ignore_ascii_case(b"lt") {
            lt = true;
        } else {
            return Err(CommandError::err_echo("Unsupported option ", opt, ""));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(CommandError::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(CommandError::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    Ok(ExpireCond { nx, xx, gt, lt })
}

fn expire_generic(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    cmd: &'static str,
    seconds: bool,
    absolute: bool,
) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let raw = args.next_bytes()?;
    let cond = expire_cond(args)?;
    let when = roaringd_compat::number::parse_i64(raw).ok_or(CommandError::NotInteger)?;
    let bad = || CommandError::Store(StoreError::InvalidExpireTime(cmd));
    let db = ctx.db;
    let txn = ctx.txn()?;
    let base = if absolute { 0 } else { txn.now_ms() as i64 };
    let ms = if seconds {
        when.checked_mul(1000).ok_or_else(bad)?
    } else {
        when
    };
    let at = ms.checked_add(base).ok_or_else(bad)?;
    Ok(Reply::Integer(i64::from(txn.expire_at(db, key, at, cond)?)))
}

fn expire(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    expire_generic(ctx, args, "expire", true, false)
}

fn pexpire(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    expire_generic(ctx, args, "pexpire", false, false)
}

fn expireat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    expire_generic(ctx, args, "expireat", true, true)
}

fn pexpireat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    expire_generic(ctx, args, "pexpireat", false, true)
}

fn ttl_generic(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    ms: bool,
    absolute: bool,
) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    let t = ctx.txn()?.ttl_ms(db, key, absolute)?;
    Ok(Reply::Integer(if t < 0 || ms {
        t
    } else {
        (t + 500) / 1000
    }))
}

fn ttl(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    ttl_generic(ctx, args, false, false)
}

fn pttl(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    ttl_generic(ctx, args, true, false)
}

fn expiretime(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    ttl_generic(ctx, args, false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    ttl_generic(ctx, args, true, true)
}

fn persist(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(i64::from(ctx.txn()?.persist(db, key)?)))
}

fn rename(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let src = args.next_bytes()?;
    let dst = args.next_bytes()?;
    rename_key(ctx, src, dst, false)?;
    Ok(Reply::Ok)
}

fn renamenx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let src = args.next_bytes()?;
    let dst = args.next_bytes()?;
    Ok(Reply::Integer(i64::from(rename_key(ctx, src, dst, true)?)))
}

/// `data` entries above which RENAME copies them as blocking work off the
/// I/O worker (DESIGN.md: a long command must not stall the worker's other
/// connections); the copy is O(entries).
const RENAME_OFF_WORKER_ENTRIES: u64 = 4096;

/// RENAME / RENAMENX on this command's `Txn`, off the worker for big keys.
fn rename_key(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], nx: bool) -> Result<bool, CommandError> {
    let db = ctx.db;
    let txn = ctx.txn()?;
    let entries = txn.meta(db, src)?.map_or(0, |m| m.data_entries());
    Ok(crate::dispatch::run_blocking_if(
        entries > RENAME_OFF_WORKER_ENTRIES,
        || txn.rename(db, src, dst, nx),
    )?)
}

fn keys(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let pattern = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::bulks(ctx.txn()?.keys(db, pattern)?))
}

/// Parses a SCAN-family cursor as Redis does (`strtoul`: optional sign,
/// decimal digits, the whole argument; a negative value wraps).
///
/// # Errors
/// `ERR invalid cursor`.
pub(crate) fn parse_cursor(raw: &[u8]) -> Result<u64, CommandError> {
    let invalid = || CommandError::Store(StoreError::InvalidCursor);
    // `strtoul` sees a C string: it ends at the first NUL byte.
    let raw = raw.split(|&b| b == 0).next().unwrap_or(raw);
    if raw.first().is_some_and(u8::is_ascii_whitespace) {
        return Err(invalid());
    }
    let (neg, digits) = match raw.first() {
        Some(b'-') => (true, &raw[1..]),
        Some(b'+') => (false, &raw[1..]),
        _ => (false, raw),
    };
    if digits.is_empty() && !raw.is_empty() {
        return Err(invalid());
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return Err(invalid());
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or_else(invalid)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// SCAN-family options.
pub(crate) struct ScanOpts<'a> {
    /// MATCH pattern.
    pub pattern: Option<&'a [u8]>,
    /// COUNT (default 10).
    pub count: usize,
    /// TYPE name (SCAN only), lowercase comparison done by the caller.
    pub kind: Option<&'a [u8]>,
}

/// Parses `[MATCH pattern] [COUNT count]` (and `[TYPE type]` when
/// `with_type`), as Redis's `scanGenericCommand`.
///
/// # Errors
/// `ERR syntax error` for unknown options or COUNT < 1; `ERR value is not
/// an integer or out of range` for a malformed COUNT.
pub(crate) fn parse_scan_opts<'a>(
    args: &mut Args<'a>,
    with_type: bool,
) -> Result<ScanOpts<'a>, CommandError> {
    let mut o = ScanOpts {
        pattern: None,
        count: 10,
        kind: None,
    };
    while args.remaining() > 0 {
        if args.remaining() >= 2 && args.eat_keyword("count") {
            let n = args.next_i64()?;
            if n < 1 {
                return Err(CommandError::Syntax);
            }
            o.count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if args.remaining() >= 2 && args.eat_keyword("match") {
            o.pattern = Some(args.next_bytes()?);
        } else if with_type && args.remaining() >= 2 && args.eat_keyword("type") {
            o.kind = Some(args.next_bytes()?);
        } else {
            return Err(CommandError::Syntax);
        }
    }
    Ok(o)
}

/// An SSCAN / HSCAN request past its checks: key, cursor, options.
pub(crate) type ScanStart<'a> = (&'a [u8], u64, ScanOpts<'a>);

/// The first steps of SSCAN / HSCAN in Redis's order: the cursor, then the
/// key (absent → the empty scan reply `Some`, wrong type → WRONGTYPE), and
/// only then the options.
pub(crate) fn scan_key_prologue<'a>(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'a>,
    kind: Kind,
) -> Result<Result<ScanStart<'a>, Reply>, CommandError> {
    let key = args.next_bytes()?;
    let cursor = parse_cursor(args.next_bytes()?)?;
    let db = ctx.db;
    match ctx.txn()?.kind_of(db, key)? {
        None => return Ok(Err(scan_reply(0, Vec::new()))),
        Some(k) if k != kind => return Err(StoreError::WrongType.into()),
        Some(_) => {}
    }
    let o = parse_scan_opts(args, false)?;
    Ok(Ok((key, cursor, o)))
}

/// The reply of every SCAN-family command: `[cursor, [items]]`.
pub(crate) fn scan_reply(cursor: u64, items: Vec<Reply>) -> Reply {
    Reply::Array(vec![
        Reply::Bulk(cursor.to_string().into_bytes()),
        Reply::Array(items),
    ])
}

fn scan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let cursor = parse_cursor(args.next_bytes()?)?;
    let o = parse_scan_opts(args, true)?;
    let db = ctx.db;
    let (next, keys) = ctx.txn()?.scan(db, cursor, o.pattern, o.count)?;
    let items = keys
        .into_iter()
        .filter(|(_, k)| {
            o.kind
                .is_none_or(|t| k.name().as_bytes().eq_ignore_ascii_case(t))
        })
        .map(|(key, _)| Reply::Bulk(key))
        .collect();
    Ok(scan_reply(next, items))
}

fn randomkey(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let db = ctx.db;
    Ok(Reply::bulk_or_null(ctx.txn()?.random_key(db)?))
}

fn object_encoding(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(match ctx.txn()?.object_encoding(db, key)? {
        Some(e) => Reply::Static(e.as_bytes()),
        None => Reply::Null,
    })
}

fn object_freq(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    if !ctx.txn()?.exists(db, key)? {
        return Ok(Reply::Null);
    }
    Err(CommandError::err(
        "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
    ))
}

fn object_idletime(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(if ctx.txn()?.exists(db, key)? {
        Reply::Integer(0)
    } else {
        Reply::Null
    })
}

fn object_refcount(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(if ctx.txn()?.exists(db, key)? {
        Reply::Integer(1)
    } else {
        Reply::Null
    })
}

fn object_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(help(
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    ))
}

fn memory_usage(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    // Redis's default sample count for nested values.
    let mut samples = 5usize;
    while args.remaining() > 0 {
        if args.remaining() >= 2 && args.eat_keyword("samples") {
            let n = args.next_i64()?;
            if n < 0 {
                return Err(CommandError::Syntax);
            }
            samples = usize::try_from(n).unwrap_or(usize::MAX);
        } else {
            return Err(CommandError::Syntax);
        }
    }
    let db = ctx.db;
    Ok(match ctx.txn()?.memory_usage(db, key, samples)? {
        Some(n) => Reply::Integer(i64::try_from(n).unwrap_or(i64::MAX)),
        None => Reply::Null,
    })
}

fn memory_malloc_stats(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    // Redis's reply when it is not built with jemalloc.
    Ok(Reply::Static(
        b"Stats not supported for the current allocator",
    ))
}

fn memory_purge(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    crate::allocator::collect();
    Ok(Reply::Ok)
}

fn memory_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(help(
        "MEMORY",
        &[
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursor_parses_like_strtoul() {
        assert_eq!(parse_cursor(b"0").unwrap(), 0);
        assert_eq!(parse_cursor(b"123").unwrap(), 123);
        assert_eq!(parse_cursor(b"+7").unwrap(), 7);
        assert_eq!(parse_cursor(b"-1").unwrap(), u64::MAX);
        assert!(parse_cursor(b"abc").is_err());
        assert!(parse_cursor(b" 1").is_err());
        assert!(parse_cursor(b"1x").is_err());
        assert!(parse_cursor(b"99999999999999999999999").is_err());
        assert_eq!(parse_cursor(b"").unwrap(), 0);
        assert_eq!(parse_cursor(b"\x00").unwrap(), 0);
        assert_eq!(parse_cursor(b"12\x00zz").unwrap(), 12);
    }
}
