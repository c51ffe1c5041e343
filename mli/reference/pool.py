"""Slow twins of MLI 1.1's pooling (``mli_krn_{max,ave}pool_{chw,hwc}_*``,
SPEC_MLI11_MORE 2 and 6), for calls whose input is at least the kernel in
both directions: windows clipped to the input (padding excluded), the max,
or the average by MLI's multiplier and shift (not a division)."""
import numpy as np

from .fxmath import rnd_shift, sat

__all__ = ["out_size", "maxpool", "avepool", "ave_mul_shift"]


def out_size(n, k, before, after, stride):
    """ceil((n + before + after - k + 1) / stride), as MLI computes it."""
    num = n + before + after - k + 1
    return (num + stride - 1) // stride


def ave_mul_shift(k):
    """(mul, shift) of MLI's average over k elements (SPEC_MLI11_MORE 6)."""
    if k < 32:
        if k & (k - 1) == 0:
            return 1, k.bit_length() - 1
        s = 14 + (k - 1).bit_length()
        return (1 << s) // k, s
    s = 46 - ((1 << 31) // k).bit_length()
    return (1 << s) // k, s


def _windows(h, w, kh, kw, sh, sw, pt, pb, pl, pr):
    for r in range(out_size(h, kh, pt, pb, sh)):
        y0 = r * sh - pt
        rows = range(max(y0, 0), min(y0 + kh, h))
        for c in range(out_size(w, kw, pl, pr, sw)):
            x0 = c * sw - pl
            yield r, c, rows, range(max(x0, 0), min(x0 + kw, w))


def _pool(x, kw, kh, sw, sh, pl, pr, pt, pb, hwc, op):
    x = np.asarray(x)
    chw = np.moveaxis(x, -1, 0) if hwc else x
    ch, h, w = chw.shape
    out = np.zeros((ch, out_size(h, kh, pt, pb, sh), out_size(w, kw, pl, pr, sw)), x.dtype)
    for r, c, rows, cols in _windows(h, w, kh, kw, sh, sw, pt, pb, pl, pr):
        win = chw[:, rows.start:rows.stop, cols.start:cols.stop].reshape(ch, -1)
        out[:, r, c] = [op(v) for v in win]
    return np.moveaxis(out, 0, -1).copy() if hwc else out


def maxpool(x, kernel_width, kernel_height, stride_width=1, stride_height=1, padding_left=0, padding_right=0,
            padding_top=0, padding_bottom=0, hwc=False):
    """The maximum over the real elements of each window; x [C, H, W] (or [H, W, C] with hwc)."""
    return _pool(x, kernel_width, kernel_height, stride_width, stride_height, padding_left, padding_right,
                 padding_top, padding_bottom, hwc, lambda v: v.max())


def avepool(x, kernel_width, kernel_height, stride_width=1, stride_height=1, padding_left=0, padding_right=0,
            padding_top=0, padding_bottom=0, hwc=False, rounding="convergent"):
    """SAT_b(RND(sum(x) * mul, shift)) over the real elements of each window."""
    bits = 8 * np.asarray(x).dtype.itemsize

    def ave(v):
        mul, shift = ave_mul_shift(len(v))
        return sat(rnd_shift(np.array([sum(int(a) for a in v) * mul], dtype=object), shift, rounding), bits)[0]
    return _pool(x, kernel_width, kernel_height, stride_width, stride_height, padding_left, padding_right,
                 padding_top, padding_bottom, hwc, ave)
