/* mli-py: the MLI 1.1 kernels a recurrent model needs (same names and
 * arguments as MLI 1.1).  Every function checks its arguments first and
 * returns a non-OK status without writing anything when a check fails. */
#ifndef MLI_KERNELS_API_H
#define MLI_KERNELS_API_H

#include "mli_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLIPY_DECLARE_3(decl) decl(fx8) decl(fx16) decl(fx8w16d)
#define MLIPY_DECLARE_2(decl) decl(fx8) decl(fx16)

#define MLIPY_FC_DECL(sfx)                                                      \
    mli_status mli_krn_fully_connected_##sfx(const mli_tensor *in, const mli_tensor *weights, \
                                             const mli_tensor *bias, mli_tensor *out);
#define MLIPY_RNN_DECL(sfx)                                                     \
    mli_status mli_krn_basic_rnn_cell_##sfx(const mli_tensor *in, const mli_tensor *prev_out, \
                                            const mli_tensor *weights, const mli_tensor *bias, \
                                            const mli_rnn_cell_cfg *cfg, mli_tensor *out);
#define MLIPY_LSTM_DECL(sfx)                                                    \
    mli_status mli_krn_lstm_cell_##sfx(const mli_tensor *in, const mli_tensor *prev_out, \
                                       const mli_tensor *weights, const mli_tensor *bias, \
                                       const mli_rnn_cell_cfg *cfg, mli_tensor *cell,     \
                                       mli_tensor *out);
#define MLIPY_ACT_DECL(sfx)                                                     \
    mli_status mli_krn_tanh_##sfx(const mli_tensor *in, mli_tensor *out);      \
    mli_status mli_krn_sigm_##sfx(const mli_tensor *in, mli_tensor *out);      \
    mli_status mli_krn_relu_##sfx(const mli_tensor *in, const mli_relu_cfg *cfg, mli_tensor *out);
#define MLIPY_ELTWISE_DECL(sfx)                                                 \
    mli_status mli_krn_eltwise_add_##sfx(const mli_tensor *in1, const mli_tensor *in2, mli_tensor *out); \
    mli_status mli_krn_eltwise_sub_##sfx(const mli_tensor *in1, const mli_tensor *in2, mli_tensor *out); \
    mli_status mli_krn_eltwise_mul_##sfx(const mli_tensor *in1, const mli_tensor *in2, mli_tensor *out); \
    mli_status mli_krn_eltwise_max_##sfx(const mli_tensor *in1, const mli_tensor *in2, mli_tensor *out); \
    mli_status mli_krn_eltwise_min_##sfx(const mli_tensor *in1, const mli_tensor *in2, mli_tensor *out);

MLIPY_DECLARE_3(MLIPY_FC_DECL)
MLIPY_DECLARE_3(MLIPY_RNN_DECL)
MLIPY_DECLARE_3(MLIPY_LSTM_DECL)
MLIPY_DECLARE_2(MLIPY_ACT_DECL)
MLIPY_DECLARE_2(MLIPY_ELTWISE_DECL)

#ifdef __cplusplus
}
#endif
#endif /* MLI_KERNELS_API_H */
