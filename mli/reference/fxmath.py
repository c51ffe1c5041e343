"""Exact fixed-point primitives of the MLI 1.1 arithmetic (SPEC section 2).

Every function works on Python integers held in numpy ``object`` arrays, so
no intermediate value can overflow or lose bits; results are converted to a
container dtype only at the very end, by the kernels.  Scalars are accepted
everywhere and come back as 0-d ``object`` arrays.

Rounding modes (the ``rounding`` argument everywhere in :mod:`mli.reference`):

``"convergent"``
    ties round to the even neighbour (the library's DSP setting; default);
``"up"``
    ties round toward +inf, in both the accumulator (ACC) and the shift
    (SHIFT) families.
"""

import numpy as np

ROUNDING_MODES = ("convergent", "up")

#: Data / weight container bits for each kind: (data bits, weight bits).
KIND_BITS = {"fx8": (8, 8), "fx16": (16, 16), "fx8w16d": (16, 8)}


def check_rounding(rounding):
    """Return `rounding` if it is a supported mode, else raise ``ValueError``."""
    if rounding not in ROUNDING_MODES:
        raise ValueError(f"rounding must be one of {ROUNDING_MODES}, got {rounding!r}")
    return rounding


def data_bits(kind):
    """Container bits (8 or 16) of the data tensors of `kind`.

    ``"fx8w16d"`` has 16-bit data; ``8`` and ``16`` are accepted as well.
    """
    if kind in (8, 16):
        return kind
    try:
        return KIND_BITS[kind][0]
    except KeyError:
        raise ValueError(f"kind must be one of {tuple(KIND_BITS)}, got {kind!r}") from None


def dtype_of_bits(bits):
    """numpy container dtype for 8 or 16 bits."""
    return {8: np.int8, 16: np.int16}[bits]


def exact(x):
    """Return `x` as an ``object`` array of Python ints (exact arithmetic).

    The shape is kept (0-d for scalars).  Elements are converted with
    ``int()`` so that no numpy fixed-width scalar survives inside.
    """
    a = np.asarray(x)
    if a.dtype != object and a.dtype.kind not in "iub":
        raise TypeError(f"integer data expected, got dtype {a.dtype}")
    if a.dtype == object and any(not isinstance(v, (int, np.integer)) for v in a.reshape(-1)):
        raise TypeError("integer data expected, got non-integer objects")
    flat = [int(v) for v in a.reshape(-1)]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(a.shape)


def _flat(x):
    """`x` as a 1-d exact array, plus the shape to restore with ``reshape``.

    numpy turns 0-d results into plain scalars, and ``np.where`` on plain
    Python ints picks ``int64``; working on 1-d ``object`` arrays avoids both.
    """
    a = exact(x)
    return a.reshape(-1), a.shape


def to_container(x, bits):
    """Convert exact values (already in range) to the int8 / int16 container.

    Raises ``OverflowError`` if a value does not fit, which would be a bug
    in the caller (every kernel saturates first).
    """
    a = exact(x)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if a.size and (np.min(a) < lo or np.max(a) > hi):
        raise OverflowError(f"value outside the {bits}-bit container")
    return a.astype(dtype_of_bits(bits))


def sat(x, bits):
    """``SAT_b``: clamp to [-2^(b-1), 2^(b-1)-1]."""
    a, shape = _flat(x)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return np.array([min(max(v, lo), hi) for v in a], dtype=object).reshape(shape)


def rnd_shift(x, n, rounding="convergent"):
    """``RND_mode(x, n)``: x / 2^n rounded to nearest (n > 0), x * 2^-n (n <= 0).

    All discarded bits take part in the decision; only an exact half is a
    tie, resolved to the even neighbour (``"convergent"``) or toward +inf
    (``"up"``).
    """
    check_rounding(rounding)
    x, shape = _flat(x)
    n = int(n)
    if n <= 0:
        return (x * (1 << -n)).reshape(shape)
    out = []
    for v in x:
        q, r = divmod(v, 1 << n)           # floor quotient, 0 <= r < 2^n
        half = 1 << (n - 1)
        tie_up = rounding == "up" or q % 2 == 1
        out.append(q + 1 if r > half or (r == half and tie_up) else q)
    return np.array(out, dtype=object).reshape(shape)


def floor_shift(x, n):
    """``FLOOR_SHIFT``: floor(x / 2^n) for n > 0, x * 2^-n otherwise (no rounding)."""
    x, shape = _flat(x)
    n = int(n)
    return (x // (1 << n) if n > 0 else x * (1 << -n)).reshape(shape)


def asr32(x, n, rounding="convergent"):
    """``ASR32(x, n) = SAT_32(RND(x, n))`` (SHIFT family; n < 0 saturating left shift)."""
    return sat(rnd_shift(x, n, rounding), 32)


def asr16(x, n, rounding="convergent"):
    """``ASR16(x, n) = SAT_16(RND(x, n))`` (SHIFT family)."""
    return sat(rnd_shift(x, n, rounding), 16)


def read16(acc, s, rounding="convergent"):
    """``READ16(acc, s) = SAT_16(RND(acc, s))``: accumulator read-out (ACC family)."""
    return sat(rnd_shift(acc, s, rounding), 16)
