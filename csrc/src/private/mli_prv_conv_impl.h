/* Template body of the convolution computations of one type
 * (mli_prv_conv_<CONV_SFX>: mli_prv_conv_chw_* and mli_prv_conv_hwc_*).
 * Parameters: CONV_SFX, CONV_IO_T (data and output), CONV_W_T (weights and
 * bias), CONV_ACC40 (1: fx16's 40-bit accumulator and 16-bit read-out;
 * 0: fx8 / fx8w16d, ACC0 read out through a 32-bit register).
 *
 * SPEC_MLI11_MORE.md 3.4 and 4: a sum starts from the bias shifted left with
 * saturation (to 40 bits for fx16, to 32 for the others).  Every MAC step
 * (one product, or two added together) saturates the 40-bit accumulator;
 * fx8 / fx8w16d read it out saturated to 32 bits.  In the LANES pattern
 * fx16 keeps two such accumulators, fx8 / fx8w16d two C int32 that wrap.
 * conv2d_hwc fx8 / fx8w16d add the products of an odd last channel to the
 * 32-bit read-out in C int arithmetic (wrapping).  The result is rounded
 * (DSP mode), clamped to the ReLU limits (min first, then max) and stored in
 * the low bits of the output container. */
#if !defined(CONV_SFX) || !defined(CONV_IO_T) || !defined(CONV_W_T) || !defined(CONV_ACC40)
#error "define CONV_SFX, CONV_IO_T, CONV_W_T and CONV_ACC40 first"
#endif

#include "mli_math.h"
#include "mli_prv_template.h"

#define CONV_CTX MLI_CAT(conv_ctx_, CONV_SFX)
#define CONV_FN(name) MLI_CAT(MLI_CAT(conv_, name), MLI_CAT(_, CONV_SFX))

typedef struct {
    const mli_conv_geom *g;
    const mli_conv_hwc_geom *hg;
    mli_conv_out_fmt fmt;
    const CONV_IO_T *in;
    const CONV_W_T *w;
    const CONV_W_T *b;
    CONV_IO_T *out;
} CONV_CTX;

static inline int64_t CONV_FN(init)(const CONV_CTX *c, int bias) {
    return mli_math_bias_acc(c->b[bias], c->fmt.bias_shift, CONV_ACC40 ? 40 : 32);
}
/* One MAC step of the scalar accumulator (40 bits, saturating). */
static inline int64_t CONV_FN(step)(int64_t acc, int64_t p) { return mli_math_sat40(acc + p); }
/* One step of a lane of the two-output loops. */
static inline int64_t CONV_FN(lane)(int64_t acc, int64_t p) {
    return CONV_ACC40 ? mli_math_sat40(acc + p) : mli_math_wrap32(acc + p);
}
static inline CONV_IO_T CONV_FN(store)(const CONV_CTX *c, int64_t acc) {
    int32_t y = CONV_ACC40 ? (int32_t)mli_math_read16(acc, c->fmt.out_shift)
                           : mli_math_asr32(mli_math_sat32(acc), c->fmt.out_shift);
    y = mli_math_relu_clip(y, c->fmt.lo, c->fmt.hi);
    return (CONV_IO_T)(sizeof(CONV_IO_T) == 1 ? mli_math_trunc8(y) : mli_math_trunc16(y));
}

static void CONV_FN(visit_chw)(void *vctx, const mli_conv_point *p) {
    const CONV_CTX *c = (const CONV_CTX *)vctx;
    const mli_conv_geom *g = c->g;
    const int64_t plane = (int64_t)g->in_w * g->in_h, kk = (int64_t)g->kw * g->kh;
    const int64_t irow = g->in_w, wrow = g->kw;
    const CONV_IO_T *x0 = c->in + p->in;
    const CONV_W_T *w0 = c->w + p->w;
    int64_t a = CONV_FN(init)(c, p->bias);
    switch (p->pat) {
    case MLI_CONV_PAT_LANES: {
        int64_t a1 = a;
        for (int ch = 0; ch < p->nch; ch++)
            for (int r = 0; r < p->rows; r++) {
                const CONV_IO_T *x = x0 + ch * plane + r * irow;
                const CONV_W_T *w = w0 + ch * kk + r * wrow;
                for (int col = 0; col < p->clmns; col++) {
                    a = CONV_FN(lane)(a, (int32_t)x[col] * w[col]);
                    a1 = CONV_FN(lane)(a1, (int32_t)x[col + 1] * w[col]);
                }
            }
        c->out[p->out] = CONV_FN(store)(c, a);
        c->out[p->out + 1] = CONV_FN(store)(c, a1);
        return;
    }
    case MLI_CONV_PAT_PAIRS:
        for (int ch = 0; ch < p->nch; ch++)
            for (int r = 0; r < p->rows; r++) {
                const CONV_IO_T *x = x0 + ch * plane + r * irow;
                const CONV_W_T *w = w0 + ch * kk + r * wrow;
                int col = 0;
                for (; col + 1 < p->clmns; col += 2)
                    a = CONV_FN(step)(a, (int64_t)x[col] * w[col] + (int64_t)x[col + 1] * w[col + 1]);
                if (col < p->clmns) a = CONV_FN(step)(a, (int32_t)x[col] * w[col]);
            }
        break;
    case MLI_CONV_PAT_ODDEVEN: {
        int cl = p->clmns, first = 0;
        if (cl & 1) {
            for (int ch = 0; ch < p->nch; ch++)
                for (int r = 0; r < p->rows; r++)
                    a = CONV_FN(step)(a, (int32_t)x0[ch * plane + r * irow] * w0[ch * kk + r * wrow]);
            cl--;
            first = 1;
        }
        for (int ch = 0; ch < p->nch; ch++)
            for (int r = 0; r < p->rows; r++) {
                const CONV_IO_T *x = x0 + ch * plane + r * irow + first;
                const CONV_W_T *w = w0 + ch * kk + r * wrow + first;
                for (int j = 0; j < cl / 2; j++)
                    a = CONV_FN(step)(a, (int64_t)x[2 * j] * w[2 * j] + (int64_t)x[2 * j + 1] * w[2 * j + 1]);
            }
        break;
    }
    default: /* MLI_CONV_PAT_SINGLE */
        for (int ch = 0; ch < p->nch; ch++)
            for (int r = 0; r < p->rows; r++) {
                const CONV_IO_T *x = x0 + ch * plane + r * irow;
                const CONV_W_T *w = w0 + ch * kk + r * wrow;
                for (int col = 0; col < p->clmns; col++) a = CONV_FN(step)(a, (int32_t)x[col] * w[col]);
            }
        break;
    }
    c->out[p->out] = CONV_FN(store)(c, a);
}

static void CONV_FN(visit_hwc)(void *vctx, const mli_conv_point *p) {
    const CONV_CTX *c = (const CONV_CTX *)vctx;
    const mli_conv_hwc_geom *g = c->hg;
    const CONV_IO_T *x0 = c->in + p->in;
    const CONV_W_T *w0 = c->w + p->w;
    const int C = g->ch;
    int64_t a = CONV_FN(init)(c, p->bias);
    int ch = 0;
    if (p->pat == MLI_CONV_PAT_HWC_1X1) { /* fx16: pairs up to a multiple of 4, then one by one */
        for (; ch < (C & ~3); ch += 2) a = CONV_FN(step)(a, (int64_t)x0[ch] * w0[ch] + (int64_t)x0[ch + 1] * w0[ch + 1]);
        for (; ch < C; ch++) a = CONV_FN(step)(a, (int32_t)x0[ch] * w0[ch]);
        c->out[p->out] = CONV_FN(store)(c, a);
        return;
    }
    for (; ch < C - 1; ch += 2)
        for (int r = 0; r < p->rows; r++)
            for (int col = 0; col < p->clmns; col++) {
                const CONV_IO_T *x = x0 + r * g->in_rs + col * g->in_cs + ch;
                const CONV_W_T *w = w0 + r * g->w_rs + col * g->w_cs + ch;
                a = CONV_FN(step)(a, (int64_t)x[0] * w[0] + (int64_t)x[1] * w[1]);
            }
    if (C & 1) {
        if (!CONV_ACC40) a = mli_math_sat32(a); /* the register MLI's C loop adds to */
        for (int r = 0; r < p->rows; r++)
            for (int col = 0; col < p->clmns; col++) {
                const int64_t prod = (int32_t)x0[r * g->in_rs + col * g->in_cs + ch] * w0[r * g->w_rs + col * g->w_cs + ch];
                a = CONV_ACC40 ? CONV_FN(step)(a, prod) : mli_math_wrap32(a + prod);
            }
    }
    c->out[p->out] = CONV_FN(store)(c, a);
}

void MLI_CAT(mli_prv_conv_chw_, CONV_SFX)(mli_conv_core core, const mli_conv_geom *g, mli_conv_out_fmt fmt,
                                         const CONV_IO_T *in, const CONV_W_T *w, const CONV_W_T *b,
                                         CONV_IO_T *out) {
    CONV_CTX c = {g, NULL, fmt, in, w, b, out};
    mli_prv_conv_chw_walk(core, g, CONV_FN(visit_chw), &c);
}

void MLI_CAT(mli_prv_conv_hwc_, CONV_SFX)(mli_conv_hwc_path path, const mli_conv_hwc_geom *g,
                                         mli_conv_out_fmt fmt, const CONV_IO_T *in, const CONV_W_T *w,
                                         const CONV_W_T *b, CONV_IO_T *out) {
    CONV_CTX c = {NULL, g, fmt, in, w, b, out};
    mli_prv_conv_hwc_walk(path, g, CONV_FN(visit_hwc), &c);
}

#undef CONV_CTX
#undef CONV_FN
#undef CONV_SFX
#undef CONV_IO_T
#undef CONV_W_T
#undef CONV_ACC40
