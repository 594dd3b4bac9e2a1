//! WATCH bookkeeping: which clients watch which keys, and marking them dirty
//! when a key is modified (by any client, FLUSHDB/FLUSHALL, or expiry).
//!
//! The hot path (every write commit) pays one relaxed atomic load while
//! nobody watches anything; the sharded table is only locked when at least
//! one key is watched.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

const SHARDS: usize = 16;

/// `(client id, its dirty flag, was the key live when it was watched)`.
type Watchers = Vec<(u64, Arc<AtomicBool>, bool)>;
type Shard = Mutex<HashMap<(u16, Vec<u8>), Watchers>>;

/// A client's watched keys.
#[derive(Debug, Default)]
pub struct WatchSet {
    /// `(db, key)` pairs, each registered once in the table.
    pub keys: Vec<(u16, Vec<u8>)>,
    /// For each of `keys`: did it exist (live, not expired) at WATCH time?
    /// EXEC aborts if such a key no longer exists (expired or removed).
    pub live_at_watch: Vec<bool>,
    /// Set when any watched key is touched; EXEC then fails.
    pub dirty: Arc<AtomicBool>,
}

impl WatchSet {
    /// True if the client watches nothing.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The server-wide table of watched keys.
///
/// Ordering with EXEC: writers touch WATCHers with the keys they modified
/// before their commit releases the key locks; EXEC checks its dirty flag
/// after taking its own key locks.
pub struct WatchTable {
    watched: AtomicUsize,
    shards: Vec<Shard>,
}

impl Default for WatchTable {
    fn default() -> Self {
        WatchTable {
            watched: AtomicUsize::new(0),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

fn shard_of(db: u16, key: &[u8]) -> usize {
    // FNV-1a: cheap and good enough to spread keys over 16 shards.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ u64::from(db);
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    (h as usize) % SHARDS
}

impl WatchTable {
    /// Registers `client_id` as a watcher of `(db, key)` (once per key).
    pub fn watch(&self, client_id: u64, set: &mut WatchSet, db: u16, key: &[u8], live: bool) {
        if set.keys.iter().any(|(d, k)| *d == db && k == key) {
            return;
        }
        let mut shard = self.shards[shard_of(db, key)].lock();
        shard
            .entry((db, key.to_vec()))
            .or_default()
            .push((client_id, set.dirty.clone(), live));
        self.watched.fetch_add(1, Ordering::AcqRel);
        set.keys.push((db, key.to_vec()));
        set.live_at_watch.push(live);
    }

    /// Removes every watch of the client and clears its dirty flag.
    pub fn unwatch_all(&self, client_id: u64, set: &mut WatchSet) {
        for (db, key) in set.keys.drain(..) {
            let mut shard = self.shards[shard_of(db, &key)].lock();
            let id = (db, key);
            if let Some(list) = shard.get_mut(&id) {
                list.retain(|(c, _, _)| *c != client_id);
                if list.is_empty() {
                    shard.remove(&id);
                }
            }
            self.watched.fetch_sub(1, Ordering::AcqRel);
        }
        set.live_at_watch.clear();
        set.dirty.store(false, Ordering::Release);
    }

    /// True if any key is watched by anyone.
    #[inline]
    pub fn any(&self) -> bool {
        self.watched.load(Ordering::Acquire) != 0
    }

    /// Marks the watchers of each `(db, key)` dirty.
    pub fn touch<'a>(&self, keys: impl IntoIterator<Item = (u16, &'a [u8])>) {
        self.touch_where(keys, false);
    }

    /// Marks dirty the watchers of each `(db, key)` removed by expiry,
    /// except those that watched it when it had already expired (its
    /// removal is then no change for them, as in Redis 7.2).
    pub fn touch_expired<'a>(&self, keys: impl IntoIterator<Item = (u16, &'a [u8])>) {
        self.touch_where(keys, true);
    }

    fn touch_where<'a>(&self, keys: impl IntoIterator<Item = (u16, &'a [u8])>, live_only: bool) {
        if !self.any() {
            return;
        }
        for (db, key) in keys {
            let shard = self.shards[shard_of(db, key)].lock();
            if let Some(list) = shard.get(&(db, key.to_vec())) {
                for (_, flag, live) in list {
                    if *live || !live_only {
                        flag.store(true, Ordering::Release);
                    }
                }
            }
        }
    }

    /// Every watched `(db, key)` in `db` (in every database when `None`).
    pub fn watched_in(&self, db: Option<u16>) -> Vec<(u16, Vec<u8>)> {
        if !self.any() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for shard in &self.shards {
            for (d, k) in shard.lock().keys() {
                if db.is_none_or(|db| db == *d) {
                    out.push((*d, k.clone()));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_a_watched_key_marks_every_watcher() {
        let t = WatchTable::default();
        let mut a = WatchSet::default();
        let mut b = WatchSet::default();
        t.watch(1, &mut a, 0, b"k", false);
        t.watch(2, &mut b, 0, b"k", false);
        t.touch([(1u16, &b"k"[..])]);
        assert!(!a.dirty.load(Ordering::Acquire));
        t.touch([(0u16, &b"k"[..])]);
        assert!(a.dirty.load(Ordering::Acquire) && b.dirty.load(Ordering::Acquire));
        t.unwatch_all(1, &mut a);
        t.unwatch_all(2, &mut b);
        assert!(!t.any());
    }
}
