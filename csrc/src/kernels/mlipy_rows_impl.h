/* Template body of mlipy_lstm_cell_rows_<KRN_SFX> and
 * mlipy_basic_rnn_cell_rows_<KRN_SFX> (mlipy_rows.c); parameters as for the
 * kernel templates. */
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_W_T) || !defined(KRN_BITS) || \
    !defined(KRN_DATA_EL) || !defined(KRN_W_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL and KRN_W_EL first"
#endif

#if KRN_BITS == 8
#define ROWS_PAIRS_FN rows_pairs_i8
#else
#define ROWS_PAIRS_FN rows_pairs_i16
#endif
#define ROWS_ENG MLI_CAT(rows_eng_, KRN_SFX)

/* The dense part shared by a block of rows, and its scratch. */
typedef struct {
    mli_dense_plan plan;
    int fast;            /* 1: the sums of all rows by the multi-vector direct form */
    int N, S, K, Kp;     /* input, state and output sizes; Kp: K rounded up to a group */
    const KRN_W_T *W, *b;
    mli_dense_shifts sh;
    int32_t *xp, *hp;    /* the block's input and state vectors as pairs */
    int64_t *si, *ss;    /* their exact sums, Kp per row */
} ROWS_ENG;

/* The direct form over the packed weights for nv vectors (8-bit weights are
 * packed as int8). */
static void MLI_CAT(rows_multi_, KRN_SFX)(const int16_t *w, int groups, int pairs, const int32_t *x, long x_stride,
                                         int nv, const int32_t *chunks, int64_t *sums, long s_stride) {
    if (sizeof(KRN_W_T) == 1)
        mli_prv_dot_chunked_multi8()((const int8_t *)w, groups, pairs, x, x_stride, nv, chunks, sums, s_stride);
    else
        mli_prv_dot_chunked_multi()(w, groups, pairs, x, x_stride, nv, chunks, sums, s_stride);
}

/* One step of n rows: y[j*K ..] = dense(x[j], h + j*S).  The sums of all n
 * rows come from one pass over the weights; the read-out, the 40-bit clamp
 * test and MLI's order where it might matter are per row, as in a kernel call. */
static void MLI_CAT(rows_dense_, KRN_SFX)(ROWS_ENG *e, int n, const KRN_IO_T *const *x, const KRN_IO_T *h,
                                         KRN_IO_T *y) {
    const int N = e->N, S = e->S, K = e->K;
    if (!e->fast) { /* scalar path or weights only the split form takes: row by row */
        for (int j = 0; j < n; j++)
            MLI_CAT(mli_prv_dense_step_, KRN_SFX)(&e->plan, x[j], N, h + (long)j * S, S, e->W, N + S, e->b, K, e->sh,
                                                  NULL, y + (long)j * K);
        return;
    }
    const mli_dense_plan *p = &e->plan;
    /* 16-bit data of even length already is the pair layout (x86 is little
     * endian): rows equally spaced in memory are read where they are */
    const int32_t *xv = e->xp, *hv = e->hp;
    long xstride = p->n_pairs, hstride = p->s_pairs;
    const ptrdiff_t gap = n > 1 ? (const char *)x[1] - (const char *)x[0] : 4 * (ptrdiff_t)p->n_pairs;
    int direct_x = KRN_BITS == 16 && N % 2 == 0 && (uintptr_t)x[0] % 4 == 0 && gap % 4 == 0 && gap > 0;
    for (int j = 2; j < n && direct_x; j++) direct_x = (const char *)x[j] - (const char *)x[j - 1] == gap;
    if (direct_x) {
        xv = (const int32_t *)(const void *)x[0];
        xstride = (long)(gap / 4);
    } else {
        for (int j = 0; j < n; j++) ROWS_PAIRS_FN(x[j], N, e->xp + (long)j * p->n_pairs);
    }
    if (KRN_BITS == 16 && S % 2 == 0 && (uintptr_t)h % 4 == 0) {
        hv = (const int32_t *)(const void *)h;
    } else {
        for (int j = 0; j < n; j++) ROWS_PAIRS_FN(h + (long)j * S, S, e->hp + (long)j * p->s_pairs);
    }
    MLI_CAT(rows_multi_, KRN_SFX)(p->w_in, p->groups, p->n_pairs, xv, xstride, n, p->chunk_in, e->si, e->Kp);
    MLI_CAT(rows_multi_, KRN_SFX)(p->w_st, p->groups, p->s_pairs, hv, hstride, n, p->chunk_st, e->ss, e->Kp);
    for (int j = 0; j < n; j++)
        MLI_CAT(mli_prv_dense_finish_, KRN_SFX)(p, x[j], N, h + (long)j * S, S, e->W, N + S, e->b, K, e->sh,
                                                e->si + (long)j * e->Kp, e->ss + (long)j * e->Kp, y + (long)j * K);
}

/* Plan the dense part and carve the scratch of `nb` rows (plus `extra`
 * bytes for the caller, returned in *extra_p) out of one allocation.  NULL
 * when memory is short. */
static void *MLI_CAT(rows_setup_, KRN_SFX)(ROWS_ENG *e, int nb, int N, int S, int K, const KRN_W_T *W,
                                          const KRN_W_T *b, mli_dense_shifts sh, long steps, size_t extra,
                                          void **extra_p) {
    const size_t groups = ((size_t)K + MLI_DOT_GROUP - 1) / MLI_DOT_GROUP;
    const size_t np = ((size_t)N + 1) / 2, sp = ((size_t)S + 1) / 2, Kp = groups * MLI_DOT_GROUP;
    const size_t ws = mli_prv_dense_workspace_size(K, N, S);
    const size_t B = (size_t)nb, a = 64, part[6] = {ws, B * np * 4, B * sp * 4, B * Kp * 8, B * Kp * 8, extra};
    size_t total = 0;
    for (int i = 0; i < 6; i++) total += (part[i] + a - 1) / a * a;
    char *mem = (char *)malloc(total + a);
    if (!mem) return NULL;
    char *q = (char *)(((uintptr_t)mem + a - 1) / a * a);
    void *ptr[6];
    for (int i = 0; i < 6; i++) {
        ptr[i] = q;
        q += (part[i] + a - 1) / a * a;
    }
    mlipy_set_workspace(ptr[0], ws);
    e->N = N, e->S = S, e->K = K, e->Kp = (int)Kp, e->W = W, e->b = b, e->sh = sh;
    e->xp = (int32_t *)ptr[1], e->hp = (int32_t *)ptr[2], e->si = (int64_t *)ptr[3], e->ss = (int64_t *)ptr[4];
    *extra_p = ptr[5];
    MLI_CAT(mli_prv_dense_plan_, KRN_SFX)(&e->plan, W, N + S, K, N, S, b, sh, steps);
    e->fast = e->plan.packed && !e->plan.rows && e->plan.direct_in && e->plan.direct_st;
    return mem;
}

/* Ctrl-C: the thread's poll function, asked about every MLIPY_POLL_STEPS row steps. */
static int MLI_CAT(rows_poll_, KRN_SFX)(long *work, int n) {
    *work += n;
    if (*work < MLIPY_POLL_STEPS) return 0;
    *work = 0;
    return mlipy_poll_now(MLIPY_POLL_STEPS - 1);
}

#ifdef MLIPY_X86_TARGETS
/* The LSTM rows through the kernel's AVX2 fused step where it applies
 * (lstm_avx2_init on the shared plan): the rows advance together one time
 * step at a time, ROWS_TOGETHER at a time (rows of long sequences lie a
 * multiple of 4 KB apart, and more of them at once than the L1 cache's ways
 * evict each other's inputs and outputs at every step), each row's step the kernel's own
 * integers (its start values computed one step ahead, its state and cell
 * in the block's scratch h, c, its outputs written in place).  Returns 0
 * when the fused step does not apply (nothing done), 1 when done, -1 when
 * interrupted. */
static int MLI_CAT(rows_lstm_avx2_, KRN_SFX)(ROWS_ENG *e, int rows, int nb, const mli_tensor *in,
                                            const mli_tensor *prev_out, mli_tensor *cell, mli_tensor *out, long T,
                                            int N, int M, int b2b, mli_dense_shifts sh, int ir_shift, int mshift,
                                            mli_rnn_out_activation act, int f_ir, int f_c, KRN_IO_T *gates,
                                            KRN_IO_T *h, KRN_IO_T *c, long *work) {
    lstm_avx2 fa_s; /* on the stack: its vector constants need their alignment */
    lstm_avx2 *fa = &fa_s;
    const size_t el = sizeof(KRN_IO_T);
    if (!lstm_avx2_init(fa, &e->plan, M, N, sh, ir_shift, mshift, act, f_ir, f_c, sizeof(KRN_W_T) == 1,
                        KRN_BITS == 8, h, gates, el)) {
        return 0;
    }
    const long ss = (long)e->plan.groups * REC_START_STRIDE; /* per row: two slots */
    int32_t *st = (int32_t *)malloc((size_t)nb * 2 * (size_t)ss * sizeof(int32_t));
    const KRN_IO_T **hp = (const KRN_IO_T **)malloc((size_t)nb * sizeof(KRN_IO_T *));
    if (!st || !hp) {
        free(st);
        free((void *)hp);
        return 0;
    }
    int done = 1;
    for (int r0 = 0; r0 < rows && done > 0; r0 += nb) {
        const int n = rows - r0 < nb ? rows - r0 : nb;
        for (int j = 0; j < n; j++) {
            memcpy(h + (size_t)j * (size_t)M, prev_out[r0 + j].data, (size_t)M * el);
            memcpy(c + (size_t)j * (size_t)M, cell[r0 + j].data, (size_t)M * el);
            hp[j] = h + (size_t)j * (size_t)M;
            const KRN_IO_T *x0 = (const KRN_IO_T *)in[r0 + j].data;
            if (KRN_BITS == 8) lstm_avx2_step8_first(fa, x0, st + 2 * j * ss);
            else if (sizeof(KRN_W_T) == 2) lstm_avx2_step16_first(fa, x0, st + 2 * j * ss);
            else lstm_avx2_step16w8_first(fa, x0, st + 2 * j * ss);
        }
        for (int j0 = 0; j0 < n && done > 0; j0 += ROWS_TOGETHER)
        for (long t = 0; t < T; t++) {
            const int j1 = n - j0 < ROWS_TOGETHER ? n : j0 + ROWS_TOGETHER;
            if (MLI_CAT(rows_poll_, KRN_SFX)(work, j1 - j0)) {
                done = -1;
                break;
            }
            const int32_t slot = (int32_t)(t & 1);
            for (int j = j0; j < j1; j++) {
                const KRN_IO_T *xj = (const KRN_IO_T *)in[r0 + j].data;
                const KRN_IO_T *xn = t + 1 < T ? xj + (t + 1) * N : NULL;
                KRN_IO_T *h_out = b2b ? (KRN_IO_T *)out[r0 + j].data + t * M : h + (size_t)j * (size_t)M;
                const int32_t *s0 = st + (2 * j + slot) * ss;
                int32_t *s1 = st + (2 * j + 1 - slot) * ss;
                KRN_IO_T *cj = c + (size_t)j * (size_t)M;
                KRN_IO_T *gj = gates + (size_t)j * 4 * (size_t)M; /* a row's own gates: no false sharing between rows */
                if (KRN_BITS == 8) lstm_avx2_step8(fa, s0, hp[j], gj, cj, h_out, xn, s1);
                else if (sizeof(KRN_W_T) == 2) lstm_avx2_step16(fa, s0, hp[j], gj, cj, h_out, xn, s1);
                else lstm_avx2_step16w8(fa, s0, hp[j], gj, cj, h_out, xn, s1);
                hp[j] = h_out;
            }
        }
        for (int j = 0; j < n && done > 0; j++) {
            if (!b2b) memcpy(out[r0 + j].data, h + (size_t)j * (size_t)M, (size_t)M * el);
            memcpy(cell[r0 + j].data, c + (size_t)j * (size_t)M, (size_t)M * el);
        }
    }
    free(st);
    free((void *)hp);
    return done;
}

/* The basic RNN rows through the kernel's AVX2 fused step where it applies
 * (rnn_avx2_init on the shared plan), as rows_lstm_avx2_. */
static int MLI_CAT(rows_rnn_avx2_, KRN_SFX)(ROWS_ENG *e, int rows, int nb, const mli_tensor *in,
                                           const mli_tensor *prev_out, mli_tensor *out, long T, int N, int M, int K,
                                           int b2b, mli_dense_shifts sh, int activate, const mli_lut *lut, int f_d,
                                           KRN_IO_T *y, KRN_IO_T *h, long *work) {
    rnn_avx2 fa_s; /* on the stack: its vector constants need their alignment */
    rnn_avx2 *fa = &fa_s;
    const size_t el = sizeof(KRN_IO_T);
    if (!rnn_avx2_init(fa, &e->plan, K, M, N, T, sh, activate, lut, f_d, sizeof(KRN_W_T) == 1, KRN_BITS == 8, NULL,
                       NULL, 0, NULL, 0, el)) {
        return 0;
    }
    const long ss = (long)e->plan.groups * REC_START_STRIDE;
    int32_t *st = (int32_t *)malloc((size_t)nb * 2 * (size_t)ss * sizeof(int32_t));
    const KRN_IO_T **hp = (const KRN_IO_T **)malloc((size_t)nb * sizeof(KRN_IO_T *));
    if (!st || !hp) {
        free(st);
        free((void *)hp);
        return 0;
    }
    int done = 1;
    for (int r0 = 0; r0 < rows && done > 0; r0 += nb) {
        const int n = rows - r0 < nb ? rows - r0 : nb;
        for (int j = 0; j < n; j++) {
            memcpy(h + (size_t)j * (size_t)M, prev_out[r0 + j].data, (size_t)M * el);
            hp[j] = h + (size_t)j * (size_t)M;
            const KRN_IO_T *x0 = (const KRN_IO_T *)in[r0 + j].data;
            if (KRN_BITS == 8) rnn_avx2_step8_first(fa, x0, st + 2 * j * ss);
            else if (sizeof(KRN_W_T) == 2) rnn_avx2_step16_first(fa, x0, st + 2 * j * ss);
            else rnn_avx2_step16w8_first(fa, x0, st + 2 * j * ss);
        }
        for (int j0 = 0; j0 < n && done > 0; j0 += ROWS_TOGETHER)
        for (long t = 0; t < T; t++) {
            const int j1 = n - j0 < ROWS_TOGETHER ? n : j0 + ROWS_TOGETHER;
            if (MLI_CAT(rows_poll_, KRN_SFX)(work, j1 - j0)) {
                done = -1;
                break;
            }
            const int32_t slot = (int32_t)(t & 1);
            for (int j = j0; j < j1; j++) {
                const KRN_IO_T *xj = (const KRN_IO_T *)in[r0 + j].data;
                const KRN_IO_T *xn = t + 1 < T ? xj + (t + 1) * N : NULL;
                KRN_IO_T *yo = b2b ? (KRN_IO_T *)out[r0 + j].data + t * K : y + (size_t)j * (size_t)K;
                const int32_t *s0 = st + (2 * j + slot) * ss;
                int32_t *s1 = st + (2 * j + 1 - slot) * ss;
                if (KRN_BITS == 8) rnn_avx2_step8(fa, s0, hp[j], NULL, yo, xn, s1);
                else if (sizeof(KRN_W_T) == 2) rnn_avx2_step16(fa, s0, hp[j], NULL, yo, xn, s1);
                else rnn_avx2_step16w8(fa, s0, hp[j], NULL, yo, xn, s1);
                hp[j] = yo; /* the next state is the step's first M outputs */
            }
        }
        for (int j = 0; j < n && done > 0 && !b2b; j++)
            memcpy(out[r0 + j].data, y + (size_t)j * (size_t)K, (size_t)K * el);
    }
    free(st);
    free((void *)hp);
    return done;
}

/* The basic RNN rows through the batched AVX-512 VNNI step where it applies
 * (mlipy_rows_avx512.h), ROWS512_R rows at a time.  Returns as
 * rows_rnn_avx2_ (0: nothing done). */
static int MLI_CAT(rows_rnn_avx512_, KRN_SFX)(ROWS_ENG *e, int rows, const mli_tensor *in, const mli_tensor *prev_out,
                                             mli_tensor *out, long T, int N, int M, int K, int b2b,
                                             mli_dense_shifts sh, int activate, const mli_lut *lut, int f_d,
                                             long *work) {
    if (mlipy_get_isa() != MLIPY_ISA_AVX512_VNNI || K % MLI_DOT_GROUP) return 0;
    rnn_avx2 fa_s; /* on the stack: its vector constants need their alignment */
    rnn_avx2 *fa = &fa_s;
    const int w8 = sizeof(KRN_W_T) == 1, d8 = KRN_BITS == 8;
    const size_t el = sizeof(KRN_IO_T);
    if (!rnn_avx2_setup(fa, &e->plan, K, M, N, T, sh, activate, lut, f_d, w8, d8, NULL, NULL, 0, NULL, 0, el))
        return 0;
    if (w8 && !fa->rec.w_st16) return 0; /* 8-bit weights: only from the widened copy */
    rows512_k ac;
    rows512_k_init(&ac, fa, lut, f_d, w8, d8);
    char *mem = (char *)malloc(rows512_scratch_size(fa, el) + 64);
    if (!mem) return 0;
    char *scratch = (char *)(((uintptr_t)mem + 63) / 64 * 64);
    int done = 1;
    for (int r0 = 0; r0 < rows && done > 0; r0 += ROWS512_R) {
        const int n = rows - r0 < ROWS512_R ? rows - r0 : ROWS512_R;
        const void *x[ROWS512_R], *h0[ROWS512_R];
        void *o[ROWS512_R];
        for (int j = 0; j < n; j++) {
            x[j] = in[r0 + j].data;
            h0[j] = prev_out[r0 + j].data;
            o[j] = out[r0 + j].data;
        }
        if (KRN_BITS == 8) done = rows512_run8(fa, &ac, n, x, h0, o, T, b2b, scratch, work, MLI_CAT(rows_poll_, KRN_SFX));
        else if (w8) done = rows512_run16w8(fa, &ac, n, x, h0, o, T, b2b, scratch, work, MLI_CAT(rows_poll_, KRN_SFX));
        else done = rows512_run16(fa, &ac, n, x, h0, o, T, b2b, scratch, work, MLI_CAT(rows_poll_, KRN_SFX));
    }
    free(mem);
    return done;
}
#endif

mli_status MLI_CAT(mlipy_lstm_cell_rows_, KRN_SFX)(int rows, const mli_tensor *in, const mli_tensor *prev_out,
                                                   const mli_tensor *weights, const mli_tensor *bias,
                                                   const mli_rnn_cell_cfg *cfg, mli_tensor *cell, mli_tensor *out,
                                                   int *failed_row) {
    int unused;
    if (!failed_row) failed_row = &unused;
    *failed_row = -1;
    mlipy_err_reset("mlipy_lstm_cell_rows_" MLI_STR(KRN_SFX));
    mli_status st = rows_args(rows, in, prev_out, out, cell, 1);
    if (st != MLI_STATUS_OK) return st;
    /* every row as its own kernel call would check it, before anything is written */
    const mli_chk_kind kind = {KRN_DATA_EL, KRN_W_EL};
    for (int r = 0; r < rows; r++) {
        st = mli_chk_lstm_cell(&in[r], &prev_out[r], weights, bias, cfg, &cell[r], &out[r], kind);
        if (st != MLI_STATUS_OK) {
            *failed_row = r;
            return st;
        }
    }
    if ((st = rows_shared(rows, in, prev_out, weights, bias, cfg, cell, out, failed_row)) != MLI_STATUS_OK) return st;
    const mli_rnn_mode mode = cfg->mode;
    const mli_rnn_out_activation act = cfg->act;
    const int b2b = mode == RNN_BATCH_TO_BATCH;
    const long T = mode == RNN_ONE_TO_ONE ? 1 : (long)in[0].shape[0];
    const int M = (int)mli_prv_count(&prev_out[0], 0), K = 4 * M;
    int per_row = rows_lstm_per_row(M, T);
    for (int r = 0; r < rows && !per_row; r++) per_row = mli_lstm_p_from_out(&cell[r], act); /* the kernel's quirk */
    if (per_row) {
        /* the kernel's fused time step outruns the shared-weights engine here:
         * the rows one after another, each a whole kernel call (its results by
         * definition) packing the weights once into one workspace for all; a
         * row's only failures now are memory and Ctrl-C */
        const int N1 = (int)(mode == RNN_ONE_TO_ONE ? mli_prv_count(&in[0], 0) : mli_prv_count(&in[0], 1));
        const size_t ws = mli_prv_dense_workspace_size(K, N1, M);
        void *buf = malloc(ws);
        if (!buf) return mlipy_err(MLI_STATUS_NOT_ENGH_MEM, "rows", "", "no memory for the rows' scratch");
        for (int r = 0; r < rows && st == MLI_STATUS_OK; r++) {
            if (r == 0) mlipy_set_workspace(buf, ws);
            else mlipy_set_workspace_reuse(buf, ws); /* the same weights, packed by row 0 */
            st = MLI_CAT(mli_krn_lstm_cell_, KRN_SFX)(&in[r], &prev_out[r], weights, bias, cfg, &cell[r], &out[r]);
            if (st != MLI_STATUS_OK) *failed_row = r;
        }
        mlipy_set_workspace(NULL, 0);
        free(buf);
        return st;
    }
    const int N = (int)(mode == RNN_ONE_TO_ONE ? mli_prv_count(&in[0], 0) : mli_prv_count(&in[0], 1));
    const int q = KRN_BITS - 1, f_ir = q - 3;
    const int f_in = in[0].el_params.fx.frac_bits, f_h = prev_out[0].el_params.fx.frac_bits;
    const int f_w = weights->el_params.fx.frac_bits, f_c = cell[0].el_params.fx.frac_bits;
    const mli_dense_shifts sh = {f_in + f_w - bias->el_params.fx.frac_bits, f_in - f_h, f_h + f_w - f_ir};
    const int ir_shift = q - f_c;
    const int mshift = act == RNN_ACT_NONE ? f_c + q - f_h : q;
    const int nb = rows < ROWS_BLOCK ? rows : ROWS_BLOCK;
    const size_t el = sizeof(KRN_IO_T);

    rows_saved saved;
    rows_enter(&saved);
    ROWS_ENG e;
    void *extra;
    const size_t nk = (size_t)nb * (size_t)K, nm = (size_t)nb * (size_t)M;
    void *mem = MLI_CAT(rows_setup_, KRN_SFX)(&e, nb, N, M, K, (const KRN_W_T *)weights->data,
                                              (const KRN_W_T *)bias->data, sh, (long)rows * T,
                                              (2 * nk + 2 * nm) * el + (size_t)nb * sizeof(void *), &extra);
    if (!mem) {
        rows_leave(&saved);
        return mlipy_err(MLI_STATUS_NOT_ENGH_MEM, "rows", "", "no memory for the rows' scratch");
    }
    const KRN_IO_T **xs = (const KRN_IO_T **)extra;
    KRN_IO_T *dn = (KRN_IO_T *)(xs + nb); /* dense results, row-major [n][4M] */
    KRN_IO_T *gates = dn + nk;            /* the same gate-major [4][n][M]: one cell step runs all rows */
    KRN_IO_T *h = gates + nk, *c = h + nm;
    long work = 0;
    int fused = 0; /* 1: the rows ran through the kernel's fused step; -1: interrupted there */
#ifdef MLIPY_X86_TARGETS
    fused = MLI_CAT(rows_lstm_avx2_, KRN_SFX)(&e, rows, nb, in, prev_out, cell, out, T, N, M, b2b, sh, ir_shift, mshift,
                                              act, f_ir, f_c, gates, h, c, &work);
#endif
    if (fused < 0) {
        free(mem);
        rows_leave(&saved);
        return MLIPY_STATUS_INTERRUPTED;
    }
    for (int r0 = 0; r0 < rows && !fused; r0 += nb) {
        const int n = rows - r0 < nb ? rows - r0 : nb;
        for (int j = 0; j < n; j++) {
            memcpy(h + (size_t)j * (size_t)M, prev_out[r0 + j].data, (size_t)M * el);
            memcpy(c + (size_t)j * (size_t)M, cell[r0 + j].data, (size_t)M * el);
        }
        for (long t = 0; t < T; t++) {
            if (MLI_CAT(rows_poll_, KRN_SFX)(&work, n)) {
                free(mem);
                rows_leave(&saved);
                return MLIPY_STATUS_INTERRUPTED;
            }
            for (int j = 0; j < n; j++) xs[j] = (const KRN_IO_T *)in[r0 + j].data + t * N;
            MLI_CAT(rows_dense_, KRN_SFX)(&e, n, xs, h, dn);
            for (int j = 0; j < n; j++)
                for (int g = 0; g < 4; g++)
                    memcpy(gates + ((size_t)g * (size_t)n + (size_t)j) * (size_t)M, dn + (size_t)j * (size_t)K + (size_t)g * (size_t)M, (size_t)M * el);
            /* the cell steps are element-wise: all n rows as one vector of n*M */
            MLI_CAT(mlipy_lstm_gates_, KRN_SFX)(gates, n * M, f_ir);
            MLI_CAT(mlipy_lstm_cell_update_, KRN_SFX)(gates, n * M, c, ir_shift);
            MLI_CAT(mlipy_lstm_hidden_, KRN_SFX)(gates, n * M, c, f_c, act, mshift, h);
            if (b2b)
                for (int j = 0; j < n; j++)
                    memcpy((KRN_IO_T *)out[r0 + j].data + t * M, h + (size_t)j * (size_t)M, (size_t)M * el);
        }
        for (int j = 0; j < n; j++) {
            if (!b2b) memcpy(out[r0 + j].data, h + (size_t)j * (size_t)M, (size_t)M * el);
            memcpy(cell[r0 + j].data, c + (size_t)j * (size_t)M, (size_t)M * el);
        }
    }
    free(mem);
    rows_leave(&saved);
    for (int r = 0; r < rows; r++) { /* as each kernel call sets its out */
        mli_tensor *o = &out[r];
        if (b2b) {
            o->rank = 2;
            o->shape[0] = (uint32_t)T;
            o->shape[1] = (uint32_t)M;
        } else {
            o->rank = 1;
            o->shape[0] = (uint32_t)M;
        }
        o->el_type = in[0].el_type;
        o->el_params.fx.frac_bits = (uint8_t)(act == RNN_ACT_NONE ? f_h : q);
    }
    return MLI_STATUS_OK;
}

mli_status MLI_CAT(mlipy_basic_rnn_cell_rows_, KRN_SFX)(int rows, const mli_tensor *in, const mli_tensor *prev_out,
                                                        const mli_tensor *weights, const mli_tensor *bias,
                                                        const mli_rnn_cell_cfg *cfg, mli_tensor *out,
                                                        int *failed_row) {
    int unused;
    if (!failed_row) failed_row = &unused;
    *failed_row = -1;
    mlipy_err_reset("mlipy_basic_rnn_cell_rows_" MLI_STR(KRN_SFX));
    mli_status st = rows_args(rows, in, prev_out, out, NULL, 0);
    if (st != MLI_STATUS_OK) return st;
    const mli_chk_kind kind = {KRN_DATA_EL, KRN_W_EL};
    for (int r = 0; r < rows; r++) {
        bool skip = false;
        st = mli_chk_basic_rnn_cell(&in[r], &prev_out[r], weights, bias, cfg, &out[r], kind, &skip);
        if (st == MLI_STATUS_OK && skip) /* a kernel call would write nothing and return OK: refused here */
            st = mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "out", "capacity",
                                  "is too small for the row's steps (a kernel call would return OK and write "
                                  "nothing)");
        if (st != MLI_STATUS_OK) {
            *failed_row = r;
            return st;
        }
    }
    if ((st = rows_shared(rows, in, prev_out, weights, bias, cfg, NULL, out, failed_row)) != MLI_STATUS_OK) return st;
    const mli_rnn_mode mode = cfg->mode;
    const mli_rnn_out_activation act = cfg->act;
    const int b2b = mode == RNN_BATCH_TO_BATCH;
    const int activate = act == RNN_ACT_TANH || act == RNN_ACT_SIGM;
    const long T = mode == RNN_ONE_TO_ONE ? 1 : (long)in[0].shape[0];
    const int K = (int)mli_prv_count(bias, 0), M = (int)mli_prv_count(&prev_out[0], 0);
    const int N = (int)(mode == RNN_ONE_TO_ONE ? mli_prv_count(&in[0], 0) : mli_prv_count(&in[0], 1));
    const int f_in = in[0].el_params.fx.frac_bits, f_h = prev_out[0].el_params.fx.frac_bits;
    const int f_w = weights->el_params.fx.frac_bits;
    const int f_d = act == RNN_ACT_NONE ? out[0].el_params.fx.frac_bits : KRN_BITS - 4;
    const mli_dense_shifts sh = {f_in + f_w - bias->el_params.fx.frac_bits, f_in - f_h, f_h + f_w - f_d};
    const mli_lut *lut = act == RNN_ACT_TANH ? &mli_prv_tanh_lut : &mli_prv_sigm_lut;
    const int nb = rows < ROWS_BLOCK ? rows : ROWS_BLOCK;
    const size_t el = sizeof(KRN_IO_T);

    rows_saved saved;
    rows_enter(&saved);
    ROWS_ENG e;
    void *extra;
    const size_t nk = (size_t)nb * (size_t)K, nm = (size_t)nb * (size_t)M;
    void *mem = MLI_CAT(rows_setup_, KRN_SFX)(&e, nb, N, M, K, (const KRN_W_T *)weights->data,
                                              (const KRN_W_T *)bias->data, sh, (long)rows * T,
                                              (nk + nm) * el + (size_t)nb * sizeof(void *), &extra);
    if (!mem) {
        rows_leave(&saved);
        return mlipy_err(MLI_STATUS_NOT_ENGH_MEM, "rows", "", "no memory for the rows' scratch");
    }
    const KRN_IO_T **xs = (const KRN_IO_T **)extra;
    KRN_IO_T *y = (KRN_IO_T *)(xs + nb); /* [n][K]: the step's outputs, activated in place */
    KRN_IO_T *h = y + nk;                /* [n][M]: the state */
    long work = 0;
    int fused = 0; /* 1: the rows ran through the kernel's fused step; -1: interrupted there */
#ifdef MLIPY_X86_TARGETS
    fused = MLI_CAT(rows_rnn_avx512_, KRN_SFX)(&e, rows, in, prev_out, out, T, N, M, K, b2b, sh, activate, lut, f_d,
                                               &work);
    if (!fused)
        fused = MLI_CAT(rows_rnn_avx2_, KRN_SFX)(&e, rows, nb, in, prev_out, out, T, N, M, K, b2b, sh, activate, lut,
                                                 f_d, y, h, &work);
#endif
    if (fused < 0) {
        free(mem);
        rows_leave(&saved);
        return MLIPY_STATUS_INTERRUPTED;
    }
    for (int r0 = 0; r0 < rows && !fused; r0 += nb) {
        const int n = rows - r0 < nb ? rows - r0 : nb;
        for (int j = 0; j < n; j++) memcpy(h + (size_t)j * (size_t)M, prev_out[r0 + j].data, (size_t)M * el);
        for (long t = 0; t < T; t++) {
            if (MLI_CAT(rows_poll_, KRN_SFX)(&work, n)) {
                free(mem);
                rows_leave(&saved);
                return MLIPY_STATUS_INTERRUPTED;
            }
            for (int j = 0; j < n; j++) xs[j] = (const KRN_IO_T *)in[r0 + j].data + t * N;
            MLI_CAT(rows_dense_, KRN_SFX)(&e, n, xs, h, y);
            if (activate) MLI_CAT(mli_prv_act_vec, KRN_BITS)(lut, y, (long)n * K, f_d, y);
            for (int j = 0; j < n; j++) { /* the next state is the step's first M outputs */
                memcpy(h + (size_t)j * (size_t)M, y + (size_t)j * (size_t)K, (size_t)M * el);
                if (b2b) memcpy((KRN_IO_T *)out[r0 + j].data + t * K, y + (size_t)j * (size_t)K, (size_t)K * el);
            }
        }
        if (!b2b)
            for (int j = 0; j < n; j++) memcpy(out[r0 + j].data, y + (size_t)j * (size_t)K, (size_t)K * el);
    }
    free(mem);
    rows_leave(&saved);
    for (int r = 0; r < rows; r++) { /* as each kernel call sets its out */
        mli_tensor *o = &out[r];
        if (!b2b) {
            o->rank = bias->rank;
            for (uint32_t i = 0; i < bias->rank; i++) o->shape[i] = bias->shape[i];
        } else {
            o->rank = 2;
            o->shape[0] = (uint32_t)T;
            o->shape[1] = (uint32_t)K;
        }
        o->el_type = in[0].el_type;
        if (activate) o->el_params.fx.frac_bits = KRN_BITS - 1;
        else if (act != RNN_ACT_NONE) o->el_params.fx.frac_bits = (uint8_t)f_h;
    }
    return MLI_STATUS_OK;
}

#undef ROWS_PAIRS_FN
#undef ROWS_ENG
#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
