//! Run containers: sorted (start, length-1) pairs, non-overlapping and non-adjacent.
//!
//! Free functions over `&[[u16; 2]]` payloads. Run `[s, l]` covers `s..=s+l`.

/// Last value of a run.
#[inline]
pub fn end(r: [u16; 2]) -> u16 {
    r[0] + r[1]
}

/// Index of the run containing `v`, or `Err(insertion index)`.
#[inline]
pub fn find(runs: &[[u16; 2]], v: u16) -> Result<usize, usize> {
    let i = runs.partition_point(|r| r[0] <= v);
    if i > 0 && v <= end(runs[i - 1]) {
        Ok(i - 1)
    } else {
        Err(i)
    }
}

/// True when `v` is covered.
#[inline]
pub fn contains(runs: &[[u16; 2]], v: u16) -> bool {
    find(runs, v).is_ok()
}

/// Number of values covered.
pub fn cardinality(runs: &[[u16; 2]]) -> u32 {
    runs.iter().map(|r| r[1] as u32 + 1).sum()
}

/// Number of values ≤ `v`.
pub fn rank(runs: &[[u16; 2]], v: u16) -> u32 {
    let mut n = 0;
    for r in runs {
        if r[0] > v {
            break;
        }
        n += (end(*r).min(v) - r[0]) as u32 + 1;
    }
    n
}

/// Number of values in `lo..=hi`.
pub fn count_range(runs: &[[u16; 2]], lo: u16, hi: u16) -> u32 {
    let mut n = 0;
    let first = runs.partition_point(|r| end(*r) < lo);
    for r in &runs[first..] {
        if r[0] > hi {
            break;
        }
        n += (end(*r).min(hi) - r[0].max(lo)) as u32 + 1;
    }
    n
}

/// The `i`-th smallest value (0-based).
pub fn select(runs: &[[u16; 2]], mut i: u32) -> Option<u16> {
    for r in runs {
        let len = r[1] as u32 + 1;
        if i < len {
            return Some(r[0] + i as u16);
        }
        i -= len;
    }
    None
}

/// Sets the covered bits in `words`.
pub fn set_bits(runs: &[[u16; 2]], words: &mut [u64]) {
    for r in runs {
        super::bitset::set_range(words, r[0], end(*r));
    }
}

/// Writes covered values ascending into `out` (at least the cardinality long); returns the count.
pub fn to_array(runs: &[[u16; 2]], out: &mut [u16]) -> usize {
    let mut n = 0;
    for r in runs {
        for v in r[0]..=end(*r) {
            out[n] = v;
            n += 1;
        }
    }
    n
}

/// Appends a closed interval `[lo, hi]` (ascending input, may touch or overlap the last run).
#[inline]
pub fn push_interval(out: &mut Vec<[u16; 2]>, lo: u16, hi: u16) {
    if let Some(last) = out.last_mut() {
        let last_end = end(*last) as u32;
        if lo as u32 <= last_end + 1 {
            if hi as u32 > last_end {
                last[1] = hi - last[0];
            }
            return;
        }
    }
    out.push([lo, hi - lo]);
}

/// Union of two run lists.
pub fn union(a: &[[u16; 2]], b: &[[u16; 2]], out: &mut Vec<[u16; 2]>) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let r = if j >= b.len() || (i < a.len() && a[i][0] <= b[j][0]) {
            i += 1;
            a[i - 1]
        } else {
            j += 1;
            b[j - 1]
        };
        push_interval(out, r[0], end(r));
    }
}

/// Intersection of two run lists.
pub fn intersect(a: &[[u16; 2]], b: &[[u16; 2]], out: &mut Vec<[u16; 2]>) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i][0].max(b[j][0]);
        let (ea, eb) = (end(a[i]), end(b[j]));
        let hi = ea.min(eb);
        if lo <= hi {
            out.push([lo, hi - lo]);
        }
        if ea < eb {
            i += 1;
        } else {
            j += 1;
        }
    }
}

/// Number of values in both run lists.
pub fn intersect_len(a: &[[u16; 2]], b: &[[u16; 2]]) -> u32 {
    let (mut i, mut j, mut n) = (0, 0, 0u32);
    while i < a.len() && j < b.len() {
        let lo = a[i][0].max(b[j][0]);
        let (ea, eb) = (end(a[i]), end(b[j]));
        let hi = ea.min(eb);
        if lo <= hi {
            n += (hi - lo) as u32 + 1;
        }
        if ea < eb {
            i += 1;
        } else {
            j += 1;
        }
    }
    n
}

/// Runs of `a` minus the closed interval `[lo, hi]`.
pub fn remove_interval(a: &[[u16; 2]], lo: u16, hi: u16, out: &mut Vec<[u16; 2]>) {
    for &r in a {
        let e = end(r);
        if e < lo || r[0] > hi {
            out.push(r);
            continue;
        }
        if r[0] < lo {
            out.push([r[0], lo - 1 - r[0]]);
        }
        if e > hi {
            out.push([hi + 1, e - hi - 1]);
        }
    }
}

/// Flips `lo..=hi` of `a` into `out` (cleared first): outside the interval
/// the runs are unchanged, inside it they become its gaps. Returns how many
/// values of `lo..=hi` were covered before (so the result covers
/// `cardinality(a) + (hi - lo + 1) - 2 * returned`). O(runs): the runs
/// outside the interval are copied whole, the inside is one pass without
/// merges (runs are non-adjacent, so every inner gap is non-empty).
pub fn flip_interval(a: &[[u16; 2]], lo: u16, hi: u16, out: &mut Vec<[u16; 2]>) -> u32 {
    debug_assert!(lo <= hi);
    out.clear();
    out.reserve(a.len() + 2);
    let first = a.partition_point(|r| end(*r) < lo);
    let past = first + a[first..].partition_point(|r| r[0] <= hi);
    out.extend_from_slice(&a[..first]);
    let inside = &a[first..past];
    let (Some(&head), Some(&last)) = (inside.first(), inside.last()) else {
        push_interval(out, lo, hi);
        push_rest(out, &a[past..]);
        return 0;
    };
    // The first run reaching the interval: its part below `lo` stays, the
    // gap before it (from `lo`) is set.
    if head[0] < lo {
        out.push([head[0], lo - 1 - head[0]]);
    } else if lo < head[0] {
        push_interval(out, lo, head[0] - 1);
    }
    // The gaps between the runs inside: only the first run can start
    // below `lo` and only the last end above `hi`, so the ends and starts
    // these read are unclipped; each gap has at least one value.
    out.extend(
        inside
            .windows(2)
            .map(|w| [end(w[0]) + 1, w[1][0] - end(w[0]) - 2]),
    );
    let last_end = end(last);
    if last_end < hi {
        out.push([last_end + 1, hi - last_end - 1]);
    } else if last_end > hi {
        // The last run's part above `hi` stays.
        out.push([hi + 1, last_end - hi - 1]);
    }
    let covered = inside.iter().map(|r| u32::from(r[1]) + 1).sum::<u32>()
        - u32::from(lo.saturating_sub(head[0]))
        - u32::from(last_end.saturating_sub(hi));
    push_rest(out, &a[past..]);
    covered
}

/// What a container normalizes to, read off without building it: its
/// kind, cardinality, TR.STAT bytes and extremes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The kind the kind policy gives it.
    pub kind: crate::Kind,
    /// Number of values.
    pub card: u32,
    /// TR.STAT bytes of that kind ([`super::kind_policy`]).
    pub stat_bytes: usize,
    /// Smallest value.
    pub min: u16,
    /// Largest value.
    pub max: u16,
}

/// The shape of the run container `runs` (`card` values) itself: O(1).
/// `None` without runs.
#[must_use]
pub fn shape(runs: &[[u16; 2]], card: u32) -> Option<Shape> {
    Some(Shape {
        kind: crate::Kind::Run,
        card,
        stat_bytes: super::kind_policy::run_bytes(runs.len()),
        min: runs.first()?[0],
        max: end(*runs.last()?),
    })
}

/// The shape of the complement over the whole block of the run container
/// `runs` (`card` values), as flipping `0..=65535` leaves it
/// ([`crate::ContainerBuf::flip_range`]: a run container where that is
/// smaller, else the plain kind): O(1). `None` when the runs cover the
/// block (the complement is empty).
#[must_use]
pub fn complement_shape(runs: &[[u16; 2]], card: u32) -> Option<Shape> {
    let (first, last) = (*runs.first()?, *runs.last()?);
    let card = (1u32 << 16) - card;
    if card == 0 {
        return None;
    }
    let (starts_at_zero, ends_at_max) = (first[0] == 0, end(last) == u16::MAX);
    let gaps = runs.len() + 1 - usize::from(starts_at_zero) - usize::from(ends_at_max);
    let (kind, stat_bytes) = if super::kind_policy::run_is_smaller(gaps, card as usize) {
        (crate::Kind::Run, super::kind_policy::run_bytes(gaps))
    } else {
        let kind = super::kind_policy::plain_kind(card as usize);
        let bytes = match kind {
            crate::Kind::Array => super::kind_policy::array_bytes(card as usize),
            _ => super::kind_policy::bitset_bytes(),
        };
        (kind, bytes)
    };
    Some(Shape {
        kind,
        card,
        stat_bytes,
        min: if starts_at_zero { end(first) + 1 } else { 0 },
        max: if ends_at_max { last[0] - 1 } else { u16::MAX },
    })
}

/// Appends `rest` (ascending, after everything in `out`), merging its
/// first run with the last of `out` when they touch.
fn push_rest(out: &mut Vec<[u16; 2]>, rest: &[[u16; 2]]) {
    if let Some((&r, tail)) = rest.split_first() {
        push_interval(out, r[0], end(r));
        out.extend_from_slice(tail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Runs covering `set` (ascending, non-adjacent).
    fn runs_of(set: &BTreeSet<u16>) -> Vec<[u16; 2]> {
        let mut out = Vec::new();
        for &v in set {
            push_interval(&mut out, v, v);
        }
        out
    }

    /// Values near the interval's ends and the domain's, where the edge
    /// cases are.
    fn value() -> impl Strategy<Value = u16> {
        prop_oneof![
            0u16..64,
            65_472u16..=u16::MAX,
            30_000u16..30_064,
            any::<u16>()
        ]
    }

    proptest! {
        #[test]
        fn flip_interval_matches_a_model(
            set in proptest::collection::btree_set(value(), 0..200),
            a in value(),
            b in value(),
        ) {
            let (lo, hi) = (a.min(b), a.max(b));
            let mut want = set.clone();
            for v in lo..=hi {
                if !want.remove(&v) {
                    want.insert(v);
                }
            }
            let mut out = vec![[7, 7]];
            let was = flip_interval(&runs_of(&set), lo, hi, &mut out);
            prop_assert_eq!(&out, &runs_of(&want));
            prop_assert_eq!(was as usize, set.range(lo..=hi).count());
        }

        /// The complement's shape is that of the container a whole-block
        /// flip leaves.
        #[test]
        fn complement_shape_is_that_of_the_flipped_container(
            set in proptest::collection::btree_set(value(), 1..200),
            runs_of_50 in 0u16..3,
        ) {
            let mut set = set;
            // Long runs too, so that the run form is often the smaller.
            for b in 0..runs_of_50 {
                set.extend(b * 20_000..b * 20_000 + 50);
            }
            let runs = runs_of(&set);
            let c = crate::ContainerBuf::from_runs_unchecked(&runs, set.len() as u32);
            let mut flipped = c.clone();
            flipped.flip_range(0, u16::MAX);
            let got = complement_shape(&runs, set.len() as u32);
            let r = flipped.as_ref();
            let want = (!r.is_empty()).then(|| Shape {
                kind: r.kind(),
                card: r.cardinality(),
                stat_bytes: r.stat_bytes(),
                min: r.min().unwrap(),
                max: r.max().unwrap(),
            });
            prop_assert_eq!(got, want);
        }
    }
}
