/* Pooling (SPEC_MLI11_MORE 6): mli_krn_{maxpool,avepool}_{chw,hwc}_<kind>,
 * their _generic and shape-specialised variants (the lists of
 * mli_krn_variants_more.h) and the dispatchers' mli_debug_krn_ twins.
 *
 * Every entry point runs the same body with its variant's descriptor: the
 * effective kernel, stride and padding, and the loop MLI runs for it.  The
 * plan of a call (below, type-independent) reproduces MLI's areas and
 * windows and checks that they stay inside the buffers; the template
 * (mli_krn_pool_impl.h, once per family and kind) computes them. */
#include "mli_krn_common.h"
#include "../private/mli_prv_variant.h"
#include "../private/mli_prv_window.h"
#include "mli_krn_variants_more.h"

typedef struct {
    mli_prv_geom g;
    int64_t ch;                       /* channels */
    int64_t in_rs, in_cs, in_chs;     /* input strides (elements) of a row, column and channel */
    int64_t out_rs, out_cs, out_chs;  /* the same for the output */
    mli_prv_area areas[5];            /* MLI's areas, in its order */
    int n_areas;
    bool apart;                       /* in and out share no byte: a row's windows may be read first */
} pool_plan;

/* The average's multiplier and shift of the last window size seen (the
 * windows of an area mostly share one size, so it is computed once). */
typedef struct {
    int64_t size; /* -1: none yet */
    int16_t mul;
    int shift;
} pool_avg;

static inline void pool_avg_of(pool_avg *k, int64_t size) {
    if (size == k->size) return;
    k->size = size;
    mli_math_avg_mul_shift((uint32_t)size, &k->mul, &k->shift);
}

/* Strides MLI derives for a chw or hwc feature map of height h, width w and
 * c channels: a zero row (chw) / column (hwc) stride means dense; otherwise
 * the tensor's strides with the innermost one taken as 1. */
static void pool_strides(const int32_t *ms, bool hwc, int64_t h, int64_t w, int64_t c, int64_t *rs, int64_t *cs,
                         int64_t *chs) {
    if (!hwc) {
        *cs = 1;
        *rs = ms[1] ? ms[1] : w;
        *chs = ms[1] ? ms[0] : w * h;
    } else {
        *chs = 1;
        *cs = ms[1] ? ms[1] : c;
        *rs = ms[1] ? ms[0] : c * w;
    }
}

/* The plan of a call that passed MLI's checks; refuses (mlipy_safety) what
 * MLI would run outside its buffers or through degenerate windows. */
static mli_status pool_plan_make(const mli_tensor *in, const mli_pool_cfg *cfg, const mli_tensor *out,
                                 const mli_prv_variant *v, bool hwc, pool_plan *p) {
    mli_prv_geom *g = &p->g;
    g->in_h = mli_math_wrap32(in->shape[hwc ? 0 : 1]);
    g->in_w = mli_math_wrap32(in->shape[hwc ? 1 : 2]);
    p->ch = mli_math_wrap32(in->shape[hwc ? 2 : 0]);
    g->kw = v->kw ? v->kw : cfg->kernel_width;
    g->kh = v->kh ? v->kh : cfg->kernel_height;
    g->sw = v->stride ? v->stride : cfg->stride_width;
    g->sh = v->stride ? v->stride : cfg->stride_height;
    g->pt = v->pad_zero ? 0 : cfg->padding_top;
    g->pb = v->pad_zero ? 0 : cfg->padding_bottom;
    g->pl = v->pad_zero ? 0 : cfg->padding_left;
    g->pr = v->pad_zero ? 0 : cfg->padding_right;
    mli_prv_geom_out(g);
    pool_strides(in->mem_stride, hwc, g->in_h, g->in_w, p->ch, &p->in_rs, &p->in_cs, &p->in_chs);
    pool_strides(out->mem_stride, hwc, g->out_h, g->out_w, p->ch, &p->out_rs, &p->out_cs, &p->out_chs);
    if (v->core == MLI_CORE_NOPAD) {
        p->n_areas = mli_prv_full_area(g, p->areas); /* none when the kernel exceeds the input */
    } else {
        if (!mli_prv_geom_regular(g)) return mli_prv_refuse_geometry(g);
        p->n_areas = mli_prv_pad_areas(g, true, v->core == MLI_CORE_PAD_SMALL ? MLI_WIN_CLIP_SMALL : MLI_WIN_CLIP,
                                       p->areas);
    }
    p->apart = false;
    if (p->n_areas == 0) return MLI_STATUS_OK;
    const int64_t in_el = mli_prv_elsize(in->el_type);
    mli_prv_extent e;
    mli_prv_extent_init(&e);
    int64_t out_lo = INT64_MAX, out_hi = INT64_MIN;
    for (int i = 0; i < p->n_areas; i++) {
        const mli_prv_area *a = &p->areas[i];
        mli_prv_extent_add(&e, g, a);
        int64_t lo = 0, hi = 0;
        mli_prv_span_add(&lo, &hi, a->row_beg, a->row_end - 1, p->out_rs);
        mli_prv_span_add(&lo, &hi, a->clmn_beg, a->clmn_end - 1, p->out_cs);
        mli_prv_span_add(&lo, &hi, 0, p->ch - 1, p->out_chs);
        out_lo = mli_prv_min64(out_lo, lo);
        out_hi = mli_prv_max64(out_hi, hi);
    }
    int64_t in_lo = 0, in_hi = 0;
    mli_prv_span_add(&in_lo, &in_hi, e.y_min, e.y_max, p->in_rs);
    mli_prv_span_add(&in_lo, &in_hi, e.x_min, e.x_max, p->in_cs);
    mli_prv_span_add(&in_lo, &in_hi, 0, p->ch - 1, p->in_chs);
    if (!in->data)
        return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "in", "data", "is NULL (MLI reads through it)");
    if (in_lo < 0 || (in_hi + 1) * in_el > (int64_t)in->capacity)
        return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "in", "capacity",
                                "is exceeded by the windows MLI reads for this call (its strides, or a "
                                "variant's fixed kernel, reach beyond the buffer)");
    if (out_lo < 0 || (out_hi + 1) * in_el > (int64_t)out->capacity)
        return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "out", "capacity",
                                "is exceeded by what MLI writes for this call (a variant's fixed values give a "
                                "larger output than the checked one, or out's strides reach beyond)");
    const uintptr_t i0 = (uintptr_t)in->data + (uintptr_t)(in_lo * in_el), i1 = (uintptr_t)in->data + (uintptr_t)((in_hi + 1) * in_el);
    const uintptr_t o0 = (uintptr_t)out->data + (uintptr_t)(out_lo * in_el), o1 = (uintptr_t)out->data + (uintptr_t)((out_hi + 1) * in_el);
    p->apart = i1 <= o0 || o1 <= i0;
    return MLI_STATUS_OK;
}

/* Output metadata as MLI leaves it: el_type and rank of in, the shape of
 * the effective geometry, the element parameters of in (the frac bits, or
 * the whole asym struct for sa8); mem_stride as the caller set it. */
static void pool_set_out(const mli_tensor *in, mli_tensor *out, const pool_plan *p, bool hwc) {
    const uint32_t ho = (uint32_t)mli_math_wrap32(p->g.out_h), wo = (uint32_t)mli_math_wrap32(p->g.out_w);
    out->el_type = in->el_type;
    out->rank = in->rank;
    out->shape[hwc ? 0 : 1] = ho;
    out->shape[hwc ? 1 : 2] = wo;
    out->shape[hwc ? 2 : 0] = (uint32_t)p->ch;
    if (in->el_type == MLI_EL_ASYM_I8)
        out->el_params.asym = in->el_params.asym;
    else
        out->el_params.fx.frac_bits = in->el_params.fx.frac_bits;
}

#define POOL_FN mli_krn_maxpool_chw_fx8
#define POOL_DEBUG_FN mli_debug_krn_maxpool_chw_fx8
#define POOL_LIST MLI_VARIANTS_MAXPOOL_CHW
#define POOL_MAX 1
#define POOL_HWC 0
#define KRN_IO_T int8_t
#define KRN_BITS 8
#define KRN_DATA_EL MLI_EL_FX_8
#include "mli_krn_pool_impl.h"

#define POOL_FN mli_krn_maxpool_chw_fx16
#define POOL_DEBUG_FN mli_debug_krn_maxpool_chw_fx16
#define POOL_LIST MLI_VARIANTS_MAXPOOL_CHW
#define POOL_MAX 1
#define POOL_HWC 0
#define KRN_IO_T int16_t
#define KRN_BITS 16
#define KRN_DATA_EL MLI_EL_FX_16
#include "mli_krn_pool_impl.h"

#define POOL_FN mli_krn_avepool_chw_fx8
#define POOL_DEBUG_FN mli_debug_krn_avepool_chw_fx8
#define POOL_LIST MLI_VARIANTS_AVEPOOL_CHW
#define POOL_MAX 0
#define POOL_HWC 0
#define KRN_IO_T int8_t
#define KRN_BITS 8
#define KRN_DATA_EL MLI_EL_FX_8
#include "mli_krn_pool_impl.h"

#define POOL_FN mli_krn_avepool_chw_fx16
#define POOL_DEBUG_FN mli_debug_krn_avepool_chw_fx16
#define POOL_LIST MLI_VARIANTS_AVEPOOL_CHW
#define POOL_MAX 0
#define POOL_HWC 0
#define KRN_IO_T int16_t
#define KRN_BITS 16
#define KRN_DATA_EL MLI_EL_FX_16
#include "mli_krn_pool_impl.h"

#define POOL_FN mli_krn_maxpool_hwc_fx8
#define POOL_DEBUG_FN mli_debug_krn_maxpool_hwc_fx8
#define POOL_LIST MLI_VARIANTS_MAXPOOL_HWC
#define POOL_MAX 1
#define POOL_HWC 1
#define KRN_IO_T int8_t
#define KRN_BITS 8
#define KRN_DATA_EL MLI_EL_FX_8
#include "mli_krn_pool_impl.h"

#define POOL_FN mli_krn_maxpool_hwc_fx16
#define POOL_DEBUG_FN mli_debug_krn_maxpool_hwc_fx16
#define POOL_LIST MLI_VARIANTS_MAXPOOL_HWC
#define POOL_MAX 1
#define POOL_HWC 1
#define KRN_IO_T int16_t
#define KRN_BITS 16
#define KRN_DATA_EL MLI_EL_FX_16
#include "mli_krn_pool_impl.h"

#define POOL_FN mli_krn_maxpool_hwc_sa8
#define POOL_DEBUG_FN mli_debug_krn_maxpool_hwc_sa8
#define POOL_LIST MLI_VARIANTS_MAXPOOL_HWC
#define POOL_MAX 1
#define POOL_HWC 1
#define KRN_IO_T int8_t
#define KRN_BITS 8
#define KRN_DATA_EL MLI_EL_ASYM_I8
#include "mli_krn_pool_impl.h"

#define POOL_FN mli_krn_avepool_hwc_fx8
#define POOL_DEBUG_FN mli_debug_krn_avepool_hwc_fx8
#define POOL_LIST MLI_VARIANTS_AVEPOOL_HWC
#define POOL_MAX 0
#define POOL_HWC 1
#define KRN_IO_T int8_t
#define KRN_BITS 8
#define KRN_DATA_EL MLI_EL_FX_8
#include "mli_krn_pool_impl.h"

#define POOL_FN mli_krn_avepool_hwc_fx16
#define POOL_DEBUG_FN mli_debug_krn_avepool_hwc_fx16
#define POOL_LIST MLI_VARIANTS_AVEPOOL_HWC
#define POOL_MAX 0
#define POOL_HWC 1
#define KRN_IO_T int16_t
#define KRN_BITS 16
#define KRN_DATA_EL MLI_EL_FX_16
#include "mli_krn_pool_impl.h"

#define POOL_FN mli_krn_avepool_hwc_sa8
#define POOL_DEBUG_FN mli_debug_krn_avepool_hwc_sa8
#define POOL_LIST MLI_VARIANTS_AVEPOOL_HWC
#define POOL_MAX 0
#define POOL_HWC 1
#define KRN_IO_T int8_t
#define KRN_BITS 8
#define KRN_DATA_EL MLI_EL_ASYM_I8
#include "mli_krn_pool_impl.h"
