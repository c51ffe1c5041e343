/* Batched rows (beyond MLI 1.1): mlipy_lstm_cell_rows_{fx8,fx16,fx8w16d}
 * and mlipy_basic_rnn_cell_rows_{fx8,fx16,fx8w16d} run B independent rows
 * (each its own input sequence, state, cell and outputs) through one cell
 * with shared weights, bias and cfg, all rows advancing one step at a time,
 * so that each step's dense part is one matrix x matrix product over the
 * rows; on AVX2, where the kernel's fused step applies, the rows advance
 * together one step at a time each through that step (rows_lstm_avx2_*,
 * rows_rnn_avx2_*); on AVX-512 VNNI a basic RNN whose K is a multiple of 16
 * advances 8 rows at a time through a batched step (rows_rnn_avx512_*,
 * mlipy_rows_avx512.h) and an LSTM where the AVX-512 fused step runs goes
 * row after row through the kernel (rows_lstm_per_row).  Results are those
 * of B separate MLI calls (see mlipy_ext.h). */
#include <stdlib.h>
#include <string.h>
#include "mli_krn_common.h"
#include "mli_krn_lstm_avx2.h"
#include "mli_krn_rnn_avx2.h"
#include "mlipy_rows_avx512.h"

/* Rows advanced together: their sums and gates stay in L2 (64 x 128 int64). */
#define ROWS_BLOCK 64
/* Rows advanced together through the AVX2 fused steps (rows_lstm_avx2_*). */
#define ROWS_TOGETHER 4
/* Steps from which an LSTM row runs through the kernel's fused step (rows_lstm_per_row). */
#define ROWS_PER_ROW_MIN_STEPS 8

/* A byte range a call reads or writes, for the aliasing test. */
typedef struct {
    uintptr_t lo, hi;
    int row;         /* -1: shared by every row (weights, bias) */
    int out;         /* 1: the call writes it */
    const char *arg; /* "in", "prev_out", "weights", "bias", "cell", "out" */
} rows_span;

static int span_cmp(const void *a, const void *b) {
    const rows_span *x = (const rows_span *)a, *y = (const rows_span *)b;
    return x->lo < y->lo ? -1 : (x->lo > y->lo ? 1 : 0);
}

static void span_add(rows_span *sp, size_t *n, const mli_tensor *t, int row, int out, const char *arg) {
    if (!t->data || !t->capacity) return;
    rows_span s = {(uintptr_t)t->data, (uintptr_t)t->data + t->capacity, row, out, arg};
    sp[(*n)++] = s;
}

static const char *overlap_reason(const char *other) {
    if (!strcmp(other, "in")) return "overlaps the in of a row (outputs must not alias inputs)";
    if (!strcmp(other, "prev_out")) return "overlaps the prev_out of a row (outputs must not alias inputs)";
    if (!strcmp(other, "weights")) return "overlaps weights (outputs must not alias inputs)";
    if (!strcmp(other, "bias")) return "overlaps bias (outputs must not alias inputs)";
    if (!strcmp(other, "cell")) return "overlaps the cell of a row (outputs must not alias each other)";
    return "overlaps the out of a row (outputs must not alias each other)";
}

/* OK when no written range overlaps any other range: sorted by start, a
 * range overlaps an earlier one iff it starts before the largest end so far
 * (of any range, or of the written ones for a read-only range). */
static mli_status rows_no_alias(rows_span *sp, size_t n, int *failed_row) {
    qsort(sp, n, sizeof *sp, span_cmp);
    const rows_span *any = NULL, *wr = NULL;
    for (size_t i = 0; i < n; i++) {
        const rows_span *c = &sp[i], *o = NULL, *other = NULL;
        if (c->out && any && c->lo < any->hi) o = c, other = any;
        else if (!c->out && wr && c->lo < wr->hi) o = wr, other = c;
        if (o) {
            *failed_row = o->row;
            return mlipy_err_safety(MLI_STATUS_INCOMPATEBLE_TENSORS, o->arg, "data", overlap_reason(other->arg));
        }
        if (!any || c->hi > any->hi) any = c;
        if (c->out && (!wr || c->hi > wr->hi)) wr = c;
    }
    return MLI_STATUS_OK;
}

/* Every row must share the frac bits and the step count of row 0: the rows
 * share one dense plan and one set of shifts. */
static mli_status rows_same(const mli_tensor *t, const mli_tensor *t0, const char *arg, int steps_too, int row,
                            int *failed_row) {
    if (t->el_params.fx.frac_bits != t0->el_params.fx.frac_bits) {
        *failed_row = row;
        return mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, arg, "frac_bits",
                             "must equal row 0's (the rows share one plan)", t0->el_params.fx.frac_bits,
                             t->el_params.fx.frac_bits);
    }
    if (steps_too && t->shape[0] != t0->shape[0]) {
        *failed_row = row;
        return mlipy_err_val(MLI_STATUS_INCOMPATEBLE_TENSORS, arg, "shape[0]",
                             "(the step count) must equal row 0's", t0->shape[0], t->shape[0]);
    }
    return MLI_STATUS_OK;
}

/* The checks every rows call starts with. */
static mli_status rows_args(int rows, const void *in, const void *prev_out, const void *out, const void *cell,
                            int lstm) {
    if (rows < 1) return mlipy_err_val(MLI_STATUS_ARGUMENT_ERROR, "rows", "", "must be at least 1", 1, rows);
    if (!in) return mlipy_err(MLI_STATUS_BAD_TENSOR, "in", "", "is a NULL array of row tensors");
    if (!prev_out) return mlipy_err(MLI_STATUS_BAD_TENSOR, "prev_out", "", "is a NULL array of row tensors");
    if (lstm && !cell) return mlipy_err(MLI_STATUS_BAD_TENSOR, "cell", "", "is a NULL array of row tensors");
    if (!out) return mlipy_err(MLI_STATUS_BAD_TENSOR, "out", "", "is a NULL array of row tensors");
    return MLI_STATUS_OK;
}

/* What the rows of one call must share beyond a kernel call's own checks
 * (run after them): a mode of the three RNN modes, row 0's frac bits and
 * step count (in, prev_out, the LSTM cell; out where its frac bits are an
 * input), and no written range overlapping any other.  `cell` NULL: basic RNN. */
static mli_status rows_shared(int rows, const mli_tensor *in, const mli_tensor *prev_out, const mli_tensor *weights,
                              const mli_tensor *bias, const mli_rnn_cell_cfg *cfg, const mli_tensor *cell,
                              const mli_tensor *out, int *failed_row) {
    const mli_rnn_mode mode = cfg->mode;
    if (mode != RNN_ONE_TO_ONE && mode != RNN_BATCH_TO_BATCH && mode != RNN_BATCH_TO_LAST)
        return mlipy_err_val(MLI_STATUS_BAD_FUNC_CFG, "cfg", "mode",
                             "must be RNN_ONE_TO_ONE, RNN_BATCH_TO_BATCH or RNN_BATCH_TO_LAST for rows", 0, mode);
    const int out_frac_is_input = !cell && cfg->act == RNN_ACT_NONE;
    mli_status st;
    for (int r = 1; r < rows; r++) {
        if ((st = rows_same(&in[r], &in[0], "in", mode != RNN_ONE_TO_ONE, r, failed_row)) != MLI_STATUS_OK ||
            (st = rows_same(&prev_out[r], &prev_out[0], "prev_out", 0, r, failed_row)) != MLI_STATUS_OK ||
            (cell && (st = rows_same(&cell[r], &cell[0], "cell", 0, r, failed_row)) != MLI_STATUS_OK) ||
            (out_frac_is_input && (st = rows_same(&out[r], &out[0], "out", 0, r, failed_row)) != MLI_STATUS_OK))
            return st;
    }
    rows_span *sp = (rows_span *)malloc(((size_t)rows * 4 + 2) * sizeof(rows_span));
    if (!sp) return mlipy_err(MLI_STATUS_NOT_ENGH_MEM, "rows", "", "too many rows for the aliasing test's memory");
    size_t ns = 0;
    span_add(sp, &ns, weights, -1, 0, "weights");
    span_add(sp, &ns, bias, -1, 0, "bias");
    for (int r = 0; r < rows; r++) {
        span_add(sp, &ns, &in[r], r, 0, "in");
        span_add(sp, &ns, &prev_out[r], r, 0, "prev_out");
        if (cell) span_add(sp, &ns, &cell[r], r, 1, "cell");
        span_add(sp, &ns, &out[r], r, 1, "out");
    }
    st = rows_no_alias(sp, ns, failed_row);
    free(sp);
    return st;
}

/* Whether an LSTM rows call runs its rows one after another through the
 * kernel itself: where the kernel's fused AVX-512 VNNI time step can run (M a
 * multiple of 16) a row's sequence costs less alone than as part of the
 * shared-weights engine below, whose dense part, LUTs and cell update go
 * through memory between stages; a sequence of a few steps still gains from
 * sharing the weights' packing. */
static int rows_lstm_per_row(int M, long T) {
    return mlipy_get_isa() == MLIPY_ISA_AVX512_VNNI && M % MLI_DOT_GROUP == 0 && T >= ROWS_PER_ROW_MIN_STEPS;
}

/* The call's state that the rows functions change and put back: the
 * rounding mode pinned for the whole call (the cell steps they reuse take
 * the thread's mode at their entry) and the thread's workspace. */
typedef struct {
    int thread_rounding;
} rows_saved;

static void rows_enter(rows_saved *s) {
    s->thread_rounding = mlipy_get_thread_rounding();
    mlipy_set_thread_rounding(mlipy_rounding_up);
}

static void rows_leave(const rows_saved *s) {
    mlipy_set_workspace(NULL, 0);
    mlipy_set_thread_rounding(s->thread_rounding);
}

/* The input as int32 pairs (low half x[2p], high half x[2p+1], 0 past n):
 * the vector layout of the packed dot products (mli_prv_dotprod.h). */
#define ROWS_PAIRS(sfx, io_t)                                                                             \
    static void rows_pairs_##sfx(const io_t *v, int n, int32_t *out) {                                    \
        for (int p = 0; p < n / 2; p++)                                                                   \
            out[p] = (int32_t)((uint32_t)(uint16_t)(int16_t)v[2 * p] |                                    \
                               ((uint32_t)(uint16_t)(int16_t)v[2 * p + 1] << 16));                        \
        if (n % 2) out[n / 2] = (int32_t)(uint32_t)(uint16_t)(int16_t)v[n - 1];                           \
    }
ROWS_PAIRS(i8, int8_t)
ROWS_PAIRS(i16, int16_t)

#define KRN_IMPL "mlipy_rows_impl.h"
#include "mli_krn_variants.h"
