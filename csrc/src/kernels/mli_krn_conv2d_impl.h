/* Template body of the 2D convolutions of one kind (SPEC_MLI11_MORE.md 2-4,
 * 10): mli_krn_conv2d_chw_<KRN_SFX> (the dispatcher), its _generic, every
 * specialisation of MLIPY_CONV2D_CHW_VARIANTS (mli_krn_conv2d_spec_api.h),
 * mli_debug_krn_conv2d_chw_<KRN_SFX>, and mli_krn_conv2d_hwc_<KRN_SFX>.
 * Parameters: KRN_SFX, KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL, KRN_W_EL.
 *
 * The chw functions come from mli_krn_conv_chw_body.h; the loops of both
 * layouts are those of mli_prv_conv.c. */
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_W_T) || !defined(KRN_BITS) || \
    !defined(KRN_DATA_EL) || !defined(KRN_W_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL and KRN_W_EL first"
#endif

#define CHW_FAMILY conv2d_chw
#define CHW_VARIANTS MLIPY_CONV2D_CHW_VARIANTS
#define CHW_DEPTHWISE 0
#include "mli_krn_conv_chw_body.h"

/* ------------------------------------------------------------------- hwc -- */
/* MLI 1.1's fx16 function checks no element types and no bias frac bits;
 * all three keep both shifts in uint8_t (a negative output shift becomes a
 * large right shift); fx8 / fx8w16d keep the output size in uint16_t. */
mli_status MLI_CAT(mli_krn_conv2d_hwc_, KRN_SFX)(const mli_tensor *in, const mli_tensor *weights,
                                                 const mli_tensor *bias, const mli_conv2d_cfg *cfg,
                                                 mli_tensor *out) {
    mlipy_err_reset("mli_krn_conv2d_hwc_" MLI_STR(KRN_SFX));
    const int is16 = KRN_DATA_EL == MLI_EL_FX_16 && KRN_W_EL == MLI_EL_FX_16;
    const mli_chk_kind kind = {KRN_DATA_EL, KRN_W_EL};
    mli_status st = mli_chk_conv2d_hwc(in, weights, bias, cfg, out, kind, !is16);
    if (st != MLI_STATUS_OK) return st;
    mli_conv_hwc_geom g;
    g.ch = (int)in->shape[2];
    g.in_h = (int)in->shape[0];
    g.in_w = (int)in->shape[1];
    g.out_ch = (int)weights->shape[0];
    g.kh = (int)weights->shape[1];
    g.kw = (int)weights->shape[2];
    g.sh = cfg->stride_height;
    g.sw = cfg->stride_width;
    g.pt = cfg->padding_top;
    g.pb = cfg->padding_bottom;
    g.pl = cfg->padding_left;
    g.pr = cfg->padding_right;
    g.out_w = (g.in_w + g.pl + g.pr - g.kw + 1 + g.sw - 1) / g.sw;
    g.out_h = (g.in_h + g.pt + g.pb - g.kh + 1 + g.sh - 1) / g.sh;
    if (!is16) {
        g.out_w = (uint16_t)g.out_w;
        g.out_h = (uint16_t)g.out_h;
    }
    const mli_conv_hwc_path path =
        !is16 ? MLI_CONV_HWC_FX8
              : (g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && !g.pt && !g.pb && !g.pl && !g.pr
                     ? MLI_CONV_HWC_FX16_1X1
                     : MLI_CONV_HWC_FX16);
    /* MLI's strides: the given ones when the column stride is set, else dense */
    const int32_t *ms = in->mem_stride;
    g.in_rs = ms[1] ? ms[0] : (int64_t)g.ch * g.in_w;
    g.in_cs = ms[1] ? ms[1] : g.ch;
    ms = weights->mem_stride;
    g.w_os = ms[2] ? ms[0] : (int64_t)g.ch * g.kw * g.kh;
    g.w_rs = ms[2] ? ms[1] : (int64_t)g.ch * g.kw;
    g.w_cs = ms[2] ? ms[2] : g.ch;
    ms = out->mem_stride;
    g.out_rs = ms[1] ? ms[0] : (int64_t)g.out_ch * g.out_w;
    g.out_cs = ms[1] ? ms[1] : g.out_ch;
    st = mli_prv_conv_hwc_safe(&g);
    if (st != MLI_STATUS_OK) return st;
    const mli_conv_caps caps = {(int64_t)(in->capacity / sizeof(KRN_IO_T)),
                                (int64_t)(weights->capacity / sizeof(KRN_W_T)),
                                (int64_t)(bias->capacity / sizeof(KRN_W_T)),
                                (int64_t)(out->capacity / sizeof(KRN_IO_T))};
    st = mli_prv_conv_hwc_reach(path, &g, caps);
    if (st != MLI_STATUS_OK) return st;

    const int f_in = in->el_params.fx.frac_bits, f_w = weights->el_params.fx.frac_bits;
    mli_conv_out_fmt fmt = {(uint8_t)(f_in + f_w - bias->el_params.fx.frac_bits),
                            (uint8_t)(f_in + f_w - out->el_params.fx.frac_bits), 0, 0};
    mli_math_relu_limits((int)cfg->relu.type, out->el_params.fx.frac_bits, KRN_BITS, &fmt.lo, &fmt.hi);
    out->el_type = KRN_DATA_EL;
    out->rank = in->rank;
    out->shape[0] = (uint32_t)g.out_h;
    out->shape[1] = (uint32_t)g.out_w;
    out->shape[2] = (uint32_t)g.out_ch;
    MLI_CAT(mli_prv_conv_hwc_, KRN_SFX)(path, &g, fmt, (const KRN_IO_T *)in->data, (const KRN_W_T *)weights->data,
                                        (const KRN_W_T *)bias->data, (KRN_IO_T *)out->data, caps);
    return MLI_STATUS_OK;
}

#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
