"""``mli export-c --mli 2``: MLI 2.0.2 tensor initialisers as C.

The 2.x ``mli_tensor`` differs from 1.1's (see :mod:`mli.v2.tensor`): the data
is a container (``.data.capacity``, ``.data.mem.pi8/pi16/pi32``), strides are
mandatory (``mem_stride`` in elements, dimension 0 outermost: written dense),
and the element parameters are FX ``frac_bits`` (signed) or the SA block: zero
point, scale and scale_frac_bits per tensor (inline in the containers, whose
capacities are 0) or per index of dimension ``dim`` (the containers point to
``NAME_zero_point``, ``NAME_scale``, ``NAME_scale_frac_bits`` arrays).

Element types: ``fx8``, ``fx16``, ``sa8``, ``sa32``.  Float values are quantized
by :meth:`mli.v2.Tensor.from_float` (FX: with the frac given or the largest
that holds them; SA: per tensor or along ``dim``, symmetric unless asked
otherwise, or with the parameters given); an :class:`mli.v2.Tensor` exports as
it is (:func:`from_v2`).  ``--rnn-cfg`` writes a 2.x ``mli_rnn_cell_cfg``
(direction, results, act, and its scratch buffer).  The .c/.h compile against
the headers of :func:`mli.v2.get_include`.
"""
import os
import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..io.c_array import format_c_array
from .export_base import ExportError, _buffer_bytes, _check_name

__all__ = ["ExportTensor2", "ExportCfg2", "from_v2", "make_tensor2", "make_buffer2", "make_rnn_cfg2", "render2"]

_DT = {"fx8": np.dtype(np.int8), "fx16": np.dtype(np.int16), "sa8": np.dtype(np.int8), "sa32": np.dtype(np.int32)}
_EL = {"fx8": "MLI_EL_FX_8", "fx16": "MLI_EL_FX_16", "sa8": "MLI_EL_SA_8", "sa32": "MLI_EL_SA_32"}
_PTR = {"fx8": "pi8", "fx16": "pi16", "sa8": "pi8", "sa32": "pi32"}
_CT = {"fx8": "int8_t", "fx16": "int16_t", "sa8": "int8_t", "sa32": "int32_t"}


@dataclass
class ExportTensor2:
    """One MLI 2.x ``mli_tensor``: integer `values`, el_type, FX `frac_bits` or
    SA ``zero_point`` / ``scale`` / ``scale_frac_bits`` lists (one entry per
    tensor with ``dim`` -1, or per index of ``dim``)."""

    name: str
    values: np.ndarray
    el_type: str = "fx16"
    frac_bits: int = 0
    zero_point: list = field(default_factory=lambda: [0])
    scale: list = field(default_factory=lambda: [1])
    scale_frac_bits: list = field(default_factory=lambda: [0])
    dim: int = -1
    const: bool = True
    comment: str = ""
    saturated: int = 0      # float values the quantization clamped

    @property
    def shape(self):
        return tuple(self.values.shape)

    def describe(self):
        if self.el_type.startswith("fx"):
            return f"frac {self.frac_bits}"
        if self.dim < 0:
            return f"zp {self.zero_point[0]}, scale {self.scale[0]} >> {self.scale_frac_bits[0]}"
        return f"per axis dim {self.dim} ({len(self.scale)} sets)"


@dataclass
class ExportCfg2:
    """A 2.x ``mli_rnn_cell_cfg`` and the name of its scratch array."""

    name: str
    direction: str
    results: str
    act: str
    scratch: str
    scratch_bytes: int


def _el(e, what):
    k = str(e).lower().replace("mli_el_", "").replace("_", "")
    if k not in _DT:
        raise ExportError(f"{what}: expected fx8, fx16, sa8 or sa32, got {e!r}")
    return k


def from_v2(name, t, *, const=True, comment=""):
    """An :class:`ExportTensor2` of an :class:`mli.v2.Tensor` (dense copy of its elements)."""
    from ..v2.tensor import EL_TYPES
    el = {v: k for k, v in EL_TYPES.items()}.get(t.el_type)
    if el is None:
        raise ExportError(f"{name}: el_type {t.el_type:#x} cannot be exported")
    vals = np.ascontiguousarray(t.numpy())
    if vals.ndim == 0 or vals.ndim > 4:
        raise ExportError(f"{name}: rank {vals.ndim}; exported tensors have rank 1 to 4")
    if el.startswith("fx"):
        return ExportTensor2(_check_name(name), vals, el, int(t.frac_bits), const=const, comment=comment)
    return ExportTensor2(_check_name(name), vals, el, 0, [int(v) for v in t.zero_point],
                         [int(v) for v in t.scale], [int(v) for v in t.scale_frac_bits],
                         int(t.sa_dim) if t.sa_dim >= 0 else -1, const, comment)


def make_tensor2(name, values, *, el_type="fx16", frac_bits=None, dim=-1, symmetric=True, sa=None,
                 const=True, comment=""):
    """An :class:`ExportTensor2` from float values (quantized) or integers.

    FX: `frac_bits` (required for integers; floats: default the largest that
    holds them).  SA: `sa` = (zero_point, scale, scale_frac_bits) given (lists
    with `dim` >= 0), required for integers; floats without `sa` are quantized
    per tensor (`dim` -1) or per index of `dim`, `symmetric` (zero point 0, for
    weights and biases) or asymmetric."""
    from .. import v2
    _check_name(name)
    el = _el(el_type, f"{name}: el_type")
    a = np.asarray(values)
    if a.ndim == 0 or a.ndim > 4 or a.size == 0:
        raise ExportError(f"{name}: shape {list(a.shape)}; exported tensors have rank 1 to 4 and elements")
    if a.dtype.kind not in "iubf":
        raise ExportError(f"{name}: dtype {a.dtype} is not numeric")
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        raise ExportError(f"{name}: NaN and infinity cannot be quantized")
    info = np.iinfo(_DT[el])
    if a.dtype.kind != "f" and a.size and (a.min() < info.min or a.max() > info.max):
        raise ExportError(f"{name}: integer values {a.min()}..{a.max()} do not fit {el} ({_DT[el]})")
    if el.startswith("fx"):
        if frac_bits is not None and (isinstance(frac_bits, bool) or not -128 <= int(frac_bits) <= 127):
            raise ExportError(f"{name}: frac bits must be in -128..127, got {frac_bits!r}")
        if a.dtype.kind == "f":
            t = from_v2(name, v2.Tensor.from_float(a, el, frac_bits), const=const, comment=comment)
            if frac_bits is not None:   # (the frac chosen otherwise holds every value)
                t.saturated = _clamped(np.round(a.astype(np.float64) * 2.0 ** int(frac_bits)), info)
            return t
        if frac_bits is None:
            raise ExportError(f"{name}: integer values need their frac bits")
        return ExportTensor2(name, np.ascontiguousarray(a.astype(_DT[el])), el, int(frac_bits), const=const,
                             comment=comment)
    if sa is None:
        if a.dtype.kind != "f":
            raise ExportError(f"{name}: integer {el} values need their sa parameters (zero point, scale, frac)")
        try:
            t = v2.Tensor.from_float(a, el, dim=dim, symmetric=symmetric)
        except ValueError as e:
            raise ExportError(f"{name}: {e}") from None
        return from_v2(name, t, const=const, comment=comment)
    zp, sc, sf = ([int(v) for v in np.atleast_1d(p)] for p in sa)
    n = a.shape[dim] if dim >= 0 else 1
    if dim >= a.ndim or not len(zp) == len(sc) == len(sf) == n:
        raise ExportError(f"{name}: sa parameters need {n} entries each (dim {dim} of {list(a.shape)})")
    if any(s <= 0 or s > 32767 for s in sc) or any(not -128 <= f <= 127 for f in sf) or \
            any(not -32768 <= z <= 32767 for z in zp):
        raise ExportError(f"{name}: scale must be 1..32767, scale_frac_bits -128..127, zero point int16")
    # the zero points MLI 2.0.2's checks accept: sa8 data in [-128, 127]
    # (weights 0); sa32 tensors are biases, whose zero point is 0
    lo, hi = (0, 0) if el == "sa32" else (-128, 127)
    bad = [z for z in zp if not lo <= z <= hi]
    if bad:
        raise ExportError(f"{name}: zero point {bad[0]} is refused by MLI 2.0.2 for {el} "
                          + ("(a bias: zero point 0)" if el == "sa32" else
                             "(data: -128..127, weights: 0)"))
    saturated = 0
    if a.dtype.kind == "f":
        shp = [1] * a.ndim
        if dim >= 0:
            shp[dim] = -1
        step = (np.array(sc, np.float64) * 2.0 ** -np.array(sf, np.float64)).reshape(shp)
        q = np.round(a / step) + np.array(zp, np.float64).reshape(shp)
        saturated = _clamped(q, info)
        a = np.clip(q, info.min, info.max)
    return ExportTensor2(name, np.ascontiguousarray(a.astype(_DT[el])), el, 0, zp, sc, sf, dim if dim >= 0 else -1,
                         const, comment, saturated)


def _clamped(q, info):
    """How many of the rounded values `q` lie outside the integer range."""
    return int(np.count_nonzero((q < info.min) | (q > info.max)))


def make_buffer2(name, shape, *, el_type="fx16", frac_bits=0, sa=(0, 1, 0), comment=""):
    """A zero-filled mutable tensor (state, cell, output), per-tensor parameters."""
    shp = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if not 1 <= len(shp) <= 4 or any(d <= 0 for d in shp):
        raise ExportError(f"{name}: buffer shape {shp} must have 1 to 4 positive dims")
    el = _el(el_type, f"{name}: el_type")
    _buffer_bytes(name, shp, _DT[el].itemsize)
    t = make_tensor2(name, np.zeros(shp, _DT[el]), el_type=el, frac_bits=frac_bits,
                     sa=None if el.startswith("fx") else sa, const=False, comment=comment)
    return t


def make_rnn_cfg2(name, *, direction="forward", results="all", act="tanh", scratch_bytes):
    """An :class:`ExportCfg2`; `scratch_bytes` >= G * M * element size (LSTM G = 4, GRU 3)."""
    _check_name(name)
    opts = {"direction": (direction, ("forward", "backward")), "results": (results, ("last", "all")),
            "act": (act, ("none", "tanh", "sigm"))}
    for k, (v, allowed) in opts.items():
        if str(v).lower() not in allowed:
            raise ExportError(f"{name}: {k} must be one of {', '.join(allowed)}, got {v!r}")
    if isinstance(scratch_bytes, bool) or not isinstance(scratch_bytes, (int, np.integer)) or scratch_bytes <= 0:
        raise ExportError(f"{name}: scratch size must be a positive byte count, got {scratch_bytes!r}")
    _buffer_bytes(name + "_scratch", (int(scratch_bytes),), 1)
    return ExportCfg2(name, str(direction).lower(), str(results).lower(), str(act).lower(), name + "_scratch",
                      int(scratch_bytes))


def _container(ptr_field, target, cap):
    return f"{{.capacity = {cap}, .mem = {{.{ptr_field} = {target}}}}}"


def render2(tensors, cfgs=(), *, header_name="mli_model.h", guard=None, data_attr="", include="mli_api.h"):
    """(c_text, h_text) of MLI 2.x tensors (:class:`ExportTensor2`) and cfgs."""
    names = set()
    for t in list(tensors) + list(cfgs):
        if t.name in names:
            raise ExportError(f"{t.name}: defined twice")
        names.add(t.name)
    for t in tensors:
        for sfx in ("_data", "_zero_point", "_scale", "_scale_frac_bits"):
            if t.name + sfx in names:
                raise ExportError(f"{t.name}{sfx}: clashes with an array of {t.name}")
    for c in cfgs:
        if c.scratch in names:
            raise ExportError(f"{c.scratch}: clashes with the scratch array of {c.name}")
    guard = guard or re.sub(r"\W", "_", os.path.basename(header_name)).upper()
    h = [f"/* {os.path.basename(header_name)}: generated by mli export-c --mli 2 (mli-py); do not edit. */",
         f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", f'#include "{include}"', "",
         "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    c = ["/* generated by mli export-c --mli 2 (mli-py); do not edit.  MLI 2.0.2 tensors: data containers,",
         " * dense mem_stride (elements, dimension 0 outermost), FX frac bits or SA parameters. */",
         f'#include "{os.path.basename(header_name)}"', ""]
    attr = f"{data_attr} " if data_attr else ""
    for t in tensors:
        up, ct, n = t.name.upper(), _CT[t.el_type], t.values.size
        q = "const " if t.const else ""
        shape4 = list(t.shape) + [0] * (4 - len(t.shape))
        st, acc = [], 1
        for d in reversed(t.shape):
            st.insert(0, acc)
            acc *= d
        st4 = st + [0] * (4 - len(st))
        h.append(f"/* {t.name}: {t.el_type} {list(t.shape)}, {t.describe()}" + (f"; {t.comment}" if t.comment
                                                                                 else "") + " */")
        if t.el_type.startswith("fx"):
            h.append(f"#define {up}_FRAC_BITS {t.frac_bits}")
        h.append(f"#define {up}_ELEMENTS {n}")
        h.append(f"extern {q}{ct} {t.name}_data[{n}];")
        h.append(f"extern {q}mli_tensor {t.name};")
        h.append("")
        if t.const or np.any(t.values):
            c.append(format_c_array(f"{t.name}_data", t.values, c_type=ct, const=t.const, attributes=data_attr,
                                    comment=f"{t.name}: {list(t.shape)}, {t.describe()}").rstrip("\n"))
        else:
            c.append(f"/* {t.name}: {list(t.shape)} buffer, {t.describe()} */")
            c.append(f"{ct} {attr}{t.name}_data[{n}];")
        if t.el_type.startswith("fx"):
            params = [f"    .el_params.fx.frac_bits = {t.frac_bits},"]
        elif t.dim < 0:
            params = ["    .el_params.sa = {",
                      "        .type = MLI_EL_PARAM_SC16_ZP16,",
                      f"        .zero_point = {_container('i16', t.zero_point[0], 0)},",
                      f"        .scale = {_container('i16', t.scale[0], 0)},",
                      "        .dim = -1,",
                      f"        .scale_frac_bits = {_container('i8', t.scale_frac_bits[0], 0)},",
                      "    },"]
        else:
            for arr, dt, vals in (("zero_point", np.int16, t.zero_point), ("scale", np.int16, t.scale),
                                  ("scale_frac_bits", np.int8, t.scale_frac_bits)):
                c.append(format_c_array(f"{t.name}_{arr}", np.array(vals, dt), c_type=f"{np.dtype(dt).name}_t",
                                        const=False).rstrip("\n"))
            params = ["    .el_params.sa = {",
                      "        .type = MLI_EL_PARAM_SC16_ZP16,",
                      f"        .zero_point = {_container('pi16', t.name + '_zero_point', f'sizeof({t.name}_zero_point)')},",
                      f"        .scale = {_container('pi16', t.name + '_scale', f'sizeof({t.name}_scale)')},",
                      f"        .dim = {t.dim},",
                      f"        .scale_frac_bits = {_container('pi8', t.name + '_scale_frac_bits', f'sizeof({t.name}_scale_frac_bits)')},",
                      "    },"]
        c += [f"{q}mli_tensor {t.name} = {{",
              f"    .data = {_container(_PTR[t.el_type], f'({ct} *){t.name}_data', f'sizeof({t.name}_data)')},",
              f"    .mem_stride = {{{', '.join(str(s) for s in st4)}}},",
              f"    .shape = {{{', '.join(str(d) for d in shape4)}}},",
              f"    .rank = {len(t.shape)},",
              f"    .el_type = {_EL[t.el_type]},",
              *params,
              "};", ""]
    for cf in cfgs:
        h.append(f"/* {cf.name}: direction {cf.direction}, results {cf.results}, act {cf.act}, "
                 f"scratch {cf.scratch_bytes} bytes */")
        h.append(f"extern mli_rnn_cell_cfg {cf.name};")
        h.append("")
        c += [f"/* scratch of {cf.name} (int32 storage: aligned for every element type) */",
              f"int32_t {attr}{cf.scratch}[{(cf.scratch_bytes + 3) // 4}];",
              f"mli_rnn_cell_cfg {cf.name} = {{",
              f"    .direction = RNN_DIR_{cf.direction.upper()},",
              f"    .results = RNN_OUT_{cf.results.upper()},",
              f"    .act = RNN_ACT_{cf.act.upper()},",
              f"    .scratch_data = {_container('pi32', cf.scratch, f'sizeof({cf.scratch})')},",
              "};", ""]
    h += ["#ifdef __cplusplus", "}", "#endif", f"#endif /* {guard} */", ""]
    return "\n".join(c), "\n".join(h)
