/* Element-wise binary operations: mli_krn_eltwise_{add,sub,mul,max,min}_{fx8,fx16}. */
#include "mli_krn_common.h"

typedef enum { MLI_ELTWISE_ADD, MLI_ELTWISE_SUB, MLI_ELTWISE_MUL, MLI_ELTWISE_MAX, MLI_ELTWISE_MIN } mli_eltwise_op;

#define KRN_NO_FX8W16D
#define KRN_IMPL "mli_krn_eltwise_impl.h"
#include "mli_krn_variants.h"
