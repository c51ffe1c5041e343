/* Fixed-point primitives of the MLI 1.1 arithmetic (SPEC.md section 2).
 *
 * Every value is computed exactly in 64-bit integers and then rounded or
 * saturated at the points the specification names, so each arithmetic
 * decision has one named function here and kernels contain only loops. */
#ifndef MLI_MATH_H
#define MLI_MATH_H

#include <stdint.h>
#include "mli_config.h"
#include "mlipy_ext.h"

/* The DSP rounding mode of the call running on this thread (mli_error.c). */
extern MLIPY_THREAD_LOCAL int mlipy_rounding_up;
void mlipy_rounding_begin(void);
/* 1 when the thread's poll function (mlipy_set_poll) asks to stop after `step`. */
int mlipy_poll_now(long step);

static inline int64_t mli_math_sat(int64_t x, int bits) {
    const int64_t hi = ((int64_t)1 << (bits - 1)) - 1, lo = -hi - 1;
    return x > hi ? hi : (x < lo ? lo : x);
}
static inline int32_t mli_math_sat32(int64_t x) { return (int32_t)mli_math_sat(x, 32); }
static inline int16_t mli_math_sat16(int64_t x) { return (int16_t)mli_math_sat(x, 16); }
static inline int8_t mli_math_sat8(int64_t x) { return (int8_t)mli_math_sat(x, 8); }

/* SAT_bits(x * 2^n) for n >= 0, without overflowing on the way. */
static inline int64_t mli_math_sat_shl(int64_t x, int n, int bits) {
    const int64_t hi = ((int64_t)1 << (bits - 1)) - 1;
    if (x == 0) return 0;
    if (n >= bits) return x > 0 ? hi : -hi - 1;
    if (x > (hi >> n)) return hi;
    if (x < -((hi + 1) >> n)) return -hi - 1;
    return x * ((int64_t)1 << n);
}

/* floor(x / 2^n) for n > 0 (the 40-bit accumulator's plain shift). */
static inline int64_t mli_math_floor_shr(int64_t x, int n) {
    if (n >= 63) return x < 0 ? -1 : 0;
    return x >> n; /* arithmetic shift on every supported compiler */
}

/* x / 2^n rounded to nearest, ties by the DSP rounding mode, for n > 0.
 * All discarded bits take part in the tie decision. */
static inline int64_t mli_math_rnd_shr(int64_t x, int n) {
    if (n >= 64) return 0; /* |x / 2^n| <= 1/2, and a tie at -1/2 goes to 0 either way */
    int64_t q = mli_math_floor_shr(x, n);
    uint64_t rem = (uint64_t)x & ((n == 63) ? (~(uint64_t)0 >> 1) : (((uint64_t)1 << n) - 1));
    uint64_t half = (uint64_t)1 << (n - 1);
    if (rem > half || (rem == half && (mlipy_rounding_up || (q & 1)))) q += 1;
    return q;
}

/* RND(x, n) then saturate to `bits`; n <= 0 is a saturating left shift.
 * ASR32 / ASR16 (SHIFT family) and READ16 (ACC family) are this function:
 * in MLI 1.1's build both families round by the same DSP mode. */
static inline int64_t mli_math_asr_rnd_sat(int64_t x, int n, int bits) {
    if (n <= 0) return mli_math_sat_shl(x, -n, bits);
    return mli_math_sat(mli_math_rnd_shr(x, n), bits);
}
static inline int32_t mli_math_asr32(int64_t x, int n) { return (int32_t)mli_math_asr_rnd_sat(x, n, 32); }
static inline int16_t mli_math_asr16(int64_t x, int n) { return (int16_t)mli_math_asr_rnd_sat(x, n, 16); }
static inline int16_t mli_math_read16(int64_t acc, int n) { return (int16_t)mli_math_asr_rnd_sat(acc, n, 16); }

/* 40-bit accumulator helpers (fx16 kernels). */
static inline int64_t mli_math_sat40(int64_t x) { return mli_math_sat(x, 40); }
/* FLOOR_SHIFT of SPEC 2.3: n > 0 plain floor shift, n < 0 left shift. */
static inline int64_t mli_math_acc40_shift(int64_t acc, int n) {
    if (n > 0) return mli_math_floor_shr(acc, n);
    return mli_math_sat_shl(acc, -n, 40);
}

/* ---- convolution (SPEC_MLI11_MORE.md sections 2 and 4) ---- */
/* The conv kernels' accumulators: every sum starts from the bias shifted
 * left with saturation, to 40 bits (fx16) or 32 bits (fx8, fx8w16d: the
 * register that loads ACC0).  ACC0 and the fx16 accumulator then saturate
 * at 40 bits after every MAC step (mli_math_sat40); the two-output loops of
 * fx8 / fx8w16d keep each output in a plain C int32 that wraps. */
static inline int64_t mli_math_bias_acc(int64_t b, int shift, int bits) { return mli_math_sat_shl(b, shift, bits); }
static inline int64_t mli_math_wrap32(int64_t x) { return (int64_t)(int32_t)(uint32_t)(uint64_t)x; }
/* min(x, hi) then max(., lo), MLI's order (lo > hi gives lo). */
static inline int32_t mli_math_relu_clip(int32_t x, int16_t lo, int16_t hi) {
    x = x > hi ? hi : x;
    return x < lo ? lo : x;
}
/* The store into the output container: the low 8 / 16 bits. */
static inline int8_t mli_math_trunc8(int32_t x) { return (int8_t)(uint8_t)((uint32_t)x & 0xffu); }
static inline int16_t mli_math_trunc16(int32_t x) { return (int16_t)(uint16_t)((uint32_t)x & 0xffffu); }
/* ReLU limits of a convolution's output (frac bits f, `bits` = 8 or 16):
 * 1 and 6 as C int shifted by f mod 32 (wrapping), clamped into the
 * container, then truncated to 16 bits (SPEC_MLI11_MORE.md 2). */
static inline void mli_math_relu_limits(int type, unsigned f, int bits, int16_t *lo, int16_t *hi) {
    const int32_t mn = bits == 8 ? INT8_MIN : INT16_MIN, mx = bits == 8 ? INT8_MAX : INT16_MAX;
    const int32_t one = (int32_t)((uint32_t)1 << (f & 31u)), six = (int32_t)((uint32_t)6 << (f & 31u));
    const int32_t neg_one = (int32_t)(0u - (uint32_t)one);
    int32_t l = mn, h = mx;
    switch (type) {
    case MLI_RELU_GEN: l = 0; h = mx; break;
    case MLI_RELU_6: l = 0; h = six < mx ? six : mx; break;
    case MLI_RELU_1: l = neg_one > mn ? neg_one : mn; h = one < mx ? one : mx; break;
    default: break;
    }
    *lo = mli_math_trunc16(l);
    *hi = mli_math_trunc16(h);
}

#endif /* MLI_MATH_H */
