//! [`Bitmap`]: a 32-bit Roaring bitmap, the sorted sequence of (high key, container).
//!
//! Containers are [`ContainerBuf`]s, the same bytes a store keeps per entry;
//! [`Bitmap::containers`] and [`Bitmap::from_containers`] move between the two.
//! Pairwise operations merge by high key and call the container dispatch in
//! `setops`. Rank, select and min/max live in `rank.rs`, range writes and
//! counts in `range.rs`, the portable format in `portable.rs`.

use crate::codec::{FormatError, Kind};
use crate::container::{ContainerBuf, ContainerRef};
use crate::iter::Iter;
use crate::setops;
use core::fmt;

/// A set of u32 values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Bitmap {
    pub(crate) keys: Vec<u16>,
    pub(crate) containers: Vec<ContainerBuf>,
}

impl fmt::Debug for Bitmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Bitmap({} values, {} containers)",
            self.len(),
            self.keys.len()
        )
    }
}

/// Counts per container kind, as TR.STAT reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindStat {
    /// Number of containers of this kind.
    pub containers: u64,
    /// Values held in them.
    pub values: u64,
    /// Bytes as TR.STAT counts them (array 2×n, bitset 8,192, run 2 + 4×runs).
    pub bytes: u64,
}

/// Whole-bitmap statistics (TR.STAT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Number of values.
    pub cardinality: u64,
    /// Number of non-empty containers.
    pub containers: u64,
    /// Smallest value (None when empty).
    pub min: Option<u32>,
    /// Largest value (None when empty).
    pub max: Option<u32>,
    /// Sum of all values.
    pub sum: u128,
    /// Array containers.
    pub array: KindStat,
    /// Bitset containers.
    pub bitset: KindStat,
    /// Run containers.
    pub run: KindStat,
}

#[inline]
pub(crate) fn split(v: u32) -> (u16, u16) {
    ((v >> 16) as u16, v as u16)
}

#[inline]
pub(crate) fn join(high: u16, low: u16) -> u32 {
    ((high as u32) << 16) | low as u32
}

impl Bitmap {
    /// An empty bitmap.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds from values in any order (duplicates allowed).
    pub fn from_unsorted(values: &[u32]) -> Self {
        let mut b = Self::new();
        b.insert_many(values);
        b
    }

    /// Builds from strictly ascending values.
    ///
    /// # Panics
    /// Debug builds assert the input is strictly ascending; release builds
    /// fall back to sorting when it is not.
    pub fn from_sorted(values: &[u32]) -> Self {
        let mut b = Self::new();
        b.insert_sorted(values);
        b
    }

    /// Builds from (high key, container) pairs, dropping empty containers.
    ///
    /// # Errors
    /// [`FormatError::NotAscending`] when keys are not strictly ascending.
    pub fn from_containers(
        pairs: impl IntoIterator<Item = (u16, ContainerBuf)>,
    ) -> Result<Self, FormatError> {
        let mut b = Self::new();
        for (i, (k, c)) in pairs.into_iter().enumerate() {
            if b.keys.last().is_some_and(|&last| last >= k) {
                return Err(FormatError::NotAscending { index: i });
            }
            if !c.is_empty() {
                b.keys.push(k);
                b.containers.push(c);
            }
        }
        Ok(b)
    }

    /// The (high key, container) pairs, ascending by key.
    pub fn containers(&self) -> impl ExactSizeIterator<Item = (u16, &ContainerBuf)> + '_ {
        self.keys.iter().copied().zip(self.containers.iter())
    }

    /// Consumes the bitmap into its (high key, container) pairs.
    pub fn into_containers(self) -> impl Iterator<Item = (u16, ContainerBuf)> {
        self.keys.into_iter().zip(self.containers)
    }

    /// The container of high key `key`.
    pub fn container(&self, key: u16) -> Option<&ContainerBuf> {
        self.keys
            .binary_search(&key)
            .ok()
            .map(|i| &self.containers[i])
    }

    /// Replaces (or, when `c` is empty, removes) the container of high key `key`.
    pub fn set_container(&mut self, key: u16, c: ContainerBuf) {
        match self.keys.binary_search(&key) {
            Ok(i) if c.is_empty() => {
                self.keys.remove(i);
                self.containers.remove(i);
            }
            Ok(i) => self.containers[i] = c,
            Err(_) if c.is_empty() => {}
            Err(i) => {
                self.keys.insert(i, key);
                self.containers.insert(i, c);
            }
        }
    }

    /// Number of non-empty containers.
    pub fn container_count(&self) -> usize {
        self.keys.len()
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.containers.iter().map(|c| c.cardinality() as u64).sum()
    }

    /// True when there is no value.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// True when `v` is present.
    #[inline]
    pub fn contains(&self, v: u32) -> bool {
        let (h, l) = split(v);
        // Single-container bitmaps (common for small sets) skip the search;
        // the test is per bitmap, so callers probing one bitmap in a loop
        // see a perfectly predicted branch.
        if let ([k], [c]) = (&self.keys[..], &self.containers[..]) {
            return *k == h && c.contains(l);
        }
        match self.keys.binary_search(&h) {
            Ok(i) => self.containers[i].contains(l),
            Err(_) => false,
        }
    }

    /// Adds `v`; returns true when it was absent.
    pub fn insert(&mut self, v: u32) -> bool {
        let (h, l) = split(v);
        match self.keys.binary_search(&h) {
            Ok(i) => self.containers[i].insert(l),
            Err(i) => {
                let mut c = ContainerBuf::new();
                c.insert(l);
                self.keys.insert(i, h);
                self.containers.insert(i, c);
                true
            }
        }
    }

    /// Removes `v`; returns true when it was present.
    pub fn remove(&mut self, v: u32) -> bool {
        let (h, l) = split(v);
        match self.keys.binary_search(&h) {
            Ok(i) => {
                let removed = self.containers[i].remove(l);
                if self.containers[i].is_empty() {
                    self.keys.remove(i);
                    self.containers.remove(i);
                }
                removed
            }
            Err(_) => false,
        }
    }

    /// Adds strictly ascending values in bulk; returns how many were absent.
    ///
    /// Unsorted input is sorted first (in a copy).
    pub fn insert_sorted(&mut self, values: &[u32]) -> u64 {
        if !values.windows(2).all(|w| w[0] < w[1]) {
            debug_assert!(false, "insert_sorted needs strictly ascending values");
            return self.insert_many(values);
        }
        let before = self.len();
        let mut lows: Vec<u16> = Vec::new();
        let mut i = 0;
        while i < values.len() {
            let h = (values[i] >> 16) as u16;
            let j = i + values[i..].partition_point(|&v| (v >> 16) as u16 == h);
            lows.clear();
            lows.extend(values[i..j].iter().map(|&v| v as u16));
            let add = ContainerBuf::from_sorted(&lows);
            match self.keys.binary_search(&h) {
                Ok(k) => setops::or_in_place(&mut self.containers[k], add.as_ref()),
                Err(k) => {
                    self.keys.insert(k, h);
                    self.containers.insert(k, add);
                }
            }
            i = j;
        }
        self.len() - before
    }

    /// Adds values in any order; returns how many were absent.
    pub fn insert_many(&mut self, values: &[u32]) -> u64 {
        let mut v = values.to_vec();
        v.sort_unstable();
        v.dedup();
        self.insert_sorted(&v)
    }

    /// Removes values in any order; returns how many were present.
    pub fn remove_many(&mut self, values: &[u32]) -> u64 {
        values.iter().filter(|&&v| self.remove(v)).count() as u64
    }

    /// Ascending iterator over all values.
    pub fn iter(&self) -> Iter<'_> {
        Iter::new(&self.keys, &self.containers)
    }

    /// Ascending iterator over the values ≥ `v` (TR.SCAN cursors).
    pub fn iter_from(&self, v: u32) -> Iter<'_> {
        let (h, l) = split(v);
        match self.keys.binary_search(&h) {
            Ok(i) => Iter::from_index(&self.keys, &self.containers, i, Some(l)),
            Err(i) => Iter::from_index(&self.keys, &self.containers, i, None),
        }
    }

    /// Converts containers to runs where that is strictly smaller (TR.OPTIMIZE);
    /// returns true when any container changed kind.
    pub fn optimize(&mut self) -> bool {
        let mut changed = false;
        for c in &mut self.containers {
            changed |= c.optimize();
        }
        changed
    }

    /// TR.STAT figures.
    pub fn stat(&self) -> Stat {
        let mut s = Stat {
            containers: self.keys.len() as u64,
            min: self.min(),
            max: self.max(),
            ..Stat::default()
        };
        for (k, c) in self.containers() {
            let r = c.as_ref();
            let card = r.cardinality() as u64;
            s.cardinality += card;
            let ks = match r.kind() {
                Kind::Array => &mut s.array,
                Kind::Bitset => &mut s.bitset,
                Kind::Run => &mut s.run,
            };
            ks.containers += 1;
            ks.values += card;
            ks.bytes += r.stat_bytes() as u64;
            let low_sum: u64 = match r {
                ContainerRef::Run { runs, .. } => runs
                    .iter()
                    .map(|x| {
                        let (a, n) = (x[0] as u64, x[1] as u64 + 1);
                        n * a + n * (n - 1) / 2
                    })
                    .sum(),
                _ => r.iter().fold(0u64, |acc, v| acc + v as u64),
            };
            s.sum += ((k as u128) << 16) * card as u128 + low_sum as u128;
        }
        s
    }

    /// Checks every container's invariants and the key order.
    ///
    /// # Errors
    /// A description of the first broken invariant.
    pub fn validate(&self) -> Result<(), String> {
        if self.keys.len() != self.containers.len() {
            return Err("keys and containers differ in length".into());
        }
        if !self.keys.windows(2).all(|w| w[0] < w[1]) {
            return Err("keys not strictly ascending".into());
        }
        for (k, c) in self.containers() {
            if c.is_empty() {
                return Err(format!("container {k} is empty"));
            }
            c.validate().map_err(|e| format!("container {k}: {e}"))?;
        }
        Ok(())
    }

    // ----- native whole-bitmap serialization -------------------------------------------

    /// Size of [`Bitmap::to_bytes`]'s output.
    pub fn serialized_size(&self) -> usize {
        4 + self
            .containers
            .iter()
            .map(|c| 2 + c.as_ref().byte_len())
            .sum::<usize>()
    }

    /// The native whole-bitmap format (`docs/format.md`): u32 LE container
    /// count, then per container its u16 LE high key and its container bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.serialized_size());
        out.extend_from_slice(&(self.keys.len() as u32).to_le_bytes());
        for (k, c) in self.containers() {
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(c.as_bytes());
        }
        out
    }

    /// Decodes and validates [`Bitmap::to_bytes`]'s format. Containers that
    /// are format-valid but break the kind rules (`docs/format.md`) are
    /// accepted and normalized, so the result always passes [`Bitmap::validate`].
    ///
    /// # Errors
    /// Any [`FormatError`]: truncation, trailing bytes, bad containers, keys not ascending.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, FormatError> {
        use crate::codec::{read_u16, read_u32, HEADER_LEN};
        if bytes.len() < 4 {
            return Err(FormatError::Truncated {
                needed: 4,
                got: bytes.len(),
            });
        }
        let n = read_u32(bytes, 0) as usize;
        if n > 65536 {
            return Err(FormatError::BadLayout("more than 65,536 containers"));
        }
        let mut at = 4;
        let mut pairs = Vec::with_capacity(n.min(bytes.len() / 6));
        for _ in 0..n {
            if bytes.len() < at + 2 + HEADER_LEN {
                return Err(FormatError::Truncated {
                    needed: at + 2 + HEADER_LEN,
                    got: bytes.len(),
                });
            }
            let key = read_u16(bytes, at);
            at += 2;
            let len = container_len_from_header(&bytes[at..])?;
            if bytes.len() < at + len {
                return Err(FormatError::Truncated {
                    needed: at + len,
                    got: bytes.len(),
                });
            }
            let mut c = ContainerBuf::from_bytes(&bytes[at..at + len])?;
            if c.is_empty() {
                return Err(FormatError::BadCardinality {
                    kind: c.kind(),
                    card: 0,
                });
            }
            // Format-valid bytes may break the kind rules (a run container
            // no smaller than its plain form): decode to the normalized form.
            c.normalize();
            pairs.push((key, c));
            at += len;
        }
        if at != bytes.len() {
            return Err(FormatError::TrailingBytes {
                expected: at,
                got: bytes.len(),
            });
        }
        Self::from_containers(pairs)
    }

    // ----- pairwise operations ------------------------------------------------------

    fn merge(
        &self,
        other: &Self,
        keep_left: bool,
        keep_right: bool,
        f: impl Fn(ContainerRef<'_>, ContainerRef<'_>) -> Option<ContainerBuf>,
    ) -> Self {
        let mut out = Self::new();
        let (a, b) = (self, other);
        // Intersections are often empty: no up-front allocation for them.
        let cap = match (keep_left, keep_right) {
            (false, false) => 0,
            (true, false) => a.keys.len(),
            _ => a.keys.len() + b.keys.len(),
        };
        out.keys.reserve(cap);
        out.containers.reserve(cap);
        let (mut i, mut j) = (0, 0);
        while i < a.keys.len() && j < b.keys.len() {
            let (ka, kb) = (a.keys[i], b.keys[j]);
            if ka == kb {
                if let Some(c) = f(a.containers[i].as_ref(), b.containers[j].as_ref()) {
                    debug_assert!(!c.is_empty());
                    out.keys.push(ka);
                    out.containers.push(c);
                }
                i += 1;
                j += 1;
            } else if ka < kb {
                if keep_left {
                    out.keys.push(ka);
                    out.containers.push(a.containers[i].clone());
                }
                i += 1;
            } else {
                if keep_right {
                    out.keys.push(kb);
                    out.containers.push(b.containers[j].clone());
                }
                j += 1;
            }
        }
        if keep_left {
            out.keys.extend_from_slice(&a.keys[i..]);
            out.containers.extend_from_slice(&a.containers[i..]);
        }
        if keep_right {
            out.keys.extend_from_slice(&b.keys[j..]);
            out.containers.extend_from_slice(&b.containers[j..]);
        }
        out
    }

    fn merge_in_place(
        &mut self,
        other: &Self,
        keep_left: bool,
        keep_right: bool,
        f: impl Fn(&mut ContainerBuf, ContainerRef<'_>),
    ) {
        let keys = std::mem::take(&mut self.keys);
        let containers = std::mem::take(&mut self.containers);
        let mut j = 0;
        let b = other;
        for (ka, mut c) in keys.into_iter().zip(containers) {
            while j < b.keys.len() && b.keys[j] < ka {
                if keep_right {
                    self.keys.push(b.keys[j]);
                    self.containers.push(b.containers[j].clone());
                }
                j += 1;
            }
            if j < b.keys.len() && b.keys[j] == ka {
                f(&mut c, b.containers[j].as_ref());
                j += 1;
                if !c.is_empty() {
                    self.keys.push(ka);
                    self.containers.push(c);
                }
            } else if keep_left {
                self.keys.push(ka);
                self.containers.push(c);
            }
        }
        if keep_right {
            self.keys.extend_from_slice(&b.keys[j..]);
            self.containers.extend_from_slice(&b.containers[j..]);
        }
    }

    fn merge_len(
        &self,
        other: &Self,
        keep_left: bool,
        keep_right: bool,
        f: impl Fn(ContainerRef<'_>, ContainerRef<'_>) -> u32,
    ) -> u64 {
        let (a, b) = (self, other);
        let (mut i, mut j, mut n) = (0, 0, 0u64);
        while i < a.keys.len() && j < b.keys.len() {
            let (ka, kb) = (a.keys[i], b.keys[j]);
            if ka == kb {
                n += f(a.containers[i].as_ref(), b.containers[j].as_ref()) as u64;
                i += 1;
                j += 1;
            } else if ka < kb {
                if keep_left {
                    n += a.containers[i].cardinality() as u64;
                }
                i += 1;
            } else {
                if keep_right {
                    n += b.containers[j].cardinality() as u64;
                }
                j += 1;
            }
        }
        if keep_left {
            n += a.containers[i..]
                .iter()
                .map(|c| c.cardinality() as u64)
                .sum::<u64>();
        }
        if keep_right {
            n += b.containers[j..]
                .iter()
                .map(|c| c.cardinality() as u64)
                .sum::<u64>();
        }
        n
    }

    /// `self ∩ other`.
    pub fn and(&self, other: &Self) -> Self {
        self.merge(other, false, false, setops::and_nonempty)
    }
    /// `self ∪ other`.
    pub fn or(&self, other: &Self) -> Self {
        self.merge(other, true, true, |a, b| Some(setops::or(a, b)))
    }
    /// `self ⊕ other`.
    pub fn xor(&self, other: &Self) -> Self {
        self.merge(other, true, true, setops::xor_nonempty)
    }
    /// `self \ other`.
    pub fn andnot(&self, other: &Self) -> Self {
        self.merge(other, true, false, setops::andnot_nonempty)
    }
    /// `self ∩= other`.
    pub fn and_in_place(&mut self, other: &Self) {
        self.merge_in_place(other, false, false, setops::and_in_place)
    }
    /// `self ∪= other`.
    pub fn or_in_place(&mut self, other: &Self) {
        self.merge_in_place(other, true, true, setops::or_in_place)
    }
    /// `self ⊕= other`.
    pub fn xor_in_place(&mut self, other: &Self) {
        self.merge_in_place(other, true, true, setops::xor_in_place)
    }
    /// `self \= other`.
    pub fn andnot_in_place(&mut self, other: &Self) {
        self.merge_in_place(other, true, false, setops::andnot_in_place)
    }
    /// `|self ∩ other|`; allocates nothing.
    pub fn and_len(&self, other: &Self) -> u64 {
        self.merge_len(other, false, false, setops::and_len)
    }
    /// `|self ∪ other|`; allocates nothing.
    pub fn or_len(&self, other: &Self) -> u64 {
        self.merge_len(other, true, true, setops::or_len)
    }
    /// `|self ⊕ other|`; allocates nothing.
    pub fn xor_len(&self, other: &Self) -> u64 {
        self.merge_len(other, true, true, setops::xor_len)
    }
    /// `|self \ other|`; allocates nothing.
    pub fn andnot_len(&self, other: &Self) -> u64 {
        self.merge_len(other, true, false, setops::andnot_len)
    }

    /// True when the two share a value; stops at the first one.
    pub fn intersects(&self, other: &Self) -> bool {
        let (a, b) = (self, other);
        let (mut i, mut j) = (0, 0);
        while i < a.keys.len() && j < b.keys.len() {
            let (ka, kb) = (a.keys[i], b.keys[j]);
            if ka == kb {
                if setops::intersects(a.containers[i].as_ref(), b.containers[j].as_ref()) {
                    return true;
                }
                i += 1;
                j += 1;
            } else if ka < kb {
                i += 1;
            } else {
                j += 1;
            }
        }
        false
    }

    /// True when every value of `self` is in `other` (TR.CONTAINS).
    pub fn is_subset(&self, other: &Self) -> bool {
        let mut j = 0;
        for (k, c) in self.containers() {
            while j < other.keys.len() && other.keys[j] < k {
                j += 1;
            }
            if j == other.keys.len() || other.keys[j] != k {
                return false;
            }
            if !setops::is_subset(c.as_ref(), other.containers[j].as_ref()) {
                return false;
            }
        }
        true
    }

    /// Jaccard index |a ∩ b| / |a ∪ b|; 0 when both are empty (spec open point 3).
    pub fn jaccard(&self, other: &Self) -> f64 {
        let inter = self.and_len(other);
        let union = self.len() + other.len() - inter;
        if union == 0 {
            0.0
        } else {
            inter as f64 / union as f64
        }
    }

    /// Union of many bitmaps: one n-way union per high key.
    pub fn union_many(bitmaps: &[&Bitmap]) -> Bitmap {
        let mut all: Vec<(u16, &ContainerBuf)> = bitmaps
            .iter()
            .flat_map(|b| b.keys.iter().copied().zip(b.containers.iter()))
            .collect();
        all.sort_by_key(|&(k, _)| k);
        let mut out = Bitmap::new();
        let mut refs: Vec<ContainerRef<'_>> = Vec::with_capacity(bitmaps.len());
        let mut i = 0;
        while i < all.len() {
            let k = all[i].0;
            let mut j = i;
            refs.clear();
            while j < all.len() && all[j].0 == k {
                refs.push(all[j].1.as_ref());
                j += 1;
            }
            let c = setops::union_many(&refs);
            if !c.is_empty() {
                out.keys.push(k);
                out.containers.push(c);
            }
            i = j;
        }
        out
    }

    /// Intersection of many bitmaps; empty for no input.
    pub fn intersection_many(bitmaps: &[&Bitmap]) -> Bitmap {
        let Some((first, rest)) = bitmaps.split_first() else {
            return Bitmap::new();
        };
        let mut out = Bitmap::new();
        let mut refs: Vec<ContainerRef<'_>> = Vec::with_capacity(bitmaps.len());
        'keys: for (k, c) in first.containers() {
            refs.clear();
            refs.push(c.as_ref());
            for b in rest {
                match b.container(k) {
                    Some(c) => refs.push(c.as_ref()),
                    None => continue 'keys,
                }
            }
            let c = setops::intersection_many(&refs);
            if !c.is_empty() {
                out.keys.push(k);
                out.containers.push(c);
            }
        }
        out
    }
}

/// Byte length of the container starting at `bytes`, from its header alone.
///
/// # Errors
/// Truncated or unknown headers.
pub fn container_len_from_header(bytes: &[u8]) -> Result<usize, FormatError> {
    use crate::codec::{read_u16, BITSET_BYTES, HEADER_LEN};
    if bytes.len() < HEADER_LEN {
        return Err(FormatError::Truncated {
            needed: HEADER_LEN,
            got: bytes.len(),
        });
    }
    let tag = bytes[0];
    if tag >> 4 != crate::codec::FORMAT_VERSION {
        return Err(FormatError::UnsupportedVersion(tag >> 4));
    }
    let card = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], 0]) as usize;
    match Kind::from_code(tag & 0xF) {
        Some(Kind::Array) => Ok(HEADER_LEN + 2 * card),
        Some(Kind::Bitset) => Ok(HEADER_LEN + BITSET_BYTES),
        Some(Kind::Run) => {
            if bytes.len() < HEADER_LEN + 2 {
                return Err(FormatError::Truncated {
                    needed: HEADER_LEN + 2,
                    got: bytes.len(),
                });
            }
            Ok(HEADER_LEN + 2 + 4 * read_u16(bytes, HEADER_LEN) as usize)
        }
        None => Err(FormatError::UnknownKind(tag & 0xF)),
    }
}

impl FromIterator<u32> for Bitmap {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let v: Vec<u32> = iter.into_iter().collect();
        Bitmap::from_unsorted(&v)
    }
}

impl Extend<u32> for Bitmap {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, iter: I) {
        let v: Vec<u32> = iter.into_iter().collect();
        self.insert_many(&v);
    }
}
