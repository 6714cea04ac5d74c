//! The column passes' transposes, tile by tile in vector registers: between rows of an array
//! holding a block's lanes side by side (consecutive complex elements) and the block's
//! contiguous lanes, on CPUs with AVX2 (`UFUNC_ISA=baseline` turns it off). An element at a
//! time (an 8-byte load and store, the offsets reloaded), the gather and the scatter were two
//! thirds of the column pass of a 2048x2048 real transform; here a 4x4 tile of `Complex<f32>`
//! (2x2 of `Complex<f64>`, 4x4 of `f32` or `f64` for the real lanes of a transform along an
//! outer axis) is four loads, eight shuffles and four stores. Where the lanes are not side by
//! side, or for the rows and lanes that do not fill a tile, the callers' element loops do it.

use super::{FftElement, FftReal};
#[cfg(target_arch = "x86_64")]
use crate::isa::{active_isa, IsaLevel};
#[cfg(target_arch = "x86_64")]
use crate::stream::{prefetch_span, PREFETCH_ROWS};

/// An element the tiles move: a real float or a complex one (any [`FftElement`]), scaled by
/// its real type.
pub(super) trait TileElement: FftElement + std::ops::Mul<Self::Real, Output = Self> {}

impl<A: FftElement + std::ops::Mul<A::Real, Output = A>> TileElement for A {}

/// Copies rows `0..rows` of `w` consecutive elements (row `j` at `src + j * stride`)
/// into the `w` lanes at `lanes + b * pitch` (element `j` of lane `b` is row `j`'s element
/// `b`), as far as whole tiles go; returns how many rows it copied (a multiple of the tile
/// height, 0 without AVX). Each row is asked for `PREFETCH_ROWS` rows ahead.
///
/// # Safety
/// `src` addresses `rows` rows of `w` readable elements at `stride`; `lanes` addresses `w`
/// writable lanes of `rows` elements at `pitch`, disjoint from the source.
pub(super) unsafe fn gather_tiles<E: TileElement>(
    lanes: *mut E,
    pitch: usize,
    src: *const E,
    (w, stride): (usize, isize),
    rows: usize,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if w >= 4 && active_isa() >= IsaLevel::Avx2 {
        let rows_of = |j: usize| (src.wrapping_offset(j as isize * stride), stride);
        let lanes_of = |b: usize, j: usize| (lanes.wrapping_add(b * pitch + j), pitch as isize);
        // SAFETY: AVX is present (active_isa never reports more than the CPU has); the
        // tiles lie inside both sides, per the contract.
        return unsafe { avx::tiles::<E>(rows_of, lanes_of, (w, rows), None) };
    }
    let _ = (lanes, pitch, src, w, stride, rows);
    0
}

/// The reverse of [`gather_tiles`] times `scale`: element `j` of lane `b` (at `lanes + b *
/// pitch + j`) to row `j`'s element `b` (at `dst + j * stride + b`), rows `0..rows` as far as
/// whole tiles go; returns how many rows it wrote. Each row of `dst` is asked for
/// `PREFETCH_ROWS` rows ahead.
///
/// # Safety
/// `lanes` addresses `w` readable lanes of `rows` elements at `pitch`; `dst` addresses `rows`
/// rows of `w` writable elements at `stride`, disjoint from the lanes.
pub(super) unsafe fn scatter_tiles<E: TileElement>(
    lanes: *const E,
    pitch: usize,
    dst: *mut E,
    (w, stride): (usize, isize),
    rows: usize,
    scale: E::Real,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if w >= 4 && active_isa() >= IsaLevel::Avx2 {
        let rows_of = |j: usize| {
            (
                dst.wrapping_offset(j as isize * stride).cast_const(),
                stride,
            )
        };
        // `tiles` names lanes mutably for both directions; in this one they are only read.
        let lanes_of =
            |b: usize, j: usize| (lanes.wrapping_add(b * pitch + j).cast_mut(), pitch as isize);
        // SAFETY: AVX is present (active_isa never reports more than the CPU has); the
        // tiles lie inside both sides, per the contract.
        return unsafe { avx::tiles::<E>(rows_of, lanes_of, (w, rows), Some(scale)) };
    }
    let _ = (lanes, pitch, dst, w, stride, rows, scale);
    0
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use super::*;
    use std::arch::x86_64::*;

    /// A tile's side: the elements of one vector register (four of 4 or 8 bytes, in 128- or
    /// 256-bit registers; two `Complex<f64>`).
    fn side<E>() -> usize {
        if size_of::<E>() == 16 {
            2
        } else {
            4
        }
    }

    /// The tiles of rows `0..rows` (whole tiles only) by elements `0..w`, row `j` starting at
    /// `rows_of(j)` (and the distance between rows), lane `b`'s element `j` at `lanes_of(b,
    /// j)` (and the distance between lanes): rows to lanes where `scale` is `None`, lanes to
    /// rows times `scale` otherwise. Row by row across the block, each row's lines prefetched
    /// `PREFETCH_ROWS` ahead; a ragged right edge element by element. Returns the rows done.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn tiles<E: TileElement>(
        rows_of: impl Fn(usize) -> (*const E, isize),
        lanes_of: impl Fn(usize, usize) -> (*mut E, isize),
        (w, rows): (usize, usize),
        scale: Option<E::Real>,
    ) -> usize {
        let t = side::<E>();
        let whole = w / t * t;
        let mut j = 0;
        while j + t <= rows {
            let (row, row_pitch) = rows_of(j);
            if j + PREFETCH_ROWS + t <= rows {
                for k in 0..t {
                    let ahead = row.wrapping_offset((k + PREFETCH_ROWS) as isize * row_pitch);
                    // SAFETY: prefetching never faults.
                    unsafe { prefetch_span(ahead, ahead.wrapping_add(w - 1)) };
                }
            }
            let mut b = 0;
            while b < whole {
                let (lane, lane_pitch) = lanes_of(b, j);
                // SAFETY: a whole tile inside both sides, per the callers' contracts.
                unsafe {
                    match scale {
                        None => tile::<E>((row.add(b), row_pitch), (lane, lane_pitch), None),
                        Some(s) => tile::<E>(
                            (lane.cast_const(), lane_pitch),
                            (row.add(b).cast_mut(), row_pitch),
                            Some(s),
                        ),
                    }
                }
                b += t;
            }
            for b in whole..w {
                let (lane, _) = lanes_of(b, j);
                for k in 0..t {
                    // SAFETY: element `b` of row `j + k`, and lane `b`'s element `j + k`.
                    unsafe {
                        let at = row.offset(k as isize * row_pitch).add(b);
                        let there = lane.add(k);
                        match scale {
                            None => *there = *at,
                            Some(s) => *at.cast_mut() = *there * s,
                        }
                    }
                }
            }
            j += t;
        }
        j
    }

    /// One tile: vector `k` of the output (at `to + k * to_pitch`) is element `k` of each input
    /// vector (at `from + r * from_pitch`), times `scale` where given. Inlined into
    /// [`tiles`], so compiled for AVX (the intrinsics are not called from closures, which
    /// would not inherit the feature).
    #[inline(always)]
    unsafe fn tile<E: TileElement>(
        (from, from_pitch): (*const E, isize),
        (to, to_pitch): (*mut E, isize),
        scale: Option<E::Real>,
    ) {
        // `FftReal` is sealed: the elements are f32, f64 and their complex numbers.
        debug_assert!(matches!(size_of::<E>(), 4 | 8 | 16));
        let real_f32 = size_of::<E::Real>() == 4;
        // SAFETY: the caller's tile: `side` rows of `side` elements on both sides.
        unsafe {
            let input = |r: isize| from.offset(r * from_pitch);
            let output = |k: isize| to.offset(k * to_pitch);
            match size_of::<E>() {
                4 => {
                    let r0 = _mm_loadu_ps(input(0).cast());
                    let r1 = _mm_loadu_ps(input(1).cast());
                    let r2 = _mm_loadu_ps(input(2).cast());
                    let r3 = _mm_loadu_ps(input(3).cast());
                    // [r0.0 r1.0 r0.1 r1.1], [r2.0 r3.0 r2.1 r3.1], then the upper halves.
                    let (t0, t1) = (_mm_unpacklo_ps(r0, r1), _mm_unpacklo_ps(r2, r3));
                    let (t2, t3) = (_mm_unpackhi_ps(r0, r1), _mm_unpackhi_ps(r2, r3));
                    let out = [
                        _mm_movelh_ps(t0, t1),
                        _mm_movehl_ps(t1, t0),
                        _mm_movelh_ps(t2, t3),
                        _mm_movehl_ps(t3, t2),
                    ];
                    for (k, v) in out.into_iter().enumerate() {
                        let v = match scale {
                            Some(s) => _mm_mul_ps(v, _mm_set1_ps(s.as_f64() as f32)),
                            None => v,
                        };
                        _mm_storeu_ps(output(k as isize).cast(), v);
                    }
                }
                8 => {
                    let r0 = _mm256_loadu_pd(input(0).cast());
                    let r1 = _mm256_loadu_pd(input(1).cast());
                    let r2 = _mm256_loadu_pd(input(2).cast());
                    let r3 = _mm256_loadu_pd(input(3).cast());
                    // [r0.0 r1.0 r0.2 r1.2], [r0.1 r1.1 r0.3 r1.3], and the same of r2, r3.
                    let (t0, t1) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
                    let (t2, t3) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
                    let out = [
                        _mm256_permute2f128_pd::<0x20>(t0, t2),
                        _mm256_permute2f128_pd::<0x20>(t1, t3),
                        _mm256_permute2f128_pd::<0x31>(t0, t2),
                        _mm256_permute2f128_pd::<0x31>(t1, t3),
                    ];
                    for (k, v) in out.into_iter().enumerate() {
                        // `Complex<f32>` scales its two f32 halves, `f64` itself.
                        let v = match scale {
                            Some(s) if real_f32 => _mm256_castps_pd(_mm256_mul_ps(
                                _mm256_castpd_ps(v),
                                _mm256_set1_ps(s.as_f64() as f32),
                            )),
                            Some(s) => _mm256_mul_pd(v, _mm256_set1_pd(s.as_f64())),
                            None => v,
                        };
                        _mm256_storeu_pd(output(k as isize).cast(), v);
                    }
                }
                _ => {
                    let r0 = _mm256_loadu_pd(input(0).cast());
                    let r1 = _mm256_loadu_pd(input(1).cast());
                    let out = [
                        _mm256_permute2f128_pd::<0x20>(r0, r1),
                        _mm256_permute2f128_pd::<0x31>(r0, r1),
                    ];
                    for (k, v) in out.into_iter().enumerate() {
                        let v = match scale {
                            Some(s) => _mm256_mul_pd(v, _mm256_set1_pd(s.as_f64())),
                            None => v,
                        };
                        _mm256_storeu_pd(output(k as isize).cast(), v);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pass::{gather_block, gather_block_real, lane_pitch, scatter_block};
    use super::*;
    use num_complex::Complex;

    /// Gathers and scatters blocks of side-by-side lanes (any width, whole tiles or not, rows
    /// walked forwards or backwards) exactly as element by element, leaving the rest alone.
    fn round_trip<T: FftReal>() {
        let c = |i: usize| Complex::new(T::of_f64(i as f64), T::of_f64(0.5 - i as f64));
        let sentinel = Complex::new(T::of_f64(-7.0), T::of_f64(7.0));
        for w in [1, 2, 3, 4, 5, 7, 8, 9, 31, 32] {
            for read in [0, 1, 2, 3, 4, 5, 8, 13, 16, 37] {
                for backwards in [false, true] {
                    let n = read + 3;
                    let pitch = lane_pitch(n);
                    let row = (w + 5) as isize;
                    let size = 2 + w + (read + 1) * row as usize;
                    let src: Vec<Complex<T>> = (0..size).map(c).collect();
                    // Row `j` of the block at `first + j * stride` from `base`.
                    let (base, stride) = if backwards {
                        (read.saturating_sub(1) as isize * row, -row)
                    } else {
                        (0, row)
                    };
                    let first = 2isize;
                    let offsets: Vec<(isize, isize)> =
                        (0..w as isize).map(|b| (first + b, first + b)).collect();
                    // One lane out of line: the whole block by the element loops.
                    let mut apart = offsets.clone();
                    if w >= 2 {
                        apart.swap(0, w - 1);
                    }
                    let at = |b: usize, j: usize| {
                        (base + first + b as isize + j as isize * stride) as usize
                    };
                    let mut lanes = vec![sentinel; w * pitch];
                    // SAFETY: the lanes' rows lie inside `src`; `lanes` holds `w` lanes.
                    unsafe {
                        gather_block(
                            &mut lanes,
                            (n, pitch),
                            src.as_ptr().offset(base),
                            &offsets,
                            stride,
                            read,
                        )
                    };
                    for b in 0..w {
                        for j in 0..n {
                            let want = if j < read {
                                src[at(b, j)]
                            } else {
                                Complex::default()
                            };
                            assert_eq!(
                                lanes[b * pitch + j],
                                want,
                                "w {w} read {read} lane {b} row {j}"
                            );
                        }
                    }
                    let (skip, len) = (n.min(1), read);
                    let scale = T::of_f64(0.25);
                    let mut dst = vec![sentinel; size];
                    // SAFETY: as above, `dst` the size of `src`.
                    unsafe {
                        scatter_block(
                            &lanes,
                            pitch,
                            (skip, len),
                            scale,
                            dst.as_mut_ptr().offset(base),
                            &offsets,
                            stride,
                        )
                    };
                    let mut want = vec![sentinel; size];
                    for b in 0..w {
                        for j in 0..len {
                            want[at(b, j)] = lanes[b * pitch + skip + j] * scale;
                        }
                    }
                    assert!(
                        dst == want,
                        "scatter: w {w} read {read} backwards {backwards}"
                    );
                    // The first and last lanes swapped: the same values, element by element.
                    let column = |i: usize| match i {
                        0 => w - 1,
                        i if i == w - 1 => 0,
                        i => i,
                    };
                    let mut swapped = vec![sentinel; w * pitch];
                    let mut dst_swapped = vec![sentinel; size];
                    // SAFETY: as above.
                    unsafe {
                        let src = src.as_ptr().offset(base);
                        gather_block(&mut swapped, (n, pitch), src, &apart, stride, read);
                        let dst = dst_swapped.as_mut_ptr().offset(base);
                        scatter_block(&swapped, pitch, (skip, len), scale, dst, &apart, stride);
                    }
                    for i in 0..w {
                        let (mine, theirs) = (i * pitch, column(i) * pitch);
                        assert!(swapped[mine..mine + n] == lanes[theirs..theirs + n]);
                    }
                    assert!(dst_swapped == dst, "swapped lanes: w {w} read {read}");
                }
            }
        }
    }

    /// The real lanes' gather and scatter (transforms along an outer axis), the same way.
    fn round_trip_real<T: FftReal>() {
        let sentinel = T::of_f64(-7.0);
        for w in [1, 3, 4, 5, 8, 9, 32] {
            for read in [0, 1, 3, 4, 5, 13, 37] {
                for backwards in [false, true] {
                    let (n, row) = (read + 2, (w + 3) as isize);
                    let pitch = n + 5;
                    let size = 1 + w + (read + 1) * row as usize;
                    let src: Vec<T> = (0..size).map(|i| T::of_f64(i as f64 + 0.25)).collect();
                    let (base, stride) = if backwards {
                        (read.saturating_sub(1) as isize * row, -row)
                    } else {
                        (0, row)
                    };
                    let offsets: Vec<(isize, isize)> =
                        (0..w as isize).map(|b| (1 + b, 1 + b)).collect();
                    let at =
                        |b: usize, j: usize| (base + 1 + b as isize + j as isize * stride) as usize;
                    let mut lanes = vec![sentinel; w * pitch];
                    let mut dst = vec![sentinel; size];
                    let scale = T::of_f64(0.5);
                    // SAFETY: the lanes' rows lie inside `src` and `dst`; `lanes` holds `w`.
                    unsafe {
                        let from = src.as_ptr().offset(base);
                        gather_block_real(&mut lanes, (n, pitch), from, &offsets, stride, read);
                        // From point 1 of each lane: a cropped window, as a convolution's.
                        let to = dst.as_mut_ptr().offset(base);
                        scatter_block(&lanes, pitch, (1, read), scale, to, &offsets, stride);
                    }
                    let mut want = vec![sentinel; size];
                    for b in 0..w {
                        for j in 0..n {
                            let v = if j < read { src[at(b, j)] } else { T::zero() };
                            assert!(
                                lanes[b * pitch + j] == v,
                                "real: w {w} read {read} lane {b}"
                            );
                        }
                        for j in 0..read {
                            want[at(b, j)] = lanes[b * pitch + 1 + j] * scale;
                        }
                    }
                    assert!(
                        dst == want,
                        "real scatter: w {w} read {read} backwards {backwards}"
                    );
                }
            }
        }
    }

    #[test]
    fn real_blocks_move_exactly() {
        round_trip_real::<f32>();
        round_trip_real::<f64>();
    }

    #[test]
    fn blocks_move_exactly_f32() {
        round_trip::<f32>();
    }

    #[test]
    fn blocks_move_exactly_f64() {
        round_trip::<f64>();
    }

    /// The tiles do the whole tiles' rows where the CPU has AVX2, so the tests above test them.
    #[test]
    fn tiles_are_used_where_the_cpu_allows() {
        let src = vec![Complex::new(1.0f32, 2.0); 8 * 13];
        let mut lanes = vec![Complex::default(); 8 * 16];
        // SAFETY: 13 rows of 8 at stride 8; 8 lanes of 16.
        let done = unsafe { gather_tiles(lanes.as_mut_ptr(), 16, src.as_ptr(), (8, 8), 13) };
        #[cfg(target_arch = "x86_64")]
        if active_isa() >= IsaLevel::Avx2 {
            assert_eq!(done, 12);
            return;
        }
        assert_eq!(done, 0);
    }
}
