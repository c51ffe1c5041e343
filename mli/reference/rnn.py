"""Basic RNN cell (SPEC section 9)."""

import numpy as np

from .dense import dense
from .fxmath import check_rounding, data_bits
from .transform import sigm, tanh

#: cfg.mode values (mli_rnn_mode).
RNN_ONE_TO_ONE, RNN_BATCH_TO_BATCH, RNN_BATCH_TO_LAST = 0, 1, 2
#: cfg.act values (mli_rnn_out_activation).
RNN_ACT_NONE, RNN_ACT_TANH, RNN_ACT_SIGM = 0, 1, 2


def activation(act, kind, x, f_in, rounding="convergent"):
    """Apply RNN output activation `act` (0 none, 1 tanh, 2 sigm) -> (y, f_y)."""
    if act == RNN_ACT_NONE:
        return np.asarray(x), int(f_in)
    if act == RNN_ACT_TANH:
        return tanh(kind, x, f_in, rounding)
    if act == RNN_ACT_SIGM:
        return sigm(kind, x, f_in, rounding)
    raise ValueError(f"act must be 0 (NONE), 1 (TANH) or 2 (SIGM), got {act!r}")


def sequence_steps(x, mode):
    """Split `x` into the per-step input vectors of an RNN / LSTM call.

    ONE_TO_ONE: one step, the whole of `x`; the batch modes: one step per
    ``x[t]`` (``x.shape[0]`` steps), each flattened.
    """
    x = np.asarray(x)
    if mode == RNN_ONE_TO_ONE:
        return [x.reshape(-1)]
    if mode in (RNN_BATCH_TO_BATCH, RNN_BATCH_TO_LAST):
        if x.ndim < 2:
            raise ValueError("batch modes need an input of rank >= 2 (steps first)")
        if x.shape[0] == 0:
            raise ValueError("input has no steps (shape[0] == 0)")
        return [step.reshape(-1) for step in x]
    raise ValueError(f"mode must be 0, 1 or 2, got {mode!r}")


def basic_rnn_cell(kind, x, f_in, h0, f_h, w, f_w, b, f_b, mode, act, f_out,
                   rounding="convergent", *, return_ir=False):
    """``mli_krn_basic_rnn_cell_{fx8,fx16,fx8w16d}``.

    Parameters
    ----------
    kind : {"fx8", "fx16", "fx8w16d"}
    x : array_like of int
        Input, frac `f_in`: one vector (ONE_TO_ONE) or steps along axis 0.
    f_in : int
    h0 : array_like of int
        Initial state (``prev_out``), M values, frac `f_h`.
    f_h : int
        Used for the shifts of every step, even when later states are
        outputs of another frac (as MLI does).
    w : array_like of int
        Weights [K, N+M], or stacked [L, M, N+M] in ONE_TO_ONE mode.
    f_w : int
    b : array_like of int
        Bias [K], or [L, M] with stacked weights.
    f_b : int
    mode : int
        0 ONE_TO_ONE, 1 BATCH_TO_BATCH, 2 BATCH_TO_LAST.
    act : int
        0 NONE, 1 TANH, 2 SIGM.
    f_out : int
        Output frac for act NONE; ignored otherwise (the dense part then
        produces frac 12 for 16-bit data, 4 for 8-bit data).
    rounding : {"convergent", "up"}
    return_ir : bool, optional
        Also return the IR scratch contents (see Returns).

    Returns
    -------
    y : numpy.ndarray
        BATCH_TO_BATCH: all steps, shape (steps, K); otherwise the last step
        with the shape of `b`.  int8 for fx8, int16 otherwise.
    f_y : int
        `f_out` (act NONE) or 15 / 7 (activations, 16- / 8-bit data).
    ir : numpy.ndarray or None
        Only with ``return_ir=True``: the first K elements the IR buffer
        holds afterwards in BATCH_TO_LAST mode (pre-activation dense values
        of the last step with an activation; with act NONE the dense values
        of step ``steps-2``, or None for a single step); None in other modes.
    """
    check_rounding(rounding)
    bits = data_bits(kind)
    w, b = np.asarray(w), np.asarray(b)
    if mode == RNN_ONE_TO_ONE and w.ndim == 3:          # stacked weights [L, M, N+M]
        w = w.reshape(-1, w.shape[-1])
    f_d = int(f_out) if act == RNN_ACT_NONE else (12 if bits == 16 else 4)
    m = np.size(h0)
    h = np.asarray(h0).reshape(-1)
    ys, dense_outs = [], []
    for xt in sequence_steps(x, mode):
        d = dense(kind, xt, f_in, w, f_w, b, f_b, f_d, state=h, f_state=f_h,
                  rounding=rounding)
        y, f_y = activation(act, kind, d, f_d, rounding)
        ys.append(y)
        dense_outs.append(d)
        h = y[:m]
    if mode == RNN_BATCH_TO_BATCH:
        out = np.stack(ys)
    else:
        out = ys[-1].reshape(b.shape)
    if not return_ir:
        return out, f_y
    ir = None
    if mode == RNN_BATCH_TO_LAST:
        if act != RNN_ACT_NONE:
            ir = dense_outs[-1]
        elif len(dense_outs) >= 2:
            ir = dense_outs[-2]
    return out, f_y, ir
