//! Bitmap engine: Roaring containers in a serialized little-endian form. See docs/architecture.md.
