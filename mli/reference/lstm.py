"""LSTM cell (SPEC section 10), split into steps that tests can reach alone.

One time step is::

    d = dense(x[t], state=h)                    # 4M values, frac f_ir = q - 3
    i, g, f, o = lstm_gates(d, kind, f_ir)      # sigm, tanh, sigm, sigm
    c = lstm_cell_update(i, g, f, c, f_c, kind)
    h = lstm_hidden(c, f_c, o, act, f_h, kind)

with q = 15 for 16-bit data and 7 for 8-bit data.
"""

import numpy as np

from .dense import dense
from .fxmath import asr32, check_rounding, data_bits, exact, read16, sat, to_container
from .rnn import RNN_ACT_NONE, RNN_BATCH_TO_BATCH, activation, sequence_steps
from .transform import sigm, tanh


def gate_frac(kind):
    """Frac bits q of the activated gates: 15 (16-bit data) or 7 (fx8)."""
    return 15 if data_bits(kind) == 16 else 7


def lstm_gates(dense_out, kind, f_ir, rounding="convergent"):
    """Activate the 4M dense outputs into the gates i, g, f, o.

    Parameters
    ----------
    dense_out : array_like of int
        4M values in gate order i, g (candidate), f, o, frac `f_ir`.
    kind : {"fx8", "fx16", "fx8w16d"}
    f_ir : int
        Frac bits of `dense_out` (the kernel uses ``q - 3``).
    rounding : {"convergent", "up"}

    Returns
    -------
    i, g, f, o : numpy.ndarray
        M values each, Q15 int16 (16-bit data) or Q7 int8:
        ``sigm, tanh, sigm, sigm`` of the four quarters.
    """
    d = np.asarray(dense_out).reshape(4, -1)
    i = sigm(kind, d[0], f_ir, rounding)[0]
    g = tanh(kind, d[1], f_ir, rounding)[0]
    f = sigm(kind, d[2], f_ir, rounding)[0]
    o = sigm(kind, d[3], f_ir, rounding)[0]
    return i, g, f, o


def lstm_cell_update(i, g, f, c, f_c, kind, rounding="convergent"):
    """New cell state ``c' = f*c + i*g`` in 32-bit integer arithmetic.

    ``u = ASR32(i*g, q - f_c) + f*c`` (the sum is not saturated), then
    ``c' = SAT_B(ASR32(u, q))`` with B the data container bits.

    Parameters
    ----------
    i, g, f : array_like of int
        Gates (frac q).
    c : array_like of int
        Cell state, frac `f_c`.
    f_c : int
    kind : {"fx8", "fx16", "fx8w16d"}
    rounding : {"convergent", "up"}
        Both shifts are SHIFT family.

    Returns
    -------
    numpy.ndarray
        Updated cell, frac `f_c`, int8 (fx8) or int16.
    """
    bits, q = data_bits(kind), gate_frac(kind)
    u = asr32(exact(i) * exact(g), q - int(f_c), rounding) + exact(f) * exact(c)
    return to_container(sat(asr32(u, q, rounding), bits), bits).reshape(np.shape(c))


def lstm_hidden(c, f_c, o, act, f_h, kind, rounding="convergent"):
    """Hidden state / output ``h = act(c) * o``.

    Parameters
    ----------
    c : array_like of int
        Updated cell state, frac `f_c`.
    f_c : int
    o : array_like of int
        Output gate, frac q.
    act : int
        0 NONE (``p = c``, then ``h`` has frac `f_h`), 1 TANH or 2 SIGM
        (``p`` = activation of c, then ``h`` has frac q).
    f_h : int
        Frac of ``prev_out``; the output frac for act NONE.
    kind : {"fx8", "fx16", "fx8w16d"}
    rounding : {"convergent", "up"}
        ACC family (16-bit data) or SHIFT family (fx8).

    Returns
    -------
    h : numpy.ndarray
        int8 (fx8) or int16.
    f_y : int
        `f_h` (act NONE) or q.
    """
    bits, q = data_bits(kind), gate_frac(kind)
    p, f_p = activation(act, kind, c, f_c, rounding)
    mshift = int(f_c) + q - int(f_h) if act == RNN_ACT_NONE else q
    prod = exact(p) * exact(o)
    if bits == 16:
        h = read16(prod, mshift, rounding)
    else:
        h = sat(asr32(prod, mshift, rounding), 8)
    return to_container(h, bits).reshape(np.shape(c)), (int(f_h) if act == RNN_ACT_NONE else q)


def lstm_cell(kind, x, f_in, h0, f_h, w, f_w, b, f_b, c0, f_c, mode, act,
              rounding="convergent"):
    """``mli_krn_lstm_cell_{fx8,fx16,fx8w16d}``.

    Parameters
    ----------
    kind : {"fx8", "fx16", "fx8w16d"}
    x : array_like of int
        Input, frac `f_in`: one vector (ONE_TO_ONE) or steps along axis 0.
    f_in : int
    h0 : array_like of int
        ``prev_out``, M values, frac `f_h` (used for the shifts of every step).
    f_h : int
    w : array_like of int, shape (4, M, N+M)
        Gate order i, g, f, o; frac `f_w`.
    f_w : int
    b : array_like of int, shape (4, M)
    f_b : int
    c0 : array_like of int
        Cell state (M values), frac `f_c`; not modified.
    f_c : int
    mode : int
        0 ONE_TO_ONE, 1 BATCH_TO_BATCH, 2 BATCH_TO_LAST.
    act : int
        0 NONE, 1 TANH, 2 SIGM (activation of the cell in the output).
    rounding : {"convergent", "up"}

    Returns
    -------
    y : numpy.ndarray
        BATCH_TO_BATCH: shape (steps, M); otherwise (M,).  int8 / int16.
    f_y : int
        `f_h` (act NONE) or q (15 / 7).
    c_new : numpy.ndarray
        Final cell state, shape (M,), frac `f_c`.
    ir_gates : numpy.ndarray, shape (4, M)
        Activated gates i, g, f, o of the last step, frac q (the IR scratch).
    """
    check_rounding(rounding)
    q = gate_frac(kind)
    f_ir = q - 3
    w = np.asarray(w)
    m = np.size(h0)
    if w.ndim != 3 or w.shape[:2] != (4, m):
        raise ValueError(f"w: expected shape (4, {m}, N+{m}), got {w.shape}")
    w2 = w.reshape(4 * m, w.shape[2])
    h = np.asarray(h0).reshape(-1)
    c = np.asarray(c0).reshape(-1)
    ys = []
    for xt in sequence_steps(x, mode):
        d = dense(kind, xt, f_in, w2, f_w, b, f_b, f_ir, state=h, f_state=f_h,
                  rounding=rounding)
        i, g, f, o = lstm_gates(d, kind, f_ir, rounding)
        c = lstm_cell_update(i, g, f, c, f_c, kind, rounding)
        h, f_y = lstm_hidden(c, f_c, o, act, f_h, kind, rounding)
        ys.append(h)
    y = np.stack(ys) if mode == RNN_BATCH_TO_BATCH else ys[-1]
    return y, f_y, c, np.stack([i, g, f, o])
