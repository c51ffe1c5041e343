/* Template body of permute, concat and padding2d (SPEC_MLI11_MORE 9).
 * Parameters: KRN_SFX, KRN_IO_T, KRN_BITS, KRN_DATA_EL (KRN_W_T, KRN_W_EL
 * unused).  Inputs are read and outputs written densely, as MLI does. */
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_BITS) || !defined(KRN_DATA_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_BITS and KRN_DATA_EL first"
#endif

/* Output dimension k takes input dimension perm_dim[k]; the output is dense,
 * its mem_stride left as the caller set it. */
mli_status MLI_CAT(mli_krn_permute_, KRN_SFX)(const mli_tensor *in, const mli_permute_cfg *cfg, mli_tensor *out) {
    mlipy_err_reset("mli_krn_permute_" MLI_STR(KRN_SFX));
    mli_status st = mli_chk_permute(in, cfg, out, KRN_DATA_EL);
    if (st != MLI_STATUS_OK) return st;
    const uint32_t rank = in->rank;
    int64_t dense[MLI_MAX_RANK], shape[MLI_MAX_RANK] = {1, 1, 1, 1}, step[MLI_MAX_RANK] = {0, 0, 0, 0};
    for (uint32_t k = rank, acc = 1; k-- > 0;) {
        dense[k] = acc;
        acc *= in->shape[k];
    }
    /* the loops run over four dimensions, the leading ones of size 1 */
    for (uint32_t k = 0; k < rank; k++) {
        shape[MLI_MAX_RANK - rank + k] = in->shape[cfg->perm_dim[k]];
        step[MLI_MAX_RANK - rank + k] = dense[cfg->perm_dim[k]];
    }
    const KRN_IO_T *x = (const KRN_IO_T *)in->data;
    KRN_IO_T *y = (KRN_IO_T *)out->data;
    for (int64_t a = 0; a < shape[0]; a++)
        for (int64_t b = 0; b < shape[1]; b++)
            for (int64_t c = 0; c < shape[2]; c++) {
                const KRN_IO_T *src = x + a * step[0] + b * step[1] + c * step[2];
                for (int64_t d = 0; d < shape[3]; d++) *y++ = src[d * step[3]];
            }
    for (uint32_t k = 0; k < rank; k++) out->shape[k] = (uint32_t)shape[MLI_MAX_RANK - rank + k];
    out->rank = in->rank;
    out->el_params.fx.frac_bits = in->el_params.fx.frac_bits;
    out->el_type = in->el_type;
    return MLI_STATUS_OK;
}

/* The inputs' blocks from the axis on, interleaved: for each index before
 * the axis, every input's block in turn. */
mli_status MLI_CAT(mli_krn_concat_, KRN_SFX)(const mli_tensor **inputs, const mli_concat_cfg *cfg, mli_tensor *out) {
    mlipy_err_reset("mli_krn_concat_" MLI_STR(KRN_SFX));
    mli_status st = mli_chk_concat(inputs, cfg, out, KRN_DATA_EL);
    if (st != MLI_STATUS_OK) return st;
    const int n = cfg->tensors_num;
    const uint32_t axis = cfg->axis;
    const KRN_IO_T *src[MLI_CONCAT_MAX_TENSORS];
    uint64_t block[MLI_CONCAT_MAX_TENSORS];
    uint32_t total = 0;
    for (int t = 0; t < n; t++) {
        src[t] = (const KRN_IO_T *)inputs[t]->data;
        block[t] = mli_prv_count(inputs[t], axis);
        total += inputs[t]->shape[axis];
    }
    const uint64_t blocks = mli_prv_count(inputs[0], 0) / block[0];
    KRN_IO_T *y = (KRN_IO_T *)out->data;
    for (uint64_t i = 0; i < blocks; i++)
        for (int t = 0; t < n; t++) {
            memcpy(y, src[t], (size_t)block[t] * sizeof(KRN_IO_T));
            y += block[t];
            src[t] += block[t];
        }
    const mli_tensor *a = inputs[0];
    out->rank = a->rank;
    out->el_params.fx.frac_bits = a->el_params.fx.frac_bits;
    out->el_type = a->el_type;
    for (uint32_t i = 0; i < a->rank; i++) out->shape[i] = a->shape[i];
    out->shape[axis] = total;
    return MLI_STATUS_OK;
}

/* Zeros around each channel (chw) or around the image (hwc): the whole
 * output is cleared, then every input row copied into place. */
static mli_status MLI_CAT(padding2d_, KRN_SFX)(const mli_tensor *in, const mli_padding2d_cfg *cfg, mli_tensor *out,
                                              bool hwc) {
    mli_status st = mli_chk_padding2d(in, cfg, out, hwc, KRN_DATA_EL);
    if (st != MLI_STATUS_OK) return st;
    const size_t h = in->shape[hwc ? 0 : 1], w = in->shape[hwc ? 1 : 2], c = in->shape[hwc ? 2 : 0];
    const size_t ho = h + cfg->padding_top + cfg->padding_bottom, wo = w + cfg->padding_left + cfg->padding_right;
    const size_t maps = hwc ? 1 : c, row = hwc ? w * c : w, unit = hwc ? c : 1;
    const KRN_IO_T *x = (const KRN_IO_T *)in->data;
    KRN_IO_T *y = (KRN_IO_T *)out->data;
    memset(y, 0, ho * wo * c * sizeof(KRN_IO_T));
    for (size_t m = 0; m < maps; m++) {
        KRN_IO_T *dst = y + m * ho * wo + (cfg->padding_top * wo + cfg->padding_left) * unit;
        for (size_t r = 0; r < h; r++, x += row, dst += wo * unit) memcpy(dst, x, row * sizeof(KRN_IO_T));
    }
    out->rank = in->rank;
    out->el_params.fx.frac_bits = in->el_params.fx.frac_bits;
    out->el_type = in->el_type;
    out->shape[hwc ? 0 : 1] = (uint32_t)ho;
    out->shape[hwc ? 1 : 2] = (uint32_t)wo;
    out->shape[hwc ? 2 : 0] = (uint32_t)c;
    return MLI_STATUS_OK;
}

mli_status MLI_CAT(mli_krn_padding2d_chw_, KRN_SFX)(const mli_tensor *in, const mli_padding2d_cfg *cfg,
                                                    mli_tensor *out) {
    mlipy_err_reset("mli_krn_padding2d_chw_" MLI_STR(KRN_SFX));
    return MLI_CAT(padding2d_, KRN_SFX)(in, cfg, out, false);
}

mli_status MLI_CAT(mli_krn_padding2d_hwc_, KRN_SFX)(const mli_tensor *in, const mli_padding2d_cfg *cfg,
                                                    mli_tensor *out) {
    mlipy_err_reset("mli_krn_padding2d_hwc_" MLI_STR(KRN_SFX));
    return MLI_CAT(padding2d_, KRN_SFX)(in, cfg, out, true);
}

#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
