/* The Q15 lookup tables of tanh, sigmoid (SPEC 6) and softmax's exp(-t)
 * (SPEC_MLI11_MORE 8) and their evaluation. */
#ifndef MLI_PRV_LUT_H
#define MLI_PRV_LUT_H

#include <stdint.h>
#include "mli_math.h"

typedef struct {
    const int16_t *data;
    const int32_t *data32; /* the same values widened (read by the scalar lut_one) */
    const int16_t *pad192; /* the same values padded to 192 (for in-register lookups) */
    const int32_t *pair192; /* pad192[i] | pad192[i + 1] << 16 (the last: pad192[191]): both entries of an
                             * interpolation in one load (the AVX2 gathers and picks) */
    int length;
    int offset;   /* index of the entry for input 0 */
    int frac;     /* entry i is f((i - offset) / 2^frac) */
} mli_lut;

extern const mli_lut mli_prv_tanh_lut;
extern const mli_lut mli_prv_sigm_lut;
extern const mli_lut mli_prv_expneg_lut; /* exp(-t) of the softmax (SPEC_MLI11_MORE 8) */

/* Vector evaluation: y[i] = LUT(x[i]) (Q15 for 16-bit data, Q7 for 8-bit
 * data); y may be x.  The scalar evaluation of one element (SPEC 6.2) is
 * lut_one in mli_prv_lut.c; the SIMD versions compute the same integers. */
void mli_prv_lut_vec16(const mli_lut *lut, const int16_t *x, long n, int frac_in, int16_t *y);
void mli_prv_lut_vec8(const mli_lut *lut, const int8_t *x, long n, int frac_in, int8_t *y);

/* The results of mli_prv_lut_vec8 for this table and frac_in under the
 * current rounding mode, for every input x at out[x + 128] (a copy: the
 * per-thread tables behind it may be replaced by later calls).  x86 SIMD
 * builds only (MLIPY_X86_TARGETS). */
void mli_prv_lut8_table(const mli_lut *lut, int frac_in, int16_t out[256]);

/* The results of mli_prv_lut_vec16 for this table (tanh or sigm) and
 * frac_in under the current rounding mode, for every int16 input x at
 * [(uint16_t)x]: 65,536 entries built on first use and kept for the
 * process (shared by its threads, never changed once published).  NULL for
 * other tables, past MLIPY_LUT16_FULL_MAX tables or without memory; the
 * callers then evaluate the table as before.  x86 SIMD builds only
 * (MLIPY_X86_TARGETS; NULL elsewhere). */
#define MLIPY_LUT16_FULL_MAX 32
const int16_t *mli_prv_lut16_full(const mli_lut *lut, int frac_in);

#endif /* MLI_PRV_LUT_H */
