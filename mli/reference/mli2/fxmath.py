"""The arithmetic of SPEC_MLI2: shifts, rounding and saturation on int64 arrays
(section 2) and the sa8 requantisation blocks (section 6); the rounding modes."""

import functools

import numpy as np


ROUNDING_MODES = ("convergent", "up")


def check_rounding(rounding):
    """Return `rounding` if it is a supported mode, else raise ``ValueError``."""
    if rounding not in ROUNDING_MODES:
        raise ValueError(f"rounding must be one of {ROUNDING_MODES}, got {rounding!r}")
    return rounding


# Section 2: shifts, rounding, saturation on int64 arrays.
# Every function takes arrays (or scalars, broadcast) and returns a 1-d or
# larger int64 array, never a numpy scalar: scalar int64 arithmetic warns on
# the wrap-around that the 64-bit saturations below deliberately discard.

def _arr(x):
    if type(x) is np.ndarray and x.dtype == np.int64 and x.ndim:   # the common case, no copy
        return x
    return np.atleast_1d(np.asarray(x, dtype=np.int64))


def _limits(w):
    return -(1 << (w - 1)), (1 << (w - 1)) - 1


def sat(x, w):
    """SAT_W: clamp to the signed W-bit range."""
    lo, hi = _limits(w)
    return np.minimum(np.maximum(_arr(x), lo), hi)


def wrap(x, w):
    """WRAP_W: reduce modulo 2^W into the signed range (a C narrowing on gcc)."""
    x = _arr(x)
    if w == 64:
        return x
    low = x & ((1 << w) - 1)
    return np.where(low >= (1 << (w - 1)), low - (1 << w), low)


def add_sat(a, b, w):
    """ADD_W: a + b saturated to W bits (a, b are W-bit values)."""
    a, b = _arr(a), _arr(b)
    if w < 64:
        return sat(a + b, w)                               # cannot overflow int64
    # 64 bits: find the overflowing lanes without computing an overflowing
    # bound; their (wrapped) sum is discarded.
    lo, hi = _limits(w)
    over = a > hi - np.maximum(b, 0)
    under = a < lo - np.minimum(b, 0)
    with np.errstate(over="ignore"):
        s = a + b
    return np.where(over, hi, np.where(under, lo, s))


def sub_sat(a, b, w):
    """SUB_W (only used with W <= 32, where -b cannot overflow)."""
    assert w <= 32
    return add_sat(a, -_arr(b), w)


# The shifts take a scalar n (the common case, a short path) or an array of
# per-element shifts (per-channel sa8 parameters), broadcast against x.

def shl(x, n, w):
    """SHL_W(x, n), n >= 0: saturating left shift."""
    x = _arr(x)
    lo, hi = _limits(w)
    if np.ndim(n) == 0:
        n = int(n)
        assert n >= 0
        if n > w - 1:                                      # every non-zero x saturates
            return np.where(x > 0, hi, np.where(x < 0, lo, 0))
        with np.errstate(over="ignore"):
            return np.where(x > hi >> n, hi, np.where(x < lo >> n, lo, x << n))
    x, n = np.broadcast_arrays(x, _arr(n))
    assert (n >= 0).all()
    nn = np.minimum(n, 63)
    over = x > (np.int64(hi) >> nn)
    under = x < (np.int64(lo) >> nn)
    with np.errstate(over="ignore"):
        r = np.where(over, hi, np.where(under, lo, x << nn))
    # n > W-1: every non-zero x saturates (hi >> n = 0 and lo >> n = -1 would let x = -1 through)
    return np.where(n > w - 1, np.where(x > 0, hi, np.where(x < 0, lo, 0)), r)


def asr(x, n, w):
    """ASR_W(x, n): floor(x / 2^n); n < 0 is SHL_W(x, -n); n > W-1 gives -1 or 0."""
    x = _arr(x)
    if np.ndim(n) == 0:
        n = int(n)
        return shl(x, -n, w) if n < 0 else x >> min(n, 63)
    x, n = np.broadcast_arrays(x, _arr(n))
    left = shl(x, np.maximum(-n, 0), w)
    return np.where(n < 0, left, x >> np.clip(n, 0, 63))


def _round_even(x, n, half):
    """CONVERGENT RSHR for 1 <= n <= W-1 (the plus one cannot overflow)."""
    q = x >> n
    mask = (1 << n) - 1 if np.ndim(n) == 0 else (np.int64(1) << n) - 1   # n <= 63: fits int64
    rem = x & mask
    # ties to even: an exact half rounds up only from an odd floor
    return q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))


def rshr(x, n, w, rounding):
    """RSHR_W(x, n): the library's one rounding shift (section 2.2)."""
    x = _arr(x)
    up_mode = check_rounding(rounding) == "up"
    if np.ndim(n) == 0:
        n = int(n)
        if n < 0:
            return shl(x, -n, w)
        if n == 0:
            return x
        if n > w - 1:
            return np.zeros_like(x)                        # also for negative x
        half = 1 << (n - 1)
        if up_mode:
            # add the half saturating in W bits, then floor: near the maximum it rounds down
            return add_sat(x, half, w) >> n
        return _round_even(x, n, half)
    x, n = np.broadcast_arrays(x, _arr(n))
    nn = np.clip(n, 1, w - 1)
    half = np.int64(1) << (nn - 1)
    r = (add_sat(x, half, w) >> nn) if up_mode else _round_even(x, nn, half)
    r = np.where(n > w - 1, 0, r)
    r = np.where(n == 0, x, r)
    return np.where(n < 0, shl(x, np.maximum(-n, 0), w), r)


def norm32(x):
    """NORM: redundant sign bits of a 32-bit value (31 for 0 and -1)."""
    x = _arr(x)
    y = np.where(x < 0, ~x, x)                            # 0 <= y < 2^31, exact in float64
    return 31 - np.frexp(y.astype(np.float64))[1].astype(np.int64)


def div_trunc(a, b):
    """DIV: C integer division (toward zero) of Python ints."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _i(x):
    """The single value of a one-element result as a Python int."""
    a = np.asarray(x).reshape(-1)
    assert a.size == 1
    return int(a[0])


# Section 6: sa8 requantisation blocks (scalar parameters as Python ints).

@functools.lru_cache(maxsize=4096)
def ratio(s_in, f_in, s_out, f_out, rounding):
    """RATIO(in, out) of 6.1: (int16 mantissa, shift)."""
    n1 = _i(norm32(s_in))
    u = div_trunc(_i(shl(s_in, n1, 32)), s_out)
    n2 = _i(norm32(u))
    r = _i(sat(rshr(u, 16 - n2, 32, rounding), 16))
    return r, f_in + n1 - f_out - (16 - n2)


@functools.lru_cache(maxsize=4096)
def mult(r, shift, w_scale, w_shift):
    """MULT(ratio, shift, w) of 6.2 (FULL_ACCU=OFF): multiplier normalised to bit 30."""
    m = r * w_scale                                       # int16 x int16: fits 32 bits
    sh = shift + w_shift
    k = _i(norm32(m))
    return m * 2 ** k, sh + k


def bias_preround(b):
    """6.3: an int32 sa8 bias keeps its 16 most significant bits (floor)."""
    b = _arr(b)
    k = np.maximum(16 - norm32(b), 0)
    return asr(b, k, 32) << k


def req(acc, m, sh, rounding):
    """REQ of 6.4: SAT_32(RSHR_64(acc * m, min(sh, 63))), exact 64-bit product."""
    return sat(rshr(_arr(acc) * m, np.minimum(sh, 63), 64, rounding), 32)


def fcq(acc, m, sh, rounding):
    """FCQ of 6.5 (FULL_ACCU=OFF): the FC output cast with a 16-bit multiplier.

    `m` and `sh` may be per-output arrays."""
    m16 = rshr(m, 16, 32, rounding)
    sh = _arr(sh) - 16
    p = np.clip(sh - 21, 0, 8)                            # pre-shift of the accumulator
    a = sat(rshr(acc, p, 32, rounding), 16)
    return sat(rshr(a * m16, np.minimum(sh - p, 63), 64, rounding), 16)
