/* Instantiates a kernel family's template header KRN_IMPL for the type
 * variants it exists in: fx8, fx16 and (unless KRN_NO_FX8W16D) fx8w16d. */
#define KRN_SFX fx8
#define KRN_IO_T int8_t
#define KRN_BITS 8
#define KRN_W_T int8_t
#define KRN_DATA_EL MLI_EL_FX_8
#define KRN_W_EL MLI_EL_FX_8
#include KRN_IMPL

#define KRN_SFX fx16
#define KRN_IO_T int16_t
#define KRN_BITS 16
#define KRN_W_T int16_t
#define KRN_DATA_EL MLI_EL_FX_16
#define KRN_W_EL MLI_EL_FX_16
#include KRN_IMPL

#ifndef KRN_NO_FX8W16D
#define KRN_SFX fx8w16d
#define KRN_IO_T int16_t
#define KRN_BITS 16
#define KRN_W_T int8_t
#define KRN_DATA_EL MLI_EL_FX_16
#define KRN_W_EL MLI_EL_FX_8
#include KRN_IMPL
#endif
#undef KRN_NO_FX8W16D
#undef KRN_IMPL
