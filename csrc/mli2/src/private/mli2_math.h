/* Fixed-point primitives of the MLI 2.0.2 arithmetic (SPEC_MLI2.md section 2):
 * saturation, saturating shifts, the single rounding shift RSHR whose tie
 * rule is ROUND_MODE, NORM.  Values are held in int64 and treated as W-bit
 * values (W = 8, 16, 32, 64) where a function takes W. */
#ifndef MLI2_MATH_H
#define MLI2_MATH_H

#include <stdint.h>

#if defined(_MSC_VER)
#define MLI2_THREAD_LOCAL __declspec(thread)
#define MLI2_HIDDEN
#else
#define MLI2_THREAD_LOCAL _Thread_local
/* library-internal, and in the static TLS block: read with one load, not a
 * __tls_get_addr call (the rounding mode is read in every RSHR) */
#define MLI2_HIDDEN __attribute__((visibility("hidden"), tls_model("initial-exec")))
#endif

/* ROUND_MODE of the call running on this thread (1 = UP), fixed at entry. */
extern MLI2_HIDDEN MLI2_THREAD_LOCAL int mli2_round_up;

static inline int64_t m2_max_w(int W) { return W >= 64 ? INT64_MAX : (((int64_t)1 << (W - 1)) - 1); }
static inline int64_t m2_min_w(int W) { return W >= 64 ? INT64_MIN : -((int64_t)1 << (W - 1)); }
static inline int64_t m2_sat(int64_t x, int W) {
    const int64_t hi = m2_max_w(W), lo = m2_min_w(W);
    return x > hi ? hi : (x < lo ? lo : x);
}
static inline int32_t m2_sat32(int64_t x) { return (int32_t)m2_sat(x, 32); }
static inline int16_t m2_sat16(int64_t x) { return (int16_t)m2_sat(x, 16); }
static inline int8_t m2_sat8(int64_t x) { return (int8_t)m2_sat(x, 8); }
/* WRAP_W: modulo 2^W into the signed range (what a narrowing C cast does on gcc). */
static inline int32_t m2_wrap32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }
static inline int16_t m2_wrap16(int64_t x) { return (int16_t)(uint16_t)(uint64_t)x; }
static inline int8_t m2_wrap8(int64_t x) { return (int8_t)(uint8_t)(uint64_t)x; }

/* ADD_W / SUB_W of two W-bit values (W <= 64), saturating. */
static inline int64_t m2_add(int64_t a, int64_t b, int W) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return a > 0 ? INT64_MAX : INT64_MIN;
    return m2_sat(r, W);
}
static inline int64_t m2_sub(int64_t a, int64_t b, int W) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) return a >= 0 ? INT64_MAX : INT64_MIN;
    return m2_sat(r, W);
}

/* SHL_W(x, n), n >= 0: SAT_W(x * 2^n). */
static inline int64_t m2_shl(int64_t x, int n, int W) {
    if (x == 0) return 0;
    if (n > W - 1) return x > 0 ? m2_max_w(W) : m2_min_w(W);
    const int64_t hi = m2_max_w(W), lo = m2_min_w(W);
    if (x > (hi >> n)) return hi;
    if (x < (lo >> n)) return lo;
    return (int64_t)((uint64_t)x << n);
}

/* ASR_W(x, n): floor(x / 2^n); n < 0 a saturating left shift. */
static inline int64_t m2_asr(int64_t x, int n, int W) {
    if (n < 0) return m2_shl(x, -n, W);
    if (n > W - 1) return x < 0 ? -1 : 0;
    return x >> n;
}

/* RSHR_W(x, n): the library's rounding shift (SPEC_MLI2.md 2.2). */
static inline int64_t m2_rshr(int64_t x, int n, int W) {
    if (n < 0) return m2_shl(x, -n, W);
    if (n == 0) return x;
    if (n > W - 1) return 0;
    const int64_t half = (int64_t)1 << (n - 1);
    if (mli2_round_up) return m2_add(x, half, W) >> n; /* the half is added with saturation */
    int64_t q = x >> n;
    const uint64_t rem = (uint64_t)x & (((uint64_t)1 << n) - 1);
    if (rem > (uint64_t)half || (rem == (uint64_t)half && (q & 1))) q += 1;
    return q;
}

/* NORM (32-bit): redundant sign bits, 31 for 0 and -1. */
static inline int m2_norm32(int32_t x) {
    const uint32_t v = (uint32_t)(x ^ (x >> 31));
    return v == 0 ? 31 : __builtin_clz(v) - 1;
}

/* C integer division (truncating); b != 0. */
static inline int32_t m2_div32(int32_t a, int32_t b) {
    if (b == -1) return a == INT32_MIN ? INT32_MAX : -a; /* not reachable with positive scales */
    return a / b;
}

static inline int m2_imin(int a, int b) { return a < b ? a : b; }
static inline int m2_imax(int a, int b) { return a > b ? a : b; }

#endif /* MLI2_MATH_H */
