//! Set commands: SADD SREM SISMEMBER SMISMEMBER SCARD SMEMBERS SSCAN SPOP
//! SRANDMEMBER SMOVE SINTER SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE
//! SINTERCARD. Parsing and replies follow Redis 7.0 (RESP3 set replies
//! where Redis sends them).

use roaringd_resp::Args;
use roaringd_store::types::sets::SetOp;
use roaringd_store::Kind;

use crate::command_table::{AclCat, CommandSpec, Family, Flag, KeySpec, KeySpecDoc};
use crate::commands::keyspace::{scan_key_prologue, scan_reply};
use crate::commands::work;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::{encoded, repeated_draws, Reply};

const R: &[Flag] = &[Flag::Readonly];
const RF: &[Flag] = &[Flag::Readonly, Flag::Fast];
const WF: &[Flag] = &[Flag::Write, Flag::Fast];
const WD: &[Flag] = &[Flag::Write, Flag::Denyoom];
const WDF: &[Flag] = &[Flag::Write, Flag::Denyoom, Flag::Fast];
const ACL: &[AclCat] = &[AclCat::Set];
const K1: KeySpec = KeySpec::range(1, 1, 1);
const KALL: KeySpec = KeySpec::range(1, -1, 1);

const FAMILY: Family = Family {
    acl: ACL,
    group: "set",
};

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    FAMILY.row("sadd", -3, sadd, WDF, K1, "Adds one or more members to a set. Creates the key if it doesn't exist.", "1.0.0").work(work::per_element)
        .key_flags(&["RW", "insert"]),
    FAMILY.row("srem", -3, srem, WF, K1, "Removes one or more members from a set. Deletes the set if the last member was removed.", "1.0.0").work(work::per_element)
        .key_flags(&["RW", "delete"]),
    FAMILY.row("sismember", 3, sismember, RF, K1, "Determines whether a member belongs to a set.", "1.0.0").seeks(2)
        .key_flags(&["RO"]),
    FAMILY.row("smismember", -3, smismember, RF, K1, "Determines whether multiple members belong to a set.", "6.2.0").work(work::per_element)
        .key_flags(&["RO", "access"]),
    FAMILY.row("scard", 2, scard, RF, K1, "Returns the number of members in a set.", "1.0.0")
        .key_flags(&["RO"]),
    FAMILY.row("smembers", 2, smembers, R, K1, "Returns all members of a set.", "1.0.0").data_work(work::first_key_entries)
        .key_flags(&["RO", "access"]),
    FAMILY.row("sscan", -3, sscan, R, K1, "Iterates over members of a set.", "2.8.0").work(work::count_option)
        .key_flags(&["RO", "access"]),
    FAMILY.row("spop", -2, spop, WF, K1, "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", "1.0.0")
        .key_flags(&["RW", "access", "delete"]),
    FAMILY.row("srandmember", -2, srandmember, R, K1, "Get one or multiple random members from a set", "1.0.0")
        .key_flags(&["RO", "access"]),
    FAMILY.row("smove", 4, smove, WF, KeySpec::range(1, 2, 1), "Moves a member from one set to another.", "1.0.0")
        .key_specs(&[
            KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1),
            KeySpecDoc::range(&["RW", "insert"], 2, 0, 1),
        ]),
    FAMILY.row("sinter", -2, sinter, R, KALL, "Returns the intersect of multiple sets.", "1.0.0").data_work(work::first_key_entries)
        .key_flags(&["RO", "access"]),
    FAMILY.row("sinterstore", -3, sinterstore, WD, KALL, "Stores the intersect of multiple sets in a key.", "1.0.0").data_work(work::first_key_entries)
        .key_specs(&[
            KeySpecDoc::range(&["RW", "update"], 1, 0, 1),
            KeySpecDoc::range(&["RO", "access"], 2, -1, 1),
        ]),
    FAMILY.row("sunion", -2, sunion, R, KALL, "Returns the union of multiple sets.", "1.0.0").data_work(work::first_key_entries)
        .key_flags(&["RO", "access"]),
    FAMILY.row("sunionstore", -3, sunionstore, WD, KALL, "Stores the union of multiple sets in a key.", "1.0.0").data_work(work::first_key_entries)
        .key_specs(&[
            KeySpecDoc::range(&["OW", "update"], 1, 0, 1),
            KeySpecDoc::range(&["RO", "access"], 2, -1, 1),
        ]),
    FAMILY.row("sdiff", -2, sdiff, R, KALL, "Returns the difference of multiple sets.", "1.0.0").data_work(work::first_key_entries)
        .key_flags(&["RO", "access"]),
    FAMILY.row("sdiffstore", -3, sdiffstore, WD, KALL, "Stores the difference of multiple sets in a key.", "1.0.0").data_work(work::first_key_entries)
        .key_specs(&[
            KeySpecDoc::range(&["OW", "update"], 1, 0, 1),
            KeySpecDoc::range(&["RO", "access"], 2, -1, 1),
        ]),
    FAMILY.row("sintercard", -3, sintercard, R, KeySpec::NumKeys { numkeys: 1 }, "Returns the number of members of the intersect of multiple sets.", "7.0.0")
        .key_flags(&["RO", "access"]),
];

fn set_reply(members: Vec<Vec<u8>>) -> Reply {
    Reply::Set(members.into_iter().map(Reply::Bulk).collect())
}

fn sadd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let members: Vec<&[u8]> = args.rest().collect();
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.sadd(db, key, &members)? as i64))
}

fn srem(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let members: Vec<&[u8]> = args.rest().collect();
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.srem(db, key, &members)? as i64))
}

fn sismember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let member = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(i64::from(
        ctx.txn()?.sismember(db, key, member)?,
    )))
}

fn smismember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let members: Vec<&[u8]> = args.rest().collect();
    let db = ctx.db;
    let flags = ctx.txn()?.smismember(db, key, &members)?;
    Ok(Reply::Array(
        flags
            .into_iter()
            .map(|f| Reply::Integer(i64::from(f)))
            .collect(),
    ))
}

fn scard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.scard(db, key)? as i64))
}

fn smembers(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    if let Some(r) = crate::stream::elements_reply(ctx, key, crate::stream::Shape::Members)? {
        return Ok(r);
    }
    Ok(set_reply(ctx.txn()?.smembers(db, key)?))
}

fn sscan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let (key, cursor, o) = match scan_key_prologue(ctx, args, Kind::Set)? {
        Ok(parts) => parts,
        Err(empty) => return Ok(empty),
    };
    let db = ctx.db;
    let (next, members) = ctx.txn()?.sscan(db, key, cursor, o.pattern, o.count)?;
    Ok(scan_reply(
        next,
        members.into_iter().map(Reply::Bulk).collect(),
    ))
}

fn spop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    match args.remaining() {
        0 => {
            let mut v = ctx.txn()?.spop(db, key, None)?;
            Ok(Reply::bulk_or_null(v.pop()))
        }
        1 => {
            // Redis: one message for malformed and negative counts.
            let n = match roaringd_compat::number::parse_i64(args.next_bytes()?) {
                Some(n) if n >= 0 => n,
                _ => return Err(CommandError::err("value is out of range, must be positive")),
            };
            let txn = ctx.txn()?;
            if n == 0 {
                txn.scard(db, key)?; // type check only
                return Ok(Reply::Set(Vec::new()));
            }
            Ok(set_reply(txn.spop(db, key, Some(n as u64))?))
        }
        _ => Err(CommandError::Syntax),
    }
}

/// Parses the count of SRANDMEMBER / HRANDFIELD (`-LONG_MAX..=LONG_MAX`).
pub(crate) fn parse_rand_count(args: &mut Args<'_>) -> Result<i64, CommandError> {
    let n = args.next_i64()?;
    if n == i64::MIN {
        return Err(CommandError::err(
            "value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    Ok(n)
}

fn srandmember(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    match args.remaining() {
        0 => {
            let mut v = ctx.txn()?.srandmember(db, key, None)?;
            Ok(Reply::bulk_or_null(v.pop()))
        }
        1 => {
            let n = parse_rand_count(args)?;
            if n >= 0 {
                return Ok(Reply::bulks(ctx.txn()?.srandmember(db, key, Some(n))?));
            }
            // Draws with repetition from a distinct sample of up to -n.
            let max = ctx.max_reply_bytes();
            let proto = ctx.client.protocol;
            let pool: Vec<Vec<u8>> = ctx
                .txn()?
                .srandmember(db, key, Some(n.saturating_neg()))?
                .into_iter()
                .map(|m| encoded(&Reply::Bulk(m), proto))
                .collect();
            repeated_draws(&pool, 1, n.unsigned_abs(), max)
        }
        _ => Err(CommandError::Syntax),
    }
}

fn smove(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let src = args.next_bytes()?;
    let dst = args.next_bytes()?;
    let member = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(i64::from(
        ctx.txn()?.smove(db, src, dst, member)?,
    )))
}

fn combine(ctx: &mut Ctx<'_>, args: &mut Args<'_>, op: SetOp) -> Result<Reply, CommandError> {
    let keys: Vec<&[u8]> = args.rest().collect();
    let db = ctx.db;
    Ok(set_reply(ctx.txn()?.set_combine(db, op, &keys)?))
}

fn combine_store(ctx: &mut Ctx<'_>, args: &mut Args<'_>, op: SetOp) -> Result<Reply, CommandError> {
    let dst = args.next_bytes()?;
    let keys: Vec<&[u8]> = args.rest().collect();
    let db = ctx.db;
    Ok(Reply::Integer(
        ctx.txn()?.set_combine_store(db, op, dst, &keys)? as i64,
    ))
}

fn sinter(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    combine(ctx, args, SetOp::Inter)
}

fn sunion(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    combine(ctx, args, SetOp::Union)
}

fn sdiff(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    combine(ctx, args, SetOp::Diff)
}

fn sinterstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    combine_store(ctx, args, SetOp::Inter)
}

fn sunionstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    combine_store(ctx, args, SetOp::Union)
}

fn sdiffstore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    combine_store(ctx, args, SetOp::Diff)
}

fn sintercard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let numkeys = match roaringd_compat::number::parse_i64(args.next_bytes()?) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(CommandError::err("numkeys should be greater than 0")),
    };
    if numkeys > args.remaining() {
        return Err(CommandError::err(
            "Number of keys can't be greater than number of args",
        ));
    }
    let keys: Vec<&[u8]> = (0..numkeys)
        .map(|_| args.next_bytes())
        .collect::<Result<_, _>>()?;
    let mut limit = 0u64;
    while args.remaining() > 0 {
        if args.remaining() >= 2 && args.eat_keyword("limit") {
            limit = match roaringd_compat::number::parse_i64(args.next_bytes()?) {
                Some(n) if n >= 0 => n as u64,
                _ => return Err(CommandError::err("LIMIT can't be negative")),
            };
        } else {
            return Err(CommandError::Syntax);
        }
    }
    let db = ctx.db;
    Ok(Reply::Integer(
        ctx.txn()?.sintercard(db, &keys, limit)? as i64
    ))
}
