//! TairRoaring write commands (spec section 1): TR.SETBIT, TR.SETBITS,
//! TR.CLEARBITS, TR.SETRANGE, TR.APPENDBITARRAY, TR.FLIPRANGE and the legacy
//! TR.APPENDINTARRAY, TR.SETINTARRAY, TR.SETBITARRAY (section 1.7-1.9).
//! Each handler validates every argument before touching the store, so a
//! rejected request writes nothing.

use roaringd_bitmap::{Bitmap, ContainerBuf};
use roaringd_resp::Args;
use roaringd_store::types::bitmap::RangeOp;

use crate::command_table::{AclCat, CommandSpec, Flag, KeySpec, TierUse};
use crate::commands::tr_args::{bit_of, check_bit_string, i64_of, next_range, next_u32, rest_u32};
use crate::commands::work;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;

const WD: &[Flag] = &[Flag::Write, Flag::Denyoom];
const WDF: &[Flag] = &[Flag::Write, Flag::Denyoom, Flag::Fast];
const WF: &[Flag] = &[Flag::Write, Flag::Fast];
const ACL: &[AclCat] = &[AclCat::Bitmap];
const K1: KeySpec = KeySpec::range(1, 1, 1);

/// Edits of listed bits the write-back tier may take: at most as many
/// offsets as one of its log records carries (name and key besides).
const LISTED_BITS: TierUse = TierUse::KeepDirty {
    max_argc: 2 + roaringd_store::types::bitmap::oplog::MAX_BITS,
};

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
}

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    row(
        "tr.setbit",
        4,
        set_bit,
        WDF,
        "Sets a bit of a Roaring bitmap and returns its previous value.",
    )
    .tier(TierUse::KEEP_DIRTY)
    .key_flags(&["RW", "access", "update"]),
    row(
        "tr.setbits",
        -3,
        set_bits,
        WD,
        "Sets bits of a Roaring bitmap; returns its cardinality.",
    )
    .work(work::per_arg::<{ work::OFFSET_US }>)
    .tier(LISTED_BITS)
    .key_flags(&["RW", "insert"]),
    row(
        "tr.clearbits",
        -3,
        clear_bits,
        WF,
        "Clears bits of a Roaring bitmap; returns how many changed.",
    )
    .work(work::per_arg::<{ work::OFFSET_US }>)
    .tier(LISTED_BITS)
    .key_flags(&["RW", "delete"]),
    row(
        "tr.setrange",
        4,
        set_range,
        WD,
        "Sets every bit of an inclusive range; returns the cardinality.",
    )
    .work(work::range_containers)
    .tier(TierUse::KEEP_DIRTY)
    .key_flags(&["RW", "insert"]),
    row(
        "tr.appendbitarray",
        4,
        append_bit_array,
        WD,
        "Writes a 0/1 string after an offset; returns the cardinality.",
    )
    .work(work::last_arg_bytes)
    .key_flags(&["RW", "update"]),
    row(
        "tr.fliprange",
        4,
        flip_range,
        WD,
        "Inverts every bit of an inclusive range; returns the cardinality.",
    )
    .work(work::range_containers)
    .tier(TierUse::KEEP_DIRTY)
    .key_flags(&["RW", "update"]),
    row(
        "tr.appendintarray",
        -3,
        append_int_array,
        WD,
        "Sets bits of a Roaring bitmap (legacy).",
    )
    .work(work::per_arg::<{ work::OFFSET_US }>)
    .tier(LISTED_BITS)
    .key_flags(&["RW", "insert"]),
    row(
        "tr.setintarray",
        -3,
        set_int_array,
        WD,
        "Replaces a Roaring bitmap by the given offsets (legacy).",
    )
    .work(work::per_arg::<{ work::OFFSET_US }>)
    .key_flags(&["OW", "update"]),
    row(
        "tr.setbitarray",
        3,
        set_bit_array,
        WD,
        "Replaces a Roaring bitmap by a 0/1 string (legacy).",
    )
    .work(work::last_arg_bytes)
    .key_flags(&["OW", "update"]),
];

/// TR.SETBIT key offset value → previous bit. Value 0 on a missing key
/// creates an empty bitmap (open point 6).
fn set_bit(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let off = next_u32(args)?;
    let value = bit_of(args.next_bytes()?)?;
    let db = ctx.db;
    let prev = ctx.txn()?.tr_setbit(db, key, off, value)?;
    Ok(Reply::Integer(i64::from(prev)))
}

/// TR.SETBITS key offset... → cardinality after (spec 1.2).
fn set_bits(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let offs = rest_u32(args)?;
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.tr_setbits(db, key, &offs)? as i64))
}

/// TR.CLEARBITS key offset... → bits changed from 1 to 0; a missing key
/// is not created (spec 1.3).
fn clear_bits(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let offs = rest_u32(args)?;
    let db = ctx.db;
    Ok(Reply::Integer(
        ctx.txn()?.tr_clearbits(db, key, &offs)? as i64
    ))
}

/// TR.SETRANGE key start end → cardinality after (open point 1).
fn set_range(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    range_write(ctx, args, RangeOp::Set)
}

/// TR.FLIPRANGE key start end → cardinality after (open point 1).
fn flip_range(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    range_write(ctx, args, RangeOp::Flip)
}

fn range_write(ctx: &mut Ctx<'_>, args: &mut Args<'_>, op: RangeOp) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let (start, end) = next_range(args)?;
    let db = ctx.db;
    Ok(Reply::Integer(
        ctx.txn()?.tr_range_write(db, key, start, end, op)? as i64,
    ))
}

/// TR.APPENDBITARRAY key offset bitarray → cardinality after (open point
/// 1). `offset` is exclusive and may be −1; the last bit written,
/// `offset + len`, must be ≤ 2^32 − 1. Offset below −1 or not a number →
/// `NotU32`; empty or non-0/1 string, or a window past 2^32 − 1 →
/// `OutOfRange` (spec 1.5).
fn append_bit_array(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let offset = i64_of(args.next_bytes()?)?;
    if !(-1..=i64::from(u32::MAX)).contains(&offset) {
        return Err(CommandError::NotU32);
    }
    let bits = args.next_bytes()?;
    if bits.is_empty() {
        return Err(CommandError::OutOfRange);
    }
    check_bit_string(bits)?;
    let last = offset + bits.len() as i64;
    if last > i64::from(u32::MAX) {
        return Err(CommandError::OutOfRange);
    }
    let first = (offset + 1) as u32;
    let db = ctx.db;
    Ok(Reply::Integer(
        ctx.txn()?.tr_write_bits(db, key, first, bits)? as i64,
    ))
}

/// TR.APPENDINTARRAY key offset... → `+OK` (legacy TR.SETBITS, spec 1.7).
fn append_int_array(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let offs = rest_u32(args)?;
    let db = ctx.db;
    ctx.txn()?.tr_setbits(db, key, &offs)?;
    Ok(Reply::Ok)
}

/// TR.SETINTARRAY key offset... → `+OK`: the bitmap becomes exactly the
/// given offsets; the new value has no TTL (spec 1.8, open point 14).
fn set_int_array(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let offs = rest_u32(args)?;
    let db = ctx.db;
    ctx.txn()?
        .tr_replace(db, key, &Bitmap::from_unsorted(&offs))?;
    Ok(Reply::Ok)
}

/// TR.SETBITARRAY key bits → `+OK`: bit i is set exactly when character i
/// is `1`. Characters other than 0/1 are rejected with `OutOfRange` (open
/// point 11's recommendation); the new value has no TTL (open point 14).
fn set_bit_array(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let bits = args.next_bytes()?;
    check_bit_string(bits)?;
    if bits.len() as u64 > u64::from(u32::MAX) + 1 {
        return Err(CommandError::OutOfRange);
    }
    let b = bitmap_of_bit_string(bits);
    let db = ctx.db;
    ctx.txn()?.tr_replace(db, key, &b)?;
    Ok(Reply::Ok)
}

/// The bitmap whose bit i is set when `bits[i] == b'1'` (validated input,
/// at most 2^32 characters). Built block by block, so memory is the result
/// plus one block's values, whatever the string's length.
pub fn bitmap_of_bit_string(bits: &[u8]) -> Bitmap {
    let mut containers = Vec::new();
    let mut lows: Vec<u16> = Vec::new();
    for (hi, chunk) in bits.chunks(1 << 16).enumerate() {
        lows.clear();
        lows.extend(
            chunk
                .iter()
                .enumerate()
                .filter(|(_, &c)| c == b'1')
                .map(|(i, _)| i as u16),
        );
        if !lows.is_empty() {
            containers.push((hi as u16, ContainerBuf::from_sorted(&lows)));
        }
    }
    // Blocks are produced in ascending order, so this cannot fail.
    Bitmap::from_containers(containers).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_string_spans_blocks() {
        let mut s = vec![b'0'; 3 * 65_536 + 5];
        for i in [0usize, 1, 65_535, 65_536, 3 * 65_536 + 4] {
            s[i] = b'1';
        }
        let b = bitmap_of_bit_string(&s);
        assert_eq!(
            b.iter().collect::<Vec<u32>>(),
            vec![0, 1, 65_535, 65_536, 196_612]
        );
        assert!(bitmap_of_bit_string(b"").is_empty());
    }
}
