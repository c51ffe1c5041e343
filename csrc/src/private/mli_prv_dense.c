/* The dense core, instantiated for fx8, fx16 and fx8w16d. */
#include "mli_prv_dense.h"
#include "mli_math.h"
#include "mli_prv_template.h"

#define DENSE_SFX fx8
#define DENSE_IO_T int8_t
#define DENSE_W_T int8_t
#define DENSE_ACC40 0
#include "mli_prv_dense_impl.h"

#define DENSE_SFX fx16
#define DENSE_IO_T int16_t
#define DENSE_W_T int16_t
#define DENSE_ACC40 1
#include "mli_prv_dense_impl.h"

#define DENSE_SFX fx8w16d
#define DENSE_IO_T int16_t
#define DENSE_W_T int8_t
#define DENSE_ACC40 0
#include "mli_prv_dense_impl.h"
