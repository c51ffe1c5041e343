/* Fully connected layer: mli_krn_fully_connected_{fx8,fx16,fx8w16d,sa8_sa8_sa32}. */
#include "mli_krn_common.h"

#define KRN_IMPL "mli_krn_fully_connected_impl.h"
#include "mli_krn_variants.h"

/* ------------------------------------------------------------------ sa8 -- */
/* mli_krn_fully_connected_sa8_sa8_sa32 (SPEC_MLI11_MORE 5): every product,
 * w * x and w * -zp, goes to the DSP's ACC0 started at the bias (40 bits,
 * read back saturated to 32); the sum is exact unless a partial sum could
 * reach 2^39, and then ACC0 is emulated step by step in MLI's order. */
static int32_t fc_sa8_acc0_steps(const int8_t *x, const int8_t *w, int32_t b, int n, int64_t m) {
    int64_t acc = b;
    int i = 0;
    if (n >= 8) { /* groups of four: x products in two steps, then zp products in two */
        for (; i < (n & 3); i++) {
            acc = mli_math_acc40_add(acc, (int64_t)w[i] * x[i]);
            acc = mli_math_acc40_add(acc, m * w[i]);
        }
        for (; i < n; i += 4) {
            acc = mli_math_acc40_add(acc, (int64_t)w[i] * x[i] + (int64_t)w[i + 1] * x[i + 1]);
            acc = mli_math_acc40_add(acc, (int64_t)w[i + 2] * x[i + 2] + (int64_t)w[i + 3] * x[i + 3]);
            acc = mli_math_acc40_add(acc, m * w[i] + m * w[i + 1]);
            acc = mli_math_acc40_add(acc, m * w[i + 2] + m * w[i + 3]);
        }
    }
    for (; i < n; i++) {
        acc = mli_math_acc40_add(acc, (int64_t)w[i] * x[i]);
        acc = mli_math_acc40_add(acc, m * w[i]);
    }
    return mli_math_acc0_read(acc);
}

mli_status mli_krn_fully_connected_sa8_sa8_sa32(const mli_tensor *in, const mli_tensor *weights,
                                                const mli_tensor *bias, mli_tensor *out) {
    mlipy_err_reset("mli_krn_fully_connected_sa8_sa8_sa32");
    mli_status st = mli_chk_fully_connected_sa8(in, weights, bias, out);
    if (st != MLI_STATUS_OK) return st;
    const int n = (int)weights->shape[1], k = (int)bias->shape[0];
    /* with fewer than 8 inputs MLI reads the rows back to back */
    const long row = n < 8 || !weights->mem_stride[0] ? n : weights->mem_stride[0];
    const int64_t m = mli_math_sa8_neg_zp(in->el_params.asym.zero_point.i16);
    /* MLI takes out's zero point by out's el_type (before it sets it): 0 for
     * an fx type; the checks refused a per-axis asym out */
    const bool out_asym = out->el_type == MLI_EL_ASYM_I8 || out->el_type == MLI_EL_ASYM_I32;
    const int16_t out_zp = out_asym ? out->el_params.asym.zero_point.i16 : 0;
    const int shift = in->el_params.asym.scale_frac_bits + weights->el_params.asym.scale_frac_bits + 30 -
                      out->el_params.asym.scale_frac_bits - 32;
    const int left = shift > 0 ? 0 : -shift, right = shift > 0 ? shift : 0;
    const int32_t mul = mli_math_sa8_out_mul(
        mli_math_sa8_scale_ratio(in->el_params.asym.scale.i32, out->el_params.asym.scale.i32),
        weights->el_params.asym.scale.i32);
    const bool exact = mli_math_acc0_exact(2 * (int64_t)n);
    const int8_t *x = (const int8_t *)in->data;
    const int32_t *b = (const int32_t *)bias->data;
    int8_t *y = (int8_t *)out->data;
    for (int o = 0; o < k; o++) {
        const int8_t *w = (const int8_t *)weights->data + o * row;
        int32_t acc;
        if (exact) {
            int64_t dot = 0, wsum = 0;
            for (int i = 0; i < n; i++) {
                dot += w[i] * x[i];
                wsum += w[i];
            }
            acc = mli_math_acc0_read(b[o] + dot + m * wsum);
        } else {
            acc = fc_sa8_acc0_steps(x, w, b[o], n, m);
        }
        acc = (int32_t)mli_math_asr_rnd_sat(acc, -left, 32);
        y[o] = mli_math_sat8(mli_math_sa8_requant16(acc, mul, right, out_zp));
    }
    out->el_type = in->el_type;
    out->shape[0] = (uint32_t)k;
    out->rank = 1;
    return MLI_STATUS_OK;
}
