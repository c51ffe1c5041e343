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
/* One step of a 40-bit accumulator that saturates after every operation. */
static inline int64_t mli_math_acc40_add(int64_t acc, int64_t x) { return mli_math_sat40(acc + x); }

/* C int arithmetic of MLI's plain loops: the low 32 bits (two's complement). */
static inline int32_t mli_math_wrap32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }

/* Redundant sign bits of a 32-bit value (31 for 0 and -1). */
static inline int mli_math_norm32(int32_t x) {
    uint32_t u = x < 0 ? ~(uint32_t)x : (uint32_t)x;
    int n = 0;
    while (n < 31 && !(u & (0x40000000u >> n))) n++;
    return n;
}

/* ------------------------------------------------ average pooling -- */
/* The multiplier and shift by which average pooling divides a sum of k
 * values (SPEC_MLI11_MORE 6): for k < 32 MLI's table, (1, log2 k) for a
 * power of two, else (floor(2^s / k), s) with s = 14 + ceil(log2 k) (0 for
 * k = 0); from 32 on floor(2^31 / k) normalised to 15 bits and the shift
 * that goes with it, computed as MLI does in 32-bit unsigned arithmetic. */
static inline void mli_math_avg_mul_shift(uint32_t k, int16_t *mul, int *shift) {
    if (k < 32) {
        int lg = 0;
        while ((1u << lg) < k) lg++;
        if (k == 0) { *mul = 0; *shift = 0; }
        else if ((1u << lg) == k) { *mul = 1; *shift = lg; }
        else { *shift = 14 + lg; *mul = (int16_t)((1u << *shift) / k); }
        return;
    }
    uint32_t val = 0x80000000u / k;
    const int norm = mli_math_norm32((int32_t)val) + 1;
    val = norm < 32 ? val << norm : 0;
    *mul = (int16_t)(val >> 17);
    *shift = 14 + norm;
}

/* ------------------------------------------ leaky ReLU and softmax -- */
/* Leaky ReLU's test of its slope a (frac bits f) against one: a < 1 << f in
 * 16 bits, true for f > 15; at f = 15 the 16-bit one is -32768 and the test
 * is never true (SPEC_MLI11_MORE 7). */
static inline int mli_math_less_than_one(int16_t a, int f) {
    if (f > 15) return 1;
    return a < (int16_t)(uint16_t)(1u << f);
}

/* Softmax's reciprocal of the sum S > 0 of its exponentials (SPEC_MLI11_MORE
 * 8): *norm = 31 - bitlength(S) (negative beyond 2^31, as the 40-bit
 * accumulator's count continues), the Q15 mantissa m = SAT_16(RND(S, 16 -
 * *norm)), and min(2^29 / m, 32767). */
static inline int32_t mli_math_softmax_recip(int64_t sum, int *norm) {
    int bits = 0;
    while (bits < 40 && (sum >> bits) != 0) bits++;
    *norm = 31 - bits;
    const int64_t mnt = mli_math_asr_rnd_sat(sum, 16 - *norm, 16);
    const int64_t r = ((int64_t)1 << 29) / mnt;
    return (int32_t)(r > 32767 ? 32767 : r);
}

/* -------------------------------------------- sa8 (SPEC_MLI11_MORE 5) -- */
/* The ACC0 accumulator of the 16x8 dual MACs: 40 bits that saturate,
 * read back saturated to 32 bits after every MAC. */
static inline int32_t mli_math_acc0_read(int64_t acc0) { return mli_math_sat32(acc0); }
/* Whether `steps` MACs of at most 2^23 each, from a 32-bit start, keep every
 * partial sum below ACC0's 40-bit limit (then only the final read-out
 * saturates, and the exact sum gives MLI's value). */
static inline int mli_math_acc0_exact(int64_t steps) {
    return steps < (((int64_t)1 << 39) - ((int64_t)1 << 31)) / ((int64_t)1 << 23);
}

/* The multiplier of the weights' sums, -zero_point as MLI passes it: in 16
 * bits (-(-32768) wraps to -32768). */
static inline int16_t mli_math_sa8_neg_zp(int16_t zp) { return (int16_t)(uint16_t)(0u - (uint16_t)zp); }

/* in.scale / out.scale in Q30: SAT_32((in_scale << 30) / out_scale), a
 * 64-bit C division (toward zero); out_scale must not be 0. */
static inline int32_t mli_math_sa8_scale_ratio(int32_t in_scale, int32_t out_scale) {
    return mli_math_sat32(((int64_t)in_scale * ((int64_t)1 << 30)) / out_scale);
}
/* The output multiplier of one channel: SAT_32(RND(ratio * w_scale, 32)). */
static inline int32_t mli_math_sa8_out_mul(int32_t ratio, int32_t w_scale) {
    return (int32_t)mli_math_asr_rnd_sat((int64_t)ratio * w_scale, 32, 32);
}
/* The sa8 output stage before the ReLU clamp: SAT_16(RND(acc * out_mul,
 * shift)) (a left shift for shift < 0), then SAT_16(+ zero point). */
static inline int16_t mli_math_sa8_requant16(int32_t acc, int32_t out_mul, int shift, int16_t zero_point) {
    const int64_t y = mli_math_asr_rnd_sat((int64_t)acc * out_mul, shift, 16);
    return mli_math_sat16(y + zero_point);
}

/* (c << sfb) / scale as MLI's ReLU helper computes it for an sa8 output: a
 * 64-bit shift by the scale_frac_bits read as an unsigned count (the x86
 * build shifts by it mod 64), a 64-bit C division, the quotient truncated
 * to int.  0 when the division would trap (scale 0, or INT64_MIN / -1):
 * the callers refuse those calls first (mli_math_sa8_relu_traps). */
static inline int32_t mli_math_sa8_relu_unit(int64_t c, int8_t sfb, int32_t scale) {
    const int64_t num = (int64_t)((uint64_t)c << ((uint32_t)(int32_t)sfb & 63u));
    if (scale == 0 || (num == INT64_MIN && scale == -1)) return 0;
    return mli_math_wrap32(num / scale);
}
static inline int mli_math_sa8_relu_traps(int8_t sfb, int32_t scale) {
    const unsigned sh = (uint32_t)(int32_t)sfb & 63u;
    return scale == 0 || (scale == -1 && (((uint64_t)6 << sh) == ((uint64_t)1 << 63) || sh == 63));
}

/* The ReLU limits of an sa8 convolution's output (SPEC_MLI11_MORE 5), with
 * MLI's int arithmetic and its 16-bit and then 8-bit truncations of the
 * limits: GEN [zp, 127], RELU_6 [zp, min(zp + six, 127)], RELU_1
 * [max(zp - one, -128), min(zp + one, 127)], any other type [-128, 127]. */
static inline void mli_math_sa8_relu_limits(int type, int16_t zp, int8_t sfb, int32_t scale, int8_t *lo,
                                            int8_t *hi) {
    const int32_t six = mli_math_wrap32((int64_t)mli_math_sa8_relu_unit(6, sfb, scale) + zp);
    const int32_t one_u = mli_math_sa8_relu_unit(1, sfb, scale);
    const int32_t one = mli_math_wrap32((int64_t)one_u + zp), neg_one = mli_math_wrap32(-(int64_t)one_u + zp);
    int32_t mn = -128, mx = 127;
    switch (type) {
    case MLI_RELU_GEN: mn = zp; break;
    case MLI_RELU_6: mn = zp; mx = six < 127 ? six : 127; break;
    case MLI_RELU_1: mn = neg_one > -128 ? neg_one : -128; mx = one < 127 ? one : 127; break;
    default: break;
    }
    *lo = (int8_t)(int16_t)mn;
    *hi = (int8_t)(int16_t)mx;
}

/* An sa8 output value: the requantized value clamped to the ReLU limits
 * (in 16 bits, the maximum first), stored as int8. */
static inline int8_t mli_math_sa8_clamp(int16_t y, int8_t lo, int8_t hi) {
    y = y < hi ? y : hi;
    y = y > lo ? y : lo;
    return (int8_t)y;
}

/* ---- convolution (SPEC_MLI11_MORE.md sections 2 and 4) ---- */
/* The conv kernels' accumulators: every sum starts from the bias shifted
 * left with saturation, to 40 bits (fx16) or 32 bits (fx8, fx8w16d: the
 * register that loads ACC0).  ACC0 and the fx16 accumulator then saturate
 * at 40 bits after every MAC step (mli_math_sat40); the two-output loops of
 * fx8 / fx8w16d keep each output in a plain C int32 that wraps (mli_math_wrap32). */
static inline int64_t mli_math_bias_acc(int64_t b, int shift, int bits) { return mli_math_sat_shl(b, shift, bits); }
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
