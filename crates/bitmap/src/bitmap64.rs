//! [`Bitmap64`]: a set of u64 values, as a sorted map from the high 32 bits
//! to 32-bit [`Bitmap`]s (the layout of the 64-bit portable format).

use crate::bitmap::Bitmap;
use std::collections::BTreeMap;

/// A set of u64 values. Empty buckets are never kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bitmap64 {
    buckets: BTreeMap<u32, Bitmap>,
}

#[inline]
fn split(v: u64) -> (u32, u32) {
    ((v >> 32) as u32, v as u32)
}

/// The low-32-bit span of bucket `h` inside the range from `start` to
/// `end` (both split by [`split`]; `h` between their buckets).
fn span_in(h: u32, (sh, sl): (u32, u32), (eh, el): (u32, u32)) -> (u32, u32) {
    let lo = if h == sh { sl } else { 0 };
    let hi = if h == eh { el } else { u32::MAX };
    (lo, hi)
}

/// Every bucket from `start`'s to `end`'s (none when `start > end`), as
/// `(bucket, low, high)`: the low-32-bit span of `start..=end` in it.
fn spans(start: u64, end: u64) -> impl Iterator<Item = (u32, u32, u32)> {
    let (s, e) = (split(start), split(end));
    let buckets = (start <= end).then_some(s.0..=e.0);
    buckets.into_iter().flatten().map(move |h| {
        let (lo, hi) = span_in(h, s, e);
        (h, lo, hi)
    })
}

impl Bitmap64 {
    /// An empty bitmap.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds from values in any order.
    pub fn from_unsorted(values: &[u64]) -> Self {
        let mut v = values.to_vec();
        v.sort_unstable();
        v.dedup();
        let mut out = Self::new();
        let mut i = 0;
        while i < v.len() {
            let h = (v[i] >> 32) as u32;
            let j = i + v[i..].partition_point(|&x| (x >> 32) as u32 == h);
            let lows: Vec<u32> = v[i..j].iter().map(|&x| x as u32).collect();
            out.buckets.insert(h, Bitmap::from_sorted(&lows));
            i = j;
        }
        out
    }

    /// The (high 32 bits, bitmap) buckets, ascending.
    pub fn buckets(&self) -> impl Iterator<Item = (u32, &Bitmap)> + '_ {
        self.buckets.iter().map(|(k, b)| (*k, b))
    }

    /// Number of non-empty buckets.
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// Replaces (or, when empty, removes) the bucket of high bits `key`.
    pub fn set_bucket(&mut self, key: u32, b: Bitmap) {
        if b.is_empty() {
            self.buckets.remove(&key);
        } else {
            self.buckets.insert(key, b);
        }
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.buckets.values().map(|b| b.len()).sum()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// True when `v` is present.
    pub fn contains(&self, v: u64) -> bool {
        let (h, l) = split(v);
        self.buckets.get(&h).is_some_and(|b| b.contains(l))
    }

    /// Adds `v`; returns true when it was absent.
    pub fn insert(&mut self, v: u64) -> bool {
        let (h, l) = split(v);
        self.buckets.entry(h).or_default().insert(l)
    }

    /// Removes `v`; returns true when it was present.
    pub fn remove(&mut self, v: u64) -> bool {
        let (h, l) = split(v);
        let Some(b) = self.buckets.get_mut(&h) else {
            return false;
        };
        let removed = b.remove(l);
        if b.is_empty() {
            self.buckets.remove(&h);
        }
        removed
    }

    /// Adds every value in `start..=end`.
    pub fn add_range(&mut self, start: u64, end: u64) {
        for (h, lo, hi) in spans(start, end) {
            self.buckets.entry(h).or_default().add_range(lo, hi);
        }
    }

    /// Removes every value in `start..=end` (nothing when `start > end`).
    ///
    /// Visits only the buckets that exist in the range, so the cost is
    /// bounded by the bitmap's size, not the range's width.
    pub fn remove_range(&mut self, start: u64, end: u64) {
        if start > end {
            return;
        }
        let (sh, sl) = split(start);
        let (eh, el) = split(end);
        let keys: Vec<u32> = self.buckets.range(sh..=eh).map(|(k, _)| *k).collect();
        for h in keys {
            let (lo, hi) = span_in(h, (sh, sl), (eh, el));
            if lo == 0 && hi == u32::MAX {
                self.buckets.remove(&h);
                continue;
            }
            let b = self.buckets.get_mut(&h).expect("key listed above");
            b.remove_range(lo, hi);
            if b.is_empty() {
                self.buckets.remove(&h);
            }
        }
    }

    /// Inverts every value in `start..=end` (nothing when `start > end`).
    ///
    /// Visits every high-32-bit bucket the range spans (absent ones become
    /// full where the range covers them), so time and memory grow with the
    /// number of buckets spanned: callers bound the range width.
    pub fn flip_range(&mut self, start: u64, end: u64) {
        for (h, lo, hi) in spans(start, end) {
            let b = self.buckets.entry(h).or_default();
            b.flip_range(lo, hi);
            if b.is_empty() {
                self.buckets.remove(&h);
            }
        }
    }

    /// Smallest value.
    pub fn min(&self) -> Option<u64> {
        let (h, b) = self.buckets.iter().next()?;
        b.min().map(|l| ((*h as u64) << 32) | l as u64)
    }

    /// Largest value.
    pub fn max(&self) -> Option<u64> {
        let (h, b) = self.buckets.iter().next_back()?;
        b.max().map(|l| ((*h as u64) << 32) | l as u64)
    }

    /// Number of values ≤ `v`.
    pub fn rank(&self, v: u64) -> u64 {
        let (h, l) = split(v);
        self.buckets
            .range(..=h)
            .map(|(k, b)| if *k == h { b.rank(l) } else { b.len() })
            .sum()
    }

    /// The `i`-th smallest value (0-based).
    pub fn select(&self, mut i: u64) -> Option<u64> {
        for (h, b) in &self.buckets {
            let n = b.len();
            if i < n {
                return b.select(i).map(|l| ((*h as u64) << 32) | l as u64);
            }
            i -= n;
        }
        None
    }

    /// Ascending iterator over all values.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.buckets
            .iter()
            .flat_map(|(h, b)| b.iter().map(move |l| ((*h as u64) << 32) | l as u64))
    }

    fn combine(
        &self,
        other: &Self,
        f: impl Fn(&Bitmap, Option<&Bitmap>) -> Bitmap,
        keep_right: bool,
    ) -> Self {
        let mut out = Self::new();
        for (h, a) in &self.buckets {
            out.set_bucket(*h, f(a, other.buckets.get(h)));
        }
        if keep_right {
            for (h, b) in &other.buckets {
                if !self.buckets.contains_key(h) {
                    out.set_bucket(*h, b.clone());
                }
            }
        }
        out
    }

    /// `self ∩ other`.
    pub fn and(&self, other: &Self) -> Self {
        self.combine(
            other,
            |a, b| b.map_or_else(Bitmap::new, |b| a.and(b)),
            false,
        )
    }
    /// `self ∪ other`.
    pub fn or(&self, other: &Self) -> Self {
        self.combine(other, |a, b| b.map_or_else(|| a.clone(), |b| a.or(b)), true)
    }
    /// `self ⊕ other`.
    pub fn xor(&self, other: &Self) -> Self {
        self.combine(
            other,
            |a, b| b.map_or_else(|| a.clone(), |b| a.xor(b)),
            true,
        )
    }
    /// `self \ other`.
    pub fn andnot(&self, other: &Self) -> Self {
        self.combine(
            other,
            |a, b| b.map_or_else(|| a.clone(), |b| a.andnot(b)),
            false,
        )
    }
    /// `|self ∩ other|`.
    pub fn and_len(&self, other: &Self) -> u64 {
        self.buckets
            .iter()
            .filter_map(|(h, a)| other.buckets.get(h).map(|b| a.and_len(b)))
            .sum()
    }

    /// Converts containers to runs where strictly smaller.
    pub fn optimize(&mut self) -> bool {
        let mut changed = false;
        for b in self.buckets.values_mut() {
            changed |= b.optimize();
        }
        changed
    }

    /// Checks every bucket's invariants.
    ///
    /// # Errors
    /// A description of the first broken invariant.
    pub fn validate(&self) -> Result<(), String> {
        for (h, b) in &self.buckets {
            if b.is_empty() {
                return Err(format!("bucket {h} is empty"));
            }
            b.validate().map_err(|e| format!("bucket {h}: {e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Bitmap64;
    use crate::testing::cases;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn values() -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec(
            prop_oneof![
                any::<u64>(),
                (0u64..3, any::<u16>()).prop_map(|(h, l)| (h << 32) | l as u64),
                (0u64..3).prop_map(|d| u64::MAX - d),
                (0u64..3).prop_map(|d| (1u64 << 32) + d),
            ],
            0..200,
        )
    }

    fn check(b: &Bitmap64, m: &BTreeSet<u64>) {
        b.validate().unwrap();
        assert_eq!(b.len(), m.len() as u64);
        assert!(b.iter().eq(m.iter().copied()));
        assert_eq!(b.min(), m.first().copied());
        assert_eq!(b.max(), m.last().copied());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(64), failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn bitmap64_matches_model(a in values(), b in values(), probes in values(), range in (any::<u32>(), 0u64..100_000)) {
            let (ba, bb) = (Bitmap64::from_unsorted(&a), Bitmap64::from_unsorted(&b));
            let (ma, mb): (BTreeSet<u64>, BTreeSet<u64>) = (a.iter().copied().collect(), b.iter().copied().collect());
            check(&ba, &ma);
            check(&ba.and(&bb), &ma.intersection(&mb).copied().collect());
            check(&ba.or(&bb), &ma.union(&mb).copied().collect());
            check(&ba.xor(&bb), &ma.symmetric_difference(&mb).copied().collect());
            check(&ba.andnot(&bb), &ma.difference(&mb).copied().collect());
            prop_assert_eq!(ba.and_len(&bb), ma.intersection(&mb).count() as u64);
            for &p in &probes {
                prop_assert_eq!(ba.contains(p), ma.contains(&p));
                prop_assert_eq!(ba.rank(p), ma.range(..=p).count() as u64);
            }
            for i in [0u64, 1, ma.len() as u64 / 2, ma.len() as u64] {
                prop_assert_eq!(ba.select(i), ma.iter().nth(i as usize).copied());
            }
            let (mut x, mut mx) = (ba.clone(), ma.clone());
            for &p in &probes {
                prop_assert_eq!(x.insert(p), mx.insert(p));
            }
            for &p in &b {
                prop_assert_eq!(x.remove(p), mx.remove(&p));
            }
            check(&x, &mx);
            let start = ((range.0 as u64) << 16) | 0xFFFF_0000;
            x.add_range(start, start + range.1);
            mx.extend(start..=start + range.1);
            check(&x, &mx);
            x.optimize();
            check(&x, &mx);
        }

        #[test]
        fn range_edits_match_model(a in values(), edits in prop::collection::vec((0u8..3, range_endpoints()), 1..6)) {
            let (mut x, mut mx) = (Bitmap64::from_unsorted(&a), a.iter().copied().collect::<BTreeSet<u64>>());
            for (op, (s, e)) in edits {
                match op {
                    0 => {
                        x.add_range(s, e);
                        if s <= e { mx.extend(s..=e); }
                    }
                    1 => {
                        x.remove_range(s, e);
                        if s <= e {
                            let gone: Vec<u64> = mx.range(s..=e).copied().collect();
                            for g in gone { mx.remove(&g); }
                        }
                    }
                    _ => {
                        x.flip_range(s, e);
                        if s <= e {
                            for v in s..=e {
                                if !mx.remove(&v) { mx.insert(v); }
                            }
                        }
                    }
                }
                check(&x, &mx);
                if s <= e {
                    prop_assert_eq!(x.rank(e) - if s == 0 { 0 } else { x.rank(s - 1) }, mx.range(s..=e).count() as u64);
                }
            }
        }
    }

    /// Range endpoints the model can enumerate (at most ~70,000 values wide):
    /// around 2^32 bucket boundaries, at the top of the space, at 0, and
    /// empty ranges (start > end).
    fn range_endpoints() -> impl Strategy<Value = (u64, u64)> {
        let boundary = (0u64..4, 0u64..70_000, 0u64..70_000).prop_map(|(h, below, len)| {
            let s = (h << 32).saturating_sub(below);
            (s, s + len)
        });
        let top = (0u64..70_000).prop_map(|len| (u64::MAX - len, u64::MAX));
        let top_inner =
            (0u64..70_000, 0u64..70_000).prop_map(|(a, b)| (u64::MAX - a - b, u64::MAX - b));
        let bottom = (0u64..70_000).prop_map(|len| (0, len));
        let empty = (1u64..1000, any::<u64>()).prop_map(|(d, s)| (s.max(d), s.max(d) - d));
        prop_oneof![boundary, top, top_inner, bottom, empty]
    }

    #[test]
    fn whole_buckets_range_edits() {
        // Spans too wide for the model: whole 2^32 buckets, at both ends of the space.
        let mut x = Bitmap64::from_unsorted(&[5, (7u64 << 32) + 9, u64::MAX]);
        x.flip_range(u64::MAX - (1u64 << 32) + 1, u64::MAX);
        assert_eq!(x.len(), 3 + (1u64 << 32) - 2);
        assert!(!x.contains(u64::MAX));
        assert!(x.contains(u64::MAX - 1));
        assert!(x.contains(u64::MAX - (1u64 << 32) + 1));
        x.validate().unwrap();
        x.flip_range(u64::MAX - (1u64 << 32) + 1, u64::MAX);
        assert_eq!(
            x.iter().collect::<Vec<_>>(),
            vec![5, (7u64 << 32) + 9, u64::MAX]
        );
        x.flip_range((1u64 << 32) - 1, (2u64 << 32) + 1);
        assert_eq!(x.len(), 3 + (1u64 << 32) + 3);
        x.remove_range(1u64 << 32, (2u64 << 32) - 1);
        assert_eq!(
            x.iter().collect::<Vec<_>>(),
            vec![
                5,
                (1u64 << 32) - 1,
                2u64 << 32,
                (2u64 << 32) + 1,
                (7u64 << 32) + 9,
                u64::MAX
            ]
        );
        x.remove_range(0, u64::MAX);
        assert!(x.is_empty());
        x.validate().unwrap();
        x.remove_range(u64::MAX, 0);
        x.flip_range(u64::MAX, 0);
        assert!(x.is_empty());
    }
}
