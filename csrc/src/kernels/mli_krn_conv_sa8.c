/* The sa8 convolutions (SPEC_MLI11_MORE 4-5): mli_krn_conv2d_nhwc_sa8_sa8_sa32
 * and mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32, their _generic and
 * shape-specialised variants (the lists of mli_krn_variants_more.h) and the
 * dispatchers' mli_debug_krn_ twins.
 *
 * As for the pools, every entry point runs one body with its variant's
 * descriptor: the plan below (the effective kernel and padding, the
 * strides MLI derives, its areas, the quantization) reproduces what MLI
 * runs and checks that it stays inside the buffers; the template
 * (mli_krn_conv_sa8_impl.h, once for conv2d_nhwc and once for depthwise)
 * computes it with MLI's accumulators. */
#include "mli_krn_common.h"
#include "../private/mli_prv_variant.h"
#include "../private/mli_prv_window.h"
#include "mli_krn_variants_more.h"

typedef struct {
    mli_prv_geom g;
    int core;                        /* MLI_CORE_* */
    int64_t c_in, c_out;             /* input and output channels */
    int64_t in_rs, in_cs;            /* input strides of a row and a column (channels are 1 apart) */
    int64_t w_ocs, w_rs, w_cs;       /* weights strides of an output channel (conv), a row, a column */
    int64_t out_rs, out_cs;          /* output strides of a row and a column */
    int64_t in_cap;                  /* in.capacity: the 1x1 loop's stride bug may read beyond it */
    bool in_beyond;                  /* ... and does for this call */
    mli_prv_area areas[5];
    int n_areas;
    /* quantization (SPEC_MLI11_MORE 5) */
    int16_t in_zp, out_zp;
    int32_t ratio;                   /* in.scale / out.scale in Q30 */
    int out_shift;
    int8_t lo, hi;                   /* ReLU limits */
    const int32_t *w_scales;         /* per output channel */
} conv_plan;

/* Input or output strides of an hwc map as MLI derives them: dense when the
 * column stride is 0, else the tensor's row and column strides. */
static void hwc_strides(const int32_t *ms, int64_t w, int64_t c, int64_t *rs, int64_t *cs) {
    *cs = ms[1] ? ms[1] : c;
    *rs = ms[1] ? ms[0] : c * w;
}

/* The plan of a call that passed MLI's checks, or a safety refusal. */
static mli_status conv_plan_make(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                 const mli_conv2d_cfg *cfg, const mli_tensor *out, const mli_prv_variant *v,
                                 bool depthwise, conv_plan *p) {
    /* quantization parameters: MLI reads the output's as per-tensor values */
    if (out->el_params.asym.dim >= 0)
        return mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "el_params.asym.dim",
                                "is not negative: MLI reads out's zero point and scale as per-tensor values "
                                "(here the bits of the array pointers)");
    const int32_t out_scale = out->el_params.asym.scale.i32;
    if (out_scale == 0)
        return mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "el_params.asym.scale",
                                "is 0: MLI divides by it (a crash)");
    if (mli_math_sa8_relu_traps(out->el_params.asym.scale_frac_bits, out_scale))
        return mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "el_params.asym.scale",
                                "is -1 with scale_frac_bits 62 or 63: MLI's ReLU limits divide INT64_MIN by it "
                                "(a crash)");
    if (!weights->el_params.asym.zero_point.pi16)
        return mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, "weights", "el_params.asym.zero_point",
                                "is a NULL array: MLI reads its first entry");
    p->in_zp = in->el_params.asym.zero_point.i16;
    p->out_zp = out->el_params.asym.zero_point.i16;
    p->ratio = mli_math_sa8_scale_ratio(in->el_params.asym.scale.i32, out_scale);
    p->out_shift = in->el_params.asym.scale_frac_bits + weights->el_params.asym.scale_frac_bits + 30 -
                   out->el_params.asym.scale_frac_bits - 32;
    p->w_scales = weights->el_params.asym.scale.pi32;
    mli_math_sa8_relu_limits(cfg->relu.type, p->out_zp, out->el_params.asym.scale_frac_bits, out_scale, &p->lo,
                             &p->hi);

    /* the effective geometry: the variant's fixed kernel, MLI's weights strides for it */
    mli_prv_geom *g = &p->g;
    g->in_h = mli_math_wrap32(in->shape[0]);
    g->in_w = mli_math_wrap32(in->shape[1]);
    p->c_in = mli_math_wrap32(in->shape[2]);
    g->kh = v->kh ? v->kh : mli_math_wrap32(weights->shape[1]);
    g->kw = v->kw ? v->kw : mli_math_wrap32(weights->shape[2]);
    g->sh = cfg->stride_height;
    g->sw = cfg->stride_width;
    g->pt = v->pad_zero ? 0 : cfg->padding_top;
    g->pb = v->pad_zero ? 0 : cfg->padding_bottom;
    g->pl = v->pad_zero ? 0 : cfg->padding_left;
    g->pr = v->pad_zero ? 0 : cfg->padding_right;
    mli_prv_geom_out(g);
    p->core = v->core;
    const int32_t *wms = weights->mem_stride;
    if (depthwise) {
        p->c_out = mli_math_wrap32(weights->shape[3]);
        p->w_ocs = 1;
        p->w_cs = wms[2] ? wms[2] : p->c_out;
        p->w_rs = wms[2] ? wms[1] : p->c_out * g->kw;
    } else {
        p->c_out = mli_math_wrap32(weights->shape[0]);
        const int64_t wc = mli_math_wrap32(weights->shape[3]);
        p->w_cs = wms[2] ? wms[2] : wc;
        p->w_rs = wms[2] ? wms[1] : wc * g->kw;
        p->w_ocs = wms[2] ? wms[0] : wc * g->kw * g->kh;
    }
    hwc_strides(in->mem_stride, g->in_w, p->c_in, &p->in_rs, &p->in_cs);
    hwc_strides(out->mem_stride, g->out_w, p->c_out, &p->out_rs, &p->out_cs);
    if (p->core == MLI_CORE_NOPAD || p->core == MLI_CORE_POINTWISE) {
        p->n_areas = mli_prv_full_area(g, p->areas);
    } else {
        if (!mli_prv_geom_regular(g)) return mli_prv_refuse_geometry(g);
        p->n_areas = mli_prv_pad_areas(g, true, MLI_WIN_CLIP, p->areas);
    }

    /* what MLI reads and writes */
    if (!bias->data) return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "bias", "data", "is NULL (MLI reads it)");
    int64_t in_lo = 0, in_hi = -1, w_lo = 0, w_hi = -1, out_lo = 0, out_hi = -1;
    bool w_read = false;
    if (p->n_areas > 0) {
        mli_prv_extent e;
        mli_prv_extent_init(&e);
        out_lo = INT64_MAX;
        out_hi = INT64_MIN;
        for (int i = 0; i < p->n_areas; i++) {
            const mli_prv_area *a = &p->areas[i];
            mli_prv_extent_add(&e, g, a);
            int64_t lo = 0, hi = 0;
            mli_prv_span_add(&lo, &hi, a->row_beg, a->row_end - 1, p->out_rs);
            mli_prv_span_add(&lo, &hi, a->clmn_beg, a->clmn_end - 1, p->out_cs);
            mli_prv_span_add(&lo, &hi, 0, p->c_out - 1, 1);
            out_lo = mli_prv_min64(out_lo, lo);
            out_hi = mli_prv_max64(out_hi, hi);
        }
        in_hi = 0;
        if (p->core == MLI_CORE_POINTWISE) { /* the stride bug's input addresses (SPEC_MLI11_MORE 3.6) */
            const int64_t drift = p->in_cs * g->out_w * (g->sw - 1);
            mli_prv_span_add(&in_lo, &in_hi, 0, p->c_out - 1, g->out_h * drift);
            mli_prv_span_add(&in_lo, &in_hi, 0, g->out_h - 1, p->in_rs * g->sh + drift);
            mli_prv_span_add(&in_lo, &in_hi, 0, g->out_w - 1, p->in_cs * g->sw);
        } else {
            mli_prv_span_add(&in_lo, &in_hi, e.y_min, e.y_max, p->in_rs);
            mli_prv_span_add(&in_lo, &in_hi, e.x_min, e.x_max, p->in_cs);
        }
        mli_prv_span_add(&in_lo, &in_hi, 0, p->c_in - 1, 1);
        w_read = true;
        w_hi = 0;
        mli_prv_span_add(&w_lo, &w_hi, 0, e.ky_max, p->w_rs);
        mli_prv_span_add(&w_lo, &w_hi, 0, e.kx_max, p->w_cs);
    } else if (p->in_zp != 0 && p->core != MLI_CORE_PAD) {
        /* no output, but the weights' sums are formed per output channel */
        w_read = true;
        w_hi = 0;
        mli_prv_span_add(&w_lo, &w_hi, 0, g->kh - 1, p->w_rs);
        mli_prv_span_add(&w_lo, &w_hi, 0, g->kw - 1, p->w_cs);
    }
    if (w_read) { /* the channels: depthwise outputs 1 apart; conv inputs 1 apart, outputs w_ocs */
        mli_prv_span_add(&w_lo, &w_hi, 0, depthwise ? p->c_out - 1 : p->c_in - 1, 1);
        if (!depthwise) mli_prv_span_add(&w_lo, &w_hi, 0, p->c_out - 1, p->w_ocs);
    }
    p->in_cap = (int64_t)in->capacity;
    p->in_beyond = false;
    if (in_hi >= in_lo) {
        if (!in->data) return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "in", "data", "is NULL (MLI reads it)");
        /* the stride bug's reads beyond the buffer are judged per output
         * element once the other checks pass (conv2d_nhwc's _pointwise) */
        if (p->core == MLI_CORE_POINTWISE && (in_lo < 0 || in_hi >= p->in_cap))
            p->in_beyond = true;
        else if (in_lo < 0 || in_hi >= p->in_cap)
            return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "in", "capacity",
                                    "is exceeded by what MLI reads for this call (its strides, a variant's fixed "
                                    "kernel or the 1x1 variant's stride bug reach beyond the buffer)");
    }
    if (w_read) {
        if (!weights->data)
            return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "weights", "data", "is NULL (MLI reads it)");
        if (w_lo < 0 || w_hi >= (int64_t)weights->capacity)
            return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "weights", "capacity",
                                    "is exceeded by what MLI reads for this call (a variant's fixed kernel size "
                                    "or the weights' strides reach beyond the buffer)");
    }
    if (out_hi >= out_lo && (out_lo < 0 || out_hi >= (int64_t)out->capacity))
        return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "out", "capacity",
                                "is exceeded by what MLI writes for this call (a variant's fixed values give a "
                                "larger output than the checked one, or out's strides reach beyond)");
    return MLI_STATUS_OK;
}

/* Output metadata as MLI leaves it: el_type ASYM_I8, rank of in, the shape
 * of the effective geometry; el_params and mem_stride as the caller set them. */
static void conv_set_out(const mli_tensor *in, mli_tensor *out, const conv_plan *p) {
    out->el_type = MLI_EL_ASYM_I8;
    out->rank = in->rank;
    out->shape[0] = (uint32_t)mli_math_wrap32(p->g.out_h);
    out->shape[1] = (uint32_t)mli_math_wrap32(p->g.out_w);
    out->shape[2] = (uint32_t)p->c_out;
}

/* The sa8 output value of channel o from its accumulator. */
static inline int8_t conv_out_value(const conv_plan *p, int64_t o, int32_t acc) {
    const int32_t mul = mli_math_sa8_out_mul(p->ratio, p->w_scales[o]);
    return mli_math_sa8_clamp(mli_math_sa8_requant16(acc, mul, p->out_shift, p->out_zp), p->lo, p->hi);
}

#define CONV_FN mli_krn_conv2d_nhwc_sa8_sa8_sa32
#define CONV_DEBUG_FN mli_debug_krn_conv2d_nhwc_sa8_sa8_sa32
#define CONV_LIST MLI_VARIANTS_CONV2D_NHWC
#define CONV_DEPTHWISE 0
#include "mli_krn_conv_sa8_impl.h"

#define CONV_FN mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32
#define CONV_DEBUG_FN mli_debug_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32
#define CONV_LIST MLI_VARIANTS_DEPTHWISE_CONV2D_HWCN
#define CONV_DEPTHWISE 1
#include "mli_krn_conv_sa8_impl.h"
