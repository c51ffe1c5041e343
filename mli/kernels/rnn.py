"""``mli_krn_basic_rnn_cell_*``: the basic RNN cell (csrc/src/kernels/mli_krn_rnn.c)."""
from .. import _core
from ..enums import VARIANT
from ._base import export, kind_of, named, tensor_arg

__all__ = []


def _make(kind):
    fname = f"basic_rnn_cell_{kind}"
    fn = named(_core.rnn_kernel(VARIANT[kind], fname), fname, __name__)
    fn.__doc__ = f"""``mli_krn_basic_rnn_cell_{kind}(in, prev_out, weights, bias, cfg, out)``.

    Parameters
    ----------
    x : Tensor
        ``in``: [N] (one-to-one) or [T, N...] (batch modes), {kind} data.
    prev_out : Tensor
        The state h0, rank 1, M values.
    weights, bias : Tensor
        [M, N+M] and [M] (or stacked [L, M, N+M] and [L, M] in one-to-one mode).
    cfg : RnnCellConfig
        mode and output activation; ``cfg.ir`` is allocated when None.
    out : Tensor, optional
        Where to write the result (else a new tensor).
    out_frac_bits : int, optional
        Output frac bits for act NONE (default: prev_out's); 15 / 7 otherwise.

    Returns
    -------
    Tensor
        [T, K] in batch-to-batch mode, else bias-shaped (the last step).

    Raises
    ------
    MliError
        The subclass of the C status: BAD_TENSOR, SHAPE_MISMATCH,
        INCOMPATEBLE_TENSORS, BAD_FUNC_CFG, NOT_ENGH_MEM or TYPE_MISMATCH.
    """
    return fn


for _k in ("fx8", "fx16", "fx8w16d"):
    export(globals(), _make(_k))


def basic_rnn_cell(x, prev_out, weights, bias, cfg, **kw):
    """:func:`basic_rnn_cell_fx8`/``_fx16``/``_fx8w16d`` picked from the element types."""
    tensor_arg("in", x, "basic_rnn_cell")
    tensor_arg("weights", weights, "basic_rnn_cell")
    return globals()["basic_rnn_cell_" + kind_of(x, weights)](x, prev_out, weights, bias, cfg, **kw)


__all__ += ["basic_rnn_cell"]
