// The registration's device kernels (registration/device.rs), after the prelude: spectrum
// powers and the cross-correlation's peak as reductions over a fixed number of slots (slot s
// takes elements s, s + slots, ...: the same partition on every grid, so results do not depend
// on the device; the peaks' last stages fold in one block, in an order of their own that any
// grouping keeps), the Fourier crop, and the upsampled DFT around the coarse peak. Grid-stride
// loops with 64-bit indexing, but for the two one-block kernels; nothing here can panic, the
// status word is never written.

#define __UFUNC_REG_GRID(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

// Memory shared by the block of a cooperative launch (sim.h has its own).
#ifndef __UFUNC_BLOCK_SHARED
#define __UFUNC_BLOCK_SHARED __shared__
#endif

// fold(load(i), i) for i = first, first + stride, .. below n, in order, with the loads of
// `K` terms issued before they are folded: a plain loop's loads go one after another (a loop
// of 64 took 27 us on an H200, 9 us in batches of 8). Every result stays bit for bit the
// plain loop's.
template <int K, typename Load, typename Fold>
__device__ inline void ufunc_reg_strided(long long first, long long n, long long stride,
                                         Load load, Fold fold) {
    long long i = first;
    for (; i + (K - 1) * stride < n; i += K * stride) {
        decltype(load(i)) terms[K];
#pragma unroll
        for (int k = 0; k < K; ++k) terms[k] = load(i + k * stride);
#pragma unroll
        for (int k = 0; k < K; ++k) fold(terms[k], i + k * stride);
    }
    for (; i < n; i += stride) fold(load(i), i);
}

// Σ|s|² over the full spectrum of an image `nx` wide, from its half (rows x cols), for two
// spectra `a` and `b` at once: the columns that have a mirror count twice. Partial sums per
// slot, in double: `a`'s in `partial[0, slots)`, `b`'s in `partial[slots, 2 slots)`.
extern "C" __global__ void ufunc_reg_power(long long rows, long long cols, long long nx,
                                           long long slots, const c32* a, const c32* b,
                                           double* partial, int* status) {
    long long n = rows * cols;
    __UFUNC_REG_GRID(item, 2 * slots) {
        const c32* s = item < slots ? a : b;
        long long slot = item % slots;
        double acc = 0.0;
        ufunc_reg_strided<8>(
            slot, n, slots, [&](long long i) { return s[i]; },
            [&](c32 v, long long i) {
                long long c = i % cols;
                bool twice = c > 0 && !(nx % 2 == 0 && c == cols - 1);
                double re = v.re, im = v.im;
                acc += (re * re + im * im) * (twice ? 2.0 : 1.0);
            });
        partial[item] = acc;
    }
}

// The frames' means left out of a registration (the movie path's): the cross-power spectrum's
// zero frequency cleared, and the spectra `a` and `b`'s zero-frequency powers taken from their
// energies in `state[slot]` and `state[slot + 1]`; an energy left below __UFUNC_REG_BLANK of the
// whole is a blank frame's rounding, and 0 (the host's `energy_without_mean`).
#define __UFUNC_REG_BLANK 1e-12
extern "C" __global__ void ufunc_reg_zero_mean(long long slot, const c32* a, const c32* b,
                                               c32* product, double* state, int* status) {
    __UFUNC_REG_GRID(k, 1) {
        double ar = a[0].re, ai = a[0].im, br = b[0].re, bi = b[0].im;
        double mean_powers[2] = {ar * ar + ai * ai, br * br + bi * bi};
        for (int i = 0; i < 2; ++i) {
            double energy = state[slot + i];
            double rest = energy - mean_powers[i];
            state[slot + i] = rest <= __UFUNC_REG_BLANK * energy ? 0.0 : rest;
        }
        product[0].re = 0.0f;
        product[0].im = 0.0f;
    }
}

// The next stage of `batches` sums side by side: `slots` partial sums of each one's `n`
// (batch `k` at `in[k n, (k + 1) n)`, its partials at `out[k slots, (k + 1) slots)`).
extern "C" __global__ void ufunc_reg_sum(long long n, long long slots, long long batches,
                                         const double* in, double* out, int* status) {
    __UFUNC_REG_GRID(item, batches * slots) {
        const double* batch = in + (item / slots) * n;
        double acc = 0.0;
        ufunc_reg_strided<8>(
            item % slots, n, slots, [&](long long i) { return batch[i]; },
            [&](double v, long long) { acc += v; });
        out[item] = acc;
    }
}

// The largest |v| (NaN ignored) and the first index holding it, per slot; index -1 where a
// slot saw no number. The value is kept signed.
extern "C" __global__ void ufunc_reg_argmax(long long n, long long slots, const f32* v,
                                            f32* best, long long* at, int* status) {
    __UFUNC_REG_GRID(slot, slots) {
        float top = -1.0f, value = 0.0f;
        long long where = -1;
        ufunc_reg_strided<8>(
            slot, n, slots, [&](long long i) { return v[i]; },
            [&](float x, long long i) {
                float a = fabsf(x);
                if (a > top) {
                    top = a;
                    value = x;
                    where = i;
                }
            });
        best[slot] = value;
        at[slot] = where;
    }
}

// An argmax candidate: the value kept (signed), its index (-1: none yet).
struct ufunc_reg_candidate {
    float top, value;
    long long where;
};

// `c` with the candidate (`value` at `index`) folded in: the larger |value|, the smaller index
// on ties; an index below 0 is no candidate.
__device__ inline void ufunc_reg_fold(ufunc_reg_candidate& c, float value, long long index) {
    if (index < 0) return;
    float a = fabsf(value);
    if (a > c.top || (a == c.top && index < c.where)) {
        c.top = a;
        c.value = value;
        c.where = index;
    }
}

// A candidate as the stages store it: its value and its index.
struct ufunc_reg_pair {
    float value;
    long long at;
};

// The next stage of an argmax: the largest |value| of `n` candidates, the smallest index on
// ties.
extern "C" __global__ void ufunc_reg_argmax_pairs(long long n, long long slots, const f32* in_best,
                                                  const long long* in_at, f32* best,
                                                  long long* at, int* status) {
    __UFUNC_REG_GRID(slot, slots) {
        ufunc_reg_candidate c = {-1.0f, 0.0f, -1};
        ufunc_reg_strided<8>(
            slot, n, slots, [&](long long i) { return ufunc_reg_pair{in_best[i], in_at[i]}; },
            [&](ufunc_reg_pair p, long long) { ufunc_reg_fold(c, p.value, p.at); });
        best[slot] = c.value;
        at[slot] = c.where;
    }
}

// The half spectrum of a (cy, cx) image from the low frequencies of a (ny, *) one's half.
extern "C" __global__ void ufunc_reg_crop(long long ny, long long cols, long long cy,
                                          long long out_cols, const c32* s, c32* out,
                                          int* status) {
    __UFUNC_REG_GRID(i, cy * out_cols) {
        long long r = i / out_cols, c = i % out_cols;
        long long source = r < (cy + 1) / 2 ? r : ny - (cy - r);
        out[i] = s[source * cols + c];
    }
}

// kernel[r, k] = exp(2πi (r - offset) f(k) / (n U)), f(k) the signed frequency of bin k, the
// offset the frame's `state[2 + axis]` (a whole number: the grid's centre less the rounded
// coarse peak times U).
extern "C" __global__ void ufunc_reg_dft_kernel(long long n, long long region, long long upsample,
                                                long long axis, const double* state, c64* kernel,
                                                int* status) {
    const double offset = state[2 + axis];
    __UFUNC_REG_GRID(i, region * n) {
        long long r = i / n, k = i % n;
        double f = k <= (n - 1) / 2 ? (double)k : (double)k - (double)n;
        double phase = 2.0 * 3.141592653589793 * ((double)r - offset) * f /
                       ((double)n * (double)upsample);
        kernel[i].re = cos(phase);
        kernel[i].im = sin(phase);
    }
}

// Rows r of the upsampled grid that one thread of `ufunc_reg_rows_times_half` takes.
#define __UFUNC_REG_ROWS 8

// Part p of g[r, j] = Σ_ky ey[r, ky] half[ky, j] (region x cols), ky in the p-th `chunk` of
// rows, in the spectrum's precision as the host: parts[p][r][j]. Splitting the sum keeps
// enough threads busy (a thread per output alone leaves most of the device idle); a thread
// takes `__UFUNC_REG_ROWS` rows r, so that each term of `half` is read once for all of them.
// Items: nparts x row groups x cols. On an H200 this is a registration's longest kernel,
// 116 us (124 with a thread per row); converting `ey` to float once would be the next try.
extern "C" __global__ void ufunc_reg_rows_times_half(long long ny, long long cols,
                                                     long long region, long long chunk,
                                                     const c64* ey, const c32* half, c32* parts,
                                                     int* status) {
    const long long outputs = region * cols, nparts = (ny + chunk - 1) / chunk;
    const long long groups = (region + __UFUNC_REG_ROWS - 1) / __UFUNC_REG_ROWS;
    __UFUNC_REG_GRID(i, nparts * groups * cols) {
        long long p = i / (groups * cols), r0 = i % (groups * cols) / cols * __UFUNC_REG_ROWS;
        long long j = i % cols, rows = region - r0 < __UFUNC_REG_ROWS ? region - r0 : __UFUNC_REG_ROWS;
        long long end = (p + 1) * chunk < ny ? (p + 1) * chunk : ny;
        float re[__UFUNC_REG_ROWS] = {}, im[__UFUNC_REG_ROWS] = {};
#pragma unroll 4
        for (long long ky = p * chunk; ky < end; ++ky) {
            c32 h = half[ky * cols + j];
#pragma unroll
            for (int k = 0; k < __UFUNC_REG_ROWS; ++k) {
                if (k < rows) {
                    c64 w = ey[(r0 + k) * ny + ky];
                    float wr = (float)w.re, wi = (float)w.im;
                    re[k] += wr * h.re - wi * h.im;
                    im[k] += wr * h.im + wi * h.re;
                }
            }
        }
#pragma unroll
        for (int k = 0; k < __UFUNC_REG_ROWS; ++k) {
            if (k < rows) {
                c32* out = parts + p * outputs + (r0 + k) * cols + j;
                out->re = re[k];
                out->im = im[k];
            }
        }
    }
}

// out[i] = Σ_p parts[p][i] over `nparts` parts of `n` outputs, in order, in `Real`.
template <typename Part, typename Real>
__device__ inline void ufunc_reg_add_parts(long long n, long long nparts, const Part* parts,
                                           c64* out) {
    __UFUNC_REG_GRID(i, n) {
        Real re = 0, im = 0;
        ufunc_reg_strided<8>(
            i, nparts * n, n, [&](long long k) { return parts[k]; },
            [&](Part v, long long) {
                re += v.re;
                im += v.im;
            });
        out[i].re = re;
        out[i].im = im;
    }
}

extern "C" __global__ void ufunc_reg_sum_parts_c32(long long n, long long nparts, const c32* parts,
                                                   c64* g, int* status) {
    ufunc_reg_add_parts<c32, float>(n, nparts, parts, g);
}

// A term of `ufunc_reg_upsampled`'s sum: b[r, kx] and ex[s, kx].
struct ufunc_reg_term {
    double br, bi;
    c64 w;
};

// Part p of out[r, s] = Σ_kx b[r, kx] ex[s, kx], kx in the p-th `chunk` of columns, with b the
// full row contraction built from g: the columns past the half are the conjugate of the
// mirrored column, plus, for an even `ny`, the Nyquist row's term (its frequency does not
// change sign under mirroring). parts[p][r][s].
extern "C" __global__ void ufunc_reg_upsampled(long long ny, long long nx, long long cols,
                                               long long region, long long chunk, const c64* g,
                                               const c64* ey, const c64* ex, const c32* half,
                                               c64* parts, int* status) {
    const long long outputs = region * region, nparts = (nx + chunk - 1) / chunk;
    __UFUNC_REG_GRID(i, nparts * outputs) {
        long long p = i / outputs, r = i % outputs / region, s = i % region;
        long long end = (p + 1) * chunk < nx ? (p + 1) * chunk : nx;
        double re = 0.0, im = 0.0;
        ufunc_reg_strided<4>(
            p * chunk, end, 1,
            [&](long long kx) {
                ufunc_reg_term t;
                if (kx < cols) {
                    t.br = g[r * cols + kx].re;
                    t.bi = g[r * cols + kx].im;
                } else {
                    long long j = nx - kx;
                    t.br = g[r * cols + j].re;
                    t.bi = -g[r * cols + j].im;
                    if (ny % 2 == 0) {
                        double e = 2.0 * ey[r * ny + ny / 2].im;
                        c32 h = half[(ny / 2) * cols + j];
                        // (i e) * conj(h) = e h.im + i e h.re
                        t.br += e * (double)h.im;
                        t.bi += e * (double)h.re;
                    }
                }
                t.w = ex[s * nx + kx];
                return t;
            },
            [&](const ufunc_reg_term& t, long long) {
                re += t.br * t.w.re - t.bi * t.w.im;
                im += t.br * t.w.im + t.bi * t.w.re;
            });
        parts[i].re = re;
        parts[i].im = im;
    }
}

extern "C" __global__ void ufunc_reg_sum_parts_c64(long long n, long long nparts, const c64* parts,
                                                   c64* out, int* status) {
    ufunc_reg_add_parts<c64, double>(n, nparts, parts, out);
}

// A frame's registration, kept on the device (`state`, doubles): [0, 2) the coarse peak as a
// signed shift (y, x), [2, 4) the upsampled grid's offsets, [4, 6) the refinement's offset from
// the coarse peak in pixels, [6, 8) the peak's value (re, im), [8, 10) Σ|S|² of the reference
// and the moving spectrum (unscaled). The host's `Peak`, field for field.

// The totals of two sums' `n` partial sums each (side by side), in order, into `state[slot]`
// and `state[slot + 1]`.
extern "C" __global__ void ufunc_reg_total(long long n, long long slot, const double* partial,
                                           double* state, int* status) {
    __UFUNC_REG_GRID(k, 2) {
        double acc = 0.0;
        ufunc_reg_strided<8>(
            k * n, (k + 1) * n, 1, [&](long long i) { return partial[i]; },
            [&](double v, long long) { acc += v; });
        state[slot + k] = acc;
    }
}

// The coarse peak from `n` argmax candidates (the largest |value|, the smallest index on ties;
// none, as for an all-NaN input: index 0 and NaN), wrapped to (-n/2, n/2] per axis of a
// (ny, nx) image, and the grid of the upsampled DFT around it: `region` points per axis,
// centred at trunc(region / 2). One block (a cooperative launch): the candidates fold in any
// grouping to the same one.
extern "C" __global__ void ufunc_reg_peak(long long n, long long ny, long long nx,
                                          long long upsample, long long region,
                                          const f32* best, const long long* at, double* state,
                                          int* status) {
    __UFUNC_BLOCK_SHARED ufunc_reg_candidate folded[1024];
    if (blockIdx.x > 0) return;
    const unsigned t = threadIdx.x, threads = blockDim.x;
    ufunc_reg_candidate c = {-1.0f, 0.0f, -1};
    ufunc_reg_strided<8>(
        t, n, threads, [&](long long i) { return ufunc_reg_pair{best[i], at[i]}; },
        [&](ufunc_reg_pair p, long long) { ufunc_reg_fold(c, p.value, p.at); });
    folded[t] = c;
    __syncthreads();
    for (unsigned step = 1; step < threads; step *= 2) {
        if (t % (2 * step) == 0 && t + step < threads)
            ufunc_reg_fold(folded[t], folded[t + step].value, folded[t + step].where);
        __syncthreads();
    }
    if (t == 0) {
        c = folded[0];
        double v = (double)c.value;
        long long where = c.where;
        if (where < 0) {
            where = 0;
            v = nan("");
        }
        long long iy = where / nx, ix = where % nx;
        double cy = iy > ny / 2 ? (double)iy - (double)ny : (double)iy;
        double cx = ix > nx / 2 ? (double)ix - (double)nx : (double)ix;
        double u = (double)upsample, centre = trunc((double)region / 2.0);
        state[0] = cy;
        state[1] = cx;
        state[2] = centre - round(cy * u);
        state[3] = centre - round(cx * u);
        state[4] = 0.0;
        state[5] = 0.0;
        state[6] = v;
        state[7] = 0.0;
    }
}

// Whether |up[i]| = `a` goes before |up[at]| = `top` in NumPy's argmax: the first NaN before
// anything, else the largest, the first on ties (at < 0: nothing yet). An order of all the
// candidates, so any grouping of them picks the same one.
__device__ inline bool ufunc_reg_before(double a, long long i, double top, long long at) {
    if (at < 0) return true;
    if (isnan(top)) return isnan(a) && i < at;
    return isnan(a) || a > top || (a == top && i < at);
}

// The refinement, by one block (a cooperative launch): the largest |up| of the (region x
// region) upsampled DFT (the first on ties, the first NaN before any number, as NumPy's
// argmax), its offset from the grid's centre in pixels, and its value. The host reports the
// shift this chose (CUDA's hypot may break a near-tie differently from the host's), so the
// reported shift is the one the sum moved by. (One thread alone took 244 us on an H200.)
extern "C" __global__ void ufunc_reg_refine(long long region, long long upsample, const c64* up,
                                            double* state, int* status) {
    __UFUNC_BLOCK_SHARED double tops[1024];
    __UFUNC_BLOCK_SHARED long long ats[1024];
    if (blockIdx.x > 0) return;
    const unsigned t = threadIdx.x, threads = blockDim.x;
    double top = 0.0;
    long long at = -1;
    for (long long i = t; i < region * region; i += threads) {
        double a = hypot(up[i].re, up[i].im);
        if (ufunc_reg_before(a, i, top, at)) {
            top = a;
            at = i;
        }
    }
    tops[t] = top;
    ats[t] = at;
    __syncthreads();
    for (unsigned step = 1; step < threads; step *= 2) {
        if (t % (2 * step) == 0 && t + step < threads &&
            ufunc_reg_before(tops[t + step], ats[t + step], tops[t], ats[t]) &&
            ats[t + step] >= 0) {
            tops[t] = tops[t + step];
            ats[t] = ats[t + step];
        }
        __syncthreads();
    }
    if (t == 0) {
        at = ats[0];
        double u = (double)upsample, centre = trunc((double)region / 2.0);
        state[4] = ((double)(at / region) - centre) / u;
        state[5] = ((double)(at % region) - centre) / u;
        state[6] = up[at].re;
        state[7] = up[at].im;
    }
}

// The phase ramps that move an image (ny, nx), half spectrum (ny, cols), by a shift: py[k] =
// exp(-2πi f(k) dy / ny) over the rows' signed frequencies, px[k] = exp(-2πi k dx / nx). The
// shift is a frame's registration (`state`, with `upsample`; an axis of length 1 moves by 0)
// or, with `upsample` 0, the two doubles at `state`; with `from_ny` > 0 it is in the pixels of
// an image (from_ny, from_nx), scaled to this one's as the host's `Shapes::to_stored`. In
// double, rounded to float, as the host (CUDA's cos and sin are within 2 ulp of the host's: a
// ramp may differ in its last bit).
extern "C" __global__ void ufunc_reg_phases(long long ny, long long nx, long long cols,
                                            long long from_ny, long long from_nx,
                                            long long upsample, const double* state, c32* py,
                                            c32* px, int* status) {
    double dy = state[0], dx = state[1];
    if (upsample > 0) {
        // The registered image's axes of length 1 move by 0.
        double u = (double)upsample;
        dy = round(dy * u) / u + state[4];
        dx = round(dx * u) / u + state[5];
        if ((from_ny > 0 ? from_ny : ny) == 1) dy = 0.0;
        if ((from_nx > 0 ? from_nx : nx) == 1) dx = 0.0;
    }
    if (from_ny > 0) {
        dy = dy * (double)ny / (double)from_ny;
        dx = dx * (double)nx / (double)from_nx;
    }
    __UFUNC_REG_GRID(i, ny + cols) {
        double phase;
        c32* out;
        if (i < ny) {
            double f = i <= (ny - 1) / 2 ? (double)i : (double)i - (double)ny;
            phase = -2.0 * 3.141592653589793 * f * dy / (double)ny;
            out = py + i;
        } else {
            phase = -2.0 * 3.141592653589793 * (double)(i - ny) * dx / (double)nx;
            out = px + (i - ny);
        }
        out->re = (float)cos(phase);
        out->im = (float)sin(phase);
    }
}
