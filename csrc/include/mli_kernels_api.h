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

/* ------------------------------------------------------- convolution -- */
/* MLI 1.1's 2D and depthwise convolutions of the fx kinds (MLI's names and
 * arguments).  Layouts: conv2d_chw in [C, H, W], weights [OC, C, KH, KW],
 * bias [OC], out [OC, Ho, Wo]; depthwise_conv2d_chw weights [C, 1, KH, KW],
 * bias [C], out [C, Ho, Wo]; conv2d_hwc in [H, W, C], weights [OC, KH, KW, C],
 * out [Ho, Wo, OC].  mli_krn_conv2d_chw_<kind> and
 * mli_krn_depthwise_conv2d_chw_<kind> dispatch to the shape-specialised
 * functions of mli_krn_conv2d_spec_api.h / mli_krn_depthwise_conv2d_spec_api.h
 * (read before any check, as MLI does), else to <...>_generic.  Calls that
 * MLI 1.1 accepts and then runs outside its buffers (an input smaller than
 * the kernel, a specialisation outside its domain that reaches beyond a
 * buffer, NULL tensors or cfg, which MLI dereferences) are refused with an
 * error flagged mlipy_safety (mlipy_last_error()). */
#define MLIPY_CONV_DECL(sfx)                                                                      \
    mli_status mli_krn_conv2d_chw_##sfx(const mli_tensor *in, const mli_tensor *weights,       \
                                        const mli_tensor *bias, const mli_conv2d_cfg *cfg,     \
                                        mli_tensor *out);                                      \
    mli_status mli_krn_conv2d_chw_##sfx##_generic(const mli_tensor *in, const mli_tensor *weights, \
                                                  const mli_tensor *bias, const mli_conv2d_cfg *cfg, \
                                                  mli_tensor *out);                            \
    mli_status mli_krn_conv2d_hwc_##sfx(const mli_tensor *in, const mli_tensor *weights,       \
                                        const mli_tensor *bias, const mli_conv2d_cfg *cfg,     \
                                        mli_tensor *out);                                      \
    mli_status mli_krn_depthwise_conv2d_chw_##sfx(const mli_tensor *in, const mli_tensor *weights, \
                                                  const mli_tensor *bias, const mli_conv2d_cfg *cfg, \
                                                  mli_tensor *out);                            \
    mli_status mli_krn_depthwise_conv2d_chw_##sfx##_generic(                                   \
        const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,               \
        const mli_conv2d_cfg *cfg, mli_tensor *out);
MLIPY_DECLARE_3(MLIPY_CONV_DECL)
/* --------------------------------------------------- end convolution -- */

#ifdef __cplusplus
}
#endif
#endif /* MLI_KERNELS_API_H */
