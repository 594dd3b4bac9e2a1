//! Latency histogram with fixed log-linear buckets (HdrHistogram's layout):
//! values below 2^SUB_BITS nanoseconds each have their own bucket; above, every
//! power of two is split into 2^(SUB_BITS-1) equal buckets, so a bucket is at
//! most 1/2^(SUB_BITS-1) of its values wide (< 0.8% relative error).
//!
//! The buckets are the same for every histogram, so merging per-worker
//! histograms is an exact element-wise sum: the merge equals the histogram
//! of all recorded values. Count, sum, sum of squares, min and max are kept
//! exactly besides the buckets.

/// Bits of linear resolution per power of two (plus one).
const SUB_BITS: u32 = 8;
const HALF: usize = 1 << (SUB_BITS - 1);
/// Enough buckets for any `u64`.
const BUCKETS: usize = (64 - SUB_BITS as usize + 2) * HALF;

/// A histogram of durations in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum: u128,
    sum_squares: f64,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

/// The bucket of `v`.
fn index_of(v: u64) -> usize {
    let h = 63 - (v | 1).leading_zeros();
    let b = (h + 1).saturating_sub(SUB_BITS);
    b as usize * HALF + (v >> b) as usize
}

/// The smallest and largest values of bucket `i`.
fn bounds_of(i: usize) -> (u64, u64) {
    let b = if i < 2 * HALF { 0 } else { i / HALF - 1 };
    let sub = (i - b * HALF) as u64;
    let low = sub << b;
    (low, low + ((1u64 << b) - 1))
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS],
            count: 0,
            sum: 0,
            sum_squares: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.record_n(v, 1);
    }

    /// Records `n` equal values (a pipelined window's commands).
    #[inline]
    pub fn record_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[index_of(v)] += n;
        self.count += n;
        self.sum += u128::from(v) * u128::from(n);
        self.sum_squares += (v as f64) * (v as f64) * n as f64;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every value of `other` to `self`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum_squares += other.sum_squares;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Smallest recorded value (0 if empty).
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// Largest recorded value (0 if empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Exact mean (0 if empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Population standard deviation (0 if empty).
    pub fn stddev(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let mean = self.mean();
        (self.sum_squares / self.count as f64 - mean * mean)
            .max(0.0)
            .sqrt()
    }

    /// The value at quantile `q` in `[0, 1]`: the smallest recorded value `v`
    /// such that at least `ceil(q · count)` values (at least one) are `<= v`,
    /// reported as the largest value of its bucket, clamped to `[min, max]`.
    /// Exact below 2^SUB_BITS ns; otherwise within one bucket. 0 if empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bounds_of(i).1.clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Counts per power-of-two range `[2^k, 2^(k+1))` (with 0 in the first
    /// range), from the range holding `min` to the one holding `max`: pairs
    /// of (upper bound exclusive, count). Empty if nothing was recorded.
    pub fn log2_bins(&self) -> Vec<(u64, u64)> {
        if self.count == 0 {
            return Vec::new();
        }
        let bin_of = |v: u64| 63 - (v | 1).leading_zeros();
        let (first, last) = (bin_of(self.min()), bin_of(self.max));
        let mut bins: Vec<(u64, u64)> = (first..=last)
            .map(|k| (1u64.checked_shl(k + 1).unwrap_or(u64::MAX), 0))
            .collect();
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                // A bucket never straddles a power of two.
                let k = bin_of(bounds_of(i).0);
                bins[(k - first) as usize].1 += c;
            }
        }
        bins
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn buckets_tile_the_value_space() {
        let mut next = 0u64;
        for i in 0..BUCKETS {
            let (low, high) = bounds_of(i);
            assert_eq!(low, next, "bucket {i}");
            assert!(high >= low);
            assert_eq!(index_of(low), i);
            assert_eq!(index_of(high), i);
            if high == u64::MAX {
                assert_eq!(i, BUCKETS - 1);
                return;
            }
            next = high + 1;
        }
        panic!("buckets end before u64::MAX at {next}");
    }

    #[test]
    fn bucket_width_is_within_relative_error() {
        for v in [300u64, 1_000, 123_456, 9_999_999, 1 << 40, u64::MAX / 3] {
            let (low, high) = bounds_of(index_of(v));
            assert!(low <= v && v <= high);
            assert!(((high - low) as f64) / (low as f64) < 1.0 / HALF as f64);
        }
    }

    #[test]
    fn quantiles_of_small_values_are_exact() {
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 50);
        assert_eq!(h.quantile(0.9), 90);
        assert_eq!(h.quantile(0.99), 99);
        assert_eq!(h.quantile(0.999), 100);
        assert_eq!(h.quantile(1.0), 100);
        assert_eq!(h.quantile(0.0), 1);
        assert_eq!(h.min(), 1);
        assert_eq!(h.max(), 100);
        assert_eq!(h.mean(), 50.5);
        assert!((h.stddev() - 28.866).abs() < 0.01);
    }

    #[test]
    fn quantile_of_large_values_is_within_one_bucket() {
        let mut h = Histogram::new();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        for (q, exact) in [(0.5, 5_000_000u64), (0.9, 9_000_000), (0.99, 9_900_000)] {
            let got = h.quantile(q);
            assert!(got >= exact, "q={q}: {got} < {exact}");
            assert!((got - exact) as f64 / (exact as f64) < 1.0 / HALF as f64);
        }
        assert_eq!(h.quantile(1.0), 10_000_000);
    }

    #[test]
    fn empty_histogram_reports_zeros() {
        let h = Histogram::new();
        assert_eq!((h.count(), h.min(), h.max(), h.quantile(0.5)), (0, 0, 0, 0));
        assert_eq!(h.mean(), 0.0);
        assert!(h.log2_bins().is_empty());
    }

    #[test]
    fn record_n_equals_repeated_record() {
        let (mut a, mut b) = (Histogram::new(), Histogram::new());
        a.record_n(777, 3);
        for _ in 0..3 {
            b.record(777);
        }
        assert_eq!(a, b);
    }

    #[test]
    fn log2_bins_cover_min_to_max() {
        let mut h = Histogram::new();
        for v in [3u64, 5, 6, 1000, 1023, 1024] {
            h.record(v);
        }
        let bins = h.log2_bins();
        assert_eq!(bins.first(), Some(&(4, 1)));
        assert_eq!(bins.last(), Some(&(2048, 1)));
        assert_eq!(bins.iter().map(|b| b.1).sum::<u64>(), 6);
        assert_eq!(bins.len(), 10);
    }

    proptest! {
        #[test]
        fn merge_equals_recording_everything_in_one(
            a in proptest::collection::vec(0u64..u64::MAX / 4, 0..200),
            b in proptest::collection::vec(0u64..50_000_000, 0..200),
        ) {
            let (mut ha, mut hb, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
            for &v in &a { ha.record(v); all.record(v); }
            for &v in &b { hb.record(v); all.record(v); }
            ha.merge(&hb);
            prop_assert_eq!(&ha.counts, &all.counts);
            prop_assert_eq!((ha.count, ha.sum, ha.min(), ha.max), (all.count, all.sum, all.min(), all.max));
        }

        #[test]
        fn quantile_is_never_below_the_exact_order_statistic(
            mut vs in proptest::collection::vec(0u64..1_000_000_000, 1..300),
            q in 0.0f64..=1.0,
        ) {
            let mut h = Histogram::new();
            for &v in &vs { h.record(v); }
            vs.sort_unstable();
            let rank = ((q * vs.len() as f64).ceil() as usize).max(1);
            let exact = vs[rank - 1];
            let got = h.quantile(q);
            prop_assert!(got >= exact);
            prop_assert!(got - exact <= exact / HALF as u64);
        }
    }
}
