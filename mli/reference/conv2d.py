"""Slow twins of MLI 1.1's fx convolutions (``mli_krn_conv2d_chw_*``,
``mli_krn_depthwise_conv2d_chw_*``, SPEC_MLI11_MORE 2 and 4), for calls
whose input is at least the kernel and whose sums stay away from the
accumulator's limits (there the variants differ, SPEC_MLI11_MORE 3.4):
windows clipped to the input (zero padding), the bias shifted to the
products' format, one rounding to the output's frac bits, the ReLU limits of
the output's format."""
import numpy as np

from .fxmath import rnd_shift, sat
from .pool import out_size

__all__ = ["conv2d_chw", "depthwise_conv2d_chw", "relu_limits"]


def relu_limits(relu_type, f_out, bits):
    """[lo, hi] of cfg.relu in the output's format (SPEC_MLI11_MORE 2), for f_out <= 24."""
    mn, mx = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    one = 1 << f_out
    return {1: (0, mx), 2: (max(-one, mn), min(one, mx)), 3: (0, min(6 * one, mx))}.get(int(relu_type), (mn, mx))


def _conv(x, w, b, f_in, f_w, f_b, f_out, kind, stride_width, stride_height, padding_left, padding_right,
          padding_top, padding_bottom, relu, rounding, depthwise):
    x, w, b = np.asarray(x), np.asarray(w), np.asarray(b)
    c_in, h, wd = x.shape
    oc, _, kh, kw = w.shape
    ho = out_size(h, kh, padding_top, padding_bottom, stride_height)
    wo = out_size(wd, kw, padding_left, padding_right, stride_width)
    out_bits = 8 if kind == "fx8" else 16
    acc_bits = 40 if kind == "fx16" else 32
    lo, hi = relu_limits(relu, f_out, out_bits)
    y = np.zeros((oc, ho, wo), np.int8 if out_bits == 8 else np.int16)
    for o in range(oc):
        bias = int(sat(np.array([int(b[o]) << (f_in + f_w - f_b)], dtype=object), acc_bits)[0])
        for r in range(ho):
            for c in range(wo):
                acc = bias
                for i in range(kh):
                    yy = r * stride_height - padding_top + i
                    if not 0 <= yy < h:
                        continue
                    for j in range(kw):
                        xx = c * stride_width - padding_left + j
                        if not 0 <= xx < wd:
                            continue
                        if depthwise:
                            acc += int(x[o, yy, xx]) * int(w[o, 0, i, j])
                        else:
                            acc += sum(int(x[k, yy, xx]) * int(w[o, k, i, j]) for k in range(c_in))
                v = int(rnd_shift(np.array([acc], dtype=object), f_in + f_w - f_out, rounding)[0])
                y[o, r, c] = min(max(v, lo), hi)
    return y


def conv2d_chw(x, w, b, f_in, f_w, f_b, f_out, kind, stride_width=1, stride_height=1, padding_left=0,
               padding_right=0, padding_top=0, padding_bottom=0, relu=0, rounding="convergent"):
    """x [C, H, W], w [OC, C, KH, KW], b [OC] -> [OC, Ho, Wo] (kind fx8, fx16 or fx8w16d)."""
    return _conv(x, w, b, f_in, f_w, f_b, f_out, kind, stride_width, stride_height, padding_left, padding_right,
                 padding_top, padding_bottom, relu, rounding, False)


def depthwise_conv2d_chw(x, w, b, f_in, f_w, f_b, f_out, kind, stride_width=1, stride_height=1, padding_left=0,
                         padding_right=0, padding_top=0, padding_bottom=0, relu=0, rounding="convergent"):
    """x [C, H, W], w [C, 1, KH, KW], b [C] -> [C, Ho, Wo]: channel c with weights c."""
    return _conv(x, w, b, f_in, f_w, f_b, f_out, kind, stride_width, stride_height, padding_left, padding_right,
                 padding_top, padding_bottom, relu, rounding, True)
