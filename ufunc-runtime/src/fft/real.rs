//! Real transforms of even length `n`, made as realfft makes them: the `n` real points read as
//! `n / 2` complex ones, a complex transform of that length, and a twist that pairs bin `k`
//! with bin `n / 2 - k` to separate the half spectrum (the inverse twists first). The twist
//! here runs on AVX vectors, several pairs at a time; realfft's is scalar, and was a third of
//! a batched 4096-point `rfft` on one core. Same formulas in the same order, so the results
//! are realfft's (up to the sign of a zero).

use super::FftReal;
#[cfg(target_arch = "x86_64")]
use crate::isa::{active_isa, IsaLevel};
use num_complex::Complex;
use realfft::{ComplexToReal, FftError, RealToComplex};
use rustfft::{Fft, FftDirection};
use std::sync::Arc;

/// `cos + i sin` of `-2 pi k / n`, as realfft computes its twiddles (in `f64`, then rounded).
fn twiddle<T: FftReal>(k: usize, n: usize) -> Complex<T> {
    let angle = -2.0 * std::f64::consts::PI / n as f64 * k as f64;
    Complex::new(T::of_f64(angle.cos()), T::of_f64(angle.sin()))
}

/// The pairs `(1 + j, n / 2 - 1 - j)` a twist of `n` points combines (one twiddle each).
fn pair_count(n: usize) -> usize {
    n.div_ceil(4) - 1
}

/// The forward transform of an even number of real points.
pub(crate) struct Forward<T> {
    n: usize,
    fft: Arc<dyn Fft<T>>,
    /// Half the twiddle of each pair.
    twiddles: Vec<Complex<T>>,
}

/// The inverse transform giving an even number of real points.
pub(crate) struct Inverse<T> {
    n: usize,
    fft: Arc<dyn Fft<T>>,
    /// The conjugate twiddle of each pair.
    twiddles: Vec<Complex<T>>,
}

impl<T: FftReal> Forward<T> {
    /// The transform of `n` points (even, at least 2) on the complex transform of `n / 2`.
    pub(crate) fn new(n: usize, complex: Arc<dyn Fft<T>>) -> Self {
        assert!(n % 2 == 0 && n >= 2 && complex.len() == n / 2);
        assert_eq!(complex.fft_direction(), FftDirection::Forward);
        let half = T::of_f64(0.5);
        let twiddles = (1..=pair_count(n))
            .map(|k| twiddle::<T>(k, n) * half)
            .collect();
        Forward {
            n,
            fft: complex,
            twiddles,
        }
    }
}

impl<T: FftReal> Inverse<T> {
    /// The transform to `n` points (even, at least 2) on the complex inverse of `n / 2`.
    pub(crate) fn new(n: usize, complex: Arc<dyn Fft<T>>) -> Self {
        assert!(n % 2 == 0 && n >= 2 && complex.len() == n / 2);
        assert_eq!(complex.fft_direction(), FftDirection::Inverse);
        let twiddles = (1..=pair_count(n))
            .map(|k| twiddle::<T>(k, n).conj())
            .collect();
        Inverse {
            n,
            fft: complex,
            twiddles,
        }
    }
}

/// Bins `a` (from the left) and `b` (its partner from the right) of the complex transform,
/// separated: what [`Forward`] writes at each.
#[inline(always)]
fn forward_pair<T: FftReal>(
    a: Complex<T>,
    b: Complex<T>,
    tw: Complex<T>,
) -> (Complex<T>, Complex<T>) {
    let (sum, diff) = (a + b, a - b);
    let half = T::of_f64(0.5);
    let (half_sum_re, half_diff_im) = (half * sum.re, half * diff.im);
    let twisted_re = sum.im * tw.re + diff.re * tw.im;
    let twisted_im = sum.im * tw.im - diff.re * tw.re;
    (
        Complex::new(half_sum_re + twisted_re, half_diff_im + twisted_im),
        Complex::new(half_sum_re - twisted_re, twisted_im - half_diff_im),
    )
}

/// Bins `a` and `b` of a half spectrum, combined for the complex inverse.
#[inline(always)]
fn inverse_pair<T: FftReal>(
    a: Complex<T>,
    b: Complex<T>,
    tw: Complex<T>,
) -> (Complex<T>, Complex<T>) {
    let (sum, diff) = (a + b, a - b);
    let twisted_re = sum.im * tw.re + diff.re * tw.im;
    let twisted_im = sum.im * tw.im - diff.re * tw.re;
    (
        Complex::new(sum.re - twisted_re, diff.im - twisted_im),
        Complex::new(sum.re + twisted_re, -twisted_im - diff.im),
    )
}

/// Applies `pair` to the pairs `(1 + j, m - 1 - j)` of `v` for `j` in `from..twiddles.len()`.
#[inline(always)]
fn twist_scalar<T: FftReal>(
    v: &mut [Complex<T>],
    m: usize,
    twiddles: &[Complex<T>],
    from: usize,
    pair: impl Fn(Complex<T>, Complex<T>, Complex<T>) -> (Complex<T>, Complex<T>),
) {
    for (j, &tw) in twiddles.iter().enumerate().skip(from) {
        let (a, b) = pair(v[1 + j], v[m - 1 - j], tw);
        (v[1 + j], v[m - 1 - j]) = (a, b);
    }
}

/// The twist of the pairs of `v` (`m = n / 2`), in vectors where the CPU has AVX.
fn twist<T: FftReal>(v: &mut [Complex<T>], m: usize, twiddles: &[Complex<T>], forward: bool) {
    #[cfg(target_arch = "x86_64")]
    let done = if active_isa() >= IsaLevel::Avx2 {
        // SAFETY: the CPU has AVX (implied by the level); `v` holds `m + 1` bins and one
        // twiddle per pair.
        unsafe { simd::twist(v, m, twiddles, forward) }
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    if forward {
        twist_scalar(v, m, twiddles, done, forward_pair);
    } else {
        twist_scalar(v, m, twiddles, done, inverse_pair);
    }
}

impl<T: FftReal> RealToComplex<T> for Forward<T> {
    fn process(&self, input: &mut [T], output: &mut [Complex<T>]) -> Result<(), FftError> {
        let mut scratch = self.make_scratch_vec();
        self.process_with_scratch(input, output, &mut scratch)
    }

    fn process_with_scratch(
        &self,
        input: &mut [T],
        output: &mut [Complex<T>],
        scratch: &mut [Complex<T>],
    ) -> Result<(), FftError> {
        let m = self.n / 2;
        if input.len() != self.n {
            return Err(FftError::InputBuffer(self.n, input.len()));
        }
        if output.len() != m + 1 {
            return Err(FftError::OutputBuffer(m + 1, output.len()));
        }
        if scratch.len() < self.get_scratch_len() {
            return Err(FftError::ScratchBuffer(
                self.get_scratch_len(),
                scratch.len(),
            ));
        }
        // SAFETY: `Complex<T>` is two `T`s (`repr(C)`), so the `n` reals are `m` complex.
        let pairs = unsafe { std::slice::from_raw_parts_mut(input.as_mut_ptr().cast(), m) };
        self.fft
            .process_outofplace_with_scratch(pairs, &mut output[..m], scratch);
        let first = output[0];
        output[0] = Complex::new(first.re + first.im, T::zero());
        output[m] = Complex::new(first.re - first.im, T::zero());
        twist(output, m, &self.twiddles, true);
        if m % 2 == 0 && m > 0 {
            output[m / 2].im = -output[m / 2].im;
        }
        Ok(())
    }

    fn get_scratch_len(&self) -> usize {
        self.fft.get_outofplace_scratch_len()
    }

    fn len(&self) -> usize {
        self.n
    }

    fn make_input_vec(&self) -> Vec<T> {
        vec![T::zero(); self.n]
    }

    fn make_output_vec(&self) -> Vec<Complex<T>> {
        vec![Complex::default(); self.n / 2 + 1]
    }

    fn make_scratch_vec(&self) -> Vec<Complex<T>> {
        vec![Complex::default(); self.get_scratch_len()]
    }
}

impl<T: FftReal> ComplexToReal<T> for Inverse<T> {
    fn process(&self, input: &mut [Complex<T>], output: &mut [T]) -> Result<(), FftError> {
        let mut scratch = self.make_scratch_vec();
        self.process_with_scratch(input, output, &mut scratch)
    }

    fn process_with_scratch(
        &self,
        input: &mut [Complex<T>],
        output: &mut [T],
        scratch: &mut [Complex<T>],
    ) -> Result<(), FftError> {
        let m = self.n / 2;
        if input.len() != m + 1 {
            return Err(FftError::InputBuffer(m + 1, input.len()));
        }
        if output.len() != self.n {
            return Err(FftError::OutputBuffer(self.n, output.len()));
        }
        if scratch.len() < self.get_scratch_len() {
            return Err(FftError::ScratchBuffer(
                self.get_scratch_len(),
                scratch.len(),
            ));
        }
        // As realfft: imaginary parts at DC and Nyquist are dropped, and reported.
        let first_invalid = input[0].im != T::zero();
        let last_invalid = input[m].im != T::zero();
        input[0].im = T::zero();
        input[m].im = T::zero();
        let (first, last) = (input[0], input[m]);
        let (sum, diff) = (first + last, first - last);
        input[0] = Complex::new(sum.re - sum.im, diff.re - diff.im);
        twist(input, m, &self.twiddles, false);
        if m % 2 == 0 && m > 0 {
            let center = input[m / 2];
            input[m / 2] = (center + center).conj();
        }
        // SAFETY: as in the forward transform, `n` reals are `m` complex.
        let pairs = unsafe { std::slice::from_raw_parts_mut(output.as_mut_ptr().cast(), m) };
        self.fft
            .process_outofplace_with_scratch(&mut input[..m], pairs, scratch);
        if first_invalid || last_invalid {
            return Err(FftError::InputValues(first_invalid, last_invalid));
        }
        Ok(())
    }

    fn get_scratch_len(&self) -> usize {
        self.fft.get_outofplace_scratch_len()
    }

    fn len(&self) -> usize {
        self.n
    }

    fn make_input_vec(&self) -> Vec<Complex<T>> {
        vec![Complex::default(); self.n / 2 + 1]
    }

    fn make_output_vec(&self) -> Vec<T> {
        vec![T::zero(); self.n]
    }

    fn make_scratch_vec(&self) -> Vec<Complex<T>> {
        vec![Complex::default(); self.get_scratch_len()]
    }
}

/// The twists on AVX vectors of interleaved complex numbers: four `Complex<f32>` or two
/// `Complex<f64>` a vector, each lane computing [`forward_pair`] or [`inverse_pair`] with the
/// same operations in the same order.
#[cfg(target_arch = "x86_64")]
mod simd {
    use super::{Complex, FftReal};
    use std::any::TypeId;
    use std::arch::x86_64::*;

    /// A vector of complex numbers, `[re, im, re, im, ..]`.
    trait Vector: Copy {
        type Real: FftReal;
        /// Complex numbers a vector.
        const LEN: usize;
        unsafe fn load(p: *const Complex<Self::Real>) -> Self;
        unsafe fn store(self, p: *mut Complex<Self::Real>);
        fn splat(x: Self::Real) -> Self;
        fn add(self, o: Self) -> Self;
        fn sub(self, o: Self) -> Self;
        fn mul(self, o: Self) -> Self;
        /// `[re - o.re, im + o.im]` in each complex number.
        fn addsub(self, o: Self) -> Self;
        /// `[re, re]`.
        fn dup_re(self) -> Self;
        /// `[im, im]`.
        fn dup_im(self) -> Self;
        /// `[im, re]`.
        fn swap(self) -> Self;
        /// `[re, o.im]`.
        fn re_with_im(self, o: Self) -> Self;
        /// `[re, -im]`.
        fn conj(self) -> Self;
        /// The `-x` of every lane.
        fn neg(self) -> Self;
        /// The complex numbers in reverse order.
        fn reverse(self) -> Self;
    }

    // SAFETY (every method of both impls): AVX is enabled by the caller's target feature,
    // which inlines these; `load` and `store` address `LEN` complex numbers.
    #[rustfmt::skip]
    impl Vector for __m256 {
        type Real = f32;
        const LEN: usize = 4;
        #[inline(always)] unsafe fn load(p: *const Complex<f32>) -> Self { unsafe { _mm256_loadu_ps(p.cast()) } }
        #[inline(always)] unsafe fn store(self, p: *mut Complex<f32>) { unsafe { _mm256_storeu_ps(p.cast(), self) } }
        #[inline(always)] fn splat(x: f32) -> Self { unsafe { _mm256_set1_ps(x) } }
        #[inline(always)] fn add(self, o: Self) -> Self { unsafe { _mm256_add_ps(self, o) } }
        #[inline(always)] fn sub(self, o: Self) -> Self { unsafe { _mm256_sub_ps(self, o) } }
        #[inline(always)] fn mul(self, o: Self) -> Self { unsafe { _mm256_mul_ps(self, o) } }
        #[inline(always)] fn addsub(self, o: Self) -> Self { unsafe { _mm256_addsub_ps(self, o) } }
        #[inline(always)] fn dup_re(self) -> Self { unsafe { _mm256_moveldup_ps(self) } }
        #[inline(always)] fn dup_im(self) -> Self { unsafe { _mm256_movehdup_ps(self) } }
        #[inline(always)] fn swap(self) -> Self { unsafe { _mm256_permute_ps::<0xB1>(self) } }
        #[inline(always)] fn re_with_im(self, o: Self) -> Self { unsafe { _mm256_blend_ps::<0xAA>(self, o) } }
        #[inline(always)] fn conj(self) -> Self { unsafe { _mm256_xor_ps(self, _mm256_setr_ps(0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0)) } }
        #[inline(always)] fn neg(self) -> Self { unsafe { _mm256_xor_ps(self, _mm256_set1_ps(-0.0)) } }
        #[inline(always)] fn reverse(self) -> Self { unsafe { _mm256_permute_ps::<0x4E>(_mm256_permute2f128_ps::<0x01>(self, self)) } }
    }

    #[rustfmt::skip]
    impl Vector for __m256d {
        type Real = f64;
        const LEN: usize = 2;
        #[inline(always)] unsafe fn load(p: *const Complex<f64>) -> Self { unsafe { _mm256_loadu_pd(p.cast()) } }
        #[inline(always)] unsafe fn store(self, p: *mut Complex<f64>) { unsafe { _mm256_storeu_pd(p.cast(), self) } }
        #[inline(always)] fn splat(x: f64) -> Self { unsafe { _mm256_set1_pd(x) } }
        #[inline(always)] fn add(self, o: Self) -> Self { unsafe { _mm256_add_pd(self, o) } }
        #[inline(always)] fn sub(self, o: Self) -> Self { unsafe { _mm256_sub_pd(self, o) } }
        #[inline(always)] fn mul(self, o: Self) -> Self { unsafe { _mm256_mul_pd(self, o) } }
        #[inline(always)] fn addsub(self, o: Self) -> Self { unsafe { _mm256_addsub_pd(self, o) } }
        #[inline(always)] fn dup_re(self) -> Self { unsafe { _mm256_movedup_pd(self) } }
        #[inline(always)] fn dup_im(self) -> Self { unsafe { _mm256_permute_pd::<0xF>(self) } }
        #[inline(always)] fn swap(self) -> Self { unsafe { _mm256_permute_pd::<0x5>(self) } }
        #[inline(always)] fn re_with_im(self, o: Self) -> Self { unsafe { _mm256_blend_pd::<0xA>(self, o) } }
        #[inline(always)] fn conj(self) -> Self { unsafe { _mm256_xor_pd(self, _mm256_setr_pd(0.0, -0.0, 0.0, -0.0)) } }
        #[inline(always)] fn neg(self) -> Self { unsafe { _mm256_xor_pd(self, _mm256_set1_pd(-0.0)) } }
        #[inline(always)] fn reverse(self) -> Self { unsafe { _mm256_permute2f128_pd::<0x01>(self, self) } }
    }

    /// The pairs `j < count` whole vectors cover, twisted; returns how many.
    #[inline(always)]
    unsafe fn twist_vectors<V: Vector>(
        v: *mut Complex<V::Real>,
        m: usize,
        tw: *const Complex<V::Real>,
        count: usize,
        forward: bool,
    ) -> usize {
        let half = V::splat(V::Real::of_f64(0.5));
        let mut j = 0;
        // SAFETY (whole loop): pairs `j..j + LEN` lie below `count`, so their left bins
        // `1 + j..` and right bins `..m - j` are inside `v` and do not overlap.
        while j + V::LEN <= count {
            unsafe {
                let (left, right) = (v.add(1 + j), v.add(m - j - V::LEN));
                let a = V::load(left);
                let b = V::load(right).reverse();
                let t = V::load(tw.add(j));
                let (sum, diff) = (a.add(b), a.sub(b));
                // `[twisted_re, twisted_im]` of each pair: `sum.im * tw.re + diff.re * tw.im`
                // and `sum.im * tw.im - diff.re * tw.re`.
                let x = sum.dup_im().mul(t);
                let y = diff.dup_re().mul(t.swap());
                let twisted = x.addsub(y.neg());
                let (to_left, to_right) = if forward {
                    let h = sum.re_with_im(diff).mul(half);
                    (h.add(twisted), h.sub(twisted).conj())
                } else {
                    let h = sum.re_with_im(diff);
                    (h.sub(twisted), h.add(twisted).conj())
                };
                to_left.store(left);
                to_right.reverse().store(right);
            }
            j += V::LEN;
        }
        j
    }

    #[target_feature(enable = "avx")]
    unsafe fn twist_f32(
        v: *mut Complex<f32>,
        m: usize,
        tw: *const Complex<f32>,
        count: usize,
        forward: bool,
    ) -> usize {
        // SAFETY: the caller's contract.
        unsafe { twist_vectors::<__m256>(v, m, tw, count, forward) }
    }

    #[target_feature(enable = "avx")]
    unsafe fn twist_f64(
        v: *mut Complex<f64>,
        m: usize,
        tw: *const Complex<f64>,
        count: usize,
        forward: bool,
    ) -> usize {
        // SAFETY: the caller's contract.
        unsafe { twist_vectors::<__m256d>(v, m, tw, count, forward) }
    }

    /// The leading pairs of a twist, in vectors; returns how many (the rest are the caller's).
    ///
    /// # Safety
    /// The CPU has AVX; `v` holds `m + 1` bins and `twiddles` one twiddle per pair.
    pub(super) unsafe fn twist<T: FftReal>(
        v: &mut [Complex<T>],
        m: usize,
        twiddles: &[Complex<T>],
        forward: bool,
    ) -> usize {
        debug_assert!(v.len() > m && 2 * twiddles.len() < m.max(1));
        let (p, tw, count) = (v.as_mut_ptr(), twiddles.as_ptr(), twiddles.len());
        // SAFETY: the caller's contract; `T` is the type the pointers are cast to.
        unsafe {
            if TypeId::of::<T>() == TypeId::of::<f32>() {
                twist_f32(p.cast(), m, tw.cast(), count, forward)
            } else if TypeId::of::<T>() == TypeId::of::<f64>() {
                twist_f64(p.cast(), m, tw.cast(), count, forward)
            } else {
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use realfft::RealFftPlanner;
    use rustfft::FftPlanner;

    fn signal<T: FftReal>(n: usize, seed: usize) -> Vec<T> {
        (0..n)
            .map(|i| T::of_f64((((i + seed) * 7919) % 1009) as f64 / 1009.0 - 0.4))
            .collect()
    }

    /// Values equal, a zero's sign aside (the vectors negate a difference where realfft
    /// subtracts the other way round).
    fn same<T: FftReal>(a: &[Complex<T>], b: &[Complex<T>]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
    }

    fn matches_realfft<T: FftReal>() {
        let mut planner = FftPlanner::<T>::new();
        let mut real = RealFftPlanner::<T>::new();
        let lengths = (2..=80)
            .step_by(2)
            .chain([254, 1000, 2048, 4094, 4096, 2 * 1031]);
        for n in lengths {
            let forward = Forward::new(n, planner.plan_fft_forward(n / 2));
            let inverse = Inverse::new(n, planner.plan_fft_inverse(n / 2));
            let (theirs, theirs_inv) = (real.plan_fft_forward(n), real.plan_fft_inverse(n));
            let x = signal::<T>(n, n);
            let (mut ours_out, mut their_out) =
                (forward.make_output_vec(), theirs.make_output_vec());
            forward.process(&mut x.clone(), &mut ours_out).unwrap();
            theirs.process(&mut x.clone(), &mut their_out).unwrap();
            assert!(same(&ours_out, &their_out), "forward, n = {n}");
            let (mut back, mut their_back) = (vec![T::zero(); n], vec![T::zero(); n]);
            inverse.process(&mut ours_out.clone(), &mut back).unwrap();
            theirs_inv.process(&mut their_out, &mut their_back).unwrap();
            assert!(back == their_back, "inverse, n = {n}");
            // The round trip gives `n` times the signal.
            let scale = T::of_f64(n as f64);
            for (b, v) in back.iter().zip(&x) {
                assert!(
                    (*b / scale - *v).abs().as_f64() < 1e-5,
                    "round trip, n = {n}"
                );
            }
        }
    }

    #[test]
    fn the_even_transforms_match_realfft_f32() {
        matches_realfft::<f32>();
    }

    #[test]
    fn the_even_transforms_match_realfft_f64() {
        matches_realfft::<f64>();
    }

    /// The vector twist against the scalar one, pair by pair, from every length's first pair
    /// (called directly: `twist` would take the scalar path under `UFUNC_ISA=baseline`).
    #[cfg(target_arch = "x86_64")]
    fn vectors_match_scalar<T: FftReal>() {
        for n in (2..=100).step_by(2) {
            let m = n / 2;
            let twiddles: Vec<Complex<T>> = (1..=pair_count(n)).map(|k| twiddle(k, n)).collect();
            let bins: Vec<Complex<T>> = signal::<T>(2 * (m + 1), n)
                .chunks(2)
                .map(|c| Complex::new(c[0], c[1]))
                .collect();
            for forward in [true, false] {
                let mut want = bins.clone();
                if forward {
                    twist_scalar(&mut want, m, &twiddles, 0, forward_pair);
                } else {
                    twist_scalar(&mut want, m, &twiddles, 0, inverse_pair);
                }
                let mut got = bins.clone();
                // SAFETY: AVX is present (checked by the caller); `got` holds `m + 1` bins.
                let done = unsafe { simd::twist(&mut got, m, &twiddles, forward) };
                assert_eq!(
                    done,
                    twiddles.len() / (32 / size_of::<Complex<T>>())
                        * (32 / size_of::<Complex<T>>())
                );
                if forward {
                    twist_scalar(&mut got, m, &twiddles, done, forward_pair);
                } else {
                    twist_scalar(&mut got, m, &twiddles, done, inverse_pair);
                }
                assert!(same(&got, &want), "n = {n}, forward = {forward}");
            }
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_vector_twist_matches_the_scalar_one() {
        if !is_x86_feature_detected!("avx") {
            eprintln!("SKIPPED the_vector_twist_matches_the_scalar_one: no AVX");
            return;
        }
        vectors_match_scalar::<f32>();
        vectors_match_scalar::<f64>();
    }

    #[test]
    fn bad_buffers_and_invalid_ends_are_errors_as_in_realfft() {
        let mut planner = FftPlanner::<f64>::new();
        let forward = Forward::new(8, planner.plan_fft_forward(4));
        let inverse = Inverse::new(8, planner.plan_fft_inverse(4));
        let mut out = vec![Complex::default(); 4];
        assert!(matches!(
            forward.process(&mut [0.0; 8], &mut out),
            Err(FftError::OutputBuffer(5, 4))
        ));
        assert!(matches!(
            forward.process(&mut [0.0; 6], &mut [Complex::default(); 5]),
            Err(FftError::InputBuffer(8, 6))
        ));
        let mut spectrum = vec![Complex::new(1.0, 0.5); 5];
        let mut back = [0.0; 8];
        assert!(matches!(
            inverse.process(&mut spectrum, &mut back),
            Err(FftError::InputValues(true, true))
        ));
    }
}
