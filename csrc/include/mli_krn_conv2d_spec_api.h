/* mli-py: the shape-specialised 2D convolutions of MLI 1.1 (MLI's
 * mli_krn_conv2d_spec_api.h, names and arguments as MLI's).
 *
 * A specialisation computes with its fixed values (kernel size, input
 * channels, stride, padding) in place of those of the call, without checking
 * them; the dispatcher mli_krn_conv2d_chw_<kind> (mli_kernels_api.h) calls the
 * first one in MLIPY_CONV2D_CHW_VARIANTS whose condition the call meets, else
 * mli_krn_conv2d_chw_<kind>_generic.  mli_debug_krn_conv2d_chw_<kind> takes
 * the dispatcher's arguments and returns the name of the function it would
 * call, computing nothing (NULL when cfg, in or weights is NULL, where MLI
 * itself crashes). */
#ifndef MLI_KRN_CONV2D_SPEC_API_H
#define MLI_KRN_CONV2D_SPEC_API_H

#include "mli_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The table every conv2d_chw specialisation is generated from, in the order
 * of the dispatcher's if-chain:
 *   X(kinds, suffix, kw, kh, ch, stride, pad, core_fx16, core_fx8)
 * kinds   ALL: fx8, fx16 and fx8w16d; FX16: fx16 only
 * kw, kh  fixed kernel width / height; ch: fixed input channels; stride: fixed
 *         stride in both directions (0: the call's value)
 * pad     NOPAD: all paddings fixed at 0; KRNPAD: with stride 1 and a fixed
 *         kernel, fixed at the 'same' padding (kh-1)/2, kh/2, (kw-1)/2, kw/2
 *         (top, bottom, left, right), otherwise the call's padding, which
 *         the dispatcher requires to be at most that; NONE: the call's
 * core    the loop nest of MLI 1.1 that computes it (for fx16, and for fx8 /
 *         fx8w16d): ANY (any stride, border columns apart), STR1 (stride 1,
 *         two outputs at a time in the interior), K1X1_STR1 (1x1 kernel,
 *         two outputs at a time), SIMPLE (one output at a time, clipped) */
#define MLIPY_CONV2D_CHW_VARIANTS(X)                                   \
    X(ALL, k7x7_ch1_str1_krnpad, 7, 7, 1, 1, KRNPAD, STR1, STR1)       \
    X(ALL, k7x7_str1_krnpad, 7, 7, 0, 1, KRNPAD, STR1, STR1)           \
    X(ALL, k6x6_ch1_str1_krnpad, 6, 6, 1, 1, KRNPAD, STR1, STR1)       \
    X(ALL, k6x6_str1_krnpad, 6, 6, 0, 1, KRNPAD, STR1, STR1)           \
    X(FX16, k5x5_ch1_str1_nopad, 5, 5, 1, 1, NOPAD, STR1, STR1)        \
    X(ALL, k5x5_ch1_str1_krnpad, 5, 5, 1, 1, KRNPAD, STR1, STR1)       \
    X(FX16, k5x5_str1_nopad, 5, 5, 0, 1, NOPAD, STR1, STR1)            \
    X(ALL, k5x5_str1_krnpad, 5, 5, 0, 1, KRNPAD, STR1, STR1)           \
    X(ALL, k4x4_ch1_str1_krnpad, 4, 4, 1, 1, KRNPAD, STR1, STR1)       \
    X(ALL, k4x4_str1_krnpad, 4, 4, 0, 1, KRNPAD, STR1, STR1)           \
    X(ALL, k3x3_ch1_str1_krnpad, 3, 3, 1, 1, KRNPAD, STR1, STR1)       \
    X(ALL, k3x3_str1_krnpad, 3, 3, 0, 1, KRNPAD, STR1, STR1)           \
    X(ALL, k3x1_str1_krnpad, 3, 1, 0, 1, KRNPAD, STR1, STR1)           \
    X(ALL, k2x2_ch1_str1_krnpad, 2, 2, 1, 1, KRNPAD, STR1, STR1)       \
    X(ALL, k2x2_str1_krnpad, 2, 2, 0, 1, KRNPAD, STR1, STR1)           \
    X(ALL, k2x1_str1_krnpad, 2, 1, 0, 1, KRNPAD, STR1, STR1)           \
    X(ALL, k1x3_str1_krnpad, 1, 3, 0, 1, KRNPAD, STR1, STR1)           \
    X(ALL, k1x2_str1_krnpad, 1, 2, 0, 1, KRNPAD, STR1, STR1)           \
    X(ALL, k1x1_ch4_str1_nopad, 1, 1, 4, 1, NOPAD, K1X1_STR1, K1X1_STR1) \
    X(ALL, k1x1_ch3_str1_nopad, 1, 1, 3, 1, NOPAD, K1X1_STR1, K1X1_STR1) \
    X(ALL, k1x1_ch1_str1_nopad, 1, 1, 1, 1, NOPAD, K1X1_STR1, K1X1_STR1) \
    X(ALL, k1x1_str1_nopad, 1, 1, 0, 1, NOPAD, K1X1_STR1, K1X1_STR1)   \
    X(ALL, k1xn_str1, 1, 0, 0, 1, NONE, STR1, STR1)                    \
    X(ALL, knx1_str1, 0, 1, 0, 1, NONE, STR1, STR1)                    \
    X(ALL, ch1_str1, 0, 0, 1, 1, NONE, STR1, ANY)                      \
    X(ALL, str1, 0, 0, 0, 1, NONE, ANY, ANY)                           \
    X(ALL, k3x3_ch1_krnpad, 3, 3, 1, 0, KRNPAD, ANY, ANY)              \
    X(ALL, k3x3_krnpad, 3, 3, 0, 0, KRNPAD, ANY, ANY)                  \
    X(ALL, k2x2_ch1_krnpad, 2, 2, 1, 0, KRNPAD, ANY, ANY)              \
    X(ALL, k2x2_krnpad, 2, 2, 0, 0, KRNPAD, ANY, ANY)                  \
    X(ALL, k1x1_ch8_nopad, 1, 1, 8, 0, NOPAD, SIMPLE, SIMPLE)          \
    X(ALL, k1x1_ch4_nopad, 1, 1, 4, 0, NOPAD, SIMPLE, SIMPLE)          \
    X(ALL, k1x1_ch3_nopad, 1, 1, 3, 0, NOPAD, SIMPLE, SIMPLE)          \
    X(ALL, k1x1_ch1_nopad, 1, 1, 1, 0, NOPAD, SIMPLE, SIMPLE)          \
    X(ALL, k1x1_nopad, 1, 1, 0, 0, NOPAD, SIMPLE, SIMPLE)

/* MLIPY_CONV_KEEP_<kinds>_<kind>(...): its arguments where the table's `kinds` column
 * includes `kind`, else nothing (shared with the depthwise table). */
#define MLIPY_CONV_KEEP_ALL_fx8(...) __VA_ARGS__
#define MLIPY_CONV_KEEP_ALL_fx16(...) __VA_ARGS__
#define MLIPY_CONV_KEEP_ALL_fx8w16d(...) __VA_ARGS__
#define MLIPY_CONV_KEEP_FX16_fx8(...)
#define MLIPY_CONV_KEEP_FX16_fx16(...) __VA_ARGS__
#define MLIPY_CONV_KEEP_FX16_fx8w16d(...)

#define MLIPY_CONV_SPEC_PROTO_(name)                                                         \
    mli_status name(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias, \
                    const mli_conv2d_cfg *cfg, mli_tensor *out);
#define MLIPY_CONV2D_DECL_FX8_(kinds, sfx, kw, kh, ch, str, pad, c16, c8) \
    MLIPY_CONV_KEEP_##kinds##_fx8(MLIPY_CONV_SPEC_PROTO_(mli_krn_conv2d_chw_fx8_##sfx))
#define MLIPY_CONV2D_DECL_FX16_(kinds, sfx, kw, kh, ch, str, pad, c16, c8) \
    MLIPY_CONV_KEEP_##kinds##_fx16(MLIPY_CONV_SPEC_PROTO_(mli_krn_conv2d_chw_fx16_##sfx))
#define MLIPY_CONV2D_DECL_FX8W16D_(kinds, sfx, kw, kh, ch, str, pad, c16, c8) \
    MLIPY_CONV_KEEP_##kinds##_fx8w16d(MLIPY_CONV_SPEC_PROTO_(mli_krn_conv2d_chw_fx8w16d_##sfx))

MLIPY_CONV2D_CHW_VARIANTS(MLIPY_CONV2D_DECL_FX8_)
MLIPY_CONV2D_CHW_VARIANTS(MLIPY_CONV2D_DECL_FX16_)
MLIPY_CONV2D_CHW_VARIANTS(MLIPY_CONV2D_DECL_FX8W16D_)

char *mli_debug_krn_conv2d_chw_fx8(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                   const mli_conv2d_cfg *cfg, mli_tensor *out);
char *mli_debug_krn_conv2d_chw_fx16(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                    const mli_conv2d_cfg *cfg, mli_tensor *out);
char *mli_debug_krn_conv2d_chw_fx8w16d(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                       const mli_conv2d_cfg *cfg, mli_tensor *out);

#ifdef __cplusplus
}
#endif
#endif /* MLI_KRN_CONV2D_SPEC_API_H */
