//! A resident key's data entries by suffix (`version | subkey`), ordered:
//! a sorted vector while the key has few entries, a tree by head beyond
//! ([`Headed`]).
//!
//! Why: most keys of a many-key population have one to a handful of
//! entries (a string none, a bitmap one page), and a `BTreeMap` allocates
//! a leaf of eleven slots (about 370 bytes here) for even one entry, more
//! than a 100-bit bitmap's page. The vector is kept at its exact length.

use super::head_tree::{HeadTree, Range as HeadRange, Seek};
use std::cmp::Ordering;
use std::ops::Bound;

/// One entry: `Some` = present with that value, `None` = known absent.
pub(crate) type Value = Option<Box<[u8]>>;

/// Entries a key keeps in the sorted vector; one more makes it a B-tree
/// (and it stays one until cleared).
const SMALL_MAX: usize = 32;

/// Cache lines of a data entry's value that [`DataMap::prefetch`] asks
/// for: a sparse bitmap's page of 100 values is about ten.
pub(crate) const VALUE_LINES: usize = 12;

/// The entries of a [`DataMap::range`], either way.
pub(crate) type RangeIter<'a> = Box<dyn DoubleEndedIterator<Item = (&'a [u8], &'a Value)> + 'a>;

/// Bytes counted for a [`DataMap`] that holds entries: its own
/// allocation (the map's header, 48 bytes) in the allocator's size class.
pub(crate) const MAP_OVERHEAD: usize = 64;

/// The ordered map (see the module docs): one pointer in a resident
/// key's entry, nothing allocated while the key has no data entries.
///
/// Why: a key's [`super::entry::Entry`] sits in a bucket of its shard's
/// hash table, and the table's spare buckets cost as much as full ones.
/// Most keys of a many-key population have no data entries at all (a
/// string, a bitmap inline in its meta), and the map held inline took 48
/// of the entry's 104 bytes for them. A key with data entries pays one
/// more pointer to follow.
#[derive(Default)]
pub(crate) struct DataMap(Option<Box<Map>>);

/// A non-empty map's entries.
enum Map {
    Small(Vec<(Box<[u8]>, Value)>),
    Big(Headed),
}

impl DataMap {
    /// A map of `entries`, ascending by suffix without repeats (a whole
    /// key as loaded).
    pub(crate) fn from_sorted(entries: Vec<(Box<[u8]>, Value)>) -> Self {
        if entries.is_empty() {
            return DataMap(None);
        }
        DataMap(Some(Box::new(Map::from_sorted(entries))))
    }

    /// Number of entries (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |m| m.len())
    }

    /// True without entries.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// Bytes counted for the map besides its entries: [`MAP_OVERHEAD`]
    /// while it holds any, else 0.
    pub(crate) fn overhead(&self) -> usize {
        if self.0.is_some() {
            MAP_OVERHEAD
        } else {
            0
        }
    }

    /// The entry of `suffix`, if the map has one.
    pub(crate) fn get(&self, suffix: &[u8]) -> Option<&Value> {
        self.0.as_ref()?.get(suffix)
    }

    /// Sets the entry of `suffix`; returns the one it replaces.
    pub(crate) fn insert(&mut self, suffix: &[u8], value: Value) -> Option<Value> {
        self.0
            .get_or_insert_with(|| Box::new(Map::Small(Vec::new())))
            .insert(suffix, value)
    }

    /// Removes the entry of `suffix`; returns it. Removing the last one
    /// frees the map.
    pub(crate) fn remove(&mut self, suffix: &[u8]) -> Option<Value> {
        let m = self.0.as_mut()?;
        let old = m.remove(suffix);
        if m.is_empty() {
            self.0 = None;
        }
        old
    }

    /// Every entry, ascending.
    pub(crate) fn iter(&self) -> RangeIter<'_> {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }

    /// The entries with suffix within the bounds, ascending (reverse the
    /// iterator for descending).
    pub(crate) fn range<'a>(&'a self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RangeIter<'a> {
        match &self.0 {
            Some(m) => m.range(start, end),
            None => Box::new(std::iter::empty()),
        }
    }

    /// The first entry of [`DataMap::range`] (the last when `reverse`),
    /// without an iterator to allocate.
    pub(crate) fn first_in(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Option<(&[u8], &Value)> {
        self.0.as_ref()?.first_in(start, end, reverse)
    }

    /// Drops every entry whose suffix is outside `[lo, hi)` (`hi` `None`:
    /// unbounded); returns the dropped entries.
    pub(crate) fn keep_within(&mut self, lo: &[u8], hi: Option<&[u8]>) -> Vec<(Box<[u8]>, Value)> {
        let Some(m) = self.0.take() else {
            return Vec::new();
        };
        let outside = |k: &[u8]| k < lo || hi.is_some_and(|h| k >= h);
        let (keep, dropped): (Vec<_>, Vec<_>) =
            m.into_sorted().into_iter().partition(|(k, _)| !outside(k));
        *self = DataMap::from_sorted(keep);
        dropped
    }

    /// Starts loading the first entries of a small map (the vector, each
    /// entry's suffix and the head of its value) into cache: a hint. It
    /// reads the map's own allocation, which [`DataMap::prefetch_index`]
    /// asks for.
    pub(crate) fn prefetch(&self) {
        if let Some(m) = &self.0 {
            m.prefetch();
        }
    }

    /// Starts a prefetch of the first entry at or after `suffix` (a hint):
    /// in a big map, the seek of its head ([`HeadTree::prefetch_seek`]; go on with
    /// [`Seek::segment`], [`Seek::slot`], then [`prefetch_bucket`] of
    /// [`Seek::value`] with [`VALUE_LINES`]); a
    /// small map's first entries are asked for at once (`None`).
    pub(crate) fn prefetch_seek(&self, suffix: &[u8]) -> Option<Seek<'_, Bucket>> {
        match self.0.as_deref()? {
            Map::Big(m) => match m.place(suffix) {
                Place::At(h) => m.heads.prefetch_seek(h),
                Place::Below | Place::Above => None,
            },
            small => {
                small.prefetch();
                None
            }
        }
    }

    /// True when the map finds an entry through its heads (a big map):
    /// each seek of [`DataMap::prefetch_seek`] reads its own entry. A small
    /// map's seeks all ask for the same first entries.
    pub(crate) fn seeks_by_head(&self) -> bool {
        matches!(self.0.as_deref(), Some(Map::Big(_)))
    }

    /// The first step of [`DataMap::prefetch`]: the map's own allocation,
    /// without reading it.
    pub(crate) fn prefetch_index(&self) {
        if let Some(m) = &self.0 {
            crate::prefetch::line(std::ptr::from_ref::<Map>(m).cast::<u8>());
        }
    }

    /// Drops every entry.
    pub(crate) fn clear(&mut self) {
        self.0 = None;
    }
}

impl Map {
    /// A map of `entries`, ascending by suffix without repeats (a whole
    /// key as loaded).
    fn from_sorted(entries: Vec<(Box<[u8]>, Value)>) -> Self {
        if entries.len() <= SMALL_MAX {
            let mut v = entries;
            v.shrink_to_fit();
            Map::Small(v)
        } else {
            Map::Big(Headed::from_sorted(entries))
        }
    }

    /// Number of entries.
    fn len(&self) -> usize {
        match self {
            Map::Small(v) => v.len(),
            Map::Big(m) => m.len(),
        }
    }

    /// True without entries (after the last one is removed).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry of `suffix`, if the map has one.
    fn get(&self, suffix: &[u8]) -> Option<&Value> {
        match self {
            Map::Small(v) => v
                .binary_search_by(|(k, _)| (**k).cmp(suffix))
                .ok()
                .map(|i| &v[i].1),
            Map::Big(m) => m.get(suffix),
        }
    }

    /// Sets the entry of `suffix`; returns the one it replaces.
    fn insert(&mut self, suffix: &[u8], value: Value) -> Option<Value> {
        match self {
            Map::Small(v) => match v.binary_search_by(|(k, _)| (**k).cmp(suffix)) {
                Ok(i) => Some(std::mem::replace(&mut v[i].1, value)),
                Err(i) => {
                    if v.len() < SMALL_MAX {
                        v.reserve_exact(1);
                        v.insert(i, (Box::from(suffix), value));
                    } else {
                        let mut m = Headed::from_sorted(std::mem::take(v));
                        m.insert(suffix, value);
                        *self = Map::Big(m);
                    }
                    None
                }
            },
            Map::Big(m) => m.insert(suffix, value),
        }
    }

    /// Removes the entry of `suffix`; returns it.
    fn remove(&mut self, suffix: &[u8]) -> Option<Value> {
        match self {
            Map::Small(v) => {
                let i = v.binary_search_by(|(k, _)| (**k).cmp(suffix)).ok()?;
                let (_, old) = v.remove(i);
                v.shrink_to_fit();
                Some(old)
            }
            Map::Big(m) => m.remove(suffix),
        }
    }

    /// The entries with suffix within the bounds, ascending (reverse the
    /// iterator for descending).
    fn range<'a>(&'a self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RangeIter<'a> {
        match self {
            Map::Small(v) => {
                let (lo, hi) = positions(v, start, end);
                let s = if lo < hi { &v[lo..hi] } else { &v[0..0] };
                Box::new(s.iter().map(|(k, val)| (&**k, val)))
            }
            Map::Big(m) => {
                if crate::kv::range_is_empty(start, end) {
                    return Box::new(std::iter::empty());
                }
                m.range(start, end)
            }
        }
    }

    /// The first entry of [`DataMap::range`] (the last when `reverse`),
    /// without an iterator to allocate.
    fn first_in(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Option<(&[u8], &Value)> {
        match self {
            Map::Small(v) => {
                let (lo, hi) = positions(v, start, end);
                if lo >= hi {
                    return None;
                }
                let (k, val) = if reverse { &v[hi - 1] } else { &v[lo] };
                Some((&**k, val))
            }
            Map::Big(m) => {
                if crate::kv::range_is_empty(start, end) {
                    return None;
                }
                m.first_in(start, end, reverse)
            }
        }
    }

    /// Every entry, ascending, by value.
    fn into_sorted(self) -> Vec<(Box<[u8]>, Value)> {
        match self {
            Map::Small(v) => v,
            Map::Big(m) => m.into_sorted(),
        }
    }

    /// Starts loading the first entries of a small map (the vector, each
    /// entry's suffix and the head of its value) into cache: a hint.
    fn prefetch(&self) {
        if let Map::Small(v) = self {
            crate::prefetch::line(v.as_ptr().cast::<u8>());
            for (k, val) in v.iter().take(2) {
                crate::prefetch::line(k.as_ptr());
                if let Some(val) = val {
                    crate::prefetch::bytes(val, VALUE_LINES);
                }
            }
        }
    }
}

/// The entries of a big map, found by an integer *head* instead of by
/// comparing whole suffixes: every suffix in the map starts with
/// `prefix`, and its head is the seven bytes after that (zero-padded, big
/// endian) with the length left ([`head_at`]). A lookup searches a flat
/// map of integers ([`HeadTree`]: sorted chunks under one array of
/// fences); entries that share a
/// head form a map of the same kind under their own longer common prefix
/// (a layer, as in Masstree), so suffixes are compared only where one
/// entry and a bound share every head on the way.
///
/// Why: the suffixes of a big key share long prefixes (the version, then
/// what its members or blocks have in common), so each comparison of a
/// `BTreeMap` of whole suffixes went through those bytes again, behind a
/// pointer: a SISMEMBER on a set of a million 16-byte members (~25,000
/// pages) spent a quarter of the server's time descending that tree.
///
/// Order: heads order suffixes coarsely (`head(a) < head(b)` implies
/// `a < b`: padding with zeros, then the length, keep a proper prefix
/// below its extensions), and a bucket orders its own entries, so a walk of the
/// buckets by head is ascending. `prefix` is the common prefix of the
/// entries the map was built from; an insert that does not start with it
/// rebuilds the map under the shorter common prefix (at most once per
/// byte of the prefix).
#[derive(Default)]
pub(crate) struct Headed {
    prefix: Box<[u8]>,
    heads: HeadTree<Bucket>,
    len: usize,
}

/// The entries of one head: one inline (the usual case), or a layer of
/// two or more.
pub(crate) enum Bucket {
    One(Box<[u8]>, Value),
    Many(Box<Headed>),
}

/// Where a probe falls against a [`Headed`] map's prefix.
enum Place {
    /// Below every suffix the map can hold.
    Below,
    /// Starts with the prefix: this head.
    At(Head),
    /// Above every suffix the map can hold.
    Above,
}

/// The head of `k` after its first `at` bytes: the next seven bytes,
/// zero-padded, big-endian, then how many bytes are left (8 for more
/// than seven), as one integer. The length keeps a key apart from its
/// extensions by zero bytes, so that two keys share a head only when
/// both go on past it (and a layer of them has a longer prefix).
fn head_at(k: &[u8], at: usize) -> Head {
    let mut b = [0u8; 8];
    let tail = k.get(at..).unwrap_or_default();
    let n = tail.len().min(HEAD_BYTES);
    b[..n].copy_from_slice(&tail[..n]);
    u64::from_be_bytes(b) | tail.len().min(HEAD_BYTES + 1) as Head
}

/// Bytes of a key a head holds.
const HEAD_BYTES: usize = 7;

/// A head: see [`head_at`].
type Head = u64;

/// Length of the common prefix of `a` and `b`.
fn common_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// True when `k` is at or after the start bound.
fn after_start(k: &[u8], start: Bound<&[u8]>) -> bool {
    match start {
        Bound::Included(s) => k >= s,
        Bound::Excluded(s) => k > s,
        Bound::Unbounded => true,
    }
}

/// True when `k` is at or before the end bound.
fn before_end(k: &[u8], end: Bound<&[u8]>) -> bool {
    match end {
        Bound::Included(e) => k <= e,
        Bound::Excluded(e) => k < e,
        Bound::Unbounded => true,
    }
}

impl Bucket {
    /// The entries within the bounds (which are not an empty range).
    fn range<'a>(&'a self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RangeIter<'a> {
        match self {
            Bucket::One(k, v) => Box::new(
                (after_start(k, start) && before_end(k, end))
                    .then_some((&**k, v))
                    .into_iter(),
            ),
            Bucket::Many(m) => m.range(start, end),
        }
    }

    /// The first entry within the bounds (not an empty range), the last
    /// when `reverse`.
    fn first_in(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Option<(&[u8], &Value)> {
        match self {
            Bucket::One(k, v) => (after_start(k, start) && before_end(k, end)).then_some((&**k, v)),
            Bucket::Many(m) => m.first_in(start, end, reverse),
        }
    }

    /// The first entry (the last when `reverse`).
    fn end(&self, reverse: bool) -> (&[u8], &Value) {
        match self {
            Bucket::One(k, v) => (k, v),
            Bucket::Many(m) => m
                .first_in(Bound::Unbounded, Bound::Unbounded, reverse)
                .expect("a layer holds entries"),
        }
    }

    fn get(&self, suffix: &[u8]) -> Option<&Value> {
        match self {
            Bucket::One(k, v) => (**k == *suffix).then_some(v),
            Bucket::Many(m) => m.get(suffix),
        }
    }

    /// Every entry, moved out, ascending.
    fn drain_into(self, out: &mut Vec<(Box<[u8]>, Value)>) {
        match self {
            Bucket::One(k, v) => out.push((k, v)),
            Bucket::Many(m) => m.drain_into(out),
        }
    }
}

impl Headed {
    /// A map of `entries`, ascending by suffix without repeats.
    fn from_sorted(entries: Vec<(Box<[u8]>, Value)>) -> Self {
        let prefix: Box<[u8]> = match (entries.first(), entries.last()) {
            (Some((a, _)), Some((b, _))) => Box::from(&a[..common_len(a, b)]),
            _ => Box::default(),
        };
        let mut map = Headed {
            prefix,
            heads: HeadTree::default(),
            len: 0,
        };
        for (k, v) in entries {
            map.insert_headed(k, v);
        }
        map
    }

    /// Number of entries.
    fn len(&self) -> usize {
        self.len
    }

    /// Where `probe` falls (see [`Place`]).
    fn place(&self, probe: &[u8]) -> Place {
        let p = &self.prefix;
        let n = p.len().min(probe.len());
        match probe[..n].cmp(&p[..n]) {
            Ordering::Less => Place::Below,
            Ordering::Greater => Place::Above,
            Ordering::Equal if probe.len() < p.len() => Place::Below,
            Ordering::Equal => Place::At(head_at(probe, p.len())),
        }
    }

    fn get(&self, suffix: &[u8]) -> Option<&Value> {
        match self.place(suffix) {
            Place::At(h) => self.heads.get(h)?.get(suffix),
            Place::Below | Place::Above => None,
        }
    }

    /// Inserts an entry whose suffix starts with the prefix.
    fn insert_headed(&mut self, suffix: Box<[u8]>, value: Value) -> Option<Value> {
        let h = head_at(&suffix, self.prefix.len());
        let old = match self.heads.get_mut(h) {
            None => {
                self.heads.insert(h, Bucket::One(suffix, value));
                None
            }
            Some(slot) => match slot {
                Bucket::One(k, v) if *k == suffix => Some(std::mem::replace(v, value)),
                Bucket::One(..) => {
                    let Bucket::One(k, v) = std::mem::replace(slot, Bucket::Many(Box::default()))
                    else {
                        unreachable!("matched as one above")
                    };
                    let pair = if k < suffix {
                        vec![(k, v), (suffix, value)]
                    } else {
                        vec![(suffix, value), (k, v)]
                    };
                    *slot = Bucket::Many(Box::new(Headed::from_sorted(pair)));
                    None
                }
                Bucket::Many(m) => m.insert_owned(suffix, value),
            },
        };
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    fn insert(&mut self, suffix: &[u8], value: Value) -> Option<Value> {
        self.insert_owned(Box::from(suffix), value)
    }

    fn insert_owned(&mut self, suffix: Box<[u8]>, value: Value) -> Option<Value> {
        if !suffix.starts_with(&self.prefix) {
            let keep = common_len(&self.prefix, &suffix);
            let mut all = Vec::with_capacity(self.len);
            std::mem::take(self).drain_into(&mut all);
            let prefix = Box::from(&suffix[..keep]);
            *self = Headed {
                prefix,
                heads: HeadTree::default(),
                len: 0,
            };
            for (k, v) in all {
                self.insert_headed(k, v);
            }
        }
        self.insert_headed(suffix, value)
    }

    fn remove(&mut self, suffix: &[u8]) -> Option<Value> {
        let Place::At(h) = self.place(suffix) else {
            return None;
        };
        let slot = self.heads.get_mut(h)?;
        let old = match slot {
            Bucket::One(k, _) if **k == *suffix => match self.heads.remove(h) {
                Some(Bucket::One(_, v)) => v,
                _ => unreachable!("matched as one above"),
            },
            Bucket::One(..) => return None,
            Bucket::Many(m) => {
                let old = m.remove(suffix)?;
                if m.len == 1 {
                    let mut last = Vec::with_capacity(1);
                    std::mem::take(&mut **m).drain_into(&mut last);
                    let (k, v) = last.pop().expect("one entry left");
                    *slot = Bucket::One(k, v);
                }
                old
            }
        };
        self.len -= 1;
        Some(old)
    }

    /// The head bounds of the buckets that may hold entries within the
    /// suffix bounds (`None`: no bucket can).
    fn head_bounds(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Option<(Bound<Head>, Bound<Head>)> {
        let lo = match start {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(s) | Bound::Excluded(s) => match self.place(s) {
                Place::Below => Bound::Unbounded,
                Place::At(h) => Bound::Included(h),
                Place::Above => return None,
            },
        };
        let hi = match end {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(e) | Bound::Excluded(e) => match self.place(e) {
                Place::Below => return None,
                Place::At(h) => Bound::Included(h),
                Place::Above => Bound::Unbounded,
            },
        };
        // Heads follow the order of suffixes, so a range that is not empty
        // never has them crossed; checked all the same.
        if let (Bound::Included(a), Bound::Included(b)) = (lo, hi) {
            if a > b {
                return None;
            }
        }
        Some((lo, hi))
    }

    /// The entries within the bounds (not an empty range), ascending.
    fn range<'a>(&'a self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RangeIter<'a> {
        let Some((lo, hi)) = self.head_bounds(start, end) else {
            return Box::new(std::iter::empty());
        };
        if let (Bound::Included(a), Bound::Included(b)) = (lo, hi) {
            if a == b {
                let one = self.heads.get(a).map(|b| b.range(start, end));
                return Box::new(one.into_iter().flatten());
            }
        }
        // The buckets at the edge heads hold entries on both sides of a
        // bound; those between hold only entries within.
        let front = match lo {
            Bound::Included(a) => self.heads.get(a).map(|b| b.range(start, Bound::Unbounded)),
            _ => None,
        };
        let back = match hi {
            Bound::Included(b) => self.heads.get(b).map(|b| b.range(Bound::Unbounded, end)),
            _ => None,
        };
        let inner = |b: Bound<Head>| match b {
            Bound::Included(h) => Bound::Excluded(h),
            other => other,
        };
        Box::new(Walk {
            front,
            middle: self.heads.range(inner(lo), inner(hi)),
            back,
            ahead: None,
            ahead_back: None,
        })
    }

    /// The first entry within the bounds (not an empty range), the last
    /// when `reverse`: one descent of the head tree per layer. Suffixes
    /// are compared only in a bucket whose head is a bound's own (a bucket
    /// of another head lies wholly on one side of it), so a lookup by a
    /// suffix of a head of its own reads no entry's suffix.
    fn first_in(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Option<(&[u8], &Value)> {
        let (lo, hi) = self.head_bounds(start, end)?;
        let (near, near_bound, other, far) = if reverse {
            (hi, end, lo, start)
        } else {
            (lo, start, hi, end)
        };
        let (s, e) = if reverse {
            (Bound::Unbounded, near_bound)
        } else {
            (near_bound, Bound::Unbounded)
        };
        let (h, found) = if reverse {
            nearest(
                self.heads.range(Bound::Unbounded, hi).rev(),
                near,
                s,
                e,
                true,
            )?
        } else {
            nearest(self.heads.range(lo, Bound::Unbounded), near, s, e, false)?
        };
        // The other bound: decided by heads unless the entry's is its own.
        let within = match other {
            Bound::Included(x) | Bound::Excluded(x) if x != h => (h < x) != reverse,
            Bound::Unbounded => true,
            _ if reverse => after_start(found.0, far),
            _ => before_end(found.0, far),
        };
        within.then_some(found)
    }

    /// Every entry, moved out, ascending.
    fn drain_into(self, out: &mut Vec<(Box<[u8]>, Value)>) {
        for b in self.heads.into_values() {
            b.drain_into(out);
        }
    }

    /// Every entry, moved out, ascending.
    fn into_sorted(self) -> Vec<(Box<[u8]>, Value)> {
        let mut all = Vec::with_capacity(self.len);
        self.drain_into(&mut all);
        all
    }
}

/// The first entry of `buckets` (in the walk's direction, `reverse` for
/// descending) within the bounds `s`, `e` (the near one only; the far
/// one is the caller's), and its head. Only a bucket at the near head
/// `near` is searched; one past it holds only entries beyond the bound.
fn nearest<'a>(
    mut buckets: impl Iterator<Item = (&'a Head, &'a Bucket)>,
    near: Bound<Head>,
    s: Bound<&[u8]>,
    e: Bound<&[u8]>,
    reverse: bool,
) -> Option<(Head, (&'a [u8], &'a Value))> {
    let (&h, b) = buckets.next()?;
    if near != Bound::Included(h) {
        return Some((h, b.end(reverse)));
    }
    match b.first_in(s, e, reverse) {
        Some(found) => Some((h, found)),
        None => buckets.next().map(|(&h, b)| (h, b.end(reverse))),
    }
}

/// A walk of a [`Headed`] map's range: the entries of the buckets
/// between the edges one by one, a layer's through its own walk (`front`
/// and `back` hold the edge buckets' entries, then a layer's walk in
/// progress). Written out rather than composed of `chain` and `flat_map`,
/// with the rarer cases out of line: an entry of a one-entry bucket costs
/// a few instructions, so that the loads of the next entries' keys and
/// values overlap (a walk of 25,000 entries took two to ten times as
/// long composed, and a loop over every entry in one function twice as
/// long). The buckets [`AHEAD`] places on in the walk's direction have
/// their suffix and value asked into cache as the walk passes, so that a
/// walk over a key that is not in the CPU's caches (a pick by rank reads
/// the header of every set page it passes) waits on few of their misses.
struct Walk<'a> {
    front: Option<RangeIter<'a>>,
    middle: HeadRange<'a, Bucket>,
    back: Option<RangeIter<'a>>,
    /// `middle` run [`AHEAD`] buckets ahead of a forward walk, from its
    /// first step on.
    ahead: Option<HeadRange<'a, Bucket>>,
    /// The same for a walk from the back.
    ahead_back: Option<HeadRange<'a, Bucket>>,
}

/// How many buckets ahead of a [`Walk`] their entries are prefetched.
const AHEAD: usize = 8;

/// Asks the suffix and the first `value_lines` cache lines of the value
/// of a one-entry bucket into cache (a hint; a layer is left alone): a
/// walk asks for a value's first line, a seek for [`VALUE_LINES`].
#[inline]
pub(crate) fn prefetch_bucket(b: &Bucket, value_lines: usize) {
    if let Bucket::One(k, v) = b {
        crate::prefetch::line(k.as_ptr());
        if let Some(v) = v {
            crate::prefetch::bytes(v, value_lines);
        }
    }
}

impl<'a> Walk<'a> {
    /// The next entry from the front (from the back when `back`): a
    /// one-entry bucket of the middle inline, the rest out of line.
    #[inline(always)]
    fn step(&mut self, back: bool) -> Option<(&'a [u8], &'a Value)> {
        let idle = if back {
            self.back.is_none()
        } else {
            self.front.is_none()
        };
        if !idle {
            return self.next_slow(None, back);
        }
        self.look_ahead(back);
        let b = if back {
            self.middle.next_back()
        } else {
            self.middle.next()
        };
        match b {
            Some((_, Bucket::One(k, v))) => Some((k, v)),
            b => self.next_slow(b.map(|(_, b)| b), back),
        }
    }

    /// Moves the look-ahead of a walk in direction `back` one bucket on
    /// and prefetches that bucket's entry; its first call starts it
    /// [`AHEAD`] buckets ahead of `middle`, prefetching those.
    #[inline]
    fn look_ahead(&mut self, back: bool) {
        let slot = if back {
            &mut self.ahead_back
        } else {
            &mut self.ahead
        };
        let it = match slot {
            Some(it) => it,
            None => {
                let mut it = self.middle.clone();
                for _ in 0..AHEAD {
                    if !advance(&mut it, back) {
                        break;
                    }
                }
                slot.insert(it)
            }
        };
        advance(it, back);

        /// One bucket on, prefetched; false at the end.
        fn advance(it: &mut HeadRange<'_, Bucket>, back: bool) -> bool {
            let coming = if back { it.next_back() } else { it.next() };
            coming.map(|(_, b)| prefetch_bucket(b, 1)).is_some()
        }
    }

    /// The next entry of a walk in progress at the near end (`back`: the
    /// back; an edge bucket or a layer), or of the bucket `b` met in the
    /// middle, then of the far end.
    #[cold]
    fn next_slow(&mut self, b: Option<&'a Bucket>, back: bool) -> Option<(&'a [u8], &'a Value)> {
        let step = |it: &mut RangeIter<'a>| if back { it.next_back() } else { it.next() };
        let (near, far) = if back {
            (&mut self.back, &mut self.front)
        } else {
            (&mut self.front, &mut self.back)
        };
        if let Some(Bucket::Many(m)) = b {
            *near = Some(m.range(Bound::Unbounded, Bound::Unbounded));
        }
        if let Some(it) = near {
            if let Some(e) = step(it) {
                return Some(e);
            }
            *near = None;
            return if back { self.next_back() } else { self.next() };
        }
        let e = step(far.as_mut()?);
        if e.is_none() {
            *far = None;
        }
        e
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = (&'a [u8], &'a Value);

    fn next(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}

impl DoubleEndedIterator for Walk<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}

/// The positions in `v` (sorted by suffix) where entries within the
/// bounds start and end.
fn positions(v: &[(Box<[u8]>, Value)], start: Bound<&[u8]>, end: Bound<&[u8]>) -> (usize, usize) {
    let lo = match start {
        Bound::Included(s) => v.partition_point(|(k, _)| **k < *s),
        Bound::Excluded(s) => v.partition_point(|(k, _)| **k <= *s),
        Bound::Unbounded => 0,
    };
    let hi = match end {
        Bound::Included(e) => v.partition_point(|(k, _)| **k <= *e),
        Bound::Excluded(e) => v.partition_point(|(k, _)| **k < *e),
        Bound::Unbounded => v.len(),
    };
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Keys over a two-letter alphabet (one letter below the shared
    /// prefix's, one above), up to 14 bytes: heads shared by several keys,
    /// proper prefixes of others.
    fn key() -> impl Strategy<Value = Vec<u8>> + Clone {
        proptest::collection::vec(prop_oneof![Just(0u8), Just(6u8)], 0..14)
    }

    /// Keys that share a long prefix, as a big key's suffixes do, and now
    /// and then a proper prefix of it.
    fn prefixed_key() -> impl Strategy<Value = Vec<u8>> + Clone {
        prop_oneof![
            15 => key().prop_map(|k| [&[5u8; 10][..], &k].concat()),
            1 => (0usize..10).prop_map(|n| vec![5u8; n]),
        ]
    }

    /// An operation: 0–8 insert (present or absent), 9–10 remove, 11 keep
    /// within; then a query of the map by range and by first entry.
    type Step = ((u8, Vec<u8>, bool), (u8, Vec<u8>), (u8, Vec<u8>), bool);

    /// A step on `keys`, whose query bounds are those keys or any.
    fn step(keys: impl Strategy<Value = Vec<u8>> + Clone) -> impl Strategy<Value = Step> {
        let bounds = prop_oneof![keys.clone(), key()];
        (
            (0u8..12, keys, any::<bool>()),
            (0u8..3, bounds.clone()),
            (0u8..3, bounds),
            any::<bool>(),
        )
    }

    fn bound(b: &(u8, Vec<u8>)) -> Bound<&[u8]> {
        match b.0 {
            0 => Bound::Included(&b.1),
            1 => Bound::Excluded(&b.1),
            _ => Bound::Unbounded,
        }
    }

    type Model = BTreeMap<Box<[u8]>, Value>;

    fn apply(m: &mut DataMap, model: &mut Model, st: &Step) -> Result<(), TestCaseError> {
        let ((op, k, present), start, end, rev) = st;
        let key: Box<[u8]> = Box::from(&k[..]);
        let val: Value = present.then(|| Box::from(&[k.len() as u8][..]));
        match op {
            0..=8 => prop_assert_eq!(m.insert(&key, val.clone()), model.insert(key.clone(), val)),
            9 | 10 => prop_assert_eq!(m.remove(&key), model.remove(&key)),
            _ => {
                let hi = present.then(|| [&key[..], &[1, 1]].concat());
                let mut dropped = m.keep_within(&key, hi.as_deref());
                let mut want = Vec::new();
                model.retain(|k, v| {
                    let keep = **k >= *key && hi.as_deref().is_none_or(|h| **k < *h);
                    if !keep {
                        want.push((k.clone(), v.clone()));
                    }
                    keep
                });
                dropped.sort();
                prop_assert_eq!(dropped, want);
            }
        }
        prop_assert_eq!(m.len(), model.len());
        prop_assert_eq!(m.get(&key), model.get(&key));
        let (s, e) = (bound(start), bound(end));
        let pair = |(k, v): (&[u8], &Value)| (k.to_vec(), v.clone());
        let want: Vec<_> = if crate::kv::range_is_empty(s, e) {
            Vec::new()
        } else if *rev {
            model
                .range::<[u8], _>((s, e))
                .rev()
                .map(|(k, v)| pair((k, v)))
                .collect()
        } else {
            model
                .range::<[u8], _>((s, e))
                .map(|(k, v)| pair((k, v)))
                .collect()
        };
        let got: Vec<_> = if *rev {
            m.range(s, e).rev().map(pair).collect()
        } else {
            m.range(s, e).map(pair).collect()
        };
        prop_assert_eq!(m.first_in(s, e, *rev).map(pair), want.first().cloned());
        prop_assert_eq!(got, want);
        Ok(())
    }

    proptest! {
        /// Every operation agrees with a `BTreeMap`, across the switch from
        /// the vector to the tree by head, buckets of several entries and
        /// rebuilds under a shorter prefix: first keys that share a long
        /// prefix, then any keys.
        #[test]
        fn matches_a_btree_map(
            shared in proptest::collection::vec(step(prefixed_key()), 1..200),
            any_keys in proptest::collection::vec(step(key()), 0..200),
        ) {
            let mut m = DataMap::default();
            let mut model = Model::new();
            for st in shared.iter().chain(&any_keys) {
                apply(&mut m, &mut model, st)?;
            }
            let all: Vec<_> = m.iter().map(|(k, _)| k.to_vec()).collect();
            let model_all: Vec<_> = model.keys().map(|k| k.to_vec()).collect();
            prop_assert_eq!(all, model_all);
        }
    }

    #[test]
    fn heads_order_suffixes_coarsely() {
        // A proper prefix is below its extensions, by its bytes or, when
        // they extend it with zeros, by its length; keys longer than the
        // head share it when their first seven bytes agree.
        assert!(head_at(b"ab", 0) < head_at(b"ab\x01", 0));
        assert!(head_at(b"ab", 0) < head_at(b"ab\0", 0));
        assert!(head_at(b"abcdefg", 0) < head_at(b"abcdefg\0", 0));
        assert_eq!(head_at(b"abcdefg\0", 0), head_at(b"abcdefg\xff", 0));
        assert_eq!(head_at(b"xxab", 2), head_at(b"ab", 0));
        assert_eq!(head_at(b"x", 4), 0);
    }
}
