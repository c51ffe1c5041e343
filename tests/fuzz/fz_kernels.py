"""Fuzz target `kernels` (public Python API: mli.Tensor, Tensor.raw, every
kernel, the helpers, prepared calls) and `bridge` (mli._core functions
called directly with hostile CTensors and scalars).

A tensor spec is one of
  ("arr", dtype, shape, frac, seed, readonly, layout, el_type)   mli.Tensor(array, frac[, el_type])
  ("raw", nbytes|None, seed, readonly, ((field, value), ...))    mli.Tensor.raw(buffer, **fields)
  ("float", el_type, shape, frac, values)                        mli.Tensor.from_float
  ("alias", j, how, extra)                                       shares argument j's memory
  ("null",)                                                      a NULL tensor pointer
  ("junk", value)                                                not a tensor at all
Every buffer lives between guard bytes (common.Guarded); after each call the
guards, the bytes of every input and the fields of every input tensor must
be unchanged, and any array view a Tensor hands out must stay inside its
buffer.
"""
import math

import numpy as np
from hypothesis import strategies as st

import mli
from mli import _core

from common import Finding, Guarded, guarded_array, within

KINDS = ("fx8", "fx16", "fx8w16d")
DT = {"fx8": ("int8", "int8"), "fx16": ("int16", "int16"), "fx8w16d": ("int16", "int8")}
DTYPES = ("int8", "int16", "int32", "uint8", "uint16", "float32", "float64", "bool", ">i2", "<i2", "int64")
# sizes whose products reach 2^31, 2^32, 2^40 and wrap 2^64 (lying shapes over small buffers)
DIMS = (0, 1, 2, 3, 4, 5, 7, 8, 16, 255, 256, 4096, 65535, 65536, 2**20, 2**24, 2**31 - 1, 2**31,
        2**32 - 1, -1, 2**32)
STRIDES = (0, 1, 2, 3, -1, -2, 5, 17, 100, 2**16, 2**31 - 1, -2**31, 2**31, -2**31 - 1)
CAPS = (None, 0, 1, 2, 3, 4, 7, 8, 16, 31, 64, 1000, 2**31, 2**32 - 1, -1, 2**32)
FRACS = (0, 1, 3, 7, 8, 12, 14, 15, 16, 17, 31, 32, 33, 63, 64, 127, 128, 200, 254, 255, -1, 256, 1.5, True, "3")
RANKS = (0, 1, 2, 3, 4, 5, 6, 7, 255, 2**32 - 1, -1, 2**32)
ELS = (0, 1, 2, 3, 4, 5, -1, 2**31 - 1, 2**31)
NBYTES = (0, 1, 2, 3, 4, 7, 8, 15, 16, 24, 31, 32, 63, 64, 100, 256, 1024)
ISAS = ("scalar", "avx2", "avx512_vnni")

UNARY = ("tanh", "sigm")
ELT_OPS = ("add", "sub", "mul", "max", "min")


# ======================================================================= strategies
def small_dim(zero=True):
    return st.integers(0 if zero else 1, 6)


def arr_spec(dtype, shape, frac=None):
    return st.builds(lambda f, seed, ro: ("arr", dtype, tuple(shape), f, seed, ro, "C", None),
                     st.sampled_from(FRACS[:20]) if frac is None else st.just(frac),
                     st.integers(0, 2**16), st.booleans())


@st.composite
def raw_fields(draw, base=None):
    """A dict of Tensor.raw fields, starting from `base` with a few hostile overrides."""
    f = dict(base or {})
    keys = draw(st.lists(st.sampled_from(("capacity", "shape", "rank", "mem_stride", "el_type", "frac_bits",
                                          "data_null", "is_null", "scalar", "set_capacity", "set_shape")),
                                max_size=3, unique=True))
    for k in keys:
        if k == "capacity":
            f[k] = draw(st.sampled_from(CAPS))
        elif k == "shape":
            f[k] = tuple(draw(st.lists(st.one_of(st.integers(0, 6), st.sampled_from(DIMS)), max_size=5)))
        elif k == "rank":
            f[k] = draw(st.sampled_from(RANKS))
        elif k == "mem_stride":
            f[k] = tuple(draw(st.lists(st.sampled_from(STRIDES), min_size=1, max_size=5)))
        elif k == "el_type":
            f[k] = draw(st.sampled_from(ELS))
        elif k == "frac_bits":
            f[k] = draw(st.sampled_from(FRACS))
        elif k in ("data_null", "is_null"):
            f[k] = True
        elif k == "set_capacity":  # assigned after construction (t.capacity = v)
            f[k] = draw(st.sampled_from(CAPS[1:]))
        elif k == "set_shape":  # t.shape4 / t.rank assigned after construction
            f[k] = tuple(draw(st.lists(st.integers(0, 6), max_size=4)))
        elif k == "scalar":
            f[k] = draw(st.sampled_from((0, 5, -3, 127, -128, 32767, -32768, 40000)))
    return f


def to_raw(spec, draw):
    """An 'arr' spec turned into a 'raw' spec over the same number of bytes
    with hostile field overrides."""
    _, dtype, shape, frac, seed, ro, layout, el = spec
    dt = np.dtype(dtype)
    n = int(np.prod(shape)) * dt.itemsize if shape else dt.itemsize
    base = {"shape": tuple(shape), "el_type": {1: 0, 2: 1}.get(dt.itemsize, 1) if el is None else el,
            "frac_bits": frac if isinstance(frac, int) and not isinstance(frac, bool) and 0 <= frac <= 255 else 0}
    fields = draw(raw_fields(base))
    return ("raw", n, seed, ro, tuple(sorted(fields.items())))


@st.composite
def hostile(draw, index, spec, keep=6):
    """`spec` (argument `index`) unchanged or made hostile."""
    how = draw(st.sampled_from(("keep",) * keep + ("stride",) * (6 - keep) + ("raw", "raw", "stride", "dtype", "shape", "layout", "frac", "el",
                                                 "fresh", "float", "alias", "null", "junk")))
    if how == "keep" or spec[0] != "arr":
        return spec
    _, dtype, shape, frac, seed, ro, layout, el = spec
    if how == "raw":
        return to_raw(spec, draw)
    if how == "stride":  # same bytes and shape, small (also negative or zero) strides
        r = to_raw(spec, lambda s_: {})
        fields = dict(r[4])
        fields["mem_stride"] = tuple(draw(st.lists(st.integers(-4, 4), min_size=len(shape), max_size=len(shape))))
        if draw(st.booleans()):
            fields["shape"] = tuple(draw(st.lists(st.integers(1, 4), min_size=len(shape), max_size=len(shape))))
        return r[:4] + (tuple(sorted(fields.items())),)
    if how == "dtype":
        return ("arr", draw(st.sampled_from(DTYPES)), shape, frac, seed, ro, layout, el)
    if how == "shape":
        shp = tuple(draw(st.lists(st.integers(0, 5), max_size=7)))
        return ("arr", dtype, shp, frac, seed, ro, layout, el)
    if how == "layout":
        return ("arr", dtype, shape, frac, seed, ro, draw(st.sampled_from(("F", "strided", "rev"))), el)
    if how == "frac":
        return ("arr", dtype, shape, draw(st.sampled_from(FRACS)), seed, ro, layout, el)
    if how == "el":
        return ("arr", dtype, shape, frac, seed, ro, layout, draw(st.sampled_from(ELS + ("fx8", "fx16", "bogus"))))
    if how == "fresh":
        nb = draw(st.sampled_from(NBYTES + (None,)))
        return ("raw", nb, seed, ro, tuple(sorted(draw(raw_fields()).items())))
    if how == "float":
        return ("float", draw(st.sampled_from(("fx8", "fx16", 0, 1, 7, "int32"))),
                shape, draw(st.sampled_from(FRACS)),
                draw(st.sampled_from(("normal", "big", "nan", "inf", "ints", "empty"))))
    if how == "alias" and index > 0:
        j = draw(st.integers(0, index - 1))
        kind = draw(st.sampled_from(("same", "raw", "sub")))
        extra = (tuple(sorted(draw(raw_fields()).items())) if kind == "raw" else
                 (tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))), draw(st.integers(0, 5)))
                 if kind == "sub" else None)
        return ("alias", j, kind, extra)
    if how == "null":
        return ("null",)
    if how == "junk":
        return ("junk", draw(st.sampled_from((None, 0, 1.5, "x", b"ab", ("np", "int16", 3)))))
    return spec


@st.composite
def kernel_spec(draw):
    family = draw(st.sampled_from(("rnn", "lstm", "fc", "unary", "relu", "eltwise", "helper", "method",
                                   "prepare", "from_float")))
    kind = draw(st.sampled_from(KINDS if family in ("rnn", "lstm", "fc", "prepare") else KINDS[:2]))
    d, w = DT[kind]
    T, N, M = draw(small_dim(False)), draw(small_dim(False)), draw(small_dim(False))
    mode = draw(st.sampled_from((0, 1, 2, 0, 1, 2, 3, -1, 7)))
    act = draw(st.sampled_from((0, 1, 2, 1, 3, -1)))
    spec = {"family": family, "kind": kind, "isa": draw(st.sampled_from(ISAS)),
            "rounding": draw(st.sampled_from(("convergent", "up")))}
    generic = draw(st.booleans())
    if family in ("rnn", "lstm", "prepare"):
        lstm = family == "lstm" or (family == "prepare" and draw(st.booleans()))
        xs = (N,) if mode == 0 else (T, N)
        g = 4 if lstm else 1
        args = [draw(arr_spec(d, xs)), draw(arr_spec(d, (M,))),
                draw(arr_spec(w, ((g, M, N + M) if lstm else (M, N + M)))),
                draw(arr_spec(w, ((g, M) if lstm else (M,))))]
        if lstm:
            args.append(draw(arr_spec(d, (M,))))
        spec["lstm"] = lstm
        ir = draw(st.one_of(st.none(), arr_spec(d, (draw(st.sampled_from((M, 4 * M, 4 * M * max(T, 1), 1, 0))),))))
        args.append(ir if ir is None else ir)
        spec["cfg"] = (mode, act)
    elif family == "fc":
        args = [draw(arr_spec(d, (N,))), draw(arr_spec(w, (M, N))), draw(arr_spec(w, (M,)))]
    elif family in ("unary", "relu", "method", "helper", "from_float"):
        shp = tuple(draw(st.lists(st.integers(0 if draw(st.booleans()) else 1, 5), max_size=4)))
        args = [draw(arr_spec(d, shp))]
        spec["op"] = draw(st.sampled_from({"unary": UNARY, "relu": ("relu",),
                                           "method": ("numpy", "numpy", "numpy", "to_float", "copy", "repr",
                                                      "array", "shape", "dtype", "fields"),
                                           "helper": ("count_elem_num", "tensor_element_size",
                                                      "point_to_subtensor", "convert_tensor"),
                                           "from_float": ("from_float", "frac_bits_for", "empty")}[family]))
        spec["param"] = draw(st.sampled_from((0, 1, 2, 3, 4, 5, -1, 7, 255, 2**32 - 1, 2**40, "fx8", "fx16")))
        spec["coords"] = tuple(draw(st.lists(st.sampled_from((0, 1, 2, 3, 5, 255, 2**32 - 1, -1)), max_size=5)))
    else:  # eltwise
        s1 = tuple(draw(st.lists(st.integers(1, 4), max_size=3)))
        s2 = draw(st.sampled_from((s1, (1,), (), s1[::-1], (2,))))
        f = draw(st.sampled_from(FRACS[:12]))
        args = [draw(arr_spec(d, s1, f)), draw(arr_spec(d, s2, f))]
        spec["op"] = draw(st.sampled_from(ELT_OPS))
    # make some arguments hostile (the ir slot of rnn/lstm/prepare stays a tensor or None)
    out = draw(st.sampled_from(("none",) * 4 + ("fresh", "exact", "alias", "alias", "raw", "junk", "ro")))
    cell_out = draw(st.sampled_from(("none", "none", "fresh", "same", "small", "cell_alias_in")))
    # aliasing is only interesting on calls that otherwise succeed: keep the arguments valid then
    keep = 0 if family == "method" else 60 if out == "alias" or cell_out == "cell_alias_in" else 6
    args = [a if a is None else draw(hostile(i, a, keep)) for i, a in enumerate(args)]
    spec["args"] = tuple(args)
    spec["generic"] = generic
    spec["out"] = out
    spec["out_extra"] = draw(st.one_of(st.integers(0, len(args) - 1), raw_fields().map(lambda f: tuple(sorted(f.items())))))
    spec["out_frac"] = draw(st.sampled_from((None, None, 0, 7, 15, 255, -1, 256, 1.5)))
    spec["cell_out"] = cell_out
    spec["after"] = tuple(draw(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(
        ("capacity", "shape4", "rank", "mem_stride", "el_type", "frac_bits", "scalar_value", "is_null")),
        st.sampled_from((0, 1, 2, 3, 5, 8, 100, 2**31 - 1, -1, 2**32 - 1, (1,), (2, 3), (100, 100)))),
        max_size=3))) if family == "prepare" else ()
    return spec


# ======================================================================= building
class Built:
    """Objects built from a spec plus everything needed to check memory afterwards."""

    def __init__(self):
        self.holders = []           # Guarded buffers handed out
        self.inputs = []            # (tensor, holder ids) of input tensors
        self.bounds = {}            # id(tensor) -> (lo, hi) of its holder

    def holder(self, g):
        self.holders.append(g)
        return g


def _values(dt, n, seed):
    rng = np.random.default_rng(seed)
    if dt.kind == "f":
        return rng.uniform(-2, 2, n)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -2**15), min(info.max, 2**15) + 1, n)


def build_tensor(spec, built, done):
    """A Tensor (or junk) for `spec`; `done` holds the tensors of earlier arguments."""
    kind = spec[0]
    if kind == "arr":
        _, dtype, shape, frac, seed, ro, layout, el = spec
        dt = np.dtype(dtype)
        n = int(np.prod(shape)) if shape else 1
        if layout in ("strided", "rev") and len(shape):
            big_shape = tuple(shape[:-1]) + (shape[-1] * 2,)
            g, base = guarded_array(dt, big_shape, _values(dt, int(np.prod(big_shape)), seed), readonly=ro)
            a = base[..., ::2] if layout == "strided" else base[..., ::-1][..., :shape[-1]]
        else:
            g, a = guarded_array(dt, shape, _values(dt, n, seed), readonly=ro,
                                 order="F" if layout == "F" else "C")
            if layout == "F":
                a = a.T.copy(order="F") if False else np.asfortranarray(a)  # noqa: SIM222
        built.holder(g)
        kw = {} if el is None else {"el_type": el}
        t = mli.Tensor(a, frac, **kw)
        built.bounds[id(t)] = g.bounds()
        return t, [g]
    if kind == "raw":
        _, nbytes, seed, ro, fields = spec
        fields = dict(fields)
        post = [(k, fields.pop(k)) for k in ("set_capacity", "set_shape") if k in fields]
        if nbytes is None:
            t, gs = mli.Tensor.raw(None, **fields), []
        else:
            g = built.holder(Guarded(nbytes, np.random.default_rng(seed).bytes(nbytes), readonly=ro))
            t, gs = mli.Tensor.raw(g.inner, **fields), [g]
        for k, v in post:  # a caller changing fields of an existing tensor: allowed or a clean error
            try:
                if k == "set_capacity":
                    t.capacity = v
                else:
                    t.shape4, t.rank = v, len(v)
            except (ValueError, TypeError):
                pass
        return t, gs
    if kind == "float":
        _, el, shape, frac, values = spec
        n = int(np.prod(shape)) if shape else 1
        v = {"normal": np.linspace(-1.5, 1.5, n), "big": np.full(n, 1e30), "nan": np.full(n, np.nan),
             "inf": np.full(n, -np.inf), "ints": np.arange(n), "empty": np.zeros(0)}[values]
        if values != "empty":
            v = v.reshape(shape)
        t = mli.Tensor.from_float(v, el, frac)
        return t, []
    if kind == "alias":
        _, j, how, extra = spec
        src, gs = done[j]
        if not isinstance(src, mli.Tensor):
            return src, gs
        if how == "same":
            return src, gs
        if how == "raw":
            if src.base is None:
                return mli.Tensor.raw(None, **dict(extra)), []
            t = mli.Tensor.raw(src.base, **dict(extra))
            if id(src) in built.bounds:
                built.bounds[id(t)] = built.bounds[id(src)]
            return t, gs
        coords, size = extra
        t = mli.point_to_subtensor(src, coords, size)
        if id(src) in built.bounds:
            built.bounds[id(t)] = built.bounds[id(src)]
        return t, gs
    if kind == "null":
        return mli.Tensor.raw(is_null=True), []
    if kind == "junk":
        v = spec[1]
        if isinstance(v, tuple) and v and v[0] == "np":
            return np.zeros(v[2], v[1]), []
        return v, []
    raise AssertionError(spec)


def buffer_bounds(t):
    """[lo, hi) addresses of the buffer a tensor's data lives in (None: no buffer)."""
    if not isinstance(t, mli.Tensor) or t.base is None:
        return None
    whole = np.frombuffer(t.base, np.uint8)
    lo = whole.__array_interface__["data"][0]
    return lo, lo + whole.size


def data_range(t):
    """[lo, hi) of the bytes a tensor's data and capacity cover (None: no data)."""
    b = buffer_bounds(t)
    if b is None or t.data_null or t.is_null or t.scalar_value is not None:
        return None
    lo = b[0] + t.offset
    return lo, lo + t.capacity


def check_no_overlap(what, inputs, outputs, elementwise):
    """A call that succeeded must not have written into an input: an output
    overlapping an input is allowed only for an element-wise kernel writing
    in place (same start)."""
    for o_name, o in outputs:
        ro = data_range(o) if isinstance(o, mli.Tensor) else None
        if ro is None or ro[0] == ro[1]:
            continue
        for i_name, t in inputs:
            ri = data_range(t) if isinstance(t, mli.Tensor) else None
            if ri is None or ri[0] == ri[1] or not (ro[0] < ri[1] and ri[0] < ro[1]):
                continue
            if elementwise and ro[0] == ri[0]:
                continue
            raise Finding(f"{what}: accepted {o_name}= overlapping input {i_name} (the result is computed "
                          "from clobbered input and the caller's input is modified)")


def fields_of(t):
    return (t.shape4, t.rank, t.mem_stride, t.el_type, t.frac_bits, t.capacity, t.data_null, t.is_null,
            t.scalar_value, t.offset, t.nbytes_available)


class Checker:
    """Snapshots of caller memory and fields, compared after the call."""

    def __init__(self, built, inputs, outputs):
        self.built = built
        out_holders = {id(g) for _, gs in outputs for g in gs}
        self.in_holders = [g for _, gs in inputs for g in gs if id(g) not in out_holders]
        self.before = {id(g): g.inner.tobytes() for g in self.in_holders}
        out_ids = {id(t) for t, _ in outputs}
        self.in_tensors = [t for t, _ in inputs if isinstance(t, mli.Tensor) and id(t) not in out_ids]
        self.fields = [fields_of(t) for t in self.in_tensors]

    def check(self, what):
        for g in self.built.holders:
            if not g.guards_intact():
                raise Finding(f"{what}: guard bytes around a {g.n}-byte buffer were overwritten "
                              "(write outside the buffer)")
        for g in self.in_holders:
            if g.inner.tobytes() != self.before[id(g)]:
                raise Finding(f"{what}: an input buffer of {g.n} bytes was modified")
        for t, f in zip(self.in_tensors, self.fields):
            if fields_of(t) != f:
                raise Finding(f"{what}: input tensor fields changed {f} -> {fields_of(t)}")

    def check_view(self, what, t, arr):
        b = buffer_bounds(t)
        if b is not None and isinstance(arr, np.ndarray) and not within(arr, *b):
            raise Finding(f"{what}: returned an array view reaching outside the tensor's buffer "
                          f"(shape {arr.shape}, strides {arr.strides})")


# ======================================================================= running
def _out_tensor(spec, built, done, count_hint, kind):
    how = spec["out"]
    dt = np.int8 if kind == "fx8" else np.int16
    if how == "none":
        return None, []
    if how in ("fresh", "exact", "ro"):
        count_hint = min(count_hint, 1 << 16)  # hostile shape fields must not make the fuzzer allocate
        n = max(count_hint, 1) if how != "exact" else count_hint
        g, a = guarded_array(dt, (n if how != "fresh" else n + 3,), np.zeros(n + 3), readonly=(how == "ro"))
        built.holder(g)
        t = mli.Tensor(a, 0)
        built.bounds[id(t)] = g.bounds()
        return t, [g]
    if how == "alias":
        j = spec["out_extra"] if isinstance(spec["out_extra"], int) else 0
        return done[j]
    if how == "raw":
        extra = spec["out_extra"] if isinstance(spec["out_extra"], tuple) else ()
        return build_tensor(("raw", 64, 1, False, extra), built, done)
    return ("junk", 0)[1], []


def run_kernel_spec(spec):
    import contextlib

    built = Built()
    fam, kind = spec["family"], spec["kind"]
    done = []
    for a in spec["args"]:
        if a is None:
            done.append((None, []))
        else:
            done.append(build_tensor(a, built, done))
    ts = [t for t, _ in done]
    with contextlib.ExitStack() as stack:
        stack.enter_context(mli.use_isa(spec["isa"]) if spec["isa"] in mli.supported_isas() else contextlib.nullcontext())
        stack.enter_context(mli.rounding(spec["rounding"]))
        if fam in ("rnn", "lstm", "prepare"):
            _run_recurrent(spec, built, done, ts, kind)
        elif fam == "fc":
            K = ts[1].shape[0] if isinstance(ts[1], mli.Tensor) and ts[1].rank >= 1 else 1
            out = _out_tensor(spec, built, done, K, kind)
            chk = Checker(built, done, [out])
            fn = getattr(mli, "fully_connected" if spec["generic"] else f"fully_connected_{kind}")
            kw = {"out": out[0]} if out[0] is not None else {}
            if spec["out_frac"] is not None:
                kw["out_frac_bits"] = spec["out_frac"]
            r = _call(chk, "fully_connected", lambda: fn(*ts, **kw))
            check_no_overlap("fully_connected", list(zip(("in", "weights", "bias"), ts)), [("out", out[0])], False)
        elif fam in ("unary", "relu"):
            x = ts[0]
            n = math.prod(x.shape) if isinstance(x, mli.Tensor) and x.rank <= 4 else 1
            out = _out_tensor(spec, built, done, n, kind)
            chk = Checker(built, done, [out])
            name = spec["op"] if spec["generic"] else f"{spec['op']}_{kind}"
            fn = getattr(mli, name)
            kw = {"out": out[0]} if out[0] is not None else {}
            extra = (spec["param"],) if fam == "relu" else ()
            r = _call(chk, name, lambda: fn(x, *extra, **kw))
            check_no_overlap(name, [("in", x)], [("out", out[0])], True)
            _check_result(chk, r, name)
        elif fam == "eltwise":
            n = max((math.prod(t.shape) if isinstance(t, mli.Tensor) and t.rank <= 4 else 1) for t in ts[:2])
            out = _out_tensor(spec, built, done, n, kind)
            chk = Checker(built, done, [out])
            name = f"eltwise_{spec['op']}" + ("" if spec["generic"] else f"_{kind}")
            fn = getattr(mli, name)
            kw = {"out": out[0]} if out[0] is not None else {}
            if spec["out_frac"] is not None:
                kw["out_frac_bits"] = spec["out_frac"]
            r = _call(chk, name, lambda: fn(ts[0], ts[1], **kw))
            check_no_overlap(name, [("in1", ts[0]), ("in2", ts[1])], [("out", out[0])], True)
            _check_result(chk, r, name)
        elif fam == "helper":
            chk = Checker(built, done, [])
            x, op, p = ts[0], spec["op"], spec["param"]
            if op == "count_elem_num":
                _call(chk, op, lambda: mli.count_elem_num(x, p))
            elif op == "tensor_element_size":
                _call(chk, op, lambda: mli.tensor_element_size(x))
            elif op == "point_to_subtensor":
                r = _call(chk, op, lambda: mli.point_to_subtensor(x, spec["coords"], p))
                if r is not None:
                    built.bounds[id(r)] = built.bounds.get(id(x))
                    _check_result(chk, r, op)
            else:
                r = _call(chk, op, lambda: mli.convert_tensor(x, p, spec["out_frac"] if spec["out_frac"] is not None else 3))
                _check_result(chk, r, op)
        elif fam == "method":
            x, op = ts[0], spec["op"]
            if not isinstance(x, mli.Tensor):
                return
            chk = Checker(built, done if op != "fields" else [], [])
            if op == "numpy":
                r = _call(chk, op, lambda: x.numpy())
                chk.check_view("Tensor.numpy()", x, r)
            elif op == "to_float":
                _call(chk, op, lambda: x.to_float())
            elif op == "copy":
                r = _call(chk, op, lambda: x.copy())
                _check_result(chk, r, op)
            elif op == "repr":
                _call(chk, op, lambda: repr(x))
            elif op == "array":
                _call(chk, op, lambda: np.asarray(x))
            elif op == "shape":
                _call(chk, op, lambda: (x.shape, x.dtype))
            elif op == "dtype":
                _call(chk, op, lambda: mli.kind_of(x))
            else:  # field setters with hostile values: set or a clean error
                for k, v in (("frac_bits", spec["param"]), ("capacity", spec["param"]), ("rank", spec["param"]),
                             ("el_type", spec["param"]), ("shape4", spec["coords"]), ("mem_stride", spec["coords"])):
                    try:
                        _call(chk, "set " + k, lambda: setattr(x, k, v))
                    except (ValueError, TypeError):
                        pass
                r = _call(chk, op, lambda: x.numpy())
                chk.check_view("Tensor.numpy() after setting fields", x, r)
        else:  # from_float & co.
            chk = Checker(built, done, [])
            x, op, p = ts[0], spec["op"], spec["param"]
            usable = (isinstance(x, mli.Tensor) and not x.data_null and x.rank <= 4 and x.scalar_value is None
                      and x.capacity)
            src = x.numpy() if usable else np.zeros(3)
            if op == "from_float":
                f = spec["out_frac"] if spec["out_frac"] is not None else 5
                _call(chk, op, lambda: mli.Tensor.from_float(src.astype(np.float64) / 7.0, p, f))
            elif op == "frac_bits_for":
                _call(chk, op, lambda: mli.frac_bits_for(src, p))
            elif math.prod(abs(c) for c in spec["coords"]) < 2**24:  # a huge shape asked for is a MemoryError
                _call(chk, op, lambda: mli.Tensor.empty(spec["coords"], p, 3))


def _check_result(chk, r, name):
    if isinstance(r, tuple):
        for x in r:
            _check_result(chk, x, name)
        return
    if isinstance(r, mli.Tensor) and not r.data_null and r.scalar_value is None:
        a = _call(chk, name + " -> numpy()", r.numpy)
        chk.check_view(name + " result .numpy()", r, a)


def _call(chk, what, fn):
    """Run fn; return its value, or None after an acceptable error.  Either
    way check the caller's memory."""
    try:
        r = fn()
    except Exception as e:
        chk.check(what + " (raised " + type(e).__name__ + ")")
        raise
    chk.check(what)
    return r


def _run_recurrent(spec, built, done, ts, kind):
    lstm = spec["lstm"]
    mode, act = spec["cfg"]
    ir = ts[-1]
    cfg_ir = ir
    cfg = mli.RnnCellConfig(mode=mode, act=act, ir=cfg_ir)  # bad mode/act: MliBadFuncCfgError (ValueError)
    x, h, w, b = ts[:4]
    cell = ts[4] if lstm else None
    M = math.prod(h.shape) if isinstance(h, mli.Tensor) and h.rank <= 4 else 1
    T = x.shape[0] if isinstance(x, mli.Tensor) and 1 <= x.rank <= 4 and mode == 1 else 1
    K = math.prod(b.shape) if isinstance(b, mli.Tensor) and b.rank <= 4 else M
    out = _out_tensor(spec, built, done, (M if lstm else K) * T, kind)
    inputs = done[:5] if lstm else done[:4]
    outs = [out, done[-1]]
    kw = {}
    if out[0] is not None:
        kw["out"] = out[0]
    if lstm and spec["cell_out"] != "none":
        co = spec["cell_out"]
        if co == "same":
            kw["cell_out"] = cell
            outs.append(done[4])
        elif co == "cell_alias_in":  # cell_out= an input (prev_out, or in)
            j = 1 if spec["out_extra"] == 1 or not isinstance(spec["out_extra"], int) else 0
            kw["cell_out"] = ts[j]
            outs.append(done[j])
        else:
            n = M if co == "fresh" else max(M - 1, 0)
            g, a = guarded_array(np.int8 if kind == "fx8" else np.int16, (n,), np.zeros(n))
            built.holder(g)
            t = mli.Tensor(a, 0)
            built.bounds[id(t)] = g.bounds()
            kw["cell_out"] = t
            outs.append((t, [g]))
    if not lstm and spec["out_frac"] is not None:
        kw["out_frac_bits"] = spec["out_frac"]
    if spec["family"] == "prepare":
        name = ("lstm_cell_" if lstm else "basic_rnn_cell_") + kind
        fn = getattr(mli, name)
        if out[0] is None:
            n = max((M if lstm else K) * T, 1)
            g, a = guarded_array(np.int8 if kind == "fx8" else np.int16, (n,), np.zeros(n))
            built.holder(g)
            t = mli.Tensor(a, 0)
            built.bounds[id(t)] = g.bounds()
            out = (t, [g])
            outs[0] = out
        # prepared LSTM calls update `cell` in place (documented): it is an output here
        if lstm:
            outs.append(done[4])
            inputs = done[:4]
        chk = Checker(built, inputs, outs)
        p = _call(chk, "prepare", lambda: mli.kernels.prepare(fn, x, h, w, b, cfg, *((cell,) if lstm else ()),
                                                               out=out[0]))
        _call(chk, "prepared call", p)
        check_no_overlap("prepare", list(zip(("in", "prev_out", "weights", "bias"), (x, h, w, b))),
                         [("out", out[0])] + ([("cell", cell)] if lstm else []), False)
        for idx, field, value in spec["after"]:
            tgt = (list(ts[:5 if lstm else 4]) + [out[0]])[idx % (6 if lstm else 5)]
            if not isinstance(tgt, mli.Tensor):
                continue
            try:
                setattr(tgt, field, value)
            except (ValueError, TypeError):
                pass
        chk = Checker(built, inputs, outs)  # fields may have changed on purpose: new snapshot
        _call(chk, "prepared call after changing fields", p)
        return
    name = ("lstm_cell" if lstm else "basic_rnn_cell") + ("" if spec["generic"] else "_" + kind)
    fn = getattr(mli, name)
    chk = Checker(built, inputs, outs)
    args = (x, h, w, b, cfg) + ((cell,) if lstm else ())
    r = _call(chk, name, lambda: fn(*args, **kw))
    named_in = list(zip(("in", "prev_out", "weights", "bias", "cell"), (x, h, w, b) + ((cell,) if lstm else ())))
    named_out = [("out", r[0] if lstm else r)] + ([("cell_out", kw["cell_out"])] if "cell_out" in kw else [])
    if lstm and "cell_out" in kw and kw["cell_out"] is cell:
        named_in = named_in[:4]  # cell_out=cell: the documented in-place update
    check_no_overlap(name, named_in, named_out, False)
    _check_result(chk, r, name)


# ======================================================================= bridge target
@st.composite
def bridge_spec(draw):
    fn = draw(st.sampled_from(("fully_connected", "basic_rnn_cell", "lstm_cell", "tanh", "sigm", "relu", "eltwise",
                               "count_elem_num", "tensor_element_size", "point_to_subtensor", "convert_tensor",
                               "float_to_fx_tensor", "fx_tensor_to_float", "lstm_gates", "lstm_cell_update",
                               "lstm_hidden", "CTensor", "PreparedCall", "copy_from")))
    nargs = {"fully_connected": 4, "basic_rnn_cell": 6, "lstm_cell": 7, "tanh": 2, "sigm": 2, "relu": 2,
             "eltwise": 3, "count_elem_num": 1, "tensor_element_size": 1, "point_to_subtensor": 2,
             "convert_tensor": 2, "float_to_fx_tensor": 1, "fx_tensor_to_float": 1, "lstm_gates": 0,
             "lstm_cell_update": 0, "lstm_hidden": 0, "CTensor": 1, "PreparedCall": 7, "copy_from": 2}[fn]
    d = draw(st.sampled_from(("int8", "int16")))
    T, N, M = draw(small_dim(False)), draw(small_dim(False)), draw(small_dim(False))
    shapes = {"fully_connected": [(N,), (M, N), (M,), (M,)],
              "basic_rnn_cell": [(T, N), (M,), (M, N + M), (M,), (M,), (T * M,)],
              "lstm_cell": [(T, N), (M,), (4, M, N + M), (4, M), (4 * M,), (M,), (T * M,)],
              "PreparedCall": [(T, N), (M,), (4, M, N + M), (4, M), (4 * M,), (M,), (T * M,)]}.get(
        fn, [tuple(draw(st.lists(st.integers(0, 4), max_size=4)))] * 3)
    args = [draw(arr_spec(d, shapes[i % len(shapes)])) for i in range(nargs)]
    args = [draw(hostile(i, a)) for i, a in enumerate(args)]
    ints = tuple(draw(st.lists(st.sampled_from((0, 1, 2, 3, 4, 5, -1, -5, 7, 31, 32, 33, 63, 64, 255, 256, 2**15,
                                                2**31 - 1, -2**31, 2**31, 2**32 - 1, 2**63)),
                               min_size=8, max_size=8)))
    arrays = tuple(draw(st.lists(st.tuples(st.sampled_from(DTYPES + ("int8", "int16") * 3),
                                           st.sampled_from((0, 1, 3, 4, 8, 12, 16, 20, 64))),
                                 min_size=3, max_size=3)))
    return {"fn": fn, "args": tuple(args), "ints": ints, "arrays": arrays, "op": draw(st.sampled_from(
        ELT_OPS + ("div", "", 3))), "coords": tuple(draw(st.lists(st.sampled_from((0, 1, 2, 7, 2**32 - 1, -1, 2**33)),
                                                                  max_size=5))),
            "cfg_null": draw(st.booleans()), "lstm": draw(st.booleans())}


def run_bridge_spec(spec):
    built = Built()
    done = []
    for a in spec["args"]:
        done.append(build_tensor(a, built, done))
    ts = [t for t, _ in done]
    fn, I = spec["fn"], spec["ints"]
    arrays = []
    for dtype, n in spec["arrays"]:
        g, a = guarded_array(np.dtype(dtype), (n,), np.arange(n) * 37 % 200 - 100)
        built.holder(g)
        arrays.append((a, g))
    # outputs: the tensors C writes (ir/cell/out) and the arrays a step function writes
    out_pos = {"fully_connected": [3], "basic_rnn_cell": [4, 5], "lstm_cell": [4, 5, 6], "tanh": [1], "sigm": [1],
               "relu": [1], "eltwise": [2], "point_to_subtensor": [1], "convert_tensor": [1],
               "float_to_fx_tensor": [0], "PreparedCall": [4, 5, 6], "copy_from": [0]}.get(fn, [])
    outs = [done[i] for i in out_pos] + [(None, [g]) for a, g in arrays if fn in ("lstm_gates", "lstm_cell_update",
                                                                                      "lstm_hidden", "fx_tensor_to_float")]
    ins = [x for i, x in enumerate(done) if i not in out_pos]
    chk = Checker(built, ins, outs)
    c = _core
    if fn == "fully_connected":
        _call(chk, fn, lambda: c.fully_connected(I[0], *ts))
    elif fn == "basic_rnn_cell":
        _call(chk, fn, lambda: c.basic_rnn_cell(I[0], ts[0], ts[1], ts[2], ts[3], I[1], I[2], ts[4], ts[5]))
    elif fn == "lstm_cell":
        _call(chk, fn, lambda: c.lstm_cell(I[0], ts[0], ts[1], ts[2], ts[3], I[1], I[2], ts[4], ts[5], ts[6],
                                           spec["cfg_null"]))
    elif fn in ("tanh", "sigm"):
        _call(chk, fn, lambda: getattr(c, fn)(I[0], ts[0], ts[1]))
    elif fn == "relu":
        _call(chk, fn, lambda: c.relu(I[0], ts[0], I[1], ts[1]))
    elif fn == "eltwise":
        _call(chk, fn, lambda: c.eltwise(spec["op"], I[0], ts[0], ts[1], ts[2]))
    elif fn == "count_elem_num":
        _call(chk, fn, lambda: c.count_elem_num(ts[0], I[0]))
    elif fn == "tensor_element_size":
        _call(chk, fn, lambda: c.tensor_element_size(ts[0]))
    elif fn == "point_to_subtensor":
        def go():
            r = c.point_to_subtensor(ts[0], spec["coords"], I[0], I[1], ts[1], spec["cfg_null"])
            if r == 0 and isinstance(ts[1], mli.Tensor) and isinstance(ts[0], mli.Tensor):
                built.bounds[id(ts[1])] = built.bounds.get(id(ts[0]))
                try:
                    a = ts[1].numpy()
                except (ValueError, TypeError):
                    return r
                chk.check_view("point_to_subtensor out.numpy()", ts[1], a)
            return r
        _call(chk, fn, go)
    elif fn == "convert_tensor":
        _call(chk, fn, lambda: c.convert_tensor(ts[0], ts[1]))
    elif fn == "float_to_fx_tensor":
        src = arrays[0][0]
        _call(chk, fn, lambda: c.float_to_fx_tensor(src, ts[0]))
    elif fn == "fx_tensor_to_float":
        dst = arrays[0][0]
        _call(chk, fn, lambda: c.fx_tensor_to_float(ts[0], dst, I[0]))
    elif fn == "lstm_gates":
        _call(chk, fn, lambda: c.lstm_gates(I[0], arrays[0][0], I[1], I[2]))
    elif fn == "lstm_cell_update":
        _call(chk, fn, lambda: c.lstm_cell_update(I[0], arrays[0][0], I[1], arrays[1][0], I[2]))
    elif fn == "lstm_hidden":
        _call(chk, fn, lambda: c.lstm_hidden(I[0], arrays[0][0], I[1], arrays[1][0], I[2], I[3], I[4],
                                             arrays[2][0]))
    elif fn == "CTensor":
        def go():
            t = c.CTensor()
            t._attach(arrays[0][0])
            for k, v in (("capacity", I[0]), ("rank", I[1]), ("shape4", spec["coords"]), ("el_type", I[2]),
                         ("frac_bits", I[3]), ("mem_stride", spec["coords"]), ("scalar_value", I[4])):
                try:
                    setattr(t, k, v)
                except (ValueError, TypeError, OverflowError):
                    pass
            t.copy()
            return t
        _call(chk, fn, go)
    elif fn == "PreparedCall":
        def go():
            p = c.PreparedCall(spec["lstm"], I[0], ts[0], ts[1], ts[2], ts[3], I[1], I[2], ts[4], ts[5], ts[6],
                               lambda st: (_ for _ in ()).throw(ValueError(f"status {st}")))
            p()
        _call(chk, fn, go)
    elif fn == "copy_from":
        if isinstance(ts[0], mli.Tensor):
            _call(chk, fn, lambda: ts[0].copy_from(ts[1]))
