/* The multi-input dense block of SPEC_MLI2.md section 7 (rnn_dense and the
 * gates of LSTM / GRU): each input's exact sum is rounded into the output
 * format on its own, then the parts are added with saturation in input order. */
#include "mli2_prv.h"

void mli2_dense_sums(m2_kind kind, const m2_dense_in *in, int M, int64_t *sums, int64_t *work) {
    switch (kind) {
    case M2_FX16:
        mli2_dot_cols_16_16((const int16_t *)in->x, in->n, (const int16_t *)in->w, in->ws, M, sums);
        break;
    case M2_FX16_FX8:
        mli2_dot_cols_16_8((const int16_t *)in->x, in->n, (const int8_t *)in->w, in->ws, M, sums);
        break;
    default:
        mli2_dot_cols_8_8((const int8_t *)in->x, in->n, (const int8_t *)in->w, in->ws, M, sums);
        if (in->fx.zp != 0) {
            mli2_colsum_8((const int8_t *)in->w, in->n, in->ws, M, work);
            for (int o = 0; o < M; o++) sums[o] += (int64_t)(-in->fx.zp) * work[o];
        }
    }
}

int64_t mli2_dense_bias(m2_kind kind, const void *bias, int o, int bs) {
    switch (kind) {
    case M2_FX16: return m2_wrap32(m2_shl(((const int16_t *)bias)[o], bs, 64)); /* [x86] truncated to 32 bits */
    case M2_FX16_FX8: return m2_shl(((const int8_t *)bias)[o], bs, 32);
    default: return m2_bias_preround(((const int32_t *)bias)[o]);
    }
}

void mli2_dense_block(m2_kind kind, const m2_dense_in *ins, int n_in, const void *bias, int fb, int M, m2_fmt out,
                      void *dst, int64_t *work) {
    int64_t *res = work, *sums = work + M, *tmp = work + 2 * M;
    const int bs = ins[0].fx.shift + ins[0].w_shift - fb;
    for (int o = 0; o < M; o++) res[o] = 0;
    for (int i = 0; i < n_in; i++) {
        const m2_dense_in *in = &ins[i];
        mli2_dense_sums(kind, in, M, sums, tmp);
        const int sh = in->fx.shift + in->w_shift - out.shift;
        m2_mult mult = {0, 0};
        if (kind == M2_SA8) mult = m2_mult_of(in->fx, out, in->w_scale, in->w_shift);
        for (int o = 0; o < M; o++) {
            const int64_t acc = sums[o] + (i == 0 ? mli2_dense_bias(kind, bias, o, bs) : 0);
            res[o] = mli2_dense_part(kind, acc, sh, mult, res[o]);
        }
    }
    if (kind == M2_SA8) {
        int8_t *d = (int8_t *)dst;
        for (int o = 0; o < M; o++) d[o] = m2_sat8(m2_add(m2_sat16(res[o]), out.zp, 16));
    } else {
        int16_t *d = (int16_t *)dst;
        for (int o = 0; o < M; o++) d[o] = m2_sat16(res[o]);
    }
}

/* The two-input block (input 0 carries the bias) from ready exact sums:
 * s0 + bt for input 0 (bt: its bias terms), s1 for input 1; the same
 * rounding and saturation steps as mli2_dense_block, one loop per kind. */
#define FROM_SUMS_LOOP(K, STORE)                                            \
    for (int o = 0; o < M; o++) {                                           \
        int64_t r = mli2_dense_part(K, s0[o] + bt[o], sh0, m0, 0);          \
        r = mli2_dense_part(K, s1[o], sh1, m1, r);                          \
        STORE;                                                              \
    }
void mli2_dense_from_sums(m2_kind kind, const m2_dense_in ins[2], const int64_t *s0, const int64_t *bt,
                          const int64_t *s1, int M, m2_fmt out, void *dst) {
    const int sh0 = ins[0].fx.shift + ins[0].w_shift - out.shift, sh1 = ins[1].fx.shift + ins[1].w_shift - out.shift;
    m2_mult m0 = {0, 0}, m1 = {0, 0};
    int16_t *d16 = (int16_t *)dst;
    int8_t *d8 = (int8_t *)dst;
    switch (kind) {
    case M2_FX16: FROM_SUMS_LOOP(M2_FX16, d16[o] = m2_sat16(r)) break;
    case M2_FX16_FX8: FROM_SUMS_LOOP(M2_FX16_FX8, d16[o] = m2_sat16(r)) break;
    default:
        m0 = m2_mult_of(ins[0].fx, out, ins[0].w_scale, ins[0].w_shift);
        m1 = m2_mult_of(ins[1].fx, out, ins[1].w_scale, ins[1].w_shift);
        FROM_SUMS_LOOP(M2_SA8, d8[o] = m2_sat8(m2_add(m2_sat16(r), out.zp, 16)))
    }
}
