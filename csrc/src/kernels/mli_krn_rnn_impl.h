/* Template body of mli_krn_basic_rnn_cell_<KRN_SFX> (SPEC.md section 9).
 * Parameters: KRN_SFX, KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL, KRN_W_EL. */
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_W_T) || !defined(KRN_BITS) || \
    !defined(KRN_DATA_EL) || !defined(KRN_W_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL and KRN_W_EL first"
#endif

mli_status MLI_CAT(mli_krn_basic_rnn_cell_, KRN_SFX)(const mli_tensor *in, const mli_tensor *prev_out,
                                                     const mli_tensor *weights, const mli_tensor *bias,
                                                     const mli_rnn_cell_cfg *cfg, mli_tensor *out) {
    mlipy_err_reset("mli_krn_basic_rnn_cell_" MLI_STR(KRN_SFX));
    const mli_chk_kind kind = {KRN_DATA_EL, KRN_W_EL};
    bool skip = false;
    mli_status st = mli_chk_basic_rnn_cell(in, prev_out, weights, bias, cfg, out, kind, &skip);
    if (st != MLI_STATUS_OK || skip) return st;

    const mli_rnn_mode mode = cfg->mode;
    const mli_rnn_out_activation act = cfg->act;
    /* mode and act may hold any value (SPEC 12.3): every mode but one-to-one
     * reads a batch; an act other than TANH/SIGM runs no activation. */
    const int b2b = mode == RNN_BATCH_TO_BATCH, b2l = mode == RNN_BATCH_TO_LAST;
    const int activate = act == RNN_ACT_TANH || act == RNN_ACT_SIGM;
    const long batch = mode == RNN_ONE_TO_ONE ? 1 : (long)in->shape[0];
    const int K = (int)mli_prv_count(bias, 0), M = (int)mli_prv_count(prev_out, 0);
    const int N = (int)(mode == RNN_ONE_TO_ONE ? mli_prv_count(in, 0) : mli_prv_count(in, 1));
    const int f_in = in->el_params.fx.frac_bits, f_h = prev_out->el_params.fx.frac_bits;
    const int f_w = weights->el_params.fx.frac_bits;
    /* Dense results carry 3 integer bits unless act is NONE. */
    const int f_d = act == RNN_ACT_NONE ? out->el_params.fx.frac_bits : KRN_BITS - 4;
    /* Computed once from the ORIGINAL state's frac bits, even for later steps. */
    const mli_dense_shifts sh = {f_in + f_w - bias->el_params.fx.frac_bits, f_in - f_h, f_h + f_w - f_d};
    const mli_lut *lut = act == RNN_ACT_TANH ? &mli_prv_tanh_lut : &mli_prv_sigm_lut;

    const KRN_IO_T *x = (const KRN_IO_T *)in->data, *h = (const KRN_IO_T *)prev_out->data;
    const KRN_W_T *W = (const KRN_W_T *)weights->data, *b = (const KRN_W_T *)bias->data;
    KRN_IO_T *y = (KRN_IO_T *)out->data;
    KRN_IO_T *ir = b2l ? (KRN_IO_T *)cfg->ir_tsr->data : NULL;

    mli_dense_plan plan;
    MLI_CAT(mli_prv_dense_plan_, KRN_SFX)(&plan, W, N + M, K, N, M, b, sh, batch);
    int batch_done = 0;
#ifdef MLIPY_X86_TARGETS
    /* the AVX2 fused step where it applies (same integers): each step's
     * outputs go where the stepped path leaves them (the dense results
     * apart only where they differ from the step's output) */
    rnn_avx2 fa;
    if ((mode == RNN_ONE_TO_ONE || b2b || (b2l && (activate || act == RNN_ACT_NONE))) &&
        rnn_avx2_init(&fa, &plan, K, M, N, batch, sh, activate, lut, f_d, sizeof(KRN_W_T) == 1, KRN_BITS == 8, x, y,
                      (size_t)(b2b ? batch : 1) * (size_t)K, ir, ir ? (size_t)K : 0, sizeof(KRN_IO_T))) {
        const long ss = (long)plan.groups * REC_START_STRIDE;
        /* small steps: each step computes the next one's start values (two
         * slots); larger ones: those of blocks of steps (as the LSTM) */
        const int per_step = (long)K * N <= 4096;
        int32_t *s_start = (int32_t *)(void *)plan.s_all;
        if (per_step) {
            if (KRN_BITS == 8) rnn_avx2_step8_first(&fa, x, s_start);
            else if (sizeof(KRN_W_T) == 2) rnn_avx2_step16_first(&fa, x, s_start);
            else rnn_avx2_step16w8_first(&fa, x, s_start);
        }
        for (long t = 0; t < batch; t++) {
            if (t > 0 && mlipy_poll_now(t - 1)) return MLIPY_STATUS_INTERRUPTED;
            KRN_IO_T *dense_out, *step_out;
            if (b2l && act == RNN_ACT_NONE) {
                dense_out = step_out = ((batch - 1 - t) % 2 == 0) ? y : ir;
            } else {
                dense_out = (b2l ? ir : y) + (b2b ? t * K : 0);
                step_out = y + (b2b ? t * K : 0);
            }
            KRN_IO_T *dense = dense_out != step_out ? dense_out : NULL; /* batch-to-last's cfg.ir */
            const int32_t *st = s_start + (t & 1) * ss;
            int32_t *stn = s_start + ((t + 1) & 1) * ss;
            const KRN_IO_T *xn = t + 1 < batch ? x + (t + 1) * N : NULL;
            if (!per_step) {
                const long j = t % MLI_DENSE_HOIST_STEPS;
                if (j == 0) {
                    const int cnt = (int)(batch - t < MLI_DENSE_HOIST_STEPS ? batch - t : MLI_DENSE_HOIST_STEPS);
                    if (KRN_BITS == 8) rnn_avx2_step8_steps(&fa, x + t * N, cnt, s_start);
                    else if (sizeof(KRN_W_T) == 2) rnn_avx2_step16_steps(&fa, x + t * N, cnt, s_start);
                    else rnn_avx2_step16w8_steps(&fa, x + t * N, cnt, s_start);
                }
                st = s_start + j * ss;
                xn = NULL;
            }
            if (KRN_BITS == 8) rnn_avx2_step8(&fa, st, h, dense, step_out, xn, stn);
            else if (sizeof(KRN_W_T) == 2) rnn_avx2_step16(&fa, st, h, dense, step_out, xn, stn);
            else rnn_avx2_step16w8(&fa, st, h, dense, step_out, xn, stn);
            h = step_out;
        }
        batch_done = 1;
    }
#endif
    for (long t = 0; t < batch && !batch_done; t++) {
        if (t > 0 && mlipy_poll_now(t - 1)) return MLIPY_STATUS_INTERRUPTED;
        KRN_IO_T *dense_out, *step_out;
        if (b2l && act == RNN_ACT_NONE) { /* ping-pong so that the last step lands in out */
            dense_out = step_out = ((batch - 1 - t) % 2 == 0) ? y : ir;
        } else {
            dense_out = (b2l ? ir : y) + (b2b ? t * K : 0);
            step_out = y + (b2b ? t * K : 0);
        }
        const KRN_IO_T *xt = x + t * N;
        const int64_t *ready = MLI_CAT(mli_prv_dense_ready_, KRN_SFX)(&plan, x, N, t, batch);
        if (h == dense_out) /* other mode values: the state is read row by row as this step writes it */
            MLI_CAT(mli_prv_dense_, KRN_SFX)(xt, N, h, M, W, N + M, b, K, sh, dense_out);
        else
            MLI_CAT(mli_prv_dense_step_, KRN_SFX)(&plan, xt, N, h, M, W, N + M, b, K, sh, ready, dense_out);
        if (activate) MLI_CAT(mli_prv_act_vec, KRN_BITS)(lut, dense_out, K, f_d, step_out);
        h = step_out; /* the next state is this step's first M outputs */
    }

    if (mode == RNN_ONE_TO_ONE || b2l) {
        out->rank = bias->rank;
        for (uint32_t i = 0; i < bias->rank; i++) out->shape[i] = bias->shape[i];
    } else {
        out->rank = 2;
        out->shape[0] = (uint32_t)batch;
        out->shape[1] = (uint32_t)K;
    }
    out->el_type = in->el_type;
    if (activate) out->el_params.fx.frac_bits = KRN_BITS - 1;
    else if (act != RNN_ACT_NONE) out->el_params.fx.frac_bits = (uint8_t)f_h;
    return MLI_STATUS_OK;
}

#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
