/* The basic RNN rows on AVX-512 VNNI (mlipy_rows.c): up to ROWS512_R rows
 * advance together one time step at a time, and each pass over a pair of
 * groups' state weights serves all of them (vpdpwssd, one weight load per
 * ROWS512_R broadcasts of the rows' states), where a separate call's step
 * waits on its own chain; the start values (the input part) of a row's next
 * ROWS512_STEPS steps are made ahead the same way, ROWS512_R steps per pass.
 * The integers are the AVX2 fused step's (mli_krn_rnn_avx2.h, set up by
 * rnn_avx2_setup on the shared plan, the same bounds): its start values and
 * its one-chunk read-out (mli_prv_dense_avx2.h) on 16 int32 lanes, the
 * activation on 32 int16 lanes (lut32_avx512) or, 8-bit data, the
 * 256-entry table in registers.
 *
 * fx16 sums that are not provably exact in int32 (max|h| times the largest
 * sum of |w| of a row at least 2^31; the same for the inputs of a block of
 * steps) are summed over the data's high and low bytes instead:
 * h = 256 (h >> 8) + (h & 255), each part's sum exact in int32 where 255
 * times that sum of |w| is below 2^31, and S = 256 a + b is read out at a
 * shift of 8 or more without forming it (rows512_parts).  Where that
 * does not hold either, a row's step is the AVX2 step itself, and a block of
 * start values the AVX2 code's.  K a multiple of 16; 8-bit weights only where
 * the plan holds them widened (w_in16, w_st16). */
#ifndef MLIPY_ROWS_AVX512_H
#define MLIPY_ROWS_AVX512_H

#include "mli_krn_rnn_avx2.h"

#ifdef MLIPY_X86_TARGETS
#define ROWS512_TARGET __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define ROWS512_INLINE __attribute__((always_inline)) ROWS512_TARGET static inline
/* Rows sharing each pass over the weights: the 16 accumulators of 8 rows' two groups, two
 * weight vectors and a broadcast fit the 32 registers (rows512_sums names 8 rows' accumulators). */
#define ROWS512_R 8
/* Steps whose start values a row computes ahead (the plan's x_all holds that many inputs). */
#define ROWS512_STEPS MLI_DENSE_HOIST_STEPS

/* The per-call constants of the batched step, made once per call
 * (rows512_k_init) and copied into each run's own frame: held behind a
 * pointer that the outputs' stores might alias, GCC would reload them
 * after every store. */
typedef struct {
    lut_regs lr;                 /* fx16: the activation's table in registers */
    __m512i t8[8];               /* 8-bit data: the activation's results at x + 128, as int16 */
    __m512i om, ob, m2, mD, mD8, ibias, half, cl, ncl;
    __m128i osh, sh2, dsh, dsh8, ish, lsh;
    lut_setup ls;                /* fx16: the activation's per-call setup */
    const int32_t *bth, *btl, *bt1; /* the bias terms' parts (mli_rec_avx2) */
    const int16_t *w_in, *w_st;  /* the packed weights as int16 (8-bit: the widened copy) */
    int n_pairs, s_pairs, groups, its, activate;
    int32_t up;                  /* rounding up (1) or half to even (0) */
} rows512_k;

/* 2^bits - 1; 0 outside 1..30 (the constant of a form the call does not run). */
static int32_t rows512_mask(int bits) {
    return bits > 0 && bits < 31 ? (int32_t)(((int64_t)1 << bits) - 1) : 0;
}

/* rows512_k from the AVX2 step's set-up fz (w8, d8: 8-bit weights, data). */
ROWS512_TARGET static void rows512_k_init(rows512_k *k, const rnn_avx2 *fz, const mli_lut *lut, int f_d, int w8,
                                          int d8) {
    const mli_rec_avx2 *r = &fz->rec;
    const int os = r->os, D = r->D, its = r->its;
    k->up = mlipy_rounding_up;
    k->activate = fz->activate;
    k->om = _mm512_set1_epi32(rows512_mask(os));
    k->ob = _mm512_set1_epi32(rows512_mask(os - 1));
    k->m2 = _mm512_set1_epi32(rows512_mask(os - 8));
    k->mD = _mm512_set1_epi32(rows512_mask(D));
    k->mD8 = _mm512_set1_epi32(rows512_mask(D - 8));
    k->ibias = _mm512_set1_epi32(rows512_mask(its - 1));
    k->half = _mm512_broadcastd_epi32(_mm256_castsi256_si128(r->sc.half));
    k->cl = _mm512_broadcastd_epi32(_mm256_castsi256_si128(r->sc.cl));
    k->ncl = _mm512_sub_epi32(_mm512_setzero_si512(), k->cl);
    k->osh = _mm_cvtsi32_si128(os);
    k->sh2 = _mm_cvtsi32_si128(os >= 8 ? os - 8 : 0);
    k->dsh = _mm_cvtsi32_si128(D);
    k->dsh8 = _mm_cvtsi32_si128(D >= 8 ? D - 8 : 0);
    k->ish = _mm_cvtsi32_si128(its > 0 ? its : 0);
    k->lsh = _mm_cvtsi32_si128(its < 0 ? -its : 0);
    k->its = its;
    k->bth = r->bth;
    k->btl = r->btl;
    k->bt1 = r->bt1;
    k->w_in = w8 ? r->w_in16 : r->plan->w_in;
    k->w_st = w8 ? r->w_st16 : r->plan->w_st;
    k->n_pairs = r->plan->n_pairs;
    k->s_pairs = r->plan->s_pairs;
    k->groups = r->groups;
    if (!fz->activate) return;
    if (d8) {
        int16_t t[256];
        mli_prv_lut8_table(lut, f_d, t);
        lut256_load_regs(t, k->t8);
    } else {
        lut_prepare(lut, f_d, &k->ls);
        lut_load_regs(lut, &k->lr);
    }
}

/* The modular int32 state sums of NG groups from g0 for R rows (row j's
 * state pairs at hx[j], 16-bit data possibly read in place: any alignment):
 * row j, group g0 + i in acc[NG * j + i].  The accumulators are named
 * variables, each multiply-add a `vpdpwssd` in assembly (MLI_VPDPWSSD):
 * kept in an array or left to the intrinsic, GCC copies or stores each one
 * after every multiply-add.  One broadcast of a row's pair serves both
 * groups (measured 6-12 % faster than a broadcast from memory in each
 * `vpdpwssd`). */
ROWS512_INLINE void rows512_sums(const int16_t *w, int pairs, int g0, const int32_t *const *hx, __m512i *acc,
                                 const int R, const int NG) {
    const size_t glen = (size_t)pairs * 2 * MLI_DOT_GROUP;
    const int16_t *w0 = w + (size_t)g0 * glen, *w1 = w0 + glen;
    const __m512i z = _mm512_setzero_si512();
    __m512i c0 = z, c1 = z, c2 = z, c3 = z, c4 = z, c5 = z, c6 = z, c7 = z;
    __m512i c8 = z, c9 = z, c10 = z, c11 = z, c12 = z, c13 = z, c14 = z, c15 = z;
    for (int p = 0; p < pairs; p++) {
        const __m512i a0 = _mm512_loadu_si512((const void *)(w0 + (size_t)p * 2 * MLI_DOT_GROUP));
        const __m512i a1 = NG > 1 ? _mm512_loadu_si512((const void *)(w1 + (size_t)p * 2 * MLI_DOT_GROUP)) : a0;
#define ROWS512_ROW(j, x, y)                                 \
        if (R > (j)) {                                       \
            int32_t v_;                                      \
            memcpy(&v_, hx[j] + p, sizeof v_);               \
            const __m512i b_ = _mm512_set1_epi32(v_);        \
            MLI_VPDPWSSD(x, b_, a0);                         \
            if (NG > 1) MLI_VPDPWSSD(y, b_, a1);             \
        }
        ROWS512_ROW(0, c0, c1)
        ROWS512_ROW(1, c2, c3)
        ROWS512_ROW(2, c4, c5)
        ROWS512_ROW(3, c6, c7)
        ROWS512_ROW(4, c8, c9)
        ROWS512_ROW(5, c10, c11)
        ROWS512_ROW(6, c12, c13)
        ROWS512_ROW(7, c14, c15)
#undef ROWS512_ROW
    }
    const __m512i c[16] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15};
    for (int j = 0; j < R; j++)
        for (int i = 0; i < NG; i++) acc[NG * j + i] = c[2 * j + i];
}

/* The sums of group g and, where there is one, g + 1 (of `groups`) for R
 * vectors: over xa into acc and, with split, over xb into low
 * (rows512_sums).  Returns how many groups: 2 or 1. */
ROWS512_INLINE int rows512_sums_g(const int16_t *w, int pairs, int groups, int g, const int32_t *const *xa,
                                  const int32_t *const *xb, __m512i *acc, __m512i *low, const int R,
                                  const int split) {
    const int two = g + 2 <= groups;
    if (two) rows512_sums(w, pairs, g, xa, acc, R, 2);
    else rows512_sums(w, pairs, g, xa, acc, R, 1);
    if (split && two) rows512_sums(w, pairs, g, xb, low, R, 2);
    else if (split) rows512_sums(w, pairs, g, xb, low, R, 1);
    return two ? 2 : 1;
}

/* A sum S, exact (a; with split S = 256 a + b, each exact in int32), as
 * floor(S / 2^s) into *hadd and S mod 2^s into *ladd: sh = s and
 * m = 2^s - 1; with split sh8 = s - 8 and m8 = 2^(s-8) - 1 (s >= 8), from
 * T = a + (b >> 8) = floor(S / 2^8). */
ROWS512_INLINE void rows512_parts(__m512i a, __m512i b, __m128i sh, __m512i m, __m128i sh8, __m512i m8,
                                  __m512i *hadd, __m512i *ladd, const int split) {
    if (!split) {
        *hadd = _mm512_sra_epi32(a, sh);
        *ladd = _mm512_and_si512(a, m);
        return;
    }
    const __m512i t = _mm512_add_epi32(a, _mm512_srai_epi32(b, 8));
    *hadd = _mm512_sra_epi32(t, sh8);
    *ladd = _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(t, m8), 8), _mm512_and_si512(b, _mm512_set1_epi32(255)));
}

/* One group's results before saturation from its state sums and start
 * values s (rec_avx2_block's one-chunk read-out on 16 lanes).  a: the sums
 * (modular int32, exact); with split, a and b are the sums over the high
 * and the low bytes of the state (S = 256 a + b, each exact in int32), and
 * floor(S / 2^os), S mod 2^os come from T = a + (b >> 8) (os >= 8). */
ROWS512_INLINE __m512i rows512_readout(const rows512_k *k, __m512i a, __m512i b, const int32_t *s, const int split,
                                       const int w8) {
    if (w8) { /* the start value plus the sums, shifted with rounding */
        return rec_avx512_round(_mm512_add_epi32(_mm512_loadu_si512((const void *)s), a), k->osh, k->ob,
                                _mm512_set1_epi32(k->up));
    }
    __m512i hadd, ladd; /* floor(S / 2^os), S mod 2^os */
    rows512_parts(a, b, k->osh, k->om, k->sh2, k->m2, &hadd, &ladd, split);
    const __m512i hi = _mm512_add_epi32(_mm512_loadu_si512((const void *)s), hadd);
    const __m512i lo = _mm512_add_epi32(_mm512_loadu_si512((const void *)(s + MLI_DOT_GROUP)), ladd);
    const __m512i q = _mm512_add_epi32(hi, _mm512_srl_epi32(lo, k->osh));
    if (k->up) return q;
    /* a tie (the low bits all zero) takes the even result */
    const __mmask16 tie = _mm512_testn_epi32_mask(lo, k->om);
    return _mm512_mask_and_epi32(q, tie, q, _mm512_set1_epi32(~1));
}

/* NG groups' results (q) from group g saturated, activated (or not) and
 * stored at y (K elements of int16, or int8 with d8). */
ROWS512_INLINE void rows512_store(const rows512_k *ac, const __m512i *q, int g, void *y, const int NG, const int d8) {
    const int activate = ac->activate;
    const size_t k = (size_t)g * MLI_DOT_GROUP;
    if (!d8) {
        /* vpmovsdw saturates to int16: the step's saturation */
        const __m256i lo = _mm512_cvtsepi32_epi16(q[0]);
        const __m256i hi = NG > 1 ? _mm512_cvtsepi32_epi16(q[1]) : _mm256_setzero_si256();
        __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        if (activate) v = lut32_avx512(&ac->lr, &ac->ls, v);
        if (NG > 1) _mm512_storeu_si512((void *)((int16_t *)y + k), v);
        else _mm256_storeu_si256((__m256i *)(void *)((int16_t *)y + k), _mm512_castsi512_si256(v));
        return;
    }
    if (!activate) {
        for (int i = 0; i < NG; i++) /* vpmovsdb saturates to int8 */
            _mm_storeu_si128((__m128i *)(void *)((int8_t *)y + k + (size_t)i * MLI_DOT_GROUP), _mm512_cvtsepi32_epi8(q[i]));
        return;
    }
    /* the table's index: the saturated result + 128 (0..255) */
    const __m512i lo8 = _mm512_set1_epi32(-128), hi8 = _mm512_set1_epi32(127), off = _mm512_set1_epi32(128);
    const __m256i i0 = _mm512_cvtepi32_epi16(_mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q[0], lo8), hi8), off));
    const __m256i i1 = NG > 1 ? _mm512_cvtepi32_epi16(_mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q[1], lo8), hi8), off))
                              : _mm256_setzero_si256();
    const __m512i v = lut256_lookup32(ac->t8, _mm512_inserti64x4(_mm512_castsi256_si512(i0), i1, 1));
    if (NG > 1) _mm256_storeu_si256((__m256i *)(void *)((int8_t *)y + k), _mm512_cvtepi16_epi8(v));
    else _mm_storeu_si128((__m128i *)(void *)((int8_t *)y + k), _mm256_cvtepi16_epi8(_mm512_castsi512_si256(v)));
}

/* One step of R rows: row j's state pairs hx[j] (with split its high
 * bytes, hl[j] its low bytes), start values st[j], outputs y[j]. */
ROWS512_INLINE void rows512_step(const rows512_k *k, const int32_t *const *hx, const int32_t *const *hl,
                                 const int32_t *const *st, void *const *y, const int R, const int split, const int w8,
                                 const int d8) {
    const int16_t *w = k->w_st;
    const int pairs = k->s_pairs, groups = k->groups;
    for (int g = 0; g < groups; g += 2) {
        __m512i acc[2 * ROWS512_R], low[2 * ROWS512_R];
        const int ng = rows512_sums_g(w, pairs, groups, g, hx, hl, acc, low, R, split);
        for (int j = 0; j < R; j++) {
            __m512i q[2];
            for (int i = 0; i < ng; i++)
                q[i] = rows512_readout(k, acc[ng * j + i], split ? low[ng * j + i] : acc[ng * j + i],
                                       st[j] + (size_t)(g + i) * REC_START_STRIDE, split, w8);
            if (ng == 2) rows512_store(k, q, g, y[j], 2, d8);
            else rows512_store(k, q, g, y[j], 1, d8);
        }
    }
}

/* rows512_step for any n rows, ROWS512_R, 4, 2 and 1 at a time. */
ROWS512_INLINE void rows512_step_n(const rows512_k *k, int n, const int32_t *const *hx,
                                   const int32_t *const *hl, const int32_t *const *st, void *const *y,
                                   const int split, const int w8, const int d8) {
    int j = 0;
    for (; j + ROWS512_R <= n; j += ROWS512_R)
        rows512_step(k, hx + j, hl + j, st + j, y + j, ROWS512_R, split, w8, d8);
    if (j + 4 <= n) rows512_step(k, hx + j, hl + j, st + j, y + j, 4, split, w8, d8), j += 4;
    if (j + 2 <= n) rows512_step(k, hx + j, hl + j, st + j, y + j, 2, split, w8, d8), j += 2;
    if (j < n) rows512_step(k, hx + j, hl + j, st + j, y + j, 1, split, w8, d8);
}

/* The high and the low bytes of M int16 (h >> 8 and h & 255, each exact as
 * int16) as int32 pairs into hh, hl (zero past M). */
ROWS512_INLINE void rows512_bytes(const int16_t *h, int M, int32_t *hh, int32_t *hl) {
    int16_t *a = (int16_t *)(void *)hh, *b = (int16_t *)(void *)hl;
    int i = 0;
    for (; i + 32 <= M; i += 32) {
        const __m512i v = _mm512_loadu_si512((const void *)(h + i));
        _mm512_storeu_si512((void *)(a + i), _mm512_srai_epi16(v, 8));
        _mm512_storeu_si512((void *)(b + i), _mm512_and_si512(v, _mm512_set1_epi16(255)));
    }
    for (; i < M; i++) {
        a[i] = (int16_t)(h[i] >> 8);
        b[i] = (int16_t)(h[i] & 255);
    }
    if (M % 2) a[M] = b[M] = 0;
}

/* One group's start values (16 rows, from row kk) into o from the input
 * sums: a (with split, a and b over the high and the low bytes of the
 * input, as the state's in rows512_readout, D >= 8 in place of os); mode 2:
 * fx16 whole rows with max|x| <= i32_xmax (rec_avx2_starts_out32), 1: fx16
 * whole rows (rec_avx2_starts_out), 0 with w8: the rounded start value. */
ROWS512_INLINE void rows512_start_out(const rows512_k *k, __m512i a, __m512i b, int kk, int32_t *o, const int mode,
                                      const int split, const int w8) {
    if (w8) {
        __m512i v = _mm512_add_epi32(_mm512_loadu_si512((const void *)(k->bth + kk)), a);
        v = k->its > 0 ? rec_avx512_round(v, k->ish, k->ibias, _mm512_set1_epi32(k->up)) : _mm512_sll_epi32(v, k->lsh);
        _mm512_storeu_si512((void *)o, v);
        return;
    }
    if (mode == 2) {
        const __m512i v = _mm512_add_epi32(_mm512_loadu_si512((const void *)(k->bt1 + kk)), a);
        _mm512_storeu_si512((void *)o, _mm512_sra_epi32(v, k->dsh));
        _mm512_storeu_si512((void *)(o + MLI_DOT_GROUP),
                            _mm512_sll_epi32(_mm512_srl_epi32(_mm512_and_si512(v, k->mD), k->ish), k->lsh));
        return;
    }
    __m512i hadd, ladd; /* floor(B / 2^D), B mod 2^D of the input part B */
    rows512_parts(a, b, k->dsh, k->mD, k->dsh8, k->mD8, &hadd, &ladd, split);
    __m512i vh = _mm512_add_epi32(_mm512_loadu_si512((const void *)(k->bth + kk)), hadd);
    __m512i vl = _mm512_add_epi32(_mm512_loadu_si512((const void *)(k->btl + kk)), ladd);
    vh = _mm512_add_epi32(vh, _mm512_srl_epi32(vl, k->dsh)); /* vl >= 0 */
    vl = _mm512_sll_epi32(_mm512_srl_epi32(_mm512_and_si512(vl, k->mD), k->ish), k->lsh);
    vh = _mm512_min_epi32(_mm512_max_epi32(vh, k->ncl), k->cl);
    _mm512_storeu_si512((void *)o, vh);
    _mm512_storeu_si512((void *)(o + MLI_DOT_GROUP), _mm512_add_epi32(vl, k->half));
}

/* The start values of V steps (step v's input pairs at xv[v], with split
 * its high bytes and xl[v] its low bytes; its start values at o[v]) from
 * one pass over the input weights per pair of groups. */
ROWS512_INLINE void rows512_starts_v(const rows512_k *k, const int32_t *const *xv, const int32_t *const *xl,
                                     int32_t *const *o, const int V, const int mode, const int split, const int w8) {
    const int16_t *w = k->w_in;
    const int pairs = k->n_pairs, groups = k->groups;
    for (int g = 0; g < groups; g += 2) {
        __m512i acc[2 * ROWS512_R], low[2 * ROWS512_R];
        const int ng = rows512_sums_g(w, pairs, groups, g, xv, xl, acc, low, V, split);
        for (int v = 0; v < V; v++)
            for (int i = 0; i < ng; i++)
                rows512_start_out(k, acc[ng * v + i], split ? low[ng * v + i] : acc[ng * v + i],
                                  (g + i) * MLI_DOT_GROUP, o[v] + (size_t)(g + i) * REC_START_STRIDE, mode, split, w8);
    }
}

/* The start values of `count` (<= ROWS512_STEPS) steps of one row from x
 * (step t's input at x + t * N) into out (step t's at out + t * groups *
 * REC_START_STRIDE), ROWS512_R steps per pass over the weights: where the
 * whole block's inputs are one chunk (or, fx16, split over their bytes),
 * else by the AVX2 code (rec_avx2_starts_steps).  xb: scratch of 2 *
 * ROWS512_STEPS * n_pairs int32 for the inputs' bytes. */
ROWS512_INLINE void rows512_starts(const mli_rec_avx2 *r, const rows512_k *k, const void *x, int N, int count,
                                   int32_t *out, int32_t *xb, const int w8, const int d8) {
    const mli_dense_plan *pl = r->plan;
    const int np = pl->n_pairs;
    const long os = (long)r->groups * REC_START_STRIDE;
    int mode = 0, split = 0;
    if (w8 && !r->w_in16) {
        rec_avx2_starts_steps(r, x, N, count, pl->x_all, out, w8, d8);
        return;
    }
    if (!w8) {
        int32_t mx = 0;
        for (int t = 0; t < count; t++) {
            const int32_t m = rec_avx2_maxabs16((const int16_t *)x + (size_t)t * (size_t)N, N);
            mx = m > mx ? m : mx;
        }
        mode = mx <= r->i32_xmax ? 2 : (int64_t)mx * r->l1i < ((int64_t)1 << 31);
        if (!mode) {
            if (r->D < 8 || 255 * r->l1i >= ((int64_t)1 << 31)) {
                rec_avx2_starts_steps(r, x, N, count, pl->x_all, out, w8, d8);
                return;
            }
            mode = 1;
            split = 1;
        }
    }
    const int32_t *xv[ROWS512_STEPS], *xl[ROWS512_STEPS];
    int32_t *o[ROWS512_STEPS];
    const size_t el = d8 ? 1 : 2;
    for (int t = 0; t < count; t++) {
        const char *src = (const char *)x + (size_t)t * (size_t)N * el;
        o[t] = out + t * os;
        if (split) { /* fx16: the high and the low bytes */
            int32_t *hh = xb + (size_t)(2 * t) * (size_t)np;
            rows512_bytes((const int16_t *)(const void *)src, N, hh, hh + np);
            xv[t] = hh;
            xl[t] = hh + np;
        } else { /* as pairs: 16-bit data of even length read in place, else widened or padded into xb */
            xv[t] = xl[t] = rec_avx2_state(src, N, xb + (size_t)t * (size_t)np, 1, d8);
        }
    }
    int t = 0;
#define ROWS512_STARTS(V, MODE, SPLIT) rows512_starts_v(k, xv + t, xl + t, o + t, V, MODE, SPLIT, w8)
#define ROWS512_STARTS_V(V)                                                         \
    do {                                                                            \
        if (w8) ROWS512_STARTS(V, 0, 0);                                            \
        else if (mode == 2) ROWS512_STARTS(V, 2, 0);                                \
        else if (split) ROWS512_STARTS(V, 1, 1);                                    \
        else ROWS512_STARTS(V, 1, 0);                                               \
    } while (0)
    for (; t + ROWS512_R <= count; t += ROWS512_R) ROWS512_STARTS_V(ROWS512_R);
    if (t + 4 <= count) {
        ROWS512_STARTS_V(4);
        t += 4;
    }
    if (t + 2 <= count) {
        ROWS512_STARTS_V(2);
        t += 2;
    }
    if (t < count) ROWS512_STARTS_V(1);
#undef ROWS512_STARTS_V
#undef ROWS512_STARTS
}

/* A row's parts of the scratch of rows512_run: its start values for
 * ROWS512_STEPS steps, two slots of outputs, its state as pairs and the
 * state's high and low bytes as pairs, each part 64-aligned. */
typedef struct {
    size_t starts, ybuf, pairs, xb, row;
} rows512_layout;

static rows512_layout rows512_layout_of(const rnn_avx2 *fz, size_t el) {
    rows512_layout l;
    l.starts = ((size_t)ROWS512_STEPS * (size_t)fz->rec.groups * REC_START_STRIDE * sizeof(int32_t) + 63) / 64 * 64;
    l.ybuf = (2 * (size_t)fz->K * el + 63) / 64 * 64;
    l.pairs = (((size_t)fz->M / 2 + 1) * sizeof(int32_t) + 63) / 64 * 64;
    l.row = l.starts + l.ybuf + 3 * l.pairs;
    l.xb = (2 * (size_t)ROWS512_STEPS * (size_t)fz->rec.plan->n_pairs * sizeof(int32_t) + 63) / 64 * 64;
    return l;
}

/* The bytes of scratch rows512_run takes (64-aligned): ROWS512_R rows' parts and the inputs' bytes. */
static size_t rows512_scratch_size(const rnn_avx2 *fz, size_t el) {
    const rows512_layout l = rows512_layout_of(fz, el);
    return ROWS512_R * l.row + l.xb;
}

/* Whether a state whose sums are not one chunk can take the split over its
 * bytes: each byte's sums exact in int32 (|h >> 8| <= 128, h & 255 <= 255)
 * and os >= 8. */
static int rows512_split_ok(const rnn_avx2 *fz) {
    return fz->rec.os >= 8 && 255 * fz->rec.l1s < ((int64_t)1 << 31);
}

/* The whole sequences of n <= ROWS512_R rows: row j's inputs x[j] (T steps
 * of N), its initial state h0[j], its outputs out[j] (all T steps with b2b,
 * else the last step's K).  scratch: rows512_scratch_size bytes, 64-aligned.
 * poll(work, n) asks about Ctrl-C.  Returns 1 when done, -1 when interrupted. */
ROWS512_INLINE int rows512_run_body(const rnn_avx2 *fz, const rows512_k *k0, int n, const void *const *x,
                                    const void *const *h0, void *const *out, long T, int b2b, char *scratch,
                                    long *work, int (*poll)(long *, int), const int w8, const int d8) {
    const size_t el = d8 ? 1 : 2, K = (size_t)fz->K;
    const int M = fz->M, N = fz->N;
    const long ss = (long)fz->rec.groups * REC_START_STRIDE;
    const int in_place = !d8 && M % 2 == 0; /* the state read as pairs where it is */
    const int split_ok = !w8 && rows512_split_ok(fz);
    const rows512_k kl = *k0, *k = &kl;
    const rows512_layout lay = rows512_layout_of(fz, el);
    int32_t *xb = (int32_t *)(void *)(scratch + ROWS512_R * lay.row);
    int32_t *starts[ROWS512_R], *hs[ROWS512_R], *hh[ROWS512_R], *hl[ROWS512_R];
    char *ybuf[ROWS512_R];
    const void *cur[ROWS512_R];
    const int32_t *hx[ROWS512_R], *stp[ROWS512_R];
    void *yo[ROWS512_R];
    for (int j = 0; j < n; j++) {
        char *q = scratch + (size_t)j * lay.row;
        starts[j] = (int32_t *)(void *)q;
        ybuf[j] = q + lay.starts;
        hs[j] = (int32_t *)(void *)(ybuf[j] + lay.ybuf);
        hh[j] = (int32_t *)(void *)((char *)hs[j] + lay.pairs);
        hl[j] = (int32_t *)(void *)((char *)hh[j] + lay.pairs);
        cur[j] = h0[j];
        hx[j] = rec_avx2_state(h0[j], M, hs[j], in_place, d8);
    }
    for (long t0 = 0; t0 < T; t0 += ROWS512_STEPS) {
        const int cnt = (int)(T - t0 < ROWS512_STEPS ? T - t0 : ROWS512_STEPS);
        if (poll(work, n * cnt)) return -1;
        for (int j = 0; j < n; j++) {
            const void *xj = (const char *)x[j] + (size_t)t0 * (size_t)N * el;
            rows512_starts(&fz->rec, k, xj, N, cnt, starts[j], xb, w8, d8);
        }
        for (int tt = 0; tt < cnt; tt++) {
            const long t = t0 + tt;
            int ok[ROWS512_R], nok = 0;
            for (int j = 0; j < n; j++) {
                /* ping-pong: the step reads its state while it writes its outputs */
                yo[j] = b2b ? (void *)((char *)out[j] + (size_t)t * K * el) : (void *)(ybuf[j] + (size_t)(t & 1) * K * el);
                stp[j] = starts[j] + tt * ss;
                if (w8 || (int64_t)rec_avx2_maxabs16((const int16_t *)cur[j], M) * fz->rec.l1s < ((int64_t)1 << 31))
                    ok[nok++] = j;
            }
            if (nok == n) { /* every row's sums one chunk */
                rows512_step_n(k, n, hx, hx, stp, yo, 0, w8, d8);
            } else if (split_ok) { /* fx16: every row over its state's bytes */
                for (int j = 0; j < n; j++) rows512_bytes((const int16_t *)cur[j], M, hh[j], hl[j]);
                rows512_step_n(k, n, (const int32_t *const *)hh, (const int32_t *const *)hl, stp, yo, 1, 0, 0);
            } else { /* fx16: the rows that are not one chunk take the AVX2 step */
                const int32_t *hx2[ROWS512_R], *st2[ROWS512_R];
                void *y2[ROWS512_R];
                for (int i = 0, j = 0; j < n; j++) {
                    if (i < nok && ok[i] == j) {
                        hx2[i] = hx[j], st2[i] = stp[j], y2[i] = yo[j];
                        i++;
                    } else {
                        rnn_avx2_body(fz, stp[j], cur[j], NULL, yo[j], NULL, NULL, 0, 0);
                    }
                }
                rows512_step_n(k, nok, hx2, hx2, st2, y2, 0, w8, d8);
            }
            for (int j = 0; j < n; j++) { /* the next state is the step's first M outputs */
                cur[j] = yo[j];
                hx[j] = rec_avx2_state(yo[j], M, hs[j], in_place, d8);
            }
        }
    }
    for (int j = 0; j < n && !b2b; j++) memcpy(out[j], cur[j], K * el);
    return 1;
}

#define ROWS512_RUN_DEF(name, w8, d8)                                                                          \
    ROWS512_TARGET static int name(const rnn_avx2 *restrict fz, const rows512_k *k, int n, const void *const *x,  \
                                   const void *const *h0, void *const *out, long T, int b2b, char *scratch,      \
                                   long *work, int (*poll)(long *, int)) {                                       \
        return rows512_run_body(fz, k, n, x, h0, out, T, b2b, scratch, work, poll, w8, d8);                     \
    }
ROWS512_RUN_DEF(rows512_run16, 0, 0)
ROWS512_RUN_DEF(rows512_run16w8, 1, 0)
ROWS512_RUN_DEF(rows512_run8, 1, 1)
#endif /* MLIPY_X86_TARGETS */

#endif /* MLIPY_ROWS_AVX512_H */
