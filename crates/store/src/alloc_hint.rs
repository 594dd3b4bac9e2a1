//! Which allocations the memory tier keeps: a flag of the calling thread,
//! set while the tier stores a written batch's entries, that a binary's
//! global allocator may read to place those allocations apart from
//! short-lived ones.
//!
//! Why: the tier's entries live for minutes or hours, while the buffers of
//! the write path (a batch's copies in the LSM store's memtables, the
//! `Txn` overlay) live for microseconds to seconds and come in the same
//! sizes. Mixed in one allocator's pages, the long-lived entries pin pages
//! whose other blocks are long freed: after loading a million set members,
//! 19 MB of live tier entries held 81 MB of RSS. The server's allocator
//! (`roaringd_server::allocator`) gives the flagged allocations a heap of
//! their own; without it the flag changes nothing.

use std::cell::Cell;

thread_local! {
    static RESIDENT: Cell<bool> = const { Cell::new(false) };
}

/// True while the calling thread allocates memory the tier keeps. Never
/// allocates (safe to call from a global allocator); false during thread
/// teardown.
#[must_use]
#[inline]
pub fn allocating_resident() -> bool {
    RESIDENT.try_with(Cell::get).unwrap_or(false)
}

/// While alive, [`allocating_resident`] is true on this thread (the
/// previous state comes back when it drops, also on unwind).
pub(crate) struct Resident(bool);

impl Resident {
    pub(crate) fn enter() -> Self {
        Resident(RESIDENT.with(|r| r.replace(true)))
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        let _ = RESIDENT.try_with(|r| r.set(self.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` inside a [`Resident`] guard.
    fn resident<T>(f: impl FnOnce() -> T) -> T {
        let _r = Resident::enter();
        f()
    }

    #[test]
    fn the_flag_holds_inside_the_scope_only_and_nests() {
        assert!(!allocating_resident());
        resident(|| {
            assert!(allocating_resident());
            resident(|| assert!(allocating_resident()));
            assert!(allocating_resident());
        });
        assert!(!allocating_resident());
        let r = std::panic::catch_unwind(|| resident(|| panic!("inside")));
        assert!(r.is_err());
        assert!(!allocating_resident());
    }
}
