//! Per-key locking: one global reader-writer lock (shared by every `Txn`,
//! exclusive for whole-database operations) and a fixed array of striped
//! mutexes. A `Txn` takes the stripes of its keys in ascending stripe order,
//! each once, so two `Txn`s can never wait on each other in a cycle.
//! Guards are `Arc`-based so a `Txn` owns them (`'static`, `Send`).

use parking_lot::lock_api::{ArcMutexGuard, ArcRwLockReadGuard, ArcRwLockWriteGuard};
use parking_lot::{Mutex, RawMutex, RawRwLock, RwLock};
use std::sync::Arc;

/// Number of key stripes.
pub const STRIPES: usize = 4096;

/// The lock table of a store.
pub struct Locks {
    global: Arc<RwLock<()>>,
    stripes: Vec<Arc<Mutex<()>>>,
}

/// How a `Txn` holds the global lock.
pub enum GlobalGuard {
    /// Shared with other per-key transactions.
    Shared(#[allow(dead_code)] ArcRwLockReadGuard<RawRwLock, ()>),
    /// Alone: no other transaction runs.
    Exclusive(#[allow(dead_code)] ArcRwLockWriteGuard<RawRwLock, ()>),
    /// Not held here (extra stripes of a `Txn` that holds it already).
    None,
}

/// The locks a `Txn` holds; released on drop.
pub struct Held {
    /// Stripes held with their guards, ascending by stripe (empty when
    /// exclusive). One vector: one allocation per lock set.
    guards: Vec<(usize, ArcMutexGuard<RawMutex, ()>)>,
    /// The global guard; dropped last.
    pub global: GlobalGuard,
}

impl Drop for Held {
    fn drop(&mut self) {
        // Release stripes before the global lock.
        self.guards.clear();
    }
}

impl Held {
    /// True when this holder may write `(db, key)` without further locking.
    #[must_use]
    pub fn covers(&self, db: u16, key: &[u8]) -> bool {
        matches!(self.global, GlobalGuard::Exclusive(_)) || self.find(stripe_of(db, key)).is_some()
    }

    /// True when this holder has the global lock exclusively.
    #[must_use]
    pub fn is_exclusive(&self) -> bool {
        matches!(self.global, GlobalGuard::Exclusive(_))
    }

    /// Stripes held, ascending (empty when exclusive).
    pub fn stripes(&self) -> impl Iterator<Item = usize> + '_ {
        self.guards.iter().map(|(s, _)| *s)
    }

    fn find(&self, stripe: usize) -> Option<usize> {
        // Usually one or two stripes: a linear scan beats the search.
        if self.guards.len() <= 8 {
            self.guards.iter().position(|(s, _)| *s == stripe)
        } else {
            self.guards.binary_search_by_key(&stripe, |(s, _)| *s).ok()
        }
    }
}

/// The stripe index of a key: a fast multiplicative hash (stripes only
/// spread lock contention; they carry no persistent meaning).
#[must_use]
pub fn stripe_of(db: u16, key: &[u8]) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (u64::from(db) << 32 ^ key.len() as u64).wrapping_mul(K);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(K).rotate_left(31);
    }
    let rest = chunks.remainder();
    let mut w = [0u8; 8];
    w[..rest.len()].copy_from_slice(rest);
    h = (h ^ u64::from_le_bytes(w)).wrapping_mul(K);
    // murmur3's finaliser: every input bit reaches the low bits.
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^= h >> 33;
    (h % STRIPES as u64) as usize
}

impl Default for Locks {
    fn default() -> Self {
        Locks {
            global: Arc::new(RwLock::new(())),
            stripes: (0..STRIPES).map(|_| Arc::new(Mutex::new(()))).collect(),
        }
    }
}

impl Locks {
    /// Takes the shared global lock, then the stripes of `keys` in
    /// ascending order (duplicates once). Blocks until all are held.
    #[must_use]
    pub fn lock_keys(&self, keys: &[(u16, &[u8])]) -> Held {
        let global = GlobalGuard::Shared(self.global.read_arc());
        let mut held = self.lock_keys_inner(keys);
        held.global = global;
        held
    }

    fn lock_keys_inner(&self, keys: &[(u16, &[u8])]) -> Held {
        // Stripe ids of a few keys sort on the stack; more go to a vector.
        let mut small = [0usize; 8];
        let mut big = Vec::new();
        let stripes: &mut [usize] = if keys.len() <= small.len() {
            for (s, (db, k)) in small.iter_mut().zip(keys) {
                *s = stripe_of(*db, k);
            }
            &mut small[..keys.len()]
        } else {
            big.extend(keys.iter().map(|(db, k)| stripe_of(*db, k)));
            &mut big
        };
        stripes.sort_unstable();
        let mut guards: Vec<(usize, ArcMutexGuard<RawMutex, ()>)> =
            Vec::with_capacity(stripes.len());
        for &s in stripes.iter() {
            if guards.last().is_none_or(|(l, _)| *l != s) {
                guards.push((s, self.stripes[s].lock_arc()));
            }
        }
        Held {
            guards,
            global: GlobalGuard::None,
        }
    }

    /// Takes the stripes of `keys` without the global lock (for a `Txn`
    /// that already holds it and writes a key it did not name).
    #[must_use]
    pub fn lock_stripes_only(&self, keys: &[(u16, &[u8])]) -> Held {
        self.lock_keys_inner(keys)
    }

    /// Takes the global lock exclusively (waits for every other holder).
    #[must_use]
    pub fn lock_exclusive(&self) -> Held {
        Held {
            guards: Vec::new(),
            global: GlobalGuard::Exclusive(self.global.write_arc()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_dedupes_stripes() {
        let locks = Locks::default();
        let held = locks.lock_keys(&[(0, b"a"), (0, b"a"), (1, b"b")]);
        assert!(held.stripes().count() <= 2);
        assert!(held.covers(0, b"a"));
        assert!(held.covers(1, b"b"));
        let s: Vec<usize> = held.stripes().collect();
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn crossing_lock_orders_do_not_deadlock() {
        let locks = Arc::new(Locks::default());
        let keys: Vec<Vec<u8>> = (0..50).map(|i| format!("k{i}").into_bytes()).collect();
        let keys = Arc::new(keys);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let locks = Arc::clone(&locks);
                let keys = Arc::clone(&keys);
                std::thread::spawn(move || {
                    for i in 0..500 {
                        let a = &keys[(i * 7 + t) % 50];
                        let b = &keys[(i * 13 + 3 * t) % 50];
                        let pair: Vec<(u16, &[u8])> = if t % 2 == 0 {
                            vec![(0, a), (0, b)]
                        } else {
                            vec![(0, b), (0, a)]
                        };
                        let _h = locks.lock_keys(&pair);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let _ex = locks.lock_exclusive();
    }
}
