/* Template body of the dense core; see mli_prv_dense.c for the parameters:
 * DENSE_SFX (name suffix), DENSE_IO_T, DENSE_W_T, DENSE_ACC40 (1: fx16). */
#if !defined(DENSE_SFX) || !defined(DENSE_IO_T) || !defined(DENSE_W_T) || !defined(DENSE_ACC40) || \
    !defined(DENSE_W_BITS)
#error "define DENSE_SFX, DENSE_IO_T, DENSE_W_T, DENSE_W_BITS and DENSE_ACC40 before including this header"
#endif

/* Packed weights keep their width: int8 weights stream half the bytes. */
#if DENSE_W_BITS == 8
#define DENSE_PK_T int8_t
#define DENSE_DIRECT mli_prv_dot_chunked8
#define DENSE_DIRECT_MULTI mli_prv_dot_chunked_multi8
#else
#define DENSE_PK_T int16_t
#define DENSE_DIRECT mli_prv_dot_chunked
#define DENSE_DIRECT_MULTI mli_prv_dot_chunked_multi
#endif

/* Exact dot product; |sum| < 2^62 for any length that fits in memory. */
static inline int64_t MLI_CAT(dot_, DENSE_SFX)(const DENSE_IO_T *a, const DENSE_W_T *w, int n) {
    int64_t acc = 0;
    for (int j = 0; j < n; j++) acc += (int32_t)a[j] * (int32_t)w[j];
    return acc;
}

/* The bias term of the accumulator: b << bias_shift in the accumulator's width. */
static inline int64_t MLI_CAT(bias_term_, DENSE_SFX)(int64_t bias, mli_dense_shifts sh) {
#if DENSE_ACC40
    return sh.bias_shift >= 0 ? mli_math_sat_shl(bias, sh.bias_shift, 40) : mli_math_floor_shr(bias, -sh.bias_shift);
#else
    return mli_math_asr32(bias, -sh.bias_shift);
#endif
}

/* The accumulator after the input part (`a`, not yet clamped to its width)
 * rescaled for the state part: 40 bits with a floor shift (fx16), or the
 * 32-bit register with a rounding shift (fx8, fx8w16d).  Monotone in `a`. */
static inline int64_t MLI_CAT(state_start_, DENSE_SFX)(int64_t a, mli_dense_shifts sh) {
#if DENSE_ACC40
    return mli_math_acc40_shift(mli_math_sat40(a), sh.in_to_state); /* floor, no rounding */
#else
    return mli_math_asr32(mli_math_sat32(a), sh.in_to_state); /* rounding */
#endif
}

/* One output from the bias term and the exact sums of the two phases: the
 * accumulator model of SPEC.md section 4 with one clamp per part. */
static inline DENSE_IO_T MLI_CAT(dense_out_, DENSE_SFX)(int64_t bt, int64_t sum_in, int64_t sum_st, int S,
                                                       mli_dense_shifts sh) {
#if DENSE_ACC40
    const int64_t acc = S > 0 ? mli_math_sat40(MLI_CAT(state_start_, DENSE_SFX)(bt + sum_in, sh) + sum_st)
                              : mli_math_sat40(bt + sum_in);
    return mli_math_read16(acc, sh.out_shift);
#else
    const int64_t acc = S > 0 ? mli_math_sat32(MLI_CAT(state_start_, DENSE_SFX)(bt + sum_in, sh) + sum_st)
                              : mli_math_sat32(bt + sum_in);
    return (DENSE_IO_T)mli_math_sat(mli_math_asr32(acc, sh.out_shift), 8 * (int)sizeof(DENSE_IO_T));
#endif
}

/* ---- MLI's own order, for sums that may reach the 40-bit limit ----------
 * The fast paths add a part's products exactly and clamp once.  MLI clamps
 * the 40-bit accumulator after every MAC instruction (SPEC 2.3, 4), so once
 * a partial sum can reach +-2^39 the order of the steps decides the result.
 * Such rows are recomputed here step by step, in MLI's loop shape. */

/* Largest |element| of the data and of the weights. */
#define DENSE_IO_MAXABS ((int64_t)1 << (8 * sizeof(DENSE_IO_T) - 1))
#define DENSE_W_MAXABS ((int64_t)1 << (8 * sizeof(DENSE_W_T) - 1))

/* One part (input or state) added to A step by step: with `singles` every
 * element is a step, else the first L mod 4 elements one by one, then pairs
 * (a dual MAC adds its two products to each other first). */
static int64_t MLI_CAT(mli_part_, DENSE_SFX)(int64_t a, const DENSE_IO_T *v, const DENSE_W_T *w, int L, int singles) {
    const int first = singles ? L : L % 4;
    for (int j = 0; j < first; j++) a = mli_math_sat40(a + (int64_t)v[j] * w[j]);
    for (int j = first; j + 1 < L; j += 2)
        a = mli_math_sat40(a + ((int64_t)v[j] * w[j] + (int64_t)v[j + 1] * w[j + 1]));
    return a;
}

/* One output row as MLI computes it (SPEC 4); FC has S == 0. */
static DENSE_IO_T MLI_CAT(mli_row_, DENSE_SFX)(const DENSE_IO_T *x, int N, const DENSE_IO_T *h, int S,
                                              const DENSE_W_T *row, int64_t bias, mli_dense_shifts sh) {
    const int singles = N < 8 && S < 8;
    int64_t a = MLI_CAT(bias_term_, DENSE_SFX)(bias, sh);
    a = MLI_CAT(mli_part_, DENSE_SFX)(a, x, row, N, singles);
    if (S > 0) a = MLI_CAT(mli_part_, DENSE_SFX)(MLI_CAT(state_start_, DENSE_SFX)(a, sh), h, row + N, S, singles);
#if DENSE_ACC40
    return mli_math_read16(a, sh.out_shift);
#else
    /* read from the 32-bit register the last MAC returned into */
    return (DENSE_IO_T)mli_math_sat(mli_math_asr32(mli_math_sat32(a), sh.out_shift), 8 * (int)sizeof(DENSE_IO_T));
#endif
}

static inline int64_t MLI_CAT(maxabs_, DENSE_SFX)(const DENSE_IO_T *v, int n) {
    int32_t lo = 0, hi = 0;
    for (int j = 0; j < n; j++) {
        lo = v[j] < lo ? v[j] : lo;
        hi = v[j] > hi ? v[j] : hi;
    }
    return -(int64_t)lo > hi ? -(int64_t)lo : hi;
}

/* 1 when no partial sum of a row can reach the 40-bit limit, so the exact
 * sums with one clamp per part give MLI's result: |bias term| plus the
 * bound `c_in` on sum |x_j w_j| stays below 2^39, and so does the state
 * part's start value plus its bound `c_st`. */
static inline int MLI_CAT(unclamped_, DENSE_SFX)(int64_t bt, int64_t s_in, int64_t c_in, int64_t c_st, int S,
                                                mli_dense_shifts sh) {
    const int64_t lim = (int64_t)1 << 39;
    if ((bt < 0 ? -bt : bt) + c_in >= lim) return 0;
    if (S <= 0) return 1;
    const int64_t a = MLI_CAT(state_start_, DENSE_SFX)(bt + s_in, sh);
    return (a < 0 ? -a : a) + c_st < lim;
}

void MLI_CAT(mli_prv_dense_, DENSE_SFX)(const DENSE_IO_T *x, int N, const DENSE_IO_T *h, int S,
                                        const DENSE_W_T *W, long row_stride, const DENSE_W_T *b,
                                        int K, mli_dense_shifts sh, DENSE_IO_T *y) {
    /* |x_j w_j| summed over a part is at most max|x| * L * max|w| (< 2^62) */
    const int64_t c_in = MLI_CAT(maxabs_, DENSE_SFX)(x, N) * N * DENSE_W_MAXABS;
    /* a state that this call overwrites as it goes (SPEC 12.3) is bounded by the type */
    const int h_moves = S > 0 && (uintptr_t)h < (uintptr_t)(y + K) && (uintptr_t)y < (uintptr_t)(h + S);
    const int64_t c_st = S <= 0 ? 0 : (h_moves ? DENSE_IO_MAXABS : MLI_CAT(maxabs_, DENSE_SFX)(h, S)) * S * DENSE_W_MAXABS;
    for (int k = 0; k < K; k++) {
        const DENSE_W_T *row = W + (long)k * row_stride;
        const int64_t s_in = MLI_CAT(dot_, DENSE_SFX)(x, row, N);
        const int64_t s_st = S > 0 ? MLI_CAT(dot_, DENSE_SFX)(h, row + N, S) : 0;
        const int64_t bt = MLI_CAT(bias_term_, DENSE_SFX)(b[k], sh);
        if (MLI_CAT(unclamped_, DENSE_SFX)(bt, s_in, c_in, c_st, S, sh))
            y[k] = MLI_CAT(dense_out_, DENSE_SFX)(bt, s_in, s_st, S, sh);
        else
            y[k] = MLI_CAT(mli_row_, DENSE_SFX)(x, N, h, S, row, b[k], sh);
    }
}

/* Pack columns [c0, c0+n) of every row into the group/pair layout:
 * rows are read in order, each element written once. */
static void MLI_CAT(pack_, DENSE_SFX)(const DENSE_W_T *W, long row_stride, int K, int c0, int n, DENSE_PK_T *dst,
                                     int32_t *chunks) {
    const int pairs = (n + 1) / 2, groups = (K + MLI_DOT_GROUP - 1) / MLI_DOT_GROUP;
#if DENSE_W_BITS == 8
    const mli_pack8_fn fast = mli_prv_pack8();
    if (chunks) mli_prv_chunks_fixed8(groups, pairs, chunks);
    if (fast) { /* the same layout, 16x16 blocks transposed in registers */
        fast((const int8_t *)W, row_stride, K, c0, n, dst);
        return;
    }
#else
    const mli_pack_fn fast = mli_prv_pack16();
    if (fast) {
        fast((const int16_t *)W, row_stride, K, c0, n, dst, chunks);
        return;
    }
#endif
    const size_t group_len = (size_t)pairs * 2 * MLI_DOT_GROUP;
    if (K % MLI_DOT_GROUP) /* rows of the last group beyond K stay zero */
        memset(dst + (size_t)(groups - 1) * group_len, 0, group_len * sizeof(DENSE_PK_T));
    for (int k = 0; k < K; k++) {
        const DENSE_W_T *row = W + (long)k * row_stride + c0;
        DENSE_PK_T *d = dst + (size_t)(k / MLI_DOT_GROUP) * group_len + 2 * (k % MLI_DOT_GROUP);
        for (int p = 0; p < n / 2; p++) {
            d[(size_t)p * 2 * MLI_DOT_GROUP] = row[2 * p];
            d[(size_t)p * 2 * MLI_DOT_GROUP + 1] = row[2 * p + 1];
        }
        if (n % 2) {
            d[(size_t)(pairs - 1) * 2 * MLI_DOT_GROUP] = row[n - 1];
            d[(size_t)(pairs - 1) * 2 * MLI_DOT_GROUP + 1] = 0;
        }
    }
#if DENSE_W_BITS == 16
    if (chunks) mli_prv_chunks16()(dst, groups, pairs, chunks);
#endif
}


/* The same for all rows, branch-free, for 0 <= bias_shift <= 40 (|b| < 2^15,
 * so b * 2^shift stays inside int64 before the saturation). */
MLIPY_ALWAYS_INLINE int MLI_CAT(MLI_CAT(bias_terms_, DENSE_SFX), _body)(const DENSE_W_T *b, int K, int shift,
                                                                       int64_t *out) {
#if DENSE_ACC40
    const int64_t lo = -((int64_t)1 << 39), hi = ((int64_t)1 << 39) - 1;
#else
    const int64_t lo = INT32_MIN, hi = INT32_MAX;
#endif
    for (int k = 0; k < K; k++) {
        const int64_t v = (int64_t)b[k] * ((int64_t)1 << shift);
        out[k] = v < lo ? lo : (v > hi ? hi : v);
    }
    return 0;
}
MLIPY_MULTIVERSION(int, MLI_CAT(bias_terms_, DENSE_SFX), (const DENSE_W_T *b, int K, int shift, int64_t *out),
                   (b, K, shift, out))

/* A bound on sum |w| over one part of any row of group g: the direct form's
 * chunks each hold at most MLI_DOT_CHUNK_MAX_ABS per row (fixed 8-bit
 * chunks: 2 * 128 per pair), else the part's length times the largest |w|. */
static int64_t MLI_CAT(l1_bound_, DENSE_SFX)(int direct, const int32_t *chunks, int g, int pairs, int L) {
    if (!direct) return (int64_t)L * DENSE_W_MAXABS;
#if DENSE_W_BITS == 8
    (void)chunks;
    (void)g;
    (void)pairs;
    return (int64_t)L * DENSE_W_MAXABS;
#else
    const int64_t n = chunks[(size_t)g * ((size_t)pairs + 1)];
    const int64_t crude = (int64_t)L * DENSE_W_MAXABS, by_chunks = n * MLI_DOT_CHUNK_MAX_ABS;
    return by_chunks < crude ? by_chunks : crude;
#endif
}

/* unclamped_ for every row whose |bias term| <= bt_max and for every data
 * (|sum over a part| <= c_in, c_st): the state part's start is monotone in
 * the input part's sum, so the two extremes settle it. */
static int MLI_CAT(never_clamped_, DENSE_SFX)(int64_t bt_max, int64_t c_in, int64_t c_st, int S, mli_dense_shifts sh) {
    return MLI_CAT(unclamped_, DENSE_SFX)(bt_max, c_in, c_in, c_st, S, sh) &&
           MLI_CAT(unclamped_, DENSE_SFX)(-bt_max, -c_in, c_in, c_st, S, sh);
}

/* int16 data times int16 weights: the high/low byte split where the weights
 * do not allow the direct form over chunks. */
#define DENSE_SPLIT (sizeof(DENSE_IO_T) == 2 && sizeof(DENSE_W_T) == 2)

/* The plan's bias terms and the bounds that say whether a partial sum can
 * reach the accumulator's limit with any data (bias_top, l1_in, l1_st,
 * unclamped). */
static void MLI_CAT(plan_bias_, DENSE_SFX)(mli_dense_plan *plan, int K, int N, int S, const DENSE_W_T *b,
                                          mli_dense_shifts sh) {
    if (sh.bias_shift >= 0 && sh.bias_shift <= 40) {
        MLI_CAT(bias_terms_, DENSE_SFX)(b, K, sh.bias_shift, plan->bias_term);
    } else {
        for (int k = 0; k < K; k++) plan->bias_term[k] = MLI_CAT(bias_term_, DENSE_SFX)(b[k], sh);
    }
    /* Whether a partial sum can reach the 40-bit limit with any data: the
     * largest |bias term| and, per group of rows, bounds on sum |w| */
    int64_t top = 0;
    if (K > 0) { /* a bias term is monotone in the bias: the largest |term| is at its smallest or largest bias */
        int bmin = b[0], bmax = b[0];
        for (int k = 1; k < K; k++) {
            bmin = b[k] < bmin ? b[k] : bmin;
            bmax = b[k] > bmax ? b[k] : bmax;
        }
        int64_t tlo = MLI_CAT(bias_term_, DENSE_SFX)(bmin, sh), thi = MLI_CAT(bias_term_, DENSE_SFX)(bmax, sh);
        tlo = tlo < 0 ? -tlo : tlo;
        thi = thi < 0 ? -thi : thi;
        top = tlo > thi ? tlo : thi;
    }
    plan->bias_top = top;
    plan->unclamped = 1;
    for (int g = 0; g < plan->groups; g++) {
        plan->l1_in[g] = MLI_CAT(l1_bound_, DENSE_SFX)(plan->direct_in, plan->chunk_in, g, plan->n_pairs, N);
        plan->l1_st[g] = S > 0 ? MLI_CAT(l1_bound_, DENSE_SFX)(plan->direct_st, plan->chunk_st, g, plan->s_pairs, S) : 0;
        plan->unclamped &= MLI_CAT(never_clamped_, DENSE_SFX)(top, DENSE_IO_MAXABS * plan->l1_in[g],
                                                              DENSE_IO_MAXABS * plan->l1_st[g], S, sh);
    }
}

/* Which SIMD form: row by row on W as given when packing would not pay
 * for itself (long rows, few steps), else packed once per call (or once for
 * all calls of a caller that reuses its workspace). */
void MLI_CAT(mli_prv_dense_plan_, DENSE_SFX)(mli_dense_plan *plan, const DENSE_W_T *W, long row_stride, int K,
                                             int N, int S, const DENSE_W_T *b, mli_dense_shifts sh, long steps) {
    plan->packed = 0;
    plan->rows = 0;
    plan->hoist = 0;
    int kept = 0; /* the workspace's packing was reused */
    if (!mli_prv_workspace_take(plan, K, N, S)) return;
    const int have_rows = sizeof(DENSE_W_T) == 1 ? mli_prv_dot_rows8() != NULL : mli_prv_dot_rows16() != NULL;
    /* rows cost ~15 extra cycles per row and step; packing ~1/4 cycle per weight once */
    if (have_rows && !mli_prv_workspace_reused() && (long)(N + S) > 80 * steps) {
        plan->rows = 1; /* zero padding for the vector loads past N and S */
        memset(plan->r_in, 0, ((size_t)N / MLI_DOT_ROW_PAD + 1) * MLI_DOT_ROW_PAD * sizeof(int16_t));
        memset(plan->rlo_in, 0, ((size_t)N / MLI_DOT_ROW_PAD + 1) * MLI_DOT_ROW_PAD * sizeof(int16_t));
        memset(plan->r_st, 0, ((size_t)S / MLI_DOT_ROW_PAD + 1) * MLI_DOT_ROW_PAD * sizeof(int16_t));
        memset(plan->rlo_st, 0, ((size_t)S / MLI_DOT_ROW_PAD + 1) * MLI_DOT_ROW_PAD * sizeof(int16_t));
    } else if (!mli_prv_workspace_packed(W, row_stride, K, N, S, (int)sizeof(DENSE_W_T))) {
        /* and the chunk tables, kept in the workspace with the packed weights */
        MLI_CAT(pack_, DENSE_SFX)(W, row_stride, K, 0, N, (DENSE_PK_T *)plan->w_in, plan->chunk_in);
        if (S > 0) MLI_CAT(pack_, DENSE_SFX)(W, row_stride, K, N, S, (DENSE_PK_T *)plan->w_st, plan->chunk_st);
    } else {
        kept = 1;
    }
    /* 8-bit weights always allow the direct form (a pair's |w| sum <= 256) */
    plan->direct_in = !plan->rows && plan->chunk_in[0] >= 0;
    plan->direct_st = !plan->rows && S > 0 && plan->chunk_st[0] >= 0;
    plan->hoist = plan->direct_in && steps > 1;
    mli_dense_plan_memo *memo = plan->memo;
    const size_t bias_bytes = (size_t)K * sizeof(DENSE_W_T);
    if (kept && memo->have && memo->sh.bias_shift == sh.bias_shift && memo->sh.in_to_state == sh.in_to_state &&
        memo->sh.out_shift == sh.out_shift && memcmp(plan->b_copy, b, bias_bytes) == 0) {
        plan->bias_top = memo->bias_top; /* bias_term, l1_in and l1_st are still in the workspace */
        plan->unclamped = memo->unclamped;
    } else {
        memo->have = 0;
        MLI_CAT(plan_bias_, DENSE_SFX)(plan, K, N, S, b, sh);
        if (!plan->rows) { /* the packing's: kept for the next call that reuses it */
            memcpy(plan->b_copy, b, bias_bytes);
            memo->sh = sh;
            memo->bias_top = plan->bias_top;
            memo->unclamped = plan->unclamped;
            memo->have = 1;
        }
    }
    /* the branch-free read-out handles right shifts; other shifts use dense_out */
    plan->fast_epilogue = sh.out_shift > 0 && sh.out_shift < 62 && (S == 0 || (sh.in_to_state >= -23 && sh.in_to_state < 62));
    plan->packed = 1;
}

/* The vector as int32 pairs; with `split` (int16 data times int16 weights
 * the direct form cannot take) as its high bytes (x >> 8) and low bytes
 * (x & 255) so that every int32 lane of the dot product stays exact
 * (mli_prv_dotprod.h). */
static inline uint32_t MLI_CAT(pair_, DENSE_SFX)(int32_t a, int32_t c) {
    return (uint32_t)(uint16_t)a | ((uint32_t)(uint16_t)c << 16);
}
static void MLI_CAT(pairs_, DENSE_SFX)(const DENSE_IO_T *v, int n, int split, int32_t *hi, int32_t *lo) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (sizeof(DENSE_IO_T) == 2 && !split) { /* int16 pairs in memory already are that layout */
        memcpy(hi, v, (size_t)(n / 2) * sizeof(int32_t));
        if (n % 2) hi[n / 2] = (int32_t)MLI_CAT(pair_, DENSE_SFX)(v[n - 1], 0);
        return;
    }
    if (sizeof(DENSE_IO_T) == 1 && !split) { /* int8 data widened into that layout (a loop the compiler vectorizes) */
        int16_t *d = (int16_t *)(void *)hi;
        for (int i = 0; i < n; i++) d[i] = v[i];
        if (n % 2) d[n] = 0;
        return;
    }
#endif
    for (int p = 0; p < (n + 1) / 2; p++) {
        const int32_t a = v[2 * p], c = 2 * p + 1 < n ? v[2 * p + 1] : 0;
        if (split) {
            hi[p] = (int32_t)MLI_CAT(pair_, DENSE_SFX)(a >> 8, c >> 8);
            lo[p] = (int32_t)MLI_CAT(pair_, DENSE_SFX)(a & 255, c & 255);
        } else {
            hi[p] = (int32_t)MLI_CAT(pair_, DENSE_SFX)(a, c);
        }
    }
}

/* Branch-free read-out of K rows (right shifts only), one version per ISA:
 * the same operations as dense_out, with the rounding written as
 * (a + 2^(n-1) - 1 + (up | bit n of a)) >> n. */
MLIPY_ALWAYS_INLINE int MLI_CAT(MLI_CAT(epilogue_, DENSE_SFX), _body)(const int64_t *bt, const int64_t *si, const int64_t *ss,
                                                          int K, int S, int its, int os, int64_t up,
                                                          DENSE_IO_T *y) {
#if DENSE_ACC40
    const int64_t lo = -((int64_t)1 << 39), hi = ((int64_t)1 << 39) - 1;
#else
    const int64_t lo = INT32_MIN, hi = INT32_MAX;
#endif
    const int64_t omax = (int64_t)((1u << (8 * sizeof(DENSE_IO_T) - 1)) - 1), omin = -omax - 1;
    const int64_t obias = ((int64_t)1 << (os - 1)) - 1;
#if !DENSE_ACC40
    const int64_t ibias = its > 0 ? ((int64_t)1 << (its - 1)) - 1 : 0;
#endif
    for (int k = 0; k < K; k++) {
        int64_t a = bt[k] + si[k];
        a = a < lo ? lo : (a > hi ? hi : a);
        if (S > 0) {
            if (its < 0) { /* saturating left shift; |a| < 2^39 and its >= -23 keep it inside int64 */
                a = (int64_t)((uint64_t)a << -its);
                a = a < lo ? lo : (a > hi ? hi : a);
            } else {
#if DENSE_ACC40
                a >>= its; /* floor */
#else
                if (its > 0) a = (a + ibias + (up | ((a >> its) & 1))) >> its;
#endif
            }
            a += ss[k];
            a = a < lo ? lo : (a > hi ? hi : a);
        }
        int64_t q = (a + obias + (up | ((a >> os) & 1))) >> os;
        q = q < omin ? omin : q;
        y[k] = (DENSE_IO_T)(q > omax ? omax : q);
    }
    return 0;
}
MLIPY_MULTIVERSION(int, MLI_CAT(epilogue_, DENSE_SFX),
                   (const int64_t *bt, const int64_t *si, const int64_t *ss, int K, int S, int its, int os,
                    int64_t up, DENSE_IO_T *y),
                   (bt, si, ss, K, S, its, os, up, y))

static void MLI_CAT(rows_step_, DENSE_SFX)(const mli_dense_plan *plan, const DENSE_IO_T *x, int N, const DENSE_IO_T *h,
                                          int S, const DENSE_W_T *W, long row_stride, int K);
static void MLI_CAT(packed_step_, DENSE_SFX)(const mli_dense_plan *plan, const DENSE_IO_T *x, int N,
                                            const DENSE_IO_T *h, int S, int shift);

/* The input sums of `count` (<= MLI_DENSE_HOIST_STEPS) consecutive steps
 * into plan->s_all (plan->hoist only). */
void MLI_CAT(mli_prv_dense_hoist_, DENSE_SFX)(const mli_dense_plan *plan, const DENSE_IO_T *x, int N, int count) {
    const long stride = plan->n_pairs;
    for (int t = 0; t < count; t++)
        MLI_CAT(pairs_, DENSE_SFX)(x + (long)t * N, N, 0, plan->x_all + t * stride, NULL);
#if DENSE_W_BITS == 16 && defined(MLIPY_X86_TARGETS)
    /* where this block's max|x| times the largest sum of |w| of a row (kept
     * with the packing) is below 2^31, whole rows are one chunk */
    const mli_dot_multi16_whole_fn whole = mli_prv_dot_multi16_whole();
    if (whole) {
        int64_t l1i, l1s;
        mli_rec_avx2_l1_kept(plan, 0, &l1i, &l1s);
        if (whole((const int16_t *)plan->w_in, plan->groups, plan->n_pairs, plan->x_all, stride, count, l1i,
                  plan->s_all, (long)plan->groups * MLI_DOT_GROUP))
            return;
    }
#elif DENSE_W_BITS == 8 && defined(MLIPY_X86_TARGETS)
    /* the whole-row pass: small plans on the widened copy of the 8-bit
     * weights, larger ones on the 8-bit weights widened on each load */
    const mli_dot_multi16_whole_fn whole = mli_prv_dot_multi16_whole();
    const mli_dot_multi8_whole_fn whole8 = mli_prv_dot_multi8_whole();
    if (whole && whole8) {
        int64_t l1i, l1s;
        mli_rec_avx2_l1_kept(plan, 1, &l1i, &l1s);
        const long s_stride = (long)plan->groups * MLI_DOT_GROUP;
        if (mli_prv_dense_wide8(plan) ? whole(plan->w_in16, plan->groups, plan->n_pairs, plan->x_all, stride, count,
                                              l1i, plan->s_all, s_stride)
                                      : whole8((const int8_t *)plan->w_in, plan->groups, plan->n_pairs, plan->x_all,
                                               stride, count, l1i, plan->s_all, s_stride))
            return;
    }
#endif
    DENSE_DIRECT_MULTI()((const DENSE_PK_T *)plan->w_in, plan->groups, plan->n_pairs, plan->x_all, stride, count,
                         plan->chunk_in, plan->s_all, (long)plan->groups * MLI_DOT_GROUP);
}

/* One step; s_in_ready (may be NULL) holds the step's input sums already
 * (from mli_prv_dense_hoist_*). */
void MLI_CAT(mli_prv_dense_step_, DENSE_SFX)(const mli_dense_plan *plan, const DENSE_IO_T *x, int N,
                                             const DENSE_IO_T *h, int S, const DENSE_W_T *W, long row_stride,
                                             const DENSE_W_T *b, int K, mli_dense_shifts sh,
                                             const int64_t *s_in_ready, DENSE_IO_T *y) {
    if (!plan->packed) {
        MLI_CAT(mli_prv_dense_, DENSE_SFX)(x, N, h, S, W, row_stride, b, K, sh, y);
        return;
    }
    const int shift = DENSE_SPLIT ? 8 : 0;
    if (plan->rows) {
        MLI_CAT(rows_step_, DENSE_SFX)(plan, x, N, h, S, W, row_stride, K);
    } else {
        MLI_CAT(packed_step_, DENSE_SFX)(plan, s_in_ready ? NULL : x, N, h, S, shift);
    }
    const int64_t *si = s_in_ready && !plan->rows ? s_in_ready : plan->s_in;
    if (plan->fast_epilogue) {
        MLI_CAT(epilogue_, DENSE_SFX)(plan->bias_term, si, plan->s_st, K, S, sh.in_to_state, sh.out_shift,
                                      mlipy_rounding_up, y);
    } else {
        for (int k = 0; k < K; k++)
            y[k] = MLI_CAT(dense_out_, DENSE_SFX)(plan->bias_term[k], si[k], S > 0 ? plan->s_st[k] : 0, S, sh);
    }
    if (plan->unclamped) return;
    /* rows whose partial sums may reach the 40-bit limit with this data: MLI's order */
    const int64_t mx = MLI_CAT(maxabs_, DENSE_SFX)(x, N), mh = S > 0 ? MLI_CAT(maxabs_, DENSE_SFX)(h, S) : 0;
    for (int k = 0; k < K; k++) {
        const int g = k / MLI_DOT_GROUP;
        if (!MLI_CAT(unclamped_, DENSE_SFX)(plan->bias_term[k], si[k], mx * plan->l1_in[g], mh * plan->l1_st[g], S, sh))
            y[k] = MLI_CAT(mli_row_, DENSE_SFX)(x, N, h, S, W + (long)k * row_stride, b[k], sh);
    }
}

/* The vector as zero-padded int16 (split into high and low bytes with DENSE_SPLIT). */
static void MLI_CAT(row_vec_, DENSE_SFX)(const DENSE_IO_T *v, int n, int16_t *hi, int16_t *lo) {
    for (int j = 0; j < n; j++) {
        if (DENSE_SPLIT) {
            hi[j] = (int16_t)(v[j] >> 8);
            lo[j] = (int16_t)(v[j] & 255);
        } else {
            hi[j] = (int16_t)v[j];
        }
    }
}

static void MLI_CAT(rows_step_, DENSE_SFX)(const mli_dense_plan *plan, const DENSE_IO_T *x, int N, const DENSE_IO_T *h,
                                          int S, const DENSE_W_T *W, long row_stride, int K) {
    const int shift = DENSE_SPLIT ? 8 : 0;
    MLI_CAT(row_vec_, DENSE_SFX)(x, N, plan->r_in, plan->rlo_in);
    if (S > 0) MLI_CAT(row_vec_, DENSE_SFX)(h, S, plan->r_st, plan->rlo_st);
    if (sizeof(DENSE_W_T) == 1) {
        const mli_dot_rows8_fn dot = mli_prv_dot_rows8();
        dot((const int8_t *)W, row_stride, K, N, plan->r_in, shift, DENSE_SPLIT ? plan->rlo_in : NULL, plan->s_in);
        if (S > 0)
            dot((const int8_t *)W + N, row_stride, K, S, plan->r_st, shift, DENSE_SPLIT ? plan->rlo_st : NULL,
                plan->s_st);
    } else {
        const mli_dot_rows16_fn dot = mli_prv_dot_rows16();
        dot((const int16_t *)W, row_stride, K, N, plan->r_in, shift, DENSE_SPLIT ? plan->rlo_in : NULL, plan->s_in);
        if (S > 0)
            dot((const int16_t *)W + N, row_stride, K, S, plan->r_st, shift, DENSE_SPLIT ? plan->rlo_st : NULL,
                plan->s_st);
    }
}

/* One part of a packed step (the input or the state): the vector as pairs,
 * then the direct form where the weights allow it (always with 8-bit
 * weights), else the split (int16 weights only). */
static void MLI_CAT(packed_part_, DENSE_SFX)(const int16_t *w, int groups, int pairs, const DENSE_IO_T *v, int n,
                                            int direct, const int32_t *chunks, int32_t *xv, int32_t *xlo, int shift,
                                            int64_t *sums) {
    MLI_CAT(pairs_, DENSE_SFX)(v, n, DENSE_SPLIT && !direct, xv, xlo);
    if (direct) {
        DENSE_DIRECT()((const DENSE_PK_T *)w, groups, pairs, xv, chunks, sums);
        return;
    }
#if DENSE_W_BITS == 16
    mli_prv_dot_groups()(w, groups, pairs, xv, shift, DENSE_SPLIT ? xlo : NULL, sums);
#else
    (void)shift;
#endif
}

static void MLI_CAT(packed_step_, DENSE_SFX)(const mli_dense_plan *plan, const DENSE_IO_T *x, int N,
                                            const DENSE_IO_T *h, int S, int shift) {
    if (x) /* NULL: the input sums are ready */
        MLI_CAT(packed_part_, DENSE_SFX)(plan->w_in, plan->groups, plan->n_pairs, x, N, plan->direct_in,
                                         plan->chunk_in, plan->x_in, plan->xlo_in, shift, plan->s_in);
    if (S > 0)
        MLI_CAT(packed_part_, DENSE_SFX)(plan->w_st, plan->groups, plan->s_pairs, h, S, plan->direct_st,
                                         plan->chunk_st, plan->x_st, plan->xlo_st, shift, plan->s_st);
}

/* The read-out of one step from input and state sums computed elsewhere
 * (si, ss: K each): what mli_prv_dense_step_* does after its sums, for a
 * caller that computes the sums of many vectors at once (mlipy_rows.c).
 * plan->packed only; the 40-bit clamp test and MLI's order as there. */
void MLI_CAT(mli_prv_dense_finish_, DENSE_SFX)(const mli_dense_plan *plan, const DENSE_IO_T *x, int N,
                                               const DENSE_IO_T *h, int S, const DENSE_W_T *W, long row_stride,
                                               const DENSE_W_T *b, int K, mli_dense_shifts sh, const int64_t *si,
                                               const int64_t *ss, DENSE_IO_T *y) {
    if (plan->fast_epilogue) {
        MLI_CAT(epilogue_, DENSE_SFX)(plan->bias_term, si, ss, K, S, sh.in_to_state, sh.out_shift,
                                      mlipy_rounding_up, y);
    } else {
        for (int k = 0; k < K; k++)
            y[k] = MLI_CAT(dense_out_, DENSE_SFX)(plan->bias_term[k], si[k], S > 0 ? ss[k] : 0, S, sh);
    }
    if (plan->unclamped) return;
    const int64_t mx = MLI_CAT(maxabs_, DENSE_SFX)(x, N), mh = S > 0 ? MLI_CAT(maxabs_, DENSE_SFX)(h, S) : 0;
    for (int k = 0; k < K; k++) {
        const int g = k / MLI_DOT_GROUP;
        if (!MLI_CAT(unclamped_, DENSE_SFX)(plan->bias_term[k], si[k], mx * plan->l1_in[g], mh * plan->l1_st[g], S, sh))
            y[k] = MLI_CAT(mli_row_, DENSE_SFX)(x, N, h, S, W + (long)k * row_stride, b[k], sh);
    }
}

#undef DENSE_SPLIT
#undef DENSE_PK_T
#undef DENSE_DIRECT
#undef DENSE_DIRECT_MULTI
#undef DENSE_W_BITS
#undef DENSE_SFX
#undef DENSE_IO_T
#undef DENSE_W_T
#undef DENSE_ACC40
