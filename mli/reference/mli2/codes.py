"""The codes of MLI 2.0.2's C API the model uses (SPEC_MLI2 sections 3.1, 3.6, 3.7):
``mli_status`` values, element types, cfg enums, and the kinds of each kernel."""

import numpy as np


# mli_status (section 3.6)
OK = 0
BAD_TENSOR = 1
SHAPE_MISMATCH = 2
INCOMPATEBLE_TENSORS = 3     # MLI's spelling
BAD_FUNC_CFG = 4
NOT_ENGH_MEM = 5
TYPE_MISMATCH = 12

# mli_element_type codes (section 3.1)
FX_8, FX_16, SA_8, SA_32 = 0x8, 0x10, 0x108, 0x120
_EL_SIZE = {FX_8: 1, SA_8: 1, FX_16: 2, SA_32: 4, 0x220: 4}   # FP_32 too; other codes 0
_CONTAINER = {FX_8: np.int8, SA_8: np.int8, FX_16: np.int16, SA_32: np.int32}

# cfg enums (section 3.7)
RNN_DIR_FORWARD, RNN_DIR_BACKWARD = 0, 1
RNN_OUT_LAST, RNN_OUT_ALL = 0, 1
RNN_ACT_NONE, RNN_ACT_TANH, RNN_ACT_SIGM = 0, 1, 2
RELU_NONE, RELU_GEN, RELU_1, RELU_6 = 0, 1, 2, 3
RNN_MAX_INPUT = 4

#: (data type, weight type, bias type) of each kernel kind.
KIND_TYPES = {
    "fx16": (FX_16, FX_16, FX_16),
    "fx16_fx8_fx8": (FX_16, FX_8, FX_8),
    "fx8": (FX_8, FX_8, FX_8),
    "sa8_sa8_sa32": (SA_8, SA_8, SA_32),
    "sa8_sa8_sa32_ext_bias": (SA_8, SA_8, SA_32),
}

INT31 = 2 ** 31 - 1

#: kernel name -> the kinds it has (the C suffixes).
KERNEL_KINDS = {
    "lstm_cell": ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32"),
    "gru_cell": ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32"),
    "rnn_dense": ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32"),
    "fully_connected": ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32", "sa8_sa8_sa32_ext_bias", "fx8"),
    "tanh": ("fx8", "fx16", "sa8"),
    "sigm": ("fx8", "fx16", "sa8"),
}
