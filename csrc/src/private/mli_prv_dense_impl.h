/* Template body of the dense core; see mli_prv_dense.c for the parameters:
 * DENSE_SFX (name suffix), DENSE_IO_T, DENSE_W_T, DENSE_ACC40 (1: fx16). */
#if !defined(DENSE_SFX) || !defined(DENSE_IO_T) || !defined(DENSE_W_T) || !defined(DENSE_ACC40)
#error "define DENSE_SFX, DENSE_IO_T, DENSE_W_T and DENSE_ACC40 before including this header"
#endif

/* Exact dot product; |sum| < 2^62 for any length that fits in memory. */
static inline int64_t MLI_CAT(dot_, DENSE_SFX)(const DENSE_IO_T *a, const DENSE_W_T *w, int n) {
    int64_t acc = 0;
    for (int j = 0; j < n; j++) acc += (int32_t)a[j] * (int32_t)w[j];
    return acc;
}

void MLI_CAT(mli_prv_dense_, DENSE_SFX)(const DENSE_IO_T *x, int N, const DENSE_IO_T *h, int S,
                                        const DENSE_W_T *W, long row_stride, const DENSE_W_T *b,
                                        int K, mli_dense_shifts sh, DENSE_IO_T *y) {
    for (int k = 0; k < K; k++) {
        const DENSE_W_T *row = W + (long)k * row_stride;
        int64_t acc;
#if DENSE_ACC40
        acc = sh.bias_shift >= 0 ? mli_math_sat_shl(b[k], sh.bias_shift, 40)
                                 : mli_math_floor_shr(b[k], -sh.bias_shift);
        acc = mli_math_sat40(acc + MLI_CAT(dot_, DENSE_SFX)(x, row, N));
        if (S > 0) {
            acc = mli_math_acc40_shift(acc, sh.in_to_state); /* floor, no rounding */
            acc = mli_math_sat40(acc + MLI_CAT(dot_, DENSE_SFX)(h, row + N, S));
        }
        y[k] = mli_math_read16(acc, sh.out_shift);
#else
        acc = mli_math_asr32(b[k], -sh.bias_shift);
        acc = mli_math_sat32(acc + MLI_CAT(dot_, DENSE_SFX)(x, row, N));
        if (S > 0) {
            acc = mli_math_asr32(acc, sh.in_to_state); /* rounding */
            acc = mli_math_sat32(acc + MLI_CAT(dot_, DENSE_SFX)(h, row + N, S));
        }
        y[k] = (DENSE_IO_T)mli_math_sat(mli_math_asr32(acc, sh.out_shift), 8 * (int)sizeof(DENSE_IO_T));
#endif
    }
}

#undef DENSE_SFX
#undef DENSE_IO_T
#undef DENSE_W_T
#undef DENSE_ACC40
