/* The dense core, instantiated for fx8, fx16 and fx8w16d, and the
 * thread-local workspace the packed path borrows from the caller. */
#include <string.h>
#include "mli_prv_dense.h"
#include "mli_prv_isa.h"
#include "mli_config.h"
#include "mli_math.h"
#include "mli_prv_dotprod.h"
#include "mli_prv_dense_avx2.h"
#include "mli_prv_template.h"

static MLIPY_THREAD_LOCAL struct {
    void *buf;
    size_t size;
    int reuse; /* the caller vouches that weights packed earlier are unchanged */
} workspace;

/* The start of a workspace says what it holds packed, and keeps what was
 * derived from the packed weights alone. */
typedef struct {
    uint32_t magic;
    int K, N, S, wsize;
    long row_stride;
    const void *weights;
    mli_dense_l1_memo l1w;
    mli_dense_plan_memo memo;
} mli_pack_header;
#define MLI_PACK_MAGIC 0x6d6c6970u

void mlipy_set_workspace(void *buf, size_t size) {
    workspace.buf = size ? buf : NULL;
    workspace.size = buf ? size : 0;
    workspace.reuse = 0;
    if (workspace.buf && workspace.size >= sizeof(mli_pack_header)) ((mli_pack_header *)buf)->magic = 0;
}

void mlipy_set_workspace_reuse(void *buf, size_t size) {
    workspace.buf = size ? buf : NULL;
    workspace.size = buf ? size : 0;
    workspace.reuse = 1;
}

static int mli_prv_workspace_reused(void) { return workspace.reuse; }


/* 1 when the workspace already holds W packed for these dimensions (and the
 * caller vouched for it); otherwise records that it is about to. */
static int mli_prv_workspace_packed(const void *W, long row_stride, int K, int N, int S, int wsize) {
    mli_pack_header *hd = (mli_pack_header *)workspace.buf;
    if (workspace.reuse && hd->magic == MLI_PACK_MAGIC && hd->weights == W && hd->row_stride == row_stride &&
        hd->K == K && hd->N == N && hd->S == S && hd->wsize == wsize)
        return 1;
    mli_pack_header now = {MLI_PACK_MAGIC, K, N, S, wsize, row_stride, W, {0, 0, 0, 0, 0, 0, 0, 0, 0}, {0, {0, 0, 0}, 0, 0}};
    *hd = now;
    return 0;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Whether a plan of these sizes has room for widened 8-bit weights. */
static int dense_wide(size_t groups, size_t np, size_t sp) {
    return groups * (np + sp) * 2 * MLI_DOT_GROUP <= MLI_DENSE_WIDE_MAX;
}

size_t mli_prv_dense_workspace_size(int K, int N, int S) {
    const size_t groups = ((size_t)K + MLI_DOT_GROUP - 1) / MLI_DOT_GROUP;
    const size_t np = ((size_t)N + 1) / 2, sp = ((size_t)S + 1) / 2;
    const size_t pad_n = ((size_t)N / MLI_DOT_ROW_PAD + 1) * MLI_DOT_ROW_PAD;
    const size_t pad_s = ((size_t)S / MLI_DOT_ROW_PAD + 1) * MLI_DOT_ROW_PAD;
    return 64 + align64(sizeof(mli_pack_header)) + 2 * align64(pad_n * sizeof(int16_t)) +
           2 * align64(pad_s * sizeof(int16_t)) + align64(groups * np * 2 * MLI_DOT_GROUP * sizeof(int16_t)) +
           align64(groups * sp * 2 * MLI_DOT_GROUP * sizeof(int16_t)) + 2 * align64(np * sizeof(int32_t)) +
           2 * align64(sp * sizeof(int32_t)) + 3 * align64(groups * MLI_DOT_GROUP * sizeof(int64_t)) +
           align64(groups * (np + 1) * sizeof(int32_t)) + align64(groups * (sp + 1) * sizeof(int32_t)) +
           align64(MLI_DENSE_HOIST_STEPS * np * sizeof(int32_t)) +
           align64(MLI_DENSE_HOIST_STEPS * groups * MLI_DOT_GROUP * sizeof(int64_t)) +
           2 * align64(groups * sizeof(int64_t)) + align64(groups * MLI_DOT_GROUP * sizeof(int16_t)) +
           (dense_wide(groups, np, sp) ? align64(groups * np * 2 * MLI_DOT_GROUP * sizeof(int16_t)) +
                                             align64(groups * sp * 2 * MLI_DOT_GROUP * sizeof(int16_t))
                                       : 0);
}

size_t mlipy_workspace_size(int K, int N, int S) {
    return K > 0 && N >= 0 && S >= 0 ? mli_prv_dense_workspace_size(K, N, S) : 0;
}

int mli_prv_dense_wide8(const mli_dense_plan *plan) {
    if (!plan->packed || !plan->w_in16 || !plan->w_st16) return 0;
    mli_dense_l1_memo *m = plan->l1w;
    if (!m->have_wide) { /* the same values: no dot product changes */
        const size_t g = (size_t)plan->groups * 2 * MLI_DOT_GROUP;
        const int8_t *wi = (const int8_t *)(const void *)plan->w_in, *ws = (const int8_t *)(const void *)plan->w_st;
        for (size_t i = 0; i < g * (size_t)plan->n_pairs; i++) plan->w_in16[i] = wi[i];
        for (size_t i = 0; i < g * (size_t)plan->s_pairs; i++) plan->w_st16[i] = ws[i];
        m->have_wide = 1;
    }
    return 1;
}

/* Carve the plan's arrays out of the workspace; 0 when there is none, it is
 * too small, or the CPU has no SIMD path (the plain path is then faster). */
static int mli_prv_workspace_take(mli_dense_plan *plan, int K, int N, int S) {
    plan->w_in16 = plan->w_st16 = NULL;
    if (!workspace.buf || mlipy_get_isa() == MLIPY_ISA_SCALAR || K <= 0 || N < 0 || S < 0) return 0;
    if (mli_prv_dense_workspace_size(K, N, S) > workspace.size) return 0;
    plan->K = K;
    plan->N = N;
    plan->S = S;
    plan->groups = (K + MLI_DOT_GROUP - 1) / MLI_DOT_GROUP;
    plan->n_pairs = (N + 1) / 2;
    plan->s_pairs = (S + 1) / 2;
    plan->l1w = &((mli_pack_header *)workspace.buf)->l1w;
    plan->memo = &((mli_pack_header *)workspace.buf)->memo;
    char *p = (char *)align64((size_t)workspace.buf + sizeof(mli_pack_header));
    const size_t g = (size_t)plan->groups;
#define TAKE(field, type, count) plan->field = (type *)p; p += align64((size_t)(count) * sizeof(type))
    TAKE(w_in, int16_t, g * (size_t)plan->n_pairs * 2 * MLI_DOT_GROUP);
    TAKE(w_st, int16_t, g * (size_t)plan->s_pairs * 2 * MLI_DOT_GROUP);
    TAKE(x_in, int32_t, plan->n_pairs);
    TAKE(xlo_in, int32_t, plan->n_pairs);
    TAKE(x_st, int32_t, plan->s_pairs);
    TAKE(xlo_st, int32_t, plan->s_pairs);
    TAKE(s_in, int64_t, g * MLI_DOT_GROUP);
    TAKE(s_st, int64_t, g * MLI_DOT_GROUP);
    TAKE(bias_term, int64_t, g * MLI_DOT_GROUP);
    const size_t pad_n = ((size_t)N / MLI_DOT_ROW_PAD + 1) * MLI_DOT_ROW_PAD;
    const size_t pad_s = ((size_t)S / MLI_DOT_ROW_PAD + 1) * MLI_DOT_ROW_PAD;
    TAKE(r_in, int16_t, pad_n);
    TAKE(rlo_in, int16_t, pad_n);
    TAKE(r_st, int16_t, pad_s);
    TAKE(rlo_st, int16_t, pad_s);
    TAKE(chunk_in, int32_t, g * ((size_t)plan->n_pairs + 1));
    TAKE(chunk_st, int32_t, g * ((size_t)plan->s_pairs + 1));
    TAKE(x_all, int32_t, MLI_DENSE_HOIST_STEPS * (size_t)plan->n_pairs);
    TAKE(s_all, int64_t, MLI_DENSE_HOIST_STEPS * g * MLI_DOT_GROUP);
    TAKE(l1_in, int64_t, g);
    TAKE(l1_st, int64_t, g);
    TAKE(b_copy, int16_t, g * MLI_DOT_GROUP);
    if (dense_wide(g, (size_t)plan->n_pairs, (size_t)plan->s_pairs)) {
        TAKE(w_in16, int16_t, g * (size_t)plan->n_pairs * 2 * MLI_DOT_GROUP);
        TAKE(w_st16, int16_t, g * (size_t)plan->s_pairs * 2 * MLI_DOT_GROUP);
    }
#undef TAKE
    return 1;
}

#define DENSE_SFX fx8
#define DENSE_IO_T int8_t
#define DENSE_W_T int8_t
#define DENSE_W_BITS 8
#define DENSE_ACC40 0
#include "mli_prv_dense_impl.h"

#define DENSE_SFX fx16
#define DENSE_IO_T int16_t
#define DENSE_W_T int16_t
#define DENSE_W_BITS 16
#define DENSE_ACC40 1
#include "mli_prv_dense_impl.h"

#define DENSE_SFX fx8w16d
#define DENSE_IO_T int16_t
#define DENSE_W_T int8_t
#define DENSE_W_BITS 8
#define DENSE_ACC40 0
#include "mli_prv_dense_impl.h"
