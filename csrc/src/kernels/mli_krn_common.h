/* What every kernel family's translation unit includes. */
#ifndef MLI_KRN_COMMON_H
#define MLI_KRN_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include "mli_api.h"
#include "../private/mli_check.h"
#include "../private/mli_math.h"
#include "../private/mli_prv_dense.h"
#include "../private/mli_prv_isa.h"
#include "../private/mli_prv_lut.h"
#include "../private/mli_prv_template.h"
#include "../private/mli_prv_tensor.h"

/* LSTM (MLI quirk): MLI evaluates the output activation of the cell into the
 * out row with its tanh/sigm kernel, which refuses a cell that is not CONTIG;
 * the LSTM call goes on with what the row held (mli_krn_lstm_impl.h). */
static inline int mli_lstm_p_from_out(const mli_tensor *cell, mli_rnn_out_activation act) {
    return act != RNN_ACT_NONE && !mli_prv_contig_t(cell);
}

/* A vector of activations; y may be x. */
static inline void mli_prv_act_vec16(const mli_lut *lut, const int16_t *x, long n, int f, int16_t *y) {
    mli_prv_lut_vec16(lut, x, n, f, y);
}
static inline void mli_prv_act_vec8(const mli_lut *lut, const int8_t *x, long n, int f, int8_t *y) {
    mli_prv_lut_vec8(lut, x, n, f, y);
}
#endif
