/* The recurrent dense part of one time step on AVX2 (vpmaddwd), for the
 * fused LSTM and basic RNN steps: the same integers as mli_prv_dense_step_*
 * with every read-out on int32 lanes.  Used only where the bounds below show
 * that no clamp of the accumulator can act and no int32 value can wrap
 * (mli_rec_avx2_init returns 0 otherwise and the caller takes the stepped
 * path).  Included by the kernels that use it (x86 builds).
 *
 * fx16 (40-bit accumulator, floor shifts; no partial sum able to reach its
 * limit, mli_rec_avx2_ok16): with
 * D = in_to_state + out_shift, the input part B = bias term + x . W_in is
 * kept as B = hi * 2^D + lo (0 <= lo < 2^D), each chunk's exact int32 sum
 * split into its high and low parts as it is added.  The state part's start
 * A = floor(B / 2^its) (its > 0) or B * 2^-its (its <= 0) then is
 * A = hi * 2^os + Alo with 0 <= Alo < 2^os, and the read-out
 * (A + S + 2^(os-1)) >> os, halves to even unless rounding up, is
 * hi + sum(c >> os) + (Alo + 2^(os-1) + sum(c & (2^os - 1))) >> os over the
 * state part's chunks c; a tie is those low bits all zero.  hi is clamped to
 * +-cl, beyond which the result saturates either way.
 *
 * 8-bit weights (32-bit accumulator, rounding shifts): where mli_rec_avx2_i32
 * shows every value of the read-out inside int32 with no clamp acting, the
 * modular int32 sums are the exact ones and the read-out is that of
 * epilogue_* on int32 lanes.
 *
 * Start values of a step (what the state part starts from, computed from
 * the input alone, so one step ahead): per group of 16 rows, 32 int32:
 * fx16 hi (clamped) then Alo + 2^(os-1); 8-bit weights the start value
 * (the rounded or shifted bias term + input sum) then unused.
 *
 * fx16 steps whose input part provably fits int32 (max|x| of the step at
 * most i32_xmax): B' = B + 2^(D-1) is one int32 sum from bt1, and the
 * start values are hi' = floor(B' / 2^D) (|hi'| <= 2^(31-D), no clamp
 * needed) and Alo' = A' mod 2^os, where A' = A + 2^(os-1) (the floor
 * shift by its, or the left shift, takes the 2^(D-1) to 2^(os-1) exactly);
 * hi' * 2^os + Alo' = hi * 2^os + Alo + 2^(os-1): the same read-out. */
#ifndef MLI_PRV_DENSE_AVX2_H
#define MLI_PRV_DENSE_AVX2_H

#include <string.h>
#include "mli_prv_dense.h"
#include "mli_prv_isa.h"
#include "mli_prv_lut_simd.h"

#ifdef MLIPY_X86_TARGETS
#include <immintrin.h>

#define REC_AVX2_TARGET __attribute__((target("avx2")))
#define REC_AVX2_INLINE __attribute__((always_inline)) REC_AVX2_TARGET static inline
#define REC_AVX2_BLOCK 4 /* groups whose sums share each broadcast of x */
#define REC_START_STRIDE 32 /* int32 start values per group */

/* The constants of the start values and the read-out as vectors, made
 * once per call (rec_avx2_sc_fill), not per step. */
typedef struct {
    __m128i dsh, ish, lsh, osh;
    __m256i mD, up, ibias, cl, ncl, half, om, ob, tb;
} rec_avx2_sc;

typedef struct {
    const mli_dense_plan *plan;
    int K, groups, its, os, D, w8, d8;
    int32_t *bth, *btl; /* per row: fx16 bias term >> D and its low D bits; 8-bit weights: bth the bias term */
    int32_t *bt1;       /* fx16: per row the bias term + 2^(D-1) as int32 (where i32_xmax >= 0) */
    int32_t i32_xmax;   /* fx16: the largest max|x| whose input part B + 2^(D-1) fits int32 (-1: none) */
    int64_t l1i, l1s;   /* fx16: the largest sum of |w| of a row over the input / state part */
    const int16_t *w_in16, *w_st16; /* 8-bit weights: the packing widened to int16 (small plans), else NULL */
    rec_avx2_sc sc;
} mli_rec_avx2;

/* The call's constants into r->sc (after the rest of r is set): up, the
 * rounding mode; cl, the clamp of the high parts (fx16). */
__attribute__((target("avx2"))) static void rec_avx2_sc_fill(mli_rec_avx2 *r, int32_t up, int32_t cl) {
    rec_avx2_sc *c = &r->sc;
    const int D = r->D, its = r->its, os = r->os;
    c->dsh = _mm_cvtsi32_si128(D);
    c->ish = _mm_cvtsi32_si128(its > 0 ? its : 0);
    c->lsh = _mm_cvtsi32_si128(its < 0 ? -its : 0);
    c->osh = _mm_cvtsi32_si128(os);
    c->mD = _mm256_set1_epi32((int32_t)(((int64_t)1 << (D > 0 && D < 31 ? D : 0)) - 1));
    c->up = _mm256_set1_epi32(up);
    c->ibias = _mm256_set1_epi32(its > 0 && its < 31 ? (1 << (its - 1)) - 1 : 0);
    c->cl = _mm256_set1_epi32(cl);
    c->ncl = _mm256_set1_epi32(-cl);
    c->half = _mm256_set1_epi32(!r->w8 && os > 0 && os < 31 ? (int32_t)1 << (os - 1) : 0);
    c->om = _mm256_set1_epi32(os > 0 && os < 31 ? (int32_t)(((int64_t)1 << os) - 1) : 0);
    c->ob = _mm256_set1_epi32(os > 0 && os < 31 ? (1 << (os - 1)) - 1 : 0);
    /* fx16: a tie (the low bits of A + S + 2^(os-1) all zero) takes the even result unless rounding up */
    c->tb = _mm256_set1_epi32(up ? 0 : 1);
}

/* Whether two byte ranges are disjoint (a NULL or empty one is). */
static inline int mli_rec_avx2_disjoint(const void *a, size_t na, const void *b, size_t nb) {
    return !a || !b || !na || !nb || (uintptr_t)a + na <= (uintptr_t)b || (uintptr_t)b + nb <= (uintptr_t)a;
}

/* 8-bit weights (32-bit accumulator): whether, for any data, no clamp of
 * the read-out can act and every value of it, rounding offsets included,
 * stays inside int32.  Bounds: |bias term| <= top, |a part's sum| <= io *
 * (the largest sum of |w| of a row over the part, l1i / l1s). */
static inline int mli_rec_avx2_i32(int its, int os, int64_t io, int64_t top, int64_t l1i, int64_t l1s) {
    const int64_t lim = (int64_t)1 << 31;
    if (os <= 0 || os > 30 || its > 30 || its < -23 || l1i >= lim || l1s >= lim || top >= lim) return 0;
    const int64_t b1 = top + io * l1i; /* |bias term + input sum| (top < 2^31, io <= 2^15: no overflow) */
    if (b1 + (its > 0 ? (int64_t)1 << (its - 1) : 0) >= lim) return 0;
    const int64_t ba = its > 0 ? (b1 >> its) + 1 : b1 * ((int64_t)1 << -its); /* the state part's start */
    const int64_t b2 = ba + io * l1s;                                          /* the full sum */
    return b2 + ((int64_t)1 << (os - 1)) < lim;
}

/* fx16: whether no partial sum of the 40-bit accumulator can reach its
 * limit for any data (MLI's clamp after every MAC then never acts) and the
 * int32 read-out's parts stay inside int32 (see the top of this file). */
static inline int mli_rec_avx2_ok16(int its, int os, int64_t top, int64_t l1i, int64_t l1s, int n_in, int n_st,
                                    int64_t *cl) {
    const int64_t lim = (int64_t)1 << 31, lim40 = (int64_t)1 << 39, D = its + os;
    if (os < 1 || os > 29 || D < 9 || D > 29 || its < -29 || its > 62 || l1i >= lim40 || l1s >= lim40) return 0;
    const int64_t c_in = 32768 * l1i, c_st = 32768 * l1s; /* |x| <= 2^15 */
    if (top + c_in >= lim40) return 0;
    int64_t a = top + c_in; /* the largest |state part's start| (the shift is monotone) */
    if (its > 0) a >>= its;
    else if (a >= (lim40 >> -its)) return 0;
    else a <<= -its;
    if (a + c_st >= lim40) return 0;
    /* (n_in, n_st: the most pieces a row is cut into, mli_rec_avx2_max_pieces)
     * input side: the low parts' sum below (n_in + 1) * 2^D, the high parts' within +-2^30 */
    if (((int64_t)(n_in + 1) << D) >= lim) return 0;
    if (((top + c_in) >> D) + 2 * (int64_t)n_in + 4 >= ((int64_t)1 << 30)) return 0;
    /* state side: Alo + 2^(os-1) plus the pieces' low parts below (n_st + 2) * 2^os; the rest
     * of the result (the chunks' high parts and the carry) within +-rest */
    if (((int64_t)(n_st + 2) << os) >= lim) return 0;
    const int64_t rest = (c_st >> os) + 2 * (int64_t)n_st + 4;
    *cl = 32768 + rest + 2;
    return *cl + rest + 4 < lim;
}

/* A block of ng groups' rows is cut wherever a chunk of any of the groups
 * ends (a part of a chunk is a chunk): the end of the next piece, from each
 * group's chunk table ch[j] at entry ci[j]; the tables that end there move
 * on to their next chunk. */
static inline int mli_rec_avx2_next_cut(const int32_t *const *ch, int *ci, int ng, int pairs) {
    int pend = pairs;
    for (int j = 0; j < ng; j++) pend = ch[j][ci[j]] < pend ? ch[j][ci[j]] : pend;
    for (int j = 0; j < ng; j++) ci[j] += ch[j][ci[j]] == pend;
    return pend;
}

/* The most pieces rec_avx2_sums cuts a row's sums into (each piece adds
 * one low part, and one floor to the high parts): blocks of REC_AVX2_BLOCK
 * groups cut as mli_rec_avx2_next_cut says, so a group's row may be in up
 * to REC_AVX2_BLOCK times as many pieces as it has chunks; the groups after
 * the last whole block go one at a time. */
static inline int mli_rec_avx2_max_pieces(const int32_t *chunks, int groups, int pairs) {
    int most = 0, g = 0;
    for (; g + REC_AVX2_BLOCK <= groups; g += REC_AVX2_BLOCK) {
        const int32_t *ch[REC_AVX2_BLOCK];
        int ci[REC_AVX2_BLOCK], n = 0;
        for (int j = 0; j < REC_AVX2_BLOCK; j++) {
            ch[j] = chunks + (size_t)(g + j) * ((size_t)pairs + 1);
            ci[j] = 1;
        }
        for (int p = 0; p < pairs; n++) p = mli_rec_avx2_next_cut(ch, ci, REC_AVX2_BLOCK, pairs);
        most = n > most ? n : most;
    }
    for (; g < groups; g++) {
        const int n = chunks[(size_t)g * ((size_t)pairs + 1)];
        most = n > most ? n : most;
    }
    return most;
}

/* The largest sum of |w| of a row over the pairs first, first + step, ...
 * of packed weights (int16, or int8 with w8), from the weights themselves. */
__attribute__((target("avx2"))) static inline int64_t mli_rec_avx2_l1_of(const void *w, int groups, int pairs, int w8,
                                                                        int first, int step) {
    const __m256i lo16 = _mm256_set1_epi32(0xFFFF);
    int64_t best = 0;
    for (int g = 0; g < groups; g++) {
        __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()}; /* int64 sums of rows 0-3, 4-7, 8-11, 12-15 */
        for (int p0 = first; p0 < pairs; p0 += 16384 * step) { /* int32 lanes: up to 16384 * 2 * 32768 = 2^30 */
            const int pend = (pairs - p0) / step < 16384 ? pairs : p0 + 16384 * step;
            __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
            for (int p = p0; p < pend; p += step) {
                const size_t at = ((size_t)g * (size_t)pairs + (size_t)p) * 32;
                __m256i v0, v1;
                if (w8) {
                    v0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)((const int8_t *)w + at)));
                    v1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)((const int8_t *)w + at + 16)));
                } else {
                    v0 = _mm256_loadu_si256((const __m256i *)((const int16_t *)w + at));
                    v1 = _mm256_loadu_si256((const __m256i *)((const int16_t *)w + at + 16));
                }
                v0 = _mm256_abs_epi16(v0); /* -32768 gives 0x8000: read as unsigned */
                v1 = _mm256_abs_epi16(v1);
                a0 = _mm256_add_epi32(a0, _mm256_add_epi32(_mm256_and_si256(v0, lo16), _mm256_srli_epi32(v0, 16)));
                a1 = _mm256_add_epi32(a1, _mm256_add_epi32(_mm256_and_si256(v1, lo16), _mm256_srli_epi32(v1, 16)));
            }
            s[0] = _mm256_add_epi64(s[0], _mm256_cvtepu32_epi64(_mm256_castsi256_si128(a0)));
            s[1] = _mm256_add_epi64(s[1], _mm256_cvtepu32_epi64(_mm256_extracti128_si256(a0, 1)));
            s[2] = _mm256_add_epi64(s[2], _mm256_cvtepu32_epi64(_mm256_castsi256_si128(a1)));
            s[3] = _mm256_add_epi64(s[3], _mm256_cvtepu32_epi64(_mm256_extracti128_si256(a1, 1)));
        }
        int64_t r[16];
        for (int q = 0; q < 4; q++) _mm256_storeu_si256((__m256i *)(r + 4 * q), s[q]);
        for (int k = 0; k < 16; k++) best = r[k] > best ? r[k] : best;
    }
    return best;
}

/* The largest sum of |w| of a row over all pairs. */
static inline int64_t mli_rec_avx2_l1(const void *w, int groups, int pairs, int w8) {
    return mli_rec_avx2_l1_of(w, groups, pairs, w8, 0, 1);
}

/* Both parts' mli_rec_avx2_l1, from the memo kept with the packing when a
 * call since the packing already computed them (the weights are the same
 * bytes: a changed or repacked W resets the memo). */
static inline void mli_rec_avx2_l1_kept(const mli_dense_plan *plan, int w8, int64_t *l1i, int64_t *l1s) {
    mli_dense_l1_memo *m = plan->l1w;
    if (!m->have) {
        m->in = mli_rec_avx2_l1(plan->w_in, plan->groups, plan->n_pairs, w8);
        m->st = mli_rec_avx2_l1(plan->w_st, plan->groups, plan->s_pairs, w8);
        m->have = 1;
    }
    *l1i = m->in;
    *l1s = m->st;
}

/* The state part's largest sum of |w| of a row over the pairs p = j mod 8,
 * largest over j (int16 packed weights), kept with the packing likewise: a
 * dot product whose eight accumulators take those pairs is exact in int32
 * lanes where max|h| times it is below 2^31. */
static inline int64_t mli_rec_avx2_l1_st8_kept(const mli_dense_plan *plan) {
    mli_dense_l1_memo *m = plan->l1w;
    if (!m->have_st8) {
        int64_t best = 0;
        for (int j = 0; j < 8; j++) {
            const int64_t b = mli_rec_avx2_l1_of(plan->w_st, plan->groups, plan->s_pairs, 0, j, 8);
            best = b > best ? b : best;
        }
        m->st8 = best;
        m->have_st8 = 1;
    }
    return m->st8;
}

/* The bias terms (40-bit: -2^39 <= bt < 2^39) split at bit D (9..29) into
 * bth = floor(bt / 2^D) and btl = bt mod 2^D, zero past K up to Kp.  The
 * floor as a logical shift of bt + 2^39 (never negative) less 2^(39-D).
 * With bt1 (the caller has shown |bt| + 2^(D-1) < 2^31) also
 * bt1 = bt + 2^(D-1) as int32. */
__attribute__((target("avx2"))) static inline void mli_rec_avx2_bias_split(const int64_t *bt, int K, int Kp, int D,
                                                                    int32_t *bth, int32_t *btl, int32_t *bt1) {
    const int64_t mD = ((int64_t)1 << D) - 1;
    const __m256i off = _mm256_set1_epi64x((int64_t)1 << 39), offs = _mm256_set1_epi64x((int64_t)1 << (39 - D));
    const __m256i mask = _mm256_set1_epi64x(mD), even = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    const __m128i sh = _mm_cvtsi32_si128(D);
    const int64_t hD = (int64_t)1 << (D - 1);
    const __m256i hDv = _mm256_set1_epi64x(hD);
    int k = 0;
    for (; k + 4 <= K; k += 4) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(bt + k));
        const __m256i hi = _mm256_sub_epi64(_mm256_srl_epi64(_mm256_add_epi64(v, off), sh), offs);
        const __m256i lo = _mm256_and_si256(v, mask);
        _mm_storeu_si128((__m128i *)(bth + k), _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(hi, even)));
        _mm_storeu_si128((__m128i *)(btl + k), _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(lo, even)));
        if (bt1)
            _mm_storeu_si128((__m128i *)(bt1 + k),
                             _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_add_epi64(v, hDv), even)));
    }
    for (; k < Kp; k++) {
        const int64_t b = k < K ? bt[k] : 0;
        bth[k] = (int32_t)(b >> D); /* floor */
        btl[k] = (int32_t)(b & mD);
        if (bt1) bt1[k] = (int32_t)(b + hD);
    }
}

/* Whether the AVX2 recurrent read-out computes this plan's steps (the
 * plan's weights packed in the direct form on both parts, fast read-out, K
 * rows, S > 0), and its setup: the bias terms' split into plan->s_in (as
 * int32, 2 * groups * 16).  w8: 8-bit weights; d8: 8-bit data.  The bounds
 * take the plan's per-group bounds on sum |w| first, the weights' own sums
 * where those do not settle it. */
static inline int mli_rec_avx2_setup(mli_rec_avx2 *r, const mli_dense_plan *plan, int K, mli_dense_shifts sh, int w8,
                                     int d8) {
    if (!plan->packed || plan->rows || !plan->direct_in || !plan->direct_st || !plan->fast_epilogue || plan->S <= 0)
        return 0;
    const int its = sh.in_to_state, os = sh.out_shift, Kp = plan->groups * MLI_DOT_GROUP;
    r->plan = plan;
    r->K = K;
    r->groups = plan->groups;
    r->its = its;
    r->os = os;
    r->D = its + os;
    r->w8 = w8;
    r->d8 = d8;
    r->bth = (int32_t *)(void *)plan->s_in;
    r->btl = r->bth + Kp;
    r->w_in16 = r->w_st16 = NULL;
    const int64_t top = plan->bias_top;
    int64_t l1i, l1s;
    mli_prv_dense_l1_max(plan, &l1i, &l1s);
    if (w8) {
        const int64_t io = d8 ? 128 : 32768;
        if (!mli_rec_avx2_i32(its, os, io, top, l1i, l1s)) {
            mli_rec_avx2_l1_kept(plan, 1, &l1i, &l1s);
            if (!mli_rec_avx2_i32(its, os, io, top, l1i, l1s)) return 0;
        }
        for (int k = 0; k < Kp; k++) r->bth[k] = k < K ? (int32_t)plan->bias_term[k] : 0;
        if (mli_prv_dense_wide8(plan)) { /* small plans: the 16-bit loops on the widened copy */
            r->w_in16 = plan->w_in16;
            r->w_st16 = plan->w_st16;
        }
        r->l1i = r->l1s = 0;
        r->i32_xmax = -1;
        rec_avx2_sc_fill(r, mlipy_rounding_up, 0);
        return 1;
    }
    mli_dense_l1_memo *m = plan->l1w; /* the pieces depend on the packing's chunks alone */
    if (!m->have_pieces) {
        m->pieces_in = mli_rec_avx2_max_pieces(plan->chunk_in, plan->groups, plan->n_pairs);
        m->pieces_st = mli_rec_avx2_max_pieces(plan->chunk_st, plan->groups, plan->s_pairs);
        m->have_pieces = 1;
    }
    const int n_in = m->pieces_in, n_st = m->pieces_st;
    int64_t cl = 0;
    /* the weights' own sums: the bounds below, and per step whether a row
     * is one chunk for that step's data */
    mli_rec_avx2_l1_kept(plan, 0, &l1i, &l1s);
    if (!mli_rec_avx2_ok16(its, os, top, l1i, l1s, n_in, n_st, &cl)) return 0;
    r->l1i = l1i;
    r->l1s = l1s;
    /* |bias term + 2^(D-1) + x . W_in| <= top + 2^(D-1) + max|x| * l1i: the
     * int32 start values' bound; bt1 lives in plan->s_st, which the AVX2
     * steps do not use otherwise */
    const int64_t lim = (int64_t)1 << 31, hD = (int64_t)1 << (r->D - 1), room = lim - 1 - top - hD;
    r->i32_xmax = -1;
    r->bt1 = room >= 0 ? (int32_t *)(void *)plan->s_st : NULL;
    if (room >= 0) r->i32_xmax = (int32_t)(l1i == 0 || room / l1i >= 32768 ? 32768 : room / l1i);
    mli_rec_avx2_bias_split(plan->bias_term, K, Kp, r->D, r->bth, r->btl, r->bt1);
    rec_avx2_sc_fill(r, mlipy_rounding_up, (int32_t)cl);
    return 1;
}

/* mli_rec_avx2_setup where the AVX2 path is the one picked (AVX-512 VNNI
 * machines take their own steps; the batched rows there reuse the setup). */
static inline int mli_rec_avx2_init(mli_rec_avx2 *r, const mli_dense_plan *plan, int K, mli_dense_shifts sh, int w8,
                                    int d8) {
    return mlipy_get_isa() == MLIPY_ISA_AVX2 && mli_rec_avx2_setup(r, plan, K, sh, w8, d8);
}

/* One int32 pair broadcast (x may be int16 data read in place: any alignment) */
REC_AVX2_INLINE __m256i rec_avx2_bcast(const int32_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

/* Rows 0-7 / 8-15 of packed pair p of a group (int16 or int8 packed weights). */
#define REC_AVX2_W(wg, p, half, w8)                                                                         \
    ((w8) ? _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)((const int8_t *)(wg) + (size_t)(p) * 32 + 16 * (half)))) \
          : _mm256_loadu_si256((const __m256i *)((const int16_t *)(wg) + (size_t)(p) * 32 + 16 * (half))))

/* acc += madd(xb, rows 0-7 / 8-15 of pair p): written in assembly so that
 * the accumulators stay in their registers across the loop (GCC otherwise
 * copies each one per iteration); the same instructions as the intrinsics. */
#define REC_AVX2_MADD(acc, xb, wg, p, half, w8)                                                            \
    do {                                                                                                   \
        if (w8) {                                                                                          \
            __m256i t_;                                                                                    \
            __asm__("vpmovsxbw %2, %1\n\tvpmaddwd %1, %3, %1\n\tvpaddd %1, %0, %0"                          \
                    : "+x"(acc), "=&x"(t_)                                                                 \
                    : "m"(*(const __m128i *)((const int8_t *)(wg) + (size_t)(p) * 32 + 16 * (half))), "x"(xb)); \
        } else {                                                                                           \
            __m256i t_;                                                                                    \
            __asm__("vpmaddwd %2, %3, %1\n\tvpaddd %1, %0, %0"                                              \
                    : "+x"(acc), "=&x"(t_)                                                                 \
                    : "m"(*(const __m256i *)((const int16_t *)(wg) + (size_t)(p) * 32 + 16 * (half))), "x"(xb)); \
        }                                                                                                  \
    } while (0)

/* max |v| of n int16 (32768 for -32768) */
REC_AVX2_INLINE int32_t rec_avx2_maxabs16(const int16_t *v, int n) {
    __m256i m = _mm256_setzero_si256();
    int j = 0;
    for (; j + 16 <= n; j += 16)
        m = _mm256_max_epu16(m, _mm256_abs_epi16(_mm256_loadu_si256((const __m256i *)(v + j))));
    __m128i h = _mm_max_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    h = _mm_max_epu16(h, _mm_srli_si128(h, 8));
    h = _mm_max_epu16(h, _mm_srli_si128(h, 4));
    h = _mm_max_epu16(h, _mm_srli_si128(h, 2));
    int32_t r = _mm_extract_epi16(h, 0);
    for (; j < n; j++) {
        const int32_t a = v[j] < 0 ? -(int32_t)v[j] : v[j];
        r = a > r ? a : r;
    }
    return r;
}

/* rec_avx2_whole for four groups of 16-bit weights (w: the first, the
 * others glen_b bytes apart), the pairs two at a time in one loop of
 * assembly: GCC's own loop copied accumulators between registers on every
 * iteration once the step kept its constants in registers.  The same
 * multiply-adds into the same accumulators (their int32 sums wrap, so the
 * order does not change them). */
REC_AVX2_INLINE void rec_avx2_whole4(const int16_t *w, long glen_b, int pairs, const int32_t *x, __m256i *a) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    if (pairs >= 2) {
        const char *b = (const char *)w;
        const int32_t *xp = x, *xe = x + (pairs & ~1);
        const long L3 = 3 * glen_b;
        __m256i xb, xc, t;
        __asm__("1:\n\t"
                "vpbroadcastd (%[x]), %[xb]\n\t"
                "vpbroadcastd 4(%[x]), %[xc]\n\t"
                "add $8, %[x]\n\t"
                "vpmaddwd (%[b]), %[xb], %[t]\n\tvpaddd %[t], %[a0], %[a0]\n\t"
                "vpmaddwd 32(%[b]), %[xb], %[t]\n\tvpaddd %[t], %[a1], %[a1]\n\t"
                "vpmaddwd 64(%[b]), %[xc], %[t]\n\tvpaddd %[t], %[a0], %[a0]\n\t"
                "vpmaddwd 96(%[b]), %[xc], %[t]\n\tvpaddd %[t], %[a1], %[a1]\n\t"
                "vpmaddwd (%[b],%[L]), %[xb], %[t]\n\tvpaddd %[t], %[a2], %[a2]\n\t"
                "vpmaddwd 32(%[b],%[L]), %[xb], %[t]\n\tvpaddd %[t], %[a3], %[a3]\n\t"
                "vpmaddwd 64(%[b],%[L]), %[xc], %[t]\n\tvpaddd %[t], %[a2], %[a2]\n\t"
                "vpmaddwd 96(%[b],%[L]), %[xc], %[t]\n\tvpaddd %[t], %[a3], %[a3]\n\t"
                "vpmaddwd (%[b],%[L],2), %[xb], %[t]\n\tvpaddd %[t], %[a4], %[a4]\n\t"
                "vpmaddwd 32(%[b],%[L],2), %[xb], %[t]\n\tvpaddd %[t], %[a5], %[a5]\n\t"
                "vpmaddwd 64(%[b],%[L],2), %[xc], %[t]\n\tvpaddd %[t], %[a4], %[a4]\n\t"
                "vpmaddwd 96(%[b],%[L],2), %[xc], %[t]\n\tvpaddd %[t], %[a5], %[a5]\n\t"
                "vpmaddwd (%[b],%[L3]), %[xb], %[t]\n\tvpaddd %[t], %[a6], %[a6]\n\t"
                "vpmaddwd 32(%[b],%[L3]), %[xb], %[t]\n\tvpaddd %[t], %[a7], %[a7]\n\t"
                "vpmaddwd 64(%[b],%[L3]), %[xc], %[t]\n\tvpaddd %[t], %[a6], %[a6]\n\t"
                "vpmaddwd 96(%[b],%[L3]), %[xc], %[t]\n\tvpaddd %[t], %[a7], %[a7]\n\t"
                "sub $-128, %[b]\n\t"
                "cmp %[xe], %[x]\n\t"
                "jne 1b"
                : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5),
                  [a6] "+x"(a6), [a7] "+x"(a7), [xb] "=&x"(xb), [xc] "=&x"(xc), [t] "=&x"(t), [b] "+r"(b),
                  [x] "+r"(xp)
                : [xe] "r"(xe), [L] "r"(glen_b), [L3] "r"(L3),
                  "m"(*(const char(*)[])w), "m"(*(const int32_t(*)[])x)
                : "cc");
    }
    if (pairs % 2) { /* the odd last pair */
        const int p = pairs - 1;
        const __m256i xb = rec_avx2_bcast(x + p);
        const int16_t *w1 = (const int16_t *)((const char *)w + glen_b), *w2 = (const int16_t *)((const char *)w1 + glen_b);
        const int16_t *w3 = (const int16_t *)((const char *)w2 + glen_b);
        REC_AVX2_MADD(a0, xb, w, p, 0, 0);
        REC_AVX2_MADD(a1, xb, w, p, 1, 0);
        REC_AVX2_MADD(a2, xb, w1, p, 0, 0);
        REC_AVX2_MADD(a3, xb, w1, p, 1, 0);
        REC_AVX2_MADD(a4, xb, w2, p, 0, 0);
        REC_AVX2_MADD(a5, xb, w2, p, 1, 0);
        REC_AVX2_MADD(a6, xb, w3, p, 0, 0);
        REC_AVX2_MADD(a7, xb, w3, p, 1, 0);
    }
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, a[4] = a4, a[5] = a5, a[6] = a6, a[7] = a7;
}

/* fx16: the sums over all pairs of NG consecutive groups from g0 (rows 0-7
 * and 8-15 of group g0 + j in element 2j and 2j + 1), each piece's exact
 * int32 sum added as its high part (>> sh) to hi and its low part (& mask)
 * to lo.  The NG groups' rows are cut as mli_rec_avx2_next_cut says, into
 * pieces inside the chunk tables' chunks (mli_rec_avx2_max_pieces counts
 * them for the bounds).  Rows that are one chunk take rec_avx2_whole. */
REC_AVX2_INLINE void rec_avx2_sums(const void *w, int pairs, const int32_t *chunks, int g0, const int32_t *x,
                                   __m256i *hi, __m256i *lo, __m128i sh, __m256i mask, const int NG) {
    const size_t glen = (size_t)pairs * 2 * MLI_DOT_GROUP;
    const int16_t *wg[REC_AVX2_BLOCK];
    const int32_t *ch[REC_AVX2_BLOCK];
    int ci[REC_AVX2_BLOCK];
    for (int j = 0; j < NG; j++) {
        wg[j] = (const int16_t *)w + (size_t)(g0 + j) * glen;
        ch[j] = chunks + (size_t)(g0 + j) * ((size_t)pairs + 1);
        ci[j] = 1;
    }
    int p = 0;
    while (p < pairs) {
        const int pend = mli_rec_avx2_next_cut(ch, ci, NG, pairs);
        __m256i a[2 * REC_AVX2_BLOCK];
        for (int i = 0; i < 2 * NG; i++) a[i] = _mm256_setzero_si256();
        for (; p + 1 < pend; p += 2) { /* two pairs per iteration: half the loop's steps */
            const __m256i xb = rec_avx2_bcast(x + p), xc = rec_avx2_bcast(x + p + 1);
            for (int j = 0; j < NG; j++) {
                REC_AVX2_MADD(a[2 * j], xb, wg[j], p, 0, 0);
                REC_AVX2_MADD(a[2 * j + 1], xb, wg[j], p, 1, 0);
                REC_AVX2_MADD(a[2 * j], xc, wg[j], p + 1, 0, 0);
                REC_AVX2_MADD(a[2 * j + 1], xc, wg[j], p + 1, 1, 0);
            }
        }
        for (; p < pend; p++) {
            const __m256i xb = rec_avx2_bcast(x + p);
            for (int j = 0; j < NG; j++) {
                REC_AVX2_MADD(a[2 * j], xb, wg[j], p, 0, 0);
                REC_AVX2_MADD(a[2 * j + 1], xb, wg[j], p, 1, 0);
            }
        }
        for (int i = 0; i < 2 * NG; i++) {
            hi[i] = _mm256_add_epi32(hi[i], _mm256_sra_epi32(a[i], sh));
            lo[i] = _mm256_add_epi32(lo[i], _mm256_and_si256(a[i], mask));
        }
    }
}

/* The modular int32 sums of whole rows of NG groups from g0 (rows 0-7 and
 * 8-15 of group g0 + j in a[2j], a[2j + 1]): the one-chunk case of
 * rec_avx2_sums, with nothing else live across the loop. */
REC_AVX2_INLINE void rec_avx2_whole(const void *w, int pairs, int g0, const int32_t *x, __m256i *a, const int NG,
                                    const int w8) {
    const size_t glen = (size_t)pairs * 2 * MLI_DOT_GROUP;
    if (NG == 4 && !w8) {
        rec_avx2_whole4((const int16_t *)w + (size_t)g0 * glen, (long)(glen * sizeof(int16_t)), pairs, x, a);
        return;
    }
    const void *wg[REC_AVX2_BLOCK];
    for (int j = 0; j < NG; j++)
        wg[j] = w8 ? (const void *)((const int8_t *)w + (size_t)(g0 + j) * glen)
                   : (const void *)((const int16_t *)w + (size_t)(g0 + j) * glen);
    for (int i = 0; i < 2 * NG; i++) a[i] = _mm256_setzero_si256();
    int p = 0;
    for (; p + 1 < pairs; p += 2) {
        const __m256i xb = rec_avx2_bcast(x + p), xc = rec_avx2_bcast(x + p + 1);
        for (int j = 0; j < NG; j++) {
            REC_AVX2_MADD(a[2 * j], xb, wg[j], p, 0, w8);
            REC_AVX2_MADD(a[2 * j + 1], xb, wg[j], p, 1, w8);
            REC_AVX2_MADD(a[2 * j], xc, wg[j], p + 1, 0, w8);
            REC_AVX2_MADD(a[2 * j + 1], xc, wg[j], p + 1, 1, w8);
        }
    }
    if (p < pairs) {
        const __m256i xb = rec_avx2_bcast(x + p);
        for (int j = 0; j < NG; j++) {
            REC_AVX2_MADD(a[2 * j], xb, wg[j], p, 0, w8);
            REC_AVX2_MADD(a[2 * j + 1], xb, wg[j], p, 1, w8);
        }
    }
}

/* fx16, rows cut into chunks: hi, lo (2 * NG vectors) start from the
 * values at s0 (group j's at s0 + j * s_stride: hi parts, then lo parts
 * lo_at int32 further) and take the sums of x over NG groups from g0 (see
 * rec_avx2_sums).  A function of its own, apart from the whole-row case, so
 * that GCC keeps the whole-row case's loads after its sums. */
REC_AVX2_INLINE void rec_avx2_chunked(const void *w, int pairs, const int32_t *chunks, int g0, const int32_t *x,
                                      const int32_t *s0, long s_stride, int lo_at, __m128i sh, __m256i mask,
                                      __m256i *hi, __m256i *lo, const int NG) {
    for (int j = 0; j < NG; j++)
        for (int h = 0; h < 2; h++) {
            hi[2 * j + h] = _mm256_loadu_si256((const __m256i *)(s0 + j * s_stride + 8 * h));
            lo[2 * j + h] = _mm256_loadu_si256((const __m256i *)(s0 + j * s_stride + lo_at + 8 * h));
        }
    rec_avx2_sums(w, pairs, chunks, g0, x, hi, lo, sh, mask, NG);
}

/* (v + 2^(s-1) - 1 + (up | bit s of v)) >> s on 8 int32 lanes (no overflow: the callers' bounds) */
REC_AVX2_INLINE __m256i rec_avx2_round(__m256i v, __m128i s, __m256i bias, __m256i up) {
    const __m256i odd = _mm256_or_si256(up, _mm256_and_si256(_mm256_sra_epi32(v, s), _mm256_set1_epi32(1)));
    return _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(v, bias), odd), s);
}

/* rec_avx2_round on 16 int32 lanes (the AVX-512 LSTM step and the AVX-512 rows). */
__attribute__((always_inline, target("avx512f"))) static inline __m512i rec_avx512_round(__m512i v, __m128i s,
                                                                                      __m512i bias, __m512i up) {
    const __m512i odd = _mm512_or_si512(up, _mm512_and_si512(_mm512_sra_epi32(v, s), _mm512_set1_epi32(1)));
    return _mm512_sra_epi32(_mm512_add_epi32(_mm512_add_epi32(v, bias), odd), s);
}

/* One group's start values from its sums (hi, lo: rows 0-7, 8-15) into o. */
REC_AVX2_INLINE void rec_avx2_starts_out(const mli_rec_avx2 *r, const __m256i *hi, const __m256i *lo, int32_t *o,
                                         const int w8) {
    const rec_avx2_sc *c = &r->sc;
    for (int h = 0; h < 2; h++) {
        __m256i vh = hi[h], vl = lo[h];
        if (w8) { /* the state part's start: rounding right or plain left shift (no clamp acts) */
            vh = r->its > 0 ? rec_avx2_round(vh, c->ish, c->ibias, c->up) : _mm256_sll_epi32(vh, c->lsh);
            _mm256_storeu_si256((__m256i *)(o + 8 * h), vh);
            continue;
        }
        vh = _mm256_add_epi32(vh, _mm256_srl_epi32(vl, c->dsh)); /* vl >= 0 */
        vl = _mm256_and_si256(vl, c->mD);
        vl = _mm256_sll_epi32(_mm256_srl_epi32(vl, c->ish), c->lsh); /* one of the two shifts is by 0 */
        vh = _mm256_min_epi32(_mm256_max_epi32(vh, c->ncl), c->cl);
        _mm256_storeu_si256((__m256i *)(o + 8 * h), vh);
        _mm256_storeu_si256((__m256i *)(o + 16 + 8 * h), _mm256_add_epi32(vl, c->half));
    }
}

/* fx16: one group's start values from B' = B + 2^(D-1) (rows 0-7, 8-15)
 * into o (see the top of this file). */
REC_AVX2_INLINE void rec_avx2_starts_out32(const mli_rec_avx2 *r, const __m256i *b, int32_t *o) {
    const rec_avx2_sc *c = &r->sc;
    for (int h = 0; h < 2; h++) {
        const __m256i lo = _mm256_and_si256(b[h], c->mD);
        _mm256_storeu_si256((__m256i *)(o + 8 * h), _mm256_sra_epi32(b[h], c->dsh));
        _mm256_storeu_si256((__m256i *)(o + 16 + 8 * h), _mm256_sll_epi32(_mm256_srl_epi32(lo, c->ish), c->lsh));
    }
}

/* The start values of NG groups from g0 (see rec_avx2_starts); one_chunk:
 * 0 rows cut into chunks, 1 whole rows, 2 (fx16) whole rows with int32
 * start values. */
REC_AVX2_INLINE void rec_avx2_starts_block(const mli_rec_avx2 *r, int g0, const int32_t *x, int one_chunk, int32_t *out,
                                           const int NG, const int w8) {
    const mli_dense_plan *pl = r->plan;
    const rec_avx2_sc *c = &r->sc;
    if (one_chunk || w8) { /* whole rows: the sums first, the bias parts added after */
        __m256i a[2 * REC_AVX2_BLOCK];
        if (w8 && r->w_in16) rec_avx2_whole(r->w_in16, pl->n_pairs, g0, x, a, NG, 0); /* widened: 16-bit loops */
        else rec_avx2_whole(pl->w_in, pl->n_pairs, g0, x, a, NG, w8);
        if (!w8 && one_chunk == 2) {
            for (int j = 0; j < NG; j++) {
                __m256i b[2];
                for (int h = 0; h < 2; h++)
                    b[h] = _mm256_add_epi32(
                        _mm256_loadu_si256((const __m256i *)(r->bt1 + g0 * MLI_DOT_GROUP + 16 * j + 8 * h)),
                        a[2 * j + h]);
                rec_avx2_starts_out32(r, b, out + (size_t)(g0 + j) * REC_START_STRIDE);
            }
            return;
        }
        for (int j = 0; j < NG; j++) {
            __m256i hl[2], ll[2];
            for (int h = 0; h < 2; h++) {
                const int i = 2 * j + h, k = g0 * MLI_DOT_GROUP + 8 * i;
                hl[h] = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(r->bth + k)),
                                         w8 ? a[i] : _mm256_sra_epi32(a[i], c->dsh));
                ll[h] = w8 ? _mm256_setzero_si256()
                           : _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(r->btl + k)), _mm256_and_si256(a[i], c->mD));
            }
            rec_avx2_starts_out(r, hl, ll, out + (size_t)(g0 + j) * REC_START_STRIDE, w8);
        }
        return;
    }
    __m256i hi[2 * REC_AVX2_BLOCK], lo[2 * REC_AVX2_BLOCK];
    /* fx16, cut rows: the bias parts per group of 16 rows (bth, btl: 8 int32 per half) */
    const int32_t *b0 = r->bth + g0 * MLI_DOT_GROUP;
    const int lo_at = (int)(r->btl - r->bth);
    rec_avx2_chunked(pl->w_in, pl->n_pairs, pl->chunk_in, g0, x, b0, MLI_DOT_GROUP, lo_at, c->dsh, c->mD, hi, lo, NG);
    for (int j = 0; j < NG; j++)
        rec_avx2_starts_out(r, hi + 2 * j, lo + 2 * j, out + (size_t)(g0 + j) * REC_START_STRIDE, w8);
}

/* acc += madd(xb, w) with w in a register (rec_avx2_starts_multi). */
#define REC_AVX2_MADDR(acc, xb, w)                                                                         \
    do {                                                                                                   \
        __m256i t_;                                                                                        \
        __asm__("vpmaddwd %2, %3, %1\n\tvpaddd %1, %0, %0" : "+x"(acc), "=&x"(t_) : "x"(w), "x"(xb));        \
    } while (0)

/* The start values of V consecutive steps for group g (step v's input
 * pairs at x + v * xs, its start values at out + v * os), each load of the
 * weights serving the V steps: the input part of a block of steps computed
 * ahead of them, for weights too large to stay in L1. */
REC_AVX2_INLINE void rec_avx2_starts_multi(const mli_rec_avx2 *r, int g, const int32_t *x,
                                           long xs, int one_chunk, int32_t *out, long os, const int V, const int w8) {
    const mli_dense_plan *pl = r->plan;
    const int pairs = pl->n_pairs;
    const int32_t *ch = pl->chunk_in + (size_t)g * ((size_t)pairs + 1);
    const size_t glen = (size_t)pairs * 2 * MLI_DOT_GROUP;
    const void *wg = w8 ? (const void *)((const int8_t *)pl->w_in + (size_t)g * glen)
                        : (const void *)(pl->w_in + (size_t)g * glen);
    const __m128i dsh = r->sc.dsh;
    const __m256i mD = r->sc.mD;
    __m256i hi[8], lo[8], a[8];
    const int k = g * MLI_DOT_GROUP, i32 = !w8 && one_chunk == 2; /* i32: B' summed as one int32 in hi */
    for (int v = 0; v < V; v++)
        for (int h = 0; h < 2; h++) {
            hi[2 * v + h] = _mm256_loadu_si256((const __m256i *)((i32 ? r->bt1 : r->bth) + k + 8 * h));
            lo[2 * v + h] = w8 || i32 ? _mm256_setzero_si256() : _mm256_loadu_si256((const __m256i *)(r->btl + k + 8 * h));
        }
    int p = 0, c = 1;
    while (p < pairs) {
        const int pend = !w8 && !one_chunk ? ch[c++] : pairs;
        for (int i = 0; i < 2 * V; i++) a[i] = _mm256_setzero_si256();
        for (; p + 1 < pend; p += 2) { /* two pairs per iteration */
            const __m256i w0 = REC_AVX2_W(wg, p, 0, w8), w1 = REC_AVX2_W(wg, p, 1, w8);
            const __m256i w2 = REC_AVX2_W(wg, p + 1, 0, w8), w3 = REC_AVX2_W(wg, p + 1, 1, w8);
            for (int v = 0; v < V; v++) {
                const __m256i xb = rec_avx2_bcast(x + v * xs + p), xc = rec_avx2_bcast(x + v * xs + p + 1);
                REC_AVX2_MADDR(a[2 * v], xb, w0);
                REC_AVX2_MADDR(a[2 * v + 1], xb, w1);
                REC_AVX2_MADDR(a[2 * v], xc, w2);
                REC_AVX2_MADDR(a[2 * v + 1], xc, w3);
            }
        }
        for (; p < pend; p++) {
            const __m256i w0 = REC_AVX2_W(wg, p, 0, w8), w1 = REC_AVX2_W(wg, p, 1, w8);
            for (int v = 0; v < V; v++) {
                const __m256i xb = rec_avx2_bcast(x + v * xs + p);
                REC_AVX2_MADDR(a[2 * v], xb, w0);
                REC_AVX2_MADDR(a[2 * v + 1], xb, w1);
            }
        }
        for (int i = 0; i < 2 * V; i++) {
            if (!w8 && !i32) {
                hi[i] = _mm256_add_epi32(hi[i], _mm256_sra_epi32(a[i], dsh));
                lo[i] = _mm256_add_epi32(lo[i], _mm256_and_si256(a[i], mD));
            } else {
                hi[i] = _mm256_add_epi32(hi[i], a[i]);
            }
        }
    }
    for (int v = 0; v < V; v++) {
        if (i32) rec_avx2_starts_out32(r, hi + 2 * v, out + v * os + (size_t)g * REC_START_STRIDE);
        else rec_avx2_starts_out(r, hi + 2 * v, lo + 2 * v, out + v * os + (size_t)g * REC_START_STRIDE, w8);
    }
}

/* The start values of `count` consecutive steps from x (step t's input at
 * x + t * N, int16 or int8 with d8) into out (step t's at
 * out + t * groups * REC_START_STRIDE), 4 steps per pass over the weights.
 * xp: scratch for count inputs as int32 pairs (count * n_pairs). */
REC_AVX2_INLINE void rec_avx2_starts_steps(const mli_rec_avx2 *r, const void *xin, int N, int count, int32_t *xp,
                                           int32_t *out, const int w8, const int d8) {
    const int np = r->plan->n_pairs;
    const long os = (long)r->groups * REC_START_STRIDE;
    const size_t el = d8 ? 1 : 2;
    const int32_t *x;
    long xs;
    if (!d8 && N % 2 == 0) {
        x = (const int32_t *)xin;
        xs = N / 2;
    } else {
        for (int t = 0; t < count; t++) {
            int16_t *x16 = (int16_t *)(void *)(xp + (size_t)t * (size_t)np);
            const char *src = (const char *)xin + (size_t)t * (size_t)N * el;
            for (int j = 0; j < N; j++) x16[j] = d8 ? ((const int8_t *)src)[j] : ((const int16_t *)(const void *)src)[j];
            if (N % 2) x16[N] = 0;
        }
        x = xp;
        xs = np;
    }
    int t = 0;
    while (t < count) {
        const int V = count - t >= 4 ? 4 : (count - t >= 2 ? 2 : 1);
        int one = w8;
        if (!w8) { /* fx16: one chunk per row where every one of the V steps allows it */
            int32_t mx = 0;
            for (int v = 0; v < V; v++) {
                const int32_t m = rec_avx2_maxabs16((const int16_t *)xin + (size_t)(t + v) * (size_t)N, N);
                mx = m > mx ? m : mx;
            }
            one = mx <= r->i32_xmax ? 2 : (int64_t)mx * r->l1i < ((int64_t)1 << 31);
        }
        for (int g = 0; g < r->groups; g++) {
            if (V == 4) rec_avx2_starts_multi(r, g, x + t * xs, xs, one, out + t * os, os, 4, w8);
            else if (V == 2) rec_avx2_starts_multi(r, g, x + t * xs, xs, one, out + t * os, os, 2, w8);
            else rec_avx2_starts_multi(r, g, x + t * xs, xs, one, out + t * os, os, 1, w8);
        }
        t += V;
    }
}

/* The start values of one step from its input x (N elements, int16 or int8
 * with d8) into out (groups * REC_START_STRIDE int32).  xp: scratch for the
 * input as int32 pairs (n_pairs); 16-bit x of even length is read in place.
 * rec_avx2_starts_prep: the input as pairs and whether its rows are one
 * chunk, for callers that make the blocks themselves (rec_avx2_starts_block). */
REC_AVX2_INLINE const int32_t *rec_avx2_starts_prep(const mli_rec_avx2 *r, const void *xin, int N, int32_t *xp,
                                                    int *one, const int w8, const int d8) {
    const int32_t *x;
    if (!d8 && N % 2 == 0) {
        x = (const int32_t *)xin;
    } else {
        int16_t *x16 = (int16_t *)(void *)xp;
        if (d8) {
            int j = 0;
            for (; j + 16 <= N; j += 16)
                _mm256_storeu_si256((__m256i *)(x16 + j),
                                    _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)((const int8_t *)xin + j))));
            for (; j < N; j++) x16[j] = ((const int8_t *)xin)[j];
        } else {
            memcpy(x16, xin, (size_t)N * sizeof(int16_t));
        }
        if (N % 2) x16[N] = 0;
        x = xp;
    }
    /* fx16: where max|x| times the largest sum of |w| of a row is below 2^31, every row is one chunk
     * (2: its start values from one int32 sum, max|x| <= i32_xmax) */
    if (w8) {
        *one = 1;
    } else {
        const int32_t mx = rec_avx2_maxabs16((const int16_t *)xin, N);
        *one = mx <= r->i32_xmax ? 2 : (int64_t)mx * r->l1i < ((int64_t)1 << 31);
    }
    return x;
}

REC_AVX2_INLINE void rec_avx2_starts(const mli_rec_avx2 *r, const void *xin, int N, int32_t *xp, int32_t *out,
                                     const int w8, const int d8) {
    int one;
    const int32_t *x = rec_avx2_starts_prep(r, xin, N, xp, &one, w8, d8);
    int g = 0;
    for (; g + REC_AVX2_BLOCK <= r->groups; g += REC_AVX2_BLOCK)
        rec_avx2_starts_block(r, g, x, one, out, REC_AVX2_BLOCK, w8);
    for (; g < r->groups; g++) rec_avx2_starts_block(r, g, x, one, out, 1, w8);
}

/* fx16: the result hi + (lo >> os) before saturation; a tie (the low bits
 * of A + S + 2^(os-1) all zero) takes the even result unless rounding up. */
REC_AVX2_INLINE __m256i rec_avx2_readout(__m256i hi, __m256i lo, const rec_avx2_sc *c) {
    const __m256i e = _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_and_si256(lo, c->om), _mm256_setzero_si256()), c->tb);
    return _mm256_andnot_si256(e, _mm256_add_epi32(hi, _mm256_srl_epi32(lo, c->osh)));
}

/* The read-out of NG groups from g0 from the state x (int32 pairs) and the
 * step's start values: the results before saturation in q (rows 0-7 and
 * 8-15 of group g0 + j in q[2j], q[2j + 1]).  one_chunk: as for the input. */
REC_AVX2_INLINE void rec_avx2_block(const mli_rec_avx2 *r, int g0, const int32_t *x, int one_chunk, const int32_t *st,
                                    __m256i *q, const int NG, const int w8) {
    const mli_dense_plan *pl = r->plan;
    const rec_avx2_sc *c = &r->sc;
    const __m128i osh = c->osh;
    if (one_chunk || w8) { /* whole rows: the sums first, the start values added after */
        __m256i a[2 * REC_AVX2_BLOCK];
        if (w8 && r->w_st16) rec_avx2_whole(r->w_st16, pl->s_pairs, g0, x, a, NG, 0); /* widened: 16-bit loops */
        else rec_avx2_whole(pl->w_st, pl->s_pairs, g0, x, a, NG, w8);
        for (int j = 0; j < NG; j++) {
            const int32_t *s = st + (size_t)(g0 + j) * REC_START_STRIDE;
            for (int h = 0; h < 2; h++) {
                const int i = 2 * j + h;
                const __m256i hi = _mm256_loadu_si256((const __m256i *)(s + 8 * h));
                if (w8) {
                    q[i] = rec_avx2_round(_mm256_add_epi32(hi, a[i]), osh, c->ob, c->up);
                    continue;
                }
                const __m256i lo = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(s + 16 + 8 * h)), _mm256_and_si256(a[i], c->om));
                q[i] = rec_avx2_readout(_mm256_add_epi32(hi, _mm256_sra_epi32(a[i], osh)), lo, c);
            }
        }
        return;
    }
    __m256i hi[2 * REC_AVX2_BLOCK], lo[2 * REC_AVX2_BLOCK];
    rec_avx2_chunked(pl->w_st, pl->s_pairs, pl->chunk_st, g0, x, st + (size_t)g0 * REC_START_STRIDE, REC_START_STRIDE,
                     16, osh, c->om, hi, lo, NG);
    for (int i = 0; i < 2 * NG; i++) q[i] = rec_avx2_readout(hi[i], lo[i], c);
}

/* Saturation of 8 int32 lanes to int16 / int8, kept as int32 lanes. */
REC_AVX2_INLINE __m256i rec_avx2_sat(__m256i v, const int d8) {
    return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(d8 ? -128 : -32768)),
                            _mm256_set1_epi32(d8 ? 127 : 32767));
}

/* 8 int32 lanes (within the type) stored as int16 / int8 at p + i. */
REC_AVX2_INLINE void rec_avx2_st(void *p, long i, __m256i v, const int d8) {
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    if (d8) _mm_storel_epi64((__m128i *)((int8_t *)p + i), _mm_packs_epi16(w, w));
    else _mm_storeu_si128((__m128i *)((int16_t *)p + i), w);
}

/* 8 elements from p + i as int32 lanes. */
REC_AVX2_INLINE __m256i rec_avx2_ld(const void *p, long i, const int d8) {
    if (d8) return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)p + i)));
    return _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)((const int16_t *)p + i)));
}

/* 8-bit data: the tabulated results of mli_prv_lut_vec8 (r[x + 128]) for 8 lanes. */
REC_AVX2_INLINE __m256i rec_avx2_tab8(const int32_t *t, __m256i x) {
    return lut_pick8_avx2(t, _mm256_add_epi32(x, _mm256_set1_epi32(128))); /* x within int8 */
}

/* The state (M elements; the AVX-512 rows pass inputs too) as int32 pairs:
 * with in_place 16-bit data of even length is read where it is, else
 * widened / padded into xp. */
REC_AVX2_INLINE const int32_t *rec_avx2_state(const void *h, int M, int32_t *xp, int in_place, const int d8) {
    if (!d8 && M % 2 == 0 && in_place) return (const int32_t *)h;
    int16_t *x16 = (int16_t *)(void *)xp;
    if (d8) {
        int j = 0;
        for (; j + 16 <= M; j += 16)
            _mm256_storeu_si256((__m256i *)(x16 + j),
                                _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)((const int8_t *)h + j))));
        for (; j < M; j++) x16[j] = ((const int8_t *)h)[j];
    } else {
        memcpy(x16, h, (size_t)M * sizeof(int16_t));
    }
    if (M % 2) x16[M] = 0;
    return xp;
}

#endif /* MLIPY_X86_TARGETS */

#endif /* MLI_PRV_DENSE_AVX2_H */
