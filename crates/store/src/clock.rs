//! A cheap monotonic millisecond clock for bookkeeping that needs no
//! precision (the memory tier's access times): the kernel's coarse
//! monotonic clock, which the vDSO answers from a value the timer tick
//! updates (a resolution of a few milliseconds), instead of reading the
//! time source on every call as `Instant::now` does (about 30 ns here, and
//! a resident key's read took three).

/// Milliseconds on a monotonic clock of a few milliseconds' resolution;
/// only differences mean anything.
#[must_use]
pub(crate) fn coarse_millis() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_COARSE
        // exists on every Linux this builds for (since 2.6.32).
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } == 0 {
            return (ts.tv_sec as u64) * 1000 + (ts.tv_nsec as u64) / 1_000_000;
        }
    }
    fallback_millis()
}

/// Milliseconds since the first call, from `Instant`.
fn fallback_millis() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_coarse_clock_moves_forward() {
        let a = super::coarse_millis();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = super::coarse_millis();
        assert!(b >= a + 10, "{a} then {b}");
    }
}
