//! Exact emulation of the x87 80-bit `long double` arithmetic Redis uses for
//! INCRBYFLOAT and HINCRBYFLOAT: `strtold` (decimal or hexadecimal integer
//! text → nearest value with a 64-bit significand), addition rounded to
//! nearest-even, and `printf("%.17Lf")` followed by Redis's trimming
//! (`ld2string(..., LD_STR_HUMAN)`). All steps are exact big-integer
//! arithmetic, so results match Redis byte for byte (e.g. `1000 + 0.1` →
//! `1000.09999999999999998`), over the whole `long double` range: values
//! that overflow it (`1e4933`) or underflow to zero (`1e-5000`) are
//! rejected as `strtold` + `string2ld` do. Subnormal results keep 64 bits of
//! precision (x87 would round them coarser) — an accepted edge.

use std::cmp::Ordering;

/// Longest text `string2ld` accepts (`MAX_LONG_DOUBLE_CHARS`).
const MAX_TEXT: usize = 5 * 1024;
/// Binary exponent range of x87 extended: values are below `2^MAX_EXP2`
/// and at least `2^MIN_EXP2` (the smallest subnormal).
const MAX_EXP2: i64 = 16384;
const MIN_EXP2: i64 = -16445;

/// Unsigned big integer, little-endian 64-bit limbs, no leading zero limbs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big(Vec<u64>);

impl Big {
    fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v]);
        b.trim();
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn bitlen(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => (self.0.len() as u64 - 1) * 64 + u64::from(64 - top.leading_zeros()),
        }
    }

    fn bit(&self, i: u64) -> bool {
        let limb = (i / 64) as usize;
        self.0.get(limb).is_some_and(|l| (l >> (i % 64)) & 1 == 1)
    }

    /// True when any bit below position `n` is set.
    fn any_below(&self, n: u64) -> bool {
        let full = (n / 64) as usize;
        if self.0.iter().take(full).any(|&l| l != 0) {
            return true;
        }
        let rem = n % 64;
        rem != 0
            && self
                .0
                .get(full)
                .is_some_and(|l| l & ((1u64 << rem) - 1) != 0)
    }

    fn low_u64(&self) -> u64 {
        self.0.first().copied().unwrap_or(0)
    }

    fn mul_small(&mut self, m: u64) {
        let mut carry = 0u128;
        for l in &mut self.0 {
            let v = u128::from(*l) * u128::from(m) + carry;
            *l = v as u64;
            carry = v >> 64;
        }
        if carry != 0 {
            self.0.push(carry as u64);
        }
        self.trim();
    }

    fn add_small(&mut self, a: u64) {
        let mut carry = u128::from(a);
        for l in &mut self.0 {
            if carry == 0 {
                break;
            }
            let v = u128::from(*l) + carry;
            *l = v as u64;
            carry = v >> 64;
        }
        if carry != 0 {
            self.0.push(carry as u64);
        }
    }

    fn shl(&self, n: u64) -> Big {
        if self.is_zero() {
            return self.clone();
        }
        let limbs = (n / 64) as usize;
        let bits = n % 64;
        let mut out = vec![0u64; limbs];
        let mut carry = 0u64;
        for &l in &self.0 {
            if bits == 0 {
                out.push(l);
            } else {
                out.push((l << bits) | carry);
                carry = l >> (64 - bits);
            }
        }
        if carry != 0 {
            out.push(carry);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    fn shr(&self, n: u64) -> Big {
        let limbs = (n / 64) as usize;
        if limbs >= self.0.len() {
            return Big(Vec::new());
        }
        let bits = n % 64;
        let src = &self.0[limbs..];
        let mut out = Vec::with_capacity(src.len());
        for i in 0..src.len() {
            let lo = src[i] >> bits;
            let hi = if bits == 0 {
                0
            } else {
                src.get(i + 1).map_or(0, |h| h << (64 - bits))
            };
            out.push(lo | hi);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    fn cmp_big(&self, o: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&o.0.len())
            .then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }

    fn add(&self, o: &Big) -> Big {
        let n = self.0.len().max(o.0.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = 0u128;
        for i in 0..n {
            let v = u128::from(self.0.get(i).copied().unwrap_or(0))
                + u128::from(o.0.get(i).copied().unwrap_or(0))
                + carry;
            out.push(v as u64);
            carry = v >> 64;
        }
        if carry != 0 {
            out.push(carry as u64);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self - o`, requires `self >= o`.
    fn sub(&self, o: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0i128;
        for i in 0..self.0.len() {
            let mut v =
                i128::from(self.0[i]) - i128::from(o.0.get(i).copied().unwrap_or(0)) - borrow;
            if v < 0 {
                v += 1i128 << 64;
                borrow = 1;
            } else {
                borrow = 0;
            }
            out.push(v as u64);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    /// Quotient and remainder (bitwise long division, in place).
    fn divmod(&self, d: &Big) -> (Big, Big) {
        let n = self.bitlen();
        let mut q = vec![0u64; self.0.len()];
        let mut r = Big(Vec::with_capacity(d.0.len() + 1));
        for i in (0..n).rev() {
            r.shl1_in_place(self.bit(i));
            if r.cmp_big(d) != Ordering::Less {
                r.sub_in_place(d);
                q[(i / 64) as usize] |= 1 << (i % 64);
            }
        }
        let mut q = Big(q);
        q.trim();
        (q, r)
    }

    fn shl1_in_place(&mut self, low: bool) {
        let mut carry = u64::from(low);
        for l in &mut self.0 {
            let next = *l >> 63;
            *l = (*l << 1) | carry;
            carry = next;
        }
        if carry != 0 {
            self.0.push(carry);
        }
    }

    /// `self -= o`, requires `self >= o`.
    fn sub_in_place(&mut self, o: &Big) {
        let mut borrow = false;
        for (i, l) in self.0.iter_mut().enumerate() {
            let rhs = o.0.get(i).copied().unwrap_or(0);
            let (v1, b1) = l.overflowing_sub(rhs);
            let (v2, b2) = v1.overflowing_sub(u64::from(borrow));
            *l = v2;
            borrow = b1 || b2;
        }
        self.trim();
    }

    fn divmod_small(&mut self, d: u64) -> u64 {
        let mut rem = 0u128;
        for l in self.0.iter_mut().rev() {
            let cur = (rem << 64) | u128::from(*l);
            *l = (cur / u128::from(d)) as u64;
            rem = cur % u128::from(d);
        }
        self.trim();
        rem as u64
    }

    fn pow10(e: u64) -> Big {
        let mut b = Big::from_u64(1);
        for _ in 0..e {
            b.mul_small(10);
        }
        b
    }

    fn to_decimal(&self) -> String {
        if self.is_zero() {
            return "0".to_string();
        }
        let mut n = self.clone();
        let mut chunks = Vec::new();
        while !n.is_zero() {
            chunks.push(n.divmod_small(1_000_000_000_000_000_000));
        }
        let mut s = chunks.pop().map(|c| c.to_string()).unwrap_or_default();
        for c in chunks.iter().rev() {
            s.push_str(&format!("{c:018}"));
        }
        s
    }
}

/// A finite extended-precision value: `±mant × 2^exp`, `mant` normalised
/// (bit 63 set) or zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ext {
    neg: bool,
    mant: u64,
    exp: i64,
}

/// A parsed `strtold` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A finite value.
    Finite(Ext),
    /// `inf` / `infinity`, with its sign.
    Inf(bool),
}

impl Ext {
    const ZERO: Ext = Ext {
        neg: false,
        mant: 0,
        exp: 0,
    };

    /// `n × 2^exp` rounded to a 64-bit significand, ties to even.
    fn round(neg: bool, n: &Big, exp: i64) -> Ext {
        let len = n.bitlen();
        if len == 0 {
            return Ext { neg, ..Ext::ZERO };
        }
        if len <= 64 {
            let shift = 64 - len;
            return Ext {
                neg,
                mant: n.low_u64() << shift,
                exp: exp - shift as i64,
            };
        }
        let s = len - 64;
        let mut mant = n.shr(s).low_u64();
        let mut e = exp + s as i64;
        let half = n.bit(s - 1);
        let sticky = n.any_below(s - 1);
        if half && (sticky || mant & 1 == 1) {
            let (m, overflow) = mant.overflowing_add(1);
            mant = m;
            if overflow {
                mant = 1 << 63;
                e += 1;
            }
        }
        Ext { neg, mant, exp: e }
    }

    /// `Some(self)` when representable in `long double`: below `2^16384`
    /// and not underflowing to zero (at least half the smallest subnormal).
    fn in_range(self) -> Option<Ext> {
        if self.mant == 0 {
            return Some(self);
        }
        let top = self.exp + 64; // |value| < 2^top
        if top > MAX_EXP2 || top <= MIN_EXP2 {
            return None;
        }
        Some(self)
    }

    /// `self + o`, rounded to nearest-even.
    #[must_use]
    pub fn sum(self, o: Ext) -> Ext {
        if self.mant == 0 {
            return if o.mant == 0 {
                Ext {
                    neg: self.neg && o.neg,
                    ..Ext::ZERO
                }
            } else {
                o
            };
        }
        if o.mant == 0 {
            return self;
        }
        let e = self.exp.min(o.exp);
        // Far below the larger one's last bit: it cannot change the rounding.
        if self.exp - e > 200 {
            return self;
        }
        if o.exp - e > 200 {
            return o;
        }
        let a = Big::from_u64(self.mant).shl((self.exp - e) as u64);
        let b = Big::from_u64(o.mant).shl((o.exp - e) as u64);
        if self.neg == o.neg {
            return Ext::round(self.neg, &a.add(&b), e);
        }
        match a.cmp_big(&b) {
            Ordering::Equal => Ext::ZERO,
            Ordering::Greater => Ext::round(self.neg, &a.sub(&b), e),
            Ordering::Less => Ext::round(o.neg, &b.sub(&a), e),
        }
    }

    /// `printf("%.17Lf")` with Redis's trimming: trailing zeros and the dot
    /// removed, `-0` printed as `0`.
    #[must_use]
    pub fn format_human(self) -> Vec<u8> {
        let mut n = Big::from_u64(self.mant);
        for _ in 0..17 {
            n.mul_small(10);
        }
        let r = if self.exp >= 0 {
            n.shl(self.exp as u64)
        } else {
            let s = self.exp.unsigned_abs();
            let mut q = n.shr(s);
            let half = n.bit(s - 1);
            let sticky = n.any_below(s - 1);
            if half && (sticky || q.low_u64() & 1 == 1) {
                q.add_small(1);
            }
            q
        };
        let digits = r.to_decimal();
        let digits = if digits.len() < 18 {
            format!("{}{digits}", "0".repeat(18 - digits.len()))
        } else {
            digits
        };
        let (int, frac) = digits.split_at(digits.len() - 17);
        let frac = frac.trim_end_matches('0');
        let mut out = String::new();
        if self.neg {
            out.push('-');
        }
        out.push_str(int);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
        if out == "-0" {
            out = "0".to_string();
        }
        out.into_bytes()
    }
}

/// Parses like Redis's `string2ld` (`strtold` over the whole text):
/// optional sign, decimal digits with an optional dot and exponent,
/// `inf`/`infinity`, or a hexadecimal integer (`0x1f`). `None` for text it
/// rejects: empty or 5 KiB and longer, spaces, trailing garbage, NaN, and
/// values that overflow `long double` or underflow to zero.
#[must_use]
pub fn parse(text: &[u8]) -> Option<Parsed> {
    if text.len() >= MAX_TEXT {
        return None;
    }
    let (neg, body) = match text.first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        return Some(Parsed::Inf(neg));
    }
    if body.len() > 2 && (body.starts_with(b"0x") || body.starts_with(b"0X")) {
        let mut n = Big(Vec::new());
        for &c in &body[2..] {
            let d = (c as char).to_digit(16)?;
            n.mul_small(16);
            n.add_small(u64::from(d));
            if n.bitlen() > MAX_EXP2 as u64 + 1 {
                return None;
            }
        }
        return Ext::round(neg, &n, 0).in_range().map(Parsed::Finite);
    }
    let mut digits = Big(Vec::new());
    let mut ndigits = 0usize;
    let mut any_digit = false;
    let mut frac_digits = 0i64;
    let mut seen_dot = false;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            c @ b'0'..=b'9' => {
                any_digit = true;
                if ndigits > 0 || c != b'0' {
                    ndigits += 1;
                }
                digits.mul_small(10);
                digits.add_small(u64::from(c - b'0'));
                if seen_dot {
                    frac_digits += 1;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        i += 1;
    }
    if !any_digit {
        return None;
    }
    let mut exp10 = 0i64;
    if i < body.len() {
        if body[i] != b'e' && body[i] != b'E' {
            return None;
        }
        i += 1;
        let eneg = match body.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        while i < body.len() && body[i].is_ascii_digit() {
            exp10 = exp10
                .saturating_mul(10)
                .saturating_add(i64::from(body[i] - b'0'));
            i += 1;
        }
        if i == start || i != body.len() {
            return None;
        }
        if eneg {
            exp10 = -exp10;
        }
    }
    if digits.is_zero() {
        return Some(Parsed::Finite(Ext { neg, ..Ext::ZERO }));
    }
    let e = exp10.checked_sub(frac_digits)?;
    // 10^(e + ndigits - 1) <= |value| < 10^(e + ndigits): decide the
    // hopeless cases before any big arithmetic.
    let magnitude = e.saturating_add(ndigits as i64);
    if !(-4951..=4934).contains(&magnitude) {
        return None;
    }
    if e >= 0 {
        let mut n = digits;
        for _ in 0..e {
            n.mul_small(10);
        }
        return Ext::round(neg, &n, 0).in_range().map(Parsed::Finite);
    }
    let p = Big::pow10(e.unsigned_abs());
    let k = (p.bitlen() + 66).saturating_sub(digits.bitlen());
    let (q, r) = digits.shl(k).divmod(&p);
    // One extra low bit carries "inexact" into the rounding.
    let mut q2 = q.shl(1);
    if !r.is_zero() {
        q2.add_small(1);
    }
    Ext::round(neg, &q2, -(k as i64) - 1)
        .in_range()
        .map(Parsed::Finite)
}

/// Which operand of [`add_text`] is not a valid `long double`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadOperand {
    /// The current value.
    Current,
    /// The increment.
    Increment,
}

/// INCRBYFLOAT on text: `current + incr` in `long double`, formatted as
/// Redis stores it. `Ok(None)` when the result is NaN or infinite
/// (an infinite operand, or an overflowing sum).
///
/// # Errors
/// The operand that `string2ld` rejects.
pub fn add_text(current: &[u8], incr: &[u8]) -> Result<Option<Vec<u8>>, BadOperand> {
    let a = parse(current).ok_or(BadOperand::Current)?;
    let b = parse(incr).ok_or(BadOperand::Increment)?;
    match (a, b) {
        (Parsed::Finite(x), Parsed::Finite(y)) => {
            Ok(x.sum(y).in_range_above().map(Ext::format_human))
        }
        _ => Ok(None),
    }
}

impl Ext {
    /// `Some(self)` unless it overflows `long double` (a sum that
    /// underflows is kept: it prints as `0`).
    fn in_range_above(self) -> Option<Ext> {
        (self.mant == 0 || self.exp + 64 <= MAX_EXP2).then_some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(a: &str, b: &str) -> String {
        String::from_utf8(add_text(a.as_bytes(), b.as_bytes()).unwrap().unwrap()).unwrap()
    }

    #[test]
    fn long_double_range_matches_redis() {
        // Observed from redis-server 7.0.15.
        let big = add("0", "1e308");
        assert!(big.starts_with("99999999999999999996685879655845645660560099847415567207797047994921734868838061872100126921888539320446747225054013223152134749593960583597420814430196418767959100019603190778663109604507106667939153395788938914560543563061268364901618630217086589253444881623791300855757318142424510452728255046343928578048"));
        assert!(add(&big, "1e308")
            .starts_with("199999999999999999993371759311691291321120199694831134415594"));
        assert!(add("0", "3e400").starts_with("2999999999999999999957514251636126551520"));
        assert_eq!(add("3e400", "-3e400"), "0");
        assert!(add("0", "1e4932").starts_with("100000000000000000000601894938"));
        assert_eq!(add_text(b"1e4932", b"1e4932"), Ok(None));
        assert_eq!(add_text(b"0", b"1e4933"), Err(BadOperand::Increment));
        assert_eq!(add_text(b"0", b"1e5000"), Err(BadOperand::Increment));
        assert_eq!(add_text(b"1e-5000", b"0"), Err(BadOperand::Current));
        assert_eq!(add("0", "1e-4940"), "0");
    }

    #[test]
    fn matches_redis_7_incrbyfloat_outputs() {
        // Pairs observed from redis-server 7.0.15.
        for (a, b, want) in [
            ("0.1", "0.2", "0.3"),
            ("1000", "0.1", "1000.09999999999999998"),
            ("10.5", "0.1", "10.6"),
            ("10.6", "5.0e3", "5010.60000000000000009"),
            ("5010.60000000000000009", "0x10", "5026.60000000000000009"),
            ("0", "5.0e3", "5000"),
            ("0", "1e-20", "0"),
            ("0", "123456789.123456789", "123456789.12345678899873747"),
            ("0", "1e20", "100000000000000000000"),
            ("3", "1.1", "4.1"),
            ("0", "-0.0", "0"),
            ("1", "2.2", "3.2"),
            ("0", "1.23456789012345678", "1.23456789012345678"),
            ("0", "100.7", "100.7"),
            ("-1.5", "0.25", "-1.25"),
            ("1e30", "1", "1000000000000000000024696061952"),
            ("0.000001", "0.000002", "0.000003"),
            ("3.14159265358979323846", "0", "3.14159265358979324"),
            ("1", "-1", "0"),
            ("-0.1", "-0.2", "-0.3"),
            ("99999999999999999999", "1", "100000000000000000000"),
            ("0.3", "-0.1", "0.2"),
            ("2.5", "2.5", "5"),
            ("1e-17", "0", "0.00000000000000001"),
            ("5e-18", "0", "0"),
            (
                "0.00000000000000001",
                "0.000000000000000005",
                "0.00000000000000002",
            ),
            ("7", "0.0000000000000000001", "7"),
            ("123.456", "-0.456", "123"),
        ] {
            assert_eq!(add(a, b), want, "{a} + {b}");
        }
    }

    #[test]
    fn parse_rejects_what_strtold_rejects() {
        for bad in [
            "", "abc", "1e", "1e+", "1.2.3", "nan", " 1", "1 ", "0x", "0xg", ".", "-",
        ] {
            assert!(parse(bad.as_bytes()).is_none(), "{bad:?}");
        }
        assert_eq!(parse(b"inf"), Some(Parsed::Inf(false)));
        assert_eq!(parse(b"-Infinity"), Some(Parsed::Inf(true)));
        assert_eq!(add_text(b"1", b"inf"), Ok(None));
        assert!(parse(b".5").is_some());
        assert!(parse(b"5.").is_some());
        assert!(parse(b"1e500").is_some());
        assert!(parse(&[b'1'; 5120]).is_none());
    }
}
