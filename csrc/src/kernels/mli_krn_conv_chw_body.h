/* The chw convolution functions of one family and kind, shared by
 * mli_krn_conv2d_impl.h and mli_krn_depthwise_conv2d_impl.h:
 * mli_krn_<CHW_FAMILY>_<KRN_SFX> (the dispatcher), its _generic, every
 * specialisation of the table CHW_VARIANTS, and
 * mli_debug_krn_<CHW_FAMILY>_<KRN_SFX>.  Each function is one call of the
 * family's run function with the fixed values of its table row; the loops
 * are those of mli_prv_conv.c.
 * Parameters: CHW_FAMILY (conv2d_chw or depthwise_conv2d_chw), CHW_VARIANTS
 * (its X-macro table), CHW_DEPTHWISE (0 or 1), and the kind's KRN_SFX,
 * KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL, KRN_W_EL (left defined). */
#if !defined(CHW_FAMILY) || !defined(CHW_VARIANTS) || !defined(CHW_DEPTHWISE)
#error "define CHW_FAMILY, CHW_VARIANTS and CHW_DEPTHWISE first"
#endif
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_W_T) || !defined(KRN_BITS) || \
    !defined(KRN_DATA_EL) || !defined(KRN_W_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL and KRN_W_EL first"
#endif

#define CONV_NAME(sfx) MLI_CAT(MLI_CAT(MLI_CAT(mli_krn_, CHW_FAMILY), MLI_CAT(_, KRN_SFX)), MLI_CAT(_, sfx))
#define CONV_STRNAME(sfx) "mli_krn_" MLI_STR(CHW_FAMILY) "_" MLI_STR(KRN_SFX) "_" #sfx
#define CONV_KEEP(kinds) MLI_CAT(MLI_CAT(MLIPY_CONV_KEEP_, kinds), MLI_CAT(_, KRN_SFX))
#define CONV_CORE(c16, c8) MLI_CAT(MLI_CONV_CORE_OF_, KRN_SFX)(c16, c8)
#define CONV_RUN MLI_CAT(MLI_CAT(CHW_FAMILY, _run_), KRN_SFX)
#define CONV_DISPATCH MLI_CAT(MLI_CAT(mli_krn_, CHW_FAMILY), MLI_CAT(_, KRN_SFX))
#define CONV_DEBUG MLI_CAT(MLI_CAT(mli_debug_krn_, CHW_FAMILY), MLI_CAT(_, KRN_SFX))
#define CONV_TABLE MLI_CAT(MLI_CAT(CHW_FAMILY, _table_), KRN_SFX)

static mli_status CONV_RUN(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                           const mli_conv2d_cfg *cfg, mli_tensor *out, const mli_conv_fix *f, const char *name) {
    mlipy_err_reset(name);
    const mli_chk_kind kind = {KRN_DATA_EL, KRN_W_EL};
    mli_status st = mli_chk_conv2d_chw(in, weights, bias, cfg, out, kind, CHW_DEPTHWISE);
    if (st != MLI_STATUS_OK) return st;
    mli_conv_geom g;
    const int outside = mli_prv_conv_chw_geom(&g, f, in, weights, cfg, CHW_DEPTHWISE);
    const mli_conv_caps caps = {(int64_t)(in->capacity / sizeof(KRN_IO_T)),
                                (int64_t)(weights->capacity / sizeof(KRN_W_T)),
                                (int64_t)(bias->capacity / sizeof(KRN_W_T)),
                                (int64_t)(out->capacity / sizeof(KRN_IO_T))};
    st = mli_prv_conv_chw_safe(f->core, &g, caps, outside);
    if (st != MLI_STATUS_OK) return st;

    const int f_in = in->el_params.fx.frac_bits, f_w = weights->el_params.fx.frac_bits;
    mli_conv_out_fmt fmt = {f_in + f_w - bias->el_params.fx.frac_bits, f_in + f_w - out->el_params.fx.frac_bits, 0,
                            0};
    mli_math_relu_limits((int)cfg->relu.type, out->el_params.fx.frac_bits, KRN_BITS, &fmt.lo, &fmt.hi);
    MLI_CAT(mli_prv_conv_chw_, KRN_SFX)(f->core, &g, fmt, (const KRN_IO_T *)in->data,
                                        (const KRN_W_T *)weights->data, (const KRN_W_T *)bias->data,
                                        (KRN_IO_T *)out->data, caps);
    out->el_type = KRN_DATA_EL;
    out->rank = in->rank;
    out->shape[0] = (uint32_t)g.out_ch;
    out->shape[1] = (uint32_t)g.out_h;
    out->shape[2] = (uint32_t)g.out_w;
    return MLI_STATUS_OK;
}

/* The specialisations: one function per table row present in this kind. */
#define CONV_DEFINE(kinds, sfx, kw, kh, ch, str, pad, c16, c8)                                                \
    CONV_KEEP(kinds)(mli_status CONV_NAME(sfx)(const mli_tensor *in, const mli_tensor *weights,            \
                                               const mli_tensor *bias, const mli_conv2d_cfg *cfg,          \
                                               mli_tensor *out) {                                          \
        static const mli_conv_fix f = {kw, kh, ch, str, MLI_CONV_PAD_##pad, CONV_CORE(c16, c8)};            \
        return CONV_RUN(in, weights, bias, cfg, out, &f, CONV_STRNAME(sfx));                               \
    })
CHW_VARIANTS(CONV_DEFINE)
#undef CONV_DEFINE

mli_status CONV_NAME(generic)(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                              const mli_conv2d_cfg *cfg, mli_tensor *out) {
    static const mli_conv_fix f = {0, 0, 0, 0, MLI_CONV_PAD_NONE, MLI_CONV_CORE_ANY};
    return CONV_RUN(in, weights, bias, cfg, out, &f, CONV_STRNAME(generic));
}

/* The dispatcher's if-chain, in table order. */
#define CONV_ENTRY(kinds, sfx, kw, kh, ch, str, pad, c16, c8) \
    CONV_KEEP(kinds)({{kw, kh, ch, str, MLI_CONV_PAD_##pad, CONV_CORE(c16, c8)}, CONV_NAME(sfx), CONV_STRNAME(sfx)},)
static const mli_conv_entry CONV_TABLE[] = {CHW_VARIANTS(CONV_ENTRY)};
#undef CONV_ENTRY

mli_status CONV_DISPATCH(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                         const mli_conv2d_cfg *cfg, mli_tensor *out) {
    if (!cfg || !in || !weights) {
        mlipy_err_reset("mli_krn_" MLI_STR(CHW_FAMILY) "_" MLI_STR(KRN_SFX));
        return mli_prv_conv_dispatch_null(cfg, in);
    }
    const mli_conv_entry *e = mli_prv_conv_pick(CONV_TABLE, sizeof CONV_TABLE / sizeof CONV_TABLE[0], in, weights, cfg);
    return e ? e->fn(in, weights, bias, cfg, out) : CONV_NAME(generic)(in, weights, bias, cfg, out);
}

char *CONV_DEBUG(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                 const mli_conv2d_cfg *cfg, mli_tensor *out) {
    (void)bias;
    (void)out;
    if (!cfg || !in || !weights) return NULL;
    const mli_conv_entry *e = mli_prv_conv_pick(CONV_TABLE, sizeof CONV_TABLE / sizeof CONV_TABLE[0], in, weights, cfg);
    return (char *)(e ? e->name : CONV_STRNAME(generic));
}

#undef CONV_NAME
#undef CONV_STRNAME
#undef CONV_KEEP
#undef CONV_CORE
#undef CONV_RUN
#undef CONV_DISPATCH
#undef CONV_DEBUG
#undef CONV_TABLE
#undef CHW_FAMILY
#undef CHW_VARIANTS
#undef CHW_DEPTHWISE
