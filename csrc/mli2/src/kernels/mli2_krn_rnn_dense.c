/* rnn_dense (SPEC_MLI2.md 9; checks 13.3): out = the dense block of 1 to 4
 * inputs, each rounded into out's format separately. */
#include <stdlib.h>
#include "mli_api.h"
#include "mli2_prv.h"

static const char *const IN_NAMES[] = {"in[0]", "in[1]", "in[2]", "in[3]"};
static const char *const W_NAMES[] = {"weights[0]", "weights[1]", "weights[2]", "weights[3]"};

static mli_status dense_check(m2_kind kind, const mli_tensor **in, const mli_tensor **weights, const mli_tensor *bias,
                              const mli_rnn_dense_cfg *cfg, const mli_tensor *out) {
    if (!cfg) return mli2_fail(MLI_STATUS_BAD_FUNC_CFG, "cfg", "is NULL");
    if (cfg->inputs_num == 0 || cfg->inputs_num > MLI_RNN_MAX_INPUT)
        return mli2_fail(MLI_STATUS_BAD_FUNC_CFG, "cfg", "inputs_num outside 1..4");
    const int n = cfg->inputs_num;
    if (!in || !weights) return mli2_refuse(MLI_STATUS_BAD_TENSOR, !in ? "in" : "weights", "array pointer is NULL");
    for (int i = 0; i < n; i++) {
        M2_TRY(mli2_chk_tensor(in[i], IN_NAMES[i]));
        M2_TRY(mli2_chk_tensor(weights[i], W_NAMES[i]));
        if (weights[i]->rank != 2) return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, W_NAMES[i], "rank is not 2");
        if (mli2_count(in[i]) != weights[i]->shape[0])
            return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, IN_NAMES[i], "element count differs from weights.shape[0]");
        if (weights[i]->shape[1] != weights[0]->shape[1])
            return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, W_NAMES[i], "shape[1] differs from weights[0]'s");
        if (!mli2_contig(in[i])) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, IN_NAMES[i], "not contiguous");
        if (!mli2_inner1(weights[i]))
            return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, W_NAMES[i], "innermost mem_stride is not 1");
        if (!out) return mli2_refuse(MLI_STATUS_BAD_TENSOR, "out", "is NULL (MLI 2.0.2 crashes)");
        if (out->data.mem.ptr && mli2_overlap(in[i]->data.mem.ptr, in[i]->data.capacity, out->data.mem.ptr, out->data.capacity))
            return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "overlaps an input");
    }
    M2_TRY(mli2_chk_tensor(bias, "bias"));
    if (bias->rank != 1 || bias->shape[0] != weights[0]->shape[1])
        return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "bias", "shape is not (M)");
    M2_TRY(mli2_chk_tensor(out, "out"));
    if (out->rank != 1 || out->shape[0] != bias->shape[0]) return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "out", "shape is not (M)");
    if (out->el_type != in[0]->el_type) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "out", "el_type differs from in[0]'s");
    if (!mli2_inner1(bias)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "innermost mem_stride is not 1");
    if (!mli2_contig(out)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "not contiguous");
    if (kind != M2_SA8) {
        const mli_element_type wt = kind == M2_FX16 ? MLI_EL_FX_16 : MLI_EL_FX_8;
        for (int i = 0; i < n; i++) {
            if (in[i]->el_type != MLI_EL_FX_16) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, IN_NAMES[i], "el_type is not FX_16");
            if (weights[i]->el_type != wt) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, W_NAMES[i], "el_type is not the kernel's");
        }
        if (bias->el_type != wt) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "bias", "el_type is not the kernel's");
        for (int i = 0; i < n; i++)
            if (out->el_params.fx.frac_bits > in[i]->el_params.fx.frac_bits + weights[i]->el_params.fx.frac_bits)
                return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "frac_bits above an input's + its weights'");
        if (bias->el_params.fx.frac_bits > in[0]->el_params.fx.frac_bits + weights[0]->el_params.fx.frac_bits)
            return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "frac_bits above in[0]'s + weights[0]'s");
        return MLI_STATUS_OK;
    }
    for (int i = 0; i < n; i++) {
        if (in[i]->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, IN_NAMES[i], "el_type is not SA_8");
        if (weights[i]->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, W_NAMES[i], "el_type is not SA_8");
    }
    if (bias->el_type != MLI_EL_SA_32) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "bias", "el_type is not SA_32");
    for (int i = 0; i < n; i++) {
        M2_TRY(mli2_chk_quant(in[i], IN_NAMES[i], -128, 127));
        M2_TRY(mli2_chk_quant(weights[i], W_NAMES[i], 0, 0));
    }
    M2_TRY(mli2_chk_quant(out, "out", -128, 127));
    M2_TRY(mli2_chk_quant(bias, "bias", 0, 0));
    for (int i = 0; i < n; i++) {
        if (mli2_per_axis(in[i])) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, IN_NAMES[i], "per-axis parameters");
        if (mli2_per_axis(weights[i])) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, W_NAMES[i], "per-axis parameters");
    }
    if (mli2_per_axis(out)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "per-axis parameters");
    if (mli2_per_axis(bias)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "per-axis parameters");
    return mli2_chk_biasscale(in[0], weights[0], bias, "bias");
}

/* Beyond MLI, once its checks pass: every element within its capacity (MLI's
 * size check wraps around in 32 bits) and out apart from weights and bias. */
static mli_status dense_safety(const mli_tensor **in, const mli_tensor **weights, const mli_tensor *bias, int n,
                               const mli_tensor *out) {
    m2_rgn reads[4 * (MLI_RNN_MAX_INPUT + 1)];
    int k = 0;
    for (int i = 0; i < n; i++) {
        M2_TRY(mli2_chk_reach(in[i], IN_NAMES[i], weights[i]->shape[0]));
        M2_TRY(mli2_chk_reach(weights[i], W_NAMES[i], mli2_span(weights[i])));
        k += mli2_rgn_tensor(reads + k, weights[i], mli2_span(weights[i]), W_NAMES[i]);
    }
    M2_TRY(mli2_chk_reach(bias, "bias", mli2_span(bias)));
    M2_TRY(mli2_chk_reach(out, "out", out->shape[0]));
    k += mli2_rgn_tensor(reads + k, bias, mli2_span(bias), "bias");
    return mli2_chk_alias("out", NULL, m2_rgn_of(out->data.mem.ptr, (uint64_t)out->shape[0] * mli2_el_size(out->el_type), "out"),
                          reads, k);
}

static mli_status dense_run(m2_kind kind, const mli_tensor **in, const mli_tensor **weights, const mli_tensor *bias,
                            const mli_rnn_dense_cfg *cfg, mli_tensor *out, const char *fn) {
    mli2_begin(fn);
    M2_TRY(dense_check(kind, in, weights, bias, cfg, out));
    M2_TRY(dense_safety(in, weights, bias, cfg->inputs_num, out));
    const int n = cfg->inputs_num, M = (int)out->shape[0];
    m2_dense_in ins[MLI_RNN_MAX_INPUT];
    for (int i = 0; i < n; i++) {
        const m2_fmt fw = mli2_fmt(weights[i], 0);
        ins[i].x = in[i]->data.mem.ptr;
        ins[i].n = (int)weights[i]->shape[0];
        ins[i].fx = mli2_fmt(in[i], 0);
        ins[i].w = weights[i]->data.mem.ptr;
        ins[i].ws = weights[i]->mem_stride[0];
        ins[i].w_scale = fw.scale;
        ins[i].w_shift = fw.shift;
    }
    int64_t *work = (int64_t *)malloc(sizeof(int64_t) * 3 * (size_t)M);
    if (!work) return mli2_refuse(MLI_STATUS_NOT_ENGH_MEM, "", "out of host memory");
    mli2_dense_block(kind, ins, n, bias->data.mem.ptr, kind == M2_SA8 ? 0 : bias->el_params.fx.frac_bits, M,
                     mli2_fmt(out, 0), out->data.mem.ptr, work);
    free(work);
    return MLI_STATUS_OK;
}

#define DENSE_DEF(kind, K)                                                                                   \
    mli_status mli_krn_rnn_dense_##kind(const mli_tensor **in, const mli_tensor **weights,                  \
                                        const mli_tensor *bias, const mli_rnn_dense_cfg *cfg, mli_tensor *out) { \
        return dense_run(K, in, weights, bias, cfg, out, "mli_krn_rnn_dense_" #kind);                       \
    }
DENSE_DEF(fx16, M2_FX16)
DENSE_DEF(fx16_fx8_fx8, M2_FX16_FX8)
DENSE_DEF(sa8_sa8_sa32, M2_SA8)
