//! `Counter`: a statistics counter striped over cache-line-padded shards,
//! so that worker threads bumping the same counter do not contend on one
//! cache line. Reads sum the shards (exact once writers are quiet).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const SHARDS: usize = 4;

#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded(AtomicU64);

/// A striped `u64` counter.
#[derive(Debug, Default)]
pub struct Counter {
    shards: [Padded; SHARDS],
}

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn shard() -> usize {
    SHARD.with(|s| {
        let v = s.get();
        if v != usize::MAX {
            return v;
        }
        let v = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
        s.set(v);
        v
    })
}

impl Counter {
    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.shards[shard()].0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current total.
    pub fn get(&self) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |a, s| a.wrapping_add(s.0.load(Ordering::Relaxed)))
    }

    /// Sets the total to zero.
    pub fn reset(&self) {
        for s in &self.shards {
            s.0.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Counter;

    #[test]
    fn counts_across_threads() {
        let c = std::sync::Arc::new(Counter::default());
        let hs: Vec<_> = (0..6)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || (0..1000).for_each(|_| c.add(2)))
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(c.get(), 12_000);
        c.reset();
        assert_eq!(c.get(), 0);
    }
}
