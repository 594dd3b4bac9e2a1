//! `roaringd [config-file] [--name value ...]`: parse the configuration,
//! open the store, serve until shutdown.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(roaringd_server::start::main_with_args(&args));
}

/// mimalloc as the global allocator (feature `mimalloc`, on by default;
/// `--no-default-features` keeps the system allocator). The write path
/// allocates and frees a few dozen small buffers per command (keys, overlay
/// maps, batch items); mimalloc's thread-local free lists cost a fraction
/// of glibc malloc's instructions for them.
///
/// Unlike the `mimalloc` crate's allocator, layouts of alignment <= 8 (all
/// but a few: `Vec<u8>`, maps, `Arc`s) go to plain `mi_malloc`, whose blocks
/// are always 8-aligned: its fast path is shorter than `mi_malloc_aligned`'s,
/// which falls back to a generic path for blocks over 1 KiB.
///
/// The memory tier's entries go to a heap of their own per thread
/// (`roaringd_server::allocator::heap_for_allocation`).
#[cfg(feature = "mimalloc")]
mod alloc {
    use libmimalloc_sys as mi;
    use std::alloc::{GlobalAlloc, Layout};
    use std::ffi::c_void;

    /// Alignment every mimalloc block has (`MI_INTPTR_SIZE`).
    const PLAIN_ALIGN: usize = 8;

    struct MiMalloc;

    // SAFETY: mimalloc returns null or a block of at least `size` bytes with
    // the requested alignment (`mi_malloc`: always 8-aligned; the aligned
    // variants: `align`), valid until `mi_free`; `mi_realloc*` keep the
    // contents; `mi_free` accepts every block either family returns.
    unsafe impl GlobalAlloc for MiMalloc {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let heap = roaringd_server::allocator::heap_for_allocation();
            // SAFETY: plain FFI calls with a valid size and alignment, and
            // a heap of this thread (or none).
            unsafe {
                match (heap.is_null(), layout.align() <= PLAIN_ALIGN) {
                    (true, true) => mi::mi_malloc(layout.size()).cast(),
                    (true, false) => mi::mi_malloc_aligned(layout.size(), layout.align()).cast(),
                    (false, true) => mi::mi_heap_malloc(heap, layout.size()).cast(),
                    (false, false) => {
                        mi::mi_heap_malloc_aligned(heap, layout.size(), layout.align()).cast()
                    }
                }
            }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as `alloc`.
            unsafe {
                if layout.align() <= PLAIN_ALIGN {
                    mi::mi_zalloc(layout.size()).cast()
                } else {
                    mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
                }
            }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
            // SAFETY: `ptr` came from this allocator (GlobalAlloc contract).
            unsafe { mi::mi_free(ptr.cast::<c_void>()) }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let heap = roaringd_server::allocator::heap_for_allocation();
            // SAFETY: `ptr` came from this allocator with `layout`; `heap`
            // is this thread's (mi_heap_realloc moves the block into it).
            unsafe {
                if !heap.is_null() && layout.align() <= PLAIN_ALIGN {
                    mi::mi_heap_realloc(heap, ptr.cast::<c_void>(), new_size).cast()
                } else if layout.align() <= PLAIN_ALIGN {
                    mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
                } else {
                    mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
                }
            }
        }
    }

    #[global_allocator]
    static GLOBAL: MiMalloc = MiMalloc;
}
