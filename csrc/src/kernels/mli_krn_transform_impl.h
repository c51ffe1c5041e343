/* Template body of the element-wise transforms relu, tanh, sigm
 * (SPEC.md sections 6 and 7), leaky_relu and softmax (SPEC_MLI11_MORE 7, 8).  Parameters: KRN_SFX, KRN_IO_T, KRN_BITS,
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

/* MLI's mli_prv_copy_tensor_format: shape and mem_stride within in's rank,
 * rank, el_type and the whole element-parameter union of in. */
static void MLI_CAT(copy_format_, KRN_SFX)(const mli_tensor *in, mli_tensor *out) {
    for (uint32_t i = 0; i < in->rank && i < MLI_MAX_RANK; i++) {
        out->shape[i] = in->shape[i];
        out->mem_stride[i] = in->mem_stride[i];
    }
    out->rank = in->rank;
    out->el_type = in->el_type;
    out->el_params = in->el_params;
}

/* y = max(x, p) when the slope a counts as below one, else min(x, p), with
 * p = SAT_16(RND(x * a, f_s)) (then SAT_8 for fx8).  The output format is
 * in's, copied first: the shift is the slope's frac bits. */
mli_status MLI_CAT(mli_krn_leaky_relu_, KRN_SFX)(const mli_tensor *in, const mli_tensor *slope_coeff,
                                                 mli_tensor *out) {
    mlipy_err_reset("mli_krn_leaky_relu_" MLI_STR(KRN_SFX));
    mli_status st = mli_chk_leaky_relu(in, slope_coeff, out, KRN_DATA_EL);
    if (st != MLI_STATUS_OK) return st;
    const KRN_IO_T *x = (const KRN_IO_T *)in->data;
    KRN_IO_T *y = (KRN_IO_T *)out->data;
    const long n = (long)mli_prv_count(in, 0);
    MLI_CAT(copy_format_, KRN_SFX)(in, out);
    const int shift = in->el_params.fx.frac_bits + slope_coeff->el_params.fx.frac_bits - out->el_params.fx.frac_bits;
    const KRN_IO_T a = slope_coeff->rank == 0 ? (KRN_IO_T)(intptr_t)slope_coeff->data
                                              : ((const KRN_IO_T *)slope_coeff->data)[0];
    const int below_one = mli_math_less_than_one(a, slope_coeff->el_params.fx.frac_bits);
    for (long i = 0; i < n; i++) {
        const KRN_IO_T p = (KRN_IO_T)mli_math_sat(mli_math_asr16((int64_t)x[i] * a, shift), KRN_BITS);
        y[i] = below_one ? (p > x[i] ? p : x[i]) : (p < x[i] ? p : x[i]);
    }
    return MLI_STATUS_OK;
}

/* SPEC_MLI11_MORE 8: subtract the maximum (halving everything when the
 * range does not fit the type), exp(-t) from the table, normalise by the
 * reciprocal of the sum.  y may be x. */
mli_status MLI_CAT(mli_krn_softmax_, KRN_SFX)(const mli_tensor *in, mli_tensor *out) {
    mlipy_err_reset("mli_krn_softmax_" MLI_STR(KRN_SFX));
    mli_status st = mli_chk_activation(in, out, KRN_DATA_EL);
    if (st != MLI_STATUS_OK) return st;
    const KRN_IO_T *x = (const KRN_IO_T *)in->data;
    KRN_IO_T *y = (KRN_IO_T *)out->data;
    const long n = (long)mli_prv_count(in, 0);
    int frac = in->el_params.fx.frac_bits;
    KRN_IO_T mx = x[0], mn = x[0];
    for (long i = 1; i < n; i++) {
        mx = x[i] > mx ? x[i] : mx;
        mn = x[i] < mn ? x[i] : mn;
    }
    if ((int)mn - (int)mx < -(1 << (KRN_BITS - 1))) { /* halve: one more bit of range */
        const int64_t hx = mli_math_floor_shr(mx, 1);
        for (long i = 0; i < n; i++) y[i] = (KRN_IO_T)mli_math_sat16(mli_math_floor_shr(x[i], 1) - hx);
        frac -= 1;
    } else {
        for (long i = 0; i < n; i++) y[i] = (KRN_IO_T)mli_math_sat16((int32_t)x[i] - mx);
    }
    MLI_CAT(mli_prv_act_vec, KRN_BITS)(&mli_prv_expneg_lut, y, n, frac, y);
    int64_t sum = 0;
    for (long i = 0; i < n; i++) sum += y[i];
    int norm;
    const int32_t r = mli_math_softmax_recip(mli_math_sat40(sum), &norm);
    const int shift = 30 + (16 - KRN_BITS) - norm;
    for (long i = 0; i < n; i++) y[i] = (KRN_IO_T)mli_math_sat(mli_math_asr16((int64_t)r * y[i], shift), KRN_BITS);
    MLI_CAT(copy_format_, KRN_SFX)(in, out);
    out->el_params.fx.frac_bits = KRN_BITS - 1;
    return MLI_STATUS_OK;
}

#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
