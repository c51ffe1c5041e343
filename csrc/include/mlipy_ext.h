/* mli-py extensions beyond the MLI 1.1 API (all prefixed mlipy_). */
#ifndef MLIPY_EXT_H
#define MLIPY_EXT_H

#include <stddef.h>
#include "mli_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DSP rounding mode of every rounding read-out and shift.
 * CONVERGENT = round half to even (MLI 1.1's build flag); UP = half up.
 * mlipy_set_rounding sets the process default; mlipy_set_thread_rounding
 * overrides it for the calling thread (-1 removes the override).  A call
 * takes the mode once, at its start, and uses it to its end.
 * mlipy_get_rounding: the mode a call started now on this thread would use. */
typedef enum { MLIPY_ROUND_CONVERGENT = 0, MLIPY_ROUND_UP = 1 } mlipy_rounding_mode;
void mlipy_set_rounding(mlipy_rounding_mode mode);
void mlipy_set_thread_rounding(int mode);
int mlipy_get_thread_rounding(void);
mlipy_rounding_mode mlipy_get_rounding(void);

/* Why the last call on this thread failed: which argument, which field,
 * expected and actual values.  Filled by the checkers; reset by every call. */
typedef struct {
    mli_status status;
    const char *function; /* e.g. "mli_krn_basic_rnn_cell_fx16" */
    const char *argument; /* e.g. "prev_out" */
    const char *field;    /* e.g. "shape[0]" */
    const char *reason;   /* one line */
    long long expected;
    long long actual;
    int has_values;   /* expected/actual are meaningful */
    int mlipy_safety; /* 1: MLI itself would not reject this call (it would read or
                         write out of bounds, or skip the write); mli-py does */
} mlipy_error_detail;

const mlipy_error_detail *mlipy_last_error(void);

/* Scratch memory the FC / basic RNN / LSTM kernels of this thread may use to
 * pack their weights once per call into the layout of the SIMD dot products
 * (mlipy_workspace_size(K, N, S) bytes for K rows of N input and S state
 * columns).  Without one (NULL) they run the plain path; the numbers are the
 * same either way. */
void mlipy_set_workspace(void *buf, size_t size);

/* Interruption (beyond MLI): a poll function for this thread, called by the
 * basic RNN and LSTM kernels every MLIPY_POLL_STEPS time steps; when it
 * returns non-zero the kernel stops and returns MLIPY_STATUS_INTERRUPTED
 * (not an mli_status of MLI's): out and cell then hold the steps done so
 * far.  NULL (the default) never interrupts. */
#define MLIPY_POLL_STEPS 1024
#define MLIPY_STATUS_INTERRUPTED ((mli_status)64)
typedef int (*mlipy_poll_fn)(void);
void mlipy_set_poll(mlipy_poll_fn fn);
/* The same, for a caller that calls one kernel again and again with the same
 * weights, unchanged: weights packed into `buf` by an earlier call are used
 * again without packing (the caller vouches that they did not change). */
void mlipy_set_workspace_reuse(void *buf, size_t size);
size_t mlipy_workspace_size(int K, int N, int S);

/* Instruction-set path of the dot products: 0 scalar, 1 AVX2, 2 AVX-512 VNNI.
 * Chosen at first use from the CPU (the environment variable MLIPY_ISA =
 * scalar | avx2 | avx512_vnni forces one it supports); mlipy_set_isa(-1)
 * chooses again, and returns -1 for a path the CPU lacks. */
int mlipy_get_isa(void);
int mlipy_set_isa(int isa);
int mlipy_isa_supported(int isa);
const char *mlipy_isa_name(int isa);

/* The steps of one LSTM time step (what mli_krn_lstm_cell_* runs per step),
 * so that tests can reach one at a time.  `gates` holds 4*M values in MLI's
 * order i, g, f, o: dense results (frac f_ir) before mlipy_lstm_gates_*,
 * activated Q15 / Q7 values after it. */
#define MLIPY_LSTM_STEPS_DECL(sfx, io_t)                                                        \
    void mlipy_lstm_gates_##sfx(io_t *gates, int M, int f_ir);                                  \
    void mlipy_lstm_cell_update_##sfx(const io_t *gates, int M, io_t *c, int ir_shift);         \
    void mlipy_lstm_hidden_##sfx(const io_t *gates, int M, const io_t *c, int f_c,              \
                                 mli_rnn_out_activation act, int mshift, io_t *h);
MLIPY_LSTM_STEPS_DECL(fx8, int8_t)
MLIPY_LSTM_STEPS_DECL(fx16, int16_t)
MLIPY_LSTM_STEPS_DECL(fx8w16d, int16_t)

/* Batched rows (beyond MLI 1.1): B = `rows` independent rows through one
 * LSTM / basic RNN cell whose weights, bias and cfg they share.  Row r is
 * what a kernel call would get: in[r], prev_out[r] (and cell[r]), out[r],
 * arrays of `rows` tensors.  The rows advance one step at a time together,
 * so that each step's dense part reads the weights once for all of them.
 *
 * Results: out[r] (and cell[r], updated in place) are bit for bit those of
 * mli_krn_lstm_cell_<sfx>(&in[r], &prev_out[r], weights, bias, cfg,
 * &cell[r], &out[r]) (resp. mli_krn_basic_rnn_cell_<sfx>), for every row,
 * rounding mode and instruction-set path; out[r]'s fields are set as that
 * call sets them.  cfg->ir_tsr is checked as a kernel call checks it but
 * neither read nor written (the rows keep their own scratch).
 *
 * Checks, before anything is written: rows >= 1 (MLI_STATUS_ARGUMENT_ERROR);
 * every row, in order, with the kernel's own checks and statuses; then the
 * rows' own conditions: cfg->mode one of the three RNN modes
 * (MLI_STATUS_BAD_FUNC_CFG), every row with row 0's frac bits (in, prev_out,
 * cell; out for a basic RNN with act NONE) and step count
 * (MLI_STATUS_INCOMPATEBLE_TENSORS), and no out or cell overlapping any
 * other tensor of the call (MLI_STATUS_INCOMPATEBLE_TENSORS, an mli-py
 * safety check).  A basic RNN row whose out is too small for its steps
 * (where a kernel call returns OK and writes nothing) is refused with
 * MLI_STATUS_NOT_ENGH_MEM.  On failure *failed_row (may be NULL) is the row
 * at fault (-1 when no single row is) and mlipy_last_error() says why; out
 * and cell are then unchanged.  MLIPY_STATUS_INTERRUPTED (the poll function
 * of mlipy_set_poll, asked every MLIPY_POLL_STEPS row steps) leaves out and
 * cell partly written.  Scratch memory is allocated per call
 * (MLI_STATUS_NOT_ENGH_MEM when that fails); the thread's workspace
 * (mlipy_set_workspace) is left unset. */
#define MLIPY_ROWS_DECL(sfx)                                                                             \
    mli_status mlipy_lstm_cell_rows_##sfx(int rows, const mli_tensor *in, const mli_tensor *prev_out,     \
                                          const mli_tensor *weights, const mli_tensor *bias,              \
                                          const mli_rnn_cell_cfg *cfg, mli_tensor *cell, mli_tensor *out, \
                                          int *failed_row);                                               \
    mli_status mlipy_basic_rnn_cell_rows_##sfx(int rows, const mli_tensor *in, const mli_tensor *prev_out, \
                                               const mli_tensor *weights, const mli_tensor *bias,         \
                                               const mli_rnn_cell_cfg *cfg, mli_tensor *out, int *failed_row);
MLIPY_ROWS_DECL(fx8)
MLIPY_ROWS_DECL(fx16)
MLIPY_ROWS_DECL(fx8w16d)

/* The argument checks of mli_krn_basic_rnn_cell_<kind> / mli_krn_lstm_cell_<kind>
 * alone (kind 0 fx8, 1 fx16, 2 fx8w16d), as the kernel runs them before
 * anything else: MLI's order and status, mlipy_last_error() naming the
 * kernel, argument and field.  Only the tensors' fields are read (never their
 * data) and nothing is written, so a caller can check its arguments before it
 * allocates the outputs their shapes ask for (an out or cfg->ir_tsr whose
 * data points anywhere and whose capacity is 0xFFFFFFFF passes every check
 * but the one of a result larger than any capacity).  A basic RNN out too
 * small for its steps is MLI_STATUS_OK here, as in the kernel.  Another kind
 * is MLI_STATUS_ARGUMENT_ERROR. */
mli_status mlipy_check_basic_rnn_cell(int kind, const mli_tensor *in, const mli_tensor *prev_out,
                                      const mli_tensor *weights, const mli_tensor *bias,
                                      const mli_rnn_cell_cfg *cfg, const mli_tensor *out);
mli_status mlipy_check_lstm_cell(int kind, const mli_tensor *in, const mli_tensor *prev_out,
                                 const mli_tensor *weights, const mli_tensor *bias,
                                 const mli_rnn_cell_cfg *cfg, const mli_tensor *cell, const mli_tensor *out);


/* Float32 recurrent sequences (beyond MLI, which has no float kernels): the
 * runner of the OpenVINO IR reader's LSTMSequence / GRUSequence / RNNSequence
 * (default activations).  x [B][T][N]; h0, c0, h_out, c_out [B][nd][M];
 * lengths [B] in [0, T]; w [nd][G*M][N], r [nd][G*M][M], bias [nd][NB*M]
 * (G = 4 LSTM gates f,i,c,o / 3 GRU gates z,r,n / 1; NB = 4 for GRU with
 * linear_before_reset, else G); y [B][nd][T][M]; reverse[d] per direction.
 * c0/c_out: LSTM only (else ignored).  `act`: the RNN activation (LSTM and GRU
 * use sigmoid/tanh).  clip > 0 clips the gate pre-activations.  The order of
 * operations is fixed and documented in mlipy_float_rnn.c (exp and tanh in
 * plain float arithmetic there, not libm's); every ISA path gives the same bits.  Returns 0, MLIPY_FRNN_EINVAL
 * (bad argument; nothing written) or MLIPY_FRNN_ENOMEM (scratch not allocated). */
enum { MLIPY_FRNN_RNN = 0, MLIPY_FRNN_GRU = 1, MLIPY_FRNN_LSTM = 2 };
enum { MLIPY_FRNN_TANH = 0, MLIPY_FRNN_SIGMOID = 1, MLIPY_FRNN_RELU = 2 };
#define MLIPY_FRNN_EINVAL (-1)
#define MLIPY_FRNN_ENOMEM (-2)
int mlipy_float_rnn_sequence(int cell, int act, int lbr, float clip, int B, int T, int N, int M,
                             int nd, const int *reverse, const float *x, const float *h0,
                             const float *c0, const int64_t *lengths, const float *w,
                             const float *r, const float *bias, float *y, float *h_out,
                             float *c_out);

#ifdef __cplusplus
}
#endif
#endif /* MLIPY_EXT_H */
