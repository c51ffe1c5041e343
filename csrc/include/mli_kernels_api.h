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

/* ===== The rest of MLI 1.1's kernel API ============================
 * Pooling, leaky ReLU, softmax, permute, concat, padding2d and the sa8
 * kernels, with MLI 1.1's prototypes.  The pooling variants and the debug
 * twins of their dispatchers are in mli_krn_avepool_spec_api.h and
 * mli_krn_maxpool_spec_api.h; the sa8 convolutions' variants are below
 * (MLI 1.1 declares them in mli_krn_conv2d_spec_api.h and
 * mli_krn_depthwise_conv2d_spec_api.h, with the chw families). */
#define MLIPY_POOL_DECL(fam, sfx)                                                                   \
    mli_status mli_krn_##fam##_##sfx(const mli_tensor *in, const mli_pool_cfg *cfg, mli_tensor *out); \
    mli_status mli_krn_##fam##_##sfx##_generic(const mli_tensor *in, const mli_pool_cfg *cfg, mli_tensor *out);
MLIPY_POOL_DECL(avepool_chw, fx8)
MLIPY_POOL_DECL(avepool_chw, fx16)
MLIPY_POOL_DECL(maxpool_chw, fx8)
MLIPY_POOL_DECL(maxpool_chw, fx16)
MLIPY_POOL_DECL(avepool_hwc, fx8)
MLIPY_POOL_DECL(avepool_hwc, fx16)
MLIPY_POOL_DECL(avepool_hwc, sa8)
MLIPY_POOL_DECL(maxpool_hwc, fx8)
MLIPY_POOL_DECL(maxpool_hwc, fx16)
MLIPY_POOL_DECL(maxpool_hwc, sa8)
#undef MLIPY_POOL_DECL

#define MLIPY_MORE_DECL(sfx)                                                                          \
    mli_status mli_krn_leaky_relu_##sfx(const mli_tensor *in, const mli_tensor *slope_coeff, mli_tensor *out); \
    mli_status mli_krn_softmax_##sfx(const mli_tensor *in, mli_tensor *out);                          \
    mli_status mli_krn_permute_##sfx(const mli_tensor *in, const mli_permute_cfg *cfg, mli_tensor *out); \
    mli_status mli_krn_concat_##sfx(const mli_tensor **inputs, const mli_concat_cfg *cfg, mli_tensor *out); \
    mli_status mli_krn_padding2d_chw_##sfx(const mli_tensor *in, const mli_padding2d_cfg *cfg, mli_tensor *out); \
    mli_status mli_krn_padding2d_hwc_##sfx(const mli_tensor *in, const mli_padding2d_cfg *cfg, mli_tensor *out);
MLIPY_DECLARE_2(MLIPY_MORE_DECL)
#undef MLIPY_MORE_DECL

mli_status mli_krn_fully_connected_sa8_sa8_sa32(const mli_tensor *in, const mli_tensor *weights,
                                                const mli_tensor *bias, mli_tensor *out);

#define MLIPY_CONV_SA8_DECL(name)                                                                  \
    mli_status name(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,        \
                    const mli_conv2d_cfg *cfg, mli_tensor *out);
MLIPY_CONV_SA8_DECL(mli_krn_conv2d_nhwc_sa8_sa8_sa32)
MLIPY_CONV_SA8_DECL(mli_krn_conv2d_nhwc_sa8_sa8_sa32_generic)
MLIPY_CONV_SA8_DECL(mli_krn_conv2d_nhwc_sa8_sa8_sa32_k1x1_nopad)
MLIPY_CONV_SA8_DECL(mli_krn_conv2d_nhwc_sa8_sa8_sa32_k3x3_nopad)
MLIPY_CONV_SA8_DECL(mli_krn_conv2d_nhwc_sa8_sa8_sa32_k3x3_krnpad)
MLIPY_CONV_SA8_DECL(mli_krn_conv2d_nhwc_sa8_sa8_sa32_k5x5_nopad)
MLIPY_CONV_SA8_DECL(mli_krn_conv2d_nhwc_sa8_sa8_sa32_k5x5_krnpad)
MLIPY_CONV_SA8_DECL(mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32)
MLIPY_CONV_SA8_DECL(mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_generic)
MLIPY_CONV_SA8_DECL(mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k3x3_nopad)
MLIPY_CONV_SA8_DECL(mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k3x3_krnpad)
MLIPY_CONV_SA8_DECL(mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k5x5_nopad)
MLIPY_CONV_SA8_DECL(mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32_k5x5_krnpad)
#undef MLIPY_CONV_SA8_DECL
char *mli_debug_krn_conv2d_nhwc_sa8_sa8_sa32(const mli_tensor *in, const mli_tensor *weights,
                                             const mli_tensor *bias, const mli_conv2d_cfg *cfg, mli_tensor *out);
char *mli_debug_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32(const mli_tensor *in, const mli_tensor *weights,
                                                       const mli_tensor *bias, const mli_conv2d_cfg *cfg,
                                                       mli_tensor *out);
/* ===== end of the mli11-more block ===================================== */
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
