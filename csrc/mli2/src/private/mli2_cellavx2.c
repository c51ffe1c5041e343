/* The fused element-wise steps of the LSTM and GRU cells written for AVX2
 * (mli2_cellfast.h): the compiler's own vectorisation of the lane forms
 * keeps every gate in int64 lanes, which AVX2 handles poorly (no 64-bit
 * arithmetic shift, min or max).  Here only the gates' read-out runs on
 * int64 lanes, with the arithmetic shift written as a logical one of the
 * value offset by 2^63; everything after it runs on 8 int32 lanes.  The
 * integers are those of the lane forms of mli2_cellfast.c, for the same
 * plans (their ranges are restated where a step relies on them):
 *
 * - int64 rounding: (t + bias + (bit n of t & om)) >> n, bit n taken by a
 *   logical shift; t >> n = ((t ^ 2^63) >>> n) - 2^(63 - n), in wrapping
 *   arithmetic as the scalar code's (built with -fwrapv).
 * - int32 rounding (0 <= n <= 31): floor((x + c) / 2^n) =
 *   (x >> n) + (((x & (2^n - 1)) + c) >>> n) for 0 <= c <= 2^30 + 1, with
 *   no int32 overflow; the UP saturation at MAX_32 before the shift is
 *   min(result, MAX_32 >> n).
 * - sa8 read-out parts: the int32 clamp is skipped only where it cannot act
 *   (|WRAP_32(acc) * m| <= 2^31 * m); where every part shifts by 34 or more
 *   (the usual formats), the shift is taken on the high 32 bits alone and the
 *   rest of the read-out runs on int32 lanes (ro_sa8_idx_hi). */
#include "mli2_cellfast.h"

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx2")))
#define AI __attribute__((target("avx2"), always_inline)) static inline

/* int64 rounding constants (one part of a read-out) */
typedef struct {
    __m256i b, om, k, lo, hi; /* k = 2^(63 - n) (2^63 for n = 0); lo / hi: the int32 clamp (sa8) */
    __m128i n, n32; /* n32: n - 32 (n >= 32) */
    int clamp;
} v64rs;
/* int32 rounding constants */
typedef struct {
    __m256i b, om, mask, cap;
    __m128i n;
} v32rs;

AI void v64rs_make(v64rs *v, const m2_rs *r) {
    v->b = _mm256_set1_epi64x(r->bias);
    v->om = _mm256_set1_epi64x(r->om);
    v->k = _mm256_set1_epi64x((int64_t)((uint64_t)1 << (63 - r->n)));
    v->n = _mm_cvtsi32_si128(r->n);
    v->n32 = _mm_cvtsi32_si128(r->n >= 32 ? r->n - 32 : 0);
    v->lo = _mm256_set1_epi64x(INT32_MIN);
    v->hi = _mm256_set1_epi64x(INT32_MAX);
    v->clamp = 1;
}
/* sat: the UP rounding saturates at MAX_32 before the shift (RSLS) */
AI void v32rs_make(v32rs *v, const m2_rs *r, int up, int sat) {
    v->b = _mm256_set1_epi32((int32_t)r->bias);
    v->om = _mm256_set1_epi32((int32_t)r->om);
    v->mask = _mm256_set1_epi32((int32_t)(((int64_t)1 << r->n) - 1));
    v->cap = _mm256_set1_epi32(up && sat ? (int32_t)(INT32_MAX >> r->n) : INT32_MAX);
    v->n = _mm_cvtsi32_si128(r->n);
}

AI __m256i rs64(__m256i t, const v64rs *r) {
    t = _mm256_add_epi64(_mm256_add_epi64(t, r->b), _mm256_and_si256(_mm256_srl_epi64(t, r->n), r->om));
    t = _mm256_xor_si256(t, _mm256_set1_epi64x(INT64_MIN));
    return _mm256_sub_epi64(_mm256_srl_epi64(t, r->n), r->k);
}
AI __m256i clamp64(__m256i v, __m256i lo, __m256i hi) {
    v = _mm256_blendv_epi8(v, hi, _mm256_cmpgt_epi64(v, hi));
    return _mm256_blendv_epi8(v, lo, _mm256_cmpgt_epi64(lo, v));
}
AI __m256i rs32(__m256i x, const v32rs *r) {
    const __m256i fl = _mm256_sra_epi32(x, r->n);
    const __m256i c = _mm256_add_epi32(r->b, _mm256_and_si256(fl, r->om));
    const __m256i q = _mm256_add_epi32(fl, _mm256_srl_epi32(_mm256_add_epi32(_mm256_and_si256(x, r->mask), c), r->n));
    return _mm256_min_epi32(q, r->cap);
}
AI __m256i clamp32(__m256i v, int32_t lo, int32_t hi) {
    return _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(lo)), _mm256_set1_epi32(hi));
}
/* the low 32 bits of the 8 int64 lanes of a (0-3) and b (4-7) */
AI __m256i lo32x8(__m256i a, __m256i b) {
    const __m256i s = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), 0x88));
    return _mm256_permute4x64_epi64(s, 0xD8);
}
AI __m256i ld64(const int64_t *p) { return _mm256_loadu_si256((const __m256i *)(const void *)p); }
AI __m256i ld16(const int16_t *p) { return _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)); }
AI __m256i ld8(const int8_t *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)); }
/* 8 int32 lanes inside int16 / int8 */
AI void st16(int16_t *p, __m256i v) {
    _mm_storeu_si128((__m128i *)(void *)p, _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}
AI void st8(int8_t *p, __m256i v) {
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)(void *)p, _mm_packs_epi16(w, w));
}
AI __m256i wrap16(__m256i v) { return _mm256_srai_epi32(_mm256_slli_epi32(v, 16), 16); }

/* ------------------------------------------------------------ read-outs */
/* FX16: SAT_16(RSHR(s + b, n0) + RSHR(h, n1)) for 8 outputs */
AI __m256i ro_fx16(const int64_t *s, const int64_t *b, const int64_t *h, const v64rs *r0, const v64rs *r1) {
    __m256i q[2];
    const __m256i lo = _mm256_set1_epi64x(-32768), hi = _mm256_set1_epi64x(32767);
    for (int k = 0; k < 2; k++) {
        const __m256i p0 = rs64(_mm256_add_epi64(ld64(s + 4 * k), ld64(b + 4 * k)), r0);
        const __m256i p1 = rs64(ld64(h + 4 * k), r1);
        q[k] = clamp64(_mm256_add_epi64(p0, p1), lo, hi);
    }
    return lo32x8(q[0], q[1]);
}
/* FX16_FX8: SAT_16(RSHR_32(WRAP_32(s + b), n0) + RSHR_32(WRAP_32(h), n1)),
 * the sum of the parts in int64 (an int32 lane wraps where n = 0) */
AI __m256i ro_fx8(const int64_t *s, const int64_t *b, const int64_t *h, const v32rs *r0, const v32rs *r1) {
    const __m256i a0 = _mm256_add_epi32(lo32x8(ld64(s), ld64(s + 4)), lo32x8(ld64(b), ld64(b + 4)));
    const __m256i a1 = lo32x8(ld64(h), ld64(h + 4));
    const __m256i p0 = rs32(a0, r0), p1 = rs32(a1, r1);
    const __m256i sum = _mm256_add_epi32(p0, p1);
    /* overflow: both parts of one sign and the sum of the other: saturate by p0's sign */
    const __m256i ov = _mm256_and_si256(_mm256_xor_si256(sum, p0), _mm256_xor_si256(sum, p1));
    const __m256i sat = _mm256_xor_si256(_mm256_srai_epi32(p0, 31), _mm256_set1_epi32(32767));
    return _mm256_blendv_epi8(clamp32(sum, -32768, 32767), sat, _mm256_srai_epi32(ov, 31));
}
/* sa8: SAT_8(SAT_32(RSHR(WRAP_32(s + b) * m0, n0)) + SAT_32(...(h) * m1...) + zp) + 128 */
AI __m256i ro_sa8_idx(const int64_t *s, const int64_t *b, const int64_t *h, const v64rs *r0, const v64rs *r1,
                      __m256i m0, __m256i m1, __m256i zp) {
    __m256i q[2];
    const __m256i lo = _mm256_set1_epi64x(-128), hi = _mm256_set1_epi64x(127);
    for (int k = 0; k < 2; k++) {
        __m256i p0 = rs64(_mm256_mul_epi32(_mm256_add_epi64(ld64(s + 4 * k), ld64(b + 4 * k)), m0), r0);
        __m256i p1 = rs64(_mm256_mul_epi32(ld64(h + 4 * k), m1), r1);
        if (r0->clamp) p0 = clamp64(p0, r0->lo, r0->hi);
        if (r1->clamp) p1 = clamp64(p1, r1->lo, r1->hi);
        q[k] = clamp64(_mm256_add_epi64(_mm256_add_epi64(p0, p1), zp), lo, hi);
    }
    return _mm256_add_epi32(lo32x8(q[0], q[1]), _mm256_set1_epi32(128));
}
/* The same where every part has n >= 34: RSHR(x, n) = (x + bias + bit) >> n is
 * the high 32 bits of the (wrapping) 64-bit sum x + bias + bit shifted right by
 * n - 32, and |x| <= 2^62 puts each part within 2^29 (SAT_32 cannot act; the
 * parts and zp add up inside int32) */
AI __m256i hi32x8(__m256i a, __m256i b) {
    const __m256i s = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), 0xDD));
    return _mm256_permute4x64_epi64(s, 0xD8);
}
AI __m256i rs_hi(__m256i x, const v64rs *r) {
    return _mm256_add_epi64(_mm256_add_epi64(x, r->b), _mm256_and_si256(_mm256_srl_epi64(x, r->n), r->om));
}
AI __m256i ro_sa8_idx_hi(const int64_t *s, const int64_t *b, const int64_t *h, const v64rs *r0, const v64rs *r1,
                         __m256i m0, __m256i m1, __m256i zp32) {
    __m256i t0[2], t1[2];
    for (int k = 0; k < 2; k++) {
        t0[k] = rs_hi(_mm256_mul_epi32(_mm256_add_epi64(ld64(s + 4 * k), ld64(b + 4 * k)), m0), r0);
        t1[k] = rs_hi(_mm256_mul_epi32(ld64(h + 4 * k), m1), r1);
    }
    const __m256i p0 = _mm256_sra_epi32(hi32x8(t0[0], t0[1]), r0->n32);
    const __m256i p1 = _mm256_sra_epi32(hi32x8(t1[0], t1[1]), r1->n32);
    const __m256i v = clamp32(_mm256_add_epi32(_mm256_add_epi32(p0, p1), zp32), -128, 127);
    return _mm256_add_epi32(v, _mm256_set1_epi32(128));
}
/* sa8: whether SAT_32 can act on RSHR(v * m, n) for an int32 v */
static int sa_part_clamps(int64_t m, int n) {
    if (n >= 32) return 0;
    return (m << 31) + ((int64_t)1 << n) > ((((int64_t)1 << 31) - 2) << n);
}

/* ------------------------------------------------------------ tables */
typedef struct {
    const int32_t *ad;
    __m256i O, hi, mask, rb, ro;
    __m128i pre, s, sl;
} vlut;
AI void vlut_make(vlut *v, const m2_lutl *l) {
    int sl = 0;
    while (sl < 31 && ((int32_t)1 << sl) < l->mul) sl++; /* mul = 2^sl */
    v->ad = l->ad;
    v->O = _mm256_set1_epi32(l->O), v->hi = _mm256_set1_epi32(l->hi), v->mask = _mm256_set1_epi32(l->mask);
    v->rb = _mm256_set1_epi32((int32_t)l->rs.bias), v->ro = _mm256_set1_epi32((int32_t)l->rs.om);
    v->pre = _mm_cvtsi32_si128(l->pre), v->s = _mm_cvtsi32_si128(l->s), v->sl = _mm_cvtsi32_si128(sl);
}
/* m2_lutl_do on 8 lanes (x in int16 range; |d * fr| < 2^30) */
AI __m256i vlut_do(const vlut *l, __m256i x) {
    const __m256i xs = _mm256_sra_epi32(x, l->pre);
    __m256i k = _mm256_add_epi32(_mm256_sra_epi32(_mm256_sll_epi32(xs, l->sl), l->s), l->O);
    k = _mm256_max_epi32(_mm256_min_epi32(k, l->hi), _mm256_setzero_si256());
    const __m256i e = _mm256_i32gather_epi32((const int *)l->ad, k, 4);
    const __m256i p = _mm256_mullo_epi32(_mm256_srai_epi32(e, 16), _mm256_and_si256(xs, l->mask));
    __m256i q = _mm256_sra_epi32(_mm256_add_epi32(_mm256_add_epi32(p, l->rb), _mm256_and_si256(_mm256_sra_epi32(p, l->s), l->ro)), l->s);
    q = clamp32(q, -32768, 32767);
    return wrap16(_mm256_sub_epi32(wrap16(e), q));
}
AI __m256i tab8(const int32_t *t, __m256i idx) { return _mm256_i32gather_epi32((const int *)t, idx, 4); }

/* fx_mul / fx_add (|a * b| <= 2^30; |a * la + b * lb| < 2^31) */
AI __m256i fxmul(__m256i a, __m256i b, const v32rs *r) { return clamp32(rs32(_mm256_mullo_epi32(a, b), r), -32768, 32767); }
AI __m256i fxadd(__m256i a, __m256i b, __m256i la, __m256i lb, const v32rs *r) {
    return clamp32(rs32(_mm256_add_epi32(_mm256_mullo_epi32(a, la), _mm256_mullo_epi32(b, lb)), r), -32768, 32767);
}
/* sa8 mul / add */
typedef struct {
    __m256i za, zb, zo, c;
    v32rs p, q;
} vsamul;
typedef struct {
    __m256i za, zb, zo, ca, cb;
    v32rs p, q;
} vsaadd;
AI void vsamul_make(vsamul *v, const m2_samul_l *l, int up) {
    v->za = _mm256_set1_epi32(l->za), v->zb = _mm256_set1_epi32(l->zb), v->zo = _mm256_set1_epi32(l->zo);
    v->c = _mm256_set1_epi32(l->c);
    v32rs_make(&v->p, &l->pre, up, 0);
    v32rs_make(&v->q, &l->post, up, 1);
}
AI void vsaadd_make(vsaadd *v, const m2_saadd_l *l, int up) {
    v->za = _mm256_set1_epi32(l->za), v->zb = _mm256_set1_epi32(l->zb), v->zo = _mm256_set1_epi32(l->zo);
    v->ca = _mm256_set1_epi32(l->ca), v->cb = _mm256_set1_epi32(l->cb);
    v32rs_make(&v->p, &l->ra, up, 0);
    v32rs_make(&v->q, &l->rb, up, 0);
}
AI __m256i samul(__m256i a, __m256i b, const vsamul *v) {
    const __m256i x = _mm256_mullo_epi32(_mm256_sub_epi32(a, v->za), _mm256_sub_epi32(b, v->zb)); /* |x| <= 255^2 */
    __m256i t = clamp32(rs32(x, &v->p), -32768, 32767);
    t = clamp32(rs32(_mm256_mullo_epi32(t, v->c), &v->q), -32768, 32767); /* |t * c| <= 2^30 */
    return clamp32(_mm256_add_epi32(t, v->zo), -128, 127);
}
AI __m256i saadd(__m256i a, __m256i b, const vsaadd *v) {
    const __m256i pa = rs32(_mm256_mullo_epi32(_mm256_sub_epi32(a, v->za), v->ca), &v->p); /* < 2^23 */
    const __m256i pb = rs32(_mm256_mullo_epi32(_mm256_sub_epi32(b, v->zb), v->cb), &v->q);
    return clamp32(_mm256_add_epi32(_mm256_add_epi32(pa, pb), v->zo), -128, 127);
}

/* ------------------------------------------------------------ constants per call */
typedef struct {
    v64rs r0[4], r1[4];
    v32rs q0, q1; /* FX16_FX8 read-out */
    __m256i m0[4], m1[4], zp, zp32;
    int hi32; /* sa8: every part's n >= 34 (ro_sa8_idx_hi) */
    vlut S, T, A;
    v32rs rcf, rgi, rad, rou;
    __m256i la, lb;
    vsamul ma, mb, mc;
    vsaadd aa;
} vplan;

AI void vplan_make(vplan *v, const m2_kind K, const m2_cf_plan *p, int ng) {
    const int up = p->up;
    if (K == M2_FX16_FX8) {
        v32rs_make(&v->q0, &p->r0[0], up, 1);
        v32rs_make(&v->q1, &p->r1[0], up, 1);
    } else {
        for (int g = 0; g < ng; g++) {
            const int k = K == M2_SA8 ? g : 0; /* FX: gate 0's constants serve all gates */
            v64rs_make(&v->r0[g], &p->r0[k]);
            v64rs_make(&v->r1[g], &p->r1[k]);
            v->m0[g] = _mm256_set1_epi64x(p->m0[k]);
            v->m1[g] = _mm256_set1_epi64x(p->m1[k]);
            if (K == M2_SA8) {
                v->r0[g].clamp = sa_part_clamps(p->m0[k], p->r0[k].n);
                v->r1[g].clamp = sa_part_clamps(p->m1[k], p->r1[k].n);
            }
        }
    }
    v->zp = _mm256_set1_epi64x(p->gzp);
    v->zp32 = _mm256_set1_epi32(p->gzp);
    v->hi32 = K == M2_SA8;
    if (K == M2_SA8)
        for (int g = 0; g < ng; g++) v->hi32 &= p->r0[g].n >= 34 && p->r1[g].n >= 34;
    if (K != M2_SA8) {
        vlut_make(&v->S, &p->sig);
        vlut_make(&v->T, &p->tnh);
        vlut_make(&v->A, &p->act);
        v32rs_make(&v->rcf, &p->rcf, up, 0);
        v32rs_make(&v->rgi, &p->rgi, up, 0);
        v32rs_make(&v->rad, &p->radd, up, 0);
        v32rs_make(&v->rou, &p->rout, up, 0);
        v->la = _mm256_set1_epi32(p->la), v->lb = _mm256_set1_epi32(p->lb);
    } else {
        vsamul_make(&v->ma, &p->mul_a, up);
        vsamul_make(&v->mb, &p->mul_b, up);
        vsamul_make(&v->mc, &p->mul_c, up);
        vsaadd_make(&v->aa, &p->add_a, up);
    }
}

/* gate g's value (FX kinds, int16 range) or table index (sa8) for 8 outputs
 * whose sums are at s, b, h (gate strides ss, bs, ss) */
#define GATE_AT(K, v, g, s, b, h, ss, bs)                                                                           \
    ((K) == M2_FX16 ? ro_fx16((s) + (g) * (ss), (b) + (g) * (bs), (h) + (g) * (ss), &(v)->r0[g], &(v)->r1[g])     \
     : (K) == M2_FX16_FX8 ? ro_fx8((s) + (g) * (ss), (b) + (g) * (bs), (h) + (g) * (ss), &(v)->q0, &(v)->q1)       \
     : H ? ro_sa8_idx_hi((s) + (g) * (ss), (b) + (g) * (bs), (h) + (g) * (ss), &(v)->r0[g], &(v)->r1[g],           \
                         (v)->m0[g], (v)->m1[g], (v)->zp32)                                                        \
         : ro_sa8_idx((s) + (g) * (ss), (b) + (g) * (bs), (h) + (g) * (ss), &(v)->r0[g], &(v)->r1[g], (v)->m0[g],  \
                      (v)->m1[g], (v)->zp))

/* ------------------------------------------------------------ steps on 8 outputs */
AI void lstm8(const m2_kind K, const int H, const vplan *v, const m2_cf_plan *p, const int64_t *s, const int64_t *b,
              const int64_t *h, long ss, long bs, void *c, void *y) {
    if (K != M2_SA8) {
        const __m256i i_ = vlut_do(&v->S, GATE_AT(K, v, 0, s, b, h, ss, bs));
        const __m256i g_ = vlut_do(&v->T, GATE_AT(K, v, 1, s, b, h, ss, bs));
        const __m256i f_ = vlut_do(&v->S, GATE_AT(K, v, 2, s, b, h, ss, bs));
        const __m256i o_ = vlut_do(&v->S, GATE_AT(K, v, 3, s, b, h, ss, bs));
        const __m256i cf = fxmul(ld16((const int16_t *)c), f_, &v->rcf), gi = fxmul(g_, i_, &v->rgi);
        const __m256i cn = fxadd(cf, gi, v->la, v->lb, &v->rad);
        const __m256i a = p->act_none ? cn : vlut_do(&v->A, cn);
        st16((int16_t *)c, cn);
        st16((int16_t *)y, fxmul(a, o_, &v->rou));
    } else {
        const __m256i i_ = tab8(p->sig8, GATE_AT(K, v, 0, s, b, h, ss, bs));
        const __m256i g_ = tab8(p->tnh8, GATE_AT(K, v, 1, s, b, h, ss, bs));
        const __m256i f_ = tab8(p->sig8, GATE_AT(K, v, 2, s, b, h, ss, bs));
        const __m256i o_ = tab8(p->sig8, GATE_AT(K, v, 3, s, b, h, ss, bs));
        const __m256i cf = samul(ld8((const int8_t *)c), f_, &v->ma), gi = samul(g_, i_, &v->mb);
        const __m256i cn = saadd(cf, gi, &v->aa);
        const __m256i a = p->act_none ? cn : tab8(p->act8, _mm256_add_epi32(cn, _mm256_set1_epi32(128)));
        st8((int8_t *)c, cn);
        st8((int8_t *)y, samul(a, o_, &v->mc));
    }
}

/* GRU first part: z at zr, r at zr + zs (elements), rh */
AI void zr8(const m2_kind K, const int H, const vplan *v, const m2_cf_plan *p, const int64_t *s, const int64_t *b, const int64_t *h,
            long ss, long bs, const void *hv, void *zr, long zs, void *rh) {
    if (K != M2_SA8) {
        const __m256i z = vlut_do(&v->S, GATE_AT(K, v, 0, s, b, h, ss, bs));
        const __m256i r = vlut_do(&v->S, GATE_AT(K, v, 1, s, b, h, ss, bs));
        st16((int16_t *)zr, z);
        st16((int16_t *)zr + zs, r);
        st16((int16_t *)rh, fxmul(r, ld16((const int16_t *)hv), &v->rcf));
    } else {
        const __m256i z = tab8(p->sig8, GATE_AT(K, v, 0, s, b, h, ss, bs));
        const __m256i r = tab8(p->sig8, GATE_AT(K, v, 1, s, b, h, ss, bs));
        st8((int8_t *)zr, z);
        st8((int8_t *)zr + zs, r);
        st8((int8_t *)rh, samul(r, ld8((const int8_t *)hv), &v->ma));
    }
}

/* GRU second part: gate 2 (its sums at s, b, h) and y */
AI void go8(const m2_kind K, const int H, const vplan *v, const m2_cf_plan *p, const int64_t *s, const int64_t *b, const int64_t *h,
            const void *hv, const void *zv, void *y) {
    if (K != M2_SA8) {
        const __m256i nn = vlut_do(&v->T, GATE_AT(K, v, 0, s, b, h, 0, 0));
        const __m256i hh = ld16((const int16_t *)hv), zz = ld16((const int16_t *)zv);
        const __m256i zh = fxmul(hh, zz, &v->rgi);
        const __m256i zc = clamp32(_mm256_sub_epi32(_mm256_set1_epi32(32767), zz), -32768, 32767);
        st16((int16_t *)y, fxadd(fxmul(nn, zc, &v->rou), zh, v->la, v->lb, &v->rad));
    } else {
        const __m256i nn = tab8(p->tnh8, GATE_AT(K, v, 2, s, b, h, 0, 0));
        const __m256i hh = ld8((const int8_t *)hv), zz = ld8((const int8_t *)zv);
        const __m256i zh = samul(hh, zz, &v->mb);
        const __m256i om = p->om_not ? _mm256_xor_si256(zz, _mm256_set1_epi32(-1))
                                     : tab8(p->om8, _mm256_add_epi32(zz, _mm256_set1_epi32(128)));
        st8((int8_t *)y, saadd(samul(nn, om, &v->mc), zh, &v->aa));
    }
}

/* ------------------------------------------------------------ whole steps */
/* The outputs 8 at a time; the last M % 8 through zero-padded copies. */
AI void lstm_loop(const m2_kind K, const int H, const vplan *v, const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                 const int64_t *s_h, void *c, void *y) {
    const size_t e = K == M2_SA8 ? 1 : 2;
    int o = 0;
    for (; o + 8 <= M; o += 8)
        lstm8(K, H, v, p, s_in + o, bt + o, s_h + o, Mp, M, (char *)c + o * e, (char *)y + o * e);
    if (o < M) {
        const int r = M - o;
        int64_t ts[32] = {0}, tb[32] = {0}, th[32] = {0};
        int16_t tc[8] = {0}, ty[8];
        for (int g = 0; g < 4; g++)
            for (int j = 0; j < r; j++)
                ts[8 * g + j] = s_in[g * Mp + o + j], tb[8 * g + j] = bt[(long)g * M + o + j], th[8 * g + j] = s_h[g * Mp + o + j];
        memcpy(tc, (char *)c + o * e, r * e);
        lstm8(K, H, v, p, ts, tb, th, 8, 8, tc, ty);
        memcpy((char *)c + o * e, tc, r * e);
        memcpy((char *)y + o * e, ty, r * e);
    }
}
AI void zr_loop(const m2_kind K, const int H, const vplan *v, const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
               const int64_t *s_h, const void *h, void *zr, void *rh) {
    const size_t e = K == M2_SA8 ? 1 : 2;
    int o = 0;
    for (; o + 8 <= M; o += 8)
        zr8(K, H, v, p, s_in + o, bt + o, s_h + o, Mp, M, (const char *)h + o * e, (char *)zr + o * e, M,
            (char *)rh + o * e);
    if (o < M) {
        const int r = M - o;
        int64_t ts[16] = {0}, tb[16] = {0}, th[16] = {0};
        int16_t thv[8] = {0}, tzr[16], trh[8];
        for (int g = 0; g < 2; g++)
            for (int j = 0; j < r; j++)
                ts[8 * g + j] = s_in[g * Mp + o + j], tb[8 * g + j] = bt[(long)g * M + o + j], th[8 * g + j] = s_h[g * Mp + o + j];
        memcpy(thv, (const char *)h + o * e, r * e);
        zr8(K, H, v, p, ts, tb, th, 8, 8, thv, tzr, 8, trh);
        memcpy((char *)zr + o * e, tzr, r * e);
        memcpy((char *)zr + (M + o) * e, (char *)tzr + 8 * e, r * e);
        memcpy((char *)rh + o * e, trh, r * e);
    }
}
AI void go_loop(const m2_kind K, const int H, const vplan *v, const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
               const int64_t *s_h, const void *h, const void *zr, void *y) {
    const size_t e = K == M2_SA8 ? 1 : 2;
    const int64_t *s2 = s_in + 2 * Mp, *b2 = bt + 2 * (long)M, *h2 = s_h + 2 * Mp;
    int o = 0;
    for (; o + 8 <= M; o += 8)
        go8(K, H, v, p, s2 + o, b2 + o, h2 + o, (const char *)h + o * e, (const char *)zr + o * e, (char *)y + o * e);
    if (o < M) {
        const int r = M - o;
        int64_t ts[8] = {0}, tb[8] = {0}, th[8] = {0};
        int16_t thv[8] = {0}, tz[8] = {0}, ty[8];
        for (int j = 0; j < r; j++) ts[j] = s2[o + j], tb[j] = b2[o + j], th[j] = h2[o + j];
        memcpy(thv, (const char *)h + o * e, r * e);
        memcpy(tz, (const char *)zr + o * e, r * e);
        go8(K, H, v, p, ts, tb, th, thv, tz, ty);
        memcpy((char *)y + o * e, ty, r * e);
    }
}

/* sa8 with every read-out part's n >= 34: the high-dword read-outs (H = 1) */
AI void lstm_all(const m2_kind K, const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                 const int64_t *s_h, void *c, void *y) {
    vplan v;
    vplan_make(&v, K, p, 4);
    if (K == M2_SA8 && v.hi32)
        lstm_loop(K, 1, &v, p, M, Mp, s_in, bt, s_h, c, y);
    else
        lstm_loop(K, 0, &v, p, M, Mp, s_in, bt, s_h, c, y);
}
AI void zr_all(const m2_kind K, const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
               const int64_t *s_h, const void *h, void *zr, void *rh) {
    vplan v;
    vplan_make(&v, K, p, 2);
    if (K == M2_SA8 && v.hi32)
        zr_loop(K, 1, &v, p, M, Mp, s_in, bt, s_h, h, zr, rh);
    else
        zr_loop(K, 0, &v, p, M, Mp, s_in, bt, s_h, h, zr, rh);
}
AI void go_all(const m2_kind K, const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
               const int64_t *s_h, const void *h, const void *zr, void *y) {
    vplan v;
    vplan_make(&v, K, p, 3); /* sa8: gate 2's constants at index 2; FX: gate 0's everywhere */
    if (K == M2_SA8 && v.hi32)
        go_loop(K, 1, &v, p, M, Mp, s_in, bt, s_h, h, zr, y);
    else
        go_loop(K, 0, &v, p, M, Mp, s_in, bt, s_h, h, zr, y);
}

#define KINDS3(NAME, FN, PARAMS, ARGS)                                 \
    TGT static void NAME##_fx16 PARAMS { FN(M2_FX16, ARGS); }          \
    TGT static void NAME##_fx8 PARAMS { FN(M2_FX16_FX8, ARGS); }       \
    TGT static void NAME##_sa8 PARAMS { FN(M2_SA8, ARGS); }
#define PICK3(NAME, A)                                   \
    switch (p->kind) {                                   \
    case M2_FX16: NAME##_fx16 A; break;                  \
    case M2_FX16_FX8: NAME##_fx8 A; break;               \
    default: NAME##_sa8 A;                               \
    }

#define L_P (const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h, void *c, void *y)
#define L_A p, M, Mp, s_in, bt, s_h, c, y
KINDS3(lstm2, lstm_all, L_P, L_A)
#define Z_P (const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h, const void *h, void *zr, void *rh)
#define Z_A p, M, Mp, s_in, bt, s_h, h, zr, rh
KINDS3(zr2, zr_all, Z_P, Z_A)
#define G_P (const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h, const void *h, const void *zr, void *y)
#define G_A p, M, Mp, s_in, bt, s_h, h, zr, y
KINDS3(go2, go_all, G_P, G_A)

void mli2_cf_lstm_step_avx2(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                            const int64_t *s_h, void *c, void *y) {
    PICK3(lstm2, (L_A))
}
void mli2_cf_gru_zr_avx2(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                         const int64_t *s_h, const void *h, void *zr, void *rh) {
    PICK3(zr2, (Z_A))
}
void mli2_cf_gru_out_avx2(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                          const int64_t *s_h, const void *h, const void *zr, void *y) {
    PICK3(go2, (G_A))
}
int mli2_cf_have_avx2(void) { return 1; }
#else
int mli2_cf_have_avx2(void) { return 0; }
#endif
