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
