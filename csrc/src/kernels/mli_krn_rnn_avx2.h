/* The fused basic RNN time step on AVX2, shared by the kernel
 * (mli_krn_rnn.c) and the batched rows (mlipy_rows.c): static functions,
 * one copy per translation unit that includes it. */
#ifndef MLI_KRN_RNN_AVX2_H
#define MLI_KRN_RNN_AVX2_H

#include <string.h>
#include "mli_krn_common.h"
#include "../private/mli_prv_lut_simd.h"
#include "../private/mli_prv_dense_avx2.h"

/* ---- One fused basic RNN time step on AVX2 (fx16, fx8w16d, fx8) ---------
 * The same integers as the stepped path: the recurrent read-out of
 * mli_prv_dense_avx2.h on int32 lanes (where its bounds hold), each group
 * of 16 outputs saturated, activated in registers and stored (the dense
 * results too where the step keeps them apart, as batch-to-last does in
 * cfg.ir), and the next step's start values from its input in the same
 * call.  K a multiple of 8; the state is copied first (it may overlap the
 * outputs); the outputs must not overlap the input (rnn_avx2_init). */
#ifdef MLIPY_X86_TARGETS
typedef struct {
    mli_rec_avx2 rec;
    int K, M, N, activate;
    lut_setup ls;
    lut_vc lv;                  /* its vector constants, made once per call */
    const int32_t *tp;          /* the activation's pair table */
    int32_t t8[256];          /* 8-bit data: mli_prv_lut_vec8's results */
} rnn_avx2;

static int rnn_avx2_setup(rnn_avx2 *fz, const mli_dense_plan *plan, int K, int M, int N, long batch, mli_dense_shifts sh,
                          int activate, const mli_lut *lut, int f_d, int w8, int d8, const void *x, const void *y,
                          size_t ny, const void *ir, size_t nir, size_t el) {
    if (K <= 0 || K % 8 || M <= 0 || M > K || N < 0 || batch < 1) return 0;
    const size_t nx = (size_t)batch * (size_t)N * el;
    if (!mli_rec_avx2_disjoint(x, nx, y, ny * el) || !mli_rec_avx2_disjoint(x, nx, ir, nir * el) ||
        !mli_rec_avx2_disjoint(y, ny * el, ir, nir * el))
        return 0;
    if (!mli_rec_avx2_setup(&fz->rec, plan, K, sh, w8, d8)) return 0;
    fz->K = K;
    fz->M = M;
    fz->N = N;
    fz->activate = activate;
    if (activate) {
        if (d8) {
            int16_t t[256];
            mli_prv_lut8_table(lut, f_d, t);
            for (int i = 0; i < 256; i++) fz->t8[i] = t[i];
        } else {
            lut_prepare(lut, f_d, &fz->ls);
            lut_vc_make(&fz->ls, &fz->lv);
            fz->lv.full = mli_prv_lut16_full(lut, f_d); /* NULL: the pair table's gathers */
            fz->tp = lut->pair192;
        }
    }
    return 1;
}

/* rnn_avx2_setup where the AVX2 path is the one picked (mli_rec_avx2_init). */
static int rnn_avx2_init(rnn_avx2 *fz, const mli_dense_plan *plan, int K, int M, int N, long batch, mli_dense_shifts sh,
                         int activate, const mli_lut *lut, int f_d, int w8, int d8, const void *x, const void *y,
                         size_t ny, const void *ir, size_t nir, size_t el) {
    return mlipy_get_isa() == MLIPY_ISA_AVX2 &&
           rnn_avx2_setup(fz, plan, K, M, N, batch, sh, activate, lut, f_d, w8, d8, x, y, ny, ir, nir, el);
}

/* The outputs of NG groups from g0: saturated to dense (when not NULL),
 * activated (or not) to out. */
__attribute__((always_inline)) REC_AVX2_TARGET static inline void rnn_avx2_out(const rnn_avx2 *fz, const lut_vc *lv,
                                                                              __m256i *q, int g0, void *dense,
                                                                              void *out, const int NG, const int d8) {
    for (int j = 0; j < NG; j++) {
        for (int h = 0; h < 2; h++) {
            const int k = (g0 + j) * MLI_DOT_GROUP + 8 * h;
            if (k >= fz->K) break;
            __m256i v = rec_avx2_sat(q[2 * j + h], d8);
            if (dense) rec_avx2_st(dense, k, v, d8);
            if (fz->activate) v = d8 ? rec_avx2_tab8(fz->t8, v) : lut8_pair_avx2(fz->tp, lv, v);
            rec_avx2_st(out, k, v, d8);
        }
    }
}

__attribute__((always_inline)) REC_AVX2_TARGET static inline void rnn_avx2_body(const rnn_avx2 *fz, const int32_t *st,
                                                                               const void *h, void *dense, void *out,
                                                                               const void *xn, int32_t *stn,
                                                                               const int w8, const int d8) {
    const mli_dense_plan *pl = fz->rec.plan;
    const int32_t *x = rec_avx2_state(h, fz->M, pl->x_st, 0, d8);
    const int one_chunk = w8 || (int64_t)rec_avx2_maxabs16((const int16_t *)h, fz->M) * fz->rec.l1s < ((int64_t)1 << 31);
    const int groups = fz->rec.groups;
    /* the next step's start values block by block between this step's (as the LSTM step) */
    int one_n = 0;
    const int32_t *xq = xn ? rec_avx2_starts_prep(&fz->rec, xn, fz->N, pl->x_in, &one_n, w8, d8) : NULL;
    int g = 0;
    for (; g + REC_AVX2_BLOCK <= groups; g += REC_AVX2_BLOCK) {
        __m256i q[2 * REC_AVX2_BLOCK];
        rec_avx2_block(&fz->rec, g, x, one_chunk, st, q, REC_AVX2_BLOCK, w8);
        rnn_avx2_out(fz, &fz->lv, q, g, dense, out, REC_AVX2_BLOCK, d8);
        if (xq) rec_avx2_starts_block(&fz->rec, g, xq, one_n, stn, REC_AVX2_BLOCK, w8);
    }
    for (; g < groups; g++) {
        __m256i q[2];
        rec_avx2_block(&fz->rec, g, x, one_chunk, st, q, 1, w8);
        rnn_avx2_out(fz, &fz->lv, q, g, dense, out, 1, d8);
        if (xq) rec_avx2_starts_block(&fz->rec, g, xq, one_n, stn, 1, w8);
    }
}
/* fz is restrict: nothing writes it during a step, and without that GCC (built with
 * -fno-strict-aliasing) reloads its constants after every store of the step's outputs */
#define RNN_AVX2_STEP_DEF(name, w8, d8)                                                                       \
    REC_AVX2_TARGET static void name(const rnn_avx2 *restrict fz, const int32_t *st, const void *h, void *dense, void *out, \
                                     const void *xn, int32_t *stn) {                                          \
        rnn_avx2_body(fz, st, h, dense, out, xn, stn, w8, d8);                                                \
    }                                                                                                         \
    REC_AVX2_TARGET static void name##_first(const rnn_avx2 *restrict fz, const void *x, int32_t *st) {                \
        rec_avx2_starts(&fz->rec, x, fz->N, fz->rec.plan->x_in, st, w8, d8);                                  \
    } \
    __attribute__((unused)) REC_AVX2_TARGET static void name##_steps(const rnn_avx2 *restrict fz, const void *x, int count, int32_t *st) {       \
        rec_avx2_starts_steps(&fz->rec, x, fz->N, count, fz->rec.plan->x_all, st, w8, d8);                    \
    }
RNN_AVX2_STEP_DEF(rnn_avx2_step16, 0, 0)
RNN_AVX2_STEP_DEF(rnn_avx2_step16w8, 1, 0)
RNN_AVX2_STEP_DEF(rnn_avx2_step8, 1, 1)
#endif

#endif /* MLI_KRN_RNN_AVX2_H */
