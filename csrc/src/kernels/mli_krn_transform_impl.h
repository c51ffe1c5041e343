/* Template body of the element-wise transforms relu, tanh, sigm
 * (SPEC.md sections 6 and 7).  Parameters: KRN_SFX, KRN_IO_T, KRN_BITS,
 * KRN_DATA_EL (KRN_W_T, KRN_W_EL unused). */
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_BITS) || !defined(KRN_DATA_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_BITS and KRN_DATA_EL first"
#endif

static void MLI_CAT(copy_layout_, KRN_SFX)(const mli_tensor *in, mli_tensor *out) {
    out->rank = in->rank;
    for (uint32_t i = 0; i < in->rank && i < MLI_MAX_RANK; i++) { /* entries beyond the rank stay (SPEC 12.3) */
        out->shape[i] = in->shape[i];
        out->mem_stride[i] = in->mem_stride[i];
    }
    out->el_type = in->el_type;
}

static mli_status MLI_CAT(lut_kernel_, KRN_SFX)(const mli_lut *lut, const mli_tensor *in, mli_tensor *out) {
    mli_status st = mli_chk_activation(in, out, KRN_DATA_EL);
    if (st != MLI_STATUS_OK) return st;
    MLI_CAT(mli_prv_act_vec, KRN_BITS)(lut, (const KRN_IO_T *)in->data, (long)mli_prv_count(in, 0),
                                       in->el_params.fx.frac_bits, (KRN_IO_T *)out->data);
    MLI_CAT(copy_layout_, KRN_SFX)(in, out);
    out->el_params.fx.frac_bits = KRN_BITS - 1;
    return MLI_STATUS_OK;
}

mli_status MLI_CAT(mli_krn_tanh_, KRN_SFX)(const mli_tensor *in, mli_tensor *out) {
    mlipy_err_reset("mli_krn_tanh_" MLI_STR(KRN_SFX));
    return MLI_CAT(lut_kernel_, KRN_SFX)(&mli_prv_tanh_lut, in, out);
}

mli_status MLI_CAT(mli_krn_sigm_, KRN_SFX)(const mli_tensor *in, mli_tensor *out) {
    mlipy_err_reset("mli_krn_sigm_" MLI_STR(KRN_SFX));
    return MLI_CAT(lut_kernel_, KRN_SFX)(&mli_prv_sigm_lut, in, out);
}

mli_status MLI_CAT(mli_krn_relu_, KRN_SFX)(const mli_tensor *in, const mli_relu_cfg *cfg, mli_tensor *out) {
    mlipy_err_reset("mli_krn_relu_" MLI_STR(KRN_SFX));
    mli_status st = mli_chk_activation(in, out, KRN_DATA_EL);
    if (st != MLI_STATUS_OK) return st;
    if (!cfg) return mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL");
    const int64_t mx = ((int64_t)1 << (KRN_BITS - 1)) - 1, mn = -mx - 1;
    const int f = in->el_params.fx.frac_bits;
    /* one = 2^f and six = 6 * 2^f, kept exact for any frac bits */
    const int64_t one = f >= KRN_BITS ? mx + 1 : (int64_t)1 << f;
    const int64_t six = f >= KRN_BITS ? mx + 1 : 6 * one;
    int64_t lo = mn, hi = mx;
    switch (cfg->type) {
    case MLI_RELU_GEN: lo = 0; break;
    case MLI_RELU_6: lo = 0; hi = six < mx ? six : mx; break;
    case MLI_RELU_1: lo = -one > mn ? -one : mn; hi = one < mx ? one : mx; break;
    default: break;
    }
    const KRN_IO_T *x = (const KRN_IO_T *)in->data;
    KRN_IO_T *y = (KRN_IO_T *)out->data;
    const long n = (long)mli_prv_count(in, 0);
    for (long i = 0; i < n; i++) y[i] = (KRN_IO_T)(x[i] < lo ? lo : (x[i] > hi ? hi : x[i]));
    MLI_CAT(copy_layout_, KRN_SFX)(in, out);
    out->el_params.fx.frac_bits = in->el_params.fx.frac_bits;
    return MLI_STATUS_OK;
}

#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
