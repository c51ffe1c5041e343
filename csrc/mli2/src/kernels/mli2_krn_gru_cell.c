/* GRU cell (SPEC_MLI2.md 12): gates z, r, n; the reset gate multiplies h
 * before the new gate's weight product; a whole sequence per call. */
#include <stdlib.h>
#include <string.h>
#include "mli_api.h"
#include "mli2_prv.h"
#include "mli2_cellfast.h"

/* The tables of the fused steps (one call's) */
typedef struct {
    m2_lut_tab st, tt;
    int32_t sig8[256], tnh8[256], om8[256];
    int16_t sig16[256], tnh16[256], om16[256];
} gru_tabs;

/* sa8: 1 - z for every int8 z of the sigmoid's format, a function of the
 * rounding mode alone: made once per mode and process (256 saturating
 * steps were half of a one-step call's own time), then copied. */
static int8_t gru_one_minus_tab[2][256];
static int gru_one_minus_state[2]; /* 0 none, 1 being made, 2 made */

static void gru_one_minus(int8_t out[256]) {
    const int up = mli2_round_up != 0;
#if defined(__GNUC__) || defined(__clang__)
    if (__atomic_load_n(&gru_one_minus_state[up], __ATOMIC_ACQUIRE) == 2) {
        memcpy(out, gru_one_minus_tab[up], 256);
        return;
    }
#endif
    const m2_sa_add_c sub_one = m2_sa_add_prep(M2_FMT_SIGM_SA8, M2_FMT_SIGM_SA8, M2_FMT_SIGM_SA8);
    for (int e = -128; e < 128; e++) out[e + 128] = m2_sa_addsub(&sub_one, 127, e, 1);
#if defined(__GNUC__) || defined(__clang__)
    int none = 0; /* one thread keeps it; the others made their own copy meanwhile */
    if (__atomic_compare_exchange_n(&gru_one_minus_state[up], &none, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        memcpy(gru_one_minus_tab[up], out, 256);
        __atomic_store_n(&gru_one_minus_state[up], 2, __ATOMIC_RELEASE);
    }
#endif
}

/* The fused steps' plan for state format fh; 0: the general code runs. */
static int gru_plan(m2_cf_plan *p, gru_tabs *tb, int tabs_ok, m2_kind kind, const mli_tensor *weights_in,
                    const mli_tensor *weights_out, int N, m2_fmt fx, int M, m2_fmt fh, m2_fmt fir, m2_fmt fo,
                    const m2_lut *tl, const m2_lut *sl, const int8_t *sig_g, const int8_t *tanh_g,
                    const int8_t *one_minus, const m2_sa_mul_c *mul_nz) {
    const int up = mli2_round_up;
    memset(p, 0, sizeof(*p));
    p->kind = kind;
    for (int g = 0; g < 3; g++) {
        m2_dense_in ins[2];
        mli2_cell_gate_inputs(kind, weights_in, weights_out, g, g == 2, NULL, N, fx, NULL, M, fh, ins);
        if (!mli2_cf_readout(p, g, ins, fir)) return 0;
    }
    if (kind == M2_SA8) {
        for (int e = 0; e < 256; e++) {
            tb->sig8[e] = sig_g[e], tb->tnh8[e] = tanh_g[e], tb->om8[e] = one_minus[e];
            tb->sig16[e] = sig_g[e], tb->tnh16[e] = tanh_g[e], tb->om16[e] = one_minus[e];
        }
        p->sig8 = tb->sig8, p->tnh8 = tb->tnh8, p->om8 = tb->om8;
        p->sig16 = tb->sig16, p->tnh16 = tb->tnh16, p->om16 = tb->om16, p->act16 = tb->sig16; /* act16: not used */
        p->om_not = 1;
        for (int e = 0; e < 256; e++) p->om_not &= one_minus[e] == (int8_t)~(e - 128);
        const m2_sa_mul_c mul_rh = m2_sa_mul_prep(M2_FMT_SIGM_SA8, fh, fh);
        const m2_sa_mul_c mul_hz = m2_sa_mul_prep(fh, M2_FMT_SIGM_SA8, fh);
        const m2_sa_add_c add_y = m2_sa_add_prep(fo, fh, fo);
        return mli2_cf_samul(&p->mul_a, &mul_rh, up) && mli2_cf_samul(&p->mul_b, &mul_hz, up) &&
               mli2_cf_samul(&p->mul_c, mul_nz, up) && mli2_cf_saadd(&p->add_a, &add_y, up);
    }
    if (!tabs_ok || !m2_lutl_make(sl, &tb->st, fir.shift, up, &p->sig) || !m2_lutl_make(tl, &tb->tt, fir.shift, up, &p->tnh))
        return 0;
    p->act = p->sig; /* not used */
    /* rcf: r * h, rgi: h * z, rout: n * (1 - z), radd: that plus h * z */
    return mli2_cf_fxmul(&p->rcf, 15, fh.shift, fh.shift, up) && mli2_cf_fxmul(&p->rgi, fh.shift, 15, fh.shift, up) &&
           mli2_cf_fxmul(&p->rout, 15, 15, fo.shift, up) &&
           mli2_cf_fxadd(&p->radd, &p->la, &p->lb, fo.shift, fh.shift, fo.shift, up);
}

static mli_status gru_run(m2_kind kind, const mli_tensor *in, const mli_tensor *prev_out,
                          const mli_tensor *weights_in, const mli_tensor *weights_out, const mli_tensor *bias,
                          const mli_lut *tanh_lut, const mli_lut *sigm_lut, const mli_rnn_cell_cfg *cfg,
                          mli_tensor *out, const char *fn) {
    mli2_begin(fn);
    M2_TRY(mli2_cell_check(kind, 3, in, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, NULL, out));
    const int T = (int)in->shape[0], N = (int)in->shape[1], M = (int)mli2_count(prev_out);
    const int all = cfg->results == RNN_OUT_ALL, backward = cfg->direction == RNN_DIR_BACKWARD;
    const int sa = kind == M2_SA8, esz = sa ? 1 : 2;
    m2_seq seq;
    char *buf = (char *)malloc((size_t)M * esz * 6);
    if (!buf || !mli2_seq_init(&seq, kind, 3, in, weights_in, weights_out, out, backward)) {
        free(buf);
        return mli2_refuse(MLI_STATUS_NOT_ENGH_MEM, "", "out of host memory");
    }
    char *h = buf, *gates = buf + (size_t)M * esz, *rh = buf + (size_t)M * esz * 4, *y = buf + (size_t)M * esz * 5;
    memcpy(h, prev_out->data.mem.ptr, (size_t)M * esz);
    const m2_lut tl = m2_lut_of(tanh_lut), sl = m2_lut_of(sigm_lut);
    const m2_fmt fx = mli2_fmt(in, 0), fo = mli2_fmt(out, 0);
    m2_fmt fh = mli2_fmt(prev_out, 0);
    const m2_fmt fir = sa ? m2_fmt_make(0, 21, 9) : m2_fmt_make(0, 1, m2_imin(11, fx.shift + weights_in->el_params.fx.frac_bits));
    const int fb = sa ? 0 : bias->el_params.fx.frac_bits;
    const m2_sa_mul_c mul_nz = m2_sa_mul_prep(M2_FMT_TANH_SA8, M2_FMT_SIGM_SA8, fo);
    /* sa8: every activation input is an int8 of the gates' fixed format */
    int8_t sig_g[256], tanh_g[256];
    int8_t one_minus[256]; /* 1 - z, a function of z alone */
    if (sa) {
        mli2_act_sa8_table_kept(&sl, fir, 1, sig_g), mli2_act_sa8_table_kept(&tl, fir, 0, tanh_g);
        gru_one_minus(one_minus);
    }
    for (int g = 0; g < 3; g++) {
        m2_dense_in ins[2];
        mli2_cell_gate_inputs(kind, weights_in, weights_out, g, g == 2, NULL, N, fx, NULL, M, fh, ins);
        mli2_seq_bias(&seq, g, &ins[0], bias, fb);
    }
    gru_tabs *tabs = (gru_tabs *)malloc(sizeof(gru_tabs));
    const int tabs_ok = tabs && !sa && m2_lut_tab_make(&sl, &tabs->st) && m2_lut_tab_make(&tl, &tabs->tt);
    m2_cf_plan plan;
    int fast = 0;
    for (int t = 0; t < T; t++) {
        if (t <= 1) /* out over in takes the general step (z * h goes through out's row, see below) */
            fast = tabs && seq.hoist != 1 && gru_plan(&plan, tabs, tabs_ok, kind, weights_in, weights_out, N, fx, M, fh, fir, fo, &tl, &sl,
                                    sig_g, tanh_g, one_minus, &mul_nz);
        if (mli2_poll_now(t)) { /* the steps done so far stay in out */
            free(tabs);
            mli2_cell_set_out(out, all ? t : 1, M);
            mli2_seq_free(&seq), free(buf);
            return mli2_fail(MLIPY2_STATUS_INTERRUPTED, "", "interrupted");
        }
        const int64_t *s_in = mli2_seq_in_sums(&seq, in, t, fx.zp);
        m2_dense_in ins[2];
        mli2_seq_h_sums(&seq, h, fh.zp, 0, 2);
        if (fast) {
            mli2_cf_gru_zr(&plan, M, seq.Mp, s_in, seq.bt, seq.s_h, h, gates, rh);
            mli2_seq_h_sums(&seq, rh, fh.zp, 2, 3);
            mli2_cf_gru_out(&plan, M, seq.Mp, s_in, seq.bt, seq.s_h, h, gates, y);
        } else {
            for (int g = 0; g < 2; g++) {
                mli2_cell_gate_inputs(kind, weights_in, weights_out, g, 0, NULL, N, fx, h, M, fh, ins);
                mli2_dense_from_sums(kind, ins, s_in + (size_t)g * seq.Mp, seq.bt + (size_t)g * M,
                                     seq.s_h + (size_t)g * seq.Mp, M, fir, gates + (size_t)g * M * esz);
            }
            /* z, r; then r * h, the input of the new gate's recurrent part */
            if (sa) {
                int8_t *z = (int8_t *)gates, *r = z + M, *hh = (int8_t *)h, *rhh = (int8_t *)rh;
                const m2_sa_mul_c mul_rh = m2_sa_mul_prep(M2_FMT_SIGM_SA8, fh, fh);
                for (int o = 0; o < M; o++) {
                    z[o] = sig_g[z[o] + 128];
                    r[o] = sig_g[r[o] + 128];
                    rhh[o] = m2_sa_mul(&mul_rh, r[o], hh[o]);
                }
            } else {
                int16_t *z = (int16_t *)gates, *r = z + M, *hh = (int16_t *)h, *rhh = (int16_t *)rh;
                for (int o = 0; o < M; o++) {
                    z[o] = m2_lut_lookup(&sl, z[o], fir.shift);
                    r[o] = m2_lut_lookup(&sl, r[o], fir.shift);
                    rhh[o] = m2_fx_mul(r[o], 15, hh[o], fh.shift, fh.shift);
                }
            }
            if (seq.hoist == 1) { /* out over in: MLI keeps z * h in the step's output row, then reads the input */
                char *row = (char *)out->data.mem.ptr + (size_t)(all ? t : 0) * M * esz;
                for (int o = 0; o < M; o++) {
                    if (sa) {
                        const m2_sa_mul_c mul_hz = m2_sa_mul_prep(fh, M2_FMT_SIGM_SA8, fh);
                        ((int8_t *)row)[o] = m2_sa_mul(&mul_hz, ((int8_t *)h)[o], ((int8_t *)gates)[o]);
                    } else {
                        const int16_t zh = m2_fx_mul(((int16_t *)h)[o], fh.shift, ((int16_t *)gates)[o], 15, fh.shift);
                        memcpy(row + (size_t)o * 2, &zh, 2);
                    }
                }
                s_in = mli2_seq_in_sums_reread(&seq, in, t, fx.zp);
            }
            mli2_seq_h_sums(&seq, rh, fh.zp, 2, 3);
            mli2_cell_gate_inputs(kind, weights_in, weights_out, 2, 1, NULL, N, fx, rh, M, fh, ins);
            mli2_dense_from_sums(kind, ins, s_in + (size_t)2 * seq.Mp, seq.bt + (size_t)2 * M,
                                 seq.s_h + (size_t)2 * seq.Mp, M, fir, gates + (size_t)2 * M * esz);
            if (sa) {
                int8_t *z = (int8_t *)gates, *n = z + 2 * M, *hh = (int8_t *)h, *yy = (int8_t *)y;
                const m2_sa_mul_c mul_hz = m2_sa_mul_prep(fh, M2_FMT_SIGM_SA8, fh);
                const m2_sa_add_c add_y = m2_sa_add_prep(fo, fh, fo);
                for (int o = 0; o < M; o++) {
                    const int8_t zh = m2_sa_mul(&mul_hz, hh[o], z[o]);
                    const int8_t zc = one_minus[z[o] + 128];
                    const int8_t nn = tanh_g[n[o] + 128];
                    yy[o] = m2_sa_addsub(&add_y, m2_sa_mul(&mul_nz, nn, zc), zh, 0);
                }
            } else {
                int16_t *z = (int16_t *)gates, *n = z + 2 * M, *hh = (int16_t *)h, *yy = (int16_t *)y;
                for (int o = 0; o < M; o++) {
                    const int16_t zh = m2_fx_mul(hh[o], fh.shift, z[o], 15, fh.shift);
                    const int16_t zc = m2_fx_sub(32767, 15, z[o], 15, 15);
                    const int16_t nn = m2_lut_lookup(&tl, n[o], fir.shift);
                    yy[o] = m2_fx_add(m2_fx_mul(nn, 15, zc, 15, fo.shift), fo.shift, zh, fh.shift, fo.shift);
                }
            }
        }
        memcpy((char *)out->data.mem.ptr + (size_t)(all ? t : 0) * M * esz, y, (size_t)M * esz);
        memcpy(h, y, (size_t)M * esz);
        fh = fo;
    }
    mli2_cell_set_out(out, all ? T : 1, M);
    mli2_seq_free(&seq), free(buf), free(tabs);
    return MLI_STATUS_OK;
}

#define GRU_DEF(kind, K)                                                                                     \
    mli_status mli_krn_gru_cell_##kind(const mli_tensor *in, const mli_tensor *prev_out,                    \
                                       const mli_tensor *weights_in, const mli_tensor *weights_out,         \
                                       const mli_tensor *bias, const mli_lut *tanh_lut,                     \
                                       const mli_lut *sigm_lut, const mli_rnn_cell_cfg *cfg, mli_tensor *out) { \
        return gru_run(K, in, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, out,        \
                       "mli_krn_gru_cell_" #kind);                                                          \
    }
GRU_DEF(fx16, M2_FX16)
GRU_DEF(fx16_fx8_fx8, M2_FX16_FX8)
GRU_DEF(sa8_sa8_sa32, M2_SA8)
