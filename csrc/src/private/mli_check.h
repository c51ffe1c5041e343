/* Argument checkers (SPEC.md section 12) and the error-detail record.
 * Checkers never touch outputs; on failure they record what failed. */
#ifndef MLI_CHECK_H
#define MLI_CHECK_H

#include "mli_types.h"
#include "mlipy_ext.h"
#include "mli_prv_tensor.h"

/* The kind of a kernel call: element types required of data and weights. */
typedef struct {
    mli_element_type data;
    mli_element_type weights;
} mli_chk_kind;

void mlipy_err_reset(const char *function);
mli_status mlipy_err(mli_status st, const char *arg, const char *field, const char *reason);
mli_status mlipy_err_val(mli_status st, const char *arg, const char *field, const char *reason,
                         long long expected, long long actual);
mli_status mlipy_err_safety(mli_status st, const char *arg, const char *field, const char *reason);

mli_status mli_chk_tensor(const mli_tensor *t, const char *arg);

mli_status mli_chk_fully_connected(const mli_tensor *in, const mli_tensor *weights,
                                   const mli_tensor *bias, const mli_tensor *out, mli_chk_kind k);
mli_status mli_chk_activation(const mli_tensor *in, const mli_tensor *out, mli_element_type type);
mli_status mli_chk_eltwise(const mli_tensor *in1, const mli_tensor *in2, const mli_tensor *out,
                           bool same_frac, mli_element_type type);
mli_status mli_chk_basic_rnn_cell(const mli_tensor *in, const mli_tensor *prev_out,
                                  const mli_tensor *weights, const mli_tensor *bias,
                                  const mli_rnn_cell_cfg *cfg, const mli_tensor *out,
                                  mli_chk_kind k, bool *skip_compute);
mli_status mli_chk_lstm_cell(const mli_tensor *in, const mli_tensor *prev_out,
                             const mli_tensor *weights, const mli_tensor *bias,
                             const mli_rnn_cell_cfg *cfg, const mli_tensor *cell,
                             const mli_tensor *out, mli_chk_kind k);


/* The rest of MLI 1.1's API (SPEC_MLI11_MORE 10).  The pooling checker
 * takes the layout (hwc), whether MLI's output check counts (avepool_hwc
 * computes it and returns OK anyway) and the element type of the kind. */
mli_status mli_chk_pool(const mli_tensor *in, const mli_pool_cfg *cfg, const mli_tensor *out, bool hwc,
                        bool out_checked, mli_element_type type);
mli_status mli_chk_conv2d_nhwc_sa8(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                   const mli_conv2d_cfg *cfg, const mli_tensor *out);
mli_status mli_chk_depthwise_hwcn_sa8(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                      const mli_conv2d_cfg *cfg, const mli_tensor *out);
mli_status mli_chk_fully_connected_sa8(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                       const mli_tensor *out);
mli_status mli_chk_leaky_relu(const mli_tensor *in, const mli_tensor *slope, const mli_tensor *out,
                              mli_element_type type);
mli_status mli_chk_permute(const mli_tensor *in, const mli_permute_cfg *cfg, const mli_tensor *out,
                           mli_element_type type);
mli_status mli_chk_concat(const mli_tensor **inputs, const mli_concat_cfg *cfg, const mli_tensor *out,
                          mli_element_type type);
mli_status mli_chk_padding2d(const mli_tensor *in, const mli_padding2d_cfg *cfg, const mli_tensor *out, bool hwc,
                             mli_element_type type);
/* Convolutions (SPEC_MLI11_MORE.md 10): conv2d_chw and, with `depthwise`,
 * depthwise_conv2d_chw; conv2d_hwc, whose fx16 function checks no types
 * (`types` false). */
mli_status mli_chk_conv2d_chw(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                              const mli_conv2d_cfg *cfg, const mli_tensor *out, mli_chk_kind k, bool depthwise);
mli_status mli_chk_conv2d_hwc(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                              const mli_conv2d_cfg *cfg, const mli_tensor *out, mli_chk_kind k, bool types);

#endif /* MLI_CHECK_H */
