"""The MLI 1.1 backend (``library="mli1"``, the default): LSTM and RNN cells on
``mli_krn_lstm_cell_*`` / ``mli_krn_basic_rnn_cell_*`` through a
:class:`mli.graph.KernelBody`, GRUs on the composition of MLI 1.1 kernels of
:class:`mli.fixed_point.gru.GruCell`; kinds fx16, fx8w16d and fx8.

How a cell is converted and its frac bits chosen is described in
:mod:`mli.fixed_point`.  Cell ops run one-to-one, the batch rows together in one
batched-rows call; sequence ops quantize X, H (and C) once per direction and run the
rows of one length together in ONE batch-to-batch batched-rows call
(:meth:`KernelBody.run_sequence`), the common all-rows-full-length float32 call through
:class:`FastSequence` (the same values with less Python around the kernels).
"""

from __future__ import annotations

import math

import numpy as np

from ...enums import KINDS, ElementType
from ...graph.kernel_body import KernelBody
from ...tensor import Tensor, frac_bits_for
from ..errors import FixedPointError
from ..gru import GruCell, split_gru_weights
from .base import Backend, QuantizedCell, register_backend

__all__ = ["Mli1Backend", "quantize", "dequantize", "FastSequence"]

_OV_TO_MLI = [1, 2, 0, 3]          # OpenVINO f, i, c, o  ->  MLI i, g, f, o
_EL = {ElementType.FX_8: "fx8", ElementType.FX_16: "fx16"}


# ---------------------------------------------------------------------------- plans
def _mli_weights(lstm, layer, W, R, B):
    """OpenVINO W, R, B -> MLI weights and bias (float64)."""
    M = int(layer.attrs["hidden_size"])
    W, R, B = (np.asarray(v, np.float64) for v in (W, R, B))
    if lstm:
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


def _plan_gru(conv, layer, weights, stats, kind):
    """Choose the frac bits of one GRU (one direction of a GRUSequence) and build its
    :class:`mli.fixed_point.gru.GruCell`."""
    W, R, B = weights
    lbr = conv.linear_before_reset(layer)
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
                       clip=conv.clip(layer), w_fracs=f_w, n_frac=n_frac)
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


def _plan_lstm_rnn(conv, layer, weights, stats, kind):
    """Choose the frac bits of one LSTM or RNN cell (one direction of a sequence op) and
    build its KernelBody."""
    W, R, B = weights
    lstm = conv.cell == "lstm"
    w, b = _mli_weights(lstm, layer, W, R, B)
    data_el, w_el = (_EL[e] for e in KINDS[kind])
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


# ---------------------------------------------------------------------------- running
try:        # the clip ufunc itself (np.clip's Python wrapper costs more than the work here)
    _clip_ufunc = np._core.umath.clip  # type: ignore[attr-defined]
except AttributeError:                 # numpy 1.x
    _clip_ufunc = np.core.umath.clip  # type: ignore[attr-defined]
_INT_RANGE = {np.dtype(np.int8): (-128.0, 127.0), np.dtype(np.int16): (-32768.0, 32767.0)}


def quantize(body, value, what):
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


def dequantize(body, value, what, dtype):
    """``body.dequantize(value, what).astype(dtype)``: float32(2^-f) * value."""
    return body.dequantize(value, what).astype(dtype, copy=False)


_F32 = np.dtype(np.float32)
_HALF = np.float32(0.5)


class FastSequence:
    """An LSTM/RNN sequence op's common call, with little Python around the MLI calls:
    float32 X, H (and C) of the expected shapes, finite, every row of full length
    (``run`` returns None for anything else: the general path then computes it, or
    raises its errors).  Per direction X, and H with C, are quantized with the float32
    steps of :func:`quantize` (X read backwards for the reverse direction), all rows go
    through one :meth:`KernelBody._run_rows_into` and the outputs are dequantized as
    :func:`dequantize` does, straight into the results: the same values as the general
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
            if max(fr) > 127:                # 2^frac is no float32 (see quantize)
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
            # quantize's steps: float32(2^f) * v, plus 0.5 with the sign of v (that of
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


# ---------------------------------------------------------------------------- the backend
@register_backend
class Mli1Backend(Backend):
    """MLI 1.1: kinds fx16, fx8w16d, fx8."""

    name, title = "mli1", "MLI 1.1"
    bodies = (KernelBody, GruCell)

    def __init__(self, kind, *, per_axis=True):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of 'fx16', 'fx8w16d', 'fx8', got {kind!r}")
        self.kind = kind

    def plan(self, conv, layer, weights, stats):
        if conv.cell == "gru":
            return _plan_gru(conv, layer, weights, stats, self.kind)
        return _plan_lstm_rnn(conv, layer, weights, stats, self.kind)

    def cell(self, conv, layer, qcell):
        """The cell on the MLI kernel: quantize X, H (C), run, dequantize."""
        body = qcell.body
        lstm = conv.cell == "lstm"
        inputs = conv.cell_inputs(layer, body.state_size)
        if conv.cell == "gru":
            def gru(*xs):
                x, h, _ = inputs(xs)
                out = body.step(quantize(body, x, "x"), quantize(body, h, "h"))
                return dequantize(body, out, "h", x.dtype)
            return gru

        def fn(*xs):
            x, h, c = inputs(xs)
            ins = [quantize(body, x, "x"), quantize(body, h, "h")]
            if lstm:
                ins.append(quantize(body, c, "c"))
            out = body.run(ins)
            h_new = dequantize(body, out[1], "h", x.dtype)
            if not lstm:
                return h_new
            return h_new, dequantize(body, out[2], "c", x.dtype)
        return fn

    def sequence(self, conv, layer, qcells):
        """The sequence op on the MLI kernels: per direction, X, H (and C) quantized once
        for all rows; the rows of one length together as ONE batch-to-batch batched-rows
        call over their valid steps (:meth:`KernelBody.run_sequence`; read backwards for
        the reverse direction); outputs past a row's length are 0 and
        its final state is that of its last valid step (its initial one for length 0).
        GRU directions step :class:`mli.fixed_point.gru.GruCell`, the rows of one length
        together.
        LSTM/RNN calls with float32 finite inputs and every row of full length take
        :class:`FastSequence` (the same values with less Python around the kernels)."""
        lstm = conv.cell == "lstm"
        dirs = conv.directions(layer)
        fast = None if any(isinstance(q.body, GruCell) for q in qcells) else \
            FastSequence(lstm, dirs, [q.body for q in qcells])

        def fn(*xs):
            if fast is not None:
                out = fast.run(xs)
                if out is not None:
                    return out
            x, states, lens = conv.sequence_inputs(xs)
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
                    ys.append(dequantize(body, yq, "h", x.dtype))
                    continue
                xq = quantize(body, x, "x")                       # [B, T, N]
                hq = quantize(body, states[0][:, d], "h")         # [B, M]
                cq = quantize(body, states[1][:, d], "c") if lstm else None
                # rows of one length together: one batched-rows call (KernelBody.run_sequence)
                # or, for a GRU, each step of the rows together (GruCell.run_rows, see .gru)
                groups = {}
                for b in full + part:
                    groups.setdefault(int(lens[b]), []).append(b)
                if isinstance(body, GruCell):
                    for n, rows in groups.items():
                        seq = xq[rows, :n]
                        y, h_last = body.run_rows(seq[:, ::-1] if reverse else seq, hq[rows])
                        yq[rows, :n] = y[:, ::-1] if reverse else y
                        finals[0][rows, d] = body.dequantize(h_last, "h")
                    ys.append(dequantize(body, yq, "h", x.dtype))
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
                ys.append(dequantize(body, yq, "h", x.dtype))
            return (np.stack(ys, axis=1), *finals)
        return fn

    @staticmethod
    def headline(qcell):
        b, layer, ranges = qcell.body, qcell.layer, qcell.ranges
        f = ", ".join(f"{k} {v}" for k, v in b.fracs.items())
        sat = ranges["saturated"] / max(ranges["gates"], 1)
        return (f"{layer.name} ({layer.type}, N={b.input_size}, M={b.state_size}): "
                f"{b.kind}, frac bits {f}; gate pre-activations beyond +-8: {100 * sat:.2f}%")
