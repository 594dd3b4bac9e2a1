//! Random choices shared by SPOP / SRANDMEMBER / HRANDFIELD / RANDOMKEY:
//! uniform sampling of distinct items from a stream of unknown length
//! (reservoir), draws with repetition, and single picks by rank
//! ([`pick_one`]) with a configurable bound on the work per pick
//! ([`set_exact_pick_limit`]).

use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;

use crate::error::Result;

/// Default of [`exact_pick_limit`]: single random picks are exactly
/// uniform over collections (and databases) of up to this many items.
pub const DEFAULT_EXACT_PICK_LIMIT: u64 = 100_000;

static EXACT_PICK_LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_EXACT_PICK_LIMIT);

/// The most items one [`pick_one`] walks past (process-wide; the server's
/// `random-pick-limit` setting). Up to this many items a pick is exactly
/// uniform; above it, see [`pick_one`] for the residual bias.
pub fn exact_pick_limit() -> u64 {
    EXACT_PICK_LIMIT.load(Ordering::Relaxed)
}

/// Sets [`exact_pick_limit`] (at least 1).
pub fn set_exact_pick_limit(n: u64) {
    EXACT_PICK_LIMIT.store(n.max(1), Ordering::Relaxed);
}

/// One random item of an ordered collection said to hold `n` items
/// (`None` when it turns out empty). `scan(from)` yields the items in
/// ascending key order, all of them for `None`, else those with key after
/// `from` (exclusive or inclusive, either is fine); `bounds()` gives the
/// first and last key (`None` when empty). `rev`, only where `n` is exact
/// (a set's or hash's stored cardinality), yields all items in descending
/// order; it halves the entries read (a descending step costs more than an
/// ascending one in fjall's memtable, so the time saved is smaller).
///
/// Cost and uniformity, with `L` = [`exact_pick_limit`]:
/// - `n <= L`: a uniform rank `r < n`, then a walk past `r` items (from the
///   last item down when `rev` is given and `r >= n/2`): exactly uniform,
///   at most `n` items read (`n/2` with `rev`). If the walk ends early (the
///   scan yields `m < n` items, e.g. RANDOMKEY, whose `n` counts expired
///   keys the scan skips) it now knows `m` and walks forward again to a
///   uniform rank below `m`: still exactly uniform without `rev` (every
///   item has `1/n + (n-m)/n * 1/m = 1/m`), at most `n + m` items read.
///   Items past rank `n` (a scan yielding more than `n`) are never picked.
/// - `n > L`: a random pivot between the first and last key
///   ([`pivot_between`]), then a walk past a uniform `s < L` items from
///   the pivot, wrapping round to the first key: at most `L` items read.
///   Not exactly uniform: an item's chance is proportional to the pivot
///   probability of the key range spanned by the `L` items before it, so
///   only density changes in key space over stretches of more than `L`
///   items bias the pick (where keys are evenly spread on that scale it is
///   uniform; a lone key followed by a dense run of more than `L` keys
///   favours the first `L` keys of the run).
///
/// # Errors
/// Those of `scan` / `bounds`.
pub fn pick_one<'a, T, I>(
    n: u64,
    scan: impl FnMut(Option<&[u8]>) -> I,
    rev: Option<Box<dyn FnOnce() -> I + 'a>>,
    bounds: impl FnOnce() -> Result<Option<(Vec<u8>, Vec<u8>)>>,
) -> Result<Option<T>>
where
    I: Iterator<Item = Result<T>>,
{
    pick_one_with(exact_pick_limit(), n, scan, rev, bounds)
}

/// [`pick_one`] with the limit given.
fn pick_one_with<'a, T, I>(
    limit: u64,
    n: u64,
    mut scan: impl FnMut(Option<&[u8]>) -> I,
    rev: Option<Box<dyn FnOnce() -> I + 'a>>,
    bounds: impl FnOnce() -> Result<Option<(Vec<u8>, Vec<u8>)>>,
) -> Result<Option<T>>
where
    I: Iterator<Item = Result<T>>,
{
    let mut rng = rand::rng();
    let limit = limit.max(1);
    if n <= limit {
        if n == 0 {
            return Ok(None);
        }
        let mut r = rng.random_range(0..n);
        let items = match rev {
            Some(rev) if r >= n / 2 => {
                r = n - 1 - r;
                rev()
            }
            _ => scan(None),
        };
        let mut seen = 0u64;
        for item in items {
            let item = item?;
            if seen == r {
                return Ok(Some(item));
            }
            seen += 1;
        }
        if seen == 0 {
            return Ok(None);
        }
        let r = rng.random_range(0..seen);
        return scan(None).nth(r as usize).transpose();
    }
    let Some((first, last)) = bounds()? else {
        return Ok(None);
    };
    let pivot = if first <= last {
        pivot_between(&first, &last)
    } else {
        first
    };
    let mut s = rng.random_range(0..limit);
    let mut from_pivot = true;
    loop {
        let mut any = false;
        let items = if from_pivot {
            scan(Some(&pivot))
        } else {
            scan(None)
        };
        for item in items {
            let item = item?;
            any = true;
            if s == 0 {
                return Ok(Some(item));
            }
            s -= 1;
        }
        if !from_pivot && !any {
            return Ok(None);
        }
        from_pivot = false;
    }
}

/// Up to `k` distinct items of `items`, uniformly (reservoir sampling),
/// in random order.
pub fn reservoir<T>(items: impl Iterator<Item = T>, k: usize) -> Vec<T> {
    let mut rng = rand::rng();
    let mut out: Vec<T> = Vec::with_capacity(k.min(1024));
    if k == 0 {
        return out;
    }
    for (i, item) in items.enumerate() {
        if out.len() < k {
            out.push(item);
        } else {
            let j = rng.random_range(0..=i);
            if j < k {
                out[j] = item;
            }
        }
    }
    // Shuffle so the reply order is random too.
    for i in (1..out.len()).rev() {
        let j = rng.random_range(0..=i);
        out.swap(i, j);
    }
    out
}

/// `n` draws with repetition from `pool` (empty when `pool` is empty).
pub fn with_repeats<T: Clone>(pool: &[T], n: usize) -> Vec<T> {
    if pool.is_empty() {
        return Vec::new();
    }
    let mut rng = rand::rng();
    (0..n)
        .map(|_| pool[rng.random_range(0..pool.len())].clone())
        .collect()
}

/// A random byte string `p` with `lo <= p <= hi` (lexicographically), used
/// as a seek target for sampling big ordered collections. Requires
/// `lo <= hi`.
pub fn pivot_between(lo: &[u8], hi: &[u8]) -> Vec<u8> {
    let mut rng = rand::rng();
    let mut out = Vec::with_capacity(hi.len().max(lo.len()) + 4);
    let mut i = 0;
    // Copy the common prefix.
    while i < lo.len() && i < hi.len() && lo[i] == hi[i] {
        out.push(lo[i]);
        i += 1;
    }
    let a = lo.get(i).copied().unwrap_or(0);
    let Some(&b) = hi.get(i) else {
        // lo == hi (or hi is a prefix of lo, impossible when lo <= hi).
        return hi.to_vec();
    };
    let c = rng.random_range(a..=b);
    out.push(c);
    if c < b {
        // Strictly below hi from here on: any suffix keeps p < hi.
        for _ in 0..4 {
            out.push(rng.random());
        }
    }
    if out.as_slice() < lo {
        return lo.to_vec();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pivot_stays_between_bounds() {
        for (lo, hi) in [
            (&b"a"[..], &b"z"[..]),
            (b"m1", b"m999"),
            (b"", b"\x00"),
            (b"same", b"same"),
            (b"abc", b"abd"),
            (b"1", b"10"),
        ] {
            for _ in 0..200 {
                let p = pivot_between(lo, hi);
                assert!(
                    p.as_slice() >= lo && p.as_slice() <= hi,
                    "{lo:?} {hi:?} {p:?}"
                );
            }
        }
    }

    /// Runs `draws` picks over `keys` (sorted) with `limit`, claiming `n`
    /// items; returns how often each key came up.
    /// With `with_rev`, also a descending scan (the items' own count must
    /// be `n` then).
    fn pick_counts<'k>(
        keys: &'k [Vec<u8>],
        n: u64,
        limit: u64,
        draws: usize,
        with_rev: bool,
    ) -> Vec<usize> {
        type It<'k> = Box<dyn Iterator<Item = Result<usize>> + 'k>;
        let keys: &'k [Vec<u8>] = keys;
        let mut counts = vec![0; keys.len()];
        for _ in 0..draws {
            let scan = |from: Option<&[u8]>| -> It<'k> {
                let from = from.map(<[u8]>::to_vec);
                Box::new(
                    keys.iter()
                        .enumerate()
                        .filter(move |(_, k)| {
                            from.as_ref().is_none_or(|f| k.as_slice() > f.as_slice())
                        })
                        .map(|(i, _)| Ok(i)),
                )
            };
            let rev: Option<Box<dyn FnOnce() -> It<'k>>> = if with_rev {
                let len = keys.len();
                Some(Box::new(move || Box::new((0..len).rev().map(Ok)) as It<'k>))
            } else {
                None
            };
            let bounds = || Ok(Some((keys[0].clone(), keys[keys.len() - 1].clone())));
            let i = pick_one_with(limit, n, scan, rev, bounds).unwrap().unwrap();
            counts[i] += 1;
        }
        counts
    }

    fn decimal_keys(n: usize) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = (0..n).map(|i| i.to_string().into_bytes()).collect();
        keys.sort();
        keys
    }

    #[test]
    fn pick_one_is_uniform_within_the_limit() {
        // Decimal keys: wide key-space gaps before "1", "10", "100", ...
        // that a pivot pick would favour.
        let keys = decimal_keys(2000);
        let counts = pick_counts(&keys, 2000, 10_000, 300, false);
        let distinct = counts.iter().filter(|&&c| c > 0).count();
        // Uniform: ~278 distinct of 300 draws from 2000.
        assert!(distinct > 250, "{distinct} distinct");
        // The claimed count exceeds the items (RANDOMKEY with expired
        // keys): every pick still lands on an item, still spread.
        let counts = pick_counts(&keys, 3000, 10_000, 300, false);
        assert_eq!(counts.iter().sum::<usize>(), 300);
        assert!(counts.iter().filter(|&&c| c > 0).count() > 250);
        // With a descending scan too.
        let counts = pick_counts(&keys, 2000, 10_000, 300, true);
        assert!(counts.iter().filter(|&&c| c > 0).count() > 250);
        // A small collection, many draws: each count is within 10% of
        // its expectation (10,000; more than 10 standard deviations).
        let keys = decimal_keys(5);
        for with_rev in [false, true] {
            for c in pick_counts(&keys, 5, 10, 50_000, with_rev) {
                assert!((9_000..=11_000).contains(&c), "{c} (rev {with_rev})");
            }
        }
    }

    #[test]
    fn pick_one_above_the_limit_walks_at_most_the_limit() {
        let keys = decimal_keys(2000);
        for _ in 0..200 {
            let steps = std::cell::Cell::new(0u64);
            let scan = |from: Option<&[u8]>| {
                let from = from.map(<[u8]>::to_vec);
                let steps = &steps;
                keys.iter()
                    .filter(move |k| from.as_ref().is_none_or(|f| k.as_slice() > f.as_slice()))
                    .inspect(move |_| steps.set(steps.get() + 1))
                    .map(Ok)
            };
            let bounds = || Ok(Some((keys[0].clone(), keys[keys.len() - 1].clone())));
            assert!(pick_one_with(100, 2000, scan, None, bounds)
                .unwrap()
                .is_some());
            assert!(steps.get() <= 100, "{} items read", steps.get());
        }
        // Keys spread evenly over byte space: the windowed pick is close
        // to uniform.
        let mut keys: Vec<Vec<u8>> = (0..2000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes().to_vec())
            .collect();
        keys.sort();
        let counts = pick_counts(&keys, 2000, 200, 300, false);
        let distinct = counts.iter().filter(|&&c| c > 0).count();
        assert!(distinct > 250, "{distinct} distinct");
        // Empty collection.
        let none: Option<u8> = pick_one_with(
            10,
            100,
            |_| std::iter::empty::<Result<u8>>(),
            None,
            || Ok(Some((b"a".to_vec(), b"b".to_vec()))),
        )
        .unwrap();
        assert!(none.is_none());
    }

    #[test]
    fn reservoir_returns_distinct_items() {
        let v = reservoir(0..100, 10);
        let mut s = v.clone();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), 10);
        assert_eq!(reservoir(0..3, 10).len(), 3);
        assert_eq!(with_repeats(&[1], 5), vec![1; 5]);
    }
}
