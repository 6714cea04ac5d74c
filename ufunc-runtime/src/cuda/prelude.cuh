// ufunc CUDA prelude: self-contained (NVRTC has no system headers). Rust's scalar semantics
// for the code the #[vectorize] translator emits: element typedefs, tuples, complex numbers,
// math overloads for f32/f64, wrapping integer arithmetic, panicking division, saturating casts.
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef float f32;
typedef double f64;
typedef unsigned long long usize;
typedef long long isize;

// The panic codes, written here by the runtime from its one list (cuda/kernel.rs).
// @PANIC_CODES@

// This launch's status word (0, or the first panic code raised by any of its threads, or of the
// launches queued before it with the same word, as a reduction's passes are): every kernel takes
// it as its last parameter and stores it here on entry, so that device functions report to
// their own launch. The runtime reads it once, for the call or stream that launched.
__shared__ int* __ufunc_status;
// Whether this thread raised the launch's first panic, which then writes the message's arguments.
__device__ inline bool __ufunc_panic_first(int code) { return atomicCAS(__ufunc_status, 0, code) == 0; }
__device__ inline void __ufunc_panic(int code) { (void)__ufunc_panic_first(code); }
// Argument i of the first panic's message (cuda/panics.rs reads the record): its kind (1 signed,
// 2 unsigned, 3 f32, 4 f64, 5 bool; 0, the default, for a value not carried) and its bits.
__device__ inline void __ufunc_panic_store(int i, int kind, unsigned long long bits) {
    if (i < 0 || i >= 4) return;
    __ufunc_status[1 + i] = kind;
    unsigned char* at = (unsigned char*)__ufunc_status + 24 + 8 * i;
    for (int b = 0; b < 8; ++b) at[b] = (unsigned char)(bits >> (8 * b));
}
template <class T> __device__ inline void __ufunc_panic_arg(int, T) {}
#define __UFUNC_PANIC_ARG(T, KIND, BITS) \
    __device__ inline void __ufunc_panic_arg(int i, T v) { __ufunc_panic_store(i, KIND, BITS); }
__UFUNC_PANIC_ARG(signed char, 1, (unsigned long long)(long long)v)
__UFUNC_PANIC_ARG(short, 1, (unsigned long long)(long long)v)
__UFUNC_PANIC_ARG(int, 1, (unsigned long long)(long long)v)
__UFUNC_PANIC_ARG(long long, 1, (unsigned long long)v)
__UFUNC_PANIC_ARG(unsigned char, 2, (unsigned long long)v)
__UFUNC_PANIC_ARG(unsigned short, 2, (unsigned long long)v)
__UFUNC_PANIC_ARG(unsigned int, 2, (unsigned long long)v)
__UFUNC_PANIC_ARG(unsigned long long, 2, v)
__UFUNC_PANIC_ARG(bool, 5, v ? 1ull : 0ull)
__device__ inline void __ufunc_panic_arg(int i, float v) {
    union { float f; unsigned int u; } c; c.f = v; __ufunc_panic_store(i, 3, c.u);
}
__device__ inline void __ufunc_panic_arg(int i, double v) {
    union { double f; unsigned long long u; } c; c.f = v; __ufunc_panic_store(i, 4, c.u);
}

template <class A, class B> struct __ufunc_tuple2 { A f0; B f1; };
template <class A, class B, class C> struct __ufunc_tuple3 { A f0; B f1; C f2; };
template <class A, class B, class C, class D> struct __ufunc_tuple4 { A f0; B f1; C f2; D f3; };
template <class A, class B> __device__ inline __ufunc_tuple2<A, B> __ufunc_make_tuple(A a, B b) { return {a, b}; }
template <class A, class B, class C> __device__ inline __ufunc_tuple3<A, B, C> __ufunc_make_tuple(A a, B b, C c) { return {a, b, c}; }
template <class A, class B, class C, class D> __device__ inline __ufunc_tuple4<A, B, C, D> __ufunc_make_tuple(A a, B b, C c, D d) { return {a, b, c, d}; }

template <class T> struct __ufunc_complex_t { T re; T im; };
typedef __ufunc_complex_t<float> c32;
typedef __ufunc_complex_t<double> c64;
__device__ inline c32 __ufunc_complex(float re, float im) { return {re, im}; }
__device__ inline c64 __ufunc_complex(double re, double im) { return {re, im}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator+(__ufunc_complex_t<T> a, __ufunc_complex_t<T> b) { return {a.re + b.re, a.im + b.im}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator-(__ufunc_complex_t<T> a, __ufunc_complex_t<T> b) { return {a.re - b.re, a.im - b.im}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator-(__ufunc_complex_t<T> a) { return {-a.re, -a.im}; }
// num-complex's multiplication and division, operation for operation.
template <class T> __device__ inline __ufunc_complex_t<T> operator*(__ufunc_complex_t<T> a, __ufunc_complex_t<T> b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <class T> __device__ inline __ufunc_complex_t<T> operator/(__ufunc_complex_t<T> a, __ufunc_complex_t<T> b) {
    T n = b.re * b.re + b.im * b.im;
    T re = a.re * b.re + a.im * b.im;
    T im = a.im * b.re - a.re * b.im;
    return {re / n, im / n};
}
// Complex with a real operand, as num-complex defines them (`Complex<T> op T`, `T op Complex<T>`).
template <class T> __device__ inline __ufunc_complex_t<T> operator+(__ufunc_complex_t<T> a, T b) { return {a.re + b, a.im}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator-(__ufunc_complex_t<T> a, T b) { return {a.re - b, a.im}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator*(__ufunc_complex_t<T> a, T b) { return {a.re * b, a.im * b}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator/(__ufunc_complex_t<T> a, T b) { return {a.re / b, a.im / b}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator+(T a, __ufunc_complex_t<T> b) { return {a + b.re, b.im}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator-(T a, __ufunc_complex_t<T> b) { return {a - b.re, T(0) - b.im}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator*(T a, __ufunc_complex_t<T> b) { return {a * b.re, a * b.im}; }
template <class T> __device__ inline __ufunc_complex_t<T> operator/(T a, __ufunc_complex_t<T> b) {
    T n = b.re * b.re + b.im * b.im;
    return {a * b.re / n, T(0) - a * b.im / n};
}
template <class T> __device__ inline bool operator==(__ufunc_complex_t<T> a, __ufunc_complex_t<T> b) { return a.re == b.re && a.im == b.im; }
template <class T> __device__ inline bool operator!=(__ufunc_complex_t<T> a, __ufunc_complex_t<T> b) { return !(a == b); }

// Math: one overload per precision, so that an f32 body calls the single-precision function.
#define __UFUNC_MATH1(rust, f32fn, f64fn) \
    __device__ inline float __ufunc_##rust(float x) { return f32fn(x); } \
    __device__ inline double __ufunc_##rust(double x) { return f64fn(x); }
__UFUNC_MATH1(exp, expf, exp)
__UFUNC_MATH1(exp2, exp2f, exp2)
__UFUNC_MATH1(exp_m1, expm1f, expm1)
__UFUNC_MATH1(ln, logf, log)
__UFUNC_MATH1(ln_1p, log1pf, log1p)
__UFUNC_MATH1(log2, log2f, log2)
__UFUNC_MATH1(log10, log10f, log10)
__UFUNC_MATH1(sin, sinf, sin)
__UFUNC_MATH1(cos, cosf, cos)
__UFUNC_MATH1(tan, tanf, tan)
__UFUNC_MATH1(asin, asinf, asin)
__UFUNC_MATH1(acos, acosf, acos)
__UFUNC_MATH1(atan, atanf, atan)
__UFUNC_MATH1(sinh, sinhf, sinh)
__UFUNC_MATH1(cosh, coshf, cosh)
__UFUNC_MATH1(tanh, tanhf, tanh)
__UFUNC_MATH1(asinh, asinhf, asinh)
__UFUNC_MATH1(acosh, acoshf, acosh)
__UFUNC_MATH1(atanh, atanhf, atanh)
__UFUNC_MATH1(sqrt, sqrtf, sqrt)
__UFUNC_MATH1(cbrt, cbrtf, cbrt)
__UFUNC_MATH1(floor, floorf, floor)
__UFUNC_MATH1(ceil, ceilf, ceil)
__UFUNC_MATH1(round, roundf, round)
__UFUNC_MATH1(trunc, truncf, trunc)
__UFUNC_MATH1(abs, fabsf, fabs)
__device__ inline float __ufunc_fract(float x) { return x - truncf(x); }
__device__ inline double __ufunc_fract(double x) { return x - trunc(x); }
__device__ inline float __ufunc_recip(float x) { return 1.0f / x; }
__device__ inline double __ufunc_recip(double x) { return 1.0 / x; }
__device__ inline float __ufunc_to_degrees(float x) { return x * (180.0f / 3.14159265358979323846f); }
__device__ inline double __ufunc_to_degrees(double x) { return x * (180.0 / 3.14159265358979323846); }
__device__ inline float __ufunc_to_radians(float x) { return x * (3.14159265358979323846f / 180.0f); }
__device__ inline double __ufunc_to_radians(double x) { return x * (3.14159265358979323846 / 180.0); }
__device__ inline float __ufunc_signum(float x) { return isnan(x) ? x : copysignf(1.0f, x); }
__device__ inline double __ufunc_signum(double x) { return isnan(x) ? x : copysign(1.0, x); }
__device__ inline float __ufunc_powf(float x, float y) { return powf(x, y); }
__device__ inline double __ufunc_powf(double x, double y) { return pow(x, y); }
__device__ inline float __ufunc_atan2(float y, float x) { return atan2f(y, x); }
__device__ inline double __ufunc_atan2(double y, double x) { return atan2(y, x); }
__device__ inline float __ufunc_hypot(float x, float y) { return hypotf(x, y); }
__device__ inline double __ufunc_hypot(double x, double y) { return hypot(x, y); }
__device__ inline float __ufunc_copysign(float x, float y) { return copysignf(x, y); }
__device__ inline double __ufunc_copysign(double x, double y) { return copysign(x, y); }
__device__ inline float __ufunc_mul_add(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline double __ufunc_mul_add(double a, double b, double c) { return fma(a, b, c); }
// Rust's min/max ignore a NaN operand, as fminf/fmaxf do.
__device__ inline float __ufunc_min(float a, float b) { return fminf(a, b); }
__device__ inline double __ufunc_min(double a, double b) { return fmin(a, b); }
__device__ inline float __ufunc_max(float a, float b) { return fmaxf(a, b); }
__device__ inline double __ufunc_max(double a, double b) { return fmax(a, b); }
template <class T> __device__ inline T __ufunc_min(T a, T b) { return b < a ? b : a; }
template <class T> __device__ inline T __ufunc_max(T a, T b) { return a < b ? b : a; }
__device__ inline float __ufunc_clamp(float x, float lo, float hi) { return isnan(x) ? x : fminf(fmaxf(x, lo), hi); }
__device__ inline double __ufunc_clamp(double x, double lo, double hi) { return isnan(x) ? x : fmin(fmax(x, lo), hi); }
template <class T> __device__ inline bool __ufunc_is_nan(T x) { return isnan(x); }
template <class T> __device__ inline bool __ufunc_is_finite(T x) { return isfinite(x); }
template <class T> __device__ inline bool __ufunc_is_infinite(T x) { return isinf(x); }
template <class T> __device__ inline bool __ufunc_is_sign_negative(T x) { return signbit(x); }
template <class T> __device__ inline bool __ufunc_is_sign_positive(T x) { return !signbit(x); }
// powi: binary powering in the order of compiler-rt's __powisf2, as Rust's powi lowers to.
template <class T> __device__ inline T __ufunc_powi(T a, int b) {
    bool recip = b < 0;
    T r = 1;
    for (;;) {
        if (b & 1) r *= a;
        b /= 2;
        if (b == 0) break;
        a *= a;
    }
    return recip ? T(1) / r : r;
}

// Complex methods.
template <class T> __device__ inline __ufunc_complex_t<T> __ufunc_conj(__ufunc_complex_t<T> z) { return {z.re, -z.im}; }
template <class T> __device__ inline T __ufunc_norm_sqr(__ufunc_complex_t<T> z) { return z.re * z.re + z.im * z.im; }
__device__ inline float __ufunc_norm(c32 z) { return hypotf(z.re, z.im); }
__device__ inline double __ufunc_norm(c64 z) { return hypot(z.re, z.im); }
__device__ inline float __ufunc_arg(c32 z) { return atan2f(z.im, z.re); }
__device__ inline double __ufunc_arg(c64 z) { return atan2(z.im, z.re); }
// num-complex's exp, sqrt, powi and powf, corner cases (infinities, NaN, zeros) included.
template <class T> __device__ inline __ufunc_complex_t<T> __ufunc_from_polar(T r, T theta) {
    return {r * __ufunc_cos(theta), r * __ufunc_sin(theta)};
}
template <class T> __device__ inline __ufunc_complex_t<T> __ufunc_exp(__ufunc_complex_t<T> z) {
    T re = z.re, im = z.im;
    if (isinf(re)) {
        if (re < T(0)) {
            if (!isfinite(im)) return {T(0), T(0)};
        } else if (im == T(0) || !isfinite(im)) {
            if (isinf(im)) im = im - im;  // NaN
            return {re, im};
        }
    } else if (isnan(re) && im == T(0)) {
        return z;
    }
    return __ufunc_from_polar(__ufunc_exp(re), im);
}
template <class T> __device__ inline __ufunc_complex_t<T> __ufunc_ln(__ufunc_complex_t<T> z) {
    return {__ufunc_ln(__ufunc_norm(z)), __ufunc_arg(z)};
}
template <class T> __device__ inline __ufunc_complex_t<T> __ufunc_sqrt(__ufunc_complex_t<T> z) {
    if (z.im == T(0)) {
        if (!signbit(z.re)) return {__ufunc_sqrt(z.re), z.im};
        T im = __ufunc_sqrt(-z.re);
        return {T(0), signbit(z.im) ? -im : im};
    }
    if (z.re == T(0)) {
        T x = __ufunc_sqrt(__ufunc_abs(z.im) / T(2));
        return {x, signbit(z.im) ? -x : x};
    }
    return __ufunc_from_polar(__ufunc_sqrt(__ufunc_norm(z)), __ufunc_arg(z) / T(2));
}
template <class T> __device__ inline __ufunc_complex_t<T> __ufunc_powi(__ufunc_complex_t<T> a, int b) {
    unsigned e = b < 0 ? 0u - (unsigned)b : (unsigned)b;
    if (b < 0) {
        T n = a.re * a.re + a.im * a.im;
        a = {a.re / n, -a.im / n};
    }
    if (e == 0) return {T(1), T(0)};
    while ((e & 1) == 0) {
        a = a * a;
        e >>= 1;
    }
    if (e == 1) return a;
    __ufunc_complex_t<T> acc = a;
    while (e > 1) {
        e >>= 1;
        a = a * a;
        if (e & 1) acc = acc * a;
    }
    return acc;
}
template <class T> __device__ inline __ufunc_complex_t<T> __ufunc_powf(__ufunc_complex_t<T> z, T e) {
    if (e == T(0)) return {T(1), T(0)};
    return __ufunc_from_polar(__ufunc_powf(__ufunc_norm(z), e), __ufunc_arg(z) * e);
}
template <class T> __device__ inline __ufunc_complex_t<T> __ufunc_neg(__ufunc_complex_t<T> a) { return -a; }

// Integers: Rust's release-mode semantics (wrapping + - *, masked shifts), division and
// remainder that panic on zero and on MIN / -1. Floats pass straight through.
template <class T> struct __ufunc_unsigned { typedef T type; };
template <> struct __ufunc_unsigned<i8> { typedef u8 type; };
template <> struct __ufunc_unsigned<i16> { typedef u16 type; };
template <> struct __ufunc_unsigned<i32> { typedef u32 type; };
template <> struct __ufunc_unsigned<i64> { typedef u64 type; };
template <class T> __device__ inline T __ufunc_add(T a, T b) { typedef typename __ufunc_unsigned<T>::type U; return (T)(U)((U)a + (U)b); }
template <class T> __device__ inline T __ufunc_sub(T a, T b) { typedef typename __ufunc_unsigned<T>::type U; return (T)(U)((U)a - (U)b); }
template <class T> __device__ inline T __ufunc_mul(T a, T b) { typedef typename __ufunc_unsigned<T>::type U; return (T)(U)((U)a * (U)b); }
template <class T> __device__ inline T __ufunc_neg(T a) { typedef typename __ufunc_unsigned<T>::type U; return (T)(U)((U)0 - (U)a); }
__device__ inline float __ufunc_add(float a, float b) { return a + b; }
__device__ inline double __ufunc_add(double a, double b) { return a + b; }
__device__ inline float __ufunc_sub(float a, float b) { return a - b; }
__device__ inline double __ufunc_sub(double a, double b) { return a - b; }
__device__ inline float __ufunc_mul(float a, float b) { return a * b; }
__device__ inline double __ufunc_mul(double a, double b) { return a * b; }
__device__ inline float __ufunc_neg(float a) { return -a; }
__device__ inline double __ufunc_neg(double a) { return -a; }
template <class T> __device__ inline bool __ufunc_is_min_neg_one(T a, T b) {
    return T(-1) < T(0) && b == T(-1) && a == (T)((typename __ufunc_unsigned<T>::type)1 << (sizeof(T) * 8 - 1));
}
template <class T> __device__ inline T __ufunc_div(T a, T b) {
    if (b == T(0)) { __ufunc_panic(__UFUNC_PANIC_DIV_ZERO); return T(0); }
    if (__ufunc_is_min_neg_one(a, b)) { __ufunc_panic(__UFUNC_PANIC_DIV_OVERFLOW); return a; }
    return a / b;
}
template <class T> __device__ inline T __ufunc_rem(T a, T b) {
    if (b == T(0)) { __ufunc_panic(__UFUNC_PANIC_DIV_ZERO); return T(0); }
    if (__ufunc_is_min_neg_one(a, b)) { __ufunc_panic(__UFUNC_PANIC_DIV_OVERFLOW); return T(0); }
    return a % b;
}
__device__ inline float __ufunc_div(float a, float b) { return a / b; }
__device__ inline double __ufunc_div(double a, double b) { return a / b; }
__device__ inline float __ufunc_rem(float a, float b) { return fmodf(a, b); }
__device__ inline double __ufunc_rem(double a, double b) { return fmod(a, b); }
// Integer abs and signum (abs wraps at MIN, as Rust's release build and `wrapping_abs` do).
template <class T> __device__ inline T __ufunc_abs(T a) { return a < T(0) ? __ufunc_neg(a) : a; }
template <class T> __device__ inline T __ufunc_signum(T a) { return (T)((a > T(0)) - (a < T(0))); }
template <class T> __device__ inline T __ufunc_and(T a, T b) { return a & b; }
template <class T> __device__ inline T __ufunc_or(T a, T b) { return a | b; }
template <class T> __device__ inline T __ufunc_xor(T a, T b) { return a ^ b; }
template <class T> __device__ inline T __ufunc_not(T a) { return ~a; }
__device__ inline bool __ufunc_not(bool a) { return !a; }
template <class T, class S> __device__ inline T __ufunc_shl(T a, S s) {
    typedef typename __ufunc_unsigned<T>::type U;
    return (T)(U)((U)a << ((unsigned)s & (sizeof(T) * 8 - 1)));
}
template <class T, class S> __device__ inline T __ufunc_shr(T a, S s) { return a >> ((unsigned)s & (sizeof(T) * 8 - 1)); }
template <class T> __device__ inline u32 __ufunc_count_ones(T a) { return sizeof(T) == 8 ? __popcll((u64)a) : __popc((u32)(typename __ufunc_unsigned<T>::type)a); }

// `as` casts: float to integer saturates and maps NaN to 0, as Rust does.
template <class To, class From> struct __ufunc_cast_t { __device__ static To run(From x) { return (To)x; } };
template <class To> __device__ inline To __ufunc_float_to_int(double x, double lo, double hi) {
    return isnan(x) ? To(0) : x <= lo ? (To)lo : x >= hi ? (To)hi : (To)x;
}
#define __UFUNC_SAT(To, LO, HI) \
    template <> struct __ufunc_cast_t<To, float> { __device__ static To run(float x) { return __ufunc_float_to_int<To>((double)x, LO, HI); } }; \
    template <> struct __ufunc_cast_t<To, double> { __device__ static To run(double x) { return __ufunc_float_to_int<To>(x, LO, HI); } };
__UFUNC_SAT(i8, -128.0, 127.0)
__UFUNC_SAT(i16, -32768.0, 32767.0)
__UFUNC_SAT(i32, -2147483648.0, 2147483647.0)
__UFUNC_SAT(u8, 0.0, 255.0)
__UFUNC_SAT(u16, 0.0, 65535.0)
__UFUNC_SAT(u32, 0.0, 4294967295.0)
template <> struct __ufunc_cast_t<i64, double> { __device__ static i64 run(double x) { return isnan(x) ? 0 : x <= -9223372036854775808.0 ? (i64)(-9223372036854775807LL - 1) : x >= 9223372036854775808.0 ? 9223372036854775807LL : (i64)x; } };
template <> struct __ufunc_cast_t<i64, float> { __device__ static i64 run(float x) { return __ufunc_cast_t<i64, double>::run((double)x); } };
template <> struct __ufunc_cast_t<u64, double> { __device__ static u64 run(double x) { return isnan(x) || x <= 0.0 ? 0 : x >= 18446744073709551616.0 ? 18446744073709551615ULL : (u64)x; } };
template <> struct __ufunc_cast_t<u64, float> { __device__ static u64 run(float x) { return __ufunc_cast_t<u64, double>::run((double)x); } };
template <class To, class From> __device__ inline To __ufunc_cast(From x) { return __ufunc_cast_t<To, From>::run(x); }

// A gufunc core operand: `N` dimensions with element strides; indexing checks bounds as Rust's
// does (an out-of-bounds access raises the index panic and touches a dummy element instead).
template <class T> struct __ufunc_remove_const { typedef T type; };
template <class T> struct __ufunc_remove_const<const T> { typedef T type; };
template <class T> __device__ T __ufunc_sink;
template <class T, int N> struct __ufunc_view {
    T* ptr;
    long long shape[N];
    long long strides[N];
    __device__ long long len() const {
        long long n = 1;
        for (int d = 0; d < N; ++d) n *= shape[d];
        return n;
    }
    template <class... I> __device__ T& operator()(I... index) const {
        long long ix[] = {(long long)index...};
        long long off = 0;
        for (int d = 0; d < N; ++d) {
            if (ix[d] < 0 || ix[d] >= shape[d]) {
                __ufunc_panic(__UFUNC_PANIC_INDEX);
                return __ufunc_sink<typename __ufunc_remove_const<T>::type>;
            }
            off += ix[d] * strides[d];
        }
        return ptr[off];
    }
};
// ndarray's view methods in a gufunc core: elements in logical (row-major) order, 1-d rows and
// columns as views, sums and dot products left to right (ndarray's unrolled float sums may
// round differently).
template <class T, int N> __device__ inline T& __ufunc_view_at(const __ufunc_view<T, N>& v, long long k) {
    long long off = 0;
    for (int d = N - 1; d >= 0; --d) {
        off += (k % v.shape[d]) * v.strides[d];
        k /= v.shape[d];
    }
    return v.ptr[off];
}
template <class T, int N> __device__ inline typename __ufunc_remove_const<T>::type __ufunc_view_sum(const __ufunc_view<T, N>& v) {
    typename __ufunc_remove_const<T>::type s = {};
    for (long long k = 0, n = v.len(); k < n; ++k) s = __ufunc_add(s, __ufunc_view_at(v, k));
    return s;
}
template <class T, int N, class X> __device__ inline void __ufunc_view_fill(const __ufunc_view<T, N>& v, X x) {
    for (long long k = 0, n = v.len(); k < n; ++k) __ufunc_view_at(v, k) = x;
}
template <class A, class B> __device__ inline typename __ufunc_remove_const<A>::type __ufunc_view_dot(const __ufunc_view<A, 1>& a, const __ufunc_view<B, 1>& b) {
    typename __ufunc_remove_const<A>::type s = {};
    if (a.shape[0] != b.shape[0]) { __ufunc_panic(__UFUNC_PANIC_EXPLICIT); return s; }
    for (long long k = 0; k < a.shape[0]; ++k) s = __ufunc_add(s, __ufunc_mul(a.ptr[k * a.strides[0]], b.ptr[k * b.strides[0]]));
    return s;
}
// Axis `axis` of a 2-d view at `i` (`row`: axis 0, `column`: axis 1), bounds-checked.
template <class T> __device__ inline __ufunc_view<T, 1> __ufunc_view_lane(const __ufunc_view<T, 2>& v, int axis, long long i) {
    if (i < 0 || i >= v.shape[axis]) {
        __ufunc_panic(__UFUNC_PANIC_INDEX);
        return {&__ufunc_sink<typename __ufunc_remove_const<T>::type>, {0}, {0}};
    }
    return {v.ptr + i * v.strides[axis], {v.shape[1 - axis]}, {v.strides[1 - axis]}};
}
