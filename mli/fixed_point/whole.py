"""The whole-model mode of :func:`mli.fixed_point.to_fixed_point` (``scope="model"``):
every layer of the IR that touches data runs on an MLI 1.1 kernel (or is a view / copy
of integers), with a format (element type and frac bits) per tensor and a kernel kind
per layer, chosen from calibration and editable through a :class:`~.plan.Plan`.

How it runs
-----------
Values travel between layers as float32 arrays that are *exactly* the integers of their
tensor's format times ``2^-frac`` (a kernel's output dequantized); a kernel layer
quantizes each data input at its producer's format (exact: the same integers), converts
it with ``mli_hlp_convert_tensor`` where the kernel needs another format (eltwise
add/sub/max/min and concat need equal frac bits; a layer of another kind another
element type), calls the MLI kernel and dequantizes its output.  A static input
(weights, biases, constant operands, initial states broadcast to the input shape) is
quantized at its own format.  Views (Reshape, Squeeze, Unsqueeze, ShapeOf) and copies
(Gather/Split/Slice/StridedSlice/Broadcast/ScatterUpdate/ReverseSequence of data, Select
between data) move integers without changing them, so they run as the float ops on the
exact values.  Model inputs are quantized by their first kernel (MLI's float-to-fx
rounding); model outputs are the dequantized integers.

Formats (see :meth:`WholePlanner`)
----------------------------------
* a model input, fully_connected / conv2d (with its fused bias Add) / eltwise add, sub,
  mul / float op output: the largest frac bits at which the calibrated range does not
  saturate, minus ``margin``;
* relu, permute, views, copies: the input's format; concat, eltwise max/min: the
  smallest frac of their inputs; sigm, tanh, softmax: frac 15 (16-bit) / 7 (8-bit),
  MLI's fixed output; recurrent layers: their cells' formats (:mod:`mli.fixed_point`);
* weights: the largest frac holding them; bias: the same, at most input + weights frac
  (MLI's bias shift);
* a TensorIterator/Loop body Parameter: the smallest of its outer value's frac and the
  frac its calibrated range (every iteration) allows.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import ir
from ..metrics import sn_db
from .analysis import Analysis, LayerInfo, analyse, layer_key, tensor_key
from .backends import get_backend
from .calibration import Stats, samples
from .errors import FixedPointError
from .gru import GruCell
from .formats import (DATA_EL, KINDS, WEIGHT_EL, dequantize, frac_for, int_range,
                      quantize)
from .program import with_program
from .registry import converter_for

__all__ = ["compile_all", "WholeModel", "convert_model"]

Fmt = Tuple[str, int]       # (element type "fx8"/"fx16", frac bits)
#: roles whose output keeps the format their input is converted to
_SAME_FMT = ("relu", "leaky_relu", "permute", "maxpool", "avepool", "padding2d")


def compile_all(graph, make_step, path=()):
    """``graph``'s program with every step replaced by ``make_step(layer, path, fn)``
    (recursing into TensorIterator / Loop bodies first; the float model is untouched)."""
    prog = ir._Program(graph)
    for k, (fn, ins, outs, dtypes, layer) in enumerate(prog.steps):
        if layer.body is not None:
            sub = copy.copy(layer.body)
            sub._program = compile_all(layer.body, make_step, path + (layer,))
            try:
                fn = ir._build(dataclasses.replace(layer, body=sub), graph)
            except (ir.IRError, ir.GraphError) as e:
                raise ir._wrap(e, layer) from None
        new = make_step(layer, path, fn)
        if new is not prog.steps[k][0]:
            prog.replace_step(k, new)
    return prog


# ---------------------------------------------------------------------------- taps
class _Tap:
    """What the float and fixed programs record while they run: value ranges and shapes
    of every data tensor and static kernel input (calibration), and, when ``capture`` is
    set, every value (per call; a body layer once per iteration)."""

    def __init__(self) -> None:
        self.lo: Dict[str, float] = {}
        self.hi: Dict[str, float] = {}
        self.shape: Dict[str, tuple] = {}
        self.static: Dict[str, np.ndarray] = {}
        self.capture: Optional[Dict[str, List[np.ndarray]]] = None

    def add(self, key, v, capture=True):
        v = np.asarray(v)
        if v.size and v.dtype.kind == "f":
            lo, hi = float(v.min()), float(v.max())
            if lo < self.lo.get(key, math.inf):
                self.lo[key] = lo
            if hi > self.hi.get(key, -math.inf):
                self.hi[key] = hi
        self.shape.setdefault(key, tuple(v.shape))
        if self.capture is not None and capture:
            self.capture.setdefault(key, []).append(np.array(v))

    def range(self, key) -> Tuple[float, float]:
        return self.lo.get(key, 0.0), self.hi.get(key, 0.0)


def _outs(layer, out):
    return out if len(layer.outputs) != 1 else (out,)


# ---------------------------------------------------------------------------- planning
@dataclasses.dataclass
class LayerPlan:
    """One layer: its role, kind and, for kernel layers, the formats of its static
    inputs (``static``: input index -> format)."""

    key: str
    op: str
    role: str
    kind: str
    static: Dict[int, Fmt] = dataclasses.field(default_factory=dict)
    notes: List[str] = dataclasses.field(default_factory=list)


class WholePlanner:
    """Chooses every tensor's format from the calibration (see the module doc)."""

    def __init__(self, analysis: Analysis, tap: _Tap, kinds: Dict[str, str], margin: int,
                 cells: Dict[int, list], fixed: Optional[Dict[str, Fmt]] = None,
                 fixed_static: Optional[Dict[str, Dict[int, Fmt]]] = None):
        self.a, self.tap, self.kinds, self.margin = analysis, tap, kinds, margin
        self.cells = cells
        self.fixed = fixed or {}
        self.fixed_static = fixed_static or {}
        self.fmt: Dict[str, Fmt] = {}
        self.layers: Dict[str, LayerPlan] = {}
        self._busy: set = set()

    # the format of output k of layer (in graph g under path)
    def out_fmt(self, g, path, layer, k) -> Optional[Fmt]:
        key = tensor_key(path, layer, k)
        if key in self.fmt:
            return self.fmt[key]
        if key in self.fixed:
            self.fmt[key] = self.fixed[key]
            return self.fmt[key]
        if key in self._busy:          # a back edge met again: decided by the calibration
            return None
        self._busy.add(key)
        try:
            f = self._decide(g, path, layer, k, key)
        finally:
            self._busy.discard(key)
        if f is not None:
            self.fmt[key] = f
        return f

    def in_fmt(self, info: LayerInfo, i) -> Optional[Fmt]:
        g, layer = info.graph, info.layer
        src, sport = g.producer(layer.id, layer.inputs[i].id)
        k = [q.id for q in src.outputs].index(sport.id)
        return self.out_fmt(g, info.path, src, k)

    def _cal(self, key, el) -> Fmt:
        lo, hi = self.tap.range(key)
        return el, frac_for(lo, hi, el, self.margin)

    def _kind(self, info):
        return self.kinds.get(info.key, self.kinds[""])

    def _decide(self, g, path, layer, k, key) -> Optional[Fmt]:
        data = self.a.data.get(id(layer), ())
        if not data or not data[k]:
            return None
        if layer.type == "Parameter":
            el = DATA_EL[self.kinds[""]]
            if not path:
                return self._cal(key, el)
            outer = path[-1]
            own = self._cal(key, el)
            for e in outer.port_map:
                if e.kind == "input" and e.internal_layer_id == layer.id and \
                        e.external_port_id in [p.id for p in outer.inputs]:
                    oi = self.a.info(outer)
                    j = [p.id for p in outer.inputs].index(e.external_port_id)
                    if oi is not None and oi.data_in[j]:
                        f = self.in_fmt(oi, j)
                        if f is not None:
                            return f[0], min(f[1], own[1])
            return own
        info = self.a.info(layer)
        if info is None:
            return None
        kind = self._kind(info)
        el = DATA_EL[kind]
        role = info.role
        if role in ("fully_connected", "conv2d", "depthwise_conv2d"):
            return self._cal(tensor_key(info.bias.path, info.bias.layer, 0), el) \
                if info.bias is not None else self._cal(key, el)
        if role == "bias" and info.fused_into is not None:
            return self.out_fmt(g, path, info.fused_into.layer, 0)
        if role in ("eltwise_mul", "float"):
            return self._cal(key, el)
        if role in ("eltwise_add", "eltwise_sub"):     # MLI: out frac = the inputs' frac
            fs = [self._need(info, i, el) for i, d in enumerate(info.data_in) if d]
            return el, min([f[1] for f in fs if f is not None] + [self._cal(key, el)[1]])
        if role in ("sigm", "tanh", "softmax"):
            return el, 15 if el == "fx16" else 7
        if role in ("eltwise_max", "eltwise_min", "concat"):
            fs = [self._need(info, i, el) for i, d in enumerate(info.data_in) if d]
            fr = [f[1] for f in fs if f is not None]
            return (el, min(fr)) if fr else self._cal(key, el)
        if role in ("relu", "leaky_relu", "permute", "maxpool", "avepool", "padding2d"):
            return self._need(info, 0, el) or self._cal(key, el)
        if role in ("view", "slice"):
            f = self.in_fmt(info, 0)
            return f if f is not None else self._cal(key, el)
        if role == "select":
            fs = [self.in_fmt(info, i) for i in range(len(info.data_in))
                  if info.data_in[i] and (layer.type != "Select" or i > 0)]
            fr = [f[1] for f in fs if f is not None]
            own = self._cal(key, el)
            return (own[0], min(max(fr), own[1])) if fr else own
        if role == "recurrent":
            cells = self.cells[id(layer)]
            el = DATA_EL[kind]
            q = 15 if el == "fx16" else 7
            is_c = (layer.type == "LSTMSequence" and k == 2) or (layer.type == "LSTMCell" and k == 1)
            if is_c:
                return el, min(c.body.fracs["c"] for c in cells)
            return el, q
        if role == "loop":
            for e in layer.port_map:
                if e.kind == "output" and e.external_port_id == layer.outputs[k].id:
                    res = layer.body.layer(e.internal_layer_id)
                    src, sport = layer.body.producer(res.id, res.inputs[0].id)
                    j = [q.id for q in src.outputs].index(sport.id)
                    f = self.out_fmt(layer.body, path + (layer,), src, j)
                    if f is not None:
                        return f
            return self._cal(key, el)
        return self._cal(key, el)

    def _need(self, info, i, el) -> Optional[Fmt]:
        """Input i as a kernel of element type ``el`` takes it: the producer's format,
        converted to ``el`` (at the frac its range allows) when the types differ."""
        f = self.in_fmt(info, i)
        if f is None:
            return None
        own = tensor_key(info.path, info.layer, 0)
        if i == 0 and info.role in _SAME_FMT and own in self.fixed and self.fixed[own][0] == el:
            return self.fixed[own]          # the plan's format of this pass-through layer
        if f[0] == el:
            return f
        src, sport = info.graph.producer(info.layer.id, info.layer.inputs[i].id)
        k = [q.id for q in src.outputs].index(sport.id)
        lo, hi = self.tap.range(tensor_key(info.path, src, k))
        return el, min(frac_for(lo, hi, el, self.margin), f[1] + (8 if el == "fx16" else 0))

    def plan_layers(self, graph):
        for path, layer in graph.walk():       # every data Parameter (model and bodies)
            if layer.type == "Parameter" and self.a.data.get(id(layer), (False,))[0]:
                self.out_fmt(path[-1].body if path else graph, path, layer, 0)
        for info in self.a.infos:
            kind = self._kind(info)
            lp = LayerPlan(info.key, info.op, info.role, kind)
            for k, d in enumerate(info.data_out):
                if d:
                    self.out_fmt(info.graph, info.path, info.layer, k)
            el, wel = DATA_EL[kind], WEIGHT_EL[kind]
            if info.role in ("fully_connected", "conv2d", "depthwise_conv2d"):
                w = self.tap.static[f"{info.key}#1"]
                fw = frac_for(w.min(), w.max(), wel)
                lp.static[1] = (wel, fw)
                fx = self._need(info, 0, el)
                if info.bias is not None:
                    bi = info.bias
                    j = 1 - [bool(d) for d in bi.data_in].index(True)
                    b = self.tap.static[f"{bi.key}#{j}"]
                    fb = min(frac_for(b.min(), b.max(), wel), (fx[1] if fx else 0) + fw)
                    lp.static[-1] = (wel, fb)
            elif info.role.startswith("eltwise"):
                out = self.fmt.get(tensor_key(info.path, info.layer, 0))
                for i, d in enumerate(info.data_in):
                    if not d:
                        key = f"{info.key}#{i}"
                        if info.role in ("eltwise_mul",):
                            lo, hi = self.tap.range(key)
                            lp.static[i] = (el, frac_for(lo, hi, el))
                        elif out is not None:
                            lp.static[i] = out      # add, sub, max, min: the common format
            elif info.role == "leaky_relu":
                lo, hi = self.tap.range(f"{info.key}#1")
                lp.static[1] = (el, frac_for(lo, hi, el))
            elif info.role == "concat":
                out = self.fmt.get(tensor_key(info.path, info.layer, 0))
                for i, d in enumerate(info.data_in):
                    if not d and out is not None:
                        lp.static[i] = out
            lp.static.update(self.fixed_static.get(info.key, {}))
            if info.role in ("view", "slice", "bias") and info.data_out and info.data_out[0]:
                own = tensor_key(info.path, info.layer, 0)
                src = self.in_fmt(info, list(info.data_in).index(True)) \
                    if info.role != "bias" else self.out_fmt(
                        info.graph, info.path, info.fused_into.layer, 0)
                if own in self.fixed and src is not None and self.fixed[own] != src:
                    raise FixedPointError(
                        f"plan: tensor {own!r} holds the integers of its input ({info.role}): "
                        f"its format must be the input's {list(src)}, the plan gives "
                        f"{list(self.fixed[own])}")
            self.layers[info.key] = lp


# ---------------------------------------------------------------------------- kernel steps
def _mli():
    import mli as m      # the package's kernels (imported late: mli imports this package)
    return m


def _tensor(q, frac):
    return _mli().Tensor(np.ascontiguousarray(q), int(frac))


def _convert(q, src: Fmt, dst: Fmt):
    """Integers ``q`` of format ``src`` in format ``dst``: ``mli_hlp_convert_tensor``
    (the same integers when the formats are equal)."""
    if src == dst:
        return q
    shape = q.shape
    t = _mli().convert_tensor(_tensor(q.reshape(-1), src[1]), dst[0], dst[1])
    return np.asarray(t.numpy()).reshape(shape)


def _ints(pairs, shape):
    return np.stack(pairs).reshape(shape) if pairs else np.zeros(shape)


def _pads(layer, x_hw, k_hw, strides):
    auto = layer.attrs.get("auto_pad", "explicit")
    if auto in ("explicit", "notset", "", None):
        b = [int(v) for v in layer.attrs.get("pads_begin", "0,0").split(",")]
        e = [int(v) for v in layer.attrs.get("pads_end", "0,0").split(",")]
        return b, e
    if auto == "valid":
        return [0] * len(k_hw), [0] * len(k_hw)
    b, e = [], []
    for n, k, s in zip(x_hw, k_hw, strides):
        out = -(-n // s)
        tot = max(0, (out - 1) * s + k - n)
        lo = tot // 2 if auto == "same_upper" else tot - tot // 2
        b.append(lo)
        e.append(tot - lo)
    return b, e


def _data_kernel(m, name, el):
    """The kernel `name` of 8- or 16-bit data (``name_fx8`` / ``name_fx16``) for data element type `el`."""
    return getattr(m, f"{name}_{'fx16' if el == 'fx16' else 'fx8'}")


def _weight_tensors(qw, w_frac, bias_val, bias_fmt):
    """A fully connected or convolution layer's weights (integers `qw` at
    `w_frac`) and bias (the fused bias quantized to `bias_fmt`, else zeros) as
    kernel tensors."""
    qb = quantize(bias_val, *bias_fmt) if bias_val is not None else np.zeros(qw.shape[0], qw.dtype)
    return _tensor(qw, w_frac), _tensor(qb, bias_fmt[1] if bias_fmt else 0)


class _Steps:
    """Builds the fixed-point step of each layer from its plan."""

    def __init__(self, model: "WholeModel"):
        self.m = model
        self.cache: Dict[Tuple[str, int], Tuple[Any, np.ndarray]] = {}

    def q_in(self, info, i, x, need: Optional[Fmt] = None):
        """Data input i (exact values of its producer's format) as integers, converted to
        ``need``."""
        src = self.m.planner.in_fmt(info, i)
        if src is None:
            raise FixedPointError(f"{info.key}: input {i} has no format")
        q = quantize(x, *src)
        return _convert(q, src, need) if need is not None else q

    def q_static(self, info, i, x, fmt: Fmt):
        """A static input at its format (quantized once per distinct array)."""
        key = (info.key, i)
        hit = self.cache.get(key)
        if hit is not None and hit[0] is x:
            return hit[1]
        q = quantize(np.asarray(x, np.float32), *fmt)
        self.cache[key] = (x, q)
        return q

    def fused_bias(self, info):
        """The float values of the constant bias Add fused into `info`'s layer, or None."""
        bi = info.bias
        if bi is None:
            return None
        j = 1 - [bool(d) for d in bi.data_in].index(True)      # the Add's constant input
        return self.m.tap.static[f"{bi.key}#{j}"].reshape(-1)

    def operand(self, info, lp, i, x, need: Fmt):
        return self.q_in(info, i, x, need) if info.data_in[i] else \
            self.q_static(info, i, x, lp.static.get(i, need))

    def build(self, info: LayerInfo, fn):
        lp = self.m.planner.layers[info.key]
        role, kind = info.role, lp.kind
        el = DATA_EL[kind]
        layer = info.layer
        out_fmt = [self.m.planner.fmt.get(tensor_key(info.path, layer, k)) for k in
                   range(len(layer.outputs))]
        of: Any = out_fmt[0]
        mli = _mli()
        if role == "fully_connected":
            fc = getattr(mli, f"fully_connected_{kind}")
            tb = layer.attrs.get("transpose_b", "false") == "true"
            bias_fmt = lp.static.get(-1)
            need = self.m.planner._need(info, 0, el)
            bias_val = self.fused_bias(info)

            def step_1(x, w):
                W = np.asarray(w) if tb else np.asarray(w).T
                qw = self.q_static(info, 1, np.ascontiguousarray(W), lp.static[1])
                M = qw.shape[0]
                tw, tbias = _weight_tensors(qw, lp.static[1][1], bias_val, bias_fmt)
                qx = self.q_in(info, 0, x, need)
                rows = qx.reshape(-1, qx.shape[-1])
                res = [np.asarray(fc(_tensor(r, need[1]), tw, tbias, out_frac_bits=of[1]).numpy())
                       for r in rows]
                return dequantize(_ints(res, qx.shape[:-1] + (M,)), of[1])
            return step_1
        if role in ("conv2d", "depthwise_conv2d"):
            conv = getattr(mli, f"{role}_chw_{kind}")
            need = self.m.planner._need(info, 0, el)
            bias_fmt = lp.static.get(-1)
            bias_val = self.fused_bias(info)

            def step_2(x, w):
                w = np.asarray(w)
                if role == "depthwise_conv2d":          # [C, 1, 1, KH, KW] -> [C, 1, KH, KW]
                    w = w.reshape((w.shape[0], 1) + w.shape[3:])
                one_d = w.ndim == 3
                qw = self.q_static(info, 1, w, lp.static[1])
                if one_d:
                    qw = qw[:, :, None, :]
                qx = self.q_in(info, 0, x, need)
                if one_d:
                    qx = qx[:, :, None, :]
                strides = [int(v) for v in layer.attrs.get("strides", "1,1").split(",")]
                if one_d:
                    strides = [1] + strides
                b, e = _pads(layer, qx.shape[2:] if not one_d else qx.shape[3:],
                             qw.shape[2:] if not one_d else qw.shape[3:],
                             strides if not one_d else strides[1:])
                if one_d:
                    b, e = [0] + b, [0] + e
                cfg = mli.Conv2dConfig(stride_height=strides[0], stride_width=strides[1],
                                       padding_top=b[0], padding_bottom=e[0],
                                       padding_left=b[1], padding_right=e[1])
                tw, tbias = _weight_tensors(qw, lp.static[1][1], bias_val, bias_fmt)
                res = [np.asarray(conv(_tensor(xn, need[1]), tw, tbias, cfg,
                                       out_frac_bits=of[1]).numpy()) for xn in qx]
                out = np.stack(res)
                if one_d:
                    out = out[:, :, 0, :]
                return dequantize(out, of[1])
            return step_2
        if role.startswith("eltwise"):
            op = role.split("_")[1]
            k = getattr(mli, f"eltwise_{op}_{'fx16' if el == 'fx16' else 'fx8'}")
            if op in ("add", "sub", "max", "min"):
                needs = [of, of]            # MLI: both inputs and the output share a frac
            else:
                needs = [self.m.planner._need(info, i, el) if d else lp.static[i]
                         for i, d in enumerate(info.data_in)]
            out_frac = of[1]

            def step_3(a, b):
                qa = self.operand(info, lp, 0, a, needs[0])
                qb = self.operand(info, lp, 1, b, needs[1])
                shape = np.broadcast_shapes(qa.shape, qb.shape)
                if qa.size != 1 and qa.shape != shape:
                    qa = np.broadcast_to(qa, shape)
                if qb.size != 1 and qb.shape != shape:
                    qb = np.broadcast_to(qb, shape)
                ta = _tensor(qa.reshape(-1), needs[0][1])
                tb_ = _tensor(qb.reshape(-1), needs[1][1])
                kw = {} if op in ("max", "min") else {"out_frac_bits": out_frac}
                r = k(ta, tb_, **kw)
                return dequantize(np.asarray(r.numpy()).reshape(shape), r.frac_bits)
            return step_3
        if role in ("relu", "sigm", "tanh"):
            dk = "fx16" if el == "fx16" else "fx8"
            need = self.m.planner._need(info, 0, el)
            if role == "relu":
                hi = float(layer.attrs.get("max", "inf")) if layer.type == "Clamp" else None
                rt = mli.ReluType.RELU_6 if hi == 6.0 else mli.ReluType.RELU_1 if hi == 1.0 \
                    else mli.ReluType.GEN
                kern = getattr(mli, f"relu_{dk}")

                def call(t):
                    return kern(t, rt)
            else:
                kern = getattr(mli, f"{role}_{dk}")

                def call(t):
                    return kern(t)

            def step_4(x, *rest):
                qx = self.q_in(info, 0, x, need)
                r = call(_tensor(qx.reshape(-1), need[1]))
                return dequantize(np.asarray(r.numpy()).reshape(qx.shape), r.frac_bits)
            return step_4
        if role == "softmax":
            kern = _data_kernel(mli, "softmax", el)
            need = self.m.planner._need(info, 0, el)
            axis = int(layer.attrs.get("axis", "1"))

            def step_5(x):
                qx = np.moveaxis(self.q_in(info, 0, x, need), axis, -1)
                rows = qx.reshape(-1, qx.shape[-1])
                res = [np.asarray(kern(_tensor(r, need[1])).numpy()) for r in rows]
                out = np.moveaxis(_ints(res, qx.shape), -1, axis)
                return dequantize(out, of[1])
            return step_5
        if role == "permute":
            kern = _data_kernel(mli, "permute", el)
            need = self.m.planner._need(info, 0, el)

            def step_6(x, perm):
                qx = self.q_in(info, 0, x, need)
                perm = [int(p) % qx.ndim for p in np.asarray(perm).reshape(-1)] or \
                    list(range(qx.ndim))[::-1]
                if qx.ndim > 4:
                    raise FixedPointError(f"{info.key}: mli_krn_permute takes rank <= 4, "
                                          f"got {qx.ndim}")
                r = kern(_tensor(qx, need[1]), mli.PermuteConfig(perm_dim=tuple(perm)))
                return dequantize(np.asarray(r.numpy()).reshape(
                    [qx.shape[p] for p in perm]), of[1])
            return step_6
        if role == "concat":
            kern = _data_kernel(mli, "concat", el)
            axis = int(layer.attrs.get("axis", "0"))

            def step_7(*xs):
                qs = [self.operand(info, lp, i, x, of) for i, x in enumerate(xs)]
                ax = axis % qs[0].ndim
                if qs[0].ndim > 4 or any(q.size == 0 for q in qs):
                    out = np.concatenate(qs, axis=ax)       # a copy: the same integers
                else:       # MLI concatenates up to 8 tensors a call: chain the calls
                    groups, i = [qs[:8]], 8
                    while i < len(qs):
                        groups.append(qs[i:i + 7])
                        i += 7
                    out = None
                    for group in groups:
                        group = group if out is None else [out] + group
                        r = kern([_tensor(q, of[1]) for q in group], mli.ConcatConfig(axis=ax))
                        out = np.asarray(r.numpy())
                return dequantize(out, of[1])
            return step_7
        if role in ("maxpool", "avepool"):
            dk = "fx16" if el == "fx16" else "fx8"
            kern = getattr(mli, f"{role}_chw_{dk}")
            need = self.m.planner._need(info, 0, el)
            kh, kw = (int(v) for v in layer.attrs["kernel"].split(","))
            sh, sw = (int(v) for v in layer.attrs.get("strides", "1,1").split(","))
            dims = tuple(layer.outputs[0].dims)

            def step_pool(x, *rest):
                qx = self.q_in(info, 0, x, need)
                b, e = _pads(layer, qx.shape[2:], (kh, kw), (sh, sw))
                cfg = mli.PoolConfig(kernel_height=kh, kernel_width=kw, stride_height=sh,
                                     stride_width=sw, padding_top=b[0], padding_bottom=e[0],
                                     padding_left=b[1], padding_right=e[1])
                out = np.stack([np.asarray(kern(_tensor(xn, need[1]), cfg).numpy())
                                for xn in qx])
                if None not in dims and out.shape != dims:
                    raise FixedPointError(f"{info.key}: mli_krn_{role}_chw gives "
                                          f"{list(out.shape)}, the IR declares {list(dims)} "
                                          f"(rounding_type ceil)")
                return dequantize(out, need[1])
            return step_pool
        if role == "padding2d":
            kern = _data_kernel(mli, "padding2d_chw", el)
            need = self.m.planner._need(info, 0, el)

            def step_pad(x, pb, pe, *value):
                qx = self.q_in(info, 0, x, need)
                pb, pe = (np.asarray(v).reshape(-1).astype(int) for v in (pb, pe))
                if qx.ndim != 4 or pb[:2].any() or pe[:2].any() or (pb < 0).any() \
                        or (pe < 0).any() or (value and np.asarray(value[0]).any()):
                    raise FixedPointError(f"{info.key}: mli_krn_padding2d_chw pads H and W of "
                                          f"NCHW with zeros; pads {pb.tolist()} {pe.tolist()}")
                cfg = mli.Padding2dConfig(padding_top=int(pb[2]), padding_bottom=int(pe[2]),
                                          padding_left=int(pb[3]), padding_right=int(pe[3]))
                out = np.stack([np.asarray(kern(_tensor(xn, need[1]), cfg).numpy())
                                for xn in qx])
                return dequantize(out, need[1])
            return step_pad
        if role == "leaky_relu":
            kern = _data_kernel(mli, "leaky_relu", el)
            need = self.m.planner._need(info, 0, el)
            sf = lp.static[1]

            def step_leaky(x, slope):
                qx = self.q_in(info, 0, x, need)
                qs = self.q_static(info, 1, np.asarray(slope, np.float32).reshape(()), sf)
                r = kern(_tensor(qx.reshape(-1), need[1]), _tensor(qs.reshape(()), sf[1]))
                return dequantize(np.asarray(r.numpy()).reshape(qx.shape), r.frac_bits)
            return step_leaky
        if role == "bias":          # computed by the kernel it is fused into
            j = list(info.data_in).index(True)

            def step_8(*args):
                return args[j]
            return step_8
        if role == "recurrent":
            conv = converter_for(layer.type)
            backend = self.m.backends[kind]
            cells = self.m.cells[id(layer)]
            core = conv.step(layer, cells, backend)
            # X, H (and C) reach the cells at the smallest frac a direction takes, converted
            # by mli_hlp_convert_tensor where the producer's format is finer or of another
            # type (then the cells' own quantization of them is exact)
            whats = [("x", 0), ("h", 1)] + ([("c", 2)] if "c" in cells[0].body.fracs else [])
            conversions = []
            for what, i in whats:
                src = self.m.planner.in_fmt(info, i) if info.data_in[i] else None
                dst = (el, min(c.body.fracs[what] for c in cells))
                if src is not None and (src[0] != dst[0] or src[1] > dst[1]):
                    conversions.append((i, src, dst))
            # an LSTMSequence's final cell states: each direction's, at its own frac, in the
            # output's format by mli_hlp_convert_tensor (as a firmware would), where they differ
            c_out = out_fmt[2] if layer.type == "LSTMSequence" and len(out_fmt) > 2 else None
            narrow = [d for d, c in enumerate(cells) if c_out is not None and c.body.fracs["c"] != c_out[1]]
            if not conversions and not narrow:
                return core

            def step_rec(*args):
                args = list(args)
                for i, src, dst in conversions:
                    q = _convert(quantize(args[i], *src), src, dst)
                    args[i] = dequantize(q, dst[1]).astype(np.asarray(args[i]).dtype)
                out = core(*args)
                if narrow:
                    out = list(out)
                    c = np.array(out[2], copy=True)
                    for d in narrow:
                        own = (el, cells[d].body.fracs["c"])
                        c[:, d] = dequantize(_convert(quantize(c[:, d], *own), own, c_out), c_out[1])
                    out[2] = c
                    out = tuple(out)
                return out
            return step_rec
        if role == "loop":
            # a body Parameter coarser than the outer value feeding it: the outer integers
            # converted by mli_hlp_convert_tensor on the way in (as a firmware would)
            from ..ir.ops.subgraph import _subgraph_ports
            wants: Dict[int, set] = {}
            for p in _subgraph_ports(layer, layer.type == "Loop")[0]:
                if info.data_in[p.external]:
                    param = layer.body.parameters[p.internal]
                    wants.setdefault(p.external, set()).add(
                        self.m.planner.fmt.get(tensor_key(info.path + (layer,), param, 0)))
            entry = []
            for j, dsts in wants.items():
                src = self.m.planner.in_fmt(info, j)
                if len(dsts) == 1 and None not in dsts and src is not None and src != next(iter(dsts)):
                    entry.append((j, src, next(iter(dsts))))
            if entry:
                def step_loop(*args):
                    args = list(args)
                    for j, src, dst in entry:
                        q = _convert(quantize(args[j], *src), src, dst)
                        args[j] = dequantize(q, dst[1]).astype(np.asarray(args[j]).dtype)
                    return fn(*args)
                return step_loop
        if role in ("slice", "select") and sum(map(bool, info.data_in)) > 1 and of is not None:
            # a copy gathering several data inputs (ScatterUpdate, Select): each in the
            # output's format first, by mli_hlp_convert_tensor (as a firmware copy would)
            mixes = [(i, src) for i, src in ((i, self.m.planner.in_fmt(info, i)) for i, d in
                                             enumerate(info.data_in) if d) if src is not None and src != of]
            if mixes:
                def step_mix(*args):
                    args = list(args)
                    for i, src in mixes:
                        q = _convert(quantize(args[i], *src), src, of)
                        args[i] = dequantize(q, of[1]).astype(np.asarray(args[i]).dtype)
                    return fn(*args)
                return step_mix
        return fn          # views, copies, loops, outputs, float ops: as they are


# ---------------------------------------------------------------------------- the model
def _refrac(info, conv, constants, cells, over, kind):
    """The LSTM / RNN cells of a recurrent layer rebuilt at the frac bits a plan gives
    (``over``: per direction ``{"x", "w", "b", "c"}``)."""
    from ..graph.kernel_body import KernelBody
    from ..tensor import Tensor
    from .backends.mli1 import _mli_weights
    from .converters.recurrent import SequenceConverter
    if len(over) != len(cells):
        raise FixedPointError(f"plan: layer {info.key!r} has {len(cells)} cell(s), the plan "
                              f"gives formats for {len(over)}")
    out = []
    for d, (qc, fr) in enumerate(zip(cells, over)):
        W, R, B = (v[d] for v in constants) if isinstance(conv, SequenceConverter) \
            else constants
        if isinstance(qc.body, GruCell):
            out.append(dataclasses.replace(qc, body=_gru_refrac(info, d, qc.body, W, R, B, fr, kind),
                                           notes=qc.notes + ["formats from the plan"]))
            continue
        if not isinstance(qc.body, KernelBody):
            raise FixedPointError(f"plan: layer {info.key!r}: only LSTM, RNN and GRU cells' "
                                  f"formats can be set by a plan")
        lstm = qc.body.cell == "lstm"
        w, b = _mli_weights(lstm, info.layer, W, R, B)
        wel = WEIGHT_EL[kind]
        try:
            body = KernelBody("lstm" if lstm else "rnn",
                              Tensor.from_float(w, wel, int(fr["w"]), saturate=True),
                              Tensor.from_float(b, wel, int(fr["b"]), saturate=True),
                              in_frac=int(fr["x"]), cell_frac=int(fr["c"]) if lstm else None,
                              kind=kind)
        except (KeyError, ValueError, TypeError) as e:
            raise FixedPointError(f"plan: layer {info.key!r} cell {d}: {e}") from None
        out.append(dataclasses.replace(qc, body=body, notes=qc.notes + ["formats from the plan"]))
    return out


def _gru_refrac(info, d, cell, W, R, B, fr, kind):
    """A GRU direction rebuilt at the frac bits a plan gives (``x``, ``w_<part>``,
    ``b_<part>``, ``n``; the parts those of `cell`)."""
    want = {"x"} | {f"{p}_{k}" for k in cell.weights for p in "wb"} | ({"n"} if cell.linear_before_reset else set())
    if set(fr) != want:
        raise FixedPointError(f"plan: layer {info.key!r} cell {d}: a GRU cell's formats are "
                              f"{sorted(want)}, the plan gives {sorted(fr)}")
    try:
        return GruCell(W, R, B, linear_before_reset=cell.linear_before_reset, kind=kind, in_frac=fr["x"],
                       clip=cell.clip, w_fracs={k: fr["w_" + k] for k in cell.weights},
                       b_fracs={k: fr["b_" + k] for k in cell.weights}, n_frac=fr.get("n"))
    except (ValueError, TypeError) as e:
        raise FixedPointError(f"plan: layer {info.key!r} cell {d}: {e}") from None


def convert_model(model, calibration_inputs, kind="fx16", *, kinds=None, margin=0,
                  float_ops=(), plan=None) -> "WholeModel":
    """The whole-model conversion (``to_fixed_point(..., scope="model")``)."""
    from .plan import Plan
    if kind not in KINDS:
        raise ValueError(f"kind: MLI 1.1 kinds are {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(margin, int) or isinstance(margin, bool) or margin < 0:
        raise ValueError(f"margin: a non-negative int of frac bits, got {margin!r}")
    loaded = None
    if plan is not None:
        loaded = plan if isinstance(plan, Plan) else Plan.load(plan)
        if float_ops == () and loaded.float_ops:
            float_ops = tuple(loaded.float_ops)
        margin = loaded.margin if margin == 0 else margin
    analysis = analyse(model.graph, float_ops)
    if kinds is not None and not isinstance(kinds, dict):
        raise TypeError(f"kinds: a dict of layer key -> kind, got {type(kinds).__name__}")
    kinds = dict(kinds or {})
    for k, v in kinds.items():
        if v not in KINDS:
            raise ValueError(f"kinds[{k!r}]: MLI 1.1 kinds are {', '.join(KINDS)}, got {v!r}")
    known = {i.key for i in analysis.infos}
    for k in kinds:
        if k not in known:
            raise ValueError(f"kinds: no layer {k!r} in the model")
    if loaded is not None:
        loaded.check_layers(analysis)
        kinds = {**loaded.kinds(), **kinds}
        kind = loaded.kind
    kinds[""] = kind
    return WholeModel(model, analysis, calibration_inputs, kinds, margin, loaded=loaded)


class WholeModel:
    """A model whose every layer runs in MLI 1.1 fixed point (see :mod:`.whole` and
    :func:`mli.fixed_point.to_fixed_point` with ``scope="model"``).

    ``wm(inputs)`` returns ``{output: array}`` like the float model;
    :meth:`run` with ``trace=True`` also every layer's integers; :meth:`report` the
    quality per layer; :attr:`plan` the formats (save, edit, feed back)."""

    scope = "model"

    def __init__(self, model, analysis, calibration_inputs, kinds, margin,
                 loaded=None) -> None:
        self.float_model = model
        self.analysis = analysis
        self.kind = kinds[""]
        self.margin = margin
        self.input_names = model.input_names
        self.output_names = model.output_names
        self.float_ops = [i.key for i in analysis.infos if i.role == "float"]
        self.tap = _Tap()
        self.backends = {k: get_backend("mli1")(k) for k in set(kinds.values())}
        # calibration: the float model, every layer touching data tapped, the recurrent
        # ones also recording their cells' statistics
        rec = {}
        for info in analysis.infos:
            if info.role == "recurrent":
                conv = converter_for(info.layer.type)
                site = ((model.graph,) + tuple(p.body for p in info.path), info.path)
                constants = conv.constants(info.layer, site)
                rec[id(info.layer)] = (conv, constants,
                                       [Stats() for _ in range(conv.units(info.layer))])
        self._rec = rec
        self._float = with_program(model, compile_all(model.graph, self._tapped(rec)))
        for s in samples(calibration_inputs):
            self._float(s)
        self._float.reset_state()
        self.cells: Dict[int, list] = {}
        for info in analysis.infos:
            if info.role == "recurrent":
                conv, constants, stats = rec[id(info.layer)]
                k = kinds.get(info.key, self.kind)
                cells = conv.plan(info.layer, constants, stats, self.backends[k])
                over = loaded.cell_fracs().get(info.key) if loaded is not None else None
                if over:
                    cells = _refrac(info, conv, constants, cells, over, k)
                self.cells[id(info.layer)] = cells
        self.planner = WholePlanner(analysis, self.tap, kinds, margin, self.cells,
                                    loaded.formats() if loaded is not None else None,
                                    loaded.statics() if loaded is not None else None)
        self.planner.plan_layers(model.graph)
        from .plan import Plan
        self.plan = Plan.of(self)
        if loaded is not None:
            loaded.check_tensors(self.plan)
        self._trace: Optional[Dict[str, List[np.ndarray]]] = None
        steps = _Steps(self)
        self._fixed = with_program(model, compile_all(model.graph, self._fixed_step(steps)))

    # the float program: taps every data tensor and static kernel input
    def _tapped(self, rec):
        a, tap = self.analysis, self.tap

        def make(layer, path, fn):
            info = a.info(layer)
            if info is None or info.role == "output":
                return fn
            if id(layer) in rec:
                conv, constants, stats = rec[id(layer)]
                fn = conv.record(layer, fn, constants, stats)
            keys = [tensor_key(path, layer, k) if d else None for k, d in enumerate(info.data_out)]
            statics = [(i, f"{info.key}#{i}") for i, d in enumerate(info.data_in)
                       if not d and layer.inputs[i].dtype is not None
                       and layer.inputs[i].dtype.kind == "f"]
            params = []             # data inputs straight from a Parameter: its range
            for i, d in enumerate(info.data_in):
                src, sport = info.graph.producer(layer.id, layer.inputs[i].id)
                if d and src.type == "Parameter":
                    params.append((i, tensor_key(path, src, 0)))

            def step(*args):
                for i, sk in statics:
                    tap.static[sk] = np.asarray(args[i])
                    tap.add(sk, args[i])
                for i, pk in params:
                    tap.add(pk, args[i], capture=False)
                out = fn(*args)
                for k, v in zip(keys, _outs(layer, out)):
                    if k is not None:
                        tap.add(k, v)
                return out
            return step
        return make

    def _fixed_step(self, steps):
        a = self.analysis

        def make(layer, path, fn):
            info = a.info(layer)
            if info is None or info.role in ("output",):
                return fn
            core = steps.build(info, fn)
            keys = [(tensor_key(path, layer, k), self.planner.fmt.get(tensor_key(path, layer, k)))
                    if d else None for k, d in enumerate(info.data_out)]
            c_steps = layer.type == "LSTMSequence" and info.role == "recurrent"

            def step(*args):
                out = core(*args)
                if self._trace is not None:
                    for kf, v in zip(keys, _outs(layer, out)):
                        if kf is not None and kf[1] is not None:
                            self._trace.setdefault(kf[0], []).append(quantize(v, *kf[1]))
                    if c_steps:
                        self._trace.setdefault(f"{info.key}:c_steps", []).append(
                            self._cell_steps(info, args))
                return out
            return step
        return make

    def _cell_steps(self, info, args):
        """An LSTMSequence's cell state at every step (traces only): each direction's cell
        re-run one step at a time on the same integers, [B, D, T, M] (0 past a row's
        length; each direction at its own cell frac)."""
        x, h0, c0, lens = args[0], args[1], args[2], np.asarray(args[3]).reshape(-1)
        cells = self.cells[id(info.layer)]
        conv = converter_for(info.layer.type)
        B, T = x.shape[:2]
        M = h0.shape[-1]
        out = None
        for d, (qc, reverse) in enumerate(zip(cells, conv.directions(info.layer))):
            body = qc.body
            xq, hq, cq = (body.quantize(np.asarray(v), w) for v, w in
                          ((x, "x"), (h0[:, d], "h"), (c0[:, d], "c")))
            if out is None:
                out = np.zeros((B, len(cells), T, M), xq.dtype)
            for b in range(B):
                h, c = hq[b:b + 1], cq[b:b + 1]
                n = int(lens[b])
                for t in (range(n - 1, -1, -1) if reverse else range(n)):
                    _, h, c = body.run([xq[b:b + 1, t], h, c])
                    out[b, d, t] = c[0]
        return out

    def reset_state(self):
        """ReadValue/Assign variables back to their initial values (both models)."""
        self._float.reset_state()
        self._fixed.reset_state()

    def __call__(self, inputs=None, /, **named):
        """Run the fixed-point model: ``{output name: array}`` (the IR's dtypes)."""
        return self._fixed(inputs, **named)

    def run(self, inputs=None, /, *, trace=False, **named):
        """Run the model; with ``trace=True`` return ``(outputs, trace)`` where ``trace``
        maps every data tensor (``"<layer key>:<output>"``, graph order) to its integers
        (int8/int16; a layer in a TensorIterator/Loop body: stacked over the iterations,
        first axis), the recurrent layers' outputs holding every time step's h (a cell in
        a body: its h and c per iteration); an LSTMSequence also gets
        ``"<layer key>:c_steps"``: its cell state at every step, [B, D, T, M], at the
        cell's frac (the plan's ``cells[d]["c"]``)."""
        if not trace:
            return self(inputs, **named)
        self._trace = {}
        try:
            out = self._fixed(inputs, **named)
            tr = self._trace
        finally:
            self._trace = None
        for key, x in self._input_values(inputs, named).items():    # the inputs, quantized
            f = self.planner.fmt.get(key)
            if f is not None:
                tr[key] = [quantize(x, *f)]
        order = [k for k in self.plan.tensors if k in tr] + [k for k in tr
                                                             if k not in self.plan.tensors]
        return out, {k: (tr[k][0] if len(tr[k]) == 1 else np.stack(tr[k])) for k in order}

    def _input_values(self, inputs, named):
        if inputs is None or named:
            inputs = {**(inputs or {}), **named}
        arrays = self.float_model._arrays(inputs)
        return {tensor_key((), p, 0): np.asarray(a, np.float32)
                for p, a in zip(self.float_model.graph.parameters, arrays)}

    def float_values(self, inputs=None, /, **named):
        """Every data tensor's float value in the float model (as :meth:`run` keys them)."""
        self.tap.capture = {}
        try:
            out = self._float(inputs, **named)
            cap = self.tap.capture
        finally:
            self.tap.capture = None
        vals = self._input_values(inputs, named)
        vals.update({k: (v[0] if len(v) == 1 else np.stack(v)) for k, v in cap.items()
                     if "#" not in k})
        return out, vals

    def report(self, inputs=None, /, *, labels=None, output=None, jobs=1, progress=None,
               **named) -> dict:
        """Quality against the float model.

        On one input set (a dict, or keyword arrays): ``{"outputs": {name: S/N dB},
        "layers": [per data tensor in graph order: tensor, op, role, kind, el, frac,
        sn_db, saturated (elements whose float value is beyond the format), elements,
        headroom_bits (whole bits between the largest |float value| and the format's
        largest value), float (a float op)]}``.

        On a data set (a list of input dicts, or ``labels=`` given: a dict of arrays
        whose first axis indexes the samples): the same summed over the samples
        (S/N of the summed powers, saturated elements summed, headroom of the largest
        value), plus ``"samples"`` and, with ``labels`` (one class index per sample),
        ``"accuracy": {"float", "fixed"}`` (argmax of ``output``, default the first
        output), ``"agreement"`` (float and fixed point choose the same class) and
        ``"confusion"`` (rows: label, columns: fixed-point class).  ``jobs`` > 1 runs
        the samples on worker processes (each rebuilds the model from its file and this
        plan; the same results); ``progress``: a bar on stderr (default: when it is a
        terminal).

        Both models start every sample from their initial ReadValue/Assign state."""
        if labels is not None or isinstance(inputs, (list, tuple)) and inputs and \
                isinstance(inputs[0], dict):
            from .report import dataset_report
            return dataset_report(self, inputs, labels, output, jobs, progress)
        from .report import layer_report
        self._float.reset_state()       # both from their initial ReadValue/Assign state
        self._fixed.reset_state()
        return layer_report(self, inputs if inputs is not None or named else None, named)

    @staticmethod
    def workers():
        """(init, work) of a data set's worker processes (module functions: picklable)."""
        return _worker_init, _worker_chunk

    def summary(self) -> str:
        """One line per layer: role (the MLI kernel), kind and output format."""
        return self.plan.describe()

    def __repr__(self):
        return (f"<WholeModel {self.kind}: {len(self.analysis.infos)} layers on MLI 1.1 "
                f"kernels, inputs {self.input_names}, outputs {self.output_names}>")


_WORKER: Dict[str, Any] = {}      # a data-set worker process's model


def _worker_init(xml, plan, calib):
    from .plan import Plan
    _WORKER["wm"] = convert_model(ir.read_model(xml), calib, plan=Plan.from_dict(plan))


def _worker_chunk(output, chunk):
    from .report import sample_stats
    return [sample_stats(_WORKER["wm"], s, output) for s in chunk]
