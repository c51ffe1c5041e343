"""A GRU cell composed from MLI 1.1 kernels (MLI 1.1 has no GRU kernel).

:class:`GruCell` runs OpenVINO's ``GRUCell`` / ``GRUSequence`` step (gates z, r, h
in OpenVINO's order, ``linear_before_reset`` false or true, optional ``clip``,
default activations sigmoid and tanh) the way firmware on MLI 1.1 would: the
gate pre-activations come from ``mli_krn_basic_rnn_cell_*`` in one-to-one mode
with stacked weights and ``RNN_ACT_NONE`` (as the HAR example's layer 3 builds
an LSTM), the activations from ``mli_krn_sigm_*`` / ``mli_krn_tanh_*``, and the
rest from the element-wise kernels.  It works on integer arrays (int16 for fx16
and fx8w16d, int8 for fx8) and returns integer arrays, like
:class:`mli.graph.KernelBody`.

Per step and batch row (x: frac ``x``; h, z, r, n: frac 15 for 16-bit data, 7
for 8-bit data; gate pre-activations: frac 12 / 4, i.e. +-8)::

    linear_before_reset = false                linear_before_reset = true
    1 basic_rnn_cell(x, h, Wzr, bzr)           1 basic_rnn_cell(x, h, Wzr, bzr)
        one-to-one, act NONE -> [2, M]             one-to-one, act NONE -> [2, M]
     (clip: eltwise_min, eltwise_max)           (clip: eltwise_min, eltwise_max)
    2 sigm -> z, r                             2 sigm -> z, r
    3 eltwise_mul(r, h) -> r*h                 3 fully_connected(x, W_n, Wb_n) -> xn
    4 basic_rnn_cell(x, r*h, Wn, bn)           4 fully_connected(h, R_n, Rb_n) -> hn
        one-to-one, act TANH -> n              5 eltwise_mul(r, hn), 6 eltwise_add(xn, .)
     (clip: act NONE, eltwise_min/max, tanh)    (clip: eltwise_min, eltwise_max)
                                               7 tanh -> n
    5 eltwise_mul(z, h), 6 eltwise_mul(z, n)   8 eltwise_mul(z, h), 9 eltwise_mul(z, n)
    7 eltwise_sub(n, z*n), 8 eltwise_add(., z*h) -> h'   10 eltwise_sub, 11 eltwise_add -> h'

``Wzr`` [2, M, N+M] stacks ``[W_z | R_z]`` and ``[W_r | R_r]``, ``bzr`` [2, M] the
biases; ``Wn`` [M, N+M] is ``[W_h | R_h]`` with bias ``B_h`` (``lbr`` false);
``W_n`` [M, N] with ``B[2M:3M]`` and ``R_n`` [M, M] with ``B[3M:4M]`` (``lbr``
true).  ``h' = (1 - z) n + z h`` is computed as ``(n - z n) + z h`` so that no
intermediate leaves [-1, 1) (``n + z (h - n)`` would need ``h - n`` in [-2, 2]).
``clip`` c clamps every pre-activation to [-c, c] with ``eltwise_min`` /
``eltwise_max`` against a one-element tensor (c at the pre-activation's frac).

Several rows (:meth:`GruCell.step` on [B, N] / [B, M], :meth:`GruCell.run_rows`)
step together, with the same values as row by row: the basic RNN cells as one
batched-rows call (:mod:`mli.rows`), the fully connected parts as batched rows
of a basic RNN with zero recurrent weights (the same dense core, shifts and
bias), the activations and element-wise kernels on [B, ...] tensors.

Each weight tensor has its own frac bits, the bias its own (at most the input's
frac + the weights', as MLI's bias shift must not be negative).  In ``lbr`` true
``xn``, ``hn``, ``r*hn`` and their sum share frac ``n`` (at most 12 / 4, lower
when calibration saw values beyond +-8).

Error added by the composition (on top of quantizing x, h and the weights, as
for the library's own cells): every intermediate is rounded to 16 (8) bits --
z and r once by the sigmoid LUT (MLI's table, linear interpolation, about 2^-13
at 16 bits), r*h, z*h, z*n and n - z*n once each (1/2 LSB of Q15 / Q7), n once by
the tanh LUT; the pre-activations are held at frac 12 (4) and saturate at +-8
(sigmoid(8) = 0.99966, a 3e-4 error only where calibration already shows
saturated gates).  On the public OpenVINO cases the fx16 composition reaches
55-65 dB against the float model, a few dB below an ideal-activation simulation
(the LUTs dominate), and well above the 45 dB requirement.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from .. import rows as rows_api
from ..enums import KINDS, ElementType, RnnActivation, RnnMode
from ..kernels import RnnCellConfig
from ..tensor import Tensor, frac_bits_for

__all__ = ["GruCell", "split_gru_weights"]

_EL = {ElementType.FX_8: "fx8", ElementType.FX_16: "fx16"}


def split_gru_weights(W, R, B, linear_before_reset):
    """OpenVINO W [3M, N], R [3M, M], B [3M] (or [4M] with ``linear_before_reset``)
    -> the float MLI tensors of :class:`GruCell`: ``{"zr": (w [2, M, N+M], b [2, M]),
    "n": (w [M, N+M], b [M])}`` or, with ``linear_before_reset``, ``"xn": (W_n [M, N],
    b [M])`` and ``"hn": (R_n [M, M], b [M])`` instead of ``"n"``."""
    W, R, B = (np.asarray(v, np.float64) for v in (W, R, B))
    M = R.shape[1]
    if W.ndim != 2 or W.shape[0] != 3 * M or R.shape != (3 * M, M) \
            or B.shape != ((4 if linear_before_reset else 3) * M,):
        raise ValueError(f"GRU weights must be W [3M, N], R [3M, M], B [{4 if linear_before_reset else 3}M], "
                         f"got W {list(W.shape)}, R {list(R.shape)}, B {list(B.shape)}")
    N = W.shape[1]
    Wg, Rg = W.reshape(3, M, N), R.reshape(3, M, M)
    out = {"zr": (np.concatenate([Wg[:2], Rg[:2]], axis=2), B[:2 * M].reshape(2, M))}
    if linear_before_reset:
        out["xn"] = (Wg[2], B[2 * M:3 * M])
        out["hn"] = (Rg[2], B[3 * M:])
    else:
        out["n"] = (np.concatenate([Wg[2], Rg[2]], axis=1), B[2 * M:])
    return out


_TENSOR_BYTES = 0xFFFFFFFF   # an MLI tensor's capacity (uint32): GruCell._step_rows splits beyond it


class GruCell:
    """One GRU direction on MLI 1.1 kernels (see the module doc for the calls).

    Parameters
    ----------
    W, R, B : array_like
        OpenVINO layout: W [3M, N], R [3M, M], B [3M] ([4M] with
        ``linear_before_reset``); gates z, r, h.
    linear_before_reset : bool
    kind : {"fx16", "fx8w16d", "fx8"}
    in_frac : int
        Frac bits of x.
    clip : float
        OpenVINO's ``clip`` (0: none).
    w_fracs, b_fracs : dict, optional
        Frac bits per weight tensor ("zr", "n" or "xn"/"hn"); default: the largest
        that holds the values (:func:`mli.frac_bits_for`), the bias capped at the
        input's frac + the weights'.
    n_frac : int, optional
        ``linear_before_reset`` only: frac of xn, hn, r*hn and their sum (default 12
        for 16-bit data, 4 for 8-bit).

    Attributes
    ----------
    kind, linear_before_reset, clip, input_size (N), state_size (M), in_frac,
    state_frac, gate_frac, n_frac, weights / biases (dicts of mli.Tensor), dtype,
    calls (the kernel names of one step, in order)
    """

    def __init__(self, W, R, B, *, linear_before_reset=False, kind="fx16", in_frac,
                 clip=0.0, w_fracs=None, b_fracs=None, n_frac=None):
        if kind not in KINDS:
            raise ValueError(f"GruCell: kind must be one of {sorted(KINDS)}, got {kind!r}")
        data_el, w_el = (_EL[e] for e in KINDS[kind])
        self.kind, self.linear_before_reset = kind, bool(linear_before_reset)
        self.data_el, self.w_el = data_el, w_el
        self.dtype = np.dtype(np.int8 if data_el == "fx8" else np.int16)
        bits = 8 if data_el == "fx8" else 16
        self.state_frac = bits - 1                 # sigm/tanh outputs: Q15 / Q7
        self.gate_frac = bits - 4                  # MLI's own pre-activation format (+-8)
        self.n_frac = self.gate_frac if n_frac is None else int(n_frac)
        self.in_frac = int(in_frac)
        self.clip = float(clip or 0.0)
        parts = split_gru_weights(W, R, B, self.linear_before_reset)
        self.state_size = parts["zr"][1].shape[1]
        self.input_size = parts["zr"][0].shape[2] - self.state_size
        w_fracs, b_fracs = dict(w_fracs or {}), dict(b_fracs or {})
        self.weights, self.biases = {}, {}
        for name, (w, b) in parts.items():
            f_in = self.state_frac if name == "hn" else self.in_frac
            f_w = w_fracs.get(name)
            f_w = frac_bits_for(w, w_el) if f_w is None else int(f_w)
            f_b = b_fracs.get(name)
            f_b = min(frac_bits_for(b, w_el), f_in + f_w) if f_b is None else int(f_b)
            if f_b > f_in + f_w:
                raise ValueError(f"GruCell: bias {name} frac {f_b} exceeds the input frac + "
                                 f"weights frac = {f_in + f_w} (MLI's bias shift must not be "
                                 f"negative)")
            self.weights[name] = Tensor.from_float(w, w_el, f_w, saturate=True)
            self.biases[name] = Tensor.from_float(b, w_el, f_b, saturate=True)
        # batched rows of the fully connected parts: a one-to-one basic RNN (act NONE)
        # whose recurrent weights are zero and whose (zero) state has the input's frac
        # bits is the FC, bit for bit (the same dense core, shifts and bias; exact zero
        # products), as mli.tools.har's FC1
        self._fc_rows = {}
        for name, f_in in (("xn", self.in_frac), ("hn", self.state_frac)) if self.linear_before_reset else ():
            w = self.weights[name]
            w_ext = np.zeros((w.shape[0], w.shape[1] + w.shape[0]), w.dtype)
            w_ext[:, :w.shape[1]] = w.numpy()
            self._fc_rows[name] = (Tensor(w_ext, w.frac_bits), Tensor(np.zeros(w.shape[0], self.dtype), f_in))
        self._none = RnnCellConfig(mode=RnnMode.ONE_TO_ONE, act=RnnActivation.NONE)
        self._tanh_cfg = RnnCellConfig(mode=RnnMode.ONE_TO_ONE, act=RnnActivation.TANH)
        if self.clip > 0:
            lim = {f: Tensor.from_float(np.float64(self.clip), data_el, f, saturate=True)
                   for f in {self.gate_frac, self.n_frac}}
            self._clip_hi = lim
            self._clip_lo = {f: Tensor.from_float(np.float64(-self.clip), data_el, f, saturate=True)
                             for f in lim}
        rnn, fc = f"basic_rnn_cell_{kind}", f"fully_connected_{kind}"
        act = lambda op: f"{op}_{data_el}"                            # noqa: E731
        ew = lambda op: f"eltwise_{op}_{data_el}"                     # noqa: E731
        clip2 = [ew("min"), ew("max")] if self.clip > 0 else []
        if self.linear_before_reset:
            calls = [rnn] + clip2 + [act("sigm"), fc, fc, ew("mul"), ew("add")] + clip2 \
                + [act("tanh")]
        else:
            calls = [rnn] + clip2 + [act("sigm"), ew("mul"), rnn] \
                + (clip2 + [act("tanh")] if self.clip > 0 else [])
        self.calls = tuple(calls + [ew("mul"), ew("mul"), ew("sub"), ew("add")])

    # ------------------------------------------------------------------ formats
    @property
    def fracs(self) -> dict:
        """Frac bits of x, h, the gate pre-activations (g), n-parts (lbr), and of every
        weight (w_*) and bias (b_*) tensor."""
        d = {"x": self.in_frac, "h": self.state_frac, "g": self.gate_frac}
        if self.linear_before_reset:
            d["n"] = self.n_frac
        for k in self.weights:
            d[f"w_{k}"] = self.weights[k].frac_bits
            d[f"b_{k}"] = self.biases[k].frac_bits
        return d

    def _frac_of(self, what):
        if what == "x":
            return self.in_frac
        if what in ("h", "y"):
            return self.state_frac
        raise ValueError(f"GruCell: what must be 'x', 'h' or 'y', got {what!r}")

    def quantize(self, value, what):
        """Float values -> integer array at the frac bits of ``what`` ("x" or "h")."""
        return Tensor.from_float(value, self.data_el, self._frac_of(what), saturate=True).numpy().copy()

    def dequantize(self, value, what):
        """Integer array at the frac bits of ``what`` ("x", "h", "y") -> float32."""
        return np.float32(2.0 ** -self._frac_of(what)) * np.asarray(value).astype(np.float32)

    # ------------------------------------------------------------------ running
    def _k(self, name):
        return getattr(kernels, name)           # looked up per call (tests may wrap them)

    def _clamp(self, a):
        ew = f"eltwise_{{}}_{self.data_el}"
        f = a.frac_bits
        a = self._k(ew.format("min"))(a, self._clip_hi[f])
        return self._k(ew.format("max"))(a, self._clip_lo[f])

    def _step(self, xt, h):
        """One step of one row: Tensors x [N] (frac x), h [M] (frac h) -> h' Tensor."""
        q, d = self.state_frac, self.data_el
        rnn = self._k(f"basic_rnn_cell_{self.kind}")
        g = rnn(xt, h, self.weights["zr"], self.biases["zr"], self._none,
                out_frac_bits=self.gate_frac)
        if self.clip > 0:
            g = self._clamp(g)
        s = self._k(f"sigm_{d}")(g).numpy()
        z, r = Tensor(s[0], q), Tensor(s[1], q)

        def fc(v, name):
            return self._k(f"fully_connected_{self.kind}")(v, self.weights[name], self.biases[name],
                                                           out_frac_bits=self.n_frac)
        return self._new_state(xt, h, z, r, rnn, fc)

    def _new_state(self, xt, h, z, r, rnn, fc):
        """The rest of a step once z and r are known: the candidate n, then
        h' = (1 - z) * n + z * h; ``rnn`` is the basic RNN cell (a row's or
        batched rows'), ``fc(v, name)`` the fully connected part of
        ``linear_before_reset`` on weights ``name`` ("xn" or "hn")."""
        q, d = self.state_frac, self.data_el
        mul, add = self._k(f"eltwise_mul_{d}"), self._k(f"eltwise_add_{d}")
        sub = self._k(f"eltwise_sub_{d}")
        if self.linear_before_reset:
            xn, hn = fc(xt, "xn"), fc(h, "hn")
            a = add(xn, mul(r, hn, out_frac_bits=self.n_frac))
            if self.clip > 0:
                a = self._clamp(a)
            n = self._k(f"tanh_{d}")(a)
        else:
            rh = mul(r, h, out_frac_bits=q)
            if self.clip > 0:
                a = self._clamp(rnn(xt, rh, self.weights["n"], self.biases["n"], self._none,
                                    out_frac_bits=self.gate_frac))
                n = self._k(f"tanh_{d}")(a)
            else:
                n = rnn(xt, rh, self.weights["n"], self.biases["n"], self._tanh_cfg)
        zh = mul(z, h, out_frac_bits=q)
        zn = mul(z, n, out_frac_bits=q)
        return add(sub(n, zn), zh)

    def _step_rows(self, x, h):
        """One step of B >= 2 rows: integer arrays x [B, N], h [B, M] -> h' [B, M],
        row b that of :meth:`_step` on row b, bit for bit: the basic RNN cells as
        batched rows (:mod:`mli.rows`, shared weights), the activations and
        element-wise kernels on [B, ...] tensors (element-wise: each row's values
        are its own), the fully connected parts (``linear_before_reset``) as batched
        rows of a basic RNN with zero recurrent weights (see ``_fc_rows``)."""
        q, d = self.state_frac, self.data_el
        B, M = h.shape
        most = max(1, _TENSOR_BYTES // (max(x.shape[1], 2 * M) * h.itemsize))   # [B, N] and [B, 2M] tensors
        if B > most:        # beyond one MLI tensor's capacity (a uint32): several calls
            return np.concatenate([self._step_rows(x[a:a + most], h[a:a + most]) for a in range(0, B, most)])
        rnn = getattr(rows_api, f"basic_rnn_cell_rows_{self.kind}")   # looked up per call
        xt, ht = Tensor(x, self.in_frac), Tensor(h, q)
        g = rnn(xt, ht, self.weights["zr"], self.biases["zr"], self._none, out_frac_bits=self.gate_frac)
        g = Tensor(g.numpy().reshape(B, 2, M), g.frac_bits)       # the stacked z, r pre-activations
        if self.clip > 0:
            g = self._clamp(g)
        s = self._k(f"sigm_{d}")(g).numpy()
        z, r = Tensor(np.ascontiguousarray(s[:, 0]), q), Tensor(np.ascontiguousarray(s[:, 1]), q)

        def fc_rows(v, name):
            w_ext, zero = self._fc_rows[name]
            return rnn(v, zero, w_ext, self.biases[name], self._none, out_frac_bits=self.n_frac)
        return self._new_state(xt, ht, z, r, rnn, fc_rows).numpy()

    def _rows(self, x, h):
        x, h = np.asarray(x), np.asarray(h)
        for name, v in (("x", x), ("h", h)):
            if v.dtype != self.dtype:
                raise TypeError(f"GruCell ({self.kind}): {name} must be {self.dtype}, got "
                                f"{v.dtype}; quantize floats with cell.quantize(value, {name!r})")
        if x.shape[-1:] != (self.input_size,) or h.shape[-1:] != (self.state_size,) \
                or x.size // self.input_size != h.size // self.state_size:
            raise ValueError(f"GruCell: x {list(x.shape)} and h {list(h.shape)} must be "
                             f"[..., {self.input_size}] and [..., {self.state_size}] with as "
                             f"many rows")
        return (np.ascontiguousarray(x.reshape(-1, self.input_size)),
                np.ascontiguousarray(h.reshape(-1, self.state_size)))

    def step(self, x, h):
        """One step: integer x [..., N], h [..., M] (same rows) -> h' shaped like ``h``."""
        xr, hr = self._rows(x, h)
        if hr.shape[0] >= 2:            # the rows together (batched rows), same values
            return self._step_rows(xr, hr).reshape(np.shape(h))
        out = np.empty_like(hr)
        for b in range(hr.shape[0]):
            out[b] = self._step(Tensor(xr[b], self.in_frac),
                                Tensor(hr[b], self.state_frac)).numpy()
        return out.reshape(np.shape(h))

    def run_rows(self, x, h0):
        """B rows' whole sequences of one length: integer x [B, T, N], h0 [B, M] ->
        (y [B, T, M], h_last [B, M]); row b is :meth:`run_sequence` of row b, bit for
        bit, each step of all rows together (:meth:`step`)."""
        x, h0 = np.asarray(x), np.asarray(h0)
        if x.ndim != 3 or h0.ndim != 2 or h0.shape[0] != x.shape[0]:
            raise ValueError(f"GruCell.run_rows: x must be [B, T, N] and h0 [B, M], got "
                             f"{list(x.shape)} and {list(h0.shape)}")
        B, T = x.shape[:2]
        if B < 2:
            res = [self.run_sequence(x[b], h0[b]) for b in range(B)]
            return (np.stack([r[0] for r in res]) if B else np.empty((0, T, self.state_size), self.dtype),
                    np.stack([r[1] for r in res]) if B else np.empty((0, self.state_size), self.dtype))
        self._rows(x[:, 0] if T else np.zeros((B, x.shape[-1]), x.dtype), h0)     # a step's checks
        y = np.empty((B, T, self.state_size), self.dtype)
        h = np.ascontiguousarray(h0)
        for t in range(T):
            h = self._step_rows(np.ascontiguousarray(x[:, t]), h)
            y[:, t] = h
        return y, (y[:, -1].copy() if T else h0.copy())

    def run_sequence(self, x, h0):
        """One row's whole sequence: integer x [T, N], h0 [M] -> (y [T, M], h_last [M]),
        stepping in Python (the reset gate sits inside the candidate, so no single MLI
        call computes a GRU sequence)."""
        x = np.asarray(x)
        if x.ndim != 2:
            raise ValueError(f"GruCell.run_sequence: x must be [T, N], got {list(x.shape)}")
        T = x.shape[0]
        xr, hr = self._rows(x if T else np.zeros((1,) + x.shape[1:], x.dtype),   # T = 0: h0 checked
                            np.broadcast_to(np.asarray(h0), (T or 1, self.state_size)))
        h = Tensor(np.array(hr[0]), self.state_frac)
        y = np.empty((x.shape[0], self.state_size), self.dtype)
        for t in range(x.shape[0]):
            h = self._step(Tensor(xr[t], self.in_frac), h)
            y[t] = h.numpy()
        return y, (y[-1].copy() if len(y) else np.array(hr[0]))

    def __repr__(self):
        f = ", ".join(f"{k}={v}" for k, v in self.fracs.items())
        return (f"GruCell({self.kind}, N={self.input_size}, M={self.state_size}, "
                f"linear_before_reset={self.linear_before_reset}, clip={self.clip:g}, frac {f})")
