/* Float32 recurrent sequences (beyond MLI): mlipy_float_rnn_sequence.
 *
 * The whole-sequence runner the OpenVINO IR reader uses for LSTMSequence /
 * GRUSequence / RNNSequence in float32 (mli/ir/ops/recurrent.py).  MLI has no
 * float kernels; this is an mli-py extension.  It computes the same formulas,
 * on the same operands and in the same order of element-wise operations, as
 * the numpy runners of recurrent.py, so the two differ only by the rounding of
 * the sums and of exp/tanh:
 *
 *  - sums: every matrix product is sum_{k=0..K-1} a[k]*w[j][k], accumulated
 *    from 0.0f upward in k, one float multiply then one float add per term
 *    (no FMA: the build has -ffp-contract=off and no -ffast-math).  Lanes of a
 *    vector each hold one output j, so any vector width gives the same bits.
 *    The input part x_t . W for all steps of a row is computed before its
 *    recurrence (the same sums, hoisted).
 *  - gates: (x.W + h.R) + b, then clip to [-clip, clip] when clip > 0 (NaN
 *    stays NaN, as np.clip keeps it).
 *  - sigmoid(z) = (z < 0 ? e : 1) / (1 + e) with e = exp(-|z|);
 *    tanh(x) = sign(x) * -m / (2 + m) with m = expm1(-2|x|);
 *    relu(z) = z < 0 ? 0 : z (NaN and -0 kept, as np.maximum).  exp and expm1
 *    are computed here (below) in plain float arithmetic, within about 1 ulp,
 *    rather than by libm's expf/tanhf: the library calls cost 20-80 ns each
 *    on this machine, which made them most of a step, and they do not
 *    vectorise.  numpy has its own exp/tanh, so results differ from the numpy
 *    runners by a few ulp per step.
 *  - LSTM (gates f, i, c, o): c' = (f*c) + (i*g), h' = o*tanh(c').
 *    GRU (gates z, r, n): n = tanh(clip((x.Wn + r*(h.Rn + b_rn)) + b_n)) with
 *    linear_before_reset, else tanh(clip((x.Wn + (r*h).Rn) + b_n));
 *    h' = ((1-z)*n) + (z*h).  RNN: h' = act(clip((x.W + h.R) + b)).
 *  - lengths: row b runs steps k < len[b]; forward step k is time k, reverse
 *    step k is time len[b]-1-k (its valid part read backwards).  y is 0 at
 *    the times past len[b]; the final states are those after the last valid
 *    step (the initial ones for len 0).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlipy_ext.h"
#include "../private/mli_prv_isa.h"

/* Time steps whose input products are computed at once (bounds the scratch). */
#define CHUNK 64

/* out[j] = sum_k a[k] * wt[k*ldw + j], j < n, k < K (wt: W transposed). */
MLIPY_ALWAYS_INLINE void matvec_body(const float *restrict a, int K, const float *restrict wt,
                                     size_t ldw, int n, float *restrict out) {
    for (int j = 0; j < n; j++) out[j] = 0.0f;
    for (int k = 0; k < K; k++) {
        const float ak = a[k];
        const float *restrict w = wt + (size_t)k * ldw;
        for (int j = 0; j < n; j++) out[j] = out[j] + ak * w[j];
    }
}
MLIPY_MULTIVERSION_VOID(matvec, (const float *restrict a, int K, const float *restrict wt,
                                  size_t ldw, int n, float *restrict out),
                   (a, K, wt, ldw, n, out))

/* z = (xw + hr) + b, clipped when clip > 0 */
MLIPY_ALWAYS_INLINE void gate_sum_body(const float *restrict xw, const float *restrict hr,
                                       const float *restrict b, int n, float clip,
                                       float *restrict z) {
    for (int j = 0; j < n; j++) z[j] = (xw[j] + hr[j]) + b[j];
    if (clip > 0.0f) {
        const float lo = -clip;
        for (int j = 0; j < n; j++) {
            float v = z[j];
            v = v < lo ? lo : v;
            z[j] = v > clip ? clip : v;
        }
    }
}
MLIPY_MULTIVERSION_VOID(gate_sum, (const float *restrict xw, const float *restrict hr,
                                    const float *restrict b, int n, float clip,
                                    float *restrict z),
                   (xw, hr, b, n, clip, z))

/* exp and tanh in plain float arithmetic (no libm call, so that the loops
 * vectorise; every ISA path computes the same IEEE operations, so the same
 * bits).  expm1_small(r) = r + r^2 (1/2! + r (1/3! + ... + r/8!)) (Taylor,
 * Horner from the highest term), for |r| <= ln2/2 where the remainder is below
 * 1e-9 relative.  exp_neg(y) for y <= 0: y = n ln2 + r (n = nearest integer to
 * y/ln2, r by Cody-Waite with ln2 = LN2_HI + LN2_LO), then
 * (1 + expm1_small(r)) * 2^(n/2) * 2^(n - n/2) (two scalings, so subnormal
 * results round once); y < -104 counts as -104 (a result that rounds to 0).
 * NaN propagates.  Both agree with correctly rounded values to about 1 ulp. */
#define LN2_HI 0.693359375f
#define LN2_LO (-2.12194440e-4f)
#define LOG2E 1.44269504f
#define ROUND_MAGIC 12582912.0f /* 1.5 * 2^23: adding it rounds to an integer */

typedef union { float f; uint32_t u; } fbits;

static inline float expm1_small(float r) {
    float p = 2.48015873e-5f;                  /* 1/8! */
    p = 1.98412698e-4f + r * p;                /* 1/7! */
    p = 1.38888889e-3f + r * p;                /* 1/6! */
    p = 8.33333333e-3f + r * p;                /* 1/5! */
    p = 4.16666667e-2f + r * p;                /* 1/4! */
    p = 1.66666667e-1f + r * p;                /* 1/3! */
    p = 0.5f + r * p;                          /* 1/2! */
    return r + (r * r) * p;
}

static inline float exp_neg(float y) {
    y = y < -104.0f ? -104.0f : y;
    fbits t, s1, s2;
    t.f = y * LOG2E + ROUND_MAGIC;
    const float kf = t.f - ROUND_MAGIC;
    const int32_t n = (int32_t)(t.u - 0x4B400000u);       /* kf as an integer, in [-151, 0] */
    const float r = (y - kf * LN2_HI) - kf * LN2_LO;
    const int32_t n1 = n / 2, n2 = n - n1;
    s1.u = (uint32_t)(n1 + 127) << 23;
    s2.u = (uint32_t)(n2 + 127) << 23;
    return ((1.0f + expm1_small(r)) * s1.f) * s2.f;
}

/* sigmoid(z) = (z < 0 ? e : 1) / (1 + e), e = exp(-|z|) (the numpy runners' form) */
static inline float sigmoid1(float z) {
    const float e = exp_neg(-fabsf(z));
    return (z < 0.0f ? e : 1.0f) / (1.0f + e);
}

/* tanh(x) = sign(x) * -m / (2 + m), m = expm1(-2|x|): expm1_small for 2|x| <= ln2/2
 * (no cancellation near 0), else exp_neg(-2|x|) - 1 */
static inline float tanh1(float x) {
    const float a2 = -2.0f * fabsf(x);
    const float m = a2 >= -0.34657359f ? expm1_small(a2) : exp_neg(a2) - 1.0f;
    return copysignf(-m / (2.0f + m), x);
}

MLIPY_ALWAYS_INLINE void sigmoid_vec_body(float *restrict v, int n) {
    for (int j = 0; j < n; j++) v[j] = sigmoid1(v[j]);
}
MLIPY_MULTIVERSION_VOID(sigmoid_vec, (float *restrict v, int n), (v, n))

MLIPY_ALWAYS_INLINE void tanh_vec_body(float *restrict v, int n) {
    for (int j = 0; j < n; j++) v[j] = tanh1(v[j]);
}
MLIPY_MULTIVERSION_VOID(tanh_vec, (float *restrict v, int n), (v, n))

static void act_apply(int act, float *v, int n) {
    switch (act) {
    case MLIPY_FRNN_SIGMOID:
        sigmoid_vec(v, n);
        break;
    case MLIPY_FRNN_RELU:
        for (int j = 0; j < n; j++) v[j] = v[j] < 0.0f ? 0.0f : v[j];
        break;
    default:
        tanh_vec(v, n);
        break;
    }
}

typedef struct {
    int cell, act, lbr, N, M, G;
    float clip;
    const float *wt, *rt, *b; /* W^T [N][G*M], R^T [M][G*M], bias */
    float *xw, *hr, *z, *t;   /* scratch: [CHUNK][G*M], [G*M], [G*M], [2*M] */
} frnn_ctx;

/* One step of one row: h (and c) updated in place from xw (x_t . W). */
static void frnn_step(const frnn_ctx *s, const float *xw, float *h, float *c) {
    const int M = s->M, GM = s->G * s->M;
    float *z = s->z, *hr = s->hr, *t = s->t;
    if (s->cell == MLIPY_FRNN_LSTM) {
        matvec(h, M, s->rt, (size_t)GM, GM, hr);
        gate_sum(xw, hr, s->b, GM, s->clip, z);
        float *t2 = t + M;
        sigmoid_vec(z, 2 * M);                                                  /* f, i */
        tanh_vec(z + 2 * M, M);                                                 /* c */
        sigmoid_vec(z + 3 * M, M);                                              /* o */
        for (int j = 0; j < M; j++) c[j] = (z[j] * c[j]) + (z[M + j] * z[2 * M + j]);
        memcpy(t2, c, (size_t)M * sizeof(float));
        tanh_vec(t2, M);
        for (int j = 0; j < M; j++) h[j] = z[3 * M + j] * t2[j];
    } else if (s->cell == MLIPY_FRNN_GRU) {
        matvec(h, M, s->rt, (size_t)GM, s->lbr ? GM : 2 * M, hr);
        gate_sum(xw, hr, s->b, 2 * M, s->clip, z);
        sigmoid_vec(z, 2 * M);                                                  /* z, r */
        float *n = z + 2 * M;
        const float *bn = s->b + 2 * M;
        if (s->lbr) {
            const float *brn = s->b + 3 * M;
            for (int j = 0; j < M; j++)
                n[j] = (xw[2 * M + j] + z[M + j] * (hr[2 * M + j] + brn[j])) + bn[j];
        } else {
            for (int j = 0; j < M; j++) t[j] = z[M + j] * h[j];
            matvec(t, M, s->rt + 2 * M, (size_t)GM, M, hr + 2 * M);
            for (int j = 0; j < M; j++) n[j] = (xw[2 * M + j] + hr[2 * M + j]) + bn[j];
        }
        if (s->clip > 0.0f) {
            const float lo = -s->clip, hi = s->clip;
            for (int j = 0; j < M; j++) {
                float v = n[j] < lo ? lo : n[j];
                n[j] = v > hi ? hi : v;
            }
        }
        tanh_vec(n, M);
        for (int j = 0; j < M; j++) h[j] = ((1.0f - z[j]) * n[j]) + (z[j] * h[j]);
    } else {
        matvec(h, M, s->rt, (size_t)M, M, hr);
        gate_sum(xw, hr, s->b, M, s->clip, z);
        act_apply(s->act, z, M);
        memcpy(h, z, (size_t)M * sizeof(float));
    }
}

int mlipy_float_rnn_sequence(int cell, int act, int lbr, float clip, int B, int T, int N, int M,
                             int nd, const int *reverse, const float *x, const float *h0,
                             const float *c0, const int64_t *lengths, const float *w,
                             const float *r, const float *bias, float *y, float *h_out,
                             float *c_out) {
    const int G = cell == MLIPY_FRNN_LSTM ? 4 : cell == MLIPY_FRNN_GRU ? 3 : 1;
    const int NB = (cell == MLIPY_FRNN_GRU && lbr) ? 4 : G;
    const int lstm = cell == MLIPY_FRNN_LSTM;
    if (cell < MLIPY_FRNN_RNN || cell > MLIPY_FRNN_LSTM || act < MLIPY_FRNN_TANH ||
        act > MLIPY_FRNN_RELU || B < 0 || T < 0 || N < 0 || M <= 0 || nd < 1 || nd > 2 ||
        !(clip >= 0.0f) || (lstm && (!c0 || !c_out)))
        return MLIPY_FRNN_EINVAL;
    /* every size below in size_t, checked against overflow */
    const size_t GM = (size_t)G * (size_t)M;
    /* the scratch (W^T, R^T, CHUNK input products, a few vectors) must be addressable */
    const size_t lim = SIZE_MAX / sizeof(float) / 8;
    if ((size_t)N + (size_t)M + CHUNK + 4 > lim / GM) return MLIPY_FRNN_EINVAL;
    for (int b = 0; b < B; b++)
        if (lengths[b] < 0 || lengths[b] > T) return MLIPY_FRNN_EINVAL;
    const size_t n_wt = (size_t)N * GM, n_rt = (size_t)M * GM;
    const size_t n_scr = n_wt + n_rt + (size_t)CHUNK * GM + 2 * GM + 4 * (size_t)M;
    float *scr = (float *)malloc(n_scr * sizeof(float));
    if (!scr) return MLIPY_FRNN_ENOMEM;
    frnn_ctx s;
    s.cell = cell, s.act = act, s.lbr = lbr, s.N = N, s.M = M, s.G = G, s.clip = clip;
    float *wt = scr, *rt = wt + n_wt;
    s.wt = wt, s.rt = rt;
    s.xw = rt + n_rt, s.hr = s.xw + (size_t)CHUNK * GM, s.z = s.hr + GM, s.t = s.z + GM;
    const size_t Mz = (size_t)M, Nz = (size_t)N, Tz = (size_t)T;
    float *h = s.t + 2 * Mz, *c = h + Mz;
    const size_t row = Mz * sizeof(float);
    const size_t ys_b = (size_t)nd * Tz * Mz; /* y [B][nd][T][M] */
    const size_t st_b = (size_t)nd * Mz;      /* states [B][nd][M] */
    for (size_t d = 0; d < (size_t)nd; d++) {
        const float *wd = w + d * GM * Nz, *rd = r + d * GM * Mz;
        /* transpose W [GM][N] and R [GM][M] so that the products run along j */
        for (size_t j = 0; j < GM; j++) {
            for (size_t k = 0; k < Nz; k++) wt[k * GM + j] = wd[j * Nz + k];
            for (size_t k = 0; k < Mz; k++) rt[k * GM + j] = rd[j * Mz + k];
        }
        s.b = bias + d * (size_t)NB * Mz;
        for (size_t b = 0; b < (size_t)B; b++) {
            const size_t len = (size_t)lengths[b];
            const float *xb = x + b * Tz * Nz;
            float *yb = y + b * ys_b + d * Tz * Mz;
            memcpy(h, h0 + b * st_b + d * Mz, row);
            if (lstm) memcpy(c, c0 + b * st_b + d * Mz, row);
            for (size_t k0 = 0; k0 < len; k0 += CHUNK) {
                const size_t kn = len - k0 < CHUNK ? len - k0 : CHUNK;
                for (size_t i = 0; i < kn; i++) {
                    const size_t t = reverse[d] ? len - 1 - (k0 + i) : k0 + i;
                    matvec(xb + t * Nz, N, wt, GM, (int)GM, s.xw + i * GM);
                }
                for (size_t i = 0; i < kn; i++) {
                    const size_t t = reverse[d] ? len - 1 - (k0 + i) : k0 + i;
                    frnn_step(&s, s.xw + i * GM, h, c);
                    memcpy(yb + t * Mz, h, row);
                }
            }
            if (len < Tz) memset(yb + len * Mz, 0, (Tz - len) * row);
            memcpy(h_out + b * st_b + d * Mz, h, row);
            if (lstm) memcpy(c_out + b * st_b + d * Mz, c, row);
        }
    }
    free(scr);
    return 0;
}
