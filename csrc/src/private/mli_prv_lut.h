/* The Q15 lookup tables of tanh and sigmoid and their evaluation (SPEC 6). */
#ifndef MLI_PRV_LUT_H
#define MLI_PRV_LUT_H

#include <stdint.h>
#include "mli_math.h"

typedef struct {
    const int16_t *data;
    const int32_t *data32; /* the same values widened (for vector gathers) */
    const int16_t *pad192; /* the same values padded to 192 (for in-register lookups) */
    int length;
    int offset;   /* index of the entry for input 0 */
    int frac;     /* entry i is f((i - offset) / 2^frac) */
} mli_lut;

extern const mli_lut mli_prv_tanh_lut;
extern const mli_lut mli_prv_sigm_lut;

static inline int mli_prv_clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* One element: x with `frac_in` fractional bits -> Q15 (SPEC 6.2). */
static inline int16_t mli_prv_lut_q15(const mli_lut *lut, int32_t x, int frac_in) {
    int s = frac_in - lut->frac;
    if (s > 0) {
        int pre = s > 15 ? s - 15 : 0;
        if (s > 15) s = 15;
        int32_t xs = x >> (pre > 31 ? 31 : pre);           /* floor */
        int idx = mli_prv_clamp_int(mli_math_sat16((xs >> s) + lut->offset), 0, lut->length - 2);
        int32_t frac = xs & ((1 << s) - 1);                 /* 0 .. 2^s - 1 */
        int32_t diff = mli_math_sat16((int32_t)lut->data[idx] - lut->data[idx + 1]);
        return mli_math_sat16((int32_t)lut->data[idx] - mli_math_read16((int64_t)diff * frac, s));
    }
    /* Input coarser than the table: no interpolation. */
    int32_t v = mli_math_sat16((int64_t)x * (1 << -s));
    int idx = mli_prv_clamp_int(mli_math_sat16(v + lut->offset), 0, lut->length - 1);
    return lut->data[idx];
}

/* Q15 -> Q7 step of the 8-bit kernels (SHIFT family rounding). */
static inline int8_t mli_prv_q15_to_q7(int16_t r) { return mli_math_sat8(mli_math_asr16(r, 8)); }

/* Vector evaluation: y[i] = LUT(x[i]) (Q15 for 16-bit data, Q7 for 8-bit
 * data); y may be x.  Same integers as mli_prv_lut_q15 (mli_prv_lut.c). */
void mli_prv_lut_vec16(const mli_lut *lut, const int16_t *x, long n, int frac_in, int16_t *y);
void mli_prv_lut_vec8(const mli_lut *lut, const int8_t *x, long n, int frac_in, int8_t *y);

#endif /* MLI_PRV_LUT_H */
