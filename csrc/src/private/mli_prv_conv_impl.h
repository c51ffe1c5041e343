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
 * the low bits of the output container.
 *
 * When no partial sum of the call can reach 2^39 (checked once per call from
 * the largest bias and the largest |input| x |weight| of the buffers), no
 * 40-bit saturation can happen, the grouping of the products no longer
 * matters, and every output is its exact sum (`exact`: plain dot products);
 * the wrapping int32 sums are exact modulo 2^32 in either case.  When no
 * sum can reach 2^31 either, and the geometry is regular (the input holds
 * the kernel, every padding smaller than it), every loop nest computes the
 * zero-padded convolution: then the chw output planes are computed row by
 * row, the output columns innermost, in int32. */
#if !defined(CONV_SFX) || !defined(CONV_IO_T) || !defined(CONV_W_T) || !defined(CONV_ACC40)
#error "define CONV_SFX, CONV_IO_T, CONV_W_T and CONV_ACC40 first"
#endif

#include "mli_math.h"
#include "mli_prv_conv_avx2.h"
#include "mli_prv_isa.h"
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
    int exact; /* no partial sum reaches the 40-bit limit */
} CONV_CTX;

/* The largest |v[i]|, i < n, of a buffer of type T: as a minimum and a
 * maximum of T, which compilers vectorise without branches (a branch per
 * element of random sign mispredicts half the time). */
#define CONV_ABSMAX(T, name)                                                    \
    MLIPY_ALWAYS_INLINE int64_t MLI_CAT(CONV_FN(name), _body)(const T *v, int64_t n) { \
        T lo = 0, hi = 0;                                                       \
        for (int64_t i = 0; i < n; i++) {                                       \
            lo = v[i] < lo ? v[i] : lo;                                         \
            hi = v[i] > hi ? v[i] : hi;                                         \
        }                                                                       \
        return -(int64_t)lo > hi ? -(int64_t)lo : hi;                           \
    }                                                                           \
    MLIPY_MULTIVERSION(int64_t, CONV_FN(name), (const T *v, int64_t n), (v, n))
CONV_ABSMAX(CONV_IO_T, absmax_io)
CONV_ABSMAX(CONV_W_T, absmax_w)
#undef CONV_ABSMAX

/* The largest |partial sum| of the call: the largest |bias accumulator|
 * plus n products, each at most |in| x |weight| over the buffers (-1 for
 * more than 2^31 products). */
static int64_t CONV_FN(bound)(const CONV_CTX *c, mli_conv_caps caps, int64_t n) {
    const int64_t mx = CONV_FN(absmax_io)(c->in, caps.in), mw = CONV_FN(absmax_w)(c->w, caps.w);
    int64_t mb = 0;
    for (int64_t i = 0; i < caps.bias; i++) {
        const int64_t a = mli_math_bias_acc(c->b[i], c->fmt.bias_shift, CONV_ACC40 ? 40 : 32);
        mb = a < 0 ? (-a > mb ? -a : mb) : (a > mb ? a : mb);
    }
    return n >= 0 && n < ((int64_t)1 << 31) ? mb + n * mx * mw : -1;
}

/* sum of x[i] * w[i], i < n (one window row); the products fit int32 */
static inline int64_t CONV_FN(dot)(const CONV_IO_T *x, const CONV_W_T *w, int n) {
    int64_t s = 0;
    for (int i = 0; i < n; i++) s += (int32_t)x[i] * w[i];
    return s;
}

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

#define CONV_CHUNK 32
/* acc[j] = init + the sum over the taps of x[j + the tap's offset] * its
 * weight, j < n: the stride-1, no-padding run of conv_planes.  Inlined, so
 * that a call with n = CONV_CHUNK is compiled for that constant width. */
MLIPY_ALWAYS_INLINE void CONV_FN(run_sums)(const mli_conv_geom *g, const CONV_IO_T *x, const CONV_W_T *wk,
                                           int64_t plane, int icn, int32_t init, int n, int32_t *acc) {
    int32_t a[CONV_CHUNK];
    for (int j = 0; j < n; j++) a[j] = init;
    if (g->kh == 1 && g->kw == 1) /* pointwise: one tap per channel, no tap loops */
        for (int ci = 0; ci < icn; ci++, x += plane) {
            const int32_t k = wk[ci];
            for (int j = 0; j < n; j++) a[j] += (int32_t)x[j] * k;
        }
    else
        for (int ci = 0; ci < icn; ci++, x += plane, wk += g->kh * g->kw)
            for (int r = 0; r < g->kh; r++)
                for (int t = 0; t < g->kw; t++) {
                    const CONV_IO_T *xt = x + (int64_t)r * g->in_w + t;
                    const int32_t k = wk[r * g->kw + t];
                    for (int j = 0; j < n; j++) a[j] += (int32_t)xt[j] * k;
                }
    for (int j = 0; j < n; j++) acc[j] = a[j];
}

/* The regular chw case with sums below 2^31: out = init + the zero-padded
 * convolution in int32 (exact, so the order of the products is free).  With
 * stride 1 and no padding each output plane is one run (below); otherwise
 * per output row.  Chunks of outputs innermost, of a fixed width where they
 * can be, so that the compiler vectorises them and keeps the sums in
 * registers: the body is compiled once per ISA path (MLIPY_MULTIVERSION) and
 * every path computes the same integers. */
MLIPY_ALWAYS_INLINE void MLI_CAT(CONV_FN(planes), _body)(const CONV_CTX *c) {
    const mli_conv_geom *g = c->g;
    const int64_t plane = (int64_t)g->in_w * g->in_h, kk = (int64_t)g->kw * g->kh;
    /* Stride 1 without padding: output row h, column w and the virtual columns
     * w in [out_w, in_w) are q = h * in_w + w, and tap (r, t) of q reads input
     * element q + r * in_w + t, so every tap is one contiguous run over q.  The
     * virtual columns are computed and dropped; the last input read is the
     * plane's last element. */
    const int flat = g->sw == 1 && g->sh == 1 && g->pl == 0 && g->pr == 0 && g->pt == 0 && g->pb == 0 &&
                     g->out_w == g->in_w - g->kw + 1 && g->out_h == g->in_h - g->kh + 1;
    int32_t acc[CONV_CHUNK];
    for (int oc = 0; oc < g->out_ch; oc++) {
        const int icb = g->depthwise ? oc : 0, icn = g->depthwise ? 1 : g->in_ch;
        const int32_t init = (int32_t)CONV_FN(init)(c, oc);
        if (flat) {
            const int64_t len = (int64_t)(g->out_h - 1) * g->in_w + g->out_w;
            const CONV_IO_T *x0 = c->in + icb * plane;
            const CONV_W_T *wk = c->w + (int64_t)oc * icn * kk;
            CONV_IO_T *o = c->out + (int64_t)oc * g->out_w * g->out_h;
            for (int64_t q0 = 0; q0 < len; q0 += CONV_CHUNK) {
                int n = len - q0 < CONV_CHUNK ? (int)(len - q0) : CONV_CHUNK;
                int64_t start = q0;
                if (n < CONV_CHUNK && len >= CONV_CHUNK) { /* the last chunk again at full width, overlapping */
                    start = len - CONV_CHUNK;
                    n = CONV_CHUNK;
                }
                if (n == CONV_CHUNK) /* a constant width: the sums stay in registers over the taps */
                    CONV_FN(run_sums)(g, x0 + start, wk, plane, icn, init, CONV_CHUNK, acc);
                else
                    CONV_FN(run_sums)(g, x0 + start, wk, plane, icn, init, n, acc);
                int64_t h = start / g->in_w;
                int w = (int)(start - h * g->in_w);
                for (int j = 0; j < n; j++) {
                    if (w < g->out_w) o[h * g->out_w + w] = CONV_FN(store)(c, acc[j]);
                    if (++w == g->in_w) {
                        w = 0;
                        h++;
                    }
                }
            }
            continue;
        }
        for (int h = 0; h < g->out_h; h++)
            for (int w0 = 0; w0 < g->out_w; w0 += CONV_CHUNK) {
                const int n = g->out_w - w0 < CONV_CHUNK ? g->out_w - w0 : CONV_CHUNK;
                for (int j = 0; j < n; j++) acc[j] = init;
                for (int ci = 0; ci < icn; ci++)
                    for (int r = 0; r < g->kh; r++) {
                        const int row = h * g->sh - g->pt + r;
                        if (row < 0 || row >= g->in_h) continue;
                        const CONV_IO_T *x = c->in + (icb + ci) * plane + (int64_t)row * g->in_w;
                        const CONV_W_T *w = c->w + ((int64_t)oc * icn + ci) * kk + (int64_t)r * g->kw;
                        for (int t = 0; t < g->kw; t++) {
                            /* output columns whose tap t falls inside the input row */
                            const int off = t - g->pl, sw = g->sw;
                            int lo = off >= 0 ? 0 : -off, hi = g->in_w - off;
                            if (sw != 1) {
                                lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                                hi = (g->in_w - 1 - off) / sw + 1;
                            }
                            lo = lo > w0 ? lo - w0 : 0;
                            hi = hi - w0 < n ? hi - w0 : n;
                            const int32_t k = w[t];
                            const CONV_IO_T *xs = x + (int64_t)w0 * sw + off;
                            if (sw == 1)
                                for (int j = lo; j < hi; j++) acc[j] += (int32_t)xs[j] * k;
                            else
                                for (int j = lo; j < hi; j++) acc[j] += (int32_t)xs[(int64_t)j * sw] * k;
                        }
                    }
                CONV_IO_T *o = c->out + ((int64_t)oc * g->out_h + h) * g->out_w + w0;
                for (int j = 0; j < n; j++) o[j] = CONV_FN(store)(c, acc[j]);
            }
    }
}
MLIPY_MULTIVERSION_VOID(CONV_FN(planes), (const CONV_CTX *c), (c))
#undef CONV_CHUNK

#ifdef MLIPY_X86_TARGETS
/* conv_planes on AVX2 (mli_prv_conv_avx2.h): packing of this type's input
 * and weights into int16 pairs, and the read-out of 8 int32 sums. */

/* d[i] = the pair (a[i], b[i]), i < n; a NULL row is zeros. */
CONV_AVX2 static void CONV_FN(avx2_pairs)(int32_t *d, const CONV_IO_T *a, const CONV_IO_T *b, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        /* 64-bit quarters 0, 2, 1, 3, so that the in-lane unpacks give positions in order */
        const __m256i va = a ? _mm256_permute4x64_epi64(conv_avx2_load16(a + i, sizeof(CONV_IO_T)), 0xD8) : _mm256_setzero_si256();
        const __m256i vb = b ? _mm256_permute4x64_epi64(conv_avx2_load16(b + i, sizeof(CONV_IO_T)), 0xD8) : _mm256_setzero_si256();
        _mm256_storeu_si256((__m256i *)(void *)(d + i), _mm256_unpacklo_epi16(va, vb));
        _mm256_storeu_si256((__m256i *)(void *)(d + i + 8), _mm256_unpackhi_epi16(va, vb));
    }
    if (i + 8 <= n) { /* 8 more (narrow rows) */
        const __m128i va = a ? conv_avx2_load8(a + i, sizeof(CONV_IO_T)) : _mm_setzero_si128();
        const __m128i vb = b ? conv_avx2_load8(b + i, sizeof(CONV_IO_T)) : _mm_setzero_si128();
        _mm_storeu_si128((__m128i *)(void *)(d + i), _mm_unpacklo_epi16(va, vb));
        _mm_storeu_si128((__m128i *)(void *)(d + i + 4), _mm_unpackhi_epi16(va, vb));
        i += 8;
    }
    for (; i < n; i++) d[i] = conv_avx2_pair(a ? a[i] : 0, b ? b[i] : 0);
}

/* Input row `row` (from the top of the padded input: + pt) of tap row j of
 * the channels from icb, or NULL (outside the input, or no tap row j). */
static inline const CONV_IO_T *CONV_FN(avx2_tap_row)(const CONV_CTX *c, int icn, int icb, int j, int row) {
    const mli_conv_geom *g = c->g;
    if (j >= icn * g->kh) return NULL;
    row += j % g->kh - g->pt;
    if (row < 0 || row >= g->in_h) return NULL;
    return c->in + ((int64_t)icb + j / g->kh) * g->in_w * g->in_h + (int64_t)row * g->in_w;
}

/* Packed row d of output rows [h0, h0 + rows): for each, the pairs of tap
 * rows j, j + 1 at padded columns [c0, c0 + wv), zero outside the input. */
CONV_AVX2 static void CONV_FN(avx2_pack_rows)(const CONV_CTX *c, const conv_avx2_plan *p, int32_t *d, int icn,
                                              int icb, int j, int h0, int rows, int c0) {
    const mli_conv_geom *g = c->g;
    const int wv = p->wv, lo = g->pl - c0 > 0 ? g->pl - c0 : 0; /* the first column inside the input */
    const int hi = g->in_w + g->pl - c0 < wv ? g->in_w + g->pl - c0 : wv;
    for (int hh = 0; hh < rows; hh++, d += wv) {
        const int row = (h0 + hh) * g->sh;
        const CONV_IO_T *a = CONV_FN(avx2_tap_row)(c, icn, icb, j, row), *b = CONV_FN(avx2_tap_row)(c, icn, icb, j + 1, row);
        const int off = c0 + lo - g->pl; /* the input column of packed column lo */
        for (int col = 0; col < lo; col++) d[col] = 0;
        CONV_FN(avx2_pairs)(d + lo, a ? a + off : NULL, b ? b + off : NULL, hi - lo);
        for (int col = hi > lo ? hi : lo; col < wv; col++) d[col] = 0;
    }
}

/* Pack output rows [h0, h0 + rows) of the channels from icb into p->xp;
 * the entries after them that the blocks read are zeros. */
CONV_AVX2 static void CONV_FN(avx2_pack)(const CONV_CTX *c, const conv_avx2_plan *p, int icn, int icb, int h0,
                                         int rows) {
    const int64_t n = (int64_t)rows * p->wv;
    for (int i = 0; i < (p->expand ? p->T : p->M); i++) {
        const int m = p->expand ? i / p->kw : i;
        int32_t *d = p->xp + i * p->xs;
        if (p->flat) /* the tile's input rows are contiguous */
            CONV_FN(avx2_pairs)(d, CONV_FN(avx2_tap_row)(c, icn, icb, 2 * m, h0),
                                CONV_FN(avx2_tap_row)(c, icn, icb, 2 * m + 1, h0), n);
        else
            CONV_FN(avx2_pack_rows)(c, p, d, icn, icb, 2 * m, h0, rows, p->expand ? i % p->kw : 0);
        for (int64_t e = n; e < p->xs; e++) d[e] = 0;
    }
}

/* The weight pairs and start values of every output channel: tap i of
 * output channel oc at oc * T + i, except in the blocks of 4 output channels
 * (not depthwise), where the 4 channels' pairs of a tap are adjacent. */
CONV_AVX2 static void CONV_FN(avx2_pack_weights)(const CONV_CTX *c, const conv_avx2_plan *p, int icn) {
    const mli_conv_geom *g = c->g;
    const int J = icn * g->kh, kw = g->kw, T = p->T, oc_n = g->out_ch;
    const int blocked = g->depthwise ? 0 : oc_n - oc_n % 4;
    for (int oc = 0; oc < oc_n; oc++) {
        const CONV_W_T *w = c->w + (int64_t)oc * J * kw; /* tap row j starts at j * kw */
        const int in_block = oc < blocked;
        int32_t *d = p->wp + (in_block ? (int64_t)(oc - oc % 4) * T + oc % 4 : (int64_t)oc * T);
        const int step = in_block ? 4 : 1;
        int j = 0;
        if (in_block && kw == 1) { /* the block's first pairs at once (the same count for its 4 channels) */
            j = 2 * conv_avx2_pairs_4x8(w - (int64_t)(oc % 4) * J, J, d - oc % 4, sizeof(CONV_W_T), oc % 4 == 0);
            w += j;
            d += (int64_t)j / 2 * 4;
        }
        for (; j < J; j += 2, w += 2 * kw, d += kw * step)
            for (int t = 0; t < kw; t++) d[t * step] = conv_avx2_pair(w[t], j + 1 < J ? w[kw + t] : 0);
        p->init[oc] = (int32_t)CONV_FN(init)(c, oc);
    }
}

/* 8 outputs of sums `a` to o: CONV_FN(store), on int32 lanes where the
 * plan allows (p->vec_out, constants k). */
CONV_AVX2_INLINE void CONV_FN(avx2_store8)(const CONV_CTX *c, int vec_out, const conv_avx2_out *k, __m256i a,
                                           CONV_IO_T *o) {
    if (!vec_out) {
        int32_t s[8];
        _mm256_storeu_si256((__m256i *)(void *)s, a);
        for (int i = 0; i < 8; i++) o[i] = CONV_FN(store)(c, s[i]);
        return;
    }
    __m256i y = conv_avx2_rnd_shr(a, k);
    if (CONV_ACC40) y = _mm256_max_epi32(_mm256_min_epi32(y, _mm256_set1_epi32(INT16_MAX)), _mm256_set1_epi32(INT16_MIN));
    y = _mm256_max_epi32(_mm256_min_epi32(y, k->hi), k->lo);
    /* in int16 range now: the packs are exact; then the low byte (trunc8) */
    __m128i h = _mm_packs_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    if (sizeof(CONV_IO_T) == 2) {
        _mm_storeu_si128((__m128i *)(void *)o, h);
        return;
    }
    h = _mm_packus_epi16(_mm_and_si128(h, _mm_set1_epi16(0xff)), h);
    _mm_storel_epi64((__m128i *)(void *)o, h);
}

/* Output channels [oc, oc + OCB) over the packed tile's npos positions
 * into the stage, PV vectors at a time (OCB x PV: 4 x 3 or 1 x 4). */
CONV_AVX2_INLINE void CONV_FN(avx2_block)(const CONV_CTX *c, const conv_avx2_plan *p, int oc, int64_t npos,
                                          const int OCB, const int PV) {
    const int vec_out = p->vec_out, T = p->T;
    const conv_avx2_out k = conv_avx2_out_of(vec_out ? c->fmt.out_shift : 1, c->fmt.lo, c->fmt.hi, mlipy_rounding_up);
    const int32_t *xp = p->xp, *wp = p->wp + (int64_t)oc * T, *init = p->init + oc;
    const int64_t *off = p->off, ss = p->ss;
    CONV_IO_T *stage = (CONV_IO_T *)p->stage;
    __m256i acc[CONV_AVX2_ACC_MAX];
    for (int64_t q = 0; q < npos; q += 8 * PV) {
        if (OCB == 4)
            conv_avx2_sums_4x2(acc, xp + q, off, wp, T, init);
        else
            conv_avx2_sums_1x4(acc, xp + q, off, wp, T, init);
        if (vec_out) /* the branch outside the stores, so that each is straight code */
            for (int o = 0; o < OCB; o++)
                for (int v = 0; v < PV; v++) CONV_FN(avx2_store8)(c, 1, &k, acc[o * PV + v], stage + o * ss + q + 8 * v);
        else
            for (int o = 0; o < OCB; o++)
                for (int v = 0; v < PV; v++) CONV_FN(avx2_store8)(c, 0, &k, acc[o * PV + v], stage + o * ss + q + 8 * v);
    }
}
CONV_AVX2 static void CONV_FN(avx2_block4)(const CONV_CTX *c, const conv_avx2_plan *p, int oc, int64_t npos) {
    CONV_FN(avx2_block)(c, p, oc, npos, 4, 2);
}
CONV_AVX2 static void CONV_FN(avx2_block1)(const CONV_CTX *c, const conv_avx2_plan *p, int oc, int64_t npos) {
    CONV_FN(avx2_block)(c, p, oc, npos, 1, 4);
}

/* conv_planes with stride width 1 (0: not taken, or out of memory).  Per
 * tile of output rows: depthwise, each channel packed and computed alone;
 * otherwise the tile packed once for all output channels, 4 at a time. */
CONV_AVX2 static int CONV_FN(avx2_planes)(const CONV_CTX *c, int64_t bound) {
    const mli_conv_geom *g = c->g;
    const int icn = g->depthwise ? 1 : g->in_ch;
    conv_avx2_plan p;
    if (g->sw != 1 || g->out_w < 1 || g->out_h < 1 ||
        !conv_avx2_plan_init(&p, g, icn, c->fmt.out_shift, bound, sizeof(CONV_IO_T)))
        return 0;
    CONV_FN(avx2_pack_weights)(c, &p, icn);
    const int64_t oplane = (int64_t)g->out_w * g->out_h;
    for (int h0 = 0; h0 < g->out_h; h0 += p.R) {
        const int rows = g->out_h - h0 < p.R ? g->out_h - h0 : p.R;
        const int64_t npos = (int64_t)rows * p.wv;
        for (int oc = 0; oc < g->out_ch;) {
            const int nb = !g->depthwise && g->out_ch - oc >= 4 ? 4 : 1;
            if (g->depthwise || oc == 0) CONV_FN(avx2_pack)(c, &p, icn, g->depthwise ? oc : 0, h0, rows);
            if (nb == 4)
                CONV_FN(avx2_block4)(c, &p, oc, npos);
            else
                CONV_FN(avx2_block1)(c, &p, oc, npos);
            for (int o = 0; o < nb; o++)
                conv_avx2_copy_rows(c->out + (oc + o) * oplane + (int64_t)h0 * g->out_w, (CONV_IO_T *)p.stage + o * p.ss,
                                    rows, p.wv, g->out_w, sizeof(CONV_IO_T));
            oc += nb;
        }
    }
    free(p.off);
    return 1;
}
#endif

static void CONV_FN(visit_chw)(void *vctx, const mli_conv_point *p) {
    const CONV_CTX *c = (const CONV_CTX *)vctx;
    const mli_conv_geom *g = c->g;
    const int64_t plane = (int64_t)g->in_w * g->in_h, kk = (int64_t)g->kw * g->kh;
    const int64_t irow = g->in_w, wrow = g->kw;
    const CONV_IO_T *x0 = c->in + p->in;
    const CONV_W_T *w0 = c->w + p->w;
    int64_t a = CONV_FN(init)(c, p->bias);
    if (c->exact) {
        const int n = mli_prv_conv_cols_read(p->pat, p->clmns);
        int64_t s0 = 0, s1 = 0;
        for (int ch = 0; ch < p->nch; ch++)
            for (int r = 0; r < p->rows; r++) {
                const CONV_IO_T *x = x0 + ch * plane + r * irow;
                const CONV_W_T *w = w0 + ch * kk + r * wrow;
                s0 += CONV_FN(dot)(x, w, n);
                if (p->pat == MLI_CONV_PAT_LANES) s1 += CONV_FN(dot)(x + 1, w, n);
            }
        if (p->pat == MLI_CONV_PAT_LANES) {
            c->out[p->out] = CONV_FN(store)(c, CONV_ACC40 ? a + s0 : mli_math_wrap32(a + s0));
            c->out[p->out + 1] = CONV_FN(store)(c, CONV_ACC40 ? a + s1 : mli_math_wrap32(a + s1));
        } else {
            c->out[p->out] = CONV_FN(store)(c, a + s0);
        }
        return;
    }
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
    if (c->exact) { /* channel pairs, then an odd last channel */
        const int paired = p->pat == MLI_CONV_PAT_HWC_1X1 ? C : C & ~1, rows = p->pat == MLI_CONV_PAT_HWC_1X1 ? 1 : p->rows;
        const int clmns = p->pat == MLI_CONV_PAT_HWC_1X1 ? 1 : p->clmns;
        int64_t sp = 0, so = 0;
        for (int r = 0; r < rows; r++)
            for (int col = 0; col < clmns; col++) {
                const CONV_IO_T *x = x0 + r * g->in_rs + col * g->in_cs;
                const CONV_W_T *w = w0 + r * g->w_rs + col * g->w_cs;
                sp += CONV_FN(dot)(x, w, paired);
                if (paired < C) so += (int32_t)x[C - 1] * w[C - 1];
            }
        a = CONV_ACC40 ? a + sp + so : mli_math_wrap32(mli_math_sat32(a + sp) + so);
        c->out[p->out] = CONV_FN(store)(c, a);
        return;
    }
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
                                         CONV_IO_T *out, mli_conv_caps caps) {
    CONV_CTX c = {g, NULL, fmt, in, w, b, out, 0};
    const int64_t bound = CONV_FN(bound)(&c, caps, (int64_t)g->in_ch * g->kh * g->kw);
    const int regular = g->in_h >= g->kh && g->in_w >= g->kw && g->pt < g->kh && g->pb < g->kh && g->pl < g->kw &&
                        g->pr < g->kw;
    if (regular && bound >= 0 && bound < INT32_MAX) {
#ifdef MLIPY_X86_TARGETS
        if (mlipy_get_isa() != MLIPY_ISA_SCALAR && CONV_FN(avx2_planes)(&c, bound)) return;
#endif
        CONV_FN(planes)(&c);
        return;
    }
    c.exact = bound >= 0 && bound < ((int64_t)1 << 39) - 1;
    mli_prv_conv_chw_walk(core, g, CONV_FN(visit_chw), &c);
}

void MLI_CAT(mli_prv_conv_hwc_, CONV_SFX)(mli_conv_hwc_path path, const mli_conv_hwc_geom *g,
                                         mli_conv_out_fmt fmt, const CONV_IO_T *in, const CONV_W_T *w,
                                         const CONV_W_T *b, CONV_IO_T *out, mli_conv_caps caps) {
    CONV_CTX c = {NULL, g, fmt, in, w, b, out, 0};
    const int64_t bound = CONV_FN(bound)(&c, caps, (int64_t)g->ch * g->kh * g->kw);
    c.exact = bound >= 0 && bound < ((int64_t)1 << 39) - 1;
    mli_prv_conv_hwc_walk(path, g, CONV_FN(visit_hwc), &c);
}

#undef CONV_CTX
#undef CONV_FN
#undef CONV_SFX
#undef CONV_IO_T
#undef CONV_W_T
#undef CONV_ACC40
