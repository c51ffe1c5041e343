"""The plan of a whole-model conversion: per layer its role (the MLI kernel), kernel kind
and the formats of its static inputs (weights, bias, constant operands), per tensor its
element type, frac bits, shape and layout -- written to and read from a JSON file a user
can edit and feed back (``to_fixed_point(..., scope="model", plan=path)``).

File format (``"format": "mli-fixed-point-plan"``, ``"version": 1``)::

    {"format": "mli-fixed-point-plan", "version": 1, "model": "...", "kind": "fx16",
     "margin": 0, "float_ops": [],
     "layers": {"<layer key>": {"op": "MatMul-opset1", "role": "fully_connected",
                                "kind": "fx16", "static": {"1": ["fx16", 14]}},
                "<lstm layer>": {..., "cells": [{"x": 12, "w": 15, "b": 14, "c": 11}]}},
     "tensors": {"<layer key>:<output>": {"el": "fx16", "frac": 12, "shape": [1, 12],
                                          "layout": "IR"}}}

A layer key is the layer's name under its enclosing TensorIterator/Loop layers
(``"outer/inner"``).  Editable: a layer's ``kind``, a tensor's ``frac`` (and ``el``, which
must be its layer kind's data type), a static input's frac (weights ``"1"``, a fused
bias ``"-1"``), an LSTM / RNN layer's cell formats per direction (input ``x``, weights
``w``, bias ``b``, cell state ``c``; the state ``h`` is MLI's frac 15 / 7), a GRU layer's
(input ``x``, each weight and bias part ``w_zr``, ``b_zr``, ``w_n``/``b_n`` or
``w_xn``, ``w_hn``, ..., and with linear_before_reset ``n``); a plan that does not fit the
model (a layer or tensor missing or unknown, another op, shape or element type) is
refused naming the layer or tensor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List

from .errors import FixedPointError
from .formats import BITS, DATA_EL, KINDS, MAX_FRAC

__all__ = ["Plan"]

_FORMAT = "mli-fixed-point-plan"


def _cell_fracs(body):
    """The editable frac bits of one cell: an MLI LSTM / RNN cell's ``x w b c``;
    a GRU's ``x``, ``w_<part>`` / ``b_<part>`` of its weights and biases and
    (linear_before_reset) ``n`` (its state and gates are MLI's fixed Q15 / Q12,
    Q7 / Q4); None for another cell."""
    name = type(body).__name__
    if name == "KernelBody":
        keep = lambda k: k in ("x", "w", "b", "c")          # noqa: E731
    elif name == "GruCell":
        keep = lambda k: k in ("x", "n") or k[:2] in ("w_", "b_")   # noqa: E731
    else:
        return None
    return {k: int(v) for k, v in body.fracs.items() if keep(k)}


class Plan:
    """The formats of a whole-model conversion (see the module doc)."""

    def __init__(self, kind: str, margin: int, float_ops: List[str], layers: Dict[str, dict],
                 tensors: Dict[str, dict], model: str = ""):
        self.kind, self.margin, self.float_ops = kind, margin, list(float_ops)
        self.layers, self.tensors, self.model = layers, tensors, model

    # -------------------------------------------------------------- from a model
    @classmethod
    def of(cls, wm) -> "Plan":
        layers, tensors = {}, {}
        for p in wm.float_model.graph.parameters:        # the model's inputs first
            key = f"{p.name}:0"
            f = wm.planner.fmt.get(key)
            if f is not None:
                tensors[key] = {"el": f[0], "frac": int(f[1]),
                                "shape": list(wm.tap.shape.get(key, ())), "layout": "IR"}
        for info in wm.analysis.infos:
            lp = wm.planner.layers[info.key]
            layers[info.key] = {"op": info.op, "role": info.role, "kind": lp.kind,
                                "static": {str(i): list(f) for i, f in sorted(lp.static.items())}}
            if info.role == "recurrent":
                cells = [_cell_fracs(c.body) for c in wm.cells[id(info.layer)]]
                if all(c is not None for c in cells):
                    layers[info.key]["cells"] = cells
            for k, d in enumerate(info.data_out):
                key = f"{info.key}:{k}"
                f = wm.planner.fmt.get(key)
                if d and f is not None:
                    tensors[key] = {"el": f[0], "frac": int(f[1]),
                                    "shape": list(wm.tap.shape.get(key, ())),
                                    "layout": "NCHW (CHW per batch item)"
                                    if info.role in ("conv2d", "depthwise_conv2d") else "IR"}
        # model / body inputs quantized by their consumers
        for key, f in wm.planner.fmt.items():
            if key not in tensors:
                tensors[key] = {"el": f[0], "frac": int(f[1]),
                                "shape": list(wm.tap.shape.get(key, ())), "layout": "IR"}
        name = getattr(wm.float_model.graph, "name", "") or ""
        return cls(wm.kind, wm.margin, wm.float_ops, layers, tensors, str(name))

    # -------------------------------------------------------------- JSON
    def to_dict(self) -> dict:
        return {"format": _FORMAT, "version": 1, "model": self.model, "kind": self.kind,
                "margin": self.margin, "float_ops": self.float_ops, "layers": self.layers,
                "tensors": self.tensors}

    def save(self, path) -> None:
        """Write the plan as JSON to ``path`` (only that file)."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path) -> "Plan":
        """Read a plan file; ValueError naming the file and the entry at fault."""
        try:
            d = json.loads(Path(path).read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"plan {path}: not JSON ({e})") from None
        return cls.from_dict(d, str(path))

    @classmethod
    def from_dict(cls, d, where="plan") -> "Plan":
        if not isinstance(d, dict) or d.get("format") != _FORMAT:
            raise ValueError(f"{where}: not a plan (\"format\": {_FORMAT!r} missing)")
        if d.get("version") != 1:
            raise ValueError(f"{where}: plan version {d.get('version')!r} (this reads 1)")
        kind = d.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        margin = d.get("margin", 0)
        if not isinstance(margin, int) or isinstance(margin, bool) or margin < 0:
            raise ValueError(f"{where}: margin must be a non-negative int, got {margin!r}")
        layers, tensors = d.get("layers"), d.get("tensors")
        if not isinstance(layers, dict) or not isinstance(tensors, dict):
            raise ValueError(f"{where}: \"layers\" and \"tensors\" must be objects")
        for k, v in layers.items():
            if not isinstance(v, dict) or v.get("kind") not in KINDS:
                raise ValueError(f"{where}: layer {k!r}: kind must be one of "
                                 f"{', '.join(KINDS)}, got {v.get('kind') if isinstance(v, dict) else v!r}")
            for i, f in (v.get("static") or {}).items():
                _check_fmt(f"{where}: layer {k!r} static input {i}", f)
            for j, c in enumerate(v.get("cells") or []):
                if not isinstance(c, dict) or not all(
                        isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 31
                        for x in c.values()):
                    raise ValueError(f"{where}: layer {k!r} cell {j}: frac bits must be ints "
                                     f"in 0..31, got {c!r}")
        for k, v in tensors.items():
            if not isinstance(v, dict):
                raise ValueError(f"{where}: tensor {k!r}: an object expected")
            _check_fmt(f"{where}: tensor {k!r}", [v.get("el"), v.get("frac")])
        fl = d.get("float_ops", [])
        if not isinstance(fl, list) or not all(isinstance(x, str) for x in fl):
            raise ValueError(f"{where}: float_ops must be a list of names")
        return cls(kind, margin, fl, layers, tensors, str(d.get("model", "")))

    # -------------------------------------------------------------- use
    def kinds(self) -> Dict[str, str]:
        return {k: v["kind"] for k, v in self.layers.items()}

    def cell_fracs(self) -> Dict[str, list]:
        """Per recurrent layer: its cells' frac bits per direction (LSTM / RNN:
        ``x``, ``w``, ``b``, ``c``; GRU: ``x``, ``w_<part>``, ``b_<part>``, ``n``)."""
        return {k: v["cells"] for k, v in self.layers.items() if v.get("cells")}

    def formats(self) -> Dict[str, tuple]:
        return {k: (v["el"], int(v["frac"])) for k, v in self.tensors.items()}

    def statics(self) -> Dict[str, Dict[int, tuple]]:
        return {k: {int(i): (f[0], int(f[1])) for i, f in (v.get("static") or {}).items()}
                for k, v in self.layers.items()}

    def check_layers(self, analysis) -> None:
        """Refuse a plan whose layers are not the model's (naming the layer)."""
        known = {i.key: i for i in analysis.infos}
        for k in self.layers:
            if k not in known:
                raise FixedPointError(f"plan: layer {k!r} is not in the model")
        for k, info in known.items():
            if k not in self.layers:
                raise FixedPointError(f"plan: layer {k!r} ({info.op}) of the model is missing")
            if self.layers[k].get("op") != info.op:
                raise FixedPointError(f"plan: layer {k!r} is {info.op} in the model, "
                                      f"{self.layers[k].get('op')} in the plan")

    def check_tensors(self, planned: "Plan") -> None:
        """Refuse a plan whose tensors do not fit the model as planned (naming the tensor)."""
        for k in self.tensors:
            if k not in planned.tensors:
                raise FixedPointError(f"plan: tensor {k!r} is not a data tensor of the model")
        for k, t in planned.tensors.items():
            mine = self.tensors.get(k)
            if mine is None:
                raise FixedPointError(f"plan: tensor {k!r} of the model is missing")
            if "shape" in mine and list(mine["shape"]) != list(t["shape"]):
                raise FixedPointError(f"plan: tensor {k!r} has shape {mine['shape']} in the "
                                      f"plan, {t['shape']} in the model")
            lk = k.rsplit(":", 1)[0]
            if lk in planned.layers and planned.layers[lk]["role"] not in (
                    "view", "slice", "select", "loop", "float", "bias") \
                    and mine["el"] != DATA_EL[planned.layers[lk]["kind"]]:
                raise FixedPointError(f"plan: tensor {k!r} is {mine['el']} but its layer's kind "
                                      f"{planned.layers[lk]['kind']} produces "
                                      f"{DATA_EL[planned.layers[lk]['kind']]}")

    def describe(self) -> str:
        lines = []
        for k, v in self.layers.items():
            outs = [f"{t['el']}/{t['frac']}" for tk, t in self.tensors.items()
                    if tk.rsplit(":", 1)[0] == k]
            st = " ".join(f"in{i}={f[0]}/{f[1]}" for i, f in v.get("static", {}).items())
            lines.append(f"  {k:<40} {v['op']:<22} {v['role']:<16} {v['kind']:<8} "
                         f"{' '.join(outs):<10} {st}")
        return "\n".join(lines)


def _check_fmt(what, f) -> None:
    if not isinstance(f, (list, tuple)) or len(f) != 2 or f[0] not in BITS:
        raise ValueError(f"{what}: format must be [\"fx8\"|\"fx16\", frac], got {f!r}")
    if not isinstance(f[1], int) or isinstance(f[1], bool) or not 0 <= f[1] <= MAX_FRAC[f[0]]:
        raise ValueError(f"{what}: frac must be an int in 0..{MAX_FRAC[f[0]]}, got {f[1]!r}")
