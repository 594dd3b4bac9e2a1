//! Random choices shared by SPOP / SRANDMEMBER / HRANDFIELD: uniform
//! sampling of distinct items from a stream of unknown length (reservoir)
//! and draws with repetition.

use rand::Rng;

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
