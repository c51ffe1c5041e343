"""The MLI 2.0.2 backend of :func:`mli.fixed_point.to_fixed_point` (``library="mli2"``).

One :class:`Mli2Cell` is one direction of an IR LSTM / GRU / RNN layer on the
kernels of :mod:`mli.v2`:

* LSTM: ``lstm_cell_<kind>``, a whole sequence (one batch row) per call.  OpenVINO's
  W [4M, N], R [4M, M] (gates f, i, c, o) become weights_in (4, N, M) and
  weights_out (4, M, M) in MLI's gate order i, g, f, o; B [4M] the bias (4, M).
* GRU: ``gru_cell_<kind>`` natively (gates z, r, n; the reset gate multiplies h
  before the weight product, i.e. ``linear_before_reset`` false, the only form
  MLI 2.x has; ``clip`` is not supported either).
* RNN: MLI 2.x has no basic RNN cell; per step ``rnn_dense_<kind>`` over the two
  inputs (x_t, h) with weights W^T (N, M) and R^T (M, M), then ``tanh_<kind>``.

A cell op runs one T = 1 call per batch row; a sequence op, per direction and batch
row, one run over the row's valid steps (fed backwards for the reverse direction).

Formats (from the float model's calibration ranges, as for 1.1):

* fx16 / fx16_fx8_fx8: h (prev_out and out) frac 15; x and the LSTM cell the
  largest frac holding their range; weights_in, weights_out and bias each the
  largest frac holding them, the bias at most ``f_x + f_w_in`` (MLI's check)
  and at least ``f_x + f_w_in - 16`` (the fx16 bias is shifted in 64 bits then
  truncated to 32: larger shifts wrap), lowering ``f_w_in`` if need be.  The RNN's
  dense output takes the largest frac holding the calibrated pre-activations.
* sa8 (kind ``sa8_sa8_sa32``): x, h and the cell per tensor, asymmetric, from
  their calibrated ranges (:meth:`mli.v2.Tensor.from_float` of [lo, hi]);
  weights symmetric, per gate (``per_axis``, dim 0) or per tensor; the sa32 bias
  with scale = scale(x) * scale(w) (MLI's BIASSCALE check).  rnn_dense needs
  per-tensor parameters, so the RNN's weights are always per tensor.  Note MLI
  2.0.2's quirk (SPEC_MLI2 12.4): with per-tensor GRU weights the new gate uses
  scale + 4 and scale_frac_bits + 2 -- reproduced, so per-tensor sa8 GRUs lose
  accuracy (the summary says so); per axis is the default.
"""
from __future__ import annotations

import numpy as np

from ... import v2
from ...tensor import frac_bits_for
from ...v2._sa import _sa_bias, _sa_params, _sa_quant
from ..errors import FixedPointError
from .base import Backend, QuantizedCell, register_backend

__all__ = ["Mli2Backend", "Mli2Cell", "MLI2_KINDS"]

#: to_fixed_point kind -> mli.v2 kernel suffix
MLI2_KINDS = {"fx16": "fx16", "fx16_fx8_fx8": "fx16_fx8_fx8", "sa8": "sa8_sa8_sa32"}
_OV_TO_MLI = [1, 2, 0, 3]          # OpenVINO f, i, c, o  ->  MLI i, g, f, o


class Mli2Error(ValueError):
    """A cell the 2.x kernels cannot run (raised as FixedPointError by the caller)."""


def _frac(values, el, what):
    try:
        return frac_bits_for(np.asarray(values, np.float64), el)
    except ValueError as e:
        raise Mli2Error(f"{what} cannot be represented in {el}: {e}") from None


class Mli2Cell:
    """One direction of an IR LSTM / GRU / RNN layer on the MLI 2.0.2 kernels.

    ``run(x [T, N], h [M], c [M] or None)`` takes floats, quantizes them to the
    cell's formats, runs the kernels on the T steps and returns the float
    ``(y [T, M], h_last, c_last or None)``."""

    def __init__(self, cell: str, kind: str, W, R, B, ranges: dict, per_axis: bool = True):
        if kind not in MLI2_KINDS:
            raise ValueError(f"kind must be one of {', '.join(MLI2_KINDS)} for library='mli2', got {kind!r}")
        self.cell, self.kind, self.suffix = cell, kind, MLI2_KINDS[kind]
        self.notes: list = []
        W, R, B = (np.asarray(v, np.float64) for v in (W, R, B))
        M = R.shape[-1]
        N = W.shape[-1]
        self.input_size, self.state_size = N, M
        if cell == "lstm":
            w_in = W.reshape(4, M, N)[_OV_TO_MLI].transpose(0, 2, 1)
            w_out = R.reshape(4, M, M)[_OV_TO_MLI].transpose(0, 2, 1)
            bias = B.reshape(4, M)[_OV_TO_MLI]
        elif cell == "gru":
            w_in = W.reshape(3, M, N).transpose(0, 2, 1)
            w_out = R.reshape(3, M, M).transpose(0, 2, 1)
            bias = B.reshape(3, M)
        elif cell == "rnn":
            w_in, w_out, bias = W.T, R.T, B.reshape(M)
            per_axis = False                      # rnn_dense: per-tensor sa8 only
        else:
            raise ValueError(f"cell: expected lstm, gru or rnn, got {cell!r}")
        self.per_axis = per_axis
        self.sa = kind == "sa8"
        if self.sa:
            self._plan_sa8(w_in, w_out, bias, ranges)
        else:
            self._plan_fx(w_in, w_out, bias, ranges)
        self.dtype = np.dtype(np.int8 if self.sa else np.int16)
        self.cfg = v2.RnnCellCfg(v2.RNN_DIR_FORWARD, v2.RNN_OUT_ALL, v2.RNN_ACT_TANH)

    # ------------------------------------------------------------------ planning
    def _plan_fx(self, w_in, w_out, bias, r):
        w_el = "fx16" if self.kind == "fx16" else "fx8"
        f_x = _frac(r["x"], "fx16", "the input X")
        f_wi = _frac(w_in, w_el, "the weights W")
        f_wo = _frac(w_out, w_el, "the weights R")
        f_b = min(_frac(bias, w_el, "the bias B"), f_x + f_wi)
        if self.kind == "fx16" and f_x + f_wi - f_b > 16:     # keep the bias shift <= 16 (no wrap)
            self.notes.append(f"bias shift: weights W frac {f_wi} -> {f_b + 16 - f_x}")
            f_wi = f_b + 16 - f_x
        self.fracs = {"x": f_x, "h": 15, "w_in": f_wi, "w_out": f_wo, "b": f_b}
        self.w_in = v2.Tensor.from_float(w_in, w_el, f_wi)
        self.w_out = v2.Tensor.from_float(w_out, w_el, f_wo)
        self.bias = v2.Tensor.from_float(bias, w_el, f_b)
        lo, hi = r["h_in"]
        if lo < -1 or hi > 1 - 2.0 ** -15:
            self.notes.append(f"H input reaches [{lo:.4g}, {hi:.4g}] but frac 15 holds [-1, 1): "
                              "those values saturate")
        if self.cell == "lstm":
            self.fracs["c"] = _frac(r["c"], "fx16", "the cell state")
        if self.cell == "rnn":
            a = r["acc"]
            self.fracs["pre"] = _frac([-a, a], "fx16", "the pre-activation")

    def _plan_sa8(self, w_in, w_out, bias, r):
        self.x_p = _sa_params(*r["x"])
        lo, hi = r["h_in"]
        h_lo, h_hi = min(lo, r["h_out"][0]), max(hi, r["h_out"][1])
        self.h_p = (0, 1, 7) if self.cell == "rnn" else _sa_params(h_lo, h_hi)   # rnn: tanh's output format
        dim = 0 if self.per_axis else -1
        self.w_in = v2.Tensor.from_float(w_in, "sa8", dim=dim, symmetric=True)
        self.w_out = v2.Tensor.from_float(w_out, "sa8", dim=dim, symmetric=True)
        self.bias = _sa_bias(bias, self.x_p, self.w_in, self.per_axis)
        self.fracs = {"x": "zp %d scale %d>>%d" % self.x_p, "h": "zp %d scale %d>>%d" % self.h_p,
                      "weights": "per gate" if self.per_axis else "per tensor"}
        if self.cell == "lstm":
            self.c_p = _sa_params(*r["c"])
            self.fracs["c"] = "zp %d scale %d>>%d" % self.c_p
        if self.cell == "rnn":
            a = r["acc"]
            self.pre_p = _sa_params(-a, a)
            self.fracs["pre"] = "zp %d scale %d>>%d" % self.pre_p
        if self.cell == "gru" and not self.per_axis:
            self.notes.append("per-tensor sa8 GRU weights: MLI 2.0.2 runs the new gate with scale + 4 "
                              "and scale_frac_bits + 2 (its quirk, reproduced): expect a lower S/N")

    # ------------------------------------------------------------------ tensors
    def _data(self, x, which):
        """A float array as a data tensor of format `which` (x, h, c, pre)."""
        if self.sa:
            p = {"x": self.x_p, "h": self.h_p, "c": getattr(self, "c_p", None),
                 "pre": getattr(self, "pre_p", None)}[which]
            return v2.Tensor.sa(_sa_quant(x, *p), *p)
        return v2.Tensor.from_float(np.clip(np.asarray(x, np.float64), -1e9, 1e9), "fx16", self.fracs[which])

    def _out(self, shape, which):
        if self.sa:
            p = {"h": self.h_p, "pre": getattr(self, "pre_p", None)}[which]
            return v2.Tensor.sa(np.zeros(shape, np.int8), *p)
        return v2.Tensor.zeros(shape, "fx16", self.fracs[which])

    # ------------------------------------------------------------------ running
    def run(self, x, h, c=None):
        x = np.asarray(x, np.float64)
        T, M = x.shape[0], self.state_size
        if T == 0:
            return np.zeros((0, M)), np.asarray(h, np.float64), c
        xt, ht = self._data(x, "x"), self._data(np.asarray(h).reshape(M), "h")
        if self.cell == "rnn":
            return self._run_rnn(xt, ht)
        out = self._out((T, M), "h")
        fn = getattr(v2, f"{self.cell}_cell_{self.suffix}")
        if self.cell == "lstm":
            ct = self._data(np.asarray(c).reshape(M), "c")
            fn(xt, ht, self.w_in, self.w_out, self.bias, None, None, self.cfg, ct, out)
            y = out.to_float()
            return y, y[-1], ct.to_float()
        fn(xt, ht, self.w_in, self.w_out, self.bias, None, None, self.cfg, out)
        y = out.to_float()
        return y, y[-1], None

    def _run_rnn(self, xt, ht):
        dense = getattr(v2, f"rnn_dense_{self.suffix}")
        tanh = getattr(v2, "tanh_sa8" if self.sa else "tanh_fx16")
        cfg = v2.RnnDenseCfg(2)
        xs = xt.numpy()
        ys = []
        for t in range(xs.shape[0]):
            row = v2.Tensor(np.ascontiguousarray(xs[t]), xt.el_type, xs[t].shape, frac_bits=xt.frac_bits)
            if self.sa:
                row.set_sa(*self.x_p)
            pre = self._out((self.state_size,), "pre")
            dense([row, ht], [self.w_in, self.w_out], self.bias, cfg, pre)
            ht = tanh(pre)
            ys.append(ht.to_float())
        y = np.stack(ys)
        return y, y[-1], None

    def describe(self, layer) -> str:
        """One line naming the layer, the kernels and the formats."""
        f = ", ".join(f"{k} {v}" for k, v in self.fracs.items())
        what = {"lstm": "lstm_cell", "gru": "gru_cell", "rnn": "rnn_dense + tanh"}[self.cell]
        return (f"{layer.name} ({layer.type}, N={self.input_size}, M={self.state_size}): MLI 2.0.2 "
                f"{what}_{self.suffix}, " + ("formats" if self.sa else "frac bits") + f" {f}")


# ---------------------------------------------------------------------------- the backend
def _plan(conv, layer, weights, stats, kind, per_axis):
    """The MLI 2.0.2 plan of one cell (one direction of a sequence op): a :class:`Mli2Cell`."""
    W, R, B = weights
    cell = conv.cell
    if cell == "gru" and conv.linear_before_reset(layer):
        raise FixedPointError(f"{layer}: linear_before_reset=true has no MLI 2.x kernel (gru_cell "
                              f"applies the reset gate before the weight product); use library='mli1'")
    if cell == "gru" and conv.clip(layer):
        raise FixedPointError(f"{layer}: clip={conv.clip(layer)} is not supported by MLI 2.x's gru_cell")
    d = stats.as_dict(cell == "lstm")
    ranges = {"x": d["x"], "h_in": d["h_in"], "h_out": d["h_out"], "acc": stats.acc,
              "c": stats.range("c_in", "c_out")}
    try:
        body = Mli2Cell(cell, kind, W, R, B, ranges, per_axis=per_axis)
    except Mli2Error as e:
        raise FixedPointError(f"{layer}: {e}") from None
    return QuantizedCell(layer, body, d, list(body.notes))


@register_backend
class Mli2Backend(Backend):
    """MLI 2.0.2: kinds fx16, fx16_fx8_fx8, sa8 (weights per gate or, ``per_axis`` false,
    per tensor)."""

    name, title = "mli2", "MLI 2.0.2"
    bodies = (Mli2Cell,)

    def __init__(self, kind, *, per_axis=True):
        if kind not in MLI2_KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, MLI2_KINDS))} for library='mli2', "
                             f"got {kind!r}")
        self.kind, self.per_axis = kind, per_axis

    def plan(self, conv, layer, weights, stats):
        return _plan(conv, layer, weights, stats, self.kind, self.per_axis)

    def cell(self, conv, layer, qcell):
        """A cell op on the MLI 2.x kernels: one T = 1 call per batch row."""
        body = qcell.body
        lstm = conv.cell == "lstm"
        inputs = conv.cell_inputs(layer, body.state_size)

        def fn(*xs):
            x, h, c = inputs(xs)
            hn, cn = np.empty(h.shape, x.dtype), (np.empty(c.shape, x.dtype) if lstm else None)
            for b in range(x.shape[0]):
                _, hb, cb = body.run(x[b:b + 1], h[b], c[b] if lstm else None)
                hn[b] = hb
                if lstm:
                    cn[b] = cb
            return (hn, cn) if lstm else hn
        return fn

    def sequence(self, conv, layer, qcells):
        """A sequence op on the MLI 2.x kernels: per direction and batch row one
        run over the row's valid steps (fed backwards for the reverse direction);
        outputs past a row's length are 0, its final state that of its last valid step."""
        lstm = conv.cell == "lstm"
        dirs = conv.directions(layer)

        def fn(*xs):
            x, states, lens = conv.sequence_inputs(xs)
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

    @staticmethod
    def headline(qcell):
        return qcell.body.describe(qcell.layer)
