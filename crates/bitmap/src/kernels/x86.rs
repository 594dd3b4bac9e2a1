//! x86-64 vector kernels: AVX2 (with POPCNT, BMI2) and AVX-512 (F, BW, VPOPCNTDQ; VBMI2 where present).
//!
//! The only module with `unsafe`. Each kernel is a `#[target_feature]`
//! function; the tables below wrap them in safe functions, and a table is
//! handed out by [`detect`] only after the CPU reported every feature the
//! table's kernels are compiled for, which is what makes those calls sound.
//! All loads and stores are unaligned (`loadu`/`storeu`) through pointers
//! derived from slices whose lengths are checked or fixed by type.

use super::{scalar, Kernels};
use crate::codec::BITSET_WORDS;
use core::arch::x86_64::*;

type Words = [u64; BITSET_WORDS];

/// The widest table whose features this CPU has, if any.
pub fn detect() -> Option<&'static Kernels> {
    let avx2 = is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("popcnt")
        && is_x86_feature_detected!("bmi2");
    if avx2
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vpopcntdq")
    {
        if is_x86_feature_detected!("avx512vbmi2") {
            Some(&AVX512_VBMI2)
        } else {
            Some(&AVX512)
        }
    } else if avx2 {
        Some(&AVX2)
    } else {
        None
    }
}

// ----- bitset kernels, AVX2 ----------------------------------------------------------

const AND: u8 = 0;
const OR: u8 = 1;
const XOR: u8 = 2;
const ANDNOT: u8 = 3;

/// Per-64-bit-lane popcount of `v` (nibble lookup, then byte sums).
#[inline]
#[target_feature(enable = "avx2")]
fn popcnt256(v: __m256i) -> __m256i {
    let lookup = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let low = _mm256_set1_epi8(0x0f);
    let lo = _mm256_and_si256(v, low);
    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
    let cnt = _mm256_add_epi8(
        _mm256_shuffle_epi8(lookup, lo),
        _mm256_shuffle_epi8(lookup, hi),
    );
    _mm256_sad_epu8(cnt, _mm256_setzero_si256())
}

#[inline]
#[target_feature(enable = "avx2")]
fn hsum256(v: __m256i) -> u64 {
    let mut lanes = [0u64; 4];
    // SAFETY: `lanes` is 32 writable bytes.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), v) };
    lanes.iter().sum()
}

#[inline]
#[target_feature(enable = "avx2")]
fn op256<const OP: u8>(x: __m256i, y: __m256i) -> __m256i {
    match OP {
        AND => _mm256_and_si256(x, y),
        OR => _mm256_or_si256(x, y),
        XOR => _mm256_xor_si256(x, y),
        _ => _mm256_andnot_si256(y, x),
    }
}

#[target_feature(enable = "avx2,popcnt")]
fn binop_avx2<const OP: u8>(a: &Words, b: &Words, out: &mut Words) -> u32 {
    let mut total = _mm256_setzero_si256();
    for i in (0..BITSET_WORDS).step_by(4) {
        // SAFETY: i + 4 <= 1024 for all three arrays of exactly 1024 words.
        unsafe {
            let x = _mm256_loadu_si256(a.as_ptr().add(i).cast());
            let y = _mm256_loadu_si256(b.as_ptr().add(i).cast());
            let r = op256::<OP>(x, y);
            _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), r);
            total = _mm256_add_epi64(total, popcnt256(r));
        }
    }
    hsum256(total) as u32
}

#[target_feature(enable = "avx2,popcnt")]
fn binop_in_place_avx2<const OP: u8>(a: &mut Words, b: &Words) -> u32 {
    let mut total = _mm256_setzero_si256();
    for i in (0..BITSET_WORDS).step_by(4) {
        // SAFETY: i + 4 <= 1024 for both arrays of exactly 1024 words.
        unsafe {
            let x = _mm256_loadu_si256(a.as_ptr().add(i).cast());
            let y = _mm256_loadu_si256(b.as_ptr().add(i).cast());
            let r = op256::<OP>(x, y);
            _mm256_storeu_si256(a.as_mut_ptr().add(i).cast(), r);
            total = _mm256_add_epi64(total, popcnt256(r));
        }
    }
    hsum256(total) as u32
}

#[target_feature(enable = "avx2,popcnt")]
fn and_len_avx2(a: &Words, b: &Words) -> u32 {
    let mut total = _mm256_setzero_si256();
    for i in (0..BITSET_WORDS).step_by(4) {
        // SAFETY: i + 4 <= 1024 for both arrays of exactly 1024 words.
        unsafe {
            let x = _mm256_loadu_si256(a.as_ptr().add(i).cast());
            let y = _mm256_loadu_si256(b.as_ptr().add(i).cast());
            total = _mm256_add_epi64(total, popcnt256(_mm256_and_si256(x, y)));
        }
    }
    hsum256(total) as u32
}

#[target_feature(enable = "avx2")]
fn intersects_avx2(a: &Words, b: &Words) -> bool {
    for i in (0..BITSET_WORDS).step_by(16) {
        let mut acc = _mm256_setzero_si256();
        for k in (0..16).step_by(4) {
            // SAFETY: i + k + 4 <= 1024 for both arrays of exactly 1024 words.
            unsafe {
                let x = _mm256_loadu_si256(a.as_ptr().add(i + k).cast());
                let y = _mm256_loadu_si256(b.as_ptr().add(i + k).cast());
                acc = _mm256_or_si256(acc, _mm256_and_si256(x, y));
            }
        }
        if _mm256_testz_si256(acc, acc) == 0 {
            return true;
        }
    }
    false
}

#[target_feature(enable = "avx2")]
fn or_words_avx2(a: &mut [u64], b: &[u64]) {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 4 <= n {
        // SAFETY: i + 4 <= n <= both lengths.
        unsafe {
            let x = _mm256_loadu_si256(a.as_ptr().add(i).cast());
            let y = _mm256_loadu_si256(b.as_ptr().add(i).cast());
            _mm256_storeu_si256(a.as_mut_ptr().add(i).cast(), _mm256_or_si256(x, y));
        }
        i += 4;
    }
    for k in i..n {
        a[k] |= b[k];
    }
}

#[target_feature(enable = "avx2,popcnt")]
fn popcount_avx2(w: &[u64]) -> u64 {
    let mut total = _mm256_setzero_si256();
    let mut i = 0;
    while i + 4 <= w.len() {
        // SAFETY: i + 4 <= len.
        unsafe {
            total = _mm256_add_epi64(
                total,
                popcnt256(_mm256_loadu_si256(w.as_ptr().add(i).cast())),
            );
        }
        i += 4;
    }
    hsum256(total) + w[i..].iter().map(|x| x.count_ones() as u64).sum::<u64>()
}

/// Bit scatter with BMI2 (`shrx`/`shlx`: one micro-op per variable shift).
#[target_feature(enable = "bmi2")]
fn set_list_bmi2(words: &mut Words, list: &[u16]) {
    let mut chunks = list.chunks_exact(4);
    for c in &mut chunks {
        let (a, b, d, e) = (c[0], c[1], c[2], c[3]);
        words[(a >> 6) as usize] |= 1u64 << (a & 63);
        words[(b >> 6) as usize] |= 1u64 << (b & 63);
        words[(d >> 6) as usize] |= 1u64 << (d & 63);
        words[(e >> 6) as usize] |= 1u64 << (e & 63);
    }
    for &v in chunks.remainder() {
        words[(v >> 6) as usize] |= 1u64 << (v & 63);
    }
}

// ----- bitset kernels, AVX-512 ---------------------------------------------------------

/// Byte `i` holds `i`: the bit positions of one 64-bit word.
static BYTE_LANES: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = i as u8;
        i += 1;
    }
    t
};

/// Bitset to sorted array, one 64-bit word per step: `vpcompressb` packs the
/// positions of the word's set bits into the low bytes, they are widened to
/// 16-bit lanes and offset by the word's base, and a masked store writes
/// exactly the word's count of lanes (two stores for words of over 32 bits),
/// so nothing past the count is written.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2,popcnt")]
fn bitset_to_array_vbmi2(words: &Words, out: &mut [u16]) -> usize {
    // SAFETY: BYTE_LANES is 64 bytes, one unaligned 512-bit load.
    let idx = unsafe { _mm512_loadu_si512(BYTE_LANES.as_ptr().cast()) };
    let step = _mm512_set1_epi16(64);
    let mut base = _mm512_setzero_si512();
    let mut n = 0usize;
    for &w in words.iter() {
        if w != 0 {
            let cnt = w.count_ones() as usize;
            assert!(cnt <= out.len() - n, "bitset_to_array: output too short");
            let pos = _mm512_maskz_compress_epi8(w, idx);
            let lo = _mm512_add_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(pos)), base);
            let keep_lo = ((1u64 << cnt.min(32)) - 1) as u32;
            // SAFETY: masked stores touch (and can fault on) only the selected
            // lanes: the `min(cnt, 32)` lanes from `n`, within `out` as checked.
            unsafe { _mm512_mask_storeu_epi16(out.as_mut_ptr().add(n).cast(), keep_lo, lo) };
            if cnt > 32 {
                let hi = _mm512_add_epi16(
                    _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64::<1>(pos)),
                    base,
                );
                let keep_hi = ((1u64 << (cnt - 32)) - 1) as u32;
                // SAFETY: the `cnt - 32` lanes from `n + 32`, within `out` as checked.
                unsafe {
                    _mm512_mask_storeu_epi16(out.as_mut_ptr().add(n + 32).cast(), keep_hi, hi)
                };
            }
            n += cnt;
        }
        base = _mm512_add_epi16(base, step);
    }
    n
}

#[inline]
#[target_feature(enable = "avx512f")]
fn op512<const OP: u8>(x: __m512i, y: __m512i) -> __m512i {
    match OP {
        AND => _mm512_and_si512(x, y),
        OR => _mm512_or_si512(x, y),
        XOR => _mm512_xor_si512(x, y),
        _ => _mm512_andnot_si512(y, x),
    }
}

#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn binop_avx512<const OP: u8>(a: &Words, b: &Words, out: &mut Words) -> u32 {
    let mut total = _mm512_setzero_si512();
    for i in (0..BITSET_WORDS).step_by(8) {
        // SAFETY: i + 8 <= 1024 for all three arrays of exactly 1024 words.
        unsafe {
            let x = _mm512_loadu_si512(a.as_ptr().add(i).cast());
            let y = _mm512_loadu_si512(b.as_ptr().add(i).cast());
            let r = op512::<OP>(x, y);
            _mm512_storeu_si512(out.as_mut_ptr().add(i).cast(), r);
            total = _mm512_add_epi64(total, _mm512_popcnt_epi64(r));
        }
    }
    _mm512_reduce_add_epi64(total) as u32
}

#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn binop_in_place_avx512<const OP: u8>(a: &mut Words, b: &Words) -> u32 {
    let mut total = _mm512_setzero_si512();
    for i in (0..BITSET_WORDS).step_by(8) {
        // SAFETY: i + 8 <= 1024 for both arrays of exactly 1024 words.
        unsafe {
            let x = _mm512_loadu_si512(a.as_ptr().add(i).cast());
            let y = _mm512_loadu_si512(b.as_ptr().add(i).cast());
            let r = op512::<OP>(x, y);
            _mm512_storeu_si512(a.as_mut_ptr().add(i).cast(), r);
            total = _mm512_add_epi64(total, _mm512_popcnt_epi64(r));
        }
    }
    _mm512_reduce_add_epi64(total) as u32
}

#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn and_len_avx512(a: &Words, b: &Words) -> u32 {
    let mut total = _mm512_setzero_si512();
    for i in (0..BITSET_WORDS).step_by(8) {
        // SAFETY: i + 8 <= 1024 for both arrays of exactly 1024 words.
        unsafe {
            let x = _mm512_loadu_si512(a.as_ptr().add(i).cast());
            let y = _mm512_loadu_si512(b.as_ptr().add(i).cast());
            total = _mm512_add_epi64(total, _mm512_popcnt_epi64(_mm512_and_si512(x, y)));
        }
    }
    _mm512_reduce_add_epi64(total) as u32
}

#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn popcount_avx512(w: &[u64]) -> u64 {
    let mut total = _mm512_setzero_si512();
    let mut i = 0;
    while i + 8 <= w.len() {
        // SAFETY: i + 8 <= len.
        unsafe {
            total = _mm512_add_epi64(
                total,
                _mm512_popcnt_epi64(_mm512_loadu_si512(w.as_ptr().add(i).cast())),
            );
        }
        i += 8;
    }
    _mm512_reduce_add_epi64(total) as u64
        + w[i..].iter().map(|x| x.count_ones() as u64).sum::<u64>()
}

// ----- sorted-array intersection (block-wise all-pairs compare, SSSE3/SSE4.1) ----------

/// For each 8-bit match mask, the byte shuffle that packs the matched u16 lanes to the front.
const PACK: [[u8; 16]; 256] = {
    let mut t = [[0x80u8; 16]; 256];
    let mut m = 0;
    while m < 256 {
        let mut k = 0;
        let mut lane = 0;
        while lane < 8 {
            if m >> lane & 1 == 1 {
                t[m][2 * k] = (2 * lane) as u8;
                t[m][2 * k + 1] = (2 * lane + 1) as u8;
                k += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    t
};

/// Bit i set when lane i of `va` occurs anywhere in `vb` (SSE4.2 implicit-length
/// string compare: unsigned words, equal-any, bit mask). A zero lane ends the
/// implicit string, so callers pass only blocks without the value 0 (sorted
/// distinct arrays hold 0 only first; [`strip_zero`] takes it off).
#[inline]
#[target_feature(enable = "avx2")]
fn match_mask(va: __m128i, vb: __m128i) -> u32 {
    let m = _mm_cmpistrm::<{ _SIDD_UWORD_OPS | _SIDD_CMP_EQUAL_ANY | _SIDD_BIT_MASK }>(vb, va);
    _mm_cvtsi128_si32(m) as u32 & 0xFF
}

#[inline]
#[target_feature(enable = "avx2")]
fn load8(s: &[u16], at: usize) -> __m128i {
    let block: &[u16; 8] = s[at..at + 8].try_into().expect("8 lanes");
    // SAFETY: `block` is 16 readable bytes.
    unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
}

/// The 8-lane block of `s` (non-empty) starting at `at` (< `s.len()`, a
/// multiple of 8) and the mask of its lanes that hold values of that block.
/// The last, partial block is padded with copies of the last value: it stays
/// sorted, its last lane is the block's largest value, and the padding can
/// only ever equal a value already in the block.
#[inline]
#[target_feature(enable = "avx2")]
fn load_block(s: &[u16], at: usize) -> (__m128i, u32) {
    if at + 8 <= s.len() {
        (load8(s, at), 0xFF)
    } else {
        let n = s.len() - at;
        let mut t = [s[s.len() - 1]; 8];
        t[..n].copy_from_slice(&s[at..]);
        (load8(&t, 0), (1u32 << n) - 1)
    }
}

/// Largest value of the block of `s` starting at `at`.
#[inline]
fn block_max(s: &[u16], at: usize) -> u16 {
    s[(at + 7).min(s.len() - 1)]
}

/// Takes a leading 0 off both lists (the implicit-length compare cannot see
/// it); returns the shortened lists and whether each had it.
#[inline]
fn strip_zero<'a>(a: &'a [u16], b: &'a [u16]) -> (&'a [u16], &'a [u16], bool, bool) {
    let za = a.first() == Some(&0);
    let zb = b.first() == Some(&0);
    (&a[za as usize..], &b[zb as usize..], za, zb)
}

/// Walks the blocks of `a` and `b` (both non-empty, no value 0) like a merge:
/// the block with the smaller largest value moves on, so every pair of
/// blocks whose value ranges overlap is compared once. Calls `emit(va, m)`
/// for each compared pair with matches, `m` the matching valid lanes of `va`,
/// ascending.
#[inline]
#[target_feature(enable = "avx2,popcnt")]
fn intersect_blocks(a: &[u16], b: &[u16], mut emit: impl FnMut(__m128i, u32)) {
    let (na, nb) = (a.len(), b.len());
    let (mut i, mut j) = (0, 0);
    let (mut va, mut valid) = load_block(a, 0);
    let (mut vb, _) = load_block(b, 0);
    let (mut amax, mut bmax) = (block_max(a, 0), block_max(b, 0));
    loop {
        let m = match_mask(va, vb) & valid;
        if m != 0 {
            emit(va, m);
        }
        let (a_next, b_next) = (amax <= bmax, bmax <= amax);
        if a_next {
            i += 8;
            if i >= na {
                return;
            }
            (va, valid) = load_block(a, i);
            amax = block_max(a, i);
        }
        if b_next {
            j += 8;
            if j >= nb {
                return;
            }
            vb = load_block(b, j).0;
            bmax = block_max(b, j);
        }
    }
}

/// True when the block walk loses to galloping through the larger list.
#[inline]
fn too_skewed(a: &[u16], b: &[u16]) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    large.len() / small.len().max(1) >= 32
}

/// Sorted-array intersection: 8×8 all-pairs blocks (the partial last blocks
/// padded, see [`load_block`]), so no scalar tail merge is left.
#[target_feature(enable = "avx2,popcnt")]
fn and_array_array_sse(a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    if too_skewed(a, b) {
        return scalar::and_array_array(a, b, out);
    }
    let (a, b, za, zb) = strip_zero(a, b);
    let mut k = 0;
    if za && zb {
        out[0] = 0;
        k = 1;
    }
    if a.is_empty() || b.is_empty() {
        return k;
    }
    intersect_blocks(a, b, |va, m| k += emit_lanes(va, m, out, k));
    k
}

#[target_feature(enable = "avx2,popcnt")]
fn and_array_array_len_sse(a: &[u16], b: &[u16]) -> usize {
    if too_skewed(a, b) {
        return scalar::and_array_array_len(a, b);
    }
    let (a, b, za, zb) = strip_zero(a, b);
    let mut k = (za && zb) as usize;
    if a.is_empty() || b.is_empty() {
        return k;
    }
    intersect_blocks(a, b, |_, m| k += m.count_ones() as usize);
    k
}

/// Writes the lanes of `v` selected by the 8-bit `keep` mask to `out[k..]`; returns how many.
///
/// Stores all 8 lanes straight into `out` when it has room (the lanes past the
/// count are overwritten later or ignored), else goes through a small buffer.
#[inline]
#[target_feature(enable = "avx2,popcnt")]
fn emit_lanes(v: __m128i, keep: u32, out: &mut [u16], k: usize) -> usize {
    let packed = _mm_shuffle_epi8(v, load_pack(keep));
    let n = keep.count_ones() as usize;
    if let Some(dst) = out.get_mut(k..k + 8) {
        // SAFETY: `dst` is 8 writable lanes (16 bytes).
        unsafe { _mm_storeu_si128(dst.as_mut_ptr().cast(), packed) };
    } else {
        let mut tmp = [0u16; 8];
        // SAFETY: `tmp` is 16 writable bytes.
        unsafe { _mm_storeu_si128(tmp.as_mut_ptr().cast(), packed) };
        out[k..k + n].copy_from_slice(&tmp[..n]);
    }
    n
}

/// Sorted-array difference `a \ b`: the intersection's block walk, keeping for
/// each block of `a` the valid lanes no overlapping block of `b` matched. A
/// block of `a` is final once a block of `b` reaches its largest value; when
/// `b` runs out, the current block's unmatched lanes and the rest of `a` are kept.
#[target_feature(enable = "avx2,popcnt")]
fn andnot_array_array_sse(a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    if scalar::skewed(a, b) {
        return scalar::andnot_array_array(a, b, out);
    }
    let (a, b, za, zb) = strip_zero(a, b);
    let mut k = 0;
    if za && !zb {
        out[0] = 0;
        k = 1;
    }
    let (na, nb) = (a.len(), b.len());
    if na == 0 || nb == 0 {
        out[k..k + na].copy_from_slice(a);
        return k + na;
    }
    let (mut i, mut j) = (0, 0);
    let (mut va, mut valid) = load_block(a, 0);
    let (mut vb, _) = load_block(b, 0);
    let (mut amax, mut bmax) = (block_max(a, 0), block_max(b, 0));
    let mut matched = 0u32;
    loop {
        matched |= match_mask(va, vb);
        let (a_next, b_next) = (amax <= bmax, bmax <= amax);
        if a_next {
            k += emit_lanes(va, !matched & valid, out, k);
            matched = 0;
            i += 8;
            if i >= na {
                return k;
            }
            (va, valid) = load_block(a, i);
            amax = block_max(a, i);
        }
        if b_next {
            j += 8;
            if j >= nb {
                k += emit_lanes(va, !matched & valid, out, k);
                let rest = &a[(i + 8).min(na)..];
                out[k..k + rest.len()].copy_from_slice(rest);
                return k + rest.len();
            }
            vb = load_block(b, j).0;
            bmax = block_max(b, j);
        }
    }
}

/// Merges two sorted 8-lane vectors: returns (8 smallest, 8 largest), each sorted.
#[inline]
#[target_feature(enable = "avx2")]
fn merge8(x: __m128i, y: __m128i) -> (__m128i, __m128i) {
    let mut lo = _mm_min_epu16(x, y);
    let mut hi = _mm_max_epu16(x, y);
    for _ in 0..7 {
        let t = _mm_alignr_epi8::<2>(lo, lo);
        lo = _mm_min_epu16(t, hi);
        hi = _mm_max_epu16(t, hi);
    }
    (_mm_alignr_epi8::<2>(lo, lo), hi)
}

/// Appends the lanes of `v` that differ from their predecessor (lane 7 of `prev` for lane 0).
#[inline]
#[target_feature(enable = "avx2,popcnt")]
fn store_unique(prev: __m128i, v: __m128i, out: &mut [u16], k: usize) -> usize {
    let shifted = _mm_alignr_epi8::<14>(v, prev);
    let dup = _mm_movemask_epi8(_mm_packs_epi16(
        _mm_cmpeq_epi16(shifted, v),
        _mm_setzero_si128(),
    )) as u32
        & 0xFF;
    emit_lanes(v, !dup & 0xFF, out, k)
}

/// Sorted-array union: 8-lane merge network over blocks taken from the side
/// with the smaller next value, then a scalar merge of what is left.
#[target_feature(enable = "avx2,popcnt")]
fn or_array_array_sse(a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    let (na, nb) = (a.len(), b.len());
    if na < 8 || nb < 8 || scalar::skewed(a, b) {
        return scalar::or_array_array(a, b, out);
    }
    let (mut vmin, mut vmax) = merge8(load8(a, 0), load8(b, 0));
    let (mut i, mut j) = (8, 8);
    let mut k = store_unique(_mm_set1_epi16(-1), vmin, out, 0);
    let mut last = vmin;
    loop {
        let take_a = match (i < na, j < nb) {
            (true, true) => a[i] <= b[j],
            (true, false) => true,
            (false, true) => false,
            (false, false) => break,
        };
        let v = if take_a {
            if i + 8 > na {
                break;
            }
            i += 8;
            load8(a, i - 8)
        } else {
            if j + 8 > nb {
                break;
            }
            j += 8;
            load8(b, j - 8)
        };
        (vmin, vmax) = merge8(v, vmax);
        k += store_unique(last, vmin, out, k);
        last = vmin;
    }
    let mut pending = [0u16; 8];
    // SAFETY: `pending` is 16 writable bytes.
    unsafe { _mm_storeu_si128(pending.as_mut_ptr().cast(), vmax) };
    let mut lanes = [0u16; 8];
    // SAFETY: `lanes` is 16 writable bytes.
    unsafe { _mm_storeu_si128(lanes.as_mut_ptr().cast(), last) };
    k + union_tail(&pending, &a[i..], &b[j..], lanes[7], &mut out[k..])
}

/// Appends the lanes of `[prev[7], v[0..7]]` that equal neither neighbour
/// (the merged stream holds a value twice exactly when both inputs have it).
#[inline]
#[target_feature(enable = "avx2,popcnt")]
fn store_xor(prev: __m128i, v: __m128i, out: &mut [u16], k: usize) -> usize {
    let left = _mm_alignr_epi8::<12>(v, prev);
    let cand = _mm_alignr_epi8::<14>(v, prev);
    let eq = _mm_or_si128(_mm_cmpeq_epi16(cand, left), _mm_cmpeq_epi16(cand, v));
    let drop = _mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128())) as u32 & 0xFF;
    emit_lanes(cand, !drop & 0xFF, out, k)
}

/// Sorted-array symmetric difference: the union's merge network, keeping only
/// values that occur once in the merged stream; the last lane of each step is
/// decided one step later, and the remainder in scalar code.
#[target_feature(enable = "avx2,popcnt")]
fn xor_array_array_sse(a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    let (na, nb) = (a.len(), b.len());
    if na < 8 || nb < 8 || scalar::skewed(a, b) {
        return scalar::xor_array_array(a, b, out);
    }
    let (mut vmin, mut vmax) = merge8(load8(a, 0), load8(b, 0));
    let (mut i, mut j) = (8, 8);
    let mut k = store_xor(_mm_set1_epi16(-1), vmin, out, 0);
    let mut last = vmin;
    loop {
        let take_a = match (i < na, j < nb) {
            (true, true) => a[i] <= b[j],
            (true, false) => true,
            (false, true) => false,
            (false, false) => break,
        };
        let v = if take_a {
            if i + 8 > na {
                break;
            }
            i += 8;
            load8(a, i - 8)
        } else {
            if j + 8 > nb {
                break;
            }
            j += 8;
            load8(b, j - 8)
        };
        (vmin, vmax) = merge8(v, vmax);
        k += store_xor(last, vmin, out, k);
        last = vmin;
    }
    let mut lanes = [0u16; 8];
    // SAFETY: `lanes` is 16 writable bytes.
    unsafe { _mm_storeu_si128(lanes.as_mut_ptr().cast(), last) };
    let mut p = [0u16; 9];
    let mut np = 0;
    if lanes[7] != lanes[6] {
        p[0] = lanes[7];
        np = 1;
    }
    // SAFETY: `p[np..np + 8]` is 16 writable bytes (np <= 1, p has 9 lanes).
    unsafe { _mm_storeu_si128(p[np..np + 8].as_mut_ptr().cast(), vmax) };
    k + xor_tail(&p[..np + 8], &a[i..], &b[j..], &mut out[k..])
}

/// Values occurring exactly once across `p` (sorted, may hold equal pairs), `a` and `b`.
fn xor_tail(p: &[u16], a: &[u16], b: &[u16], out: &mut [u16]) -> usize {
    let (mut x, mut y, mut z, mut k) = (0, 0, 0, 0);
    let head = |s: &[u16], i: usize| s.get(i).map_or(u32::MAX, |&v| v as u32);
    while x < p.len() {
        let v = head(p, x).min(head(a, y)).min(head(b, z));
        let mut count = 0;
        while head(p, x) == v {
            x += 1;
            count += 1;
        }
        if head(a, y) == v {
            y += 1;
            count += 1;
        }
        if head(b, z) == v {
            z += 1;
            count += 1;
        }
        if count == 1 {
            out[k] = v as u16;
            k += 1;
        }
    }
    k + scalar::xor_array_array(&a[y..], &b[z..], &mut out[k..])
}

/// Union of three sorted lists, emitting only values above `last` (already emitted).
fn union_tail(p: &[u16], a: &[u16], b: &[u16], last: u16, out: &mut [u16]) -> usize {
    let (mut x, mut y, mut z, mut k) = (0, 0, 0, 0);
    let mut last = last as u32;
    while x < p.len() {
        let head = |s: &[u16], i: usize| s.get(i).map_or(u32::MAX, |&v| v as u32);
        let v = head(p, x).min(head(a, y)).min(head(b, z));
        x += (head(p, x) == v) as usize;
        y += (head(a, y) == v) as usize;
        z += (head(b, z) == v) as usize;
        if v > last {
            out[k] = v as u16;
            k += 1;
            last = v;
        }
    }
    let a = &a[y + a[y..].partition_point(|&v| v as u32 <= last)..];
    let b = &b[z + b[z..].partition_point(|&v| v as u32 <= last)..];
    k + scalar::or_array_array(a, b, &mut out[k..])
}

#[inline]
fn load_pack(m: u32) -> __m128i {
    // SAFETY: each PACK entry is 16 readable bytes; SSE2 is part of the x86-64 baseline.
    unsafe { _mm_loadu_si128(PACK[m as usize].as_ptr().cast()) }
}

// ----- tables ------------------------------------------------------------------------

macro_rules! wrap {
    ($name:ident, $inner:expr, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: only reachable through a table that `detect` returned after
            // confirming every target feature `$inner` is compiled for.
            unsafe { $inner($($arg),*) }
        }
    };
}

wrap!(and_avx2, binop_avx2::<AND>, (a: &Words, b: &Words, o: &mut Words) -> u32);
wrap!(or_avx2, binop_avx2::<OR>, (a: &Words, b: &Words, o: &mut Words) -> u32);
wrap!(xor_avx2, binop_avx2::<XOR>, (a: &Words, b: &Words, o: &mut Words) -> u32);
wrap!(andnot_avx2, binop_avx2::<ANDNOT>, (a: &Words, b: &Words, o: &mut Words) -> u32);
wrap!(and_ip_avx2, binop_in_place_avx2::<AND>, (a: &mut Words, b: &Words) -> u32);
wrap!(or_ip_avx2, binop_in_place_avx2::<OR>, (a: &mut Words, b: &Words) -> u32);
wrap!(xor_ip_avx2, binop_in_place_avx2::<XOR>, (a: &mut Words, b: &Words) -> u32);
wrap!(andnot_ip_avx2, binop_in_place_avx2::<ANDNOT>, (a: &mut Words, b: &Words) -> u32);
wrap!(and_len_avx2_w, and_len_avx2, (a: &Words, b: &Words) -> u32);
wrap!(intersects_avx2_w, intersects_avx2, (a: &Words, b: &Words) -> bool);
wrap!(or_words_avx2_w, or_words_avx2, (a: &mut [u64], b: &[u64]) -> ());
wrap!(popcount_avx2_w, popcount_avx2, (w: &[u64]) -> u64);
wrap!(set_list_w, set_list_bmi2, (w: &mut Words, l: &[u16]) -> ());
wrap!(and_arr_w, and_array_array_sse, (a: &[u16], b: &[u16], o: &mut [u16]) -> usize);
wrap!(and_arr_len_w, and_array_array_len_sse, (a: &[u16], b: &[u16]) -> usize);
wrap!(andnot_arr_w, andnot_array_array_sse, (a: &[u16], b: &[u16], o: &mut [u16]) -> usize);
wrap!(xor_arr_w, xor_array_array_sse, (a: &[u16], b: &[u16], o: &mut [u16]) -> usize);
wrap!(or_arr_w, or_array_array_sse, (a: &[u16], b: &[u16], o: &mut [u16]) -> usize);
wrap!(and_avx512, binop_avx512::<AND>, (a: &Words, b: &Words, o: &mut Words) -> u32);
wrap!(or_avx512, binop_avx512::<OR>, (a: &Words, b: &Words, o: &mut Words) -> u32);
wrap!(xor_avx512, binop_avx512::<XOR>, (a: &Words, b: &Words, o: &mut Words) -> u32);
wrap!(andnot_avx512, binop_avx512::<ANDNOT>, (a: &Words, b: &Words, o: &mut Words) -> u32);
wrap!(and_ip_avx512, binop_in_place_avx512::<AND>, (a: &mut Words, b: &Words) -> u32);
wrap!(or_ip_avx512, binop_in_place_avx512::<OR>, (a: &mut Words, b: &Words) -> u32);
wrap!(xor_ip_avx512, binop_in_place_avx512::<XOR>, (a: &mut Words, b: &Words) -> u32);
wrap!(andnot_ip_avx512, binop_in_place_avx512::<ANDNOT>, (a: &mut Words, b: &Words) -> u32);
wrap!(and_len_avx512_w, and_len_avx512, (a: &Words, b: &Words) -> u32);
wrap!(popcount_avx512_w, popcount_avx512, (w: &[u64]) -> u64);
wrap!(to_array_vbmi2_w, bitset_to_array_vbmi2, (w: &Words, o: &mut [u16]) -> usize);

/// AVX2 + POPCNT table.
pub static AVX2: Kernels = Kernels {
    name: "avx2",
    and_array_array: and_arr_w,
    and_array_array_len: and_arr_len_w,
    or_array_array: or_arr_w,
    xor_array_array: xor_arr_w,
    andnot_array_array: andnot_arr_w,
    and_bitset_bitset: and_avx2,
    or_bitset_bitset: or_avx2,
    xor_bitset_bitset: xor_avx2,
    andnot_bitset_bitset: andnot_avx2,
    and_bitset_bitset_in_place: and_ip_avx2,
    or_bitset_bitset_in_place: or_ip_avx2,
    xor_bitset_bitset_in_place: xor_ip_avx2,
    andnot_bitset_bitset_in_place: andnot_ip_avx2,
    and_bitset_bitset_len: and_len_avx2_w,
    intersects_bitset_bitset: intersects_avx2_w,
    or_words_in_place: or_words_avx2_w,
    popcount: popcount_avx2_w,
    set_list: set_list_w,
    bitset_to_array: scalar::bitset_to_array,
};

/// AVX-512 (F, BW, VPOPCNTDQ) table; array kernels shared with AVX2.
pub static AVX512: Kernels = AVX512_BASE;

/// The AVX-512 table plus VBMI2 (`vpcompressw`) for bitset-to-array conversion.
pub static AVX512_VBMI2: Kernels = Kernels {
    name: "avx512+vbmi2",
    bitset_to_array: to_array_vbmi2_w,
    ..AVX512_BASE
};

const AVX512_BASE: Kernels = Kernels {
    name: "avx512",
    and_array_array: and_arr_w,
    and_array_array_len: and_arr_len_w,
    or_array_array: or_arr_w,
    xor_array_array: xor_arr_w,
    andnot_array_array: andnot_arr_w,
    and_bitset_bitset: and_avx512,
    or_bitset_bitset: or_avx512,
    xor_bitset_bitset: xor_avx512,
    andnot_bitset_bitset: andnot_avx512,
    and_bitset_bitset_in_place: and_ip_avx512,
    or_bitset_bitset_in_place: or_ip_avx512,
    xor_bitset_bitset_in_place: xor_ip_avx512,
    andnot_bitset_bitset_in_place: andnot_ip_avx512,
    and_bitset_bitset_len: and_len_avx512_w,
    intersects_bitset_bitset: intersects_avx2_w,
    or_words_in_place: or_words_avx2_w,
    popcount: popcount_avx512_w,
    set_list: set_list_w,
    bitset_to_array: scalar::bitset_to_array,
};
