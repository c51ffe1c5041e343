"""Shape and data-movement ops."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ELEMENT_TYPES, IRError, IRUnsupportedError
from ..registry import (BROADCAST, REQUIRED, arr, choice, element_type, ints, parse_bool,
                        parse_floats, parse_ints, parse_strlist, ports, register)
from ..registry import axis as norm_axis


@register("Reshape", {"opset1"}, special_zero=(parse_bool, REQUIRED))
@ports(2)
def _reshape(layer, a, graph):
    special_zero = a["special_zero"]

    def fn(x, shape):
        dims = ints(shape, "Reshape target shape")
        out = []
        for i, d in enumerate(dims):
            if d == 0 and special_zero:
                if i >= x.ndim:
                    raise IRError(f"special_zero dim {i} beyond input rank {x.ndim}")
                d = x.shape[i]
            elif d < -1:
                raise IRError(f"invalid target dim {d}")
            out.append(d)
        if out.count(-1) > 1:
            raise IRError(f"more than one -1 in target shape {dims}")
        known = math.prod(d for d in out if d != -1)
        if -1 in out:
            if known == 0 or x.size % known:
                raise IRError(f"cannot reshape {list(x.shape)} to {dims}")
            out[out.index(-1)] = x.size // known
        if math.prod(out) != x.size:
            raise IRError(f"cannot reshape {list(x.shape)} ({x.size} elements) to {out}")
        return x.reshape(out)
    return fn


@register("Squeeze", {"opset1", "opset15"},
     _spec=lambda l: {"allow_axis_skip": (parse_bool, False)} if l.version == "opset15" else {})
@ports((1, 2))
def _squeeze(layer, a, graph):
    skip = layer.version == "opset15"    # Squeeze-15 keeps axes whose dim is not 1

    def fn(x, axes=None):
        vals = [] if axes is None else ints(axes, "Squeeze axes")
        if not vals:
            return x.reshape([d for d in x.shape if d != 1])
        ax = sorted({norm_axis(v, x.ndim) for v in vals})
        bad = [i for i in ax if x.shape[i] != 1]
        if bad and not skip:
            raise IRError(f"cannot squeeze axis {bad[0]} of shape {list(x.shape)}")
        return x.reshape([d for i, d in enumerate(x.shape) if i not in ax or i in bad])
    return fn


@register("Unsqueeze", {"opset1"})
@ports(2)
def _unsqueeze(layer, a, graph):
    def fn(x, axes):
        vals = ints(axes, "Unsqueeze axes")
        rank = x.ndim + len(vals)
        ax = [norm_axis(v, rank) for v in vals]
        if len(set(ax)) != len(ax):
            raise IRError(f"repeated Unsqueeze axes {vals}")
        return np.expand_dims(x, tuple(ax))
    return fn


@register("Concat", {"opset1"}, axis=(int, REQUIRED))
@ports(None)
def _concat(layer, a, graph):
    if not layer.inputs:
        raise IRError("Concat needs at least one input")

    def fn(*xs):
        if len({x.dtype for x in xs}) > 1:
            raise IRError(f"Concat inputs differ in type: {[str(x.dtype) for x in xs]}")
        return np.concatenate(xs, axis=norm_axis(a["axis"], xs[0].ndim))
    return fn


@register("ShapeOf", {"opset1", "opset3"},
     _spec=lambda l: {"output_type": (choice("i32", "i64"), "i64")} if l.version == "opset3"
     else {})
@ports(1)
def _shape_of(layer, a, graph):
    dt = ELEMENT_TYPES[a.get("output_type", "i64")]
    return lambda x: np.array(x.shape, dt)


@register("Range", {"opset1", "opset4"},
     _spec=lambda l: {"output_type": (element_type, REQUIRED)}
     if l.version == "opset4" else {})
@ports(3)
def _range(layer, a, graph):
    out_t = ELEMENT_TYPES[a["output_type"]] if "output_type" in a else None

    def fn(start, stop, step):
        vals = []
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if v.size != 1 or v.ndim > 1:
                raise IRError(f"Range {name} must be a scalar, got shape {list(v.shape)}")
            vals.append(v.reshape(()))
        dt = out_t if out_t is not None else vals[0].dtype
        if out_t is None and len({v.dtype for v in vals}) > 1:
            raise IRError("Range-1 inputs must share one type")
        if vals[2] == 0:
            raise IRError("Range step is 0")
        if dt.kind in "iu" and all(v.dtype.kind in "iu" for v in vals):
            return np.arange(int(vals[0]), int(vals[1]), int(vals[2]), dtype=dt)
        if dt.kind in "iu":
            raise IRUnsupportedError("Range with floating-point inputs and an integer output")
        return np.arange(*(v.astype(dt) for v in vals), dtype=dt)
    return fn


@register("Gather", {"opset1", "opset7", "opset8"},
     _spec=lambda l: {} if l.version == "opset1" else {"batch_dims": (int, 0)})
@ports(3)
def _gather(layer, a, graph):
    bd0, negative_ok = a.get("batch_dims", 0), layer.version == "opset8"

    def fn(data, indices, axis):
        ax = ints(axis, "Gather axis")
        if len(ax) != 1:
            raise IRError("Gather axis must have one element")
        if indices.dtype.kind not in "iu":
            raise IRError(f"Gather indices must be integers, got {indices.dtype}")
        ax = norm_axis(ax[0], data.ndim, "Gather axis")
        bd = bd0 + indices.ndim if bd0 < 0 else bd0
        if not 0 <= bd <= min(ax, indices.ndim) or data.shape[:bd] != indices.shape[:bd]:
            raise IRError(f"invalid batch_dims {bd0} for data {list(data.shape)}, indices "
                          f"{list(indices.shape)}, axis {ax}")
        dim = data.shape[ax]
        lo = -dim if negative_ok else 0
        if indices.size and (indices.min() < lo or indices.max() >= dim):
            raise IRError(f"Gather index out of range [{lo}, {dim})")
        idx = np.where(indices < 0, indices + dim, indices) if negative_ok else indices
        if bd == 0:
            return np.take(data, idx, axis=ax)
        nb = math.prod(data.shape[:bd])
        d = data.reshape((nb,) + data.shape[bd:])
        i = idx.reshape((nb,) + idx.shape[bd:])
        parts = [np.take(d[k], i[k], axis=ax - bd) for k in range(nb)]
        tail = data.shape[bd:ax] + idx.shape[bd:] + data.shape[ax + 1:]
        out = np.stack(parts) if parts else np.empty((0,) + tail, data.dtype)
        return out.reshape(data.shape[:bd] + tail)
    return fn


