"""Neural-network ops: MatMul, convolutions, pooling, softmax."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ELEMENT_TYPES, IRError, IRUnsupportedError
from ..registry import (BROADCAST, REQUIRED, arr, choice, element_type, ints, parse_bool,
                        parse_floats, parse_ints, parse_strlist, ports, register)
from ..registry import axis as norm_axis


@register("MatMul", {"opset1"}, transpose_a=(parse_bool, False), transpose_b=(parse_bool, False))
@ports(2)
def _matmul(layer, a, graph):
    ta, tb = a["transpose_a"], a["transpose_b"]

    def fn(x, y):
        if x.dtype != y.dtype:
            raise IRError(f"MatMul inputs differ in type: {x.dtype} and {y.dtype}")
        if ta and x.ndim >= 2:
            x = np.swapaxes(x, -1, -2)
        if tb and y.ndim >= 2:
            y = np.swapaxes(y, -1, -2)
        return arr(np.matmul(x, y))
    return fn


