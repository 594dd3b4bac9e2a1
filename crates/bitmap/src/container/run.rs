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

/// Runs of `a` with the closed interval `[lo, hi]` inverted, appended to
/// `out` (which must end before `a`'s first value, or be empty).
pub fn flip_interval(a: &[[u16; 2]], lo: u16, hi: u16, out: &mut Vec<[u16; 2]>) {
    // Outside the interval: unchanged. Inside: the gaps of `a` within [lo,
    // hi]. Everything is appended in ascending order through
    // `push_interval`, which merges a gap with a kept run it touches.
    out.reserve(a.len() + 2);
    let mut cursor = lo as u32; // first value of [lo, hi] not yet emitted as a gap
    for &r in a {
        let e = end(r);
        if e < lo || r[0] > hi {
            if r[0] > hi && cursor <= hi as u32 {
                push_interval(out, cursor as u16, hi);
                cursor = hi as u32 + 1;
            }
            push_interval(out, r[0], e);
            continue;
        }
        if r[0] < lo {
            push_interval(out, r[0], lo - 1);
        }
        let inside_lo = r[0].max(lo) as u32;
        if cursor < inside_lo {
            push_interval(out, cursor as u16, (inside_lo - 1) as u16);
        }
        cursor = e.min(hi) as u32 + 1;
        if e > hi {
            push_interval(out, hi + 1, e);
        }
    }
    if cursor <= hi as u32 {
        push_interval(out, cursor as u16, hi);
    }
}
