"""The slow twins of the rest of MLI 1.1 (mli.reference: conv, pool, data,
leaky_relu / softmax, sa8) against the C core, by hypothesis, and against
MLI's own code (a few seeded calls through ../shared/oracle_c's library,
and the reference cases of ../shared/vectors/mli11_more).

The C core is called through ctypes on the extension's exported mli_krn_*
symbols, with tests/mli11_more_harness.py (the core is proven bit-exact
with MLI's library by tests/test_mli11_more_oracle.py and
tests/test_mli11_conv_oracle.py).  Each example is one call inside the
function's domain (a specialisation inside its dispatcher condition, the
input at least as large as the kernel), with values that include the type
limits and, for the convolutions, sums at the accumulator limits (a bias
shifted by 22 to 30 bits: the lanes of the fx8 / fx8w16d variants wrap
there, and the fx16 variants' grouping of products shows).  Status and
every output element must be equal; nothing is tolerated.

MLIPY_REF_MORE_SCALE multiplies the number of hypothesis examples of every
family and of the seeded loops (default 1: 840 hypothesis examples, the
run takes 20 to 35 s on two shared cores; 10: 8,400 examples, about two
minutes; 3 or more: every reference case instead of every third).
"""
import json
import os

import numpy as np
import pytest

from mli11_more_harness import (HAVE_BRIDGE, HAVE_ORACLE, SHARED, SKIP_BRIDGE, SKIP_REASON, VM, Call, Core,
                                Oracle, _arg_types, out_spec, run, tensor_spec)

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import mli._variants_conv as VC  # noqa: E402
from mli import reference as R  # noqa: E402
from mli.reference import conv as RC  # noqa: E402

pytestmark = pytest.mark.skipif(not HAVE_BRIDGE, reason=SKIP_BRIDGE)

SCALE = float(os.environ.get("MLIPY_REF_MORE_SCALE", "1"))
FX8, FX16, SA8, SA32 = 0, 1, 2, 3
DATA_EL = {"fx8": FX8, "fx16": FX16, "fx8w16d": FX16, "sa8": SA8}
W_EL = {"fx8": FX8, "fx16": FX16, "fx8w16d": FX8}
NP = {FX8: np.int8, FX16: np.int16, SA8: np.int8, SA32: np.int32}
ROUNDINGS = ("convergent", "up")
VECTORS = SHARED / "vectors" / "mli11_more"


def examples(n):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


# ------------------------------------------------------------------ drawing --
class Draw:
    """Draws of one call: from hypothesis (`data`) or from a numpy rng."""

    def __init__(self, data=None, rng=None):
        self.data, self.rng = data, rng

    def int(self, lo, hi):
        if self.data is not None:
            return self.data.draw(st.integers(lo, hi))
        return int(self.rng.integers(lo, hi + 1))

    def pick(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def values(self, el, n, how=None):
        """n values of element type `el`: uniform, extreme, small, all max or all min."""
        how = how or self.pick(["uniform", "uniform", "extreme", "small", "max", "min"])
        g = np.random.default_rng(self.int(0, 2 ** 32 - 1))
        info = np.iinfo(NP[el])
        if how == "extreme":
            v = g.choice([info.min, info.max, info.min + 1, info.max - 1, 0], n)
        elif how == "small":
            v = g.integers(-4, 5, n)
        elif how == "max":
            v = np.full(n, info.max)
        elif how == "min":
            v = np.full(n, info.min)
        else:
            v = g.integers(info.min, int(info.max) + 1, n)
        return np.asarray(v, dtype=NP[el])


class Reject(Exception):
    """The drawn call is outside what the twin models (undefined in MLI)."""


class Case:
    """One call: the harness Call, the twin (a function of the rounding mode
    returning the expected array), and the output's element type."""

    def __init__(self, call, twin, out_el):
        self.call, self.twin, self.out_el = call, twin, out_el


def _out(n_el, el, asym=None, frac=0, rank=3):
    esize = np.dtype(NP[el]).itemsize
    return out_spec(n_el * esize, el_type=el, rank=rank, frac=frac, asym=asym)


def _same(kw, kh):
    return VC.same_padding(kw, kh)  # (top, bottom, left, right)


def _cfg_pad(padding):
    pt, pb, pl, pr = padding
    return dict(padding_top=pt, padding_bottom=pb, padding_left=pl, padding_right=pr)


def _window(d, kw, kh, stride, when, kmax=5):
    """Kernel, strides and padding inside a condition: `when` "zero", "same"
    (each at most the 'same' value), "pinned" (exactly 'same') or "any"."""
    kw, kh = kw or d.int(1, kmax), kh or d.int(1, kmax)
    sh = sw = stride
    if not stride:
        sw, sh = d.int(1, 3), d.int(1, 3)
    t, b, l, r = _same(kw, kh)
    if when == "zero":
        pad = (0, 0, 0, 0)
    elif when == "pinned":
        pad = (t, b, l, r)
    elif when == "same":
        pad = (d.int(0, t), d.int(0, b), d.int(0, l), d.int(0, r))
    else:
        pad = (d.int(0, kh - 1), d.int(0, kh - 1), d.int(0, kw - 1), d.int(0, kw - 1))
    return kw, kh, sh, sw, pad


# -------------------------------------------------------- convolution, fx --
def _conv_fracs(d, kind, mode):
    """(f_in, f_w, f_b, f_out, and how the bias, data and weights values are drawn)."""
    if mode == "limit":  # the bias shifted to (or beyond) the accumulator's limit, products pushing on
        f_in, f_w = d.int(12, 15), d.int(13, 15)  # frac bits are uint8: f_b >= 0
        f_b = f_in + f_w - min(d.pick([25, 26, 28, f_in + f_w, 22, 24]), f_in + f_w)
        bhow = d.pick(["max", "min"])
        if kind == "fx16":  # at 2^39: products of both signs (the grouping shows)
            xhow, whow = d.pick([("extreme", "extreme"), ("uniform", "extreme"), ("max", "extreme")])
        else:  # at 2^31: products of the bias's sign (the lanes wrap)
            same = [("max", "max"), ("min", "min")]
            xhow, whow = d.pick(same if bhow == "max" else [("max", "min"), ("min", "max")])
        # an output shift of 25 or more keeps the differences near 2^39 (2^31) visible after the read-out
        f_out = max(0, f_in + f_w - d.pick([25, 26, 28, f_in + f_w, d.int(0, 31)]))
        return f_in, f_w, f_b, f_out, bhow, xhow, whow
    f_in, f_w = d.int(0, 8), d.int(0, 8)
    f_b = f_in + f_w - d.int(0, f_in + f_w)
    f_out = d.int(0, 31) if mode == "extreme" else d.int(0, 16)
    how = "extreme" if mode == "extreme" else None
    return f_in, f_w, f_b, f_out, how, how, how


def gen_conv_chw(d, family=None, kind=None, suffix=None, mode=None):
    """A conv2d_chw or depthwise_conv2d_chw call (or of `family`, `kind`,
    variant `suffix` and values `mode` as given)."""
    family = family or d.pick(["conv2d_chw", "depthwise_conv2d_chw"])
    kind = kind or d.pick(VC.KINDS)
    depthwise = family.startswith("depthwise")
    role = d.int(0, 9) if suffix is None else 3 if suffix == "generic" else 9
    if role < 3:
        variant, row = "", None
    elif role < 5:
        variant, row = "generic", None
    else:
        rows = VC.variants(family, kind)
        row = d.pick(rows) if suffix is None else {r["suffix"]: r for r in rows}[suffix]
        variant = row["suffix"]
    kmax = 7 if suffix else 5  # (wider borders for the variant-by-variant test)
    if row is None:
        kw, kh, sh, sw, pad = _window(d, 0, 0, 0, "any", kmax)
        ch = d.int(1, 3)
    else:
        when = {"NOPAD": "zero", "NONE": "any"}.get(row["pad"])
        if when is None:  # KRNPAD: pinned with stride 1 and a fixed kernel, else at most 'same'
            when = "pinned" if row["stride"] == 1 and row["kw"] and row["kh"] else "same" if row["kw"] else "any"
        kw, kh, sh, sw, pad = _window(d, row["kw"], row["kh"], row["stride"], when, kmax)
        ch = row["ch"] or d.int(1, 3)
    h, w = kh + d.int(0, 4), kw + d.int(0, 5)
    oc = ch if depthwise else d.int(1, 3)
    mode = mode or d.pick(["limit", "ok", "extreme", "limit", "ok"])
    f_in, f_w, f_b, f_out, bhow, xhow, whow = _conv_fracs(d, kind, mode)
    relu = d.pick([0, 0, 1, 2, 3, 4])
    de, we = DATA_EL[kind], W_EL[kind]
    x = d.values(de, ch * h * w, xhow).reshape(ch, h, w)
    wshape = (oc, 1 if depthwise else ch, kh, kw)
    wt = d.values(we, int(np.prod(wshape)), whow).reshape(wshape)
    b = d.values(we, oc, bhow)
    cfg = dict(relu_type=relu, stride_width=sw, stride_height=sh, **_cfg_pad(pad))
    ho, wo = RC.out_size(h, pad[0], pad[1], kh, sh), RC.out_size(w, pad[2], pad[3], kw, sw)
    func = f"mli_krn_{family}_{kind}" + (f"_{variant}" if variant else "")
    call = Call(func, "conv", {"in": tensor_spec(x, de, x.shape, frac=f_in),
                               "weights": tensor_spec(wt, we, wshape, frac=f_w),
                               "bias": tensor_spec(b, we, [oc], frac=f_b),
                               "out": _out(oc * ho * wo, de, frac=f_out)}, cfg, tags=[family, kind, variant, mode])
    twin = R.depthwise_conv2d_chw if depthwise else R.conv2d_chw

    def expect(rounding):
        return twin(kind, x, f_in, wt, f_w, b, f_b, f_out, sh, sw, pad, relu, variant, rounding)
    return Case(call, expect, de)


def gen_conv_hwc(d, kind=None, mode=None, pointwise=None):
    """A conv2d_hwc call (or of `kind`, values `mode`, 1x1 stride 1 unpadded or not as given)."""
    kind = kind or d.pick(VC.KINDS)
    kw, kh, sh, sw, pad = _window(d, 0, 0, 0, "any", kmax=4)
    if pointwise or (pointwise is None and d.int(0, 3) == 0):  # 1x1, stride 1, no padding (fx16's own path)
        kw = kh = sh = sw = 1
        pad = (0, 0, 0, 0)
    ch, oc = d.int(1, 6) if not pointwise else d.int(2, 11), d.int(1, 3)
    h, w = kh + d.int(0, 4), kw + d.int(0, 4)
    mode = mode or d.pick(["limit", "ok", "extreme", "limit", "ok"])
    f_in, f_w, f_b, f_out, bhow, xhow, whow = _conv_fracs(d, kind, mode)
    if kind == "fx16" and d.int(0, 5) == 0:  # fx16 checks no bias frac: a negative bias shift, held in 8 bits
        f_b = f_in + f_w + d.int(1, 3)
    relu = d.pick([0, 0, 1, 2, 3, 4])
    de, we = DATA_EL[kind], W_EL[kind]
    x = d.values(de, ch * h * w, xhow).reshape(h, w, ch)
    wshape = (oc, kh, kw, ch)
    wt = d.values(we, int(np.prod(wshape)), whow).reshape(wshape)
    b = d.values(we, oc, bhow)
    cfg = dict(relu_type=relu, stride_width=sw, stride_height=sh, **_cfg_pad(pad))
    ho, wo = RC.out_size(h, pad[0], pad[1], kh, sh), RC.out_size(w, pad[2], pad[3], kw, sw)
    call = Call(f"mli_krn_conv2d_hwc_{kind}", "conv",
                {"in": tensor_spec(x, de, x.shape, frac=f_in), "weights": tensor_spec(wt, we, wshape, frac=f_w),
                 "bias": tensor_spec(b, we, [oc], frac=f_b), "out": _out(oc * ho * wo, de, frac=f_out)}, cfg,
                tags=["conv2d_hwc", kind, mode])

    def expect(rounding):
        return R.conv2d_hwc(kind, x, f_in, wt, f_w, b, f_b, f_out, sh, sw, pad, relu, rounding)
    return Case(call, expect, de)


# ------------------------------------------------------------------ pooling --
def gen_pool(d, family=None, kind=None, big=None):
    """A pooling call (or of `family`, `kind`, a window beyond 512 elements or not as given)."""
    family = family or d.pick(["maxpool_chw", "avepool_chw", "maxpool_hwc", "avepool_hwc"])
    kinds, _, variants = VM.VARIANT_FAMILIES[family]
    kind = kind or d.pick(kinds)
    role = d.int(0, 9)
    v = VM.GENERIC if role < 5 else d.pick(variants)
    variant = "" if role < 3 else v.suffix
    when = v.when if v.when != "same" else "same"
    kw, kh, sh, sw, pad = _window(d, v.kernel_width, v.kernel_height, v.stride, when, kmax=7)
    if role == 4 and d.int(0, 3) == 0:  # a large window of the generic function
        kw, kh, sh, sw, pad = d.int(8, 16), d.int(8, 16), 1, 1, (0, 0, 0, 0)
    c = d.int(1, 4)
    h, w = kh + d.int(0, 4), kw + d.int(0, 4)
    if big is None:
        big = role == 4 and family.startswith("ave") and d.int(0, 2) == 0
    if big:  # beyond 512 elements a partial sum can reach 2^39: the order of the steps shows
        kw, kh, sh, sw, pad = d.int(23, 40), d.int(23, 40), 1, 1, (d.int(0, 1), 0, d.int(0, 1), 0)
        variant = d.pick(["", "generic"])
        c, h, w = d.int(1, 2), kh + d.int(0, 1), kw + d.int(0, 1)
    hwc = family.endswith("hwc")
    el = DATA_EL[kind]
    shape = (h, w, c) if hwc else (c, h, w)
    if big:
        how = d.pick(["sprinkled", "mixed", "max", "min", "extreme"])
        x = d.values(el, c * h * w, "min" if how in ("mixed", "sprinkled") else how)
        if how == "mixed":  # the first part at the minimum (saturating), the rest at the maximum
            x[d.int(x.size // 2, x.size - 1):] = np.iinfo(NP[el]).max
        elif how == "sprinkled":  # at the minimum but for one in eight at the maximum (pairs of both signs)
            g = np.random.default_rng(d.int(0, 2 ** 32 - 1))
            x[g.random(x.size) < 0.125] = np.iinfo(NP[el]).max
        x = x.reshape(shape)
    else:
        x = d.values(el, c * h * w).reshape(shape)
    asym = {"zero_point": d.int(-128, 127), "scale": d.int(1, 1 << 20), "dim": -1,
            "scale_frac_bits": d.int(0, 20)} if el == SA8 else None
    f_in = 0 if el == SA8 else d.int(0, 15)
    ho, wo = RC.out_size(h, pad[0], pad[1], kh, sh), RC.out_size(w, pad[2], pad[3], kw, sw)
    cfg = dict(kernel_width=kw, kernel_height=kh, stride_width=sw, stride_height=sh, **_cfg_pad(pad))
    call = Call(VM.func_name(family, kind, variant), "pool",
                {"in": tensor_spec(x, el, shape, frac=f_in, asym=asym),
                 "out": _out(c * ho * wo, el, asym=dict(asym) if asym else None)}, cfg,
                tags=[family, kind, variant])
    twin = getattr(R, family)

    def expect(rounding):
        return twin(kind, x, kh, kw, sh, sw, pad, variant, rounding)
    return Case(call, expect, el)


# ------------------------------------------------- leaky ReLU and softmax --
def _shape(d, rank=None, hi=5):
    rank = rank or d.int(1, 4)
    return [d.int(1, hi) for _ in range(rank)]


def gen_leaky(d):
    kind = d.pick(["fx8", "fx16"])
    el = DATA_EL[kind]
    shape = _shape(d)
    x = d.values(el, int(np.prod(shape))).reshape(shape)
    f_in = d.int(0, 15)
    a = int(d.values(el, 1)[0])
    f_s = d.pick([0, 3, 7, 8, 14, 15, 16, d.int(0, 20)])
    if d.int(0, 1):
        slope = {"bytes": None, "scalar": a, "capacity": 0, "mem_stride": [0] * 4, "shape": [0] * 4, "rank": 0,
                 "el_type": el, "frac": f_s}
    else:
        slope = tensor_spec(np.array([a], NP[el]), el, [1], frac=f_s)
    call = Call(f"mli_krn_leaky_relu_{kind}", "leaky_relu",
                {"in": tensor_spec(x, el, shape, frac=f_in), "slope_coeff": slope,
                 "out": _out(x.size, el, frac=d.int(0, 15), rank=len(shape))}, tags=["leaky_relu", kind])

    def expect(rounding):
        return R.leaky_relu(kind, x, f_in, a, f_s, rounding)
    return Case(call, expect, el)


def gen_softmax(d):
    kind = d.pick(["fx8", "fx16"])
    el = DATA_EL[kind]
    shape = _shape(d)
    n = int(np.prod(shape))
    how = d.pick(["uniform", "extreme", "small", "max", "min", "spread"])
    if how == "spread":  # a range just above or below the type's (halving or not)
        info = np.iinfo(NP[el])
        x = d.values(el, n, "small").astype(np.int64)
        x[0], x[-1] = info.max - d.int(0, 2), info.min + d.int(0, 2)
        x = np.clip(x, info.min, info.max).astype(NP[el])
    else:
        x = d.values(el, n, how)
    x = x.reshape(shape)
    f_in = d.int(0, 15)
    call = Call(f"mli_krn_softmax_{kind}", "softmax",
                {"in": tensor_spec(x, el, shape, frac=f_in), "out": _out(n, el, rank=len(shape))},
                tags=["softmax", kind, how])

    def expect(rounding):
        return R.softmax(kind, x, f_in, rounding)
    return Case(call, expect, el)


# ------------------------------------------- permute, concat, padding2d --
def gen_permute(d):
    kind = d.pick(["fx8", "fx16"])
    el = DATA_EL[kind]
    shape = _shape(d)
    rank = len(shape)
    perm = list(range(rank))
    for i in range(rank - 1, 0, -1):  # a Fisher-Yates shuffle from the draws
        j = d.int(0, i)
        perm[i], perm[j] = perm[j], perm[i]
    x = d.values(el, int(np.prod(shape))).reshape(shape)
    call = Call(f"mli_krn_permute_{kind}", "permute",
                {"in": tensor_spec(x, el, shape, frac=d.int(0, 15)), "out": _out(x.size, el, rank=rank)},
                {"perm_dim": perm + [d.int(0, 3) for _ in range(4 - rank)]}, tags=["permute", kind])
    return Case(call, lambda rounding: R.permute(x, perm + [0] * (4 - rank)), el)


def gen_concat(d):
    kind = d.pick(["fx8", "fx16"])
    el = DATA_EL[kind]
    shape = _shape(d, hi=4)
    axis = d.int(0, len(shape) - 1)
    n = d.int(1, 4)
    f = d.int(0, 15)
    xs, tensors = [], {}
    for i in range(n):
        s = list(shape)
        s[axis] = d.int(1, 4)
        x = d.values(el, int(np.prod(s))).reshape(s)
        xs.append(x)
        tensors[f"in{i}"] = tensor_spec(x, el, s, frac=f)
    total = sum(x.size for x in xs)
    tensors["out"] = _out(total, el, rank=len(shape))
    call = Call(f"mli_krn_concat_{kind}", "concat", tensors, {"tensors_num": n, "axis": axis},
                inputs=[f"in{i}" for i in range(n)], tags=["concat", kind])
    return Case(call, lambda rounding: R.concat(xs, axis), el)


def gen_padding(d):
    kind = d.pick(["fx8", "fx16"])
    layout = d.pick(["chw", "hwc"])
    el = DATA_EL[kind]
    shape = _shape(d, rank=3)
    x = d.values(el, int(np.prod(shape))).reshape(shape)
    pt, pb, pl, pr = (d.int(0, 3) for _ in range(4))
    c, h, w = (shape[0], shape[1], shape[2]) if layout == "chw" else (shape[2], shape[0], shape[1])
    n = c * (h + pt + pb) * (w + pl + pr)
    call = Call(f"mli_krn_padding2d_{layout}_{kind}", "padding2d",
                {"in": tensor_spec(x, el, shape, frac=d.int(0, 15)), "out": _out(n, el)},
                _cfg_pad((pt, pb, pl, pr)), tags=["padding2d", layout, kind])
    twin = R.padding2d_chw if layout == "chw" else R.padding2d_hwc
    return Case(call, lambda rounding: twin(x, pt, pb, pl, pr), el)


# ---------------------------------------------------------------------- sa8 --
def _bias_scale(in_scale, in_sfb, w_scale, w_sfb, b_sfb):
    """A bias scale MLI's check accepts: in.scale * w.scale (a 32-bit
    product that wraps) shifted right by in.sfb + w.sfb - b.sfb >= 0."""
    e = RC._wrap(in_scale * w_scale, 32)
    return e >> (in_sfb + w_sfb - b_sfb)


def _zp(d):
    return d.pick([0, d.int(-128, 127), d.int(-128, 127), d.pick([32767, -32767, 300, -300])])


def _sa8_quant(d, oc):
    sign = d.pick([1, 1, 1, -1])  # now and then negative scales (C's divisions truncate toward zero)
    q = dict(in_zp=_zp(d), in_scale=sign * d.int(1 << 13, 1 << 16), in_sfb=d.int(10, 24),
             w_scales=[d.pick([1, 1, 1, -1]) * d.int(1 << 13, 1 << 16) for _ in range(oc)], w_sfb=d.int(10, 24),
             out_zp=_zp(d), out_scale=d.pick([1, 1, 1, -1]) * d.int(1 << 13, 1 << 16))
    q["out_sfb"] = q["in_sfb"] + q["w_sfb"] - d.int(18, 30)  # outputs mostly inside int8, some saturating
    q["b_sfb"] = q["in_sfb"] + q["w_sfb"] - d.pick([0, 1, 2, 4, 8, 16])
    q["b_scales"] = [_bias_scale(q["in_scale"], q["in_sfb"], s, q["w_sfb"], q["b_sfb"]) for s in q["w_scales"]]
    return q


def _sa8_specs(d, q, x, wt, wdim, b, per_axis=True):
    asym_in = {"zero_point": q["in_zp"], "scale": q["in_scale"], "dim": -1, "scale_frac_bits": q["in_sfb"]}
    n = len(q["w_scales"])
    asym_w = {"zero_point": [0] * n if per_axis else 0, "scale": q["w_scales"] if per_axis else q["w_scales"][0],
              "dim": wdim, "scale_frac_bits": q["w_sfb"]}
    asym_b = {"zero_point": [0] * n if per_axis else 0, "scale": q["b_scales"] if per_axis else q["b_scales"][0],
              "dim": 0 if per_axis else -1, "scale_frac_bits": q["b_sfb"]}
    asym_out = {"zero_point": q["out_zp"], "scale": q["out_scale"], "dim": -1, "scale_frac_bits": q["out_sfb"]}
    return (tensor_spec(x, SA8, x.shape, asym=asym_in), tensor_spec(wt, SA8, wt.shape, asym=asym_w),
            tensor_spec(b, SA32, b.shape, asym=asym_b), asym_out)


def gen_conv_sa8(d):
    family = d.pick(["conv2d_nhwc", "depthwise_conv2d_hwcn"])
    depthwise = family.startswith("depthwise")
    _, _, variants = VM.VARIANT_FAMILIES[family]
    role = d.int(0, 9)
    v = VM.GENERIC if role < 5 else d.pick(variants)
    variant = "" if role < 3 else v.suffix
    kw, kh, sh, sw, pad = _window(d, v.kernel_width, v.kernel_height, v.stride, v.when, kmax=5)
    if role < 3 and d.int(0, 3) == 0:  # the dispatcher's 1x1 without padding (the pointwise loop)
        kw = kh = 1
        pad = (0, 0, 0, 0)
    c = d.int(1, 4)
    oc = c * d.int(1, 3) if depthwise else d.int(1, 4)
    h, w = kh + d.int(0, 4), kw + d.int(0, 4)
    q = _sa8_quant(d, oc)
    x = d.values(SA8, h * w * c).reshape(h, w, c)
    wshape = (1, kh, kw, oc) if depthwise else (oc, kh, kw, c)
    wt = d.values(SA8, int(np.prod(wshape))).reshape(wshape)
    b = np.asarray(d.values(SA32, oc, d.pick(["small", "uniform"])) // d.pick([1, 1 << 12]), np.int32)
    xin, wspec, bspec, asym_out = _sa8_specs(d, q, x, wt, 3 if depthwise else 0, b)
    relu = d.pick([0, 0, 1, 2, 3, 4])
    cfg = dict(relu_type=relu, stride_width=sw, stride_height=sh, **_cfg_pad(pad))
    ho, wo = RC.out_size(h, pad[0], pad[1], kh, sh), RC.out_size(w, pad[2], pad[3], kw, sw)
    call = Call(VM.func_name(family, "sa8_sa8_sa32", variant), "conv",
                {"in": xin, "weights": wspec, "bias": bspec, "out": _out(ho * wo * oc, SA8, asym=asym_out)}, cfg,
                tags=[family, variant])
    twin = R.depthwise_conv2d_hwcn if depthwise else R.conv2d_nhwc

    def expect(rounding):
        return twin(x, q["in_zp"], q["in_scale"], q["in_sfb"], wt, q["w_scales"], q["w_sfb"], b, q["out_zp"],
                    q["out_scale"], q["out_sfb"], sh, sw, pad, relu, variant, rounding)
    return Case(call, expect, SA8)


def gen_fc_sa8(d):
    n, k = d.int(1, 40), d.int(1, 6)
    q = _sa8_quant(d, 1)
    q["out_sfb"] = q["in_sfb"] + q["w_sfb"] - d.pick([d.int(16, 26), d.int(-3, 3)])
    x = d.values(SA8, n)
    wt = d.values(SA8, k * n).reshape(k, n)
    b = np.asarray(d.values(SA32, k, d.pick(["small", "uniform", "extreme"])), np.int32)
    xin, wspec, bspec, asym_out = _sa8_specs(d, q, x, wt, -1, b, per_axis=False)
    call = Call("mli_krn_fully_connected_sa8_sa8_sa32", "fully_connected",
                {"in": xin, "weights": wspec, "bias": bspec, "out": _out(k, SA8, asym=asym_out, rank=1)},
                tags=["fully_connected"])

    def expect(rounding):
        return R.fully_connected_sa8(x, q["in_zp"], q["in_scale"], q["in_sfb"], wt, q["w_scales"][0], q["w_sfb"],
                                     b, q["out_zp"], q["out_scale"], q["out_sfb"], rounding)
    return Case(call, expect, SA8)


# ----------------------------------------------------------------- running --
@pytest.fixture(scope="module")
def core():
    import ctypes as C

    c = Core()
    types = _arg_types()["conv"]
    for f in VC.functions():  # the fx convolutions are not in the harness's table
        fn = getattr(c.lib, f["name"])
        fn.argtypes = types
        fn.restype = C.c_char_p if f.get("debug") else C.c_int
    return c


def _decode(res, el, shape):
    n = int(np.prod(shape))
    return np.frombuffer(res["out_buf"], dtype=NP[el])[:n].reshape(shape)


def check(lib, case, rounding):
    """Run `case` on `lib` (the core or MLI's build) and compare with its
    twin: status OK, every output element, the output shape."""
    try:
        want = case.twin(rounding)
    except ValueError as e:
        raise Reject(str(e)) from None
    res = run(lib, case.call, rounding)
    got = _decode(res, case.out_el, want.shape)
    detail = f"{case.call.func} {case.call.tags} rounding={rounding} cfg={case.call.cfg}"
    assert res["ret"] == 0, f"{detail}: status {res['ret']}"
    assert want.dtype == got.dtype
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)[:5]
        raise AssertionError(f"{detail}: twin != {type(lib).__name__} at {bad.tolist()}: "
                             f"twin {[int(want[tuple(i)]) for i in bad]} got {[int(got[tuple(i)]) for i in bad]}")
    meta = res["out_meta"]
    if case.call.arguments in ("conv", "pool", "padding2d", "permute", "concat"):
        rank = meta["rank"]
        assert meta["shape"][:rank] == list(want.shape), f"{detail}: out shape {meta['shape'][:rank]}"


def _run_hyp(core, data, gen):
    d = Draw(data=data)
    case = gen(d)
    rounding = d.pick(ROUNDINGS)
    try:
        check(core, case, rounding)
    except Reject:
        hypothesis.reject()


@examples(200)
@given(st.data())
def test_conv_chw_twin(core, data):
    _run_hyp(core, data, gen_conv_chw)


@examples(60)
@given(st.data())
def test_conv_hwc_twin(core, data):
    _run_hyp(core, data, gen_conv_hwc)


@examples(150)
@given(st.data())
def test_pool_twin(core, data):
    _run_hyp(core, data, gen_pool)


@examples(80)
@given(st.data())
def test_leaky_relu_twin(core, data):
    _run_hyp(core, data, gen_leaky)


@examples(80)
@given(st.data())
def test_softmax_twin(core, data):
    _run_hyp(core, data, gen_softmax)


@examples(40)
@given(st.data())
def test_permute_twin(core, data):
    _run_hyp(core, data, gen_permute)


@examples(40)
@given(st.data())
def test_concat_twin(core, data):
    _run_hyp(core, data, gen_concat)


@examples(40)
@given(st.data())
def test_padding2d_twin(core, data):
    _run_hyp(core, data, gen_padding)


@examples(100)
@given(st.data())
def test_conv_sa8_twin(core, data):
    _run_hyp(core, data, gen_conv_sa8)


@examples(50)
@given(st.data())
def test_fully_connected_sa8_twin(core, data):
    _run_hyp(core, data, gen_fc_sa8)


CONV_ROWS = [(fam, kind, row["suffix"]) for fam in ("conv2d_chw", "depthwise_conv2d_chw") for kind in VC.KINDS
             for row in VC.variants(fam, kind) + [dict(suffix="generic")]]


def test_every_conv_variant_at_the_limit(core):
    """Every conv2d_chw / depthwise_conv2d_chw function of every kind, inside
    its domain, and conv2d_hwc, with sums at the accumulator limit (where the
    loop nests' groupings give different bits), a few calls each, both
    roundings."""
    rng = np.random.default_rng(2211)
    n = 0
    for fam, kind, sfx in CONV_ROWS:
        for i in range(max(1, int(8 * SCALE))):
            case = gen_conv_chw(Draw(rng=rng), fam, kind, sfx, "limit")
            try:
                check(core, case, ROUNDINGS[i % 2])
            except Reject:
                continue
            n += 1
    assert n >= 2 * len(CONV_ROWS)
    for kind in VC.KINDS:  # conv2d_hwc: channel pairs, an odd last channel; fx16's 1x1 path (pairs up to 4k)
        for i in range(max(1, int(16 * SCALE))):
            check(core, gen_conv_hwc(Draw(rng=rng), kind, "limit", pointwise=False), ROUNDINGS[i % 2])
    for i in range(max(1, int(48 * SCALE))):
        check(core, gen_conv_hwc(Draw(rng=rng), "fx16", "limit", pointwise=True), ROUNDINGS[i % 2])


def test_avepool_beyond_512_elements(core):
    """Average pools of 529 to 1,600 elements, at and across the type limits:
    MLI's 40-bit steps saturate, in its order (chw: an odd first element
    alone, then pairs per row; hwc: one element per step)."""
    rng = np.random.default_rng(512)
    for family in ("avepool_chw", "avepool_hwc"):
        for kind in VM.VARIANT_FAMILIES[family][0]:
            for i in range(max(1, int(12 * SCALE))):
                check(core, gen_pool(Draw(rng=rng), family, kind, big=True), ROUNDINGS[i % 2])


def test_dispatcher_pick_matches_core(core):
    """The twins' choice of variant (conv.pick) is the one the core's
    mli_debug_krn_* dispatchers name, over every table row's condition."""
    rng = np.random.default_rng(22)
    n = 0
    for _ in range(400):
        d = Draw(rng=rng)
        case = gen_conv_chw(d)
        c = case.call
        if c.func.count("_") != 4:  # dispatchers only: mli_krn_<family>_<kind>
            continue
        fam, kind = c.func[len("mli_krn_"):].rsplit("_", 1)
        dbg = Call("mli_debug_krn_" + c.func[len("mli_krn_"):], "conv", c.tensors, c.cfg)
        name = run(core, dbg, "convergent")["ret"]
        w = c.tensors["weights"]["shape"]
        ch = c.tensors["in"]["shape"][0]
        pad = (c.cfg["padding_top"], c.cfg["padding_bottom"], c.cfg["padding_left"], c.cfg["padding_right"])
        want = RC.pick(fam, kind, w[3], w[2], ch, c.cfg["stride_height"], c.cfg["stride_width"], pad)
        assert name == f"{c.func}_{want}", (name, want, c.cfg)
        n += 1
    assert n > 50


# ------------------------------------------------ against MLI's own code --
def gen_conv_limit(d):
    """A conv2d_chw / depthwise_conv2d_chw function of any variant with sums at the limit."""
    fam, kind, sfx = d.pick(CONV_ROWS)
    return gen_conv_chw(d, fam, kind, sfx, "limit")


def gen_hwc_limit(d):
    return gen_conv_hwc(d, mode="limit")


def gen_avepool_big(d):
    return gen_pool(d, d.pick(["avepool_chw", "avepool_hwc"]), big=True)


GENERATORS = [gen_conv_chw, gen_conv_limit, gen_conv_hwc, gen_hwc_limit, gen_pool, gen_avepool_big, gen_leaky,
              gen_softmax, gen_permute, gen_concat, gen_padding, gen_conv_sa8, gen_fc_sa8]


@pytest.mark.skipif(not HAVE_ORACLE, reason=SKIP_REASON)
@pytest.mark.parametrize("gen", GENERATORS, ids=lambda g: g.__name__[4:])
def test_twins_against_mli_library(gen):
    """A few seeded calls per family through MLI's own library (both
    rounding builds): the twin gives MLI's bits.  Every call is inside the
    function's domain with the input at least the kernel, where MLI stays
    inside its buffers."""
    rng = np.random.default_rng(20261128)
    done = 0
    for i in range(int(120 * SCALE)):
        case = gen(Draw(rng=rng))
        rounding = ROUNDINGS[i % 2]
        try:
            check(Oracle(rounding), case, rounding)
        except Reject:
            continue
        done += 1
        if done == int(24 * SCALE):
            break
    assert done >= min(12, int(24 * SCALE))


# ------------------------------------------------------- reference cases --
def _case_files():
    if not (VECTORS / "index.json").is_file():
        return []
    return [c[0] for c in json.loads((VECTORS / "index.json").read_text())["cases"]]


def _pad_of(m):
    return (m["cfg_padding_top"], m["cfg_padding_bottom"], m["cfg_padding_left"], m["cfg_padding_right"])


def _arr(z, m, role):
    shape = m[f"{role}_shape"][:m[f"{role}_rank"]]
    return np.asarray(z[f"{role}_data"]).reshape(-1)[:int(np.prod(shape))].reshape(shape)


def _dense(m, roles):
    return all(not any(m.get(f"{r}_mem_stride", [0])) for r in roles)


def twin_of_case(z, m, rounding):
    """The twin's output for a reference case, or None where the twin takes no such call."""
    k, kind, v = m["kernel"], m["kind"], m["variant"]
    if k in ("conv2d_chw", "depthwise_conv2d_chw", "conv2d_hwc"):
        f = {"conv2d_chw": R.conv2d_chw, "depthwise_conv2d_chw": R.depthwise_conv2d_chw}.get(k)
        args = (kind, _arr(z, m, "in"), m["in_frac"], _arr(z, m, "weights"), m["weights_frac"], _arr(z, m, "bias"),
                m["bias_frac"], m["out_frac"], m["cfg_stride_height"], m["cfg_stride_width"], _pad_of(m),
                m["cfg_relu_type"])
        if f is None:
            return R.conv2d_hwc(*args, rounding=rounding)
        return f(*args, variant=v, rounding=rounding)
    if k.endswith("pool_chw") or k.endswith("pool_hwc"):
        return getattr(R, k)(kind, _arr(z, m, "in"), m["cfg_kernel_height"], m["cfg_kernel_width"],
                             m["cfg_stride_height"], m["cfg_stride_width"], _pad_of(m), v, rounding)
    if k == "leaky_relu":
        if m.get("slope_scalar") is not None:
            a = m["slope_scalar"]
        else:
            a = int(np.asarray(z["slope_data"]).reshape(-1)[0])
        return R.leaky_relu(kind, _arr(z, m, "in"), m["in_frac"], a, m["slope_frac"], rounding)
    if k == "softmax":
        return R.softmax(kind, _arr(z, m, "in"), m["in_frac"], rounding)
    if k == "permute":
        return R.permute(_arr(z, m, "in"), m["cfg_perm_dim"])
    if k == "concat":
        return R.concat([_arr(z, m, r) for r in m["concat_inputs"][:m["cfg_tensors_num"]]], m["cfg_axis"])
    if k.startswith("padding2d"):
        return getattr(R, k)(_arr(z, m, "in"), *_pad_of(m))
    if k in ("conv2d_nhwc", "depthwise_conv2d_hwcn", "fully_connected"):
        zp, sc = (lambda r: m[f"{r}_zero_point"]), (lambda r: m[f"{r}_scale"])
        sfb = lambda r: m[f"{r}_scale_frac_bits"]  # noqa: E731
        if k == "fully_connected":
            n = int(np.prod(m["in_shape"][:m["in_rank"]]))
            kk = m["weights_shape"][0]
            w = np.asarray(z["weights_data"]).reshape(-1)
            rs = m["weights_mem_stride"][0] if n >= 8 and m["weights_mem_stride"][0] else n
            w = np.stack([w[i * rs:i * rs + n] for i in range(kk)])
            return R.fully_connected_sa8(_arr(z, m, "in").reshape(-1), zp("in"), sc("in"), sfb("in"), w,
                                         np.asarray(sc("weights")).reshape(-1)[0], sfb("weights"),
                                         _arr(z, m, "bias"), zp("out"), sc("out"), sfb("out"), rounding)
        f = R.conv2d_nhwc if k == "conv2d_nhwc" else R.depthwise_conv2d_hwcn
        return f(_arr(z, m, "in"), zp("in"), sc("in"), sfb("in"), _arr(z, m, "weights"),
                 np.asarray(sc("weights")).reshape(-1), sfb("weights"), _arr(z, m, "bias"), zp("out"), sc("out"),
                 sfb("out"), m["cfg_stride_height"], m["cfg_stride_width"], _pad_of(m), m["cfg_relu_type"], v,
                 rounding)
    return None


def _vector_cases():
    """Every 3rd reference case with a defined output, dense tensors and a
    cheap twin (MLIPY_REF_MORE_SCALE >= 3: all of them)."""
    step = 1 if SCALE >= 3 else 3
    return _case_files()[::step]


@pytest.mark.skipif(not (VECTORS / "index.json").is_file(),
                    reason=f"reference cases not found at {VECTORS} (set MLI_SHARED to the shared folder)")
def test_twins_against_reference_cases():
    """The twins reproduce MLI's own outputs, both roundings, in the
    reference cases they take (defined output, dense tensors, an in-domain
    call); the rest are counted, not compared."""
    compared, skipped, bad = 0, 0, []
    for cid in _vector_cases():
        z = np.load(VECTORS / f"{cid}.npz")
        m = json.loads(str(z["meta_json"]))
        roles = [r for r in ("in", "weights", "bias", "slope") if f"{r}_shape" in m] + \
            [r for r in m.get("concat_inputs", [])]
        if (not m["output_defined"] or m["expected_status"] != 0 or not _dense(m, roles)
                or m.get("expected_out_mem_stride", [0]) != [0, 0, 0, 0]
                or (m["kernel"] == "fully_connected" and m["weights_mem_stride"][0] and
                    int(np.prod(m["in_shape"][:m["in_rank"]])) >= 8)):
            skipped += 1
            continue
        size = sum(int(np.asarray(z[f]).size) for f in z.files if f.endswith("_data"))
        if size > 20000:
            skipped += 1
            continue
        for rounding in ROUNDINGS:
            key = "expected_out_data_if_round_up" if rounding == "up" and \
                "expected_out_data_if_round_up" in z.files else "expected_out_data"
            try:
                got = twin_of_case(z, m, rounding)
            except ValueError as e:
                bad.append(f"{cid} {rounding}: twin refused: {e}")
                continue
            if got is None:
                break
            want = np.asarray(z[key]).reshape(-1)
            if not np.array_equal(got.reshape(-1), want):
                i = np.flatnonzero(got.reshape(-1) != want)[:5]
                bad.append(f"{cid} {rounding}: at {i.tolist()} twin {got.reshape(-1)[i].tolist()} "
                           f"MLI {want[i].tolist()}")
        else:
            compared += 1
            continue
        skipped += 1
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:30])
    assert compared >= 100, (compared, skipped)


# ------------------------------------------------------- refused arguments --
STATUS = {1: "BAD_TENSOR", 2: "SHAPE_MISMATCH", 3: "INCOMPATEBLE_TENSORS", 4: "BAD_FUNC_CFG"}


def _bad_conv(what):
    x, w, b = np.ones((2, 4, 4), np.int8), np.ones((3, 2, 3, 3), np.int8), np.ones(3, np.int8)
    f_b, pad = 2, (1, 1, 1, 1)
    if what == "bias_frac":
        f_b, pad = 7, (3, 1, 1, 1)  # both bad: the bias frac is checked first
    elif what == "padding":
        pad = (1, 3, 1, 1)
    elif what == "bias_shape":
        b, pad = np.ones(4, np.int8), (3, 1, 1, 1)  # shapes before the cfg
    call = Call("mli_krn_conv2d_chw_fx8", "conv",
                {"in": tensor_spec(x, FX8, x.shape, frac=3), "weights": tensor_spec(w, FX8, w.shape, frac=3),
                 "bias": tensor_spec(b, FX8, b.shape, frac=f_b), "out": _out(64, FX8, frac=3)},
                dict(relu_type=0, stride_width=1, stride_height=1, **_cfg_pad(pad)))
    return call, lambda: R.conv2d_chw("fx8", x, 3, w, 3, b, f_b, 3, 1, 1, pad)


def _bad_pool():
    x = np.ones((2, 4, 4), np.int16)
    cfg = dict(kernel_width=3, kernel_height=3, stride_width=1, stride_height=1, **_cfg_pad((0, 0, 3, 0)))
    call = Call("mli_krn_avepool_chw_fx16", "pool", {"in": tensor_spec(x, FX16, x.shape), "out": _out(64, FX16)}, cfg)
    return call, lambda: R.avepool_chw("fx16", x, 3, 3, 1, 1, (0, 0, 3, 0))


def _bad_permute():
    x = np.ones((2, 3, 4), np.int8)
    call = Call("mli_krn_permute_fx8", "permute", {"in": tensor_spec(x, FX8, x.shape), "out": _out(24, FX8)},
                {"perm_dim": [0, 2, 2, 0]})
    return call, lambda: R.permute(x, [0, 2, 2, 0])


def _bad_concat(what):
    a = np.ones((2, 3), np.int16)
    b = np.ones((3, 4), np.int16) if what == "shape" else np.ones((2, 3, 1), np.int16)
    call = Call("mli_krn_concat_fx16", "concat", {"in0": tensor_spec(a, FX16, a.shape),
                                                   "in1": tensor_spec(b, FX16, b.shape), "out": _out(64, FX16)},
                {"tensors_num": 2, "axis": 1}, inputs=["in0", "in1"])
    return call, lambda: R.concat([a, b], 1)


def _bad_padding():
    x = np.ones((3, 4), np.int8)
    call = Call("mli_krn_padding2d_chw_fx8", "padding2d", {"in": tensor_spec(x, FX8, x.shape), "out": _out(64, FX8)},
                _cfg_pad((1, 1, 1, 1)))
    return call, lambda: R.padding2d_chw(x, 1, 1, 1, 1)


BAD = {"conv_bias_frac": lambda: _bad_conv("bias_frac"), "conv_padding": lambda: _bad_conv("padding"),
       "conv_bias_shape": lambda: _bad_conv("bias_shape"), "pool_padding": _bad_pool, "permute": _bad_permute,
       "concat_shape": lambda: _bad_concat("shape"), "concat_rank": lambda: _bad_concat("rank"),
       "padding2d_rank": _bad_padding}


@pytest.mark.parametrize("what", sorted(BAD))
def test_twin_refusals_name_the_core_status(core, what):
    """Where MLI's first failing check is cheap to state, the twin refuses
    the call naming the status the core returns (MLI's check order)."""
    call, twin = BAD[what]()
    status = run(core, call, "convergent")["ret"]
    assert status in STATUS, status
    with pytest.raises(ValueError, match="^" + STATUS[status]):
        twin()
