// The support kernels of device FFTs (cuda/fft.rs), after the prelude: gathering an input view
// into a padded or cropped C-order buffer, clearing the imaginary parts a real inverse cannot
// hold, and scaling by the norm's factor. Grid-stride loops with 64-bit indexing; the status
// word is never written (nothing here can panic).

__device__ inline void __ufunc_fft_put(f32& o, f32 x) { o = x; }
__device__ inline void __ufunc_fft_put(f64& o, f64 x) { o = x; }
__device__ inline void __ufunc_fft_put(c32& o, f32 x) { o.re = x; o.im = 0.0f; }
__device__ inline void __ufunc_fft_put(c64& o, f64 x) { o.re = x; o.im = 0.0; }
__device__ inline void __ufunc_fft_put(c32& o, c32 x) { o = x; }
__device__ inline void __ufunc_fft_put(c64& o, c64 x) { o = x; }

#define __UFUNC_FFT_GRID(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

template <class I, class O>
__device__ inline void __ufunc_fft_gather(long long n, int ndim, const long long* shape,
                                          const long long* limit, const long long* strides,
                                          const I* in, O* out) {
    __UFUNC_FFT_GRID(i, n) {
        long long rest = i, off = 0;
        bool inside = true;
        // The outermost index is what the inner axes leave (i is below the shape's product).
        for (int d = ndim - 1; d >= 0; --d) {
            long long k = d > 0 ? rest % shape[d] : rest;
            if (d > 0) rest /= shape[d];
            if (k >= limit[d]) inside = false;
            else off += k * strides[d];
        }
        if (inside) __ufunc_fft_put(out[i], in[off]);
        else out[i] = O();
    }
}

#define __UFUNC_FFT_GATHER(I, O) \
    extern "C" __global__ void ufunc_fft_gather_##I##_##O( \
        long long n, int ndim, const long long* shape, const long long* limit, \
        const long long* strides, const I* in, O* out, int* status) { \
        __ufunc_fft_gather<I, O>(n, ndim, shape, limit, strides, in, out); \
    }
__UFUNC_FFT_GATHER(f32, f32)
__UFUNC_FFT_GATHER(f32, c32)
__UFUNC_FFT_GATHER(c32, c32)
__UFUNC_FFT_GATHER(f64, f64)
__UFUNC_FFT_GATHER(f64, c64)
__UFUNC_FFT_GATHER(c64, c64)

// Element (o, k, j) of data of shape (outer, len, inner), for k = 0 and k = nyquist (if >= 0).
template <class C>
__device__ inline void __ufunc_fft_hermitian(long long outer, long long len, long long inner,
                                             long long nyquist, C* data) {
    __UFUNC_FFT_GRID(i, outer * inner * 2) {
        long long j = i % inner, rest = i / inner;
        long long k = rest % 2 == 0 ? 0 : nyquist, o = rest / 2;
        if (k >= 0 && k < len) data[(o * len + k) * inner + j].im = 0;
    }
}

extern "C" __global__ void ufunc_fft_hermitian_c32(long long outer, long long len, long long inner,
                                                   long long nyquist, c32* data, int* status) {
    __ufunc_fft_hermitian(outer, len, inner, nyquist, data);
}
extern "C" __global__ void ufunc_fft_hermitian_c64(long long outer, long long len, long long inner,
                                                   long long nyquist, c64* data, int* status) {
    __ufunc_fft_hermitian(outer, len, inner, nyquist, data);
}

// `n` floats (complex numbers count twice) times the double whose bits are `scale_bits`.
template <class T>
__device__ inline void __ufunc_fft_scale(long long n, long long scale_bits, T* data) {
    union { long long bits; double value; } s;
    s.bits = scale_bits;
    const T f = (T)s.value;
    __UFUNC_FFT_GRID(i, n) { data[i] = data[i] * f; }
}

extern "C" __global__ void ufunc_fft_scale_f32(long long n, long long scale_bits, f32* data, int* status) {
    __ufunc_fft_scale(n, scale_bits, data);
}
extern "C" __global__ void ufunc_fft_scale_f64(long long n, long long scale_bits, f64* data, int* status) {
    __ufunc_fft_scale(n, scale_bits, data);
}
