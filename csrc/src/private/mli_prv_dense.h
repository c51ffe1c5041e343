/* The dense core shared by FC, basic RNN and LSTM (SPEC.md section 4).
 *
 * y[k] = out(bias[k] << bias_shift + x . W[k][0:N]  --in_to_state-->  + h . W[k][N:N+S])
 * with the accumulator model of the variant: 40-bit with a floor rescale
 * for fx16, 32-bit with a rounding rescale for fx8 and fx8w16d. */
#ifndef MLI_PRV_DENSE_H
#define MLI_PRV_DENSE_H

#include <stdint.h>

typedef struct {
    int bias_shift;  /* f_in + f_w - f_b */
    int in_to_state; /* f_in - f_h (unused when S == 0) */
    int out_shift;   /* f_h + f_w - f_o (FC: f_in + f_w - f_o) */
} mli_dense_shifts;

/* W rows start `row_stride` elements apart; row k = N input weights then S
 * state weights.  y has K elements. */
#define MLI_DENSE_DECL(sfx, io_t, w_t)                                                    \
    void mli_prv_dense_##sfx(const io_t *x, int N, const io_t *h, int S, const w_t *W,   \
                             long row_stride, const w_t *b, int K, mli_dense_shifts sh,  \
                             io_t *y);
MLI_DENSE_DECL(fx8, int8_t, int8_t)
MLI_DENSE_DECL(fx16, int16_t, int16_t)
MLI_DENSE_DECL(fx8w16d, int16_t, int8_t)

#endif
