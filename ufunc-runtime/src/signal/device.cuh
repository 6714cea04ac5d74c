// The convolution kernels of signal/device.rs, after the prelude: the direct sum and the
// overlap-add accumulation. Grid-stride loops with 64-bit indexing over n-d index spaces whose
// shapes and strides are device arrays of `ndim` 64-bit integers (ndim <= 32); nothing here
// can panic, the status word is never written.

#define __UFUNC_CONV_GRID(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

// out (C order, shape `full`) = the full convolution of a and b summed directly: for each
// output point, over the kernel points of b along the convolved axes (`conv[d]` != 0) in C
// order, a[o - j] * b[j] where o - j is inside a. Other axes broadcast: an input of length 1
// there is read at 0. The order of the sum is the host's (signal/direct.rs).
template <class T>
__device__ inline void __ufunc_conv_direct(long long n, int ndim, const long long* full,
                                           const long long* conv, const long long* a_shape,
                                           const long long* a_strides, const long long* b_shape,
                                           const long long* b_strides, long long points,
                                           const T* a, const T* b, T* out) {
    __UFUNC_CONV_GRID(i, n) {
        long long o[32];
        long long rest = i;
        for (int d = ndim - 1; d >= 0; --d) {
            o[d] = rest % full[d];
            rest /= full[d];
        }
        T acc = T();
        for (long long p = 0; p < points; ++p) {
            long long q = p, off_a = 0, off_b = 0;
            bool inside = true;
            for (int d = ndim - 1; d >= 0; --d) {
                if (conv[d]) {
                    long long j = q % b_shape[d];
                    q /= b_shape[d];
                    long long x = o[d] - j;
                    if (x < 0 || x >= a_shape[d]) inside = false;
                    off_a += x * a_strides[d];
                    off_b += j * b_strides[d];
                } else {
                    off_a += (a_shape[d] == 1 ? 0 : o[d]) * a_strides[d];
                    off_b += (b_shape[d] == 1 ? 0 : o[d]) * b_strides[d];
                }
            }
            if (inside) acc = acc + a[off_a] * b[off_b];
        }
        out[i] = acc;
    }
}

// out[offset + Σ k_d out_strides[d]] += piece[Σ k_d piece_strides[d]] for every index k of
// `shape`: one overlap-add piece added into the full result.
template <class T>
__device__ inline void __ufunc_conv_add(long long n, int ndim, const long long* shape,
                                        const long long* piece_strides,
                                        const long long* out_strides, long long offset,
                                        const T* piece, T* out) {
    __UFUNC_CONV_GRID(i, n) {
        long long rest = i, src = 0, dst = offset;
        for (int d = ndim - 1; d >= 0; --d) {
            long long k = rest % shape[d];
            rest /= shape[d];
            src += k * piece_strides[d];
            dst += k * out_strides[d];
        }
        out[dst] = out[dst] + piece[src];
    }
}

#define __UFUNC_CONV_KERNELS(T) \
    extern "C" __global__ void ufunc_conv_direct_##T( \
        long long n, int ndim, const long long* full, const long long* conv, \
        const long long* a_shape, const long long* a_strides, const long long* b_shape, \
        const long long* b_strides, long long points, const T* a, const T* b, T* out, \
        int* status) { \
        __ufunc_conv_direct<T>(n, ndim, full, conv, a_shape, a_strides, b_shape, b_strides, \
                               points, a, b, out); \
    } \
    extern "C" __global__ void ufunc_conv_add_##T( \
        long long n, int ndim, const long long* shape, const long long* piece_strides, \
        const long long* out_strides, long long offset, const T* piece, T* out, int* status) { \
        __ufunc_conv_add<T>(n, ndim, shape, piece_strides, out_strides, offset, piece, out); \
    }
__UFUNC_CONV_KERNELS(f32)
__UFUNC_CONV_KERNELS(f64)
__UFUNC_CONV_KERNELS(c32)
__UFUNC_CONV_KERNELS(c64)
