/* Template body of mli_krn_eltwise_{add,sub,mul,max,min}_<KRN_SFX>
 * (SPEC.md section 8).  Parameters: KRN_SFX, KRN_IO_T, KRN_BITS, KRN_DATA_EL. */
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_BITS) || !defined(KRN_DATA_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_BITS and KRN_DATA_EL first"
#endif

/* A rank-0 operand keeps its value in the data pointer field itself. */
static inline const KRN_IO_T *MLI_CAT(operand_, KRN_SFX)(const mli_tensor *t, KRN_IO_T *scalar) {
    if (t->rank != 0) return (const KRN_IO_T *)t->data;
    *scalar = (KRN_IO_T)(intptr_t)t->data;
    return scalar;
}

static inline KRN_IO_T MLI_CAT(op_, KRN_SFX)(mli_eltwise_op op, int64_t a, int64_t c, int mul_shift) {
    switch (op) {
    case MLI_ELTWISE_ADD: return (KRN_IO_T)mli_math_sat(a + c, KRN_BITS);
    case MLI_ELTWISE_SUB: return (KRN_IO_T)mli_math_sat(a - c, KRN_BITS);
    case MLI_ELTWISE_MAX: return (KRN_IO_T)(a > c ? a : c);
    case MLI_ELTWISE_MIN: return (KRN_IO_T)(a < c ? a : c);
    default:
#if KRN_BITS == 16
        return mli_math_read16(a * c, mul_shift); /* ACC family */
#else
        return mli_math_sat8(mli_math_asr32(a * c, mul_shift)); /* SHIFT family */
#endif
    }
}

static mli_status MLI_CAT(eltwise_, KRN_SFX)(mli_eltwise_op op, const mli_tensor *in1,
                                            const mli_tensor *in2, mli_tensor *out) {
    mli_status st = mli_chk_eltwise(in1, in2, out, op != MLI_ELTWISE_MUL, KRN_DATA_EL);
    if (st != MLI_STATUS_OK) return st;
    KRN_IO_T s1, s2;
    const KRN_IO_T *a = MLI_CAT(operand_, KRN_SFX)(in1, &s1), *c = MLI_CAT(operand_, KRN_SFX)(in2, &s2);
    const long n1 = in1->rank ? (long)mli_prv_count(in1, 0) : 1;
    const long n2 = in2->rank ? (long)mli_prv_count(in2, 0) : 1;
    const int shift = in1->el_params.fx.frac_bits + in2->el_params.fx.frac_bits - out->el_params.fx.frac_bits;
    KRN_IO_T *y = (KRN_IO_T *)out->data;
    /* A single-element operand is broadcast; operand order is kept.  MLI
     * reads it once, before the loop: an out over it changes nothing after. */
    if (n2 == 1) {
        const KRN_IO_T c0 = c[0];
        for (long i = 0; i < n1; i++) y[i] = MLI_CAT(op_, KRN_SFX)(op, a[i], c0, shift);
    } else if (n1 == 1) {
        const KRN_IO_T a0 = a[0];
        for (long i = 0; i < n2; i++) y[i] = MLI_CAT(op_, KRN_SFX)(op, a0, c[i], shift);
    } else {
        for (long i = 0; i < n1; i++) y[i] = MLI_CAT(op_, KRN_SFX)(op, a[i], c[i], shift);
    }
    const mli_tensor *src = n1 > n2 ? in1 : in2;
    out->rank = src->rank;
    for (uint32_t i = 0; i < src->rank && i < MLI_MAX_RANK; i++) out->shape[i] = src->shape[i]; /* SPEC 12.3 */
    if (op != MLI_ELTWISE_MUL) out->el_params.fx.frac_bits = in1->el_params.fx.frac_bits;
    out->el_type = in1->el_type;
    return MLI_STATUS_OK;
}

#define MLI_ELTWISE_ENTRY(name, OP)                                                              \
    mli_status MLI_CAT(MLI_CAT(mli_krn_eltwise_##name, _), KRN_SFX)(const mli_tensor *in1,       \
                                                                   const mli_tensor *in2,       \
                                                                   mli_tensor *out) {           \
        mlipy_err_reset("mli_krn_eltwise_" #name "_" MLI_STR(KRN_SFX));                          \
        return MLI_CAT(eltwise_, KRN_SFX)(OP, in1, in2, out);                                    \
    }
MLI_ELTWISE_ENTRY(add, MLI_ELTWISE_ADD)
MLI_ELTWISE_ENTRY(sub, MLI_ELTWISE_SUB)
MLI_ELTWISE_ENTRY(mul, MLI_ELTWISE_MUL)
MLI_ELTWISE_ENTRY(max, MLI_ELTWISE_MAX)
MLI_ELTWISE_ENTRY(min, MLI_ELTWISE_MIN)
#undef MLI_ELTWISE_ENTRY

#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
