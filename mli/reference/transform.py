"""LUT activations (tanh, sigmoid), ReLU (SPEC sections 6 and 7), leaky
ReLU and softmax (SPEC_MLI11_MORE sections 7 and 8)."""

import functools
import math

import numpy as np

from .fxmath import asr16, check_rounding, data_bits, exact, read16, sat

#: (length, offset, lut_frac, function) of the two Q15 tables (SPEC 6.1).
_TABLES = {
    "tanh": (178, 89, 4, math.tanh),
    "sigm": (180, 90, 3, lambda t: 1.0 / (1.0 + math.exp(-t))),
    "exp": (181, 179, 4, math.exp),     # softmax's exp(-t) table (SPEC_MLI11_MORE 8)
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
    name : {"tanh", "sigm", "exp"}
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


def leaky_relu(kind, x, f_in, slope, f_slope, rounding="convergent"):
    """``mli_krn_leaky_relu_fx8/fx16`` (SPEC_MLI11_MORE 7).

    Per element ``p = SAT_16(RND(x * a, f_slope))`` (fx8: then ``SAT_8``) and
    ``max(x, p)`` when the slope a "is less than 1", else ``min(x, p)``.  The
    test compares a with the 16-bit ``1 << f_slope``: always true for
    f_slope > 15, never for f_slope = 15 (the 16-bit one is -32768).

    Parameters
    ----------
    kind : {"fx8", "fx16"}
    x : array_like of int
        Input (int8 / int16), any shape, frac `f_in`.
    f_in : int
        The output's frac bits too (MLI copies in's format to out first).
    slope : int
        The slope coefficient's value (int8 / int16), frac `f_slope` >= 0.
    rounding : {"convergent", "up"}

    Returns
    -------
    numpy.ndarray, the shape of `x`, int8 (fx8) or int16; frac bits `f_in`.
    """
    check_rounding(rounding)
    bits = data_bits(kind)
    f_s, a = int(f_slope), int(slope)
    if f_s < 0:
        raise ValueError("a negative slope frac is a C shift by a negative count in MLI")
    one16 = ((1 << f_s) & 0xFFFF) - (0x10000 if (1 << f_s) & 0x8000 else 0) if f_s <= 15 else None
    below_one = True if f_s > 15 else a < one16
    x = exact(x)
    p = sat(asr16(x * a, f_s, rounding), bits)
    y = np.array([max(v, q) if below_one else min(v, q) for v, q in zip(x.reshape(-1), p.reshape(-1))],
                 dtype=object)
    return y.astype(np.int8 if bits == 8 else np.int16).reshape(x.shape)


def softmax(kind, x, f_in, rounding="convergent"):
    """``mli_krn_softmax_fx8/fx16`` over all elements as one vector
    (SPEC_MLI11_MORE 8).

    1. mx, mn: the maximum and minimum; if mn - mx is below -128 (fx8) or
       -32768 (fx16), v = SAT_16(floor(x/2) - floor(mx/2)) and the frac bits
       drop by one, else v = x - mx;
    2. e = the exp LUT (181 entries, offset 179, 4 frac bits) of v, through
       SPEC 6.2's evaluation; fx8: e = SAT_8(RND(e, 8));
    3. S = sum of e, n = 31 - bitlength(S), mnt = SAT_16(RND(S, 16 - n)),
       r = min(floor(2^29 / mnt), 32767);
    4. fx16: y = SAT_16(RND(r e, 30 - n)); fx8: SAT_8(SAT_16(RND(r e, 38 - n))).

    Returns
    -------
    numpy.ndarray, the shape of `x`, int8 / int16 with frac bits 7 / 15.
    """
    check_rounding(rounding)
    bits = data_bits(kind)
    x = exact(x)
    flat = [int(v) for v in x.reshape(-1)]
    if not flat:
        raise ValueError("softmax of no element")
    mx, mn = max(flat), min(flat)
    frac = int(f_in)
    if mn - mx < -(1 << (bits - 1)):
        v = [int(sat((t >> 1) - (mx >> 1), 16)) for t in flat]
        frac -= 1
    else:
        v = [t - mx for t in flat]
    e = [int(t) for t in lut_eval("exp", v, frac, rounding)]
    if bits == 8:
        e = [int(sat(read16(t, 8, rounding), 8)) for t in e]
    s = sum(e)
    n = 31 - s.bit_length()
    mnt = int(read16(s, 16 - n, rounding))
    r = min((1 << 29) // mnt, 32767)
    if bits == 16:
        y = [int(read16(r * t, 30 - n, rounding)) for t in e]
    else:
        y = [int(sat(read16(r * t, 38 - n, rounding), 8)) for t in e]
    return np.array(y, dtype=np.int8 if bits == 8 else np.int16).reshape(x.shape)
