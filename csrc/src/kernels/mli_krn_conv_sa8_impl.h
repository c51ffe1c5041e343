/* Template body of one sa8 convolution family (SPEC_MLI11_MORE 4-5):
 * CONV_FN (the dispatcher), its _generic and specialised variants from
 * CONV_LIST and CONV_DEBUG_FN.  Parameters: CONV_FN, CONV_DEBUG_FN,
 * CONV_LIST (an X-macro list of mli_krn_variants_more.h), CONV_DEPTHWISE
 * (0: conv2d_nhwc, 1: depthwise_conv2d_hwcn).
 *
 * The accumulators are MLI's: conv2d_nhwc adds the weights' sums and the
 * products of channel pairs in the DSP's ACC0 (40 bits, read back
 * saturated to 32) and those of an odd last channel in C int; its 1x1
 * variant adds every product in ACC0; depthwise adds everything in C int.
 * The sums below are exact: ACC0 is emulated step by step only where a
 * partial sum could reach its 40-bit limit. */
#if !defined(CONV_FN) || !defined(CONV_DEBUG_FN) || !defined(CONV_LIST) || !defined(CONV_DEPTHWISE)
#error "define CONV_FN, CONV_DEBUG_FN, CONV_LIST and CONV_DEPTHWISE first"
#endif

#define CONV_F(name) MLI_CAT(CONV_FN, name)

#if !CONV_DEPTHWISE
/* The weights' and the products' pair sums of one window, step by step in
 * MLI's order (pairs outer, window rows and columns inner), each step
 * saturating ACC0 at 40 bits; returns ACC0 read back. */
static int32_t CONV_F(_acc0_steps)(const conv_plan *p, const int8_t *xs, const int8_t *ws, int64_t rows,
                                   int64_t cols, int64_t init, bool weights_only) {
    int64_t acc = init;
    const int64_t m = mli_math_sa8_neg_zp(p->in_zp);
    for (int64_t ic = 0; ic + 1 < p->c_in; ic += 2)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                const int8_t *wr = ws + i * p->w_rs + j * p->w_cs + ic;
                if (weights_only) {
                    acc = mli_math_acc40_add(acc, m * wr[0] + m * wr[1]);
                } else {
                    const int8_t *xr = xs + i * p->in_rs + j * p->in_cs + ic;
                    acc = mli_math_acc40_add(acc, (int64_t)xr[0] * wr[0] + (int64_t)xr[1] * wr[1]);
                }
            }
    return mli_math_acc0_read(acc);
}

/* The weights' part of ACC0 before the products: -zp times the weights'
 * sums of the channel pairs, then (C int) of an odd last channel. */
static int32_t CONV_F(_wadd)(const conv_plan *p, const int8_t *ws, int64_t rows, int64_t cols, int64_t w_pairs,
                             int64_t w_last) {
    const int64_t m = mli_math_sa8_neg_zp(p->in_zp), pair_ops = (p->c_in / 2) * rows * cols;
    int32_t wadd = 0;
    if (m != 0) {
        if (pair_ops > 0)
            wadd = mli_math_acc0_exact(pair_ops) ? mli_math_acc0_read(m * w_pairs)
                                                    : CONV_F(_acc0_steps)(p, NULL, ws, rows, cols, 0, true);
        if (p->c_in & 1) wadd = mli_math_wrap32((int64_t)wadd + m * w_last);
    }
    return wadd;
}

/* The accumulator of one conv2d_nhwc output before its bias: ACC0 = the
 * weights' sum times -zp for the channel pairs, then C int adds that of
 * an odd last channel; ACC0 = that, plus the pairs' products; C int adds the
 * odd channel's products.  `pointwise`: the 1x1 loop, which adds every
 * channel's products in ACC0. */
static int32_t CONV_F(_acc)(const conv_plan *p, const int8_t *xs, const int8_t *ws, int64_t rows, int64_t cols,
                            bool pointwise) {
    const int64_t c = p->c_in, pairs_end = c & ~(int64_t)1, last = c - 1;
    int64_t dot_pairs = 0, w_pairs = 0, dot_last = 0, w_last = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            const int8_t *xr = xs + i * p->in_rs + j * p->in_cs, *wr = ws + i * p->w_rs + j * p->w_cs;
            /* 32-bit partial sums of at most 2^16 channels (|d| <= 2^30): a loop the compiler vectorises */
            for (int64_t c0 = 0; c0 < pairs_end; c0 += 65536) {
                const int64_t c1 = pairs_end - c0 < 65536 ? pairs_end : c0 + 65536;
                int32_t d = 0, s = 0;
                for (int64_t ic = c0; ic < c1; ic++) {
                    d += xr[ic] * wr[ic];
                    s += wr[ic];
                }
                dot_pairs += d;
                w_pairs += s;
            }
            if (c & 1) {
                dot_last += xr[last] * wr[last];
                w_last += wr[last];
            }
        }
    const int32_t wadd = CONV_F(_wadd)(p, ws, rows, cols, w_pairs, w_last);
    if (pointwise) /* steps of at most two products (2^15): 2^39 is 2^24 steps beyond a 32-bit start */
        return mli_math_acc0_read((int64_t)wadd + dot_pairs + dot_last);
    const int64_t pair_ops = (c / 2) * rows * cols;
    int32_t acc = wadd;
    if (pair_ops > 0)
        acc = mli_math_acc0_exact(pair_ops) ? mli_math_acc0_read((int64_t)wadd + dot_pairs)
                                                  : CONV_F(_acc0_steps)(p, xs, ws, rows, cols, wadd, false);
    if (c & 1) acc = mli_math_wrap32((int64_t)acc + dot_last);
    return acc;
}

/* An output of the 1x1 loop whose input pixel starts at byte `at` and
 * reaches beyond in.capacity (the stride bug): there MLI reads whatever
 * memory follows the buffer.  Its value is defined when every int8 those
 * bytes could hold gives the same output; the bounds of the sum over them
 * give the bounds of the output, as the read-out is monotonic where the
 * bias add does not wrap.  *defined tells. */
static int8_t CONV_F(_pointwise_beyond)(const conv_plan *p, const int8_t *x, int64_t at, const int8_t *ws,
                                        int32_t bias, int64_t o, bool *defined) {
    int64_t known = 0, lo = 0, hi = 0, w_pairs = 0, w_last = 0;
    for (int64_t ic = 0; ic < p->c_in; ic++) {
        const int64_t wv = ws[ic];
        if (at + ic >= 0 && at + ic < p->in_cap)
            known += x[at + ic] * wv;
        else {
            lo += wv < 0 ? 127 * wv : -128 * wv;
            hi += wv < 0 ? -128 * wv : 127 * wv;
        }
        if (ic < (p->c_in & ~(int64_t)1))
            w_pairs += wv;
        else
            w_last += wv;
    }
    const int64_t wadd = CONV_F(_wadd)(p, ws, 1, 1, w_pairs, w_last);
    const int64_t acc_lo = (int64_t)mli_math_acc0_read(wadd + known + lo) + bias;
    const int64_t acc_hi = (int64_t)mli_math_acc0_read(wadd + known + hi) + bias;
    const bool no_wrap = acc_lo >= INT32_MIN && acc_hi <= INT32_MAX;
    const int8_t y = conv_out_value(p, o, mli_math_wrap32(acc_lo));
    *defined = no_wrap && y == conv_out_value(p, o, mli_math_wrap32(acc_hi));
    return y;
}

/* The 1x1 loop: each output row's input address skips too few pixels when
 * stride_width > 1 (SPEC_MLI11_MORE 3.6).  With `y` NULL, only tells
 * whether every output whose pixel reaches beyond in.capacity is defined. */
static bool CONV_F(_pointwise)(const int8_t *x, const int8_t *w, const int32_t *b, int8_t *y, const conv_plan *p) {
    const mli_prv_geom *g = &p->g;
    const int64_t drift = p->in_cs * g->out_w * (g->sw - 1);
    for (int64_t o = 0; o < p->c_out; o++)
        for (int64_t r = 0; r < g->out_h; r++)
            for (int64_t c = 0; c < g->out_w; c++) {
                const int64_t at = o * g->out_h * drift + r * (p->in_rs * g->sh + drift) + c * p->in_cs * g->sw;
                const int8_t *ws = w + o * p->w_ocs;
                if (at < 0 || at + p->c_in > p->in_cap) {
                    bool defined;
                    const int8_t v = CONV_F(_pointwise_beyond)(p, x, at, ws, b[o], o, &defined);
                    if (!defined) return false;
                    if (y) y[r * p->out_rs + c * p->out_cs + o] = v;
                } else if (y) {
                    const int32_t acc = CONV_F(_acc)(p, x + at, ws, 1, 1, true);
                    y[r * p->out_rs + c * p->out_cs + o] = conv_out_value(p, o, mli_math_wrap32((int64_t)acc + b[o]));
                }
            }
    return true;
}

static void CONV_F(_compute)(const int8_t *x, const int8_t *w, const int32_t *b, int8_t *y, const conv_plan *p) {
    const mli_prv_geom *g = &p->g;
    if (p->core == MLI_CORE_POINTWISE) {
        CONV_F(_pointwise)(x, w, b, y, p);
        return;
    }
    for (int i = 0; i < p->n_areas; i++) {
        const mli_prv_area *a = &p->areas[i];
        for (int64_t o = 0; o < p->c_out; o++)
            for (int64_t r = a->row_beg; r < a->row_end; r++)
                for (int64_t c = a->clmn_beg; c < a->clmn_end; c++) {
                    const mli_prv_win v = mli_prv_window(g, a->kind, r, c);
                    const int8_t *xs = x + v.y * p->in_rs + v.x * p->in_cs;
                    const int8_t *ws = w + o * p->w_ocs + v.ky * p->w_rs + v.kx * p->w_cs;
                    const int32_t acc = CONV_F(_acc)(p, xs, ws, v.rows, v.cols, false);
                    y[r * p->out_rs + c * p->out_cs + o] = conv_out_value(p, o, mli_math_wrap32((int64_t)acc + b[o]));
                }
    }
}
#else
/* One depthwise output channel oc of input channel ic over window v: C int
 * sums, (x - zp) * w + bias. */
static inline int32_t CONV_F(_acc)(const conv_plan *p, const int8_t *x, const int8_t *w, const mli_prv_win *v,
                                   int64_t ic, int64_t oc) {
    const int8_t *xs = x + v->y * p->in_rs + v->x * p->in_cs + ic;
    const int8_t *ws = w + v->ky * p->w_rs + v->kx * p->w_cs + oc;
    int64_t dot = 0, wsum = 0;
    for (int64_t i = 0; i < v->rows; i++)
        for (int64_t j = 0; j < v->cols; j++) {
            const int8_t wv = ws[i * p->w_rs + j * p->w_cs];
            dot += xs[i * p->in_rs + j * p->in_cs] * wv;
            wsum += wv;
        }
    return mli_math_wrap32(dot + (int64_t)mli_math_sa8_neg_zp(p->in_zp) * wsum);
}

/* One area for the output channels of input channels [ic0, ic0 + lanes) and
 * multiplier index k: MLI's two-lane loop writes channels 2jm + 2k + e
 * (e = 0, 1) of input channels 2j + e together; an odd last input channel
 * feeds the last m outputs (SPEC_MLI11_MORE 5). */
static void CONV_F(_area)(const int8_t *x, const int8_t *w, const int32_t *b, int8_t *y, const conv_plan *p,
                          const mli_prv_area *a, int64_t ic0, int64_t oc0, int lanes) {
    for (int64_t r = a->row_beg; r < a->row_end; r++)
        for (int64_t c = a->clmn_beg; c < a->clmn_end; c++) {
            const mli_prv_win v = mli_prv_window(&p->g, a->kind, r, c);
            for (int e = 0; e < lanes; e++) {
                const int64_t oc = oc0 + e;
                const int32_t acc = mli_math_wrap32((int64_t)CONV_F(_acc)(p, x, w, &v, ic0 + e, oc) + b[oc]);
                y[r * p->out_rs + c * p->out_cs + oc] = conv_out_value(p, oc, acc);
            }
        }
}

static void CONV_F(_compute)(const int8_t *x, const int8_t *w, const int32_t *b, int8_t *y, const conv_plan *p) {
    const int64_t m = p->c_out / p->c_in;
    for (int i = 0; i < p->n_areas; i++) {
        const mli_prv_area *a = &p->areas[i];
        int64_t ic = 0;
        for (; ic + 1 < p->c_in; ic += 2)
            for (int64_t k = 0; k < m; k++) CONV_F(_area)(x, w, b, y, p, a, ic, ic * m + 2 * k, 2);
        if (ic < p->c_in)
            for (int64_t k = 0; k < m; k++) CONV_F(_area)(x, w, b, y, p, a, ic, ic * m + k, 1);
    }
}
#endif

static mli_status CONV_F(_run)(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                               const mli_conv2d_cfg *cfg, mli_tensor *out, const mli_prv_variant *v) {
#if CONV_DEPTHWISE
    mli_status st = mli_chk_depthwise_hwcn_sa8(in, weights, bias, cfg, out);
#else
    mli_status st = mli_chk_conv2d_nhwc_sa8(in, weights, bias, cfg, out);
#endif
    if (st != MLI_STATUS_OK) return st;
    conv_plan p;
    st = conv_plan_make(in, weights, bias, cfg, out, v, CONV_DEPTHWISE, &p);
    if (st != MLI_STATUS_OK) return st;
#if !CONV_DEPTHWISE
    if (p.in_beyond && !CONV_F(_pointwise)((const int8_t *)in->data, (const int8_t *)weights->data,
                                           (const int32_t *)bias->data, NULL, &p))
        return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "in", "capacity",
                                "is exceeded by what MLI reads for this call (the 1x1 variant's stride bug, "
                                "SPEC_MLI11_MORE 3.6), and the output depends on the bytes beyond the buffer");
#endif
    conv_set_out(in, out, &p);
    CONV_F(_compute)((const int8_t *)in->data, (const int8_t *)weights->data, (const int32_t *)bias->data,
                     (int8_t *)out->data, &p);
    return MLI_STATUS_OK;
}

#define CONV_ROW(sfx, ...) MLI_PRV_VARIANT_ROW(MLI_STR(CONV_FN), sfx, __VA_ARGS__)
static const mli_prv_variant CONV_F(_table)[] = {CONV_LIST(CONV_ROW)};
#define CONV_INDEX(sfx, ...) CONV_F(_i_##sfx),
enum { CONV_LIST(CONV_INDEX) CONV_F(_n) };

#define CONV_ENTRY(sfx, ...)                                                                                   \
    mli_status CONV_F(_##sfx)(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,         \
                              const mli_conv2d_cfg *cfg, mli_tensor *out) {                                    \
        mlipy_err_reset(MLI_STR(CONV_FN) "_" #sfx);                                                            \
        return CONV_F(_run)(in, weights, bias, cfg, out, &CONV_F(_table)[CONV_F(_i_##sfx)]);                   \
    }
CONV_LIST(CONV_ENTRY)

/* MLI's dispatcher reads the weights' kernel size and the cfg before any check. */
static const mli_prv_variant *CONV_F(_pick)(const mli_tensor *weights, const mli_conv2d_cfg *cfg) {
    if (!weights) {
        mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "weights", "", "is NULL (MLI's dispatcher reads it before any check)");
        return NULL;
    }
    if (!cfg) {
        mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", "is NULL (MLI's dispatcher reads it before any check)");
        return NULL;
    }
    return mli_prv_variant_pick(CONV_F(_table), CONV_F(_n), mli_math_wrap32(weights->shape[2]),
                                mli_math_wrap32(weights->shape[1]), cfg->stride_width, cfg->stride_height,
                                cfg->padding_top, cfg->padding_bottom, cfg->padding_left, cfg->padding_right);
}

mli_status CONV_FN(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias, const mli_conv2d_cfg *cfg,
                   mli_tensor *out) {
    mlipy_err_reset(MLI_STR(CONV_FN));
    const mli_prv_variant *v = CONV_F(_pick)(weights, cfg);
    if (!v) return mlipy_last_error()->status;
    return CONV_F(_run)(in, weights, bias, cfg, out, v);
}

char *CONV_DEBUG_FN(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                    const mli_conv2d_cfg *cfg, mli_tensor *out) {
    (void)in;
    (void)bias;
    (void)out;
    mlipy_err_reset(MLI_STR(CONV_DEBUG_FN));
    const mli_prv_variant *v = CONV_F(_pick)(weights, cfg);
    return v ? (char *)v->name : NULL;
}

#undef CONV_ROW
#undef CONV_INDEX
#undef CONV_ENTRY
#undef CONV_F
#undef CONV_FN
#undef CONV_DEBUG_FN
#undef CONV_LIST
#undef CONV_DEPTHWISE
