//! The roaringd server library.
