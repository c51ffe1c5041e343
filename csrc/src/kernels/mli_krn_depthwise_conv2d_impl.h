/* Template body of the depthwise convolutions of one kind
 * (SPEC_MLI11_MORE.md 2-4, 10): mli_krn_depthwise_conv2d_chw_<KRN_SFX> (the
 * dispatcher), its _generic, every specialisation of
 * MLIPY_DEPTHWISE_CONV2D_CHW_VARIANTS (mli_krn_depthwise_conv2d_spec_api.h)
 * and mli_debug_krn_depthwise_conv2d_chw_<KRN_SFX>, from
 * mli_krn_conv_chw_body.h: output channel c from input channel c, MLI's
 * fixed-padding border code for every call.
 * Parameters: KRN_SFX, KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL, KRN_W_EL. */
#if !defined(KRN_SFX) || !defined(KRN_IO_T) || !defined(KRN_W_T) || !defined(KRN_BITS) || \
    !defined(KRN_DATA_EL) || !defined(KRN_W_EL)
#error "define KRN_SFX, KRN_IO_T, KRN_W_T, KRN_BITS, KRN_DATA_EL and KRN_W_EL first"
#endif

#define CHW_FAMILY depthwise_conv2d_chw
#define CHW_VARIANTS MLIPY_DEPTHWISE_CONV2D_CHW_VARIANTS
#define CHW_DEPTHWISE 1
#include "mli_krn_conv_chw_body.h"

#undef KRN_SFX
#undef KRN_IO_T
#undef KRN_W_T
#undef KRN_DATA_EL
#undef KRN_W_EL
#undef KRN_BITS
