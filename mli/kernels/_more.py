"""What the kernel modules of the rest of MLI 1.1 share (conv2d,
depthwise_conv2d, pool, data, and leaky ReLU / softmax in transform, the sa8
fully connected): the table of their C functions (mli/_variants_api.py),
the configuration structs as the bridge takes them, the output geometry a
new output is allocated from, and the factory that makes one wrapper per C
function of a family from the table (no function is written by hand)."""
import math

from .. import _core
from .. import _variants_api as API
from .._status import Status, error
from ..enums import ElementType
from ..tensor import Tensor
from ._base import export, named, tensor_arg
from .config import ConcatConfig, Conv2dConfig, Padding2dConfig, PermuteConfig, PoolConfig

import numpy as np  # noqa: E402

_core.register_more(np.dtype(np.int32))
TABLES = API.tables()
ENTRIES = {e.name: e for e in API.entries()}
INDEX = {e.name: i for rows in TABLES.values() for i, e in enumerate(rows)}
BY_C_NAME = {e.c_name: e for e in API.entries()}

# the bridge's tables must name the C functions of the Python table, in its order
for _key, _rows in TABLES.items():
    if _core.TABLE_NAMES[_key] != tuple(e.c_name for e in _rows):
        raise ImportError(f"mli._core's table {_key} is not the one of mli/_variants_api.py: rebuild the "
                          "extension (python csrc/tools/gen_bridge.py, then python setup.py build_ext --inplace)")

_EL_SIZE = {ElementType.FX_8: 1, ElementType.FX_16: 2, ElementType.ASYM_I8: 1, ElementType.ASYM_I32: 4}
_LIMIT = 1 << 31   # bytes: a larger output is never allocated (the C checks answer for its arguments)


def _u8(fname, field, v):
    if isinstance(v, bool) or not isinstance(v, int):
        try:
            v = int(v)
        except (TypeError, ValueError):
            raise TypeError(f"{fname}: cfg.{field} must be an int, got {type(v).__name__}") from None
    if not 0 <= v <= 255:
        raise error(Status.BAD_FUNC_CFG, "mli_krn_" + fname, "cfg", field, f"is a uint8_t (0..255), got {v}")
    return v


def _cfg_arg(cfg, cls, fname):
    if cfg is not None and not isinstance(cfg, cls):
        raise TypeError(f"{fname}: cfg must be an mli.{cls.__name__} (or None for a NULL cfg), "
                        f"got {type(cfg).__name__}")
    return cfg


def conv_cfg(cfg, fname):
    """(relu, stride_width, stride_height, padding_left, _right, _top, _bottom) or None."""
    if _cfg_arg(cfg, Conv2dConfig, fname) is None:
        return None
    relu = cfg.relu
    if isinstance(relu, bool) or not isinstance(relu, int) or not -2 ** 31 <= int(relu) < 2 ** 31:
        raise error(Status.BAD_FUNC_CFG, "mli_krn_" + fname, "cfg", "relu", f"must fit a C int, got {relu!r}")
    return (int(relu),) + tuple(_u8(fname, f, getattr(cfg, f)) for f in (
        "stride_width", "stride_height", "padding_left", "padding_right", "padding_top", "padding_bottom"))


def pool_cfg(cfg, fname):
    if _cfg_arg(cfg, PoolConfig, fname) is None:
        return None
    return tuple(_u8(fname, f, getattr(cfg, f)) for f in (
        "kernel_width", "kernel_height", "stride_width", "stride_height", "padding_left", "padding_right",
        "padding_top", "padding_bottom"))


def _shape(t, rank):
    """t's shape when it has `rank` dims and its capacity could hold them (else None)."""
    if t is None or t.is_null or t.rank != rank:
        return None
    shape = t.shape4[:rank]
    es = _EL_SIZE.get(t.el_type, 1)
    if t.scalar_value is not None or t.data_null or math.prod(shape) * es > t.capacity:
        return None
    return shape


def _out_size(n, k, pad_before, pad_after, stride):
    num = n + pad_before + pad_after - k + 1
    if stride <= 0 or num <= 0:
        return 0
    return (num + stride - 1) // stride


def _bounded(count, es):
    return count if 0 < count and count * es <= _LIMIT else 1


def span(t):
    """The elements a kernel that copies in's layout to out (leaky ReLU,
    softmax) writes: the count, or the strided span (1 when the tensor's
    capacity could not hold them: then a C check rejects it)."""
    if t.is_null or t.scalar_value is not None or t.data_null or not 0 <= t.rank <= 4:
        return 1
    shape, strides = t.shape4[:t.rank], t.mem_stride[:t.rank]
    n = math.prod(shape)
    if t.rank and n and all(s > 0 for s in strides):
        n = 1 + sum((d - 1) * s for d, s in zip(shape, strides))
    es = _EL_SIZE.get(t.el_type, 1)
    return n if 0 < n and n * es <= t.capacity and n * es <= _LIMIT else 1


def _geometry(e, h, w, kw, kh, cfg_stride, cfg_pad):
    """(Ho, Wo) with the entry's fixed values in place of the call's ones."""
    sw, sh = (e.stride, e.stride) if e.stride else cfg_stride
    pt, pb, pl, pr = e.padding if e.padding is not None else cfg_pad
    kw = e.kw or kw
    kh = e.kh or kh
    return _out_size(h, kh, pt, pb, sh), _out_size(w, kw, pl, pr, sw)


_CONV_LAYOUT = {  # family -> (in dims (H, W, C), weights dims (OC, KH, KW), out order)
    "conv2d_chw": ((1, 2, 0), (0, 2, 3), "chw"),
    "depthwise_conv2d_chw": ((1, 2, 0), (0, 2, 3), "chw"),
    "conv2d_hwc": ((0, 1, 2), (0, 1, 2), "hwc"),
    "conv2d_nhwc": ((0, 1, 2), (0, 1, 2), "hwc"),
    "depthwise_conv2d_hwcn": ((0, 1, 2), (3, 1, 2), "hwc"),
}


def conv_count(e, x, weights, c, picked=None):
    """Elements of a new output of convolution entry `e`: the larger of the
    geometry of the cfg and that of the function that computes (the entry's
    fixed values, or for a dispatcher those of the variant it picks)."""
    (ih, iw, _), (wo, wkh, wkw), _ = _CONV_LAYOUT[e.family]
    xs, ws = _shape(x, 3), _shape(weights, 4)
    if xs is None or ws is None or c is None:
        return 1
    h, w, oc, kh, kw = xs[ih], xs[iw], ws[wo], ws[wkh], ws[wkw]
    stride, pad = (c[1], c[2]), (c[5], c[6], c[3], c[4])
    best = 0
    for ent in (e, picked, API.Entry("", "", "", "", "", "", "")):
        if ent is None:
            continue
        ho, wo_ = _geometry(ent, h, w, kw, kh, stride, pad)
        best = max(best, oc * ho * wo_)
    return _bounded(best, 2)


def pool_count(e, x, c, picked=None):
    hwc = e.family.endswith("_hwc")
    xs = _shape(x, 3)
    if xs is None or c is None:
        return 1
    h, w, ch = (xs[0], xs[1], xs[2]) if hwc else (xs[1], xs[2], xs[0])
    stride, pad = (c[2], c[3]), (c[6], c[7], c[4], c[5])
    best = 0
    for ent in (e, picked, API.Entry("", "", "", "", "", "", "")):
        if ent is None:
            continue
        ho, wo = _geometry(ent, h, w, c[0], c[1], stride, pad)
        best = max(best, ch * ho * wo)
    return _bounded(best, 2)


def count(t):
    s = _shape(t, t.rank) if t is not None and not t.is_null and 0 <= t.rank <= 4 else None
    return 1 if s is None else _bounded(math.prod(s), 2)


def _frac(x, out_frac_bits):
    return x.frac_bits if out_frac_bits is None else out_frac_bits


def _asym_out(zero_point, scale, scale_frac_bits):
    for name, v in (("out_zero_point", zero_point), ("out_scale", scale), ("out_scale_frac_bits", scale_frac_bits)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    return (-1, scale_frac_bits, zero_point, scale)


_DOC_ERRORS = """
    Raises the :class:`mli.MliError` subclass of the C status (naming the
    argument and field), with ``mlipy_safety`` set where MLI 1.1 itself would
    read or write outside its buffers; ``TypeError`` for an argument of the
    wrong Python type; ``ValueError`` for an output that is read-only or
    overlaps an input.  Inputs are never modified."""


_LAYOUT = {
    "conv2d_chw": "x [C, H, W], weights [OC, C, KH, KW], bias [OC] -> [OC, Ho, Wo]",
    "depthwise_conv2d_chw": "x [C, H, W], weights [C, 1, KH, KW], bias [C] -> [C, Ho, Wo]",
    "conv2d_hwc": "x [H, W, C], weights [OC, KH, KW, C], bias [OC] -> [Ho, Wo, OC]",
    "conv2d_nhwc": "x [H, W, C] sa8, weights [OC, KH, KW, C] sa8 (per axis 0), bias [OC] sa32 -> [Ho, Wo, OC] sa8",
    "depthwise_conv2d_hwcn": "x [H, W, C] sa8, weights [1, KH, KW, OC] sa8 (per axis 3), bias [OC] sa32 -> "
                             "[Ho, Wo, OC] sa8",
}

_PARAMS = {
    "conv": """
    Parameters
    ----------
    x, weights, bias : mli.Tensor
        {layout}; Ho = ceil((H + padding_top + padding_bottom - KH + 1) / stride_height), Wo likewise.
    cfg : mli.Conv2dConfig or None
        relu, strides and paddings (None: a NULL cfg).
    out : mli.Tensor, optional
        Written in place (never an input); else a new tensor is returned.
    {extra}

    Returns
    -------
    mli.Tensor
        The output, its metadata as MLI leaves it.""",
    "pool": """
    Parameters
    ----------
    x : mli.Tensor
        [C, H, W] (chw) or [H, W, C] (hwc); the output has in's element type and parameters.
    cfg : mli.PoolConfig or None
        kernel size, strides and paddings (padding is excluded from the windows).
    out : mli.Tensor, optional
        Written in place (never the input); else a new tensor is returned.""",
    "leaky_relu": """
    Parameters
    ----------
    x : mli.Tensor
        Any shape; the output keeps its format (frac bits, shape, strides).
    slope : mli.Tensor
        MLI's slope_coeff: rank 0 (the value in the data field) or one element, in's element type.
    out : mli.Tensor, optional
        May be x (in place).""",
    "softmax": """
    Parameters
    ----------
    x : mli.Tensor
        Any shape (one flat vector); output frac bits 15 (fx16) or 7 (fx8).
    out : mli.Tensor, optional
        May be x (in place).""",
    "permute": """
    Parameters
    ----------
    x : mli.Tensor
    cfg : mli.PermuteConfig or None
        Output dim k is input dim perm_dim[k].
    out : mli.Tensor, optional""",
    "concat": """
    Parameters
    ----------
    inputs : list of mli.Tensor (None for a NULL entry) or None (a NULL array)
        Same rank, type, frac bits and shape except on cfg.axis.
    cfg : mli.ConcatConfig or None
        tensors_num (default: len(inputs)) and axis; None is a NULL cfg.
    out : mli.Tensor, optional""",
    "padding2d": """
    Parameters
    ----------
    x : mli.Tensor
        Rank 3: [C, H, W] (chw) or [H, W, C] (hwc).
    cfg : mli.Padding2dConfig or None
        Zero padding left, right, top, bottom.
    out : mli.Tensor, optional""",
    "fc_sa8": """
    Parameters
    ----------
    x : mli.Tensor
        sa8, N elements.
    weights : mli.Tensor
        sa8 [K, N] (per tensor).
    bias : mli.Tensor
        sa32 [K].
    out : mli.Tensor, optional
        Keeps its own asym parameters; a new output gets out_zero_point, out_scale, out_scale_frac_bits.""",
}


def _params(e):
    if e.role == "debug":
        return ""
    text = _PARAMS[e.sig]
    if e.sig == "conv":
        extra = ("out_frac_bits : int, optional\n        The output's frac bits (default in's), set on a new "
                 "or the given out." if e.kind != "sa8_sa8_sa32" else
                 "out_zero_point, out_scale, out_scale_frac_bits : int\n        The asym parameters of a new "
                 "output (a given out keeps its own).")
        text = text.format(layout=_LAYOUT[e.family], extra=extra)
    return "\n" + text + "\n"


def _doc(e):
    c = e.c_name
    what = {"dispatcher": "the dispatcher: calls the variant MLI 1.1's if-chain picks "
                          f"(:func:`debug_{e.name}` names it)",
            "generic": "the generic function (any kernel size, stride and padding)",
            "specialisation": "a shape-specialised variant: it computes with its fixed values "
                              f"(kernel {e.kw or 'n'}x{e.kh or 'n'}"
                              + (f", stride {e.stride}" if e.stride else "")
                              + (f", padding {e.padding}" if e.padding is not None else "")
                              + (f", {e.ch} input channels" if e.ch else "")
                              + ") in place of the call's, as MLI does, also outside its dispatcher's "
                                "condition; only where MLI would then read or write outside its buffers is the "
                                "call refused (mlipy_safety)",
            "kernel": "one function of MLI 1.1's API",
            "debug": "computes nothing: the name of the C function the dispatcher would call for these "
                     "arguments (MLI's mli_debug_krn_* twin), or None where MLI's would crash"}[e.role]
    return f"``{c}``: {what}." + _params(e) + ("" if e.role == "debug" else _DOC_ERRORS)


def _conv_fx(e, i, fname):
    el = ElementType.FX_8 if e.kind == "fx8" else ElementType.FX_16
    debug = _conv_picker(e)

    def fn(x, weights, bias, cfg, *, out=None, out_frac_bits=None):
        tensor_arg("in", x, fname)
        tensor_arg("weights", weights, fname)
        c = conv_cfg(cfg, fname)
        n = 1 if out is not None else conv_count(e, x, weights, c, debug(x, weights, bias, c))
        return _core.conv_api(i, fname, x, weights, bias, c, out, n, el, _frac(x, out_frac_bits), None)
    return fn


def _conv_sa8(e, i, fname):
    debug = _conv_picker(e)

    def fn(x, weights, bias, cfg, *, out=None, out_zero_point=0, out_scale=1, out_scale_frac_bits=0):
        tensor_arg("in", x, fname)
        tensor_arg("weights", weights, fname)
        c = conv_cfg(cfg, fname)
        a = _asym_out(out_zero_point, out_scale, out_scale_frac_bits)
        n = 1 if out is not None else conv_count(e, x, weights, c, debug(x, weights, bias, c))
        return _core.conv_api(i, fname, x, weights, bias, c, out, n, ElementType.ASYM_I8, None, a)
    return fn


def _pool(e, i, fname):
    debug = _pool_picker(e)

    def fn(x, cfg, *, out=None):
        tensor_arg("in", x, fname)
        c = pool_cfg(cfg, fname)
        n = 1 if out is not None else pool_count(e, x, c, debug(c))
        y = _core.pool_api(i, fname, x, c, out, n)
        keep = getattr(x, "_asym_keep", None)
        if keep is not None:   # sa8: out's asym parameters are in's, per axis pointers to in's arrays
            y._asym_keep = keep
        return y
    return fn


def _leaky_relu(e, i, fname):
    def fn(x, slope, *, out=None):
        tensor_arg("in", x, fname)
        return _core.leaky_relu_api(i, fname, x, slope, out, 1 if out is not None else span(x))
    return fn


def _softmax(e, i, fname):
    def fn(x, *, out=None):
        tensor_arg("in", x, fname)
        return _core.softmax_api(i, fname, x, out, 1 if out is not None else span(x))
    return fn


def _permute(e, i, fname):
    def fn(x, cfg, *, out=None):
        tensor_arg("in", x, fname)
        if _cfg_arg(cfg, PermuteConfig, fname) is None:
            p = None
        else:
            p = tuple(_u8(fname, f"perm_dim[{k}]", d) for k, d in enumerate(cfg.perm_dim))
            if len(p) > 4:
                raise error(Status.BAD_FUNC_CFG, "mli_krn_" + fname, "cfg", "perm_dim",
                            f"has at most 4 entries, got {len(p)}")
            p = p + (0,) * (4 - len(p))
        return _core.permute_api(i, fname, x, p, out, 1 if out is not None else count(x))
    return fn


def _padding2d(e, i, fname):
    hwc = e.family.endswith("_hwc")

    def fn(x, cfg, *, out=None):
        tensor_arg("in", x, fname)
        if _cfg_arg(cfg, Padding2dConfig, fname) is None:
            p = None
        else:
            p = tuple(_u8(fname, f, getattr(cfg, f)) for f in ("padding_left", "padding_right", "padding_top",
                                                                "padding_bottom"))
        n = 1
        xs = _shape(x, 3)
        if out is None and xs is not None and p is not None:
            h, w, ch = (xs[0], xs[1], xs[2]) if hwc else (xs[1], xs[2], xs[0])
            n = _bounded(ch * (h + p[2] + p[3]) * (w + p[0] + p[1]), 2)
        return _core.padding2d_api(i, fname, x, p, out, n)
    return fn


def _concat(e, i, fname):
    el = ElementType.FX_8 if e.kind == "fx8" else ElementType.FX_16

    def fn(inputs, cfg=DEFAULT_CONCAT, *, out=None):
        if inputs is not None and not isinstance(inputs, (list, tuple)):
            raise TypeError(f"{fname}: inputs must be a list or tuple of mli.Tensor, got {type(inputs).__name__}")
        if cfg is DEFAULT_CONCAT:
            cfg = ConcatConfig()
        if _cfg_arg(cfg, ConcatConfig, fname) is None:
            c = None
        else:
            num = len(inputs or ()) if cfg.tensors_num is None else cfg.tensors_num
            c = (_u8(fname, "tensors_num", num), _u8(fname, "axis", cfg.axis))
        n = 1
        if out is None and inputs:
            n = _bounded(sum(count(t) for t in inputs if isinstance(t, Tensor)), 2)
        return _core.concat_api(i, fname, inputs, c, out, n, el)
    return fn


# concat's default cfg, replaced by a fresh ConcatConfig() (axis 0, every input given) at each
# call, whatever was done to this object; None is a NULL cfg
DEFAULT_CONCAT = ConcatConfig()


def _fc_sa8(e, i, fname):
    def fn(x, weights, bias, *, out=None, out_zero_point=0, out_scale=1, out_scale_frac_bits=0):
        tensor_arg("in", x, fname)
        tensor_arg("weights", weights, fname)
        a = _asym_out(out_zero_point, out_scale, out_scale_frac_bits)
        n = 1
        if out is None and weights.rank >= 1 and not weights.is_null:
            n = _bounded(weights.shape4[0], 1)
        return _core.fc_sa8_api(i, fname, x, weights, bias, out, n, a)
    return fn


_FACTORIES = {"pool": _pool, "leaky_relu": _leaky_relu, "softmax": _softmax, "permute": _permute,
              "padding2d": _padding2d, "concat": _concat, "fc_sa8": _fc_sa8}


def make(e):
    """The Python function of table entry `e`."""
    i, fname = INDEX[e.name], e.name
    if e.role == "debug":
        fn = _pool_debug(i, fname) if e.sig == "pool" else _conv_debug(i, fname)
    elif e.sig == "conv":
        fn = (_conv_sa8 if e.kind == "sa8_sa8_sa32" else _conv_fx)(e, i, fname)
    else:
        fn = _FACTORIES[e.sig](e, i, fname)
    return named(fn, fname, "")


def _debug_entry(e):
    """The debug twin of a dispatcher entry (None for other entries)."""
    if e.role != "dispatcher":
        return None
    return ENTRIES.get("debug_" + e.name)


def _no_pick(*args):
    return None


def _pool_picker(e):
    """fn(cfg) -> the Entry the pooling dispatcher `e` picks (None for other entries)."""
    d = _debug_entry(e)
    if d is None:
        return _no_pick
    j = INDEX[d.name]

    def picked(c):
        name = _core.pool_debug(j, c)
        return BY_C_NAME.get(name) if name else None
    return picked


def _conv_picker(e):
    """fn(x, weights, bias, cfg) -> the Entry the convolution dispatcher `e` picks."""
    d = _debug_entry(e)
    if d is None:
        return _no_pick
    j = INDEX[d.name]

    def picked(x, weights, bias, c):
        if c is None or x.is_null or weights.is_null:
            return None
        name = _core.conv_debug(j, x, weights, bias if isinstance(bias, Tensor) else None, c, None)
        return BY_C_NAME.get(name) if name else None
    return picked


def _pool_debug(j, fname):
    def fn(x, cfg):
        return _core.pool_debug(j, pool_cfg(cfg, fname))
    return fn


def _conv_debug(j, fname):
    def fn(x, weights, bias, cfg):
        tensor_arg("in", x, fname)
        tensor_arg("weights", weights, fname)
        c = conv_cfg(cfg, fname)
        if c is None or weights.is_null:   # MLI's dispatcher reads only these (a NULL in is fine)
            return None
        return _core.conv_debug(j, x, weights, bias if isinstance(bias, Tensor) else None, c, None)
    return fn


def export_family(namespace, families):
    """Make and export (into a family module's namespace) the function of every
    table entry of `families`; returns them by name."""
    made = {}
    for e in API.entries():
        if e.family in families:
            fn = make(e)
            fn.__module__ = namespace["__name__"]
            fn.__doc__ = _doc(e)
            made[e.name] = export(namespace, fn)
    return made


def by_kind(name, namespace, kinds_of):
    """``name(...)``: the ``name_<kind>`` of `namespace` picked by `kinds_of(*args)`."""
    def fn(*args, **kw):
        return namespace[f"{name}_{kinds_of(*args)}"](*args, **kw)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = namespace["__name__"]
    fn.__doc__ = f":func:`{name}_<kind>` picked from the element types of the arguments."
    return fn


def dispatched_variant(fn, *args, **kw):
    """The C name of the function the dispatcher `fn` (e.g. ``mli.conv2d_chw_fx8``)
    would call for these arguments (MLI's ``mli_debug_krn_*``), computing nothing."""
    e = ENTRIES.get(getattr(fn, "__name__", ""))
    if e is None or e.role != "dispatcher":
        raise ValueError(f"dispatched_variant: {getattr(fn, '__name__', fn)!r} is not a dispatcher of MLI 1.1 "
                         "(conv2d_chw_*, depthwise_conv2d_chw_*, the pools, conv2d_nhwc_*, depthwise_conv2d_hwcn_*)")
    kw.pop("out", None)
    d = _debug_entry(e)
    return make(d)(*args[:2 if e.sig == "pool" else 4])


__all__ = ["make", "export_family", "by_kind", "dispatched_variant", "ENTRIES", "TABLES"]
