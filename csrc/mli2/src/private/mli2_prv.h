/* Private pieces of mli-py's MLI 2.0.2 library shared by the kernels:
 * error reporting, tensor helpers, the argument checks of SPEC_MLI2.md
 * section 13, LUT lookup (5.1), sa8 requantisation (6), element-wise steps
 * (10) and the exact column dot products under the dense blocks (7). */
#ifndef MLI2_PRV_H
#define MLI2_PRV_H

#include <stddef.h>
#include <stdint.h>
#include "mli_types.h"
#include "mlipy2_ext.h"
#include "mli2_math.h"

/* ------------------------------------------------------------ errors */
/* Every public entry point starts with mli2_begin (resets the error record,
 * fixes the rounding mode of the call). */
void mli2_begin(const char *function);
mli_status mli2_fail(mli_status st, const char *arg, const char *reason);
/* A refusal beyond MLI's own checks (mlipy_safety = 1). */
mli_status mli2_refuse(mli_status st, const char *arg, const char *reason);
/* The aliasing refusal: INCOMPATEBLE_TENSORS, mlipy_safety = 1, reason
 * "[what ]overlaps other: ..." (what: NULL when arg is the output itself). */
mli_status mli2_refuse_overlap(const char *arg, const char *what, const char *other);
/* 1 when the poll (mlipy2_set_poll) asks the cell to stop before step `step`. */
int mli2_poll_now(long step);
#define M2_TRY(expr)                          \
    do {                                      \
        const mli_status st_ = (expr);        \
        if (st_ != MLI_STATUS_OK) return st_; \
    } while (0)

/* ------------------------------------------------------------ tensors */
int mli2_el_size(mli_element_type t); /* bytes; 0 for types without one */
uint32_t mli2_count(const mli_tensor *t);
static inline int mli2_is_sa(const mli_tensor *t) { return t->el_type == MLI_EL_SA_8 || t->el_type == MLI_EL_SA_32; }
static inline int mli2_per_axis(const mli_tensor *t) { return mli2_is_sa(t) && t->el_params.sa.dim >= 0; }

/* A quantisation format: FX (0, 1, frac_bits), SA (zero point, scale, scale_frac_bits). */
typedef struct {
    int32_t zp, scale, shift;
} m2_fmt;
/* Entry idx of t's parameters (per tensor: idx ignored). */
m2_fmt mli2_fmt(const mli_tensor *t, int idx);
static inline m2_fmt m2_fmt_make(int32_t zp, int32_t scale, int32_t shift) {
    m2_fmt f = {zp, scale, shift};
    return f;
}

/* ------------------------------------------------------------ checks (13.1) */
mli_status mli2_chk_tensor(const mli_tensor *t, const char *name);
mli_status mli2_chk_quant(const mli_tensor *t, const char *name, int zp_lo, int zp_hi);
int mli2_inner1(const mli_tensor *t);
int mli2_contig(const mli_tensor *t);
int mli2_overlap(const void *a, uint32_t cap_a, const void *b, uint32_t cap_b);
mli_status mli2_chk_biasscale(const mli_tensor *in, const mli_tensor *w, const mli_tensor *b, const char *name);
/* mli-py's checks of a LUT object the kernel will read (safety). */
mli_status mli2_chk_lut(const mli_lut *lut, const char *name);
/* 1 + sum (shape - 1) * mem_stride in 64 bits (the elements shape and
 * mem_stride reach; 1 for rank 0). */
uint64_t mli2_span(const mli_tensor *t);
/* Safety: `elems` elements of t lie inside its capacity (MLI's own check
 * wraps around in 32 bits; see mli2_check.c). */
mli_status mli2_chk_reach(const mli_tensor *t, const char *name, uint64_t elems);
/* Safety: an output MLI writes while it reads other operands must not share
 * bytes with them.  A region is [a, b) of one operand's memory. */
typedef struct {
    uintptr_t a, b;
    const char *name;
} m2_rgn;
m2_rgn m2_rgn_of(const void *p, uint64_t nbytes, const char *name);
/* t's data (`elems` elements) and, per axis, its three parameter arrays: 1 or 4 regions into r. */
int mli2_rgn_tensor(m2_rgn *r, const mli_tensor *t, uint64_t elems, const char *name);
int mli2_rgn_overlap(m2_rgn x, m2_rgn y);
/* Refuses (INCOMPATEBLE_TENSORS, mlipy_safety) when w overlaps one of reads:
 * argument `arg`, reason "<what> overlaps <name>: ...". */
mli_status mli2_chk_alias(const char *arg, const char *what, m2_rgn w, const m2_rgn *reads, int n);

/* ------------------------------------------------------------ LUT (5.1) */
typedef struct {
    const int16_t *t;
    int32_t L, O, q;
} m2_lut;
static inline m2_lut m2_lut_of(const mli_lut *l) {
    m2_lut r = {l->data.mem.pi16, l->length, l->input_offset, l->in_frac_bits};
    return r;
}
/* LUT(x, f, T): the Q15 value for a 32-bit input x with f fractional bits. */
static inline int16_t m2_lut_lookup(const m2_lut *T, int32_t x, int f) {
    int s = f - T->q;
    if (s > 0) {
        const int pre = m2_imin(m2_imax(s - 15, 0), 15);
        s = m2_imin(s, 15);
        const int32_t xs = (int32_t)(x >> pre);
        int64_t k = m2_sat32((int64_t)(xs >> s) + T->O);
        k = k < 0 ? 0 : (k > T->L - 2 ? T->L - 2 : k);
        const int32_t fr = (int32_t)((uint32_t)xs & ((1u << s) - 1));
        const int16_t a = T->t[k];
        const int16_t d = m2_wrap16((int32_t)a - T->t[k + 1]);
        return m2_wrap16((int32_t)a - m2_sat16(m2_rshr((int64_t)d * fr, s, 32)));
    }
    int64_t k = m2_sat32(m2_shl(x, -s, 32) + (int64_t)T->O);
    k = k < 0 ? 0 : (k > T->L - 1 ? T->L - 1 : k);
    return T->t[k];
}
/* The sa8 activation of one int8 input (5.2): fmt = the input's parameters;
 * sigm selects the sigmoid kernel's output encoding, else tanh's. */
static inline int8_t m2_act_sa8(const m2_lut *T, int8_t e, m2_fmt in, int sigm) {
    const int F = 8 + T->q;
    const int32_t v = (int32_t)m2_wrap16((int32_t)e - in.zp) * in.scale;
    const int32_t x = (int32_t)m2_rshr(v, in.shift - F, 32);
    const int16_t r = m2_lut_lookup(T, x, F);
    return sigm ? m2_sat8(m2_rshr(r, 7, 32) - 128) : m2_sat8(m2_rshr(r, 8, 32));
}
/* The same for all 256 int8 inputs at once (tab[e + 128]): a call with fixed
 * formats then looks its activations up. */
static inline void m2_act_sa8_table(const m2_lut *T, m2_fmt in, int sigm, int8_t tab[256]) {
    for (int e = -128; e < 128; e++) tab[e + 128] = m2_act_sa8(T, (int8_t)e, in, sigm);
}
/* The sa8 output formats of the activations. */
#define M2_FMT_TANH_SA8 m2_fmt_make(0, 1, 7)
#define M2_FMT_SIGM_SA8 m2_fmt_make(-128, 1, 8)

/* ------------------------------------------------------------ sa8 requantisation (6) */
typedef struct {
    int32_t m;
    int sh;
} m2_mult;
/* RATIO(in, out) then MULT with the weights' (scale, shift). */
static inline m2_mult m2_mult_of(m2_fmt in, m2_fmt out, int32_t w_scale, int w_shift) {
    const int n1 = m2_norm32(in.scale);
    const int32_t u = m2_div32((int32_t)m2_shl(in.scale, n1, 32), out.scale);
    const int n2 = m2_norm32(u);
    const int32_t ratio = m2_sat16(m2_rshr(u, 16 - n2, 32));
    const int shift = in.shift + n1 - out.shift - (16 - n2);
    m2_mult r;
    r.m = (int32_t)((int64_t)ratio * w_scale); /* int16 x int16 */
    r.sh = shift + w_shift;
    const int k = m2_norm32(r.m);
    r.m = (int32_t)m2_shl(r.m, k, 32);
    r.sh += k;
    return r;
}
/* REQ(acc, m, sh) */
static inline int32_t m2_req(int32_t acc, m2_mult m) {
    return m2_sat32(m2_rshr((int64_t)acc * m.m, m2_imin(m.sh, 63), 64));
}
/* Bias pre-rounding (FULL_ACCU=OFF): keep the 16 most significant bits. */
static inline int32_t m2_bias_preround(int32_t b) {
    const int k = m2_imax(16 - m2_norm32(b), 0);
    return (int32_t)((uint32_t)(b >> k) << k);
}

/* ------------------------------------------------------------ element-wise (10) */
/* FX, int16 data */
static inline int16_t m2_fx_mul(int32_t a, int fa, int32_t b, int fb, int fo) {
    return m2_sat16(m2_rshr((int64_t)a * b, m2_imin(fa + fb - fo, 31), 64));
}
static inline int32_t m2_fx_align(int32_t a, int fa, int fb) { return (int32_t)m2_rshr(a, m2_imin(fa - fb, 0), 32); }
static inline int16_t m2_fx_add(int32_t a, int fa, int32_t b, int fb, int fo) {
    const int64_t A = m2_fx_align(a, fa, fb), B = m2_fx_align(b, fb, fa);
    return m2_sat16(m2_rshr(m2_add(A, B, 32), m2_imin(m2_imax(fa, fb) - fo, 31), 64));
}
static inline int16_t m2_fx_sub(int32_t a, int fa, int32_t b, int fb, int fo) {
    const int64_t A = m2_fx_align(a, fa, fb), B = m2_fx_align(b, fb, fa);
    return m2_sat16(m2_rshr(m2_sub(A, B, 32), m2_imin(m2_imax(fa, fb) - fo, 31), 64));
}

/* sa8: constants prepared once per (formats) */
typedef struct {
    int32_t za, zb, zo, c;
    int post;
} m2_sa_mul_c;
static inline m2_sa_mul_c m2_sa_mul_prep(m2_fmt a, m2_fmt b, m2_fmt o) {
    m2_sa_mul_c p;
    const int32_t s = (int32_t)((int64_t)a.scale * b.scale);
    const int n = m2_norm32(s);
    const int32_t v = m2_div32((int32_t)m2_shl(s, n, 32), o.scale);
    int post = a.shift + b.shift - o.shift + n;
    const int nv = 16 - m2_norm32(v);
    int32_t c = m2_sat16(m2_rshr(v, nv, 32));
    post -= nv;
    const int e = m2_imax(post - 31, 0) + m2_imin(post + 31, 0);
    c = (int32_t)m2_rshr(c, e, 16);
    post -= e;
    p.za = a.zp, p.zb = b.zp, p.zo = o.zp, p.c = c, p.post = post;
    return p;
}
static inline int8_t m2_sa_mul(const m2_sa_mul_c *p, int32_t a, int32_t b) {
    const int32_t x = (int32_t)m2_sub(a, p->za, 16) * (int32_t)m2_sub(b, p->zb, 16);
    const int pre = m2_imin(m2_imax(p->post - 21, 0), 3);
    int32_t t = m2_sat16(m2_rshr(x, pre, 32));
    t = m2_sat16(m2_rshr((int32_t)((int64_t)t * p->c), p->post - pre, 32));
    return m2_sat8(m2_add(t, p->zo, 16));
}
typedef struct {
    int32_t za, zb, zo, ca, cb;
    int pa, pb;
} m2_sa_add_c;
static inline void m2_sa_add_operand(m2_fmt x, m2_fmt o, int32_t *c_out, int *pre_out) {
    const int n = m2_norm32(x.scale);
    const int32_t v = m2_div32((int32_t)m2_shl(x.scale, n, 32), o.scale);
    int pre = n + x.shift - o.shift;
    const int nv = 16 - m2_norm32(v);
    int32_t c = m2_sat16(m2_rshr(v, nv, 32));
    pre -= nv;
    const int e = m2_imax(pre - 23, 0) + m2_imin(pre + 31, 0);
    c = (int32_t)m2_rshr(c, e, 16);
    pre -= e;
    *c_out = c, *pre_out = pre;
}
static inline m2_sa_add_c m2_sa_add_prep(m2_fmt a, m2_fmt b, m2_fmt o) {
    m2_sa_add_c p;
    m2_sa_add_operand(a, o, &p.ca, &p.pa);
    m2_sa_add_operand(b, o, &p.cb, &p.pb);
    p.za = a.zp, p.zb = b.zp, p.zo = o.zp;
    return p;
}
static inline int8_t m2_sa_addsub(const m2_sa_add_c *p, int32_t a, int32_t b, int sub) {
    const int64_t A = m2_rshr((int64_t)m2_sub(a, p->za, 16) * p->ca, p->pa, 32);
    const int64_t B = m2_rshr((int64_t)m2_sub(b, p->zb, 16) * p->cb, p->pb, 32);
    const int64_t s = sub ? m2_sub(A, B, 32) : m2_add(A, B, 32);
    return m2_sat8(m2_add(m2_sat16(s), p->zo, 16));
}

/* ------------------------------------------------------------ dot products */
/* sums[o] = sum_{j<n} x[j] * W[j*ws + o] for o < M, exact (int64).
 * x and W are int16 or int8 as the name says (data_weights). */
void mli2_dot_cols_16_16(const int16_t *x, int n, const int16_t *W, long ws, int M, int64_t *sums);
void mli2_dot_cols_16_8(const int16_t *x, int n, const int8_t *W, long ws, int M, int64_t *sums);
void mli2_dot_cols_8_8(const int8_t *x, int n, const int8_t *W, long ws, int M, int64_t *sums);
/* colsum[o] = sum_{j<n} W[j*ws + o] (the sa8 zero-point term) */
void mli2_colsum_8(const int8_t *W, int n, long ws, int M, int64_t *sums);

/* ------------------------------------------------------------ packed weights */
/* One (n, M) weight matrix packed once per call for the exact SIMD dot
 * products of the 1.1 core (mli2_pack.c): M outputs in groups of 16, inputs
 * in pairs; sums arrays hold groups * 16 int64 (outputs beyond M are 0). */
typedef struct {
    int w8, n, M, groups, pairs;
    void *w;
    int32_t *chunks;  /* chunk table of the direct form */
    int direct;       /* 0: int16 weights that need the split form */
    int32_t *xhi, *xlo; /* the split form's vectors */
    /* int16 direct form: chunks1, the table of one chunk per group, serves a
     * vector x whose max |x| times l1b is below 2^31 (l1b = 65535 times the
     * most chunks of a group, a bound on every row's sum of |w|) */
    int32_t *chunks1;
    int64_t l1b;
    /* w8: the packed weights widened to int16 (mli2_pw_widen), or NULL; the
     * AVX2 per-step sums read them (a widening per load costs more there) */
    int16_t *w16;
    void *pwc; /* the cache entry this packing belongs to (mli2_pw_acquire), or NULL */
} m2_pw;
int mli2_pw_init(m2_pw *pw, int w8, const void *W, long ws, int n, int M); /* 0: out of memory */
/* ng matrices gs elements apart packed as one: gate k's outputs at
 * k * Mp (Mp = M rounded up to 16) in the sums */
int mli2_pw_init_gates(m2_pw *pw, int w8, const void *W, long gs, long ws, int n, int M, int ng);
/* w8 packings of at most 2^22 entries on the AVX2 path: make pw->w16 (kept
 * with the packing); nothing otherwise, or when out of memory (the 8-bit sums
 * then serve) */
void mli2_pw_widen(m2_pw *pw);
void mli2_pw_free(m2_pw *pw);
/* mli2_pw_init_gates, or the packing of an earlier call when its weights are
 * the same values (a copy of them is kept): a few calls' packings stay
 * cached across calls and threads.  Release with mli2_pw_release. */
int mli2_pw_acquire(m2_pw *pw, int w8, const void *W, long gs, long ws, int n, int M, int ng);
void mli2_pw_release(m2_pw *pw);
/* m2_act_sa8_table, served from a few kept per thread where the same (the cells' tables) */
void mli2_act_sa8_table_kept(const m2_lut *T, m2_fmt in, int sigm, int8_t tab[256]);
#if defined(__GNUC__) || defined(__clang__)
/* The caches of calls' work (packings, tables): entry e into the first free of
 * n slots, else in place of the next one in turn; returns the entry it put out
 * (NULL if none), which the caller frees. */
static inline void *mli2_slot_put(void **slots, int n, unsigned *next, void *e) {
    for (int i = 0; i < n; i++) {
        void *expect = NULL;
        if (__atomic_compare_exchange_n(&slots[i], &expect, e, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return NULL;
    }
    const unsigned k = __atomic_fetch_add(next, 1u, __ATOMIC_RELAXED) % (unsigned)n;
    return __atomic_exchange_n(&slots[k], e, __ATOMIC_ACQ_REL);
}
#endif
/* x (int8 if x8, else int16; minus zp) as int16 pairs, the last one zero-padded. */
void mli2_pairs(const void *x, int x8, int n, int32_t zp, int32_t *dst);
void mli2_pw_sums(const m2_pw *pw, const int32_t *xp, int64_t *sums);
void mli2_pw_sums_multi(const m2_pw *pw, const int32_t *xp, long x_stride, int nv, int64_t *sums, long s_stride);

#endif /* MLI2_PRV_H */

/* ------------------------------------------------------------ dense block (7) */
#ifndef MLI2_DENSE_DECLS
#define MLI2_DENSE_DECLS
typedef enum { M2_FX16 = 0, M2_FX16_FX8 = 1, M2_SA8 = 2 } m2_kind;

/* One input of a dense block: x (n values, int16 for FX kinds, int8 for sa8)
 * in format fx; weights W (n rows of M outputs, row stride ws elements,
 * int16 for fx16, int8 otherwise) with FX frac w_shift, or sa8 (w_scale, w_shift). */
typedef struct {
    const void *x;
    int n;
    m2_fmt fx;
    const void *w;
    long ws;
    int32_t w_scale;
    int w_shift;
} m2_dense_in;

/* The raw sums of input i: sums[o] = x . W[:, o] exact (sa8: plus -zp * colsum),
 * `work` holds M int64. */
void mli2_dense_sums(m2_kind kind, const m2_dense_in *in, int M, int64_t *sums, int64_t *work);
/* The first accumulator's bias term for output o (FX: bias frac fb). */
int64_t mli2_dense_bias(m2_kind kind, const void *bias, int o, int bs);
/* Accumulate the rounded part of input i into res (ADD_A), given its raw sum
 * (bias included for input 0). */
static inline int64_t mli2_dense_part(m2_kind kind, int64_t acc, int sh, m2_mult mult, int64_t res) {
    switch (kind) {
    case M2_FX16: return m2_add(res, m2_rshr(acc, m2_imin(sh, 39), 64), 64);
    case M2_FX16_FX8: return m2_add(res, m2_rshr(m2_wrap32(acc), sh, 32), 32);
    default: return m2_add(res, m2_req(m2_wrap32(acc), mult), 32);
    }
}
/* Whole block into out (int16 for FX kinds, int8 for sa8), M outputs.
 * bias: M values (int16 / int8 / int32 as the kind says) at stride 1;
 * fb: the bias's frac bits (FX).  work: 3*M int64. */
void mli2_dense_block(m2_kind kind, const m2_dense_in *ins, int n_in, const void *bias, int fb, int M, m2_fmt out,
                      void *dst, int64_t *work);
/* The two-input block from ready exact sums: s0 (input 0's, plus the bias
 * terms bt = mli2_dense_bias of each output) and s1 (input 1's). */
void mli2_dense_from_sums(m2_kind kind, const m2_dense_in ins[2], const int64_t *s0, const int64_t *bt,
                          const int64_t *s1, int M, m2_fmt out, void *dst);
#endif

/* ------------------------------------------------------------ recurrent cells */
#ifndef MLI2_CELL_DECLS
#define MLI2_CELL_DECLS
/* The checks of SPEC_MLI2.md 13.4 (G = 4 LSTM with cell, G = 3 GRU without). */
mli_status mli2_cell_check(m2_kind kind, int G, const mli_tensor *in, const mli_tensor *prev_out,
                           const mli_tensor *weights_in, const mli_tensor *weights_out, const mli_tensor *bias,
                           const mli_lut *tanh_lut, const mli_lut *sigm_lut, const mli_rnn_cell_cfg *cfg,
                           const mli_tensor *cell, const mli_tensor *out);
/* The dense-block inputs of gate g: x_t / h with their formats and the gate's
 * weights (sa8: the gate's scale; gru_quirk: MLI's per-tensor new-gate
 * parameters, SPEC_MLI2.md 12.4). */
void mli2_cell_gate_inputs(m2_kind kind, const mli_tensor *weights_in, const mli_tensor *weights_out, int g,
                           int gru_quirk, const void *x, int N, m2_fmt fx, const void *h, int M, m2_fmt fh,
                           m2_dense_in ins[2]);
/* Output tensor metadata after a cell call (11.4). */
void mli2_cell_set_out(mli_tensor *out, int T_out, int M);

/* The dot products of a whole-sequence cell call: every gate's input and
 * recurrent weights packed once, the gates side by side (one product for
 * all gates' input weights, one per block of recurrent gates the cell
 * applies to the same vector: LSTM [0, 4), GRU [0, 2) and [2, 3)); the
 * input sums of M2_SEQ_HOIST steps at a time (they do not depend on the
 * state, and exact integer sums do not depend on the order, so this is
 * MLI's arithmetic). */
#define M2_SEQ_HOIST 32
typedef struct {
    m2_kind kind;
    int G, T, N, M, Mp, backward, esz;
    int hoist;         /* steps per block: M2_SEQ_HOIST, 1 when out is in's container (mli2_seq_init) */
    m2_pw pin, pout[2];
    int pout_g0[2], npout; /* first gate of each recurrent block */
    int32_t *xp, *hp;  /* input pairs of a block of steps; the state's pairs */
    int64_t *s_in;     /* a block's input sums: step, gate, Mp outputs */
    int64_t *s_h;      /* the step's recurrent sums: gate, Mp outputs */
    int64_t *bt;       /* bias terms: gate, M outputs */
} m2_seq;
/* 0: out of memory (everything freed). */
int mli2_seq_init(m2_seq *s, m2_kind kind, int G, const mli_tensor *in, const mli_tensor *weights_in,
                  const mli_tensor *weights_out, const mli_tensor *out, int backward);
void mli2_seq_free(m2_seq *s);
/* Bias terms of gate g given its input-0 format (after mli2_cell_gate_inputs). */
void mli2_seq_bias(m2_seq *s, int g, const m2_dense_in *in0, const mli_tensor *bias, int fb);
/* The input sums of step t (gate g at + g * Mp), computing the block at its start. */
const int64_t *mli2_seq_in_sums(m2_seq *s, const mli_tensor *in, int t, int32_t zp);
/* Step t's input sums (every gate) read again from in, now; hoist 1 only (out over in:
 * the GRU's new gate reads the input after z * h went to the step's output row). */
const int64_t *mli2_seq_in_sums_reread(m2_seq *s, const mli_tensor *in, int t, int32_t zp);
/* Recurrent sums of gates [g0, g1) for state h (minus zp for sa8) into s_h. */
void mli2_seq_h_sums(m2_seq *s, const void *h, int32_t zp, int g0, int g1);
#endif
