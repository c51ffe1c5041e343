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


_LOGICAL: dict = {"LogicalAnd": np.logical_and, "LogicalOr": np.logical_or,
                  "LogicalXor": np.logical_xor}
for _t, _u in _LOGICAL.items():
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




# --- division, modulo and other arithmetic
def _int_div(x, y, floor):
    if np.any(y == 0):
        raise IRError("integer division by zero")
    q = np.floor_divide(x, y)
    if not floor:     # truncate toward zero: one less where the floored quotient went below
        q = q + ((q < 0) & (q * y != x)).astype(q.dtype)
    return q


@register("Divide", {"opset1"}, m_pythondiv=(parse_bool, True), **BROADCAST)
@ports(2)
def _divide(layer, a, graph):
    """Divide-1: true division for floats; for integers the floored quotient
    (``m_pythondiv``, the default) or the quotient truncated toward zero."""
    floor = a["m_pythondiv"]

    def fn(x, y):
        _same(x, y, a)
        if x.dtype.kind in "iu":
            return arr(_int_div(x, y, floor))
        return arr(np.true_divide(x, y).astype(x.dtype, copy=False))
    return fn


def _same(x, y, a):
    if x.dtype != y.dtype:
        raise IRError(f"inputs differ in type: {x.dtype} and {y.dtype}")
    if a["auto_broadcast"] == "none" and x.shape != y.shape:
        raise IRError(f"auto_broadcast=none needs equal shapes, got {list(x.shape)} and "
                      f"{list(y.shape)}")


@register("Mod", {"opset1"}, **BROADCAST)
@ports(2)
def _mod(layer, a, graph):
    """Mod-1: remainder of the truncated division (sign of the dividend), like C's fmod."""
    def fn(x, y):
        _same(x, y, a)
        if x.dtype.kind in "iu" and np.any(y == 0):
            raise IRError("integer modulo by zero")
        return arr(np.fmod(x, y))
    return fn


@register("FloorMod", {"opset1"}, **BROADCAST)
@ports(2)
def _floor_mod(layer, a, graph):
    """FloorMod-1: remainder of the floored division (sign of the divisor)."""
    def fn(x, y):
        _same(x, y, a)
        if x.dtype.kind in "iu" and np.any(y == 0):
            raise IRError("integer modulo by zero")
        return arr(np.mod(x, y))
    return fn


@register("Power", {"opset1"}, **BROADCAST)
@ports(2)
def _power(layer, a, graph):
    def fn(x, y):
        _same(x, y, a)
        if x.dtype.kind in "iu" and np.any(y < 0):
            raise IRError("integer Power with a negative exponent")
        return arr(np.power(x, y))
    return fn


@register("SquaredDifference", {"opset1"}, **BROADCAST)
@ports(2)
def _squared_difference(layer, a, graph):
    def fn(x, y):
        _same(x, y, a)
        d = np.subtract(x, y)
        return arr(d * d)
    return fn


register("Sqrt", {"opset1"})(ports(1)(lambda l, a, g: _float_only(np.sqrt)))
register("Log", {"opset1"})(ports(1)(lambda l, a, g: _float_only(np.log)))
register("Floor", {"opset1"})(ports(1)(lambda l, a, g: lambda x: arr(np.floor(x))
                                       if x.dtype.kind == "f" else x))
register("Ceiling", {"opset1"})(ports(1)(lambda l, a, g: lambda x: arr(np.ceil(x))
                                         if x.dtype.kind == "f" else x))
register("Sign", {"opset1"})(ports(1)(lambda l, a, g: lambda x: arr(np.sign(x))))


@register("Clamp", {"opset1"}, min=(float, REQUIRED), max=(float, REQUIRED))
@ports(1)
def _clamp(layer, a, graph):
    """Clamp-1: ``min(max(x, min), max)``; for integers the bounds are rounded inward."""
    lo, hi = a["min"], a["max"]
    if lo > hi:
        raise IRError(f"Clamp min {lo} > max {hi}")

    def fn(x):
        if x.dtype.kind in "iu":
            return arr(np.clip(x, math.ceil(lo), math.floor(hi)).astype(x.dtype))
        return arr(np.clip(x, x.dtype.type(lo), x.dtype.type(hi)))
    return fn
