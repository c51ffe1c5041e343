"""``mli_krn_lstm_cell_*``: the LSTM cell (csrc/src/kernels/mli_krn_lstm.c)."""
from .. import _core
from ..enums import VARIANT
from ._base import export, kind_of, named, tensor_arg

__all__ = []


def _make(kind):
    fname = f"lstm_cell_{kind}"
    fn = named(_core.lstm_kernel(VARIANT[kind], fname), fname, __name__)
    fn.__doc__ = f"""``mli_krn_lstm_cell_{kind}(in, prev_out, weights, bias, cfg, cell, out)``.

    Weights [4, M, N+M] and bias [4, M] in MLI's gate order i, g, f, o.
    The cell is read and a new updated cell is returned (the caller's
    ``cell`` is unchanged unless it is passed as ``cell_out``).

    Returns
    -------
    (Tensor, Tensor)
        The output ([T, M] in batch-to-batch mode, else [M]) and the cell.

    Raises
    ------
    MliError
        BAD_TENSOR, SHAPE_MISMATCH, INCOMPATEBLE_TENSORS, BAD_FUNC_CFG,
        NOT_ENGH_MEM or TYPE_MISMATCH, as the C checks decide.
    """
    return fn


for _k in ("fx8", "fx16", "fx8w16d"):
    export(globals(), _make(_k))


def lstm_cell(x, prev_out, weights, bias, cfg, cell, **kw):
    """:func:`lstm_cell_fx8`/``_fx16``/``_fx8w16d`` picked from the element types."""
    tensor_arg("in", x, "lstm_cell")
    tensor_arg("weights", weights, "lstm_cell")
    return globals()["lstm_cell_" + kind_of(x, weights)](x, prev_out, weights, bias, cfg, cell, **kw)


__all__ += ["lstm_cell"]
