//! Packed pages: the containers of a key version grouped into few `data`
//! entries, so that a sparse bitmap is a handful of entries rather than
//! one per container (a key of 100 random bits over [0, 10^7) is one entry
//! of about 800 bytes instead of 100 entries of 6 bytes under 30-byte keys).
//!
//! An entry under a key version's data prefix with a 2-byte subkey `k`
//! holds either
//! - one container of block `k`, as the container format has it (a *single*;
//!   the only layout before pages, so older data directories read as is), or
//! - a *page*: two or more containers, each under [`STANDALONE_BYTES`], of
//!   ascending blocks whose last is `k`:
//!
//! ```text
//! byte 0      PAGE_TAG (0x20: format 2 in the high nibble, which a container
//!             parser of format 1 refuses as an unsupported version)
//! byte 1      0
//! bytes 2..4  n, the number of containers, u16 LE (2..=MAX_CONTAINERS)
//! then        n blocks, u16 LE, strictly ascending, the last equal to k
//! then        the n containers, concatenated, each as a 2-byte head and the
//!             container format's payload: head u16 LE = kind << 14 | count - 1,
//!             kind 0 = array (count = values, then the values u16 LE),
//!             kind 2 = run (count = runs, then (start, length - 1) u16 LE each)
//! ```
//!
//! The 2-byte head stands for the container format's 4-byte header (tag and
//! cardinality), which a read rebuilds: a sparse key's containers hold a
//! value or two, so that header was half of each. A page holds no bitset
//! (8 KiB, always a single).
//!
//! Writers keep these invariants, and readers check them (a violation is
//! `Corrupt`, never a panic): the entries of a key version cover disjoint
//! block intervals in key order (an entry's blocks all lie above the
//! previous entry's key), so the container of block `b` is in the first
//! entry whose key is at or after `b`, or nowhere; a container of
//! [`STANDALONE_BYTES`] or more is a single; every data subkey is a block
//! (2 bytes: delta entries of earlier formats are folded at open, see
//! [`super::delta`]); a page's bytes stay under
//! [`PAGE_BYTES`] unless one container alone passes it.

use std::collections::VecDeque;

use crate::error::{Result, StoreError};
use crate::kv::WholeEntry;
use crate::meta::{KeyMeta, Summary};

/// First byte of a page (a container's first byte is `0x10..=0x12`).
pub(super) const PAGE_TAG: u8 = 0x20;

/// Bytes before a page's block list.
const HEADER: usize = 4;

/// Containers from this size on are stored as singles; smaller ones share
/// pages.
pub const STANDALONE_BYTES: usize = 512;

/// A page is closed once adding the next container would pass this many
/// bytes (header, blocks and containers).
pub const PAGE_BYTES: usize = 2048;

// A page of one key's only entry fits inline in its meta (`meta::INLINE_MAX`).
const _: () = assert!(PAGE_BYTES <= crate::meta::INLINE_MAX);

/// Most containers one page holds.
pub const MAX_CONTAINERS: usize = 255;

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("bitmap page: {what}"))
}

/// True when an entry's value is a page (not a single container).
#[must_use]
pub(super) fn is_page(value: &[u8]) -> bool {
    value.first() == Some(&PAGE_TAG)
}

/// Kind code of an array in a page's container head.
const HEAD_ARRAY: u16 = 0;
/// Kind code of a run container in a page's container head.
const HEAD_RUN: u16 = 2;

/// The container at the start of `b` (a page's compact form) in the
/// container format; `None` when its head is not a page container's or
/// the bytes are too short. The container itself is
/// checked by its reader ([`super::bytes::view`]).
fn expand(b: &[u8]) -> Option<Vec<u8>> {
    let head = u16::from_le_bytes([*b.first()?, *b.get(1)?]);
    let count = usize::from(head & 0x3FFF) + 1;
    let (tag, payload, card) = match head >> 14 {
        HEAD_ARRAY => (0x10u8, b.get(2..2 + 2 * count)?, count),
        HEAD_RUN => {
            let runs = b.get(2..2 + 4 * count)?;
            let card = runs
                .chunks_exact(4)
                .map(|r| usize::from(u16::from_le_bytes([r[2], r[3]])) + 1)
                .sum();
            (0x12, runs, card)
        }
        _ => return None,
    };
    let card = u32::try_from(card).ok().filter(|&c| c <= 65_536)?;
    let mut full = Vec::with_capacity(6 + payload.len());
    full.push(tag);
    full.extend_from_slice(&card.to_le_bytes()[..3]);
    if tag == 0x12 {
        full.extend_from_slice(&(count as u16).to_le_bytes());
    }
    full.extend_from_slice(payload);
    Some(full)
}

/// Appends container `c` (the container format: an array or a run
/// container under [`STANDALONE_BYTES`], as writers pass) to `out` in a
/// page's compact form.
fn compact(c: &[u8], out: &mut Vec<u8>) {
    if c.first().map(|t| t & 0xF) == Some(2) && c.len() >= 6 {
        let runs = u16::from_le_bytes([c[4], c[5]]);
        out.extend_from_slice(&((HEAD_RUN << 14) | (runs.max(1) - 1)).to_le_bytes());
        out.extend_from_slice(&c[6..]);
    } else {
        let card = (c.len().saturating_sub(4) / 2).max(1) - 1;
        out.extend_from_slice(&((HEAD_ARRAY << 14) | card as u16).to_le_bytes());
        out.extend_from_slice(c.get(4..).unwrap_or(&[]));
    }
}

/// Bytes container `c` (the container format) takes in a page.
fn compact_len(c: &[u8]) -> usize {
    if c.first().map(|t| t & 0xF) == Some(2) {
        c.len().saturating_sub(4)
    } else {
        c.len().saturating_sub(2)
    }
}

/// Containers as `(block, bytes in the container format)`, ascending.
pub(super) type Containers = Vec<(u16, Vec<u8>)>;

/// The containers of an entry (key block `key`, value `value`) as
/// `(block, container bytes)`, ascending, in the container format: the
/// single itself, or a page's containers.
///
/// # Errors
/// `Corrupt` when a page breaks its layout (see the module docs).
pub(super) fn containers(key: u16, value: &[u8]) -> Result<Containers> {
    if !is_page(value) {
        return Ok(vec![(key, value.to_vec())]);
    }
    let mut at = Vec::new();
    walk(key, value, |b, off| at.push((b, off)))?;
    at.into_iter()
        .map(|(b, off)| Ok((b, container_at(value, off)?)))
        .collect()
}

/// The one entry that may hold all of the data of the key with meta value
/// `meta`, for a bitmap (`Kv::warm` reads it by one point read): the
/// entry ending at the block of the largest bit (a version's last entry
/// always does), which holds it all when it holds as many containers as
/// the summary counts (checked whole, as [`containers`] reads it). `None`
/// for another type, a bitmap without data, or a meta that does not
/// decode (the scan then meets it).
#[must_use]
pub(crate) fn whole_entry(meta: &[u8]) -> Option<WholeEntry> {
    let m = KeyMeta::decode(meta).ok()?;
    let Summary::Bitmap(s) = m.summary else {
        return None;
    };
    if s.card == 0 {
        return None;
    }
    let key = (s.max >> 16) as u16;
    let n = s.containers;
    Some(WholeEntry {
        version: m.version,
        subkey: key.to_be_bytes().to_vec(),
        holds_all: Box::new(move |value: &[u8]| {
            containers(key, value).is_ok_and(|c| c.len() as u64 == n)
        }),
    })
}

/// The container of block `hi` in an entry (key block `key`), if it holds
/// one, in the container format. Reads only what the answer needs: the
/// header, a binary search of the block list, and the heads of the
/// containers before the one found (their sizes give its offset). A
/// layout fault on that path is `Corrupt`; one elsewhere in the page is
/// left to the readers of the whole page ([`containers`]). Never panics.
///
/// # Errors
/// As [`containers`], for the part read.
pub(super) fn find(key: u16, value: &[u8], hi: u16) -> Result<Option<Vec<u8>>> {
    if !is_page(value) {
        return Ok((key == hi).then(|| value.to_vec()));
    }
    let n = check_header(value)?;
    let block = |i: usize| u16::from_le_bytes([value[HEADER + 2 * i], value[HEADER + 2 * i + 1]]);
    if block(n - 1) != key {
        return Err(corrupt("last block differs from the entry's key"));
    }
    // The first index whose block is at or above `hi` (ascending list).
    let (mut lo, mut up) = (0, n);
    while lo < up {
        let mid = (lo + up) / 2;
        if block(mid) < hi {
            lo = mid + 1;
        } else {
            up = mid;
        }
    }
    if lo == n || block(lo) != hi {
        return Ok(None);
    }
    // Past the containers before it, by their heads alone, checking the
    // blocks up to it ascend on the way (this runs for every point read
    // of a page: a head's bytes checked, the sum of sizes checked once at
    // the end, where `container_at` reads).
    let list = &value[HEADER..HEADER + 2 * n];
    let mut prev = block(0);
    let mut at = HEADER + 2 * n;
    for pair in list[2..2 * lo + 2].chunks_exact(2) {
        let next = u16::from_le_bytes([pair[0], pair[1]]);
        if prev >= next {
            return Err(corrupt("blocks not ascending"));
        }
        prev = next;
        let Some(&[h0, h1]) = value.get(at..at + 2) else {
            return Err(corrupt("bad container"));
        };
        let head = u16::from_le_bytes([h0, h1]);
        let unit = match head >> 14 {
            HEAD_ARRAY => 2,
            HEAD_RUN => 4,
            _ => return Err(corrupt("bad container")),
        };
        at += 2 + unit * (usize::from(head & 0x3FFF) + 1);
    }
    if at >= value.len() {
        return Err(corrupt("bad container"));
    }
    container_at(value, at).map(Some)
}

/// Checks the layout of page `value` (key block `key`) whole: header,
/// ascending blocks, container heads that fit, no trailing bytes, the last
/// block the key's. Calls `each` with every container's block and offset.
fn walk(key: u16, value: &[u8], mut each: impl FnMut(u16, usize)) -> Result<()> {
    let n = check_header(value)?;
    let block = |i: usize| u16::from_le_bytes([value[HEADER + 2 * i], value[HEADER + 2 * i + 1]]);
    let mut at = HEADER + 2 * n;
    for i in 0..n {
        if i > 0 && block(i - 1) >= block(i) {
            return Err(corrupt("blocks not ascending"));
        }
        let size = compact_size(&value[at..]).ok_or_else(|| corrupt("bad container"))?;
        each(block(i), at);
        at += size;
    }
    if at != value.len() {
        return Err(corrupt("trailing bytes"));
    }
    if block(n - 1) != key {
        return Err(corrupt("last block differs from the entry's key"));
    }
    Ok(())
}

/// The container at offset `at` of a page [`walk`] checked, rebuilt in
/// the container format.
fn container_at(value: &[u8], at: usize) -> Result<Vec<u8>> {
    let c = expand(&value[at..]).ok_or_else(|| corrupt("bad container"))?;
    if c.len() >= STANDALONE_BYTES {
        return Err(corrupt("a container too big for a page"));
    }
    Ok(c)
}

/// Bytes container head `b` (a page's compact form) takes: head and
/// payload; `None` when the head is not a page container's or the bytes
/// are too short.
fn compact_size(b: &[u8]) -> Option<usize> {
    let head = u16::from_le_bytes([*b.first()?, *b.get(1)?]);
    let count = usize::from(head & 0x3FFF) + 1;
    let size = match head >> 14 {
        HEAD_ARRAY => 2 + 2 * count,
        HEAD_RUN => 2 + 4 * count,
        _ => return None,
    };
    (size <= b.len()).then_some(size)
}

/// A page's container count, once its header and block list fit.
fn check_header(value: &[u8]) -> Result<usize> {
    if value.len() < HEADER || value[1] != 0 {
        return Err(corrupt("bad header"));
    }
    let n = usize::from(u16::from_le_bytes([value[2], value[3]]));
    if !(2..=MAX_CONTAINERS).contains(&n) || value.len() < HEADER + 2 * n {
        return Err(corrupt("bad container count"));
    }
    Ok(n)
}

/// Encodes ascending containers (the container format) as one entry
/// value: a single for one, a page for more (the caller keeps them within
/// a page's limits).
fn encode<B: AsRef<[u8]>>(group: &[(u16, B)]) -> Vec<u8> {
    if let [(_, c)] = group {
        return c.as_ref().to_vec();
    }
    let bytes: usize = group.iter().map(|(_, c)| compact_len(c.as_ref())).sum();
    let mut v = Vec::with_capacity(HEADER + 2 * group.len() + bytes);
    v.extend_from_slice(&[PAGE_TAG, 0]);
    v.extend_from_slice(&(group.len() as u16).to_le_bytes());
    for (b, _) in group {
        v.extend_from_slice(&b.to_le_bytes());
    }
    for (_, c) in group {
        compact(c.as_ref(), &mut v);
    }
    v
}

/// Groups ascending, non-empty containers into entries `(key block,
/// value)`, in key order: a container of [`STANDALONE_BYTES`] or more
/// alone, consecutive smaller ones into pages of at most [`PAGE_BYTES`]
/// and [`MAX_CONTAINERS`].
#[must_use]
pub(super) fn pack<B: AsRef<[u8]>>(all: &[(u16, B)]) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut p = Packer::default();
    for (b, c) in all {
        p.push(*b, c.as_ref(), &mut out);
    }
    p.finish(&mut out);
    out
}

/// [`pack`] as containers come: holds one open page (at most
/// [`PAGE_BYTES`] of borrowed containers), so a key of any size is packed
/// in bounded memory.
#[derive(Default)]
pub(super) struct Packer<'a> {
    open: Vec<(u16, &'a [u8])>,
    bytes: usize,
}

impl<'a> Packer<'a> {
    /// Takes the next container (ascending block, not empty); appends the
    /// entries it closes to `out`.
    pub(super) fn push(&mut self, block: u16, c: &'a [u8], out: &mut Vec<(u16, Vec<u8>)>) {
        if c.len() >= STANDALONE_BYTES {
            self.finish(out);
            out.push((block, c.to_vec()));
            return;
        }
        let len = 2 + compact_len(c);
        if !self.open.is_empty()
            && (HEADER + self.bytes + len > PAGE_BYTES || self.open.len() == MAX_CONTAINERS)
        {
            self.finish(out);
        }
        self.bytes += len;
        self.open.push((block, c));
    }

    /// Closes the open page, if any, into `out`.
    pub(super) fn finish(&mut self, out: &mut Vec<(u16, Vec<u8>)>) {
        if let Some(&(last, _)) = self.open.last() {
            out.push((last, encode(&self.open)));
        }
        self.open.clear();
        self.bytes = 0;
    }
}

/// A key version's containers from its raw `(subkey, value)` entries, one
/// `(block, container bytes)` per item, every page expanded, in the order
/// of the scan (descending when `reverse`), limited to blocks in
/// `lo..=hi`: entries below the window are skipped, and the scan ends at
/// the first entry past it. A single's bytes pass through unchecked (the
/// caller's view checks them). `Corrupt`: a container out of order (a
/// page overlapping its neighbour), a subkey that is not 2 bytes (a delta
/// entry of an earlier store format is folded at open, `delta`).
pub struct Unpacked<I> {
    inner: I,
    reverse: bool,
    lo: u16,
    hi: u16,
    ready: VecDeque<(u16, Vec<u8>)>,
    last: Option<u16>,
    done: bool,
}

impl<I> Unpacked<I>
where
    I: Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
{
    /// Expands `inner` (ascending, or descending when `reverse`) within
    /// blocks `lo..=hi`.
    pub fn new(inner: I, reverse: bool, (lo, hi): (u16, u16)) -> Self {
        Unpacked {
            inner,
            reverse,
            lo,
            hi,
            ready: VecDeque::new(),
            last: None,
            done: false,
        }
    }

    /// Where block `b` falls: `Less` below the window in scan order
    /// (skipped), `Greater` past it (the scan ends), `Equal` within.
    fn place(&self, b: u16) -> std::cmp::Ordering {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match (self.reverse, b < self.lo, b > self.hi) {
            (false, true, _) | (true, _, true) => Less,
            (false, _, true) | (true, true, _) => Greater,
            _ => Equal,
        }
    }

    /// Queues container `(block, bytes)` when within the window; checks
    /// the scan order. Returns false once past the window.
    fn push(&mut self, block: u16, value: Vec<u8>) -> Result<bool> {
        if let Some(l) = self.last {
            if (block <= l && !self.reverse) || (block >= l && self.reverse) {
                return Err(corrupt("entries overlap"));
            }
        }
        self.last = Some(block);
        match self.place(block) {
            std::cmp::Ordering::Less => Ok(true),
            std::cmp::Ordering::Greater => Ok(false),
            std::cmp::Ordering::Equal => {
                self.ready.push_back((block, value));
                Ok(true)
            }
        }
    }

    fn fill(&mut self) -> Result<()> {
        while self.ready.is_empty() && !self.done {
            let Some(e) = self.inner.next() else {
                self.done = true;
                break;
            };
            let (sub, value) = e?;
            let [a, b] = sub[..] else {
                return Err(corrupt("a bitmap data entry whose subkey is not a block"));
            };
            let block = u16::from_be_bytes([a, b]);
            if !is_page(&value) {
                if !self.push(block, value)? {
                    self.done = true;
                }
                continue;
            }
            let mut all = containers(block, &value)?;
            if self.reverse {
                all.reverse();
            }
            let mut past = false;
            for (b, c) in all {
                if !self.push(b, c)? {
                    past = true;
                    break;
                }
            }
            if past {
                self.done = true;
            }
        }
        Ok(())
    }
}

impl<I> Iterator for Unpacked<I>
where
    I: Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
{
    type Item = Result<(u16, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Err(e) = self.fill() {
            self.done = true;
            self.ready.clear();
            return Some(Err(e));
        }
        self.ready.pop_front().map(Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use roaringd_bitmap::ContainerBuf;

    fn container(vals: impl IntoIterator<Item = u16>) -> Vec<u8> {
        let c = vals.into_iter().fold(ContainerBuf::default(), |mut c, v| {
            c.insert(v);
            c
        });
        c.as_bytes().to_vec()
    }

    fn entries(all: &[(u16, Vec<u8>)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        pack(all)
            .into_iter()
            .map(|(k, v)| (k.to_be_bytes().to_vec(), v))
            .collect()
    }

    fn unpack(
        e: &[(Vec<u8>, Vec<u8>)],
        reverse: bool,
        w: (u16, u16),
    ) -> Result<Vec<(u16, Vec<u8>)>> {
        let it: Box<dyn Iterator<Item = _>> = if reverse {
            Box::new(e.iter().rev().cloned().map(Ok))
        } else {
            Box::new(e.iter().cloned().map(Ok))
        };
        Unpacked::new(it, reverse, w).collect()
    }

    #[test]
    fn a_sparse_key_is_one_entry() {
        let all: Vec<(u16, Vec<u8>)> = (0..100u16).map(|i| (i * 3, container([i]))).collect();
        let e = entries(&all);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].0, (99u16 * 3).to_be_bytes().to_vec());
        // 4 header bytes, then per container its block, head and value.
        assert_eq!(e[0].1.len(), 4 + 100 * 6);
        assert_eq!(unpack(&e, false, (0, u16::MAX)).unwrap(), all);
    }

    #[test]
    fn big_containers_stand_alone_and_pages_stay_bounded() {
        let big = container(0..400);
        let all: Vec<(u16, Vec<u8>)> = (0..600u16)
            .map(|i| {
                (
                    i,
                    if i % 100 == 50 {
                        big.clone()
                    } else {
                        container([i])
                    },
                )
            })
            .collect();
        let e = entries(&all);
        for (k, v) in &e {
            let k = u16::from_be_bytes([k[0], k[1]]);
            if is_page(v) {
                assert!(v.len() <= PAGE_BYTES);
                assert!(containers(k, v).unwrap().len() <= MAX_CONTAINERS);
            } else {
                assert!(v.len() >= STANDALONE_BYTES || k % 100 != 50);
            }
        }
        assert_eq!(unpack(&e, false, (0, u16::MAX)).unwrap(), all);
        let mut rev = all.clone();
        rev.reverse();
        assert_eq!(unpack(&e, true, (0, u16::MAX)).unwrap(), rev);
    }

    #[test]
    fn hostile_pages_are_corrupt() {
        let good = encode(&[(1u16, container([1])), (2, container([2]))]);
        for bad in [
            vec![PAGE_TAG],
            vec![PAGE_TAG, 1, 2, 0],
            vec![PAGE_TAG, 0, 1, 0, 2, 0],
            good[..good.len() - 1].to_vec(),
            [&good[..], &[0]].concat(),
        ] {
            assert!(containers(2, &bad).is_err(), "{bad:?}");
        }
        assert!(
            containers(3, &good).is_err(),
            "last block differs from the key"
        );
        let overlapping = vec![
            (2u16.to_be_bytes().to_vec(), good.clone()),
            (
                5u16.to_be_bytes().to_vec(),
                encode(&[(2u16, container([7])), (5, container([5]))]),
            ),
        ];
        assert!(unpack(&overlapping, false, (0, u16::MAX)).is_err());
    }

    #[test]
    fn a_point_read_refuses_blocks_out_of_order_before_its_block() {
        let mut v = encode(&[
            (2u16, container([7])),
            (5, container([5])),
            (9, container([1])),
        ]);
        assert_eq!(find(9, &v, 9).unwrap(), Some(container([1])));
        // Blocks 2, 5, 9 become 6, 5, 9: the search still lands on 9.
        v[HEADER..HEADER + 2].copy_from_slice(&6u16.to_le_bytes());
        assert!(find(9, &v, 9).is_err());
        assert!(find(9, &v, 6).is_ok());
    }

    proptest! {
        #[test]
        fn windows_match_a_filter(
            blocks in proptest::collection::btree_set(any::<u16>(), 0..700),
            sizes in proptest::collection::vec(1usize..300, 700),
            lo in any::<u16>(),
            span in any::<u16>(),
            reverse in any::<bool>(),
        ) {
            let all: Vec<(u16, Vec<u8>)> = blocks
                .iter()
                .zip(&sizes)
                .map(|(&b, &n)| (b, container(0..n as u16)))
                .collect();
            let e = entries(&all);
            let hi = lo.saturating_add(span);
            let mut want: Vec<(u16, Vec<u8>)> = all
                .iter()
                .filter(|(b, _)| (lo..=hi).contains(b))
                .cloned()
                .collect();
            if reverse {
                want.reverse();
            }
            prop_assert_eq!(unpack(&e, reverse, (lo, hi)).unwrap(), want);
            for (b, c) in &all {
                let at = e.iter().find(|(k, _)| u16::from_be_bytes([k[0], k[1]]) >= *b).unwrap();
                let k = u16::from_be_bytes([at.0[0], at.0[1]]);
                prop_assert_eq!(find(k, &at.1, *b).unwrap(), Some(c.clone()));
            }
            // Blocks an entry lacks (neighbours of its own, the window's
            // edges) are absent from it.
            for (sub, v) in &e {
                let k = u16::from_be_bytes([sub[0], sub[1]]);
                let held: Vec<(u16, Vec<u8>)> = containers(k, v).unwrap();
                let probes = held
                    .iter()
                    .flat_map(|&(b, _)| [b.wrapping_sub(1), b, b.wrapping_add(1)])
                    .chain([lo, hi]);
                for p in probes {
                    let want = held.iter().find(|(b, _)| *b == p).map(|(_, c)| c.clone());
                    prop_assert_eq!(find(k, v, p).unwrap(), want);
                }
            }
        }

        #[test]
        fn hostile_bytes_never_panic(
            key in any::<u16>(),
            hi in any::<u16>(),
            mut v in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            if let Some(b) = v.first_mut() {
                *b = PAGE_TAG;
            }
            let _ = containers(key, &v);
            let _ = find(key, &v, key);
            let _ = find(key, &v, hi);
        }
    }
}
