//! Bitmap engine: Roaring containers kept in a serialized little-endian form
//! that is operated on in place. No I/O, no knowledge of the store.
//!
//! A 32-bit value splits into a 16-bit high key and a 16-bit low part. A
//! [`Bitmap`] is the sorted sequence of (high key, [`ContainerBuf`]); each
//! container is one array, bitset or run container whose bytes
//! ([`ContainerBuf::as_bytes`], layout in `docs/format.md`) are exactly what a
//! store keeps per entry. Stored or received bytes are read through the checked
//! [`ContainerView`], and every operation takes the typed [`ContainerRef`]
//! that owned buffers and views both give.
//!
//! Entry points for a store working container by container:
//! - [`ContainerView::parse`] (validate bytes) → [`ContainerView::as_ref`];
//! - per-container reads on [`ContainerRef`] and edits on [`ContainerBuf`];
//! - pairwise and n-way operations in [`setops`];
//! - whole bitmaps: [`Bitmap`], [`Bitmap64`], portable import/export.

pub mod bitmap;
pub mod bitmap64;
pub mod codec;
pub mod container;
pub mod iter;
pub mod kernels;
pub mod portable;
mod range;
mod rank;
pub mod setops;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use bitmap::{Bitmap, KindStat, Stat};
pub use bitmap64::Bitmap64;
pub use codec::edit::{flip_bitset_in_place, PointWrite};
pub use codec::view::ContainerView;
pub use codec::{FormatError, Kind};
pub use container::{ContainerBuf, ContainerRef};
pub use iter::{ContainerIter, Iter};
