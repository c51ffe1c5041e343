"""Element-wise ops: arithmetic, comparison, logical, activations, Select, Convert."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ELEMENT_TYPES, IRError, IRUnsupportedError
from ..registry import (BROADCAST, REQUIRED, arr, choice, element_type, ints, parse_bool,
                        parse_floats, parse_ints, parse_strlist, ports, register)
from ..registry import axis as norm_axis

BROADCAST = {"auto_broadcast": (choice("numpy", "none"), "numpy")}


def _binary(ufunc):
    def builder(layer, a, graph):
        if a["auto_broadcast"] == "none":
            def fn(x, y):
                if x.shape != y.shape:
                    raise IRError(f"auto_broadcast=none needs equal shapes, got "
                                  f"{list(x.shape)} and {list(y.shape)}")
                return arr(ufunc(x, y))
            return fn
        return lambda x, y: arr(ufunc(x, y))
    return ports(2)(builder)


for _t, _u in {"Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply,
               "Maximum": np.maximum, "Minimum": np.minimum, "Less": np.less,
               "Greater": np.greater, "LessEqual": np.less_equal,
               "GreaterEqual": np.greater_equal, "Equal": np.equal,
               "NotEqual": np.not_equal}.items():
    register(_t, {"opset1"}, **BROADCAST)(_binary(_u))


def _logical(ufunc):
    def fn(*xs):
        for x in xs:
            if x.dtype != np.bool_:
                raise IRError(f"logical op needs boolean inputs, got {x.dtype}")
        return arr(ufunc(*xs))
    return fn


for _t, _u in {"LogicalAnd": np.logical_and, "LogicalOr": np.logical_or,
               "LogicalXor": np.logical_xor}.items():
    register(_t, {"opset1"}, **BROADCAST)(ports(2)(lambda layer, a, g, _u=_u: _logical(_u)))
register("LogicalNot", {"opset1"})(ports(1)(lambda layer, a, g: _logical(np.logical_not)))


def _float_only(f):
    def fn(x):
        if x.dtype.kind != "f":
            raise IRError(f"needs a floating-point input, got {x.dtype}")
        return arr(f(x))
    return fn


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _relu(x):
    return np.maximum(x, x.dtype.type(0))


register("Sigmoid", {"opset1"})(ports(1)(lambda l, a, g: _float_only(_sigmoid)))
register("Tanh", {"opset1"})(ports(1)(lambda l, a, g: _float_only(np.tanh)))
register("Exp", {"opset1"})(ports(1)(lambda l, a, g: _float_only(np.exp)))
register("ReLU", {"opset1"})(ports(1)(lambda l, a, g: lambda x: arr(_relu(x))))
register("Abs", {"opset1"})(ports(1)(lambda l, a, g: lambda x: arr(np.abs(x))))
register("Negative", {"opset1"})(ports(1)(lambda l, a, g: lambda x: arr(np.negative(x))))
register("Identity", {"opset16"})(ports(1)(lambda l, a, g: lambda x: x))


@register("Select", {"opset1"}, auto_broadcast=(choice("numpy", "none"), "numpy"))
@ports(3)
def _select(layer, a, graph):
    def fn(c, x, y):
        if c.dtype != np.bool_:
            raise IRError(f"Select condition must be boolean, got {c.dtype}")
        if x.dtype != y.dtype:
            raise IRError(f"Select branches differ in type: {x.dtype} and {y.dtype}")
        if a["auto_broadcast"] == "none" and not (c.shape == x.shape == y.shape):
            raise IRError("auto_broadcast=none needs equal shapes")
        return arr(np.where(c, x, y))
    return fn


@register("Convert", {"opset1"}, destination_type=(element_type, REQUIRED))
@ports(1)
def _convert(layer, a, graph):
    dst = ELEMENT_TYPES[a["destination_type"]]

    def fn(x):
        if dst == np.bool_:
            return x != 0
        if x.dtype.kind == "f" and dst.kind in "iu" and x.size:
            info = np.iinfo(dst)
            if not (np.all(np.isfinite(x)) and np.all(np.trunc(x) == x)
                    and x.min() >= info.min and x.max() <= info.max):
                raise IRError(f"Convert {x.dtype} -> {dst}: non-integral or out-of-range values "
                              f"(OpenVINO's rounding is implementation-defined)")
        return x.astype(dst)
    return fn


