//! TairRoaring info and maintenance (spec section 4): TR.STAT and
//! TR.OPTIMIZE; the portable-format edge (beyond the spec): TR.EXPORT and
//! TR.IMPORT, which move a bitmap out and in as the portable Roaring
//! serialization that the C, Java, Go and Python Roaring libraries read and
//! write; and the legacy loaders of spec section 5: TR.LOAD (portable bytes)
//! and TR.LOADSTRING (a string key's 0/1 characters).

use roaringd_bitmap::Bitmap;
use roaringd_resp::Args;
use roaringd_store::BitmapSummary;

use crate::command_table::{AclCat, CommandSpec, Flag, KeySpec, KeySpecDoc, TierUse};
use crate::commands::tr_args::{check_bit_string, check_reply};
use crate::commands::tr_write::bitmap_of_bit_string;
use crate::commands::work;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;

const ACL: &[AclCat] = &[AclCat::Bitmap];
const K1: KeySpec = KeySpec::range(1, 1, 1);
const WD: &[Flag] = &[Flag::Write, Flag::Denyoom];

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("tr.stat", -2, stat)
        .tier(TierUse::KEEP_DIRTY)
        .flags(&[Flag::Readonly, Flag::Fast])
        .keys(K1)
        .acl(ACL)
        .doc(
            "Returns statistics of a Roaring bitmap (plain text or JSON).",
            "1.0.0",
            "bitmap",
        )
        .key_flags(&["RO", "access"]),
    // A write: it rewrites storage (open point 10).
    CommandSpec::new("tr.optimize", 2, optimize)
        .flags(&[Flag::Write])
        .keys(K1)
        .acl(ACL)
        .doc(
            "Re-encodes a Roaring bitmap's containers in their smallest form.",
            "1.0.0",
            "bitmap",
        )
        .key_flags(&["RW", "update"]),
    CommandSpec::new("tr.export", 2, export)
        .flags(&[Flag::Readonly])
        .keys(K1)
        .acl(ACL)
        .doc(
            "Returns a Roaring bitmap in the portable Roaring serialization.",
            "1.0.0",
            "bitmap",
        )
        .key_flags(&["RO", "access"]),
    CommandSpec::new("tr.import", 3, import)
        .flags(WD)
        .keys(K1)
        .acl(ACL)
        .doc(
            "Replaces a key by a bitmap given in the portable Roaring serialization.",
            "1.0.0",
            "bitmap",
        )
        .work(work::last_arg_bytes)
        .key_flags(&["OW", "update"]),
    CommandSpec::new("tr.load", 3, load)
        .flags(WD)
        .keys(K1)
        .acl(ACL)
        .doc(
            "Loads a bitmap given in the portable Roaring serialization (legacy).",
            "1.0.0",
            "bitmap",
        )
        .work(work::last_arg_bytes)
        .key_flags(&["OW", "update"]),
    CommandSpec::new("tr.loadstring", 3, load_string)
        .flags(WD)
        .keys(KeySpec::range(1, 2, 1))
        .acl(ACL)
        .doc(
            "Builds a bitmap from a string key's 0/1 characters (legacy).",
            "1.0.0",
            "bitmap",
        )
        .key_specs(&[
            KeySpecDoc::range(&["OW", "update"], 1, 0, 1),
            KeySpecDoc::range(&["RO", "access"], 2, 0, 1),
        ]),
];

/// TR.STAT key [JSON] → the statistics of spec 4.1, read from `meta` only.
/// Missing key → nil; a third argument other than `JSON` (or more
/// arguments) → syntax error. An empty bitmap prints min/max 0 (open
/// point 7).
fn stat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let json = match args.remaining() {
        0 => false,
        1 if args.eat_keyword("JSON") => true,
        _ => return Err(CommandError::Syntax),
    };
    let db = ctx.db;
    let Some(s) = ctx.txn()?.tr_summary(db, key)? else {
        return Ok(Reply::Null);
    };
    Ok(Reply::Bulk(
        if json { stat_json(&s) } else { stat_text(&s) }.into_bytes(),
    ))
}

/// The plain TR.STAT layout: fourteen CRLF-ended lines.
pub fn stat_text(s: &BitmapSummary) -> String {
    let [a, b, r] = s.kinds;
    format!(
        "cardinality: {}\r\nnumber of containers: {}\r\nmax value: {}\r\nmin value: {}\r\nsum value: {}\r\n\
number of array containers: {}\r\n\tarray container values: {}\r\n\tarray container bytes: {}\r\n\
number of bitset containers: {}\r\n\tbitset container values: {}\r\n\tbitset container bytes: {}\r\n\
number of run containers: {}\r\n\trun container values: {}\r\n\trun container bytes: {}\r\n",
        s.card, s.containers, s.max, s.min, s.sum,
        a.containers, a.values, a.bytes,
        b.containers, b.values, b.bytes,
        r.containers, r.values, r.bytes,
    )
}

/// The JSON TR.STAT layout: one compact line, keys in the spec's order.
pub fn stat_json(s: &BitmapSummary) -> String {
    let kind = |k: roaringd_store::KindCensus| {
        format!(
            "{{\"number_of_containers\":{},\"container_cardinality\":{},\"container_allocated_bytes\":{}}}",
            k.containers, k.values, k.bytes
        )
    };
    format!(
        "{{\"cardinality\":{},\"number_of_containers\":{},\"max_value\":{},\"min_value\":{},\"sum_value\":{},\"array_container\":{},\"bitset_container\":{},\"run_container\":{}}}",
        s.card,
        s.containers,
        s.max,
        s.min,
        s.sum,
        kind(s.kinds[0]),
        kind(s.kinds[1]),
        kind(s.kinds[2]),
    )
}

/// TR.OPTIMIZE key → `+OK`; missing key → nil (spec 4.2).
fn optimize(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    Ok(match ctx.txn()?.tr_optimize(db, key)? {
        Some(()) => Reply::Ok,
        None => Reply::Null,
    })
}

/// TR.EXPORT key → the bitmap in the portable Roaring serialization (bulk),
/// nil when missing. Bounded by `max-reply-bytes` (`OutOfRange` past it).
fn export(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let db = ctx.db;
    let Some(s) = ctx.txn()?.tr_summary(db, key)? else {
        return Ok(Reply::Null);
    };
    // Upper bound of the portable size before materializing anything.
    check_reply(
        ctx,
        8 + 8 * s.containers + s.kinds.iter().map(|k| k.bytes).sum::<u64>(),
    )?;
    let b = ctx.txn()?.tr_load(db, key)?.unwrap_or_default();
    Ok(Reply::Bulk(b.serialize_portable()))
}

fn parse_portable(bytes: &[u8]) -> Result<Bitmap, CommandError> {
    Bitmap::deserialize_portable(bytes)
        .map_err(|e| CommandError::Err(format!("invalid portable Roaring bitmap: {e}").into()))
}

/// TR.IMPORT key bytes → cardinality of the imported bitmap, which replaces
/// the key's value (no TTL, as every whole-value replacement: open point
/// 14). Bytes that are not a valid portable bitmap →
/// `ERR invalid portable Roaring bitmap: <why>`, nothing written.
fn import(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let b = parse_portable(args.next_bytes()?)?;
    let db = ctx.db;
    Ok(Reply::Integer(ctx.txn()?.tr_replace(db, key, &b)? as i64))
}

/// TR.LOAD key bytes (legacy, spec 5.3) → cardinality. The exact reply and
/// non-empty-key behaviour are unknown; we treat it as TR.IMPORT (replace).
fn load(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    import(ctx, args)
}

/// TR.LOADSTRING key stringkey (legacy, spec 5.4) → cardinality: the
/// string's characters are a 0/1 array (the one public observation:
/// `"101010101"` gives 5), replacing the key's value. Other characters →
/// `OutOfRange`; a missing string key loads nothing (reply: the key's
/// current cardinality, 0 when absent); a non-string → WRONGTYPE.
fn load_string(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let key = args.next_bytes()?;
    let src = args.next_bytes()?;
    let db = ctx.db;
    let txn = ctx.txn()?;
    let Some(text) = txn.get(db, src)? else {
        let card = txn.tr_summary(db, key)?.map_or(0, |s| s.card);
        return Ok(Reply::Integer(card as i64));
    };
    check_bit_string(&text)?;
    let b = bitmap_of_bit_string(&text);
    Ok(Reply::Integer(txn.tr_replace(db, key, &b)? as i64))
}
