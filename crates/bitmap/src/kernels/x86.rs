//! x86-64 vector kernels (AVX2, AVX-512). The only module with `unsafe`.

use super::Kernels;

/// The widest vector table the CPU supports, if any.
pub fn detect() -> Option<&'static Kernels> {
    None
}
