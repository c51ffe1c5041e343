"""Enumerations of the MLI 1.1 C API (values and names as in C)."""
from enum import IntEnum


class ElementType(IntEnum):
    """`mli_element_type`."""

    FX_8 = 0
    FX_16 = 1
    ASYM_I8 = 2
    ASYM_I32 = 3


class RnnMode(IntEnum):
    """`mli_rnn_mode`."""

    ONE_TO_ONE = 0
    BATCH_TO_BATCH = 1
    BATCH_TO_LAST = 2


class RnnActivation(IntEnum):
    """`mli_rnn_out_activation`."""

    NONE = 0
    TANH = 1
    SIGM = 2


class ReluType(IntEnum):
    """`mli_relu_type`."""

    NONE = 0
    GEN = 1
    RELU_1 = 2
    RELU_6 = 3


EL_FX_8, EL_FX_16, EL_ASYM_I8, EL_ASYM_I32 = ElementType
RNN_ONE_TO_ONE, RNN_BATCH_TO_BATCH, RNN_BATCH_TO_LAST = RnnMode
RNN_ACT_NONE, RNN_ACT_TANH, RNN_ACT_SIGM = RnnActivation
MLI_RELU_NONE, MLI_RELU_GEN, MLI_RELU_1, MLI_RELU_6 = ReluType

#: kind name -> (data element type, weights element type)
KINDS = {
    "fx8": (ElementType.FX_8, ElementType.FX_8),
    "fx16": (ElementType.FX_16, ElementType.FX_16),
    "fx8w16d": (ElementType.FX_16, ElementType.FX_8),
}
#: kind name -> variant index of the bridge
VARIANT = {"fx8": 0, "fx16": 1, "fx8w16d": 2}
