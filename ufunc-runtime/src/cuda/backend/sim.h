// ufunc's CUDA simulator: what the generated CUDA C++ needs from CUDA, for a host C++ compiler.
// The runtime sets the grid coordinates of each simulated thread and calls the kernel.
#include <math.h>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
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
// Cooperative launches run a block's threads at once, on host threads, one block after another:
// memory shared by a block is then one static, a warp is 4 threads, and a barrier stands in
// for __syncthreads. Warp shuffles are block-wide barriers here, so a cooperative kernel must
// reach each one with every thread of its block (as the method kernels do).
#define __UFUNC_BLOCK_SHARED static
static const int warpSize = 4;
static std::mutex __ufunc_sim_mutex;
static std::condition_variable __ufunc_sim_cv;
static unsigned __ufunc_sim_arrived = 0, __ufunc_sim_generation = 0;
inline void __syncthreads() {
    std::unique_lock<std::mutex> lock(__ufunc_sim_mutex);
    const unsigned generation = __ufunc_sim_generation;
    if (++__ufunc_sim_arrived == blockDim.x) {
        __ufunc_sim_arrived = 0;
        ++__ufunc_sim_generation;
        __ufunc_sim_cv.notify_all();
    } else {
        __ufunc_sim_cv.wait(lock, [&] { return generation != __ufunc_sim_generation; });
    }
}
// As CUDA: a source lane past the warp leaves the value unchanged.
template <class T> T __shfl_down_sync(unsigned, T v, unsigned delta) {
    static unsigned char slots[1024][sizeof(T)];
    std::memcpy(slots[threadIdx.x], &v, sizeof(T));
    __syncthreads();
    T r = v;
    const unsigned src = threadIdx.x + delta;
    if (threadIdx.x % warpSize + delta < (unsigned)warpSize && src < blockDim.x)
        std::memcpy(&r, slots[src], sizeof(T));
    __syncthreads();
    return r;
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
