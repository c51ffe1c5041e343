"""Shared machinery of the tests of the C core's rest-of-MLI-1.1 kernels
(tests/test_mli11_more_oracle.py, tests/test_mli11_more_vectors.py).

The kernels have no Python API yet: the tests call the C functions that the
built extension mli._core exports, through ctypes, with the struct layouts
of ../shared/oracle_c/mli11.py (imported from the shared folder at test
time).  A call is described by a `Call`: the function, its tensors as specs
(the dicts mli11.make_tensor takes) and its cfg; `run` builds fresh tensors
and buffers from it for one library (the package's core or MLI's own build)
and returns everything the call left behind.
"""
import ctypes as C
import faulthandler
import importlib.util
import os
import pathlib
import pickle
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MLI_SHARED", ROOT.parent / "shared"))  # as tests/conftest.py



def _load_table():
    """mli/_variants_more.py by its path (data only: importing the mli
    package would load the extension)."""
    spec = importlib.util.spec_from_file_location("mli_variants_more", ROOT / "mli" / "_variants_more.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # NamedTuple classes need their module registered
    spec.loader.exec_module(mod)
    return mod


VM = _load_table()

ORACLE_DIR = SHARED / "oracle_c"
HAVE_BRIDGE = (ORACLE_DIR / "mli11.py").is_file()
HAVE_ORACLE = HAVE_BRIDGE and (ORACLE_DIR / "libmli11_conv.so").is_file() and (ORACLE_DIR / "libmli11_up.so").is_file()
SKIP_REASON = f"MLI 1.1's oracle build not found at {ORACLE_DIR} (set MLI_SHARED to the shared folder)"
SKIP_BRIDGE = f"the ctypes bridge mli11.py not found in {ORACLE_DIR} (set MLI_SHARED to the shared folder)"

_M = None


def mli11():
    """../shared/oracle_c/mli11.py, imported from the shared folder."""
    global _M
    if _M is None:
        spec = importlib.util.spec_from_file_location("mli11_bridge", ORACLE_DIR / "mli11.py")
        _M = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_M)
    return _M


class Detail(C.Structure):
    """mlipy_error_detail (csrc/include/mlipy_ext.h)."""
    _fields_ = [("status", C.c_int), ("function", C.c_char_p), ("argument", C.c_char_p), ("field", C.c_char_p),
                ("reason", C.c_char_p), ("expected", C.c_longlong), ("actual", C.c_longlong),
                ("has_values", C.c_int), ("mlipy_safety", C.c_int)]


def _arg_types():
    m = mli11()
    P = C.POINTER(m.MliTensor)
    cfgs = {"mli_pool_cfg": m.PoolCfg, "mli_conv2d_cfg": m.Conv2dCfg, "mli_permute_cfg": m.PermuteCfg,
            "mli_concat_cfg": m.ConcatCfg, "mli_padding2d_cfg": m.Padding2dCfg}
    out = {}
    for sig, args in VM.ARGUMENTS.items():
        types = []
        for _, kind in args:
            if kind in ("tensor", "out"):
                types.append(P)
            elif kind == "tensor_array":
                types.append(C.POINTER(P))
            else:
                types.append(C.POINTER(cfgs[kind]))
        out[sig] = types
    return out


class Core:
    """The package's C core: the extension's shared object (or $MLI_MORE_CORE)."""

    def __init__(self, path=None):
        if path is None:
            path = os.environ.get("MLI_MORE_CORE")
        if path is None:
            import mli._core
            path = mli._core.__file__
        self.path = path
        self.lib = C.CDLL(path)
        types = _arg_types()
        self.missing = []
        for f in VM.functions():
            try:
                fn = getattr(self.lib, f.name)
            except AttributeError:
                self.missing.append(f.name)
                continue
            fn.argtypes = types[f.arguments]
            fn.restype = C.c_char_p if f.role == "debug" else C.c_int
        self.lib.mlipy_last_error.restype = C.POINTER(Detail)
        self.lib.mlipy_set_thread_rounding.argtypes = [C.c_int]
        self.lib.mlipy_set_thread_rounding.restype = None

    def fn(self, name):
        return getattr(self.lib, name)

    def set_rounding(self, rounding):
        self.lib.mlipy_set_thread_rounding(1 if rounding == "up" else 0)

    def clear_rounding(self):
        self.lib.mlipy_set_thread_rounding(-1)

    def detail(self):
        d = self.lib.mlipy_last_error().contents
        return {"status": d.status, "argument": (d.argument or b"").decode(), "field": (d.field or b"").decode(),
                "reason": (d.reason or b"").decode(), "safety": bool(d.mlipy_safety)}


class Oracle:
    """MLI 1.1's own code, in one of its two rounding builds."""

    def __init__(self, rounding):
        self.lib = mli11().lib(rounding)
        self.rounding = rounding
        assert self.lib.more, "the oracle library lacks the rest of the API"

    def fn(self, name):
        return self.lib.fn(name)

    def set_rounding(self, rounding):
        assert rounding == self.rounding
        self.lib.reset_dsp()

    def clear_rounding(self):
        pass


@dataclass
class Call:
    """One call: `func` (a C name), `tensors` (role -> tensor spec or None
    for a NULL pointer), `cfg` (field -> value, None for a NULL cfg), and for
    concat the roles of the `inputs` array (None for a NULL array)."""
    func: str
    arguments: str
    tensors: Dict[str, Optional[dict]]
    cfg: Optional[dict] = None
    inputs: Optional[List[str]] = field(default=None)
    tags: List[str] = field(default_factory=list)


def _cfg_struct(arguments, cfg):
    m = mli11()
    kind = dict(VM.ARGUMENTS[arguments]).get("cfg")
    cls = {"mli_pool_cfg": m.PoolCfg, "mli_conv2d_cfg": m.Conv2dCfg, "mli_permute_cfg": m.PermuteCfg,
           "mli_concat_cfg": m.ConcatCfg, "mli_padding2d_cfg": m.Padding2dCfg}[kind]
    s = cls()
    for k, v in cfg.items():
        if k == "relu_type":
            s.relu.type = v
        elif k == "perm_dim":
            for i, x in enumerate(v):
                s.perm_dim[i] = x
        else:
            setattr(s, k, v)
    return s


def out_meta(t):
    """What the caller sees of a tensor struct after a call, the data
    pointer and pointer-valued asym containers aside."""
    m = mli11()
    meta = m.meta(t)
    raw = bytes(C.string_at(C.addressof(t.el_params), C.sizeof(t.el_params)))
    if t.el_type in (2, 3):
        meta["asym"] = m.asym_meta(t)
        if t.el_params.asym.dim < 0:
            meta["el_params_raw"] = raw
    else:
        meta["el_params_raw"] = raw
    return meta


def run(lib, call, rounding, fill=None, out_fill=None, guard=False):
    """Run `call` on `lib` (Core or Oracle) with fresh tensors.  `fill`
    seeds the bytes at and beyond every capacity (mli11.Buffer); `out_fill`
    seeds the output buffer's initial content (else the spec's bytes)."""
    m = mli11()
    tensors, bufs, keep = {}, {}, []
    for role, spec in call.tensors.items():
        if spec is None:
            tensors[role] = None
            continue
        spec = dict(spec)
        if role == "out" and out_fill is not None and spec.get("bytes") is not None:
            spec["bytes"] = np.random.default_rng(out_fill).integers(0, 256, len(spec["bytes"]),
                                                                     dtype=np.uint8).tobytes()
        t, b = m.make_tensor(spec, fill=fill, guard=guard)
        tensors[role], bufs[role] = t, b
    P = C.POINTER(m.MliTensor)
    args = []
    for name, kind in VM.ARGUMENTS[call.arguments]:
        if kind == "tensor_array":
            if call.inputs is None:
                args.append(None)
            else:
                arr = (P * max(1, len(call.inputs)))()
                for i, r in enumerate(call.inputs):
                    arr[i] = C.pointer(tensors[r]) if tensors.get(r) is not None else None
                keep.append(arr)
                args.append(C.cast(arr, C.POINTER(P)))
        elif kind in ("tensor", "out"):
            t = tensors.get(name)
            args.append(C.pointer(t) if t is not None else None)
        else:
            if call.cfg is None:
                args.append(None)
            else:
                s = _cfg_struct(call.arguments, call.cfg)
                keep.append(s)
                args.append(C.pointer(s))
    lib.set_rounding(rounding)
    try:
        ret = lib.fn(call.func)(*args)
    finally:
        lib.clear_rounding()
    res = {"ret": ret if not isinstance(ret, bytes) else ret.decode()}
    for role, b in bufs.items():
        if b is not None and not guard:
            res[role + "_buf"] = b.arr.tobytes()
            res[role + "_beyond"] = b.beyond_written()
    if tensors.get("out") is not None:
        res["out_meta"] = out_meta(tensors["out"])
    return res


def _child(lib_rounding, call, rounding, fill, out_fill, guard):
    """Fork; the child runs the call on MLI's build.  The result, or
    {"crashed": signal} when MLI's code killed the child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        faulthandler.disable()  # a crash of MLI's code is an expected result here
        try:
            res = run(Oracle(lib_rounding), call, rounding, fill=fill, out_fill=out_fill, guard=guard)
            data = pickle.dumps(res)
        except BaseException as e:  # noqa: BLE001 - report anything to the parent
            data = pickle.dumps({"error": repr(e)})
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"crashed": os.WTERMSIG(status)}
    return pickle.loads(data)


def _send(f, obj):
    data = pickle.dumps(obj)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _recv(f):
    head = f.read(8)
    if len(head) < 8:
        raise EOFError
    return pickle.loads(f.read(struct.unpack("<Q", head)[0]))


def serve():
    """The fork server: a small process with MLI's libraries loaded that
    forks one child per request (cheaper than forking the test process)."""
    Oracle("convergent"), Oracle("up")
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            req = _recv(inp)
        except EOFError:
            return
        _send(out, _child(*req))


class ForkServer:
    def __init__(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pathlib.Path(__file__).parent),
                                                            os.environ.get("PYTHONPATH", "")]))
        self.p = subprocess.Popen([sys.executable, "-c", "import mli11_more_harness as h; h.serve()"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def run(self, *req):
        _send(self.p.stdin, req)
        return _recv(self.p.stdout)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


_SERVER = None


def run_in_child(lib_rounding, call, rounding, fill=None, out_fill=None, guard=False):
    """`run` on MLI's build in a forked child (of the fork server): the
    result, or {"crashed": signal} when MLI's code killed the process."""
    global _SERVER
    if _SERVER is None:
        _SERVER = ForkServer()
    return _SERVER.run(lib_rounding, call, rounding, fill, out_fill, guard)


def tensor_spec(data, el_type, shape, rank=None, mem_stride=(0, 0, 0, 0), capacity=None, frac=0, asym=None,
                extra=0):
    """A tensor spec: `data` (array of the container type, holes included)
    placed at the start of a buffer of max(capacity, nbytes) + `extra` bytes."""
    data = np.ascontiguousarray(data)
    raw = data.tobytes()
    cap = len(raw) if capacity is None else int(capacity)
    raw = raw + bytes(max(0, cap - len(raw)) + extra)
    shape = list(shape) + [0] * (4 - len(shape))
    return {"bytes": raw, "capacity": cap, "mem_stride": list(mem_stride) + [0] * (4 - len(mem_stride)),
            "shape": shape[:4], "rank": len([s for s in shape[:4] if s]) if rank is None else rank,
            "el_type": el_type, "frac": frac, "asym": asym}


def out_spec(capacity, el_type=0, rank=3, shape=(0, 0, 0, 0), mem_stride=(0, 0, 0, 0), frac=0, asym=None,
             seed=0):
    """An output tensor: `capacity` bytes of noise, junk metadata as given."""
    raw = np.random.default_rng(seed).integers(0, 256, int(capacity), dtype=np.uint8).tobytes()
    return {"bytes": raw, "capacity": int(capacity), "mem_stride": list(mem_stride), "shape": list(shape),
            "rank": rank, "el_type": el_type, "frac": frac, "asym": asym}
