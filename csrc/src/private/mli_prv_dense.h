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

typedef struct {
    int bias_shift;  /* f_in + f_w - f_b */
    int in_to_state; /* f_in - f_h (unused when S == 0) */
    int out_shift;   /* f_h + f_w - f_o (FC: f_in + f_w - f_o) */
} mli_dense_shifts;

/* What one kernel call decided about the dense path (filled by *_plan). */
typedef struct {
    int packed;              /* 0: plain path */
    int K, N, S, groups, n_pairs, s_pairs;
    int16_t *w_in, *w_st;    /* packed weights: input part, state part */
    int32_t *x_in, *xlo_in, *x_st, *xlo_st; /* the step's vectors as int32 pairs */
    int64_t *s_in, *s_st;    /* exact row sums of the step */
    int64_t *bias_term;      /* bias << bias_shift in the accumulator's width */
    int fast_epilogue;       /* the shifts suit the branch-free read-out */
    int rows;                /* dot products row by row on W as given (no packing) */
    int16_t *r_in, *rlo_in, *r_st, *rlo_st; /* the step's vectors as zero-padded int16 (rows) */
} mli_dense_plan;

size_t mli_prv_dense_workspace_size(int K, int N, int S);

#define MLI_DENSE_DECL(sfx, io_t, w_t)                                                              \
    void mli_prv_dense_##sfx(const io_t *x, int N, const io_t *h, int S, const w_t *W,             \
                             long row_stride, const w_t *b, int K, mli_dense_shifts sh, io_t *y);  \
    void mli_prv_dense_plan_##sfx(mli_dense_plan *plan, const w_t *W, long row_stride, int K, int N, \
                                  int S, const w_t *b, mli_dense_shifts sh, long steps);           \
    void mli_prv_dense_step_##sfx(const mli_dense_plan *plan, const io_t *x, int N, const io_t *h,  \
                                  int S, const w_t *W, long row_stride, const w_t *b, int K,       \
                                  mli_dense_shifts sh, io_t *y);
MLI_DENSE_DECL(fx8, int8_t, int8_t)
MLI_DENSE_DECL(fx16, int16_t, int16_t)
MLI_DENSE_DECL(fx8w16d, int16_t, int8_t)

#endif
