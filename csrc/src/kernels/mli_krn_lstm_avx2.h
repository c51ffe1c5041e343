/* The fused LSTM time step on AVX2, shared by the kernel
 * (mli_krn_lstm.c) and the batched rows (mlipy_rows.c): static functions,
 * one copy per translation unit that includes it. */
#ifndef MLI_KRN_LSTM_AVX2_H
#define MLI_KRN_LSTM_AVX2_H

#include <string.h>
#include "mli_krn_common.h"
#include "../private/mli_prv_lut_simd.h"
#include "../private/mli_prv_dense_avx2.h"

/* ---- One fused LSTM time step on AVX2 (fx16, fx8w16d, fx8) --------------
 * The same integers as the step-by-step path: the recurrent read-out of
 * mli_prv_dense_avx2.h on int32 lanes (where its bounds hold), each group
 * of 16 gate rows activated in registers as it is read out (one load per
 * result from a full 16-bit table, mli_prv_lut16_full; without one, entries
 * picked from a pair table and interpolated), the cell update and hidden
 * output on int32 lanes,
 * and the next step's start values computed from its input in the same
 * call (work the processor overlaps with the step's own chain).  Used
 * where lstm_avx2_ok and mli_rec_avx2_init accept the call: M a multiple of
 * 16 (each group within one gate), 0 < ir_shift, mshift < 31, the outputs
 * disjoint as for the AVX-512 step. */
#ifdef MLIPY_X86_TARGETS
typedef struct {
    mli_rec_avx2 rec;
    int M, N, ir_shift, mshift, act; /* act: 0 none (p = c), 1 tanh, 2 sigm */
    int h_in_place;                  /* the state may be read where it is (it overlaps no gate) */
    int32_t up;
    lut_setup sigm, tanh_, out;
    lut_vc lv[3];                /* their vector constants (sigm, tanh, out), made once per call */
    const int32_t *tp[3];        /* pair tables: sigm, tanh, the output activation */
    int32_t t8[3][256];          /* 8-bit data: mli_prv_lut_vec8's results (sigm, tanh, out) */
} lstm_avx2;

static int lstm_avx2_init(lstm_avx2 *fz, const mli_dense_plan *plan, int M, int N, mli_dense_shifts sh, int ir_shift,
                          int mshift, mli_rnn_out_activation act, int f_ir, int f_c, int w8, int d8,
                          const void *h, const void *gates, size_t el) {
    if (M <= 0 || M % MLI_DOT_GROUP || ir_shift <= 0 || ir_shift >= 31 || mshift <= 0 || mshift >= 31) return 0;
    if (!mli_rec_avx2_init(&fz->rec, plan, 4 * M, sh, w8, d8)) return 0;
    fz->M = M;
    fz->N = N;
    fz->ir_shift = ir_shift;
    fz->mshift = mshift;
    fz->act = act == RNN_ACT_NONE ? 0 : (act == RNN_ACT_TANH ? 1 : 2);
    fz->up = mlipy_rounding_up;
    fz->h_in_place = mli_rec_avx2_disjoint(h, (size_t)M * el, gates, 4 * (size_t)M * el);
    const mli_lut *outl = act == RNN_ACT_TANH ? &mli_prv_tanh_lut : &mli_prv_sigm_lut;
    if (d8) {
        int16_t t[256];
        const mli_lut *l3[3] = {&mli_prv_sigm_lut, &mli_prv_tanh_lut, outl};
        const int fr[3] = {f_ir, f_ir, f_c};
        for (int k = 0; k < 3; k++) {
            mli_prv_lut8_table(l3[k], fr[k], t);
            for (int i = 0; i < 256; i++) fz->t8[k][i] = t[i];
        }
    } else {
        lut_prepare(&mli_prv_sigm_lut, f_ir, &fz->sigm);
        lut_prepare(&mli_prv_tanh_lut, f_ir, &fz->tanh_);
        lut_prepare(outl, f_c, &fz->out);
        lut_vc_make(&fz->sigm, &fz->lv[0]);
        lut_vc_make(&fz->tanh_, &fz->lv[1]);
        lut_vc_make(&fz->out, &fz->lv[2]);
        /* one load per result where the full tables are at hand */
        fz->lv[0].full = mli_prv_lut16_full(&mli_prv_sigm_lut, f_ir);
        fz->lv[1].full = mli_prv_lut16_full(&mli_prv_tanh_lut, f_ir);
        fz->lv[2].full = fz->act ? mli_prv_lut16_full(outl, f_c) : NULL;
        fz->tp[0] = mli_prv_sigm_lut.pair192;
        fz->tp[1] = mli_prv_tanh_lut.pair192;
        fz->tp[2] = outl->pair192;
    }
    return 1;
}

/* The gates of NG groups from g0 from their read-outs q: saturated,
 * activated in registers (i, g, f, o: the tanh is gate 1) and stored. */
__attribute__((always_inline)) REC_AVX2_TARGET static inline void lstm_avx2_gates(const lstm_avx2 *fz, const lut_vc *lv,
                                                                                 __m256i *q, int g0, void *gates,
                                                                                 const int NG, const int d8) {
    for (int j = 0; j < NG; j++) {
        const int k0 = (g0 + j) * MLI_DOT_GROUP, tanh_gate = k0 >= fz->M && k0 < 2 * fz->M;
        if (!d8) { /* 16 int16 lanes (the pack saturates) */
            const __m256i v = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[2 * j], q[2 * j + 1]), 0xD8);
            _mm256_storeu_si256((__m256i *)((int16_t *)gates + k0), lut16_pair_avx2(fz->tp[tanh_gate], &lv[tanh_gate], v));
            continue;
        }
        for (int h = 0; h < 2; h++) {
            __m256i v = rec_avx2_sat(q[2 * j + h], d8);
            v = rec_avx2_tab8(fz->t8[tanh_gate], v);
            rec_avx2_st(gates, k0 + 8 * h, v, d8);
        }
    }
}

/* One step from the start values st; with xn, the next step's into stn. */
__attribute__((always_inline)) REC_AVX2_TARGET static inline void lstm_avx2_body(const lstm_avx2 *fz, const int32_t *st,
                                                                                const void *h, void *gates, void *c,
                                                                                void *h_out, const void *xn,
                                                                                int32_t *stn, const int w8,
                                                                                const int d8) {
    const mli_dense_plan *pl = fz->rec.plan;
    const int M = fz->M, groups = 4 * M / MLI_DOT_GROUP;
    const int32_t *x = rec_avx2_state(h, M, pl->x_st, fz->h_in_place, d8);
    const lut_vc *lv = fz->lv; /* sigm, tanh, the output activation */
    /* fx16: where max|h| times the largest sum of |w| of a row is below 2^31, every row is one chunk */
    const int one_chunk = w8 || (int64_t)rec_avx2_maxabs16((const int16_t *)h, M) * fz->rec.l1s < ((int64_t)1 << 31);
    /* the next step's start values block by block between this step's:
     * independent work next to the table look-ups' latencies */
    int one_n = 0;
    const int32_t *xq = xn ? rec_avx2_starts_prep(&fz->rec, xn, fz->N, pl->x_in, &one_n, w8, d8) : NULL;
    int g = 0;
    for (; g + REC_AVX2_BLOCK <= groups; g += REC_AVX2_BLOCK) {
        __m256i q[2 * REC_AVX2_BLOCK];
        rec_avx2_block(&fz->rec, g, x, one_chunk, st, q, REC_AVX2_BLOCK, w8);
        lstm_avx2_gates(fz, lv, q, g, gates, REC_AVX2_BLOCK, d8);
        if (xq) rec_avx2_starts_block(&fz->rec, g, xq, one_n, stn, REC_AVX2_BLOCK, w8);
    }
    for (; g < groups; g++) {
        __m256i q[2];
        rec_avx2_block(&fz->rec, g, x, one_chunk, st, q, 1, w8);
        lstm_avx2_gates(fz, lv, q, g, gates, 1, d8);
        if (xq) rec_avx2_starts_block(&fz->rec, g, xq, one_n, stn, 1, w8);
    }
    /* cell update (the sum wraps at 32 bits as in MLI; with 8-bit data it
     * stays below 2^15) and hidden output out(p * o) */
    const size_t el = d8 ? 1 : 2;
    const char *gb = (const char *)gates;
    const void *g_i = gb, *g_g = gb + (size_t)M * el, *g_f = gb + 2 * (size_t)M * el, *g_o = gb + 3 * (size_t)M * el;
    const __m128i ssh = _mm_cvtsi32_si128(fz->ir_shift), msh = _mm_cvtsi32_si128(fz->mshift);
    const __m256i sbias = _mm256_set1_epi32((1 << (fz->ir_shift - 1)) - 1), up = _mm256_set1_epi32(fz->up);
    const __m256i mbias = _mm256_set1_epi32((1 << (fz->mshift - 1)) - 1), one = _mm256_set1_epi32(1);
    for (int m = 0; m < M; m += 16) { /* M is a multiple of 16 */
        __m256i cn[2];
        for (int hf = 0; hf < 2; hf++) {
            const int i = m + 8 * hf;
            const __m256i u = rec_avx2_round(_mm256_mullo_epi32(rec_avx2_ld(g_i, i, d8), rec_avx2_ld(g_g, i, d8)), ssh,
                                             sbias, up);
            const __m256i v = _mm256_add_epi32(u, _mm256_mullo_epi32(rec_avx2_ld(g_f, i, d8), rec_avx2_ld(c, i, d8)));
            if (d8) {
                cn[hf] = rec_avx2_sat(rec_avx2_round(v, _mm_cvtsi32_si128(7), _mm256_set1_epi32(63), up), 1);
            } else { /* v >> 15 rounded, as floor plus the carry of the low 15 bits (no overflow) */
                const __m256i fl = _mm256_srai_epi32(v, 15);
                const __m256i odd = _mm256_or_si256(up, _mm256_and_si256(fl, one));
                const __m256i inc = _mm256_srli_epi32(
                    _mm256_add_epi32(_mm256_add_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7FFF)),
                                                      _mm256_set1_epi32(0x3FFF)),
                                     odd),
                    15);
                cn[hf] = _mm256_add_epi32(fl, inc); /* saturated by the pack below */
            }
        }
        __m256i p[2];
        if (d8) {
            for (int hf = 0; hf < 2; hf++) {
                rec_avx2_st(c, m + 8 * hf, cn[hf], 1);
                p[hf] = fz->act ? rec_avx2_tab8(fz->t8[2], cn[hf]) : cn[hf];
            }
        } else {
            __m256i c16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(cn[0], cn[1]), 0xD8); /* sat16 */
            _mm256_storeu_si256((__m256i *)((int16_t *)c + m), c16);
            if (fz->act) c16 = lut16_pair_avx2(fz->tp[2], &lv[2], c16);
            p[0] = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(c16));
            p[1] = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(c16, 1));
        }
        for (int hf = 0; hf < 2; hf++) {
            const __m256i hv = rec_avx2_round(_mm256_mullo_epi32(p[hf], rec_avx2_ld(g_o, m + 8 * hf, d8)), msh, mbias, up);
            rec_avx2_st(h_out, m + 8 * hf, rec_avx2_sat(hv, d8), d8);
        }
    }
}
/* fz is restrict: nothing writes it during a step, and without that GCC (built with
 * -fno-strict-aliasing) reloads its constants after every store of the step's outputs */
#define LSTM_AVX2_STEP_PARAMS \
    const lstm_avx2 *restrict fz, const int32_t *st, const void *h, void *gates, void *c, void *h_out, const void *xn, int32_t *stn
#define LSTM_AVX2_STEP_DEF(name, w8, d8)                                            \
    REC_AVX2_TARGET static void name(LSTM_AVX2_STEP_PARAMS) {                      \
        lstm_avx2_body(fz, st, h, gates, c, h_out, xn, stn, w8, d8);               \
    }                                                                               \
    REC_AVX2_TARGET static void name##_first(const lstm_avx2 *restrict fz, const void *x, int32_t *st) { \
        rec_avx2_starts(&fz->rec, x, fz->N, fz->rec.plan->x_in, st, w8, d8);        \
    } \
    __attribute__((unused)) REC_AVX2_TARGET static void name##_steps(const lstm_avx2 *restrict fz, const void *x, int count, int32_t *st) {       \
        rec_avx2_starts_steps(&fz->rec, x, fz->N, count, fz->rec.plan->x_all, st, w8, d8);                    \
    }
LSTM_AVX2_STEP_DEF(lstm_avx2_step16, 0, 0)
LSTM_AVX2_STEP_DEF(lstm_avx2_step16w8, 1, 0)
LSTM_AVX2_STEP_DEF(lstm_avx2_step8, 1, 1)
#endif

#endif /* MLI_KRN_LSTM_AVX2_H */
