/* The fused element-wise step of the LSTM and GRU cells: per output, the
 * gates' read-out from the exact sums (SPEC_MLI2.md 7), their activations
 * and the element steps of 11 / 12 in one pass, with every constant fixed
 * per call (mli2_lanes.h).  A plan is made for the call's formats; when a
 * constant falls outside the range where the branch-free forms are exact,
 * plan.ok is 0 and the cell runs its general per-step code instead. */
#ifndef MLI2_CELLFAST_H
#define MLI2_CELLFAST_H

#include "mli2_lanes.h"

/* sa8 element-wise constants in their branch-free form */
typedef struct {
    int32_t za, zb, zo, c;
    m2_rs pre, post;
} m2_samul_l;
typedef struct {
    int32_t za, zb, zo, ca, cb;
    m2_rs ra, rb;
} m2_saadd_l;

typedef struct {
    int ok, up; /* up: the call's rounding mode */
    m2_kind kind;
    m2_rs r0[4], r1[4];    /* read-out rounding of input 0 / 1 per gate (FX: the same for all) */
    int64_t m0[4], m1[4];  /* sa8: the read-out multipliers */
    int32_t gzp;           /* sa8: the gates' zero point */
    /* FX */
    m2_lutl sig, tnh, act; /* act: the cell's activation (act_none: none) */
    int act_none;
    m2_rs rcf, rgi, radd, rout;
    int32_t la, lb;        /* fx_add alignment factors (2^shift) */
    /* sa8 */
    const int32_t *sig8, *tnh8, *act8, *om8; /* 256-entry tables at [e + 128] */
    const int16_t *sig16, *tnh16, *act16, *om16; /* the same as int16 (AVX-512 passes; NULL: not made) */
    m2_samul_l mul_a, mul_b, mul_c;
    m2_saadd_l add_a;
    int om_not; /* sa8 GRU: the 1 - z table holds ~z for every z (its format's own subtraction
                 * rounds nothing): the SIMD steps take ~z for the lookup */
} m2_cf_plan;

/* Read-out constants of gate g from its two dense inputs (after
 * mli2_cell_gate_inputs) and the gates' output format; 0 if out of range. */
int mli2_cf_readout(m2_cf_plan *p, int g, const m2_dense_in ins[2], m2_fmt out);
/* fx_mul(a, fa, b, fb, fo) and fx_add(a, fa, b, fb, fo) constants (0 if out of range) */
int mli2_cf_fxmul(m2_rs *r, int fa, int fb, int fo, int up);
int mli2_cf_fxadd(m2_rs *r, int32_t *la, int32_t *lb, int fa, int fb, int fo, int up);
int mli2_cf_samul(m2_samul_l *l, const m2_sa_mul_c *p, int up);
int mli2_cf_saadd(m2_saadd_l *l, const m2_sa_add_c *p, int up);

/* LSTM: gates at s_in + g * Mp (input sums), bt + g * M (bias terms),
 * s_h + g * Mp (recurrent sums); c (cell, updated) and y (output) are
 * int16 for FX kinds and int8 for sa8. */
void mli2_cf_lstm_step(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                       const int64_t *s_h, void *c, void *y);
/* GRU first part: z, r (after the sigmoid) into zr (gate 0 at 0, 1 at M)
 * and rh = r * h. */
void mli2_cf_gru_zr(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                    const int64_t *s_h, const void *h, void *zr, void *rh);
/* GRU second part: the new gate (gate 2) and y from z and h. */
void mli2_cf_gru_out(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                     const int64_t *s_h, const void *h, const void *zr, void *y);

/* The same steps written for AVX2 (mli2_cellavx2.c), taken on the AVX2
 * path where mli2_cf_have_avx2() (x86 builds with GCC or Clang). */
int mli2_cf_have_avx2(void);
void mli2_cf_lstm_step_avx2(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                            const int64_t *s_h, void *c, void *y);
void mli2_cf_gru_zr_avx2(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                         const int64_t *s_h, const void *h, void *zr, void *rh);
void mli2_cf_gru_out_avx2(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                          const int64_t *s_h, const void *h, const void *zr, void *y);

/* The sa8 steps written for AVX-512 (mli2_cellavx512.c), taken on the
 * AVX-512 path where mli2_cf_sa8_avx512_ok(plan, gru) (x86 builds with GCC
 * or Clang; the others return 0 and have no such steps). */
int mli2_cf_sa8_avx512_ok(const m2_cf_plan *p, int gru);
void mli2_cf_lstm_step_sa8_avx512(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                                  const int64_t *s_h, void *c, void *y);
void mli2_cf_gru_zr_sa8_avx512(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                               const int64_t *s_h, const void *h, void *zr, void *rh);
void mli2_cf_gru_out_sa8_avx512(const m2_cf_plan *p, int M, long Mp, const int64_t *s_in, const int64_t *bt,
                                const int64_t *s_h, const void *h, const void *zr, void *y);

#endif /* MLI2_CELLFAST_H */
