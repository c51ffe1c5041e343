/* Branch-free forms of the 2.x element steps for the fused cell steps
 * (mli2_cellfast.c): every shift amount and rounding constant is fixed once
 * per call, so the loops over the outputs have no data-dependent branches
 * and the compiler vectorizes them (one version per instruction set).  Each
 * form equals its definition in mli2_prv.h / mli2_math.h on the input range
 * stated beside it; the plan makers (mli2_cellfast.c) only take the fast
 * path when the call's constants keep every value inside those ranges. */
#ifndef MLI2_LANES_H
#define MLI2_LANES_H

#include <stdint.h>
#include "mli2_prv.h"

/* forced inline: the loops are compiled per instruction set and tuning,
 * where plain inline helpers would stay calls */
#if defined(__GNUC__) || defined(__clang__)
#define M2_AI static inline __attribute__((always_inline))
#else
#define M2_AI static inline
#endif

/* RSHR_W(x, n) for a fixed 0 <= n <= 63:
 *   t = x + bias + ((x >> n) & om), then min(t, hi), then >> n.
 * UP:   bias = 2^(n-1), om = 0, hi = MAX_W: the saturating add of the half.
 * EVEN: bias = 2^(n-1) - 1, om = 1: floor(x / 2^n) + 1 exactly when the
 *       remainder is above the half, or equal to it with an odd quotient;
 *       hi = INT64_MAX (no saturation in the definition).
 * n = 0: bias = om = 0 (x itself).  Valid when x + 2^(n-1) + 1 fits int64. */
typedef struct {
    int64_t bias, om, hi;
    int n;
} m2_rs;
static inline m2_rs m2_rs_make(int n, int W, int up) {
    m2_rs r;
    r.n = n;
    r.bias = n == 0 ? 0 : ((int64_t)1 << (n - 1)) - (up ? 0 : 1);
    r.om = n == 0 || up ? 0 : 1;
    r.hi = up && W < 64 ? m2_max_w(W) : INT64_MAX;
    return r;
}
M2_AI int64_t m2_rs_do(int64_t x, int64_t bias, int64_t om, int64_t hi, int n) {
    int64_t t = x + bias + ((x >> n) & om);
    t = t < hi ? t : hi;
    return t >> n;
}
/* The same with the rounding mode known where it is compiled (up = 0 or 1):
 * the half is added alone in UP (om = 0), and the bound hi only applied
 * where sat says MAX_W can be reached (W = 32); in EVEN, hi = INT64_MAX. */
M2_AI int64_t m2_rs_k(int64_t x, int64_t bias, int64_t om, int64_t hi, int n, int up, int sat) {
    if (up) {
        int64_t t = x + bias;
        if (sat) t = t < hi ? t : hi;
        return t >> n;
    }
    return (x + bias + ((x >> n) & om)) >> n;
}
M2_AI int64_t m2_lwrap32(int64_t x) { return (int64_t)(int32_t)(uint32_t)(uint64_t)x; }
#define M2_RS(x, R) m2_rs_do((x), (R).bias, (R).om, (R).hi, (R).n)

M2_AI int64_t m2_clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : (x > hi ? hi : x); }
M2_AI int32_t m2_clamp32(int32_t x, int32_t lo, int32_t hi) { return x < lo ? lo : (x > hi ? hi : x); }
#define M2_S16(x) m2_clamp64((x), -32768, 32767)
#define M2_S8(x) m2_clamp64((x), -128, 127)

/* LUT(x, f, T) for int16 x and a fixed f (SPEC_MLI2.md 5.1):
 *   xs = x >> pre, k = clamp(((xs * 2^sl) >> s) + O, 0, hi), fr = xs & mask,
 *   r = WRAP_16(a - SAT_16(RSHR_32(d * fr, s)))
 * with a = T[k] and d = WRAP_16(T[k] - T[k + 1]) (d = 0 for k = L - 1), both
 * in one int32 entry ad[k] (a in the low half, d in the high half): one
 * gather per lookup.  Interpolation (s > 0): sl = 0, hi = L - 2.  Direct
 * (s <= 0): pre = s = 0, mask = 0 (fr = 0, r = T[k]), sl = -s <= 15,
 * hi = L - 1.  With |O| < 2^30 and |x| <= 2^15 no 32-bit saturation can
 * occur on the way (|d * fr| < 2^30). */
#define M2_LUT_MAXLEN 1024
/* The same a and d as two int16 tables for tables of at most M2_LUT_REGLEN
 * entries (nseg 64-entry segments; 0: longer), looked up 32 lanes at a
 * time by vpermt2w on AVX-512 (mli2_cellfast.c), no gathers. */
#define M2_LUT_REGLEN 384
typedef struct {
    int32_t ad[M2_LUT_MAXLEN];
    int16_t a16[M2_LUT_REGLEN], d16[M2_LUT_REGLEN];
    int L, nseg;
} m2_lut_tab;
typedef struct {
    const int32_t *ad;
    const int16_t *a16, *d16;
    int nseg;
    int32_t O, hi, mask, mul;
    int pre, s;
    m2_rs rs;
} m2_lutl;
/* 0 when the table or f is outside the form's range */
static inline int m2_lut_tab_make(const m2_lut *T, m2_lut_tab *tab) {
    if (T->L < 2 || T->L > M2_LUT_MAXLEN || T->O >= (1 << 30) || T->O <= -(1 << 30)) return 0;
    /* (written so that the compiler vectorizes it: a call's two tables cost
     * more than a short sequence's steps otherwise) */
    const int L = T->L, reg = L <= M2_LUT_REGLEN;
    const int16_t *restrict t = T->t;
    int32_t *restrict ad = tab->ad;
    for (int k = 0; k < L - 1; k++) /* d = WRAP_16(T[k] - T[k + 1]) */
        ad[k] = (int32_t)((uint32_t)(uint16_t)t[k] | ((uint32_t)(uint16_t)(t[k] - t[k + 1]) << 16));
    ad[L - 1] = (int32_t)(uint32_t)(uint16_t)t[L - 1]; /* d = 0 */
    tab->L = L;
    tab->nseg = reg ? (L + 63) / 64 : 0;
    if (reg) { /* entries from L on are never indexed (k <= hi <= L - 1) */
        int16_t *restrict a16 = tab->a16, *restrict d16 = tab->d16;
        for (int k = 0; k < L; k++) a16[k] = (int16_t)(uint16_t)(uint32_t)ad[k], d16[k] = (int16_t)(ad[k] >> 16);
        for (int k = L; k < M2_LUT_REGLEN; k++) a16[k] = 0, d16[k] = 0;
    }
    return 1;
}
static inline int m2_lutl_make(const m2_lut *T, const m2_lut_tab *tab, int f, int up, m2_lutl *l) {
    int s = f - T->q;
    l->ad = tab->ad, l->O = T->O;
    l->a16 = tab->a16, l->d16 = tab->d16, l->nseg = tab->nseg;
    if (s > 0) {
        l->pre = m2_imin(m2_imax(s - 15, 0), 15);
        l->s = m2_imin(s, 15);
        l->mul = 1;
        l->mask = (1 << l->s) - 1;
        l->hi = T->L - 2;
    } else {
        if (-s > 15) return 0;
        l->pre = 0, l->s = 0, l->mask = 0;
        l->mul = 1 << -s;
        l->hi = T->L - 1;
    }
    l->rs = m2_rs_make(l->s, 32, up);
    return 1;
}
M2_AI int32_t m2_lutl_do(int32_t x, const int32_t *ad, int32_t O, int32_t hi, int32_t mask, int32_t mul, int pre,
                         int s, int32_t rbias, int32_t rom) {
    const int32_t xs = x >> pre;
    /* clamp(v, 0, hi) as min then max(., 0) by the sign mask (hi >= 0): the
     * same value, written so that gcc gathers with 32-bit indices */
    int32_t k = ((xs * mul) >> s) + O;
    k = k < hi ? k : hi;
    k &= ~(k >> 31);
    const int32_t e = ad[k];
    const int32_t a = (int32_t)(int16_t)(uint16_t)(uint32_t)e, d = e >> 16;
    const int32_t p = d * (xs & mask);
    /* |p| < 2^30: the rounding needs no saturation and stays in int32 */
    int32_t q = (p + rbias + ((p >> s) & rom)) >> s;
    q = m2_clamp32(q, -32768, 32767);
    return (int32_t)(int16_t)(uint16_t)(uint32_t)(a - q);
}
#define M2_LUTL_LOCALS(P, L)                                                                                   \
    const int32_t *const P##ad = (L).ad;                                                                     \
    const int32_t P##O = (L).O, P##hi = (L).hi, P##mask = (L).mask, P##mul = (L).mul;                          \
    const int P##pre = (L).pre, P##s = (L).s;                                                                  \
    const int32_t P##rb = (int32_t)(L).rs.bias, P##ro = (int32_t)(L).rs.om
#define M2_LUTL(P, x) m2_lutl_do((x), P##ad, P##O, P##hi, P##mask, P##mul, P##pre, P##s, P##rb, P##ro)

#endif /* MLI2_LANES_H */
