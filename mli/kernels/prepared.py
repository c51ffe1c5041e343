"""Prepared calls: a basic RNN or LSTM call bound once and called again and
again (beyond MLI; the bridge's PreparedCall)."""
import numpy as np

from .. import _core
from .._status import raise_for_status
from ..enums import VARIANT, RnnMode
from ..tensor import Tensor
from ._base import count, dtype_of, not_a_strided_copy, tensor_arg
from .config import RnnCellConfig

__all__ = ["prepare"]


def prepare(kernel, x, prev_out, weights, bias, cfg, cell=None, *, out):
    """Bind a basic RNN or LSTM call once, for calling again and again with
    no marshalling or allocation (e.g. one-to-one stepping from Python).

    ``kernel`` is one of the ``basic_rnn_cell_*`` / ``lstm_cell_*`` functions.
    The weights are copied now (later changes to the caller's weights do not
    reach the prepared call) and kept packed; ``x``, ``prev_out``, ``bias``,
    ``cell`` and ``out`` are used as they are at each call: update their
    contents in place (e.g. ``x.numpy()[...] = next_input``).  Like the C
    kernel, the call writes ``out`` and updates ``cell`` in place.

    Returns a callable taking no argument; it raises the MliError of a
    non-OK status.
    """
    name = getattr(kernel, "__name__", "")
    lstm = name.startswith("lstm_cell_")
    if not (lstm or name.startswith("basic_rnn_cell_")) or name.rsplit("_", 1)[-1] not in VARIANT:
        raise TypeError("prepare: kernel must be one of mli.basic_rnn_cell_* / mli.lstm_cell_*")
    kind = name.rsplit("_", 1)[-1]
    for n, t in (("in", x), ("prev_out", prev_out), ("weights", weights), ("bias", bias), ("out", out)):
        tensor_arg(n, t, "prepare")
    if lstm:
        tensor_arg("cell", cell, "prepare")
    if not isinstance(cfg, RnnCellConfig):
        raise TypeError("prepare: cfg must be an mli.RnnCellConfig")
    fname = "mli_krn_" + name
    # the bridge's checks of the caller's tensors (the caller's weights too:
    # the handle computes from a copy of them), then the kernel's C checks on
    # the arguments as bound now, before anything is allocated from their
    # shapes (a cfg.ir made here stands in as one the checks accept): a bad
    # argument fails here, naming it, and no handle is made
    given = (cfg.ir, cell, out) if lstm else (cfg.ir, out)
    _core.check_call(("in", "prev_out", "weights", "bias", "cfg.ir_tsr") + (("cell",) if lstm else ()) + ("out",),
                     (x, prev_out, weights, bias), given)
    not_a_strided_copy("out", out, "prepare")
    raise_for_status(_core.check_cell(lstm, VARIANT[kind], x, prev_out, weights, bias, int(cfg.mode), int(cfg.act),
                                      cfg.ir, cell if lstm else None, out), fname)
    ir = cfg.ir
    if ir is None and (lstm or cfg.mode == RnnMode.BATCH_TO_LAST):
        ir = Tensor(np.zeros(max(4 * count(prev_out) if lstm else count(bias), 1), dtype_of(kind)))

    def on_error(st):
        raise_for_status(st, fname)

    return _core.PreparedCall(lstm, VARIANT[kind], x, prev_out, weights.copy(), bias, int(cfg.mode), int(cfg.act),
                              ir, cell if lstm else None, out, on_error)
