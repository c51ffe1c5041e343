/* Template body of one pooling family and kind (SPEC_MLI11_MORE 6):
 * POOL_FN (the dispatcher's name, e.g. mli_krn_maxpool_chw_fx8) and its
 * _generic and specialised variants from POOL_LIST, and POOL_DEBUG_FN.
 * Parameters: POOL_FN, POOL_DEBUG_FN, POOL_LIST (an X-macro list of
 * mli_krn_variants_more.h), POOL_MAX (1 max, 0 average), POOL_HWC (1 hwc,
 * 0 chw), KRN_IO_T, KRN_BITS (8 or 16), KRN_DATA_EL. */
#if !defined(POOL_FN) || !defined(POOL_DEBUG_FN) || !defined(POOL_LIST) || !defined(POOL_MAX) || \
    !defined(POOL_HWC) || !defined(KRN_IO_T) || !defined(KRN_BITS) || !defined(KRN_DATA_EL)
#error "define POOL_FN, POOL_DEBUG_FN, POOL_LIST, POOL_MAX, POOL_HWC, KRN_IO_T, KRN_BITS and KRN_DATA_EL first"
#endif

#define POOL_F(name) MLI_CAT(POOL_FN, name)
/* the j-th column of a window row: chw columns are adjacent (a loop the
 * compiler vectorises), hwc ones cs elements apart */
#if POOL_HWC
#define POOL_COL(j) ((j) * cs)
#else
#define POOL_COL(j) (j)
#endif

/* The value of one window of rows x cols elements, the first at s, rows
 * rs and columns cs elements apart. */
#if POOL_MAX
static inline KRN_IO_T POOL_F(_window)(const KRN_IO_T *s, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                                       const pool_avg *k) {
    KRN_IO_T m = s[0];
    (void)cs;
    (void)k;
    for (int64_t i = 0; i < rows; i++, s += rs)
        for (int64_t j = 0; j < cols; j++) m = s[POOL_COL(j)] > m ? s[POOL_COL(j)] : m;
    return m;
}
#else
/* The sum times the multiplier of the window's size, in the 40-bit
 * accumulator of MLI's loop (saturating after each MAC: chw rows add an odd
 * first element alone and then pairs, hwc adds one element at a time),
 * read out by the DSP rounding to KRN_BITS bits.  Below 512 elements no
 * partial sum can reach 2^39 and the plain sum is exact. */
static inline KRN_IO_T POOL_F(_window)(const KRN_IO_T *s, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                                       const pool_avg *k) {
    const int16_t mul = k->mul;
    const int shift = k->shift;
    int64_t acc = 0;
    (void)cs;
    if (rows * cols < 512) {
        int32_t sum = 0; /* at most 511 * 2^15 in magnitude */
        for (int64_t i = 0; i < rows; i++, s += rs)
            for (int64_t j = 0; j < cols; j++) sum += s[POOL_COL(j)];
        acc = (int64_t)sum * mul;
    } else {
        for (int64_t i = 0; i < rows; i++, s += rs) {
#if POOL_HWC
            for (int64_t j = 0; j < cols; j++) acc = mli_math_acc40_add(acc, (int64_t)s[POOL_COL(j)] * mul);
#else
            int64_t j = 0;
            if (cols & 1) acc = mli_math_acc40_add(acc, (int64_t)s[j++] * mul);
            for (; j < cols; j += 2) /* cols - j is even here */
                acc = mli_math_acc40_add(acc, ((int64_t)s[j] + s[j + 1]) * mul);
#endif
        }
    }
    return (KRN_IO_T)mli_math_asr_rnd_sat(acc, shift, KRN_BITS);
}
#endif

#if !POOL_HWC
enum { POOL_F(_block_n) = 64 };
/* one element into a window's maximum or sum */
MLIPY_ALWAYS_INLINE int32_t POOL_F(_fold)(int32_t a, int32_t v) { return POOL_MAX ? (v > a ? v : a) : a + v; }
/* Up to _block_n full windows of one chw output row, window j starting at
 * s + j * sw: their maxima, or for the average their sums (exact in int32
 * below 512 elements).  The window's elements outer and the positions inner:
 * a loop the compiler vectorises, built once per ISA path. */
MLIPY_ALWAYS_INLINE void POOL_F(_block_body)(const KRN_IO_T *s, int32_t *acc, int64_t n, int64_t sw, int64_t rows,
                                            int64_t cols, int64_t rs) {
    for (int64_t j = 0; j < n; j++) acc[j] = POOL_MAX ? s[j * sw] : 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t k = 0; k < cols; k++) {
            const KRN_IO_T *e = s + i * rs + k;
            if (sw == 1) /* adjacent windows: contiguous loads */
                for (int64_t j = 0; j < n; j++) acc[j] = POOL_F(_fold)(acc[j], e[j]);
            else
                for (int64_t j = 0; j < n; j++) acc[j] = POOL_F(_fold)(acc[j], e[j * sw]);
        }
}
MLIPY_MULTIVERSION_VOID(POOL_F(_block),
                        (const KRN_IO_T *s, int32_t *acc, int64_t n, int64_t sw, int64_t rows, int64_t cols,
                         int64_t rs),
                        (s, acc, n, sw, rows, cols, rs))

#if !POOL_MAX
/* The average's read-out of n sums: RND(sum * mul, shift) saturated to
 * KRN_BITS (mli_math_asr_rnd_sat for shift >= 0), written branch-free with
 * the rounding mode `up` read once, so that the compiler vectorises it. */
MLIPY_ALWAYS_INLINE void POOL_F(_avg_out_body)(const int32_t *acc, int64_t n, int16_t mul, int shift, int up,
                                              KRN_IO_T *o) {
    const int64_t lo = -((int64_t)1 << (KRN_BITS - 1)), hi = ((int64_t)1 << (KRN_BITS - 1)) - 1;
    const int64_t mask = shift > 0 ? ((int64_t)1 << shift) - 1 : 0, half = shift > 0 ? (int64_t)1 << (shift - 1) : 1;
    for (int64_t j = 0; j < n; j++) {
        const int64_t v = (int64_t)acc[j] * mul, q = v >> shift, rem = v & mask;
        int64_t r = q + (int64_t)((rem > half) | ((rem == half) & (up | (int)(q & 1))));
        r = r < lo ? lo : r;
        o[j] = (KRN_IO_T)(r > hi ? hi : r);
    }
}
MLIPY_MULTIVERSION_VOID(POOL_F(_avg_out), (const int32_t *acc, int64_t n, int16_t mul, int shift, int up,
                                           KRN_IO_T *o),
                        (acc, n, mul, shift, up, o))
#endif

/* A full area of one chw channel in blocks of a row's positions (where in
 * and out share no byte, reading a block's windows before writing its
 * outputs gives MLI's values). */
static void POOL_F(_area_rows)(const KRN_IO_T *x, KRN_IO_T *y, const pool_plan *p, const mli_prv_area *a,
                               int64_t ch) {
    int32_t acc[POOL_F(_block_n)];
    pool_avg k = {-1, 0, 0};
    for (int64_t r = a->row_beg; r < a->row_end; r++)
        for (int64_t c0 = a->clmn_beg; c0 < a->clmn_end; c0 += POOL_F(_block_n)) {
            const int64_t n = mli_prv_min64(POOL_F(_block_n), a->clmn_end - c0);
            const mli_prv_win w = mli_prv_window(&p->g, a->kind, r, c0);
            POOL_F(_block)(x + ch * p->in_chs + w.y * p->in_rs + w.x, acc, n, p->g.sw, w.rows, w.cols, p->in_rs);
            pool_avg_of(&k, w.rows * w.cols);
            KRN_IO_T *o = y + ch * p->out_chs + r * p->out_rs + c0; /* chw: positions 1 apart */
#if POOL_MAX
            for (int64_t j = 0; j < n; j++) o[j] = (KRN_IO_T)acc[j];
#else
            POOL_F(_avg_out)(acc, n, k.mul, k.shift, mlipy_rounding_up, o);
#endif
        }
}
#endif

/* One area for the channels [c0, c0 + lanes): lanes = 2 is MLI's two-lane
 * loop of the hwc kernels (both channels of a position written together). */
static void POOL_F(_area)(const KRN_IO_T *x, KRN_IO_T *y, const pool_plan *p, const mli_prv_area *a, int64_t c0,
                          int lanes) {
    pool_avg k = {-1, 0, 0};
    for (int64_t r = a->row_beg; r < a->row_end; r++)
        for (int64_t c = a->clmn_beg; c < a->clmn_end; c++) {
            const mli_prv_win w = mli_prv_window(&p->g, a->kind, r, c);
            pool_avg_of(&k, w.rows * w.cols);
            for (int l = 0; l < lanes; l++) {
                const int64_t ch = c0 + l;
                const KRN_IO_T *s = x + ch * p->in_chs + w.y * p->in_rs + w.x * p->in_cs;
                y[ch * p->out_chs + r * p->out_rs + c * p->out_cs] = POOL_F(_window)(s, w.rows, w.cols, p->in_rs,
                                                                                     p->in_cs, &k);
            }
        }
}

/* MLI's loop order (which decides the result where out's strides make
 * positions share memory): area by area; chw and the hwc average border
 * loop one channel at a time, the other hwc loops pairs of channels first
 * and then an odd last one. */
static void POOL_F(_compute)(const KRN_IO_T *x, KRN_IO_T *y, const pool_plan *p) {
    for (int i = 0; i < p->n_areas; i++) {
        const mli_prv_area *a = &p->areas[i];
        const bool pairs = POOL_HWC && (POOL_MAX || a->kind == MLI_WIN_FULL);
#if !POOL_HWC
        if (a->kind == MLI_WIN_FULL && p->apart && (POOL_MAX || p->g.kh * p->g.kw < 512)) {
            for (int64_t ch = 0; ch < p->ch; ch++) POOL_F(_area_rows)(x, y, p, a, ch);
            continue;
        }
#endif
        if (!pairs) {
            for (int64_t ch = 0; ch < p->ch; ch++) POOL_F(_area)(x, y, p, a, ch, 1);
        } else {
            int64_t ch = 0;
            for (; ch + 1 < p->ch; ch += 2) POOL_F(_area)(x, y, p, a, ch, 2);
            if (ch < p->ch) POOL_F(_area)(x, y, p, a, ch, 1);
        }
    }
}

static mli_status POOL_F(_run)(const mli_tensor *in, const mli_pool_cfg *cfg, mli_tensor *out,
                               const mli_prv_variant *v) {
    /* avepool_hwc computes its output check and returns OK anyway */
    mli_status st = mli_chk_pool(in, cfg, out, POOL_HWC, POOL_HWC == 0 || POOL_MAX == 1, KRN_DATA_EL);
    if (st != MLI_STATUS_OK) return st;
    pool_plan p;
    st = pool_plan_make(in, cfg, out, v, POOL_HWC, &p);
    if (st != MLI_STATUS_OK) return st;
    pool_set_out(in, out, &p, POOL_HWC);
    POOL_F(_compute)((const KRN_IO_T *)in->data, (KRN_IO_T *)out->data, &p);
    return MLI_STATUS_OK;
}

#define POOL_ROW(sfx, ...) MLI_PRV_VARIANT_ROW(MLI_STR(POOL_FN), sfx, __VA_ARGS__)
static const mli_prv_variant POOL_F(_table)[] = {POOL_LIST(POOL_ROW)};
#define POOL_INDEX(sfx, ...) POOL_F(_i_##sfx),
enum { POOL_LIST(POOL_INDEX) POOL_F(_n) };

#define POOL_ENTRY(sfx, ...)                                                                                \
    mli_status POOL_F(_##sfx)(const mli_tensor *in, const mli_pool_cfg *cfg, mli_tensor *out) {             \
        mlipy_err_reset(MLI_STR(POOL_FN) "_" #sfx);                                                         \
        return POOL_F(_run)(in, cfg, out, &POOL_F(_table)[POOL_F(_i_##sfx)]);                               \
    }
POOL_LIST(POOL_ENTRY)

/* MLI's dispatcher reads the cfg before any check. */
static const mli_prv_variant *POOL_F(_pick)(const mli_pool_cfg *cfg) {
    return mli_prv_variant_pick(POOL_F(_table), POOL_F(_n), cfg->kernel_width, cfg->kernel_height,
                                cfg->stride_width, cfg->stride_height, cfg->padding_top, cfg->padding_bottom,
                                cfg->padding_left, cfg->padding_right);
}

mli_status POOL_FN(const mli_tensor *in, const mli_pool_cfg *cfg, mli_tensor *out) {
    mlipy_err_reset(MLI_STR(POOL_FN));
    if (!cfg) return mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL (MLI's dispatcher reads it first)");
    return POOL_F(_run)(in, cfg, out, POOL_F(_pick)(cfg));
}

char *POOL_DEBUG_FN(const mli_tensor *in, const mli_pool_cfg *cfg, mli_tensor *out) {
    (void)in;
    (void)out;
    mlipy_err_reset(MLI_STR(POOL_DEBUG_FN));
    if (!cfg) {
        mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL (MLI's dispatcher reads it first)");
        return NULL;
    }
    return (char *)POOL_F(_pick)(cfg)->name;
}

#undef POOL_COL
#undef POOL_ROW
#undef POOL_INDEX
#undef POOL_ENTRY
#undef POOL_F
#undef POOL_FN
#undef POOL_DEBUG_FN
#undef POOL_LIST
#undef POOL_MAX
#undef POOL_HWC
#undef KRN_IO_T
#undef KRN_BITS
#undef KRN_DATA_EL
