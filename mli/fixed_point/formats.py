"""Fixed-point formats of the whole-model mode: the MLI rule for frac bits, and
quantizing / dequantizing numpy arrays the way MLI's float conversion helper does."""

from __future__ import annotations

import math
from typing import Tuple

import numpy as np

__all__ = ["BITS", "DATA_EL", "WEIGHT_EL", "KINDS", "frac_for", "quantize", "dequantize",
           "int_range", "MAX_FRAC"]

BITS = {"fx8": 8, "fx16": 16}
#: kernel kind -> element type of its data / of its weights
DATA_EL = {"fx16": "fx16", "fx8w16d": "fx16", "fx8": "fx8"}
WEIGHT_EL = {"fx16": "fx16", "fx8w16d": "fx8", "fx8": "fx8"}
KINDS = ("fx16", "fx8w16d", "fx8")
#: the largest frac bits chosen (a range of zeros would otherwise have no bound)
MAX_FRAC = {"fx8": 15, "fx16": 31}
_DT = {"fx8": np.int8, "fx16": np.int16}


def int_range(el) -> Tuple[int, int]:
    n = BITS[el]
    return -(1 << (n - 1)), (1 << (n - 1)) - 1


def frac_for(lo, hi, el, margin=0) -> int:
    """MLI's rule: the largest frac bits at which every value of [lo, hi] rounds to a
    value of ``el`` without saturating, minus ``margin`` (at least 0, at most
    :data:`MAX_FRAC`)."""
    mn, mx = int_range(el)
    m = max(abs(float(lo)), abs(float(hi)))
    if not math.isfinite(m):
        return 0
    f = MAX_FRAC[el] if m == 0 else min(MAX_FRAC[el], int(math.floor(math.log2(mx / m))) + 1)
    while f > 0 and (math.floor(abs(hi) * 2.0 ** f + 0.5) > mx
                     or math.floor(abs(min(lo, 0.0)) * 2.0 ** f + 0.5) > -mn):
        f -= 1
    return max(0, f - int(margin))


try:        # the clip ufunc itself
    _clip = np._core.umath.clip  # type: ignore[attr-defined]
except AttributeError:           # numpy 1.x
    _clip = np.core.umath.clip  # type: ignore[attr-defined]


def quantize(x, el, frac) -> np.ndarray:
    """Float array -> ``el`` integers at ``frac``: float32 ``2^frac * x``, plus 0.5 with
    the sign of x, truncated toward zero, saturated (MLI's float-to-fx helper).  Exact
    for values already on the grid of ``frac`` (or of a smaller frac)."""
    x = np.asarray(x, np.float32)
    t = np.asarray(np.multiply(np.float32(2.0 ** frac), x))      # (0-d: an array too)
    np.add(t, np.copysign(np.float32(0.5), x), out=t)
    lo, hi = int_range(el)
    _clip(t, np.float32(lo), np.float32(hi), out=t)
    return t.astype(_DT[el])


def dequantize(q, frac) -> np.ndarray:
    """Integers at ``frac`` -> float32 (exact)."""
    return np.multiply(np.asarray(q, np.float32), np.float32(2.0 ** -frac))
