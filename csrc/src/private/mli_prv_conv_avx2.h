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
 * computed and dropped.  Except where output channels share the packed
 * input (not depthwise) and the kernel is wider than one column: there
 * each tap (m, t) has its own packed row, entry hh * out_w + w holding the
 * pair at column w + t, so that no column is computed to be dropped and
 * the outputs of a tile are contiguous ("expanded"; kw times the packing,
 * paid once for all output channels).
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
#define CONV_AVX2_ACC_MAX 8    /* accumulators of the largest block shape (4 channels x 2 vectors) */
#define CONV_AVX2_ROUND 96     /* positions of a tile rounded up to this (16- and 32-wide blocks) */
#define CONV_AVX2_TILE (48 * 1024) /* bytes of packed input per tile (L1-sized) */

typedef struct {
    int M, kw, wv, flat;  /* pairs, kernel width, packed row width, the stride-1 unpadded case */
    int expand;           /* one packed row per tap (else per pair) */
    int T;                /* taps: M * kw (pair m at column t is tap m * kw + t) */
    int R;                /* output rows per tile */
    int vec_out;          /* the read-out on int32 lanes (conv_avx2_rnd_shr cannot overflow) */
    int64_t xs, ss;       /* entries per packed pair row; stage elements per output channel */
    int64_t *off;         /* per tap, its first entry in the packed tile: m * xs + t (expanded: i * xs) */
    int32_t *wp;          /* T weight pairs per output channel (CONV_FN(avx2_pack_weights)) */
    int32_t *init;        /* per output channel, the start value */
    int32_t *xp;          /* the packed tile */
    void *stage;          /* the tile's outputs of one block of output channels, wv per row */
} conv_avx2_plan;

/* Two int16 as the int32 lane vpmaddwd reads (lo in the low half). */
static inline int32_t conv_avx2_pair(int lo, int hi) {
    return (int32_t)((uint32_t)(uint16_t)lo | ((uint32_t)(uint16_t)hi << 16));
}

/* acc[o * PV + v] = init[o] + the pair sums over the taps i < T of
 * x[off[i] + 8v ...] with w[i * OCB + o], for OCB output channels and PV
 * vectors of 8 positions.  OCB and PV are constants at each call, so the
 * accumulators stay in registers. */
CONV_AVX2_INLINE void conv_avx2_sums(__m256i *acc, const int32_t *x, const int64_t *off, const int32_t *w, int T,
                                     const int32_t *init, const int OCB, const int PV) {
    __m256i a[CONV_AVX2_ACC_MAX]; /* local: not written back to acc at every tap */
    for (int o = 0; o < OCB; o++)
        for (int v = 0; v < PV; v++) a[o * PV + v] = _mm256_set1_epi32(init[o]);
    for (int i = 0; i < T; i++) {
        const int32_t *xi = x + off[i];
        __m256i xv[CONV_AVX2_ACC_MAX];
        for (int v = 0; v < PV; v++) xv[v] = _mm256_loadu_si256((const __m256i *)(const void *)(xi + 8 * v));
        for (int o = 0; o < OCB; o++) {
            const __m256i k = _mm256_set1_epi32(w[i * OCB + o]);
            for (int v = 0; v < PV; v++) a[o * PV + v] = _mm256_add_epi32(a[o * PV + v], _mm256_madd_epi16(xv[v], k));
        }
    }
    for (int j = 0; j < OCB * PV; j++) acc[j] = a[j];
}

/* 16 elements of `size` bytes (1 or 2) from p widened to int16; 8 of them. */
CONV_AVX2_INLINE __m256i conv_avx2_load16(const void *p, size_t size) {
    if (size == 1) return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
    return _mm256_loadu_si256((const __m256i *)p);
}
CONV_AVX2_INLINE __m128i conv_avx2_load8(const void *p, size_t size) {
    if (size == 1) return _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)p));
    return _mm_loadu_si128((const __m128i *)p);
}

/* The weight pairs of 4 output channels (rows J elements of `size` bytes
 * apart, from w) with one-column taps, 8 pairs at a time: a row's widened
 * elements already are its pairs, transposed so that the 4 channels' pairs
 * of a tap are adjacent (d[4m + o]).  Written when `write`; returns the pairs
 * done either way. */
CONV_AVX2 static inline int conv_avx2_pairs_4x8(const void *w, int J, int32_t *d, size_t size, int write) {
    const char *r = (const char *)w;
    int m = 0;
    for (; 2 * m + 16 <= J; m += 8) {
        if (!write) continue;
        const size_t at = (size_t)(2 * m) * size, row = (size_t)J * size;
        const __m256i a0 = conv_avx2_load16(r + at, size), a1 = conv_avx2_load16(r + row + at, size);
        const __m256i a2 = conv_avx2_load16(r + 2 * row + at, size), a3 = conv_avx2_load16(r + 3 * row + at, size);
        const __m256i t0 = _mm256_unpacklo_epi32(a0, a1), t1 = _mm256_unpacklo_epi32(a2, a3);
        const __m256i t2 = _mm256_unpackhi_epi32(a0, a1), t3 = _mm256_unpackhi_epi32(a2, a3);
        /* per 128-bit lane, pairs k and k + 4: u0 k = 0, u1 1, u2 2, u3 3 */
        const __m256i u0 = _mm256_unpacklo_epi64(t0, t1), u1 = _mm256_unpackhi_epi64(t0, t1);
        const __m256i u2 = _mm256_unpacklo_epi64(t2, t3), u3 = _mm256_unpackhi_epi64(t2, t3);
        __m256i *o = (__m256i *)(void *)(d + 4 * m);
        _mm256_storeu_si256(o, _mm256_permute2x128_si256(u0, u1, 0x20));
        _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(u2, u3, 0x20));
        _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(u0, u1, 0x31));
        _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(u2, u3, 0x31));
    }
    return m;
}

/* The two block shapes, each alone in its function so that the compiler
 * keeps every accumulator of the tap loop in a register (inlined next to
 * the read-out, it spilled them); the sums go out through acc. */
__attribute__((noinline)) CONV_AVX2 static void conv_avx2_sums_4x2(__m256i *acc, const int32_t *x, const int64_t *off,
                                                                   const int32_t *w, int T, const int32_t *init) {
    conv_avx2_sums(acc, x, off, w, T, init, 4, 2);
}
__attribute__((noinline)) CONV_AVX2 static void conv_avx2_sums_1x4(__m256i *acc, const int32_t *x, const int64_t *off,
                                                                   const int32_t *w, int T, const int32_t *init) {
    conv_avx2_sums(acc, x, off, w, T, init, 1, 4);
}

/* The read-out's constants, for conv_avx2_rnd_shr and the ReLU clip. */
typedef struct {
    __m128i n;          /* the shift, 0 < n < 32 */
    __m256i half1, lo, hi; /* 2^(n-1) - 1; the ReLU limits */
    int up;             /* ties up (else to even) */
} conv_avx2_out;

static inline conv_avx2_out conv_avx2_out_of(int n, int lo, int hi, int up) CONV_AVX2;
static inline conv_avx2_out conv_avx2_out_of(int n, int lo, int hi, int up) {
    conv_avx2_out r;
    r.n = _mm_cvtsi32_si128(n);
    r.half1 = _mm256_set1_epi32((int32_t)((1u << (n - 1)) - 1u));
    r.lo = _mm256_set1_epi32(lo);
    r.hi = _mm256_set1_epi32(hi);
    r.up = up;
    return r;
}

/* x / 2^n rounded to nearest, ties up or to even, on int32 lanes, as
 * mli_math_rnd_shr: (x + 2^(n-1) - 1 + u) >> n with u = 1 (ties up) or bit
 * n of x (a tie then goes up from an odd quotient only).  The caller has
 * checked that x + 2^(n-1) cannot overflow. */
CONV_AVX2_INLINE __m256i conv_avx2_rnd_shr(__m256i x, const conv_avx2_out *k) {
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i u = k->up ? one : _mm256_and_si256(_mm256_sra_epi32(x, k->n), one);
    return _mm256_sra_epi32(_mm256_add_epi32(x, _mm256_add_epi32(u, k->half1)), k->n);
}

/* Bytes [0, nb) from s to d, nb small: 8-byte moves, the last overlapping. */
static inline void conv_avx2_copy_small(char *d, const char *s, size_t nb) {
    if (nb < 8) {
        memcpy(d, s, nb);
        return;
    }
    for (size_t i = 8; i < nb; i += 8) memcpy(d + i - 8, s + i - 8, 8);
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
    const size_t dn = (size_t)out_w * size, sn = (size_t)wv * size;
    for (int hh = 0; hh < rows; hh++, d += dn, s += sn) conv_avx2_copy_small(d, s, dn);
}

/* The tile geometry and buffers for geometry g with `icn` channels summed
 * per output (stride width 1, checked by the caller), sums bounded by
 * `bound`; 0 when out of memory. */
static inline int conv_avx2_plan_init(conv_avx2_plan *p, const mli_conv_geom *g, int icn, int out_shift,
                                      int64_t bound, size_t io_size) {
    p->M = (icn * g->kh + 1) / 2;
    p->kw = g->kw;
    p->T = p->M * p->kw;
    p->expand = !g->depthwise && g->kw > 1;
    p->wv = p->expand ? g->out_w : g->out_w + g->kw - 1;
    p->flat = !p->expand && g->sh == 1 && g->pt == 0 && g->pb == 0 && g->pl == 0 && g->pr == 0 && p->wv == g->in_w &&
              g->out_h == g->in_h - g->kh + 1; /* a tile's rows end inside the input */
    p->vec_out = out_shift > 0 && out_shift < 32 && bound + ((int64_t)1 << (out_shift - 1)) <= INT32_MAX;
    const int packed_rows = p->expand ? p->T : p->M;
    const int64_t R = CONV_AVX2_TILE / ((int64_t)packed_rows * p->wv * 4);
    p->R = R < 1 ? 1 : (R > g->out_h ? g->out_h : (int)R);
    p->ss = ((int64_t)p->R * p->wv + CONV_AVX2_ROUND - 1) / CONV_AVX2_ROUND * CONV_AVX2_ROUND;
    p->xs = p->ss + p->kw + 7;
    const size_t nw = (size_t)g->out_ch * (size_t)p->T, nx = (size_t)packed_rows * (size_t)p->xs;
    const size_t ns = (size_t)4 * (size_t)p->ss * io_size; /* up to 4 output channels */
    p->off = (int64_t *)malloc((size_t)p->T * sizeof(int64_t) + (nw + (size_t)g->out_ch + nx + (ns + 3) / 4) * 4);
    if (!p->off) return 0;
    p->wp = (int32_t *)(void *)(p->off + p->T);
    p->init = p->wp + nw;
    p->xp = p->init + g->out_ch;
    p->stage = p->xp + nx;
    for (int i = 0; i < p->T; i++) p->off[i] = p->expand ? i * p->xs : (int64_t)(i / p->kw) * p->xs + i % p->kw;
    return 1;
}

#endif /* MLIPY_X86_TARGETS */
#endif /* MLI_PRV_CONV_AVX2_H */
