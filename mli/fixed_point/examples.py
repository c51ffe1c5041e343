"""MLI's example networks as OpenVINO IR models for the whole-model mode, with the
examples' own formats as a plan (:class:`mli.fixed_point.plan.Plan`).

:func:`write_har_ir` writes the HAR smartphone example's network (``mli har``: FC1 on each
of the 128 time steps, ReLU, LSTM, LSTM (its last step), FC4) as an IR whose weights are
the example's integers of one bit depth times ``2^-frac`` (exact in float32);
:func:`har_plan` gives the example's formats (``model.json``) as a plan.  Through
``to_fixed_point(model, inputs, scope="model", plan=har_plan(...))`` every layer gives
``mli har --layer3 library``'s integers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

__all__ = ["write_har_ir", "har_plan", "HAR_LAYERS", "har_kind", "write_kws_ir", "kws_plan", "KWS_LAYERS"]

_OV_FROM_MLI = [2, 0, 1, 3]     # OpenVINO gate blocks f, i, c, o from MLI's i, g, f, o

#: mli har's layer -> the tensor of the IR that holds it
HAR_LAYERS = {"fc1": "fc1/add:0", "relu1": "relu1:0", "lstm2": "lstm2:0",
              "lstm3": "lstm3:1", "out": "fc4/add:0"}


def har_kind(depth) -> str:
    """The kernel kind of ``mli har --depth``: 16 -> fx16, 816 -> fx8w16d, 8 -> fx8."""
    return {16: "fx16", 816: "fx8w16d", 8: "fx8"}[int(depth)]


class _IR:
    """A minimal IR v11 writer: layers with ports, f32/i64 constants in one .bin."""

    def __init__(self, name):
        self.name, self.layers, self.edges, self.blob = name, [], [], bytearray()

    @staticmethod
    def _port(pid, dims, et="FP32", names=""):
        n = f' names="{names}"' if names else ""
        return f'<port id="{pid}" precision="{et}"{n}>' + "".join(
            f"<dim>{d}</dim>" for d in dims) + "</port>"

    def layer(self, name, typ, ins, outs, data=None, ver="opset1") -> int:
        """``ins``: [(layer id, its output port id, dims, precision)]; ``outs``: [dims];
        returns the layer id (output ports are numbered after the inputs)."""
        lid = len(self.layers)
        d = "" if not data else "<data " + " ".join(f'{k}="{v}"' for k, v in data.items()) + "/>"
        ip = "".join(self._port(k, dims, et) for k, (_, _, dims, et) in enumerate(ins))
        op = "".join(self._port(len(ins) + k, dims,
                                names=(name if typ == "Parameter" else ""))
                     for k, dims in enumerate(outs))
        self.layers.append(f'<layer id="{lid}" name="{name}" type="{typ}" version="{ver}">{d}'
                           + (f"<input>{ip}</input>" if ins else "")
                           + (f"<output>{op}</output>" if outs else "") + "</layer>")
        for k, (src, sport, _, _) in enumerate(ins):
            self.edges.append((src, sport, lid, k))
        return lid

    def const(self, name, arr) -> Tuple[int, int, tuple, str]:
        arr = np.ascontiguousarray(arr)
        et, prec = ("i64", "I64") if arr.dtype.kind in "iu" else ("f32", "FP32")
        arr = arr.astype(np.int64 if et == "i64" else np.float32)
        off = len(self.blob)
        self.blob.extend(arr.tobytes())
        lid = len(self.layers)
        self.layers.append(
            f'<layer id="{lid}" name="{name}" type="Const" version="opset1">'
            f'<data element_type="{et}" shape="{",".join(map(str, arr.shape))}" offset="{off}" '
            f'size="{arr.nbytes}"/><output>{self._port(0, arr.shape, prec)}</output></layer>')
        return lid, 0, arr.shape, prec

    def write(self, xml_path) -> None:
        xml_path = Path(xml_path)
        edges = "".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>'
                        for a, b, c, d in self.edges)
        xml_path.write_text(f'<?xml version="1.0"?>\n<net name="{self.name}" version="11">'
                            f'<layers>{"".join(self.layers)}</layers><edges>{edges}</edges></net>\n')
        xml_path.with_suffix(".bin").write_bytes(bytes(self.blob))


def _out(lid, port, dims):
    return lid, port, tuple(dims), "FP32"


def _lstm_weights(w, b, n_in):
    """MLI LSTM weights [4, M, N+M] (i, g, f, o) and bias [4, M] -> OpenVINO W [1, 4M, N],
    R [1, 4M, M], B [1, 4M] (f, i, c, o)."""
    w, b = np.asarray(w, np.float64), np.asarray(b, np.float64)
    W = np.concatenate([w[g, :, :n_in] for g in _OV_FROM_MLI])[None]
    R = np.concatenate([w[g, :, n_in:] for g in _OV_FROM_MLI])[None]
    B = np.concatenate([b[g] for g in _OV_FROM_MLI])[None]
    return W, R, B


def write_har_ir(xml_path, depth=16, data_dir=None) -> Dict[str, Any]:
    """Write the HAR network of ``mli har --depth depth`` as an IR (``xml_path`` and the
    ``.bin`` beside it; only those two files).  Input ``x`` [1, 128, 9], output
    ``scores`` [1, 6].  Returns the example's frac bits (``model.json``) and the
    tensor keys of its layers (:data:`HAR_LAYERS`)."""
    from ..tools.har import load_har
    m = load_har(data_dir, depth)
    c = {k: v.numpy().astype(np.float64) * 2.0 ** -v.frac_bits for k, v in m.coef.items()}
    T, M = 128, 32
    ir = _IR("har")
    x = ir.layer("x", "Parameter", [], [(1, T, 9)], {"shape": f"1,{T},9", "element_type": "f32"})
    fc1 = ir.layer("fc1/matmul", "MatMul", [_out(x, 0, (1, T, 9)), ir.const("fc1/w", c["L1_fc_wt"])],
                   [(1, T, M)], {"transpose_a": "false", "transpose_b": "true"})
    fc1b = ir.layer("fc1/add", "Add", [_out(fc1, 2, (1, T, M)), ir.const("fc1/b", c["L1_fc_bias"])],
                    [(1, T, M)])
    relu = ir.layer("relu1", "ReLU", [_out(fc1b, 2, (1, T, M))], [(1, T, M)])

    def lstm(name, src, n_in, w, b):
        W, R, B = _lstm_weights(w, b, n_in)
        zeros = np.zeros((1, 1, M), np.float32)
        return ir.layer(name, "LSTMSequence", [
            src, ir.const(f"{name}/h0", zeros), ir.const(f"{name}/c0", zeros),
            ir.const(f"{name}/len", np.array([T], np.int64)), ir.const(f"{name}/W", W),
            ir.const(f"{name}/R", R), ir.const(f"{name}/B", B)],
            [(1, 1, T, M), (1, 1, M), (1, 1, M)],
            {"hidden_size": M, "direction": "forward", "activations": "sigmoid,tanh,tanh",
             "activations_alpha": "", "activations_beta": "", "clip": "0"}, ver="opset5")
    l2 = lstm("lstm2", _out(relu, 1, (1, T, M)), M, c["L2_lstm_wt"], c["L2_lstm_bias"])
    sq = ir.layer("lstm2/squeeze", "Squeeze", [_out(l2, 7, (1, 1, T, M)),
                                               ir.const("lstm2/axis", np.array([1], np.int64))],
                  [(1, T, M)])
    l3 = lstm("lstm3", _out(sq, 2, (1, T, M)), M, c["L3_lstm_wt"], c["L3_lstm_bias"])
    last = ir.layer("lstm3/last", "Reshape", [_out(l3, 8, (1, 1, M)),
                                              ir.const("lstm3/shape", np.array([1, M], np.int64))],
                    [(1, M)], {"special_zero": "false"})
    fc4 = ir.layer("fc4/matmul", "MatMul", [_out(last, 2, (1, M)), ir.const("fc4/w", c["L4_fc_wt"])],
                   [(1, 6)], {"transpose_a": "false", "transpose_b": "true"})
    fc4b = ir.layer("fc4/add", "Add", [_out(fc4, 2, (1, 6)), ir.const("fc4/b", c["L4_fc_bias"])],
                    [(1, 6)])
    ir.layer("scores", "Result", [_out(fc4b, 2, (1, 6))], [])
    ir.write(xml_path)
    return {"frac": dict(m.frac), "layers": dict(HAR_LAYERS)}


def har_plan(wm, depth=16, data_dir=None) -> Any:
    """The plan of a whole-model conversion of :func:`write_har_ir`'s model with the HAR
    example's formats of ``depth`` (``model.json``): a copy of ``wm.plan`` (any
    calibration) with every format replaced by the example's."""
    from ..tools.har import load_har
    from .plan import Plan
    f = load_har(data_dir, depth).frac
    kind = har_kind(depth)
    d = wm.plan.to_dict()
    el = "fx8" if kind == "fx8" else "fx16"
    q = 7 if el == "fx8" else 15
    t = d["tensors"]
    fmt: Dict[str, Tuple[str, int]] = {
        "x:0": (el, f["INPUT"]), "fc1/matmul:0": (el, f["FC1_OUT"]), "fc1/add:0": (el, f["FC1_OUT"]),
        "relu1:0": (el, f["FC1_OUT"]), "lstm2:0": (el, q), "lstm2:1": (el, q),
        "lstm2:2": (el, f["LSTM2_CELL"]), "lstm2/squeeze:0": (el, q), "lstm3:0": (el, q),
        "lstm3:1": (el, q), "lstm3:2": (el, f["LSTM3_CELL"]), "lstm3/last:0": (el, q),
        "fc4/matmul:0": (el, f["FC4_OUT"]), "fc4/add:0": (el, f["FC4_OUT"])}
    for k, (e, fr) in fmt.items():
        t[k]["el"], t[k]["frac"] = e, int(fr)
    wel = "fx16" if kind == "fx16" else "fx8"
    layers = d["layers"]
    for key in layers:
        layers[key]["kind"] = kind
    layers["fc1/matmul"]["static"] = {"1": [wel, f["FC1_W"]], "-1": [wel, f["FC1_B"]]}
    layers["fc4/matmul"]["static"] = {"1": [wel, f["FC4_W"]], "-1": [wel, f["FC4_B"]]}
    cells: List[Dict[str, int]]
    for name, x, w, b, cf in (("lstm2", "FC1_OUT", "LSTM2_W", "LSTM2_B", "LSTM2_CELL"),
                              ("lstm3", None, "LSTM3_W", "LSTM3_B", "LSTM3_CELL")):
        cells = [{"x": f[x] if x else q, "w": f[w], "b": f[b], "c": f[cf]}]
        layers[name]["cells"] = cells
    d["kind"] = kind
    return Plan.from_dict(d, "HAR plan")


#: mli kws's layer output -> the tensor of :func:`write_kws_ir`'s model that holds it
KWS_LAYERS = {"L1_conv_lrelu": "L1/lrelu:0", "L2a_dw_lrelu": "L2a/lrelu:0",
              "L2b_pw_lrelu": "L2b/lrelu:0", "L3a_dw_lrelu": "L3a/lrelu:0",
              "L3b_pw_lrelu": "L3b/lrelu:0", "L4a_dw_lrelu": "L4a/lrelu:0",
              "L4b_pw_lrelu": "L4b/lrelu:0", "avepool": "L5/avepool:0", "permute": "L5/permute:0",
              "lstm_out": "L5/lstm:1", "fc_out": "L6/add:0", "softmax_out": "L6/softmax:0"}
_KWS_CONV = (("L1", "L1_conv", 2), ("L2a", "L2a_conv_dw", 1), ("L2b", "L2b_conv_pw", 1),
             ("L3a", "L3a_conv_dw", 1), ("L3b", "L3b_conv_pw", 1), ("L4a", "L4a_conv_dw", 1),
             ("L4b", "L4b_conv_pw", 1))


def write_kws_ir(xml_path, data_dir=None) -> Dict[str, Any]:
    """Write the KWS example's network (``mli kws``: a conv, three depthwise + pointwise
    pairs, each with a leaky ReLU; average pooling over the mel bins, permute, LSTM
    (its last step), fully connected, softmax) as an IR: input ``features``
    [1, 1, 65, 13] (NCHW), output ``scores`` [1, 12].  Weights: the example's integers
    times ``2^-frac``.  Returns the example's frac bits and :data:`KWS_LAYERS`."""
    from ..tools.kws.data import load_model
    m = load_model(data_dir)
    c = {k: v.numpy().astype(np.float64) * 2.0 ** -v.frac_bits for k, v in m.coef.items()}
    slope = float(m.slope.numpy()) * 2.0 ** -m.slope.frac_bits
    ir = _IR("kws")
    src = _out(ir.layer("features", "Parameter", [], [(1, 1, 65, 13)],
                        {"shape": "1,1,65,13", "element_type": "f32"}), 0, (1, 1, 65, 13))
    shape = (1, 65, 13)
    for name, prefix, stride in _KWS_CONV:
        w = c[prefix + "_wt"]
        dw = "_dw" in prefix
        kh, kw = w.shape[2:]
        ho, wo = -(-(shape[1] - kh + 1) // stride), shape[2] - kw + 1
        out = (1, 64, ho, wo)
        attrs = {"strides": f"{stride},1", "dilations": "1,1", "pads_begin": "0,0",
                 "pads_end": "0,0", "auto_pad": "explicit"}
        if dw:
            conv = ir.layer(f"{name}/conv", "GroupConvolution",
                            [src, ir.const(f"{name}/w", w.reshape(64, 1, 1, kh, kw))], [out], attrs)
        else:
            conv = ir.layer(f"{name}/conv", "Convolution", [src, ir.const(f"{name}/w", w)],
                            [out], attrs)
        add = ir.layer(f"{name}/add", "Add", [_out(conv, 2, out), ir.const(
            f"{name}/b", c[prefix + "_bias"].reshape(1, 64, 1, 1))], [out])
        lrelu = ir.layer(f"{name}/lrelu", "PRelu", [_out(add, 2, out), ir.const(
            f"{name}/slope", np.array([slope], np.float32))], [out])
        src, shape = _out(lrelu, 2, out), out[1:]
    T = shape[1]
    pool = ir.layer("L5/avepool", "AvgPool", [src], [(1, 64, T, 1)],
                    {"kernel": "1,5", "strides": "1,1", "pads_begin": "0,0", "pads_end": "0,0",
                     "exclude-pad": "true", "rounding_type": "floor", "auto_pad": "explicit"})
    perm = ir.layer("L5/permute", "Transpose", [_out(pool, 1, (1, 64, T, 1)), ir.const(
        "L5/perm", np.array([0, 2, 3, 1], np.int64))], [(1, T, 1, 64)])
    seq = ir.layer("L5/seq", "Reshape", [_out(perm, 2, (1, T, 1, 64)), ir.const(
        "L5/shape", np.array([1, T, 64], np.int64))], [(1, T, 64)], {"special_zero": "false"})
    W, R, B = _lstm_weights(c["L5_lstm_wt"], c["L5_lstm_bias"], 64)
    zeros = np.zeros((1, 1, 32), np.float32)
    lstm = ir.layer("L5/lstm", "LSTMSequence", [
        _out(seq, 2, (1, T, 64)), ir.const("L5/h0", zeros), ir.const("L5/c0", zeros),
        ir.const("L5/len", np.array([T], np.int64)), ir.const("L5/W", W), ir.const("L5/R", R),
        ir.const("L5/B", B)], [(1, 1, T, 32), (1, 1, 32), (1, 1, 32)],
        {"hidden_size": 32, "direction": "forward", "activations": "sigmoid,tanh,tanh",
         "activations_alpha": "", "activations_beta": "", "clip": "0"}, ver="opset5")
    last = ir.layer("L5/last", "Reshape", [_out(lstm, 8, (1, 1, 32)), ir.const(
        "L5/last_shape", np.array([1, 32], np.int64))], [(1, 32)], {"special_zero": "false"})
    fc = ir.layer("L6/matmul", "MatMul", [_out(last, 2, (1, 32)), ir.const("L6/w", c["L6_fc_wt"])],
                  [(1, 12)], {"transpose_a": "false", "transpose_b": "true"})
    fcb = ir.layer("L6/add", "Add", [_out(fc, 2, (1, 12)), ir.const("L6/b", c["L6_fc_bias"])],
                   [(1, 12)])
    sm = ir.layer("L6/softmax", "SoftMax", [_out(fcb, 2, (1, 12))], [(1, 12)], {"axis": "1"})
    ir.layer("scores", "Result", [_out(sm, 1, (1, 12))], [])
    ir.write(xml_path)
    return {"frac": dict(m.frac), "layers": dict(KWS_LAYERS)}


def kws_plan(wm, data_dir=None) -> Any:
    """The plan of :func:`write_kws_ir`'s model with the KWS example's formats and kinds
    (fx8 convolutions and leaky ReLUs, fx16 pooling / permute / softmax, fx8w16d LSTM and
    fully connected): a copy of ``wm.plan`` with every format replaced."""
    from ..tools.kws.data import load_model
    from .plan import Plan
    f = load_model(data_dir).frac
    d = wm.plan.to_dict()
    t, layers = d["tensors"], d["layers"]
    t["features:0"].update(el="fx8", frac=f["input_features"])
    for name, prefix, _ in _KWS_CONV:
        for k in (f"{name}/conv", f"{name}/add", f"{name}/lrelu"):
            layers[k]["kind"] = "fx8"
            t[f"{k}:0"].update(el="fx8", frac=f[prefix + "_out"])
        layers[f"{name}/conv"]["static"] = {"1": ["fx8", f[prefix + "_wt"]],
                                            "-1": ["fx8", f[prefix + "_bias"]]}
        layers[f"{name}/lrelu"]["static"] = {"1": ["fx8", f["leaky_relu_slope"]]}
    for k in ("L5/avepool", "L5/permute", "L5/seq", "L6/softmax"):
        layers[k]["kind"] = "fx16"
        t[f"{k}:0"].update(el="fx16", frac=f["softmax_out"] if k == "L6/softmax"
                           else f["fx16_after_convert"])
    for k in ("L5/lstm", "L5/last", "L6/matmul", "L6/add"):
        layers[k]["kind"] = "fx8w16d"
    for k, v in (("L5/lstm:0", 15), ("L5/lstm:1", 15), ("L5/lstm:2", f["L5_lstm_cell"]),
                 ("L5/last:0", 15), ("L6/matmul:0", f["L6_fc_out"]), ("L6/add:0", f["L6_fc_out"])):
        t[k].update(el="fx16", frac=v)
    layers["L5/lstm"]["cells"] = [{"x": f["fx16_after_convert"], "w": f["L5_lstm_wt"],
                                   "b": f["L5_lstm_bias"], "c": f["L5_lstm_cell"]}]
    layers["L6/matmul"]["static"] = {"1": ["fx8", f["L6_fc_wt"]], "-1": ["fx8", f["L6_fc_bias"]]}
    d["kind"] = "fx8w16d"
    return Plan.from_dict(d, "KWS plan")
