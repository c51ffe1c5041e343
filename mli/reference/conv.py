"""2D convolution and depthwise convolution, fx8 / fx16 / fx8w16d
(SPEC_MLI11_MORE sections 2, 3 and 4): ``mli_krn_conv2d_chw_*`` and its
specialisations, ``mli_krn_depthwise_conv2d_chw_*`` and its
specialisations, ``mli_krn_conv2d_hwc_*``.

Every output is the zero-padded convolution over its window clipped to the
input, summed with MLI's accumulator model: the bias shifted left with
saturation (to 40 bits for fx16, to 32 bits for fx8 / fx8w16d), then one
MAC step after another, each saturating at 40 bits.  Only at the
accumulator limits does the grouping of the products into steps matter,
and there MLI's loop nests differ (SPEC_MLI11_MORE 3.4).  So each output
also gets the *pattern* of the loop that computes it in MLI:

``single``   one product per step (channels, then rows, then columns);
``pairs``    per row, columns (0, 1), (2, 3), ... added together, an odd last alone;
``oddeven``  with an odd column count, column 0 of every row of every
             channel alone first, then the rest of each row in pairs;
``lanes``    the two-outputs-at-a-time loops: one product per step in a
             lane of its own, which for fx8 / fx8w16d is a C int32 that
             **wraps** (fx16: 40 bits, saturating).

Which pattern an output gets depends on the variant's loop nest (its
"core", :data:`mli._variants_conv`) and on where the output lies
(:func:`pattern`).  The twin computes calls inside a variant's domain with
the input at least as large as the kernel; anything else is undefined in
MLI (SPEC_MLI11_MORE 2 and 3.5) and raises ``ValueError``.
"""

import numpy as np

from .. import _variants_conv as VC
from .fxmath import KIND_BITS, check_rounding, rnd_shift

RELU_NONE, RELU_GEN, RELU_1, RELU_6 = 0, 1, 2, 3


def _sat(v, bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return min(max(v, lo), hi)


def _wrap(v, bits):
    """The low `bits` bits of v, two's complement (C's int truncation)."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def relu_limits(relu_type, f_out, bits):
    """(lo, hi) of a convolution's ReLU (SPEC_MLI11_MORE 2): 1 and 6 are C
    int values ``1 << (f mod 32)``, ``6 << (f mod 32)`` (wrapping), clamped
    into the container's range, then truncated to 16 bits; any type other
    than GEN, RELU_1, RELU_6 gives the container's range."""
    mn, mx = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    f = int(f_out) & 31
    one, six = _wrap(1 << f, 32), _wrap(6 << f, 32)
    lo, hi = mn, mx
    if relu_type == RELU_GEN:
        lo = 0
    elif relu_type == RELU_6:
        lo, hi = 0, min(six, mx)
    elif relu_type == RELU_1:
        lo, hi = max(_wrap(-one, 32), mn), min(one, mx)
    return _wrap(lo, 16), _wrap(hi, 16)


def out_size(n, pad_a, pad_b, k, stride):
    """MLI's output size: ceil((n + pad_a + pad_b - k + 1) / stride), in C int."""
    num = n + pad_a + pad_b - k + 1 + stride - 1
    return int(num / stride) if num >= 0 else -int(-num / stride)  # C truncation


def _steps(pattern, prods, ncols):
    """The MAC steps (each a list of products) of one output in `pattern`.
    `prods[ch][r]` is the list of the window row's products, columns in order."""
    steps = []
    if pattern in ("single", "lanes"):
        for ch in prods:
            for row in ch:
                steps += [[p] for p in row]
    elif pattern == "pairs":
        for ch in prods:
            for row in ch:
                steps += [row[j:j + 2] for j in range(0, len(row), 2)]
    elif pattern == "oddeven":
        first = ncols & 1
        if first:
            for ch in prods:
                steps += [[row[0]] for row in ch]
        for ch in prods:
            for row in ch:
                steps += [row[j:j + 2] for j in range(first, len(row), 2)]
    elif pattern == "hwc":     # prods[pos][c]: channel pairs over the window, then an odd last channel
        nc = len(prods[0]) if prods else 0
        for c in range(0, nc - 1, 2):
            steps += [pos[c:c + 2] for pos in prods]
    elif pattern == "hwc_1x1":
        nc = len(prods[0])
        steps += [prods[0][c:c + 2] for c in range(0, nc & ~3, 2)]
        steps += [[prods[0][c]] for c in range(nc & ~3, nc)]
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    return steps


def _accumulate(kind, bias, bias_shift, pattern, prods, ncols):
    """MLI's accumulator after every step of one output (before read-out)."""
    acc40 = kind == "fx16"
    a = _sat(bias << bias_shift, 40 if acc40 else 32)
    for step in _steps(pattern, prods, ncols):
        s = sum(step)
        a = _wrap(a + s, 32) if pattern == "lanes" and not acc40 else _sat(a + s, 40)
    if pattern == "hwc" and prods and len(prods[0]) & 1:     # the odd last channel
        if not acc40:
            a = _sat(a, 32)
        for pos in prods:
            a = _sat(a + pos[-1], 40) if acc40 else _wrap(a + pos[-1], 32)
    return a


def _read_out(kind, a, out_shift, lo, hi, rounding):
    """SAT_16(RND(a, n)) for fx16; SAT_32(RND(SAT_32(a), n)) for the others;
    then min(., hi), max(., lo) and the store into the low container bits."""
    if kind == "fx16":
        y = _sat(int(rnd_shift(a, out_shift, rounding)), 16)
    else:
        y = _sat(int(rnd_shift(_sat(a, 32), out_shift, rounding)), 32)
    y = max(min(y, hi), lo)
    return _wrap(y, KIND_BITS[kind][0])


def _ints(name, a, bits, ndim):
    a = np.asarray(a)
    if a.dtype.kind not in "iuO":
        raise TypeError(f"{name}: integer data expected, got dtype {a.dtype}")
    a = a.astype(np.int64)
    if a.ndim != ndim:
        raise ValueError(f"{name}: {ndim} dimensions expected, got shape {a.shape}")
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if a.size and (a.min() < lo or a.max() > hi):
        raise ValueError(f"{name}: values outside the {bits}-bit container")
    return a


# ------------------------------------------------------------ variants --
def fixes(family, kind, variant):
    """The table row of `variant` of `family` ("conv2d_chw" or
    "depthwise_conv2d_chw") for `kind` as a dict (kw, kh, ch, stride, pad,
    core, fixed_padding); "generic" is the any-stride loop with nothing fixed."""
    if variant == "generic":
        return dict(suffix="generic", kw=0, kh=0, ch=0, stride=0, pad="NONE", core="ANY", fixed_padding=None)
    for row in VC.variants(family, kind):
        if row["suffix"] == variant:
            return row
    raise ValueError(f"{family}_{kind} has no variant {variant!r}")


def matches(row, kw, kh, ch, stride_height, stride_width, padding):
    """The dispatcher's condition of `row` for a call (MLI's if-chain test)."""
    pt, pb, pl, pr = padding
    if row["stride"] and (stride_width, stride_height) != (row["stride"], row["stride"]):
        return False
    if (row["kw"] and kw != row["kw"]) or (row["kh"] and kh != row["kh"]) or (row["ch"] and ch != row["ch"]):
        return False
    if row["pad"] == "NOPAD":
        return padding == (0, 0, 0, 0)
    if row["pad"] == "KRNPAD" and row["kw"] and row["kh"]:
        t, b, l, r = VC.same_padding(row["kw"], row["kh"])
        if row["stride"] == 1:
            return padding == (t, b, l, r)
        return pt <= t and pb <= b and pl <= l and pr <= r
    return True


def pick(family, kind, kw, kh, ch, stride_height, stride_width, padding):
    """The variant suffix MLI 1.1's dispatcher of `family`_`kind` calls."""
    for row in VC.variants(family, kind):
        if matches(row, kw, kh, ch, stride_height, stride_width, tuple(padding)):
            return row["suffix"]
    return "generic"


def pattern(core, fixed_padding, W, out_w, padding, stride_width, left, right):
    """The loop pattern of output column `W` in MLI's loop nest `core`
    ("ANY", "STR1", "K1X1_STR1" or "SIMPLE"); `left` / `right` are the
    columns its window loses to the padding.

    * ANY: windows clipped left or right one product per step, the others
      in column pairs;
    * STR1 (stride 1): clipped windows one product per step when the padding
      is a fixed value of at most 2 on each side, else ``oddeven``; the
      others two outputs at a time in lanes, an odd last one alone;
    * K1X1_STR1: lanes, an odd last column alone;
    * SIMPLE: one product per step.
    """
    pt, pb, pl, pr = padding
    if core == "SIMPLE":
        return "single"
    if core == "ANY":
        return "single" if left or right else "pairs"
    if core == "K1X1_STR1":
        return "lanes" if W < out_w - (out_w & 1) else "single"
    if core == "STR1":
        if stride_width != 1:
            raise ValueError("the stride-1 loop with another stride")
        if left or right:
            return "oddeven" if not fixed_padding or pl > 2 or pr > 2 else "single"
        cols = out_w - pl - pr
        return "lanes" if W - pl < cols - (cols & 1) else "single"
    raise ValueError(f"unknown core {core!r}")


def _fracs(*fracs):
    """MLI 1.1's fx frac bits are uint8."""
    if any(not 0 <= int(f) <= 255 for f in fracs):
        raise ValueError(f"frac bits {fracs}: MLI 1.1 holds them in uint8")


def _conv_chw(family, kind, x, f_in, w, f_w, b, f_b, f_out, stride_height, stride_width, padding,
              relu_type, variant, rounding):
    check_rounding(rounding)
    _fracs(f_in, f_w, f_b, f_out)
    if kind not in KIND_BITS:
        raise ValueError(f"kind must be one of {tuple(KIND_BITS)}, got {kind!r}")
    dbits, wbits = KIND_BITS[kind]
    depthwise = family == "depthwise_conv2d_chw"
    if int(f_b) > int(f_in) + int(f_w):  # MLI's order: types, bias frac, tensors and shapes, cfg
        raise ValueError("INCOMPATEBLE_TENSORS: f_b > f_in + f_w")
    x = _ints("x", x, dbits, 3)
    w = _ints("w", w, wbits, 4)
    b = _ints("b", b, wbits, 1)
    C, H, Wd = x.shape
    OC, wc, KH, KW = w.shape
    if wc != (1 if depthwise else C) or b.size != OC or (depthwise and OC != C):
        raise ValueError(f"SHAPE_MISMATCH: x {x.shape}, w {w.shape}, b {b.shape}")
    padding = tuple(int(p) for p in padding)
    pt, pb, pl, pr = padding
    sh, sw = int(stride_height), int(stride_width)
    if sh < 1 or sw < 1 or pt >= KH or pb >= KH or pl >= KW or pr >= KW:
        raise ValueError("BAD_FUNC_CFG: strides >= 1 and each padding smaller than the kernel")
    if H < KH or Wd < KW:
        raise ValueError("input smaller than the kernel: undefined in MLI (SPEC_MLI11_MORE 2)")
    if variant == "":
        variant = pick(family, kind, KW, KH, C, sh, sw, padding)
    row = fixes(family, kind, variant)
    if variant != "generic" and not matches(row, KW, KH, C, sh, sw, padding):
        raise ValueError(f"{variant} called outside its domain: undefined in MLI (SPEC_MLI11_MORE 3.5)")
    core = row["core"]
    fixed_padding = True if depthwise else row["fixed_padding"] is not None
    Ho, Wo = out_size(H, pt, pb, KH, sh), out_size(Wd, pl, pr, KW, sw)
    bias_shift = int(f_in) + int(f_w) - int(f_b)
    out_shift = int(f_in) + int(f_w) - int(f_out)
    lo, hi = relu_limits(int(relu_type), int(f_out), dbits)
    xi, wi = x.tolist(), w.tolist()
    y = np.zeros((OC, Ho, Wo), dtype=object)
    for o in range(OC):
        chans = [o] if depthwise else range(C)
        for r in range(Ho):
            y0 = r * sh - pt
            top, bottom = max(-y0, 0), max(y0 + KH - H, 0)
            for c in range(Wo):
                x0 = c * sw - pl
                left, right = max(-x0, 0), max(x0 + KW - Wd, 0)
                pat = pattern(core, fixed_padding, c, Wo, padding, sw, left, right)
                prods = [[[xi[ci][y0 + ky][x0 + kx] * wi[o][0 if depthwise else ci][ky][kx]
                           for kx in range(left, KW - right)] for ky in range(top, KH - bottom)]
                         for ci in chans]
                a = _accumulate(kind, int(b[o]), bias_shift, pat, prods, KW - left - right)
                y[o, r, c] = _read_out(kind, a, out_shift, lo, hi, rounding)
    return y.astype(np.int8 if dbits == 8 else np.int16)


def conv2d_chw(kind, x, f_in, w, f_w, b, f_b, f_out, stride_height=1, stride_width=1, padding=(0, 0, 0, 0),
               relu_type=RELU_NONE, variant="", rounding="convergent"):
    """``mli_krn_conv2d_chw_<kind>[_<variant>]`` (SPEC_MLI11_MORE 4).

    Parameters
    ----------
    kind : {"fx8", "fx16", "fx8w16d"}
    x : array_like of int, shape (C, H, W)
        Input, frac `f_in` (int8 for fx8, int16 otherwise).
    w : array_like of int, shape (OC, C, KH, KW)
        Weights, frac `f_w` (int16 for fx16, int8 otherwise).
    b : array_like of int, shape (OC,)
        Bias, frac `f_b <= f_in + f_w`.
    f_out : int
        The frac bits of the output tensor the caller passes.
    stride_height, stride_width : int
    padding : (top, bottom, left, right)
    relu_type : int
        ``cfg.relu.type``: 0 NONE, 1 GEN, 2 RELU_1, 3 RELU_6 (others act as NONE).
    variant : str
        "" (the dispatcher: the variant MLI's if-chain picks), "generic", or
        a specialisation suffix such as "k3x3_str1_krnpad" (which must be
        called inside its domain).
    rounding : {"convergent", "up"}

    Returns
    -------
    numpy.ndarray, shape (OC, Ho, Wo)
        int8 for fx8, int16 otherwise; frac bits `f_out`.
    """
    return _conv_chw("conv2d_chw", kind, x, f_in, w, f_w, b, f_b, f_out, stride_height, stride_width, padding,
                     relu_type, variant, rounding)


def depthwise_conv2d_chw(kind, x, f_in, w, f_w, b, f_b, f_out, stride_height=1, stride_width=1,
                         padding=(0, 0, 0, 0), relu_type=RELU_NONE, variant="", rounding="convergent"):
    """``mli_krn_depthwise_conv2d_chw_<kind>[_<variant>]``: output channel c
    from input channel c and weights ``w[c, 0]`` (shape (C, 1, KH, KW)).
    Parameters and result as :func:`conv2d_chw`."""
    return _conv_chw("depthwise_conv2d_chw", kind, x, f_in, w, f_w, b, f_b, f_out, stride_height, stride_width,
                     padding, relu_type, variant, rounding)


def conv2d_hwc(kind, x, f_in, w, f_w, b, f_b, f_out, stride_height=1, stride_width=1, padding=(0, 0, 0, 0),
               relu_type=RELU_NONE, rounding="convergent"):
    """``mli_krn_conv2d_hwc_<kind>`` (SPEC_MLI11_MORE 4).

    `x` has shape (H, W, C), `w` (OC, KH, KW, C), the result (Ho, Wo, OC).
    MLI keeps both shifts in 8-bit unsigned variables: a negative output
    shift becomes 256 + shift (so every output is 0) and a shift above 255
    is taken mod 256.  Each window's products are summed channel pair by
    channel pair ((0, 1), (2, 3), ...: one step each, over the window), then
    an odd last channel one product at a time: for fx8 / fx8w16d in C int
    arithmetic after a 32-bit read-out (wrapping).  fx16 with a 1x1 kernel,
    stride 1 and no padding sums channels in pairs up to a multiple of 4,
    then one by one.  Other parameters as :func:`conv2d_chw` (fx16 checks
    neither types nor the bias frac bits, so there `f_b` may exceed
    ``f_in + f_w``).
    """
    check_rounding(rounding)
    _fracs(f_in, f_w, f_b, f_out)
    if kind not in KIND_BITS:
        raise ValueError(f"kind must be one of {tuple(KIND_BITS)}, got {kind!r}")
    dbits, wbits = KIND_BITS[kind]
    if kind != "fx16" and int(f_b) > int(f_in) + int(f_w):  # MLI's order, as for the chw kernels
        raise ValueError("INCOMPATEBLE_TENSORS: f_b > f_in + f_w")
    x = _ints("x", x, dbits, 3)
    w = _ints("w", w, wbits, 4)
    b = _ints("b", b, wbits, 1)
    H, Wd, C = x.shape
    OC, KH, KW, wc = w.shape
    if wc != C or b.size != OC:
        raise ValueError(f"SHAPE_MISMATCH: x {x.shape}, w {w.shape}, b {b.shape}")
    padding = tuple(int(p) for p in padding)
    pt, pb, pl, pr = padding
    sh, sw = int(stride_height), int(stride_width)
    if sh < 1 or sw < 1 or pt >= KH or pb >= KH or pl >= KW or pr >= KW:
        raise ValueError("BAD_FUNC_CFG: strides >= 1 and each padding smaller than the kernel")
    if H < KH or Wd < KW:
        raise ValueError("input smaller than the kernel: undefined in MLI (SPEC_MLI11_MORE 2)")
    bias_shift = (int(f_in) + int(f_w) - int(f_b)) & 255
    out_shift = (int(f_in) + int(f_w) - int(f_out)) & 255
    lo, hi = relu_limits(int(relu_type), int(f_out), dbits)
    pointwise = kind == "fx16" and (KH, KW, sh, sw) == (1, 1, 1, 1) and padding == (0, 0, 0, 0)
    Ho, Wo = out_size(H, pt, pb, KH, sh), out_size(Wd, pl, pr, KW, sw)
    xi, wi = x.tolist(), w.tolist()
    y = np.zeros((Ho, Wo, OC), dtype=object)
    for r in range(Ho):
        y0 = r * sh - pt
        top, bottom = max(-y0, 0), max(y0 + KH - H, 0)
        for c in range(Wo):
            x0 = c * sw - pl
            left, right = max(-x0, 0), max(x0 + KW - Wd, 0)
            for o in range(OC):
                # prods[pos][ch]: window positions (rows, then columns) by channel
                prods = [[xi[y0 + ky][x0 + kx][ch] * wi[o][ky][kx][ch] for ch in range(C)]
                         for ky in range(top, KH - bottom) for kx in range(left, KW - right)]
                a = _accumulate(kind, int(b[o]), bias_shift, "hwc_1x1" if pointwise else "hwc", prods, 0)
                y[r, c, o] = _read_out(kind, a, out_shift, lo, hi, rounding)
    return y.astype(np.int8 if dbits == 8 else np.int16)
