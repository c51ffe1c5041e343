"""The configuration structs of MLI 1.1's convolution, pooling and
data-movement kernels, as :mod:`mli.tools.export_c` writes them:
``mli_conv2d_cfg``, ``mli_pool_cfg``, ``mli_permute_cfg``,
``mli_concat_cfg`` and ``mli_padding2d_cfg`` (``csrc/include/mli_types.h``,
MLI's field names and order).  Every field is a ``uint8_t`` in MLI, so
every value is checked to be in 0..255 (and more where MLI needs more)."""
from dataclasses import dataclass

import numpy as np

from ..enums import ReluType, parse_enum
from .export_base import ExportError, _check_name

__all__ = ["ExportStruct", "make_conv2d_cfg", "make_pool_cfg", "make_permute_cfg", "make_concat_cfg",
           "make_padding2d_cfg", "STRUCT_OPTIONS", "struct_from_spec"]

MAX_RANK = 4
CONCAT_MAX_TENSORS = 8      # MLI_CONCAT_MAX_TENSORS in MLI 1.1's mli_config.h
_PADDINGS = ("padding_left", "padding_right", "padding_top", "padding_bottom")
_STRIDES = ("stride_width", "stride_height")


@dataclass(frozen=True)
class ExportStruct:
    """One configuration struct: its C type, its name and its fields as
    ``(field, C initialiser)`` in MLI's order.  Written ``const``: MLI's
    kernels take it through a ``const`` pointer, so it can live in ROM."""

    name: str
    c_type: str
    fields: tuple

    def c_lines(self):
        return ([f"const {self.c_type} {self.name} = {{"] + [f"    .{f} = {v}," for f, v in self.fields]
                + ["};", ""])

    def h_lines(self):
        text = ", ".join(f"{f} {v}" for f, v in self.fields)
        return [f"/* {self.name}: {text} */", f"extern const {self.c_type} {self.name};", ""]


def _u8(value, what, lo=0, hi=255):
    """An integer in lo..hi from an int or the text of one (the command line)."""
    v = None
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        v = int(value.strip())
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        v = int(value)
    if v is None or not lo <= v <= hi:
        raise ExportError(f"{what}: expected an integer in {lo}..{hi}, got {value!r}")
    return v


def _fields(name, values, keys, lo=0):
    return tuple((k, str(_u8(values[k], f"{name}: {k}", lo))) for k in keys)


def make_conv2d_cfg(name, *, relu="none", stride_width=1, stride_height=1, padding_left=0, padding_right=0,
                    padding_top=0, padding_bottom=0):
    """An ``mli_conv2d_cfg``: ``relu`` a :class:`mli.ReluType` or its name
    (``none``, ``gen``, ``relu_1``, ``relu_6``), strides of at least 1."""
    _check_name(name)
    try:
        rt = parse_enum(relu, ReluType, ("MLI_RELU_",))
    except ValueError as e:
        raise ExportError(f"{name}: relu: {e}") from None
    v = dict(stride_width=stride_width, stride_height=stride_height, padding_left=padding_left,
             padding_right=padding_right, padding_top=padding_top, padding_bottom=padding_bottom)
    return ExportStruct(name, "mli_conv2d_cfg", (("relu.type", "MLI_RELU_" + rt.name.replace("RELU_", "")),)
                        + _fields(name, v, _STRIDES, 1) + _fields(name, v, _PADDINGS))


def make_pool_cfg(name, *, kernel_width, kernel_height, stride_width=1, stride_height=1, padding_left=0,
                  padding_right=0, padding_top=0, padding_bottom=0):
    """An ``mli_pool_cfg``: kernel size and strides of at least 1."""
    _check_name(name)
    v = dict(kernel_width=kernel_width, kernel_height=kernel_height, stride_width=stride_width,
             stride_height=stride_height, padding_left=padding_left, padding_right=padding_right,
             padding_top=padding_top, padding_bottom=padding_bottom)
    return ExportStruct(name, "mli_pool_cfg", _fields(name, v, ("kernel_width", "kernel_height") + _STRIDES, 1)
                        + _fields(name, v, _PADDINGS))


def make_permute_cfg(name, perm_dim):
    """An ``mli_permute_cfg``: ``perm_dim`` a permutation of 0..rank-1
    (rank 1 to 4); the unused entries are 0."""
    _check_name(name)
    try:
        perm = [int(p) for p in perm_dim]
    except (TypeError, ValueError):
        raise ExportError(f"{name}: perm_dim: expected a permutation such as 1,2,0, got {perm_dim!r}") from None
    if not 1 <= len(perm) <= MAX_RANK or sorted(perm) != list(range(len(perm))):
        raise ExportError(f"{name}: perm_dim: expected a permutation of 0..rank-1 (rank 1 to {MAX_RANK}), "
                          f"got {perm}")
    full = perm + [0] * (MAX_RANK - len(perm))
    return ExportStruct(name, "mli_permute_cfg", (("perm_dim", "{" + ", ".join(map(str, full)) + "}"),))


def make_concat_cfg(name, *, tensors_num, axis):
    """An ``mli_concat_cfg``: ``tensors_num`` inputs (1 to 8, MLI's limit)
    joined along ``axis`` (0 to 3)."""
    _check_name(name)
    return ExportStruct(name, "mli_concat_cfg",
                        (("tensors_num", str(_u8(tensors_num, f"{name}: tensors_num", 1, CONCAT_MAX_TENSORS))),
                         ("axis", str(_u8(axis, f"{name}: axis", 0, MAX_RANK - 1)))))


def make_padding2d_cfg(name, *, padding_left=0, padding_right=0, padding_top=0, padding_bottom=0):
    """An ``mli_padding2d_cfg``."""
    _check_name(name)
    v = dict(padding_left=padding_left, padding_right=padding_right, padding_top=padding_top,
             padding_bottom=padding_bottom)
    return ExportStruct(name, "mli_padding2d_cfg", _fields(name, v, _PADDINGS))


# command line: option -> (maker, shorthands {key: fields it sets}, the keys it takes)
STRUCT_OPTIONS = {
    "conv2d_cfg": (make_conv2d_cfg, {"stride": _STRIDES, "padding": _PADDINGS},
                   ("relu",) + _STRIDES + _PADDINGS),
    "pool_cfg": (make_pool_cfg, {"kernel": ("kernel_width", "kernel_height"), "stride": _STRIDES,
                                 "padding": _PADDINGS}, ("kernel_width", "kernel_height") + _STRIDES + _PADDINGS),
    "permute_cfg": (make_permute_cfg, {}, ("perm_dim",)),
    "concat_cfg": (make_concat_cfg, {}, ("tensors_num", "axis")),
    "padding2d_cfg": (make_padding2d_cfg, {"padding": _PADDINGS}, _PADDINGS),
}


def struct_from_spec(option, name, opts):
    """The struct of ``--OPTION NAME,key=value,...`` (`opts` the key/value
    pairs): a shorthand (``stride=2``, ``padding=1``, ``kernel=3``) sets
    every field it stands for and a field named on its own overrides it;
    ``perm_dim`` is written ``1x2x0`` (or ``1-2-0``)."""
    flag = "--" + option.replace("_", "-")
    maker, shorthands, keys = STRUCT_OPTIONS[option]
    unknown = set(opts) - set(keys) - set(shorthands)
    if unknown:
        raise ExportError(f"{flag} {name}: unknown key(s) {', '.join(sorted(unknown))} "
                          f"(takes {', '.join(list(shorthands) + list(keys))})")
    kw = {}
    for short, fields in shorthands.items():
        if short in opts:
            kw.update({f: opts[short] for f in fields})
    kw.update({k: v for k, v in opts.items() if k in keys})
    if option == "permute_cfg":
        if "perm_dim" not in kw:
            raise ExportError(f"{flag} {name}: needs perm_dim= (e.g. perm_dim=1x2x0)")
        kw["perm_dim"] = kw["perm_dim"].replace("-", "x").split("x")
    missing = {"pool_cfg": ("kernel_width", "kernel_height"), "concat_cfg": ("tensors_num", "axis")}.get(option, ())
    if any(m not in kw for m in missing):
        raise ExportError(f"{flag} {name}: needs {' and '.join(m + '=' for m in missing)}"
                          + (" (or kernel=N)" if option == "pool_cfg" else ""))
    try:
        return maker(name, **kw)
    except ExportError as e:
        raise ExportError(f"{flag} {e}") from None
