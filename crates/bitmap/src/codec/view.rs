//! Checked views over untrusted container bytes.
//!
//! [`ContainerView::parse`] validates length, version, kind, ordering and
//! cardinality, at any alignment, and never panics. When the payload is
//! suitably aligned (2 bytes for arrays and runs, 8 for bitsets) the view
//! borrows it; otherwise it holds an aligned copy. Either way
//! [`ContainerView::as_ref`] gives the typed [`ContainerRef`] every operation takes.

use super::{read_u16, FormatError, Kind, ARRAY_MAX, BITSET_BYTES, BITSET_WORDS, HEADER_LEN};
use crate::container::{run, ContainerBuf, ContainerRef};

/// A validated container over borrowed (or, when misaligned, copied) bytes.
#[derive(Clone, Debug)]
pub struct ContainerView<'a> {
    inner: Inner<'a>,
}

#[derive(Clone, Debug)]
enum Inner<'a> {
    Borrowed(ContainerRef<'a>),
    Copied(ContainerBuf),
}

impl<'a> ContainerView<'a> {
    /// Validates `bytes` as one container.
    ///
    /// # Errors
    /// - [`FormatError::Truncated`] / [`FormatError::TrailingBytes`]: length does not match the header;
    /// - [`FormatError::UnsupportedVersion`], [`FormatError::UnknownKind`]: bad tag byte;
    /// - [`FormatError::BadCardinality`]: array above 4,096, bitset at or below 4,096, empty run
    ///   or bitset, or above 65,536;
    /// - [`FormatError::NotAscending`], [`FormatError::RunOverflow`]: bad ordering;
    /// - [`FormatError::CardinalityMismatch`]: header cardinality differs from the payload.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        Self::parse_with(bytes, true)
    }

    /// Views bytes that already passed [`ContainerView::parse`] in this
    /// process (or are a [`ContainerBuf`]'s own encoding), checking only
    /// what is O(1): header, kind, cardinality bounds and exact length.
    /// The O(n) checks (ascending values, run overlap, the bitset's
    /// popcount against its header) are skipped. Meant for an in-process
    /// cache whose entries were validated once when they entered it.
    ///
    /// # Errors
    /// As [`ContainerView::parse`], for the checks it still makes.
    ///
    /// # Safety
    /// `bytes` must satisfy every invariant [`ContainerView::parse`]
    /// checks: the vector kernels rely on sorted arrays, non-overlapping
    /// runs and exact cardinalities.
    pub unsafe fn parse_prevalidated(bytes: &'a [u8]) -> Result<Self, FormatError> {
        Self::parse_with(bytes, false)
    }

    /// [`ContainerView::parse`] with the O(n) checks only when `deep`.
    fn parse_with(bytes: &'a [u8], deep: bool) -> Result<Self, FormatError> {
        if bytes.len() < HEADER_LEN {
            return Err(FormatError::Truncated {
                needed: HEADER_LEN,
                got: bytes.len(),
            });
        }
        let tag = bytes[0];
        if tag >> 4 != super::FORMAT_VERSION {
            return Err(FormatError::UnsupportedVersion(tag >> 4));
        }
        let kind = Kind::from_code(tag & 0xF).ok_or(FormatError::UnknownKind(tag & 0xF))?;
        let card = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], 0]);
        let payload = &bytes[HEADER_LEN..];
        let exact = |expected: usize| -> Result<(), FormatError> {
            let expected = HEADER_LEN + expected;
            match bytes.len().cmp(&expected) {
                core::cmp::Ordering::Less => Err(FormatError::Truncated {
                    needed: expected,
                    got: bytes.len(),
                }),
                core::cmp::Ordering::Greater => Err(FormatError::TrailingBytes {
                    expected,
                    got: bytes.len(),
                }),
                core::cmp::Ordering::Equal => Ok(()),
            }
        };
        let inner = match kind {
            Kind::Array => {
                if card as usize > ARRAY_MAX {
                    return Err(FormatError::BadCardinality { kind, card });
                }
                exact(2 * card as usize)?;
                match bytemuck::try_cast_slice::<u8, u16>(payload) {
                    Ok(values) => {
                        if deep {
                            check_ascending(values)?;
                        }
                        Inner::Borrowed(ContainerRef::Array(values))
                    }
                    Err(_) => {
                        let values: Vec<u16> = (0..card as usize)
                            .map(|i| read_u16(payload, 2 * i))
                            .collect();
                        if deep {
                            check_ascending(&values)?;
                        }
                        Inner::Copied(ContainerBuf::from_array_unchecked(&values))
                    }
                }
            }
            Kind::Bitset => {
                if card as usize <= ARRAY_MAX || card > 65536 {
                    return Err(FormatError::BadCardinality { kind, card });
                }
                exact(BITSET_BYTES)?;
                let check = |words: &[u64]| -> Result<(), FormatError> {
                    if !deep {
                        return Ok(());
                    }
                    let actual = (crate::kernels::get().popcount)(words);
                    if actual != card as u64 {
                        return Err(FormatError::CardinalityMismatch {
                            stored: card as u64,
                            actual,
                        });
                    }
                    Ok(())
                };
                match bytemuck::try_cast_slice::<u8, u64>(payload) {
                    Ok(words) => {
                        check(words)?;
                        let words: &[u64; BITSET_WORDS] =
                            words.try_into().map_err(|_| FormatError::Truncated {
                                needed: HEADER_LEN + BITSET_BYTES,
                                got: bytes.len(),
                            })?;
                        Inner::Borrowed(ContainerRef::Bitset { words, card })
                    }
                    Err(_) => {
                        let mut words = [0u64; BITSET_WORDS];
                        for (i, w) in words.iter_mut().enumerate() {
                            *w = super::read_u64(payload, 8 * i);
                        }
                        check(&words)?;
                        Inner::Copied(ContainerBuf::from_words_unchecked(&words, card))
                    }
                }
            }
            Kind::Run => {
                if card == 0 || card > 65536 {
                    return Err(FormatError::BadCardinality { kind, card });
                }
                if payload.len() < 2 {
                    return Err(FormatError::Truncated {
                        needed: HEADER_LEN + 2,
                        got: bytes.len(),
                    });
                }
                let n = read_u16(payload, 0) as usize;
                if n == 0 {
                    return Err(FormatError::BadCardinality { kind, card: 0 });
                }
                exact(2 + 4 * n)?;
                let pairs = &payload[2..];
                match bytemuck::try_cast_slice::<u8, [u16; 2]>(pairs) {
                    Ok(runs) => {
                        if deep {
                            check_runs(runs, card)?;
                        }
                        Inner::Borrowed(ContainerRef::Run { runs, card })
                    }
                    Err(_) => {
                        let runs: Vec<[u16; 2]> = (0..n)
                            .map(|i| [read_u16(pairs, 4 * i), read_u16(pairs, 4 * i + 2)])
                            .collect();
                        if deep {
                            check_runs(&runs, card)?;
                        }
                        Inner::Copied(ContainerBuf::from_runs_unchecked(&runs, card))
                    }
                }
            }
        };
        Ok(ContainerView { inner })
    }

    /// The typed container.
    #[inline]
    pub fn as_ref(&self) -> ContainerRef<'_> {
        match &self.inner {
            Inner::Borrowed(r) => *r,
            Inner::Copied(c) => c.as_ref(),
        }
    }

    /// An owned copy.
    pub fn to_buf(&self) -> ContainerBuf {
        match &self.inner {
            Inner::Borrowed(r) => r.to_buf(),
            Inner::Copied(c) => c.clone(),
        }
    }

    /// True when the view borrows the input bytes (no copy was needed).
    pub fn is_borrowed(&self) -> bool {
        matches!(self.inner, Inner::Borrowed(_))
    }
}

fn check_ascending(values: &[u16]) -> Result<(), FormatError> {
    match values.windows(2).position(|w| w[0] >= w[1]) {
        Some(i) => Err(FormatError::NotAscending { index: i + 1 }),
        None => Ok(()),
    }
}

fn check_runs(runs: &[[u16; 2]], card: u32) -> Result<(), FormatError> {
    let mut total = 0u64;
    let mut prev_end: Option<u32> = None;
    for (i, r) in runs.iter().enumerate() {
        let end = r[0] as u32 + r[1] as u32;
        if end > 65535 {
            return Err(FormatError::RunOverflow { index: i });
        }
        if let Some(p) = prev_end {
            // Runs must be ascending and separated by at least one absent value.
            if (r[0] as u32) <= p + 1 {
                return Err(FormatError::NotAscending { index: i });
            }
        }
        prev_end = Some(end);
        total += r[1] as u64 + 1;
    }
    if total != card as u64 {
        return Err(FormatError::CardinalityMismatch {
            stored: card as u64,
            actual: total,
        });
    }
    debug_assert_eq!(run::cardinality(runs) as u64, total);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn containers() -> Vec<ContainerBuf> {
        let array: Vec<u16> = (0..100).map(|i| i * 7).collect();
        let bitset: Vec<u16> = (0..5000).map(|i| i * 13).collect();
        vec![
            ContainerBuf::from_sorted(&array),
            ContainerBuf::from_sorted(&bitset),
            ContainerBuf::from_range(10, 20_000),
        ]
    }

    #[test]
    fn prevalidated_views_match_checked_views() {
        for c in containers() {
            let bytes = c.as_bytes();
            let checked = ContainerView::parse(bytes).unwrap();
            // SAFETY: `bytes` is a ContainerBuf's own encoding.
            let quick = unsafe { ContainerView::parse_prevalidated(bytes) }.unwrap();
            assert_eq!(checked.to_buf(), quick.to_buf());
            assert_eq!(checked.is_borrowed(), quick.is_borrowed());
        }
    }

    #[test]
    fn prevalidated_views_still_check_the_structure() {
        for c in containers() {
            let bytes = c.as_bytes();
            for cut in [0, 1, HEADER_LEN, bytes.len() - 1] {
                // SAFETY: a truncated encoding fails the length check before
                // any payload is viewed.
                assert!(unsafe { ContainerView::parse_prevalidated(&bytes[..cut]) }.is_err());
            }
            let mut longer = bytes.to_vec();
            longer.push(0);
            // SAFETY: as above, trailing bytes fail the length check.
            assert!(unsafe { ContainerView::parse_prevalidated(&longer) }.is_err());
            let mut bad_kind = bytes.to_vec();
            bad_kind[0] = (bad_kind[0] & 0xF0) | 0xF;
            // SAFETY: an unknown kind is refused before the payload is viewed.
            assert!(unsafe { ContainerView::parse_prevalidated(&bad_kind) }.is_err());
        }
    }
}
