"""Whole-model analysis: which tensors of an IR model carry data (their values depend on
a model input's values, not only on its shape), what each layer becomes on the MLI 1.1
kernels, and the refusal of the layers no MLI 1.1 kernel computes.

A tensor is *data* when it is floating point and some input of its layer is data (a
top-level float Parameter is data; a TensorIterator/Loop body Parameter is data when the
outer value or the back edge feeding it is).  Everything else -- constants, shapes and
their arithmetic (``ShapeOf``, ``Gather`` on shapes, ``Broadcast`` of a constant initial
state to the calibrated input shape) -- is *static*: computed in float from the constants
and the input shapes, and quantized where a kernel consumes it (like weights).

Each layer that touches data gets one *role* (see :data:`ROLES`).  A layer touching data
with no role is unsupported; :func:`analyse` collects every such layer of the model
(bodies included) and raises one :class:`FixedPointError` naming them all (type,
version, layer name), unless the user named the op type or layer in ``float_ops``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .errors import FixedPointError
from .registry import converter_for

__all__ = ["ROLES", "LayerInfo", "Analysis", "analyse", "tensor_key", "layer_key"]

#: role -> the MLI 1.1 kernel (or helper) that computes it
ROLES = {
    "fully_connected": "mli_krn_fully_connected",
    "bias": "fused into the preceding fully_connected / conv2d",
    "conv2d": "mli_krn_conv2d_chw",
    "depthwise_conv2d": "mli_krn_depthwise_conv2d_chw",
    "eltwise_add": "mli_krn_eltwise_add", "eltwise_sub": "mli_krn_eltwise_sub",
    "eltwise_mul": "mli_krn_eltwise_mul", "eltwise_max": "mli_krn_eltwise_max",
    "eltwise_min": "mli_krn_eltwise_min",
    "relu": "mli_krn_relu", "sigm": "mli_krn_sigm", "tanh": "mli_krn_tanh",
    "softmax": "mli_krn_softmax", "leaky_relu": "mli_krn_leaky_relu",
    "permute": "mli_krn_permute", "concat": "mli_krn_concat",
    "maxpool": "mli_krn_maxpool_chw", "avepool": "mli_krn_avepool_chw",
    "padding2d": "mli_krn_padding2d_chw",
    "view": "a view (no data moves: the same integers, new shape)",
    "slice": "a sub-tensor copy (mli_hlp_point_to_subtensor / copy; the same integers)",
    "select": "a copy of one of two same-format tensors (the same integers)",
    "recurrent": "mli_krn_lstm_cell / mli_krn_basic_rnn_cell (GRU: composed, see mli.fixed_point)",
    "loop": "TensorIterator / Loop: its body is converted",
    "float": "float (user's float_ops): dequantize, float op, quantize",
    "output": "model / body output",
}

_ELTWISE = {"Add": "eltwise_add", "Subtract": "eltwise_sub", "Multiply": "eltwise_mul",
            "Maximum": "eltwise_max", "Minimum": "eltwise_min"}
_UNARY = {"Relu": "relu", "ReLU": "relu", "Sigmoid": "sigm", "Tanh": "tanh"}
_VIEW = ("Reshape", "Squeeze", "Unsqueeze", "Flatten")
_SLICE = ("Gather", "Split", "VariadicSplit", "Slice", "StridedSlice", "Broadcast",
          "ScatterUpdate", "ReverseSequence")


def layer_key(path, layer) -> str:
    """``"outer/inner/name"``: the layer's name under its enclosing TI/Loop layers."""
    return "/".join([p.name for p in path] + [layer.name])


def tensor_key(path, layer, port_index: int) -> str:
    """``"<layer key>:<output index>"``."""
    return f"{layer_key(path, layer)}:{port_index}"


@dataclasses.dataclass(eq=False)
class LayerInfo:
    """One layer of the whole-model conversion."""

    layer: Any
    path: tuple
    graph: Any
    key: str
    role: str
    data_in: Tuple[bool, ...]        # per input: data (True) or static
    data_out: Tuple[bool, ...]       # per output
    fused_into: Optional["LayerInfo"] = None   # a bias Add: its fully_connected / conv2d
    bias: Optional["LayerInfo"] = None         # a fully_connected / conv2d: its fused Add

    @property
    def op(self) -> str:
        return f"{self.layer.type}-{self.layer.version}"


@dataclasses.dataclass
class Analysis:
    """Every layer touching data, in graph order (bodies after their TI/Loop layer)."""

    infos: List[LayerInfo]
    by_layer: Dict[int, LayerInfo]           # id(layer) -> info
    data: Dict[int, Tuple[bool, ...]]        # id(layer) -> data flags of its outputs

    def info(self, layer) -> Optional[LayerInfo]:
        return self.by_layer.get(id(layer))


def _is_float(port) -> bool:
    dt = port.dtype
    return dt is not None and dt.kind == "f"


def _static_value(graph, layer, index):
    src, _ = graph.producer(layer.id, layer.inputs[index].id)
    return src.data if src.type == "Const" else None


def _attr(layer, name, default=None):
    return layer.attrs.get(name, default)


def _float_attr(layer, name):
    try:
        return float(layer.attrs[name])
    except (KeyError, ValueError):
        return None


def _role(layer, graph, din, dout) -> Optional[str]:
    """The role of a layer with data inputs or outputs, or None (no MLI 1.1 kernel)."""
    t = layer.type
    if converter_for(t) is not None:
        return "recurrent"
    if layer.body is not None:
        return "loop"
    if t in ("Result", "Assign"):
        return "output"
    if t == "ShapeOf":
        return "view"                      # only the shape is read: static output
    if not any(dout):
        return None                        # a data value turned into a non-float one
    if t == "MatMul":
        if din[0] and not din[1] and _attr(layer, "transpose_a", "false") == "false" \
                and len(layer.inputs[1].dims) == 2:
            return "fully_connected"
        return None
    if t in _ELTWISE:
        return _ELTWISE[t]
    if t in _UNARY:
        return _UNARY[t]
    if t == "Clamp":
        lo, hi = _float_attr(layer, "min"), _float_attr(layer, "max")
        return "relu" if (lo == 0.0 and (hi == 6.0 or hi is None or hi > 3e38)) \
            or (lo == -1.0 and hi == 1.0) else None      # MLI's RELU_GEN, RELU_6, RELU_1
    if t == "SoftMax":
        return "softmax"
    if t == "PRelu":
        return "leaky_relu" if din[0] and not din[1] and \
            int(np.prod(layer.inputs[1].dims or (1,))) == 1 else None
    if t == "Transpose":
        return "permute" if din[0] and not din[1] else None
    if t == "Concat":
        return "concat"
    if t in ("Convolution", "GroupConvolution"):
        dil = [int(v) for v in str(_attr(layer, "dilations", "1")).split(",") if v.strip()]
        if not (din[0] and not din[1] and all(d == 1 for d in dil)):
            return None
        if t == "Convolution" and len(layer.inputs[0].dims) in (3, 4):
            return "conv2d"
        wd = layer.inputs[1].dims          # [G, Cout/G, Cin/G, KH, KW]: depthwise
        if t == "GroupConvolution" and len(wd) == 5 and wd[1] == 1 and wd[2] == 1 \
                and len(layer.inputs[0].dims) == 4 and layer.inputs[0].dims[1] == wd[0]:
            return "depthwise_conv2d"
        return None
    if t in ("MaxPool", "AvgPool"):        # MLI's average excludes the padding
        ok = len(layer.inputs[0].dims) == 4 and din[0] and len(layer.outputs) == 1 and (
            t == "MaxPool" or _attr(layer, "exclude-pad", "false") == "true"
            or _attr(layer, "pads_begin", "0,0").replace(" ", "") in ("0,0", "")
            and _attr(layer, "pads_end", "0,0").replace(" ", "") in ("0,0", ""))
        pdil = str(_attr(layer, "dilations", "1,1")).replace(" ", "")
        return ("maxpool" if t == "MaxPool" else "avepool") if ok and pdil in ("1,1", "1") \
            else None
    if t == "Pad":
        return "padding2d" if din[0] and _attr(layer, "pad_mode", "constant") == "constant" \
            and not any(din[1:]) else None
    if t in _VIEW:
        return "view" if din[0] and not any(din[1:]) else None
    if t in _SLICE:
        return "slice" if din[0] and not any(din[1:]) or (
            t == "ScatterUpdate" and not din[1] and not din[3]) else None
    if t == "ReadValue":        # the stored state (integers an Assign kept) or its init
        return "select"
    if t == "Select":
        return "select" if not din[0] else None
    if t == "Convert":              # a widening float conversion keeps the integers' values
        return "view" if all(_is_float(p) for p in layer.inputs + layer.outputs) and \
            layer.outputs[0].dtype.itemsize >= layer.inputs[0].dtype.itemsize else None
    return None


def analyse(graph, float_ops=()) -> Analysis:
    """The data flags and roles of every layer of ``graph`` (a top-level mli.ir.Graph).
    Raises FixedPointError naming every layer that touches data and has no MLI 1.1 kernel
    (and is not in ``float_ops``: op types or layer names)."""
    if isinstance(float_ops, (str, bytes)) or not all(
            isinstance(o, str) for o in (float_ops or ())):
        raise TypeError(f"float_ops: a sequence of op types or layer names, got {float_ops!r}")
    float_ops = set(float_ops or ())
    matched: set = set()
    infos: List[LayerInfo] = []
    by_layer: Dict[int, LayerInfo] = {}
    data: Dict[int, Tuple[bool, ...]] = {}
    bad: Dict[str, List[str]] = {}

    def flags_of(g, layer):
        out = []
        for p in layer.inputs:
            src, sport = g.producer(layer.id, p.id)
            k = [q.id for q in src.outputs].index(sport.id)
            out.append(data.get(id(src), (False,) * len(src.outputs))[k])
        return tuple(out)

    def run_graph(g, path, data_params, record):
        for layer in g.order:
            if layer.type == "Parameter":
                data[id(layer)] = (id(layer) in data_params and _is_float(layer.outputs[0]),)
                continue
            if layer.type == "Const":
                data[id(layer)] = (False,)
                continue
            din = flags_of(g, layer)
            if layer.body is not None:
                dout = run_body(layer, path, din, False)
            elif layer.type == "ShapeOf":
                dout = (False,) * len(layer.outputs)
            else:
                dout = tuple(any(din) and _is_float(p) for p in layer.outputs)
            data[id(layer)] = dout
            if not record or not (any(din) or any(dout)) or layer.type == "ShapeOf":
                continue
            key = layer_key(path, layer)
            role = _role(layer, g, din, dout)
            named = {layer.type, layer.name, key} & float_ops
            if named:
                matched.update(named)
                if role not in ("loop", "output"):
                    role = "float"
            info = LayerInfo(layer, path, g, key, role or "", din, dout)
            if role is None:
                bad.setdefault(f"{layer.type}-{layer.version}", []).append(key)
            infos.append(info)
            by_layer[id(layer)] = info
            if layer.body is not None:
                run_body(layer, path, din, True)

    def run_body(layer, path, din, record):
        body = layer.body
        params = set()
        for e in layer.port_map:
            ids = [p.id for p in layer.inputs]
            if e.kind == "input" and e.external_port_id in ids:
                k = ids.index(e.external_port_id)
                if din[k]:
                    params.add(id(body.layer(e.internal_layer_id)))
        back = [(body.layer(f), body.layer(t)) for f, t in layer.back_edges]
        for _ in range(len(back) + 2):          # to a fixed point over the back edges
            run_graph(body, path + (layer,), params, False)
            new = set(params)
            for res, par in back:
                src, sport = body.producer(res.id, res.inputs[0].id)
                k = [q.id for q in src.outputs].index(sport.id)
                if data[id(src)][k]:
                    new.add(id(par))
            if new == params:
                break
            params = new
        if record:
            run_graph(body, path + (layer,), params, True)
        dout = []
        for p in layer.outputs:
            d = False
            for e in layer.port_map:
                if e.kind == "output" and e.external_port_id == p.id:
                    res = body.layer(e.internal_layer_id)
                    src, sport = body.producer(res.id, res.inputs[0].id)
                    k = [q.id for q in src.outputs].index(sport.id)
                    d = data[id(src)][k] and _is_float(p)
            dout.append(d)
        return tuple(dout)

    run_graph(graph, (), {id(p) for p in graph.parameters}, True)
    unused = sorted(float_ops - matched)
    if unused:
        raise ValueError(f"float_ops: {unused[0]!r} names no op type or layer of the model "
                         f"that touches data")
    if bad:
        raise FixedPointError(
            "no MLI 1.1 kernel for " + "; ".join(
                f"{op} ({', '.join(repr(k) for k in keys)})" for op, keys in bad.items())
            + " -- name them in float_ops (mli fixed-point --float-ops) to run them in float "
            "between dequantize and quantize")
    _fuse_bias(infos, by_layer)
    return Analysis(infos, by_layer, data)


def _fuse_bias(infos, by_layer):
    """An Add of a static bias right after a fully_connected / conv2d (its only consumer)
    is fused into it (the kernels take a bias)."""
    for info in infos:
        if info.role not in ("fully_connected", "conv2d", "depthwise_conv2d"):
            continue
        layer, g = info.layer, info.graph
        cons = g.consumers(layer.id, layer.outputs[0].id)
        if len(cons) != 1:
            continue
        add = by_layer.get(id(cons[0][0]))
        if add is None or add.role != "eltwise_add" or add.layer.type != "Add":
            continue
        k = [p.id for p in add.layer.inputs].index(cons[0][1].id)
        other = 1 - k
        if add.data_in[other]:
            continue
        dims = add.layer.inputs[other].dims
        n_out = layer.outputs[0].dims[-1] if info.role == "fully_connected" \
            else layer.outputs[0].dims[1]
        size = int(np.prod([d for d in dims])) if None not in dims else -1
        if size != n_out:
            continue
        if info.role != "fully_connected" and len(dims) >= 2 and dims[1] != n_out:
            continue
        add.role, add.fused_into, info.bias = "bias", info, add
