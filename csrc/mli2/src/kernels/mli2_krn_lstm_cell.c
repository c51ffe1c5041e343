/* LSTM cell (SPEC_MLI2.md 11): gates i, g, f, o; a whole sequence per call. */
#include <stdlib.h>
#include <string.h>
#include "mli_api.h"
#include "mli2_prv.h"
#include "mli2_cellfast.h"

/* The tables of the fused step (one call's) */
typedef struct {
    m2_lut_tab st, tt;
    int32_t sig8[256], tnh8[256], act8[256];
    int16_t sig16[256], tnh16[256], act16[256];
} lstm_tabs;

/* The fused step's plan for state format fh; 0: the general code runs. */
static int lstm_plan(m2_cf_plan *p, lstm_tabs *tb, int tabs_ok, m2_kind kind, const mli_tensor *weights_in,
                     const mli_tensor *weights_out, int N, m2_fmt fx, int M, m2_fmt fh, m2_fmt fir, m2_fmt fc, m2_fmt fo,
                     const m2_lut *tl, const m2_lut *sl, int act, const int8_t *sig_g, const int8_t *tanh_g,
                     const int8_t *act_c, const m2_sa_mul_c *mul_cf, const m2_sa_mul_c *mul_gi,
                     const m2_sa_add_c *add_cg, const m2_sa_mul_c *mul_ao) {
    const int up = mli2_round_up;
    memset(p, 0, sizeof(*p));
    p->kind = kind;
    for (int g = 0; g < 4; g++) {
        m2_dense_in ins[2];
        mli2_cell_gate_inputs(kind, weights_in, weights_out, g, 0, NULL, N, fx, NULL, M, fh, ins);
        if (!mli2_cf_readout(p, g, ins, fir)) return 0;
    }
    p->act_none = act == RNN_ACT_NONE;
    if (kind == M2_SA8) {
        for (int e = 0; e < 256; e++) {
            tb->sig8[e] = sig_g[e], tb->tnh8[e] = tanh_g[e];
            tb->act8[e] = p->act_none ? 0 : act_c[e];
            tb->sig16[e] = sig_g[e], tb->tnh16[e] = tanh_g[e], tb->act16[e] = (int16_t)tb->act8[e];
        }
        p->sig8 = tb->sig8, p->tnh8 = tb->tnh8, p->act8 = tb->act8;
        p->sig16 = tb->sig16, p->tnh16 = tb->tnh16, p->act16 = tb->act16, p->om16 = tb->sig16; /* om16: not used */
        return mli2_cf_samul(&p->mul_a, mul_cf, up) && mli2_cf_samul(&p->mul_b, mul_gi, up) &&
               mli2_cf_saadd(&p->add_a, add_cg, up) && mli2_cf_samul(&p->mul_c, mul_ao, up);
    }
    if (!tabs_ok || !m2_lutl_make(sl, &tb->st, fir.shift, up, &p->sig) || !m2_lutl_make(tl, &tb->tt, fir.shift, up, &p->tnh))
        return 0;
    if (p->act_none)
        p->act = p->sig; /* not used; any valid table */
    else if (!m2_lutl_make(act == RNN_ACT_TANH ? tl : sl, act == RNN_ACT_TANH ? &tb->tt : &tb->st, fc.shift, up, &p->act))
        return 0;
    return mli2_cf_fxmul(&p->rcf, fc.shift, 15, fc.shift, up) && mli2_cf_fxmul(&p->rgi, 15, 15, 15, up) &&
           mli2_cf_fxadd(&p->radd, &p->la, &p->lb, fc.shift, 15, fc.shift, up) &&
           mli2_cf_fxmul(&p->rout, p->act_none ? fc.shift : 15, 15, fo.shift, up);
}

static mli_status lstm_run(m2_kind kind, const mli_tensor *in, const mli_tensor *prev_out,
                           const mli_tensor *weights_in, const mli_tensor *weights_out, const mli_tensor *bias,
                           const mli_lut *tanh_lut, const mli_lut *sigm_lut, const mli_rnn_cell_cfg *cfg,
                           mli_tensor *cell, mli_tensor *out, const char *fn) {
    mli2_begin(fn);
    M2_TRY(mli2_cell_check(kind, 4, in, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, cell, out));
    const int T = (int)in->shape[0], N = (int)in->shape[1], M = (int)mli2_count(prev_out);
    const int all = cfg->results == RNN_OUT_ALL, backward = cfg->direction == RNN_DIR_BACKWARD;
    const int sa = kind == M2_SA8, esz = sa ? 1 : 2;
    /* private copies of h and the cell: aliasing among out, prev_out and cell
     * cannot make the kernel read a half-written vector */
    m2_seq seq;
    char *buf = (char *)malloc((size_t)M * esz * 7);
    if (!buf || !mli2_seq_init(&seq, kind, 4, in, weights_in, weights_out, out, backward)) {
        free(buf);
        return mli2_refuse(MLI_STATUS_NOT_ENGH_MEM, "", "out of host memory");
    }
    char *h = buf, *c = buf + (size_t)M * esz, *gates = buf + (size_t)M * esz * 2, *y = buf + (size_t)M * esz * 6;
    memcpy(h, prev_out->data.mem.ptr, (size_t)M * esz);
    memcpy(c, cell->data.mem.ptr, (size_t)M * esz);
    const m2_lut tl = m2_lut_of(tanh_lut), sl = m2_lut_of(sigm_lut);
    const m2_fmt fx = mli2_fmt(in, 0), fc = mli2_fmt(cell, 0), fo = mli2_fmt(out, 0);
    m2_fmt fh = mli2_fmt(prev_out, 0);
    const m2_fmt fir = sa ? m2_fmt_make(0, 1, 4) : m2_fmt_make(0, 1, m2_imin(10, fx.shift + weights_in->el_params.fx.frac_bits));
    const int fb = sa ? 0 : bias->el_params.fx.frac_bits;
    /* sa8 element-wise constants that do not depend on h's format */
    const m2_sa_mul_c mul_cf = m2_sa_mul_prep(fc, M2_FMT_SIGM_SA8, fc);
    const m2_sa_mul_c mul_gi = m2_sa_mul_prep(M2_FMT_TANH_SA8, M2_FMT_SIGM_SA8, M2_FMT_TANH_SA8);
    const m2_sa_add_c add_cg = m2_sa_add_prep(fc, M2_FMT_TANH_SA8, fc);
    const m2_fmt fa = cfg->act == RNN_ACT_NONE ? fc : (cfg->act == RNN_ACT_TANH ? M2_FMT_TANH_SA8 : M2_FMT_SIGM_SA8);
    const m2_sa_mul_c mul_ao = m2_sa_mul_prep(fa, M2_FMT_SIGM_SA8, fo);
    /* sa8: every activation input is an int8 of a format fixed for the call */
    int8_t sig_g[256], tanh_g[256], act_c[256];
    if (sa) {
        mli2_act_sa8_table_kept(&sl, fir, 1, sig_g);
        mli2_act_sa8_table_kept(&tl, fir, 0, tanh_g);
        if (cfg->act != RNN_ACT_NONE) mli2_act_sa8_table_kept(cfg->act == RNN_ACT_TANH ? &tl : &sl, fc, cfg->act == RNN_ACT_SIGM, act_c);
    }
    for (int g = 0; g < 4; g++) {
        m2_dense_in ins[2];
        mli2_cell_gate_inputs(kind, weights_in, weights_out, g, 0, NULL, N, fx, NULL, M, fh, ins);
        mli2_seq_bias(&seq, g, &ins[0], bias, fb);
    }
    lstm_tabs *tabs = (lstm_tabs *)malloc(sizeof(lstm_tabs));
    const int tabs_ok = tabs && !sa && m2_lut_tab_make(&sl, &tabs->st) && m2_lut_tab_make(&tl, &tabs->tt);
    m2_cf_plan plan;
    int fast = 0;
    for (int t = 0; t < T; t++) {
        if (t <= 1)
            fast = tabs && lstm_plan(&plan, tabs, tabs_ok, kind, weights_in, weights_out, N, fx, M, fh, fir, fc, fo, &tl,
                                     &sl, cfg->act, sig_g, tanh_g, act_c, &mul_cf, &mul_gi, &add_cg, &mul_ao);
        if (mli2_poll_now(t)) { /* the steps done so far stay in out and cell */
            free(tabs);
            memcpy(cell->data.mem.ptr, c, (size_t)M * esz);
            mli2_cell_set_out(out, all ? t : 1, M);
            mli2_seq_free(&seq), free(buf);
            return mli2_fail(MLIPY2_STATUS_INTERRUPTED, "", "interrupted");
        }
        const int64_t *s_in = mli2_seq_in_sums(&seq, in, t, fx.zp);
        mli2_seq_h_sums(&seq, h, fh.zp, 0, 4);
        if (fast) {
            mli2_cf_lstm_step(&plan, M, seq.Mp, s_in, seq.bt, seq.s_h, c, y);
        } else {
            for (int g = 0; g < 4; g++) {
                m2_dense_in ins[2];
                mli2_cell_gate_inputs(kind, weights_in, weights_out, g, 0, NULL, N, fx, h, M, fh, ins);
                mli2_dense_from_sums(kind, ins, s_in + (size_t)g * seq.Mp, seq.bt + (size_t)g * M,
                                     seq.s_h + (size_t)g * seq.Mp, M, fir, gates + (size_t)g * M * esz);
            }
            if (sa) {
                int8_t *gi = (int8_t *)gates, *gg = gi + M, *gf = gi + 2 * M, *go = gi + 3 * M;
                int8_t *cc = (int8_t *)c, *yy = (int8_t *)y;
                for (int o = 0; o < M; o++) {
                    const int8_t i_ = sig_g[gi[o] + 128], g_ = tanh_g[gg[o] + 128];
                    const int8_t f_ = sig_g[gf[o] + 128], o_ = sig_g[go[o] + 128];
                    const int8_t cf = m2_sa_mul(&mul_cf, cc[o], f_);
                    const int8_t gi2 = m2_sa_mul(&mul_gi, g_, i_);
                    cc[o] = m2_sa_addsub(&add_cg, cf, gi2, 0);
                    const int8_t a = cfg->act == RNN_ACT_NONE ? cc[o] : act_c[cc[o] + 128];
                    yy[o] = m2_sa_mul(&mul_ao, a, o_);
                }
            } else {
                int16_t *gi = (int16_t *)gates, *gg = gi + M, *gf = gi + 2 * M, *go = gi + 3 * M;
                int16_t *cc = (int16_t *)c, *yy = (int16_t *)y;
                const int fcs = fc.shift, fi = fir.shift;
                for (int o = 0; o < M; o++) {
                    const int16_t i_ = m2_lut_lookup(&sl, gi[o], fi), g_ = m2_lut_lookup(&tl, gg[o], fi);
                    const int16_t f_ = m2_lut_lookup(&sl, gf[o], fi), o_ = m2_lut_lookup(&sl, go[o], fi);
                    const int16_t cf = m2_fx_mul(cc[o], fcs, f_, 15, fcs);
                    const int16_t gi2 = m2_fx_mul(g_, 15, i_, 15, 15);
                    cc[o] = m2_fx_add(cf, fcs, gi2, 15, fcs);
                    if (cfg->act == RNN_ACT_NONE) {
                        yy[o] = m2_fx_mul(cc[o], fcs, o_, 15, fo.shift);
                    } else {
                        const int16_t a = m2_lut_lookup(cfg->act == RNN_ACT_TANH ? &tl : &sl, cc[o], fcs);
                        yy[o] = m2_fx_mul(a, 15, o_, 15, fo.shift);
                    }
                }
            }
        }
        memcpy((char *)out->data.mem.ptr + (size_t)(all ? t : 0) * M * esz, y, (size_t)M * esz);
        memcpy(h, y, (size_t)M * esz);
        fh = fo;
    }
    memcpy(cell->data.mem.ptr, c, (size_t)M * esz);
    mli2_cell_set_out(out, all ? T : 1, M);
    mli2_seq_free(&seq), free(buf), free(tabs);
    return MLI_STATUS_OK;
}

#define LSTM_DEF(kind, K)                                                                                    \
    mli_status mli_krn_lstm_cell_##kind(const mli_tensor *in, const mli_tensor *prev_out,                   \
                                        const mli_tensor *weights_in, const mli_tensor *weights_out,        \
                                        const mli_tensor *bias, const mli_lut *tanh_lut,                    \
                                        const mli_lut *sigm_lut, const mli_rnn_cell_cfg *cfg,               \
                                        mli_tensor *cell, mli_tensor *out) {                                \
        return lstm_run(K, in, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, cell, out, \
                        "mli_krn_lstm_cell_" #kind);                                                        \
    }
LSTM_DEF(fx16, M2_FX16)
LSTM_DEF(fx16_fx8_fx8, M2_FX16_FX8)
LSTM_DEF(sa8_sa8_sa32, M2_SA8)
