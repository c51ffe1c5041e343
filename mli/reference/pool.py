"""Max and average pooling, chw and hwc, fx8 / fx16 / sa8
(SPEC_MLI11_MORE sections 2, 3 and 6): ``mli_krn_{max,ave}pool_{chw,hwc}_*``
and their specialisations.

Padding is exclusion: a window is clipped to the input, and the padded
positions are not part of it.  A max ignores them; an average multiplies the
sum of the k real elements by ``mul`` and shifts by ``shift``
(:func:`avg_mul_shift`), rounding by the DSP mode.  The products go one
MAC step at a time into a 40-bit accumulator that saturates after every
step (:func:`ave_window`); from about 512 elements on a partial sum can
reach 2^39, and then the order of the steps shows.  Inside its domain every
specialisation runs the same window loop as the generic function, so
`variant` only selects which calls are valid.
"""

import numpy as np

from .. import _variants_more as VM
from .conv import out_size
from .fxmath import check_rounding, rnd_shift

POOL_BITS = {"fx8": 8, "fx16": 16, "sa8": 8}


def avg_mul_shift(k):
    """(mul, shift) of an average over k elements (SPEC_MLI11_MORE 6):
    (1, log2 k) for a power of 2 below 32; (floor(2^s / k), s) with
    s = 14 + ceil(log2 k) for other k below 32, and with
    s = 46 - bitlength(floor(2^31 / k)) from 32 on."""
    k = int(k)
    if k < 1:
        raise ValueError("an average over no element")
    if k < 32:
        lg = (k - 1).bit_length()
        if 1 << lg == k:
            return 1, lg
        s = 14 + lg
    else:
        s = 46 - ((1 << 31) // k).bit_length()
    return (1 << s) // k, s


def ave_window(rows, bits, layout, rounding="convergent"):
    """The average of one clipped window (`rows`: its rows of real elements)
    as MLI's loop computes it: acc = 0, then per row, for chw an odd first
    element alone and the rest in pairs ((x_j + x_j+1) * mul, one step), for
    hwc one element per step, each step ``SAT_40(acc + x * mul)``; then
    ``SAT_bits(RND(acc, shift))``."""
    k = sum(len(r) for r in rows)
    mul, shift = avg_mul_shift(k)
    lo, hi = -(1 << 39), (1 << 39) - 1
    acc = 0
    for r in rows:
        if layout == "hwc":
            steps = [[v] for v in r]
        else:
            first = len(r) & 1
            steps = [r[:1]] * first + [r[j:j + 2] for j in range(first, len(r), 2)]
        for st in steps:
            acc = min(max(acc + sum(st) * mul, lo), hi)
    v = int(rnd_shift(acc, shift, rounding))
    return min(max(v, -(1 << (bits - 1))), (1 << (bits - 1)) - 1)


def _check_variant(family, variant, kw, kh, sh, sw, padding):
    """The variant to run ("" = the dispatcher's pick); a specialisation
    must be called inside its dispatcher condition."""
    variants = VM.VARIANT_FAMILIES[family][2]
    pick = VM.dispatch(family, kw, kh, sw, sh, *padding)
    if variant == "":
        return pick
    v = {x.suffix: x for x in variants}.get(variant)
    if v is None:
        raise ValueError(f"{family} has no variant {variant!r}")
    if variant == "generic":
        return variant
    pt, pb, pl, pr = padding
    inside = ((not v.kernel_width or v.kernel_width == kw) and (not v.kernel_height or v.kernel_height == kh)
              and (not v.stride or (sw, sh) == (v.stride, v.stride)))
    if v.when == "zero":
        inside = inside and not any(padding)
    elif v.when == "same":
        inside = inside and (pt <= (kh - 1) // 2 and pb <= kh // 2 and pl <= (kw - 1) // 2 and pr <= kw // 2)
    if not inside:
        raise ValueError(f"{variant} called outside its domain: undefined in MLI (SPEC_MLI11_MORE 3.5)")
    return variant


def _pool(op, layout, kind, x, kernel_height, kernel_width, stride_height, stride_width, padding, variant,
          rounding):
    check_rounding(rounding)
    if kind not in POOL_BITS or (kind == "sa8" and layout == "chw"):
        raise ValueError(f"no {op}pool_{layout} for kind {kind!r}")
    bits = POOL_BITS[kind]
    x = np.asarray(x)
    if x.dtype.kind not in "iu" or x.ndim != 3:
        raise ValueError(f"x: a 3-dimensional integer array expected, got {x.dtype} {x.shape}")
    x = x.astype(np.int64)
    if x.size and (x.min() < -(1 << (bits - 1)) or x.max() >= 1 << (bits - 1)):
        raise ValueError(f"x: values outside the {bits}-bit container")
    xc = x if layout == "chw" else np.moveaxis(x, 2, 0)
    C, H, W = xc.shape
    kh, kw, sh, sw = int(kernel_height), int(kernel_width), int(stride_height), int(stride_width)
    padding = tuple(int(p) for p in padding)
    pt, pb, pl, pr = padding
    if kh < 1 or kw < 1 or sh < 1 or sw < 1 or pt >= kh or pb >= kh or pl >= kw or pr >= kw:
        raise ValueError("BAD_FUNC_CFG: kernel and strides >= 1, each padding smaller than the kernel")
    if H < kh or W < kw:
        raise ValueError("input smaller than the kernel: undefined in MLI (SPEC_MLI11_MORE 2)")
    _check_variant(f"{op}pool_{layout}", variant, kw, kh, sh, sw, padding)
    Ho, Wo = out_size(H, pt, pb, kh, sh), out_size(W, pl, pr, kw, sw)
    y = np.zeros((C, Ho, Wo), dtype=np.int64)
    for r in range(Ho):
        y0, y1 = max(r * sh - pt, 0), min(r * sh - pt + kh, H)
        for c in range(Wo):
            x0, x1 = max(c * sw - pl, 0), min(c * sw - pl + kw, W)
            for ch in range(C):
                rows = [[int(v) for v in row] for row in xc[ch, y0:y1, x0:x1]]
                if op == "max":
                    y[ch, r, c] = max(max(row) for row in rows)
                else:
                    y[ch, r, c] = ave_window(rows, bits, layout, rounding)
    y = y if layout == "chw" else np.moveaxis(y, 0, 2)
    return np.ascontiguousarray(y).astype(np.int8 if bits == 8 else np.int16)


def maxpool_chw(kind, x, kernel_height, kernel_width, stride_height=1, stride_width=1, padding=(0, 0, 0, 0),
                variant="", rounding="convergent"):
    """``mli_krn_maxpool_chw_<kind>[_<variant>]``: the maximum over the real
    (non-padded) elements of each window.

    Parameters
    ----------
    kind : {"fx8", "fx16"}
    x : array_like of int, shape (C, H, W)
    kernel_height, kernel_width, stride_height, stride_width : int
        The ``mli_pool_cfg`` fields.
    padding : (top, bottom, left, right)
    variant : str
        "" (the dispatcher), "generic" or a specialisation suffix (inside
        its domain).
    rounding : {"convergent", "up"}
        Without effect (no arithmetic); accepted for uniformity.

    Returns
    -------
    numpy.ndarray, shape (C, Ho, Wo), the input's dtype; frac bits = the input's.
    """
    return _pool("max", "chw", kind, x, kernel_height, kernel_width, stride_height, stride_width, padding,
                 variant, rounding)


def avepool_chw(kind, x, kernel_height, kernel_width, stride_height=1, stride_width=1, padding=(0, 0, 0, 0),
                variant="", rounding="convergent"):
    """``mli_krn_avepool_chw_<kind>[_<variant>]``: per window of k real
    elements, ``SAT_b(RND(sum * mul, shift))`` with :func:`avg_mul_shift`
    (not a division), the sum taken in MLI's 40-bit steps
    (:func:`ave_window`).  Parameters and result as :func:`maxpool_chw`."""
    return _pool("ave", "chw", kind, x, kernel_height, kernel_width, stride_height, stride_width, padding,
                 variant, rounding)


def maxpool_hwc(kind, x, kernel_height, kernel_width, stride_height=1, stride_width=1, padding=(0, 0, 0, 0),
                variant="", rounding="convergent"):
    """``mli_krn_maxpool_hwc_<kind>[_<variant>]``, kind "fx8", "fx16" or
    "sa8" (raw int8 values; zero point and scale pass through).  `x` has
    shape (H, W, C), the result (Ho, Wo, C)."""
    return _pool("max", "hwc", kind, x, kernel_height, kernel_width, stride_height, stride_width, padding,
                 variant, rounding)


def avepool_hwc(kind, x, kernel_height, kernel_width, stride_height=1, stride_width=1, padding=(0, 0, 0, 0),
                variant="", rounding="convergent"):
    """``mli_krn_avepool_hwc_<kind>[_<variant>]``: as :func:`avepool_chw` on
    (H, W, C) data; "sa8" averages the raw int8 values."""
    return _pool("ave", "hwc", kind, x, kernel_height, kernel_width, stride_height, stride_width, padding,
                 variant, rounding)
