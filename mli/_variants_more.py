"""The table of the C core's functions from the rest of MLI 1.1's kernel API
(pooling, the sa8 kernels, leaky ReLU, softmax, permute, concat, padding2d):
every C name, its kind, its arguments and, for the shape-specialised
variants, the values it fixes.

This module is the source of the variant lists: ``csrc/tools/gen_variants_more.py``
writes from it the X-macro lists the C templates expand
(``csrc/src/kernels/mli_krn_variants_more.h``) and the public headers
``mli_krn_avepool_spec_api.h`` / ``mli_krn_maxpool_spec_api.h``; a test keeps
them equal.  It holds data only (no import of the extension), so that the
Python wrappers and stubs of these kernels can be generated from it.

A variant (`Variant`) is described by what MLI 1.1's code does with it:

* ``kernel_width`` / ``kernel_height`` / ``stride``: the values it fixes,
  0 = taken from the call (the cfg for pools, the weights' shape for
  convolutions); a fixed stride holds for both directions;
* ``padding``: ``"zero"`` -- the variant sets all four paddings to 0
  (``nopad``); ``"cfg"`` -- it uses the cfg's;
* ``when``: the dispatcher's condition on the padding besides the fixed
  values: ``"zero"`` all four 0, ``"same"`` each at most the 'same' value of
  the fixed kernel ((k-1)/2 before, k/2 after), ``"any"`` none;
* ``core``: the loop MLI runs: ``"nopad"`` (full windows, no clipping),
  ``"pad"`` (a padding-free centre, then borders clipped on both sides),
  ``"pad_small"`` (maxpool chw k2x2/k3x3 krnpad: borders clipped by at most
  one column per side), ``"pointwise"`` (the sa8 1x1 loop, with its stride bug).

The dispatcher (variant ``""``) calls the first entry of its list whose
condition holds, else ``generic`` (the last entry); its ``mli_debug_krn_``
twin returns that function's name.
"""
from typing import Dict, List, NamedTuple, Tuple


class Variant(NamedTuple):
    suffix: str
    kernel_width: int = 0
    kernel_height: int = 0
    stride: int = 0
    padding: str = "cfg"
    when: str = "any"
    core: str = "pad"


def _nopad(kw: int, kh: int, stride: int = 0) -> Variant:
    name = f"k{kw or 'n'}x{kh or 'n'}" + (f"_str{stride}" if stride else "") + "_nopad"
    return Variant(name, kw, kh, stride, "zero", "zero", "nopad")


def _krnpad(kw: int, kh: int, core: str = "pad") -> Variant:
    name = f"k{kw or 'n'}x{kh or 'n'}_krnpad"
    return Variant(name, kw, kh, 0, "cfg", "same" if kw and kh else "any", core)


def _anypad(kw: int, kh: int) -> Variant:
    return Variant(f"k{kw or 'n'}x{kh or 'n'}", kw, kh, 0, "cfg", "any", "pad")


GENERIC = Variant("generic")

# Pooling: dispatch order (MLI 1.1's generated if-chains), generic last.
_MAXPOOL_CHW: List[Variant] = [_nopad(2, 2, 1)]
for _k in range(10, 1, -1):
    _MAXPOOL_CHW += [_nopad(_k, _k), _krnpad(_k, _k, "pad_small" if _k <= 3 else "pad")]
    if _k in (3, 2):
        _MAXPOOL_CHW += [_anypad(_k, _k)]
        _MAXPOOL_CHW += [_nopad(_k, 1), _krnpad(_k, 1)]
_MAXPOOL_CHW += [_nopad(1, 3), _krnpad(1, 3), _nopad(1, 2), _krnpad(1, 2), _anypad(1, 0), _anypad(0, 1), GENERIC]

_AVEPOOL_CHW: List[Variant] = []
for _k in range(10, 1, -1):
    _AVEPOOL_CHW += [_nopad(_k, _k), _krnpad(_k, _k)]
    if _k in (3, 2):
        _AVEPOOL_CHW += [_nopad(_k, 1), _krnpad(_k, 1)]
_AVEPOOL_CHW += [_nopad(1, 3), _krnpad(1, 3), _nopad(1, 2), _krnpad(1, 2),
                 _nopad(1, 0), _krnpad(1, 0), _nopad(0, 1), _krnpad(0, 1), GENERIC]

_POOL_HWC: List[Variant] = [_nopad(3, 3), _krnpad(3, 3), _nopad(2, 2), _krnpad(2, 2), GENERIC]

# sa8 convolutions: the kernel size comes from the weights; k1x1 without
# padding runs the pointwise loop whatever the stride (SPEC_MLI11_MORE 3.6).
_CONV2D_NHWC: List[Variant] = [_nopad(5, 5), _krnpad(5, 5), _nopad(3, 3), _krnpad(3, 3),
                               Variant("k1x1_nopad", 1, 1, 0, "zero", "zero", "pointwise"), GENERIC]
_DEPTHWISE_HWCN: List[Variant] = [_nopad(5, 5), _krnpad(5, 5), _nopad(3, 3), _krnpad(3, 3), GENERIC]

# family -> (kinds, arguments, variants in dispatch order)
VARIANT_FAMILIES: Dict[str, Tuple[Tuple[str, ...], str, List[Variant]]] = {
    "maxpool_chw": (("fx8", "fx16"), "pool", _MAXPOOL_CHW),
    "avepool_chw": (("fx8", "fx16"), "pool", _AVEPOOL_CHW),
    "maxpool_hwc": (("fx8", "fx16", "sa8"), "pool", _POOL_HWC),
    "avepool_hwc": (("fx8", "fx16", "sa8"), "pool", _POOL_HWC),
    "conv2d_nhwc": (("sa8_sa8_sa32",), "conv", _CONV2D_NHWC),
    "depthwise_conv2d_hwcn": (("sa8_sa8_sa32",), "conv", _DEPTHWISE_HWCN),
}

# family -> (kinds, arguments): one function per kind, no variants
PLAIN_FAMILIES: Dict[str, Tuple[Tuple[str, ...], str]] = {
    "leaky_relu": (("fx8", "fx16"), "leaky_relu"),
    "softmax": (("fx8", "fx16"), "softmax"),
    "permute": (("fx8", "fx16"), "permute"),
    "concat": (("fx8", "fx16"), "concat"),
    "padding2d_chw": (("fx8", "fx16"), "padding2d"),
    "padding2d_hwc": (("fx8", "fx16"), "padding2d"),
    "fully_connected": (("sa8_sa8_sa32",), "fully_connected"),
}

# the C arguments of each signature kind ("tensor", "tensor_array", "<cfg struct>", "out")
ARGUMENTS: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "pool": (("in", "tensor"), ("cfg", "mli_pool_cfg"), ("out", "out")),
    "conv": (("in", "tensor"), ("weights", "tensor"), ("bias", "tensor"), ("cfg", "mli_conv2d_cfg"),
             ("out", "out")),
    "leaky_relu": (("in", "tensor"), ("slope_coeff", "tensor"), ("out", "out")),
    "softmax": (("in", "tensor"), ("out", "out")),
    "permute": (("in", "tensor"), ("cfg", "mli_permute_cfg"), ("out", "out")),
    "concat": (("inputs", "tensor_array"), ("cfg", "mli_concat_cfg"), ("out", "out")),
    "padding2d": (("in", "tensor"), ("cfg", "mli_padding2d_cfg"), ("out", "out")),
    "fully_connected": (("in", "tensor"), ("weights", "tensor"), ("bias", "tensor"), ("out", "out")),
}


class Function(NamedTuple):
    name: str          # the C name
    family: str
    kind: str
    variant: str       # "" (dispatcher or plain function), "generic" or a suffix
    role: str          # "kernel" (no variants), "dispatcher", "generic", "specialisation", "debug"
    arguments: str     # key of ARGUMENTS; "debug" functions take the dispatcher's and return char *
    fixed: Variant     # the variant's description (GENERIC for dispatchers and plain kernels)


def func_name(family: str, kind: str, variant: str = "") -> str:
    return f"mli_krn_{family}_{kind}" + (f"_{variant}" if variant else "")


def functions() -> List[Function]:
    """Every C function of the table, in a fixed order."""
    out: List[Function] = []
    for fam, (kinds, args, variants) in VARIANT_FAMILIES.items():
        for kind in kinds:
            out.append(Function(func_name(fam, kind), fam, kind, "", "dispatcher", args, GENERIC))
            out.append(Function(f"mli_debug_krn_{fam}_{kind}", fam, kind, "", "debug", args, GENERIC))
            for v in variants:
                role = "generic" if v.suffix == "generic" else "specialisation"
                out.append(Function(func_name(fam, kind, v.suffix), fam, kind, v.suffix, role, args, v))
    for fam, (kinds, args) in PLAIN_FAMILIES.items():
        for kind in kinds:
            out.append(Function(func_name(fam, kind), fam, kind, "", "kernel", args, GENERIC))
    return out


def dispatch(family: str, kernel_width: int, kernel_height: int, stride_width: int, stride_height: int,
             padding_top: int, padding_bottom: int, padding_left: int, padding_right: int) -> str:
    """The variant suffix MLI 1.1's dispatcher of `family` picks (the kernel
    size is the cfg's for pools, the weights' for convolutions)."""
    pads = (padding_top, padding_bottom, padding_left, padding_right)
    for v in VARIANT_FAMILIES[family][2]:
        if v.kernel_width and v.kernel_width != kernel_width:
            continue
        if v.kernel_height and v.kernel_height != kernel_height:
            continue
        if v.stride and (stride_width, stride_height) != (v.stride, v.stride):
            continue
        if v.when == "zero" and any(pads):
            continue
        if v.when == "same":
            kw, kh = v.kernel_width, v.kernel_height
            if not (padding_top <= (kh - 1) // 2 and padding_bottom <= kh // 2
                    and padding_left <= (kw - 1) // 2 and padding_right <= kw // 2):
                continue
        return v.suffix
    raise AssertionError("the generic entry matches every call")
