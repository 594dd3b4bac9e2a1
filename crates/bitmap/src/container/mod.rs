//! Containers: the 2^16-value blocks of a Roaring bitmap.
//!
//! [`ContainerBuf`] owns one container's serialized bytes (header + payload,
//! `docs/format.md`) and is operated on in place. [`ContainerRef`] is a typed,
//! already-validated borrow of a container's payload, produced by a
//! `ContainerBuf` or a checked [`ContainerView`](crate::ContainerView); every
//! read and set operation takes `ContainerRef`s. This module owns the kind
//! invariant: [`ContainerBuf::normalize`] restores it after every change.

pub mod array;
pub mod bitset;
pub mod kind_policy;
pub mod run;

use crate::codec::{pack_header, Kind, ARRAY_MAX, BITSET_WORDS, HEADER_LEN};
use crate::iter::ContainerIter;
use core::fmt;

/// A typed borrow of a valid container payload. Cheap to copy.
#[derive(Clone, Copy)]
pub enum ContainerRef<'a> {
    /// Sorted distinct values (at most 4,096 in a normalized container).
    Array(&'a [u16]),
    /// Sorted, non-touching runs and their total cardinality.
    Run { runs: &'a [[u16; 2]], card: u32 },
    /// The 1,024 words and their cached cardinality.
    Bitset {
        words: &'a [u64; BITSET_WORDS],
        card: u32,
    },
}

impl fmt::Debug for ContainerRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.kind().name(), self.cardinality())
    }
}

impl<'a> ContainerRef<'a> {
    /// The container kind.
    #[inline]
    pub fn kind(&self) -> Kind {
        match self {
            ContainerRef::Array(_) => Kind::Array,
            ContainerRef::Run { .. } => Kind::Run,
            ContainerRef::Bitset { .. } => Kind::Bitset,
        }
    }

    /// Number of values (0..=65,536).
    #[inline]
    pub fn cardinality(&self) -> u32 {
        match *self {
            ContainerRef::Array(a) => a.len() as u32,
            ContainerRef::Run { card, .. } | ContainerRef::Bitset { card, .. } => card,
        }
    }

    /// True when the container holds no value.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.cardinality() == 0
    }

    /// True when `v` is present.
    #[inline]
    pub fn contains(&self, v: u16) -> bool {
        match *self {
            ContainerRef::Array(a) => array::contains(a, v),
            ContainerRef::Run { runs, .. } => run::contains(runs, v),
            ContainerRef::Bitset { words, .. } => bitset::contains(words, v),
        }
    }

    /// Smallest value; `None` when empty.
    pub fn min(&self) -> Option<u16> {
        match *self {
            ContainerRef::Array(a) => a.first().copied(),
            ContainerRef::Run { runs, .. } => runs.first().map(|r| r[0]),
            ContainerRef::Bitset { words, .. } => bitset::min(words),
        }
    }

    /// Largest value; `None` when empty.
    pub fn max(&self) -> Option<u16> {
        match *self {
            ContainerRef::Array(a) => a.last().copied(),
            ContainerRef::Run { runs, .. } => runs.last().map(|r| run::end(*r)),
            ContainerRef::Bitset { words, .. } => bitset::max(words),
        }
    }

    /// Number of values ≤ `v`.
    pub fn rank(&self, v: u16) -> u32 {
        match *self {
            ContainerRef::Array(a) => array::rank(a, v),
            ContainerRef::Run { runs, .. } => run::rank(runs, v),
            ContainerRef::Bitset { words, .. } => bitset::rank(words, v),
        }
    }

    /// The `i`-th smallest value (0-based); `None` when `i >= cardinality`.
    pub fn select(&self, i: u32) -> Option<u16> {
        match *self {
            ContainerRef::Array(a) => a.get(i as usize).copied(),
            ContainerRef::Run { runs, .. } => run::select(runs, i),
            ContainerRef::Bitset { words, .. } => bitset::select(words, i),
        }
    }

    /// Number of values in `lo..=hi` (0 when `lo > hi`).
    pub fn count_range(&self, lo: u16, hi: u16) -> u32 {
        if lo > hi {
            return 0;
        }
        match *self {
            ContainerRef::Array(a) => array::count_range(a, lo, hi),
            ContainerRef::Run { runs, .. } => run::count_range(runs, lo, hi),
            ContainerRef::Bitset { words, .. } => bitset::count_range(words, lo, hi),
        }
    }

    /// Ascending iterator over all values.
    pub fn iter(&self) -> ContainerIter<'a> {
        ContainerIter::new(*self)
    }

    /// Ascending iterator over the values ≥ `lo` (cursor resumption).
    pub fn iter_from(&self, lo: u16) -> ContainerIter<'a> {
        ContainerIter::from(*self, lo)
    }

    /// Number of maximal runs of consecutive values.
    pub fn run_count(&self) -> usize {
        match *self {
            ContainerRef::Array(a) => array::count_runs(a),
            ContainerRef::Run { runs, .. } => runs.len(),
            ContainerRef::Bitset { words, .. } => bitset::count_runs(words),
        }
    }

    /// Bytes as TR.STAT counts them: array 2×n, bitset 8,192, run 2 + 4×runs.
    pub fn stat_bytes(&self) -> usize {
        match *self {
            ContainerRef::Array(a) => kind_policy::array_bytes(a.len()),
            ContainerRef::Run { runs, .. } => kind_policy::run_bytes(runs.len()),
            ContainerRef::Bitset { .. } => kind_policy::bitset_bytes(),
        }
    }

    /// Length of the serialized container (header + payload).
    pub fn byte_len(&self) -> usize {
        HEADER_LEN + self.stat_bytes()
    }

    /// Appends the serialized container (header + payload) to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.byte_len());
        out.extend_from_slice(&pack_header(self.kind(), self.cardinality()).to_le_bytes());
        match *self {
            ContainerRef::Array(a) => out.extend_from_slice(bytemuck::cast_slice(a)),
            ContainerRef::Run { runs, .. } => {
                out.extend_from_slice(&(runs.len() as u16).to_le_bytes());
                out.extend_from_slice(bytemuck::cast_slice(runs));
            }
            ContainerRef::Bitset { words, .. } => {
                out.extend_from_slice(bytemuck::cast_slice(&words[..]))
            }
        }
    }

    /// An owned copy with the same kind and content.
    pub fn to_buf(&self) -> ContainerBuf {
        match *self {
            ContainerRef::Array(a) => ContainerBuf::from_array_unchecked(a),
            ContainerRef::Run { runs, card } => ContainerBuf::from_runs_unchecked(runs, card),
            ContainerRef::Bitset { words, card } => ContainerBuf::from_words_unchecked(words, card),
        }
    }

    /// An owned copy in plain form: array when ≤ 4,096 values, else bitset.
    pub fn to_plain(&self) -> ContainerBuf {
        let card = self.cardinality() as usize;
        match *self {
            ContainerRef::Array(a) if card <= ARRAY_MAX => ContainerBuf::from_array_unchecked(a),
            ContainerRef::Bitset { words, card } if card as usize > ARRAY_MAX => {
                ContainerBuf::from_words_unchecked(words, card)
            }
            _ if card <= ARRAY_MAX => {
                let mut out = ContainerBuf::array_with_capacity(card);
                let n = self.copy_to_array(out.array_spare_mut());
                out.set_array_len(n);
                out
            }
            _ => {
                let mut out = ContainerBuf::bitset_zeroed();
                self.set_bits_in(out.bitset_words_mut());
                out.set_bitset_card(card as u32);
                out
            }
        }
    }

    /// Writes all values ascending into `out` (at least the cardinality long); returns the count.
    pub(crate) fn copy_to_array(&self, out: &mut [u16]) -> usize {
        match *self {
            ContainerRef::Array(a) => {
                out[..a.len()].copy_from_slice(a);
                a.len()
            }
            ContainerRef::Run { runs, .. } => run::to_array(runs, out),
            // The vector kernel wins from about 1,000 values; below, most
            // words are zero and the scalar loop is as fast.
            ContainerRef::Bitset { words, card } if card >= 1024 => {
                (crate::kernels::get().bitset_to_array)(words, out)
            }
            ContainerRef::Bitset { words, .. } => bitset::to_array(words, out),
        }
    }

    /// ORs all values into `words`.
    pub(crate) fn set_bits_in(&self, words: &mut [u64; BITSET_WORDS]) {
        match *self {
            ContainerRef::Array(a) => (crate::kernels::get().set_list)(words, a),
            ContainerRef::Run { runs, .. } => run::set_bits(runs, words),
            ContainerRef::Bitset { words: w, .. } => {
                (crate::kernels::get().or_words_in_place)(words, w)
            }
        }
    }

    /// Appends the runs of the content to `out`.
    pub(crate) fn runs_into(&self, out: &mut Vec<[u16; 2]>) {
        match *self {
            ContainerRef::Array(a) => array::to_runs(a, out),
            ContainerRef::Run { runs, .. } => out.extend_from_slice(runs),
            ContainerRef::Bitset { words, .. } => bitset::to_runs(words, out),
        }
    }
}

/// One container's serialized bytes, owned and edited in place.
///
/// Storage is a `Vec<u64>` whose first word carries 4 bytes of padding and
/// then the 4-byte header, so the payload starts 8-byte aligned and is read
/// as typed `u16`/`u64` slices without copying. [`ContainerBuf::as_bytes`]
/// is exactly the bytes a store writes. Equality is equality of those bytes,
/// which for normalized containers is equality of content.
///
/// The header is also kept beside the storage pointer (`head`), so reading
/// the kind and cardinality (every probe and every set-operation dispatch)
/// touches the `ContainerBuf` itself, not its heap bytes: a membership probe
/// then makes one dependent load fewer before the payload. Every write of
/// the header goes through `ContainerBuf::set_head` or
/// `ContainerBuf::from_words` (private), which keep the two equal.
#[derive(Clone)]
pub struct ContainerBuf {
    words: Vec<u64>,
    /// Copy of the header in `words[0] >> 32`.
    head: u32,
}

/// Index of the first payload u16 in the storage viewed as `[u16]`.
const PAYLOAD_U16: usize = 4;

/// Per-thread scratch for building results: two full arrays' worth of u16
/// values plus slack for whole-vector stores.
const SCRATCH_WORDS: usize = (2 * ARRAY_MAX).div_ceil(4) + 4;
thread_local! {
    static SCRATCH: core::cell::RefCell<Vec<u64>> = core::cell::RefCell::new(vec![0u64; SCRATCH_WORDS]);
}

#[inline]
fn header_word(kind: Kind, card: u32) -> u64 {
    (pack_header(kind, card) as u64) << 32
}

impl Default for ContainerBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for ContainerBuf {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl Eq for ContainerBuf {}

impl fmt::Debug for ContainerBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.as_ref(), f)
    }
}

impl ContainerBuf {
    /// An empty array container.
    pub fn new() -> Self {
        Self::from_words(vec![header_word(Kind::Array, 0)])
    }

    /// Wraps storage whose first word already carries the header.
    #[inline]
    fn from_words(words: Vec<u64>) -> Self {
        let head = (words[0] >> 32) as u32;
        ContainerBuf { words, head }
    }

    /// Writes the header in both places.
    #[inline]
    fn set_head(&mut self, kind: Kind, card: u32) {
        let w = header_word(kind, card);
        self.words[0] = w;
        self.head = (w >> 32) as u32;
    }

    /// A container of sorted distinct values, array or bitset by count.
    ///
    /// # Panics
    /// Debug builds assert the input is strictly ascending.
    pub fn from_sorted(values: &[u16]) -> Self {
        debug_assert!(values.windows(2).all(|w| w[0] < w[1]));
        if values.len() <= ARRAY_MAX {
            Self::from_array_unchecked(values)
        } else {
            let mut out = Self::bitset_zeroed();
            array::set_bits(values, out.bitset_words_mut());
            out.set_bitset_card(values.len() as u32);
            out
        }
    }

    /// A container holding `lo..=hi`, in the form range writes choose.
    pub fn from_range(lo: u16, hi: u16) -> Self {
        let mut c = Self::new();
        c.add_range(lo, hi);
        c
    }

    /// The kind.
    #[inline]
    pub fn kind(&self) -> Kind {
        match (self.header() & 0xF) as u8 {
            0 => Kind::Array,
            1 => Kind::Bitset,
            _ => Kind::Run,
        }
    }

    /// Number of values.
    #[inline]
    pub fn cardinality(&self) -> u32 {
        self.header() >> 8
    }

    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.cardinality() == 0
    }

    #[inline]
    fn header(&self) -> u32 {
        debug_assert_eq!(self.head, (self.words[0] >> 32) as u32);
        self.head
    }

    #[inline]
    fn u16s(&self) -> &[u16] {
        bytemuck::cast_slice(&self.words)
    }

    #[inline]
    fn u16s_mut(&mut self) -> &mut [u16] {
        bytemuck::cast_slice_mut(&mut self.words)
    }

    /// True when `v` is present; reads the header once and goes straight to
    /// the payload (the probe path of `Bitmap::contains`). Always inlined:
    /// in a probe loop the call itself was a tenth of the probe's instructions.
    #[inline(always)]
    pub fn contains(&self, v: u16) -> bool {
        let h = self.header();
        match h & 0xF {
            0 => {
                let card = (h >> 8) as usize;
                let s = self.u16s();
                debug_assert!(PAYLOAD_U16 + card <= s.len());
                // SAFETY: the storage always holds the payload its header
                // describes: constructors size it so, and the only header
                // writes (`set_array_len`, `set_bitset_card`) assert it.
                array::contains(
                    unsafe { s.get_unchecked(PAYLOAD_U16..PAYLOAD_U16 + card) },
                    v,
                )
            }
            1 => {
                debug_assert!(self.words.len() > BITSET_WORDS);
                // SAFETY: as above; a bitset's storage is 1 + 1,024 words.
                let w = unsafe { *self.words.get_unchecked(1 + (v >> 6) as usize) };
                (w >> (v & 63)) & 1 == 1
            }
            _ => self.as_ref().contains(v),
        }
    }

    /// The typed borrow of this container.
    #[inline]
    pub fn as_ref(&self) -> ContainerRef<'_> {
        let card = self.cardinality();
        match self.kind() {
            Kind::Array => {
                ContainerRef::Array(&self.u16s()[PAYLOAD_U16..PAYLOAD_U16 + card as usize])
            }
            Kind::Bitset => ContainerRef::Bitset {
                words: self.words[1..1 + BITSET_WORDS]
                    .try_into()
                    .expect("bitset storage holds 1,024 words"),
                card,
            },
            Kind::Run => {
                let s = self.u16s();
                let n = s[PAYLOAD_U16] as usize;
                ContainerRef::Run {
                    runs: bytemuck::cast_slice(&s[PAYLOAD_U16 + 1..PAYLOAD_U16 + 1 + 2 * n]),
                    card,
                }
            }
        }
    }

    /// The serialized bytes (header + payload), as stored.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        let len = self.as_ref().byte_len();
        &bytemuck::cast_slice::<u64, u8>(&self.words)[4..4 + len]
    }

    /// Bytes as TR.STAT counts them.
    pub fn stat_bytes(&self) -> usize {
        self.as_ref().stat_bytes()
    }

    /// Decodes and validates `bytes` into an owned container (any alignment),
    /// byte for byte: format-valid bytes that break the kind rules stay as
    /// they are until [`Self::normalize`].
    ///
    /// # Errors
    /// Any [`FormatError`](crate::FormatError) of [`ContainerView::parse`](crate::ContainerView::parse).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, crate::FormatError> {
        Ok(crate::ContainerView::parse(bytes)?.to_buf())
    }

    /// Restores the kind invariant (see `kind_policy`): array ↔ bitset at 4,096
    /// values; a run container stays only while strictly smaller; empty → empty array.
    pub fn normalize(&mut self) {
        let card = self.cardinality() as usize;
        match self.kind() {
            Kind::Array if card > ARRAY_MAX => *self = self.as_ref().to_plain(),
            Kind::Bitset if card <= ARRAY_MAX => *self = self.as_ref().to_plain(),
            Kind::Run => {
                let runs = self.u16s()[PAYLOAD_U16] as usize;
                if card == 0 {
                    *self = Self::new();
                } else if !kind_policy::run_is_smaller(runs, card) {
                    *self = self.as_ref().to_plain();
                }
            }
            _ => {}
        }
        self.shrink_if_slack();
    }

    /// Converts to a run container where that is strictly smaller (TR.OPTIMIZE);
    /// otherwise to the plain form. Returns true when the kind changed.
    pub fn optimize(&mut self) -> bool {
        let before = self.kind();
        let r = self.as_ref();
        let runs = r.run_count();
        if kind_policy::run_is_smaller(runs, r.cardinality() as usize) {
            if before != Kind::Run {
                let mut v = Vec::with_capacity(runs);
                r.runs_into(&mut v);
                *self = Self::from_runs_unchecked(&v, r.cardinality());
            }
        } else if before == Kind::Run {
            *self = r.to_plain();
        }
        self.words.shrink_to_fit();
        self.kind() != before
    }

    /// Checks every invariant: format validity (as a reader would) plus the kind policy.
    ///
    /// # Errors
    /// A description of the first broken invariant.
    pub fn validate(&self) -> Result<(), String> {
        let view = crate::ContainerView::parse(self.as_bytes()).map_err(|e| e.to_string())?;
        let r = view.as_ref();
        if let ContainerRef::Run { runs, card } = r {
            if !kind_policy::run_is_smaller(runs.len(), card as usize) {
                return Err(format!(
                    "run container of {} runs / {card} values is not smaller than its plain form",
                    runs.len()
                ));
            }
        }
        Ok(())
    }

    // ----- construction helpers for kernels -------------------------------------------

    /// An empty array container with room for `cap` values.
    pub(crate) fn array_with_capacity(cap: usize) -> Self {
        let mut words = vec![0u64; 1 + cap.div_ceil(4)];
        words[0] = header_word(Kind::Array, 0);
        Self::from_words(words)
    }

    /// The whole array capacity, for kernels to write into; finish with [`Self::set_array_len`].
    pub(crate) fn array_spare_mut(&mut self) -> &mut [u16] {
        let cap = (self.words.len() - 1) * 4;
        &mut self.u16s_mut()[PAYLOAD_U16..PAYLOAD_U16 + cap]
    }

    /// Marks the first `n` array slots as the content (an array header with cardinality `n`).
    ///
    /// # Panics
    /// When `n` exceeds the capacity (`contains` relies on the header
    /// never describing more payload than the storage holds).
    pub(crate) fn set_array_len(&mut self, n: usize) {
        assert!(
            n <= (self.words.len() - 1) * 4,
            "array length beyond capacity"
        );
        self.set_head(Kind::Array, n as u32);
    }

    /// A normalized plain container (array or bitset by count) of the
    /// ascending values `f` writes into the slice it gets (at least `cap`
    /// plus 8 slots; it returns how many it wrote). The values go to a
    /// per-thread scratch buffer first, so the result is allocated once, in
    /// its final kind (a merge of two large arrays whose result passes 4,096
    /// values becomes a bitset without an intermediate array).
    pub(crate) fn build_sorted(cap: usize, f: impl FnOnce(&mut [u16]) -> usize) -> Self {
        let mut f = Some(f);
        if cap + 8 <= SCRATCH_WORDS * 4 {
            let built = SCRATCH.with(|s| {
                let mut s = s.try_borrow_mut().ok()?;
                let g = f.take()?;
                let s = &mut bytemuck::cast_slice_mut::<u64, u16>(&mut s[..])[..cap + 8];
                let n = g(s);
                Some(Self::from_sorted(&s[..n]))
            });
            if let Some(c) = built {
                return c;
            }
        }
        let g = f.take().expect("builder not yet used");
        let mut s = vec![0u16; cap + 8];
        let n = g(&mut s);
        Self::from_sorted(&s[..n])
    }

    /// Builds an array container: `f` writes up to `cap` ascending values
    /// into the slice it gets and returns how many. `f` writes into a stack
    /// buffer (small `cap`) or a per-thread scratch buffer, and only the
    /// values written are copied into the new container, so a small result
    /// of a large-capacity merge costs a small allocation and no zeroing.
    /// Empty results are [`ContainerBuf::new`].
    pub(crate) fn build_array(cap: usize, f: impl FnOnce(&mut [u16]) -> usize) -> Self {
        Self::try_build_array(cap, f).unwrap_or_default()
    }

    /// [`Self::build_array`], but `None` for an empty result, which then
    /// allocates nothing (pairwise merges drop empty results).
    pub(crate) fn try_build_array(cap: usize, f: impl FnOnce(&mut [u16]) -> usize) -> Option<Self> {
        const STACK: usize = 64;
        /// The first `n` values of `s` as an array container.
        fn copy_out(s: &[u64], n: usize) -> Option<ContainerBuf> {
            if n == 0 {
                return None;
            }
            let full = n / 4;
            let mut words = Vec::with_capacity(1 + n.div_ceil(4));
            words.push(header_word(Kind::Array, n as u32));
            words.extend_from_slice(&s[..full]);
            if !n.is_multiple_of(4) {
                words.push(s[full] & ((1u64 << (16 * (n % 4))) - 1));
            }
            Some(ContainerBuf::from_words(words))
        }
        // Up to 8 lanes of slack past `cap` let vector kernels store whole vectors.
        if cap <= STACK {
            let mut s = [0u64; (STACK + 8) / 4];
            let n = f(&mut bytemuck::cast_slice_mut::<u64, u16>(&mut s[..])[..cap + 8]);
            return copy_out(&s, n);
        }
        let mut f = Some(f);
        if cap <= SCRATCH_WORDS * 4 {
            let built = SCRATCH.with(|s| {
                let mut s = s.try_borrow_mut().ok()?;
                let g = f.take()?;
                let room = (cap + 8).min(SCRATCH_WORDS * 4);
                let n = g(&mut bytemuck::cast_slice_mut::<u64, u16>(&mut s[..])[..room]);
                Some(copy_out(&s, n))
            });
            if let Some(c) = built {
                return c;
            }
        }
        let g = f.take().expect("builder not yet used");
        let mut out = Self::array_with_capacity(cap);
        let n = g(out.array_spare_mut());
        out.set_array_len(n);
        (n > 0).then_some(out)
    }

    /// Grows the array capacity to at least `cap` values.
    pub(crate) fn reserve_array(&mut self, cap: usize) {
        let need = 1 + cap.div_ceil(4);
        if self.words.len() < need {
            // Within the allocation: take only what is needed (no realloc).
            let grow = if need <= self.words.capacity() {
                need
            } else {
                need.max(self.words.len() + self.words.len() / 2)
            };
            self.words
                .resize(grow.min(1 + ARRAY_MAX.div_ceil(4) + 1), 0);
            if self.words.len() < need {
                self.words.resize(need, 0);
            }
        }
    }

    /// An owned array container of `a` (ascending, distinct, ≤ 4,096
    /// values), with room for one more value: copies are mostly made to
    /// insert one. Written straight from `a`, without zeroing first.
    pub(crate) fn from_array_unchecked(a: &[u16]) -> Self {
        let mut words = Vec::with_capacity(1 + (a.len() + 1).div_ceil(4));
        words.push(header_word(Kind::Array, a.len() as u32));
        let chunks = a.chunks_exact(4);
        let tail = chunks.remainder();
        words.extend(chunks.map(|c| bytemuck::cast::<[u16; 4], u64>([c[0], c[1], c[2], c[3]])));
        if !tail.is_empty() {
            let mut last = [0u16; 4];
            last[..tail.len()].copy_from_slice(tail);
            words.push(bytemuck::cast(last));
        }
        Self::from_words(words)
    }

    /// An all-zero bitset container (cardinality 0, not normalized until finished).
    pub(crate) fn bitset_zeroed() -> Self {
        let mut words = vec![0u64; 1 + BITSET_WORDS];
        words[0] = header_word(Kind::Bitset, 0);
        Self::from_words(words)
    }

    pub(crate) fn from_words_unchecked(w: &[u64; BITSET_WORDS], card: u32) -> Self {
        let mut words = Vec::with_capacity(1 + BITSET_WORDS);
        words.push(header_word(Kind::Bitset, card));
        words.extend_from_slice(w);
        Self::from_words(words)
    }

    /// The bitset words; only for bitset containers.
    pub(crate) fn bitset_words_mut(&mut self) -> &mut [u64; BITSET_WORDS] {
        debug_assert_eq!(self.kind(), Kind::Bitset);
        (&mut self.words[1..1 + BITSET_WORDS])
            .try_into()
            .expect("bitset storage holds 1,024 words")
    }

    ///
    /// # Panics
    /// When the storage is not a bitset's (see [`Self::set_array_len`]).
    pub(crate) fn set_bitset_card(&mut self, card: u32) {
        assert!(
            self.words.len() > BITSET_WORDS,
            "bitset header on short storage"
        );
        self.set_head(Kind::Bitset, card);
    }

    /// A run container over valid runs whose cardinality is `card`.
    pub(crate) fn from_runs_unchecked(runs: &[[u16; 2]], card: u32) -> Self {
        let mut words = vec![0u64; 1 + (2 + 4 * runs.len()).div_ceil(8)];
        words[0] = header_word(Kind::Run, card);
        let mut out = Self::from_words(words);
        let s = out.u16s_mut();
        s[PAYLOAD_U16] = runs.len() as u16;
        s[PAYLOAD_U16 + 1..PAYLOAD_U16 + 1 + 2 * runs.len()]
            .copy_from_slice(bytemuck::cast_slice(runs));
        out
    }

    /// A normalized container from a run list (any kind the policy picks for a range write).
    pub(crate) fn from_run_list_optimized(runs: &[[u16; 2]]) -> Self {
        let card = run::cardinality(runs);
        if card == 0 {
            return Self::new();
        }
        let mut c = Self::from_runs_unchecked(runs, card);
        c.normalize();
        c
    }

    /// Array payload including capacity, for in-place edits.
    pub(crate) fn array_storage_mut(&mut self) -> &mut [u16] {
        self.array_spare_mut()
    }

    /// Releases capacity far beyond the content.
    fn shrink_if_slack(&mut self) {
        let need = 1 + self.as_ref().stat_bytes().div_ceil(8);
        if self.words.len() > 2 * need + 4 {
            self.words.truncate(need);
            self.words.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod contains_tests {
    use super::*;

    #[test]
    fn buf_contains_matches_ref_for_every_kind() {
        let array = ContainerBuf::from_sorted(&(0..3000u16).map(|i| i * 7 + 1).collect::<Vec<_>>());
        let bitset =
            ContainerBuf::from_sorted(&(0..20000u32).map(|i| (i * 3) as u16).collect::<Vec<_>>());
        let run = ContainerBuf::from_range(100, 60000);
        let empty = ContainerBuf::new();
        assert_eq!(array.kind(), Kind::Array);
        assert_eq!(bitset.kind(), Kind::Bitset);
        assert_eq!(run.kind(), Kind::Run);
        for c in [&array, &bitset, &run, &empty] {
            for v in 0..=u16::MAX {
                assert_eq!(
                    c.contains(v),
                    c.as_ref().contains(v),
                    "{:?} {v}",
                    c.as_ref()
                );
            }
        }
    }
}
