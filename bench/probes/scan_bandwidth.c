/* What a running sum of 16M float32 can cost on this host's memory, next to the triad that
 * bench/RESULTS.md compares `add.accumulate` with (issue 12). Not part of the build:
 *
 *   gcc -O2 -mavx2 -fopenmp bench/probes/scan_bandwidth.c -o /tmp/scan_bandwidth
 *   OMP_NUM_THREADS=2 /tmp/scan_bandwidth
 *
 * Best of 15 per line, each thread on its own half of the arrays. The two scans are the same
 * in-register prefix sum (three shift-and-add steps in a vector, then the carry); they differ
 * only in how the result is written: `direct` stores each vector with a non-temporal store as
 * soon as it is computed, `blocked` computes a block of 8 KiB into an L1 buffer and then
 * streams the block out (as ufunc's scan kernels do today). Neither carries across the halves,
 * so they bound a scan from below rather than being one. */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N (16L * 1024 * 1024)
#define BLOCK 2112

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static inline __m256 prefix8(__m256 x) {
    __m256 s = _mm256_castsi256_ps(_mm256_slli_si256(_mm256_castps_si256(x), 4));
    x = _mm256_blend_ps(_mm256_add_ps(s, x), x, 0x11);
    s = _mm256_castsi256_ps(_mm256_slli_si256(_mm256_castps_si256(x), 8));
    x = _mm256_blend_ps(_mm256_add_ps(s, x), x, 0x33);
    __m256 t = _mm256_permute_ps(x, 0xFF);
    t = _mm256_permute2f128_ps(t, t, 0x00);
    return _mm256_blend_ps(_mm256_add_ps(t, x), x, 0x0F);
}

static inline __m256 last8(__m256 w) {
    __m256 t = _mm256_permute_ps(w, 0xFF);
    return _mm256_permute2f128_ps(t, t, 0x11);
}

static void scan_direct(const float *x, float *o, long n) {
    __m256 c = _mm256_setzero_ps();
    for (long i = 0; i < n; i += 8) {
        __m256 w = prefix8(_mm256_loadu_ps(x + i));
        _mm256_stream_ps(o + i, _mm256_add_ps(c, w));
        c = _mm256_add_ps(c, last8(w));
    }
}

static void scan_blocked(const float *x, float *o, long n) {
    __m256 c = _mm256_setzero_ps();
    float buf[BLOCK] __attribute__((aligned(64)));
    for (long i = 0; i + BLOCK <= n; i += BLOCK) {
        for (long j = 0; j < BLOCK; j += 8) {
            __m256 w = prefix8(_mm256_loadu_ps(x + i + j));
            _mm256_store_ps(buf + j, _mm256_add_ps(c, w));
            c = _mm256_add_ps(c, last8(w));
        }
        for (long j = 0; j < BLOCK; j += 4)
            _mm_stream_si128((__m128i *)(o + i + j), _mm_load_si128((__m128i *)(buf + j)));
    }
}

enum { TRIAD, COPY_NT, READ, WRITE_NT, SCAN_DIRECT, SCAN_BLOCKED, CASES };
static const char *names[CASES] = {"triad (plain stores)", "copy, non-temporal", "read (sum)",
                                   "write, non-temporal", "scan, direct streamed stores",
                                   "scan, blocked then streamed"};
/* Bytes counted as the bench counts them: each array read or written once. */
static const int arrays[CASES] = {3, 2, 1, 1, 2, 2};

int main(void) {
    float *a = aligned_alloc(64, N * 4), *b = aligned_alloc(64, N * 4), *c = aligned_alloc(64, N * 4);
    for (long i = 0; i < N; i++) a[i] = 1, b[i] = i % 7, c[i] = 3;
    volatile float sink = 0;
    double best[CASES];
    for (int k = 0; k < CASES; k++) best[k] = 1e9;
    for (int r = 0; r < 15; r++) {
        for (int k = 0; k < CASES; k++) {
            double t = now();
#pragma omp parallel
            {
                long per = N / omp_get_num_threads(), at = omp_get_thread_num() * per;
                float *pa = a + at, *pb = b + at, *pc = c + at;
                __m256 s = _mm256_setzero_ps();
                switch (k) {
                case TRIAD:
                    for (long i = 0; i < per; i += 8)
                        _mm256_store_ps(pa + i, _mm256_add_ps(_mm256_load_ps(pb + i),
                                                              _mm256_mul_ps(_mm256_set1_ps(3.f), _mm256_load_ps(pc + i))));
                    break;
                case COPY_NT:
                    for (long i = 0; i < per; i += 8) _mm256_stream_ps(pa + i, _mm256_load_ps(pb + i));
                    break;
                case READ:
                    for (long i = 0; i < per; i += 8) s = _mm256_add_ps(s, _mm256_load_ps(pb + i));
                    sink = _mm256_cvtss_f32(s);
                    break;
                case WRITE_NT:
                    for (long i = 0; i < per; i += 8) _mm256_stream_ps(pa + i, _mm256_set1_ps(1.f));
                    break;
                case SCAN_DIRECT:
                    scan_direct(pb, pa, per);
                    break;
                case SCAN_BLOCKED:
                    scan_blocked(pb, pa, per);
                    break;
                }
                _mm_sfence();
            }
            t = now() - t;
            if (t < best[k]) best[k] = t;
        }
    }
    printf("%d threads, 16M float32\n", omp_get_max_threads());
    for (int k = 0; k < CASES; k++)
        printf("%-30s %6.2f ms %6.1f GB/s\n", names[k], best[k] * 1e3, arrays[k] * N * 4 / best[k] / 1e9);
    return 0;
}
