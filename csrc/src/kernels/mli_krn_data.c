/* Data movement (SPEC_MLI11_MORE 9): mli_krn_{permute,concat,padding2d_chw,
 * padding2d_hwc}_{fx8,fx16}. */
#include <string.h>
#include "mli_krn_common.h"

#define KRN_NO_FX8W16D
#define KRN_IMPL "mli_krn_data_impl.h"
#include "mli_krn_variants.h"
