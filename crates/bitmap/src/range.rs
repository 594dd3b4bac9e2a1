//! Range writes and counts on a [`Bitmap`], over inclusive u32 ranges.

use crate::bitmap::{split, Bitmap};
use crate::container::ContainerBuf;

/// Splits `start..=end` into per-container pieces `(high key, lo, hi)`.
pub(crate) fn pieces(start: u32, end: u32) -> impl Iterator<Item = (u16, u16, u16)> {
    let (sh, sl) = split(start);
    let (eh, el) = split(end);
    let empty = start > end;
    (sh as u32..=eh as u32)
        .filter(move |_| !empty)
        .map(move |h| {
            let h = h as u16;
            let lo = if h == sh { sl } else { 0 };
            let hi = if h == eh { el } else { u16::MAX };
            (h, lo, hi)
        })
}

impl Bitmap {
    fn edit_range(
        &mut self,
        start: u32,
        end: u32,
        create: bool,
        f: impl Fn(&mut ContainerBuf, u16, u16),
    ) {
        for (h, lo, hi) in pieces(start, end) {
            match self.keys.binary_search(&h) {
                Ok(i) => {
                    f(&mut self.containers[i], lo, hi);
                    if self.containers[i].is_empty() {
                        self.keys.remove(i);
                        self.containers.remove(i);
                    }
                }
                Err(i) if create => {
                    let mut c = ContainerBuf::new();
                    f(&mut c, lo, hi);
                    if !c.is_empty() {
                        self.keys.insert(i, h);
                        self.containers.insert(i, c);
                    }
                }
                Err(_) => {}
            }
        }
    }

    /// Adds every value in `start..=end` (nothing when `start > end`).
    pub fn add_range(&mut self, start: u32, end: u32) {
        self.edit_range(start, end, true, |c, lo, hi| c.add_range(lo, hi));
    }

    /// Removes every value in `start..=end`.
    pub fn remove_range(&mut self, start: u32, end: u32) {
        self.edit_range(start, end, false, |c, lo, hi| c.remove_range(lo, hi));
    }

    /// Inverts every value in `start..=end`.
    pub fn flip_range(&mut self, start: u32, end: u32) {
        self.edit_range(start, end, true, |c, lo, hi| c.flip_range(lo, hi));
    }

    /// Number of values in `start..=end` (0 when `start > end`).
    pub fn count_range(&self, start: u32, end: u32) -> u64 {
        if start > end {
            return 0;
        }
        let (sh, _) = split(start);
        let (eh, _) = split(end);
        let from = self.keys.partition_point(|&k| k < sh);
        let mut n = 0u64;
        for i in from..self.keys.len() {
            let k = self.keys[i];
            if k > eh {
                break;
            }
            let lo = if k == sh { start as u16 } else { 0 };
            let hi = if k == eh { end as u16 } else { u16::MAX };
            let c = self.containers[i].as_ref();
            n += if lo == 0 && hi == u16::MAX {
                c.cardinality() as u64
            } else {
                c.count_range(lo, hi) as u64
            };
        }
        n
    }
}
