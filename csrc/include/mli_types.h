/* mli-py: the public types of embARC MLI 1.1, field for field.
 *
 * Our own text; names, member order and enum values follow the MLI 1.1 API
 * so that code written for MLI compiles against these headers. */
#ifndef MLI_TYPES_H
#define MLI_TYPES_H

#include <stdint.h>
#include "mli_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes, in MLI's order and spelling (INCOMPATEBLE is MLI's). */
typedef enum _mli_status {
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
    MLI_STATUS_LARGE_ENUM = 0x02000000 /* keeps the enum 32 bits wide */
} mli_status;

typedef enum {
    MLI_EL_FX_8 = 0,   /* int8 container, frac_bits fractional bits */
    MLI_EL_FX_16,      /* int16 container */
    MLI_EL_ASYM_I8,    /* present in 1.1's enum; no kernel here uses it */
    MLI_EL_ASYM_I32,
    MLI_EL_LARGE_ENUM = 0x02000000
} mli_element_type;

/* Either a pointer to the data or, for a rank-0 tensor, the value itself. */
typedef union _mli_data_container {
    int32_t *pi32;
    int16_t *pi16;
    int8_t *pi8;
    int32_t i32;
    int16_t i16;
    int8_t i8;
} mli_data_container;

typedef union _mli_element_params {
    struct {
        uint8_t frac_bits;
    } fx;
    struct {
        mli_data_container zero_point;
        mli_data_container scale;
        int32_t dim;
        int8_t scale_frac_bits;
    } asym;
} mli_element_params;

typedef struct _mli_tensor {
    void *data;                       /* buffer, or the value of a rank-0 tensor */
    uint32_t capacity;                /* bytes available at data */
    int32_t mem_stride[MLI_MAX_RANK]; /* elements; all zero = dense row-major */
    uint32_t shape[MLI_MAX_RANK];     /* last index varies fastest */
    uint32_t rank;
    mli_element_type el_type;
    mli_element_params el_params;
} mli_tensor;

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

typedef enum {
    RNN_ONE_TO_ONE = 0,
    RNN_BATCH_TO_BATCH,
    RNN_BATCH_TO_LAST,
    RNN_MODE_LARGE_ENUM = 0x02000000
} mli_rnn_mode;

typedef enum {
    RNN_ACT_NONE = 0,
    RNN_ACT_TANH,
    RNN_ACT_SIGM,
    RNN_ACT_LARGE_ENUM = 0x02000000
} mli_rnn_out_activation;

typedef struct {
    mli_rnn_mode mode;
    mli_rnn_out_activation act;
    mli_tensor *ir_tsr; /* scratch for intermediate results */
} mli_rnn_cell_cfg;

typedef struct {
    uint32_t start_coord[MLI_MAX_RANK];
    uint8_t coord_num;
    uint8_t first_out_dim_size;
} mli_point_to_subtsr_cfg;


/* Configurations of the rest of MLI 1.1's kernels (convolution, pooling,
 * data movement); field order and types as MLI 1.1's mli_types.h. */
typedef struct {
    mli_relu_cfg relu;
    uint8_t stride_width;
    uint8_t stride_height;
    uint8_t padding_left;
    uint8_t padding_right;
    uint8_t padding_top;
    uint8_t padding_bottom;
} mli_conv2d_cfg;

typedef struct {
    uint8_t kernel_width;
    uint8_t kernel_height;
    uint8_t stride_width;
    uint8_t stride_height;
    uint8_t padding_left;
    uint8_t padding_right;
    uint8_t padding_top;
    uint8_t padding_bottom;
} mli_pool_cfg;

typedef struct {
    uint8_t perm_dim[MLI_MAX_RANK];
} mli_permute_cfg;

typedef struct {
    uint8_t padding_left;
    uint8_t padding_right;
    uint8_t padding_top;
    uint8_t padding_bottom;
} mli_padding2d_cfg;

typedef struct {
    uint8_t tensors_num; /* how many inputs (at most MLI_CONCAT_MAX_TENSORS) */
    uint8_t axis;
} mli_concat_cfg;

#ifndef MLI_CONCAT_MAX_TENSORS
#define MLI_CONCAT_MAX_TENSORS (8)
#endif

#ifdef __cplusplus
}
#endif
#endif /* MLI_TYPES_H */
