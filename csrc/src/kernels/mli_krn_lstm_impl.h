/* Template body of mli_krn_lstm_cell_<KRN_SFX> (SPEC.md section 10), split
 * into the steps of one time step: gates (dense + activations), cell
 * update, hidden output.  Parameters as for the basic RNN. */
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_W_T) || !defined(KRN_BITS) || \
    !defined(KRN_DATA_EL) || !defined(KRN_W_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL and KRN_W_EL first"
#endif

/* The width of the branch-free cell update and read-out: 8-bit data keep
 * every intermediate below 2^31 (0 < shift < 31), 16-bit data need int64. */
#if KRN_BITS == 8
#define KRN_WIDE_T int32_t
#else
#define KRN_WIDE_T int64_t
#endif

/* Gate activations in place: i, f, o sigmoid and g tanh of the dense
 * values (frac f_ir) -> Q15 (16-bit data) or Q7 (8-bit data). */
static void MLI_CAT(lstm_gates_, KRN_SFX)(KRN_IO_T *gates, int M, int f_ir) {
    MLI_CAT(mli_prv_act_vec, KRN_BITS)(&mli_prv_sigm_lut, gates, M, f_ir, gates);
    MLI_CAT(mli_prv_act_vec, KRN_BITS)(&mli_prv_tanh_lut, gates + M, M, f_ir, gates + M);
    MLI_CAT(mli_prv_act_vec, KRN_BITS)(&mli_prv_sigm_lut, gates + 2 * M, 2 * M, f_ir, gates + 2 * M);
}

/* c = SAT(ASR32(ASR32(i*g, ir_shift) + f*c, q)); the sum wraps at 32 bits
 * as MLI's plain C int arithmetic does.  The usual case (0 < ir_shift < 31)
 * runs branch-free, one version per ISA; the rounding of the shifts is
 * written (v + 2^(n-1) - 1 + (up | bit n of v)) >> n. */
MLIPY_ALWAYS_INLINE int MLI_CAT(MLI_CAT(cell_update_, KRN_SFX), _body)(const KRN_IO_T *i_g, const KRN_IO_T *g_g,
                                                                      const KRN_IO_T *f_g, KRN_IO_T *c, int M,
                                                                      int s, int64_t up) {
    const int q = KRN_BITS - 1;
    const KRN_WIDE_T sbias = ((KRN_WIDE_T)1 << (s - 1)) - 1, qbias = ((KRN_WIDE_T)1 << (q - 1)) - 1;
    const KRN_WIDE_T cmax = ((KRN_WIDE_T)1 << q) - 1, cmin = -cmax - 1, up_ = (KRN_WIDE_T)up;
    for (int m = 0; m < M; m++) {
        const KRN_WIDE_T p = (KRN_WIDE_T)i_g[m] * g_g[m];
        const KRN_WIDE_T u = (p + sbias + (up_ | ((p >> s) & 1))) >> s; /* |p| <= 2^30: no saturation */
#if KRN_BITS == 8
        const KRN_WIDE_T v = u + (KRN_WIDE_T)f_g[m] * c[m]; /* |v| < 2^15: no wrap */
#else
        const KRN_WIDE_T v = (int32_t)(uint32_t)(u + (KRN_WIDE_T)f_g[m] * c[m]);
#endif
        const KRN_WIDE_T r = (v + qbias + (up_ | ((v >> q) & 1))) >> q;
        c[m] = (KRN_IO_T)(r < cmin ? cmin : (r > cmax ? cmax : r));
    }
    return 0;
}
MLIPY_MULTIVERSION(int, MLI_CAT(cell_update_, KRN_SFX),
                   (const KRN_IO_T *i_g, const KRN_IO_T *g_g, const KRN_IO_T *f_g, KRN_IO_T *c, int M, int s,
                    int64_t up),
                   (i_g, g_g, f_g, c, M, s, up))

static void MLI_CAT(lstm_cell_update_, KRN_SFX)(const KRN_IO_T *gates, int M, KRN_IO_T *c, int ir_shift) {
    const KRN_IO_T *i_g = gates, *g_g = gates + M, *f_g = gates + 2 * M;
    if (ir_shift > 0 && ir_shift < 31) {
        MLI_CAT(cell_update_, KRN_SFX)(i_g, g_g, f_g, c, M, ir_shift, mlipy_rounding_up);
        return;
    }
    for (int m = 0; m < M; m++) {
        int64_t u = mli_math_asr32((int32_t)i_g[m] * g_g[m], ir_shift);
        u = (int32_t)(uint32_t)(u + (int64_t)f_g[m] * c[m]);
        c[m] = (KRN_IO_T)mli_math_sat(mli_math_asr32(u, KRN_BITS - 1), KRN_BITS);
    }
}

/* h = out(p * o) with p = c (act NONE) or tanh/sigm(c) in Q15/Q7 (the
 * activation is evaluated into h first, then scaled in place). */
MLIPY_ALWAYS_INLINE int MLI_CAT(MLI_CAT(hidden_, KRN_SFX), _body)(const KRN_IO_T *p, const KRN_IO_T *o, int M, int s,
                                                                 int64_t up, KRN_IO_T *h) {
    const KRN_WIDE_T bias = ((KRN_WIDE_T)1 << (s - 1)) - 1, up_ = (KRN_WIDE_T)up;
    const KRN_WIDE_T hmax = ((KRN_WIDE_T)1 << (KRN_BITS - 1)) - 1, hmin = -hmax - 1;
    for (int m = 0; m < M; m++) {
        const KRN_WIDE_T v = (KRN_WIDE_T)p[m] * o[m];
        const KRN_WIDE_T r = (v + bias + (up_ | ((v >> s) & 1))) >> s;
        h[m] = (KRN_IO_T)(r < hmin ? hmin : (r > hmax ? hmax : r));
    }
    return 0;
}
MLIPY_MULTIVERSION(int, MLI_CAT(hidden_, KRN_SFX),
                   (const KRN_IO_T *p, const KRN_IO_T *o, int M, int s, int64_t up, KRN_IO_T *h),
                   (p, o, M, s, up, h))

static void MLI_CAT(lstm_hidden_, KRN_SFX)(const KRN_IO_T *gates, int M, const KRN_IO_T *c, int f_c,
                                          mli_rnn_out_activation act, int mshift, KRN_IO_T *h) {
    const KRN_IO_T *o_g = gates + 3 * M;
    const KRN_IO_T *p = c;
    if (act != RNN_ACT_NONE) {
        MLI_CAT(mli_prv_act_vec, KRN_BITS)(act == RNN_ACT_TANH ? &mli_prv_tanh_lut : &mli_prv_sigm_lut, c, M, f_c, h);
        p = h;
    }
    if (mshift > 0 && mshift < 31) {
        MLI_CAT(hidden_, KRN_SFX)(p, o_g, M, mshift, mlipy_rounding_up, h);
        return;
    }
    for (int m = 0; m < M; m++)
        h[m] = (KRN_IO_T)mli_math_sat(mli_math_asr32((int64_t)p[m] * o_g[m], mshift), KRN_BITS);
}

/* The steps as exported functions (mlipy_ext.h): each takes the rounding
 * mode at its start, as a kernel does. */
void MLI_CAT(mlipy_lstm_gates_, KRN_SFX)(KRN_IO_T *gates, int M, int f_ir) {
    mlipy_rounding_begin();
    MLI_CAT(lstm_gates_, KRN_SFX)(gates, M, f_ir);
}
void MLI_CAT(mlipy_lstm_cell_update_, KRN_SFX)(const KRN_IO_T *gates, int M, KRN_IO_T *c, int ir_shift) {
    mlipy_rounding_begin();
    MLI_CAT(lstm_cell_update_, KRN_SFX)(gates, M, c, ir_shift);
}
void MLI_CAT(mlipy_lstm_hidden_, KRN_SFX)(const KRN_IO_T *gates, int M, const KRN_IO_T *c, int f_c,
                                          mli_rnn_out_activation act, int mshift, KRN_IO_T *h) {
    mlipy_rounding_begin();
    MLI_CAT(lstm_hidden_, KRN_SFX)(gates, M, c, f_c, act, mshift, h);
}

mli_status MLI_CAT(mli_krn_lstm_cell_, KRN_SFX)(const mli_tensor *in, const mli_tensor *prev_out,
                                                const mli_tensor *weights, const mli_tensor *bias,
                                                const mli_rnn_cell_cfg *cfg, mli_tensor *cell,
                                                mli_tensor *out) {
    mlipy_err_reset("mli_krn_lstm_cell_" MLI_STR(KRN_SFX));
    const mli_chk_kind kind = {KRN_DATA_EL, KRN_W_EL};
    mli_status st = mli_chk_lstm_cell(in, prev_out, weights, bias, cfg, cell, out, kind);
    if (st != MLI_STATUS_OK) return st;

    const mli_rnn_mode mode = cfg->mode;
    const mli_rnn_out_activation act = cfg->act;
    const long batch = mode == RNN_ONE_TO_ONE ? 1 : (long)in->shape[0];
    const int M = (int)mli_prv_count(prev_out, 0);
    const int N = (int)(mode == RNN_ONE_TO_ONE ? mli_prv_count(in, 0) : mli_prv_count(in, 1));
    const int q = KRN_BITS - 1, f_ir = q - 3;
    const int f_in = in->el_params.fx.frac_bits, f_h = prev_out->el_params.fx.frac_bits;
    const int f_w = weights->el_params.fx.frac_bits, f_c = cell->el_params.fx.frac_bits;
    const mli_dense_shifts sh = {f_in + f_w - bias->el_params.fx.frac_bits, f_in - f_h, f_h + f_w - f_ir};
    const int ir_shift = q - f_c;
    const int mshift = act == RNN_ACT_NONE ? f_c + q - f_h : q;
    /* [MLI quirk, seen on MLI 1.1's x86 build] a cell whose mem_stride is set
     * and not dense makes MLI's output activation (into the out row) refuse
     * it without failing the call: h = out(p * o) then takes p from what the
     * out row holds, and out's frac bits end as 0 */
    const int p_from_out = mli_lstm_p_from_out(cell, act);

    mli_tensor *ir = cfg->ir_tsr;
    ir->rank = bias->rank;
    ir->shape[0] = bias->shape[0];
    ir->shape[1] = bias->shape[1];
    ir->mem_stride[0] = ir->mem_stride[1] = 0;
    ir->el_type = in->el_type;
    ir->el_params.fx.frac_bits = (uint8_t)f_ir;

    const KRN_IO_T *x = (const KRN_IO_T *)in->data, *h = (const KRN_IO_T *)prev_out->data;
    const KRN_W_T *W = (const KRN_W_T *)weights->data, *b = (const KRN_W_T *)bias->data;
    KRN_IO_T *gates = (KRN_IO_T *)ir->data, *c = (KRN_IO_T *)cell->data, *y = (KRN_IO_T *)out->data;

    mli_dense_plan plan;
    int batch_done = 0; /* the fused steps ran the sequence */
    MLI_CAT(mli_prv_dense_plan_, KRN_SFX)(&plan, W, N + M, 4 * M, N, M, b, sh, batch);
#ifdef MLIPY_X86_TARGETS
    /* the fused step where it applies (same integers) */
    lstm16_fused fz;
    const int fused = !p_from_out && lstm16_fused_ok(&plan, M, N, batch, mode == RNN_BATCH_TO_BATCH ? batch : 1, sh, ir_shift,
                                      mshift, x, gates, c, y, sizeof(KRN_IO_T));
    if (fused) lstm16_fused_init(&fz, &plan, M, sh, ir_shift, mshift, act, f_ir, f_c, sizeof(KRN_W_T) == 1,
                                  KRN_BITS == 8);
#endif
#ifdef MLIPY_X86_TARGETS
    if (fused) {
        /* small steps (their chain of latencies leaves the processor idle):
         * each step computes the next one's input sums (two slots of
         * s_all); larger ones: the hoisted sums of blocks of steps */
        const int per_step = (long)4 * M * N <= 4096;
        const long gs = (long)plan.groups * MLI_DOT_GROUP;
        if (per_step) lstm16_first_sums(&fz, x, plan.s_all, sizeof(KRN_W_T) == 1, KRN_BITS == 8);
        for (long t = 0; t < batch; t++) {
            if (t > 0 && mlipy_poll_now(t - 1)) return MLIPY_STATUS_INTERRUPTED;
            KRN_IO_T *h_out = mode == RNN_BATCH_TO_BATCH ? y + t * M : y;
            const int64_t *si = plan.s_all + (t & 1) * gs;
            int64_t *sn = plan.s_all + ((t + 1) & 1) * gs;
            const KRN_IO_T *xn = per_step && t + 1 < batch ? x + (t + 1) * N : NULL;
            if (!per_step) {
                si = MLI_CAT(mli_prv_dense_ready_, KRN_SFX)(&plan, x, N, t, batch);
                if (!si) { /* a single step: its input sums as a block of one */
                    MLI_CAT(mli_prv_dense_hoist_, KRN_SFX)(&plan, x + t * N, N, 1);
                    si = plan.s_all;
                }
            }
            if (KRN_BITS == 8) (per_step ? lstm8_fused_step_n : lstm8_fused_step)(&fz, si, h, gates, c, h_out, xn, sn);
            else if (sizeof(KRN_W_T) == 2)
                (per_step ? lstm16_fused_step_n : lstm16_fused_step)(&fz, si, h, gates, c, h_out, xn, sn);
            else (per_step ? lstm16w8_fused_step_n : lstm16w8_fused_step)(&fz, si, h, gates, c, h_out, xn, sn);
            h = h_out;
        }
        batch_done = 1;
    }
#endif
#ifdef MLIPY_X86_TARGETS
    /* the AVX2 fused step where it applies (same integers) */
    lstm_avx2 fa;
    if (!batch_done && !p_from_out &&
        lstm16_fused_disjoint(M, N, batch, mode == RNN_BATCH_TO_BATCH ? batch : 1, x, gates, c, y, sizeof(KRN_IO_T)) &&
        lstm_avx2_init(&fa, &plan, M, N, sh, ir_shift, mshift, act, f_ir, f_c, sizeof(KRN_W_T) == 1, KRN_BITS == 8, h,
                       gates, sizeof(KRN_IO_T))) {
        const long ss = (long)plan.groups * REC_START_STRIDE;
        /* small steps: each step computes the next one's start values (two
         * slots); larger ones (weights beyond L1): those of blocks of
         * MLI_DENSE_HOIST_STEPS steps, each weight load serving 4 steps */
        const int per_step = (long)4 * M * N <= 4096;
        int32_t *s_start = (int32_t *)(void *)plan.s_all;
        if (per_step && batch > 0) {
            if (KRN_BITS == 8) lstm_avx2_step8_first(&fa, x, s_start);
            else if (sizeof(KRN_W_T) == 2) lstm_avx2_step16_first(&fa, x, s_start);
            else lstm_avx2_step16w8_first(&fa, x, s_start);
        }
        for (long t = 0; t < batch; t++) {
            if (t > 0 && mlipy_poll_now(t - 1)) return MLIPY_STATUS_INTERRUPTED;
            KRN_IO_T *h_out = mode == RNN_BATCH_TO_BATCH ? y + t * M : y;
            const int32_t *st = s_start + (t & 1) * ss;
            int32_t *stn = s_start + ((t + 1) & 1) * ss;
            const KRN_IO_T *xn = t + 1 < batch ? x + (t + 1) * N : NULL;
            if (!per_step) {
                const long j = t % MLI_DENSE_HOIST_STEPS;
                if (j == 0) {
                    const int cnt = (int)(batch - t < MLI_DENSE_HOIST_STEPS ? batch - t : MLI_DENSE_HOIST_STEPS);
                    if (KRN_BITS == 8) lstm_avx2_step8_steps(&fa, x + t * N, cnt, s_start);
                    else if (sizeof(KRN_W_T) == 2) lstm_avx2_step16_steps(&fa, x + t * N, cnt, s_start);
                    else lstm_avx2_step16w8_steps(&fa, x + t * N, cnt, s_start);
                }
                st = s_start + j * ss;
                xn = NULL;
            }
            if (KRN_BITS == 8) lstm_avx2_step8(&fa, st, h, gates, c, h_out, xn, stn);
            else if (sizeof(KRN_W_T) == 2) lstm_avx2_step16(&fa, st, h, gates, c, h_out, xn, stn);
            else lstm_avx2_step16w8(&fa, st, h, gates, c, h_out, xn, stn);
            h = h_out;
        }
        batch_done = 1;
    }
#endif
    for (long t = 0; t < batch && !batch_done; t++) {
        if (t > 0 && mlipy_poll_now(t - 1)) return MLIPY_STATUS_INTERRUPTED;
        KRN_IO_T *h_out = mode == RNN_BATCH_TO_BATCH ? y + t * M : y;
        const int64_t *ready = MLI_CAT(mli_prv_dense_ready_, KRN_SFX)(&plan, x, N, t, batch);
        MLI_CAT(mli_prv_dense_step_, KRN_SFX)(&plan, x + t * N, N, h, M, W, N + M, b, 4 * M, sh, ready, gates);
        MLI_CAT(lstm_gates_, KRN_SFX)(gates, M, f_ir);
        MLI_CAT(lstm_cell_update_, KRN_SFX)(gates, M, c, ir_shift);
        if (p_from_out) MLI_CAT(hidden_, KRN_SFX)(h_out, gates + 3 * M, M, mshift, mlipy_rounding_up, h_out);
        else MLI_CAT(lstm_hidden_, KRN_SFX)(gates, M, c, f_c, act, mshift, h_out);
        h = h_out;
    }

    if (mode == RNN_ONE_TO_ONE || mode == RNN_BATCH_TO_LAST) {
        out->rank = 1;
        out->shape[0] = (uint32_t)M;
    } else { /* batch-to-batch, and any other mode value (SPEC 12.3) */
        out->rank = 2;
        out->shape[0] = (uint32_t)batch;
        out->shape[1] = (uint32_t)M;
    }
    out->el_type = in->el_type;
    out->el_params.fx.frac_bits = (uint8_t)(p_from_out ? 0 : (act == RNN_ACT_NONE ? f_h : q));
    return MLI_STATUS_OK;
}

#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
#undef KRN_WIDE_T
