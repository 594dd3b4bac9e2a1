//! Bitset containers: 1,024 u64 words; value `v` is bit `v % 64` of word `v / 64`.
//!
//! Free functions over word slices. Cardinality bookkeeping is the caller's.

/// True when bit `v` is set.
#[inline]
pub fn contains(words: &[u64; crate::codec::BITSET_WORDS], v: u16) -> bool {
    (words[(v >> 6) as usize] >> (v & 63)) & 1 == 1
}

/// Mask of bits `lo..=hi` inside one word (0 ≤ lo ≤ hi ≤ 63).
#[inline]
fn mask(lo: u32, hi: u32) -> u64 {
    (u64::MAX << lo) & (u64::MAX >> (63 - hi))
}

/// Applies `f(word, mask)` to every word touched by `lo..=hi`.
#[inline]
fn for_range(words: &mut [u64], lo: u16, hi: u16, mut f: impl FnMut(&mut u64, u64)) {
    let (lw, hw) = ((lo >> 6) as usize, (hi >> 6) as usize);
    let (lb, hb) = ((lo & 63) as u32, (hi & 63) as u32);
    if lw == hw {
        f(&mut words[lw], mask(lb, hb));
        return;
    }
    f(&mut words[lw], mask(lb, 63));
    for w in &mut words[lw + 1..hw] {
        f(w, u64::MAX);
    }
    f(&mut words[hw], mask(0, hb));
}

/// Sets bits `lo..=hi`.
pub fn set_range(words: &mut [u64], lo: u16, hi: u16) {
    for_range(words, lo, hi, |w, m| *w |= m);
}

/// Clears bits `lo..=hi`.
pub fn clear_range(words: &mut [u64], lo: u16, hi: u16) {
    for_range(words, lo, hi, |w, m| *w &= !m);
}

/// Inverts bits `lo..=hi`.
pub fn flip_range(words: &mut [u64], lo: u16, hi: u16) {
    for_range(words, lo, hi, |w, m| *w ^= m);
}

/// Number of set bits in `lo..=hi`.
pub fn count_range(words: &[u64], lo: u16, hi: u16) -> u32 {
    let (lw, hw) = ((lo >> 6) as usize, (hi >> 6) as usize);
    let (lb, hb) = ((lo & 63) as u32, (hi & 63) as u32);
    if lw == hw {
        return (words[lw] & mask(lb, hb)).count_ones();
    }
    let mut n = (words[lw] & mask(lb, 63)).count_ones() + (words[hw] & mask(0, hb)).count_ones();
    for w in &words[lw + 1..hw] {
        n += w.count_ones();
    }
    n
}

/// Number of set bits.
pub fn popcount(words: &[u64]) -> u32 {
    words.iter().map(|w| w.count_ones()).sum()
}

/// Number of set bits ≤ `v`.
pub fn rank(words: &[u64], v: u16) -> u32 {
    count_range(words, 0, v)
}

/// The `i`-th smallest set bit (0-based), if there are more than `i`.
pub fn select(words: &[u64], mut i: u32) -> Option<u16> {
    for (wi, &w) in words.iter().enumerate() {
        let c = w.count_ones();
        if i < c {
            let mut w = w;
            for _ in 0..i {
                w &= w - 1;
            }
            return Some((wi * 64 + w.trailing_zeros() as usize) as u16);
        }
        i -= c;
    }
    None
}

/// Smallest set bit.
pub fn min(words: &[u64]) -> Option<u16> {
    words
        .iter()
        .position(|&w| w != 0)
        .map(|i| (i * 64) as u16 + words[i].trailing_zeros() as u16)
}

/// Largest set bit.
pub fn max(words: &[u64]) -> Option<u16> {
    words
        .iter()
        .rposition(|&w| w != 0)
        .map(|i| (i * 64) as u16 + 63 - words[i].leading_zeros() as u16)
}

/// Smallest set bit ≥ `v`.
pub fn next_set(words: &[u64], v: u16) -> Option<u16> {
    let mut wi = (v >> 6) as usize;
    let mut w = words[wi] & (u64::MAX << (v & 63));
    loop {
        if w != 0 {
            return Some((wi * 64) as u16 + w.trailing_zeros() as u16);
        }
        wi += 1;
        if wi >= words.len() {
            return None;
        }
        w = words[wi];
    }
}

/// Writes the set bits ascending into `out`, which must hold at least the cardinality; returns the count.
pub fn to_array(words: &[u64], out: &mut [u16]) -> usize {
    let mut n = 0;
    for (wi, &w) in words.iter().enumerate() {
        let mut w = w;
        let base = (wi * 64) as u16;
        while w != 0 {
            out[n] = base + w.trailing_zeros() as u16;
            n += 1;
            w &= w - 1;
        }
    }
    n
}

/// Number of maximal runs of set bits.
pub fn count_runs(words: &[u64]) -> usize {
    let mut runs = 0usize;
    let mut carry = 0u64;
    for &w in words {
        // A run starts at each set bit whose lower neighbour is clear.
        runs += (w & !((w << 1) | carry)).count_ones() as usize;
        carry = w >> 63;
    }
    runs
}

/// Appends the runs of set bits to `out` as (start, length-1) pairs.
pub fn to_runs(words: &[u64], out: &mut Vec<[u16; 2]>) {
    let mut start: Option<u32> = None;
    for (wi, &w0) in words.iter().enumerate() {
        let base = (wi * 64) as u32;
        let mut w = w0;
        let mut pos = 0u32;
        loop {
            match start {
                None => {
                    if w == 0 {
                        break;
                    }
                    let tz = w.trailing_zeros();
                    pos += tz;
                    w >>= tz;
                    start = Some(base + pos);
                }
                Some(s) => {
                    let to = (!w).trailing_zeros();
                    if pos + to >= 64 {
                        break;
                    }
                    pos += to;
                    w >>= to;
                    let end = base + pos - 1;
                    out.push([s as u16, (end - s) as u16]);
                    start = None;
                }
            }
        }
    }
    if let Some(s) = start {
        out.push([s as u16, (65535 - s) as u16]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SplitMix;

    fn naive_runs(words: &[u64; 1024]) -> Vec<[u16; 2]> {
        let mut out = Vec::new();
        let mut v = 0u32;
        while v < 65536 {
            if contains(words, v as u16) {
                let s = v;
                while v + 1 < 65536 && contains(words, (v + 1) as u16) {
                    v += 1;
                }
                out.push([s as u16, (v - s) as u16]);
            }
            v += 1;
        }
        out
    }

    #[test]
    fn runs_match_naive_on_random_and_edge_words() {
        let mut rng = SplitMix(7);
        for case in 0..200 {
            let mut w = [0u64; 1024];
            for x in w.iter_mut() {
                *x = match case % 4 {
                    0 => rng.next_u64(),
                    1 => rng.next_u64() & rng.next_u64() & rng.next_u64(),
                    2 => [0, u64::MAX, 1, 1 << 63, u64::MAX >> 1, u64::MAX << 1]
                        [rng.below(6) as usize],
                    _ => rng.next_u64() | rng.next_u64(),
                };
            }
            let mut got = Vec::new();
            to_runs(&w, &mut got);
            assert_eq!(got, naive_runs(&w));
            assert_eq!(count_runs(&w), got.len());
        }
    }
}
