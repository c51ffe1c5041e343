"""Recurrent ops: RNN/GRU/LSTM cells and sequences."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ELEMENT_TYPES, IRError, IRUnsupportedError
from ..registry import (BROADCAST, REQUIRED, arr, choice, element_type, ints, parse_bool,
                        parse_floats, parse_ints, parse_strlist, ports, register)
from ..registry import axis as norm_axis
from .elementwise import _relu, _sigmoid

_ACTIVATIONS = {"sigmoid": _sigmoid, "tanh": np.tanh, "relu": _relu}


def _cell_spec(default_acts, extra=None):
    spec = {"hidden_size": (int, REQUIRED), "activations": (parse_strlist, default_acts),
            "activations_alpha": (parse_strlist, []), "activations_beta": (parse_strlist, []),
            "clip": (float, 0.0)}
    spec.update(extra or {})
    return spec


def _cell_setup(layer, a, n_acts):
    acts = a["activations"]
    if len(acts) != n_acts or any(x not in _ACTIVATIONS for x in acts):
        raise IRUnsupportedError(f"activations {acts} not supported (need {n_acts} of "
                                 f"{sorted(_ACTIVATIONS)})")
    if a["activations_alpha"] or a["activations_beta"]:
        raise IRUnsupportedError("activations_alpha/activations_beta are not supported")
    if a["clip"] < 0 or a["hidden_size"] <= 0:
        raise IRError(f"invalid clip {a['clip']} or hidden_size {a['hidden_size']}")
    return [_ACTIVATIONS[x] for x in acts], a["clip"], a["hidden_size"]


def _check_cell(hs, gates, x, h, w, r, b, nb=None):
    nb = gates if nb is None else nb
    if x.ndim != 2 or h.shape != (x.shape[0], hs) or w.shape != (gates * hs, x.shape[1]) \
            or r.shape != (gates * hs, hs) or b.shape != (nb * hs,):
        raise IRError(f"inconsistent cell shapes: X{list(x.shape)} H{list(h.shape)} "
                      f"W{list(w.shape)} R{list(r.shape)} B{list(b.shape)} (hidden_size {hs})")
    if len({v.dtype for v in (x, h, w, r, b)}) != 1 or x.dtype.kind != "f":
        raise IRError("cell inputs must share one floating-point type")


def _gates(x, h, w, r, b, clip):
    g = x @ w.T + h @ r.T + b
    return np.clip(g, -clip, clip) if clip > 0 else g


@register("LSTMCell", {"opset4"}, **_cell_spec(["sigmoid", "tanh", "tanh"]))
@ports(6, n_outputs=2)
def _lstm_cell(layer, a, graph):
    (f, g, hact), clip, hs = _cell_setup(layer, a, 3)

    def fn(x, h, c, w, r, b):
        _check_cell(hs, 4, x, h, w, r, b)
        if c.shape != h.shape or c.dtype != h.dtype:
            raise IRError(f"cell state {c.dtype}{list(c.shape)} does not match H")
        z = _gates(x, h, w, r, b, clip)
        ft, it, ct, ot = (z[:, k * hs:(k + 1) * hs] for k in range(4))
        c_new = f(ft) * c + f(it) * g(ct)
        return arr(f(ot) * hact(c_new)), arr(c_new)
    return fn


@register("GRUCell", {"opset3"}, **_cell_spec(["sigmoid", "tanh"],
                                         {"linear_before_reset": (parse_bool, False)}))
@ports(5)
def _gru_cell(layer, a, graph):
    (f, g), clip, hs = _cell_setup(layer, a, 2)
    lbr = a["linear_before_reset"]

    def fn(x, h, w, r, b):
        _check_cell(hs, 3, x, h, w, r, b, 4 if lbr else 3)
        cl = (lambda v: np.clip(v, -clip, clip)) if clip > 0 else (lambda v: v)
        xw, hr = x @ w.T, h @ r.T
        zt = f(cl(xw[:, :hs] + hr[:, :hs] + b[:hs]))
        rt = f(cl(xw[:, hs:2 * hs] + hr[:, hs:2 * hs] + b[hs:2 * hs]))
        if lbr:
            ht = g(cl(xw[:, 2 * hs:] + rt * (hr[:, 2 * hs:] + b[3 * hs:]) + b[2 * hs:3 * hs]))
        else:
            ht = g(cl(xw[:, 2 * hs:] + (rt * h) @ r[2 * hs:].T + b[2 * hs:]))
        return arr((1 - zt) * ht + zt * h)
    return fn


@register("RNNCell", {"opset1"}, **_cell_spec(["tanh"]))
@ports(5)
def _rnn_cell(layer, a, graph):
    (f,), clip, hs = _cell_setup(layer, a, 1)

    def fn(x, h, w, r, b):
        _check_cell(hs, 1, x, h, w, r, b)
        return arr(f(_gates(x, h, w, r, b, clip)))
    return fn


