//! A resident key's data entries by suffix (`version | subkey`), ordered:
//! a sorted vector while the key has few entries, a B-tree beyond.
//!
//! Why: most keys of a many-key population have one to a handful of
//! entries (a string none, a bitmap one page), and a `BTreeMap` allocates
//! a leaf of eleven slots (about 370 bytes here) for even one entry, more
//! than a 100-bit bitmap's page. The vector is kept at its exact length.

use std::collections::BTreeMap;
use std::ops::Bound;

/// One entry: `Some` = present with that value, `None` = known absent.
pub(crate) type Value = Option<Box<[u8]>>;

/// Entries a key keeps in the sorted vector; one more makes it a B-tree
/// (and it stays one until cleared).
const SMALL_MAX: usize = 32;

/// Cache lines of a data entry's value that [`DataMap::prefetch`] asks
/// for: a sparse bitmap's page of 100 values is about ten.
const VALUE_LINES: usize = 12;

/// The ordered map (see the module docs).
pub(crate) enum DataMap {
    Small(Vec<(Box<[u8]>, Value)>),
    Big(BTreeMap<Box<[u8]>, Value>),
}

impl Default for DataMap {
    fn default() -> Self {
        DataMap::Small(Vec::new())
    }
}

/// The entries of a [`DataMap::range`], either way.
pub(crate) type RangeIter<'a> = Box<dyn DoubleEndedIterator<Item = (&'a [u8], &'a Value)> + 'a>;

impl DataMap {
    /// A map of `entries`, ascending by suffix without repeats (a whole
    /// key as loaded).
    pub(crate) fn from_sorted(entries: Vec<(Box<[u8]>, Value)>) -> Self {
        if entries.len() <= SMALL_MAX {
            let mut v = entries;
            v.shrink_to_fit();
            DataMap::Small(v)
        } else {
            DataMap::Big(entries.into_iter().collect())
        }
    }

    /// Number of entries (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        match self {
            DataMap::Small(v) => v.len(),
            DataMap::Big(m) => m.len(),
        }
    }

    /// True without entries (tests).
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry of `suffix`, if the map has one.
    pub(crate) fn get(&self, suffix: &[u8]) -> Option<&Value> {
        match self {
            DataMap::Small(v) => v
                .binary_search_by(|(k, _)| (**k).cmp(suffix))
                .ok()
                .map(|i| &v[i].1),
            DataMap::Big(m) => m.get(suffix),
        }
    }

    /// Sets the entry of `suffix`; returns the one it replaces.
    pub(crate) fn insert(&mut self, suffix: &[u8], value: Value) -> Option<Value> {
        match self {
            DataMap::Small(v) => match v.binary_search_by(|(k, _)| (**k).cmp(suffix)) {
                Ok(i) => Some(std::mem::replace(&mut v[i].1, value)),
                Err(i) => {
                    if v.len() < SMALL_MAX {
                        v.reserve_exact(1);
                        v.insert(i, (Box::from(suffix), value));
                    } else {
                        let mut m: BTreeMap<Box<[u8]>, Value> =
                            std::mem::take(v).into_iter().collect();
                        m.insert(Box::from(suffix), value);
                        *self = DataMap::Big(m);
                    }
                    None
                }
            },
            DataMap::Big(m) => m.insert(Box::from(suffix), value),
        }
    }

    /// Removes the entry of `suffix`; returns it.
    pub(crate) fn remove(&mut self, suffix: &[u8]) -> Option<Value> {
        match self {
            DataMap::Small(v) => {
                let i = v.binary_search_by(|(k, _)| (**k).cmp(suffix)).ok()?;
                let (_, old) = v.remove(i);
                v.shrink_to_fit();
                Some(old)
            }
            DataMap::Big(m) => m.remove(suffix),
        }
    }

    /// Every entry, ascending.
    pub(crate) fn iter(&self) -> RangeIter<'_> {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }

    /// The entries with suffix within the bounds, ascending (reverse the
    /// iterator for descending).
    pub(crate) fn range<'a>(&'a self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RangeIter<'a> {
        match self {
            DataMap::Small(v) => {
                let (lo, hi) = positions(v, start, end);
                let s = if lo < hi { &v[lo..hi] } else { &v[0..0] };
                Box::new(s.iter().map(|(k, val)| (&**k, val)))
            }
            DataMap::Big(m) => {
                if crate::kv::range_is_empty(start, end) {
                    return Box::new(std::iter::empty());
                }
                Box::new(m.range::<[u8], _>((start, end)).map(|(k, val)| (&**k, val)))
            }
        }
    }

    /// The first entry of [`DataMap::range`] (the last when `reverse`),
    /// without an iterator to allocate.
    pub(crate) fn first_in(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Option<(&[u8], &Value)> {
        match self {
            DataMap::Small(v) => {
                let (lo, hi) = positions(v, start, end);
                if lo >= hi {
                    return None;
                }
                let (k, val) = if reverse { &v[hi - 1] } else { &v[lo] };
                Some((&**k, val))
            }
            // One descent of the tree (a range of both bounds makes two),
            // then the other bound checked on the entry found.
            DataMap::Big(m) => {
                let found = if reverse {
                    m.range::<[u8], _>((Bound::Unbounded, end)).next_back()
                } else {
                    m.range::<[u8], _>((start, Bound::Unbounded)).next()
                };
                let (k, val) = found?;
                let within = if reverse {
                    match start {
                        Bound::Included(s) => **k >= *s,
                        Bound::Excluded(s) => **k > *s,
                        Bound::Unbounded => true,
                    }
                } else {
                    match end {
                        Bound::Included(e) => **k <= *e,
                        Bound::Excluded(e) => **k < *e,
                        Bound::Unbounded => true,
                    }
                };
                within.then_some((&**k, val))
            }
        }
    }

    /// Drops every entry whose suffix is outside `[lo, hi)` (`hi` `None`:
    /// unbounded); returns the dropped entries.
    pub(crate) fn keep_within(&mut self, lo: &[u8], hi: Option<&[u8]>) -> Vec<(Box<[u8]>, Value)> {
        let outside = |k: &[u8]| k < lo || hi.is_some_and(|h| k >= h);
        match self {
            DataMap::Small(v) => {
                let (keep, dropped): (Vec<_>, Vec<_>) = std::mem::take(v)
                    .into_iter()
                    .partition(|(k, _)| !outside(k));
                *self = DataMap::from_sorted(keep);
                dropped
            }
            DataMap::Big(m) => {
                let mut keep = m.split_off(lo);
                let mut dropped: Vec<(Box<[u8]>, Value)> = std::mem::take(m).into_iter().collect();
                if let Some(h) = hi {
                    dropped.extend(keep.split_off(h));
                }
                *self = if keep.len() <= SMALL_MAX {
                    DataMap::from_sorted(keep.into_iter().collect())
                } else {
                    DataMap::Big(keep)
                };
                dropped
            }
        }
    }

    /// Starts loading the first entries of a small map (the vector, each
    /// entry's suffix and the head of its value) into cache: a hint.
    pub(crate) fn prefetch(&self) {
        if let DataMap::Small(v) = self {
            crate::prefetch::line(v.as_ptr().cast::<u8>());
            for (k, val) in v.iter().take(2) {
                crate::prefetch::line(k.as_ptr());
                if let Some(val) = val {
                    crate::prefetch::bytes(val, VALUE_LINES);
                }
            }
        }
    }

    /// The first step of [`DataMap::prefetch`]: the sorted vector itself,
    /// without reading it.
    pub(crate) fn prefetch_index(&self) {
        if let DataMap::Small(v) = self {
            crate::prefetch::line(v.as_ptr().cast::<u8>());
        }
    }

    /// Drops every entry.
    pub(crate) fn clear(&mut self) {
        *self = DataMap::default();
    }
}

/// The positions in `v` (sorted by suffix) where entries within the
/// bounds start and end.
fn positions(v: &[(Box<[u8]>, Value)], start: Bound<&[u8]>, end: Bound<&[u8]>) -> (usize, usize) {
    let lo = match start {
        Bound::Included(s) => v.partition_point(|(k, _)| **k < *s),
        Bound::Excluded(s) => v.partition_point(|(k, _)| **k <= *s),
        Bound::Unbounded => 0,
    };
    let hi = match end {
        Bound::Included(e) => v.partition_point(|(k, _)| **k <= *e),
        Bound::Excluded(e) => v.partition_point(|(k, _)| **k < *e),
        Bound::Unbounded => v.len(),
    };
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every operation agrees with a `BTreeMap`, across the switch from
        /// the vector to the tree.
        #[test]
        fn matches_a_btree_map(
            ops in proptest::collection::vec((0u8..4, 0u8..80, any::<bool>()), 1..300),
            lo in 0u8..80, hi in 0u8..80, rev in any::<bool>(),
        ) {
            let mut m = DataMap::default();
            let mut model: BTreeMap<Box<[u8]>, Value> = BTreeMap::new();
            for (op, k, present) in ops {
                let key: Box<[u8]> = Box::from(&[k][..]);
                let val: Value = present.then(|| Box::from(&[k, k][..]));
                match op {
                    0 | 1 => prop_assert_eq!(m.insert(&key, val.clone()), model.insert(key.clone(), val)),
                    2 => prop_assert_eq!(m.remove(&key), model.remove(&key)),
                    _ => {
                        let dropped = m.keep_within(&[lo.min(hi)], Some(&[lo.max(hi)]));
                        let mut want = Vec::new();
                        model.retain(|k, v| {
                            let keep = k[0] >= lo.min(hi) && k[0] < lo.max(hi);
                            if !keep {
                                want.push((k.clone(), v.clone()));
                            }
                            keep
                        });
                        let mut dropped = dropped;
                        dropped.sort();
                        prop_assert_eq!(dropped, want);
                    }
                }
                prop_assert_eq!(m.len(), model.len());
                prop_assert_eq!(m.get(&key), model.get(&key));
            }
            let (s, e) = (Bound::Included(&[lo][..]), Bound::Excluded(&[hi][..]));
            let got: Vec<_> = if rev {
                m.range(s, e).rev().map(|(k, v)| (k.to_vec(), v.clone())).collect()
            } else {
                m.range(s, e).map(|(k, v)| (k.to_vec(), v.clone())).collect()
            };
            let want: Vec<_> = if lo >= hi {
                Vec::new()
            } else if rev {
                model.range::<[u8], _>((s, e)).rev().map(|(k, v)| (k.to_vec(), v.clone())).collect()
            } else {
                model.range::<[u8], _>((s, e)).map(|(k, v)| (k.to_vec(), v.clone())).collect()
            };
            let first = m.first_in(s, e, rev).map(|(k, v)| (k.to_vec(), v.clone()));
            prop_assert_eq!(first, want.first().cloned());
            prop_assert_eq!(got, want);
        }
    }
}
