"""The sa8 kernels of MLI 1.1 (SPEC_MLI11_MORE section 5):
``mli_krn_conv2d_nhwc_sa8_sa8_sa32[_<variant>]``,
``mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32[_<variant>]`` and
``mli_krn_fully_connected_sa8_sa8_sa32``.

A value q of an sa8 tensor stands for (q - zero_point) * scale / 2^sfb.
The arguments are the raw arrays plus the quantization parameters as plain
ints: ``in_zp, in_scale, in_sfb`` (per tensor), the weights' scales (one
per output channel for the convolutions, one for FC) and frac bits, the
output's ``out_zp, out_scale, out_sfb``.  The weights' zero points and the
bias's scale are never used by MLI's arithmetic (only checked).
"""

import numpy as np

from .conv import RELU_1, RELU_6, RELU_GEN, RELU_NONE, _wrap, out_size
from .fxmath import check_rounding, rnd_shift
from .pool import _check_variant


def _sat(v, bits):
    return min(max(v, -(1 << (bits - 1))), (1 << (bits - 1)) - 1)


def _arr(name, a, bits, ndim=None):
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name}: integer data expected, got dtype {a.dtype}")
    a = a.astype(np.int64)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name}: {ndim} dimensions expected, got shape {a.shape}")
    if a.size and (a.min() < -(1 << (bits - 1)) or a.max() >= 1 << (bits - 1)):
        raise ValueError(f"{name}: values outside the {bits}-bit container")
    return a


def scale_ratio(in_scale, out_scale):
    """SAT_32((in_scale * 2^30) / out_scale), a 64-bit C division (toward zero)."""
    num, den = int(in_scale) << 30, int(out_scale)
    if den == 0:
        raise ValueError("out_scale 0: a division by zero in MLI")
    q = abs(num) // abs(den)
    return _sat(q if (num < 0) == (den < 0) else -q, 32)


def out_mul(ratio, w_scale, rounding="convergent"):
    """SAT_32(RND(ratio * w_scale, 32)): one output channel's multiplier."""
    return _sat(int(rnd_shift(int(ratio) * int(w_scale), 32, rounding)), 32)


def _c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def relu_limits(relu_type, out_zp, out_scale, out_sfb):
    """(lo, hi) of an sa8 convolution's ReLU in the output's int8 domain:
    GEN [zp, 127], RELU_6 [zp, min(zp + (6 << sfb) / scale, 127)], RELU_1
    [max(zp - (1 << sfb) / scale, -128), min(zp + (1 << sfb) / scale, 127)],
    other types [-128, 127]; the quotients are 64-bit C divisions truncated
    to int, the sums C int, the limits stored in 16 and then 8 bits."""
    zp, scale, sfb = int(out_zp), int(out_scale), int(out_sfb)
    if scale == 0 or not 0 <= sfb < 60:
        raise ValueError("an output scale of 0 or a scale frac outside [0, 60): not modelled")
    unit = lambda c: _wrap(_c_div(c << sfb, scale), 32)  # noqa: E731
    lo, hi = -128, 127
    if relu_type == RELU_GEN:
        lo = zp
    elif relu_type == RELU_6:
        lo, hi = zp, min(_wrap(unit(6) + zp, 32), 127)
    elif relu_type == RELU_1:
        lo, hi = max(_wrap(zp - unit(1), 32), -128), min(_wrap(unit(1) + zp, 32), 127)
    return _wrap(_wrap(lo, 16), 8), _wrap(_wrap(hi, 16), 8)


def _requant(acc, mul, shift, out_zp, lo, hi, rounding):
    """SAT_16(RND(acc * mul, shift)), SAT_16(+ out_zp), then min(., hi), max(., lo)."""
    y = _sat(int(rnd_shift(acc * mul, shift, rounding)), 16)
    y = _sat(y + int(out_zp), 16)
    return max(min(y, hi), lo)


def _beyond_input(w, zp, b, mul, shift, out_zp, lo, hi, rounding, p, sw):
    """The output of a 1x1 loop step whose pixel `p` lies beyond the input:
    MLI reads whatever follows the buffer.  Defined when every int8 value
    there gives the same output (the read-out is monotonic in the sum while
    the bias add does not wrap); else ValueError."""
    sums = [sum(min(-128 * v, 127 * v) for v in w), sum(max(-128 * v, 127 * v) for v in w)]
    accs = [s - zp * sum(w) + b for s in sums]
    ys = {_requant(a, mul, shift, out_zp, lo, hi, rounding) for a in accs}
    if len(ys) == 1 and all(-2**31 <= a < 2**31 for a in accs):
        return ys.pop()
    raise ValueError(f"k1x1_nopad with stride_width {sw} reads pixel {p} beyond the input, and the output "
                     "depends on what it holds (SPEC_MLI11_MORE 3.6)")


def _conv(depthwise, x, in_zp, in_scale, in_sfb, w, w_scales, w_sfb, b, out_zp, out_scale, out_sfb,
          stride_height, stride_width, padding, relu_type, variant, rounding):
    check_rounding(rounding)
    x = _arr("x", x, 8, 3)
    w = _arr("w", w, 8, 4)
    b = _arr("b", b, 32, 1)
    H, W, C = x.shape
    if depthwise:
        one, KH, KW, OC = w.shape
        if one != 1 or OC % C:
            raise ValueError(f"SHAPE_MISMATCH: weights {w.shape} for {C} input channels")
        m = OC // C
    else:
        OC, KH, KW, wc = w.shape
        if wc != C:
            raise ValueError(f"SHAPE_MISMATCH: weights {w.shape} for {C} input channels")
    w_scales = [int(s) for s in np.asarray(w_scales).reshape(-1)]
    if b.size != OC or len(w_scales) != OC:
        raise ValueError(f"SHAPE_MISMATCH: {OC} output channels, bias {b.size}, scales {len(w_scales)}")
    if int(in_zp) == -32768 or int(out_zp) == -32768:
        raise ValueError("INCOMPATEBLE_TENSORS: a zero point of -32768")
    padding = tuple(int(p) for p in padding)
    pt, pb, pl, pr = padding
    sh, sw = int(stride_height), int(stride_width)
    if sh < 1 or sw < 1 or pt >= KH or pb >= KH or pl >= KW or pr >= KW:
        raise ValueError("BAD_FUNC_CFG: strides >= 1 and each padding smaller than the kernel")
    if H < KH or W < KW:
        raise ValueError("input smaller than the kernel: undefined in MLI (SPEC_MLI11_MORE 2)")
    family = "depthwise_conv2d_hwcn" if depthwise else "conv2d_nhwc"
    variant = _check_variant(family, variant, KW, KH, sh, sw, padding)
    Ho, Wo = out_size(H, pt, pb, KH, sh), out_size(W, pl, pr, KW, sw)
    ratio = scale_ratio(in_scale, out_scale)
    muls = [out_mul(ratio, s, rounding) for s in w_scales]
    shift = int(in_sfb) + int(w_sfb) - int(out_sfb) - 2
    lo, hi = relu_limits(int(relu_type), out_zp, out_scale, out_sfb)
    xi, wi = x.tolist(), w.tolist()
    zp = int(in_zp)
    y = np.zeros((Ho, Wo, OC), dtype=np.int64)
    for r in range(Ho):
        for c in range(Wo):
            y0, x0 = r * sh - pt, c * sw - pl
            for o in range(OC):
                if variant == "k1x1_nopad":   # the pointwise loop and its stride bug (SPEC_MLI11_MORE 3.6)
                    p = (o * Ho + r) * (sw - 1) * Wo + r * sh * W + c * sw
                    if p >= H * W:
                        y[r, c, o] = _beyond_input(wi[o][0][0], zp, int(b[o]), muls[o], shift, out_zp, lo, hi,
                                                   rounding, p, sw)
                        continue
                    acc = sum((xi[p // W][p % W][ch] - zp) * wi[o][0][0][ch] for ch in range(C))
                else:
                    if depthwise:
                        if C & 1 and o >= (C - 1) * m:
                            ic = C - 1
                        else:
                            j, rem = divmod(o, 2 * m)
                            ic = 2 * j + rem % 2
                    acc = 0
                    for ky in range(max(-y0, 0), min(KH, H - y0)):
                        for kx in range(max(-x0, 0), min(KW, W - x0)):
                            if depthwise:
                                acc += (xi[y0 + ky][x0 + kx][ic] - zp) * wi[0][ky][kx][o]
                            else:
                                acc += sum((xi[y0 + ky][x0 + kx][ch] - zp) * wi[o][ky][kx][ch] for ch in range(C))
                acc = _wrap(_wrap(acc, 32) + int(b[o]), 32)
                y[r, c, o] = _requant(acc, muls[o], shift, out_zp, lo, hi, rounding)
    return y.astype(np.int8)


def conv2d_nhwc(x, in_zp, in_scale, in_sfb, w, w_scales, w_sfb, b, out_zp, out_scale, out_sfb,
                stride_height=1, stride_width=1, padding=(0, 0, 0, 0), relu_type=RELU_NONE, variant="",
                rounding="convergent"):
    """``mli_krn_conv2d_nhwc_sa8_sa8_sa32[_<variant>]`` (SPEC_MLI11_MORE 5).

    ::

        ratio     = SAT_32((in_scale * 2^30) / out_scale)
        out_shift = in_sfb + w_sfb - out_sfb - 2
        out_mul   = SAT_32(RND(ratio * w_scales[o], 32))
        acc       = sum over the clipped window of (x - in_zp) * w     (32 bits)
        acc       = acc + b[o]                                         (C int, wraps)
        y         = SAT_16(SAT_16(RND(acc * out_mul, out_shift)) + out_zp), clamped to the ReLU

    Parameters
    ----------
    x : array_like of int8, shape (H, W, C)
    in_zp, in_scale, in_sfb : int
        The input's per-tensor quantization.
    w : array_like of int8, shape (OC, KH, KW, C)
    w_scales : sequence of OC ints
        The weights' per-output-channel scales; `w_sfb` their frac bits.
    b : array_like of int32, shape (OC,)
    out_zp, out_scale, out_sfb : int
        The output tensor's parameters (left unchanged by MLI).
    stride_height, stride_width, padding, relu_type
        The ``mli_conv2d_cfg`` (padding as (top, bottom, left, right)).
    variant : str
        "" (the dispatcher), "generic" or a suffix inside its domain.  The
        dispatcher sends every 1x1 call without padding to ``k1x1_nopad``,
        whose stride bug (stride_width > 1) is modelled: output (o, r, c)
        reads input pixel ``(o*Ho + r)*(stride_width - 1)*Wo +
        r*stride_height*W + c*stride_width``; for a pixel beyond the input
        (what MLI reads there is whatever follows the buffer) the output
        is returned where every value those bytes could hold gives the same
        output, else ``ValueError``.
    rounding : {"convergent", "up"}

    Returns
    -------
    numpy.ndarray of int8, shape (Ho, Wo, OC).
    """
    return _conv(False, x, in_zp, in_scale, in_sfb, w, w_scales, w_sfb, b, out_zp, out_scale, out_sfb,
                 stride_height, stride_width, padding, relu_type, variant, rounding)


def depthwise_conv2d_hwcn(x, in_zp, in_scale, in_sfb, w, w_scales, w_sfb, b, out_zp, out_scale, out_sfb,
                          stride_height=1, stride_width=1, padding=(0, 0, 0, 0), relu_type=RELU_NONE, variant="",
                          rounding="convergent"):
    """``mli_krn_depthwise_conv2d_hwcn_sa8_sa8_sa32[_<variant>]``: as
    :func:`conv2d_nhwc` with weights of shape (1, KH, KW, OC), OC = m * C.
    Input channels go in pairs (2j, 2j+1): output 2j*m + 2k + e (k < m,
    e = 0 or 1) uses input 2j + e; with an odd C the last input channel
    feeds the last m outputs.  Weights, bias and scales are indexed by the
    output channel."""
    return _conv(True, x, in_zp, in_scale, in_sfb, w, w_scales, w_sfb, b, out_zp, out_scale, out_sfb,
                 stride_height, stride_width, padding, relu_type, variant, rounding)


def fully_connected_sa8(x, in_zp, in_scale, in_sfb, w, w_scale, w_sfb, b, out_zp, out_scale, out_sfb,
                        rounding="convergent"):
    """``mli_krn_fully_connected_sa8_sa8_sa32`` (SPEC_MLI11_MORE 5)::

        N = x.size; ratio, out_mul as for :func:`conv2d_nhwc` (one weight scale)
        ls = max(-out_shift, 0), rs = max(out_shift, 0)
        acc = SAT_32(b[k] + sum_i w[k, i] * (x[i] - in_zp))
        acc = SAT_32(acc * 2^ls)
        y   = SAT_8(SAT_16(SAT_16(RND(acc * out_mul, rs)) + out_zp))

    `w` has shape (K, N) (MLI ignores the weights' row stride for N < 8 and
    reads the rows back to back: pass the rows it reads).  No ReLU.

    Returns
    -------
    numpy.ndarray of int8, shape (K,).
    """
    check_rounding(rounding)
    x = _arr("x", x, 8).reshape(-1)
    w = _arr("w", w, 8, 2)
    b = _arr("b", b, 32, 1)
    K, N = w.shape
    if N != x.size or b.size != K:
        raise ValueError(f"SHAPE_MISMATCH: w {w.shape}, x of {x.size}, b of {b.size}")
    ratio = scale_ratio(in_scale, out_scale)
    mul = out_mul(ratio, w_scale, rounding)
    shift = int(in_sfb) + int(w_sfb) - int(out_sfb) - 2
    ls, rs = max(-shift, 0), max(shift, 0)
    xi, zp = [int(v) for v in x], int(in_zp)
    y = []
    for k in range(K):
        acc = _sat(int(b[k]) + sum(int(wv) * (xv - zp) for wv, xv in zip(w[k], xi)), 32)
        acc = _sat(acc << ls, 32)
        v = _sat(_sat(int(rnd_shift(acc * mul, rs, rounding)), 16) + int(out_zp), 16)
        y.append(_sat(v, 8))
    return np.array(y, dtype=np.int8)
