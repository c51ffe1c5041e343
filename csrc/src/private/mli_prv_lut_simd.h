/* The per-call setup of a LUT evaluation and its AVX-512 form on 32 int16
 * lanes, shared by mli_prv_lut.c and the kernels that evaluate the tables
 * inside a fused step (the scalar definition is lut_one in mli_prv_lut.c). */
#ifndef MLI_PRV_LUT_SIMD_H
#define MLI_PRV_LUT_SIMD_H

#include "mli_prv_isa.h"
#include "mli_prv_lut.h"

/* the per-call constants of one evaluation */
typedef struct {
    int direct; /* input no finer than the table: T[idx] without interpolation */
    int s, pre;
    int32_t mask, bias, hi, off, up;
} lut_setup;

static inline void lut_prepare(const mli_lut *lut, int frac_in, lut_setup *c) {
    if (frac_in < -64) frac_in = -64; /* the same results (see the direct case), no int overflow */
    int s = frac_in - lut->frac;
    c->up = mlipy_rounding_up;
    c->off = lut->offset;
    if (s <= 0) { /* x << -s, saturated to 16 bits */
        c->direct = 1;
        /* a negative frac_in (the exported LSTM step functions take any int)
         * would shift by 31 or more: every nonzero int16 saturates from a
         * shift of 16 on, so 16 gives the same results, inside int32 */
        c->s = -s > 16 ? 16 : -s;
        c->hi = lut->length - 1;
        return;
    }
    c->direct = 0;
    c->pre = s > 15 ? s - 15 : 0;
    if (c->pre > 31) c->pre = 31;
    c->s = s > 15 ? 15 : s;
    c->mask = (1 << c->s) - 1;
    c->bias = (1 << (c->s - 1)) - 1;
    c->hi = lut->length - 2;
}

#ifdef MLIPY_X86_TARGETS
#include <immintrin.h>

/* 32 lanes with the table in registers: vpermt2w looks up 64 int16
 * entries at once, three of them cover the 192-entry padded table; no
 * gathers.  Returns r for 32 inputs as two vectors of 16 int32 lanes. */
typedef struct {
    __m512i t[6];
} lut_regs;

__attribute__((target("avx512f,avx512bw"))) static inline void lut_load_regs(const mli_lut *lut, lut_regs *r) {
    for (int k = 0; k < 6; k++) r->t[k] = _mm512_loadu_si512((const void *)(lut->pad192 + 32 * k));
}

__attribute__((target("avx512f,avx512bw"))) static inline __m512i lut_lookup32(const lut_regs *r, __m512i idx) {
    const __m512i a = _mm512_permutex2var_epi16(r->t[0], idx, r->t[1]);
    const __m512i b = _mm512_permutex2var_epi16(r->t[2], idx, r->t[3]);
    const __m512i c = _mm512_permutex2var_epi16(r->t[4], idx, r->t[5]);
    const __mmask32 ge64 = _mm512_cmpge_epi16_mask(idx, _mm512_set1_epi16(64));
    const __mmask32 ge128 = _mm512_cmpge_epi16_mask(idx, _mm512_set1_epi16(128));
    return _mm512_mask_blend_epi16(ge128, _mm512_mask_blend_epi16(ge64, a, b), c);
}

/* A 256-entry int16 table in eight registers (the 8-bit tables of the 1.1
 * core, the sa8 tables of the 2.x cells): t[idx] for 32 indices in 0..255,
 * four vpermt2w of 64 entries and the index's bits 6 and 7 choosing. */
__attribute__((target("avx512f,avx512bw"))) static inline void lut256_load_regs(const int16_t *t, __m512i r[8]) {
    for (int k = 0; k < 8; k++) r[k] = _mm512_loadu_si512((const void *)(t + 32 * k));
}
__attribute__((target("avx512f,avx512bw"))) static inline __m512i lut256_lookup32(const __m512i r[8], __m512i idx) {
    const __m512i a = _mm512_permutex2var_epi16(r[0], idx, r[1]);
    const __m512i b = _mm512_permutex2var_epi16(r[2], idx, r[3]);
    const __m512i c = _mm512_permutex2var_epi16(r[4], idx, r[5]);
    const __m512i d = _mm512_permutex2var_epi16(r[6], idx, r[7]);
    const __mmask32 b6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(64));
    const __mmask32 b7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(128));
    return _mm512_mask_blend_epi16(b7, _mm512_mask_blend_epi16(b6, a, b), _mm512_mask_blend_epi16(b6, c, d));
}

/* The interpolation in int16 lanes: with |diff| <= 2^15 and 0 <= frac < 2^s
 * the product p = diff * frac has |p| < 2^(15+s), so floor(p / 2^s) fits
 * int16; it is assembled from the high and low halves of p, and the
 * rounding adds 1 when (p mod 2^s) + 2^(s-1) - 1 + (up | bit s of p) >= 2^s
 * (that sum stays below 2^16).  The saturating int16 add and subtract are
 * lut_one's clamps of q and r. */
__attribute__((target("avx512f,avx512bw"))) static inline __m512i lut32_avx512(const lut_regs *r, const lut_setup *c,
                                                                             __m512i xv) {
    if (c->direct) {
        __m512i v;
        const __m512i wide_lo = _mm512_sll_epi32(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(xv)),
                                                 _mm_cvtsi32_si128(c->s));
        const __m512i wide_hi = _mm512_sll_epi32(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(xv, 1)),
                                                 _mm_cvtsi32_si128(c->s));
        v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtsepi32_epi16(wide_lo)), _mm512_cvtsepi32_epi16(wide_hi), 1);
        v = _mm512_adds_epi16(v, _mm512_set1_epi16((int16_t)c->off));
        v = _mm512_min_epi16(_mm512_max_epi16(v, _mm512_setzero_si512()), _mm512_set1_epi16((int16_t)c->hi));
        return lut_lookup32(r, v);
    }
    const __m512i xs = _mm512_sra_epi16(xv, _mm_cvtsi32_si128(c->pre));
    __m512i idx = _mm512_add_epi16(_mm512_sra_epi16(xs, _mm_cvtsi32_si128(c->s)), _mm512_set1_epi16((int16_t)c->off));
    idx = _mm512_min_epi16(_mm512_max_epi16(idx, _mm512_setzero_si512()), _mm512_set1_epi16((int16_t)c->hi));
    const __m512i t0 = lut_lookup32(r, idx);
    const __m512i t1 = lut_lookup32(r, _mm512_add_epi16(idx, _mm512_set1_epi16(1)));
    const __m512i diff = _mm512_subs_epi16(t0, t1); /* SAT_16 */
    const __m512i fr = _mm512_and_si512(xs, _mm512_set1_epi16((int16_t)c->mask));
    const __m512i lo = _mm512_mullo_epi16(diff, fr), hi = _mm512_mulhi_epi16(diff, fr);
    const __m512i fl = _mm512_or_si512(_mm512_sll_epi16(hi, _mm_cvtsi32_si128(16 - c->s)),
                                       _mm512_srl_epi16(lo, _mm_cvtsi32_si128(c->s)));
    const __m512i odd = _mm512_or_si512(_mm512_set1_epi16((int16_t)c->up), _mm512_and_si512(fl, _mm512_set1_epi16(1)));
    const __m512i rem = _mm512_and_si512(lo, _mm512_set1_epi16((int16_t)c->mask));
    const __m512i inc = _mm512_srl_epi16(_mm512_add_epi16(_mm512_add_epi16(rem, _mm512_set1_epi16((int16_t)c->bias)), odd),
                                         _mm_cvtsi32_si128(c->s));
    return _mm512_subs_epi16(t0, _mm512_adds_epi16(fl, inc));
}

/* ---- AVX2: 8 int32 or 16 int16 lanes from a pair table ----------------
 * A pair table (mli_lut.pair192, made by gen_lut.py) holds
 * t[i] = T[i] (low half) | T[i+1] << 16 for every index lut_one can reach,
 * so one load gives both entries of the interpolation (the direct case uses
 * the low halves). */

/* Table entries into vector lanes without vpgatherdd: the indices leave the
 * register 64 bits at a time (no store and reload, whose forwarding stalls
 * a step's chain) and each entry is loaded into its lane (vpinsrd from
 * memory).  On the AMD Zen 5 core measured, vpgatherdd of 8 lanes takes
 * 13.5 cycles of throughput and this 5.4 (the steps' figures: "Results
 * (2026-11-29, third session)" in benchmarks/README.md).  lut8_pair_avx2
 * keeps its gather: the fx16 basic RNN measured faster with it.  The same
 * entries either way.
 * t[four int16 indices packed in q] */
__attribute__((always_inline, target("avx2"))) static inline __m128i lut_pick4_avx2(const int32_t *t, uint64_t q) {
    __m128i a = _mm_cvtsi32_si128(t[q & 0xFFFF]);
    a = _mm_insert_epi32(a, t[(q >> 16) & 0xFFFF], 1);
    a = _mm_insert_epi32(a, t[(q >> 32) & 0xFFFF], 2);
    a = _mm_insert_epi32(a, t[q >> 48], 3);
    return a;
}

/* t[idx] for 16 int16 indices within the table, in the order the 128-bit
 * lanes of an unpack want them: lanes 0-3 and 8-11 in *g0, 4-7 and 12-15
 * in *g1. */
__attribute__((always_inline, target("avx2"))) static inline void lut_pick16_avx2(const int32_t *t, __m256i idx,
                                                                                 __m256i *g0, __m256i *g1) {
    const __m128i lo = _mm256_castsi256_si128(idx), hi = _mm256_extracti128_si256(idx, 1);
    const uint64_t q0 = (uint64_t)_mm_cvtsi128_si64(lo), q1 = (uint64_t)_mm_extract_epi64(lo, 1);
    const uint64_t q2 = (uint64_t)_mm_cvtsi128_si64(hi), q3 = (uint64_t)_mm_extract_epi64(hi, 1);
    *g0 = _mm256_inserti128_si256(_mm256_castsi128_si256(lut_pick4_avx2(t, q0)), lut_pick4_avx2(t, q2), 1);
    *g1 = _mm256_inserti128_si256(_mm256_castsi128_si256(lut_pick4_avx2(t, q1)), lut_pick4_avx2(t, q3), 1);
}

/* t[two int32 indices packed in q] */
__attribute__((always_inline, target("avx2"))) static inline __m128i lut_pick2x2_avx2(const int32_t *t, uint64_t q0,
                                                                                     uint64_t q1) {
    __m128i a = _mm_cvtsi32_si128(t[(uint32_t)q0]);
    a = _mm_insert_epi32(a, t[q0 >> 32], 1);
    a = _mm_insert_epi32(a, t[(uint32_t)q1], 2);
    a = _mm_insert_epi32(a, t[q1 >> 32], 3);
    return a;
}

/* t[idx] for 8 int32 indices within the table (0 <= idx < 2^31). */
__attribute__((always_inline, target("avx2"))) static inline __m256i lut_pick8_avx2(const int32_t *t, __m256i idx) {
    const __m128i lo = _mm256_castsi256_si128(idx), hi = _mm256_extracti128_si256(idx, 1);
    const __m128i a = lut_pick2x2_avx2(t, (uint64_t)_mm_cvtsi128_si64(lo), (uint64_t)_mm_extract_epi64(lo, 1));
    const __m128i b = lut_pick2x2_avx2(t, (uint64_t)_mm_cvtsi128_si64(hi), (uint64_t)_mm_extract_epi64(hi, 1));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
}

/* The constants of a lut_setup as vectors (made once per call, not per
 * lookup). */
typedef struct {
    int direct;
    const int16_t *full; /* mli_prv_lut16_full's table, or NULL (lut_vc_make leaves it NULL) */
    __m128i s, pre, s16; /* s16: 16 - s */
    __m256i off, hi, mask, bias, up;            /* int32 lanes */
    __m256i off16, hi16, mask16, bias16, up16;  /* int16 lanes */
} lut_vc;

__attribute__((target("avx2"))) static inline void lut_vc_make(const lut_setup *c, lut_vc *v) {
    v->direct = c->direct;
    v->full = NULL;
    v->s = _mm_cvtsi32_si128(c->s);
    v->pre = _mm_cvtsi32_si128(c->direct ? 0 : c->pre);
    v->off = _mm256_set1_epi32(c->off);
    v->hi = _mm256_set1_epi32(c->hi);
    v->mask = _mm256_set1_epi32(c->direct ? 0 : c->mask);
    v->bias = _mm256_set1_epi32(c->direct ? 0 : c->bias);
    v->up = _mm256_set1_epi32(c->up);
    v->s16 = _mm_cvtsi32_si128(16 - c->s);
    v->off16 = _mm256_set1_epi16((int16_t)c->off);
    v->hi16 = _mm256_set1_epi16((int16_t)c->hi);
    v->mask16 = _mm256_set1_epi16((int16_t)(c->direct ? 0 : c->mask));
    v->bias16 = _mm256_set1_epi16((int16_t)(c->direct ? 0 : c->bias));
    v->up16 = _mm256_set1_epi16((int16_t)c->up);
}

/* With a full table (mli_prv_lut16_full) a result is one int16 load: the
 * input's bits are the index, no interpolation.  Four inputs packed in q. */
__attribute__((always_inline, target("avx2"))) static inline __m128i lut_full4_avx2(const int16_t *F, uint64_t q) {
    __m128i a = _mm_cvtsi32_si128(F[q & 0xFFFF]);
    a = _mm_insert_epi16(a, F[(q >> 16) & 0xFFFF], 1);
    a = _mm_insert_epi16(a, F[(q >> 32) & 0xFFFF], 2);
    a = _mm_insert_epi16(a, F[q >> 48], 3);
    return a;
}

/* F[x] for 16 int16 lanes (four independent chains of inserts). */
__attribute__((always_inline, target("avx2"))) static inline __m256i lut_full16_avx2(const int16_t *F, __m256i xv) {
    const __m128i lo = _mm256_castsi256_si128(xv), hi = _mm256_extracti128_si256(xv, 1);
    const __m128i a = _mm_unpacklo_epi64(lut_full4_avx2(F, (uint64_t)_mm_cvtsi128_si64(lo)),
                                         lut_full4_avx2(F, (uint64_t)_mm_extract_epi64(lo, 1)));
    const __m128i b = _mm_unpacklo_epi64(lut_full4_avx2(F, (uint64_t)_mm_cvtsi128_si64(hi)),
                                         lut_full4_avx2(F, (uint64_t)_mm_extract_epi64(hi, 1)));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
}

/* F[x] for 8 int32 lanes holding int16 values, sign-extended. */
__attribute__((always_inline, target("avx2"))) static inline __m256i lut_full8_avx2(const int16_t *F, __m256i xv) {
    const __m128i lo = _mm256_castsi256_si128(xv), hi = _mm256_extracti128_si256(xv, 1);
    const uint64_t q0 = (uint64_t)_mm_cvtsi128_si64(lo), q1 = (uint64_t)_mm_extract_epi64(lo, 1);
    const uint64_t q2 = (uint64_t)_mm_cvtsi128_si64(hi), q3 = (uint64_t)_mm_extract_epi64(hi, 1);
    __m128i a = _mm_cvtsi32_si128(F[q0 & 0xFFFF]), b = _mm_cvtsi32_si128(F[q2 & 0xFFFF]);
    a = _mm_insert_epi16(a, F[(q0 >> 32) & 0xFFFF], 1);
    b = _mm_insert_epi16(b, F[(q2 >> 32) & 0xFFFF], 1);
    a = _mm_insert_epi16(a, F[q1 & 0xFFFF], 2);
    b = _mm_insert_epi16(b, F[q3 & 0xFFFF], 2);
    a = _mm_insert_epi16(a, F[(q1 >> 32) & 0xFFFF], 3);
    b = _mm_insert_epi16(b, F[(q3 >> 32) & 0xFFFF], 3);
    return _mm256_cvtepi16_epi32(_mm_unpacklo_epi64(a, b));
}

/* lut_one on 8 int32 lanes holding int16 values, from a pair table. */
__attribute__((always_inline, target("avx2"))) static inline __m256i lut8_pair_avx2(const int32_t *t, const lut_vc *c,
                                                                                  __m256i xv) {
    if (c->full) return lut_full8_avx2(c->full, xv);
    const __m256i lo16 = _mm256_set1_epi32(-32768), hi16 = _mm256_set1_epi32(32767);
    if (c->direct) {
        __m256i v = _mm256_sll_epi32(xv, c->s);
        v = _mm256_min_epi32(_mm256_max_epi32(v, lo16), hi16);
        v = _mm256_add_epi32(v, c->off);
        v = _mm256_min_epi32(_mm256_max_epi32(v, _mm256_setzero_si256()), c->hi);
        return _mm256_srai_epi32(_mm256_slli_epi32(_mm256_i32gather_epi32((const int *)t, v, 4), 16), 16);
    }
    const __m256i xs = _mm256_sra_epi32(xv, c->pre);
    __m256i idx = _mm256_add_epi32(_mm256_sra_epi32(xs, c->s), c->off);
    idx = _mm256_min_epi32(_mm256_max_epi32(idx, _mm256_setzero_si256()), c->hi);
    const __m256i g = _mm256_i32gather_epi32((const int *)t, idx, 4);
    const __m256i t0 = _mm256_srai_epi32(_mm256_slli_epi32(g, 16), 16), t1 = _mm256_srai_epi32(g, 16);
    const __m256i diff = _mm256_min_epi32(_mm256_max_epi32(_mm256_sub_epi32(t0, t1), lo16), hi16);
    const __m256i p = _mm256_mullo_epi32(diff, _mm256_and_si256(xs, c->mask));
    const __m256i odd = _mm256_or_si256(c->up, _mm256_and_si256(_mm256_sra_epi32(p, c->s), _mm256_set1_epi32(1)));
    __m256i q = _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(p, c->bias), odd), c->s);
    q = _mm256_min_epi32(_mm256_max_epi32(q, lo16), hi16);
    return _mm256_min_epi32(_mm256_max_epi32(_mm256_sub_epi32(t0, q), lo16), hi16);
}

/* lut_one on 16 int16 lanes (entries picked from the pair table), the
 * interpolation in int16 lanes as lut32_avx512 does it: with |diff| <= 2^15
 * and 0 <= frac < 2^s, p = diff * frac has floor(p / 2^s) within int16,
 * assembled from p's high and low halves, and the rounding adds 1 when
 * (p mod 2^s) + 2^(s-1) - 1 + (up | bit s of p) >= 2^s; the saturating int16
 * add and subtract are lut_one's clamps of q and r. */
__attribute__((always_inline, target("avx2"))) static inline __m256i lut16_pair_avx2(const int32_t *t, const lut_vc *c,
                                                                                   __m256i xv) {
    if (c->full) return lut_full16_avx2(c->full, xv);
    __m256i idx;
    __m256i xs = xv;
    if (c->direct) { /* sat16(x << s) + off, clamped to the table */
        const __m256i w0 = _mm256_sll_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(xv)), c->s);
        const __m256i w1 = _mm256_sll_epi32(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(xv, 1)), c->s);
        idx = _mm256_permute4x64_epi64(_mm256_packs_epi32(w0, w1), 0xD8);
        idx = _mm256_adds_epi16(idx, c->off16);
    } else {
        xs = _mm256_sra_epi16(xv, c->pre);
        idx = _mm256_add_epi16(_mm256_sra_epi16(xs, c->s), c->off16);
    }
    idx = _mm256_min_epi16(_mm256_max_epi16(idx, _mm256_setzero_si256()), c->hi16);
    __m256i g0, g1;
    lut_pick16_avx2(t, idx, &g0, &g1); /* idx within [0, hi] */
    /* each int32 of g holds T[idx] (low half) and T[idx + 1]: low halves to
     * t0, high halves to t1 (lut_pick16_avx2's order: no lane crossing) */
    const __m256i sh = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13,
                                        2, 3, 6, 7, 10, 11, 14, 15);
    const __m256i d0 = _mm256_shuffle_epi8(g0, sh), d1 = _mm256_shuffle_epi8(g1, sh);
    const __m256i t0 = _mm256_unpacklo_epi64(d0, d1);
    if (c->direct) return t0;
    const __m256i t1 = _mm256_unpackhi_epi64(d0, d1);
    const __m256i mask = c->mask16;
    const __m256i diff = _mm256_subs_epi16(t0, t1); /* SAT_16 */
    const __m256i fr = _mm256_and_si256(xs, mask);
    const __m256i lo = _mm256_mullo_epi16(diff, fr), hi = _mm256_mulhi_epi16(diff, fr);
    const __m256i fl = _mm256_or_si256(_mm256_sll_epi16(hi, c->s16),
                                       _mm256_srl_epi16(lo, c->s));
    const __m256i odd = _mm256_or_si256(c->up16, _mm256_and_si256(fl, _mm256_set1_epi16(1)));
    const __m256i rem = _mm256_and_si256(lo, mask);
    const __m256i inc = _mm256_srl_epi16(_mm256_add_epi16(_mm256_add_epi16(rem, c->bias16), odd), c->s);
    return _mm256_subs_epi16(t0, _mm256_adds_epi16(fl, inc));
}

#endif

#endif /* MLI_PRV_LUT_SIMD_H */
