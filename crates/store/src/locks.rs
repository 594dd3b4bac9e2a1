//! Per-key locking: one global reader-writer lock (shared by every `Txn`,
//! exclusive for whole-database operations) and a fixed array of striped
//! mutexes. A `Txn` takes the stripes of its keys in ascending stripe order,
//! each once, so two `Txn`s can never wait on each other in a cycle.
//!
//! The locks are raw `parking_lot` locks in one shared table: the stripes
//! are one contiguous array of one-byte mutexes (4 KiB, so a point command
//! takes its stripe on a line that stays in cache, with no reference count
//! of its own to bump), and a [`Held`] keeps one reference to the table
//! and the stripe numbers, so a `Txn` owns its locks (`'static`, `Send`)
//! and releases them when dropped.

use parking_lot::lock_api::{RawMutex as _, RawRwLock as _};
use parking_lot::{RawMutex, RawRwLock};
use std::sync::Arc;

/// Number of key stripes.
pub const STRIPES: usize = 4096;

/// Stripes a [`Held`] keeps without allocating.
const INLINE: usize = 6;

/// The lock table of a store.
pub struct Locks {
    table: Arc<Table>,
}

struct Table {
    global: RawRwLock,
    stripes: Box<[RawMutex]>,
}

/// How a [`Held`] holds the global lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Global {
    /// Shared with other per-key transactions.
    Shared,
    /// Alone: no other transaction runs.
    Exclusive,
    /// Not held here (extra stripes of a `Txn` that holds it already).
    None,
}

/// The locks a `Txn` holds; released on drop (stripes first, then the
/// global lock).
pub struct Held {
    table: Arc<Table>,
    /// Stripes held, ascending: the first `len` of `inline`, or `spill`
    /// when there are more than [`INLINE`] (empty when exclusive).
    inline: [u16; INLINE],
    len: u8,
    spill: Vec<u16>,
    global: Global,
}

impl Drop for Held {
    fn drop(&mut self) {
        for &s in self.stripes_held() {
            // SAFETY: every stripe listed was locked by this holder when it
            // was built ([`Locks::lock_keys_inner`]), once, and is unlocked
            // here once.
            unsafe { self.table.stripes[usize::from(s)].unlock() };
        }
        // SAFETY: as above, for the global lock in the mode recorded.
        match self.global {
            Global::Shared => unsafe { self.table.global.unlock_shared() },
            Global::Exclusive => unsafe { self.table.global.unlock_exclusive() },
            Global::None => {}
        }
    }
}

impl Held {
    /// True when this holder may write `(db, key)` without further locking.
    #[must_use]
    pub fn covers(&self, db: u16, key: &[u8]) -> bool {
        self.is_exclusive() || self.find(stripe_of(db, key)).is_some()
    }

    /// True when this holder has the global lock exclusively.
    #[must_use]
    pub fn is_exclusive(&self) -> bool {
        self.global == Global::Exclusive
    }

    /// Stripes held, ascending (empty when exclusive).
    pub fn stripes(&self) -> impl Iterator<Item = usize> + '_ {
        self.stripes_held().iter().map(|&s| usize::from(s))
    }

    fn stripes_held(&self) -> &[u16] {
        if self.spill.is_empty() {
            &self.inline[..usize::from(self.len)]
        } else {
            &self.spill
        }
    }

    fn find(&self, stripe: usize) -> Option<usize> {
        let held = self.stripes_held();
        // Usually one or two stripes: a linear scan beats the search.
        if held.len() <= 8 {
            held.iter().position(|&s| usize::from(s) == stripe)
        } else {
            held.binary_search_by_key(&stripe, |&s| usize::from(s)).ok()
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
            table: Arc::new(Table {
                global: RawRwLock::INIT,
                stripes: (0..STRIPES).map(|_| RawMutex::INIT).collect(),
            }),
        }
    }
}

impl Locks {
    /// Takes the shared global lock, then the stripes of `keys` in
    /// ascending order (duplicates once). Blocks until all are held.
    #[must_use]
    pub fn lock_keys(&self, keys: &[(u16, &[u8])]) -> Held {
        self.table.global.lock_shared();
        let mut held = self.lock_keys_inner(keys);
        held.global = Global::Shared;
        held
    }

    fn lock_keys_inner(&self, keys: &[(u16, &[u8])]) -> Held {
        let mut held = Held {
            table: Arc::clone(&self.table),
            inline: [0; INLINE],
            len: 0,
            spill: Vec::new(),
            global: Global::None,
        };
        // `stripe_of` is below `STRIPES`, so a stripe fits a u16.
        let stripe = |(db, k): &(u16, &[u8])| stripe_of(*db, k) as u16;
        let stripes: &mut [u16] = if keys.len() <= INLINE {
            for (s, key) in held.inline.iter_mut().zip(keys) {
                *s = stripe(key);
            }
            &mut held.inline[..keys.len()]
        } else {
            held.spill.extend(keys.iter().map(stripe));
            &mut held.spill
        };
        stripes.sort_unstable();
        // Deduplicate in place, locking each stripe once, in ascending order.
        let mut n = 0;
        for i in 0..stripes.len() {
            if n == 0 || stripes[n - 1] != stripes[i] {
                stripes[n] = stripes[i];
                n += 1;
            }
        }
        for &s in &stripes[..n] {
            self.table.stripes[usize::from(s)].lock();
        }
        if held.spill.is_empty() {
            held.len = n as u8;
        } else {
            held.spill.truncate(n);
        }
        held
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
        self.table.global.lock_exclusive();
        Held {
            table: Arc::clone(&self.table),
            inline: [0; INLINE],
            len: 0,
            spill: Vec::new(),
            global: Global::Exclusive,
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

    /// True when stripe `s` is free (takes and releases it).
    fn stripe_free(locks: &Locks, s: usize) -> bool {
        let m = &locks.table.stripes[s];
        let free = m.try_lock();
        if free {
            // SAFETY: just taken above.
            unsafe { m.unlock() };
        }
        free
    }

    #[test]
    fn a_holder_releases_every_stripe_and_the_global_lock() {
        let locks = Locks::default();
        let keys: Vec<Vec<u8>> = (0..20)
            .map(|i| format!("k{}", i % 13).into_bytes())
            .collect();
        let named: Vec<(u16, &[u8])> = keys.iter().map(|k| (0, &k[..])).collect();
        let held = locks.lock_keys(&named);
        let stripes: Vec<usize> = held.stripes().collect();
        assert!(stripes.windows(2).all(|w| w[0] < w[1]));
        let mut expected: Vec<usize> = named.iter().map(|(db, k)| stripe_of(*db, k)).collect();
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(stripes, expected);
        assert!(stripes.iter().all(|&s| !stripe_free(&locks, s)));
        assert!(!locks.table.global.try_lock_exclusive());
        drop(held);
        assert!(stripes.iter().all(|&s| stripe_free(&locks, s)));
        let ex = locks.lock_exclusive();
        assert!(ex.is_exclusive() && ex.covers(0, b"anything"));
        assert!(!locks.table.global.try_lock_shared());
        drop(ex);
        // A few keys (held inline) and stripes taken without the global lock.
        let held = locks.lock_stripes_only(&[(0, b"a"), (0, b"a")]);
        assert_eq!(held.stripes().count(), 1);
        assert!(locks.table.global.try_lock_exclusive());
        // SAFETY: just taken above.
        unsafe { locks.table.global.unlock_exclusive() };
        drop(held);
        assert!(stripe_free(&locks, stripe_of(0, b"a")));
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
