"""LUT activations (tanh, sigmoid) and ReLU (SPEC sections 6 and 7)."""

import functools
import math

import numpy as np

from .fxmath import asr16, check_rounding, data_bits, exact, read16, rnd_shift, sat

#: (length, offset, lut_frac, function) of the two Q15 tables (SPEC 6.1).
_TABLES = {
    "tanh": (178, 89, 4, math.tanh),
    "sigm": (180, 90, 3, lambda t: 1.0 / (1.0 + math.exp(-t))),
    "expneg": (181, 179, 4, math.exp),   # softmax's exp table (SPEC_MLI11_MORE 8): entry i is exp((i - 179) / 16)
}


@functools.lru_cache(maxsize=None)
def _lut_values(name):
    """The table of `name` as a tuple of Python ints (computed once)."""
    length, offset, lut_frac, func = _TABLES[name]
    values = []
    for i in range(length):
        y = func((i - offset) / 2.0 ** lut_frac) * 32768.0
        y = math.trunc(y + (0.5 if y > 0 else -0.5))   # half away from zero
        values.append(min(max(y, -32768), 32767))
    return tuple(values)


def lut_tanh():
    """The 178-entry Q15 tanh table (entry i is tanh((i - 89) / 16)).

    Returns
    -------
    numpy.ndarray of int16, shape (178,)
    """
    return np.array(_lut_values("tanh"), dtype=np.int16)


def lut_sigm():
    """The 180-entry Q15 sigmoid table (entry i is sigm((i - 90) / 8)).

    Returns
    -------
    numpy.ndarray of int16, shape (180,)
    """
    return np.array(_lut_values("sigm"), dtype=np.int16)


def lut_eval(name, x, frac, rounding="convergent"):
    """16-bit LUT core (SPEC 6.2): Q15 result for every element of `x`.

    Parameters
    ----------
    name : {"tanh", "sigm"}
    x : array_like of int
        Input values (int8 values are simply sign-extended).
    frac : int
        Input frac bits.
    rounding : {"convergent", "up"}
        Tie rule of the interpolation read-out (ACC family).

    Returns
    -------
    numpy.ndarray of object (Python ints), same shape as `x`, Q15 values.
    """
    check_rounding(rounding)
    length, offset, lut_frac, _ = _TABLES[name]
    table = np.array(_lut_values(name), dtype=object)
    x = exact(x)
    v = x.reshape(-1)                           # Python ints, element-wise below
    s = int(frac) - lut_frac
    pre = max(s - 15, 0)
    s = min(s, 15)
    if s > 0:                                   # interpolate between two entries
        xs = v >> pre                               # floor(v / 2^pre)
        idx = np.clip(sat((xs >> s) + offset, 16), 0, length - 2).astype(np.int64)
        frac_part = xs & ((1 << s) - 1)             # xs mod 2^s, also for xs < 0
        diff = sat(table[idx] - table[idx + 1], 16)
        r = sat(table[idx] - read16(diff * frac_part, s, rounding), 16)
    else:                                       # table is finer than the input
        idx = sat(sat(v << -s, 16) + offset, 16)
        r = table[np.clip(idx, 0, length - 1).astype(np.int64)]
    return np.asarray(r, dtype=object).reshape(x.shape)


def _activation(name, kind, x, f_in, rounding):
    bits = data_bits(kind)
    r = lut_eval(name, x, f_in, rounding)
    if bits == 16:
        return r.astype(np.int16), 15
    return sat(asr16(r, 8, rounding), 8).astype(np.int8), 7


def tanh(kind, x, f_in, rounding="convergent"):
    """Hyperbolic tangent through the Q15 LUT (``mli_krn_tanh_fx8/fx16``).

    Parameters
    ----------
    kind : {"fx8", "fx16", "fx8w16d"}
        Data container: 8-bit for "fx8", 16-bit otherwise.
    x : array_like of int
        Input values (int8 for fx8, int16 otherwise), any shape.
    f_in : int
        Input frac bits.
    rounding : {"convergent", "up"}

    Returns
    -------
    y : numpy.ndarray
        Same shape as `x`; int16 Q15 (16-bit data) or int8 Q7 (fx8, the Q15
        value shifted right by 8 with rounding and saturated).
    f_out : int
        15 or 7.
    """
    return _activation("tanh", kind, x, f_in, rounding)


def sigm(kind, x, f_in, rounding="convergent"):
    """Logistic sigmoid through the Q15 LUT (``mli_krn_sigm_fx8/fx16``).

    Same parameters and results as :func:`tanh`.
    """
    return _activation("sigm", kind, x, f_in, rounding)


def relu(x, f_in, relu_type):
    """ReLU variants of ``mli_krn_relu_fx8/fx16`` (SPEC 7).

    Parameters
    ----------
    x : numpy.ndarray of int8 or int16
        Input; the container bits are taken from the dtype.
    f_in : int
        Input frac bits (limits 1 and 6 are ``2**f_in`` and ``6*2**f_in``).
    relu_type : int
        0 NONE (no clipping), 1 GEN, 2 RELU_1, 3 RELU_6; other values act
        like NONE.

    Returns
    -------
    numpy.ndarray
        Same dtype and shape as `x`; its frac bits are `f_in`.
    """
    x = np.asarray(x)
    if x.dtype not in (np.int8, np.int16):
        raise TypeError(f"relu: int8 or int16 data expected, got {x.dtype}")
    info = np.iinfo(x.dtype)
    mn, mx = int(info.min), int(info.max)
    one, six = 1 << int(f_in), 6 << int(f_in)
    lower, upper = {1: (0, mx), 2: (max(-one, mn), min(one, mx)),
                    3: (0, min(six, mx))}.get(int(relu_type), (mn, mx))
    return np.array([min(max(int(v), lower), upper) for v in x.reshape(-1)],
                    dtype=x.dtype).reshape(x.shape)


def leaky_relu(x, f_in, slope, f_slope, rounding="convergent"):
    """``mli_krn_leaky_relu_fx8/fx16`` (SPEC_MLI11_MORE 7): p = SAT_16(RND(x * a,
    f_s)) (fx8: then SAT_8), y = max(x, p) when the slope counts as below one
    (a compared with the 16-bit value of 1 << f_s; always for f_s > 15), else
    min(x, p).  The output keeps in's frac bits `f_in`."""
    x = np.asarray(x)
    bits = 8 * x.dtype.itemsize
    a, fs = int(slope), int(f_slope)
    one16 = ((1 << fs) + 0x8000) % 0x10000 - 0x8000 if fs <= 15 else None
    below = fs > 15 or a < one16
    out = []
    for v in x.reshape(-1):
        p = int(sat(rnd_shift(np.array([int(v) * a], dtype=object), fs, rounding), 16)[0])
        p = int(sat(np.array([p], dtype=object), bits)[0])
        out.append(max(int(v), p) if below else min(int(v), p))
    return np.array(out, x.dtype).reshape(x.shape)


def softmax(kind, x, f_in, rounding="convergent"):
    """``mli_krn_softmax_fx8/fx16`` (SPEC_MLI11_MORE 8) over all elements of
    `x` as one vector: (y, f_out) with f_out 15 (fx16) or 7 (fx8)."""
    x = np.asarray(x)
    bits = 8 * x.dtype.itemsize
    flat = [int(v) for v in x.reshape(-1)]
    mx, mn = max(flat), min(flat)
    frac = int(f_in)
    if mn - mx < -(1 << (bits - 1)):
        v = [int(sat(np.array([(a >> 1) - (mx >> 1)], dtype=object), 16)[0]) for a in flat]
        frac -= 1
    else:
        v = [a - mx for a in flat]
    e = lut_eval("expneg", np.array(v, dtype=object), frac, rounding)
    if bits == 8:
        e = sat(asr16(e, 8, rounding), 8)
    e = [int(a) for a in e.reshape(-1)]
    total = sum(e)
    n = 31 - total.bit_length()
    mnt = int(sat(rnd_shift(np.array([total], dtype=object), 16 - n, rounding), 16)[0])
    r = min((1 << 29) // mnt, 32767)
    shift = 30 - n if bits == 16 else 38 - n
    y = sat(rnd_shift(np.array([r * a for a in e], dtype=object), shift, rounding), 16)
    if bits == 8:
        y = sat(y, 8)
    return np.array([int(a) for a in y], x.dtype).reshape(x.shape), 15 if bits == 16 else 7
