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

#endif /* MLI_MATH_H */
