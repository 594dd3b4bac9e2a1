//! Argument parsing shared by the TR.* family files (`tr_write`, `tr_read`,
//! `tr_setops`, `tr_admin`), with the spec's error classes (section 0.5,
//! open point 12): a number that does not parse as an unsigned 32-bit value
//! is [`CommandError::NotU32`]; a value that parses but is not acceptable
//! (start > end, a bit value other than 0/1, a bad count) is
//! [`CommandError::OutOfRange`]. Also the reply-size ceiling
//! (`max-reply-bytes`, open point 8).

use roaringd_resp::Args;

use crate::ctx::Ctx;
use crate::error::CommandError;

/// Parses an offset with Redis's integer rule (`string2ll`, which the
/// reference module also uses), limited to 0 ..= 2^32 − 1 (open point 17).
/// Leading zeros, signs and spaces are rejected, as Redis rejects them for
/// SETBIT offsets: so redis-benchmark's zero-padded `__rand_int__` is not an
/// offset here either (use `roaringd-bench`'s `__RAND__` or resp-benchmark's
/// `{rand N}`).
///
/// # Errors
/// `NotU32`.
pub fn u32_of(b: &[u8]) -> Result<u32, CommandError> {
    roaringd_compat::number::parse_i64(b)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or(CommandError::NotU32)
}

/// The next argument as an offset.
///
/// # Errors
/// `NotU32`; `Syntax` when no argument is left (arity guards that).
pub fn next_u32(args: &mut Args<'_>) -> Result<u32, CommandError> {
    u32_of(args.next_bytes()?)
}

/// Every remaining argument as an offset; all are validated before any is
/// used, so a bad one writes nothing (spec 1.2).
///
/// # Errors
/// `NotU32`.
pub fn rest_u32(args: &mut Args<'_>) -> Result<Vec<u32>, CommandError> {
    args.rest().map(u32_of).collect()
}

/// An inclusive `start end` pair.
///
/// # Errors
/// `NotU32` for a bad number; `OutOfRange` when `start > end`.
pub fn next_range(args: &mut Args<'_>) -> Result<(u32, u32), CommandError> {
    let start = next_u32(args)?;
    let end = next_u32(args)?;
    if start > end {
        return Err(CommandError::OutOfRange);
    }
    Ok((start, end))
}

/// A bit value: exactly `0` or `1`.
///
/// # Errors
/// `OutOfRange` for anything else (spec 1.1 / 2.4 recommendation).
pub fn bit_of(b: &[u8]) -> Result<bool, CommandError> {
    match b {
        b"0" => Ok(false),
        b"1" => Ok(true),
        _ => Err(CommandError::OutOfRange),
    }
}

/// A signed decimal integer (TR.BITPOS count, TR.SCAN COUNT,
/// TR.APPENDBITARRAY offset).
///
/// # Errors
/// `NotU32` (the "bad arguments" class) when it does not parse.
pub fn i64_of(b: &[u8]) -> Result<i64, CommandError> {
    roaringd_compat::number::parse_i64(b).ok_or(CommandError::NotU32)
}

/// Checks a string of `0` / `1` characters (TR.APPENDBITARRAY,
/// TR.SETBITARRAY, TR.LOADSTRING; open point 11).
///
/// # Errors
/// `OutOfRange` on any other character.
pub fn check_bit_string(b: &[u8]) -> Result<(), CommandError> {
    if b.iter().all(|&c| c == b'0' || c == b'1') {
        Ok(())
    } else {
        Err(CommandError::OutOfRange)
    }
}

/// Encoded size of an integer reply `:<v>\r\n`.
pub fn int_reply_len(v: u64) -> u64 {
    let digits = if v == 0 { 1 } else { u64::from(v.ilog10()) + 1 };
    digits + 3
}

/// Fails with `OutOfRange` when `bytes` passes the reply ceiling.
///
/// # Errors
/// `OutOfRange` (open point 8).
pub fn check_reply(ctx: &Ctx<'_>, bytes: u64) -> Result<(), CommandError> {
    if bytes > ctx.max_reply_bytes() {
        Err(CommandError::OutOfRange)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u32_of_accepts_the_domain_and_rejects_the_rest() {
        assert_eq!(u32_of(b"0"), Ok(0));
        assert_eq!(u32_of(b"4294967295"), Ok(u32::MAX));
        for bad in [
            &b""[..],
            b"000000001234",
            b"00",
            b"-0",
            b"4294967296",
            b"-1",
            b"+1",
            b" 1",
            b"1x",
            b"99999999999",
        ] {
            assert_eq!(u32_of(bad), Err(CommandError::NotU32), "{bad:?}");
        }
    }
}
