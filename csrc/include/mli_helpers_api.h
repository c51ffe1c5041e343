/* mli-py: MLI 1.1 helper functions, plus the float conversion helpers of
 * MLI's examples (examples/auxiliary), which firmware built from those
 * examples uses for its inputs and outputs. */
#ifndef MLI_HELPERS_API_H
#define MLI_HELPERS_API_H

#include "mli_types.h"

#ifdef __cplusplus
extern "C" {
#endif

uint32_t mli_hlp_count_elem_num(const mli_tensor *in, uint32_t start_dim);
uint32_t mli_hlp_tensor_element_size(const mli_tensor *in);
mli_status mli_hlp_point_to_subtensor(const mli_tensor *in, const mli_point_to_subtsr_cfg *cfg,
                                      mli_tensor *out);
mli_status mli_hlp_convert_tensor(mli_tensor *in, mli_tensor *out);

mli_status mli_hlp_float_to_fx_tensor(const float *src, uint32_t src_size, mli_tensor *dst);
mli_status mli_hlp_fx_tensor_to_float(const mli_tensor *src, float *dst, uint32_t dst_size);

#ifdef __cplusplus
}
#endif
#endif /* MLI_HELPERS_API_H */
