//! Numbers as Redis reads and writes them in strings: strict 64-bit integers
//! (`string2ll`: no sign `+`, no leading zeros, no spaces), floats
//! (`string2ld`: no leading space, no trailing garbage, NaN rejected) and the
//! human float format of INCRBYFLOAT / HINCRBYFLOAT (fixed notation, at most
//! 17 decimals, trailing zeros removed).
//!
//! Float increments go through [`crate::compat::longdouble`] (exact `long double`
//! emulation, as Redis computes them); [`parse_f64`] and
//! [`format_float_human`] are the `f64` forms for other callers.

/// Parses a canonical signed 64-bit integer as Redis `string2ll` does.
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
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Parses a float as Redis `string2ld` accepts it: decimal or exponent
/// notation, optional sign, `inf`/`infinity` accepted, NaN, spaces and
/// trailing garbage rejected, hexadecimal (`0x10`) accepted.
#[must_use]
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() >= 5 * 1024 {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    if text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let v = match text.parse::<f64>() {
        Ok(v) => v,
        Err(_) => parse_hex(text)?,
    };
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// `strtold` hexadecimal integers (`0x10`, `-0X1f`); fractions and binary
/// exponents are rare enough to reject.
fn parse_hex(t: &str) -> Option<f64> {
    let (neg, rest) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let hex = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))?;
    if hex.is_empty() || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut v = 0f64;
    for c in hex.bytes() {
        v = v * 16.0 + f64::from((c as char).to_digit(16)?);
    }
    Some(if neg { -v } else { v })
}

/// Formats a finite float as Redis `LD_STR_HUMAN`: fixed notation, at most
/// 17 decimals, no trailing zeros or dot, `-0` printed as `0`.
#[must_use]
pub fn format_float_human(v: f64) -> Vec<u8> {
    let shortest = format!("{v}");
    let frac_len = shortest.find('.').map_or(0, |d| shortest.len() - d - 1);
    let mut s = if frac_len > 17 {
        format!("{v:.17}")
    } else {
        shortest
    };
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s.into_bytes()
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
    match crate::compat::longdouble::add_text(current, incr) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err(FloatIncrError::NanOrInfinity),
        Err(crate::compat::longdouble::BadOperand::Current) => Err(FloatIncrError::Current),
        Err(crate::compat::longdouble::BadOperand::Increment) => Err(FloatIncrError::Increment),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_i64_is_strict() {
        assert_eq!(parse_i64(b"0"), Some(0));
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
    }

    #[test]
    fn parse_f64_like_string2ld() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"5.0e3"), Some(5000.0));
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1 "), None);
        assert_eq!(parse_f64(b""), None);
        assert_eq!(parse_f64(b"abc"), None);
    }

    #[test]
    fn format_float_human_matches_redis_samples() {
        let f = |v: f64| String::from_utf8(format_float_human(v)).unwrap();
        // Redis (long double) prints "0.3" here; f64 cannot.
        assert_eq!(f(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(f(10.5 + 0.1), "10.6");
        assert_eq!(f(5000.0), "5000");
        assert_eq!(f(1e-20), "0");
        assert_eq!(f(1e20), "100000000000000000000");
        assert_eq!(f(3.0 + 1.1), "4.1");
        assert_eq!(f(-0.0), "0");
        assert_eq!(f(1.5), "1.5");
    }
}
