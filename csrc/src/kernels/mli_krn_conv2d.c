/* 2D convolution: mli_krn_conv2d_chw_{fx8,fx16,fx8w16d} (dispatchers,
 * _generic, the specialisations of mli_krn_conv2d_spec_api.h and their
 * debug twins) and mli_krn_conv2d_hwc_{fx8,fx16,fx8w16d}. */
#include "mli_krn_common.h"
#include "../private/mli_prv_conv.h"

#define KRN_IMPL "mli_krn_conv2d_impl.h"
#include "mli_krn_variants.h"
