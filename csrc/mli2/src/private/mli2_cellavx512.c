/* The sa8 element-wise steps of the LSTM and GRU cells written for AVX-512
 * (mli2_cellfast.h).  The compiler's vectorisation of the lane forms
 * (mli2_cellfast.c) keeps every value of an sa8 step in int64 lanes, and
 * those steps took about half of a short sequence's time.  Here only the
 * gates' read-outs run on 8 int64 lanes; the table lookups run on 32 int16
 * lanes (vpermt2w over the 256-entry int16 tables, as cf_tabpass512) and the
 * element steps on 16 int32 lanes, 32 outputs a block, the last block
 * masked.  The integers are those of the lane forms for the same plans:
 *
 * - int64 rounding (read-outs): the lane form itself, vpsraq being native.
 * - int32 rounding (0 <= n <= 31), as in mli2_cellavx2.c:
 *   floor((x + c) / 2^n) = (x >> n) + (((x & (2^n - 1)) + c) >>> n) for
 *   0 <= c <= 2^30 + 1, with no int32 overflow; the UP saturation at MAX_32
 *   before the shift is min(result, MAX_32 >> n).
 * - the int32 clamp of a read-out part is always applied (it costs two
 *   instructions here; where it cannot act it changes nothing). */
#include "mli2_cellfast.h"

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define AI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"), always_inline)) static inline

/* int64 rounding constants (one part of a read-out) */
typedef struct {
    __m512i b, om, m; /* m: the part's multiplier */
    __m128i n;
} z64rs;
/* int32 rounding constants */
typedef struct {
    __m512i b, om, mask, cap;
    __m128i n;
} z32rs;

AI void z64rs_make(z64rs *v, const m2_rs *r, int64_t m) {
    v->b = _mm512_set1_epi64(r->bias);
    v->om = _mm512_set1_epi64(r->om);
    v->m = _mm512_set1_epi64(m);
    v->n = _mm_cvtsi32_si128(r->n);
}
/* sat: the UP rounding saturates at MAX_32 before the shift (RSLS) */
AI void z32rs_make(z32rs *v, const m2_rs *r, int up, int sat) {
    v->b = _mm512_set1_epi32((int32_t)r->bias);
    v->om = _mm512_set1_epi32((int32_t)r->om);
    v->mask = _mm512_set1_epi32((int32_t)(((int64_t)1 << r->n) - 1));
    v->cap = _mm512_set1_epi32(up && sat ? (int32_t)(INT32_MAX >> r->n) : INT32_MAX);
    v->n = _mm_cvtsi32_si128(r->n);
}

/* m2_rs_k on 8 lanes (wrapping, as the scalar code built with -fwrapv) */
AI __m512i rs64(__m512i x, const z64rs *r, const int up) {
    __m512i t = _mm512_add_epi64(x, r->b);
    if (!up) t = _mm512_add_epi64(t, _mm512_and_si512(_mm512_sra_epi64(x, r->n), r->om));
    return _mm512_sra_epi64(t, r->n);
}
AI __m512i rs32(__m512i x, const z32rs *r) {
    const __m512i fl = _mm512_sra_epi32(x, r->n);
    const __m512i c = _mm512_add_epi32(r->b, _mm512_and_si512(fl, r->om));
    const __m512i q = _mm512_add_epi32(fl, _mm512_srl_epi32(_mm512_add_epi32(_mm512_and_si512(x, r->mask), c), r->n));
    return _mm512_min_epi32(q, r->cap);
}
AI __m512i clamp32(__m512i v, int32_t lo, int32_t hi) {
    return _mm512_min_epi32(_mm512_max_epi32(v, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi));
}

/* the first k (1 <= k; all where k >= n) of n <= 32 lanes, as a mask */
AI uint32_t first_k(int k, int n) { return k >= n ? (uint32_t)(((uint64_t)1 << n) - 1) : (1u << k) - 1u; }

/* ------------------------------------------------------------ read-outs */
/* SAT_8(SAT_32(RSHR(WRAP_32(s + b) * m0, n0)) + SAT_32(RSHR(WRAP_32(h) * m1, n1)) + zp) for 8 outputs
 * (vpmuldq multiplies the low 32 bits of each lane, sign-extended: WRAP_32 itself) */
AI __m512i ro8(const int64_t *s, const int64_t *b, const int64_t *h, __mmask8 m, const z64rs *r0, const z64rs *r1,
               __m512i zp, const int up) {
    const __m512i lo32 = _mm512_set1_epi64(INT32_MIN), hi32 = _mm512_set1_epi64(INT32_MAX);
    const __m512i acc0 = _mm512_add_epi64(_mm512_maskz_loadu_epi64(m, s), _mm512_maskz_loadu_epi64(m, b));
    __m512i p0 = rs64(_mm512_mul_epi32(acc0, r0->m), r0, up);
    __m512i p1 = rs64(_mm512_mul_epi32(_mm512_maskz_loadu_epi64(m, h), r1->m), r1, up);
    p0 = _mm512_min_epi64(_mm512_max_epi64(p0, lo32), hi32);
    p1 = _mm512_min_epi64(_mm512_max_epi64(p1, lo32), hi32);
    const __m512i v = _mm512_add_epi64(_mm512_add_epi64(p0, p1), zp);
    return _mm512_min_epi64(_mm512_max_epi64(v, _mm512_set1_epi64(-128)), _mm512_set1_epi64(127));
}
/* the table indices (value + 128) of one gate for the k <= 32 outputs at s, b, h, as 32 int16 lanes */
AI __m512i gate_idx(const int64_t *s, const int64_t *b, const int64_t *h, int k, const z64rs *r0, const z64rs *r1,
                    __m512i zp, const int up) {
    __m128i q[4]; /* (no pointer formed past the last block's outputs) */
    for (int i = 0; i < 4; i++)
        q[i] = k > 8 * i ? _mm512_cvtepi64_epi16(ro8(s + 8 * i, b + 8 * i, h + 8 * i, (__mmask8)first_k(k - 8 * i, 8), r0, r1, zp, up))
                         : _mm_setzero_si128();
    const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(q[0]), q[1], 1);
    const __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(q[2]), q[3], 1);
    return _mm512_add_epi16(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), _mm512_set1_epi16(128));
}

/* ------------------------------------------------------------ tables */
/* a 256-entry int16 table in 8 registers; 32 lookups: four vpermt2w (each
 * reads an index's low 6 bits) and the index's bits 6 and 7 choose */
typedef struct {
    __m512i r[8];
} ztab;
AI void ztab_load(ztab *t, const int16_t *src) {
    for (int k = 0; k < 8; k++) t->r[k] = _mm512_loadu_si512((const void *)(src + 32 * k));
}
AI __m512i ztab_do(const ztab *t, __m512i idx) {
    const __m512i a = _mm512_permutex2var_epi16(t->r[0], idx, t->r[1]);
    const __m512i b = _mm512_permutex2var_epi16(t->r[2], idx, t->r[3]);
    const __m512i c = _mm512_permutex2var_epi16(t->r[4], idx, t->r[5]);
    const __m512i d = _mm512_permutex2var_epi16(t->r[6], idx, t->r[7]);
    const __mmask32 b6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(64));
    const __mmask32 b7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(128));
    return _mm512_mask_blend_epi16(b7, _mm512_mask_blend_epi16(b6, a, b), _mm512_mask_blend_epi16(b6, c, d));
}
/* half 0 / 1 of 32 int16 lanes as 16 int32 lanes, and back */
AI __m512i half32(__m512i v, int hf) {
    return _mm512_cvtepi16_epi32(hf ? _mm512_extracti64x4_epi64(v, 1) : _mm512_castsi512_si256(v));
}
AI __m512i join16(__m512i lo, __m512i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(lo)), _mm512_cvtepi32_epi16(hi), 1);
}
/* 16 int8 at p (the first k >= 1) as int32 lanes; 16 int32 lanes in int8 range to p */
AI __m512i ld8x16(const int8_t *p, int k) { return _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8((__mmask16)first_k(k, 16), p)); }
AI void st8x16(int8_t *p, int k, __m512i v) { _mm_mask_storeu_epi8(p, (__mmask16)first_k(k, 16), _mm512_cvtepi32_epi8(v)); }
/* 32 int16 lanes in int8 range to p (the first k) */
AI void st8x32(int8_t *p, int k, __m512i v) { _mm256_mask_storeu_epi8(p, first_k(k, 32), _mm512_cvtepi16_epi8(v)); }

/* ------------------------------------------------------------ sa8 mul / add */
typedef struct {
    __m512i za, zb, zo, c;
    z32rs p, q;
} zsamul;
typedef struct {
    __m512i za, zb, zo, ca, cb;
    z32rs p, q;
} zsaadd;
AI void zsamul_make(zsamul *v, const m2_samul_l *l, int up) {
    v->za = _mm512_set1_epi32(l->za), v->zb = _mm512_set1_epi32(l->zb), v->zo = _mm512_set1_epi32(l->zo);
    v->c = _mm512_set1_epi32(l->c);
    z32rs_make(&v->p, &l->pre, up, 0);
    z32rs_make(&v->q, &l->post, up, 1);
}
AI void zsaadd_make(zsaadd *v, const m2_saadd_l *l, int up) {
    v->za = _mm512_set1_epi32(l->za), v->zb = _mm512_set1_epi32(l->zb), v->zo = _mm512_set1_epi32(l->zo);
    v->ca = _mm512_set1_epi32(l->ca), v->cb = _mm512_set1_epi32(l->cb);
    z32rs_make(&v->p, &l->ra, up, 0);
    z32rs_make(&v->q, &l->rb, up, 0);
}
AI __m512i samul(__m512i a, __m512i b, const zsamul *v) {
    const __m512i x = _mm512_mullo_epi32(_mm512_sub_epi32(a, v->za), _mm512_sub_epi32(b, v->zb)); /* |x| <= 255^2 */
    __m512i t = clamp32(rs32(x, &v->p), -32768, 32767);
    t = clamp32(rs32(_mm512_mullo_epi32(t, v->c), &v->q), -32768, 32767); /* |t * c| <= 2^30 */
    return clamp32(_mm512_add_epi32(t, v->zo), -128, 127);
}
AI __m512i saadd(__m512i a, __m512i b, const zsaadd *v) {
    const __m512i pa = rs32(_mm512_mullo_epi32(_mm512_sub_epi32(a, v->za), v->ca), &v->p); /* < 2^23 */
    const __m512i pb = rs32(_mm512_mullo_epi32(_mm512_sub_epi32(b, v->zb), v->cb), &v->q);
    return clamp32(_mm512_add_epi32(_mm512_add_epi32(pa, pb), v->zo), -128, 127);
}

/* ------------------------------------------------------------ constants per call */
typedef struct {
    z64rs r0[4], r1[4];
    __m512i zp;
    zsamul ma, mb, mc;
    zsaadd aa;
} zplan;
AI void zplan_make(zplan *v, const m2_cf_plan *p, int g0, int ng, const int up) {
    for (int g = g0; g < g0 + ng; g++) {
        z64rs_make(&v->r0[g], &p->r0[g], p->m0[g]);
        z64rs_make(&v->r1[g], &p->r1[g], p->m1[g]);
    }
    v->zp = _mm512_set1_epi64(p->gzp);
    zsamul_make(&v->ma, &p->mul_a, up);
    zsamul_make(&v->mb, &p->mul_b, up);
    zsamul_make(&v->mc, &p->mul_c, up);
    zsaadd_make(&v->aa, &p->add_a, up);
}
/* gate g's indices for the k outputs from o (gate strides Mp for the sums, M for the bias terms) */
#define IDX(g) \
    gate_idx(s_in + (g) * Mp + o, bt + (long)(g) * M + o, s_h + (g) * Mp + o, k, &v.r0[g], &v.r1[g], v.zp, up)

/* ------------------------------------------------------------ steps */
AI void lstm_sa8(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h,
                 int8_t *c, int8_t *y, const int up) {
    zplan v;
    zplan_make(&v, p, 0, 4, up);
    ztab sig, tnh, act;
    const int act_none = p->act_none;
    ztab_load(&sig, p->sig16), ztab_load(&tnh, p->tnh16), ztab_load(&act, act_none ? p->sig16 : p->act16);
    for (int o = 0; o < M; o += 32) {
        const int k = M - o < 32 ? M - o : 32;
        const __m512i i_ = ztab_do(&sig, IDX(0)), g_ = ztab_do(&tnh, IDX(1));
        const __m512i f_ = ztab_do(&sig, IDX(2)), o_ = ztab_do(&sig, IDX(3));
        __m512i cn[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
        for (int hf = 0; hf < 2 && k > 16 * hf; hf++) {
            const __m512i cf = samul(ld8x16(c + o + 16 * hf, k - 16 * hf), half32(f_, hf), &v.ma);
            const __m512i gi = samul(half32(g_, hf), half32(i_, hf), &v.mb);
            cn[hf] = saadd(cf, gi, &v.aa);
        }
        const __m512i cn16 = join16(cn[0], cn[1]);
        const __m512i a = act_none ? cn16 : ztab_do(&act, _mm512_add_epi16(cn16, _mm512_set1_epi16(128)));
        st8x32(c + o, k, cn16);
        for (int hf = 0; hf < 2 && k > 16 * hf; hf++)
            st8x16(y + o + 16 * hf, k - 16 * hf, samul(half32(a, hf), half32(o_, hf), &v.mc));
    }
}

AI void zr_sa8(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h,
               const int8_t *h, int8_t *zr, int8_t *rh, const int up) {
    zplan v;
    zplan_make(&v, p, 0, 2, up);
    ztab sig;
    ztab_load(&sig, p->sig16);
    for (int o = 0; o < M; o += 32) {
        const int k = M - o < 32 ? M - o : 32;
        const __m512i z = ztab_do(&sig, IDX(0)), r = ztab_do(&sig, IDX(1));
        st8x32(zr + o, k, z);
        st8x32(zr + M + o, k, r);
        for (int hf = 0; hf < 2 && k > 16 * hf; hf++) {
            const int kh = k - 16 * hf;
            st8x16(rh + o + 16 * hf, kh, samul(half32(r, hf), ld8x16(h + o + 16 * hf, kh), &v.ma));
        }
    }
}

AI void go_sa8(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h,
               const int8_t *h, const int8_t *zr, int8_t *y, const int up) {
    zplan v;
    zplan_make(&v, p, 2, 1, up);
    ztab tnh, om;
    ztab_load(&tnh, p->tnh16), ztab_load(&om, p->om16);
    for (int o = 0; o < M; o += 32) {
        const int k = M - o < 32 ? M - o : 32;
        const __m512i nn = ztab_do(&tnh, IDX(2));
        const __m512i zz = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(first_k(k, 32), zr + o));
        const __m512i zc = p->om_not ? _mm512_xor_si512(zz, _mm512_set1_epi32(-1))
                                     : ztab_do(&om, _mm512_add_epi16(zz, _mm512_set1_epi16(128)));
        for (int hf = 0; hf < 2 && k > 16 * hf; hf++) {
            const int kh = k - 16 * hf;
            const __m512i zh = samul(ld8x16(h + o + 16 * hf, kh), half32(zz, hf), &v.mb);
            st8x16(y + o + 16 * hf, kh, saadd(samul(half32(nn, hf), half32(zc, hf), &v.mc), zh, &v.aa));
        }
    }
}
#undef IDX

/* one version per rounding mode (e: half to even, u: half up) */
#define L_P (const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h, void *c, void *y)
#define Z_P (const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h, const void *h, void *zr, void *rh)
#define G_P (const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h, const void *h, const void *zr, void *y)
#define MODES(NAME, P, CALL)                        \
    TGT static void NAME##_e P { CALL(0); }         \
    TGT static void NAME##_u P { CALL(1); }
#define L_CALL(up) lstm_sa8(p, M, Mp, s_in, bt, s_h, (int8_t *)c, (int8_t *)y, up)
#define Z_CALL(up) zr_sa8(p, M, Mp, s_in, bt, s_h, (const int8_t *)h, (int8_t *)zr, (int8_t *)rh, up)
#define G_CALL(up) go_sa8(p, M, Mp, s_in, bt, s_h, (const int8_t *)h, (const int8_t *)zr, (int8_t *)y, up)
MODES(lstm5, L_P, L_CALL)
MODES(zr5, Z_P, Z_CALL)
MODES(go5, G_P, G_CALL)

int mli2_cf_sa8_avx512_ok(const m2_cf_plan *p, int gru) {
    return p->kind == M2_SA8 && p->sig16 && p->tnh16 && (gru ? p->om16 != NULL : p->act_none || p->act16);
}
void mli2_cf_lstm_step_sa8_avx512 L_P {
    if (p->up) lstm5_u(p, M, Mp, s_in, bt, s_h, c, y);
    else lstm5_e(p, M, Mp, s_in, bt, s_h, c, y);
}
void mli2_cf_gru_zr_sa8_avx512 Z_P {
    if (p->up) zr5_u(p, M, Mp, s_in, bt, s_h, h, zr, rh);
    else zr5_e(p, M, Mp, s_in, bt, s_h, h, zr, rh);
}
void mli2_cf_gru_out_sa8_avx512 G_P {
    if (p->up) go5_u(p, M, Mp, s_in, bt, s_h, h, zr, y);
    else go5_e(p, M, Mp, s_in, bt, s_h, h, zr, y);
}
#else
int mli2_cf_sa8_avx512_ok(const m2_cf_plan *p, int gru) {
    (void)p, (void)gru;
    return 0;
}
#endif
