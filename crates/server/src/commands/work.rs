//! Work estimates for the command table's `work` attribute
//! ([`crate::command_table::WorkFn`]): what a request asks for by its
//! arguments alone, in microseconds, from the costs measured on this
//! project's 2-core machine (release build). Only the order of magnitude
//! matters: a request over [`crate::dispatch::LONG_WORK_US`] runs off the
//! connection workers.

use roaringd_resp::Args;

/// Microseconds per offset of TR.SETBITS / TR.CLEARBITS / TR.GETBITS and
/// the integer-array writes (a million offsets took 3.4 s).
pub const OFFSET_US: u64 = 3;

/// Microseconds per container that a range write touches (TR.FLIPRANGE
/// over [0, 2^32), 65,536 containers, took 0.4 s).
pub const CONTAINER_US: u64 = 6;

/// Microseconds per member, field or key of a variadic data command.
pub const ELEMENT_US: u64 = 1;

/// Bytes of a bit-string or serialized-bitmap argument per microsecond.
pub const BYTES_PER_US: u64 = 1000;

/// Arguments after the command's name and first key, `US` each.
pub fn per_arg<const US: u64>(args: &Args<'_>) -> u64 {
    (args.len().saturating_sub(2) as u64).saturating_mul(US)
}

/// Arguments after the command's name, [`ELEMENT_US`] each (MSET, DEL,
/// MGET: keys and values alike).
pub fn per_element(args: &Args<'_>) -> u64 {
    (args.len().saturating_sub(1) as u64).saturating_mul(ELEMENT_US)
}

/// Containers of the range `[args[2], args[3]]` (`start end` after the
/// key), [`CONTAINER_US`] each; 0 when either bound does not parse or
/// `start > end`.
pub fn range_containers(args: &Args<'_>) -> u64 {
    let bound = |i| {
        args.get(i)
            .and_then(roaringd_compat::number::parse_u64)
            .map(|v| v.min(u64::from(u32::MAX)))
    };
    match (bound(2), bound(3)) {
        (Some(s), Some(e)) if s <= e => ((e >> 16) - (s >> 16) + 1) * CONTAINER_US,
        _ => 0,
    }
}

/// The bit count `[args[2], args[3]]` asks TR.RANGEBITARRAY to write, one
/// byte each, at [`BYTES_PER_US`]. Bounds past `u32::MAX` (which the
/// handler refuses) saturate rather than overflow.
pub fn range_bits(args: &Args<'_>) -> u64 {
    let bound = |i| args.get(i).and_then(roaringd_compat::number::parse_u64);
    match (bound(2), bound(3)) {
        (Some(s), Some(e)) if s <= e => (e - s).saturating_add(1) / BYTES_PER_US,
        _ => 0,
    }
}

/// The `COUNT` option's value (SCAN, SSCAN, HSCAN), [`ELEMENT_US`] each; 0
/// without one.
pub fn count_option(args: &Args<'_>) -> u64 {
    (1..args.len())
        .find(|&i| {
            args.get(i)
                .is_some_and(|a| a.eq_ignore_ascii_case(b"count"))
        })
        .and_then(|i| args.get(i + 1))
        .and_then(roaringd_compat::number::parse_u64)
        .unwrap_or(0)
        .saturating_mul(ELEMENT_US)
}

/// The entries (members, fields, containers) of the first key,
/// [`ELEMENT_US`] each: a whole-collection read. Unreadable: 0 (the
/// handler reports the error).
pub fn first_key_entries(txn: &mut roaringd_store::Txn, db: u16, args: &Args<'_>) -> u64 {
    args.get(1)
        .and_then(|k| txn.meta(db, k).ok().flatten())
        .map_or(0, |m| m.data_entries())
        .saturating_mul(ELEMENT_US)
}

/// The keys of the database, [`ELEMENT_US`] each (KEYS walks them all).
pub fn db_keys(txn: &mut roaringd_store::Txn, db: u16, _args: &Args<'_>) -> u64 {
    txn.dbsize(db).unwrap_or(0).saturating_mul(ELEMENT_US)
}

/// The bytes of the last argument (a bit string, a serialized bitmap), at
/// [`BYTES_PER_US`].
pub fn last_arg_bytes(args: &Args<'_>) -> u64 {
    let n = args.len();
    args.get(n.saturating_sub(1)).map_or(0, |b| b.len() as u64) / BYTES_PER_US
}

#[cfg(test)]
mod tests {
    use super::*;
    use roaringd_resp::Span;

    fn with_args<T>(parts: &[&[u8]], f: impl FnOnce(&Args<'_>) -> T) -> T {
        let mut buf = Vec::new();
        let mut spans = Vec::new();
        for p in parts {
            let start = buf.len();
            buf.extend_from_slice(p);
            spans.push(Span {
                start,
                end: buf.len(),
            });
        }
        f(&Args::new(&buf, &spans))
    }

    #[test]
    fn estimates_grow_with_what_the_arguments_ask_for() {
        let r = |s: &[u8], e: &[u8]| with_args(&[b"tr.fliprange", b"k", s, e], range_containers);
        assert_eq!(r(b"0", b"4294967295"), 65536 * CONTAINER_US);
        assert_eq!(r(b"0", b"99999999999"), 65536 * CONTAINER_US);
        assert_eq!(r(b"5", b"6"), CONTAINER_US);
        assert_eq!(r(b"6", b"5"), 0);
        assert_eq!(r(b"x", b"5"), 0);
        assert_eq!(
            with_args(&[b"tr.rangebitarray", b"k", b"0", b"9999999"], range_bits),
            10_000
        );
        // Found by the dispatch fuzz target: 0..u64::MAX overflowed `+ 1`.
        assert_eq!(
            with_args(
                &[b"tr.rangebitarray", b"k", b"0", b"18446744073709551615"],
                range_bits
            ),
            u64::MAX / BYTES_PER_US
        );
        assert_eq!(
            with_args(
                &[b"tr.setbits", b"k", b"1", b"2", b"3"],
                per_arg::<OFFSET_US>
            ),
            3 * OFFSET_US
        );
        assert_eq!(with_args(&[b"del", b"a", b"b"], per_element), 2);
        assert_eq!(
            with_args(&[b"scan", b"0", b"COUNT", b"5000"], count_option),
            5000 * ELEMENT_US
        );
        assert_eq!(
            with_args(&[b"sscan", b"s", b"0", b"count", b"7"], count_option),
            7
        );
        assert_eq!(with_args(&[b"scan", b"0", b"COUNT"], count_option), 0);
        assert_eq!(with_args(&[b"scan", b"0"], count_option), 0);
        assert_eq!(
            with_args(&[b"tr.setbitarray", b"k", &[b'1'; 5000]], last_arg_bytes),
            5
        );
    }
}
