//! Numbers as Redis reads them in arguments and in stored strings: one
//! function per rule, and each caller uses the rule Redis uses in the same
//! place.
//!
//! - [`parse_i64`]: `string2ll`. Optional `-`, no `+`, no leading zeros,
//!   no spaces, no overflow. Integer arguments (`roaringd-resp`'s `Args`),
//!   RESP length headers, and integers stored in strings, hash fields and
//!   set members (INCR, HINCRBY, the intset encoding).
//! - [`parse_u64`]: the same digits without a sign, up to `u64::MAX`
//!   (unsigned arguments).
//! - [`parse_f64`]: `string2d` for float arguments, in `f64`.
//! - [`incr_float_text`]: INCRBYFLOAT / HINCRBYFLOAT. Both operands are
//!   read by `string2ld` (so hexadecimal integers such as `0x10` are
//!   accepted there, and not by [`parse_f64`]) and added in `long double`
//!   as Redis does ([`crate::longdouble`]).

/// Parses a signed integer with Redis's `string2ll` rules.
#[must_use]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let mag = parse_digits(digits)?;
    if neg {
        if mag > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((mag as i64).wrapping_neg())
        }
    } else {
        i64::try_from(mag).ok()
    }
}

/// Parses an unsigned integer: decimal digits, no sign, no leading zeros.
#[must_use]
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s == b"0" {
        return Some(0);
    }
    if s.len() > 20 {
        return None;
    }
    parse_digits(s)
}

/// `[1-9][0-9]*` without overflow.
fn parse_digits(d: &[u8]) -> Option<u64> {
    let (&first, rest) = d.split_first()?;
    if !(b'1'..=b'9').contains(&first) {
        return None;
    }
    let mut v = u64::from(first - b'0');
    for &c in rest {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// Parses a double with Redis's `string2d` rules: no leading space, the
/// whole text consumed, NaN and overflow rejected, `inf` / `infinity`
/// (with a sign) accepted. Unlike `strtod`, hexadecimal (`0x10`) is not
/// accepted, and a value that underflows reads as 0.
#[must_use]
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5 * 1024 || s[0].is_ascii_whitespace() {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    let v: f64 = text.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    if v.is_infinite() {
        // strtod reports overflow (ERANGE) for finite literals that do not fit.
        let t = text.trim_start_matches(['+', '-']);
        if !(t.eq_ignore_ascii_case("inf") || t.eq_ignore_ascii_case("infinity")) {
            return None;
        }
    }
    Some(v)
}

/// Why a float increment failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatIncrError {
    /// The stored value is not a float.
    Current,
    /// The increment is not a float.
    Increment,
    /// The result is NaN or infinite.
    NanOrInfinity,
}

/// INCRBYFLOAT / HINCRBYFLOAT on text: `current + incr` computed as Redis
/// does (`long double`), formatted as Redis stores it.
///
/// # Errors
/// Which operand is not a float, or a non-finite result.
pub fn incr_float_text(current: &[u8], incr: &[u8]) -> Result<Vec<u8>, FloatIncrError> {
    match crate::longdouble::add_text(current, incr) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err(FloatIncrError::NanOrInfinity),
        Err(crate::longdouble::BadOperand::Current) => Err(FloatIncrError::Current),
        Err(crate::longdouble::BadOperand::Increment) => Err(FloatIncrError::Increment),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-0",
            b"+1",
            b"01",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"1.0",
            b"-",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
    }

    #[test]
    fn floats_follow_string2d() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        for bad in [&b""[..], b"nan", b" 1", b"1 ", b"1e400", b"abc"] {
            assert_eq!(parse_f64(bad), None, "{:?}", bad);
        }
    }

    #[test]
    fn float_increments_read_operands_as_string2ld() {
        assert_eq!(incr_float_text(b"10.5", b"0.1"), Ok(b"10.6".to_vec()));
        // Hexadecimal: string2ld reads it, string2d (arguments) does not.
        assert_eq!(incr_float_text(b"0", b"0x10"), Ok(b"16".to_vec()));
        assert_eq!(parse_f64(b"0x10"), None);
        assert_eq!(incr_float_text(b"abc", b"1"), Err(FloatIncrError::Current));
        assert_eq!(incr_float_text(b"1", b" 1"), Err(FloatIncrError::Increment));
        assert_eq!(
            incr_float_text(b"1", b"inf"),
            Err(FloatIncrError::NanOrInfinity)
        );
    }
}
