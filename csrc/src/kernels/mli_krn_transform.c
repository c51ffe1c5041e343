/* Element-wise transforms: mli_krn_{relu,tanh,sigm,leaky_relu,softmax}_{fx8,fx16}. */
#include "mli_krn_common.h"

#define KRN_NO_FX8W16D
#define KRN_IMPL "mli_krn_transform_impl.h"
#include "mli_krn_variants.h"
