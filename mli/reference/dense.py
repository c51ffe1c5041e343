"""The dense core shared by FC, basic RNN and LSTM (SPEC sections 4 and 5)."""

import numpy as np

from .fxmath import (KIND_BITS, asr32, check_rounding, exact, floor_shift, read16,
                     sat, to_container)


def _ints(name, a, bits):
    """`a` as an int64 array after checking that it fits `bits`-bit containers."""
    a = np.asarray(a)
    if a.size and a.dtype.kind not in "iuO":
        raise TypeError(f"{name}: integer data expected, got dtype {a.dtype}")
    a = a.astype(np.int64)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if a.size and (a.min() < lo or a.max() > hi):
        raise ValueError(f"{name}: values outside the {bits}-bit container")
    return a


def _part(acc, v, w, singles):
    """Add one part (input or state) to the accumulators of every row, step
    by step in MLI's loop shape, clamping to 40 bits after every step (SPEC
    2.3 and 4): with `singles` each element is a step; otherwise the first
    L mod 4 elements one by one, then pairs whose two products are added to
    each other first.  Every value stays below 2^40 + 2^31: int64 is exact."""
    lo, hi = -(1 << 39), (1 << 39) - 1
    acc = np.asarray(acc, dtype=np.int64)
    first = v.size if singles else v.size % 4
    for j in range(first):
        acc = np.clip(acc + w[:, j] * v[j], lo, hi)
    for j in range(first, v.size - 1, 2):
        acc = np.clip(acc + (w[:, j] * v[j] + w[:, j + 1] * v[j + 1]), lo, hi)
    return exact(acc)


def dense(kind, x, f_in, w, f_w, b, f_b, f_out, state=None, f_state=None,
          rounding="convergent"):
    """Dense core: ``y = b + W [x; state]`` with MLI's shifts and rounding.

    Parameters
    ----------
    kind : {"fx8", "fx16", "fx8w16d"}
        fx16 uses the 40-bit accumulator model (in-to-state shift floors,
        output read-out is ACC-family rounding); fx8 / fx8w16d use the 32-bit
        one (every shift is a rounding, saturating ``ASR32``).
    x : array_like of int
        Input, flattened to N values, frac `f_in`.
    f_in : int
    w : array_like of int, shape (K, N + S)
        Weights (row k: N input weights then S state weights), frac `f_w`.
    f_w : int
    b : array_like of int, K values
        Bias, frac `f_b` (``f_b <= f_in + f_w`` for valid calls).
    f_b : int
    f_out : int
        Output frac bits.
    state : array_like of int, optional
        State vector (S values).  Without it there is no in-to-state step
        and ``out_shift = f_in + f_w - f_out`` (fully connected).
    f_state : int, optional
        Frac bits of `state`; then ``out_shift = f_state + f_w - f_out``.
    rounding : {"convergent", "up"}

    Returns
    -------
    numpy.ndarray, shape (K,)
        int8 for fx8, int16 otherwise, frac `f_out`.
    """
    check_rounding(rounding)
    if kind not in KIND_BITS:
        raise ValueError(f"kind must be one of {tuple(KIND_BITS)}, got {kind!r}")
    dbits, wbits = KIND_BITS[kind]
    x = _ints("x", x, dbits).reshape(-1)
    h = None if state is None else _ints("state", state, dbits).reshape(-1)
    b = _ints("b", b, wbits).reshape(-1)
    w = _ints("w", w, wbits)
    n, s, k = x.size, 0 if h is None else h.size, b.size
    if w.ndim != 2 or w.shape != (k, n + s):
        raise ValueError(f"w: expected shape ({k}, {n + s}), got {w.shape}")
    if h is not None and f_state is None:
        raise ValueError("f_state is required with state")

    bias_shift = int(f_in) + int(f_w) - int(f_b)
    if h is None:
        out_shift = int(f_in) + int(f_w) - int(f_out)
    else:
        in_to_state = int(f_in) - int(f_state)
        out_shift = int(f_state) + int(f_w) - int(f_out)

    singles = n < 8 and s < 8                            # MLI's loop shape
    if kind == "fx16":                                   # 40-bit accumulator A
        acc = _part(sat(floor_shift(b, -bias_shift), 40), x, w[:, :n], singles)
        if h is not None:
            acc = _part(sat(floor_shift(acc, in_to_state), 40), h, w[:, n:], singles)
        y = read16(acc, out_shift, rounding)
    else:                                                # 32-bit register, ACC0 with guard bits
        acc = sat(_part(asr32(b, -bias_shift, rounding), x, w[:, :n], singles), 32)
        if h is not None:
            acc = sat(_part(asr32(acc, in_to_state, rounding), h, w[:, n:], singles), 32)
        y = sat(asr32(acc, out_shift, rounding), dbits)
    return to_container(y, dbits)


def fully_connected(kind, x, f_in, w, f_w, b, f_b, f_out, rounding="convergent", *,
                    row_stride=None):
    """``mli_krn_fully_connected_{fx8,fx16,fx8w16d}`` (SPEC 5).

    Parameters
    ----------
    kind, x, f_in, f_w, b, f_b, f_out, rounding
        As for :func:`dense` (`x` may have any shape; N = ``x.size``).
    w : array_like of int
        Weights, shape (K, N); or, with `row_stride`, the flat weight buffer.
    row_stride : int, optional
        Elements between row starts in the flat buffer `w`
        (``weights.mem_stride[0]``); row k is ``w[k*R : k*R + N]``.

    Returns
    -------
    numpy.ndarray, shape (K,)
        int8 for fx8, int16 otherwise, frac `f_out`.
    """
    if row_stride is not None:
        flat = np.asarray(w).reshape(-1)
        n, k, r = np.size(x), np.size(b), int(row_stride)
        if r < n or (k and (k - 1) * r + n > flat.size):
            raise ValueError(f"w: buffer of {flat.size} too small for {k} rows of "
                             f"{n} with stride {r}")
        w = np.stack([flat[i * r:i * r + n] for i in range(k)]) if k else flat[:0].reshape(0, n)
    return dense(kind, x, f_in, w, f_w, b, f_b, f_out, rounding=rounding)
