//! `MemKv`: the in-memory [`Kv`], a `BTreeMap` per space behind one lock. For fast
//! tests and for `Store::open` without a directory. Nothing is durable;
//! `persist` is a no-op and `compact` runs the data GC over the map.

use crate::error::Result;
use crate::kv::{
    bound_slice, range_is_empty, DataGc, Durability, Kv, KvIter, KvRead, KvStats, Op, Space,
    WriteBatch,
};
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;
type Maps = [Map; Space::ALL.len()];

/// Entries copied out per lock acquisition while iterating.
const CHUNK: usize = 128;

/// The in-memory storage engine. Cloning shares the same maps.
#[derive(Clone)]
pub struct MemKv {
    maps: Arc<RwLock<Maps>>,
    gc: Option<Arc<dyn DataGc>>,
}

impl MemKv {
    /// An empty store; `gc` decides what [`Kv::compact`] drops from `Data`.
    #[must_use]
    pub fn new(gc: Option<Arc<dyn DataGc>>) -> Self {
        MemKv {
            maps: Arc::new(RwLock::new(Default::default())),
            gc,
        }
    }
}

/// A frozen copy of the maps.
struct MemSnapshot {
    maps: Arc<RwLock<Maps>>,
}

fn get_in(maps: &RwLock<Maps>, space: Space, key: &[u8]) -> Option<Vec<u8>> {
    maps.read()[space.index()].get(key).cloned()
}

fn own(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Lazily walks a range, re-taking the read lock once per chunk so that a
/// long scan never blocks writers for long.
struct ChunkIter {
    maps: Arc<RwLock<Maps>>,
    space: Space,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    reverse: bool,
    buf: std::vec::IntoIter<(Vec<u8>, Vec<u8>)>,
    done: bool,
}

impl ChunkIter {
    fn refill(&mut self) {
        let guard = self.maps.read();
        let map = &guard[self.space.index()];
        let range = (self.start.clone(), self.end.clone());
        // An empty or inverted range would make BTreeMap::range panic.
        if range_is_empty(bound_slice(&range.0), bound_slice(&range.1)) {
            self.done = true;
            return;
        }
        let chunk: Vec<(Vec<u8>, Vec<u8>)> = if self.reverse {
            map.range(range)
                .rev()
                .take(CHUNK)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        } else {
            map.range(range)
                .take(CHUNK)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        drop(guard);
        if chunk.len() < CHUNK {
            self.done = true;
        }
        if let Some((last, _)) = chunk.last() {
            if self.reverse {
                self.end = Bound::Excluded(last.clone());
            } else {
                self.start = Bound::Excluded(last.clone());
            }
        }
        self.buf = chunk.into_iter();
    }
}

impl Iterator for ChunkIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(kv) = self.buf.next() {
                return Some(Ok(kv));
            }
            if self.done {
                return None;
            }
            self.refill();
        }
    }
}

fn range_in(
    maps: &Arc<RwLock<Maps>>,
    space: Space,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
) -> KvIter<'static> {
    Box::new(ChunkIter {
        maps: Arc::clone(maps),
        space,
        start: own(start),
        end: own(end),
        reverse,
        buf: Vec::new().into_iter(),
        done: false,
    })
}

impl KvRead for MemKv {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(get_in(&self.maps, space, key))
    }

    fn range(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> KvIter<'_> {
        range_in(&self.maps, space, start, end, reverse)
    }
}

impl KvRead for MemSnapshot {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(get_in(&self.maps, space, key))
    }

    fn range(
        &self,
        space: Space,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> KvIter<'_> {
        range_in(&self.maps, space, start, end, reverse)
    }
}

impl Kv for MemKv {
    fn write(&self, batch: WriteBatch, _durability: Durability) -> Result<()> {
        batch.check_keys()?;
        let mut maps = self.maps.write();
        for (space, key, op) in batch.into_ops() {
            let map = &mut maps[space.index()];
            match op {
                Op::Put(v) => {
                    map.insert(key, v);
                }
                Op::Delete => {
                    map.remove(&key);
                }
            }
        }
        Ok(())
    }

    fn snapshot(&self) -> Box<dyn KvRead> {
        let copy = self.maps.read().clone();
        Box::new(MemSnapshot {
            maps: Arc::new(RwLock::new(copy)),
        })
    }

    fn persist(&self) -> Result<()> {
        Ok(())
    }

    fn compact(&self) -> Result<()> {
        let Some(gc) = &self.gc else { return Ok(()) };
        let mut maps = self.maps.write();
        let [meta, data, ..] = &mut *maps;
        let lookup = |k: &[u8]| -> Result<Option<Vec<u8>>> { Ok(meta.get(k).cloned()) };
        let mut stale = Vec::new();
        for key in data.keys() {
            if gc.is_stale(key, &lookup)? {
                stale.push(key.clone());
            }
        }
        for key in stale {
            data.remove(&key);
        }
        Ok(())
    }

    fn stats(&self) -> KvStats {
        let maps = self.maps.read();
        let bytes: usize = maps
            .iter()
            .flat_map(|m| m.iter())
            .map(|(k, v)| k.len() + v.len())
            .sum();
        KvStats {
            memtable_bytes: bytes as u64,
            ..KvStats::default()
        }
    }
}
