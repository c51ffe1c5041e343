/* mli-py: the shape-specialised depthwise convolutions of MLI 1.1 (MLI's
 * mli_krn_depthwise_conv2d_spec_api.h, names and arguments as MLI's).
 *
 * As for conv2d (mli_krn_conv2d_spec_api.h): a specialisation computes with
 * its fixed values in place of the call's, unchecked; the dispatcher
 * mli_krn_depthwise_conv2d_chw_<kind> calls the first one in
 * MLIPY_DEPTHWISE_CONV2D_CHW_VARIANTS whose condition the call meets (every
 * call of stride 1 meets one: str1_krnpad takes any padding), else
 * mli_krn_depthwise_conv2d_chw_<kind>_generic; the debug twin returns the
 * name.  Here `ch` fixes the channel count, which is also the number of
 * output channels computed. */
#ifndef MLI_KRN_DEPTHWISE_CONV2D_SPEC_API_H
#define MLI_KRN_DEPTHWISE_CONV2D_SPEC_API_H

#include "mli_types.h"
#include "mli_krn_conv2d_spec_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(kinds, suffix, kw, kh, ch, stride, pad, core_fx16, core_fx8), columns as
 * MLIPY_CONV2D_CHW_VARIANTS's, in the dispatcher's order.  Every one runs
 * MLI's stride-1 loop nest, with its fixed-padding border code (MLI passes
 * "fixed padding" for every depthwise call). */
#define MLIPY_DEPTHWISE_CONV2D_CHW_VARIANTS(X) \
    X(ALL, k7x7_ch1_str1_nopad, 7, 7, 1, 1, NOPAD, STR1, STR1)    \
    X(ALL, k7x7_ch1_str1_krnpad, 7, 7, 1, 1, KRNPAD, STR1, STR1)  \
    X(ALL, k7x7_str1_nopad, 7, 7, 0, 1, NOPAD, STR1, STR1)        \
    X(ALL, k7x7_str1_krnpad, 7, 7, 0, 1, KRNPAD, STR1, STR1)      \
    X(ALL, k6x6_ch1_str1_nopad, 6, 6, 1, 1, NOPAD, STR1, STR1)    \
    X(ALL, k6x6_ch1_str1_krnpad, 6, 6, 1, 1, KRNPAD, STR1, STR1)  \
    X(ALL, k6x6_str1_nopad, 6, 6, 0, 1, NOPAD, STR1, STR1)        \
    X(ALL, k6x6_str1_krnpad, 6, 6, 0, 1, KRNPAD, STR1, STR1)      \
    X(ALL, k5x5_ch1_str1_nopad, 5, 5, 1, 1, NOPAD, STR1, STR1)    \
    X(ALL, k5x5_ch1_str1_krnpad, 5, 5, 1, 1, KRNPAD, STR1, STR1)  \
    X(ALL, k5x5_str1_nopad, 5, 5, 0, 1, NOPAD, STR1, STR1)        \
    X(ALL, k5x5_str1_krnpad, 5, 5, 0, 1, KRNPAD, STR1, STR1)      \
    X(ALL, k4x4_ch1_str1_nopad, 4, 4, 1, 1, NOPAD, STR1, STR1)    \
    X(ALL, k4x4_ch1_str1_krnpad, 4, 4, 1, 1, KRNPAD, STR1, STR1)  \
    X(ALL, k4x4_str1_nopad, 4, 4, 0, 1, NOPAD, STR1, STR1)        \
    X(ALL, k4x4_str1_krnpad, 4, 4, 0, 1, KRNPAD, STR1, STR1)      \
    X(ALL, k3x3_ch1_str1_nopad, 3, 3, 1, 1, NOPAD, STR1, STR1)    \
    X(ALL, k3x3_ch1_str1_krnpad, 3, 3, 1, 1, KRNPAD, STR1, STR1)  \
    X(ALL, k3x3_str1_nopad, 3, 3, 0, 1, NOPAD, STR1, STR1)        \
    X(ALL, k3x3_str1_krnpad, 3, 3, 0, 1, KRNPAD, STR1, STR1)      \
    X(ALL, k2x2_ch1_str1_nopad, 2, 2, 1, 1, NOPAD, STR1, STR1)    \
    X(ALL, k2x2_ch1_str1_krnpad, 2, 2, 1, 1, KRNPAD, STR1, STR1)  \
    X(ALL, k2x2_str1_nopad, 2, 2, 0, 1, NOPAD, STR1, STR1)        \
    X(ALL, k2x2_str1_krnpad, 2, 2, 0, 1, KRNPAD, STR1, STR1)      \
    X(ALL, k2x1_ch1_str1_nopad, 2, 1, 1, 1, NOPAD, STR1, STR1)    \
    X(ALL, k2x1_ch1_str1_krnpad, 2, 1, 1, 1, KRNPAD, STR1, STR1)  \
    X(ALL, k1x2_ch1_str1_nopad, 1, 2, 1, 1, NOPAD, STR1, STR1)    \
    X(ALL, k1x2_ch1_str1_krnpad, 1, 2, 1, 1, KRNPAD, STR1, STR1)  \
    X(ALL, k1xn_str1, 1, 0, 0, 1, NONE, STR1, STR1)               \
    X(ALL, knx1_str1, 0, 1, 0, 1, NONE, STR1, STR1)               \
    X(ALL, ch1_str1, 0, 0, 1, 1, NONE, STR1, STR1)                \
    X(ALL, str1_krnpad, 0, 0, 0, 1, KRNPAD, STR1, STR1)

#define MLIPY_DEPTHWISE_DECL_FX8_(kinds, sfx, kw, kh, ch, str, pad, c16, c8) \
    MLIPY_CONV_KEEP_##kinds##_fx8(MLIPY_CONV_SPEC_PROTO_(mli_krn_depthwise_conv2d_chw_fx8_##sfx))
#define MLIPY_DEPTHWISE_DECL_FX16_(kinds, sfx, kw, kh, ch, str, pad, c16, c8) \
    MLIPY_CONV_KEEP_##kinds##_fx16(MLIPY_CONV_SPEC_PROTO_(mli_krn_depthwise_conv2d_chw_fx16_##sfx))
#define MLIPY_DEPTHWISE_DECL_FX8W16D_(kinds, sfx, kw, kh, ch, str, pad, c16, c8) \
    MLIPY_CONV_KEEP_##kinds##_fx8w16d(MLIPY_CONV_SPEC_PROTO_(mli_krn_depthwise_conv2d_chw_fx8w16d_##sfx))

MLIPY_DEPTHWISE_CONV2D_CHW_VARIANTS(MLIPY_DEPTHWISE_DECL_FX8_)
MLIPY_DEPTHWISE_CONV2D_CHW_VARIANTS(MLIPY_DEPTHWISE_DECL_FX16_)
MLIPY_DEPTHWISE_CONV2D_CHW_VARIANTS(MLIPY_DEPTHWISE_DECL_FX8W16D_)

char *mli_debug_krn_depthwise_conv2d_chw_fx8(const mli_tensor *in, const mli_tensor *weights,
                                             const mli_tensor *bias, const mli_conv2d_cfg *cfg, mli_tensor *out);
char *mli_debug_krn_depthwise_conv2d_chw_fx16(const mli_tensor *in, const mli_tensor *weights,
                                              const mli_tensor *bias, const mli_conv2d_cfg *cfg, mli_tensor *out);
char *mli_debug_krn_depthwise_conv2d_chw_fx8w16d(const mli_tensor *in, const mli_tensor *weights,
                                                 const mli_tensor *bias, const mli_conv2d_cfg *cfg,
                                                 mli_tensor *out);

#ifdef __cplusplus
}
#endif
#endif /* MLI_KRN_DEPTHWISE_CONV2D_SPEC_API_H */
