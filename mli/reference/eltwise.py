"""Element-wise add / sub / mul / max / min (SPEC section 8)."""

import numpy as np

from .fxmath import asr32, check_rounding, data_bits, exact, read16, sat, to_container

OPS = ("add", "sub", "mul", "max", "min")


def eltwise(op, kind, a, f_a, b, f_b, f_out, rounding="convergent"):
    """``mli_krn_eltwise_{add,sub,mul,max,min}_{fx8,fx16}``.

    Parameters
    ----------
    op : {"add", "sub", "mul", "max", "min"}
    kind : {"fx8", "fx16"}
        8- or 16-bit data ("fx8w16d" is treated as 16-bit).
    a, b : array_like of int
        Operands ``in1`` and ``in2`` with frac bits `f_a`, `f_b`.  If one of
        them has a single element (e.g. a 0-d array, MLI's rank-0 scalar) it
        is combined with every element of the other, keeping the operand
        order (``sub`` with a scalar `a` is scalar minus vector).  Otherwise
        both must have the same number of elements.
    f_a, f_b : int
        add / sub / max / min require ``f_a == f_b`` (no rescaling is done).
    f_out : int
        Requested output frac; used by ``mul`` only
        (``shift = f_a + f_b - f_out``).
    rounding : {"convergent", "up"}
        ``mul`` only: ACC family for 16-bit, SHIFT family for 8-bit data.

    Returns
    -------
    y : numpy.ndarray
        int8 (fx8) or int16.  Shape of `a` if it has more elements than `b`,
        else the shape of `b` (MLI gives ties to ``in2``).
    f_y : int
        Output frac bits: `f_a` for add / sub / max / min (MLI overwrites the
        output frac with ``in1``'s), `f_out` for mul.

    Raises
    ------
    ValueError
        Unknown `op`, different element counts without a single-element
        operand, or different frac bits for add / sub / max / min.
    """
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    check_rounding(rounding)
    bits = data_bits(kind)
    ea, eb = exact(a), exact(b)
    if ea.size != eb.size and 1 not in (ea.size, eb.size):
        raise ValueError(f"eltwise {op}: {ea.size} and {eb.size} elements cannot be combined")
    if op != "mul" and int(f_a) != int(f_b):
        raise ValueError(f"eltwise {op}: frac bits differ ({f_a} vs {f_b})")
    shape = ea.shape if ea.size > eb.size else eb.shape
    n = max(ea.size, eb.size)
    va = np.broadcast_to(ea.reshape(-1), (n,)) if ea.size == 1 else ea.reshape(-1)
    vb = np.broadcast_to(eb.reshape(-1), (n,)) if eb.size == 1 else eb.reshape(-1)

    if op == "add":
        y, f_y = sat(va + vb, bits), int(f_a)
    elif op == "sub":
        y, f_y = sat(va - vb, bits), int(f_a)
    elif op == "max":
        y, f_y = np.maximum(va, vb), int(f_a)
    elif op == "min":
        y, f_y = np.minimum(va, vb), int(f_a)
    else:
        shift = int(f_a) + int(f_b) - int(f_out)
        if bits == 16:
            y = read16(va * vb, shift, rounding)
        else:
            y = sat(asr32(va * vb, shift, rounding), 8)
        f_y = int(f_out)
    return to_container(y, bits).reshape(shape), f_y
