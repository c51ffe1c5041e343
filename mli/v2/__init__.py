"""MLI 2.0.2 kernels, bit-exact with MLI 2.0.2's own x86 build.

The names are MLI 2.x's minus ``mli_krn_``: ``lstm_cell_fx16``,
``gru_cell_sa8_sa8_sa32``, ``rnn_dense_fx16_fx8_fx8``,
``fully_connected_sa8_sa8_sa32_ext_bias``, ``tanh_sa8``, ... with the C
argument order.  Tensors are :class:`Tensor` (2.x model: FX frac bits or
SA parameters per tensor / per axis; :meth:`Tensor.from_float` quantises);
LUT objects come from :func:`tanh_lut` / :func:`sigm_lut` (created once);
cfgs are :class:`RnnCellCfg`, :class:`RnnDenseCfg`, :class:`FullyConnectedCfg`.

Every call runs in C with the GIL released (a whole sequence per call for
the cells), in the rounding mode of :func:`mli.set_rounding` /
``with mli.rounding(...)`` (MLI 2.0.2's ROUND_MODE: ``"convergent"`` or
``"up"``) and on the ISA path of :func:`mli.use_isa`.  A non-OK MLI status
raises the :class:`mli.MliError` subclass of that status (``argument``
names the tensor at fault; ``mlipy_safety`` is True for calls MLI 2.0.2
would accept but crash on or read out of bounds, and for outputs sharing
memory with operands in layouts MLI computes from data it has overwritten).
Inputs may be read-only arrays; outputs must be writable.  The MLI 1.1 API
of :mod:`mli` is unchanged; the two libraries are separate extensions."""
from __future__ import annotations

import threading
from typing import Callable, Optional, Protocol, Sequence

import numpy as np

from .. import _core as _core11
from .._status import MliError, Status, error as _error
from . import _core2
from ._core2 import BridgeError
from .tensor import (FX_8, FX_16, SA_8, SA_32, FullyConnectedCfg, Lut, RnnCellCfg, RnnDenseCfg, Tensor)

__all__ = ["get_include", "Tensor", "Lut", "RnnCellCfg", "RnnDenseCfg", "FullyConnectedCfg", "MliError", "Status", "BridgeError",
           "tanh_lut", "sigm_lut", "tanh_get_lut_size", "sigm_get_lut_size", "tanh_create_lut", "sigm_create_lut",
           "FX_8", "FX_16", "SA_8", "SA_32", "RNN_DIR_FORWARD", "RNN_DIR_BACKWARD", "RNN_OUT_LAST", "RNN_OUT_ALL",
           "RNN_ACT_NONE", "RNN_ACT_TANH", "RNN_ACT_SIGM", "MLI_RELU_NONE", "MLI_RELU_GEN", "MLI_RELU_1", "MLI_RELU_6"]

RNN_DIR_FORWARD, RNN_DIR_BACKWARD = 0, 1
RNN_OUT_LAST, RNN_OUT_ALL = 0, 1
RNN_ACT_NONE, RNN_ACT_TANH, RNN_ACT_SIGM = 0, 1, 2
MLI_RELU_NONE, MLI_RELU_GEN, MLI_RELU_1, MLI_RELU_6 = 0, 1, 2, 3

CELL_KINDS = ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32")
FC_KINDS = ("fx8", "fx16", "fx16_fx8_fx8", "sa8_sa8_sa32", "sa8_sa8_sa32_ext_bias")
ACT_KINDS = ("fx8", "fx16", "sa8")


def get_include() -> str:
    """The folder of MLI 2.0.2's C headers (``mli_api.h``, ``mli_types.h``), to
    compile what ``mli export-c --mli 2`` writes (the counterpart of
    :func:`mli.get_include`)."""
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "include")
    if os.path.isfile(os.path.join(installed, "mli_api.h")):
        return installed
    # the source tree (built in place or editable install): csrc/mli2/include
    return os.path.join(os.path.dirname(os.path.dirname(here)), "csrc", "mli2", "include")


def _mode() -> int:
    """The rounding mode of this thread (mli.set_rounding / mli.rounding), and
    the ISA path of the 1.1 core applied to this library too."""
    isa = _core11.get_isa()
    if _core2.get_isa() != isa:
        _core2.set_isa(isa)
    return int(_core11.get_rounding())


def _raise(st: int, kernel: str) -> None:
    if st == 0:
        return
    s, function, argument, reason, safety = _core2.last_error()
    if s != st:
        function, argument, reason, safety = kernel, "", "failed", False
    raise _error(st, kernel, argument, "", reason, mlipy_safety=safety, library="MLI 2.0.2")


def tanh_get_lut_size() -> int:
    return _core2.lut_size("tanh")


def sigm_get_lut_size() -> int:
    return _core2.lut_size("sigm")


def tanh_create_lut(lut: Lut) -> None:
    """Fill `lut` (its buffer and capacity set) with the tanh table."""
    _raise(_core2.create_lut("tanh", lut), "mli_krn_tanh_create_lut")


def sigm_create_lut(lut: Lut) -> None:
    _raise(_core2.create_lut("sigm", lut), "mli_krn_sigm_create_lut")


_luts: dict = {}
_lut_lock = threading.Lock()


def _shared_lut(fn: str) -> Lut:
    with _lut_lock:
        if fn not in _luts:
            lut = Lut(_core2.lut_size(fn))
            _raise(_core2.create_lut(fn, lut), f"mli_krn_{fn}_create_lut")
            lut.buffer.flags.writeable = False  # one table for the whole process: kernels only read it
            _luts[fn] = lut
        return _luts[fn]


def tanh_lut() -> Lut:
    """The tanh LUT object, created once per process (its table is read-only)."""
    return _shared_lut("tanh")


def sigm_lut() -> Lut:
    """The sigmoid LUT object, created once per process (its table is read-only)."""
    return _shared_lut("sigm")


class _ActFn(Protocol):
    def __call__(self, x: Tensor, lut: Optional[Lut] = None, out: Optional[Tensor] = None) -> Tensor: ...


_FcFn = Callable[[Tensor, Tensor, Tensor, Optional[FullyConnectedCfg], Tensor], Tensor]
_DenseFn = Callable[[Sequence[Tensor], Sequence[Tensor], Tensor, Optional[RnnDenseCfg], Tensor], Tensor]
_LstmFn = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, Optional[Lut], Optional[Lut], RnnCellCfg, Tensor, Tensor],
                   Tensor]
_GruFn = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, Optional[Lut], Optional[Lut], RnnCellCfg, Tensor], Tensor]


def _backed_count(t) -> Optional[int]:
    """The elements of `t`'s shape when its buffer and capacity hold the extent
    of its shape and strides (as MLI 2.0.2's tensor check asks), else None: a
    shape merely claimed, which the kernel's checks refuse naming the tensor,
    so nothing is allocated from it."""
    try:
        rank = int(t.rank)
        if not 0 <= rank <= 4:
            return None
        shape = [int(v) for v in t.shape[:rank]]
        strides = [int(v) for v in t.mem_stride[:rank]]
        if any(v <= 0 for v in shape) or any(v <= 0 for v in strides):
            return None
        span = 1 + sum((n - 1) * st for n, st in zip(shape, strides))
        buf = t.buffer
        have = min(int(t.capacity), int(buf.nbytes) if buf is not None else 0)
        from .tensor import DTYPES
        if span * np.dtype(DTYPES[t.el_type]).itemsize > have:
            return None
        n = 1
        for v in shape:
            n *= v
        return n
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def _holds_count(t) -> bool:
    """Whether `t`'s buffer has room for as many elements as its shape counts
    (rank 0 to 4, every dimension positive): what a new dense output of that
    shape may cost without a claimed shape sizing an allocation."""
    try:
        rank = int(t.rank)
        shape = [int(v) for v in t.shape[:rank]]
        if not 0 <= rank <= 4 or any(v <= 0 for v in shape) or t.buffer is None:
            return False
        from .tensor import DTYPES
        return int(np.prod(shape, dtype=object)) * np.dtype(DTYPES[t.el_type]).itemsize <= int(t.buffer.nbytes)
    except (AttributeError, KeyError, TypeError, ValueError):
        return False


def _make_act(fn: str, kind: str) -> _ActFn:
    cname = f"mli_krn_{fn}_{kind}"

    def act(x: Tensor, lut: Optional[Lut] = None, out: Optional[Tensor] = None) -> Tensor:
        if out is None:
            # a new dense out of x's shape when x's buffer could hold that many
            # elements (strides aside: MLI's own checks judge them, in 32 bits);
            # a shape its buffer cannot hold sizes nothing: MLI 2.0.2 would read
            # past the buffer (its 32-bit size check wraps) or refuse it
            if not _holds_count(x) and isinstance(x, Tensor) and 0 < int(x.rank) <= 4 \
                    and all(int(v) > 0 for v in x.shape[:x.rank]) and x.buffer is not None:
                raise _error(Status.NOT_ENGH_MEM, cname, "in", "shape",
                             f"claims {list(x.shape[:x.rank])}, more elements than its "
                             f"{int(x.buffer.nbytes)}-byte buffer holds", mlipy_safety=True,
                             library="MLI 2.0.2")
            out = Tensor.zeros(x.shape[:x.rank] if _holds_count(x) else (1,), x.el_type)
        lut = _shared_lut(fn) if lut is None else lut
        _raise(_core2.activation(fn, kind, x, lut, out, _mode()), cname)
        return out

    act.__name__ = act.__qualname__ = f"{fn}_{kind}"
    act.__doc__ = (f"{cname}(in, lut, out): {fn} of every element (lut: default the {fn} LUT; out: default a new "
                   f"dense tensor).  Returns out, whose parameters the kernel sets.")
    return act


def _make_fc(kind: str) -> _FcFn:
    cname = f"mli_krn_fully_connected_{kind}"

    def fc(x: Tensor, weights: Tensor, bias: Tensor, cfg: Optional[FullyConnectedCfg], out: Tensor) -> Tensor:
        relu = None if cfg is None else (cfg.relu if isinstance(cfg, FullyConnectedCfg) else int(cfg))
        _raise(_core2.fully_connected(kind, x, weights, bias, relu, out, _mode()), cname)
        return out

    fc.__name__ = fc.__qualname__ = f"fully_connected_{kind}"
    fc.__doc__ = (f"{cname}(in, weights (N, M), bias (M), cfg, out (M)): out's format is an input; "
                  "cfg None is a NULL cfg (refused).  Returns out.")
    return fc


def _make_dense(kind: str) -> _DenseFn:
    cname = f"mli_krn_rnn_dense_{kind}"

    def dense(ins: Sequence[Tensor], weights: Sequence[Tensor], bias: Tensor, cfg: Optional[RnnDenseCfg],
              out: Tensor) -> Tensor:
        n = None if cfg is None else (cfg.inputs_num if isinstance(cfg, RnnDenseCfg) else int(cfg))
        _raise(_core2.rnn_dense(kind, list(ins), list(weights), bias, n, out, _mode()), cname)
        return out

    dense.__name__ = dense.__qualname__ = f"rnn_dense_{kind}"
    dense.__doc__ = f"{cname}(in[], weights[], bias, cfg, out): the dense block of up to 4 inputs.  Returns out."
    return dense


def _scratch_cfg(cfg: RnnCellCfg, gates: int, prev_out: Tensor, x: Tensor) -> RnnCellCfg:
    """cfg with a scratch buffer of the required size when it has none."""
    if cfg is None or cfg.scratch_buffer is not None or cfg.scratch_capacity:
        return cfg
    # M from prev_out's shape only when its buffer holds it: else the
    # kernel's check of prev_out (before the scratch's) refuses it first
    m = (_backed_count(prev_out) or 0) if prev_out is not None else 0
    esz = 2 if x is not None and x.el_type == FX_16 else 1
    cap = max(gates * m * esz, 1)
    return RnnCellCfg(cfg.direction, cfg.results, cfg.act, np.zeros(cap, np.uint8), cap)


def _cell_doc(fn: Callable[..., Tensor], cell_kind: str, kind: str) -> None:
    cname = f"mli_krn_{cell_kind}_cell_{kind}"
    fn.__name__ = fn.__qualname__ = f"{cell_kind}_cell_{kind}"
    fn.__doc__ = (f"{cname}: the whole sequence in one C call (GIL released).  LUTs None: the shared "
                  "objects; a cfg without scratch gets one.  out's rank/shape/strides are rewritten to "
                  "(T or 1, M)" + ("; cell is updated in place." if cell_kind == "lstm" else "."))


def _make_lstm(kind: str) -> _LstmFn:
    cname = f"mli_krn_lstm_cell_{kind}"

    def cell_fn(x: Tensor, prev_out: Tensor, weights_in: Tensor, weights_out: Tensor, bias: Tensor,
                tanh_lut_: Optional[Lut], sigm_lut_: Optional[Lut], cfg: RnnCellCfg, cell: Tensor,
                out: Tensor) -> Tensor:
        c = _scratch_cfg(cfg, 4, prev_out, x)
        st = _core2.rnn_cell("lstm", kind, x, prev_out, weights_in, weights_out, bias,
                             tanh_lut() if tanh_lut_ is None else tanh_lut_,
                             sigm_lut() if sigm_lut_ is None else sigm_lut_, c, cell, out, _mode())
        _raise(st, cname)
        return out

    _cell_doc(cell_fn, "lstm", kind)
    return cell_fn


def _make_gru(kind: str) -> _GruFn:
    cname = f"mli_krn_gru_cell_{kind}"

    def cell_fn(x: Tensor, prev_out: Tensor, weights_in: Tensor, weights_out: Tensor, bias: Tensor,
                tanh_lut_: Optional[Lut], sigm_lut_: Optional[Lut], cfg: RnnCellCfg, out: Tensor) -> Tensor:
        c = _scratch_cfg(cfg, 3, prev_out, x)
        st = _core2.rnn_cell("gru", kind, x, prev_out, weights_in, weights_out, bias,
                             tanh_lut() if tanh_lut_ is None else tanh_lut_,
                             sigm_lut() if sigm_lut_ is None else sigm_lut_, c, None, out, _mode())
        _raise(st, cname)
        return out

    _cell_doc(cell_fn, "gru", kind)
    return cell_fn


# Every kernel by name, so that type checkers, help() and IDEs see it (each made by its
# family's factory: the kinds of a family differ only in the C function they call).
tanh_fx8: _ActFn = _make_act("tanh", "fx8")
tanh_fx16: _ActFn = _make_act("tanh", "fx16")
tanh_sa8: _ActFn = _make_act("tanh", "sa8")
sigm_fx8: _ActFn = _make_act("sigm", "fx8")
sigm_fx16: _ActFn = _make_act("sigm", "fx16")
sigm_sa8: _ActFn = _make_act("sigm", "sa8")
fully_connected_fx8: _FcFn = _make_fc("fx8")
fully_connected_fx16: _FcFn = _make_fc("fx16")
fully_connected_fx16_fx8_fx8: _FcFn = _make_fc("fx16_fx8_fx8")
fully_connected_sa8_sa8_sa32: _FcFn = _make_fc("sa8_sa8_sa32")
fully_connected_sa8_sa8_sa32_ext_bias: _FcFn = _make_fc("sa8_sa8_sa32_ext_bias")
rnn_dense_fx16: _DenseFn = _make_dense("fx16")
lstm_cell_fx16: _LstmFn = _make_lstm("fx16")
gru_cell_fx16: _GruFn = _make_gru("fx16")
rnn_dense_fx16_fx8_fx8: _DenseFn = _make_dense("fx16_fx8_fx8")
lstm_cell_fx16_fx8_fx8: _LstmFn = _make_lstm("fx16_fx8_fx8")
gru_cell_fx16_fx8_fx8: _GruFn = _make_gru("fx16_fx8_fx8")
rnn_dense_sa8_sa8_sa32: _DenseFn = _make_dense("sa8_sa8_sa32")
lstm_cell_sa8_sa8_sa32: _LstmFn = _make_lstm("sa8_sa8_sa32")
gru_cell_sa8_sa8_sa32: _GruFn = _make_gru("sa8_sa8_sa32")
__all__ += [
    "tanh_fx8", "tanh_fx16", "tanh_sa8", "sigm_fx8", "sigm_fx16", "sigm_sa8", "fully_connected_fx8",
    "fully_connected_fx16", "fully_connected_fx16_fx8_fx8", "fully_connected_sa8_sa8_sa32",
    "fully_connected_sa8_sa8_sa32_ext_bias", "rnn_dense_fx16", "lstm_cell_fx16", "gru_cell_fx16",
    "rnn_dense_fx16_fx8_fx8", "lstm_cell_fx16_fx8_fx8", "gru_cell_fx16_fx8_fx8", "rnn_dense_sa8_sa8_sa32",
    "lstm_cell_sa8_sa8_sa32", "gru_cell_sa8_sa8_sa32",
]
