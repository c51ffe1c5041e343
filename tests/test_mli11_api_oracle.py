"""Differential test of the PUBLIC API of the rest of MLI 1.1 (mli.conv2d_*,
mli.depthwise_conv2d_*, the pools, leaky_relu, softmax, permute, concat,
padding2d, the sa8 kernels, every shape-specialised variant and the debug
twins of the dispatchers) against MLI 1.1's own code (../shared/oracle_c).

The calls are those of the C-level differential tests, drawn from (seed,
index) alone: tests/test_mli11_more_oracle.py's generator (pools, sa8
convolutions and FC, leaky ReLU, softmax, permute, concat, padding2d) and
tests/test_mli11_conv_oracle.py's (conv2d_chw, depthwise_conv2d_chw,
conv2d_hwc, fx8 / fx16 / fx8w16d), hostile ones included.  Each call is made
through the public Python function of its C function, on mli.Tensor objects
over buffers laid out as the harness lays them out (16 KiB of sentinel bytes
after each), in both rounding modes, the ISA path cycling through
mli.supported_isas().  Compared:

* with MLI's library, directly (the harness's rules, tests/test_mli11_more_oracle.py's
  `compare`): status, every byte of the output buffer and beyond its
  capacity, the output's metadata, the inputs untouched; a refusal flagged
  mlipy_safety is excused only where MLI is seen to fail (`excuse`: a fault
  with guard pages, writes or reads outside, unwritten outputs ...);
* with the C function called through ctypes: the same status, bytes and
  metadata, so the Python layer adds and loses nothing.

MLI_API_ORACLE_CASES (default 1000 per seed and generator) scales the run.
"""
import ctypes as C
import os
from collections import Counter

import numpy as np
import pytest

from mli11_more_harness import HAVE_ORACLE, SKIP_REASON, Call, Core, Oracle, _arg_types, mli11, run

import mli
from mli import _core
from mli.kernels import _more

pytestmark = pytest.mark.skipif(not HAVE_ORACLE, reason=SKIP_REASON)

CASES = int(os.environ.get("MLI_API_ORACLE_CASES", "1000"))
SEEDS = [int(s) for s in os.environ.get("MLI_API_ORACLE_SEEDS", "11,12").split(",")]


# ----------------------------------------------------- calls, public API --
def _tensor(spec, fill=None):
    """An mli.Tensor from a harness spec, its buffer as mli11.Buffer lays it
    out (the bytes, then SLACK sentinel bytes); (tensor, buffer array)."""
    if spec is None:
        return mli.Tensor.raw(is_null=True), None
    kw = dict(shape=spec["shape"], rank=spec["rank"], mem_stride=spec["mem_stride"], el_type=spec["el_type"],
              frac_bits=spec["frac"])
    if spec.get("scalar") is not None:
        t, arr = mli.Tensor.raw(scalar=spec["scalar"], **kw), None
        t.capacity = spec["capacity"]
    elif spec.get("data_null"):
        t, arr = mli.Tensor.raw(data_null=True, capacity=spec["capacity"], **kw), None
    else:
        b = mli11().Buffer(spec["bytes"], spec["capacity"], fill)
        arr = b.arr
        t = mli.Tensor.raw(arr, capacity=b.cap, **kw)
    if spec.get("asym") is not None:
        a = spec["asym"]
        dim = int(a["dim"])
        zp, sc = a["zero_point"], a["scale"]
        # the C struct's fields keep the low bits of what the harness stores (ctypes: int8 / int16 / int32)
        if dim < 0:
            zp = _wrap(int(np.asarray(zp).reshape(-1)[0]), 16)
            sc = _wrap(int(np.asarray(sc).reshape(-1)[0]), 32)
        else:
            zp = np.asarray(zp, np.int64).reshape(-1).astype(np.int16)
            sc = np.asarray(sc, np.int64).reshape(-1).astype(np.int32)
        t.set_asym(zp, sc, _wrap(int(a["scale_frac_bits"]), 8), dim=_wrap(dim, 32))
    return t, arr


def _wrap(v, bits):
    return (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))


def _cfg(call, sig):
    c = call.cfg
    if c is None:
        return None
    if sig == "conv":
        return mli.Conv2dConfig(relu=c["relu_type"], stride_width=c["stride_width"], stride_height=c["stride_height"],
                                padding_left=c["padding_left"], padding_right=c["padding_right"],
                                padding_top=c["padding_top"], padding_bottom=c["padding_bottom"])
    if sig == "pool":
        return mli.PoolConfig(**c)
    if sig == "permute":
        return mli.PermuteConfig(perm_dim=tuple(c["perm_dim"]))
    if sig == "concat":
        return mli.ConcatConfig(tensors_num=c["tensors_num"], axis=c["axis"])
    return mli.Padding2dConfig(**c)


def _meta(t):
    """out_meta of the harness, read from an mli.Tensor."""
    raw = _core.el_params_bytes(t)
    meta = {"capacity": t.capacity, "mem_stride": list(t.mem_stride), "shape": list(t.shape4), "rank": t.rank,
            "el_type": t.el_type, "frac": raw[0]}
    if t.el_type in (2, 3):
        zp, sc, dim, sfb = _core.asym_params(t)
        meta["asym"] = {"dim": dim, "scale_frac_bits": sfb}
        if dim < 0:
            meta["asym"].update(zero_point=zp, scale=sc)
            meta["el_params_raw"] = raw
    else:
        meta["el_params_raw"] = raw
    return meta


def run_public(call, rounding, isa):
    """`call` through the public function of its C function: the harness's result dict."""
    name = call.func[len("mli_debug_krn_"):] if call.func.startswith("mli_debug_krn_") else call.func[len("mli_krn_"):]
    e = _more.ENTRIES["debug_" + name if call.func.startswith("mli_debug_krn_") else name]
    fn = getattr(mli, e.name)
    ts, bufs = {}, {}
    for role, spec in call.tensors.items():
        ts[role], bufs[role] = _tensor(spec)
    cfg = _cfg(call, e.sig) if e.sig in ("conv", "pool", "permute", "concat", "padding2d") else None
    out = ts.get("out")
    res = {}
    with mli.rounding(rounding), mli.use_isa(isa):
        try:
            if e.role == "debug":
                args = (ts["in"], cfg) if e.sig == "pool" else (ts["in"], ts["weights"], ts["bias"], cfg)
                res["ret"] = fn(*args)
                return res
            if e.sig == "conv":
                kw = {} if e.kind == "sa8_sa8_sa32" else {"out_frac_bits": out.frac_bits}
                fn(ts["in"], ts["weights"], ts["bias"], cfg, out=out, **kw)
            elif e.sig == "fc_sa8":
                fn(ts["in"], ts["weights"], ts["bias"], out=out)
            elif e.sig == "pool" or e.sig in ("permute", "padding2d"):
                fn(ts["in"], cfg, out=out)
            elif e.sig == "leaky_relu":
                fn(ts["in"], ts["slope_coeff"], out=out)
            elif e.sig == "softmax":
                fn(ts["in"], out=out)
            elif e.sig == "concat":
                inputs = None if call.inputs is None else [ts[r] if call.tensors.get(r) is not None else None
                                                           for r in call.inputs]
                fn(inputs, cfg, out=out)
            res["ret"] = 0
        except mli.MliError as err:
            res["ret"] = int(err.status)
            res["safety"] = bool(err.mlipy_safety)
            res["error"] = str(err)
    for role, arr in bufs.items():
        if arr is not None:
            res[role + "_buf"] = arr.tobytes()
    if out is not None and not out.is_null:
        res["out_meta"] = _meta(out)
    return res


# ------------------------------------------------ the conv_oracle calls --
def conv_call(case):
    """A case of tests/test_mli11_conv_oracle.py as a harness Call."""
    tensors = {}
    for role in ("in", "weights", "bias", "out"):
        s = case["t"][role]
        if s is None:
            tensors[role] = None
            continue
        data = s["data"] + bytes(max(0, s["cap"] - len(s["data"])))
        tensors[role] = {"bytes": data, "capacity": s["cap"], "mem_stride": list(s["stride"]), "shape": list(s["shape"]),
                         "rank": s["rank"], "el_type": s["et"], "frac": s["frac"], "asym": None,
                         "data_null": bool(s.get("data_null"))}
    c = case["cfg"]
    cfg = None if c is None else {"relu_type": c["relu"], "stride_width": c["sw"], "stride_height": c["sh"],
                                  "padding_left": c["pl"], "padding_right": c["pr"], "padding_top": c["pt"],
                                  "padding_bottom": c["pb"]}
    return Call(case["func"], "conv", tensors, cfg, tags=[case["sit"]])


@pytest.fixture(scope="module")
def core():
    c = Core()
    types = _arg_types()["conv"]
    for e in _more.ENTRIES.values():   # the conv chw functions are not in the harness's table
        if e.family in ("conv2d_chw", "depthwise_conv2d_chw", "conv2d_hwc"):
            f = getattr(c.lib, e.c_name)
            f.argtypes = types
            f.restype = C.c_char_p if e.role == "debug" else C.c_int
    return c


def _same(a, b, call):
    if call.func.startswith("mli_debug_krn_"):   # computes nothing: the name only
        return [] if a.get("ret") == b.get("ret") else ["ret"]
    keys = ["ret"] + [r + "_buf" for r in call.tensors] + ["out_meta"]
    return [k for k in keys if _cmp(a.get(k), call) != _cmp(b.get(k), call)]


def _per_axis_out(call):
    spec = call.tensors.get("out")
    return bool(spec and spec.get("asym") is not None and int(spec["asym"]["dim"]) >= 0)


def _cmp(v, call):
    """A result field as compared: an output given per-axis asym parameters
    (dim >= 0) holds two array pointers in the first 16 bytes of el_params
    (`frac` is one of their bytes), which two calls on their own arrays never
    share; the rest of el_params is compared."""
    if isinstance(v, dict) and (_per_axis_out(call) or v.get("asym", {}).get("dim", -1) >= 0):
        v = {k: x for k, x in v.items() if k != "frac"}
        if "el_params_raw" in v:
            v["el_params_raw"] = v["el_params_raw"][16:]
    return v


def _normalised(call):
    """`call` with per-axis zero points and scales as the C arrays hold them
    (int16, int32: a C caller cannot store more), so that the harness can
    build it (mli11.set_asym converts them with numpy, which refuses overflow)."""
    for spec in list(call.tensors.values()):
        a = spec.get("asym") if spec else None
        if a is not None and int(a["dim"]) >= 0:
            a["zero_point"] = [_wrap(int(v), 16) for v in np.asarray(a["zero_point"]).reshape(-1)]
            a["scale"] = [_wrap(int(v), 32) for v in np.asarray(a["scale"]).reshape(-1)]
    return call


def check(core, call, rounding, isa, stats):
    """None when the public API agrees with the C function and with MLI, else why."""
    import test_mli11_more_oracle as MO

    pub = run_public(call, rounding, isa)
    with mli.use_isa(isa):
        c = run(core, call, rounding)
    diff = _same(pub, c, call)
    if diff:
        return f"public API differs from the C function in {diff}: public {pub.get('ret')} " \
               f"{pub.get('error', '')} / C {c.get('ret')}"
    if call.func.startswith("mli_debug_krn_"):
        stats["debug"] += 1
        theirs = run(Oracle(rounding), call, rounding) if pub["ret"] is not None else None
        if theirs is not None and theirs.get("ret") != pub["ret"]:
            return f"debug: MLI {theirs.get('ret')} public {pub['ret']}"
        return None
    stats["ok" if pub["ret"] == 0 else ("safety" if pub.get("safety") else "error")] += 1
    if not MO._inputs_untouched(pub, call):
        return "the public API modified an input buffer"
    if pub["ret"] != 0 and pub.get("out_buf") is not None and \
            pub["out_buf"] != call.tensors["out"]["bytes"] + MO._sentinel():
        return "the public API wrote to the output of a call it rejected"
    if pub["ret"] != 0 and pub.get("safety"):
        d = _detail()
        if d["field"] == "rank" and "padding" in d["reason"]:
            # MLI reads mem_stride[rank - 1] out of the struct's padding: its status
            # depends on those bytes (the harness's excuse, whatever status MLI gives)
            stats["excused: reads the tensor struct's padding"] += 1
            return None
        why, exc = MO.excuse(call, rounding, {"argument": "", "field": "", "reason": pub.get("error", ""),
                                              "safety": True, **_detail()})
        if exc:
            stats["excused: " + exc] += 1
        return why
    if pub["ret"] == 0 and MO._pointwise_stride_bug(call):  # MLI may read far past the input: run it apart
        return MO._compare_beyond_input(c, call, rounding)
    theirs = run(Oracle(rounding), call, rounding)
    if theirs.get("crashed") or theirs.get("error"):
        return f"MLI failed: {theirs}"
    if theirs["ret"] != pub["ret"]:
        return f"status: MLI {theirs['ret']} public {pub['ret']} ({pub.get('error', '')})"
    if theirs.get("out_buf") != pub.get("out_buf"):
        return "out bytes differ from MLI's"
    if _cmp(theirs.get("out_meta"), call) != _cmp(pub.get("out_meta"), call):
        return f"out metadata: MLI {theirs.get('out_meta')} public {pub.get('out_meta')}"
    if not MO._same_inputs(pub, theirs, call):
        return "an input buffer differs after the call"
    return None


def _detail():
    st, function, argument, field, reason, *_ = _core.last_error()
    return {"argument": argument, "field": field, "reason": reason}


def _calls(kind, seed, n):
    if kind == "more":
        import test_mli11_more_oracle as MO

        for i in range(n):
            yield i, _normalised(MO.gen_case(seed, i))
    else:
        import test_mli11_conv_oracle as CO

        rng = np.random.default_rng([seed, 99])
        funcs = [f for f in CO.V.functions()]
        for i in range(n):
            case = CO.make_case(rng, funcs)
            if case["func"].startswith("mli_debug_krn_") and case["t"]["out"] is None:
                continue
            yield i, conv_call(case)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["more", "conv"])
def test_public_api_against_mli11(core, kind, seed, quiet_children):
    isas = mli.supported_isas()
    bad, stats, calls = [], Counter(), 0
    for i, call in _calls(kind, seed, CASES):
        for rounding in ("convergent", "up"):
            isa = isas[(i + (rounding == "up")) % len(isas)]
            calls += 1
            why = check(core, call, rounding, isa, stats)
            if why:
                bad.append(f"seed {seed} case {i} {rounding} {isa} {call.func} {call.tags} {call.cfg}: {why}")
    print(f"\n{kind} seed {seed}: {calls} calls (both roundings, ISAs {isas}), {len(bad)} mismatches; {dict(stats)}")
    assert not bad, f"{len(bad)} mismatches of {calls} calls:\n" + "\n".join(bad[:30])


@pytest.fixture
def quiet_children():
    import faulthandler

    was = faulthandler.is_enabled()
    faulthandler.disable()
    yield
    if was:
        faulthandler.enable()
