//! The write-back tier's budget bounds what its dirty keys hold in memory:
//! the bytes it counts (`Store::write_back_stats`) against the bytes the
//! dirty keys allocate, measured by a global allocator that counts the
//! calling thread's allocations (this test binary's own).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use roaringd_store::{Store, StoreConfig};

/// The system allocator, counting the live bytes each thread asked for.
struct Counting;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread.
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn add(n: i64) {
    // `try_with`: a thread's allocations after its locals are gone are
    // not counted (none happen on the test's thread while it measures).
    let _ = LIVE.try_with(|l| l.set(l.get() + n));
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counter is a thread-local integer that allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as i64);
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as i64));
        // SAFETY: `ptr` came from `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as i64);
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as i64 - layout.size() as i64);
        // SAFETY: `ptr` came from `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> i64 {
    LIVE.with(Cell::get)
}

/// `keys` bitmaps of 200 bits over 10 blocks each, written by the
/// ordinary path, then one TR.SETBIT per key per listed block, taken by
/// the write-back tier. Returns (bytes counted, bytes the edits left
/// allocated on this thread, dirty keys), and the write-back tier's
/// (keys, bytes) after a checkpoint wrote every key back.
fn dirty_keys(keys: usize, blocks: &[u32]) -> ((u64, i64, usize), (usize, u64)) {
    let dir = tempfile::tempdir().unwrap();
    let st = Store::open(StoreConfig {
        dir: Some(dir.path().to_path_buf()),
        ..StoreConfig::default()
    })
    .unwrap();
    st.set_write_back_bytes(1 << 30);
    let base: Vec<u32> = (0..10u32)
        .flat_map(|b| (0..20u32).map(move |i| (b << 16) + i * 97))
        .collect();
    let names: Vec<Vec<u8>> = (0..keys).map(|i| format!("k{i}").into_bytes()).collect();
    for k in &names {
        let mut t = st.begin(&[(0, k)]);
        t.tr_setbits(0, k, &base).unwrap();
        t.commit().unwrap();
    }
    let before = live();
    for k in &names {
        for &b in blocks {
            let mut t = st.begin_keep_dirty(&[(0, k)]);
            // Between two set bits of the block: neither extreme moves.
            t.tr_setbit(0, k, (b << 16) + 500, true).unwrap();
            t.commit().unwrap();
        }
    }
    let allocated = live() - before;
    let (n, counted) = st.write_back_stats();
    st.checkpoint().unwrap();
    let after = st.write_back_stats();
    drop(st);
    ((counted, allocated, n), after)
}

/// The counted bytes are the allocated bytes within a margin, for keys of
/// one dirty container (no map of containers) and of several. The
/// allocations measured include the operation log's pending records (a
/// few dozen bytes an edit), which the budget does not count. Once a
/// checkpoint has written every key back, nothing is counted: the
/// tables it emptied were shrunk, and their count followed.
#[test]
fn the_write_back_budget_counts_what_dirty_keys_hold() {
    for blocks in [&[3u32][..], &[0, 2, 4, 6, 8]] {
        let ((counted, allocated, n), after) = dirty_keys(4000, blocks);
        assert_eq!(after, (0, 0), "{} blocks a key", blocks.len());
        assert_eq!(n, 4000, "every key is dirty");
        let ratio = counted as f64 / allocated as f64;
        assert!(
            (0.75..=1.5).contains(&ratio),
            "{} blocks a key: counted {counted} B, allocated {allocated} B ({ratio:.2})",
            blocks.len()
        );
    }
}
