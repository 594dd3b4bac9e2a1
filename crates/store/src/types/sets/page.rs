//! Set pages: the members of a set version grouped into few `data`
//! entries, so that a big set costs a few bytes per member beside the
//! member's own bytes, resident and on disk, instead of an entry (a
//! ~30-byte key and its index and allocation overheads) per member.
//!
//! The entries of a set version are *pages*. A page holds one or more
//! members in ascending byte order; its subkey is its **last** (greatest)
//! member, and its value lists the members before that one:
//!
//! ```text
//! empty           the page holds only its subkey (one member; also how
//!                 every set was stored before pages, so older data
//!                 directories read as they are)
//! or
//! byte 0          PAGE_TAG (0x01)
//! then            n, the number of members below the subkey (LEB128, at
//!                 least 1), so that a walk by rank skips a page unread
//! then            those n members, ascending, each as its length (LEB128,
//!                 at most 5 bytes) and its bytes
//! ```
//!
//! Writers keep these invariants, and readers check them (a violation is
//! `Corrupt`, never a panic): the pages of a version cover disjoint member
//! intervals in key order (every member of a page is above the previous
//! page's subkey), so the member `x` is in the first page whose subkey is
//! at or after `x`, or nowhere (one seek); a page's members are strictly
//! ascending and below its subkey; a page's `encoded_len` stays at most
//! [`PAGE_BYTES`] unless it holds one member alone. A member longer than
//! that is always a page of its own, so the longest member stored as a
//! subkey is what it was before pages (the store's key length limit).

use std::cmp::Ordering;
use std::ops::Range;

use crate::error::{Result, StoreError};
use crate::varint;

/// First byte of a non-empty page value.
pub(crate) const PAGE_TAG: u8 = 0x01;

/// A page is split once its members' encoded bytes pass this. Small
/// enough that a write rewrites ~1 KiB, big enough that the per-entry
/// overhead is a few bytes per member.
pub const PAGE_BYTES: usize = 1024;

/// Encoded bytes of one member in a page (length prefix and bytes).
#[must_use]
pub(crate) fn encoded_len(member: &[u8]) -> usize {
    varint::len(member.len() as u64) + member.len()
}

/// Reads a length or count of at most 5 bytes at `*pos`, moving past it.
fn get_varint(value: &[u8], pos: &mut usize) -> Result<usize> {
    let mut rest = value.get(*pos..).unwrap_or_default();
    let n = varint::get(&mut rest, 5);
    *pos = value.len() - rest.len();
    match n {
        Ok(n) => Ok(n as usize),
        Err(varint::VarintError::Truncated) => Err(corrupt("truncated length")),
        Err(varint::VarintError::TooLong) => Err(corrupt("length too long")),
    }
}

/// The member whose length is at `*pos` in a page value, moving past it.
/// A length below 128 (one byte, the usual case) is read inline.
///
/// # Errors
/// `Corrupt` on a bad length or a member past the end.
#[inline]
fn member_at<'a>(value: &'a [u8], pos: &mut usize) -> Result<&'a [u8]> {
    let n = match value.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            usize::from(b)
        }
        _ => get_varint(value, pos)?,
    };
    let end = pos
        .checked_add(n)
        .filter(|&e| e <= value.len())
        .ok_or_else(|| corrupt("member past the end"))?;
    let m = &value[*pos..end];
    *pos = end;
    Ok(m)
}

/// Number of members of a page with this value, read from its header.
///
/// # Errors
/// `Corrupt` on a bad header.
pub(crate) fn count(value: &[u8]) -> Result<u64> {
    Ok(Members::new(&[], value)?.left as u64 + 1)
}

fn corrupt(what: &str) -> StoreError {
    StoreError::corrupt(format!("set page: {what}"))
}

/// The members of the page `(key, value)`, ascending (the value's, then the
/// key).
///
/// # Errors
/// `Corrupt` when the value breaks the format or the invariants.
pub(crate) fn members<'a>(key: &'a [u8], value: &'a [u8]) -> Result<Vec<&'a [u8]>> {
    let mut out = Vec::new();
    for m in Members::new(key, value)? {
        out.push(m?);
    }
    Ok(out)
}

/// True when the page `(key, value)` holds `member`. Reads the value only
/// up to the first member at or above `member`.
///
/// # Errors
/// `Corrupt` as [`members`].
pub(crate) fn contains(key: &[u8], value: &[u8], member: &[u8]) -> Result<bool> {
    // The loop of [`Members`] written out for the one question: no
    // `Option<Result>` per member (a scan reads about twenty members per
    // SISMEMBER).
    let Members {
        mut pos, mut left, ..
    } = Members::new(key, value)?;
    let mut prev: Option<&[u8]> = None;
    while left > 0 {
        left -= 1;
        let m = member_at(value, &mut pos)?;
        if prev.is_some_and(|p| cmp_bytes(p, m) != Ordering::Less) {
            return Err(corrupt("members out of order"));
        }
        match cmp_bytes(m, member) {
            Ordering::Less => {}
            Ordering::Equal => return Ok(true),
            Ordering::Greater => return Ok(false),
        }
        prev = Some(m);
    }
    if pos < value.len() {
        return Err(corrupt("bytes past the last member"));
    }
    if prev.is_some_and(|p| cmp_bytes(p, key) != Ordering::Less) {
        return Err(corrupt("members out of order"));
    }
    Ok(key == member)
}

/// `a.cmp(b)` for short byte strings, eight bytes at a time inline and
/// the last few bytes as one integer (the members a page scan compares
/// share long prefixes, and a call of the C library's `memcmp` per member
/// cost more than the comparison).
#[inline]
fn cmp_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes(a[i..i + 8].try_into().expect("8 bytes"));
        let y = u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    let (x, y) = (tail_be(&a[i..n]), tail_be(&b[i..n]));
    x.cmp(&y).then(a.len().cmp(&b.len()))
}

/// Up to seven bytes as the high bytes of a big-endian integer.
#[inline]
fn tail_be(t: &[u8]) -> u64 {
    t.iter()
        .enumerate()
        .fold(0, |v, (j, &c)| v | u64::from(c) << (56 - 8 * j))
}

/// The page of `members` (ascending, not empty): `(subkey, value)`.
#[must_use]
pub(crate) fn encode<M: AsRef<[u8]>>(members: &[M]) -> (Vec<u8>, Vec<u8>) {
    let (last, rest) = members.split_last().expect("a page has a member");
    let mut value = Vec::new();
    if !rest.is_empty() {
        let bytes: usize = rest.iter().map(|m| encoded_len(m.as_ref())).sum();
        value.reserve_exact(1 + varint::len(rest.len() as u64) + bytes);
        value.push(PAGE_TAG);
        varint::put(&mut value, rest.len() as u64);
        for m in rest {
            let m = m.as_ref();
            varint::put(&mut value, m.len() as u64);
            value.extend_from_slice(m);
        }
    }
    (last.as_ref().to_vec(), value)
}

/// How `members` (ascending) are cut into pages: index ranges in order.
/// One page while their encoded bytes are at most [`PAGE_BYTES`]; else
/// pages of about three quarters of it each, so that a split page has room
/// for later members before it splits again. A member over
/// [`PAGE_BYTES`] is a page of its own.
#[must_use]
pub(crate) fn cut<M: AsRef<[u8]>>(members: &[M]) -> Vec<Range<usize>> {
    let total: usize = members.iter().map(|m| encoded_len(m.as_ref())).sum();
    let mut out = Vec::new();
    if total <= PAGE_BYTES || members.len() <= 1 {
        out.push(0..members.len());
        return out;
    }
    let target = total / total.div_ceil(PAGE_BYTES * 3 / 4);
    let mut start = 0;
    let mut bytes = 0;
    for (i, m) in members.iter().enumerate() {
        let len = encoded_len(m.as_ref());
        if i > start && (bytes + len > PAGE_BYTES || bytes >= target || len > PAGE_BYTES) {
            out.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes += len;
    }
    out.push(start..members.len());
    out
}

/// The members of a page, ascending, checked as they are read.
pub struct Members<'a> {
    key: &'a [u8],
    value: &'a [u8],
    pos: usize,
    /// Members of the value not yet read.
    left: usize,
    prev: Option<&'a [u8]>,
    done: bool,
}

impl<'a> Members<'a> {
    /// # Errors
    /// `Corrupt` when a non-empty value lacks the tag.
    pub fn new(key: &'a [u8], value: &'a [u8]) -> Result<Self> {
        let (pos, left) = match value.first() {
            None => (0, 0),
            Some(&PAGE_TAG) => {
                let mut pos = 1;
                let left = get_varint(value, &mut pos)?;
                // Each member takes at least its length byte.
                if left == 0 || left > value.len() - pos {
                    return Err(corrupt("bad member count"));
                }
                (pos, left)
            }
            Some(t) => return Err(corrupt(&format!("unknown tag {t:#04x}"))),
        };
        Ok(Members {
            key,
            value,
            pos,
            left,
            prev: None,
            done: false,
        })
    }

    fn next_in_value(&mut self) -> Result<&'a [u8]> {
        member_at(self.value, &mut self.pos)
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = Result<&'a [u8]>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let m = if self.left > 0 {
            self.left -= 1;
            match self.next_in_value() {
                Ok(m) => m,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        } else if self.pos < self.value.len() {
            self.done = true;
            return Some(Err(corrupt("bytes past the last member")));
        } else {
            self.done = true;
            self.key
        };
        if self.prev.is_some_and(|p| cmp_bytes(p, m) != Ordering::Less) {
            self.done = true;
            return Some(Err(corrupt("members out of order")));
        }
        self.prev = Some(m);
        Some(Ok(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(ms: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
        encode(ms)
    }

    #[test]
    fn a_page_lists_its_members_with_the_last_as_its_key() {
        let (k, v) = page(&[b"a", b"bb", b"ccc"]);
        assert_eq!(k, b"ccc");
        assert_eq!(v, [PAGE_TAG, 2, 1, b'a', 2, b'b', b'b']);
        assert_eq!(count(&v).unwrap(), 3);
        assert_eq!(count(&[]).unwrap(), 1);
        assert_eq!(members(&k, &v).unwrap(), vec![&b"a"[..], b"bb", b"ccc"]);
        for (m, want) in [
            (&b"a"[..], true),
            (b"b", false),
            (b"bb", true),
            (b"ccc", true),
            (b"d", false),
            (b"", false),
        ] {
            assert_eq!(contains(&k, &v, m).unwrap(), want, "{m:?}");
        }
    }

    #[test]
    fn a_one_member_page_is_its_key_alone_as_entries_were_before_pages() {
        let (k, v) = page(&[b"x"]);
        assert_eq!((k.as_slice(), v.as_slice()), (&b"x"[..], &b""[..]));
        assert_eq!(
            members(b"old-member", b"").unwrap(),
            vec![&b"old-member"[..]]
        );
        // The empty member is a member like any other.
        let (k, v) = page(&[b"", b"z"]);
        assert_eq!(members(&k, &v).unwrap(), vec![&b""[..], b"z"]);
    }

    #[test]
    fn cmp_bytes_orders_as_slices_do() {
        let words: [&[u8]; 9] = [
            b"",
            b"a",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
            b"abcdefghabcdefgh",
            b"abcdefghabcdefgi",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
            b"mbr:000000000001",
        ];
        for a in words {
            for b in words {
                assert_eq!(cmp_bytes(a, b), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn long_members_take_multi_byte_lengths() {
        let long = vec![b'q'; 300];
        let (k, v) = page(&[&long[..], b"r"]);
        assert_eq!(&v[1..4], &[1, 0xac, 0x02]);
        assert_eq!(members(&k, &v).unwrap(), vec![&long[..], b"r"]);
    }

    #[test]
    fn hostile_values_are_corrupt_not_panics() {
        let cases: [&[u8]; 10] = [
            &[0x02, 1, 1, b'a'],                                // unknown tag
            &[PAGE_TAG, 1, 5, b'a'],                            // past the end
            &[PAGE_TAG, 1, 0x80],                               // truncated length
            &[PAGE_TAG, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // length too long
            &[PAGE_TAG, 2, 1, b'b', 1, b'a'],                   // out of order
            &[PAGE_TAG, 1, 1, b'z'],                            // not below the key
            &[PAGE_TAG, 0, 1, b'a'],                            // no member
            &[PAGE_TAG, 9, 1, b'a'],                            // more members than bytes
            &[PAGE_TAG, 1, 1, b'a', 1, b'b'],                   // bytes past the count
            &[PAGE_TAG],                                        // truncated count
        ];
        for v in cases {
            assert!(members(b"k", v).is_err(), "{v:?}");
        }
        assert!(contains(b"k", &[PAGE_TAG, 2, 1, b'b', 1, b'a'], b"c").is_err());
        assert!(count(&[PAGE_TAG, 0x80]).is_err());
    }

    #[test]
    fn cut_keeps_pages_under_the_bound_and_long_members_alone() {
        let ms: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| format!("member-{i:09}").into_bytes())
            .collect();
        let pages = cut(&ms);
        assert!(pages.len() > 1);
        let mut next = 0;
        for r in &pages {
            assert_eq!(r.start, next);
            next = r.end;
            let bytes: usize = ms[r.clone()].iter().map(|m| encoded_len(m)).sum();
            assert!(bytes <= PAGE_BYTES, "{bytes}");
            assert!(bytes >= PAGE_BYTES / 2, "{bytes}");
        }
        assert_eq!(next, ms.len());
        let small = vec![b"a".to_vec(), b"b".to_vec()];
        assert_eq!(cut(&small).len(), 1);
        assert_eq!(cut(&small)[0], 0..2);
        let big = vec![b"a".to_vec(), vec![b'b'; 5000], b"c".to_vec()];
        assert_eq!(cut(&big), vec![0..1, 1..2, 2..3]);
    }
}
