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

use std::time::Duration;

/// How often the collector thread collects.
pub const COLLECT_EVERY: Duration = Duration::from_secs(1);

/// Frees what the calling thread's heap holds unused and purges the
/// allocator's freed segments (of every thread) back to the OS. Meant for
/// the collector thread and `MEMORY PURGE`, not for the command path.
pub fn collect() {
    #[cfg(feature = "mimalloc")]
    // SAFETY: mi_collect only walks the calling thread's heap and the
    // allocator's own structures; no pointer of ours is involved.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
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
