/* Types of the MLI 2.0.2 API (the 2.x tensor model, LUT objects and the
 * configurations of the recurrent, dense and activation kernels), as mli-py's
 * second C library declares them.  The MLI 1.1 library of this package has a
 * header of the same name with other structures: never include both. */
#ifndef MLI_TYPES_H
#define MLI_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLI_MAX_RANK 4
#define MLI_RNN_MAX_INPUT 4

/* Return codes, in MLI's order and spelling (DBG_MODE_RET_CODES). */
typedef enum {
    MLI_STATUS_OK = 0,
    MLI_STATUS_BAD_TENSOR,
    MLI_STATUS_SHAPE_MISMATCH,
    MLI_STATUS_INCOMPATEBLE_TENSORS,
    MLI_STATUS_BAD_FUNC_CFG,
    MLI_STATUS_NOT_ENGH_MEM,
    MLI_STATUS_NOT_SUPPORTED,
    MLI_STATUS_SPEC_PARAM_MISMATCH,
    MLI_STATUS_ARGUMENT_ERROR,
    MLI_STATUS_LENGTH_ERROR,
    MLI_STATUS_SIZE_MISMATCH,
    MLI_STATUS_RANK_MISMATCH,
    MLI_STATUS_TYPE_MISMATCH,
    MLI_STATUS_LARGE_ENUM = 0x02000000
} mli_status;

typedef enum {
    MLI_EL_FX_4 = 0x004,
    MLI_EL_FX_8 = 0x008,
    MLI_EL_FX_16 = 0x010,
    MLI_EL_SA_8 = 0x108,
    MLI_EL_SA_32 = 0x120,
    MLI_EL_FP_16 = 0x210,
    MLI_EL_FP_32 = 0x220,
    MLI_EL_LARGE_ENUM = 0x02000000
} mli_element_type;

typedef enum { MLI_EL_PARAM_SC16_ZP16 = 0, MLI_EL_PARAM_LARGE_ENUM = 0x02000000 } mli_el_param_type;

/* A buffer (pointer, capacity in bytes) or an inline scalar value. */
typedef struct _mli_data_container {
    uint32_t capacity;
    union {
        int32_t *pi32;
        int16_t *pi16;
        int8_t *pi8;
        float *pf32;
        void *ptr; /* mli-py: typeless view of the pointer */
        int32_t i32;
        int16_t i16;
        int8_t i8;
        float f32;
    } mem;
} mli_data_container;

/* FX: value * 2^-frac_bits (signed).  SA: (q - zero_point) * scale *
 * 2^-scale_frac_bits, per tensor (dim < 0: values inline in the containers)
 * or per index of dimension `dim` (containers point to arrays). */
typedef union _mli_element_params {
    struct {
        int8_t frac_bits;
    } fx;
    struct {
        mli_el_param_type type;
        mli_data_container zero_point;
        mli_data_container scale;
        int32_t dim;
        mli_data_container scale_frac_bits;
    } sa;
} mli_element_params;

/* mem_stride in elements; dimension 0 outermost. */
typedef struct _mli_tensor {
    mli_data_container data;
    int32_t mem_stride[MLI_MAX_RANK];
    uint32_t shape[MLI_MAX_RANK];
    uint32_t rank;
    mli_element_type el_type;
    mli_element_params el_params;
} mli_tensor;

/* A lookup table of a function (tanh, sigmoid), filled by *_create_lut. */
typedef struct _mli_lut {
    mli_data_container data;
    mli_element_type type;
    int32_t length;
    int32_t in_frac_bits;
    int32_t out_frac_bits;
    int32_t input_offset;
    int32_t output_offset;
} mli_lut;

typedef enum {
    MLI_RELU_NONE = 0,
    MLI_RELU_GEN,
    MLI_RELU_1,
    MLI_RELU_6,
    MLI_RELU_LARGE_ENUM = 0x02000000
} mli_relu_type;

typedef struct {
    mli_relu_type type;
} mli_relu_cfg;

typedef struct {
    mli_relu_cfg relu;
} mli_fully_connected_cfg;

typedef enum { RNN_DIR_FORWARD = 0, RNN_DIR_BACKWARD, RNN_DIR_LARGE_ENUM = 0x02000000 } mli_rnn_direction;
typedef enum { RNN_OUT_LAST = 0, RNN_OUT_ALL, RNN_OUT_LARGE_ENUM = 0x02000000 } mli_rnn_results;
typedef enum {
    RNN_ACT_NONE = 0,
    RNN_ACT_TANH,
    RNN_ACT_SIGM,
    RNN_ACT_LARGE_ENUM = 0x02000000
} mli_rnn_out_activation;

typedef struct {
    mli_rnn_direction direction;
    mli_rnn_results results;
    mli_rnn_out_activation act;
    mli_data_container scratch_data;
} mli_rnn_cell_cfg;

typedef struct {
    uint8_t inputs_num;
} mli_rnn_dense_cfg;

#ifdef __cplusplus
}
#endif
#endif /* MLI_TYPES_H */
