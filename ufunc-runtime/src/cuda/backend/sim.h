// ufunc's CUDA simulator: what the generated CUDA C++ needs from CUDA, for a host C++ compiler.
// The runtime sets the grid coordinates of each simulated thread and calls the kernel.
#include <math.h>
#include <cmath>
#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
// Per block in CUDA; here launches of one module run one at a time, thread after thread.
#define __shared__ static thread_local
struct __ufunc_sim_uint3 { unsigned x, y, z; };
static thread_local __ufunc_sim_uint3 threadIdx, blockIdx, blockDim, gridDim;
extern "C" void __ufunc_sim_grid(unsigned block, unsigned blocks, unsigned thread, unsigned threads) {
    blockIdx = {block, 0, 0};
    gridDim = {blocks, 1, 1};
    threadIdx = {thread, 0, 0};
    blockDim = {threads, 1, 1};
}
// CUDA's classification functions are overloads for float and double; the C library's are macros.
template <class T> inline bool __ufunc_sim_isnan(T x) { return std::isnan(x); }
template <class T> inline bool __ufunc_sim_isinf(T x) { return std::isinf(x); }
template <class T> inline bool __ufunc_sim_isfinite(T x) { return std::isfinite(x); }
template <class T> inline bool __ufunc_sim_signbit(T x) { return std::signbit(x); }
#undef isnan
#undef isinf
#undef isfinite
#undef signbit
#define isnan __ufunc_sim_isnan
#define isinf __ufunc_sim_isinf
#define isfinite __ufunc_sim_isfinite
#define signbit __ufunc_sim_signbit
inline int atomicCAS(int* p, int expected, int desired) {
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
