"""Run the recurrent layers of an OpenVINO IR model on the MLI fixed-point kernels.

:func:`to_fixed_point` takes a float model from :func:`mli.ir.read_model` and
calibration inputs, and returns a :class:`FixedPointModel` in which every
``LSTMCell`` (opset1/4), ``RNNCell`` (opset1), ``LSTMSequence`` / ``RNNSequence``
(opset5) layer -- in TensorIterator / Loop bodies or at top level -- runs on
``mli_krn_lstm_cell_*`` / ``mli_krn_basic_rnn_cell_*`` (cells: one-to-one mode,
one call per batch row and step; sequences: batch-to-batch) through a
:class:`mli.graph.KernelBody`, and every ``GRUCell`` (opset3) / ``GRUSequence``
(opset5) on a GRU composed from MLI 1.1 kernels (:class:`mli.gru.GruCell`, see
below).  The rest of the graph stays
float: the cell's inputs X, H (and C) are quantized where they enter the
cell and its outputs dequantized where they leave it.  (Requantizing a
dequantized state is exact, so a recurrence through back edges computes what
the kernel computes on firmware.)

Conversion of a cell
--------------------
* Gate order: OpenVINO's LSTMCell blocks f, i, c, o become MLI's i, g, f, o;
  W [4M, N] and R [4M, M] are stacked into MLI's weights [4, M, N+M] and
  B [4M] into [4, M] (RNNCell: [M, N+M] and [M]).
* Activations must be the defaults (LSTMCell sigmoid, tanh, tanh; RNNCell
  tanh; GRU sigmoid, tanh), ``clip`` 0 (LSTM, RNN) and no
  ``activations_alpha/beta``; W, R and B must be
  constants: a Const, a Const through Convert (f16 compression), Transpose,
  Reshape, Squeeze, Unsqueeze, Split, VariadicSplit, Concat, Gather, Slice,
  StridedSlice or a static ShapeOf, or a TensorIterator/Loop invariant input fed
  by one of those in the outer graph.  Anything else raises
  :class:`FixedPointError` naming the layer.
* ``LSTMSequence``-5 / ``RNNSequence``-5: each direction is its own cell (own
  frac bits, calibrated on that direction's steps) and runs each batch row as
  a batch-to-batch MLI call over the row's valid steps, the rows of one length
  together in ONE batched-rows call (:mod:`mli.rows`, bit-identical to a call
  per row; ``sequence_lengths`` honoured; the reverse direction is fed its valid
  part backwards); outputs past a row's length are 0 and its final state is
  that of its last valid step.
* ``GRUCell`` / ``GRUSequence``: MLI 1.1 has no GRU kernel, so each direction
  is a :class:`mli.gru.GruCell` stepped in Python over the row's valid steps
  (the reset gate sits inside the candidate: no single MLI call computes a GRU
  sequence).  Per step and batch row it calls (the rows of one length step
  together: the basic RNN cells as batched rows, the fully connected parts as
  batched rows of a basic RNN with zero recurrent weights, the other kernels on
  [B, ...] tensors; the same values):

  1. ``basic_rnn_cell`` one-to-one, act NONE, stacked weights [2, M, N+M]
     (``[W_z | R_z]``, ``[W_r | R_r]``), bias [2, M] -> z, r pre-activations
     at frac 12 (16-bit data) / 4 (8-bit);  (``clip``: ``eltwise_min``,
     ``eltwise_max`` against +-clip)
  2. ``sigm`` -> z, r (frac 15 / 7);
  3. ``linear_before_reset`` false: ``eltwise_mul(r, h)``, then
     ``basic_rnn_cell`` one-to-one, act TANH, weights ``[W_h | R_h]`` [M, N+M]
     on (x, r*h) -> n;  (``clip``: act NONE, ``eltwise_min/max``, ``tanh``)
     ``linear_before_reset`` true: ``fully_connected(x, W_h, Wb_h)`` -> xn,
     ``fully_connected(h, R_h, Rb_h)`` -> hn, ``eltwise_mul(r, hn)``,
     ``eltwise_add(xn, r*hn)``, (``clip``: ``eltwise_min/max``), ``tanh`` -> n;
  4. ``eltwise_mul(z, h)``, ``eltwise_mul(z, n)``, ``eltwise_sub(n, z*n)``,
     ``eltwise_add(n - z*n, z*h)`` -> h' = (1 - z) n + z h (no intermediate
     leaves [-1, 1)).

  8 calls per step (11 with ``linear_before_reset``; +2 per clamp with
  ``clip``).  Error it adds beyond the quantized x, h and weights: z, r and n
  pass through MLI's sigm/tanh lookup tables (linear interpolation, about
  2^-13 at 16 bits) and r*h, z*h, z*n, n - z*n are each rounded to the data
  format (1/2 LSB); pre-activations saturate at +-8 like MLI's own cells.  On
  the 23 public OpenVINO GRU cases fx16 reaches 59.5-65.1 dB against the float
  run (an independent simulation with MLI's tables: 59.9-66.1 dB; with ideal
  activations 70-78 dB: the tables dominate).  Directions, ``sequence_lengths``
  and the outputs past a row's length are handled as for the other sequences.
  ``clip`` is supported for GRU only; activations must be the defaults
  (sigmoid, tanh).

Frac bits (per cell, from the float model run on the calibration inputs)
------------------------------------------------------------------------
* ``h`` (state) = output frac = 15 (16-bit data) or 7 (8-bit data): MLI's
  outputs have that frac and its shifts use the prev_out frac at every step.
  Initial states beyond [-1, 1) saturate (noted in :meth:`FixedPointModel.summary`).
* ``x``: the largest frac holding the range X took at the cell
  (:func:`mli.frac_bits_for`); ``c`` (LSTM): the same for the cell state (C in
  and out over all steps); ``w``: the same for the stacked W and R.
* Accumulator headroom: ``w`` and then ``x`` frac are lowered until the largest
  input-part and full pre-activation seen, at frac ``x+w`` and ``h+w``, stay
  below half the accumulator range (2^39 for fx16's 40-bit accumulator,
  2^31 for fx8 / fx8w16d) -- usually nothing changes.
* ``b``: the largest frac holding B, at most ``x + w`` (MLI's bias shift must
  not be negative).
* GRU: each MLI weight tensor (the stacked z/r one, the candidate's, or W_h and
  R_h with ``linear_before_reset``) gets its own ``w`` and ``b`` frac by the same
  rules (headroom from the calibrated input part and whole of that call's
  pre-activation); with ``linear_before_reset`` xn, hn, r*hn and their sum share
  a frac of at most 12 / 4, lowered if calibration saw them beyond +-8.
* Gate pre-activations are computed at frac 12 (16-bit) / 4 (8-bit) and
  saturate at +-8 (MLI's fixed choice); the share of saturated values seen in
  calibration is reported.

Command line::

    python -m mli.fixed_point case.xml [--kind fx16|fx8w16d|fx8|all]

calibrates on the ``in__*`` arrays of ``case.npz`` beside the xml and prints
the chosen frac bits and the S/N (dB) of every output against the float run.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any, Dict, List, Union

import numpy as np

from . import ir
from .enums import KINDS, ElementType
from .graph.kernel_body import KernelBody
from .gru import GruCell, split_gru_weights
from .ir.registry import parse_bool
from .fixed_point_mli2 import MLI2_KINDS, Mli2Cell, Mli2Error
from .metrics import sn_db
from .tensor import Tensor, frac_bits_for

__all__ = ["to_fixed_point", "FixedPointModel", "QuantizedCell", "FixedPointError", "main"]

CELL_TYPES = ("LSTMCell", "RNNCell", "GRUCell")
SEQUENCE_TYPES = ("LSTMSequence", "RNNSequence", "GRUSequence")
GRU_TYPES = ("GRUCell", "GRUSequence")
RECURRENT_TYPES = CELL_TYPES + SEQUENCE_TYPES
_DEFAULT_ACTS = {"LSTMCell": ["sigmoid", "tanh", "tanh"], "RNNCell": ["tanh"],
                 "LSTMSequence": ["sigmoid", "tanh", "tanh"], "RNNSequence": ["tanh"],
                 "GRUCell": ["sigmoid", "tanh"], "GRUSequence": ["sigmoid", "tanh"]}
_WEIGHT_INPUTS = {"LSTMCell": 3, "RNNCell": 2, "LSTMSequence": 4, "RNNSequence": 3,
                  "GRUCell": 2, "GRUSequence": 3}
_FOLDABLE = ("Convert", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Split",
             "VariadicSplit", "Concat", "Gather", "Slice", "StridedSlice", "ShapeOf")
_OV_TO_MLI = [1, 2, 0, 3]          # OpenVINO f, i, c, o  ->  MLI i, g, f, o
_EL = {ElementType.FX_8: "fx8", ElementType.FX_16: "fx16"}


class FixedPointError(ir.IRUnsupportedError):
    """A model (or one of its cells) that cannot be converted to fixed point."""


@dataclasses.dataclass
class QuantizedCell:
    """One converted cell.

    Attributes
    ----------
    layer : mli.ir.Layer
        The recurrent layer (one direction of it for a sequence op).
    body : mli.graph.KernelBody, mli.gru.GruCell or mli.fixed_point_mli2.Mli2Cell
        The MLI cell with its quantized weights; ``body.fracs`` are the frac bits.
    ranges : dict
        Calibration statistics: ``(min, max)`` of ``x``, ``h_in``, ``h_out``,
        ``c_in``, ``c_out``; largest ``|pre-activation|`` (``acc_in``: input part
        plus bias; ``acc``: all); ``gates`` and ``saturated``: number of gate
        pre-activations seen and how many were beyond +-8; GRU also the largest
        ``|value|`` of each call's pre-activation (``zr_in``, ``zr``, ``n_in``, ``n``
        or ``xn``, ``hn``, ``nsum``).
    notes : list of str
        Saturation warnings and frac-bit adjustments.
    """

    layer: ir.Layer
    body: Union[KernelBody, GruCell]
    ranges: dict
    notes: list

    def describe(self) -> str:
        b = self.body
        if isinstance(b, Mli2Cell):
            return "\n".join([b.describe(self.layer)] + [f"    note: {n}" for n in self.notes])
        f = ", ".join(f"{k} {v}" for k, v in b.fracs.items())
        sat = self.ranges["saturated"] / max(self.ranges["gates"], 1)
        text = (f"{self.layer.name} ({self.layer.type}, N={b.input_size}, M={b.state_size}): "
                f"{b.kind}, frac bits {f}; gate pre-activations beyond +-8: {100 * sat:.2f}%")
        return "\n".join([text] + [f"    note: {n}" for n in self.notes])


class _Stats:
    """Running calibration statistics of one cell."""

    def __init__(self):
        self.lo, self.hi = {}, {}
        self.acc_in = self.acc = 0.0
        self.gates = self.saturated = 0
        self.peak = {}                    # GRU: largest |value| of each intermediate

    def add_peak(self, name, v):
        v = np.asarray(v, np.float64)
        self.peak[name] = max(self.peak.get(name, 0.0), float(np.abs(v).max(initial=0)))

    def add(self, name, v):
        v = np.asarray(v, np.float64)
        if v.size:
            self.lo[name] = min(self.lo.get(name, math.inf), float(v.min()))
            self.hi[name] = max(self.hi.get(name, -math.inf), float(v.max()))

    def range(self, *names):
        lo = min((self.lo[n] for n in names if n in self.lo), default=0.0)
        hi = max((self.hi[n] for n in names if n in self.hi), default=0.0)
        return lo, hi

    def as_dict(self, lstm):
        names = ("x", "h_in", "h_out") + (("c_in", "c_out") if lstm else ())
        d = {n: self.range(n) for n in names}
        d.update(acc_in=self.acc_in, acc=self.acc, gates=self.gates, saturated=self.saturated)
        d.update(self.peak)
        return d


def _lbr(layer):
    return parse_bool(layer.attrs.get("linear_before_reset", "false") or "false")


def _clip(layer):
    return float(layer.attrs.get("clip", "0") or 0)


def _gru_stats(st, lbr, clip, x, h, W, R, B):
    """Record what the MLI composition of one GRU step meets (float64, OpenVINO's formulas):
    the input part and the whole of each pre-activation (``zr_in``/``zr`` for the stacked
    z, r call; ``n_in``/``n`` for the candidate call, or ``xn``, ``hn`` and their sum
    ``nsum`` with ``linear_before_reset``)."""
    M = h.shape[-1]
    cl = (lambda v: np.clip(v, -clip, clip)) if clip > 0 else (lambda v: v)
    xw, hr = x @ W.T, h @ R.T
    zr_in = xw[:, :2 * M] + B[:2 * M]
    zr = zr_in + hr[:, :2 * M]
    r = 1 / (1 + np.exp(-cl(zr[:, M:])))
    st.add("x", x)
    st.add("h_in", h)
    st.add_peak("zr_in", zr_in)
    st.add_peak("zr", zr)
    if lbr:
        xn, hn = xw[:, 2 * M:] + B[2 * M:3 * M], hr[:, 2 * M:] + B[3 * M:]
        n = xn + r * hn
        parts, pre = {"xn": xn, "hn": hn, "nsum": n}, (zr, n)
        st.acc_in = max(st.acc_in, float(np.abs(zr_in).max(initial=0)),
                        float(np.abs(xn).max(initial=0)))
    else:
        n_in = xw[:, 2 * M:] + B[2 * M:]
        n = n_in + (r * h) @ R[2 * M:].T
        parts, pre = {"n_in": n_in, "n": n}, (zr, n)
        st.acc_in = max(st.acc_in, float(np.abs(zr_in).max(initial=0)),
                        float(np.abs(n_in).max(initial=0)))
    for k, v in parts.items():
        st.add_peak(k, v)
    st.acc = max([st.acc] + [float(np.abs(v).max(initial=0)) for v in pre])
    for v in pre:
        st.gates += v.size
        st.saturated += int(np.count_nonzero(np.abs(cl(v)) > 8))


# ---------------------------------------------------------------------------- cells
def _resolve(site, layer, index, what):
    """The constant value feeding input ``index`` of ``layer``: a Const, through Convert
    (f16 compression), Transpose, Reshape, Squeeze, Unsqueeze, Split, VariadicSplit, Concat,
    Gather, Slice, StridedSlice or ShapeOf of constants, and from a
    TensorIterator/Loop body Parameter fed by an invariant input back to the outer graph.
    ``site`` = (graphs from the top level down to the layer's, enclosing TI/Loop layers)."""
    graphs, path = site
    depth = len(graphs) - 1
    g = graphs[depth]
    src, sport = g.producer(layer.id, layer.inputs[index].id)
    if src.type == "Const":
        return src.data
    if src.type == "ShapeOf" and src.inputs and None not in src.inputs[0].dims \
            and src.outputs[0].dtype is not None:        # a static shape is a constant
        return np.array(src.inputs[0].dims, src.outputs[0].dtype)
    if src.type in _FOLDABLE:
        args = [_resolve(site, src, k, what) for k in range(len(src.inputs))]
        try:
            fn = ir._build(src, g)
            out = fn(*[a.astype(np.float32) if a.dtype == np.float16 else a for a in args])
        except (ir.IRError, ValueError) as e:
            raise FixedPointError(f"{layer}: {what} cannot be folded through {src}: {e}") from None
        return out[[p.id for p in src.outputs].index(sport.id)] if isinstance(out, tuple) \
            else out
    if src.type == "Parameter" and depth > 0:
        outer = path[depth - 1]
        back = {to for _, to in outer.back_edges}
        for entry in outer.port_map:
            if entry.kind == "input" and entry.internal_layer_id == src.id \
                    and entry.axis is None and entry.purpose is None and src.id not in back:
                k = [p.id for p in outer.inputs].index(entry.external_port_id)
                return _resolve((graphs[:depth], path[:depth - 1]), outer, k, what)
    raise FixedPointError(f"{layer}: {what} must be a constant (a Const, possibly through "
                          f"Convert/Transpose/Reshape, or a TensorIterator/Loop invariant input "
                          f"fed by one) to be quantized; it comes from {src}")


def _check_cell(layer, site):
    """Refuse what MLI cannot do; return the constant W, R, B (per direction for a
    sequence op: arrays with a leading direction axis)."""
    a = layer.attrs
    acts = [s.strip().lower() for s in a.get("activations", "").split(",") if s.strip()]
    want = _DEFAULT_ACTS[layer.type]
    if acts and acts[:len(want)] != want:
        raise FixedPointError(f"{layer}: activations {acts} are not supported by the MLI "
                              f"kernels (only the defaults {want})")
    for k in ("activations_alpha", "activations_beta"):
        if a.get(k, "").strip():
            raise FixedPointError(f"{layer}: {k}={a[k]!r} is not supported by the MLI kernels")
    if layer.type in GRU_TYPES:
        try:
            _lbr(layer)
        except ValueError:
            raise FixedPointError(f"{layer}: linear_before_reset="
                                  f"{a.get('linear_before_reset')!r} is not a boolean") from None
    elif float(a.get("clip", "0") or 0) != 0:
        raise FixedPointError(f"{layer}: clip={a['clip']} is not supported by the MLI kernels "
                              f"(gates saturate at +-8 instead)")
    if layer.type == "LSTMCell" and len(layer.inputs) > 6:
        raise FixedPointError(f"{layer}: LSTMCell peepholes are not supported by the MLI kernel")
    first = _WEIGHT_INPUTS[layer.type]
    return [np.asarray(_resolve(site, layer, k, what), np.float64)
            for k, what in zip(range(first, first + 3), ("W", "R", "B"))]


def _mli_weights(layer, W, R, B):
    """OpenVINO W, R, B -> MLI weights and bias (float64)."""
    M = int(layer.attrs["hidden_size"])
    W, R, B = (np.asarray(v, np.float64) for v in (W, R, B))
    if layer.type in ("LSTMCell", "LSTMSequence"):
        N = W.shape[1]
        w = np.concatenate([W.reshape(4, M, N)[_OV_TO_MLI], R.reshape(4, M, M)[_OV_TO_MLI]],
                           axis=2)
        return w, B.reshape(4, M)[_OV_TO_MLI]
    return np.concatenate([W, R], axis=1), B


def _frac_for(values, el, layer, what):
    try:
        return frac_bits_for(np.asarray(values, np.float64), el)
    except ValueError as e:
        raise FixedPointError(f"{layer}: {what} cannot be represented in {el}: {e}") from None


def _plan_gru(layer, weights, stats, kind):
    """Choose the frac bits of one GRU (one direction of a GRUSequence) and build its
    :class:`mli.gru.GruCell`."""
    W, R, B = weights
    lbr = _lbr(layer)
    data_el, w_el = (_EL[e] for e in KINDS[kind])
    q = 15 if data_el == "fx16" else 7
    g0 = q - 3                                      # 12 / 4: the pre-activations' +-8
    try:
        parts = split_gru_weights(W, R, B, lbr)
    except ValueError as e:
        raise FixedPointError(f"{layer}: {e}") from None
    notes = []
    p = stats.peak
    f_x = _frac_for(stats.range("x"), data_el, layer, "the input X")
    f_w = {k: _frac_for(w, w_el, layer, f"the weights {k}") for k, (w, _) in parts.items()}
    limit = 2.0 ** (38 if kind == "fx16" else 30)          # half the accumulator range
    whole = {"zr": max(p.get("zr", 0), p.get("zr_in", 0)), "n": max(p.get("n", 0),
             p.get("n_in", 0)), "hn": p.get("hn", 0)}      # at frac q + w (state part)
    x_part = {"zr": p.get("zr_in", 0), "n": p.get("n_in", 0), "xn": p.get("xn", 0)}
    f_w0, f_x0 = dict(f_w), f_x
    for k in f_w:
        while k in whole and f_w[k] > 0 and whole[k] * 2.0 ** (q + f_w[k]) > limit:
            f_w[k] -= 1
    while f_x > 0 and any(x_part[k] * 2.0 ** (f_x + f_w[k]) > limit for k in f_w if k in x_part):
        f_x -= 1
    if (f_w, f_x) != (f_w0, f_x0):
        notes.append(f"accumulator headroom: weights frac {f_w0} -> {f_w}, input frac "
                     f"{f_x0} -> {f_x}")
    n_frac = None
    if lbr:
        big = max(p.get("xn", 0), p.get("hn", 0), p.get("nsum", 0))
        n_frac = min(g0, _frac_for([-big, big], data_el, layer, "the candidate's parts"))
        if n_frac < g0:
            notes.append(f"candidate parts reach {big:.3g}: held at frac {n_frac}")
    notes += _saturation_notes(stats, q)
    try:
        cell = GruCell(W, R, B, linear_before_reset=lbr, kind=kind, in_frac=f_x,
                       clip=_clip(layer), w_fracs=f_w, n_frac=n_frac)
    except ValueError as e:
        raise FixedPointError(f"{layer}: {e}") from None
    return QuantizedCell(layer, cell, stats.as_dict(False), notes)


def _saturation_notes(stats, q):
    """What the calibration saw saturate: the state input beyond [-1, 1) of
    its frac `q`, gate pre-activations beyond +-8."""
    notes = []
    lo, hi = stats.range("h_in")
    top = (2 ** q - 1) / 2 ** q
    if lo < -1 or hi > top:
        notes.append(f"H input reaches [{lo:.4g}, {hi:.4g}] but the state frac {q} holds "
                     f"[-1, {top:.6g}]: those values saturate")
    if stats.saturated:
        notes.append(f"{stats.saturated} of {stats.gates} gate pre-activations exceed +-8 "
                     f"(largest {stats.acc:.3g}) and saturate")
    return notes


def _plan(layer, weights, stats, kind):
    """Choose the frac bits of one cell (one direction of a sequence op) and build its
    KernelBody."""
    if layer.type in GRU_TYPES:
        return _plan_gru(layer, weights, stats, kind)
    W, R, B = weights
    w, b = _mli_weights(layer, W, R, B)
    data_el, w_el = (_EL[e] for e in KINDS[kind])
    lstm = layer.type in ("LSTMCell", "LSTMSequence")
    q = 15 if data_el == "fx16" else 7
    notes = []
    f_x = _frac_for(stats.range("x"), data_el, layer, "the input X")
    f_w = _frac_for(w, w_el, layer, "the weights W, R")
    limit = 2.0 ** (38 if kind == "fx16" else 30)          # half the accumulator range
    f_w0, f_x0 = f_w, f_x
    while f_w > 0 and max(stats.acc, stats.acc_in) * 2.0 ** (q + f_w) > limit:
        f_w -= 1
    while f_x > 0 and stats.acc_in * 2.0 ** (f_x + f_w) > limit:
        f_x -= 1
    if (f_w, f_x) != (f_w0, f_x0):
        notes.append(f"accumulator headroom: weights frac {f_w0} -> {f_w}, input frac "
                     f"{f_x0} -> {f_x}")
    f_b = min(_frac_for(b, w_el, layer, "the bias B"), f_x + f_w)
    f_c = _frac_for(stats.range("c_in", "c_out"), data_el, layer, "the cell state") \
        if lstm else None
    notes += _saturation_notes(stats, q)
    body = KernelBody("lstm" if lstm else "rnn", Tensor.from_float(w, w_el, f_w, saturate=True),
                      Tensor.from_float(b, w_el, f_b, saturate=True), in_frac=f_x, cell_frac=f_c, kind=kind)
    return QuantizedCell(layer, body, stats.as_dict(lstm), notes)


def _record(layer, float_fn, stats):
    """The float cell, also recording the calibration statistics."""
    lstm = layer.type == "LSTMCell"
    if layer.type == "GRUCell":
        lbr, clip = _lbr(layer), _clip(layer)

        def gru(*xs):
            out = float_fn(*xs)
            stats.add("h_out", out)
            _gru_stats(stats, lbr, clip, *(np.asarray(v, np.float64) for v in xs))
            return out
        return gru

    def fn(*xs):
        out = float_fn(*xs)
        if lstm:
            x, h, c, W, R, B = xs
            stats.add("c_in", c)
            stats.add("c_out", out[1])
            stats.add("h_out", out[0])
        else:
            x, h, W, R, B = xs
            stats.add("h_out", out)
        stats.add("x", x)
        stats.add("h_in", h)
        x64, h64 = np.asarray(x, np.float64), np.asarray(h, np.float64)
        part = x64 @ np.asarray(W, np.float64).T + np.asarray(B, np.float64)
        z = part + h64 @ np.asarray(R, np.float64).T
        stats.acc_in = max(stats.acc_in, float(np.abs(part).max(initial=0)))
        stats.acc = max(stats.acc, float(np.abs(z).max(initial=0)))
        stats.gates += z.size
        stats.saturated += int(np.count_nonzero(np.abs(z) > 8))
        return out
    return fn


try:        # the clip ufunc itself (np.clip's Python wrapper costs more than the work here)
    _clip_ufunc = np._core.umath.clip  # type: ignore[attr-defined]
except AttributeError:                 # numpy 1.x
    _clip_ufunc = np.core.umath.clip  # type: ignore[attr-defined]
_INT_RANGE = {np.dtype(np.int8): (-128.0, 127.0), np.dtype(np.int16): (-32768.0, 32767.0)}


def _quantize(body, value, what):
    """``body.quantize(value, what)`` for float arrays, computed with numpy ufuncs on the
    whole array: the same float32 steps as MLI's helper (t = 2^f * x in float32, plus
    0.5 with the sign of x, truncated toward zero, saturated), so the same integers.
    Values that are not finite, and non-float input, go to ``body.quantize`` (its
    errors)."""
    x = np.asarray(value)
    if x.dtype.kind != "f" or x.size == 0 or not np.isfinite(x).all():
        return body.quantize(value, what)
    frac = body.fracs["x" if what == "x" else "h" if what == "h" else "c"]
    if x.dtype != np.float32:
        big = float(np.finfo(np.float32).max)
        x = np.clip(x, -big, big).astype(np.float32)
    lo, hi = _INT_RANGE[body.dtype]
    if frac > 127:               # 2^frac is no float32: leave it to the helper
        return body.quantize(value, what)
    t = np.multiply(np.float32(2.0 ** frac), x)
    # at x == 0 the helper adds -0.5 and this +-0.5: both truncate to 0
    np.add(t, np.copysign(np.float32(0.5), x), out=t)
    _clip_ufunc(t, lo, hi, out=t)         # np.clip's ufunc, without its wrapper
    return t.astype(body.dtype)


def _dequantize(body, value, what, dtype):
    """``body.dequantize(value, what).astype(dtype)``: float32(2^-f) * value."""
    return body.dequantize(value, what).astype(dtype, copy=False)


def _quantized(layer, qcell):
    """The cell on the MLI kernel: quantize X, H (C), run, dequantize."""
    body = qcell.body
    lstm = layer.type == "LSTMCell"
    hs = body.state_size
    if layer.type == "GRUCell":
        nb = 4 if body.linear_before_reset else 3

        def gru(x, h, W, R, B):
            ir._check_cell(hs, 3, x, h, W, R, B, nb)
            out = body.step(_quantize(body, x, "x"), _quantize(body, h, "h"))
            return _dequantize(body, out, "h", x.dtype)
        return gru

    def fn(*xs):
        if lstm:
            x, h, c, W, R, B = xs
        else:
            (x, h, W, R, B), c = xs, None
        ir._check_cell(hs, 4 if lstm else 1, x, h, W, R, B)
        if lstm and (c.shape != h.shape or c.dtype != h.dtype):
            raise ir.IRError(f"cell state {c.dtype}{list(c.shape)} does not match H")
        ins = [_quantize(body, x, "x"), _quantize(body, h, "h")]
        if lstm:
            ins.append(_quantize(body, c, "c"))
        out = body.run(ins)
        h_new = _dequantize(body, out[1], "h", x.dtype)
        if not lstm:
            return h_new
        return h_new, _dequantize(body, out[2], "c", x.dtype)
    return fn


def _directions(layer):
    d = layer.attrs.get("direction", "forward")
    return [False, True] if d == "bidirectional" else [d == "reverse"]


def _record_sequence(layer, float_fn, weights, stats):
    """The float sequence op, also recording per direction the statistics its cells see
    (the op's own step formulas, run again on the same inputs)."""
    from .ir.ops.recurrent import _sigmoid, gru_step, lstm_step, rnn_step, run_sequence
    lstm = layer.type == "LSTMSequence"
    gru = layer.type == "GRUSequence"
    hs = int(layer.attrs["hidden_size"])
    acts = [_sigmoid, np.tanh, np.tanh] if lstm else [_sigmoid, np.tanh] if gru else [np.tanh]
    lbr, clip = (_lbr(layer), _clip(layer)) if gru else (False, 0.0)

    def fn(*xs):
        out = float_fn(*xs)
        x, states, lengths = xs[0], xs[1:3] if lstm else xs[1:2], xs[3 if lstm else 2]
        for d, reverse in enumerate(_directions(layer)):
            W, R, B = (np.asarray(v[d], np.float64) for v in weights)
            st = stats[d]

            def step(xt, h, c=None):
                if gru:
                    _gru_stats(st, lbr, clip, xt, h, W, R, B)
                    h2 = gru_step(acts, clip, hs, lbr, xt, h, W, R, B)
                    st.add("h_out", h2)
                    return h2
                st.add("x", xt)
                st.add("h_in", h)
                part = xt @ W.T + B
                z = part + h @ R.T
                st.acc_in = max(st.acc_in, float(np.abs(part).max(initial=0)))
                st.acc = max(st.acc, float(np.abs(z).max(initial=0)))
                st.gates += z.size
                st.saturated += int(np.count_nonzero(np.abs(z) > 8))
                if lstm:
                    st.add("c_in", c)
                    h2, c2 = lstm_step(acts, 0.0, hs, xt, h, c, W, R, B)
                    st.add("c_out", c2)
                    st.add("h_out", h2)
                    return h2, c2
                h2 = rnn_step(acts, 0.0, hs, xt, h, W, R, B)
                st.add("h_out", h2)
                return h2
            run_sequence(step, np.asarray(x, np.float64),
                         [np.asarray(v[:, d], np.float64) for v in states], lengths, reverse)
        return out
    return fn


def _sequence_inputs(xs, lstm):
    """(X, initial states, lengths as int64 [B]) of a sequence op's inputs, checked."""
    x, states, lengths = xs[0], xs[1:3] if lstm else xs[1:2], xs[3 if lstm else 2]
    if x.ndim != 3:
        raise ir.IRError(f"X must be [batch, seq, input], got {list(x.shape)}")
    B_, T = x.shape[:2]
    lens = np.asarray(lengths).astype(np.int64).reshape(-1)
    if lens.shape != (B_,) or (lens.size and (lens.min() < 0 or lens.max() > T)):
        raise ir.IRError(f"sequence_lengths {lens.tolist()} invalid for X {list(x.shape)}")
    return x, states, lens


_F32 = np.dtype(np.float32)
_HALF = np.float32(0.5)


class _FastSequence:
    """An LSTM/RNN sequence op's common call, with little Python around the MLI calls:
    float32 X, H (and C) of the expected shapes, finite, every row of full length
    (``run`` returns None for anything else: the general path then computes it, or
    raises its errors).  Per direction X, and H with C, are quantized with the float32
    steps of :func:`_quantize` (X read backwards for the reverse direction), all rows go
    through one :meth:`KernelBody._run_rows_into` and the outputs are dequantized as
    :func:`_dequantize` does, straight into the results: the same values as the general
    path."""

    def __init__(self, lstm, dirs, bodies):
        self.lstm = lstm
        self.D = len(dirs)
        b0 = bodies[0]
        self.N, self.M = b0.input_size, b0.state_size
        self.ok = all(b.input_size == self.N and b.state_size == self.M for b in bodies)
        self.dirs = []
        for reverse, body in zip(dirs, bodies):
            f = body.fracs
            fr = (f["x"], f["h"], f["c"] if lstm else 0)
            if max(fr) > 127:                # 2^frac is no float32 (see _quantize)
                self.ok = False
            lo, hi = _INT_RANGE[body.dtype]
            self.dirs.append((reverse, body, body.dtype, np.float32(lo), np.float32(hi),
                              *(np.float32(2.0 ** v) for v in fr),
                              np.float32(2.0 ** -f["h"]), np.float32(2.0 ** -fr[2])))

    def run(self, xs):
        lstm = self.lstm
        if not self.ok or len(xs) < (4 if lstm else 3):
            return None
        x, h = xs[0], xs[1]
        c = xs[2] if lstm else None
        lens = xs[3 if lstm else 2]
        nd = np.ndarray
        if type(x) is not nd or type(h) is not nd or type(lens) is not nd or \
                x.dtype != _F32 or h.dtype != _F32 or x.ndim != 3:
            return None
        B, T, N = x.shape
        D, M = self.D, self.M
        if B == 0 or T == 0 or N != self.N or h.shape != (B, D, M) or lens.size != B or \
                lens.dtype.kind not in "iu":
            return None
        if lstm and (type(c) is not nd or c.dtype != _F32 or c.shape != h.shape):
            return None
        # every row of full length; finite inputs: a sum is finite only then (an
        # overflowing one only sends the call to the general path)
        if not (lens.item() == T if B == 1 else (lens == T).all()):
            return None
        if not math.isfinite(np.add.reduce(x, None)):
            return None
        # quantize every direction first (H and C together; their scaled values are
        # finite only when they are), then run
        mul, copysign, add, clip = np.multiply, np.copysign, np.add, _clip_ufunc
        xf, sign = np.empty((B, T, N), _F32), np.empty((B, T, N), _F32)
        S = 2 if lstm else 1
        hcf, hcs = np.empty((S, B, M), _F32), np.empty((S, B, M), _F32)
        work = []
        for d, (reverse, body, dt, lo, hi, sx, sh, sc, dh, dc) in enumerate(self.dirs):
            mul(h[:, d], sh, out=hcf[0])
            if lstm:
                mul(c[:, d], sc, out=hcf[1])
            if not math.isfinite(add.reduce(hcf, None)):
                return None
            # _quantize's steps: float32(2^f) * v, plus 0.5 with the sign of v (that of
            # the product: 2^f >= 1), saturated, truncated toward zero by the cast
            copysign(_HALF, hcf, out=hcs)
            add(hcf, hcs, out=hcf)
            clip(hcf, lo, hi, out=hcf)
            hcq = hcf.astype(dt)
            src = x[:, ::-1] if reverse else x
            mul(src, sx, out=xf)
            copysign(_HALF, src, out=sign)
            add(xf, sign, out=xf)
            clip(xf, lo, hi, out=xf)
            work.append((hcq, xf.astype(dt)))
        y = np.empty((B, D, T, M), _F32)
        h_last = np.empty((B, D, M), _F32)
        c_last = np.empty((B, D, M), _F32) if lstm else None
        for d, (reverse, body, dt, lo, hi, sx, sh, sc, dh, dc) in enumerate(self.dirs):
            hcq, xq = work[d]
            yq = np.empty((B, T, M), dt)
            body._run_rows_into(xq, hcq[0], hcq[1] if lstm else None, yq)
            yd = y[:, d]
            mul(yq[:, ::-1] if reverse else yq, dh, out=yd)
            h_last[:, d] = yd[:, 0 if reverse else T - 1]
            if lstm:
                mul(hcq[1], dc, out=c_last[:, d])
        return (y, h_last, c_last) if lstm else (y, h_last)


def _quantized_sequence(layer, qcells):
    """The sequence op on the MLI kernels: per direction, X, H (and C) quantized once
    for all rows; the rows of one length together as ONE batch-to-batch batched-rows
    call over their valid steps (:meth:`KernelBody.run_sequence`; read backwards for
    the reverse direction); outputs past a row's length are 0 and
    its final state is that of its last valid step (its initial one for length 0).
    GRU directions step :class:`mli.gru.GruCell`, the rows of one length together.
    LSTM/RNN calls with float32 finite inputs and every row of full length take
    :class:`_FastSequence` (the same values with less Python around the kernels)."""
    lstm = layer.type == "LSTMSequence"
    dirs = _directions(layer)
    fast = None if any(isinstance(q.body, GruCell) for q in qcells) else \
        _FastSequence(lstm, dirs, [q.body for q in qcells])

    def fn(*xs):
        if fast is not None:
            out = fast.run(xs)
            if out is not None:
                return out
        x, states, lens = _sequence_inputs(xs, lstm)
        B_, T = x.shape[:2]
        M = qcells[0].body.state_size
        finals = [np.array(v, copy=True) for v in states]
        full = [b for b in range(B_) if lens[b] == T] if T else []
        part = [b for b in range(B_) if 0 < lens[b] < T]
        if part or len(full) < B_:
            # only the valid steps (and the states of rows that run) are quantized, so
            # only they may fail to (NaN, infinity): zero the rest
            valid = np.arange(T)[None, :] < lens[:, None]
            if not np.isfinite(x).all():
                x = np.where(valid[:, :, None], x, x.dtype.type(0))
            runs = (lens > 0)[:, None, None]
            states = tuple(np.where(runs, v, v.dtype.type(0))
                           if not np.isfinite(v).all() else v for v in states)
        ys = []
        for d, reverse in enumerate(dirs):
            body = qcells[d].body
            yq = np.zeros((B_, T, M), body.dtype)
            if not (full or part):
                ys.append(_dequantize(body, yq, "h", x.dtype))
                continue
            xq = _quantize(body, x, "x")                       # [B, T, N]
            hq = _quantize(body, states[0][:, d], "h")         # [B, M]
            cq = _quantize(body, states[1][:, d], "c") if lstm else None
            # rows of one length together: one batched-rows call (KernelBody.run_sequence)
            # or, for a GRU, each step of the rows together (GruCell.run_rows, see mli.gru)
            groups = {}
            for b in full + part:
                groups.setdefault(int(lens[b]), []).append(b)
            if isinstance(body, GruCell):
                for n, rows in groups.items():
                    seq = xq[rows, :n]
                    y, h_last = body.run_rows(seq[:, ::-1] if reverse else seq, hq[rows])
                    yq[rows, :n] = y[:, ::-1] if reverse else y
                    finals[0][rows, d] = body.dequantize(h_last, "h")
                ys.append(_dequantize(body, yq, "h", x.dtype))
                continue
            for n, rows in groups.items():
                seq = xq[rows, :n]                             # [rows, n, N]
                if reverse:
                    seq = seq[:, ::-1]
                ins = [np.ascontiguousarray(seq.transpose(1, 0, 2)), hq[rows]]
                if lstm:
                    ins.append(cq[rows])
                res = body.run_sequence(*ins)                  # y [n, rows, M]
                out = res[0].transpose(1, 0, 2)
                yq[rows, :n] = out[:, ::-1] if reverse else out
                finals[0][rows, d] = body.dequantize(res[1], "h")
                if lstm:
                    finals[1][rows, d] = body.dequantize(res[2], "c")
            ys.append(_dequantize(body, yq, "h", x.dtype))
        return (np.stack(ys, axis=1), *finals)
    return fn


def _plan2(layer, weights, stats, kind, per_axis):
    """The MLI 2.0.2 plan of one cell (one direction of a sequence op): a
    :class:`mli.fixed_point_mli2.Mli2Cell`."""
    W, R, B = weights
    cell = "lstm" if "LSTM" in layer.type else "gru" if "GRU" in layer.type else "rnn"
    if cell == "gru" and _lbr(layer):
        raise FixedPointError(f"{layer}: linear_before_reset=true has no MLI 2.x kernel (gru_cell "
                              f"applies the reset gate before the weight product); use library='mli1'")
    if cell == "gru" and _clip(layer):
        raise FixedPointError(f"{layer}: clip={_clip(layer)} is not supported by MLI 2.x's gru_cell")
    d = stats.as_dict(cell == "lstm")
    ranges = {"x": d["x"], "h_in": d["h_in"], "h_out": d["h_out"], "acc": stats.acc,
              "c": stats.range("c_in", "c_out")}
    try:
        body = Mli2Cell(cell, kind, W, R, B, ranges, per_axis=per_axis)
    except Mli2Error as e:
        raise FixedPointError(f"{layer}: {e}") from None
    return QuantizedCell(layer, body, d, list(body.notes))


def _quantized2(layer, qcell):
    """A cell op on the MLI 2.x kernels: one T = 1 call per batch row."""
    body = qcell.body
    lstm = layer.type == "LSTMCell"
    hs = body.state_size

    def fn(*xs):
        if lstm:
            x, h, c, W, R, B = xs
        else:
            (x, h, W, R, B), c = xs, None
        if layer.type == "GRUCell":
            ir._check_cell(hs, 3, x, h, W, R, B, 3)
        else:
            ir._check_cell(hs, 4 if lstm else 1, x, h, W, R, B)
        if lstm and (c.shape != h.shape or c.dtype != h.dtype):
            raise ir.IRError(f"cell state {c.dtype}{list(c.shape)} does not match H")
        hn, cn = np.empty(h.shape, x.dtype), (np.empty(c.shape, x.dtype) if lstm else None)
        for b in range(x.shape[0]):
            _, hb, cb = body.run(x[b:b + 1], h[b], c[b] if lstm else None)
            hn[b] = hb
            if lstm:
                cn[b] = cb
        return (hn, cn) if lstm else hn
    return fn


def _quantized_sequence2(layer, qcells):
    """A sequence op on the MLI 2.x kernels: per direction and batch row one
    run over the row's valid steps (fed backwards for the reverse direction);
    outputs past a row's length are 0, its final state that of its last valid step."""
    lstm = layer.type == "LSTMSequence"
    dirs = _directions(layer)

    def fn(*xs):
        x, states, lens = _sequence_inputs(xs, lstm)
        B_, T = x.shape[:2]
        M = qcells[0].body.state_size
        finals = [np.array(v, copy=True) for v in states]
        ys = []
        for d, reverse in enumerate(dirs):
            body = qcells[d].body
            y = np.zeros((B_, T, M), x.dtype)
            for b in range(B_):
                n = int(lens[b])
                if n == 0:
                    continue
                t = np.arange(n)[::-1] if reverse else np.arange(n)
                yb, hb, cb = body.run(x[b, t], states[0][b, d], states[1][b, d] if lstm else None)
                y[b, t] = yb
                finals[0][b, d] = hb
                if lstm:
                    finals[1][b, d] = cb
            ys.append(y)
        return (np.stack(ys, axis=1), *finals)
    return fn


def _has_cells(graph):
    return any(l.type in RECURRENT_TYPES for _, l in graph.walk())


def _compile(graph, make_cell):
    """``graph``'s program with every cell step replaced by ``make_cell(layer, graph, fn)``
    (recursing into TensorIterator / Loop bodies; the float model is untouched)."""
    prog = ir._Program(graph)
    for k, (fn, ins, outs, dtypes, layer) in enumerate(prog.steps):
        if layer.type in RECURRENT_TYPES:
            new = make_cell(layer, graph, fn)
        elif layer.body is not None and _has_cells(layer.body):
            sub = copy.copy(layer.body)
            sub._program = _compile(layer.body, make_cell)
            try:
                new = ir._build(dataclasses.replace(layer, body=sub), graph)
            except (ir.IRError, ir.GraphError) as e:
                raise ir._wrap(e, layer) from None
        else:
            continue
        prog.replace_step(k, new)
    return prog


def _with_program(model, program):
    """A copy of ``model`` running ``program``, with its own ReadValue/Assign state."""
    m = copy.copy(model)
    m._program = program
    m._variables = ir.program.Variables()
    return m


def _samples(calibration_inputs):
    if isinstance(calibration_inputs, dict):
        return [calibration_inputs]
    if isinstance(calibration_inputs, (list, tuple)) and calibration_inputs and all(
            isinstance(s, dict) for s in calibration_inputs):
        return list(calibration_inputs)
    if isinstance(calibration_inputs, (list, tuple)) and calibration_inputs:
        return [list(calibration_inputs)]
    raise ValueError("calibration_inputs: give one input dict (or list of arrays in input "
                     "order) or a non-empty list of input dicts")


# ---------------------------------------------------------------------------- API
def to_fixed_point(model, calibration_inputs, kind="fx16", library="mli1",
                   per_axis=True) -> "FixedPointModel":
    """Convert the recurrent layers (LSTM/RNN/GRU cells and sequences) of ``model`` to
    MLI fixed point.

    Parameters
    ----------
    model : mli.ir.Model
        From :func:`mli.ir.read_model`; not modified.
    calibration_inputs : dict, sequence of arrays, or list of dicts
        One input set (as for ``model(...)``) or several; the float model runs
        on each and the ranges seen choose the frac bits (see module doc).
    kind : {"fx16", "fx8w16d", "fx8"} (mli1) or {"fx16", "fx16_fx8_fx8", "sa8"} (mli2)
        MLI kernel variant: 16-bit data and weights, 16-bit data with 8-bit
        weights, or 8-bit data and weights (MLI 2.x: asymmetric int8 data,
        int8 weights, int32 bias).
    library : {"mli1", "mli2"}
        ``"mli1"`` (default): the MLI 1.1 kernels described above;
        ``"mli2"``: the MLI 2.0.2 kernels of :mod:`mli.v2` (LSTM on
        ``lstm_cell``, GRU on ``gru_cell``, RNN on ``rnn_dense`` + ``tanh``;
        see :mod:`mli.fixed_point_mli2` for the formats chosen).
    per_axis : bool
        ``library="mli2"``, kind ``sa8``: weights quantized per gate (default)
        or per tensor (RNN weights are always per tensor).

    Returns
    -------
    FixedPointModel

    Raises
    ------
    FixedPointError
        (an :class:`mli.ir.IRUnsupportedError`) a cell MLI cannot run: non-default
        activations, clip (LSTM/RNN), activations_alpha/beta, non-Const weights,
        values that do not fit the element type; or no recurrent op at all.
    """
    if library not in ("mli1", "mli2"):
        raise ValueError(f"library must be 'mli1' or 'mli2', got {library!r}")
    if library == "mli2" and kind not in MLI2_KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, MLI2_KINDS))} for library='mli2', "
                         f"got {kind!r}")
    if library == "mli1" and kind not in KINDS:
        raise ValueError(f"kind must be one of 'fx16', 'fx8w16d', 'fx8', got {kind!r}")
    found = [(l, ((model.graph,) + tuple(p.body for p in path), path))
             for path, l in model.graph.walk() if l.type in RECURRENT_TYPES]
    if not found:
        raise FixedPointError(f"{getattr(model.graph, 'name', 'model')!r} has no recurrent "
                              f"op ({', '.join(RECURRENT_TYPES)}) to convert")
    weights = {layer: _check_cell(layer, site) for layer, site in found}  # refuse early
    # one _Stats per direction of a sequence op, one for a cell
    stats = {layer: [_Stats() for _ in (_directions(layer) if layer.type in SEQUENCE_TYPES
                                        else [False])] for layer, _ in found}

    def record(layer, g, fn):
        if layer.type in SEQUENCE_TYPES:
            return _record_sequence(layer, fn, weights[layer], stats[layer])
        return _record(layer, fn, stats[layer][0])
    recorder = _with_program(model, _compile(model.graph, record))
    for sample in _samples(calibration_inputs):
        recorder(sample)
    plans: Dict[Any, List[QuantizedCell]] = {}      # per direction; one for a cell
    cells: List[QuantizedCell] = []
    def plan(layer, w, st):
        return _plan2(layer, w, st, kind, per_axis) if library == "mli2" else _plan(layer, w, st, kind)
    for layer, _ in found:
        if layer.type in SEQUENCE_TYPES:
            plans[layer] = [plan(layer, [v[d] for v in weights[layer]], st)
                            for d, st in enumerate(stats[layer])]
        else:
            plans[layer] = [plan(layer, weights[layer], stats[layer][0])]
        cells += plans[layer]

    def quantized(layer, g, fn):
        if layer.type in SEQUENCE_TYPES:
            return (_quantized_sequence2 if library == "mli2" else _quantized_sequence)(layer, plans[layer])
        return (_quantized2 if library == "mli2" else _quantized)(layer, plans[layer][0])
    program = _compile(model.graph, quantized)
    return FixedPointModel(model, kind, cells, program, library)


class FixedPointModel:
    """A model whose RNN cells run on the MLI kernels (see :func:`to_fixed_point`).

    Call it like the float :class:`mli.ir.Model`: ``fpm({"X": x, ...})`` returns
    ``{output name: array}`` with the IR's dtypes.

    Attributes
    ----------
    float_model : mli.ir.Model
    kind : str
    library : str
        ``"mli1"`` or ``"mli2"``.
    cells : list of QuantizedCell
        The converted cells, in graph order, with their frac bits.
    input_names, output_names : list of str
    """

    def __init__(self, float_model, kind, cells, program, library="mli1"):
        self.float_model = float_model
        self.kind = kind
        self.library = library
        self.cells = cells
        self._model = _with_program(float_model, program)
        self.input_names = float_model.input_names
        self.output_names = float_model.output_names

    def __call__(self, inputs=None, /, **named):
        """Run the model (same arguments and result as :meth:`mli.ir.Model.__call__`)."""
        return self._model(inputs, **named)

    def report(self, inputs=None, /, **named) -> dict:
        """S/N in dB of every output against the float model on ``inputs``.

        ``10*log10(sum ref^2 / sum (ref - q)^2)`` (``inf`` when identical),
        keyed by output name in output order."""
        ref = self.float_model(inputs, **named)
        got = self(inputs, **named)
        return {k: sn_db(ref[k], got[k]) for k in ref}

    def summary(self) -> str:
        """The converted cells and their frac bits, one paragraph per cell."""
        return "\n".join(c.describe() for c in self.cells)

    def __repr__(self):
        lib = "MLI 2.0.2" if self.library == "mli2" else "MLI 1.1"
        return (f"<FixedPointModel {self.kind}: {len(self.cells)} cell(s) on {lib} kernels, "
                f"inputs {self.input_names}, outputs {self.output_names}>")


if __name__ == "__main__":  # ``python -m mli.fixed_point``: the command is mli.tools.fixed_point
    from .tools.fixed_point import main

    raise SystemExit(main())
