//! One resident key of the memory tier: its `meta` entry and its `data`
//! entries, in the stored bytes, and the shard that holds entries.

use hashbrown::HashTable;
use std::hash::{BuildHasher, Hasher};
use std::ops::Bound;

use super::data_map::{prefetch_bucket, Bucket, DataMap, VALUE_LINES};
use super::head_tree::Seek;

/// Bytes counted per resident key besides its entries' bytes: its
/// [`Entry`] in a bucket of its shard's table, with the table's spare
/// buckets (a table runs between 7/16 and 7/8 full: about one and a half
/// buckets per entry) and its control bytes. A key's data map, when it
/// has one, is counted with its entries ([`Entry::data_bytes`]).
pub(crate) const KEY_OVERHEAD: usize = std::mem::size_of::<Entry>() * 3 / 2 + 4;

/// An entry sits in its bucket, so every byte of it is paid about one and
/// a half times per resident key: keep it to 56 bytes (it was 104 with
/// its data map inline, which most keys leave empty).
const _: () = assert!(std::mem::size_of::<Entry>() <= 56);
/// Bytes counted per data entry besides its key and value bytes (map node
/// share and two allocations).
pub(crate) const ELEMENT_OVERHEAD: usize = 64;

/// How much of a key's `data` entries an [`Entry`] holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Complete {
    /// Some of them (see [`Entry::data`]).
    #[default]
    No,
    /// Exactly the entries the LSM store has under the key (every version).
    All,
    /// Every entry of this version (entries of other versions may exist in
    /// the LSM store and not here).
    Version(u64),
}

impl Complete {
    /// The 8-byte form an [`Entry`] stores: 0 = `No`, 1 = `All`, `v + 2`
    /// = `Version(v)`. A version too large for that (from `u64::MAX - 1`
    /// on, which only damaged stored bytes could name) packs as `No`: it
    /// claims less of the key, which is always correct.
    pub(crate) fn pack(self) -> u64 {
        match self {
            Complete::No => 0,
            Complete::All => 1,
            Complete::Version(v) => v.checked_add(2).unwrap_or(0),
        }
    }

    /// The inverse of [`Complete::pack`].
    pub(crate) fn unpack(p: u64) -> Self {
        match p {
            0 => Complete::No,
            1 => Complete::All,
            v => Complete::Version(v - 2),
        }
    }
}

/// The version of a data entry suffix (`version | subkey`).
pub(crate) fn suffix_version(suffix: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(suffix.get(..8)?.try_into().ok()?))
}

/// What the tier knows of one user key: the key itself (`db | user
/// key`, the tier key), its `meta` entry and its `data` entries, which are
/// kept by the suffix of their `data` key after `db | len | user key`
/// (that is `version | subkey`).
pub(crate) struct Entry {
    /// The tier key followed by the meta entry's bytes when the meta is
    /// known present: one allocation, so that the key comparison of a
    /// lookup brings the meta bytes into cache with it.
    head: Box<[u8]>,
    /// Length of the tier key at the start of `head`.
    key_len: u32,
    /// Whether the meta entry is known (see [`Entry::meta`]).
    meta_known: MetaKnown,
    /// Data entries by suffix: `Some` = present with that value, `None` =
    /// known absent. Within what `complete` covers, the map holds exactly
    /// the LSM store's entries (an entry it lacks is absent there).
    pub(crate) data: DataMap,
    /// See `data`: a [`Complete`] packed ([`Complete::pack`]), so that
    /// the entry, which sits in a bucket of its shard's table, stays
    /// small.
    complete: u64,
    /// A whole load of the key's data was tried and exceeded the load
    /// limit: the key stays partial (its hot entries only).
    pub(crate) too_big: bool,
    /// Bytes counted for this key (see [`Entry::element_bytes`]).
    pub(crate) bytes: usize,
    /// Last access, in tier clock ticks (LRU).
    pub(crate) last: u32,
    /// Logarithmic access counter (LFU), as Redis's `LFU_INIT_VAL` 5.
    pub(crate) freq: u8,
}

/// What an [`Entry`] knows of its key's `meta` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MetaKnown {
    Unknown,
    Absent,
    /// Present: the bytes after the key in `head`.
    Present,
}

impl Entry {
    /// A new entry of `key` that knows nothing of it yet.
    pub(crate) fn new(key: &[u8]) -> Self {
        Entry {
            head: Box::from(key),
            key_len: u32::try_from(key.len()).expect("a tier key is below 4 GiB"),
            meta_known: MetaKnown::Unknown,
            data: DataMap::default(),
            complete: Complete::No.pack(),
            too_big: false,
            bytes: KEY_OVERHEAD + key.len(),
            last: 0,
            freq: 0,
        }
    }

    /// The tier key (`db | user key`).
    pub(crate) fn key(&self) -> &[u8] {
        &self.head[..self.key_len as usize]
    }

    /// The `meta` entry: `None` = not known here, `Some(None)` = known
    /// absent, `Some(Some(bytes))` = present.
    pub(crate) fn meta(&self) -> Option<Option<&[u8]>> {
        match self.meta_known {
            MetaKnown::Unknown => None,
            MetaKnown::Absent => Some(None),
            MetaKnown::Present => Some(Some(&self.head[self.key_len as usize..])),
        }
    }

    /// Starts loading what a command on this key reads first (its meta,
    /// the head of its first data entries) into cache: a hint, so that
    /// the keys of a transaction or a pipeline are fetched together.
    pub(crate) fn prefetch(&self) {
        crate::prefetch::bytes(&self.head, HEAD_LINES);
        self.data.prefetch();
    }

    /// The counted size of one data entry.
    pub(crate) fn element_bytes(suffix: &[u8], value: Option<&[u8]>) -> usize {
        suffix.len() + value.map_or(0, <[u8]>::len) + ELEMENT_OVERHEAD
    }

    /// How much of the key's data the map holds.
    pub(crate) fn complete(&self) -> Complete {
        Complete::unpack(self.complete)
    }

    /// Sets how much of the key's data the map holds.
    pub(crate) fn set_complete(&mut self, c: Complete) {
        self.complete = c.pack();
    }

    /// True when the map holds every entry of `version` (`None`: of every
    /// version).
    pub(crate) fn covers(&self, version: Option<u64>) -> bool {
        match self.complete() {
            Complete::All => true,
            Complete::Version(v) => version == Some(v),
            Complete::No => false,
        }
    }

    /// True when a command on this key needs no LSM read (see
    /// `Kv::is_resident`): the meta is known and, for a key with data
    /// entries, they are complete here or too big to be.
    pub(crate) fn is_warm(&self) -> bool {
        match self.meta() {
            None => false,
            Some(None) => true,
            Some(Some(m)) => {
                self.complete() != Complete::No
                    || self.too_big
                    || !crate::meta::KeyMeta::bytes_have_data(m)
            }
        }
    }

    /// Sets the meta entry; returns the change in counted bytes. The data
    /// of versions the new meta does not name can no longer be read: they
    /// are dropped (all data when the key is deleted).
    pub(crate) fn set_meta(&mut self, meta: Option<&[u8]>) -> isize {
        let old = self.meta_bytes();
        let key_len = self.key_len as usize;
        match meta {
            // The same length (an overwrite of a value by one of its size,
            // a bitmap edit that keeps its summary's and page's sizes):
            // written in place, no allocation and no free.
            Some(m) if self.meta_known == MetaKnown::Present && m.len() == old => {
                self.head[key_len..].copy_from_slice(m);
            }
            Some(m) => self.head = [&self.head[..key_len], m].concat().into_boxed_slice(),
            None => self.head = Box::from(&self.head[..key_len]),
        }
        self.meta_known = if meta.is_some() {
            MetaKnown::Present
        } else {
            MetaKnown::Absent
        };
        let mut delta = self.meta_bytes() as isize - old as isize;
        match meta {
            None => delta += self.clear_data(),
            // Decoded only when there is data to keep or drop (a new key, a
            // string, a bitmap held inline has none).
            Some(b) if !self.data.is_empty() => {
                if let Ok(m) = crate::meta::KeyMeta::decode(b) {
                    delta += self.keep_only_version(m.version);
                }
            }
            Some(_) => {}
        }
        delta
    }

    fn clear_data(&mut self) -> isize {
        let bytes: usize = self.data_bytes();
        self.data.clear();
        self.set_complete(Complete::No);
        -(bytes as isize)
    }

    /// Drops the data entries of versions other than `v` (cheap when there
    /// are none: the map is ordered by version first); returns the change
    /// in counted bytes.
    pub(crate) fn keep_only_version(&mut self, v: u64) -> isize {
        let first = self.data.iter().next().and_then(|(k, _)| suffix_version(k));
        let last = self
            .data
            .iter()
            .next_back()
            .and_then(|(k, _)| suffix_version(k));
        if first.is_none_or(|f| f == v) && last.is_none_or(|l| l == v) {
            if self.complete() == Complete::All {
                self.set_complete(Complete::Version(v));
            }
            return 0;
        }
        let hi = v.checked_add(1).map(u64::to_be_bytes);
        let map_before = self.data.overhead();
        let dropped = self
            .data
            .keep_within(&v.to_be_bytes(), hi.as_ref().map(|h| &h[..]));
        let map_freed = (map_before - self.data.overhead()) as isize;
        self.set_complete(match self.complete() {
            Complete::All => Complete::Version(v),
            Complete::Version(u) if u == v => Complete::Version(v),
            _ => Complete::No,
        });
        -(dropped
            .iter()
            .map(|(k, v)| Self::element_bytes(k, v.as_deref()))
            .sum::<usize>() as isize)
            - map_freed
    }

    /// The counted bytes of the data map: its entries and its own
    /// allocation.
    pub(crate) fn data_bytes(&self) -> usize {
        self.data
            .iter()
            .map(|(k, v)| Self::element_bytes(k, v.as_deref()))
            .sum::<usize>()
            + self.data.overhead()
    }

    fn meta_bytes(&self) -> usize {
        self.head.len() - self.key_len as usize
    }

    /// Puts (`Some`) or removes (`None`) the data entry `suffix`; returns
    /// the change in counted bytes. A complete key forgets a removed entry;
    /// a partial one remembers it as absent.
    pub(crate) fn set_data(&mut self, suffix: &[u8], value: Option<&[u8]>) -> isize {
        let mut delta = -(self.data.overhead() as isize);
        if value.is_none() && self.covers(suffix_version(suffix)) {
            if let Some(v) = self.data.remove(suffix) {
                delta -= Self::element_bytes(suffix, v.as_deref()) as isize;
            }
        } else {
            let new = value.map(Box::from);
            delta += Self::element_bytes(suffix, value) as isize;
            if let Some(old) = self.data.insert(suffix, new) {
                delta -= Self::element_bytes(suffix, old.as_deref()) as isize;
            }
        }
        delta + self.data.overhead() as isize
    }
}

/// Cache lines of a found entry's value that [`first_present`] asks for:
/// half a set page, about what a membership scan reads.
const FOUND_VALUE_LINES: usize = 8;

/// Cache lines of an entry's key and meta that [`Entry::prefetch`] asks
/// for: a meta that carries its bitmap's page inline (`meta::FLAG_INLINE`)
/// is about ten, like a data entry's value (`data_map`'s `VALUE_LINES`);
/// other metas are one or two, and the hint stops at the end.
const HEAD_LINES: usize = 12;

/// Entries of one key, full `data` key and value, in scan order.
pub(crate) type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// The first entry of `data` (a complete key's map) with suffix in the
/// bounds that is present, ascending (the last when `reverse`):
/// `(suffix, value)`. A seek: no iterator built. The head of the value
/// is asked into cache ([`FOUND_VALUE_LINES`]) before the caller reads
/// the suffix, so that the two loads overlap.
pub(crate) fn first_present<'a>(
    data: &'a DataMap,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
) -> Option<(&'a [u8], &'a [u8])> {
    let (mut lo, mut hi) = (start, end);
    loop {
        let (k, v) = data.first_in(lo, hi, reverse)?;
        if let Some(v) = v {
            crate::prefetch::bytes(v, FOUND_VALUE_LINES);
            return Some((k, v));
        }
        if reverse {
            hi = Bound::Excluded(k);
        } else {
            lo = Bound::Excluded(k);
        }
    }
}

/// Calls `f(suffix, value)` with the present data entries of `data` with
/// suffix in the bounds, ascending, until it returns false: the first by
/// one seek (most visits stop there), the rest by the map's iterator.
pub(crate) fn visit_present(
    data: &DataMap,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) {
    let Some((first, v)) = first_present(data, lo, hi, false) else {
        return;
    };
    if !f(first, v) {
        return;
    }
    for (k, v) in data.range(Bound::Excluded(first), hi) {
        if let Some(v) = v {
            if !f(k, v) {
                return;
            }
        }
    }
}

/// Data entries of `data` (a complete key's map) with suffix in the bounds,
/// ascending (or descending), as full `data` keys under `prefix`; the
/// first `limit` of them.
pub(crate) fn collect_range(
    data: &DataMap,
    prefix: &[u8],
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
    limit: usize,
) -> Entries {
    if limit == 1 {
        return first_present(data, start, end, reverse)
            .map(|(k, v)| ([prefix, k].concat(), v.to_vec()))
            .into_iter()
            .collect();
    }
    let it = data.range(start, end);
    let pair =
        |(k, v): (&[u8], &Option<Box<[u8]>>)| Some(([prefix, k].concat(), v.as_deref()?.to_vec()));
    if reverse {
        it.rev().filter_map(pair).take(limit).collect()
    } else {
        it.filter_map(pair).take(limit).collect()
    }
}

/// One shard of the tier: its resident keys' entries, held in the buckets
/// of a hash table by the key's hash, so that a lookup reaches the entry
/// in the bucket its hash names (no index of positions in between).
/// Eviction samples a uniformly random occupied bucket. Each key's bytes
/// are held once, in its entry. A reference to an entry lasts while the
/// shard's lock is held and the table does not grow.
#[derive(Default)]
pub(crate) struct Shard {
    table: HashTable<Entry>,
    /// Bumped by every write of a key of this shard (resident or not). A
    /// reader that missed notes it before reading the LSM store and fills
    /// the tier only if it is unchanged (no write could have raced it).
    pub(crate) gen: u64,
    /// Reads of this shard's keys answered from memory, and those that
    /// read the LSM store: counted under the shard's lock, which a lookup
    /// holds anyway (shared counters cost every read an atomic add).
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

/// A tier key with its hash, computed once: the hash picks the key's
/// shard ([`super::Tier`]) and its place in that shard's table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hashed<'a> {
    /// The tier key (a meta key).
    pub(crate) key: &'a [u8],
    /// Its hash.
    pub(crate) hash: u64,
}

impl<'a> Hashed<'a> {
    /// `key` and its hash.
    pub(crate) fn new(key: &'a [u8]) -> Self {
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        h.write(key);
        Hashed {
            key,
            hash: h.finish(),
        }
    }
}

/// How far [`Shard::prefetch`] goes for a key: each step reads only what
/// the step before it asked to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PrefetchStep {
    /// The entry in the first bucket that the key's hash names.
    Bucket,
    /// That entry's key-and-meta bytes and its data map's allocation.
    Head,
    /// The key's entry, found for certain, and its first data entries.
    Data,
}

impl Shard {
    fn find(&self, k: Hashed<'_>) -> Option<&Entry> {
        self.table.find(k.hash, |e| e.key() == k.key)
    }

    /// One step of a prefetch of `key` (hash `h`), a hint: the first two
    /// steps take the first candidate bucket of the hash for the key
    /// without comparing (a wrong guess only loads a line for nothing),
    /// so that neither waits for the memory it asks for. Run a step for
    /// every key of a batch before the next step, and the batch's misses
    /// overlap instead of each key paying its own one after another.
    pub(crate) fn prefetch(&self, k: Hashed<'_>, step: PrefetchStep) {
        match step {
            PrefetchStep::Bucket => {
                self.table.find(k.hash, |e| {
                    let p = std::ptr::from_ref(e).cast::<u8>();
                    crate::prefetch::line(p);
                    crate::prefetch::line(p.wrapping_add(size_of::<Entry>() - 1));
                    true
                });
            }
            PrefetchStep::Head => {
                self.table.find(k.hash, |e| {
                    crate::prefetch::bytes(&e.head, 1);
                    e.data.prefetch_index();
                    true
                });
            }
            PrefetchStep::Data => {
                if let Some(e) = self.find(k) {
                    e.prefetch();
                }
            }
        }
    }

    /// Prefetches, for each `(key, element)` of this shard, the
    /// first data entry at or after `element` of the version its resident
    /// meta names (`DataMap::prefetch_seek`): each step for all of them
    /// before the next, so that their misses overlap. A hint. Seeks of
    /// one key in a row (a pipeline of SISMEMBERs) find it once.
    pub(crate) fn prefetch_seeks(&self, seeks: &[(Hashed<'_>, &[u8])]) {
        let mut suffix = Vec::new();
        let mut open: Vec<Seek<'_, Bucket>> = Vec::with_capacity(seeks.len());
        let mut last: Option<(&[u8], &Entry, u64)> = None;
        for &(k, element) in seeks {
            let (e, version) = match last {
                // A small map was asked for whole by the key's first seek.
                Some((key, e, _)) if key == k.key && !e.data.seeks_by_head() => continue,
                Some((key, e, v)) if key == k.key => (e, v),
                _ => {
                    let Some(e) = self.find(k) else {
                        continue;
                    };
                    let Some(Some(meta)) = e.meta() else {
                        continue;
                    };
                    let Ok(v) = crate::meta::KeyMeta::decode_version(meta) else {
                        continue;
                    };
                    last = Some((k.key, e, v));
                    (e, v)
                }
            };
            suffix.clear();
            suffix.extend_from_slice(&version.to_be_bytes());
            suffix.extend_from_slice(element);
            open.extend(e.data.prefetch_seek(&suffix));
        }
        for s in &mut open {
            s.segment();
        }
        for s in &mut open {
            s.slot();
        }
        for s in &open {
            prefetch_bucket(s.value(), VALUE_LINES);
        }
    }

    pub(crate) fn get_mut(&mut self, k: Hashed<'_>) -> Option<&mut Entry> {
        self.table.find_mut(k.hash, |e| e.key() == k.key)
    }

    /// The entry of `key`, created empty when absent (`created` says so).
    pub(crate) fn get_or_insert(&mut self, k: Hashed<'_>) -> (&mut Entry, bool) {
        match self
            .table
            .entry(k.hash, |e| e.key() == k.key, |e| Hashed::new(e.key()).hash)
        {
            hashbrown::hash_table::Entry::Occupied(o) => (o.into_mut(), false),
            hashbrown::hash_table::Entry::Vacant(v) => {
                (v.insert(Entry::new(k.key)).into_mut(), true)
            }
        }
    }

    /// Removes `key`; returns its counted bytes. The table gives back its
    /// room once a quarter of it is in use, so a shard that held many keys
    /// before the budget shrank does not keep their buckets.
    pub(crate) fn remove(&mut self, k: Hashed<'_>) -> Option<usize> {
        let Ok(found) = self.table.find_entry(k.hash, |e| e.key() == k.key) else {
            return None;
        };
        let (entry, _) = found.remove();
        if self.table.capacity() > 64 && self.table.len() < self.table.capacity() / 4 {
            self.table
                .shrink_to(self.table.len() * 2, |e| Hashed::new(e.key()).hash);
        }
        Some(entry.bytes)
    }

    /// Number of resident keys.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// The entry in the bucket that `r` (random bits) draws, `None` when
    /// that bucket is empty: a caller that draws until it gets an entry
    /// picks each resident key with the same chance.
    pub(crate) fn sample(&self, r: u64) -> Option<&Entry> {
        let n = self.table.num_buckets() as u64;
        if n == 0 {
            return None;
        }
        self.table.get_bucket((r % n) as usize)
    }

    /// Drops every resident key and the room they took; returns the
    /// counted bytes dropped.
    pub(crate) fn clear(&mut self) -> usize {
        let bytes = self.table.iter().map(|e| e.bytes).sum();
        self.table = HashTable::new();
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_keeps_the_other_keys() {
        let mut s = Shard::default();
        for k in [b"a", b"b", b"c"] {
            s.get_or_insert(Hashed::new(k));
        }
        assert!(s.remove(Hashed::new(b"a")).is_some());
        assert_eq!(s.len(), 2);
        assert!(s.get_mut(Hashed::new(b"c")).is_some());
        assert!(s.get_mut(Hashed::new(b"b")).is_some());
        assert!(s.get_mut(Hashed::new(b"a")).is_none());
        assert!(s.remove(Hashed::new(b"a")).is_none());
    }

    #[test]
    fn a_shard_that_shrinks_gives_back_its_room_and_keeps_its_keys() {
        let mut s = Shard::default();
        for i in 0..1000u32 {
            s.get_or_insert(Hashed::new(&i.to_be_bytes())).0.bytes = i as usize;
        }
        let big = s.table.capacity();
        for i in 0..990u32 {
            assert_eq!(s.remove(Hashed::new(&i.to_be_bytes())), Some(i as usize));
        }
        assert!(s.table.capacity() < big / 4);
        for i in 990..1000u32 {
            assert_eq!(
                s.get_mut(Hashed::new(&i.to_be_bytes())).unwrap().bytes,
                i as usize
            );
        }
        assert!(s.get_mut(Hashed::new(&5u32.to_be_bytes())).is_none());
    }

    #[test]
    fn samples_draw_every_resident_key() {
        let mut s = Shard::default();
        assert!(s.sample(7).is_none());
        for i in 0..100u32 {
            s.get_or_insert(Hashed::new(&i.to_be_bytes()));
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut r = 1u64;
        for _ in 0..20_000 {
            r = r.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            if let Some(e) = s.sample(r) {
                seen.insert(e.key().to_vec());
            }
        }
        assert_eq!(seen.len(), 100);
        for i in 0..100u32 {
            s.remove(Hashed::new(&i.to_be_bytes()));
        }
        assert!(s.sample(r).is_none());
    }

    #[test]
    fn complete_keys_forget_removed_entries_partial_ones_remember() {
        let mut e = Entry::new(b"k");
        e.set_complete(Complete::All);
        let d = e.set_data(b"x", Some(b"1"));
        assert!(d > 0);
        assert_eq!(e.set_data(b"x", None), -d);
        assert!(e.data.is_empty());
        e.set_complete(Complete::No);
        e.set_data(b"y", None);
        assert_eq!(e.data.get(&b"y"[..]), Some(&None));
    }

    #[test]
    fn a_meta_write_of_any_length_replaces_the_meta_and_keeps_the_key() {
        let mut e = Entry::new(b"\0\0key");
        assert_eq!(e.meta(), None);
        assert_eq!(e.set_meta(Some(b"abcd")), 4);
        assert_eq!(e.meta(), Some(Some(&b"abcd"[..])));
        // The same length is written in place.
        let at = e.head.as_ptr();
        assert_eq!(e.set_meta(Some(b"wxyz")), 0);
        assert_eq!(e.meta(), Some(Some(&b"wxyz"[..])));
        assert_eq!(e.head.as_ptr(), at);
        assert_eq!(e.set_meta(Some(b"longer")), 2);
        assert_eq!(e.meta(), Some(Some(&b"longer"[..])));
        assert_eq!(e.set_meta(None), -6);
        assert_eq!(e.meta(), Some(None));
        // An empty meta after an absent one is a meta, not an absence.
        assert_eq!(e.set_meta(Some(b"")), 0);
        assert_eq!(e.meta(), Some(Some(&b""[..])));
        assert_eq!(e.key(), b"\0\0key");
    }

    #[test]
    fn completeness_packs_into_eight_bytes_and_an_unpackable_version_claims_nothing() {
        for c in [
            Complete::No,
            Complete::All,
            Complete::Version(0),
            Complete::Version(1),
            Complete::Version(u64::MAX - 2),
        ] {
            assert_eq!(Complete::unpack(c.pack()), c);
        }
        assert_eq!(
            Complete::unpack(Complete::Version(u64::MAX - 1).pack()),
            Complete::No
        );
        assert_eq!(
            Complete::unpack(Complete::Version(u64::MAX).pack()),
            Complete::No
        );
    }

    #[test]
    fn a_new_version_drops_the_others() {
        let mut e = Entry::new(b"k");
        e.set_complete(Complete::All);
        let sfx = |v: u64, s: u8| [&v.to_be_bytes()[..], &[s]].concat();
        let mut total = 0;
        for v in [3u64, 5, 9] {
            for s in 0..3 {
                total += e.set_data(&sfx(v, s), Some(b"x"));
            }
        }
        let one = Entry::element_bytes(&sfx(5, 0), Some(b"x")) as isize;
        let map = super::super::data_map::MAP_OVERHEAD as isize;
        assert_eq!(total, 9 * one + map);
        let d = e.keep_only_version(5);
        assert_eq!(e.data.len(), 3);
        assert!(e.data.iter().all(|(k, _)| suffix_version(k) == Some(5)));
        assert_eq!(d, -6 * one);
        assert_eq!(e.complete(), Complete::Version(5));
        assert!(e.covers(Some(5)) && !e.covers(Some(3)) && !e.covers(None));
        assert_eq!(e.keep_only_version(5), 0);
        // The last entries go, and the map's own allocation with them.
        assert_eq!(e.keep_only_version(7), -3 * one - map);
        assert!(e.data.is_empty() && e.data.overhead() == 0);
        assert_eq!(e.complete(), Complete::No);
    }
}
