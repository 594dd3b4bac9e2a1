//! Output sinks for merge kernels: the same algorithm materializes, counts,
//! or stops at the first hit depending on the sink it is given.

/// Receives the values a merge kernel produces, ascending.
pub trait Sink {
    /// Takes one output value.
    fn push(&mut self, v: u16);
    /// True when the kernel may stop (early exit).
    #[inline]
    fn done(&self) -> bool {
        false
    }
}

/// Writes values into a slice that is long enough for every output.
pub struct Materialize<'a> {
    /// Destination.
    pub out: &'a mut [u16],
    /// Values written so far.
    pub len: usize,
}

impl Sink for Materialize<'_> {
    #[inline]
    fn push(&mut self, v: u16) {
        self.out[self.len] = v;
        self.len += 1;
    }
}

/// Counts values.
#[derive(Default)]
pub struct Count(pub usize);

impl Sink for Count {
    #[inline]
    fn push(&mut self, _: u16) {
        self.0 += 1;
    }
}

/// Records whether any value was produced and asks the kernel to stop at the first one.
#[derive(Default)]
pub struct AnyHit(pub bool);

impl Sink for AnyHit {
    #[inline]
    fn push(&mut self, _: u16) {
        self.0 = true;
    }
    #[inline]
    fn done(&self) -> bool {
        self.0
    }
}
