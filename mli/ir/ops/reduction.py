"""Reductions."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ELEMENT_TYPES, IRError, IRUnsupportedError
from ..registry import (BROADCAST, REQUIRED, arr, choice, element_type, ints, parse_bool,
                        parse_floats, parse_ints, parse_strlist, ports, register)
from ..registry import axis as norm_axis


def _reduce(func):
    def builder(layer, a, graph):
        keep = a["keep_dims"]

        def fn(x, axes):
            ax = tuple(sorted({norm_axis(v, x.ndim) for v in ints(axes, "reduction axes")}))
            if not ax:
                return x
            if func in (np.max, np.min) and any(x.shape[i] == 0 for i in ax):
                raise IRError("reduction over an empty axis")
            kw = {"dtype": x.dtype} if func in (np.sum, np.prod) else {}
            return arr(func(x, axis=ax, keepdims=keep, **kw))
        return fn
    return ports(2)(builder)


for _t, _f in {"ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMin": np.min,
               "ReduceProd": np.prod}.items():
    register(_t, {"opset1"}, keep_dims=(parse_bool, False))(_reduce(_f))




@register("ReduceMean", {"opset1"}, keep_dims=(parse_bool, False))
@ports(2)
def _reduce_mean(layer, a, graph):
    """ReduceMean-1: the sum over ``axes`` (negative allowed, repeats ignored) divided by
    the number of elements reduced; integer inputs give the integer mean truncated toward
    zero (C integer division)."""
    keep = a["keep_dims"]

    def fn(x, axes):
        ax = tuple(sorted({norm_axis(v, x.ndim) for v in ints(axes, "reduction axes")}))
        if not ax:
            return x
        n = math.prod(x.shape[i] for i in ax)
        if n == 0:
            raise IRError("mean over an empty axis")
        s = np.sum(x, axis=ax, keepdims=keep, dtype=x.dtype)
        if x.dtype.kind in "iu":
            return arr((np.sign(s) * (np.abs(s) // x.dtype.type(n))).astype(x.dtype))
        return arr((s / x.dtype.type(n)).astype(x.dtype, copy=False))
    return fn
