//! An ordered map from integer heads to values, flat enough that a lookup
//! waits on few cache misses: the heads in sorted chunks of at most
//! [`CHUNK_MAX`], each chunk's heads in one array of their own with the
//! last head of every eight beside it, found through one array of every
//! chunk's last head (its *fence*).
//!
//! Why not `BTreeMap<u64, V>`: a lookup there descends a node per level
//! (five for the ~25,000 pages of a set of a million members), each a
//! dependent cache miss on the node's length and keys, and a sixth on the
//! value, which sits in its own part of the leaf; a SISMEMBER at 100
//! requests in flight spent a seventh of the server's time in that
//! descent. Here the fences (8 bytes a chunk) stay in cache; in the chunk
//! a lookup reads the line of segment ends, then one segment of heads,
//! then the value. A batch of lookups can go step by step over all of
//! them ([`HeadTree::prefetch_seek`]), so that their misses overlap.
//!
//! Costs: an insert or a removal moves up to [`CHUNK_MAX`] heads and
//! values within their chunk, and a split or merge of a chunk moves the
//! fences (one per chunk). A chunk falls below a quarter only while no
//! neighbour has room for it.

use std::ops::Bound;

/// A prefetch of the entry a seek lands on ([`HeadTree::prefetch_seek`]).
pub(crate) struct Seek<'a, V> {
    chunk: &'a Chunk<V>,
    h: u64,
    /// The segment of heads, once [`Seek::segment`] picked it.
    k: usize,
    /// The entry's index in the chunk, once [`Seek::slot`] found it.
    i: usize,
}

impl<'a, V> Seek<'a, V> {
    /// Picks the segment of heads by the segment ends (which the seek
    /// asked for) and asks that segment into cache.
    pub(crate) fn segment(&mut self) {
        self.k = self.chunk.segment(self.h, true);
        if let Some(x) = self.chunk.heads.get(SEGMENT * self.k) {
            crate::prefetch::line(std::ptr::from_ref(x).cast());
        }
    }

    /// Finds the entry among its segment's heads and asks its value slot
    /// into cache.
    pub(crate) fn slot(&mut self) {
        self.i = self
            .chunk
            .count_in(self.k, self.h, true)
            .min(self.chunk.vals.len() - 1);
        let p = std::ptr::from_ref(&self.chunk.vals[self.i]).cast::<u8>();
        crate::prefetch::line(p);
        crate::prefetch::line(p.wrapping_add(size_of::<V>() - 1));
    }

    /// The entry's value (after [`Seek::slot`]), for the caller to
    /// prefetch what it points to.
    pub(crate) fn value(&self) -> &'a V {
        &self.chunk.vals[self.i]
    }
}

/// Heads a chunk holds before it splits in two.
const CHUNK_MAX: usize = 64;

/// The map (see the module docs).
pub(crate) struct HeadTree<V> {
    /// The last (greatest) head of each chunk, ascending: the chunks'
    /// own last heads, kept dense so that the search among them stays in
    /// a few cache lines.
    fences: Vec<u64>,
    /// Never empty chunks, ascending: every head of a chunk is above the
    /// previous chunk's fence.
    chunks: Vec<Chunk<V>>,
}

/// Heads and their values, ascending, `heads.len() == vals.len() >= 1`,
/// and the last head of each segment of [`SEGMENT`] heads: a count of the
/// heads below a bound reads that line and one segment of heads, two
/// cache lines instead of all of the chunk's.
struct Chunk<V> {
    /// `sub[k]`: the last head of segment `k` (`heads[8k..8k + 8]`);
    /// `u64::MAX` past the last segment (a count then stops at the
    /// segments that hold heads, whatever the bound).
    sub: [u64; SEGMENTS],
    heads: Vec<u64>,
    vals: Vec<V>,
}

/// Heads a segment of a chunk holds: one cache line.
const SEGMENT: usize = 8;

/// Segments of a full chunk.
const SEGMENTS: usize = CHUNK_MAX / SEGMENT;

impl<V> Chunk<V> {
    fn new(heads: Vec<u64>, vals: Vec<V>) -> Self {
        let mut c = Chunk {
            sub: [u64::MAX; SEGMENTS],
            heads,
            vals,
        };
        c.resum();
        c
    }

    /// Sets [`Chunk::sub`] after a change of the heads.
    fn resum(&mut self) {
        let n = self.heads.len();
        for (k, s) in self.sub.iter_mut().enumerate() {
            *s = if SEGMENT * k < n {
                self.heads[(SEGMENT * k + SEGMENT - 1).min(n - 1)]
            } else {
                u64::MAX
            };
        }
    }

    /// The segment whose heads a count of the heads below `h` (`strict`)
    /// or at most `h` reads: the first whose last head passes `h`
    /// ([`SEGMENTS`] when none does).
    #[inline]
    fn segment(&self, h: u64, strict: bool) -> usize {
        count_below(&self.sub, h, strict)
    }

    /// Number of heads below `h` (`strict`) or at most `h` (not
    /// `strict`).
    #[inline]
    fn count(&self, h: u64, strict: bool) -> usize {
        self.count_in(self.segment(h, strict), h, strict)
    }

    /// [`Chunk::count`] once its segment `k` is known.
    #[inline]
    fn count_in(&self, k: usize, h: u64, strict: bool) -> usize {
        let at = (SEGMENT * k).min(self.heads.len());
        let end = (at + SEGMENT).min(self.heads.len());
        at + count_below(&self.heads[at..end], h, strict)
    }
}

impl<V> Default for HeadTree<V> {
    fn default() -> Self {
        HeadTree {
            fences: Vec::new(),
            chunks: Vec::new(),
        }
    }
}

/// A place in the map: chunk and index in it, `(chunks.len(), 0)` past
/// the end. Index below its chunk's length otherwise.
type Pos = (usize, usize);

/// Number of `heads` below `h` (`strict`) or at most `h` (not `strict`):
/// a count over the whole slice, branch-free.
#[inline]
fn count_below(heads: &[u64], h: u64, strict: bool) -> usize {
    if strict {
        heads.iter().map(|&x| usize::from(x < h)).sum()
    } else {
        heads.iter().map(|&x| usize::from(x <= h)).sum()
    }
}

impl<V> HeadTree<V> {
    /// The first chunk whose fence is at least `h` (`strict`) or above
    /// `h` (not `strict`); `chunks.len()` when none is.
    fn chunk_of(&self, h: u64, strict: bool) -> usize {
        if strict {
            self.fences.partition_point(|&f| f < h)
        } else {
            self.fences.partition_point(|&f| f <= h)
        }
    }

    /// The first place whose head is at least `h` (`strict`) or above `h`
    /// (not `strict`).
    fn seek(&self, h: u64, strict: bool) -> Pos {
        let c = self.chunk_of(h, strict);
        match self.chunks.get(c) {
            // The fence of chunk `c` passes `h`, so the index is inside it.
            Some(ch) => (c, ch.count(h, strict)),
            None => (c, 0),
        }
    }

    /// The place of head `h`, if the map holds it.
    fn find(&self, h: u64) -> Option<Pos> {
        let (c, i) = self.seek(h, true);
        (self.chunks.get(c)?.heads[i] == h).then_some((c, i))
    }

    /// The value of `h`.
    pub(crate) fn get(&self, h: u64) -> Option<&V> {
        let (c, i) = self.find(h)?;
        Some(&self.chunks[c].vals[i])
    }

    /// The value of `h`, to change in place.
    pub(crate) fn get_mut(&mut self, h: u64) -> Option<&mut V> {
        let (c, i) = self.find(h)?;
        Some(&mut self.chunks[c].vals[i])
    }

    /// Starts a prefetch of the first entry at or after `h` (a hint): asks
    /// the segment ends of its chunk into cache and returns the seek, whose
    /// [`Seek::segment`], [`Seek::slot`] and [`Seek::value`] go on from
    /// there. Run each step for every seek of a batch before the next
    /// step, so that the batch's cache misses overlap. `None` past the
    /// last head.
    pub(crate) fn prefetch_seek(&self, h: u64) -> Option<Seek<'_, V>> {
        let chunk = self.chunks.get(self.chunk_of(h, true))?;
        crate::prefetch::line(std::ptr::from_ref(&chunk.sub).cast());
        Some(Seek {
            chunk,
            h,
            k: 0,
            i: 0,
        })
    }

    /// Sets the value of `h`; returns the one it replaces.
    pub(crate) fn insert(&mut self, h: u64, v: V) -> Option<V> {
        if self.chunks.is_empty() {
            self.chunks.push(Chunk::new(vec![h], vec![v]));
            self.fences.push(h);
            return None;
        }
        let (mut c, mut i) = self.seek(h, true);
        if c == self.chunks.len() {
            // Above every head: the end of the last chunk.
            c -= 1;
            i = self.chunks[c].heads.len();
        }
        if self.chunks[c].heads.get(i) == Some(&h) {
            return Some(std::mem::replace(&mut self.chunks[c].vals[i], v));
        }
        if self.chunks[c].heads.len() == CHUNK_MAX {
            if i == CHUNK_MAX && c + 1 == self.chunks.len() {
                // Past the last head: a new chunk, so that ascending
                // inserts (a key loaded whole) leave full chunks behind.
                self.chunks.push(Chunk::new(vec![h], vec![v]));
                self.fences.push(h);
                return None;
            }
            // Split before the insert, so that no chunk's arrays grow past
            // CHUNK_MAX (a `Vec` at capacity doubles it).
            self.split(c);
            let lower = self.chunks[c].heads.len();
            if i > lower {
                (c, i) = (c + 1, i - lower);
            }
        }
        let ch = &mut self.chunks[c];
        ch.heads.insert(i, h);
        ch.vals.insert(i, v);
        ch.resum();
        self.fences[c] = *ch.heads.last().expect("not empty");
        None
    }

    /// Moves the upper half of chunk `c` into a new chunk after it.
    fn split(&mut self, c: usize) {
        let ch = &mut self.chunks[c];
        let half = ch.heads.len() / 2;
        let upper = Chunk::new(ch.heads.split_off(half), ch.vals.split_off(half));
        ch.resum();
        self.fences[c] = *ch.heads.last().expect("half is not empty");
        self.fences
            .insert(c + 1, *upper.heads.last().expect("half is not empty"));
        self.chunks.insert(c + 1, upper);
    }

    /// Removes `h`; returns its value.
    pub(crate) fn remove(&mut self, h: u64) -> Option<V> {
        let (c, i) = self.find(h)?;
        let ch = &mut self.chunks[c];
        ch.heads.remove(i);
        let v = ch.vals.remove(i);
        ch.resum();
        if ch.heads.is_empty() {
            self.chunks.remove(c);
            self.fences.remove(c);
            return Some(v);
        }
        self.fences[c] = *ch.heads.last().expect("not empty");
        let n = ch.heads.len();
        if n < CHUNK_MAX / 4 {
            let room = |o: usize| {
                self.chunks
                    .get(o)
                    .is_some_and(|x| x.heads.len() + n <= CHUNK_MAX)
            };
            if room(c + 1) {
                self.merge_next(c);
            } else if c > 0 && room(c - 1) {
                self.merge_next(c - 1);
            }
        }
        Some(v)
    }

    /// Moves chunk `c + 1` onto the end of chunk `c`.
    fn merge_next(&mut self, c: usize) {
        let next = self.chunks.remove(c + 1);
        self.fences.remove(c + 1);
        let ch = &mut self.chunks[c];
        ch.heads.extend(next.heads);
        ch.vals.extend(next.vals);
        ch.resum();
        self.fences[c] = *ch.heads.last().expect("not empty");
    }

    /// The entries whose heads are within the bounds, ascending (reverse
    /// the iterator for descending); none when the bounds cross.
    pub(crate) fn range(&self, lo: Bound<u64>, hi: Bound<u64>) -> Range<'_, V> {
        let front = match lo {
            Bound::Included(h) => self.seek(h, true),
            Bound::Excluded(h) => self.seek(h, false),
            Bound::Unbounded => (0, 0),
        };
        let back = match hi {
            Bound::Included(h) => self.seek(h, false),
            Bound::Excluded(h) => self.seek(h, true),
            Bound::Unbounded => (self.chunks.len(), 0),
        };
        Range {
            tree: self,
            back: back.max(front),
            front,
        }
    }

    /// Every value, moved out, ascending by head.
    pub(crate) fn into_values(self) -> impl Iterator<Item = V> {
        self.chunks.into_iter().flat_map(|c| c.vals)
    }
}

/// The entries of a [`HeadTree::range`]: `(head, value)`, from either end.
/// A clone walks on independently.
pub(crate) struct Range<'a, V> {
    tree: &'a HeadTree<V>,
    /// The next place from the front.
    front: Pos,
    /// The place after the next one from the back (exclusive).
    back: Pos,
}

impl<V> Clone for Range<'_, V> {
    fn clone(&self) -> Self {
        Range {
            tree: self.tree,
            front: self.front,
            back: self.back,
        }
    }
}

impl<'a, V> Range<'a, V> {
    fn at(&self, (c, i): Pos) -> (&'a u64, &'a V) {
        let ch = &self.tree.chunks[c];
        (&ch.heads[i], &ch.vals[i])
    }
}

impl<'a, V> Iterator for Range<'a, V> {
    type Item = (&'a u64, &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.front == self.back {
            return None;
        }
        let item = self.at(self.front);
        let (c, i) = self.front;
        self.front = if i + 1 < self.tree.chunks[c].heads.len() {
            (c, i + 1)
        } else {
            (c + 1, 0)
        };
        Some(item)
    }
}

impl<V> DoubleEndedIterator for Range<'_, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front == self.back {
            return None;
        }
        let (c, i) = self.back;
        self.back = if i > 0 {
            (c, i - 1)
        } else {
            (c - 1, self.tree.chunks[c - 1].heads.len() - 1)
        };
        Some(self.at(self.back))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Heads that meet: a small space, so that inserts hit present heads
    /// and removals find them.
    fn op() -> impl Strategy<Value = (u8, u64, u32)> {
        (0u8..4, 0u64..400, any::<u32>())
    }

    fn bound(kind: u8, h: u64) -> Bound<u64> {
        match kind % 3 {
            0 => Bound::Included(h),
            1 => Bound::Excluded(h),
            _ => Bound::Unbounded,
        }
    }

    fn len(t: &HeadTree<u32>) -> usize {
        t.chunks.iter().map(|c| c.heads.len()).sum()
    }

    fn check_shape(t: &HeadTree<u32>) {
        assert_eq!(t.fences.len(), t.chunks.len());
        let mut prev = None;
        for (c, ch) in t.chunks.iter().enumerate() {
            assert!(!ch.heads.is_empty() && ch.heads.len() <= CHUNK_MAX);
            assert!(ch.heads.capacity() <= CHUNK_MAX && ch.vals.capacity() <= CHUNK_MAX);
            assert_eq!(ch.heads.len(), ch.vals.len());
            assert_eq!(t.fences[c], *ch.heads.last().unwrap());
            let want = Chunk::<u32>::new(ch.heads.clone(), Vec::new());
            assert_eq!(ch.sub, want.sub, "segment ends follow the heads");
            for &h in &ch.heads {
                assert!(prev < Some(h), "heads ascend across chunks");
                prev = Some(h);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Inserts, removals, lookups and ranges (both ways) agree with a
        /// `BTreeMap` after every step, and the chunks keep their shape.
        #[test]
        fn agrees_with_a_btreemap(ops in proptest::collection::vec(op(), 1..1500)) {
            let mut t = HeadTree::default();
            let mut m = BTreeMap::new();
            for (kind, h, v) in ops {
                match kind {
                    0 | 1 => prop_assert_eq!(t.insert(h, v), m.insert(h, v)),
                    2 => prop_assert_eq!(t.remove(h), m.remove(&h)),
                    _ => {
                        prop_assert_eq!(t.get(h), m.get(&h));
                        if let Some(x) = t.get_mut(h) {
                            *x = v;
                            m.insert(h, v);
                        }
                    }
                }
                let lo = bound((v >> 8) as u8, h.saturating_sub(u64::from(v % 50)));
                let hi = bound((v >> 16) as u8, h + u64::from(v % 70));
                let crossed = matches!((lo, hi), (Bound::Excluded(a), Bound::Excluded(b)) if a == b);
                let want: Vec<_> = if crossed { Vec::new() } else { m.range((lo, hi)).collect() };
                let got: Vec<_> = t.range(lo, hi).collect();
                prop_assert_eq!(&got, &want);
                let mut back: Vec<_> = t.range(lo, hi).rev().collect();
                back.reverse();
                prop_assert_eq!(&back, &want);
            }
            check_shape(&t);
            prop_assert_eq!(len(&t), m.len());
            prop_assert_eq!(t.into_values().collect::<Vec<_>>(), m.into_values().collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_range_walked_from_both_ends_meets_once() {
        let mut t = HeadTree::default();
        for h in 0..1000u64 {
            t.insert(h * 3, h);
        }
        let mut r = t.range(Bound::Included(10), Bound::Excluded(2000));
        let mut seen = Vec::new();
        loop {
            match (r.next(), r.next_back()) {
                (Some(a), Some(b)) => {
                    seen.push(*a.0);
                    seen.push(*b.0);
                }
                (Some(a), None) | (None, Some(a)) => seen.push(*a.0),
                (None, None) => break,
            }
        }
        seen.sort_unstable();
        let want: Vec<u64> = (0..1000u64)
            .map(|h| h * 3)
            .filter(|&h| (10..2000).contains(&h))
            .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn ascending_inserts_fill_their_chunks() {
        let mut t = HeadTree::default();
        for h in 0..(CHUNK_MAX as u64 * 10) {
            t.insert(h, 0u32);
        }
        check_shape(&t);
        assert_eq!(t.chunks.len(), 10);
    }

    #[test]
    fn crossed_bounds_are_an_empty_range() {
        let mut t = HeadTree::default();
        for h in 0..200u64 {
            t.insert(h, h);
        }
        assert_eq!(t.range(Bound::Included(50), Bound::Excluded(10)).count(), 0);
        assert_eq!(t.range(Bound::Excluded(50), Bound::Included(50)).count(), 0);
        assert_eq!(t.range(Bound::Included(500), Bound::Unbounded).count(), 0);
        assert_eq!(t.range(Bound::Unbounded, Bound::Excluded(0)).count(), 0);
    }

    #[test]
    fn removals_merge_small_chunks_and_free_empty_ones() {
        let mut t = HeadTree::default();
        for h in 0..10_000u64 {
            t.insert(h, 0u32);
        }
        check_shape(&t);
        let full = t.chunks.len();
        for h in 0..10_000u64 {
            if h % 8 != 0 {
                t.remove(h);
            }
        }
        check_shape(&t);
        assert!(
            t.chunks.len() * 2 < full,
            "{} of {full} chunks left",
            t.chunks.len()
        );
        for h in (0..10_000u64).step_by(8) {
            assert_eq!(t.remove(h), Some(0));
        }
        assert!(t.chunks.is_empty() && t.fences.is_empty() && len(&t) == 0);
    }
}
