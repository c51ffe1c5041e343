/* What the LSTM and GRU cells share: the argument checks of SPEC_MLI2.md
 * 13.4, the per-gate weight views and the output metadata. */
#include <stdlib.h>
#include <string.h>
#include "mli_api.h"
#include "mli2_prv.h"

/* Beyond MLI, once its checks pass.  Extents: MLI's size checks wrap around
 * in 32 bits, so every element the cell accesses is checked against its
 * capacity here (and the scratch MLI would write).  Aliasing: MLI writes out
 * (each step), the cell (each step) and the scratch (each gate) while it
 * still reads the other operands; mli-py reproduces out over in, out over
 * prev_out (the GRU: out starting at or before prev_out) and the cell over
 * prev_out, and refuses every other overlap of a written region with an
 * operand. */
static mli_status mli2_cell_safety(int G, const mli_tensor *in, const mli_tensor *prev_out,
                                   const mli_tensor *weights_in, const mli_tensor *weights_out,
                                   const mli_tensor *bias, const mli_lut *tanh_lut, const mli_lut *sigm_lut,
                                   const mli_rnn_cell_cfg *cfg, const mli_tensor *cell, const mli_tensor *out,
                                   uint64_t T_out, uint64_t M) {
    const int lstm = G == 4;
    const uint64_t esz = (uint64_t)mli2_el_size(in->el_type);
    M2_TRY(mli2_chk_reach(in, "in", mli2_span(in)));
    M2_TRY(mli2_chk_reach(prev_out, "prev_out", M));
    M2_TRY(mli2_chk_reach(weights_in, "weights_in", mli2_span(weights_in)));
    M2_TRY(mli2_chk_reach(weights_out, "weights_out", mli2_span(weights_out)));
    M2_TRY(mli2_chk_reach(bias, "bias", mli2_span(bias)));
    if (lstm) M2_TRY(mli2_chk_reach(cell, "cell", M));
    M2_TRY(mli2_chk_reach(out, "out", T_out * M));
    if ((uint64_t)cfg->scratch_data.capacity < (uint64_t)G * M * esz)
        return mli2_refuse(MLI_STATUS_BAD_FUNC_CFG, "cfg",
                           "scratch_data below gates * M elements (MLI 2.0.2's 32-bit size check wraps around "
                           "and passes; it would write outside the buffer)");
    /* the operands read while outputs are written: [0] prev_out, [1] cell, then the rest */
    m2_rgn reads[16];
    int n = 0;
    reads[n++] = m2_rgn_of(prev_out->data.mem.ptr, M * esz, "prev_out");
    reads[n++] = lstm ? m2_rgn_of(cell->data.mem.ptr, M * esz, "cell") : m2_rgn_of(NULL, 0, "cell");
    const int rest = n;
    n += mli2_rgn_tensor(reads + n, weights_in, mli2_span(weights_in), "weights_in");
    n += mli2_rgn_tensor(reads + n, weights_out, mli2_span(weights_out), "weights_out");
    n += mli2_rgn_tensor(reads + n, bias, mli2_span(bias), "bias");
    reads[n++] = m2_rgn_of(tanh_lut->data.mem.ptr, 2 * (uint64_t)tanh_lut->length, "tanh_lut");
    reads[n++] = m2_rgn_of(sigm_lut->data.mem.ptr, 2 * (uint64_t)sigm_lut->length, "sigm_lut");
    const m2_rgn r_in = m2_rgn_of(in->data.mem.ptr, mli2_span(in) * esz, "in");
    const m2_rgn w_out = m2_rgn_of(out->data.mem.ptr, T_out * M * esz, "out");
    const m2_rgn w_scr = m2_rgn_of(cfg->scratch_data.mem.ptr, cfg->scratch_data.capacity, "scratch_data");
    /* out: prev_out only where the GRU writes a row ahead of what it still reads */
    if (!lstm && mli2_rgn_overlap(w_out, reads[0]) && w_out.a > reads[0].a)
        return mli2_refuse_overlap("out", NULL, "prev_out");
    M2_TRY(mli2_chk_alias("out", NULL, w_out, reads + 1, n - 1));
    if (lstm) {
        const m2_rgn w_cell = reads[1];
        M2_TRY(mli2_chk_alias("cell", NULL, w_cell, &r_in, 1));
        M2_TRY(mli2_chk_alias("cell", NULL, w_cell, reads + rest, n - rest));
    }
    /* the scratch (in is MLI's own check, 13.4 step 13), and out's whole
     * container: what MLI leaves in the scratch would stay in out's buffer */
    M2_TRY(mli2_chk_alias("cfg", "scratch_data", w_scr, reads, n));
    const m2_rgn out_all = m2_rgn_of(out->data.mem.ptr, out->data.capacity, "out");
    return mli2_chk_alias("cfg", "scratch_data", w_scr, &out_all, 1);
}

mli_status mli2_cell_check(m2_kind kind, int G, const mli_tensor *in, const mli_tensor *prev_out,
                           const mli_tensor *weights_in, const mli_tensor *weights_out, const mli_tensor *bias,
                           const mli_lut *tanh_lut, const mli_lut *sigm_lut, const mli_rnn_cell_cfg *cfg,
                           const mli_tensor *cell, const mli_tensor *out) {
    const int lstm = G == 4;
    if (!tanh_lut) return mli2_refuse(MLI_STATUS_BAD_FUNC_CFG, "tanh_lut", "is NULL (MLI 2.0.2 crashes)");
    if (!sigm_lut) return mli2_refuse(MLI_STATUS_BAD_FUNC_CFG, "sigm_lut", "is NULL (MLI 2.0.2 crashes)");
    if (tanh_lut->data.capacity < (uint32_t)mli_krn_tanh_get_lut_size())
        return mli2_fail(MLI_STATUS_NOT_ENGH_MEM, "tanh_lut", "capacity below the tanh table");
    if (sigm_lut->data.capacity < (uint32_t)mli_krn_sigm_get_lut_size())
        return mli2_fail(MLI_STATUS_NOT_ENGH_MEM, "sigm_lut", "capacity below the sigm table");
    M2_TRY(mli2_chk_tensor(in, "in"));
    M2_TRY(mli2_chk_tensor(prev_out, "prev_out"));
    if (in->rank != 2) return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "in", "rank is not 2");
    if (prev_out->rank != 1) return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "prev_out", "rank is not 1");
    if (!mli2_contig(in)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "in", "not contiguous");
    if (!mli2_inner1(prev_out)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "prev_out", "mem_stride[0] is not 1");
    /* MLI reads cfg from here on without testing it */
    if (!cfg) return mli2_refuse(MLI_STATUS_BAD_FUNC_CFG, "cfg", "is NULL (MLI 2.0.2 crashes)");
    if ((unsigned)cfg->direction > 1u || (unsigned)cfg->results > 1u || (lstm && (unsigned)cfg->act > 2u))
        return mli2_refuse(MLI_STATUS_BAD_FUNC_CFG, "cfg", "direction, results or act out of range");
    const uint32_t N = in->shape[1], M = mli2_count(prev_out);
    const uint64_t T_out = cfg->results == RNN_OUT_ALL ? in->shape[0] : 1;
    M2_TRY(mli2_chk_tensor(weights_in, "weights_in"));
    M2_TRY(mli2_chk_tensor(weights_out, "weights_out"));
    if (weights_in->rank != 3 || weights_in->shape[0] != (uint32_t)G || weights_in->shape[1] != N ||
        weights_in->shape[2] != M)
        return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "weights_in", "shape is not (gates, N, M)");
    if (weights_out->rank != 3 || weights_out->shape[0] != (uint32_t)G || weights_out->shape[1] != M ||
        weights_out->shape[2] != M)
        return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "weights_out", "shape is not (gates, M, M)");
    if (!mli2_inner1(weights_in)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "weights_in", "innermost mem_stride is not 1");
    if (!mli2_inner1(weights_out)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "weights_out", "innermost mem_stride is not 1");
    M2_TRY(mli2_chk_tensor(bias, "bias"));
    if (bias->rank != 2 || bias->shape[0] != (uint32_t)G || bias->shape[1] != M)
        return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "bias", "shape is not (gates, M)");
    if (lstm) {
        M2_TRY(mli2_chk_tensor(cell, "cell"));
        if (cell->rank != 1 || cell->shape[0] != M) return mli2_fail(MLI_STATUS_SHAPE_MISMATCH, "cell", "shape is not (M)");
    }
    M2_TRY(mli2_chk_tensor(out, "out"));
    if (out->el_type != in->el_type) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "out", "el_type differs from in's");
    /* MLI's products wrap modulo 2^32 (compared unsigned) */
    const uint32_t out_esz = (uint32_t)mli2_el_size(lstm ? out->el_type : in->el_type);
    if ((uint32_t)T_out * M * out_esz > out->data.capacity)
        return mli2_fail(MLI_STATUS_BAD_TENSOR, "out", "capacity below the outputs");
    const int esz = mli2_el_size(in->el_type);
    if (!cfg->scratch_data.mem.ptr) return mli2_fail(MLI_STATUS_BAD_FUNC_CFG, "cfg", "scratch_data is NULL");
    if (cfg->scratch_data.capacity < (uint32_t)G * M * (uint32_t)esz)
        return mli2_fail(MLI_STATUS_BAD_FUNC_CFG, "cfg", "scratch_data below gates * M elements");
    if (lstm && !mli2_inner1(cell)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "cell", "mem_stride[0] is not 1");
    if (!mli2_inner1(bias)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "innermost mem_stride is not 1");
    if (!mli2_contig(out)) return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "out", "not contiguous");
    if (mli2_overlap(in->data.mem.ptr, in->data.capacity, cfg->scratch_data.mem.ptr, cfg->scratch_data.capacity))
        return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "cfg", "scratch_data overlaps in");
    if (kind != M2_SA8) {
        const mli_element_type wt = kind == M2_FX16 ? MLI_EL_FX_16 : MLI_EL_FX_8;
        if (in->el_type != MLI_EL_FX_16) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "in", "el_type is not FX_16");
        if (out->el_type != MLI_EL_FX_16) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "out", "el_type is not FX_16");
        if (prev_out->el_type != MLI_EL_FX_16) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "prev_out", "el_type is not FX_16");
        if (lstm && cell->el_type != MLI_EL_FX_16) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "cell", "el_type is not FX_16");
        if (weights_in->el_type != wt) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "weights_in", "el_type is not the kernel's");
        if (weights_out->el_type != wt) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "weights_out", "el_type is not the kernel's");
        if (bias->el_type != wt) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "bias", "el_type is not the kernel's");
        if (bias->el_params.fx.frac_bits > in->el_params.fx.frac_bits + weights_in->el_params.fx.frac_bits)
            return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "bias", "frac_bits above in's + weights_in's");
    } else {
        if (in->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "in", "el_type is not SA_8");
        if (out->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "out", "el_type is not SA_8");
        if (prev_out->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "prev_out", "el_type is not SA_8");
        if (lstm && cell->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "cell", "el_type is not SA_8");
        if (weights_in->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "weights_in", "el_type is not SA_8");
        if (weights_out->el_type != MLI_EL_SA_8) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "weights_out", "el_type is not SA_8");
        if (bias->el_type != MLI_EL_SA_32) return mli2_fail(MLI_STATUS_TYPE_MISMATCH, "bias", "el_type is not SA_32");
        if (mli2_per_axis(in) || mli2_per_axis(out) || mli2_per_axis(prev_out) || (lstm && mli2_per_axis(cell)))
            return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "in", "per-axis parameters on a data tensor");
        if (!mli2_per_axis(weights_in) ? (mli2_per_axis(weights_out) || mli2_per_axis(bias))
                                       : (weights_in->el_params.sa.dim != 0 || weights_out->el_params.sa.dim != 0 ||
                                          bias->el_params.sa.dim != 0))
            return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, "weights_in", "quantisation axes of weights and bias disagree");
        M2_TRY(mli2_chk_quant(in, "in", -128, 127));
        M2_TRY(mli2_chk_quant(out, "out", -128, 127));
        M2_TRY(mli2_chk_quant(prev_out, "prev_out", -128, 127));
        if (lstm) M2_TRY(mli2_chk_quant(cell, "cell", -128, 127));
        M2_TRY(mli2_chk_quant(weights_in, "weights_in", 0, 0));
        M2_TRY(mli2_chk_quant(weights_out, "weights_out", 0, 0));
        M2_TRY(mli2_chk_quant(bias, "bias", 0, 0));
        M2_TRY(mli2_chk_biasscale(in, weights_in, bias, "bias"));
    }
    /* beyond MLI: the tables it will read must lie inside their storage */
    M2_TRY(mli2_chk_lut(tanh_lut, "tanh_lut"));
    M2_TRY(mli2_chk_lut(sigm_lut, "sigm_lut"));
    return mli2_cell_safety(G, in, prev_out, weights_in, weights_out, bias, tanh_lut, sigm_lut, cfg, cell, out, T_out, M);
}

void mli2_cell_gate_inputs(m2_kind kind, const mli_tensor *weights_in, const mli_tensor *weights_out, int g,
                           int gru_quirk, const void *x, int N, m2_fmt fx, const void *h, int M, m2_fmt fh,
                           m2_dense_in ins[2]) {
    const mli_tensor *w[2] = {weights_in, weights_out};
    const int esz = kind == M2_FX16 ? 2 : 1;
    for (int i = 0; i < 2; i++) {
        ins[i].x = i == 0 ? x : h;
        ins[i].n = i == 0 ? N : M;
        ins[i].fx = i == 0 ? fx : fh;
        ins[i].w = (const char *)w[i]->data.mem.ptr + (long)g * w[i]->mem_stride[0] * esz;
        ins[i].ws = w[i]->mem_stride[1];
        m2_fmt fw = mli2_fmt(w[i], g);
        if (gru_quirk && kind == M2_SA8 && !mli2_per_axis(w[i])) {
            /* MLI advances the per-tensor "pointers" by two gates: the inline
             * values move by 2 * sizeof(int16) and 2 * sizeof(int8) */
            fw.scale = m2_wrap16(fw.scale + 4);
            fw.shift = m2_wrap8(fw.shift + 2);
        }
        ins[i].w_scale = fw.scale;
        ins[i].w_shift = fw.shift;
    }
}

void mli2_cell_set_out(mli_tensor *out, int T_out, int M) {
    out->rank = 2;
    out->shape[0] = (uint32_t)T_out;
    out->shape[1] = (uint32_t)M;
    out->mem_stride[0] = M;
    out->mem_stride[1] = 1;
}

void mli2_seq_free(m2_seq *s) {
    mli2_pw_release(&s->pin), mli2_pw_release(&s->pout[0]), mli2_pw_release(&s->pout[1]);
    free(s->xp), free(s->hp), free(s->s_in), free(s->s_h), free(s->bt);
    s->xp = s->hp = NULL, s->s_in = s->s_h = s->bt = NULL;
}

int mli2_seq_init(m2_seq *s, m2_kind kind, int G, const mli_tensor *in, const mli_tensor *weights_in,
                  const mli_tensor *weights_out, const mli_tensor *out, int backward) {
    memset(s, 0, sizeof(*s));
    s->kind = kind, s->G = G, s->backward = backward;
    /* out over in's container: MLI reads step t's input row after writing the outputs
     * before it (SPEC_MLI2.md 16.5), so no step's input is read ahead */
    s->hoist = mli2_overlap(in->data.mem.ptr, in->data.capacity, out->data.mem.ptr, out->data.capacity)
                   ? 1 : M2_SEQ_HOIST;
    s->T = (int)in->shape[0], s->N = (int)in->shape[1], s->M = (int)weights_out->shape[2];
    s->Mp = (s->M + 15) / 16 * 16;
    s->esz = kind == M2_SA8 ? 1 : 2;
    const int w8 = kind != M2_FX16, wsz = w8 ? 1 : 2;
    int ok = 1;
    const char *wi = (const char *)weights_in->data.mem.ptr, *wo = (const char *)weights_out->data.mem.ptr;
    const long gsi = weights_in->mem_stride[0], gso = weights_out->mem_stride[0];
    ok &= mli2_pw_acquire(&s->pin, w8, wi, gsi, weights_in->mem_stride[1], s->N, s->M, G);
    if (ok) mli2_pw_widen(&s->pin);
    /* LSTM: one block of 4 gates; GRU: gates 0, 1 (h) and gate 2 (r * h) */
    s->npout = G == 4 ? 1 : 2;
    s->pout_g0[0] = 0, s->pout_g0[1] = 2;
    for (int b = 0; b < s->npout; b++) {
        const int g0 = s->pout_g0[b], ng = (b + 1 < s->npout ? s->pout_g0[b + 1] : G) - g0;
        ok &= mli2_pw_acquire(&s->pout[b], w8, wo + (long)g0 * gso * wsz, gso, weights_out->mem_stride[1], s->M,
                                 s->M, ng);
        if (ok) mli2_pw_widen(&s->pout[b]);
    }
    const size_t pin = (size_t)(s->N + 1) / 2 + 1, ph = (size_t)(s->M + 1) / 2 + 1;
    s->xp = (int32_t *)malloc(sizeof(int32_t) * pin * M2_SEQ_HOIST);
    s->hp = (int32_t *)malloc(sizeof(int32_t) * ph);
    s->s_in = (int64_t *)malloc(sizeof(int64_t) * (size_t)M2_SEQ_HOIST * G * s->Mp);
    s->s_h = (int64_t *)malloc(sizeof(int64_t) * (size_t)G * s->Mp);
    s->bt = (int64_t *)malloc(sizeof(int64_t) * (size_t)G * s->M + 1);
    if (!ok || !s->xp || !s->hp || !s->s_in || !s->s_h || !s->bt) {
        mli2_seq_free(s);
        return 0;
    }
    return 1;
}

void mli2_seq_bias(m2_seq *s, int g, const m2_dense_in *in0, const mli_tensor *bias, int fb) {
    const int bsz = mli2_el_size(bias->el_type);
    const char *brow = (const char *)bias->data.mem.ptr + (size_t)g * bias->mem_stride[0] * bsz;
    const int bs = in0->fx.shift + in0->w_shift - fb;
    for (int o = 0; o < s->M; o++) s->bt[(size_t)g * s->M + o] = mli2_dense_bias(s->kind, brow, o, bs);
}

const int64_t *mli2_seq_in_sums(m2_seq *s, const mli_tensor *in, int t, int32_t zp) {
    const int j = t % s->hoist;
    const long pin = (s->N + 1) / 2, blk = (long)s->G * s->Mp;
    if (j == 0) {
        const int nv = s->T - t < s->hoist ? s->T - t : s->hoist;
        for (int v = 0; v < nv; v++) {
            const int row = s->backward ? s->T - 1 - (t + v) : t + v;
            mli2_pairs((const char *)in->data.mem.ptr + (size_t)row * s->N * s->esz, s->esz == 1, s->N, zp,
                       s->xp + v * pin);
        }
        mli2_pw_sums_multi(&s->pin, s->xp, pin, nv, s->s_in, blk);
    }
    return s->s_in + j * blk;
}

const int64_t *mli2_seq_in_sums_reread(m2_seq *s, const mli_tensor *in, int t, int32_t zp) {
    const int row = s->backward ? s->T - 1 - t : t;
    mli2_pairs((const char *)in->data.mem.ptr + (size_t)row * s->N * s->esz, s->esz == 1, s->N, zp, s->xp);
    mli2_pw_sums_multi(&s->pin, s->xp, (s->N + 1) / 2, 1, s->s_in, (long)s->G * s->Mp);
    return s->s_in;
}

void mli2_seq_h_sums(m2_seq *s, const void *h, int32_t zp, int g0, int g1) {
    mli2_pairs(h, s->esz == 1, s->M, zp, s->hp);
    for (int b = 0; b < s->npout; b++)
        if (s->pout_g0[b] >= g0 && s->pout_g0[b] < g1)
            mli2_pw_sums(&s->pout[b], s->hp, s->s_h + (long)s->pout_g0[b] * s->Mp);
}

/* m2_act_sa8_table costs a few microseconds (256 lookups through the
 * general code), as much as a short sequence's steps: the last few tables
 * are kept, each with a copy of the LUT it was made from, and served where
 * table, format, activation and rounding mode are the same.  Global slots
 * as for the packings (mli2_pack.c): an entry is read only once taken out
 * of its slot by an atomic exchange.  GCC / Clang only. */
#define M2_ACT_KEEP 8
#define M2_ACT_KEEP_L 1024
typedef struct {
    int sigm, up;
    int32_t L, O, q;
    m2_fmt in;
    int8_t tab[256];
    int16_t t[M2_ACT_KEEP_L];
} m2_act_kept;
#if defined(__GNUC__) || defined(__clang__)
static m2_act_kept *m2_act_slot[M2_ACT_KEEP];
static unsigned m2_act_next;
static void act_put(m2_act_kept *k) {
    free(mli2_slot_put((void **)m2_act_slot, M2_ACT_KEEP, &m2_act_next, k));
}
#endif

void mli2_act_sa8_table_kept(const m2_lut *T, m2_fmt in, int sigm, int8_t tab[256]) {
#if defined(__GNUC__) || defined(__clang__)
    const int up = mli2_round_up;
    if (T->L >= 1 && T->L <= M2_ACT_KEEP_L) {
        const size_t tb = (size_t)T->L * sizeof(int16_t);
        for (int i = 0; i < M2_ACT_KEEP; i++) {
            m2_act_kept *k = __atomic_exchange_n(&m2_act_slot[i], NULL, __ATOMIC_ACQ_REL);
            if (!k) continue;
            const int same = k->sigm == sigm && k->up == up && k->L == T->L && k->O == T->O && k->q == T->q &&
                             k->in.zp == in.zp && k->in.scale == in.scale && k->in.shift == in.shift &&
                             memcmp(k->t, T->t, tb) == 0;
            if (same) memcpy(tab, k->tab, 256);
            act_put(k);
            if (same) return;
        }
        m2_act_sa8_table(T, in, sigm, tab);
        m2_act_kept *k = (m2_act_kept *)malloc(sizeof(m2_act_kept));
        if (k) {
            k->sigm = sigm, k->up = up, k->L = T->L, k->O = T->O, k->q = T->q, k->in = in;
            memcpy(k->t, T->t, tb);
            memcpy(k->tab, tab, 256);
            act_put(k);
        }
        return;
    }
#endif
    m2_act_sa8_table(T, in, sigm, tab);
}
