//! Delta entries of stores written before store format 6, folded into
//! their containers when such a store opens ([`fold_store`]); no reader
//! or writer of this build meets one after that.
//!
//! What they were: a small edit of a big container (a single, see
//! `page`) stored beside it instead of rewriting it. That was one of two
//! mechanisms for one concern; the write-back tier (`dirty`,
//! `write_back`) is the one kept, since it also serves the hot edit from
//! memory. An edit outside the tier rewrites its container.
//!
//! Layout, under a key version's data prefix:
//! - container of block `b`: subkey `b` (2 bytes BE);
//! - its deltas: subkey `b | seq` (2 + 2 bytes BE), `seq` = 0, 1, 2, … in
//!   write order, so they sort right after their container;
//! - a delta's value: one or more 3-byte ops `flag | low 16 bits BE`
//!   (flag 1 = set the bit, 0 = clear it), applied in order.
//!
//! The builds that wrote them kept, and [`fold_version`] checks (a
//! violation is `Corrupt`, never a panic): a delta follows its container,
//! a single; a block's deltas are numbered 0..n without gaps, n ≤
//! [`MAX_DELTAS`]; the container with its deltas applied is not empty.
//! The key's meta counted them ([`crate::meta::BitmapSummary::deltas`]),
//! and its summary already described the container with them applied.

use std::ops::Bound;

use roaringd_bitmap::{ContainerBuf, ContainerView};

use crate::error::{Result, StoreError};
use crate::keys::{self, INTERNAL_DB};
use crate::kv::{prefix_end, Durability, Kv, Space, WriteBatch};
use crate::meta::{BitmapSummary, KeyMeta, Summary};

/// Most deltas one container carried in the builds that wrote them.
pub const MAX_DELTAS: u16 = 64;

/// Bytes per op in a delta's value.
const OP_BYTES: usize = 3;

/// The data subkey of delta number `seq` of block `block`.
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
fn apply_ops(c: &mut ContainerBuf, value: &[u8]) -> Result<()> {
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
            _ => return Err(StoreError::corrupt("bitmap delta op with an unknown flag")),
        }
    }
    Ok(())
}

/// One container with its deltas folded in: the single's new value and
/// the number of delta entries to delete.
#[derive(Debug, PartialEq, Eq)]
pub struct Fold {
    /// The container's block.
    pub block: u16,
    /// The container with its deltas applied, in the engine's format.
    pub container: Vec<u8>,
    /// Its delta entries, numbered `0..deltas`.
    pub deltas: u16,
}

/// The folds of one key version's raw data entries `(subkey, value)`,
/// ascending: one per single that has delta entries (pages and singles
/// without deltas give none).
///
/// # Errors
/// `Corrupt` on a subkey of neither 2 nor 4 bytes, a delta without its
/// single right before it, deltas out of sequence or more than
/// [`MAX_DELTAS`], a bad op, an invalid container, or a container its
/// deltas leave empty; `Io` from `entries`.
pub fn fold_version(
    entries: impl IntoIterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
) -> Result<Vec<Fold>> {
    let corrupt = StoreError::corrupt;
    let mut out = Vec::new();
    // The last single seen: its block, its bytes, its folded container so
    // far and its deltas.
    let mut open: Option<(u16, Vec<u8>, Option<ContainerBuf>, u16)> = None;
    let mut close = |open: &mut Option<(u16, Vec<u8>, Option<ContainerBuf>, u16)>| {
        if let Some((block, _, Some(c), deltas)) = open.take() {
            if c.is_empty() {
                return Err(corrupt("bitmap deltas leave their container empty"));
            }
            out.push(Fold {
                block,
                container: c.as_bytes().to_vec(),
                deltas,
            });
        }
        Ok(())
    };
    for e in entries {
        let (sub, value) = e?;
        match sub[..] {
            [a, b] => {
                close(&mut open)?;
                // A page takes no deltas: a delta after one is an orphan.
                open = (!super::page::is_page(&value))
                    .then(|| (u16::from_be_bytes([a, b]), value, None, 0));
            }
            [a, b, c, d] => {
                let (block, seq) = (u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]));
                let Some((single, bytes, folded, n)) = open.as_mut() else {
                    return Err(corrupt("bitmap delta entry without its container"));
                };
                if *single != block {
                    return Err(corrupt("bitmap delta entry without its container"));
                }
                if seq != *n || *n >= MAX_DELTAS {
                    return Err(corrupt("bitmap delta entries out of sequence"));
                }
                let buf = match folded {
                    Some(f) => f,
                    None => folded.insert(
                        ContainerView::parse(bytes)
                            .map_err(|e| StoreError::Corrupt(format!("bitmap container: {e}")))?
                            .to_buf(),
                    ),
                };
                apply_ops(buf, &value)?;
                *n += 1;
            }
            _ => return Err(corrupt("bitmap data subkey of a bad length")),
        }
    }
    close(&mut open)?;
    Ok(out)
}

/// Folds every delta entry of a store written before store format 6 into
/// its container: for each bitmap key whose meta counts deltas, one batch
/// that rewrites the containers that have some, deletes their delta
/// entries and sets the count to 0 (its summary already described the
/// folded content). Keys of a store that never wrote a delta are only
/// read. Idempotent: a crash during the pass leaves some keys folded and
/// the format record as it was, and the next open folds the rest. Returns
/// how many keys were folded.
///
/// # Errors
/// `Io`; `Corrupt` on a meta entry that cannot be decoded, a bitmap meta
/// with both an inline entry and deltas, or what [`fold_version`] refuses.
pub fn fold_store(kv: &dyn Kv) -> Result<u64> {
    let internal = INTERNAL_DB.to_be_bytes();
    let mut folded = 0;
    let mut after: Option<Vec<u8>> = None;
    loop {
        // The keys to fold are gathered [`FOLD_CHUNK`] at a time (the
        // meta entries are not scanned while the folds write them), so
        // memory stays bounded over a store of any size.
        let mut chunk: Vec<(Vec<u8>, KeyMeta, BitmapSummary)> = Vec::new();
        let start = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut last = None;
        for e in kv.range(Space::Meta, start, Bound::Excluded(&internal[..]), false) {
            let (mk, value) = e?;
            let (m, inline) = KeyMeta::decode_with_inline(&value)?;
            if let Summary::Bitmap(s) = m.summary {
                if s.deltas > 0 {
                    if inline.is_some() {
                        return Err(StoreError::corrupt(
                            "an inline bitmap entry with delta entries",
                        ));
                    }
                    chunk.push((mk.clone(), m, s));
                }
            }
            last = Some(mk);
            if chunk.len() == FOLD_CHUNK {
                break;
            }
        }
        for (mk, m, s) in chunk {
            fold_key(kv, &mk, m, s)?;
            folded += 1;
        }
        match last {
            Some(mk) => after = Some(mk),
            None => return Ok(folded),
        }
    }
}

/// Keys [`fold_store`] gathers before it folds them (2 in tests, so that
/// a store of a few keys goes through more than one chunk).
const FOLD_CHUNK: usize = if cfg!(test) { 2 } else { 4096 };

/// Folds the deltas of bitmap key `mk` (meta `m`, summary `s`) in one
/// batch: its containers with them applied, their deletes, and the meta
/// with a delta count of 0.
fn fold_key(kv: &dyn Kv, mk: &[u8], mut m: KeyMeta, s: BitmapSummary) -> Result<()> {
    let (db, key) = keys::split_meta_key(mk)?;
    let prefix = keys::data_prefix(db, key, m.version);
    let end = prefix_end(&prefix);
    let end = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let entries = kv
        .range(Space::Data, Bound::Included(&prefix[..]), end, false)
        .map(|e| e.map(|(k, v)| (k[prefix.len()..].to_vec(), v)));
    let mut batch = WriteBatch::new();
    for f in fold_version(entries)? {
        let sub = f.block.to_be_bytes();
        batch.put(
            Space::Data,
            keys::data_key(db, key, m.version, &sub),
            f.container,
        );
        for seq in 0..f.deltas {
            batch.delete(
                Space::Data,
                keys::data_key(db, key, m.version, &delta_sub(f.block, seq)),
            );
        }
    }
    m.summary = Summary::Bitmap(BitmapSummary { deltas: 0, ..s });
    batch.put(Space::Meta, mk.to_vec(), m.encode());
    kv.write(batch, Durability::Lazy)
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

    fn folds(e: Vec<(Vec<u8>, Vec<u8>)>) -> Result<Vec<Fold>> {
        fold_version(e.into_iter().map(Ok))
    }

    #[test]
    fn deltas_apply_in_order_and_only_folded_singles_are_rewritten() {
        let want1 = container((0..300).filter(|&v| v != 7).chain([1000]));
        assert_eq!(
            folds(entries()).unwrap(),
            vec![Fold {
                block: 1,
                container: want1,
                deltas: 3
            }]
        );
        assert_eq!(folds(Vec::new()).unwrap(), Vec::new());
    }

    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Valid layouts (containers with up to MAX_DELTAS deltas each)
        /// fold to what a `BTreeSet` model of the same edits holds.
        #[test]
        fn folds_match_a_model(
            blocks in proptest::collection::btree_map(
                any::<u16>(),
                (
                    proptest::collection::btree_set(any::<u16>(), 1..300),
                    proptest::collection::vec(
                        proptest::collection::vec((any::<u16>(), any::<bool>()), 1..=8),
                        0..=(MAX_DELTAS as usize),
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
                if !deltas.is_empty() {
                    want.push((b, model, deltas.len() as u16));
                }
            }
            match folds(raw) {
                Ok(got) => {
                    prop_assert_eq!(got.len(), want.len());
                    for (f, (wb, model, wn)) in got.iter().zip(&want) {
                        prop_assert_eq!((f.block, f.deltas), (*wb, *wn));
                        prop_assert!(!model.is_empty());
                        prop_assert_eq!(&f.container, &container(model.iter().copied()));
                    }
                }
                // Only when the edits empty a container.
                Err(_) => prop_assert!(want.iter().any(|(_, m, _)| m.is_empty())),
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
        ) {
            let _ = folds(raw);
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
        let mut other_block = entries();
        other_block[1].0 = delta_sub(2, 0).to_vec();
        let mut too_many = vec![(0u16.to_be_bytes().to_vec(), container([4, 5]))];
        for seq in 0..=MAX_DELTAS {
            too_many.push((delta_sub(0, seq).to_vec(), encode_ops(&[(9, true)])));
        }
        let bad_sub = vec![(vec![1, 2, 3], vec![])];
        for case in [
            gap,
            orphan,
            bad_op,
            short,
            emptied,
            other_block,
            too_many,
            bad_sub,
        ] {
            assert!(folds(case.clone()).is_err(), "{case:?}");
        }
    }
}
