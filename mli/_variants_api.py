"""Every C function of the rest of MLI 1.1's kernel API as the Python layer
sees it: one row per C function, from the two variant tables
(:mod:`mli._variants_conv`, :mod:`mli._variants_more`), in one fixed order.

The bridge's function tables (``mli/_bridge/tables.pxi``) and the typed stubs
(``mli/__init__.pyi``, ``mli/kernels/__init__.pyi``) are generated from
`entries()` by ``csrc/tools/gen_bridge.py``; the kernel modules make their
wrappers from it at import and check that the bridge's tables name the same
C functions in the same order (the index of a row in its signature's table
is how a wrapper names its C function to the bridge).

Data only (no import of the extension), so that the generator can load it by path.
"""
import importlib.util
import pathlib
import sys
from typing import Dict, List, NamedTuple, Optional

if __package__:
    from . import _variants_conv as VC
    from . import _variants_more as VM
else:  # loaded by path (csrc/tools/gen_bridge.py, tests)
    def _load(name):
        key = "mli_" + name
        if key not in sys.modules:
            spec = importlib.util.spec_from_file_location(key, pathlib.Path(__file__).with_name(name + ".py"))
            mod = importlib.util.module_from_spec(spec)
            sys.modules[key] = mod
            spec.loader.exec_module(mod)
        return sys.modules[key]

    VC = _load("_variants_conv")
    VM = _load("_variants_more")

# signature kind -> the Python parameters of the kernel function (before ``*, out=None``)
SIGNATURES = {
    "conv": "x, weights, bias, cfg",
    "pool": "x, cfg",
    "leaky_relu": "x, slope",
    "softmax": "x",
    "permute": "x, cfg",
    "concat": "inputs, cfg",
    "padding2d": "x, cfg",
    "fc_sa8": "x, weights, bias",
}

# family -> the kernel module of mli.kernels it lives in (the C file's family)
MODULES = {
    "conv2d_chw": "conv2d", "conv2d_hwc": "conv2d", "conv2d_nhwc": "conv2d",
    "depthwise_conv2d_chw": "depthwise_conv2d", "depthwise_conv2d_hwcn": "depthwise_conv2d",
    "maxpool_chw": "pool", "avepool_chw": "pool", "maxpool_hwc": "pool", "avepool_hwc": "pool",
    "leaky_relu": "leaky_relu", "softmax": "softmax",
    "permute": "data", "concat": "data", "padding2d_chw": "data", "padding2d_hwc": "data",
    "fully_connected": "fully_connected",
}


class Entry(NamedTuple):
    name: str            # the Python name: MLI's minus mli_krn_ (debug twins: debug_<dispatcher>)
    c_name: str
    family: str
    kind: str            # fx8, fx16, fx8w16d, sa8, sa8_sa8_sa32
    variant: str         # "" (dispatcher or plain kernel), "generic" or the suffix
    role: str            # dispatcher, debug, generic, specialisation, kernel
    sig: str             # key of SIGNATURES
    # the effective values of a variant: kernel width/height, stride (0: the call's), padding
    # (t, b, l, r) it fixes (None: the call's); for chw convolutions also the fixed input channels
    kw: int = 0
    kh: int = 0
    stride: int = 0
    padding: Optional[tuple] = None
    ch: int = 0


def _conv_rows():
    out = []
    rows = {}
    for fam in ("conv2d_chw", "depthwise_conv2d_chw"):
        for kind in VC.KINDS:
            for r in VC.variants(fam, kind):
                rows[(fam, kind, r["suffix"])] = r
    for f in VC.functions():
        fam, kind, var = f["family"], f["kind"], f["variant"]
        if f.get("debug"):
            out.append(Entry("debug_" + f["name"][len("mli_debug_krn_"):], f["name"], fam, kind, "", "debug",
                             "conv"))
            continue
        role = "kernel" if fam == "conv2d_hwc" else "dispatcher" if var == "" else \
            "generic" if var == "generic" else "specialisation"
        r = rows.get((fam, kind, var))
        if r is None:
            out.append(Entry(f["name"][len("mli_krn_"):], f["name"], fam, kind, var, role, "conv"))
        else:
            out.append(Entry(f["name"][len("mli_krn_"):], f["name"], fam, kind, var, role, "conv",
                             r["kw"], r["kh"], r["stride"], r["fixed_padding"], r["ch"]))
    return out


_SIG_MORE = {"conv": "conv", "pool": "pool", "leaky_relu": "leaky_relu", "softmax": "softmax",
             "permute": "permute", "concat": "concat", "padding2d": "padding2d", "fully_connected": "fc_sa8"}


def _more_rows():
    out = []
    for f in VM.functions():
        sig = _SIG_MORE[f.arguments]
        if f.role == "debug":
            out.append(Entry("debug_" + f.name[len("mli_debug_krn_"):], f.name, f.family, f.kind, "", "debug", sig))
            continue
        v = f.fixed
        pad = (0, 0, 0, 0) if v.padding == "zero" else None
        out.append(Entry(f.name[len("mli_krn_"):], f.name, f.family, f.kind, f.variant, f.role, sig,
                         v.kernel_width, v.kernel_height, v.stride, pad))
    return out


def entries() -> List[Entry]:
    """Every function, conv2d_chw / depthwise_conv2d_chw / conv2d_hwc first
    (their table's order), then the rest (theirs)."""
    return _conv_rows() + _more_rows()


def tables() -> Dict[str, List[Entry]]:
    """signature -> its kernels, and signature + "_debug" -> its debug twins, in
    the order of the bridge's function tables (the index of a row is its index there)."""
    out: Dict[str, List[Entry]] = {}
    for e in entries():
        out.setdefault(e.sig + ("_debug" if e.role == "debug" else ""), []).append(e)
    return out
