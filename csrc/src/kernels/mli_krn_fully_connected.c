/* Fully connected layer: mli_krn_fully_connected_{fx8,fx16,fx8w16d}. */
#include "mli_krn_common.h"

#define KRN_IMPL "mli_krn_fully_connected_impl.h"
#include "mli_krn_variants.h"
