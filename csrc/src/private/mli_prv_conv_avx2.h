/* The int32 convolution of conv_planes on AVX2 with 16-bit multiply-adds
 * (vpmaddwd): the type-independent part (the per-type packing and read-out
 * are in mli_prv_conv_impl.h).  x86 builds only.
 *
 * Tap rows: the products of one output are those of input channel ci,
 * kernel row r and column t; (ci, r) is tap row j = ci * kh + r, read at
 * columns t.  Tap rows 2m and 2m + 1 form pair m (an odd last one pairs with
 * zeros).  A tile of output rows is packed per pair into one row of int32,
 * each holding the two tap rows' input elements as two int16: entry
 * hh * wv + col, wv = out_w + kw - 1, holds the zero-padded input of output
 * row hh's tap rows at padded column col.  Output (hh, w) then is the start
 * value plus, over the pairs m and the columns t, vpmaddwd of entry
 * hh * wv + w + t with the weights (k[2m][t], k[2m+1][t]): a run of entries
 * over consecutive positions hh * wv + w, whose columns w >= out_w are
 * computed and dropped.
 *
 * Exact: a lane's products and every sum of them and the start value are
 * partial sums of the call, which the caller has bounded below 2^31 (and a
 * pair of (-2^15)^2 products, the one vpmaddwd wraps, sums to 2^31). */
#ifndef MLI_PRV_CONV_AVX2_H
#define MLI_PRV_CONV_AVX2_H

#include "mli_prv_conv.h"
#include "mli_prv_isa.h"

#ifdef MLIPY_X86_TARGETS
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "mli_prv_dotprod.h"

#define CONV_AVX2 __attribute__((target("avx2")))
#define CONV_AVX2_INLINE __attribute__((always_inline)) CONV_AVX2 static inline
#define CONV_AVX2_ACC_MAX 12   /* accumulators of the largest block (4 channels x 3 vectors) */
#define CONV_AVX2_ROUND 96     /* positions of a tile rounded up to this (24- and 32-wide blocks) */
#define CONV_AVX2_TILE (48 * 1024) /* bytes of packed input per tile (L1-sized) */

typedef struct {
    int M, kw, wv, flat;  /* pairs, kernel width, packed row width, the stride-1 unpadded case */
    int R;                /* output rows per tile */
    int64_t xs, ss;       /* entries per packed pair row; stage elements per output channel */
    int32_t *wp;          /* per output channel, M * kw weight pairs */
    int32_t *init;        /* per output channel, the start value */
    int32_t *xp;          /* the packed tile */
    void *stage;          /* the tile's outputs of one block of output channels, wv per row */
} conv_avx2_plan;

/* Two int16 as the int32 lane vpmaddwd reads (lo in the low half). */
static inline int32_t conv_avx2_pair(int lo, int hi) {
    return (int32_t)((uint32_t)(uint16_t)lo | ((uint32_t)(uint16_t)hi << 16));
}

/* acc[o * PV + v] = init[o] + the pair sums over m < M and t < kw of
 * x[m * xs + 8v + t ...] with w[o * ws + m * kw + t], for OCB output channels
 * and PV vectors of 8 positions.  OCB and PV are constants at each call, so
 * the accumulators stay in registers. */
CONV_AVX2_INLINE void conv_avx2_sums(__m256i *acc, const int32_t *x, int64_t xs, const int32_t *w, int64_t ws,
                                     int M, int kw, const int32_t *init, const int OCB, const int PV) {
    for (int o = 0; o < OCB; o++)
        for (int v = 0; v < PV; v++) acc[o * PV + v] = _mm256_set1_epi32(init[o]);
    for (int m = 0; m < M; m++, x += xs, w += kw)
        for (int t = 0; t < kw; t++) {
            __m256i xv[CONV_AVX2_ACC_MAX];
            for (int v = 0; v < PV; v++) xv[v] = _mm256_loadu_si256((const __m256i *)(x + t + 8 * v));
            for (int o = 0; o < OCB; o++) {
                const __m256i k = _mm256_set1_epi32(w[o * ws + t]);
                for (int v = 0; v < PV; v++)
                    acc[o * PV + v] = _mm256_add_epi32(acc[o * PV + v], _mm256_madd_epi16(xv[v], k));
            }
        }
}

/* x / 2^n rounded to nearest, ties up (`up`) or to even, on int32 lanes,
 * 0 < n < 32: mli_math_rnd_shr. */
CONV_AVX2_INLINE __m256i conv_avx2_rnd_shr(__m256i x, int n, int up) {
    const __m256i q = _mm256_sra_epi32(x, _mm_cvtsi32_si128(n));
    const __m256i rem = _mm256_and_si256(x, _mm256_set1_epi32((int32_t)((1u << n) - 1u)));
    const __m256i half = _mm256_set1_epi32((int32_t)(1u << (n - 1)));
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i odd = up ? _mm256_set1_epi32(-1) : _mm256_cmpeq_epi32(_mm256_and_si256(q, one), one);
    const __m256i inc = _mm256_or_si256(_mm256_cmpgt_epi32(rem, half),
                                        _mm256_and_si256(_mm256_cmpeq_epi32(rem, half), odd));
    return _mm256_sub_epi32(q, inc); /* inc is -1 where rounding up */
}

/* Bytes [0, nb) from s to d, nb small: 8-byte moves, the last overlapping. */
static inline void conv_avx2_copy_small(char *d, const char *s, size_t nb) {
    if (nb < 8) {
        memcpy(d, s, nb);
        return;
    }
    for (size_t i = 0; i + 8 < nb; i += 8) memcpy(d + i, s + i, 8);
    memcpy(d + nb - 8, s + nb - 8, 8);
}

/* Rows of out_w elements of `size` bytes from the stage (wv apart) to the
 * output plane (out_w apart). */
static inline void conv_avx2_copy_rows(void *out, const void *stage, int rows, int wv, int out_w, size_t size) {
    char *d = (char *)out;
    const char *s = (const char *)stage;
    if (wv == out_w) {
        memcpy(d, s, (size_t)rows * (size_t)out_w * size);
        return;
    }
    for (int hh = 0; hh < rows; hh++) conv_avx2_copy_small(d + hh * out_w * size, s + hh * wv * size, out_w * size);
}

/* The tile geometry and buffers for geometry g with `icn` channels summed
 * per output (stride width 1, checked by the caller); 0 when out of memory. */
static inline int conv_avx2_plan_init(conv_avx2_plan *p, const mli_conv_geom *g, int icn, size_t io_size) {
    p->M = (icn * g->kh + 1) / 2;
    p->kw = g->kw;
    p->wv = g->out_w + g->kw - 1;
    p->flat = g->sh == 1 && g->pt == 0 && g->pb == 0 && g->pl == 0 && g->pr == 0 && p->wv == g->in_w;
    const int64_t row_bytes = (int64_t)p->M * p->wv * 4;
    int64_t R = CONV_AVX2_TILE / row_bytes;
    p->R = R < 1 ? 1 : (R > g->out_h ? g->out_h : (int)R);
    p->ss = ((int64_t)p->R * p->wv + CONV_AVX2_ROUND - 1) / CONV_AVX2_ROUND * CONV_AVX2_ROUND;
    p->xs = p->ss + p->kw + 7;
    const size_t nw = (size_t)g->out_ch * (size_t)p->M * (size_t)p->kw, nx = (size_t)p->M * (size_t)p->xs;
    const size_t ns = (size_t)4 * (size_t)p->ss * io_size; /* up to 4 output channels */
    p->wp = (int32_t *)calloc(nw + (size_t)g->out_ch + nx + (ns + 3) / 4, 4);
    if (!p->wp) return 0;
    p->init = p->wp + nw;
    p->xp = p->init + g->out_ch;
    p->stage = p->xp + nx;
    return 1;
}

#endif /* MLIPY_X86_TARGETS */
#endif /* MLI_PRV_CONV_AVX2_H */
