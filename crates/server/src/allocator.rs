//! Handing freed memory back to the OS.
//!
//! With mimalloc (the `mimalloc` feature, the binary's default), freed
//! segments wait in the allocator's arenas for a purge that runs only when
//! some thread allocates or collects. A server that goes quiet after a
//! burst (100 clients that each buffered 9 MiB of a request, then left)
//! kept 835 MB resident for good. So a thread of its own (`roaringd-mem`,
//! [`start_collector`]) collects once per [`COLLECT_EVERY`], and
//! `MEMORY PURGE` collects at once ([`collect`]). Collecting on the
//! runtime's workers when they park was tried first: a forced collection
//! after hundreds of MB were freed held the worker for up to 150 ms, which
//! a client's PING then waited for. Without mimalloc both do nothing: the
//! system allocator trims on its own.
//!
//! Pages a worker's heap owns and other threads emptied (the LSM store's
//! flush frees the memtable copies a worker allocated) are handed back
//! only when that worker collects its own heap: so each worker also
//! collects when it parks, at most once per [`COLLECT_EVERY`]
//! ([`collect_when_idle`]; 43 µs typical, 1.4 ms after 150 MB were freed).
//! Forced, because an unforced collection left those pages in place.
//! The memory tier's entries live in a heap of their own per thread
//! ([`heap_for_allocation`]).

use std::time::Duration;

#[cfg(feature = "mimalloc")]
thread_local! {
    /// The calling thread's heap for the memory tier's entries
    /// (`roaringd_store::alloc_hint`); null until first used.
    static RESIDENT_HEAP: std::cell::Cell<*mut libmimalloc_sys::mi_heap_t> =
        const { std::cell::Cell::new(std::ptr::null_mut()) };
}

/// The heap the global allocator should take the current allocation from:
/// the calling thread's heap for the memory tier's entries while the store
/// flags them (`roaringd_store::alloc_hint::allocating_resident`), created
/// on first use; null for the thread's default heap. Keeping the tier's
/// long-lived entries in pages of their own lets the pages that the write
/// path's short-lived buffers fill be handed back whole once those are
/// freed. Never allocates through the global allocator.
#[cfg(feature = "mimalloc")]
#[must_use]
#[inline]
pub fn heap_for_allocation() -> *mut libmimalloc_sys::mi_heap_t {
    if !roaringd_store::alloc_hint::allocating_resident() {
        return std::ptr::null_mut();
    }
    RESIDENT_HEAP
        .try_with(|h| {
            if h.get().is_null() {
                // SAFETY: creates a heap owned by this thread; mimalloc
                // allocates its bookkeeping itself.
                h.set(unsafe { libmimalloc_sys::mi_heap_new() });
            }
            h.get()
        })
        .unwrap_or(std::ptr::null_mut())
}

/// Collects the calling thread's heaps (default and tier) with `force`.
#[cfg(feature = "mimalloc")]
fn collect_thread(force: bool) {
    // SAFETY: mi_collect / mi_heap_collect walk this thread's own heaps.
    unsafe {
        libmimalloc_sys::mi_collect(force);
        let _ = RESIDENT_HEAP.try_with(|h| {
            if !h.get().is_null() {
                libmimalloc_sys::mi_heap_collect(h.get(), force);
            }
        });
    }
}

/// How often the collector thread collects.
pub const COLLECT_EVERY: Duration = Duration::from_secs(1);

/// Frees what the calling thread's heap holds unused and purges the
/// allocator's freed segments (of every thread) back to the OS. Meant for
/// the collector thread and `MEMORY PURGE`, not for the command path.
pub fn collect() {
    #[cfg(feature = "mimalloc")]
    collect_thread(true);
}

/// mimalloc's `purge_delay` option (v2's option number; its default is
/// 10 ms).
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Makes the allocator hand a freed page back to the OS at once instead of
/// after its default 10 ms delay, unless `MIMALLOC_PURGE_DELAY` is set in
/// the environment. Pages freed by one thread and refilled later by another
/// (the memory tier's evictions and fills, the warm pool's reads) otherwise
/// stayed resident: after loading 3 million records under a 65 MB
/// `maxmemory` the process held 83 MB with the tier at its 1 MB floor,
/// 57 MB with immediate purging and the tier at its full share
/// (docs/benchmarks.md, "Storage tiers"); the in-memory throughput did not
/// change measurably.
pub fn configure() {
    #[cfg(feature = "mimalloc")]
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of the allocator's options; no pointer involved.
        unsafe {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
        }
    }
}

/// Collects the calling thread's heap without forcing (frees its pages that
/// other threads emptied, and hands them back), at most once per
/// [`COLLECT_EVERY`] per thread. For the runtime's workers when they park
/// (see the module docs).
pub fn collect_when_idle() {
    #[cfg(feature = "mimalloc")]
    {
        use std::cell::Cell;
        use std::time::Instant;
        thread_local! {
            static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
        }
        let now = Instant::now();
        let due = LAST.with(|l| {
            let due = l
                .get()
                .is_none_or(|t| now.duration_since(t) >= COLLECT_EVERY);
            if due {
                l.set(Some(now));
            }
            due
        });
        if due {
            collect_thread(true);
        }
    }
}

/// Starts the collector thread, once per process (later calls do nothing).
pub fn start_collector() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("roaringd-mem".into())
            .spawn(|| loop {
                std::thread::sleep(COLLECT_EVERY);
                collect();
            });
        if let Err(e) = spawned {
            crate::warning!("Can't start the memory collector thread: {e}");
        }
    });
}
