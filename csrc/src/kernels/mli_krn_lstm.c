/* LSTM cell: mli_krn_lstm_cell_{fx8,fx16,fx8w16d}, and its steps
 * (mlipy_lstm_gates_*, mlipy_lstm_cell_update_*, mlipy_lstm_hidden_*),
 * exported so that tests can reach one step at a time. */
#include <string.h>
#include "mli_krn_common.h"
#include "../private/mli_prv_dotprod.h"
#include "../private/mli_prv_lut_simd.h"
#include "mli_krn_lstm_avx2.h"

/* ---- One fused LSTM time step on AVX-512 VNNI (fx16, fx8w16d, fx8) -------
 * The same integers as the step-by-step path (dense_step, lstm_gates_,
 * lstm_cell_update_, lstm_hidden_) with every stage kept in registers or
 * L1: the recurrent sums of a group of 16 rows go straight into the
 * read-out, the tables stay in registers, and the cell update and hidden
 * output run on int32 lanes.  Used only where its preconditions hold
 * (lstm16_fused_ok): the direct form on both parts (always with 8-bit
 * weights), the branch-free read-out, no partial sum able to reach the
 * 40-bit limit (plan->unclamped; with fx16 the read-out's clamps then never
 * act and are left out), M a multiple of 16 (each gate a whole number of
 * groups), 0 < ir_shift, mshift < 31, disjoint outputs.  8-bit weights
 * take a read-out on int32 lanes where lstm16_i32_ok shows it exact; small
 * steps compute the next step's input sums (lstm16_in_sums). */
typedef struct {
    const mli_dense_plan *plan;
    int M, its, os, ir_shift, mshift, act; /* act: 0 none (p = c), 1 tanh, 2 sigm */
    int i32; /* 8-bit weights: every accumulator value provably inside int32 (lstm16_i32_ok) */
    int wide; /* 8-bit weights: plan->w_st16 holds them widened (mli_prv_dense_wide8) */
    int32_t up;
    int64_t l1s; /* the largest sum of |w| of a row of the state part: fx16 the packed weights' own,
                  * 8-bit weights the plan's per-group bounds */
    int64_t l1s8; /* fx16: the same over every eighth pair (mli_rec_avx2_l1_st8_kept) */
    lut_setup sigm, tanh_, out; /* gates (frac f_ir) and the output activation (frac f_c) */
    int16_t t8[3][256]; /* 8-bit data: the same three as tables of mli_prv_lut_vec8's results */
} lstm16_fused;

/* 8-bit weights (32-bit accumulator): whether, for any data, no clamp of
 * the read-out can act and every value of it, rounding offsets included,
 * stays inside int32, so that it runs on 16 int32 lanes with the same
 * results.  Bounds: |bias term| <= top, |a part's sum| <= io * (the part's
 * sum of |w|, plan->l1_in / l1_st, here L * 128). */
static int lstm16_i32_ok(const mli_dense_plan *plan, int K, int its, int os, int64_t io) {
    const int64_t lim = (int64_t)1 << 31;
    int64_t top = 0, l1i, l1s;
    for (int k = 0; k < K; k++) {
        const int64_t a = plan->bias_term[k] < 0 ? -plan->bias_term[k] : plan->bias_term[k];
        top = a > top ? a : top;
    }
    mli_prv_dense_l1_max(plan, &l1i, &l1s);
    if (os <= 0 || os > 30 || its > 30 || its < -23 || l1i >= lim || l1s >= lim) return 0;
    const int64_t b1 = top + io * l1i; /* |bias term + input sum| (top < 2^31, io <= 2^15: no overflow) */
    if (b1 + (its > 0 ? (int64_t)1 << (its - 1) : 0) >= lim) return 0;
    const int64_t ba = its > 0 ? (b1 >> its) + 1 : b1 * ((int64_t)1 << -its); /* the state part's start */
    const int64_t b2 = ba + io * l1s;                                          /* the full sum */
    return b2 + ((int64_t)1 << (os - 1)) < lim;
}

static void lstm16_fused_init(lstm16_fused *fz, const mli_dense_plan *plan, int M, mli_dense_shifts sh, int ir_shift,
                              int mshift, mli_rnn_out_activation act, int f_ir, int f_c, int w8, int d8) {
    fz->plan = plan;
    fz->M = M;
    fz->its = sh.in_to_state;
    fz->os = sh.out_shift;
    fz->ir_shift = ir_shift;
    fz->mshift = mshift;
    fz->act = act == RNN_ACT_NONE ? 0 : (act == RNN_ACT_TANH ? 1 : 2);
    fz->up = mlipy_rounding_up;
    lut_prepare(&mli_prv_sigm_lut, f_ir, &fz->sigm);
    lut_prepare(&mli_prv_tanh_lut, f_ir, &fz->tanh_);
    lut_prepare(act == RNN_ACT_TANH ? &mli_prv_tanh_lut : &mli_prv_sigm_lut, f_c, &fz->out);
    fz->i32 = w8 && lstm16_i32_ok(plan, 4 * M, fz->its, fz->os, d8 ? 128 : 32768);
    /* 8-bit weights, small plans: the whole-row sums four groups per
     * broadcast of h from the widened copy, as fx16's (where a step's
     * max|h| * l1s shows them exact in int32; l1s: the plan's bound on a
     * row's sum of |w| over the state part) */
    fz->wide = w8 && mli_prv_dense_wide8(plan);
    fz->l1s = fz->l1s8 = 0;
#ifdef MLIPY_X86_TARGETS
    if (!w8) { /* kept with the packing (computed once after the weights are packed) */
        int64_t l1i;
        mli_rec_avx2_l1_kept(plan, 0, &l1i, &fz->l1s);
        fz->l1s8 = mli_rec_avx2_l1_st8_kept(plan);
    } else {
        int64_t l1i;
        mli_prv_dense_l1_max(plan, &l1i, &fz->l1s);
    }
#endif
    /* fx16 with its <= 0: the bias terms shifted left once per call, into
     * plan->s_st (the fused step has its state sums in registers) */
    if (!w8 && fz->its <= 0) { /* (locals: the stores would make GCC reload the shift, and no SIMD) */
        const int lsh = -fz->its;
        int64_t *restrict dst = plan->s_st;
        const int64_t *restrict src = plan->bias_term;
        for (int k = 0; k < 4 * M; k++) dst[k] = (int64_t)((uint64_t)src[k] << lsh); /* exact: |result| < 2^62 */
    }
#ifdef MLIPY_X86_TARGETS
    if (d8) {
        mli_prv_lut8_table(&mli_prv_sigm_lut, f_ir, fz->t8[0]);
        mli_prv_lut8_table(&mli_prv_tanh_lut, f_ir, fz->t8[1]);
        mli_prv_lut8_table(act == RNN_ACT_TANH ? &mli_prv_tanh_lut : &mli_prv_sigm_lut, f_c, fz->t8[2]);
    }
#else
    (void)d8;
#endif
}

static int lstm16_disjoint(const void *a, size_t na, const void *b, size_t nb) {
    return (uintptr_t)a + na <= (uintptr_t)b || (uintptr_t)b + nb <= (uintptr_t)a;
}

/* The buffers a fused step writes, gates, c and out, must not overlap each
 * other or the input (the state is copied before anything is written, or
 * read in place only where it overlaps no gate, so it may overlap anything). */
static int lstm16_fused_disjoint(int M, int N, long batch, long out_rows, const void *x, const void *gates,
                                 const void *c, const void *y, size_t el) {
    if (M <= 0 || N < 0 || batch < 0 || out_rows < 0) return 0;
    const size_t m = (size_t)M, ng = 4 * m * el, nc = m * el, ny = (size_t)out_rows * m * el;
    const size_t nx = (size_t)batch * (size_t)N * el;
    return lstm16_disjoint(gates, ng, c, nc) && lstm16_disjoint(gates, ng, y, ny) && lstm16_disjoint(c, nc, y, ny) &&
           lstm16_disjoint(x, nx, gates, ng) && lstm16_disjoint(x, nx, c, nc) && lstm16_disjoint(x, nx, y, ny);
}

/* Whether the fused step computes this call (lstm16_fused_disjoint). */
static int lstm16_fused_ok(const mli_dense_plan *plan, int M, int N, long batch, long out_rows, mli_dense_shifts sh,
                           int ir_shift, int mshift, const void *x, const void *gates, const void *c, const void *y,
                           size_t el) {
    (void)sh;
#ifdef MLIPY_X86_TARGETS
    if (mlipy_get_isa() != MLIPY_ISA_AVX512_VNNI) return 0;
    if (!plan->packed || plan->rows || !plan->direct_in || !plan->direct_st || !plan->fast_epilogue ||
        !plan->unclamped)
        return 0;
    if (M <= 0 || M % MLI_DOT_GROUP || ir_shift <= 0 || ir_shift >= 31 || mshift <= 0 || mshift >= 31) return 0;
    return lstm16_fused_disjoint(M, N, batch, out_rows, x, gates, c, y, el);
#else
    (void)plan, (void)M, (void)N, (void)batch, (void)out_rows, (void)ir_shift, (void)mshift;
    (void)x, (void)gates, (void)c, (void)y, (void)el;
    return 0;
#endif
}

#ifdef MLIPY_X86_TARGETS
#define LSTM16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
/* 4M up to which the state sums of a step are made ahead, four groups per
 * broadcast of h (lstm16_dot_block4).  Past M = 64 the state weights leave
 * L1, and four streams a group apart then run slower than one group at a
 * time (measured, one chunk per row: 80x80 41-50 -> 35 us, 128x128 158-161
 * -> 123-125, 512x256 194-197 -> 153-156; 64x64 15.0 against 18.1). */
#define LSTM16_BLOCK_ROWS 256


/* The LUT over n int16 in place, 32 lanes at a time (n a multiple of 16). */
LSTM16_TARGET static inline void lstm16_lut(const lut_regs *r, const lut_setup *c, int16_t *v, int n) {
    /* whole registers where they fit (masked loads and stores measured
     * slower here), the last 16 lanes as half of one */
    int i = 0;
    for (; i + 32 <= n; i += 32)
        _mm512_storeu_si512((void *)(v + i), lut32_avx512(r, c, _mm512_loadu_si512((const void *)(v + i))));
    if (i < n) { /* n - i = 16 */
        const __m512i x = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(v + i)));
        _mm256_storeu_si256((__m256i *)(v + i), _mm512_castsi512_si256(lut32_avx512(r, c, x)));
    }
}

/* 8-bit data: the tabulated results (t[x + 128], within int8) over n int8 in
 * place, 32 lanes at a time with four vpermt2w (n a multiple of 16). */
LSTM16_TARGET static inline void lstm8_lut(const int16_t *t, int8_t *v, int n) {
    __m512i r[8];
    lut256_load_regs(t, r);
    for (int i = 0; i < n; i += 32) {
        const __mmask32 m = n - i >= 32 ? 0xFFFFFFFFu : 0xFFFFu;
        const __m512i idx = _mm512_add_epi16(_mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, (const void *)(v + i))),
                                             _mm512_set1_epi16(128));
        const __m512i y = lut256_lookup32(r, idx);
        _mm256_mask_storeu_epi8((void *)(v + i), m, _mm512_cvtepi16_epi8(y));
    }
}

/* 16 elements from i on as int32 lanes, and 16 int32 lanes stored saturated:
 * int8 (d8) or int16 data */
__attribute__((always_inline)) LSTM16_TARGET static inline __m512i lstm16_ld(const void *p, int i, const int d8) {
    if (d8) return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)((const int8_t *)p + i)));
    return _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)((const int16_t *)p + i)));
}
__attribute__((always_inline)) LSTM16_TARGET static inline void lstm16_st(void *p, int i, __m512i v, const int d8) {
    if (d8) _mm_storeu_si128((__m128i *)((int8_t *)p + i), _mm512_cvtsepi32_epi8(v));
    else _mm256_storeu_si256((__m256i *)((int16_t *)p + i), _mm512_cvtsepi32_epi16(v));
}

/* acc += xv times the 16 rows' packed pair at q (8-bit weights widened first) */
#define LSTM16_DOT(acc, xv, q, w8)                                                                   \
    do {                                                                                             \
        if (w8) MLI_VPDPWSSD(acc, xv, _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(q)))); \
        else MLI_VPDPWSSD_AT(acc, xv, q);                                                            \
    } while (0)

/* The modular int32 sums of 16 rows over n consecutive column pairs: x
 * pairs from xq, the rows' packed weights from wq on (64 bytes per pair, or
 * 32 with 8-bit weights). */
__attribute__((always_inline)) LSTM16_TARGET static inline __m512i lstm16_dot_run(const int32_t *x, const char *wq, int n,
                                                                                 const int w8) {
    const size_t st = w8 ? 32 : 64;
    __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
    __m512i d = _mm512_setzero_si512(), e = _mm512_setzero_si512();
    int p = 0;
    for (; p + 3 < n; p += 4) {
        LSTM16_DOT(a, _mm512_set1_epi32(x[p]), wq + (size_t)p * st, w8);
        LSTM16_DOT(b, _mm512_set1_epi32(x[p + 1]), wq + (size_t)(p + 1) * st, w8);
        LSTM16_DOT(d, _mm512_set1_epi32(x[p + 2]), wq + (size_t)(p + 2) * st, w8);
        LSTM16_DOT(e, _mm512_set1_epi32(x[p + 3]), wq + (size_t)(p + 3) * st, w8);
    }
    /* the last 0-3 pairs with the intrinsic: a chain of at most three, and
     * the assembly form measured slower here (136 vs 132 us, 128x128x100) */
    for (; p < n; p++) {
        const char *q = wq + (size_t)p * st;
        const __m512i w = w8 ? _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)q)) : _mm512_loadu_si512((const void *)q);
        a = _mm512_dpwssd_epi32(a, _mm512_set1_epi32(x[p]), w);
    }
    return _mm512_add_epi32(_mm512_add_epi32(a, b), _mm512_add_epi32(d, e));
}

/* fx16: the sums of one group over n pairs (M / 2, a multiple of 8) with
 * eight accumulators, pair p into accumulator p mod 8, each widened and
 * added to the int64 halves s0 (rows 0-7) and s1 (rows 8-15).  Exact where
 * no accumulator's true sum leaves int32 (max|h| * l1s8 < 2^31), so a row
 * needs no cutting into chunks where max|h| * l1s is too large for one. */
__attribute__((always_inline)) LSTM16_TARGET static inline void lstm16_dot_split8(const int32_t *x, const char *wq, int n,
                                                                                __m512i *s0, __m512i *s1) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
#define LSTM16_DP8(acc, k) \
    acc = _mm512_dpwssd_epi32(acc, _mm512_set1_epi32(x[p + (k)]), _mm512_loadu_si512((const void *)(wq + (size_t)(p + (k)) * 64)))
    for (int p = 0; p < n; p += 8) {
        LSTM16_DP8(a0, 0); LSTM16_DP8(a1, 1); LSTM16_DP8(a2, 2); LSTM16_DP8(a3, 3);
        LSTM16_DP8(a4, 4); LSTM16_DP8(a5, 5); LSTM16_DP8(a6, 6); LSTM16_DP8(a7, 7);
    }
#undef LSTM16_DP8
    const __m512i acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    __m512i u = *s0, v = *s1;
    for (int k = 0; k < 8; k++) {
        u = _mm512_add_epi64(u, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc[k])));
        v = _mm512_add_epi64(v, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc[k], 1)));
    }
    *s0 = u;
    *s1 = v;
}

/* The whole-row modular int32 sums of 4 consecutive groups (64 rows) of
 * int16 packed weights from wg (groups glen bytes apart) into out[0..63]:
 * each broadcast of an x pair serves the four groups, two accumulators per
 * group (even and odd pairs).  Always inlined: called as a function from the
 * 8-bit weights' step, it kept its accumulators in memory (fx8w16d HAR 21
 * against 15.5 us). */
__attribute__((always_inline)) LSTM16_TARGET static inline void lstm16_dot_block4(const int32_t *x, const char *wg, size_t glen, int pairs,
                                                   int32_t *out) {
    __m512i a[8];
    for (int i = 0; i < 8; i++) a[i] = _mm512_setzero_si512();
    const char *w0 = wg, *w1 = wg + glen, *w2 = wg + 2 * glen, *w3 = wg + 3 * glen;
    int p = 0;
    for (; p + 1 < pairs; p += 2) {
        const size_t o = (size_t)p * 64;
        const __m512i u = _mm512_set1_epi32(x[p]), v = _mm512_set1_epi32(x[p + 1]);
        MLI_VPDPWSSD_AT(a[0], u, w0 + o);
        MLI_VPDPWSSD_AT(a[1], u, w1 + o);
        MLI_VPDPWSSD_AT(a[2], u, w2 + o);
        MLI_VPDPWSSD_AT(a[3], u, w3 + o);
        MLI_VPDPWSSD_AT(a[4], v, w0 + o + 64);
        MLI_VPDPWSSD_AT(a[5], v, w1 + o + 64);
        MLI_VPDPWSSD_AT(a[6], v, w2 + o + 64);
        MLI_VPDPWSSD_AT(a[7], v, w3 + o + 64);
    }
    if (p < pairs) {
        const size_t o = (size_t)p * 64;
        const __m512i u = _mm512_set1_epi32(x[p]);
        MLI_VPDPWSSD_AT(a[0], u, w0 + o);
        MLI_VPDPWSSD_AT(a[1], u, w1 + o);
        MLI_VPDPWSSD_AT(a[2], u, w2 + o);
        MLI_VPDPWSSD_AT(a[3], u, w3 + o);
    }
    for (int j = 0; j < 4; j++)
        _mm512_storeu_si512((void *)(out + 16 * j), _mm512_add_epi32(a[j], a[j + 4]));
}

/* The input sums of one step, x . W[k][0:N] for the 4M rows (groups * 16
 * int64 into out): the direct form over plan->chunk_in, the integers of
 * mli_prv_dense_hoist_* (the fused step computes the next step's sums
 * this way, work the processor can overlap with the step's own chain).
 * wide: 8-bit weights read from their int16 copy (plan->w_in16) by the
 * 16-bit loops, which need no widening per load (fx8w16d HAR 18.7 -> 15.5
 * us, fx8 16.9 -> 15.0). */
__attribute__((always_inline)) LSTM16_TARGET static inline void lstm16_in_sums(const mli_dense_plan *pl, const void *xin,
                                                                             int N, int64_t *out, const int w8,
                                                                             const int d8, const int wide) {
    const int groups = pl->groups, pairs = pl->n_pairs;
    int32_t *x = pl->x_in;
    int16_t *x16 = (int16_t *)x; /* 2 * pairs >= N int16 */
    if (d8) {
        for (int j = 0; j < N; j++) x16[j] = ((const int8_t *)xin)[j];
    } else {
        memcpy(x16, xin, (size_t)N * sizeof(int16_t));
    }
    if (N % 2) x16[N] = 0;
    /* int16 weights: where max|x| * (the group's bound on a row's sum |w|)
     * < 2^31, the whole row is one chunk (its modular int32 sum is exact) */
    const int w8p = w8 && !wide; /* loads of 8-bit packed weights */
    const char *wbase = (const char *)(w8 && wide ? pl->w_in16 : pl->w_in);
    const int32_t mx = w8p ? 0 : rec_avx2_maxabs16(x16, N);
    const int32_t one_chunk[2] = {1, pairs};
    for (int g = 0; g < groups; g++) {
        if (!w8p && g % 4 == 0 && g + 4 <= groups) { /* four groups of one chunk each: per broadcast of x */
            int all = 1;
            for (int j = 0; j < 4; j++) all &= (int64_t)mx * pl->l1_in[g + j] < ((int64_t)1 << 31);
            if (all) {
                int32_t t[4 * MLI_DOT_GROUP];
                lstm16_dot_block4(x, wbase + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP * sizeof(int16_t),
                                  (size_t)pairs * 2 * MLI_DOT_GROUP * sizeof(int16_t), pairs, t);
                for (int j = 0; j < 4; j++) {
                    const __m512i a = _mm512_loadu_si512((const void *)(t + 16 * j));
                    _mm512_storeu_si512((void *)(out + (g + j) * MLI_DOT_GROUP),
                                        _mm512_cvtepi32_epi64(_mm512_castsi512_si256(a)));
                    _mm512_storeu_si512((void *)(out + (g + j) * MLI_DOT_GROUP + 8),
                                        _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(a, 1)));
                }
                g += 3;
                continue;
            }
        }
        const int32_t *ch = !w8p && (int64_t)mx * pl->l1_in[g] < ((int64_t)1 << 31)
                                ? one_chunk
                                : pl->chunk_in + (size_t)g * ((size_t)pairs + 1);
        /* (packed pairs of 16 rows: 64 bytes each, 32 with 8-bit weights) */
        const char *wg = wbase + (size_t)g * (size_t)pairs * (w8p ? 32 : 64);
        __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
        for (int k = 1, p = 0; k <= ch[0]; k++) {
            const int pend = ch[k];
            const __m512i a = lstm16_dot_run(x + p, wg + (size_t)p * (w8p ? 32 : 64), pend - p, w8p); /* modular: exact per chunk */
            s0 = _mm512_add_epi64(s0, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(a)));
            s1 = _mm512_add_epi64(s1, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(a, 1)));
            p = pend;
        }
        _mm512_storeu_si512((void *)(out + g * MLI_DOT_GROUP), s0);
        _mm512_storeu_si512((void *)(out + g * MLI_DOT_GROUP + 8), s1);
    }
}

/* w8 (fx8w16d, fx8): int8 packed weights and the 32-bit accumulator with
 * rounding shifts, every clamp kept; else (fx16) the 40-bit one with a floor
 * shift.  d8 (fx8): int8 data (the state widened to int16 pairs, the gates,
 * cell and output int8, the 8-bit tables, the cell's Q7 rescale). */
__attribute__((always_inline)) LSTM16_TARGET static inline void lstm16_fused_body(const lstm16_fused *fz, const int64_t *si,
                                                                                const void *h, void *gates_,
                                                                                void *c, void *h_out, const void *xn,
                                                                                int64_t *sn, const int w8,
                                                                                const int d8, const int i32,
                                                                                const int nxt, const int wide) {
    const mli_dense_plan *pl = fz->plan;
    const int M = fz->M, groups = 4 * M / MLI_DOT_GROUP, pairs = M / 2;
    int32_t *x = pl->x_st;
    if (d8) { /* the state as int32 pairs of int16 (M is a multiple of 16) */
        for (int m = 0; m < M; m += 16)
            _mm256_storeu_si256((__m256i *)((int16_t *)x + m),
                                _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)((const int8_t *)h + m))));
    } else {
        memcpy(x, h, (size_t)M * sizeof(int16_t)); /* the state as int32 pairs (M is even) */
    }
    int16_t *gates = (int16_t *)gates_;
    int8_t *gates8 = (int8_t *)gates_;

    /* dense: recurrent sums per group of 16 rows, then the read-out of dense_out */
    const __m128i lsh = _mm_cvtsi32_si128(fz->its < 0 ? -fz->its : 0), rsh = _mm_cvtsi32_si128(fz->its > 0 ? fz->its : 0);
    const __m128i osh = _mm_cvtsi32_si128(fz->os);
    const __m512i lo32 = _mm512_set1_epi64(INT32_MIN), hi32 = _mm512_set1_epi64(INT32_MAX); /* w8's 32-bit register */
    const __m512i ibias = _mm512_set1_epi64(fz->its > 0 ? ((int64_t)1 << (fz->its - 1)) - 1 : 0);
    const __m512i ohalf = _mm512_set1_epi64((int64_t)1 << (fz->os - 1)), one64 = _mm512_set1_epi64(1);
    const __m512i omask = _mm512_set1_epi64(((int64_t)1 << fz->os) - 1);
    const __mmask8 ties = fz->up ? 0 : 0xFF;
    const __m512i up64 = _mm512_set1_epi64(fz->up);
    const __m512i up32 = _mm512_set1_epi32(fz->up);
    const __m512i ibias32 = _mm512_set1_epi32(fz->its > 0 ? (1 << (fz->its - 1)) - 1 : 0);
    const __m512i obias32 = _mm512_set1_epi32((1 << (fz->os - 1)) - 1);
    /* fx16 (and 8-bit weights with the widened copy): where max|h| times the
     * largest sum of |w| of a row is below 2^31, each row is one chunk for
     * this step (its modular int32 sum is exact) */
    const int32_t one_chunk[2] = {1, pairs};
    const int64_t maxh = !w8 || wide ? (int64_t)rec_avx2_maxabs16((const int16_t *)x, M) : 0;
    const int one = (!w8 || wide) && maxh * fz->l1s < ((int64_t)1 << 31);
    /* fx16 otherwise: eight accumulators, each exact, where max|h| allows */
    const int split = !w8 && !one && maxh * fz->l1s8 < ((int64_t)1 << 31);
    /* one chunk per row, small M: the state sums of every group first, four
     * groups per broadcast of h */
    int32_t sums[LSTM16_BLOCK_ROWS];
    const int pre = one && 4 * M <= LSTM16_BLOCK_ROWS && groups % 4 == 0;
    const int16_t *wst = wide ? pl->w_st16 : pl->w_st;
    if (pre)
        for (int g = 0; g < groups; g += 4)
            lstm16_dot_block4(x, (const char *)(wst + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP),
                              (size_t)pairs * 2 * MLI_DOT_GROUP * sizeof(int16_t), pairs, sums + g * MLI_DOT_GROUP);
    for (int g = 0; g < groups; g++) {
        const int32_t *ch = pl->chunk_st + (size_t)g * ((size_t)pairs + 1);
        const int16_t *wg = pl->w_st + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP;
        const int8_t *wg8 = (const int8_t *)pl->w_st + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP;
        if (i32) { /* lstm16_i32_ok: all in int32 lanes, the modular sums exact, no clamp acting */
            const __m512i a = pre ? _mm512_loadu_si512((const void *)(sums + g * MLI_DOT_GROUP))
                                  : lstm16_dot_run(x, (const char *)wg8, pairs, 1);
            const int k0 = g * MLI_DOT_GROUP;
            const __m512i v0 = _mm512_add_epi64(_mm512_loadu_si512((const void *)(pl->bias_term + k0)),
                                                _mm512_loadu_si512((const void *)(si + k0)));
            const __m512i v1 = _mm512_add_epi64(_mm512_loadu_si512((const void *)(pl->bias_term + k0 + 8)),
                                                _mm512_loadu_si512((const void *)(si + k0 + 8)));
            __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(v0)), _mm512_cvtepi64_epi32(v1), 1);
            if (fz->its > 0) v = rec_avx512_round(v, rsh, ibias32, up32);
            else v = _mm512_sll_epi32(v, lsh);
            const __m512i q = rec_avx512_round(_mm512_add_epi32(v, a), osh, obias32, up32);
            if (d8) _mm_storeu_si128((__m128i *)(gates8 + k0), _mm512_cvtsepi32_epi8(q));
            else _mm256_storeu_si256((__m256i *)(gates + k0), _mm512_cvtsepi32_epi16(q));
            continue;
        }
        /* fx16: the sums start at the read-out's rounding offset 2^(os-1) */
        __m512i s[2] = {w8 ? _mm512_setzero_si512() : ohalf, w8 ? _mm512_setzero_si512() : ohalf};
        const char *wb = w8 ? (const char *)wg8 : (const char *)wg;
        const int32_t *chg = one ? one_chunk : ch;
        if (pre) {
            const __m512i a = _mm512_loadu_si512((const void *)(sums + g * MLI_DOT_GROUP));
            s[0] = _mm512_add_epi64(s[0], _mm512_cvtepi32_epi64(_mm512_castsi512_si256(a)));
            s[1] = _mm512_add_epi64(s[1], _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(a, 1)));
        }
        if (split) lstm16_dot_split8(x, wb, pairs, &s[0], &s[1]);
        for (int k = 1, p = 0; !pre && !split && k <= chg[0]; k++) {
            const int pend = chg[k];
            const __m512i a = lstm16_dot_run(x + p, wb + (size_t)p * (w8 ? 32 : 64), pend - p, w8); /* modular: exact per chunk */
            s[0] = _mm512_add_epi64(s[0], _mm512_cvtepi32_epi64(_mm512_castsi512_si256(a)));
            s[1] = _mm512_add_epi64(s[1], _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(a, 1)));
            p = pend;
        }
        __m512i q2[2];
        for (int hf = 0; hf < 2 && !w8; hf++) {
            /* fx16 (plan->unclamped): neither 40-bit clamp can act, so the
             * state part's start is a floor shift of bias term + input sum,
             * or for its <= 0 the sum of the two shifted left (bt_st, from
             * lstm16_fused_init: exact, each below 2^62) */
            const int k0 = g * MLI_DOT_GROUP + 8 * hf;
            const __m512i sv = _mm512_loadu_si512((const void *)(si + k0));
            const __m512i acc = fz->its > 0
                                    ? _mm512_sra_epi64(_mm512_add_epi64(_mm512_loadu_si512((const void *)(pl->bias_term + k0)), sv), rsh)
                                    : _mm512_add_epi64(_mm512_loadu_si512((const void *)(pl->s_st + k0)), _mm512_sll_epi64(sv, lsh));
            const __m512i t = _mm512_add_epi64(acc, s[hf]); /* + 2^(os-1) */
            const __m512i q = _mm512_sra_epi64(t, osh);
            q2[hf] = _mm512_mask_andnot_epi64(q, _mm512_testn_epi64_mask(t, omask) & ties, one64, q);
        }
        for (int hf = 0; hf < 2 && w8; hf++) {
            const int k0 = g * MLI_DOT_GROUP + 8 * hf;
            __m512i acc = _mm512_add_epi64(_mm512_loadu_si512((const void *)(pl->bias_term + k0)),
                                           _mm512_loadu_si512((const void *)(si + k0)));
            acc = _mm512_min_epi64(_mm512_max_epi64(acc, lo32), hi32);
            /* the state part's start: saturating left shift or rounding right shift */
            if (fz->its <= 0) {
                acc = _mm512_sra_epi64(_mm512_sll_epi64(acc, lsh), rsh);
            } else {
                const __m512i o = _mm512_or_si512(up64, _mm512_and_si512(_mm512_sra_epi64(acc, rsh), one64));
                acc = _mm512_sra_epi64(_mm512_add_epi64(_mm512_add_epi64(acc, ibias), o), rsh);
            }
            acc = _mm512_min_epi64(_mm512_max_epi64(acc, lo32), hi32);
            acc = _mm512_add_epi64(acc, s[hf]);
            acc = _mm512_min_epi64(_mm512_max_epi64(acc, lo32), hi32);
            /* (acc + 2^(os-1)) >> os, and on a tie (those low bits zero) the
             * convergent mode takes the even neighbour */
            const __m512i t = _mm512_add_epi64(acc, ohalf);
            __m512i q = _mm512_sra_epi64(t, osh);
            q2[hf] = _mm512_mask_andnot_epi64(q, _mm512_testn_epi64_mask(t, omask) & ties, one64, q);
        }
        if (d8) {
            _mm_storeu_si128((__m128i *)(gates8 + g * MLI_DOT_GROUP),
                             _mm_unpacklo_epi64(_mm512_cvtsepi64_epi8(q2[0]), _mm512_cvtsepi64_epi8(q2[1])));
        } else {
            _mm256_storeu_si256((__m256i *)(gates + g * MLI_DOT_GROUP),
                                _mm256_set_m128i(_mm512_cvtsepi64_epi16(q2[1]), _mm512_cvtsepi64_epi16(q2[0])));
        }
    }

    /* gate activations: i, g, f, o */
    lut_regs sg, th;
    if (d8) {
        lstm8_lut(fz->t8[0], gates8, M);
        lstm8_lut(fz->t8[1], gates8 + M, M);
        lstm8_lut(fz->t8[0], gates8 + 2 * M, 2 * M);
    } else {
        lut_load_regs(&mli_prv_sigm_lut, &sg);
        lut_load_regs(&mli_prv_tanh_lut, &th);
        lstm16_lut(&sg, &fz->sigm, gates, M);
        lstm16_lut(&th, &fz->tanh_, gates + M, M);
        lstm16_lut(&sg, &fz->sigm, gates + 2 * M, 2 * M);
    }
    const size_t el = d8 ? 1 : 2;
    const char *gb = (const char *)gates_;
    const void *g_i = gb, *g_g = gb + (size_t)M * el, *g_f = gb + 2 * (size_t)M * el, *g_o = gb + 3 * (size_t)M * el;

    /* cell update (the sum wraps at 32 bits, as in MLI; with 8-bit data it stays below 2^15) */
    const __m128i ssh = _mm_cvtsi32_si128(fz->ir_shift), q15 = _mm_cvtsi32_si128(15), q7 = _mm_cvtsi32_si128(7);
    const __m512i sbias = _mm512_set1_epi32((1 << (fz->ir_shift - 1)) - 1), one32 = _mm512_set1_epi32(1);
    const __m512i bias7 = _mm512_set1_epi32(63);
    const __m128i msh = _mm_cvtsi32_si128(fz->mshift);
    const __m512i mbias = _mm512_set1_epi32((1 << (fz->mshift - 1)) - 1);
    if (!d8) {
        /* 32 lanes at a time: the new cell values, their activation in
         * registers, and the hidden output out(p * o) */
        const lut_regs *ar = fz->act == 1 ? &th : &sg;
        for (int m = 0; m < M; m += 32) {
            const int n16 = M - m >= 32 ? 2 : 1; /* M is a multiple of 16 */
            __m256i cn[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
            for (int hf = 0; hf < n16; hf++) {
                const int j = m + 16 * hf;
                const __m512i u = rec_avx512_round(_mm512_mullo_epi32(lstm16_ld(g_i, j, 0), lstm16_ld(g_g, j, 0)), ssh, sbias, up32);
                const __m512i v = _mm512_add_epi32(u, _mm512_mullo_epi32(lstm16_ld(g_f, j, 0), lstm16_ld(c, j, 0)));
                /* v >> 15 rounded, as floor plus the carry of the low 15 bits (no overflow) */
                const __m512i fl = _mm512_srai_epi32(v, 15);
                const __m512i odd = _mm512_or_si512(up32, _mm512_and_si512(fl, one32));
                const __m512i inc = _mm512_srl_epi32(
                    _mm512_add_epi32(_mm512_add_epi32(_mm512_and_si512(v, _mm512_set1_epi32(0x7FFF)), _mm512_set1_epi32(0x3FFF)), odd), q15);
                cn[hf] = _mm512_cvtsepi32_epi16(_mm512_add_epi32(fl, inc));
                _mm256_storeu_si256((__m256i *)((int16_t *)c + j), cn[hf]);
            }
            __m512i pv = _mm512_inserti64x4(_mm512_castsi256_si512(cn[0]), cn[1], 1);
            if (fz->act) pv = lut32_avx512(ar, &fz->out, pv); /* lanes past M are not stored */
            for (int hf = 0; hf < n16; hf++) {
                const int j = m + 16 * hf;
                const __m512i p32 = _mm512_cvtepi16_epi32(hf ? _mm512_extracti64x4_epi64(pv, 1) : _mm512_castsi512_si256(pv));
                const __m512i v = _mm512_mullo_epi32(p32, lstm16_ld(g_o, j, 0));
                lstm16_st(h_out, j, rec_avx512_round(v, msh, mbias, up32), 0);
            }
        }
    } else {
        for (int m = 0; m < M; m += 16) {
            const __m512i u = rec_avx512_round(_mm512_mullo_epi32(lstm16_ld(g_i, m, 1), lstm16_ld(g_g, m, 1)), ssh, sbias, up32);
            const __m512i v = _mm512_add_epi32(u, _mm512_mullo_epi32(lstm16_ld(g_f, m, 1), lstm16_ld(c, m, 1)));
            lstm16_st(c, m, rec_avx512_round(v, q7, bias7, up32), 1); /* |v| < 2^15 */
        }
        /* hidden output: out(p * o), p = c or its activation (evaluated into h_out first) */
        const void *pv = c;
        if (fz->act) {
            memcpy(h_out, c, (size_t)M);
            lstm8_lut(fz->t8[2], (int8_t *)h_out, M);
            pv = h_out;
        }
        for (int m = 0; m < M; m += 16) {
            const __m512i v = _mm512_mullo_epi32(lstm16_ld(pv, m, 1), lstm16_ld(g_o, m, 1));
            lstm16_st(h_out, m, rec_avx512_round(v, msh, mbias, up32), 1);
        }
    }
    if (nxt && xn) lstm16_in_sums(pl, xn, pl->N, sn, w8, d8, wide); /* the next step's input sums */
}
/* One step (and the input sums of the next into sn when xn is not NULL);
 * lstm16_first_sums: those of the first step. */
#define LSTM16_STEP_PARAMS \
    const lstm16_fused *fz, const int64_t *si, const void *h, void *gates, void *c, void *h_out, const void *xn, int64_t *sn
/* (nxt: a version with the next step's sums, one without, each compiled for its use) */
#define LSTM16_STEP_BODY(w8, d8, nxt)                                                                            \
    if (w8 && fz->i32 && fz->wide) lstm16_fused_body(fz, si, h, gates, c, h_out, xn, sn, w8, d8, 1, nxt, 1); \
    else if (w8 && fz->i32) lstm16_fused_body(fz, si, h, gates, c, h_out, xn, sn, w8, d8, 1, nxt, 0);        \
    else if (w8 && fz->wide) lstm16_fused_body(fz, si, h, gates, c, h_out, xn, sn, w8, d8, 0, nxt, 1);       \
    else lstm16_fused_body(fz, si, h, gates, c, h_out, xn, sn, w8, d8, 0, nxt, 0);
#define LSTM16_STEP_DEF(name, w8, d8)                                                              \
    LSTM16_TARGET static void name(LSTM16_STEP_PARAMS) { LSTM16_STEP_BODY(w8, d8, 0) }            \
    LSTM16_TARGET static void name##_n(LSTM16_STEP_PARAMS) { LSTM16_STEP_BODY(w8, d8, 1) }
LSTM16_STEP_DEF(lstm16_fused_step, 0, 0)
LSTM16_STEP_DEF(lstm16w8_fused_step, 1, 0)
LSTM16_STEP_DEF(lstm8_fused_step, 1, 1)
LSTM16_TARGET static void lstm16_first_sums(const lstm16_fused *fz, const void *x, int64_t *out, int w8, int d8) {
    if (d8) lstm16_in_sums(fz->plan, x, fz->plan->N, out, 1, 1, fz->wide);
    else if (w8) lstm16_in_sums(fz->plan, x, fz->plan->N, out, 1, 0, fz->wide);
    else lstm16_in_sums(fz->plan, x, fz->plan->N, out, 0, 0, 0);
}
#endif

#define KRN_IMPL "mli_krn_lstm_impl.h"
#include "mli_krn_variants.h"
