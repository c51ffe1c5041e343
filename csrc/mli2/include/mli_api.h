/* The MLI 2.0.2 kernels mli-py provides (recurrent cells, dense layers,
 * tanh and sigmoid), with MLI 2.x's names and signatures.  Every call checks
 * its arguments (MLI's DBG_MODE_RET_CODES statuses, in MLI's order); calls
 * that MLI would accept but that would make it read or write out of bounds
 * are refused too (see mlipy2_ext.h). */
#ifndef MLI_API_H
#define MLI_API_H

#include "mli_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* LUT objects */
int32_t mli_krn_tanh_get_lut_size(void);
int32_t mli_krn_sigm_get_lut_size(void);
mli_status mli_krn_tanh_create_lut(mli_lut *lut);
mli_status mli_krn_sigm_create_lut(mli_lut *lut);

/* tanh / sigm */
#define MLI2_ACT_DECL(fn, kind) mli_status mli_krn_##fn##_##kind(const mli_tensor *in, const mli_lut *lut, mli_tensor *out);
MLI2_ACT_DECL(tanh, fx8)
MLI2_ACT_DECL(tanh, fx16)
MLI2_ACT_DECL(tanh, sa8)
MLI2_ACT_DECL(sigm, fx8)
MLI2_ACT_DECL(sigm, fx16)
MLI2_ACT_DECL(sigm, sa8)
#undef MLI2_ACT_DECL

/* fully_connected: weights (N, M), bias (M), out (M) */
#define MLI2_FC_DECL(kind)                                                                                   \
    mli_status mli_krn_fully_connected_##kind(const mli_tensor *in, const mli_tensor *weights,              \
                                              const mli_tensor *bias, const mli_fully_connected_cfg *cfg,  \
                                              mli_tensor *out);
MLI2_FC_DECL(fx8)
MLI2_FC_DECL(fx16)
MLI2_FC_DECL(fx16_fx8_fx8)
MLI2_FC_DECL(sa8_sa8_sa32)
MLI2_FC_DECL(sa8_sa8_sa32_ext_bias)
#undef MLI2_FC_DECL

/* rnn_dense: out = sum_i in[i] . weights[i] + bias, i < cfg->inputs_num */
#define MLI2_DENSE_DECL(kind)                                                                                \
    mli_status mli_krn_rnn_dense_##kind(const mli_tensor **in, const mli_tensor **weights,                  \
                                        const mli_tensor *bias, const mli_rnn_dense_cfg *cfg, mli_tensor *out);
MLI2_DENSE_DECL(fx16)
MLI2_DENSE_DECL(fx16_fx8_fx8)
MLI2_DENSE_DECL(sa8_sa8_sa32)
#undef MLI2_DENSE_DECL

/* LSTM: gates (i, g, f, o); weights_in (4, N, M), weights_out (4, M, M), bias (4, M) */
#define MLI2_LSTM_DECL(kind)                                                                                 \
    mli_status mli_krn_lstm_cell_##kind(const mli_tensor *in, const mli_tensor *prev_out,                   \
                                        const mli_tensor *weights_in, const mli_tensor *weights_out,        \
                                        const mli_tensor *bias, const mli_lut *tanh_lut,                    \
                                        const mli_lut *sigm_lut, const mli_rnn_cell_cfg *cfg,               \
                                        mli_tensor *cell, mli_tensor *out);
MLI2_LSTM_DECL(fx16)
MLI2_LSTM_DECL(fx16_fx8_fx8)
MLI2_LSTM_DECL(sa8_sa8_sa32)
#undef MLI2_LSTM_DECL

/* GRU: gates (z, r, n); weights_in (3, N, M), weights_out (3, M, M), bias (3, M) */
#define MLI2_GRU_DECL(kind)                                                                                  \
    mli_status mli_krn_gru_cell_##kind(const mli_tensor *in, const mli_tensor *prev_out,                    \
                                       const mli_tensor *weights_in, const mli_tensor *weights_out,         \
                                       const mli_tensor *bias, const mli_lut *tanh_lut,                     \
                                       const mli_lut *sigm_lut, const mli_rnn_cell_cfg *cfg, mli_tensor *out);
MLI2_GRU_DECL(fx16)
MLI2_GRU_DECL(fx16_fx8_fx8)
MLI2_GRU_DECL(sa8_sa8_sa32)
#undef MLI2_GRU_DECL

#ifdef __cplusplus
}
#endif
#endif /* MLI_API_H */
