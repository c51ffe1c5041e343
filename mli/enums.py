"""Enumerations of the MLI 1.1 C API (values and names as in C)."""
from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import TypeVar

import numpy as np

__all__ = ["ElementType", "RnnMode", "RnnActivation", "ReluType",
           "EL_FX_8", "EL_FX_16", "EL_ASYM_I8", "EL_ASYM_I32",
           "RNN_ONE_TO_ONE", "RNN_BATCH_TO_BATCH", "RNN_BATCH_TO_LAST",
           "RNN_ACT_NONE", "RNN_ACT_TANH", "RNN_ACT_SIGM",
           "MLI_RELU_NONE", "MLI_RELU_GEN", "MLI_RELU_1", "MLI_RELU_6"]


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
KINDS: dict[str, tuple[ElementType, ElementType]] = {
    "fx8": (ElementType.FX_8, ElementType.FX_8),
    "fx16": (ElementType.FX_16, ElementType.FX_16),
    "fx8w16d": (ElementType.FX_16, ElementType.FX_8),
}
#: kind name -> variant index of the bridge
VARIANT: dict[str, int] = {"fx8": 0, "fx16": 1, "fx8w16d": 2}


E = TypeVar("E", bound=IntEnum)

_ALIASES = {"GENERAL": "GEN", "1": "RELU_1", "6": "RELU_6", "SIGMOID": "SIGM"}


def parse_enum(value: object, enum: type[E], prefixes: Sequence[str] = ()) -> E:
    """The member of `enum` that `value` names: a member, its integer, or
    its name in any case, with or without its C prefix (``"RNN_ACT_TANH"``,
    ``"tanh"``).  ValueError naming the choices otherwise."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return enum(int(value))
        except ValueError:
            pass
    elif isinstance(value, str):
        key = value.strip().upper().replace("-", "_")
        for p in prefixes:
            if key.startswith(p):
                key = key[len(p):]
        key = _ALIASES.get(key, key)
        if key in enum.__members__:
            return enum[key]
    raise ValueError(f"unknown value {value!r} (use one of {', '.join(n.lower() for n in enum.__members__)})")
