//! Handing freed memory back to the OS.
//!
//! With mimalloc (the `mimalloc` feature, the binary's default), memory a
//! thread frees stays with that thread's heap, and freed segments wait in
//! the allocator's arenas for a purge that runs only when some thread
//! allocates or collects. A server that goes quiet after a burst (200
//! clients that each buffered a 10 MiB request, then left) would keep that
//! memory resident for good. So every runtime worker collects its heap
//! when it goes idle, at most once per [`IDLE_COLLECT_EVERY`]
//! ([`collect_when_idle`], hooked on the runtime's thread park), and
//! `MEMORY PURGE` collects at once ([`collect`]). Without mimalloc both
//! do nothing: the system allocator trims on its own.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The least time between two idle collections of one thread.
pub const IDLE_COLLECT_EVERY: Duration = Duration::from_secs(1);

/// Frees what the calling thread's heap holds unused and purges the
/// allocator's freed segments back to the OS. Takes well under a
/// millisecond when little is held; meant for idle moments and
/// `MEMORY PURGE`, not for the command path.
pub fn collect() {
    #[cfg(feature = "mimalloc")]
    // SAFETY: mi_collect only walks the calling thread's heap and the
    // allocator's own structures; no pointer of ours is involved.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}

thread_local! {
    static LAST_COLLECT: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// [`collect`] unless this thread collected in the last
/// [`IDLE_COLLECT_EVERY`]: for the runtime's `on_thread_park` hook, which
/// runs whenever a worker runs out of work.
pub fn collect_when_idle() {
    let now = Instant::now();
    let due = LAST_COLLECT.with(|last| match last.get() {
        Some(t) if now.duration_since(t) < IDLE_COLLECT_EVERY => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if due {
        collect();
    }
}
