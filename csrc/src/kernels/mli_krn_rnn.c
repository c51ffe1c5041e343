/* Basic RNN cell: mli_krn_basic_rnn_cell_{fx8,fx16,fx8w16d}. */
#include <string.h>
#include "mli_krn_common.h"
#include "mli_krn_rnn_avx2.h"

#define KRN_IMPL "mli_krn_rnn_impl.h"
#include "mli_krn_variants.h"
