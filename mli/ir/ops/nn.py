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




# --- convolution and pooling (data [N, C, spatial...])
_PAD_SPEC = {"strides": (parse_ints, REQUIRED), "pads_begin": (parse_ints, REQUIRED),
             "pads_end": (parse_ints, REQUIRED),
             "auto_pad": (choice("explicit", "same_upper", "same_lower", "valid", "notset"),
                          "explicit")}


def _pads(auto_pad, spatial, kernel, strides, dilations, pb, pe, ceil=False):
    """Padding per spatial axis: explicit pads, or the auto_pad rule (same_*: output
    ceil(in/stride), the extra pad at the end (upper) or beginning (lower); valid: none)."""
    n = len(spatial)
    if len(strides) != n or len(dilations) != n or len(kernel) != n:
        raise IRError(f"strides {strides}, dilations {dilations} and kernel {kernel} must "
                      f"have one value per spatial axis ({n})")
    if any(s <= 0 for s in strides) or any(d <= 0 for d in dilations):
        raise IRError("strides and dilations must be positive")
    if auto_pad == "valid":
        return [0] * n, [0] * n
    if auto_pad in ("same_upper", "same_lower"):
        begin, end = [], []
        for i, s, k, d in zip(spatial, strides, kernel, dilations):
            total = max((-(-i // s) - 1) * s + (k - 1) * d + 1 - i, 0)
            small, big = total // 2, total - total // 2
            begin.append(small if auto_pad == "same_upper" else big)
            end.append(big if auto_pad == "same_upper" else small)
        return begin, end
    if len(pb) != n or len(pe) != n or any(v < 0 for v in pb + pe):
        raise IRError(f"pads_begin {pb} / pads_end {pe} must be {n} non-negative values")
    return list(pb), list(pe)


def _windows(x, kernel, strides, dilations, pb, pe, fill, ceil=False):
    """(padded x, output spatial shape, [slices per kernel offset]) of a sliding window."""
    spatial = x.shape[2:]
    out = []
    for i, k, s, d, b, e in zip(spatial, kernel, strides, dilations, pb, pe):
        span = i + b + e - (k - 1) * d - 1
        if span < 0:
            raise IRError(f"kernel {kernel} (dilations {dilations}) larger than the padded "
                          f"input {list(spatial)}")
        o = (-(-span // s) if ceil else span // s) + 1
        if ceil and (o - 1) * s >= i + b:     # a window may not start in the end padding
            o -= 1
        out.append(o)
    extra = [max((o - 1) * s + (k - 1) * d + 1 - (i + b + e), 0)
             for o, s, k, d, i, b, e in zip(out, strides, kernel, dilations, spatial, pb, pe)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(b, e + x_) for b, e, x_ in zip(pb, pe, extra)],
                constant_values=fill)
    offsets = []
    for off in np.ndindex(*kernel):
        sl = tuple(slice(o * d, o * d + (n - 1) * s + 1, s)
                   for o, d, n, s in zip(off, dilations, out, strides))
        offsets.append((off, (slice(None), slice(None)) + sl))
    return xp, out, offsets


def _conv(x, w, groups, a):
    """Grouped N-d convolution: x [N, G*Ci, ...], w [G, Co, Ci, k...] -> [N, G*Co, ...]."""
    if x.dtype != w.dtype or x.dtype.kind != "f":
        raise IRError(f"convolution inputs must share one floating-point type, got "
                      f"{x.dtype} and {w.dtype}")
    G, Co, Ci = w.shape[:3]
    kernel = w.shape[3:]
    if x.ndim < 3 or x.ndim != len(kernel) + 2 or x.shape[1] != G * Ci:
        raise IRError(f"data {list(x.shape)} does not fit filters of {G} group(s) x "
                      f"{list(w.shape[1:])}")
    dil = a.get("dilations") or [1] * len(kernel)
    pb, pe = _pads(a["auto_pad"], x.shape[2:], kernel, a["strides"], dil, a["pads_begin"],
                   a["pads_end"])
    xp, out_sp, offsets = _windows(x, kernel, a["strides"], dil, pb, pe, 0)
    N = x.shape[0]
    xg = xp.reshape((N, G, Ci) + xp.shape[2:])
    acc = np.zeros((N, G, Co) + tuple(out_sp), x.dtype)
    for off, sl in offsets:
        patch = xg[(slice(None),) + sl]                    # [N, G, Ci, out...]
        wk = w[(slice(None), slice(None), slice(None)) + off]   # [G, Co, Ci]
        acc += np.einsum("ngc...,goc->ngo...", patch, wk).astype(x.dtype, copy=False)
    return acc.reshape((N, G * Co) + tuple(out_sp))


@register("Convolution", {"opset1"}, dilations=(parse_ints, REQUIRED), **_PAD_SPEC)
@ports(2)
def _convolution(layer, a, graph):
    """Convolution-1: data [N, Ci, spatial], filters [Co, Ci, k...]; strides, dilations,
    explicit pads or auto_pad."""
    def fn(x, w):
        if w.ndim < 3:
            raise IRError(f"filters must be [Co, Ci, k...], got {list(w.shape)}")
        return arr(_conv(x, w[None], 1, a))
    return fn


@register("GroupConvolution", {"opset1"}, dilations=(parse_ints, REQUIRED), **_PAD_SPEC)
@ports(2)
def _group_convolution(layer, a, graph):
    """GroupConvolution-1: filters [G, Co/G, Ci/G, k...]; group g convolves input channels
    g*Ci/G.. with its own filters."""
    def fn(x, w):
        if w.ndim < 4:
            raise IRError(f"filters must be [G, Co, Ci, k...], got {list(w.shape)}")
        return arr(_conv(x, w, w.shape[0], a))
    return fn


@register("PRelu", {"opset1"})
@ports(2)
def _prelu(layer, a, graph):
    """PRelu-1: ``x`` where positive, else ``slope * x``; the slope broadcasts as one
    value, per channel (axis 1) or numpy-style."""
    def fn(x, slope):
        if x.dtype != slope.dtype or x.dtype.kind != "f":
            raise IRError(f"PRelu inputs must share one floating-point type, got {x.dtype} "
                          f"and {slope.dtype}")
        s = slope
        if s.ndim == 1 and s.size not in (1, x.shape[-1] if x.ndim else 1) and x.ndim >= 2 \
                and s.size == x.shape[1]:
            s = s.reshape((1, -1) + (1,) * (x.ndim - 2))
        return arr(np.where(x < 0, x * s, x).astype(x.dtype, copy=False))
    return fn


@register("MaxPool", {"opset1"}, kernel=(parse_ints, REQUIRED),
          rounding_type=(choice("floor", "ceil"), "floor"), **_PAD_SPEC)
@ports(1)
def _max_pool(layer, a, graph):
    """MaxPool-1: window maximum; padding never wins (-inf); rounding_type ceil adds a
    last partial window when it starts inside the input or its begin padding."""
    def fn(x):
        k = a["kernel"]
        if x.ndim != len(k) + 2:
            raise IRError(f"data {list(x.shape)} does not fit kernel {k}")
        dil = [1] * len(k)
        pb, pe = _pads(a["auto_pad"], x.shape[2:], k, a["strides"], dil, a["pads_begin"],
                       a["pads_end"])
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        xp, out_sp, offsets = _windows(x, k, a["strides"], dil, pb, pe, fill,
                                       ceil=a["rounding_type"] == "ceil")
        out = None
        for _, sl in offsets:
            out = xp[sl] if out is None else np.maximum(out, xp[sl])
        return np.ascontiguousarray(out)
    return fn


@register("AvgPool", {"opset1"}, kernel=(parse_ints, REQUIRED),
          **{"exclude-pad": (parse_bool, False)}, rounding_type=(choice("floor", "ceil"), "floor"), **_PAD_SPEC)
@ports(1)
def _avg_pool(layer, a, graph):
    """AvgPool-1: window mean; ``exclude-pad`` divides by the window's elements inside
    the input (else by the kernel size, the padding counting as zeros)."""
    excl = a["exclude-pad"]

    def fn(x):
        k = a["kernel"]
        if x.ndim != len(k) + 2 or x.dtype.kind != "f":
            raise IRError(f"data {x.dtype}{list(x.shape)} does not fit kernel {k}")
        dil = [1] * len(k)
        pb, pe = _pads(a["auto_pad"], x.shape[2:], k, a["strides"], dil, a["pads_begin"],
                       a["pads_end"])
        ceil = a["rounding_type"] == "ceil"
        xp, out_sp, offsets = _windows(x, k, a["strides"], dil, pb, pe, 0, ceil=ceil)
        ones = np.ones((1, 1) + x.shape[2:], x.dtype)
        cp = _windows(ones, k, a["strides"], dil, pb, pe, 0, ceil=ceil)[0]
        total = count = None
        for _, sl in offsets:
            total = xp[sl] if total is None else total + xp[sl]
            count = cp[sl] if count is None else count + cp[sl]
        n = count if excl else np.asarray(math.prod(k), x.dtype)
        return np.ascontiguousarray((total / n).astype(x.dtype, copy=False))
    return fn


# --- softmax
def _softmax(x, ax, log=False):
    if x.dtype.kind != "f":
        raise IRError(f"softmax needs a floating-point input, got {x.dtype}")
    m = np.max(x, axis=ax, keepdims=True) if x.size else x
    e = np.exp(x - m)
    s = np.sum(e, axis=ax, keepdims=True)
    if log:
        return arr((x - m - np.log(s)).astype(x.dtype, copy=False))
    return arr((e / s).astype(x.dtype, copy=False))


@register("SoftMax", {"opset1", "opset8"}, axis=(int, 1))
@ports(1)
def _softmax_op(layer, a, graph):
    """SoftMax-1 (axis >= 0) / SoftMax-8 (negative axis counts from the end)."""
    if layer.version == "opset1" and a["axis"] < 0:
        raise IRError(f"SoftMax-1 axis must be non-negative, got {a['axis']}")
    return lambda x: _softmax(x, norm_axis(a["axis"], x.ndim))


@register("LogSoftmax", {"opset5"}, axis=(int, 1))
@ports(1)
def _log_softmax(layer, a, graph):
    """LogSoftmax-5: ``x - max - log(sum(exp(x - max)))`` along axis (negative allowed)."""
    return lambda x: _softmax(x, norm_axis(a["axis"], x.ndim), log=True)
