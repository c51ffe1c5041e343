"""Differential test of the C core's rest-of-MLI-1.1 kernels against MLI
1.1's own code (../shared/oracle_c: MLI's sources built for x86, one library
per rounding mode).

Each case (`gen_*` below, drawn from (seed, index) alone) is one call of one
C function -- every pooling variant, dispatcher and debug twin, the sa8
convolutions, fully connected sa8, leaky ReLU, softmax, permute, concat and
padding2d -- with hostile arguments mixed in (strides, padding at its
limits, kernels larger than the input, saturating values, bad arguments,
variants outside their domain).  It runs in both rounding modes on the
package's core (the exported mli_krn_* symbols of the built extension, via
ctypes) and on MLI's build, with byte-identical tensors, and compares:

* the status;
* every byte of the output buffer, the bytes past its capacity included, and
  the output tensor's metadata (shape, rank, el_type, element parameters,
  mem_stride, capacity);
* the input buffers (never modified).

Where the core refuses a call as unsafe (mlipy_safety), MLI's call is run in
a forked child instead and the refusal is excused only when MLI is seen to
fail there: it crashes, writes past a capacity, reads past one (two fillings
beyond every capacity give different results), leaves outputs unwritten (two
initial outputs give different results), or runs a window of no or negative
size (the variant outside its domain with a padding not smaller than its
kernel, or an input smaller than the kernel: SPEC_MLI11_MORE 2 and 3.5), or
reads the bits of pointers as values (an sa8 output with per-axis
parameters: its zero point and scale containers hold array pointers) or the
padding of the tensor struct (an output rank above 10).
Every other call runs MLI in this process: the core's checks, MLI's order,
reject it before MLI touches memory, or the core showed that MLI's loops
stay inside the buffers (each has 16 KiB of sentinel bytes after it).

MLI_MORE_ORACLE_CASES scales the run (cases per seed, default 1000; each is
run in both rounding modes); MLI_MORE_ORACLE_SEEDS lists the seeds.
"""
import os
from collections import Counter

import numpy as np
import pytest

from mli11_more_harness import (HAVE_ORACLE, SKIP_REASON, VM, Call, Core, Oracle, mli11, out_spec, run,
                                run_in_child, tensor_spec)

pytestmark = pytest.mark.skipif(not HAVE_ORACLE, reason=SKIP_REASON)

CASES = int(os.environ.get("MLI_MORE_ORACLE_CASES", "1000"))
SEEDS = [int(s) for s in os.environ.get("MLI_MORE_ORACLE_SEEDS", "1,2").split(",")]
FX8, FX16, SA8, SA32 = 0, 1, 2, 3
KIND_EL = {"fx8": FX8, "fx16": FX16, "sa8": SA8}
NP_OF = {FX8: np.int8, FX16: np.int16, SA8: np.int8, SA32: np.int32}


# ------------------------------------------------------------------ values --
def values(rng, el, n, how=None):
    """n values of element type `el`: uniform, extreme (type limits), small."""
    dt = NP_OF[el]
    info = np.iinfo(dt)
    how = how or rng.choice(["uniform", "uniform", "extreme", "small", "same"])
    if how == "extreme":
        v = rng.choice([info.min, info.max, info.min + 1, info.max - 1, 0], n)
    elif how == "small":
        v = rng.integers(-4, 5, n)
    elif how == "same":
        v = np.full(n, rng.integers(info.min, info.max + 1))
    elif how == "max":
        v = np.full(n, info.max)
    elif how == "min":
        v = np.full(n, info.min)
    else:
        v = rng.integers(info.min, info.max + 1, n)
    return np.asarray(v, dtype=dt)


def dense_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.insert(0, acc)
        acc *= s
    return st


def strided_spec(rng, el, shape, frac=0, asym=None, how=None, holes=True):
    """A tensor of `shape` with values; sometimes with row/channel holes."""
    shape = list(shape)
    if holes and len(shape) >= 2 and rng.random() < 0.25:
        st = [0] * len(shape)
        st[-1] = 1
        for i in range(len(shape) - 2, -1, -1):
            st[i] = st[i + 1] * shape[i + 1] + int(rng.integers(0, 3))
        extent = 1 + sum((s - 1) * t for s, t in zip(shape, st))
        data = values(rng, el, extent, how)
        return tensor_spec(data, el, shape, mem_stride=st, frac=frac, asym=asym)
    n = int(np.prod(shape)) if shape else 1
    return tensor_spec(values(rng, el, n, how), el, shape, frac=frac, asym=asym)


def junk_out(rng, need_bytes, el, rank=None, asym=None):
    """An output of about `need_bytes` (sometimes less, sometimes more), junk metadata."""
    r = rng.random()
    cap = need_bytes if r < 0.6 else (need_bytes + int(rng.integers(1, 40)) if r < 0.85 else
                                      max(0, need_bytes - int(rng.integers(1, max(2, need_bytes)))))
    rank = (rank if rank is not None else int(rng.choice([1, 2, 3, 3, 3, 4])))
    shape = [int(x) for x in rng.integers(0, 9, 4)]
    return out_spec(cap, el_type=el, rank=rank, shape=shape, frac=int(rng.integers(0, 16)), asym=asym,
                    seed=int(rng.integers(1 << 30)))


# ----------------------------------------------------------------- pooling --
POOL_FAMILIES = ["maxpool_chw", "avepool_chw", "maxpool_hwc", "avepool_hwc"]


def same_pad(rng, kw, kh):
    return dict(padding_top=int(rng.integers(0, (kh - 1) // 2 + 1)), padding_bottom=int(rng.integers(0, kh // 2 + 1)),
                padding_left=int(rng.integers(0, (kw - 1) // 2 + 1)), padding_right=int(rng.integers(0, kw // 2 + 1)))


def window_cfg(rng, v, kmax):
    """Kernel, stride and padding: inside variant v's condition (mostly) or anywhere."""
    inside = rng.random() < 0.7
    kw = v.kernel_width if (v.kernel_width and inside) else int(rng.integers(1, kmax + 1))
    kh = v.kernel_height if (v.kernel_height and inside) else int(rng.integers(1, kmax + 1))
    st = v.stride if (v.stride and inside) else int(rng.choice([1, 1, 2, 3, int(rng.integers(1, 6))]))
    sh = st if (v.stride and inside) else int(rng.choice([st, int(rng.integers(1, 5))]))
    if inside and v.when == "zero":
        pad = dict(padding_top=0, padding_bottom=0, padding_left=0, padding_right=0)
    elif inside and v.when == "same":
        pad = same_pad(rng, kw, kh)
    else:
        pad = dict(padding_top=int(rng.integers(0, kh)), padding_bottom=int(rng.integers(0, kh)),
                   padding_left=int(rng.integers(0, kw)), padding_right=int(rng.integers(0, kw)))
    return kw, kh, st, sh, pad, inside


def gen_pool(rng, family=None, kind=None):
    family = family or str(rng.choice(POOL_FAMILIES))
    kinds, _, variants = VM.VARIANT_FAMILIES[family]
    kind = kind or str(rng.choice(kinds))
    role = rng.random()
    if role < 0.3:
        v, suffix = VM.GENERIC, ""
    elif role < 0.45:
        v = VM.GENERIC
        suffix = "generic"
    else:
        v = variants[int(rng.integers(len(variants)))]
        suffix = v.suffix
    debug = rng.random() < 0.05 and suffix == ""
    kw, kh, sw, sh, pad, inside = window_cfg(rng, v, 10)
    hwc = family.endswith("hwc")
    el = KIND_EL[kind]
    c = int(rng.integers(1, 6))
    h = max(1, kh + int(rng.integers(-1 if rng.random() < 0.1 else 0, 7)))
    w = max(1, kw + int(rng.integers(-1 if rng.random() < 0.1 else 0, 7)))
    if rng.random() < 0.05:  # a larger window (average pooling beyond 512 elements)
        kh = kw = int(rng.integers(20, 40))
        h, w = kh + int(rng.integers(0, 5)), kw + int(rng.integers(0, 5))
        c = int(rng.integers(1, 3))
        pad = dict(padding_top=0, padding_bottom=0, padding_left=0, padding_right=0)
    shape = [h, w, c] if hwc else [c, h, w]
    asym = {"zero_point": int(rng.integers(-100, 100)), "scale": int(rng.integers(1, 1 << 20)), "dim": -1,
            "scale_frac_bits": int(rng.integers(0, 20))} if el == SA8 else None
    xin = strided_spec(rng, el, shape, frac=int(rng.integers(0, 16)), asym=asym,
                       how=str(rng.choice(["uniform", "extreme", "max", "min", "small"])))
    ho = max(1, -(-(h + pad["padding_top"] + pad["padding_bottom"] - kh + 1) // sh))
    wo = max(1, -(-(w + pad["padding_left"] + pad["padding_right"] - kw + 1) // sw))
    esize = 2 if el == FX16 else 1
    need = c * ho * wo * esize
    out = junk_out(rng, need, int(rng.choice([el, el, el, FX8, FX16, 7])),
                   asym={"zero_point": 3, "scale": 5, "dim": -1, "scale_frac_bits": 2} if el == SA8 else None)
    if rng.random() < 0.15:  # a strided output
        oshape = [ho, wo, c] if hwc else [c, ho, wo]
        st = [0, 0, 0]
        st[2] = 1
        st[1] = oshape[2] + int(rng.integers(0, 3))
        st[0] = st[1] * oshape[1] + int(rng.integers(0, 3))
        if rng.random() < 0.3:  # partly set strides: MLI uses them as given
            st[int(rng.integers(0, 2))] = 0
        out["mem_stride"] = st + [0]
        out["capacity"] = esize * (1 + sum((s - 1) * t for s, t in zip(oshape, st))) + int(rng.integers(0, 8))
        out["bytes"] = bytes(out["capacity"])
    cfg = dict(kernel_width=kw, kernel_height=kh, stride_width=sw, stride_height=sh, **pad)
    call = Call(VM.func_name(family, kind, suffix), "pool", {"in": xin, "out": out}, cfg,
                tags=[family, kind, suffix or "dispatcher", "inside" if inside else "outside"])
    mutate_common(rng, call, el, ["cfg_pool"])
    if debug:
        call.func = "mli_debug_krn_" + call.func[len("mli_krn_"):]
        call.tags.append("debug")
    return call


def mutate_common(rng, call, el, extra=()):
    """Now and then one bad argument."""
    if rng.random() > 0.12:
        return
    what = str(rng.choice(["in_null", "out_null", "out_data_null", "in_rank", "in_type", "in_stride",
                           "out_rank", "in_shape0", "out_stride"] + list(extra)))
    t = call.tensors
    call.tags.append("bad:" + what)
    if what == "in_null":
        t["in"] = None
    elif what == "out_null":
        t["out"] = None
    elif what == "out_data_null":
        t["out"] = dict(t["out"], data_null=True)
    elif what == "in_rank" and t.get("in"):
        t["in"] = dict(t["in"], rank=int(rng.choice([0, 1, 2, 4, 5])))
    elif what == "in_type" and t.get("in"):
        t["in"] = dict(t["in"], el_type=int(rng.choice([x for x in (0, 1, 2, 3) if x != el])))
    elif what == "in_stride" and t.get("in"):
        st = list(t["in"]["mem_stride"])
        st[max(0, t["in"]["rank"] - 1)] = int(rng.choice([2, -1, 3]))
        t["in"] = dict(t["in"], mem_stride=st)
    elif what == "out_rank" and t.get("out"):
        t["out"] = dict(t["out"], rank=int(rng.choice([0, 5, 6, 9, 10, 11])))
    elif what == "in_shape0" and t.get("in") and t["in"]["rank"]:
        sh = list(t["in"]["shape"])
        sh[int(rng.integers(0, t["in"]["rank"]))] = 0
        t["in"] = dict(t["in"], shape=sh)
    elif what == "out_stride" and t.get("out"):
        st = list(t["out"]["mem_stride"])
        st[int(rng.integers(0, 4))] = int(rng.choice([-1, 2, 7]))
        t["out"] = dict(t["out"], mem_stride=st)
    elif what == "cfg_conv" and call.cfg is not None:
        k = str(rng.choice(["null", "pad", "stride"]))
        if k == "null":
            call.cfg = None
        elif k == "pad":
            call.cfg["padding_top"] = int(call.tensors["weights"]["shape"][1]) if call.tensors.get("weights") else 9
        else:
            call.cfg["stride_width"] = 0
    elif what == "cfg_pool" and call.cfg is not None:
        k = str(rng.choice(["null", "pad", "stride", "kernel0"]))
        if k == "null":
            call.cfg = None
        elif k == "pad":
            call.cfg["padding_left"] = call.cfg["kernel_width"] + int(rng.integers(0, 2))
        elif k == "stride":
            call.cfg["stride_height"] = 0
        else:
            call.cfg["kernel_width"] = 0



# ----------------------------------------------- leaky ReLU and softmax --
def rand_shape(rng, rank, hi=6):
    return [int(x) for x in rng.integers(1, hi + 1, rank)]


def gen_leaky(rng):
    kind = str(rng.choice(["fx8", "fx16"]))
    el = KIND_EL[kind]
    rank = int(rng.integers(0, 5))
    shape = rand_shape(rng, rank)
    xin = strided_spec(rng, el, shape, frac=int(rng.integers(0, 16)), holes=False)
    xin["rank"] = rank
    a = int(values(rng, el, 1)[0])
    sf = int(rng.choice([0, 3, 7, 8, 14, 15, 16, int(rng.integers(0, 20))]))
    if rng.random() < 0.5:
        slope = {"bytes": None, "scalar": a, "capacity": 0, "mem_stride": [0] * 4, "shape": [0] * 4, "rank": 0,
                 "el_type": el, "frac": sf}
    else:
        srank = int(rng.integers(1, 4))
        slope = tensor_spec(np.array([a] * (1 if rng.random() < 0.9 else 2), NP_OF[el]), el,
                            [1] * (srank - 1) + [1 if rng.random() < 0.9 else 2], frac=sf)
    n = int(np.prod(shape)) if rank else 1
    esize = 2 if el == FX16 else 1
    out = junk_out(rng, n * esize, el, rank=int(rng.integers(0, 5)))
    call = Call(f"mli_krn_leaky_relu_{kind}", "leaky_relu", {"in": xin, "slope_coeff": slope, "out": out},
                tags=["leaky_relu", kind])
    r = rng.random()
    if r < 0.05:
        call.tensors["slope_coeff"] = None
    elif r < 0.1:
        call.tensors["slope_coeff"] = dict(slope, el_type=int(rng.choice([0, 1, 2])))
    elif r < 0.15 and rank:
        call.tensors["out"] = dict(out, mem_stride=[int(x) for x in rng.integers(0, 3, 4)])
    mutate_common(rng, call, el)
    return call


def gen_softmax(rng):
    kind = str(rng.choice(["fx8", "fx16"]))
    el = KIND_EL[kind]
    rank = int(rng.integers(0, 5))
    shape = rand_shape(rng, rank, 7)
    how = str(rng.choice(["uniform", "extreme", "small", "same", "max", "min"]))
    xin = strided_spec(rng, el, shape, frac=int(rng.choice([0, 1, 4, 7, 10, 15, 20, int(rng.integers(0, 16))])),
                       holes=False, how=how)
    xin["rank"] = rank
    if rng.random() < 0.05:  # many elements: the normalisation of a large sum
        n = int(rng.integers(2000, 70000))
        xin = tensor_spec(values(rng, el, n, "same"), el, [n], frac=int(rng.integers(0, 16)))
        shape, rank = [n], 1
    n = int(np.prod(shape)) if rank else 1
    esize = 2 if el == FX16 else 1
    out = junk_out(rng, n * esize, el, rank=int(rng.integers(0, 5)))
    call = Call(f"mli_krn_softmax_{kind}", "softmax", {"in": xin, "out": out}, tags=["softmax", kind, how])
    mutate_common(rng, call, el)
    return call


# ------------------------------------------ permute, concat, padding2d --
def gen_permute(rng):
    kind = str(rng.choice(["fx8", "fx16"]))
    el = KIND_EL[kind]
    rank = int(rng.integers(0, 5))
    shape = rand_shape(rng, rank, 5)
    xin = strided_spec(rng, el, shape, frac=int(rng.integers(0, 16)), holes=rng.random() < 0.1)
    xin["rank"] = rank
    perm = [int(x) for x in rng.permutation(4)] if rank == 4 else \
        [int(x) for x in rng.permutation(max(rank, 1))][:rank] + [int(x) for x in rng.integers(0, 9, 4 - rank)]
    if rng.random() < 0.1 and rank:
        perm[int(rng.integers(0, rank))] = int(rng.integers(0, 5))
    n = int(np.prod(shape)) if rank else 1
    esize = 2 if el == FX16 else 1
    out = junk_out(rng, n * esize, el)
    call = Call(f"mli_krn_permute_{kind}", "permute", {"in": xin, "out": out}, {"perm_dim": perm},
                tags=["permute", kind])
    if rng.random() < 0.04:
        call.cfg = None
    mutate_common(rng, call, el)
    return call


def gen_concat(rng):
    kind = str(rng.choice(["fx8", "fx16"]))
    el = KIND_EL[kind]
    rank = int(rng.integers(1, 5))
    base = rand_shape(rng, rank, 4)
    axis = int(rng.integers(0, rank))
    num = int(rng.choice([1, 2, 3, 4, 8, int(rng.integers(1, 9))]))
    frac = int(rng.integers(0, 16))
    tensors, total = {}, 0
    for i in range(num):
        sh = list(base)
        sh[axis] = int(rng.integers(1, 4))
        total += int(np.prod(sh))
        tensors[f"in{i}"] = strided_spec(rng, el, sh, frac=frac, holes=(i == 0 and rng.random() < 0.2))
    esize = 2 if el == FX16 else 1
    tensors["out"] = junk_out(rng, total * esize, el)
    cfg = {"tensors_num": num, "axis": axis}
    inputs = [f"in{i}" for i in range(num)]
    call = Call(f"mli_krn_concat_{kind}", "concat", tensors, cfg, inputs=inputs, tags=["concat", kind])
    r = rng.random()
    if r < 0.03:
        call.inputs = None
    elif r < 0.06:
        call.cfg = None
    elif r < 0.1:
        call.cfg["tensors_num"] = int(rng.choice([0, 9]))
    elif r < 0.13:
        call.cfg["axis"] = rank + int(rng.integers(0, 2))
    elif r < 0.2 and num > 1:
        i = int(rng.integers(1, num))
        t = dict(tensors[f"in{i}"])
        what = str(rng.choice(["frac", "type", "rank", "shape", "stride", "null"]))
        call.tags.append("bad:" + what)
        if what == "frac":
            t["frac"] = (frac + 1) % 16
        elif what == "type":
            t["el_type"] = 1 - el if el < 2 else 0
        elif what == "rank":
            t["rank"] = rank % 4 + 1
        elif what == "shape":
            d = [x for x in range(rank) if x != axis]
            if d:
                t["shape"] = list(t["shape"])
                t["shape"][d[0]] += 1
        elif what == "stride":
            t["mem_stride"] = [3, 0, 0, 0]
        else:
            t = None
        call.tensors[f"in{i}"] = t
    elif r < 0.25:
        call.tensors["in0"] = None if rng.random() < 0.5 else dict(tensors["in0"], el_type=int(rng.choice([2, 3])))
    return call


def gen_padding(rng):
    kind = str(rng.choice(["fx8", "fx16"]))
    layout = str(rng.choice(["chw", "hwc"]))
    el = KIND_EL[kind]
    shape = rand_shape(rng, 3, 5)
    xin = strided_spec(rng, el, shape, frac=int(rng.integers(0, 16)), holes=rng.random() < 0.1)
    pad = {k: int(rng.integers(0, 4)) for k in ("padding_left", "padding_right", "padding_top", "padding_bottom")}
    c, h, w = (shape[2], shape[0], shape[1]) if layout == "hwc" else shape
    n = c * (h + pad["padding_top"] + pad["padding_bottom"]) * (w + pad["padding_left"] + pad["padding_right"])
    esize = 2 if el == FX16 else 1
    out = junk_out(rng, n * esize, el)
    call = Call(f"mli_krn_padding2d_{layout}_{kind}", "padding2d", {"in": xin, "out": out}, pad,
                tags=["padding2d", layout, kind])
    if rng.random() < 0.04:
        call.cfg = None
    mutate_common(rng, call, el)
    return call



# -------------------------------------------------------------------- sa8 --
def wrap32(v):
    return (int(v) + (1 << 31)) % (1 << 32) - (1 << 31)


def bias_scale_for(in_scale, in_sfb, w_scale, w_sfb, b_sfb):
    """The bias scale MLI's check accepts (its wrapping product and shift)."""
    e = wrap32(in_scale * w_scale)
    sh = in_sfb + w_sfb - b_sfb
    if sh > 0:
        e >>= sh & 63
    else:
        e = ((e << (sh & 63)) + (1 << 63)) % (1 << 64) - (1 << 63)
    return e


def sa8_quant(rng, wild=False):
    if wild or rng.random() < 0.1:
        return {"scale": int(rng.integers(-(1 << 31), 1 << 31)), "sfb": int(rng.integers(-128, 128))}
    return {"scale": int(rng.integers(1 << 13, 1 << 16)), "sfb": int(rng.integers(10, 24))}


def zero_point(rng):
    r = rng.random()
    if r < 0.1:
        return int(rng.choice([32767, -32767, 30000, -30000]))
    if r < 0.2:
        return 0
    return int(rng.integers(-128, 128))


def sa8_tensors(rng, in_shape, w_shape, oc, w_dim, n_scales):
    """in, weights, bias and out specs (scales consistent with MLI's bias check, mostly)."""
    qi, qw, qo = sa8_quant(rng), sa8_quant(rng), sa8_quant(rng)
    w_scales = [int(rng.integers(1 << 13, 1 << 16)) for _ in range(n_scales)]
    if rng.random() < 0.05:
        w_scales = [int(rng.integers(-(1 << 31), 1 << 31)) for _ in range(n_scales)]
    wild_out = rng.random() < 0.1
    out_sfb = qi["sfb"] + qw["sfb"] - int(rng.integers(18, 26)) if not wild_out else int(rng.integers(-128, 128))
    b_sfb = qi["sfb"] + qw["sfb"] - int(rng.choice([0, 1, 2, 4, 8, 16, int(rng.integers(-3, 30))]))
    b_sfb = max(-128, min(127, b_sfb))
    b_scales = [bias_scale_for(qi["scale"], qi["sfb"], ws, qw["sfb"], b_sfb) + int(rng.choice([0, 0, 1, -1]))
                for ws in w_scales]
    if rng.random() < 0.05:
        b_scales[int(rng.integers(0, len(b_scales)))] += int(rng.choice([2, -5, 1000]))
    # an int32 field (after the nudge: a scale near -2^31 nudged by -5 stays in range)
    b_scales = [max(-(1 << 31), min((1 << 31) - 1, b)) for b in b_scales]
    in_asym = {"zero_point": zero_point(rng), "scale": qi["scale"], "dim": -1, "scale_frac_bits": qi["sfb"]}
    how = str(rng.choice(["uniform", "uniform", "extreme", "max", "min", "small"]))
    xin = strided_spec(rng, SA8, in_shape, asym=in_asym, how=how, holes=rng.random() < 0.5)
    per_axis = w_dim >= 0
    w_asym = {"zero_point": [int(rng.integers(-3, 3)) for _ in range(n_scales)] if per_axis else 0,
              "scale": w_scales if per_axis else w_scales[0], "dim": w_dim, "scale_frac_bits": qw["sfb"]}
    wt = strided_spec(rng, SA8, w_shape, asym=w_asym, how=str(rng.choice(["uniform", "extreme", "max", "small"])),
                      holes=rng.random() < 0.3)
    b_asym = {"zero_point": [0] * n_scales if per_axis else 0, "scale": b_scales if per_axis else b_scales[0],
              "dim": 0 if per_axis else -1, "scale_frac_bits": b_sfb}
    bvals = rng.integers(-(1 << 31), 1 << 31, oc) if rng.random() < 0.1 else rng.integers(-20000, 20000, oc)
    bias = tensor_spec(np.asarray(bvals, np.int32), SA32, [oc], asym=b_asym)
    out_asym = {"zero_point": zero_point(rng), "scale": int(rng.integers(1 << 13, 1 << 16)) if not wild_out else
                int(rng.integers(-(1 << 31), 1 << 31)), "dim": -1, "scale_frac_bits": out_sfb}
    return xin, wt, bias, out_asym


def mutate_sa8(rng, call):
    if rng.random() > 0.15:
        return
    t = call.tensors
    what = str(rng.choice(["w_type", "b_type", "in_zp_min", "out_zp_min", "w_dim", "b_dim", "in_dim", "out_dim",
                           "out_scale0", "w_null", "b_null", "b_data_null", "out_rank", "w_stride"]))
    call.tags.append("bad:" + what)
    if what == "w_type":
        t["weights"] = dict(t["weights"], el_type=int(rng.choice([0, 1, 3])))
    elif what == "b_type":
        t["bias"] = dict(t["bias"], el_type=int(rng.choice([0, 1, 2])))
    elif what in ("in_zp_min", "out_zp_min"):
        r = "in" if what == "in_zp_min" else "out"
        if t.get(r) and t[r].get("asym"):
            t[r] = dict(t[r], asym=dict(t[r]["asym"], zero_point=-32768))
    elif what in ("w_dim", "b_dim", "in_dim", "out_dim"):
        r = {"w_dim": "weights", "b_dim": "bias", "in_dim": "in", "out_dim": "out"}[what]
        a = dict(t[r]["asym"])
        if a["dim"] < 0:
            a.update(dim=0, zero_point=[a["zero_point"]] * 8, scale=[a["scale"]] * 8)
        else:
            a.update(dim=int(rng.choice([-1, 1, 2])) if a["dim"] != 1 else 0)
            if a["dim"] < 0:
                a.update(zero_point=a["zero_point"][0], scale=a["scale"][0])
        t[r] = dict(t[r], asym=a)
    elif what == "out_scale0":
        t["out"] = dict(t["out"], asym=dict(t["out"]["asym"], scale=0))
    elif what == "w_null":
        t["weights"] = None
    elif what == "b_null":
        t["bias"] = None
    elif what == "b_data_null":
        t["bias"] = dict(t["bias"], data_null=True)
    elif what == "out_rank":
        t["out"] = dict(t["out"], rank=int(rng.choice([0, 2, 4, 5, 9, 10])))
    elif what == "w_stride":
        st = list(t["weights"]["mem_stride"])
        st[3] = int(rng.choice([2, 0]))
        st[int(rng.integers(0, 3))] = int(rng.integers(0, 50))
        t["weights"] = dict(t["weights"], mem_stride=st)


def gen_conv_sa8(rng, family=None):
    family = family or str(rng.choice(["conv2d_nhwc", "depthwise_conv2d_hwcn"]))
    dw = family.startswith("depthwise")
    _, _, variants = VM.VARIANT_FAMILIES[family]
    role = rng.random()
    if role < 0.3:
        v, suffix = VM.GENERIC, ""
    elif role < 0.45:
        v, suffix = VM.GENERIC, "generic"
    else:
        v = variants[int(rng.integers(len(variants)))]
        suffix = v.suffix
    kw, kh, sw, sh, pad, inside = window_cfg(rng, v, 5)
    if not inside and rng.random() < 0.5:
        sw = sh = int(rng.choice([1, 2, 3]))
    c = int(rng.integers(1, 7))
    h = max(1, kh + int(rng.integers(-1 if rng.random() < 0.1 else 0, 6)))
    w = max(1, kw + int(rng.integers(-1 if rng.random() < 0.1 else 0, 6)))
    if dw:
        m = int(rng.choice([1, 1, 2, 3]))
        oc = m * c
        w_shape, w_dim, n_sc = [1, kh, kw, oc], 3, oc
    else:
        oc = int(rng.integers(1, 6))
        w_shape, w_dim, n_sc = [oc, kh, kw, c], 0, oc
    if rng.random() < 0.04:  # many channels: sums near the accumulator limit
        c = int(rng.integers(60, 130))
        oc = c if dw else int(rng.integers(1, 3))
        w_shape = [1, kh, kw, oc] if dw else [oc, kh, kw, c]
        n_sc = oc
    xin, wt, bias, out_asym = sa8_tensors(rng, [h, w, c], w_shape, oc, w_dim, n_sc)
    ho = max(1, -(-(h + pad["padding_top"] + pad["padding_bottom"] - kh + 1) // sh))
    wo = max(1, -(-(w + pad["padding_left"] + pad["padding_right"] - kw + 1) // sw))
    out = junk_out(rng, ho * wo * oc, int(rng.choice([SA8, SA8, FX8, 7])), rank=int(rng.choice([1, 3, 3, 4])),
                   asym=out_asym)
    if rng.random() < 0.15:
        st = [0, 0, 0]
        st[2] = 1
        st[1] = oc + int(rng.integers(0, 3))
        st[0] = st[1] * wo + int(rng.integers(0, 3))
        if rng.random() < 0.3:
            st[0] = 0
        out["mem_stride"] = st + [0]
        out["capacity"] = 1 + (ho - 1) * st[0] + (wo - 1) * st[1] + oc - 1 + int(rng.integers(0, 8))
        out["bytes"] = bytes(out["capacity"])
    cfg = dict(relu_type=int(rng.choice([0, 1, 2, 3, 0, 1, 2, 3, 4, -1, 255])), stride_width=sw, stride_height=sh,
               **pad)
    call = Call(VM.func_name(family, "sa8_sa8_sa32", suffix), "conv",
                {"in": xin, "weights": wt, "bias": bias, "out": out}, cfg,
                tags=[family, suffix or "dispatcher", "inside" if inside else "outside"])
    mutate_sa8(rng, call)
    mutate_common(rng, call, SA8, ["cfg_conv"])
    if suffix == "" and rng.random() < 0.05:
        call.func = "mli_debug_krn_" + call.func[len("mli_krn_"):]
        call.tags.append("debug")
    return call


def gen_fc_sa8(rng):
    n = int(rng.choice([1, 2, 3, 5, 7, 8, 9, 11, 12, 16, 19, int(rng.integers(1, 40))]))
    k = int(rng.integers(1, 7))
    xin_shape = [n] if rng.random() < 0.7 else [1, n]
    xin, wt, bias, out_asym = sa8_tensors(rng, xin_shape, [k, n], k, -1, 1)
    xin = dict(xin, mem_stride=[0, 0, 0, 0])
    if rng.random() < 0.3:  # weight rows with a stride
        rs = n + int(rng.integers(1, 5))
        data = values(rng, SA8, (k - 1) * rs + n)
        wt = tensor_spec(data, SA8, [k, n], mem_stride=[rs, 1], asym=wt["asym"])
    out = junk_out(rng, k, int(rng.choice([SA8, SA8, FX16])), rank=int(rng.choice([1, 2, 3])), asym=out_asym)
    call = Call("mli_krn_fully_connected_sa8_sa8_sa32", "fully_connected",
                {"in": xin, "weights": wt, "bias": bias, "out": out}, tags=["fully_connected", f"n{n}"])
    mutate_sa8(rng, call)
    mutate_common(rng, call, SA8)
    return call


# ------------------------------------------------------------------ driver --
GENERATORS = [(gen_pool, 4.0), (gen_conv_sa8, 3.0), (gen_fc_sa8, 1.0), (gen_leaky, 1.0), (gen_softmax, 1.0),
              (gen_permute, 0.7), (gen_concat, 0.7), (gen_padding, 0.7)]


def gen_case(seed, index):
    rng = np.random.default_rng([seed, index])
    gens, weights = zip(*GENERATORS)
    g = gens[int(rng.choice(len(gens), p=np.array(weights) / sum(weights)))]
    return g(rng)


def _sentinel():
    """What mli11.Buffer puts after every buffer."""
    return b"\xa5" * mli11().SLACK


def _same_inputs(a, b, call):
    return all(a.get(r + "_buf") == b.get(r + "_buf") for r in call.tensors if r != "out")


def _inputs_untouched(res, call):
    return all(res.get(r + "_buf") in (None, spec["bytes"] + _sentinel())
               for r, spec in call.tensors.items() if r != "out" and spec is not None and spec.get("bytes"))


def compare(core, call, rounding, stats):
    """None when the core agrees with MLI on `call`, else a description;
    the second value is the excuse of an excused safety refusal."""
    mine = run(core, call, rounding)
    if call.func.startswith("mli_debug_krn_"):
        stats["debug"] += 1
        theirs = run(Oracle(rounding), call, rounding) if mine["ret"] is not None else \
            run_in_child(rounding, call, rounding)
        if theirs.get("crashed") and mine["ret"] is None:
            return None, "crash"
        return (None if theirs.get("ret") == mine["ret"] else f"debug: MLI {theirs.get('ret')} core {mine['ret']}"), None
    detail = core.detail()
    stats["ok" if mine["ret"] == 0 else ("safety" if detail["safety"] else "error")] += 1
    if not _inputs_untouched(mine, call):
        return "the core modified an input buffer", None
    if mine["ret"] != 0 and mine.get("out_buf") is not None and \
            mine["out_buf"] != call.tensors["out"]["bytes"] + _sentinel():
        return "the core wrote to the output of a call it rejected", None
    if mine["ret"] != 0 and detail["safety"]:  # MLI may crash here: it runs in children
        return excuse(call, rounding, detail)
    if mine["ret"] == 0 and _pointwise_stride_bug(call):
        return _compare_beyond_input(mine, call, rounding), None
    # the core ran MLI's checks, or showed that MLI stays inside the buffers
    theirs = run(Oracle(rounding), call, rounding)
    if theirs.get("crashed"):
        return f"MLI crashed (signal {theirs['crashed']}), core status {mine['ret']}", None
    if theirs.get("error"):
        return f"oracle harness error {theirs['error']}", None
    if theirs["ret"] != mine["ret"]:
        return f"status: MLI {theirs['ret']} core {mine['ret']} ({detail})", None
    if mine.get("out_buf") != theirs.get("out_buf"):
        a = np.frombuffer(mine["out_buf"], np.uint8)
        b = np.frombuffer(theirs["out_buf"], np.uint8)
        diff = np.nonzero(a != b)[0]
        return f"out bytes differ at {diff[:8].tolist()} (of {len(diff)}): MLI {b[diff[:8]].tolist()} " \
               f"core {a[diff[:8]].tolist()}", None
    if mine.get("out_meta") != theirs.get("out_meta"):
        return f"out metadata: MLI {theirs.get('out_meta')} core {mine.get('out_meta')}", None
    if not _same_inputs(mine, theirs, call):
        return "an input buffer differs after the call", None
    return None, None


def _pointwise_stride_bug(call):
    """Whether `call` runs conv2d_nhwc sa8's 1x1 loop with stride_width > 1,
    whose input addresses may reach past the input (SPEC_MLI11_MORE 3.6)."""
    cfg, w = call.cfg, call.tensors.get("weights")
    if cfg is None or w is None or cfg["stride_width"] <= 1 or "conv2d_nhwc_sa8" not in call.func:
        return False
    if call.func.endswith("_k1x1_nopad"):
        return True
    no_pad = not any(cfg[k] for k in ("padding_top", "padding_bottom", "padding_left", "padding_right"))
    return call.func.endswith("sa8_sa32") and no_pad and list(w["shape"][1:3]) == [1, 1]


def _compare_beyond_input(mine, call, rounding):
    """The core computed a stride-bug call: MLI, run apart with two
    different fillings past every buffer, must give the core's output with
    both (what MLI reads past the input cannot change a defined output)."""
    cap = call.tensors["out"]["capacity"]
    for fill in (11, 12):
        theirs = run_in_child(rounding, call, rounding, fill=fill)
        if theirs.get("crashed") or theirs.get("error"):
            return f"MLI failed on a call the core computed: {theirs}"
        if theirs["ret"] != 0:
            return f"status: MLI {theirs['ret']} core 0"
        if theirs["out_buf"][:cap] != mine["out_buf"][:cap] or theirs.get("out_meta") != mine.get("out_meta"):
            return f"out differs from MLI's with filling {fill} past the buffers"
    return None


def excuse(call, rounding, detail):
    """A safety refusal: excused only when MLI is seen to fail on the call.
    First MLI runs with every buffer ending right before an inaccessible page
    (a fault proves an access past a capacity), then, if it completes, with
    two fillings beyond the capacities and two initial outputs."""
    if detail["field"] == "rank" and "padding" in detail["reason"]:
        # MLI reads mem_stride[rank - 1] out of the struct's padding: its status depends
        # on those bytes, whatever status it gives here (as tests/test_mli11_api_oracle.py)
        return None, "reads the tensor struct's padding"
    g = run_in_child(rounding, call, rounding, guard=True)
    if g.get("crashed"):
        return None, "outside the buffers (fault)"
    if g.get("error"):
        return f"oracle harness error {g['error']}", None
    if g["ret"] != 0:
        return f"core refused ({detail}) where MLI returns status {g['ret']}", None
    a = run_in_child(rounding, call, rounding, fill=11, out_fill=5)
    b = run_in_child(rounding, call, rounding, fill=12, out_fill=6)
    if a.get("crashed") or b.get("crashed"):
        return None, "outside the buffers (fault)"
    if any(a.get(r + "_beyond") or b.get(r + "_beyond") for r in call.tensors):
        return None, "writes outside"
    cap = call.tensors["out"]["capacity"] if call.tensors.get("out") else 0
    if (a.get("out_buf") or b"")[:cap] != (b.get("out_buf") or b"")[:cap]:
        return None, "reads outside or leaves outputs unwritten"
    if detail["argument"] in ("in", "cfg") and detail["field"] in ("shape", "padding"):
        return None, "degenerate windows"
    if detail["argument"] == "out" and detail["field"] == "el_params.asym.dim":
        return None, "reads pointer bits as values"
    return f"core refused ({detail}) where MLI stays inside its buffers", None


@pytest.fixture(scope="module")
def core():
    return Core()


@pytest.mark.parametrize("seed", SEEDS)
def test_against_mli11(core, seed):
    counts, excused, stats, bad = Counter(), Counter(), Counter(), []
    for i in range(CASES):
        call = gen_case(seed, i)
        for rounding in ("convergent", "up"):
            counts[rounding] += 1
            why, exc = compare(core, call, rounding, stats)
            if exc:
                excused[exc] += 1
            if why:
                bad.append(f"seed {seed} case {i} {rounding} {call.func} {call.tags} {call.cfg}: {why}")
    total = sum(counts.values())
    print(f"\nseed {seed}: {total} calls ({dict(counts)}), {len(bad)} mismatches; core results {dict(stats)}; "
          f"excused refusals {dict(excused)}")
    assert not bad, f"{len(bad)} mismatches of {total} calls:\n" + "\n".join(bad[:30])


# ------------------------------------------------ accumulator limits --
def _sa8_big(family, c, oc, zp, wval, k=3):
    """An sa8 convolution whose weights' sums or products reach ACC0's 40 bits."""
    rng = np.random.default_rng(c)
    dw = family.startswith("depthwise")
    w_shape = [1, k, k, oc] if dw else [oc, k, k, c]
    scales = [1 << 14] * oc
    in_asym = {"zero_point": zp, "scale": 1 << 14, "dim": -1, "scale_frac_bits": 14}
    w_asym = {"zero_point": [0] * oc, "scale": scales, "dim": 3 if dw else 0, "scale_frac_bits": 14}
    b_asym = {"zero_point": [0] * oc, "scale": [bias_scale_for(1 << 14, 14, s, 14, 28) for s in scales], "dim": 0,
              "scale_frac_bits": 28}
    x = rng.integers(-128, 128, k * k * c).astype(np.int8) if wval == "mixed" else np.full(k * k * c, -128, np.int8)
    w = np.full(int(np.prod(w_shape)), wval if wval != "mixed" else 127, np.int8)
    if wval == "mixed":
        w[::3] = -128
    out_asym = {"zero_point": 0, "scale": 1 << 14, "dim": -1, "scale_frac_bits": 0}
    return Call(VM.func_name(family, "sa8_sa8_sa32", "generic"), "conv",
                {"in": tensor_spec(x, SA8, [k, k, c], asym=in_asym), "weights": tensor_spec(w, SA8, w_shape, asym=w_asym),
                 "bias": tensor_spec(np.zeros(oc, np.int32), SA32, [oc], asym=b_asym),
                 "out": out_spec(oc, el_type=SA8, asym=out_asym)},
                dict(relu_type=0, stride_width=1, stride_height=1, padding_left=0, padding_right=0, padding_top=0,
                     padding_bottom=0), tags=["limit", family])


def _avepool_big(family, kind, how, k=33):
    hwc = family.endswith("hwc")
    el = KIND_EL[kind]
    c = 2
    shape = [k + 2, k + 2, c] if hwc else [c, k + 2, k + 2]
    n = int(np.prod(shape))
    info = np.iinfo(NP_OF[el])
    x = np.full(n, info.max if how == "max" else info.min, NP_OF[el])
    if how == "mixed":  # the first half at the minimum, the rest at the maximum: the order of saturation shows
        x[n // 2:] = info.max
    asym = {"zero_point": 0, "scale": 1, "dim": -1, "scale_frac_bits": 0} if el == SA8 else None
    cfg = dict(kernel_width=k, kernel_height=k, stride_width=1, stride_height=1, padding_left=1, padding_right=0,
               padding_top=1, padding_bottom=0)
    esize = 2 if el == FX16 else 1
    return Call(VM.func_name(family, kind, "generic"), "pool",
                {"in": tensor_spec(x, el, shape, asym=asym), "out": out_spec(c * 16 * esize, el_type=el)}, cfg,
                tags=["limit", family, kind, how])


def _fc_big(n, zp):
    rng = np.random.default_rng(n)
    asym_in = {"zero_point": zp, "scale": 1 << 14, "dim": -1, "scale_frac_bits": 14}
    asym_w = {"zero_point": 0, "scale": 1 << 14, "dim": -1, "scale_frac_bits": 14}
    asym_b = {"zero_point": 0, "scale": bias_scale_for(1 << 14, 14, 1 << 14, 14, 28), "dim": -1, "scale_frac_bits": 28}
    w = np.full(2 * n, 127, np.int8)
    w[n:] = rng.integers(-128, 128, n)
    return Call("mli_krn_fully_connected_sa8_sa8_sa32", "fully_connected",
                {"in": tensor_spec(np.full(n, -128, np.int8), SA8, [n], asym=asym_in),
                 "weights": tensor_spec(w, SA8, [2, n], asym=asym_w),
                 "bias": tensor_spec(np.array([1 << 30, -(1 << 30)], np.int32), SA32, [2], asym=asym_b),
                 "out": out_spec(2, el_type=SA8, asym={"zero_point": 0, "scale": 1 << 14, "dim": -1,
                                                         "scale_frac_bits": 0})}, tags=["limit", "fc", str(n)])


def _softmax_big(kind, n):
    el = KIND_EL[kind]
    return Call(f"mli_krn_softmax_{kind}", "softmax",
                {"in": tensor_spec(np.full(n, 5, NP_OF[el]), el, [n], frac=3),
                 "out": out_spec(n * (2 if el == FX16 else 1), el_type=el)}, tags=["limit", "softmax", kind])


LIMIT_CASES = {
    **{f"avepool_{lay}_{k}_{how}": (lambda lay=lay, k=k, how=how: _avepool_big(f"avepool_{lay}", k, how))
       for lay in ("chw", "hwc") for k in ("fx16", "fx8") for how in ("max", "min", "mixed")},
    "avepool_hwc_sa8_max": lambda: _avepool_big("avepool_hwc", "sa8", "max"),
    "conv2d_nhwc_sum_steps": lambda: _sa8_big("conv2d_nhwc", 14600, 1, 32767, 127),
    "conv2d_nhwc_sum_steps_neg": lambda: _sa8_big("conv2d_nhwc", 14601, 1, -32767, 127),
    "conv2d_nhwc_mixed": lambda: _sa8_big("conv2d_nhwc", 14600, 1, 32767, "mixed"),
    "conv2d_nhwc_sat32": lambda: _sa8_big("conv2d_nhwc", 600, 2, 32767, 127),
    "depthwise_wide": lambda: _sa8_big("depthwise_conv2d_hwcn", 3, 3, 32767, 127, k=5),
    "fc_sum_steps": lambda: _fc_big(40000, 32767),
    "fc_sat32": lambda: _fc_big(3000, -32767),
    "softmax_fx16_sum_beyond_2_31": lambda: _softmax_big("fx16", 70000),
    "softmax_fx8_many": lambda: _softmax_big("fx8", 70000),
}


@pytest.mark.parametrize("name", sorted(LIMIT_CASES))
def test_accumulator_limits(core, name):
    """Sums that reach the accumulators' limits (40-bit saturation step by
    step, ACC0's 32-bit read-out, the 40-bit softmax sum): MLI's bits."""
    call = LIMIT_CASES[name]()
    stats = Counter()
    for rounding in ("convergent", "up"):
        why, exc = compare(core, call, rounding, stats)
        assert why is None, f"{rounding}: {why}"
    assert stats["ok"] == 2, stats


# ------------------------------------------------ the sa8 1x1 stride bug --
def _stride_bug_call(rng):
    """A 1x1 sa8 convolution without padding and stride_width > 1 (the
    dispatcher or k1x1_nopad): its loop reads past the input for most
    shapes; a narrow ReLU (RELU_1 with a small output scale) often makes the
    output independent of what it reads there."""
    h, w, c, oc = (int(rng.integers(1, 9)), int(rng.integers(2, 9)), int(rng.integers(1, 9)),
                   int(rng.integers(1, 6)))
    sw, sh = int(rng.integers(2, 4)), int(rng.integers(1, 4))
    xin, wt, bias, out_asym = sa8_tensors(rng, [h, w, c], [oc, 1, 1, c], oc, 0, oc)
    ho, wo = -(-h // sh), -(-w // sw)
    out = out_spec(ho * wo * oc, el_type=SA8, asym=out_asym)
    cfg = dict(relu_type=int(rng.choice([0, 2, 2, 3])), stride_width=sw, stride_height=sh, padding_left=0,
               padding_right=0, padding_top=0, padding_bottom=0)
    suffix = str(rng.choice(["", "k1x1_nopad"]))
    return Call(VM.func_name("conv2d_nhwc", "sa8_sa8_sa32", suffix), "conv",
                {"in": xin, "weights": wt, "bias": bias, "out": out}, cfg, tags=["stride_bug"])


def _compare_both(core, call, stats, excused, bad, label):
    """`compare` in both rounding modes: excuses counted in `excused`,
    mismatches added to `bad`; the roundings in which the core computed the
    call (neither refused nor mismatched)."""
    computed = []
    for rounding in ("convergent", "up"):
        why, exc = compare(core, call, rounding, stats)
        if exc:
            excused[exc] += 1
        if why:
            bad.append(f"{label} {rounding}: {why}")
        elif not exc:
            computed.append(rounding)
    return computed


def test_pointwise_stride_bug(core):
    """Where the 1x1 loop reads past the input (SPEC_MLI11_MORE 3.6), the
    core computes exactly the outputs that do not depend on what follows the
    buffer (MLI gives them with two different fillings there) and refuses
    the rest, which MLI is seen to compute from those bytes."""
    rng = np.random.default_rng(36)
    stats, excused, bad = Counter(), Counter(), []
    for i in range(150):
        call = _stride_bug_call(rng)
        for rounding in _compare_both(core, call, stats, excused, bad, f"case {i} {call.func} {call.cfg}"):
            if run_in_child(rounding, call, rounding, guard=True).get("crashed"):
                stats["computed past the input"] += 1
    print(f"\ncore results {dict(stats)}; excused refusals {dict(excused)}")
    assert not bad, "\n".join(bad[:20])
    assert stats["computed past the input"] >= 20 and sum(excused.values()) >= 20, (stats, excused)


def test_negative_strides(core):
    """mem_stride entries of any sign, in every family: what MLI reads and
    writes is judged from both ends of every stride (a negative output
    stride of avepool_hwc once wrote before the buffer: seed 46, case 779 of
    the API differential).  Each call is compared or excused as in
    test_against_mli11."""
    rng = np.random.default_rng(77)
    stats, excused, bad, n = Counter(), Counter(), [], 0
    for i in range(1000):
        call = gen_case(1234, i)
        roles = [r for r, t in call.tensors.items() if t and t.get("mem_stride") is not None]
        if call.func.startswith("mli_debug") or not roles:
            continue
        role = str(rng.choice(roles))
        spec = dict(call.tensors[role])
        st = list(spec["mem_stride"])
        st[int(rng.integers(0, 3))] = -int(rng.integers(1, 40))
        spec["mem_stride"] = st
        call.tensors[role] = spec
        call.tags.append(f"negative:{role}")
        n += 1
        _compare_both(core, call, stats, excused, bad, f"case {i} {call.func} {call.tags}")
    print(f"\n{n} calls with a negative stride; core results {dict(stats)}; excused refusals {dict(excused)}")
    assert n >= 500 and not bad, "\n".join(bad[:20])
    assert compare(core, _case_779(), "convergent", Counter())[0] is None


def _case_779():
    import test_mli11_api_oracle as A
    return next(call for i, call in A._calls("more", 46, 780) if i == 779)
