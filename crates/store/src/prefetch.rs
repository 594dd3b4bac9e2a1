//! Cache-line prefetch hints: ask the CPU to start loading memory that a
//! command will read soon, so that the loads of many keys overlap instead
//! of each waiting for the one before. Hints only: they read nothing
//! architecturally, and do nothing off x86-64.

/// Starts loading the cache line at `p`.
#[inline]
pub(crate) fn line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86-64 baseline, and a prefetch
        // reads nothing architecturally (it never faults, whatever the
        // address).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Starts loading the first `lines` cache lines of `bytes` (fewer when it
/// is shorter).
#[inline]
pub(crate) fn bytes(bytes: &[u8], lines: usize) {
    for i in (0..bytes.len()).step_by(64).take(lines) {
        line(bytes[i..].as_ptr());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hints_accept_any_slice() {
        super::bytes(&[], 2);
        super::bytes(&[1], 2);
        super::bytes(&[0; 1000], 2);
        super::bytes(&[0; 1000], 0);
        super::line(std::ptr::null());
    }
}
