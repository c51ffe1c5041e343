/* The dense core shared by FC, basic RNN and LSTM (SPEC.md section 4).
 *
 * y[k] = out(bias[k] << bias_shift + x . W[k][0:N]  --in_to_state-->  + h . W[k][N:N+S])
 * with the accumulator model of the variant: 40-bit with a floor rescale
 * for fx16, 32-bit with a rounding rescale for fx8 and fx8w16d.
 *
 * Two paths give the same numbers: the plain path reads W as given; the
 * packed path (when the caller lent a workspace with mlipy_set_workspace
 * and the CPU has AVX2 or AVX-512 VNNI) packs W once per kernel call into
 * the SIMD layout of mli_prv_dotprod.h and computes the exact sums there. */
#ifndef MLI_PRV_DENSE_H
#define MLI_PRV_DENSE_H

#include <stddef.h>
#include <stdint.h>
#include "mli_prv_dotprod.h"

typedef struct {
    int bias_shift;  /* f_in + f_w - f_b */
    int in_to_state; /* f_in - f_h (unused when S == 0) */
    int out_shift;   /* f_h + f_w - f_o (FC: f_in + f_w - f_o) */
} mli_dense_shifts;

/* The packed weights' own largest sums of |w| of a row (input part, state
 * part), kept with the packing in the workspace: computed by the first call
 * that needs them after the weights were packed (have: 0 until then).  Also
 * the most pieces the AVX2 read-out cuts a row into, from the packing's
 * chunk tables (have_pieces likewise), and whether the widened copy of an
 * 8-bit packing is made (have_wide). */
typedef struct {
    int64_t in, st;
    int have;
    int pieces_in, pieces_st, have_pieces;
    int have_wide; /* 8-bit weights: w_in16 / w_st16 hold the packing widened */
    int64_t st8;   /* the largest sum of |w| of a row of the state part over the pairs p = j mod 8 (any j) */
    int have_st8;
} mli_dense_l1_memo;

/* What a plan derived from the packed weights and the bias (bias_term,
 * l1_in, l1_st in the workspace; bias_top, unclamped here), kept with the
 * packing: a later call that reuses the packing with the same bias bytes
 * (b_copy) and shifts takes them as they are (have: 0 until then). */
typedef struct {
    int have;
    mli_dense_shifts sh;
    int64_t bias_top;
    int unclamped;
} mli_dense_plan_memo;

/* What one kernel call decided about the dense path (filled by *_plan). */
typedef struct {
    int packed;              /* 0: plain path */
    int K, N, S, groups, n_pairs, s_pairs;
    int16_t *w_in, *w_st;    /* packed weights: input part, state part */
    int16_t *w_in16, *w_st16; /* small plans (MLI_DENSE_WIDE_MAX): room for 8-bit packed weights
                               * widened to int16 (mli_prv_dense_wide8, l1w->have_wide); else NULL */
    int32_t *x_in, *xlo_in, *x_st, *xlo_st; /* the step's vectors as int32 pairs */
    int64_t *s_in, *s_st;    /* exact row sums of the step */
    int64_t *bias_term;      /* bias << bias_shift in the accumulator's width */
    int fast_epilogue;       /* the shifts suit the branch-free read-out */
    int rows;                /* dot products row by row on W as given (no packing) */
    int16_t *r_in, *rlo_in, *r_st, *rlo_st; /* the step's vectors as zero-padded int16 (rows) */
    int32_t *chunk_in, *chunk_st; /* chunk tables of the direct form (mli_prv_dotprod.h) */
    int direct_in, direct_st;     /* 1: that part uses the direct form (else the split) */
    int hoist;                    /* 1: input sums computed MLI_DENSE_HOIST_STEPS steps at a time */
    int32_t *x_all;               /* those steps' input vectors as int32 pairs */
    int64_t *s_all;               /* their exact input sums, groups * 16 per step */
    int64_t *l1_in, *l1_st;       /* per group: a bound on any row's sum of |w| over the part */
    int unclamped;                /* 1: no partial sum can reach the 40-bit limit, whatever the data */
    int64_t bias_top;             /* the largest |bias_term[k]| */
    mli_dense_l1_memo *l1w;       /* the packed weights' own sums, kept with them */
    mli_dense_plan_memo *memo;    /* the plan's bias-derived fields, kept with the packing */
    void *b_copy;                 /* the bias those were derived from (K weights' bytes) */
} mli_dense_plan;

/* A sequence's input part x_t . W[k][0:N] does not depend on the state, so
 * it is computed for this many steps at once, each weight load serving every
 * step (the sums are exact integers: the order does not change them). */
#define MLI_DENSE_HOIST_STEPS 32

/* Plans whose packed weights (both parts) have at most this many entries
 * get the room for a widened copy (64 KB): with 8-bit weights the AVX2 steps
 * then run the 16-bit dot loops, no widening per load, and the AVX-512 ones
 * fx16's whole-row forms.  (A 64x64 LSTM has 32,768 entries; at 128x128 the
 * widened copy, twice the bytes from L2 a step, measured 4-6 % slower.) */
#define MLI_DENSE_WIDE_MAX 32768

size_t mli_prv_dense_workspace_size(int K, int N, int S);

/* The plan's bounds on a row's sum of |w| (l1_in, l1_st), largest over
 * the groups. */
static inline void mli_prv_dense_l1_max(const mli_dense_plan *plan, int64_t *l1i, int64_t *l1s) {
    int64_t a = 0, b = 0;
    for (int g = 0; g < plan->groups; g++) {
        a = plan->l1_in[g] > a ? plan->l1_in[g] : a;
        b = plan->l1_st[g] > b ? plan->l1_st[g] : b;
    }
    *l1i = a;
    *l1s = b;
}

/* 8-bit packed weights: 1 when w_in16 / w_st16 hold them widened to int16,
 * made now if this packing has not made them yet; 0 when the plan has no
 * room for them (more than MLI_DENSE_WIDE_MAX entries). */
int mli_prv_dense_wide8(const mli_dense_plan *plan);

#define MLI_DENSE_DECL(sfx, io_t, w_t)                                                              \
    void mli_prv_dense_##sfx(const io_t *x, int N, const io_t *h, int S, const w_t *W,             \
                             long row_stride, const w_t *b, int K, mli_dense_shifts sh, io_t *y);  \
    void mli_prv_dense_plan_##sfx(mli_dense_plan *plan, const w_t *W, long row_stride, int K, int N, \
                                  int S, const w_t *b, mli_dense_shifts sh, long steps);           \
    void mli_prv_dense_hoist_##sfx(const mli_dense_plan *plan, const io_t *x, int N, int count);    \
    void mli_prv_dense_step_##sfx(const mli_dense_plan *plan, const io_t *x, int N, const io_t *h,  \
                                  int S, const w_t *W, long row_stride, const w_t *b, int K,       \
                                  mli_dense_shifts sh, const int64_t *s_in_ready, io_t *y);

/* The ready input sums of step t of a `steps`-step sequence (NULL when the
 * plan does not hoist): computed for the next block of steps at each block start. */
#define MLI_DENSE_READY(sfx, io_t)                                                                          \
    static inline const int64_t *mli_prv_dense_ready_##sfx(const mli_dense_plan *plan, const io_t *x, int N, \
                                                           long t, long steps) {                            \
        if (!plan->hoist) return NULL;                                                                      \
        const long j = t % MLI_DENSE_HOIST_STEPS;                                                           \
        if (j == 0)                                                                                         \
            mli_prv_dense_hoist_##sfx(plan, x + t * N, N,                                                   \
                                      (int)(steps - t < MLI_DENSE_HOIST_STEPS ? steps - t : MLI_DENSE_HOIST_STEPS)); \
        return plan->s_all + j * plan->groups * MLI_DOT_GROUP;                                         \
    }

MLI_DENSE_DECL(fx8, int8_t, int8_t)
MLI_DENSE_DECL(fx16, int16_t, int16_t)
MLI_DENSE_DECL(fx8w16d, int16_t, int8_t)
MLI_DENSE_READY(fx8, int8_t)
MLI_DENSE_READY(fx16, int16_t)
MLI_DENSE_READY(fx8w16d, int16_t)

/* The read-out of a step from sums computed by the caller (mlipy_rows.c). */
#define MLI_DENSE_FINISH_DECL(sfx, io_t, w_t)                                                            \
    void mli_prv_dense_finish_##sfx(const mli_dense_plan *plan, const io_t *x, int N, const io_t *h, int S, \
                                    const w_t *W, long row_stride, const w_t *b, int K, mli_dense_shifts sh, \
                                    const int64_t *si, const int64_t *ss, io_t *y);
MLI_DENSE_FINISH_DECL(fx8, int8_t, int8_t)
MLI_DENSE_FINISH_DECL(fx16, int16_t, int16_t)
MLI_DENSE_FINISH_DECL(fx8w16d, int16_t, int8_t)

#endif
