/* jaxlite.primitives._f32math: the float32 transcendental functions of the reference
 * implementations (eager operations, the interpreter backend, jit before tier-up).
 *
 * Why C: a float32 result must not depend on which path computed it.  The native CPU
 * backend's vectorisable functions (backends/cpu/_vecmath.py: exp, expm1, log, tanh,
 * logistic, sin, cos) compute in float64 with their own polynomials and round once to
 * float32; the other functions there call the C library's float64 function and round.
 * Each function here performs exactly the same float64 operations in the same order
 * (fused multiply-adds where _vecmath has ``_fma``, no other contraction: this file is
 * compiled with -ffp-contract=off; -fno-trapping-math only lets the compiler turn the
 * selects into vector blends), so both give the same bits for every argument;
 * tests/test_float32_accuracy.py checks it.  Keep the two alike: a change to a polynomial
 * or a constant there is made here too (``CONSTANTS`` below is compared with _vecmath's).
 *
 * Accuracy (float32 ulps against the float64 function rounded to float32): at most 1 for
 * every function; the vectorisable ones are correctly rounded but for rare near-ties, the
 * C library ones (float64, error below 1 float64 ulp, rounded once) in practice always.
 *
 * Each function ``f(x, out)`` takes two C-contiguous float32 buffers of one length and
 * writes f(x) into ``out`` (which may be ``x`` itself), without the interpreter lock; a
 * large array is split over the CPUs (see run_all).
 *
 * Speed: the element functions (exp_f32, ..., cos_f32) are the algorithm; the loops
 * around them only change how many elements one instruction handles, never a result
 * bit (_reference runs the element functions one at a time; tests/test_f32math_bits.py
 * compares every loop with it).  The compiler vectorises the loops for AVX2 and for
 * any CPU; on AVX-512 the vectorisable functions are written with intrinsics (the same
 * float64 operations on the same values, in fewer instructions than the compiler makes of
 * the selects), and sin/cos go by blocks, a block holding an argument beyond the
 * reduction's limit taking the slow path.  One core, float32[1e7], in cache: exp 0.46,
 * expm1 0.47, sin/cos 0.65, logistic 0.74, tanh 0.74, log 0.83 ns an element (NumPy's
 * float32 SIMD loops, less accurate: 0.34, 0.20, 0.41, -, 0.25, 0.32): float64 lanes are
 * half as many as float32 ones, and tanh, log and logistic wait on the divider (a
 * Newton-Raphson division rounded exactly was measured slower: 1.29 against 0.83 for log).
 * Of the C library's functions, log1p, exp2, sinh, cosh, asinh, acosh and atanh have a
 * checked fast path (see CHECKED_MAP): the C library's bits, 3-10 times faster; the
 * others (tan, the inverse trigonometric functions, erf, erfc) call it per element
 * (6-20 ns).
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

/* the constants of _vecmath.py, as exact hexadecimal doubles */
#define LOG2E 0x1.71547652b82fep+0
#define LN2_HI 0x1.62e42fefa2000p-1
#define LN2_LO 0x1.9ef35793c7673p-41
#define E0 0x1.555555742fbe5p-3
#define E1 0x1.555555664c3e4p-5
#define E2 0x1.1110b0c8e7fe7p-7
#define E3 0x1.6c1666aa2f08cp-10
#define E4 0x1.a1714e3193499p-13
#define E5 0x1.a13fa9b15d1fcp-16
#define S0 (-0x1.5555554c7e119p-3)
#define S1 0x1.11110876a5cd2p-7
#define S2 (-0x1.a00f89773e354p-13)
#define S3 0x1.6cd456ff1b680p-19
#define C0 0x1.5555554f0f61ep-5
#define C1 (-0x1.6c16b860f6f8ep-10)
#define C2 0x1.a01100b71ae63p-16
#define C3 (-0x1.242527c0e6977p-22)
#define PIO2_1 0x1.921fb54000000p+0
#define PIO2_2 0x1.10b4611800000p-30
#define PIO2_3 0x1.313198a2e0370p-61
#define TWO_OVER_PI 0x1.45f306dc9c883p-1
#define SQRT2 0x1.6a09e667f3bcdp+0
#define MAGIC 0x1.8p+52               /* 1.5 * 2**52: (x + M) - M rounds x to an integer */
#define TINY32 0x1p-13f               /* tanh(x) rounds to x below this */
#define LIMIT 65536.0                 /* _vecmath.SIN_COS_LIMIT */

typedef void (*loop_fn)(const float *, float *, Py_ssize_t);

/* 2: AVX-512 (and FMA), 1: AVX2 and FMA, 0: neither (set once, at import) */
static int isa;

static inline int64_t f64_bits(double x) { int64_t b; memcpy(&b, &x, 8); return b; }
static inline double bits_f64(int64_t b) { double x; memcpy(&x, &b, 8); return x; }

/* 2**k for -1022 <= k <= 1023, reading only k's low 12 bits (k may be rint_bits' bits) */
static inline double pow2(int64_t k)
{
    return bits_f64((int64_t)(((uint64_t)k + 1023u) << 52));
}

/* x * log2(e) rounded to an integer kf (as a double) and the bits kb holding it */
static inline double exp_kp(double x, int64_t *kb, double *p)
{
    double t = x * LOG2E + MAGIC;
    double kf = t - MAGIC;
    *kb = f64_bits(t);
    double r = fma(-kf, LN2_LO, fma(-kf, LN2_HI, x));
    double q = fma(r, E5, E4);
    q = fma(r, q, E3);
    q = fma(r, q, E2);
    q = fma(r, q, E1);
    q = fma(r, q, E0);
    q = fma(r, q, 0.5);
    q = fma(r, q, 1.0);
    *p = r * q;
    return kf;
}

static inline double clamp_exp_arg(double x)
{
    double y = x > -110.0 ? x : -110.0;    /* NaN becomes -110; callers put it back */
    return y < 110.0 ? y : 110.0;
}

static inline double exp64(double x)
{
    int64_t kb;
    double p;
    exp_kp(clamp_exp_arg(x), &kb, &p);
    double s = pow2(kb);
    return fma(s, p, s);
}

static inline float exp_f32(float x)
{
    float r = (float)exp64((double)x);
    return x != x ? x : r;
}

static inline float expm1_f32(float x)
{
    int64_t kb;
    double p;
    exp_kp(clamp_exp_arg((double)x), &kb, &p);
    double s = pow2(kb);
    float r = (float)fma(s, p, s - 1.0);
    return (x != x || x == 0) ? x : r;
}

static inline float log_f32(float x)
{
    double xd = (double)x;
    int64_t bits = f64_bits(xd);
    /* the exponent as an int32 (an int64 -> double conversion does not vectorise on
     * AVX2); exact either way */
    int32_t e = (int32_t)((bits >> 52) & 0x7FF) - 1023;
    double m = bits_f64((bits & 0xFFFFFFFFFFFFFLL) | 0x3FF0000000000000LL);
    int big = m > SQRT2;
    m = big ? m * 0.5 : m;
    e = big ? e + 1 : e;
    double s = (m - 1.0) / (m + 1.0);
    double s2 = s * s;
    double lm = 2.0 * s * (1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (
        1.0 / 9 + s2 * (1.0 / 11 + s2 * (1.0 / 13)))))));
    double ef = (double)e;
    float r = (float)(ef * LN2_HI + (ef * LN2_LO + lm));
    r = x == 0 ? -INFINITY : r;
    r = x == INFINITY ? INFINITY : r;
    return (x != x || x < 0) ? NAN : r;
}

static inline float tanh_f32(float x)
{
    double a = (double)x;
    a = a < 0 ? -a : a;
    a = a < 10.0 ? a : 10.0;
    int64_t kb;
    double p;
    exp_kp(2.0 * a, &kb, &p);
    double s = pow2(kb);
    double em = fma(s, p, s - 1.0);
    double t = em / (em + 2.0);
    t = x < 0 ? -t : t;
    float r = (float)t;
    float ax = x < 0 ? -x : x;
    return (x != x || ax < TINY32) ? x : r;
}

static inline float logistic_f32(float x)
{
    double e = exp64(-(double)x);
    float r = (float)(1.0 / (1.0 + e));
    return x != x ? x : r;
}

/* x = q * pi/2 + r with abs(r) <= pi/4 for abs(x) <= LIMIT; the quadrant's low bits in kb */
static inline double reduce_pio2(double x, int64_t *kb)
{
    double ax = x < 0 ? -x : x;
    double xs = ax <= LIMIT ? x : 0.0;
    double t = xs * TWO_OVER_PI + MAGIC;
    double kf = t - MAGIC;
    *kb = f64_bits(t);
    return fma(-kf, PIO2_3, fma(-kf, PIO2_2, fma(-kf, PIO2_1, xs)));
}

static inline double sin_poly(double r)
{
    double z = r * r;
    double q = fma(z, S3, S2);
    q = fma(z, q, S1);
    q = fma(z, q, S0);
    return fma(r * z, q, r);
}

static inline double cos_poly(double r)
{
    double z = r * r;
    double q = fma(z, C3, C2);
    q = fma(z, q, C1);
    q = fma(z, q, C0);
    q = fma(z, q, -0.5);
    return fma(z, q, 1.0);
}

static inline double quadrant(int64_t k, double s, double c)
{
    double v = (k & 1) == 1 ? c : s;
    return (k & 2) == 2 ? -v : v;
}

/* beyond LIMIT _vecmath's reduction is inexact and a native kernel reruns on this
 * reference: the C library's float64 function, rounded once */
static inline int trig_far(float x)
{
    float a = fabsf(x);     /* an AND, where a compare-and-negate would branch per element */
    return a > (float)LIMIT && a != INFINITY;
}

static inline float sin_f32(float x)
{
    int64_t k;
    double r = reduce_pio2((double)x, &k);
    float out = (float)quadrant(k, sin_poly(r), cos_poly(r));
    out = (x == INFINITY || x == -INFINITY) ? x - x : out;
    return (x != x || x == 0) ? x : out;
}

static inline float cos_f32(float x)
{
    int64_t k;
    double r = reduce_pio2((double)x, &k);
    float out = (float)quadrant(k + 1, sin_poly(r), cos_poly(r));
    out = (x == INFINITY || x == -INFINITY) ? x - x : out;
    return x != x ? x : out;
}

/* the vectorisable loops: for CPUs with AVX-512 (8 doubles a vector), with AVX2 and FMA
 * (fma() is one instruction there), and for any other CPU (fma() is the C library's,
 * exact and slower); all give the same bits */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define HAVE_CLONES 1
#define FMA_TARGET __attribute__((target("avx2,fma")))
#define AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512vl,fma,"      \
                                            "prefer-vector-width=512")))
#else
#define HAVE_CLONES 0
#define FMA_TARGET
#define AVX512_TARGET
#endif

/* the loop bodies: f over x[0:n] into out[0:n], element by element (f inlined: the loop
 * vectorises) */
#define MAP(f)                                                                      \
    for (Py_ssize_t i = 0; i < n; i++)                                              \
        out[i] = f(x[i]);

/* sin/cos in blocks: a block is scanned for arguments beyond LIMIT first (a vectorised
 * OR, about a twentieth of the cost of the function); a block without any runs the
 * vectorised loop, a block with some computes those with the C library's float64 function
 * (rounded once: what a native kernel reruns on) and the others with f.  Element i is
 * read before out[i] is written, so out may be x. */
#define TRIG_BLOCK 1024
#define TRIG_MAP(f, libm_f, near_block)                                             \
    for (Py_ssize_t b = 0; b < n; b += TRIG_BLOCK) {                                \
        Py_ssize_t m = n - b < TRIG_BLOCK ? n - b : TRIG_BLOCK;                     \
        const float *xb = x + b;                                                    \
        float *ob = out + b;                                                        \
        int far = 0;                                                                \
        for (Py_ssize_t i = 0; i < m; i++)                                          \
            far |= trig_far(xb[i]);                                                 \
        if (!far) {                                                                 \
            near_block                                                              \
        } else {                                                                    \
            for (Py_ssize_t i = 0; i < m; i++)                                      \
                ob[i] = trig_far(xb[i]) ? (float)libm_f((double)xb[i]) : f(xb[i]);  \
        }                                                                           \
    }
/* the statement for a block without far arguments in the compiler's loops */
#define NEAR_MAP(f)                                                                 \
    for (Py_ssize_t i = 0; i < m; i++)                                              \
        ob[i] = f(xb[i]);

/* the three variants of one loop and the pick of this CPU's */
#define VEC_LOOP(name, body)                                                        \
    static void loop_##name(const float *x, float *out, Py_ssize_t n)               \
    {                                                                               \
        body                                                                        \
    }                                                                               \
    FMA_TARGET static void loop_##name##_fma(const float *x, float *out,            \
                                             Py_ssize_t n)                          \
    {                                                                               \
        body                                                                        \
    }                                                                               \
    AVX512_TARGET static void loop_##name##_avx512(const float *x, float *out,      \
                                                   Py_ssize_t n)                    \
    {                                                                               \
        body                                                                        \
    }                                                                               \
    static loop_fn pick_##name(void)                                                \
    {                                                                               \
        return isa == 2 ? loop_##name##_avx512 : isa == 1 ? loop_##name##_fma       \
            : loop_##name;                                                          \
    }

/* exp, expm1, logistic, tanh, log, sin and cos on AVX-512, written with intrinsics: the
 * same float64 operations on the same values in the same order as the element functions
 * (so the same bits: the tests compare them with _reference on millions of inputs, and
 * they were compared on all 2**32 float32 inputs when written), in fewer instructions
 * than the compiler makes of the scalar code (about 50 against 80-100 for 16 elements: no
 * duplicated conversions or mask shuffles, max/min for the clamps, getexp/getmant for
 * log's exponent and mantissa, fpclass or one compare for the special arguments).  The
 * lanes the element functions give x itself or a constant for (NaN, zero, tiny,
 * infinite or negative arguments) are computed like the others and then replaced, as in
 * the scalar code.  The last n % 16 elements take the scalar code. */
#if HAVE_CLONES
#define SIGN64 _mm512_castsi512_pd(_mm512_set1_epi64(INT64_MIN))
/* fpclass categories: quiet and signalling NaN, +0, -0, +inf, -inf */
#define CLASS_NAN 0x81
#define CLASS_ZERO 0x06
#define CLASS_INF 0x18

/* (float)tanh of 8 widened float32 (lanes with abs(x) < TINY32 or NaN: any value) */
AVX512_TARGET static inline __m256 tanh8(__m512d xd)
{
    __m512d a = _mm512_andnot_pd(SIGN64, xd);
    a = _mm512_min_pd(a, _mm512_set1_pd(10.0));             /* a < 10 ? a : 10 */
    __m512d y = _mm512_mul_pd(_mm512_set1_pd(2.0), a);
    __m512d t = _mm512_add_pd(_mm512_mul_pd(y, _mm512_set1_pd(LOG2E)),
                              _mm512_set1_pd(MAGIC));
    __m512d kf = _mm512_sub_pd(t, _mm512_set1_pd(MAGIC));
    __m512d r = _mm512_fnmadd_pd(kf, _mm512_set1_pd(LN2_HI), y);
    r = _mm512_fnmadd_pd(kf, _mm512_set1_pd(LN2_LO), r);
    __m512d q = _mm512_fmadd_pd(r, _mm512_set1_pd(E5), _mm512_set1_pd(E4));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(E3));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(E2));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(E1));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(E0));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(0.5));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(1.0));
    __m512d p = _mm512_mul_pd(r, q);
    __m512d s = _mm512_castsi512_pd(_mm512_slli_epi64(
        _mm512_add_epi64(_mm512_castpd_si512(t), _mm512_set1_epi64(1023)), 52));
    __m512d em = _mm512_fmadd_pd(s, p, _mm512_sub_pd(s, _mm512_set1_pd(1.0)));
    __m512d th = _mm512_div_pd(em, _mm512_add_pd(em, _mm512_set1_pd(2.0)));
    /* x < 0 ? -t : t, t > 0 where it matters: x's sign bit onto t */
    th = _mm512_or_pd(th, _mm512_and_pd(xd, SIGN64));
    return _mm512_cvtpd_ps(th);
}

/* the two halves of 16 float32 widened, and two float32 halves joined */
#define WIDEN_LO(v) _mm512_cvtps_pd(_mm512_castps512_ps256(v))
#define WIDEN_HI(v) _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(             \
    _mm512_castps_pd(v), 1)))
#define JOIN(lo, hi) _mm512_castpd_ps(_mm512_insertf64x4(                                \
    _mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1))

AVX512_TARGET static void loop_tanh_avx512(const float *x, float *out, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 xf = _mm512_loadu_ps(x + i);
        __m512 r = JOIN(tanh8(WIDEN_LO(xf)), tanh8(WIDEN_HI(xf)));
        /* NaN or abs(x) < TINY32: x itself */
        __m512 ax = _mm512_abs_ps(xf);
        __mmask16 keep = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(TINY32), _CMP_NGE_UQ);
        _mm512_storeu_ps(out + i, _mm512_mask_blend_ps(keep, r, xf));
    }
    for (; i < n; i++)
        out[i] = tanh_f32(x[i]);
}

/* log of 8 widened float32 before the special arguments (any value there) */
AVX512_TARGET static inline __m256 log8(__m512d xd)
{
    /* xd is a normal double (a float32 widened) where it matters: its exponent and its
     * mantissa in [1, 2) are those the scalar code takes from the bits */
    __m512d ef = _mm512_getexp_pd(xd);
    __m512d m = _mm512_getmant_pd(xd, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
    __mmask8 big = _mm512_cmp_pd_mask(m, _mm512_set1_pd(SQRT2), _CMP_GT_OQ);
    m = _mm512_mask_mul_pd(m, big, m, _mm512_set1_pd(0.5));
    ef = _mm512_mask_add_pd(ef, big, ef, _mm512_set1_pd(1.0));
    __m512d one = _mm512_set1_pd(1.0);
    __m512d sv = _mm512_div_pd(_mm512_sub_pd(m, one), _mm512_add_pd(m, one));
    __m512d s2 = _mm512_mul_pd(sv, sv);
    __m512d t = _mm512_mul_pd(s2, _mm512_set1_pd(1.0 / 13));
    t = _mm512_mul_pd(s2, _mm512_add_pd(_mm512_set1_pd(1.0 / 11), t));
    t = _mm512_mul_pd(s2, _mm512_add_pd(_mm512_set1_pd(1.0 / 9), t));
    t = _mm512_mul_pd(s2, _mm512_add_pd(_mm512_set1_pd(1.0 / 7), t));
    t = _mm512_mul_pd(s2, _mm512_add_pd(_mm512_set1_pd(1.0 / 5), t));
    t = _mm512_mul_pd(s2, _mm512_add_pd(_mm512_set1_pd(1.0 / 3), t));
    t = _mm512_add_pd(one, t);
    __m512d lm = _mm512_mul_pd(_mm512_mul_pd(_mm512_set1_pd(2.0), sv), t);
    __m512d r = _mm512_add_pd(_mm512_mul_pd(ef, _mm512_set1_pd(LN2_HI)),
                              _mm512_add_pd(_mm512_mul_pd(ef, _mm512_set1_pd(LN2_LO)), lm));
    return _mm512_cvtpd_ps(r);
}

AVX512_TARGET static void loop_log_avx512(const float *x, float *out, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    __m512 zero = _mm512_setzero_ps(), inf = _mm512_set1_ps(INFINITY);
    for (; i + 16 <= n; i += 16) {
        __m512 xf = _mm512_loadu_ps(x + i);
        __m512 r = JOIN(log8(WIDEN_LO(xf)), log8(WIDEN_HI(xf)));
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(xf, zero, _CMP_EQ_OQ), r,
                                 _mm512_set1_ps(-INFINITY));
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(xf, inf, _CMP_EQ_OQ), r, inf);
        /* NaN or x < 0 (not x >= 0) */
        r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(xf, zero, _CMP_NGE_UQ), r,
                                 _mm512_set1_ps(NAN));
        _mm512_storeu_ps(out + i, r);
    }
    for (; i < n; i++)
        out[i] = log_f32(x[i]);
}

/* exp_kp of 8 doubles after clamp_exp_arg: p, and the scale 2**k in *s */
AVX512_TARGET static inline __m512d exp_sp8(__m512d x, __m512d *s)
{
    /* x > -110 ? x : -110 (NaN: -110), then y < 110 ? y : 110: max and min exactly */
    __m512d y = _mm512_max_pd(x, _mm512_set1_pd(-110.0));
    y = _mm512_min_pd(y, _mm512_set1_pd(110.0));
    __m512d t = _mm512_add_pd(_mm512_mul_pd(y, _mm512_set1_pd(LOG2E)),
                              _mm512_set1_pd(MAGIC));
    __m512d kf = _mm512_sub_pd(t, _mm512_set1_pd(MAGIC));
    __m512d r = _mm512_fnmadd_pd(kf, _mm512_set1_pd(LN2_HI), y);
    r = _mm512_fnmadd_pd(kf, _mm512_set1_pd(LN2_LO), r);
    __m512d q = _mm512_fmadd_pd(r, _mm512_set1_pd(E5), _mm512_set1_pd(E4));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(E3));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(E2));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(E1));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(E0));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(0.5));
    q = _mm512_fmadd_pd(r, q, _mm512_set1_pd(1.0));
    *s = _mm512_castsi512_pd(_mm512_slli_epi64(
        _mm512_add_epi64(_mm512_castpd_si512(t), _mm512_set1_epi64(1023)), 52));
    return _mm512_mul_pd(r, q);
}

AVX512_TARGET static inline __m256 exp8(__m512d x)
{
    __m512d s, p = exp_sp8(x, &s);
    return _mm512_cvtpd_ps(_mm512_fmadd_pd(s, p, s));
}

AVX512_TARGET static inline __m256 expm1_8(__m512d x)
{
    __m512d s, p = exp_sp8(x, &s);
    return _mm512_cvtpd_ps(_mm512_fmadd_pd(s, p, _mm512_sub_pd(s, _mm512_set1_pd(1.0))));
}

AVX512_TARGET static inline __m256 logistic8(__m512d x)
{
    __m512d s, p = exp_sp8(_mm512_xor_pd(x, SIGN64), &s);      /* exp64(-x) */
    __m512d one = _mm512_set1_pd(1.0);
    return _mm512_cvtpd_ps(_mm512_div_pd(one, _mm512_add_pd(one, _mm512_fmadd_pd(s, p, s))));
}

/* exp, expm1 and logistic: NaN gives x itself, and expm1 of a zero too */
#define EXP_LOOP(name, f8, keep_class)                                              \
    AVX512_TARGET static void loop_##name##_avx512(const float *x, float *out,      \
                                                   Py_ssize_t n)                    \
    {                                                                               \
        Py_ssize_t i = 0;                                                           \
        for (; i + 16 <= n; i += 16) {                                              \
            __m512 xf = _mm512_loadu_ps(x + i);                                     \
            __m512 r = JOIN(f8(WIDEN_LO(xf)), f8(WIDEN_HI(xf)));                    \
            __mmask16 keep = _mm512_fpclass_ps_mask(xf, keep_class);                \
            _mm512_storeu_ps(out + i, _mm512_mask_blend_ps(keep, r, xf));           \
        }                                                                           \
        for (; i < n; i++)                                                          \
            out[i] = name##_f32(x[i]);                                              \
    }

/* sin (cosine 0) or cos (cosine 1) of 8 widened float32 before the special arguments:
 * reduce_pio2, both polynomials and quadrant() of the scalar code */
AVX512_TARGET static inline __m256 trig8(__m512d xd, int cosine)
{
    __mmask8 near = _mm512_cmp_pd_mask(_mm512_andnot_pd(SIGN64, xd),
                                       _mm512_set1_pd(LIMIT), _CMP_LE_OQ);
    __m512d xs = _mm512_maskz_mov_pd(near, xd);                 /* abs(x) <= LIMIT ? x : 0 */
    __m512d t = _mm512_add_pd(_mm512_mul_pd(xs, _mm512_set1_pd(TWO_OVER_PI)),
                              _mm512_set1_pd(MAGIC));
    __m512d kf = _mm512_sub_pd(t, _mm512_set1_pd(MAGIC));
    __m512d r = _mm512_fnmadd_pd(kf, _mm512_set1_pd(PIO2_1), xs);
    r = _mm512_fnmadd_pd(kf, _mm512_set1_pd(PIO2_2), r);
    r = _mm512_fnmadd_pd(kf, _mm512_set1_pd(PIO2_3), r);
    __m512d z = _mm512_mul_pd(r, r);
    __m512d qs = _mm512_fmadd_pd(z, _mm512_set1_pd(S3), _mm512_set1_pd(S2));
    qs = _mm512_fmadd_pd(z, qs, _mm512_set1_pd(S1));
    qs = _mm512_fmadd_pd(z, qs, _mm512_set1_pd(S0));
    __m512d sn = _mm512_fmadd_pd(_mm512_mul_pd(r, z), qs, r);
    __m512d qc = _mm512_fmadd_pd(z, _mm512_set1_pd(C3), _mm512_set1_pd(C2));
    qc = _mm512_fmadd_pd(z, qc, _mm512_set1_pd(C1));
    qc = _mm512_fmadd_pd(z, qc, _mm512_set1_pd(C0));
    qc = _mm512_fmadd_pd(z, qc, _mm512_set1_pd(-0.5));
    __m512d cs = _mm512_fmadd_pd(z, qc, _mm512_set1_pd(1.0));
    __m512i k = _mm512_add_epi64(_mm512_castpd_si512(t), _mm512_set1_epi64(cosine));
    __m512d v = _mm512_mask_blend_pd(_mm512_test_epi64_mask(k, _mm512_set1_epi64(1)), sn, cs);
    v = _mm512_mask_xor_pd(v, _mm512_test_epi64_mask(k, _mm512_set1_epi64(2)), v, SIGN64);
    return _mm512_cvtpd_ps(v);
}

/* sin/cos of a block without arguments beyond LIMIT */
AVX512_TARGET static void trig_block_avx512(const float *x, float *out, Py_ssize_t n,
                                            int cosine)
{
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 xf = _mm512_loadu_ps(x + i);
        __m512 r = JOIN(trig8(WIDEN_LO(xf), cosine), trig8(WIDEN_HI(xf), cosine));
        /* infinities: x - x (NaN); NaN (and for sin a zero): x itself */
        r = _mm512_mask_sub_ps(r, _mm512_fpclass_ps_mask(xf, CLASS_INF), xf, xf);
        __mmask16 keep = cosine ? _mm512_fpclass_ps_mask(xf, CLASS_NAN)
            : _mm512_fpclass_ps_mask(xf, CLASS_NAN | CLASS_ZERO);
        _mm512_storeu_ps(out + i, _mm512_mask_blend_ps(keep, r, xf));
    }
    for (; i < n; i++)
        out[i] = cosine ? cos_f32(x[i]) : sin_f32(x[i]);
}

EXP_LOOP(exp, exp8, CLASS_NAN)
EXP_LOOP(expm1, expm1_8, CLASS_NAN | CLASS_ZERO)
EXP_LOOP(logistic, logistic8, CLASS_NAN)

AVX512_TARGET static void loop_sin_avx512(const float *x, float *out, Py_ssize_t n)
{
    TRIG_MAP(sin_f32, sin, trig_block_avx512(xb, ob, m, 0);)
}

AVX512_TARGET static void loop_cos_avx512(const float *x, float *out, Py_ssize_t n)
{
    TRIG_MAP(cos_f32, cos, trig_block_avx512(xb, ob, m, 1);)
}

#define OWN_AVX512(name, body) /* loop_<name>_avx512 above */
#else
#define OWN_AVX512(name, body)                                                      \
    static void loop_##name##_avx512(const float *x, float *out, Py_ssize_t n)      \
    {                                                                               \
        body                                                                        \
    }
#endif

/* the plain and AVX2 variants of a loop whose AVX-512 variant is written above */
#define VEC_LOOP2(name, body)                                                       \
    OWN_AVX512(name, body)                                                          \
    static void loop_##name(const float *x, float *out, Py_ssize_t n)               \
    {                                                                               \
        body                                                                        \
    }                                                                               \
    FMA_TARGET static void loop_##name##_fma(const float *x, float *out,            \
                                             Py_ssize_t n)                          \
    {                                                                               \
        body                                                                        \
    }                                                                               \
    static loop_fn pick_##name(void)                                                \
    {                                                                               \
        return isa == 2 ? loop_##name##_avx512 : isa == 1 ? loop_##name##_fma       \
            : loop_##name;                                                          \
    }

VEC_LOOP2(exp, MAP(exp_f32))
VEC_LOOP2(expm1, MAP(expm1_f32))
VEC_LOOP2(logistic, MAP(logistic_f32))
VEC_LOOP2(log, MAP(log_f32))
VEC_LOOP2(tanh, MAP(tanh_f32))
VEC_LOOP2(sin, TRIG_MAP(sin_f32, sin, NEAR_MAP(sin_f32)))
VEC_LOOP2(cos, TRIG_MAP(cos_f32, cos, NEAR_MAP(cos_f32)))

/* the C library's float64 function, rounded once (what a native kernel calls) */
#define LIBM_LOOP(name, expr)                                                       \
    static void loop_##name(const float *x, float *out, Py_ssize_t n)               \
    {                                                                               \
        for (Py_ssize_t i = 0; i < n; i++) {                                        \
            double v = (double)x[i];                                                \
            out[i] = (float)(expr);                                                 \
        }                                                                           \
    }

LIBM_LOOP(tan, tan(v))
LIBM_LOOP(asin, asin(v))
LIBM_LOOP(acos, acos(v))
LIBM_LOOP(atan, atan(v))
LIBM_LOOP(erf, erf(v))
LIBM_LOOP(erfc, erfc(v))


/* The C library's functions with a fast path: a float64 approximation v of f(x) within
 * a bounded number of float64 ulps of it (16 to 190 here; the C library's own result is
 * within 1-2), rounded to float32, gives (float)libm_f(x) exactly unless f(x) lies near
 * a float32 rounding boundary (a midpoint between two float32): v's bits below float32
 * precision say how far v is from one, and a lane nearer than SLACK float64 ulps (the
 * error bounds with a wide margin; about one lane in 250,000) is computed by the C
 * library after all, as are the special arguments.  So the result is that of the C library function rounded, the
 * reference's, bit for bit (tests/test_f32math_bits.py; all 2**32 float32 inputs were
 * compared when this was written). */
#define SLACK 1024
#define LOW29 (((int64_t)1 << 29) - 1)
#define MID29 ((int64_t)1 << 28)

/* whether v (a normal float32 once rounded) lies within SLACK float64 ulps of a float32
 * midpoint */
static inline int near_midpoint(double v)
{
    int64_t d = (f64_bits(v) & LOW29) - MID29;
    d = d < 0 ? -d : d;
    return d <= SLACK;
}

/* log1p: for abs(x) < 2**-29 the result rounds to x itself (log1p(x) = x (1 - x/2 + ...)
 * is within 2**-30 of x, under half a float32 ulp); otherwise u = 1 + x is exact (but
 * beyond 2**53, where rounding u changes the logarithm by less than 2**-53) and log(u) is
 * log_f32's reduction and atanh series taken to s**17 (u's mantissa has 52 bits here:
 * truncation below 2**-50, rounding about 2**-49, 16 ulps, against SLACK); x <= -1, inf
 * and NaN go to the C library */
static inline float log1p_fast(float x, int32_t *slow)
{
    double u = 1.0 + (double)x;
    int64_t bits = f64_bits(u);
    int32_t e = (int32_t)((bits >> 52) & 0x7FF) - 1023;
    double m = bits_f64((bits & 0xFFFFFFFFFFFFFLL) | 0x3FF0000000000000LL);
    int big = m > SQRT2;
    m = big ? m * 0.5 : m;
    e = big ? e + 1 : e;
    double s = (m - 1.0) / (m + 1.0);
    double s2 = s * s;
    double lm = 2.0 * s * (1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (
        1.0 / 9 + s2 * (1.0 / 11 + s2 * (1.0 / 13 + s2 * (1.0 / 15 + s2 * (1.0 / 17)))))))));
    double ef = (double)e;
    double r = ef * LN2_HI + (ef * LN2_LO + lm);
    int tiny = fabsf(x) < 0x1p-29f;
    *slow = !(x > -1.0f) | (x == INFINITY) | (near_midpoint(r) & !tiny);
    return tiny ? x : (float)r;
}

/* blocks of CHECKED_BLOCK: the fast path over the block (vectorised) into a buffer with
 * its flags, then the buffer out, the flagged lanes from the C library (x[i] is read
 * before out[i] is written, so out may be x) */
#define CHECKED_BLOCK 1024
#define CHECKED_MAP(fast, libm_f)                                                   \
    for (Py_ssize_t b = 0; b < n; b += CHECKED_BLOCK) {                             \
        Py_ssize_t m = n - b < CHECKED_BLOCK ? n - b : CHECKED_BLOCK;               \
        const float *xb = x + b;                                                    \
        float *ob = out + b;                                                        \
        float tmp[CHECKED_BLOCK];                                                   \
        int32_t slow[CHECKED_BLOCK];                                                \
        int32_t any = 0;                                                            \
        for (Py_ssize_t i = 0; i < m; i++)                                          \
            tmp[i] = fast(xb[i], &slow[i]);                                         \
        for (Py_ssize_t i = 0; i < m; i++)                                          \
            any |= slow[i];                                                         \
        if (!any) {                                                                 \
            memcpy(ob, tmp, m * sizeof(float));                                     \
        } else {                                                                    \
            for (Py_ssize_t i = 0; i < m; i++)                                      \
                ob[i] = slow[i] ? (float)libm_f((double)xb[i]) : tmp[i];            \
        }                                                                           \
    }

VEC_LOOP(log1p, CHECKED_MAP(log1p_fast, log1p))

/* exp2: 2**x = 2**k 2**f with k = rint(x) and f = x - k (both exact, abs(f) <= 1/2);
 * 2**f = exp(f ln2) by its Taylor series to the 12th power (truncation below 2**-52,
 * rounding a few 2**-53: under 16 float64 ulps against SLACK), scaled exactly.  Arguments
 * outside [-126, 128) (float32 subnormal results, overflow) and NaN go to the C library. */
#define LN2 0x1.62e42fefa39efp-1
static inline float exp2_fast(float x, int32_t *slow)
{
    /* the lanes for the C library compute garbage here, without traps (and the select on
     * bad lets the compiler vectorise the loop, which a clamp of c did not) */
    int bad = !(x >= -126.0f) | !(x < 128.0f);
    double c = (double)x;
    double t = c + MAGIC;
    double f = c - (t - MAGIC);
    double y = f * LN2;
    double p = 1.0 + y * (1.0 + y * (0.5 + y * (1.0 / 6 + y * (1.0 / 24 + y * (1.0 / 120
        + y * (1.0 / 720 + y * (1.0 / 5040 + y * (1.0 / 40320 + y * (1.0 / 362880
        + y * (1.0 / 3628800 + y * (1.0 / 39916800 + y * (1.0 / 479001600))))))))))));
    double r = p * pow2(f64_bits(t));
    *slow = bad | near_midpoint(r);
    return bad ? x : (float)r;
}

VEC_LOOP(exp2, CHECKED_MAP(exp2_fast, exp2))

/* 2**f for abs(f) <= 1/2: exp2_fast's series (relative error a few 2**-53) */
static inline double exp2_series(double f)
{
    double y = f * LN2;
    return 1.0 + y * (1.0 + y * (0.5 + y * (1.0 / 6 + y * (1.0 / 24 + y * (1.0 / 120
        + y * (1.0 / 720 + y * (1.0 / 5040 + y * (1.0 / 40320 + y * (1.0 / 362880
        + y * (1.0 / 3628800 + y * (1.0 / 39916800 + y * (1.0 / 479001600))))))))))));
}

/* sinh and cosh: with a = abs(x) and E = e**a = 2**k 2**f (y = a log2(e) is rounded:
 * its error, at most 2**-45 for a < 89, moves the result by under 2**-45.4 relative, 190
 * float64 ulps; the series and the rest add about 16, the C library up to 2: under
 * SLACK), cosh = (E + 1/E) / 2 and for a >= 1/2 sinh = (E - 1/E) / 2 (the subtraction
 * magnifies errors at most 2.2 times); below 1/2 sinh is its Taylor series to x**15
 * (truncation below 2**-60).  a >= 89 (cosh and sinh overflow float32 beyond 89.42),
 * float32 subnormals (sinh's result would be one), NaN and inf go to the C library. */
static inline double exp_parts(double a, double *inv)
{
    double t = a * LOG2E + MAGIC;
    double k = t - MAGIC;
    double p = exp2_series(a * LOG2E - k);
    int64_t kb = f64_bits(t);
    *inv = (1.0 / p) * pow2(-kb);
    return p * pow2(kb);
}

static inline float cosh_fast(float x, int32_t *slow)
{
    float ax = fabsf(x);
    int bad = !(ax < 89.0f);
    double inv, e = exp_parts((double)ax, &inv);
    double r = 0.5 * (e + inv);
    *slow = bad | near_midpoint(r);
    return bad ? x : (float)r;
}

static inline float sinh_fast(float x, int32_t *slow)
{
    float ax = fabsf(x);
    int bad = !((ax < 89.0f) & (ax >= 0x1p-126f));
    double a = (double)ax;
    double inv, e = exp_parts(a, &inv);
    double big = 0.5 * (e - inv);
    double z = a * a;
    double small = a + a * z * (1.0 / 6 + z * (1.0 / 120 + z * (1.0 / 5040 + z * (
        1.0 / 362880 + z * (1.0 / 39916800 + z * (1.0 / 6227020800.0 + z * (
        1.0 / 1307674368000.0)))))));
    double r = a >= 0.5 ? big : small;
    *slow = bad | near_midpoint(r);
    float rf = (float)r;
    return bad ? x : (x < 0 ? -rf : rf);
}

VEC_LOOP(cosh, CHECKED_MAP(cosh_fast, cosh))
VEC_LOOP(sinh, CHECKED_MAP(sinh_fast, sinh))

/* log(1 + w) for a double w > -1/2 (finite): u = 1 + w rounded, log(u) as in log1p_fast,
 * plus (w - (u - 1)) / u for what the rounding of u lost (u - 1 and the difference are
 * exact); relative error about 2**-49 */
static inline double log1p_d(double w)
{
    double u = 1.0 + w;
    double c = (w - (u - 1.0)) / u;
    int64_t bits = f64_bits(u);
    int32_t e = (int32_t)((bits >> 52) & 0x7FF) - 1023;
    double m = bits_f64((bits & 0xFFFFFFFFFFFFFLL) | 0x3FF0000000000000LL);
    int big = m > SQRT2;
    m = big ? m * 0.5 : m;
    e = big ? e + 1 : e;
    double s = (m - 1.0) / (m + 1.0);
    double s2 = s * s;
    double lm = 2.0 * s * (1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (
        1.0 / 9 + s2 * (1.0 / 11 + s2 * (1.0 / 13 + s2 * (1.0 / 15 + s2 * (1.0 / 17)))))))));
    double ef = (double)e;
    return ef * LN2_HI + (ef * LN2_LO + (lm + c));
}

/* the inverse hyperbolic functions through log1p_d of an argument w computed with a
 * relative error of a few 2**-53 (which log1p passes on at most as is): under 64 float64
 * ulps in all, against SLACK.  Below 2**-12 asinh and atanh round to x itself (they are
 * x (1 -+ x**2/6 ...), x (1 + x**2/3 ...): within 2**-25.5 of x, under half a float32
 * ulp).  atanh(x) = log1p(2a / (1 - a)) / 2, asinh(x) = log1p(a + a**2 / (1 +
 * sqrt(1 + a**2))), acosh(x) = log1p(d + sqrt(d (2 + d))) with d = x - 1 (exact), each
 * with x's sign where odd; abs(x) >= 1 for atanh, x < 1 or inf for acosh, inf and NaN
 * go to the C library. */
static inline float atanh_fast(float x, int32_t *slow)
{
    float ax = fabsf(x);
    int bad = !(ax < 1.0f);
    int tiny = ax < 0x1p-12f;
    double a = (double)ax;
    double r = 0.5 * log1p_d(2.0 * a / (1.0 - a));
    *slow = bad | (near_midpoint(r) & !tiny);
    float rf = (float)r;
    return (bad | tiny) ? x : (x < 0 ? -rf : rf);
}

static inline float asinh_fast(float x, int32_t *slow)
{
    float ax = fabsf(x);
    int bad = !(ax < INFINITY);
    int tiny = ax < 0x1p-12f;
    double a = (double)ax;
    double a2 = a * a;
    double r = log1p_d(a + a2 / (1.0 + sqrt(1.0 + a2)));
    *slow = bad | (near_midpoint(r) & !tiny);
    float rf = (float)r;
    return (bad | tiny) ? x : (x < 0 ? -rf : rf);
}

static inline float acosh_fast(float x, int32_t *slow)
{
    int bad = !((x >= 1.0f) & (x < INFINITY));
    double d = (double)x - 1.0;
    double r = log1p_d(d + sqrt(d * (2.0 + d)));
    *slow = bad | near_midpoint(r);
    return bad ? x : (float)r;
}

VEC_LOOP(atanh, CHECKED_MAP(atanh_fast, atanh))
VEC_LOOP(asinh, CHECKED_MAP(asinh_fast, asinh))
VEC_LOOP(acosh, CHECKED_MAP(acosh_fast, acosh))

/* fills the Py_buffers of (x, out); 0, or -1 with an error set */
static int
get_buffers(PyObject *const *args, Py_ssize_t nargs, const char *name,
            Py_buffer *xb, Py_buffer *ob)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s takes 2 arguments (x, out), got %zd", name,
                     nargs);
        return -1;
    }
    if (PyObject_GetBuffer(args[0], xb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (PyObject_GetBuffer(args[1], ob,
                           PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(xb);
        return -1;
    }
    int ok = xb->itemsize == 4 && ob->itemsize == 4 && xb->format && ob->format
        && strcmp(xb->format, "f") == 0 && strcmp(ob->format, "f") == 0
        && xb->len == ob->len;
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s needs two C-contiguous float32 buffers of one "
                     "length (x: format %s, %zd bytes; out: format %s, %zd bytes)", name,
                     xb->format ? xb->format : "B", xb->len,
                     ob->format ? ob->format : "B", ob->len);
        PyBuffer_Release(xb);
        PyBuffer_Release(ob);
        return -1;
    }
    return 0;
}

/* Large arrays are split over the process's CPUs (the results are elementwise: the same
 * bits however they are split).  One call at a time does so: a call arriving while
 * another is split (the interpreter runs a large kernel's chunks on several threads)
 * runs in its own thread only, so the CPUs are not oversubscribed. */
#define SPLIT_MIN ((Py_ssize_t)1 << 18)       /* elements: below, one thread is faster */
#define MAX_THREADS 16
static int ncpu = 1;
static int splitting;

typedef struct {
    loop_fn loop;
    const float *x;
    float *out;
    Py_ssize_t n;
} part;

static void *
run_part(void *arg)
{
    part *p = (part *)arg;
    p->loop(p->x, p->out, p->n);
    return NULL;
}

static void
run_all(loop_fn loop, const float *x, float *out, Py_ssize_t n)
{
    Py_ssize_t t = n / (SPLIT_MIN / 2);
    t = t < ncpu ? t : ncpu;
    t = t < MAX_THREADS ? t : MAX_THREADS;
    if (t < 2 || __atomic_exchange_n(&splitting, 1, __ATOMIC_ACQUIRE)) {
        loop(x, out, n);
        return;
    }
    part parts[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS];
    Py_ssize_t step = ((n + t - 1) / t + 15) & ~(Py_ssize_t)15;   /* whole vectors */
    for (Py_ssize_t k = 0; k < t; k++) {
        Py_ssize_t lo = k * step < n ? k * step : n;
        Py_ssize_t hi = lo + step < n ? lo + step : n;
        parts[k] = (part){loop, x + lo, out + lo, hi - lo};
        started[k] = k > 0 && pthread_create(&tid[k], NULL, run_part, &parts[k]) == 0;
    }
    for (Py_ssize_t k = 0; k < t; k++)
        if (!started[k])
            run_part(&parts[k]);     /* the caller's part, and any that did not start */
    for (Py_ssize_t k = 1; k < t; k++)
        if (started[k])
            pthread_join(tid[k], NULL);
    __atomic_store_n(&splitting, 0, __ATOMIC_RELEASE);
}

static PyObject *
run(PyObject *const *args, Py_ssize_t nargs, const char *name, loop_fn loop)
{
    Py_buffer xb, ob;
    if (get_buffers(args, nargs, name, &xb, &ob) < 0)
        return NULL;
    Py_ssize_t n = xb.len / 4;
    const float *x = (const float *)xb.buf;
    float *out = (float *)ob.buf;
    /* out overlapping x other than exactly (a shifted view of one array): x is read
     * whole first, as a ufunc does; the loops read 16 elements before writing them */
    float *copy = NULL;
    if (out != x && (const float *)out < x + n && x < (const float *)out + n) {
        copy = PyMem_RawMalloc(n * sizeof(float));
        if (copy == NULL) {
            PyBuffer_Release(&xb);
            PyBuffer_Release(&ob);
            return PyErr_NoMemory();
        }
        memcpy(copy, x, n * sizeof(float));
        x = copy;
    }
    Py_BEGIN_ALLOW_THREADS
    run_all(loop, x, out, n);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(copy);
    PyBuffer_Release(&xb);
    PyBuffer_Release(&ob);
    Py_RETURN_NONE;
}

#define VEC_FN(name)                                                                \
    static PyObject *py_##name(PyObject *Py_UNUSED(m), PyObject *const *a,          \
                               Py_ssize_t n)                                        \
    {                                                                               \
        return run(a, n, #name, pick_##name());                                     \
    }
#define LIBM_FN(name)                                                               \
    static PyObject *py_##name(PyObject *Py_UNUSED(m), PyObject *const *a,          \
                               Py_ssize_t n)                                        \
    {                                                                               \
        return run(a, n, #name, loop_##name);                                       \
    }

VEC_FN(exp) VEC_FN(expm1) VEC_FN(log) VEC_FN(tanh) VEC_FN(logistic) VEC_FN(sin) VEC_FN(cos)
LIBM_FN(tan) LIBM_FN(asin) LIBM_FN(acos) LIBM_FN(atan) VEC_FN(sinh) VEC_FN(cosh)
VEC_FN(asinh) VEC_FN(acosh) VEC_FN(atanh) VEC_FN(log1p) VEC_FN(exp2) LIBM_FN(erf)
LIBM_FN(erfc)

/* _reference(name, x, out): the element functions above called one element at a time
 * through a pointer (no vectorisation, no blocks, no threads; sin/cos beyond LIMIT: the C
 * library's): the scalar algorithm that every loop must reproduce bit for bit (tests) */
#define REF_VEC(name) static float ref_##name(float v) { return name##_f32(v); }
#define REF_TRIG(name)                                                              \
    static float ref_##name(float v)                                                \
    {                                                                               \
        return trig_far(v) ? (float)name((double)v) : name##_f32(v);                \
    }
#define REF_LIBM(name) static float ref_##name(float v) { return (float)name((double)v); }
REF_VEC(exp) REF_VEC(expm1) REF_VEC(log) REF_VEC(tanh) REF_VEC(logistic)
REF_TRIG(sin) REF_TRIG(cos)
REF_LIBM(tan) REF_LIBM(asin) REF_LIBM(acos) REF_LIBM(atan) REF_LIBM(sinh) REF_LIBM(cosh)
REF_LIBM(asinh) REF_LIBM(acosh) REF_LIBM(atanh) REF_LIBM(log1p) REF_LIBM(exp2) REF_LIBM(erf)
REF_LIBM(erfc)

typedef float (*elem_fn)(float);
#define REF(name) {#name, ref_##name}
static const struct { const char *name; elem_fn f; } references[] = {
    REF(exp), REF(expm1), REF(log), REF(tanh), REF(logistic), REF(sin), REF(cos), REF(tan),
    REF(asin), REF(acos), REF(atan), REF(sinh), REF(cosh), REF(asinh), REF(acosh),
    REF(atanh), REF(log1p), REF(exp2), REF(erf), REF(erfc),
};

static PyObject *
py_reference(PyObject *Py_UNUSED(m), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_reference takes 3 arguments (name: str, x, out)");
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(args[0]);
    if (name == NULL)
        return NULL;
    elem_fn f = NULL;
    for (size_t k = 0; k < sizeof references / sizeof references[0]; k++)
        if (strcmp(references[k].name, name) == 0)
            f = references[k].f;
    if (f == NULL) {
        PyErr_Format(PyExc_ValueError, "_reference: no function named %R", args[0]);
        return NULL;
    }
    Py_buffer xb, ob;
    if (get_buffers(args + 1, 2, "_reference", &xb, &ob) < 0)
        return NULL;
    Py_ssize_t n = xb.len / 4;
    const float *x = (const float *)xb.buf;
    float *out = (float *)ob.buf;
    elem_fn volatile g = f;     /* a call per element, as the loop of one element did */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = g(x[i]);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&xb);
    PyBuffer_Release(&ob);
    Py_RETURN_NONE;
}

/* _use_isa(level): the loops to run from now on (0 plain, 1 AVX2+FMA, 2 AVX-512), at most
 * what this CPU has; returns the level in use before (tests compare the three) */
static int isa_max;

static PyObject *
py_use_isa(PyObject *Py_UNUSED(m), PyObject *arg)
{
    long level = PyLong_AsLong(arg);
    if (level == -1 && PyErr_Occurred())
        return NULL;
    if (level < 0 || level > isa_max) {
        PyErr_Format(PyExc_ValueError, "_use_isa: level %ld is not in [0, %d] (this CPU)",
                     level, isa_max);
        return NULL;
    }
    int before = isa;
    isa = (int)level;
    return PyLong_FromLong(before);
}

#define ENTRY(name) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL, \
    #name "(x, out): float32 " #name " of buffer x into buffer out"}

static PyMethodDef methods[] = {
    ENTRY(exp), ENTRY(expm1), ENTRY(log), ENTRY(tanh), ENTRY(logistic), ENTRY(sin),
    ENTRY(cos), ENTRY(tan), ENTRY(asin), ENTRY(acos), ENTRY(atan), ENTRY(sinh),
    ENTRY(cosh), ENTRY(asinh), ENTRY(acosh), ENTRY(atanh), ENTRY(log1p), ENTRY(exp2),
    ENTRY(erf), ENTRY(erfc),
    {"_use_isa", py_use_isa, METH_O, "_use_isa(level): the loops' instruction set (tests)"},
    {"_reference", (PyCFunction)(void (*)(void))py_reference, METH_FASTCALL,
     "_reference(name, x, out): the scalar algorithm, one element at a time (tests)"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_f32math",
    "float32 transcendental functions shared by the reference implementations "
    "(see _f32math.c)", -1, methods, NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit__f32math(void)
{
#if HAVE_CLONES
    __builtin_cpu_init();
    int fma3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    isa = fma3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
        && __builtin_cpu_supports("avx512vl") ? 2 : fma3 ? 1 : 0;
#else
    isa = 0;
#endif
    isa_max = isa;
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        ncpu = CPU_COUNT(&set);
#endif
    ncpu = ncpu > 0 ? ncpu : 1;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *c = Py_BuildValue(
        "{sdsdsdsdsdsdsdsdsdsdsdsdsdsdsdsdsdsdsdsdsdsdsd}",
        "_LOG2E", LOG2E, "_LN2_HI", LN2_HI, "_LN2_LO", LN2_LO, "_E0", E0, "_E1", E1,
        "_E2", E2, "_E3", E3, "_E4", E4, "_E5", E5, "_S0", S0, "_S1", S1, "_S2", S2,
        "_S3", S3, "_C0", C0, "_C1", C1, "_C2", C2, "_C3", C3, "_PIO2_1", PIO2_1,
        "_PIO2_2", PIO2_2, "_PIO2_3", PIO2_3, "_TWO_OVER_PI", TWO_OVER_PI,
        "_SQRT2", SQRT2, "_MAGIC", MAGIC);
    if (c == NULL || PyModule_AddObject(m, "CONSTANTS", c) < 0) {
        Py_XDECREF(c);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "ISA", isa) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
