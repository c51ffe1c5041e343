/* fully_connected (SPEC_MLI2.md 8; checks 13.2): weights (N, M), bias (M),
 * out (M); the bias is added last, with saturation. */
#include <stdlib.h>
#include "mli_api.h"
#include "mli2_prv.h"

typedef enum { FC_FX16, FC_FX16_FX8, FC_FX8, FC_SA8, FC_SA8_EXT } fc_kind;

/* ReLU limits of 10.4 from out's format, for an output type of `bits`. */
static void relu_limits(mli_relu_type type, m2_fmt o, int bits, int32_t *lo, int32_t *hi) {
    const int32_t mn = -(1 << (bits - 1)), mx = (1 << (bits - 1)) - 1;
    const int sh = o.shift;
    *lo = mn, *hi = mx;
    if (type == MLI_RELU_GEN) {
        *lo = m2_imax(o.zp, mn);
    } else if (type == MLI_RELU_6) {
        int64_t six = 0;
        if (sh >= 0 && sh < 28) six = m2_div32(6 << sh, o.scale);
        else if (sh >= 28) six = mx;
        else if (sh > -3) six = m2_div32(6 >> -sh, o.scale);
        *lo = m2_imax(o.zp, mn);
        *hi = (int32_t)(six + o.zp < mx ? six + o.zp : mx);
    } else if (type == MLI_RELU_1) {
        int64_t one = 0;
        if (sh >= 0 && sh < 30) one = m2_div32((int32_t)1 << sh, o.scale);
        else if (sh >= 30) one = mx;
        *lo = (int32_t)(-one + o.zp > mn ? -one + o.zp : mn);
        *hi = (int32_t)(one + o.zp < mx ? one + o.zp : mx);
    }
}

static mli_status fc_common(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                            const mli_fully_connected_cfg *cfg, const mli_tensor *out) {
    M2_TRY(mli2_chk_tensor(in, "in"));
    M2_TRY(mli2_chk_tensor(weights, "weights"));
    M2_TRY(mli2_chk_tensor(bias, "bias"));
    M2_TRY(mli2_chk_tensor(out, "out"));
    if (out->el_type != in->el_type) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "out", "el_type differs from in's");
    if (!cfg) return mli2_fail(MLI_STATUS_BAD_FUNC_CFG, "cfg", "is NULL");
    if (weights->rank != 2) return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "weights", "rank is not 2");
    if (bias->rank != 1) return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "bias", "rank is not 1");
    if (out->rank != 1) return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "out", "rank is not 1");
    if (mli2_count(in) != weights->shape[0])
        return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "in", "element count differs from weights.shape[0]");
    if (bias->shape[0] != weights->shape[1])
        return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "bias", "shape[0] differs from weights.shape[1]");
    if (out->shape[0] != weights->shape[1])
        return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "out", "shape[0] differs from weights.shape[1]");
    if (!mli2_contig(in)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "in", "not contiguous");
    if (!mli2_inner1(weights)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "weights", "innermost mem_stride is not 1");
    if (!mli2_contig(bias)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "not contiguous");
    if (out->mem_stride[0] != 1) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "mem_stride[0] is not 1");
    if (mli2_overlap(in->data.mem.ptr, in->data.capacity, out->data.mem.ptr, out->data.capacity))
        return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "overlaps in");
    return MLI_STATUS_OK;
}

static mli_status fc_check(fc_kind kind, const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                           const mli_fully_connected_cfg *cfg, const mli_tensor *out) {
    if (kind == FC_SA8 || kind == FC_SA8_EXT) {
        M2_TRY(fc_common(in, weights, bias, cfg, out));
        if (in->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "in", "el_type is not SA_8");
        if (weights->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "weights", "el_type is not SA_8");
        if (bias->el_type != MLI_EL_SA_32) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "bias", "el_type is not SA_32");
        M2_TRY(mli2_chk_quant(in, "in", -128, 127));
        M2_TRY(mli2_chk_quant(out, "out", -128, 127));
        M2_TRY(mli2_chk_quant(weights, "weights", 0, 0));
        M2_TRY(mli2_chk_quant(bias, "bias", 0, 0));
        if (mli2_per_axis(weights) ? (weights->el_params.sa.dim != 1 || bias->el_params.sa.dim != 0)
                                   : mli2_per_axis(bias))
            return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "quantisation axes of weights and bias disagree");
        if (mli2_per_axis(in)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "in", "per-axis parameters");
        if (mli2_per_axis(out)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "per-axis parameters");
        return mli2_chk_biasscale(in, weights, bias, "bias");
    }
    static const mli_element_type data_t[] = {MLI_EL_FX_16, MLI_EL_FX_16, MLI_EL_FX_8};
    static const mli_element_type w_t[] = {MLI_EL_FX_16, MLI_EL_FX_8, MLI_EL_FX_8};
    /* MLI reads these three el_types before any NULL test */
    if (!in) return mli2_refuse(MLI_STATUS_BAD_TENSOR, "in", "is NULL (MLI 2.0.2 crashes)");
    if (!weights) return mli2_refuse(MLI_STATUS_BAD_TENSOR, "weights", "is NULL (MLI 2.0.2 crashes)");
    if (!bias) return mli2_refuse(MLI_STATUS_BAD_TENSOR, "bias", "is NULL (MLI 2.0.2 crashes)");
    if (in->el_type != data_t[kind]) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "in", "el_type is not the kernel's");
    if (weights->el_type != w_t[kind]) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "weights", "el_type is not the kernel's");
    if (bias->el_type != w_t[kind]) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "bias", "el_type is not the kernel's");
    const int fiw = in->el_params.fx.frac_bits + weights->el_params.fx.frac_bits;
    if (bias->el_params.fx.frac_bits > fiw)
        return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "frac_bits above in's + weights'");
    if (!out) return mli2_refuse(MLI_STATUS_BAD_TENSOR, "out", "is NULL (MLI 2.0.2 crashes)");
    if (out->el_params.fx.frac_bits > fiw)
        return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "frac_bits above in's + weights'");
    return fc_common(in, weights, bias, cfg, out);
}

/* Beyond MLI, once its checks pass: every element within its capacity (MLI's
 * size check wraps around in 32 bits) and out apart from weights and bias
 * (MLI writes each output before it reads the next one's weights and bias). */
static mli_status fc_safety(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                            const mli_tensor *out) {
    M2_TRY(mli2_chk_reach(in, "in", weights->shape[0]));
    M2_TRY(mli2_chk_reach(weights, "weights", mli2_span(weights)));
    M2_TRY(mli2_chk_reach(bias, "bias", mli2_span(bias)));
    M2_TRY(mli2_chk_reach(out, "out", out->shape[0]));
    m2_rgn reads[8];
    int n = mli2_rgn_tensor(reads, weights, mli2_span(weights), "weights");
    n += mli2_rgn_tensor(reads + n, bias, mli2_span(bias), "bias");
    return mli2_chk_alias("out", NULL, m2_rgn_of(out->data.mem.ptr, (uint64_t)out->shape[0] * mli2_el_size(out->el_type), "out"),
                          reads, n);
}

static mli_status fc_run(fc_kind kind, const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                         const mli_fully_connected_cfg *cfg, mli_tensor *out, const char *fn) {
    mli2_begin(fn);
    M2_TRY(fc_check(kind, in, weights, bias, cfg, out));
    M2_TRY(fc_safety(in, weights, bias, out));
    const int N = (int)weights->shape[0], M = (int)weights->shape[1];
    const long ws = weights->mem_stride[0];
    int64_t *sums = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)M);
    if (!sums) return mli2_refuse(MLI_STATUS_NOT_ENGH_MEM, "", "out of host memory");
    int64_t *col = sums + M;
    const m2_fmt fo = mli2_fmt(out, 0);
    int32_t lo, hi;
    relu_limits(cfg->relu.type, fo, (kind == FC_FX8 || kind >= FC_SA8) ? 8 : 16, &lo, &hi);
    if (kind == FC_SA8 || kind == FC_SA8_EXT) {
        const m2_fmt fi = mli2_fmt(in, 0);
        const int8_t *w = weights->data.mem.pi8;
        mli2_dot_cols_8_8(in->data.mem.pi8, N, w, ws, M, sums);
        const int32_t zp_in = kind == FC_SA8_EXT ? 0 : fi.zp;
        if (zp_in) mli2_colsum_8(w, N, ws, M, col);
        for (int o = 0; o < M; o++) {
            int64_t acc = m2_wrap32(sums[o] + (zp_in ? (int64_t)(-zp_in) * col[o] : 0));
            acc = m2_add(acc, m2_bias_preround(bias->data.mem.pi32[o]), 32);
            const m2_fmt fw = mli2_fmt(weights, o);
            const m2_mult mu = m2_mult_of(fi, fo, fw.scale, fw.shift);
            /* FCQ (6.5), FULL_ACCU=OFF: a 16-bit multiplier */
            const int32_t m16 = (int32_t)m2_rshr(mu.m, 16, 32);
            const int sh = mu.sh - 16;
            const int p = m2_imin(m2_imax(sh - 21, 0), 8);
            const int32_t a = m2_sat16(m2_rshr(acc, p, 32));
            const int16_t v = m2_sat16(m2_rshr((int64_t)a * m16, m2_imin(sh - p, 63), 64));
            int32_t y = m2_sat8(m2_add(v, fo.zp, 16));
            y = y < lo ? lo : (y > hi ? hi : y);
            out->data.mem.pi8[o] = (int8_t)y;
        }
    } else {
        const int fi = in->el_params.fx.frac_bits, fw = weights->el_params.fx.frac_bits;
        const int bs = fi + fw - bias->el_params.fx.frac_bits, sh = fi + fw - fo.shift;
        if (kind == FC_FX16)
            mli2_dot_cols_16_16(in->data.mem.pi16, N, weights->data.mem.pi16, ws, M, sums);
        else if (kind == FC_FX16_FX8)
            mli2_dot_cols_16_8(in->data.mem.pi16, N, weights->data.mem.pi8, ws, M, sums);
        else
            mli2_dot_cols_8_8(in->data.mem.pi8, N, weights->data.mem.pi8, ws, M, sums);
        for (int o = 0; o < M; o++) {
            int32_t y;
            if (kind == FC_FX16) {
                const int64_t b = m2_wrap32(m2_shl(bias->data.mem.pi16[o], bs, 64));
                y = m2_sat16(m2_rshr(m2_add(sums[o], b, 64), sh, 64));
            } else {
                const int64_t b = m2_shl(bias->data.mem.pi8[o], bs, 32);
                const int64_t acc = m2_add(m2_wrap32(sums[o]), b, 32);
                y = kind == FC_FX8 ? m2_sat8(m2_rshr(acc, sh, 32)) : m2_sat16(m2_rshr(acc, sh, 32));
            }
            y = y < lo ? lo : (y > hi ? hi : y);
            if (kind == FC_FX8) out->data.mem.pi8[o] = (int8_t)y;
            else out->data.mem.pi16[o] = (int16_t)y;
        }
    }
    free(sums);
    return MLI_STATUS_OK;
}

#define FC_DEF(kind, K)                                                                                      \
    mli_status mli_krn_fully_connected_##kind(const mli_tensor *in, const mli_tensor *weights,              \
                                              const mli_tensor *bias, const mli_fully_connected_cfg *cfg,  \
                                              mli_tensor *out) {                                            \
        return fc_run(K, in, weights, bias, cfg, out, "mli_krn_fully_connected_" #kind);                    \
    }
FC_DEF(fx8, FC_FX8)
FC_DEF(fx16, FC_FX16)
FC_DEF(fx16_fx8_fx8, FC_FX16_FX8)
FC_DEF(sa8_sa8_sa32, FC_SA8)
FC_DEF(sa8_sa8_sa32_ext_bias, FC_SA8_EXT)
