/* Template body of mli_krn_fully_connected_<KRN_SFX> (SPEC.md section 5).
 * Parameters: KRN_SFX, KRN_IO_T, KRN_W_T, KRN_DATA_EL, KRN_W_EL. */
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_W_T) || !defined(KRN_DATA_EL) || !defined(KRN_W_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_W_T, KRN_DATA_EL and KRN_W_EL first"
#endif

mli_status MLI_CAT(mli_krn_fully_connected_, KRN_SFX)(const mli_tensor *in, const mli_tensor *weights,
                                                      const mli_tensor *bias, mli_tensor *out) {
    mlipy_err_reset("mli_krn_fully_connected_" MLI_STR(KRN_SFX));
    const mli_chk_kind kind = {KRN_DATA_EL, KRN_W_EL};
    mli_status st = mli_chk_fully_connected(in, weights, bias, out, kind);
    if (st != MLI_STATUS_OK) return st;

    const int N = (int)mli_prv_count(in, 0), K = (int)weights->shape[0];
    const long R = weights->mem_stride[0] ? weights->mem_stride[0] : N;
    const int f_in = in->el_params.fx.frac_bits, f_w = weights->el_params.fx.frac_bits;
    mli_dense_shifts sh = {f_in + f_w - bias->el_params.fx.frac_bits, 0,
                           f_in + f_w - out->el_params.fx.frac_bits};
    MLI_CAT(mli_prv_dense_, KRN_SFX)((const KRN_IO_T *)in->data, N, NULL, 0, (const KRN_W_T *)weights->data,
                                     R, (const KRN_W_T *)bias->data, K, sh, (KRN_IO_T *)out->data);
    out->el_type = in->el_type;
    out->rank = 1;
    out->shape[0] = (uint32_t)K;
    return MLI_STATUS_OK;
}

#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
