/* LSTM cell: mli_krn_lstm_cell_{fx8,fx16,fx8w16d}, and its steps
 * (mlipy_lstm_gates_*, mlipy_lstm_cell_update_*, mlipy_lstm_hidden_*),
 * exported so that tests can reach one step at a time. */
#include "mli_krn_common.h"

#define KRN_IMPL "mli_krn_lstm_impl.h"
#include "mli_krn_variants.h"
