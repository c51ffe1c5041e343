"""A TensorIterator/Loop body that runs one MLI recurrent cell (basic RNN or LSTM).

:class:`KernelBody` wraps ``mli_krn_basic_rnn_cell_*`` or ``mli_krn_lstm_cell_*``
in one-to-one mode with its quantized weights, bias and configuration.  It
works on **integer arrays** (numpy int16 for fx16 / fx8w16d, int8 for fx8; an
``mli.Tensor`` is accepted when its frac bits are the expected ones) and returns
integer arrays, never floats, so a driver over it computes exactly what
firmware computes:

========  ===========================  ==========================================
position  body input                   body output
========  ===========================  ==========================================
0         ``x``  [..., N], frac in     ``y``: h_new shaped ``x.shape[:-1] + (M,)``
1         ``h``  [..., M], frac state  ``h_out``: h_new shaped like ``h``
2 (LSTM)  ``c``  [..., M], frac cell   ``c_out``: new cell shaped like ``c``
========  ===========================  ==========================================

The leading dimensions are independent *rows* (a batch): row ``r`` of ``x``
(``x.reshape(-1, N)[r]``) goes with row ``r`` of ``h`` and ``c``.
:meth:`KernelBody.run` and :meth:`KernelBody.run_sequence` run all rows in ONE
batched-rows call (:mod:`mli.rows`, shared weights), bit-identical to one MLI
call per row.  ``y`` and ``h_out`` hold the same values; ``y`` keeps the layout
of ``x`` (so it concatenates on the axis ``x`` was sliced on) and ``h_out`` the
layout of ``h`` (so it can feed the back edge).

The state frac bits must equal the output frac bits (15 for 16-bit data and
7 for 8-bit data with a tanh/sigmoid output activation): MLI applies the
``prev_out`` shifts of the first step to every step of a sequence, so only
then does one whole-sequence call compute what stepping the cell computes.

Fast path
---------
When a :class:`~mli.graph.TensorIterator` runs a ``KernelBody`` whose port map
is a recurrence -- ``x`` sliced on a time axis (part_size 1, stride +1 or -1,
not the last axis), ``h`` (and ``c``) merged with the back edges
``h_out -> h`` (and ``c_out -> c``), outputs concatenating ``y`` or ``h_out``
or taking any output's last iteration -- the driver calls
:meth:`KernelBody.run_tensor_iterator`, which runs each row's whole sequence as
ONE batch-to-batch MLI call (for stride -1 the sequence is fed in iteration
order, i.e. reversed, and the driver assembles the outputs in its usual
order).  The result is bit-identical to stepping the body; any other port map
(or ``fuse=False``) steps it.  The port map is checked once per TensorIterator;
from its second call on, C-contiguous arrays of the body's dtype (``y``
concatenated, if at all, on the axis ``x`` is sliced on) run in the bridge
(``mli._core.FusedSeq``) straight from the caller's arrays into the outputs,
with no tensor wrappers.

Examples
--------
>>> import numpy as np, mli
>>> from mli.graph import (KernelBody, TensorIterator, SlicedInput, MergedInput,
...                        ConcatOutput, LastIterationOutput, BackEdge)
>>> rng = np.random.default_rng(0)
>>> N, M, T = 3, 4, 6
>>> body = KernelBody.from_float("lstm", rng.normal(0, .3, (4, M, N + M)),
...                              rng.normal(0, .1, (4, M)), kind="fx16",
...                              in_frac=13, cell_frac=12)
>>> ti = TensorIterator(body,
...                     inputs=[SlicedInput(0, 0, axis=0), MergedInput(1, 1),
...                             MergedInput(2, 2)],
...                     outputs=[ConcatOutput(0, 0, axis=0), LastIterationOutput(2, 1)],
...                     back_edges=[BackEdge(1, 1), BackEdge(2, 2)])
>>> x = body.quantize(rng.uniform(-1, 1, (T, N)), "x")           # int16, frac 13
>>> y, c = ti(x, body.quantize(np.zeros(M), "h"), body.quantize(np.zeros(M), "c"))
>>> y.shape, y.dtype, c.shape
((6, 4), dtype('int16'), (4,))
"""

from __future__ import annotations

import numpy as np

from .. import _core, kernels
from .. import rows as rows_api
from ..enums import KINDS, VARIANT, ElementType, RnnActivation, RnnMode
from ..kernels import RnnCellConfig
from ..tensor import Tensor, frac_bits_for
from .body import Body
from .ports import ConcatOutput, GraphError, LastIterationOutput, MergedInput, SlicedInput
from .tensor_iterator import _Stacked

__all__ = ["KernelBody"]

_CELLS = {"lstm": "lstm", "rnn": "rnn", "basic_rnn": "rnn"}
_EL_NAME = {ElementType.FX_8: "fx8", ElementType.FX_16: "fx16"}


def _np_dtype(el):
    return np.dtype(np.int8) if el == ElementType.FX_8 else np.dtype(np.int16)


class KernelBody(Body):
    """One MLI basic RNN or LSTM cell (one-to-one mode) as a TI/Loop body.

    Parameters
    ----------
    cell : {"lstm", "rnn"}
        ``mli_krn_lstm_cell_*`` or ``mli_krn_basic_rnn_cell_*``.
    weights : mli.Tensor
        LSTM: [4, M, N+M] in MLI's gate order i, g, f, o; RNN: [M, N+M].
        Its ``frac_bits`` are the weights' frac bits.
    bias : mli.Tensor
        LSTM: [4, M]; RNN: [M]; the weights' element type, frac bits at most
        ``in_frac + weights.frac_bits``.
    in_frac : int
        Frac bits of ``x``.
    state_frac : int, optional
        Frac bits of ``h`` (= of the outputs).  With a tanh/sigmoid output
        activation it must be 15 (16-bit data) or 7 (8-bit data), the default;
        with ``act=RNN_ACT_NONE`` it is required.
    cell_frac : int
        LSTM only: frac bits of ``c``.
    kind : {"fx16", "fx8", "fx8w16d"}, optional
        Default: ``"fx16"`` for int16 weights, ``"fx8"`` for int8 weights;
        ``"fx8w16d"`` (16-bit data, 8-bit weights) must be given.
    act : mli.RnnActivation, optional
        Output activation (``cfg.act``), default tanh.
    fuse : bool, optional
        Allow the whole-sequence fast path in a TensorIterator (default True).

    Attributes
    ----------
    cell, kind, act, input_size (N), state_size (M), in_frac, state_frac,
    cell_frac, out_frac, weights, bias, dtype (numpy dtype of the data)

    Raises
    ------
    ValueError, TypeError
        Inconsistent shapes, element types or frac bits (named).
    """

    def __init__(self, cell, weights, bias, *, in_frac, state_frac=None, cell_frac=None,
                 kind=None, act=RnnActivation.TANH, fuse=True):
        key = str(cell).lower()
        if key not in _CELLS:
            raise ValueError(f"KernelBody: cell must be 'lstm' or 'rnn', got {cell!r}")
        self.cell = _CELLS[key]
        for name, t in (("weights", weights), ("bias", bias)):
            if not isinstance(t, Tensor):
                raise TypeError(f"KernelBody: {name} must be an mli.Tensor (quantized), got "
                                f"{type(t).__name__}; see KernelBody.from_float")
        w_el = ElementType(weights.el_type)
        if w_el not in _EL_NAME:
            raise TypeError(f"KernelBody: weights el_type must be FX_8 or FX_16, got {w_el.name}")
        if kind is None:
            kind = _EL_NAME[w_el]
        if kind not in KINDS:
            raise ValueError(f"KernelBody: kind must be one of {sorted(KINDS)}, got {kind!r}")
        data_el, want_w = KINDS[kind]
        if w_el != want_w:
            raise TypeError(f"KernelBody: kind {kind} needs {want_w.name} weights, got {w_el.name}")
        if ElementType(bias.el_type) != want_w:
            raise TypeError(f"KernelBody: bias must have the weights' el_type {want_w.name}, "
                            f"got {ElementType(bias.el_type).name}")
        self.kind, self.data_el = kind, data_el
        self.dtype = _np_dtype(data_el)
        self.act = RnnActivation(act)
        self.weights, self.bias = weights, bias
        ws, bs = weights.shape, bias.shape
        if self.cell == "lstm":
            ok = len(ws) == 3 and ws[0] == 4 and bs == ws[:2] and ws[2] > ws[1] > 0
        else:
            ok = len(ws) == 2 and bs == ws[:1] and ws[1] > ws[0] > 0
        if not ok:
            want = "[4, M, N+M] and bias [4, M]" if self.cell == "lstm" else "[M, N+M] and bias [M]"
            raise ValueError(f"KernelBody: {self.cell} weights must be {want} with N, M >= 1, "
                             f"got weights {list(ws)} and bias {list(bs)}")
        self.state_size = int(ws[-2])
        self.input_size = int(ws[-1]) - self.state_size
        self.in_frac = _frac(in_frac, "in_frac")
        q = 7 if data_el == ElementType.FX_8 else 15
        self.gate_frac = q
        if self.act == RnnActivation.NONE:
            if state_frac is None:
                raise ValueError("KernelBody: act=RNN_ACT_NONE needs state_frac")
            self.state_frac = _frac(state_frac, "state_frac")
        else:
            self.state_frac = q if state_frac is None else _frac(state_frac, "state_frac")
            if self.state_frac != q:
                raise ValueError(
                    f"KernelBody: with a {self.act.name.lower()} output the outputs have frac "
                    f"{q}, so state_frac must be {q} (MLI applies the prev_out shifts of the "
                    f"first step to every step), got {state_frac}")
        self.out_frac = self.state_frac
        if self.cell == "lstm":
            if cell_frac is None:
                raise ValueError("KernelBody: an LSTM body needs cell_frac")
            self.cell_frac = _frac(cell_frac, "cell_frac")
        elif cell_frac is not None:
            raise ValueError("KernelBody: cell_frac is only for an LSTM body")
        else:
            self.cell_frac = None
        bias_shift = self.in_frac + weights.frac_bits - bias.frac_bits
        if bias_shift < 0:
            raise ValueError(f"KernelBody: bias frac {bias.frac_bits} exceeds in_frac + weights "
                             f"frac = {self.in_frac + weights.frac_bits} (MLI needs a "
                             f"non-negative bias shift)")
        self.fuse = bool(fuse)
        self._fname = ("lstm_cell_" if self.cell == "lstm" else "basic_rnn_cell_") + kind
        self._rows_fname = ("lstm_cell_rows_" if self.cell == "lstm" else "basic_rnn_cell_rows_") + kind
        self._one = RnnCellConfig(mode=RnnMode.ONE_TO_ONE, act=self.act)
        self._seq = RnnCellConfig(mode=RnnMode.BATCH_TO_BATCH, act=self.act)
        lstm = self.cell == "lstm"
        self.num_inputs = self.num_outputs = 3 if lstm else 2
        self.input_names = ("x", "h", "c")[:self.num_inputs]
        self.output_names = ("y", "h_out", "c_out")[:self.num_outputs]
        self.output_specs = None          # shapes follow the inputs' shapes

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_float(cls, cell, weights, bias, *, kind="fx16", in_frac, cell_frac=None,
                   w_frac=None, b_frac=None, state_frac=None, act=RnnActivation.TANH, fuse=True):
        """Quantize float weights and bias (MLI layout) and build the body.

        ``w_frac`` defaults to the largest frac bits that hold the weights
        without saturation (:func:`mli.frac_bits_for`), ``b_frac`` to the
        same for the bias, capped at ``in_frac + w_frac``.  Other parameters
        as for :class:`KernelBody`.
        """
        if kind not in KINDS:
            raise ValueError(f"KernelBody: kind must be one of {sorted(KINDS)}, got {kind!r}")
        w_el = _EL_NAME[KINDS[kind][1]]
        weights = np.asarray(weights, np.float64)
        bias = np.asarray(bias, np.float64)
        if w_frac is None:
            w_frac = frac_bits_for(weights, w_el)
        if b_frac is None:
            b_frac = min(frac_bits_for(bias, w_el), int(in_frac) + w_frac)
        return cls(cell, Tensor.from_float(weights, w_el, w_frac, saturate=True),
                   Tensor.from_float(bias, w_el, b_frac, saturate=True), in_frac=in_frac,
                   state_frac=state_frac, cell_frac=cell_frac, kind=kind, act=act, fuse=fuse)

    @property
    def fracs(self) -> dict:
        """Frac bits of ``x``, ``h``, ``c`` (LSTM), ``y``, ``w`` and ``b``."""
        d = {"x": self.in_frac, "h": self.state_frac, "y": self.out_frac,
             "w": self.weights.frac_bits, "b": self.bias.frac_bits}
        if self.cell == "lstm":
            d["c"] = self.cell_frac
        return d

    def quantize(self, value, what):
        """Float values -> integer array at the frac bits of ``what`` ("x", "h", "c").

        As :meth:`mli.Tensor.from_float` (halves away from zero, saturation);
        any shape (rank 0..4)."""
        return Tensor.from_float(value, _EL_NAME[self.data_el], self._frac_of(what), saturate=True).numpy().copy()

    def dequantize(self, value, what):
        """Integer array at the frac bits of ``what`` ("x", "h", "c", "y") -> float32."""
        v = np.asarray(value)
        return np.float32(2.0 ** -self._frac_of(what)) * v.astype(np.float32)

    def _frac_of(self, what):
        allowed = ("x", "h", "c", "y") if self.cell == "lstm" else ("x", "h", "y")
        if what not in allowed:
            raise ValueError(f"KernelBody: what must be one of {allowed}, got {what!r}")
        return self.fracs[what]

    # ------------------------------------------------------------------ checks
    def _check(self, x, h, c=None):
        """Validate the body inputs; return (x rows [B, N], h rows [B, M], c rows)."""
        names = self.input_names
        vals = (x, h) if self.cell == "rnn" else (x, h, c)
        arrs = []
        for name, v in zip(names, vals):
            if isinstance(v, Tensor):
                want = self._frac_of(name)
                if v.frac_bits != want:
                    raise ValueError(f"KernelBody: body input {name!r} is a Tensor with frac "
                                     f"bits {v.frac_bits}, the body expects {want}")
                v = v.numpy()
            a = np.asarray(v)
            if a.dtype != self.dtype:
                hint = (f"; quantize floats with body.quantize(value, {name!r})"
                        if a.dtype.kind == "f" else "")
                raise TypeError(f"KernelBody ({self.kind}): body input {name!r} must be "
                                f"{self.dtype}, got {a.dtype}{hint}")
            if a.ndim == 0:
                raise ValueError(f"KernelBody: body input {name!r} must have rank >= 1")
            arrs.append(a)
        x, h = arrs[0], arrs[1]
        N, M = self.input_size, self.state_size
        if x.shape[-1] != N:
            raise ValueError(f"KernelBody: x has {x.shape[-1]} values on its last axis "
                             f"(shape {list(x.shape)}), the weights need N = {N}")
        if h.shape[-1] != M:
            raise ValueError(f"KernelBody: h has {h.shape[-1]} values on its last axis "
                             f"(shape {list(h.shape)}), the weights need M = {M}")
        if x.size // N != h.size // M:
            raise ValueError(f"KernelBody: x {list(x.shape)} has {x.size // N} rows but h "
                             f"{list(h.shape)} has {h.size // M}")
        rows = [np.ascontiguousarray(x.reshape(-1, N)), np.ascontiguousarray(h.reshape(-1, M))]
        if self.cell == "lstm":
            c = arrs[2]
            if c.shape != h.shape:
                raise ValueError(f"KernelBody: c {list(c.shape)} must have h's shape "
                                 f"{list(h.shape)}")
            rows.append(np.ascontiguousarray(c.reshape(-1, M)))
        return rows

    # ------------------------------------------------------------------ running
    def _rows(self, x_rows, h_rows, c_rows, cfg):
        """All rows in ONE ``mli.lstm_cell_rows_*`` / ``mli.basic_rnn_cell_rows_*`` call:
        ``x_rows`` [B, N] (one-to-one) or [B, T, N] (batch-to-batch), ``h_rows`` and
        ``c_rows`` [B, M], B >= 1; returns (out [B, M] or [B, T, M], cells [B, M] or None),
        row r bit-identical to the per-row kernel call on row r (a bad row raises the
        per-row call's MliError subclass, naming the row).  A single row is the per-row
        kernel call itself.  Rows beyond what one MLI tensor holds (its capacity is a
        uint32) go in several rows calls, each row's tensors no larger than before."""
        B = len(h_rows)
        row = (x_rows.shape[1] if x_rows.ndim == 3 else 1) * max(self.input_size, self.state_size) * \
            x_rows.itemsize
        most = max(1, _TENSOR_BYTES // row)
        if B > most:
            parts = [self._rows(x_rows[a:a + most], h_rows[a:a + most],
                                c_rows[a:a + most] if c_rows is not None else None, cfg) for a in range(0, B, most)]
            return (np.concatenate([p[0] for p in parts]),
                    np.concatenate([p[1] for p in parts]) if c_rows is not None else None)
        one = B == 1                # one row: the per-row kernel (less to set up, same values)
        # looked up per call (tests may wrap them)
        fn = getattr(kernels, self._fname) if one else getattr(rows_api, self._rows_fname)
        if one:
            x_rows, h_rows = x_rows[0], h_rows[0]
            c_rows = c_rows[0] if c_rows is not None else None
        xt, ht = Tensor(x_rows, self.in_frac), Tensor(h_rows, self.state_frac)
        if self.cell == "lstm":
            y, c = fn(xt, ht, self.weights, self.bias, cfg, Tensor(c_rows, self.cell_frac))
            y, c = y.numpy(), c.numpy()
            return (y[None], c[None]) if one else (y, c)
        kw = {"out_frac_bits": self.out_frac} if self.act == RnnActivation.NONE else {}
        y = fn(xt, ht, self.weights, self.bias, cfg, **kw).numpy()
        return (y[None] if one else y), None

    def run(self, inputs):
        """One step: ``[x, h(, c)] -> (y, h_out(, c_out))``, integer arrays (see module doc).

        Every row goes through one batched-rows MLI call (:mod:`mli.rows`), bit-identical
        to one one-to-one call per row."""
        inputs = self.positional(inputs)
        if len(inputs) != self.num_inputs:
            raise ValueError(f"KernelBody: expected {self.num_inputs} inputs "
                             f"{list(self.input_names)}, got {len(inputs)}")
        rows = self._check(*inputs)
        x, h = inputs[0], inputs[1]
        B, M = rows[1].shape
        lstm = self.cell == "lstm"
        if B:
            y, c = self._rows(rows[0], rows[1], rows[2] if lstm else None, self._one)
        else:
            y, c = np.empty((0, M), self.dtype), (np.empty((0, M), self.dtype) if lstm else None)
        xs, hs = np.shape(x), np.shape(h)
        out = (y.reshape(xs[:-1] + (M,)), y.copy().reshape(hs))
        if c is not None:
            out += (c.reshape(hs),)
        return out

    def run_sequence(self, x, h0, c0=None):
        """Whole sequences: every row's sequence in ONE batch-to-batch batched-rows
        MLI call (:mod:`mli.rows`), bit-identical to one batch-to-batch call per row.

        Parameters
        ----------
        x : integer array [T, N] or [T, B, N]
            Time-major input (frac ``in_frac``).
        h0, c0 : integer arrays [M] or [B, M]
            Initial state (and cell for an LSTM).

        Returns
        -------
        (y, h_last) or (y, h_last, c_last)
            ``y`` [T, M] or [T, B, M] is every step's output; ``h_last`` and
            ``c_last`` are shaped like ``h0``.  Bit-identical to ``T`` calls
            of :meth:`run`.
        """
        x = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
        if x.ndim not in (2, 3):
            raise ValueError(f"KernelBody.run_sequence: x must be [T, N] or [T, B, N], "
                             f"got {list(x.shape)}")
        T = x.shape[0]
        lstm = self.cell == "lstm"
        if lstm and c0 is None:
            raise ValueError("KernelBody.run_sequence: an LSTM needs c0")
        h0a = np.asarray(h0.numpy() if isinstance(h0, Tensor) else h0)
        rows = self._check(x[0] if T else np.zeros(x.shape[1:], x.dtype), h0a,
                           *((c0.numpy() if isinstance(c0, Tensor) else c0,) if lstm else ()))
        B, M = rows[1].shape
        xb = x.reshape(T, B, self.input_size)
        if T and B:
            # row-major [B, T, N]: each row's sequence contiguous, as the rows call reads it
            yr, c = self._rows(np.ascontiguousarray(xb.transpose(1, 0, 2)), rows[1],
                               rows[2] if lstm else None, self._seq)
            y = np.ascontiguousarray(yr.reshape(B, T, M).transpose(1, 0, 2))
            h = y[-1].copy()
        else:
            y = np.empty((T, B, M), self.dtype)
            c = rows[2].copy() if lstm else None
            h = y[-1].copy() if T else rows[1].copy()
        y = y.reshape((T,) + x.shape[1:-1] + (M,))
        out = (y, h.reshape(h0a.shape))
        return out + (c.reshape(h0a.shape),) if lstm else out

    def _run_rows_into(self, x, h, c, y):
        """Whole sequences, unchecked: ``x`` [B, T, N], ``h`` [B, M], ``c`` [B, M] (LSTM,
        else None) and ``y`` [B, T, M] are C-contiguous arrays of the body's dtype made by
        the caller, B, T >= 1.  Row r's batch-to-batch MLI call writes every step's output
        into ``y[r]`` and (LSTM) its last cell into ``c[r]`` (in place); the values of
        :meth:`run_sequence`.  One row is the per-row kernel on tensor wrappers reused
        from call to call, more rows one batched-rows call (:mod:`mli.rows`).  For
        :mod:`mli.fixed_point`'s sequence ops, which check and quantize the inputs."""
        lstm = self.cell == "lstm"
        kw = {"out_frac_bits": self.out_frac} if self.act == RnnActivation.NONE else {}
        if len(h) > 1:
            fn = getattr(rows_api, self._rows_fname)       # looked up per call (tests may wrap it)
            xt, ht, yt = Tensor(x, self.in_frac), Tensor(h, self.state_frac), Tensor(y)
            if lstm:
                ct = Tensor(c, self.cell_frac)
                fn(xt, ht, self.weights, self.bias, self._seq, ct, out=yt, cell_out=ct)
            else:
                fn(xt, ht, self.weights, self.bias, self._seq, out=yt, **kw)
            return
        fn = getattr(kernels, self._fname)
        pool = self.__dict__.setdefault("_pool", [])
        try:
            ws = pool.pop()
        except IndexError:
            ws = (Tensor(), Tensor(), Tensor(), Tensor())
        tx, th, tc, ty = ws
        bind = _core.bind
        try:
            bind(tx, x[0], self.in_frac)
            bind(th, h[0], self.state_frac)
            bind(ty, y[0], 0)
            if lstm:
                bind(tc, c[0], self.cell_frac)
                fn(tx, th, self.weights, self.bias, self._seq, tc, out=ty, cell_out=tc)
            else:
                fn(tx, th, self.weights, self.bias, self._seq, out=ty, **kw)
        finally:
            _core.unbind(ws)
            pool.append(ws)

    # ------------------------------------------------------------------ fast path
    def fusable(self, ti) -> bool:
        """Whether ``ti``'s port map lets :meth:`run_tensor_iterator` fuse it."""
        fed = {p.internal: p for p in ti.inputs}
        x = fed.get(0)
        if not (isinstance(x, SlicedInput) and x.part_size == 1):
            return False
        states = (1, 2) if self.cell == "lstm" else (1,)
        if any(not isinstance(fed.get(i), MergedInput) for i in states):
            return False
        edges = sorted((e.from_result, e.to_parameter) for e in ti.back_edges)
        if edges != [(i, i) for i in states]:
            return False
        for p in ti.outputs:
            if isinstance(p, ConcatOutput):
                if p.internal not in (0, 1):
                    return False         # the cell sequence is not kept by batch-to-batch
            elif not isinstance(p, LastIterationOutput):
                return False
        return True

    def run_tensor_iterator(self, ti, arrays):
        """Fast path hook called by :class:`~mli.graph.TensorIterator`.

        Returns the TI's outputs computed with one batch-to-batch call per
        row, or ``None`` when the port map (or ``fuse=False``, zero
        iterations, slicing on the last axis of ``x``) needs stepping.
        """
        if not self.fuse:
            return None
        plan = ti.__dict__.get("_kernel_plan")
        if plan is None or plan[0] is not self:    # the port map is checked once per TI
            plan = (self, self.fusable(ti) and _FusedPlan(self, ti))
            ti._kernel_plan = plan
            ti._fused_call = plan[1].fast.run if plan[1] else None
        if not plan[1]:
            return None
        out = plan[1].run(arrays)
        return self._run_tensor_iterator(ti, arrays) if out is _GENERAL else out

    def _run_tensor_iterator(self, ti, arrays):
        """The fused run for any input: the slicing plans of the driver, the
        checks of a step (same errors as stepping), whole sequences."""
        body_in, plans = ti._start(arrays)
        n = ti._count(plans)
        (p, _, x, pre, first, step, _), = plans
        axis = len(pre)
        if n == 0 or axis == x.ndim - 1:
            return None
        chunk = x[pre + (slice(first, first + 1),)]
        lstm = self.cell == "lstm"
        h0 = body_in[1]
        self._check(chunk, h0, body_in[2] if lstm else None)   # same errors as stepping
        seq = np.take(x, first + step * np.arange(n), axis=axis)
        seq = np.moveaxis(seq, axis, 0)                        # [n, rows..., N]
        M = self.state_size
        res = self.run_sequence(seq.reshape(n, -1, self.input_size), np.reshape(h0, (-1, M)),
                                np.reshape(body_in[2], (-1, M)) if lstm else None)
        y = res[0]                                             # [n, B, M]
        y_shape = chunk.shape[:-1] + (self.state_size,)
        h_shape = np.shape(h0)
        # every iteration's result at once: the TI concatenates them with one reshape
        stacked = {0: _Stacked(y.reshape((n,) + y_shape)), 1: _Stacked(y.reshape((n,) + h_shape))}
        scans = [stacked[q.internal] for q in ti._concat]
        last = [y[-1].reshape(y_shape).copy(), y[-1].reshape(h_shape).copy()]
        if lstm:
            last.append(res[2].reshape(np.shape(body_in[2])))
        return ti._finish(arrays, n, scans, last)

    def __repr__(self):
        f = ", ".join(f"{k}={v}" for k, v in self.fracs.items())
        return (f"KernelBody({self.cell}, {self.kind}, N={self.input_size}, "
                f"M={self.state_size}, act={self.act.name}, frac {f})")


def _frac(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) <= 255:
        raise ValueError(f"KernelBody: {name} must be an integer in 0..255, got {v!r}")
    return int(v)


_TENSOR_BYTES = 0xFFFFFFFF   # an MLI tensor's capacity (uint32): KernelBody._rows splits beyond it
_GENERAL = object()   # _FusedPlan.run: this input needs the general fused run


class _FusedPlan:
    """What a fusable TensorIterator over a KernelBody does, worked out once
    from its port map: where x, h and c come from and which outputs it
    assembles.  ``run`` handles the common inputs (arrays of the body's
    dtype, x sliced on a leading axis) with tensor wrappers reused from call
    to call; any other input returns ``_GENERAL`` and takes the general run,
    whose checks raise the errors of stepping."""

    def __init__(self, body, ti):
        fed = {p.internal: p for p in ti.inputs}
        self.body, self.ti = body, ti
        self.lstm = body.cell == "lstm"
        self.xp = fed[0]
        self.h_ext = fed[1].external
        self.c_ext = fed[2].external if self.lstm else None
        self.n_fixed = ti.num_iterations
        # (external, body output, concatenated?, port, message prefix) of each output
        self.outputs = tuple((p.external, p.internal, isinstance(p, ConcatOutput), p,
                              f"{p.label}: {body.describe_output(p.internal)}") for p in ti.outputs)
        self.n_out = len(self.outputs)
        self.pool = []     # [x, h, c, out, cell_out] tensor wrappers; list.pop/append: one call each
        # the run in the bridge (TensorIterator.__call__ tries it first): each output's kind,
        # concatenation axis and direction, by external position; a y concatenated with parts
        # of more than 1, or twice, or a concatenated h_out, leaves every call to the paths here
        kinds, eligible, concats = [None] * self.n_out, True, 0
        for ext, j, is_concat, p, _ in self.outputs:
            if is_concat:
                concats += 1
                eligible &= j == 0 and p.part_size == 1 and concats == 1
                kinds[ext] = (0, p.axis, 1 if p.stride > 0 else -1)
            else:
                kinds[ext] = (1 + j, 0, 1)       # the last y, h_out or c_out
        self.fast = _core.FusedSeq(body, kernels, body._fname, self.lstm, VARIANT[body.kind], self.xp.external,
                                   self.h_ext, self.c_ext if self.lstm else -1, ti.num_external_inputs, self.xp,
                                   self.xp.axis, self.n_fixed, kinds, eligible, np.empty, np.ndarray,
                                   RnnMode.BATCH_TO_BATCH, RnnActivation.NONE)

    def run(self, arrays):
        body, xp, lstm = self.body, self.xp, self.lstm
        dt = body.dtype
        x, h0 = arrays[xp.external], arrays[self.h_ext]
        c0 = arrays[self.c_ext] if lstm else None
        N, M = body.input_size, body.state_size
        nd = x.ndim
        if (x.dtype != dt or h0.dtype != dt or nd < 2 or x.shape[-1] != N or h0.ndim < 1
                or h0.shape[-1] != M or (lstm and (c0.dtype != dt or c0.shape != h0.shape))):
            return _GENERAL
        axis = xp.axis + nd if xp.axis < 0 else xp.axis
        if not 0 <= axis < nd - 1:
            return _GENERAL
        try:
            n, first, step = xp.plan(x.shape[axis])
        except GraphError:
            return _GENERAL
        B = h0.size // M
        if n == 0 or B == 0 or (self.n_fixed is not None and n != self.n_fixed) or x.size // (N * x.shape[axis]) != B:
            return _GENERAL
        if axis == 0 and step == 1 and first == 0 and n == x.shape[0]:
            seq = x
        else:
            seq = np.moveaxis(np.take(x, first + step * np.arange(n), axis=axis), axis, 0)
        seq = seq.reshape(n, B, N)
        h2 = h0.reshape(B, M)
        y = np.empty((B, n, M), dt)                  # row-major: each row's sequence is one out
        if lstm:
            c2 = c0.reshape(B, M)
            c = np.empty((B, M), dt)
        fn = getattr(kernels, body._fname)      # looked up per call (tests may wrap it)
        try:
            ws = self.pool.pop()
        except IndexError:
            ws = (Tensor(), Tensor(), Tensor(), Tensor(), Tensor())
        tx, th, tc, ty, tco = ws
        bind, contiguous = _core.bind, np.ascontiguousarray
        try:
            for r in range(B):
                bind(tx, contiguous(seq[:, r]), body.in_frac)
                bind(th, contiguous(h2[r]), body.state_frac)
                bind(ty, y[r], 0)
                if lstm:
                    bind(tc, contiguous(c2[r]), body.cell_frac)
                    bind(tco, c[r], body.cell_frac)
                    fn(tx, th, body.weights, body.bias, body._seq, tc, out=ty, cell_out=tco)
                elif body.act == RnnActivation.NONE:
                    fn(tx, th, body.weights, body.bias, body._seq, out=ty, out_frac_bits=body.out_frac)
                else:
                    fn(tx, th, body.weights, body.bias, body._seq, out=ty)
        finally:
            _core.unbind(ws)
            self.pool.append(ws)
        y_shape = x.shape[:axis] + (1,) + x.shape[axis + 1:-1] + (M,)   # the body's y of one iteration
        yt = y.transpose(1, 0, 2) if B > 1 else y                      # [n, B, M] (B == 1: [1, n, M])
        result = [None] * self.n_out
        last = {}
        concat = self.ti._concatenate_stacked
        own = True          # y is this call's own array: one output may keep it uncopied
        for ext, j, is_concat, p, what in self.outputs:
            if is_concat:
                stk = yt.reshape((n,) + (y_shape if j == 0 else h0.shape))
                if own and p.stride > 0 and stk.ndim > 1 and p.axis in (0, 1 - stk.ndim) and \
                        stk.shape[1] == p.part_size:
                    own = False
                    result[ext] = stk.reshape((n * stk.shape[1],) + stk.shape[2:])
                else:
                    result[ext] = concat(p, what, stk)
            else:
                v = last.get(j)
                if v is None:
                    if j == 2:
                        v = c.reshape(c0.shape)
                    else:
                        v = (yt[-1] if B > 1 else y[0, -1]).reshape(y_shape if j == 0 else h0.shape).copy()
                    last[j] = v
                result[ext] = v
        return tuple(result)
