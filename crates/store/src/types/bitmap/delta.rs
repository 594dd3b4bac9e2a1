//! Delta entries of bitmap containers: small edits of a big container
//! that earlier builds stored beside it instead of rewriting it. This
//! build reads them and never writes one.
//!
//! Why they are no longer written: they were one of two mechanisms for the
//! same concern, a small edit of a container of up to 8 KB without
//! rewriting it. The write-back tier (`dirty`, `write_back`) keeps such
//! edits in memory and in the log, and writes the container once at its
//! checkpoint; an edit it does not take (a clear of the minimum or
//! maximum, one that empties a container, one past its budget) rewrites
//! the container's entry.
//!
//! Layout, under a key version's data prefix:
//! - container of block `b`: subkey `b` (2 bytes BE);
//! - its deltas: subkey `b | seq` (2 + 2 bytes BE), `seq` = 0, 1, 2, … in
//!   write order, so they sort right after their container and every scan
//!   (forward or reverse) meets a block's entries together;
//! - a delta's value: one or more 3-byte ops `flag | low 16 bits BE`
//!   (flag 1 = set the bit, 0 = clear it), applied in order.
//!
//! Readers check what the writers kept (a violation is `Corrupt`, never a
//! panic): a delta's container exists; a block's deltas are numbered
//! 0..n without gaps, n ≤ [`MAX_DELTAS`]; the container with its deltas
//! applied is not empty. The key's meta counts its deltas
//! ([`crate::meta::BitmapSummary::deltas`]). Any rewrite of a container
//! folds its deltas in and deletes them in the same batch (so does the
//! write-back tier's checkpoint); TR.OPTIMIZE folds all of a key's.

use std::iter::Peekable;

use roaringd_bitmap::{ContainerBuf, ContainerView};

use crate::error::{Result, StoreError};

use super::page::Unpacked;

/// Most deltas one container carried in the builds that wrote them.
pub const MAX_DELTAS: u16 = 64;

/// Bytes of the value of a delta entry as those builds wrote it (one op
/// each, so MEMORY USAGE counts them from the summary's delta count;
/// readers accept several ops per delta, as the format allows).
pub const DELTA_VALUE_BYTES: u64 = OP_BYTES as u64;

/// Bytes per op in a delta's value.
const OP_BYTES: usize = 3;

/// The bits one edit changes, in order: `(low 16 bits, set)`.
pub type Ops<'a> = &'a [(u16, bool)];

/// What a bitmap `data` subkey names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sub {
    /// The container of a block.
    Container(u16),
    /// Delta number `seq` of a block.
    Delta(u16, u16),
}

/// Parses a bitmap `data` subkey.
///
/// # Errors
/// `Corrupt` when it is neither 2 nor 4 bytes.
pub fn parse_sub(sub: &[u8]) -> Result<Sub> {
    match sub {
        [a, b] => Ok(Sub::Container(u16::from_be_bytes([*a, *b]))),
        [a, b, c, d] => Ok(Sub::Delta(
            u16::from_be_bytes([*a, *b]),
            u16::from_be_bytes([*c, *d]),
        )),
        _ => Err(StoreError::corrupt(
            "bitmap data subkey is neither 2 nor 4 bytes",
        )),
    }
}

/// The subkey of delta `seq` of `block`.
#[must_use]
pub fn delta_sub(block: u16, seq: u16) -> [u8; 4] {
    let [a, b] = block.to_be_bytes();
    let [c, d] = seq.to_be_bytes();
    [a, b, c, d]
}

/// A delta's value for `ops`: `(low bits, set)` in the order to apply, as
/// earlier builds wrote it (tests lay out such data with it).
#[cfg(test)]
#[must_use]
pub(crate) fn encode_ops(ops: &[(u16, bool)]) -> Vec<u8> {
    let mut v = Vec::with_capacity(ops.len() * OP_BYTES);
    for &(lo, set) in ops {
        v.push(u8::from(set));
        v.extend_from_slice(&lo.to_be_bytes());
    }
    v
}

/// Applies a delta's value to `c`.
///
/// # Errors
/// `Corrupt` when the value is empty, not a whole number of ops, or has an
/// unknown flag.
pub fn apply_ops(c: &mut ContainerBuf, value: &[u8]) -> Result<()> {
    if value.is_empty() || !value.len().is_multiple_of(OP_BYTES) {
        return Err(StoreError::corrupt("bitmap delta value of a bad length"));
    }
    for op in value.chunks_exact(OP_BYTES) {
        let lo = u16::from_be_bytes([op[1], op[2]]);
        match op[0] {
            1 => {
                c.insert(lo);
            }
            0 => {
                c.remove(lo);
            }
            _ => return Err(StoreError::corrupt("bitmap delta op of an unknown kind")),
        }
    }
    Ok(())
}

fn orphan() -> StoreError {
    StoreError::corrupt("bitmap delta entry without its container")
}

/// A block folded: `(block, container bytes with the deltas applied,
/// number of deltas)`.
pub type FoldedBlock = (u16, Vec<u8>, u16);

/// Groups a key version's raw `(subkey, value)` entries, in key order
/// (descending when `reverse`), into whole containers: each block's
/// container entry with its deltas applied. A block without deltas passes
/// its stored bytes through untouched (checked later by the caller's view);
/// a block with deltas is parsed (every check) and re-encoded. Pages are
/// expanded first ([`Unpacked`]), so a caller sees one container per item
/// whatever the layout.
pub struct Folded<I: Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>> {
    inner: Peekable<Unpacked<I>>,
    reverse: bool,
}

impl<I> Folded<I>
where
    I: Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
{
    /// Folds `inner` (ascending, or descending when `reverse`).
    pub fn new(inner: I, reverse: bool) -> Self {
        Self::within(inner, reverse, (0, u16::MAX))
    }

    /// Folds the containers of blocks `lo..=hi` in `inner`: a scan that
    /// resumes inside a page passes the page's earlier blocks by, and one
    /// that ends inside a page stops there ([`Unpacked`]).
    pub fn within(inner: I, reverse: bool, window: (u16, u16)) -> Self {
        Folded {
            inner: Unpacked::new(inner, reverse, window).peekable(),
            reverse,
        }
    }

    /// The next entry when it is a delta of `block`, else `None` (an error
    /// or another block's entry stays for the next call).
    fn next_delta_of(&mut self, block: u16) -> Result<Option<(u16, Vec<u8>)>> {
        let seq = match self.inner.peek() {
            Some(Ok((sub, _))) => match parse_sub(sub)? {
                Sub::Delta(b, seq) if b == block => seq,
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        match self.inner.next() {
            Some(Ok((_, v))) => Ok(Some((seq, v))),
            _ => Ok(None),
        }
    }

    fn forward(&mut self, sub: &[u8], value: Vec<u8>) -> Result<FoldedBlock> {
        let Sub::Container(block) = parse_sub(sub)? else {
            return Err(orphan());
        };
        let mut c: Option<ContainerBuf> = None;
        let mut n = 0u16;
        while let Some((seq, d)) = self.next_delta_of(block)? {
            if seq != n || n >= MAX_DELTAS {
                return Err(StoreError::corrupt("bitmap delta entries out of sequence"));
            }
            let buf = match c.as_mut() {
                Some(b) => b,
                None => c.insert(parse(&value)?),
            };
            apply_ops(buf, &d)?;
            n += 1;
        }
        finish(block, value, c, n)
    }

    fn backward(&mut self, sub: &[u8], value: Vec<u8>) -> Result<FoldedBlock> {
        let (block, last) = match parse_sub(sub)? {
            Sub::Container(block) => return Ok((block, value, 0)),
            Sub::Delta(block, seq) => (block, seq),
        };
        // Deltas arrive newest first, then the container.
        let mut deltas = vec![value];
        let mut expect = last;
        while let Some((seq, d)) = self.next_delta_of(block)? {
            if expect == 0 || seq != expect - 1 {
                return Err(StoreError::corrupt("bitmap delta entries out of sequence"));
            }
            expect = seq;
            deltas.push(d);
        }
        if expect != 0 || last >= MAX_DELTAS {
            return Err(StoreError::corrupt("bitmap delta entries out of sequence"));
        }
        let base = match self.inner.next() {
            Some(Ok((sub, v))) if parse_sub(&sub)? == Sub::Container(block) => v,
            Some(Err(e)) => return Err(e),
            _ => return Err(orphan()),
        };
        let mut c = parse(&base)?;
        for d in deltas.iter().rev() {
            apply_ops(&mut c, d)?;
        }
        let n = u16::try_from(deltas.len()).map_err(|_| orphan())?;
        finish(block, base, Some(c), n)
    }
}

fn parse(bytes: &[u8]) -> Result<ContainerBuf> {
    ContainerView::parse(bytes)
        .map(|v| v.to_buf())
        .map_err(|e| StoreError::Corrupt(format!("bitmap container: {e}")))
}

fn finish(block: u16, stored: Vec<u8>, c: Option<ContainerBuf>, n: u16) -> Result<FoldedBlock> {
    match c {
        None => Ok((block, stored, 0)),
        Some(c) if c.is_empty() => Err(StoreError::corrupt(
            "bitmap deltas leave their container empty",
        )),
        Some(c) => Ok((block, c.as_bytes().to_vec(), n)),
    }
}

impl<I> Iterator for Folded<I>
where
    I: Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
{
    type Item = Result<FoldedBlock>;

    fn next(&mut self) -> Option<Self::Item> {
        let (sub, value) = match self.inner.next()? {
            Ok(e) => e,
            Err(e) => return Some(Err(e)),
        };
        Some(if self.reverse {
            self.backward(&sub, value)
        } else {
            self.forward(&sub, value)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(vals: impl IntoIterator<Item = u16>) -> Vec<u8> {
        let mut c = ContainerBuf::default();
        for v in vals {
            c.insert(v);
        }
        c.as_bytes().to_vec()
    }

    fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
        vec![
            (1u16.to_be_bytes().to_vec(), container(0..300)),
            (
                delta_sub(1, 0).to_vec(),
                encode_ops(&[(5, false), (1000, true)]),
            ),
            (delta_sub(1, 1).to_vec(), encode_ops(&[(5, true)])),
            (delta_sub(1, 2).to_vec(), encode_ops(&[(7, false)])),
            (2u16.to_be_bytes().to_vec(), container([9])),
        ]
    }

    fn folded(e: Vec<(Vec<u8>, Vec<u8>)>, reverse: bool) -> Result<Vec<FoldedBlock>> {
        Folded::new(e.into_iter().map(Ok), reverse).collect()
    }

    #[test]
    fn deltas_apply_in_order_both_directions() {
        let want1 = container((0..300).filter(|&v| v != 7).chain([1000]));
        let fwd = folded(entries(), false).unwrap();
        assert_eq!(fwd, vec![(1, want1.clone(), 3), (2, container([9]), 0)]);
        let mut rev_in = entries();
        rev_in.reverse();
        let rev = folded(rev_in, true).unwrap();
        assert_eq!(rev, vec![(2, container([9]), 0), (1, want1, 3)]);
    }

    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Valid layouts (containers with up to MAX_DELTAS - 1 deltas each)
        /// fold to what a `BTreeSet` model of the same edits holds, in
        /// both scan directions.
        #[test]
        fn folds_match_a_model(
            blocks in proptest::collection::btree_map(
                any::<u16>(),
                (
                    proptest::collection::btree_set(any::<u16>(), 1..300),
                    proptest::collection::vec(
                        proptest::collection::vec((any::<u16>(), any::<bool>()), 1..=8),
                        0..(MAX_DELTAS as usize),
                    ),
                ),
                1..6,
            )
        ) {
            let mut raw = Vec::new();
            let mut want = Vec::new();
            for (&b, (base, deltas)) in &blocks {
                let mut model: BTreeSet<u16> = base.clone();
                raw.push((b.to_be_bytes().to_vec(), container(base.iter().copied())));
                for (seq, ops) in deltas.iter().enumerate() {
                    raw.push((delta_sub(b, seq as u16).to_vec(), encode_ops(ops)));
                    for &(lo, set) in ops {
                        if set { model.insert(lo); } else { model.remove(&lo); }
                    }
                }
                want.push((b, model, deltas.len() as u16));
            }
            for reverse in [false, true] {
                let mut input = raw.clone();
                if reverse {
                    input.reverse();
                }
                let got = folded(input, reverse);
                let mut expect = want.clone();
                if reverse {
                    expect.reverse();
                }
                match got {
                    Ok(got) => {
                        prop_assert_eq!(got.len(), expect.len());
                        for ((b, bytes, n), (wb, model, wn)) in got.iter().zip(&expect) {
                            prop_assert_eq!((b, n), (wb, wn));
                            prop_assert!(!model.is_empty());
                            prop_assert_eq!(bytes, &container(model.iter().copied()));
                        }
                    }
                    // Only when the edits empty a container.
                    Err(_) => prop_assert!(expect.iter().any(|(_, m, _)| m.is_empty())),
                }
            }
        }

        /// Hostile entries (any subkeys and values, any order) are an error
        /// or a result, never a panic.
        #[test]
        fn hostile_entries_never_panic(
            raw in proptest::collection::vec(
                (
                    proptest::collection::vec(any::<u8>(), 0..6),
                    proptest::collection::vec(any::<u8>(), 0..40),
                ),
                0..12,
            ),
            reverse in any::<bool>(),
        ) {
            let _ = folded(raw, reverse);
        }
    }

    #[test]
    fn broken_deltas_are_corrupt_not_panics() {
        let mut gap = entries();
        gap.remove(2);
        let mut orphan = entries();
        orphan.remove(0);
        let mut bad_op = entries();
        bad_op[1].1 = vec![7, 0, 1];
        let mut short = entries();
        short[1].1 = vec![1, 0];
        let mut emptied = vec![(0u16.to_be_bytes().to_vec(), container([4]))];
        emptied.push((delta_sub(0, 0).to_vec(), encode_ops(&[(4, false)])));
        let bad_sub = vec![(vec![1, 2, 3], vec![])];
        for case in [gap, orphan, bad_op, short, emptied, bad_sub] {
            assert!(folded(case.clone(), false).is_err(), "{case:?}");
            let mut r = case;
            r.reverse();
            assert!(folded(r, true).is_err());
        }
    }
}
