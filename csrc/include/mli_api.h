/* mli-py: umbrella header of the C core (MLI 1.1 API). */
#ifndef MLI_API_H
#define MLI_API_H

#include "mli_config.h"
#include "mli_types.h"
#include "mli_kernels_api.h"
#include "mli_krn_avepool_spec_api.h"
#include "mli_krn_maxpool_spec_api.h"
#include "mli_krn_conv2d_spec_api.h"
#include "mli_krn_depthwise_conv2d_spec_api.h"
#include "mli_helpers_api.h"
#include "mlipy_ext.h"

#endif /* MLI_API_H */
