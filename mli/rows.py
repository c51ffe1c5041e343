"""Batched rows: B independent sequences through one LSTM or basic RNN cell
with shared weights, in one C call (an mli-py extension beyond MLI 1.1).

``lstm_cell_rows_fx16(x, prev_out, weights, bias, cfg, cell)`` gives, row
for row, what ``lstm_cell_fx16(x[r], prev_out[r], weights, bias, cfg,
cell[r])`` gives, bit for bit (every mode, rounding mode and ISA path), in one
C call with the GIL released, the weights packed once for all rows.  How the
rows run depends on the ISA path and the cell:

* on the AVX2 path, where the kernel's fused time step applies (LSTM: M a
  multiple of 16; basic RNN: K a multiple of 8; both: the bounds that let the
  read-out run on int32 lanes, which realistic weights meet), the rows of a
  block advance together one time step at a time, each row's step the
  kernel's fused step;
* on the AVX-512 VNNI path an LSTM whose M is a multiple of 16, over 8 steps
  or more, runs its rows one after another through the kernel's fused time
  step;
* on the AVX-512 VNNI path a basic RNN whose K is a multiple of 16 (8-bit
  weights: a cell small enough for their widened copy) advances 8 rows at a
  time one time step at a time, each load of the weights serving all 8 rows
  (the state's and the input's sums by ``vpdpwssd``, exact in int32 lanes
  where the weights and the step's data bound them, else over the data's
  high and low bytes, or the AVX2 step for that row), the read-out and the
  activation on 16 and 32 lanes;
* otherwise all rows advance one step at a time through a shared-weights
  engine: each step's dense part reads the weights once for all rows, the
  element-wise steps run over all rows as one vector.

A row whose work the batching cannot share is not batched: an LSTM cell
tensor whose ``mem_stride`` is set and not dense (MLI's output activation
refuses it, see ``lstm_cell``) sends every row of the call one after another
through the kernel itself.  Except for that AVX-512 basic RNN, the
multiply-accumulate and table-lookup instructions of a row are those of a
separate call, so a rows call saves the per-call costs (the Python call, the
checks, packing the weights) rather than arithmetic.  Even a dense part made
free by the batching would leave most of a row's time: at HAR size an LSTM
step without any dot product still takes 62 % (AVX2) and 68 % (AVX-512) of
its time (benchmarks/README.md).

Tensors with a leading row axis (B rows):

* ``x``: [B, N] (one-to-one) or [B, T, N...] (batch modes), every row with
  the same T;
* ``prev_out`` (and the LSTM ``cell``): [B, M], or [M] shared by every row;
* results: ``out`` [B, T, K] in batch-to-batch mode, else [B, K] (K = M, or
  the bias's element count for a basic RNN), and the LSTM's new cell [B, M].

``weights``, ``bias`` and ``cfg`` are those of the per-row kernel.  The
arguments are never modified (``cell_out=cell`` asks for the cell to be
updated in place).  A bad row raises the :class:`mli.MliError` subclass of
the status the per-row call would return, with ``error.row`` its index (and
"of row r" in the message); nothing is written then.  Outputs may not share
memory with the inputs or with each other (MliIncompatibleTensorsError).
"""
from __future__ import annotations

import math

import numpy as np

from . import _core
from ._status import Status, error
from .enums import VARIANT, RnnActivation, RnnMode
from .kernels._base import dtype_of as _dtype, kind_of, not_a_strided_copy as _not_a_strided_copy, tensor_arg as _tensor
from .kernels.config import RnnCellConfig
from .tensor import Tensor

__all__ = ["lstm_cell_rows_fx8", "lstm_cell_rows_fx16", "lstm_cell_rows_fx8w16d", "basic_rnn_cell_rows_fx8",
           "basic_rnn_cell_rows_fx16", "basic_rnn_cell_rows_fx8w16d", "lstm_cell_rows", "basic_rnn_cell_rows"]

# one C int counts the rows; the outputs are allocated here
MAX_ROWS = 2 ** 31 - 1


def _raise(st, cname, row):
    """The typed error of a non-OK status, naming the row at fault."""
    if st == 0:
        return
    code, _, argument, field, reason, expected, actual, has_values, safety = _core.last_error()
    if code != st:
        argument, field, reason, has_values, safety = "", "", "failed", False, False
    if row >= 0:
        reason = f"of row {row} {reason}"
    kw = dict(expected=expected, actual=actual) if has_values else {}
    e = error(st, cname, argument, field, reason, mlipy_safety=safety, **kw)
    e.row = row if row >= 0 else None
    raise e


def _rows_of(x, fname):
    """B: x's leading axis (or the length of a list of row tensors), refused
    when zero, beyond a C int or beyond x's memory."""
    if isinstance(x, (list, tuple)):
        for i, t in enumerate(x):
            _tensor(f"in[{i}]", t, fname)
        B = len(x)
    else:
        _tensor("in", x, fname)
        if x.rank < 1 or x.rank > 4 or x.data_null or x.scalar_value is not None:
            raise error(Status.BAD_TENSOR, fname, "in", "rank",
                        "needs the rows on a leading axis ([B, N] or [B, T, N])")
        B = x.shape[0]
    if not 1 <= B <= MAX_ROWS:
        raise error(Status.ARGUMENT_ERROR, fname, "in", "shape[0]", f"(the row count) must be in 1..{MAX_ROWS}",
                    expected=1, actual=B)
    if not isinstance(x, (list, tuple)) and x.capacity < B * _count(x.shape[1:]) * x.dtype.itemsize:
        raise error(Status.NOT_ENGH_MEM, fname, "in", "capacity", f"is smaller than its {B} rows need")
    return B


def _count(shape):
    return math.prod(shape)


def _row0(x):
    return x[0] if isinstance(x, (list, tuple)) else None


def _steps(x, mode):
    """T of batch-to-batch rows (None in the other modes)."""
    if mode != RnnMode.BATCH_TO_BATCH:
        return None
    r0 = _row0(x)
    shape = r0.shape if r0 is not None else x.shape[1:]
    return shape[0] if len(shape) >= 2 else None


def _state(name, t, B, fname):
    """(the tensor or list for C, True when it holds one row per row, M)."""
    if isinstance(t, (list, tuple)):
        for i, v in enumerate(t):
            _tensor(f"{name}[{i}]", v, fname)
        if len(t) != B:
            raise error(Status.SHAPE_MISMATCH, fname, name, "", f"needs one tensor per row ({B}), got {len(t)}")
        return list(t), True, _count(t[0].shape)
    _tensor(name, t, fname)
    if t.rank == 1:
        return t, False, t.shape[0]
    if 2 <= t.rank <= 4 and t.shape[0] == B:
        return t, True, _count(t.shape[1:])
    raise error(Status.SHAPE_MISMATCH, fname, name, "shape",
                f"must be [B, M] with B = {B} rows, or [M] shared by every row, got {t.shape}")


def _new(shape, kind, frac):
    return Tensor(np.zeros(shape, _dtype(kind)), frac)


def _make_lstm(kind):
    variant = VARIANT[kind]
    fname = f"lstm_cell_rows_{kind}"
    cname = f"mlipy_lstm_cell_rows_{kind}"

    def fn(x, prev_out, weights, bias, cfg, cell, *, out=None, cell_out=None):
        for n, t in (("weights", weights), ("bias", bias), ("cell", cell)):
            _tensor(n, t, fname)
        if not isinstance(cfg, RnnCellConfig):
            raise TypeError(f"{fname}: cfg must be an mli.RnnCellConfig")
        B = _rows_of(x, fname)
        x = list(x) if isinstance(x, tuple) else x
        prev_out, h_rows, M = _state("prev_out", prev_out, B, fname)
        cell_arg, c_rows, _ = _state("cell", cell, B, fname)
        steps = _steps(x, cfg.mode)
        if out is not None:
            _tensor("out", out, fname)
            _not_a_strided_copy("out", out, fname)
        # every row's kernel checks see the shapes before anything is allocated from them
        st, row = _core.check_rows(True, variant, B, x, prev_out, h_rows, weights, bias, int(cfg.mode),
                                   int(cfg.act), cfg.ir, cell_arg, c_rows, out)
        _raise(st, cname, row)
        if out is None:
            out = _new((B, steps, M) if steps else (B, M), kind, 0)
        if cell_out is not None:
            _tensor("cell_out", cell_out, fname)
            _not_a_strided_copy("cell_out", cell_out, fname)
            if cell_out is not cell:  # (cell_out=cell: the new cells are copied into it at the end)
                named = [("weights", weights), ("bias", bias), ("cell", cell), ("out", out)]
                for name, v in (("in", x), ("prev_out", prev_out)):
                    named += [(f"{name}[{i}]", t) for i, t in enumerate(v)] if isinstance(v, list) else [(name, v)]
                _core.check_call(tuple(n for n, _ in named) + ("cell_out",), tuple(t for _, t in named),
                                 (cell_out,))
            if cell_out.data_null or cell_out.shape[:1] != (B,) or math.prod(cell_out.shape) != B * M:
                raise error(Status.SHAPE_MISMATCH, fname, "cell_out", "shape",
                            f"must be [B, M] = [{B}, {M}], got {cell_out.shape}")
        # the cells the C call updates: a private copy, one per row
        src = cell.numpy()
        c = Tensor(np.array(src if c_rows else np.broadcast_to(src, (B,) + src.shape)), cell.frac_bits)
        c.el_type = cell.el_type
        ir = cfg.ir if cfg.ir is not None else Tensor(np.zeros(max(4 * M, 1), _dtype(kind)))
        st, row, frac = _core.cell_rows(True, variant, B, x, prev_out, h_rows, weights, bias, int(cfg.mode),
                                        int(cfg.act), ir, c, out)
        _raise(st, cname, row)
        out.frac_bits = frac
        out.el_type = (_row0(x) or x).el_type
        if cell_out is None:
            return out, c
        np.copyto(cell_out.numpy(), c.numpy().reshape(cell_out.shape))
        cell_out.frac_bits, cell_out.el_type = c.frac_bits, c.el_type
        return out, cell_out

    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = f"""B rows of ``mli_krn_lstm_cell_{kind}`` with shared weights in one call
    (``{cname}``, an mli-py extension beyond MLI 1.1).

    Parameters
    ----------
    x : Tensor
        [B, N] (one-to-one) or [B, T, N] (batch modes): row r's input.
    prev_out, cell : Tensor
        [B, M] (row r's h0 / c0), or [M] shared by every row.
    weights, bias : Tensor
        [4, M, N+M] and [4, M], gate order i, g, f, o (as the kernel).
    cfg : RnnCellConfig
        mode (one of the three RNN modes) and output activation.
    out : Tensor, optional
        Where the outputs go ([B, T, M] batch-to-batch, else [B, M]).
    cell_out : Tensor, optional
        Where the new cells go ([B, M]); ``cell_out=cell`` updates in place.

    Returns
    -------
    (Tensor, Tensor)
        The outputs and the new cells, row r equal to the per-row call's.

    Raises
    ------
    MliError
        The per-row kernel's status for the first bad row (``e.row``), or
        INCOMPATEBLE_TENSORS for rows that differ in frac bits or step count
        or outputs that overlap inputs, BAD_FUNC_CFG for a mode outside the
        three, ARGUMENT_ERROR for zero rows.
    """
    return fn


def _make_rnn(kind):
    variant = VARIANT[kind]
    fname = f"basic_rnn_cell_rows_{kind}"
    cname = f"mlipy_basic_rnn_cell_rows_{kind}"

    def fn(x, prev_out, weights, bias, cfg, *, out=None, out_frac_bits=None):
        for n, t in (("weights", weights), ("bias", bias)):
            _tensor(n, t, fname)
        if not isinstance(cfg, RnnCellConfig):
            raise TypeError(f"{fname}: cfg must be an mli.RnnCellConfig")
        B = _rows_of(x, fname)
        x = list(x) if isinstance(x, tuple) else x
        prev_out, h_rows, _ = _state("prev_out", prev_out, B, fname)
        K = math.prod(bias.shape) if 1 <= bias.rank <= 4 else 0
        steps = _steps(x, cfg.mode)
        h0 = prev_out[0] if isinstance(prev_out, list) else prev_out
        frac = h0.frac_bits if out_frac_bits is None else out_frac_bits
        if out is not None:
            _tensor("out", out, fname)
            _not_a_strided_copy("out", out, fname)
        # every row's kernel checks see the shapes before anything is allocated from them
        st, row = _core.check_rows(False, variant, B, x, prev_out, h_rows, weights, bias, int(cfg.mode),
                                   int(cfg.act), cfg.ir, None, False, out)
        _raise(st, cname, row)
        if out is None:
            out = _new((B, steps, K) if steps else (B, K), kind, frac)
        old = out.frac_bits
        if cfg.act == RnnActivation.NONE:
            out.frac_bits = frac  # the output format the dense part is read out in
        ir = cfg.ir
        if ir is None and cfg.mode == RnnMode.BATCH_TO_LAST:
            ir = Tensor(np.zeros(max(K, 1), _dtype(kind)))
        try:
            st, row, ofrac = _core.cell_rows(False, variant, B, x, prev_out, h_rows, weights, bias, int(cfg.mode),
                                             int(cfg.act), ir, None, out)
            _raise(st, cname, row)
        except BaseException:
            out.frac_bits = old
            raise
        out.frac_bits = ofrac
        out.el_type = (_row0(x) or x).el_type
        return out

    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = f"""B rows of ``mli_krn_basic_rnn_cell_{kind}`` with shared weights in one
    call (``{cname}``, an mli-py extension beyond MLI 1.1).

    ``x`` [B, N] (one-to-one) or [B, T, N] (batch modes); ``prev_out`` [B, M]
    or [M] shared; ``weights``, ``bias`` and ``cfg`` as for the kernel;
    ``out_frac_bits`` for act NONE (default: prev_out's).  Returns the
    outputs, [B, T, K] in batch-to-batch mode, else [B, K]; raises as
    :func:`lstm_cell_rows_{kind}`.
    """
    return fn


for _k in ("fx8", "fx16", "fx8w16d"):
    globals()[f"lstm_cell_rows_{_k}"] = _make_lstm(_k)
    globals()[f"basic_rnn_cell_rows_{_k}"] = _make_rnn(_k)


def _kind(x, weights, fname):

    _tensor("weights", weights, fname)
    if isinstance(x, (list, tuple)) and x:
        x = x[0]
    return kind_of(_tensor("in", x, fname), weights)


def lstm_cell_rows(x, prev_out, weights, bias, cfg, cell, **kw):
    """:func:`lstm_cell_rows_fx8` / ``_fx16`` / ``_fx8w16d`` picked from the element types."""
    return globals()["lstm_cell_rows_" + _kind(x, weights, "lstm_cell_rows")](x, prev_out, weights, bias, cfg,
                                                                                cell, **kw)


def basic_rnn_cell_rows(x, prev_out, weights, bias, cfg, **kw):
    """:func:`basic_rnn_cell_rows_fx8` / ``_fx16`` / ``_fx8w16d`` picked from the element types."""
    return globals()["basic_rnn_cell_rows_" + _kind(x, weights, "basic_rnn_cell_rows")](x, prev_out, weights,
                                                                                          bias, cfg, **kw)
