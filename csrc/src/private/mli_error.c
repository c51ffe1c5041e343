/* The two pieces of global state of the C core: the thread-local record of
 * why the last call failed, and the process-wide DSP rounding mode. */
#include "mli_check.h"
#include "mli_math.h"

int mlipy_rounding_up = 0;

void mlipy_set_rounding(mlipy_rounding_mode mode) { mlipy_rounding_up = (mode == MLIPY_ROUND_UP); }
mlipy_rounding_mode mlipy_get_rounding(void) {
    return mlipy_rounding_up ? MLIPY_ROUND_UP : MLIPY_ROUND_CONVERGENT;
}

static MLIPY_THREAD_LOCAL mlipy_error_detail last_error;

const mlipy_error_detail *mlipy_last_error(void) { return &last_error; }

void mlipy_err_reset(const char *function) {
    mlipy_error_detail d = {MLI_STATUS_OK, function, "", "", "", 0, 0, 0, 0};
    last_error = d;
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
