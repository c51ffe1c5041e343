/* MLI 1.1 helpers (SPEC.md section 11) and the float conversion helpers
 * of MLI's examples. */
#include <math.h>
#include <stddef.h>
#include "mli_api.h"
#include "../private/mli_check.h"
#include "../private/mli_math.h"

uint32_t mli_hlp_count_elem_num(const mli_tensor *in, uint32_t start_dim) {
    mlipy_err_reset("mli_hlp_count_elem_num");
    if (!in || in->rank > MLI_MAX_RANK || start_dim >= in->rank) return 0;
    uint32_t n = 1;
    for (uint32_t i = start_dim; i < in->rank; i++) n *= in->shape[i];
    return n;
}

uint32_t mli_hlp_tensor_element_size(const mli_tensor *in) {
    mlipy_err_reset("mli_hlp_tensor_element_size");
    return in ? mli_prv_elsize(in->el_type) : 0;
}

mli_status mli_hlp_point_to_subtensor(const mli_tensor *in, const mli_point_to_subtsr_cfg *cfg,
                                      mli_tensor *out) {
    mlipy_err_reset("mli_hlp_point_to_subtensor");
    mli_status st = mli_chk_tensor(in, "in");
    if (st != MLI_STATUS_OK) return st;
    if (!out) return mlipy_err(MLI_STATUS_BAD_TENSOR, "out", "", "is a NULL tensor");
    if (!cfg) return mlipy_err(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL");
    if (cfg->coord_num > in->rank)
        return mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "coord_num", "must not exceed in.rank",
                             in->rank, cfg->coord_num);
    for (uint32_t i = 0; i < cfg->coord_num; i++)
        if (cfg->start_coord[i] >= in->shape[i])
            return mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "start_coord",
                                 "must be inside in.shape", in->shape[i], cfg->start_coord[i]);
    /* coord_num == 0 makes MLI read before its arrays; mli-py rejects it. */
    if (cfg->coord_num == 0)
        return mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "coord_num", "must be at least 1");
    const uint32_t a = cfg->coord_num - 1u;
    if ((uint64_t)cfg->start_coord[a] + cfg->first_out_dim_size > in->shape[a])
        return mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "first_out_dim_size",
                             "start_coord + size must not exceed in.shape", in->shape[a],
                             (long long)cfg->start_coord[a] + cfg->first_out_dim_size);
    if (!mli_prv_contig_t(in))
        return mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "in", "mem_stride", "must describe a contiguous layout");
    const uint32_t out_rank = in->rank - a;
    if (!mli_prv_contig_r(out->mem_stride, out_rank))
        return mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "mem_stride", "must be zero (dense)");
    if (!in->data) return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "in", "data", "is NULL");

    const uint32_t el = mli_prv_elsize(in->el_type);
    uint64_t offset = 0;
    for (uint32_t i = 0; i < cfg->coord_num; i++) {
        uint64_t inner = el;
        for (uint32_t j = i + 1; j < in->rank; j++) inner *= in->shape[j];
        offset += (uint64_t)cfg->start_coord[i] * inner;
    }
    uint64_t count = cfg->first_out_dim_size;
    out->rank = out_rank;
    out->shape[0] = cfg->first_out_dim_size;
    for (uint32_t i = 1; i < out_rank; i++) {
        out->shape[i] = in->shape[a + i];
        count *= in->shape[a + i];
    }
    /* mli-py safety: the view never leaves the parent's buffer (the checks
     * above bound it already; this states the invariant) */
    if (offset + count * el > in->capacity)
        return mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "start_coord",
                                "the sub-tensor would reach beyond in.capacity");
    out->data = (char *)in->data + offset;
    out->capacity = (uint32_t)(count * el);
    out->el_type = in->el_type;
    out->el_params = in->el_params;
    return MLI_STATUS_OK;
}

mli_status mli_hlp_convert_tensor(mli_tensor *in, mli_tensor *out) {
    mlipy_err_reset("mli_hlp_convert_tensor");
    mli_status st = mli_chk_tensor(in, "in");
    if (st != MLI_STATUS_OK) return st;
    if (!out) return mlipy_err(MLI_STATUS_BAD_TENSOR, "out", "", "is a NULL tensor");
    if (!out->data) return mlipy_err(MLI_STATUS_BAD_TENSOR, "out", "data", "is NULL");
    if (!mli_prv_contig_t(in))
        return mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "in", "mem_stride", "must describe a contiguous layout");
    if (!mli_prv_contig_r(out->mem_stride, in->rank))
        return mlipy_err(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "mem_stride", "must be zero (dense)");
    const uint64_t n = mli_prv_count(in, 0);
    if (n * mli_prv_elsize(out->el_type) > out->capacity)
        return mlipy_err_val(MLI_STATUS_NOT_ENGH_MEM, "out", "capacity", "is too small for the result",
                             (long long)(n * mli_prv_elsize(out->el_type)), out->capacity);
    /* MLI converts only between the FX types; for any other el_type it
     * converts nothing, and still returns OK with out's shape set (SPEC 12.3). */
    const bool fx = (in->el_type == MLI_EL_FX_8 || in->el_type == MLI_EL_FX_16) &&
                    (out->el_type == MLI_EL_FX_8 || out->el_type == MLI_EL_FX_16);
    if (fx && !in->data) return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "in", "data", "is NULL");

    const int shift = (int)in->el_params.fx.frac_bits - (int)out->el_params.fx.frac_bits;
    for (uint64_t i = 0; fx && i < n; i++) {
        int16_t x = in->el_type == MLI_EL_FX_8 ? ((const int8_t *)in->data)[i] : ((const int16_t *)in->data)[i];
        int16_t v = mli_math_asr16(x, shift);
        if (out->el_type == MLI_EL_FX_8) ((int8_t *)out->data)[i] = mli_math_sat8(v);
        else ((int16_t *)out->data)[i] = v;
    }
    out->rank = in->rank;
    for (uint32_t i = 0; i < in->rank; i++) out->shape[i] = in->shape[i];
    return MLI_STATUS_OK;
}

/* Float -> fx as MLI's examples do it, in float32: scale*x +/- 0.5,
 * truncated, clamped.  Out-of-range and NaN (C undefined) saturate / give 0. */
static int32_t f32_to_i32_trunc(float v) {
    if (v != v) return 0;
    if (v >= 2147483648.0f) return INT32_MAX;
    if (v <= -2147483648.0f) return INT32_MIN;
    return (int32_t)v;
}

mli_status mli_hlp_float_to_fx_tensor(const float *src, uint32_t src_size, mli_tensor *dst) {
    mlipy_err_reset("mli_hlp_float_to_fx_tensor");
    if (!dst || !dst->data || (!src && src_size))
        return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "dst", "data", "is NULL");
    const float scale = ldexpf(1.0f, dst->el_params.fx.frac_bits);
    if (dst->el_type == MLI_EL_FX_16) {
        if (dst->capacity < (uint64_t)src_size * 2)
            return mlipy_err_val(MLI_STATUS_LENGTH_ERROR, "dst", "capacity", "is smaller than src_size elements",
                                 (long long)src_size * 2, dst->capacity);
        int16_t *d = (int16_t *)dst->data;
        for (uint32_t i = 0; i < src_size; i++) {
            volatile float t = scale * src[i]; /* float32 rounding, as on the target */
            d[i] = mli_math_sat16(f32_to_i32_trunc(t + (src[i] > 0 ? 0.5f : -0.5f)));
        }
    } else if (dst->el_type == MLI_EL_FX_8) {
        if (dst->capacity < src_size)
            return mlipy_err_val(MLI_STATUS_LENGTH_ERROR, "dst", "capacity", "is smaller than src_size elements",
                                 src_size, dst->capacity);
        int8_t *d = (int8_t *)dst->data;
        for (uint32_t i = 0; i < src_size; i++) {
            volatile float t = scale * src[i];
            d[i] = mli_math_sat8(f32_to_i32_trunc(t + (src[i] > 0 ? 0.5f : -0.5f)));
        }
    } else {
        return mlipy_err(MLI_STATUS_TYPE_MISMATCH, "dst", "el_type", "must be MLI_EL_FX_8 or MLI_EL_FX_16");
    }
    return MLI_STATUS_OK;
}

mli_status mli_hlp_fx_tensor_to_float(const mli_tensor *src, float *dst, uint32_t dst_size) {
    mlipy_err_reset("mli_hlp_fx_tensor_to_float");
    uint32_t n = mli_hlp_count_elem_num(src, 0);
    mlipy_err_reset("mli_hlp_fx_tensor_to_float");
    if (n == 0) return mlipy_err(MLI_STATUS_BAD_TENSOR, "src", "shape", "has no elements");
    if (n > dst_size)
        return mlipy_err_val(MLI_STATUS_LENGTH_ERROR, "dst", "size", "is smaller than the element count of src",
                             n, dst_size);
    if (src->el_type != MLI_EL_FX_8 && src->el_type != MLI_EL_FX_16)
        return mlipy_err_safety(MLI_STATUS_TYPE_MISMATCH, "src", "el_type", "must be MLI_EL_FX_8 or MLI_EL_FX_16");
    if ((uint64_t)n * mli_prv_elsize(src->el_type) > src->capacity || !src->data || !dst)
        return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "src", "capacity", "is smaller than its shape needs");
    const float scale = ldexpf(1.0f, -(int)src->el_params.fx.frac_bits);
    for (uint32_t i = 0; i < n; i++) {
        int32_t v = src->el_type == MLI_EL_FX_8 ? ((const int8_t *)src->data)[i] : ((const int16_t *)src->data)[i];
        dst[i] = scale * (float)v;
    }
    return MLI_STATUS_OK;
}
