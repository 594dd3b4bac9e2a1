//! Order statistics on a [`Bitmap`]: min, max, rank, select.

use crate::bitmap::{join, split, Bitmap};

impl Bitmap {
    /// Smallest value; `None` when empty.
    pub fn min(&self) -> Option<u32> {
        let (k, c) = (self.keys.first()?, self.containers.first()?);
        c.as_ref().min().map(|l| join(*k, l))
    }

    /// Largest value; `None` when empty.
    pub fn max(&self) -> Option<u32> {
        let (k, c) = (self.keys.last()?, self.containers.last()?);
        c.as_ref().max().map(|l| join(*k, l))
    }

    /// Number of values ≤ `v` (TR.RANK).
    pub fn rank(&self, v: u32) -> u64 {
        let (h, l) = split(v);
        let i = self.keys.partition_point(|&k| k < h);
        let below: u64 = self.containers[..i]
            .iter()
            .map(|c| c.cardinality() as u64)
            .sum();
        match self.keys.get(i) {
            Some(&k) if k == h => below + self.containers[i].as_ref().rank(l) as u64,
            _ => below,
        }
    }

    /// The `i`-th smallest value (0-based); `None` when `i >= len()`.
    pub fn select(&self, i: u64) -> Option<u32> {
        let mut i = i;
        for (k, c) in self.containers() {
            let card = c.cardinality() as u64;
            if i < card {
                return c.as_ref().select(i as u32).map(|l| join(k, l));
            }
            i -= card;
        }
        None
    }
}
