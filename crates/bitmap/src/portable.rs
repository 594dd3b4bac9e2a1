//! The portable Roaring serialization format (the one the C, Java, Go and
//! Python libraries exchange), 32-bit and 64-bit, import and export.
//!
//! 32-bit layout (all little-endian):
//! ```text
//! cookie u32: 12346, then u32 container count n          (no run containers)
//!          or 12347 | (n-1) << 16, then ceil(n/8) bytes run-flag bitset
//! n × (u16 high key, u16 cardinality-1)
//! n × u32 byte offset of each container (omitted when runs are present and n < 4)
//! containers: array = card × u16; bitset = 1024 × u64; run = u16 count, count × (start, length-1)
//! ```
//! 64-bit: u64 count of 32-bit buckets, then per bucket u32 high key and a 32-bit bitmap.
//!
//! Import validates everything (cookie, counts, key order, value order,
//! cardinalities, offsets) and returns an error, never panics; containers are
//! normalized on the way in, so runs survive only where strictly smaller.

use crate::bitmap::Bitmap;
use crate::bitmap64::Bitmap64;
use crate::codec::{read_u16, read_u32, FormatError, BITSET_WORDS};
use crate::container::{ContainerBuf, ContainerRef};

const COOKIE_NO_RUN: u32 = 12346;
const COOKIE_RUN: u32 = 12347;
const NO_OFFSET_THRESHOLD: usize = 4;

fn need(bytes: &[u8], at: usize, n: usize) -> Result<(), FormatError> {
    if bytes.len() < at + n {
        Err(FormatError::Truncated {
            needed: at + n,
            got: bytes.len(),
        })
    } else {
        Ok(())
    }
}

fn payload_len(c: ContainerRef<'_>) -> usize {
    c.stat_bytes()
}

impl Bitmap {
    /// Size of [`Bitmap::serialize_portable`]'s output.
    pub fn portable_size(&self) -> usize {
        let n = self.keys.len();
        let has_run = self.containers.iter().any(|c| c.kind() == crate::Kind::Run);
        let mut size = if has_run { 4 + n.div_ceil(8) } else { 8 };
        size += 4 * n;
        if !has_run || n >= NO_OFFSET_THRESHOLD {
            size += 4 * n;
        }
        size + self
            .containers
            .iter()
            .map(|c| payload_len(c.as_ref()))
            .sum::<usize>()
    }

    /// Writes the portable format (readable by CRoaring, Java, Go and Python Roaring).
    pub fn serialize_portable(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.portable_size());
        self.serialize_portable_into(&mut out);
        out
    }

    /// Appends the portable format to `out`.
    pub fn serialize_portable_into(&self, out: &mut Vec<u8>) {
        let base = out.len();
        let n = self.keys.len();
        let has_run = self.containers.iter().any(|c| c.kind() == crate::Kind::Run);
        if has_run {
            out.extend_from_slice(&(COOKIE_RUN | (((n - 1) as u32) << 16)).to_le_bytes());
            let mut flags = vec![0u8; n.div_ceil(8)];
            for (i, c) in self.containers.iter().enumerate() {
                if c.kind() == crate::Kind::Run {
                    flags[i / 8] |= 1 << (i % 8);
                }
            }
            out.extend_from_slice(&flags);
        } else {
            out.extend_from_slice(&COOKIE_NO_RUN.to_le_bytes());
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        for (k, c) in self.containers() {
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(&((c.cardinality() - 1) as u16).to_le_bytes());
        }
        if !has_run || n >= NO_OFFSET_THRESHOLD {
            let mut offset = out.len() - base + 4 * n;
            for c in &self.containers {
                out.extend_from_slice(&(offset as u32).to_le_bytes());
                offset += payload_len(c.as_ref());
            }
        }
        for c in &self.containers {
            let b = c.as_bytes();
            // The payload after our 4-byte header is exactly the portable payload.
            out.extend_from_slice(&b[crate::codec::HEADER_LEN..]);
        }
    }

    /// Reads the portable format; the whole input must be one bitmap.
    ///
    /// # Errors
    /// Any [`FormatError`]; trailing bytes are an error.
    pub fn deserialize_portable(bytes: &[u8]) -> Result<Bitmap, FormatError> {
        let (b, used) = Self::deserialize_portable_prefix(bytes)?;
        if used != bytes.len() {
            return Err(FormatError::TrailingBytes {
                expected: used,
                got: bytes.len(),
            });
        }
        Ok(b)
    }

    /// Reads one portable bitmap from the front of `bytes`; returns it and the bytes used.
    ///
    /// # Errors
    /// Any [`FormatError`].
    pub fn deserialize_portable_prefix(bytes: &[u8]) -> Result<(Bitmap, usize), FormatError> {
        need(bytes, 0, 4)?;
        let cookie = read_u32(bytes, 0);
        let mut at = 4;
        let (n, run_flags) = if cookie & 0xFFFF == COOKIE_RUN {
            let n = (cookie >> 16) as usize + 1;
            let fl = n.div_ceil(8);
            need(bytes, at, fl)?;
            let flags = &bytes[at..at + fl];
            at += fl;
            (n, Some(flags))
        } else if cookie == COOKIE_NO_RUN {
            need(bytes, at, 4)?;
            let n = read_u32(bytes, at) as usize;
            at += 4;
            if n > 65536 {
                return Err(FormatError::BadLayout("more than 65,536 containers"));
            }
            (n, None)
        } else {
            return Err(FormatError::BadCookie(cookie));
        };
        need(bytes, at, 4 * n)?;
        let desc = at;
        at += 4 * n;
        let offsets = if run_flags.is_none() || n >= NO_OFFSET_THRESHOLD {
            need(bytes, at, 4 * n)?;
            let o = at;
            at += 4 * n;
            Some(o)
        } else {
            None
        };
        let mut b = Bitmap::new();
        b.keys.reserve(n);
        b.containers.reserve(n);
        for i in 0..n {
            let key = read_u16(bytes, desc + 4 * i);
            let card = read_u16(bytes, desc + 4 * i + 2) as u32 + 1;
            if b.keys.last().is_some_and(|&k| k >= key) {
                return Err(FormatError::NotAscending { index: i });
            }
            if let Some(o) = offsets {
                if read_u32(bytes, o + 4 * i) as usize != at {
                    return Err(FormatError::BadLayout(
                        "container offset does not match layout",
                    ));
                }
            }
            let is_run = run_flags.is_some_and(|f| f[i / 8] >> (i % 8) & 1 == 1);
            let mut c = if is_run {
                need(bytes, at, 2)?;
                let r = read_u16(bytes, at) as usize;
                need(bytes, at + 2, 4 * r)?;
                let runs: Vec<[u16; 2]> = (0..r)
                    .map(|j| {
                        [
                            read_u16(bytes, at + 2 + 4 * j),
                            read_u16(bytes, at + 4 + 4 * j),
                        ]
                    })
                    .collect();
                at += 2 + 4 * r;
                let mut enc = Vec::with_capacity(6 + 4 * r);
                ContainerRef::Run { runs: &runs, card }.write_to(&mut enc);
                ContainerBuf::from_bytes(&enc)?
            } else if card as usize <= crate::codec::ARRAY_MAX {
                need(bytes, at, 2 * card as usize)?;
                let mut enc = Vec::with_capacity(4 + 2 * card as usize);
                enc.extend_from_slice(
                    &crate::codec::pack_header(crate::Kind::Array, card).to_le_bytes(),
                );
                enc.extend_from_slice(&bytes[at..at + 2 * card as usize]);
                at += 2 * card as usize;
                ContainerBuf::from_bytes(&enc)?
            } else {
                need(bytes, at, 8 * BITSET_WORDS)?;
                let mut enc = Vec::with_capacity(4 + 8 * BITSET_WORDS);
                enc.extend_from_slice(
                    &crate::codec::pack_header(crate::Kind::Bitset, card).to_le_bytes(),
                );
                enc.extend_from_slice(&bytes[at..at + 8 * BITSET_WORDS]);
                at += 8 * BITSET_WORDS;
                ContainerBuf::from_bytes(&enc)?
            };
            c.normalize();
            b.keys.push(key);
            b.containers.push(c);
        }
        Ok((b, at))
    }
}

impl Bitmap64 {
    /// Size of [`Bitmap64::serialize_portable`]'s output.
    pub fn portable_size(&self) -> usize {
        8 + self
            .buckets()
            .map(|(_, b)| 4 + b.portable_size())
            .sum::<usize>()
    }

    /// Writes the 64-bit portable format (CRoaring `roaring64` / Java `Roaring64NavigableMap` portable).
    pub fn serialize_portable(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.portable_size());
        out.extend_from_slice(&(self.bucket_count() as u64).to_le_bytes());
        for (k, b) in self.buckets() {
            out.extend_from_slice(&k.to_le_bytes());
            b.serialize_portable_into(&mut out);
        }
        out
    }

    /// Reads the 64-bit portable format; the whole input must be one bitmap.
    ///
    /// # Errors
    /// Any [`FormatError`]; buckets must be strictly ascending; trailing bytes are an error.
    pub fn deserialize_portable(bytes: &[u8]) -> Result<Bitmap64, FormatError> {
        need(bytes, 0, 8)?;
        let mut nb = [0u8; 8];
        nb.copy_from_slice(&bytes[..8]);
        let n = u64::from_le_bytes(nb);
        if n > 1 << 32 {
            return Err(FormatError::BadLayout("more than 2^32 buckets"));
        }
        let mut at = 8;
        let mut out = Bitmap64::new();
        let mut last: Option<u32> = None;
        for i in 0..n as usize {
            need(bytes, at, 4)?;
            let key = read_u32(bytes, at);
            at += 4;
            if last.is_some_and(|l| l >= key) {
                return Err(FormatError::NotAscending { index: i });
            }
            last = Some(key);
            let (b, used) = Bitmap::deserialize_portable_prefix(&bytes[at..])?;
            at += used;
            out.set_bucket(key, b);
        }
        if at != bytes.len() {
            return Err(FormatError::TrailingBytes {
                expected: at,
                got: bytes.len(),
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{assert_matches, bitmap_and_model, cases};
    use crate::{Bitmap, Bitmap64};
    use croaring::Portable;
    use proptest::prelude::*;

    fn cfg() -> ProptestConfig {
        ProptestConfig {
            cases: cases(64),
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    proptest! {
        #![proptest_config(cfg())]

        #[test]
        fn croaring_reads_our_portable_bytes((b, m) in bitmap_and_model()) {
            let bytes = b.serialize_portable();
            let c = croaring::Bitmap::try_deserialize::<Portable>(&bytes).expect("croaring accepts");
            prop_assert_eq!(c.cardinality(), m.len() as u64);
            prop_assert!(c.iter().eq(m.iter().copied()));
        }

        #[test]
        fn we_read_croaring_portable_bytes_with_the_same_size((b, m) in bitmap_and_model(), optimize in any::<bool>()) {
            let values: Vec<u32> = m.iter().copied().collect();
            let mut c = croaring::Bitmap::of(&values);
            let mut ours = Bitmap::from_sorted(&values);
            if optimize {
                c.run_optimize();
                ours.optimize();
            }
            let bytes = c.serialize::<Portable>();
            let back = Bitmap::deserialize_portable(&bytes).unwrap();
            assert_matches(&back, &m);
            prop_assert_eq!(back, ours.clone());
            prop_assert_eq!(ours.portable_size(), bytes.len());
            prop_assert_eq!(ours.serialize_portable(), bytes);
            let _ = b;
        }

        #[test]
        fn portable64_round_trips_with_croaring(values in prop::collection::vec(
            prop_oneof![any::<u64>(), (0u64..4, any::<u32>()).prop_map(|(h, l)| (h << 32) | l as u64),
                        (0u64..3).prop_map(|d| u64::MAX - d)], 0..300)) {
            let ours = Bitmap64::from_unsorted(&values);
            let mut sorted = values.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert!(ours.iter().eq(sorted.iter().copied()));
            let bytes = ours.serialize_portable();
            prop_assert_eq!(bytes.len(), ours.portable_size());
            let c = croaring::Bitmap64::try_deserialize::<Portable>(&bytes).expect("croaring accepts");
            prop_assert!(c.iter().eq(sorted.iter().copied()));
            let theirs = c.serialize::<Portable>();
            let back = Bitmap64::deserialize_portable(&theirs).unwrap();
            back.validate().unwrap();
            prop_assert_eq!(back, ours);
        }
    }

    #[test]
    fn empty_and_hostile_inputs() {
        let e = Bitmap::new().serialize_portable();
        assert_eq!(e, croaring::Bitmap::new().serialize::<Portable>());
        assert!(Bitmap::deserialize_portable(&e).unwrap().is_empty());
        for bad in [
            &[][..],
            &[0x3a, 0x30],
            &[0x3b, 0x30, 0xff, 0xff],
            &[0x3a, 0x30, 0, 0, 1, 0, 0, 0],
        ] {
            assert!(Bitmap::deserialize_portable(bad).is_err());
        }
        let mut b = Bitmap::from_sorted(&[1, 2, 3, 70000]);
        let mut bytes = b.serialize_portable();
        bytes.push(0);
        assert!(Bitmap::deserialize_portable(&bytes).is_err());
        b.optimize();
        let bytes = b.serialize_portable();
        for cut in 0..bytes.len() {
            assert!(Bitmap::deserialize_portable(&bytes[..cut]).is_err());
        }
    }
}
