//! Ascending iterators over a container and over a whole bitmap, startable
//! at any value (TR.SCAN cursors resume with `iter_from`).

use crate::container::{array, run, ContainerBuf, ContainerRef};

/// Ascending iterator over one container's values.
#[derive(Clone, Debug)]
pub enum ContainerIter<'a> {
    /// Remaining array values.
    Array(core::slice::Iter<'a, u16>),
    /// Remaining runs; `next` is the next value of `runs[0]`.
    Run { runs: &'a [[u16; 2]], next: u32 },
    /// Words from `index`; `cur` holds the unvisited bits of word `index`.
    Bitset {
        words: &'a [u64],
        index: usize,
        cur: u64,
    },
}

impl<'a> ContainerIter<'a> {
    /// All values of `c`.
    pub fn new(c: ContainerRef<'a>) -> Self {
        match c {
            ContainerRef::Array(a) => ContainerIter::Array(a.iter()),
            ContainerRef::Run { runs, .. } => ContainerIter::Run {
                runs,
                next: runs.first().map_or(0, |r| r[0] as u32),
            },
            ContainerRef::Bitset { words, .. } => ContainerIter::Bitset {
                words: &words[..],
                index: 0,
                cur: words[0],
            },
        }
    }

    /// The values of `c` that are ≥ `lo`.
    pub fn from(c: ContainerRef<'a>, lo: u16) -> Self {
        match c {
            ContainerRef::Array(a) => ContainerIter::Array(array::tail_from(a, lo).iter()),
            ContainerRef::Run { runs, .. } => {
                let i = runs.partition_point(|r| run::end(*r) < lo);
                let runs = &runs[i..];
                ContainerIter::Run {
                    runs,
                    next: runs.first().map_or(0, |r| r[0].max(lo) as u32),
                }
            }
            ContainerRef::Bitset { words, .. } => {
                let index = (lo >> 6) as usize;
                ContainerIter::Bitset {
                    words: &words[..],
                    index,
                    cur: words[index] & (u64::MAX << (lo & 63)),
                }
            }
        }
    }
}

impl Iterator for ContainerIter<'_> {
    type Item = u16;

    #[inline]
    fn next(&mut self) -> Option<u16> {
        match self {
            ContainerIter::Array(it) => it.next().copied(),
            ContainerIter::Run { runs, next } => {
                let r = runs.first()?;
                let v = *next as u16;
                if v == run::end(*r) {
                    *runs = &runs[1..];
                    *next = runs.first().map_or(0, |r| r[0] as u32);
                } else {
                    *next += 1;
                }
                Some(v)
            }
            ContainerIter::Bitset { words, index, cur } => loop {
                if *cur != 0 {
                    let v = (*index * 64) as u16 + cur.trailing_zeros() as u16;
                    *cur &= *cur - 1;
                    return Some(v);
                }
                *index += 1;
                if *index >= words.len() {
                    *index = words.len();
                    return None;
                }
                *cur = words[*index];
            },
        }
    }

    fn fold<B, F>(self, init: B, mut f: F) -> B
    where
        F: FnMut(B, u16) -> B,
    {
        let mut acc = init;
        match self {
            ContainerIter::Array(it) => {
                for &v in it {
                    acc = f(acc, v);
                }
            }
            ContainerIter::Run { runs, next } => {
                for (i, r) in runs.iter().enumerate() {
                    let start = if i == 0 { next } else { r[0] as u32 };
                    for v in start..=run::end(*r) as u32 {
                        acc = f(acc, v as u16);
                    }
                }
            }
            ContainerIter::Bitset { words, index, cur } => {
                if index < words.len() {
                    let mut w = cur;
                    let mut base = (index * 64) as u32;
                    loop {
                        while w != 0 {
                            acc = f(acc, (base + w.trailing_zeros()) as u16);
                            w &= w - 1;
                        }
                        base += 64;
                        let next = (base / 64) as usize;
                        if next >= words.len() {
                            break;
                        }
                        w = words[next];
                    }
                }
            }
        }
        acc
    }
}

/// Ascending iterator over a bitmap's values (high key, then low bits).
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    keys: &'a [u16],
    containers: &'a [ContainerBuf],
    high: u32,
    cur: Option<ContainerIter<'a>>,
}

impl<'a> Iter<'a> {
    pub(crate) fn new(keys: &'a [u16], containers: &'a [ContainerBuf]) -> Self {
        Self::from_index(keys, containers, 0, None)
    }

    /// Starts at container `index`; `lo` restricts the first container to values ≥ `lo`.
    pub(crate) fn from_index(
        keys: &'a [u16],
        containers: &'a [ContainerBuf],
        index: usize,
        lo: Option<u16>,
    ) -> Self {
        let keys = &keys[index.min(keys.len())..];
        let containers = &containers[index.min(containers.len())..];
        match (keys.first(), containers.first()) {
            (Some(&k), Some(c)) => Iter {
                keys: &keys[1..],
                containers: &containers[1..],
                high: (k as u32) << 16,
                cur: Some(match lo {
                    Some(lo) => c.as_ref().iter_from(lo),
                    None => c.as_ref().iter(),
                }),
            },
            _ => Iter {
                keys,
                containers,
                high: 0,
                cur: None,
            },
        }
    }
}

impl Iterator for Iter<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        loop {
            let it = self.cur.as_mut()?;
            if let Some(v) = it.next() {
                return Some(self.high | v as u32);
            }
            match (self.keys.first(), self.containers.first()) {
                (Some(&k), Some(c)) => {
                    self.high = (k as u32) << 16;
                    self.cur = Some(c.as_ref().iter());
                    self.keys = &self.keys[1..];
                    self.containers = &self.containers[1..];
                }
                _ => {
                    self.cur = None;
                    return None;
                }
            }
        }
    }

    fn fold<B, F>(self, init: B, mut f: F) -> B
    where
        F: FnMut(B, u32) -> B,
    {
        let mut acc = init;
        if let Some(it) = self.cur {
            let high = self.high;
            acc = it.fold(acc, |a, v| f(a, high | v as u32));
        }
        for (&k, c) in self.keys.iter().zip(self.containers) {
            let high = (k as u32) << 16;
            acc = c.as_ref().iter().fold(acc, |a, v| f(a, high | v as u32));
        }
        acc
    }
}
