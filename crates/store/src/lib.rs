//! Key layout and data-type semantics on the embedded LSM store.
