//! TairRoaring read commands (spec section 2): TR.GETBIT, TR.GETBITS,
//! TR.BITCOUNT, TR.BITPOS, TR.SCAN, TR.RANGE, TR.RANGEBITARRAY, TR.MIN,
//! TR.MAX, TR.RANK. Missing keys get the fixed replies of spec section 6.
//! The large replies (GETBITS, SCAN, RANGE, RANGEBITARRAY) are bounded by
//! `max-reply-bytes` (open point 8): past it the command replies
//! `ERR invalid arguments, maybe out of range or illegal` and never builds
//! the reply. A big RANGE or RANGEBITARRAY is streamed where the caller
//! allows it (`crate::stream`), sized exactly before its first byte.

use roaringd_resp::Args;

use crate::command_table::{AclCat, CommandSpec, Flag, KeySpec, TierUse};
use crate::commands::tr_args::{
    bit_of, check_reply, i64_of, int_reply_len, next_range, next_u32, rest_u32,
};
use crate::commands::work;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;
use crate::stream::{self, StreamedReply, STREAM_ABOVE_BYTES};

const R: &[Flag] = &[Flag::Readonly];
const RF: &[Flag] = &[Flag::Readonly, Flag::Fast];
const ACL: &[AclCat] = &[AclCat::Bitmap];
const K1: KeySpec = KeySpec::range(1, 1, 1);

const fn row(
    name: &'static str,
    arity: i32,
    handler: crate::command_table::Handler,
    flags: &'static [Flag],
    summary: &'static str,
) -> CommandSpec {
    CommandSpec::new(name, arity, handler)
        .flags(flags)
        .keys(K1)
        .acl(ACL)
        .doc(summary, "1.0.0", "bitmap")
        .key_flags(&["RO", "access"])
}

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    row(
        "tr.getbit",
        3,
        get_bit,
        RF,
        "Returns a bit of a Roaring bitmap.",
    )
    .tier(TierUse::KEEP_DIRTY),
    row(
        "tr.getbits",
        -3,
        get_bits,
        R,
        "Returns bits of a Roaring bitmap, in the order given.",
    )
    .work(work::per_arg::<{ work::OFFSET_US }>),
    row(
        "tr.bitcount",
        -2,
        bit_count,
        R,
        "Counts the set bits of a Roaring bitmap, optionally in an offset range.",
    )
    .tier(TierUse::KeepDirty { max_argc: 2 }),
    row(
        "tr.bitpos",
        -3,
        bit_pos,
        R,
        "Finds the count-th bit equal to a value.",
    ),
    row(
        "tr.scan",
        -3,
        scan,
        R,
        "Iterates the set bits of a Roaring bitmap from an offset.",
    ),
    row(
        "tr.range",
        4,
        range,
        R,
        "Returns the set bits in an inclusive offset range.",
    ),
    row(
        "tr.rangebitarray",
        4,
        range_bit_array,
        R,
        "Renders an offset range as a 0/1 string.",
    )
    .work(work::range_bits),
    row("tr.min", 2, min, RF, "Returns the smallest set bit, or -1.").tier(TierUse::KEEP_DIRTY),
    row("tr.max", 2, max, RF, "Returns the largest set bit, or -1.").tier(TierUse::KEEP_DIRTY),
    row(
        "tr.rank",
        3,
        rank,
        R,
        "Counts the set bits at or below an offset.",
    ),
];

fn int_array(vals: impl IntoIterator<Item = i64, IntoIter: ExactSizeIterator>) -> Reply {
    Reply::integers(vals)
}

/// TR.GETBIT key offset → 0/1; missing key → 0.
fn get_bit(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let off = next_u32(args)?;
    let db = ctx.db;
    Ok(Reply::Integer(i64::from(
        ctx.txn()?.tr_getbit(db, key, off)?,
    )))
}

/// TR.GETBITS key offset... → one 0/1 per offset in the order given;
/// missing key → empty array (spec 2.2).
fn get_bits(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let offs = rest_u32(args)?;
    let db = ctx.db;
    // A missing key answers an empty array whatever the request's size.
    if ctx.txn()?.tr_summary(db, key)?.is_none() {
        return Ok(Reply::Array(Vec::new()));
    }
    check_reply(ctx, offs.len() as u64 * 4)?;
    Ok(match ctx.txn()?.tr_getbits(db, key, &offs)? {
        Some(bits) => int_array(bits.into_iter().map(i64::from)),
        None => Reply::Array(Vec::new()),
    })
}

/// TR.BITCOUNT key [start end] → set bits overall (from `meta`) or in the
/// inclusive offset range. Exactly 2 or 4 arguments (spec 2.3: both bounds
/// or neither, arity error otherwise).
fn bit_count(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    match args.remaining() {
        0 => {
            let s = ctx.txn()?.tr_summary(db, key)?;
            Ok(Reply::Integer(s.map_or(0, |s| s.card) as i64))
        }
        2 => {
            let (start, end) = next_range(args)?;
            Ok(Reply::Integer(
                ctx.txn()?.tr_count_range(db, key, start, end)? as i64,
            ))
        }
        _ => Err(CommandError::Arity("tr.bitcount".into())),
    }
}

/// TR.BITPOS key value [count] → offset of the count-th bit equal to
/// `value` (negative count: counting down from the highest set bit), −1
/// when none (open point 5: a count beyond the candidates gives −1). value
/// not 0/1 or count 0 → `OutOfRange`; a non-numeric count → `NotU32`.
fn bit_pos(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let value = bit_of(args.next_bytes()?)?;
    let count = match args.remaining() {
        0 => 1,
        1 => i64_of(args.next_bytes()?)?,
        _ => return Err(CommandError::Arity("tr.bitpos".into())),
    };
    if count == 0 {
        return Err(CommandError::OutOfRange);
    }
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.tr_bitpos(db, key, value, count)?))
}

/// TR.SCAN key start_offset [COUNT count] → `[cursor, [offsets]]`: up to
/// `count` (default 10) set bits ≥ start; cursor = the next set bit, or 0
/// when done (spec 2.5). Missing key → `[0, []]`. COUNT ≤ 0 →
/// `OutOfRange`; another keyword or a missing value → syntax error.
fn scan(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let start = next_u32(args)?;
    let mut count: i64 = 10;
    while args.remaining() > 0 {
        if args.eat_keyword("COUNT") && args.remaining() > 0 {
            count = i64_of(args.next_bytes()?)?;
            if count <= 0 {
                return Err(CommandError::OutOfRange);
            }
        } else {
            return Err(CommandError::Syntax);
        }
    }
    // Refuse before collecting anything when the values the page would
    // hold (4 bytes each at least) already pass the ceiling.
    let max = ctx.max_reply_bytes();
    let db = ctx.db;
    let txn = ctx.txn()?;
    let found_max = txn.tr_count_range(db, key, start, u32::MAX)?;
    if found_max.min(count as u64).saturating_mul(4) > max {
        return Err(CommandError::OutOfRange);
    }
    let count = (count as u64).min(found_max.max(1)) as usize;
    let found = crate::dispatch::run_blocking_if(count as u64 > LONG_REPLY_VALUES, || {
        txn.tr_scan(db, key, start, count)
    })?;
    let Some((cursor, vals)) = found else {
        return Ok(Reply::Array(vec![
            Reply::Integer(0),
            Reply::Array(Vec::new()),
        ]));
    };
    let bytes: u64 = vals.iter().map(|&v| int_reply_len(u64::from(v))).sum();
    check_reply(ctx, bytes + 32)?;
    Ok(Reply::Array(vec![
        Reply::Integer(i64::from(cursor)),
        int_array(vals.into_iter().map(i64::from)),
    ]))
}

/// Values of a TR.RANGE or TR.SCAN reply above which it is collected off
/// the connection worker ([`crate::dispatch::run_blocking_if`]): about
/// 2-3 ms of work at ~0.13 us a value.
const LONG_REPLY_VALUES: u64 = 20_000;

/// TR.RANGE key start end → the set bits in `[start, end]` ascending;
/// missing key → empty array; start > end → `OutOfRange` (spec 2.6).
fn range(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let (start, end) = next_range(args)?;
    let max = ctx.max_reply_bytes();
    let db = ctx.db;
    // Refuse before encoding anything when even the smallest encoding
    // (4 bytes per value) would pass the ceiling.
    let n = ctx.txn()?.tr_count_range(db, key, start, end)?;
    if n.saturating_mul(4) > max {
        return Err(CommandError::OutOfRange);
    }
    if ctx.may_stream() && n.saturating_mul(4) > STREAM_ABOVE_BYTES {
        // Exact size first: refused whole, or streamed from the snapshot
        // of the command's commit (`crate::stream`).
        let txn = ctx.txn()?;
        let bytes = crate::dispatch::run_blocking_if(n > LONG_REPLY_VALUES, || {
            stream::int_values_bytes(start, end, |a, b| txn.tr_count_range(db, key, a, b))
        })? + stream::header_len(n);
        if bytes > max {
            return Err(CommandError::OutOfRange);
        }
        let read = txn
            .read_after_commit(db, key)?
            .ok_or_else(|| CommandError::err("internal error: TR.RANGE key vanished"))?;
        return Ok(Reply::Stream(StreamedReply::new(stream::RangeValues::new(
            read, start, end, n, bytes,
        ))));
    }
    let txn = ctx.txn()?;
    crate::dispatch::run_blocking_if(n > LONG_REPLY_VALUES, || {
        // The values are encoded as they stream from the containers: the
        // reply's bytes are the only allocation, checked as they grow.
        // Sized for the largest value's encoding: no reallocation (each
        // one copied the reply so far).
        let cap = n.saturating_mul(int_reply_len(u64::from(end))).min(max) + 32;
        let mut buf = Vec::with_capacity(cap as usize);
        let mut enc = roaringd_resp::ReplyEncoder::new(&mut buf, roaringd_resp::Protocol::Resp2);
        enc.array_header(n as usize);
        let (mut seen, mut over) = (0u64, false);
        txn.tr_range_each(db, key, start, end, |v| {
            enc.integer(i64::from(v));
            seen += 1;
            over = enc.len() as u64 > max;
            !over && seen <= n
        })?;
        if over {
            return Err(CommandError::OutOfRange);
        }
        if seen != n {
            // The count and the values come from the same locked key.
            return Err(CommandError::err("internal error: TR.RANGE count changed"));
        }
        Ok(Reply::Encoded(buf))
    })
}

/// TR.RANGEBITARRAY key start end → `end − start + 1` characters of 0/1;
/// missing key → nil (spec 2.7). A width past the ceiling → `OutOfRange`.
fn range_bit_array(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let (start, end) = next_range(args)?;
    let db = ctx.db;
    // A missing key answers nil whatever the width.
    if ctx.txn()?.tr_summary(db, key)?.is_none() {
        return Ok(Reply::Null);
    }
    let width = u64::from(end) - u64::from(start) + 1;
    check_reply(ctx, width + 16)?;
    if ctx.may_stream() && width > STREAM_ABOVE_BYTES {
        let read = ctx
            .txn()?
            .read_after_commit(db, key)?
            .ok_or_else(|| CommandError::err("internal error: TR.RANGEBITARRAY key vanished"))?;
        return Ok(Reply::Stream(StreamedReply::new(stream::RangeBits::new(
            read, start, end,
        ))));
    }
    Ok(Reply::bulk_or_null(
        ctx.txn()?.tr_range_bits(db, key, start, end)?,
    ))
}

/// TR.MIN key → smallest set bit; −1 when missing or empty (from `meta`).
fn min(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    extreme(ctx, args, false)
}

/// TR.MAX key → largest set bit; −1 when missing or empty (from `meta`).
fn max(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    extreme(ctx, args, true)
}

fn extreme(ctx: &mut Ctx<'_>, args: &mut Args<'_>, top: bool) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    let v = match ctx.txn()?.tr_summary(db, key)? {
        Some(s) if s.card > 0 => i64::from(if top { s.max } else { s.min }),
        _ => -1,
    };
    Ok(Reply::Integer(v))
}

/// TR.RANK key offset → set bits in `[0, offset]`; missing key → −1
/// (spec 2.9, open point 16: offset validated as unsigned 32-bit).
fn rank(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let off = next_u32(args)?;
    let db = ctx.db;
    Ok(Reply::Integer(
        ctx.txn()?.tr_rank(db, key, off)?.map_or(-1, |n| n as i64),
    ))
}
