/* Global state of the MLI 2.0.2 library: ROUND_MODE (process default,
 * per-thread override, the mode of the running call) and the thread-local
 * record of why the last call failed. */
#include <stdio.h>
#include "mli2_prv.h"

MLI2_HIDDEN MLI2_THREAD_LOCAL int mli2_round_up = 0;
static volatile int round_default = 0;
static MLI2_THREAD_LOCAL int round_thread = -1;

void mlipy2_set_rounding(int up) { round_default = up ? 1 : 0; }
void mlipy2_set_thread_rounding(int mode) { round_thread = mode < 0 ? -1 : (mode ? 1 : 0); }
int mlipy2_get_thread_rounding(void) { return round_thread; }
int mlipy2_get_rounding(void) { return round_thread >= 0 ? round_thread : round_default; }

static MLI2_THREAD_LOCAL mlipy2_error_detail last_error;

const mlipy2_error_detail *mlipy2_last_error(void) { return &last_error; }

void mli2_begin(const char *function) {
    mlipy2_error_detail d = {MLI_STATUS_OK, function, "", "", 0};
    last_error = d;
    mli2_round_up = mlipy2_get_rounding();
}

mli_status mli2_fail(mli_status st, const char *arg, const char *reason) {
    last_error.status = st;
    last_error.argument = arg;
    last_error.reason = reason;
    last_error.mlipy_safety = 0;
    return st;
}

mli_status mli2_refuse(mli_status st, const char *arg, const char *reason) {
    mli2_fail(st, arg, reason);
    last_error.mlipy_safety = 1;
    return st;
}

static MLI2_THREAD_LOCAL char overlap_reason[192];

mli_status mli2_refuse_overlap(const char *arg, const char *what, const char *other) {
    snprintf(overlap_reason, sizeof overlap_reason,
             "%s%soverlaps %s (MLI 2.0.2 would read data it has already overwritten; mli-py refuses such layouts)",
             what ? what : "", what ? " " : "", other);
    return mli2_refuse(MLI_STATUS_INCOMPATEBLE_TENSORS, arg, overlap_reason);
}

static MLI2_THREAD_LOCAL mlipy2_poll_fn poll_fn = 0;
void mlipy2_set_poll(mlipy2_poll_fn fn) { poll_fn = fn; }
int mli2_poll_now(long step) { return poll_fn && step % MLIPY2_POLL_STEPS == MLIPY2_POLL_STEPS - 1 && poll_fn(); }
