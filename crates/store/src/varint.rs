//! Unsigned LEB128, as the stored formats write counts and lengths (the
//! bitmap summary in a key's meta, member counts and lengths in set
//! pages): seven bits a byte, low bits first, the high bit set on every
//! byte but the last.

/// Why a read failed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The bytes ended inside the number.
    Truncated,
    /// More bytes than the caller allows.
    TooLong,
}

/// Appends `v`.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Bytes [`put`] writes for `v`.
pub(crate) fn len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Reads a number of at most `max_bytes` bytes (10 or fewer) from the
/// front of `b`, moving `b` past it.
///
/// # Errors
/// [`VarintError`]; `b` is then left where the read stopped.
pub(crate) fn get(b: &mut &[u8], max_bytes: usize) -> Result<u64, VarintError> {
    // Most numbers of a summary or a page fit one byte.
    if let Some((&byte, rest)) = b.split_first() {
        if byte < 0x80 && max_bytes > 0 {
            *b = rest;
            return Ok(u64::from(byte));
        }
    }
    let mut v = 0u64;
    for i in 0..max_bytes.min(10) {
        let (&byte, rest) = b.split_first().ok_or(VarintError::Truncated)?;
        *b = rest;
        v |= u64::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(VarintError::TooLong)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_number_reads_back_as_written(v in any::<u64>(), tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut out = Vec::new();
            put(&mut out, v);
            prop_assert_eq!(out.len(), len(v));
            out.extend_from_slice(&tail);
            let mut b = &out[..];
            prop_assert_eq!(get(&mut b, 10), Ok(v));
            prop_assert_eq!(b, &tail[..]);
        }
    }

    #[test]
    fn short_and_overlong_input_is_refused() {
        assert_eq!(get(&mut &[0x80u8][..], 5), Err(VarintError::Truncated));
        assert_eq!(get(&mut &[][..], 5), Err(VarintError::Truncated));
        let six = [0xFFu8, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
        assert_eq!(get(&mut &six[..], 5), Err(VarintError::TooLong));
        assert_eq!(get(&mut &six[..], 6), Ok(0xF_FFFF_FFFF));
    }
}
