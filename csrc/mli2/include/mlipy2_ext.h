/* mli-py extensions of its MLI 2.0.2 library (prefixed mlipy2_). */
#ifndef MLIPY2_EXT_H
#define MLIPY2_EXT_H

#include "mli_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ROUND_MODE of MLI 2.0.2's build, chosen at run time: 0 CONVERGENT (ties
 * to even), 1 UP (add one half, saturating, then floor).  A process default
 * and a per-thread override (-1 removes it); a call takes the mode once, at
 * its start. */
void mlipy2_set_rounding(int up);
void mlipy2_set_thread_rounding(int mode);
int mlipy2_get_thread_rounding(void);
int mlipy2_get_rounding(void);

/* Why the last call on this thread failed.  mlipy_safety = 1: MLI 2.0.2
 * would accept the call but crash or touch memory outside the buffers it was
 * given (a NULL pointer it dereferences, a rank-0 tensor in tanh/sigm, a LUT
 * object whose length exceeds its storage, cfg values out of range, a tensor
 * reaching past its capacity that MLI's 32-bit size check lets through, ...),
 * or compute from data it has overwritten (an output sharing bytes with an
 * operand it still reads, INCOMPATEBLE_TENSORS); mli-py refuses it with the
 * status named here instead. */
typedef struct {
    mli_status status;
    const char *function;
    const char *argument;
    const char *reason;
    int mlipy_safety;
} mlipy2_error_detail;
const mlipy2_error_detail *mlipy2_last_error(void);

/* Instruction-set path of the dot products: 0 scalar, 1 AVX2, 2 AVX-512
 * VNNI (environment variable MLIPY_ISA at first use); every path gives the
 * same integers. */
int mlipy2_get_isa(void);
int mlipy2_set_isa(int isa);
int mlipy2_isa_supported(int isa);

/* Interruption (beyond MLI): a poll function for this thread, called by the
 * LSTM and GRU cells every MLIPY2_POLL_STEPS time steps; when it returns
 * non-zero the cell stops and returns MLIPY2_STATUS_INTERRUPTED (not an
 * mli_status of MLI's): out (and an LSTM's cell) then hold the steps done so
 * far.  NULL (the default) never interrupts. */
#define MLIPY2_POLL_STEPS 1024
#define MLIPY2_STATUS_INTERRUPTED ((mli_status)64)
typedef int (*mlipy2_poll_fn)(void);
void mlipy2_set_poll(mlipy2_poll_fn fn);

#ifdef __cplusplus
}
#endif
#endif /* MLIPY2_EXT_H */
