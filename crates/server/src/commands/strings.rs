//! String commands: GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX MGET MSET
//! MSETNX INCR DECR INCRBY DECRBY INCRBYFLOAT APPEND STRLEN GETRANGE SUBSTR
//! SETRANGE. Each handler parses its arguments, calls one store operation
//! on the command's `Txn` and returns a typed reply; semantics and error
//! texts follow Redis 7.0.

use roaringd_resp::Args;
use roaringd_store::types::strings::{ExpireUpdate, SetCond, SetOptions};
use roaringd_store::StoreError;

use crate::command_table::{AclCat, CommandSpec, Family, Flag, KeySpec};
use crate::commands::work;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;

const R: &[Flag] = &[Flag::Readonly];
const RF: &[Flag] = &[Flag::Readonly, Flag::Fast];
const WF: &[Flag] = &[Flag::Write, Flag::Fast];
const WD: &[Flag] = &[Flag::Write, Flag::Denyoom];
const WDF: &[Flag] = &[Flag::Write, Flag::Denyoom, Flag::Fast];
const ACL: &[AclCat] = &[AclCat::String];
const K1: KeySpec = KeySpec::range(1, 1, 1);
const KALL: KeySpec = KeySpec::range(1, -1, 1);
const KPAIRS: KeySpec = KeySpec::range(1, -1, 2);

const FAMILY: Family = Family {
    acl: ACL,
    group: "string",
};

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    FAMILY.row("get", 2, get, RF, K1, "Returns the string value of a key.", "1.0.0")
        .key_flags(&["RO", "access"]),
    FAMILY.row("set", -3, set, WD, K1, "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", "1.0.0")
        .key_flags(&["RW", "access", "update", "variable_flags"]),
    FAMILY.row("setnx", 3, setnx, WDF, K1, "Set the string value of a key only when the key doesn't exist.", "1.0.0")
        .key_flags(&["OW", "insert"]),
    FAMILY.row("setex", 4, setex, WD, K1, "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", "2.0.0")
        .key_flags(&["OW", "update"]),
    FAMILY.row("psetex", 4, psetex, WD, K1, "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", "2.6.0")
        .key_flags(&["OW", "update"]),
    FAMILY.row("getset", 3, getset, WDF, K1, "Returns the previous string value of a key after setting it to a new value.", "1.0.0")
        .key_flags(&["RW", "access", "update"]),
    FAMILY.row("getdel", 2, getdel, WF, K1, "Returns the string value of a key after deleting the key.", "6.2.0")
        .key_flags(&["RW", "access", "delete"]),
    FAMILY.row("getex", -2, getex, WF, K1, "Returns the string value of a key after setting its expiration time.", "6.2.0")
        .key_flags(&["RW", "access", "update"]),
    FAMILY.row("mget", -2, mget, RF, KALL, "Atomically returns the string values of one or more keys.", "1.0.0").work(work::per_element)
        .key_flags(&["RO", "access"]),
    FAMILY.row("mset", -3, mset, WD, KPAIRS, "Atomically creates or modifies the string values of one or more keys.", "1.0.1").work(work::per_element)
        .key_flags(&["OW", "update"]),
    FAMILY.row("msetnx", -3, msetnx, WD, KPAIRS, "Atomically modifies the string values of one or more keys only when all keys don't exist.", "1.0.1").work(work::per_element)
        .key_flags(&["OW", "insert"]),
    FAMILY.row("incr", 2, incr, WDF, K1, "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", "1.0.0")
        .key_flags(&["RW", "access", "update"]),
    FAMILY.row("decr", 2, decr, WDF, K1, "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", "1.0.0")
        .key_flags(&["RW", "access", "update"]),
    FAMILY.row("incrby", 3, incrby, WDF, K1, "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", "1.0.0")
        .key_flags(&["RW", "access", "update"]),
    FAMILY.row("decrby", 3, decrby, WDF, K1, "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", "1.0.0")
        .key_flags(&["RW", "access", "update"]),
    FAMILY.row("incrbyfloat", 3, incrbyfloat, WDF, K1, "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", "2.6.0")
        .key_flags(&["RW", "access", "update"]),
    FAMILY.row("append", 3, append, WDF, K1, "Appends a string to the value of a key. Creates the key if it doesn't exist.", "2.0.0")
        .key_flags(&["RW", "insert"]),
    FAMILY.row("strlen", 2, strlen, RF, K1, "Returns the length of a string value.", "2.2.0")
        .key_flags(&["RO"]),
    FAMILY.row("getrange", 4, getrange, R, K1, "Returns a substring of the string stored at a key.", "2.4.0")
        .key_flags(&["RO", "access"]),
    FAMILY.row("substr", 4, getrange, R, K1, "Returns a substring from a string value.", "1.0.0")
        .key_flags(&["RO", "access"]),
    FAMILY.row("setrange", 4, setrange, WD, K1, "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", "2.2.0")
        .key_flags(&["RW", "update"]),
];

fn get(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::bulk_or_null(ctx.txn()?.get(db, key)?))
}

/// Which of SET's / GETEX's option grammars applies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Grammar {
    Set,
    GetEx,
}

/// The parsed expire option: unit and whether it is absolute.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireArg {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// An expire option and its unparsed argument.
type RawExpire<'a> = (ExpireArg, &'a [u8]);

/// A key and its value (MSET).
type Pair<'a> = (&'a [u8], &'a [u8]);

/// Parses SET / GETEX options exactly as Redis's
/// `parseExtendedStringArgumentsOrReply`, returning the options and the
/// raw expire argument.
fn parse_string_opts<'a>(
    args: &mut Args<'a>,
    grammar: Grammar,
) -> Result<(SetOptions, Option<RawExpire<'a>>), CommandError> {
    let mut opts = SetOptions::default();
    let mut expire: Option<(ExpireArg, &'a [u8])> = None;
    let mut keepttl = false;
    let mut persist = false;
    while let Some(opt) = args.peek() {
        args.next_bytes()?;
        let has_next = args.peek().is_some();
        let is = |kw: &str| opt.eq_ignore_ascii_case(kw.as_bytes());
        let exp_kind = expire.map(|(k, _)| k);
        let set = grammar == Grammar::Set;
        if is("nx") && set && opts.cond != SetCond::Xx {
            opts.cond = SetCond::Nx;
        } else if is("xx") && set && opts.cond != SetCond::Nx {
            opts.cond = SetCond::Xx;
        } else if is("get") && set {
            opts.get = true;
        } else if is("keepttl") && set && !persist && expire.is_none() {
            keepttl = true;
        } else if is("persist") && !set && expire.is_none() && !keepttl {
            persist = true;
        } else if (is("ex") || is("px") || is("exat") || is("pxat")) && has_next {
            let kind = if is("ex") {
                ExpireArg::Ex
            } else if is("px") {
                ExpireArg::Px
            } else if is("exat") {
                ExpireArg::ExAt
            } else {
                ExpireArg::PxAt
            };
            if keepttl || persist || exp_kind.is_some_and(|k| k != kind) {
                return Err(CommandError::Syntax);
            }
            expire = Some((kind, args.next_bytes()?));
        } else {
            return Err(CommandError::Syntax);
        }
    }
    opts.expire = if keepttl {
        ExpireUpdate::Keep
    } else if persist {
        ExpireUpdate::Persist
    } else {
        ExpireUpdate::Default
    };
    Ok((opts, expire))
}

/// Converts an expire argument to an absolute Unix time in ms, with
/// Redis's checks (`getExpireMillisecondsOrReply`).
fn expire_ms(
    cmd: &'static str,
    kind: ExpireArg,
    raw: &[u8],
    now: u64,
) -> Result<u64, CommandError> {
    let v = roaringd_compat::number::parse_i64(raw).ok_or(CommandError::NotInteger)?;
    let bad = || CommandError::Store(StoreError::InvalidExpireTime(cmd));
    let seconds = matches!(kind, ExpireArg::Ex | ExpireArg::ExAt);
    if v <= 0 || (seconds && v > i64::MAX / 1000) {
        return Err(bad());
    }
    let mut ms = if seconds { v * 1000 } else { v };
    if matches!(kind, ExpireArg::Ex | ExpireArg::Px) {
        ms = ms.checked_add(now as i64).ok_or_else(bad)?;
    }
    if ms <= 0 {
        return Err(bad());
    }
    Ok(ms as u64)
}

fn set(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let value = args.next_bytes()?;
    let (mut opts, expire) = parse_string_opts(args, Grammar::Set)?;
    let db = ctx.db;
    let txn = ctx.txn()?;
    if let Some((kind, raw)) = expire {
        opts.expire = ExpireUpdate::At(expire_ms("set", kind, raw, txn.now_ms())?);
    }
    let out = txn.set(db, key, value.to_vec(), opts)?;
    Ok(if opts.get {
        Reply::bulk_or_null(out.old)
    } else if out.written {
        Reply::Ok
    } else {
        Reply::Null
    })
}

fn setnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let value = args.next_bytes()?;
    let db = ctx.db;
    let opts = SetOptions {
        cond: SetCond::Nx,
        ..SetOptions::default()
    };
    let out = ctx.txn()?.set(db, key, value.to_vec(), opts)?;
    Ok(Reply::Integer(i64::from(out.written)))
}

fn setex_common(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    cmd: &'static str,
    kind: ExpireArg,
) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let raw = args.next_bytes()?;
    let value = args.next_bytes()?;
    let db = ctx.db;
    let txn = ctx.txn()?;
    let at = expire_ms(cmd, kind, raw, txn.now_ms())?;
    let opts = SetOptions {
        expire: ExpireUpdate::At(at),
        ..SetOptions::default()
    };
    txn.set(db, key, value.to_vec(), opts)?;
    Ok(Reply::Ok)
}

fn setex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    setex_common(ctx, args, "setex", ExpireArg::Ex)
}

fn psetex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    setex_common(ctx, args, "psetex", ExpireArg::Px)
}

fn getset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let value = args.next_bytes()?;
    let db = ctx.db;
    let opts = SetOptions {
        get: true,
        ..SetOptions::default()
    };
    let out = ctx.txn()?.set(db, key, value.to_vec(), opts)?;
    Ok(Reply::bulk_or_null(out.old))
}

fn getdel(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::bulk_or_null(ctx.txn()?.getdel(db, key)?))
}

fn getex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let (opts, expire) = parse_string_opts(args, Grammar::GetEx)?;
    let db = ctx.db;
    let txn = ctx.txn()?;
    // Redis looks the key up (and type-checks it) before validating the time.
    if txn.get(db, key)?.is_none() {
        return Ok(Reply::Null);
    }
    let update = match expire {
        Some((kind, raw)) => ExpireUpdate::At(expire_ms("getex", kind, raw, txn.now_ms())?),
        None => opts.expire,
    };
    Ok(Reply::bulk_or_null(txn.getex(db, key, update)?))
}

fn mget(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let db = ctx.db;
    let txn = ctx.txn()?;
    let mut out = Vec::with_capacity(args.remaining());
    for key in args.rest() {
        // A key of another type reads as nil, not an error.
        let v = match txn.get(db, key) {
            Ok(v) => v,
            Err(StoreError::WrongType) => None,
            Err(e) => return Err(e.into()),
        };
        out.push(Reply::bulk_or_null(v));
    }
    Ok(Reply::Array(out))
}

fn pairs<'a>(args: &mut Args<'a>, cmd: &'static str) -> Result<Vec<Pair<'a>>, CommandError> {
    if !args.remaining().is_multiple_of(2) {
        return Err(CommandError::Arity(cmd.into()));
    }
    let mut out = Vec::with_capacity(args.remaining() / 2);
    while args.remaining() > 0 {
        out.push((args.next_bytes()?, args.next_bytes()?));
    }
    Ok(out)
}

fn mset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let kv = pairs(args, "mset")?;
    let db = ctx.db;
    let txn = ctx.txn()?;
    for (k, v) in kv {
        txn.set(db, k, v.to_vec(), SetOptions::default())?;
    }
    Ok(Reply::Ok)
}

fn msetnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let kv = pairs(args, "msetnx")?;
    let db = ctx.db;
    let txn = ctx.txn()?;
    for (k, _) in &kv {
        if txn.exists(db, k)? {
            return Ok(Reply::Integer(0));
        }
    }
    for (k, v) in kv {
        txn.set(db, k, v.to_vec(), SetOptions::default())?;
    }
    Ok(Reply::Integer(1))
}

fn incr_common(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> Result<Reply, CommandError> {
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.incr_by(db, key, delta)?))
}

fn incr(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    incr_common(ctx, key, 1)
}

fn decr(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    incr_common(ctx, key, -1)
}

fn incrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let delta = args.next_i64()?;
    incr_common(ctx, key, delta)
}

fn decrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let delta = args.next_i64()?;
    if delta == i64::MIN {
        return Err(CommandError::err("decrement would overflow"));
    }
    incr_common(ctx, key, -delta)
}

fn incrbyfloat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let incr = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Bulk(ctx.txn()?.incr_by_float(db, key, incr)?))
}

fn append(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let suffix = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.append(db, key, suffix)? as i64))
}

fn strlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.strlen(db, key)? as i64))
}

fn getrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let start = args.next_i64()?;
    let end = args.next_i64()?;
    let db = ctx.db;
    Ok(Reply::Bulk(ctx.txn()?.getrange(db, key, start, end)?))
}

fn setrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let offset = args.next_i64()?;
    let value = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(
        ctx.txn()?.setrange(db, key, offset, value)? as i64
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use roaringd_resp::Span;

    fn with_args<T>(words: &[&str], f: impl FnOnce(&mut Args<'_>) -> T) -> T {
        let buf = words.join(" ");
        let mut spans = Vec::new();
        let mut start = 0;
        for w in words {
            spans.push(Span {
                start,
                end: start + w.len(),
            });
            start += w.len() + 1;
        }
        let mut args = Args::new(buf.as_bytes(), &spans);
        f(&mut args)
    }

    #[test]
    fn set_options_follow_redis_grammar() {
        let ok = |w: &[&str]| with_args(w, |a| parse_string_opts(a, Grammar::Set).is_ok());
        assert!(ok(&["nx", "get", "ex", "10"]));
        assert!(ok(&["ex", "1", "ex", "2"]));
        assert!(ok(&["keepttl", "xx"]));
        assert!(!ok(&["nx", "xx"]));
        assert!(!ok(&["ex", "1", "px", "2"]));
        assert!(!ok(&["keepttl", "ex", "1"]));
        assert!(!ok(&["ex"]));
        assert!(!ok(&["persist"]));
        let getex = |w: &[&str]| with_args(w, |a| parse_string_opts(a, Grammar::GetEx).is_ok());
        assert!(getex(&["persist"]));
        assert!(getex(&["pxat", "5"]));
        assert!(!getex(&["nx"]));
        assert!(!getex(&["persist", "ex", "1"]));
    }

    #[test]
    fn expire_ms_checks_range_like_redis() {
        let now = 1_000;
        assert_eq!(expire_ms("set", ExpireArg::Ex, b"2", now).unwrap(), 3_000);
        assert_eq!(expire_ms("set", ExpireArg::PxAt, b"5", now).unwrap(), 5);
        assert!(expire_ms("set", ExpireArg::Ex, b"0", now).is_err());
        assert!(expire_ms("set", ExpireArg::Px, b"-1", now).is_err());
        assert!(expire_ms("set", ExpireArg::Ex, b"9223372036854775807", now).is_err());
        assert!(expire_ms("set", ExpireArg::Px, b"9223372036854775807", now).is_err());
        assert_eq!(
            expire_ms("set", ExpireArg::Ex, b"x", now).unwrap_err(),
            CommandError::NotInteger
        );
    }
}
