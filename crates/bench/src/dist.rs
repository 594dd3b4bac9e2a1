//! The distributions placeholder values are drawn from.
//!
//! - `uniform`: every value of `[0, n)` equally likely (the original tool's
//!   behaviour, without its modulo bias).
//! - `zipf`: rank `k` of `1..=n` is drawn with probability proportional to
//!   `1 / k^s` (rejection-inversion sampling, Hörmann & Derflinger 1996: O(1)
//!   per draw, no table, so `n` may be 2^32 or more). Ranks are mapped to
//!   values by a fixed permutation of `[0, n)` (`v = (k-1)·a + c mod n` with
//!   `gcd(a, n) = 1`) so the hot values are spread over the range rather
//!   than packed at its start; the mapping is the same in every run.

use rand::Rng;

/// A distribution choice, before the range is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Uniform over the range.
    Uniform,
    /// Zipfian with the given exponent (> 0).
    Zipf(f64),
}

/// Draws values from `[0, n)` with a [`Distribution`].
#[derive(Debug, Clone)]
pub struct Sampler {
    n: u64,
    zipf: Option<Zipf>,
}

impl Sampler {
    /// A sampler over `[0, n)`.
    ///
    /// # Panics
    /// If `n` is 0 or a zipf exponent is not a positive finite number (the
    /// command line checks both first).
    pub fn new(dist: Distribution, n: u64) -> Sampler {
        assert!(n > 0, "empty range");
        let zipf = match dist {
            Distribution::Uniform => None,
            Distribution::Zipf(s) => Some(Zipf::new(n, s)),
        };
        Sampler { n, zipf }
    }

    /// One value in `[0, n)`.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match &self.zipf {
            None => rng.random_range(0..self.n),
            Some(z) => z.permute(z.rank(rng) - 1),
        }
    }
}

#[derive(Debug, Clone)]
struct Zipf {
    n: u64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    squeeze: f64,
    mul: u64,
    add: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `ln(1 + x) / x`, continuous at 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x - 1) / x`, continuous at 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

impl Zipf {
    fn new(n: u64, s: f64) -> Zipf {
        assert!(s.is_finite() && s > 0.0, "zipf exponent must be > 0");
        let mut z = Zipf {
            n,
            s,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            squeeze: 0.0,
            mul: 1,
            add: 0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.squeeze = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        if n > 1 {
            let mut mul = 0x9E37_79B9_7F4A_7C15 % n;
            while mul == 0 || gcd(mul, n) != 1 {
                mul = (mul + 1) % n;
            }
            z.mul = mul;
            z.add = 0x632B_E59B_D9B4_E019 % n;
        }
        z
    }

    /// `x^-s`.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// An antiderivative of `h`: `(x^(1-s) - 1) / (1-s)` (`ln x` at s = 1).
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.s) * log_x) * log_x
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }

    /// A rank in `1..=n`.
    fn rank<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        loop {
            let u: f64 =
                self.h_integral_n + rng.random::<f64>() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inv(u);
            let k = ((x + 0.5) as u64).clamp(1, self.n);
            let kf = k as f64;
            if kf - x <= self.squeeze || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
    }

    fn permute(&self, v: u64) -> u64 {
        ((u128::from(v) * u128::from(self.mul) + u128::from(self.add)) % u128::from(self.n)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn uniform_stays_in_range_and_covers_it() {
        let s = Sampler::new(Distribution::Uniform, 10);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts = [0u32; 10];
        for _ in 0..10_000 {
            counts[s.sample(&mut rng) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
    }

    #[test]
    fn zipf_permutation_is_a_bijection() {
        for n in [1u64, 2, 7, 12, 100, 1024] {
            let z = Zipf::new(n, 0.99);
            let mut seen = vec![false; n as usize];
            for v in 0..n {
                let p = z.permute(v);
                assert!(p < n);
                assert!(!seen[p as usize], "n={n} v={v}");
                seen[p as usize] = true;
            }
        }
    }

    #[test]
    fn zipf_rank_frequencies_follow_the_power_law() {
        let n = 100u64;
        let s = 0.99;
        let z = Zipf::new(n, s);
        let mut rng = SmallRng::seed_from_u64(42);
        let mut counts = vec![0u64; n as usize + 1];
        let draws = 200_000;
        for _ in 0..draws {
            counts[z.rank(&mut rng) as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
        for k in [1usize, 2, 10, 100] {
            let want = (k as f64).powf(-s) / norm * draws as f64;
            let got = counts[k] as f64;
            assert!(
                (got - want).abs() < 0.1 * want + 50.0,
                "rank {k}: got {got}, want {want}"
            );
        }
    }

    #[test]
    fn zipf_sampler_stays_in_huge_ranges() {
        let s = Sampler::new(Distribution::Zipf(1.2), 1 << 40);
        let mut rng = SmallRng::seed_from_u64(5);
        for _ in 0..10_000 {
            assert!(s.sample(&mut rng) < 1 << 40);
        }
        let one = Sampler::new(Distribution::Zipf(0.5), 1);
        assert_eq!(one.sample(&mut rng), 0);
    }
}
