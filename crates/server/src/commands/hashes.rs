//! Hash commands: HSET HMSET HSETNX HGET HMGET HGETALL HDEL HEXISTS HLEN
//! HKEYS HVALS HINCRBY HINCRBYFLOAT HSTRLEN HSCAN HRANDFIELD. Parsing and
//! replies follow Redis 7.0 (RESP3 maps where Redis sends them).

use roaringd_compat::longdouble;
use roaringd_resp::{Args, Protocol};
use roaringd_store::Kind;

use crate::command_table::{AclCat, CommandSpec, Flag, KeySpec};
use crate::commands::keyspace::{scan_key_prologue, scan_reply};
use crate::commands::sets::parse_rand_count;
use crate::commands::work;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::{encoded, repeated_draws, Reply};

const R: &[Flag] = &[Flag::Readonly];
const RF: &[Flag] = &[Flag::Readonly, Flag::Fast];
const WF: &[Flag] = &[Flag::Write, Flag::Fast];
const WDF: &[Flag] = &[Flag::Write, Flag::Denyoom, Flag::Fast];
const ACL: &[AclCat] = &[AclCat::Hash];
const K1: KeySpec = KeySpec::range(1, 1, 1);

const fn row(
    name: &'static str,
    arity: i32,
    handler: crate::command_table::Handler,
    flags: &'static [Flag],
    summary: &'static str,
    since: &'static str,
) -> CommandSpec {
    CommandSpec::new(name, arity, handler)
        .flags(flags)
        .keys(K1)
        .acl(ACL)
        .doc(summary, since, "hash")
}

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    row("hset", -4, hset, WDF, "Creates or modifies the value of a field in a hash.", "2.0.0").work(work::per_element)
        .key_flags(&["RW", "update"]),
    row("hmset", -4, hmset, WDF, "Sets the values of multiple fields.", "2.0.0").work(work::per_element)
        .key_flags(&["RW", "update"]),
    row("hsetnx", 4, hsetnx, WDF, "Sets the value of a field in a hash only when the field doesn't exist.", "2.0.0")
        .key_flags(&["RW", "insert"]),
    row("hget", 3, hget, RF, "Returns the value of a field in a hash.", "2.0.0").seeks(2)
        .key_flags(&["RO", "access"]),
    row("hmget", -3, hmget, RF, "Returns the values of all fields in a hash.", "2.0.0").work(work::per_element)
        .key_flags(&["RO", "access"]),
    row("hgetall", 2, hgetall, R, "Returns all fields and values in a hash.", "2.0.0").data_work(work::first_key_entries)
        .key_flags(&["RO", "access"]),
    row("hdel", -3, hdel, WF, "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", "2.0.0").work(work::per_element)
        .key_flags(&["RW", "delete"]),
    row("hexists", 3, hexists, RF, "Determines whether a field exists in a hash.", "2.0.0").seeks(2)
        .key_flags(&["RO"]),
    row("hlen", 2, hlen, RF, "Returns the number of fields in a hash.", "2.0.0")
        .key_flags(&["RO"]),
    row("hkeys", 2, hkeys, R, "Returns all fields in a hash.", "2.0.0").data_work(work::first_key_entries)
        .key_flags(&["RO", "access"]),
    row("hvals", 2, hvals, R, "Returns all values in a hash.", "2.0.0").data_work(work::first_key_entries)
        .key_flags(&["RO", "access"]),
    row("hincrby", 4, hincrby, WDF, "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", "2.0.0")
        .key_flags(&["RW", "access", "update"]),
    row("hincrbyfloat", 4, hincrbyfloat, WDF, "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", "2.6.0")
        .key_flags(&["RW", "access", "update"]),
    row("hstrlen", 3, hstrlen, RF, "Returns the length of the value of a field.", "3.2.0").seeks(2)
        .key_flags(&["RO"]),
    row("hscan", -3, hscan, R, "Iterates over fields and values of a hash.", "2.8.0").work(work::count_option)
        .key_flags(&["RO", "access"]),
    row("hrandfield", -2, hrandfield, R, "Returns one or more random fields from a hash.", "6.2.0")
        .key_flags(&["RO", "access"]),
];

type Pair<'a> = (&'a [u8], &'a [u8]);

fn field_pairs<'a>(args: &mut Args<'a>, cmd: &'static str) -> Result<Vec<Pair<'a>>, CommandError> {
    if args.remaining() == 0 || !args.remaining().is_multiple_of(2) {
        return Err(CommandError::Arity(cmd.into()));
    }
    let mut out = Vec::with_capacity(args.remaining() / 2);
    while args.remaining() > 0 {
        out.push((args.next_bytes()?, args.next_bytes()?));
    }
    Ok(out)
}

fn hset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let pairs = field_pairs(args, "hset")?;
    let db = ctx.db;
    Ok(Reply::Integer(
        ctx.txn()?.hset(db, key, &pairs, false)? as i64
    ))
}

fn hmset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let pairs = field_pairs(args, "hmset")?;
    let db = ctx.db;
    ctx.txn()?.hset(db, key, &pairs, false)?;
    Ok(Reply::Ok)
}

fn hsetnx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let field = args.next_bytes()?;
    let value = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(
        ctx.txn()?.hset(db, key, &[(field, value)], true)? as i64,
    ))
}

fn hget(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let field = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::bulk_or_null(ctx.txn()?.hget(db, key, field)?))
}

fn hmget(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let fields: Vec<&[u8]> = args.rest().collect();
    let db = ctx.db;
    let vals = ctx.txn()?.hmget(db, key, &fields)?;
    Ok(Reply::Array(
        vals.into_iter().map(Reply::bulk_or_null).collect(),
    ))
}

fn hgetall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    if let Some(r) = crate::stream::elements_reply(ctx, key, crate::stream::Shape::Pairs)? {
        return Ok(r);
    }
    let pairs = ctx.txn()?.hgetall(db, key)?;
    Ok(Reply::Map(
        pairs
            .into_iter()
            .map(|(f, v)| (Reply::Bulk(f), Reply::Bulk(v)))
            .collect(),
    ))
}

fn hdel(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let fields: Vec<&[u8]> = args.rest().collect();
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.hdel(db, key, &fields)? as i64))
}

fn hexists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let field = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(i64::from(
        ctx.txn()?.hexists(db, key, field)?,
    )))
}

fn hlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.hlen(db, key)? as i64))
}

fn hkeys(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    if let Some(r) = crate::stream::elements_reply(ctx, key, crate::stream::Shape::Fields)? {
        return Ok(r);
    }
    let pairs = ctx.txn()?.hgetall(db, key)?;
    Ok(Reply::bulks(pairs.into_iter().map(|(f, _)| f)))
}

fn hvals(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    if let Some(r) = crate::stream::elements_reply(ctx, key, crate::stream::Shape::Values)? {
        return Ok(r);
    }
    let pairs = ctx.txn()?.hgetall(db, key)?;
    Ok(Reply::bulks(pairs.into_iter().map(|(_, v)| v)))
}

fn hincrby(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let field = args.next_bytes()?;
    let delta = args.next_i64()?;
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.hincrby(db, key, field, delta)?))
}

fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let field = args.next_bytes()?;
    let incr = args.next_bytes()?;
    match longdouble::parse(incr) {
        None => return Err(CommandError::NotFloat),
        Some(longdouble::Parsed::Inf(_)) => {
            return Err(CommandError::err("value is NaN or Infinity"))
        }
        Some(longdouble::Parsed::Finite(_)) => {}
    }
    let db = ctx.db;
    Ok(Reply::Bulk(ctx.txn()?.hincrbyfloat(db, key, field, incr)?))
}

fn hstrlen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let field = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.hstrlen(db, key, field)? as i64))
}

fn hscan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let (key, cursor, o) = match scan_key_prologue(ctx, args, Kind::Hash)? {
        Ok(parts) => parts,
        Err(empty) => return Ok(empty),
    };
    let db = ctx.db;
    let (next, pairs) = ctx.txn()?.hscan(db, key, cursor, o.pattern, o.count)?;
    let mut items = Vec::with_capacity(pairs.len() * 2);
    for (f, v) in pairs {
        items.push(Reply::Bulk(f));
        items.push(Reply::Bulk(v));
    }
    Ok(scan_reply(next, items))
}

fn hrandfield(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    if args.remaining() == 0 {
        let mut v = ctx.txn()?.hrandfield(db, key, None)?;
        return Ok(Reply::bulk_or_null(v.pop().map(|(f, _)| f)));
    }
    let n = parse_rand_count(args)?;
    let with_values = match args.remaining() {
        0 => false,
        1 if args.eat_keyword("withvalues") => true,
        _ => return Err(CommandError::Syntax),
    };
    // Redis 7.0 bounds a WITHVALUES count to ±LONG_MAX/2 (the reply has two
    // elements per field), positive and negative alike.
    if with_values && n.unsigned_abs() > (i64::MAX / 2) as u64 {
        return Err(CommandError::err("value is out of range"));
    }
    let proto = ctx.client.protocol;
    let resp3 = proto == Protocol::Resp3;
    if n < 0 {
        // Draws with repetition from a distinct sample of up to -n fields.
        let max = ctx.max_reply_bytes();
        let pool: Vec<Vec<u8>> = ctx
            .txn()?
            .hrandfield(db, key, Some(n.saturating_neg()))?
            .into_iter()
            .map(|(f, v)| {
                if !with_values {
                    encoded(&Reply::Bulk(f), proto)
                } else if resp3 {
                    encoded(&Reply::Array(vec![Reply::Bulk(f), Reply::Bulk(v)]), proto)
                } else {
                    let mut pair = encoded(&Reply::Bulk(f), proto);
                    pair.extend(encoded(&Reply::Bulk(v), proto));
                    pair
                }
            })
            .collect();
        let per_draw = if with_values && !resp3 { 2 } else { 1 };
        return repeated_draws(&pool, per_draw, n.unsigned_abs(), max);
    }
    let picked = ctx.txn()?.hrandfield(db, key, Some(n))?;
    Ok(if !with_values {
        Reply::bulks(picked.into_iter().map(|(f, _)| f))
    } else if resp3 {
        Reply::Array(
            picked
                .into_iter()
                .map(|(f, v)| Reply::Array(vec![Reply::Bulk(f), Reply::Bulk(v)]))
                .collect(),
        )
    } else {
        let mut flat = Vec::with_capacity(picked.len() * 2);
        for (f, v) in picked {
            flat.push(Reply::Bulk(f));
            flat.push(Reply::Bulk(v));
        }
        Reply::Array(flat)
    })
}
