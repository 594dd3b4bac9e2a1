//! TairRoaring set operations (spec section 3): TR.BITOP, TR.BITOPCARD,
//! TR.JACCARD, TR.CONTAINS, and the legacy TR.DIFF (section 5.2). All of
//! them stream: the store merge-scans the sources' containers in block
//! order (`roaringd_store::types::bitmap`). Missing sources are empty sets (open
//! point 3).

use roaringd_resp::Args;
use roaringd_store::types::bitmap::BitOp;

use crate::command_table::{AclCat, CommandSpec, Flag, KeySpec, KeySpecDoc, TierUse};
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;

const ACL: &[AclCat] = &[AclCat::Bitmap];

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("tr.bitop", -4, bit_op)
        .tier(TierUse::KeepDest)
        .flags(&[Flag::Write, Flag::Denyoom])
        .keys(KeySpec::Movable(bitop_keys))
        .acl(ACL)
        .doc(
            "Stores AND/OR/XOR/NOT/DIFF of Roaring bitmaps; returns the result's cardinality.",
            "1.0.0",
            "bitmap",
        )
        .key_specs(&[
            KeySpecDoc::range(&["OW", "update"], 1, 0, 1),
            KeySpecDoc::range(&["RO", "access"], 3, -1, 1),
        ]),
    // Read-only although the reference lists it with the writes (open point 10).
    CommandSpec::new("tr.bitopcard", -3, bit_op_card)
        .flags(&[Flag::Readonly])
        .keys(KeySpec::range(2, -1, 1))
        .acl(ACL)
        .doc(
            "Returns the cardinality of AND/OR/XOR/NOT/DIFF of Roaring bitmaps.",
            "1.0.0",
            "bitmap",
        )
        .key_flags(&["RO", "access"]),
    CommandSpec::new("tr.jaccard", 3, jaccard)
        .flags(&[Flag::Readonly])
        .keys(KeySpec::range(1, 2, 1))
        .acl(ACL)
        .doc(
            "Returns the Jaccard index of two Roaring bitmaps.",
            "1.0.0",
            "bitmap",
        )
        .key_flags(&["RO", "access"]),
    CommandSpec::new("tr.contains", 3, contains)
        .flags(&[Flag::Readonly])
        .keys(KeySpec::range(1, 2, 1))
        .acl(ACL)
        .doc(
            "Returns 1 when the first Roaring bitmap is a subset of the second.",
            "1.0.0",
            "bitmap",
        )
        .key_flags(&["RO", "access"]),
    CommandSpec::new("tr.diff", 4, diff)
        .tier(TierUse::KeepDest)
        .flags(&[Flag::Write, Flag::Denyoom])
        .keys(KeySpec::range(1, 3, 1))
        .acl(ACL)
        .doc(
            "Stores key1 minus key2 in destkey (legacy).",
            "1.0.0",
            "bitmap",
        )
        .key_specs(&[
            KeySpecDoc::range(&["OW", "update"], 1, 0, 1),
            KeySpecDoc::range(&["RO", "access"], 2, 1, 1),
        ]),
];

/// Key positions of TR.BITOP: the destination (1) and the sources (3..).
fn bitop_keys(args: &Args<'_>, out: &mut Vec<usize>) {
    if args.len() > 1 {
        out.push(1);
    }
    out.extend(3..args.len());
}

/// Parses an operation name (case-insensitive) and checks the source count:
/// NOT takes exactly one key, DIFF exactly two, the others one or more.
///
/// # Errors
/// `OutOfRange` for an unknown operation or a wrong key count (open point 4).
fn parse_op(name: &[u8], keys: usize) -> Result<BitOp, CommandError> {
    let op = match name.to_ascii_uppercase().as_slice() {
        b"AND" => BitOp::And,
        b"OR" => BitOp::Or,
        b"XOR" => BitOp::Xor,
        b"NOT" => BitOp::Not,
        b"DIFF" => BitOp::Diff,
        _ => return Err(CommandError::OutOfRange),
    };
    let ok = match op {
        BitOp::Not => keys == 1,
        BitOp::Diff => keys == 2,
        _ => keys >= 1,
    };
    if ok {
        Ok(op)
    } else {
        Err(CommandError::OutOfRange)
    }
}

/// TR.BITOP destkey op key... → cardinality of the stored result. The
/// destination may be a source; an existing bitmap there is replaced (no
/// TTL, open point 14), another type → WRONGTYPE (open point 9); an empty
/// result is stored as an empty bitmap (open point 7).
fn bit_op(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let dest = args.next_bytes()?;
    let op_name = args.next_bytes()?;
    let srcs: Vec<&[u8]> = args.rest().collect();
    let op = parse_op(op_name, srcs.len())?;
    let db = ctx.db;
    let n = sized(ctx, &srcs, |t| t.tr_bitop(db, dest, op, &srcs))?;
    Ok(Reply::Integer(n as i64))
}

/// Source containers from which a multi-key operation runs as blocking
/// work ([`crate::dispatch::run_blocking`]) instead of on the I/O worker:
/// at a few microseconds per container, from about a millisecond (a
/// 200-key TR.BITOP OR over census1881, ~1,500 containers, takes 2-3 ms).
/// Handing the worker over costs a thread wake-up, more than a pairwise
/// operation on small keys takes, so those stay in place.
pub const OFF_WORKER_CONTAINERS: u64 = 512;

/// Runs `f` on this command's `Txn`, as blocking work when the sources
/// (bitmap keys; others count 0 and fail in `f` as they should) hold more
/// than [`OFF_WORKER_CONTAINERS`] containers in all (DESIGN.md: a long
/// BITOP must not stall the other connections of its worker).
fn sized<T>(
    ctx: &mut Ctx<'_>,
    srcs: &[&[u8]],
    f: impl FnOnce(&mut roaringd_store::Txn) -> roaringd_store::Result<T>,
) -> Result<T, CommandError> {
    let db = ctx.db;
    let txn = ctx.txn()?;
    let mut containers = 0u64;
    for k in srcs {
        if let Ok(Some(s)) = txn.tr_summary(db, k) {
            containers += s.containers;
        }
    }
    Ok(crate::dispatch::run_blocking_if(
        containers > OFF_WORKER_CONTAINERS,
        || f(txn),
    )?)
}

/// TR.BITOPCARD op key... → the cardinality TR.BITOP would store; stores
/// nothing and allocates no output bitmap.
fn bit_op_card(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let op_name = args.next_bytes()?;
    let srcs: Vec<&[u8]> = args.rest().collect();
    let op = parse_op(op_name, srcs.len())?;
    let db = ctx.db;
    let n = sized(ctx, &srcs, |t| t.tr_bitopcard(db, op, &srcs))?;
    Ok(Reply::Integer(n as i64))
}

/// TR.JACCARD key1 key2 → |A ∩ B| / |A ∪ B| as a double (RESP2: `%.17g`
/// bulk); `0` when both are empty or missing (open point 3).
fn jaccard(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let a = args.next_bytes()?;
    let b = args.next_bytes()?;
    let db = ctx.db;
    Ok(Reply::Double(sized(ctx, &[a, b], |t| {
        t.tr_jaccard(db, a, b)
    })?))
}

/// TR.CONTAINS key1 key2 → 1 when key1 ⊆ key2 (a missing key1 is empty,
/// so 1: open point 3), else 0.
fn contains(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let a = args.next_bytes()?;
    let b = args.next_bytes()?;
    let db = ctx.db;
    let r = sized(ctx, &[a, b], |t| t.tr_contains(db, a, b))?;
    Ok(Reply::Integer(i64::from(r)))
}

/// TR.DIFF destkey key1 key2 → `+OK` (legacy; stores key1 − key2 as
/// `TR.BITOP destkey DIFF key1 key2` does, spec 5.2).
fn diff(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let dest = args.next_bytes()?;
    let a = args.next_bytes()?;
    let b = args.next_bytes()?;
    let db = ctx.db;
    sized(ctx, &[a, b], |t| t.tr_bitop(db, dest, BitOp::Diff, &[a, b]))?;
    Ok(Reply::Ok)
}
