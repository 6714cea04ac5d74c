//! The method kernels of a `#[vectorize]` body `f(T, T) -> T` (`reduce`, `accumulate`), beside
//! its element-wise kernels in the same module. Each walks a geometry `g` of kept and reduced
//! axes (the CPU engine's ordered and merged axes): `g = [nk, nr, kept shape, kept input
//! strides, kept output strides, reduced shape, reduced input strides, reduced output
//! strides]`, element strides.
//!
//! - `{name}_reduce_warps`: a warp per output element, lanes striding over its reduced
//!   elements (coalesced where the reduced axis is contiguous), a shuffle tree;
//! - `{name}_reduce_blocks`: a block per (output element, chunk of its reduced elements), a
//!   shuffle tree per warp, then across warps, one partial per task (the first pass of a
//!   two-pass reduction, the second being `_warps` over the partials);
//! - `{name}_reduce_cols`: a thread per output element walking its reduced elements in order
//!   (adjacent threads read adjacent columns of an outer-axis reduction); with `each`, every
//!   running value is written too (an accumulation);
//! - `{name}_chunk_totals`, then `{name}_scan_blocks`: the first and last passes of an
//!   accumulation of long runs of an associative `f`, a block per (output element, chunk):
//!   the chunks' totals, in order; between them `_reduce_cols` with `each` gives their running
//!   values; then each chunk is scanned from the value before it. Every pair is combined in
//!   order (left, then right), so `f` need not commute;
//! - `{name}_at`: a thread per (place, element of the indexed sub-array), applying the place's
//!   points in their order (kept axes: the sub-array's, strides of `a` and of `b`; `table`:
//!   where each place's points start in `b_at`, each place's element offset in `a`, and
//!   `b_at`, each point's offset in `b`, the points sorted by place).
//!
//! `_warps`, `_blocks`, `_chunk_totals` and `_scan_blocks` synchronise their threads (launched
//! as cooperative); `_warps` and `_blocks` need `blockDim.x` to be a multiple of `warpSize`,
//! `_chunk_totals` and `_scan_blocks` at most 1024.

use super::{STATUS_ENTRY, STATUS_PARAM};

/// The method kernels of `device_fn` over elements of C++ type `t`.
pub(super) fn emit(name: &str, device_fn: &str, t: &str) -> String {
    format!(
        r#"#ifndef __UFUNC_BLOCK_SHARED
#define __UFUNC_BLOCK_SHARED __shared__
#endif
struct {name}_geom {{
    int nk, nr;
    const long long *kshape, *ka, *kout, *rshape, *ra, *rout;
}};
__device__ inline {name}_geom {name}_geom_of(const long long* g) {{
    {name}_geom r;
    r.nk = (int)g[0];
    r.nr = (int)g[1];
    r.kshape = g + 2;
    r.ka = r.kshape + r.nk;
    r.kout = r.ka + r.nk;
    r.rshape = r.kout + r.nk;
    r.ra = r.rshape + r.nr;
    r.rout = r.ra + r.nr;
    return r;
}}
// The element offset of C-order flat index `i` over `nd` axes.
__device__ inline long long {name}_offset(long long i, int nd, const long long* shape, const long long* strides) {{
    if (nd == 1) return i * strides[0];
    long long off = 0;
    for (int d = nd - 1; d >= 0; --d) {{
        off += (i % shape[d]) * strides[d];
        i /= shape[d];
    }}
    return off;
}}
// Task `task` of a pass over chunks: output element `o`, its chunk `c` of `parts`, the
// reduced elements `start..end` of that chunk.
struct {name}_chunk {{
    long long o, c, start, end;
}};
__device__ inline {name}_chunk {name}_chunk_of(long long task, long long parts, long long chunk,
        long long n_red) {{
    {name}_chunk k;
    k.o = task / parts;
    k.c = task % parts;
    k.start = k.c * chunk;
    k.end = k.start + chunk < n_red ? k.start + chunk : n_red;
    return k;
}}
__device__ inline void {name}_push({t}& v, bool& has, {t} x) {{
    v = has ? {device_fn}(v, x) : x;
    has = true;
}}
// `v` combined, in order, with the reduced elements `r, r + step, ..` below `end` of `a`. One
// contiguous or strided reduced axis loads eight elements ahead: one load in flight per
// thread leaves a full reduction at a third of the memory bandwidth.
__device__ inline void {name}_run({t}& v, bool& has, const {t}* a, const {name}_geom& geo,
        long long r, long long end, long long step) {{
    if (geo.nr == 1) {{
        const long long s = geo.ra[0];
        for (; r + 7 * step < end; r += 8 * step) {{
            {t} x[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) x[k] = a[(r + k * step) * s];
#pragma unroll
            for (int k = 0; k < 8; ++k) {name}_push(v, has, x[k]);
        }}
    }}
    for (; r < end; r += step) {name}_push(v, has, a[{name}_offset(r, geo.nr, geo.rshape, geo.ra)]);
}}
// `v` of the lane `d` above, any type, in 32-bit words.
__device__ inline {t} {name}_shfl_down({t} v, unsigned d) {{
    const int words = (sizeof({t}) + 3) / 4;
    unsigned w[words];
    for (int k = 0; k < words; ++k) w[k] = 0;
    const unsigned char* src = (const unsigned char*)&v;
    unsigned char* bytes = (unsigned char*)w;
    for (unsigned k = 0; k < sizeof({t}); ++k) bytes[k] = src[k];
    for (int k = 0; k < words; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], d);
    {t} r = v;
    unsigned char* dst = (unsigned char*)&r;
    for (unsigned k = 0; k < sizeof({t}); ++k) dst[k] = bytes[k];
    return r;
}}
// Each warp's values combined into its lane 0 (lanes without one skipped) by a tree, lane i
// with lane i + d for d = 16, 8, .., 1, the lower lane's value on the left: not in lane order,
// so for reorderable functions only (as are the block and warp reductions that use it).
__device__ inline void {name}_warp_reduce({t}& v, bool& has) {{
    const unsigned lane = threadIdx.x % warpSize;
    for (unsigned d = warpSize / 2; d > 0; d /= 2) {{
        const {t} o = {name}_shfl_down(v, d);
        const int other = __shfl_down_sync(0xffffffffu, (int)has, d);
        if (other && lane + d < (unsigned)warpSize && threadIdx.x + d < blockDim.x) {name}_push(v, has, o);
    }}
}}
// The block's values combined into thread 0: each warp's tree, then the warps' results.
__device__ inline void {name}_block_reduce({t}& v, bool& has) {{
    __UFUNC_BLOCK_SHARED {t} vals[32];
    __UFUNC_BLOCK_SHARED int flags[32];
    {name}_warp_reduce(v, has);
    const unsigned lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    const unsigned warps = (blockDim.x + warpSize - 1) / warpSize;
    __syncthreads();
    if (lane == 0) {{
        vals[warp] = v;
        flags[warp] = has;
    }}
    __syncthreads();
    has = lane < warps && flags[lane];
    if (has) v = vals[lane];
    {name}_warp_reduce(v, has);
}}
extern "C" __global__ void {name}_reduce_warps(long long n_out, long long n_red,
        const long long* __restrict__ g, const {t}* __restrict__ in, {t}* __restrict__ out,
        {STATUS_PARAM}) {{
{STATUS_ENTRY}
    const {name}_geom geo = {name}_geom_of(g);
    const long long per_block = blockDim.x / warpSize;
    const unsigned lane = threadIdx.x % warpSize;
    for (long long base = blockIdx.x * per_block; base < n_out; base += gridDim.x * per_block) {{
        const long long o = base + threadIdx.x / warpSize;
        {t} v{{}};
        bool has = false;
        if (o < n_out) {{
            const {t}* a = in + {name}_offset(o, geo.nk, geo.kshape, geo.ka);
            {name}_run(v, has, a, geo, lane, n_red, warpSize);
        }}
        {name}_warp_reduce(v, has);
        if (o < n_out && lane == 0) out[{name}_offset(o, geo.nk, geo.kshape, geo.kout)] = v;
    }}
}}
extern "C" __global__ void {name}_reduce_blocks(long long n_out, long long n_red, long long parts,
        long long chunk, const long long* __restrict__ g, const {t}* __restrict__ in,
        {t}* __restrict__ partials, {STATUS_PARAM}) {{
{STATUS_ENTRY}
    const {name}_geom geo = {name}_geom_of(g);
    for (long long task = blockIdx.x; task < n_out * parts; task += gridDim.x) {{
        const {name}_chunk k = {name}_chunk_of(task, parts, chunk, n_red);
        const {t}* a = in + {name}_offset(k.o, geo.nk, geo.kshape, geo.ka);
        {t} v{{}};
        bool has = false;
        {name}_run(v, has, a, geo, k.start + threadIdx.x, k.end, blockDim.x);
        {name}_block_reduce(v, has);
        if (threadIdx.x == 0) partials[task] = v;
    }}
}}
extern "C" __global__ void {name}_reduce_cols(long long n_out, long long n_red, int each,
        const long long* __restrict__ g, const {t}* __restrict__ in, {t}* __restrict__ out,
        {STATUS_PARAM}) {{
{STATUS_ENTRY}
    const {name}_geom geo = {name}_geom_of(g);
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < n_out;
         o += (long long)gridDim.x * blockDim.x) {{
        const {t}* a = in + {name}_offset(o, geo.nk, geo.kshape, geo.ka);
        {t}* dst = out + {name}_offset(o, geo.nk, geo.kshape, geo.kout);
        {t} v = a[0];
        if (each) {{
            dst[0] = v;
            for (long long r = 1; r < n_red; ++r) {{
                v = {device_fn}(v, a[{name}_offset(r, geo.nr, geo.rshape, geo.ra)]);
                dst[{name}_offset(r, geo.nr, geo.rshape, geo.rout)] = v;
            }}
        }} else {{
            // In order, eight loads in flight.
            bool has = true;
            {name}_run(v, has, a, geo, 1, n_red, 1);
            dst[0] = v;
        }}
    }}
}}
// The elements `start..end` of the run at `a` scanned in order from `carry` (none where not
// `has_carry`), which ends as their total; with `w`, each running value is written there.
// Tiles of eight elements a thread: each thread's run scanned in registers, the threads'
// totals scanned in shared memory (Hillis-Steele, each step combining left then right), then
// each run combined with the total before it. Every thread of the block calls it.
__device__ inline void {name}_scan_chunk(const {t}* a, {t}* w, const {name}_geom& geo,
        long long start, long long end, {t}& carry, bool& has_carry) {{
    __UFUNC_BLOCK_SHARED {t} vals[1024];
    __UFUNC_BLOCK_SHARED int flags[1024];
    const int K = 8;
    for (long long tile = start; tile < end; tile += (long long)blockDim.x * K) {{
        const long long first = tile + (long long)threadIdx.x * K;
        {t} x[K];
        {t} run{{}};
        bool has = false;
        int m = 0;
#pragma unroll
        for (int k = 0; k < K; ++k) {{
            if (first + k < end) {{
                {name}_push(run, has, a[{name}_offset(first + k, geo.nr, geo.rshape, geo.ra)]);
                x[k] = run;
                m = k + 1;
            }}
        }}
        vals[threadIdx.x] = run;
        flags[threadIdx.x] = has;
        __syncthreads();
        for (unsigned d = 1; d < blockDim.x; d *= 2) {{
            {t} left{{}};
            int left_has = 0;
            if (threadIdx.x >= d) {{
                left = vals[threadIdx.x - d];
                left_has = flags[threadIdx.x - d];
            }}
            __syncthreads();
            if (left_has) {{
                bool h = true;
                if (flags[threadIdx.x]) {name}_push(left, h, vals[threadIdx.x]);
                vals[threadIdx.x] = left;
                flags[threadIdx.x] = 1;
            }}
            __syncthreads();
        }}
        if (w) {{
            {t} p = carry;
            bool p_has = has_carry;
            if (threadIdx.x > 0 && flags[threadIdx.x - 1]) {name}_push(p, p_has, vals[threadIdx.x - 1]);
#pragma unroll
            for (int k = 0; k < K; ++k) {{
                if (k < m) {{
                    {t} v = p;
                    bool v_has = p_has;
                    {name}_push(v, v_has, x[k]);
                    w[{name}_offset(first + k, geo.nr, geo.rshape, geo.rout)] = v;
                }}
            }}
        }}
        if (flags[blockDim.x - 1]) {name}_push(carry, has_carry, vals[blockDim.x - 1]);
        __syncthreads();
    }}
}}
// The total of each (output element, chunk of its elements), in order: the first pass of an
// accumulation of long runs.
extern "C" __global__ void {name}_chunk_totals(long long n_out, long long n_red, long long parts,
        long long chunk, const long long* __restrict__ g, const {t}* __restrict__ in,
        {t}* __restrict__ totals, {STATUS_PARAM}) {{
{STATUS_ENTRY}
    const {name}_geom geo = {name}_geom_of(g);
    for (long long task = blockIdx.x; task < n_out * parts; task += gridDim.x) {{
        const {name}_chunk k = {name}_chunk_of(task, parts, chunk, n_red);
        {t} total{{}};
        bool has = false;
        {name}_scan_chunk(in + {name}_offset(k.o, geo.nk, geo.kshape, geo.ka), nullptr, geo,
                          k.start, k.end, total, has);
        if (threadIdx.x == 0) totals[task] = total;
    }}
}}
// The running values of each (output element, chunk): the chunk scanned from the running total
// of the chunks before it (`carries`), the last pass of an accumulation of long runs.
extern "C" __global__ void {name}_scan_blocks(long long n_out, long long n_red, long long parts,
        long long chunk, const long long* __restrict__ g, const {t}* __restrict__ in,
        const {t}* __restrict__ carries, {t}* __restrict__ out, {STATUS_PARAM}) {{
{STATUS_ENTRY}
    const {name}_geom geo = {name}_geom_of(g);
    for (long long task = blockIdx.x; task < n_out * parts; task += gridDim.x) {{
        const {name}_chunk k = {name}_chunk_of(task, parts, chunk, n_red);
        {t} carry{{}};
        bool has_carry = k.c > 0;
        if (has_carry) carry = carries[task - 1];
        {name}_scan_chunk(in + {name}_offset(k.o, geo.nk, geo.kshape, geo.ka),
                          out + {name}_offset(k.o, geo.nk, geo.kshape, geo.kout), geo, k.start,
                          k.end, carry, has_carry);
    }}
}}
extern "C" __global__ void {name}_at(long long n_sub, long long n_places,
        const long long* __restrict__ table, const long long* __restrict__ g,
        {t}* __restrict__ a, const {t}* __restrict__ b, {STATUS_PARAM}) {{
{STATUS_ENTRY}
    const {name}_geom geo = {name}_geom_of(g);
    const long long* starts = table;
    const long long* places = table + n_places + 1;
    const long long* b_at = places + n_places;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n_places * n_sub;
         t += (long long)gridDim.x * blockDim.x) {{
        const long long p = t / n_sub, s = t % n_sub;
        {t}* x = a + places[p] + {name}_offset(s, geo.nk, geo.kshape, geo.ka);
        const {t}* pb = b + {name}_offset(s, geo.nk, geo.kshape, geo.kout);
        for (long long k = starts[p]; k < starts[p + 1]; ++k) {{
            *x = {device_fn}(*x, pb[b_at[k]]);
        }}
    }}
}}
"#
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn kernels_call_the_device_function() {
        let src = super::emit("add_f32", "body", "f32");
        for k in [
            "add_f32_reduce_warps",
            "add_f32_reduce_blocks",
            "add_f32_reduce_cols",
            "add_f32_chunk_totals",
            "add_f32_scan_blocks",
        ] {
            assert!(src.contains(&format!("void {k}(")), "{src}");
        }
        assert!(src.contains("v = has ? body(v, x) : x;"), "{src}");
        assert!(
            src.contains("__shfl_down_sync(0xffffffffu, w[k], d)"),
            "{src}"
        );
    }
}
