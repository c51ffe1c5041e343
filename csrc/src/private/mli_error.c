/* The global state of the C core: the thread-local record of why the
 * last call failed, and the DSP rounding mode (a process default, a
 * per-thread override, and the mode the running call uses). */
#include "mli_check.h"
#include "mli_math.h"

/* The mode of the call running on this thread: fixed at the call's entry
 * (mlipy_err_reset), so that one call never mixes modes. */
MLIPY_THREAD_LOCAL int mlipy_rounding_up = 0;
static volatile int round_default = 0;            /* mlipy_set_rounding */
static MLIPY_THREAD_LOCAL int round_thread = -1;   /* mlipy_set_thread_rounding; -1: none */

static int round_effective(void) { return round_thread >= 0 ? round_thread : round_default; }

void mlipy_set_rounding(mlipy_rounding_mode mode) { round_default = (mode == MLIPY_ROUND_UP); }
void mlipy_set_thread_rounding(int mode) { round_thread = mode < 0 ? -1 : (mode == MLIPY_ROUND_UP); }
int mlipy_get_thread_rounding(void) { return round_thread; }
mlipy_rounding_mode mlipy_get_rounding(void) {
    return round_effective() ? MLIPY_ROUND_UP : MLIPY_ROUND_CONVERGENT;
}
void mlipy_rounding_begin(void) { mlipy_rounding_up = round_effective(); }

static MLIPY_THREAD_LOCAL mlipy_error_detail last_error;

const mlipy_error_detail *mlipy_last_error(void) { return &last_error; }

void mlipy_err_reset(const char *function) {
    mlipy_error_detail d = {MLI_STATUS_OK, function, "", "", "", 0, 0, 0, 0};
    last_error = d;
    mlipy_rounding_begin(); /* every public entry point starts here */
}

mli_status mlipy_err(mli_status st, const char *arg, const char *field, const char *reason) {
    last_error.status = st;
    last_error.argument = arg;
    last_error.field = field;
    last_error.reason = reason;
    last_error.has_values = 0;
    last_error.mlipy_safety = 0;
    return st;
}

mli_status mlipy_err_val(mli_status st, const char *arg, const char *field, const char *reason,
                         long long expected, long long actual) {
    mlipy_err(st, arg, field, reason);
    last_error.expected = expected;
    last_error.actual = actual;
    last_error.has_values = 1;
    return st;
}

mli_status mlipy_err_safety(mli_status st, const char *arg, const char *field, const char *reason) {
    mlipy_err(st, arg, field, reason);
    last_error.mlipy_safety = 1;
    return st;
}

static MLIPY_THREAD_LOCAL mlipy_poll_fn poll_fn = 0;
void mlipy_set_poll(mlipy_poll_fn fn) { poll_fn = fn; }
int mlipy_poll_now(long step) {
    return poll_fn && step % MLIPY_POLL_STEPS == MLIPY_POLL_STEPS - 1 && poll_fn();
}
