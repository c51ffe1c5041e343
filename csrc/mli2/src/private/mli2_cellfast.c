/* The fused element-wise steps of the LSTM and GRU cells (mli2_cellfast.h):
 * branch-free loops over the outputs, a scalar and an AVX-512 version
 * chosen at run time (the ISA switch of the 1.1 core; the AVX2 path takes
 * the intrinsics of mli2_cellavx2.c), all computing the same integers as
 * the per-step code of the cells.
 *
 * Ranges (why the forms of mli2_lanes.h are exact here):
 * - FX16 read-out: |sum| <= N * 2^30 < 2^61 and |bias term| < 2^31, shift
 *   0 .. 39: the rounding adds stay inside int64 and the sum of the two
 *   rounded parts does not reach 2^63 (ADD_64 never saturates).
 * - FX16_FX8 read-out: WRAP_32 of the sums, shift 0 .. 31 (RSHR_32: the UP
 *   half is added with saturation to MAX_32 through hi); parts in int32, so
 *   SAT_16(SAT_32(p0 + p1)) = SAT_16(p0 + p1).
 * - sa8 read-out: |WRAP_32(acc) * m| < 2^62 for 0 < m < 2^31, shift 0 .. 63;
 *   SAT_8(SAT_16(SAT_16(SAT_32(p0 + p1)) + zp)) = SAT_8(p0 + p1 + zp) for
 *   |zp| <= 2^15.
 * - fx_mul: |a * b| <= 2^30, shift 0 .. 31 (RSHR_64).
 * - fx_add: alignment shifts 0 .. 15 (no SHL_32 saturation on int16 values,
 *   |A + B| < 2^31), shift 0 .. 31.
 * - sa8 mul: |x| <= 255^2, |t * c| <= 2^30, shifts 0 .. 31 (RSHR_32 with the
 *   UP saturation through hi); SAT_8(SAT_16(t + zo)) = SAT_8(t + zo).
 * - sa8 add: |(a - za) * ca| < 2^23, shifts 0 .. 31, |A +- B| < 2^25. */
#include "mli2_cellfast.h"

int mlipy_get_isa(void); /* csrc/src/private/mli_prv_dotprod.c */

/* ------------------------------------------------------------ plans */
int mli2_cf_readout(m2_cf_plan *p, int g, const m2_dense_in ins[2], m2_fmt out) {
    const int up = mli2_round_up;
    for (int i = 0; i < 2; i++) {
        const int sh = ins[i].fx.shift + ins[i].w_shift - out.shift;
        m2_rs r;
        int64_t m = 0;
        switch (p->kind) {
        case M2_FX16:
            if (sh < 0) return 0;
            r = m2_rs_make(m2_imin(sh, 39), 64, up);
            break;
        case M2_FX16_FX8:
            if (sh < 0 || sh > 31) return 0;
            r = m2_rs_make(sh, 32, up);
            break;
        default: {
            const m2_mult mu = m2_mult_of(ins[i].fx, out, ins[i].w_scale, ins[i].w_shift);
            if (mu.sh < 0 || mu.m <= 0) return 0;
            r = m2_rs_make(m2_imin(mu.sh, 63), 64, up);
            m = mu.m;
        }
        }
        /* FX: the steps use gate 0's constants for every gate (one
         * format for all gates' weights, so they are always the same) */
        const m2_rs *r_0 = i == 0 ? &p->r0[0] : &p->r1[0];
        if (p->kind != M2_SA8 && g > 0 && (r.n != r_0->n || r.bias != r_0->bias || r.om != r_0->om || r.hi != r_0->hi))
            return 0;
        if (i == 0)
            p->r0[g] = r, p->m0[g] = m;
        else
            p->r1[g] = r, p->m1[g] = m;
    }
    p->up = up;
    if (p->kind == M2_SA8) {
        if (out.zp < -32768 || out.zp > 32767) return 0;
        p->gzp = out.zp;
    }
    return 1;
}

int mli2_cf_fxmul(m2_rs *r, int fa, int fb, int fo, int up) {
    const int n = m2_imin(fa + fb - fo, 31);
    if (n < 0) return 0;
    *r = m2_rs_make(n, 64, up);
    return 1;
}

int mli2_cf_fxadd(m2_rs *r, int32_t *la, int32_t *lb, int fa, int fb, int fo, int up) {
    const int sa = m2_imax(fb - fa, 0), sb = m2_imax(fa - fb, 0), n = m2_imin(m2_imax(fa, fb) - fo, 31);
    if (sa > 15 || sb > 15 || n < 0) return 0;
    *la = (int32_t)1 << sa, *lb = (int32_t)1 << sb;
    *r = m2_rs_make(n, 64, up);
    return 1;
}

int mli2_cf_samul(m2_samul_l *l, const m2_sa_mul_c *p, int up) {
    const int pre = m2_imin(m2_imax(p->post - 21, 0), 3), n = p->post - pre;
    if (n < 0 || n > 31) return 0;
    l->za = p->za, l->zb = p->zb, l->zo = p->zo, l->c = p->c;
    l->pre = m2_rs_make(pre, 32, up);
    l->post = m2_rs_make(n, 32, up);
    return 1;
}

int mli2_cf_saadd(m2_saadd_l *l, const m2_sa_add_c *p, int up) {
    if (p->pa < 0 || p->pa > 31 || p->pb < 0 || p->pb > 31) return 0;
    l->za = p->za, l->zb = p->zb, l->zo = p->zo, l->ca = p->ca, l->cb = p->cb;
    l->ra = m2_rs_make(p->pa, 32, up);
    l->rb = m2_rs_make(p->pb, 32, up);
    return 1;
}

/* ------------------------------------------------------------ lane forms */
/* The loops read every constant from locals (a plan field read through a
 * pointer inside the loop would keep the compiler from vectorizing). */
#define ALWAYS M2_AI
#define RS_LOC(V, R) \
    const int64_t V##b = (R).bias, V##om = (R).om, V##hi = (R).hi; \
    const int V##n = (R).n
/* (up: the body's compile-time rounding mode; RSLS where MAX_32 can be reached) */
#define RSL(x, V) m2_rs_k((x), V##b, V##om, V##hi, V##n, up, 0)
#define RSLS(x, V) m2_rs_k((x), V##b, V##om, V##hi, V##n, up, 1)

/* one gate's read-out from its raw sums (acc0 includes the bias term) */
#define RO_LOC(g)          \
    RS_LOC(ra##g, P.r0[g]); \
    RS_LOC(rb##g, P.r1[g]); \
    const int64_t m0_##g = P.m0[g], m1_##g = P.m1[g]
/* FX kinds: gate 0's constants for all gates (mli2_cf_readout) */
#define GATE(g)                                                                                                \
    (kind == M2_SA8 ? ro(kind, up, gs##g[j] + gb##g[j], gh##g[j], ra##g##b, ra##g##om, ra##g##hi, ra##g##n, rb##g##b, \
                         rb##g##om, rb##g##hi, rb##g##n, m0_##g, m1_##g, gzp)                                  \
                    : ro(kind, up, gs##g[j] + gb##g[j], gh##g[j], ra0b, ra0om, ra0hi, ra0n, rb0b, rb0om, rb0hi, rb0n, 0, 0, 0))
ALWAYS int32_t ro(m2_kind kind, int up, int64_t acc0, int64_t acc1, int64_t ab, int64_t aom, int64_t ahi, int an,
                  int64_t bb, int64_t bom, int64_t bhi, int bn, int64_t m0, int64_t m1, int32_t zp) {
    if (kind == M2_FX16)
        return (int32_t)M2_S16(m2_rs_k(acc0, ab, aom, ahi, an, up, 0) + m2_rs_k(acc1, bb, bom, bhi, bn, up, 0));
    if (kind == M2_FX16_FX8)
        return (int32_t)M2_S16(m2_rs_k(m2_lwrap32(acc0), ab, aom, ahi, an, up, 1) +
                               m2_rs_k(m2_lwrap32(acc1), bb, bom, bhi, bn, up, 1));
    const int64_t p0 = m2_clamp64(m2_rs_k(m2_lwrap32(acc0) * m0, ab, aom, ahi, an, up, 0), INT32_MIN, INT32_MAX);
    const int64_t p1 = m2_clamp64(m2_rs_k(m2_lwrap32(acc1) * m1, bb, bom, bhi, bn, up, 0), INT32_MIN, INT32_MAX);
    return (int32_t)M2_S8(p0 + p1 + zp);
}
/* sa8: a gate's value e as the index e + 128 of a 256-entry table: SAT_8(v)
 * + 128 = clamp(v + 128, 0, 255), here min(v, 127) and a bound of -256
 * first (so that the int32 cast keeps the value and the index may be
 * negative to the compiler: it then gathers with 32-bit indices), then
 * max(., 0) by the sign mask */
#define GIDX(g)                                                                                                \
    ro_idx(gs##g[j] + gb##g[j], gh##g[j], ra##g##b, ra##g##om, ra##g##hi, ra##g##n, rb##g##b, rb##g##om, rb##g##hi, \
           rb##g##n, m0_##g, m1_##g, gzp, up)
ALWAYS int32_t ro_idx(int64_t acc0, int64_t acc1, int64_t ab, int64_t aom, int64_t ahi, int an, int64_t bb, int64_t bom,
                      int64_t bhi, int bn, int64_t m0, int64_t m1, int32_t zp, int up) {
    const int64_t p0 = m2_clamp64(m2_rs_k(m2_lwrap32(acc0) * m0, ab, aom, ahi, an, up, 0), INT32_MIN, INT32_MAX);
    const int64_t p1 = m2_clamp64(m2_rs_k(m2_lwrap32(acc1) * m1, bb, bom, bhi, bn, up, 0), INT32_MIN, INT32_MAX);
    int64_t v = p0 + p1 + zp;
    v = v < 127 ? v : 127;
    v = v > -256 ? v : -256;
    int32_t k = (int32_t)v + 128;
    k &= ~(k >> 31);
    return k;
}
/* fx_mul / fx_add with their rounding constants */
#define FXMUL(a, b, V) ((int32_t)M2_S16(RSL((int64_t)(a) * (b), V)))
#define FXADD(a, b, la, lb, V) ((int32_t)M2_S16(RSL((int64_t)(a) * (la) + (int64_t)(b) * (lb), V)))
/* sa8 mul / add */
#define SAMUL_LOC(V, L)                                                          \
    const int32_t V##za = (L).za, V##zb = (L).zb, V##zo = (L).zo, V##c = (L).c; \
    RS_LOC(V##p, (L).pre);                                                      \
    RS_LOC(V##q, (L).post)
#define SAMUL(a, b, V) \
    samul(up, (a), (b), V##za, V##zb, V##zo, V##c, V##pb, V##pom, V##phi, V##pn, V##qb, V##qom, V##qhi, V##qn)
ALWAYS int32_t samul(int up, int32_t a, int32_t b, int32_t za, int32_t zb, int32_t zo, int32_t c, int64_t pb,
                     int64_t pom, int64_t phi, int pn, int64_t qb, int64_t qom, int64_t qhi, int qn) {
    const int32_t x = (a - za) * (b - zb);
    int64_t t = M2_S16(m2_rs_k(x, pb, pom, phi, pn, up, 0)); /* |x| <= 255^2, half <= 4 */
    t = M2_S16(m2_rs_k(t * c, qb, qom, qhi, qn, up, 1));    /* t * c + half can reach 2^31 */
    return (int32_t)M2_S8(t + zo);
}
#define SAADD_LOC(V, L)                                                                               \
    const int32_t V##za = (L).za, V##zb = (L).zb, V##zo = (L).zo, V##ca = (L).ca, V##cb = (L).cb; \
    RS_LOC(V##p, (L).ra);                                                                           \
    RS_LOC(V##q, (L).rb)
#define SAADD(a, b, V) \
    ((int32_t)M2_S8(RSL((int64_t)(((a) - V##za) * V##ca), V##p) + RSL((int64_t)(((b) - V##zb) * V##cb), V##q) + V##zo))

/* ------------------------------------------------------------ table passes */
/* M2_LUTL over n values of v in place (v[j] in int16 range), 32 at a time
 * on AVX-512 with the tables' 64-entry segments looked up by vpermt2w (the
 * AVX-512 steps of mli2_cellfast: a gather per lookup costs more there).
 * The same integers as m2_lutl_do: the index k in int32 lanes (|xs| <= 2^15
 * and mul <= 2^15: no overflow), a = a16[k], d = d16[k] the two halves of
 * ad[k], p = d * fr exact in int32 (|p| < 2^30), the rounding and clamps of
 * m2_lutl_do lane by lane.  Only called where the table has nseg > 0. */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define CF_HAVE_XL 1
#include <immintrin.h>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"), noinline)) static void cf_lutpass512(const m2_lutl *l,
                                                                                                   int32_t *v, int n) {
    const int ns = l->nseg;
    int sl = 0;
    while (sl < 31 && ((int32_t)1 << sl) < l->mul) sl++; /* mul = 2^sl */
    const __m128i cpre = _mm_cvtsi32_si128(l->pre), cs = _mm_cvtsi32_si128(l->s), csl = _mm_cvtsi32_si128(sl);
    const __m512i O = _mm512_set1_epi32(l->O), hi = _mm512_set1_epi32(l->hi), zero = _mm512_setzero_si512();
    const __m512i mask = _mm512_set1_epi32(l->mask), rb = _mm512_set1_epi32((int32_t)l->rs.bias);
    const __m512i ro = _mm512_set1_epi32((int32_t)l->rs.om);
    const __m512i lo16 = _mm512_set1_epi32(-32768), hi16 = _mm512_set1_epi32(32767);
    for (int i = 0; i < n; i += 32) {
        const int r = n - i;
        const __mmask16 m0 = r >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << r) - 1u);
        const __mmask16 m1 = r >= 32 ? (__mmask16)0xFFFF : (r > 16 ? (__mmask16)((1u << (r - 16)) - 1u) : (__mmask16)0);
        const __m512i xs0 = _mm512_sra_epi32(_mm512_maskz_loadu_epi32(m0, v + i), cpre);
        const __m512i xs1 = _mm512_sra_epi32(_mm512_maskz_loadu_epi32(m1, v + i + 16), cpre);
        __m512i k0 = _mm512_add_epi32(_mm512_sra_epi32(_mm512_sll_epi32(xs0, csl), cs), O);
        __m512i k1 = _mm512_add_epi32(_mm512_sra_epi32(_mm512_sll_epi32(xs1, csl), cs), O);
        k0 = _mm512_max_epi32(_mm512_min_epi32(k0, hi), zero);
        k1 = _mm512_max_epi32(_mm512_min_epi32(k1, hi), zero);
        /* 0 <= k < 384: the 32 indices as int16 */
        const __m512i kk = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(k0)), _mm512_cvtepi32_epi16(k1), 1);
        const __m512i seg = _mm512_srli_epi16(kk, 6);
        __m512i a = zero, d = zero;
        for (int q = 0; q < ns; q++) {
            const __mmask32 mq = _mm512_cmpeq_epi16_mask(seg, _mm512_set1_epi16((int16_t)q));
            const __m512i alo = _mm512_loadu_si512((const void *)(l->a16 + 64 * q));
            const __m512i ahi = _mm512_loadu_si512((const void *)(l->a16 + 64 * q + 32));
            const __m512i dlo = _mm512_loadu_si512((const void *)(l->d16 + 64 * q));
            const __m512i dhi = _mm512_loadu_si512((const void *)(l->d16 + 64 * q + 32));
            a = _mm512_mask_mov_epi16(a, mq, _mm512_permutex2var_epi16(alo, kk, ahi));
            d = _mm512_mask_mov_epi16(d, mq, _mm512_permutex2var_epi16(dlo, kk, dhi));
        }
        __m512i res[2];
        for (int h = 0; h < 2; h++) {
            const __m512i xs = h ? xs1 : xs0;
            const __m256i ah = h ? _mm512_extracti64x4_epi64(a, 1) : _mm512_castsi512_si256(a);
            const __m256i dh = h ? _mm512_extracti64x4_epi64(d, 1) : _mm512_castsi512_si256(d);
            const __m512i p = _mm512_mullo_epi32(_mm512_cvtepi16_epi32(dh), _mm512_and_si512(xs, mask));
            __m512i q = _mm512_sra_epi32(_mm512_add_epi32(_mm512_add_epi32(p, rb), _mm512_and_si512(_mm512_sra_epi32(p, cs), ro)), cs);
            q = _mm512_max_epi32(_mm512_min_epi32(q, hi16), lo16);
            const __m512i t = _mm512_sub_epi32(_mm512_cvtepi16_epi32(ah), q);
            res[h] = _mm512_srai_epi32(_mm512_slli_epi32(t, 16), 16); /* WRAP_16 */
        }
        _mm512_mask_storeu_epi32(v + i, m0, res[0]);
        _mm512_mask_storeu_epi32(v + i + 16, m1, res[1]);
    }
}
#define CF_LUTPASS(L, v, n) cf_lutpass512(&(L), (v), (n))

/* v[j] = t[v[j]] for n indices 0 <= v[j] <= 255 into a 256-entry int16
 * table (the sa8 tables), 32 at a time: four vpermt2w and the index's bits
 * 6 and 7 choose among them. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"), noinline)) static void cf_tabpass512(const int16_t *t,
                                                                                                   int32_t *v, int n) {
    __m512i r[8];
    for (int k = 0; k < 8; k++) r[k] = _mm512_loadu_si512((const void *)(t + 32 * k));
    for (int i = 0; i < n; i += 32) {
        const int rem = n - i;
        const __mmask16 m0 = rem >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << rem) - 1u);
        const __mmask16 m1 = rem >= 32 ? (__mmask16)0xFFFF : (rem > 16 ? (__mmask16)((1u << (rem - 16)) - 1u) : (__mmask16)0);
        const __m512i k0 = _mm512_maskz_loadu_epi32(m0, v + i), k1 = _mm512_maskz_loadu_epi32(m1, v + i + 16);
        const __m512i idx = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(k0)), _mm512_cvtepi32_epi16(k1), 1);
        const __m512i a = _mm512_permutex2var_epi16(r[0], idx, r[1]);
        const __m512i b = _mm512_permutex2var_epi16(r[2], idx, r[3]);
        const __m512i c = _mm512_permutex2var_epi16(r[4], idx, r[5]);
        const __m512i d = _mm512_permutex2var_epi16(r[6], idx, r[7]);
        const __mmask32 b6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(64));
        const __mmask32 b7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(128));
        const __m512i y = _mm512_mask_blend_epi16(b7, _mm512_mask_blend_epi16(b6, a, b), _mm512_mask_blend_epi16(b6, c, d));
        _mm512_mask_storeu_epi32(v + i, m0, _mm512_cvtepi16_epi32(_mm512_castsi512_si256(y)));
        _mm512_mask_storeu_epi32(v + i + 16, m1, _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(y, 1)));
    }
}
#define CF_TABPASS(t, v, n) cf_tabpass512((t), (v), (n))
#else
#define CF_HAVE_XL 0
#define CF_LUTPASS(L, v, n) ((void)(L), (void)(v), (void)(n))
#define CF_TABPASS(t, v, n) ((void)(t), (void)(v), (void)(n))
#endif

/* ------------------------------------------------------------ steps */
/* The outputs in chunks of CF_CHUNK: each chunk's results go to local
 * arrays first and are stored after the loop, so the loop's stores cannot
 * alias the tables and sums it reads (the library is built with
 * -fno-strict-aliasing, where the compiler would not vectorize otherwise). */
#define CF_CHUNK 64
/* (the loop indexes pointers set per chunk with j alone: under -fwrapv an
 * int index o0 + j would not be seen as affine) */
#define GPTR(g)                                                                  \
    const int64_t *const gs##g = s_in + (g) * Mp + o0, *const gb##g = bt + (long)(g) * M + o0, \
                         *const gh##g = s_h + (g) * Mp + o0
#define CHUNKS(...)                                               \
    int32_t t0[CF_CHUNK], t1[CF_CHUNK], t2[CF_CHUNK];              \
    (void)t1, (void)t2;                                           \
    for (int o0 = 0; o0 < M; o0 += CF_CHUNK) {                    \
        const int nc = M - o0 < CF_CHUNK ? M - o0 : CF_CHUNK;     \
        __VA_ARGS__;                                              \
        for (int j = 0; j < nc; j++)
#define CHUNKS_END(...)                                           \
        for (int j = 0; j < nc; j++) {                            \
            __VA_ARGS__;                                          \
        }                                                         \
    }
#define PLAN_LOCALS                              \
    const m2_cf_plan P = *pp;                    \
    const int32_t gzp = P.gzp;                   \
    (void)gzp

ALWAYS void lstm_body(m2_kind kind, int up, int xl, const m2_cf_plan *pp, int M, long Mp, const int64_t *restrict s_in,
                      const int64_t *restrict bt, const int64_t *restrict s_h, void *restrict cv, void *restrict yv) {
    PLAN_LOCALS;
    RO_LOC(0);
    RO_LOC(1);
    RO_LOC(2);
    RO_LOC(3);
    if (kind != M2_SA8) {
        int16_t *restrict c = (int16_t *)cv, *restrict y = (int16_t *)yv;
        M2_LUTL_LOCALS(S, P.sig);
        M2_LUTL_LOCALS(T, P.tnh);
        M2_LUTL_LOCALS(A, P.act);
        RS_LOC(rcf, P.rcf);
        RS_LOC(rgi, P.rgi);
        RS_LOC(rad, P.radd);
        RS_LOC(rou, P.rout);
        const int32_t la = P.la, lb = P.lb;
        const int act_none = P.act_none;
        /* the gates one at a time (fewer live constants per loop), then the
         * cell; xl: the table lookups as passes over the chunk (CF_LUTPASS) */
        int32_t ai[CF_CHUNK], ag[CF_CHUNK], af[CF_CHUNK], ao[CF_CHUNK];
        int32_t gx[3 * CF_CHUNK]; /* xl: the three sigmoid gates i, f, o one after another (one pass) */
        CHUNKS(GPTR(0); GPTR(1); GPTR(2); GPTR(3); const int16_t *const cc = c + o0;
               if (xl) {
                   int32_t *const xi = gx, *const xf = gx + nc, *const xo = gx + 2 * nc;
                   for (int j = 0; j < nc; j++) xi[j] = GATE(0);
                   for (int j = 0; j < nc; j++) ag[j] = GATE(1);
                   for (int j = 0; j < nc; j++) xf[j] = GATE(2);
                   for (int j = 0; j < nc; j++) xo[j] = GATE(3);
                   CF_LUTPASS(P.sig, gx, 3 * nc), CF_LUTPASS(P.tnh, ag, nc);
                   for (int j = 0; j < nc; j++) {
                       const int32_t cf = FXMUL(cc[j], xf[j], rcf), gi = FXMUL(ag[j], xi[j], rgi);
                       t0[j] = FXADD(cf, gi, la, lb, rad);
                       ai[j] = t0[j];
                   }
                   if (!act_none) CF_LUTPASS(P.act, ai, nc);
                   for (int j = 0; j < nc; j++) ao[j] = xo[j];
               } else {
                   for (int j = 0; j < nc; j++) ai[j] = M2_LUTL(S, GATE(0));
                   for (int j = 0; j < nc; j++) ag[j] = M2_LUTL(T, GATE(1));
                   for (int j = 0; j < nc; j++) af[j] = M2_LUTL(S, GATE(2));
                   for (int j = 0; j < nc; j++) ao[j] = M2_LUTL(S, GATE(3));
               }) {
            if (xl) {
                t1[j] = FXMUL(ai[j], ao[j], rou); /* ai: the activation of the new cell (or the cell) */
                continue;
            }
            const int32_t i_ = ai[j], g_ = ag[j], f_ = af[j], o_ = ao[j];
            const int32_t cf = FXMUL(cc[j], f_, rcf), gi = FXMUL(g_, i_, rgi);
            const int32_t cn = FXADD(cf, gi, la, lb, rad);
            const int32_t a = act_none ? cn : M2_LUTL(A, cn);
            t0[j] = cn;
            t1[j] = FXMUL(a, o_, rou);
        }
        int16_t *const cs = c + o0, *const ys = y + o0;
        CHUNKS_END(cs[j] = (int16_t)t0[j], ys[j] = (int16_t)t1[j])
    } else {
        int8_t *restrict c = (int8_t *)cv, *restrict y = (int8_t *)yv;
        const int32_t *restrict sg = P.sig8, *restrict tg = P.tnh8, *restrict ac = P.act8;
        SAMUL_LOC(ma, P.mul_a);
        SAMUL_LOC(mb, P.mul_b);
        SAMUL_LOC(mc, P.mul_c);
        SAADD_LOC(aa, P.add_a);
        const int act_none = P.act_none;
        /* xl: the gates' table indices, the lookups as passes (CF_TABPASS) */
        int32_t ki[CF_CHUNK], kg[CF_CHUNK], ko[CF_CHUNK];
        int32_t kx[3 * CF_CHUNK]; /* the sigmoid gates i, f, o one after another (one pass) */
        CHUNKS(GPTR(0); GPTR(1); GPTR(2); GPTR(3); const int8_t *const cc = c + o0;
               if (xl) {
                   int32_t *const xi = kx, *const kf = kx + nc, *const xo = kx + 2 * nc;
                   for (int j = 0; j < nc; j++) xi[j] = GIDX(0);
                   for (int j = 0; j < nc; j++) kg[j] = GIDX(1);
                   for (int j = 0; j < nc; j++) kf[j] = GIDX(2);
                   for (int j = 0; j < nc; j++) xo[j] = GIDX(3);
                   CF_TABPASS(P.sig16, kx, 3 * nc), CF_TABPASS(P.tnh16, kg, nc);
                   for (int j = 0; j < nc; j++) ki[j] = xi[j], ko[j] = xo[j];
                   for (int j = 0; j < nc; j++) {
                       const int32_t cf = SAMUL(cc[j], kf[j], ma), gi = SAMUL(kg[j], ki[j], mb);
                       t0[j] = SAADD(cf, gi, aa);
                       ki[j] = act_none ? t0[j] : t0[j] + 128;
                   }
                   if (!act_none) CF_TABPASS(P.act16, ki, nc);
               }) {
            if (xl) {
                t1[j] = SAMUL(ki[j], ko[j], mc); /* ki: the activation of the new cell (or the cell) */
                continue;
            }
            const int32_t i_ = sg[GIDX(0)], g_ = tg[GIDX(1)];
            const int32_t f_ = sg[GIDX(2)], o_ = sg[GIDX(3)];
            const int32_t cf = SAMUL(cc[j], f_, ma), gi = SAMUL(g_, i_, mb);
            const int32_t cn = SAADD(cf, gi, aa);
            const int32_t a = act_none ? cn : ac[cn + 128];
            t0[j] = cn;
            t1[j] = SAMUL(a, o_, mc);
        }
        int8_t *const cs = c + o0, *const ys = y + o0;
        CHUNKS_END(cs[j] = (int8_t)t0[j], ys[j] = (int8_t)t1[j])
    }
}

ALWAYS void gru_zr_body(m2_kind kind, int up, int xl, const m2_cf_plan *pp, int M, long Mp, const int64_t *restrict s_in,
                        const int64_t *restrict bt, const int64_t *restrict s_h, const void *restrict hv,
                        void *restrict zrv, void *restrict rhv) {
    /* FX: the GRU's per-element lookups stay gathers (measured faster here than
     * the passes, which pay off in the LSTM and with the sa8 tables) */
    xl = xl && kind == M2_SA8;
    PLAN_LOCALS;
    RO_LOC(0);
    RO_LOC(1);
    if (kind != M2_SA8) {
        const int16_t *restrict h = (const int16_t *)hv;
        int16_t *restrict zr = (int16_t *)zrv, *restrict rh = (int16_t *)rhv;
        M2_LUTL_LOCALS(S, P.sig);
        RS_LOC(rcf, P.rcf);
        int32_t ka[2 * CF_CHUNK]; /* xl: the gates (z, then r at ka + nc), then their lookups in one pass */
        CHUNKS(GPTR(0); GPTR(1); const int16_t *const hh = h + o0;
               int32_t *const kb = ka + nc;
               if (xl) {
                   for (int j = 0; j < nc; j++) ka[j] = GATE(0);
                   for (int j = 0; j < nc; j++) kb[j] = GATE(1);
                   CF_LUTPASS(P.sig, ka, 2 * nc);
               }) {
            const int32_t z = xl ? ka[j] : M2_LUTL(S, GATE(0)), r = xl ? kb[j] : M2_LUTL(S, GATE(1));
            t0[j] = z, t1[j] = r;
            t2[j] = FXMUL(r, hh[j], rcf);
        }
        int16_t *const zs = zr + o0, *const rs = zr + M + o0, *const hs = rh + o0;
        CHUNKS_END(zs[j] = (int16_t)t0[j], rs[j] = (int16_t)t1[j], hs[j] = (int16_t)t2[j])
    } else {
        const int8_t *restrict h = (const int8_t *)hv;
        int8_t *restrict zr = (int8_t *)zrv, *restrict rh = (int8_t *)rhv;
        const int32_t *restrict sg = P.sig8;
        SAMUL_LOC(ma, P.mul_a);
        int32_t ka[2 * CF_CHUNK]; /* xl: the gates' indices (z, then r at ka + nc), then their lookups in one pass */
        CHUNKS(GPTR(0); GPTR(1); const int8_t *const hh = h + o0;
               int32_t *const kb = ka + nc;
               if (xl) {
                   for (int j = 0; j < nc; j++) ka[j] = GIDX(0);
                   for (int j = 0; j < nc; j++) kb[j] = GIDX(1);
                   CF_TABPASS(P.sig16, ka, 2 * nc);
               }) {
            const int32_t z = xl ? ka[j] : sg[GIDX(0)], r = xl ? kb[j] : sg[GIDX(1)];
            t0[j] = z, t1[j] = r;
            t2[j] = SAMUL(r, hh[j], ma);
        }
        int8_t *const zs = zr + o0, *const rs = zr + M + o0, *const hs = rh + o0;
        CHUNKS_END(zs[j] = (int8_t)t0[j], rs[j] = (int8_t)t1[j], hs[j] = (int8_t)t2[j])
    }
}

ALWAYS void gru_out_body(m2_kind kind, int up, int xl, const m2_cf_plan *pp, int M, long Mp, const int64_t *restrict s_in,
                         const int64_t *restrict bt, const int64_t *restrict s_h, const void *restrict hv,
                         const void *restrict zrv, void *restrict yv) {
    /* FX: the GRU's per-element lookups stay gathers (measured faster here than
     * the passes, which pay off in the LSTM and with the sa8 tables) */
    xl = xl && kind == M2_SA8;
    PLAN_LOCALS;
    RO_LOC(0); /* FX: gate 0's constants serve every gate */
    (void)m0_0, (void)m1_0;
    RO_LOC(2);
    if (kind != M2_SA8) {
        const int16_t *restrict h = (const int16_t *)hv, *restrict z = (const int16_t *)zrv;
        int16_t *restrict y = (int16_t *)yv;
        M2_LUTL_LOCALS(T, P.tnh);
        RS_LOC(rgi, P.rgi);
        RS_LOC(rad, P.radd);
        RS_LOC(rou, P.rout);
        const int32_t la = P.la, lb = P.lb;
        int32_t kn[CF_CHUNK]; /* xl: the gate, then its lookup as a pass */
        CHUNKS(GPTR(2); const int16_t *const hh = h + o0, *const zz = z + o0;
               if (xl) {
                   for (int j = 0; j < nc; j++) kn[j] = GATE(2);
                   CF_LUTPASS(P.tnh, kn, nc);
               }) {
            const int32_t nn = xl ? kn[j] : M2_LUTL(T, GATE(2));
            const int32_t zh = FXMUL(hh[j], zz[j], rgi);
            const int32_t zc = (int32_t)M2_S16(32767 - (int32_t)zz[j]);
            t0[j] = FXADD(FXMUL(nn, zc, rou), zh, la, lb, rad);
        }
        int16_t *const ys = y + o0;
        CHUNKS_END(ys[j] = (int16_t)t0[j])
    } else {
        const int8_t *restrict h = (const int8_t *)hv, *restrict z = (const int8_t *)zrv;
        int8_t *restrict y = (int8_t *)yv;
        const int32_t *restrict tg = P.tnh8, *restrict om = P.om8;
        SAMUL_LOC(mb, P.mul_b);
        SAMUL_LOC(mc, P.mul_c);
        SAADD_LOC(aa, P.add_a);
        int32_t kn[CF_CHUNK], kz[CF_CHUNK]; /* xl: the indices, then the lookups as passes */
        CHUNKS(GPTR(2); const int8_t *const hh = h + o0, *const zz = z + o0;
               if (xl) {
                   for (int j = 0; j < nc; j++) kn[j] = GIDX(2);
                   for (int j = 0; j < nc; j++) kz[j] = zz[j] + 128;
                   CF_TABPASS(P.tnh16, kn, nc), CF_TABPASS(P.om16, kz, nc);
               }) {
            const int32_t nn = xl ? kn[j] : tg[GIDX(2)];
            const int32_t zh = SAMUL(hh[j], zz[j], mb);
            t0[j] = SAADD(SAMUL(nn, xl ? kz[j] : om[zz[j] + 128], mc), zh, aa);
        }
        int8_t *const ys = y + o0;
        CHUNKS_END(ys[j] = (int8_t)t0[j])
    }
}

/* a scalar and an AVX-512 version per kind (AVX2: mli2_cellavx2.c) */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#if defined(__clang__)
#define CF_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
/* gcc's generic tuning does not vectorize table lookups with gathers; this
 * tuning does (and the loop fills 512-bit vectors).  The AVX2 path has its
 * own steps (mli2_cellavx2.c). */
#define CF_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,tune=skylake-avx512,prefer-vector-width=512")))
#endif
/* xl (AVX-512; FX kinds: every table with nseg > 0, sa8: the int16
 * tables made): the table lookups by CF_LUTPASS / CF_TABPASS; the other
 * versions take xl = 0 */
#define CF_XL(p)                                                                                    \
    ((p)->kind != M2_SA8 ? (p)->sig.nseg > 0 && (p)->tnh.nseg > 0 && (p)->act.nseg > 0                 \
                         : (p)->sig16 && (p)->tnh16 && (p)->act16 && (p)->om16)
#define CF_MV(name, BODY, K, U, params, args, ...)                                          \
    static void name##_scalar params { BODY(K, U, 0, __VA_ARGS__); }                        \
    CF_AVX512 static void name##_avx512 params {                                            \
        if (CF_XL(p))                                                        \
            BODY(K, U, 1, __VA_ARGS__);                                                     \
        else                                                                                \
            BODY(K, U, 0, __VA_ARGS__);                                                     \
    }                                                                                       \
    static void name params {                                                                \
        switch (mlipy_get_isa()) {                                                          \
        case 2: name##_avx512 args; return;                                                 \
        default: name##_scalar args; return;                                                \
        }                                                                                   \
    }
#else
#define CF_MV(name, BODY, K, U, params, args, ...) \
    static void name params { BODY(K, U, 0, __VA_ARGS__); }
#endif

#define LSTM_P (const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h, void *c, void *y)
#define LSTM_A (p, M, Mp, s_in, bt, s_h, c, y)
/* name_KIND_MODE: e = round half to even, u = half up */
#define CF_KINDS(NAME, BODY, P, A, ...)                                 \
    CF_MV(NAME##_fx16_e, BODY, M2_FX16, 0, P, A, __VA_ARGS__)          \
    CF_MV(NAME##_fx16_u, BODY, M2_FX16, 1, P, A, __VA_ARGS__)          \
    CF_MV(NAME##_fx8_e, BODY, M2_FX16_FX8, 0, P, A, __VA_ARGS__)       \
    CF_MV(NAME##_fx8_u, BODY, M2_FX16_FX8, 1, P, A, __VA_ARGS__)       \
    CF_MV(NAME##_sa8_e, BODY, M2_SA8, 0, P, A, __VA_ARGS__)            \
    CF_MV(NAME##_sa8_u, BODY, M2_SA8, 1, P, A, __VA_ARGS__)
#define CF_PICK(NAME, A)                                                \
    switch (p->kind * 2 + (p->up != 0)) {                               \
    case M2_FX16 * 2: NAME##_fx16_e A; break;                          \
    case M2_FX16 * 2 + 1: NAME##_fx16_u A; break;                      \
    case M2_FX16_FX8 * 2: NAME##_fx8_e A; break;                       \
    case M2_FX16_FX8 * 2 + 1: NAME##_fx8_u A; break;                   \
    case M2_SA8 * 2: NAME##_sa8_e A; break;                            \
    default: NAME##_sa8_u A;                                            \
    }
CF_KINDS(lstm, lstm_body, LSTM_P, LSTM_A, p, M, Mp, s_in, bt, s_h, c, y)

#define ZR_P                                                                                                  \
    (const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h, const void *h, \
     void *zr, void *rh)
#define ZR_A (p, M, Mp, s_in, bt, s_h, h, zr, rh)
CF_KINDS(zr, gru_zr_body, ZR_P, ZR_A, p, M, Mp, s_in, bt, s_h, h, zr, rh)

#define GO_P                                                                                                  \
    (const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt, const int64_t *s_h, const void *h, \
     const void *zr, void *y)
#define GO_A (p, M, Mp, s_in, bt, s_h, h, zr, y)
CF_KINDS(go, gru_out_body, GO_P, GO_A, p, M, Mp, s_in, bt, s_h, h, zr, y)

void mli2_cf_lstm_step(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                       const int64_t *s_h, void *c, void *y) {
    if (mlipy_get_isa() == 1 && mli2_cf_have_avx2()) {
        mli2_cf_lstm_step_avx2 LSTM_A;
        return;
    }
#if CF_HAVE_XL
    if (mlipy_get_isa() == 2 && mli2_cf_sa8_avx512_ok(p, 0)) {
        mli2_cf_lstm_step_sa8_avx512 LSTM_A;
        return;
    }
#endif
    CF_PICK(lstm, LSTM_A)
}

void mli2_cf_gru_zr(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                    const int64_t *s_h, const void *h, void *zr, void *rh) {
    if (mlipy_get_isa() == 1 && mli2_cf_have_avx2()) {
        mli2_cf_gru_zr_avx2 ZR_A;
        return;
    }
#if CF_HAVE_XL
    if (mlipy_get_isa() == 2 && mli2_cf_sa8_avx512_ok(p, 1)) {
        mli2_cf_gru_zr_sa8_avx512 ZR_A;
        return;
    }
#endif
    CF_PICK(zr, ZR_A)
}

void mli2_cf_gru_out(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                     const int64_t *s_h, const void *h, const void *zr, void *y) {
    if (mlipy_get_isa() == 1 && mli2_cf_have_avx2()) {
        mli2_cf_gru_out_avx2 GO_A;
        return;
    }
#if CF_HAVE_XL
    if (mlipy_get_isa() == 2 && mli2_cf_sa8_avx512_ok(p, 1)) {
        mli2_cf_gru_out_sa8_avx512 GO_A;
        return;
    }
#endif
    CF_PICK(go, GO_A)
}
