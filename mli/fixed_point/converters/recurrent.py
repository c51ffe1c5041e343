"""Converters of the recurrent ops: ``LSTMCell``-1/4, ``RNNCell``-1 and ``GRUCell``-3 (a
cell op is one planned unit) and ``LSTMSequence``-5, ``RNNSequence``-5 and
``GRUSequence``-5 (one unit per direction).

Each converter declares its op type and where its weights are (W, R, B: three
consecutive inputs from ``weights``); its family (:class:`_Lstm`, :class:`_Rnn`,
:class:`_Gru`) declares the default activations (the only ones MLI's kernels
compute), the attributes it refuses, the MLI cell a backend plans (``cell``: "lstm",
"rnn" or "gru"), the gate count, and how one step is recorded in calibration
(``observer``) and computed in float (``float_step``, OpenVINO's step formulas).
"""

from __future__ import annotations

import numpy as np

from ... import ir
from ...ir.ops.recurrent import _sigmoid, gru_step, lstm_step, rnn_step, run_sequence
from ...ir.registry import parse_bool
from ..constants import resolve
from ..errors import FixedPointError
from ..registry import Converter, register

__all__ = ["CellConverter", "SequenceConverter"]


# ---------------------------------------------------------------------------- calibration
def _observe_dense(st, x, h, W, R, B):
    """Record what an LSTM / RNN step meets (float64): X, H, the largest input part
    (plus bias) and whole pre-activation, and the gate pre-activations beyond +-8."""
    st.add("x", x)
    st.add("h_in", h)
    part = x @ W.T + B
    z = part + h @ R.T
    st.acc_in = max(st.acc_in, float(np.abs(part).max(initial=0)))
    st.acc = max(st.acc, float(np.abs(z).max(initial=0)))
    st.gates += z.size
    st.saturated += int(np.count_nonzero(np.abs(z) > 8))


def _observe_gru(st, lbr, clip, x, h, W, R, B):
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


# ---------------------------------------------------------------------------- families
class _Recurrent(Converter):
    """What the recurrent converters share: the checks and the constants W, R, B."""

    #: the MLI cell a backend plans: "lstm", "rnn" or "gru"
    cell = ""
    #: gate blocks of W and R (OpenVINO's order)
    gates = 0
    #: the default activations, the only ones the MLI kernels compute
    activations: tuple = ()
    #: state inputs after X: H, and C for an LSTM
    states = 1
    #: input index of W (R and B follow)
    weights = 0

    def check(self, layer):
        """Refuse the attributes MLI cannot honour (the activations are checked before)."""
        if self.clip(layer) != 0:
            raise FixedPointError(f"{layer}: clip={layer.attrs['clip']} is not supported by the MLI "
                                  f"kernels (gates saturate at +-8 instead)")

    def constants(self, layer, site):
        """Refuse what MLI cannot do; return the constant W, R, B (float64; for a sequence
        op with a leading direction axis)."""
        a = layer.attrs
        acts = [s.strip().lower() for s in a.get("activations", "").split(",") if s.strip()]
        want = list(self.activations)
        if acts and acts[:len(want)] != want:
            raise FixedPointError(f"{layer}: activations {acts} are not supported by the MLI "
                                  f"kernels (only the defaults {want})")
        for k in ("activations_alpha", "activations_beta"):
            if a.get(k, "").strip():
                raise FixedPointError(f"{layer}: {k}={a[k]!r} is not supported by the MLI kernels")
        self.check(layer)
        first = self.weights
        return [np.asarray(resolve(site, layer, k, what), np.float64)
                for k, what in zip(range(first, first + 3), ("W", "R", "B"))]

    def clip(self, layer):
        """OpenVINO's ``clip`` (0: none)."""
        return float(layer.attrs.get("clip", "0") or 0)

    def bias_blocks(self, layer):
        """Blocks of M values in B."""
        return self.gates

    def observer(self, layer):
        """``observe(stats, x, h, c, W, R, B)``: record what one step meets (float64
        arrays; ``c`` None but for an LSTM), before it runs."""
        raise NotImplementedError

    def float_step(self, layer):
        """``step(x, h, c, W, R, B) -> h' or (h', c')``: the op's float step (float64)."""
        raise NotImplementedError

    def _outputs(self, st, out):
        """Record a step's new state(s): h' (and c')."""
        if self.states == 2:
            st.add("h_out", out[0])
            st.add("c_out", out[1])
        else:
            st.add("h_out", out)


class _Lstm(_Recurrent):
    cell, gates, states = "lstm", 4, 2
    activations = ("sigmoid", "tanh", "tanh")

    def observer(self, layer):
        def observe(st, x, h, c, W, R, B):
            _observe_dense(st, x, h, W, R, B)
            st.add("c_in", c)
        return observe

    def float_step(self, layer):
        hs, acts = int(layer.attrs["hidden_size"]), [_sigmoid, np.tanh, np.tanh]
        return lambda x, h, c, W, R, B: lstm_step(acts, 0.0, hs, x, h, c, W, R, B)


class _Rnn(_Recurrent):
    cell, gates = "rnn", 1
    activations = ("tanh",)

    def observer(self, layer):
        return lambda st, x, h, c, W, R, B: _observe_dense(st, x, h, W, R, B)

    def float_step(self, layer):
        hs, acts = int(layer.attrs["hidden_size"]), [np.tanh]
        return lambda x, h, c, W, R, B: rnn_step(acts, 0.0, hs, x, h, W, R, B)


class _Gru(_Recurrent):
    """GRU: ``clip`` is supported (by the MLI 1.1 composition), ``linear_before_reset``
    must be a boolean."""

    cell, gates = "gru", 3
    activations = ("sigmoid", "tanh")

    def check(self, layer):
        try:
            self.linear_before_reset(layer)
        except ValueError:
            raise FixedPointError(f"{layer}: linear_before_reset="
                                  f"{layer.attrs.get('linear_before_reset')!r} is not a boolean") from None

    def linear_before_reset(self, layer):
        return parse_bool(layer.attrs.get("linear_before_reset", "false") or "false")

    def bias_blocks(self, layer):
        return 4 if self.linear_before_reset(layer) else 3

    def observer(self, layer):
        lbr, clip = self.linear_before_reset(layer), self.clip(layer)
        return lambda st, x, h, c, W, R, B: _observe_gru(st, lbr, clip, x, h, W, R, B)

    def float_step(self, layer):
        hs, acts = int(layer.attrs["hidden_size"]), [_sigmoid, np.tanh]
        lbr, clip = self.linear_before_reset(layer), self.clip(layer)
        return lambda x, h, c, W, R, B: gru_step(acts, clip, hs, lbr, x, h, W, R, B)


# ---------------------------------------------------------------------------- cells, sequences
class CellConverter(_Recurrent):
    """A cell op (inputs X, H, [C,] W, R, B): one unit, one step per call."""

    def units(self, layer):
        return 1

    def _split(self, xs):
        if self.states == 2:
            return xs
        x, h, W, R, B = xs
        return x, h, None, W, R, B

    def cell_inputs(self, layer, state_size):
        """``inputs(xs) -> (x, h, c or None)``: the op's inputs, checked as the float op
        checks them."""
        gates, nb = self.gates, self.bias_blocks(layer)
        if self.states == 2:
            def inputs(xs):
                x, h, c, W, R, B = xs
                ir._check_cell(state_size, gates, x, h, W, R, B, nb)
                if c.shape != h.shape or c.dtype != h.dtype:
                    raise ir.IRError(f"cell state {c.dtype}{list(c.shape)} does not match H")
                return x, h, c
            return inputs

        def inputs(xs):
            x, h, W, R, B = xs
            ir._check_cell(state_size, gates, x, h, W, R, B, nb)
            return x, h, None
        return inputs

    def record(self, layer, float_fn, constants, stats):
        st, observe = stats[0], self.observer(layer)

        def fn(*xs):
            out = float_fn(*xs)
            self._outputs(st, out)
            observe(st, *(None if v is None else np.asarray(v, np.float64) for v in self._split(xs)))
            return out
        return fn

    def plan(self, layer, constants, stats, backend):
        return [backend.plan(self, layer, constants, stats[0])]

    def step(self, layer, plans, backend):
        return backend.cell(self, layer, plans[0])


class SequenceConverter(_Recurrent):
    """A sequence op (inputs X, H, [C,] sequence_lengths, W, R, B): one unit per direction,
    each run over every batch row's valid steps."""

    def directions(self, layer):
        """Per direction: whether it reads the sequence backwards."""
        d = layer.attrs.get("direction", "forward")
        return [False, True] if d == "bidirectional" else [d == "reverse"]

    def units(self, layer):
        return len(self.directions(layer))

    def sequence_inputs(self, xs):
        """(X, initial states, lengths as int64 [B]) of the op's inputs, checked."""
        x, states, lengths = xs[0], xs[1:1 + self.states], xs[1 + self.states]
        if x.ndim != 3:
            raise ir.IRError(f"X must be [batch, seq, input], got {list(x.shape)}")
        B_, T = x.shape[:2]
        lens = np.asarray(lengths).astype(np.int64).reshape(-1)
        if lens.shape != (B_,) or (lens.size and (lens.min() < 0 or lens.max() > T)):
            raise ir.IRError(f"sequence_lengths {lens.tolist()} invalid for X {list(x.shape)}")
        return x, states, lens

    def record(self, layer, float_fn, constants, stats):
        """The float op, also recording per direction the statistics its cells see (the
        op's own step formulas, run again on the same inputs)."""
        observe, float_step = self.observer(layer), self.float_step(layer)
        dirs = self.directions(layer)

        def fn(*xs):
            out = float_fn(*xs)
            x, states, lengths = xs[0], xs[1:1 + self.states], xs[1 + self.states]
            for d, reverse in enumerate(dirs):
                W, R, B = (np.asarray(v[d], np.float64) for v in constants)
                st = stats[d]

                def step(xt, h, c=None):
                    observe(st, xt, h, c, W, R, B)
                    new = float_step(xt, h, c, W, R, B)
                    self._outputs(st, new)
                    return new
                run_sequence(step, np.asarray(x, np.float64),
                             [np.asarray(v[:, d], np.float64) for v in states], lengths, reverse)
            return out
        return fn

    def plan(self, layer, constants, stats, backend):
        return [backend.plan(self, layer, [v[d] for v in constants], st) for d, st in enumerate(stats)]

    def step(self, layer, plans, backend):
        return backend.sequence(self, layer, plans)


# ---------------------------------------------------------------------------- the op types
@register
class LSTMCell(_Lstm, CellConverter):
    types = ("LSTMCell",)
    weights = 3                 # X, H, C, W, R, B

    def check(self, layer):
        super().check(layer)
        if len(layer.inputs) > 6:
            raise FixedPointError(f"{layer}: LSTMCell peepholes are not supported by the MLI kernel")


@register
class RNNCell(_Rnn, CellConverter):
    types = ("RNNCell",)
    weights = 2                 # X, H, W, R, B


@register
class GRUCell(_Gru, CellConverter):
    types = ("GRUCell",)
    weights = 2                 # X, H, W, R, B


@register
class LSTMSequence(_Lstm, SequenceConverter):
    types = ("LSTMSequence",)
    weights = 4                 # X, H, C, sequence_lengths, W, R, B


@register
class RNNSequence(_Rnn, SequenceConverter):
    types = ("RNNSequence",)
    weights = 3                 # X, H, sequence_lengths, W, R, B


@register
class GRUSequence(_Gru, SequenceConverter):
    types = ("GRUSequence",)
    weights = 3                 # X, H, sequence_lengths, W, R, B
